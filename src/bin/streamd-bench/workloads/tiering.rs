//! Tiered streams (`tiering/*`, issue 39, `docs/tiering.md`): the same streamd binary
//! twice, side A with `--stream-tiering yes` and a hot budget well below the data, side B
//! with `--stream-tiering no`, each round on a server this tool starts itself (as `repl/*`
//! does), so the A/B ratios are "tiered / all in memory".
//!
//! ```text
//!   round:  streamd --port P --bind 127.0.0.1 --dir <temp> --save '' --appendonly no
//!                   --stream-tiering yes|no --stream-tiering-hot-bytes <budget>
//!           budget = 16 MiB × scale (whole MiB, at least 2 MiB); entries ~215 node bytes
//!           (`n <i> p <200 bytes>`), so "8 × budget" is 8 × budget / 215 entries
//!           load (A: wait until the mover has brought the hot bytes within the budget)
//!           measure │ kill the server, remove its directory
//!
//!   xadd:            16 clients ──XADD s * ×16 per write──► 8 × budget of entries
//!   tail-consumers:  8 × budget loaded, group g at $;  1 producer (XADD, 16 per write)
//!                    ──► s ──► 4 consumers XREADGROUP COUNT 100 BLOCK 100 > + XACK
//!                    figures: INFO tiering deltas (reads + sync_reads must stay 0)
//!   cold-scan:       8 × budget loaded as 1-0, 2-0, ...; segment pages dropped from the
//!                    page cache; XRANGE s <i>-0 + COUNT 1000, page after page
//!                    ╠═ disk: a file as large, written, synced; dropped and read (1 MiB
//!                    ║  reads) three times: the median
//!                    ╚═ probe thread: XADD p * + XREADGROUP > p, every ms, alone and
//!                       during repeated scans: p99 with / without
//!   restart:         11 × budget loaded (10 × cold on A), SAVE, SIGKILL, start again in
//!                    the same directory: time to XLEN = all, VmRSS after
//! ```
//!
//! Page cache: the tool drops a file's cached pages with `dd if=FILE iflag=nocache
//! count=0` (coreutils' `posix_fadvise(POSIX_FADV_DONTNEED)`, no root needed; dirty pages
//! are not dropped, so files are synced first). Where `dd` fails, the figure `cache
//! dropped` is 0 and the page cache may serve both the scan and the disk read; the cached
//! read speed is printed beside the uncached one either way.
//!
//! Every wait is bounded: start-up 10 s, the mover `--timeout`, a restart `--timeout`.

use std::cell::Cell;
use std::ffi::OsString;
use std::io::{self, Read as _, Write as _};
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use tokio::task::JoinSet;

use super::Ctx;
use super::live::{Tally, join, micros};
use super::replication::{Program, Server, free_port};
use crate::client::{Conn, Value, info_field};
use crate::driver::{Stop, closed_loop};
use crate::measure::{Figure, Phase, Rng, Sample, ns_since, percentile};

/// The hot budget at scale 1.
const BUDGET_FULL: u64 = 16 << 20;
/// The smallest budget a small `--scale` gets (the setting's minimum is 1 MiB).
const BUDGET_MIN: u64 = 2 << 20;
/// Payload bytes per entry (the issue's check writes ~200-byte entries).
const PAYLOAD: usize = 200;
/// Node bytes one `n <i> p <payload>` entry takes in a listpack, about (the fields are the
/// master entry's, so only the values, the ID deltas and the headers count).
const ENTRY_BYTES: u64 = 215;
/// Data written or loaded, in budgets, by `xadd`, `tail-consumers` and `cold-scan`.
const DATA_BUDGETS: u64 = 8;
/// Data loaded by `restart`, in budgets: one stays hot, ten go cold.
const RESTART_BUDGETS: u64 = 11;
/// `xadd`: connections and XADDs per write.
const XADD_CLIENTS: usize = 16;
const XADD_PIPELINE: usize = 16;
/// `tail-consumers`: consumer connections, their COUNT, the producer's XADDs per write.
const CONSUMERS: usize = 4;
const CONSUMER_COUNT: &str = "100";
const PRODUCER_PIPELINE: usize = 16;
/// `cold-scan`: entries per XRANGE page.
const SCAN_COUNT: u64 = 1000;
/// `cold-scan`: time between two probe pairs.
const PROBE_EVERY: Duration = Duration::from_millis(1);
/// Read and write size of the disk measurement.
const DISK_CHUNK: usize = 1 << 20;
/// Uncached reads of the disk measurement's file; their median is the figure (one read
/// ran from 0.6 to 2.6 GB/s between rounds on this project's virtual disk).
const DISK_READS: usize = 3;
/// Time between two polls while waiting for the mover or a restart.
const POLL_EVERY: Duration = Duration::from_millis(10);
/// Bytes in a MB, as the figures print them.
const MB: f64 = 1e6;

