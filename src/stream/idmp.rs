//! Idempotent production (Redis 8.6 `XADD ... IDMP pid iid` / `IDMPAUTO pid`; reference
//! §2.1, §2.18, §3.5): the per-stream record of which producer already added which
//! message, so that a retried XADD appends nothing and answers the original entry's ID.
//!
//! ```text
//!  Stream.extra.idmp: Option<Box<Idmp>>  None until the stream first uses IDMP or XCFGSET
//!  Idmp
//!  ├ duration, maxsize                 IDMP-DURATION (s), IDMP-MAXSIZE (iids per producer)
//!  ├ iids_added, iids_duplicates       lifetime counters (kept across XCFGSET)
//!  ├ iids_tracked                      sum of every producer's ring length
//!  └ producers: table of Producer, found by (hash of pid, pid)
//!       ├ pid, pid hash
//!       ├ ring:  [Slot, …]             insertion order, oldest first; evicted from the
//!       │                              front past `maxsize`, expired from the front
//!       │   Slot { iid bytes, entry ID, hash of iid }     48 bytes
//!       ├ head:  sequence number of ring[0]  (slot n of the producer's life is
//!       │                                     ring[n - head])
//!       └ index: table of sequence numbers, found by (hash of iid, the slot's iid)
//! ```
//!
//! An XADD with IDMP does one lookup and, when the iid is new, one insertion; both take
//! the hashes of pid and iid from one [`IdmpKey`] computed once per command, so an IDMP
//! XADD hashes its pid and iid once each. Evicting the oldest iid finds its index entry
//! by the hash kept in its slot and by sequence number, without hashing or comparing the
//! iid's bytes. An iid of up to 22 bytes (an IDMPAUTO iid, a UUID in binary, a number)
//! lives inside its slot; a longer one in one boxed allocation. All hashes come from one
//! process-wide randomly seeded foldhash state, so a key computed before the stream's
//! state existed is valid for it.
//!
//! Pids and iids are binary-safe. An IDMPAUTO iid is [`auto_iid`]: 16 bytes of
//! XXH3-128, order-insensitive over the field/value pairs.
//!
//! Expiry follows the *entry ID's* time: an iid goes when `entry_id.ms <= now −
//! duration·1000`. Entry IDs grow with insertion, so the expired iids of a producer are
//! always a prefix of its ring; the core's timer removes them with bounded work per tick
//! ([`Idmp::expire`]) and XADD removes a producer's expired prefix before it checks for a
//! duplicate. A producer left with no iid is removed.
//!
//! Invariants: for every producer `index.len() == ring.len()`, both non-empty; the index
//! holds exactly the sequence numbers `head .. head + ring.len()`, each under its slot's
//! iid hash, and no two slots hold the same iid; `iids_tracked` is the sum of the ring
//! lengths; `1 <= duration <= 86400`, `1 <= maxsize <= 10000`.

use super::StreamId;
use crate::short_bytes::ShortBytes;
use bytes::Bytes;
use hashbrown::HashTable;
use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::sync::OnceLock;

/// The hash of a pid or an iid: foldhash, seeded once per process at random (pids and
/// iids come from clients, so the seed keeps collisions unpredictable), several times
/// faster than SipHash on the short keys producers use. One state for every stream, so
/// that an [`IdmpKey`] fits any stream's tables.
fn hash_bytes(bytes: &[u8]) -> u64 {
    static STATE: OnceLock<foldhash::fast::RandomState> = OnceLock::new();
    STATE.get_or_init(Default::default).hash_one(bytes)
}

/// Smallest IDMP-DURATION (seconds).
pub const DURATION_MIN: i64 = 1;
/// Largest IDMP-DURATION (seconds): one day.
pub const DURATION_MAX: i64 = 86_400;
/// Smallest IDMP-MAXSIZE.
pub const MAXSIZE_MIN: i64 = 1;
/// Largest IDMP-MAXSIZE.
pub const MAXSIZE_MAX: i64 = 10_000;

/// A pid and an iid with their hashes, computed once per command and used for both the
/// duplicate check and the insertion.
#[derive(Debug, Clone, Copy)]
pub struct IdmpKey<'a> {
    pid: &'a [u8],
    iid: &'a [u8],
    pid_hash: u64,
    iid_hash: u64,
}

impl<'a> IdmpKey<'a> {
    /// Hashes `pid` and `iid`.
    pub fn new(pid: &'a [u8], iid: &'a [u8]) -> IdmpKey<'a> {
        IdmpKey {
            pid,
            iid,
            pid_hash: hash_bytes(pid),
            iid_hash: hash_bytes(iid),
        }
    }
}

/// One tracked iid.
#[derive(Debug, Clone)]
struct Slot {
    iid: ShortBytes,
    /// The entry the iid added.
    id: StreamId,
    /// `hash_bytes(iid)`, so eviction and index growth never rehash the bytes.
    hash: u64,
}

