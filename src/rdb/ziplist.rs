//! Redis's ziplist encoding (`ziplist.c`, Redis 2.6–6.2), as older RDB files hold it
//! inside list (types 10, 14), hash (13) and sorted-set (12) values. Read only: no
//! Redis since 7.0 writes ziplists, and streamd never does.
//!
//! ```text
//! +----------+----------+---------+---------+-----+---------+-------+
//! | zlbytes  | zltail   | zllen   | entry 0 | ... | entry N | 0xFF  |
//! | u32 LE   | u32 LE   | u16 LE  |         |     |         | zlend |
//! +----------+----------+---------+---------+-----+---------+-------+
//!  zlbytes = bytes of the whole ziplist; zltail = offset of the last entry (of the
//!  end byte when empty); zllen = entries, 65535 = "too many, count them"
//!
//! entry = <prevlen> <encoding> [data]
//!   prevlen: size of the previous entry (0 for the first)
//!     0..=253                 1 byte
//!     0xFE <u32 LE>           5 bytes
//!   encoding:
//!     00LLLLLL                string, len 0..=63, len bytes follow
//!     01LLLLLL LLLLLLLL       string, 14-bit len big-endian
//!     10000000 <u32 BE>       string, 32-bit len
//!     11000000 <i16 LE>       integer
//!     11010000 <i32 LE>       integer
//!     11100000 <i64 LE>       integer
//!     11110000 <i24 LE>       integer (3 bytes)
//!     11111110 <i8>           integer
//!     1111xxxx                xxxx in 0001..=1101: the integer xxxx - 1 (0..=12)
//! ```
//!
//! [`Decoder`] checks everything Redis's `ziplistValidateIntegrity` checks — the header
//! against the length, every entry inside the ziplist, every prevlen against the
//! previous entry's size, zltail against the last entry, the count — and never panics:
//! the bytes are untrusted.

use super::packed::{DecodeError, END, Elem, Frame, bad, le_int};

/// The frame (`packed.rs`): zlbytes, zltail and zllen, then the entries and the end byte.
const FRAME: Frame = Frame {
    header: HEADER,
    count_at: 8,
    short: "ziplist shorter than its header",
    total: "ziplist total bytes disagree with its length",
    unterminated: "ziplist does not end with 0xFF",
    count: "ziplist entry count disagrees with its header",
};
/// Header bytes: zlbytes, zltail, zllen.
const HEADER: usize = 10;

/// Reads the entries of a ziplist in order, validating each; as an iterator, it stops
/// at the first error.
#[derive(Debug, Clone)]
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Size of the previous entry (what the next prevlen must say).
    prev_size: usize,
    /// Offset of the last entry read.
    last: Option<usize>,
    seen: usize,
    declared: Option<usize>,
    tail: usize,
}

