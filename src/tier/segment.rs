//! Segment files: append-only files of whole stream nodes, the bytes of cold listpack
//! nodes that no longer live in memory.
//!
//! ```text
//! <dir>/tier/seg-000000000000002a.sdt      segment 42 (the number in 16 lower-case hex digits)
//!
//! +----------------+----------+----------+-----+----------+----------------+
//! | segment header | record 0 | record 1 | ... | record N | seal (sealed   |
//! | 32 bytes       |          |          |     |          | segments only) |
//! +----------------+----------+----------+-----+----------+----------------+
//!  0                32                                     data_end         data_end + 28
//!
//! segment header
//! +----------+------------+----------+-------------+---------------------------------+
//! | magic    | version    | flags    | segment     | crc                             |
//! | STRMSEGF | u32 LE = 1 | u32 LE 0 | u64 LE      | u64 LE, CRC-64/XZ of bytes 0..24|
//! +----------+------------+----------+-------------+---------------------------------+
//!  0          8            12         16            24                              32
//!
//! record (at offset o >= 32; RECORD_OVERHEAD = 52 bytes around the node)
//! +---------+----------+-----------------+-----------------+-----------+-------------+
//! | length  | stream   | first           | last            | node      | crc         |
//! | u32 LE  | u64 LE   | ms BE | seq BE  | ms BE | seq BE  | `length`  | u64 LE      |
//! +---------+----------+-----------------+-----------------+-----------+-------------+
//!  o         o+4        o+12              o+28              o+44        o+44+length
//!   length = node bytes, at least MIN_NODE_LEN (12, a listpack header)
//!   stream = the caller's opaque id of the node's stream
//!   first  = the node's master ID (its key in the stream's rax, what decoding it needs)
//!   last   = the node's last entry ID
//!   crc    = CRC-64/XZ of bytes o .. o+44+length (everything in the record before it)
//!
//! seal (written once, at data_end, when the segment reaches its size limit)
//! +------------+-------------+-------------+----------------------------------+
//! | 0xFFFFFFFF | records     | data_end    | crc                              |
//! | u32 LE     | u64 LE      | u64 LE      | u64 LE, CRC-64/XZ of bytes 0..20 |
//! +------------+-------------+-------------+----------------------------------+
//!  0            4             12            20                                 28
//! ```
//!
//! Integers are little-endian except the two IDs, which are the 16-byte big-endian keys
//! of `StreamId::to_key` (byte order is ID order, as in the rax). The node bytes are
//! opaque here: they are whatever `Listpack::as_bytes` gave, and whoever reads them back
//! checks them with `Listpack::from_bytes` (the CRC proves the bytes are what was
//! written, not that the writer was right).
//!
//! Invariants: records are contiguous from offset 32 to `data_end`; a sealed segment is
//! never written again and its length is exactly `data_end + 28`; a segment without a
//! seal is the one being appended to (or was, when the process died), so its tail may
//! be torn. No record is longer than fits in a segment whose offsets are u32
//! ([`MAX_NODE_LEN`]). The seal's first word can never be a record length (a record of
//! 4 GiB does not fit), so a reader at `data_end` tells a seal from a record.
//!
//! A [`Location`] (tier/mod.rs) names one record: segment, offset, node length and the
//! record's CRC, so [`read_record`] can check that the bytes it finds are the ones the
//! caller expects, not just some valid record.

use super::{ColdNode, Location, TierError};
use crate::stream::StreamId;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The segment file's magic bytes.
pub const MAGIC: &[u8; 8] = b"STRMSEGF";

/// The format version this build writes and reads.
pub const VERSION: u32 = 1;

/// Size of the segment header; the first record starts here.
pub const HEADER_LEN: u64 = 32;

/// Bytes of a record before the node: length, stream, first, last.
pub const RECORD_HEADER_LEN: usize = 44;

/// Bytes a record adds to its node: the header and the trailing CRC.
pub const RECORD_OVERHEAD: usize = RECORD_HEADER_LEN + 8;

/// Size of the seal.
pub const SEAL_LEN: u64 = 28;

/// The seal's first word (where a record would have its length).
pub const SEAL_MARKER: u32 = u32::MAX;

/// The shortest node a record may carry: a listpack's fixed header.
pub const MIN_NODE_LEN: usize = 12;

