//! Hash values.
//!
//! Two representations, switched exactly where Redis 7.0 switches its encodings, so
//! `OBJECT ENCODING` answers the same:
//!
//! * `listpack` ([`Packed`]) while the hash has at most `hash-max-listpack-entries`
//!   fields and no field or value longer than `hash-max-listpack-value` bytes: the pairs
//!   in insertion order in one byte array, searched linearly (at most 512 pairs).
//! * `hashtable` beyond that (never back, as in Redis): a [`Table`] whose elements hold
//!   field and value together.
//!
//! ```text
//! Packed: one exact-size Box<[u8]> (an empty hash allocates nothing)
//!   +-----------+-------+---------+-------+---------+-----+
//!   | count u16 | field | value   | field | value   | ... |   pairs in insertion order;
//!   +-----------+-------+---------+-------+---------+-----+   count saturates at 65535
//!   item = header | payload, see super::item
//!
//! Table element (one ShortBytes, inline in its slot up to 22 bytes):
//!   +----------------------+-------+-------+
//!   | field length (LEB128)| field | value |
//!   +----------------------+-------+-------+
//! ```
//!
//! Against Redis's listpack (a 6-byte header, an EOF byte, and a back-length byte after
//! every item) the packed form saves two bytes per pair plus five per hash; its integer
//! items are never longer than Redis's. A `Hash` is 16 bytes and lives unboxed in its
//! keyspace slot (`Value::Hash`), so a small hash is one allocation, as in Redis. The table saves the `dictEntry` and both sds
//! allocations of Redis's `hashtable` for short pairs (see `types/set.rs`).

use super::Thresholds;
pub use super::item::Item;
use super::item::{decode_item, encode_item, item_eq, item_size};
use super::set::edit_exact;
use super::table::{KeyOf, Table};
use crate::short_bytes::ShortBytes;
use crate::stream::id::string2ll;
use crate::util::rand_below;
use std::borrow::Cow;

// --- packed ------------------------------------------------------------------------------

/// The `listpack` form: pairs in one exact-size byte array (module doc).
#[derive(Debug, Clone, Default)]
pub struct Packed {
    /// `count (u16 LE, saturating) | field | value | ...`; empty: no pairs, no
    /// allocation.
    bytes: Box<[u8]>,
}

/// Bytes of the pair count in front of the items.
const COUNT: usize = 2;

impl Packed {
    /// Number of pairs (the header, or a walk once it saturated, as Redis's listpack
    /// header does at 65535).
    fn len(&self) -> usize {
        match self.bytes.get(..COUNT) {
            None => 0,
            Some(&[a, b]) if u16::from_le_bytes([a, b]) < u16::MAX => {
                usize::from(u16::from_le_bytes([a, b]))
            }
            Some(_) => self.pairs().count(),
        }
    }

    fn set_len(b: &mut [u8], n: usize) {
        let n = u16::try_from(n).unwrap_or(u16::MAX).to_le_bytes();
        b[..COUNT].copy_from_slice(&n);
    }

    /// Iterates `(field, value, start of the pair, start of the value, end)`.
    fn pairs(&self) -> impl Iterator<Item = (Item<'_>, Item<'_>, usize, usize, usize)> {
        let b = &self.bytes;
        let mut pos = COUNT;
        std::iter::from_fn(move || {
            if pos >= b.len() {
                return None;
            }
            let start = pos;
            let (f, vpos) = decode_item(b, pos);
            let (v, end) = decode_item(b, vpos);
            pos = end;
            Some((f, v, start, vpos, end))
        })
    }

    fn find(&self, field: &[u8]) -> Option<(Item<'_>, usize, usize, usize)> {
        let fi = if field.len() > 1 {
            string2ll(field)
        } else {
            None
        };
        self.pairs()
            .find(|(f, ..)| item_eq(*f, field, fi))
            .map(|(_, v, s, vp, e)| (v, s, vp, e))
    }

    fn push(&mut self, field: &[u8], value: &[u8]) {
        let n = self.len() + 1;
        edit_exact(&mut self.bytes, |b| {
            b.reserve_exact(COUNT.saturating_sub(b.len()) + item_size(field) + item_size(value));
            if b.is_empty() {
                b.extend_from_slice(&[0; COUNT]);
            }
            encode_item(field, b);
            encode_item(value, b);
            Packed::set_len(b, n);
        });
    }

