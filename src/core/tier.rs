//! Tiering's core side (DESIGN.md §13, `docs/tiering.md`): the mover that turns the
//! oldest stream nodes cold when hot stream bytes pass `stream-tiering-hot-bytes`, the
//! loader that reads cold nodes back, and the garbage collection of segment files.
//!
//! ```text
//!  cron ─▶ hot bytes over the budget? ─▶ store.append(oldest sealed nodes) ─▶ begin_sync
//!                                                         │ write + fsync on a pool thread
//!  cron ◀─────────────────────────────────────────────────┘
//!   └▶ finish_sync ─▶ node unchanged? ─▶ Stream::make_cold ─▶ log STREAMD.TIER (AOF only)
//! ```
//!
//! **Durability.** A location is named by the log only after the segment sync covering
//! it completed, so replaying a log never meets a record that was not on disk. The log
//! record `STREAMD.TIER <key> <master> <segment> <offset> <len> <crc>` makes the replay
//! turn the same node cold at the same point, so a restart never holds more than the
//! budget; snapshots write cold nodes as `STREAMD.COLD` stubs (persist/snapshot.rs).
//!
//! **Garbage.** A segment may be unlinked only when no stream in memory names it, no
//! file a restart would load names it (the last completed save that a restart loads,
//! and the log records since it started), and no background save or full sync is
//! reading. The mover asks for a log rewrite when unreferenced but still protected
//! segments pile up, so trimming history ends as unlinked files.

mod park;

pub use park::{Parked, ParkedRead};

use super::Core;
use crate::stream::StreamId;
use crate::stream::cold::{self, NodeLocation};
use crate::stream::listpack::Listpack;
use crate::tier::{ReadPool, SegmentStore, StoreOptions, TierError, segment};
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// The log record of a move.
pub const TIER_RECORD: &[u8] = b"STREAMD.TIER";

/// The log record of a compaction's copy: `STREAMD.RELOC <key> <master> <segment>
/// <offset> <len> <crc>` points a cold node at its record's new location.
pub const RELOC_RECORD: &[u8] = b"STREAMD.RELOC";

/// A sealed segment whose live records take less than this share of it is compacted.
const COMPACT_LIVE_SHARE: f64 = 0.5;

/// Node bytes moved out between two calls of [`crate::alloc::release_free_memory`].
const RELEASE_AFTER_BYTES: usize = 16 << 20;

/// Segment files are sealed at this size: small enough that trimming history frees
/// disk in steps of 16 MiB, large enough that a 100 GB history is ~6,000 files.
const SEGMENT_BYTES: u64 = 16 << 20;

/// Most node bytes one mover round appends before its sync: small, so a round's copies
/// into the store's buffer (on the core thread; the `pwrite`s and the fsync run on a pool
/// thread) stay well under a millisecond; the mover runs every 10 ms
/// (`server::spawn_tier_mover`), up to ~200 MB/s.
const MOVE_BATCH_BYTES: usize = 2 << 20;

/// How long a candidate's measured bytes per hot node are trusted before its hot nodes
/// are walked again (between walks, hot bytes are its hot node count times that).
const HOT_BYTES_REMEASURE: std::time::Duration = std::time::Duration::from_secs(1);

/// Warm copies of cold nodes kept at most, as a share of the hot budget (1/8), and at
/// least this many bytes.
const WARM_MIN_BYTES: usize = 1 << 20;

/// Unreferenced segment bytes still named by the durable files that make the mover ask
/// for a log rewrite (or a snapshot), at least.
const GARBAGE_REWRITE_BYTES: u64 = SEGMENT_BYTES / 2;

/// Least time between two collection passes (each walks every cold stub of every
/// stream).
const COLLECT_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// Least time between two rewrites the collector asks for.
const REWRITE_ASK_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);

/// The saves that name segments, one of each kind at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TierSave {
    /// A snapshot (SAVE, BGSAVE).
    Snapshot = 0,
    /// A log rewrite's new base.
    Rewrite = 1,
}

/// A segment sync in flight: the sync, handed back once its fsync completed.
type SyncAnswer = oneshot::Receiver<Result<crate::tier::PendingSync, TierError>>;

/// A pool answer if it came: `None` while it has not, the pool's going away an error.
fn poll_answer<T>(
    rx: &mut oneshot::Receiver<Result<T, TierError>>,
) -> Option<Result<T, TierError>> {
    match rx.try_recv() {
        Ok(r) => Some(r),
        Err(oneshot::error::TryRecvError::Empty) => None,
        Err(oneshot::error::TryRecvError::Closed) => Some(Err(TierError::PoolClosed)),
    }
}

