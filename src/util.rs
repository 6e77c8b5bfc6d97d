//! Small helpers shared by commands: argument matching, glob patterns and the
//! pseudo-random numbers of the random-member commands.

/// Redis's `stringmatchlen`: glob matching with `*`, `?`, `[...]` (with `^` negation
/// and ranges) and `\` escapes; `nocase` folds ASCII case.
///
/// Bounded as Redis bounds it (CVE-2022-36021): when the rest of a pattern after a `*`
/// matches no suffix of the string, no earlier `*` can help either (a longer match for
/// it would only start the rest later), so the whole match fails at once instead of
/// retrying every earlier star: `*a*a*a*...b` against a long run of `a` is linear per
/// star, not exponential.
pub fn glob_match(pattern: &[u8], string: &[u8], nocase: bool) -> bool {
    glob_inner(pattern, string, nocase, 0) == Glob::Match
}

/// The outcome of matching a pattern's tail against a string's tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Glob {
    /// It matches.
    Match,
    /// It does not match here; an earlier `*` may still try a later start.
    NoMatch,
    /// It matches no suffix at all: no earlier `*` can make the whole match succeed.
    Hopeless,
}

fn eq(a: u8, b: u8, nocase: bool) -> bool {
    if nocase {
        a.eq_ignore_ascii_case(&b)
    } else {
        a == b
    }
}

fn glob_inner(mut p: &[u8], mut s: &[u8], nocase: bool, depth: usize) -> Glob {
    // Bound the recursion the way Redis bounds nested stars.
    if depth > 1000 {
        return Glob::NoMatch;
    }
    while let Some(&c) = p.first() {
        match c {
            b'*' => {
                while p.len() > 1 && p[1] == b'*' {
                    p = &p[1..];
                }
                if p.len() == 1 {
                    return Glob::Match;
                }
                for i in 0..=s.len() {
                    match glob_inner(&p[1..], &s[i..], nocase, depth + 1) {
                        Glob::NoMatch => {}
                        decided => return decided,
                    }
                }
                return Glob::Hopeless;
            }
            b'?' => {
                if s.is_empty() {
                    return Glob::NoMatch;
                }
                s = &s[1..];
                p = &p[1..];
            }
            b'[' => {
                let Some(&sc) = s.first() else {
                    return Glob::NoMatch;
                };
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
                    return Glob::NoMatch;
                }
                s = &s[1..];
            }
            b'\\' if p.len() >= 2 => {
                if s.first().is_none_or(|&x| !eq(p[1], x, nocase)) {
                    return Glob::NoMatch;
                }
                s = &s[1..];
                p = &p[2..];
            }
            _ => {
                if s.first().is_none_or(|&x| !eq(c, x, nocase)) {
                    return Glob::NoMatch;
                }
                s = &s[1..];
                p = &p[1..];
            }
        }
    }
    if s.is_empty() {
        Glob::Match
    } else {
        Glob::NoMatch
    }
}

// --- doubles ---------------------------------------------------------------------------

/// Formats a double as C's `%.17g` (what Redis 7.0's `addReplyDouble` prints: scores,
/// ACL LOG's ages, numbers a script returns), with `inf`/`-inf` for the infinities.
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

/// `a == b` for byte strings such as keys and names: lengths of 4 to 16 bytes (most
/// keys) are compared as two overlapping words each, in registers, where `==` on slices
/// calls `memcmp` (a tenth of a 32-key XREADGROUP's time went to those calls). Longer
/// strings still go to `memcmp`.
#[inline]
pub fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    match a.len() {
        8..=16 => {
            a.first_chunk::<8>() == b.first_chunk::<8>()
                && a.last_chunk::<8>() == b.last_chunk::<8>()
        }
        4..=7 => {
            a.first_chunk::<4>() == b.first_chunk::<4>()
                && a.last_chunk::<4>() == b.last_chunk::<4>()
        }
        0..=3 => a.iter().zip(b).all(|(x, y)| x == y),
        _ => a == b,
    }
}

/// A hint to bring the cache line at `p` into the caches, for a walk over scattered
/// objects that knows its next stops early (the Pub/Sub flusher: each client's state is
/// fetched while the previous client's system call runs, not after it). Never faults,
/// whatever `p` is; does nothing on other architectures.
///
/// One of the few places the crate allows `unsafe`: the intrinsic is `unsafe` only
/// because it takes a raw pointer, which a prefetch never dereferences.
#[inline(always)]
#[allow(unsafe_code)]
pub fn prefetch<T: ?Sized>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 reads nothing architecturally and cannot fault, whatever the
    // address; SSE is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Lowers the calling thread's CPU priority to nice value `nice` (0 normal, 19 lowest),
