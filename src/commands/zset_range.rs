//! Sorted-set ranges: ZRANGE (by rank, BYSCORE, BYLEX, REV, LIMIT) and its older
//! spellings, ZRANGESTORE, ZCOUNT, ZLEXCOUNT and the ZREMRANGEBY* commands.
//!
//! A range resolves to a span of ascending ranks `lo..hi` found the way Redis's
//! listpack walks find it (first member in range, then on while still in range;
//! backwards from the last one for REV), so that even a lexicographical range over
//! members of different scores (which Redis leaves unspecified) answers as a Redis
//! listpack does. The large encoding finds the same span by binary search.

use super::zset_score::{lookup, reply_len, reply_pair, strtod};
use super::{is, parse_i64};
use crate::core::Ctx;
use crate::core::notify::class;
use crate::error::ReplyError;
use crate::types::{Value, ZSet};
use bytes::Bytes;

const NOT_FLOAT: ReplyError = ReplyError::msg("ERR min or max is not a float");
const NOT_LEX: ReplyError = ReplyError::msg("ERR min or max not valid string range item");

/// A score interval (Redis: `zrangespec`).
#[derive(Debug, Clone, Copy)]
pub struct ScoreRange {
    min: f64,
    max: f64,
    minex: bool,
    maxex: bool,
}

/// One end of a score interval: `(` makes it exclusive; the rest is C's `strtod`
/// (leading space allowed, an empty text is 0), NaN refused.
fn parse_score_bound(arg: &[u8]) -> Option<(f64, bool)> {
    let (ex, body) = match arg.first() {
        Some(b'(') => (true, &arg[1..]),
        _ => (false, arg),
    };
    // C stops at the first NUL.
    let body = &body[..memchr::memchr(0, body).unwrap_or(body.len())];
    let (v, n) = strtod(body);
    if n != body.len() || v.is_nan() {
        return None;
    }
    Some((v, ex))
}

impl ScoreRange {
    /// Parses `min max` (Redis: `zslParseRange`).
    pub fn parse(min: &[u8], max: &[u8]) -> Result<ScoreRange, ReplyError> {
        let (min, minex) = parse_score_bound(min).ok_or(NOT_FLOAT)?;
        let (max, maxex) = parse_score_bound(max).ok_or(NOT_FLOAT)?;
        Ok(ScoreRange {
            min,
            max,
            minex,
            maxex,
        })
    }

    fn gte_min(&self, s: f64) -> bool {
        if self.minex {
            s > self.min
        } else {
            s >= self.min
        }
    }

    fn lte_max(&self, s: f64) -> bool {
        if self.maxex {
            s < self.max
        } else {
            s <= self.max
        }
    }

    fn is_empty(&self) -> bool {
        self.min > self.max || (self.min == self.max && (self.minex || self.maxex))
    }

    /// The ascending-rank span of the members in range.
    fn span(&self, z: &ZSet) -> (usize, usize) {
        if self.is_empty() || z.is_empty() {
            return (0, 0);
        }
        let lo = z.partition_point(|_, s| !self.gte_min(s));
        let hi = z.partition_point(|_, s| self.lte_max(s));
        if lo < hi { (lo, hi) } else { (0, 0) }
    }
}

/// One end of a lexicographical interval (Redis: `zlexrangespec`'s items).
#[derive(Debug, Clone, PartialEq, Eq)]
enum LexBound {
    /// `-`: before every member.
    Min,
    /// `+`: after every member.
    Max,
    /// `[m` or `(m`: the member, and whether it is excluded.
    Item(Bytes, bool),
}

/// A lexicographical interval.
#[derive(Debug, Clone)]
pub struct LexRange {
    min: LexBound,
    max: LexBound,
}

