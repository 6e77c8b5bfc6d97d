//! Persistence: the effect log, snapshots, background saves and rewrites, and loading at
//! start-up (DESIGN.md §5, issue 7). `docs/format.md` draws the files byte by byte.
//!
//! ```text
//! <dir>/
//!   streamd.lock                       held (File::try_lock) while a server uses <dir>
//!   <dbfilename>                       dump.snap: SAVE, BGSAVE, save rules, SHUTDOWN SAVE
//!   <appenddirname>/                   appendonlydir
//!     <appendfilename>.manifest        which base + logs make up the dataset (manifest.rs)
//!     <appendfilename>.N.base.snap     base snapshot (snapshot.rs)
//!     <appendfilename>.M.incr.log      effect records since the base (record.rs, log.rs)
//! ```
//!
//! **Effects, not commands.** Write commands call [`crate::core::Ctx::propagate`] with the
//! deterministic form of what they did (an `XADD *` with the ID it generated, an
//! approximate trim as the exact result, a relative expiry as `PEXPIREAT`); the core
//! hands each to its [`Persistence`] (this module's [`Persist`], installed by
//! [`prepare`]), which frames it as a record in [`log::LogWriter`]'s pending buffer, with
//! `SELECT` when the database changes and `MULTI`/`EXEC` around a transaction's effects.
//! The core knows only that trait; this module knows the core (it replays logs through
//! the normal command path) and never the front end.
//!
//! **Group commit.** After a batch of pipelined commands, the connection task calls
//! [`commit`]: under `appendfsync always` it yields once so other ready connections run
//! their batches, then whoever resumes first writes everything pending, the fsync thread
//! syncs it once, and every waiting connection releases its replies together (blocked
//! clients' replies wait the same way). `everysec` and `no` write before replying and
//! fsync in the background (once a second) or never.
//!
//! **Snapshots and rewrites.** `SAVE` writes from the live keyspace; `BGSAVE` and
//! `BGREWRITEAOF` clone the keyspace (the only pause of the core; its length is in INFO
//! as `*_core_pause_usec`; stream nodes are shared with the clone, copy-on-write) and
//! serialize the clone on a thread. A rewrite first starts a
//! new log segment and records it in the manifest, so a crash at any moment leaves a
//! loadable set; when the new base is written the manifest is switched to it and the old
//! files are deleted.
//!
//! **Loading** replays the base and the logs through the normal command path in slices
//! of a few milliseconds while clients are answered `-LOADING`. A torn last record of
//! the newest log is cut (with a warning naming the offset); any other damage stops
//! start-up with [`PersistError::Corrupt`], which names the file, the offset and the
//! `streamd --check-aof FILE --fix` repair.

pub mod args;
pub mod check;
pub mod groups;
pub mod idmp;
pub mod import;
pub mod load;
pub mod log;
pub mod manifest;
pub mod record;
pub mod sink;
pub mod snapshot;
pub mod sync;

use crate::core::persistence::Persistence;
use crate::core::tier::TierSave;
use crate::core::{Core, SharedCore, ShutdownKind, unix_ms};
use load::{FrameReader, Next, Replayer};
use log::{FsyncPolicy, LogWriter};
use manifest::{Manifest, ManifestFile, Names};
use sink::FileSink;
use snapshot::SaveStats;
use std::collections::VecDeque;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Name of the lock file in the data directory.
pub const LOCK_FILE: &str = "streamd.lock";

/// Persistence failures: I/O with the file involved, and damaged files with the offset.
#[derive(Debug)]
#[non_exhaustive]
pub enum PersistError {
    /// An I/O error while `what` on `path`.
    Io {
        /// What was being done (`reading`, `creating`, ...).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// A damaged record (bad CRC, bad length, unparseable payload) not at the tail.
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Byte offset of the damaged record.
        offset: u64,
        /// What was wrong.
        why: String,
    },
    /// A record that cannot be applied (unknown command, impossible database).
    Replay {
        /// The file.
        path: PathBuf,
        /// Byte offset of the record.
        offset: u64,
        /// What was wrong.
        why: String,
    },
    /// A malformed manifest line.
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What was wrong.
        why: String,
    },
    /// A snapshot whose header or CRC is wrong.
    Snapshot {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        why: String,
    },
    /// Another server holds the data directory's lock.
    Locked {
        /// The lock file.
        path: PathBuf,
    },
    /// The manifest names a file that does not exist.
    Missing {
        /// The missing file.
        path: PathBuf,
    },
}

impl PersistError {
    /// An I/O error.
    pub fn io(what: &'static str, path: &Path, source: io::Error) -> PersistError {
        PersistError::Io {
            what,
            path: path.to_path_buf(),
            source,
        }
    }

    /// A damaged record.
    pub fn corrupt(path: &Path, offset: u64, why: &str) -> PersistError {
        PersistError::Corrupt {
            path: path.to_path_buf(),
            offset,
            why: why.to_string(),
        }
    }
}

impl fmt::Display for PersistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PersistError::Io { what, path, source } => {
                write!(f, "error {what} {}: {source}", path.display())
            }
            PersistError::Corrupt { path, offset, why } => write!(
                f,
                "Bad record in {} at offset {offset}: {why}. Refusing to start, so that no \
                 acknowledged write is dropped silently. Inspect the file with \
                 `streamd --check-aof {}`; `streamd --check-aof {} --fix` truncates it to the \
                 last good record before offset {offset} (the records after it are lost)",
                path.display(),
                path.display(),
                path.display()
            ),
            PersistError::Replay { path, offset, why } => write!(
                f,
                "Cannot replay the record in {} at offset {offset}: {why}",
                path.display()
            ),
            PersistError::Manifest { path, line, why } => {
                write!(f, "Bad manifest {} at line {line}: {why}", path.display())
            }
            PersistError::Snapshot { path, why } => {
                write!(f, "Bad snapshot {}: {why}", path.display())
            }
            PersistError::Locked { path } => write!(
                f,
                "The data directory is in use by another streamd (lock file {} is held)",
                path.display()
            ),
            PersistError::Missing { path } => write!(
                f,
                "The manifest names {}, which does not exist",
                path.display()
            ),
        }
    }
}

impl std::error::Error for PersistError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PersistError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The open log: writer, file names, manifest.
#[derive(Debug)]
pub struct Aof {
    /// The writer and its fsync thread.
    pub writer: LogWriter,
    /// File names.
    names: Names,
    /// The manifest as stored.
    manifest: Manifest,
    /// Database of the last record written (`None`: the next record starts with SELECT).
    last_db: Option<usize>,
    /// Bytes in the base and the incremental logs other than the current one.
    other_size: u64,
    /// Total log size after the last rewrite or load (auto-aof-rewrite's base).
    base_size: u64,
}

impl Aof {
    /// The open log: appending to `file` (the segment at `path`, `size` bytes long
    /// already) with `policy`, among the files `manifest` names, which take `other_size`
    /// bytes besides it.
    fn open(
        file: File,
        path: &Path,
        size: u64,
        policy: FsyncPolicy,
        names: Names,
        manifest: Manifest,
        other_size: u64,
    ) -> Result<Aof, PersistError> {
        let writer = LogWriter::new(Box::new(FileSink::new(file)), size, policy)
            .map_err(|e| PersistError::io("starting the fsync thread for", path, e))?;
        Ok(Aof {
            writer,
            names,
            manifest,
            last_db: None,
            other_size,
            base_size: other_size + size,
        })
    }

    /// Total size of the base and all incremental logs.
    pub fn current_size(&self) -> u64 {
        self.other_size + self.writer.size() + self.writer.pending_len() as u64
    }
}

/// What a background job produces.
type JobResult = Result<SaveStats, PersistError>;

/// A background save or rewrite.
#[derive(Debug)]
struct BgJob {
    /// When it started.
    started: Instant,
    /// The serializing thread.
    handle: JoinHandle<JobResult>,
    /// `dirty` when it started (BGSAVE).
    dirty_at_start: u64,
    /// Rewrite: sequence number of the new base and of the segment started with it.
    seq: u64,
    /// Rewrite: started after a full sync replaced the dataset (its end makes the
    /// new dataset durable, see `Persist::sync_hold`).
    after_sync: bool,
}

