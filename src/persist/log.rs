//! The append-only effect log: the core-side writer ([`LogWriter`]) and the fsync thread
//! it shares a [`Durability`] record with.
//!
//! ```text
//!  core thread                                  sync thread ("streamd-fsync")
//!  ───────────                                  ─────────────────────────────
//!  propagate(effect) → pending (framed records)
//!  end of a batch: flush()
//!    write(pending) → file (page cache)
//!    written = appended ───────────────────────▶ always: woken at once
//!                                               everysec: at most once a second
//!                                               target = written; fdatasync
//!  connection: reply held until      ◀───────── durable = target; notify waiters
//!    durable >= appended(at batch end)
//! ```
//!
//! Sequence numbers count records: `appended` (core only) is the number of records
//! encoded so far, `written` the number handed to the OS, `durable` the number known to
//! be on disk. Invariant: `durable <= written <= appended`, each monotonic. A reply that
//! depends on records up to `n` is released once `durable >= n` (`appendfsync always`)
//! or once `written >= n` (`everysec`, `no`: the bytes are in the OS, so a crash of the
//! process alone loses nothing).
//!
//! Group commit falls out of the shapes: every connection whose batch finished while a
//! fsync ran waits for the next one, and the next one covers all of them. The fsync never
//! runs on the core thread, so the core keeps executing meanwhile.
//!
//! Failure: a failed write is cut back (`truncate`) and kept pending for the next flush
//! (`aof_last_write_status:err` meanwhile); a failed fsync is sticky — `durable` never
//! advances again and waiters get the error (the server stops under `always`, as Redis
//! does: nothing acknowledged may be lost).

use super::record;
use super::sink::LogSink;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// `appendfsync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// fsync before any reply that depends on the records is released.
    Always,
    /// fsync from the sync thread at most once a second.
    EverySec,
    /// Never fsync explicitly; the OS flushes when it likes.
    No,
}

impl FsyncPolicy {
    /// From the config value (`always`, `everysec`, `no`).
    pub fn from_config(value: &str) -> FsyncPolicy {
        match value {
            "always" => FsyncPolicy::Always,
            "no" => FsyncPolicy::No,
            _ => FsyncPolicy::EverySec,
        }
    }
}

/// State shared by the core, the sync thread and the connection tasks waiting for
/// their records to be durable.
#[derive(Debug)]
pub struct Durability {
    /// Records handed to the OS.
    written: AtomicU64,
    /// Records known durable.
    durable: AtomicU64,
    /// The first fsync error; sticky.
    failed: Mutex<Option<String>>,
    /// `failed` is set (read without the lock on every write command).
    has_failed: AtomicBool,
    /// Set while an fsync runs (INFO `aof_pending_bio_fsync`).
    syncing: AtomicBool,
    /// Rotation hooks completed (each rotation's manifest is stored).
    rotated: AtomicU64,
    /// fsyncs completed.
    pub fsyncs: AtomicU64,
    /// Longest fsync seen, microseconds.
    pub max_fsync_usec: AtomicU64,
    /// Time spent in fsyncs since start, microseconds (with `fsyncs`, the mean latency
    /// over any window: the metrics endpoint serves both as counters).
    pub fsync_usec_total: AtomicU64,
    /// Longest fsync since the cron last took it (the `aof-fsync` latency event),
    /// microseconds.
    pub recent_max_fsync_usec: AtomicU64,
    /// Wakes connection tasks waiting for durability.
    notify: Notify,
    /// Sync thread control.
    ctl: Mutex<SyncCtl>,
    /// Wakes the sync thread.
    cond: Condvar,
}

/// What the sync thread works on, under [`Durability::ctl`].
struct SyncCtl {
    /// Handles to fsync: the current log file last; older ones (before a rotation) are
    /// synced once more and dropped.
    sinks: Vec<Box<dyn LogSink>>,
    /// The fsync policy.
    policy: FsyncPolicy,
    /// Highest `written` an `always` flush asked to be made durable.
    requested: u64,
    /// Stop after a last fsync.
    stop: bool,
    /// Work that must be done before the next fsync counts (a rotation's manifest
    /// update): run in order, off the core thread, before durability is published.
    hooks: Vec<Hook>,
}

