//! What one measured phase records, and how rounds are summarised.
//!
//! A workload sets its data up, then wraps the part it measures in a [`Phase`]:
//!
//! ```text
//!   setup (FLUSHALL, load, groups)   │ Phase::begin │ measured work │ Phase::end │
//!                                    │ used_memory  │               │ used_memory│
//!                                    │ server CPU   │               │ server CPU │
//! ```
//!
//! Server CPU is the CPU time of the server process (all its threads), the PID taken from
//! `INFO server` `process_id`, read only when the server is on this machine (a loopback
//! address): `utime + stime` from `/proc/PID/stat`, in 10 ms clock ticks. When the kernel
//! has per-thread `/proc/PID/task/TID/schedstat` (run time in nanoseconds) and no thread
//! ended during the phase, the sum of those is used instead: the same quantity, a
//! hundred thousand times finer, which matters for phases of a few hundred milliseconds.
//!
//! The **system share** of that CPU (`stime` over `utime + stime`, from the ticks; only
//! when the phase used at least [`SHARE_MIN_TICKS`] of them) says what bounds a workload:
//! a server that spends most of its time in the kernel (socket reads and writes, wake-ups)
//! is held by system calls, one that spends most in user space by its own code.

use std::io;
use std::time::Instant;

use crate::client::{Conn, info_field};

/// Linux reports `/proc` times in USER_HZ ticks, fixed at 100 per second.
const TICK_US: f64 = 10_000.0;

/// Fewest ticks (10 ms each) a phase must use for its system share to be reported.
const SHARE_MIN_TICKS: u64 = 20;

/// The start of a measured phase.
pub struct Phase {
    start: Instant,
    mem: Option<f64>,
    pid: Option<u32>,
    cpu: Option<Cpu>,
}

/// A reading of a process's CPU time.
#[derive(Debug, Clone, PartialEq)]
struct Cpu {
    /// `utime + stime` in ticks.
    ticks: u64,
    /// `stime` alone, in ticks.
    sys_ticks: u64,
    /// Run time of each thread (TID, ns), when schedstat is available.
    threads: Option<Vec<(u32, u64)>>,
}

impl Cpu {
    /// Reads the CPU time of `pid`.
    fn read(pid: u32) -> Option<Cpu> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (user, sys) = stat_cpu_ticks(&stat)?;
        Some(Cpu {
            ticks: user + sys,
            sys_ticks: sys,
            threads: thread_run_ns(pid),
        })
    }

    /// Microseconds of CPU from `self` to `later`: thread run times when every thread of
    /// `self` is still there in `later` (new threads count from zero), else ticks.
    fn micros_until(&self, later: &Cpu) -> f64 {
        if let (Some(before), Some(after)) = (&self.threads, &later.threads) {
            let mut ns = 0u64;
            let mut all_alive = true;
            for &(tid, t) in after {
                match before.iter().find(|(b, _)| *b == tid) {
                    Some(&(_, t0)) => ns += t.saturating_sub(t0),
                    None => ns += t,
                }
            }
            for (tid, _) in before {
                all_alive &= after.iter().any(|(a, _)| a == tid);
            }
            if all_alive {
                return ns as f64 / 1000.0;
            }
        }
        later.ticks.saturating_sub(self.ticks) as f64 * TICK_US
    }

    /// The share of the CPU from `self` to `later` spent in the kernel; `None` below
    /// [`SHARE_MIN_TICKS`].
    fn sys_share_until(&self, later: &Cpu) -> Option<f64> {
        let all = later.ticks.saturating_sub(self.ticks);
        let sys = later.sys_ticks.saturating_sub(self.sys_ticks);
        (all >= SHARE_MIN_TICKS).then(|| sys as f64 / all as f64)
    }
}

/// The run time (first field of `schedstat`, ns) of every thread of `pid`.
fn thread_run_ns(pid: u32) -> Option<Vec<(u32, u64)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let entry = entry.ok()?;
        let tid: u32 = entry.file_name().to_str()?.parse().ok()?;
        let text = std::fs::read_to_string(entry.path().join("schedstat")).ok()?;
        out.push((tid, text.split_whitespace().next()?.parse().ok()?));
    }
    Some(out)
}

