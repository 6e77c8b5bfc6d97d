//! TCP keepalive on accepted sockets (`tcp-keepalive`).

use std::time::Duration;

/// Turns on TCP keepalive probes for `socket`, the way Redis's `anetKeepAlive` does:
/// first probe after `idle`, then every `idle / 3` (at least 1 s), 3 probes before the
/// peer is declared dead.
pub fn set_keepalive(socket: &tokio::net::TcpStream, idle: Duration) -> std::io::Result<()> {
    let interval = (idle / 3).max(Duration::from_secs(1));
    let params = socket2::TcpKeepalive::new()
        .with_time(idle)
        .with_interval(interval)
        .with_retries(3);
    socket2::SockRef::from(socket).set_tcp_keepalive(&params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn keepalive_is_set_on_the_socket() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let _client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        set_keepalive(&server, Duration::from_secs(60)).unwrap();
        let sock = socket2::SockRef::from(&server);
        assert!(sock.keepalive().unwrap());
        assert_eq!(sock.tcp_keepalive_time().unwrap(), Duration::from_secs(60));
        assert_eq!(
            sock.tcp_keepalive_interval().unwrap(),
            Duration::from_secs(20)
        );
        assert_eq!(sock.tcp_keepalive_retries().unwrap(), 3);
    }
}
