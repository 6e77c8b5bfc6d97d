//! XCLAIM and XAUTOCLAIM: move pending entries to another consumer, the recovery half of
//! at-least-once delivery (reference §2.13, §2.14).
//!
//! ```text
//! XCLAIM key group consumer min-idle id [id ...]
//!        [IDLE ms] [TIME unix-ms] [RETRYCOUNT n] [FORCE] [JUSTID] [LASTID id]
//!   → *<n> entries [id, [fields]] (or IDs with JUSTID), in argument order
//! XAUTOCLAIM key group consumer min-idle start [COUNT n] [JUSTID]
//!   → *3  $<next cursor, 0-0 when done>  *<n> claimed entries (or IDs)  *<m> deleted IDs
//! ```
//!
//! XCLAIM checks the group first (NOGROUP), then min-idle, then reads IDs until the first
//! argument that does not parse as one: that argument and the rest are options, so a
//! malformed ID reads as `Unrecognized XCLAIM option`. Per ID, in order: an entry gone from
//! the stream loses its pending entry and is skipped; FORCE creates a missing pending entry
//! (unowned, delivery count 1, as Redis's `streamCreateNACK`); an owned entry idle less
//! than min-idle is skipped; otherwise it moves to the consumer with the new delivery time
//! (now, now − IDLE or TIME; values in the future or negative mean now) and count
//! (RETRYCOUNT, or +1 unless JUSTID).
//!
//! XAUTOCLAIM parses all its arguments before looking at the key, then walks the group PEL
//! in ID order from `start`, at most `COUNT × 10` entries (COUNT defaults to 100): a
//! pending entry whose payload is gone is dropped and reported in the third element (it
//! counts against COUNT), an owned entry not idle enough is passed over, anything else is
//! claimed (+1 delivery unless JUSTID). The cursor is the next PEL entry after the last
//! one looked at. Both commands create the consumer if needed and mark it seen.
//!
//! With a dead-letter stream on the group (XGROUP SETDLQ), a claim that counts as a
//! delivery (not JUSTID, not RETRYCOUNT) and would take an entry's delivery count above
//! MAXDELIVERIES moves the entry there instead (commands/deadletter.rs): it is not in the
//! reply, and it is acknowledged.

use super::STREAM_KEY1;
use super::reply::StreamReply;
use super::xrange::{lookup_for_reply, write_entry};
use super::{CommandSpec, flags::*, is, parse_i64};
use crate::commands::deadletter::{self, Move};
use crate::commands::effects::{GroupEffects, log_effects};
use crate::core::Ctx;
use crate::core::notify::class;
use crate::error::{ReplyError, lossy};
use crate::resp::Argv;
use crate::stream::StreamId;
use crate::stream::group::{ClaimOutcome, ClaimSpec, DeadLetter, DeliveryCount};
use crate::stream::id::{parse_range_start, parse_strict_id};

/// XAUTOCLAIM looks at up to this many PEL entries per claimed one (Redis:
/// `attempts_factor`).
const XAUTOCLAIM_ATTEMPTS_FACTOR: i64 = 10;
/// XAUTOCLAIM's largest COUNT: `LONG_MAX / max(sizeof(streamID), attempts_factor)`.
const XAUTOCLAIM_MAX_COUNT: i64 = i64::MAX / 16;
/// XAUTOCLAIM's COUNT when none is given.
const XAUTOCLAIM_DEFAULT_COUNT: i64 = 100;
/// Delivery count of a pending entry XCLAIM FORCE creates, before the claim itself
/// (Redis: `streamCreateNACK`).
const FORCE_CREATED_DELIVERY_COUNT: u64 = 1;

const XCLAIM_BAD_MIN_IDLE: ReplyError =
    ReplyError::msg("ERR Invalid min-idle-time argument for XCLAIM");
