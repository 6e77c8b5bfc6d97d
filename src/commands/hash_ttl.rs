//! Hash field expiration (Redis 7.4 and 8.0): HEXPIRE HPEXPIRE HEXPIREAT HPEXPIREAT
//! set field TTLs, HTTL HPTTL HEXPIRETIME HPEXPIRETIME read them, HPERSIST drops them,
//! HGETEX reads fields and sets or drops their TTLs, HSETEX sets fields with a TTL.
//!
//! The deadlines live in the database's [`HashTtls`] (`types/hash_ttl.rs`), not in the
//! hash; expired fields are removed by `core/field_expire.rs`, lazily when the key is
//! looked up and by the `hz` cycle.
//!
//! Per-field reply codes, as Redis's:
//!
//! ```text
//! H*EXPIRE*   -2 no such field   0 NX|XX|GT|LT not met   1 set   2 deleted (time past)
//! H*TTL H*EXPIRETIME   -2 no such field   -1 no TTL   else the TTL / deadline
//! HPERSIST    -2 no such field   -1 no TTL   1 TTL removed
//! ```
//!
//! What is logged and sent to replicas, so that a replay never depends on the clock
//! (Redis's rewrites):
//!
//! ```text
//! HEXPIRE k 10 GT FIELDS 2 a b    → HPEXPIREAT k <unix ms> FIELDS n <the fields set>
//!                                   HDEL k f  for each field deleted by a time past
//! HGETEX k EX 10 FIELDS n f...    → HPEXPIREAT k <unix ms> FIELDS n f...
//! HGETEX k PERSIST FIELDS n f...  → HPERSIST k FIELDS n f...
//! HSETEX k EX 10 FIELDS n f v...  → HSETEX k PXAT <unix ms> FIELDS n f v...
//!                                   (only HDELs when the time was already past)
//! HPERSIST                        → as sent, when a TTL was removed
//! ```
//!
//! A time at or before now deletes the field at once (reply 2), except while the log
//! loads and on a replica, which keep the field with its past deadline: their `HDEL`
//! comes from the log or the primary, as for keys.

use super::{CommandSpec, Family, flags::*, is, keyflags, parse_i64};
use crate::core::Ctx;
use crate::core::notify::class;
use crate::error::ReplyError;
use crate::resp::writer::RespWriter;
use crate::types::hash::Item;
use crate::types::hash_ttl::HashTtls;
use crate::types::{Hash, Value};

const HASH: &[&str] = &["@hash"];

/// The family of the field-TTL commands: the key is the first argument.
const ROWS: Family = Family::new("hash").categories(HASH).keys(1, 1, 1);

use keyflags::{ACCESS, RO, RW, UPDATE};
const RW_UPDATE: &[u32] = &[RW | UPDATE];
const RO_ACCESS: &[u32] = &[RO | ACCESS];