/// Counters and statuses for INFO persistence.
#[derive(Debug, Default, Clone)]
pub struct PersistStats {
    /// The last BGSAVE failed.
    pub rdb_last_bgsave_failed: bool,
    /// Duration of the last BGSAVE, seconds (-1: none yet).
    pub rdb_last_bgsave_time_sec: Option<u64>,
    /// Saves completed.
    pub rdb_saves: u64,
    /// The last rewrite failed.
    pub aof_last_bgrewrite_failed: bool,
    /// Duration of the last rewrite, seconds.
    pub aof_last_rewrite_time_sec: Option<u64>,
    /// Rewrites completed.
    pub aof_rewrites: u64,
    /// Core pause of the last BGSAVE (keyspace clone), microseconds.
    pub rdb_last_bgsave_core_pause_usec: u64,
    /// Core pause of the last BGREWRITEAOF (rotation and keyspace clone), microseconds.
    pub aof_last_rewrite_core_pause_usec: u64,
    /// Longest pause of either kind, microseconds.
    pub max_core_pause_usec: u64,
    /// When the last BGSAVE was attempted (save rules wait 5 s after a failure).
    pub last_bgsave_try: Option<Instant>,
    /// Keys loaded at start-up and how long it took.
    pub loaded_keys: u64,
    /// Load duration, milliseconds.
    pub load_ms: u64,
    /// Bytes read while loading.
    pub loaded_bytes: u64,
}

/// Progress of a load in progress (INFO `loading_*`).
#[derive(Debug, Clone, Default)]
pub struct LoadProgress {
    /// Unix seconds when loading started.
    pub start_time: u64,
    /// Bytes to read.
    pub total_bytes: u64,
    /// Bytes read.
    pub loaded_bytes: u64,
}

/// The persistence state the core owns.
#[derive(Debug, Default)]
pub struct Persist {
    /// The log, when `appendonly yes` and it is open.
    pub aof: Option<Aof>,
    /// (records appended, replication offset) at the last cron tick: when that many
    /// records are durable, the stream up to that offset is (WAITAOF).
    fsync_mark: (u64, u64),
    /// Nesting depth of EXEC (its effects are wrapped in MULTI/EXEC records).
    multi_depth: u32,
    /// A MULTI record was written for the running EXEC.
    multi_emitted: bool,
    /// BGSAVE in progress.
    bgsave: Option<BgJob>,
    /// BGREWRITEAOF in progress.
    rewrite: Option<BgJob>,
    /// A BGREWRITEAOF was asked for while one ran: start it when that one ends.
    rewrite_scheduled: bool,
    /// A BGSAVE SCHEDULE came while one ran: start it when that one ends.
    bgsave_scheduled: bool,
    /// A full sync replaced the dataset and the rewrite that puts it on disk has not
    /// finished: the log's files still describe the previous dataset, so nothing of
    /// the new history is durable yet, whatever was fsynced (WAITAOF's local count
    /// and a replica's FACK stay where they are, Redis's `AOF_WAIT_REWRITE`).
    sync_hold: bool,
    /// Statistics for INFO.
    pub stats: PersistStats,
    /// Set while loading.
    pub loading: Option<LoadProgress>,
    /// The data directory at start-up.
    data_dir: PathBuf,
    /// The held lock on the data directory.
    lock: Option<File>,
    /// Start of the effect record being written (between `effect_begin` and
    /// `effect_end`).
    open_record: usize,
}

impl Persist {
    /// Frames the records that must come before an effect on `db` (MULTI for the first
    /// effect of a transaction, SELECT when the database changes) and starts the
    /// effect's own record; the core appends its RESP array to the returned buffer.
    fn begin_effect(&mut self, db: usize) -> Option<&mut Vec<u8>> {
        let aof = self.aof.as_mut()?;
        if self.multi_depth > 0 && !self.multi_emitted {
            aof.writer.append(&["MULTI"]);
            self.multi_emitted = true;
        }
        if aof.last_db != Some(db) {
            aof.writer.append(&[
                b"SELECT".as_slice(),
                itoa::Buffer::new().format(db).as_bytes(),
            ]);
            aof.last_db = Some(db);
        }
        let (buf, start) = aof.writer.begin_record();
        self.open_record = start;
        Some(buf)
    }

    /// Writes pending records to the log file (not waiting for the fsync). Under
    /// `appendfsync always` a failed write stops the server, as Redis does.
    pub fn flush(&mut self) {
        let Some(aof) = self.aof.as_mut() else {
            return;
        };
        if let Err(e) = aof.writer.flush() {
            if aof.writer.policy() == FsyncPolicy::Always {
                tracing::error!(error = %e, "Can't recover from a write error on the append only file when appendfsync is 'always'. Exiting...");
                std::process::exit(1);
            }
            tracing::warn!(error = %e, "error writing to the append only file; write commands are refused until a write succeeds");
        }
    }
}

/// When every record appended is on disk, so is the replication stream up to now
/// (WAITAOF's local count, a replica's FACK).
fn note_all_durable(core: &mut Core) {
    let done = state(core).and_then(|p| p.aof.as_ref()).is_some_and(|aof| {
        aof.writer.pending_len() == 0 && aof.writer.durability().durable() >= aof.writer.appended()
    });
    if done {
        let offset = core.repl.offset;
        note_durable(core, offset);
    }
}

/// The replication stream up to `offset` is on disk: WAITAOF's local count and a
/// replica's FACK may say so, unless a full sync's dataset is not on disk yet.
fn note_durable(core: &mut Core, offset: u64) {
    if state(core).is_some_and(|p| p.sync_hold) {
        return;
    }
    core.repl.fsynced_offset = core.repl.fsynced_offset.max(offset);
}

/// Called by connection tasks after a batch and before writing its replies: makes the
/// records the replies depend on as safe as `appendfsync` promises. `Err` means the
/// fsync failed (the caller drops the replies and the server stops).
pub async fn commit(core: &SharedCore) -> Result<(), String> {
    let offset = core.borrow().repl.offset;
    let needs = commit_needs(&core.borrow());
    let (pending, wait) = match needs {
        CommitNeeds::Nothing => {
            note_all_durable(&mut core.borrow_mut());
            return Ok(());
        }
        CommitNeeds::Write { pending, rotation } => (pending, rotation.map(Wait::Rotated)),
        CommitNeeds::Durable {
            pending,
            need,
            shared,
        } => (pending, Some(Wait::Durable(need, shared))),
    };
    if pending {
        // Let every other ready connection run its batch first: whoever resumes first
        // writes everything pending, once (and under `always` the records of all of them
        // share the next fsync), as Redis writes once per event-loop round.
        tokio::task::yield_now().await;
        if let Some(p) = state_mut(&mut core.borrow_mut()) {
            p.flush();
        }
    }
    let r = match wait {
        None => return Ok(()),
        Some(Wait::Durable(need, shared)) => {
            let r = shared.wait_durable(need).await;
            if r.is_ok() {
                // Everything the replication stream held when this commit began is on
                // disk now (WAITAOF's local count).
                note_durable(&mut core.borrow_mut(), offset);
            }
            r
        }
        Some(Wait::Rotated((n, shared))) => shared.wait_rotated(n).await,
    };
    if let Err(e) = &r {
        tracing::error!(error = %e, "Can't recover from an error making the append only file durable: acknowledged writes could be lost. Exiting...");
        std::process::exit(1);
    }
    r
}

/// What [`commit`] waits for after writing.
enum Wait {
    /// Record `.0` durable (`always`).
    Durable(u64, std::sync::Arc<log::Durability>),
    /// A rotation's manifest stored (any policy).
    Rotated((u64, std::sync::Arc<log::Durability>)),
}

/// What [`commit`] has to do.
enum CommitNeeds {
    /// No log, or everything is already as safe as the policy asks.
    Nothing,
    /// `everysec` / `no`: write the pending records, and wait for a rotation's
    /// manifest if one is being stored (records in a file no manifest names yet must
    /// not be acknowledged).
    Write {
        /// Records are pending.
        pending: bool,
        /// Rotation hooks to wait for.
        rotation: Option<(u64, std::sync::Arc<log::Durability>)>,
    },
    /// `always`: wait until record `need` is durable (writing the pending ones first).
    Durable {
        /// Records are pending.
        pending: bool,
        /// The newest record the replies may depend on.
        need: u64,
        /// Where durability is published.
        shared: std::sync::Arc<log::Durability>,
    },
}