/// What INFO's tiering section shows.
#[derive(Debug, Default, Clone)]
pub struct TierStats {
    /// Nodes moved to segments.
    pub nodes_moved: u64,
    /// Node bytes moved to segments.
    pub bytes_moved: u64,
    /// Moves dropped because the node changed while its copy was written.
    pub moves_abandoned: u64,
    /// Mover rounds that failed (I/O).
    pub move_errors: u64,
    /// Commands parked for cold nodes.
    pub parked_commands: u64,
    /// Nodes read back off the core thread.
    pub pool_reads: u64,
    /// Bytes read back off the core thread.
    pub pool_read_bytes: u64,
    /// Nodes read ahead of paged scans (a part of `pool_reads`).
    pub readahead_reads: u64,
    /// Segment files unlinked.
    pub segments_unlinked: u64,
    /// Log rewrites or snapshots asked for to free segments.
    pub rewrites_requested: u64,
    /// Segments compacted (their live records copied to the active segment).
    pub compactions: u64,
    /// Node bytes copied by compactions.
    pub compacted_bytes: u64,
}

/// A compaction in flight: the live records of one sealed segment are read on the pool,
/// appended to the active segment, synced, and their stubs repointed.
struct Compaction {
    /// The segment being emptied.
    segment: u64,
    /// Database, key, master ID and old location of each live record, in read order.
    targets: Vec<(usize, Bytes, StreamId, NodeLocation)>,
    /// Where it stands.
    phase: CompactionPhase,
}

/// The two waits of a compaction.
enum CompactionPhase {
    /// The old records are being read.
    Reading(oneshot::Receiver<Result<Vec<crate::tier::ColdNode>, TierError>>),
    /// The copies are being synced; their new locations, in target order.
    Syncing(SyncAnswer, Vec<NodeLocation>),
}

/// A mover round waiting for its sync.
struct PendingMove {
    /// The nodes appended: database, key, master ID, the node as appended, location.
    moves: Vec<(usize, Bytes, StreamId, Listpack, NodeLocation)>,
    /// The sync, handed back when it completed.
    rx: SyncAnswer,
}

/// Tiering's state in the core.
#[derive(Default)]
pub struct Tiering {
    /// The segment store, once opened (tiering on, or segments found at start).
    store: Option<SegmentStore>,
    /// Read threads (syncs, parked commands' reads).
    pool: Option<ReadPool>,
    /// Streams with more than one hot node, by database: the mover's candidates, each
    /// with its bytes per hot node as last measured and when.
    candidates: BTreeMap<usize, HashMap<Bytes, (usize, Option<std::time::Instant>)>>,
    /// The mover round in flight.
    pending: Option<PendingMove>,
    /// The compaction in flight.
    compaction: Option<Compaction>,
    /// Segments the files a restart would load may name.
    protected: BTreeSet<u64>,
    /// Segments named at the start of the save in progress of each kind (and by the
    /// mover since).
    save_refs: [Option<BTreeSet<u64>>; 2],
    /// Saves, rewrites and full syncs running that may read or name segments.
    readers: u32,
    /// A trim or deletion retired cold nodes since the last collection.
    gc_wanted: bool,
    /// Node bytes freed by moves since the allocator was last asked to give memory back.
    freed_since_trim: usize,
    /// When the collector last asked for a rewrite (at most one every few seconds).
    rewrite_asked: Option<std::time::Instant>,
    /// When the collector last walked the stubs (at most once per [`COLLECT_INTERVAL`]).
    last_collect: Option<std::time::Instant>,
    /// Reads ahead of paged scans in flight ([`park`]).
    prefetches: park::Prefetches,
    /// Encodes a node's live entries for range replies on the read pool: installed by
    /// the layer that writes replies (`commands::xrange::render_node`); without it, the
    /// pool only decodes ([`park`]).
    pub render_node: Option<park::RenderNode>,
    /// Counters.
    pub stats: TierStats,
}

impl std::fmt::Debug for Tiering {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tiering")
            .field("open", &self.store.is_some())
            .field(
                "candidates",
                &self.candidates.values().map(HashMap::len).sum::<usize>(),
            )
            .field("stats", &self.stats)
            .finish()
    }
}

/// The loader installed for cold nodes that are read synchronously: opens segment
/// files under `dir` (a few kept open) and checks the record and the node.
fn make_loader(dir: PathBuf) -> Arc<cold::NodeLoader> {
    let files: Mutex<HashMap<u64, Arc<File>>> = Mutex::new(HashMap::new());
    Arc::new(move |loc: NodeLocation, master: StreamId| {
        let path = dir.join(segment::file_name(loc.segment));
        let file = {
            let mut open = files.lock().unwrap_or_else(|e| e.into_inner());
            match open.get(&loc.segment) {
                Some(f) => Arc::clone(f),
                None => {
                    let f = Arc::new(File::open(&path).map_err(|e| {
                        let msg = format!("opening {}: {e}", path.display());
                        tracing::error!(error = %msg, "a cold node cannot be read");
                        msg
                    })?);
                    if open.len() >= 64 {
                        open.clear();
                    }
                    open.insert(loc.segment, Arc::clone(&f));
                    f
                }
            }
        };
        let node = segment::read_record(&file, &path, loc).map_err(|e| {
            tracing::error!(error = %e, "a cold node cannot be read");
            e.to_string()
        })?;
        decode(node.node, master)
    })
}