/// What the server did during a phase.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    /// Wall time of the phase.
    pub secs: f64,
    /// `used_memory` after minus before, in bytes.
    pub mem_delta: Option<f64>,
    /// Server CPU time (user + system) spent during the phase, in microseconds.
    pub cpu_us: Option<f64>,
    /// The share of that CPU spent in the kernel (0 to 1).
    pub sys_share: Option<f64>,
}

impl Phase {
    /// Reads the server's memory and CPU counters and starts the clock.
    pub async fn begin(ctl: &mut Conn, local: bool) -> io::Result<Phase> {
        let pid = if local { server_pid(ctl).await? } else { None };
        let mem = used_memory(ctl).await?;
        let cpu = pid.and_then(Cpu::read);
        Ok(Phase {
            start: Instant::now(),
            mem,
            pid,
            cpu,
        })
    }

    /// Stops the clock and reads the counters again.
    pub async fn end(self, ctl: &mut Conn) -> io::Result<Measured> {
        let secs = self.start.elapsed().as_secs_f64();
        let cpu_after = self.pid.and_then(Cpu::read);
        let mem_after = used_memory(ctl).await?;
        let cpu = self.cpu.as_ref().zip(cpu_after.as_ref());
        Ok(Measured {
            secs,
            mem_delta: self.mem.zip(mem_after).map(|(a, b)| b - a),
            cpu_us: cpu.map(|(a, b)| a.micros_until(b)),
            sys_share: cpu.and_then(|(a, b)| a.sys_share_until(b)),
        })
    }
}

/// The server's `process_id`, if its INFO reports one and `/proc` has it.
async fn server_pid(ctl: &mut Conn) -> io::Result<Option<u32>> {
    let info = ctl.ok(&["INFO", "server"]).await?;
    let pid = info_field(&info, "process_id").and_then(|p| p.parse::<u32>().ok());
    Ok(pid.filter(|p| Cpu::read(*p).is_some()))
}

/// `used_memory` from `INFO memory`.
pub async fn used_memory(ctl: &mut Conn) -> io::Result<Option<f64>> {
    let info = ctl.ok(&["INFO", "memory"]).await?;
    Ok(info_field(&info, "used_memory").and_then(|v| v.parse::<f64>().ok()))
}

/// `utime` and `stime` from the text of `/proc/PID/stat`: fields 14 and 15, counted after
/// the command name, which is in parentheses and may itself contain spaces.
fn stat_cpu_ticks(stat: &str) -> Option<(u64, u64)> {
    let after = &stat[stat.rfind(')')? + 1..];
    // After ")": state(3) ppid(4) ... utime(14) stime(15): indexes 11 and 12 here.
    let mut fields = after.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime, stime))
}

/// A figure a workload reports beside the standard columns for one round (a counter's
/// delta, a restart time, a read speed): printed per server as the median over the rounds
/// with its range.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// What it is (`disk reads`, `restart`).
    pub name: &'static str,
    /// Its unit (`MB/s`, `s`, `×`; empty for a count).
    pub unit: &'static str,
    /// Its value in this round.
    pub value: f64,
}

impl Figure {
    /// A figure named `name`, in `unit`.
    pub fn new(name: &'static str, unit: &'static str, value: f64) -> Figure {
        Figure { name, unit, value }
    }
}

/// The figures of one round on one server.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// Commands completed in the measured phase.
    pub ops: u64,
    /// Stream entries moved (added, delivered, claimed, acknowledged...).
    pub entries: u64,
    /// Wall time of the measured phase.
    pub secs: f64,
    /// Latency samples in nanoseconds (what they time depends on the workload).
    pub lat_ns: Vec<u64>,
    /// `used_memory` delta over the phase.
    pub mem_delta: Option<f64>,
    /// Server CPU over the phase, in microseconds.
    pub cpu_us: Option<f64>,
    /// The share of the server's CPU spent in the kernel over the phase.
    pub sys_share: Option<f64>,
    /// The workload's own figures, if it has any (`tiering/*`).
    pub figures: Vec<Figure>,
}

impl Sample {
    /// A sample from a phase's measurements and the work counted during it.
    pub fn new(m: Measured, ops: u64, entries: u64, lat_ns: Vec<u64>) -> Sample {
        Sample {
            ops,
            entries,
            secs: m.secs,
            lat_ns,
            mem_delta: m.mem_delta,
            cpu_us: m.cpu_us,
            sys_share: m.sys_share,
            figures: Vec::new(),
        }
    }
}