/// What a `tiering/*` variant measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bench {
    /// XADD throughput while the data outgrows the budget.
    Xadd,
    /// Consumers at the tail of a stream mostly on disk: disk reads (must be none).
    TailConsumers,
    /// A full XRANGE scan of cold history against the disk's speed, and another client's
    /// latency during it.
    ColdScan,
    /// Restart time and RSS with ten budgets of cold data.
    Restart,
}

/// Every `tiering/*` variant: (name after `tiering/`, parameters, what the latency times,
/// what the memory column counts).
pub fn variants() -> Vec<(&'static str, Bench, &'static str, &'static str)> {
    vec![
        ("xadd", Bench::Xadd, "batch", "entry"),
        (
            "tail-consumers",
            Bench::TailConsumers,
            "xadd-to-delivery",
            "entry",
        ),
        (
            "cold-scan",
            Bench::ColdScan,
            "probe xadd+xreadgroup during scans",
            "entry",
        ),
        ("restart", Bench::Restart, "restart", "entry"),
    ]
}

/// Runs one round of `b` on a server started from `ctx.spawn`, with tiering on for side A
/// and off for side B.
pub async fn run(ctx: &Ctx, b: Bench) -> io::Result<Sample> {
    let program = ctx
        .spawn
        .as_ref()
        .ok_or_else(|| io::Error::other("tiering workloads need a server program to start"))?;
    let t = Tiered {
        on: ctx.side == "A",
        budget: budget(ctx.scale),
    };
    let mut server = t.start(program).await?;
    let result = match b {
        Bench::Xadd => xadd(ctx, &t, &server).await,
        Bench::TailConsumers => tail_consumers(ctx, &t, &server).await,
        Bench::ColdScan => cold_scan(ctx, &t, &server).await,
        Bench::Restart => restart(ctx, &t, &mut server, program).await,
    };
    result.map_err(|e| server.explain(e))
}

/// The hot budget at `scale`: [`BUDGET_FULL`] × scale in whole MiB, at least
/// [`BUDGET_MIN`].
fn budget(scale: f64) -> u64 {
    let mib = (BUDGET_FULL as f64 * scale / (1 << 20) as f64).round() as u64;
    (mib << 20).max(BUDGET_MIN)
}

/// Entries of about `bytes` node bytes.
fn entries_for(bytes: u64) -> u64 {
    (bytes / ENTRY_BYTES).max(1)
}

/// One side's settings.
struct Tiered {
    /// `stream-tiering yes` (side A) or `no` (side B).
    on: bool,
    /// `stream-tiering-hot-bytes`.
    budget: u64,
}

impl Tiered {
    /// The server's arguments (the same for the restart).
    fn args(&self, port: u16, dir: &Path) -> Vec<OsString> {
        let mut args: Vec<OsString> = ["--port", &port.to_string(), "--bind", "127.0.0.1"]
            .map(OsString::from)
            .to_vec();
        args.extend([OsString::from("--dir"), dir.as_os_str().to_owned()]);
        args.extend(["--save", "", "--appendonly", "no"].map(OsString::from));
        args.extend(
            [
                "--stream-tiering",
                if self.on { "yes" } else { "no" },
                "--stream-tiering-hot-bytes",
                &self.budget.to_string(),
            ]
            .map(OsString::from),
        );
        args
    }

    /// Starts the server of this side.
    async fn start(&self, program: &Program) -> io::Result<Server> {
        let role = if self.on { "tiering-on" } else { "tiering-off" };
        Server::launch(program, role, free_port, |port, dir| {
            Ok(self.args(port, dir))
        })
        .await
    }