/// The longest node a record may carry: alone in a segment, the record and the seal
/// must still end at an offset that fits a u32 (Location offsets are u32).
pub const MAX_NODE_LEN: usize =
    u32::MAX as usize - HEADER_LEN as usize - RECORD_OVERHEAD - SEAL_LEN as usize;

/// Default size at which a segment is sealed: 64 MiB (a setting later).
pub const SEGMENT_MAX_BYTES: u64 = 64 << 20;

/// The file name of segment `n`: `seg-<16 hex digits>.sdt`.
pub fn file_name(n: u64) -> String {
    format!("seg-{n:016x}.sdt")
}

/// The segment number in a file name made by [`file_name`]; `None` for anything else.
pub fn parse_file_name(name: &str) -> Option<u64> {
    let hex = name.strip_prefix("seg-")?.strip_suffix(".sdt")?;
    if hex.len() != 16 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// CRC-64/XZ (what `crc64fast` computes; check value `0x995dc9bbdf1939fa`).
pub fn crc64(parts: &[&[u8]]) -> u64 {
    let mut d = crc64fast::Digest::new();
    for p in parts {
        d.write(p);
    }
    d.sum64()
}

/// Size on disk of a record carrying `node_len` node bytes.
pub fn record_size(node_len: u32) -> u64 {
    u64::from(node_len) + RECORD_OVERHEAD as u64
}

/// The header of segment `n`.
pub fn encode_header(n: u64) -> [u8; HEADER_LEN as usize] {
    let mut h = [0u8; HEADER_LEN as usize];
    h[0..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&0u32.to_le_bytes());
    h[16..24].copy_from_slice(&n.to_le_bytes());
    let crc = crc64(&[&h[0..24]]);
    h[24..32].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Checks a segment header read from the file of segment `n`; the reason if it is bad.
pub fn check_header(h: &[u8], n: u64) -> Result<(), &'static str> {
    if h.len() < HEADER_LEN as usize {
        return Err("shorter than a segment header");
    }
    if &h[0..8] != MAGIC {
        return Err("not a segment file (bad magic)");
    }
    if crc64(&[&h[0..24]]) != le_u64(&h[24..32]) {
        return Err("segment header CRC-64 mismatch");
    }
    if le_u32(&h[8..12]) != VERSION {
        return Err("unsupported segment format version");
    }
    if le_u64(&h[16..24]) != n {
        return Err("segment number in the header differs from the file name");
    }
    Ok(())
}

/// Appends one record to `out`; returns its CRC. `node.len()` must lie within
/// [`MIN_NODE_LEN`]`..=`[`MAX_NODE_LEN`] (the store checks it first).
pub fn encode_record(
    out: &mut Vec<u8>,
    stream: u64,
    first: StreamId,
    last: StreamId,
    node: &[u8],
) -> u64 {
    let len = u32::try_from(node.len()).expect("the store checks MAX_NODE_LEN first");
    let start = out.len();
    out.reserve(node.len() + RECORD_OVERHEAD);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&stream.to_le_bytes());
    out.extend_from_slice(&first.to_key());
    out.extend_from_slice(&last.to_key());
    out.extend_from_slice(node);
    let crc = crc64(&[&out[start..]]);
    out.extend_from_slice(&crc.to_le_bytes());
    crc
}

/// The seal of a segment holding `records` records that end at `data_end`.
pub fn encode_seal(records: u64, data_end: u64) -> [u8; SEAL_LEN as usize] {
    let mut s = [0u8; SEAL_LEN as usize];
    s[0..4].copy_from_slice(&SEAL_MARKER.to_le_bytes());
    s[4..12].copy_from_slice(&records.to_le_bytes());
    s[12..20].copy_from_slice(&data_end.to_le_bytes());
    let crc = crc64(&[&s[0..20]]);
    s[20..28].copy_from_slice(&crc.to_le_bytes());
    s
}

/// What a seal says: `(records, data_end)`, if `s` is a whole, valid seal.
pub fn decode_seal(s: &[u8]) -> Option<(u64, u64)> {
    if s.len() != SEAL_LEN as usize
        || le_u32(&s[0..4]) != SEAL_MARKER
        || crc64(&[&s[0..20]]) != le_u64(&s[20..28])
    {
        return None;
    }
    Some((le_u64(&s[4..12]), le_u64(&s[12..20])))
}