/// Median and range of one figure over the rounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// Median (the lower middle value for an even count).
    pub median: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

impl Spread {
    /// The spread of `values`; `None` when there are none.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(Spread {
            median: v[(v.len() - 1) / 2],
            min: v[0],
            max: v[v.len() - 1],
        })
    }
}

/// One server's figures for a workload over all its rounds.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Rounds that completed.
    pub rounds: usize,
    /// Commands per second.
    pub ops: Option<Spread>,
    /// Entries per second.
    pub entries: Option<Spread>,
    /// Median over the rounds of each round's p50, p99 and p99.9, in microseconds.
    pub lat_us: Option<[f64; 3]>,
    /// Server CPU microseconds per command.
    pub cpu_per_op: Option<Spread>,
    /// The share of the server's CPU spent in the kernel.
    pub sys_share: Option<Spread>,
    /// `used_memory` delta per entry moved, in bytes.
    pub mem_per_entry: Option<Spread>,
    /// The workload's own figures over the rounds: name, unit, spread (in the order the
    /// first round gave them).
    pub figures: Vec<(&'static str, &'static str, Spread)>,
}

impl Summary {
    /// Summarises the rounds of one server.
    pub fn of(samples: &[Sample]) -> Summary {
        let ok: Vec<&Sample> = samples.iter().filter(|s| s.secs > 0.0).collect();
        let rate = |f: fn(&Sample) -> u64| {
            let any = ok.iter().any(|s| f(s) > 0);
            any.then(|| Spread::of(ok.iter().map(|s| f(s) as f64 / s.secs)))
                .flatten()
        };
        let lats: Vec<[f64; 3]> = ok
            .iter()
            .filter(|s| !s.lat_ns.is_empty())
            .map(|s| {
                let mut l = s.lat_ns.clone();
                l.sort_unstable();
                [0.50, 0.99, 0.999].map(|p| percentile(&l, p) as f64 / 1000.0)
            })
            .collect();
        let lat_us = (!lats.is_empty()).then(|| {
            [0, 1, 2].map(|i| Spread::of(lats.iter().map(|l| l[i])).map_or(0.0, |s| s.median))
        });
        let mut figures: Vec<(&'static str, &'static str, Spread)> = Vec::new();
        for f in ok.iter().flat_map(|s| &s.figures) {
            if figures.iter().any(|(name, _, _)| *name == f.name) {
                continue;
            }
            let values = ok
                .iter()
                .flat_map(|s| &s.figures)
                .filter(|g| g.name == f.name)
                .map(|g| g.value);
            if let Some(spread) = Spread::of(values) {
                figures.push((f.name, f.unit, spread));
            }
        }
        Summary {
            rounds: ok.len(),
            figures,
            ops: rate(|s| s.ops),
            entries: rate(|s| s.entries),
            lat_us,
            cpu_per_op: Spread::of(
                ok.iter()
                    .filter(|s| s.ops > 0)
                    .filter_map(|s| s.cpu_us.map(|c| c / s.ops as f64)),
            ),
            sys_share: Spread::of(ok.iter().filter_map(|s| s.sys_share)),
            mem_per_entry: Spread::of(
                ok.iter()
                    .filter(|s| s.entries > 0)
                    .filter_map(|s| s.mem_delta.map(|m| m / s.entries as f64)),
            ),
        }
    }
}