fn commit_needs(c: &Core) -> CommitNeeds {
    let Some(aof) = state(c).and_then(|p| p.aof.as_ref()) else {
        return CommitNeeds::Nothing;
    };
    let pending = aof.writer.pending_len() > 0;
    if aof.writer.policy() != FsyncPolicy::Always {
        let rotation = aof
            .writer
            .rotation_pending()
            .map(|n| (n, aof.writer.durability().clone()));
        return if pending || rotation.is_some() {
            CommitNeeds::Write { pending, rotation }
        } else {
            CommitNeeds::Nothing
        };
    }
    let need = aof.writer.appended();
    let d = aof.writer.durability();
    if d.durable() >= need {
        return CommitNeeds::Nothing;
    }
    CommitNeeds::Durable {
        pending,
        need,
        shared: d.clone(),
    }
}

// ---------------------------------------------------------------------------------------
// The core's door: Persistence
// ---------------------------------------------------------------------------------------

/// The core's `Persist`, if [`prepare`] installed one.
fn state(core: &Core) -> Option<&Persist> {
    core.persist.as_any().downcast_ref::<Persist>()
}

/// The log's fsync figures, for the metrics endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsyncStats {
    /// fsyncs completed since start.
    pub fsyncs: u64,
    /// The longest fsync seen, microseconds.
    pub max_usec: u64,
    /// Time spent in fsyncs since start, microseconds.
    pub total_usec: u64,
}

/// The effect log's fsync figures, or `None` when no log is open (`appendonly no`).
pub fn fsync_stats(core: &Core) -> Option<FsyncStats> {
    let d = state(core)?.aof.as_ref()?.writer.durability();
    Some(FsyncStats {
        fsyncs: d.fsyncs.load(std::sync::atomic::Ordering::Relaxed),
        max_usec: d.max_fsync_usec.load(std::sync::atomic::Ordering::Relaxed),
        total_usec: d
            .fsync_usec_total
            .load(std::sync::atomic::Ordering::Relaxed),
    })
}

/// The core's `Persist`, if [`prepare`] installed one.
fn state_mut(core: &mut Core) -> Option<&mut Persist> {
    core.persist.as_any_mut().downcast_mut::<Persist>()
}

/// The core's `Persist`, installing an empty one first if the core has none.
fn installed(core: &mut Core) -> &mut Persist {
    if state(core).is_none() {
        core.set_persistence(Box::<Persist>::default());
    }
    state_mut(core).expect("installed above")
}

/// Runs `f` with the core's `Persist` (installed if missing) lent out of the core, so
/// both can be changed at once.
fn with_persist<R>(core: &mut Core, f: impl FnOnce(&mut Persist, &mut Core) -> R) -> R {
    installed(core);
    core.with_persistence(|p, core| {
        let p = p
            .as_any_mut()
            .downcast_mut::<Persist>()
            .expect("installed above");
        f(p, core)
    })
}

impl Persistence for Persist {
    fn recording(&self) -> bool {
        self.aof.is_some()
    }

    #[inline]
    fn effect_begin(&mut self, db: usize) -> Option<&mut Vec<u8>> {
        self.begin_effect(db)
    }

    #[inline]
    fn effect_end(&mut self) {
        if let Some(aof) = self.aof.as_mut() {
            aof.writer.end_record(self.open_record);
        }
    }

    fn exec_begin(&mut self) {
        self.multi_depth += 1;
    }

    /// Closes the MULTI record if one was written.
    fn exec_end(&mut self) {
        self.multi_depth = self.multi_depth.saturating_sub(1);
        if self.multi_depth == 0 && self.multi_emitted {
            self.multi_emitted = false;
            if let Some(aof) = self.aof.as_mut() {
                aof.writer.append(&["EXEC"]);
            }
        }
    }

    fn write_refusal(&self) -> Option<String> {
        let aof = self.aof.as_ref()?;
        let e = aof
            .writer
            .write_error()
            .map(str::to_string)
            .or_else(|| aof.writer.durability().error())?;
        Some(format!("MISCONF Errors writing to the AOF file: {e}"))
    }

    fn save(&mut self, core: &mut Core) -> Result<(), String> {
        save(self, core)
    }

    fn bgsave(&mut self, core: &mut Core) -> Result<(), String> {
        bgsave(self, core)
    }

    fn schedule_bgsave(&mut self) {
        self.bgsave_scheduled = true;
    }

    fn bgrewriteaof(&mut self, core: &mut Core) -> Result<bool, String> {
        bgrewriteaof(self, core)
    }

    fn shutdown(&mut self, core: &mut Core, kind: ShutdownKind) -> Result<(), String> {
        shutdown_with(self, core, kind).map_err(|e| e.to_string())
    }

    fn debug_reload(&mut self, core: &mut Core) -> Result<(), String> {
        debug_reload(self, core)
    }

    fn debug_loadaof(&mut self, core: &mut Core) -> Result<(), String> {
        debug_loadaof(self, core)
    }

    fn config_changed(&mut self, core: &mut Core) -> Result<(), String> {
        config_changed(self, core)
    }

    fn cron(&mut self, core: &mut Core) {
        cron(self, core);
    }

    fn info(&self, core: &Core) -> String {
        info(self, core)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

// ---------------------------------------------------------------------------------------
// Start-up
// ---------------------------------------------------------------------------------------

/// One file to load.
#[derive(Debug, Clone)]
enum Source {
    /// A snapshot (base or dump).
    Snapshot(PathBuf),
    /// An incremental log; `last` = the newest (its torn tail may be cut).
    Log {
        /// The file.
        path: PathBuf,
        /// Newest log.
        last: bool,
    },
}

impl Source {
    fn path(&self) -> &Path {
        match self {
            Source::Snapshot(p) | Source::Log { path: p, .. } => p,
        }
    }
}

/// What to do with the log after loading.
#[derive(Debug, Clone)]
enum AofPlan {
    /// appendonly no.
    Off,
    /// Continue the set the manifest describes.
    Existing(Manifest),
    /// No manifest yet: create one (with a base from the loaded dataset, if any).
    Create,
}

/// A load in progress: the files left and the replay state.
pub struct Loader {
    sources: VecDeque<Source>,
    current: Option<(FrameReader, Source)>,
    replayer: Replayer,
    plan: AofPlan,
    names: Names,
    /// Bytes in all sources.
    total_bytes: u64,
    /// Bytes of the sources finished.
    done_bytes: u64,
    started: Instant,
    last_report: Instant,
    /// Torn tails to cut once loading succeeded: (file, good length).
    truncations: Vec<(PathBuf, u64)>,
    /// Cut torn tails (aof-load-truncated).
    allow_truncated: bool,
}

/// The data directory from the config.
fn config_dir(core: &Core) -> PathBuf {
    PathBuf::from(core.config.get("dir").unwrap_or("./data"))
}

/// `<dir>/<dbfilename>`.
pub fn dump_path(core: &Core) -> PathBuf {
    config_dir(core).join(core.config.get("dbfilename").unwrap_or("dump.snap"))
}

fn log_names(core: &Core, data_dir: &Path) -> Result<Names, PersistError> {
    let stem = core
        .config
        .get("appendfilename")
        .unwrap_or("appendonly")
        .to_string();
    let sub = core
        .config
        .get("appenddirname")
        .unwrap_or("appendonlydir")
        .to_string();
    for (name, v) in [("appendfilename", &stem), ("appenddirname", &sub)] {
        if v.is_empty() || v.contains('/') || v.contains(char::is_whitespace) {
            return Err(PersistError::io(
                "checking",
                Path::new(name),
                io::Error::other(format!("{name} must be a plain file name, got {v:?}")),
            ));
        }
    }
    Ok(Names {
        dir: data_dir.join(sub),
        stem,
    })
}

/// Takes the data directory's lock and decides what to load. Runs before the server
/// listens; [`run_loader`] then does the loading.
pub fn prepare(core: &mut Core) -> Result<Loader, PersistError> {
    let dir = config_dir(core);
    fs::create_dir_all(&dir).map_err(|e| PersistError::io("creating", &dir, e))?;
    let lock_path = dir.join(LOCK_FILE);
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| PersistError::io("opening", &lock_path, e))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => return Err(PersistError::Locked { path: lock_path }),
        Err(fs::TryLockError::Error(e)) => return Err(PersistError::io("locking", &lock_path, e)),
    }
    let _ = lock.set_len(0);
    let _ = io::Write::write_all(&mut &lock, format!("{}\n", std::process::id()).as_bytes());
    let p = installed(core);
    p.lock = Some(lock);
    p.data_dir = dir.clone();
    core.tier_open(&dir).map_err(|why| PersistError::Snapshot {
        path: dir.join("tier"),
        why,
    })?;

