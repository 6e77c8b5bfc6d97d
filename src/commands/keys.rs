//! Generic keyspace commands (Redis `db.c`, `expire.c`, `object.c`): DEL, UNLINK,
//! EXISTS, TYPE, KEYS, SCAN, RANDOMKEY, RENAME, RENAMENX, COPY, MOVE, the EXPIRE/TTL
//! family, PERSIST, TOUCH, OBJECT and MEMORY USAGE.
//!
//! A key holds one of six types (`types::Value`): `TYPE` names it, `OBJECT ENCODING`
//! names the encoding a Redis would use for it at its size, `SCAN ... TYPE` filters on
//! it; RENAME, COPY and MOVE carry any of them.
//!
//! Side effects every write here keeps, as Redis does:
//!
//! ```text
//! key removed (DEL, RENAME src, MOVE src, EXPIRE in the past)  core.key_deleted(db, key)
//!                                                              (WATCH + wake XREADGROUP)
//! key created/overwritten (RENAME dst, COPY dst, MOVE dst)     touch_key + ready_keys
//! key changed in place (EXPIRE, PERSIST)                       ctx.modified(key)
//! every successful write                                       core.dirty += 1
//!                                                              ctx.propagate(effect)
//! ```
//!
//! Logged effects (persist/): DEL, UNLINK, RENAME, RENAMENX, COPY, MOVE and PERSIST
//! verbatim when they changed something; the EXPIRE family as `PEXPIREAT key <unix ms>`
//! (or `DEL key` when the deadline has passed); keys expired on lookup as `DEL key`.
//!
//! Lookups expire keys lazily first (`ctx.expire_if_needed`), so an expired key is
//! never seen, counted or copied.

use super::{CommandSpec, Family, flags::*, is, parse_i64};
use crate::core::notify::class;
use crate::core::{Core, Ctx, evict};
use crate::error::{ReplyError, lossy};
use crate::types::{Kind, Value};
use crate::util::glob_match;
use bytes::Bytes;

const KEYSPACE: &[&str] = &["@keyspace"];
const KEYSPACE_DANGEROUS: &[&str] = &["@keyspace", "@dangerous"];

