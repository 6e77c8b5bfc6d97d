//! Eviction at `maxmemory` (Redis's `evict.c`) and the per-key access clock that the
//! LRU and LFU policies read (Redis's 24-bit `robj.lru` field, `object.c`).
//!
//! # The access clock
//!
//! Every key's dict slot carries 24 bits (core/dict.rs draws the slot). What they mean
//! depends on `maxmemory-policy`, exactly as in Redis:
//!
//! ```text
//!  LRU (every policy but *-lfu)        LFU (allkeys-lfu, volatile-lfu)
//!  +------------------------------+    +----------------+--------+
//!  | last access, unix seconds    |    | last decrement | LOG_C  |
//!  | modulo 2^24 (the LRU clock)  |    | minutes % 2^16 | 0..255 |
//!  +------------------------------+    +----------------+--------+
//!              24 bits                       16 bits       8 bits
//! ```
//!
//! LRU: a lookup stores the clock now ([`lru_clock`]); the idle time is the distance to
//! the clock now, wrapping once ([`idle_ms`]), so OBJECT IDLETIME is exact to the
//! second for 194 days. LFU: `LOG_C` is a logarithmic access counter: a lookup first
//! decays it by one for each `lfu-decay-time` minutes since the last decrement, then
//! increments it with probability `1 / ((LOG_C - 5) * lfu-log-factor + 1)`; new keys
//! start at [`LFU_INIT_VAL`] so that they survive long enough to be counted. Switching
//! policy at run time reinterprets the bits, as Redis does (its OBJECT FREQ/IDLETIME
//! errors say so).
//!
//! Which lookups count as an access follows Redis 7.0's `lookupKey`: every read and
//! write lookup of an existing key, except those done with `LOOKUP_NOTOUCH` (TYPE,
//! EXISTS, TTL/PTTL, OBJECT, SCAN's TYPE filter) and, since Redis 7.2, every lookup of
//! a client in CLIENT NO-TOUCH mode other than TOUCH's. Since a Redis command looks up
//! each of its keys once (a key named twice, twice), streamd touches the command's key
//! positions right before running it ([`Core::touch_keys`]), which keeps the clock out
//! of every handler. Overwriting a value keeps its LFU counter (Redis's `dbSetValue`),
//! and under LRU counts as an access; a new key starts fresh.
//!
//! # Eviction
//!
//! Before each command while `maxmemory` is set ([`Core::perform_evictions`], called
//! where Redis's `processCommand` calls `performEvictions`), and in a background task
//! started by CONFIG SET maxmemory (Redis's `evictionTimeProc`): while the memory in
//! use is over the limit, pick a key by the policy and delete it as an eviction (the
//! `evicted` event, `evicted_keys`, WATCH, blocked readers, `DEL` to the log and the
//! replicas). The LRU, LFU and TTL policies sample `maxmemory-samples` keys of every
//! database into a pool of the [`EVPOOL_SIZE`] best candidates seen so far, kept across
//! calls, and evict the best one still present; the random policies take a random key
//! from the databases in turn. After 16 keys, the loop stops once its time is up
//! (`maxmemory-eviction-tenacity`) and leaves the rest to the background task. Nothing
//! left to evict (or `noeviction`) makes the command that would grow memory fail with
//! `-OOM`. Replicas (with `replica-ignore-maxmemory yes`), a loading server, a busy
//! script and paused clients never evict.

use super::{Core, lazyfree, notify};
use bytes::Bytes;
use std::time::Instant;

/// The largest LRU clock value (Redis's `LRU_CLOCK_MAX`, 24 bits).
pub const LRU_CLOCK_MAX: u32 = (1 << 24) - 1;

/// Milliseconds per LRU clock tick (Redis's `LRU_CLOCK_RESOLUTION`).
pub const LRU_CLOCK_RESOLUTION: u64 = 1000;

/// The LFU counter a new key starts with (Redis's `LFU_INIT_VAL`).
pub const LFU_INIT_VAL: u8 = 5;

/// Candidates kept between evictions (Redis's `EVPOOL_SIZE`).
pub const EVPOOL_SIZE: usize = 16;

/// Keys of one command touched together, their lookups prefetched as a group
/// ([`Core::touch_keys`]); a command with more is touched in groups of this many.
const TOUCH_BATCH: usize = 32;

