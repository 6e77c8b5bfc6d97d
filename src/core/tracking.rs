//! Client-side caching (Redis 6+'s `CLIENT TRACKING`): the server remembers which keys a
//! client read and tells it when they change, so the client can keep a local copy.
//!
//! ```text
//!   default mode:  GET k (read-only, tracking on) ──▶ table[k] += client
//!                  any change of k ──▶ each client in table[k]: invalidate [k]; table[k] gone
//!   BCAST mode:    no table; each change of a key under a registered prefix is queued on
//!                  the prefix and sent, after the command, to every client of the prefix
//!   FLUSHALL/DB:   every tracking client: invalidate null; the table is emptied
//! ```
//!
//! An invalidation goes to the client itself as a RESP3 push `>2 invalidate [keys]`, or,
//! with `REDIRECT id`, to that connection: a RESP3 push, or to a RESP2 connection
//! subscribed to `__redis__:invalidate` as a Pub/Sub message whose payload is the key
//! array. A RESP2 client without a redirection gets nothing (RESP2 has no pushes). When
//! the redirection's connection is gone the client is told once per invalidation with
//! `>2 tracking-redir-broken <id>` (RESP3 only) and TRACKINGINFO shows
//! `broken_redirect`.
//!
//! Messages to the client running the command follow its reply (after EXEC's whole
//! reply in a transaction): they go through the same per-client queue as Pub/Sub
//! messages (`pubsub.rs`). `NOLOOP` skips the changes a client made itself; `OPTIN`
//! tracks only the command after `CLIENT CACHING yes`, `OPTOUT` all but the one after
//! `CLIENT CACHING no`. Keys read by a script's read-only `redis.call`s are tracked for
//! the script's caller. `tracking-table-max-keys` bounds the table: past it, keys are
//! invalidated (and forgotten) until it fits.

use super::Core;
use super::client::ClientMsg;
use super::command::{CommandSpec, flags};
use crate::resp::Argv;
use crate::resp::writer::Protocol;
use bytes::Bytes;
use std::collections::{BTreeMap, HashMap, HashSet};

/// The Pub/Sub channel RESP2 redirections receive invalidations on.
pub const CHANNEL: &[u8] = b"__redis__:invalidate";

/// One client's CLIENT TRACKING settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrackingClient {
    /// `REDIRECT id` (0: none).
    pub redirect: u64,
    /// BCAST mode.
    pub bcast: bool,
    /// The BCAST prefixes (`""` when none was given).
    pub prefixes: Vec<Bytes>,
    /// OPTIN mode.
    pub optin: bool,
    /// OPTOUT mode.
    pub optout: bool,
    /// NOLOOP: not told about its own changes.
    pub noloop: bool,
    /// CLIENT CACHING yes/no was given for the next command.
    pub caching: bool,
    /// The redirection's connection was found gone.
    pub broken_redirect: bool,
}

/// A BCAST prefix: its clients and the keys under it changed since the last flush, each
/// with the client that changed it (for NOLOOP).
#[derive(Debug, Default)]
struct Prefix {
    clients: HashSet<u64>,
    changed: Vec<(Bytes, u64)>,
}

/// The tracking state of the server.
#[derive(Debug, Default)]
pub struct Tracking {
    /// Clients with tracking on.
    pub clients: HashMap<u64, TrackingClient>,
    /// Default mode: key → the clients that read it since its last invalidation.
    table: HashMap<Bytes, HashSet<u64>>,
    /// Sum of the table's client sets (INFO `tracking_total_items`).
    items: usize,
    /// BCAST prefixes.
    prefixes: BTreeMap<Bytes, Prefix>,
    /// The client whose command runs now (a script's caller for its `redis.call`s), for
    /// NOLOOP.
    pub current: u64,
}

impl Tracking {
    /// Keys in the table (INFO `tracking_total_keys`).
    pub fn total_keys(&self) -> usize {
        self.table.len()
    }

    /// Client entries in the table (INFO `tracking_total_items`).
    pub fn total_items(&self) -> usize {
        self.items
    }

    /// BCAST prefixes registered (INFO `tracking_total_prefixes`).
    pub fn total_prefixes(&self) -> usize {
        self.prefixes.len()
    }

    /// The first of the client's BCAST prefixes that overlaps `prefix` (one is a prefix
    /// of the other), if any.
    pub fn overlapping<'a>(&'a self, id: u64, prefix: &[u8]) -> Option<&'a Bytes> {
        self.clients
            .get(&id)?
            .prefixes
            .iter()
            .find(|p| p.starts_with(prefix) || prefix.starts_with(p))
    }
}

