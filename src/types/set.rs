//! Set values: an `intset`, or a [`Table`] of members (`super::table`).
//!
//! A set is kept as Redis 7.0 keeps it, so `OBJECT ENCODING` answers the same:
//!
//! * `intset` while every member is a canonical integer (`string2ll` reads it back to the
//!   same bytes) and there are at most `set-max-intset-entries` of them: a sorted array
//!   of fixed-width little-endian integers, the width the widest member needs.
//! * `hashtable` otherwise (7.0 has no listpack sets): a [`Table`] of [`ShortBytes`]
//!   members.
//!
//! ```text
//! IntSet   one exact-size Box<[u8]> (empty: no allocation, width 2)
//!          +-------+--------+--------+-----+--------+
//!          | width | m0 LE  | m1 LE  | ... | mn LE  |   width = 2 | 4 | 8 (grows, never
//!          +-------+--------+--------+-----+--------+   shrinks); m0 < m1 < ... < mn
//!
//! Table    see super::table: 2^k slots of 24 bytes, linear probing, no tombstones
//! ```
//!
//! A set member is the whole element; a hash entry is `varint(field len) | field |
//! value` in one element ([`super::hash`]), so a short pair costs no allocation at all.
//! A `Set` is 16 bytes and lives unboxed in its keyspace slot (`Value::Set`), so a small
//! set is one allocation. Per large-set member that is 24 bytes over the load factor (kept between 1/8, where it shrinks, and 4/5: at
//! 4/5 a linear probe still finds a member in about 3 slots, 13 for a miss), against
//! Redis's 8-byte bucket + 24-byte `dictEntry` + an sds allocation per member.

use super::Thresholds;
use super::table::{Table, Whole};
use crate::short_bytes::ShortBytes;
use crate::stream::id::string2ll;
use crate::util::rand_below;
use std::borrow::Cow;

// --- intset ------------------------------------------------------------------------------

/// Redis's `intset`: sorted fixed-width little-endian integers (module doc), in one
/// exact-size allocation whose first byte is the width.
#[derive(Debug, Clone, Default)]
pub struct IntSet {
    /// `width | m0 | m1 | ...` (empty: no members, width 2); members ascending.
    bytes: Box<[u8]>,
}

/// The width an integer needs.
fn width_of(v: i64) -> u8 {
    if i16::try_from(v).is_ok() {
        2
    } else if i32::try_from(v).is_ok() {
        4
    } else {
        8
    }
}

/// `bytes` with `edit` applied to it as a vector: one reallocation to the exact size
/// (as Redis reallocates its intsets and listpacks on every change).
pub(crate) fn edit_exact(bytes: &mut Box<[u8]>, edit: impl FnOnce(&mut Vec<u8>)) {
    let mut v = std::mem::take(bytes).into_vec();
    edit(&mut v);
    *bytes = v.into_boxed_slice();
}

impl IntSet {
    /// Bytes per member.
    fn width(&self) -> usize {
        usize::from(self.bytes.first().copied().unwrap_or(2))
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.bytes.len().saturating_sub(1) / self.width()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Member `i` (ascending order).
    pub fn get(&self, i: usize) -> i64 {
        let w = self.width();
        let b = &self.bytes[1 + i * w..1 + i * w + w];
        match b {
            [a, b] => i64::from(i16::from_le_bytes([*a, *b])),
            [a, b, c, d] => i64::from(i32::from_le_bytes([*a, *b, *c, *d])),
            _ => {
                let mut x = [0u8; 8];
                x.copy_from_slice(b);
                i64::from_le_bytes(x)
            }
        }
    }

    /// `Ok(i)` if `v` is member `i`, else `Err(position it would take)`.
    fn search(&self, v: i64) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.get(mid).cmp(&v) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// True if `v` is a member.
    pub fn contains(&self, v: i64) -> bool {
        self.search(v).is_ok()
    }

    /// Adds `v`; true if it was not there.
    pub fn insert(&mut self, v: i64) -> bool {
        let need = width_of(v);
        let w = self.width();
        if usize::from(need) > w || self.bytes.is_empty() {
            // A wider value is either below or above every member.
            let n = self.len();
            let nw = usize::from(need).max(w);
            let mut wide = Vec::with_capacity(1 + (n + 1) * nw);
            wide.push(nw as u8);
            let put = |x: i64, out: &mut Vec<u8>| out.extend_from_slice(&x.to_le_bytes()[..nw]);
            if v < 0 && usize::from(need) > w {
                put(v, &mut wide);
            }
            for i in 0..n {
                put(self.get(i), &mut wide);
            }
            if v >= 0 || usize::from(need) <= w {
                put(v, &mut wide);
            }
            self.bytes = wide.into_boxed_slice();
            return true;
        }
        match self.search(v) {
            Ok(_) => false,
            Err(i) => {
                let at = 1 + i * w;
                edit_exact(&mut self.bytes, |b| {
                    b.reserve_exact(w);
                    b.splice(at..at, v.to_le_bytes()[..w].iter().copied());
                });
                true
            }
        }
    }

    /// Removes `v`; true if it was there.
    pub fn remove(&mut self, v: i64) -> bool {
        match self.search(v) {
            Ok(i) => {
                self.remove_index(i);
                true
            }
            Err(_) => false,
        }
    }

    /// Removes member `i`.
    pub fn remove_index(&mut self, i: usize) {
        let w = self.width();
        let at = 1 + i * w;
        edit_exact(&mut self.bytes, |b| {
            b.drain(at..at + w);
        });
    }

    /// Members ascending.
    pub fn iter(&self) -> impl Iterator<Item = i64> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Bytes allocated.
    pub fn heap_size(&self) -> usize {
        crate::alloc::usable_size(self.bytes.len())
    }
}

// --- the set -----------------------------------------------------------------------------

/// One member as the set holds it: an integer of an intset or bytes of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Member<'a> {
    /// An intset member.
    Int(i64),
    /// A table member.
    Bytes(&'a [u8]),
}

impl<'a> Member<'a> {
    /// The member's bytes.
    pub fn to_cow(self) -> Cow<'a, [u8]> {
        match self {
            Member::Int(v) => Cow::Owned(itoa::Buffer::new().format(v).as_bytes().to_vec()),
            Member::Bytes(b) => Cow::Borrowed(b),
        }
    }

