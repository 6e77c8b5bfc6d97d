//! The segment store: the set of segment files in one directory, appending cold nodes,
//! reading them back, and the bookkeeping that lets whole files go.
//!
//! ```text
//!  segments (BTreeMap by number)                          the active segment
//!  +--------+--------+--------+        +---------------------------------------------+
//!  | 7 seal | 8 seal | 9 seal |  ...   | 12: header | records on disk | buf (memory) |
//!  +--------+--------+--------+        +---------------------------------------------+
//!   live/dead bytes each                              ^ flushed        ^ data_end
//! ```
//!
//! **Appending** ([`SegmentStore::append`]) encodes the record into a write buffer and
//! returns its [`Location`] at once. The buffer is not written by the appending thread
//! (the core's): [`SegmentStore::begin_sync`] hands it, with any seal queued since, to
//! the [`PendingSync`], whose [`PendingSync::run`] writes (`pwrite`) and then fsyncs on a
//! pool thread. Writes run in the order their syncs began (a ticket each), so a file never
//! gets bytes past a hole (a sync dropped unrun still writes in its turn); a failed write
//! stops all further writes ([`TierError::WritesStopped`]) until a restart, whose open cuts the unsealed
//! tail at the first bad record, and nothing that was lost had been durable.
//! [`SegmentStore::flush`] writes synchronously (the blocking [`SegmentStore::sync`], a
//! read of a record not yet written). Dropping the store without a sync loses what is
//! buffered, which the durability rule below makes harmless: none of it was durable. A
//! segment is sealed when the next record would take it past the size limit
//! ([`segment::SEGMENT_MAX_BYTES`] by default): the seal is queued after its last record
//! and the segment is never written again; the next record starts a new segment.
//!
//! **Durability rule.** A `Location` is only *durable* once a sync that covers it has
//! completed: [`SegmentStore::sync`], or the split form [`SegmentStore::begin_sync`] /
//! [`PendingSync::run`] (on any thread) / [`SegmentStore::finish_sync`], which fsyncs
//! every segment with unsynced bytes and, when a segment file was created, the directory.
//! [`SegmentStore::is_durable`] says whether it happened. Nothing that survives a crash (a
//! log record, a snapshot) may name a Location before it is durable; before that it may
//! be read (from the buffer or the file), never relied on across a restart.
//!
//! **Live and dead bytes.** Each segment counts the record bytes that stubs reference
//! (`live`) out of all its record bytes. [`SegmentStore::append`] counts the new record
//! live; [`SegmentStore::mark_dead`] takes a record off (trimmed, deleted or compacted
//! away); after a restart nothing is live until the loader [`SegmentStore::claim`]s each
//! Location it finds in the snapshot and log. The store cannot tell a double
//! `mark_dead` or `claim` (it keeps no per-record state, so memory stays per segment):
//! each Location must be claimed once and marked dead once, by the stub that owns it.
//!
//! **Unlinking is deferred.** A sealed segment whose live bytes reach zero is not removed
//! at once: the snapshot or log on disk may still name its records until the effects that
//! stopped naming them (the trim, the relocation) are durable. [`SegmentStore::unlink_dead`]
//! removes every such segment but the newest; call it only after that point (after the
//! log fsync that covers those effects, or right after loading and claiming: what was
//! loaded is what is on disk).
//!
//! **Compaction** ([`SegmentStore::compact`]) copies the records a predicate calls live
//! from a sealed segment into the active one, syncs them, marks the originals dead and
//! returns the map old → new. The caller points its stubs at the new Locations and logs
//! that; then `unlink_dead` removes the old file.
//!
//! **Opening** ([`SegmentStore::open`]) costs two small reads per sealed segment (its
//! header and its seal): no record of a sealed segment is read unless
//! [`StoreOptions::verify`] asks for every CRC. A segment without a seal (the one being
//! appended to when the process stopped) is scanned record by record; a torn tail there
//! is cut with [`StoreOptions::repair`] and refused without it. Its cut records were never
//! synced, so never durable, so nothing that survived the crash names them.
//! [`SegmentStore::check`] is the `--check-aof` of segments.

use super::segment::{self, HEADER_LEN, SEAL_LEN};
use super::{ColdNode, Location, TierError};
use crate::stream::StreamId;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Bytes buffered before an append moves them to the write queue (one `pwrite` each).
pub const WRITE_BUFFER: usize = 256 << 10;

/// Bytes for a segment file at an offset, written later, in order, by
/// [`PendingSync::run`] or [`SegmentStore::flush`].
#[derive(Debug)]
struct QueuedWrite {
    file: Arc<File>,
    path: Arc<Path>,
    offset: u64,
    bytes: Vec<u8>,
}

/// Whose writes go next: tickets are handed out by [`SegmentStore::begin_sync`] and
/// [`SegmentStore::flush`] in the order their bytes were appended.
#[derive(Debug, Default)]
struct WriteTurn {
    /// The ticket whose writes may run now.
    next: u64,
    /// Tickets given up without writes before their turn (skipped when it comes).
    skipped: BTreeSet<u64>,
}

impl WriteTurn {
    /// Passes the turn on, over the tickets given up.
    fn advance(&mut self) {
        self.next += 1;
        while self.skipped.remove(&self.next) {
            self.next += 1;
        }
    }
}

/// The write order shared by a store and its pending syncs (see the module docs).
#[derive(Debug, Default)]
struct WriteOrder {
    turn: Mutex<WriteTurn>,
    changed: Condvar,
    /// A write failed: nothing more is written.
    stopped: std::sync::atomic::AtomicBool,
}

impl WriteOrder {
    fn lock(&self) -> MutexGuard<'_, WriteTurn> {
        self.turn.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn is_stopped(&self) -> bool {
        self.stopped.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Waits for `ticket`'s turn, writes `writes` in order and passes the turn on. A
    /// failure stops every later write.
    fn write_in_turn(&self, ticket: u64, writes: &[QueuedWrite]) -> Result<(), TierError> {
        let mut turn = self.lock();
        while turn.next != ticket && !self.is_stopped() {
            turn = self.changed.wait(turn).unwrap_or_else(|e| e.into_inner());
        }
        if self.is_stopped() {
            return Err(TierError::WritesStopped);
        }
        for w in writes {
            if let Err(e) = w.file.write_all_at(&w.bytes, w.offset) {
                // Under the turn's lock: every waiter sees it when woken.
                self.stopped
                    .store(true, std::sync::atomic::Ordering::Release);
                self.changed.notify_all();
                return Err(TierError::io("writing to", &w.path, e));
            }
        }
        turn.advance();
        self.changed.notify_all();
        Ok(())
    }

    /// Gives up `ticket`, which has no writes, unrun: its turn is passed on.
    fn give_up(&self, ticket: u64) {
        let mut turn = self.lock();
        if turn.next == ticket {
            turn.advance();
        } else if turn.next < ticket {
            turn.skipped.insert(ticket);
        }
        self.changed.notify_all();
    }
}

/// How [`SegmentStore::open`] treats what it finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreOptions {
    /// Check every record's CRC in every segment (sealed ones included), not just the
    /// segment without a seal.
    pub verify: bool,
    /// Cut a torn tail off a segment without a seal (and remove a newest segment too
    /// short to hold its header), instead of refusing to open.
    pub repair: bool,
    /// Seal a segment before a record would take it past this size (the seal included).
    /// At most `u32::MAX` (offsets are u32); a record larger than this gets a segment of
    /// its own.
    pub segment_max_bytes: u64,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            verify: false,
            repair: false,
            segment_max_bytes: segment::SEGMENT_MAX_BYTES,
        }
    }
}

/// One segment file as the store knows it.
#[derive(Debug)]
struct Segment {
    /// The file's path, shared with read batches (for error messages).
    path: Arc<Path>,
    /// The open file, shared with read batches: a read in flight keeps an unlinked file's
    /// bytes readable.
    file: Arc<File>,
    /// Offset just past the last record (for the active segment: including the bytes
    /// still in the write buffer). The seal, if any, starts here.
    data_end: u64,
    /// Records in the segment.
    records: u64,
    /// Sealed: never written again; the file is `data_end + SEAL_LEN` bytes.
    sealed: bool,
    /// Record bytes live stubs reference (`<= data_end - HEADER_LEN`).
    live: u64,
    /// Bytes of the file known to be on disk (fsynced).
    synced: u64,
    /// The file's directory entry is durable (the directory was fsynced since it was
    /// created, or it existed at open).
    dir_synced: bool,
}

impl Segment {
    /// Bytes the file holds once everything written so far reaches it.
    fn file_end(&self) -> u64 {
        self.data_end + if self.sealed { SEAL_LEN } else { 0 }
    }
}