/// This module's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    ROWS.row(
        "hexpire",
        -6,
        WRITE | DENYOOM | FAST,
        "Set expiry for hash field using relative time to expire (seconds)",
        "7.4.0",
        hexpire,
    )
    .with_key_flags(RW_UPDATE),
    ROWS.row(
        "hpexpire",
        -6,
        WRITE | DENYOOM | FAST,
        "Set expiry for hash field using relative time to expire (milliseconds)",
        "7.4.0",
        hpexpire,
    )
    .with_key_flags(RW_UPDATE),
    ROWS.row(
        "hexpireat",
        -6,
        WRITE | DENYOOM | FAST,
        "Set expiry for hash field using an absolute Unix timestamp (seconds)",
        "7.4.0",
        hexpireat,
    )
    .with_key_flags(RW_UPDATE),
    ROWS.row(
        "hpexpireat",
        -6,
        WRITE | DENYOOM | FAST,
        "Set expiry for hash field using an absolute Unix timestamp (milliseconds)",
        "7.4.0",
        hpexpireat,
    )
    .with_key_flags(RW_UPDATE),
    ROWS.row(
        "httl",
        -5,
        READONLY | FAST,
        "Returns the TTL in seconds of a hash field.",
        "7.4.0",
        httl,
    )
    .with_key_flags(RO_ACCESS),
    ROWS.row(
        "hpttl",
        -5,
        READONLY | FAST,
        "Returns the TTL in milliseconds of a hash field.",
        "7.4.0",
        hpttl,
    )
    .with_key_flags(RO_ACCESS),
    ROWS.row(
        "hexpiretime",
        -5,
        READONLY | FAST,
        "Returns the expiration time of a hash field as a Unix timestamp, in seconds.",
        "7.4.0",
        hexpiretime,
    )
    .with_key_flags(RO_ACCESS),
    ROWS.row(
        "hpexpiretime",
        -5,
        READONLY | FAST,
        "Returns the expiration time of a hash field as a Unix timestamp, in msec.",
        "7.4.0",
        hpexpiretime,
    )
    .with_key_flags(RO_ACCESS),
    ROWS.row(
        "hpersist",
        -5,
        WRITE | FAST,
        "Removes the expiration time for each specified field",
        "7.4.0",
        hpersist,
    )
    .with_key_flags(RW_UPDATE),
    ROWS.row(
        "hgetex",
        -5,
        WRITE | FAST,
        "Get the value of one or more fields of a given hash key, and optionally set their expiration.",
        "8.0.0",
        hgetex,
    )
    .with_key_flags(&[RW | ACCESS | UPDATE]),
    ROWS.row(
        "hsetex",
        -6,
        WRITE | DENYOOM | FAST,
        "Set the value of one or more fields of a given hash key, and optionally set their expiration.",
        "8.0.0",
        hsetex,
    )
    .with_key_flags(RW_UPDATE),
];

// --- errors and limits -------------------------------------------------------------------

const FIELDS_MISSING: ReplyError =
    ReplyError::msg("ERR Mandatory argument FIELDS is missing or not at the right position");
const NUMFIELDS_MISMATCH: ReplyError =
    ReplyError::msg("ERR The `numfields` parameter must match the number of arguments");
/// HTTL, HPERSIST, HGETEX's count error.
const NUMFIELDS_POSITIVE: ReplyError =
    ReplyError::msg("ERR Number of fields must be a positive integer");
/// The H*EXPIRE* commands' count error (Redis words it differently there).
const NUMFIELDS_GREATER: ReplyError =
    ReplyError::msg("ERR Parameter `numFields` should be greater than 0");
const NEGATIVE_TIME: ReplyError = ReplyError::msg("ERR invalid expire time, must be >= 0");
const HSETEX_NUMFIELDS: ReplyError = ReplyError::msg("ERR invalid number of fields");
const HSETEX_CONDITION: ReplyError =
    ReplyError::msg("ERR Only one of FXX or FNX arguments can be specified");
const HSETEX_EXPIRATION: ReplyError =
    ReplyError::msg("ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified");
const HSETEX_MISSING_TIME: ReplyError = ReplyError::msg("ERR missing expire time");

/// The latest field deadline a client may ask for (Redis's `HFE_MAX_ABS_TIME_MSEC`: a
/// quarter of the 48-bit range its field expiry buckets hold, in unix ms).
pub const HFE_MAX_ABS_TIME_MSEC: i64 = ((1 << 48) - 1) >> 2;

/// A deadline argument as unix ms (Redis's `parseExpireTime` in t_hash.c): an integer,
/// not negative, in seconds when `seconds`, added to `base` (now for the relative forms,
/// 0 for the absolute ones), at most [`HFE_MAX_ABS_TIME_MSEC`]; `name` is the command
/// the overflow error names.
fn parse_deadline(
    arg: &[u8],
    seconds: bool,
    base: u64,
    name: &'static str,
) -> Result<u64, ReplyError> {
    let mut v = parse_i64(arg)?;
    if v < 0 {
        return Err(NEGATIVE_TIME);
    }
    if seconds {
        if v > HFE_MAX_ABS_TIME_MSEC / 1000 {
            return Err(ReplyError::InvalidExpireTime(name));
        }
        v *= 1000;
    }
    let base = i64::try_from(base).unwrap_or(i64::MAX);
    if v > HFE_MAX_ABS_TIME_MSEC.saturating_sub(base) {
        return Err(ReplyError::InvalidExpireTime(name));
    }
    Ok((v + base) as u64)
}

