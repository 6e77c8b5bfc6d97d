//! Redis's listpack encoding (`listpack.c`), as it appears inside RDB stream nodes.
//!
//! This is Redis's own byte layout, not streamd's node layout (`stream/listpack.rs`):
//! DUMP writes it and RESTORE / `--import-rdb` read it.
//!
//! ```text
//! +-----------+-----------+---------+---------+-----+---------+------+
//! | total     | count     | elem 0  | elem 1  | ... | elem N  | 0xFF |
//! | u32 LE    | u16 LE    |         |         |     |         | EOF  |
//! +-----------+-----------+---------+---------+-----+---------+------+
//!  total = bytes of the whole listpack; count = elements, 65535 = "too many, count them"
//!
//! element = encoding [data] back-len
//!
//!  first byte        kind                          data after the first byte
//!  0xxxxxxx          uint 0..=127                  -
//!  10LLLLLL          string, len 0..=63            len bytes
//!  110xxxxx          int13, two's complement       1 byte (low 8 bits)
//!  1110LLLL          string, len < 4096            1 byte (low 8 bits of len), len bytes
//!  11110000          string, 32-bit len            u32 LE len, len bytes
//!  11110001          int16                         2 bytes LE
//!  11110010          int24                         3 bytes LE
//!  11110011          int32                         4 bytes LE
//!  11110100          int64                         8 bytes LE
//!  11111111          end of listpack
//!
//! back-len = size of encoding+data, 1..=5 bytes of 7 bits, readable right to left:
//!  the byte nearest the element's start holds the highest bits; every byte but that
//!  one has its high bit set.
//! ```
//!
//! Writers choose the smallest integer encoding, and store a string as an integer when
//! it is the canonical decimal text of an `i64` (no sign `+`, no leading zeros) — so a
//! value read back as an integer prints to exactly the bytes that were written.
//!
//! [`Decoder`] validates as it goes — every length against the bytes left, back-lens
//! against the element sizes, the header's total and count against what is there —
//! and never panics: a listpack is untrusted input here.

use super::packed::{COUNT_UNKNOWN, DecodeError, END, Elem, Frame, bad, le_int};
use crate::stream::id::string2ll;
use crate::stream::redis_lp::backlen_size;

/// Listpack header: total bytes (u32) + element count (u16).
pub const HEADER_SIZE: usize = 6;

/// The frame (`packed.rs`): total and count, then the elements and the end byte.
const FRAME: Frame = Frame {
    header: HEADER_SIZE,
    count_at: 4,
    short: "listpack shorter than its header",
    total: "listpack total bytes disagree with its length",
    unterminated: "listpack does not end with 0xFF",
    count: "listpack element count disagrees with its header",
};

/// Builds a listpack. `finish` writes the header.
#[derive(Debug, Default)]
pub struct Builder {
    buf: Vec<u8>,
    count: usize,
}

impl Builder {
    /// An empty listpack under construction.
    pub fn new() -> Builder {
        Builder::with_capacity(256)
    }

    /// An empty listpack under construction, with room for `bytes` in all.
    pub fn with_capacity(bytes: usize) -> Builder {
        let mut buf = Vec::with_capacity(bytes.max(HEADER_SIZE + 1));
        buf.extend_from_slice(&[0; HEADER_SIZE]);
        Builder { buf, count: 0 }
    }

    /// Appends an integer in its smallest encoding. The element (at most 9 bytes) and
    /// its back-len (one byte: its length) are put together on the stack and appended
    /// at once: DUMP writes several of these per stream entry.
    pub fn int(&mut self, v: i64) {
        let mut e = [0u8; 10];
        let n = if (0..=127).contains(&v) {
            e[0] = v as u8;
            1
        } else if (-4096..=4095).contains(&v) {
            let u = if v < 0 { (1i64 << 13) + v } else { v } as u16;
            e[0] = 0xC0 | (u >> 8) as u8;
            e[1] = (u & 0xff) as u8;
            2
        } else if (-32768..=32767).contains(&v) {
            e[0] = 0xF1;
            e[1..3].copy_from_slice(&(v as i16).to_le_bytes());
            3
        } else if (-8_388_608..=8_388_607).contains(&v) {
            e[0] = 0xF2;
            e[1..4].copy_from_slice(&(v as i32).to_le_bytes()[..3]);
            4
        } else if i32::try_from(v).is_ok() {
            e[0] = 0xF3;
            e[1..5].copy_from_slice(&(v as i32).to_le_bytes());
            5
        } else {
            e[0] = 0xF4;
            e[1..9].copy_from_slice(&v.to_le_bytes());
            9
        };
        // The back-len of an element shorter than 128 bytes is its length, one byte.
        e[n] = n as u8;
        self.buf.extend_from_slice(&e[..=n]);
        self.count += 1;
    }