/// What [`SegmentStore::stats`] tells about one segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentStats {
    /// The segment number.
    pub segment: u64,
    /// Records in it.
    pub records: u64,
    /// Record bytes (all records, live or dead).
    pub bytes: u64,
    /// Record bytes still referenced.
    pub live_bytes: u64,
    /// Sealed (never written again).
    pub sealed: bool,
}

impl SegmentStats {
    /// Record bytes no stub references any more.
    pub fn dead_bytes(&self) -> u64 {
        self.bytes - self.live_bytes
    }
}

/// Bytes [`SegmentStore::compact`] reads per chunk.
pub const COMPACTION_CHUNK: u64 = 4 << 20;

/// A sealed segment's records, read in chunks on any thread
/// ([`SegmentStore::compaction_source`]). Holds the open file, so it stays readable
/// even if the segment is unlinked meanwhile.
#[derive(Debug, Clone)]
pub struct CompactionSource {
    /// The segment number.
    segment: u64,
    /// Its open file.
    file: Arc<File>,
    /// Its path (for errors).
    path: Arc<Path>,
    /// Where its records end.
    data_end: u64,
}

/// One chunk of a [`CompactionSource`].
#[derive(Debug)]
pub struct CompactionChunk {
    /// Each record's Location and node, in file order.
    pub records: Vec<(Location, ColdNode)>,
    /// Where the next chunk starts; `None` after the last record.
    pub next: Option<u64>,
}

impl CompactionSource {
    /// The segment number.
    pub fn segment(&self) -> u64 {
        self.segment
    }

    /// Reads the records from offset `from` ([`segment::HEADER_LEN`] for the first
    /// chunk, then the previous chunk's `next`) until about `max_bytes` of them, each
    /// CRC-checked. Blocking: meant for a pool thread.
    pub fn read_chunk(&self, from: u64, max_bytes: u64) -> Result<CompactionChunk, TierError> {
        if from < HEADER_LEN || from > self.data_end {
            return Err(TierError::Corrupt {
                path: self.path.to_path_buf(),
                offset: from,
                why: "a compaction chunk must start at a record",
            });
        }
        let (recs, next) =
            segment::read_records(&self.file, &self.path, from, self.data_end, max_bytes)?;
        let records = recs
            .into_iter()
            .map(|(off, h, crc, node)| {
                let loc = Location {
                    segment: self.segment,
                    offset: u32::try_from(off).expect("segments end below 4 GiB"),
                    len: h.len,
                    crc,
                };
                let node = ColdNode {
                    stream: h.stream,
                    first: h.first,
                    last: h.last,
                    node,
                };
                (loc, node)
            })
            .collect();
        Ok(CompactionChunk {
            records,
            next: (next < self.data_end).then_some(next),
        })
    }
}

/// What [`SegmentStore::check`] found.
#[derive(Debug, Default)]
pub struct CheckReport {
    /// Human-readable lines, one per segment and one per problem or repair.
    pub lines: Vec<String>,
    /// Segments found (and, when the check passed, verified).
    pub segments: u64,
    /// Records in them.
    pub records: u64,
    /// The first problem, if the check failed: the error names the file and offset.
    pub error: Option<TierError>,
    /// Tails cut: `(file, offset, bytes cut)`.
    pub repaired: Vec<(PathBuf, u64, u64)>,
}

/// A sync to run off the store's thread: see the durability rule in the module docs.
#[derive(Debug)]
pub struct PendingSync {
    /// Segments with unsynced bytes: number, file, path, the file size to make durable.
    files: Vec<(u64, Arc<File>, Arc<Path>, u64)>,
    /// The directory, when segment files were created since its last sync.
    dir: Option<PathBuf>,
    /// Segments whose directory entries the directory sync makes durable.
    dir_segments: Vec<u64>,
    /// The appended bytes (and seals) not written yet, written first, in turn.
    writes: Vec<QueuedWrite>,
    /// Its turn in the store's write order.
    ticket: u64,
    /// The store's write order.
    order: Arc<WriteOrder>,
    /// [`PendingSync::run`] was called (dropping it unrun gives its turn up).
    ran: std::sync::atomic::AtomicBool,
}

impl Drop for PendingSync {
    /// A sync dropped unrun (its job skipped, the pool gone) still writes its bytes in
    /// turn, so that later writes leave no hole; it only skips the fsync.
    fn drop(&mut self) {
        if self.ran.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        if self.writes.is_empty() {
            self.order.give_up(self.ticket);
        } else if let Err(e) = self.order.write_in_turn(self.ticket, &self.writes) {
            tracing::error!(error = %e, "segment bytes of a dropped sync could not be written");
        }
    }
}

impl PendingSync {
    /// Writes the bytes appended before it began (after every earlier sync's), then
    /// fsyncs the files (`fdatasync`) and, if needed, the directory. Blocking; call it
    /// from a thread that may wait for the disk, then hand the `PendingSync` back to
    /// [`SegmentStore::finish_sync`].
    pub fn run(&self) -> Result<(), TierError> {
        self.ran.store(true, std::sync::atomic::Ordering::Release);
        self.order.write_in_turn(self.ticket, &self.writes)?;
        for (_, file, path, _) in &self.files {
            file.sync_data()
                .map_err(|e| TierError::io("syncing a segment", path, e))?;
        }
        if let Some(dir) = &self.dir {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| TierError::io("syncing the segment directory", dir, e))?;
        }
        Ok(())
    }

    /// True when there is nothing to write or sync.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.dir.is_none() && self.writes.is_empty()
    }
}

/// The segment files of one directory (see the module docs).
#[derive(Debug)]
pub struct SegmentStore {
    /// The directory holding `seg-*.sdt`.
    dir: PathBuf,
    /// The sealing size ([`StoreOptions::segment_max_bytes`]).
    max_bytes: u64,
    /// Every segment, by number.
    segments: BTreeMap<u64, Segment>,
    /// The segment appends go to; `None` until the first append after open or a seal.
    active: Option<u64>,
    /// Bytes appended to the active segment and not yet queued; they belong at offset
    /// `flushed`.
    buf: Vec<u8>,
    /// File offset where `buf` starts (the active segment's bytes queued or written end
    /// here).
    flushed: u64,
    /// Bytes queued for the files (earlier buffers, seals), not yet handed to a sync.
    queued: Vec<QueuedWrite>,
    /// The next write ticket to hand out.
    tickets: u64,
    /// The order the writes of syncs run in.
    order: Arc<WriteOrder>,
    /// The number the next segment gets (above every number ever seen in the directory).
    next: u64,
    /// Segments with bytes or a directory entry not yet synced.
    unsynced: BTreeSet<u64>,
    /// Opened by [`SegmentStore::check`] without repair: nothing may be written.
    read_only: bool,
}

impl SegmentStore {
    /// Opens the segment directory `dir` (created if missing), as the module docs say.
    pub fn open(dir: &Path, opts: StoreOptions) -> Result<SegmentStore, TierError> {
        let mut report = CheckReport::default();
        SegmentStore::open_inner(dir, opts, false, &mut report)
    }

    /// Checks every record of every segment in `dir` (`--check-aof` style) and reports
    /// per segment; the first bad record ends the check with its file and offset in
    /// [`CheckReport::error`]. With `repair`, a torn tail of a segment without a seal
    /// is cut (the only damage that can be repaired: its records were never durable);
    /// without it nothing is written.
    pub fn check(dir: &Path, repair: bool) -> CheckReport {
        let mut report = CheckReport::default();
        let opts = StoreOptions {
            verify: true,
            repair,
            ..StoreOptions::default()
        };
        if let Err(e) = SegmentStore::open_inner(dir, opts, !repair, &mut report) {
            report.lines.push(format!("{e}"));
            report.error = Some(e);
        }
        report
    }

    fn open_inner(
        dir: &Path,
        opts: StoreOptions,
        read_only: bool,
        report: &mut CheckReport,
    ) -> Result<SegmentStore, TierError> {
        if !read_only {
            fs::create_dir_all(dir)
                .map_err(|e| TierError::io("creating the segment directory", dir, e))?;
        }
        let mut numbers = Vec::new();
        let entries =
            fs::read_dir(dir).map_err(|e| TierError::io("listing segments in", dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| TierError::io("listing segments in", dir, e))?;
            if let Some(n) = entry
                .file_name()
                .to_str()
                .and_then(segment::parse_file_name)
            {
                numbers.push(n);
            }
        }
        numbers.sort_unstable();
        let mut store = SegmentStore {
            dir: dir.to_path_buf(),
            max_bytes: opts.segment_max_bytes.clamp(1, u64::from(u32::MAX)),
            segments: BTreeMap::new(),
            active: None,
            buf: Vec::new(),
            flushed: 0,
            queued: Vec::new(),
            tickets: 0,
            order: Arc::new(WriteOrder::default()),
            next: numbers.last().map_or(1, |n| n.saturating_add(1)),
            unsynced: BTreeSet::new(),
            read_only,
        };
        let newest = numbers.last().copied();
        for n in numbers {
            store.open_segment(n, Some(n) == newest, opts, report)?;
        }
        Ok(store)
    }

