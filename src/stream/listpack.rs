//! One stream node: a single contiguous byte buffer holding a *master entry* and up to
//! `stream-node-max-entries` stream entries (Redis: a listpack inside a rax leaf).
//!
//! The node does not know its own ID: the stream's radix tree stores it under the 16-byte
//! key of its *master ID*, the ID of the first entry ever appended to it, and every entry
//! ID inside is a delta against that master ID. All entries of a node are `>=` the master
//! ID, and entries are kept in ID order, so the node holding an ID is the one with the
//! greatest key `<=` that ID.
//!
//! # Byte layout
//!
//! ```text
//! +-------+---------+-------------+--------+---------+-----+---------+---------+-----+
//! | live  | deleted | redis-bytes | [gone] | nfields | fld1| ... fldN| entry 0 | ... |
//! | u32LE | u32 LE  | u32 LE      | u32 LE | varint  |elem |    elem |         |     |
//! +-------+---------+-------------+--------+---------+-----+---------+---------+-----+
//!  0       4         8             12       12 or 16 - master entry -  entries, oldest first
//!                    bit 31 of `deleted` set: RECLAIMED, and `gone` is present
//! ```
//!
//! * `live`, `deleted`: entries not flagged / flagged deleted (bits 0..=30 of the second
//!   word). `live + deleted` is the number of entries physically present.
//! * RECLAIMED (bit 31 of the `deleted` word) and `gone`: the node was rewritten without
//!   some of its tombstones ([`Listpack::reclaim`]); `gone` (>= 1) counts the tombstones
//!   no longer present. Redis never drops a tombstone, so its node still holds them: the
//!   entries Redis counts are `live + deleted + gone` ([`Listpack::total_entries`]),
//!   which is what `stream-node-max-entries` limits, so node boundaries stay Redis's.
//!   A node that was never reclaimed has no `gone` word and its master entry at 12.
//! * `redis-bytes`: the size this node *would* have in Redis's own listpack encoding
//!   (tombstones, reclaimed ones too, included), minus the two elements holding the live
//!   and deleted counters (their size depends on the counters, so
//!   [`Listpack::redis_bytes`] adds them when asked). The stream uses it to roll over to
//!   a new node exactly where Redis does (`stream-node-max-bytes`).
//! * master entry: the number of field names, then the field names of the node's first
//!   entry. Later entries whose field names are exactly these store only their values.
//!
//! Every entry:
//!
//! ```text
//! +---------------------+------------+--------------------------+--------+----------+
//! | head: ms-delta|flags | seq-delta  | [nfields, f1 .. fN]      | values | back-len |
//! | tagged varint       | zz varint  | only without SAMEFIELDS  | elems  | rev var  |
//! +---------------------+------------+--------------------------+--------+----------+
//! ```
//!
//! * head: a varint whose first byte is `c mmmmm ff`: `ff` are the flags (bit 0 DELETED,
//!   bit 1 SAMEFIELDS), `mmmmm` the low 5 bits of `ms - master.ms`, and `c` says that the
//!   rest of the ms delta follows as a LEB128 varint (7 bits a byte, low bits first, high
//!   bit = more). Keeping the flags in the first byte lets a delete flip one bit in place.
//! * seq-delta: `seq - master.seq` (wrapping), as a signed number, zig-zag encoded
//!   (0, -1, 1, -2 ... become 0, 1, 2, 3 ...) in a LEB128 varint. It is negative when the
//!   entry's ms is larger than the master's and its seq smaller.
//! * nfields: LEB128 count of field/value pairs, then `f1 v1 f2 v2 ...` interleaved.
//!   With SAMEFIELDS only `v1 v2 ...` are stored and the names come from the master.
//! * element (a field name or a value): a varint whose first byte is `c pppppp t`.
//!   `t = 0`: a byte string; the payload is its length, and that many raw bytes follow.
//!   `t = 1`: an integer; the payload is the zig-zag form of an `i64`, nothing follows.
//!   A string is stored as an integer exactly when it is the canonical decimal text of an
//!   `i64` (Redis `string2ll`: no `+`, no leading zeros, no `-0`), so the decimal text
//!   reproduces it byte for byte. `c` and the LEB128 continuation work as for the head.
//! * back-len: the entry's length in bytes from head to the end of its last value,
//!   written so that it can be read *right to left*: the last byte holds the low 7 bits,
//!   and a set high bit means "7 more bits in the byte before me". From the end of an
//!   entry, reverse iteration reads this number and jumps to the entry's head.
//!
//! There is no terminator: the entries end where the node's bytes end.
//!
//! Invariants: `live + deleted` equals the number of entries; entry IDs strictly increase
//! and are `>=` the master ID; every back-len equals its entry's head-to-last-value
//! length; `redis-bytes` equals what Redis's listpack would hold (see
//! [`Listpack::redis_bytes`], which must agree with `streamAppendItem`'s encoding): for
//! a node that was never reclaimed, exactly the size of its entries; for a reclaimed one,
//! at least that (the `gone` tombstones' share cannot be checked). A reclaimed node keeps
//! its master entry (its master ID stays the index key and the base of every delta) and
//! its last entry, deleted or not, so [`Listpack::last_id`] is what Redis's node says.
//!
//! # Memory
//!
//! A node is shared through an `Arc`: cloning a stream for a background save copies the
//! handles, not the bytes, and every change goes through `Arc::make_mut`, so a node is
//! copied only when it is written while a clone still holds it. The bytes take one of
//! two forms (the handle is 16 bytes either way):
//!
//! ```text
//!  inline: one allocation, an Arc<[u8]> whose slice holds the length, the node, room
//!  +--------+--------+---------+--------------------------------------+-------------+
//!  | strong | weak   | len     | node: header, master entry, entries  | spare room  |
//!  | usize  | usize  | u32 LE  | `len` bytes (Listpack::as_bytes)     | zeros       |
//!  +--------+--------+---------+--------------------------------------+-------------+
//!
//!  boxed: an Arc<Box<[u8]>>, two allocations, the node alone in the second
//!  +--------+--------+-----+-----+        +--------------------------------------+
//!  | strong | weak   | ptr | len | -----> | node: header, master entry, entries  |
//!  +--------+--------+-----+-----+        +--------------------------------------+
//!   32 bytes                                exactly `len` bytes
//! ```
//!
//! A node being appended to is inline: [`Listpack::new`] allocates it to fit (one
//! `bidder 1 amount 100` entry: 16 + 4 + 33 = 53 bytes, the 64-byte size class), and
//! appends grow it geometrically (to whole allocator size classes), capped at a hint (the
//! node byte limit). When the stream seals a node ([`Listpack::shrink_to_fit`]), and for
//! a node loaded whole, the node takes whichever form costs less at the allocator's size
//! classes: inline for small nodes, boxed when the 20 bytes of counters and length would
//! push the node's bytes over a class boundary (a node of 1,017 bytes costs 32 + 1,024
//! boxed, 1,280 inline).

use super::id::{StreamId, string2ll};
use super::memory::usable_size;
use super::redis_lp;
use std::sync::Arc;

/// Bytes of the allocation before a node's bytes: its length, u32 LE.
const PREFIX: usize = 4;

/// Bytes `Arc` keeps before the slice: the strong and weak counters.
const ARC_COUNTERS: usize = 2 * std::mem::size_of::<usize>();

/// One element read out of a node: a byte string, or an integer stored compactly
/// (Redis's listpack stores integer-looking strings as integers; on the wire both are
/// bulk strings, the integer printed in decimal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    /// A byte string.
    Str(&'a [u8]),
    /// An integer that was given as its canonical decimal text.
    Int(i64),
}

impl Value<'_> {
    /// The value as bytes (integers formatted in decimal).
    pub fn to_vec(&self) -> Vec<u8> {
        match self {
            Value::Str(s) => s.to_vec(),
            Value::Int(i) => itoa::Buffer::new().format(*i).as_bytes().to_vec(),
        }
    }

    /// How a given byte string is stored: as an integer when it is canonical `i64` text.
    pub fn classify(b: &[u8]) -> Value<'_> {
        match string2ll(b) {
            Some(i) => Value::Int(i),
            None => Value::Str(b),
        }
    }
}

/// Entry flag: the entry is deleted (a tombstone), skipped by readers.
const FLAG_DELETED: u8 = 1;
/// Entry flag: the entry's field names are the master entry's; only values are stored.
const FLAG_SAMEFIELDS: u8 = 2;

/// Offset of the live-entry counter (u32 LE).
const HDR_LIVE: usize = 0;
/// Offset of the deleted-entry counter (u32 LE; bit 31 is [`HDR_RECLAIMED`]).
const HDR_DELETED: usize = 4;
/// Offset of the Redis-encoding size without its two counters (u32 LE).
const HDR_REDIS: usize = 8;
/// Size of the fixed header; the master entry starts here, or after `gone`.
const HDR_SIZE: usize = 12;
/// Offset of the reclaimed-tombstone count (u32 LE), present only with [`HDR_RECLAIMED`].
const HDR_GONE: usize = 12;
/// Bit of the `deleted` word saying the node was reclaimed and `gone` follows the header.
const HDR_RECLAIMED: u32 = 1 << 31;
/// The tombstone count in the `deleted` word.
const DELETED_MASK: u32 = HDR_RECLAIMED - 1;

/// Bits of the first head byte that hold the flags.
const HEAD_TAG_BITS: u32 = 2;
/// Bits of the first element byte that hold the string/integer tag.
const ELEM_TAG_BITS: u32 = 1;
/// Element tag: byte string.
const ELEM_STR: u8 = 0;
/// Element tag: integer.
const ELEM_INT: u8 = 1;

// ---------------------------------------------------------------------------------------
// Variable-length integers.
// ---------------------------------------------------------------------------------------