/// A rotation's pre-sync work ([`LogWriter::rotate`]).
pub type Hook = Box<dyn FnOnce() -> io::Result<()> + Send>;

impl std::fmt::Debug for SyncCtl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyncCtl")
            .field("sinks", &self.sinks.len())
            .field("policy", &self.policy)
            .field("requested", &self.requested)
            .field("stop", &self.stop)
            .finish()
    }
}

impl Durability {
    fn new(policy: FsyncPolicy, sink: Box<dyn LogSink>, start: u64) -> Durability {
        Durability {
            written: AtomicU64::new(start),
            durable: AtomicU64::new(start),
            failed: Mutex::new(None),
            has_failed: AtomicBool::new(false),
            syncing: AtomicBool::new(false),
            rotated: AtomicU64::new(0),
            fsyncs: AtomicU64::new(0),
            max_fsync_usec: AtomicU64::new(0),
            fsync_usec_total: AtomicU64::new(0),
            recent_max_fsync_usec: AtomicU64::new(0),
            notify: Notify::new(),
            ctl: Mutex::new(SyncCtl {
                sinks: vec![sink],
                policy,
                requested: start,
                stop: false,
                hooks: Vec::new(),
            }),
            cond: Condvar::new(),
        }
    }

    /// Records handed to the OS.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Acquire)
    }

    /// Records known to be on disk.
    pub fn durable(&self) -> u64 {
        self.durable.load(Ordering::Acquire)
    }

    /// The sticky fsync error, if one happened.
    pub fn error(&self) -> Option<String> {
        if !self.has_failed.load(Ordering::Acquire) {
            return None;
        }
        self.failed.lock().expect("durability lock").clone()
    }

    /// True while the sync thread is inside an fsync.
    pub fn syncing(&self) -> bool {
        self.syncing.load(Ordering::Relaxed)
    }

    /// The current fsync policy.
    pub fn policy(&self) -> FsyncPolicy {
        self.ctl.lock().expect("durability lock").policy
    }

    /// Waits until record `seq` is durable (`Ok`) or an fsync failed (`Err`).
    pub async fn wait_durable(&self, seq: u64) -> Result<(), String> {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.durable() >= seq {
                return Ok(());
            }
            if let Some(e) = self.error() {
                return Err(e);
            }
            notified.await;
        }
    }

    /// Waits until `n` rotation hooks have completed (`Ok`) or one failed (`Err`).
    pub async fn wait_rotated(&self, n: u64) -> Result<(), String> {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.rotated.load(Ordering::Acquire) >= n {
                return Ok(());
            }
            if let Some(e) = self.error() {
                return Err(e);
            }
            notified.await;
        }
    }

    /// Blocks the calling thread until record `seq` is durable or an fsync failed.
    pub fn wait_durable_blocking(&self, seq: u64) -> Result<(), String> {
        let mut ctl = self.ctl.lock().expect("durability lock");
        loop {
            if self.durable() >= seq {
                return Ok(());
            }
            if let Some(e) = self.error() {
                return Err(e);
            }
            if ctl.requested < seq {
                ctl.requested = seq;
                self.cond.notify_all();
            }
            ctl = self
                .cond
                .wait_timeout(ctl, Duration::from_millis(50))
                .expect("durability lock")
                .0;
        }
    }

    /// Asks the sync thread to make everything written durable (`always`).
    fn request(&self, seq: u64) {
        let mut ctl = self.ctl.lock().expect("durability lock");
        if ctl.requested < seq {
            ctl.requested = seq;
            self.cond.notify_all();
        }
    }

    fn fail(&self, msg: String) {
        let mut f = self.failed.lock().expect("durability lock");
        if f.is_none() {
            *f = Some(msg);
        }
        self.has_failed.store(true, Ordering::Release);
        drop(f);
        self.notify.notify_waiters();
        self.cond.notify_all();
    }

    fn mark_durable(&self, seq: u64) {
        self.durable.fetch_max(seq, Ordering::AcqRel);
        self.notify.notify_waiters();
        self.cond.notify_all();
    }
}

