//! XRANGE, XREVRANGE and XLEN (reference §2.2, §2.3), plus the entry writers other
//! families reuse ([`write_entry`], [`write_range`]).
//!
//! Reply shapes (the same in RESP2 and RESP3):
//!
//! ```text
//! entry    *2  $<id>  *<2n> $f1 $v1 ... $fn $vn      fields in insertion order, may repeat
//! range    *<count> entry entry ...                  ascending (XRANGE) or descending
//! ```
//!
//! Quirks kept from Redis: a missing key answers an empty array, but an existing key with
//! `COUNT 0` (or a negative COUNT, which becomes 0) answers a *null array* (`*-1` / `_`).
//! Both IDs are parsed, start first, before the key is looked up, so ID errors win.

use super::STREAM_KEY1;
use super::reply::StreamReply;
use super::{CommandSpec, flags::*, is, parse_i64};
use crate::core::Ctx;
use crate::error::ReplyError;
use crate::resp::Argv;
use crate::resp::writer::RespWriter;
use crate::stream::id::{parse_range_end, parse_range_start};
use crate::stream::{Entry, Stream, StreamId};
use bytes::Bytes;

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    STREAM_KEY1.row(
        "xrange",
        -4,
        READONLY,
        "Returns the messages from a stream within a range of IDs.",
        "5.0.0",
        xrange,
    ),
    STREAM_KEY1.row(
        "xrevrange",
        -4,
        READONLY,
        "Returns the messages from a stream within a range of IDs in reverse order.",
        "5.0.0",
        xrevrange,
    ),
    CommandSpec {
        key_flags: super::keyflags::RO_ONLY,
        ..STREAM_KEY1.row(
            "xlen",
            2,
            READONLY | FAST,
            "Return the number of messages in a stream.",
            "5.0.0",
            xlen,
        )
    },
];

/// Looks `key` up like [`Ctx::lookup`] (lazy expiry, hit/miss counters) and returns the
/// stream together with the reply writer, so a reply can be written while the stream is
/// borrowed; `WRONGTYPE` for a key of another type.
pub fn lookup_for_reply<'c>(
    ctx: &'c mut Ctx<'_>,
    key: &[u8],
) -> Result<(Option<&'c mut Stream>, &'c mut RespWriter), ReplyError> {
    let hash = ctx.db().hash_key(key);
    let (stream, out) = ctx.lookup_hashed_with_out(hash, key);
    Ok((stream?, out))
}

/// Writes one entry: `[id, [f1, v1, f2, v2, ...]]` (Redis: the body of
/// `streamReplyWithRange`). Used by XRANGE, XINFO and the read/claim families.
pub fn write_entry(out: &mut RespWriter, entry: &Entry<'_>) {
    out.array(2);
    out.bulk_id(entry.id);
    out.array(entry.pairs_len() * 2);
    for v in entry.elements() {
        out.bulk_value(&v);
    }
}

/// Writes the live entries with `start <= id <= end` as an array of entries, ascending or
/// (`rev`) descending, at most `count` of them (`0` = all). Returns how many it wrote.
pub fn write_range(
    out: &mut RespWriter,
    stream: &Stream,
    start: StreamId,
    end: StreamId,
    rev: bool,
    count: usize,
) -> usize {
    let len = out.defer_len();
    let mut n = 0;
    for entry in stream.range(start, end, rev) {
        write_entry(out, &entry);
        n += 1;
        if n == count {
            break;
        }
    }
    out.finish_array(len, n);
    n
}

/// Parsed `XRANGE key start end [COUNT n]` / `XREVRANGE key end start [COUNT n]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XRange {
    /// The stream.
    pub key: Bytes,
    /// Smallest ID to return (exclusive forms already resolved).
    pub start: StreamId,
    /// Largest ID to return (exclusive forms already resolved).
    pub end: StreamId,
    /// Descending order (XREVRANGE).
    pub rev: bool,
    /// `None` without COUNT; `Some(0)` for `COUNT 0` or a negative COUNT (null-array reply).
    pub count: Option<usize>,
}