    /// Appends a string, as an integer when it is canonical integer text (as Redis's
    /// `lpAppend` does).
    pub fn string(&mut self, s: &[u8]) {
        if s.len() <= 20
            && let Some(v) = string2ll(s)
        {
            return self.int(v);
        }
        self.text(s);
    }

    /// Appends a string known not to be canonical integer text (a stream node's string
    /// element: integer text is stored as an integer there), as a string.
    pub fn text(&mut self, s: &[u8]) {
        let start = self.buf.len();
        let b = &mut self.buf;
        let len = s.len();
        if len < 64 {
            b.push(0x80 | len as u8);
        } else if len < 4096 {
            b.push(0xE0 | (len >> 8) as u8);
            b.push((len & 0xff) as u8);
        } else {
            b.push(0xF0);
            b.extend_from_slice(&(len as u32).to_le_bytes());
        }
        b.extend_from_slice(s);
        self.end_elem(start);
    }

    /// Appends an element as read from another listpack.
    pub fn elem(&mut self, e: Elem<'_>) {
        match e {
            Elem::Int(v) => self.int(v),
            Elem::Str(s) => self.string(s),
        }
    }

    fn end_elem(&mut self, start: usize) {
        let l = (self.buf.len() - start) as u64;
        push_backlen(&mut self.buf, l);
        self.count += 1;
    }

    /// Bytes the listpack would have if finished now.
    pub fn len(&self) -> usize {
        self.buf.len() + 1
    }

    /// True when no element was appended.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Writes the terminator and the header; returns the listpack bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.buf.push(END);
        let total = u32::try_from(self.buf.len()).unwrap_or(u32::MAX);
        let count = u16::try_from(self.count).unwrap_or(COUNT_UNKNOWN);
        self.buf[0..4].copy_from_slice(&total.to_le_bytes());
        self.buf[4..6].copy_from_slice(&count.to_le_bytes());
        self.buf
    }
}

/// Appends the back-len of an element of `l` bytes (Redis `lpEncodeBacklen`).
fn push_backlen(buf: &mut Vec<u8>, l: u64) {
    if l <= 127 {
        buf.push(l as u8);
    } else if l < 16383 {
        buf.push((l >> 7) as u8);
        buf.push((l & 127) as u8 | 128);
    } else if l < 2_097_151 {
        buf.push((l >> 14) as u8);
        buf.push(((l >> 7) & 127) as u8 | 128);
        buf.push((l & 127) as u8 | 128);
    } else if l < 268_435_455 {
        buf.push((l >> 21) as u8);
        buf.push(((l >> 14) & 127) as u8 | 128);
        buf.push(((l >> 7) & 127) as u8 | 128);
        buf.push((l & 127) as u8 | 128);
    } else {
        buf.push((l >> 28) as u8);
        buf.push(((l >> 21) & 127) as u8 | 128);
        buf.push(((l >> 14) & 127) as u8 | 128);
        buf.push(((l >> 7) & 127) as u8 | 128);
        buf.push((l & 127) as u8 | 128);
    }
}

/// Reads the elements of a listpack in order, validating each; as an iterator, it stops
/// at the first error.
#[derive(Debug, Clone)]
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Elements read so far.
    seen: usize,
    /// The header's count, unless it is "unknown".
    declared: Option<usize>,
}