/// `FIELDS numfields field...` at `argv[at..]`: the fields, or the error Redis gives
/// (`positive` is the count error of this command).
fn parse_fields(
    argv: &[bytes::Bytes],
    at: usize,
    positive: ReplyError,
) -> Result<&[bytes::Bytes], ReplyError> {
    if argv.get(at).is_none_or(|a| !is(a, "FIELDS")) {
        return Err(FIELDS_MISSING);
    }
    let Some(n) = argv.get(at + 1) else {
        return Err(ReplyError::arity(&argv[0]));
    };
    let n = parse_i64(n).map_err(|_| positive.clone())?;
    if n < 1 {
        return Err(positive);
    }
    if n != (argv.len() - at - 2) as i64 {
        return Err(NUMFIELDS_MISMATCH);
    }
    Ok(&argv[at + 2..])
}

/// True when a deadline at or before now removes the field at once: not while the log
/// loads, not on a replica (Redis's `checkAlreadyExpired`).
fn deletes_now(ctx: &Ctx<'_>, at: u64) -> bool {
    at <= ctx.now_ms && !ctx.core.loading && !ctx.core.repl.is_replica()
}

/// Lazy expiry of `key` (and its due fields), then its hash: `WRONGTYPE` for another
/// type, `None` when missing.
fn write_lookup(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<bool, ReplyError> {
    ctx.expire_if_needed(key);
    match ctx.db().get(key) {
        None => Ok(false),
        Some(Value::Hash(_)) => Ok(true),
        Some(_) => Err(ReplyError::WrongType),
    }
}

/// The hash at `key` and the database's field deadlines, together.
fn hash_and_ttls<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> Option<(&'c mut Hash, &'c mut HashTtls)> {
    let d = ctx.db();
    match d.keys.get_mut(key) {
        Some(Value::Hash(h)) => Some((h, &mut d.hexpires)),
        _ => None,
    }
}

/// Writes an item as a bulk string.
fn bulk_item(out: &mut RespWriter, item: Item<'_>) {
    match item {
        Item::Str(s) => out.bulk(s),
        Item::Int(v) => out.bulk_int(v),
    }
}

/// After field TTL changes to `key`: one dirty write per change, WATCH, the `event`,
/// and the key deleted (with `del`) when the hash emptied.
fn ttl_changed(ctx: &mut Ctx<'_>, key: &[u8], changes: u64, event: &str) {
    if changes == 0 {
        return;
    }
    ctx.core.dirty += changes - 1;
    ctx.modified(key);
    ctx.notify(class::HASH, event, key);
    ctx.delete_if_emptied(key);
}

// --- H(P)EXPIRE(AT) ----------------------------------------------------------------------

/// The NX|XX|GT|LT condition of the H*EXPIRE* commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cond {
    None,
    Nx,
    Xx,
    Gt,
    Lt,
}

impl Cond {
    /// May a field whose deadline is `old` get `at`? A field without a TTL counts as
    /// an infinite one: LT passes, XX and GT fail (Redis's `hashTypeSetEx`).
    fn allows(self, old: Option<u64>, at: u64) -> bool {
        match (self, old) {
            (Cond::None, _) => true,
            (Cond::Nx, old) => old.is_none(),
            (Cond::Xx | Cond::Gt, None) => false,
            (Cond::Lt, None) => true,
            (Cond::Xx, Some(_)) => true,
            (Cond::Gt, Some(old)) => at > old,
            (Cond::Lt, Some(old)) => at < old,
        }
    }
}

/// The outcome for one field of an H*EXPIRE* command (its reply code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SetTtl {
    NoField = -2,
    NotMet = 0,
    Set = 1,
    Deleted = 2,
}

/// Sets `field`'s deadline to `at` under `cond`, deleting it when `delete_now`.
fn set_field_ttl(
    h: &mut Hash,
    ttls: &mut HashTtls,
    key: &[u8],
    field: &[u8],
    at: u64,
    cond: Cond,
    delete_now: bool,
) -> SetTtl {
    if !h.contains(field) {
        return SetTtl::NoField;
    }
    if !cond.allows(ttls.get(key, field), at) {
        return SetTtl::NotMet;
    }
    if delete_now {
        h.remove(field);
        ttls.remove(key, field);
        return SetTtl::Deleted;
    }
    ttls.set(key, field, at);
    SetTtl::Set
}

