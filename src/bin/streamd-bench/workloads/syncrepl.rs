//! Synchronous replication (`syncrepl/*`, issue 40, docs/replication.md "Synchronous
//! replicas"): the same streamd twice, a primary with one replica each round, side A
//! with `min-sync-replicas 1` on both (every reply waits for the replica's ACK), side B
//! asynchronous, so the A/B ratios are "sync / async".
//!
//! ```text
//!   round:  primary  streamd --port P --save '' --appendonly no
//!           replica  streamd --port R --replicaof 127.0.0.1 P [--min-sync-replicas 1]
//!           A: CONFIG SET min-sync-replicas 1 on the primary (a primary started with it
//!              would come back fenced), wait until INFO says the replica is in the set
//!           B: wait until the replica is online
//!           measure │ XLEN on the replica = entries written (every reply was an ID)
//!
//!   xadd-c50-p16:  50 clients ──XADD s * f v ×16 per write──► primary ══► replica
//!   xadd-c1-p1:    1 client, one XADD at a time: latency per XADD
//!                  figure: PING round trip p50 on the same primary (never held): the
//!                  goal is A's p50 ≤ B's p50 + one loopback round trip
//! ```

use std::ffi::OsString;
use std::io;
use std::time::{Duration, Instant};

use super::Ctx;
use super::replication::{Server, free_port};
use crate::client::{Conn, Value, info_field};
use crate::driver::{Stop, closed_loop};
use crate::measure::{Figure, Phase, Sample, percentile};

/// XADDs of the pipelined variant at scale 1.
const LOAD_FULL: u64 = 1_000_000;
/// XADDs of the one-at-a-time variant at scale 1.
const SINGLE_FULL: u64 = 50_000;
/// PINGs timed for the round-trip figure.
const PINGS: usize = 2_000;
/// Time between two polls while waiting for the replica.
const POLL_EVERY: Duration = Duration::from_millis(10);

/// What a `syncrepl/*` variant runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Load {
    /// Connections.
    pub clients: usize,
    /// XADDs per write.
    pub pipeline: usize,
}

/// Every `syncrepl/*` variant: (name after `syncrepl/`, load, what the latency times).
pub fn variants() -> Vec<(&'static str, Load, &'static str)> {
    vec![
        (
            "xadd-c50-p16",
            Load {
                clients: 50,
                pipeline: 16,
            },
            "batch",
        ),
        (
            "xadd-c1-p1",
            Load {
                clients: 1,
                pipeline: 1,
            },
            "xadd",
        ),
    ]
}

/// The arguments every server of a round gets.
fn base_args(port: u16, dir: &std::path::Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["--port", &port.to_string(), "--bind", "127.0.0.1"]
        .map(OsString::from)
        .to_vec();
    args.extend([OsString::from("--dir"), dir.as_os_str().to_owned()]);
    args.extend(["--save", "", "--appendonly", "no"].map(OsString::from));
    args
}

/// Runs one round of `load` (side A synchronous, side B asynchronous).
pub async fn run(ctx: &Ctx, load: Load) -> io::Result<Sample> {
    let program = ctx
        .spawn
        .as_ref()
        .ok_or_else(|| io::Error::other("syncrepl workloads need a server program to start"))?;
    let sync = ctx.side == "A";
    let primary = Server::launch(program, "primary", free_port, |port, dir| {
        Ok(base_args(port, dir))
    })
    .await?;
    let pport = primary.port.to_string();
    let replica = Server::launch(program, "replica", free_port, |port, dir| {
        let mut args = base_args(port, dir);
        args.extend(["--replicaof", "127.0.0.1", &pport].map(OsString::from));
        if sync {
            args.extend(["--min-sync-replicas", "1"].map(OsString::from));
        }
        Ok(args)
    })
    .await?;
    let mut ctl = Conn::connect(&primary.addr(), ctx.timeout).await?;
    if sync {
        ctl.ok(&["CONFIG", "SET", "min-sync-replicas", "1"]).await?;
    }
    wait_replica(ctx, &mut ctl, sync).await?;

    let n = match load.clients {
        1 => (SINGLE_FULL as f64 * ctx.scale).max(100.0) as u64,
        _ => (LOAD_FULL as f64 * ctx.scale).max(1000.0) as u64,
    };
    let conns = Conn::connect_many(&primary.addr(), load.clients, ctx.timeout).await?;
    let phase = Phase::begin(&mut ctl, true).await?;
    let done = closed_loop(conns, load.pipeline, Stop::Count(n), |_, _, _, conn| {
        conn.push(&["XADD", "s", "*", "f", "v"]);
    })
    .await?;
    let m = phase.end(&mut ctl).await?;
    // Every reply must have been an ID: count what the replica holds.
    let mut on_replica = Conn::connect(&replica.addr(), ctx.timeout).await?;
    let deadline = Instant::now() + ctx.timeout;
    loop {
        let len = on_replica.value(&["XLEN", "s"]).await?;
        if len == Value::Int(n as i64) {
            break;
        }
        if Instant::now() > deadline {
            return Err(io::Error::other(format!(
                "the replica holds {len:?} entries, not the {n} written: some XADD failed"
            )));
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
    let mut pings = Vec::with_capacity(PINGS);
    for _ in 0..PINGS {
        let t = Instant::now();
        ctl.ok(&["PING"]).await?;
        pings.push(t.elapsed().as_nanos() as u64);
    }
    pings.sort_unstable();
    let mut s = Sample::new(m, done.ops, done.ops, done.lat_ns);
    s.figures = vec![Figure::new(
        "PING round trip p50",
        "µs",
        percentile(&pings, 0.5) as f64 / 1000.0,
    )];
    if sync {
        let info = ctl.ok(&["INFO", "replication"]).await?;
        let held = info_field(&info, "sync_held_total")
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        s.figures.push(Figure::new("batches held", "", held));
    }
    drop((primary, replica));
    Ok(s)
}

/// Waits (bounded by `ctx.timeout`) until the replica is in the sync set (A) or online (B).
async fn wait_replica(ctx: &Ctx, ctl: &mut Conn, sync: bool) -> io::Result<()> {
    let deadline = Instant::now() + ctx.timeout;
    loop {
        let info = ctl.ok(&["INFO", "replication"]).await?;
        let ready = if sync {
            info_field(&info, "sync_replicas") == Some("1")
        } else {
            info_field(&info, "slave0").is_some_and(|s| s.contains("state=online"))
        };
        if ready {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(io::Error::other(format!(
                "the replica did not become {} within {:?}",
                if sync { "a sync set member" } else { "online" },
                ctx.timeout
            )));
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}