/// A node's bytes as read from a segment, checked byte by byte.
fn decode(bytes: Vec<u8>, master: StreamId) -> Result<Listpack, String> {
    Listpack::from_bytes(bytes, master)
        .map(|(lp, _)| lp)
        .map_err(|e| format!("a cold node read back is damaged: {e}"))
}

/// Segment numbers named by every cold stub of `dbs`.
fn referenced(core: &Core) -> BTreeSet<u64> {
    live_record_bytes(core).into_keys().collect()
}

impl Tiering {
    /// True once a store is open.
    pub fn is_open(&self) -> bool {
        self.store.is_some()
    }

    /// Opens the store in `dir` (start-up, before loading; or when tiering is turned on).
    /// A torn tail of the newest segment is cut (nothing durable names it: locations are
    /// logged after their sync); other damage refuses the open with file and offset.
    pub fn open(&mut self, dir: &Path) -> Result<(), TierError> {
        if self.store.is_some() {
            return Ok(());
        }
        std::fs::create_dir_all(dir).map_err(|e| TierError::io("creating", dir, e))?;
        let store = SegmentStore::open(
            dir,
            StoreOptions {
                repair: true,
                segment_max_bytes: SEGMENT_BYTES,
                ..StoreOptions::default()
            },
        )?;
        let pool = ReadPool::new(2).map_err(|e| TierError::io("starting readers for", dir, e))?;
        cold::set_loader(Some(make_loader(dir.to_path_buf())));
        self.store = Some(store);
        self.pool = Some(pool);
        Ok(())
    }

    /// Notes a stream that may have sealed hot nodes (XADD made a new node, a load added
    /// nodes).
    pub fn note_stream(&mut self, db: usize, key: &[u8]) {
        if self.store.is_none() {
            return;
        }
        let keys = self.candidates.entry(db).or_default();
        if !keys.contains_key(key) {
            keys.insert(Bytes::copy_from_slice(key), (0, None));
        }
    }

    /// A save, rewrite or full sync starts: segments stay until it ends.
    pub fn reader_started(&mut self) {
        self.readers += 1;
    }

    /// A reader ended.
    pub fn reader_finished(&mut self) {
        self.readers = self.readers.saturating_sub(1);
        self.gc_wanted = true;
    }

    /// Makes every location appended so far durable: the fsync runs on a pool thread
    /// (or here, when `blocking`: loading), and the receiver hands the sync back for
    /// [`SegmentStore::finish_sync`].
    fn start_sync(&mut self, blocking: bool) -> Result<SyncAnswer, TierError> {
        let store = self.store.as_mut().ok_or(TierError::PoolClosed)?;
        let sync = store.begin_sync()?;
        if blocking {
            let (tx, rx) = oneshot::channel();
            let _ = tx.send(sync.run().map(|()| sync));
            return Ok(rx);
        }
        let pool = self.pool.as_ref().ok_or(TierError::PoolClosed)?;
        Ok(pool.run(move || sync.run().map(|()| sync)))
    }

    /// The read pool, for parked commands.
    pub fn pool(&self) -> Option<&ReadPool> {
        self.pool.as_ref()
    }

    /// Prepares a read of `locs` for the pool.
    pub fn read_batch(
        &mut self,
        locs: &[NodeLocation],
    ) -> Result<crate::tier::ReadBatch, TierError> {
        match self.store.as_mut() {
            Some(s) => s.read_batch(locs),
            None => Err(TierError::PoolClosed),
        }
    }

    /// Bytes in segment files and how many there are.
    pub fn disk(&self) -> (u64, usize) {
        self.store.as_ref().map_or((0, 0), |s| {
            let st = s.stats();
            (st.iter().map(|x| x.bytes).sum(), st.len())
        })
    }
}

impl Core {
    /// Is the mover on (`stream-tiering yes`)?
    pub fn tiering_enabled(&self) -> bool {
        self.config.get_bool("stream-tiering")
    }

    /// The hot budget in bytes (`stream-tiering-hot-bytes`).
    pub fn tiering_budget(&self) -> usize {
        self.config.get_i64("stream-tiering-hot-bytes").max(0) as usize
    }

