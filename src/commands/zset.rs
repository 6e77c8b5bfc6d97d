//! The sorted-set family (Redis 7.0's `@sortedset`): the command table, the helpers the
//! three files share (score parsing and formatting, lookups, deleting an emptied key)
//! and the single-member commands (ZADD, ZINCRBY, ZREM, ZCARD, ZSCORE, ZMSCORE, ZRANK,
//! ZREVRANK, ZRANDMEMBER, ZSCAN). Ranges are in [`super::zset_range`], set operations
//! and pops (blocking ones included) in [`super::zset_store`].
//!
//! Reply shapes follow Redis 7.0's `t_zset.c`:
//!
//! ```text
//! score          RESP2 $<len> %.17g text ("1.5", "3", "inf", "1.0000000000000001e+300")
//!                RESP3 ,<same text>
//! WITHSCORES     RESP2 *2n m1 s1 m2 s2 ...        RESP3 *n [m1 s1] [m2 s2] ...
//! ```
//!
//! Every argument error is found before anything changes; an emptied set deletes its
//! key (with `del` after the command's own event), as Redis does.

use super::zset_range as range;
use super::zset_store as store;
use super::{CommandSpec, flags::*, is, parse_i64};
use crate::core::Ctx;
use crate::core::notify::class;
use crate::error::ReplyError;
use crate::resp::writer::RespWriter;
use crate::types::{Value, ZSet};

const ZSETCAT: &[&str] = &["@sortedset"];
const SINCE: &str = "1.2.0";

/// A row of this family.
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    since: &'static str,
    summary: &'static str,
    handler: super::Handler,
) -> CommandSpec {
    CommandSpec::new(name, arity, flags, "sorted_set", summary, since, handler)
        .keys(1, 1, 1)
        .categories(ZSETCAT)
}

