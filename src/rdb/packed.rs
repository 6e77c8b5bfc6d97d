//! What Redis's packed encodings share: the element they hold ([`Elem`]), the error their
//! decoders return ([`DecodeError`]: a byte offset and a reason), the frame ziplists and
//! listpacks both have ([`Frame`]), and their little-endian integers ([`le_int`]).
//!
//! Ziplists (`ziplist.rs`) and listpacks (`listpack.rs`) open and close the same way:
//!
//! ```text
//! +----------+--------------------+---------+------------+------+
//! | total    | zltail (ziplist)   | count   | elements   | 0xFF |
//! | u32 LE   | u32 LE             | u16 LE  | ...        | end  |
//! +----------+--------------------+---------+------------+------+
//!  total = bytes of the whole blob; count = elements, 65535 = "too many, count them";
//!  a listpack has no zltail: its count is at 4, its first element at 6
//! ```
//!
//! Zipmaps (`zipmap.rs`) have no such frame; they share the error.

use std::fmt;

/// One element of a ziplist or listpack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem<'a> {
    /// A byte string.
    Str(&'a [u8]),
    /// An integer.
    Int(i64),
}

impl Elem<'_> {
    /// The element as bytes: strings as they are, integers in decimal.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Elem::Str(s) => s.to_vec(),
            Elem::Int(i) => itoa::Buffer::new().format(*i).as_bytes().to_vec(),
        }
    }

    /// The element as an integer, if it is one (strings are not parsed).
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Elem::Int(i) => Some(*i),
            Elem::Str(_) => None,
        }
    }
}

/// Why a ziplist, listpack or zipmap was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Byte offset of the problem inside the ziplist, listpack or zipmap.
    pub offset: usize,
    /// What is wrong; it names the encoding ("listpack string runs past the end").
    pub reason: &'static str,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (byte {})", self.reason, self.offset)
    }
}

impl std::error::Error for DecodeError {}

/// The `Err` of a [`DecodeError`].
pub(super) fn bad<T>(offset: usize, reason: &'static str) -> Result<T, DecodeError> {
    Err(DecodeError { offset, reason })
}

/// A framed encoding (module doc): where its fields are and the reasons its frame errors
/// give.
#[derive(Debug)]
pub(super) struct Frame {
    /// Header bytes; the first element starts here.
    pub header: usize,
    /// Offset of the u16 LE element count.
    pub count_at: usize,
    /// The blob is shorter than a header and the end byte.
    pub short: &'static str,
    /// The total disagrees with the blob's length.
    pub total: &'static str,
    /// The last byte is not 0xFF.
    pub unterminated: &'static str,
    /// The elements read disagree with the count.
    pub count: &'static str,
}

/// The end byte of ziplists and listpacks.
pub const END: u8 = 0xFF;
/// The count that means "too many, count them".
pub const COUNT_UNKNOWN: u16 = u16::MAX;

impl Frame {
    /// Checks `buf`'s header against its length and its end byte; returns the declared
    /// element count (`None` when it is [`COUNT_UNKNOWN`]).
    pub fn open(&self, buf: &[u8]) -> Result<Option<usize>, DecodeError> {
        // The header holds the total and the count (`header >= count_at + 2 >= 6`).
        if buf.len() < self.header + 1 {
            return bad(0, self.short);
        }
        if u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize != buf.len() {
            return bad(0, self.total);
        }
        if buf[buf.len() - 1] != END {
            return bad(buf.len() - 1, self.unterminated);
        }
        let count = u16::from_le_bytes([buf[self.count_at], buf[self.count_at + 1]]);
        Ok((count != COUNT_UNKNOWN).then_some(usize::from(count)))
    }

    /// At the end byte (`offset`): `seen` elements were read, which must be what
    /// [`Frame::open`] returned unless that was unknown.
    pub fn close(
        &self,
        declared: Option<usize>,
        seen: usize,
        offset: usize,
    ) -> Result<(), DecodeError> {
        if declared.is_some_and(|n| n != seen) {
            return bad(offset, self.count);
        }
        Ok(())
    }
}

/// The signed integer in `d`'s 1 to 8 little-endian bytes, sign-extended.
pub fn le_int(d: &[u8]) -> i64 {
    let n = d.len().min(8);
    if n == 0 {
        return 0;
    }
    let mut w = [0u8; 8];
    w[..n].copy_from_slice(&d[..n]);
    let shift = 64 - 8 * n as u32;
    (i64::from_le_bytes(w) << shift) >> shift
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: Frame = Frame {
        header: 6,
        count_at: 4,
        short: "short",
        total: "total",
        unterminated: "unterminated",
        count: "count",
    };

    #[test]
    fn the_frame_checks_total_end_byte_and_count() {
        assert_eq!(F.open(&[7, 0, 0, 0, 2, 0, 0xFF]), Ok(Some(2)));
        assert_eq!(F.open(&[7, 0, 0, 0, 0xFF, 0xFF, 0xFF]), Ok(None));
        assert_eq!(F.open(&[6, 0, 0, 0, 0, 0]), bad(0, "short"));
        assert_eq!(F.open(&[8, 0, 0, 0, 0, 0, 0xFF]), bad(0, "total"));
        assert_eq!(F.open(&[7, 0, 0, 0, 0, 0, 0]), bad(6, "unterminated"));
        assert_eq!(F.close(Some(2), 2, 9), Ok(()));
        assert_eq!(F.close(None, 5, 9), Ok(()));
        assert_eq!(F.close(Some(2), 1, 9), bad(9, "count"));
    }

    #[test]
    fn integers_are_sign_extended_from_their_width() {
        assert_eq!(le_int(&[0xFF]), -1);
        assert_eq!(le_int(&[0x7F]), 127);
        assert_eq!(le_int(&[0x00, 0x80]), -32768);
        assert_eq!(le_int(&[0xFF, 0xFF, 0x7F]), 8_388_607);
        assert_eq!(le_int(&[0, 0, 0x80]), -8_388_608);
        assert_eq!(le_int(&i64::MIN.to_le_bytes()), i64::MIN);
    }
}