    /// Opens segment `n` (see [`SegmentStore::open`]) and adds it to the store.
    fn open_segment(
        &mut self,
        n: u64,
        newest: bool,
        opts: StoreOptions,
        report: &mut CheckReport,
    ) -> Result<(), TierError> {
        let path: Arc<Path> = self.dir.join(segment::file_name(n)).into();
        let file = fs::OpenOptions::new()
            .read(true)
            .write(!self.read_only)
            .open(&path)
            .map_err(|e| TierError::io("opening a segment", &path, e))?;
        let len = file
            .metadata()
            .map_err(|e| TierError::io("reading the size of", &path, e))?
            .len();
        let corrupt = |offset, why| TierError::Corrupt {
            path: path.to_path_buf(),
            offset,
            why,
        };
        if len < HEADER_LEN {
            // A crash while the file was being created: it never held a durable record.
            if !newest {
                return Err(corrupt(0, "shorter than a segment header"));
            }
            if !opts.repair {
                return Err(TierError::TornTail {
                    path: path.to_path_buf(),
                    offset: 0,
                    cut: len,
                });
            }
            drop(file);
            fs::remove_file(&path).map_err(|e| TierError::io("removing", &path, e))?;
            tracing::warn!(path = %path.display(), bytes = len, "removed a segment file too short for its header");
            report
                .lines
                .push(format!("{}: removed (only {len} bytes)", path.display()));
            report.repaired.push((path.to_path_buf(), 0, len));
            return Ok(());
        }
        let mut header = [0u8; HEADER_LEN as usize];
        file.read_exact_at(&mut header, 0)
            .map_err(|e| TierError::io("reading the header of", &path, e))?;
        segment::check_header(&header, n).map_err(|why| corrupt(0, why))?;
        let mut seal = [0u8; SEAL_LEN as usize];
        let sealed = if len >= HEADER_LEN + SEAL_LEN {
            file.read_exact_at(&mut seal, len - SEAL_LEN)
                .map_err(|e| TierError::io("reading the seal of", &path, e))?;
            segment::decode_seal(&seal).filter(|&(_, end)| end == len - SEAL_LEN)
        } else {
            None
        };
        let (records, data_end, is_sealed) = match sealed {
            Some((records, data_end)) => {
                if opts.verify {
                    let s = segment::scan(&file, &path, HEADER_LEN, data_end, false, |_, _, _| {})?;
                    if let Some((off, why)) = s.bad {
                        return Err(corrupt(off, why));
                    }
                    if s.records != records {
                        return Err(corrupt(data_end, "the seal's record count is wrong"));
                    }
                }
                (records, data_end, true)
            }
            None => {
                let s = segment::scan(&file, &path, HEADER_LEN, len, true, |_, _, _| {})?;
                if let Some((off, why)) = s.bad {
                    if !s.torn {
                        return Err(corrupt(off, why));
                    }
                    if !opts.repair {
                        return Err(TierError::TornTail {
                            path: path.to_path_buf(),
                            offset: off,
                            cut: len - off,
                        });
                    }
                    file.set_len(off)
                        .and_then(|()| file.sync_all())
                        .map_err(|e| TierError::io("truncating", &path, e))?;
                    tracing::warn!(
                        path = %path.display(),
                        offset = off,
                        bytes = len - off,
                        why,
                        "cut a torn tail off a segment (its records were never synced)"
                    );
                    report.lines.push(format!(
                        "{}: torn tail at offset {off} ({why}): cut {} bytes",
                        path.display(),
                        len - off
                    ));
                    report.repaired.push((path.to_path_buf(), off, len - off));
                }
                // An older segment without a seal: sealed now (when writing is allowed).
                let seal_now = !newest && !self.read_only;
                if seal_now {
                    file.write_all_at(&segment::encode_seal(s.records, s.good_end), s.good_end)
                        .and_then(|()| file.sync_data())
                        .map_err(|e| TierError::io("sealing", &path, e))?;
                }
                (s.records, s.good_end, seal_now)
            }
        };
        report.segments += 1;
        report.records += records;
        report.lines.push(format!(
            "{}: {}, {records} records, {} bytes{}",
            path.display(),
            if is_sealed { "sealed" } else { "open" },
            data_end - HEADER_LEN,
            if opts.verify {
                ", every CRC-64 matches"
            } else {
                ""
            }
        ));
        let file_end = data_end + if is_sealed { SEAL_LEN } else { 0 };
        if !is_sealed && newest {
            self.active = Some(n);
            self.flushed = data_end;
        }
        self.segments.insert(
            n,
            Segment {
                path,
                file: Arc::new(file),
                data_end,
                records,
                sealed: is_sealed,
                live: 0,
                synced: file_end,
                dir_synced: true,
            },
        );
        Ok(())
    }

    /// The directory the store keeps its segments in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends a node's record and returns where it is: see the module docs for when the
    /// Location becomes durable. `first` is the node's master ID (its rax key), `last` its
    /// last entry's ID; `node` its bytes (`Listpack::as_bytes`), at least
    /// [`segment::MIN_NODE_LEN`] bytes. The record counts as live.
    pub fn append(
        &mut self,
        stream: u64,
        first: StreamId,
        last: StreamId,
        node: &[u8],
    ) -> Result<Location, TierError> {
        let len = node.len() as u64;
        if !(segment::MIN_NODE_LEN..=segment::MAX_NODE_LEN).contains(&node.len()) {
            return Err(TierError::InvalidNode {
                len,
                why: "its length is out of range",
            });
        }
        if first > last {
            return Err(TierError::InvalidNode {
                len,
                why: "its first ID is above its last",
            });
        }
        if self.order.is_stopped() {
            return Err(TierError::WritesStopped);
        }
        if self.buf.len() >= WRITE_BUFFER {
            self.queue_buffer();
        }
        let len = len as u32;
        let size = segment::record_size(len);
        let n = self.active_for(size)?;
        let seg = self
            .segments
            .get_mut(&n)
            .expect("the active segment exists");
        let offset = seg.data_end;
        let crc = segment::encode_record(&mut self.buf, stream, first, last, node);
        seg.data_end += size;
        seg.records += 1;
        seg.live += size;
        self.unsynced.insert(n);
        Ok(Location {
            segment: n,
            offset: u32::try_from(offset).expect("segments end below 4 GiB"),
            len,
            crc,
        })
    }

    /// The segment a record of `size` bytes goes to: the active one if it fits (or the
    /// segment is empty), else the active one is sealed and a new one is created.
    fn active_for(&mut self, size: u64) -> Result<u64, TierError> {
        if let Some(n) = self.active {
            let end = self.segments[&n].data_end;
            if end == HEADER_LEN || end + size + SEAL_LEN <= self.max_bytes {
                return Ok(n);
            }
            self.seal_active()?;
        }
        self.create_segment()
    }

    /// Writes the buffer and the seal of the active segment; it is never written again.
    fn seal_active(&mut self) -> Result<(), TierError> {
        let Some(n) = self.active else {
            return Ok(());
        };
        self.queue_buffer();
        let seg = self
            .segments
            .get_mut(&n)
            .expect("the active segment exists");
        self.queued.push(QueuedWrite {
            file: Arc::clone(&seg.file),
            path: Arc::clone(&seg.path),
            offset: seg.data_end,
            bytes: segment::encode_seal(seg.records, seg.data_end).to_vec(),
        });
        seg.sealed = true;
        self.active = None;
        self.unsynced.insert(n);
        Ok(())
    }