/// The family of the generic (keyspace) commands.
const GENERIC: Family = Family::new("generic").categories(KEYSPACE);

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        key_flags: super::keyflags::RM_DELETE,
        ..GENERIC.row("del", -2, WRITE, "Deletes one or more keys.", "1.0.0", del).keys(1, -1, 1)
    },
    CommandSpec {
        key_flags: super::keyflags::RM_DELETE,
        ..GENERIC.row("unlink", -2, WRITE | FAST, "Asynchronously deletes one or more keys.", "4.0.0", del).keys(1, -1, 1)
    },
    CommandSpec {
        key_flags: super::keyflags::RO_ONLY,
        ..GENERIC.row("exists", -2, READONLY | FAST, "Determines whether one or more keys exist.", "1.0.0", exists).keys(1, -1, 1)
    },
    CommandSpec {
        key_flags: super::keyflags::RO_ONLY,
        ..GENERIC.row("type", 2, READONLY | FAST, "Determines the type of value stored at a key.", "1.0.0", type_).keys(1, 1, 1)
    },
    CommandSpec {
        acl: KEYSPACE_DANGEROUS,
        ..GENERIC.row("keys", 2, READONLY, "Returns all key names that match a pattern.", "1.0.0", keys)
    },
    GENERIC.row("scan", -2, READONLY, "Iterates over the key names in the database.", "2.8.0", scan),
    GENERIC.row("randomkey", 1, READONLY, "Returns a random key name from the database.", "1.0.0", randomkey),
    CommandSpec {
        key_flags: &[
            super::keyflags::RW | super::keyflags::ACCESS | super::keyflags::DELETE,
            super::keyflags::OW | super::keyflags::UPDATE,
        ],
        ..GENERIC.row("rename", 3, WRITE, "Renames a key and overwrites the destination.", "1.0.0", rename).keys(1, 2, 1)
    },
    CommandSpec {
        key_flags: &[
            super::keyflags::RW | super::keyflags::ACCESS | super::keyflags::DELETE,
            super::keyflags::OW | super::keyflags::INSERT,
        ],
        ..GENERIC.row("renamenx", 3, WRITE | FAST, "Renames a key only when the target key name doesn't exist.", "1.0.0", renamenx).keys(1, 2, 1)
    },
    CommandSpec {
        key_flags: &[
            super::keyflags::RO | super::keyflags::ACCESS,
            super::keyflags::OW | super::keyflags::UPDATE,
        ],
        ..GENERIC.row("copy", -3, WRITE | DENYOOM, "Copies the value of a key to a new key.", "6.2.0", copy).keys(1, 2, 1)
    },
    CommandSpec {
        key_flags: &[super::keyflags::RW | super::keyflags::ACCESS | super::keyflags::UPDATE],
        ..GENERIC.row("move", 3, WRITE | FAST, "Moves a key to another database.", "1.0.0", move_).keys(1, 1, 1)
    },
    GENERIC.row("expire", -3, WRITE | FAST, "Sets the expiration time of a key in seconds.", "1.0.0", expire).keys(1, 1, 1),
    GENERIC.row("pexpire", -3, WRITE | FAST, "Sets the expiration time of a key in milliseconds.", "2.6.0", pexpire).keys(1, 1, 1),
    GENERIC.row("expireat", -3, WRITE | FAST, "Sets the expiration time of a key to a Unix timestamp.", "1.2.0", expireat).keys(1, 1, 1),
    GENERIC.row("pexpireat", -3, WRITE | FAST, "Sets the expiration time of a key to a Unix milliseconds timestamp.", "2.6.0", pexpireat).keys(1, 1, 1),
    GENERIC.row("ttl", 2, READONLY | FAST, "Returns the expiration time in seconds of a key.", "1.0.0", ttl).keys(1, 1, 1),
    GENERIC.row("pttl", 2, READONLY | FAST, "Returns the expiration time in milliseconds of a key.", "2.6.0", pttl).keys(1, 1, 1),
    GENERIC.row("expiretime", 2, READONLY | FAST, "Returns the expiration time of a key as a Unix timestamp.", "7.0.0", expiretime).keys(1, 1, 1),
    GENERIC.row("pexpiretime", 2, READONLY | FAST, "Returns the expiration time of a key as a Unix milliseconds timestamp.", "7.0.0", pexpiretime).keys(1, 1, 1),
    GENERIC.row("persist", 2, WRITE | FAST, "Removes the expiration time of a key.", "2.2.0", persist).keys(1, 1, 1),
    CommandSpec {
        key_flags: super::keyflags::RO_ONLY,
        ..GENERIC.row("touch", -2, READONLY | FAST, "Returns the number of existing keys out of those specified after updating the time they were last accessed.", "3.2.1", touch).keys(1, -1, 1)
    },
    CommandSpec::container("object", "generic", "A container for object introspection commands.", "2.2.3", OBJECT_SUBCOMMANDS),
];

const OBJECT_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec {
        key_flags: super::keyflags::RO_ONLY,
        ..GENERIC
            .row(
                "object|encoding",
                3,
                READONLY,
                "Returns the internal encoding of a Redis object.",
                "2.2.3",
                object_encoding,
            )
            .keys(2, 2, 1)
    },
    CommandSpec {
        key_flags: super::keyflags::RO_ONLY,
        ..GENERIC
            .row(
                "object|freq",
                3,
                READONLY,
                "Returns the logarithmic access frequency counter of a Redis object.",
                "4.0.0",
                object_freq,
            )
            .keys(2, 2, 1)
    },
    CommandSpec {
        key_flags: super::keyflags::RO_ONLY,
        ..GENERIC
            .row(
                "object|idletime",
                3,
                READONLY,
                "Returns the time since the last access to a Redis object.",
                "2.2.3",
                object_idletime,
            )
            .keys(2, 2, 1)
    },
    CommandSpec {
        key_flags: super::keyflags::RO_ONLY,
        ..GENERIC
            .row(
                "object|refcount",
                3,
                READONLY,
                "Returns the reference count of a value of a key.",
                "2.2.3",
                object_refcount,
            )
            .keys(2, 2, 1)
    },
    GENERIC.row(
        "object|help",
        2,
        LOADING | STALE,
        "Returns helpful text about the different subcommands.",
        "6.2.0",
        object_help,
    ),
];

const DB_OUT_OF_RANGE: ReplyError = ReplyError::msg("ERR DB index is out of range");
const SAME_OBJECT: ReplyError = ReplyError::msg("ERR source and destination objects are the same");
/// COPY with a database other than 0 on either side in cluster mode (Redis: `copyCommand`).
const COPY_CLUSTER_DB: ReplyError =
    ReplyError::msg("ERR Copying to another database is not allowed in cluster mode");
/// `getIntFromObjectOrReply`'s error for an integer outside i32.
const INT_OUT_OF_RANGE: ReplyError =
    ReplyError::msg("ERR value is out of range, value must between -2147483648 and 2147483647");
