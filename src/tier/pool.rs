//! The read pool: a few std threads that read cold nodes off the core thread.
//!
//! ```text
//!  core thread (current-thread tokio)            pool threads (std)
//!  store.read_batch(&[loc, loc, ...]) ─┐
//!  pool.submit(batch) ── Job ──────────┴─▶ one queue ─▶ worker: pread each record in
//!  .await the oneshot::Receiver                           order, check its CRC, then
//!     ◀───────── Ok(Vec<ColdNode>) in batch order ────── oneshot::Sender::send
//! ```
//!
//! One batch is served by one worker, start to end, so a range scan's nodes are read in
//! order (sequential reads stay sequential for the disk and the kernel's read-ahead) and
//! come back in the order asked; separate batches run in parallel on separate workers.
//! The first bad record ends its batch with that error (a command cannot answer with a
//! hole in its range). The core never blocks: it awaits the receiver like any other
//! future, which is how a parked command resumes.
//!
//! [`ReadPool::run`] queues any other blocking read the same way: a compaction reads
//! its segment in chunks there ([`super::CompactionSource::read_chunk`]) so that only
//! the appends of the records still live happen on the store's thread.
//!
//! Dropping the pool closes the queue and joins the workers after the jobs already
//! queued; a job whose receiver was dropped (its client went away) is skipped unread.
//!
//! **Priority.** The workers run at nice [`READ_NICE`] (19, the lowest, as RocksDB runs
//! its low-priority background threads): what they do (reading, checking and encoding
//! nodes for a parked command, a read-ahead, a segment sync) is background to the core
//! thread, which serves every client, and to the clients on the same machine. When they
//! compete for a CPU, the core thread and the clients win at once instead of waiting out
//! a worker's time slice. A worker is slowed, never starved: beside one thread that keeps
//! a CPU busy it still gets about 1.5% of it (nice 19 weighs 15 against 1024), so on a
//! saturated machine a parked command waits longer for its nodes (about 20 ms for the 50
//! nodes of a 1,000-entry page), and on an idle one nothing changes. On this 2-core
//! machine, alternating runs of `streamd-bench tiering/cold-scan` (13 at nice 19 against
//! 16 at 0): the cold scan ran at 487 against 412 MB/s (medians), and another client's
//! XADD + XREADGROUP p99 during the scans was 930 against 1,255 us (10 of the 13 below
//! the lowest of the 16). Nice 10 measured 486 MB/s and 1,074 us. See docs/tiering.md.
//!
//! Size: [`DEFAULT_THREADS`] (2), from measurements on this 2-core machine in
//! `docs/tiering.md`: random 4 KiB reads from a cold page cache are latency-bound and
//! scale with threads (1 → 2 → 4: 13k → 23k → 31k reads/s); from the page cache they are
//! CPU-bound (141k → 291k → 284k): more threads than cores only take CPU from the core
//! thread. Scans are read in runs of up to [`COALESCE_BYTES`] per `pread` and ran at
//! about 1.1 GB/s cold with any thread count.

use super::{ColdNode, Location, TierError, segment};
use std::fs::File;
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use tokio::sync::oneshot;

/// Read threads when the setting is not given.
pub const DEFAULT_THREADS: usize = 2;

/// Records to read, in order, with the open files they live in
/// ([`super::SegmentStore::read_batch`] builds it).
#[derive(Debug)]
pub struct ReadBatch {
    /// File, its path (for errors), and the record's Location, in the order asked.
    pub(super) reads: Vec<(Arc<File>, Arc<Path>, Location)>,
}

impl ReadBatch {
    /// Number of records in the batch.
    pub fn len(&self) -> usize {
        self.reads.len()
    }

    /// True for a batch of no records.
    pub fn is_empty(&self) -> bool {
        self.reads.is_empty()
    }

    /// Reads every record, in order, on the calling thread (blocking): what a pool
    /// worker does with a batch. Records that follow each other in one segment (a range
    /// scan of nodes that went cold together) are read with one `pread` of up to
    /// [`COALESCE_BYTES`], then checked one by one.
    pub fn run(&self) -> Result<Vec<ColdNode>, TierError> {
        let mut out = Vec::with_capacity(self.reads.len());
        let mut i = 0;
        while i < self.reads.len() {
            let (file, path, first) = &self.reads[i];
            // The run of records contiguous with `first` in the same file.
            let mut j = i + 1;
            let mut end = first.end();
            while let Some((_, _, next)) = self.reads.get(j) {
                if next.segment != first.segment
                    || u64::from(next.offset) != end
                    || next.end() - u64::from(first.offset) > COALESCE_BYTES
                {
                    break;
                }
                end = next.end();
                j += 1;
            }
            if j == i + 1 {
                out.push(segment::read_record(file, path, *first)?);
            } else {
                let start = u64::from(first.offset);
                let mut buf = vec![0u8; (end - start) as usize];
                segment::read_exact_at(file, path, &mut buf, start)?;
                for (_, _, loc) in &self.reads[i..j] {
                    let at = (u64::from(loc.offset) - start) as usize;
                    let rec = buf[at..at + loc.record_size() as usize].to_vec();
                    out.push(segment::decode_node(rec, path, *loc)?);
                }
            }
            i = j;
        }
        Ok(out)
    }
}