/// One producer's recent idempotent IDs.
#[derive(Debug, Clone)]
struct Producer {
    pid: Box<[u8]>,
    /// `hash_bytes(pid)`.
    pid_hash: u64,
    /// The iids in insertion order, oldest first.
    ring: VecDeque<Slot>,
    /// Sequence number of `ring[0]`.
    head: u64,
    /// The sequence numbers of `ring`'s slots, found by iid.
    index: HashTable<u64>,
}

impl Producer {
    fn new(pid: &[u8], pid_hash: u64) -> Producer {
        Producer {
            pid: pid.into(),
            pid_hash,
            ring: VecDeque::new(),
            head: 0,
            index: HashTable::new(),
        }
    }

    /// The one way an iid is looked up and added, with one probe of the index:
    /// `Err(Some(entry))` when `iid` (hashed `hash`) is tracked; otherwise, given `id`,
    /// appends it where the probe ended and evicts the oldest iids beyond `maxsize`,
    /// returning `Ok(how many went)`; `Err(None)` when it is neither tracked nor given an
    /// ID.
    // Inlined into check_or_record, XADD's path (~80 instructions per IDMP XADD when not).
    #[inline]
    fn find_or_push(
        &mut self,
        iid: &[u8],
        hash: u64,
        id: Option<StreamId>,
        maxsize: usize,
    ) -> Result<u64, Option<StreamId>> {
        let head = self.head;
        let ring = &self.ring;
        let entry = self.index.entry(
            hash,
            |&seq| ring[(seq - head) as usize].iid[..] == *iid,
            |&seq| ring[(seq - head) as usize].hash,
        );
        match entry {
            hashbrown::hash_table::Entry::Occupied(found) => {
                Err(Some(self.ring[(*found.get() - head) as usize].id))
            }
            hashbrown::hash_table::Entry::Vacant(place) => {
                let Some(id) = id else {
                    return Err(None);
                };
                place.insert(head + self.ring.len() as u64);
                self.ring.push_back(Slot {
                    iid: ShortBytes::new(iid),
                    id,
                    hash,
                });
                let mut evicted = 0;
                while self.ring.len() > maxsize && self.pop_front().is_some() {
                    evicted += 1;
                }
                Ok(evicted)
            }
        }
    }

    /// Drops the oldest iid, if any.
    fn pop_front(&mut self) -> Option<Slot> {
        let slot = self.ring.pop_front()?;
        let head = self.head;
        if let Ok(entry) = self.index.find_entry(slot.hash, |&s| s == head) {
            entry.remove();
        }
        self.head += 1;
        Some(slot)
    }

    /// Drops iids from the front while `drop` says so, spending at most `budget`;
    /// returns how many went.
    fn drop_front(&mut self, budget: &mut usize, drop: impl Fn(StreamId) -> bool) -> u64 {
        let mut n = 0;
        while *budget > 0 {
            let Some(slot) = self.ring.front() else {
                break;
            };
            if !drop(slot.id) {
                break;
            }
            *budget -= 1;
            if self.pop_front().is_some() {
                n += 1;
            }
        }
        n
    }
}