const INVALID_CURSOR: ReplyError = ReplyError::msg("ERR invalid cursor");
const NX_AND_OTHERS: ReplyError =
    ReplyError::msg("ERR NX and XX, GT or LT options at the same time are not compatible");
const GT_AND_LT: ReplyError =
    ReplyError::msg("ERR GT and LT options at the same time are not compatible");
const LFU_SELECTED: ReplyError = ReplyError::msg(
    "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
);
const LFU_NOT_SELECTED: ReplyError = ReplyError::msg(
    "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
);

// --- helpers ---------------------------------------------------------------------------

/// Side effects of a key being created or overwritten in `db`: WATCH invalidation and
/// waking blocked readers (Redis: `signalModifiedKey` + `signalKeyAsReady` in `dbAdd`).
fn key_created(core: &mut Core, db: usize, key: &Bytes) {
    core.touch_key(db, key);
    core.ready_keys.push((db, key.clone()));
}

/// A database number argument (`getIntFromObjectOrReply` + `selectDb`'s range check).
fn parse_db(core: &Core, arg: &[u8]) -> Result<usize, ReplyError> {
    let n = parse_i64(arg)?;
    if i32::try_from(n).is_err() {
        return Err(INT_OUT_OF_RANGE);
    }
    if n < 0 || n as usize >= core.dbs.len() {
        return Err(DB_OUT_OF_RANGE);
    }
    Ok(n as usize)
}

// --- DEL, EXISTS, TYPE, TOUCH ----------------------------------------------------------

/// DEL and UNLINK: UNLINK (and DEL under `lazyfree-lazy-user-del`) frees big values on
/// the background thread (`core/lazyfree.rs`); the keys are gone at once either way.
fn del(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let lazy = is(&argv[0], "UNLINK") || ctx.core.lazy.user_del;
    let mut deleted = 0;
    for key in &argv[1..] {
        ctx.expire_if_needed(key);
        if ctx.delete_key_freeing(key, lazy) {
            ctx.core.dirty += 1;
            deleted += 1;
        }
    }
    if deleted > 0 {
        ctx.propagate(argv);
    }
    ctx.out.integer(deleted);
    Ok(())
}

/// EXISTS: how many of the keys exist, duplicates counted. Not an access to them
/// (Redis looks them up with `LOOKUP_NOTOUCH`; see `core/evict.rs`).
fn exists(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let n = argv[1..]
        .iter()
        .filter(|k| ctx.lookup_value(k).is_some())
        .count();
    ctx.out.integer(n as i64);
    Ok(())
}

/// TOUCH: like EXISTS, but each key found counted as accessed (its LRU clock or LFU
/// counter was updated before the command ran, even for a client in CLIENT NO-TOUCH
/// mode: `Core::touch_keys`).
fn touch(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    exists(ctx)
}

/// TYPE: not an access to the key (`LOOKUP_NOTOUCH`; see `core/evict.rs`).
fn type_(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let name: &[u8] = match ctx.lookup_value(&argv[1]) {
        Some(v) => v.kind().name().as_bytes(),
        None => b"none",
    };
    ctx.out.simple(name);
    Ok(())
}

// --- KEYS, SCAN, RANDOMKEY -------------------------------------------------------------

/// KEYS pattern: every live key matching the glob, in scan order.
fn keys(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let pattern = &ctx.argv[1];
    let all = pattern.as_ref() == b"*";
    let now = ctx.now_ms;
    let db = &ctx.core.dbs[ctx.client.db];
    let (_, candidates) = db.scan(0, usize::MAX);
    let found: Vec<Bytes> = candidates
        .into_iter()
        .filter(|k| (all || glob_match(pattern, k, false)) && !db.is_expired(k, now))
        .collect();
    ctx.out.array(found.len());
    for k in &found {
        ctx.out.bulk(k);
    }
    Ok(())
}

/// Parses a SCAN cursor as Redis's `parseScanCursorOrReply` does with `strtoul`: an
/// optional sign (a negative value wraps), decimal digits, nothing else; an empty
/// string is 0; leading white space and overflow are refused.
pub fn parse_scan_cursor(arg: &[u8]) -> Result<u64, ReplyError> {
    let (negative, digits) = match arg.first() {
        None => return Ok(0),
        Some(b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') => return Err(INVALID_CURSOR),
        Some(b'-') => (true, &arg[1..]),
        Some(b'+') => (false, &arg[1..]),
        Some(_) => (false, arg),
    };
    if digits.is_empty() {
        return Err(INVALID_CURSOR);
    }
    let mut value: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return Err(INVALID_CURSOR);
        }
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(d - b'0')))
            .ok_or(INVALID_CURSOR)?;
    }
    Ok(if negative {
        value.wrapping_neg()
    } else {
        value
    })
}

