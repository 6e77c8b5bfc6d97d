//! XNACK (8.8): hand pending entries back to the group without acknowledging them
//! (reference §2.15, §3.2).
//!
//! ```text
//! XNACK key group <SILENT | FAIL | FATAL> IDS numids id [id ...] [RETRYCOUNT n] [FORCE]
//!   → :<number of IDs NACKed>   (an ID given twice counts twice)
//! ```
//!
//! Each ID pending in the group loses its owner (it leaves the consumer's PEL; XPENDING
//! shows consumer `""` and idle -1), gets delivery time 0 and goes to the tail of the
//! group's NACK zone, the head of the delivery-time list, so `XREADGROUP ... CLAIM`,
//! XCLAIM and XAUTOCLAIM take it first and regardless of min-idle. Its delivery count
//! becomes: SILENT −1 (floor 0; the delivery did not count), FAIL unchanged, FATAL
//! `LLONG_MAX` (a poison message: never re-delivered by a CLAIM with a retry limit);
//! RETRYCOUNT overrides the mode. IDs not pending are skipped, unless FORCE: then an
//! unowned pending entry is created for an entry that exists in the stream, its count 0,
//! RETRYCOUNT, or `LLONG_MAX` for FATAL. Consumers are never created or deleted.
//!
//! Order of checks, as Redis's `xnackCommand`: the key and group (NOGROUP), the mode
//! (`argv[3]`), the options (RETRYCOUNT and FORCE before or after the IDS block; anything
//! else, a second mode word, a surplus ID or a dangling RETRYCOUNT/IDS is `Unrecognized
//! XNACK option '<x>'`), a missing IDS block, then every ID, strictly, before anything
//! changes. When something was NACKed the command is logged verbatim and blocked
//! `XREADGROUP ... CLAIM` readers of the key are woken: the entries are claimable now.
//!
//! FATAL on a group with a dead-letter stream (XGROUP SETDLQ) moves each entry there at
//! once instead (commands/deadletter.rs; a FORCE-d entry that was not pending too, with 0
//! deliveries), and acknowledges it; the reply counts the entries moved, and the log
//! gets the moves' XADD and XACK records instead of the XNACK.

use super::STREAM;
use super::{CommandSpec, flags::*, is, parse_i64};
use crate::commands::deadletter::{self, Move};
use crate::commands::effects::{GroupEffects, log_effects};
use crate::core::Ctx;
use crate::error::{ReplyError, c_str_prefix, lossy};
use crate::resp::Argv;
use crate::stream::StreamId;
use crate::stream::group::NackMode;
use crate::stream::id::parse_strict_id;

const BAD_MODE: ReplyError = ReplyError::msg("ERR mode must be SILENT, FAIL, or FATAL");
const NUMIDS_NOT_POSITIVE: ReplyError = ReplyError::msg("ERR numids must be a positive integer");
const NUMIDS_MISMATCH: ReplyError = ReplyError::msg("ERR number of IDs doesn't match numids");
const BAD_RETRYCOUNT: ReplyError = ReplyError::msg("ERR Invalid RETRYCOUNT value, must be >= 0");
const IDS_EXPECTED: ReplyError = ReplyError::msg("ERR syntax error, expected IDS keyword");

/// Largest `numids` (Redis parses it into an `int`).
const NUMIDS_MAX: i64 = i32::MAX as i64;

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "xnack",
    arity: -7,
    flags: WRITE | FAST,
    first_key: 1,
    last_key: 1,
    key_step: 1,
    acl: STREAM,
    summary: "Releases claimed messages back to the group's PEL without acknowledging them, making them available for re-delivery.",
    since: "8.8.0",
    group: "stream",
    handler: xnack,
    subcommands: &[],
    key_flags: super::default_key_flags(WRITE | FAST, 1),
}];

/// Parsed XNACK arguments after the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XNack {
    /// How the delivery count changes (unless `retry_count`).
    pub mode: NackMode,
    /// Index in argv of the first ID.
    pub ids_at: usize,
    /// Number of IDs (≥ 1).
    pub numids: usize,
    /// RETRYCOUNT: the delivery count to set, overriding the mode.
    pub retry_count: Option<u64>,
    /// FORCE: create unowned pending entries for IDs that are not pending.
    pub force: bool,
}