/// Bytes a LEB128 varint of `v` takes (1..=10).
fn uvarint_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Where the encoders below write: a `Vec` that grows ([`Listpack::new`], tests), or
/// the spare room of a node ([`Room`], for appends, which reserve enough first).
trait Sink {
    /// Appends one byte.
    fn push(&mut self, b: u8);
    /// Appends bytes.
    fn extend_from_slice(&mut self, s: &[u8]);
    /// Bytes written so far.
    fn written(&self) -> usize;
}

impl Sink for Vec<u8> {
    fn push(&mut self, b: u8) {
        Vec::push(self, b);
    }
    fn extend_from_slice(&mut self, s: &[u8]) {
        Vec::extend_from_slice(self, s);
    }
    fn written(&self) -> usize {
        self.len()
    }
}

/// The spare room of a node's buffer, filled from the front. Writing past its end is a
/// bug (the room was reserved with [`entry_size_bound`]) and panics.
struct Room<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl Sink for Room<'_> {
    fn push(&mut self, b: u8) {
        self.buf[self.pos] = b;
        self.pos += 1;
    }
    fn extend_from_slice(&mut self, s: &[u8]) {
        self.buf[self.pos..self.pos + s.len()].copy_from_slice(s);
        self.pos += s.len();
    }
    fn written(&self) -> usize {
        self.pos
    }
}

/// Appends `v` as LEB128: 7 bits a byte, low bits first, high bit set on all but the last.
fn put_uvarint(out: &mut impl Sink, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a LEB128 varint at `*pos`, advancing it.
fn get_uvarint(buf: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0u32;
    loop {
        let b = buf[*pos];
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return v;
        }
        shift += 7;
        assert!(shift < 64, "corrupt node varint");
    }
}

/// Bytes [`put_tagged`] takes for `payload` with `tag_bits` tag bits.
#[cfg(test)]
fn tagged_len(payload: u64, tag_bits: u32) -> usize {
    let rest = payload >> (7 - tag_bits);
    if rest == 0 { 1 } else { 1 + uvarint_len(rest) }
}

/// Appends a varint whose first byte is `c | low payload bits | tag`; the payload bits
/// that do not fit follow as LEB128 when `c` (0x80) is set.
fn put_tagged(out: &mut impl Sink, payload: u64, tag: u8, tag_bits: u32) {
    let low_bits = 7 - tag_bits;
    let first = (((payload & ((1 << low_bits) - 1)) as u8) << tag_bits) | tag;
    let rest = payload >> low_bits;
    if rest == 0 {
        out.push(first);
    } else {
        out.push(first | 0x80);
        put_uvarint(out, rest);
    }
}

/// Reads a varint written by [`put_tagged`]: returns (payload, tag).
fn get_tagged(buf: &[u8], pos: &mut usize, tag_bits: u32) -> (u64, u8) {
    let b = buf[*pos];
    *pos += 1;
    let low_bits = 7 - tag_bits;
    let tag = b & ((1 << tag_bits) - 1);
    let mut payload = u64::from((b & 0x7f) >> tag_bits);
    if b & 0x80 != 0 {
        payload |= get_uvarint(buf, pos) << low_bits;
    }
    (payload, tag)
}

/// Appends `len` so that it can be read right to left (see the module docs).
fn put_backlen(out: &mut impl Sink, len: u64) {
    let n = uvarint_len(len);
    for i in (0..n).rev() {
        let group = ((len >> (7 * i)) & 0x7f) as u8;
        out.push(if i + 1 < n { group | 0x80 } else { group });
    }
}

/// Reads a back-len that ends just before `end`: returns (value, offset of its first byte).
fn get_backlen(buf: &[u8], end: usize) -> (u64, usize) {
    let mut pos = end;
    let mut v = 0u64;
    let mut shift = 0u32;
    loop {
        pos -= 1;
        let b = buf[pos];
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return (v, pos);
        }
        shift += 7;
        assert!(shift < 64, "corrupt node back-len");
    }
}

/// Zig-zag: small magnitudes of either sign become small unsigned numbers.
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Inverse of [`zigzag`].
fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// Appends one element (a field name or value), classified by [`Value::classify`].
fn put_elem(out: &mut impl Sink, v: Value<'_>) {
    match v {
        Value::Int(i) => put_tagged(out, zigzag(i), ELEM_INT, ELEM_TAG_BITS),
        Value::Str(s) => {
            put_tagged(out, s.len() as u64, ELEM_STR, ELEM_TAG_BITS);
            out.extend_from_slice(s);
        }
    }
}

/// Reads the element at `*pos`, advancing past it.
fn get_elem<'a>(buf: &'a [u8], pos: &mut usize) -> Value<'a> {
    let (payload, tag) = get_tagged(buf, pos, ELEM_TAG_BITS);
    if tag == ELEM_INT {
        Value::Int(unzigzag(payload))
    } else {
        let len = usize::try_from(payload).expect("element length fits in memory");
        let s = &buf[*pos..*pos + len];
        *pos += len;
        Value::Str(s)
    }
}

/// Skips the element at `*pos`.
fn skip_elem(buf: &[u8], pos: &mut usize) {
    let (payload, tag) = get_tagged(buf, pos, ELEM_TAG_BITS);
    if tag == ELEM_STR {
        *pos += usize::try_from(payload).expect("element length fits in memory");
    }
}

/// Bytes of a Redis listpack element holding `v` (`redis_lp.rs`), used only to decide
/// node rollover the way Redis does.
fn redis_value_size(v: Value<'_>) -> usize {
    match v {
        Value::Int(i) => redis_lp::int_size(i),
        Value::Str(s) => redis_lp::str_size(s.len()),
    }
}

/// Upper bound of the bytes one entry takes in our format (head, seq, count and back-len
/// at most 10 bytes each; each element at most 5 header bytes for lengths below 16 GiB).
fn entry_size_bound<E, C: Encode<E>>(elements: &[E]) -> usize {
    40 + elements.iter().map(C::bound).sum::<usize>()
}

/// Writes one entry (no counter updates) and returns the bytes the same entry takes in
/// Redis's listpack as `streamAppendItem` writes it: flags, ms-delta, seq-delta,
/// [num-fields, fields], values, lp-count.
fn write_entry<E, C: Encode<E>>(
    out: &mut impl Sink,
    ms_delta: u64,
    seq_delta: u64,
    flags: u8,
    elements: &[E],
) -> usize {
    let nfields = elements.len() / 2;
    let same = flags & FLAG_SAMEFIELDS != 0;
    // Redis passes the u64 differences to an int64 parameter: they wrap.
    let mut redis = redis_lp::int_size(i64::from(flags))
        + redis_lp::int_size(ms_delta as i64)
        + redis_lp::int_size(seq_delta as i64);
    let start = out.written();
    put_tagged(out, ms_delta, flags, HEAD_TAG_BITS);
    put_uvarint(out, zigzag(seq_delta as i64));
    if !same {
        put_uvarint(out, nfields as u64);
        redis += redis_lp::int_size(nfields as i64);
    }
    // With SAMEFIELDS only the values (odd positions) are stored.
    let stored = elements
        .iter()
        .skip(usize::from(same))
        .step_by(if same { 2 } else { 1 });
    for e in stored {
        let v = C::value(e);
        put_elem(out, v);
        redis += redis_value_size(v);
    }
    let len = (out.written() - start) as u64;
    put_backlen(out, len);
    let lp_count = if same { nfields + 3 } else { 2 * nfields + 4 };
    redis + redis_lp::int_size(lp_count as i64)
}

/// How a caller's elements become node elements.
trait Encode<E> {
    /// The node element `e` is stored as.
    fn value(e: &E) -> Value<'_>;
    /// An upper bound of `e`'s bytes in the node (at most 5 header bytes for lengths
    /// below 16 GiB, 10 for an integer), cheap to compute.
    fn bound(e: &E) -> usize;
}

/// Byte strings from a client: an integer's canonical text is stored as the integer.
struct Classified;

impl<T: AsRef<[u8]>> Encode<T> for Classified {
    fn value(e: &T) -> Value<'_> {
        Value::classify(e.as_ref())
    }

    fn bound(e: &T) -> usize {
        e.as_ref().len() + 10
    }
}

/// Elements already in node form (a node rebuilt from another encoding).
struct AsIs;

impl<'a> Encode<Value<'a>> for AsIs {
    fn value<'b>(e: &'b Value<'a>) -> Value<'b> {
        *e
    }

    fn bound(e: &Value<'a>) -> usize {
        match e {
            Value::Str(s) => s.len() + 10,
            Value::Int(_) => 10,
        }
    }
}

/// Reads the u32 LE at `off`.
fn get_u32(buf: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([buf[off], buf[off + 1], buf[off + 2], buf[off + 3]])
}