/// The sync thread's loop: fsync when asked (`always`), once a second when something is
/// unsynced (`everysec`), never (`no`), and a last time when stopping.
fn sync_thread(d: Arc<Durability>) {
    let mut last_sync = Instant::now();
    loop {
        let mut ctl = d.ctl.lock().expect("durability lock");
        let stopping = loop {
            if ctl.stop {
                break true;
            }
            if d.error().is_some() {
                // A failed fsync is sticky: nothing more becomes durable.
                ctl = d.cond.wait(ctl).expect("durability lock");
                continue;
            }
            let written = d.written();
            let durable = d.durable();
            // An explicit request (every flush under `always`; shutdown and rotation
            // under any policy) and a rotated-away file are synced at once.
            if ctl.requested > durable || ctl.sinks.len() > 1 || !ctl.hooks.is_empty() {
                break false;
            }
            let timeout = match ctl.policy {
                FsyncPolicy::EverySec if written > durable => {
                    let since = last_sync.elapsed();
                    if since >= Duration::from_secs(1) {
                        break false;
                    }
                    Duration::from_secs(1) - since
                }
                _ => Duration::from_secs(1),
            };
            ctl = d
                .cond
                .wait_timeout(ctl, timeout)
                .expect("durability lock")
                .0;
        };
        // Sync every handle without holding the lock: take them out, put the current
        // one back (a rotation may have pushed a newer one meanwhile).
        let target = d.written();
        let mut sinks = std::mem::take(&mut ctl.sinks);
        let hooks = std::mem::take(&mut ctl.hooks);
        drop(ctl);
        let started = Instant::now();
        d.syncing.store(true, Ordering::Relaxed);
        let mut result = Ok(());
        let mut hooks_done = 0;
        for h in hooks {
            if result.is_ok() {
                result = h();
                hooks_done += u64::from(result.is_ok());
            }
        }
        if hooks_done > 0 {
            d.rotated.fetch_add(hooks_done, Ordering::AcqRel);
            d.notify.notify_waiters();
        }
        for s in sinks.iter_mut().filter(|_| result.is_ok()) {
            if let Err(e) = s.sync() {
                result = Err(e);
                break;
            }
        }
        d.syncing.store(false, Ordering::Relaxed);
        last_sync = Instant::now();
        let usec = started.elapsed().as_micros() as u64;
        d.max_fsync_usec.fetch_max(usec, Ordering::Relaxed);
        d.fsync_usec_total.fetch_add(usec, Ordering::Relaxed);
        d.recent_max_fsync_usec.fetch_max(usec, Ordering::Relaxed);
        d.fsyncs.fetch_add(1, Ordering::Relaxed);
        let mut ctl = d.ctl.lock().expect("durability lock");
        let newest = sinks
            .pop()
            .expect("the current log handle is always present");
        if ctl.sinks.is_empty() {
            ctl.sinks.push(newest);
        } else {
            // Rotated while syncing: `newest` was the previous file and is now synced.
            drop(newest);
        }
        drop(ctl);
        match result {
            Ok(()) => d.mark_durable(target),
            Err(e) => {
                tracing::error!(error = %e, "fsync of the append only file failed");
                d.fail(format!("fsync of the append only file failed: {e}"));
            }
        }
        if stopping {
            return;
        }
    }
}

