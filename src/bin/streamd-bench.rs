//! `streamd-bench`: runs a named workload against one or two servers side by side
//! (`--a 127.0.0.1:P --b 127.0.0.1:Q`), alternating A/B rounds, and prints the figures
//! and the A/B ratios. Both servers run on this machine in the same run, so the ratio is
//! what to read; absolute numbers on a noisy machine are not.
//!
//! Workloads:
//! - `blocked-readers`: N connections blocked in `XREAD BLOCK 0` on N keys; measures the
//!   XADD throughput (one connection, unpipelined) while they wait on other keys, then
//!   the wake-up latency from sending the XADD for a reader's key to that reader
//!   receiving its entry (p50/p99).
//! - `xreadgroup-drain`: a 1M-entry stream (`--entries`) loaded with pipelined XADDs, a group
//!   created at 0, then `XREADGROUP GROUP g c COUNT 10 STREAMS s >` until empty (entries/s).
//! - `xack`: a 100k-entry PEL (`--pel`) from one XREADGROUP drain, then XACK of the pending
//!   IDs in random order, one ID per command, pipelined 32 (ops/s).
//! - `xautoclaim`: a 100k-entry PEL, then `XAUTOCLAIM s g c2 0 <cursor> COUNT 100` until the
//!   cursor returns to 0-0 (ops/s and entries/s).
//! - `pel-memory`: `used_memory` (INFO memory) before and after creating a 100k-entry PEL
//!   (bytes per pending entry). streamd's `used_memory` is whatever its INFO reports (see its
//!   `commands::server::used_memory`), not necessarily an allocator count.
//!
//! Uses its own minimal RESP client (tokio), so the measurement does not depend on a
//! client library's buffering.

use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A minimal RESP connection: sends commands, reads whole replies (framing only).
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    async fn connect(addr: &str) -> std::io::Result<Conn> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            buf: Vec::with_capacity(4096),
        })
    }

    async fn send(&mut self, args: &[&[u8]]) -> std::io::Result<()> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        self.stream.write_all(&out).await
    }

    async fn reply(&mut self) -> std::io::Result<Vec<u8>> {
        loop {
            if let Some(n) = reply_len(&self.buf) {
                let rest = self.buf.split_off(n);
                return Ok(std::mem::replace(&mut self.buf, rest));
            }
            let mut chunk = [0u8; 16384];
            let n = self.stream.read(&mut chunk).await?;
            if n == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "closed",
                ));
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    async fn cmd(&mut self, args: &[&[u8]]) -> std::io::Result<Vec<u8>> {
        self.send(args).await?;
        self.reply().await
    }

    /// Sends `cmds` in one write and reads their replies; fails on an error reply.
    async fn pipeline(&mut self, cmds: &[Vec<Vec<u8>>]) -> std::io::Result<()> {
        let mut out = Vec::new();
        for args in cmds {
            out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
            for a in args {
                out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
                out.extend_from_slice(a);
                out.extend_from_slice(b"\r\n");
            }
        }
        self.stream.write_all(&out).await?;
        for _ in cmds {
            let r = self.reply().await?;
            if r.first() == Some(&b'-') {
                return Err(std::io::Error::other(
                    String::from_utf8_lossy(&r).into_owned(),
                ));
            }
        }
        Ok(())
    }

    /// One command whose reply must not be an error.
    async fn ok(&mut self, args: &[&[u8]]) -> std::io::Result<Vec<u8>> {
        let r = self.cmd(args).await?;
        if r.first() == Some(&b'-') {
            return Err(std::io::Error::other(
                String::from_utf8_lossy(&r).into_owned(),
            ));
        }
        Ok(r)
    }
}

