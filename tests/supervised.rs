//! `supervised systemd`: streamd tells the service manager it is ready (`READY=1` to the Unix
//! datagram socket `NOTIFY_SOCKET` names, the sd_notify protocol) only once it accepts
//! connections and has loaded its dataset, and says `STOPPING=1` when it shuts down. This is
//! what `conf/streamd.service` (`Type=notify`) relies on. Each test binds a datagram socket
//! of its own and plays systemd.

mod common;

use common::{Raw, free_port, served_by};
use std::ffi::OsString;
use std::fs::File;
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_streamd");
/// How long a start (including loading the dataset) may take.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A streamd child process; killed on drop.
struct Streamd {
    child: Child,
    port: u16,
}

impl Drop for Streamd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Streamd {
    /// Sends SIGTERM, as `systemctl stop` does, and waits (bounded) for a clean exit.
    fn terminate(&mut self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill (procps)");
        assert!(status.success(), "kill -TERM failed");
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                assert!(
                    status.success(),
                    "streamd exited with {status} after SIGTERM"
                );
                return;
            }
            assert!(
                Instant::now() < deadline,
                "streamd still runs after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Starts streamd on a free port with data directory `dir`, `NOTIFY_SOCKET` set to `notify`
/// (or removed), and `args`. Its output goes to `dir/streamd.log`.
fn spawn(dir: &Path, notify: Option<&OsString>, args: &[&str]) -> Streamd {
    let port = free_port();
    let log = File::create(dir.join("streamd.log")).expect("create log");
    let mut cmd = Command::new(BIN);
    cmd.args(["--port", &port.to_string(), "--dir"])
        .arg(dir)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::from(log.try_clone().expect("clone log")))
        .stderr(Stdio::from(log));
    match notify {
        Some(socket) => cmd.env("NOTIFY_SOCKET", socket),
        None => cmd.env_remove("NOTIFY_SOCKET"),
    };
    let child = cmd.spawn().expect("spawn streamd");
    Streamd { child, port }
}

fn log_of(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("streamd.log")).unwrap_or_default()
}

/// The next datagram on `socket` within `timeout`, or `None`.
fn recv_within(socket: &UnixDatagram, timeout: Duration) -> Option<String> {
    socket
        .set_read_timeout(Some(timeout))
        .expect("set_read_timeout");
    let mut buf = [0u8; 4096];
    match socket.recv(&mut buf) {
        Ok(n) => Some(String::from_utf8_lossy(&buf[..n]).into_owned()),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            None
        }
        Err(e) => panic!("recv on the notify socket: {e}"),
    }
}

/// Starts streamd (see [`spawn`]) and polls `ready` until it gives something, retrying on
/// another port when the free port was taken meanwhile (the server exits saying so).
/// Panics with the log, saying it waited for `what`, when nothing comes. `ready` paces
/// itself (a bounded wait or a short sleep).
fn spawn_until<T>(
    dir: &Path,
    notify: Option<&OsString>,
    args: &[&str],
    what: &str,
    mut ready: impl FnMut(&mut Streamd) -> Option<T>,
) -> (Streamd, T) {
    for _ in 0..5 {
        let mut server = spawn(dir, notify, args);
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(got) = ready(&mut server) {
                return (server, got);
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                let log = log_of(dir);
                assert!(
                    log.contains("in use"),
                    "streamd exited with {status}:\n{log}"
                );
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no {what} on {} within {START_TIMEOUT:?}:\n{}",
                server.port,
                log_of(dir)
            );
        }
    }
    panic!("no free port after 5 attempts");
}

/// Starts streamd and waits for its first notification on `socket` (see [`spawn_until`]).
/// Returns the server and the notification.
fn spawn_notified(
    dir: &Path,
    socket: &UnixDatagram,
    name: &OsString,
    args: &[&str],
) -> (Streamd, String) {
    spawn_until(dir, Some(name), args, "notification", |_| {
        recv_within(socket, Duration::from_millis(50))
    })
}

/// Starts streamd and waits until it answers PING and INFO names its pid (see
/// [`spawn_until`]); another process on the port means ours lost the race for it. For the
/// servers that send no notification.
fn spawn_serving(dir: &Path, notify: Option<&OsString>, args: &[&str]) -> Streamd {
    let (server, ()) = spawn_until(dir, notify, args, "answer", |server| {
        if let Ok(mut raw) = Raw::try_connect(server.port)
            && raw.cmd_str(&["PING"]) == b"+PONG\r\n"
            && served_by(&mut raw, server.child.id())
        {
            return Some(());
        }
        std::thread::sleep(Duration::from_millis(20));
        None
    });
    server
}

/// Binds a datagram socket at `dir/notify.sock`; returns it and its name for `NOTIFY_SOCKET`.
fn notify_socket(dir: &Path) -> (UnixDatagram, OsString) {
    let path = dir.join("notify.sock");
    let socket = UnixDatagram::bind(&path).expect("bind the notify socket");
    (socket, path.into_os_string())
}

