//! The hash family: every command of Redis 7.0's `@hash` category (HDEL HEXISTS HGET
//! HGETALL HINCRBY HINCRBYFLOAT HKEYS HLEN HMGET HMSET HRANDFIELD HSCAN HSET HSETNX
//! HSTRLEN HVALS) and Redis 8.0's HGETDEL, plus the lookup helpers the set family shares.
//!
//! Reply shapes (RESP2 / RESP3) as Redis 7.0 writes them:
//!
//! ```text
//! HGETALL        *2n f v ...  /  %n f v ...      missing key: *0 / %0
//! HKEYS HVALS    *n ...                           missing key: *0
//! HRANDFIELD k   $field or null
//! HRANDFIELD k n *n ...; WITHVALUES: *2n f v ... / *n *2 f v ...; missing key: *0
//! HSCAN          *2 $cursor *m (field value ...)  missing key: *2 $0 *0
//! ```
//!
//! Writes follow Redis's order of effects: `new` when the key is created, then the
//! command's event (`hset`, `hdel`, `hincrby`, `hincrbyfloat`), then `del` when the
//! last field went. HINCRBYFLOAT is logged as `HSET key field <result>` (Redis 7's
//! rewrite), or, when the field has a TTL, as `HSETEX key KEEPTTL FIELDS 1 field
//! <result>` (Redis 8's, which keeps the TTL on replay; Redis 8 always uses it, streamd
//! keeps HSET otherwise so that a Redis 7.0 replica still follows); every other write is
//! logged as sent, and only when it changed something.
//!
//! Field TTLs (`hash_ttl.rs`): HSET, HMSET and HDEL drop the TTLs of the fields they
//! overwrite or delete; HINCRBY and HINCRBYFLOAT keep them, as in Redis 7.4.

use super::{CommandSpec, Family, flags::*, is, keyflags, parse_i64};
use crate::core::Ctx;
use crate::core::notify::class;
use crate::error::ReplyError;
use crate::resp::writer::RespWriter;
use crate::types::hash::Item;
use crate::types::string::ld::LongDouble;
use crate::types::{Hash, Kind, Value};
use crate::util::glob_match;

const HASH: &[&str] = &["@hash"];

/// The family of the hash commands: the key is the first argument.
const HASH_ROWS: Family = Family::new("hash").categories(HASH).keys(1, 1, 1);

