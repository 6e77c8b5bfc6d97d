//! The XGROUP container: CREATE, SETID, DESTROY, CREATECONSUMER, DELCONSUMER and HELP
//! (reference §2.11), plus the small helpers the other consumer-group families share
//! ([`counters`]).
//!
//! Checks run in Redis's order (`xgroupCommand`), which decides which error a bad call
//! gets:
//!
//! ```text
//! 1. options after the ID (argv[5..]): MKSTREAM (CREATE only), ENTRIESREAD n
//!                                      (CREATE/SETID); anything else → subcommand error
//! 2. the key must exist (unless CREATE ... MKSTREAM)
//! 3. SETID/CREATECONSUMER/DELCONSUMER: the group must exist → NOGROUP
//! 4. argument counts: CREATE 5..=8, SETID 5 or 7        → subcommand error
//! 5. the ID (CREATE: strict or `$`; SETID: `-`/`+` accepted too)
//! ```
//!
//! So `XGROUP CREATE nokey g bad-id` reports the missing key, not the ID. A failed CREATE
//! never creates the key: MKSTREAM is applied only once nothing can fail any more.
//!
//! `XGROUP SETDLQ key group dlq-key MAXDELIVERIES n | NONE` is streamd's own (the
//! group's dead-letter stream, commands/deadletter.rs). `XGROUP HELP` keeps Redis's text,
//! so clients comparing it with Redis see no difference; docs/beyond-redis.md documents
//! the subcommand.

use super::STREAM;
use super::{CommandSpec, Family, flags::*, is, parse_i64};
use crate::core::Ctx;
use crate::core::notify::class;
use crate::error::{ReplyError, lossy};
use crate::resp::Argv;
use crate::stream::Stream;
use crate::stream::group::{DeadLetter, StreamCounters};
use crate::stream::id::{parse_id, parse_strict_id};

const KEY_REQUIRED: ReplyError = ReplyError::msg(
    "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.",
);
const BUSYGROUP: ReplyError = ReplyError::msg("BUSYGROUP Consumer Group name already exists");
const ENTRIESREAD_NEGATIVE: ReplyError =
    ReplyError::msg("ERR value for ENTRIESREAD must be positive or -1");
const MAXDELIVERIES_NOT_POSITIVE: ReplyError =
    ReplyError::msg("ERR MAXDELIVERIES must be a positive integer");
const DLQ_IS_THE_STREAM: ReplyError =
    ReplyError::msg("ERR the dead-letter stream must be another key than the group's stream");

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[CommandSpec {
    handler: xgroup_help,
    // Containers are only @slow in Redis: `+@stream` names the subcommands.
    ..CommandSpec::container(
        "xgroup",
        "stream",
        "A container for consumer groups commands.",
        "5.0.0",
        XGROUP_SUBCOMMANDS,
    )
}];

/// The family of XGROUP's subcommands: the key is the argument after the subcommand.
const XGROUP: Family = Family::new("stream").categories(STREAM).keys(2, 2, 1);

const XGROUP_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec {
        key_flags: super::keyflags::RW_INSERT,
        ..XGROUP.row(
            "xgroup|create",
            -5,
            WRITE | DENYOOM,
            "Creates a consumer group.",
            "5.0.0",
            xgroup_create,
        )
    },
    CommandSpec {
        key_flags: super::keyflags::RW_INSERT,
        ..XGROUP.row(
            "xgroup|createconsumer",
            5,
            WRITE | DENYOOM,
            "Creates a consumer in a consumer group.",
            "6.2.0",
            xgroup_createconsumer,
        )
    },
    CommandSpec {
        key_flags: super::keyflags::RW_DELETE,
        ..XGROUP.row(
            "xgroup|delconsumer",
            5,
            WRITE,
            "Deletes a consumer from a consumer group.",
            "5.0.0",
            xgroup_delconsumer,
        )
    },
    CommandSpec {
        key_flags: super::keyflags::RW_DELETE,
        ..XGROUP.row(
            "xgroup|destroy",
            4,
            WRITE,
            "Destroys a consumer group.",
            "5.0.0",
            xgroup_destroy,
        )
    },
    XGROUP.row(
        "xgroup|setid",
        -5,
        WRITE,
        "Sets the last-delivered ID of a consumer group.",
        "5.0.0",
        xgroup_setid,
    ),
    CommandSpec {
        flags: WRITE | MOVABLEKEYS,
        key_flags: &[super::keyflags::RW_UPDATE[0], super::keyflags::RW_INSERT[0]],
        ..XGROUP.row(
            "xgroup|setdlq",
            -5,
            WRITE,
            "Sets or clears the dead-letter stream of a consumer group (streamd).", // streamd's own: no Redis version has it (this is streamd's version).
            "0.1.0",
            xgroup_setdlq,
        )
    },
    CommandSpec {
        name: "xgroup|help",
        arity: 2,
        flags: LOADING | STALE,
        first_key: 0,
        last_key: 0,
        key_step: 0,
        acl: STREAM,
        summary: "Returns helpful text about the different subcommands.",
        since: "5.0.0",
        group: "stream",
        handler: xgroup_help,
        subcommands: &[],
        key_flags: super::default_key_flags(LOADING | STALE, 0),
    },
];

