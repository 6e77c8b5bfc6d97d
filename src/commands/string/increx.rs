//! INCREX (Redis 8.8): INCRBY / INCRBYFLOAT with bounds and an expiration, in one
//! atomic command.
//!
//! ```text
//! INCREX key [BYFLOAT increment | BYINT increment] [LBOUND lowerbound]
//!            [UBOUND upperbound] [SATURATE]
//!            [EX seconds | PX milliseconds | EXAT unix-s | PXAT unix-ms | PERSIST] [ENX]
//! ```
//!
//! The reply is always a two-element array: the value after the command and the
//! increment actually applied (integers, or long doubles in human form with BYFLOAT —
//! bulk strings in RESP2, doubles in RESP3).
//!
//! ```text
//!   current + increment = sum          (i128 for BYINT, x87 long double for BYFLOAT)
//!   sum within [LBOUND, UBOUND]   ->  stored; reply [sum, increment]
//!   sum outside, no SATURATE      ->  nothing changes (no TTL change either);
//!                                     reply [current, 0]
//!   sum outside, SATURATE         ->  the bound is stored; reply [bound, bound - current]
//! ```
//!
//! Missing bounds are the type limits (`i64::MIN..=i64::MAX`, `±LDBL_MAX`), so an
//! overflow is an out-of-bounds result, not an error. After a stored value the
//! expiration option applies (ENX: only when the key had no TTL); without one the TTL
//! is kept, as INCRBY keeps it.
//!
//! Effects: the `new` event for a created key, `incrby` (`incrbyfloat` with BYFLOAT),
//! then `expire` when a deadline was set or `persist` when PERSIST removed one. The log
//! and the replicas get the resulting state, never the relative command:
//! `SET key <value> [PXAT <unix ms>]` (no PXAT: the key has no TTL after the command),
//! or `DEL key` when an EXAT/PXAT in the past expired the key at once (as GETEX and
//! SET do). A skipped operation logs nothing.

use super::super::{is, parse_i64};
use super::{NAN_OR_INF, NOT_FLOAT, OVERFLOW, Unit, add_key, c_str, expire_ms, write_lookup};
use crate::core::Ctx;
use crate::core::notify::class;
use crate::error::ReplyError;
use crate::types::string::LongDouble;
use crate::types::{StringValue, Value};
use bytes::Bytes;
use std::borrow::Cow;
use std::cmp::Ordering;

/// LBOUND above UBOUND.
const BOUNDS: ReplyError = ReplyError::Other(Cow::Borrowed(
    "ERR LBOUND must be less than or equal to UBOUND",
));

/// The arithmetic INCREX does: BYINT (the default) or BYFLOAT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int,
    Float,
}

/// Which expiration option was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expire {
    Ex,
    Px,
    Exat,
    Pxat,
}

/// The options as written: indexes of their arguments in `argv`.
#[derive(Debug, Clone, Copy, Default)]
struct Options {
    /// BYINT or BYFLOAT and the index of its increment.
    by: Option<(Kind, usize)>,
    /// Index of LBOUND's argument.
    lbound: Option<usize>,
    /// Index of UBOUND's argument.
    ubound: Option<usize>,
    saturate: bool,
    /// EX/PX/EXAT/PXAT and the index of its argument.
    expire: Option<(Expire, usize)>,
    persist: bool,
    enx: bool,
}

impl Options {
    /// Reads the options after the key. As SET's options: case-insensitive, in any
    /// order, the same option repeated keeps the last one; two increments of different
    /// kinds, two different expirations, PERSIST with an expiration or with ENX, ENX
    /// without EX/PX/EXAT/PXAT, an option without its argument and any other word are
    /// syntax errors.
    fn parse(argv: &[Bytes]) -> Result<Options, ReplyError> {
        let mut o = Options::default();
        let mut j = 2;
        while j < argv.len() {
            let opt = c_str(&argv[j]);
            let has_next = j + 1 < argv.len();
            let kind = if is(opt, "BYINT") {
                Some(Kind::Int)
            } else if is(opt, "BYFLOAT") {
                Some(Kind::Float)
            } else {
                None
            };
            let expire = if is(opt, "EX") {
                Some(Expire::Ex)
            } else if is(opt, "PX") {
                Some(Expire::Px)
            } else if is(opt, "EXAT") {
                Some(Expire::Exat)
            } else if is(opt, "PXAT") {
                Some(Expire::Pxat)
            } else {
                None
            };
            if let Some(k) = kind
                && has_next
                && o.by.is_none_or(|(had, _)| had == k)
            {
                o.by = Some((k, j + 1));
                j += 1;
            } else if let Some(e) = expire
                && has_next
                && !o.persist
                && o.expire.is_none_or(|(had, _)| had == e)
            {
                o.expire = Some((e, j + 1));
                j += 1;
            } else if is(opt, "LBOUND") && has_next {
                o.lbound = Some(j + 1);
                j += 1;
            } else if is(opt, "UBOUND") && has_next {
                o.ubound = Some(j + 1);
                j += 1;
            } else if is(opt, "SATURATE") {
                o.saturate = true;
            } else if is(opt, "PERSIST") && o.expire.is_none() && !o.enx {
                o.persist = true;
            } else if is(opt, "ENX") && !o.persist {
                o.enx = true;
            } else {
                return Err(ReplyError::Syntax);
            }
            j += 1;
        }
        if o.enx && o.expire.is_none() {
            return Err(ReplyError::Syntax);
        }
        Ok(o)
    }