/// The core side of the log: pending records, the write, and the sync thread.
pub struct LogWriter {
    /// Framed records not yet written.
    pending: Vec<u8>,
    /// Records encoded so far (sequence number of the newest).
    appended: u64,
    /// The current log file.
    sink: Box<dyn LogSink>,
    /// Bytes in the current log file.
    size: u64,
    /// Shared with the sync thread and the waiters.
    shared: Arc<Durability>,
    /// The sync thread.
    thread: Option<JoinHandle<()>>,
    /// The last write error, until a write succeeds again.
    write_error: Option<String>,
    /// The fsync policy (the core's copy; the sync thread has its own under its lock).
    policy: FsyncPolicy,
    /// Rotation hooks handed to the sync thread so far.
    rotations: u64,
}

impl std::fmt::Debug for LogWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogWriter")
            .field("pending", &self.pending.len())
            .field("appended", &self.appended)
            .field("size", &self.size)
            .finish()
    }
}

impl LogWriter {
    /// A writer appending to `sink`, which already holds `size` bytes, with its own sync
    /// thread.
    pub fn new(sink: Box<dyn LogSink>, size: u64, policy: FsyncPolicy) -> io::Result<LogWriter> {
        let shared = Arc::new(Durability::new(policy, sink.try_clone()?, 0));
        let d = shared.clone();
        let thread = std::thread::Builder::new()
            .name("streamd-fsync".into())
            .spawn(move || sync_thread(d))?;
        Ok(LogWriter {
            pending: Vec::with_capacity(64 * 1024),
            appended: 0,
            sink,
            size,
            shared,
            thread: Some(thread),
            write_error: None,
            policy,
            rotations: 0,
        })
    }

    /// Encodes one effect record into the pending buffer.
    pub fn append<A: AsRef<[u8]>>(&mut self, argv: &[A]) {
        record::encode(&mut self.pending, argv);
        self.appended += 1;
    }

    /// Starts one record whose payload the caller appends to the returned buffer, then
    /// closes with [`LogWriter::end_record`] (the core writes effects so, without a
    /// copy). Returns the buffer and the record's start.
    #[inline]
    pub fn begin_record(&mut self) -> (&mut Vec<u8>, usize) {
        let start = record::begin(&mut self.pending);
        (&mut self.pending, start)
    }

    /// Frames the record [`LogWriter::begin_record`] started at `start`.
    #[inline]
    pub fn end_record(&mut self, start: usize) {
        record::finish(&mut self.pending, start);
        self.appended += 1;
    }

    /// Appends already framed records (`count` of them).
    pub fn append_framed(&mut self, bytes: &[u8], count: u64) {
        self.pending.extend_from_slice(bytes);
        self.appended += count;
    }

    /// Records encoded so far.
    pub fn appended(&self) -> u64 {
        self.appended
    }

    /// Bytes encoded but not yet written.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Bytes in the current log file (written, not counting pending).
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The shared durability record.
    pub fn durability(&self) -> &Arc<Durability> {
        &self.shared
    }

    /// The last write error, if the latest write failed.
    pub fn write_error(&self) -> Option<&str> {
        self.write_error.as_deref()
    }

    /// The number of rotation hooks that must complete before records written now may
    /// be acknowledged at all, if some have not yet: records of a new file only count
    /// once the manifest names it, whatever the policy.
    pub fn rotation_pending(&self) -> Option<u64> {
        (self.shared.rotated.load(Ordering::Acquire) < self.rotations).then_some(self.rotations)
    }

    /// The fsync policy.
    pub fn policy(&self) -> FsyncPolicy {
        self.policy
    }

    /// Changes the fsync policy.
    pub fn set_policy(&mut self, policy: FsyncPolicy) {
        self.policy = policy;
        let mut ctl = self.shared.ctl.lock().expect("durability lock");
        ctl.policy = policy;
        ctl.requested = ctl.requested.max(self.shared.written());
        self.shared.cond.notify_all();
    }