    /// Start-up, before loading: opens the store when tiering is on or segments exist.
    pub fn tier_open(&mut self, data_dir: &Path) -> Result<(), String> {
        let dir = data_dir.join("tier");
        if self.tiering_enabled() || dir.exists() {
            self.tier.open(&dir).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// After loading: every cold stub's location must lie in a segment (else the start
    /// is refused: a segment is missing), the files just loaded protect what they name,
    /// and the streams become the mover's candidates.
    pub fn tier_loaded(&mut self) -> Result<(), String> {
        let refs = referenced(self);
        if !refs.is_empty() && !self.tier.is_open() {
            return Err("the data names cold stream nodes but there is no tier directory".into());
        }
        let Some(store) = self.tier.store.as_mut() else {
            return Ok(());
        };
        for db in &self.dbs {
            for (_, v) in db.keys.iter() {
                if let Some(s) = v.as_stream()
                    && let Some(c) = s.cold()
                {
                    for st in c.stubs() {
                        store.claim(st.loc).map_err(|e| {
                            format!("a cold stream node cannot be found ({e}); the tier directory is incomplete")
                        })?;
                    }
                }
            }
        }
        self.tier.protected.extend(refs);
        let mut cands = Vec::new();
        for (i, db) in self.dbs.iter().enumerate() {
            for (k, v) in db.keys.iter() {
                if let Some(s) = v.as_stream()
                    && s.hot_node_count() > 1
                {
                    cands.push((i, Bytes::copy_from_slice(k)));
                }
            }
        }
        for (db, k) in cands {
            self.tier
                .candidates
                .entry(db)
                .or_default()
                .insert(k, (0, None));
        }
        self.tier.gc_wanted = true;
        crate::alloc::release_free_memory();
        Ok(())
    }

    /// Loading a log: a `STREAMD.TIER <key> <master> <segment> <offset> <len> <crc>`
    /// record turns the stream's oldest hot node cold again. A node that does not match
    /// (other node limits at replay) stays hot; the mover moves it again later.
    pub fn tier_replay(&mut self, db: usize, argv: &[Bytes]) -> Result<(), String> {
        self.replay_location(db, argv, |s, master, loc| {
            if s.replay_cold(master, loc).is_none() {
                tracing::warn!(master = %master, "a logged move to a segment does not match the stream's oldest node; it stays in memory");
            }
        })
    }

    /// Loading a log: a `STREAMD.RELOC` record points a cold node at its record's copy.
    pub fn tier_replay_reloc(&mut self, db: usize, argv: &[Bytes]) -> Result<(), String> {
        self.replay_location(db, argv, |s, master, loc| {
            s.relocate_cold(master, None, loc);
        })
    }

    /// A `STREAMD.TIER`/`RELOC` record: its segment is named by the log (protected), and
    /// `apply` gets the stream (if it exists), the master ID and the location.
    fn replay_location(
        &mut self,
        db: usize,
        argv: &[Bytes],
        apply: impl FnOnce(&mut crate::stream::Stream, StreamId, NodeLocation),
    ) -> Result<(), String> {
        let (master, loc) = parse_move(argv)?;
        self.tier.protected.insert(loc.segment);
        if let Some(s) = self
            .dbs
            .get_mut(db)
            .and_then(|d| d.get_stream_mut(&argv[1]))
        {
            apply(s, master, loc);
        }
        Ok(())
    }

    /// The mover and the collector, once per cron tick (and after loading steps).
    pub fn tier_cron(&mut self) {
        if self.tier.store.is_none() {
            if self.tiering_enabled() {
                let dir = PathBuf::from(self.config.get("dir").unwrap_or("./data")).join("tier");
                if let Err(e) = self.tier.open(&dir) {
                    tracing::error!(error = %e, "stream tiering cannot open its segment directory");
                    return;
                }
                self.tier_loaded().ok();
            } else {
                return;
            }
        }
        self.tier_cool_warm();
        // Freed nodes are scattered small blocks: the tick gives whole free pages back
        // now and then, so RSS follows the budget.
        self.tier_mover_tick();
        self.tier_compact();
        self.tier_collect();
    }

    /// Compaction, one step per cron tick: finishes the step in flight. (A compaction
    /// starts from a collection pass, [`Core::tier_compact_start`].)
    fn tier_compact(&mut self) {
        if let Some(c) = self.tier.compaction.take() {
            self.tier_compact_step(c);
        }
    }

    /// From a collection pass's live record bytes per segment: starts on the sealed
    /// segment with the smallest live share below [`COMPACT_LIVE_SHARE`] (not the active
    /// one), queueing the read of its live records. The old segment is then named by
    /// nothing in memory and goes the way of trimmed segments (see "Garbage").
    fn tier_compact_start(&mut self, live: &HashMap<u64, u64>) {
        if self.tier.compaction.is_some() || self.tier.pending.is_some() || self.tier.readers > 0 {
            return;
        }
        let Some(store) = self.tier.store.as_ref() else {
            return;
        };
        let active = store.active_segment();
        let stats = store.stats();
        let pick = stats
            .iter()
            .filter(|s| s.sealed && Some(s.segment) != active && s.bytes > 0)
            .filter_map(|s| {
                let l = *live.get(&s.segment)?;
                let share = l as f64 / s.bytes as f64;
                (share < COMPACT_LIVE_SHARE).then_some((share, s.segment))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0));
        let Some((_, segment)) = pick else {
            return;
        };
        let mut targets = Vec::new();
        for (i, db) in self.dbs.iter().enumerate() {
            for (k, v) in db.keys.iter() {
                if let Some(c) = v.as_stream().and_then(|s| s.cold()) {
                    for st in c.stubs().filter(|st| st.loc.segment == segment) {
                        targets.push((i, Bytes::copy_from_slice(k), st.master, st.loc));
                    }
                }
            }
        }
        let locs: Vec<NodeLocation> = targets.iter().map(|t| t.3).collect();
        let Ok(batch) = self.tier.read_batch(&locs) else {
            return;
        };
        let Some(pool) = self.tier.pool.as_ref() else {
            return;
        };
        let rx = pool.submit(batch);
        self.tier.compaction = Some(Compaction {
            segment,
            targets,
            phase: CompactionPhase::Reading(rx),
        });
    }

    /// Advances a compaction whose wait may be over.
    fn tier_compact_step(&mut self, mut c: Compaction) {
        match c.phase {
            CompactionPhase::Reading(mut rx) => {
                let Some(nodes) = poll_answer(&mut rx) else {
                    c.phase = CompactionPhase::Reading(rx);
                    self.tier.compaction = Some(c);
                    return;
                };
                let nodes = match nodes {
                    Ok(n) => n,
                    Err(e) => {
                        tracing::error!(segment = c.segment, error = %e, "a segment's compaction could not read it");
                        return;
                    }
                };
                let Some(store) = self.tier.store.as_mut() else {
                    return;
                };
                let mut new_locs = Vec::with_capacity(nodes.len());
                for (node, t) in nodes.iter().zip(&c.targets) {
                    match store.append(stream_tag(&t.1), node.first, node.last, &node.node) {
                        Ok(loc) => new_locs.push(loc),
                        Err(e) => {
                            tracing::error!(error = %e, "a segment's compaction could not write");
                            return;
                        }
                    }
                }
                let rx = match self.tier.start_sync(false) {
                    Ok(rx) => rx,
                    Err(e) => {
                        tracing::error!(error = %e, "a segment's compaction could not sync");
                        return;
                    }
                };
                c.phase = CompactionPhase::Syncing(rx, new_locs);
                self.tier.compaction = Some(c);
            }
            CompactionPhase::Syncing(mut rx, new_locs) => {
                let Some(sync) = poll_answer(&mut rx) else {
                    c.phase = CompactionPhase::Syncing(rx, new_locs);
                    self.tier.compaction = Some(c);
                    return;
                };
                let Some(store) = self.tier.store.as_mut() else {
                    return;
                };
                match sync {
                    Ok(p) => store.finish_sync(p),
                    Err(e) => {
                        tracing::error!(error = %e, "a segment's compaction could not sync");
                        return;
                    }
                }
                let mut bytes = 0u64;
                for ((db, key, master, old), new) in c.targets.into_iter().zip(new_locs) {
                    let moved = self
                        .dbs
                        .get_mut(db)
                        .and_then(|d| d.get_stream_mut(&key))
                        .is_some_and(|s| s.relocate_cold(master, Some(old), new));
                    if !moved {
                        continue;
                    }
                    bytes += u64::from(new.len);
                    if self.persist.recording() {
                        self.tier.protected.insert(new.segment);
                    }
                    for refs in self.tier.save_refs.iter_mut().flatten() {
                        refs.insert(new.segment);
                    }
                    self.log_location(RELOC_RECORD, db, &key, master, new);
                }
                self.tier.stats.compactions += 1;
                self.tier.stats.compacted_bytes += bytes;
                self.tier.gc_wanted = true;
                tracing::info!(
                    segment = c.segment,
                    copied_bytes = bytes,
                    "compacted a segment: its live records were copied to the active segment"
                );
            }
        }
    }

    /// Logs `name <key> <master> <segment> <offset> <len> <crc>` (log only).
    fn log_location(
        &mut self,
        name: &[u8],
        db: usize,
        key: &[u8],
        master: StreamId,
        loc: NodeLocation,
    ) {
        let master = master.to_key();
        let (seg, off, len, crc) = (
            loc.segment.to_string(),
            loc.offset.to_string(),
            loc.len.to_string(),
            loc.crc.to_string(),
        );
        self.propagate_to_log(
            db,
            &[
                name,
                key,
                &master,
                seg.as_bytes(),
                off.as_bytes(),
                len.as_bytes(),
                crc.as_bytes(),
            ],
        );
    }

    /// Loading: moves nodes synchronously while hot bytes are over the budget (a full
    /// sync or a snapshot larger than memory never sits in memory whole).
    pub fn tier_while_loading(&mut self, db: usize, key: &[u8]) {
        if !self.tiering_enabled() || self.tier.store.is_none() {
            return;
        }
        self.tier.note_stream(db, key);
        if self.tier_hot_total() <= self.tiering_budget() {
            return;
        }
        if self.tier_start_move(true) {
            // The sync ran on this thread: finish at once.
            self.tier_finish_move();
        }
    }

    /// Loading, every few hundred records: drops warm copies over the limit (nothing
    /// else does while loading) and gives freed memory back now and then.
    pub fn tier_loading_tick(&mut self) {
        if self.tier.store.is_none() {
            return;
        }
        let before = cold::warm_bytes();
        self.tier_cool_warm();
        self.tier.freed_since_trim += before - cold::warm_bytes().min(before);
        if self.tier.freed_since_trim >= RELEASE_AFTER_BYTES {
            self.tier.freed_since_trim = 0;
            crate::alloc::release_free_memory();
        }
    }

    /// The candidates' hot bytes (drops candidates with one hot node or gone): each
    /// stream's hot node count times its bytes per node, measured by a walk of its hot
    /// nodes at most once per [`HOT_BYTES_REMEASURE`] (sealed nodes hardly change size).
    fn tier_hot_total(&mut self) -> usize {
        let mut total = 0;
        let dbs = &self.dbs;
        let now = std::time::Instant::now();
        for (db, keys) in self.tier.candidates.iter_mut() {
            keys.retain(|key, (per_node, measured)| {
                match dbs.get(*db).and_then(|d| d.get_stream(key)) {
                    Some(s) if s.hot_node_count() > 1 => {
                        let n = s.hot_node_count();
                        if measured.is_none_or(|t| now.duration_since(t) >= HOT_BYTES_REMEASURE) {
                            *per_node = s.hot_bytes() / n;
                            *measured = Some(now);
                        }
                        total += n * *per_node;
                        true
                    }
                    _ => false,
                }
            });
        }
        total
    }

    /// The mover's own tick (every 10 ms): finishes a round whose sync completed and
    /// starts the next while hot bytes are over the budget.
    pub fn tier_mover_tick(&mut self) {
        if self.loading || self.busy.is_some() || self.tier.store.is_none() {
            return;
        }
        self.tier_install_prefetches();
        self.tier_finish_move();
        if self.tiering_enabled() && self.tier.pending.is_none() {
            self.tier_start_move(false);
        }
        if self.tier.freed_since_trim >= RELEASE_AFTER_BYTES {
            self.tier.freed_since_trim = 0;
            crate::alloc::release_free_memory();
        }
    }

    /// Appends the oldest sealed nodes of the largest candidates until the hot bytes
    /// would be within the budget, then syncs (on a pool thread, or here when `blocking`).
    /// True when a round was started.
    fn tier_start_move(&mut self, blocking: bool) -> bool {
        let budget = self.tiering_budget();
        let total = self.tier_hot_total();
        if total <= budget {
            return false;
        }
        // A little under the budget, so the mover does not run for every new node.
        let mut want = total - budget + budget / 16;
        want = want.min(MOVE_BATCH_BYTES);
        let mut cands: Vec<(usize, usize, Bytes, bool)> = self
            .tier
            .candidates
            .iter()
            .flat_map(|(db, keys)| keys.keys().map(move |k| (*db, k)))
            .filter_map(|(db, key)| {
                let s = self.dbs.get(db)?.get_stream(key)?;
                let read = s.oldest_sealed_node().is_some_and(|(m, lp)| {
                    s.groups()
                        .min_last_id()
                        .is_none_or(|delivered| lp.last_id(m) <= delivered)
                });
                Some((s.hot_node_count(), db, key.clone(), read))
            })
            .collect();
        // Streams whose oldest nodes every group has read go first (a consumer catching up
        // reads the others soon), then the largest.
        cands.sort_by_key(|c| (!c.3, std::cmp::Reverse(c.0)));
        let Some(store) = self.tier.store.as_mut() else {
            return false;
        };
        let mut moves = Vec::new();
        let mut planned = 0usize;
        'streams: for (_, db, key, _) in cands {
            let Some(s) = self.dbs[db].get_stream(&key) else {
                continue;
            };
            // The oldest sealed nodes, in order, never the tail.
            let hot = s.hot_node_count();
            for (i, (master, lp)) in s.hot_nodes().enumerate() {
                if i + 1 >= hot || planned >= want {
                    break;
                }
                let id = stream_tag(&key);
                match store.append(id, master, lp.last_id(master), lp.as_bytes()) {
                    Ok(loc) => {
                        planned += lp.heap_size();
                        moves.push((db, key.clone(), master, lp.clone(), loc));
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "stream tiering could not write a node");
                        self.tier.stats.move_errors += 1;
                        break 'streams;
                    }
                }
            }
            if planned >= want {
                break;
            }
        }
        if moves.is_empty() {
            return false;
        }
        let rx = match self.tier.start_sync(blocking) {
            Ok(rx) => rx,
            Err(e) => {
                tracing::error!(error = %e, "stream tiering could not sync its segments");
                self.tier.stats.move_errors += 1;
                if let Some(store) = self.tier.store.as_mut() {
                    for m in &moves {
                        let _ = store.mark_dead(m.4);
                    }
                }
                return false;
            }
        };
        self.tier.pending = Some(PendingMove { moves, rx });
        true
    }