/// HEXPIRE / HPEXPIRE / HEXPIREAT / HPEXPIREAT key time [NX|XX|GT|LT] FIELDS n field...
/// (Redis's `hexpireGenericCommand`): `seconds` is the unit of `time`, `relative`
/// whether it counts from now.
fn hexpire_generic(
    ctx: &mut Ctx<'_>,
    name: &'static str,
    seconds: bool,
    relative: bool,
) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let exists = write_lookup(ctx, key)?;
    let base = if relative { ctx.now_ms } else { 0 };
    let at = parse_deadline(&argv[2], seconds, base, name)?;
    let cond = match &argv[3] {
        a if is(a, "NX") => Cond::Nx,
        a if is(a, "XX") => Cond::Xx,
        a if is(a, "GT") => Cond::Gt,
        a if is(a, "LT") => Cond::Lt,
        _ => Cond::None,
    };
    let fields_at = if cond == Cond::None { 3 } else { 4 };
    let fields = parse_fields(argv, fields_at, NUMFIELDS_GREATER)?;
    ctx.out.array(fields.len());
    if !exists {
        for _ in fields {
            ctx.out.integer(SetTtl::NoField as i64);
        }
        return Ok(());
    }
    let delete_now = deletes_now(ctx, at);
    let mut set: Vec<&[u8]> = Vec::new();
    let mut deleted: Vec<&[u8]> = Vec::new();
    let mut codes = Vec::with_capacity(fields.len());
    if let Some((h, ttls)) = hash_and_ttls(ctx, key) {
        for f in fields {
            let r = set_field_ttl(h, ttls, key, f, at, cond, delete_now);
            match r {
                SetTtl::Set => set.push(f),
                SetTtl::Deleted => deleted.push(f),
                _ => {}
            }
            codes.push(r as i64);
        }
    }
    for c in codes {
        ctx.out.integer(c);
    }
    ctx.core.stats.expired_subkeys += deleted.len() as u64;
    for f in &deleted {
        ctx.propagate(&[b"HDEL".as_slice(), key, f]);
    }
    if !set.is_empty() {
        let mut text = itoa::Buffer::new();
        let mut n = itoa::Buffer::new();
        let mut effect: Vec<&[u8]> = vec![
            b"HPEXPIREAT",
            key,
            text.format(at).as_bytes(),
            b"FIELDS",
            n.format(set.len()).as_bytes(),
        ];
        effect.extend(set.iter().copied());
        ctx.propagate(&effect);
    }
    let event = if deleted.is_empty() {
        "hexpire"
    } else {
        "hdel"
    };
    ttl_changed(ctx, key, (set.len() + deleted.len()) as u64, event);
    Ok(())
}

/// HEXPIRE key seconds [NX|XX|GT|LT] FIELDS n field...
fn hexpire(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    hexpire_generic(ctx, "hexpire", true, true)
}

/// HPEXPIRE key milliseconds [NX|XX|GT|LT] FIELDS n field...
fn hpexpire(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    hexpire_generic(ctx, "hpexpire", false, true)
}

/// HEXPIREAT key unix-seconds [NX|XX|GT|LT] FIELDS n field...
fn hexpireat(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    hexpire_generic(ctx, "hexpireat", true, false)
}

/// HPEXPIREAT key unix-ms [NX|XX|GT|LT] FIELDS n field...
fn hpexpireat(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    hexpire_generic(ctx, "hpexpireat", false, false)
}

// --- HTTL and kin --------------------------------------------------------------------------

