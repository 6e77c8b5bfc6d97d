//! Effect records: the framing shared by the log and the snapshot, and the RESP payload.
//!
//! ```text
//! +---------------+-----------------------+------------------------------------------+
//! | length u32 LE | CRC-64/XZ u64 LE      | payload (length bytes)                   |
//! | payload bytes | of the payload bytes  | *3\r\n$4\r\nXDEL\r\n$1\r\ns\r\n$3\r\n1-1\r\n |
//! +---------------+-----------------------+------------------------------------------+
//!   0..4            4..12                   12..12+length
//! ```
//!
//! The payload is the RESP2 array encoding of one effect command (an array of bulk
//! strings, exactly what a client would send), so a record can be replayed through the
//! normal command path and read with `strings`. CRC-64/XZ is what `crc64fast` computes
//! (check value of `"123456789"`: `0x995dc9bbdf1939fa`, pinned by a test).
//!
//! Decoding distinguishes three outcomes at an offset: a whole record, an incomplete
//! frame (the bytes end inside it: a torn write if it is the file's last frame), and a
//! corrupt one (CRC mismatch or a payload that is not a RESP array of bulk strings). The
//! caller decides what an incomplete or corrupt frame means at that position
//! (`load.rs`): only the last frame of the newest log may be cut.

use bytes::Bytes;
use std::io;

/// Where whole records go, one at a time: a snapshot being written (`snapshot.rs`
/// `SnapshotWriter`). What writes a stream's group and IDMP records (`groups.rs`,
/// `idmp.rs`) needs only this, not the snapshot file around the records.
pub trait RecordSink {
    /// Appends one record carrying the RESP array of `argv`.
    fn record<A: AsRef<[u8]>>(&mut self, argv: &[A]) -> io::Result<()>;
}

/// Bytes before the payload: length (4) and CRC (8).
pub const HEADER_LEN: usize = 12;

/// Shortest valid payload: `*1\r\n$0\r\n\r\n` is 10 bytes; anything shorter is garbage
/// (in particular a run of zero bytes, whose CRC is 0, never passes for a record).
pub const MIN_PAYLOAD_LEN: usize = 10;

/// The CRC-64/XZ check value: the CRC of the ASCII bytes `123456789`.
pub const CRC64_XZ_CHECK: u64 = 0x995d_c9bb_df19_39fa;

/// CRC-64/XZ of `data` (the `crc64fast` crate).
pub fn crc64(data: &[u8]) -> u64 {
    let mut d = crc64fast::Digest::new();
    d.write(data);
    d.sum64()
}

/// Appends one framed record carrying the RESP array of `argv` to `out`.
pub fn encode<A: AsRef<[u8]>>(out: &mut Vec<u8>, argv: &[A]) {
    let start = begin(out);
    crate::resp::writer::command(out, argv);
    finish(out, start);
}

/// Starts a record at the end of `out`: reserves its header and returns where it
/// starts, for [`finish`] once the payload is appended.
#[inline]
pub fn begin(out: &mut Vec<u8>) -> usize {
    let start = out.len();
    out.extend_from_slice(&[0u8; HEADER_LEN]);
    start
}