    /// A mover round whose sync completed: the nodes still unchanged go cold and their
    /// moves are logged; the others' records are garbage.
    fn tier_finish_move(&mut self) {
        let Some(mut pending) = self.tier.pending.take() else {
            return;
        };
        let Some(result) = poll_answer(&mut pending.rx) else {
            self.tier.pending = Some(pending);
            return;
        };
        let Some(store) = self.tier.store.as_mut() else {
            return;
        };
        match result {
            Ok(sync) => store.finish_sync(sync),
            Err(e) => {
                tracing::error!(error = %e, "stream tiering could not sync its segments");
                self.tier.stats.move_errors += 1;
                for m in &pending.moves {
                    let _ = store.mark_dead(m.4);
                }
                return;
            }
        }
        for (db, key, master, node, loc) in pending.moves {
            let moved = self.dbs[db]
                .get_stream_mut(&key)
                .is_some_and(|s| s.make_cold(master, &node, loc).is_some());
            let Some(store) = self.tier.store.as_mut() else {
                return;
            };
            if !moved {
                self.tier.stats.moves_abandoned += 1;
                let _ = store.mark_dead(loc);
                continue;
            }
            self.tier.stats.nodes_moved += 1;
            self.tier.stats.bytes_moved += u64::from(loc.len);
            self.tier.freed_since_trim += node.heap_size();
            for refs in self.tier.save_refs.iter_mut().flatten() {
                refs.insert(loc.segment);
            }
            if self.persist.recording() {
                self.tier.protected.insert(loc.segment);
            }
            self.log_location(TIER_RECORD, db, &key, master, loc);
        }
    }

