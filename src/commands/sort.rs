//! SORT and SORT_RO over lists, sets and sorted sets, as Redis 7.0's `sort.c` behaves:
//!
//! ```text
//! SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA]
//!          [STORE destination]
//! ```
//!
//! * Numeric by default: every element (or its BY weight) must read as a double
//!   (`strtod` rules: leading blanks allowed, the whole text consumed, no NaN, no
//!   overflow), else `ERR One or more scores can't be converted into double`; equal
//!   scores are ordered by the elements' bytes, so the result is deterministic. A BY
//!   key that is missing weighs 0 (numeric) or sorts first (ALPHA).
//! * A BY pattern without `*` (`nosort`) keeps the list's or sorted set's own order
//!   (DESC reverses it, LIMIT takes the range directly); a set is then sorted ALPHA
//!   anyway when storing, so that the stored list is deterministic.
//! * Patterns: `#` is the element itself, `prefix*postfix` the string at that key,
//!   `prefix*postfix->field` the field of the hash at that key (a key of another type
//!   reads as missing).
//! * GET of a missing value replies null; STORE stores it as an empty string. STORE
//!   replaces the destination with a list (dropping its TTL), or deletes it when the
//!   result is empty; the reply is the number of stored elements.

use super::{CommandSpec, flags::*, is, keyflags, parse_i64};
use crate::core::Ctx;
use crate::core::notify::class;
use crate::error::ReplyError;
use crate::types::{List, Value};
use bytes::Bytes;
use std::cmp::Ordering;

const CATS: &[&str] = &["@set", "@sortedset", "@list", "@dangerous"];

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        key_flags: &[
            keyflags::RO | keyflags::ACCESS,
            keyflags::OW | keyflags::UPDATE,
        ],
        ..CommandSpec::new(
            "sort",
            -2,
            WRITE | DENYOOM | MOVABLEKEYS,
            "generic",
            "Sort the elements in a list, set or sorted set",
            "1.0.0",
            sort,
        )
        .keys(1, 1, 1)
        .categories(CATS)
    },
    CommandSpec {
        key_flags: &[keyflags::RO | keyflags::ACCESS],
        ..CommandSpec::new(
            "sort_ro",
            -2,
            READONLY | MOVABLEKEYS,
            "generic",
            "Sort the elements in a list, set or sorted set. Read-only variant of SORT.",
            "7.0.0",
            sort_ro,
        )
        .keys(1, 1, 1)
        .categories(CATS)
    },
];

const NOT_DOUBLE: ReplyError =
    ReplyError::msg("ERR One or more scores can't be converted into double");

fn sort(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    sort_generic(ctx, false)
}

fn sort_ro(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    sort_generic(ctx, true)
}

/// The parsed options.
struct Options {
    desc: bool,
    alpha: bool,
    limit: Option<(i64, i64)>,
    store: Option<Bytes>,
    by: Option<Bytes>,
    dontsort: bool,
    gets: Vec<Bytes>,
}

fn parse(argv: &[Bytes], readonly: bool) -> Result<Options, ReplyError> {
    let mut o = Options {
        desc: false,
        alpha: false,
        limit: None,
        store: None,
        by: None,
        dontsort: false,
        gets: Vec::new(),
    };
    let mut j = 2;
    while j < argv.len() {
        let left = argv.len() - j - 1;
        let a = &argv[j];
        if is(a, "asc") {
            o.desc = false;
        } else if is(a, "desc") {
            o.desc = true;
        } else if is(a, "alpha") {
            o.alpha = true;
        } else if is(a, "limit") && left >= 2 {
            let start = parse_i64(&argv[j + 1])?;
            let count = parse_i64(&argv[j + 2])?;
            o.limit = Some((start, count));
            j += 2;
        } else if !readonly && is(a, "store") && left >= 1 {
            o.store = Some(argv[j + 1].clone());
            j += 1;
        } else if is(a, "by") && left >= 1 {
            o.dontsort = !argv[j + 1].contains(&b'*');
            o.by = Some(argv[j + 1].clone());
            j += 1;
        } else if is(a, "get") && left >= 1 {
            o.gets.push(argv[j + 1].clone());
            j += 1;
        } else {
            return Err(ReplyError::Syntax);
        }
        j += 1;
    }
    Ok(o)
}