/// HTTL / HPTTL / HEXPIRETIME / HPEXPIRETIME key FIELDS n field... (Redis's
/// `httlGenericCommand`): per field -2 (missing), -1 (no TTL), or the TTL (`relative`)
/// or deadline, in seconds (rounded up, as Redis) or ms.
fn httl_generic(ctx: &mut Ctx<'_>, seconds: bool, relative: bool) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let h = ctx.db().hash_key(key);
    // Read lookup: lazy expiry, hit/miss counters, and which fields exist.
    let found: Option<Vec<bool>> = {
        let (v, _) = ctx.lookup_value_hashed_with_out(h, key);
        match v {
            None => None,
            Some(Value::Hash(h)) => {
                let fields = parse_fields(argv, 2, NUMFIELDS_POSITIVE)?;
                Some(fields.iter().map(|f| h.contains(f)).collect())
            }
            Some(_) => return Err(ReplyError::WrongType),
        }
    };
    let fields = parse_fields(argv, 2, NUMFIELDS_POSITIVE)?;
    let now = ctx.now_ms;
    let base = if relative { now } else { 0 };
    let db = ctx.client.db;
    let ttls = &ctx.core.dbs[db].hexpires;
    let out = &mut *ctx.out;
    out.array(fields.len());
    for (i, f) in fields.iter().enumerate() {
        if !found.as_ref().is_some_and(|v| v[i]) {
            out.integer(-2);
            continue;
        }
        match ttls.get(key, f) {
            None => out.integer(-1),
            // Past its time but not removed (a replica, whose primary's HDEL is still to
            // come): missing, as Redis answers there.
            Some(at) if at <= now => out.integer(-2),
            Some(at) => {
                let ms = at.saturating_sub(base);
                let v = if seconds { ms.div_ceil(1000) } else { ms };
                out.integer(v as i64);
            }
        }
    }
    Ok(())
}

/// HTTL key FIELDS n field...
fn httl(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    httl_generic(ctx, true, true)
}

/// HPTTL key FIELDS n field...
fn hpttl(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    httl_generic(ctx, false, true)
}

/// HEXPIRETIME key FIELDS n field...
fn hexpiretime(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    httl_generic(ctx, true, false)
}

/// HPEXPIRETIME key FIELDS n field...
fn hpexpiretime(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    httl_generic(ctx, false, false)
}

// --- HPERSIST ------------------------------------------------------------------------------

/// HPERSIST key FIELDS n field...: per field -2 (missing), -1 (no TTL), 1 (removed);
/// `hpersist` when any went, logged as sent.
fn hpersist(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let exists = write_lookup(ctx, key)?;
    let fields = parse_fields(argv, 2, NUMFIELDS_POSITIVE)?;
    let mut codes = Vec::with_capacity(fields.len());
    if exists && let Some((h, ttls)) = hash_and_ttls(ctx, key) {
        for f in fields {
            codes.push(if !h.contains(f) {
                -2
            } else if ttls.remove(key, f).is_some() {
                1
            } else {
                -1
            });
        }
    } else {
        codes.resize(fields.len(), -2);
    }
    ctx.out.array(codes.len());
    for &c in &codes {
        ctx.out.integer(c);
    }
    if codes.contains(&1) {
        // One dirty write for the command, as Redis counts it.
        ctx.modified(key);
        ctx.notify(class::HASH, "hpersist", key);
        ctx.propagate(argv);
    }
    Ok(())
}

// --- HGETEX --------------------------------------------------------------------------------

/// HGETEX's option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GetExOpt {
    /// Only read.
    None,
    /// EX, PX, EXAT or PXAT: set this deadline (unix ms).
    At(u64),
    /// PERSIST: drop the TTLs.
    Persist,
}