/// Nearest-rank percentile of sorted values (`p` in 0..=1); 0 for no values.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Nanoseconds since `since`, saturating.
pub fn ns_since(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// xorshift64*: a small deterministic generator, so both servers see the same keys, IDs
/// and values in the same order.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value; zero is remapped).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// Shuffles `v` (Fisher-Yates).
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=1000).collect();
        assert_eq!(percentile(&v, 0.5), 500);
        assert_eq!(percentile(&v, 0.99), 990);
        assert_eq!(percentile(&v, 0.999), 999);
        assert_eq!(percentile(&v, 1.0), 1000);
        assert_eq!(percentile(&v, 0.0), 1);
        assert_eq!(percentile(&[7], 0.99), 7);
        assert_eq!(percentile(&[], 0.5), 0);
    }

    #[test]
    fn spreads_take_the_lower_median() {
        let s = Spread::of([3.0, 1.0, 2.0, 10.0, 5.0]).expect("values");
        assert_eq!((s.median, s.min, s.max), (3.0, 1.0, 10.0));
        let s = Spread::of([4.0, 1.0]).expect("values");
        assert_eq!(s.median, 1.0);
        assert_eq!(Spread::of([f64::NAN]), None);
        assert_eq!(Spread::of(Vec::new()), None);
    }

    #[test]
    fn summary_of_rounds() {
        let round = |ops: u64, cpu: f64, lat: u64| Sample {
            ops,
            entries: ops * 10,
            secs: 2.0,
            lat_ns: vec![lat * 1000; 10],
            mem_delta: Some(ops as f64 * 50.0),
            cpu_us: Some(cpu),
            sys_share: Some(ops as f64 / 1000.0),
            figures: vec![
                Figure::new("disk reads", "", ops as f64 / 100.0),
                Figure::new("restart", "s", 0.5),
            ],
        };
        let s = Summary::of(&[
            round(100, 500.0, 10),
            round(300, 600.0, 30),
            round(200, 1000.0, 20),
        ]);
        assert_eq!(s.rounds, 3);
        assert_eq!(
            s.ops.map(|o| (o.median, o.min, o.max)),
            Some((100.0, 50.0, 150.0))
        );
        assert_eq!(s.entries.map(|o| o.median), Some(1000.0));
        assert_eq!(s.lat_us, Some([20.0, 20.0, 20.0]));
        assert_eq!(s.cpu_per_op.map(|c| c.median), Some(5.0));
        assert_eq!(
            s.sys_share.map(|c| (c.median, c.min, c.max)),
            Some((0.2, 0.1, 0.3))
        );
        assert_eq!(s.mem_per_entry.map(|m| m.median), Some(5.0));
        let figures: Vec<_> = s
            .figures
            .iter()
            .map(|(n, u, f)| (*n, *u, f.median, f.min, f.max))
            .collect();
        assert_eq!(
            figures,
            vec![
                ("disk reads", "", 2.0, 1.0, 3.0),
                ("restart", "s", 0.5, 0.5, 0.5)
            ]
        );
        let empty = Summary::of(&[Sample::default()]);
        assert_eq!(empty.rounds, 0);
        assert!(empty.ops.is_none() && empty.lat_us.is_none());
    }

    #[test]
    fn proc_stat_cpu_fields() {
        let stat = "4242 (redis server) S 1 4242 4242 0 -1 4194560 900 0 0 0 170 35 0 0 20 0 5 0";
        assert_eq!(stat_cpu_ticks(stat), Some((170, 35)));
        assert_eq!(stat_cpu_ticks("garbage"), None);
    }

    #[test]
    fn cpu_time_prefers_thread_run_times_while_no_thread_ends() {
        let at = |ticks, threads: &[(u32, u64)]| Cpu {
            ticks,
            sys_ticks: ticks / 4,
            threads: Some(threads.to_vec()),
        };
        let before = at(100, &[(1, 5_000_000), (2, 1_000_000)]);
        // A new thread (3) counts from zero.
        let later = at(101, &[(1, 7_000_000), (2, 1_500_000), (3, 250_000)]);
        assert_eq!(before.micros_until(&later), 2750.0);
        // Thread 2 ended: back to ticks.
        let ended = at(103, &[(1, 9_000_000)]);
        assert_eq!(before.micros_until(&ended), 30_000.0);
        let no_sched = Cpu {
            ticks: 104,
            sys_ticks: 0,
            threads: None,
        };
        assert_eq!(before.micros_until(&no_sched), 40_000.0);
        // The kernel's share needs enough ticks to mean something.
        assert_eq!(before.sys_share_until(&ended), None);
        let long = at(140, &[]);
        assert_eq!(before.sys_share_until(&long), Some(10.0 / 40.0));
        let me = Cpu::read(std::process::id()).expect("own /proc entry");
        assert!(me.ticks < u64::MAX);
    }

    #[test]
    fn shuffle_is_a_deterministic_permutation() {
        let mut a: Vec<u32> = (0..100).collect();
        let mut b = a.clone();
        Rng::new(7).shuffle(&mut a);
        Rng::new(7).shuffle(&mut b);
        assert_eq!(a, b);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        assert_ne!(a, sorted);
    }
}
