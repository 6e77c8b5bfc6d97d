//! Segment store throughput (`src/tier/`): appending 4 KiB nodes (buffered, and with the
//! fsync that makes them durable), reading them back on the calling thread, and through
//! the read pool with 1, 2 and 4 threads, randomly (one node per request, all requests
//! in flight at once, as parked commands would be) and in range-scan batches of 64
//! consecutive nodes. Run with `cargo bench --bench tier`; the store the read benchmarks
//! use holds `TIER_BENCH_MB` MiB (default 64, so it stays in the page cache).
//!
//! `TIER_POOL_MEASURE=<MiB>` runs instead the measurement behind the pool's default size
//! (docs/tiering.md): a store of that many MiB in `TIER_POOL_DIR` (default: a temporary
//! directory), each file's pages dropped from the page cache before every run
//! (`posix_fadvise(DONTNEED)`, through python3, as `/proc/sys/vm/drop_caches` may be
//! refused), random and sequential reads with 1, 2 and 4 threads, cold and then cached.

use divan::Bencher;
use divan::counter::BytesCount;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;
use streamd::stream::StreamId;
use streamd::tier::{Location, ReadPool, SegmentStore, StoreOptions};

/// Bytes per node: a full default node (`stream-node-max-bytes` 4096).
const NODE: usize = 4096;
/// Nodes appended per append sample (40 MiB).
const APPEND_BATCH: usize = 10_000;
/// Nodes per range-scan batch.
const SCAN_BATCH: usize = 64;
/// Reads per pool sample.
const POOL_READS: usize = 4096;

fn main() {
    if let Ok(mb) = std::env::var("TIER_POOL_MEASURE") {
        let mb: u64 = mb.parse().expect("TIER_POOL_MEASURE is a number of MiB");
        measure(mb);
        return;
    }
    divan::main();
}

/// The i-th node: 4 KiB of bytes that differ per node (the store does not look inside).
fn node(i: u64) -> Vec<u8> {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..NODE)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// A small deterministic generator (xorshift64).
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Fills a store in `dir` with `mb` MiB of 4 KiB nodes, synced.
fn fill(dir: &Path, mb: u64) -> (SegmentStore, Vec<Location>) {
    let mut st = SegmentStore::open(dir, StoreOptions::default()).expect("open");
    let n = mb * (1 << 20) / NODE as u64;
    let proto = node(1);
    let locs = (0..n)
        .map(|i| {
            let id = StreamId::new(i + 1, 0);
            st.append(1, id, id, &proto).expect("append")
        })
        .collect();
    st.sync().expect("sync");
    (st, locs)
}

struct Shared {
    _dir: tempfile::TempDir,
    store: std::sync::Mutex<SegmentStore>,
    locs: Vec<Location>,
}

fn shared() -> &'static Shared {
    static S: OnceLock<Shared> = OnceLock::new();
    S.get_or_init(|| {
        let mb = std::env::var("TIER_BENCH_MB")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(64);
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, locs) = fill(dir.path(), mb);
        Shared {
            _dir: dir,
            store: std::sync::Mutex::new(store),
            locs,
        }
    })
}

/// Appends 10k 4 KiB nodes (buffered writes, no fsync).
#[divan::bench(sample_count = 10)]
fn append(bencher: Bencher) {
    let n = node(7);
    bencher
        .counter(BytesCount::new(APPEND_BATCH * NODE))
        .with_inputs(|| {
            let dir = tempfile::tempdir().expect("tempdir");
            let st = SegmentStore::open(dir.path(), StoreOptions::default()).expect("open");
            (dir, st)
        })
        .bench_local_values(|(dir, mut st)| {
            for i in 0..APPEND_BATCH as u64 {
                let id = StreamId::new(i + 1, 0);
                st.append(1, id, id, &n).expect("append");
            }
            st.flush().expect("flush");
            (dir, st)
        });
}

/// Appends 10k 4 KiB nodes, then one sync (fdatasync of the segments and the directory).
#[divan::bench(sample_count = 10)]
fn append_and_sync(bencher: Bencher) {
    let n = node(7);
    bencher
        .counter(BytesCount::new(APPEND_BATCH * NODE))
        .with_inputs(|| {
            let dir = tempfile::tempdir().expect("tempdir");
            let st = SegmentStore::open(dir.path(), StoreOptions::default()).expect("open");
            (dir, st)
        })
        .bench_local_values(|(dir, mut st)| {
            for i in 0..APPEND_BATCH as u64 {
                let id = StreamId::new(i + 1, 0);
                st.append(1, id, id, &n).expect("append");
            }
            st.sync().expect("sync");
            (dir, st)
        });
}

/// One random node read on the calling thread (`pread` + CRC), page cache warm.
#[divan::bench]
fn read_random(bencher: Bencher) {
    let s = shared();
    let st = s.store.lock().expect("store");
    let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
    bencher.counter(BytesCount::new(NODE)).bench_local(|| {
        let loc = s.locs[(rng.next() % s.locs.len() as u64) as usize];
        st.read(loc).expect("read")
    });
}

/// What the pool answers a batch with.
type Answer =
    tokio::sync::oneshot::Receiver<Result<Vec<streamd::tier::ColdNode>, streamd::tier::TierError>>;

