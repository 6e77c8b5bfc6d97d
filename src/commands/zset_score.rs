//! What the sorted-set commands share: scores read as Redis reads them (`strtod`,
//! `string2d`: hex floats, `inf`, no NaN) and written as it writes them (`%.17g`, and
//! the RESP2/RESP3 shapes of a score, a member with its score and a WITHSCORES list),
//! and the lookup of the sorted set at a key every command starts with. The commands
//! are in `zset.rs` (the table, single members), `zset_range.rs` and `zset_store.rs`,
//! which all import from here and never from each other in a circle.
//!
//! ```text
//! score          RESP2 $<len> %.17g text ("1.5", "3", "inf", "1.0000000000000001e+300")
//!                RESP3 ,<same text>
//! WITHSCORES     RESP2 *2n m1 s1 m2 s2 ...        RESP3 *n [m1 s1] [m2 s2] ...
//! ```

use crate::core::Ctx;
use crate::error::ReplyError;
use crate::resp::writer::RespWriter;
use crate::types::{Value, ZSet};

/// Writes a score as `addReplyDouble` does: RESP3 `,`, RESP2 a bulk string, in `%.17g`.
pub fn reply_score(out: &mut RespWriter, d: f64) {
    out.double_g17(d);
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

/// The reply of a command that answers each member of `argv[2..]` of the sorted set at
/// `argv[1]` by its score (ZMSCORE, GEOHASH, GEOPOS): an array, `found` writing a
/// member's element from its score, `missing` one that is not there (a missing key has
/// no members).
pub fn reply_per_member(
    ctx: &mut Ctx<'_>,
    found: impl Fn(&mut RespWriter, f64),
    missing: impl Fn(&mut RespWriter),
) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (z, out) = lookup(ctx, &argv[1]);
    let z = z?;
    out.array(argv.len() - 2);
    for m in &argv[2..] {
        match z.as_ref().and_then(|z| z.score(m)) {
            Some(s) => found(out, s),
            None => missing(out),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
