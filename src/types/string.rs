//! String values, in Redis's three encodings (`OBJECT ENCODING`: `int`, `embstr`, `raw`),
//! kept in the 24 bytes the keyspace's dict slot has for them.
//!
//! ```text
//!  byte   0     1     2 ........................................ 23
//!       +-----+-----+-----------------------------------------------+
//!  Int  | tag | pad |            i64 (bytes 8..16), rest unused     |  `int`: no allocation
//!       +-----+-----+-----------------------------------------------+
//!  Short| tag | len |  data[22]: the bytes, zero-padded             |  `embstr` <= 22 bytes
//!       +-----+-----+-----------------------------------------------+
//!  Emb  | tag |  pad  | Box<[u8]>: ptr (8..16), len (16..24)        |  `embstr` 23..=44 bytes
//!       +-----+-----+------+----------------------------------------+
//!  Raw  | tag | pad | spare: u32 (4..8) | Box<[u8]>: ptr, capacity  |  `raw`: len = capacity - spare
//!       +-----+-----+-------------------+---------------------------+
//! ```
//!
//! The encodings follow Redis 7.0's rules, so that `OBJECT ENCODING` answers what a Redis
//! would for the same history of commands:
//!
//! * A value written by SET, SETNX, SETEX, PSETEX, GETSET, MSET, MSETNX, APPEND to a
//!   missing key or RESTORE goes through [`StringValue::new`] (Redis's `tryObjectEncoding`):
//!   a canonical decimal integer of at most 20 bytes (`string2l`: no sign `+`, no leading
//!   zero, no `-0`, within i64) is stored as the `i64` itself (`int`); otherwise up to 44
//!   bytes it is `embstr`, beyond that `raw`.
//! * INCR and friends store their result as `int` ([`StringValue::from_int`]); INCRBYFLOAT
//!   stores its text as `embstr`/`raw` by length, never `int` ([`StringValue::from_text`]).
//! * APPEND to an existing string and SETRANGE always leave `raw`, whatever the length
//!   (Redis unshares the value into a growable sds). A raw value grows like an sds
//!   (`sdsMakeRoomFor`, greedy): to twice the new length below 1 MiB, by 1 MiB beyond, so
//!   a run of appends costs amortised O(1) per byte. `spare` counts the unused tail bytes
//!   (the new length is `capacity - spare`), which always fits a u32 because the spare is
//!   at most the larger of the length and 1 MiB, and a length is at most
//!   `proto-max-bulk-len` (512 MiB by default; at most 4 GiB of spare in any case, see
//!   [`grow_capacity`]).
//!
//! Invariants: `Short.len <= 22`; an `Emb` box holds 23..=44 bytes; `Raw.spare <=
//! buf.len()`, and the bytes past the length are zero (SETRANGE relies on it when it
//! extends into them).

pub mod bits;
mod cpu;
pub mod ld;

pub use ld::LongDouble;
use std::borrow::Cow;

/// Most bytes an `embstr` holds (Redis's `OBJ_ENCODING_EMBSTR_SIZE_LIMIT`).
pub const OBJ_ENCODING_EMBSTR_SIZE_LIMIT: usize = 44;

/// Longest text Redis tries to read as an integer encoding (`tryObjectEncoding`: 20).
const MAX_INT_TEXT: usize = 20;

/// Longest text `getLongDoubleFromObject` accepts (Redis's `MAX_LONG_DOUBLE_CHARS`).
pub const MAX_LONG_DOUBLE_CHARS: usize = 5 * 1024;

/// Growth step beyond which sds stops doubling (Redis's `SDS_MAX_PREALLOC`, 1 MiB).
const SDS_MAX_PREALLOC: usize = 1024 * 1024;

/// Bytes stored in the value itself.
const SHORT: usize = 22;

/// A string value (see the module doc for the layout and the encoding rules).
#[derive(Debug, Clone)]
pub struct StringValue(Repr);