/// The LRU clock at `now_ms`: unix seconds modulo 2^24 (Redis's `getLRUClock`).
pub fn lru_clock(now_ms: u64) -> u32 {
    ((now_ms / LRU_CLOCK_RESOLUTION) & u64::from(LRU_CLOCK_MAX)) as u32
}

/// Milliseconds since the access recorded as `lru`, the clock having wrapped at most
/// once (Redis's `estimateObjectIdleTime`).
pub fn idle_ms(lru: u32, now_ms: u64) -> u64 {
    let clock = u64::from(lru_clock(now_ms));
    let lru = u64::from(lru & LRU_CLOCK_MAX);
    if clock >= lru {
        (clock - lru) * LRU_CLOCK_RESOLUTION
    } else {
        (clock + (u64::from(LRU_CLOCK_MAX) - lru)) * LRU_CLOCK_RESOLUTION
    }
}

/// LFU's time: unix minutes modulo 2^16 (Redis's `LFUGetTimeInMinutes`).
pub fn lfu_minutes(now_ms: u64) -> u32 {
    ((now_ms / 1000 / 60) & 0xFFFF) as u32
}

/// Minutes since the decrement time `ldt`, wrapping once (Redis's `LFUTimeElapsed`).
fn lfu_elapsed(ldt: u32, now_ms: u64) -> u32 {
    let now = lfu_minutes(now_ms);
    if now >= ldt {
        now - ldt
    } else {
        65535 - ldt + now
    }
}

/// The LFU counter of `clock` after the decay due by `now_ms`, without storing it
/// (Redis's `LFUDecrAndReturn`).
pub fn lfu_decayed(clock: u32, now_ms: u64, decay_time: u32) -> u8 {
    let ldt = (clock >> 8) & 0xFFFF;
    let counter = clock & 255;
    let periods = lfu_elapsed(ldt, now_ms)
        .checked_div(decay_time)
        .unwrap_or(0);
    counter.saturating_sub(periods) as u8
}

/// `counter` after one access, given a uniform `r` in `[0, 1]` (Redis's `LFULogIncr`).
pub fn lfu_log_incr(counter: u8, log_factor: u32, r: f64) -> u8 {
    if counter == 255 {
        return 255;
    }
    let base = f64::from(counter.saturating_sub(LFU_INIT_VAL));
    let p = 1.0 / (base * f64::from(log_factor) + 1.0);
    if r < p { counter + 1 } else { counter }
}

/// The settings and state of eviction (the cached `maxmemory-*` and `lfu-*` settings,
/// the candidate pool and the random state).
#[derive(Debug)]
pub struct Eviction {
    /// `maxmemory-policy`.
    pub policy: Policy,
    /// `maxmemory-samples`.
    pub samples: usize,
    /// `maxmemory-eviction-tenacity` (0..=100).
    pub tenacity: u32,
    /// `lfu-log-factor`.
    pub lfu_log_factor: u32,
    /// `lfu-decay-time` (minutes; 0 = never decay).
    pub lfu_decay_time: u32,
    /// The best candidates so far, ascending by score (best last), at most
    /// [`EVPOOL_SIZE`]. Entries may name keys deleted since (Redis's "ghosts").
    pool: Vec<PoolEntry>,
    /// The database the random policies try next.
    next_db: usize,
    /// xorshift state for sampling and LFU increments.
    rng: u64,
    /// True while the background eviction task is asked to go on (Redis's
    /// `isEvictionProcRunning`).
    pub running: bool,
    /// Since when memory has been over the limit without eviction resolving it
    /// (INFO `current_eviction_exceeded_time`).
    pub exceeded_since: Option<Instant>,
    /// Microseconds over the limit, summed (INFO `total_eviction_exceeded_time`).
    pub exceeded_total_us: u64,
}

/// A candidate of the pool.
#[derive(Debug, Clone)]
struct PoolEntry {
    /// Higher is a better candidate: idle ms (LRU), 255 - counter (LFU), or
    /// `u64::MAX - deadline` (TTL).
    score: u64,
    /// The key.
    key: Bytes,
    /// Its database.
    db: usize,
}