    /// Calls `f` with the member's bytes (formatting an integer on the stack).
    pub fn with_bytes<R>(self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self {
            Member::Int(v) => f(itoa::Buffer::new().format(v).as_bytes()),
            Member::Bytes(b) => f(b),
        }
    }
}

/// A set of byte strings (`intset` or `hashtable`, see the module doc).
#[derive(Debug, Clone)]
pub enum Set {
    /// All members canonical integers, at most `set-max-intset-entries`.
    Ints(IntSet),
    /// Anything else.
    Table(Box<Table<Whole>>),
}

impl Default for Set {
    fn default() -> Self {
        Set::Ints(IntSet::default())
    }
}

impl Set {
    /// An empty set.
    pub fn new() -> Set {
        Set::default()
    }

    /// Number of members (`SCARD`).
    pub fn len(&self) -> usize {
        match self {
            Set::Ints(s) => s.len(),
            Set::Table(t) => t.len(),
        }
    }

    /// True when empty (an empty set is never stored in the keyspace).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Converts an intset to a table sized for `extra` more members.
    fn convert(&mut self, extra: usize) {
        if let Set::Ints(s) = self {
            let mut t = Table::with_capacity(s.len() + extra);
            for v in s.iter() {
                t.insert_new(ShortBytes::new(itoa::Buffer::new().format(v).as_bytes()));
            }
            *self = Set::Table(Box::new(t));
        }
    }

    /// Adds `member`; true if it was not there.
    pub fn insert(&mut self, member: &[u8], t: &Thresholds) -> bool {
        if let Set::Ints(s) = self {
            match string2ll(member) {
                Some(v) => {
                    let added = s.insert(v);
                    if s.len() > t.set_max_intset_entries {
                        self.convert(0);
                    }
                    return added;
                }
                None => self.convert(1),
            }
        }
        match self {
            Set::Table(tab) => tab.insert(ShortBytes::new(member)),
            Set::Ints(_) => false,
        }
    }

