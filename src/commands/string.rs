//! The string commands (Redis 7.0's `@string` category without the bitmap commands,
//! `t_string.c`): GET, SET and its variants, the counters, ranges, APPEND, MGET/MSET and
//! LCS; and Redis 8.4's additions: SET's IFEQ/IFNE/IFDEQ/IFDNE conditions, DIGEST (the
//! XXH3-64 of a value, as hex), DELEX (DEL, or delete on a condition) and MSETEX; and
//! Redis 8.8's INCREX (bounded INCRBY/INCRBYFLOAT with an expiration, `string/increx.rs`).
//!
//! Values are [`StringValue`]s (`types/string.rs`: `int`, `embstr`, `raw` as Redis
//! encodes them). Every read command answers `WRONGTYPE` for a key of another type (a
//! stream included); MGET answers nil for those instead, and MSET/SET overwrite any type.
//!
//! Side effects, as Redis 7.0 has them:
//!
//! ```text
//! key created            notify "new" (n), then the command's event
//! SET/SETNX/SETEX/...    notify "set" ($); with an expire also "expire" (g)
//! INCR/DECR/INCRBY/..    notify "incrby";  INCRBYFLOAT "incrbyfloat"
//! APPEND / SETRANGE      notify "append" / "setrange"
//! MSETEX                 per key "expire" (g) if timed, then "set" ($)
//! DELEX                  notify "del" (g) when it deleted
//! GETDEL, GETEX <past>   notify "del" (g);  GETEX EX.. "expire", PERSIST "persist"
//! overwritten stream     its blocked XREADGROUP clients are woken (they get an error)
//! ```
//!
//! Logged (propagated) forms, deterministic as Redis 7.0 makes them:
//!
//! ```text
//! SET k v EX/PX/EXAT/PXAT t [..]  ->  SET k v PXAT <unix ms>     (also SETEX, PSETEX)
//! SET k v GET [..]                ->  the same without GET
//! GETEX k EX/PX/EXAT/PXAT t       ->  PEXPIREAT k <unix ms>   (a past EXAT/PXAT: DEL k)
//! GETEX k PERSIST                 ->  PERSIST k  (only if a TTL was removed)
//! GETDEL k                        ->  DEL k
//! DELEX k IFEQ|IFNE|IFDEQ|IFDNE v ->  DEL k  (DELEX k without a condition: verbatim)
//! MSETEX n k v .. EX/PX t         ->  the same with PXAT <unix ms> in place of EX/PX t
//! GETSET k v                      ->  SET k v
//! INCRBYFLOAT k n                 ->  SET k <result> KEEPTTL
//! INCREX k ..                     ->  SET k <result> [PXAT <unix ms>]  (DEL k if a past
//!                                     EXAT/PXAT expired it; nothing when skipped)
//! everything else                 ->  verbatim, when it changed something
//! ```

use super::{CommandSpec, Family, flags::*, is, keyflags, parse_i64};
use crate::core::Ctx;
use crate::core::notify::class;
use crate::error::ReplyError;
use crate::types::string::LongDouble;
use crate::types::{StringValue, Value};
use bytes::Bytes;
use std::borrow::Cow;

mod increx;

const STRING: &[&str] = &["@string"];

/// The family of the string commands: the key is the first argument.
const STRING_ROWS: Family = Family::new("string").categories(STRING).keys(1, 1, 1);