    /// The absolute deadline (unix ms) of the expiration option, checked as SET checks
    /// it (`invalid expire time in 'increx' command`).
    fn deadline(&self, argv: &[Bytes], now_ms: u64) -> Result<Option<u64>, ReplyError> {
        let Some((e, i)) = self.expire else {
            return Ok(None);
        };
        let unit = match e {
            Expire::Ex | Expire::Exat => Unit::Seconds,
            Expire::Px | Expire::Pxat => Unit::Millis,
        };
        let relative = matches!(e, Expire::Ex | Expire::Px);
        expire_ms(now_ms, &argv[i], unit, relative, "increx").map(Some)
    }
}

/// The increment and the bounds, parsed in the command's arithmetic.
#[derive(Debug, Clone, Copy)]
enum Numbers {
    Int {
        by: i64,
        lo: i64,
        hi: i64,
    },
    Float {
        by: LongDouble,
        lo: LongDouble,
        hi: LongDouble,
    },
}

impl Numbers {
    /// Parses the increment (default 1) and the bounds (default the type limits):
    /// integers as INCRBY reads them, floats as INCRBYFLOAT does (an infinite increment
    /// is INCRBYFLOAT's NaN-or-Infinity error, an infinite bound not a valid float);
    /// LBOUND above UBOUND is an error.
    fn parse(argv: &[Bytes], o: &Options) -> Result<Numbers, ReplyError> {
        let kind = o.by.map_or(Kind::Int, |(k, _)| k);
        match kind {
            Kind::Int => {
                let int = |at: Option<usize>, default: i64| {
                    at.map_or(Ok(default), |i| parse_i64(&argv[i]))
                };
                let by = int(o.by.map(|(_, i)| i), 1)?;
                let lo = int(o.lbound, i64::MIN)?;
                let hi = int(o.ubound, i64::MAX)?;
                if lo > hi {
                    return Err(BOUNDS);
                }
                Ok(Numbers::Int { by, lo, hi })
            }
            Kind::Float => {
                let float = |at: Option<usize>, default: LongDouble| {
                    at.map_or(Ok(default), |i| {
                        LongDouble::parse(&argv[i]).ok_or(NOT_FLOAT)
                    })
                };
                let by = float(o.by.map(|(_, i)| i), LongDouble::from_i64(1))?;
                let lo = float(o.lbound, LongDouble::MAX.negated())?;
                let hi = float(o.ubound, LongDouble::MAX)?;
                // `inf` reads as a long double (strtold); as the increment it is what
                // INCRBYFLOAT refuses, as a bound it is no number to cap at.
                if !by.is_finite() {
                    return Err(NAN_OR_INF);
                }
                if !lo.is_finite() || !hi.is_finite() {
                    return Err(NOT_FLOAT);
                }
                if lo.compare(hi) == Some(Ordering::Greater) {
                    return Err(BOUNDS);
                }
                Ok(Numbers::Float { by, lo, hi })
            }
        }
    }
}

/// What the arithmetic decided.
#[derive(Debug, Clone)]
enum Outcome {
    /// Out of bounds without SATURATE: the current value, untouched.
    SkipInt(i64),
    /// The new integer and the increment applied.
    Int(i64, i64),
    /// Out of bounds without SATURATE (BYFLOAT): the current value.
    SkipFloat(LongDouble),
    /// The new float and the increment applied.
    Float(LongDouble, LongDouble),
}

