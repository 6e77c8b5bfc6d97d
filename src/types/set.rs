//! Set values: a small set packed in one allocation ([`Small`]: `intset` or `listpack`),
//! or a [`Table`] of members (`super::table`).
//!
//! A set is kept as Redis 7.2+ keeps it, so `OBJECT ENCODING` answers the same and
//! converts where Redis's converts (`t_set.c`, `setTypeAddAux`):
//!
//! * `intset` while every member is a canonical integer (`string2ll` reads it back to the
//!   same bytes) and there are at most `set-max-intset-entries` of them: a sorted array
//!   of fixed-width little-endian integers, the width the widest member needs. Past
//!   that count it becomes a `hashtable`.
//! * `listpack` when a non-integer joins an intset of fewer than
//!   `set-max-listpack-entries` (128) members and neither it nor the intset's longest
//!   member is longer than `set-max-listpack-value` (64) bytes: the members in insertion
//!   order, searched linearly. A listpack set never goes back to an intset (except a
//!   SINTERSTORE result of integers, as in Redis).
//! * `hashtable` otherwise: a [`Table`] of [`ShortBytes`] members. Never back.
//!
//! ```text
//! Small    one exact-size Box<[u8]>; its first byte says which form (empty: no
//!          allocation, an intset of width 2)
//!   intset    +-------+--------+--------+-----+--------+
//!             | width | m0 LE  | m1 LE  | ... | mn LE  |  width = 2 | 4 | 8 (grows, never
//!             +-------+--------+--------+-----+--------+  shrinks); m0 < m1 < ... < mn
//!   listpack  +------+-----------+--------+--------+-----+
//!             | 0x00 | count u16 | item 0 | item 1 | ... |  insertion order; count
//!             +------+-----------+--------+--------+-----+  saturates at 65535;
//!                                                           item: see super::item
//!
//! Table    see super::table: 2^k slots of 24 bytes, linear probing, no tombstones
//! ```
//!
//! The tag byte instead of a third enum variant keeps a `Set` at 16 bytes, unboxed in its
//! keyspace slot (`Value::Set`), so a small set is one allocation, as in Redis (robj +
//! intset or listpack). Per large-set member the table costs 24 bytes over the load
//! factor (kept between 1/8, where it shrinks, and 4/5: at 4/5 a linear probe still
//! finds a member in about 3 slots, 13 for a miss), against Redis's 8-byte bucket +
//! 24-byte `dictEntry` + an sds allocation per member.

use super::Thresholds;
use super::item::{Item, decode_item, encode_item, item_eq, item_size};
use super::table::{Table, Whole};
use crate::short_bytes::ShortBytes;
use crate::stream::id::string2ll;
use crate::util::rand_below;
use std::borrow::Cow;

/// `bytes` with `edit` applied to it as a vector: one reallocation to the exact size
/// (as Redis reallocates its intsets and listpacks on every change).
pub(crate) fn edit_exact(bytes: &mut Box<[u8]>, edit: impl FnOnce(&mut Vec<u8>)) {
    let mut v = std::mem::take(bytes).into_vec();
    edit(&mut v);
    *bytes = v.into_boxed_slice();
}

/// The width an integer needs in an intset.
fn width_of(v: i64) -> u8 {
    if i16::try_from(v).is_ok() {
        2
    } else if i32::try_from(v).is_ok() {
        4
    } else {
        8
    }
}

/// The tag byte of a listpack-form [`Small`].
const LISTPACK: u8 = 0;
/// Bytes in front of a listpack-form [`Small`]'s items: the tag and the count.
const LP_HEAD: usize = 3;

/// Redis's `intset` or `listpack` set in one exact-size allocation (module doc).
#[derive(Debug, Clone, Default)]
pub struct Small {
    /// `width | m0 | m1 | ...` or `0 | count | item | item | ...` (empty: an empty
    /// intset).
    bytes: Box<[u8]>,
}