    /// Writes the pending records to the file and, under `always`, asks the sync thread
    /// to make them durable. On a write error the file is cut back to its previous size
    /// and the records stay pending.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        if let Err(e) = self.sink.write_all(&self.pending) {
            let _ = self.sink.truncate(self.size);
            self.write_error = Some(e.to_string());
            return Err(e);
        }
        self.write_error = None;
        self.size += self.pending.len() as u64;
        self.pending.clear();
        if self.pending.capacity() > 1 << 20 {
            self.pending.shrink_to(64 * 1024);
        }
        self.shared.written.store(self.appended, Ordering::Release);
        if self.policy == FsyncPolicy::Always {
            self.shared.request(self.appended);
        }
        Ok(())
    }

    /// Flushes and waits (blocking this thread) until everything is durable, whatever
    /// the policy: shutdown, rotation points, tests.
    pub fn sync_all(&mut self) -> io::Result<()> {
        self.flush()?;
        let seq = self.appended;
        self.shared
            .wait_durable_blocking(seq)
            .map_err(io::Error::other)
    }

    /// Switches to a new log file holding `size` bytes: flushes the pending records to
    /// the old one first; the sync thread syncs the old file once more before dropping
    /// it, so every record written keeps its durability path. `hook` (the manifest
    /// update naming the new file) runs on the sync thread before any record of the new
    /// file is reported durable; if it fails, nothing is reported durable again.
    pub fn rotate(
        &mut self,
        sink: Box<dyn LogSink>,
        size: u64,
        hook: Option<Hook>,
    ) -> io::Result<()> {
        self.flush()?;
        let clone = sink.try_clone()?;
        self.sink = sink;
        self.size = size;
        let mut ctl = self.shared.ctl.lock().expect("durability lock");
        ctl.sinks.push(clone);
        if let Some(h) = hook {
            ctl.hooks.push(h);
            self.rotations += 1;
        }
        self.shared.cond.notify_all();
        Ok(())
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        {
            let mut ctl = self.shared.ctl.lock().expect("durability lock");
            ctl.stop = true;
            self.shared.cond.notify_all();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::sink::CrashSink;

    fn writer(policy: FsyncPolicy) -> (LogWriter, CrashSink) {
        let sink = CrashSink::default();
        (
            LogWriter::new(Box::new(sink.clone()), 0, policy).unwrap(),
            sink,
        )
    }

    #[test]
    fn always_makes_flushed_records_durable_before_the_wait_returns() {
        let (mut w, sink) = writer(FsyncPolicy::Always);
        for i in 0..10 {
            w.append(&["XADD", "s", &format!("{i}-1"), "f", "v"]);
            w.flush().unwrap();
            w.durability().wait_durable_blocking(w.appended()).unwrap();
            let d = sink.disk.lock().unwrap();
            assert_eq!(
                d.durable, d.written,
                "record {i} acknowledged before it was durable"
            );
        }
    }

    #[test]
    fn written_and_durable_images_differ_until_the_sync() {
        let (mut w, sink) = writer(FsyncPolicy::No);
        w.append(&["DEL", "a"]);
        w.flush().unwrap();
        {
            let d = sink.disk.lock().unwrap();
            assert!(d.durable.is_empty());
            assert!(!d.written.is_empty());
        }
        assert_eq!(w.durability().written(), 1);
        w.sync_all().unwrap();
        let d = sink.disk.lock().unwrap();
        assert_eq!(d.durable, d.written);
    }

    #[test]
    fn a_failed_sync_never_reports_durable_and_stays_failed() {
        let (mut w, sink) = writer(FsyncPolicy::Always);
        sink.disk.lock().unwrap().fail_sync_from = Some(3);
        let mut acked = 0;
        for i in 0..5 {
            w.append(&["XADD", "s", &format!("{i}-1"), "f", "v"]);
            w.flush().unwrap();
            match w.durability().wait_durable_blocking(w.appended()) {
                Ok(()) => acked = w.appended(),
                Err(e) => {
                    assert!(e.contains("injected fsync failure"), "{e}");
                    break;
                }
            }
        }
        assert_eq!(
            acked, 2,
            "only the records synced by syncs 1 and 2 are acknowledged"
        );
        assert!(w.durability().durable() < w.appended());
        assert!(w.durability().error().is_some());
        // Every acknowledged record is in the durable image.
        let img = sink.crash_image(0);
        let mut n = 0;
        let mut off = 0;
        while let record::Frame::Record { size, .. } = record::decode(&img[off..]) {
            off += size;
            n += 1;
        }
        assert!(n >= acked);
    }

    #[test]
    fn a_failed_write_is_cut_back_and_retried() {
        let (mut w, sink) = writer(FsyncPolicy::EverySec);
        w.append(&["DEL", "a"]);
        w.flush().unwrap();
        sink.disk.lock().unwrap().fail_writes = true;
        w.append(&["DEL", "b"]);
        assert!(w.flush().is_err());
        assert!(w.write_error().is_some());
        assert_eq!(w.durability().written(), 1);
        sink.disk.lock().unwrap().fail_writes = false;
        w.flush().unwrap();
        assert_eq!(w.durability().written(), 2);
        assert!(w.write_error().is_none());
        let mut buf = Vec::new();
        record::encode(&mut buf, &["DEL", "a"]);
        record::encode(&mut buf, &["DEL", "b"]);
        assert_eq!(sink.disk.lock().unwrap().written, buf);
    }

    #[test]
    fn everysec_syncs_in_the_background() {
        let (mut w, sink) = writer(FsyncPolicy::EverySec);
        w.append(&["DEL", "a"]);
        w.flush().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while w.durability().durable() < 1 {
            assert!(Instant::now() < deadline, "no background fsync within 5 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        let d = sink.disk.lock().unwrap();
        assert_eq!(d.durable, d.written);
    }

    #[test]
    fn rotation_keeps_the_old_file_on_the_durability_path() {
        let (mut w, old) = writer(FsyncPolicy::No);
        w.append(&["DEL", "a"]);
        let new = CrashSink::default();
        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        let hook: Hook = Box::new(move || {
            r.store(true, Ordering::SeqCst);
            Ok(())
        });
        w.rotate(Box::new(new.clone()), 0, Some(hook)).unwrap();
        w.append(&["DEL", "b"]);
        w.sync_all().unwrap();
        let o = old.disk.lock().unwrap();
        let n = new.disk.lock().unwrap();
        assert_eq!(o.durable, o.written);
        assert_eq!(n.durable, n.written);
        assert!(!o.durable.is_empty() && !n.durable.is_empty());
        assert!(ran.load(Ordering::SeqCst), "the rotation hook ran");
    }

    #[test]
    fn records_of_a_new_file_wait_for_its_manifest_under_every_policy() {
        let (mut w, _old) = writer(FsyncPolicy::No);
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let hook: Hook = Box::new(move || {
            rx.recv().map_err(io::Error::other)?;
            Ok(())
        });
        w.rotate(Box::new(CrashSink::default()), 0, Some(hook))
            .unwrap();
        w.append(&["DEL", "a"]);
        w.flush().unwrap();
        assert_eq!(
            w.rotation_pending(),
            Some(1),
            "the manifest is not stored yet"
        );
        tx.send(()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while w.rotation_pending().is_some() {
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_failed_rotation_hook_keeps_the_new_records_from_counting_as_durable() {
        let (mut w, _old) = writer(FsyncPolicy::Always);
        let new = CrashSink::default();
        let hook: Hook = Box::new(|| Err(io::Error::other("manifest write failed")));
        w.rotate(Box::new(new.clone()), 0, Some(hook)).unwrap();
        w.append(&["DEL", "b"]);
        w.flush().unwrap();
        let e = w
            .durability()
            .wait_durable_blocking(w.appended())
            .unwrap_err();
        assert!(e.contains("manifest write failed"), "{e}");
    }
}