/// The stream counters the entries-read and lag rules read (reference §3.3), which must
/// agree with the stream's own getters.
pub fn counters(stream: &Stream) -> StreamCounters {
    StreamCounters {
        length: stream.len(),
        last_id: stream.last_id(),
        first_id: stream.first_id(),
        max_deleted_entry_id: stream.max_deleted_entry_id(),
        entries_added: stream.entries_added(),
    }
}

/// `XGROUP HELP`.
fn xgroup_help(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    super::reply_help(
        ctx,
        "XGROUP",
        &[
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
        ],
    );
    Ok(())
}

/// Which subcommand a [`XGroupOptions`] parse is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sub {
    Create,
    SetId,
    Other,
}

/// The options after the ID of `XGROUP CREATE` / `SETID` (step 1 of the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct XGroupOptions {
    /// MKSTREAM (CREATE only; may repeat).
    pub mkstream: bool,
    /// ENTRIESREAD: `None` when absent or -1 (unknown).
    pub entries_read: Option<u64>,
}

impl XGroupOptions {
    fn parse(argv: &Argv, sub: Sub) -> Result<XGroupOptions, ReplyError> {
        let mut opts = XGroupOptions::default();
        let mut i = 5;
        while i < argv.len() {
            let a = &argv[i];
            if sub == Sub::Create && is(a, "MKSTREAM") {
                opts.mkstream = true;
                i += 1;
            } else if sub != Sub::Other && is(a, "ENTRIESREAD") && i + 1 < argv.len() {
                let n = parse_i64(&argv[i + 1])?;
                opts.entries_read = match n {
                    -1 => None,
                    n if n < 0 => return Err(ENTRIESREAD_NEGATIVE),
                    n => Some(n as u64),
                };
                i += 2;
            } else {
                return Err(subcommand_syntax(argv));
            }
        }
        Ok(opts)
    }
}

/// `ERR unknown subcommand or wrong number of arguments for '<sub>'. Try XGROUP HELP.`
fn subcommand_syntax(argv: &Argv) -> ReplyError {
    ReplyError::SubcommandSyntax {
        sub: lossy(&argv[1]),
        container: "XGROUP".to_string(),
    }
}

fn no_group(key: &[u8], group: &[u8]) -> ReplyError {
    ReplyError::NoGroupForKey {
        key: lossy(key),
        group: lossy(group),
    }
}

/// The 8.2 cap: an ENTRIESREAD above the stream's entries-added is silently lowered.
fn cap_entries_read(entries_read: Option<u64>, stream: &Stream) -> Option<u64> {
    entries_read.map(|n| n.min(stream.entries_added()))
}

/// `XGROUP CREATE key group <id | $> [MKSTREAM] [ENTRIESREAD n]`.
fn xgroup_create(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let opts = XGroupOptions::parse(argv, Sub::Create)?;
    let (key, group) = (&argv[2], &argv[3]);
    let exists = ctx.lookup(key)?.is_some();
    if !exists && !opts.mkstream {
        return Err(KEY_REQUIRED);
    }
    if !(5..=8).contains(&argv.len()) {
        return Err(subcommand_syntax(argv));
    }
    let id = if argv[4].as_ref() == b"$" {
        ctx.lookup(key)?.map(|s| s.last_id()).unwrap_or_default()
    } else {
        parse_strict_id(&argv[4])?
    };
    if !exists {
        // MKSTREAM, now that the command can no longer fail.
        // The final `modified` covers WATCH and the dirty count of both changes.
        ctx.db().insert(key, Stream::new());
        ctx.signal_ready(key);
    }
    let Some(stream) = ctx.lookup(key)? else {
        return Err(KEY_REQUIRED);
    };
    let entries_read = cap_entries_read(opts.entries_read, stream);
    if !stream.groups_mut().create(group, id, entries_read) {
        return Err(BUSYGROUP);
    }
    ctx.modified(key);
    // MKSTREAM's `new` comes first, as Redis adds the key before creating the group.
    if !exists {
        ctx.notify(class::NEW, "new", key);
    }
    ctx.notify(class::STREAM, "xgroup-create", key);
    // Logged with `$` resolved and the read counter as set (persist/groups.rs).
    let (id_text, id_len) = id.format();
    let read = entries_read.map_or_else(|| "-1".to_string(), |n| n.to_string());
    let mut effect: Vec<&[u8]> = vec![b"XGROUP", b"CREATE", key, group, &id_text[..id_len]];
    if !exists {
        effect.push(b"MKSTREAM");
    }
    effect.extend([b"ENTRIESREAD".as_slice(), read.as_bytes()]);
    ctx.propagate(&effect);
    ctx.out.ok();
    Ok(())
}