    /// Side A: waits (bounded by `ctx.timeout`) until the mover has brought the hot bytes
    /// within the budget and made no move for a while; checks that the server tiers at
    /// all. Side B: nothing to wait for.
    async fn settle(&self, ctx: &Ctx, ctl: &mut Conn) -> io::Result<TierInfo> {
        let first = TierInfo::read(ctl).await?;
        if !self.on {
            return Ok(first);
        }
        if !first.enabled {
            return Err(io::Error::other(
                "INFO tiering does not say stream_tiering:yes: this streamd has no tiered \
                 streams (issue 39)",
            ));
        }
        let deadline = Instant::now() + ctx.timeout;
        let mut last = first;
        let mut quiet = 0;
        loop {
            tokio::time::sleep(POLL_EVERY * 5).await;
            let now = TierInfo::read(ctl).await?;
            let within = now.hot_bytes <= self.budget + self.budget / 8;
            quiet = if now.nodes_moved == last.nodes_moved {
                quiet + 1
            } else {
                0
            };
            // Two cron ticks (10 Hz) without a move.
            if within && quiet >= 4 {
                return Ok(now);
            }
            if Instant::now() > deadline {
                return Err(io::Error::other(format!(
                    "the mover did not bring the hot bytes within the {} budget in {:?}: \
                     hot {} bytes, {} nodes moved, {} move errors",
                    self.budget, ctx.timeout, now.hot_bytes, now.nodes_moved, now.move_errors
                )));
            }
            last = now;
        }
    }
}

/// The counters of `INFO tiering` this family reads.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct TierInfo {
    /// `stream_tiering:yes`.
    enabled: bool,
    /// `tiering_hot_bytes`: node bytes in memory.
    hot_bytes: u64,
    /// `tiering_cold_bytes`: node bytes in segments.
    cold_bytes: u64,
    /// `tiering_cold_nodes`.
    cold_nodes: u64,
    /// `tiering_nodes_moved`, since the start.
    nodes_moved: u64,
    /// `tiering_move_errors`.
    move_errors: u64,
    /// `tiering_parked_commands`.
    parked: u64,
    /// `tiering_reads`: nodes read by the pool.
    reads: u64,
    /// `tiering_read_bytes`: bytes the pool read.
    read_bytes: u64,
    /// `tiering_sync_reads`: nodes read on the core thread.
    sync_reads: u64,
}

impl TierInfo {
    /// Parses an `INFO tiering` reply (absent fields are 0: a server without tiering).
    fn parse(info: &[u8]) -> TierInfo {
        let n = |name| {
            info_field(info, name)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        TierInfo {
            enabled: info_field(info, "stream_tiering") == Some("yes"),
            hot_bytes: n("tiering_hot_bytes"),
            cold_bytes: n("tiering_cold_bytes"),
            cold_nodes: n("tiering_cold_nodes"),
            nodes_moved: n("tiering_nodes_moved"),
            move_errors: n("tiering_move_errors"),
            parked: n("tiering_parked_commands"),
            reads: n("tiering_reads"),
            read_bytes: n("tiering_read_bytes"),
            sync_reads: n("tiering_sync_reads"),
        }
    }

    /// Reads the server's counters.
    async fn read(ctl: &mut Conn) -> io::Result<TierInfo> {
        Ok(TierInfo::parse(&ctl.ok(&["INFO", "tiering"]).await?))
    }

    /// Node reads off the disk since `before` (pool and synchronous).
    fn disk_reads_since(&self, before: &TierInfo) -> u64 {
        (self.reads + self.sync_reads).saturating_sub(before.reads + before.sync_reads)
    }
}

/// `VmRSS` of a `/proc/PID/status` text, in bytes.
fn vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let mut words = line["VmRSS:".len()..].split_whitespace();
    let kb: u64 = words.next()?.parse().ok()?;
    (words.next() == Some("kB")).then_some(kb * 1024)
}

/// `VmRSS` of process `pid`, in MB (`None` without `/proc`).
fn rss_mb(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    vm_rss(&status).map(|b| b as f64 / MB)
}

/// A 4 KiB + [`PAYLOAD`] buffer of random letters and digits: entry `i`'s payload is the
/// [`PAYLOAD`] bytes at `payload_at(i)`.
fn payloads() -> Rc<Vec<u8>> {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = Rng::new(0x7135);
    Rc::new(
        (0..4096 + PAYLOAD)
            .map(|_| ALPHABET[rng.below(ALPHABET.len() as u64) as usize])
            .collect(),
    )
}

/// Where entry `i`'s payload starts in [`payloads`].
fn payload_at(i: u64) -> usize {
    (i.wrapping_mul(61) % 4096) as usize
}

/// Loads `n` entries `<i>-0 n <i> p <payload>` (i = 1..=n) into `key`, 1,000 per write.
async fn load(conn: &mut Conn, key: &[u8], n: u64) -> io::Result<()> {
    let pay = payloads();
    let (mut id, mut num) = (itoa::Buffer::new(), itoa::Buffer::new());
    let mut next = 1;
    while next <= n {
        let end = (next + 1000).min(n + 1);
        for i in next..end {
            let mut text = id.format(i).as_bytes().to_vec();
            text.extend_from_slice(b"-0");
            let at = payload_at(i);
            conn.push(&[
                &b"XADD"[..],
                key,
                &text,
                b"n",
                num.format(i).as_bytes(),
                b"p",
                &pay[at..at + PAYLOAD],
            ]);
        }
        conn.flush().await?;
        conn.skip((end - next) as usize).await?;
        next = end;
    }
    Ok(())
}

