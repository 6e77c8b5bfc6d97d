//! XPENDING: inspect a consumer group's pending entries (reference §2.12).
//!
//! ```text
//! XPENDING key group                                   summary
//!   *4  :<total>  $<smallest id>  $<largest id>  *<n> [*2 $<consumer> $<count>] ...
//!       (empty PEL: :0 $-1 $-1 *-1 in RESP2, :0 _ _ _ in RESP3; counts are bulk strings)
//! XPENDING key group [IDLE ms] start end count [consumer]
//!   *<n> [*4 $<id> $<consumer> :<idle ms> :<delivery count>] ...   in ID order
//! ```
//!
//! The argument count must be 3 or 6..=9 (else a syntax error), and the range arguments
//! are parsed, count first, *before* the key and group are looked up, as Redis does. A
//! negative count is 0. `start`/`end` take `-`, `+` and the exclusive `(` forms. A
//! consumer that does not exist gives `*0`. NACKed (unowned) entries show the consumer
//! `""` and idle `-1`, and always pass the IDLE filter; owned entries idle less than IDLE
//! are skipped.

use super::reply::StreamReply;
use super::{CommandSpec, flags::*, is, parse_i64};
use crate::core::Ctx;
use crate::error::{ReplyError, lossy};
use crate::resp::Argv;
use crate::resp::writer::RespWriter;
use crate::stream::StreamId;
use crate::stream::group::ConsumerGroup;
use crate::stream::id::{parse_range_end, parse_range_start};
use crate::stream::pel::PendingEntry;
use bytes::Bytes;

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "xpending",
    arity: -3,
    flags: READONLY,
    first_key: 1,
    last_key: 1,
    key_step: 1,
    acl: &["@stream"],
    summary: "Returns the information and entries from a stream consumer group's pending entries list.",
    since: "5.0.0",
    group: "stream",
    handler: xpending,
    subcommands: &[],
    key_flags: super::default_key_flags(READONLY, 1),
}];

/// The extended form's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingRange {
    /// IDLE: owned entries idle less than this are skipped (0 or negative: no filter).
    pub min_idle: i64,
    /// First ID (exclusive form resolved).
    pub start: StreamId,
    /// Last ID (exclusive form resolved).
    pub end: StreamId,
    /// Maximum number of entries (negative counts become 0).
    pub count: usize,
    /// Only this consumer's entries.
    pub consumer: Option<Bytes>,
}

/// Parsed `XPENDING key group [[IDLE ms] start end count [consumer]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XPending {
    /// `None` for the summary form.
    pub range: Option<PendingRange>,
}

impl XPending {
    /// Parses everything after the group (Redis: the first half of `xpendingCommand`).
    pub fn parse(argv: &Argv) -> Result<XPending, ReplyError> {
        let argc = argv.len();
        if argc != 3 && !(6..=9).contains(&argc) {
            return Err(ReplyError::Syntax);
        }
        if argc == 3 {
            return Ok(XPending { range: None });
        }
        let mut at = 3;
        let mut min_idle = 0;
        if is(&argv[3], "IDLE") {
            min_idle = parse_i64(&argv[4])?;
            if argc < 8 {
                return Err(ReplyError::Syntax);
            }
            at += 2;
        }
        let count = parse_i64(&argv[at + 2])?.max(0) as usize;
        let start = parse_range_start(&argv[at])?;
        let end = parse_range_end(&argv[at + 1])?;
        // Arguments after the consumer, possible without IDLE, are ignored as in Redis.
        let consumer = argv.get(at + 3).cloned();
        Ok(XPending {
            range: Some(PendingRange {
                min_idle,
                start,
                end,
                count,
                consumer,
            }),
        })
    }
}

fn xpending(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let parsed = XPending::parse(argv)?;
    let (key, group) = (&argv[1], &argv[2]);
    let now = ctx.now_ms;
    let (stream, out) = super::xrange::lookup_for_reply(ctx, key)?;
    let Some(g) = stream.and_then(|s| s.groups().get(group)) else {
        return Err(ReplyError::NoGroupKeyOrGroup {
            key: lossy(key),
            group: lossy(group),
        });
    };
    match parsed.range {
        None => write_summary(out, g),
        Some(range) => write_range(out, g, &range, now),
    }
    Ok(())
}

