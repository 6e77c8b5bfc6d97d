//! XACK: acknowledge pending entries of a consumer group (reference §2.6).
//!
//! ```text
//! XACK key group id [id ...]      → :<number of IDs that were pending>
//! ```
//!
//! Redis's order and quirks: a missing key or group answers `:0` without looking at the
//! IDs; otherwise every ID is parsed (strictly) before anything is acknowledged, so one
//! bad ID fails the whole call. An ID listed twice counts once; NACKed (unowned) entries
//! can be acknowledged. Each acknowledgement removes the entry from the group PEL, its
//! owner's PEL, the delivery-time list and the stream's reverse index (all in the group
//! engine, O(log n) in the PEL plus O(1)). Acknowledging wakes nobody.

use super::{CommandSpec, flags::*};
use crate::core::Ctx;
use crate::error::ReplyError;
use crate::stream::id::parse_strict_id;

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "xack",
    arity: -4,
    flags: WRITE | FAST,
    first_key: 1,
    last_key: 1,
    key_step: 1,
    acl: &["@stream"],
    summary: "Returns the number of messages that were successfully acknowledged by the consumer group member of a stream.",
    since: "5.0.0",
    group: "stream",
    handler: xack,
    subcommands: &[],
    key_flags: super::default_key_flags(WRITE | FAST, 1),
}];

fn xack(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (key, group, ids) = (&argv[1], &argv[2], &argv[3..]);
    let Some(mut g) = ctx.lookup(key)?.and_then(|s| s.group_mut(group)) else {
        ctx.out.integer(0);
        return Ok(());
    };
    // All or nothing: validate every ID first (parsing again below costs less than
    // collecting them).
    for id in ids {
        parse_strict_id(id)?;
    }
    let mut acked = 0i64;
    for id in ids {
        let id = parse_strict_id(id).expect("validated above");
        if g.ack(id) {
            acked += 1;
        }
    }
    if acked > 0 {
        // One dirty change per acknowledged entry, as Redis counts them.
        ctx.modified(key);
        ctx.core.dirty += acked as u64 - 1;
        ctx.propagate(argv);
    }
    ctx.out.integer(acked);
    Ok(())
}