/// `XGROUP SETID key group <id | $> [ENTRIESREAD n]`. Does not wake anyone.
fn xgroup_setid(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let opts = XGroupOptions::parse(argv, Sub::SetId)?;
    let (key, group) = (&argv[2], &argv[3]);
    let stream = ctx.lookup(key)?.ok_or(KEY_REQUIRED)?;
    if stream.groups().get(group).is_none() {
        return Err(no_group(key, group));
    }
    if argv.len() != 5 && argv.len() != 7 {
        return Err(subcommand_syntax(argv));
    }
    let id = if argv[4].as_ref() == b"$" {
        stream.last_id()
    } else {
        parse_id(&argv[4], 0)?
    };
    let entries_read = cap_entries_read(opts.entries_read, stream);
    stream
        .group_mut(group)
        .expect("checked above")
        .set_last_id(id, entries_read);
    ctx.modified(key);
    ctx.notify(class::STREAM, "xgroup-setid", key);
    let (id_text, id_len) = id.format();
    let read = entries_read.map_or_else(|| "-1".to_string(), |n| n.to_string());
    ctx.propagate(&[
        b"XGROUP".as_slice(),
        b"SETID",
        key,
        group,
        &id_text[..id_len],
        b"ENTRIESREAD",
        read.as_bytes(),
    ]);
    ctx.out.ok();
    Ok(())
}

/// `XGROUP SETDLQ key group dlq-key MAXDELIVERIES n` / `XGROUP SETDLQ key group NONE`
/// (streamd's own; commands/deadletter.rs): sets or clears the group's dead-letter
/// stream. Checks in XGROUP's order: the key, the group, the argument count and words,
/// then the values (MAXDELIVERIES a positive integer, the dead-letter key another key).
/// `+OK`; logged as given (normalised) when it changed something.
fn xgroup_setdlq(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (key, group) = (&argv[2], &argv[3]);
    let stream = ctx.lookup(key)?.ok_or(KEY_REQUIRED)?;
    if stream.groups().get(group).is_none() {
        return Err(no_group(key, group));
    }
    let dlq = match argv.len() {
        5 if is(&argv[4], "NONE") => None,
        7 if is(&argv[5], "MAXDELIVERIES") => {
            let n = parse_i64(&argv[6])
                .ok()
                .and_then(|n| u64::try_from(n).ok())
                .filter(|&n| n >= 1)
                .ok_or(MAXDELIVERIES_NOT_POSITIVE)?;
            if argv[4] == *key {
                return Err(DLQ_IS_THE_STREAM);
            }
            Some(DeadLetter {
                key: argv[4].as_ref().into(),
                max_deliveries: n,
            })
        }
        _ => return Err(subcommand_syntax(argv)),
    };
    let record = setdlq_record(key, group, dlq.as_ref());
    let changed = stream
        .group_mut(group)
        .expect("checked above")
        .set_dead_letter(dlq);
    if changed {
        ctx.modified(key);
        ctx.propagate(&record);
    }
    ctx.out.ok();
    Ok(())
}

/// `XGROUP SETDLQ <key> <group> <dlq-key> MAXDELIVERIES <n>`, or `... NONE` without a
/// dead-letter stream: the form the log and snapshots carry.
pub fn setdlq_record(key: &[u8], group: &[u8], dlq: Option<&DeadLetter>) -> Vec<Vec<u8>> {
    let mut r = vec![
        b"XGROUP".to_vec(),
        b"SETDLQ".to_vec(),
        key.to_vec(),
        group.to_vec(),
    ];
    match dlq {
        Some(d) => r.extend([
            d.key.to_vec(),
            b"MAXDELIVERIES".to_vec(),
            crate::commands::effects::int(d.max_deliveries),
        ]),
        None => r.push(b"NONE".to_vec()),
    }
    r
}