impl Default for Eviction {
    fn default() -> Eviction {
        Eviction {
            policy: Policy::NoEviction,
            samples: 5,
            tenacity: 10,
            lfu_log_factor: 10,
            lfu_decay_time: 1,
            pool: Vec::with_capacity(EVPOOL_SIZE),
            next_db: 0,
            rng: 0x853c_49e6_748f_ea9b ^ u64::from(std::process::id()),
            running: false,
            exceeded_since: None,
            exceeded_total_us: 0,
        }
    }
}

/// `maxmemory-policy`, in Redis's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// `volatile-lru`
    VolatileLru,
    /// `volatile-lfu`
    VolatileLfu,
    /// `volatile-random`
    VolatileRandom,
    /// `volatile-ttl`
    VolatileTtl,
    /// `allkeys-lru`
    AllkeysLru,
    /// `allkeys-lfu`
    AllkeysLfu,
    /// `allkeys-random`
    AllkeysRandom,
    /// `noeviction`
    NoEviction,
}

impl Policy {
    /// The policy called `name` (lower case); `noeviction` for anything else.
    pub fn from_name(name: &str) -> Policy {
        match name {
            "volatile-lru" => Policy::VolatileLru,
            "volatile-lfu" => Policy::VolatileLfu,
            "volatile-random" => Policy::VolatileRandom,
            "volatile-ttl" => Policy::VolatileTtl,
            "allkeys-lru" => Policy::AllkeysLru,
            "allkeys-lfu" => Policy::AllkeysLfu,
            "allkeys-random" => Policy::AllkeysRandom,
            _ => Policy::NoEviction,
        }
    }

    /// True for the LFU policies (the clock holds a counter, not a time).
    pub fn is_lfu(self) -> bool {
        matches!(self, Policy::VolatileLfu | Policy::AllkeysLfu)
    }

    /// True for the LRU and LFU policies, which read every key's clock (Redis's
    /// `MAXMEMORY_FLAG_NO_SHARED_INTEGERS`).
    pub fn tracks_access(self) -> bool {
        self.is_lru() || self.is_lfu()
    }

    /// True for the LRU policies.
    fn is_lru(self) -> bool {
        matches!(self, Policy::VolatileLru | Policy::AllkeysLru)
    }

    /// True when any key may go, not only keys with a TTL.
    fn allkeys(self) -> bool {
        matches!(
            self,
            Policy::AllkeysLru | Policy::AllkeysLfu | Policy::AllkeysRandom
        )
    }
}

/// What [`Core::perform_evictions`] found (Redis's `EVICT_OK`/`RUNNING`/`FAIL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvictResult {
    /// Under the limit (or evicting is not allowed now: nothing to refuse).
    Ok,
    /// Still over the limit; the background task goes on evicting.
    Running,
    /// Over the limit with nothing left to evict: commands that grow memory fail.
    Fail,
}

impl Eviction {
    /// Switches to `policy`, emptying the candidate pool (its scores meant something
    /// else under the old policy).
    pub fn set_policy(&mut self, policy: Policy) {
        self.policy = policy;
        self.pool.clear();
    }