/// Most bytes one `pread` of a batch covers when its records are contiguous.
pub const COALESCE_BYTES: u64 = 1 << 20;

/// Work for a worker: reads a batch (or a compaction chunk) and sends the answer.
type Job = Box<dyn FnOnce() + Send>;

/// A fixed set of read threads sharing one queue of batches.
#[derive(Debug)]
pub struct ReadPool {
    /// The queue; `None` once the pool is shutting down.
    queue: Option<mpsc::Sender<Job>>,
    /// The worker threads.
    workers: Vec<JoinHandle<()>>,
}

impl ReadPool {
    /// Starts `threads` workers (at least one), named `tier-read-<i>`.
    pub fn new(threads: usize) -> std::io::Result<ReadPool> {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let mut workers = Vec::new();
        for i in 0..threads.max(1) {
            let rx = Arc::clone(&rx);
            let worker = std::thread::Builder::new()
                .name(format!("tier-read-{i}"))
                .spawn(move || worker(&rx))?;
            workers.push(worker);
        }
        Ok(ReadPool {
            queue: Some(tx),
            workers,
        })
    }

    /// Number of worker threads.
    pub fn threads(&self) -> usize {
        self.workers.len()
    }

    /// Queues `batch`; the receiver completes with its nodes in batch order, or the first
    /// error, or [`TierError::PoolClosed`] if the pool went away first. Never blocks.
    pub fn submit(&self, batch: ReadBatch) -> oneshot::Receiver<Result<Vec<ColdNode>, TierError>> {
        self.run(move || batch.run())
    }

    /// Queues any blocking read (a [`ReadBatch::run`], a
    /// [`super::CompactionSource::read_chunk`]) to run on a worker; the receiver completes
    /// with its result, or [`TierError::PoolClosed`] if the pool went away first. The work
    /// is skipped if the receiver was dropped before a worker took it. Never blocks.
    pub fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> Result<T, TierError> + Send + 'static,
    ) -> oneshot::Receiver<Result<T, TierError>> {
        let (reply, rx) = oneshot::channel();
        let job: Job = Box::new(move || {
            if !reply.is_closed() {
                let _ = reply.send(work());
            }
        });
        let sent = self.queue.as_ref().is_some_and(|q| q.send(job).is_ok());
        if !sent {
            // The job (and its sender) is dropped: the receiver sees the pool gone.
            drop(rx);
            let (reply, rx) = oneshot::channel();
            let _ = reply.send(Err(TierError::PoolClosed));
            return rx;
        }
        rx
    }
}

