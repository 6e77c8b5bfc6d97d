//! The HOTKEYS tracking session (Redis 8.6): which keys took the most CPU time and
//! network bytes while it ran.
//!
//! ```text
//!   Core::hotkeys = None                  never started, or HOTKEYS RESET
//!                 | Some(Session)         active (tracking) or stopped (results kept)
//!
//!   Session: what to track (CPU and/or NET, top K, SAMPLE 1/ratio, SLOTS), since when,
//!            totals over every command with keys, and one TopK table per metric
//! ```
//!
//! `Core::call` hands every finished command that has keys to [`Session::record`]: its
//! time and its bytes (request + reply) go to the totals, and, when the command is
//! sampled (probability 1/ratio) and in the selected slots, are split evenly among its
//! keys in the TopK tables. Commands inside EXEC are recorded one by one (EXEC itself
//! has no keys); commands run by a script count only as the script.
//!
//! [`TopK`] keeps at most `10 * K` keys, as Redis sizes its table: a new key arriving at
//! a full table replaces the smallest one and inherits its count (the Space-Saving
//! rule), so a key that is really hot cannot be crowded out by many cold ones, and a
//! count is never below the key's true total. Redis uses a probabilistic heavy-keeper
//! sketch instead; both report the top K by their estimates.

use bytes::Bytes;
use std::collections::HashMap;

/// Most keys HOTKEYS START COUNT may ask for.
pub const MAX_COUNT: u64 = 64;

/// Most seconds HOTKEYS START DURATION may ask for.
pub const MAX_DURATION_SECS: u64 = 1_000_000;

/// The heaviest keys of one metric, approximately (see the module doc).
#[derive(Debug, Clone, Default)]
pub struct TopK {
    /// Key → estimated total.
    counts: HashMap<Bytes, u64>,
    /// Most keys kept.
    capacity: usize,
    /// Sum of every amount added (`total-net-bytes`).
    pub total: u64,
}

impl TopK {
    /// A table keeping at most `capacity` keys.
    pub fn new(capacity: usize) -> TopK {
        TopK {
            counts: HashMap::new(),
            capacity: capacity.max(1),
            total: 0,
        }
    }

    /// Adds `amount` to `key`.
    pub fn add(&mut self, key: &[u8], amount: u64) {
        self.total = self.total.saturating_add(amount);
        if let Some(c) = self.counts.get_mut(key) {
            *c = c.saturating_add(amount);
            return;
        }
        let mut inherited = 0;
        if self.counts.len() >= self.capacity {
            let smallest = self
                .counts
                .iter()
                .min_by(|a, b| a.1.cmp(b.1).then_with(|| a.0.cmp(b.0)))
                .map(|(k, c)| (k.clone(), *c));
            if let Some((k, c)) = smallest {
                self.counts.remove(&k);
                inherited = c;
            }
        }
        self.counts.insert(
            Bytes::copy_from_slice(key),
            inherited.saturating_add(amount),
        );
    }

    /// The `k` heaviest keys, heaviest first (ties by key), zero counts left out.
    pub fn top(&self, k: usize) -> Vec<(Bytes, u64)> {
        let mut all: Vec<(Bytes, u64)> = self
            .counts
            .iter()
            .filter(|(_, c)| **c > 0)
            .map(|(k, c)| (k.clone(), *c))
            .collect();
        all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        all.truncate(k);
        all
    }
}

/// What one HOTKEYS START asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// Track by CPU time.
    pub cpu: bool,
    /// Track by network bytes.
    pub net: bool,
    /// K of the top K (1..=64, default 10).
    pub count: usize,
    /// Stop by itself after this many milliseconds (0: only HOTKEYS STOP).
    pub duration_ms: u64,
    /// Sample a command with probability 1/ratio (1: every command).
    pub sample_ratio: u64,
    /// Only keys of these slots, as sorted inclusive ranges (`None`: every slot).
    pub slots: Option<Vec<(u16, u16)>>,
}

/// One tracking session, active or stopped.
#[derive(Debug, Clone)]
pub struct Session {
    /// What it tracks.
    pub params: Params,
    /// Still tracking.
    pub active: bool,
    /// Unix ms when it started.
    pub start_ms: u64,
    /// How long it ran, fixed when it stopped.
    pub stopped_after_ms: u64,
    /// The process's (user, system) CPU ms when it started.
    pub cpu_at_start: (u64, u64),
    /// µs of every command with keys (`all-commands-all-slots-us`).
    pub usec_all: u64,
    /// Bytes of every command with keys (`net-bytes-all-commands-all-slots`).
    pub net_all: u64,
    /// µs of the commands in the selected slots.
    pub usec_selected: u64,
    /// Bytes of the commands in the selected slots.
    pub net_selected: u64,
    /// µs of the sampled commands in the selected slots.
    pub usec_sampled: u64,
    /// Bytes of the sampled commands in the selected slots.
    pub net_sampled: u64,
    /// Keys by CPU µs, when tracked.
    pub by_cpu: Option<TopK>,
    /// Keys by bytes, when tracked.
    pub by_net: Option<TopK>,
}