    /// A uniform random number (xorshift64*).
    fn next_random(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// The clock a key's slot starts with at `now_ms`: the LRU clock, or LFU's "now,
    /// counter [`LFU_INIT_VAL`]" (Redis's `createObject`).
    pub fn fresh_clock(&self, now_ms: u64) -> u32 {
        if self.policy.is_lfu() {
            (lfu_minutes(now_ms) << 8) | u32::from(LFU_INIT_VAL)
        } else {
            lru_clock(now_ms)
        }
    }

    /// The function a lookup at `now_ms` applies to the key's clock (Redis's
    /// `updateLFU`, or storing `LRU_CLOCK()`). Draws its random number now.
    pub fn toucher(&mut self, now_ms: u64) -> impl FnOnce(u32) -> u32 + use<> {
        let lfu = self.policy.is_lfu();
        let (factor, decay) = (self.lfu_log_factor, self.lfu_decay_time);
        let r = if lfu {
            (self.next_random() >> 11) as f64 / (1u64 << 53) as f64
        } else {
            0.0
        };
        move |clock| {
            if lfu {
                let counter = lfu_log_incr(lfu_decayed(clock, now_ms, decay), factor, r);
                (lfu_minutes(now_ms) << 8) | u32::from(counter)
            } else {
                lru_clock(now_ms)
            }
        }
    }

    /// The clock RESTORE's `FREQ`/`IDLETIME` give a key (Redis's
    /// `objectSetLRUOrLFU`), or `None` when the option does not apply to the policy
    /// (the key keeps its fresh clock).
    pub fn restored_clock(
        &self,
        freq: Option<u8>,
        idle_secs: Option<u64>,
        now_ms: u64,
    ) -> Option<u32> {
        if self.policy.is_lfu() {
            freq.map(|f| (lfu_minutes(now_ms) << 8) | u32::from(f))
        } else {
            let idle = idle_secs?;
            let clock = i64::from(lru_clock(now_ms));
            let idle =
                i64::try_from(idle.saturating_mul(1000) / LRU_CLOCK_RESOLUTION).unwrap_or(i64::MAX);
            let mut abs = clock.saturating_sub(idle);
            if abs < 0 {
                abs = (clock + i64::from(LRU_CLOCK_MAX / 2)) % i64::from(LRU_CLOCK_MAX);
            }
            Some(abs as u32)
        }
    }

    /// The time budget of one eviction run (Redis's `evictionTimeLimitUs`): 50 µs per
    /// tenacity step up to 10, then 15% more per step, unlimited at 100.
    fn time_limit_us(&self) -> u64 {
        match self.tenacity {
            t if t <= 10 => 50 * u64::from(t),
            t if t < 100 => (500.0 * 1.15f64.powi(t as i32 - 10)) as u64,
            _ => u64::MAX,
        }
    }

    /// Offers a sampled key to the pool (Redis's `evictionPoolPopulate` insertion):
    /// kept if the pool has room or it beats the worst candidate, which then leaves.
    fn offer(&mut self, score: u64, key: &[u8], db: usize) {
        let full = self.pool.len() >= EVPOOL_SIZE;
        // First position whose candidate scores at least as well.
        let at = self.pool.partition_point(|e| e.score < score);
        if full && at == 0 {
            return;
        }
        // The same key again (sampled twice): keep the newer score only.
        if let Some(i) = self.pool.iter().position(|e| e.db == db && e.key == key) {
            self.pool.remove(i);
            let at = self.pool.partition_point(|e| e.score < score);
            self.pool.insert(at, entry(score, key, db));
            return;
        }
        if full {
            // Drop the worst (leftmost) and insert just before `at`.
            self.pool.remove(0);
            self.pool.insert(at - 1, entry(score, key, db));
        } else {
            self.pool.insert(at, entry(score, key, db));
        }
    }
}

fn entry(score: u64, key: &[u8], db: usize) -> PoolEntry {
    PoolEntry {
        score,
        key: Bytes::copy_from_slice(key),
        db,
    }
}

/// True for the commands whose key lookups do not count as an access (Redis's
/// `LOOKUP_NOTOUCH` users, and commands that never look their keys up: DEL and UNLINK
/// delete, WATCH only records the name, scripts look up what they call).
fn no_touch(name: &str) -> bool {
    matches!(
        name,
        "type"
            | "exists"
            | "ttl"
            | "pttl"
            | "expiretime"
            | "pexpiretime"
            | "object|encoding"
            | "object|freq"
            | "object|idletime"
            | "object|refcount"
            | "memory|usage"
            | "del"
            | "unlink"
            | "watch"
            | "eval"
            | "evalsha"
            | "eval_ro"
            | "evalsha_ro"
            | "fcall"
            | "fcall_ro"
    )
}

impl Core {
    /// Counts the command's keys as accessed, before it runs: each key position of an
    /// existing key updates its clock once (a key named twice twice), as each of
    /// Redis's `lookupKey` calls does; a key the command creates starts fresh instead.
    /// Skipped for the [`no_touch`] commands and for a client in CLIENT NO-TOUCH mode
    /// (but for TOUCH).
    pub(super) fn touch_keys(
        &mut self,
        client: &super::client::Client,
        spec: &super::command::CommandSpec,
        argv: &crate::resp::Argv,
        now_ms: u64,
    ) {
        if spec.first_key == 0 && spec.flags & super::command::flags::MOVABLEKEYS == 0 {
            return;
        }
        if (client.no_touch && spec.name != "touch") || no_touch(spec.name) {
            return;
        }
        let Some(db) = self.dbs.get_mut(client.db) else {
            return;
        };
        if db.keys.is_empty() {
            return;
        }
        let evict = &mut self.evict;
        // The keys at `positions` (up to TOUCH_BATCH), in order. Several keys: every
        // bucket, then every slot asked for before the first is touched, so that their
        // cache misses overlap (core/prefetch.rs); each key is hashed once.
        let mut touch = |positions: &[usize]| {
            if let [i] = positions {
                let hash = db.keys.hash_key(&argv[*i]);
                db.keys
                    .get_mut_touch(hash, &argv[*i], evict.toucher(now_ms));
                return;
            }
            let mut hashes = [0u64; TOUCH_BATCH];
            for (hash, &i) in hashes.iter_mut().zip(positions) {
                *hash = db.keys.hash_key(&argv[i]);
                db.keys.prefetch_bucket(*hash);
            }
            for &hash in &hashes[..positions.len()] {
                db.keys.prefetch_slot(hash);
            }
            for (&hash, &i) in hashes.iter().zip(positions) {
                db.keys.get_mut_touch(hash, &argv[i], evict.toucher(now_ms));
            }
        };
        if spec.flags & super::command::flags::MOVABLEKEYS != 0 {
            let mut positions = spec.key_positions(argv);
            positions.retain(|&i| i < argv.len());
            for chunk in positions.chunks(TOUCH_BATCH) {
                touch(chunk);
            }
            return;
        }
        let argc = argv.len() as i32;
        let last = if spec.last_key < 0 {
            argc + spec.last_key
        } else {
            spec.last_key
        };
        if spec.first_key > 0 && spec.first_key >= last.min(argc - 1) {
            // One key (or none): nothing to overlap.
            if spec.first_key == last.min(argc - 1) {
                touch(&[spec.first_key as usize]);
            }
            return;
        }
        let mut batch = [0usize; TOUCH_BATCH];
        let mut n = 0;
        let mut i = spec.first_key;
        while i > 0 && i <= last.min(argc - 1) {
            batch[n] = i as usize;
            n += 1;
            if n == TOUCH_BATCH {
                touch(&batch);
                n = 0;
            }
            i += spec.key_step.max(1);
        }
        if n > 0 {
            touch(&batch[..n]);
        }
    }