impl Drop for ReadPool {
    fn drop(&mut self) {
        self.queue = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

/// The nice value of the workers (0 normal, 19 lowest): see "Priority" in the module docs.
pub const READ_NICE: i32 = 19;

/// A worker: takes jobs until the queue closes.
fn worker(rx: &Mutex<mpsc::Receiver<Job>>) {
    if let Err(e) = crate::util::lower_thread_priority(READ_NICE) {
        tracing::warn!(error = %e, "a tiering read thread keeps the normal CPU priority");
    }
    loop {
        let job = {
            let Ok(rx) = rx.lock() else {
                return;
            };
            match rx.recv() {
                Ok(job) => job,
                Err(_) => return,
            }
        };
        job();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::StreamId;
    use crate::tier::{SegmentStore, StoreOptions};

    fn store_with(n: u64) -> (tempfile::TempDir, SegmentStore, Vec<Location>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let opts = StoreOptions {
            segment_max_bytes: 8192,
            ..StoreOptions::default()
        };
        let mut st = SegmentStore::open(dir.path(), opts).expect("open");
        let locs = (0..n)
            .map(|i| {
                st.append(
                    i,
                    StreamId::new(i, 0),
                    StreamId::new(i, 9),
                    &vec![i as u8; 300],
                )
                .expect("append")
            })
            .collect();
        (dir, st, locs)
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn workers_run_at_the_read_priority() {
        let pool = ReadPool::new(2).expect("pool");
        let base = crate::util::current_thread_id().and_then(crate::util::thread_nice);
        let rx = pool.run(|| {
            let tid = crate::util::current_thread_id().ok_or(TierError::PoolClosed)?;
            crate::util::thread_nice(tid).ok_or(TierError::PoolClosed)
        });
        let nice = block_on(rx)
            .expect("answered")
            .expect("read its nice value");
        // From a normal thread the workers go down to READ_NICE; under a test run niced
        // lower still they keep the lower priority (a worker never raises its own).
        let base = base.expect("own nice");
        assert_eq!(nice, READ_NICE.max(base));
    }

    #[test]
    fn batches_come_back_in_the_order_asked() {
        let (_dir, mut st, locs) = store_with(100);
        let pool = ReadPool::new(3).expect("pool");
        let order: Vec<Location> = locs.iter().rev().step_by(3).copied().collect();
        let rx = pool.submit(st.read_batch(&order).expect("batch"));
        let rx2 = pool.submit(st.read_batch(&locs[..5]).expect("batch"));
        let nodes = block_on(rx).expect("answered").expect("read");
        assert_eq!(nodes.len(), order.len());
        for (n, l) in nodes.iter().zip(&order) {
            assert_eq!(n.node, vec![n.stream as u8; 300]);
            assert_eq!(n, &st.read(*l).expect("read"));
        }
        assert_eq!(nodes[0].stream, 99);
        let first5 = block_on(rx2).expect("answered").expect("read");
        assert_eq!(
            first5.iter().map(|n| n.stream).collect::<Vec<_>>(),
            vec![0, 1, 2, 3, 4]
        );
    }

    #[test]
    fn contiguous_runs_read_at_once_give_the_same_nodes() {
        let (_dir, mut st, locs) = store_with(100);
        // Runs within a segment, across segment boundaries, with gaps and repeats.
        let mut asked: Vec<Location> = locs[3..60].to_vec();
        asked.extend_from_slice(&locs[70..72]);
        asked.push(locs[10]);
        asked.extend_from_slice(&locs[80..]);
        let batch = st.read_batch(&asked).expect("batch");
        let nodes = batch.run().expect("read");
        assert_eq!(nodes.len(), asked.len());
        for (n, l) in nodes.iter().zip(&asked) {
            assert_eq!(n, &st.read(*l).expect("read"));
        }
    }

    #[test]
    fn a_bad_record_fails_its_batch_without_panicking() {
        let (dir, mut st, locs) = store_with(10);
        st.sync().expect("sync");
        let path = dir.path().join(segment::file_name(locs[4].segment));
        std::os::unix::fs::FileExt::write_all_at(
            &std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .expect("open"),
            &[0xEE; 4],
            u64::from(locs[4].offset) + 100,
        )
        .expect("damage");
        let pool = ReadPool::new(1).expect("pool");
        let rx = pool.submit(st.read_batch(&locs[..6]).expect("batch"));
        assert!(matches!(
            block_on(rx).expect("answered"),
            Err(TierError::Corrupt { .. })
        ));
    }

    #[test]
    fn compaction_chunks_read_on_the_pool_match_the_records() {
        let (_dir, mut st, locs) = store_with(100);
        st.sync().expect("sync");
        let n = locs[0].segment;
        let src = st.compaction_source(n).expect("sealed");
        let pool = ReadPool::new(2).expect("pool");
        let mut from = Some(segment::HEADER_LEN);
        let mut seen = Vec::new();
        while let Some(at) = from {
            let src = src.clone();
            let chunk = block_on(pool.run(move || src.read_chunk(at, 1000)))
                .expect("answered")
                .expect("read");
            assert!(!chunk.records.is_empty());
            for (loc, node) in chunk.records {
                assert_eq!(node, st.read(loc).expect("read"));
                seen.push(loc);
            }
            from = chunk.next;
        }
        let want: Vec<Location> = locs.iter().copied().filter(|l| l.segment == n).collect();
        assert_eq!(seen, want);
        assert!(src.read_chunk(segment::HEADER_LEN + 1, 1000).is_err());
    }

    #[test]
    fn dropping_the_pool_answers_what_was_queued() {
        let (_dir, mut st, locs) = store_with(20);
        let pool = ReadPool::new(2).expect("pool");
        let rxs: Vec<_> = (0..10)
            .map(|_| pool.submit(st.read_batch(&locs).expect("batch")))
            .collect();
        drop(pool);
        for rx in rxs {
            assert_eq!(block_on(rx).expect("answered").expect("read").len(), 20);
        }
    }
}
