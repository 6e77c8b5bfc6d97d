//! Protected mode: with `protected-mode yes` (the default) and no password on the default
//! user, only clients on the loopback interface are served. Anyone else gets Redis's
//! explanatory `-DENIED` error and the connection is closed (Redis 7.0's
//! `clientAcceptHandler`), so a server bound to a public address by mistake is not open
//! to the network.

use std::net::IpAddr;

/// The reply to a refused client, byte for byte Redis 7.0's (it names Redis and its
/// `redis-server` options, which streamd shares).
pub const DENIED: &[u8] = b"-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

/// Is `peer` on the loopback interface (127.0.0.0/8, `::1`, or `::ffff:127.x.y.z`)?
pub fn is_loopback(peer: IpAddr) -> bool {
    match peer {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// Must a client from `peer` be refused? Only in protected mode, while the default user
/// has no password (`nopass`), and when the client is not on the loopback interface.
pub fn refuses(protected_mode: bool, default_user_nopass: bool, peer: IpAddr) -> bool {
    protected_mode && default_user_nopass && !is_loopback(peer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn only_remote_clients_of_an_open_server_in_protected_mode_are_refused() {
        for remote in ["192.0.2.7", "10.1.2.3", "2001:db8::1", "::ffff:192.0.2.7"] {
            assert!(refuses(true, true, ip(remote)), "{remote}");
            assert!(
                !refuses(false, true, ip(remote)),
                "{remote}: protected-mode no"
            );
            assert!(
                !refuses(true, false, ip(remote)),
                "{remote}: a password is set"
            );
        }
        for local in ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"] {
            assert!(!refuses(true, true, ip(local)), "{local}");
        }
    }

    #[test]
    fn the_reply_is_one_error_line() {
        assert!(DENIED.starts_with(b"-DENIED Redis is running in protected mode"));
        assert!(DENIED.ends_with(b"outside.\r\n"));
        assert_eq!(DENIED.iter().filter(|&&c| c == b'\n').count(), 1);
    }
}
