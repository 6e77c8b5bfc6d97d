//! Stream IDs: `<ms>-<seq>`, two unsigned 64-bit integers (Redis: `streamID`).
//!
//! Parsing follows `t_stream.c` exactly (reference §1.1): each number goes through
//! Redis's `string2ull` (strict `string2ll` first, then C `strtoull` as a fallback, which
//! accepts leading whitespace, `+` and leading zeros and wraps negative values), the
//! argument may be at most 127 bytes, and parsing stops at an embedded NUL byte as the
//! C code does. Which parser an argument uses (strict or not, `-`/`+`, `*`, `(`) is the
//! caller's choice, through the functions below.
//!
//! The 16-byte key encoding is `ms` then `seq`, both big-endian:
//!
//! ```text
//! +----------------------+----------------------+
//! | ms  (u64 big-endian) | seq (u64 big-endian) |
//! +----------------------+----------------------+
//!   bytes 0..8             bytes 8..16
//! ```
//!
//! so that comparing keys byte by byte orders them exactly as the IDs compare
//! numerically; the radix trees of the stream index and the PELs rely on this.

use crate::error::ReplyError;
use std::fmt;

/// A stream entry ID (Redis: `streamID`). Ordered by `ms`, then `seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StreamId {
    /// Milliseconds part.
    pub ms: u64,
    /// Sequence part.
    pub seq: u64,
}

/// Longest argument the ID parser accepts (Redis parses into a 128-byte buffer).
const STREAM_ID_MAX_ARG_LEN: usize = 127;

/// The ID requested by an XADD: generated, half-generated or explicit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XAddId {
    /// `*`: fully auto-generated.
    Auto,
    /// `<ms>-*`: the ms part given, the sequence generated.
    AutoSeq(u64),
    /// An explicit ID (`<ms>` means `<ms>-0`).
    Explicit(StreamId),
}

impl StreamId {
    /// `0-0`, the smallest ID (never a valid entry ID).
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    /// `18446744073709551615-18446744073709551615`.
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    /// Builds an ID from its two parts.
    pub const fn new(ms: u64, seq: u64) -> Self {
        StreamId { ms, seq }
    }

    /// True for `0-0`.
    pub fn is_zero(&self) -> bool {
        self.ms == 0 && self.seq == 0
    }

    /// The next ID, or `None` at the maximum (Redis: `streamIncrID`).
    pub fn incr(&self) -> Option<StreamId> {
        if self.seq == u64::MAX {
            if self.ms == u64::MAX {
                None
            } else {
                Some(StreamId::new(self.ms + 1, 0))
            }
        } else {
            Some(StreamId::new(self.ms, self.seq + 1))
        }
    }

    /// The previous ID, or `None` at `0-0` (Redis: `streamDecrID`).
    pub fn decr(&self) -> Option<StreamId> {
        if self.seq == 0 {
            if self.ms == 0 {
                None
            } else {
                Some(StreamId::new(self.ms - 1, u64::MAX))
            }
        } else {
            Some(StreamId::new(self.ms, self.seq - 1))
        }
    }

    /// The 16-byte big-endian key whose byte order equals numeric order.
    pub fn to_key(&self) -> [u8; 16] {
        let mut key = [0u8; 16];
        key[..8].copy_from_slice(&self.ms.to_be_bytes());
        key[8..].copy_from_slice(&self.seq.to_be_bytes());
        key
    }

    /// Decodes a key made by [`StreamId::to_key`]; `None` unless it is 16 bytes.
    pub fn from_key(key: &[u8]) -> Option<StreamId> {
        let ms: [u8; 8] = key.get(..8)?.try_into().ok()?;
        let seq: [u8; 8] = key.get(8..16)?.try_into().ok()?;
        if key.len() != 16 {
            return None;
        }
        Some(StreamId::new(
            u64::from_be_bytes(ms),
            u64::from_be_bytes(seq),
        ))
    }

    /// Appends `ms-seq` as ASCII to `out` (no allocation beyond `out`'s growth).
    pub fn write_to(&self, out: &mut Vec<u8>) {
        let mut buf = itoa::Buffer::new();
        out.extend_from_slice(buf.format(self.ms).as_bytes());
        out.push(b'-');
        out.extend_from_slice(buf.format(self.seq).as_bytes());
    }

    /// `ms-seq` as owned bytes (the form log records, effects and snapshots carry).
    pub fn to_text(&self) -> Vec<u8> {
        let (buf, len) = self.format();
        buf[..len].to_vec()
    }