/// The figures every variant reports on side A: the budget and what is cold.
fn budget_figures(t: &Tiered, info: &TierInfo) -> Vec<Figure> {
    if !t.on {
        return Vec::new();
    }
    vec![
        Figure::new("budget", "MB", t.budget as f64 / MB),
        Figure::new("cold", "MB", info.cold_bytes as f64 / MB),
        Figure::new("hot", "MB", info.hot_bytes as f64 / MB),
    ]
}

/// `XADD s * n <i> p <payload>` from [`XADD_CLIENTS`] connections, [`XADD_PIPELINE`] per
/// write, until [`DATA_BUDGETS`] budgets of entries are written. Side A then waits for the
/// mover to bring the hot bytes within the budget (it runs on the server's cron and may
/// be behind a fast writer), and fails if it does not: the comparison would say nothing.
async fn xadd(ctx: &Ctx, t: &Tiered, server: &Server) -> io::Result<Sample> {
    let mut ctl = Conn::connect(&server.addr(), ctx.timeout).await?;
    let before = TierInfo::read(&mut ctl).await?;
    let conns = Conn::connect_many(&server.addr(), XADD_CLIENTS, ctx.timeout).await?;
    let n = entries_for(t.budget * DATA_BUDGETS);
    let pay = payloads();
    let phase = Phase::begin(&mut ctl, true).await?;
    let done = closed_loop(
        conns,
        XADD_PIPELINE,
        Stop::Count(n),
        move |_, seq, _, conn| {
            let mut num = itoa::Buffer::new();
            let at = payload_at(seq);
            conn.push(&[
                &b"XADD"[..],
                b"s",
                b"*",
                b"n",
                num.format(seq).as_bytes(),
                b"p",
                &pay[at..at + PAYLOAD],
            ]);
        },
    )
    .await?;
    let m = phase.end(&mut ctl).await?;
    let end = TierInfo::read(&mut ctl).await?;
    // The mover runs on the server's cron and may still be behind: wait for it (this
    // also checks that the server tiers at all).
    let catching_up = Instant::now();
    let settled = t.settle(ctx, &mut ctl).await?;
    let caught_up = catching_up.elapsed().as_secs_f64();
    let mut s = Sample::new(m, done.ops, done.ops, done.lat_ns);
    s.figures = budget_figures(t, &settled);
    if t.on {
        s.figures.extend([
            Figure::new(
                "hot at the end of the phase",
                "MB",
                end.hot_bytes as f64 / MB,
            ),
            Figure::new(
                "nodes moved during the phase",
                "",
                end.nodes_moved.saturating_sub(before.nodes_moved) as f64,
            ),
            Figure::new("mover caught up after the phase", "s", caught_up),
        ]);
    }
    s.figures
        .extend(rss_mb(server.pid()).map(|r| Figure::new("VmRSS after", "MB", r)));
    Ok(s)
}