use keyflags::{ACCESS, DELETE, INSERT, RO, RW, UPDATE};
const RO_: &[u32] = &[RO];
const RO_ACCESS: &[u32] = &[RO | ACCESS];
const RW_ACCESS_UPDATE: &[u32] = &[RW | ACCESS | UPDATE];

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    HASH_ROWS
        .row(
            "hdel",
            -3,
            WRITE | FAST,
            "Delete one or more hash fields",
            "2.0.0",
            hdel,
        )
        .with_key_flags(&[RW | DELETE]),
    HASH_ROWS
        .row(
            "hgetdel",
            -5,
            WRITE | FAST,
            "Returns the value of a field and deletes it from the hash.",
            "8.0.0",
            hgetdel,
        )
        .with_key_flags(&[RW | ACCESS | DELETE]),
    HASH_ROWS
        .row(
            "hexists",
            3,
            READONLY | FAST,
            "Determine if a hash field exists",
            "2.0.0",
            hexists,
        )
        .with_key_flags(RO_),
    HASH_ROWS
        .row(
            "hget",
            3,
            READONLY | FAST,
            "Get the value of a hash field",
            "2.0.0",
            hget,
        )
        .with_key_flags(RO_ACCESS),
    HASH_ROWS
        .row(
            "hgetall",
            2,
            READONLY,
            "Get all the fields and values in a hash",
            "2.0.0",
            hgetall,
        )
        .with_key_flags(RO_ACCESS),
    HASH_ROWS
        .row(
            "hincrby",
            4,
            WRITE | DENYOOM | FAST,
            "Increment the integer value of a hash field by the given number",
            "2.0.0",
            hincrby,
        )
        .with_key_flags(RW_ACCESS_UPDATE),
    HASH_ROWS
        .row(
            "hincrbyfloat",
            4,
            WRITE | DENYOOM | FAST,
            "Increment the float value of a hash field by the given amount",
            "2.6.0",
            hincrbyfloat,
        )
        .with_key_flags(RW_ACCESS_UPDATE),
    HASH_ROWS
        .row(
            "hkeys",
            2,
            READONLY,
            "Get all the fields in a hash",
            "2.0.0",
            hkeys,
        )
        .with_key_flags(RO_ACCESS),
    HASH_ROWS
        .row(
            "hlen",
            2,
            READONLY | FAST,
            "Get the number of fields in a hash",
            "2.0.0",
            hlen,
        )
        .with_key_flags(RO_),
    HASH_ROWS
        .row(
            "hmget",
            -3,
            READONLY | FAST,
            "Get the values of all the given hash fields",
            "2.0.0",
            hmget,
        )
        .with_key_flags(RO_ACCESS),
    HASH_ROWS
        .row(
            "hmset",
            -4,
            WRITE | DENYOOM | FAST,
            "Set multiple hash fields to multiple values",
            "2.0.0",
            hset,
        )
        .with_key_flags(&[RW | UPDATE]),
    HASH_ROWS
        .row(
            "hrandfield",
            -2,
            READONLY,
            "Get one or multiple random fields from a hash",
            "6.2.0",
            hrandfield,
        )
        .with_key_flags(RO_ACCESS),
    HASH_ROWS
        .row(
            "hscan",
            -3,
            READONLY,
            "Incrementally iterate hash fields and associated values",
            "2.8.0",
            hscan,
        )
        .with_key_flags(RO_ACCESS),
    HASH_ROWS
        .row(
            "hset",
            -4,
            WRITE | DENYOOM | FAST,
            "Set the string value of a hash field",
            "2.0.0",
            hset,
        )
        .with_key_flags(&[RW | UPDATE]),
    HASH_ROWS
        .row(
            "hsetnx",
            4,
            WRITE | DENYOOM | FAST,
            "Set the value of a hash field, only if the field does not exist",
            "2.0.0",
            hsetnx,
        )
        .with_key_flags(&[RW | INSERT]),
    HASH_ROWS
        .row(
            "hstrlen",
            3,
            READONLY | FAST,
            "Get the length of the value of a hash field",
            "3.2.0",
            hstrlen,
        )
        .with_key_flags(RO_),
    HASH_ROWS
        .row(
            "hvals",
            2,
            READONLY,
            "Get all the values in a hash",
            "2.0.0",
            hvals,
        )
        .with_key_flags(RO_ACCESS),
];

// --- errors ------------------------------------------------------------------------------

const NOT_INTEGER: ReplyError = ReplyError::msg("ERR hash value is not an integer");
const NOT_FLOAT: ReplyError = ReplyError::msg("ERR hash value is not a float");
const OVERFLOW: ReplyError = ReplyError::msg("ERR increment or decrement would overflow");
const INVALID_FLOAT: ReplyError = ReplyError::msg("ERR value is not a valid float");
const NAN_OR_INF: ReplyError = ReplyError::msg("ERR value is NaN or Infinity");
const PRODUCES_NAN: ReplyError = ReplyError::msg("ERR increment would produce NaN or Infinity");
const OUT_OF_RANGE: ReplyError = ReplyError::msg("ERR value is out of range");
/// The most repeats a negative HRANDFIELD/SRANDMEMBER count may ask for. Redis 7.0
/// starts writing any count (and runs out of memory on absurd ones); a reply of more
/// than 2^31 elements is refused here with `ERR value is out of range` instead.
pub(super) const REPEAT_LIMIT: usize = i32::MAX as usize;
/// `ERR value is out of range`.
pub(super) const OUT_OF_RANGE_ERR: ReplyError = OUT_OF_RANGE;
/// `getRangeLongFromObjectOrReply(-LONG_MAX, LONG_MAX)`'s error.
pub(super) const COUNT_RANGE: ReplyError = ReplyError::msg(
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
);

// --- shared lookups ----------------------------------------------------------------------

/// A read lookup (Redis: `lookupKeyRead`: lazy expiry, hit/miss counters), with the
/// reply writer.
pub(super) fn read_value<'c>(
    ctx: &'c mut Ctx<'_>,
    key: &[u8],
) -> (Option<&'c mut Value>, &'c mut RespWriter) {
    let h = ctx.db().hash_key(key);
    ctx.lookup_value_hashed_with_out(h, key)
}