impl XNack {
    /// Parses `argv[3..]`. Words are compared as C strings (up to an embedded NUL), as
    /// Redis's `strcasecmp` sees them.
    pub fn parse(argv: &Argv) -> Result<XNack, ReplyError> {
        let mode_word = c_str_prefix(&argv[3], usize::MAX);
        let mode = if is(mode_word, "SILENT") {
            NackMode::Silent
        } else if is(mode_word, "FAIL") {
            NackMode::Fail
        } else if is(mode_word, "FATAL") {
            NackMode::Fatal
        } else {
            return Err(BAD_MODE);
        };
        let mut ids = None;
        let mut retry_count = None;
        let mut force = false;
        let mut i = 4;
        while i < argv.len() {
            let more = argv.len() - 1 - i;
            let word = c_str_prefix(&argv[i], usize::MAX);
            if is(word, "IDS") && more > 0 {
                let n = parse_i64(&argv[i + 1])
                    .ok()
                    .filter(|n| (1..=NUMIDS_MAX).contains(n))
                    .ok_or(NUMIDS_NOT_POSITIVE)? as usize;
                let at = i + 2;
                if n > argv.len() - at {
                    return Err(NUMIDS_MISMATCH);
                }
                ids = Some((at, n));
                i = at + n;
            } else if is(word, "FORCE") {
                force = true;
                i += 1;
            } else if is(word, "RETRYCOUNT") && more > 0 {
                let n = parse_i64(&argv[i + 1])?;
                retry_count = Some(u64::try_from(n).map_err(|_| BAD_RETRYCOUNT)?);
                i += 2;
            } else {
                return Err(ReplyError::owned(format!(
                    "ERR Unrecognized XNACK option '{}'",
                    lossy(word)
                )));
            }
        }
        let (ids_at, numids) = ids.ok_or(IDS_EXPECTED)?;
        Ok(XNack {
            mode,
            ids_at,
            numids,
            retry_count,
            force,
        })
    }

    /// Parses every ID strictly; the first bad one fails the whole command.
    pub fn ids(&self, argv: &Argv) -> Result<Vec<StreamId>, ReplyError> {
        argv[self.ids_at..self.ids_at + self.numids]
            .iter()
            .map(|a| parse_strict_id(a))
            .collect()
    }
}