fn parse_lex_bound(arg: &Bytes) -> Option<LexBound> {
    match arg.first() {
        Some(b'+') if arg.len() == 1 => Some(LexBound::Max),
        Some(b'-') if arg.len() == 1 => Some(LexBound::Min),
        Some(b'(') => Some(LexBound::Item(arg.slice(1..), true)),
        Some(b'[') => Some(LexBound::Item(arg.slice(1..), false)),
        _ => None,
    }
}

/// Redis's `sdscmplex` of a member against a bound.
fn cmp_lex(m: &[u8], b: &LexBound) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    match b {
        LexBound::Min => Greater,
        LexBound::Max => Less,
        LexBound::Item(x, _) => m.cmp(x),
    }
}

impl LexRange {
    /// Parses `min max` (Redis: `zslParseLexRange`).
    pub fn parse(min: &Bytes, max: &Bytes) -> Result<LexRange, ReplyError> {
        Ok(LexRange {
            min: parse_lex_bound(min).ok_or(NOT_LEX)?,
            max: parse_lex_bound(max).ok_or(NOT_LEX)?,
        })
    }

    fn gte_min(&self, m: &[u8]) -> bool {
        match &self.min {
            LexBound::Item(x, true) => m > &x[..],
            b @ LexBound::Item(_, false) => cmp_lex(m, b).is_ge(),
            b => cmp_lex(m, b).is_gt(),
        }
    }

    fn lte_max(&self, m: &[u8]) -> bool {
        match &self.max {
            LexBound::Item(x, true) => m < &x[..],
            b @ LexBound::Item(_, false) => cmp_lex(m, b).is_le(),
            b => cmp_lex(m, b).is_lt(),
        }
    }

    /// Redis's empty-interval test on the two bounds.
    fn is_empty(&self) -> bool {
        use std::cmp::Ordering::*;
        let minex = !matches!(self.min, LexBound::Item(_, false));
        let maxex = !matches!(self.max, LexBound::Item(_, false));
        let cmp = match (&self.min, &self.max) {
            (LexBound::Min, LexBound::Min) | (LexBound::Max, LexBound::Max) => Equal,
            (LexBound::Min, _) | (_, LexBound::Max) => Less,
            (LexBound::Max, _) | (_, LexBound::Min) => Greater,
            (LexBound::Item(a, _), LexBound::Item(b, _)) => a.cmp(b),
        };
        cmp == Greater || (cmp == Equal && (minex || maxex))
    }

    /// Can anything be in range (Redis: `zslIsInLexRange`: the interval is not empty,
    /// the last member is not below it, the first is not above it)?
    fn possible(&self, z: &ZSet) -> bool {
        if self.is_empty() {
            return false;
        }
        let Some((last, _)) = z.last() else {
            return false;
        };
        let Some((first, _)) = z.get(0) else {
            return false;
        };
        self.gte_min(last) && self.lte_max(first)
    }

    /// The ascending-rank span walked forward: from the first member `>= min`, on
    /// while `<= max` (Redis: `zzlFirstInLexRange` + the forward loop).
    fn span_fwd(&self, z: &ZSet) -> (usize, usize) {
        if !self.possible(z) {
            return (0, 0);
        }
        let lo = z.partition_point(|m, _| !self.gte_min(m));
        let run = z
            .range(lo, z.len(), false)
            .take_while(|(m, _)| self.lte_max(m));
        let hi = if z.encoding() == "listpack" {
            lo + run.count()
        } else {
            z.partition_point(|m, _| self.lte_max(m)).max(lo)
        };
        (lo, hi)
    }

    /// The span walked backward: from the last member `<= max`, back while `>= min`
    /// (Redis: `zzlLastInLexRange` + the reverse loop).
    fn span_rev(&self, z: &ZSet) -> (usize, usize) {
        if !self.possible(z) {
            return (0, 0);
        }
        if z.encoding() != "listpack" {
            return self.span_fwd(z);
        }
        let n = z.len();
        let Some(last_in) = z
            .range(0, n, true)
            .position(|(m, _)| self.lte_max(m))
            .map(|p| n - 1 - p)
        else {
            return (0, 0);
        };
        let back = z
            .range(n - 1 - last_in, n, true)
            .take_while(|(m, _)| self.gte_min(m))
            .count();
        (last_in + 1 - back, last_in + 1)
    }
}