impl<'a> Decoder<'a> {
    /// Checks the header and the end byte; entries are validated as they are read.
    pub fn new(buf: &'a [u8]) -> Result<Decoder<'a>, DecodeError> {
        let declared = FRAME.open(buf)?;
        let tail = u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]) as usize;
        if tail >= buf.len() {
            return bad(4, "ziplist tail offset past its end");
        }
        Ok(Decoder {
            buf,
            pos: HEADER,
            prev_size: 0,
            last: None,
            seen: 0,
            declared,
            tail,
        })
    }

    /// The next entry, `Ok(None)` at the end (after checking the count and the tail).
    pub fn next_elem(&mut self) -> Result<Option<Elem<'a>>, DecodeError> {
        let start = self.pos;
        let b = self.buf;
        let end = b.len() - 1;
        if start >= end {
            FRAME.close(self.declared, self.seen, start)?;
            if self.tail != self.last.unwrap_or(HEADER) {
                return bad(start, "ziplist tail offset is not its last entry");
            }
            return Ok(None);
        }
        let get = |from: usize, n: usize| -> Option<&'a [u8]> {
            b.get(from..from.checked_add(n)?)
                .filter(|_| from + n <= end)
        };
        // prevlen
        let (prevlen, mut p) = match b[start] {
            0xFE => match get(start + 1, 4) {
                Some(d) => (
                    u32::from_le_bytes([d[0], d[1], d[2], d[3]]) as usize,
                    start + 5,
                ),
                None => return bad(start, "ziplist prevlen runs past the end"),
            },
            END => return bad(start, "ziplist prevlen byte 0xFF"),
            n => (usize::from(n), start + 1),
        };
        if prevlen != self.prev_size {
            return bad(start, "ziplist prevlen disagrees with the previous entry");
        }
        let Some(&enc) = get(p, 1).and_then(|d| d.first()) else {
            return bad(start, "ziplist entry runs past the end");
        };
        p += 1;
        let string = |len: usize, at: usize| match get(at, len) {
            Some(s) => Ok((Elem::Str(s), at + len)),
            None => bad(start, "ziplist string runs past the end"),
        };
        let int = |n: usize, at: usize| match get(at, n) {
            Some(d) => Ok((Elem::Int(le_int(d)), at + n)),
            None => bad(start, "ziplist integer runs past the end"),
        };
        let (elem, next) = match enc >> 6 {
            0 => string(usize::from(enc & 0x3F), p)?,
            1 => match get(p, 1) {
                Some(d) => string((usize::from(enc & 0x3F) << 8) | usize::from(d[0]), p + 1)?,
                None => return bad(start, "ziplist string length runs past the end"),
            },
            2 => {
                if enc != 0x80 {
                    return bad(start, "ziplist entry with an invalid encoding byte");
                }
                match get(p, 4) {
                    Some(d) => {
                        string(u32::from_be_bytes([d[0], d[1], d[2], d[3]]) as usize, p + 4)?
                    }
                    None => return bad(start, "ziplist string length runs past the end"),
                }
            }
            _ => match enc {
                0xC0 => int(2, p)?,
                0xD0 => int(4, p)?,
                0xE0 => int(8, p)?,
                0xF0 => int(3, p)?,
                0xFE => int(1, p)?,
                0xF1..=0xFD => (Elem::Int(i64::from(enc & 0x0F) - 1), p),
                _ => return bad(start, "ziplist entry with an invalid encoding byte"),
            },
        };
        self.prev_size = next - start;
        self.last = Some(start);
        self.pos = next;
        self.seen += 1;
        Ok(Some(elem))
    }
}

impl<'a> Iterator for Decoder<'a> {
    type Item = Result<Elem<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_elem().transpose()
    }
}

/// Every entry of a ziplist, validated.
pub fn entries(buf: &[u8]) -> Result<Vec<Elem<'_>>, DecodeError> {
    Decoder::new(buf)?.collect()
}