/// SCAN's parsed arguments.
struct Scan {
    cursor: u64,
    pattern: Option<Bytes>,
    count: usize,
    /// TYPE filter: the type keys must have; `Some(None)` for a name that is no type
    /// (no key matches, as in Redis 7.0).
    kind: Option<Option<Kind>>,
}

impl Scan {
    /// Redis's default COUNT.
    const DEFAULT_COUNT: usize = 10;

    fn parse(argv: &[Bytes]) -> Result<Scan, ReplyError> {
        let cursor = parse_scan_cursor(&argv[1])?;
        let mut scan = Scan {
            cursor,
            pattern: None,
            count: Self::DEFAULT_COUNT,
            kind: None,
        };
        let mut i = 2;
        while i < argv.len() {
            let has_value = i + 1 < argv.len();
            if is(&argv[i], "COUNT") && has_value {
                let n = parse_i64(&argv[i + 1])?;
                if n < 1 {
                    return Err(ReplyError::Syntax);
                }
                scan.count = usize::try_from(n).unwrap_or(usize::MAX);
            } else if is(&argv[i], "MATCH") && has_value {
                let p = &argv[i + 1];
                scan.pattern = (p.as_ref() != b"*").then(|| p.clone());
            } else if is(&argv[i], "TYPE") && has_value {
                scan.kind = Some(Kind::from_name(&argv[i + 1]));
            } else if is(&argv[i], "NOVALUES") {
                return Err(super::hash::NOVALUES_ONLY_HSCAN);
            } else {
                return Err(ReplyError::Syntax);
            }
            i += 2;
        }
        Ok(scan)
    }
}

/// SCAN cursor [MATCH p] [COUNT n] [TYPE t]: `[next-cursor, [keys]]`. The cursor is
/// Redis's reverse-binary bucket cursor over the database's dict, so every key present
/// for the whole iteration is returned at least once (`Db::scan`).
fn scan(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let args = Scan::parse(ctx.argv)?;
    let db = ctx.client.db;
    let (next, batch) = ctx.core.dbs[db].scan(args.cursor, args.count);
    let mut found = Vec::with_capacity(batch.len());
    for key in batch {
        if let Some(p) = &args.pattern
            && !glob_match(p, &key, false)
        {
            continue;
        }
        ctx.expire_if_needed(&key);
        let kind = ctx.core.dbs[db].get(&key).map(Value::kind);
        match (kind, args.kind) {
            (None, _) => {}
            (Some(_), None) => found.push(key),
            (Some(k), Some(want)) if Some(k) == want => found.push(key),
            _ => {}
        }
    }
    ctx.out.array(2);
    ctx.out.bulk(itoa::Buffer::new().format(next).as_bytes());
    ctx.out.array(found.len());
    for k in &found {
        ctx.out.bulk(k);
    }
    Ok(())
}

/// RANDOMKEY: a random live key, or null; expired keys met on the way are deleted.
fn randomkey(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let db = ctx.client.db;
    loop {
        let Some(key) = ctx.core.dbs[db].random_key(crate::util::rand_u64()) else {
            ctx.out.null();
            return Ok(());
        };
        if ctx.core.dbs[db].is_expired(&key, ctx.now_ms) {
            ctx.expire_if_needed(&key);
            continue;
        }
        ctx.out.bulk(&key);
        return Ok(());
    }
}

// --- RENAME, RENAMENX, COPY, MOVE ------------------------------------------------------

fn rename(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    rename_generic(ctx, false)
}

fn renamenx(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    rename_generic(ctx, true)
}