/// How a ZRANGE-family command names its range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Auto,
    Rank,
    Score,
    Lex,
}

/// Parsed ZRANGE-family arguments (Redis: `zrangeGenericCommand`'s step 1 and 2).
struct RangeArgs {
    kind: Kind,
    rev: bool,
    withscores: bool,
    offset: i64,
    limit: i64,
    start: i64,
    end: i64,
    score: Option<ScoreRange>,
    lex: Option<LexRange>,
}

fn parse_range(
    argv: &[Bytes],
    at: usize,
    store: bool,
    mut kind: Kind,
    rev: Option<bool>,
) -> Result<RangeArgs, ReplyError> {
    let auto_dir = rev.is_none();
    let mut rev = rev.unwrap_or(false);
    let mut withscores = false;
    let (mut offset, mut limit) = (0i64, -1i64);
    let mut j = at + 3;
    while j < argv.len() {
        let left = argv.len() - j - 1;
        let a = &argv[j];
        if !store && is(a, "withscores") {
            withscores = true;
        } else if is(a, "limit") && left >= 2 {
            offset = parse_i64(&argv[j + 1])?;
            limit = parse_i64(&argv[j + 2])?;
            j += 2;
        } else if auto_dir && is(a, "rev") {
            rev = true;
        } else if kind == Kind::Auto && is(a, "bylex") {
            kind = Kind::Lex;
        } else if kind == Kind::Auto && is(a, "byscore") {
            kind = Kind::Score;
        } else {
            return Err(ReplyError::Syntax);
        }
        j += 1;
    }
    if kind == Kind::Auto {
        kind = Kind::Rank;
    }
    if limit != -1 && kind == Kind::Rank {
        return Err(ReplyError::msg(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if withscores && kind == Kind::Lex {
        return Err(ReplyError::msg(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    let (mut minidx, mut maxidx) = (at + 1, at + 2);
    if rev && kind != Kind::Rank {
        std::mem::swap(&mut minidx, &mut maxidx);
    }
    let mut r = RangeArgs {
        kind,
        rev,
        withscores,
        offset,
        limit,
        start: 0,
        end: 0,
        score: None,
        lex: None,
    };
    match kind {
        Kind::Rank | Kind::Auto => {
            r.start = parse_i64(&argv[minidx])?;
            r.end = parse_i64(&argv[maxidx])?;
        }
        Kind::Score => r.score = Some(ScoreRange::parse(&argv[minidx], &argv[maxidx])?),
        Kind::Lex => r.lex = Some(LexRange::parse(&argv[minidx], &argv[maxidx])?),
    }
    Ok(r)
}

/// Redis's index sanitising for rank ranges: the `start..end` (exclusive) ranks in the
/// command's direction, or `None` when empty.
pub fn rank_span(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let llen = i64::try_from(len).unwrap_or(i64::MAX);
    let mut start = if start < 0 { llen + start } else { start };
    let mut end = if end < 0 { llen + end } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= llen {
        return None;
    }
    if end >= llen {
        end = llen - 1;
    }
    Some((start as usize, end as usize + 1))
}

/// The selected ranks, in the command's direction (`rev`: ranks from the top).
fn select(r: &RangeArgs, z: &ZSet) -> (usize, usize) {
    let n = z.len();
    let (lo, hi) = match r.kind {
        Kind::Rank | Kind::Auto => return rank_span(r.start, r.end, n).unwrap_or((0, 0)),
        Kind::Score => r.score.as_ref().map_or((0, 0), |s| s.span(z)),
        Kind::Lex => {
            r.lex.as_ref().map_or(
                (0, 0),
                |l| {
                    if r.rev { l.span_rev(z) } else { l.span_fwd(z) }
                },
            )
        }
    };
    // In the command's direction.
    let (a, b) = if r.rev { (n - hi, n - lo) } else { (lo, hi) };
    // LIMIT: an offset past the set (or negative) selects nothing, a negative count
    // everything after the offset.
    if r.offset < 0 || (r.offset > 0 && r.offset as u64 >= n as u64) {
        return (0, 0);
    }
    let a = a.saturating_add(r.offset as usize).min(b);
    let b = if r.limit < 0 {
        b
    } else {
        a.saturating_add(usize::try_from(r.limit).unwrap_or(usize::MAX))
            .min(b)
    };
    (a, b)
}

fn range_cmd(ctx: &mut Ctx<'_>, kind: Kind, rev: Option<bool>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let r = parse_range(argv, 1, false, kind, rev)?;
    let (z, out) = lookup(ctx, &argv[1]);
    let Some(z) = z? else {
        out.array(0);
        return Ok(());
    };
    let (a, b) = select(&r, z);
    reply_len(out, b - a, r.withscores);
    for (m, s) in z.range(a, b, r.rev) {
        if r.withscores {
            reply_pair(out, m, s);
        } else {
            out.bulk(m);
        }
    }
    Ok(())
}

/// `ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]`
pub fn zrange(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    range_cmd(ctx, Kind::Auto, None)
}

/// `ZREVRANGE key start stop [WITHSCORES]`
pub fn zrevrange(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    range_cmd(ctx, Kind::Rank, Some(true))
}

/// `ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]`
pub fn zrangebyscore(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    range_cmd(ctx, Kind::Score, Some(false))
}

/// `ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]`
pub fn zrevrangebyscore(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    range_cmd(ctx, Kind::Score, Some(true))
}

/// `ZRANGEBYLEX key min max [LIMIT offset count]`
pub fn zrangebylex(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    range_cmd(ctx, Kind::Lex, Some(false))
}

/// `ZREVRANGEBYLEX key max min [LIMIT offset count]`
pub fn zrevrangebylex(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    range_cmd(ctx, Kind::Lex, Some(true))
}

/// Stores `items` (in (score, member) order already) at `dst` as ZRANGESTORE and the
/// set-operation stores do: a non-empty result replaces whatever `dst` held (TTL
/// dropped) with the `event` notification; an empty one deletes `dst`. Replies with
/// the stored size and propagates the command when `dst` changed.
pub fn store_result(ctx: &mut Ctx<'_>, dst: &[u8], items: Vec<(Vec<u8>, f64)>, event: &str) {
    let n = items.len();
    if n > 0 {
        let t = ctx.core.thresholds;
        let mut z = ZSet::new();
        if n > t.zset_max_listpack_entries {
            z = ZSet::new_sorted();
        }
        for (m, s) in &items {
            z.push_sorted(m, *s, &t);
        }
        z.shrink_if_fits(&t);
        z.compact();
        let existed = ctx.exists(dst);
        ctx.db().insert(dst, Value::ZSet(Box::new(z)));
        if !existed {
            ctx.notify(class::NEW, "new", dst);
        }
        ctx.signal_ready(dst);
        ctx.out.integer(n as i64);
        ctx.collection_written(class::ZSET, event, dst, false, ctx.argv);
    } else {
        ctx.out.integer(0);
        ctx.expire_if_needed(dst);
        if ctx.delete_key(dst) {
            ctx.core.dirty += 1;
            ctx.propagate(ctx.argv);
        }
    }
}

/// `ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]`
pub fn zrangestore(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let r = parse_range(argv, 2, true, Kind::Auto, None)?;
    let (z, _) = lookup(ctx, &argv[2]);
    let items: Vec<(Vec<u8>, f64)> = match z? {
        None => Vec::new(),
        Some(z) => {
            let (a, b) = select(&r, z);
            let mut v: Vec<(Vec<u8>, f64)> =
                z.range(a, b, r.rev).map(|(m, s)| (m.to_vec(), s)).collect();
            if r.rev {
                v.reverse();
            }
            v
        }
    };
    store_result(ctx, &argv[1], items, "zrangestore");
    Ok(())
}

/// `ZCOUNT key min max`
pub fn zcount(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let r = ScoreRange::parse(&argv[2], &argv[3])?;
    let (z, out) = lookup(ctx, &argv[1]);
    let n = z?.map_or(0, |z| {
        let (a, b) = r.span(z);
        b - a
    });
    out.integer(n as i64);
    Ok(())
}

/// `ZLEXCOUNT key min max`
pub fn zlexcount(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let r = LexRange::parse(&argv[2], &argv[3])?;
    let (z, out) = lookup(ctx, &argv[1]);
    let n = z?.map_or(0, |z| {
        let (a, b) = r.span_fwd(z);
        b - a
    });
    out.integer(n as i64);
    Ok(())
}

/// Which ZREMRANGEBY* command.
enum Rem {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

fn zremrange(ctx: &mut Ctx<'_>, how: Rem, event: &str) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let (z, out) = lookup(ctx, key);
    let Some(z) = z? else {
        out.integer(0);
        return Ok(());
    };
    let (a, b) = match &how {
        Rem::Rank(s, e) => match rank_span(*s, *e, z.len()) {
            Some(span) => span,
            None => {
                out.integer(0);
                return Ok(());
            }
        },
        Rem::Score(r) => r.span(z),
        Rem::Lex(r) => r.span_fwd(z),
    };
    let deleted = z.remove_range(a, b);
    let emptied = z.is_empty();
    out.integer(deleted as i64);
    if deleted > 0 {
        ctx.collection_written(class::ZSET, event, key, emptied, argv);
    }
    Ok(())
}

/// `ZREMRANGEBYRANK key start stop`
pub fn zremrangebyrank(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let s = parse_i64(&ctx.argv[2])?;
    let e = parse_i64(&ctx.argv[3])?;
    zremrange(ctx, Rem::Rank(s, e), "zremrangebyrank")
}

/// `ZREMRANGEBYSCORE key min max`
pub fn zremrangebyscore(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let r = ScoreRange::parse(&ctx.argv[2], &ctx.argv[3])?;
    zremrange(ctx, Rem::Score(r), "zremrangebyscore")
}

/// `ZREMRANGEBYLEX key min max`
pub fn zremrangebylex(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let r = LexRange::parse(&ctx.argv[2], &ctx.argv[3])?;
    zremrange(ctx, Rem::Lex(r), "zremrangebylex")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_spans_as_redis() {
        assert_eq!(rank_span(0, -1, 3), Some((0, 3)));
        assert_eq!(rank_span(-100, 100, 3), Some((0, 3)));
        assert_eq!(rank_span(2, 1, 3), None);
        assert_eq!(rank_span(3, 5, 3), None);
        assert_eq!(rank_span(-1, -1, 3), Some((2, 3)));
    }

    #[test]
    fn score_bounds_parse_as_strtod() {
        assert!(ScoreRange::parse(b"(1", b"+inf").is_ok());
        assert!(ScoreRange::parse(b"", b" 2").is_ok());
        assert!(ScoreRange::parse(b"((1", b"2").is_err());
        assert!(ScoreRange::parse(b"[1", b"2").is_err());
        assert!(ScoreRange::parse(b"nan", b"2").is_err());
    }

    #[test]
    fn lex_emptiness() {
        let p = |a: &str, b: &str| {
            LexRange::parse(&Bytes::from(a.to_string()), &Bytes::from(b.to_string())).unwrap()
        };
        assert!(p("-", "-").is_empty());
        assert!(!p("-", "+").is_empty());
        assert!(p("+", "-").is_empty());
        assert!(p("(a", "[a").is_empty());
        assert!(!p("[a", "[a").is_empty());
    }
}