/// Builds ziplists for tests (streamd never writes one outside of them).
#[cfg(test)]
pub mod build {
    /// A ziplist of `items`, each as a string or (when `Ok`) an integer, in the
    /// encodings drawn in the module doc.
    pub fn ziplist(items: &[Result<i64, &[u8]>]) -> Vec<u8> {
        let mut body = Vec::new();
        let mut prev = 0usize;
        let mut last = 10usize;
        for it in items {
            let start = body.len();
            last = 10 + start;
            if prev < 254 {
                body.push(prev as u8);
            } else {
                body.push(0xFE);
                body.extend_from_slice(&(prev as u32).to_le_bytes());
            }
            match it {
                Ok(v) => {
                    let v = *v;
                    if (0..=12).contains(&v) {
                        body.push(0xF1 + v as u8);
                    } else if i8::try_from(v).is_ok() {
                        body.push(0xFE);
                        body.push(v as i8 as u8);
                    } else if i16::try_from(v).is_ok() {
                        body.push(0xC0);
                        body.extend_from_slice(&(v as i16).to_le_bytes());
                    } else if (-(1 << 23)..(1 << 23)).contains(&v) {
                        body.push(0xF0);
                        body.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
                    } else if i32::try_from(v).is_ok() {
                        body.push(0xD0);
                        body.extend_from_slice(&(v as i32).to_le_bytes());
                    } else {
                        body.push(0xE0);
                        body.extend_from_slice(&v.to_le_bytes());
                    }
                }
                Err(s) => {
                    let n = s.len();
                    if n < 64 {
                        body.push(n as u8);
                    } else if n < 16384 {
                        body.push(0x40 | (n >> 8) as u8);
                        body.push(n as u8);
                    } else {
                        body.push(0x80);
                        body.extend_from_slice(&(n as u32).to_be_bytes());
                    }
                    body.extend_from_slice(s);
                }
            }
            prev = body.len() - start;
        }
        let total = 10 + body.len() + 1;
        let tail = if items.is_empty() { 10 } else { last };
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(&(total as u32).to_le_bytes());
        out.extend_from_slice(&(tail as u32).to_le_bytes());
        out.extend_from_slice(&(items.len().min(65535) as u16).to_le_bytes());
        out.extend_from_slice(&body);
        out.push(0xFF);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_bytes_from_ziplist_c() {
        // The example in ziplist.c's header: the entries "2" and "5".
        let zl = [
            0x0f, 0, 0, 0, 0x0c, 0, 0, 0, 0x02, 0, 0x00, 0xf3, 0x02, 0xf6, 0xff,
        ];
        assert_eq!(entries(&zl), Ok(vec![Elem::Int(2), Elem::Int(5)]));
        assert_eq!(
            build::ziplist(&[Ok(2), Ok(5)]),
            zl,
            "the test builder writes Redis's bytes"
        );
    }

    #[test]
    fn every_truncation_is_refused_and_every_flip_decodes_without_panic() {
        let big = vec![b'x'; 300];
        let zl = build::ziplist(&[
            Err(b"hello"),
            Ok(-70000),
            Err(&big),
            Ok(1 << 40),
            Ok(-3),
            Ok(7),
            Ok(30000),
            Ok(-100),
        ]);
        assert_eq!(entries(&zl).map(|v| v.len()), Ok(8));
        for cut in 0..zl.len() {
            assert!(entries(&zl[..cut]).is_err(), "cut {cut}");
        }
        for i in 0..zl.len() {
            for bit in 0..8 {
                let mut bad = zl.clone();
                bad[i] ^= 1 << bit;
                let _ = entries(&bad);
            }
        }
    }

    #[test]
    fn wrong_prevlen_tail_and_count_are_refused() {
        let zl = build::ziplist(&[Err(b"a"), Err(b"b")]);
        let mut bad = zl.clone();
        bad[8] = 3;
        assert!(entries(&bad).is_err());
        let mut bad = zl.clone();
        bad[4] = 10;
        assert!(entries(&bad).is_err());
        let mut bad = zl;
        bad[13] = 5; // second entry's prevlen
        assert!(entries(&bad).is_err());
    }

    fn item() -> impl Strategy<Value = Result<i64, Vec<u8>>> {
        prop_oneof![
            any::<i64>().prop_map(Ok),
            (-20i64..20).prop_map(Ok),
            proptest::collection::vec(any::<u8>(), 0..400).prop_map(Err),
        ]
    }

    proptest! {
        #[test]
        fn decodes_what_the_model_built(items in proptest::collection::vec(item(), 0..80)) {
            let refs: Vec<Result<i64, &[u8]>> =
                items.iter().map(|i| i.as_ref().map(|v| *v).map_err(|s| &s[..])).collect();
            let zl = build::ziplist(&refs);
            let got = entries(&zl).expect("valid");
            let want: Vec<Elem<'_>> = refs
                .iter()
                .map(|r| match r { Ok(v) => Elem::Int(*v), Err(s) => Elem::Str(s) })
                .collect();
            prop_assert_eq!(got, want);
        }

        #[test]
        fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = entries(&b);
            let mut with_header = b.clone();
            let n = (b.len() + 11) as u32;
            let mut zl = n.to_le_bytes().to_vec();
            zl.extend_from_slice(&10u32.to_le_bytes());
            zl.extend_from_slice(&[0xFF, 0xFF]);
            zl.append(&mut with_header);
            zl.push(0xFF);
            let _ = entries(&zl);
        }
    }
}