    /// True when this server may evict now (Redis's `isSafeToPerformEvictions`): not
    /// loading, no script suspended past the busy threshold, not a replica that
    /// ignores maxmemory, no clients paused.
    fn safe_to_evict(&self) -> bool {
        if self.loading || self.busy.is_some() {
            return false;
        }
        if self.repl.is_replica() && self.config.get_bool("replica-ignore-maxmemory") {
            return false;
        }
        !self.repl.pause_writes
    }

    /// Memory over `maxmemory` that eviction should free, or `None` when within it
    /// (Redis's `getMaxmemoryState`). Replica output buffers are not counted (they
    /// would make each propagated DEL call for another eviction).
    pub fn memory_to_free(&self) -> Option<usize> {
        let max = usize::try_from(self.limits.maxmemory).unwrap_or(usize::MAX);
        if max == 0 {
            return None;
        }
        let used = self.used_memory();
        if used <= max {
            return None;
        }
        let used = used.saturating_sub(self.mem_not_counted_for_evict());
        (used > max).then(|| used - max)
    }

    /// Memory left out of the eviction count (INFO `mem_not_counted_for_evict`):
    /// what replicas' output buffers hold beyond the backlog.
    pub fn mem_not_counted_for_evict(&self) -> usize {
        let backlog = self.repl_backlog_size();
        self.repl
            .backlog
            .as_ref()
            .map_or(0, |b| b.histlen().saturating_sub(backlog) as usize)
    }

    /// Evicts keys until memory is within `maxmemory`, nothing is left to evict, or
    /// the time budget is spent (Redis's `performEvictions`; see the module doc).
    pub fn perform_evictions(&mut self) -> EvictResult {
        if !self.safe_to_evict() {
            return EvictResult::Ok;
        }
        let result = self.evict_round();
        match result {
            EvictResult::Running | EvictResult::Fail => {
                self.evict.exceeded_since.get_or_insert_with(Instant::now);
            }
            EvictResult::Ok => {
                if let Some(since) = self.evict.exceeded_since.take() {
                    self.evict.exceeded_total_us += since.elapsed().as_micros() as u64;
                }
            }
        }
        result
    }