/// BYINT arithmetic on `current`; an error only when SATURATE's applied increment does
/// not fit in 64 bits.
fn int_outcome(
    current: i64,
    by: i64,
    lo: i64,
    hi: i64,
    saturate: bool,
) -> Result<Outcome, ReplyError> {
    let sum = i128::from(current) + i128::from(by);
    let (lo, hi) = (i128::from(lo), i128::from(hi));
    if (lo..=hi).contains(&sum) {
        let new = i64::try_from(sum).map_err(|_| OVERFLOW)?;
        return Ok(Outcome::Int(new, by));
    }
    if !saturate {
        return Ok(Outcome::SkipInt(current));
    }
    let capped = sum.clamp(lo, hi);
    let new = i64::try_from(capped).map_err(|_| OVERFLOW)?;
    let applied = i64::try_from(capped - i128::from(current)).map_err(|_| OVERFLOW)?;
    Ok(Outcome::Int(new, applied))
}

/// BYFLOAT arithmetic on `current`; an error only when SATURATE's applied increment
/// is infinite.
fn float_outcome(
    current: LongDouble,
    by: LongDouble,
    lo: LongDouble,
    hi: LongDouble,
    saturate: bool,
) -> Result<Outcome, ReplyError> {
    let sum = current.plus(by);
    // An infinite sum orders beyond both type limits, so it is out of bounds too.
    let below = sum.compare(lo) == Some(Ordering::Less);
    let above = sum.compare(hi) == Some(Ordering::Greater);
    if !below && !above {
        return Ok(Outcome::Float(sum, by));
    }
    if !saturate {
        return Ok(Outcome::SkipFloat(current));
    }
    let capped = if below { lo } else { hi };
    let applied = capped.minus(current);
    if !applied.is_finite() {
        return Err(NAN_OR_INF);
    }
    Ok(Outcome::Float(capped, applied))
}

/// INCREX key [BYFLOAT n | BYINT n] [LBOUND l] [UBOUND u] [SATURATE]
/// [EX s | PX ms | EXAT ts | PXAT ms-ts | PERSIST] [ENX] (see the module doc).
pub(super) fn increx(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let opts = Options::parse(argv)?;
    let numbers = Numbers::parse(argv, &opts)?;
    let deadline = opts.deadline(argv, ctx.now_ms)?;
    let found = match write_lookup(ctx, key) {
        Some(Value::String(s)) => Some(match numbers {
            Numbers::Int { .. } => Current::Int(s.as_int().ok_or(ReplyError::NotInteger)?),
            Numbers::Float { .. } => Current::Float(s.as_long_double().ok_or(NOT_FLOAT)?),
        }),
        Some(_) => return Err(ReplyError::WrongType),
        None => None,
    };
    let exists = found.is_some();
    let outcome = match (numbers, found) {
        (Numbers::Int { by, lo, hi }, cur) => {
            let cur = match cur {
                Some(Current::Int(n)) => n,
                _ => 0,
            };
            int_outcome(cur, by, lo, hi, opts.saturate)?
        }
        (Numbers::Float { by, lo, hi }, cur) => {
            let cur = match cur {
                Some(Current::Float(f)) => f,
                _ => LongDouble::from_i64(0),
            };
            float_outcome(cur, by, lo, hi, opts.saturate)?
        }
    };
    let (stored, float) = match &outcome {
        Outcome::SkipInt(cur) => {
            ctx.out.array(2);
            ctx.out.integer(*cur);
            ctx.out.integer(0);
            return Ok(());
        }
        Outcome::SkipFloat(cur) => {
            ctx.out.array(2);
            ctx.out.double_text(cur.to_human().as_bytes());
            ctx.out.double_text(b"0");
            return Ok(());
        }
        Outcome::Int(new, _) => (itoa::Buffer::new().format(*new).as_bytes().to_vec(), false),
        Outcome::Float(new, _) => (new.to_human().into_bytes(), true),
    };
    store(ctx, key, &stored, float, exists);
    ctx.notify(
        class::STRING,
        if float { "incrbyfloat" } else { "incrby" },
        key,
    );
    if !apply_expiration(ctx, key, &opts, deadline) {
        let db = ctx.client.db;
        match ctx.core.dbs[db].expires.get(&key[..]).copied() {
            Some(at) => {
                let mut text = itoa::Buffer::new();
                let at = text.format(at).as_bytes();
                ctx.propagate(&[b"SET".as_slice(), key, &stored, b"PXAT", at]);
            }
            None => ctx.propagate(&[b"SET".as_slice(), key, &stored]),
        }
    }
    ctx.out.array(2);
    match outcome {
        Outcome::Int(new, applied) => {
            ctx.out.integer(new);
            ctx.out.integer(applied);
        }
        Outcome::Float(_, applied) => {
            ctx.out.double_text(&stored);
            ctx.out.double_text(applied.to_human().as_bytes());
        }
        Outcome::SkipInt(_) | Outcome::SkipFloat(_) => {}
    }
    Ok(())
}