/// RENAME / RENAMENX (Redis `renameGenericCommand`): the value and its TTL move to the
/// new name; an existing destination is replaced (RENAME) or kept (RENAMENX → 0).
fn rename_generic(ctx: &mut Ctx<'_>, nx: bool) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (src, dst) = (&argv[1], &argv[2]);
    let db = ctx.client.db;
    ctx.expire_if_needed(src);
    if !ctx.core.dbs[db].keys.contains_key(src) {
        return Err(ReplyError::NoSuchKey);
    }
    let reply_done = |ctx: &mut Ctx<'_>, changed: bool| {
        if !nx {
            ctx.out.ok();
        } else {
            ctx.out.integer(i64::from(changed));
        }
    };
    if src == dst {
        reply_done(ctx, false);
        return Ok(());
    }
    ctx.expire_if_needed(dst);
    let dst_exists = ctx.core.dbs[db].keys.contains_key(dst);
    if dst_exists && nx {
        reply_done(ctx, false);
        return Ok(());
    }
    // The value moves with its access clock (Redis moves the object itself).
    let d = &mut ctx.core.dbs[db];
    let clock = d.keys.clock(src);
    let expire = d.expires.get(&src[..]).copied();
    let field_ttls = d.hexpires.take(src);
    let stream = d.remove(src).expect("the source exists: checked above");
    if dst_exists {
        d.remove(dst);
        ctx.core.key_deleted(db, dst);
    }
    let d = &mut ctx.core.dbs[db];
    d.insert(dst, stream);
    if let Some(clock) = clock {
        d.keys.set_clock(dst, clock);
    }
    if let Some(at) = expire {
        d.set_expire(dst, at);
    }
    if let Some(t) = field_ttls {
        d.hexpires.put(dst, t);
    }
    ctx.notify(class::NEW, "new", dst);
    ctx.core.key_deleted(db, src);
    key_created(ctx.core, db, dst);
    ctx.notify(class::GENERIC, "rename_from", src);
    ctx.notify(class::GENERIC, "rename_to", dst);
    ctx.core.dirty += 1;
    ctx.propagate(argv);
    reply_done(ctx, true);
    Ok(())
}

/// COPY's parsed arguments.
struct Copy {
    dst_db: usize,
    replace: bool,
}

impl Copy {
    fn parse(core: &Core, src_db: usize, argv: &[Bytes]) -> Result<Copy, ReplyError> {
        let mut copy = Copy {
            dst_db: src_db,
            replace: false,
        };
        let mut i = 3;
        while i < argv.len() {
            if is(&argv[i], "REPLACE") {
                copy.replace = true;
            } else if is(&argv[i], "DB") && i + 1 < argv.len() {
                copy.dst_db = parse_db(core, &argv[i + 1])?;
                i += 1;
            } else {
                return Err(ReplyError::Syntax);
            }
            i += 1;
        }
        Ok(copy)
    }
}

/// COPY source destination [DB n] [REPLACE] (Redis's `copyCommand`): a deep copy of a
/// value of any type (a stream's groups and PELs too) with the source's TTL; 1 if
/// copied, 0 if the source is missing or the destination exists without REPLACE. A
/// replaced destination goes without a `del` event (Redis: `dbDelete`); the copy
/// notifies `new` and `copy_to` in the destination database.
fn copy(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let src_db = ctx.client.db;
    let args = Copy::parse(ctx.core, src_db, argv)?;
    if ctx.core.cluster.is_some() && (src_db != 0 || args.dst_db != 0) {
        return Err(COPY_CLUSTER_DB);
    }
    let (src, dst) = (&argv[1], &argv[2]);
    if args.dst_db == src_db && src == dst {
        return Err(SAME_OBJECT);
    }
    let Some(value) = ctx.lookup_value(src).map(|v| v.clone()) else {
        ctx.out.integer(0);
        return Ok(());
    };
    let expire = ctx.core.dbs[src_db].expires.get(&src[..]).copied();
    let field_ttls = ctx.core.dbs[src_db].hexpires.of(src).cloned();
    ctx.core.expire_if_needed(args.dst_db, dst, ctx.now_ms);
    if ctx.core.dbs[args.dst_db].keys.contains_key(dst) {
        if !args.replace {
            ctx.out.integer(0);
            return Ok(());
        }
        ctx.core.dbs[args.dst_db].remove(dst);
        ctx.core.key_deleted(args.dst_db, dst);
    }
    let d = &mut ctx.core.dbs[args.dst_db];
    d.insert(dst, value);
    if let Some(at) = expire {
        d.set_expire(dst, at);
    }
    if let Some(t) = field_ttls {
        d.hexpires.put(dst, t);
    }
    ctx.core
        .notify_keyspace_event(class::NEW, "new", dst, args.dst_db);
    key_created(ctx.core, args.dst_db, dst);
    ctx.core
        .notify_keyspace_event(class::GENERIC, "copy_to", dst, args.dst_db);
    ctx.core.dirty += 1;
    ctx.propagate(argv);
    ctx.out.integer(1);
    Ok(())
}

