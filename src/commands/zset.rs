//! The sorted-set family (Redis 7.0's `@sortedset`): the command table and the
//! single-member commands (ZADD, ZINCRBY, ZREM, ZCARD, ZSCORE, ZMSCORE, ZRANK,
//! ZREVRANK, ZRANDMEMBER, ZSCAN). Ranges are in [`super::zset_range`], set operations
//! and pops (blocking ones included) in [`super::zset_store`], and what the three share
//! (scores read and written, the lookup) in [`super::zset_score`].
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
use super::zset_score::{
    lookup, parse_score, reply_len, reply_pair, reply_per_member, reply_score,
};
use super::zset_store as store;
use super::{CommandSpec, Family, flags::*, is, parse_i64};
use crate::core::Ctx;
use crate::core::notify::class;
use crate::error::ReplyError;
use crate::resp::writer::RespWriter;
use crate::types::{Value, ZSet};
use crate::util::{fmt_double, rand_below};

const ZSETCAT: &[&str] = &["@sortedset"];
const SINCE: &str = "1.2.0";

/// The family of the sorted-set commands whose key is their first argument.
const ZSET_ROWS: Family = Family::new("sorted-set").categories(ZSETCAT).keys(1, 1, 1);

/// The family of the sorted-set commands whose keys are found by parsing (`MOVABLEKEYS`).
const ZSET_MOVABLE: Family = Family::new("sorted-set").categories(ZSETCAT);

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    ZSET_MOVABLE.row("bzmpop", -5, WRITE | BLOCKING | MOVABLEKEYS, "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", "7.0.0", store::bzmpop),
    CommandSpec { key_flags: super::keyflags::RW_ACCESS_DELETE, ..ZSET_ROWS.row("bzpopmax", -3, WRITE | NOSCRIPT | BLOCKING | FAST, "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise.  Deletes the sorted set if the last element was popped.", "5.0.0", store::bzpopmax).keys(1, -2, 1) },
    CommandSpec { key_flags: super::keyflags::RW_ACCESS_DELETE, ..ZSET_ROWS.row("bzpopmin", -3, WRITE | NOSCRIPT | BLOCKING | FAST, "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", "5.0.0", store::bzpopmin).keys(1, -2, 1) },
    CommandSpec { key_flags: super::keyflags::RW_UPDATE, ..ZSET_ROWS.row("zadd", -4, WRITE | DENYOOM | FAST, "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.", SINCE, zadd) },
    CommandSpec { key_flags: super::keyflags::RO_ONLY, ..ZSET_ROWS.row("zcard", 2, READONLY | FAST, "Returns the number of members in a sorted set.", SINCE, zcard) },
    ZSET_ROWS.row("zcount", 4, READONLY | FAST, "Returns the count of members in a sorted set that have scores within a range.", "2.0.0", range::zcount),
    ZSET_MOVABLE.row("zdiff", -3, READONLY | MOVABLEKEYS, "Returns the difference between multiple sorted sets.", "6.2.0", store::zdiff),
    ZSET_MOVABLE.row("zdiffstore", -4, WRITE | DENYOOM | MOVABLEKEYS, "Stores the difference of multiple sorted sets in a key.", "6.2.0", store::zdiffstore).keys(1, 1, 1),
    ZSET_ROWS.row("zincrby", 4, WRITE | DENYOOM | FAST, "Increments the score of a member in a sorted set.", SINCE, zincrby).with_key_flags(super::keyflags::RW_ACCESS_UPDATE),
    ZSET_MOVABLE.row("zinter", -3, READONLY | MOVABLEKEYS, "Returns the intersect of multiple sorted sets.", "6.2.0", store::zinter),
    ZSET_MOVABLE.row("zintercard", -3, READONLY | MOVABLEKEYS, "Returns the number of members of the intersect of multiple sorted sets.", "7.0.0", store::zintercard),
    ZSET_MOVABLE.row("zinterstore", -4, WRITE | DENYOOM | MOVABLEKEYS, "Stores the intersect of multiple sorted sets in a key.", "2.0.0", store::zinterstore).keys(1, 1, 1),
    ZSET_ROWS.row("zlexcount", 4, READONLY | FAST, "Returns the number of members in a sorted set within a lexicographical range.", "2.8.9", range::zlexcount),
    ZSET_MOVABLE.row("zmpop", -4, WRITE | MOVABLEKEYS, "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.", "7.0.0", store::zmpop),
    ZSET_ROWS.row("zmscore", -3, READONLY | FAST, "Returns the score of one or more members in a sorted set.", "6.2.0", zmscore),
    CommandSpec { key_flags: super::keyflags::RW_ACCESS_DELETE, ..ZSET_ROWS.row("zpopmax", -2, WRITE | FAST, "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", "5.0.0", store::zpopmax) },
    CommandSpec { key_flags: super::keyflags::RW_ACCESS_DELETE, ..ZSET_ROWS.row("zpopmin", -2, WRITE | FAST, "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", "5.0.0", store::zpopmin) },
    ZSET_ROWS.row("zrandmember", -2, READONLY, "Returns one or more random members from a sorted set.", "6.2.0", zrandmember),
    ZSET_ROWS.row("zrange", -4, READONLY, "Returns members in a sorted set within a range of indexes.", SINCE, range::zrange),
    ZSET_ROWS.row("zrangebylex", -4, READONLY, "Returns members in a sorted set within a lexicographical range.", "2.8.9", range::zrangebylex),
    ZSET_ROWS.row("zrangebyscore", -4, READONLY, "Returns members in a sorted set within a range of scores.", "1.0.5", range::zrangebyscore),
    CommandSpec { key_flags: &[super::keyflags::OW | super::keyflags::UPDATE, super::keyflags::RO | super::keyflags::ACCESS], ..ZSET_ROWS.row("zrangestore", -5, WRITE | DENYOOM, "Stores a range of members from sorted set in a key.", "6.2.0", range::zrangestore).keys(1, 2, 1) },
    ZSET_ROWS.row("zrank", -3, READONLY | FAST, "Returns the index of a member in a sorted set ordered by ascending scores.", "2.0.0", zrank),
    CommandSpec { key_flags: super::keyflags::RW_DELETE, ..ZSET_ROWS.row("zrem", -3, WRITE | FAST, "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.", SINCE, zrem) },
    CommandSpec { key_flags: super::keyflags::RW_DELETE, ..ZSET_ROWS.row("zremrangebylex", 4, WRITE, "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.", "2.8.9", range::zremrangebylex) },
    CommandSpec { key_flags: super::keyflags::RW_DELETE, ..ZSET_ROWS.row("zremrangebyrank", 4, WRITE, "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.", "2.0.0", range::zremrangebyrank) },
    CommandSpec { key_flags: super::keyflags::RW_DELETE, ..ZSET_ROWS.row("zremrangebyscore", 4, WRITE, "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.", SINCE, range::zremrangebyscore) },
    ZSET_ROWS.row("zrevrange", -4, READONLY, "Returns members in a sorted set within a range of indexes in reverse order.", SINCE, range::zrevrange),
    ZSET_ROWS.row("zrevrangebylex", -4, READONLY, "Returns members in a sorted set within a lexicographical range in reverse order.", "2.8.9", range::zrevrangebylex),
    ZSET_ROWS.row("zrevrangebyscore", -4, READONLY, "Returns members in a sorted set within a range of scores in reverse order.", "2.2.0", range::zrevrangebyscore),
    ZSET_ROWS.row("zrevrank", -3, READONLY | FAST, "Returns the index of a member in a sorted set ordered by descending scores.", "2.0.0", zrevrank),
    ZSET_ROWS.row("zscan", -3, READONLY, "Iterates over members and scores of a sorted set.", "2.8.0", zscan),
    ZSET_ROWS.row("zscore", 3, READONLY | FAST, "Returns the score of a member in a sorted set.", SINCE, zscore),
    ZSET_MOVABLE.row("zunion", -3, READONLY | MOVABLEKEYS, "Returns the union of multiple sorted sets.", "6.2.0", store::zunion),
    ZSET_MOVABLE.row("zunionstore", -4, WRITE | DENYOOM | MOVABLEKEYS, "Stores the union of multiple sorted sets in a key.", "2.0.0", store::zunionstore).keys(1, 1, 1),
];

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
        let event = if f.incr { "zincr" } else { "zadd" };
        ctx.collection_written(class::ZSET, event, key, false, argv);
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
    let emptied = z.is_empty();
    out.integer(deleted);
    if deleted > 0 {
        ctx.collection_written(class::ZSET, "zrem", key, emptied, argv);
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
    reply_per_member(ctx, reply_score, RespWriter::null)
}