/// [`DATA_BUDGETS`] budgets loaded (A: settled, mostly cold), group `g` at `$`; then for
/// `ctx.timed()` one producer adds `XADD s * ts <µs> p <payload>` ([`PRODUCER_PIPELINE`]
/// per write) while [`CONSUMERS`] consumers read `XREADGROUP GROUP g c<i> COUNT 100 BLOCK
/// 100 STREAMS s >` and acknowledge what they got; they stop once the producer has
/// stopped and a read finds nothing. Figures: disk reads (INFO tiering `tiering_reads` +
/// `tiering_sync_reads` over the phase: must be 0) and parked commands.
async fn tail_consumers(ctx: &Ctx, t: &Tiered, server: &Server) -> io::Result<Sample> {
    let mut ctl = Conn::connect(&server.addr(), ctx.timeout).await?;
    load(&mut ctl, b"s", entries_for(t.budget * DATA_BUDGETS)).await?;
    ctl.ok(&["XGROUP", "CREATE", "s", "g", "$"]).await?;
    let settled = t.settle(ctx, &mut ctl).await?;
    let producer = Conn::connect_many(&server.addr(), 1, ctx.timeout).await?;
    let consumers = Conn::connect_many(&server.addr(), CONSUMERS, ctx.timeout).await?;
    let epoch = ctx.epoch;
    let produced = Rc::new(Cell::new(false));
    let before = TierInfo::read(&mut ctl).await?;
    let phase = Phase::begin(&mut ctl, true).await?;
    let mut set = JoinSet::new();
    for (i, mut conn) in consumers.into_iter().enumerate() {
        let produced = Rc::clone(&produced);
        set.spawn_local(async move {
            let name = format!("c{i}");
            let mut t = Tally::default();
            loop {
                let reply = conn
                    .value(&[
                        "XREADGROUP",
                        "GROUP",
                        "g",
                        &name,
                        "COUNT",
                        CONSUMER_COUNT,
                        "BLOCK",
                        "100",
                        "STREAMS",
                        "s",
                        ">",
                    ])
                    .await?;
                t.ops += 1;
                if matches!(reply, Value::Null) && produced.get() {
                    return Ok(t);
                }
                let mut acks = 0;
                t.take_delivered(&reply, epoch, |_, ack| {
                    conn.push(ack);
                    acks += 1;
                });
                conn.flush().await?;
                conn.skip(acks).await?;
                t.ops += acks as u64;
            }
        });
    }
    let pay = payloads();
    let made = closed_loop(
        producer,
        PRODUCER_PIPELINE,
        Stop::For(ctx.timed()),
        move |_, seq, _, conn| {
            let mut ts = itoa::Buffer::new();
            let at = payload_at(seq);
            conn.push(&[
                &b"XADD"[..],
                b"s",
                b"*",
                b"ts",
                ts.format(micros(epoch)).as_bytes(),
                b"p",
                &pay[at..at + PAYLOAD],
            ]);
        },
    )
    .await;
    produced.set(true);
    let tally = join(set).await;
    let m = phase.end(&mut ctl).await?;
    let (made, tally) = (made?, tally?);
    let after = TierInfo::read(&mut ctl).await?;
    if tally.delivered != made.ops {
        return Err(io::Error::other(format!(
            "the consumers got {} of the {} entries the producer added",
            tally.delivered, made.ops
        )));
    }
    let mut s = Sample::new(m, made.ops + tally.ops, tally.delivered, tally.lat_ns);
    s.figures = budget_figures(t, &settled);
    s.figures.extend([
        Figure::new("disk reads", "", after.disk_reads_since(&before) as f64),
        Figure::new(
            "parked commands",
            "",
            after.parked.saturating_sub(before.parked) as f64,
        ),
        Figure::new(
            "nodes moved during the phase",
            "",
            after.nodes_moved.saturating_sub(before.nodes_moved) as f64,
        ),
    ]);
    Ok(s)
}