/// MOVE key db: 1 if moved (with its TTL), 0 if the key is missing or exists in the
/// target database.
fn move_(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let src_db = ctx.client.db;
    let dst_db = parse_db(ctx.core, &argv[2])?;
    if dst_db == src_db {
        return Err(SAME_OBJECT);
    }
    ctx.expire_if_needed(key);
    if !ctx.core.dbs[src_db].keys.contains_key(key) {
        ctx.out.integer(0);
        return Ok(());
    }
    ctx.core.expire_if_needed(dst_db, key, ctx.now_ms);
    if ctx.core.dbs[dst_db].keys.contains_key(key) {
        ctx.out.integer(0);
        return Ok(());
    }
    // The value moves with its access clock (as RENAME).
    let s = &mut ctx.core.dbs[src_db];
    let clock = s.keys.clock(key);
    let expire = s.expires.get(&key[..]).copied();
    let field_ttls = s.hexpires.take(key);
    let stream = s.remove(key).expect("the key exists: checked above");
    let d = &mut ctx.core.dbs[dst_db];
    d.insert(key, stream);
    if let Some(clock) = clock {
        d.keys.set_clock(key, clock);
    }
    if let Some(at) = expire {
        d.set_expire(key, at);
    }
    if let Some(t) = field_ttls {
        d.hexpires.put(key, t);
    }
    ctx.core
        .notify_keyspace_event(class::NEW, "new", key, dst_db);
    ctx.core.key_deleted(src_db, key);
    key_created(ctx.core, dst_db, key);
    ctx.core
        .notify_keyspace_event(class::GENERIC, "move_from", key, src_db);
    ctx.core
        .notify_keyspace_event(class::GENERIC, "move_to", key, dst_db);
    ctx.core.dirty += 1;
    ctx.propagate(argv);
    ctx.out.integer(1);
    Ok(())
}

// --- EXPIRE family, TTL family, PERSIST ------------------------------------------------

/// The time unit of an EXPIRE-family argument.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Seconds,
    Millis,
}

/// EXPIRE's NX|XX|GT|LT flags.
#[derive(Default)]
struct ExpireFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

impl ExpireFlags {
    /// Redis `parseExtendedExpireArgumentsOrReply`.
    fn parse(args: &[Bytes]) -> Result<ExpireFlags, ReplyError> {
        let mut f = ExpireFlags::default();
        for opt in args {
            if is(opt, "NX") {
                f.nx = true;
            } else if is(opt, "XX") {
                f.xx = true;
            } else if is(opt, "GT") {
                f.gt = true;
            } else if is(opt, "LT") {
                f.lt = true;
            } else {
                return Err(ReplyError::UnsupportedOption(lossy(opt)));
            }
        }
        if f.nx && (f.xx || f.gt || f.lt) {
            return Err(NX_AND_OTHERS);
        }
        if f.gt && f.lt {
            return Err(GT_AND_LT);
        }
        Ok(f)
    }

    /// Whether the new deadline `when` may replace `current` (None = no TTL, which GT
    /// treats as infinite).
    fn allows(&self, current: Option<i64>, when: i64) -> bool {
        if self.nx && current.is_some() {
            return false;
        }
        if self.xx && current.is_none() {
            return false;
        }
        if self.gt && current.is_none_or(|c| when <= c) {
            return false;
        }
        if self.lt && current.is_some_and(|c| when >= c) {
            return false;
        }
        true
    }
}

fn expire(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    expire_generic(ctx, "expire", true, Unit::Seconds)
}

fn pexpire(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    expire_generic(ctx, "pexpire", true, Unit::Millis)
}

fn expireat(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    expire_generic(ctx, "expireat", false, Unit::Seconds)
}

fn pexpireat(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    expire_generic(ctx, "pexpireat", false, Unit::Millis)
}

/// EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT key time [NX|XX|GT|LT] (Redis
/// `expireGenericCommand`): 1 if the TTL was set, 0 if the key is missing or a flag
/// refused it. A deadline not in the future deletes the key at once.
fn expire_generic(
    ctx: &mut Ctx<'_>,
    name: &'static str,
    relative: bool,
    unit: Unit,
) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let flags = ExpireFlags::parse(&argv[3..])?;
    let mut when = parse_i64(&argv[2])?;
    if unit == Unit::Seconds {
        when = when
            .checked_mul(1000)
            .ok_or(ReplyError::InvalidExpireTime(name))?;
    }
    let base = if relative {
        i64::try_from(ctx.now_ms).unwrap_or(i64::MAX)
    } else {
        0
    };
    when = when
        .checked_add(base)
        .ok_or(ReplyError::InvalidExpireTime(name))?;

    let db = ctx.client.db;
    ctx.expire_if_needed(key);
    if !ctx.core.dbs[db].keys.contains_key(key) {
        ctx.out.integer(0);
        return Ok(());
    }
    let current = ctx.core.dbs[db]
        .expires
        .get(&key[..])
        .map(|&at| i64::try_from(at).unwrap_or(i64::MAX));
    if !flags.allows(current, when) {
        ctx.out.integer(0);
        return Ok(());
    }
    match u64::try_from(when) {
        // While loading, a deadline in the past is kept as it is: the log records when
        // the key went (Redis: `checkAlreadyExpired`).
        Ok(at) if at > ctx.now_ms || ctx.core.replaying() => {
            ctx.expire_at_and_log(key, at);
        }
        _ => {
            ctx.delete_and_log(key);
        }
    }
    ctx.out.integer(1);
    Ok(())
}

fn ttl(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    ttl_generic(ctx, false, false)
}

fn pttl(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    ttl_generic(ctx, true, false)
}

fn expiretime(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    ttl_generic(ctx, false, true)
}

fn pexpiretime(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    ttl_generic(ctx, true, true)
}

/// TTL / PTTL / EXPIRETIME / PEXPIRETIME (Redis `ttlGenericCommand`): -2 for a missing
/// key, -1 without a TTL, else the remaining time (or the deadline when `absolute`),
/// rounded to the nearest second unless `millis`.
fn ttl_generic(ctx: &mut Ctx<'_>, millis: bool, absolute: bool) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    // Not an access to the key (Redis: `LOOKUP_NOTOUCH`; see `core/evict.rs`).
    if ctx.lookup_value(key).is_none() {
        ctx.out.integer(-2);
        return Ok(());
    }
    let db = ctx.client.db;
    let Some(&at) = ctx.core.dbs[db].expires.get(&key[..]) else {
        ctx.out.integer(-1);
        return Ok(());
    };
    let at = i64::try_from(at).unwrap_or(i64::MAX);
    let now = i64::try_from(ctx.now_ms).unwrap_or(i64::MAX);
    let t = if absolute { at } else { (at - now).max(0) };
    ctx.out.integer(if millis {
        t
    } else {
        t.saturating_add(500) / 1000
    });
    Ok(())
}

/// PERSIST key: 1 if a TTL was removed.
fn persist(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let db = ctx.client.db;
    ctx.expire_if_needed(key);
    if ctx.core.dbs[db].expires.remove(&key[..]).is_some() {
        ctx.modified(key);
        ctx.notify(class::GENERIC, "persist", key);
        ctx.propagate(argv);
        ctx.out.integer(1);
    } else {
        ctx.out.integer(0);
    }
    Ok(())
}

// --- OBJECT, MEMORY --------------------------------------------------------------------

/// OBJECT subcommands' lookup: true if the key exists, else replies null. Neither an
/// access to the key nor a `keymiss` (Redis's `objectCommandLookup`).
fn object_lookup(ctx: &mut Ctx<'_>) -> bool {
    let argv = ctx.argv;
    if ctx.lookup_value_nonotify(&argv[2]).is_some() {
        true
    } else {
        ctx.out.null();
        false
    }
}

fn object_encoding(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let name = ctx.lookup_value_nonotify(&argv[2]).map(|v| v.encoding());
    match name {
        // A listpack hash with field TTLs is Redis 7.4's `listpackex`.
        Some("listpack")
            if ctx.db().hexpires.contains_key(&argv[2])
                && matches!(ctx.db().get(&argv[2]), Some(Value::Hash(_))) =>
        {
            ctx.out.bulk(b"listpackex")
        }
        Some(name) => ctx.out.bulk(name.as_bytes()),
        None => ctx.out.null(),
    }
    Ok(())
}

/// The access clock of `key` in the client's database (it was just looked up).
fn key_clock(ctx: &mut Ctx<'_>, key: &[u8]) -> u32 {
    ctx.db().keys.clock(key).unwrap_or(0)
}

/// OBJECT FREQ: the key's LFU counter after the decay due now (Redis's
/// `LFUDecrAndReturn`, which does not store it); an error unless an LFU policy is set.
fn object_freq(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    if object_lookup(ctx) {
        if !ctx.core.evict.policy.is_lfu() {
            return Err(LFU_NOT_SELECTED);
        }
        let clock = key_clock(ctx, &ctx.argv[2]);
        let freq = evict::lfu_decayed(clock, ctx.now_ms, ctx.core.evict.lfu_decay_time);
        ctx.out.integer(i64::from(freq));
    }
    Ok(())
}

