//! The open-addressing [`Table`] that large sets and large hashes share.
//!
//! ```text
//! Table    capacity = 2^k slots of 24 bytes, linear probing, no tombstones
//!          +------------+------------+------------+------------+-----
//!          | None       | Some(elem) | Some(elem) | None       | ...
//!          +------------+------------+------------+------------+-----
//!          elem = ShortBytes: up to 22 bytes inline in the slot, else one boxed copy
//!          home(e) = hash(key(e)) & (capacity - 1); e sits at home(e) or after it with
//!          no empty slot in between (deletion shifts the run back, so this holds)
//! ```
//!
//! A set member is the whole element ([`Whole`]); a hash entry is `varint(field len) |
//! field | value` in one element (`super::hash`), keyed by its field.
//!
//! The table answers what the commands need beyond lookups: a fair random element (a
//! random slot, retried until occupied: the load never falls below 1/8 above the
//! minimum capacity) and `SSCAN`/`HSCAN` with Redis's reverse-binary cursor over home
//! buckets, so an element present for a whole scan is returned however the table grows
//! or shrinks between calls.

use crate::short_bytes::ShortBytes;
use crate::util::rand_below;
use std::hash::BuildHasher;
use std::marker::PhantomData;
use std::sync::OnceLock;

// --- the table ---------------------------------------------------------------------------

/// What part of a table element is its key.
pub trait KeyOf {
    /// The key bytes of element `e`.
    fn key(e: &[u8]) -> &[u8];
}

/// The whole element is the key (set members).
#[derive(Debug, Clone, Copy, Default)]
pub struct Whole;

impl KeyOf for Whole {
    #[inline]
    fn key(e: &[u8]) -> &[u8] {
        e
    }
}

/// The process's hash seed: random per process (no one can pick colliding members in
/// advance), fixed for its life (SCAN cursors stay meaningful).
fn seed() -> &'static foldhash::fast::FixedState {
    static SEED: OnceLock<foldhash::fast::FixedState> = OnceLock::new();
    SEED.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(0x7ab1e);
        foldhash::fast::FixedState::with_seed(h.finish())
    })
}

/// Hash of a key.
#[inline]
fn hash_of(key: &[u8]) -> u64 {
    seed().hash_one(key)
}

/// An open-addressing hash table of [`ShortBytes`] elements with linear probing (see
/// the module doc for the layout and its invariant).
#[derive(Debug, Clone)]
pub struct Table<K: KeyOf> {
    /// `2^k` slots (or none while empty).
    slots: Box<[Option<ShortBytes>]>,
    /// Occupied slots. Invariant: `len * 5 <= slots.len() * 4` (load at most 4/5).
    len: usize,
    /// Key extraction.
    _key: PhantomData<K>,
}

impl<K: KeyOf> Default for Table<K> {
    fn default() -> Self {
        Table {
            slots: Box::new([]),
            len: 0,
            _key: PhantomData,
        }
    }
}

/// Smallest capacity once anything is stored.
const MIN_CAPACITY: usize = 8;

impl<K: KeyOf> Table<K> {
    /// A table sized for `n` elements without growing.
    pub fn with_capacity(n: usize) -> Self {
        let mut t = Table::default();
        if n > 0 {
            t.resize(Self::capacity_for(n));
        }
        t
    }

    /// The capacity that holds `n` elements at load at most 4/5.
    fn capacity_for(n: usize) -> usize {
        (n.saturating_mul(5).div_ceil(4))
            .max(MIN_CAPACITY)
            .next_power_of_two()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len().wrapping_sub(1)
    }

    #[inline]
    fn home(&self, key: &[u8]) -> usize {
        hash_of(key) as usize & self.mask()
    }