/// Drops the cached pages of `file` (`dd iflag=nocache count=0`, see the module doc);
/// false when `dd` is missing or failed.
fn drop_cached(file: &Path) -> bool {
    let mut arg = OsString::from("if=");
    arg.push(file.as_os_str());
    std::process::Command::new("dd")
        .arg(arg)
        .args(["iflag=nocache", "count=0", "status=none"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Drops the cached pages of every segment file under `<dir>/tier`; false when any drop
/// failed (or there is no segment).
fn drop_segments(dir: &Path) -> io::Result<bool> {
    let mut all = true;
    let mut any = false;
    for entry in std::fs::read_dir(dir.join("tier"))? {
        let path = entry?.path();
        if path.is_file() {
            any = true;
            all &= drop_cached(&path);
        }
    }
    Ok(all && any)
}

/// The disk's sequential read speed on the filesystem of `dir`: a file of `bytes` random
/// bytes written and synced, then [`DISK_READS`] times dropped from the page cache and
/// read in [`DISK_CHUNK`] reads, then read once more from the cache. Returns (MB/s
/// uncached, the median of the reads; MB/s cached; whether every drop worked).
fn disk_speed(dir: &Path, bytes: u64) -> io::Result<(f64, f64, bool)> {
    let path = dir.join("disk-speed.tmp");
    let mut rng = Rng::new(0xD15C);
    let mut chunk = vec![0u8; DISK_CHUNK];
    for word in chunk.chunks_mut(8) {
        let r = rng.next_u64().to_le_bytes();
        word.copy_from_slice(&r[..word.len()]);
    }
    let chunks = bytes.div_ceil(DISK_CHUNK as u64).max(1);
    {
        let mut f = std::fs::File::create(&path)?;
        for i in 0..chunks {
            // Each chunk differs a little, so nothing below can deduplicate them.
            chunk[..8].copy_from_slice(&i.to_le_bytes());
            f.write_all(&chunk)?;
        }
        f.sync_all()?;
    }
    let read = |path: &Path, buf: &mut [u8]| -> io::Result<f64> {
        let mut f = std::fs::File::open(path)?;
        let start = Instant::now();
        let mut total = 0u64;
        loop {
            let n = f.read(buf)?;
            if n == 0 {
                break;
            }
            total += n as u64;
        }
        Ok(total as f64 / MB / start.elapsed().as_secs_f64())
    };
    let mut dropped = true;
    let mut uncached = Vec::with_capacity(DISK_READS);
    for _ in 0..DISK_READS {
        dropped &= drop_cached(&path);
        match read(&path, &mut chunk) {
            Ok(speed) => uncached.push(speed),
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                return Err(e);
            }
        }
    }
    uncached.sort_by(f64::total_cmp);
    let cached = read(&path, &mut chunk);
    let _ = std::fs::remove_file(&path);
    Ok((uncached[DISK_READS / 2], cached?, dropped))
}

/// One full walk of the entries `1-0 ..= n-0` of `s`: `XRANGE s <i>-0 + COUNT 1000`, page
/// after page (the IDs are sequential, so the next start is known without parsing); each
/// reply must hold the entries expected. Returns the pages read.
async fn scan(conn: &mut Conn, n: u64) -> io::Result<u64> {
    let count = SCAN_COUNT.to_string();
    let mut id = itoa::Buffer::new();
    let mut start = 1;
    let mut pages = 0;
    while start <= n {
        let mut from = id.format(start).to_string();
        from.push_str("-0");
        conn.push(&["XRANGE", "s", &from, "+", "COUNT", &count]);
        conn.flush().await?;
        let reply = conn.reply_ref().await?;
        let want = SCAN_COUNT.min(n + 1 - start);
        if !reply.starts_with(format!("*{want}\r\n").as_bytes()) {
            let head = String::from_utf8_lossy(&reply[..reply.len().min(80)]).into_owned();
            return Err(io::Error::other(format!(
                "XRANGE s {from} + COUNT {count} did not return {want} entries: {head}"
            )));
        }
        pages += 1;
        start += SCAN_COUNT;
    }
    Ok(pages)
}

/// Starts the probe on its own thread (own runtime, so the scanning client's work in this
/// process never delays its clock): every [`PROBE_EVERY`], `XADD p * i <n>` then
/// `XREADGROUP GROUP pg c COUNT 10 STREAMS p >` (group `pg` must exist), timing the pair,
/// until `stop` is set.
fn start_probe(
    addr: String,
    timeout: Duration,
    stop: Arc<AtomicBool>,
) -> oneshot::Receiver<io::Result<Vec<u64>>> {
    let (tx, rx) = oneshot::channel();
    let body = move || -> io::Result<Vec<u64>> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(async move {
            let mut conn = Conn::connect(&addr, timeout).await?;
            let mut lat = Vec::new();
            let mut next = Instant::now();
            let mut i = itoa::Buffer::new();
            while !stop.load(Ordering::Relaxed) {
                let sent = Instant::now();
                conn.ok(&["XADD", "p", "*", "i", i.format(lat.len())])
                    .await?;
                conn.ok(&[
                    "XREADGROUP",
                    "GROUP",
                    "pg",
                    "c",
                    "COUNT",
                    "10",
                    "STREAMS",
                    "p",
                    ">",
                ])
                .await?;
                lat.push(ns_since(sent));
                next += PROBE_EVERY;
                let now = Instant::now();
                if next > now {
                    tokio::time::sleep(next - now).await;
                } else {
                    next = now;
                }
            }
            Ok(lat)
        })
    };
    std::thread::spawn(move || {
        let _ = tx.send(body());
    });
    rx
}

/// Runs the probe while `work` runs (at least until it ends), returning its latencies.
async fn probe_during<T>(
    ctx: &Ctx,
    addr: &str,
    work: impl std::future::Future<Output = io::Result<T>>,
) -> io::Result<(T, Vec<u64>)> {
    let stop = Arc::new(AtomicBool::new(false));
    let rx = start_probe(addr.to_string(), ctx.timeout, Arc::clone(&stop));
    let out = work.await;
    stop.store(true, Ordering::Relaxed);
    let lat = tokio::time::timeout(ctx.timeout, rx)
        .await
        .map_err(|_| io::Error::other("the probe did not stop"))?
        .map_err(|_| io::Error::other("the probe thread ended without an answer"))??;
    Ok((out?, lat))
}

/// The p99 of `lat` in microseconds.
fn p99_us(lat: &mut [u64]) -> f64 {
    lat.sort_unstable();
    percentile(lat, 0.99) as f64 / 1000.0
}

/// [`DATA_BUDGETS`] budgets loaded as `1-0 ..` (A: settled, segment pages dropped from the
/// page cache); then
/// 1. A: the disk's sequential read speed with a file as large as the stream's nodes;
/// 2. the probe alone for `ctx.timed()`: its p99 without a scan;
/// 3. one full scan, timed (the phase: entries/s, pages as ops, node MB/s);
/// 4. scans again (A: pages dropped before each) for `ctx.timed()` with the probe running:
///    the probe's latencies are the sample's, and its p99 over the one of step 2 a figure.
async fn cold_scan(ctx: &Ctx, t: &Tiered, server: &Server) -> io::Result<Sample> {
    let addr = server.addr();
    let mut ctl = Conn::connect(&addr, ctx.timeout).await?;
    let n = entries_for(t.budget * DATA_BUDGETS);
    load(&mut ctl, b"s", n).await?;
    ctl.ok(&["XGROUP", "CREATE", "p", "pg", "$", "MKSTREAM"])
        .await?;
    let settled = t.settle(ctx, &mut ctl).await?;
    let node_bytes = settled.hot_bytes + settled.cold_bytes;
    let mut figures = budget_figures(t, &settled);
    if t.on {
        let (uncached, cached, dropped) = disk_speed(server.dir(), node_bytes.max(32 << 20))
            .map_err(|e| {
                io::Error::other(format!(
                    "measuring the disk in {}: {e}",
                    server.dir().display()
                ))
            })?;
        figures.extend([
            Figure::new("disk seq read", "MB/s", uncached),
            Figure::new("disk cached read", "MB/s", cached),
            Figure::new("cache dropped", "", f64::from(u8::from(dropped))),
        ]);
    }
    let (_, mut alone) = probe_during(ctx, &addr, async {
        tokio::time::sleep(ctx.timed()).await;
        Ok(())
    })
    .await?;
    let alone_p99 = p99_us(&mut alone);

    let mut conn = Conn::connect(&addr, ctx.timeout).await?;
    let dropped = !t.on || drop_segments(server.dir())?;
    let before = TierInfo::read(&mut ctl).await?;
    let phase = Phase::begin(&mut ctl, true).await?;
    let pages = scan(&mut conn, n).await?;
    let m = phase.end(&mut ctl).await?;
    let after = TierInfo::read(&mut ctl).await?;
    let scan_mb_s = node_bytes as f64 / MB / m.secs;
    figures.push(Figure::new("node bytes scanned", "MB/s", scan_mb_s));
    if t.on {
        let read = after.read_bytes.saturating_sub(before.read_bytes) as f64 / MB / m.secs;
        figures.extend([
            Figure::new("read from segments", "MB/s", read),
            Figure::new("segment pages dropped", "", f64::from(u8::from(dropped))),
            Figure::new("disk reads", "", after.disk_reads_since(&before) as f64),
            Figure::new(
                "parked commands",
                "",
                after.parked.saturating_sub(before.parked) as f64,
            ),
        ]);
        let disk = figures
            .iter()
            .find(|f| f.name == "disk seq read")
            .map(|f| f.value);
        if let Some(disk) = disk {
            figures.push(Figure::new("scan / disk", "×", read / disk));
        }
    }

    let until = Instant::now() + ctx.timed();
    let (_, mut during) = probe_during(ctx, &addr, async {
        while Instant::now() < until {
            if t.on {
                drop_segments(server.dir())?;
            }
            scan(&mut conn, n).await?;
        }
        Ok(())
    })
    .await?;
    let lat = during.clone();
    let during_p99 = p99_us(&mut during);
    figures.extend([
        Figure::new("probe p99 without scan", "µs", alone_p99),
        Figure::new(
            "probe p99 during scans / without",
            "×",
            during_p99 / alone_p99,
        ),
    ]);
    let mut s = Sample::new(m, pages, n, lat);
    s.figures = figures;
    Ok(s)
}

/// Waits (bounded by `ctx.timeout`) until `XLEN s` on `addr` answers `n` (a loading
/// server may refuse it first).
async fn wait_loaded(ctx: &Ctx, addr: &str, n: u64) -> io::Result<()> {
    let deadline = Instant::now() + ctx.timeout;
    let mut conn = Conn::connect(addr, ctx.timeout).await?;
    loop {
        conn.push(&["XLEN", "s"]);
        conn.flush().await?;
        let reply = conn.reply().await?;
        let len = crate::client::parse(&reply);
        if len == Some(Value::Int(n as i64)) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(io::Error::other(format!(
                "after the restart XLEN s is {len:?}, not {n}, {:?} on",
                ctx.timeout
            )));
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}

/// [`RESTART_BUDGETS`] budgets loaded (A: settled, ten budgets cold), `SAVE`, SIGKILL,
/// and the same binary started again on the same directory: the time from the start to
/// `XLEN s` answering every entry is the sample (entries/s = entries loaded per second of
/// restart; latency = the restart time), and VmRSS before and after are figures.
async fn restart(
    ctx: &Ctx,
    t: &Tiered,
    server: &mut Server,
    program: &Program,
) -> io::Result<Sample> {
    let mut ctl = Conn::connect(&server.addr(), ctx.timeout).await?;
    let n = entries_for(t.budget * RESTART_BUDGETS);
    load(&mut ctl, b"s", n).await?;
    let settled = t.settle(ctx, &mut ctl).await?;
    ctl.ok(&["SAVE"]).await?;
    let rss_before = rss_mb(server.pid());
    drop(ctl);
    let start = Instant::now();
    server
        .relaunch(program, |port, dir| Ok(t.args(port, dir)))
        .await?;
    wait_loaded(ctx, &server.addr(), n).await?;
    let secs = start.elapsed().as_secs_f64();
    let rss_after = rss_mb(server.pid());
    let mut ctl = Conn::connect(&server.addr(), ctx.timeout).await?;
    let loaded = TierInfo::read(&mut ctl).await?;
    let saved: u64 = std::fs::read_dir(server.dir())?
        .filter_map(|e| e.ok()?.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum();
    let mut figures = budget_figures(t, &settled);
    figures.push(Figure::new("restart", "s", secs));
    figures.extend(rss_before.map(|r| Figure::new("VmRSS before", "MB", r)));
    figures.extend(rss_after.map(|r| Figure::new("VmRSS after restart", "MB", r)));
    figures.push(Figure::new(
        "hot after restart",
        "MB",
        loaded.hot_bytes as f64 / MB,
    ));
    figures.push(Figure::new("files in dir", "MB", saved as f64 / MB));
    Ok(Sample {
        ops: 0,
        entries: n,
        secs,
        lat_ns: vec![(secs * 1e9) as u64],
        mem_delta: None,
        cpu_us: None,
        sys_share: None,
        figures,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_and_sizes_follow_the_scale() {
        assert_eq!(budget(1.0), 16 << 20);
        assert_eq!(budget(0.5), 8 << 20);
        assert_eq!(budget(0.01), BUDGET_MIN);
        assert_eq!(entries_for(ENTRY_BYTES * 10), 10);
        assert_eq!(entries_for(0), 1);
        let names: Vec<&str> = variants().into_iter().map(|(n, ..)| n).collect();
        assert_eq!(names, ["xadd", "tail-consumers", "cold-scan", "restart"]);
    }

    #[test]
    fn info_tiering_and_proc_status_parse() {
        let info =
            b"# Tiering\r\nstream_tiering:yes\r\nstream_tiering_hot_bytes_budget:1048576\r\n\
            tiering_hot_bytes:900000\r\ntiering_cold_nodes:12\r\ntiering_cold_bytes:49152\r\n\
            tiering_nodes_moved:14\r\ntiering_parked_commands:3\r\ntiering_reads:7\r\n\
            tiering_read_bytes:28672\r\ntiering_sync_reads:2\r\n";
        let t = TierInfo::parse(info);
        assert!(t.enabled);
        assert_eq!(
            (t.hot_bytes, t.cold_nodes, t.cold_bytes, t.nodes_moved),
            (900_000, 12, 49_152, 14)
        );
        assert_eq!(
            (t.parked, t.reads, t.read_bytes, t.sync_reads),
            (3, 7, 28_672, 2)
        );
        assert_eq!(t.disk_reads_since(&TierInfo::default()), 9);
        // A server without the section: all zero, not tiering.
        assert_eq!(TierInfo::parse(b"# Server\r\n"), TierInfo::default());
        let status = "Name:\tstreamd\nVmPeak:\t  9000 kB\nVmRSS:\t    2048 kB\nThreads:\t4\n";
        assert_eq!(vm_rss(status), Some(2 << 20));
        assert_eq!(vm_rss("VmRSS: x kB"), None);
        assert_eq!(vm_rss("Name: a"), None);
        assert!(rss_mb(std::process::id()).is_some_and(|r| r > 0.0));
    }

    #[test]
    fn the_disk_is_measured_and_cache_drops_are_reported() {
        let dir = std::env::temp_dir().join(format!("tiering-bench-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let (uncached, cached, _) = disk_speed(&dir, 4 << 20).expect("disk speed");
        assert!(uncached > 0.0 && cached > 0.0);
        assert!(!dir.join("disk-speed.tmp").exists());
        assert!(!drop_cached(&dir.join("missing")));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
