//! MIGRATE's connections to target instances, kept between calls (Redis's
//! `server.migrate_cached_sockets`, cluster.c): a resharding tool runs one MIGRATE per
//! batch of keys against the same target, and reusing the connection (and the database
//! it last selected) saves a connect and a `SELECT` per batch.
//!
//! The rules are Redis's: one connection per `host:port` as the client spelled them, at
//! most [`MAX_SOCKETS`] (a new one evicts another), and a connection unused for more
//! than [`IDLE_SECS`] seconds is closed by the cron ([`MigrateSockets::close_idle`]).
//! The command (commands/migrate.rs) takes a connection out while it uses it and puts
//! it back only when it is still usable, so an I/O error closes it.

use std::collections::HashMap;
use std::io::BufReader;
use std::net::TcpStream;

/// Most connections kept (Redis's `MIGRATE_SOCKET_CACHE_ITEMS`).
pub const MAX_SOCKETS: usize = 64;

/// Seconds a kept connection may stay unused before the cron closes it (Redis's
/// `MIGRATE_SOCKET_CACHE_TTL`).
pub const IDLE_SECS: u64 = 10;

/// [`MigrateSocket::last_db`] when the database selected on the connection is not known
/// (a new connection, or after the target replied an error).
pub const UNKNOWN_DB: i64 = -1;

/// One kept connection to a target.
#[derive(Debug)]
pub struct MigrateSocket {
    /// The connection, buffered for reading reply lines (writes go to the inner
    /// stream).
    pub conn: BufReader<TcpStream>,
    /// The database the target has selected on it, [`UNKNOWN_DB`] when not known
    /// (Redis's `last_dbid`). Kept as Redis keeps it: a MIGRATE to database -1 right
    /// after "unknown" sends no SELECT, exactly as Redis 7.0 does.
    pub last_db: i64,
    /// When it was last taken, unix seconds.
    pub last_use: u64,
}

/// The kept connections by `host:port` name.
#[derive(Debug, Default)]
pub struct MigrateSockets {
    by_name: HashMap<Vec<u8>, MigrateSocket>,
}

impl MigrateSockets {
    /// Takes the connection kept for `name` out of the cache, if any, marking it used at
    /// `now_secs`; the caller [`put`](MigrateSockets::put)s it back when it is still
    /// good.
    pub fn take(&mut self, name: &[u8], now_secs: u64) -> Option<MigrateSocket> {
        let mut s = self.by_name.remove(name)?;
        s.last_use = now_secs;
        Some(s)
    }

    /// Keeps `socket` for `name`. At [`MAX_SOCKETS`] another connection is closed first:
    /// the least recently used one (Redis drops a random one).
    pub fn put(&mut self, name: Vec<u8>, socket: MigrateSocket) {
        if !self.by_name.contains_key(&name) && self.by_name.len() >= MAX_SOCKETS {
            let oldest = self
                .by_name
                .iter()
                .min_by_key(|(_, s)| s.last_use)
                .map(|(n, _)| n.clone());
            if let Some(n) = oldest {
                self.by_name.remove(&n);
            }
        }
        self.by_name.insert(name, socket);
    }

    /// Closes the connections unused for more than [`IDLE_SECS`] (Redis's
    /// `migrateCloseTimedoutSockets`, run once a second by its cron).
    pub fn close_idle(&mut self, now_secs: u64) {
        self.by_name
            .retain(|_, s| now_secs.saturating_sub(s.last_use) <= IDLE_SECS);
    }

    /// Number of kept connections.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// True when no connection is kept.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn socket(listener: &TcpListener, last_use: u64) -> MigrateSocket {
        let addr = listener.local_addr().expect("local addr");
        MigrateSocket {
            conn: BufReader::new(TcpStream::connect(addr).expect("connect")),
            last_db: UNKNOWN_DB,
            last_use,
        }
    }

    #[test]
    fn idle_connections_close_and_the_oldest_makes_room() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let mut cache = MigrateSockets::default();
        cache.put(b"a:1".to_vec(), socket(&listener, 100));
        cache.put(b"b:1".to_vec(), socket(&listener, 105));
        assert!(cache.take(b"a:1", 108).is_some_and(|s| s.last_use == 108));
        assert!(cache.take(b"a:1", 108).is_none());
        cache.put(b"a:1".to_vec(), socket(&listener, 100));
        cache.close_idle(111);
        assert_eq!(cache.len(), 1);
        assert!(cache.take(b"b:1", 111).is_some());
        for i in 0..MAX_SOCKETS as u64 + 1 {
            cache.put(format!("h:{i}").into_bytes(), socket(&listener, 200 + i));
        }
        assert_eq!(cache.len(), MAX_SOCKETS);
        assert!(cache.take(b"h:0", 300).is_none());
        assert!(cache.take(b"h:1", 300).is_some());
    }
}