/// Asserts `server`, which sent READY=1, answers at once: one connect, `+PONG` to a PING
/// (not `-LOADING`), and INFO's `process_id` is its child's pid, so the notification and
/// the listener belong to the same process. A failure says whether the child still runs,
/// who listens on the port, and what the server logged.
fn assert_serving(server: &mut Streamd, dir: &Path) -> Raw {
    let port = server.port;
    let seen = |server: &mut Streamd, what: String| -> String {
        let status = match server.child.try_wait() {
            Ok(Some(status)) => format!("exited with {status}"),
            Ok(None) => "still running".to_string(),
            Err(e) => format!("unknown ({e})"),
        };
        let listeners = Command::new("ss")
            .args(["-Hltnp", &format!("sport = :{port}")])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_else(|e| format!("(ss failed: {e})"));
        format!(
            "READY=1 was sent by pid {}, but {what}; that child is {status}; \
             listening on {port}: {listeners:?}\n--- its log ---\n{}",
            server.child.id(),
            log_of(dir)
        )
    };
    let mut raw = match Raw::try_connect(port) {
        Ok(raw) => raw,
        Err(e) => panic!("{}", seen(server, format!("connect to {port} failed: {e}"))),
    };
    let pong = common::escape(&raw.cmd_str(&["PING"]));
    if pong != "+PONG\\r\\n" {
        panic!("{}", seen(server, format!("PING answered {pong}")));
    }
    let pid = common::info_field(&mut raw, "server", "process_id");
    if pid != Some(server.child.id().to_string()) {
        panic!(
            "{}",
            seen(server, format!("port {port} is served by pid {pid:?}"))
        );
    }
    raw
}

#[test]
fn ready_is_sent_once_the_server_accepts_connections() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (socket, name) = notify_socket(dir.path());
    let (mut server, ready) = spawn_notified(
        dir.path(),
        &socket,
        &name,
        &[
            "--supervised",
            "systemd",
            "--appendonly",
            "no",
            "--save",
            "",
        ],
    );
    assert_serving(&mut server, dir.path());
    assert_eq!(ready, "READY=1\nSTATUS=Ready to accept connections\n");
    assert!(
        log_of(dir.path()).contains("sending READY=1"),
        "{}",
        log_of(dir.path())
    );
}

#[test]
fn ready_waits_until_the_dataset_is_loaded() {
    const ENTRIES: usize = 100_000;
    let dir = tempfile::tempdir().expect("temp dir");
    let (socket, name) = notify_socket(dir.path());
    let args = [
        "--supervised",
        "systemd",
        "--appendonly",
        "yes",
        "--save",
        "",
    ];
    let (mut first, ready) = spawn_notified(dir.path(), &socket, &name, &args);
    assert!(ready.starts_with("READY=1\n"), "{ready:?}");
    let mut raw = assert_serving(&mut first, dir.path());
    // Enough log to replay that loading takes a while: 100 000 entries of ~200 bytes.
    let value = "v".repeat(200);
    for _ in 0..ENTRIES / 1000 {
        let mut batch = Vec::new();
        for _ in 0..1000 {
            batch.extend(common::encode_cmd(&[
                b"XADD",
                b"s",
                b"*",
                b"f",
                value.as_bytes(),
            ]));
        }
        raw.send(&batch);
        for _ in 0..1000 {
            let reply = raw.read_reply();
            assert!(reply.starts_with(b"$"), "{}", common::escape(&reply));
        }
    }
    drop(raw);
    first.terminate();
    let stopping = recv_within(&socket, Duration::from_secs(1));
    assert_eq!(
        stopping.as_deref(),
        Some("STOPPING=1\nSTATUS=Shutting down\n")
    );
    drop(first);

    // Restart on the same data: READY=1 only when every entry is back.
    let (mut second, ready) = spawn_notified(dir.path(), &socket, &name, &args);
    assert!(ready.starts_with("READY=1\n"), "{ready:?}");
    let mut raw = assert_serving(&mut second, dir.path());
    assert_eq!(
        common::escape(&raw.cmd_str(&["XLEN", "s"])),
        format!(":{ENTRIES}\\r\\n"),
        "READY=1 came before the dataset was loaded"
    );
}

#[test]
fn an_abstract_notify_socket_works_with_supervised_auto() {
    use std::os::linux::net::SocketAddrExt;
    let dir = tempfile::tempdir().expect("temp dir");
    // Abstract names are shared by every process on the machine (per network namespace):
    // unique per test process and start, so two suites running at once never cross.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!("streamd-supervised-test-{}-{nanos}", std::process::id());
    let addr =
        std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).expect("abstract");
    let socket = UnixDatagram::bind_addr(&addr).expect("bind the abstract socket");
    let (mut server, ready) = spawn_notified(
        dir.path(),
        &socket,
        &OsString::from(format!("@{name}")),
        &["--supervised", "auto", "--appendonly", "no", "--save", ""],
    );
    assert!(ready.starts_with("READY=1\n"), "{ready:?}");
    assert_serving(&mut server, dir.path());
}

#[test]
fn supervised_no_sends_nothing_and_systemd_without_a_socket_warns() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (socket, name) = notify_socket(dir.path());
    // The default is `supervised no`: NOTIFY_SOCKET is ignored.
    let mut server = spawn_serving(dir.path(), Some(&name), &["--appendonly", "no"]);
    server.terminate();
    let got = recv_within(&socket, Duration::from_millis(300));
    assert_eq!(got, None, "supervised no sent a notification");

    let other = tempfile::tempdir().expect("temp dir");
    let mut server = spawn_serving(
        other.path(),
        None,
        &["--supervised", "systemd", "--appendonly", "no"],
    );
    server.terminate();
    assert!(
        log_of(other.path()).contains("NOTIFY_SOCKET not found"),
        "{}",
        log_of(other.path())
    );
}
