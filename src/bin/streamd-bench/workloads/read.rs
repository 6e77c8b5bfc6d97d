//! Read workloads: `xrange`, `xreadgroup-drain` and `many-streams/xreadgroup-1000`.

use std::io;
use std::time::Instant;

use super::{Ctx, Ids, drain_group, load, setup_group};
use crate::driver::{Stop, closed_loop};
use crate::measure::{Sample, ns_since};

/// XRANGE `<random id> + COUNT count` from 50 connections for a timed phase over a
/// 100k-entry stream (IDs `1-0..`, so every call returns exactly `count` entries).
pub async fn xrange(ctx: &Ctx, count: u64) -> io::Result<Sample> {
    let n = ctx.n(100_000, 1000);
    let mut ctl = ctx.fresh().await?;
    load(&mut ctl, b"s", n, Ids::Seq).await?;
    let conns = ctx.conns(50).await?;
    let count_text = count.to_string();
    let phase = ctx.begin(&mut ctl).await?;
    let done = closed_loop(conns, 1, Stop::For(ctx.timed()), move |_, _, rng, conn| {
        let start = format!("{}-0", 1 + rng.below(n - count + 1));
        conn.push(&["XRANGE", "s", &start, "+", "COUNT", &count_text]);
    })
    .await?;
    let m = phase.end(&mut ctl).await?;
    Ok(Sample::new(m, done.ops, done.ops * count, done.lat_ns))
}

/// One consumer drains a 1M-entry stream (server-generated IDs) with
/// `XREADGROUP ... COUNT 100 [NOACK]`; the memory column is then bytes per pending entry
/// (none with NOACK).
pub async fn drain(ctx: &Ctx, noack: bool) -> io::Result<Sample> {
    let n = ctx.n(1_000_000, 1000);
    let mut ctl = setup_group(ctx, n, Ids::Auto).await?;
    let mut conn = ctx.conn().await?;
    let phase = ctx.begin(&mut ctl).await?;
    let (ops, entries, lat) = drain_group(&mut conn, b"s", b"c", 100, noack).await?;
    let m = phase.end(&mut ctl).await?;
    if entries != n {
        return Err(io::Error::other(format!(
            "drained {entries} of {n} entries"
        )));
    }
    Ok(Sample::new(m, ops, entries, lat))
}

/// 1,000 streams of `k` entries, group `g` at 0 on each; one consumer calls
/// `XREADGROUP GROUP g c COUNT 1 STREAMS <1,000 keys> <1,000 × '>'>` until nothing is
/// left (each call delivers one entry per stream).
pub async fn many_streams_read(ctx: &Ctx) -> io::Result<Sample> {
    const STREAMS: u64 = 1000;
    let k = ctx.n(200, 5);
    let mut ctl = ctx.fresh().await?;
    let keys: Vec<String> = (0..STREAMS).map(|i| format!("ms:{i}")).collect();
    for key in &keys {
        load(&mut ctl, key.as_bytes(), k, Ids::Seq).await?;
    }
    for key in &keys {
        ctl.push(&["XGROUP", "CREATE", key, "g", "0"]);
    }
    ctl.flush().await?;
    ctl.skip(keys.len()).await?;
    let mut args: Vec<&str> = vec!["XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS"];
    args.extend(keys.iter().map(String::as_str));
    args.extend(std::iter::repeat_n(">", keys.len()));
    let mut conn = ctx.conn().await?;
    let phase = ctx.begin(&mut ctl).await?;
    let (mut ops, mut entries, mut lat) = (0u64, 0u64, Vec::new());
    // Bounded: k + 1 calls drain it; more means a server delivers less than it should.
    for _ in 0..=k {
        let sent = Instant::now();
        let reply = conn.value(&args).await?;
        lat.push(ns_since(sent));
        ops += 1;
        let got: usize = reply
            .items()
            .iter()
            .map(|s| s.items().get(1).map_or(0, |e| e.items().len()))
            .sum();
        if got == 0 {
            break;
        }
        entries += got as u64;
    }
    let m = phase.end(&mut ctl).await?;
    if entries != k * STREAMS {
        return Err(io::Error::other(format!(
            "delivered {entries} of {} entries",
            k * STREAMS
        )));
    }
    Ok(Sample::new(m, ops, entries, lat))
}