fn xnack(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (key, group) = (&argv[1], &argv[2]);
    // Parsing is pure; its errors are reported only after the NOGROUP check.
    let parsed = XNack::parse(argv);
    let moves_allowed = deadletter::allowed(ctx.core);
    let Some(stream) = ctx.lookup(key)?.filter(|s| s.groups().get(group).is_some()) else {
        return Err(ReplyError::NoGroupKeyOrGroup {
            key: lossy(key),
            group: lossy(group),
        });
    };
    let args = parsed?;
    let ids = args.ids(argv)?;
    // FATAL with a dead-letter stream moves the entries there instead of NACKing them.
    let dead_letter = match args.mode {
        NackMode::Fatal => stream
            .groups()
            .get(group)
            .and_then(|g| g.dead_letter())
            .filter(|_| moves_allowed)
            .cloned(),
        _ => None,
    };
    let mut moves = Vec::new();
    let mut nacked = 0u64;
    for id in ids {
        let pending = stream.groups().get(group).is_some_and(|g| g.is_pending(id));
        // FORCE creates a pending entry only for an entry that exists.
        let forced = !pending && args.force && stream.get(id).is_some();
        if !pending && !forced {
            continue;
        }
        if dead_letter.is_some() {
            moves.push(Move::of(stream, group, id));
            continue;
        }
        let mut g = stream.group_mut(group).expect("checked above");
        if g.nack(id, args.mode, args.retry_count, args.force) {
            nacked += 1;
        }
    }
    if let Some(d) = &dead_letter {
        let mut fx = GroupEffects::default();
        let moved = deadletter::move_entries(ctx, key, group, &d.key, &moves, &mut fx);
        log_effects(ctx, key, group, None, &fx);
        ctx.core.dirty += moved.saturating_sub(1);
        ctx.out.integer(i64::try_from(moved).unwrap_or(i64::MAX));
        return Ok(());
    }
    if nacked > 0 {
        ctx.modified(key);
        ctx.core.dirty += nacked - 1;
        ctx.propagate(argv);
        // The NACKed entries are claimable at once: wake blocked XREADGROUP ... CLAIM.
        ctx.signal_ready(key);
    }
    ctx.out.integer(i64::try_from(nacked).unwrap_or(i64::MAX));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::test_argv as argv;

    fn parse(s: &str) -> Result<XNack, String> {
        XNack::parse(&argv(s)).map_err(|e| e.to_string())
    }

    #[test]
    fn options_before_and_after_ids() {
        let a = parse("XNACK k g fail RETRYCOUNT 3 IDS 2 1-1 2-2 FORCE").expect("valid");
        assert_eq!(
            a,
            XNack {
                mode: NackMode::Fail,
                ids_at: 8,
                numids: 2,
                retry_count: Some(3),
                force: true,
            }
        );
        let a = parse("XNACK k g FATAL IDS 1 5").expect("valid");
        assert_eq!(
            (a.mode, a.retry_count, a.force),
            (NackMode::Fatal, None, false)
        );
        assert_eq!(
            parse("XNACK k g Silent IDS 1 5").expect("valid").mode,
            NackMode::Silent
        );
        // An ID that reads like an option is just an ID.
        assert!(!parse("XNACK k g FAIL IDS 1 FORCE").expect("valid").force);
    }

    #[test]
    fn errors_match_redis() {
        assert_eq!(
            parse("XNACK k g NOPE IDS 1 1").unwrap_err(),
            "ERR mode must be SILENT, FAIL, or FATAL"
        );
        assert_eq!(
            parse("XNACK k g FAIL IDS 0 1").unwrap_err(),
            "ERR numids must be a positive integer"
        );
        assert_eq!(
            parse("XNACK k g FAIL IDS x 1").unwrap_err(),
            "ERR numids must be a positive integer"
        );
        assert_eq!(
            parse("XNACK k g FAIL IDS 2147483648 1").unwrap_err(),
            "ERR numids must be a positive integer"
        );
        assert_eq!(
            parse("XNACK k g FAIL IDS 3 1 2").unwrap_err(),
            "ERR number of IDs doesn't match numids"
        );
        assert_eq!(
            parse("XNACK k g FAIL IDS 1 1 RETRYCOUNT -1").unwrap_err(),
            "ERR Invalid RETRYCOUNT value, must be >= 0"
        );
        assert_eq!(
            parse("XNACK k g FAIL IDS 1 1 RETRYCOUNT x").unwrap_err(),
            "ERR value is not an integer or out of range"
        );
        assert_eq!(
            parse("XNACK k g FAIL IDS 1 1 RETRYCOUNT").unwrap_err(),
            "ERR Unrecognized XNACK option 'RETRYCOUNT'"
        );
        assert_eq!(
            parse("XNACK k g FAIL IDS 1 1 2").unwrap_err(),
            "ERR Unrecognized XNACK option '2'"
        );
        assert_eq!(
            parse("XNACK k g FAIL FATAL IDS 1 1").unwrap_err(),
            "ERR Unrecognized XNACK option 'FATAL'"
        );
        assert_eq!(
            parse("XNACK k g FAIL FORCE RETRYCOUNT 1").unwrap_err(),
            "ERR syntax error, expected IDS keyword"
        );
        assert_eq!(
            parse("XNACK k g FAIL FORCE FORCE IDS").unwrap_err(),
            "ERR Unrecognized XNACK option 'IDS'"
        );
    }

    #[test]
    fn ids_are_parsed_strictly() {
        let v = argv("XNACK k g FAIL IDS 2 1 -");
        let a = XNack::parse(&v).expect("valid");
        assert_eq!(a.ids(&v), Err(ReplyError::InvalidStreamId));
    }
}