/// Completes the record [`begin`] started at `start`: writes the length and CRC of
/// the payload appended since.
#[inline]
pub fn finish(out: &mut [u8], start: usize) {
    let payload_len = out.len() - start - HEADER_LEN;
    let len = u32::try_from(payload_len)
        .expect("a record payload is below 4 GiB (XADD caps elements at 1 GiB)");
    let crc = crc64(&out[start + HEADER_LEN..]);
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    out[start + 4..start + HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
}

/// What [`decode`] found at the start of a buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A whole record: its payload range in the buffer and its total size.
    Record {
        /// Payload bytes: `buf[HEADER_LEN..size]`.
        payload_len: usize,
        /// Header plus payload.
        size: usize,
    },
    /// The buffer ends inside the frame; `needed` is the frame's total size if its
    /// header was complete.
    Incomplete {
        /// Total size the header announces, if the header is complete.
        needed: Option<usize>,
    },
    /// The frame is complete but its CRC does not match or its length is impossible.
    Corrupt(&'static str),
}

/// Reads the frame at the start of `buf` (CRC checked, payload not parsed).
pub fn decode(buf: &[u8]) -> Frame {
    decode_with(buf, true)
}

/// [`decode`], optionally trusting the record CRC (a snapshot whose whole-file CRC was
/// verified first).
pub fn decode_with(buf: &[u8], check_crc: bool) -> Frame {
    if buf.len() < HEADER_LEN {
        return Frame::Incomplete { needed: None };
    }
    let len = u32::from_le_bytes(buf[0..4].try_into().expect("4 bytes")) as usize;
    let crc = u64::from_le_bytes(buf[4..12].try_into().expect("8 bytes"));
    if len < MIN_PAYLOAD_LEN {
        return Frame::Corrupt("record length too small");
    }
    let size = HEADER_LEN + len;
    if buf.len() < size {
        return Frame::Incomplete { needed: Some(size) };
    }
    if check_crc && crc64(&buf[HEADER_LEN..size]) != crc {
        return Frame::Corrupt("CRC-64 mismatch");
    }
    Frame::Record {
        payload_len: len,
        size,
    }
}

/// Parses a payload (a RESP array of bulk strings, nothing after it) into its
/// arguments, as slices of `payload`.
pub fn parse_payload(payload: &Bytes) -> Result<Vec<Bytes>, &'static str> {
    let p = &payload[..];
    let mut pos = 0;
    let count = read_len(p, &mut pos, b'*')?;
    if count == 0 {
        return Err("empty command");
    }
    // Each argument takes at least 6 bytes ("$0\r\n\r\n"): bound the allocation.
    if count > p.len() / 6 {
        return Err("argument count larger than the record");
    }
    let mut argv = Vec::with_capacity(count);
    for _ in 0..count {
        let len = read_len(p, &mut pos, b'$')?;
        let end = pos.checked_add(len).ok_or("bulk length overflows")?;
        if end + 2 > p.len() || &p[end..end + 2] != b"\r\n" {
            return Err("bulk string not terminated by CRLF");
        }
        argv.push(payload.slice(pos..end));
        pos = end + 2;
    }
    if pos != p.len() {
        return Err("bytes after the command");
    }
    Ok(argv)
}

/// Reads `<prefix><decimal>\r\n` at `*pos`.
fn read_len(p: &[u8], pos: &mut usize, prefix: u8) -> Result<usize, &'static str> {
    if p.get(*pos) != Some(&prefix) {
        return Err(if prefix == b'*' {
            "payload is not a RESP array"
        } else {
            "argument is not a RESP bulk string"
        });
    }
    let start = *pos + 1;
    let nl = memchr::memchr(b'\r', &p[start..]).ok_or("length line not terminated")? + start;
    if p.get(nl + 1) != Some(&b'\n') || nl == start || nl - start > 19 {
        return Err("malformed length line");
    }
    let mut n: usize = 0;
    for &c in &p[start..nl] {
        if !c.is_ascii_digit() {
            return Err("malformed length");
        }
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add(usize::from(c - b'0')))
            .ok_or("length overflows")?;
    }
    *pos = nl + 2;
    Ok(n)
}