#[derive(Debug, Clone)]
enum Repr {
    /// `int`: a canonical decimal i64.
    Int(i64),
    /// `embstr` of at most [`SHORT`] bytes: `data[..len]`, the rest zero.
    Short { len: u8, data: [u8; SHORT] },
    /// `embstr` of 23..=44 bytes.
    Emb(Box<[u8]>),
    /// `raw`: `buf[..buf.len() - spare]` are the bytes; the tail is zero.
    Raw { spare: u32, buf: Box<[u8]> },
}

/// The capacity a raw string of `needed` bytes grows to (Redis's greedy
/// `sdsMakeRoomFor`): twice `needed` below 1 MiB, `needed` + 1 MiB beyond.
fn grow_capacity(needed: usize) -> usize {
    if needed < SDS_MAX_PREALLOC {
        needed.saturating_mul(2)
    } else {
        needed.saturating_add(SDS_MAX_PREALLOC)
    }
}

/// Strict integer parse as Redis's `string2ll` (no `+`, no leading zeros, no `-0`, no
/// spaces, within i64).
pub fn string2ll(bytes: &[u8]) -> Option<i64> {
    crate::stream::id::string2ll(bytes)
}

impl StringValue {
    /// The value SET stores for `bytes` (Redis's `tryObjectEncoding`): `int` for a
    /// canonical integer of at most 20 bytes, else `embstr` up to 44 bytes, else `raw`.
    pub fn new(bytes: &[u8]) -> StringValue {
        if bytes.len() <= MAX_INT_TEXT
            && let Some(n) = string2ll(bytes)
        {
            return StringValue(Repr::Int(n));
        }
        StringValue::from_text(bytes)
    }

    /// `embstr` up to 44 bytes, else `raw`, without trying the integer encoding (Redis's
    /// `createStringObject`: INCRBYFLOAT's result).
    pub fn from_text(bytes: &[u8]) -> StringValue {
        if bytes.len() <= SHORT {
            let mut data = [0; SHORT];
            data[..bytes.len()].copy_from_slice(bytes);
            StringValue(Repr::Short {
                len: bytes.len() as u8,
                data,
            })
        } else if bytes.len() <= OBJ_ENCODING_EMBSTR_SIZE_LIMIT {
            StringValue(Repr::Emb(bytes.into()))
        } else {
            StringValue::raw(bytes)
        }
    }

    /// A `raw` string holding exactly `bytes` (no spare room).
    pub fn raw(bytes: &[u8]) -> StringValue {
        StringValue(Repr::Raw {
            spare: 0,
            buf: bytes.into(),
        })
    }

    /// A `raw` string owning `bytes` (BITOP's result: Redis's `createObject` of a new
    /// sds, `raw` whatever its length).
    pub fn raw_from_vec(bytes: Vec<u8>) -> StringValue {
        StringValue(Repr::Raw {
            spare: 0,
            buf: bytes.into_boxed_slice(),
        })
    }

    /// The `int`-encoded value `n` (INCR's result).
    pub fn from_int(n: i64) -> StringValue {
        StringValue(Repr::Int(n))
    }