impl<'a> Decoder<'a> {
    /// Checks the header and terminator position; elements are validated as read.
    pub fn new(buf: &'a [u8]) -> Result<Decoder<'a>, DecodeError> {
        Ok(Decoder {
            declared: FRAME.open(buf)?,
            buf,
            pos: HEADER_SIZE,
            seen: 0,
        })
    }

    /// Offset of the next element.
    pub fn offset(&self) -> usize {
        self.pos
    }

    /// True when the terminator is next.
    pub fn at_end(&self) -> bool {
        self.pos >= self.buf.len() - 1
    }

    /// The next element, `Ok(None)` at the end (after checking the declared count).
    pub fn next_elem(&mut self) -> Result<Option<Elem<'a>>, DecodeError> {
        let start = self.pos;
        let bad = |reason| bad(start, reason);
        let end = self.buf.len() - 1; // the end byte
        if start >= end {
            FRAME.close(self.declared, self.seen, start)?;
            return Ok(None);
        }
        let b = self.buf;
        let first = b[start];
        let take = |n: usize| -> Option<&'a [u8]> { b.get(start + 1..start + 1 + n) };
        let (elem, size) = if first & 0x80 == 0 {
            (Elem::Int(i64::from(first)), 1)
        } else if first & 0xC0 == 0x80 {
            let len = usize::from(first & 0x3F);
            match take(len) {
                Some(s) => (Elem::Str(s), 1 + len),
                None => return bad("listpack string runs past the end"),
            }
        } else if first & 0xE0 == 0xC0 {
            let Some(d) = take(1) else {
                return bad("listpack integer runs past the end");
            };
            let u = (u16::from(first & 0x1F) << 8) | u16::from(d[0]);
            let v = if u >= 1 << 12 {
                i64::from(u) - (1 << 13)
            } else {
                i64::from(u)
            };
            (Elem::Int(v), 2)
        } else if first & 0xF0 == 0xE0 {
            let Some(d) = take(1) else {
                return bad("listpack string runs past the end");
            };
            let len = (usize::from(first & 0x0F) << 8) | usize::from(d[0]);
            match b.get(start + 2..start + 2 + len) {
                Some(s) => (Elem::Str(s), 2 + len),
                None => return bad("listpack string runs past the end"),
            }
        } else {
            match first {
                0xF0 => {
                    let Some(d) = take(4) else {
                        return bad("listpack string runs past the end");
                    };
                    let len = u32::from_le_bytes([d[0], d[1], d[2], d[3]]) as usize;
                    match b.get(start + 5..start + 5 + len) {
                        Some(s) => (Elem::Str(s), 5 + len),
                        None => return bad("listpack string runs past the end"),
                    }
                }
                0xF1..=0xF4 => {
                    let n = match first {
                        0xF1 => 2,
                        0xF2 => 3,
                        0xF3 => 4,
                        _ => 8,
                    };
                    let Some(d) = take(n) else {
                        return bad("listpack integer runs past the end");
                    };
                    (Elem::Int(le_int(d)), 1 + n)
                }
                _ => return bad("listpack element with an invalid encoding byte"),
            }
        };
        let bl = backlen_size(size);
        let elem_end = start + size + bl;
        if elem_end > end {
            return bad("listpack element runs past the end");
        }
        if read_backlen(&b[start + size..elem_end]) != Some(size as u64) {
            return bad("listpack element has a wrong back-len");
        }
        self.pos = elem_end;
        self.seen += 1;
        Ok(Some(elem))
    }

    /// The next element, which must exist.
    pub fn expect(&mut self) -> Result<Elem<'a>, DecodeError> {
        let offset = self.pos;
        match self.next_elem()? {
            Some(e) => Ok(e),
            None => bad(offset, "listpack ended early"),
        }
    }

    /// The next element, which must be an integer.
    pub fn expect_int(&mut self) -> Result<i64, DecodeError> {
        let offset = self.pos;
        match self.expect()?.as_int() {
            Some(i) => Ok(i),
            None => bad(offset, "listpack element should be an integer"),
        }
    }
}

impl<'a> Iterator for Decoder<'a> {
    type Item = Result<Elem<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_elem().transpose()
    }
}

/// Every element of a listpack, validated.
pub fn elements(buf: &[u8]) -> Result<Vec<Elem<'_>>, DecodeError> {
    Decoder::new(buf)?.collect()
}