const RW_ACCESS_UPDATE: &[u32] = &[keyflags::RW | keyflags::ACCESS | keyflags::UPDATE];
const RW_ACCESS_DELETE: &[u32] = &[keyflags::RW | keyflags::ACCESS | keyflags::DELETE];
const OW_UPDATE: &[u32] = &[keyflags::OW | keyflags::UPDATE];
const OW_INSERT: &[u32] = &[keyflags::OW | keyflags::INSERT];

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    STRING_ROWS
        .row(
            "append",
            3,
            WRITE | DENYOOM | FAST,
            "Append a value to a key",
            "2.0.0",
            append,
        )
        .with_key_flags(keyflags::RW_INSERT),
    STRING_ROWS
        .row(
            "decr",
            2,
            WRITE | DENYOOM | FAST,
            "Decrement the integer value of a key by one",
            "1.0.0",
            decr,
        )
        .with_key_flags(RW_ACCESS_UPDATE),
    STRING_ROWS
        .row(
            "decrby",
            3,
            WRITE | DENYOOM | FAST,
            "Decrement the integer value of a key by the given number",
            "1.0.0",
            decrby,
        )
        .with_key_flags(RW_ACCESS_UPDATE),
    STRING_ROWS
        .row(
            "delex",
            -2,
            WRITE | FAST,
            "Conditionally removes the specified key based on value or digest comparison.",
            "8.4.0",
            delex,
        )
        .with_key_flags(keyflags::RW_DELETE),
    STRING_ROWS
        .row(
            "digest",
            2,
            READONLY | FAST,
            "Returns the XXH3 hash of a string value.",
            "8.4.0",
            digest_cmd,
        )
        .with_key_flags(keyflags::RO_ACCESS),
    STRING_ROWS
        .row(
            "get",
            2,
            READONLY | FAST,
            "Get the value of a key",
            "1.0.0",
            get,
        )
        .with_key_flags(keyflags::RO_ACCESS),
    STRING_ROWS
        .row(
            "getdel",
            2,
            WRITE | FAST,
            "Get the value of a key and delete the key",
            "6.2.0",
            getdel,
        )
        .with_key_flags(RW_ACCESS_DELETE),
    STRING_ROWS
        .row(
            "getex",
            -2,
            WRITE | FAST,
            "Get the value of a key and optionally set its expiration",
            "6.2.0",
            getex,
        )
        .with_key_flags(RW_ACCESS_UPDATE),
    STRING_ROWS
        .row(
            "getrange",
            4,
            READONLY,
            "Get a substring of the string stored at a key",
            "2.4.0",
            getrange,
        )
        .with_key_flags(keyflags::RO_ACCESS),
    STRING_ROWS
        .row(
            "getset",
            3,
            WRITE | DENYOOM | FAST,
            "Set the string value of a key and return its old value",
            "1.0.0",
            getset,
        )
        .with_key_flags(RW_ACCESS_UPDATE),
    STRING_ROWS
        .row(
            "incr",
            2,
            WRITE | DENYOOM | FAST,
            "Increment the integer value of a key by one",
            "1.0.0",
            incr,
        )
        .with_key_flags(RW_ACCESS_UPDATE),
    STRING_ROWS
        .row(
            "incrby",
            3,
            WRITE | DENYOOM | FAST,
            "Increment the integer value of a key by the given amount",
            "1.0.0",
            incrby,
        )
        .with_key_flags(RW_ACCESS_UPDATE),
    STRING_ROWS
        .row(
            "incrbyfloat",
            3,
            WRITE | DENYOOM | FAST,
            "Increment the float value of a key by the given amount",
            "2.6.0",
            incrbyfloat,
        )
        .with_key_flags(RW_ACCESS_UPDATE),
    STRING_ROWS
        .row(
            "increx",
            -2,
            WRITE | DENYOOM | FAST,
            "Increments the numeric value of a key by a number and sets its expiration time. Uses 0 as initial value if the key doesn't exist.",
            "8.8.0",
            increx::increx,
        )
        .with_key_flags(RW_ACCESS_UPDATE),
    CommandSpec {
        key_flags: keyflags::RO_ACCESS,
        ..CommandSpec::new(
            "lcs",
            -3,
            READONLY,
            "string",
            "Find longest common substring",
            "7.0.0",
            lcs,
        )
        .keys(1, 2, 1)
        .categories(STRING)
    },
    CommandSpec {
        key_flags: keyflags::RO_ACCESS,
        ..CommandSpec::new(
            "mget",
            -2,
            READONLY | FAST,
            "string",
            "Get the values of all the given keys",
            "1.0.0",
            mget,
        )
        .keys(1, -1, 1)
        .categories(STRING)
    },
    CommandSpec {
        key_flags: OW_UPDATE,
        ..CommandSpec::new(
            "mset",
            -3,
            WRITE | DENYOOM,
            "string",
            "Set multiple keys to multiple values",
            "1.0.1",
            mset,
        )
        .keys(1, -1, 2)
        .categories(STRING)
    },
    CommandSpec {
        key_flags: OW_UPDATE,
        ..CommandSpec::new(
            "msetex",
            -4,
            WRITE | DENYOOM | MOVABLEKEYS,
            "string",
            "Atomically sets multiple string keys with a shared expiration in a single operation. Supports flexible argument parsing where condition and expiration flags can appear in any order.",
            "8.4.0",
            msetex,
        )
        .keys(0, 0, 0)
        .categories(STRING)
    },
    CommandSpec {
        key_flags: OW_INSERT,
        ..CommandSpec::new(
            "msetnx",
            -3,
            WRITE | DENYOOM,
            "string",
            "Set multiple keys to multiple values, only if none of the keys exist",
            "1.0.1",
            msetnx,
        )
        .keys(1, -1, 2)
        .categories(STRING)
    },
    STRING_ROWS
        .row(
            "psetex",
            4,
            WRITE | DENYOOM,
            "Set the value and expiration in milliseconds of a key",
            "2.6.0",
            psetex,
        )
        .with_key_flags(OW_UPDATE),
    STRING_ROWS
        .row(
            "set",
            -3,
            WRITE | DENYOOM,
            "Set the string value of a key",
            "1.0.0",
            set,
        )
        .with_key_flags(RW_ACCESS_UPDATE),
    STRING_ROWS
        .row(
            "setex",
            4,
            WRITE | DENYOOM,
            "Set the value and expiration of a key",
            "2.0.0",
            setex,
        )
        .with_key_flags(OW_UPDATE),
    STRING_ROWS
        .row(
            "setnx",
            3,
            WRITE | DENYOOM | FAST,
            "Set the value of a key, only if the key does not exist",
            "1.0.0",
            setnx,
        )
        .with_key_flags(OW_INSERT),
    STRING_ROWS
        .row(
            "setrange",
            4,
            WRITE | DENYOOM,
            "Overwrite part of a string at key starting at the specified offset",
            "2.2.0",
            setrange,
        )
        .with_key_flags(keyflags::RW_UPDATE),
    STRING_ROWS
        .row(
            "strlen",
            2,
            READONLY | FAST,
            "Get the length of the value stored in a key",
            "2.2.0",
            strlen,
        )
        .with_key_flags(keyflags::RO_ONLY),
    STRING_ROWS
        .row(
            "substr",
            4,
            READONLY,
            "Get a substring of the string stored at a key",
            "1.0.0",
            getrange,
        )
        .with_key_flags(keyflags::RO_ACCESS),
];

// --- errors (exact Redis 7.0 texts) ----------------------------------------------------

const OVERFLOW: ReplyError =
    ReplyError::Other(Cow::Borrowed("ERR increment or decrement would overflow"));
const DECR_OVERFLOW: ReplyError = ReplyError::Other(Cow::Borrowed("ERR decrement would overflow"));
const NOT_FLOAT: ReplyError = ReplyError::Other(Cow::Borrowed("ERR value is not a valid float"));
const NAN_OR_INF: ReplyError =
    ReplyError::Other(Cow::Borrowed("ERR increment would produce NaN or Infinity"));
const TOO_LONG: ReplyError = ReplyError::Other(Cow::Borrowed(
    "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
));
const OFFSET_RANGE: ReplyError = ReplyError::Other(Cow::Borrowed("ERR offset is out of range"));
const LCS_TYPES: ReplyError = ReplyError::Other(Cow::Borrowed(
    "ERR The specified keys must contain string values",
));
const LCS_LEN_AND_IDX: ReplyError = ReplyError::Other(Cow::Borrowed(
    "ERR If you want both the length and indexes, please just use IDX.",
));
const MSETEX_NUMKEYS: ReplyError = ReplyError::Other(Cow::Borrowed("ERR invalid numkeys value"));
const MSETEX_PAIRS: ReplyError =
    ReplyError::Other(Cow::Borrowed("ERR wrong number of key-value pairs"));
const DELEX_TYPE: ReplyError = ReplyError::Other(Cow::Borrowed(
    "ERR Key should be of string type if conditions are specified",
));
const DELEX_CONDITION: ReplyError = ReplyError::Other(Cow::Borrowed(
    "ERR Invalid condition. Use IFEQ, IFNE, IFDEQ, or IFDNE",
));
const LCS_TOO_LONG: ReplyError = ReplyError::Other(Cow::Borrowed("ERR String too long for LCS"));
const LCS_OVER_LIMIT: ReplyError = ReplyError::Other(Cow::Borrowed(
    "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
));
const LCS_NO_MEMORY: ReplyError = ReplyError::Other(Cow::Borrowed(
    "ERR Insufficient memory, failed allocating transient memory for LCS",
));