/// Writes `v` as u32 LE at `off`.
fn set_u32(buf: &mut [u8], off: usize, v: u32) {
    buf[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

/// A node length as stored in the allocation's prefix. Nodes stay far below 4 GiB: a
/// node rolls over at `stream-node-max-bytes` (at most 1 GiB) and XADD refuses entries
/// above 1 GiB; loaded nodes are checked ([`Listpack::from_bytes`]).
fn node_len(len: usize) -> u32 {
    u32::try_from(len).expect("a node is smaller than 4 GiB")
}

/// A node's allocation: the length prefix, `node`, then zeros up to `room` bytes.
fn alloc_node(node: &[u8], room: usize) -> Arc<[u8]> {
    debug_assert!(room >= node.len());
    let mut v = Vec::with_capacity(PREFIX + room);
    v.extend_from_slice(&node_len(node.len()).to_le_bytes());
    v.extend_from_slice(node);
    v.resize(PREFIX + room, 0);
    Arc::from(v)
}

/// A node's bytes, in one of the two forms drawn in the module docs.
#[derive(Clone)]
enum Buf {
    /// Length prefix, node, spare room: one allocation.
    Inline(Arc<[u8]>),
    /// Exactly the node, in its own allocation.
    Boxed(Arc<Box<[u8]>>),
}

impl Buf {
    /// A node that will not grow, in the form that costs less (inline on a tie).
    fn exact(node: &[u8]) -> Buf {
        if Self::boxed_is_cheaper(node.len()) {
            Buf::Boxed(Arc::new(node.into()))
        } else {
            Buf::Inline(alloc_node(node, node.len()))
        }
    }

    /// True when `len` bytes cost less boxed than inline.
    fn boxed_is_cheaper(len: usize) -> bool {
        let inline = usable_size(ARC_COUNTERS + PREFIX + len);
        let boxed = usable_size(ARC_COUNTERS + std::mem::size_of::<Box<[u8]>>()) + usable_size(len);
        boxed < inline
    }
}

// ---------------------------------------------------------------------------------------
// The node.
// ---------------------------------------------------------------------------------------

/// One stream node (see the module docs for the bytes and the allocation). Cloning it
/// shares the bytes; writing to a shared node copies them first.
#[derive(Clone)]
pub struct Listpack {
    /// The node's bytes (inline: after the length prefix, before the spare room).
    buf: Buf,
}

impl PartialEq for Listpack {
    /// Nodes are equal when their bytes are (spare room aside).
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Listpack {}

impl std::fmt::Debug for Listpack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listpack")
            .field("live", &self.live())
            .field("deleted", &self.deleted())
            .field("bytes", &self.len())
            .field("redis_bytes", &self.redis_bytes())
            .finish()
    }
}

/// Where an entry sits in a node and what its head says (offsets into the node buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryInfo {
    /// The entry's ID.
    pub id: StreamId,
    /// Offset of the entry's head byte (what [`Listpack::mark_deleted`] takes).
    pub start: usize,
    /// Offset just past the entry's back-len: the next entry's head, or the buffer end.
    pub end: usize,
    flags: u8,
    /// Number of field/value pairs.
    pairs: usize,
    /// Offset of the first stored element (a field name, or a value with SAMEFIELDS).
    body: usize,
}

impl EntryInfo {
    /// True if the entry is a tombstone.
    pub fn is_deleted(&self) -> bool {
        self.flags & FLAG_DELETED != 0
    }
    /// Number of field/value pairs.
    pub fn pairs(&self) -> usize {
        self.pairs
    }
    /// True if the entry's field names are the master entry's, in order (stored once,
    /// in the master entry: Redis's SAMEFIELDS flag, set under the same rule).
    pub fn same_fields(&self) -> bool {
        self.flags & FLAG_SAMEFIELDS != 0
    }
}

/// The master entry's shape: field count and where its names and the entries start.
#[derive(Debug, Clone, Copy)]
pub struct Master {
    /// Number of field names in the master entry.
    nfields: usize,
    /// Offset of the first master field name.
    fields: usize,
    /// Offset of the first entry.
    entries: usize,
}

impl Listpack {
    /// A node holding one entry, the first: its field names become the master entry.
    /// `elements` is `f1, v1, f2, v2, ...`. The node is allocated to fit exactly.
    pub fn new<T: AsRef<[u8]>>(elements: &[T]) -> Listpack {
        Listpack::new_with::<T, Classified>(elements)
    }

