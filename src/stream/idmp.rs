//! Idempotent production (Redis 8.6 `XADD ... IDMP pid iid` / `IDMPAUTO pid`; reference
//! §2.1, §2.18, §3.5): the per-stream record of which producer already added which
//! message, so that a retried XADD appends nothing and answers the original entry's ID.
//!
//! ```text
//!  Stream.idmp: Option<Box<Idmp>>      None until the stream first uses IDMP or XCFGSET
//!  Idmp
//!  ├ duration, maxsize                 IDMP-DURATION (s), IDMP-MAXSIZE (iids per producer)
//!  ├ iids_added, iids_duplicates       lifetime counters (kept across XCFGSET)
//!  ├ iids_tracked                      sum of every producer's order.len()
//!  └ producers: pid → Producer
//!       ├ ids:   iid → entry ID        duplicate check, O(1)
//!       └ order: [(iid, entry ID), …]  insertion order, oldest first; evicted from the
//!                                      front past `maxsize`, expired from the front
//! ```
//!
//! Both `ids` and `order` hold the same iid allocation (`Arc<[u8]>`), so an iid's bytes
//! are stored once. Pids and iids are binary-safe. An IDMPAUTO iid is [`auto_iid`]: 16
//! bytes of XXH3-128, order-insensitive over the field/value pairs.
//!
//! Expiry follows the *entry ID's* time: an iid goes when `entry_id.ms <= now −
//! duration·1000`. Entry IDs grow with insertion, so the expired iids of a producer are
//! always a prefix of `order`; the core's timer removes them with bounded work per tick
//! ([`Idmp::expire`]) and XADD removes a producer's expired prefix before it checks for a
//! duplicate. A producer left with no iid is removed.
//!
//! Invariants: for every producer `ids.len() == order.len()`, both non-empty, and every
//! `(iid, id)` of `order` is in `ids`; `iids_tracked` is the sum of the lengths;
//! `1 <= duration <= 86400`, `1 <= maxsize <= 10000`.

use super::StreamId;
use bytes::Bytes;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// The maps' hasher: foldhash with a random per-map seed (pids and iids come from clients,
/// so the seed keeps collisions unpredictable), several times faster than SipHash on the
/// short keys producers use.
type Hasher = foldhash::fast::RandomState;

/// Smallest IDMP-DURATION (seconds).
pub const DURATION_MIN: i64 = 1;
/// Largest IDMP-DURATION (seconds): one day.
pub const DURATION_MAX: i64 = 86_400;
/// Smallest IDMP-MAXSIZE.
pub const MAXSIZE_MIN: i64 = 1;
/// Largest IDMP-MAXSIZE.
pub const MAXSIZE_MAX: i64 = 10_000;

/// One producer's recent idempotent IDs.
#[derive(Debug, Clone, Default)]
struct Producer {
    /// iid → the ID of the entry it added.
    ids: HashMap<Arc<[u8]>, StreamId, Hasher>,
    /// The same iids in insertion order, oldest first.
    order: VecDeque<(Arc<[u8]>, StreamId)>,
}

impl Producer {
    /// Drops iids from the front while `drop` says so, spending at most `budget`;
    /// returns how many went.
    fn drop_front(&mut self, budget: &mut usize, drop: impl Fn(StreamId) -> bool) -> u64 {
        let mut n = 0;
        while *budget > 0 {
            let Some((_, id)) = self.order.front() else {
                break;
            };
            if !drop(*id) {
                break;
            }
            *budget -= 1;
            if let Some((iid, _)) = self.order.pop_front() {
                self.ids.remove(&iid);
                n += 1;
            }
        }
        n
    }
}