/// HGETEX key [EX s | PX ms | EXAT unix-s | PXAT unix-ms | PERSIST] FIELDS n field...
/// (Redis 8.0's `hgetexCommand`): the values (null for a missing field), and each found
/// field's TTL set or dropped. Logged as `HPEXPIREAT` / `HPERSIST` / `HDEL`s (module doc).
fn hgetex(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let exists = write_lookup(ctx, key)?;
    let a = &argv[2];
    let (opt, fields_at) = if is(a, "EX") || is(a, "PX") || is(a, "EXAT") || is(a, "PXAT") {
        let seconds = is(a, "EX") || is(a, "EXAT");
        let relative = is(a, "EX") || is(a, "PX");
        let base = if relative { ctx.now_ms } else { 0 };
        (
            GetExOpt::At(parse_deadline(&argv[3], seconds, base, "hgetex")?),
            4,
        )
    } else if is(a, "PERSIST") {
        (GetExOpt::Persist, 3)
    } else {
        (GetExOpt::None, 2)
    };
    let fields = parse_fields(argv, fields_at, NUMFIELDS_POSITIVE)?;
    if !exists {
        ctx.out.array(fields.len());
        for _ in fields {
            ctx.out.null();
        }
        return Ok(());
    }
    let delete_now = matches!(opt, GetExOpt::At(at) if deletes_now(ctx, at));
    let (mut updated, mut deleted): (u64, Vec<&[u8]>) = (0, Vec::new());
    let db = ctx.client.db;
    let d = &mut ctx.core.dbs[db];
    let out = &mut *ctx.out;
    out.array(fields.len());
    if let Some(Value::Hash(h)) = d.keys.get_mut(&key[..]) {
        for f in fields {
            match h.get_item(f) {
                None => {
                    out.null();
                    continue;
                }
                Some(item) => bulk_item(out, item),
            }
            match opt {
                GetExOpt::None => {}
                GetExOpt::Persist => {
                    if d.hexpires.remove(key, f).is_some() {
                        updated += 1;
                    }
                }
                GetExOpt::At(_) if delete_now => {
                    h.remove(f);
                    d.hexpires.remove(key, f);
                    deleted.push(f);
                }
                GetExOpt::At(at) => {
                    d.hexpires.set(key, f, at);
                    updated += 1;
                }
            }
        }
    }
    ctx.core.stats.expired_subkeys += deleted.len() as u64;
    for f in &deleted {
        ctx.propagate(&[b"HDEL".as_slice(), key, f]);
    }
    if updated > 0 {
        let mut effect: Vec<&[u8]> = Vec::with_capacity(argv.len());
        let mut text = itoa::Buffer::new();
        match opt {
            GetExOpt::Persist => effect.push(b"HPERSIST"),
            GetExOpt::At(at) => {
                effect.push(b"HPEXPIREAT");
                effect.push(key);
                effect.push(text.format(at).as_bytes());
            }
            GetExOpt::None => {}
        }
        if opt == GetExOpt::Persist {
            effect.push(key);
        }
        effect.extend(argv[fields_at..].iter().map(|a| &a[..]));
        ctx.propagate(&effect);
    }
    let event = match opt {
        GetExOpt::Persist => "hpersist",
        _ if !deleted.is_empty() => "hdel",
        _ => "hexpire",
    };
    ttl_changed(ctx, key, updated + deleted.len() as u64, event);
    Ok(())
}

// --- HSETEX --------------------------------------------------------------------------------

/// HSETEX's parsed options (Redis 8.0's `hsetexParseArgs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct HSetEx {
    /// FNX: set only if none of the fields exists.
    fnx: bool,
    /// FXX: set only if all the fields exist.
    fxx: bool,
    /// EX/PX/EXAT/PXAT as unix ms, and the argument index of the time.
    at: Option<(u64, usize)>,
    /// Whether the time was given as PXAT already.
    pxat: bool,
    /// KEEPTTL: a field set keeps its TTL.
    keep_ttl: bool,
    /// Index of the first field.
    first: usize,
}