// --- shared helpers --------------------------------------------------------------------

/// An option word compared as Redis compares it: as a C string, so up to its first NUL.
pub(super) fn c_str(arg: &[u8]) -> &[u8] {
    match arg.iter().position(|&b| b == 0) {
        Some(n) => &arg[..n],
        None => arg,
    }
}

/// The string at `key` for a read (lazy expiry, hit/miss stats, keymiss): `None` when
/// missing, `WRONGTYPE` for another type. Hands out the reply writer beside it.
pub(super) fn read_string<'c>(
    ctx: &'c mut Ctx<'_>,
    key: &[u8],
) -> (
    Result<Option<&'c StringValue>, ReplyError>,
    &'c mut crate::resp::writer::RespWriter,
) {
    let hash = ctx.db().hash_key(key);
    let (found, out) = ctx.lookup_value_hashed_with_out(hash, key);
    let r = match found {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(&*s)),
        Some(_) => Err(ReplyError::WrongType),
    };
    (r, out)
}

/// Redis's `getGenericCommand`: replies with the string at `key` (nil when missing), or
/// fails with `WRONGTYPE`.
fn reply_get(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<bool, ReplyError> {
    let (found, out) = read_string(ctx, key);
    match found? {
        Some(s) => {
            s.with_bytes(|b| out.bulk(b));
            Ok(true)
        }
        None => {
            out.null();
            Ok(false)
        }
    }
}

/// The value at `key` for a write (lazy expiry first; no hit/miss stats, as Redis's
/// `lookupKeyWrite`).
pub(super) fn write_lookup<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> Option<&'c mut Value> {
    let hash = ctx.db().hash_key(key);
    write_lookup_hashed(ctx, hash, key)
}

/// [`write_lookup`] with `hash` = [`crate::core::keyspace::Db::hash_key`]`(key)` already
/// computed, for a command that reaches the key again after it (BITFIELD).
pub(super) fn write_lookup_hashed<'c>(
    ctx: &'c mut Ctx<'_>,
    hash: u64,
    key: &[u8],
) -> Option<&'c mut Value> {
    ctx.expire_if_needed(key);
    ctx.db().get_mut_hashed(hash, key)
}

/// Stores `value` at `key` (Redis's `setKey`): creates the key (with its `new` event)
/// or overwrites whatever is there, dropping the TTL unless `keep_ttl`; WATCH and the
/// dirty counter. The caller has expired the key already.
pub(super) fn set_key(ctx: &mut Ctx<'_>, key: &[u8], value: StringValue, keep_ttl: bool) {
    let db = ctx.client.db;
    let dbx = &mut ctx.core.dbs[db];
    match dbx.keys.get_mut(key) {
        Some(Value::Stream(_)) => {
            // Through remove + insert so the stream's background-work sets forget it;
            // its blocked XREADGROUP clients learn the key changed type.
            let ttl = dbx.expires.get(key).copied();
            dbx.remove(key);
            dbx.insert(key, Value::String(value));
            if keep_ttl && let Some(at) = ttl {
                dbx.set_expire(key, at);
            }
            ctx.signal_ready(key);
        }
        Some(slot) => {
            *slot = Value::String(value);
            // A hash overwritten in place takes its field TTLs with it.
            if !dbx.hexpires.is_empty() {
                dbx.hexpires.take(key);
            }
            if !keep_ttl && !dbx.expires.is_empty() {
                dbx.expires.remove(key);
            }
        }
        None => {
            dbx.insert(key, Value::String(value));
            ctx.notify(class::NEW, "new", key);
        }
    }
    ctx.modified(key);
}

/// Adds a new key (Redis's `dbAdd`): the `new` event, WATCH, dirty.
fn add_key(ctx: &mut Ctx<'_>, key: &[u8], value: StringValue) {
    let db = ctx.client.db;
    ctx.core.dbs[db].insert(key, Value::String(value));
    ctx.notify(class::NEW, "new", key);
    ctx.modified(key);
}

/// Redis's `checkStringLength`: a string of `size + append` bytes must stay within
/// `proto-max-bulk-len` (not checked for the log or a primary's stream).
fn check_string_length(ctx: &Ctx<'_>, size: usize, append: usize) -> Result<(), ReplyError> {
    if ctx.core.replaying() {
        return Ok(());
    }
    let total = (size as u64).checked_add(append as u64);
    match total {
        Some(t) if t <= ctx.core.limits.parser.proto_max_bulk_len => Ok(()),
        _ => Err(TOO_LONG),
    }
}

/// The unit of an expire argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Seconds,
    Millis,
}

/// Option flags of SET and GETEX (Redis's `OBJ_*`).
#[derive(Debug, Clone, Copy, Default)]
struct Flags {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    persist: bool,
    ex: bool,
    px: bool,
    exat: bool,
    pxat: bool,
    /// SET's IFEQ/IFNE/IFDEQ/IFDNE (8.4) and the index of its argument.
    cond: Option<(Cond, usize)>,
}

impl Flags {
    /// The absolute unix-ms deadline the expire argument at `expire` (EX, PX, EXAT or
    /// PXAT, as these flags say) means for command `name` ([`expire_ms`]); `None` without
    /// one.
    fn deadline(
        &self,
        argv: &crate::resp::Argv,
        expire: Option<usize>,
        now_ms: u64,
        name: &'static str,
    ) -> Result<Option<u64>, ReplyError> {
        let Some(i) = expire else {
            return Ok(None);
        };
        let unit = if self.px || self.pxat {
            Unit::Millis
        } else {
            Unit::Seconds
        };
        let relative = self.ex || self.px;
        expire_ms(now_ms, &argv[i], unit, relative, name).map(Some)
    }
}

/// A compare-and-set / compare-and-delete condition (SET and DELEX, Redis 8.4): on the
/// value itself, or on its [`digest`] as DIGEST writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cond {
    Eq,
    Ne,
    DigestEq,
    DigestNe,
}