/// Human-readable form of a command for messages: `XADD s 1-1 f v` (lossy, truncated).
pub fn display_argv(argv: &[Bytes]) -> String {
    let mut s = String::new();
    for (i, a) in argv.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(&String::from_utf8_lossy(&a[..a.len().min(64)]));
        if s.len() > 200 {
            s.push_str("...");
            break;
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc64fast_computes_crc64_xz() {
        assert_eq!(crc64(b"123456789"), CRC64_XZ_CHECK);
        assert_eq!(crc64(b""), 0);
    }

    #[test]
    fn encode_then_decode_round_trips() {
        let mut buf = Vec::new();
        encode(&mut buf, &[&b"XADD"[..], b"s", b"1-1", b"f", b""]);
        let first = buf.len();
        encode(&mut buf, &["DEL", "s"]);
        let Frame::Record { payload_len, size } = decode(&buf) else {
            panic!("not a record");
        };
        assert_eq!(size, first);
        let payload = Bytes::copy_from_slice(&buf[HEADER_LEN..HEADER_LEN + payload_len]);
        assert_eq!(
            &payload[..],
            b"*5\r\n$4\r\nXADD\r\n$1\r\ns\r\n$3\r\n1-1\r\n$1\r\nf\r\n$0\r\n\r\n"
        );
        let argv = parse_payload(&payload).unwrap();
        assert_eq!(argv, vec!["XADD", "s", "1-1", "f", ""]);
        assert!(matches!(decode(&buf[first..]), Frame::Record { .. }));
    }

    /// The example in docs/format.md, byte for byte.
    #[test]
    fn the_documented_example_log_is_what_we_write() {
        let mut buf = Vec::new();
        encode(&mut buf, &["SELECT", "0"]);
        encode(&mut buf, &["XADD", "s", "1-1", "f", "v"]);
        let hex: String = buf.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "170000004f6a8400e38e26e22a320d0a24360d0a53454c4543540d0a24310d0a300d0a\
             2c00000004438a98343401 7e2a350d0a24340d0a584144440d0a24310d0a730d0a\
             24330d0a312d310d0a24310d0a660d0a24310d0a760d0a"
                .replace(' ', "")
        );
        assert_eq!(crc64(&buf[12..35]), 0xe226_8ee3_0084_6a4f);
        assert_eq!(crc64(&buf[47..]), 0x7e01_3434_988a_4304);
    }

    #[test]
    fn header_is_length_then_crc_little_endian() {
        let mut buf = Vec::new();
        encode(&mut buf, &["PING"]);
        let payload = &buf[HEADER_LEN..];
        assert_eq!(&buf[0..4], &(payload.len() as u32).to_le_bytes());
        assert_eq!(&buf[4..12], &crc64(payload).to_le_bytes());
    }

    #[test]
    fn every_truncation_is_incomplete_and_every_bit_flip_is_caught() {
        let mut buf = Vec::new();
        encode(
            &mut buf,
            &["XADD", "stream", "1700000000000-0", "field", "value"],
        );
        for cut in 0..buf.len() {
            assert!(
                matches!(decode(&buf[..cut]), Frame::Incomplete { .. }),
                "cut {cut}"
            );
        }
        for byte in 0..buf.len() {
            for bit in 0..8 {
                let mut b = buf.clone();
                b[byte] ^= 1 << bit;
                match decode(&b) {
                    Frame::Record { payload_len, .. } => {
                        // Only possible if the flip hit the length and made it shorter
                        // with a matching CRC: never for CRC-64.
                        panic!("flip at {byte}.{bit} accepted ({payload_len})");
                    }
                    Frame::Incomplete { .. } | Frame::Corrupt(_) => {}
                }
            }
        }
    }

    #[test]
    fn zeros_are_never_a_record() {
        assert!(matches!(decode(&[0u8; 64]), Frame::Corrupt(_)));
    }

    #[test]
    fn malformed_payloads_are_refused() {
        for bad in [
            &b"*0\r\n"[..],
            b"+OK\r\n",
            b"*1\r\n$3\r\nab\r\n",
            b"*1\r\n$2\r\nab\r\nX",
            b"*2\r\n$2\r\nab\r\n",
            b"*1\r\n$-1\r\n",
            b"*99999999999999999999\r\n",
        ] {
            assert!(
                parse_payload(&Bytes::copy_from_slice(bad)).is_err(),
                "{bad:?}"
            );
        }
    }
}