impl HSetEx {
    /// Options up to `FIELDS n`, then `n` field-value pairs that must be all the rest.
    fn parse(argv: &[bytes::Bytes], now_ms: u64) -> Result<HSetEx, ReplyError> {
        let mut p = HSetEx {
            fnx: false,
            fxx: false,
            at: None,
            pxat: false,
            keep_ttl: false,
            first: 0,
        };
        let arity = || ReplyError::arity(&argv[0]);
        let mut i = 2;
        while i < argv.len() {
            let a = &argv[i];
            if is(a, "FIELDS") {
                if i + 3 >= argv.len() {
                    return Err(arity());
                }
                let n = parse_i64(&argv[i + 1]).map_err(|_| HSETEX_NUMFIELDS)?;
                if !(1..=i64::from(i32::MAX)).contains(&n) {
                    return Err(HSETEX_NUMFIELDS);
                }
                let rest = argv.len() - i - 2;
                if !rest.is_multiple_of(2) || n as usize != rest / 2 {
                    return Err(arity());
                }
                p.first = i + 2;
                return Ok(p);
            }
            let timed = ["EX", "PX", "EXAT", "PXAT"].iter().find(|w| is(a, w));
            if let Some(w) = timed {
                if p.at.is_some() || p.keep_ttl {
                    return Err(HSETEX_EXPIRATION);
                }
                let Some(t) = argv.get(i + 1) else {
                    return Err(HSETEX_MISSING_TIME);
                };
                let seconds = matches!(*w, "EX" | "EXAT");
                let base = if matches!(*w, "EX" | "PX") { now_ms } else { 0 };
                p.at = Some((parse_deadline(t, seconds, base, "hsetex")?, i + 1));
                p.pxat = *w == "PXAT";
                i += 2;
                continue;
            }
            if is(a, "KEEPTTL") {
                if p.at.is_some() || p.keep_ttl {
                    return Err(HSETEX_EXPIRATION);
                }
                p.keep_ttl = true;
            } else if is(a, "FXX") || is(a, "FNX") {
                if p.fxx || p.fnx {
                    return Err(HSETEX_CONDITION);
                }
                p.fxx = is(a, "FXX");
                p.fnx = !p.fxx;
            } else {
                let mut text = b"ERR unknown argument: ".to_vec();
                text.extend_from_slice(a);
                return Err(ReplyError::owned(
                    String::from_utf8_lossy(&text).into_owned(),
                ));
            }
            i += 1;
        }
        // Only reachable without FIELDS, which the arity and the loop above rule out
        // for well-formed input; answer as Redis would for the short form.
        Err(arity())
    }
}

