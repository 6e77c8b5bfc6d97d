//! SYNCSET: the operator's view of, and hand on, synchronous replication's sync set
//! (`min-sync-replicas`, `core/syncrepl.rs`, docs/replication.md). streamd's own
//! command; Redis has none like it.
//!
//! ```text
//! SYNCSET LIST                                   members: id, address, ACKed offset, state
//! SYNCSET REMOVE <id | ip:port>                  cooperative: the member is left out of the
//!                                                next record and is out once it ACKs it
//! SYNCSET FORGET <id | ip:port> I-ATTEST-IT-IS-DEAD
//!                                                out at once: only for a replica known dead
//!                                                or fenced; held replies fail
//! SYNCSET ADD <id | ip:port>                     a removed replica may join again
//! SYNCSET CONFIRM                                a restarted primary serves again
//! ```

use super::SERVER;
use super::{CommandSpec, flags::*};
use crate::core::Ctx;
use crate::error::ReplyError;

/// The words FORGET needs: whoever types them takes responsibility for the member being
/// dead (or unable ever to be promoted).
const ATTESTATION: &[u8] = b"I-ATTEST-IT-IS-DEAD";

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[CommandSpec {
    flags: ADMIN | NOSCRIPT | LOADING | STALE,
    ..SERVER.container(
        "syncset",
        "A container for commands on the sync set of synchronous replication.",
        "8.10.0",
        SUBCOMMANDS,
    )
}];

const SUBCOMMANDS: &[CommandSpec] = &[
    SERVER.row(
        "syncset|list",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Lists the members of the sync set with their acknowledged offsets.",
        "8.10.0",
        list,
    ),
    SERVER.row(
        "syncset|remove",
        3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Removes a replica from the sync set once it has made itself unpromotable.",
        "8.10.0",
        remove,
    ),
    SERVER.row(
        "syncset|forget",
        4,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Removes a dead replica from the sync set at once, on the operator's attestation.",
        "8.10.0",
        forget,
    ),
    SERVER.row(
        "syncset|add",
        3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Lets a removed replica join the sync set again.",
        "8.10.0",
        add,
    ),
    SERVER.row(
        "syncset|confirm",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Lifts the fence of a primary restarted with synchronous replication on.",
        "8.10.0",
        confirm,
    ),
];

/// The sync set lives on a primary running the mode.
fn primary_with_mode(ctx: &Ctx<'_>) -> Result<(), ReplyError> {
    if ctx.core.repl.is_replica() {
        return Err(ReplyError::msg(
            "ERR SYNCSET changes the sync set of a primary; this server is a replica",
        ));
    }
    if !ctx.core.sync.on() {
        return Err(ReplyError::msg(
            "ERR synchronous replication is off (min-sync-replicas 0)",
        ));
    }
    Ok(())
}

/// The member argument `i` names, or the error.
fn member(ctx: &Ctx<'_>, i: usize) -> Result<String, ReplyError> {
    let name = String::from_utf8_lossy(ctx.arg(i)).into_owned();
    ctx.core
        .sync
        .find(&name)
        .ok_or_else(|| ReplyError::owned(format!("ERR no sync set member is named {name}")))
}

fn list(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let members: Vec<_> = ctx
        .core
        .sync
        .members
        .iter()
        .map(|(id, m)| (id.clone(), m.clone()))
        .collect();
    ctx.out.array(members.len());
    for (id, m) in members {
        ctx.out.array(8);
        ctx.out.bulk(b"id");
        ctx.out.bulk(id.as_bytes());
        ctx.out.bulk(b"addr");
        ctx.out.bulk(m.addr.as_bytes());
        ctx.out.bulk(b"ack");
        ctx.out.integer(m.ack as i64);
        ctx.out.bulk(b"state");
        ctx.out.bulk(if m.leaving_at.is_some() {
            b"leaving".as_slice()
        } else {
            b"member"
        });
    }
    Ok(())
}

fn remove(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    primary_with_mode(ctx)?;
    let id = member(ctx, 2)?;
    let core = &mut *ctx.core;
    core.sync.barred.insert(id.clone());
    let Some(m) = core.sync.members.get_mut(&id) else {
        return Err(ReplyError::msg("ERR no such sync set member"));
    };
    if m.leaving_at.is_none() {
        // Marked first, so the record leaves it out; it is out once it ACKs the offset
        // after the record (then it has applied it and made itself unpromotable).
        m.leaving_at = Some(u64::MAX);
        core.sync_announce();
        let at = core.repl.offset;
        if let Some(m) = core.sync.members.get_mut(&id) {
            m.leaving_at = Some(at);
            tracing::info!(replica = %m.addr, offset = at, "Replica leaving the sync set");
        }
    }
    ctx.out.ok();
    Ok(())
}

fn forget(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    primary_with_mode(ctx)?;
    if !ctx.arg(3).eq_ignore_ascii_case(ATTESTATION) {
        return Err(ReplyError::msg(
            "ERR SYNCSET FORGET removes a member without its cooperation: only for a replica that is dead or can never be promoted; say so with I-ATTEST-IT-IS-DEAD",
        ));
    }
    let id = member(ctx, 2)?;
    let core = &mut *ctx.core;
    core.sync.barred.insert(id.clone());
    if let Some(m) = core.sync.members.remove(&id) {
        tracing::warn!(replica = %m.addr, "Replica forgotten by the sync set on the operator's attestation");
    }
    // Replies held now were waiting for it: they fail rather than go out on a smaller set.
    core.sync.bump_shrinks();
    core.sync.recompute();
    core.sync_announce();
    ctx.out.ok();
    Ok(())
}

fn add(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    primary_with_mode(ctx)?;
    let name = String::from_utf8_lossy(ctx.arg(2)).into_owned();
    let core = &mut *ctx.core;
    let barred: Vec<String> = core.sync.barred.iter().cloned().collect();
    let by_addr: Vec<String> = core
        .repl
        .replicas
        .values()
        .filter(|r| format!("{}:{}", r.ip, r.port) == name)
        .filter_map(|r| r.sync_id.clone())
        .collect();
    let mut found = false;
    for id in barred {
        if id == name || by_addr.contains(&id) {
            core.sync.barred.remove(&id);
            found = true;
        }
    }
    if !found {
        return Err(ReplyError::owned(format!(
            "ERR no removed replica is named {name}"
        )));
    }
    ctx.out.ok();
    Ok(())
}

fn confirm(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    if ctx.core.sync.fenced_primary {
        tracing::warn!("Fence lifted by SYNCSET CONFIRM: serving as the primary");
        ctx.core.sync.fenced_primary = false;
    }
    ctx.out.ok();
    Ok(())
}