/// A row whose keys follow a `numkeys` argument (found by `movable_keys`).
const fn movable(
    name: &'static str,
    arity: i32,
    flags: u32,
    since: &'static str,
    summary: &'static str,
    handler: super::Handler,
) -> CommandSpec {
    CommandSpec::new(
        name,
        arity,
        flags | MOVABLEKEYS,
        "sorted_set",
        summary,
        since,
        handler,
    )
    .categories(ZSETCAT)
}

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    movable("bzmpop", -5, WRITE | BLOCKING, "7.0.0", "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", store::bzmpop),
    CommandSpec { key_flags: super::keyflags::RW_DELETE, ..cmd("bzpopmax", -3, WRITE | NOSCRIPT | BLOCKING | FAST, "5.0.0", "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise.  Deletes the sorted set if the last element was popped.", store::bzpopmax).keys(1, -2, 1) },
    CommandSpec { key_flags: super::keyflags::RW_DELETE, ..cmd("bzpopmin", -3, WRITE | NOSCRIPT | BLOCKING | FAST, "5.0.0", "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", store::bzpopmin).keys(1, -2, 1) },
    CommandSpec { key_flags: super::keyflags::RW_INSERT, ..cmd("zadd", -4, WRITE | DENYOOM | FAST, SINCE, "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.", zadd) },
    CommandSpec { key_flags: super::keyflags::RO_ONLY, ..cmd("zcard", 2, READONLY | FAST, SINCE, "Returns the number of members in a sorted set.", zcard) },
    cmd("zcount", 4, READONLY | FAST, "2.0.0", "Returns the count of members in a sorted set that have scores within a range.", range::zcount),
    movable("zdiff", -3, READONLY, "6.2.0", "Returns the difference between multiple sorted sets.", store::zdiff),
    movable("zdiffstore", -4, WRITE | DENYOOM, "6.2.0", "Stores the difference of multiple sorted sets in a key.", store::zdiffstore),
    cmd("zincrby", 4, WRITE | DENYOOM | FAST, SINCE, "Increments the score of a member in a sorted set.", zincrby),
    movable("zinter", -3, READONLY, "6.2.0", "Returns the intersect of multiple sorted sets.", store::zinter),
    movable("zintercard", -3, READONLY, "7.0.0", "Returns the number of members of the intersect of multiple sorted sets.", store::zintercard),
    movable("zinterstore", -4, WRITE | DENYOOM, "2.0.0", "Stores the intersect of multiple sorted sets in a key.", store::zinterstore),
    cmd("zlexcount", 4, READONLY | FAST, "2.8.9", "Returns the number of members in a sorted set within a lexicographical range.", range::zlexcount),
    movable("zmpop", -4, WRITE, "7.0.0", "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.", store::zmpop),
    cmd("zmscore", -3, READONLY | FAST, "6.2.0", "Returns the score of one or more members in a sorted set.", zmscore),
    CommandSpec { key_flags: super::keyflags::RW_DELETE, ..cmd("zpopmax", -2, WRITE | FAST, "5.0.0", "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", store::zpopmax) },
    CommandSpec { key_flags: super::keyflags::RW_DELETE, ..cmd("zpopmin", -2, WRITE | FAST, "5.0.0", "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", store::zpopmin) },
    cmd("zrandmember", -2, READONLY, "6.2.0", "Returns one or more random members from a sorted set.", zrandmember),
    cmd("zrange", -4, READONLY, SINCE, "Returns members in a sorted set within a range of indexes.", range::zrange),
    cmd("zrangebylex", -4, READONLY, "2.8.9", "Returns members in a sorted set within a lexicographical range.", range::zrangebylex),
    cmd("zrangebyscore", -4, READONLY, "1.0.5", "Returns members in a sorted set within a range of scores.", range::zrangebyscore),
    CommandSpec { key_flags: &[super::keyflags::OW | super::keyflags::UPDATE, super::keyflags::RO | super::keyflags::ACCESS], ..cmd("zrangestore", -5, WRITE | DENYOOM, "6.2.4", "Stores a range of members from sorted set in a key.", range::zrangestore).keys(1, 2, 1) },
    cmd("zrank", 3, READONLY | FAST, "2.0.0", "Returns the index of a member in a sorted set ordered by ascending scores.", zrank),
    CommandSpec { key_flags: super::keyflags::RW_DELETE, ..cmd("zrem", -3, WRITE | FAST, SINCE, "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.", zrem) },
    CommandSpec { key_flags: super::keyflags::RW_DELETE, ..cmd("zremrangebylex", 4, WRITE, "2.8.9", "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.", range::zremrangebylex) },
    CommandSpec { key_flags: super::keyflags::RW_DELETE, ..cmd("zremrangebyrank", 4, WRITE, "2.0.0", "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.", range::zremrangebyrank) },
    CommandSpec { key_flags: super::keyflags::RW_DELETE, ..cmd("zremrangebyscore", 4, WRITE, SINCE, "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.", range::zremrangebyscore) },
    cmd("zrevrange", -4, READONLY, SINCE, "Returns members in a sorted set within a range of indexes in reverse order.", range::zrevrange),
    cmd("zrevrangebylex", -4, READONLY, "2.8.9", "Returns members in a sorted set within a lexicographical range in reverse order.", range::zrevrangebylex),
    cmd("zrevrangebyscore", -4, READONLY, "2.2.0", "Returns members in a sorted set within a range of scores in reverse order.", range::zrevrangebyscore),
    cmd("zrevrank", 3, READONLY | FAST, "2.0.0", "Returns the index of a member in a sorted set ordered by descending scores.", zrevrank),
    cmd("zscan", -3, READONLY, "2.8.0", "Iterates over members and scores of a sorted set.", zscan),
    cmd("zscore", 3, READONLY | FAST, SINCE, "Returns the score of a member in a sorted set.", zscore),
    movable("zunion", -3, READONLY, "6.2.0", "Returns the union of multiple sorted sets.", store::zunion),
    movable("zunionstore", -4, WRITE | DENYOOM, "2.0.0", "Stores the union of multiple sorted sets in a key.", store::zunionstore),
];

// ---- shared helpers -----------------------------------------------------------------

