//! Latency monitoring (Redis: `latency.c`) and per-command latency tracking.
//!
//! Two independent things live here:
//!
//! - **The latency monitor** ([`LatencyMonitor`]): with `latency-monitor-threshold` > 0,
//!   every event that took at least that many milliseconds becomes a sample in the
//!   event's time series: `command` (a slow command without the `fast` flag),
//!   `fast-command`, and streamd's own (`snapshot-pause`, `rewrite-pause`, ... which
//!   `persist/` reports through [`super::Core::latency_sample`]). Each series keeps the
//!   last [`LATENCY_TS_LEN`] seconds that had a sample, one sample per second (the
//!   highest), and the all-time maximum, exactly as Redis's `latencyAddSample`.
//! - **Latency tracking** (`latency-tracking`, on by default as in Redis 7): a
//!   [`CommandHistogram`] per command, read by `LATENCY HISTOGRAM` and
//!   `INFO latencystats`. Redis embeds HdrHistogram's C code; we use the `hdrhistogram`
//!   crate with Redis's bounds: values in nanoseconds from 1 ns to 1 s, 2 significant
//!   digits, so percentiles and bucket labels come out the same (`p50=85.503`,
//!   buckets `1, 2, 4, 8, 16, 33, 66, 132 ...` µs).
//!
//! Invariants: a series' samples are in time order starting at `idx` (a ring); `max` is
//! at least every sample ever added since the series was created.

use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// Samples kept per event (latency.h `LATENCY_TS_LEN`).
pub const LATENCY_TS_LEN: usize = 160;
/// Smallest value a command histogram records, ns (server.h `LATENCY_HISTOGRAM_MIN_VALUE`).
const HISTOGRAM_MIN_NS: u64 = 1;
/// Largest value, ns: one second (server.h `LATENCY_HISTOGRAM_MAX_VALUE`).
const HISTOGRAM_MAX_NS: u64 = 1_000_000_000;
/// Significant digits (server.h `LATENCY_HISTOGRAM_PRECISION`).
const HISTOGRAM_PRECISION: u8 = 2;

/// One sample of an event's series (Redis: `latencySample`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LatencySample {
    /// Unix seconds; 0 marks an empty slot.
    pub time: u64,
    /// Milliseconds.
    pub latency: u64,
}

/// The samples of one event (Redis: `latencyTimeSeries`).
#[derive(Debug, Clone)]
pub struct TimeSeries {
    /// Next slot to write.
    idx: usize,
    /// Highest latency ever added, ms.
    pub max: u64,
    /// The ring of samples.
    samples: [LatencySample; LATENCY_TS_LEN],
}

impl TimeSeries {
    fn new() -> TimeSeries {
        TimeSeries {
            idx: 0,
            max: 0,
            samples: [LatencySample::default(); LATENCY_TS_LEN],
        }
    }

    /// The samples, oldest first (empty slots skipped).
    pub fn samples(&self) -> impl Iterator<Item = LatencySample> + '_ {
        (0..LATENCY_TS_LEN)
            .map(|j| self.samples[(self.idx + j) % LATENCY_TS_LEN])
            .filter(|s| s.time != 0)
    }

    /// The newest sample.
    pub fn latest(&self) -> LatencySample {
        self.samples[(self.idx + LATENCY_TS_LEN - 1) % LATENCY_TS_LEN]
    }

    fn add(&mut self, now_secs: u64, latency: u64) {
        self.max = self.max.max(latency);
        let prev = (self.idx + LATENCY_TS_LEN - 1) % LATENCY_TS_LEN;
        if self.samples[prev].time == now_secs {
            self.samples[prev].latency = self.samples[prev].latency.max(latency);
            return;
        }
        self.samples[self.idx] = LatencySample {
            time: now_secs,
            latency,
        };
        self.idx = (self.idx + 1) % LATENCY_TS_LEN;
    }
}

/// Figures of one event's samples for LATENCY DOCTOR (Redis: `latencyStats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventStats {
    /// Samples in the series.
    pub samples: u64,
    /// Mean latency, ms.
    pub avg: u64,
    /// Mean absolute deviation from `avg`, ms.
    pub mad: u64,
    /// Seconds from the oldest sample to now (at least 1).
    pub period: u64,
}

