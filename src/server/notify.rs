//! Readiness notification to a service manager: `supervised systemd` (Redis: the
//! `supervised` directive, `redisCommunicateSystemd`).
//!
//! systemd starts a `Type=notify` service with `NOTIFY_SOCKET` naming a Unix datagram
//! socket, either a path or an abstract name written `@name`. The service sends it
//! newline-separated `KEY=value` assignments (the `sd_notify` protocol):
//!
//! ```text
//! READY=1\nSTATUS=Ready to accept connections\n     listeners bound and dataset loaded
//! STOPPING=1\nSTATUS=Shutting down\n                 shutdown begins
//! ```
//!
//! Until `READY=1` arrives, `systemctl start` waits and units ordered after streamd do not
//! start. streamd sends it once the dataset is loaded, so a client connecting then is
//! answered, never told `-LOADING`. A datagram needs no connection and no library: this is
//! `std` only.
//!
//! `supervised no` (the default) sends nothing; `systemd` sends to `NOTIFY_SOCKET` and warns
//! if it is not set; `auto` sends when `NOTIFY_SOCKET` is set. Redis's `upstart` mode (stop
//! itself with `SIGSTOP` when ready) is accepted, for Redis's config files, and warned about:
//! streamd does not offer it.

use crate::config::Config;
use std::ffi::OsString;
use std::os::unix::net::{SocketAddr, UnixDatagram};

/// Where readiness goes: the service manager's socket, or nowhere.
#[derive(Debug, Clone, Default)]
pub struct Notifier {
    /// The value of `NOTIFY_SOCKET` when supervision is on and it was set; `None` = send
    /// nothing.
    socket: Option<OsString>,
}

impl Notifier {
    /// The notifier `supervised` asks for, reading `NOTIFY_SOCKET` from the environment. Warns
    /// when `supervised systemd` is set without a socket to notify.
    pub fn from_config(config: &Config) -> Notifier {
        Notifier::new(
            config.get("supervised").unwrap_or("no"),
            std::env::var_os("NOTIFY_SOCKET"),
        )
    }

    /// The notifier for a `supervised` value and a `NOTIFY_SOCKET` value.
    pub fn new(mode: &str, notify_socket: Option<OsString>) -> Notifier {
        let notify_socket = notify_socket.filter(|s| !s.is_empty());
        match mode {
            "systemd" if notify_socket.is_none() => {
                tracing::warn!("systemd supervision requested, but NOTIFY_SOCKET not found!");
                Notifier::default()
            }
            "systemd" | "auto" => Notifier {
                socket: notify_socket,
            },
            "upstart" => {
                tracing::warn!("upstart supervision is not supported: not signalling readiness");
                Notifier::default()
            }
            _ => Notifier::default(),
        }
    }

    /// Whether anything will be sent.
    pub fn is_active(&self) -> bool {
        self.socket.is_some()
    }

    /// Tells the service manager the server accepts connections and has loaded its data.
    pub fn ready(&self) {
        if self.is_active() {
            tracing::info!("Systemd supervision: sending READY=1");
            self.send("READY=1\nSTATUS=Ready to accept connections\n");
        }
    }

    /// Tells the service manager the server is shutting down.
    pub fn stopping(&self) {
        self.send("STOPPING=1\nSTATUS=Shutting down\n");
    }

    /// Sends one datagram; a failure is logged, never fatal (Redis does the same: the server
    /// runs whether or not systemd heard it).
    fn send(&self, state: &str) {
        let Some(socket) = &self.socket else {
            return;
        };
        if let Err(e) = send_to(socket, state.as_bytes()) {
            tracing::warn!(error = %e, socket = ?socket, "can't notify the service manager");
        }
    }
}

/// Sends `message` to the datagram socket named `socket`: a path, or an abstract name when it
/// starts with `@`.
fn send_to(socket: &OsString, message: &[u8]) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let name = socket.as_bytes();
    let addr = match name.strip_prefix(b"@") {
        Some(abstract_name) => {
            use std::os::linux::net::SocketAddrExt;
            SocketAddr::from_abstract_name(abstract_name)?
        }
        None => SocketAddr::from_pathname(std::path::Path::new(socket))?,
    };
    let sent = UnixDatagram::unbound()?.send_to_addr(message, &addr)?;
    if sent != message.len() {
        return Err(std::io::Error::other(format!(
            "sent {sent} of {} bytes",
            message.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn recv(socket: &UnixDatagram) -> String {
        socket
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("set_read_timeout");
        let mut buf = [0u8; 512];
        let n = socket.recv(&mut buf).expect("a datagram within 5 s");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    #[test]
    fn ready_and_stopping_reach_a_path_socket() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("notify.sock");
        let socket = UnixDatagram::bind(&path).expect("bind");
        let n = Notifier::new("systemd", Some(path.clone().into_os_string()));
        n.ready();
        assert_eq!(
            recv(&socket),
            "READY=1\nSTATUS=Ready to accept connections\n"
        );
        n.stopping();
        assert_eq!(recv(&socket), "STOPPING=1\nSTATUS=Shutting down\n");
    }

    #[test]
    fn an_abstract_socket_is_written_with_a_leading_at() {
        use std::os::linux::net::SocketAddrExt;
        let name = format!("streamd-notify-test-{}", std::process::id());
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).expect("abstract name");
        let socket = UnixDatagram::bind_addr(&addr).expect("bind abstract");
        Notifier::new("auto", Some(format!("@{name}").into())).ready();
        assert!(recv(&socket).starts_with("READY=1\n"));
    }

    #[test]
    fn modes_decide_whether_anything_is_sent() {
        let sock = || Some(OsString::from("/run/x.sock"));
        assert!(Notifier::new("systemd", sock()).is_active());
        assert!(Notifier::new("auto", sock()).is_active());
        assert!(!Notifier::new("no", sock()).is_active());
        assert!(!Notifier::new("upstart", sock()).is_active());
        assert!(!Notifier::new("auto", None).is_active());
        assert!(!Notifier::new("systemd", None).is_active());
        assert!(!Notifier::new("systemd", Some(OsString::new())).is_active());
    }
}