    let names = log_names(core, &dir)?;
    let dump = dump_path(core);
    let mut sources = VecDeque::new();
    let plan = if core.config.get_bool("appendonly") {
        fs::create_dir_all(&names.dir).map_err(|e| PersistError::io("creating", &names.dir, e))?;
        match Manifest::load(&names.manifest())? {
            Some(m) => {
                if let Some(b) = &m.base {
                    sources.push_back(Source::Snapshot(names.path(&b.name)));
                }
                for (i, f) in m.incrs.iter().enumerate() {
                    sources.push_back(Source::Log {
                        path: names.path(&f.name),
                        last: i + 1 == m.incrs.len(),
                    });
                }
                AofPlan::Existing(m)
            }
            None => {
                if dump.exists() {
                    tracing::info!(file = %dump.display(), "no append only manifest yet: loading the snapshot, which becomes the log's base");
                    sources.push_back(Source::Snapshot(dump));
                }
                AofPlan::Create
            }
        }
    } else {
        if dump.exists() {
            sources.push_back(Source::Snapshot(dump));
        }
        AofPlan::Off
    };
    let mut total = 0;
    for s in &sources {
        let meta = fs::metadata(s.path()).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                PersistError::Missing {
                    path: s.path().to_path_buf(),
                }
            } else {
                PersistError::io("reading", s.path(), e)
            }
        })?;
        total += meta.len();
    }
    Ok(Loader {
        sources,
        current: None,
        replayer: Replayer::new(),
        plan,
        names,
        total_bytes: total,
        done_bytes: 0,
        started: Instant::now(),
        last_report: Instant::now(),
        truncations: Vec::new(),
        allow_truncated: core.config.get("aof-load-truncated") != Some("no"),
    })
}

impl Loader {
    /// Bytes read so far.
    fn loaded_bytes(&self) -> u64 {
        self.done_bytes + self.current.as_ref().map(|(r, _)| r.offset()).unwrap_or(0)
    }

    /// Loads for about `budget`; true when everything is loaded.
    pub fn step(&mut self, core: &mut Core, budget: Duration) -> Result<bool, PersistError> {
        let deadline = Instant::now() + budget;
        loop {
            if self.current.is_none() {
                let Some(src) = self.sources.pop_front() else {
                    return Ok(true);
                };
                let reader = match &src {
                    Source::Snapshot(p) => {
                        let (start, end) = snapshot::verify(p)?;
                        tracing::info!(file = %p.display(), "loading snapshot");
                        let mut r = FrameReader::open(p, start, Some(end))?;
                        r.trust_file_crc();
                        r
                    }
                    Source::Log { path, .. } => {
                        tracing::info!(file = %path.display(), "loading append only file");
                        FrameReader::open(path, 0, None)?
                    }
                };
                self.replayer.start_file();
                self.current = Some((reader, src));
            }
            let (reader, src) = self.current.as_mut().expect("set above");
            let mut n = 0u32;
            loop {
                match reader.next_frame()? {
                    Next::Record { argv, offset, .. } => {
                        self.replayer.apply(core, argv, src.path(), offset)?;
                        n += 1;
                        if n.is_multiple_of(512) {
                            // Replayed reads of cold nodes (an XCLAIM checks its entry)
                            // leave warm copies: no cron runs meanwhile to drop them.
                            core.tier_loading_tick();
                        }
                        if n.is_multiple_of(512) && Instant::now() >= deadline {
                            let loaded = self.loaded_bytes();
                            self.report(core, loaded);
                            return Ok(false);
                        }
                    }
                    Next::End => {
                        if let Some(multi) = self.replayer.open_transaction() {
                            cut_or_refuse(
                                &mut self.truncations,
                                self.allow_truncated,
                                src.clone(),
                                multi,
                                "a transaction without its EXEC at the end of the file".into(),
                            )?;
                        }
                        break;
                    }
                    Next::Torn { offset, why } => {
                        let at = self
                            .replayer
                            .open_transaction()
                            .unwrap_or(offset)
                            .min(offset);
                        cut_or_refuse(
                            &mut self.truncations,
                            self.allow_truncated,
                            src.clone(),
                            at,
                            why,
                        )?;
                        break;
                    }
                    Next::Corrupt { offset, why } => {
                        return Err(bad_record(src, offset, why));
                    }
                }
            }
            let (reader, _) = self.current.take().expect("set above");
            self.done_bytes += reader.end();
        }
    }

    fn report(&mut self, core: &mut Core, loaded: u64) {
        if let Some(p) = state_mut(core).and_then(|p| p.loading.as_mut()) {
            p.loaded_bytes = loaded;
        }
        if self.last_report.elapsed() >= Duration::from_secs(1) {
            self.last_report = Instant::now();
            let secs = self.started.elapsed().as_secs_f64().max(1e-6);
            let keys: usize = core.dbs.iter().map(|d| d.len()).sum();
            tracing::info!(
                keys,
                loaded_mb = loaded as f64 / 1e6,
                total_mb = self.total_bytes as f64 / 1e6,
                mb_per_sec = loaded as f64 / 1e6 / secs,
                "loading: {:.0}% done",
                loaded as f64 * 100.0 / self.total_bytes.max(1) as f64
            );
        }
    }

    /// Runs the whole load at once (DEBUG RELOAD / LOADAOF, tests).
    pub fn run_to_end(mut self, core: &mut Core) -> Result<(), PersistError> {
        // As `run_loader` does: the replay is a load (no expiry, no retention, no
        // dead-letter moves, nothing logged), whatever the caller's core said before.
        let was = core.loading;
        core.loading = true;
        let r = (|| {
            while !self.step(core, Duration::from_secs(3600))? {}
            Ok(())
        })();
        core.loading = was;
        r?;
        self.finish(core)
    }

    /// After the last record: cuts torn tails, resets the counters the replay touched,
    /// and opens the log for appending.
    pub fn finish(self, core: &mut Core) -> Result<(), PersistError> {
        for (path, len) in &self.truncations {
            let f = OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(|e| PersistError::io("opening", path, e))?;
            f.set_len(*len)
                .and_then(|()| f.sync_all())
                .map_err(|e| PersistError::io("truncating", path, e))?;
        }
        let secs = self.started.elapsed().as_secs_f64();
        let keys: u64 = core.dbs.iter().map(|d| d.len() as u64).sum();
        let bytes = self.total_bytes;
        if let Some(p) = state_mut(core) {
            p.stats.loaded_keys = keys;
            p.stats.load_ms = (secs * 1000.0) as u64;
            p.stats.loaded_bytes = bytes;
        }
        if bytes > 0 {
            tracing::info!(
                keys,
                records = self.replayer.records,
                failed_records = self.replayer.failed,
                mb = bytes as f64 / 1e6,
                mb_per_sec = bytes as f64 / 1e6 / secs.max(1e-6),
                "DB loaded from disk: {secs:.3} seconds"
            );
        }
        sync::restore_state(core);
        core.tier_loaded().map_err(|why| PersistError::Snapshot {
            path: config_dir(core).join("tier"),
            why,
        })?;
        let (plan, names) = (self.plan, self.names);
        with_persist(core, |p, core| open_log(p, core, plan, names))
    }
}