/// A write lookup (Redis: `lookupKeyWrite`: lazy expiry, no read statistics).
pub(super) fn write_value<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> Option<&'c mut Value> {
    ctx.expire_if_needed(key);
    ctx.db().get_mut(key)
}

/// The value at `key`, created by `make` if missing; also whether it was created (the
/// caller emits `new` before its own event). `WRONGTYPE` for a key of another kind.
pub(super) fn value_or_create<'c>(
    ctx: &'c mut Ctx<'_>,
    key: &[u8],
    kind: Kind,
    make: fn() -> Value,
) -> Result<(&'c mut Value, bool), ReplyError> {
    ctx.expire_if_needed(key);
    let db = ctx.client.db;
    let keys = &mut ctx.core.dbs[db].keys;
    let h = keys.hash_key(key);
    let mut created = false;
    let v = keys.get_or_insert_with_hashed(h, key, || {
        created = true;
        make()
    });
    if v.kind() != kind {
        return Err(ReplyError::WrongType);
    }
    Ok((v, created))
}

fn as_hash(v: Option<&mut Value>) -> Result<Option<&mut Hash>, ReplyError> {
    match v {
        None => Ok(None),
        Some(Value::Hash(h)) => Ok(Some(h)),
        Some(_) => Err(ReplyError::WrongType),
    }
}

fn new_hash() -> Value {
    Value::Hash(Hash::default())
}

/// The hash at `key` for a write, created if missing (and whether it was).
fn hash_or_create<'c>(
    ctx: &'c mut Ctx<'_>,
    key: &[u8],
) -> Result<(&'c mut Hash, bool), ReplyError> {
    match value_or_create(ctx, key, Kind::Hash, new_hash)? {
        (Value::Hash(h), created) => Ok((h, created)),
        _ => Err(ReplyError::WrongType),
    }
}

/// Drops the field TTLs of `fields` of the hash at `key` (they were overwritten or
/// deleted: Redis's `hashTypeSet` without `HASH_SET_KEEP_TTL`, `hashTypeDelete`). One
/// test when no hash of the database has field TTLs.
fn forget_ttls<'f>(ctx: &mut Ctx<'_>, key: &[u8], fields: impl Iterator<Item = &'f bytes::Bytes>) {
    let ttls = &mut ctx.db().hexpires;
    if ttls.is_empty() || !ttls.contains_key(key) {
        return;
    }
    for f in fields {
        ttls.remove(key, f);
    }
}

/// Writes an item as a bulk string.
fn bulk_item(out: &mut RespWriter, item: Item<'_>) {
    match item {
        Item::Str(s) => out.bulk(s),
        Item::Int(v) => out.bulk_int(v),
    }
}

// --- writes ------------------------------------------------------------------------------

/// HSET key field value [field value ...] (number of new fields) and HMSET (OK).
fn hset(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    if argv.len() % 2 == 1 {
        return Err(ReplyError::arity(&argv[0]));
    }
    let key = &argv[1];
    let t = ctx.core.thresholds;
    let (h, created) = hash_or_create(ctx, key)?;
    h.prepare(&argv[2..], &t);
    let mut added = 0;
    for pair in argv[2..].chunks_exact(2) {
        added += i64::from(h.insert(&pair[0], &pair[1], &t));
    }
    forget_ttls(ctx, key, argv[2..].iter().step_by(2));
    if argv[0].len() > 1 && argv[0][1].eq_ignore_ascii_case(&b's') {
        ctx.out.integer(added);
    } else {
        ctx.out.ok();
    }
    if created {
        ctx.notify(class::NEW, "new", key);
    }
    ctx.collection_written(class::HASH, "hset", key, false, argv);
    Ok(())
}

/// HSETNX key field value: 1 if set, 0 if the field existed.
fn hsetnx(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let t = ctx.core.thresholds;
    let (h, created) = hash_or_create(ctx, key)?;
    if h.contains(&argv[2]) {
        ctx.out.integer(0);
        return Ok(());
    }
    h.prepare(&argv[2..4], &t);
    h.insert(&argv[2], &argv[3], &t);
    ctx.out.integer(1);
    if created {
        ctx.notify(class::NEW, "new", key);
    }
    ctx.collection_written(class::HASH, "hset", key, false, argv);
    Ok(())
}

