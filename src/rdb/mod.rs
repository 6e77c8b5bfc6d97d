//! Redis's serialization format (RDB): what `DUMP`/`RESTORE` payloads and `dump.rdb`
//! files hold, read and written for streams, so data moves between Redis and streamd.
//!
//! Modules: [`crc64`] (the CRC-64/Jones checksum), [`lzf`] (compressed strings),
//! [`listpack`] (Redis's listpack bytes), [`ziplist`], [`zipmap`] and [`intset`] (the
//! older packed encodings, read only), [`packed`] (what ziplists, listpacks and zipmaps
//! share: the element, the decode error, the frame), [`values`] (strings, lists, sets,
//! hashes, sorted sets), [`stream`] (a stream value: nodes, metadata,
//! consumer groups), [`payload`] (DUMP/RESTORE framing), [`file`] (whole `dump.rdb`
//! files for `streamd --import-rdb`).
//!
//! # Primitives
//!
//! ```text
//! length (rdbSaveLen / rdbLoadLen), first byte's top two bits:
//!   00LLLLLL                          6-bit length
//!   01LLLLLL LLLLLLLL                 14-bit length, big-endian
//!   10000000 <u32 BE>                 32-bit length
//!   10000001 <u64 BE>                 64-bit length
//!   11EEEEEE                          not a length: a specially encoded string follows
//!
//! string (rdbSaveRawString / rdbGenericLoadStringObject):
//!   <length> <bytes>                  plain
//!   11000000 <i8>                     integer, printed in decimal
//!   11000001 <i16 LE>                 integer
//!   11000010 <i32 LE>                 integer
//!   11000011 <clen> <len> <clen bytes> LZF-compressed (lzf.rs), expands to len bytes
//!
//! millisecond time (rdbSaveMillisecondTime): i64 little-endian, 8 bytes
//! stream ID inside a PEL: 16 raw bytes, ms then seq, each u64 big-endian
//! ```
//!
//! # A stream value (types 15, 19, 21; 26 and 27 add to 21 as drawn in `payload.rs`)
//!
//! ```text
//! <n nodes: len>
//!   n × ( <master ID: string of 16 bytes, BE ms + BE seq> <node: string = listpack> )
//! <length: len>  <last_id.ms: len> <last_id.seq: len>
//! [19+] <first_id.ms> <first_id.seq> <max_deleted_entry_id.ms> <.seq> <entries_added>
//! <n groups: len>
//!   n × ( <name: string> <last_id.ms: len> <last_id.seq: len>
//!         [19+] <entries_read: len, u64::MAX = unknown>
//!         <n pending: len>  n × ( <ID: 16 raw bytes> <delivery_time: ms time>
//!                                 <delivery_count: len> )            ID order
//!         <n consumers: len>
//!           n × ( <name: string> <seen_time: ms time> [21] <active_time: ms time>
//!                 <n owned: len> n × <ID: 16 raw bytes> )             name order
//!       )
//! ```
//!
//! A node (Redis `t_stream.c`) is a listpack of elements: the master entry, then one run
//! of elements per entry, each closed by its element count (`lp-count`) so the node can
//! be walked backwards:
//!
//! ```text
//! master: <count: live entries> <deleted> <num-fields> <field 1> ... <field N> <0>
//! entry:  <flags> <ms-diff> <seq-diff> <num-fields> <f1> <v1> ... <fN> <vN> <lp-count>
//!         lp-count = 2*N + 4 (flags, 2 diffs, num-fields, pairs)
//! entry with SAMEFIELDS (bit 1; its names are the master's, in order):
//!         <flags> <ms-diff> <seq-diff> <v1> ... <vN> <lp-count>   lp-count = N + 3
//! flags: bit 0 DELETED (a tombstone, still counted in <deleted>), bit 1 SAMEFIELDS
//! diffs: entry ms/seq minus the master ID's, as wrapping 64-bit integers
//! ```
//!
//! The first entry of a node is the one that made it: its ID is the master ID and its
//! field names are the master fields. streamd's own node format (`stream/listpack.rs`) is
//! different but has the same boundaries, tombstones and SAMEFIELDS decisions, so
//! nodes convert one for one in both directions.
//!
//! Everything read here is untrusted: every length is checked against the bytes left
//! before it is used (nothing is allocated from a length alone), and malformed input is
//! an [`RdbError`] with the offset of the problem, never a panic.

pub mod crc64;
pub mod file;
pub mod intset;
pub mod listpack;
pub mod lzf;
pub mod packed;
pub mod payload;
pub mod stream;
pub mod values;
pub mod ziplist;
pub mod zipmap;

use std::borrow::Cow;
use std::fmt;

