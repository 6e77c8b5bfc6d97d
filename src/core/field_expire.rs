//! Hash field expiry: removing fields whose TTL passed, lazily and actively.
//!
//! ```text
//! lookup of key ──Core::expire_if_needed──▶ key TTL passed? → delete key (DEL)
//!                                           else hash fields due? → expire_fields
//! cron ──active_expire_fields──▶ HashTtls::next_due (soonest hash first) → expire_fields
//!
//! expire_fields(db, key):  each due field removed from the hash and its TTL dropped
//!                          HDEL key field        logged / sent to replicas, one per field
//!                          hexpired              keyspace event (class h), once
//!                          del                   when the hash emptied (the key goes too)
//! ```
//!
//! Like key expiry, nothing happens while the log loads (the log holds the `HDEL`s the
//! primary wrote) and nothing happens on a replica: its primary's `HDEL`s arrive in the
//! replication stream, so primary and replica drop the same fields. Lazy expiry works on
//! the whole hash when the key is looked up, not field by field as Redis's
//! `hashTypeGetValue` does, so every command (HLEN and HEXISTS included) sees only live
//! fields; the reply is what Redis gives for the same fields.

use super::Core;
use super::notify::class;
use crate::types::Value;

/// Most fields the active cycle removes per `cron` tick over all databases (Redis's
/// `activeExpireCycle` has a similar per-cycle quota for fields).
const ACTIVE_EXPIRE_FIELDS_BUDGET: usize = 1000;

impl Core {
    /// Removes up to `limit` fields of the hash at `key` in `db` whose TTL is at or before
    /// `now_ms`, with their side effects (module doc). Returns the number of TTLs
    /// looked at (fields removed, plus any that named a field no longer there). The
    /// caller checks that this node expires anything (not loading, not a replica).
    pub fn expire_fields(&mut self, db: usize, key: &[u8], now_ms: u64, limit: usize) -> usize {
        let due = self.dbs[db].hexpires.due(key, now_ms, limit);
        if due.is_empty() {
            return 0;
        }
        let d = &mut self.dbs[db];
        let mut removed: Vec<&[u8]> = Vec::with_capacity(due.len());
        let emptied = match d.keys.get_mut(key) {
            Some(Value::Hash(h)) => {
                for f in &due {
                    d.hexpires.remove(key, f);
                    if h.remove(f) {
                        removed.push(f);
                    }
                }
                h.is_empty()
            }
            // Not a hash any more: the TTLs are stale.
            _ => {
                d.hexpires.take(key);
                return due.len();
            }
        };
        if removed.is_empty() {
            return due.len();
        }
        self.stats.expired_subkeys += removed.len() as u64;
        for f in &removed {
            self.propagate(db, &[b"HDEL".as_slice(), key, f]);
        }
        self.notify_keyspace_event(class::HASH, "hexpired", key, db);
        if emptied {
            self.dbs[db].remove(key);
            self.key_deleted(db, key);
            self.notify_keyspace_event(class::GENERIC, "del", key, db);
        } else {
            self.touch_key(db, key);
        }
        due.len()
    }

    /// The active half: removes due fields from the hashes whose earliest field TTL has
    /// passed, soonest first, at most [`ACTIVE_EXPIRE_FIELDS_BUDGET`] per call.
    pub fn active_expire_fields(&mut self, now_ms: u64) {
        let mut budget = ACTIVE_EXPIRE_FIELDS_BUDGET;
        for db in 0..self.dbs.len() {
            while budget > 0 {
                let Some(key) = self.dbs[db].hexpires.next_due(now_ms).map(<[u8]>::to_vec) else {
                    break;
                };
                let n = self.expire_fields(db, &key, now_ms, budget);
                budget = budget.saturating_sub(n.max(1));
            }
        }
    }
}