    /// The slot holding the element whose key is `key`.
    pub fn find(&self, key: &[u8]) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let mask = self.mask();
        let mut i = self.home(key);
        loop {
            match &self.slots[i] {
                None => return None,
                Some(e) if K::key(e) == key => return Some(i),
                Some(_) => i = (i + 1) & mask,
            }
        }
    }

    /// The element in slot `i` (from [`Table::find`]).
    pub fn at(&self, i: usize) -> Option<&[u8]> {
        self.slots.get(i).and_then(|s| s.as_deref())
    }

    /// Replaces the element in slot `i` by one with the same key.
    pub fn replace_at(&mut self, i: usize, e: ShortBytes) {
        debug_assert!(self.at(i).is_some_and(|old| K::key(old) == K::key(&e)));
        if let Some(slot) = self.slots.get_mut(i) {
            *slot = Some(e);
        }
    }

    /// Inserts `e`, whose key must not be in the table yet.
    pub fn insert_new(&mut self, e: ShortBytes) {
        if (self.len + 1) * 5 > self.slots.len() * 4 {
            self.resize(Self::capacity_for(self.len + 1).max(self.slots.len() * 2));
        }
        let mask = self.mask();
        let mut i = self.home(K::key(&e));
        while self.slots[i].is_some() {
            i = (i + 1) & mask;
        }
        self.slots[i] = Some(e);
        self.len += 1;
    }

    /// Inserts `e` unless its key is present; true if inserted.
    pub fn insert(&mut self, e: ShortBytes) -> bool {
        if self.find(K::key(&e)).is_some() {
            return false;
        }
        self.insert_new(e);
        true
    }

    /// Removes the element with key `key`; returns it.
    pub fn remove(&mut self, key: &[u8]) -> Option<ShortBytes> {
        let i = self.find(key)?;
        Some(self.remove_at(i))
    }

    /// Removes the element in (occupied) slot `i` and shifts the probe run after it
    /// back, so every element stays reachable from its home slot.
    pub fn remove_at(&mut self, mut i: usize) -> ShortBytes {
        let mask = self.mask();
        let removed = self.slots[i].take().unwrap_or_default();
        self.len -= 1;
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let Some(e) = &self.slots[j] else { break };
            let h = self.home(K::key(e));
            // The element at j may move to the hole at i unless its home lies
            // cyclically in (i, j].
            let stays = if i <= j {
                i < h && h <= j
            } else {
                i < h || h <= j
            };
            if !stays {
                self.slots[i] = self.slots[j].take();
                i = j;
            }
        }
        if self.len * 8 < self.slots.len() && self.slots.len() > MIN_CAPACITY {
            self.resize(Self::capacity_for(self.len));
        }
        removed
    }

    /// Rebuilds the table with `cap` slots (a power of two holding every element).
    fn resize(&mut self, cap: usize) {
        let old = std::mem::replace(&mut self.slots, vec![None; cap].into_boxed_slice());
        let mask = cap - 1;
        for e in old.into_vec().into_iter().flatten() {
            let mut i = hash_of(K::key(&e)) as usize & mask;
            while self.slots[i].is_some() {
                i = (i + 1) & mask;
            }
            self.slots[i] = Some(e);
        }
    }

    /// The elements, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.slots.iter().filter_map(|s| s.as_deref())
    }

    /// A slot chosen uniformly among the occupied ones (the table must not be empty).
    pub fn random_slot(&self) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        loop {
            let i = rand_below(self.slots.len());
            if self.slots[i].is_some() {
                return Some(i);
            }
        }
    }

    /// One step of a scan: calls `f` with every element whose home bucket is `cursor`'s
    /// (the cursor is masked to the current size), returns the next cursor (0 at the
    /// end). Redis's `dictScan` cursor: the bucket bits are walked high to low.
    pub fn scan_step(&self, cursor: u64, mut f: impl FnMut(&[u8])) -> u64 {
        if self.slots.is_empty() {
            return 0;
        }
        let mask = self.mask() as u64;
        let v = (cursor & mask) as usize;
        let mut i = v;
        while let Some(e) = &self.slots[i] {
            if self.home(K::key(e)) == v {
                f(e);
            }
            i = (i + 1) & (mask as usize);
            if i == v {
                break;
            }
        }
        let mut c = cursor | !mask;
        c = c.reverse_bits();
        c = c.wrapping_add(1);
        c.reverse_bits()
    }

    /// Bytes allocated: the slot array and every boxed element, at the allocator's size
    /// classes.
    pub fn heap_size(&self) -> usize {
        let slots = crate::alloc::usable_size(std::mem::size_of_val(&*self.slots));
        slots
            + self
                .iter_slots()
                .map(|e| crate::alloc::usable_size(e.heap_len()))
                .sum::<usize>()
    }

    fn iter_slots(&self) -> impl Iterator<Item = &ShortBytes> {
        self.slots.iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_returns_everything_across_resizes() {
        let mut t: Table<Whole> = Table::default();
        for i in 0..1000 {
            t.insert_new(ShortBytes::new(format!("m{i}").as_bytes()));
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut step = 0;
        loop {
            cursor = t.scan_step(cursor, |e| {
                seen.insert(e.to_vec());
            });
            step += 1;
            if step == 100 {
                for i in 1000..3000 {
                    t.insert_new(ShortBytes::new(format!("m{i}").as_bytes()));
                }
            }
            if step == 300 {
                for i in 1000..2990 {
                    t.remove(format!("m{i}").as_bytes());
                }
            }
            if cursor == 0 {
                break;
            }
        }
        for i in 0..1000 {
            assert!(seen.contains(format!("m{i}").as_bytes()), "m{i}");
        }
    }
}