    /// The string's bytes (the decimal text of an `int`).
    pub fn to_bytes(&self) -> Cow<'_, [u8]> {
        match &self.0 {
            Repr::Int(n) => Cow::Owned(itoa::Buffer::new().format(*n).as_bytes().to_vec()),
            _ => Cow::Borrowed(self.as_slice().unwrap_or_default()),
        }
    }

    /// The bytes, unless the value is an `int` (which has no bytes to borrow).
    pub fn as_slice(&self) -> Option<&[u8]> {
        match &self.0 {
            Repr::Int(_) => None,
            Repr::Short { len, data } => Some(&data[..usize::from(*len)]),
            Repr::Emb(b) => Some(b),
            Repr::Raw { spare, buf } => Some(&buf[..buf.len() - *spare as usize]),
        }
    }

    /// Calls `f` with the string's bytes, formatting an `int` on the stack (no
    /// allocation on the GET path).
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        match &self.0 {
            Repr::Int(n) => f(itoa::Buffer::new().format(*n).as_bytes()),
            _ => f(self.as_slice().unwrap_or_default()),
        }
    }

    /// The value as an integer, if its text is one (`getLongLongFromObject`: an `int`,
    /// or text that `string2ll` reads).
    pub fn as_int(&self) -> Option<i64> {
        match &self.0 {
            Repr::Int(n) => Some(*n),
            _ => self.as_slice().and_then(string2ll),
        }
    }

    /// The value as Redis's `getLongDoubleFromObject` reads it (INCRBYFLOAT): an `int`
    /// exactly, text as `strtold` reads it, `None` if it is not a valid float.
    pub fn as_long_double(&self) -> Option<LongDouble> {
        match &self.0 {
            Repr::Int(n) => Some(LongDouble::from_i64(*n)),
            _ => self.as_slice().and_then(LongDouble::parse),
        }
    }

    /// Replaces an `int` value in place (INCR on an `int`); any other encoding becomes
    /// `int`.
    pub fn set_int(&mut self, n: i64) {
        self.0 = Repr::Int(n);
    }

    /// Where the bytes of an `embstr` over [`SHORT`] bytes or a `raw` string live (their
    /// own allocation); `None` for `int` and short strings, held in the value itself. A
    /// prefetch hint (`core/prefetch.rs`).
    pub fn heap_start(&self) -> Option<*const u8> {
        match &self.0 {
            Repr::Int(_) | Repr::Short { .. } => None,
            Repr::Emb(buf) | Repr::Raw { buf, .. } => Some(buf.as_ptr()),
        }
    }

    /// Length in bytes (`STRLEN`).
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Int(n) => itoa::Buffer::new().format(*n).len(),
            _ => self.as_slice().map_or(0, <[u8]>::len),
        }
    }

    /// True for the empty string.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `OBJECT ENCODING`'s name for it.
    pub fn encoding(&self) -> &'static str {
        match &self.0 {
            Repr::Int(_) => "int",
            Repr::Short { .. } | Repr::Emb(_) => "embstr",
            Repr::Raw { .. } => "raw",
        }
    }

    /// Turns the value into `raw` with room for at least `needed` bytes in all, growing
    /// greedily when it must (Redis: `dbUnshareStringValue` + `sdsMakeRoomFor`), and
    /// returns its buffer, its current length and its spare count.
    fn make_room(&mut self, needed: usize) -> Option<(&mut [u8], usize, &mut u32)> {
        let len = self.len();
        let fits = matches!(&self.0, Repr::Raw { buf, .. } if buf.len() >= needed);
        if !fits {
            // A raw value grows greedily; unsharing an embstr or int copies it to an
            // sds of its exact length, which a write past the end then grows greedily.
            let cap = if needed > len || matches!(self.0, Repr::Raw { .. }) {
                grow_capacity(needed)
            } else {
                len
            };
            // The allocator's size class holds a few more bytes for free (Redis's sds
            // uses its allocation's usable size the same way).
            let cap = crate::alloc::usable_size(cap.max(needed));
            let mut buf = vec![0u8; cap].into_boxed_slice();
            self.with_bytes(|b| buf[..b.len()].copy_from_slice(b));
            self.0 = Repr::Raw { spare: 0, buf };
        }
        match &mut self.0 {
            Repr::Raw { spare, buf } => Some((&mut buf[..], len, spare)),
            // Not reached: the value was made raw just above.
            _ => None,
        }
    }

    /// Appends `bytes` (APPEND to an existing string): the value becomes `raw`. Returns
    /// the new length.
    pub fn append(&mut self, bytes: &[u8]) -> usize {
        let new_len = self.len() + bytes.len();
        if let Some((buf, len, spare)) = self.make_room(new_len)
            && let Some(dst) = buf.get_mut(len..new_len)
        {
            dst.copy_from_slice(bytes);
            *spare = u32::try_from(buf.len() - new_len).unwrap_or(u32::MAX);
        }
        new_len
    }

    /// Writes `bytes` at `offset`, zero-filling any gap past the end (SETRANGE): the
    /// value becomes `raw`. Returns the new length.
    pub fn set_range(&mut self, offset: usize, bytes: &[u8]) -> usize {
        let end = offset + bytes.len();
        let new_len = self.len().max(end);
        if let Some((buf, _, spare)) = self.make_room(new_len)
            && let Some(dst) = buf.get_mut(offset..end)
        {
            dst.copy_from_slice(bytes);
            *spare = u32::try_from(buf.len() - new_len).unwrap_or(u32::MAX);
        }
        new_len
    }

    /// The bytes for a bit write (SETBIT, BITFIELD's SET/INCRBY; Redis's
    /// `lookupStringForBitCommand` on an existing key): the value becomes `raw` whatever
    /// its encoding, zero-extended (growing greedily, as `sdsgrowzero`) to at least
    /// `min_len` bytes. Returns the bytes and whether the length changed.
    pub fn bits_mut(&mut self, min_len: usize) -> (&mut [u8], bool) {
        let old = self.len();
        let new_len = old.max(min_len);
        match self.make_room(new_len) {
            Some((buf, _, spare)) => {
                *spare = u32::try_from(buf.len() - new_len).unwrap_or(u32::MAX);
                (&mut buf[..new_len], new_len != old)
            }
            // Not reached: `make_room` always leaves a raw value.
            None => (&mut [], false),
        }
    }

    /// A zero-filled `raw` string of `len` bytes with `bytes` at `offset` (SETRANGE on a
    /// missing key: `sdsnewlen(NULL, offset + len)`, exact size).
    pub fn zeroed_with(offset: usize, bytes: &[u8]) -> StringValue {
        let mut buf = vec![0u8; offset + bytes.len()].into_boxed_slice();
        buf[offset..].copy_from_slice(bytes);
        StringValue(Repr::Raw { spare: 0, buf })
    }

    /// Runs `f` on the string's bytes as a growable buffer, the value becoming `raw`
    /// (Redis's `dbUnshareStringValue`, then edits of the sds in place: the HyperLogLog
    /// commands). The buffer keeps its spare room between calls; whatever `f` leaves
    /// past the new length is zeroed, as the invariant wants.
    pub fn with_raw_vec<R>(&mut self, f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
        let mut v = match std::mem::replace(&mut self.0, Repr::Int(0)) {
            Repr::Raw { spare, buf } => {
                let len = buf.len() - spare as usize;
                let mut v = buf.into_vec();
                v.truncate(len);
                v
            }
            other => StringValue(other).to_bytes().into_owned(),
        };
        let r = f(&mut v);
        let len = v.len();
        let spare = match u32::try_from(v.capacity() - len) {
            Ok(spare) => spare,
            Err(_) => {
                v.shrink_to_fit();
                u32::try_from(v.capacity() - len).unwrap_or(0)
            }
        };
        // Filling up to the capacity keeps the allocation (no copy on the way back).
        v.resize(len + spare as usize, 0);
        self.0 = Repr::Raw {
            spare,
            buf: v.into_boxed_slice(),
        };
        r
    }

    /// Bytes allocated outside the value itself, at the allocator's size-class
    /// granularity (what `used_memory` is charged): `int` and short `embstr` values
    /// allocate nothing; a raw value's spare room counts, as Redis counts an sds's.
    pub fn heap_size(&self) -> usize {
        match &self.0 {
            Repr::Int(_) | Repr::Short { .. } => 0,
            Repr::Emb(b) => crate::alloc::usable_size(b.len()),
            Repr::Raw { buf, .. } => crate::alloc::usable_size(buf.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_value_is_24_bytes() {
        assert_eq!(std::mem::size_of::<StringValue>(), 24);
    }

    #[test]
    fn encodings_follow_redis_rules() {
        let cases: &[(&[u8], &str)] = &[
            (b"0", "int"),
            (b"12345", "int"),
            (b"-9223372036854775808", "int"),
            (b"9223372036854775808", "embstr"),
            (b"01", "embstr"),
            (b"+1", "embstr"),
            (b"-0", "embstr"),
            (b" 1", "embstr"),
            (b"", "embstr"),
            (&[b'a'; 44], "embstr"),
            (&[b'a'; 45], "raw"),
        ];
        for (bytes, enc) in cases {
            let v = StringValue::new(bytes);
            assert_eq!(v.encoding(), *enc, "{bytes:?}");
            assert_eq!(&*v.to_bytes(), *bytes);
            assert_eq!(v.len(), bytes.len());
        }
        assert_eq!(StringValue::from_text(b"2").encoding(), "embstr");
    }

    #[test]
    fn append_and_setrange_give_raw() {
        let mut v = StringValue::new(b"12");
        assert_eq!(v.append(b"3"), 3);
        assert_eq!(v.encoding(), "raw");
        assert_eq!(&*v.to_bytes(), b"123");
        assert_eq!(v.as_int(), Some(123));
        let mut w = StringValue::new(b"ab");
        assert_eq!(w.set_range(4, b"xy"), 6);
        assert_eq!(&*w.to_bytes(), b"ab\0\0xy");
        assert_eq!(w.set_range(1, b"Z"), 6);
        assert_eq!(&*w.to_bytes(), b"aZ\0\0xy");
        let mut b = StringValue::new(b"7");
        let (bytes, grew) = b.bits_mut(1);
        assert_eq!((&*bytes, grew), (&b"7"[..], false));
        assert_eq!(b.encoding(), "raw");
        let (bytes, grew) = b.bits_mut(3);
        bytes[2] = 1;
        assert!(grew);
        assert_eq!(&*b.to_bytes(), b"7\0\x01");
        let z = StringValue::zeroed_with(2, b"q");
        assert_eq!(&*z.to_bytes(), b"\0\0q");
        assert_eq!(z.encoding(), "raw");
    }

    mod prop {
        use super::super::*;
        use proptest::prelude::*;

        #[derive(Debug, Clone)]
        enum Op {
            Append(Vec<u8>),
            SetRange(usize, Vec<u8>),
            Set(Vec<u8>),
            Int(i64),
        }

        fn op() -> impl Strategy<Value = Op> {
            let bytes = proptest::collection::vec(any::<u8>(), 0..60);
            prop_oneof![
                bytes.clone().prop_map(Op::Append),
                (0usize..80, bytes.clone()).prop_map(|(o, b)| Op::SetRange(o, b)),
                bytes.prop_map(Op::Set),
                any::<i64>().prop_map(Op::Int),
            ]
        }

        proptest! {
            #[test]
            fn string_value_matches_a_vec(ops in proptest::collection::vec(op(), 0..40)) {
                let mut v = StringValue::new(b"");
                let mut model: Vec<u8> = Vec::new();
                for op in ops {
                    match op {
                        Op::Append(b) => {
                            model.extend_from_slice(&b);
                            prop_assert_eq!(v.append(&b), model.len());
                        }
                        Op::SetRange(o, b) => {
                            if model.len() < o + b.len() {
                                model.resize(o + b.len(), 0);
                            }
                            model[o..o + b.len()].copy_from_slice(&b);
                            prop_assert_eq!(v.set_range(o, &b), model.len());
                        }
                        Op::Set(b) => {
                            v = StringValue::new(&b);
                            model = b;
                        }
                        Op::Int(n) => {
                            v = StringValue::from_int(n);
                            model = n.to_string().into_bytes();
                        }
                    }
                    prop_assert_eq!(&*v.to_bytes(), &model[..]);
                    prop_assert_eq!(v.len(), model.len());
                    prop_assert_eq!(v.as_int(), string2ll(&model));
                    prop_assert!(v.heap_size() == 0 || v.heap_size() >= model.len());
                }
            }
        }
    }
}