/// OBJECT IDLETIME: seconds since the key's last access (from its LRU clock); an
/// error under an LFU policy, whose clock holds a counter instead.
fn object_idletime(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    if object_lookup(ctx) {
        if ctx.core.evict.policy.is_lfu() {
            return Err(LFU_SELECTED);
        }
        let clock = key_clock(ctx, &ctx.argv[2]);
        let idle = evict::idle_ms(clock, ctx.now_ms) / 1000;
        ctx.out.integer(i64::try_from(idle).unwrap_or(i64::MAX));
    }
    Ok(())
}

/// OBJECT REFCOUNT: values are never shared, so 1; except what Redis answers for its
/// shared integers (0..=9999 stored as `int`, `OBJ_SHARED_REFCOUNT` = INT_MAX), shared
/// unless `maxmemory` is set with an LRU or LFU policy (whose per-object clock sharing
/// would break). streamd reads the settings now, where Redis decided when the value was
/// stored; the two differ only for a value stored before the policy changed.
fn object_refcount(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    /// Redis's `OBJ_SHARED_INTEGERS`.
    const OBJ_SHARED_INTEGERS: i64 = 10_000;
    if object_lookup(ctx) {
        let shared_ints = ctx.core.limits.maxmemory == 0 || !ctx.core.evict.policy.tracks_access();
        let argv = ctx.argv;
        let shared = shared_ints
            && matches!(
                ctx.db().get(&argv[2]),
                Some(Value::String(s)) if s.encoding() == "int"
                    && s.as_int().is_some_and(|n| (0..OBJ_SHARED_INTEGERS).contains(&n))
            );
        ctx.out
            .integer(if shared { i64::from(i32::MAX) } else { 1 });
    }
    Ok(())
}

fn object_help(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    super::reply_help(
        ctx,
        "OBJECT",
        &[
            "ENCODING <key>",
            "    Return the kind of internal representation used in order to store the value",
            "    associated with a <key>.",
            "FREQ <key>",
            "    Return the access frequency index of the <key>. The returned integer is",
            "    proportional to the logarithm of the recent access frequency of the key.",
            "IDLETIME <key>",
            "    Return the idle time of the <key>, that is the approximated number of",
            "    seconds elapsed since the last access to the key.",
            "REFCOUNT <key>",
            "    Return the number of references of the value associated with the specified",
            "    <key>.",
        ],
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_cursor_parses_like_strtoul() {
        assert_eq!(parse_scan_cursor(b"0"), Ok(0));
        assert_eq!(parse_scan_cursor(b""), Ok(0));
        assert_eq!(parse_scan_cursor(b"+17"), Ok(17));
        assert_eq!(parse_scan_cursor(b"-1"), Ok(u64::MAX));
        assert_eq!(parse_scan_cursor(b"18446744073709551615"), Ok(u64::MAX));
        for bad in [
            &b"x"[..],
            b" 1",
            b"1 ",
            b"-",
            b"+",
            b"0x10",
            b"18446744073709551616",
        ] {
            assert_eq!(parse_scan_cursor(bad), Err(INVALID_CURSOR), "{bad:?}");
        }
    }

    #[test]
    fn expire_flags_follow_redis_rules() {
        let f = |words: &[&str]| {
            let args: Vec<Bytes> = words.iter().map(|w| Bytes::from(w.to_string())).collect();
            ExpireFlags::parse(&args)
        };
        assert_eq!(f(&["nx", "xx"]).err(), Some(NX_AND_OTHERS));
        assert_eq!(f(&["gt", "LT"]).err(), Some(GT_AND_LT));
        assert_eq!(
            f(&["foo"]).err(),
            Some(ReplyError::UnsupportedOption("foo".into()))
        );
        let gt = f(&["GT"]).expect("valid");
        assert!(!gt.allows(None, 5), "GT treats no TTL as infinite");
        assert!(gt.allows(Some(4), 5));
        assert!(!gt.allows(Some(5), 5));
        let lt = f(&["LT"]).expect("valid");
        assert!(lt.allows(None, 5));
        assert!(!lt.allows(Some(5), 5));
        let nx = f(&["NX"]).expect("valid");
        assert!(nx.allows(None, 1) && !nx.allows(Some(1), 1));
        let xx = f(&["XX"]).expect("valid");
        assert!(!xx.allows(None, 1) && xx.allows(Some(1), 1));
    }
}