/// What [`Idmp::check_or_record`] found or did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The iid is tracked: it added this entry.
    Duplicate(StreamId),
    /// The iid was not tracked and is now; `new_producer` when its producer was not.
    Recorded {
        /// The producer was not tracked before.
        new_producer: bool,
    },
    /// The iid is not tracked (and no ID was given to record).
    Absent,
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
    /// The producers, found by pid.
    producers: HashTable<Producer>,
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
            producers: HashTable::new(),
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

    /// Removes the producer `key.pid` (it has no iid left).
    fn remove_producer(&mut self, key: &IdmpKey<'_>) {
        if let Ok(entry) = self
            .producers
            .find_entry(key.pid_hash, |p| &p.pid[..] == key.pid)
        {
            entry.remove();
        }
    }

    /// The entry ID `key`'s pid/iid added, if it is still tracked. With `now_ms`, the
    /// producer's expired iids are dropped first, so an expired iid is never a
    /// duplicate; without it (while loading the log) nothing expires.
    pub fn lookup(&mut self, key: &IdmpKey<'_>, now_ms: Option<u64>) -> Option<StreamId> {
        match self.check_or_record(key, now_ms, None) {
            Check::Duplicate(original) => Some(original),
            Check::Recorded { .. } | Check::Absent => None,
        }
    }

    /// XADD's one visit: [`Idmp::lookup`], and when the iid is not tracked and `id` is
    /// given, records that it added entry `id` (as [`Idmp::record_new`]) with the same
    /// probes, so the producer is found once.
    pub fn check_or_record(
        &mut self,
        key: &IdmpKey<'_>,
        now_ms: Option<u64>,
        id: Option<StreamId>,
    ) -> Check {
        let cut = now_ms.and_then(|now| cutoff(self.duration, now));
        let maxsize = self.maxsize as usize;
        if let Some(p) = self
            .producers
            .find_mut(key.pid_hash, |p| &p.pid[..] == key.pid)
        {
            if let Some(cut) = cut {
                let mut unlimited = usize::MAX;
                self.iids_tracked -= p.drop_front(&mut unlimited, |id| id.ms <= cut);
            }
            if !p.ring.is_empty() {
                return match p.find_or_push(key.iid, key.iid_hash, id, maxsize) {
                    Err(Some(original)) => Check::Duplicate(original),
                    Err(None) => Check::Absent,
                    Ok(evicted) => {
                        self.iids_tracked = self.iids_tracked + 1 - evicted;
                        self.iids_added += 1;
                        Check::Recorded {
                            new_producer: false,
                        }
                    }
                };
            }
            // Every iid had expired: the producer goes, and comes back new if recorded.
            self.remove_producer(key);
        }
        match id {
            Some(id) => Check::Recorded {
                new_producer: self.record_with(key, id, true),
            },
            None => Check::Absent,
        }
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
        self.record_with(&IdmpKey::new(pid, iid), id, count)
    }

    /// [`Idmp::record`] counted in `iids-added`, for a key already hashed (XADD on a
    /// stream that had no IDMP state yet).
    pub fn record_new(&mut self, key: &IdmpKey<'_>, id: StreamId) -> bool {
        self.record_with(key, id, true)
    }

    fn record_with(&mut self, key: &IdmpKey<'_>, id: StreamId, count: bool) -> bool {
        if count {
            self.iids_added += 1;
        }
        let maxsize = self.maxsize as usize;
        let mut created = false;
        let p = match self
            .producers
            .find_mut(key.pid_hash, |p| &p.pid[..] == key.pid)
        {
            Some(p) => p,
            None => {
                created = true;
                self.producers
                    .insert_unique(key.pid_hash, Producer::new(key.pid, key.pid_hash), |p| {
                        p.pid_hash
                    })
                    .into_mut()
            }
        };
        // An iid already tracked keeps its entry.
        if let Ok(evicted) = p.find_or_push(key.iid, key.iid_hash, Some(id), maxsize) {
            self.iids_tracked = self.iids_tracked + 1 - evicted;
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
        let mut gone_total = 0;
        self.producers.retain(|p| {
            if *budget == 0 {
                complete = false;
                return true;
            }
            *budget -= 1;
            gone_total += p.drop_front(budget, |id| id.ms <= cut);
            if p.ring.is_empty() {
                return false;
            }
            if p.ring.front().is_some_and(|s| s.id.ms <= cut) {
                complete = false;
            }
            true
        });
        self.iids_tracked -= gone_total;
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
            .map(|p| {
                let iids = p.ring.iter().map(|s| (&s.iid[..], s.id)).collect();
                (&p.pid[..], iids)
            })
            .collect();
        v.sort_by(|a, b| a.0.cmp(b.0));
        v
    }

    /// Approximate heap bytes (MEMORY USAGE): the struct, each producer (its pid, its
    /// table slot and ring) and per iid its slot, its index entry and the bytes of a
    /// boxed iid.
    pub fn memory_usage(&self) -> usize {
        let per_iid = std::mem::size_of::<Slot>() + std::mem::size_of::<u64>() + 1;
        let mut n = std::mem::size_of::<Idmp>();
        for p in &self.producers {
            n += p.pid.len() + std::mem::size_of::<Producer>() + 1;
            n += p.ring.capacity() * std::mem::size_of::<Slot>();
            for s in &p.ring {
                n += per_iid - std::mem::size_of::<Slot>();
                n += s.iid.heap_len();
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
        assert!(s.idmp().is_none());
    }

    #[test]
    fn duplicates_return_the_original_id() {
        let mut s = Idmp::new(100, 100);
        assert_eq!(s.lookup(&IdmpKey::new(b"p", b"i"), Some(0)), None);
        assert!(s.record(b"p", b"i", id(5), true));
        assert_eq!(s.lookup(&IdmpKey::new(b"p", b"i"), Some(6)), Some(id(5)));
        assert_eq!(
            s.lookup(&IdmpKey::new(b"q", b"i"), Some(6)),
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
        assert_eq!(s.lookup(&IdmpKey::new(b"p", b"1"), None), None);
        assert_eq!(s.lookup(&IdmpKey::new(b"p", b"2"), None), Some(id(3)));
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
        assert_eq!(s.lookup(&IdmpKey::new(b"p", b"a"), None), None);
        assert_eq!(s.lookup(&IdmpKey::new(b"p", b"b"), None), Some(id(2_000)));
        assert_eq!(s.pids_tracked(), 1, "q had only expired iids");
        assert_eq!(s.iids_tracked(), 1);
        // Lazy expiry at lookup time.
        assert_eq!(s.lookup(&IdmpKey::new(b"p", b"b"), Some(3_000)), None);
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

    /// One step of the model test.
    #[derive(Debug, Clone)]
    enum Op {
        /// XADD's visit: check, and record at the next entry ID when new.
        Add { pid: u8, iid: u8 },
        /// A bare lookup.
        Lookup { pid: u8, iid: u8 },
        /// The timer's expiry pass with this budget.
        Expire { budget: usize },
        /// The clock moves on by this many ms.
        Tick { ms: u64 },
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            6 => (0u8..3, 0u8..40).prop_map(|(pid, iid)| Op::Add { pid, iid }),
            2 => (0u8..3, 0u8..40).prop_map(|(pid, iid)| Op::Lookup { pid, iid }),
            1 => (0usize..20).prop_map(|budget| Op::Expire { budget }),
            2 => (0u64..700).prop_map(|ms| Op::Tick { ms }),
        ]
    }

    /// Long iids (boxed) for odd numbers, short (inline) for even ones.
    fn iid_bytes(iid: u8) -> Vec<u8> {
        if iid % 2 == 1 {
            vec![iid; 30]
        } else {
            vec![iid]
        }
    }

    proptest::proptest! {
        /// The tables against a model of per-producer queues: the same duplicates, the
        /// same counters, eviction beyond maxsize and expiry by entry time (duration 1 s).
        #[test]
        fn the_tables_behave_like_per_producer_queues(
            maxsize in 1i64..12,
            ops in proptest::collection::vec(op(), 1..300),
        ) {
            use std::collections::{BTreeMap, VecDeque};
            let mut state = Idmp::new(1, maxsize);
            let mut model: BTreeMap<u8, VecDeque<(Vec<u8>, StreamId)>> = BTreeMap::new();
            let (mut now, mut seq, mut added, mut dups) = (5_000u64, 0u64, 0u64, 0u64);
            let expired = |id: StreamId, now: u64| id.ms + 1000 <= now;
            for op in ops {
                match op {
                    Op::Add { pid, iid } | Op::Lookup { pid, iid } => {
                        let (p, i) = ([pid], iid_bytes(iid));
                        let key = IdmpKey::new(&p, &i);
                        let q = model.entry(pid).or_default();
                        while q.front().is_some_and(|(_, id)| expired(*id, now)) {
                            q.pop_front();
                        }
                        let want = q.iter().find(|(x, _)| *x == i).map(|(_, id)| *id);
                        let record = matches!(op, Op::Add { .. });
                        seq += 1;
                        let id = StreamId::new(now, seq);
                        let got = state.check_or_record(&key, Some(now), record.then_some(id));
                        match want {
                            Some(original) => {
                                proptest::prop_assert_eq!(got, Check::Duplicate(original));
                                dups += 1;
                                state.note_duplicate();
                            }
                            None if record => {
                                let recorded = matches!(got, Check::Recorded { .. });
                                proptest::prop_assert!(recorded, "{:?}", got);
                                added += 1;
                                if q.len() == maxsize as usize {
                                    q.pop_front();
                                }
                                q.push_back((i.clone(), id));
                            }
                            None => proptest::prop_assert_eq!(got, Check::Absent),
                        }
                        if q.is_empty() {
                            model.remove(&pid);
                        }
                    }
                    Op::Expire { budget } => {
                        let mut left = budget;
                        if state.expire(now, &mut left) {
                            for q in model.values_mut() {
                                q.retain(|(_, id)| !expired(*id, now));
                            }
                            model.retain(|_, q| !q.is_empty());
                        }
                    }
                    Op::Tick { ms } => now += ms,
                }
                // A partial expiry pass leaves the model ahead; compare what must agree.
                if matches!(op, Op::Expire { .. }) {
                    continue;
                }
                let live: u64 = model
                    .values()
                    .flat_map(|q| q.iter())
                    .filter(|(_, id)| !expired(*id, now))
                    .count() as u64;
                proptest::prop_assert!(state.iids_tracked() >= live);
                proptest::prop_assert_eq!((state.iids_added(), state.iids_duplicates()), (added, dups));
                for p in &state.producers {
                    proptest::prop_assert_eq!(p.index.len(), p.ring.len());
                    proptest::prop_assert!(!p.ring.is_empty());
                    proptest::prop_assert!(p.ring.len() <= maxsize as usize);
                }
                let sum: u64 = state.producers.iter().map(|p| p.ring.len() as u64).sum();
                proptest::prop_assert_eq!(sum, state.iids_tracked());
            }
        }
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