/// `XGROUP DESTROY key group`: `:1` and a wake-up for blocked XREADGROUP readers (who
/// then get NOGROUP), or `:0` when there is no such group.
fn xgroup_destroy(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (key, group) = (&argv[2], &argv[3]);
    let stream = ctx.lookup(key)?.ok_or(KEY_REQUIRED)?;
    // Looked up first: a stream without groups keeps its boxed state unallocated.
    if stream.groups().get(group).is_none() || !stream.groups_mut().destroy(group) {
        ctx.out.integer(0);
        return Ok(());
    }
    ctx.modified(key);
    ctx.notify(class::STREAM, "xgroup-destroy", key);
    ctx.signal_ready(key);
    ctx.propagate(argv);
    ctx.out.integer(1);
    Ok(())
}

/// `XGROUP CREATECONSUMER key group consumer`: `:1` if created, `:0` if it existed.
fn xgroup_createconsumer(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (key, group, consumer) = (&argv[2], &argv[3], &argv[4]);
    let now = ctx.now_ms;
    let stream = ctx.lookup(key)?.ok_or(KEY_REQUIRED)?;
    let mut g = stream
        .group_mut(group)
        .ok_or_else(|| no_group(key, group))?;
    let created = g.create_consumer(consumer, now);
    if created {
        ctx.modified(key);
        ctx.notify(class::STREAM, "xgroup-createconsumer", key);
        ctx.propagate(argv);
        crate::commands::effects::log_consumer(ctx, key, group, consumer);
    }
    ctx.out.integer(i64::from(created));
    Ok(())
}

/// `XGROUP DELCONSUMER key group consumer`: the consumer's pending count before it was
/// deleted (its pending entries leave the group PEL), 0 if there was no such consumer.
fn xgroup_delconsumer(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (key, group, consumer) = (&argv[2], &argv[3], &argv[4]);
    let stream = ctx.lookup(key)?.ok_or(KEY_REQUIRED)?;
    let mut g = stream
        .group_mut(group)
        .ok_or_else(|| no_group(key, group))?;
    let pending = g.delete_consumer(consumer);
    if pending.is_some() {
        ctx.modified(key);
        ctx.notify(class::STREAM, "xgroup-delconsumer", key);
        ctx.propagate(argv);
    }
    let pending = pending.unwrap_or(0);
    ctx.out.integer(i64::try_from(pending).unwrap_or(i64::MAX));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::resp::argv;

    #[test]
    fn create_options_parse_in_any_order_and_mkstream_may_repeat() {
        let p = |a: &[&str]| XGroupOptions::parse(&argv(a), Sub::Create);
        assert_eq!(
            p(&["xgroup", "create", "k", "g", "$"]),
            Ok(XGroupOptions::default())
        );
        assert_eq!(
            p(&[
                "xgroup",
                "create",
                "k",
                "g",
                "$",
                "mkstream",
                "ENTRIESREAD",
                "5",
                "MKSTREAM"
            ]),
            Ok(XGroupOptions {
                mkstream: true,
                entries_read: Some(5)
            })
        );
        assert_eq!(
            p(&["xgroup", "create", "k", "g", "$", "ENTRIESREAD", "-1"]),
            Ok(XGroupOptions::default())
        );
    }

    #[test]
    fn option_errors_match_redis() {
        let err = |a: &[&str], sub| XGroupOptions::parse(&argv(a), sub).unwrap_err().to_string();
        assert_eq!(
            err(&["xgroup", "Create", "k", "g", "$", "FOO"], Sub::Create),
            "ERR unknown subcommand or wrong number of arguments for 'Create'. Try XGROUP HELP."
        );
        assert_eq!(
            err(&["xgroup", "SETID", "k", "g", "$", "MKSTREAM"], Sub::SetId),
            "ERR unknown subcommand or wrong number of arguments for 'SETID'. Try XGROUP HELP."
        );
        assert_eq!(
            err(
                &["xgroup", "create", "k", "g", "$", "ENTRIESREAD"],
                Sub::Create
            ),
            "ERR unknown subcommand or wrong number of arguments for 'create'. Try XGROUP HELP."
        );
        assert_eq!(
            err(
                &["xgroup", "create", "k", "g", "$", "ENTRIESREAD", "-3"],
                Sub::Create
            ),
            "ERR value for ENTRIESREAD must be positive or -1"
        );
        assert_eq!(
            err(
                &["xgroup", "create", "k", "g", "$", "ENTRIESREAD", "x"],
                Sub::Create
            ),
            "ERR value is not an integer or out of range"
        );
    }
}
