//! Small helpers shared by commands: argument matching, glob patterns and the
//! pseudo-random numbers of the random-member commands.

/// Redis's `stringmatchlen`: glob matching with `*`, `?`, `[...]` (with `^` negation
/// and ranges) and `\` escapes; `nocase` folds ASCII case.
pub fn glob_match(pattern: &[u8], string: &[u8], nocase: bool) -> bool {
    glob_inner(pattern, string, nocase, 0)
}

fn eq(a: u8, b: u8, nocase: bool) -> bool {
    if nocase {
        a.eq_ignore_ascii_case(&b)
    } else {
        a == b
    }
}

fn glob_inner(mut p: &[u8], mut s: &[u8], nocase: bool, depth: usize) -> bool {
    // Bound the recursion the way Redis bounds nested stars.
    if depth > 1000 {
        return false;
    }
    while let Some(&c) = p.first() {
        match c {
            b'*' => {
                while p.len() > 1 && p[1] == b'*' {
                    p = &p[1..];
                }
                if p.len() == 1 {
                    return true;
                }
                for i in 0..=s.len() {
                    if glob_inner(&p[1..], &s[i..], nocase, depth + 1) {
                        return true;
                    }
                }
                return false;
            }
            b'?' => {
                if s.is_empty() {
                    return false;
                }
                s = &s[1..];
                p = &p[1..];
            }
            b'[' => {
                let Some(&sc) = s.first() else { return false };
                p = &p[1..];
                let negate = p.first() == Some(&b'^');
                if negate {
                    p = &p[1..];
                }
                let mut matched = false;
                loop {
                    match p {
                        [] => break,
                        [b']', ..] => break,
                        [b'\\', e, rest @ ..] => {
                            if eq(*e, sc, nocase) {
                                matched = true;
                            }
                            p = rest;
                        }
                        [a, b'-', b, rest @ ..] if *b != b']' => {
                            let (lo, hi) = if a <= b { (*a, *b) } else { (*b, *a) };
                            let (lo, hi, x) = if nocase {
                                (
                                    lo.to_ascii_lowercase(),
                                    hi.to_ascii_lowercase(),
                                    sc.to_ascii_lowercase(),
                                )
                            } else {
                                (lo, hi, sc)
                            };
                            if x >= lo && x <= hi {
                                matched = true;
                            }
                            p = rest;
                        }
                        [a, rest @ ..] => {
                            if eq(*a, sc, nocase) {
                                matched = true;
                            }
                            p = rest;
                        }
                    }
                }
                if !p.is_empty() {
                    p = &p[1..]; // the closing ']'
                }
                if matched == negate {
                    return false;
                }
                s = &s[1..];
            }
            b'\\' if p.len() >= 2 => {
                if s.first().is_none_or(|&x| !eq(p[1], x, nocase)) {
                    return false;
                }
                s = &s[1..];
                p = &p[2..];
            }
            _ => {
                if s.first().is_none_or(|&x| !eq(c, x, nocase)) {
                    return false;
                }
                s = &s[1..];
                p = &p[1..];
            }
        }
    }
    s.is_empty()
}

// --- randomness --------------------------------------------------------------------------

thread_local! {
    /// wyrand state, seeded from std's random SipHash keys on first use.
    static RNG: std::cell::Cell<u64> = std::cell::Cell::new({
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(0x5eed);
        h.finish() | 1
    });
}

/// A pseudo-random u64 (wyrand): the choices of SPOP, SRANDMEMBER, HRANDFIELD,
/// ZRANDMEMBER and RANDOMKEY. Not cryptographic, as Redis's `random()` is not.
pub fn rand_u64() -> u64 {
    RNG.with(|s| {
        let x = s.get().wrapping_add(0xa076_1d64_78bd_642f);
        s.set(x);
        let t = u128::from(x) * u128::from(x ^ 0xe703_7ed1_a0b4_28db);
        ((t >> 64) as u64) ^ (t as u64)
    })
}

/// A random index below `n` (`n > 0`).
pub fn rand_below(n: usize) -> usize {
    ((u128::from(rand_u64()) * n as u128) >> 64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_like_redis() {
        assert!(glob_match(b"*", b"anything", false));
        assert!(glob_match(b"stream-*", b"stream-node-max-bytes", false));
        assert!(glob_match(b"h?llo", b"hello", false));
        assert!(glob_match(b"h[ae]llo", b"hallo", false));
        assert!(!glob_match(b"h[^e]llo", b"hello", false));
        assert!(glob_match(b"h[a-c]llo", b"hbllo", false));
        assert!(glob_match(b"PORT", b"port", true));
        assert!(!glob_match(b"PORT", b"port", false));
        assert!(glob_match(b"a\\*b", b"a*b", false));
        assert!(!glob_match(b"a", b"ab", false));
    }
}
