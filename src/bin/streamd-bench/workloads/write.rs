//! Write workloads: `xadd` and `xadd-maxlen`.

use std::io;

use super::{Ctx, push_bid, push_bid_trimmed};
use crate::driver::{Stop, closed_loop};
use crate::measure::Sample;

/// XADD of one bid per command for a timed phase: `clients` connections, `pipeline`
/// commands per write, each to one of `keys` streams at random, optionally capped with
/// `MAXLEN ~ maxlen`. Latency: batch round trip.
pub async fn xadd(
    ctx: &Ctx,
    clients: usize,
    pipeline: usize,
    keys: u64,
    maxlen: Option<u64>,
) -> io::Result<Sample> {
    let mut ctl = ctx.fresh().await?;
    let conns = ctx.conns(clients).await?;
    let keys: Vec<Vec<u8>> = (0..keys).map(|k| format!("x:{k}").into_bytes()).collect();
    let cap = maxlen.map(|m| m.to_string().into_bytes());
    let phase = ctx.begin(&mut ctl).await?;
    let done = closed_loop(
        conns,
        pipeline,
        Stop::For(ctx.timed()),
        move |_, _, rng, conn| {
            let key = &keys[rng.below(keys.len() as u64) as usize];
            match &cap {
                None => push_bid(conn, key, b"*", rng),
                Some(cap) => push_bid_trimmed(conn, key, &[&b"MAXLEN"[..], b"~", cap], b"*", rng),
            }
        },
    )
    .await?;
    let m = phase.end(&mut ctl).await?;
    Ok(Sample::new(m, done.ops, done.ops, done.lat_ns))
}