/// A torn tail at `offset` of `src`: cut it (after the load) if it is the newest log's and
/// that is allowed, else refuse.
fn cut_or_refuse(
    truncations: &mut Vec<(PathBuf, u64)>,
    allow_truncated: bool,
    src: Source,
    offset: u64,
    why: String,
) -> Result<(), PersistError> {
    match src {
        Source::Log { path, last: true } if allow_truncated => {
            let len = fs::metadata(&path).map(|m| m.len()).unwrap_or(offset);
            tracing::warn!(
                file = %path.display(),
                offset,
                cut_bytes = len.saturating_sub(offset),
                reason = %why,
                "!!! Warning: the append only file ends with a torn record (a crash mid-write): \
                 loading up to offset {offset} and truncating the {} bytes after it",
                len.saturating_sub(offset)
            );
            truncations.push((path, offset));
            Ok(())
        }
        Source::Log { path, last: true } => Err(PersistError::Corrupt {
            path,
            offset,
            why: format!("{why} (aof-load-truncated is no)"),
        }),
        src => Err(bad_record(&src, offset, why)),
    }
}

/// A damaged frame at `offset` of `src`. In a log, the error says how `--check-aof --fix`
/// repairs it; a snapshot cannot be repaired (its CRC matched, so it was written so).
fn bad_record(src: &Source, offset: u64, why: String) -> PersistError {
    match src {
        Source::Snapshot(path) => PersistError::Snapshot {
            path: path.clone(),
            why: format!(
                "bad record at offset {offset}: {why} (the file's CRC matches, so it was \
                 written this way; restore the file from a backup)"
            ),
        },
        Source::Log { path, .. } => PersistError::Corrupt {
            path: path.clone(),
            offset,
            why,
        },
    }
}

/// Loads in slices of ~5 ms, yielding between them so clients get `-LOADING` answers;
/// then opens the log. The server stops with the error if loading fails.
pub async fn run_loader(core: SharedCore, mut loader: Loader) -> Result<(), PersistError> {
    {
        let mut c = core.borrow_mut();
        c.loading = true;
        installed(&mut c).loading = Some(LoadProgress {
            start_time: unix_ms() / 1000,
            total_bytes: loader.total_bytes,
            loaded_bytes: 0,
        });
    }
    let saved_stats = core.borrow().stats.clone();
    loop {
        let done = {
            let mut c = core.borrow_mut();
            loader.step(&mut c, Duration::from_millis(5))?
        };
        if done {
            break;
        }
        tokio::task::yield_now().await;
    }
    let mut c = core.borrow_mut();
    loader.finish(&mut c)?;
    // The replay is not client traffic: keep the statistics as they were.
    c.stats = saved_stats;
    c.dirty = 0;
    c.loading = false;
    if let Some(p) = state_mut(&mut c) {
        p.loading = None;
    }
    Ok(())
}

/// Opens (or creates) the log after loading.
fn open_log(
    p: &mut Persist,
    core: &mut Core,
    plan: AofPlan,
    names: Names,
) -> Result<(), PersistError> {
    let policy = FsyncPolicy::from_config(core.config.get("appendfsync").unwrap_or("everysec"));
    let mut manifest = match plan {
        AofPlan::Off => return Ok(()),
        AofPlan::Existing(m) => m,
        AofPlan::Create => {
            let mut m = Manifest::default();
            if core.dbs.iter().any(|d| !d.is_empty()) {
                let name = names.base(1);
                snapshot::save(
                    &names.path(&name),
                    &core.dbs,
                    &crate::scripting::library_codes(core),
                    unix_ms(),
                )?;
                m.base = Some(ManifestFile { name, seq: 1 });
            }
            m
        }
    };
    if manifest.incrs.is_empty() {
        let seq = manifest.max_seq().max(1);
        let name = names.incr(seq);
        create_empty(&names.path(&name))?;
        manifest.incrs.push(ManifestFile { name, seq });
        manifest.store(&names.manifest())?;
    }
    let last = manifest.incrs.last().expect("ensured above");
    let path = names.path(&last.name);
    let file = OpenOptions::new()
        .append(true)
        .open(&path)
        .map_err(|e| PersistError::io("opening", &path, e))?;
    let size = file
        .metadata()
        .map_err(|e| PersistError::io("reading", &path, e))?
        .len();
    let mut other_size = 0;
    for f in manifest.base.iter().chain(manifest.incrs.iter()) {
        if f.name != last.name {
            other_size += fs::metadata(names.path(&f.name))
                .map(|m| m.len())
                .unwrap_or(0);
        }
    }
    remove_orphans(&names, &manifest);
    p.aof = Some(Aof::open(
        file, &path, size, policy, names, manifest, other_size,
    )?);
    Ok(())
}

/// Creates an empty file and makes its directory entry durable.
fn create_empty(path: &Path) -> Result<(), PersistError> {
    File::create(path)
        .and_then(|f| f.sync_all())
        .map_err(|e| PersistError::io("creating", path, e))?;
    manifest::sync_dir(path)
}

/// Deletes `<stem>.<n>.base.snap` / `<stem>.<n>.incr.log` files the manifest does not name
/// (left by a crash between a manifest switch and the deletions after it), and temp files
/// of interrupted writes.
fn remove_orphans(names: &Names, m: &Manifest) {
    let Ok(entries) = fs::read_dir(&names.dir) else {
        return;
    };
    let keep: Vec<&str> = m
        .base
        .iter()
        .chain(m.incrs.iter())
        .map(|f| f.name.as_str())
        .collect();
    let prefix = format!("{}.", names.stem);
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(&prefix) else {
            continue;
        };
        let rest = rest.strip_suffix(".tmp").unwrap_or(rest);
        let ours = rest == "manifest" && name.ends_with(".tmp")
            || rest
                .strip_suffix(".base.snap")
                .or_else(|| rest.strip_suffix(".incr.log"))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()));
        if ours && !keep.contains(&name.as_str()) {
            tracing::info!(file = %name, "removing a log file no manifest names");
            let _ = fs::remove_file(e.path());
        }
    }
}

// ---------------------------------------------------------------------------------------
// SAVE, BGSAVE, BGREWRITEAOF, DEBUG RELOAD / LOADAOF, SHUTDOWN
// ---------------------------------------------------------------------------------------

/// SAVE: writes the snapshot now, from the live keyspace.
fn save(p: &mut Persist, core: &mut Core) -> Result<(), String> {
    if p.bgsave.is_some() {
        return Err("ERR Background save already in progress".into());
    }
    let path = dump_path(core);
    let started = Instant::now();
    core.tier_save_started(TierSave::Snapshot);
    let saved = snapshot::save(
        &path,
        &core.dbs,
        &crate::scripting::library_codes(core),
        unix_ms(),
    );
    core.tier_save_finished(TierSave::Snapshot, saved.is_ok(), p.aof.is_none());
    match saved {
        Ok(s) => {
            tracing::info!(file = %path.display(), bytes = s.bytes, ms = started.elapsed().as_millis() as u64, "DB saved on disk");
            core.dirty = 0;
            core.lastsave = unix_ms() / 1000;
            p.stats.rdb_saves += 1;
            p.stats.rdb_last_bgsave_failed = false;
            Ok(())
        }
        Err(e) => {
            tracing::error!(error = %e, "SAVE failed");
            p.stats.rdb_last_bgsave_failed = true;
            Err(format!("ERR {e}"))
        }
    }
}

/// The keyspace and the function libraries, cloned for a background job's thread, and
/// the core's pause since `t0` in µs, recorded as latency event `event` and in the
/// greatest pause.
fn clone_dataset(
    p: &mut Persist,
    core: &mut Core,
    t0: Instant,
    event: &'static str,
) -> (Vec<crate::core::keyspace::Db>, Vec<bytes::Bytes>, u64) {
    let dbs = core.dbs.clone();
    let functions = crate::scripting::library_codes(core);
    let pause = t0.elapsed().as_micros() as u64;
    core.latency_sample(event, pause / 1000);
    p.stats.max_core_pause_usec = p.stats.max_core_pause_usec.max(pause);
    (dbs, functions, pause)
}