    /// How many bytes of warm copies of cold nodes are kept before
    /// [`Core::tier_cool_warm`] drops them: an eighth of the hot budget, at least
    /// [`WARM_MIN_BYTES`].
    fn warm_limit(&self) -> usize {
        (self.tiering_budget() / 8).max(WARM_MIN_BYTES)
    }

    /// Drops warm copies of cold nodes once they take more than an eighth of the budget.
    fn tier_cool_warm(&mut self) {
        let limit = self.warm_limit();
        if cold::warm_bytes() <= limit {
            return;
        }
        for db in self.dbs.iter_mut() {
            let warm: Vec<Bytes> = db
                .keys
                .iter()
                .filter_map(|(k, v)| {
                    let s = v.as_stream()?;
                    s.cold()
                        .is_some_and(|c| c.warm_bytes() > 0)
                        .then(|| Bytes::copy_from_slice(k))
                })
                .collect();
            for k in warm {
                if let Some(s) = db.get_stream_mut(&k) {
                    s.cool();
                }
            }
        }
    }

    /// Unlinks segments nothing names (see the module docs); asks for a rewrite when
    /// protected garbage piles up.
    fn tier_collect(&mut self) {
        if cold::take_retired() > 0 {
            self.tier.gc_wanted = true;
        }
        let recent = self
            .tier
            .last_collect
            .is_some_and(|t| t.elapsed() < COLLECT_INTERVAL);
        if !self.tier.gc_wanted
            || recent
            || self.tier.readers > 0
            || self.tier.pending.is_some()
            || self.tier.compaction.is_some()
        {
            return;
        }
        self.tier.gc_wanted = false;
        self.tier.last_collect = Some(std::time::Instant::now());
        // One walk of the stubs: the segments they name and their live record bytes.
        let live_bytes = live_record_bytes(self);
        let live: BTreeSet<u64> = live_bytes.keys().copied().collect();
        self.tier_compact_start(&live_bytes);
        let Some(store) = self.tier.store.as_mut() else {
            return;
        };
        let mut keep = live.clone();
        keep.extend(self.tier.protected.iter().copied());
        match store.retain_segments(&keep) {
            Ok(gone) => {
                self.tier.stats.segments_unlinked += gone.len() as u64;
            }
            Err(e) => tracing::error!(error = %e, "stream tiering could not unlink a segment"),
        }
        // Garbage only the durable files still name: a rewrite (or snapshot) frees it.
        let garbage: u64 = store
            .stats()
            .iter()
            .filter(|s| !live.contains(&s.segment) && s.sealed)
            .map(|s| s.bytes)
            .sum();
        let recently = self
            .tier
            .rewrite_asked
            .is_some_and(|t| t.elapsed() < REWRITE_ASK_INTERVAL);
        if garbage >= GARBAGE_REWRITE_BYTES && !recently {
            self.tier.rewrite_asked = Some(std::time::Instant::now());
            self.tier.stats.rewrites_requested += 1;
            let r = self.with_persistence(|p, core| {
                if p.recording() {
                    p.bgrewriteaof(core).map(|_| ())
                } else {
                    p.bgsave(core)
                }
            });
            if let Err(e) = r {
                tracing::debug!(error = %e, "stream tiering: no rewrite to free segments now");
            }
        }
    }