fn zrank(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    rank_generic(ctx, false)
}

fn zrevrank(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    rank_generic(ctx, true)
}

/// `ZRANK|ZREVRANK key member [WITHSCORE]` (Redis's `zrankGenericCommand`): the rank,
/// or `[rank, score]` with WITHSCORE (7.2); a missing key or member answers the null,
/// or the null array with WITHSCORE (`*-1` in RESP2). More than one extra argument is
/// an arity error, one that is not WITHSCORE a syntax error, both before the lookup.
fn rank_generic(ctx: &mut Ctx<'_>, rev: bool) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    if argv.len() > 4 {
        return Err(ReplyError::arity(&argv[0]));
    }
    let withscore = match argv.get(3) {
        None => false,
        Some(a) if is(a, "withscore") => true,
        Some(_) => return Err(ReplyError::Syntax),
    };
    let (z, out) = lookup(ctx, &argv[1]);
    match z?.and_then(|z| z.rank(&argv[2]).map(|(r, s)| (r, s, z.len()))) {
        Some((r, score, len)) => {
            let r = if rev { len - 1 - r } else { r };
            if withscore {
                out.array(2);
            }
            out.integer(i64::try_from(r).unwrap_or(i64::MAX));
            if withscore {
                reply_score(out, score);
            }
        }
        None if withscore => out.null_array(),
        None => out.null(),
    }
    Ok(())
}

// ---- ZRANDMEMBER --------------------------------------------------------------------

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
                let (m, s) = all[rand_below(size)];
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
                let j = i + rand_below(size - i);
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
            let r = rand_below(z.len());
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
    let (z, out) = lookup(ctx, &argv[1]);
    let Some(z) = z? else {
        super::hash::empty_scan(out);
        return Ok(());
    };
    // Options after the lookup, as Redis's `scanGenericCommand` parses them.
    let opts = super::hash::parse_scan_opts(argv, false)?;
    let (count, pattern) = (opts.count, opts.pattern.as_deref());
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
