//! Sorted-set operations over several keys and the pops: ZUNION, ZINTER, ZDIFF (and
//! their STORE forms), ZINTERCARD, ZPOPMIN/ZPOPMAX, ZMPOP, and the blocking BZPOPMIN,
//! BZPOPMAX and BZMPOP.
//!
//! Set operations accept plain sets as inputs (every member scores 1) and refuse any
//! other type with `WRONGTYPE`, checked for every key before the options are parsed
//! (as Redis does). Results come out in (score, member) order.
//!
//! Blocking: a blocking pop with nothing to pop registers the client on its keys
//! ([`Ctx::block`]) with its own command to re-execute; the core re-runs it when a key
//! is signalled ready (ZADD creating the key, a store writing it), in blocking order.
//! While re-executing, a key that now holds another type counts as empty, so a
//! client never wakes for a string. Inside MULTI (or a script) an empty pop answers
//! the null array at once. A served pop is propagated as ZPOPMIN/ZPOPMAX with the
//! number it popped, as Redis 7.0 rewrites it.

use super::zset_range::store_result;
use super::zset_score::{lookup, reply_len, reply_pair, reply_score, string2d};
use super::{is, parse_i64};
use crate::core::Ctx;
use crate::core::notify::class;
use crate::error::ReplyError;
use crate::types::{Set, Value, ZSet, zset::cmp_entry};
use bytes::Bytes;
use std::collections::HashMap;