impl Cond {
    /// The condition an option word names (compared as a C string, as Redis's
    /// `strcasecmp`).
    fn named(word: &[u8]) -> Option<Cond> {
        let w = c_str(word);
        if is(w, "IFEQ") {
            Some(Cond::Eq)
        } else if is(w, "IFNE") {
            Some(Cond::Ne)
        } else if is(w, "IFDEQ") {
            Some(Cond::DigestEq)
        } else if is(w, "IFDNE") {
            Some(Cond::DigestNe)
        } else {
            None
        }
    }

    /// Whether the string `value` meets the condition against `arg`: the bytes
    /// compared exactly (`sdscmp`), a digest as the hex text DIGEST replies.
    fn holds(self, value: &StringValue, arg: &[u8]) -> bool {
        value.with_bytes(|b| match self {
            Cond::Eq => b == arg,
            Cond::Ne => b != arg,
            Cond::DigestEq => digest(b).as_bytes() == arg,
            Cond::DigestNe => digest(b).as_bytes() != arg,
        })
    }

    /// Whether the key must exist for the write to happen (IFEQ and IFDEQ, like XX).
    fn needs_key(self) -> bool {
        matches!(self, Cond::Eq | Cond::DigestEq)
    }
}

/// Redis's `stringDigest`: the XXH3 64-bit hash of the value's bytes (an `int` as its
/// decimal text) as lowercase hex without leading zeros (`"%" PRIx64`).
fn digest(bytes: &[u8]) -> String {
    format!("{:x}", xxhash_rust::xxh3::xxh3_64(bytes))
}

/// Which command's options [`parse_extended`] reads (Redis's `COMMAND_GET`,
/// `COMMAND_SET`, `COMMAND_MSETEX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Getex,
    Set,
    Msetex,
}

impl Flags {
    fn any_expire(&self) -> bool {
        self.ex || self.px || self.exat || self.pxat
    }
}

/// Redis's `parseExtendedStringArgumentsOrReply`: the options from `argv[from..]`, with
/// every conflict a syntax error (repeating the same expire option is allowed, the last
/// wins). `mode` selects SET's options (NX/XX/GET/KEEPTTL/IFEQ/IFNE/IFDEQ/IFDNE),
/// MSETEX's (NX/XX/KEEPTTL) or GETEX's (PERSIST). As in Redis, NX and XX exclude only
/// each other while a condition excludes NX, XX and the other conditions before it
/// (so `NX` after `IFEQ v` is accepted, and never sets). Returns the flags and the
/// index of the expire argument.
fn parse_extended(
    argv: &[Bytes],
    from: usize,
    mode: Mode,
) -> Result<(Flags, Option<usize>), ReplyError> {
    let mut f = Flags::default();
    let mut expire = None;
    let mut j = from;
    let set = mode == Mode::Set;
    let sets = mode != Mode::Getex;
    while j < argv.len() {
        let opt = c_str(&argv[j]);
        let has_next = j + 1 < argv.len();
        let timed = f.keepttl || f.persist;
        let cond = if set && has_next {
            Cond::named(opt)
        } else {
            None
        };
        if let Some(c) = cond
            && !f.nx
            && !f.xx
            && f.cond.is_none_or(|(had, _)| had == c)
        {
            f.cond = Some((c, j + 1));
            j += 1;
        } else if is(opt, "NX") && !f.xx && sets {
            f.nx = true;
        } else if is(opt, "XX") && !f.nx && sets {
            f.xx = true;
        } else if is(opt, "GET") && set {
            f.get = true;
        } else if is(opt, "KEEPTTL") && !f.persist && !f.any_expire() && sets {
            f.keepttl = true;
        } else if is(opt, "PERSIST") && !sets && !f.any_expire() && !f.keepttl {
            f.persist = true;
        } else if is(opt, "EX") && !timed && !f.exat && !f.px && !f.pxat && has_next {
            f.ex = true;
            expire = Some(j + 1);
            j += 1;
        } else if is(opt, "PX") && !timed && !f.ex && !f.exat && !f.pxat && has_next {
            f.px = true;
            expire = Some(j + 1);
            j += 1;
        } else if is(opt, "EXAT") && !timed && !f.ex && !f.px && !f.pxat && has_next {
            f.exat = true;
            expire = Some(j + 1);
            j += 1;
        } else if is(opt, "PXAT") && !timed && !f.ex && !f.exat && !f.px && has_next {
            f.pxat = true;
            expire = Some(j + 1);
            j += 1;
        } else {
            return Err(ReplyError::Syntax);
        }
        j += 1;
    }
    Ok((f, expire))
}

/// Redis's `getExpireMillisecondsOrReply`: the absolute unix-ms deadline an expire
/// argument means, or `invalid expire time in '<name>' command` for a non-positive or
/// overflowing one.
fn expire_ms(
    now_ms: u64,
    arg: &[u8],
    unit: Unit,
    relative: bool,
    name: &'static str,
) -> Result<u64, ReplyError> {
    let mut ms = parse_i64(arg)?;
    let invalid = ReplyError::InvalidExpireTime(name);
    if ms <= 0 {
        return Err(invalid);
    }
    if unit == Unit::Seconds {
        ms = ms.checked_mul(1000).ok_or(invalid.clone())?;
    }
    if relative {
        let now = i64::try_from(now_ms).unwrap_or(i64::MAX);
        ms = ms.checked_add(now).ok_or(invalid)?;
    }
    // Positive by now: ms > 0 and the additions were checked.
    Ok(ms.unsigned_abs())
}

// --- GET, GETDEL, GETEX, GETSET, STRLEN, GETRANGE, MGET --------------------------------

/// GET key.
fn get(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    reply_get(ctx, &argv[1]).map(|_| ())
}

/// GETDEL key: the value, and the key deleted (logged as `DEL key`).
fn getdel(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    if reply_get(ctx, key)? {
        ctx.delete_and_log(key);
    }
    Ok(())
}