/// One producer's pid and its `(iid, entry ID)` pairs, oldest first ([`Idmp::producers`]).
pub type ProducerIids<'a> = (&'a [u8], Vec<(&'a [u8], StreamId)>);

/// A stream's IDMP configuration, producers and counters (Redis: the `idmp_*` fields of
/// `stream`).
#[derive(Debug, Clone)]
pub struct Idmp {
    /// IDMP-DURATION in seconds.
    duration: u32,
    /// IDMP-MAXSIZE: iids kept per producer.
    maxsize: u32,
    /// pid → its recent iids.
    producers: HashMap<Bytes, Producer, Hasher>,
    /// Sum of the producers' iid counts.
    iids_tracked: u64,
    /// Lifetime count of iids recorded by XADD.
    iids_added: u64,
    /// Lifetime count of duplicates answered.
    iids_duplicates: u64,
}

/// The cutoff of an expiry pass: iids whose entry ms is `<=` it have expired, or `None`
/// when nothing can have expired yet (the clock is below one duration).
fn cutoff(duration: u32, now_ms: u64) -> Option<u64> {
    now_ms.checked_sub(u64::from(duration) * 1000)
}

impl Idmp {
    /// Empty state with this configuration (values are clamped into their ranges).
    pub fn new(duration: i64, maxsize: i64) -> Idmp {
        Idmp {
            duration: duration.clamp(DURATION_MIN, DURATION_MAX) as u32,
            maxsize: maxsize.clamp(MAXSIZE_MIN, MAXSIZE_MAX) as u32,
            producers: HashMap::default(),
            iids_tracked: 0,
            iids_added: 0,
            iids_duplicates: 0,
        }
    }

    /// IDMP-DURATION, seconds.
    pub fn duration(&self) -> u32 {
        self.duration
    }

    /// IDMP-MAXSIZE.
    pub fn maxsize(&self) -> u32 {
        self.maxsize
    }

    /// Number of producers with at least one tracked iid (`pids-tracked`).
    pub fn pids_tracked(&self) -> usize {
        self.producers.len()
    }

    /// Number of tracked iids over all producers (`iids-tracked`).
    pub fn iids_tracked(&self) -> u64 {
        self.iids_tracked
    }

    /// Lifetime iids recorded (`iids-added`).
    pub fn iids_added(&self) -> u64 {
        self.iids_added
    }

    /// Lifetime duplicates answered (`iids-duplicates`).
    pub fn iids_duplicates(&self) -> u64 {
        self.iids_duplicates
    }

    /// Sets both lifetime counters (snapshot load).
    pub fn set_counters(&mut self, added: u64, duplicates: u64) {
        self.iids_added = added;
        self.iids_duplicates = duplicates;
    }

    /// The entry ID `pid`/`iid` added, if it is still tracked. With `now_ms`, the
    /// producer's expired iids are dropped first, so an expired iid is never a
    /// duplicate; without it (while loading the log) nothing expires.
    pub fn lookup(&mut self, pid: &[u8], iid: &[u8], now_ms: Option<u64>) -> Option<StreamId> {
        let p = self.producers.get_mut(pid)?;
        if let Some(cut) = now_ms.and_then(|now| cutoff(self.duration, now)) {
            let mut unlimited = usize::MAX;
            let gone = p.drop_front(&mut unlimited, |id| id.ms <= cut);
            if gone > 0 {
                self.iids_tracked -= gone;
                if p.order.is_empty() {
                    self.producers.remove(pid);
                    return None;
                }
            }
        }
        p.ids.get(iid).copied()
    }

    /// Counts one duplicate answered.
    pub fn note_duplicate(&mut self) {
        self.iids_duplicates += 1;
    }

    /// Records that `pid`/`iid` added entry `id`, evicting the producer's oldest iids
    /// beyond `maxsize`. `count` raises `iids-added` (XADD does; restoring state does
    /// not). An iid already tracked for this producer keeps its entry. Returns true
    /// when the producer is new.
    pub fn record(&mut self, pid: &[u8], iid: &[u8], id: StreamId, count: bool) -> bool {
        self.record_with(pid, iid, id, count, true)
    }

    /// [`Idmp::record`] for an iid the caller has just looked up and not found
    /// (XADD), which skips the check.
    pub fn record_new(&mut self, pid: &[u8], iid: &[u8], id: StreamId) -> bool {
        self.record_with(pid, iid, id, true, false)
    }

    fn record_with(
        &mut self,
        pid: &[u8],
        iid: &[u8],
        id: StreamId,
        count: bool,
        check: bool,
    ) -> bool {
        if count {
            self.iids_added += 1;
        }
        let mut created = false;
        let p = match self.producers.get_mut(pid) {
            Some(p) => p,
            None => {
                created = true;
                self.producers
                    .entry(Bytes::copy_from_slice(pid))
                    .or_default()
            }
        };
        if check && p.ids.contains_key(iid) {
            return created;
        }
        let iid: Arc<[u8]> = Arc::from(iid);
        p.ids.insert(iid.clone(), id);
        p.order.push_back((iid, id));
        self.iids_tracked += 1;
        let excess = p.order.len().saturating_sub(self.maxsize as usize);
        if excess > 0 {
            let mut budget = excess;
            let gone = p.drop_front(&mut budget, |_| true);
            self.iids_tracked -= gone;
        }
        created
    }

    /// Sets both settings as they were, keeping the producers (restoring state from a
    /// snapshot or the log; values are clamped into their ranges).
    pub fn restore_settings(&mut self, duration: u32, maxsize: u32) {
        self.duration = duration.clamp(DURATION_MIN as u32, DURATION_MAX as u32);
        self.maxsize = maxsize.clamp(MAXSIZE_MIN as u32, MAXSIZE_MAX as u32);
    }

    /// XCFGSET: sets whichever values are given. A value that differs from the current
    /// one clears every producer (the lifetime counters stay). Returns whether anything
    /// changed.
    pub fn configure(&mut self, duration: Option<u32>, maxsize: Option<u32>) -> bool {
        let mut changed = false;
        if let Some(d) = duration.filter(|&d| d != self.duration) {
            self.duration = d;
            changed = true;
        }
        if let Some(m) = maxsize.filter(|&m| m != self.maxsize) {
            self.maxsize = m;
            changed = true;
        }
        if changed {
            self.producers.clear();
            self.iids_tracked = 0;
        }
        changed
    }

    /// Drops expired iids (entry ms `<= now_ms − duration`), spending at most `budget`
    /// units of work (one per producer looked at and one per iid dropped). Returns true
    /// when the pass got through every producer.
    pub fn expire(&mut self, now_ms: u64, budget: &mut usize) -> bool {
        let Some(cut) = cutoff(self.duration, now_ms) else {
            return true;
        };
        let mut complete = true;
        let mut emptied = Vec::new();
        for (pid, p) in self.producers.iter_mut() {
            if *budget == 0 {
                complete = false;
                break;
            }
            *budget -= 1;
            let gone = p.drop_front(budget, |id| id.ms <= cut);
            self.iids_tracked -= gone;
            if p.order.is_empty() {
                emptied.push(pid.clone());
            } else if p.order.front().is_some_and(|(_, id)| id.ms <= cut) {
                complete = false;
            }
        }
        for pid in emptied {
            self.producers.remove(&pid);
        }
        complete
    }

    /// True when some producer is tracked (the expiry pass has work to look at).
    pub fn has_producers(&self) -> bool {
        !self.producers.is_empty()
    }

    /// Every producer with its iids in insertion order (for snapshots), producers in
    /// byte order so that the same state always writes the same records.
    pub fn producers(&self) -> Vec<ProducerIids<'_>> {
        let mut v: Vec<_> = self
            .producers
            .iter()
            .map(|(pid, p)| {
                let iids = p.order.iter().map(|(iid, id)| (&iid[..], *id)).collect();
                (&pid[..], iids)
            })
            .collect();
        v.sort_by(|a, b| a.0.cmp(b.0));
        v
    }

    /// Approximate heap bytes (MEMORY USAGE): the struct, the pids, and per iid its
    /// bytes, its Arc header and one slot in each of the map and the queue.
    pub fn memory_usage(&self) -> usize {
        let slot = std::mem::size_of::<(Arc<[u8]>, StreamId)>();
        let mut n = std::mem::size_of::<Idmp>();
        for (pid, p) in &self.producers {
            n += pid.len() + std::mem::size_of::<(Bytes, Producer)>();
            for (iid, _) in &p.order {
                n += iid.len() + 16 + 2 * slot;
            }
        }
        n
    }
}

