//! Hash field TTLs (Redis 7.4's hash field expiration), kept beside the hashes.
//!
//! A [`Hash`](super::Hash) is 16 bytes in its keyspace slot and has no room for a
//! deadline per field, and most hashes never get one. So the deadlines live in a side
//! index per database, as key TTLs live in `Db::expires`: a hash without field TTLs
//! costs nothing, not a byte, and a hash with some costs one [`FieldTtls`] entry.
//!
//! ```text
//! HashTtls (one per database)
//!   keys:  key ─▶ FieldTtls { at: field ─▶ unix ms, order: {(unix ms, field)} }
//!   order: {(earliest unix ms of the key's fields, key)}    the active expiry cycle's
//!                                                            queue: first = due soonest
//! ```
//!
//! Invariants (kept by every method here, checked by the property test at the bottom):
//! a key is in `keys` only with at least one field TTL; `order` holds exactly one pair
//! per key of `keys`, with that key's earliest deadline; inside a [`FieldTtls`], `at`
//! and `order` hold the same (field, deadline) pairs. Every field named here exists in
//! the hash at that key: whoever removes or overwrites a field (HDEL, HSET, a key
//! deleted, renamed or moved) tells this index (`core/keyspace.rs` for keys,
//! `commands/hash.rs` for fields). A stale entry would at worst name a missing field,
//! which expiry then ignores.

use std::collections::{BTreeSet, HashMap};

/// The field deadlines of one hash (Redis keeps them inside the hash: `listpackex`
/// triplets, or a field's `ExpireMeta` in a `hashtable`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldTtls {
    /// Field → absolute deadline in unix ms.
    at: HashMap<Box<[u8]>, u64>,
    /// The same pairs ordered by deadline, for the earliest ones.
    order: BTreeSet<(u64, Box<[u8]>)>,
}

impl FieldTtls {
    /// No field deadlines.
    pub fn new() -> FieldTtls {
        FieldTtls::default()
    }

    /// Number of fields with a deadline.
    pub fn len(&self) -> usize {
        self.at.len()
    }

    /// True when no field has a deadline.
    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }

    /// The deadline of `field`, if it has one.
    pub fn get(&self, field: &[u8]) -> Option<u64> {
        self.at.get(field).copied()
    }

    /// Sets `field`'s deadline to `at_ms`.
    pub fn set(&mut self, field: &[u8], at_ms: u64) {
        if let Some(old) = self.at.insert(field.into(), at_ms) {
            self.order.remove(&(old, Box::from(field)));
        }
        self.order.insert((at_ms, field.into()));
    }

    /// Drops `field`'s deadline; returns it.
    pub fn remove(&mut self, field: &[u8]) -> Option<u64> {
        let old = self.at.remove(field)?;
        self.order.remove(&(old, Box::from(field)));
        Some(old)
    }

    /// The earliest deadline.
    pub fn min(&self) -> Option<u64> {
        self.order.first().map(|(at, _)| *at)
    }

    /// Fields whose deadline is at or before `now_ms`, earliest first, at most `limit`.
    pub fn due(&self, now_ms: u64, limit: usize) -> Vec<Box<[u8]>> {
        self.order
            .iter()
            .take_while(|(at, _)| *at <= now_ms)
            .take(limit)
            .map(|(_, f)| f.clone())
            .collect()
    }

    /// (field, deadline) pairs, earliest first.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], u64)> {
        self.order.iter().map(|(at, f)| (&f[..], *at))
    }

    /// Approximate heap bytes (MEMORY USAGE): each field is held twice, with its
    /// deadline, plus the map's and tree's per-entry overhead.
    pub fn heap_size(&self) -> usize {
        self.at.keys().map(|f| 2 * (f.len() + 8) + 48).sum()
    }
}

/// The field deadlines of every hash of one database that has some (module doc).
#[derive(Debug, Clone, Default)]
pub struct HashTtls {
    /// Key → its hash's field deadlines (never empty).
    keys: HashMap<Box<[u8]>, FieldTtls>,
    /// (earliest deadline, key) for each key of `keys`.
    order: BTreeSet<(u64, Box<[u8]>)>,
}