/// BGSAVE: clones the keyspace and writes it on a thread.
fn bgsave(p: &mut Persist, core: &mut Core) -> Result<(), String> {
    if p.bgsave.is_some() {
        return Err("ERR Background save already in progress".into());
    }
    let path = dump_path(core);
    let t0 = Instant::now();
    let (dbs, functions, pause) = clone_dataset(p, core, t0, "bgsave-pause");
    core.tier_save_started(TierSave::Snapshot);
    let stats = &mut p.stats;
    stats.rdb_last_bgsave_core_pause_usec = pause;
    stats.last_bgsave_try = Some(Instant::now());
    let handle = std::thread::Builder::new()
        .name("streamd-bgsave".into())
        .spawn(move || snapshot::save(&path, &dbs, &functions, unix_ms()))
        .map_err(|e| {
            core.tier_save_finished(TierSave::Snapshot, false, false);
            format!("ERR can't start the background save thread: {e}")
        })?;
    tracing::info!(core_pause_usec = pause, "Background saving started");
    p.bgsave = Some(BgJob {
        started: Instant::now(),
        handle,
        dirty_at_start: core.dirty,
        seq: 0,
        after_sync: false,
    });
    Ok(())
}

/// BGREWRITEAOF: starts a new log segment (recorded in the manifest at once), clones the
/// keyspace, and writes the new base on a thread. A second request while one runs is
/// scheduled for when it ends.
fn bgrewriteaof(p: &mut Persist, core: &mut Core) -> Result<bool, String> {
    if p.rewrite.is_some() {
        p.rewrite_scheduled = true;
        return Ok(false);
    }
    if p.aof.is_none() {
        return Err("ERR Background append only file rewriting needs appendonly yes".into());
    }
    start_rewrite(p, core).map_err(|e| format!("ERR {e}"))?;
    Ok(true)
}

/// Rotates to a new segment, records it in the manifest, and starts writing a base for
/// it.
fn start_rewrite(p: &mut Persist, core: &mut Core) -> Result<(), PersistError> {
    let t0 = Instant::now();
    let aof = p.aof.as_mut().expect("checked by the callers");
    let seq = aof.manifest.max_seq() + 1;
    let name = aof.names.incr(seq);
    let path = aof.names.path(&name);
    // No fsync here (the core would wait for the disk): the sync thread stores the
    // manifest naming this file, which also makes its directory entry durable, before
    // any record written to it is reported durable.
    let file = OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(&path)
        .map_err(|e| PersistError::io("creating", &path, e))?;
    let old = aof.manifest.clone();
    let mut with_new = old.clone();
    with_new.incrs.push(ManifestFile {
        name: name.clone(),
        seq,
    });
    let (tx, rx) = std::sync::mpsc::channel();
    let manifest_path = aof.names.manifest();
    // After a full sync the new segment holds records of the new history, which mean
    // nothing on top of the old files: until the new base is written, a restart must
    // load the old dataset whole, so the manifest stored now does not name the segment
    // (storing it still makes the segment's directory entry durable).
    let stored = if p.sync_hold {
        old.clone()
    } else {
        with_new.clone()
    };
    let hook: log::Hook = Box::new(move || {
        let r = stored.store(&manifest_path).map_err(io::Error::other);
        let _ = tx.send(r.is_ok());
        r
    });
    aof.other_size += aof.writer.size() + aof.writer.pending_len() as u64;
    aof.writer
        .rotate(Box::new(FileSink::new(file)), 0, Some(hook))
        .map_err(|e| PersistError::io("writing", &path, e))?;
    aof.manifest = with_new;
    aof.last_db = None;
    let job = BaseJob {
        seq,
        wait_for_manifest: Some(rx),
        stale: old
            .base
            .iter()
            .chain(old.incrs.iter())
            .map(|f| aof.names.path(&f.name))
            .collect(),
    };
    spawn_base(p, core, job, t0)
}

/// Creates and opens for appending a new, empty log segment.
fn new_segment(path: &Path) -> Result<File, PersistError> {
    create_empty(path)?;
    OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(|e| PersistError::io("opening", path, e))
}

/// What the rewrite thread does besides writing the base.
struct BaseJob {
    /// Sequence number of the new base (and of the segment started with it).
    seq: u64,
    /// The manifest naming the new segment is being stored by the sync thread: wait for
    /// it before storing the final one.
    wait_for_manifest: Option<std::sync::mpsc::Receiver<bool>>,
    /// Files the final manifest no longer names, deleted once it is stored.
    stale: Vec<PathBuf>,
}

/// Clones the keyspace (the core's pause, measured from `t0`), then on a thread writes it
/// as base number `seq`, stores the manifest `{base seq, incr seq}` and deletes the
/// files it replaced.
fn spawn_base(
    p: &mut Persist,
    core: &mut Core,
    job: BaseJob,
    t0: Instant,
) -> Result<(), PersistError> {
    let aof = p.aof.as_ref().expect("checked by the callers");
    let seq = job.seq;
    let base = aof.names.path(&aof.names.base(seq));
    let manifest_path = aof.names.manifest();
    let last = Manifest::rewritten(&aof.names, seq);
    let (dbs, functions, pause) = clone_dataset(p, core, t0, "aof-rewrite-pause");
    core.tier_save_started(TierSave::Rewrite);
    p.stats.aof_last_rewrite_core_pause_usec = pause;
    let handle = std::thread::Builder::new()
        .name("streamd-rewrite".into())
        .spawn(move || {
            let stats = snapshot::save(&base, &dbs, &functions, unix_ms())?;
            drop(dbs);
            if let Some(rx) = job.wait_for_manifest
                && rx.recv() != Ok(true)
            {
                let _ = fs::remove_file(&base);
                return Err(PersistError::io(
                    "storing",
                    &manifest_path,
                    io::Error::other("the manifest naming the new log segment was not written"),
                ));
            }
            last.store(&manifest_path)?;
            let keep = [
                base.clone(),
                manifest_path.with_file_name(&last.incrs[0].name),
            ];
            for f in job.stale.iter().filter(|f| !keep.contains(f)) {
                let _ = fs::remove_file(f);
            }
            Ok(stats)
        })
        .map_err(|e| {
            core.tier_save_finished(TierSave::Rewrite, false, false);
            PersistError::io("starting the rewrite thread for", Path::new("base"), e)
        })?;
    tracing::info!(
        core_pause_usec = pause,
        "Background append only file rewriting started"
    );
    p.rewrite = Some(BgJob {
        started: Instant::now(),
        handle,
        dirty_at_start: 0,
        seq,
        after_sync: p.sync_hold,
    });
    Ok(())
}

impl BgJob {
    /// Seconds since the job started and its thread's result, once the thread has
    /// ended; a panic of the thread is an I/O error of `doing` on `file` saying
    /// `panicked`.
    fn join(self, doing: &'static str, file: &str, panicked: &str) -> (u64, JobResult) {
        let secs = self.started.elapsed().as_secs();
        let result = self.handle.join().unwrap_or_else(|_| {
            Err(PersistError::io(
                doing,
                Path::new(file),
                io::Error::other(panicked),
            ))
        });
        (secs, result)
    }
}

/// Finishes background jobs that are done (called from the cron).
fn reap_jobs(p: &mut Persist, core: &mut Core) {
    if let Some(job) = p.bgsave.take_if(|j| j.handle.is_finished()) {
        let dirty_at_start = job.dirty_at_start;
        let (secs, result) = job.join("saving", "snapshot", "the save thread panicked");
        core.tier_save_finished(TierSave::Snapshot, result.is_ok(), p.aof.is_none());
        let stats = &mut p.stats;
        stats.rdb_last_bgsave_time_sec = Some(secs);
        match result {
            Ok(s) => {
                tracing::info!(
                    bytes = s.bytes,
                    seconds = secs,
                    "Background saving terminated with success"
                );
                core.dirty = core.dirty.saturating_sub(dirty_at_start);
                core.lastsave = unix_ms() / 1000;
                stats.rdb_last_bgsave_failed = false;
                stats.rdb_saves += 1;
            }
            Err(e) => {
                tracing::error!(error = %e, "Background saving error");
                stats.rdb_last_bgsave_failed = true;
            }
        }
    }
    if let Some(job) = p.rewrite.take_if(|j| j.handle.is_finished()) {
        let (seq, after_sync) = (job.seq, job.after_sync);
        let (secs, result) = job.join("rewriting", "base", "the rewrite thread panicked");
        let outcome = result.and_then(|s| finish_rewrite(p, seq, s));
        core.tier_save_finished(TierSave::Rewrite, outcome.is_ok(), true);
        let stats = &mut p.stats;
        stats.aof_last_rewrite_time_sec = Some(secs);
        match outcome {
            Ok(()) => {
                tracing::info!(
                    seconds = secs,
                    "Background AOF rewrite finished successfully"
                );
                if after_sync {
                    // The full sync's dataset is on disk: the new history is durable
                    // as far as the log is.
                    p.sync_hold = false;
                }
                stats.aof_last_bgrewrite_failed = false;
                stats.aof_rewrites += 1;
            }
            Err(e) => {
                tracing::error!(error = %e, "Background AOF rewrite failed");
                stats.aof_last_bgrewrite_failed = true;
            }
        }
        if p.rewrite_scheduled && p.aof.is_some() {
            p.rewrite_scheduled = false;
            if let Err(e) = start_rewrite(p, core) {
                tracing::error!(error = %e, "scheduled AOF rewrite could not start");
            }
        }
    }
}