/// HDEL key field [field ...]: how many were removed.
fn hdel(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let Some(h) = as_hash(write_value(ctx, key))? else {
        ctx.out.integer(0);
        return Ok(());
    };
    let mut deleted = 0;
    let mut emptied = false;
    for f in &argv[2..] {
        if h.remove(f) {
            deleted += 1;
            if h.is_empty() {
                emptied = true;
                break;
            }
        }
    }
    ctx.out.integer(deleted);
    if deleted > 0 {
        forget_ttls(ctx, key, argv[2..].iter());
        ctx.collection_written(class::HASH, "hdel", key, emptied, argv);
    }
    Ok(())
}

/// HGETDEL key FIELDS numfields field [field ...] (Redis 8.0's `hgetdelCommand`): the
/// value of each field (null when missing, and for a field named twice the second
/// time), each found one deleted. `hdel` then `del` when the hash emptied; logged as
/// `HDEL key field...`, as Redis rewrites it.
fn hgetdel(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    ctx.expire_if_needed(key);
    let idx = ctx.client.db;
    if matches!(ctx.core.dbs[idx].get(key), Some(v) if !matches!(v, Value::Hash(_))) {
        return Err(ReplyError::WrongType);
    }
    if !is(&argv[2], "fields") {
        return Err(ReplyError::msg(
            "ERR Mandatory argument FIELDS is missing or not at the right position",
        ));
    }
    const NUMFIELDS: ReplyError =
        ReplyError::msg("ERR Number of fields must be a positive integer");
    let n = parse_i64(&argv[3]).map_err(|_| NUMFIELDS)?;
    if n < 1 {
        return Err(NUMFIELDS);
    }
    if n != argv.len() as i64 - 4 {
        return Err(ReplyError::msg(
            "ERR The `numfields` parameter must match the number of arguments",
        ));
    }
    let core = &mut *ctx.core;
    let out = &mut *ctx.out;
    out.array(argv.len() - 4);
    let Some(Value::Hash(h)) = core.dbs[idx].get_mut(key) else {
        for _ in 4..argv.len() {
            out.null();
        }
        return Ok(());
    };
    let mut deleted = 0u64;
    for f in &argv[4..] {
        match h.get_item(f) {
            Some(item) => {
                bulk_item(out, item);
                h.remove(f);
                deleted += 1;
            }
            None => out.null(),
        }
    }
    if deleted == 0 {
        return Ok(());
    }
    let emptied = h.is_empty();
    forget_ttls(ctx, key, argv[4..].iter());
    ctx.core.dirty += deleted - 1;
    let mut effect: Vec<&[u8]> = Vec::with_capacity(argv.len() - 2);
    effect.push(b"HDEL");
    effect.push(key);
    effect.extend(argv[4..].iter().map(|f| &f[..]));
    ctx.collection_written(class::HASH, "hdel", key, emptied, &effect);
    Ok(())
}

/// HINCRBY key field increment.
fn hincrby(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let incr = parse_i64(&argv[3])?;
    let t = ctx.core.thresholds;
    let (h, created) = hash_or_create(ctx, key)?;
    let old = match h.get_item(&argv[2]) {
        None => 0,
        Some(Item::Int(v)) => v,
        Some(Item::Str(s)) => crate::stream::id::string2ll(s).ok_or(NOT_INTEGER)?,
    };
    let new = old.checked_add(incr).ok_or(OVERFLOW)?;
    h.insert(&argv[2], itoa::Buffer::new().format(new).as_bytes(), &t);
    ctx.out.integer(new);
    if created {
        ctx.notify(class::NEW, "new", key);
    }
    ctx.collection_written(class::HASH, "hincrby", key, false, argv);
    Ok(())
}

/// Redis's `string2ld`: no leading space, at most 5119 bytes, the whole text a
/// `long double`, in the x87 arithmetic Redis computes HINCRBYFLOAT with (shared with
/// INCRBYFLOAT: `types/string/ld.rs`).
fn parse_float(s: &[u8]) -> Option<LongDouble> {
    LongDouble::parse(s)
}