impl HashTtls {
    /// True when no hash of the database has a field TTL (the common case: lookups
    /// then skip field expiry with this one test).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Number of hashes with field TTLs (INFO's `subexpiry`).
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// The field deadlines of the hash at `key`.
    pub fn of(&self, key: &[u8]) -> Option<&FieldTtls> {
        self.keys.get(key)
    }

    /// `field`'s deadline in the hash at `key`.
    pub fn get(&self, key: &[u8], field: &[u8]) -> Option<u64> {
        self.keys.get(key).and_then(|t| t.get(field))
    }

    /// True if the hash at `key` has any field TTL.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.keys.contains_key(key)
    }

    /// Runs `f` on the key's entry (created empty if missing), then restores the
    /// invariants: the key's place in `order`, and no empty entry.
    fn edit<R>(&mut self, key: &[u8], f: impl FnOnce(&mut FieldTtls) -> R) -> R {
        if !self.keys.contains_key(key) {
            self.keys.insert(key.into(), FieldTtls::new());
        }
        let entry = self
            .keys
            .get_mut(key)
            .expect("the entry exists: inserted just above");
        let before = entry.min();
        let r = f(entry);
        let after = entry.min();
        if before != after {
            if let Some(b) = before {
                self.order.remove(&(b, Box::from(key)));
            }
            match after {
                Some(a) => {
                    self.order.insert((a, key.into()));
                }
                None => {
                    self.keys.remove(key);
                }
            }
        } else if after.is_none() {
            self.keys.remove(key);
        }
        r
    }

    /// Sets `field`'s deadline in the hash at `key`.
    pub fn set(&mut self, key: &[u8], field: &[u8], at_ms: u64) {
        self.edit(key, |t| t.set(field, at_ms));
    }

    /// Drops `field`'s deadline in the hash at `key` (HPERSIST, the field overwritten
    /// or deleted); returns it.
    pub fn remove(&mut self, key: &[u8], field: &[u8]) -> Option<u64> {
        if !self.keys.contains_key(key) {
            return None;
        }
        self.edit(key, |t| t.remove(field))
    }

    /// Takes all of `key`'s field deadlines away (the key deleted, or leaving for
    /// another name or database).
    pub fn take(&mut self, key: &[u8]) -> Option<FieldTtls> {
        let t = self.keys.remove(key)?;
        if let Some(min) = t.min() {
            self.order.remove(&(min, Box::from(key)));
        }
        Some(t)
    }

    /// Gives `key` the deadlines `ttls` (RENAME, MOVE, COPY, RESTORE, loading),
    /// replacing any it had.
    pub fn put(&mut self, key: &[u8], ttls: FieldTtls) {
        self.take(key);
        if let Some(min) = ttls.min() {
            self.order.insert((min, key.into()));
            self.keys.insert(key.into(), ttls);
        }
    }

    /// The key whose earliest field deadline is soonest, if that is at or before
    /// `now_ms` (the active expiry cycle's next hash).
    pub fn next_due(&self, now_ms: u64) -> Option<&[u8]> {
        self.order
            .first()
            .filter(|(at, _)| *at <= now_ms)
            .map(|(_, k)| &k[..])
    }

    /// Fields of the hash at `key` due at `now_ms`, earliest first, at most `limit`.
    pub fn due(&self, key: &[u8], now_ms: u64, limit: usize) -> Vec<Box<[u8]>> {
        self.keys
            .get(key)
            .map_or_else(Vec::new, |t| t.due(now_ms, limit))
    }

    /// Forgets everything (FLUSHDB).
    pub fn clear(&mut self) {
        self.keys.clear();
        self.order.clear();
    }

    /// Approximate heap bytes of all of it.
    pub fn heap_size(&self) -> usize {
        self.keys
            .iter()
            .map(|(k, t)| 2 * (k.len() + 8) + 96 + t.heap_size())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earliest_deadline_leads_the_queue() {
        let mut ix = HashTtls::default();
        ix.set(b"h1", b"a", 50);
        ix.set(b"h2", b"a", 20);
        ix.set(b"h1", b"b", 10);
        assert_eq!(ix.next_due(9), None);
        assert_eq!(ix.next_due(10), Some(&b"h1"[..]));
        assert_eq!(
            ix.due(b"h1", 60, 10),
            vec![Box::from(&b"b"[..]), Box::from(&b"a"[..])]
        );
        assert_eq!(ix.remove(b"h1", b"b"), Some(10));
        assert_eq!(ix.next_due(100), Some(&b"h2"[..]));
        ix.remove(b"h2", b"a");
        assert_eq!(ix.next_due(100), Some(&b"h1"[..]));
        ix.remove(b"h1", b"a");
        assert!(ix.is_empty());
        assert_eq!(ix.next_due(u64::MAX), None);
    }

    #[test]
    fn take_and_put_move_a_hash_whole() {
        let mut ix = HashTtls::default();
        ix.set(b"k", b"f", 5);
        ix.set(b"k", b"g", 7);
        let t = ix.take(b"k").expect("k has TTLs");
        assert!(ix.is_empty());
        ix.put(b"n", t);
        assert_eq!(ix.get(b"n", b"g"), Some(7));
        assert_eq!(ix.next_due(5), Some(&b"n"[..]));
        ix.put(b"n", FieldTtls::new());
        assert!(ix.is_empty());
    }
}