/// Runs `batches` on `pool` with at most `window` in flight (as a few parked commands
/// would have), dropping each answer as it arrives; returns the nodes read.
fn run_window(pool: &ReadPool, batches: Vec<streamd::tier::ReadBatch>, window: usize) -> usize {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let mut pending: std::collections::VecDeque<Answer> = std::collections::VecDeque::new();
        let mut n = 0;
        for b in batches {
            if pending.len() == window {
                let rx = pending.pop_front().expect("a full window");
                n += rx.await.expect("answered").expect("read").len();
            }
            pending.push_back(pool.submit(b));
        }
        for rx in pending {
            n += rx.await.expect("answered").expect("read").len();
        }
        n
    })
}

/// Runs `batches` on `pool`, all in flight at once, and waits for every answer.
fn run_pool(pool: &ReadPool, batches: Vec<streamd::tier::ReadBatch>) -> usize {
    let rxs: Vec<_> = batches.into_iter().map(|b| pool.submit(b)).collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let mut n = 0;
        for rx in rxs {
            n += rx.await.expect("answered").expect("read").len();
        }
        n
    })
}

/// `POOL_READS` random nodes, one per request, through a pool of `threads`.
#[divan::bench(args = [1, 2, 4], sample_count = 20)]
fn pool_random(bencher: Bencher, threads: usize) {
    let s = shared();
    let pool = ReadPool::new(threads).expect("pool");
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    bencher
        .counter(BytesCount::new(POOL_READS * NODE))
        .with_inputs(|| {
            let mut st = s.store.lock().expect("store");
            (0..POOL_READS)
                .map(|_| {
                    let loc = s.locs[(rng.next() % s.locs.len() as u64) as usize];
                    st.read_batch(&[loc]).expect("batch")
                })
                .collect::<Vec<_>>()
        })
        .bench_local_values(|batches| run_pool(&pool, batches));
}

/// `POOL_READS` consecutive nodes in range-scan batches of 64, through a pool of `threads`.
#[divan::bench(args = [1, 2, 4], sample_count = 20)]
fn pool_scan(bencher: Bencher, threads: usize) {
    let s = shared();
    let pool = ReadPool::new(threads).expect("pool");
    let mut start = 0usize;
    bencher
        .counter(BytesCount::new(POOL_READS * NODE))
        .with_inputs(|| {
            let mut st = s.store.lock().expect("store");
            if start + POOL_READS > s.locs.len() {
                start = 0;
            }
            let run = &s.locs[start..(start + POOL_READS).min(s.locs.len())];
            start += POOL_READS;
            run.chunks(SCAN_BATCH)
                .map(|c| st.read_batch(c).expect("batch"))
                .collect::<Vec<_>>()
        })
        .bench_local_values(|batches| run_pool(&pool, batches));
}

// ---------------------------------------------------------------------------------------
// TIER_POOL_MEASURE: cold-cache measurement.
// ---------------------------------------------------------------------------------------

/// Drops the pages of every file in `dir` from the page cache.
fn evict(dir: &Path) {
    let script = "import os,sys\n\
                  for n in os.listdir(sys.argv[1]):\n\
                  \x20 fd=os.open(os.path.join(sys.argv[1],n),os.O_RDONLY)\n\
                  \x20 os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)\n\
                  \x20 os.close(fd)\n";
    let ok = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(dir)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "python3 posix_fadvise failed");
}

fn measure(mb: u64) {
    let tmp;
    let dir: PathBuf = match std::env::var("TIER_POOL_DIR") {
        Ok(d) => PathBuf::from(d),
        Err(_) => {
            tmp = tempfile::tempdir().expect("tempdir");
            tmp.path().to_path_buf()
        }
    };
    let t = Instant::now();
    let (mut st, locs) = fill(&dir, mb);
    let secs = t.elapsed().as_secs_f64();
    eprintln!(
        "filled {} nodes ({mb} MiB) in {secs:.2} s: {:.0} MiB/s appended and synced",
        locs.len(),
        mb as f64 / secs
    );
    let random_reads = 20_000.min(locs.len());
    // (label, window): random reads one node per request, 32 requests in flight; scans of
    // the whole store in batches of 64 consecutive nodes, 4 batches in flight.
    for cached in [false, true] {
        for threads in [1usize, 2, 4] {
            let pool = ReadPool::new(threads).expect("pool");
            for (label, window) in [("random", 32usize), ("scan", 4)] {
                let mut rates = Vec::new();
                for round in 0..3u64 {
                    let batches: Vec<_> = if label == "random" {
                        let mut rng =
                            XorShift(0x2545_F491_4F6C_DD1D ^ (threads as u64 * 7 + round));
                        (0..random_reads)
                            .map(|_| {
                                let loc = locs[(rng.next() % locs.len() as u64) as usize];
                                st.read_batch(&[loc]).expect("batch")
                            })
                            .collect()
                    } else {
                        locs.chunks(SCAN_BATCH)
                            .map(|c| st.read_batch(c).expect("batch"))
                            .collect()
                    };
                    if !cached {
                        evict(&dir);
                    }
                    let t = Instant::now();
                    let n = run_window(&pool, batches, window);
                    rates.push(n as f64 / t.elapsed().as_secs_f64());
                }
                rates.sort_by(f64::total_cmp);
                let mid = rates[1];
                eprintln!(
                    "{} {label:<6} threads={threads}: median of 3 {:.0} reads/s = {:.0} MiB/s (min {:.0}, max {:.0} MiB/s)",
                    if cached { "cached" } else { "cold  " },
                    mid,
                    mid * NODE as f64 / f64::from(1 << 20),
                    rates[0] * NODE as f64 / f64::from(1 << 20),
                    rates[2] * NODE as f64 / f64::from(1 << 20),
                );
            }
        }
    }
}