    fn evict_round(&mut self) -> EvictResult {
        let Some(to_free) = self.memory_to_free() else {
            return EvictResult::Ok;
        };
        if self.evict.policy == Policy::NoEviction {
            return EvictResult::Fail;
        }
        let limit_us = self.evict.time_limit_us();
        let started = Instant::now();
        let mut freed: i64 = 0;
        let mut keys_freed = 0u64;
        while freed < to_free as i64 {
            let Some((db, key)) = self.pick_victim() else {
                return EvictResult::Fail;
            };
            let before = self.used_memory() as i64;
            match self.dbs[db].remove(&key) {
                Some(value) if self.lazy.eviction && lazyfree::is_big(&value) => {
                    // Counted as freed now: the background thread gives the memory back
                    // soon, and one wave must not evict more keys meanwhile.
                    freed += (key.len() + value.memory_usage()) as i64;
                    self.lazyfree.free_value(value);
                }
                removed => {
                    drop(removed);
                    freed += before - self.used_memory() as i64;
                }
            }
            self.evicted(db, &key);
            keys_freed += 1;
            if keys_freed.is_multiple_of(16) && started.elapsed().as_micros() as u64 > limit_us {
                self.start_eviction_task();
                break;
            }
        }
        if self.evict.running {
            EvictResult::Running
        } else {
            EvictResult::Ok
        }
    }

    /// Asks the background task to keep evicting (Redis's `startEvictionTimeProc`).
    pub fn start_eviction_task(&mut self) {
        if !self.evict.running {
            self.evict.running = true;
            self.eviction_driver.notify_one();
        }
    }

    /// The side effects of evicting `key` of `db`, already removed: `evicted_keys`,
    /// WATCH and blocked readers, the `evicted` event, and `DEL key` to the log and
    /// the replicas.
    fn evicted(&mut self, db: usize, key: &[u8]) {
        self.stats.evicted_keys += 1;
        self.key_deleted(db, key);
        self.notify_keyspace_event(notify::class::EVICTED, "evicted", key, db);
        self.propagate(db, &[b"DEL".as_slice(), key]);
    }

    /// The key to evict next, by the policy, and its database; `None` when there is
    /// none left.
    fn pick_victim(&mut self) -> Option<(usize, Bytes)> {
        let policy = self.evict.policy;
        let allkeys = policy.allkeys();
        if matches!(policy, Policy::AllkeysRandom | Policy::VolatileRandom) {
            let n = self.dbs.len();
            for _ in 0..n {
                self.evict.next_db = (self.evict.next_db + 1) % n;
                let db = &self.dbs[self.evict.next_db];
                let seed = self.evict.next_random();
                let key = if allkeys {
                    db.keys.random_key(seed)
                } else {
                    db.expires.random_key(seed)
                };
                if let Some(k) = key {
                    return Some((self.evict.next_db, Bytes::copy_from_slice(k)));
                }
            }
            return None;
        }
        let now_ms = super::unix_ms();
        loop {
            let mut total = 0;
            for i in 0..self.dbs.len() {
                total += self.populate_pool(i, now_ms);
            }
            if total == 0 {
                return None;
            }
            // Best candidate first; ghosts (deleted since) are dropped on the way.
            while let Some(e) = self.evict.pool.pop() {
                let db = &self.dbs[e.db];
                let present = if allkeys {
                    db.keys.contains_key(&e.key)
                } else {
                    db.expires.contains_key(&e.key)
                };
                if present {
                    return Some((e.db, e.key));
                }
            }
        }
    }