/// Reads a back-len written by [`push_backlen`] from exactly its bytes.
fn read_backlen(bytes: &[u8]) -> Option<u64> {
    let (first, rest) = bytes.split_first()?;
    if first & 128 != 0 {
        return None;
    }
    let mut v = u64::from(*first);
    for &b in rest {
        if b & 128 == 0 {
            return None;
        }
        v = (v << 7) | u64::from(b & 127);
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::redis_lp;

    #[test]
    fn empty_listpack_is_seven_bytes() {
        assert_eq!(Builder::new().finish(), [7, 0, 0, 0, 0, 0, 0xFF]);
    }

    #[test]
    fn integers_use_the_smallest_encoding_and_round_trip() {
        let cases: &[(i64, usize)] = &[
            (0, 1),
            (127, 1),
            (128, 2),
            (-1, 2),
            (-4096, 2),
            (4095, 2),
            (4096, 3),
            (-32768, 3),
            (32768, 4),
            (-8_388_608, 4),
            (8_388_608, 5),
            (i64::from(i32::MIN), 5),
            (i64::from(i32::MAX) + 1, 9),
            (i64::MIN, 9),
            (i64::MAX, 9),
        ];
        for &(v, size) in cases {
            let mut b = Builder::new();
            b.int(v);
            let lp = b.finish();
            assert_eq!(lp.len(), HEADER_SIZE + size + 1 + 1, "{v}");
            assert_eq!(
                size + 1,
                redis_lp::int_size(v),
                "{v}: what stream nodes count"
            );
            assert_eq!(elements(&lp), Ok(vec![Elem::Int(v)]), "{v}");
        }
    }

    #[test]
    fn known_bytes_from_redis() {
        // lpNew + lpAppend("hello") + lpAppend("1024"), as listpack.c writes them.
        let mut b = Builder::new();
        b.string(b"hello");
        b.string(b"1024");
        let lp = b.finish();
        assert_eq!(
            lp,
            [
                17, 0, 0, 0, 2, 0, 0x85, b'h', b'e', b'l', b'l', b'o', 6, 0xC4, 0x00, 2, 0xFF
            ]
        );
    }

    #[test]
    fn strings_of_every_length_class_round_trip() {
        for len in [0usize, 1, 63, 64, 127, 128, 4095, 4096, 20000] {
            let s: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            let mut b = Builder::new();
            b.string(&s);
            b.string(b"007");
            b.string(b"-0");
            let lp = b.finish();
            assert_eq!(
                elements(&lp),
                Ok(vec![Elem::Str(&s), Elem::Str(b"007"), Elem::Str(b"-0")]),
                "{len}"
            );
            let counted = redis_lp::EMPTY
                + redis_lp::str_size(len)
                + redis_lp::str_size(3)
                + redis_lp::str_size(2);
            assert_eq!(lp.len(), counted, "{len}: what stream nodes count");
        }
    }

    #[test]
    fn count_header_saturates_at_65535_and_is_then_not_checked() {
        let mut b = Builder::new();
        for i in 0..70000 {
            b.int(i % 100);
        }
        let lp = b.finish();
        assert_eq!(u16::from_le_bytes([lp[4], lp[5]]), u16::MAX);
        assert_eq!(elements(&lp).map(|v| v.len()), Ok(70000));
    }

    #[test]
    fn every_truncation_and_flipped_byte_is_refused_or_decodes_without_panic() {
        let mut b = Builder::new();
        b.string(b"field");
        b.int(-5000);
        b.string(&[7u8; 300]);
        b.int(1 << 40);
        let lp = b.finish();
        for cut in 0..lp.len() {
            assert!(elements(&lp[..cut]).is_err(), "cut {cut}");
        }
        for i in 0..lp.len() {
            for bit in 0..8 {
                let mut bad = lp.clone();
                bad[i] ^= 1 << bit;
                let _ = elements(&bad);
            }
        }
    }

    #[test]
    fn wrong_count_and_wrong_backlen_are_refused() {
        let mut b = Builder::new();
        b.string(b"x");
        let mut lp = b.finish();
        lp[4] = 2;
        assert!(elements(&lp).is_err());
        lp[4] = 1;
        let bl = lp.len() - 2;
        lp[bl] = 3;
        assert!(elements(&lp).is_err());
    }
}