#[cfg(test)]
mod prop {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[derive(Debug, Clone)]
    enum Op {
        Set(u8, u8, u64),
        Remove(u8, u8),
        Take(u8),
        Move(u8, u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u8..4, 0u8..6, 0u64..50).prop_map(|(k, f, at)| Op::Set(k, f, at)),
            2 => (0u8..4, 0u8..6).prop_map(|(k, f)| Op::Remove(k, f)),
            1 => (0u8..4).prop_map(Op::Take),
            1 => (0u8..4, 0u8..4).prop_map(|(a, b)| Op::Move(a, b)),
        ]
    }

    proptest! {
        #[test]
        fn index_matches_a_map_of_maps(ops in proptest::collection::vec(op(), 0..300)) {
            let mut ix = HashTtls::default();
            let mut model: BTreeMap<u8, BTreeMap<u8, u64>> = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Set(k, f, at) => {
                        ix.set(&[k], &[f], at);
                        model.entry(k).or_default().insert(f, at);
                    }
                    Op::Remove(k, f) => {
                        let want = model.get_mut(&k).and_then(|m| m.remove(&f));
                        if model.get(&k).is_some_and(|m| m.is_empty()) {
                            model.remove(&k);
                        }
                        prop_assert_eq!(ix.remove(&[k], &[f]), want);
                    }
                    Op::Take(k) => {
                        let want = model.remove(&k);
                        prop_assert_eq!(ix.take(&[k]).map(|t| t.len()), want.map(|m| m.len()));
                    }
                    Op::Move(a, b) => {
                        if let Some(t) = ix.take(&[a]) {
                            ix.put(&[b], t);
                        }
                        if let Some(m) = model.remove(&a) {
                            model.insert(b, m);
                        }
                    }
                }
                prop_assert_eq!(ix.len(), model.len());
                prop_assert_eq!(ix.order.len(), model.len());
                for (k, m) in &model {
                    for (f, at) in m {
                        prop_assert_eq!(ix.get(&[*k], &[*f]), Some(*at));
                    }
                    prop_assert_eq!(ix.of(&[*k]).map(FieldTtls::len), Some(m.len()));
                }
                let soonest = model.values().filter_map(|m| m.values().min()).min().copied();
                let first = ix.order.first().map(|(at, _)| *at);
                prop_assert_eq!(first, soonest);
            }
        }
    }
}