/// GETEX key [EX s | PX ms | EXAT ts | PXAT ms-ts | PERSIST].
fn getex(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let (flags, expire) = parse_extended(argv, 2, Mode::Getex)?;
    let now_ms = ctx.now_ms;
    let (found, out) = read_string(ctx, key);
    let Some(value) = found? else {
        out.null();
        return Ok(());
    };
    let when = flags.deadline(argv, expire, now_ms, "getex")?;
    value.with_bytes(|b| out.bulk(b));
    let db = ctx.client.db;
    match when {
        Some(at)
            if (flags.exat || flags.pxat)
                && at <= ctx.now_ms
                && !ctx.core.replaying()
                && !ctx.core.repl.is_replica() =>
        {
            ctx.delete_and_log(key);
        }
        Some(at) => {
            ctx.expire_at_and_log(key, at);
        }
        None if flags.persist && ctx.core.dbs[db].expires.remove(&key[..]).is_some() => {
            ctx.modified(key);
            ctx.notify(class::GENERIC, "persist", key);
            ctx.propagate(&[b"PERSIST".as_slice(), key]);
        }
        None => {}
    }
    Ok(())
}

/// GETSET key value: the old value (nil when none), and SET (logged as `SET key value`).
fn getset(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    reply_get(ctx, key)?;
    set_key(ctx, key, StringValue::new(&argv[2]), false);
    ctx.notify(class::STRING, "set", key);
    ctx.propagate(&[b"SET".as_slice(), key, &argv[2]]);
    Ok(())
}

/// STRLEN key: 0 for a missing key.
fn strlen(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (found, out) = read_string(ctx, &argv[1]);
    let n = found?.map_or(0, StringValue::len);
    out.integer(i64::try_from(n).unwrap_or(i64::MAX));
    Ok(())
}

/// GETRANGE / SUBSTR key start end: inclusive, negative indexes from the end, clamped;
/// an empty string for a missing key or an empty range.
fn getrange(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let mut start = parse_i64(&argv[2])?;
    let mut end = parse_i64(&argv[3])?;
    let (found, out) = read_string(ctx, &argv[1]);
    let Some(s) = found? else {
        out.bulk(b"");
        return Ok(());
    };
    s.with_bytes(|bytes| {
        let len = i64::try_from(bytes.len()).unwrap_or(i64::MAX);
        if start < 0 && end < 0 && start > end {
            out.bulk(b"");
            return;
        }
        if start < 0 {
            start = len.saturating_add(start);
        }
        if end < 0 {
            end = len.saturating_add(end);
        }
        start = start.max(0);
        end = end.max(0);
        if end >= len {
            end = len - 1;
        }
        if start > end || len == 0 {
            out.bulk(b"");
        } else {
            // 0 <= start <= end < len here.
            out.bulk(&bytes[start as usize..=end as usize]);
        }
    });
    Ok(())
}

/// MGET key [key ...]: nil for a missing key or one of another type.
fn mget(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    ctx.out.array(argv.len() - 1);
    for key in &argv[1..] {
        let hash = ctx.db().hash_key(key);
        let (found, out) = ctx.lookup_value_hashed_with_out(hash, key);
        match found {
            Some(Value::String(s)) => s.with_bytes(|b| out.bulk(b)),
            _ => out.null(),
        }
    }
    Ok(())
}

// --- SET and friends -------------------------------------------------------------------

/// What [`set_generic`] answers.
#[derive(Clone, Copy)]
enum SetReply {
    /// `+OK`, or nil when NX/XX refused (SET, SETEX, PSETEX).
    OkOrNull,
    /// `:1`, or `:0` when refused (SETNX).
    OneOrZero,
}

/// Redis's `setGenericCommand`: the expire first (its errors win), then GET's read (its
/// `WRONGTYPE` wins over NX/XX), then NX/XX, then the write. `val` is the index of the
/// value argument; `expire` the index of the expire argument, its unit and whether it is
/// relative.
fn set_generic(
    ctx: &mut Ctx<'_>,
    flags: Flags,
    val: usize,
    expire: Option<(usize, Unit, bool)>,
    name: &'static str,
    reply: SetReply,
) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let when = match expire {
        Some((i, unit, relative)) => Some(expire_ms(ctx.now_ms, &argv[i], unit, relative, name)?),
        None => None,
    };
    if flags.get {
        reply_get(ctx, key)?;
    }
    let found = write_lookup(ctx, key).is_some();
    let needs_key = flags.xx || flags.cond.is_some_and(|(c, _)| c.needs_key());
    let mut refused = (flags.nx && found) || (needs_key && !found);
    if !refused
        && found
        && let Some((cond, i)) = flags.cond
    {
        // Redis reads the key again (`lookupKeyRead`) and checks its type even when
        // GET already replied with its value.
        let (current, _) = read_string(ctx, key);
        refused = !current?.is_some_and(|s| cond.holds(s, &argv[i]));
    }
    if refused {
        if !flags.get {
            match reply {
                SetReply::OkOrNull => ctx.out.null(),
                SetReply::OneOrZero => ctx.out.integer(0),
            }
        }
        return Ok(());
    }
    set_key(ctx, key, StringValue::new(&argv[val]), flags.keepttl);
    ctx.notify(class::STRING, "set", key);
    if let Some(at) = when {
        let db = ctx.client.db;
        ctx.core.dbs[db].set_expire(key, at);
        if ctx.propagates() {
            ctx.propagate(&[
                b"SET".as_slice(),
                key,
                &argv[val],
                b"PXAT",
                itoa::Buffer::new().format(at).as_bytes(),
            ]);
        }
        ctx.notify(class::GENERIC, "expire", key);
    } else if flags.get {
        if ctx.propagates() {
            let kept: Vec<&[u8]> = argv
                .iter()
                .enumerate()
                .filter(|(j, a)| *j < 3 || !is(c_str(a), "GET"))
                .map(|(_, a)| &a[..])
                .collect();
            ctx.propagate(&kept);
        }
    } else {
        ctx.propagate(argv);
    }
    if !flags.get {
        match reply {
            SetReply::OkOrNull => ctx.out.ok(),
            SetReply::OneOrZero => ctx.out.integer(1),
        }
    }
    Ok(())
}

/// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT ts|PXAT ms-ts|KEEPTTL].
fn set(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    if argv.len() == 3 {
        // The common case: no options to parse.
        let key = &argv[1];
        ctx.expire_if_needed(key);
        set_key(ctx, key, StringValue::new(&argv[2]), false);
        ctx.notify(class::STRING, "set", key);
        ctx.propagate(argv);
        ctx.out.ok();
        return Ok(());
    }
    let (flags, expire) = parse_extended(argv, 3, Mode::Set)?;
    let expire = expire.map(|i| {
        let unit = if flags.px || flags.pxat {
            Unit::Millis
        } else {
            Unit::Seconds
        };
        (i, unit, flags.ex || flags.px)
    });
    set_generic(ctx, flags, 2, expire, "set", SetReply::OkOrNull)
}