/// HSETEX key [FNX|FXX] [EX s | PX ms | EXAT unix-s | PXAT unix-ms | KEEPTTL]
/// FIELDS n field value...: 1 if the fields were set, 0 if FNX/FXX refused (module doc).
fn hsetex(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let p = HSetEx::parse(argv, ctx.now_ms)?;
    let exists = write_lookup(ctx, key)?;
    let pairs = &argv[p.first..];
    if !exists && p.fxx {
        ctx.out.integer(0);
        return Ok(());
    }
    if exists && (p.fnx || p.fxx) {
        let d = ctx.db();
        let h = match d.get(key) {
            Some(Value::Hash(h)) => Some(h),
            _ => None,
        };
        let found = pairs
            .chunks_exact(2)
            .filter(|pair| h.is_some_and(|h| h.contains(&pair[0])))
            .count();
        if (p.fnx && found > 0) || (p.fxx && found != pairs.len() / 2) {
            ctx.out.integer(0);
            return Ok(());
        }
    }
    let t = ctx.core.thresholds;
    let delete_now = p.at.is_some_and(|(at, _)| deletes_now(ctx, at));
    let mut deleted: Vec<&[u8]> = Vec::new();
    let mut updated = 0u64;
    {
        let d = ctx.db();
        let created = !d.keys.contains_key(key);
        if created {
            d.keys.insert(key, Value::Hash(Hash::default()));
        }
        let Some(Value::Hash(h)) = d.keys.get_mut(&key[..]) else {
            return Err(ReplyError::WrongType);
        };
        h.prepare(pairs, &t);
        for pair in pairs.chunks_exact(2) {
            let (f, v) = (&pair[0], &pair[1]);
            h.insert(f, v, &t);
            match p.at {
                Some(_) if delete_now => {
                    h.remove(f);
                    d.hexpires.remove(key, f);
                    deleted.push(f);
                }
                Some((at, _)) => {
                    d.hexpires.set(key, f, at);
                    updated += 1;
                }
                None if p.keep_ttl => {}
                None => {
                    if !d.hexpires.is_empty() {
                        d.hexpires.remove(key, f);
                    }
                }
            }
        }
        if created {
            ctx.notify(class::NEW, "new", key);
        }
    }
    ctx.out.integer(1);
    ctx.core.dirty += (pairs.len() / 2) as u64 - 1;
    ctx.modified(key);
    ctx.notify(class::HASH, "hset", key);
    if !deleted.is_empty() {
        ctx.core.stats.expired_subkeys += deleted.len() as u64;
        ctx.notify(class::HASH, "hdel", key);
        for f in &deleted {
            ctx.propagate(&[b"HDEL".as_slice(), key, f]);
        }
    } else {
        if updated > 0 {
            ctx.notify(class::HASH, "hexpire", key);
        }
        match p.at {
            Some((at, i)) if !p.pxat => {
                let mut text = itoa::Buffer::new();
                let mut effect: Vec<&[u8]> = argv.iter().map(|a| &a[..]).collect();
                effect[i - 1] = b"PXAT";
                effect[i] = text.format(at).as_bytes();
                ctx.propagate(&effect);
            }
            _ => ctx.propagate(argv),
        }
    }
    ctx.delete_if_emptied(key);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_are_bounded_as_redis_bounds_them() {
        let now = 1_700_000_000_000;
        assert_eq!(
            parse_deadline(b"10", true, now, "hexpire"),
            Ok(now + 10_000)
        );
        assert_eq!(parse_deadline(b"0", false, 0, "hpexpireat"), Ok(0));
        assert_eq!(
            parse_deadline(b"-1", true, now, "hexpire"),
            Err(NEGATIVE_TIME)
        );
        assert_eq!(
            parse_deadline(b"x", true, now, "hexpire"),
            Err(ReplyError::NotInteger)
        );
        let max = HFE_MAX_ABS_TIME_MSEC.to_string();
        assert_eq!(
            parse_deadline(max.as_bytes(), false, 0, "hpexpireat"),
            Ok(HFE_MAX_ABS_TIME_MSEC as u64)
        );
        let over = (HFE_MAX_ABS_TIME_MSEC + 1).to_string();
        assert_eq!(
            parse_deadline(over.as_bytes(), false, 0, "hpexpireat"),
            Err(ReplyError::InvalidExpireTime("hpexpireat"))
        );
        assert_eq!(
            parse_deadline(max.as_bytes(), false, now, "hpexpire"),
            Err(ReplyError::InvalidExpireTime("hpexpire"))
        );
    }

    #[test]
    fn conditions_treat_no_ttl_as_infinite() {
        assert!(Cond::Nx.allows(None, 5));
        assert!(!Cond::Nx.allows(Some(1), 5));
        assert!(!Cond::Xx.allows(None, 5));
        assert!(!Cond::Gt.allows(None, 5));
        assert!(Cond::Lt.allows(None, 5));
        assert!(Cond::Gt.allows(Some(4), 5));
        assert!(!Cond::Gt.allows(Some(5), 5));
        assert!(Cond::Lt.allows(Some(6), 5));
        assert!(!Cond::Lt.allows(Some(5), 5));
    }

    #[test]
    fn hsetex_options_parse_as_redis_parses_them() {
        let argv = |s: &str| -> Vec<bytes::Bytes> {
            s.split(' ')
                .map(|w| bytes::Bytes::copy_from_slice(w.as_bytes()))
                .collect()
        };
        let p = HSetEx::parse(&argv("hsetex k FNX EX 10 FIELDS 1 a b"), 1000).expect("valid");
        assert!(p.fnx && !p.fxx);
        assert_eq!(p.at, Some((11_000, 4)));
        assert_eq!(p.first, 7);
        assert_eq!(
            HSetEx::parse(&argv("hsetex k fxx fnx fields 1 a b"), 0),
            Err(HSETEX_CONDITION)
        );
        assert_eq!(
            HSetEx::parse(&argv("hsetex k EX 1 KEEPTTL fields 1 a b"), 0),
            Err(HSETEX_EXPIRATION)
        );
        assert_eq!(
            HSetEx::parse(&argv("hsetex k ex fields 1 a b"), 0),
            Err(ReplyError::NotInteger)
        );
        assert_eq!(
            HSetEx::parse(&argv("hsetex k fields 0 a b"), 0),
            Err(HSETEX_NUMFIELDS)
        );
        assert_eq!(
            HSetEx::parse(&argv("hsetex k fields 1 a b c"), 0),
            Err(ReplyError::arity(b"hsetex"))
        );
        assert_eq!(
            HSetEx::parse(&argv("hsetex k nx fields 1 a b"), 0),
            Err(ReplyError::msg("ERR unknown argument: nx"))
        );
    }
}