impl Small {
    /// True in the listpack form.
    pub fn is_listpack(&self) -> bool {
        self.bytes.first() == Some(&LISTPACK)
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        if self.is_listpack() {
            match u16::from_le_bytes([self.bytes[1], self.bytes[2]]) {
                u16::MAX => self.items().count(),
                n => usize::from(n),
            }
        } else {
            self.bytes.len().saturating_sub(1) / self.width()
        }
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes allocated.
    pub fn heap_size(&self) -> usize {
        crate::alloc::usable_size(self.bytes.len())
    }

    // --- intset form ---------------------------------------------------------------------

    /// Bytes per intset member.
    fn width(&self) -> usize {
        usize::from(self.bytes.first().copied().unwrap_or(2))
    }

    /// Intset member `i` (ascending order).
    pub fn int_at(&self, i: usize) -> i64 {
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

    /// `Ok(i)` if `v` is intset member `i`, else `Err(position it would take)`.
    fn int_search(&self, v: i64) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.int_at(mid).cmp(&v) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// Adds `v` to the intset; true if it was not there.
    fn int_insert(&mut self, v: i64) -> bool {
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
                put(self.int_at(i), &mut wide);
            }
            if v >= 0 || usize::from(need) <= w {
                put(v, &mut wide);
            }
            self.bytes = wide.into_boxed_slice();
            return true;
        }
        match self.int_search(v) {
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

    /// Removes intset member `i`.
    fn int_remove_at(&mut self, i: usize) {
        let w = self.width();
        let at = 1 + i * w;
        edit_exact(&mut self.bytes, |b| {
            b.drain(at..at + w);
        });
    }

    /// Intset members ascending.
    fn ints(&self) -> impl Iterator<Item = i64> + '_ {
        (0..self.len()).map(|i| self.int_at(i))
    }

    /// Decimal digits of the intset's longest member, with its sign (Redis's
    /// `sdigits10` of the smallest and largest).
    fn widest_int_text(&self) -> usize {
        match self.len() {
            0 => 0,
            n => {
                let digits = |v: i64| itoa::Buffer::new().format(v).len();
                digits(self.int_at(0)).max(digits(self.int_at(n - 1)))
            }
        }
    }

    /// The intset rewritten as a listpack with its members ascending.
    fn to_listpack(&self) -> Small {
        let mut b = vec![LISTPACK, 0, 0];
        for v in self.ints() {
            encode_item(itoa::Buffer::new().format(v).as_bytes(), &mut b);
        }
        let mut s = Small {
            bytes: b.into_boxed_slice(),
        };
        s.set_count(self.len());
        s
    }

    // --- listpack form -------------------------------------------------------------------

    /// An empty set in the listpack form.
    fn empty_listpack() -> Small {
        Small {
            bytes: Box::new([LISTPACK, 0, 0]),
        }
    }

    fn set_count(&mut self, n: usize) {
        let n = u16::try_from(n).unwrap_or(u16::MAX).to_le_bytes();
        self.bytes[1..LP_HEAD].copy_from_slice(&n);
    }

    /// Listpack items with their byte ranges.
    fn items(&self) -> impl Iterator<Item = (Item<'_>, usize, usize)> {
        let b = &self.bytes;
        let mut pos = LP_HEAD;
        std::iter::from_fn(move || {
            if pos >= b.len() {
                return None;
            }
            let start = pos;
            let (item, end) = decode_item(b, pos);
            pos = end;
            Some((item, start, end))
        })
    }

    /// The byte range of listpack member `m`.
    fn lp_find(&self, m: &[u8]) -> Option<(usize, usize)> {
        let mi = if m.len() > 1 { string2ll(m) } else { None };
        self.items()
            .find(|(item, ..)| item_eq(*item, m, mi))
            .map(|(_, s, e)| (s, e))
    }

    /// Appends `m` (not a member) to the listpack.
    fn lp_push(&mut self, m: &[u8]) {
        let n = self.len() + 1;
        edit_exact(&mut self.bytes, |b| {
            b.reserve_exact(item_size(m));
            encode_item(m, b);
        });
        self.set_count(n);
    }

    /// Removes the listpack item at `start..end`.
    fn lp_remove(&mut self, start: usize, end: usize) {
        let n = self.len() - 1;
        edit_exact(&mut self.bytes, |b| {
            b.drain(start..end);
        });
        self.set_count(n);
    }

    // --- either form ---------------------------------------------------------------------

    /// Member `i` (intset: ascending; listpack: insertion order) and, in the listpack
    /// form, its byte range.
    fn nth(&self, i: usize) -> (Member<'_>, usize, usize) {
        if self.is_listpack() {
            match self.items().nth(i) {
                Some((item, s, e)) => (Member::from_item(item), s, e),
                None => (Member::Bytes(b""), 0, 0),
            }
        } else {
            (Member::Int(self.int_at(i)), 0, 0)
        }
    }

    /// Removes member `i` (as [`Small::nth`] numbers them).
    fn remove_nth(&mut self, i: usize) {
        if self.is_listpack() {
            let (_, s, e) = self.nth(i);
            self.lp_remove(s, e);
        } else {
            self.int_remove_at(i);
        }
    }

    /// The members in order.
    fn members(&self) -> Box<dyn Iterator<Item = Member<'_>> + '_> {
        if self.is_listpack() {
            Box::new(self.items().map(|(item, ..)| Member::from_item(item)))
        } else {
            Box::new(self.ints().map(Member::Int))
        }
    }
}

// --- the set -----------------------------------------------------------------------------

/// One member as the set holds it: an integer, or bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Member<'a> {
    /// An integer (an intset member, or a listpack item stored as one).
    Int(i64),
    /// Bytes.
    Bytes(&'a [u8]),
}

impl<'a> Member<'a> {
    fn from_item(item: Item<'a>) -> Member<'a> {
        match item {
            Item::Int(v) => Member::Int(v),
            Item::Str(s) => Member::Bytes(s),
        }
    }

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

/// A set of byte strings (`intset`, `listpack` or `hashtable`, see the module doc).
#[derive(Debug, Clone)]
pub enum Set {
    /// `intset` or `listpack`.
    Small(Small),
    /// `hashtable`.
    Table(Box<Table<Whole>>),
}

impl Default for Set {
    fn default() -> Self {
        Set::Small(Small::default())
    }
}

impl Set {
    /// An empty set (an intset).
    pub fn new() -> Set {
        Set::default()
    }

    /// An empty set in the listpack form (Redis's `createSetListpackObject`).
    pub fn new_listpack() -> Set {
        Set::Small(Small::empty_listpack())
    }

    /// The empty set SADD creates for `first` when it means to add `hint` members
    /// (Redis's `setTypeCreate`): an intset for an integer, a listpack while `hint`
    /// fits one, else a table sized for `hint`.
    pub fn for_members(first: &[u8], hint: usize, t: &Thresholds) -> Set {
        if string2ll(first).is_some() && hint <= t.set_max_intset_entries {
            Set::new()
        } else if hint <= t.set_max_listpack_entries {
            Set::new_listpack()
        } else {
            Set::Table(Box::new(Table::with_capacity(hint)))
        }
    }

    /// Before adding about `hint` members: a small set that could not hold them becomes
    /// a table now (Redis's `setTypeMaybeConvert`).
    pub fn expect(&mut self, hint: usize, t: &Thresholds) {
        if let Set::Small(s) = self {
            let max = if s.is_listpack() {
                t.set_max_listpack_entries
            } else {
                t.set_max_intset_entries
            };
            if hint > max {
                self.convert_to_table(hint);
            }
        }
    }

    /// A set of integers only, as a table or listpack, becomes an intset when it has
    /// few enough members (Redis's `maybeConvertToIntset`, run on SINTERSTORE's result).
    pub fn settle_integers(&mut self, t: &Thresholds) {
        if matches!(self, Set::Small(s) if !s.is_listpack())
            || self.len() > t.set_max_intset_entries
        {
            return;
        }
        let mut ints = Small::default();
        for m in self.members() {
            match m {
                Member::Int(v) => ints.int_insert(v),
                Member::Bytes(b) => match string2ll(b) {
                    Some(v) => ints.int_insert(v),
                    None => return,
                },
            };
        }
        *self = Set::Small(ints);
    }

    /// Number of members (`SCARD`).
    pub fn len(&self) -> usize {
        match self {
            Set::Small(s) => s.len(),
            Set::Table(t) => t.len(),
        }
    }

    /// True when empty (an empty set is never stored in the keyspace).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Converts a small set to a table sized for `cap` members.
    fn convert_to_table(&mut self, cap: usize) {
        if let Set::Small(s) = self {
            let mut t = Table::with_capacity(cap.max(s.len()));
            for m in s.members() {
                m.with_bytes(|b| t.insert_new(ShortBytes::new(b)));
            }
            *self = Set::Table(Box::new(t));
        }
    }

    /// Adds `member`; true if it was not there.
    pub fn insert(&mut self, member: &[u8], t: &Thresholds) -> bool {
        let Set::Small(s) = self else {
            let Set::Table(tab) = self else {
                return false;
            };
            return tab.insert(ShortBytes::new(member));
        };
        if s.is_listpack() {
            if s.lp_find(member).is_some() {
                return false;
            }
            if s.len() < t.set_max_listpack_entries && member.len() <= t.set_max_listpack_value {
                s.lp_push(member);
                return true;
            }
        } else if let Some(v) = string2ll(member) {
            let added = s.int_insert(v);
            if s.len() > t.set_max_intset_entries {
                self.convert_to_table(0);
            }
            return added;
        } else if s.len() < t.set_max_listpack_entries
            && member.len() <= t.set_max_listpack_value
            && s.widest_int_text() <= t.set_max_listpack_value
        {
            let mut lp = s.to_listpack();
            lp.lp_push(member);
            *s = lp;
            return true;
        }
        let n = s.len();
        self.convert_to_table(n + 1);
        match self {
            Set::Table(tab) => tab.insert(ShortBytes::new(member)),
            Set::Small(_) => false,
        }
    }

    /// Removes `member`; true if it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match self {
            Set::Small(s) if s.is_listpack() => match s.lp_find(member) {
                Some((start, end)) => {
                    s.lp_remove(start, end);
                    true
                }
                None => false,
            },
            Set::Small(s) => match string2ll(member).map(|v| s.int_search(v)) {
                Some(Ok(i)) => {
                    s.int_remove_at(i);
                    true
                }
                _ => false,
            },
            Set::Table(t) => t.remove(member).is_some(),
        }
    }