/// A rewrite's thread stored the manifest `{base seq, incr seq}`: the core's view follows.
fn finish_rewrite(p: &mut Persist, seq: u64, s: SaveStats) -> Result<(), PersistError> {
    let Some(aof) = p.aof.as_mut() else {
        // appendonly was turned off meanwhile.
        return Ok(());
    };
    aof.manifest = Manifest::rewritten(&aof.names, seq);
    aof.other_size = s.bytes;
    aof.base_size = aof.current_size();
    Ok(())
}

/// SHUTDOWN (and SIGTERM/SIGINT): flushes and fsyncs the log, and writes the snapshot
/// when asked to (SAVE) or when save points are configured (the default).
fn shutdown_with(p: &mut Persist, core: &mut Core, kind: ShutdownKind) -> Result<(), PersistError> {
    if core.loading {
        return Ok(());
    }
    if let Some(aof) = p.aof.as_mut() {
        aof.writer
            .sync_all()
            .map_err(|e| PersistError::io("syncing", &aof.names.manifest(), e))?;
    }
    let save = match kind {
        ShutdownKind::Save => true,
        ShutdownKind::NoSave => false,
        ShutdownKind::Default => !core.config.get("save").unwrap_or("").trim().is_empty(),
    };
    if save {
        let path = dump_path(core);
        tracing::info!(file = %path.display(), "Saving the final snapshot before exiting.");
        snapshot::save(
            &path,
            &core.dbs,
            &crate::scripting::library_codes(core),
            unix_ms(),
        )?;
        core.dirty = 0;
    }
    if save || p.aof.is_some() {
        sync::save_state_logged(core);
    }
    Ok(())
}

/// SHUTDOWN's persistence work for the server's own stop (a signal): what
/// [`Persistence::shutdown`] does for the command.
pub fn shutdown(core: &mut Core, kind: ShutdownKind) -> Result<(), PersistError> {
    with_persist(core, |p, core| shutdown_with(p, core, kind))
}

/// Empties every database (before a reload).
fn empty_data(core: &mut Core) {
    for db in core.dbs.iter_mut() {
        db.clear();
    }
    core.touch_all(None);
}

/// DEBUG RELOAD: saves the snapshot and loads it back in place of the dataset.
fn debug_reload(p: &mut Persist, core: &mut Core) -> Result<(), String> {
    save(p, core)?;
    let path = dump_path(core);
    empty_data(core);
    load_files(core, vec![Source::Snapshot(path)]).map_err(|e| format!("ERR {e}"))
}

/// DEBUG LOADAOF: makes the log durable and loads it back in place of the dataset.
fn debug_loadaof(p: &mut Persist, core: &mut Core) -> Result<(), String> {
    let Some(aof) = p.aof.as_mut() else {
        return Err("ERR appendonly is off".into());
    };
    aof.writer.sync_all().map_err(|e| format!("ERR {e}"))?;
    let mut sources = Vec::new();
    if let Some(b) = &aof.manifest.base {
        sources.push(Source::Snapshot(aof.names.path(&b.name)));
    }
    for f in &aof.manifest.incrs {
        sources.push(Source::Log {
            path: aof.names.path(&f.name),
            last: false,
        });
    }
    empty_data(core);
    load_files(core, sources).map_err(|e| format!("ERR {e}"))
}

/// Synchronous load of `sources` into the (empty) dataset, with logging off.
fn load_files(core: &mut Core, sources: Vec<Source>) -> Result<(), PersistError> {
    let mut loader = Loader {
        sources: sources.into(),
        current: None,
        replayer: Replayer::new(),
        plan: AofPlan::Off,
        names: Names {
            dir: PathBuf::new(),
            stem: String::new(),
        },
        total_bytes: 0,
        done_bytes: 0,
        started: Instant::now(),
        last_report: Instant::now(),
        truncations: Vec::new(),
        allow_truncated: false,
    };
    let was = core.loading;
    core.loading = true;
    let saved_stats = core.stats.clone();
    let r = (|| {
        while !loader.step(core, Duration::from_secs(3600))? {}
        Ok(())
    })();
    core.stats = saved_stats;
    core.loading = was;
    core.dirty = 0;
    r
}

/// Applies CONFIG SET changes to `appendonly` and `appendfsync`.
fn config_changed(p: &mut Persist, core: &mut Core) -> Result<(), String> {
    if core.loading {
        return Ok(());
    }
    let want = core.config.get_bool("appendonly");
    let policy = FsyncPolicy::from_config(core.config.get("appendfsync").unwrap_or("everysec"));
    match (want, p.aof.is_some()) {
        (true, false) => enable_aof(p, core).map_err(|e| format!("ERR {e}"))?,
        (false, true) => {
            let mut aof = p.aof.take().expect("checked");
            if let Err(e) = aof.writer.sync_all() {
                tracing::warn!(error = %e, "syncing the append only file while turning it off");
            }
            tracing::info!("append only file turned off");
        }
        _ => {}
    }
    if let Some(aof) = p.aof.as_mut() {
        aof.writer.set_policy(policy);
    }
    Ok(())
}

/// `CONFIG SET appendonly yes`: effects go to a new segment at once and its base is
/// written in the background; the manifest naming both is stored when the base is
/// complete (until then a restart does not see the new log).
fn enable_aof(p: &mut Persist, core: &mut Core) -> Result<(), PersistError> {
    let t0 = Instant::now();
    if p.data_dir.as_os_str().is_empty() {
        p.data_dir = config_dir(core);
    }
    let names = log_names(core, &p.data_dir)?;
    fs::create_dir_all(&names.dir).map_err(|e| PersistError::io("creating", &names.dir, e))?;
    let manifest = Manifest::load(&names.manifest())?.unwrap_or_default();
    // The files of an older log (appendonly was on once) go when the new manifest is in.
    let stale = manifest
        .base
        .iter()
        .chain(manifest.incrs.iter())
        .map(|f| names.path(&f.name))
        .collect();
    let seq = manifest.max_seq() + 1;
    let path = names.path(&names.incr(seq));
    let file = new_segment(&path)?;
    let policy = FsyncPolicy::from_config(core.config.get("appendfsync").unwrap_or("everysec"));
    // Sizes start at 0 (the older files are stale); the rewrite started below sets them.
    p.aof = Some(Aof::open(file, &path, 0, policy, names, manifest, 0)?);
    let job = BaseJob {
        seq,
        wait_for_manifest: None,
        stale,
    };
    let r = spawn_base(p, core, job, t0);
    if r.is_err() {
        p.aof = None;
    }
    r
}