/// Formats a double as C's `%.17g` (what Redis 7.0's `addReplyDouble` prints), with
/// `inf`/`-inf` for the infinities.
pub fn fmt_double(d: f64) -> String {
    if d.is_infinite() {
        return if d > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if d.is_nan() {
        return "nan".to_string();
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let sci = format!("{d:.16e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..17).contains(&exp) {
        let mant = strip_zeros(mant);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.abs())
    } else {
        let prec = usize::try_from(16 - exp).unwrap_or(0);
        strip_zeros(&format!("{d:.prec$}")).to_string()
    }
}

/// `%g`'s removal of trailing zeros (and of a trailing point).
fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Writes a score as `addReplyDouble` does: RESP3 `,`, RESP2 a bulk string.
pub fn reply_score(out: &mut RespWriter, d: f64) {
    let text = fmt_double(d);
    if out.is_resp3() {
        out.buf.push(b',');
        out.buf.extend_from_slice(text.as_bytes());
        out.buf.extend_from_slice(b"\r\n");
    } else {
        out.bulk(text.as_bytes());
    }
}

/// Writes one WITHSCORES element: `[member, score]` in RESP3, the two flat in RESP2
/// (the caller counted the array for the protocol).
pub fn reply_pair(out: &mut RespWriter, member: &[u8], score: f64) {
    if out.is_resp3() {
        out.array(2);
    }
    out.bulk(member);
    reply_score(out, score);
}

/// The array header for `n` results, WITHSCORES doubling them in RESP2.
pub fn reply_len(out: &mut RespWriter, n: usize, withscores: bool) {
    out.array(if withscores && !out.is_resp3() {
        2 * n
    } else {
        n
    });
}

/// C's `strtod` on `s` (glibc): leading white space, a sign, `inf`/`infinity`/`nan`,
/// hexadecimal or decimal digits with an exponent. Returns the value and how many
/// bytes it consumed (0 when nothing parses; the value is then 0).
pub fn strtod(s: &[u8]) -> (f64, usize) {
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r') {
        i += 1;
    }
    let start = i;
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    let sign = |v: f64| if neg { -v } else { v };
    let rest = &s[i..];
    let starts = |w: &[u8]| rest.len() >= w.len() && rest[..w.len()].eq_ignore_ascii_case(w);
    if starts(b"infinity") {
        return (sign(f64::INFINITY), i + 8);
    }
    if starts(b"inf") {
        return (sign(f64::INFINITY), i + 3);
    }
    if starts(b"nan") {
        let mut j = i + 3;
        if s.get(j) == Some(&b'(') {
            let mut k = j + 1;
            while k < s.len() && (s[k].is_ascii_alphanumeric() || s[k] == b'_') {
                k += 1;
            }
            if s.get(k) == Some(&b')') {
                j = k + 1;
            }
        }
        return (f64::NAN, j);
    }
    if starts(b"0x") {
        if let Some((v, n)) = hex_float(&rest[2..]) {
            return (sign(v), i + 2 + n);
        }
        // "0x" without hex digits: the "0" alone.
        return (sign(0.0), i + 1);
    }
    let mut j = i;
    let mut digits = 0;
    while j < s.len() && s[j].is_ascii_digit() {
        j += 1;
        digits += 1;
    }
    if j < s.len() && s[j] == b'.' {
        j += 1;
        while j < s.len() && s[j].is_ascii_digit() {
            j += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return (0.0, 0);
    }
    if j < s.len() && (s[j] == b'e' || s[j] == b'E') {
        let mut k = j + 1;
        if k < s.len() && (s[k] == b'+' || s[k] == b'-') {
            k += 1;
        }
        if k < s.len() && s[k].is_ascii_digit() {
            while k < s.len() && s[k].is_ascii_digit() {
                k += 1;
            }
            j = k;
        }
    }
    let text = std::str::from_utf8(&s[start..j]).unwrap_or("0");
    (text.parse::<f64>().unwrap_or(0.0), j)
}

/// A hexadecimal float's digits after `0x`: value and bytes consumed.
fn hex_float(s: &[u8]) -> Option<(f64, usize)> {
    let mut i = 0;
    let mut mant: u64 = 0;
    let mut exp: i64 = 0;
    let mut digits = 0;
    let mut seen_point = false;
    while i < s.len() {
        let c = s[i];
        if c == b'.' && !seen_point {
            seen_point = true;
            i += 1;
            continue;
        }
        let Some(d) = (c as char).to_digit(16) else {
            break;
        };
        digits += 1;
        if mant >> 56 == 0 {
            mant = mant * 16 + u64::from(d);
            if seen_point {
                exp -= 4;
            }
        } else if !seen_point {
            exp += 4;
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    if i < s.len() && (s[i] == b'p' || s[i] == b'P') {
        let mut k = i + 1;
        let mut eneg = false;
        if k < s.len() && (s[k] == b'+' || s[k] == b'-') {
            eneg = s[k] == b'-';
            k += 1;
        }
        if k < s.len() && s[k].is_ascii_digit() {
            let mut e: i64 = 0;
            while k < s.len() && s[k].is_ascii_digit() {
                e = (e * 10 + i64::from(s[k] - b'0')).min(100_000);
                k += 1;
            }
            exp += if eneg { -e } else { e };
            i = k;
        }
    }
    let v = (mant as f64) * 2f64.powi(exp.clamp(-20_000, 20_000) as i32);
    Some((v, i))
}

/// Redis's `string2d` (scores, increments, weights): the whole argument is one
/// number, no leading space, no overflow or underflow to zero, not NaN.
pub fn string2d(arg: &[u8]) -> Option<f64> {
    if arg.is_empty() || arg[0].is_ascii_whitespace() || arg[0] == b'\x0b' {
        return None;
    }
    let (v, n) = strtod(arg);
    if n != arg.len() || v.is_nan() {
        return None;
    }
    let text_is_inf = arg.iter().any(|c| c.eq_ignore_ascii_case(&b'i'));
    if v.is_infinite() && !text_is_inf {
        return None; // ERANGE overflow
    }
    if v == 0.0 && has_nonzero_mantissa(arg) {
        return None; // ERANGE underflow
    }
    Some(v)
}

/// True if the mantissa of a decimal or hexadecimal number has a nonzero digit.
fn has_nonzero_mantissa(arg: &[u8]) -> bool {
    let body = arg
        .strip_prefix(b"-")
        .or(arg.strip_prefix(b"+"))
        .unwrap_or(arg);
    if body.len() > 1 && body[0] == b'0' && (body[1] == b'x' || body[1] == b'X') {
        return body[2..]
            .iter()
            .take_while(|c| c.is_ascii_hexdigit() || **c == b'.')
            .any(|c| *c != b'0' && *c != b'.');
    }
    body.iter()
        .take_while(|c| c.is_ascii_digit() || **c == b'.')
        .any(|c| (b'1'..=b'9').contains(c))
}

/// A score-like argument, or `ERR value is not a valid float`.
pub fn parse_score(arg: &[u8]) -> Result<f64, ReplyError> {
    string2d(arg).ok_or(ReplyError::msg("ERR value is not a valid float"))
}

/// Looks `key` up for reading or writing (lazy expiry, hit/miss counters): the sorted
/// set with the reply writer; `WRONGTYPE` for another type.
pub fn lookup<'c>(
    ctx: &'c mut Ctx<'_>,
    key: &[u8],
) -> (Result<Option<&'c mut ZSet>, ReplyError>, &'c mut RespWriter) {
    let hash = ctx.db().hash_key(key);
    let (v, out) = ctx.lookup_value_hashed_with_out(hash, key);
    let z = match v {
        None => Ok(None),
        Some(Value::ZSet(z)) => Ok(Some(&mut **z)),
        Some(_) => Err(ReplyError::WrongType),
    };
    (z, out)
}

/// After a write that may have emptied `key`'s set: deletes the key if so (Redis
/// never keeps an empty collection) with its `del` notification. True if deleted.
pub fn delete_if_empty(ctx: &mut Ctx<'_>, key: &[u8]) -> bool {
    let empty = matches!(ctx.db().get(key), Some(Value::ZSet(z)) if z.is_empty());
    if empty {
        ctx.db().remove(key);
        ctx.notify(class::GENERIC, "del", key);
    }
    empty
}

// ---- ZADD / ZINCRBY -----------------------------------------------------------------

/// Parsed ZADD flags (Redis: `ZADD_IN_*`).
#[derive(Debug, Clone, Copy, Default)]
struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// What one element's update did (Redis: `zsetAdd`'s out flags).
enum AddOutcome {
    Added(f64),
    Updated(f64),
    /// Already there with that score (counts as processed).
    Same(f64),
    Nop,
    Nan,
}

/// Redis's `zsetAdd` on one element.
fn add_one(
    z: &mut ZSet,
    member: &[u8],
    score: f64,
    f: AddFlags,
    ctx_t: &crate::types::Thresholds,
) -> AddOutcome {
    match z.score(member) {
        Some(cur) => {
            if f.nx {
                return AddOutcome::Nop;
            }
            let mut score = score;
            if f.incr {
                score += cur;
                if score.is_nan() {
                    return AddOutcome::Nan;
                }
            }
            if (f.lt && score >= cur) || (f.gt && score <= cur) {
                return AddOutcome::Nop;
            }
            if score != cur {
                z.insert(member, score, ctx_t);
                AddOutcome::Updated(score)
            } else {
                AddOutcome::Same(score)
            }
        }
        None => {
            if f.xx {
                return AddOutcome::Nop;
            }
            z.insert(member, score, ctx_t);
            AddOutcome::Added(score)
        }
    }
}

/// What a ZADD did over its elements.
#[derive(Debug, Default)]
struct Tally {
    added: i64,
    updated: i64,
    processed: i64,
    /// The last processed element's score (the INCR reply).
    last: f64,
    /// An increment made a score NaN (the elements before it stay applied, as Redis).
    nan: bool,
}

/// Applies the (score, member) pairs to `z`, stopping at a NaN increment.
fn apply_adds<'m>(
    z: &mut ZSet,
    members: impl Iterator<Item = &'m [u8]>,
    scores: &[f64],
    f: AddFlags,
    t: &crate::types::Thresholds,
) -> Tally {
    let mut tally = Tally::default();
    for (member, score) in members.zip(scores) {
        match add_one(z, member, *score, f, t) {
            AddOutcome::Added(s) => {
                tally.added += 1;
                tally.processed += 1;
                tally.last = s;
            }
            AddOutcome::Updated(s) => {
                tally.updated += 1;
                tally.processed += 1;
                tally.last = s;
            }
            AddOutcome::Same(s) => {
                tally.processed += 1;
                tally.last = s;
            }
            AddOutcome::Nop => {}
            AddOutcome::Nan => {
                tally.nan = true;
                break;
            }
        }
    }
    z.compact();
    tally
}

fn zadd(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    zadd_generic(ctx, false)
}

fn zincrby(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    zadd_generic(ctx, true)
}

/// ZADD and ZINCRBY (Redis: `zaddGenericCommand`; ZINCRBY is ZADD with INCR, so its
/// "increment" position is parsed for the options too, exactly as Redis does).
fn zadd_generic(ctx: &mut Ctx<'_>, incr: bool) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let mut f = AddFlags {
        incr,
        ..AddFlags::default()
    };
    let mut idx = 2;
    while idx < argv.len() {
        let o = &argv[idx];
        if is(o, "nx") {
            f.nx = true;
        } else if is(o, "xx") {
            f.xx = true;
        } else if is(o, "ch") {
            f.ch = true;
        } else if is(o, "incr") {
            f.incr = true;
        } else if is(o, "gt") {
            f.gt = true;
        } else if is(o, "lt") {
            f.lt = true;
        } else {
            break;
        }
        idx += 1;
    }
    let elements = argv.len() - idx;
    if elements % 2 == 1 || elements == 0 {
        return Err(ReplyError::Syntax);
    }
    let elements = elements / 2;
    if f.nx && f.xx {
        return Err(ReplyError::msg(
            "ERR XX and NX options at the same time are not compatible",
        ));
    }
    if (f.nx && (f.gt || f.lt)) || (f.gt && f.lt) {
        return Err(ReplyError::msg(
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if f.incr && elements > 1 {
        return Err(ReplyError::msg(
            "ERR INCR option supports a single increment-element pair",
        ));
    }
    let mut scores = Vec::with_capacity(elements);
    for j in 0..elements {
        scores.push(parse_score(&argv[idx + 2 * j])?);
    }
    let t = ctx.core.thresholds;
    let members = (0..elements).map(|j| &argv[idx + 1 + 2 * j][..]);
    let (z, _) = lookup(ctx, key);
    let tally = match z? {
        Some(z) => apply_adds(z, members, &scores, f, &t),
        None if f.xx => Tally::default(),
        None => {
            let mut z = ZSet::new();
            let tally = apply_adds(&mut z, members, &scores, f, &t);
            if tally.added > 0 {
                ctx.db().insert(key, Value::ZSet(Box::new(z)));
                ctx.notify(class::NEW, "new", key);
                ctx.signal_ready(key);
            }
            tally
        }
    };
    let Tally {
        added,
        updated,
        processed,
        last,
        nan,
    } = tally;
    if added + updated > 0 {
        ctx.modified(key);
        ctx.notify(class::ZSET, if f.incr { "zincr" } else { "zadd" }, key);
        ctx.propagate(argv);
    }
    if nan {
        return Err(ReplyError::msg("ERR resulting score is not a number (NaN)"));
    }
    if f.incr {
        if processed > 0 {
            reply_score(ctx.out, last);
        } else {
            ctx.out.null();
        }
    } else {
        ctx.out.integer(if f.ch { added + updated } else { added });
    }
    Ok(())
}

// ---- ZREM, ZCARD, ZSCORE, ZMSCORE, ZRANK ----------------------------------------------

fn zrem(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let (z, out) = lookup(ctx, key);
    let Some(z) = z? else {
        out.integer(0);
        return Ok(());
    };
    let mut deleted = 0;
    for m in &argv[2..] {
        if z.remove(m).is_some() {
            deleted += 1;
        }
        if z.is_empty() {
            break;
        }
    }
    out.integer(deleted);
    if deleted > 0 {
        ctx.notify(class::ZSET, "zrem", key);
        delete_if_empty(ctx, key);
        ctx.modified(key);
        ctx.propagate(argv);
    }
    Ok(())
}

fn zcard(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let (z, out) = lookup(ctx, &ctx.argv[1]);
    let n = z?.map_or(0, |z| z.len());
    out.integer(i64::try_from(n).unwrap_or(i64::MAX));
    Ok(())
}

fn zscore(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (z, out) = lookup(ctx, &argv[1]);
    match z?.and_then(|z| z.score(&argv[2])) {
        Some(s) => reply_score(out, s),
        None => out.null(),
    }
    Ok(())
}

fn zmscore(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (z, out) = lookup(ctx, &argv[1]);
    let z = z?;
    out.array(argv.len() - 2);
    for m in &argv[2..] {
        match z.as_ref().and_then(|z| z.score(m)) {
            Some(s) => reply_score(out, s),
            None => out.null(),
        }
    }
    Ok(())
}

fn zrank(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    rank_generic(ctx, false)
}

fn zrevrank(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    rank_generic(ctx, true)
}

fn rank_generic(ctx: &mut Ctx<'_>, rev: bool) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (z, out) = lookup(ctx, &argv[1]);
    let Some(z) = z? else {
        out.null();
        return Ok(());
    };
    match z.rank(&argv[2]) {
        Some((r, _)) => {
            let r = if rev { z.len() - 1 - r } else { r };
            out.integer(i64::try_from(r).unwrap_or(i64::MAX));
        }
        None => out.null(),
    }
    Ok(())
}

// ---- ZRANDMEMBER --------------------------------------------------------------------

thread_local! {
    static RNG: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// A pseudo-random number (xorshift64*, seeded from the clock on first use).
pub fn random_u64() -> u64 {
    RNG.with(|r| {
        let mut x = r.get();
        if x == 0 {
            x = crate::core::unix_ms() ^ 0x9e37_79b9_7f4a_7c15;
        }
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        r.set(x);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    })
}

/// Replies larger than this stop growing (Redis stops a reply once the client's
/// output buffer limit closes it).
const REPLY_CAP: usize = 1 << 30;

fn zrandmember(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    if argv.len() >= 3 {
        let l = parse_i64(&argv[2])?;
        if l == i64::MIN {
            return Err(ReplyError::msg(
                "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            ));
        }
        let withscores = if argv.len() > 4 || (argv.len() == 4 && !is(&argv[3], "withscores")) {
            return Err(ReplyError::Syntax);
        } else if argv.len() == 4 {
            if !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&l) {
                return Err(ReplyError::msg("ERR value is out of range"));
            }
            true
        } else {
            false
        };
        let (z, out) = lookup(ctx, &argv[1]);
        let Some(z) = z? else {
            out.array(0);
            return Ok(());
        };
        let size = z.len();
        let count = l.unsigned_abs() as usize;
        if count == 0 || size == 0 {
            out.array(0);
            return Ok(());
        }
        if l < 0 || count == 1 {
            reply_len(out, count, withscores);
            let all: Vec<(&[u8], f64)> = z.range(0, size, false).collect();
            for _ in 0..count {
                let (m, s) = all[(random_u64() % size as u64) as usize];
                if withscores {
                    reply_pair(out, m, s);
                } else {
                    out.bulk(m);
                }
                if out.buf.len() > REPLY_CAP {
                    break;
                }
            }
            return Ok(());
        }
        let mut picks: Vec<usize> = (0..size).collect();
        if count < size {
            for i in 0..count {
                let j = i + (random_u64() % (size - i) as u64) as usize;
                picks.swap(i, j);
            }
            picks.truncate(count);
        }
        reply_len(out, picks.len(), withscores);
        let all: Vec<(&[u8], f64)> = z.range(0, size, false).collect();
        for i in picks {
            let (m, s) = all[i];
            if withscores {
                reply_pair(out, m, s);
            } else {
                out.bulk(m);
            }
        }
        return Ok(());
    }
    let (z, out) = lookup(ctx, &argv[1]);
    match z? {
        Some(z) if !z.is_empty() => {
            let r = (random_u64() % z.len() as u64) as usize;
            match z.get(r) {
                Some((m, _)) => out.bulk(m),
                None => out.null(),
            }
        }
        _ => out.null(),
    }
    Ok(())
}

// ---- ZSCAN --------------------------------------------------------------------------

/// `ZSCAN key cursor [MATCH pattern] [COUNT count]`. A listpack-encoded set answers
/// whole with cursor 0 (as Redis); a large one walks its order, the cursor being the
/// rank to resume at. Deviation from Redis (whose cursor walks hash buckets): members
/// removed below the cursor between two calls shift the ranks, so a member present
/// throughout may be skipped; Redis guarantees it is returned.
fn zscan(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let cursor: usize = std::str::from_utf8(&argv[2])
        .ok()
        .filter(|s| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()))
        .and_then(|s| s.parse::<u64>().ok())
        .map(|c| usize::try_from(c).unwrap_or(usize::MAX))
        .ok_or(ReplyError::msg("ERR invalid cursor"))?;
    let mut pattern: Option<&[u8]> = None;
    let mut count = 10usize;
    let mut j = 3;
    while j < argv.len() {
        if is(&argv[j], "count") && j + 1 < argv.len() {
            let n = parse_i64(&argv[j + 1])?;
            if n < 1 {
                return Err(ReplyError::Syntax);
            }
            count = usize::try_from(n).unwrap_or(usize::MAX);
            j += 2;
        } else if is(&argv[j], "match") && j + 1 < argv.len() {
            pattern = Some(&argv[j + 1]);
            j += 2;
        } else {
            return Err(ReplyError::Syntax);
        }
    }
    let (z, out) = lookup(ctx, &argv[1]);
    let Some(z) = z? else {
        out.array(2);
        out.bulk(b"0");
        out.array(0);
        return Ok(());
    };
    let (from, to) = if z.encoding() == "listpack" {
        (0, z.len())
    } else {
        (
            cursor.min(z.len()),
            cursor.saturating_add(count).min(z.len()),
        )
    };
    let next = if to >= z.len() { 0 } else { to };
    let items: Vec<(&[u8], f64)> = z
        .range(from, to, false)
        .filter(|(m, _)| pattern.is_none_or(|p| crate::util::glob_match(p, m, false)))
        .collect();
    out.array(2);
    out.bulk(next.to_string().as_bytes());
    out.array(items.len() * 2);
    // Scores as strings in both protocols (Redis: `d2string`, `%.17g` as well).
    for (m, s) in items {
        out.bulk(m);
        out.bulk(fmt_double(s).as_bytes());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_as_percent_17g() {
        let cases = [
            (1.5, "1.5"),
            (3.0, "3"),
            (1.1, "1.1000000000000001"),
            (0.1, "0.10000000000000001"),
            (1e300, "1.0000000000000001e+300"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
            (-2.5, "-2.5"),
            (-0.0, "-0"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for (d, want) in cases {
            assert_eq!(fmt_double(d), want, "{d}");
        }
    }

    #[test]
    fn string2d_as_redis() {
        assert_eq!(string2d(b"1.5"), Some(1.5));
        assert_eq!(string2d(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(string2d(b"+Infinity"), Some(f64::INFINITY));
        assert_eq!(string2d(b"0x10"), Some(16.0));
        assert_eq!(string2d(b"1e3"), Some(1000.0));
        assert_eq!(string2d(b".5"), Some(0.5));
        assert_eq!(string2d(b"5."), Some(5.0));
        for bad in [
            &b"nan"[..],
            b"",
            b" 1",
            b"1 ",
            b"1e999",
            b"1e-999",
            b"(1",
            b"x",
            b"1e",
        ] {
            assert_eq!(string2d(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
        assert_eq!(strtod(b" 12abc"), (12.0, 3));
        assert_eq!(strtod(b""), (0.0, 0));
        assert_eq!(strtod(b"1e+"), (1.0, 1));
    }
}