/// HINCRBYFLOAT key field increment: the new value, logged as HSET.
fn hincrbyfloat(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let incr = parse_float(&argv[3]).ok_or(INVALID_FLOAT)?;
    if !incr.is_finite() {
        return Err(NAN_OR_INF);
    }
    let t = ctx.core.thresholds;
    let (h, created) = hash_or_create(ctx, key)?;
    let old = match h.get_item(&argv[2]) {
        None => LongDouble::from_i64(0),
        Some(Item::Int(v)) => LongDouble::from_i64(v),
        Some(Item::Str(s)) => parse_float(s).ok_or(NOT_FLOAT)?,
    };
    let new = old.plus(incr);
    if !new.is_finite() {
        return Err(PRODUCES_NAN);
    }
    let text = new.to_human();
    h.insert(&argv[2], text.as_bytes(), &t);
    ctx.out.bulk(text.as_bytes());
    if created {
        ctx.notify(class::NEW, "new", key);
    }
    // A field with a TTL: Redis 8's rewrite, so that the replay keeps the TTL. Without
    // one, Redis 7's HSET, which a Redis 7.0 replica still understands.
    if ctx.db().hexpires.get(key, &argv[2]).is_some() {
        let effect = [
            b"HSETEX".as_slice(),
            key,
            b"KEEPTTL",
            b"FIELDS",
            b"1",
            &argv[2],
            text.as_bytes(),
        ];
        ctx.collection_written(class::HASH, "hincrbyfloat", key, false, &effect);
    } else {
        let effect = [b"HSET".as_slice(), key, &argv[2], text.as_bytes()];
        ctx.collection_written(class::HASH, "hincrbyfloat", key, false, &effect);
    }
    Ok(())
}

// --- reads -------------------------------------------------------------------------------

/// HGET key field.
fn hget(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (v, out) = read_value(ctx, &argv[1]);
    match as_hash(v)?.and_then(|h| h.get_item(&argv[2])) {
        Some(item) => bulk_item(out, item),
        None => out.null(),
    }
    Ok(())
}

/// HMGET key field [field ...].
fn hmget(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (v, out) = read_value(ctx, &argv[1]);
    let h = as_hash(v)?;
    out.array(argv.len() - 2);
    for f in &argv[2..] {
        match h.as_ref().and_then(|h| h.get_item(f)) {
            Some(item) => bulk_item(out, item),
            None => out.null(),
        }
    }
    Ok(())
}

/// HEXISTS key field.
fn hexists(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (v, out) = read_value(ctx, &argv[1]);
    let found = as_hash(v)?.is_some_and(|h| h.contains(&argv[2]));
    out.integer(i64::from(found));
    Ok(())
}

/// HLEN key.
fn hlen(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (v, out) = read_value(ctx, &argv[1]);
    let n = as_hash(v)?.map_or(0, |h| h.len());
    out.integer(n as i64);
    Ok(())
}

/// HSTRLEN key field.
fn hstrlen(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (v, out) = read_value(ctx, &argv[1]);
    let n = as_hash(v)?
        .and_then(|h| h.get_item(&argv[2]))
        .map_or(0, Item::text_len);
    out.integer(n as i64);
    Ok(())
}

/// What HGETALL, HKEYS and HVALS write of each pair.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Keys,
    Values,
    Both,
}

fn getall(ctx: &mut Ctx<'_>, part: Part) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (v, out) = read_value(ctx, &argv[1]);
    let Some(h) = as_hash(v)? else {
        if part == Part::Both {
            out.map(0);
        } else {
            out.array(0);
        }
        return Ok(());
    };
    if part == Part::Both {
        out.map(h.len());
    } else {
        out.array(h.len());
    }
    for (f, v) in h.items() {
        if part != Part::Values {
            bulk_item(out, f);
        }
        if part != Part::Keys {
            bulk_item(out, v);
        }
    }
    Ok(())
}

/// HGETALL key (a map in RESP3).
fn hgetall(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    getall(ctx, Part::Both)
}

/// HKEYS key.
fn hkeys(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    getall(ctx, Part::Keys)
}

/// HVALS key.
fn hvals(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    getall(ctx, Part::Values)
}

/// A random-count argument (`getRangeLongFromObjectOrReply(-LONG_MAX, LONG_MAX)`).
pub(super) fn parse_count(arg: &[u8]) -> Result<i64, ReplyError> {
    let n = parse_i64(arg)?;
    if n == i64::MIN {
        return Err(COUNT_RANGE);
    }
    Ok(n)
}

