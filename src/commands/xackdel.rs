//! XACKDEL and XDELEX (8.2): delete entries with a say over the consumer groups'
//! references to them (reference §2.7, §2.9, §3.2).
//!
//! ```text
//! XACKDEL key group [KEEPREF | DELREF | ACKED] IDS numids id [id ...]
//!   → *numids, per ID: -1 not pending in this group
//!                       1 acknowledged and deleted (or its payload was already gone)
//!                       2 acknowledged, kept: still referenced (ACKED only)
//! XDELEX key [KEEPREF | DELREF | ACKED] IDS numids id [id ...]
//!   → *numids, per ID: -1 not in the stream, 1 deleted, 2 kept: still referenced (ACKED)
//! ```
//!
//! The policy word and the `IDS` block come in any order (Redis's
//! `streamParseAckDelArgsOrReply`): a policy word is taken once (a second one is a syntax
//! error), `IDS` needs its count (`1..=LONG_MAX`, else `Number of IDs must be a positive
//! integer`) and at least that many arguments after it (else ``The `numids` parameter must
//! match the number of arguments``); anything left over is read as an option again, so a
//! surplus ID is a syntax error. Without `IDS`: `IDS option is required`.
//!
//! Order of checks, as Redis: options first, then a missing key (or, for XACKDEL, group)
//! answers `-1` per requested ID without looking at the IDs; otherwise every ID is parsed
//! strictly before anything changes (all or nothing).
//!
//! Policies, per ID:
//! - KEEPREF deletes the entry; other groups' pending entries for it stay (their readers
//!   then see `[id, nil]`).
//! - DELREF deletes it and drops it from every group's PEL. XDELEX drops the references
//!   even when the entry itself is already gone (the answer is still -1).
//! - ACKED deletes it only if no group references it: no group's `last_id` is below it
//!   and no PEL (NACKed entries included) holds it. With no groups nothing is referenced.
//!   XDELEX answers 2 for a referenced ID whether or not the entry exists, as Redis does.
//!
//! "Referenced" is answered by the stream's reverse index (ID → number of group PELs
//! holding it) and the cached minimum `last_id`, so each ID costs one PEL operation plus
//! O(1) (`Groups::is_referenced`). Deleting raises `max_deleted_entry_id` (unlike
//! trimming) and keeps `first_id` right (`Stream::delete`).
//!
//! Both commands are logged verbatim when they changed something (reference §5).

use super::STREAM;
use super::{CommandSpec, flags::*, is, parse_i64};
use crate::core::Ctx;
use crate::core::notify::class;
use crate::error::{ReplyError, c_str_prefix};
use crate::resp::Argv;
use crate::stream::id::parse_strict_id;
use crate::stream::{RefPolicy, Stream, StreamId};

/// `IDS` with a count that is not an integer in `1..=LONG_MAX`.
const NUMIDS_NOT_POSITIVE: ReplyError =
    ReplyError::msg("ERR Number of IDs must be a positive integer");
/// `IDS n` followed by fewer than `n` arguments.
const NUMIDS_MISMATCH: ReplyError =
    ReplyError::msg("ERR The `numids` parameter must match the number of arguments");
/// No `IDS` block at all. (Not reachable through the dispatcher: the arity asks for one
/// argument more than a single policy word can use, and anything else is a syntax error.)
const IDS_REQUIRED: ReplyError = ReplyError::msg("ERR IDS option is required");

/// Per-ID answer: not pending (XACKDEL) / not in the stream (XDELEX).
const NO_ID: i64 = -1;
/// Per-ID answer: deleted.
const DELETED: i64 = 1;
/// Per-ID answer: kept because some group still references it (ACKED).
const STILL_REFERENCED: i64 = 2;

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "xackdel",
        arity: -6,
        flags: WRITE | FAST,
        first_key: 1,
        last_key: 1,
        key_step: 1,
        acl: STREAM,
        summary: "Acknowledges and deletes one or multiple messages for a stream consumer group.",
        since: "8.2.0",
        group: "stream",
        handler: xackdel,
        subcommands: &[],
        key_flags: super::default_key_flags(WRITE | FAST, 1),
    },
    CommandSpec {
        name: "xdelex",
        arity: -5,
        flags: WRITE | FAST,
        first_key: 1,
        last_key: 1,
        key_step: 1,
        acl: STREAM,
        summary: "Returns the number of messages after removing them from a stream. The command can be used to remove entries from the stream based on the PEL or the ACKED status.",
        since: "8.2.0",
        group: "stream",
        handler: xdelex,
        subcommands: &[],
        key_flags: super::default_key_flags(WRITE | FAST, 1),
    },
];

/// The options of XACKDEL/XDELEX: the reference policy and where the IDs are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DelArgs {
    /// KEEPREF (the default), DELREF or ACKED.
    pub policy: RefPolicy,
    /// Index in argv of the first ID.
    pub ids_at: usize,
    /// Number of IDs (≥ 1).
    pub numids: usize,
}