/// The iid IDMPAUTO derives from an entry's `field value ...` elements: 16 bytes,
/// independent of the order of the pairs (field names matter, their order does not).
///
/// Each pair hashes as XXH3-128 over `field | field length (u64 LE) | value` (the length
/// keeps `("ab","c")` and `("a","bc")` apart); the pair hashes are combined with a
/// wrapping sum and a xor, both order-insensitive, and the result is written big-endian.
pub fn auto_iid(elements: &[Bytes]) -> [u8; 16] {
    let mut sum: u128 = 0;
    let mut xor: u128 = 0;
    // Small pairs are hashed in one shot from a stack buffer (the streaming state is
    // large to set up); both ways hash the same bytes, so they give the same iid.
    let mut buf = [0u8; 256];
    for pair in elements.chunks_exact(2) {
        let (f, v) = (&pair[0][..], &pair[1][..]);
        let len = f.len() + 8 + v.len();
        let d = if len <= buf.len() {
            buf[..f.len()].copy_from_slice(f);
            buf[f.len()..f.len() + 8].copy_from_slice(&(f.len() as u64).to_le_bytes());
            buf[f.len() + 8..len].copy_from_slice(v);
            xxhash_rust::xxh3::xxh3_128(&buf[..len])
        } else {
            let mut h = xxhash_rust::xxh3::Xxh3::new();
            h.update(f);
            h.update(&(f.len() as u64).to_le_bytes());
            h.update(v);
            h.digest128()
        };
        sum = sum.wrapping_add(d);
        xor ^= d;
    }
    (sum ^ xor.rotate_left(64)).to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ms: u64) -> StreamId {
        StreamId::new(ms, 0)
    }

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn a_stream_that_never_uses_idmp_pays_one_word_and_no_allocation() {
        assert_eq!(std::mem::size_of::<Option<Box<Idmp>>>(), 8);
        let s = super::super::Stream::new();
        assert!(s.idmp.is_none());
    }

    #[test]
    fn duplicates_return_the_original_id() {
        let mut s = Idmp::new(100, 100);
        assert_eq!(s.lookup(b"p", b"i", Some(0)), None);
        assert!(s.record(b"p", b"i", id(5), true));
        assert_eq!(s.lookup(b"p", b"i", Some(6)), Some(id(5)));
        assert_eq!(
            s.lookup(b"q", b"i", Some(6)),
            None,
            "producers are separate"
        );
        assert!(!s.record(b"p", b"j", id(6), true));
        assert_eq!(
            (s.pids_tracked(), s.iids_tracked(), s.iids_added()),
            (1, 2, 2)
        );
    }

    #[test]
    fn maxsize_evicts_the_oldest_iids_per_producer() {
        let mut s = Idmp::new(100, 3);
        for i in 0..5u64 {
            s.record(b"p", i.to_string().as_bytes(), id(i + 1), true);
            s.record(b"q", i.to_string().as_bytes(), id(i + 1), true);
        }
        assert_eq!(s.lookup(b"p", b"1", None), None);
        assert_eq!(s.lookup(b"p", b"2", None), Some(id(3)));
        assert_eq!(s.iids_tracked(), 6);
        assert_eq!(s.iids_added(), 10);
    }

    #[test]
    fn expiry_follows_entry_id_time_and_removes_empty_producers() {
        let mut s = Idmp::new(1, 100);
        s.record(b"p", b"a", id(1_000), true);
        s.record(b"p", b"b", id(2_000), true);
        s.record(b"q", b"c", id(900), true);
        let mut budget = 100;
        assert!(s.expire(2_000, &mut budget));
        assert_eq!(s.lookup(b"p", b"a", None), None);
        assert_eq!(s.lookup(b"p", b"b", None), Some(id(2_000)));
        assert_eq!(s.pids_tracked(), 1, "q had only expired iids");
        assert_eq!(s.iids_tracked(), 1);
        // Lazy expiry at lookup time.
        assert_eq!(s.lookup(b"p", b"b", Some(3_000)), None);
        assert_eq!((s.pids_tracked(), s.iids_tracked()), (0, 0));
    }

    #[test]
    fn expiry_work_is_bounded() {
        let mut s = Idmp::new(1, 10_000);
        for i in 0..1000u64 {
            s.record(b"p", i.to_string().as_bytes(), id(i), true);
        }
        let mut budget = 10;
        assert!(!s.expire(1_000_000, &mut budget));
        assert_eq!(budget, 0);
        assert_eq!(
            s.iids_tracked(),
            991,
            "one unit for the producer, nine iids"
        );
        let mut budget = usize::MAX;
        assert!(s.expire(1_000_000, &mut budget));
        assert_eq!(s.iids_tracked(), 0);
    }

    #[test]
    fn a_different_value_clears_the_producers_but_not_the_counters() {
        let mut s = Idmp::new(100, 100);
        s.record(b"p", b"a", id(1), true);
        s.note_duplicate();
        assert!(!s.configure(Some(100), Some(100)));
        assert_eq!(s.iids_tracked(), 1);
        assert!(s.configure(Some(5), None));
        assert_eq!((s.iids_tracked(), s.pids_tracked()), (0, 0));
        assert_eq!((s.iids_added(), s.iids_duplicates()), (1, 1));
        assert_eq!((s.duration(), s.maxsize()), (5, 100));
    }

    #[test]
    fn auto_iid_ignores_pair_order_but_not_names_or_boundaries() {
        let a = auto_iid(&[b("f1"), b("a"), b("f2"), b("b")]);
        assert_eq!(a, auto_iid(&[b("f2"), b("b"), b("f1"), b("a")]));
        assert_ne!(a, auto_iid(&[b("f1"), b("b"), b("f2"), b("a")]));
        assert_ne!(auto_iid(&[b("ab"), b("c")]), auto_iid(&[b("a"), b("bc")]));
        // One-shot (small) and streaming (large) hashing agree on the same bytes.
        let big = Bytes::from(vec![b'x'; 300]);
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(b"f");
        h.update(&1u64.to_le_bytes());
        h.update(b"v");
        let small = h.digest128();
        let mut expect = [0u8; 16];
        expect.copy_from_slice(&(small ^ small.rotate_left(64)).to_be_bytes());
        assert_eq!(auto_iid(&[b("f"), b("v")]), expect);
        assert_ne!(
            auto_iid(&[b("f"), big.clone()]),
            auto_iid(&[b("f"), b("x")])
        );
        assert_eq!(auto_iid(&[b("f"), big.clone()]), auto_iid(&[b("f"), big]));
        assert_ne!(
            auto_iid(&[b("x"), b("1"), b("x"), b("1")]),
            auto_iid(&[b("x"), b("1")]),
            "a repeated pair is not the pair once"
        );
    }
}