/// SETNX key value: 1 if set, 0 if the key exists.
fn setnx(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let flags = Flags {
        nx: true,
        ..Flags::default()
    };
    set_generic(ctx, flags, 2, None, "setnx", SetReply::OneOrZero)
}

/// SETEX key seconds value.
fn setex(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let flags = Flags {
        ex: true,
        ..Flags::default()
    };
    set_generic(
        ctx,
        flags,
        3,
        Some((2, Unit::Seconds, true)),
        "setex",
        SetReply::OkOrNull,
    )
}

/// PSETEX key milliseconds value.
fn psetex(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let flags = Flags {
        px: true,
        ..Flags::default()
    };
    set_generic(
        ctx,
        flags,
        3,
        Some((2, Unit::Millis, true)),
        "psetex",
        SetReply::OkOrNull,
    )
}

/// MSET key value [key value ...].
fn mset(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    mset_generic(ctx, false, "mset")
}

/// MSETNX key value [key value ...]: 1 if all were set, 0 (and nothing set) if any key
/// exists.
fn msetnx(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    mset_generic(ctx, true, "msetnx")
}

fn mset_generic(ctx: &mut Ctx<'_>, nx: bool, name: &str) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    if argv.len().is_multiple_of(2) {
        return Err(ReplyError::WrongArity(name.to_string()));
    }
    if nx {
        for pair in argv[1..].chunks_exact(2) {
            if write_lookup(ctx, &pair[0]).is_some() {
                ctx.out.integer(0);
                return Ok(());
            }
        }
    }
    for pair in argv[1..].chunks_exact(2) {
        ctx.expire_if_needed(&pair[0]);
        set_key(ctx, &pair[0], StringValue::new(&pair[1]), false);
        ctx.notify(class::STRING, "set", &pair[0]);
    }
    ctx.propagate(argv);
    if nx {
        ctx.out.integer(1);
    } else {
        ctx.out.ok();
    }
    Ok(())
}

/// MSETEX numkeys key value [key value ...] [NX | XX] [EX s | PX ms | EXAT ts |
/// PXAT ms-ts | KEEPTTL] (8.4): every pair set with one shared deadline, or none when
/// NX finds a key or XX misses one. `:1` when set, `:0` when refused. Logged verbatim,
/// an EX/PX rewritten to `PXAT <unix ms>` in place.
fn msetex(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let n = parse_i64(&argv[1])
        .ok()
        .filter(|n| (1..=i64::from(i32::MAX)).contains(n))
        .ok_or(MSETEX_NUMKEYS)?;
    // n <= i32::MAX, so this cannot overflow a usize.
    let options = 2 + 2 * n as usize;
    if options > argv.len() {
        return Err(MSETEX_PAIRS);
    }
    let (flags, expire) = parse_extended(argv, options, Mode::Msetex)?;
    let when = flags.deadline(argv, expire, ctx.now_ms, "msetex")?;
    let pairs = argv[2..options].chunks_exact(2);
    if flags.nx || flags.xx {
        for pair in pairs.clone() {
            let found = if flags.nx {
                write_lookup(ctx, &pair[0]).is_some()
            } else {
                ctx.lookup_value(&pair[0]).is_some()
            };
            if found == flags.nx {
                ctx.out.integer(0);
                return Ok(());
            }
        }
    }
    let db = ctx.client.db;
    for pair in pairs {
        let key = &pair[0];
        ctx.expire_if_needed(key);
        set_key(ctx, key, StringValue::new(&pair[1]), flags.keepttl);
        if let Some(at) = when
            && !flags.keepttl
        {
            ctx.core.dbs[db].set_expire(key, at);
            ctx.notify(class::GENERIC, "expire", key);
        }
        ctx.notify(class::STRING, "set", key);
    }
    match (expire, when) {
        (Some(i), Some(at)) if (flags.ex || flags.px) && ctx.propagates() => {
            let mut text = itoa::Buffer::new();
            let at = text.format(at).as_bytes();
            let logged: Vec<&[u8]> = argv
                .iter()
                .enumerate()
                .map(|(j, a)| match j {
                    _ if j + 1 == i => b"PXAT".as_slice(),
                    _ if j == i => at,
                    _ => &a[..],
                })
                .collect();
            ctx.propagate(&logged);
        }
        _ => ctx.propagate(argv),
    }
    ctx.out.integer(1);
    Ok(())
}

// --- DIGEST, DELEX ---------------------------------------------------------------------

/// DIGEST key (8.4): the value's XXH3 digest as hex text, nil for a missing key.
fn digest_cmd(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (found, out) = read_string(ctx, &argv[1]);
    match found? {
        Some(s) => out.bulk(s.with_bytes(digest).as_bytes()),
        None => out.null(),
    }
    Ok(())
}

/// DELEX key [IFEQ value | IFNE value | IFDEQ digest | IFDNE digest] (8.4): without a
/// condition DEL of one key of any type (logged verbatim); with one, the string at
/// `key` deleted when the condition holds (logged as `DEL key`). `:1` if deleted.
fn delex(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    if argv.len() != 2 && argv.len() != 4 {
        return Err(ReplyError::WrongArity("delex".to_string()));
    }
    let key = &argv[1];
    let hash = ctx.db().hash_key(key);
    let (found, out) = ctx.lookup_value_hashed_with_out(hash, key);
    let delete = match found {
        None => {
            out.integer(0);
            return Ok(());
        }
        Some(_) if argv.len() == 2 => None,
        Some(Value::String(s)) => {
            let cond = Cond::named(&argv[2]).ok_or(DELEX_CONDITION)?;
            Some(cond.holds(s, &argv[3]))
        }
        Some(_) => return Err(DELEX_TYPE),
    };
    let deleted = match delete {
        None => {
            let deleted = ctx.delete_key(key);
            if deleted {
                ctx.core.dirty += 1;
                ctx.propagate(argv);
            }
            deleted
        }
        Some(true) => {
            ctx.delete_and_log(key);
            true
        }
        Some(false) => false,
    };
    ctx.out.integer(i64::from(deleted));
    Ok(())
}

// --- counters --------------------------------------------------------------------------

fn incr(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    incr_decr(ctx, 1)
}