/// The fields of a record header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    /// Node bytes.
    pub len: u32,
    /// The caller's stream id.
    pub stream: u64,
    /// The node's master ID.
    pub first: StreamId,
    /// The node's last entry ID.
    pub last: StreamId,
}

impl RecordHeader {
    /// Decodes the first [`RECORD_HEADER_LEN`] bytes of `b` (which must hold them).
    pub fn decode(b: &[u8]) -> RecordHeader {
        let id = |o: usize| StreamId::new(be_u64(&b[o..o + 8]), be_u64(&b[o + 8..o + 16]));
        RecordHeader {
            len: le_u32(&b[0..4]),
            stream: le_u64(&b[4..12]),
            first: id(12),
            last: id(28),
        }
    }

    /// True when the header could start a record: a node length in range and
    /// `first <= last` (cheap checks made before computing a CRC).
    pub fn plausible(&self) -> bool {
        (MIN_NODE_LEN..=MAX_NODE_LEN).contains(&(self.len as usize)) && self.first <= self.last
    }
}

/// Checks a whole record in `rec` (header, node, CRC: exactly [`record_size`] bytes):
/// its CRC if the header is plausible. Returns the header and the stored CRC.
pub fn check_record(rec: &[u8]) -> Result<(RecordHeader, u64), &'static str> {
    if rec.len() < RECORD_OVERHEAD {
        return Err("shorter than a record");
    }
    let h = RecordHeader::decode(rec);
    if !h.plausible() {
        return Err("impossible record header (node length or first/last IDs)");
    }
    if rec.len() as u64 != record_size(h.len) {
        return Err("record length does not match its frame");
    }
    let body = rec.len() - 8;
    let stored = le_u64(&rec[body..]);
    if crc64(&[&rec[..body]]) != stored {
        return Err("record CRC-64 mismatch");
    }
    Ok((h, stored))
}

/// Reads the record `loc` names from `file` and checks it completely: the record's own
/// CRC, and that its length and CRC are the ones `loc` expects (so a stale or made-up
/// location never yields another record's bytes). Never panics on any file content.
pub fn read_record(file: &File, path: &Path, loc: Location) -> Result<ColdNode, TierError> {
    let size = record_size(loc.len);
    let mut buf = vec![
        0u8;
        usize::try_from(size).map_err(|_| TierError::InvalidNode {
            len: size,
            why: "larger than this machine's address space",
        })?
    ];
    read_exact_at(file, path, &mut buf, u64::from(loc.offset))?;
    decode_node(buf, path, loc)
}

/// Fills `buf` from `file` at `offset`; a file that ends first is damage at `offset`.
pub fn read_exact_at(
    file: &File,
    path: &Path,
    buf: &mut [u8],
    offset: u64,
) -> Result<(), TierError> {
    file.read_exact_at(buf, offset).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            TierError::Corrupt {
                path: path.to_path_buf(),
                offset,
                why: "the file ends inside the record",
            }
        } else {
            TierError::io("reading a record", path, e)
        }
    })
}

/// Checks a record read for `loc` (see [`read_record`]) and turns it into its node.
pub fn decode_node(mut buf: Vec<u8>, path: &Path, loc: Location) -> Result<ColdNode, TierError> {
    let corrupt = |why| TierError::Corrupt {
        path: path.to_path_buf(),
        offset: u64::from(loc.offset),
        why,
    };
    let (h, crc) = check_record(&buf).map_err(corrupt)?;
    if h.len != loc.len || crc != loc.crc {
        return Err(corrupt("the record is not the one the location names"));
    }
    buf.truncate(buf.len() - 8);
    buf.drain(..RECORD_HEADER_LEN);
    Ok(ColdNode {
        stream: h.stream,
        first: h.first,
        last: h.last,
        node: buf,
    })
}

/// What [`scan`] found in a run of records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    /// Whole, valid records from the start up to `good_end`.
    pub records: u64,
    /// Offset just past the last valid record (where the next one would start).
    pub good_end: u64,
    /// The first bad frame after them: its offset and what is wrong; `None` when the
    /// records run exactly to the end.
    pub bad: Option<(u64, &'static str)>,
    /// With `bad`: true when no valid record starts anywhere after it (a torn tail,
    /// which a crash mid-write leaves), false when one does (damage in the middle).
    pub torn: bool,
}