    /// Creates the next segment file with its header and makes it the active one.
    fn create_segment(&mut self) -> Result<u64, TierError> {
        assert!(
            !self.read_only,
            "a store opened for checking is never written"
        );
        let n = self.next;
        self.next = n.checked_add(1).expect("fewer than 2^64 segments");
        let path: Arc<Path> = self.dir.join(segment::file_name(n)).into();
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| TierError::io("creating a segment", &path, e))?;
        file.write_all_at(&segment::encode_header(n), 0)
            .map_err(|e| TierError::io("writing the header of", &path, e))?;
        self.segments.insert(
            n,
            Segment {
                path,
                file: Arc::new(file),
                data_end: HEADER_LEN,
                records: 0,
                sealed: false,
                live: 0,
                synced: 0,
                dir_synced: false,
            },
        );
        self.active = Some(n);
        self.flushed = HEADER_LEN;
        self.unsynced.insert(n);
        Ok(n)
    }

    /// Moves the write buffer to the write queue (no system call).
    fn queue_buffer(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let n = self
            .active
            .expect("buffered bytes belong to the active segment");
        let seg = &self.segments[&n];
        // The next buffer is allocated at its full size: growing it by doubling copied
        // every appended byte about once more.
        let bytes = std::mem::replace(&mut self.buf, Vec::with_capacity(WRITE_BUFFER + 8192));
        let offset = self.flushed;
        self.flushed += bytes.len() as u64;
        self.queued.push(QueuedWrite {
            file: Arc::clone(&seg.file),
            path: Arc::clone(&seg.path),
            offset,
            bytes,
        });
    }

    /// Takes everything appended and not yet handed to a write, with its ticket.
    fn take_writes(&mut self) -> (Vec<QueuedWrite>, u64) {
        self.queue_buffer();
        let ticket = self.tickets;
        self.tickets += 1;
        (std::mem::take(&mut self.queued), ticket)
    }

    /// Writes every appended record (and seal) to its file now, after the writes of the
    /// syncs in flight (no fsync). Blocking.
    pub fn flush(&mut self) -> Result<(), TierError> {
        let (writes, ticket) = self.take_writes();
        self.order.write_in_turn(ticket, &writes)
    }

    /// Makes every Location handed out so far durable (flush, fsync, directory fsync).
    /// Blocking: the split form below lets the fsync run on another thread.
    pub fn sync(&mut self) -> Result<(), TierError> {
        let p = self.begin_sync()?;
        if !p.is_empty() {
            p.run()?;
            self.finish_sync(p);
        }
        Ok(())
    }

    /// Flushes and returns what a sync must fsync now: run it with [`PendingSync::run`]
    /// on any thread, then hand it to [`SegmentStore::finish_sync`]. Appends may go on
    /// meanwhile; they are not covered by this sync.
    /// Also hands it the appended bytes to write first (see the module docs).
    pub fn begin_sync(&mut self) -> Result<PendingSync, TierError> {
        if self.order.is_stopped() {
            return Err(TierError::WritesStopped);
        }
        let (writes, ticket) = self.take_writes();
        let mut p = PendingSync {
            files: Vec::new(),
            dir: None,
            dir_segments: Vec::new(),
            writes,
            ticket,
            order: Arc::clone(&self.order),
            ran: std::sync::atomic::AtomicBool::new(false),
        };
        for &n in &self.unsynced {
            let Some(seg) = self.segments.get(&n) else {
                continue;
            };
            if seg.synced < seg.file_end() {
                p.files.push((
                    n,
                    Arc::clone(&seg.file),
                    Arc::clone(&seg.path),
                    seg.file_end(),
                ));
            }
            if !seg.dir_synced {
                p.dir_segments.push(n);
            }
        }
        if !p.dir_segments.is_empty() {
            p.dir = Some(self.dir.clone());
        }
        Ok(p)
    }

    /// Records a sync that [`PendingSync::run`] completed without error.
    pub fn finish_sync(&mut self, p: PendingSync) {
        for &(n, _, _, end) in &p.files {
            if let Some(seg) = self.segments.get_mut(&n) {
                seg.synced = seg.synced.max(end);
            }
        }
        for &n in &p.dir_segments {
            if let Some(seg) = self.segments.get_mut(&n) {
                seg.dir_synced = true;
            }
        }
        let segments = &self.segments;
        self.unsynced.retain(|n| {
            segments
                .get(n)
                .is_some_and(|s| s.synced < s.file_end() || !s.dir_synced)
        });
    }

    /// True once a completed sync covers `loc` (see the durability rule).
    pub fn is_durable(&self, loc: Location) -> bool {
        self.segments
            .get(&loc.segment)
            .is_some_and(|s| s.dir_synced && s.synced >= loc.end())
    }

    /// The segment `loc` names, after checking that `loc` lies within its records.
    fn segment_of(&self, loc: Location) -> Result<&Segment, TierError> {
        let seg = self
            .segments
            .get(&loc.segment)
            .ok_or(TierError::UnknownSegment {
                segment: loc.segment,
            })?;
        if u64::from(loc.offset) < HEADER_LEN || loc.end() > seg.data_end {
            return Err(TierError::OutOfRange { loc });
        }
        Ok(seg)
    }

    /// True when `loc`'s bytes are still in the write buffer, not in the file.
    fn in_buffer(&self, loc: Location) -> bool {
        self.active == Some(loc.segment) && u64::from(loc.offset) >= self.flushed
    }

    /// `loc`'s record bytes when they are queued, not yet handed to a write.
    fn in_queue(&self, loc: Location) -> Option<&[u8]> {
        let seg = self.segments.get(&loc.segment)?;
        let (start, end) = (u64::from(loc.offset), loc.end());
        self.queued.iter().find_map(|w| {
            let inside = Arc::ptr_eq(&w.file, &seg.file)
                && start >= w.offset
                && end <= w.offset + w.bytes.len() as u64;
            inside.then(|| &w.bytes[(start - w.offset) as usize..(end - w.offset) as usize])
        })
    }

    /// Reads the node at `loc`, checking its CRC and that the record is the one `loc`
    /// names. Blocking (a `pread`) unless the record is still buffered: the core thread
    /// uses [`SegmentStore::read_batch`] and the pool instead.
    pub fn read(&self, loc: Location) -> Result<ColdNode, TierError> {
        let seg = self.segment_of(loc)?;
        if self.in_buffer(loc) {
            let start = (u64::from(loc.offset) - self.flushed) as usize;
            let end = start + loc.record_size() as usize;
            let bytes = self
                .buf
                .get(start..end)
                .ok_or(TierError::OutOfRange { loc })?;
            return segment::decode_node(bytes.to_vec(), &seg.path, loc);
        }
        if let Some(bytes) = self.in_queue(loc) {
            return segment::decode_node(bytes.to_vec(), &seg.path, loc);
        }
        segment::read_record(&seg.file, &seg.path, loc)
    }

    /// Prepares a read of `locs`, in order, for the read pool (or [`super::ReadBatch::run`]):
    /// checks each Location and writes the buffer out first if one of them is still in it.
    pub fn read_batch(&mut self, locs: &[Location]) -> Result<super::ReadBatch, TierError> {
        // A record not durable yet may still be buffered, queued or in a sync's writes:
        // everything appended is written (in turn) before the read.
        if locs.iter().any(|&l| !self.is_durable(l)) {
            self.flush()?;
        }
        let mut reads = Vec::with_capacity(locs.len());
        for &loc in locs {
            let seg = self.segment_of(loc)?;
            reads.push((Arc::clone(&seg.file), Arc::clone(&seg.path), loc));
        }
        Ok(super::ReadBatch { reads })
    }

    /// Counts `loc` live again after a restart (the loader found a stub naming it):
    /// see the module docs. Checks only that `loc` lies within its segment's records;
    /// reading it checks the rest.
    pub fn claim(&mut self, loc: Location) -> Result<(), TierError> {
        self.segment_of(loc)?;
        let seg = self
            .segments
            .get_mut(&loc.segment)
            .expect("segment_of found it");
        seg.live = (seg.live + loc.record_size()).min(seg.data_end - HEADER_LEN);
        Ok(())
    }

    /// Counts `loc`'s record dead: no stub references it any more. A sealed segment
    /// whose records are all dead is removed by the next [`SegmentStore::unlink_dead`].
    pub fn mark_dead(&mut self, loc: Location) -> Result<(), TierError> {
        self.segment_of(loc)?;
        let seg = self
            .segments
            .get_mut(&loc.segment)
            .expect("segment_of found it");
        seg.live = seg.live.saturating_sub(loc.record_size());
        Ok(())
    }

    /// Removes every sealed segment with no live bytes, except the newest segment (whose
    /// number, found again at the next open, keeps segment numbers from ever being
    /// reused); returns their numbers. Call it only when nothing durable names their
    /// records any more (module docs). A read in flight on the pool still completes (it
    /// holds the open file).
    pub fn unlink_dead(&mut self) -> Result<Vec<u64>, TierError> {
        let newest = self.segments.last_key_value().map(|(&n, _)| n);
        let dead: Vec<u64> = self
            .segments
            .iter()
            .filter(|&(&n, s)| s.sealed && s.live == 0 && Some(n) != newest)
            .map(|(&n, _)| n)
            .collect();
        for &n in &dead {
            let path = Arc::clone(&self.segments[&n].path);
            fs::remove_file(&path).map_err(|e| TierError::io("unlinking", &path, e))?;
            self.segments.remove(&n);
            self.unsynced.remove(&n);
            tracing::info!(segment = n, path = %path.display(), "unlinked a segment with no live records");
        }
        Ok(dead)
    }

    /// Removes every sealed segment not in `keep`, except the newest (as
    /// [`SegmentStore::unlink_dead`], for an owner that knows which segments are named
    /// rather than counting live bytes); returns their numbers.
    pub fn retain_segments(&mut self, keep: &BTreeSet<u64>) -> Result<Vec<u64>, TierError> {
        let newest = self.segments.last_key_value().map(|(&n, _)| n);
        let gone: Vec<u64> = self
            .segments
            .iter()
            .filter(|&(&n, s)| s.sealed && Some(n) != newest && !keep.contains(&n))
            .map(|(&n, _)| n)
            .collect();
        for &n in &gone {
            let path = Arc::clone(&self.segments[&n].path);
            fs::remove_file(&path).map_err(|e| TierError::io("unlinking", &path, e))?;
            self.segments.remove(&n);
            self.unsynced.remove(&n);
            tracing::info!(segment = n, path = %path.display(), "unlinked a segment nothing names");
        }
        Ok(gone)
    }

    /// A handle for reading sealed segment `n` in chunks on another thread (the read
    /// pool's [`super::ReadPool::run`]), for a compaction that must not block the store's
    /// owner: read a chunk off-thread, [`SegmentStore::append`] the records still live on
    /// the owner's thread, and after the last chunk [`SegmentStore::sync`] (or the split
    /// sync), repoint the stubs, log the move, and [`SegmentStore::mark_dead`] each old
    /// Location. [`SegmentStore::compact`] does all of it in one blocking call.
    /// A segment sealed since the last sync may still have queued bytes: they are
    /// written first.
    pub fn compaction_source(&mut self, n: u64) -> Result<CompactionSource, TierError> {
        let seg = self
            .segments
            .get(&n)
            .ok_or(TierError::UnknownSegment { segment: n })?;
        if !seg.sealed {
            return Err(TierError::NotSealed { segment: n });
        }
        if seg.synced < seg.file_end() {
            self.flush()?;
        }
        let seg = &self.segments[&n];
        Ok(CompactionSource {
            segment: n,
            file: Arc::clone(&seg.file),
            path: Arc::clone(&seg.path),
            data_end: seg.data_end,
        })
    }

    /// Copies the records of sealed segment `n` that `live` keeps into the active
    /// segment, syncs the copies, counts the originals dead and returns `(old, new)` for
    /// each copy, in file order. The caller repoints its stubs and logs the move; then
    /// [`SegmentStore::unlink_dead`] removes the old file. Every record is CRC-checked on
    /// the way; a bad one stops the compaction with nothing changed but copies that
    /// nothing names (counted dead). Blocking: it reads the whole segment (see
    /// [`SegmentStore::compaction_source`] for the form that reads off-thread).
    pub fn compact(
        &mut self,
        n: u64,
        live: impl Fn(Location) -> bool,
    ) -> Result<Vec<(Location, Location)>, TierError> {
        let src = self.compaction_source(n)?;
        let mut moved = Vec::new();
        let mut records = 0u64;
        let copied = (|| {
            let mut from = Some(HEADER_LEN);
            while let Some(at) = from {
                let chunk = src.read_chunk(at, COMPACTION_CHUNK)?;
                records += chunk.records.len() as u64;
                for (old, node) in chunk.records {
                    if live(old) {
                        let new = self.append(node.stream, node.first, node.last, &node.node)?;
                        moved.push((old, new));
                    }
                }
                from = chunk.next;
            }
            self.sync()
        })();
        if let Err(e) = copied {
            for &(_, new) in &moved {
                let _ = self.mark_dead(new);
            }
            return Err(e);
        }
        for &(old, _) in &moved {
            self.mark_dead(old)?;
        }
        tracing::info!(
            segment = n,
            moved = moved.len(),
            records,
            "compacted a segment"
        );
        Ok(moved)
    }

    /// Live and dead bytes per segment, oldest first.
    pub fn stats(&self) -> Vec<SegmentStats> {
        self.segments
            .iter()
            .map(|(&n, s)| SegmentStats {
                segment: n,
                records: s.records,
                bytes: s.data_end - HEADER_LEN,
                live_bytes: s.live,
                sealed: s.sealed,
            })
            .collect()
    }

    /// The segment appends currently go to, if one is open.
    pub fn active_segment(&self) -> Option<u64> {
        self.active
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ms: u64) -> StreamId {
        StreamId::new(ms, 0)
    }

    fn node(i: u64, len: usize) -> Vec<u8> {
        (0..len).map(|j| (i as usize * 31 + j) as u8).collect()
    }

    fn small() -> StoreOptions {
        StoreOptions {
            segment_max_bytes: 4096,
            ..StoreOptions::default()
        }
    }

    /// The example segment of docs/format.md §4, byte for byte: segment 1 holding the
    /// node of the snapshot example (`1-1 f v`) for stream id 7, sealed.
    #[test]
    fn format_doc() {
        let dir = tempfile::tempdir().expect("tempdir");
        let opts = StoreOptions {
            segment_max_bytes: 132,
            ..StoreOptions::default()
        };
        let mut st = SegmentStore::open(dir.path(), opts).expect("open");
        let node = b"\x01\0\0\0\0\0\0\0\x19\0\0\0\x01\x02f\x02\x00\x02v\x04";
        let one = StreamId::new(1, 1);
        let loc = st.append(7, one, one, node).expect("append");
        assert_eq!((loc.segment, loc.offset, loc.len), (1, 32, 20));
        assert_eq!(loc.crc, 0x45e2_8da3_2cca_3637);
        let next = st.append(7, id(2), id(2), node).expect("append");
        assert_eq!(
            next.segment, 2,
            "the second record does not fit: segment 1 is sealed"
        );
        st.sync().expect("sync");
        let bytes = fs::read(dir.path().join("seg-0000000000000001.sdt")).expect("read");
        let want = "5354524d534547460100000000000000010000000000000091162cbfa6ddea70\
                    1400000007000000000000000000000000000001000000000000000100000000\
                    0000000100000000000000010100000000000000190000000102660200027604\
                    3736ca2ca38de245ffffffff010000000000000068000000000000009c725451\
                    f4469b40";
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, want);
    }

    #[test]
    fn appended_nodes_read_back_before_and_after_sync_and_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut st = SegmentStore::open(dir.path(), small()).expect("open");
        let locs: Vec<_> = (0..50)
            .map(|i| {
                st.append(i, id(i), id(i + 1), &node(i, 100))
                    .expect("append")
            })
            .collect();
        assert!(!st.is_durable(locs[49]));
        for (i, &l) in locs.iter().enumerate() {
            assert_eq!(st.read(l).expect("read").node, node(i as u64, 100));
        }
        st.sync().expect("sync");
        assert!(locs.iter().all(|&l| st.is_durable(l)));
        let segs = st.stats().len();
        assert!(segs > 1, "4 KiB segments roll over");
        drop(st);
        let st = SegmentStore::open(dir.path(), small()).expect("reopen");
        assert_eq!(st.stats().len(), segs);
        for (i, &l) in locs.iter().enumerate() {
            let n = st.read(l).expect("read");
            assert_eq!(
                (n.stream, n.first, n.last),
                (i as u64, id(i as u64), id(i as u64 + 1))
            );
            assert_eq!(n.node, node(i as u64, 100));
        }
    }

    #[test]
    fn a_location_of_another_record_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut st = SegmentStore::open(dir.path(), StoreOptions::default()).expect("open");
        let a = st.append(1, id(1), id(1), &node(1, 40)).expect("append");
        let b = st.append(1, id(2), id(2), &node(2, 40)).expect("append");
        st.sync().expect("sync");
        let wrong = Location { crc: b.crc, ..a };
        assert!(matches!(st.read(wrong), Err(TierError::Corrupt { .. })));
        let mid = Location {
            offset: a.offset + 1,
            ..a
        };
        assert!(st.read(mid).is_err());
        let past = Location {
            offset: b.offset + 8,
            ..b
        };
        assert!(matches!(st.read(past), Err(TierError::OutOfRange { .. })));
        let gone = Location { segment: 99, ..a };
        assert!(matches!(
            st.read(gone),
            Err(TierError::UnknownSegment { segment: 99 })
        ));
    }

    #[test]
    fn invalid_nodes_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut st = SegmentStore::open(dir.path(), StoreOptions::default()).expect("open");
        assert!(st.append(1, id(1), id(1), &[0; 11]).is_err());
        assert!(st.append(1, id(2), id(1), &[0; 12]).is_err());
    }

    #[test]
    fn a_record_larger_than_the_limit_gets_a_segment_of_its_own() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut st = SegmentStore::open(dir.path(), small()).expect("open");
        let a = st.append(1, id(1), id(1), &node(1, 100)).expect("append");
        let big = st
            .append(1, id(2), id(2), &node(2, 10_000))
            .expect("append");
        let c = st.append(1, id(3), id(3), &node(3, 100)).expect("append");
        assert!(a.segment < big.segment && big.segment < c.segment);
        assert_eq!(u64::from(big.offset), HEADER_LEN);
        assert_eq!(st.read(big).expect("read").node, node(2, 10_000));
    }

    #[test]
    fn a_dead_sealed_segment_is_unlinked_only_when_asked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut st = SegmentStore::open(dir.path(), small()).expect("open");
        let locs: Vec<_> = (0..100)
            .map(|i| st.append(i, id(i), id(i), &node(i, 200)).expect("append"))
            .collect();
        st.sync().expect("sync");
        let first = locs[0].segment;
        let in_first: Vec<_> = locs.iter().filter(|l| l.segment == first).collect();
        for &&l in &in_first {
            st.mark_dead(l).expect("mark");
        }
        let path = dir.path().join(segment::file_name(first));
        assert!(path.exists());
        assert_eq!(st.unlink_dead().expect("unlink"), vec![first]);
        assert!(!path.exists());
        assert!(matches!(
            st.read(locs[0]),
            Err(TierError::UnknownSegment { .. })
        ));
        assert_eq!(st.read(locs[99]).expect("read").node, node(99, 200));
    }

    #[test]
    fn a_read_batch_in_flight_survives_the_unlink() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut st = SegmentStore::open(dir.path(), small()).expect("open");
        let locs: Vec<_> = (0..40)
            .map(|i| st.append(i, id(i), id(i), &node(i, 200)).expect("append"))
            .collect();
        let batch = st.read_batch(&locs[..3]).expect("batch");
        for &l in &locs {
            st.mark_dead(l).expect("mark");
        }
        st.sync().expect("sync");
        assert!(!st.unlink_dead().expect("unlink").is_empty());
        let nodes = batch.run().expect("read");
        assert_eq!(nodes[2].node, node(2, 200));
    }

    #[test]
    fn compaction_moves_live_records_and_frees_the_segment() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut st = SegmentStore::open(dir.path(), small()).expect("open");
        let locs: Vec<_> = (0..60)
            .map(|i| st.append(i, id(i), id(i), &node(i, 150)).expect("append"))
            .collect();
        let first = locs[0].segment;
        let (dead, kept): (Vec<_>, Vec<_>) = locs
            .iter()
            .enumerate()
            .filter(|(_, l)| l.segment == first)
            .partition(|(i, _)| i % 2 == 0);
        for &(_, &l) in &dead {
            st.mark_dead(l).expect("mark");
        }
        let keep: BTreeSet<Location> = kept.iter().map(|&(_, &l)| l).collect();
        let moved = st.compact(first, |l| keep.contains(&l)).expect("compact");
        assert_eq!(moved.len(), keep.len());
        for (old, new) in &moved {
            assert!(st.is_durable(*new));
            assert_eq!(
                st.read(*old).expect("old").node,
                st.read(*new).expect("new").node
            );
        }
        let s = st
            .stats()
            .into_iter()
            .find(|s| s.segment == first)
            .expect("still there");
        assert_eq!(s.live_bytes, 0);
        assert_eq!(st.unlink_dead().expect("unlink"), vec![first]);
        assert!(matches!(
            st.compact(st.active_segment().expect("active"), |_| true),
            Err(TierError::NotSealed { .. })
        ));
    }

    #[test]
    fn torn_tail_is_cut_with_repair_and_refused_without() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut st = SegmentStore::open(dir.path(), StoreOptions::default()).expect("open");
        let locs: Vec<_> = (0..10)
            .map(|i| st.append(i, id(i), id(i), &node(i, 100)).expect("append"))
            .collect();
        st.sync().expect("sync");
        drop(st);
        let path = dir.path().join(segment::file_name(locs[0].segment));
        let f = fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open");
        let cut = u64::from(locs[7].offset) + 30;
        f.set_len(cut).expect("truncate");
        drop(f);
        match SegmentStore::open(dir.path(), StoreOptions::default()) {
            Err(TierError::TornTail { offset, cut: c, .. }) => {
                assert_eq!(offset, u64::from(locs[7].offset));
                assert_eq!(c, 30);
            }
            other => panic!("expected a torn tail, got {other:?}"),
        }
        let report = SegmentStore::check(dir.path(), false);
        assert!(report.error.is_some());
        let repair = StoreOptions {
            repair: true,
            ..StoreOptions::default()
        };
        let mut st = SegmentStore::open(dir.path(), repair).expect("repaired");
        for (i, &l) in locs[..7].iter().enumerate() {
            assert_eq!(st.read(l).expect("read").node, node(i as u64, 100));
        }
        assert!(st.read(locs[7]).is_err());
        let again = st.append(7, id(7), id(7), &node(70, 100)).expect("append");
        assert_eq!(again.offset, locs[7].offset);
        st.sync().expect("sync");
        assert!(SegmentStore::check(dir.path(), false).error.is_none());
    }

    #[test]
    fn damage_in_the_middle_is_refused_even_with_repair() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut st = SegmentStore::open(dir.path(), StoreOptions::default()).expect("open");
        let locs: Vec<_> = (0..10)
            .map(|i| st.append(i, id(i), id(i), &node(i, 100)).expect("append"))
            .collect();
        st.sync().expect("sync");
        drop(st);
        let path = dir.path().join(segment::file_name(locs[0].segment));
        let f = fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open");
        f.write_all_at(&[0xAA], u64::from(locs[3].offset) + 50)
            .expect("flip");
        let repair = StoreOptions {
            repair: true,
            ..StoreOptions::default()
        };
        match SegmentStore::open(dir.path(), repair) {
            Err(TierError::Corrupt { offset, .. }) => assert_eq!(offset, u64::from(locs[3].offset)),
            other => panic!("expected damage, got {other:?}"),
        }
        let report = SegmentStore::check(dir.path(), true);
        assert!(matches!(report.error, Some(TierError::Corrupt { .. })));
    }

    #[test]
    fn verify_finds_damage_in_a_sealed_segment_that_a_plain_open_does_not_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut st = SegmentStore::open(dir.path(), small()).expect("open");
        let locs: Vec<_> = (0..40)
            .map(|i| st.append(i, id(i), id(i), &node(i, 200)).expect("append"))
            .collect();
        st.sync().expect("sync");
        drop(st);
        let path = dir.path().join(segment::file_name(locs[1].segment));
        let f = fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open");
        f.write_all_at(&[0x55], u64::from(locs[1].offset) + 60)
            .expect("flip");
        let st = SegmentStore::open(dir.path(), small()).expect("plain open reads no records");
        assert!(matches!(st.read(locs[1]), Err(TierError::Corrupt { .. })));
        assert_eq!(st.read(locs[0]).expect("read").node, node(0, 200));
        let report = SegmentStore::check(dir.path(), false);
        match report.error {
            Some(TierError::Corrupt {
                path: p, offset, ..
            }) => {
                assert_eq!(p, path);
                assert_eq!(offset, u64::from(locs[1].offset));
            }
            other => panic!("expected damage, got {other:?}"),
        }
    }

    #[test]
    fn an_older_segment_left_without_its_seal_is_sealed_at_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut st = SegmentStore::open(dir.path(), small()).expect("open");
        let locs: Vec<_> = (0..40)
            .map(|i| st.append(i, id(i), id(i), &node(i, 200)).expect("append"))
            .collect();
        st.sync().expect("sync");
        drop(st);
        let path = dir.path().join(segment::file_name(locs[0].segment));
        let len = fs::metadata(&path).expect("meta").len();
        fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_len(len - SEAL_LEN))
            .expect("drop the seal");
        let st = SegmentStore::open(dir.path(), small()).expect("open");
        assert_eq!(fs::metadata(&path).expect("meta").len(), len);
        assert!(st.stats()[0].sealed);
        assert_eq!(st.read(locs[0]).expect("read").node, node(0, 200));
    }

    #[test]
    fn the_split_sync_runs_on_another_thread() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut st = SegmentStore::open(dir.path(), StoreOptions::default()).expect("open");
        let l = st.append(1, id(1), id(1), &node(1, 64)).expect("append");
        let p = st.begin_sync().expect("begin");
        let l2 = st.append(1, id(2), id(2), &node(2, 64)).expect("append");
        let p = std::thread::spawn(move || p.run().map(|()| p))
            .join()
            .expect("thread")
            .expect("sync");
        st.finish_sync(p);
        assert!(st.is_durable(l));
        assert!(!st.is_durable(l2));
        st.sync().expect("sync");
        assert!(st.is_durable(l2));
    }

    /// The size of segment `n`'s file in `dir`.
    fn file_len(dir: &Path, n: u64) -> u64 {
        fs::metadata(dir.join(segment::file_name(n)))
            .expect("segment file")
            .len()
    }

    #[test]
    fn appends_reach_the_file_only_when_their_sync_runs_and_in_the_order_syncs_began() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut st = SegmentStore::open(dir.path(), small()).expect("open");
        let a = st.append(1, id(1), id(1), &node(1, 200)).expect("append");
        assert_eq!(
            file_len(dir.path(), a.segment),
            HEADER_LEN,
            "nothing written yet"
        );
        let first = st.begin_sync().expect("begin");
        let b = st.append(1, id(2), id(2), &node(2, 200)).expect("append");
        let second = st.begin_sync().expect("begin");
        assert_eq!(
            file_len(dir.path(), a.segment),
            HEADER_LEN,
            "not before run"
        );
        // The later sync, run first on another thread, waits for the earlier one's writes.
        let later = std::thread::spawn(move || second.run().map(|()| second));
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!later.is_finished(), "the second sync ran before the first");
        assert_eq!(file_len(dir.path(), a.segment), HEADER_LEN);
        first.run().expect("first sync");
        let second = later.join().expect("thread").expect("second sync");
        st.finish_sync(first);
        st.finish_sync(second);
        assert!(st.is_durable(a) && st.is_durable(b));
        assert_eq!(file_len(dir.path(), a.segment), b.end());
        assert_eq!(st.read(b).expect("read").node, node(2, 200));
    }

    #[test]
    fn a_failed_write_stops_every_later_write_and_wakes_whoever_waits() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path: Arc<Path> = dir.path().join("read-only").into();
        fs::write(&path, b"").expect("create");
        let order = Arc::new(WriteOrder::default());
        // Ticket 2 waits for its turn on another thread.
        let waiting = {
            let order = Arc::clone(&order);
            std::thread::spawn(move || order.write_in_turn(2, &[]))
        };
        order.write_in_turn(0, &[]).expect("nothing to write");
        let w = QueuedWrite {
            file: Arc::new(File::open(&path).expect("open read-only")),
            path: Arc::clone(&path),
            offset: 0,
            bytes: b"x".to_vec(),
        };
        assert!(matches!(
            order.write_in_turn(1, &[w]),
            Err(TierError::Io { .. })
        ));
        assert!(matches!(
            waiting.join().expect("thread"),
            Err(TierError::WritesStopped)
        ));
        assert!(matches!(
            order.write_in_turn(3, &[]),
            Err(TierError::WritesStopped)
        ));
    }

    #[test]
    fn a_sync_dropped_unrun_still_writes_in_turn_and_later_syncs_go_on() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut st = SegmentStore::open(dir.path(), small()).expect("open");
        let a = st.append(1, id(1), id(1), &node(1, 200)).expect("append");
        st.sync().expect("sync");
        // Nothing appended: dropping it unrun only passes its turn on.
        drop(st.begin_sync().expect("begin"));
        let b = st.append(1, id(2), id(2), &node(2, 200)).expect("append");
        st.sync().expect("a later sync still runs");
        assert!(st.is_durable(b));
        // With writes: they happen at the drop (no fsync), so the file has no hole.
        let c = st.append(1, id(3), id(3), &node(3, 200)).expect("append");
        drop(st.begin_sync().expect("begin"));
        assert_eq!(file_len(dir.path(), c.segment), c.end());
        assert!(!st.is_durable(c));
        let d = st.append(1, id(4), id(4), &node(4, 200)).expect("append");
        st.sync().expect("sync");
        assert!(st.is_durable(d));
        drop(st);
        let st = SegmentStore::open(dir.path(), small()).expect("reopen");
        for (loc, i) in [(a, 1), (b, 2), (c, 3), (d, 4)] {
            assert_eq!(st.read(loc).expect("read").node, node(i, 200));
        }
    }

    #[test]
    fn claims_after_reopen_restore_the_live_bytes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut st = SegmentStore::open(dir.path(), small()).expect("open");
        let locs: Vec<_> = (0..40)
            .map(|i| st.append(i, id(i), id(i), &node(i, 200)).expect("append"))
            .collect();
        st.sync().expect("sync");
        let before = st.stats();
        drop(st);
        let mut st = SegmentStore::open(dir.path(), small()).expect("open");
        assert!(st.stats().iter().all(|s| s.live_bytes == 0));
        for &l in &locs {
            st.claim(l).expect("claim");
        }
        assert_eq!(st.stats(), before);
        assert!(st.unlink_dead().expect("unlink").is_empty());
    }
}