const XCLAIM_BAD_IDLE: ReplyError = ReplyError::msg("ERR Invalid IDLE option argument for XCLAIM");
const XCLAIM_BAD_TIME: ReplyError = ReplyError::msg("ERR Invalid TIME option argument for XCLAIM");
const XCLAIM_BAD_RETRYCOUNT: ReplyError =
    ReplyError::msg("ERR Invalid RETRYCOUNT option argument for XCLAIM");
const XAUTOCLAIM_BAD_MIN_IDLE: ReplyError =
    ReplyError::msg("ERR Invalid min-idle-time argument for XAUTOCLAIM");
const XAUTOCLAIM_BAD_COUNT: ReplyError = ReplyError::msg("ERR COUNT must be > 0");

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    STREAM_KEY1.row("xclaim", -6, WRITE | FAST, "Changes, or acquires, ownership of a message in a consumer group, as if the message was delivered a consumer group member.", "5.0.0", xclaim),
    CommandSpec {
        key_flags: super::keyflags::RW_DELETE,
        ..STREAM_KEY1.row("xautoclaim", -6, WRITE | FAST, "Changes, or acquires, ownership of messages in a consumer group, as if the messages were delivered to as consumer group member.", "6.2.0", xautoclaim)
    },
];

fn no_group(key: &[u8], group: &[u8]) -> ReplyError {
    ReplyError::NoGroupKeyOrGroup {
        key: lossy(key),
        group: lossy(group),
    }
}

/// A `long long` argument with a command-specific error text.
fn parse_i64_or(arg: &[u8], err: ReplyError) -> Result<i64, ReplyError> {
    parse_i64(arg).map_err(|_| err)
}

/// Parsed XCLAIM arguments after the consumer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XClaim {
    /// min-idle-time (negative values become 0).
    pub min_idle: u64,
    /// The ID arguments are `argv[5..ids_end]`, all valid strict IDs.
    pub ids_end: usize,
    /// The delivery time to set, Unix ms: now, now − IDLE, or TIME, with bogus values
    /// (negative or in the future) replaced by now.
    pub delivery_time: u64,
    /// RETRYCOUNT, when given and not negative.
    pub retry_count: Option<u64>,
    /// FORCE.
    pub force: bool,
    /// JUSTID.
    pub justid: bool,
    /// LASTID (0-0 when absent: never raises anything).
    pub last_id: StreamId,
}

impl XClaim {
    /// Parses `argv[4..]` (Redis: `xclaimCommand` after the group lookup).
    pub fn parse(argv: &Argv, now_ms: u64) -> Result<XClaim, ReplyError> {
        let min_idle = parse_i64_or(&argv[4], XCLAIM_BAD_MIN_IDLE)?.max(0) as u64;
        let ids_end = 5 + argv[5..]
            .iter()
            .take_while(|a| parse_strict_id(a).is_ok())
            .count();
        let now = i64::try_from(now_ms).unwrap_or(i64::MAX);
        let mut c = XClaim {
            min_idle,
            ids_end,
            delivery_time: now_ms,
            retry_count: None,
            force: false,
            justid: false,
            last_id: StreamId::MIN,
        };
        let mut delivery_time: Option<i64> = None;
        let mut j = ids_end;
        while j < argv.len() {
            let more = j + 1 < argv.len();
            let opt = &argv[j];
            if is(opt, "FORCE") {
                c.force = true;
            } else if is(opt, "JUSTID") {
                c.justid = true;
            } else if is(opt, "IDLE") && more {
                j += 1;
                let idle = parse_i64_or(&argv[j], XCLAIM_BAD_IDLE)?;
                // An overflow is as bogus as a time in the future: it becomes now.
                delivery_time = Some(now.checked_sub(idle).unwrap_or(-1));
            } else if is(opt, "TIME") && more {
                j += 1;
                delivery_time = Some(parse_i64_or(&argv[j], XCLAIM_BAD_TIME)?);
            } else if is(opt, "RETRYCOUNT") && more {
                j += 1;
                let n = parse_i64_or(&argv[j], XCLAIM_BAD_RETRYCOUNT)?;
                c.retry_count = u64::try_from(n).ok();
            } else if is(opt, "LASTID") && more {
                j += 1;
                c.last_id = parse_strict_id(&argv[j])?;
            } else {
                return Err(ReplyError::owned(format!(
                    "ERR Unrecognized XCLAIM option '{}'",
                    lossy(opt)
                )));
            }
            j += 1;
        }
        if let Some(t) = delivery_time.filter(|&t| (0..=now).contains(&t)) {
            c.delivery_time = t as u64;
        }
        Ok(c)
    }