/// Periodic work: writes pending records, reaps background jobs, runs the save rules
/// and the automatic rewrite.
fn cron(p: &mut Persist, core: &mut Core) {
    if core.loading {
        return;
    }
    p.flush();
    if let Some(aof) = p.aof.as_ref() {
        // WAITAOF's local count: once the records appended at the last tick are on
        // disk, so is the replication stream up to the offset noted with them.
        let durable = aof.writer.durability().durable();
        let appended = aof.writer.appended();
        let (mark, mark_offset) = p.fsync_mark;
        if p.sync_hold {
            // Nothing of the new history is durable before its dataset is on disk;
            // the marks start again in its offsets.
            p.fsync_mark = (appended, core.repl.offset);
        } else {
            if durable >= mark {
                core.repl.fsynced_offset = core.repl.fsynced_offset.max(mark_offset);
            }
            if durable >= mark || appended < mark {
                p.fsync_mark = (appended, core.repl.offset);
            }
            if appended == durable {
                core.repl.fsynced_offset = core.repl.fsynced_offset.max(core.repl.offset);
            }
        }
        core.serve_waiters(unix_ms());
        // The longest fsync since the last tick, for the latency monitor (the sync
        // thread cannot reach the core; the cron brings its figure over).
        let usec = aof
            .writer
            .durability()
            .recent_max_fsync_usec
            .swap(0, std::sync::atomic::Ordering::Relaxed);
        core.latency_sample("aof-fsync", usec / 1000);
    }
    reap_jobs(p, core);
    if p.bgsave_scheduled && p.bgsave.is_none() {
        p.bgsave_scheduled = false;
        if let Err(e) = bgsave(p, core) {
            tracing::warn!(error = %e, "scheduled BGSAVE failed to start");
        }
    }
    let now = unix_ms() / 1000;
    if p.bgsave.is_none() && p.rewrite.is_none() && core.dirty > 0 {
        let points = core.config.get("save").unwrap_or("").to_string();
        let nums: Vec<u64> = points
            .split_whitespace()
            .filter_map(|s| s.parse().ok())
            .collect();
        let retry_ok = !p.stats.rdb_last_bgsave_failed
            || p.stats
                .last_bgsave_try
                .is_none_or(|t| t.elapsed() > Duration::from_secs(5));
        for point in nums.chunks(2) {
            let [secs, changes] = point else { continue };
            if core.dirty >= *changes && now.saturating_sub(core.lastsave) > *secs && retry_ok {
                tracing::info!("{changes} changes in {secs} seconds. Saving...");
                if let Err(e) = bgsave(p, core) {
                    tracing::warn!(error = %e, "save rule: BGSAVE failed to start");
                }
                break;
            }
        }
    }
    if p.rewrite.is_none()
        && p.bgsave.is_none()
        && let Some(aof) = p.aof.as_ref()
    {
        let perc = core.config.get_i64("auto-aof-rewrite-percentage").max(0) as u64;
        let min = core.config.get_i64("auto-aof-rewrite-min-size").max(0) as u64;
        let size = aof.current_size();
        let base = aof.base_size.max(1);
        if perc > 0 && size > min && size > base && (size - base) * 100 / base >= perc {
            tracing::info!(
                size,
                base,
                "Starting automatic rewriting of AOF on {}% growth",
                (size - base) * 100 / base
            );
            if let Err(e) = start_rewrite(p, core) {
                tracing::error!(error = %e, "automatic AOF rewrite could not start");
            }
        }
    }
}

/// The `# Persistence` section of INFO (its body).
fn info(p: &Persist, core: &Core) -> String {
    let s = &p.stats;
    let yes = |b: bool| if b { "err" } else { "ok" };
    let mut out = String::new();
    let loading = core.loading;
    out.push_str(&format!(
        "loading:{}\r\nasync_loading:0\r\n",
        u8::from(loading)
    ));
    out.push_str("current_cow_peak:0\r\ncurrent_cow_size:0\r\ncurrent_fork_perc:0.00\r\ncurrent_save_keys_processed:0\r\ncurrent_save_keys_total:0\r\n");
    out.push_str(&format!(
        "rdb_changes_since_last_save:{}\r\nrdb_bgsave_in_progress:{}\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:{}\r\nrdb_last_bgsave_time_sec:{}\r\nrdb_current_bgsave_time_sec:{}\r\nrdb_saves:{}\r\nrdb_last_bgsave_core_pause_usec:{}\r\n",
        core.dirty,
        u8::from(p.bgsave.is_some()),
        core.lastsave,
        yes(s.rdb_last_bgsave_failed),
        s.rdb_last_bgsave_time_sec.map(|v| v as i64).unwrap_or(-1),
        p.bgsave.as_ref().map(|j| j.started.elapsed().as_secs() as i64).unwrap_or(-1),
        s.rdb_saves,
        s.rdb_last_bgsave_core_pause_usec,
    ));
    let write_err = p.aof.as_ref().is_some_and(|a| {
        a.writer.write_error().is_some() || a.writer.durability().error().is_some()
    });
    out.push_str(&format!(
        "aof_enabled:{}\r\naof_rewrite_in_progress:{}\r\naof_rewrite_scheduled:{}\r\naof_last_rewrite_time_sec:{}\r\naof_current_rewrite_time_sec:{}\r\naof_last_bgrewrite_status:{}\r\naof_rewrites:{}\r\naof_last_write_status:{}\r\naof_last_rewrite_core_pause_usec:{}\r\nmax_core_pause_usec:{}\r\n",
        u8::from(p.aof.is_some()),
        u8::from(p.rewrite.is_some()),
        u8::from(p.rewrite_scheduled),
        s.aof_last_rewrite_time_sec.map(|v| v as i64).unwrap_or(-1),
        p.rewrite.as_ref().map(|j| j.started.elapsed().as_secs() as i64).unwrap_or(-1),
        yes(s.aof_last_bgrewrite_failed),
        s.aof_rewrites,
        yes(write_err),
        s.aof_last_rewrite_core_pause_usec,
        s.max_core_pause_usec,
    ));
    if let Some(aof) = p.aof.as_ref() {
        let d = aof.writer.durability();
        out.push_str(&format!(
            "aof_current_size:{}\r\naof_base_size:{}\r\naof_pending_rewrite:{}\r\naof_buffer_length:{}\r\naof_pending_bio_fsync:{}\r\naof_delayed_fsync:0\r\naof_fsync_policy:{}\r\naof_fsyncs:{}\r\naof_max_fsync_usec:{}\r\naof_records_unsynced:{}\r\n",
            aof.current_size(),
            aof.base_size,
            u8::from(p.rewrite_scheduled),
            aof.writer.pending_len(),
            u8::from(d.syncing()),
            match d.policy() {
                FsyncPolicy::Always => "always",
                FsyncPolicy::EverySec => "everysec",
                FsyncPolicy::No => "no",
            },
            d.fsyncs.load(std::sync::atomic::Ordering::Relaxed),
            d.max_fsync_usec.load(std::sync::atomic::Ordering::Relaxed),
            aof.writer.appended().saturating_sub(d.durable()),
        ));
    }
    if let Some(l) = p.loading.as_ref() {
        let elapsed = (unix_ms() / 1000).saturating_sub(l.start_time);
        let perc = l.loaded_bytes as f64 * 100.0 / l.total_bytes.max(1) as f64;
        let eta = if l.loaded_bytes > 0 {
            (elapsed as f64 * (l.total_bytes - l.loaded_bytes.min(l.total_bytes)) as f64
                / l.loaded_bytes as f64) as u64
        } else {
            1
        };
        out.push_str(&format!(
            "loading_start_time:{}\r\nloading_total_bytes:{}\r\nloading_rdb_used_mem:0\r\nloading_loaded_bytes:{}\r\nloading_loaded_perc:{perc:.2}\r\nloading_eta_seconds:{eta}\r\n",
            l.start_time, l.total_bytes, l.loaded_bytes
        ));
    } else {
        out.push_str(&format!(
            "rdb_last_load_keys_loaded:{}\r\nrdb_last_load_keys_expired:0\r\nload_last_duration_ms:{}\r\nload_last_bytes:{}\r\n",
            s.loaded_keys, s.load_ms, s.loaded_bytes
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_files_no_manifest_names_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let names = Names {
            dir: dir.path().to_path_buf(),
            stem: "appendonly".into(),
        };
        let m = Manifest::rewritten(&names, 3);
        let keep = [
            "appendonly.3.base.snap",
            "appendonly.3.incr.log",
            "appendonly.manifest",
            "notes.txt",
            "appendonly.x.incr.log",
        ];
        let gone = [
            "appendonly.2.base.snap",
            "appendonly.2.incr.log",
            "appendonly.4.incr.log",
            "appendonly.4.base.snap.tmp",
            "appendonly.manifest.tmp",
        ];
        for f in keep.iter().chain(gone.iter()) {
            fs::write(dir.path().join(f), b"x").unwrap();
        }
        remove_orphans(&names, &m);
        for f in keep {
            assert!(dir.path().join(f).exists(), "{f} was removed");
        }
        for f in gone {
            assert!(!dir.path().join(f).exists(), "{f} was kept");
        }
    }
}
