//! The packed item both small hashes and small sets store their strings as: a header
//! byte that gives the length, or a canonical integer in as few bytes as it needs.
//!
//! ```text
//! item = header | payload
//!   0xxxxxxx                      string of 0..=127 bytes follows
//!   10xxxxxx yyyyyyyy             string of (x << 8 | y) bytes (up to 16383)
//!   11000000 + u32 LE             string of that many bytes
//!   1111nnnn (n = 1..=8)          integer: n bytes LE two's complement follow;
//!                                 only for canonical integer text (string2ll
//!                                 round-trips) that is longer than n bytes
//! ```
//!
//! Items carry no back-length (Redis's listpack has one after every entry): the packed
//! hash (`hash.rs`) and set (`set.rs`) only walk forwards.

use crate::stream::id::string2ll;
use std::borrow::Cow;

/// One string as a packed hash or set holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item<'a> {
    /// Bytes.
    Str(&'a [u8]),
    /// A canonical integer stored in binary.
    Int(i64),
}

impl<'a> Item<'a> {
    /// The item's bytes.
    pub fn to_cow(self) -> Cow<'a, [u8]> {
        match self {
            Item::Str(s) => Cow::Borrowed(s),
            Item::Int(v) => Cow::Owned(itoa::Buffer::new().format(v).as_bytes().to_vec()),
        }
    }

    /// Calls `f` with the item's bytes (an integer formatted on the stack).
    pub fn with_bytes<R>(self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self {
            Item::Str(s) => f(s),
            Item::Int(v) => f(itoa::Buffer::new().format(v).as_bytes()),
        }
    }

    /// Length of the item's text (`HSTRLEN`).
    pub fn text_len(self) -> usize {
        match self {
            Item::Str(s) => s.len(),
            Item::Int(v) => itoa::Buffer::new().format(v).len(),
        }
    }
}

/// Bytes of two's complement `v` needs (1..=8).
fn int_bytes(v: i64) -> usize {
    let bits = if v < 0 {
        65 - v.leading_ones()
    } else {
        65 - v.leading_zeros()
    };
    (bits as usize).div_ceil(8).max(1)
}

/// Appends the encoding of `s` to `out`.
pub(super) fn encode_item(s: &[u8], out: &mut Vec<u8>) {
    if s.len() > 1
        && let Some(v) = string2ll(s)
    {
        let n = int_bytes(v);
        if n < s.len() {
            out.push(0xF0 | n as u8);
            out.extend_from_slice(&v.to_le_bytes()[..n]);
            return;
        }
    }
    match s.len() {
        0..=127 => out.push(s.len() as u8),
        128..=16383 => out.extend_from_slice(&[0x80 | (s.len() >> 8) as u8, s.len() as u8]),
        _ => {
            out.push(0xC0);
            out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        }
    }
    out.extend_from_slice(s);
}

/// Encoded size of `s`.
pub(super) fn item_size(s: &[u8]) -> usize {
    if s.len() > 1
        && let Some(v) = string2ll(s)
    {
        let n = int_bytes(v);
        if n < s.len() {
            return 1 + n;
        }
    }
    s.len()
        + match s.len() {
            0..=127 => 1,
            128..=16383 => 2,
            _ => 5,
        }
}

/// Decodes the item at `pos`: the item and the position after it. The bytes were
/// written by [`encode_item`] (an internal invariant of the packed hash and set).
pub(super) fn decode_item(b: &[u8], pos: usize) -> (Item<'_>, usize) {
    let h = b[pos];
    match h {
        0x00..=0x7F => {
            let end = pos + 1 + usize::from(h);
            (Item::Str(&b[pos + 1..end]), end)
        }
        0x80..=0xBF => {
            let len = usize::from(h & 0x3F) << 8 | usize::from(b[pos + 1]);
            let end = pos + 2 + len;
            (Item::Str(&b[pos + 2..end]), end)
        }
        0xC0 => {
            let mut l = [0u8; 4];
            l.copy_from_slice(&b[pos + 1..pos + 5]);
            let end = pos + 5 + u32::from_le_bytes(l) as usize;
            (Item::Str(&b[pos + 5..end]), end)
        }
        _ => {
            let n = usize::from(h & 0x0F);
            let raw = &b[pos + 1..pos + 1 + n];
            let fill = if raw[n - 1] & 0x80 != 0 { 0xFF } else { 0 };
            let mut x = [fill; 8];
            x[..n].copy_from_slice(raw);
            (Item::Int(i64::from_le_bytes(x)), pos + 1 + n)
        }
    }
}

/// True if the stored `item` equals `key`, whose [`string2ll`] reading is `key_int`.
#[inline]
pub(super) fn item_eq(item: Item<'_>, key: &[u8], key_int: Option<i64>) -> bool {
    match item {
        Item::Str(s) => s == key,
        Item::Int(v) => key_int == Some(v),
    }
}
