//! The keyspace: databases 0..n, each a map key → stream, with expiry times and a scan
//! order.
//!
//! streamd stores only streams, so a key's value is always a [`Stream`]. Lookups are a
//! `HashMap`; `SCAN` walks a second, ordered index of `(hash(key), key)` so that a
//! cursor (the hash to resume from) never misses a key that is present for the whole
//! scan, whatever is inserted or deleted in between — the guarantee Redis's
//! reverse-binary cursor gives.
//!
//! Expiry: `expires` holds the absolute unix-ms deadline of keys that have one.
//! Expired keys are removed lazily when looked up (by the caller, through
//! [`Db::expire_if_needed`]) and actively by a periodic sampler ([`Db::active_expire`]).

use crate::stream::Stream;
use bytes::Bytes;
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::ops::Bound;

/// One database.
#[derive(Debug, Default, Clone)]
pub struct Db {
    /// Key → stream.
    pub keys: HashMap<Bytes, Stream>,
    /// Key → absolute expiry time in unix ms (only keys with a TTL).
    pub expires: HashMap<Bytes, u64>,
    /// Scan order: (63-bit hash of key, key). Holds exactly the keys of `keys`.
    scan_index: BTreeSet<(u64, Bytes)>,
    /// Keys whose stream may track IDMP producers: the expiry pass visits only these.
    /// A superset (a key leaves it when the pass finds nothing left to expire there).
    idmp_keys: BTreeSet<Bytes>,
    /// Where the IDMP expiry pass resumes: the last key it finished.
    idmp_cursor: Option<Bytes>,
}

/// The 63-bit scan hash of a key (stable for the life of the process).
pub fn scan_hash(key: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    key.hash(&mut h);
    h.finish() >> 1
}

impl Db {
    /// Number of keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when the database holds no keys.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// True if `key` has an expiry at or before `now_ms`.
    pub fn is_expired(&self, key: &[u8], now_ms: u64) -> bool {
        self.expires.get(key).is_some_and(|&at| at <= now_ms)
    }

    /// Deletes `key` if its TTL has passed; true if it did.
    pub fn expire_if_needed(&mut self, key: &[u8], now_ms: u64) -> bool {
        if self.is_expired(key, now_ms) {
            self.remove(key);
            true
        } else {
            false
        }
    }

    /// The stream at `key`, ignoring expiry (callers expire first).
    pub fn get(&self, key: &[u8]) -> Option<&Stream> {
        self.keys.get(key)
    }

    /// The stream at `key`, mutable, ignoring expiry.
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut Stream> {
        self.keys.get_mut(key)
    }

    /// Inserts or replaces `key` (a replaced key loses its TTL, as SET/RENAME do).
    pub fn insert(&mut self, key: Bytes, stream: Stream) {
        if stream.idmp.as_ref().is_some_and(|i| i.has_producers()) {
            self.idmp_keys.insert(key.clone());
        }
        self.expires.remove(&key);
        if !self.keys.contains_key(&key) {
            self.scan_index.insert((scan_hash(&key), key.clone()));
        }
        self.keys.insert(key, stream);
    }

    /// The stream at `key`, created empty if missing.
    pub fn get_or_create(&mut self, key: &Bytes) -> &mut Stream {
        if !self.keys.contains_key(key) {
            self.scan_index.insert((scan_hash(key), key.clone()));
        }
        self.keys.entry(key.clone()).or_default()
    }

    /// Removes `key` with its TTL; returns the stream.
    pub fn remove(&mut self, key: &[u8]) -> Option<Stream> {
        let (k, v) = self.keys.remove_entry(key)?;
        self.expires.remove(key);
        if v.idmp.is_some() {
            self.idmp_keys.remove(key);
        }
        self.scan_index.remove(&(scan_hash(&k), k));
        Some(v)
    }

    /// Removes everything.
    pub fn clear(&mut self) {
        self.keys.clear();
        self.expires.clear();
        self.scan_index.clear();
        self.idmp_keys.clear();
        self.idmp_cursor = None;
    }

    /// Notes that the stream at `key` now tracks IDMP producers, for the expiry pass.
    pub fn note_idmp(&mut self, key: &[u8]) {
        if !self.idmp_keys.contains(key) {
            self.idmp_keys.insert(Bytes::copy_from_slice(key));
        }
    }