/// Length of the first complete RESP2/RESP3 reply in `buf`, if complete.
fn reply_len(buf: &[u8]) -> Option<usize> {
    fn line(buf: &[u8], at: usize) -> Option<(&[u8], usize)> {
        let end = buf.get(at..)?.windows(2).position(|w| w == b"\r\n")? + at;
        Some((&buf[at + 1..end], end + 2))
    }
    fn one(buf: &[u8], at: usize) -> Option<usize> {
        let kind = *buf.get(at)?;
        let (text, next) = line(buf, at)?;
        let n: i64 = std::str::from_utf8(text).ok()?.parse().unwrap_or(0);
        match kind {
            b'$' | b'=' | b'!' => {
                if n < 0 {
                    Some(next)
                } else {
                    let end = next + n as usize + 2;
                    (buf.len() >= end).then_some(end)
                }
            }
            b'*' | b'~' | b'>' | b'%' => {
                let items = if kind == b'%' { n * 2 } else { n };
                let mut pos = next;
                for _ in 0..items.max(0) {
                    pos = one(buf, pos)?;
                }
                Some(pos)
            }
            _ => Some(next),
        }
    }
    one(buf, 0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

/// Waits until the server reports `n` blocked clients (bounded).
async fn wait_blocked(conn: &mut Conn, n: usize) -> std::io::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let info = conn.cmd(&[b"INFO", b"clients"]).await?;
        let text = String::from_utf8_lossy(&info);
        let blocked = text
            .lines()
            .find_map(|l| l.strip_prefix("blocked_clients:"))
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        if blocked >= n {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(std::io::Error::other(format!(
                "only {blocked}/{n} clients blocked"
            )));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Figures of one blocked-readers round.
#[derive(Debug, Clone, Copy)]
struct BlockedFigures {
    xadd_per_sec: f64,
    wake_p50: Duration,
    wake_p99: Duration,
}

async fn blocked_readers_round(
    addr: &str,
    n: usize,
    xadds: usize,
) -> std::io::Result<BlockedFigures> {
    let mut ctl = Conn::connect(addr).await?;
    ctl.cmd(&[b"FLUSHALL"]).await?;
    let mut readers = Vec::with_capacity(n);
    for i in 0..n {
        let mut c = Conn::connect(addr).await?;
        let key = format!("r{i}");
        c.send(&[b"XREAD", b"BLOCK", b"0", b"STREAMS", key.as_bytes(), b"$"])
            .await?;
        readers.push(c);
    }
    wait_blocked(&mut ctl, n).await?;
    // XADD throughput while n clients wait on other keys.
    let mut writer = Conn::connect(addr).await?;
    let start = Instant::now();
    for _ in 0..xadds {
        writer.cmd(&[b"XADD", b"other", b"*", b"f", b"v"]).await?;
    }
    let xadd_per_sec = xadds as f64 / start.elapsed().as_secs_f64();
    // Wake-up latency: XADD to each reader's key, one at a time; the reader task stamps
    // the arrival.
    let mut tasks = Vec::with_capacity(n);
    for mut r in readers {
        tasks.push(tokio::task::spawn_local(async move {
            let reply = r.reply().await;
            (Instant::now(), reply.is_ok())
        }));
    }
    let mut sent = Vec::with_capacity(n);
    for i in 0..n {
        let key = format!("r{i}");
        sent.push(Instant::now());
        writer
            .cmd(&[b"XADD", key.as_bytes(), b"*", b"f", b"v"])
            .await?;
    }
    let mut lat = Vec::with_capacity(n);
    for (i, t) in tasks.into_iter().enumerate() {
        let (at, ok) = t.await.map_err(std::io::Error::other)?;
        if !ok {
            return Err(std::io::Error::other("a reader lost its connection"));
        }
        lat.push(at.saturating_duration_since(sent[i]));
    }
    lat.sort();
    Ok(BlockedFigures {
        xadd_per_sec,
        wake_p50: percentile(&lat, 0.50),
        wake_p99: percentile(&lat, 0.99),
    })
}

/// Loads `n` entries `1-0 ..= n-0` (`f v`) into `s` with pipelined XADDs (batches of 1000).
async fn load(conn: &mut Conn, key: &[u8], n: usize) -> std::io::Result<()> {
    let mut i = 1;
    while i <= n {
        let end = (i + 1000).min(n + 1);
        let cmds: Vec<Vec<Vec<u8>>> = (i..end)
            .map(|j| {
                vec![
                    b"XADD".to_vec(),
                    key.to_vec(),
                    format!("{j}-0").into_bytes(),
                    b"f".to_vec(),
                    b"v".to_vec(),
                ]
            })
            .collect();
        conn.pipeline(&cmds).await?;
        i = end;
    }
    Ok(())
}

/// True for an empty (null) XREADGROUP reply.
fn is_null(reply: &[u8]) -> bool {
    reply == b"*-1\r\n" || reply == b"_\r\n" || reply == b"*0\r\n"
}

/// Delivers every new entry of `s` to consumer `consumer` of group `g` with `COUNT count`
/// (one command at a time); returns the number of commands sent.
async fn drain(conn: &mut Conn, consumer: &[u8], count: usize) -> std::io::Result<usize> {
    let count = count.to_string();
    let mut commands = 0;
    loop {
        commands += 1;
        let r = conn
            .ok(&[
                b"XREADGROUP",
                b"GROUP",
                b"g",
                consumer,
                b"COUNT",
                count.as_bytes(),
                b"STREAMS",
                b"s",
                b">",
            ])
            .await?;
        if is_null(&r) {
            return Ok(commands);
        }
    }
}

/// FLUSHALL, `n` entries in `s`, group `g` at 0.
async fn setup_group(conn: &mut Conn, n: usize) -> std::io::Result<()> {
    conn.ok(&[b"FLUSHALL"]).await?;
    load(conn, b"s", n).await?;
    conn.ok(&[b"XGROUP", b"CREATE", b"s", b"g", b"0"]).await?;
    Ok(())
}

/// One named figure of a round.
type Figures = Vec<(&'static str, f64)>;

async fn xreadgroup_drain_round(addr: &str, n: usize) -> std::io::Result<Figures> {
    let mut conn = Conn::connect(addr).await?;
    setup_group(&mut conn, n).await?;
    let start = Instant::now();
    drain(&mut conn, b"c", 10).await?;
    let secs = start.elapsed().as_secs_f64();
    Ok(vec![("entries/s", n as f64 / secs)])
}

/// xorshift64*: a fixed-seed shuffle, the same order on both servers.
fn shuffle<T>(v: &mut [T], mut seed: u64) {
    for i in (1..v.len()).rev() {
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        let r = seed.wrapping_mul(0x2545_F491_4F6C_DD1D);
        v.swap(i, (r % (i as u64 + 1)) as usize);
    }
}

async fn xack_round(addr: &str, n: usize) -> std::io::Result<Figures> {
    let mut conn = Conn::connect(addr).await?;
    setup_group(&mut conn, n).await?;
    drain(&mut conn, b"c", 1000).await?;
    let mut ids: Vec<Vec<u8>> = (1..=n).map(|j| format!("{j}-0").into_bytes()).collect();
    shuffle(&mut ids, 0x9E37_79B9_7F4A_7C15);
    let start = Instant::now();
    for chunk in ids.chunks(32) {
        let cmds: Vec<Vec<Vec<u8>>> = chunk
            .iter()
            .map(|id| vec![b"XACK".to_vec(), b"s".to_vec(), b"g".to_vec(), id.clone()])
            .collect();
        conn.pipeline(&cmds).await?;
    }
    let secs = start.elapsed().as_secs_f64();
    Ok(vec![("ops/s", n as f64 / secs)])
}

/// The first bulk string of an array reply (XAUTOCLAIM's cursor).
fn first_bulk(reply: &[u8]) -> Option<&[u8]> {
    let mut lines = reply.split(|&b| b == b'\n');
    lines.next()?; // array header
    lines.next()?; // bulk header
    let cursor = lines.next()?;
    Some(cursor.strip_suffix(b"\r").unwrap_or(cursor))
}

async fn xautoclaim_round(addr: &str, n: usize) -> std::io::Result<Figures> {
    let mut conn = Conn::connect(addr).await?;
    setup_group(&mut conn, n).await?;
    drain(&mut conn, b"c", 1000).await?;
    let mut cursor = b"0-0".to_vec();
    let mut ops = 0usize;
    let start = Instant::now();
    loop {
        let r = conn
            .ok(&[
                b"XAUTOCLAIM",
                b"s",
                b"g",
                b"c2",
                b"0",
                &cursor,
                b"COUNT",
                b"100",
            ])
            .await?;
        ops += 1;
        cursor = first_bulk(&r)
            .ok_or_else(|| std::io::Error::other("bad XAUTOCLAIM reply"))?
            .to_vec();
        if cursor == b"0-0" {
            break;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    Ok(vec![
        ("ops/s", ops as f64 / secs),
        ("entries/s", n as f64 / secs),
    ])
}

async fn used_memory(conn: &mut Conn) -> std::io::Result<f64> {
    let info = conn.ok(&[b"INFO", b"memory"]).await?;
    String::from_utf8_lossy(&info)
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .ok_or_else(|| std::io::Error::other("no used_memory in INFO memory"))
}

async fn pel_memory_round(addr: &str, n: usize) -> std::io::Result<Figures> {
    let mut conn = Conn::connect(addr).await?;
    setup_group(&mut conn, n).await?;
    let before = used_memory(&mut conn).await?;
    drain(&mut conn, b"c", 1000).await?;
    let after = used_memory(&mut conn).await?;
    Ok(vec![("bytes/pending", (after - before) / n as f64)])
}

struct Args {
    workload: String,
    a: String,
    b: Option<String>,
    readers: Vec<usize>,
    rounds: usize,
    xadds: usize,
    entries: usize,
    pel: usize,
    json: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        workload: String::new(),
        a: String::new(),
        b: None,
        readers: vec![100, 1000, 10000],
        rounds: 3,
        xadds: 20000,
        entries: 1_000_000,
        pel: 100_000,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--a" => args.a = value()?,
            "--b" => args.b = Some(value()?),
            "--readers" => {
                args.readers = value()?
                    .split(',')
                    .map(|v| v.parse().map_err(|_| format!("bad --readers {v}")))
                    .collect::<Result<_, _>>()?
            }
            "--rounds" => args.rounds = value()?.parse().map_err(|_| "bad --rounds")?,
            "--xadds" => args.xadds = value()?.parse().map_err(|_| "bad --xadds")?,
            "--entries" => args.entries = value()?.parse().map_err(|_| "bad --entries")?,
            "--pel" => args.pel = value()?.parse().map_err(|_| "bad --pel")?,
            "--json" => args.json = true,
            "-h" | "--help" => {
                return Err(format!(
                    "usage: streamd-bench WORKLOAD --a HOST:PORT [--b HOST:PORT] [--rounds 3] \
                     [--readers 100,1000,10000] [--xadds 20000] [--entries 1000000] \
                     [--pel 100000] [--json]\nworkloads: {}",
                    WORKLOADS.join(", ")
                ));
            }
            w if args.workload.is_empty() && !w.starts_with('-') => args.workload = w.to_string(),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if args.workload.is_empty() || args.a.is_empty() {
        return Err(format!(
            "usage: streamd-bench WORKLOAD --a HOST:PORT [--b HOST:PORT] (--help); workloads: {}",
            WORKLOADS.join(", ")
        ));
    }
    Ok(args)
}

const WORKLOADS: &[&str] = &[
    "blocked-readers",
    "xreadgroup-drain",
    "xack",
    "xautoclaim",
    "pel-memory",
];

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if !WORKLOADS.contains(&args.workload.as_str()) {
        eprintln!(
            "unknown workload {}; available: {}",
            args.workload,
            WORKLOADS.join(", ")
        );
        std::process::exit(2);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("runtime: {e}");
            std::process::exit(1);
        }
    };
    let local = tokio::task::LocalSet::new();
    let result: std::io::Result<()> = local.block_on(&runtime, async {
        let servers: Vec<(&str, &str)> = std::iter::once(("A", args.a.as_str()))
            .chain(args.b.as_deref().map(|b| ("B", b)))
            .collect();
        if args.workload != "blocked-readers" {
            return run_figures(&args, &servers).await;
        }
        let mut json_rows = Vec::new();
        for &n in &args.readers {
            let mut per: Vec<Vec<BlockedFigures>> = vec![Vec::new(); servers.len()];
            for round in 0..args.rounds {
                for (s, (name, addr)) in servers.iter().enumerate() {
                    eprint!("\rblocked-readers n={n} round {}/{} server {name}   ", round + 1, args.rounds);
                    per[s].push(blocked_readers_round(addr, n, args.xadds).await?);
                }
            }
            eprintln!();
            let summary: Vec<(f64, f64, f64)> = per
                .iter()
                .map(|f| {
                    (
                        median(f.iter().map(|x| x.xadd_per_sec).collect()),
                        median(f.iter().map(|x| x.wake_p50.as_secs_f64() * 1e6).collect()),
                        median(f.iter().map(|x| x.wake_p99.as_secs_f64() * 1e6).collect()),
                    )
                })
                .collect();
            for (s, (name, addr)) in servers.iter().enumerate() {
                let (tput, p50, p99) = summary[s];
                if args.json {
                    json_rows.push(format!(
                        "{{\"workload\":\"blocked-readers\",\"readers\":{n},\"server\":\"{name}\",\"addr\":\"{addr}\",\"xadd_per_sec\":{tput:.0},\"wake_p50_us\":{p50:.0},\"wake_p99_us\":{p99:.0}}}"
                    ));
                } else {
                    println!(
                        "blocked-readers n={n:<6} {name} {addr:<21} xadd {tput:>9.0}/s  wake p50 {p50:>7.0} us  p99 {p99:>7.0} us"
                    );
                }
            }
            if summary.len() == 2 && !args.json {
                let (a, b) = (summary[0], summary[1]);
                println!(
                    "blocked-readers n={n:<6} A/B   xadd throughput {:.2}x   wake p50 {:.2}x   p99 {:.2}x  (latency: lower is better)",
                    a.0 / b.0,
                    a.1 / b.1,
                    a.2 / b.2
                );
            }
        }
        if args.json {
            println!("[{}]", json_rows.join(","));
        }
        Ok(())
    });
    if let Err(e) = result {
        eprintln!("streamd-bench: {e}");
        std::process::exit(1);
    }
}

/// Runs one of the figure workloads: alternating A/B rounds, then per figure the median of
/// the rounds for each server and the A/B ratio.
async fn run_figures(args: &Args, servers: &[(&str, &str)]) -> std::io::Result<()> {
    let w = args.workload.as_str();
    let mut per: Vec<Vec<Figures>> = vec![Vec::new(); servers.len()];
    for round in 0..args.rounds {
        for (s, (name, addr)) in servers.iter().enumerate() {
            eprint!("\r{w} round {}/{} server {name}   ", round + 1, args.rounds);
            let figures = match w {
                "xreadgroup-drain" => xreadgroup_drain_round(addr, args.entries).await?,
                "xack" => xack_round(addr, args.pel).await?,
                "xautoclaim" => xautoclaim_round(addr, args.pel).await?,
                "pel-memory" => pel_memory_round(addr, args.pel).await?,
                other => return Err(std::io::Error::other(format!("unknown workload {other}"))),
            };
            per[s].push(figures);
        }
    }
    eprintln!();
    let Some(first) = per.first().and_then(|r| r.first()) else {
        return Ok(());
    };
    let names: Vec<&str> = first.iter().map(|(n, _)| *n).collect();
    let mut json_rows = Vec::new();
    for (i, metric) in names.iter().enumerate() {
        let medians: Vec<f64> = per
            .iter()
            .map(|rounds| median(rounds.iter().map(|f| f[i].1).collect()))
            .collect();
        for (s, (name, addr)) in servers.iter().enumerate() {
            if args.json {
                json_rows.push(format!(
                    "{{\"workload\":\"{w}\",\"metric\":\"{metric}\",\"server\":\"{name}\",\"addr\":\"{addr}\",\"median\":{:.2},\"rounds\":{}}}",
                    medians[s], args.rounds
                ));
            } else {
                println!(
                    "{w:<17} {metric:<14} {name} {addr:<21} {:>14.1}   (median of {} rounds)",
                    medians[s], args.rounds
                );
            }
        }
        if medians.len() == 2 && !args.json {
            println!(
                "{w:<17} {metric:<14} A/B {:>36.2}x",
                medians[0] / medians[1]
            );
        }
    }
    if args.json {
        println!("[{}]", json_rows.join(","));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_framing() {
        assert_eq!(reply_len(b"+OK\r\n"), Some(5));
        assert_eq!(reply_len(b"$3\r\nabc\r\n:1\r\n"), Some(9));
        assert_eq!(reply_len(b"*2\r\n$1\r\na\r\n"), None);
        assert_eq!(reply_len(b"*-1\r\n"), Some(5));
        assert_eq!(reply_len(b"%1\r\n+a\r\n*0\r\n"), Some(12));
    }

    #[test]
    fn cursor_and_null_replies() {
        assert_eq!(
            first_bulk(b"*3\r\n$3\r\n5-0\r\n*0\r\n*0\r\n"),
            Some(&b"5-0"[..])
        );
        assert!(is_null(b"*-1\r\n"));
        assert!(!is_null(b"*1\r\n"));
        let mut v: Vec<u32> = (0..100).collect();
        shuffle(&mut v, 7);
        let mut sorted = v.clone();
        sorted.sort();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        assert_ne!(v, sorted);
    }

    #[test]
    fn percentiles() {
        let v: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&v, 0.5), Duration::from_millis(51));
        assert_eq!(percentile(&v, 0.99), Duration::from_millis(99));
    }
}