/// The value `pattern` names for element `subst` (Redis's `lookupKeyByPattern`).
fn lookup_pattern(ctx: &mut Ctx<'_>, pattern: &[u8], subst: &[u8]) -> Option<Vec<u8>> {
    if pattern == b"#" {
        return Some(subst.to_vec());
    }
    let star = pattern.iter().position(|&c| c == b'*')?;
    let arrow = pattern[star + 1..]
        .windows(2)
        .position(|w| w == b"->")
        .map(|p| p + star + 1)
        .filter(|&p| p + 2 < pattern.len());
    let (key_end, field) = match arrow {
        Some(p) => (p, Some(&pattern[p + 2..])),
        None => (pattern.len(), None),
    };
    let mut key = Vec::with_capacity(key_end + subst.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(subst);
    key.extend_from_slice(&pattern[star + 1..key_end]);
    match (ctx.lookup_value(&key)?, field) {
        (Value::Hash(h), Some(f)) => h.get(f).map(|v| v.into_owned()),
        (Value::String(s), None) => Some(s.to_bytes().into_owned()),
        _ => None,
    }
}

/// A score as `strtod` reads it for SORT, or `None` when Redis flags a conversion error.
fn parse_score(text: &[u8]) -> Option<f64> {
    // strtod stops at a NUL byte: what follows it is not seen.
    let text = match text.iter().position(|&c| c == 0) {
        Some(p) => &text[..p],
        None => text,
    };
    if text.is_empty() {
        return Some(0.0);
    }
    let s = std::str::from_utf8(text).ok()?;
    let body = s.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let lower = body.to_ascii_lowercase();
    let word = lower.trim_start_matches(['+', '-']);
    if word.starts_with("nan") || body.is_empty() {
        return None;
    }
    let v: f64 = body.parse().ok()?;
    if v.is_infinite() && !(word == "inf" || word == "infinity") {
        return None; // overflow: ERANGE
    }
    if (v == 0.0 || v.is_subnormal())
        && word
            .bytes()
            .take_while(|c| *c != b'e')
            .any(|c| (b'1'..=b'9').contains(&c))
    {
        return None; // underflow: ERANGE
    }
    Some(v)
}

/// One element being sorted.
struct Item {
    obj: Vec<u8>,
    score: f64,
    cmp: Option<Vec<u8>>,
}

fn sort_generic(ctx: &mut Ctx<'_>, readonly: bool) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let mut o = parse(argv, readonly)?;
    let key = argv[1].clone();
    // The elements, in the value's own order; `kind` 0 list, 1 set, 2 zset.
    let (mut objs, kind): (Vec<Vec<u8>>, u8) = match ctx.lookup_value(&key) {
        None => (Vec::new(), 0),
        Some(Value::List(l)) => (l.iter().map(|e| e.into_owned()).collect(), 0),
        Some(Value::Set(s)) => (s.iter().map(|e| e.into_owned()).collect(), 1),
        Some(Value::ZSet(z)) => (z.iter().map(|(m, _)| m.into_owned()).collect(), 2),
        Some(_) => return Err(ReplyError::WrongType),
    };
    // An unsorted set is sorted anyway when stored or asked for by a script, so the
    // result is the same on every replica (Redis's rule).
    if o.dontsort && kind == 1 && (o.store.is_some() || ctx.client.in_script) {
        o.dontsort = false;
        o.alpha = true;
        o.by = None;
    }
    let vectorlen = objs.len() as i64;
    let (limit_start, limit_count) = o.limit.unwrap_or((0, -1));
    let mut start = limit_start.max(0).min(vectorlen);
    let limit_count = limit_count.max(-1).min(vectorlen);
    let mut end = if limit_count < 0 {
        vectorlen - 1
    } else {
        start + limit_count - 1
    };
    if start >= vectorlen {
        start = vectorlen - 1;
        end = vectorlen - 2;
    }
    if end >= vectorlen {
        end = vectorlen - 1;
    }
    // A list or sorted set in its own order: take the range directly.
    if kind != 1 && o.dontsort {
        if o.desc {
            objs.reverse();
        }
        if end >= start {
            objs = objs
                .into_iter()
                .skip(start as usize)
                .take((end - start + 1) as usize)
                .collect();
        } else {
            objs.clear();
        }
        end -= start;
        start = 0;
    }
    let mut items: Vec<Item> = objs
        .into_iter()
        .map(|obj| Item {
            obj,
            score: 0.0,
            cmp: None,
        })
        .collect();
    let mut conversion_error = false;
    if !o.dontsort {
        for it in items.iter_mut() {
            let byval = match &o.by {
                Some(p) => match lookup_pattern(ctx, p, &it.obj) {
                    Some(v) => v,
                    None => continue,
                },
                None => it.obj.clone(),
            };
            if o.alpha {
                if o.by.is_some() {
                    it.cmp = Some(byval);
                }
            } else {
                match parse_score(&byval) {
                    Some(s) => it.score = s,
                    None => conversion_error = true,
                }
            }
        }
        let (alpha, by, desc) = (o.alpha, o.by.is_some(), o.desc);
        items.sort_by(|a, b| {
            let c = if !alpha {
                a.score
                    .partial_cmp(&b.score)
                    .unwrap_or(Ordering::Equal)
                    .then_with(|| a.obj.cmp(&b.obj))
            } else if by {
                match (&a.cmp, &b.cmp) {
                    (None, None) => Ordering::Equal,
                    (None, Some(_)) => Ordering::Less,
                    (Some(_), None) => Ordering::Greater,
                    (Some(x), Some(y)) => x.cmp(y),
                }
            } else {
                a.obj.cmp(&b.obj)
            };
            if desc { c.reverse() } else { c }
        });
    }
    if conversion_error {
        return Err(NOT_DOUBLE);
    }
    let range_len = (end - start + 1).max(0) as usize;
    let outputlen = if o.gets.is_empty() {
        range_len
    } else {
        o.gets.len() * range_len
    };
    let selected = items.iter().skip(start.max(0) as usize).take(range_len);
    match o.store.take() {
        None => {
            ctx.out.array(outputlen);
            for it in selected {
                if o.gets.is_empty() {
                    ctx.out.bulk(&it.obj);
                }
                for g in &o.gets {
                    match lookup_pattern(ctx, g, &it.obj) {
                        Some(v) => ctx.out.bulk(&v),
                        None => ctx.out.null(),
                    }
                }
            }
        }
        Some(dst) => {
            let th = ctx.core.thresholds;
            let mut list = List::bulk(&th);
            for it in selected {
                if o.gets.is_empty() {
                    list.push_back(&it.obj, &th);
                }
                for g in &o.gets {
                    let v = lookup_pattern(ctx, g, &it.obj).unwrap_or_default();
                    list.push_back(&v, &th);
                }
            }
            list.settle_built();
            if outputlen > 0 {
                let existed = ctx.exists(&dst);
                ctx.db().insert(&dst, Value::List(Box::new(list)));
                ctx.modified(&dst);
                ctx.signal_ready(&dst);
                if !existed {
                    ctx.notify(class::NEW, "new", &dst);
                }
                ctx.notify(class::LIST, "sortstore", &dst);
                ctx.core.dirty += outputlen as u64 - 1;
                ctx.propagate(argv);
            } else {
                ctx.expire_if_needed(&dst);
                if ctx.delete_key(&dst) {
                    ctx.core.dirty += 1;
                    ctx.propagate(argv);
                }
            }
            ctx.out.integer(outputlen as i64);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_read_as_strtod_does() {
        assert_eq!(parse_score(b"1.5"), Some(1.5));
        assert_eq!(parse_score(b" 2"), Some(2.0));
        assert_eq!(parse_score(b""), Some(0.0));
        assert_eq!(parse_score(b"inf"), Some(f64::INFINITY));
        assert_eq!(parse_score(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_score(b"nan"), None);
        assert_eq!(parse_score(b"x"), None);
        assert_eq!(parse_score(b"1x"), None);
        assert_eq!(parse_score(b"1e400"), None);
        assert_eq!(parse_score(b"1e-400"), None);
        assert_eq!(parse_score(b"0.0"), Some(0.0));
        assert_eq!(parse_score(b"3\0junk"), Some(3.0));
    }
}