    /// [`Listpack::new`] from elements already in node form (integers as integers: a
    /// node rebuilt from Redis's listpack, where no decimal text exists to parse).
    pub fn from_values(elements: &[Value<'_>]) -> Listpack {
        Listpack::new_with::<Value<'_>, AsIs>(elements)
    }

    fn new_with<E, C: Encode<E>>(elements: &[E]) -> Listpack {
        assert!(
            elements.len().is_multiple_of(2),
            "elements come in field/value pairs"
        );
        let nfields = elements.len() / 2;
        // Built with its length prefix, then copied into the node's one allocation.
        let bound = entry_size_bound::<E, C>(elements);
        let mut buf = Vec::with_capacity(PREFIX + HDR_SIZE + 10 + bound);
        buf.extend_from_slice(&[0; PREFIX + HDR_SIZE]);
        put_uvarint(&mut buf, nfields as u64);
        // Redis: the master entry is count, deleted, num-fields, fields..., 0.
        let mut redis =
            redis_lp::EMPTY + redis_lp::int_size(nfields as i64) + redis_lp::int_size(0);
        for f in elements.iter().step_by(2) {
            let v = C::value(f);
            put_elem(&mut buf, v);
            redis += redis_value_size(v);
        }
        redis += write_entry::<E, C>(&mut buf, 0, 0, FLAG_SAMEFIELDS, elements);
        let len = node_len(buf.len() - PREFIX);
        let (prefix, data) = buf.split_at_mut(PREFIX);
        set_u32(prefix, 0, len);
        set_u32(data, HDR_LIVE, 1);
        set_u32(data, HDR_DELETED, 0);
        set_u32(data, HDR_REDIS, u32::try_from(redis).unwrap_or(u32::MAX));
        Listpack {
            buf: Buf::Inline(Arc::from(buf)),
        }
    }

    /// Appends an entry with ID `id` (greater than every ID in the node) to the node whose
    /// master ID is `master`. Grows the buffer geometrically, but not beyond `max_hint`
    /// bytes unless the entry itself needs more.
    pub fn append<T: AsRef<[u8]>>(
        &mut self,
        master: StreamId,
        id: StreamId,
        elements: &[T],
        max_hint: usize,
    ) {
        self.append_with::<T, Classified>(master, id, elements, max_hint, false);
    }

    /// [`Listpack::append`] of elements already in node form (see
    /// [`Listpack::from_values`]). `same_fields`: the caller knows the field names are
    /// the master entry's (the source encoding said so), which spares comparing them.
    pub fn append_values(
        &mut self,
        master: StreamId,
        id: StreamId,
        elements: &[Value<'_>],
        max_hint: usize,
        same_fields: bool,
    ) {
        self.append_with::<Value<'_>, AsIs>(master, id, elements, max_hint, same_fields);
    }

    fn append_with<E, C: Encode<E>>(
        &mut self,
        master: StreamId,
        id: StreamId,
        elements: &[E],
        max_hint: usize,
        known_same: bool,
    ) {
        assert!(
            elements.len().is_multiple_of(2),
            "elements come in field/value pairs"
        );
        debug_assert!(id >= master);
        // Only the master's field count and names: no need to skip past them first.
        let (nfields, fields) = self.master_head();
        let same_as_master = || {
            elements.len() / 2 == nfields && {
                let mut pos = fields;
                elements
                    .iter()
                    .step_by(2)
                    .all(|f| get_elem(self.data(), &mut pos) == C::value(f))
            }
        };
        debug_assert!(!known_same || same_as_master());
        let same = known_same || same_as_master();
        let ms_delta = id.ms - master.ms;
        let seq_delta = id.seq.wrapping_sub(master.seq);
        self.reserve(entry_size_bound::<E, C>(elements), max_hint);
        let flags = if same { FLAG_SAMEFIELDS } else { 0 };
        let len = self.len();
        let Buf::Inline(buf) = &mut self.buf else {
            unreachable!("reserve leaves the node inline");
        };
        let (prefix, data) = Arc::make_mut(buf).split_at_mut(PREFIX);
        let mut room = Room {
            buf: &mut data[len..],
            pos: 0,
        };
        let redis = write_entry::<E, C>(&mut room, ms_delta, seq_delta, flags, elements);
        let new_len = len + room.pos;
        set_u32(data, HDR_LIVE, get_u32(data, HDR_LIVE) + 1);
        let total = get_u32(data, HDR_REDIS) as usize + redis;
        set_u32(data, HDR_REDIS, u32::try_from(total).unwrap_or(u32::MAX));
        set_u32(prefix, 0, node_len(new_len));
    }

    /// Makes room for the node to reach `total` bytes without moving: a node rebuilt
    /// entry by entry from another encoding of known size is allocated once, not
    /// doubled six times on the way to 4 KB.
    pub fn reserve_total(&mut self, total: usize) {
        self.reserve(total.saturating_sub(self.len()), total);
    }

    /// Makes room for `additional` more bytes, leaving the node inline: double the
    /// allocation, but stop at `max_hint` bytes on the way (a node rarely outgrows its
    /// byte limit: by one entry at most); never less than needed. The allocation fills
    /// its whole size class.
    fn reserve(&mut self, additional: usize, max_hint: usize) {
        let need = self.len() + additional;
        let held = match &self.buf {
            Buf::Inline(a) if need <= a.len() - PREFIX => return,
            Buf::Inline(a) => ARC_COUNTERS + a.len(),
            // A sealed node appended to again (the node limits were raised).
            Buf::Boxed(b) => ARC_COUNTERS + PREFIX + b.len(),
        };
        let doubled = held.saturating_mul(2);
        let target = (ARC_COUNTERS + PREFIX + need).max(if held < max_hint {
            doubled.min(max_hint)
        } else {
            doubled
        });
        self.buf = Buf::Inline(alloc_node(
            self.as_bytes(),
            usable_size(target) - ARC_COUNTERS - PREFIX,
        ));
    }

    /// Seals the node (no more appends): releases the spare room and keeps the bytes in
    /// the form that costs less (see "Memory" in the module docs).
    pub fn shrink_to_fit(&mut self) {
        if let Buf::Inline(a) = &self.buf
            && (a.len() > PREFIX + self.len() || Buf::boxed_is_cheaper(self.len()))
        {
            self.buf = Buf::exact(self.as_bytes());
        }
    }

    /// The node's bytes followed by the spare room (readers index it with offsets that
    /// the layout keeps inside the node).
    fn data(&self) -> &[u8] {
        match &self.buf {
            Buf::Inline(a) => &a[PREFIX..],
            Buf::Boxed(b) => b,
        }
    }

    /// [`Listpack::data`], to change it (copied first if a clone shares it).
    fn data_mut(&mut self) -> &mut [u8] {
        match &mut self.buf {
            Buf::Inline(a) => &mut Arc::make_mut(a)[PREFIX..],
            Buf::Boxed(b) => &mut Arc::make_mut(b)[..],
        }
    }

    fn get_u32(&self, off: usize) -> u32 {
        get_u32(self.data(), off)
    }

    /// Number of live (not deleted) entries.
    pub fn live(&self) -> u64 {
        u64::from(self.get_u32(HDR_LIVE))
    }

    /// Number of entries flagged deleted that are still in the node.
    pub fn deleted(&self) -> u64 {
        u64::from(self.get_u32(HDR_DELETED) & DELETED_MASK)
    }

    /// Tombstones [`Listpack::reclaim`] took out of the node (0 for a node never
    /// reclaimed); Redis's node would still hold them.
    pub fn gone(&self) -> u64 {
        if self.get_u32(HDR_DELETED) & HDR_RECLAIMED == 0 {
            0
        } else {
            u64::from(self.get_u32(HDR_GONE))
        }
    }

    /// Live plus deleted: the entries physically in the node.
    pub fn physical_entries(&self) -> u64 {
        self.live() + self.deleted()
    }

    /// The entries Redis's node would hold: live, deleted and reclaimed tombstones (what
    /// `stream-node-max-entries` limits).
    pub fn total_entries(&self) -> u64 {
        self.physical_entries() + self.gone()
    }

    /// The size in bytes the node would have as a Redis listpack (`lpBytes`), reclaimed
    /// tombstones included. Must agree with the sizes [`Listpack::new`] and
    /// [`Listpack::append`] add up.
    pub fn redis_bytes(&self) -> usize {
        let tombstones = i64::try_from(self.deleted() + self.gone()).unwrap_or(i64::MAX);
        self.get_u32(HDR_REDIS) as usize
            + redis_lp::int_size(i64::from(self.get_u32(HDR_LIVE)))
            + redis_lp::int_size(tombstones)
    }

    /// Bytes used by header, master entry and entries.
    pub fn len(&self) -> usize {
        match &self.buf {
            Buf::Inline(a) => get_u32(a, 0) as usize,
            Buf::Boxed(b) => b.len(),
        }
    }

    /// A prefetch hint for an append (`core/prefetch.rs`): asks the caches for the start
    /// of the node's allocation (its length and header). Reads nothing.
    pub fn prefetch_start(&self) {
        match &self.buf {
            Buf::Inline(a) => crate::util::prefetch(Arc::as_ptr(a)),
            Buf::Boxed(b) => crate::util::prefetch(Arc::as_ptr(b)),
        }
    }

    /// The hint after [`Listpack::prefetch_start`]: reads the node's length (which that
    /// asked for) and asks for the bytes an append writes next, at the node's end.
    pub fn prefetch_end(&self) {
        if let Buf::Inline(a) = &self.buf {
            crate::util::prefetch(a[PREFIX..].as_ptr().wrapping_add(self.len()));
        }
    }

    /// Never true: a node always has its header and master entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the node can hold before it must grow.
    pub fn capacity(&self) -> usize {
        self.data().len()
    }

    /// What the node's allocations cost (counters, length, bytes and spare room, at the
    /// allocator's size classes).
    pub fn heap_size(&self) -> usize {
        match &self.buf {
            Buf::Inline(a) => usable_size(ARC_COUNTERS + a.len()),
            Buf::Boxed(b) => {
                usable_size(ARC_COUNTERS + std::mem::size_of::<Box<[u8]>>()) + usable_size(b.len())
            }
        }
    }

    /// True when `other` shares this node's allocation: it is this node, or a clone
    /// taken since the last write to either (a write copies shared bytes first). The
    /// tier mover uses it to see that a node did not change while its copy was written.
    pub fn same_bytes(&self, other: &Listpack) -> bool {
        match (&self.buf, &other.buf) {
            (Buf::Inline(a), Buf::Inline(b)) => Arc::ptr_eq(a, b),
            (Buf::Boxed(a), Buf::Boxed(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// True when the node's bytes are in their own allocation (see "Memory").
    #[cfg(test)]
    pub(crate) fn is_boxed(&self) -> bool {
        matches!(self.buf, Buf::Boxed(_))
    }

    /// True when both handles share one allocation (a clone not written to since).
    #[cfg(test)]
    pub(crate) fn shares_bytes_with(&self, other: &Listpack) -> bool {
        match (&self.buf, &other.buf) {
            (Buf::Inline(a), Buf::Inline(b)) => Arc::ptr_eq(a, b),
            (Buf::Boxed(a), Buf::Boxed(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// Where the master entry starts: after the header, and after `gone` in a reclaimed
    /// node.
    fn master_start(&self) -> usize {
        if self.get_u32(HDR_DELETED) & HDR_RECLAIMED == 0 {
            HDR_SIZE
        } else {
            HDR_GONE + 4
        }
    }

    /// The master entry's field count and the offset of its first field name.
    fn master_head(&self) -> (usize, usize) {
        let mut pos = self.master_start();
        let nfields = get_uvarint(self.data(), &mut pos);
        (usize::try_from(nfields).expect("field count fits"), pos)
    }

    /// The master entry's shape.
    pub fn master(&self) -> Master {
        let (nfields, fields) = self.master_head();
        let buf = self.data();
        let mut pos = fields;
        for _ in 0..nfields {
            skip_elem(buf, &mut pos);
        }
        Master {
            nfields,
            fields,
            entries: pos,
        }
    }

    /// Offset of the first entry (equal to [`Listpack::len`] never happens: a node that
    /// exists holds at least one entry).
    pub fn first_entry(&self, m: &Master) -> usize {
        m.entries
    }

    /// Decodes the entry whose head is at `start`, in a node with master ID `master`.
    pub fn entry_at(&self, master: StreamId, m: &Master, start: usize) -> EntryInfo {
        let buf = self.data();
        let mut pos = start;
        let (ms_delta, flags) = get_tagged(buf, &mut pos, HEAD_TAG_BITS);
        let seq_delta = unzigzag(get_uvarint(buf, &mut pos)) as u64;
        let id = StreamId::new(master.ms + ms_delta, master.seq.wrapping_add(seq_delta));
        let (pairs, stored) = if flags & FLAG_SAMEFIELDS != 0 {
            (m.nfields, m.nfields)
        } else {
            let n = usize::try_from(get_uvarint(buf, &mut pos)).expect("field count fits");
            (n, 2 * n)
        };
        let body = pos;
        for _ in 0..stored {
            skip_elem(buf, &mut pos);
        }
        let end = pos + uvarint_len((pos - start) as u64);
        EntryInfo {
            id,
            start,
            end,
            flags,
            pairs,
            body,
        }
    }

    /// The ID of the entry whose head is at `start` (reads the head and seq-delta only).
    fn id_at(&self, master: StreamId, start: usize) -> StreamId {
        let buf = self.data();
        let mut pos = start;
        let (ms_delta, _) = get_tagged(buf, &mut pos, HEAD_TAG_BITS);
        let seq_delta = unzigzag(get_uvarint(buf, &mut pos)) as u64;
        StreamId::new(master.ms + ms_delta, master.seq.wrapping_add(seq_delta))
    }

    /// Offset of the head of the first entry (deleted or not) whose ID is `>= id`, or
    /// [`Listpack::len`] when every entry is smaller: where a forward range starting at
    /// `id` begins in this node.
    ///
    /// Walks back from the end with the back-lens, reading only each entry's ID: a step
    /// costs two varints, where a forward step must also skip every field and value. So
    /// seeking a random ID reads on average half the entries, each cheaply. An `id` at
    /// or before the first entry answers at once.
    pub fn seek_ge(&self, master: StreamId, m: &Master, id: StreamId) -> usize {
        let first = m.entries;
        if self.id_at(master, first) >= id {
            return first;
        }
        let buf = self.data();
        let mut pos = self.len();
        // Invariant: every entry from `pos` on is >= id; the first entry is < id.
        loop {
            let (len, backlen_start) = get_backlen(buf, pos);
            let head = backlen_start - usize::try_from(len).expect("entry length fits");
            if head == first || self.id_at(master, head) < id {
                return pos;
            }
            pos = head;
        }
    }

    /// The live entry `id` of this node (master ID `master`): `None` when the node does
    /// not hold it or holds only its tombstone.
    pub fn live_entry(&self, master: StreamId, m: &Master, id: StreamId) -> Option<EntryInfo> {
        let pos = self.seek_ge(master, m, id);
        if pos >= self.len() {
            return None;
        }
        let e = self.entry_at(master, m, pos);
        (e.id == id && !e.is_deleted()).then_some(e)
    }

    /// Decodes the entry that ends (back-len included) just before `end`.
    pub fn entry_before(&self, master: StreamId, m: &Master, end: usize) -> EntryInfo {
        let (len, backlen_start) = get_backlen(self.data(), end);
        let len = usize::try_from(len).expect("entry length fits");
        let e = self.entry_at(master, m, backlen_start - len);
        debug_assert_eq!(e.end, end);
        e
    }

    /// The ID of the last entry, deleted or not.
    pub fn last_id(&self, master: StreamId) -> StreamId {
        let m = self.master();
        self.entry_before(master, &m, self.len()).id
    }

    /// Iterates over every entry of the node, tombstones included, oldest first.
    pub fn entries(&self, master: StreamId) -> impl Iterator<Item = EntryInfo> + '_ {
        let m = self.master();
        let mut pos = m.entries;
        let len = self.len();
        std::iter::from_fn(move || {
            if pos >= len {
                return None;
            }
            let e = self.entry_at(master, &m, pos);
            pos = e.end;
            Some(e)
        })
    }

    /// The master entry's field names (the field names of the node's first entry).
    pub fn master_fields(&self, m: &Master) -> Elements<'_> {
        Elements {
            buf: self.data(),
            master_pos: m.fields,
            pos: m.fields,
            remaining: m.nfields,
            same: false,
        }
    }

    /// The elements `f1, v1, f2, v2, ...` of an entry read from this node.
    pub fn elements(&self, m: &Master, e: &EntryInfo) -> Elements<'_> {
        Elements {
            buf: self.data(),
            master_pos: m.fields,
            pos: e.body,
            remaining: 2 * e.pairs,
            same: e.flags & FLAG_SAMEFIELDS != 0,
        }
    }

    /// The elements entry `e` itself stores, in order: with SAMEFIELDS only its values
    /// (the names are the master's), otherwise `f1, v1, f2, v2, ...`. Cheaper than
    /// skipping the names of [`Listpack::elements`] when they are not wanted (DUMP writes
    /// a SAMEFIELDS entry's values alone, as Redis's listpack holds them).
    pub fn stored(&self, e: &EntryInfo) -> impl Iterator<Item = Value<'_>> {
        let buf = self.data();
        let mut pos = e.body;
        let n = if e.same_fields() {
            e.pairs
        } else {
            2 * e.pairs
        };
        (0..n).map(move |_| get_elem(buf, &mut pos))
    }

    /// Flags the live entry whose head is at `start` as deleted and updates the counters.
    pub fn mark_deleted(&mut self, start: usize) {
        assert!(
            self.data()[start] & FLAG_DELETED == 0,
            "entry already deleted"
        );
        let data = self.data_mut();
        data[start] |= FLAG_DELETED;
        set_u32(data, HDR_LIVE, get_u32(data, HDR_LIVE) - 1);
        // The count is far below bit 31 (a node holds fewer than 2^31 entries): adding
        // one leaves the RECLAIMED bit alone.
        set_u32(data, HDR_DELETED, get_u32(data, HDR_DELETED) + 1);
    }

    /// The node rewritten without its tombstones, or `None` when there is none to drop.
    /// Kept: every live entry, the master entry, the last entry (deleted or not, so
    /// [`Listpack::last_id`] and with it `MINID ~` trimming see what Redis's node says),
    /// and every tombstone `keep` asks for (one a consumer group's PEL still holds, so
    /// that a later DELREF trim still finds it). Entries are copied byte for byte: their
    /// deltas are against the master ID, which does not change. `live`, `redis-bytes`
    /// and the Redis entry count ([`Listpack::total_entries`]) are unchanged; the
    /// dropped tombstones move from `deleted` to `gone`. One pass over the node and one
    /// allocation of the new size (in the cheaper of the two forms, see "Memory").
    pub fn reclaim(
        &self,
        master: StreamId,
        mut keep: impl FnMut(StreamId) -> bool,
    ) -> Option<Listpack> {
        if self.deleted() == 0 {
            return None;
        }
        let m = self.master();
        let len = self.len();
        let data = self.data();
        // First pass: which entries go (the last entry always stays).
        let mut spans: Vec<(usize, usize)> = Vec::new();
        let mut dropped = 0u64;
        let mut pos = m.entries;
        let mut run_start = pos;
        while pos < len {
            let e = self.entry_at(master, &m, pos);
            if e.is_deleted() && e.end < len && !keep(e.id) {
                if run_start < e.start {
                    spans.push((run_start, e.start));
                }
                run_start = e.end;
                dropped += 1;
            }
            pos = e.end;
        }
        if dropped == 0 {
            return None;
        }
        if run_start < len {
            spans.push((run_start, len));
        }
        let kept: usize = spans.iter().map(|(a, b)| b - a).sum();
        let mut out = Vec::with_capacity(HDR_GONE + 4 + (m.entries - m.fields) + 10 + kept);
        let deleted = u32::try_from(self.deleted() - dropped).expect("fewer than 2^31");
        let gone = u32::try_from(self.gone() + dropped).expect("fewer than 2^31 entries");
        out.extend_from_slice(&data[..HDR_SIZE]);
        set_u32(&mut out, HDR_DELETED, deleted | HDR_RECLAIMED);
        out.extend_from_slice(&gone.to_le_bytes());
        // The master entry: its field count and names, as they are.
        out.extend_from_slice(&data[self.master_start()..m.entries]);
        for (a, b) in spans {
            out.extend_from_slice(&data[a..b]);
        }
        Some(Listpack {
            buf: Buf::exact(&out),
        })
    }
}

// ---------------------------------------------------------------------------------------
// Untrusted bytes: a node read from a snapshot is checked completely before it is used,
// because the readers above trust the layout (they index and slice without checks).
// ---------------------------------------------------------------------------------------

/// [`get_uvarint`] that reports running off the buffer or past 64 bits instead of
/// panicking. Inlined for the common one-byte case (node checks are most of a snapshot
/// load).
#[inline(always)]
fn try_uvarint(buf: &[u8], pos: &mut usize) -> Result<u64, NodeError> {
    if let Some(&b) = buf.get(*pos)
        && b < 0x80
    {
        *pos += 1;
        return Ok(u64::from(b));
    }
    try_uvarint_long(buf, pos)
}

/// [`try_uvarint`] for two bytes or more.
#[inline(never)]
fn try_uvarint_long(buf: &[u8], pos: &mut usize) -> Result<u64, NodeError> {
    let mut v = 0u64;
    let mut shift = 0u32;
    loop {
        let b = *buf
            .get(*pos)
            .ok_or(NodeError("a varint runs past the node's end"))?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
        if shift >= 64 {
            return Err(NodeError("a varint is longer than 64 bits"));
        }
    }
}

/// [`get_tagged`], checked like [`try_uvarint`].
#[inline(always)]
fn try_tagged(buf: &[u8], pos: &mut usize, tag_bits: u32) -> Result<(u64, u8), NodeError> {
    let b = *buf
        .get(*pos)
        .ok_or(NodeError("a varint runs past the node's end"))?;
    *pos += 1;
    let low_bits = 7 - tag_bits;
    let tag = b & ((1 << tag_bits) - 1);
    let mut payload = u64::from((b & 0x7f) >> tag_bits);
    if b & 0x80 != 0 {
        payload |= try_uvarint(buf, pos)? << low_bits;
    }
    Ok((payload, tag))
}

/// Reads one element like [`get_elem`], checking that a string's bytes are inside `buf`.
#[inline(always)]
fn try_elem<'a>(buf: &'a [u8], pos: &mut usize) -> Result<Value<'a>, NodeError> {
    let (payload, tag) = try_tagged(buf, pos, ELEM_TAG_BITS)?;
    if tag == ELEM_INT {
        return Ok(Value::Int(unzigzag(payload)));
    }
    let end = usize::try_from(payload)
        .ok()
        .and_then(|len| pos.checked_add(len))
        .filter(|&end| end <= buf.len())
        .ok_or(NodeError("a string runs past the node's end"))?;
    let s = &buf[*pos..end];
    *pos = end;
    Ok(Value::Str(s))
}

/// Why bytes are not a valid node ([`Listpack::from_bytes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeError(pub &'static str);

impl std::fmt::Display for NodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for NodeError {}

/// What [`Listpack::from_bytes`] learnt about a node while checking it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeSummary {
    /// ID of the first live entry.
    pub first_live: StreamId,
    /// ID of the last entry, deleted or not.
    pub last: StreamId,
}

impl Listpack {
    /// The node's bytes (header, master entry, entries), as the module docs draw them.
    pub fn as_bytes(&self) -> &[u8] {
        &self.data()[..self.len()]
    }

    /// A node from bytes written by [`Listpack::as_bytes`] for master ID `master`, after
    /// checking every byte of it, so that a damaged node is refused here and never makes a
    /// reader panic or misbehave later: every varint and string stays inside the buffer,
    /// entry IDs are `>= master`, strictly increasing and do not overflow, every back-len
    /// is the exact encoding of its entry's length (reverse walks land on entry heads),
    /// the live and deleted counters match the flags, at least one entry is live, and
    /// `redis-bytes` is what appending the same entries would have added up (at least
    /// that, for a reclaimed node, whose `gone` must be at least 1). Costs one
    /// pass over the node, then a copy into the node's own allocation (see "Memory");
    /// nothing is allocated for a node that is refused.
    pub fn from_bytes(
        buf: Vec<u8>,
        master: StreamId,
    ) -> Result<(Listpack, NodeSummary), NodeError> {
        if buf.len() < HDR_SIZE {
            return Err(NodeError("shorter than a node header"));
        }
        if u32::try_from(buf.len()).is_err() {
            return Err(NodeError("longer than 4 GiB"));
        }
        let header =
            |off: usize| u32::from_le_bytes([buf[off], buf[off + 1], buf[off + 2], buf[off + 3]]);
        let (live_hdr, deleted_word, redis_hdr) =
            (header(HDR_LIVE), header(HDR_DELETED), header(HDR_REDIS));
        let reclaimed = deleted_word & HDR_RECLAIMED != 0;
        let deleted_hdr = deleted_word & DELETED_MASK;
        let mut pos = HDR_SIZE;
        if reclaimed {
            if buf.len() < HDR_GONE + 4 {
                return Err(NodeError("shorter than a reclaimed node's header"));
            }
            if header(HDR_GONE) == 0 {
                return Err(NodeError("a reclaimed node without reclaimed entries"));
            }
            pos = HDR_GONE + 4;
        }
        let nfields = try_uvarint(&buf, &mut pos)?;
        let mut redis = (redis_lp::EMPTY + redis_lp::int_size(0)) as u64
            + redis_lp::int_size(i64::try_from(nfields).unwrap_or(i64::MAX)) as u64;
        for _ in 0..nfields {
            redis += redis_value_size(try_elem(&buf, &mut pos)?) as u64;
        }
        let (mut live, mut deleted) = (0u64, 0u64);
        let mut prev: Option<StreamId> = None;
        let mut first_live = None;
        let mut backlen = [0u8; 10];
        while pos < buf.len() {
            let start = pos;
            let (ms_delta, flags) = try_tagged(&buf, &mut pos, HEAD_TAG_BITS)?;
            let seq_delta = unzigzag(try_uvarint(&buf, &mut pos)?) as u64;
            let ms = master
                .ms
                .checked_add(ms_delta)
                .ok_or(NodeError("an entry ID overflows"))?;
            let id = StreamId::new(ms, master.seq.wrapping_add(seq_delta));
            if id < master || prev.is_some_and(|p| id <= p) {
                return Err(NodeError("entry IDs are not increasing from the master ID"));
            }
            prev = Some(id);
            redis += (redis_lp::int_size(i64::from(flags & FLAG_SAMEFIELDS))
                + redis_lp::int_size(ms_delta as i64)
                + redis_lp::int_size(seq_delta as i64)) as u64;
            let (stored, lp_count) = if flags & FLAG_SAMEFIELDS != 0 {
                (nfields, nfields.saturating_add(3))
            } else {
                let n = try_uvarint(&buf, &mut pos)?;
                redis += redis_lp::int_size(i64::try_from(n).unwrap_or(i64::MAX)) as u64;
                (n.saturating_mul(2), n.saturating_mul(2).saturating_add(4))
            };
            redis += redis_lp::int_size(i64::try_from(lp_count).unwrap_or(i64::MAX)) as u64;
            // Each element takes at least one byte: a huge count runs out of bytes.
            for _ in 0..stored {
                redis += redis_value_size(try_elem(&buf, &mut pos)?) as u64;
            }
            let len = (pos - start) as u64;
            let n = uvarint_len(len);
            let matches = if n == 1 {
                buf.get(pos) == Some(&(len as u8))
            } else {
                for (i, slot) in backlen[..n].iter_mut().enumerate() {
                    let group = ((len >> (7 * (n - 1 - i))) & 0x7f) as u8;
                    *slot = if i > 0 { group | 0x80 } else { group };
                }
                buf.get(pos..pos + n) == Some(&backlen[..n])
            };
            if !matches {
                return Err(NodeError("an entry's back-len does not match its length"));
            }
            pos += n;
            if flags & FLAG_DELETED != 0 {
                deleted += 1;
            } else {
                live += 1;
                first_live.get_or_insert(id);
            }
        }
        if live != u64::from(live_hdr) || deleted != u64::from(deleted_hdr) {
            return Err(NodeError("the entry counters do not match the entries"));
        }
        let (Some(first_live), Some(last)) = (first_live, prev) else {
            return Err(NodeError("a node without live entries"));
        };
        // A reclaimed node's Redis size also covers the tombstones it no longer holds.
        let redis = redis.min(u64::from(u32::MAX));
        if (reclaimed && redis > u64::from(redis_hdr))
            || (!reclaimed && redis != u64::from(redis_hdr))
        {
            return Err(NodeError("the Redis-size field does not match the entries"));
        }
        let lp = Listpack {
            buf: Buf::exact(&buf),
        };
        Ok((lp, NodeSummary { first_live, last }))
    }
}

/// The elements of one entry, `f1, v1, f2, v2, ...`: names come from the master entry
/// when the entry has SAMEFIELDS.
#[derive(Clone)]
pub struct Elements<'a> {
    buf: &'a [u8],
    /// Next master field name (used with SAMEFIELDS).
    master_pos: usize,
    /// Next stored element of the entry.
    pos: usize,
    /// Elements left to return; even means a field name is next.
    remaining: usize,
    same: bool,
}

impl<'a> Elements<'a> {
    /// Number of field/value pairs (of the whole entry, not of what is left).
    pub fn pairs(&self) -> usize {
        self.remaining / 2
    }

    /// For an entry with the master entry's field names (SAMEFIELDS), none read yet:
    /// where those names live ([`NamesKey`]: equal for every such entry of one node while
    /// the node is borrowed), the names, and the entry's values alone. `None` for an entry
    /// that stores its own names, or once reading has begun.
    pub fn split_shared_names(&self) -> Option<(NamesKey, Elements<'a>, Elements<'a>)> {
        if !self.same || !self.remaining.is_multiple_of(2) {
            return None;
        }
        let pairs = self.remaining / 2;
        // Both halves read one run of stored elements: names from the master entry,
        // values from the entry itself.
        let run = |pos| Elements {
            buf: self.buf,
            master_pos: pos,
            pos,
            remaining: pairs,
            same: false,
        };
        let key = NamesKey {
            node: self.buf.as_ptr() as usize,
            names: self.master_pos,
        };
        Some((key, run(self.master_pos), run(self.pos)))
    }
}

/// Identifies a node's master field names while the node is borrowed: the address of
/// its bytes and the offset of the names ([`Elements::split_shared_names`]). Two nodes
/// borrowed at once never share an address, so an equal key means the same names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamesKey {
    node: usize,
    names: usize,
}

impl<'a> Iterator for Elements<'a> {
    type Item = Value<'a>;