/// Reads records from `start` to `end` of `file`, checking each CRC, in one sequential
/// pass through a 1 MiB buffer (no whole-file read). Calls `each(offset, header, crc)`
/// for every valid record. At the first bad frame, with `find_torn`, it looks for any
/// valid record after it to tell a torn tail from damage (`Scan::torn`; without it
/// `torn` is false: a sealed segment has no tail to tear). That search tries every later
/// offset but computes a CRC only where a header is plausible and its record fits before
/// `end`: cheap for what a crash leaves (zeros, or a prefix of a real record), costly
/// only for a long tail of random garbage.
pub fn scan(
    file: &File,
    path: &Path,
    start: u64,
    end: u64,
    find_torn: bool,
    mut each: impl FnMut(u64, &RecordHeader, u64),
) -> Result<Scan, TierError> {
    let mut reader = Window::new(file, path, end);
    let mut off = start;
    let mut records = 0u64;
    loop {
        if off == end {
            return Ok(Scan {
                records,
                good_end: off,
                bad: None,
                torn: false,
            });
        }
        match reader.record_at(off)? {
            Ok((h, crc)) => {
                each(off, &h, crc);
                records += 1;
                off += record_size(h.len);
            }
            Err(why) => {
                let torn = find_torn && !reader.any_record_after(off + 1)?;
                return Ok(Scan {
                    records,
                    good_end: off,
                    bad: Some((off, why)),
                    torn,
                });
            }
        }
    }
}

/// Reads the records from `from` on, in file order, until `end` or until they add up to
/// at least `max_bytes` (always at least one record when `from < end`), checking each
/// CRC. Returns `(offset, header, crc, node)` for each and the offset after the last; a
/// bad frame is an error naming its offset (a sealed segment has no torn tail).
#[allow(clippy::type_complexity)]
pub fn read_records(
    file: &File,
    path: &Path,
    from: u64,
    end: u64,
    max_bytes: u64,
) -> Result<(Vec<(u64, RecordHeader, u64, Vec<u8>)>, u64), TierError> {
    let mut reader = Window::new(file, path, end);
    let mut off = from;
    let mut out = Vec::new();
    let mut bytes = 0u64;
    while off < end && (out.is_empty() || bytes < max_bytes) {
        let (h, crc) = reader.record_at(off)?.map_err(|why| TierError::Corrupt {
            path: path.to_path_buf(),
            offset: off,
            why,
        })?;
        let node = reader
            .get(off + RECORD_HEADER_LEN as u64, h.len as usize)?
            .to_vec();
        out.push((off, h, crc, node));
        bytes += record_size(h.len);
        off += record_size(h.len);
    }
    Ok((out, off))
}

/// A sequential reader over `file[..end]` that keeps one window of it in memory.
struct Window<'a> {
    file: &'a File,
    path: &'a Path,
    end: u64,
    /// File offset of `buf[0]`.
    base: u64,
    buf: Vec<u8>,
}

/// Bytes read per refill of a [`Window`].
const WINDOW: usize = 1 << 20;

impl<'a> Window<'a> {
    fn new(file: &'a File, path: &'a Path, end: u64) -> Window<'a> {
        Window {
            file,
            path,
            end,
            base: 0,
            buf: Vec::new(),
        }
    }

    /// `file[off..off + len]` (clamped to `end`), reading when the window misses it.
    fn get(&mut self, off: u64, len: usize) -> Result<&[u8], TierError> {
        let want_end = (off + len as u64).min(self.end);
        if off < self.base || want_end > self.base + self.buf.len() as u64 {
            let n = ((self.end - off) as usize).min(len.max(WINDOW));
            self.buf.resize(n, 0);
            self.file
                .read_exact_at(&mut self.buf, off)
                .map_err(|e| TierError::io("reading a segment", self.path, e))?;
            self.base = off;
        }
        let s = (off - self.base) as usize;
        Ok(&self.buf[s..s + (want_end - off) as usize])
    }

    /// The record at `off`, checked; `Err(why)` when the frame there is not one.
    fn record_at(
        &mut self,
        off: u64,
    ) -> Result<Result<(RecordHeader, u64), &'static str>, TierError> {
        let head = self.get(off, RECORD_HEADER_LEN)?;
        if head.len() < RECORD_HEADER_LEN {
            return Ok(Err("the file ends inside a record header"));
        }
        let h = RecordHeader::decode(head);
        if !h.plausible() {
            return Ok(Err(
                "impossible record header (node length or first/last IDs)",
            ));
        }
        let size = record_size(h.len);
        if off + size > self.end {
            return Ok(Err("the file ends inside a record"));
        }
        let rec = self.get(off, size as usize)?;
        Ok(check_record(rec))
    }

    /// True if a valid record starts at any offset from `from` on. Offsets whose header
    /// is implausible cost a few compares; only plausible ones are CRC-checked.
    fn any_record_after(&mut self, from: u64) -> Result<bool, TierError> {
        let mut off = from;
        while off + RECORD_OVERHEAD as u64 <= self.end {
            if let Ok(_found) = self.record_at(off)? {
                return Ok(true);
            }
            off += 1;
        }
        Ok(false)
    }
}

fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b[..4].try_into().expect("4 bytes"))
}

fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
}

fn be_u64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b[..8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc64fast_computes_crc64_xz() {
        assert_eq!(crc64(&[b"123456789"]), 0x995d_c9bb_df19_39fa);
        assert_eq!(crc64(&[b"1234", b"56789"]), 0x995d_c9bb_df19_39fa);
    }

    #[test]
    fn file_names_round_trip_and_others_are_ignored() {
        assert_eq!(file_name(42), "seg-000000000000002a.sdt");
        assert_eq!(parse_file_name(&file_name(42)), Some(42));
        assert_eq!(parse_file_name(&file_name(u64::MAX)), Some(u64::MAX));
        for bad in [
            "seg-2a.sdt",
            "seg-000000000000002A.sdt",
            "seg-000000000000002a.tmp",
            "x",
        ] {
            assert_eq!(parse_file_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn header_is_pinned_and_checked() {
        let h = encode_header(7);
        assert_eq!(&h[..16], b"STRMSEGF\x01\0\0\0\0\0\0\0");
        assert_eq!(&h[16..24], &7u64.to_le_bytes());
        assert_eq!(check_header(&h, 7), Ok(()));
        assert!(check_header(&h, 8).is_err());
        let mut bad = h;
        bad[12] = 1;
        assert_eq!(check_header(&bad, 7), Err("segment header CRC-64 mismatch"));
        assert!(check_header(&h[..31], 7).is_err());
    }

    #[test]
    fn record_layout_is_as_drawn() {
        let mut out = Vec::new();
        let node = [9u8; 12];
        let first = StreamId::new(1, 2);
        let last = StreamId::new(3, 4);
        let crc = encode_record(&mut out, 0x0102, first, last, &node);
        assert_eq!(out.len() as u64, record_size(12));
        assert_eq!(&out[0..4], &12u32.to_le_bytes());
        assert_eq!(&out[4..12], &0x0102u64.to_le_bytes());
        assert_eq!(&out[12..28], &first.to_key());
        assert_eq!(&out[28..44], &last.to_key());
        assert_eq!(&out[44..56], &node);
        assert_eq!(&out[56..64], &crc.to_le_bytes());
        assert_eq!(crc, crc64(&[&out[..56]]));
        let (h, c) = check_record(&out).expect("valid");
        assert_eq!(
            (h.len, h.stream, h.first, h.last, c),
            (12, 0x0102, first, last, crc)
        );
    }

    #[test]
    fn seal_round_trips_and_is_never_a_record() {
        let s = encode_seal(3, 1234);
        assert_eq!(decode_seal(&s), Some((3, 1234)));
        assert!(!RecordHeader::decode(&[s.as_slice(), &[0u8; 16]].concat()).plausible());
        let mut bad = s;
        bad[5] ^= 1;
        assert_eq!(decode_seal(&bad), None);
    }

    #[test]
    fn every_flipped_bit_of_a_record_is_detected() {
        let mut out = Vec::new();
        encode_record(
            &mut out,
            1,
            StreamId::new(1, 0),
            StreamId::new(2, 0),
            &[5u8; 20],
        );
        for i in 0..out.len() * 8 {
            let mut b = out.clone();
            b[i / 8] ^= 1 << (i % 8);
            assert!(check_record(&b).is_err(), "bit {i}");
        }
    }
}
