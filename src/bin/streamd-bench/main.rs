//! `streamd-bench`: runs Redis's kinds of stream workloads against one or two servers side
//! by side (`--a 127.0.0.1:P --b 127.0.0.1:Q`) and prints, per workload and server, the
//! median and spread of ops/s and entries/s over alternating rounds, latency
//! p50/p99/p99.9, server CPU time per command and the share of it spent in the kernel, the
//! `used_memory` delta per entry, and the A/B ratios. Both servers run on this machine in
//! the same run, so the ratios are what to read; absolute numbers on a noisy machine are
//! not.
//!
//! Rounds alternate A B, B A, A B, ... so neither server always runs first (after the
//! other's allocations, or while a neighbour's build starts). Every round of every
//! workload starts with FLUSHALL.
//!
//! # Layout
//! - `client`: the RESP client (pipelined sends, reply framing, a small reply parser).
//! - `measure`: phases (time, `used_memory`, server CPU from `/proc`), samples, medians.
//! - `driver`: the closed-loop request driver most workloads share.
//! - `workloads`: the registry and one file per family (write, read, groups, live, memory,
//!   pubsub, replication).
//! - `report`: the Markdown table and JSON lines.
//! - `plot`: `--svg FILE`, the A/B ratios as one chart per workload family.
//!
//! The `repl/*` workloads start their own servers instead (A = streamd, B = redis-server,
//! a primary with 0, 1 or 2 replicas each round) and run only when named: `--only repl`.
//! So do the `cluster/*` workloads (a 3-primary, 3-replica cluster of each kind, formed
//! with `redis-cli --cluster create` each round): `--only cluster`; and the `tiering/*`
//! workloads (the same streamd twice, A with `--stream-tiering yes` and a small hot
//! budget, B with `--stream-tiering no`): `--only tiering`; and the `syncrepl/*` workloads
//! (a primary and a replica of the same streamd, A with `min-sync-replicas 1`, B
//! asynchronous): `--only syncrepl`.

mod client;
mod driver;
mod measure;
mod plot;
mod report;
mod workloads;

use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use measure::{Sample, Summary};
use report::Side;
use workloads::{Ctx, Program, Workload};

/// The scale at which a full run of every workload takes about ten minutes on the 2-core
/// development machine (5 rounds, both servers).
const DEFAULT_SCALE: f64 = 0.5;

/// Entries loaded before each `repl/fullsync-*` round unless `--sync-entries` says.
const DEFAULT_SYNC_ENTRIES: u64 = 5_000_000;