/// The latency monitor and the tracking settings.
#[derive(Debug, Default)]
pub struct LatencyMonitor {
    /// `latency-monitor-threshold`, ms; 0 = off.
    pub threshold_ms: u64,
    /// `latency-tracking`: keep a histogram per command.
    pub tracking: bool,
    /// `latency-tracking-info-percentiles`: the percentiles INFO latencystats shows.
    pub percentiles: Vec<f64>,
    /// Event name → its samples, in name order.
    events: BTreeMap<String, TimeSeries>,
}

impl LatencyMonitor {
    /// Adds a sample of `ms` to `event` when the monitor is on and `ms` reaches the
    /// threshold (Redis: `latencyAddSampleIfNeeded`).
    #[inline]
    pub fn add_if_needed(&mut self, event: &str, ms: u64, now_secs: u64) {
        if self.threshold_ms != 0 && ms >= self.threshold_ms {
            self.add(event, ms, now_secs);
        }
    }

    /// Adds a sample unconditionally (Redis: `latencyAddSample`).
    pub fn add(&mut self, event: &str, ms: u64, now_secs: u64) {
        match self.events.get_mut(event) {
            Some(ts) => ts.add(now_secs, ms),
            None => {
                let mut ts = TimeSeries::new();
                ts.add(now_secs, ms);
                self.events.insert(event.to_string(), ts);
            }
        }
    }

    /// Every event with its series.
    pub fn events(&self) -> impl ExactSizeIterator<Item = (&str, &TimeSeries)> {
        self.events.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The series of `event`.
    pub fn event(&self, event: &[u8]) -> Option<(&str, &TimeSeries)> {
        let name = std::str::from_utf8(event).ok()?;
        self.events
            .get_key_value(name)
            .map(|(k, v)| (k.as_str(), v))
    }

    /// Forgets `event` (any case), or every event with `None`; returns how many went.
    pub fn reset(&mut self, event: Option<&[u8]>) -> usize {
        let before = self.events.len();
        match event {
            None => self.events.clear(),
            Some(e) => self
                .events
                .retain(|name, _| !name.as_bytes().eq_ignore_ascii_case(e)),
        }
        before - self.events.len()
    }

    /// Average, deviation and period of `ts`'s samples (Redis: `analyzeLatencyForEvent`).
    pub fn analyze(ts: &TimeSeries, now_secs: u64) -> EventStats {
        let mut st = EventStats::default();
        let mut sum = 0u64;
        let mut oldest = 0u64;
        for s in ts.samples() {
            st.samples += 1;
            sum += s.latency;
            if oldest == 0 || s.time < oldest {
                oldest = s.time;
            }
        }
        if st.samples == 0 {
            return st;
        }
        st.avg = sum / st.samples;
        st.period = now_secs.saturating_sub(oldest).max(1);
        let dev: u64 = ts.samples().map(|s| st.avg.abs_diff(s.latency)).sum();
        st.mad = dev / st.samples;
        st
    }
}

/// The latency distribution of one command, in nanoseconds (Redis keeps an
/// `hdr_histogram` per `redisCommand`).
#[derive(Debug, Clone)]
pub struct CommandHistogram(Histogram<u64>);

impl CommandHistogram {
    /// An empty histogram with Redis's bounds.
    pub fn new() -> CommandHistogram {
        CommandHistogram(
            Histogram::new_with_bounds(HISTOGRAM_MIN_NS, HISTOGRAM_MAX_NS, HISTOGRAM_PRECISION)
                .expect("constant bounds are valid"),
        )
    }

    /// Records one call of `usec` microseconds (clamped to the bounds, as Redis's
    /// `updateCommandLatencyHistogram`).
    #[inline]
    pub fn record_usec(&mut self, usec: u64) {
        let ns = usec
            .saturating_mul(1000)
            .clamp(HISTOGRAM_MIN_NS, HISTOGRAM_MAX_NS);
        self.0.saturating_record(ns);
    }

    /// Calls recorded.
    pub fn calls(&self) -> u64 {
        self.0.len()
    }

    /// The value at `percentile` (0..=100), in microseconds with three decimals' worth
    /// of nanoseconds (the highest value equivalent to the one found, as Redis's
    /// `hdr_value_at_percentile`).
    pub fn percentile_usec(&self, percentile: f64) -> f64 {
        self.0.value_at_percentile(percentile) as f64 / 1000.0
    }