    /// Removes `member`; true if it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match self {
            Set::Ints(s) => string2ll(member).is_some_and(|v| s.remove(v)),
            Set::Table(t) => t.remove(member).is_some(),
        }
    }

    /// True if `member` is in the set.
    pub fn contains(&self, member: &[u8]) -> bool {
        match self {
            Set::Ints(s) => string2ll(member).is_some_and(|v| s.contains(v)),
            Set::Table(t) => t.find(member).is_some(),
        }
    }

    /// True if `m` (a member of another set) is in this one.
    pub fn contains_member(&self, m: Member<'_>) -> bool {
        match (self, m) {
            (Set::Ints(s), Member::Int(v)) => s.contains(v),
            (_, m) => m.with_bytes(|b| self.contains(b)),
        }
    }

    /// The members, in the set's own order (ascending for an intset).
    pub fn members(&self) -> Box<dyn Iterator<Item = Member<'_>> + '_> {
        match self {
            Set::Ints(s) => Box::new(s.iter().map(Member::Int)),
            Set::Table(t) => Box::new(t.iter().map(Member::Bytes)),
        }
    }

    /// The members, in the set's own order.
    pub fn iter(&self) -> impl Iterator<Item = Cow<'_, [u8]>> {
        let (ints, table) = match self {
            Set::Ints(s) => (Some(s), None),
            Set::Table(t) => (None, Some(t)),
        };
        ints.into_iter()
            .flat_map(|s| s.iter())
            .map(|v| Cow::Owned(itoa::Buffer::new().format(v).as_bytes().to_vec()))
            .chain(table.into_iter().flat_map(|t| t.iter()).map(Cow::Borrowed))
    }

    /// A member chosen uniformly at random (`None` when empty).
    pub fn random(&self) -> Option<Member<'_>> {
        match self {
            Set::Ints(s) if s.is_empty() => None,
            Set::Ints(s) => Some(Member::Int(s.get(rand_below(s.len())))),
            Set::Table(t) => t.random_slot().and_then(|i| t.at(i)).map(Member::Bytes),
        }
    }

    /// Removes and returns a random member, as bytes.
    pub fn pop_random(&mut self) -> Option<Vec<u8>> {
        match self {
            Set::Ints(s) if s.is_empty() => None,
            Set::Ints(s) => {
                let i = rand_below(s.len());
                let v = s.get(i);
                s.remove_index(i);
                Some(itoa::Buffer::new().format(v).as_bytes().to_vec())
            }
            Set::Table(t) => {
                let i = t.random_slot()?;
                Some(t.remove_at(i).to_vec())
            }
        }
    }

    /// One `SSCAN` step from `cursor`: the members visited, and the next cursor. An
    /// intset is returned whole with cursor 0, as Redis does.
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(Member<'_>)) -> u64 {
        match self {
            Set::Ints(s) => {
                s.iter().for_each(|v| f(Member::Int(v)));
                0
            }
            Set::Table(t) => {
                let mut cursor = cursor;
                let mut seen = 0usize;
                let mut iterations = count.saturating_mul(10);
                loop {
                    cursor = t.scan_step(cursor, |e| {
                        seen += 1;
                        f(Member::Bytes(e))
                    });
                    if cursor == 0 || iterations == 0 || seen >= count {
                        return cursor;
                    }
                    iterations -= 1;
                }
            }
        }
    }

    /// `OBJECT ENCODING`'s name for it.
    pub fn encoding(&self) -> &'static str {
        match self {
            Set::Ints(_) => "intset",
            Set::Table(_) => "hashtable",
        }
    }

    /// Bytes allocated for everything the set owns (not the set itself, which lives in
    /// its keyspace slot), at the allocator's size classes.
    pub fn heap_size(&self) -> usize {
        match self {
            Set::Ints(s) => s.heap_size(),
            Set::Table(t) => {
                crate::alloc::usable_size(std::mem::size_of::<Table<Whole>>()) + t.heap_size()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_24_bytes_and_a_set_16() {
        assert_eq!(std::mem::size_of::<Option<ShortBytes>>(), 24);
        assert_eq!(std::mem::size_of::<Set>(), 16);
    }

    #[test]
    fn intset_until_a_string_or_the_threshold() {
        let t = Thresholds {
            set_max_intset_entries: 4,
            ..Thresholds::default()
        };
        let mut s = Set::new();
        for m in ["3", "-1", "70000", "1"] {
            assert!(s.insert(m.as_bytes(), &t));
        }
        assert_eq!(s.encoding(), "intset");
        let v: Vec<_> = s.iter().collect();
        assert_eq!(v, [&b"-1"[..], b"1", b"3", b"70000"]);
        assert!(!s.insert(b"3", &t));
        assert!(s.insert(b"4", &t));
        assert_eq!(s.encoding(), "hashtable");
        let mut s = Set::new();
        s.insert(b"01", &t);
        assert_eq!(s.encoding(), "hashtable");
    }
}

#[cfg(test)]
mod prop {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    fn member() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            (-40i64..40).prop_map(|v| v.to_string().into_bytes()),
            any::<i64>().prop_map(|v| v.to_string().into_bytes()),
            proptest::collection::vec(b'a'..b'e', 0..4),
            proptest::collection::vec(any::<u8>(), 20..30),
        ]
    }

    #[derive(Debug, Clone)]
    enum Op {
        Add(Vec<u8>),
        Rem(Vec<u8>),
        Pop,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => member().prop_map(Op::Add),
            2 => member().prop_map(Op::Rem),
            1 => Just(Op::Pop),
        ]
    }

    proptest! {
        #[test]
        fn set_matches_hashset(ops in proptest::collection::vec(op(), 0..600), max in 1usize..40) {
            let t = Thresholds { set_max_intset_entries: max, ..Thresholds::default() };
            let mut set = Set::new();
            let mut model: HashSet<Vec<u8>> = HashSet::new();
            for op in ops {
                match op {
                    Op::Add(m) => prop_assert_eq!(set.insert(&m, &t), model.insert(m)),
                    Op::Rem(m) => prop_assert_eq!(set.remove(&m), model.remove(&m)),
                    Op::Pop => match set.pop_random() {
                        Some(m) => prop_assert!(model.remove(&m)),
                        None => prop_assert!(model.is_empty()),
                    },
                }
                prop_assert_eq!(set.len(), model.len());
            }
            let all: HashSet<Vec<u8>> = set.iter().map(|m| m.into_owned()).collect();
            prop_assert_eq!(&all, &model);
            for m in &model {
                prop_assert!(set.contains(m));
            }
            let mut scanned = HashSet::new();
            let mut cursor = 0;
            loop {
                cursor = set.scan(cursor, 3, |m| { scanned.insert(m.to_cow().into_owned()); });
                if cursor == 0 { break; }
            }
            prop_assert_eq!(scanned, model);
        }
    }
}