    /// How a claim sets the delivery count; `created` when FORCE makes the entry pending.
    fn delivery_count(&self, created: bool) -> DeliveryCount {
        match (self.retry_count, self.justid) {
            (Some(n), _) => DeliveryCount::Set(n),
            (None, true) if created => DeliveryCount::Set(FORCE_CREATED_DELIVERY_COUNT),
            (None, true) => DeliveryCount::Keep,
            (None, false) if created => DeliveryCount::Set(FORCE_CREATED_DELIVERY_COUNT + 1),
            (None, false) => DeliveryCount::Increment,
        }
    }
}

fn xclaim(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (key, group, consumer) = (&argv[1], &argv[2], &argv[3]);
    let now = ctx.now_ms;
    if ctx
        .lookup(key)?
        .is_none_or(|s| s.groups().get(group).is_none())
    {
        return Err(no_group(key, group));
    }
    let parsed = XClaim::parse(argv, now)?;
    let moves_allowed = deadletter::allowed(ctx.core);
    let (stream, out) = lookup_for_reply(ctx, key)?;
    let stream = stream.expect("checked above");
    let mut changes = 0u64;
    // What to log, as resulting state (persist/groups.rs).
    let mut fx = GroupEffects::default();
    let cid = {
        let mut g = stream.group_mut(group).expect("checked above");
        if g.raise_last_id(parsed.last_id) {
            changes += 1;
            fx.position_changed = true;
        }
        let (cid, created) = g.get_or_create_consumer(consumer, now);
        changes += u64::from(created);
        fx.consumer_created = created;
        g.touch(cid, now);
        cid
    };
    // A claim that counts as a delivery may send the entry to the dead-letter stream.
    let dead_letter = match (parsed.justid, parsed.retry_count) {
        (false, None) => stream
            .groups()
            .get(group)
            .and_then(|g| g.dead_letter())
            .cloned(),
        _ => None,
    };
    let dead_letter = dead_letter.filter(|_| moves_allowed);
    let mut moves = Vec::new();
    let header = out.defer_len();
    let mut n = 0;
    for arg in &argv[5..parsed.ids_end] {
        let id = parse_strict_id(arg).expect("parsed as an ID above");
        let exists = stream.get(id).is_some();
        let mut g = stream.group_mut(group).expect("checked above");
        if !exists {
            // The payload is gone (XDEL, trimming): drop the pending entry, if any.
            if g.ack(id) {
                changes += 1;
                fx.ids.push(id);
            }
            continue;
        }
        let created = !g.is_pending(id);
        if created && !parsed.force {
            continue;
        }
        let spec = ClaimSpec {
            min_idle: parsed.min_idle,
            delivery_time: parsed.delivery_time,
            count: parsed.delivery_count(created),
            force: parsed.force,
        };
        if let Some(d) = &dead_letter
            && g.claim_count(id, &spec, now)
                .is_some_and(|c| c > d.max_deliveries)
        {
            moves.push(Move::of(stream, group, id));
            continue;
        }
        if let ClaimOutcome::Claimed { .. } = g.claim(cid, id, &spec, now) {
            changes += 1;
            fx.ids.push(id);
            n += 1;
            if parsed.justid {
                out.bulk_id(id);
            } else {
                write_entry(out, &stream.get(id).expect("checked above"));
            }
        }
    }
    out.finish_array(header, n);
    let claim = Claim {
        key,
        group,
        consumer,
    };
    claims_done(ctx, claim, dead_letter.as_ref(), &moves, changes, &mut fx);
    Ok(())
}

