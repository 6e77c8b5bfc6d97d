//! The command clock: how long each command ran, for INFO commandstats, the latency
//! histograms, the slow log and CLUSTER SLOT-STATS, read once per command.
//!
//! `Instant::now()` is a `clock_gettime(CLOCK_MONOTONIC)` through the vDSO: on this
//! project's machines about 25 ns, 6–7% of the server's time on a pipeline of PINGs
//! (Redis 7.0 reads `gettimeofday` twice per command for the same purpose). Where the
//! kernel itself keeps time with the processor's time-stamp counter (its clocksource is
//! `tsc`, and the CPU says the counter ticks at a constant rate and does not stop in
//! sleep states: `constant_tsc` and `nonstop_tsc`), the counter is read directly
//! (`RDTSC`, about 10 ns) and turned into nanoseconds with a rate measured once, against
//! `Instant`, when the process first asks. Anywhere else a [`Tick`] is simply nanoseconds
//! since a fixed `Instant`.
//!
//! A reading is monotonic within the precision the kernel gives the same counter; a
//! difference that comes out negative (two CPUs' counters a few cycles apart) counts as
//! zero.
//!
//! ```text
//!   Tick  = raw counter value (TSC cycles, or ns since `base` without a usable TSC)
//!   ns(a, b) = (b - a) * scale >> 32          scale = ns per cycle, as a 32.32 fixed point
//! ```

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A reading of the command clock (see the module docs); compare two with
/// [`Tick::nanos_since`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Tick(u64);

/// How readings are taken and scaled, decided once per process.
#[derive(Debug)]
struct Source {
    /// `RDTSC` when true, else `Instant` against `base`.
    tsc: bool,
    /// The `Instant` a reading of 0 (without a TSC) or of `base_count` (with one) stands for.
    base: Instant,
    /// The counter at `base`.
    base_count: u64,
    /// Nanoseconds per counter step, 32.32 fixed point (`1 << 32` without a TSC).
    scale: u64,
}

/// How long the rate of the counter is measured against `Instant` (once per process).
const CALIBRATION: Duration = Duration::from_millis(5);

/// The most an `Instant` read may lag the counter read it is paired with: each end of the
/// calibration is a counter read between two `Instant` reads at most this far apart, so
/// the rate is right to 2 × 1 µs / 5 ms = 4e-4 even if the thread is preempted in between
/// (then the pair is taken again).
const PAIRING: Duration = Duration::from_micros(1);

fn source() -> &'static Source {
    static SOURCE: OnceLock<Source> = OnceLock::new();
    SOURCE.get_or_init(|| {
        if tsc_usable()
            && let Some((i0, c0)) = paired_read()
        {
            while Instant::now().duration_since(i0) < CALIBRATION {
                std::hint::spin_loop();
            }
            if let Some((i1, c1)) = paired_read() {
                let cycles = c1.saturating_sub(c0);
                let nanos = i1.duration_since(i0).as_nanos();
                if cycles > 0 {
                    return Source {
                        tsc: true,
                        base: i0,
                        base_count: c0,
                        scale: ((nanos << 32) / u128::from(cycles)) as u64,
                    };
                }
            }
        }
        Source {
            tsc: false,
            base: Instant::now(),
            base_count: 0,
            scale: 1 << 32,
        }
    })
}

/// The counter and the `Instant` it was read at, to within [`PAIRING`]; `None` if no
/// try in a thousand came that close (a machine too busy: the `Instant` clock is used).
fn paired_read() -> Option<(Instant, u64)> {
    (0..1000).find_map(|_| {
        let before = Instant::now();
        let count = read_tsc();
        let after = Instant::now();
        let gap = after.duration_since(before);
        (gap <= PAIRING).then(|| (before + gap / 2, count))
    })
}