impl DelArgs {
    /// Parses `argv[start..]` (Redis: `streamParseAckDelArgsOrReply`). Option words are
    /// compared as C strings (up to an embedded NUL), as `strcasecmp` sees them.
    pub fn parse(argv: &Argv, start: usize) -> Result<DelArgs, ReplyError> {
        let mut policy = None;
        let mut ids = None;
        let mut j = start;
        while j < argv.len() {
            let word = c_str_prefix(&argv[j], usize::MAX);
            let named = if is(word, "KEEPREF") {
                Some(RefPolicy::KeepRef)
            } else if is(word, "DELREF") {
                Some(RefPolicy::DelRef)
            } else if is(word, "ACKED") {
                Some(RefPolicy::Acked)
            } else {
                None
            };
            match named {
                Some(p) if policy.is_none() => {
                    policy = Some(p);
                    j += 1;
                }
                _ if is(word, "IDS") && j + 1 < argv.len() => {
                    let n = parse_i64(&argv[j + 1])
                        .ok()
                        .filter(|&n| n >= 1)
                        .ok_or(NUMIDS_NOT_POSITIVE)?;
                    let room = argv.len() - j - 2;
                    let n = usize::try_from(n)
                        .ok()
                        .filter(|&n| n <= room)
                        .ok_or(NUMIDS_MISMATCH)?;
                    ids = Some((j + 2, n));
                    j += 2 + n;
                }
                _ => return Err(ReplyError::Syntax),
            }
        }
        let (ids_at, numids) = ids.ok_or(IDS_REQUIRED)?;
        Ok(DelArgs {
            policy: policy.unwrap_or_default(),
            ids_at,
            numids,
        })
    }

    /// The ID arguments.
    pub fn id_args<'a>(&self, argv: &'a Argv) -> &'a [bytes::Bytes] {
        &argv[self.ids_at..self.ids_at + self.numids]
    }

    /// Parses every ID strictly; the first bad one fails the whole command.
    pub fn ids(&self, argv: &Argv) -> Result<Vec<StreamId>, ReplyError> {
        self.id_args(argv)
            .iter()
            .map(|a| parse_strict_id(a))
            .collect()
    }
}

/// `*n` of `-1`: the answer for a missing key (or group).
fn reply_all_missing(ctx: &mut Ctx<'_>, n: usize) {
    ctx.out.array(n);
    for _ in 0..n {
        ctx.out.integer(NO_ID);
    }
}

fn reply_results(ctx: &mut Ctx<'_>, results: &[i64]) {
    ctx.out.array(results.len());
    for &r in results {
        ctx.out.integer(r);
    }
}

/// Total pending entries over all groups (to tell whether DELREF dropped any).
fn total_pending(stream: &Stream) -> usize {
    stream.groups().iter().map(|g| g.pel_count()).sum()
}

/// Applies `policy` to one entry after its own group's acknowledgement (XACKDEL) or
/// directly (XDELEX): whether it may be deleted, dropping every group's reference first
/// under DELREF.
fn may_delete(stream: &mut Stream, id: StreamId, policy: RefPolicy) -> bool {
    match policy {
        RefPolicy::KeepRef => true,
        RefPolicy::DelRef => {
            stream.groups_mut().remove_refs(id);
            true
        }
        RefPolicy::Acked => !stream.groups().is_referenced(id),
    }
}

fn xackdel(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (key, group) = (&argv[1], &argv[2]);
    let args = DelArgs::parse(argv, 3)?;
    let ratio = ctx.core.reclaim_ratio;
    let Some(stream) = ctx.lookup(key)?.filter(|s| s.groups().get(group).is_some()) else {
        reply_all_missing(ctx, args.numids);
        return Ok(());
    };
    let ids = args.ids(argv)?;
    let mut results = Vec::with_capacity(ids.len());
    let mut acked = 0u64;
    let mut deleted = 0u64;
    let mut to_pass = false;
    for &id in &ids {
        let mut g = stream.group_mut(group).expect("checked above");
        if !g.ack(id) {
            results.push(NO_ID);
            continue;
        }
        acked += 1;
        if may_delete(stream, id, args.policy) {
            // An entry already gone (XDEL, trimming) still counts as deleted.
            let (gone, left) = stream.delete_reclaiming(id, ratio);
            deleted += u64::from(gone);
            to_pass |= left;
            results.push(DELETED);
        } else {
            results.push(STILL_REFERENCED);
        }
    }
    if to_pass {
        ctx.db().note_reclaim(key);
    }
    if acked > 0 {
        // Redis counts one change per acknowledgement.
        ctx.modified(key);
        ctx.core.dirty += acked - 1;
        ctx.propagate(argv);
    }
    // Redis 8.2 announces the entries it removed from the stream as `xdel`.
    if deleted > 0 {
        ctx.notify(class::STREAM, "xdel", key);
    }
    reply_results(ctx, &results);
    Ok(())
}