    /// A save (snapshot or log rewrite) starts from the dataset as it is now.
    pub fn tier_save_started(&mut self, kind: TierSave) {
        if self.tier.store.is_none() {
            return;
        }
        self.tier.reader_started();
        self.tier.save_refs[kind as usize] = Some(referenced(self));
    }

    /// The save started by [`Core::tier_save_started`] ended; when it succeeded and a
    /// restart loads it (`restart_source`), only what it names (and the log since it
    /// started) stays protected.
    pub fn tier_save_finished(&mut self, kind: TierSave, ok: bool, restart_source: bool) {
        let Some(refs) = self.tier.save_refs[kind as usize].take() else {
            return;
        };
        self.tier.reader_finished();
        if ok && restart_source {
            self.tier.protected = refs;
        }
    }

    /// Appends `argv` to the log only (not to replicas, which tier on their own).
    pub fn propagate_to_log<A: AsRef<[u8]>>(&mut self, db: usize, argv: &[A]) {
        if self.loading {
            return;
        }
        if let Some(buf) = self.persist.effect_begin(db) {
            crate::resp::writer::command(buf, argv);
            self.persist.effect_end();
        }
    }

    /// The body of INFO's `# Tiering` section (`INFO tiering`, `all`, `everything`).
    pub fn tier_info(&self) -> String {
        let mut hot = 0usize;
        let mut hot_nodes = 0usize;
        let mut cold_nodes = 0usize;
        let mut cold_bytes = 0u64;
        let mut cold_entries = 0u64;
        let mut stub_bytes = 0usize;
        for db in &self.dbs {
            for (_, v) in db.keys.iter() {
                if let Some(s) = v.as_stream() {
                    if let Some(c) = s.cold() {
                        cold_nodes += c.len();
                        cold_bytes += c.disk_bytes();
                        cold_entries += c.live();
                        stub_bytes += c.stub_bytes();
                    }
                    if s.hot_node_count() > 1 || s.cold().is_some() {
                        hot += s.hot_bytes();
                        hot_nodes += s.hot_node_count();
                    }
                }
            }
        }
        let (disk, segments) = self.tier.disk();
        let st = &self.tier.stats;
        format!(
            "stream_tiering:{}\r\n\
             stream_tiering_hot_bytes_budget:{}\r\n\
             tiering_hot_bytes:{hot}\r\n\
             tiering_hot_nodes:{hot_nodes}\r\n\
             tiering_cold_nodes:{cold_nodes}\r\n\
             tiering_cold_bytes:{cold_bytes}\r\n\
             tiering_cold_entries:{cold_entries}\r\n\
             tiering_stub_bytes:{stub_bytes}\r\n\
             tiering_warm_bytes:{}\r\n\
             tiering_segments:{segments}\r\n\
             tiering_segment_bytes:{disk}\r\n\
             tiering_nodes_moved:{}\r\n\
             tiering_bytes_moved:{}\r\n\
             tiering_moves_abandoned:{}\r\n\
             tiering_move_errors:{}\r\n\
             tiering_parked_commands:{}\r\n\
             tiering_reads:{}\r\n\
             tiering_read_bytes:{}\r\n\
             tiering_readahead_reads:{}\r\n\
             tiering_sync_reads:{}\r\n\
             tiering_read_errors:{}\r\n\
             tiering_segments_unlinked:{}\r\n\
             tiering_rewrites_requested:{}\r\n\
             tiering_compactions:{}\r\n\
             tiering_compacted_bytes:{}\r\n",
            if self.tiering_enabled() { "yes" } else { "no" },
            self.tiering_budget(),
            cold::warm_bytes(),
            st.nodes_moved,
            st.bytes_moved,
            st.moves_abandoned,
            st.move_errors,
            st.parked_commands,
            st.pool_reads,
            st.pool_read_bytes,
            st.readahead_reads,
            cold::sync_loads(),
            cold::load_failures(),
            st.segments_unlinked,
            st.rewrites_requested,
            st.compactions,
            st.compacted_bytes,
        )
    }
}

