//! Memory workloads: `mem/entries`, `mem/pending` and `many-streams/mem-100k`. The
//! figure is the `used_memory` delta over the measured phase divided by what it created;
//! the throughput columns are those of the load itself.

use std::io;

use super::{Ctx, Ids, drain_group, load, push_bid, setup_group};
use crate::measure::{Rng, Sample};

/// 1M bids (`bidder <int> amount <int>`, server-generated IDs) into one stream, pipelined
/// 1,000 deep: bytes per entry.
pub async fn entries(ctx: &Ctx) -> io::Result<Sample> {
    let n = ctx.n(1_000_000, 1000);
    let mut ctl = ctx.fresh().await?;
    let mut conn = ctx.conn().await?;
    let phase = ctx.begin(&mut ctl).await?;
    load(&mut conn, b"m", n, Ids::Auto).await?;
    let m = phase.end(&mut ctl).await?;
    Ok(Sample::new(m, n, n, Vec::new()))
}

/// A 100k-entry stream (server-generated IDs) and group, then one consumer reads it all
/// (COUNT 1,000): bytes per pending entry.
pub async fn pending(ctx: &Ctx) -> io::Result<Sample> {
    let n = ctx.n(100_000, 1000);
    let mut ctl = setup_group(ctx, n, Ids::Auto).await?;
    let mut conn = ctx.conn().await?;
    let phase = ctx.begin(&mut ctl).await?;
    let (ops, entries, lat) = drain_group(&mut conn, b"s", b"c", 1000, false).await?;
    let m = phase.end(&mut ctl).await?;
    if entries != n {
        return Err(io::Error::other(format!("read {entries} of {n} entries")));
    }
    Ok(Sample::new(m, ops, entries, lat))
}

/// 100k streams of one bid each (`XADD ms:<i> * ...`), pipelined 1,000 deep: bytes per
/// stream, key included.
pub async fn many_streams_memory(ctx: &Ctx) -> io::Result<Sample> {
    let n = ctx.n(100_000, 1000);
    let mut ctl = ctx.fresh().await?;
    let mut conn = ctx.conn().await?;
    let mut rng = Rng::new(0x57);
    let phase = ctx.begin(&mut ctl).await?;
    let mut next = 0;
    while next < n {
        let end = (next + 1000).min(n);
        for i in next..end {
            push_bid(&mut conn, format!("ms:{i}").as_bytes(), b"*", &mut rng);
        }
        conn.flush().await?;
        conn.skip((end - next) as usize).await?;
        next = end;
    }
    let m = phase.end(&mut ctl).await?;
    Ok(Sample::new(m, n, n, Vec::new()))
}
