//! The core's share of stream lifecycle (stream/lifecycle.rs, docs/beyond-redis.md): the
//! background passes the `hz` cron runs, and the one form in which a retention trim is
//! logged and replicated.
//!
//! ```text
//!  every cron tick ([`Core::lifecycle_cron`])
//!  ├ retention sweep   Db::retention_keys, round-robin from a cursor: each stream's
//!  │                   MAXAGE/MAXBYTES applied (Stream::apply_retention) within
//!  │                   RETENTION_SWEEP_BUDGET units for the whole tick; every trim it
//!  │                   makes is logged as XTRIM key MINID = <id> [DELREF|ACKED]
//!  └ reclamation       Db::reclaim_keys, node by node from a cursor (key, last node
//!                      looked at): nodes whose tombstones pass stream-node-reclaim-ratio
//!                      are rewritten without them (Stream::reclaim) within
//!                      RECLAIM_BUDGET units a tick
//! ```
//!
//! Most reclamation does not wait for the pass: a deleting command rewrites the nodes it
//! touched at once, one bounded node each (stream/lifecycle.rs). The pass takes what is
//! left: nodes above `INLINE_RECLAIM_MAX_BYTES`, streams brought in whole (RENAME, COPY,
//! RESTORE), and ACKED trims, which may leave tombstones in many nodes.
//!
//! Both passes are bounded per tick, so a stream of any size costs at most one tick's
//! budget of pause at a time; a stream that expires whole goes over several ticks. The
//! tick's time is a latency-monitor event, `stream-lifecycle` (LATENCY LATEST, once
//! `latency-monitor-threshold` is set), and the longest tick is INFO stats'
//! `stream_lifecycle_max_tick_usec`, beside `stream_retention_trimmed_entries` and
//! `stream_dead_lettered_entries`. The
//! retention sweep does not run on a replica (its primary's trims arrive in the stream,
//! as expiry's DELs do) nor while loading; reclamation changes nothing a client or the
//! log can see, so it runs everywhere, replicas included.

use super::Core;
use crate::stream::lifecycle::RetentionTrim;
use crate::stream::memory::key_overhead;
use crate::stream::{RefPolicy, Stream};

/// Units of retention work per cron tick, over all databases (one per stream visited,
/// one per node dropped whole, one per entry looked at entry by entry). At the default
/// `hz 10` a stream whose whole content expires loses up to this many nodes (100,000
/// entries of 100-entry nodes) ten times a second, about 0.8 ms a tick
/// (streamd-bench `lifecycle/sweep-1m` measures the pause a tick takes).
pub const RETENTION_SWEEP_BUDGET: usize = 1_000;

/// Units of retention work one XADD may spend on its own stream (as for the sweep): an
/// XADD to a stream much over its limits trims part of the excess, the sweep the rest.
pub const XADD_RETENTION_BUDGET: usize = 1_000;

/// Units of reclamation work per cron tick (one per node looked at, one per 256 bytes of
/// node rewritten: about 1 MiB of nodes rewritten per tick at most).
pub const RECLAIM_BUDGET: usize = 4_000;

impl Core {
    /// The background lifecycle passes of one cron tick (module doc).
    pub fn lifecycle_cron(&mut self, now_ms: u64) {
        if self.loading {
            return;
        }
        let started = std::time::Instant::now();
        if !self.repl.is_replica() {
            self.retention_sweep(now_ms);
        }
        self.reclaim_pass();
        // The tick's pause, for INFO and the latency monitor (as Redis's `expire-cycle`).
        let usec = started.elapsed().as_micros() as u64;
        let stats = &mut self.stats;
        stats.stream_lifecycle_max_tick_usec = stats.stream_lifecycle_max_tick_usec.max(usec);
        if usec >= 1000 {
            self.latency_sample("stream-lifecycle", usec / 1000);
        }
    }

    /// Applies retention to the noted streams, round-robin, within the tick's budget.
    fn retention_sweep(&mut self, now_ms: u64) {
        let mut budget = RETENTION_SWEEP_BUDGET;
        let limits = self.node_limits;
        for db in 0..self.dbs.len() {
            let total = self.dbs[db].retention_key_count();
            let mut visited = 0;
            while budget > 0 && visited < total {
                let Some(key) = self.dbs[db].retention_next() else {
                    break;
                };
                visited += 1;
                budget -= 1;
                // Expired keys are not swept (lazy or active expiry removes them).
                let expired = self.dbs[db].is_expired(&key, now_ms);
                let Some(stream) = self.dbs[db].get_stream_mut(&key).filter(|_| !expired) else {
                    self.dbs[db].retention_done(&key, false);
                    continue;
                };
                if stream.retention().is_off() {
                    self.dbs[db].retention_done(&key, false);
                    continue;
                }
                let trim = stream.apply_retention(now_ms, key_overhead(&key), &limits, &mut budget);
                if let Some(t) = &trim
                    && stream.reclaim_after_trim(t.policy, self.reclaim_ratio)
                {
                    self.dbs[db].note_reclaim(&key);
                }
                if let Some(t) = trim {
                    self.notify_keyspace_event(super::notify::class::STREAM, "xtrim", &key, db);
                    self.retention_trimmed(db, &key, &t);
                }
                if budget == 0 {
                    // Out of budget, maybe inside this stream: it is visited first next
                    // time (the cursor stays before it).
                    return;
                }
                self.dbs[db].retention_done(&key, true);
            }
        }
    }

    /// The side effects of a retention trim of `key` in `db` that Redis's XTRIM has
    /// (the caller raises the `xtrim` event, once per command, and reclaims what the
    /// trim left, [`Stream::reclaim_after_trim`]): WATCH invalidation, the dirty count and
    /// the log record `XTRIM key MINID = <id> [DELREF|ACKED]`. It wakes nobody, as XTRIM
    /// does not.
    pub fn retention_trimmed(&mut self, db: usize, key: &[u8], t: &RetentionTrim) {
        self.touch_key(db, key);
        self.dirty += t.removed.max(1);
        self.stats.stream_retention_trimmed_entries += t.removed;
        for min in t.min_ids() {
            let id = min.to_text();
            let mut effect: Vec<&[u8]> = vec![b"XTRIM", key, b"MINID", b"=", &id];
            match t.policy {
                RefPolicy::KeepRef => {}
                RefPolicy::DelRef => effect.push(b"DELREF"),
                RefPolicy::Acked => effect.push(b"ACKED"),
            }
            self.propagate(db, &effect);
        }
    }

    /// Rewrites nodes with too many tombstones, key by key from the pass's cursor,
    /// within one tick's budget (what the cron runs; tests and tools call it directly to
    /// reclaim without the clock-driven retention sweep).
    pub fn reclaim_pass(&mut self) {
        let ratio = self.reclaim_ratio;
        if ratio >= 1.0 {
            return;
        }
        let mut budget = RECLAIM_BUDGET;
        for db in 0..self.dbs.len() {
            let total = self.dbs[db].reclaim_key_count();
            let mut visited = 0;
            while budget > 0 && visited <= total {
                let Some((key, after)) = self.dbs[db].reclaim_next() else {
                    break;
                };
                visited += 1;
                let step = match self.dbs[db].get_stream_mut(&key) {
                    Some(stream) => Stream::reclaim(stream, after, ratio, &mut budget),
                    None => Default::default(),
                };
                self.dbs[db].reclaim_progress(&key, step.resume_after);
            }
        }
    }
}