impl Session {
    /// A session starting now (`now_ms`).
    pub fn start(params: Params, now_ms: u64) -> Session {
        let table = |on: bool| on.then(|| TopK::new(params.count * 10));
        Session {
            by_cpu: table(params.cpu),
            by_net: table(params.net),
            params,
            active: true,
            start_ms: now_ms,
            stopped_after_ms: 0,
            cpu_at_start: process_cpu_ms(),
            usec_all: 0,
            net_all: 0,
            usec_selected: 0,
            net_selected: 0,
            usec_sampled: 0,
            net_sampled: 0,
        }
    }

    /// Stops tracking (results kept).
    pub fn stop(&mut self, now_ms: u64) {
        if self.active {
            self.active = false;
            self.stopped_after_ms = now_ms.saturating_sub(self.start_ms);
        }
    }

    /// Stops the session if its DURATION has passed; true while it still tracks.
    pub fn tick(&mut self, now_ms: u64) -> bool {
        let d = self.params.duration_ms;
        if self.active && d > 0 && now_ms >= self.start_ms.saturating_add(d) {
            self.active = false;
            self.stopped_after_ms = d;
        }
        self.active
    }

    /// How long it has run (or ran).
    pub fn duration_ms(&self, now_ms: u64) -> u64 {
        if self.active {
            now_ms.saturating_sub(self.start_ms)
        } else {
            self.stopped_after_ms
        }
    }

    /// Whether the keys of `slot` are tracked (`None`: the command's keys span no single
    /// slot, which only an unrestricted session tracks).
    pub fn selects(&self, slot: Option<u16>) -> bool {
        match (&self.params.slots, slot) {
            (None, _) => true,
            (Some(ranges), Some(s)) => ranges.iter().any(|&(a, b)| (a..=b).contains(&s)),
            (Some(_), None) => false,
        }
    }

    /// Records a finished command with `keys`: `usec` of time and `bytes` of traffic,
    /// in `slot` (see the module doc).
    pub fn record(&mut self, keys: &[&[u8]], slot: Option<u16>, usec: u64, bytes: u64) {
        if keys.is_empty() {
            return;
        }
        let ratio = self.params.sample_ratio;
        let sampled = ratio <= 1 || crate::util::rand_u64().is_multiple_of(ratio);
        let selected = self.selects(slot);
        self.usec_all = self.usec_all.saturating_add(usec);
        self.net_all = self.net_all.saturating_add(bytes);
        if selected {
            self.usec_selected = self.usec_selected.saturating_add(usec);
            self.net_selected = self.net_selected.saturating_add(bytes);
            if sampled && ratio > 1 {
                self.usec_sampled = self.usec_sampled.saturating_add(usec);
                self.net_sampled = self.net_sampled.saturating_add(bytes);
            }
        }
        if !sampled || !selected {
            return;
        }
        let n = keys.len() as u64;
        for key in keys {
            if let Some(t) = self.by_cpu.as_mut() {
                t.add(key, usec / n);
            }
            if let Some(t) = self.by_net.as_mut() {
                t.add(key, bytes / n);
            }
        }
    }
}

/// This process's (user, system) CPU time in ms, from `/proc/self/stat` (fields 14 and
/// 15, in clock ticks of 1/100 s as Linux reports them); zeros where that is unreadable.
pub fn process_cpu_ms() -> (u64, u64) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return (0, 0);
    };
    // The command name (field 2) may hold spaces; fields are counted after its ')'.
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
        return (0, 0);
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3, so field 14 is index 11.
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (ticks(11) * 10, ticks(12) * 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topk_keeps_the_heaviest_and_replaces_the_smallest() {
        let mut t = TopK::new(2);
        t.add(b"a", 10);
        t.add(b"b", 1);
        t.add(b"c", 5);
        // "b" (1) made room for "c", which inherits its count.
        assert_eq!(
            t.top(5),
            vec![
                (Bytes::from_static(b"a"), 10),
                (Bytes::from_static(b"c"), 6)
            ]
        );
        assert_eq!(t.total, 16);
        assert_eq!(t.top(1).len(), 1);
    }

    fn params() -> Params {
        Params {
            cpu: true,
            net: true,
            count: 10,
            duration_ms: 0,
            sample_ratio: 1,
            slots: Some(vec![(5, 7)]),
        }
    }

    #[test]
    fn sessions_split_among_keys_and_respect_slots_and_duration() {
        let mut s = Session::start(params(), 1000);
        s.record(&[b"x", b"y"], Some(6), 10, 40);
        s.record(&[b"z"], Some(9), 100, 100);
        s.record(&[], Some(6), 100, 100);
        assert_eq!((s.usec_all, s.net_all), (110, 140));
        assert_eq!((s.usec_selected, s.net_selected), (10, 40));
        let cpu = s.by_cpu.as_ref().map(|t| t.top(10)).unwrap_or_default();
        assert_eq!(cpu.len(), 2);
        assert_eq!(cpu[0].1, 5);
        let mut timed = Session::start(
            Params {
                duration_ms: 50,
                ..params()
            },
            1000,
        );
        assert!(timed.tick(1049));
        assert!(!timed.tick(1050));
        assert_eq!(timed.duration_ms(9999), 50);
    }
}