/// The clock in Redis's words for INFO `monotonic_clock`: `X86 TSC @ <n> ticks/us` when
/// the counter is read, `POSIX clock_gettime` otherwise (what `Instant` reads on Linux).
pub fn describe() -> String {
    let s = source();
    if s.tsc {
        format!(
            "X86 TSC @ {} ticks/us",
            (1000u128 << 32) / u128::from(s.scale.max(1))
        )
    } else {
        "POSIX clock_gettime".to_string()
    }
}

/// True when the kernel keeps its own time with the TSC and the CPU's counter runs at
/// a constant rate through sleep states.
fn tsc_usable() -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    let clocksource =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .unwrap_or_default();
    if clocksource.trim() != "tsc" {
        return false;
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .is_some_and(|flags| {
            let has = |w: &str| flags.split_whitespace().any(|f| f == w);
            has("constant_tsc") && has("nonstop_tsc")
        })
}

/// The time-stamp counter (0 on other architectures, where it is never used).
#[inline(always)]
#[allow(unsafe_code)]
fn read_tsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: RDTSC reads a register; it touches no memory and is part of x86_64.
    unsafe {
        std::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    0
}

impl Tick {
    /// The clock now.
    #[inline]
    pub fn now() -> Tick {
        let s = source();
        if s.tsc {
            Tick(read_tsc())
        } else {
            Tick(Instant::now().saturating_duration_since(s.base).as_nanos() as u64)
        }
    }

    /// Nanoseconds from `earlier` to `self` (0 if `earlier` is later).
    #[inline]
    pub fn nanos_since(self, earlier: Tick) -> u64 {
        let steps = self.0.saturating_sub(earlier.0);
        ((u128::from(steps) * u128::from(source().scale)) >> 32) as u64
    }

    /// Microseconds from `earlier` to `self` (0 if `earlier` is later).
    #[inline]
    pub fn micros_since(self, earlier: Tick) -> u64 {
        self.nanos_since(earlier) / 1000
    }

    /// The same moment as an `Instant` (for timers that keep one: a script's run time).
    pub fn to_instant(self) -> Instant {
        let s = source();
        let at = Tick(s.base_count.min(self.0));
        s.base + Duration::from_nanos(self.nanos_since(at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_keeps_time_with_instant() {
        let (i0, t0) = (Instant::now(), Tick::now());
        std::thread::sleep(Duration::from_millis(30));
        let (t1, i1) = (Tick::now(), Instant::now());
        let wall = i1.duration_since(i0).as_nanos() as u64;
        let ticked = t1.nanos_since(t0);
        // The ticks span at least the sleep and at most the Instant readings around them,
        // give or take the calibration's error (1e-3, over twice what it can be).
        let slept = 30_000_000;
        assert!(
            ticked <= wall + wall / 1000,
            "{ticked} ns against {wall} ns"
        );
        assert!(
            ticked >= slept - slept / 1000,
            "{ticked} ns against a 30 ms sleep"
        );
        assert!(t1 >= t0);
        assert_eq!(t0.nanos_since(t1), 0, "a reversed difference is zero");
        assert_eq!(t1.micros_since(t0), ticked / 1000);
    }

    #[test]
    fn the_clock_is_described_as_redis_describes_its_own() {
        let d = describe();
        if source().tsc {
            let rate: u64 = d
                .strip_prefix("X86 TSC @ ")
                .and_then(|r| r.strip_suffix(" ticks/us"))
                .and_then(|r| r.parse().ok())
                .unwrap_or_else(|| panic!("{d}"));
            // Counters of the last twenty years tick at 0.5 to 10 GHz.
            assert!((500..10_000).contains(&rate), "{d}");
        } else {
            assert_eq!(d, "POSIX clock_gettime");
        }
    }

    #[test]
    fn a_tick_converts_back_to_the_instant_it_was_read_at() {
        let before = Instant::now();
        let t = Tick::now();
        let after = Instant::now();
        let at = t.to_instant();
        let slack = Duration::from_micros(50);
        assert!(
            at + slack >= before && at <= after + slack,
            "{at:?} not in {before:?}..{after:?}"
        );
    }
}