    /// `ms-seq` as bytes in a fixed buffer: returns the buffer and the used length.
    pub fn format(&self) -> ([u8; 41], usize) {
        let mut out = [0u8; 41];
        let mut buf = itoa::Buffer::new();
        let ms = buf.format(self.ms).as_bytes();
        out[..ms.len()].copy_from_slice(ms);
        let mut n = ms.len();
        out[n] = b'-';
        n += 1;
        let seq = buf.format(self.seq).as_bytes();
        out[n..n + seq.len()].copy_from_slice(seq);
        n += seq.len();
        (out, n)
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// Redis's `string2ll`: a strict signed 64-bit decimal (no `+`, no leading zeros, no
/// spaces, no `-0`).
pub fn string2ll(s: &[u8]) -> Option<i64> {
    match s {
        [] => None,
        [b'0'] => Some(0),
        [b'-', rest @ ..] => {
            let v = parse_digits_no_leading_zero(rest)?;
            if v <= i64::MAX as u64 + 1 {
                Some((v as i64).wrapping_neg())
            } else {
                None
            }
        }
        _ => {
            let v = parse_digits_no_leading_zero(s)?;
            i64::try_from(v).ok()
        }
    }
}

/// Digits `[1-9][0-9]*` fitting in u64.
fn parse_digits_no_leading_zero(s: &[u8]) -> Option<u64> {
    match s.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(v)
}

/// C `strtoull(s, &end, 10)` requiring the whole string to be consumed: leading
/// whitespace, an optional sign (a `-` negates modulo 2^64), at least one digit, no
/// overflow.
fn strtoull_whole(s: &[u8]) -> Option<u64> {
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        i += 1;
    }
    let mut negative = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        negative = s[i] == b'-';
        i += 1;
    }
    let digits = &s[i..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(if negative { v.wrapping_neg() } else { v })
}

/// Redis's `string2ull`: strict int64 first (negative rejected), then `strtoull`.
pub fn string2ull(s: &[u8]) -> Option<u64> {
    if let Some(v) = string2ll(s) {
        return u64::try_from(v).ok();
    }
    strtoull_whole(s)
}

/// What the generic parser accepts besides `ms[-seq]`.
#[derive(Clone, Copy)]
struct ParseRules {
    /// `-` and `+` alone mean `0-0` and the maximum ID.
    allow_min_max: bool,
    /// `<ms>-*` is accepted (XADD only).
    allow_auto_seq: bool,
}

/// Parsed form before `*` resolution.
enum Parsed {
    Id(StreamId),
    AutoSeq(u64),
}

/// Redis's `streamGenericParseIDOrReply`.
fn parse_generic(arg: &[u8], missing_seq: u64, rules: ParseRules) -> Result<Parsed, ReplyError> {
    if arg.len() > STREAM_ID_MAX_ARG_LEN {
        return Err(ReplyError::InvalidStreamId);
    }
    // The C code works on a NUL-terminated copy: anything after a NUL is ignored.
    let buf = match memchr::memchr(0, arg) {
        Some(nul) => &arg[..nul],
        None => arg,
    };
    match buf {
        b"-" | b"+" if !rules.allow_min_max => return Err(ReplyError::InvalidStreamId),
        b"-" => return Ok(Parsed::Id(StreamId::MIN)),
        b"+" => return Ok(Parsed::Id(StreamId::MAX)),
        _ => {}
    }
    let (ms_part, seq_part) = match memchr::memchr(b'-', buf) {
        Some(dash) => (&buf[..dash], Some(&buf[dash + 1..])),
        None => (buf, None),
    };
    let ms = string2ull(ms_part).ok_or(ReplyError::InvalidStreamId)?;
    match seq_part {
        None => Ok(Parsed::Id(StreamId::new(ms, missing_seq))),
        Some(b"*") if rules.allow_auto_seq => Ok(Parsed::AutoSeq(ms)),
        Some(seq) => {
            let seq = string2ull(seq).ok_or(ReplyError::InvalidStreamId)?;
            Ok(Parsed::Id(StreamId::new(ms, seq)))
        }
    }
}

fn expect_id(parsed: Parsed) -> StreamId {
    match parsed {
        Parsed::Id(id) => id,
        // Only reachable with allow_auto_seq, which the callers below never set.
        Parsed::AutoSeq(ms) => StreamId::new(ms, 0),
    }
}

/// Non-strict parse (`-` and `+` accepted), as XGROUP SETID uses.
pub fn parse_id(arg: &[u8], missing_seq: u64) -> Result<StreamId, ReplyError> {
    let rules = ParseRules {
        allow_min_max: true,
        allow_auto_seq: false,
    };
    parse_generic(arg, missing_seq, rules).map(expect_id)
}

/// Strict parse (`-` and `+` refused), missing sequence 0: XACK, XDEL, XCLAIM, XSETID,
/// MINID, XREAD/XREADGROUP explicit IDs, XGROUP CREATE, ...
pub fn parse_strict_id(arg: &[u8]) -> Result<StreamId, ReplyError> {
    let rules = ParseRules {
        allow_min_max: false,
        allow_auto_seq: false,
    };
    parse_generic(arg, 0, rules).map(expect_id)
}

/// XADD's ID argument: `*`, `<ms>-*` or a strict explicit ID (`0-0` refused).
pub fn parse_xadd_id(arg: &[u8]) -> Result<XAddId, ReplyError> {
    if arg == b"*" {
        return Ok(XAddId::Auto);
    }
    let rules = ParseRules {
        allow_min_max: false,
        allow_auto_seq: true,
    };
    match parse_generic(arg, 0, rules)? {
        Parsed::AutoSeq(ms) => Ok(XAddId::AutoSeq(ms)),
        Parsed::Id(id) if id.is_zero() => Err(ReplyError::XAddIdZero),
        Parsed::Id(id) => Ok(XAddId::Explicit(id)),
    }
}

/// Redis's `streamParseIntervalIDOrReply` without the exclusive flag resolved: returns
/// the ID and whether it was `(`-prefixed.
fn parse_interval(arg: &[u8], missing_seq: u64) -> Result<(StreamId, bool), ReplyError> {
    if arg.len() > 1 && arg[0] == b'(' {
        let rules = ParseRules {
            allow_min_max: false,
            allow_auto_seq: false,
        };
        Ok((
            expect_id(parse_generic(&arg[1..], missing_seq, rules)?),
            true,
        ))
    } else {
        Ok((parse_id(arg, missing_seq)?, false))
    }
}

/// The start of an XRANGE/XPENDING/XAUTOCLAIM interval: missing seq 0, `-` is `0-0`,
/// `(X` means X+1 (error at the maximum ID).
pub fn parse_range_start(arg: &[u8]) -> Result<StreamId, ReplyError> {
    let (id, exclusive) = parse_interval(arg, 0)?;
    if exclusive {
        id.incr().ok_or(ReplyError::InvalidStartInterval)
    } else {
        Ok(id)
    }
}

/// The end of an XRANGE/XPENDING interval: missing seq is the maximum, `+` is the
/// maximum ID, `(X` means X-1 (error at `0-0`).
pub fn parse_range_end(arg: &[u8]) -> Result<StreamId, ReplyError> {
    let (id, exclusive) = parse_interval(arg, u64::MAX)?;
    if exclusive {
        id.decr().ok_or(ReplyError::InvalidEndInterval)
    } else {
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ms: u64, seq: u64) -> StreamId {
        StreamId::new(ms, seq)
    }

    #[test]
    fn string2ll_is_strict() {
        assert_eq!(string2ll(b"0"), Some(0));
        assert_eq!(string2ll(b"-5"), Some(-5));
        assert_eq!(string2ll(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(string2ll(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b"+5"[..],
            b"007",
            b"-0",
            b"3.14",
            b"1e3",
            b" 1",
            b"",
            b"-",
            b"9223372036854775808",
        ] {
            assert_eq!(string2ll(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn string2ull_falls_back_to_strtoull() {
        assert_eq!(string2ull(b"007"), Some(7));
        assert_eq!(string2ull(b"+5"), Some(5));
        assert_eq!(string2ull(b" 12"), Some(12));
        assert_eq!(string2ull(b"-5"), None);
        assert_eq!(string2ull(b"-0"), Some(0));
        assert_eq!(string2ull(b"-18446744073709551615"), Some(1));
        assert_eq!(string2ull(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(string2ull(b"18446744073709551616"), None);
        assert_eq!(string2ull(b""), None);
        assert_eq!(string2ull(b"1 "), None);
    }

    #[test]
    fn xadd_id_forms() {
        assert_eq!(parse_xadd_id(b"*"), Ok(XAddId::Auto));
        assert_eq!(parse_xadd_id(b"5-*"), Ok(XAddId::AutoSeq(5)));
        assert_eq!(parse_xadd_id(b"007-01"), Ok(XAddId::Explicit(id(7, 1))));
        assert_eq!(parse_xadd_id(b"5"), Ok(XAddId::Explicit(id(5, 0))));
        assert_eq!(parse_xadd_id(b"0-0"), Err(ReplyError::XAddIdZero));
        assert_eq!(parse_xadd_id(b"0"), Err(ReplyError::XAddIdZero));
        for bad in [
            &b"-"[..],
            b"+",
            b"5-",
            b"-5",
            b"abc",
            b"*-1",
            b"5-**",
            b"1-2-3",
        ] {
            assert_eq!(parse_xadd_id(bad), Err(ReplyError::InvalidStreamId));
        }
    }

    #[test]
    fn long_arguments_are_refused() {
        let mut long = vec![b'0'; 127];
        long[126] = b'1';
        assert_eq!(parse_strict_id(&long), Ok(id(1, 0)));
        long.insert(0, b'0');
        assert_eq!(parse_strict_id(&long), Err(ReplyError::InvalidStreamId));
    }

    #[test]
    fn range_bounds_and_exclusive_forms() {
        assert_eq!(parse_range_start(b"-"), Ok(StreamId::MIN));
        assert_eq!(parse_range_end(b"+"), Ok(StreamId::MAX));
        assert_eq!(parse_range_start(b"5"), Ok(id(5, 0)));
        assert_eq!(parse_range_end(b"5"), Ok(id(5, u64::MAX)));
        assert_eq!(parse_range_start(b"(5-1"), Ok(id(5, 2)));
        assert_eq!(parse_range_start(b"(5-18446744073709551615"), Ok(id(6, 0)));
        assert_eq!(parse_range_end(b"(5-0"), Ok(id(4, u64::MAX)));
        assert_eq!(parse_range_end(b"(5"), Ok(id(5, u64::MAX - 1)));
        assert_eq!(
            parse_range_start(b"(18446744073709551615-18446744073709551615"),
            Err(ReplyError::InvalidStartInterval)
        );
        assert_eq!(
            parse_range_end(b"(0-0"),
            Err(ReplyError::InvalidEndInterval)
        );
        for bad in [&b"("[..], b"(-", b"(+", b"(abc"] {
            assert_eq!(parse_range_start(bad), Err(ReplyError::InvalidStreamId));
        }
    }

    #[test]
    fn strict_refuses_min_max_but_generic_accepts() {
        assert_eq!(parse_strict_id(b"-"), Err(ReplyError::InvalidStreamId));
        assert_eq!(parse_strict_id(b"+"), Err(ReplyError::InvalidStreamId));
        assert_eq!(parse_id(b"+", 0), Ok(StreamId::MAX));
        assert_eq!(parse_strict_id(b"5-*"), Err(ReplyError::InvalidStreamId));
    }

    #[test]
    fn embedded_nul_ends_the_argument() {
        assert_eq!(parse_strict_id(b"5-1\0junk"), Ok(id(5, 1)));
    }

    #[test]
    fn incr_and_decr_carry_and_stop_at_the_ends() {
        assert_eq!(id(1, u64::MAX).incr(), Some(id(2, 0)));
        assert_eq!(StreamId::MAX.incr(), None);
        assert_eq!(id(2, 0).decr(), Some(id(1, u64::MAX)));
        assert_eq!(StreamId::MIN.decr(), None);
    }

    #[test]
    fn key_order_equals_numeric_order() {
        let ids = [
            id(0, 1),
            id(0, 256),
            id(1, 0),
            id(255, u64::MAX),
            id(256, 0),
            StreamId::MAX,
        ];
        for w in ids.windows(2) {
            assert!(w[0].to_key() < w[1].to_key());
            assert_eq!(StreamId::from_key(&w[0].to_key()), Some(w[0]));
        }
        assert_eq!(StreamId::from_key(&[0; 15]), None);
    }

    #[test]
    fn format_matches_display() {
        for i in [StreamId::MIN, StreamId::MAX, id(1526919030474, 55)] {
            let (buf, n) = i.format();
            assert_eq!(&buf[..n], i.to_string().as_bytes());
            let mut v = Vec::new();
            i.write_to(&mut v);
            assert_eq!(v, i.to_string().as_bytes());
        }
    }
}