#[cfg(test)]
mod prop {
    //! The store against a model: `HashMap<Location, node bytes>` of the records stubs
    //! would reference, through random appends, reads, deaths, syncs, compactions,
    //! reopens and torn tails; and random byte flips, which may make reads or opens fail
    //! but never return wrong bytes or panic.
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[derive(Debug, Clone)]
    enum Op {
        /// Append a node of this length (bytes from the seed).
        Append { len: usize, seed: u8 },
        /// Read the i-th live location (modulo).
        Read(usize),
        /// Mark the i-th live location dead.
        MarkDead(usize),
        /// Sync.
        Sync,
        /// Compact the i-th sealed segment.
        Compact(usize),
        /// Remove the segments with nothing live.
        UnlinkDead,
        /// Sync, drop, open again, claim every live location.
        Reopen,
        /// Drop without syncing (what is buffered is lost), open with repair: every
        /// durable location survives; the others are forgotten (nothing names them).
        Crash,
        /// Sync, drop, cut the newest file at this fraction (per mille) of its length,
        /// open with repair: what lay wholly before the cut survives.
        TornTail(u16),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            8 => (12usize..400, any::<u8>()).prop_map(|(len, seed)| Op::Append { len, seed }),
            3 => any::<usize>().prop_map(Op::Read),
            3 => any::<usize>().prop_map(Op::MarkDead),
            1 => Just(Op::Sync),
            1 => any::<usize>().prop_map(Op::Compact),
            1 => Just(Op::UnlinkDead),
            1 => Just(Op::Reopen),
            1 => Just(Op::Crash),
            1 => (0u16..=1000).prop_map(Op::TornTail),
        ]
    }

    fn bytes(len: usize, seed: u8) -> Vec<u8> {
        (0..len).map(|i| seed.wrapping_add((i * 7) as u8)).collect()
    }

    fn opts(repair: bool) -> StoreOptions {
        StoreOptions {
            repair,
            segment_max_bytes: 2048,
            ..StoreOptions::default()
        }
    }

    struct Harness {
        dir: tempfile::TempDir,
        st: SegmentStore,
        model: HashMap<Location, Vec<u8>>,
        next_id: u64,
    }

    impl Harness {
        fn sorted(&self) -> Vec<Location> {
            let mut v: Vec<_> = self.model.keys().copied().collect();
            v.sort();
            v
        }

        fn check_all(&self) -> Result<(), TestCaseError> {
            for (loc, want) in &self.model {
                let got = self.st.read(*loc);
                prop_assert!(got.is_ok(), "{loc:?}: {got:?}");
                prop_assert_eq!(&got.expect("checked").node, want);
            }
            // The live bytes are exactly the model's records.
            let mut live: HashMap<u64, u64> = HashMap::new();
            for loc in self.model.keys() {
                *live.entry(loc.segment).or_default() += loc.record_size();
            }
            for s in self.st.stats() {
                prop_assert_eq!(s.live_bytes, live.get(&s.segment).copied().unwrap_or(0));
            }
            Ok(())
        }

        fn reopen(&mut self, repair: bool) -> Result<(), TestCaseError> {
            // The old store is dropped first, as a process that stops.
            let placeholder = tempfile::tempdir().expect("tempdir");
            drop(std::mem::replace(
                &mut self.st,
                SegmentStore::open(placeholder.path(), opts(false)).expect("open"),
            ));
            let st = SegmentStore::open(self.dir.path(), opts(repair));
            prop_assert!(st.is_ok(), "reopen: {st:?}");
            self.st = st.expect("checked");
            for loc in self.model.keys() {
                prop_assert!(self.st.claim(*loc).is_ok());
            }
            Ok(())
        }

        fn apply(&mut self, op: Op) -> Result<(), TestCaseError> {
            match op {
                Op::Append { len, seed } => {
                    let node = bytes(len, seed);
                    let id = self.next_id;
                    self.next_id += 1;
                    let first = StreamId::new(id, 0);
                    let loc = self.st.append(id % 3, first, StreamId::new(id, 5), &node);
                    prop_assert!(loc.is_ok());
                    let loc = loc.expect("checked");
                    prop_assert!(self.model.insert(loc, node).is_none(), "reused {loc:?}");
                }
                Op::Read(i) => {
                    let locs = self.sorted();
                    if let Some(&loc) = locs.get(i % locs.len().max(1)) {
                        let got = self.st.read(loc).map(|n| n.node).ok();
                        prop_assert_eq!(got.as_ref(), self.model.get(&loc));
                        let batch = self.st.read_batch(&locs).expect("batch");
                        let nodes = batch.run();
                        prop_assert!(nodes.is_ok());
                        for (n, l) in nodes.expect("checked").iter().zip(&locs) {
                            prop_assert_eq!(Some(&n.node), self.model.get(l));
                        }
                    }
                }
                Op::MarkDead(i) => {
                    let locs = self.sorted();
                    if let Some(&loc) = locs.get(i % locs.len().max(1)) {
                        prop_assert!(self.st.mark_dead(loc).is_ok());
                        self.model.remove(&loc);
                    }
                }
                Op::Sync => {
                    prop_assert!(self.st.sync().is_ok());
                    for loc in self.model.keys() {
                        prop_assert!(self.st.is_durable(*loc));
                    }
                }
                Op::Compact(i) => {
                    let sealed: Vec<u64> = self
                        .st
                        .stats()
                        .iter()
                        .filter(|s| s.sealed)
                        .map(|s| s.segment)
                        .collect();
                    if let Some(&n) = sealed.get(i % sealed.len().max(1)) {
                        let model = &self.model;
                        let moved = self.st.compact(n, |l| model.contains_key(&l));
                        prop_assert!(moved.is_ok(), "{moved:?}");
                        for (old, new) in moved.expect("checked") {
                            let node = self.model.remove(&old);
                            prop_assert!(node.is_some());
                            prop_assert!(self.st.is_durable(new));
                            self.model.insert(new, node.expect("checked"));
                        }
                        prop_assert!(self.model.keys().all(|l| l.segment != n));
                    }
                }
                Op::UnlinkDead => {
                    let gone = self.st.unlink_dead();
                    prop_assert!(gone.is_ok());
                    for n in gone.expect("checked") {
                        prop_assert!(self.model.keys().all(|l| l.segment != n));
                        prop_assert!(!self.dir.path().join(segment::file_name(n)).exists());
                    }
                }
                Op::Reopen => {
                    prop_assert!(self.st.sync().is_ok());
                    self.reopen(false)?;
                }
                Op::Crash => {
                    let st = &self.st;
                    self.model.retain(|l, _| st.is_durable(*l));
                    self.reopen(true)?;
                }
                Op::TornTail(per_mille) => {
                    prop_assert!(self.st.sync().is_ok());
                    let Some(newest) = self.st.stats().last().map(|s| s.segment) else {
                        return Ok(());
                    };
                    let path = self.dir.path().join(segment::file_name(newest));
                    let len = fs::metadata(&path).expect("meta").len();
                    let cut = len * u64::from(per_mille) / 1000;
                    fs::OpenOptions::new()
                        .write(true)
                        .open(&path)
                        .and_then(|f| f.set_len(cut))
                        .expect("truncate");
                    // Everything wholly before the cut survives, nothing after; a file cut
                    // inside its header goes entirely.
                    self.model.retain(|l, _| {
                        l.segment != newest || (cut >= HEADER_LEN && l.end() <= cut)
                    });
                    self.reopen(true)?;
                    for (l, _) in self.model.iter() {
                        prop_assert!(l.segment != newest || l.end() <= cut);
                    }
                }
            }
            Ok(())
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn store_matches_a_model(ops in proptest::collection::vec(op(), 1..80)) {
            let dir = tempfile::tempdir().expect("tempdir");
            let st = SegmentStore::open(dir.path(), opts(false)).expect("open");
            let mut h = Harness { dir, st, model: HashMap::new(), next_id: 1 };
            for op in ops {
                h.apply(op)?;
                h.check_all()?;
            }
            prop_assert!(h.st.sync().is_ok());
            h.reopen(false)?;
            h.check_all()?;
            let report = SegmentStore::check(h.dir.path(), false);
            prop_assert!(report.error.is_none(), "{:?}", report.lines);
        }

        #[test]
        fn any_file_content_opens_or_fails_cleanly(
            header in any::<bool>(),
            body in proptest::collection::vec(any::<u8>(), 0..3000),
            older in any::<bool>(),
        ) {
            let dir = tempfile::tempdir().expect("tempdir");
            let mut bytes = if header { segment::encode_header(5).to_vec() } else { Vec::new() };
            bytes.extend_from_slice(&body);
            fs::write(dir.path().join(segment::file_name(5)), &bytes).expect("write");
            if older {
                // The garbage is an older segment: a valid newest one follows it.
                fs::write(dir.path().join(segment::file_name(6)), segment::encode_header(6))
                    .expect("write");
            }
            for (verify, repair) in [(false, false), (true, false), (false, true), (true, true)] {
                let o = StoreOptions { verify, repair, ..opts(false) };
                if let Ok(mut st) = SegmentStore::open(dir.path(), o) {
                    // Whatever it accepted, it can append to and read back.
                    let id = StreamId::new(1, 0);
                    let loc = st.append(1, id, id, &[3u8; 16]);
                    prop_assert!(loc.is_ok());
                    prop_assert_eq!(st.read(loc.expect("checked")).map(|n| n.node).ok(), Some(vec![3u8; 16]));
                }
            }
            let _ = SegmentStore::check(dir.path(), false);
            let _ = SegmentStore::check(dir.path(), true);
        }

        #[test]
        fn flipped_bytes_never_give_wrong_bytes_or_panic(
            nodes in proptest::collection::vec((12usize..300, any::<u8>()), 1..40),
            flips in proptest::collection::vec((any::<u64>(), 1u8..=255), 1..6),
        ) {
            let dir = tempfile::tempdir().expect("tempdir");
            let mut st = SegmentStore::open(dir.path(), opts(false)).expect("open");
            let mut model = HashMap::new();
            for (i, (len, seed)) in nodes.iter().enumerate() {
                let id = StreamId::new(i as u64 + 1, 0);
                let node = bytes(*len, *seed);
                model.insert(st.append(7, id, id, &node).expect("append"), node);
            }
            st.sync().expect("sync");
            // Flip bytes anywhere in the files (headers, records, seals).
            let files: Vec<PathBuf> = st.stats().iter()
                .map(|s| dir.path().join(segment::file_name(s.segment)))
                .collect();
            let mut flipped: HashMap<(u64, u64), u8> = HashMap::new();
            for (pos, mask) in flips {
                let i = (pos % files.len() as u64) as usize;
                let len = fs::metadata(&files[i]).expect("meta").len();
                let off = (pos >> 8) % len;
                let f = fs::OpenOptions::new().read(true).write(true).open(&files[i]).expect("open");
                let mut b = [0u8];
                f.read_exact_at(&mut b, off).expect("read");
                f.write_all_at(&[b[0] ^ mask], off).expect("write");
                let n = segment::parse_file_name(
                    files[i].file_name().and_then(|s| s.to_str()).expect("name"),
                ).expect("segment name");
                *flipped.entry((n, off)).or_default() ^= mask;
            }
            // Two flips of one byte may cancel out: only a changed byte damages.
            let hit = |l: &Location| flipped.iter().any(|(&(n, off), &m)| {
                m != 0 && n == l.segment && off >= u64::from(l.offset) && off < l.end()
            });
            for (loc, want) in &model {
                match st.read(*loc) {
                    Ok(n) => {
                        prop_assert!(!hit(loc), "a damaged record was read: {loc:?}");
                        prop_assert_eq!(&n.node, want);
                    }
                    Err(e) => {
                        prop_assert!(hit(loc), "an intact record failed: {e}");
                        let corrupt = matches!(e, TierError::Corrupt { .. });
                        prop_assert!(corrupt);
                    }
                }
            }
            drop(st);
            for (verify, repair) in [(false, false), (true, false), (false, true)] {
                let o = StoreOptions { verify, repair, ..opts(false) };
                if let Ok(st) = SegmentStore::open(dir.path(), o) {
                    for (loc, want) in &model {
                        if let Ok(n) = st.read(*loc) {
                            prop_assert_eq!(&n.node, want);
                        }
                    }
                }
            }
            // The check reports (or not) without panicking; it writes nothing.
            let before: Vec<u64> = files.iter().map(|f| fs::metadata(f).map_or(0, |m| m.len())).collect();
            let _report = SegmentStore::check(dir.path(), false);
            let after: Vec<u64> = files.iter().map(|f| fs::metadata(f).map_or(0, |m| m.len())).collect();
            prop_assert_eq!(before, after);
        }
    }
}