    /// The cumulative distribution Redis's `fillCommandCDF` replies: buckets doubling
    /// from 1024 ns, each labelled with the highest value it holds in µs, with the number
    /// of calls up to it; buckets that add no calls are left out.
    pub fn cdf_usec(&self) -> Vec<(u64, u64)> {
        let total = self.0.len();
        let mut out = Vec::new();
        let mut previous = 0;
        let mut level: u64 = 1024;
        while previous < total && level <= HISTOGRAM_MAX_NS.saturating_mul(2) {
            let top = self.0.highest_equivalent(level);
            let cumulative = self.0.count_between(0, level);
            if cumulative > previous {
                out.push((top / 1000, cumulative));
            }
            previous = cumulative;
            level *= 2;
        }
        out
    }
}

impl Default for CommandHistogram {
    fn default() -> Self {
        CommandHistogram::new()
    }
}

/// Parses `latency-tracking-info-percentiles` ("50 99 99.9"): numbers in 0..=100;
/// `None` for anything else (CONFIG SET's error).
pub fn parse_percentiles(text: &str) -> Option<Vec<f64>> {
    text.split_ascii_whitespace()
        .map(|w| w.parse::<f64>().ok().filter(|p| (0.0..=100.0).contains(p)))
        .collect()
}

/// A percentile as INFO names it: `%f` with trailing zeros and dot trimmed (Redis's
/// `trimDoubleString`): 50 → `50`, 99.9 → `99.9`.
pub fn percentile_label(p: f64) -> String {
    let s = format!("{p:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_keeps_its_highest_sample_and_the_ring_keeps_160() {
        let mut m = LatencyMonitor {
            threshold_ms: 10,
            ..Default::default()
        };
        m.add_if_needed("command", 5, 1);
        assert_eq!(m.events().len(), 0);
        m.add_if_needed("command", 20, 1);
        m.add_if_needed("command", 30, 1);
        m.add_if_needed("command", 15, 1);
        let (_, ts) = m.event(b"command").expect("event");
        assert_eq!(
            ts.samples().collect::<Vec<_>>(),
            vec![LatencySample {
                time: 1,
                latency: 30
            }]
        );
        for t in 2..=200 {
            m.add("command", t, t);
        }
        let (_, ts) = m.event(b"command").expect("event");
        assert_eq!(ts.samples().count(), LATENCY_TS_LEN);
        assert_eq!(ts.samples().next().map(|s| s.time), Some(41));
        assert_eq!(ts.latest().time, 200);
        assert_eq!(ts.max, 200);
        assert_eq!(m.reset(Some(b"COMMAND")), 1);
        assert_eq!(m.reset(None), 0);
    }

    #[test]
    fn analysis_gives_average_deviation_and_period() {
        let mut m = LatencyMonitor::default();
        m.add("e", 10, 100);
        m.add("e", 30, 101);
        let (_, ts) = m.event(b"e").expect("event");
        let st = LatencyMonitor::analyze(ts, 104);
        assert_eq!(
            st,
            EventStats {
                samples: 2,
                avg: 20,
                mad: 10,
                period: 4
            }
        );
    }

    #[test]
    fn histogram_buckets_and_percentiles_match_redis() {
        let mut h = CommandHistogram::new();
        // Redis 7.0 after one XADD of 85 µs: histogram_usec {132: 1}, p50=85.503.
        h.record_usec(85);
        assert_eq!(h.cdf_usec(), vec![(132, 1)]);
        assert_eq!(format!("{:.3}", h.percentile_usec(50.0)), "85.503");
        let mut h = CommandHistogram::new();
        for usec in [0, 1, 3, 3, 5, 7] {
            h.record_usec(usec);
        }
        assert_eq!(h.cdf_usec(), vec![(1, 2), (4, 4), (8, 6)]);
        assert_eq!(h.calls(), 6);
        let mut h = CommandHistogram::new();
        h.record_usec(5_000_000);
        assert_eq!(h.cdf_usec().last().map(|b| b.1), Some(1));
    }

    #[test]
    fn percentiles_parse_and_print_as_redis() {
        assert_eq!(
            parse_percentiles("50 99 99.9"),
            Some(vec![50.0, 99.0, 99.9])
        );
        assert_eq!(parse_percentiles(""), Some(vec![]));
        assert_eq!(parse_percentiles("101"), None);
        assert_eq!(parse_percentiles("x"), None);
        assert_eq!(percentile_label(50.0), "50");
        assert_eq!(percentile_label(99.9), "99.9");
        assert_eq!(percentile_label(99.99), "99.99");
    }
}