/// Parsed XAUTOCLAIM arguments after the consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XAutoClaim {
    /// min-idle-time (negative values become 0).
    pub min_idle: u64,
    /// Where the PEL walk starts (exclusive form resolved).
    pub start: StreamId,
    /// COUNT: at most this many claimed plus deleted entries.
    pub count: u64,
    /// JUSTID: reply with IDs and leave delivery counts alone.
    pub justid: bool,
}

impl XAutoClaim {
    /// Parses `argv[4..]` (Redis: `xautoclaimCommand`, before the key lookup).
    pub fn parse(argv: &Argv) -> Result<XAutoClaim, ReplyError> {
        let min_idle = parse_i64_or(&argv[4], XAUTOCLAIM_BAD_MIN_IDLE)?.max(0) as u64;
        let start = parse_range_start(&argv[5])?;
        let mut count = XAUTOCLAIM_DEFAULT_COUNT;
        let mut justid = false;
        let mut j = 6;
        while j < argv.len() {
            let more = j + 1 < argv.len();
            if is(&argv[j], "COUNT") && more {
                count = parse_i64(&argv[j + 1])
                    .ok()
                    .filter(|n| (1..=XAUTOCLAIM_MAX_COUNT).contains(n))
                    .ok_or(XAUTOCLAIM_BAD_COUNT)?;
                j += 1;
            } else if is(&argv[j], "JUSTID") {
                justid = true;
            } else {
                return Err(ReplyError::Syntax);
            }
            j += 1;
        }
        Ok(XAutoClaim {
            min_idle,
            start,
            count: count as u64,
            justid,
        })
    }
}

fn xautoclaim(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (key, group, consumer) = (&argv[1], &argv[2], &argv[3]);
    let now = ctx.now_ms;
    let parsed = XAutoClaim::parse(argv)?;
    let moves_allowed = deadletter::allowed(ctx.core);
    let (stream, out) = lookup_for_reply(ctx, key)?;
    let Some(stream) = stream.filter(|s| s.groups().get(group).is_some()) else {
        return Err(no_group(key, group));
    };
    let dead_letter = stream
        .groups()
        .get(group)
        .and_then(|g| g.dead_letter())
        .filter(|_| !parsed.justid && moves_allowed)
        .cloned();
    let mut moves = Vec::new();
    let mut changes = 0u64;
    let mut fx = GroupEffects::default();
    let cid = {
        let mut g = stream.group_mut(group).expect("checked above");
        let (cid, created) = g.get_or_create_consumer(consumer, now);
        changes += u64::from(created);
        fx.consumer_created = created;
        g.touch(cid, now);
        cid
    };
    let spec = ClaimSpec {
        min_idle: parsed.min_idle,
        delivery_time: now,
        count: if parsed.justid {
            DeliveryCount::Keep
        } else {
            DeliveryCount::Increment
        },
        force: false,
    };
    let mut claimed = Vec::new();
    let mut deleted = Vec::new();
    let mut attempts = parsed
        .count
        .saturating_mul(XAUTOCLAIM_ATTEMPTS_FACTOR as u64);
    let mut left = parsed.count;
    // The next PEL position to look at; `None` once the walk passed the maximum ID.
    let mut pos = Some(parsed.start);
    while attempts > 0 && left > 0 {
        let Some(from) = pos else { break };
        let group_ref = stream.groups().get(group).expect("checked above");
        let Some(id) = group_ref.next_pending(from).map(|e| e.id) else {
            pos = None;
            break;
        };
        attempts -= 1;
        pos = id.incr();
        let exists = stream.get(id).is_some();
        let mut g = stream.group_mut(group).expect("checked above");
        if !exists {
            g.ack(id);
            deleted.push(id);
            changes += 1;
            left -= 1;
            continue;
        }
        if let Some(d) = &dead_letter
            && g.claim_count(id, &spec, now)
                .is_some_and(|c| c > d.max_deliveries)
        {
            // Not claimed: dead-lettered after the walk. It counts against COUNT.
            moves.push(Move::of(stream, group, id));
            left -= 1;
            continue;
        }
        if let ClaimOutcome::Claimed { .. } = g.claim(cid, id, &spec, now) {
            claimed.push(id);
            changes += 1;
            left -= 1;
        }
    }
    let g = stream.groups().get(group).expect("checked above");
    let cursor = pos
        .and_then(|p| g.next_pending(p))
        .map(|e| e.id)
        .unwrap_or(StreamId::MIN);
    out.array(3);
    out.bulk_id(cursor);
    out.array(claimed.len());
    for &id in &claimed {
        if parsed.justid {
            out.bulk_id(id);
        } else {
            write_entry(out, &stream.get(id).expect("claimed entries exist"));
        }
    }
    out.array(deleted.len());
    for &id in &deleted {
        out.bulk_id(id);
    }
    fx.ids.extend_from_slice(&claimed);
    fx.ids.extend_from_slice(&deleted);
    let claim = Claim {
        key,
        group,
        consumer,
    };
    claims_done(ctx, claim, dead_letter.as_ref(), &moves, changes, &mut fx);
    Ok(())
}