const USAGE: &str = "\
usage: streamd-bench --a HOST:PORT [--b HOST:PORT] [options] [WORKLOAD...]
       streamd-bench --only repl [--streamd PATH] [--sync-entries N] [options]
       streamd-bench --only cluster [--streamd PATH] [options]
       streamd-bench --only tiering [--streamd PATH] [options]

  --a, --b ADDR     servers to compare (B optional; ratios are A/B)
  --rounds N        rounds per server, alternating A B, B A, ... (default 5)
  --scale F         size factor: 1 = the issue's sizes (1M entries, 100k PEL, 100k
                    streams) and 3 s timed phases (default 0.5, about 10 minutes in all)
  --only W1,W2      workload families or full names (also accepted as positional args)
  --timeout SECS    bound on every connect/write/reply (default 30)
  --json            one JSON object per workload and server (and per ratio) per line
  --svg FILE        also write the A/B ratios as SVG charts, one per workload family
                    (ratio of medians, spread of the rounds, the 1.0 line marked)
  --list            print the workload names and exit

  repl/* (replication) and cluster/* (3 primaries + 3 replicas formed with redis-cli
  --cluster create; redis-cli from PATH) start their own servers each round, A = streamd
  and B = redis-server (from PATH), and run only when named; --a/--b are not used for
  them:
  --streamd PATH    the streamd binary (default: streamd next to this executable);
                    a redis-server path here makes A Redis too (Redis-vs-Redis check)
  --sync-entries N  entries loaded before each repl/fullsync-* (default 5000000)

  tiering/* (tiered streams) start that streamd twice each round, A with
  --stream-tiering yes and a hot budget of 16 MiB x scale (at least 2 MiB), B with
  --stream-tiering no, on free loopback ports with temporary directories; no
  redis-server needed. Each also prints a row of its own figures per side:
  tiering/xadd            XADD throughput writing 8 budgets of ~200-byte entries
  tiering/tail-consumers  4 consumers XREADGROUP > at the tail while a producer
                          writes over 8 cold budgets: disk reads (goal 0)
  tiering/cold-scan       full XRANGE scan (COUNT 1000 pages) of 8 budgets with
                          the segments dropped from the page cache: MB/s against
                          the disk's sequential read; a probe client's XADD +
                          XREADGROUP p99 during scans over its p99 without
  tiering/restart         SAVE, SIGKILL, start again with 10 budgets cold: restart
                          time and VmRSS against the same data untiered

  syncrepl/* (synchronous replication, issue 40) start that streamd twice each round,
  a primary with one replica; A with min-sync-replicas 1 (every reply waits for the
  replica's ACK), B asynchronous:
  syncrepl/xadd-c50-p16   XADD throughput, 50 clients x 16 per write
  syncrepl/xadd-c1-p1     one client, one XADD at a time: latency, with the
                          primary's PING round trip as a figure
";

/// Command-line options.
#[derive(Debug, PartialEq)]
struct Args {
    a: String,
    b: Option<String>,
    rounds: usize,
    scale: f64,
    only: Vec<String>,
    timeout: Duration,
    json: bool,
    list: bool,
    /// `--svg`: where to write the charts of the ratios.
    svg: Option<PathBuf>,
    /// `--streamd`: the binary `repl/*` starts for A.
    streamd: Option<PathBuf>,
    /// Entries loaded before a `repl/fullsync-*`.
    sync_entries: u64,
}

fn parse_args(argv: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut args = Args {
        a: String::new(),
        b: None,
        rounds: 5,
        scale: DEFAULT_SCALE,
        only: Vec::new(),
        timeout: Duration::from_secs(30),
        json: false,
        list: false,
        svg: None,
        streamd: None,
        sync_entries: DEFAULT_SYNC_ENTRIES,
    };
    let mut it = argv.into_iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--a" => args.a = value()?,
            "--b" => args.b = Some(value()?),
            "--rounds" => {
                args.rounds = value()?
                    .parse()
                    .ok()
                    .filter(|&r| r > 0)
                    .ok_or("--rounds needs a positive integer")?
            }
            "--scale" => {
                args.scale = value()?
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0)
                    .ok_or("--scale needs a positive number")?
            }
            "--timeout" => {
                let secs: f64 = value()?
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0)
                    .ok_or("--timeout needs a positive number of seconds")?;
                args.timeout = Duration::from_secs_f64(secs);
            }
            "--only" => args.only.extend(
                value()?
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(String::from),
            ),
            "--streamd" => args.streamd = Some(PathBuf::from(value()?)),
            "--svg" => args.svg = Some(PathBuf::from(value()?)),
            "--sync-entries" => {
                args.sync_entries = value()?
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or("--sync-entries needs a positive integer")?
            }
            "--json" => args.json = true,
            "--list" => args.list = true,
            "-h" | "--help" => return Err(USAGE.to_string()),
            w if !w.starts_with('-') => args.only.push(w.to_string()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    // Only workloads that start their own servers may go without --a.
    let own_only =
        !args.only.is_empty() && args.only.iter().all(|o| workloads::starts_own_servers(o));
    if args.a.is_empty() && !args.list && !own_only {
        return Err(format!("--a is required\n{USAGE}"));
    }
    Ok(args)
}

/// Whether `addr` is on this machine (so the server's `/proc` entry is ours to read).
fn is_local(addr: &str) -> bool {
    addr.starts_with("127.") || addr.starts_with("localhost:") || addr.starts_with("[::1]:")
}

fn main() {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    // A family that starts its own servers runs only when named (--list shows it anyway).
    let chosen: Vec<Workload> = workloads::all()
        .into_iter()
        .filter(|w| workloads::selected(&w.name, &args.only))
        .filter(|w| args.list || !args.only.is_empty() || !workloads::starts_own_servers(&w.name))
        .collect();
    if args.list {
        let names: String = chosen.iter().map(|w| format!("{}\n", w.name)).collect();
        emit(&names);
        return;
    }
    if chosen.is_empty() {
        eprintln!("no workload matches {:?}; see --list", args.only);
        std::process::exit(2);
    }
    let own = chosen
        .iter()
        .any(|w| workloads::starts_own_servers(&w.name));
    let against_redis = chosen.iter().any(|w| workloads::against_redis(&w.name));
    let programs = Programs {
        streamd: own.then(|| exit_on_error(Program::streamd(args.streamd.clone()))),
        redis: against_redis.then(|| exit_on_error(Program::redis())),
    };
    if let (Some(a), Some(b)) = (&programs.streamd, &programs.redis)
        && a.name == b.name
    {
        eprintln!(
            "note: repl/* and cluster/* A is {} too (--streamd {}): a sanity run, ratios \
             should be near 1",
            a.name,
            a.path.display()
        );
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
    let failed = local.block_on(&runtime, run_all(&args, &chosen, &programs));
    if failed > 0 {
        eprintln!("streamd-bench: {failed} workload side(s) failed");
        std::process::exit(1);
    }
}

/// The value, or the error on stderr and exit status 2.
fn exit_on_error<T>(r: Result<T, String>) -> T {
    r.unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    })
}

/// The programs the workloads that start their own servers run, found once.
struct Programs {
    /// streamd (`--streamd`), when such a workload is chosen.
    streamd: Option<Program>,
    /// `redis-server`, when a `repl/*` or `cluster/*` workload is chosen.
    redis: Option<Program>,
}

/// A server side: its name (`A`, `B`), its label (address, or the program it starts),
/// and the program a workload that starts its own servers runs for it.
type Sides = Vec<(&'static str, String, Option<Program>)>;

impl Programs {
    /// The sides of workload `w`, which starts its own servers: A = streamd, B =
    /// `redis-server` (`repl/*`, `cluster/*`) or the same streamd (`tiering/*`, which
    /// turns tiering on for A only).
    fn sides(&self, w: &Workload) -> Sides {
        let label = |p: &Program, what: &str| format!("{}{what} {}", p.name, p.path.display());
        let Some(a) = &self.streamd else {
            return Vec::new();
        };
        if workloads::against_redis(&w.name) {
            let Some(b) = &self.redis else {
                return Vec::new();
            };
            vec![
                ("A", label(a, ""), Some(a.clone())),
                ("B", label(b, ""), Some(b.clone())),
            ]
        } else {
            let (on, off) = workloads::side_labels(&w.name);
            vec![
                ("A", label(a, on), Some(a.clone())),
                ("B", label(a, off), Some(a.clone())),
            ]
        }
    }
}

/// Writes `text` to stdout and flushes it; a closed stdout (`| head`) ends the program
/// quietly instead of panicking like `print!`.
fn emit(text: &str) {
    let mut out = std::io::stdout().lock();
    if out
        .write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .is_err()
    {
        std::process::exit(0);
    }
}

/// Runs every chosen workload; returns how many server sides failed. `programs` are the
/// servers that workloads starting their own run.
async fn run_all(args: &Args, chosen: &[Workload], programs: &Programs) -> usize {
    let given: Sides = std::iter::once(("A", args.a.clone(), None))
        .chain(args.b.clone().map(|b| ("B", b, None)))
        .collect();
    let epoch = Instant::now();
    let started = Instant::now();
    if !args.json {
        emit(&format!("{}\n", report::header()));
    }
    let mut failed = 0;
    let mut points = Vec::new();
    for (k, w) in chosen.iter().enumerate() {
        let own_sides;
        let servers = if workloads::starts_own_servers(&w.name) {
            own_sides = programs.sides(w);
            &own_sides
        } else {
            &given
        };
        let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); servers.len()];
        let mut errors: Vec<Option<String>> = vec![None; servers.len()];
        for round in 0..args.rounds {
            // A B, then B A, ...
            let mut order: Vec<usize> = (0..servers.len()).collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for s in order {
                if errors[s].is_some() {
                    continue;
                }
                let (name, addr, spawn) = &servers[s];
                eprint!(
                    "[{}/{} {:>4.0}s] {} round {}/{} {name} ... ",
                    k + 1,
                    chosen.len(),
                    started.elapsed().as_secs_f64(),
                    w.name,
                    round + 1,
                    args.rounds
                );
                let _ = std::io::stderr().flush();
                let ctx = Ctx {
                    addr: addr.to_string(),
                    local: spawn.is_some() || is_local(addr),
                    scale: args.scale,
                    timeout: args.timeout,
                    epoch,
                    spawn: spawn.clone(),
                    sync_entries: args.sync_entries,
                    side: name,
                };
                // Every wait inside is bounded; this bounds the round as a whole too.
                let limit = args.timeout * 20;
                match tokio::time::timeout(limit, workloads::run(w, &ctx)).await {
                    // A timed operation (a reshard, a failover) counts no commands:
                    // its time is what to show.
                    Ok(Ok(sample)) if sample.ops == 0 => {
                        eprintln!(
                            "{:.2} s, {} entries/s",
                            sample.secs,
                            report::rate(sample.entries as f64 / sample.secs)
                        );
                        samples[s].push(sample);
                    }
                    Ok(Ok(sample)) => {
                        eprintln!(
                            "{} ops/s, {} entries/s, CPU {} µs/op",
                            report::rate(sample.ops as f64 / sample.secs),
                            report::rate(sample.entries as f64 / sample.secs),
                            sample.cpu_us.map_or("?".into(), |c| format!(
                                "{:.2}",
                                c / sample.ops.max(1) as f64
                            ))
                        );
                        samples[s].push(sample);
                    }
                    Ok(Err(e)) => {
                        eprintln!("FAILED: {e}");
                        errors[s] = Some(e.to_string());
                    }
                    Err(_) => {
                        eprintln!("FAILED: round took over {limit:?}");
                        errors[s] = Some(format!("round took over {limit:?}"));
                    }
                }
            }
        }
        let sides: Vec<Side> = servers
            .iter()
            .enumerate()
            .map(|(s, (name, addr, _))| Side {
                name,
                addr: addr.to_string(),
                result: match errors[s].take() {
                    Some(e) => Err(e),
                    None => Ok(Summary::of(&samples[s])),
                },
            })
            .collect();
        failed += sides.iter().filter(|s| s.result.is_err()).count();
        points.extend(plot::Point::of(w, &sides));
        if args.json {
            emit(&report::json(w, &sides));
        } else {
            emit(&report::rows(w, &sides));
        }
    }
    eprintln!("done in {:.0}s", started.elapsed().as_secs_f64());
    if let Some(path) = &args.svg {
        let mut names = Vec::new();
        for side in ["A", "B"] {
            names.push(format!(
                "{side} = {}",
                server_named(&given, programs, chosen, side, args.timeout).await
            ));
        }
        let title = format!(
            "A/B per workload ({}; {} rounds, scale {})",
            names.join(", "),
            args.rounds,
            args.scale
        );
        match plot::write_svg(path, &title, &points) {
            Ok(()) => eprintln!("charts written to {}", path.display()),
            Err(e) => {
                eprintln!("--svg: {e}");
                failed += 1;
            }
        }
    }
    failed
}

/// How the charts' title names server `side`: what its `INFO server` says it is
/// (`streamd 0.1.0`, `Redis 7.0.15`; its address when it does not answer), or the
/// program the workloads that start their own servers ran (`streamd (tiering off)`); all
/// of them when several kinds ran.
async fn server_named(
    given: &[(&'static str, String, Option<Program>)],
    programs: &Programs,
    chosen: &[Workload],
    side: &str,
    timeout: Duration,
) -> String {
    let others = chosen
        .iter()
        .any(|w| !workloads::starts_own_servers(&w.name));
    let mut out = Vec::new();
    if let Some((_, addr, _)) = given.iter().find(|(n, _, _)| *n == side).filter(|_| others) {
        out.push(
            identify(addr, timeout)
                .await
                .unwrap_or_else(|| addr.clone()),
        );
    }
    for w in chosen
        .iter()
        .filter(|w| workloads::starts_own_servers(&w.name))
    {
        for (n, _, p) in programs.sides(w) {
            let Some(p) = p.filter(|_| n == side) else {
                continue;
            };
            let (on, off) = workloads::side_labels(&w.name);
            let name = match (workloads::against_redis(&w.name), side) {
                (true, _) => p.name,
                (false, "A") => format!("{}{on}", p.name),
                (false, _) => format!("{}{off}", p.name),
            };
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    if out.is_empty() {
        "-".into()
    } else {
        out.join(" / ")
    }
}

/// `streamd <streamd_version>` or `Redis <redis_version>`, from the server's `INFO server`.
async fn identify(addr: &str, timeout: Duration) -> Option<String> {
    let mut conn = client::Conn::connect(addr, timeout).await.ok()?;
    let info = conn.ok(&["INFO", "server"]).await.ok()?;
    match client::info_field(&info, "streamd_version") {
        Some(v) => Some(format!("streamd {v}")),
        None => client::info_field(&info, "redis_version").map(|v| format!("Redis {v}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Args, String> {
        parse_args(s.split_whitespace().map(String::from))
    }

    #[test]
    fn arguments() {
        let a = parse("--a 127.0.0.1:1 --b 127.0.0.1:2 --rounds 3 --scale 0.5 --only xadd,pel/xack mem --json")
            .expect("valid");
        assert_eq!(a.a, "127.0.0.1:1");
        assert_eq!(a.b.as_deref(), Some("127.0.0.1:2"));
        assert_eq!((a.rounds, a.scale, a.json), (3, 0.5, true));
        assert_eq!(a.only, vec!["xadd", "pel/xack", "mem"]);
        assert!(parse("--b 127.0.0.1:2").is_err());
        assert!(parse("--a x --rounds 0").is_err());
        assert!(parse("--a x --scale -1").is_err());
        assert!(parse("--a x --rounds").is_err());
        assert!(parse("--a x --bogus").is_err());
        assert!(parse("--list").is_ok_and(|a| a.list));
        assert_eq!(
            parse("--a x --svg /tmp/r.svg").map(|a| a.svg),
            Ok(Some(PathBuf::from("/tmp/r.svg")))
        );
        assert!(parse("--a x --svg").is_err());
        // The replication family starts its own servers: no --a needed for it alone.
        let r = parse("--only repl/wait1-r1 repl --streamd /x/streamd --sync-entries 1000")
            .expect("valid");
        assert_eq!(
            (r.streamd, r.sync_entries),
            (Some(PathBuf::from("/x/streamd")), 1000)
        );
        assert!(parse("--only repl,xadd").is_err());
        assert!(parse("--only cluster/failover,repl").is_ok());
        assert!(parse("--only cluster,xadd").is_err());
        assert!(parse("--only repl --sync-entries 0").is_err());
        // So does the tiering family (streamd against itself).
        assert!(parse("--only tiering --rounds 3").is_ok_and(|a| a.only == ["tiering"]));
        assert!(parse("tiering/restart --streamd /x/streamd").is_ok());
        assert!(parse("--only tiering,xadd").is_err());
        assert!(is_local("127.0.0.1:6379") && !is_local("10.0.0.1:6379"));
    }
}