/// RDB object types (`rdb.h`), by number.
pub mod types {
    /// A string.
    pub const STRING: u8 = 0;
    /// Stream, Redis 5.0–6.2.
    pub const STREAM_LISTPACKS: u8 = 15;
    /// Stream with first ID, max deleted ID, entries added and entries read (7.0).
    pub const STREAM_LISTPACKS_2: u8 = 19;
    /// Stream with consumers' active time (7.4).
    pub const STREAM_LISTPACKS_3: u8 = 21;
    /// Stream with idempotent-producer state (8.6).
    pub const STREAM_LISTPACKS_4: u8 = 26;
    /// Stream with NACKed pending entries (8.8).
    pub const STREAM_LISTPACKS_5: u8 = 27;
    /// Array (8.8), the newest type number Redis 8.8 writes.
    pub const ARRAY: u8 = 28;
    /// The newest type number streamd knows.
    pub const NEWEST: u8 = ARRAY;

    /// What a type number holds, for messages and the import's per-type counts.
    pub fn name(t: u8) -> &'static str {
        match t {
            0 => "string",
            1 | 10 | 14 | 18 => "list",
            2 | 11 | 20 => "set",
            3 | 5 | 12 | 17 => "zset",
            4 | 9 | 13 | 16 | 22..=25 => "hash",
            6 | 7 => "module",
            15 | 19 | 21 | 26 | 27 => "stream",
            28 => "array",
            _ => "unknown",
        }
    }
}

/// A malformed or unsupported RDB input: what is wrong and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdbError {
    /// Byte offset of the problem from the start of the input (file or payload).
    pub offset: u64,
    /// What is wrong.
    pub what: Cow<'static, str>,
}

impl fmt::Display for RdbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at offset {}", self.what, self.offset)
    }
}

impl std::error::Error for RdbError {}

/// Reads RDB primitives from a byte slice, tracking the offset for errors.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Offset of `buf[0]` in the whole input (for error messages).
    base: u64,
}

/// Decoded length or the special-encoding marker (`11EEEEEE`).
enum Len {
    Plain(u64),
    Encoded(u8),
}

impl<'a> Reader<'a> {
    /// A reader over `buf`, whose first byte is at offset `base` of the input.
    pub fn new(buf: &'a [u8], base: u64) -> Reader<'a> {
        Reader { buf, pos: 0, base }
    }

    /// Offset of the next byte in the whole input.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// An error at the current offset.
    pub fn err(&self, what: impl Into<Cow<'static, str>>) -> RdbError {
        self.err_at(self.pos, what)
    }

    fn err_at(&self, pos: usize, what: impl Into<Cow<'static, str>>) -> RdbError {
        RdbError {
            offset: self.base + pos as u64,
            what: what.into(),
        }
    }

    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], RdbError> {
        if n > self.remaining() {
            return Err(self.err(format!(
                "unexpected end of data: {n} bytes needed, {} left",
                self.remaining()
            )));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// One byte.
    pub fn u8(&mut self) -> Result<u8, RdbError> {
        Ok(self.bytes(1)?[0])
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], RdbError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.bytes(N)?);
        Ok(a)
    }

    fn len_or_enc(&mut self) -> Result<Len, RdbError> {
        let b = self.u8()?;
        Ok(match b >> 6 {
            0 => Len::Plain(u64::from(b & 0x3F)),
            1 => Len::Plain((u64::from(b & 0x3F) << 8) | u64::from(self.u8()?)),
            2 => match b {
                0x80 => Len::Plain(u64::from(u32::from_be_bytes(self.array()?))),
                0x81 => Len::Plain(u64::from_be_bytes(self.array()?)),
                _ => return Err(self.err_at(self.pos - 1, "invalid length encoding byte")),
            },
            _ => Len::Encoded(b & 0x3F),
        })
    }

    /// A length (`rdbLoadLen`).
    pub fn length(&mut self) -> Result<u64, RdbError> {
        let at = self.pos;
        match self.len_or_enc()? {
            Len::Plain(n) => Ok(n),
            Len::Encoded(_) => Err(self.err_at(at, "an encoded string where a length belongs")),
        }
    }

    /// A length used as a count or size in memory: must fit `usize`.
    pub fn length_usize(&mut self) -> Result<usize, RdbError> {
        let at = self.pos;
        let n = self.length()?;
        usize::try_from(n).map_err(|_| self.err_at(at, "length too large"))
    }

    /// A millisecond time (`rdbLoadMillisecondTime`): i64 LE.
    pub fn ms_time(&mut self) -> Result<i64, RdbError> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    /// A 16-byte raw stream ID (big-endian ms, seq), as PELs store them.
    pub fn raw_id(&mut self) -> Result<crate::stream::StreamId, RdbError> {
        let b: [u8; 16] = self.array()?;
        crate::stream::StreamId::from_key(&b).ok_or_else(|| self.err("bad stream ID"))
    }

