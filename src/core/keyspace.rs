//! The keyspace: databases 0..n, each a map key → value, with expiry times.
//!
//! A key's value is a [`Value`]: a stream, or one of Redis's other five types
//! (`types/`). Stream commands reach theirs through [`Db::stream`] and friends, which
//! answer `WRONGTYPE` for a key of another type. The map is a
//! [`Dict`] (Redis's chained hash table with incremental rehashing), whose reverse-binary
//! cursor gives `SCAN` its guarantee: a key present for the whole scan is returned,
//! whatever is inserted or deleted, and however the table is resized, in between.
//!
//! Expiry: `expires` holds the absolute unix-ms deadline of keys that have one.
//! Expired keys are removed lazily when looked up (by the caller, through
//! [`Db::expire_if_needed`]) and actively by a periodic sampler ([`Db::active_expire`]).
//!
//! Background stream work keeps its own sets of keys, so no pass walks the keyspace:
//! streams that track IDMP producers (IDMP expiry, [`Db::expire_idmp`]), streams with
//! retention settings and streams that deletions may have left with nodes to reclaim
//! (`core/lifecycle.rs`). Each set is a superset, cleaned up by its pass, with a cursor so
//! that a pass resumes where the last one stopped.

use super::dict::Dict;
use crate::error::ReplyError;
use crate::stream::{Stream, StreamId};
use crate::types::Value;
use crate::types::hash_ttl::HashTtls;
use bytes::Bytes;
use std::collections::BTreeSet;
use std::ops::Bound;

/// Most buckets one `SCAN` call visits per key asked for (Redis: `count * 10`).
const SCAN_BUCKETS_PER_KEY: usize = 10;

/// What [`Db::take_all`] took out of a database: dropping it frees every key.
pub struct TakenDb {
    /// The keys and values.
    pub keys: super::dict::TakenEntries<Value>,
    /// Their deadlines (held only to be dropped with the rest).
    _expires: super::dict::TakenEntries<u64>,
    /// Their hashes' field deadlines (likewise).
    _hexpires: HashTtls,
}

/// One database.
#[derive(Debug, Default, Clone)]
pub struct Db {
    /// Key → value.
    pub keys: Dict<Value>,
    /// Key → absolute expiry time in unix ms (only keys with a TTL): a [`Dict`] too, so
    /// that the volatile eviction policies can sample it (its slots' clocks are unused).
    pub expires: Dict<u64>,
    /// Hash field TTLs of the hashes that have some (`types/hash_ttl.rs`): nothing at
    /// all for a hash without. Kept in step with `keys` by [`Db::insert`],
    /// [`Db::remove`] and [`Db::clear`]; the hash commands keep it in step with fields.
    pub hexpires: HashTtls,
    /// Keys whose stream may track IDMP producers: the expiry pass visits only these.
    /// A superset (a key leaves it when the pass finds nothing left to expire there).
    idmp_keys: BTreeSet<Bytes>,
    /// Where the IDMP expiry pass resumes: the last key it finished.
    idmp_cursor: Option<Bytes>,
    /// Keys whose streams have retention settings (MAXAGE/MAXBYTES): the retention
    /// sweep visits only these. A superset: a key leaves when the sweep finds it gone or
    /// its retention off.
    retention_keys: BTreeSet<Bytes>,
    /// Where the retention sweep resumes: the last key it finished.
    retention_cursor: Option<Bytes>,
    /// Keys whose streams deletions may have left with nodes to reclaim. A superset: a
    /// key leaves when the reclamation pass has looked at all of its nodes.
    reclaim_keys: BTreeSet<Bytes>,
    /// Where the reclamation pass resumes: a key, and the last node of it looked at.
    reclaim_cursor: Option<(Bytes, Option<StreamId>)>,
}