    /// Samples `maxmemory-samples` keys of database `i` into the pool; returns how
    /// many keys the sampled table holds (0: nothing to evict there).
    fn populate_pool(&mut self, i: usize, now_ms: u64) -> usize {
        let policy = self.evict.policy;
        let decay = self.evict.lfu_decay_time;
        let samples = self.evict.samples;
        let mut rng = self.evict.next_random();
        let db = &self.dbs[i];
        let mut found: Vec<(u64, Bytes)> = Vec::with_capacity(samples);
        let score = |clock: u32| {
            if policy.is_lfu() {
                255 - u64::from(lfu_decayed(clock, now_ms, decay))
            } else {
                idle_ms(clock, now_ms)
            }
        };
        let total = if policy.allkeys() {
            db.keys.sample(samples, &mut rng, |k, _, clock| {
                found.push((score(clock), Bytes::copy_from_slice(k)));
            });
            db.keys.len()
        } else {
            db.expires.sample(samples, &mut rng, |k, &at, _| {
                let s = if policy == Policy::VolatileTtl {
                    u64::MAX - at
                } else if policy.is_lru() || policy.is_lfu() {
                    db.keys.clock(k).map_or(u64::MAX, score)
                } else {
                    0
                };
                found.push((s, Bytes::copy_from_slice(k)));
            });
            db.expires.len()
        };
        for (s, k) in found {
            self.evict.offer(s, &k, i);
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_time_wraps_once() {
        let now = 1_700_000_000_000u64;
        let c = lru_clock(now);
        assert_eq!(idle_ms(c, now), 0);
        assert_eq!(idle_ms(lru_clock(now - 5_000), now), 5_000);
        // A clock "from the future" reads as having wrapped.
        let ahead = (c + 10) & LRU_CLOCK_MAX;
        assert_eq!(
            idle_ms(ahead, now),
            (u64::from(c) + u64::from(LRU_CLOCK_MAX) - u64::from(ahead)) * 1000
        );
    }

    #[test]
    fn lfu_counter_decays_per_period_and_grows_logarithmically() {
        let now = 60_000 * 1000;
        let clock = (lfu_minutes(now) << 8) | 20;
        assert_eq!(lfu_decayed(clock, now, 1), 20);
        assert_eq!(lfu_decayed(clock, now + 3 * 60_000, 1), 17);
        assert_eq!(lfu_decayed(clock, now + 3 * 60_000, 0), 20, "0 = no decay");
        assert_eq!(lfu_decayed(clock, now + 100 * 60_000, 1), 0);
        // At or below LFU_INIT_VAL every access counts.
        assert_eq!(lfu_log_incr(LFU_INIT_VAL, 10, 0.999), LFU_INIT_VAL + 1);
        assert_eq!(lfu_log_incr(255, 10, 0.0), 255);
        // Above it, the probability is 1 / ((c - 5) * factor + 1).
        assert_eq!(lfu_log_incr(6, 10, 0.05), 7);
        assert_eq!(lfu_log_incr(6, 10, 0.1), 6);
    }

    #[test]
    fn tenacity_maps_to_redis_time_limits() {
        let mut e = Eviction::default();
        for (t, us) in [(0, 0), (10, 500), (11, 575), (100, u64::MAX)] {
            e.tenacity = t;
            assert_eq!(e.time_limit_us(), us, "tenacity {t}");
        }
    }

    #[test]
    fn the_pool_keeps_the_best_sixteen_in_order() {
        let mut e = Eviction::default();
        for i in 0..40u64 {
            let score = (i * 37) % 41;
            e.offer(score, format!("k{score}").as_bytes(), 0);
        }
        assert_eq!(e.pool.len(), EVPOOL_SIZE);
        let scores: Vec<u64> = e.pool.iter().map(|p| p.score).collect();
        let mut want: Vec<u64> = (0..40u64).map(|i| (i * 37) % 41).collect();
        want.sort_unstable();
        assert_eq!(scores, want[want.len() - EVPOOL_SIZE..]);
        // A worse candidate than all is not taken; a better one pushes the worst out.
        e.offer(0, b"low", 0);
        assert!(e.pool.iter().all(|p| p.key.as_ref() != b"low"));
        e.offer(1000, b"high", 0);
        assert_eq!(e.pool.last().map(|p| p.key.as_ref()), Some(&b"high"[..]));
        assert_eq!(e.pool.len(), EVPOOL_SIZE);
    }

    #[test]
    fn restore_sets_the_clock_for_the_policy() {
        let mut e = Eviction::default();
        let now = 1_700_000_000_000u64;
        let c = e.restored_clock(None, Some(100), now).unwrap_or_default();
        assert_eq!(idle_ms(c, now), 100_000);
        assert_eq!(e.restored_clock(Some(9), None, now), None);
        e.policy = Policy::AllkeysLfu;
        assert_eq!(e.restored_clock(None, Some(100), now), None);
        let c = e.restored_clock(Some(9), None, now).unwrap_or_default();
        assert_eq!(lfu_decayed(c, now, 1), 9);
    }
}