    /// True if `member` is in the set.
    pub fn contains(&self, member: &[u8]) -> bool {
        match self {
            Set::Small(s) if s.is_listpack() => s.lp_find(member).is_some(),
            Set::Small(s) => string2ll(member).is_some_and(|v| s.int_search(v).is_ok()),
            Set::Table(t) => t.find(member).is_some(),
        }
    }

    /// True if `m` (a member of another set) is in this one.
    pub fn contains_member(&self, m: Member<'_>) -> bool {
        match (self, m) {
            (Set::Small(s), Member::Int(v)) if !s.is_listpack() => s.int_search(v).is_ok(),
            (_, m) => m.with_bytes(|b| self.contains(b)),
        }
    }

    /// The members, in the set's own order (ascending for an intset, insertion order
    /// for a listpack).
    pub fn members(&self) -> Box<dyn Iterator<Item = Member<'_>> + '_> {
        match self {
            Set::Small(s) => s.members(),
            Set::Table(t) => Box::new(t.iter().map(Member::Bytes)),
        }
    }

    /// The members' bytes, in the set's own order.
    pub fn iter(&self) -> impl Iterator<Item = Cow<'_, [u8]>> {
        self.members().map(Member::to_cow)
    }

    /// Member `i` of a small set, in its own order (`None` for a table or out of range).
    pub fn small_nth(&self, i: usize) -> Option<Member<'_>> {
        match self {
            Set::Small(s) if i < s.len() => Some(s.nth(i).0),
            _ => None,
        }
    }

    /// A member chosen uniformly at random (`None` when empty).
    pub fn random(&self) -> Option<Member<'_>> {
        match self {
            Set::Small(s) if s.is_empty() => None,
            Set::Small(s) => Some(s.nth(rand_below(s.len())).0),
            Set::Table(t) => t.random_slot().and_then(|i| t.at(i)).map(Member::Bytes),
        }
    }

    /// Removes and returns a random member, as bytes.
    pub fn pop_random(&mut self) -> Option<Vec<u8>> {
        match self {
            Set::Small(s) if s.is_empty() => None,
            Set::Small(s) => {
                let i = rand_below(s.len());
                let m = s.nth(i).0.to_cow().into_owned();
                s.remove_nth(i);
                Some(m)
            }
            Set::Table(t) => {
                let i = t.random_slot()?;
                Some(t.remove_at(i).to_vec())
            }
        }
    }

    /// One `SSCAN` step from `cursor`: the members visited, and the next cursor. A
    /// small set is returned whole with cursor 0, as Redis does.
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(Member<'_>)) -> u64 {
        match self {
            Set::Small(s) => {
                s.members().for_each(f);
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
            Set::Small(s) if s.is_listpack() => "listpack",
            Set::Small(_) => "intset",
            Set::Table(_) => "hashtable",
        }
    }

    /// Bytes allocated for everything the set owns (not the set itself, which lives in
    /// its keyspace slot), at the allocator's size classes.
    pub fn heap_size(&self) -> usize {
        match self {
            Set::Small(s) => s.heap_size(),
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
        assert_eq!(s.encoding(), "listpack");
    }

    #[test]
    fn listpack_in_insertion_order_until_a_threshold() {
        let t = Thresholds {
            set_max_listpack_entries: 4,
            set_max_listpack_value: 8,
            ..Thresholds::default()
        };
        // A string joining an intset: the integers ascending, then the newcomers.
        let mut s = Set::new();
        for m in ["5", "-2"] {
            s.insert(m.as_bytes(), &t);
        }
        assert!(s.insert(b"b", &t));
        assert!(s.insert(b"12345", &t));
        assert!(!s.insert(b"b", &t));
        assert!(!s.insert(b"5", &t));
        assert_eq!(s.encoding(), "listpack");
        let v: Vec<_> = s.iter().collect();
        assert_eq!(v, [&b"-2"[..], b"5", b"b", b"12345"]);
        assert!(s.contains(b"12345") && s.contains(b"-2") && !s.contains(b"05"));
        assert!(s.remove(b"5") && !s.remove(b"5"));
        assert_eq!(
            (s.len(), s.encoding()),
            (3, "listpack"),
            "never back to intset"
        );
        // Past the count, or a member past the length: a table.
        assert!(s.insert(b"c", &t));
        assert!(s.insert(b"d", &t));
        assert_eq!((s.len(), s.encoding()), (5, "hashtable"));
        let mut s = Set::new_listpack();
        s.insert(b"123456789", &t);
        assert_eq!(s.encoding(), "hashtable");
        // An intset whose widest member is longer than the value limit goes to a table.
        let mut s = Set::new();
        s.insert(b"-1234567890", &t);
        s.insert(b"x", &t);
        assert_eq!(s.encoding(), "hashtable");
        // SADD's choice up front, and SINTERSTORE's integers back to an intset.
        assert_eq!(Set::for_members(b"7", 3, &t).encoding(), "intset");
        assert_eq!(Set::for_members(b"x", 3, &t).encoding(), "listpack");
        assert_eq!(Set::for_members(b"x", 5, &t).encoding(), "hashtable");
        let mut s = Set::new_listpack();
        s.insert(b"9", &t);
        s.insert(b"3", &t);
        s.settle_integers(&t);
        assert_eq!(s.encoding(), "intset");
        assert_eq!(s.iter().collect::<Vec<_>>(), [&b"3"[..], b"9"]);
    }

    #[test]
    fn a_set_stays_sixteen_bytes_and_a_small_one_is_one_allocation() {
        let t = Thresholds::default();
        let mut s = Set::new();
        for m in ["alpha", "beta", "gamma"] {
            s.insert(m.as_bytes(), &t);
        }
        assert_eq!(std::mem::size_of::<Set>(), 16);
        // tag + count + 3 × (header + bytes)
        assert_eq!(s.heap_size(), crate::alloc::usable_size(3 + 6 + 5 + 6));
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
        fn set_matches_hashset(ops in proptest::collection::vec(op(), 0..600), max in 1usize..40,
                               lp_max in 0usize..40, lp_value in prop_oneof![Just(3usize), Just(64)]) {
            let t = Thresholds {
                set_max_intset_entries: max,
                set_max_listpack_entries: lp_max,
                set_max_listpack_value: lp_value,
                ..Thresholds::default()
            };
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