    /// A string (`rdbGenericLoadStringObject`): plain, integer-encoded or LZF.
    pub fn string(&mut self) -> Result<Cow<'a, [u8]>, RdbError> {
        let at = self.pos;
        match self.len_or_enc()? {
            Len::Plain(n) => {
                let n = usize::try_from(n).map_err(|_| self.err_at(at, "string too long"))?;
                Ok(Cow::Borrowed(self.bytes(n)?))
            }
            Len::Encoded(0) => Ok(Cow::Owned(int_text(i64::from(self.u8()? as i8)))),
            Len::Encoded(1) => Ok(Cow::Owned(int_text(i64::from(i16::from_le_bytes(
                self.array()?,
            ))))),
            Len::Encoded(2) => Ok(Cow::Owned(int_text(i64::from(i32::from_le_bytes(
                self.array()?,
            ))))),
            Len::Encoded(3) => {
                let clen = self.length_usize()?;
                let ulen_at = self.pos;
                let ulen = self.length_usize()?;
                if ulen > clen.saturating_mul(lzf::MAX_RATIO).saturating_add(64) {
                    return Err(self.err_at(ulen_at, "LZF length larger than the data allows"));
                }
                let data_at = self.pos;
                let data = self.bytes(clen)?;
                lzf::decompress(data, ulen)
                    .map(Cow::Owned)
                    .map_err(|e| self.err_at(data_at, format!("bad LZF data ({e:?})")))
            }
            Len::Encoded(_) => Err(self.err_at(at, "unknown string encoding")),
        }
    }

    /// Skips a string without expanding it.
    pub fn skip_string(&mut self) -> Result<(), RdbError> {
        let at = self.pos;
        match self.len_or_enc()? {
            Len::Plain(n) => {
                let n = usize::try_from(n).map_err(|_| self.err_at(at, "string too long"))?;
                self.bytes(n).map(drop)
            }
            Len::Encoded(0) => self.bytes(1).map(drop),
            Len::Encoded(1) => self.bytes(2).map(drop),
            Len::Encoded(2) => self.bytes(4).map(drop),
            Len::Encoded(3) => {
                let clen = self.length_usize()?;
                self.length()?;
                self.bytes(clen).map(drop)
            }
            Len::Encoded(_) => Err(self.err_at(at, "unknown string encoding")),
        }
    }
}

fn int_text(v: i64) -> Vec<u8> {
    itoa::Buffer::new().format(v).as_bytes().to_vec()
}

/// Appends RDB primitives to a buffer.
pub mod write {
    /// A length (`rdbSaveLen`), in its smallest form.
    pub fn len(out: &mut Vec<u8>, n: u64) {
        if n < 1 << 6 {
            out.push(n as u8);
        } else if n < 1 << 14 {
            out.push(0x40 | (n >> 8) as u8);
            out.push((n & 0xff) as u8);
        } else if let Ok(n32) = u32::try_from(n) {
            out.push(0x80);
            out.extend_from_slice(&n32.to_be_bytes());
        } else {
            out.push(0x81);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }

    /// A plain string: length then bytes (always valid for `rdbGenericLoadStringObject`;
    /// integer and LZF forms are optional for writers).
    pub fn string(out: &mut Vec<u8>, s: &[u8]) {
        len(out, s.len() as u64);
        out.extend_from_slice(s);
    }

    /// A millisecond time.
    pub fn ms_time(out: &mut Vec<u8>, t: i64) {
        out.extend_from_slice(&t.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_round_trip_in_every_form() {
        for n in [
            0u64,
            63,
            64,
            16383,
            16384,
            u32::MAX as u64,
            u32::MAX as u64 + 1,
            u64::MAX,
        ] {
            let mut b = Vec::new();
            write::len(&mut b, n);
            let mut r = Reader::new(&b, 0);
            assert_eq!(r.length(), Ok(n));
            assert_eq!(r.remaining(), 0);
        }
    }

    #[test]
    fn integer_and_lzf_strings_decode() {
        let mut r = Reader::new(&[0xC0, 0xFE, 0xC1, 0x00, 0x80, 0xC2, 1, 0, 0, 0x80], 0);
        assert_eq!(r.string().unwrap().as_ref(), b"-2");
        assert_eq!(r.string().unwrap().as_ref(), b"-32768");
        assert_eq!(r.string().unwrap().as_ref(), b"-2147483647");
        // LZF: clen 5, len 22: 'a' then a 21-byte back reference.
        let mut r = Reader::new(&[0xC3, 5, 22, 0x00, b'a', 0xE0, 12, 0x00], 0);
        assert_eq!(r.string().unwrap().as_ref(), &[b'a'; 22][..]);
    }

    #[test]
    fn lying_lengths_are_refused_with_the_offset() {
        let mut r = Reader::new(&[0x81, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], 100);
        let e = r.string().unwrap_err();
        assert!(e.offset >= 100, "{e}");
        let mut r = Reader::new(&[0x05, b'a'], 7);
        assert_eq!(r.string().unwrap_err().offset, 8);
        // LZF claiming 1 GB out of 2 bytes.
        let mut r = Reader::new(&[0xC3, 2, 0x80, 0x40, 0, 0, 0, 0, 0], 0);
        assert!(r.string().is_err());
    }
}