/// for threads whose work is in the background of the core thread's (the tiering read
/// pool). On Linux the nice value belongs to each thread (setpriority(2), "NOTES"), so
/// `setpriority(PRIO_PROCESS, 0, nice)` changes this thread alone. Raising a priority
/// needs privileges; lowering it never does, and a thread already at `nice` or lower
/// is left as it is. Does nothing on other systems.
#[allow(unsafe_code)]
pub fn lower_thread_priority(nice: i32) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        if current_thread_id()
            .and_then(thread_nice)
            .is_some_and(|now| now >= nice)
        {
            return Ok(());
        }
        /// `PRIO_PROCESS` of `<sys/resource.h>`.
        const PRIO_PROCESS: i32 = 0;
        unsafe extern "C" {
            fn setpriority(which: i32, who: u32, prio: i32) -> i32;
        }
        // SAFETY: setpriority takes three plain integers, touches no memory of ours, and
        // `who = 0` names the calling thread.
        if unsafe { setpriority(PRIO_PROCESS, 0, nice) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
    Ok(())
}

/// The calling thread's id (Linux: the task id in `/proc/thread-self`; `None` elsewhere).
pub fn current_thread_id() -> Option<u32> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

/// The nice value of thread `tid` of this process, from `/proc` (Linux; `None` elsewhere
/// or when the thread is gone): field 19 of its `stat`, after the parenthesised name.
pub fn thread_nice(tid: u32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    let after_name = stat.get(stat.rfind(')')? + 2..)?;
    // After the name come the state (field 3) and on; the nice value is field 19.
    after_name.split(' ').nth(19 - 3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytes_eq_agrees_with_slice_equality() {
        // Every length up to 40 against equal strings and strings differing in one byte
        // (each position) or in length.
        for len in 0..40usize {
            let a: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            assert!(super::bytes_eq(&a, &a.clone()), "len {len}");
            for at in 0..len {
                let mut b = a.clone();
                b[at] ^= 0x20;
                assert!(!super::bytes_eq(&a, &b), "len {len}, byte {at}");
            }
            let mut longer = a.clone();
            longer.push(0);
            assert!(!super::bytes_eq(&a, &longer), "len {len} and {}", len + 1);
        }
    }

    use super::*;

    fn own_tid() -> u32 {
        current_thread_id().expect("a task id")
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn lowering_the_priority_changes_the_calling_thread_only() {
        let here = own_tid();
        let before = thread_nice(here).expect("own nice");
        let (tid, nice) = std::thread::spawn(|| {
            let base = thread_nice(own_tid()).expect("nice");
            lower_thread_priority((base + 7).min(19)).expect("lowering needs no privileges");
            (own_tid(), thread_nice(own_tid()).expect("nice after"))
        })
        .join()
        .expect("thread");
        assert_ne!(tid, here);
        assert_eq!(nice, (before + 7).min(19));
        assert_eq!(
            thread_nice(here),
            Some(before),
            "the calling thread alone changed"
        );
    }

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
            // ACL LOG ages
            (0.01, "0.01"),
            (0.033, "0.033000000000000002"),
            (12.5, "12.5"),
            (1e20, "1e+20"),
        ];
        for (d, want) in cases {
            assert_eq!(fmt_double(d), want, "{d}");
        }
    }

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
        assert!(glob_match(b"*a*b", b"xxaxxb", false));
        assert!(!glob_match(b"*a*b", b"xxaxx", false));
        assert!(glob_match(b"a*", b"a", false));
        assert!(glob_match(b"*[b]", b"ab", false));
    }

    #[test]
    fn nested_stars_fail_fast() {
        // Redis's "Regression for pattern matching long nested loops": exponential
        // without the hopeless-tail rule, instant with it.
        let pattern = format!("{}b", "a*".repeat(50));
        let string = "a".repeat(50_000);
        let started = std::time::Instant::now();
        assert!(!glob_match(pattern.as_bytes(), string.as_bytes(), false));
        assert!(glob_match(
            pattern.as_bytes(),
            format!("{string}b").as_bytes(),
            false
        ));
        // Not a timing assertion: without the rule this call does not return in a
        // test's lifetime; the elapsed time is printed for whoever runs it by hand.
        eprintln!("nested stars: {:?}", started.elapsed());
    }

    proptest::proptest! {
        /// The bounded matcher agrees with a plain backtracking matcher on small inputs.
        #[test]
        fn bounded_glob_agrees_with_backtracking(
            p in "[ab*?]{0,8}",
            s in "[ab]{0,10}",
        ) {
            fn naive(p: &[u8], s: &[u8]) -> bool {
                match p.first() {
                    None => s.is_empty(),
                    Some(b'*') => (0..=s.len()).any(|i| naive(&p[1..], &s[i..])),
                    Some(b'?') => !s.is_empty() && naive(&p[1..], &s[1..]),
                    Some(c) => s.first() == Some(c) && naive(&p[1..], &s[1..]),
                }
            }
            proptest::prop_assert_eq!(
                glob_match(p.as_bytes(), s.as_bytes(), false),
                naive(p.as_bytes(), s.as_bytes())
            );
        }
    }
}