/// The invalidation frame for `keys` (`None`: everything, after a flush) in `proto`;
/// RESP2 only as a Pub/Sub message to a redirection.
fn frame(proto: Protocol, keys: Option<&[Bytes]>, null: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match proto {
        Protocol::Resp3 => out.extend_from_slice(b">2\r\n$10\r\ninvalidate\r\n"),
        Protocol::Resp2 => {
            out.extend_from_slice(b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n")
        }
    }
    match keys {
        None => out.extend_from_slice(null),
        Some(keys) => {
            out.extend_from_slice(format!("*{}\r\n", keys.len()).as_bytes());
            for k in keys {
                out.extend_from_slice(format!("${}\r\n", k.len()).as_bytes());
                out.extend_from_slice(k);
                out.extend_from_slice(b"\r\n");
            }
        }
    }
    out
}

impl Core {
    /// The protocol of connection `id` and whether it is subscribed to anything, if it
    /// is connected (a client whose command runs now counts as subscribed: it is out of
    /// the table).
    fn tracking_peer(&self, id: u64) -> Option<(Protocol, bool)> {
        if let Some(c) = self.clients.get(&id) {
            Some((c.proto, c.in_pubsub()))
        } else {
            self.detached
                .iter()
                .find(|d| d.id == id)
                .map(|d| (d.proto, true))
        }
    }

    /// Queues `bytes` for connection `id` (its mailbox, or after its running command's
    /// reply).
    fn tracking_send(&mut self, id: u64, bytes: Vec<u8>) {
        if let Some(c) = self.clients.get(&id) {
            c.send(ClientMsg::Shared(Bytes::from(bytes)), self.limits.pubsub);
        } else if let Some(d) = self.detached.iter_mut().find(|d| d.id == id) {
            d.pushes.extend_from_slice(&bytes);
        }
    }

    /// Tells tracking client `id` that `keys` changed (`None`: everything), through its
    /// redirection if it has one (Redis's `sendTrackingMessage`).
    fn send_invalidation(&mut self, id: u64, keys: Option<&[Bytes]>) {
        let Some(t) = self.tracking.clients.get(&id) else {
            return;
        };
        let redirect = t.redirect;
        let Some((own_proto, _)) = self.tracking_peer(id) else {
            return;
        };
        let null: &[u8] = if own_proto == Protocol::Resp3 {
            b"_\r\n"
        } else {
            b"$-1\r\n"
        };
        let (target, proto) = if redirect != 0 {
            match self.tracking_peer(redirect) {
                Some((Protocol::Resp3, _)) => (redirect, Protocol::Resp3),
                Some((Protocol::Resp2, true)) => (redirect, Protocol::Resp2),
                Some((Protocol::Resp2, false)) => return,
                None => {
                    if let Some(t) = self.tracking.clients.get_mut(&id) {
                        t.broken_redirect = true;
                    }
                    if own_proto == Protocol::Resp3 {
                        let msg = format!(">2\r\n$21\r\ntracking-redir-broken\r\n:{redirect}\r\n");
                        self.tracking_send(id, msg.into_bytes());
                    }
                    return;
                }
            }
        } else if own_proto == Protocol::Resp3 {
            (id, Protocol::Resp3)
        } else {
            return;
        };
        let bytes = frame(proto, keys, null);
        self.tracking_send(target, bytes);
    }

    /// A key changed (Redis's `trackingInvalidateKey`, from `signalModifiedKey`): queue
    /// it for the BCAST prefixes it falls under and invalidate it for the clients that
    /// read it.
    pub fn tracking_invalidate_key(&mut self, key: &[u8]) {
        if self.tracking.clients.is_empty() && self.tracking.table.is_empty() {
            return;
        }
        let current = self.tracking.current;
        if !self.tracking.prefixes.is_empty() {
            for (prefix, state) in self.tracking.prefixes.iter_mut() {
                if key.starts_with(prefix) {
                    state.changed.push((Bytes::copy_from_slice(key), current));
                }
            }
        }
        let Some(ids) = self.tracking.table.remove(key) else {
            return;
        };
        self.tracking.items -= ids.len();
        let keys = [Bytes::copy_from_slice(key)];
        for id in ids {
            let Some(t) = self.tracking.clients.get(&id) else {
                continue;
            };
            if t.bcast || (t.noloop && id == current) {
                continue;
            }
            self.send_invalidation(id, Some(&keys));
        }
    }

    /// FLUSHALL / FLUSHDB: every tracking client is told everything changed, and the
    /// table is emptied (Redis's `trackingInvalidateKeysOnFlush`).
    pub fn tracking_invalidate_all(&mut self) {
        let ids: Vec<u64> = self.tracking.clients.keys().copied().collect();
        for id in ids {
            self.send_invalidation(id, None);
        }
        self.tracking.table.clear();
        self.tracking.items = 0;
    }

    /// After a command of `caller` (a script's caller for its `redis.call`s): remembers
    /// the keys a read-only command read, as its tracking mode says (Redis's
    /// `trackingRememberKeys`), then keeps the table within `tracking-table-max-keys`.
    ///
    /// A script's read-only command makes its caller track the keys that command read
    /// (Redis 7.2+'s `trackingRememberKeys(caller, executing)`; 7.0 tracked every key the
    /// script-running command declared); EVAL_RO, EVALSHA_RO and FCALL_RO track nothing
    /// by themselves.
    pub fn tracking_remember(&mut self, caller: u64, spec: &CommandSpec, argv: &Argv) {
        let Some(t) = self.tracking.clients.get(&caller) else {
            return;
        };
        if t.bcast
            || spec.flags & flags::READONLY == 0
            || matches!(spec.name, "eval_ro" | "evalsha_ro" | "fcall_ro")
            || (t.optin && !t.caching)
            || (t.optout && t.caching)
        {
            return;
        }
        if spec.flags & flags::PUBSUB != 0 {
            return;
        }
        for i in spec.key_positions(argv) {
            let Some(key) = argv.get(i) else { continue };
            if self
                .tracking
                .table
                .entry(key.clone())
                .or_default()
                .insert(caller)
            {
                self.tracking.items += 1;
            }
        }
        self.tracking_limit();
    }

    /// Evicts keys from the table (invalidating them) while it holds more than
    /// `tracking-table-max-keys` (0: no limit): after each remembering command and from
    /// the cron (a lowered limit).
    pub fn tracking_limit(&mut self) {
        let max = self.config.get_i64("tracking-table-max-keys").max(0) as usize;
        if max == 0 {
            return;
        }
        while self.tracking.table.len() > max {
            let Some(key) = self.tracking.table.keys().next().cloned() else {
                break;
            };
            let current = std::mem::take(&mut self.tracking.current);
            self.tracking_invalidate_key(&key);
            self.tracking.current = current;
        }
    }

    /// Sends the changes queued on BCAST prefixes to their clients (Redis does it before
    /// sleeping; here after each top-level command, so they follow its reply).
    pub fn tracking_broadcast(&mut self) {
        if self
            .tracking
            .prefixes
            .values()
            .all(|p| p.changed.is_empty())
        {
            return;
        }
        let mut sends: Vec<(u64, Vec<Bytes>)> = Vec::new();
        for state in self.tracking.prefixes.values_mut() {
            if state.changed.is_empty() {
                continue;
            }
            let changed = std::mem::take(&mut state.changed);
            for &id in &state.clients {
                let noloop = self.tracking.clients.get(&id).is_some_and(|t| t.noloop);
                let keys: Vec<Bytes> = changed
                    .iter()
                    .filter(|(_, by)| !(noloop && *by == id))
                    .map(|(k, _)| k.clone())
                    .collect();
                if !keys.is_empty() {
                    sends.push((id, keys));
                }
            }
        }
        for (id, keys) in sends {
            self.send_invalidation(id, Some(&keys));
        }
    }

    /// CLIENT TRACKING ON: (re)enables tracking for `id` with `settings` (the caller
    /// checked the options).
    pub fn enable_tracking(&mut self, id: u64, mut settings: TrackingClient) {
        let old = self.tracking.clients.remove(&id);
        if settings.bcast {
            if settings.prefixes.is_empty() {
                settings.prefixes.push(Bytes::new());
            }
            // Prefixes accumulate over successive CLIENT TRACKING ON ... BCAST calls.
            if let Some(old) = &old {
                for p in &old.prefixes {
                    if !settings.prefixes.contains(p) {
                        settings.prefixes.push(p.clone());
                    }
                }
            }
            for p in &settings.prefixes {
                self.tracking
                    .prefixes
                    .entry(p.clone())
                    .or_default()
                    .clients
                    .insert(id);
            }
        }
        self.tracking.clients.insert(id, settings);
    }

    /// CLIENT TRACKING OFF, or a client gone: it leaves its BCAST prefixes (the keys it
    /// read stay in the table and are skipped when they change, as Redis does).
    pub fn disable_tracking(&mut self, id: u64) {
        let Some(t) = self.tracking.clients.remove(&id) else {
            return;
        };
        for p in &t.prefixes {
            if let Some(state) = self.tracking.prefixes.get_mut(p) {
                state.clients.remove(&id);
                if state.clients.is_empty() {
                    self.tracking.prefixes.remove(p);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_redis_s() {
        let keys = [Bytes::from_static(b"k1"), Bytes::from_static(b"key2")];
        assert_eq!(
            frame(Protocol::Resp3, Some(&keys), b"_\r\n"),
            b">2\r\n$10\r\ninvalidate\r\n*2\r\n$2\r\nk1\r\n$4\r\nkey2\r\n"
        );
        assert_eq!(
            frame(Protocol::Resp2, None, b"$-1\r\n"),
            b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n$-1\r\n"
        );
        assert_eq!(CHANNEL.len(), 20);
    }
}