fn decr(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    incr_decr(ctx, -1)
}

fn incrby(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let by = parse_i64(&ctx.argv[2])?;
    incr_decr(ctx, by)
}

fn decrby(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let by = parse_i64(&ctx.argv[2])?;
    if by == i64::MIN {
        return Err(DECR_OVERFLOW);
    }
    incr_decr(ctx, -by)
}

/// Redis's `incrDecrCommand`: adds `by` to the integer at `key` (0 when missing), in
/// place when it is already a string (keeping its TTL), as an `int`.
fn incr_decr(ctx: &mut Ctx<'_>, by: i64) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let value = match write_lookup(ctx, key) {
        Some(Value::String(s)) => {
            let old = s.as_int().ok_or(ReplyError::NotInteger)?;
            let new = old.checked_add(by).ok_or(OVERFLOW)?;
            s.set_int(new);
            ctx.modified(key);
            new
        }
        Some(_) => return Err(ReplyError::WrongType),
        None => {
            add_key(ctx, key, StringValue::from_int(by));
            by
        }
    };
    ctx.notify(class::STRING, "incrby", key);
    ctx.propagate(argv);
    ctx.out.integer(value);
    Ok(())
}

/// INCRBYFLOAT key increment: the sum as text (logged as `SET key <text> KEEPTTL`).
fn incrbyfloat(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let (current, exists) = match write_lookup(ctx, key) {
        Some(Value::String(s)) => (s.as_long_double(), true),
        Some(_) => return Err(ReplyError::WrongType),
        None => (Some(LongDouble::from_i64(0)), false),
    };
    let current = current.ok_or(NOT_FLOAT)?;
    let by = LongDouble::parse(&argv[2]).ok_or(NOT_FLOAT)?;
    let sum = current.plus(by);
    if !sum.is_finite() {
        return Err(NAN_OR_INF);
    }
    let text = sum.to_human();
    let value = StringValue::from_text(text.as_bytes());
    if exists {
        let db = ctx.client.db;
        if let Some(slot) = ctx.core.dbs[db].keys.get_mut(key) {
            *slot = Value::String(value);
        }
        ctx.modified(key);
    } else {
        add_key(ctx, key, value);
    }
    ctx.notify(class::STRING, "incrbyfloat", key);
    ctx.out.bulk(text.as_bytes());
    ctx.propagate(&[b"SET".as_slice(), key, text.as_bytes(), b"KEEPTTL"]);
    Ok(())
}

// --- APPEND, SETRANGE ------------------------------------------------------------------

/// APPEND key value: the new length.
fn append(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let limit_ok = |ctx: &Ctx<'_>, len: usize| check_string_length(ctx, len, argv[2].len());
    let len = match write_lookup(ctx, key) {
        Some(Value::String(s)) => {
            let len = s.len();
            limit_ok(ctx, len)?;
            let db = ctx.client.db;
            let n = match ctx.core.dbs[db].keys.get_mut(key) {
                Some(Value::String(s)) => s.append(&argv[2]),
                _ => len,
            };
            ctx.modified(key);
            n
        }
        Some(_) => return Err(ReplyError::WrongType),
        None => {
            add_key(ctx, key, StringValue::new(&argv[2]));
            argv[2].len()
        }
    };
    ctx.notify(class::STRING, "append", key);
    ctx.propagate(argv);
    ctx.out.integer(i64::try_from(len).unwrap_or(i64::MAX));
    Ok(())
}

/// SETRANGE key offset value: the new length (zero-padded past the end).
fn setrange(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let value = &argv[3];
    let offset = parse_i64(&argv[2])?;
    let offset = usize::try_from(offset).map_err(|_| OFFSET_RANGE)?;
    let len = match write_lookup(ctx, key) {
        None => {
            if value.is_empty() {
                ctx.out.integer(0);
                return Ok(());
            }
            check_string_length(ctx, offset, value.len())?;
            add_key(ctx, key, StringValue::zeroed_with(offset, value));
            offset + value.len()
        }
        Some(Value::String(s)) => {
            let olen = s.len();
            if value.is_empty() {
                ctx.out.integer(i64::try_from(olen).unwrap_or(i64::MAX));
                return Ok(());
            }
            check_string_length(ctx, offset, value.len())?;
            let db = ctx.client.db;
            let n = match ctx.core.dbs[db].keys.get_mut(key) {
                Some(Value::String(s)) => s.set_range(offset, value),
                _ => olen,
            };
            ctx.modified(key);
            n
        }
        Some(_) => return Err(ReplyError::WrongType),
    };
    ctx.notify(class::STRING, "setrange", key);
    ctx.propagate(argv);
    ctx.out.integer(i64::try_from(len).unwrap_or(i64::MAX));
    Ok(())
}

// --- LCS -------------------------------------------------------------------------------

/// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]: the longest common
/// subsequence of two strings (missing keys are empty strings), its length, or its
/// matching ranges (a map `matches`/`len`: RESP3 `%2`, RESP2 a 4-element array), last
/// match first, as Redis walks the table back from the end.
fn lcs(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let a = lcs_operand(ctx, &argv[1]);
    let b = lcs_operand(ctx, &argv[2]);
    let (a, b) = match (a, b) {
        (Ok(a), Ok(b)) => (a, b),
        _ => return Err(LCS_TYPES),
    };
    let (mut getlen, mut getidx, mut withmatchlen) = (false, false, false);
    let mut minmatchlen: u64 = 0;
    let mut j = 3;
    while j < argv.len() {
        let opt = c_str(&argv[j]);
        let more = argv.len() - 1 - j;
        if is(opt, "IDX") {
            getidx = true;
        } else if is(opt, "LEN") {
            getlen = true;
        } else if is(opt, "WITHMATCHLEN") {
            withmatchlen = true;
        } else if is(opt, "MINMATCHLEN") && more > 0 {
            minmatchlen = parse_i64(&argv[j + 1])?.max(0).unsigned_abs();
            j += 1;
        } else {
            return Err(ReplyError::Syntax);
        }
        j += 1;
    }
    if getlen && getidx {
        return Err(LCS_LEN_AND_IDX);
    }
    if a.len() >= u32::MAX as usize - 1 || b.len() >= u32::MAX as usize - 1 {
        return Err(LCS_TOO_LONG);
    }
    let (alen, blen) = (a.len(), b.len());
    let cells = (alen as u64 + 1) * (blen as u64 + 1);
    let bytes = cells.checked_mul(4).ok_or(LCS_NO_MEMORY)?;
    if bytes > ctx.core.limits.parser.proto_max_bulk_len {
        return Err(LCS_OVER_LIMIT);
    }
    let cells = usize::try_from(cells).map_err(|_| LCS_NO_MEMORY)?;
    let mut table: Vec<u32> = Vec::new();
    table.try_reserve_exact(cells).map_err(|_| LCS_NO_MEMORY)?;
    table.resize(cells, 0);
    let w = blen + 1;
    // table[i * w + j] = LCS length of a[..i] and b[..j].
    for i in 1..=alen {
        for j in 1..=blen {
            table[i * w + j] = if a[i - 1] == b[j - 1] {
                table[(i - 1) * w + j - 1] + 1
            } else {
                table[(i - 1) * w + j].max(table[i * w + j - 1])
            };
        }
    }
    let total = table[alen * w + blen];
    let out = &mut *ctx.out;
    let compute = getidx || !getlen;
    let mut result = vec![0u8; total as usize];
    let mut idx = total as usize;
    let deferred = if getidx {
        out.map(2);
        out.bulk(b"matches");
        Some(out.defer_len())
    } else {
        None
    };
    let mut emitted = 0;
    // A range being tracked: a_start == alen means none.
    let (mut a_start, mut a_end, mut b_start, mut b_end) = (alen, 0, 0, 0);
    let (mut i, mut j) = (alen, blen);
    while compute && i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            result[idx - 1] = a[i - 1];
            if a_start == alen {
                a_start = i - 1;
                a_end = i - 1;
                b_start = j - 1;
                b_end = j - 1;
            } else if a_start == i && b_start == j {
                a_start -= 1;
                b_start -= 1;
            } else {
                emit = true;
            }
            if a_start == 0 || b_start == 0 {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            j -= 1;
        } else {
            if table[(i - 1) * w + j] > table[i * w + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            if a_start != alen {
                emit = true;
            }
        }
        let match_len = (a_end as u64 + 1).wrapping_sub(a_start as u64);
        if emit {
            if (minmatchlen == 0 || match_len >= minmatchlen) && deferred.is_some() {
                out.array(2 + usize::from(withmatchlen));
                out.array(2);
                out.integer(a_start as i64);
                out.integer(a_end as i64);
                out.array(2);
                out.integer(b_start as i64);
                out.integer(b_end as i64);
                if withmatchlen {
                    out.integer(match_len as i64);
                }
                emitted += 1;
            }
            a_start = alen;
        }
    }
    if let Some(d) = deferred {
        out.finish_array(d, emitted);
        out.bulk(b"len");
        out.integer(i64::from(total));
    } else if getlen {
        out.integer(i64::from(total));
    } else {
        out.bulk(&result);
    }
    Ok(())
}

/// The bytes of an LCS operand: empty for a missing key, `Err` for another type.
fn lcs_operand(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Vec<u8>, ()> {
    match ctx.lookup_value(key) {
        None => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(s.to_bytes().into_owned()),
        Some(_) => Err(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(parts: &[&str]) -> Vec<Bytes> {
        parts
            .iter()
            .map(|p| Bytes::copy_from_slice(p.as_bytes()))
            .collect()
    }

    #[test]
    fn set_option_conflicts_are_syntax_errors() {
        for bad in [
            &["SET", "k", "v", "NX", "XX"][..],
            &["SET", "k", "v", "EX", "1", "PX", "1"],
            &["SET", "k", "v", "KEEPTTL", "EX", "1"],
            &["SET", "k", "v", "EX", "1", "KEEPTTL"],
            &["SET", "k", "v", "EX"],
            &["SET", "k", "v", "PERSIST"],
            &["SET", "k", "v", "foo"],
        ] {
            assert!(parse_extended(&args(bad), 3, Mode::Set).is_err(), "{bad:?}");
        }
        for good in [
            &["SET", "k", "v", "NX", "GET", "EX", "1"][..],
            &["SET", "k", "v", "EX", "1", "EX", "2"],
            &["SET", "k", "v", "nx\0junk"],
            &["SET", "k", "v", "KEEPTTL", "XX", "GET", "GET"],
        ] {
            assert!(
                parse_extended(&args(good), 3, Mode::Set).is_ok(),
                "{good:?}"
            );
        }
        assert!(parse_extended(&args(&["GETEX", "k", "PERSIST"]), 2, Mode::Getex).is_ok());
        assert!(parse_extended(&args(&["GETEX", "k", "NX"]), 2, Mode::Getex).is_err());
        assert!(
            parse_extended(&args(&["GETEX", "k", "PERSIST", "EX", "1"]), 2, Mode::Getex).is_err()
        );
    }

    #[test]
    fn set_conditions_exclude_each_other_and_nx_xx_before_them() {
        for bad in [
            &["SET", "k", "v", "IFEQ", "a", "IFNE", "b"][..],
            &["SET", "k", "v", "NX", "IFEQ", "a"],
            &["SET", "k", "v", "XX", "IFDEQ", "a"],
            &["SET", "k", "v", "IFDNE"],
        ] {
            assert!(parse_extended(&args(bad), 3, Mode::Set).is_err(), "{bad:?}");
            assert!(
                parse_extended(&args(bad), 3, Mode::Msetex).is_err(),
                "{bad:?}"
            );
        }
        let (f, _) = parse_extended(
            &args(&["SET", "k", "v", "ifeq", "a", "IFEQ", "b", "XX"]),
            3,
            Mode::Set,
        )
        .expect("accepted");
        assert_eq!(f.cond, Some((Cond::Eq, 6)));
        assert!(f.xx);
    }

    #[test]
    fn digest_is_xxh3_64_in_unpadded_lowercase_hex() {
        // The XXH3-64 reference value for no input.
        assert_eq!(digest(b""), "2d06800538d394c2");
        assert_eq!(
            digest(b"12345"),
            StringValue::from_int(12345).with_bytes(digest)
        );
        let v = StringValue::new(b"hello");
        assert!(Cond::DigestEq.holds(&v, digest(b"hello").as_bytes()));
        assert!(!Cond::DigestEq.holds(&v, digest(b"hello").to_uppercase().as_bytes()));
        assert!(Cond::Ne.holds(&v, b"hell"));
    }
}