    fn next(&mut self) -> Option<Value<'a>> {
        if self.remaining == 0 {
            return None;
        }
        let field_turn = self.remaining.is_multiple_of(2);
        self.remaining -= 1;
        if self.same && field_turn {
            Some(get_elem(self.buf, &mut self.master_pos))
        } else {
            Some(get_elem(self.buf, &mut self.pos))
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Elements<'_> {}

impl std::fmt::Debug for Elements<'_> {
    /// The elements not yet read (not the node's bytes).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.clone()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ms: u64, seq: u64) -> StreamId {
        StreamId::new(ms, seq)
    }

    fn collect(lp: &Listpack, master: StreamId) -> Vec<(StreamId, bool, Vec<Vec<u8>>)> {
        let m = lp.master();
        lp.entries(master)
            .map(|e| {
                (
                    e.id,
                    e.is_deleted(),
                    lp.elements(&m, &e).map(|v| v.to_vec()).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn varints_round_trip_at_every_width() {
        for &v in &[
            0u64,
            1,
            31,
            32,
            63,
            64,
            127,
            128,
            16383,
            16384,
            1 << 35,
            u64::MAX,
        ] {
            let mut b = Vec::new();
            put_uvarint(&mut b, v);
            assert_eq!(b.len(), uvarint_len(v));
            let mut p = 0;
            assert_eq!(get_uvarint(&b, &mut p), v);
            for bits in [1, 2] {
                for tag in 0..(1u8 << bits) {
                    let mut b = Vec::new();
                    put_tagged(&mut b, v, tag, bits);
                    assert_eq!(b.len(), tagged_len(v, bits));
                    let mut p = 0;
                    assert_eq!(get_tagged(&b, &mut p, bits), (v, tag));
                    assert_eq!(p, b.len());
                }
            }
            let mut b = vec![0xAA];
            put_backlen(&mut b, v);
            assert_eq!(get_backlen(&b, b.len()), (v, 1));
        }
        for &i in &[0i64, -1, 1, i64::MIN, i64::MAX, -4096, 4095] {
            assert_eq!(unzigzag(zigzag(i)), i);
        }
    }

    #[test]
    fn integer_looking_strings_are_stored_as_integers() {
        assert_eq!(Value::classify(b"123"), Value::Int(123));
        assert_eq!(
            Value::classify(b"-9223372036854775808"),
            Value::Int(i64::MIN)
        );
        for s in [
            &b"0123"[..],
            b"+1",
            b"-0",
            b" 1",
            b"1.0",
            b"9223372036854775808",
            b"",
        ] {
            assert_eq!(Value::classify(s), Value::Str(s), "{s:?}");
        }
    }

    #[test]
    fn seek_ge_finds_the_first_entry_at_or_after_an_id() {
        let master = id(1000, 3);
        let mut lp = Listpack::new(&[&b"bidder"[..], b"17", b"amount", b"-3"]);
        let long = vec![b'x'; 300];
        let mut ids = vec![master];
        for i in 1..90u64 {
            // Gaps in ms and seq (seq below the master's too), entries of other shapes
            // and long values (multi-byte back-lens).
            let e = id(1000 + i * i, (i * 7) % 5);
            let shape: Vec<&[u8]> = match i % 3 {
                0 => vec![b"bidder", b"9", b"amount", &long],
                1 => vec![b"other", b"v"],
                _ => vec![b"bidder", b"1", b"amount", b"2"],
            };
            lp.append(master, e, &shape, 1 << 20);
            ids.push(e);
        }
        let m = lp.master();
        let heads: Vec<(StreamId, usize)> = lp.entries(master).map(|e| (e.id, e.start)).collect();
        // Deleted entries are still found (the range skips them).
        lp.mark_deleted(heads[10].1);
        let m2 = lp.master();
        assert_eq!(m2.entries, m.entries);
        let mut probes = vec![StreamId::MIN, StreamId::MAX];
        for &e in &ids {
            probes.extend([
                e,
                StreamId::new(e.ms, e.seq + 1),
                StreamId::new(e.ms - 1, 9),
            ]);
        }
        for probe in probes {
            let want = heads
                .iter()
                .find(|(i, _)| *i >= probe)
                .map_or(lp.len(), |&(_, start)| start);
            assert_eq!(lp.seek_ge(master, &m, probe), want, "{probe:?}");
        }
    }

    #[test]
    fn live_entry_finds_live_ids_only() {
        let master = id(100, 0);
        let mut lp = Listpack::new(&[&b"f"[..], b"v"]);
        for seq in 1..4 {
            lp.append(master, id(100, seq), &[&b"f"[..], b"v"], 1 << 20);
        }
        let m = lp.master();
        let second = lp.live_entry(master, &m, id(100, 1)).expect("live");
        assert_eq!(second.id, id(100, 1));
        lp.mark_deleted(second.start);
        let m = lp.master();
        assert_eq!(lp.live_entry(master, &m, id(100, 1)), None, "a tombstone");
        assert_eq!(
            lp.live_entry(master, &m, id(100, 2)).map(|e| e.id),
            Some(id(100, 2))
        );
        assert_eq!(
            lp.live_entry(master, &m, StreamId::new(100, 9)),
            None,
            "past the end"
        );
        assert_eq!(
            lp.live_entry(master, &m, StreamId::new(99, 9)),
            None,
            "before the node"
        );
    }

    #[test]
    fn entries_round_trip_with_and_without_master_fields() {
        let master = id(100, 5);
        let mut lp = Listpack::new(&[&b"bidder"[..], b"17", b"amount", b"-3"]);
        lp.append(
            master,
            id(100, 6),
            &[&b"bidder"[..], b"x", b"amount", b"0042"],
            4096,
        );
        lp.append(master, id(101, 0), &[&b"other"[..], b"v"], 4096);
        lp.append(master, id(u64::MAX, u64::MAX), &[&b"17"[..], b"18"], 4096);
        let got = collect(&lp, master);
        let strs = |v: &[&str]| v.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        assert_eq!(
            got[0],
            (id(100, 5), false, strs(&["bidder", "17", "amount", "-3"]))
        );
        assert_eq!(
            got[1],
            (id(100, 6), false, strs(&["bidder", "x", "amount", "0042"]))
        );
        assert_eq!(got[2], (id(101, 0), false, strs(&["other", "v"])));
        assert_eq!(got[3], (id(u64::MAX, u64::MAX), false, strs(&["17", "18"])));
        assert_eq!(lp.live(), 4);
        assert_eq!(lp.last_id(master), id(u64::MAX, u64::MAX));
        // Reverse walk finds the same entries.
        let m = lp.master();
        let mut end = lp.len();
        let mut rev = Vec::new();
        while end > m.entries {
            let e = lp.entry_before(master, &m, end);
            rev.push(e.id);
            end = e.start;
        }
        rev.reverse();
        assert_eq!(rev, got.iter().map(|g| g.0).collect::<Vec<_>>());
        // What each entry stores: its values alone with SAMEFIELDS, names and values
        // without.
        let stored: Vec<(bool, Vec<Vec<u8>>)> = lp
            .entries(master)
            .map(|e| (e.same_fields(), lp.stored(&e).map(|v| v.to_vec()).collect()))
            .collect();
        assert_eq!(
            stored,
            [
                (true, strs(&["17", "-3"])),
                (true, strs(&["x", "0042"])),
                (false, strs(&["other", "v"])),
                (false, strs(&["17", "18"])),
            ]
        );
        // The integer value comes back as an integer.
        let e = lp.entries(master).next().expect("one entry");
        assert_eq!(lp.elements(&m, &e).nth(1), Some(Value::Int(17)));
    }

    #[test]
    fn delete_flags_in_place_and_moves_counters() {
        let master = id(1, 0);
        let mut lp = Listpack::new(&[b"f", b"v"]);
        lp.append(master, id(1, 1), &[b"f", b"w"], 4096);
        let before = lp.redis_bytes();
        let e = lp.entries(master).next().expect("entry");
        lp.mark_deleted(e.start);
        assert_eq!((lp.live(), lp.deleted()), (1, 1));
        assert_eq!(lp.redis_bytes(), before);
        let flags: Vec<bool> = lp.entries(master).map(|e| e.is_deleted()).collect();
        assert_eq!(flags, vec![true, false]);
    }

    #[test]
    fn redis_sizes_add_up_as_redis_counts_them() {
        // lpNew + count(1) + deleted(0) + num-fields(1) + "field" + 0 = 7+2+2+2+7+2 = 22;
        // entry: flags 2, ms 2, seq 2, "value" 7, lp-count(4) 2 = 15.
        let lp = Listpack::new(&[b"field", b"value"]);
        assert_eq!(lp.redis_bytes(), 37);
        assert_eq!(redis_value_size(Value::Str(&[b'x'; 64])), 67);
        assert_eq!(redis_value_size(Value::Int(40000)), 5);
    }

    #[test]
    fn growth_is_geometric_and_capped() {
        let master = id(1, 0);
        let mut lp = Listpack::new(&[b"a", b"1"]);
        assert_eq!(lp.capacity(), lp.len(), "one entry allocates to fit");
        assert_eq!(lp.heap_size(), 48, "{} node bytes", lp.len());
        let mut sizes = vec![lp.heap_size()];
        for i in 1..200u64 {
            lp.append(master, id(1, i), &[b"a", b"1"], 256);
            if *sizes.last().expect("nonempty") != lp.heap_size() {
                sizes.push(lp.heap_size());
            }
        }
        assert!(sizes.len() < 20, "{sizes:?}");
        // Doubling, stopping at the hint on the way, then doubling again.
        assert!(sizes.contains(&256), "{sizes:?}");
        assert!(sizes.contains(&512), "{sizes:?}");
        // Sealing gives the spare room back.
        lp.shrink_to_fit();
        assert_eq!(lp.capacity(), lp.len());
        assert_eq!(
            lp.heap_size(),
            usable_size(ARC_COUNTERS + PREFIX + lp.len())
        );
    }

    /// Sealing keeps a node inline unless its bytes sit just under a size class, where
    /// the 20 bytes of counters and length would cost a whole class more; a boxed node
    /// reads, deletes and (after the node limits were raised) grows like any other.
    #[test]
    fn sealed_nodes_take_the_cheaper_form() {
        let master = id(1, 0);
        let mut small = Listpack::new(&[b"f", b"v"]);
        small.append(master, id(2, 0), &[b"f", b"w"], 4096);
        small.shrink_to_fit();
        assert!(!small.is_boxed());
        assert_eq!(
            small.heap_size(),
            usable_size(ARC_COUNTERS + PREFIX + small.len())
        );
        // Grow a node to just under 1,024 bytes.
        let mut lp = Listpack::new(&[&b"f"[..], &[b'x'; 100][..]]);
        let mut n = 1;
        while lp.len() <= 1024 - 20 {
            n += 1;
            lp.append(master, id(1 + n, 0), &[&b"f"[..], b"x1234567890"], 4096);
        }
        let len = lp.len();
        assert!(len > 1024 - 20 && len <= 1024, "{len}");
        let before = lp.clone();
        lp.shrink_to_fit();
        assert!(lp.is_boxed());
        assert_eq!(lp.heap_size(), 32 + 1024);
        assert_eq!(lp, before);
        assert_eq!(collect(&lp, master), collect(&before, master));
        // Copy-on-write in the boxed form too.
        let copy = lp.clone();
        assert!(lp.shares_bytes_with(&copy));
        let e = lp.entries(master).nth(3).expect("many entries");
        lp.mark_deleted(e.start);
        assert!(!lp.shares_bytes_with(&copy));
        assert_eq!((lp.live(), copy.live()), (n - 1, n));
        // Appending again makes it inline, with room.
        lp.append(master, id(1000, 0), &[b"f", b"v"], 4096);
        assert!(!lp.is_boxed());
        assert_eq!(lp.total_entries(), n + 1);
        assert!(lp.capacity() > lp.len());
        assert_eq!(collect(&lp, master).len() as u64, n + 1);
        // A node loaded whole takes the cheaper form as well.
        let (loaded, _) = Listpack::from_bytes(copy.as_bytes().to_vec(), master).unwrap();
        assert!(loaded.is_boxed());
        assert_eq!(loaded, copy);
    }

    /// A clone shares the bytes; writing to either copies them first, and the other
    /// keeps what it had.
    #[test]
    fn clones_share_bytes_until_written() {
        let master = id(1, 0);
        let mut a = Listpack::new(&[b"f", b"v"]);
        a.append(master, id(2, 0), &[b"f", b"w"], 4096);
        let b = a.clone();
        assert!(a.shares_bytes_with(&b));
        a.append(master, id(3, 0), &[b"f", b"x"], 4096);
        assert!(!a.shares_bytes_with(&b));
        assert_eq!(collect(&b, master).len(), 2);
        assert_eq!(collect(&a, master).len(), 3);
        let c = a.clone();
        let e = a.entries(master).nth(1).expect("three entries");
        a.mark_deleted(e.start);
        assert_eq!(a.live(), 2);
        assert_eq!(c.live(), 3);
        assert!(c.entries(master).all(|e| !e.is_deleted()));
        assert_ne!(a, c);
    }

    /// A node with every kind of entry: SAMEFIELDS and not, integers, strings long
    /// enough for multi-byte lengths and back-lens, a tombstone, IDs with negative seq
    /// deltas.
    fn varied_node() -> (Listpack, StreamId) {
        let master = id(1000, 7);
        let long = vec![b'x'; 300];
        let mut lp = Listpack::new(&[&b"bidder"[..], b"17", b"amount", b"-3"]);
        lp.append(
            master,
            id(1000, 8),
            &[&b"bidder"[..], b"x", b"amount", b"0042"],
            4096,
        );
        lp.append(master, id(1031, 0), &[&b"other"[..], &long[..]], 4096);
        lp.append(
            master,
            id(90000, 2),
            &[&b"bidder"[..], b"9223372036854775807", b"amount", b""],
            4096,
        );
        lp.append(master, id(u64::MAX, 1), &[&long[..], b"-1"], 4096);
        let second = lp.entries(master).nth(1).expect("second entry").start;
        lp.mark_deleted(second);
        (lp, master)
    }

    /// Walks a node forwards and backwards, reading every element: what a reader does.
    fn walk(lp: &Listpack, master: StreamId) -> Vec<(StreamId, bool, Vec<Vec<u8>>)> {
        let forward = collect(lp, master);
        let m = lp.master();
        let mut end = lp.len();
        let mut back = Vec::new();
        while end > m.entries {
            let e = lp.entry_before(master, &m, end);
            back.push(e.id);
            end = e.start;
        }
        back.reverse();
        assert_eq!(back, forward.iter().map(|f| f.0).collect::<Vec<_>>());
        assert_eq!(lp.last_id(master), *back.last().expect("an entry"));
        forward
    }

    #[test]
    fn from_bytes_takes_back_what_as_bytes_gives() {
        let (lp, master) = varied_node();
        let (back, summary) = Listpack::from_bytes(lp.as_bytes().to_vec(), master).unwrap();
        assert_eq!(back, lp);
        assert_eq!(back.redis_bytes(), lp.redis_bytes());
        assert_eq!(summary.first_live, id(1000, 7));
        assert_eq!(summary.last, id(u64::MAX, 1));
        assert_eq!(walk(&back, master), collect(&lp, master));
        // The same bytes under another master ID decode to other IDs: refused when they
        // overflow.
        assert!(Listpack::from_bytes(lp.as_bytes().to_vec(), id(1, 0)).is_ok());
        assert_eq!(
            Listpack::from_bytes(lp.as_bytes().to_vec(), id(2000, 0)).unwrap_err(),
            NodeError("an entry ID overflows")
        );
    }

    #[test]
    fn from_bytes_refuses_every_truncation_and_extension() {
        let (lp, master) = varied_node();
        let b = lp.as_bytes();
        for cut in 0..b.len() {
            assert!(
                Listpack::from_bytes(b[..cut].to_vec(), master).is_err(),
                "cut at {cut} accepted"
            );
        }
        for extra in [&[0u8][..], &[0x80], &[1, 0, 1]] {
            let mut v = b.to_vec();
            v.extend_from_slice(extra);
            assert!(Listpack::from_bytes(v, master).is_err(), "{extra:?}");
        }
    }

    #[test]
    fn from_bytes_refuses_a_node_without_live_entries_and_wrong_counters() {
        let master = id(5, 0);
        let mut lp = Listpack::new(&[b"f", b"v"]);
        let start = lp.entries(master).next().expect("entry").start;
        lp.mark_deleted(start);
        assert_eq!(
            Listpack::from_bytes(lp.as_bytes().to_vec(), master).unwrap_err(),
            NodeError("a node without live entries")
        );
        let lp = Listpack::new(&[b"f", b"v"]);
        let mut v = lp.as_bytes().to_vec();
        v[HDR_REDIS] ^= 1;
        assert_eq!(
            Listpack::from_bytes(v, master).unwrap_err(),
            NodeError("the Redis-size field does not match the entries")
        );
    }

    /// Every single-bit flip of a node is refused, or gives a node that readers walk
    /// without panicking (a flipped value byte is still a valid node).
    #[test]
    fn every_bit_flip_is_refused_or_harmless() {
        let (lp, master) = varied_node();
        let mut accepted = 0;
        for byte in 0..lp.len() {
            for bit in 0..8 {
                let mut v = lp.as_bytes().to_vec();
                v[byte] ^= 1 << bit;
                if let Ok((flipped, _)) = Listpack::from_bytes(v, master) {
                    walk(&flipped, master);
                    accepted += 1;
                }
            }
        }
        // Flips inside string payloads must be accepted: they are data, not structure.
        assert!(accepted >= 8 * 300, "{accepted}");
    }

    /// A node of `n` entries `f <i>` with IDs `10+i-0`, the ones in `dead` deleted.
    fn node_with_tombstones(n: u64, dead: &[u64]) -> (Listpack, StreamId) {
        let master = id(10, 0);
        let mut lp = Listpack::new(&[&b"f"[..], b"0"]);
        for i in 1..n {
            let v = i.to_string();
            lp.append(master, id(10 + i, 0), &[&b"f"[..], v.as_bytes()], 4096);
        }
        for &d in dead {
            let e = lp
                .entries(master)
                .find(|e| e.id == id(10 + d, 0))
                .expect("an entry");
            lp.mark_deleted(e.start);
        }
        (lp, master)
    }

    #[test]
    fn reclaim_drops_tombstones_but_the_last_and_the_kept_ones() {
        let (lp, master) = node_with_tombstones(10, &[0, 2, 3, 5, 9]);
        let before = collect(&lp, master);
        let r = lp
            .reclaim(master, |i| i == id(15, 0))
            .expect("tombstones to drop");
        // 0, 2 and 3 go; 5 is kept on request, 9 because it is the last entry.
        assert_eq!((r.live(), r.deleted(), r.gone()), (5, 2, 3));
        assert_eq!(r.total_entries(), lp.total_entries());
        assert_eq!(r.redis_bytes(), lp.redis_bytes());
        assert_eq!(r.last_id(master), lp.last_id(master));
        let after = walk(&r, master);
        let want: Vec<_> = before
            .iter()
            .filter(|e| !e.1 || e.0 == id(15, 0) || e.0 == id(19, 0))
            .cloned()
            .collect();
        assert_eq!(after, want);
        assert!(r.len() < lp.len());
        // Back from its bytes, and again: the second reclaim adds to `gone`.
        let (back, summary) = Listpack::from_bytes(r.as_bytes().to_vec(), master).unwrap();
        assert_eq!(back, r);
        assert_eq!(summary.last, id(19, 0));
        assert_eq!(summary.first_live, id(11, 0));
        let again = back.reclaim(master, |_| false).expect("5 can go now");
        assert_eq!((again.deleted(), again.gone()), (1, 4));
        assert!(back.reclaim(master, |i| i == id(15, 0)).is_none());
        // Nothing to drop: no tombstones, or only the last entry.
        let (plain, m) = node_with_tombstones(3, &[]);
        assert!(plain.reclaim(m, |_| false).is_none());
        let (tail_only, m) = node_with_tombstones(3, &[2]);
        assert!(tail_only.reclaim(m, |_| false).is_none());
    }

    #[test]
    fn a_reclaimed_node_takes_appends_and_deletes() {
        let (lp, master) = node_with_tombstones(6, &[1, 2, 3]);
        let mut r = lp.reclaim(master, |_| false).expect("three to drop");
        let redis = r.redis_bytes();
        r.append(master, id(100, 3), &[&b"g"[..], b"x"], 4096);
        assert_eq!(r.total_entries(), 7);
        assert!(r.redis_bytes() > redis);
        let e = r.entries(master).find(|e| e.id == id(14, 0)).expect("live");
        r.mark_deleted(e.start);
        assert_eq!((r.live(), r.deleted(), r.gone()), (3, 1, 3));
        let (back, _) = Listpack::from_bytes(r.as_bytes().to_vec(), master).unwrap();
        assert_eq!(walk(&back, master), collect(&r, master));
        assert_eq!(back.redis_bytes(), r.redis_bytes());
        // A reclaimed header cut short, or claiming nothing gone, is refused.
        let mut zero = r.as_bytes().to_vec();
        zero[HDR_GONE..HDR_GONE + 4].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(
            Listpack::from_bytes(zero, master).unwrap_err(),
            NodeError("a reclaimed node without reclaimed entries")
        );
        assert!(Listpack::from_bytes(r.as_bytes()[..14].to_vec(), master).is_err());
        // Its Redis size may exceed what the entries add up to, never fall short of it.
        let mut small = r.as_bytes().to_vec();
        small[HDR_REDIS..HDR_REDIS + 4].copy_from_slice(&1u32.to_le_bytes());
        assert!(Listpack::from_bytes(small, master).is_err());
    }

    #[test]
    fn every_bit_flip_of_a_reclaimed_node_is_refused_or_harmless() {
        let (lp, master) = varied_node();
        let mut lp = lp;
        lp.append(master, id(u64::MAX, 2), &[&b"z"[..], b"1"], 4096);
        let r = lp.reclaim(master, |_| false).expect("the tombstone goes");
        for byte in 0..r.len() {
            for bit in 0..8 {
                let mut v = r.as_bytes().to_vec();
                v[byte] ^= 1 << bit;
                if let Ok((flipped, _)) = Listpack::from_bytes(v, master) {
                    walk(&flipped, master);
                }
            }
        }
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

            /// Arbitrary bytes never make the check panic, and what it accepts walks.
            #[test]
            fn arbitrary_bytes_are_refused_or_walkable(
                bytes in proptest::collection::vec(any::<u8>(), 0..200),
                ms in any::<u64>(),
                seq in any::<u64>(),
            ) {
                let master = id(ms, seq);
                if let Ok((lp, summary)) = Listpack::from_bytes(bytes, master) {
                    let got = walk(&lp, master);
                    prop_assert_eq!(Some(summary.last), got.last().map(|g| g.0));
                }
            }

            /// Random splices of a valid node (a byte range replaced by random bytes).
            #[test]
            fn spliced_nodes_are_refused_or_walkable(
                at in any::<proptest::sample::Index>(),
                len in 0usize..6,
                with in proptest::collection::vec(any::<u8>(), 0..6),
            ) {
                let (lp, master) = varied_node();
                let mut v = lp.as_bytes().to_vec();
                let at = at.index(v.len());
                let end = (at + len).min(v.len());
                v.splice(at..end, with);
                if let Ok((lp, _)) = Listpack::from_bytes(v, master) {
                    walk(&lp, master);
                }
            }
        }
    }
}