/// Live record bytes per segment, from every cold stub of every stream (a segment no
/// stub names is absent).
fn live_record_bytes(core: &Core) -> HashMap<u64, u64> {
    let mut live: HashMap<u64, u64> = HashMap::new();
    for db in &core.dbs {
        for (_, v) in db.keys.iter() {
            if let Some(c) = v.as_stream().and_then(|s| s.cold()) {
                for st in c.stubs() {
                    *live.entry(st.loc.segment).or_default() += st.loc.record_size();
                }
            }
        }
    }
    live
}

/// The master ID and location of a `STREAMD.TIER` or `STREAMD.RELOC` record.
fn parse_move(argv: &[Bytes]) -> Result<(StreamId, NodeLocation), String> {
    if argv.len() != 7 {
        return Err("wrong number of arguments".into());
    }
    let master = StreamId::from_key(&argv[2]).ok_or("the master ID is not 16 bytes")?;
    let num = |b: &Bytes| -> Result<u64, String> {
        std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| "a location field is not a number".to_string())
    };
    let loc = NodeLocation {
        segment: num(&argv[3])?,
        offset: u32::try_from(num(&argv[4])?).map_err(|_| "offset out of range")?,
        len: u32::try_from(num(&argv[5])?).map_err(|_| "length out of range")?,
        crc: num(&argv[6])?,
    };
    Ok((master, loc))
}

/// The stream id written into each record: a hash of the key (records are found by
/// location, the id only helps a person reading a segment).
fn stream_tag(key: &[u8]) -> u64 {
    segment::crc64(&[key])
}