/// Redis's `HRANDFIELD_SUB_STRATEGY_MUL` / `SRANDMEMBER_SUB_STRATEGY_MUL`: above this
/// ratio of size to count, distinct random picks are drawn directly.
pub(super) const SUB_STRATEGY_MUL: usize = 3;

/// Picks `count` distinct indices below `size` (`count < size`), in Redis's manner: a
/// whole copy thinned at random when the count is close to the size, random draws
/// otherwise. The order is the one a reply lists them in.
pub(super) fn distinct_indices(size: usize, count: usize) -> Vec<usize> {
    use crate::util::rand_below;
    if count * SUB_STRATEGY_MUL > size {
        let mut keep: Vec<usize> = (0..size).collect();
        while keep.len() > count {
            let i = rand_below(keep.len());
            keep.swap_remove(i);
        }
        keep.sort_unstable();
        keep
    } else {
        let mut seen = std::collections::HashSet::with_capacity(count);
        let mut picked = Vec::with_capacity(count);
        while picked.len() < count {
            let i = rand_below(size);
            if seen.insert(i) {
                picked.push(i);
            }
        }
        picked
    }
}

/// HRANDFIELD key [count [WITHVALUES]].
fn hrandfield(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    if argv.len() == 2 {
        let (v, out) = read_value(ctx, &argv[1]);
        match as_hash(v)?.and_then(|h| h.random()) {
            Some((f, _)) => bulk_item(out, f),
            None => out.null(),
        }
        return Ok(());
    }
    let l = parse_count(&argv[2])?;
    let withvalues = match argv.len() {
        3 => false,
        4 if is(&argv[3], "WITHVALUES") => {
            if !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&l) {
                return Err(OUT_OF_RANGE);
            }
            true
        }
        _ => return Err(ReplyError::Syntax),
    };
    let (v, out) = read_value(ctx, &argv[1]);
    let Some(h) = as_hash(v)? else {
        out.array(0);
        return Ok(());
    };
    let resp3 = out.is_resp3();
    let pair = |out: &mut RespWriter, f: Item<'_>, v: Item<'_>| {
        if withvalues && resp3 {
            out.array(2);
        }
        bulk_item(out, f);
        if withvalues {
            bulk_item(out, v);
        }
    };
    let header = |out: &mut RespWriter, n: usize| {
        out.array(if withvalues && !resp3 { n * 2 } else { n });
    };
    let size = h.len();
    let count = l.unsigned_abs() as usize;
    if count == 0 {
        out.array(0);
        return Ok(());
    }
    if l < 0 && count > REPEAT_LIMIT {
        return Err(OUT_OF_RANGE);
    }
    if l < 0 || count == 1 {
        header(out, count);
        for _ in 0..count {
            if let Some((f, v)) = h.random() {
                pair(out, f, v);
            }
        }
        return Ok(());
    }
    if count >= size {
        header(out, size);
        for (f, v) in h.items() {
            pair(out, f, v);
        }
        return Ok(());
    }
    if matches!(h, Hash::Table(_)) && count * SUB_STRATEGY_MUL <= size {
        // Few picks from a large table: random slots until enough distinct fields.
        header(out, count);
        let mut seen = std::collections::HashSet::with_capacity(count);
        while seen.len() < count {
            if let Some((f, v)) = h.random()
                && seen.insert(f.to_cow().into_owned())
            {
                pair(out, f, v);
            }
        }
        return Ok(());
    }
    let mut picked = distinct_indices(size, count);
    header(out, count);
    if let Hash::Packed(_) = h {
        picked.sort_unstable();
    }
    // A packed hash (at most 512 pairs) or a count above a third of the size: one walk.
    let items: Vec<(Item<'_>, Item<'_>)> = h.items().collect();
    for i in picked {
        if let Some(&(f, v)) = items.get(i) {
            pair(out, f, v);
        }
    }
    Ok(())
}

/// Options of HSCAN/SSCAN after the cursor (Redis's `scanGenericCommand`, step 1).
pub(super) struct ScanOpts {
    /// COUNT (default 10).
    pub count: usize,
    /// MATCH pattern, `None` for none or `*`.
    pub pattern: Option<bytes::Bytes>,
    /// NOVALUES (HSCAN only, Redis 7.4): fields without their values.
    pub no_values: bool,
}