    /// The IDMP expiry pass: drops iids whose entry time is older than their stream's
    /// IDMP-DURATION, visiting the noted streams round-robin from where the last pass
    /// stopped and spending at most `budget` (stream/idmp.rs counts one unit per
    /// producer looked at and per iid dropped, and one per stream here). Streams left
    /// without producers, or gone, leave the set.
    pub fn expire_idmp(&mut self, now_ms: u64, budget: &mut usize) {
        let mut visited = 0;
        let total = self.idmp_keys.len();
        while *budget > 0 && visited < total {
            let next = match &self.idmp_cursor {
                Some(c) => self
                    .idmp_keys
                    .range::<Bytes, _>((Bound::Excluded(c), Bound::Unbounded))
                    .next()
                    .cloned(),
                None => None,
            };
            let Some(key) = next.or_else(|| self.idmp_keys.first().cloned()) else {
                return;
            };
            visited += 1;
            *budget -= 1;
            let state = self.keys.get_mut(&key).and_then(|s| s.idmp.as_deref_mut());
            let complete = match state {
                Some(state) => {
                    let complete = state.expire(now_ms, budget);
                    if !state.has_producers() {
                        self.idmp_keys.remove(&key);
                    }
                    complete
                }
                None => {
                    self.idmp_keys.remove(&key);
                    true
                }
            };
            if !complete {
                // Out of budget inside this stream: resume here next time.
                return;
            }
            self.idmp_cursor = Some(key);
        }
    }

    /// Up to about `count` keys starting at `cursor`, and the next cursor (0 = done).
    /// Keys sharing a hash are returned together, so a cursor never splits them.
    pub fn scan(&self, cursor: u64, count: usize) -> (u64, Vec<Bytes>) {
        let start = cursor.saturating_sub(1);
        let mut out = Vec::new();
        let mut last_hash = None;
        for (h, k) in self.scan_index.range((start, Bytes::new())..) {
            if out.len() >= count.max(1) && last_hash != Some(*h) {
                return (h + 1, out);
            }
            last_hash = Some(*h);
            out.push(k.clone());
        }
        (0, out)
    }

    /// A pseudo-random key (RANDOMKEY), chosen by hash position.
    pub fn random_key(&self, seed: u64) -> Option<Bytes> {
        let probe = seed >> 1;
        self.scan_index
            .range((probe, Bytes::new())..)
            .next()
            .or_else(|| self.scan_index.iter().next())
            .map(|(_, k)| k.clone())
    }

    /// Samples keys with a TTL and deletes expired ones; returns the keys deleted.
    /// Does at most `budget` checks (Redis's active expire cycle, simplified).
    pub fn active_expire(&mut self, now_ms: u64, budget: usize) -> Vec<Bytes> {
        let expired: Vec<Bytes> = self
            .expires
            .iter()
            .take(budget)
            .filter(|(_, at)| **at <= now_ms)
            .map(|(k, _)| k.clone())
            .collect();
        for k in &expired {
            self.remove(k);
        }
        expired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: usize) -> Bytes {
        Bytes::from(format!("key:{i}"))
    }

    #[test]
    fn scan_sees_every_key_present_throughout_despite_changes() {
        let mut db = Db::default();
        for i in 0..500 {
            db.insert(key(i), Stream::new());
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut round = 0;
        loop {
            let (next, keys) = db.scan(cursor, 10);
            seen.extend(keys);
            // Churn: delete some keys that are not in the "always present" set, add new ones.
            db.insert(Bytes::from(format!("new:{round}")), Stream::new());
            db.remove(&key(400 + round % 100));
            round += 1;
            if next == 0 {
                break;
            }
            cursor = next;
        }
        for i in 0..400 {
            assert!(seen.contains(&key(i)), "missed {i}");
        }
    }

    #[test]
    fn expiry_is_lazy_and_active() {
        let mut db = Db::default();
        db.insert(key(1), Stream::new());
        db.insert(key(2), Stream::new());
        db.expires.insert(key(1), 100);
        assert!(!db.expire_if_needed(&key(1), 99));
        assert!(db.expire_if_needed(&key(1), 100));
        assert!(db.get(&key(1)).is_none());
        db.expires.insert(key(2), 5);
        assert_eq!(db.active_expire(10, 100), vec![key(2)]);
        assert!(db.is_empty());
    }
}