/// The key of `set` after `cursor` (or the first one, when there is none after it or no
/// cursor): round-robin over a key set.
fn next_key(set: &BTreeSet<Bytes>, cursor: Option<&Bytes>) -> Option<Bytes> {
    cursor
        .and_then(|c| {
            set.range::<Bytes, _>((Bound::Excluded(c), Bound::Unbounded))
                .next()
        })
        .or_else(|| set.first())
        .cloned()
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

    /// Deletes `key` if its TTL has passed, handing back its value (to be freed here or
    /// in the background: `lazyfree.rs`).
    pub fn expire_if_needed(&mut self, key: &[u8], now_ms: u64) -> Option<Value> {
        if self.is_expired(key, now_ms) {
            self.remove(key)
        } else {
            None
        }
    }

    /// The value at `key`, ignoring expiry (callers expire first).
    pub fn get(&self, key: &[u8]) -> Option<&Value> {
        self.keys.get(key)
    }

    /// The value at `key`, mutable, ignoring expiry.
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut Value> {
        self.keys.get_mut(key)
    }

    /// The stream at `key`, ignoring expiry; `None` when missing or of another type (for
    /// the server's own passes over streams, which a client's key type cannot fail).
    pub fn get_stream(&self, key: &[u8]) -> Option<&Stream> {
        self.keys.get(key).and_then(Value::as_stream)
    }

    /// [`Db::get_stream`], mutable.
    pub fn get_stream_mut(&mut self, key: &[u8]) -> Option<&mut Stream> {
        self.keys.get_mut(key).and_then(Value::as_stream_mut)
    }

    /// The stream at `key`, ignoring expiry: `Ok(None)` when missing, `WRONGTYPE` when
    /// the key holds another type.
    pub fn stream(&self, key: &[u8]) -> Result<Option<&Stream>, ReplyError> {
        match self.keys.get(key) {
            None => Ok(None),
            Some(Value::Stream(s)) => Ok(Some(s)),
            Some(_) => Err(ReplyError::WrongType),
        }
    }

    /// [`Db::stream`], mutable.
    pub fn stream_mut(&mut self, key: &[u8]) -> Result<Option<&mut Stream>, ReplyError> {
        match self.keys.get_mut(key) {
            None => Ok(None),
            Some(Value::Stream(s)) => Ok(Some(s)),
            Some(_) => Err(ReplyError::WrongType),
        }
    }

    /// Inserts or replaces `key` (a replaced key loses its TTL, as SET/RENAME do).
    pub fn insert(&mut self, key: &[u8], value: impl Into<Value>) {
        let value = value.into();
        if let Value::Stream(stream) = &value {
            if stream.idmp().is_some_and(|i| i.has_producers()) {
                self.note_idmp(key);
            }
            if !stream.retention().is_off() {
                self.note_retention(key);
            }
            // A stream brought in whole (RENAME, COPY, RESTORE of a Redis payload) may
            // hold tombstones: the reclamation pass has a look.
            if !stream.is_empty() {
                self.note_reclaim(key);
            }
        }
        self.expires.remove(key);
        if !self.hexpires.is_empty() {
            self.hexpires.take(key);
        }
        self.keys.insert(key, value);
    }

    /// Inserts or replaces `key`, keeping its TTL (SET KEEPTTL, a value rewritten in
    /// place under a new encoding), and its field TTLs when the new value is a hash.
    pub fn replace_keep_ttl(&mut self, key: &[u8], value: impl Into<Value>) {
        let value = value.into();
        let ttl = self.expires.get(key).copied();
        // Field TTLs stay only with a hash (a string or list does not have fields).
        let field_ttls = self
            .hexpires
            .take(key)
            .filter(|_| matches!(value, Value::Hash(_)));
        self.insert(key, value);
        if let Some(at) = ttl {
            self.set_expire(key, at);
        }
        if let Some(t) = field_ttls {
            self.hexpires.put(key, t);
        }
    }

    /// The stream at `key`, created empty if missing; `WRONGTYPE` for another type.
    pub fn stream_or_create(&mut self, key: &[u8]) -> Result<&mut Stream, ReplyError> {
        let hash = self.keys.hash_key(key);
        self.stream_or_create_hashed(hash, key)
    }

    /// The hash of `key` in the keyspace (see [`Db::stream_or_create_hashed`]).
    pub fn hash_key(&self, key: &[u8]) -> u64 {
        self.keys.hash_key(key)
    }

    /// The value at `key` (whose [`Db::hash_key`] is `hash`), mutable, ignoring expiry.
    pub fn get_mut_hashed(&mut self, hash: u64, key: &[u8]) -> Option<&mut Value> {
        self.keys.get_mut_hashed(hash, key)
    }

    /// [`Db::stream_or_create`] with the key's hash already computed.
    pub fn stream_or_create_hashed(
        &mut self,
        hash: u64,
        key: &[u8],
    ) -> Result<&mut Stream, ReplyError> {
        match self
            .keys
            .get_or_insert_with_hashed(hash, key, || Value::Stream(Box::default()))
        {
            Value::Stream(s) => Ok(s),
            _ => Err(ReplyError::WrongType),
        }
    }

    /// Sets `key`'s absolute expiry time (unix ms).
    pub fn set_expire(&mut self, key: &[u8], at_ms: u64) {
        self.expires.insert(key, at_ms);
    }

    /// Removes `key` with its TTL; returns its value.
    pub fn remove(&mut self, key: &[u8]) -> Option<Value> {
        let v = self.keys.remove(key)?;
        self.expires.remove(key);
        if !self.hexpires.is_empty() {
            self.hexpires.take(key);
        }
        if let Value::Stream(s) = &v {
            if s.idmp().is_some() {
                self.idmp_keys.remove(key);
            }
            if !s.retention().is_off() {
                self.retention_keys.remove(key);
            }
        }
        Some(v)
    }

    /// Empties the database in O(1), as [`Db::clear`] does, handing back the keys and
    /// their values and deadlines to be freed elsewhere (FLUSHALL/FLUSHDB ASYNC).
    pub fn take_all(&mut self) -> TakenDb {
        let taken = TakenDb {
            keys: self.keys.take_all(),
            _expires: self.expires.take_all(),
            _hexpires: std::mem::take(&mut self.hexpires),
        };
        self.clear();
        taken
    }

    /// Removes everything.
    pub fn clear(&mut self) {
        self.keys.clear();
        self.expires.clear();
        self.hexpires.clear();
        self.idmp_keys.clear();
        self.idmp_cursor = None;
        self.retention_keys.clear();
        self.retention_cursor = None;
        self.reclaim_keys.clear();
        self.reclaim_cursor = None;
    }

    /// Notes that the stream at `key` has retention settings, for the retention sweep.
    pub fn note_retention(&mut self, key: &[u8]) {
        if !self.retention_keys.contains(key) {
            self.retention_keys.insert(Bytes::copy_from_slice(key));
        }
    }

    /// Notes that deletions may have left the stream at `key` with nodes to reclaim.
    pub fn note_reclaim(&mut self, key: &[u8]) {
        if !self.reclaim_keys.contains(key) {
            self.reclaim_keys.insert(Bytes::copy_from_slice(key));
        }
    }

    /// Number of keys the retention sweep visits (INFO, tests).
    pub fn retention_key_count(&self) -> usize {
        self.retention_keys.len()
    }

    /// Number of keys waiting for the reclamation pass (INFO, tests).
    pub fn reclaim_key_count(&self) -> usize {
        self.reclaim_keys.len()
    }

    /// The next key for the retention sweep (round-robin from its cursor), or `None`
    /// when there is none.
    pub fn retention_next(&self) -> Option<Bytes> {
        next_key(&self.retention_keys, self.retention_cursor.as_ref())
    }

    /// The retention sweep finished `key`: it resumes after it next time, and forgets it
    /// when `keep` is false (gone, or retention off).
    pub fn retention_done(&mut self, key: &Bytes, keep: bool) {
        if !keep {
            self.retention_keys.remove(key);
        }
        self.retention_cursor = Some(key.clone());
    }

    /// Where the reclamation pass goes on: the key, and the last node of it already
    /// looked at (`None`: from its first node). `None` when no key waits.
    pub fn reclaim_next(&self) -> Option<(Bytes, Option<StreamId>)> {
        if let Some((key, after)) = &self.reclaim_cursor
            && self.reclaim_keys.contains(key)
            && after.is_some()
        {
            return Some((key.clone(), *after));
        }
        let cursor = self.reclaim_cursor.as_ref().map(|(k, _)| k);
        next_key(&self.reclaim_keys, cursor).map(|k| (k, None))
    }

    /// The reclamation pass stopped in `key` after node `after` (`Some`: resume there),
    /// or went through all of it (`None`: the key leaves the set).
    pub fn reclaim_progress(&mut self, key: &Bytes, after: Option<StreamId>) {
        if after.is_none() {
            self.reclaim_keys.remove(key);
        }
        self.reclaim_cursor = Some((key.clone(), after));
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
            let Some(key) = next_key(&self.idmp_keys, self.idmp_cursor.as_ref()) else {
                return;
            };
            visited += 1;
            *budget -= 1;
            let state = self
                .keys
                .get_mut(&key)
                .and_then(Value::as_stream_mut)
                .and_then(|s| s.idmp_state_mut());
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

    /// Keys from the buckets at `cursor` onwards until about `count` keys are found (or
    /// `10 * count` buckets were visited), and the next cursor (0 = done). Redis's
    /// `SCAN` over its dict, with the same guarantees ([`Dict::scan`]).
    pub fn scan(&self, cursor: u64, count: usize) -> (u64, Vec<Bytes>) {
        let count = count.max(1);
        let mut out = Vec::new();
        let mut cursor = cursor;
        let mut budget = count.saturating_mul(SCAN_BUCKETS_PER_KEY);
        loop {
            cursor = self
                .keys
                .scan(cursor, |k, _| out.push(Bytes::copy_from_slice(k)));
            budget -= 1;
            if cursor == 0 || budget == 0 || out.len() >= count {
                return (cursor, out);
            }
        }
    }

    /// A pseudo-random key (RANDOMKEY).
    pub fn random_key(&self, seed: u64) -> Option<Bytes> {
        self.keys.random_key(seed).map(Bytes::copy_from_slice)
    }

    /// Moves some buckets of an ongoing rehash (the periodic task's share, Redis's
    /// `activerehashing`); true while a rehash is still going on.
    pub fn rehash(&mut self, buckets: usize) -> bool {
        self.keys.rehash(buckets)
    }

    /// Samples keys with a TTL and deletes expired ones; returns the keys deleted with
    /// their values. Does at most `budget` checks (Redis's active expire cycle,
    /// simplified).
    pub fn active_expire(&mut self, now_ms: u64, budget: usize) -> Vec<(Bytes, Value)> {
        let expired: Vec<Bytes> = self
            .expires
            .iter()
            .take(budget)
            .filter(|(_, at)| **at <= now_ms)
            .map(|(k, _)| Bytes::copy_from_slice(k))
            .collect();
        expired
            .into_iter()
            .filter_map(|k| self.remove(&k).map(|v| (k, v)))
            .collect()
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
            db.insert(&key(i), Stream::new());
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut round = 0;
        loop {
            let (next, keys) = db.scan(cursor, 10);
            seen.extend(keys);
            // Churn: delete some keys that are not in the "always present" set, add new ones.
            db.insert(format!("new:{round}").as_bytes(), Stream::new());
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
    fn field_ttls_leave_with_their_key() {
        use crate::types::{Hash, StringValue};
        let hash = || Value::Hash(Hash::new());
        let mut db = Db::default();
        db.insert(b"h", hash());
        db.hexpires.set(b"h", b"f", 10);
        db.replace_keep_ttl(b"h", hash());
        assert_eq!(db.hexpires.get(b"h", b"f"), Some(10), "kept for a hash");
        db.replace_keep_ttl(b"h", Value::String(StringValue::new(b"x")));
        assert!(db.hexpires.is_empty(), "never for another type");
        db.insert(b"h", hash());
        db.hexpires.set(b"h", b"f", 10);
        db.insert(b"h", hash());
        assert!(db.hexpires.is_empty(), "a replaced value drops them");
        db.hexpires.set(b"h", b"f", 10);
        db.remove(b"h");
        assert!(db.hexpires.is_empty(), "a removed key drops them");
        db.insert(b"h", hash());
        db.hexpires.set(b"h", b"f", 10);
        db.clear();
        assert!(db.hexpires.is_empty() && db.hexpires.next_due(u64::MAX).is_none());
    }

    #[test]
    fn expiry_is_lazy_and_active() {
        let mut db = Db::default();
        db.insert(&key(1), Stream::new());
        db.insert(&key(2), Stream::new());
        db.set_expire(&key(1), 100);
        assert!(db.expire_if_needed(&key(1), 99).is_none());
        assert!(db.expire_if_needed(&key(1), 100).is_some());
        assert!(db.get(&key(1)).is_none());
        db.set_expire(&key(2), 5);
        let gone: Vec<Bytes> = db
            .active_expire(10, 100)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(gone, vec![key(2)]);
        assert!(db.is_empty());
    }
}