/// The value at the key before the command, read in the command's arithmetic.
#[derive(Debug, Clone, Copy)]
enum Current {
    Int(i64),
    Float(LongDouble),
}

/// Stores the new value `text` at `key`: in place (TTL kept) when the key `exists`, as
/// an `int` for BYINT (INCRBY) or as text for BYFLOAT (INCRBYFLOAT); a new key otherwise.
fn store(ctx: &mut Ctx<'_>, key: &[u8], text: &[u8], float: bool, exists: bool) {
    let value = if float {
        StringValue::from_text(text)
    } else {
        StringValue::new(text)
    };
    if !exists {
        add_key(ctx, key, value);
        return;
    }
    let db = ctx.client.db;
    if let Some(slot) = ctx.core.dbs[db].keys.get_mut(key) {
        *slot = Value::String(value);
    }
    ctx.modified(key);
}

/// Applies the expiration option to the stored key: a deadline (unless ENX and the key
/// has a TTL already; a past EXAT/PXAT deletes the key, logged as `DEL key`, as SET and
/// GETEX do) or PERSIST. True when the key was deleted.
fn apply_expiration(ctx: &mut Ctx<'_>, key: &[u8], opts: &Options, deadline: Option<u64>) -> bool {
    let db = ctx.client.db;
    let had_ttl = ctx.core.dbs[db].expires.contains_key(key);
    if let Some(at) = deadline {
        if opts.enx && had_ttl {
            return false;
        }
        if at <= ctx.now_ms && !ctx.core.replaying() && !ctx.core.repl.is_replica() {
            ctx.delete_and_log(key);
            return true;
        }
        ctx.core.dbs[db].set_expire(key, at);
        ctx.notify(class::GENERIC, "expire", key);
    } else if opts.persist && had_ttl {
        ctx.core.dbs[db].expires.remove(key);
        ctx.notify(class::GENERIC, "persist", key);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_conflicts_are_syntax_errors() {
        let ok = |w: &[&str]| Options::parse(&crate::commands::test_argv(&w.join(" "))).is_ok();
        assert!(ok(&["INCREX", "k"]));
        assert!(ok(&[
            "INCREX", "k", "byint", "2", "EX", "5", "enx", "SATURATE"
        ]));
        assert!(ok(&["INCREX", "k", "BYINT", "2", "BYINT", "3"]));
        assert!(!ok(&["INCREX", "k", "BYINT", "2", "BYFLOAT", "3"]));
        assert!(!ok(&["INCREX", "k", "EX", "2", "PX", "3"]));
        assert!(!ok(&["INCREX", "k", "EX", "2", "PERSIST"]));
        assert!(!ok(&["INCREX", "k", "PERSIST", "ENX"]));
        assert!(!ok(&["INCREX", "k", "ENX"]));
        assert!(!ok(&["INCREX", "k", "BYINT"]));
        assert!(!ok(&["INCREX", "k", "NX"]));
    }

    #[test]
    fn integer_bounds_skip_or_saturate() {
        let o = |cur, by, lo, hi, sat| int_outcome(cur, by, lo, hi, sat).map(|o| format!("{o:?}"));
        assert_eq!(o(99, 5, i64::MIN, 100, false), Ok("SkipInt(99)".into()));
        assert_eq!(o(99, 5, i64::MIN, 100, true), Ok("Int(100, 1)".into()));
        assert_eq!(
            o(i64::MAX, 1, i64::MIN, i64::MAX, false),
            Ok(format!("SkipInt({})", i64::MAX))
        );
        assert_eq!(
            o(i64::MAX, 1, i64::MIN, i64::MAX, true),
            Ok(format!("Int({}, 0)", i64::MAX))
        );
        assert_eq!(o(5, -10, 0, 10, true), Ok("Int(0, -5)".into()));
        assert!(o(i64::MAX, -1, i64::MIN, i64::MIN, true).is_err());
    }
}