/// One input of a set operation.
enum Src<'a> {
    Missing,
    Z(&'a ZSet),
    S(&'a Set),
}

impl Src<'_> {
    fn len(&self) -> usize {
        match self {
            Src::Missing => 0,
            Src::Z(z) => z.len(),
            Src::S(s) => s.len(),
        }
    }

    fn find(&self, m: &[u8]) -> Option<f64> {
        match self {
            Src::Missing => None,
            Src::Z(z) => z.score(m),
            Src::S(s) => s.contains(m).then_some(1.0),
        }
    }

    fn for_each(&self, mut f: impl FnMut(&[u8], f64)) {
        match self {
            Src::Missing => {}
            Src::Z(z) => z.iter().for_each(|(m, s)| f(&m, s)),
            Src::S(s) => s.iter().for_each(|m| f(&m, 1.0)),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Inter,
    Diff,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Aggregate {
    Sum,
    Min,
    Max,
    /// Redis 8.8's `AGGREGATE COUNT`: a member's scores are ignored, each input that
    /// holds it adds its weight (1 by default), so the result counts the inputs.
    Count,
}

/// A member's contribution from one input: `weight * score`, or the weight alone under
/// `AGGREGATE COUNT` (Redis: `zuiWeightedScore`).
fn weighted(score: f64, weight: f64, a: Aggregate) -> f64 {
    if a == Aggregate::Count {
        weight
    } else {
        weight * score
    }
}

/// Redis's `zunionInterAggregate` (a NaN sum becomes 0; COUNT sums the weights, so
/// `WEIGHTS inf -inf` makes a NaN there too, and it becomes 0 the same way).
fn aggregate(target: &mut f64, val: f64, a: Aggregate) {
    match a {
        Aggregate::Sum | Aggregate::Count => {
            *target += val;
            if target.is_nan() {
                *target = 0.0;
            }
        }
        Aggregate::Min => {
            if val < *target {
                *target = val;
            }
        }
        Aggregate::Max => {
            if val > *target {
                *target = val;
            }
        }
    }
}

/// What a set operation computes: the members with scores (in order), or a count.
enum Outcome {
    Members(Vec<(Vec<u8>, f64)>, bool),
    Card(usize),
}

/// Redis's `zunionInterDiffGenericCommand`: `numkeys` at `at`, `dst` for the STORE
/// forms, `card` for ZINTERCARD.
fn setop(ctx: &mut Ctx<'_>, at: usize, op: Op, dst: bool, card: bool) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let setnum = parse_i64(&argv[at])?;
    if setnum < 1 {
        return Err(ReplyError::owned(format!(
            "ERR at least 1 input key is needed for '{}' command",
            String::from_utf8_lossy(&argv[0]).to_ascii_lowercase()
        )));
    }
    if setnum as u64 > (argv.len() - at - 1) as u64 {
        return Err(ReplyError::Syntax);
    }
    let setnum = setnum as usize;
    let keys = &argv[at + 1..at + 1 + setnum];
    for k in keys {
        match ctx.lookup_value(k) {
            None | Some(Value::ZSet(_)) | Some(Value::Set(_)) => {}
            Some(_) => return Err(ReplyError::WrongType),
        }
    }
    let mut weights = vec![1.0f64; setnum];
    let mut agg = Aggregate::Sum;
    let mut withscores = false;
    let mut limit = 0usize;
    let mut j = at + 1 + setnum;
    while j < argv.len() {
        let remaining = argv.len() - j;
        let a = &argv[j];
        if op != Op::Diff && !card && remaining > setnum && is(a, "weights") {
            j += 1;
            for w in weights.iter_mut() {
                *w =
                    string2d(&argv[j]).ok_or(ReplyError::msg("ERR weight value is not a float"))?;
                j += 1;
            }
        } else if op != Op::Diff && !card && remaining >= 2 && is(a, "aggregate") {
            let v = &argv[j + 1];
            agg = if is(v, "sum") {
                Aggregate::Sum
            } else if is(v, "min") {
                Aggregate::Min
            } else if is(v, "max") {
                Aggregate::Max
            } else if is(v, "count") {
                Aggregate::Count
            } else {
                return Err(ReplyError::Syntax);
            };
            j += 2;
        } else if !dst && !card && is(a, "withscores") {
            withscores = true;
            j += 1;
        } else if card && remaining >= 2 && is(a, "limit") {
            let l = parse_i64(&argv[j + 1])
                .ok()
                .filter(|l| *l >= 0)
                .ok_or(ReplyError::msg("ERR LIMIT can't be negative"))?;
            limit = usize::try_from(l).unwrap_or(usize::MAX);
            j += 2;
        } else {
            return Err(ReplyError::Syntax);
        }
    }
    let outcome = {
        let db = &ctx.core.dbs[ctx.client.db];
        let mut srcs: Vec<(Src<'_>, f64)> = keys
            .iter()
            .zip(&weights)
            .map(|(k, w)| {
                let s = match db.get(k) {
                    Some(Value::ZSet(z)) => Src::Z(z),
                    Some(Value::Set(s)) => Src::S(s),
                    _ => Src::Missing,
                };
                (s, *w)
            })
            .collect();
        if op != Op::Diff {
            srcs.sort_by_key(|(s, _)| s.len());
        }
        compute(&srcs, op, agg, card, limit, withscores)
    };
    match outcome {
        Outcome::Card(n) => ctx.out.integer(n as i64),
        Outcome::Members(items, withscores) => {
            if dst {
                let event = match op {
                    Op::Union => "zunionstore",
                    Op::Inter => "zinterstore",
                    Op::Diff => "zdiffstore",
                };
                store_result(ctx, &argv[1], items, event);
            } else {
                reply_len(ctx.out, items.len(), withscores);
                for (m, s) in &items {
                    if withscores {
                        reply_pair(ctx.out, m, *s);
                    } else {
                        ctx.out.bulk(m);
                    }
                }
            }
        }
    }
    Ok(())
}

fn compute(
    srcs: &[(Src<'_>, f64)],
    op: Op,
    agg: Aggregate,
    card: bool,
    limit: usize,
    withscores: bool,
) -> Outcome {
    let mut out: Vec<(Vec<u8>, f64)> = Vec::new();
    match op {
        Op::Inter => {
            let mut n = 0usize;
            if let Some((first, w0)) = srcs.first()
                && first.len() > 0
            {
                let mut done = false;
                first.for_each(|m, s| {
                    if done {
                        return;
                    }
                    let mut score = weighted(s, *w0, agg);
                    if score.is_nan() {
                        score = 0.0;
                    }
                    for (src, w) in &srcs[1..] {
                        match src.find(m) {
                            Some(v) => aggregate(&mut score, weighted(v, *w, agg), agg),
                            None => return,
                        }
                    }
                    if card {
                        n += 1;
                        if limit > 0 && n >= limit {
                            done = true;
                        }
                    } else {
                        out.push((m.to_vec(), score));
                    }
                });
            }
            if card {
                return Outcome::Card(n);
            }
        }
        Op::Union => {
            let mut acc: HashMap<Vec<u8>, f64> = HashMap::new();
            for (src, w) in srcs {
                src.for_each(|m, s| {
                    let mut score = weighted(s, *w, agg);
                    if score.is_nan() {
                        score = 0.0;
                    }
                    match acc.get_mut(m) {
                        Some(t) => aggregate(t, score, agg),
                        None => {
                            acc.insert(m.to_vec(), score);
                        }
                    }
                });
            }
            out = acc.into_iter().collect();
        }
        Op::Diff => {
            if let Some((first, _)) = srcs.first() {
                first.for_each(|m, s| {
                    if srcs[1..].iter().all(|(o, _)| o.find(m).is_none()) {
                        out.push((m.to_vec(), s));
                    }
                });
            }
        }
    }
    out.sort_by(|a, b| cmp_entry(a.1, &a.0, b.1, &b.0));
    Outcome::Members(out, withscores)
}

/// `ZUNION numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX|COUNT] [WITHSCORES]`
pub fn zunion(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    setop(ctx, 1, Op::Union, false, false)
}

/// `ZINTER numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX|COUNT] [WITHSCORES]`
pub fn zinter(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    setop(ctx, 1, Op::Inter, false, false)
}

/// `ZDIFF numkeys key [key ...] [WITHSCORES]`
pub fn zdiff(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    setop(ctx, 1, Op::Diff, false, false)
}

/// `ZINTERCARD numkeys key [key ...] [LIMIT limit]`
pub fn zintercard(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    setop(ctx, 1, Op::Inter, false, true)
}

/// `ZUNIONSTORE dst numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX|COUNT]`
pub fn zunionstore(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    setop(ctx, 2, Op::Union, true, false)
}

/// `ZINTERSTORE dst numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX|COUNT]`
pub fn zinterstore(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    setop(ctx, 2, Op::Inter, true, false)
}

/// `ZDIFFSTORE dst numkeys key [key ...]`
pub fn zdiffstore(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    setop(ctx, 2, Op::Diff, true, false)
}

// ---- pops ---------------------------------------------------------------------------

/// The reply shape of a pop (Redis: `genericZpopCommand`'s `emitkey` and
/// `use_nested_array`).
#[derive(Debug, Clone, Copy)]
struct Shape {
    emit_key: bool,
    nested: bool,
}

/// Pops up to `count` members (`None`: a plain single pop) from `key`'s set, which
/// exists and is not empty, writing the reply; propagates `effect` with the number
/// popped. Returns how many it popped.
fn pop_from(
    ctx: &mut Ctx<'_>,
    key: &Bytes,
    max: bool,
    count: usize,
    shape: Shape,
    rewrite: Option<bool>,
) -> usize {
    let (z, out) = lookup(ctx, key);
    let Ok(Some(z)) = z else {
        return 0;
    };
    let n = count.min(z.len());
    let len = z.len();
    let (a, b) = if max { (len - n, len) } else { (0, n) };
    match (shape.nested, shape.emit_key) {
        (false, false) => out.array(2 * n),
        (true, false) => out.array(n),
        (false, true) => {
            out.array(2 * n + 1);
            out.bulk(key);
        }
        (true, true) => {
            out.array(2);
            out.bulk(key);
            out.array(n);
        }
    }
    for (m, s) in z.range(0, n, max) {
        if shape.nested {
            out.array(2);
            out.bulk(m);
            reply_score(out, s);
        } else {
            out.bulk(m);
            reply_score(out, s);
        }
    }
    z.remove_range(a, b);
    let emptied = z.is_empty();
    ctx.collection_changed(
        class::ZSET,
        if max { "zpopmax" } else { "zpopmin" },
        key,
        emptied,
    );
    let name: &[u8] = if max { b"ZPOPMAX" } else { b"ZPOPMIN" };
    match rewrite {
        None => ctx.propagate(ctx.argv),
        Some(false) => ctx.propagate(&[name, &key[..]]),
        Some(true) => {
            let c = n.to_string();
            ctx.propagate(&[name, &key[..], c.as_bytes()]);
        }
    }
    n
}

/// The first key holding a sorted set, after checking types in order (`WRONGTYPE` at
/// the first key of another type, unless `lenient`: a blocked client's re-execution
/// treats such a key as empty).
fn first_nonempty(
    ctx: &mut Ctx<'_>,
    keys: &[Bytes],
    lenient: bool,
) -> Result<Option<Bytes>, ReplyError> {
    for k in keys {
        match lookup(ctx, k).0 {
            Ok(None) => continue,
            Ok(Some(z)) if z.is_empty() => continue,
            Ok(Some(_)) => return Ok(Some(k.clone())),
            Err(_) if lenient => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

fn zpop_cmd(ctx: &mut Ctx<'_>, max: bool) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    if argv.len() > 3 {
        return Err(ReplyError::Syntax);
    }
    let count = if argv.len() == 3 {
        let c = parse_i64(&argv[2])
            .ok()
            .filter(|c| *c >= 0)
            .ok_or(ReplyError::msg(
                "ERR value is out of range, must be positive",
            ))?;
        Some(c as usize)
    } else {
        None
    };
    let Some(key) = first_nonempty(ctx, &argv[1..2], false)? else {
        ctx.out.array(0);
        return Ok(());
    };
    if count == Some(0) {
        ctx.out.array(0);
        return Ok(());
    }
    let shape = Shape {
        emit_key: false,
        nested: ctx.out.is_resp3() && count.is_some(),
    };
    pop_from(ctx, &key, max, count.unwrap_or(1), shape, None);
    Ok(())
}

/// `ZPOPMIN key [count]`
pub fn zpopmin(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    zpop_cmd(ctx, false)
}

/// `ZPOPMAX key [count]`
pub fn zpopmax(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    zpop_cmd(ctx, true)
}

/// The blocking pops' common path (Redis: `blockingGenericZpopCommand`).
fn blocking_pop(
    ctx: &mut Ctx<'_>,
    keys: &[Bytes],
    max: bool,
    timeout_arg: &[u8],
    count: Option<usize>,
) -> Result<(), ReplyError> {
    let timeout = super::list::parse_timeout_secs(timeout_arg)?;
    let lenient = ctx.core.reprocessing.is_some();
    if let Some(key) = first_nonempty(ctx, keys, lenient)? {
        let shape = Shape {
            emit_key: true,
            nested: count.is_some(),
        };
        pop_from(
            ctx,
            &key,
            max,
            count.unwrap_or(1),
            shape,
            Some(count.is_some()),
        );
        return Ok(());
    }
    if !ctx.can_block() {
        ctx.out.null_array();
        return Ok(());
    }
    ctx.block(keys, timeout, false, None);
    Ok(())
}

/// `BZPOPMIN key [key ...] timeout`
pub fn bzpopmin(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    blocking_pop(
        ctx,
        &argv[1..argv.len() - 1],
        false,
        &argv[argv.len() - 1],
        None,
    )
}

/// `BZPOPMAX key [key ...] timeout`
pub fn bzpopmax(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    blocking_pop(
        ctx,
        &argv[1..argv.len() - 1],
        true,
        &argv[argv.len() - 1],
        None,
    )
}

/// Parses ZMPOP/BZMPOP from `numkeys` at `at`: keys, MAX, count.
fn parse_mpop(
    argv: &[Bytes],
    at: usize,
) -> Result<(std::ops::Range<usize>, bool, usize), ReplyError> {
    let numkeys = parse_i64(&argv[at])
        .ok()
        .filter(|n| *n >= 1)
        .ok_or(ReplyError::msg("ERR numkeys should be greater than 0"))?;
    let where_idx = (at as u64).saturating_add(numkeys as u64).saturating_add(1);
    if where_idx >= argv.len() as u64 {
        return Err(ReplyError::Syntax);
    }
    let where_idx = where_idx as usize;
    let max = if is(&argv[where_idx], "min") {
        false
    } else if is(&argv[where_idx], "max") {
        true
    } else {
        return Err(ReplyError::Syntax);
    };
    let mut count: Option<usize> = None;
    let mut j = where_idx + 1;
    while j < argv.len() {
        if count.is_none() && is(&argv[j], "count") && j + 1 < argv.len() {
            let c = parse_i64(&argv[j + 1])
                .ok()
                .filter(|c| *c >= 1)
                .ok_or(ReplyError::msg("ERR count should be greater than 0"))?;
            count = Some(usize::try_from(c).unwrap_or(usize::MAX));
            j += 2;
        } else {
            return Err(ReplyError::Syntax);
        }
    }
    Ok((at + 1..where_idx, max, count.unwrap_or(1)))
}

/// `ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]`
pub fn zmpop(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (keys, max, count) = parse_mpop(argv, 1)?;
    let Some(key) = first_nonempty(ctx, &argv[keys], false)? else {
        ctx.out.null_array();
        return Ok(());
    };
    let shape = Shape {
        emit_key: true,
        nested: true,
    };
    pop_from(ctx, &key, max, count, shape, Some(true));
    Ok(())
}

/// `BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]`
pub fn bzmpop(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (keys, max, count) = parse_mpop(argv, 2)?;
    blocking_pop(ctx, &argv[keys], max, &argv[1], Some(count))
}