impl XRange {
    /// Parses the arguments (Redis: `xrangeGenericCommand`). The start is parsed first —
    /// `argv[2]` for XRANGE, `argv[3]` for XREVRANGE — then the end, then the options;
    /// COUNT may repeat (the last one wins); anything else is a syntax error.
    pub fn parse(argv: &Argv, rev: bool) -> Result<XRange, ReplyError> {
        let (start_arg, end_arg) = if rev {
            (&argv[3], &argv[2])
        } else {
            (&argv[2], &argv[3])
        };
        let start = parse_range_start(start_arg)?;
        let end = parse_range_end(end_arg)?;
        let mut count = None;
        let mut j = 4;
        while j < argv.len() {
            if is(&argv[j], "COUNT") && j + 1 < argv.len() {
                let n = parse_i64(&argv[j + 1])?;
                count = Some(usize::try_from(n.max(0)).unwrap_or(usize::MAX));
                j += 2;
            } else {
                return Err(ReplyError::Syntax);
            }
        }
        Ok(XRange {
            key: argv[1].clone(),
            start,
            end,
            rev,
            count,
        })
    }

    /// Replies with the range.
    pub fn exec(self, ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
        let (stream, out) = lookup_for_reply(ctx, &self.key)?;
        let Some(stream) = stream else {
            out.array(0);
            return Ok(());
        };
        match self.count {
            Some(0) => out.null_array(),
            count => {
                write_range(
                    out,
                    stream,
                    self.start,
                    self.end,
                    self.rev,
                    count.unwrap_or(0),
                );
            }
        }
        Ok(())
    }
}

fn xrange(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    XRange::parse(ctx.argv, false)?.exec(ctx)
}

fn xrevrange(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    XRange::parse(ctx.argv, true)?.exec(ctx)
}

/// `XLEN key`: live entries, `0` for a missing key.
fn xlen(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let key = &ctx.argv[1];
    let len = ctx.lookup(key)?.map_or(0, |s| s.len());
    ctx.out.integer(i64::try_from(len).unwrap_or(i64::MAX));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resp::writer::Protocol;
    use crate::stream::NodeLimits;

    use crate::resp::argv;

    fn id(ms: u64, seq: u64) -> StreamId {
        StreamId::new(ms, seq)
    }

    #[test]
    fn xrevrange_takes_end_then_start() {
        let r = XRange::parse(&argv(&["xrevrange", "k", "(9", "3"]), true).unwrap();
        assert_eq!((r.start, r.end), (id(3, 0), id(9, u64::MAX - 1)));
        assert!(r.rev);
    }

    #[test]
    fn count_repeats_last_wins_and_negative_becomes_zero() {
        let r = XRange::parse(
            &argv(&["xrange", "k", "-", "+", "COUNT", "5", "count", "2"]),
            false,
        )
        .unwrap();
        assert_eq!(r.count, Some(2));
        let r = XRange::parse(&argv(&["xrange", "k", "-", "+", "COUNT", "-3"]), false).unwrap();
        assert_eq!(r.count, Some(0));
    }

    #[test]
    fn option_errors() {
        let cases: &[(&[&str], ReplyError)] = &[
            (&["xrange", "k", "-", "+", "COUNT"], ReplyError::Syntax),
            (&["xrange", "k", "-", "+", "LIMIT", "1"], ReplyError::Syntax),
            (
                &["xrange", "k", "-", "+", "COUNT", "x"],
                ReplyError::NotInteger,
            ),
            (&["xrange", "k", "x", "+"], ReplyError::InvalidStreamId),
            (&["xrange", "k", "-", "(-"], ReplyError::InvalidStreamId),
            (
                &[
                    "xrange",
                    "k",
                    "(18446744073709551615-18446744073709551615",
                    "x",
                ],
                ReplyError::InvalidStartInterval,
            ),
            (
                &["xrange", "k", "-", "(0-0"],
                ReplyError::InvalidEndInterval,
            ),
        ];
        for (args, err) in cases {
            assert_eq!(
                XRange::parse(&argv(args), false).as_ref(),
                Err(err),
                "{args:?}"
            );
        }
    }

    #[test]
    fn entries_are_id_then_flat_fields() {
        let mut s = Stream::new();
        let limits = NodeLimits::default();
        s.append(id(1, 1), &argv(&["a", "1", "b", "x"]), &limits);
        s.append(id(2, 0), &argv(&["a", "2", "b", "y"]), &limits);
        let mut out = RespWriter::new(Protocol::Resp3);
        let n = write_range(&mut out, &s, StreamId::MIN, StreamId::MAX, true, 1);
        assert_eq!(n, 1);
        assert_eq!(
            out.buf,
            b"*1\r\n*2\r\n$3\r\n2-0\r\n*4\r\n$1\r\na\r\n$1\r\n2\r\n$1\r\nb\r\n$1\r\ny\r\n"
        );
    }
}