fn xdelex(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let args = DelArgs::parse(argv, 2)?;
    let ratio = ctx.core.reclaim_ratio;
    let Some(stream) = ctx.lookup(key)? else {
        reply_all_missing(ctx, args.numids);
        return Ok(());
    };
    let ids = args.ids(argv)?;
    let pending_before = match args.policy {
        RefPolicy::DelRef => total_pending(stream),
        _ => 0,
    };
    let mut results = Vec::with_capacity(ids.len());
    let mut deleted = 0u64;
    let mut to_pass = false;
    for &id in &ids {
        let r = if !may_delete(stream, id, args.policy) {
            STILL_REFERENCED
        } else {
            let (gone, left) = stream.delete_reclaiming(id, ratio);
            to_pass |= left;
            if gone {
                deleted += 1;
                DELETED
            } else {
                NO_ID
            }
        };
        results.push(r);
    }
    // DELREF may drop references of entries that are gone without deleting anything.
    let refs_dropped = args.policy == RefPolicy::DelRef && total_pending(stream) != pending_before;
    if deleted > 0 || refs_dropped {
        ctx.modified(key);
        ctx.core.dirty += deleted.saturating_sub(1);
        ctx.propagate(argv);
    }
    if to_pass {
        ctx.db().note_reclaim(key);
    }
    if deleted > 0 {
        ctx.notify(class::STREAM, "xdel", key);
    }
    reply_results(ctx, &results);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::test_argv as argv;

    fn parse(s: &str, start: usize) -> Result<DelArgs, String> {
        DelArgs::parse(&argv(s), start).map_err(|e| e.to_string())
    }

    #[test]
    fn options_in_any_order() {
        let a = parse("XDELEX k IDS 2 1-1 2-2 ACKED", 2).expect("valid");
        assert_eq!(
            a,
            DelArgs {
                policy: RefPolicy::Acked,
                ids_at: 4,
                numids: 2
            }
        );
        let a = parse("XACKDEL k g delref ids 1 5", 3).expect("valid");
        assert_eq!(a.policy, RefPolicy::DelRef);
        assert_eq!(a.ids_at, 6);
        assert_eq!(
            parse("XDELEX k IDS 1 1", 2).expect("valid").policy,
            RefPolicy::KeepRef
        );
        // An ID that reads like an option is just an ID.
        let a = parse("XDELEX k IDS 1 ACKED", 2).expect("valid");
        assert_eq!((a.policy, a.ids_at), (RefPolicy::KeepRef, 4));
        // A later IDS block replaces an earlier one, as in Redis.
        let a = parse("XDELEX k IDS 1 1 IDS 2 3 4", 2).expect("valid");
        assert_eq!((a.ids_at, a.numids), (7, 2));
    }

    #[test]
    fn errors_match_redis() {
        const NUMIDS: &str = "ERR Number of IDs must be a positive integer";
        const MISMATCH: &str = "ERR The `numids` parameter must match the number of arguments";
        assert_eq!(parse("XDELEX k IDS 0 1", 2).unwrap_err(), NUMIDS);
        assert_eq!(parse("XDELEX k IDS -1 1", 2).unwrap_err(), NUMIDS);
        assert_eq!(parse("XDELEX k IDS x 1", 2).unwrap_err(), NUMIDS);
        assert_eq!(parse("XDELEX k IDS +1 1", 2).unwrap_err(), NUMIDS);
        assert_eq!(parse("XDELEX k IDS 3 1 2", 2).unwrap_err(), MISMATCH);
        assert_eq!(parse("XDELEX k ACKED IDS 1", 2).unwrap_err(), MISMATCH);
        assert_eq!(
            parse("XDELEX k IDS 1 1 2", 2).unwrap_err(),
            "ERR syntax error"
        );
        assert_eq!(
            parse("XDELEX k KEEPREF ACKED IDS 1 1", 2).unwrap_err(),
            "ERR syntax error"
        );
        assert_eq!(
            parse("XDELEX k ACKED IDS", 2).unwrap_err(),
            "ERR syntax error"
        );
        assert_eq!(
            parse("XDELEX k ACKED", 2).unwrap_err(),
            "ERR IDS option is required"
        );
        assert_eq!(
            parse("XDELEX k FOO IDS 1 1", 2).unwrap_err(),
            "ERR syntax error"
        );
        // Errors come in argument order.
        assert_eq!(parse("XDELEX k IDS 0 1 FOO", 2).unwrap_err(), NUMIDS);
    }

    #[test]
    fn ids_are_parsed_strictly() {
        let a = parse("XDELEX k IDS 2 1 2-3", 2).expect("valid");
        assert_eq!(
            a.ids(&argv("XDELEX k IDS 2 1 2-3")),
            Ok(vec![StreamId::new(1, 0), StreamId::new(2, 3)])
        );
        assert_eq!(
            a.ids(&argv("XDELEX k IDS 2 1 +")),
            Err(ReplyError::InvalidStreamId)
        );
    }
}