    fn replace_value(&mut self, vpos: usize, end: usize, value: &[u8]) {
        let mut enc = Vec::with_capacity(item_size(value));
        encode_item(value, &mut enc);
        if enc.len() == end - vpos {
            self.bytes[vpos..end].copy_from_slice(&enc);
            return;
        }
        edit_exact(&mut self.bytes, |b| {
            b.reserve_exact(enc.len().saturating_sub(end - vpos));
            b.splice(vpos..end, enc);
        });
    }

    fn remove_pair(&mut self, start: usize, end: usize) {
        let n = self.len() - 1;
        if n == 0 {
            self.bytes = Box::new([]);
            return;
        }
        edit_exact(&mut self.bytes, |b| {
            b.drain(start..end);
            Packed::set_len(b, n);
        });
    }
}

/// A table element's key: the field after its LEB128 length.
#[derive(Debug, Clone, Copy, Default)]
pub struct FieldOf;

/// Splits a table element into (field, value).
fn split(e: &[u8]) -> (&[u8], &[u8]) {
    let mut len = 0usize;
    let mut shift = 0;
    let mut i = 0;
    while let Some(&b) = e.get(i) {
        len |= usize::from(b & 0x7F) << shift;
        i += 1;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    let end = (i + len).min(e.len());
    (&e[i..end], &e[end..])
}

impl KeyOf for FieldOf {
    #[inline]
    fn key(e: &[u8]) -> &[u8] {
        split(e).0
    }
}

/// A table element for `field` = `value`.
fn element(field: &[u8], value: &[u8]) -> ShortBytes {
    let mut head = [0u8; 10];
    let mut n = field.len();
    let mut i = 0;
    loop {
        let b = (n & 0x7F) as u8;
        n >>= 7;
        if n == 0 {
            head[i] = b;
            i += 1;
            break;
        }
        head[i] = b | 0x80;
        i += 1;
    }
    if i + field.len() + value.len() <= ShortBytes::INLINE {
        let mut buf = [0u8; ShortBytes::INLINE];
        buf[..i].copy_from_slice(&head[..i]);
        buf[i..i + field.len()].copy_from_slice(field);
        buf[i + field.len()..i + field.len() + value.len()].copy_from_slice(value);
        ShortBytes::new(&buf[..i + field.len() + value.len()])
    } else {
        ShortBytes::new(&[&head[..i], field, value].concat())
    }
}

// --- the hash ----------------------------------------------------------------------------

/// A map of fields to values (module doc).
#[derive(Debug, Clone)]
pub enum Hash {
    /// `listpack`.
    Packed(Packed),
    /// `hashtable`.
    Table(Box<Table<FieldOf>>),
}

impl Default for Hash {
    fn default() -> Self {
        Hash::Packed(Packed::default())
    }
}

impl Hash {
    /// An empty hash.
    pub fn new() -> Hash {
        Hash::default()
    }

    /// Number of fields (`HLEN`).
    pub fn len(&self) -> usize {
        match self {
            Hash::Packed(p) => p.len(),
            Hash::Table(t) => t.len(),
        }
    }

    /// True when empty (an empty hash is never stored in the keyspace).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Converts to the table form (Redis: `hashTypeConvert`).
    fn convert(&mut self) {
        if let Hash::Packed(p) = self {
            let mut t = Table::with_capacity(p.len());
            for (f, v, ..) in p.pairs() {
                f.with_bytes(|f| v.with_bytes(|v| t.insert_new(element(f, v))));
            }
            *self = Hash::Table(Box::new(t));
        }
    }

    /// Converts to the table form if any of `args` is longer than
    /// `hash-max-listpack-value` (Redis's `hashTypeTryConversion`, which HSET, HMSET
    /// and HSETNX run over all their fields and values before setting any).
    pub fn prepare<A: AsRef<[u8]>>(&mut self, args: &[A], t: &Thresholds) {
        if matches!(self, Hash::Packed(_))
            && args
                .iter()
                .any(|a| a.as_ref().len() > t.hash_max_listpack_value)
        {
            self.convert();
        }
    }

    /// Sets `field` to `value`; true if the field is new (Redis: `hashTypeSet`).
    pub fn insert(&mut self, field: &[u8], value: &[u8], t: &Thresholds) -> bool {
        if matches!(self, Hash::Packed(_))
            && (field.len() > t.hash_max_listpack_value || value.len() > t.hash_max_listpack_value)
        {
            self.convert();
        }
        match self {
            Hash::Packed(p) => {
                if let Some((_, _, vpos, end)) = p.find(field) {
                    p.replace_value(vpos, end, value);
                    return false;
                }
                p.push(field, value);
                if p.len() > t.hash_max_listpack_entries {
                    self.convert();
                }
                true
            }
            Hash::Table(tab) => match tab.find(field) {
                Some(i) => {
                    tab.replace_at(i, element(field, value));
                    false
                }
                None => {
                    tab.insert_new(element(field, value));
                    true
                }
            },
        }
    }

    /// Removes `field`; true if it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self {
            Hash::Packed(p) => match p.find(field) {
                Some((_, start, _, end)) => {
                    p.remove_pair(start, end);
                    true
                }
                None => false,
            },
            Hash::Table(t) => t.remove(field).is_some(),
        }
    }

    /// The value of `field`, as stored.
    pub fn get_item(&self, field: &[u8]) -> Option<Item<'_>> {
        match self {
            Hash::Packed(p) => p.find(field).map(|(v, ..)| v),
            Hash::Table(t) => t
                .find(field)
                .and_then(|i| t.at(i))
                .map(|e| Item::Str(split(e).1)),
        }
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<Cow<'_, [u8]>> {
        self.get_item(field).map(Item::to_cow)
    }

    /// True if `field` is set.
    pub fn contains(&self, field: &[u8]) -> bool {
        self.get_item(field).is_some()
    }

    /// The pairs as stored, in the hash's own order (insertion order while packed).
    pub fn items(&self) -> Box<dyn Iterator<Item = (Item<'_>, Item<'_>)> + '_> {
        match self {
            Hash::Packed(p) => Box::new(p.pairs().map(|(f, v, ..)| (f, v))),
            Hash::Table(t) => Box::new(t.iter().map(|e| {
                let (f, v) = split(e);
                (Item::Str(f), Item::Str(v))
            })),
        }
    }

    /// The (field, value) pairs, in the hash's own order.
    pub fn iter(&self) -> impl Iterator<Item = (Cow<'_, [u8]>, Cow<'_, [u8]>)> {
        self.items().map(|(f, v)| (f.to_cow(), v.to_cow()))
    }

    /// A pair chosen uniformly at random (`None` when empty).
    pub fn random(&self) -> Option<(Item<'_>, Item<'_>)> {
        match self {
            Hash::Packed(p) if p.len() == 0 => None,
            Hash::Packed(p) => p.pairs().nth(rand_below(p.len())).map(|(f, v, ..)| (f, v)),
            Hash::Table(t) => t.random_slot().and_then(|i| t.at(i)).map(|e| {
                let (f, v) = split(e);
                (Item::Str(f), Item::Str(v))
            }),
        }
    }

    /// One `HSCAN` step from `cursor`: calls `f` with the pairs visited and returns the
    /// next cursor. A packed hash is returned whole with cursor 0, as Redis does.
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(Item<'_>, Item<'_>)) -> u64 {
        match self {
            Hash::Packed(p) => {
                p.pairs().for_each(|(k, v, ..)| f(k, v));
                0
            }
            Hash::Table(t) => {
                let mut cursor = cursor;
                let mut seen = 0usize;
                let mut iterations = count.saturating_mul(10);
                loop {
                    cursor = t.scan_step(cursor, |e| {
                        seen += 1;
                        let (k, v) = split(e);
                        f(Item::Str(k), Item::Str(v))
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
            Hash::Packed(_) => "listpack",
            Hash::Table(_) => "hashtable",
        }
    }

    /// Bytes allocated for everything the hash owns (not the hash itself, which lives
    /// in its keyspace slot), at the allocator's size classes.
    pub fn heap_size(&self) -> usize {
        match self {
            Hash::Packed(p) => crate::alloc::usable_size(p.bytes.len()),
            Hash::Table(t) => {
                crate::alloc::usable_size(std::mem::size_of::<Table<FieldOf>>()) + t.heap_size()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_round_trip() {
        for s in [
            &b""[..],
            b"0",
            b"5",
            b"12",
            b"-1",
            b"127",
            b"-128",
            b"1000",
            b"9223372036854775807",
            b"-9223372036854775808",
            b"01",
            b"-0",
            b"+1",
            b"abc",
        ] {
            let mut out = Vec::new();
            encode_item(s, &mut out);
            assert_eq!(out.len(), item_size(s));
            let (item, end) = decode_item(&out, 0);
            assert_eq!(end, out.len());
            assert_eq!(&*item.to_cow(), s);
        }
        for len in [127, 128, 16383, 16384, 70000] {
            let s = vec![b'x'; len];
            let mut out = Vec::new();
            encode_item(&s, &mut out);
            assert_eq!(out.len(), item_size(&s));
            assert_eq!(&*decode_item(&out, 0).0.to_cow(), &s[..]);
        }
    }

    #[test]
    fn a_hash_is_16_bytes() {
        assert_eq!(std::mem::size_of::<Hash>(), 16);
    }

    #[test]
    fn encodings_switch_where_redis_switches() {
        let t = Thresholds {
            hash_max_listpack_entries: 3,
            hash_max_listpack_value: 8,
            ..Thresholds::default()
        };
        let mut h = Hash::new();
        for f in ["a", "b", "c"] {
            h.insert(f.as_bytes(), b"v", &t);
        }
        assert_eq!(h.encoding(), "listpack");
        h.insert(b"d", b"v", &t);
        assert_eq!(h.encoding(), "hashtable");
        let mut h = Hash::new();
        h.insert(b"a", b"123456789", &t);
        assert_eq!(h.encoding(), "hashtable");
        let mut h = Hash::new();
        h.insert(b"a", b"1", &t);
        h.prepare(&[&b"a"[..], b"123456789"], &t);
        assert_eq!(h.encoding(), "hashtable");
    }
}

#[cfg(test)]
mod prop {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn bytes() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            (-300i64..300).prop_map(|v| v.to_string().into_bytes()),
            any::<i64>().prop_map(|v| v.to_string().into_bytes()),
            proptest::collection::vec(b'a'..b'd', 0..3),
            proptest::collection::vec(any::<u8>(), 0..40),
        ]
    }

    #[derive(Debug, Clone)]
    enum Op {
        Set(Vec<u8>, Vec<u8>),
        Del(Vec<u8>),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (bytes(), bytes()).prop_map(|(f, v)| Op::Set(f, v)),
            1 => bytes().prop_map(Op::Del),
        ]
    }

    proptest! {
        #[test]
        fn hash_matches_btreemap(ops in proptest::collection::vec(op(), 0..500),
                                 entries in 1usize..30, value in 1usize..40) {
            let t = Thresholds {
                hash_max_listpack_entries: entries,
                hash_max_listpack_value: value,
                ..Thresholds::default()
            };
            let mut h = Hash::new();
            let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
            let mut order: Vec<Vec<u8>> = Vec::new();
            for op in ops {
                match op {
                    Op::Set(f, v) => {
                        let new = model.insert(f.clone(), v.clone()).is_none();
                        if new { order.push(f.clone()); }
                        prop_assert_eq!(h.insert(&f, &v, &t), new);
                    }
                    Op::Del(f) => {
                        let had = model.remove(&f).is_some();
                        order.retain(|o| o != &f);
                        prop_assert_eq!(h.remove(&f), had);
                    }
                }
                prop_assert_eq!(h.len(), model.len());
            }
            let got: BTreeMap<Vec<u8>, Vec<u8>> =
                h.iter().map(|(f, v)| (f.into_owned(), v.into_owned())).collect();
            prop_assert_eq!(&got, &model);
            if h.encoding() == "listpack" {
                let fields: Vec<Vec<u8>> = h.iter().map(|(f, _)| f.into_owned()).collect();
                prop_assert_eq!(fields, order);
            }
            for (f, v) in &model {
                prop_assert_eq!(h.get(f).map(|c| c.into_owned()), Some(v.clone()));
            }
            let mut scanned = BTreeMap::new();
            let mut cursor = 0;
            loop {
                cursor = h.scan(cursor, 2, |f, v| {
                    scanned.insert(f.to_cow().into_owned(), v.to_cow().into_owned());
                });
                if cursor == 0 { break; }
            }
            prop_assert_eq!(scanned, model);
        }
    }
}