/// The summary: total, smallest and largest pending IDs, and the consumers that own
/// entries, by name, with their counts as bulk strings.
fn write_summary(out: &mut RespWriter, g: &ConsumerGroup) {
    out.array(4);
    out.integer(i64::try_from(g.pel_count()).unwrap_or(i64::MAX));
    let (Some(first), Some(last)) = (g.first_pending_id(), g.last_pending_id()) else {
        out.null();
        out.null();
        out.null_array();
        return;
    };
    out.bulk_id(first);
    out.bulk_id(last);
    let header = out.defer_len();
    let mut n = 0;
    for (_, c) in g.consumers().filter(|(_, c)| c.pel_count() > 0) {
        out.array(2);
        out.bulk(c.name());
        out.bulk_int(i64::try_from(c.pel_count()).unwrap_or(i64::MAX));
        n += 1;
    }
    out.finish_array(header, n);
}

/// The extended form: up to `count` entries of the range, in ID order.
fn write_range(out: &mut RespWriter, g: &ConsumerGroup, range: &PendingRange, now: u64) {
    match &range.consumer {
        None => write_entries(out, g.pel_range(range.start, range.end), range, now),
        Some(name) => match g.consumer_id(name) {
            Some(c) => write_entries(out, g.consumer_pel(c, range.start, range.end), range, now),
            None => out.array(0),
        },
    }
}

fn write_entries<'a>(
    out: &mut RespWriter,
    entries: impl Iterator<Item = PendingEntry<'a>>,
    range: &PendingRange,
    now: u64,
) {
    let header = out.defer_len();
    let mut n = 0;
    for e in entries {
        if n == range.count {
            break;
        }
        let idle = match e.owner {
            Some(_) => i64::try_from(e.idle(now)).unwrap_or(i64::MAX),
            None => -1,
        };
        if e.owner.is_some() && range.min_idle > 0 && idle < range.min_idle {
            continue;
        }
        out.array(4);
        out.bulk_id(e.id);
        out.bulk(e.owner.unwrap_or_default());
        out.integer(idle);
        out.integer(i64::try_from(e.delivery_count).unwrap_or(i64::MAX));
        n += 1;
    }
    out.finish_array(header, n);
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::resp::argv;

    fn parse(args: &[&str]) -> Result<XPending, ReplyError> {
        XPending::parse(&argv(args))
    }

    #[test]
    fn summary_and_extended_forms() {
        assert_eq!(parse(&["xpending", "k", "g"]), Ok(XPending { range: None }));
        let r = parse(&["xpending", "k", "g", "IDLE", "10", "(1", "+", "-5", "c"])
            .unwrap()
            .range
            .unwrap();
        assert_eq!(r.min_idle, 10);
        assert_eq!(r.start, StreamId::new(1, 1));
        assert_eq!(r.end, StreamId::MAX);
        assert_eq!(r.count, 0);
        assert_eq!(r.consumer, Some(Bytes::from("c")));
    }

    #[test]
    fn argument_errors_in_redis_order() {
        let err = |a: &[&str]| parse(a).unwrap_err().to_string();
        assert_eq!(err(&["xpending", "k", "g", "-"]), "ERR syntax error");
        assert_eq!(err(&["xpending", "k", "g", "-", "+"]), "ERR syntax error");
        assert_eq!(
            err(&["xpending", "k", "g", "IDLE", "1", "-", "+"]),
            "ERR syntax error"
        );
        assert_eq!(
            err(&["xpending", "k", "g", "IDLE", "x", "-", "+"]),
            "ERR value is not an integer or out of range"
        );
        // The count is parsed before the IDs.
        assert_eq!(
            err(&["xpending", "k", "g", "bad", "+", "x"]),
            "ERR value is not an integer or out of range"
        );
        assert_eq!(
            err(&["xpending", "k", "g", "bad", "+", "1"]),
            "ERR Invalid stream ID specified as stream command argument"
        );
        assert_eq!(
            err(&["xpending", "k", "g", "-", "(0-0", "1"]),
            "ERR invalid end ID for the interval"
        );
    }
}
