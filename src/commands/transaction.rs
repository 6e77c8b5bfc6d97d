//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH (Redis `multi.c`).
//!
//! A client in MULTI has `client.multi = Some(queue)`; [`Core::execute`] queues every
//! command that lacks the `NO_MULTI_QUEUE` flag and answers `+QUEUED`. An error found
//! before queuing (unknown command, arity, auth) sets `client.multi_error`, and EXEC
//! then answers EXECABORT.
//!
//! WATCH is optimistic locking by version numbers: `core.watched_keys` maps each watched
//! `(db, key)` to `(version, watchers)`; every write, deletion, expiry or flush of the
//! key bumps the version ([`Core::touch_key`]). The client remembers the version it saw
//! at WATCH time in `client.watched`; EXEC fails with a null array when any remembered
//! version differs from the current one, or when a watched key has logically expired
//! since (Redis 7.0 `isWatchedKeyExpired`). WATCH first expires the key lazily, so a key
//! that was already expired when watched never fails EXEC by its later deletion.
//!
//! While EXEC runs the queue, `client.in_exec` is set and `client.multi` is still
//! `Some` (as Redis keeps `CLIENT_MULTI` during EXEC): blocking reads answer at once.
//!
//! [`Core::execute`]: crate::core::Core::execute
//! [`Core::touch_key`]: crate::core::Core::touch_key

use super::{CommandSpec, Family, flags::*};
use crate::core::Ctx;
use crate::error::ReplyError;
use bytes::Bytes;

const TRANSACTION: &[&str] = &["@transaction"];

/// The family of the transaction commands.
const TRANSACTIONS: Family = Family::new("transactions").categories(TRANSACTION);

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    TRANSACTIONS.row(
        "multi",
        1,
        NO_MULTI_QUEUE | NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY,
        "Starts a transaction.",
        "1.2.0",
        multi,
    ),
    TRANSACTIONS.row(
        "exec",
        1,
        NO_MULTI_QUEUE | NOSCRIPT | LOADING | STALE | SKIP_SLOWLOG,
        "Executes all commands in a transaction.",
        "1.2.0",
        exec,
    ),
    TRANSACTIONS.row(
        "discard",
        1,
        NO_MULTI_QUEUE | NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY,
        "Discards a transaction.",
        "2.0.0",
        discard,
    ),
    CommandSpec {
        key_flags: super::keyflags::RO_ONLY,
        ..TRANSACTIONS
            .row(
                "watch",
                -2,
                NO_MULTI_QUEUE | NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY,
                "Monitors changes to keys to determine the execution of a transaction.",
                "2.2.0",
                watch,
            )
            .keys(1, -1, 1)
    },
    // UNWATCH is queued inside MULTI, as in Redis.
    TRANSACTIONS.row(
        "unwatch",
        1,
        NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY,
        "Forgets about watched keys of a transaction.",
        "2.2.0",
        unwatch,
    ),
];

const MULTI_NESTED: ReplyError = ReplyError::msg("ERR MULTI calls can not be nested");
const EXEC_WITHOUT_MULTI: ReplyError = ReplyError::msg("ERR EXEC without MULTI");
const DISCARD_WITHOUT_MULTI: ReplyError = ReplyError::msg("ERR DISCARD without MULTI");
const WATCH_INSIDE_MULTI: ReplyError = ReplyError::msg("ERR WATCH inside MULTI is not allowed");

fn multi(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    if ctx.client.multi.is_some() {
        // Not a queuing error: the transaction goes on (Redis does not flag it).
        return Err(MULTI_NESTED);
    }
    ctx.client.multi = Some(Vec::new());
    ctx.client.multi_error = false;
    ctx.out.ok();
    Ok(())
}

/// Leaves MULTI and forgets the watched keys (Redis `discardTransaction`).
fn discard_transaction(ctx: &mut Ctx<'_>) {
    ctx.client.multi = None;
    ctx.client.multi_error = false;
    ctx.core.unwatch_all(ctx.client);
}

/// True when a watched key changed since WATCH, or has logically expired since.
fn watched_keys_dirty(ctx: &Ctx<'_>) -> bool {
    ctx.client.watched.iter().any(|(db, key, version)| {
        ctx.core.watch_version(*db, key) != *version
            || ctx.core.dbs[*db].is_expired(key, ctx.now_ms)
    })
}

fn exec(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    if ctx.client.multi.is_none() {
        return Err(EXEC_WITHOUT_MULTI);
    }
    if ctx.client.multi_error {
        discard_transaction(ctx);
        return Err(ReplyError::ExecAbort);
    }
    if watched_keys_dirty(ctx) {
        discard_transaction(ctx);
        ctx.out.null_array();
        return Ok(());
    }
    // Unwatch before running: the transaction's own writes must not matter.
    ctx.core.unwatch_all(ctx.client);
    let queue = ctx
        .client
        .multi
        .replace(Vec::new())
        .expect("checked above: the client is in MULTI");
    ctx.client.in_exec = true;
    ctx.out.array(queue.len());
    for argv in &queue {
        // Every queued command passed lookup, subcommand resolution and arity when it
        // was queued; resolve again to get its spec.
        let spec = super::lookup(&argv[0])
            .ok_or(ReplyError::Syntax)
            .and_then(|spec| super::resolve_subcommand(spec, argv));
        match spec {
            Ok(spec) => {
                // Permissions may have changed since the command was queued.
                match ctx.core.acl_check(
                    ctx.client,
                    spec,
                    argv,
                    crate::core::acl::log::Context::Multi,
                ) {
                    Ok(()) => {
                        ctx.core.call(ctx.client, spec, argv, ctx.out, ctx.now_ms);
                    }
                    Err(denied) => ctx.out.error(&denied.changed_reply()),
                }
            }
            Err(err) => ctx.out.error(&err),
        }
    }
    ctx.client.in_exec = false;
    ctx.client.multi = None;
    ctx.client.multi_error = false;
    ctx.client.last_cmd = "exec";
    Ok(())
}

fn discard(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    if ctx.client.multi.is_none() {
        return Err(DISCARD_WITHOUT_MULTI);
    }
    discard_transaction(ctx);
    ctx.out.ok();
    Ok(())
}

fn watch(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    if ctx.client.multi.is_some() {
        return Err(WATCH_INSIDE_MULTI);
    }
    let argv = ctx.argv;
    let db = ctx.client.db;
    for key in &argv[1..] {
        if ctx
            .client
            .watched
            .iter()
            .any(|(d, k, _)| *d == db && k == key)
        {
            continue;
        }
        // A key already expired is deleted now, so its deletion cannot fail EXEC later.
        ctx.expire_if_needed(key);
        let entry = ctx
            .core
            .watched_keys
            .entry((db, Bytes::clone(key)))
            .or_insert((0, 0));
        entry.1 += 1;
        let version = entry.0;
        ctx.client.watched.push((db, Bytes::clone(key), version));
    }
    ctx.out.ok();
    Ok(())
}

fn unwatch(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    ctx.core.unwatch_all(ctx.client);
    ctx.out.ok();
    Ok(())
}
