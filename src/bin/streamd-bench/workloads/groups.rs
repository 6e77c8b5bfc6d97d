//! Consumer-group workloads: `pel/*` and `xautoclaim-cycle`.

use std::io;
use std::rc::Rc;
use std::time::Instant;

use super::{Ctx, Ids, PelOp, drain_group, setup_group};
use crate::client::{Value, push_entries};
use crate::driver::{Stop, closed_loop};
use crate::measure::{Rng, Sample, ns_since};

/// A 100k-entry PEL (one consumer `c` read everything), then the operation `op`:
/// XACK or XCLAIM of every pending ID once, one per command, in random order, pipelined
/// 32 deep; XPENDING `<random id> + 10` from 50 connections for a timed phase; or
/// `XAUTOCLAIM s g c2 0 <cursor> COUNT 100` until the cursor comes back to 0-0.
pub async fn pel(ctx: &Ctx, op: PelOp) -> io::Result<Sample> {
    let n = ctx.n(100_000, 1000);
    let mut ctl = setup_group(ctx, n, Ids::Seq).await?;
    drain_group(&mut ctl, b"s", b"c", 1000, false).await?;
    match op {
        PelOp::Xack | PelOp::Xclaim => {
            let mut ids: Vec<String> = (1..=n).map(|j| format!("{j}-0")).collect();
            Rng::new(0xACC).shuffle(&mut ids);
            let ids = Rc::new(ids);
            let conns = ctx.conns(1).await?;
            let phase = ctx.begin(&mut ctl).await?;
            let done = closed_loop(conns, 32, Stop::Count(n), move |_, seq, _, conn| {
                let id = ids[seq as usize].as_str();
                if op == PelOp::Xack {
                    conn.push(&["XACK", "s", "g", id]);
                } else {
                    conn.push(&["XCLAIM", "s", "g", "c2", "0", id]);
                }
            })
            .await?;
            let m = phase.end(&mut ctl).await?;
            Ok(Sample::new(m, done.ops, done.ops, done.lat_ns))
        }
        PelOp::Xpending => {
            let conns = ctx.conns(50).await?;
            let phase = ctx.begin(&mut ctl).await?;
            let done = closed_loop(conns, 1, Stop::For(ctx.timed()), move |_, _, rng, conn| {
                let start = format!("{}-0", 1 + rng.below(n - 10));
                conn.push(&["XPENDING", "s", "g", &start, "+", "10"]);
            })
            .await?;
            let m = phase.end(&mut ctl).await?;
            Ok(Sample::new(m, done.ops, done.ops * 10, done.lat_ns))
        }
        PelOp::Xautoclaim => {
            let mut conn = ctx.conn().await?;
            let phase = ctx.begin(&mut ctl).await?;
            let (mut ops, mut lat) = (0u64, Vec::new());
            let mut cursor = b"0-0".to_vec();
            // Bounded: n / 100 + 1 calls cover the PEL.
            for _ in 0..=n / 100 + 1 {
                let sent = Instant::now();
                let reply = conn
                    .value(&[
                        &b"XAUTOCLAIM"[..],
                        b"s",
                        b"g",
                        b"c2",
                        b"0",
                        &cursor,
                        b"COUNT",
                        b"100",
                    ])
                    .await?;
                lat.push(ns_since(sent));
                ops += 1;
                cursor = reply
                    .items()
                    .first()
                    .map(|c| c.bytes().to_vec())
                    .unwrap_or_default();
                if cursor == b"0-0" || cursor.is_empty() {
                    break;
                }
            }
            let m = phase.end(&mut ctl).await?;
            if cursor != b"0-0" {
                return Err(io::Error::other("XAUTOCLAIM did not finish its scan"));
            }
            Ok(Sample::new(m, ops, n, lat))
        }
    }
}

/// The read / crash / reclaim cycle: consumer `c1` reads 100 new entries, consumer `c2`
/// takes them over with `XAUTOCLAIM s g c2 0 0-0 COUNT 100` and acknowledges them with
/// one XACK, until the 200k-entry stream (server-generated IDs) is consumed. Three
/// commands per cycle; the latency column is per command.
pub async fn autoclaim_cycle(ctx: &Ctx) -> io::Result<Sample> {
    let n = ctx.n(200_000, 1000);
    let mut ctl = setup_group(ctx, n, Ids::Auto).await?;
    let mut conn = ctx.conn().await?;
    let phase = ctx.begin(&mut ctl).await?;
    let (mut ops, mut entries, mut lat) = (0u64, 0u64, Vec::new());
    for _ in 0..=n / 100 + 1 {
        let sent = Instant::now();
        let read = conn
            .value(&[
                "XREADGROUP",
                "GROUP",
                "g",
                "c1",
                "COUNT",
                "100",
                "STREAMS",
                "s",
                ">",
            ])
            .await?;
        lat.push(ns_since(sent));
        ops += 1;
        if matches!(read, Value::Null) || read.items().is_empty() {
            break;
        }
        let sent = Instant::now();
        let claimed = conn
            .value(&["XAUTOCLAIM", "s", "g", "c2", "0", "0-0", "COUNT", "100"])
            .await?;
        lat.push(ns_since(sent));
        let mut got = Vec::new();
        if let Some(list) = claimed.items().get(1) {
            push_entries(list, &mut got);
        }
        if got.is_empty() {
            return Err(io::Error::other("XAUTOCLAIM claimed nothing"));
        }
        let mut ack: Vec<&[u8]> = vec![b"XACK", b"s", b"g"];
        ack.extend(got.iter().map(|e| e.id));
        let sent = Instant::now();
        conn.ok(&ack).await?;
        lat.push(ns_since(sent));
        ops += 2;
        entries += got.len() as u64;
    }
    let m = phase.end(&mut ctl).await?;
    if entries != n {
        return Err(io::Error::other(format!("cycled {entries} of {n} entries")));
    }
    Ok(Sample::new(m, ops, entries, lat))
}
