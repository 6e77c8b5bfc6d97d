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
        Ok(Conn { stream, buf: Vec::with_capacity(4096) })
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
                return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "closed"));
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    async fn cmd(&mut self, args: &[&[u8]]) -> std::io::Result<Vec<u8>> {
        self.send(args).await?;
        self.reply().await
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
            return Err(std::io::Error::other(format!("only {blocked}/{n} clients blocked")));
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

async fn blocked_readers_round(addr: &str, n: usize, xadds: usize) -> std::io::Result<BlockedFigures> {
    let mut ctl = Conn::connect(addr).await?;
    ctl.cmd(&[b"FLUSHALL"]).await?;
    let mut readers = Vec::with_capacity(n);
    for i in 0..n {
        let mut c = Conn::connect(addr).await?;
        let key = format!("r{i}");
        c.send(&[b"XREAD", b"BLOCK", b"0", b"STREAMS", key.as_bytes(), b"$"]).await?;
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
        writer.cmd(&[b"XADD", key.as_bytes(), b"*", b"f", b"v"]).await?;
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

struct Args {
    workload: String,
    a: String,
    b: Option<String>,
    readers: Vec<usize>,
    rounds: usize,
    xadds: usize,
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
            "--json" => args.json = true,
            "-h" | "--help" => {
                return Err("usage: streamd-bench blocked-readers --a HOST:PORT [--b HOST:PORT] \
                            [--readers 100,1000,10000] [--rounds 3] [--xadds 20000] [--json]"
                    .into());
            }
            w if args.workload.is_empty() && !w.starts_with('-') => args.workload = w.to_string(),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if args.workload.is_empty() || args.a.is_empty() {
        return Err("usage: streamd-bench blocked-readers --a HOST:PORT [--b HOST:PORT]".into());
    }
    Ok(args)
}

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
    if args.workload != "blocked-readers" {
        eprintln!("unknown workload {}; available: blocked-readers", args.workload);
        std::process::exit(2);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
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
    fn percentiles() {
        let v: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&v, 0.5), Duration::from_millis(51));
        assert_eq!(percentile(&v, 0.99), Duration::from_millis(99));
    }
}
