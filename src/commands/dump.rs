//! DUMP and RESTORE (Redis `cluster.c` `dumpCommand` / `restoreCommand`): a key's value
//! in Redis's serialization format, so keys of every type move between Redis and
//! streamd with the tools built on these two commands. The format lives in `rdb/`
//! (`payload.rs`; `values.rs` for strings and collections, `stream.rs` for streams);
//! this file is the command surface. DUMP writes what Redis 7.0 RESTOREs; RESTORE reads
//! payloads of Redis 2.6 to 8.8 in every encoding they use, and replaces a key of any
//! type with REPLACE (no WRONGTYPE: the old value is simply deleted first).
//!
//! `RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f]` checks, in Redis's
//! order: the options (IDLETIME and FREQ exclude each other), BUSYKEY, the TTL, the
//! payload footer (`DUMP payload version or checksum are wrong`), then the value (`Bad
//! data format`, or an error naming a module/array or too new type). Nothing changes
//! until all of that passed. IDLETIME sets the key's LRU clock (under an LFU policy
//! it is ignored) and FREQ its LFU counter (ignored under the other policies), as
//! Redis's `objectSetLRUOrLFU` does; both travel with the logged effect.
//!
//! Side effects, as for COPY: the new key wakes blocked readers and invalidates WATCH;
//! a replaced key counts as deleted first. The logged effect is the RESTORE as given
//! with a relative TTL made absolute and `ABSTTL` appended (as Redis propagates it), or
//! `DEL key` when REPLACE removed a key and the TTL had already passed.

use super::{CommandSpec, flags::*, is, parse_i64};
use crate::core::Ctx;
use crate::core::notify::class;
use crate::error::ReplyError;
use crate::rdb::payload::{self, RestoreError};
use crate::rdb::types;
use crate::rdb::values::Loaded;
use crate::types::Value;
use bytes::Bytes;

const KEYSPACE: &[&str] = &["@keyspace"];

/// Where RESTORE is in [`COMMANDS`] (RESTORE-ASKING is a copy of its row).
pub const RESTORE_ROW: usize = 1;

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "dump",
        arity: 2,
        flags: READONLY,
        first_key: 1,
        last_key: 1,
        key_step: 1,
        acl: KEYSPACE,
        key_flags: super::keyflags::RO_ACCESS,
        summary: "Returns a serialized representation of the value stored at a key.",
        since: "2.6.0",
        group: "generic",
        handler: dump,
        subcommands: &[],
    },
    CommandSpec {
        name: "restore",
        arity: -4,
        flags: WRITE | DENYOOM,
        first_key: 1,
        last_key: 1,
        key_step: 1,
        acl: &["@keyspace", "@dangerous"],
        key_flags: &[super::keyflags::OW | super::keyflags::UPDATE],
        summary: "Creates a key from the serialized representation of a value.",
        since: "2.6.0",
        group: "generic",
        handler: restore,
        subcommands: &[],
    },
];

const BUSYKEY: ReplyError = ReplyError::msg("BUSYKEY Target key name already exists.");
const INVALID_TTL: ReplyError = ReplyError::msg("ERR Invalid TTL value, must be >= 0");
const INVALID_IDLETIME: ReplyError = ReplyError::msg("ERR Invalid IDLETIME value, must be >= 0");
const INVALID_FREQ: ReplyError = ReplyError::msg("ERR Invalid FREQ value, must be >= 0 and <= 255");
const VERSION_OR_CHECKSUM: ReplyError =
    ReplyError::msg("ERR DUMP payload version or checksum are wrong");
const BAD_DATA_FORMAT: ReplyError = ReplyError::msg("ERR Bad data format");

/// DUMP key: the payload, or a null bulk when the key does not exist.
fn dump(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let key = ctx.argv[1].clone();
    let defaults = ctx.core.idmp_defaults;
    if ctx.lookup_value(&key).is_none() {
        ctx.out.null();
        return Ok(());
    }
    let d = &ctx.core.dbs[ctx.client.db];
    let Some(value) = d.get(&key) else {
        ctx.out.null();
        return Ok(());
    };
    let p = payload::dump_value(value, d.hexpires.of(&key), defaults);
    ctx.out.bulk(&p);
    Ok(())
}

/// RESTORE's parsed options.
struct Restore {
    replace: bool,
    absttl: bool,
    /// IDLETIME, seconds.
    idle: Option<u64>,
    /// FREQ, 0..=255.
    freq: Option<u8>,
}

impl Restore {
    /// Redis's option loop: IDLETIME and FREQ need a value and exclude each other (the
    /// second one is a syntax error); values are checked as they are met.
    fn parse(argv: &[Bytes]) -> Result<Restore, ReplyError> {
        let mut r = Restore {
            replace: false,
            absttl: false,
            idle: None,
            freq: None,
        };
        let (mut idle, mut freq) = (false, false);
        let mut j = 4;
        while j < argv.len() {
            let more = argv.len() - j - 1;
            let a = &argv[j];
            if is(a, "REPLACE") {
                r.replace = true;
            } else if is(a, "ABSTTL") {
                r.absttl = true;
            } else if is(a, "IDLETIME") && more >= 1 && !freq {
                let secs = parse_i64(&argv[j + 1])?;
                if secs < 0 {
                    return Err(INVALID_IDLETIME);
                }
                r.idle = Some(secs as u64);
                idle = true;
                j += 1;
            } else if is(a, "FREQ") && more >= 1 && !idle {
                let f = parse_i64(&argv[j + 1])?;
                let Ok(f) = u8::try_from(f) else {
                    return Err(INVALID_FREQ);
                };
                r.freq = Some(f);
                freq = true;
                j += 1;
            } else {
                return Err(ReplyError::Syntax);
            }
            j += 1;
        }
        Ok(r)
    }
}

