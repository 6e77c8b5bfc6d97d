//! Per-slot usage counters for CLUSTER SLOT-STATS (Redis 8.2): CPU time and network
//! bytes attributed to the hash slot a command's keys live in.
//!
//! ```text
//!   SlotStats = None                       until the first counted command (no cost
//!                                          while `cluster-slot-stats-enabled` is off)
//!             | Some([Counters; 16384])    one row per slot, 24 bytes each
//!   Counters  = { cpu_usec, net_in, net_out }
//! ```
//!
//! `key-count` is not kept here: it is the keyspace's per-slot index, the one CLUSTER
//! COUNTKEYSINSLOT reads. A slot's row is zeroed when the slot changes owner (assigned,
//! deleted or taken over), and all rows on CONFIG RESETSTAT, as Redis resets them.

use super::slots::CLUSTER_SLOTS;

/// The counters of one slot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Microseconds spent in commands on this slot's keys.
    pub cpu_usec: u64,
    /// Request bytes of those commands.
    pub net_in: u64,
    /// Reply bytes of those commands (and what they sent to replicas).
    pub net_out: u64,
}

/// A metric CLUSTER SLOT-STATS reports or sorts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Keys in the slot.
    KeyCount,
    /// [`Counters::cpu_usec`].
    CpuUsec,
    /// [`Counters::net_in`].
    NetworkBytesIn,
    /// [`Counters::net_out`].
    NetworkBytesOut,
}

impl Metric {
    /// The metric a (case-insensitive) name means.
    pub fn named(name: &[u8]) -> Option<Metric> {
        let is = |w: &str| name.eq_ignore_ascii_case(w.as_bytes());
        if is("key-count") {
            Some(Metric::KeyCount)
        } else if is("cpu-usec") {
            Some(Metric::CpuUsec)
        } else if is("network-bytes-in") {
            Some(Metric::NetworkBytesIn)
        } else if is("network-bytes-out") {
            Some(Metric::NetworkBytesOut)
        } else {
            None
        }
    }
}

/// Every slot's [`Counters`], allocated on first use.
#[derive(Debug, Clone, Default)]
pub struct SlotStats {
    rows: Option<Box<[Counters]>>,
}

impl SlotStats {
    /// The counters of `slot` (zero when never counted).
    pub fn get(&self, slot: u16) -> Counters {
        self.rows
            .as_ref()
            .and_then(|r| r.get(usize::from(slot)).copied())
            .unwrap_or_default()
    }

    /// The counters of `slot` for an update, allocating the table the first time.
    pub fn row_mut(&mut self, slot: u16) -> Option<&mut Counters> {
        let rows = self
            .rows
            .get_or_insert_with(|| vec![Counters::default(); CLUSTER_SLOTS].into_boxed_slice());
        rows.get_mut(usize::from(slot))
    }

    /// Zeroes one slot (it changed owner).
    pub fn reset_slot(&mut self, slot: u16) {
        if let Some(row) = self
            .rows
            .as_mut()
            .and_then(|r| r.get_mut(usize::from(slot)))
        {
            *row = Counters::default();
        }
    }

    /// Zeroes every slot (CONFIG RESETSTAT), releasing the table.
    pub fn reset_all(&mut self) {
        self.rows = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_start_at_zero_and_reset() {
        let mut s = SlotStats::default();
        assert_eq!(s.get(5), Counters::default());
        if let Some(r) = s.row_mut(5) {
            r.cpu_usec += 7;
            r.net_in += 3;
        }
        assert_eq!(s.get(5).cpu_usec, 7);
        s.reset_slot(5);
        assert_eq!(s.get(5), Counters::default());
        assert!(s.row_mut(16383).is_some());
        assert!(s.row_mut(16384).is_none());
        s.reset_all();
        assert_eq!(s.get(16383), Counters::default());
        assert_eq!(Metric::named(b"CPU-usec"), Some(Metric::CpuUsec));
        assert_eq!(Metric::named(b"memory-bytes"), None);
    }
}