/// The error for NOVALUES given to a scan other than HSCAN (Redis 7.4's `scanGenericCommand`).
pub(super) const NOVALUES_ONLY_HSCAN: ReplyError =
    ReplyError::msg("ERR NOVALUES option can only be used in HSCAN");

/// Parses `[MATCH p] [COUNT n] [NOVALUES]` from `argv[3..]` as Redis's
/// `scanGenericCommand` does, after the key's lookup: NOVALUES is refused unless
/// `hash` (HSCAN of an existing hash).
pub(super) fn parse_scan_opts(argv: &[bytes::Bytes], hash: bool) -> Result<ScanOpts, ReplyError> {
    let mut opts = ScanOpts {
        count: 10,
        pattern: None,
        no_values: false,
    };
    let mut i = 3;
    while i < argv.len() {
        let more = i + 1 < argv.len();
        if is(&argv[i], "COUNT") && more {
            let n = parse_i64(&argv[i + 1])?;
            if n < 1 {
                return Err(ReplyError::Syntax);
            }
            opts.count = usize::try_from(n).unwrap_or(usize::MAX);
            i += 2;
        } else if is(&argv[i], "MATCH") && more {
            let p = &argv[i + 1];
            opts.pattern = (p.as_ref() != b"*").then(|| p.clone());
            i += 2;
        } else if is(&argv[i], "NOVALUES") {
            if !hash {
                return Err(NOVALUES_ONLY_HSCAN);
            }
            opts.no_values = true;
            i += 1;
        } else {
            return Err(ReplyError::Syntax);
        }
    }
    Ok(opts)
}

/// Writes the empty scan reply `[0, []]`.
pub(super) fn empty_scan(out: &mut RespWriter) {
    out.array(2);
    out.bulk(b"0");
    out.array(0);
}

/// HSCAN key cursor [MATCH pattern] [COUNT count] [NOVALUES]: fields and values, or
/// only the fields with NOVALUES.
fn hscan(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let cursor = super::keys::parse_scan_cursor(&argv[2])?;
    let (v, out) = read_value(ctx, &argv[1]);
    let Some(h) = as_hash(v)? else {
        empty_scan(out);
        return Ok(());
    };
    let opts = parse_scan_opts(argv, true)?;
    let mut found: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let next = h.scan(cursor, opts.count, |f, v| {
        let keep = opts
            .pattern
            .as_ref()
            .is_none_or(|p| f.with_bytes(|f| glob_match(p, f, false)));
        if keep {
            let v = if opts.no_values {
                Vec::new()
            } else {
                v.to_cow().into_owned()
            };
            found.push((f.to_cow().into_owned(), v));
        }
    });
    out.array(2);
    out.bulk(itoa::Buffer::new().format(next).as_bytes());
    if opts.no_values {
        out.array(found.len());
        for (f, _) in &found {
            out.bulk(f);
        }
    } else {
        out.array(found.len() * 2);
        for (f, v) in &found {
            out.bulk(f);
            out.bulk(v);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_parse_as_string2ld() {
        let ok = |t: &str| parse_float(t.as_bytes()).map(LongDouble::to_human);
        assert_eq!(ok("1e3").as_deref(), Some("1000"));
        assert_eq!(ok(" 1"), None);
        assert_eq!(ok("nan"), None);
        assert_eq!(ok(""), None);
        assert_eq!(ok("1x"), None);
        assert_eq!(ok("1e"), None);
        assert_eq!(ok("1e99999"), None);
        assert_eq!(ok(".5").as_deref(), Some("0.5"));
        assert_eq!(ok("-3.").as_deref(), Some("-3"));
        assert!(parse_float(b"inf").is_some_and(|v| !v.is_finite()));
        assert!(parse_float(b"-Infinity").is_some_and(|v| !v.is_finite()));
    }

    #[test]
    fn distinct_indices_are_distinct_and_in_range() {
        for (size, count) in [(10, 9), (10, 2), (100, 3), (5, 1)] {
            let v = distinct_indices(size, count);
            let set: std::collections::HashSet<_> = v.iter().collect();
            assert_eq!(set.len(), count);
            assert!(v.iter().all(|&i| i < size));
        }
    }
}