/// The refusal for a payload streamd does not read.
fn restore_error(e: RestoreError) -> ReplyError {
    match e {
        RestoreError::VersionOrChecksum => VERSION_OR_CHECKSUM,
        RestoreError::BadFormat(_) => BAD_DATA_FORMAT,
        RestoreError::NotStream(t) | RestoreError::Unsupported(t) => ReplyError::owned(format!(
            "ERR streamd does not store this type: the DUMP payload holds a {} (RDB type {t})",
            types::name(t)
        )),
        RestoreError::NewerType(t) => ReplyError::owned(format!(
            "ERR this DUMP payload holds RDB type {t}, newer than streamd knows; streamd \
             reads RDB types up to 28 (Redis 8.8)"
        )),
    }
}

/// True when Redis 7.0 RESTOREs a (verified) string or collection payload as it is:
/// version at most 10 and a type 7.0 knows (below 20).
fn redis_70_reads(p: &[u8]) -> bool {
    let n = p.len();
    n >= 10 && p[0] < 20 && u16::from_le_bytes([p[n - 10], p[n - 9]]) <= 10
}

/// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f].
fn restore(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let opts = Restore::parse(argv)?;
    let key = &argv[1];
    if !opts.replace && ctx.exists(key) {
        return Err(BUSYKEY);
    }
    let ttl = parse_i64(&argv[2])?;
    if ttl < 0 {
        return Err(INVALID_TTL);
    }
    let loaded = payload::restore_value(
        &argv[3],
        ctx.core.idmp_defaults,
        &ctx.core.thresholds,
        ctx.now_ms,
    )
    .map_err(restore_error)?;
    // A hash whose every field TTL has passed (Redis 7.4 types 24, 25) restores as a key
    // that expired at once.
    let (value, field_ttls) = match loaded {
        Loaded::Value(v) => (Some(v), None),
        Loaded::HashWithTtls(v, t) => (Some(v), Some(t)),
        Loaded::Empty | Loaded::Expired => (None, None),
    };
    let db = ctx.client.db;
    let deleted = opts.replace && {
        ctx.expire_if_needed(key);
        if ctx.core.dbs[db].remove(key).is_some() {
            ctx.core.key_deleted(db, key);
            true
        } else {
            false
        }
    };
    let at = match (ttl, opts.absttl) {
        (0, _) => None,
        (t, true) => Some(t as u64),
        (t, false) => Some(ctx.now_ms.saturating_add(t as u64)),
    };
    // While loading, the log says when keys went: a past deadline is kept as it is.
    let gone = at.is_some_and(|at| at <= ctx.now_ms && !ctx.core.replaying());
    let Some(value) = value.filter(|_| !gone) else {
        if deleted {
            ctx.notify(class::GENERIC, "del", key);
            ctx.core.dirty += 1;
            ctx.propagate(&[b"DEL".as_slice(), key]);
        }
        ctx.out.ok();
        return Ok(());
    };
    // A string or collection in an encoding Redis 7.0 lacks (7.2's set listpack, 7.4's
    // field-TTL hashes, or any payload of a version above 10) is logged in the form
    // streamd's DUMP writes, so that a Redis 7.0 replica reads it and the log replays
    // to what was restored (field TTLs already dropped). Streams are logged as given;
    // the Redis-forms translation rewrites them for Redis replicas.
    let logged = (!matches!(value, Value::Stream(_)) && !redis_70_reads(&argv[3]))
        .then(|| payload::dump_value(&value, field_ttls.as_ref(), ctx.core.idmp_defaults));
    let clock = ctx
        .core
        .evict
        .restored_clock(opts.freq, opts.idle, ctx.now_ms);
    let d = &mut ctx.core.dbs[db];
    d.insert(key, value);
    if let Some(clock) = clock {
        d.keys.set_clock(key, clock);
    }
    if let Some(at) = at {
        d.set_expire(key, at);
    }
    if let Some(t) = field_ttls {
        d.hexpires.put(key, t);
    }
    ctx.notify(class::NEW, "new", key);
    ctx.core.touch_key(db, key);
    ctx.core.ready_keys.push((db, key.clone()));
    ctx.notify(class::GENERIC, "restore", key);
    ctx.core.dirty += 1;
    // Redis's form: the arguments as given, except that a relative TTL becomes the
    // absolute deadline with ABSTTL appended; the payload is the one streamd logs.
    let relative = !opts.absttl && at.is_some();
    let ttl_text = itoa::Buffer::new().format(at.unwrap_or(0)).to_string();
    let mut effect: Vec<&[u8]> = vec![
        b"RESTORE".as_slice(),
        key,
        if relative {
            ttl_text.as_bytes()
        } else {
            &argv[2]
        },
        logged.as_deref().unwrap_or(&argv[3]),
    ];
    effect.extend(argv[4..].iter().map(|a| &a[..]));
    if relative {
        effect.push(b"ABSTTL");
    }
    ctx.propagate(&effect);
    ctx.out.ok();
    Ok(())
}