/// Who claimed: the stream's key, the group and the claiming consumer.
#[derive(Clone, Copy)]
struct Claim<'a> {
    key: &'a [u8],
    group: &'a [u8],
    consumer: &'a [u8],
}

/// The end of XCLAIM and XAUTOCLAIM once the reply is written: the entries past the
/// group's delivery limit move to its dead-letter stream, then, if anything changed
/// (`changes` writes before the moves), WATCH and `dirty`, the consumer's creation
/// event, and the group's effects logged.
fn claims_done(
    ctx: &mut Ctx<'_>,
    claim: Claim<'_>,
    dead_letter: Option<&DeadLetter>,
    moves: &[Move],
    mut changes: u64,
    fx: &mut GroupEffects,
) {
    let Claim {
        key,
        group,
        consumer,
    } = claim;
    if let Some(d) = dead_letter {
        changes += deadletter::move_entries(ctx, key, group, &d.key, moves, fx);
    }
    if changes > 0 {
        ctx.modified(key);
        ctx.core.dirty += changes - 1;
        if fx.consumer_created {
            ctx.notify(class::STREAM, "xgroup-createconsumer", key);
        }
        log_effects(ctx, key, group, Some(consumer), fx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::resp::argv;

    fn xclaim(args: &[&str]) -> Result<XClaim, ReplyError> {
        let mut all = vec!["XCLAIM", "k", "g", "c"];
        all.extend_from_slice(args);
        XClaim::parse(&argv(&all), 1000)
    }

    #[test]
    fn xclaim_ids_run_until_the_first_non_id() {
        let c = xclaim(&["-5", "1-1", "2", "JUSTID", "force"]).unwrap();
        assert_eq!(c.min_idle, 0);
        assert_eq!(c.ids_end, 7);
        assert!(c.justid && c.force);
        assert_eq!(
            xclaim(&["0", "1-1", "1-", "2-2"]).unwrap_err().to_string(),
            "ERR Unrecognized XCLAIM option '1-'"
        );
        assert_eq!(
            xclaim(&["0", "1-1", "IDLE"]).unwrap_err().to_string(),
            "ERR Unrecognized XCLAIM option 'IDLE'"
        );
    }

    #[test]
    fn xclaim_option_errors_match_redis() {
        let err = |a: &[&str]| xclaim(a).unwrap_err().to_string();
        assert_eq!(
            err(&["x", "1-1"]),
            "ERR Invalid min-idle-time argument for XCLAIM"
        );
        assert_eq!(
            err(&["0", "1-1", "IDLE", "x"]),
            "ERR Invalid IDLE option argument for XCLAIM"
        );
        assert_eq!(
            err(&["0", "1-1", "TIME", "x"]),
            "ERR Invalid TIME option argument for XCLAIM"
        );
        assert_eq!(
            err(&["0", "1-1", "RETRYCOUNT", "x"]),
            "ERR Invalid RETRYCOUNT option argument for XCLAIM"
        );
        assert_eq!(
            err(&["0", "1-1", "LASTID", "+"]),
            "ERR Invalid stream ID specified as stream command argument"
        );
    }

    #[test]
    fn xclaim_delivery_time_is_now_unless_sane() {
        let t = |a: &[&str]| xclaim(a).unwrap().delivery_time;
        assert_eq!(t(&["0", "1-1"]), 1000);
        assert_eq!(t(&["0", "1-1", "IDLE", "300"]), 700);
        assert_eq!(t(&["0", "1-1", "IDLE", "-5"]), 1000, "in the future");
        assert_eq!(t(&["0", "1-1", "IDLE", "5000"]), 1000, "negative");
        assert_eq!(t(&["0", "1-1", "TIME", "400"]), 400);
        assert_eq!(t(&["0", "1-1", "TIME", "4000"]), 1000);
        assert_eq!(
            t(&["0", "1-1", "TIME", "400", "IDLE", "100"]),
            900,
            "last wins"
        );
        assert_eq!(
            xclaim(&["0", "1-1", "RETRYCOUNT", "-1"])
                .unwrap()
                .retry_count,
            None
        );
    }

    #[test]
    fn xclaim_delivery_counts() {
        let c = xclaim(&["0", "1-1"]).unwrap();
        assert_eq!(c.delivery_count(false), DeliveryCount::Increment);
        assert_eq!(c.delivery_count(true), DeliveryCount::Set(2));
        let c = xclaim(&["0", "1-1", "JUSTID"]).unwrap();
        assert_eq!(c.delivery_count(false), DeliveryCount::Keep);
        assert_eq!(c.delivery_count(true), DeliveryCount::Set(1));
        let c = xclaim(&["0", "1-1", "JUSTID", "RETRYCOUNT", "7"]).unwrap();
        assert_eq!(c.delivery_count(true), DeliveryCount::Set(7));
    }

    #[test]
    fn xautoclaim_arguments() {
        let p = |a: &[&str]| {
            let mut all = vec!["XAUTOCLAIM", "k", "g", "c"];
            all.extend_from_slice(a);
            XAutoClaim::parse(&argv(&all))
        };
        assert_eq!(
            p(&["-1", "(1-1", "count", "5", "JUSTID"]),
            Ok(XAutoClaim {
                min_idle: 0,
                start: StreamId::new(1, 2),
                count: 5,
                justid: true
            })
        );
        assert_eq!(p(&["0", "-"]).unwrap().count, 100);
        let err = |a: &[&str]| p(a).unwrap_err().to_string();
        assert_eq!(
            err(&["x", "0"]),
            "ERR Invalid min-idle-time argument for XAUTOCLAIM"
        );
        assert_eq!(err(&["0", "0", "COUNT", "0"]), "ERR COUNT must be > 0");
        assert_eq!(err(&["0", "0", "COUNT", "x"]), "ERR COUNT must be > 0");
        assert_eq!(
            err(&["0", "0", "COUNT", "8070450532247928833"]),
            "ERR COUNT must be > 0"
        );
        assert_eq!(err(&["0", "0", "COUNT"]), "ERR syntax error");
        assert_eq!(
            err(&["0", "(18446744073709551615-18446744073709551615"]),
            "ERR invalid start ID for the interval"
        );
    }
}
