//! HyperLogLog throughput and memory: `hll/<variant>`, one client pipelined 32 deep
//! (`mem-*`: 1,000 deep), the same commands on both servers.
//!
//! ```text
//! variant         what is timed                                     memory column
//! pfadd-sparse    PFADD hll:<k> e<i> over 10,000 keys (sparse)      per key
//! pfadd-dense     PFADD big e<i> .. (10 elements) into one HLL      per element
//! pfcount-one     PFADD d0 new<i>, PFCOUNT d0 alternately (stale)   -
//! pfcount-union   PFCOUNT d0 d1 d2 (three dense HLLs)               -
//! pfmerge         PFMERGE dst d0 d1 d2                              -
//! ```
//!
//! Elements are `e<i>`; the dense HLLs of `pfcount-union`/`pfmerge` hold 100,000
//! elements each (times `--scale`, at least 20,000 so they are dense).

use std::io;

use super::{Ctx, numbered};
use crate::driver::{Stop, closed_loop};
use crate::measure::Sample;

/// Which HyperLogLog command a variant measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HllOp {
    /// PFADD into many small (sparse) HLLs.
    AddSparse,
    /// PFADD into one dense HLL.
    AddDense,
    /// PFADD + PFCOUNT of one HLL (the estimate recomputed each time).
    CountOne,
    /// PFCOUNT of the union of three dense HLLs.
    CountUnion,
    /// PFMERGE of three dense HLLs.
    Merge,
}

/// Every variant with its name.
pub const VARIANTS: &[(&str, HllOp)] = &[
    ("pfadd-sparse", HllOp::AddSparse),
    ("pfadd-dense", HllOp::AddDense),
    ("pfcount-one", HllOp::CountOne),
    ("pfcount-union", HllOp::CountUnion),
    ("pfmerge", HllOp::Merge),
];

/// Loads `n` elements into `key`, 100 per PFADD, pipelined.
async fn fill(conn: &mut crate::client::Conn, key: &str, from: u64, n: u64) -> io::Result<()> {
    let mut i = from;
    while i < from + n {
        let mut batches = 0;
        while batches < 100 && i < from + n {
            let end = (i + 100).min(from + n);
            let mut args = vec!["PFADD".to_string(), key.to_string()];
            args.extend((i..end).map(|j| format!("e{j}")));
            conn.push(&args);
            batches += 1;
            i = end;
        }
        conn.flush().await?;
        conn.skip(batches).await?;
    }
    Ok(())
}

/// Runs one round of `op`.
pub async fn run(ctx: &Ctx, op: HllOp) -> io::Result<Sample> {
    let mut ctl = ctx.fresh().await?;
    match op {
        HllOp::AddSparse | HllOp::AddDense => {
            let (keys, per_cmd) = match op {
                HllOp::AddSparse => (10_000u64, 1u64),
                _ => (1, 10),
            };
            let n = ctx.n(1_000_000, 10_000);
            let mut conn = ctx.conn().await?;
            let phase = ctx.begin(&mut ctl).await?;
            let (mut pending, mut ops, mut i) = (0, 0u64, 0u64);
            // PFADD, the key and the elements, written into buffers kept across
            // commands (the tool's time per batch adds to the round's).
            let mut args: Vec<Vec<u8>> = vec![b"PFADD".to_vec(); 2 + per_cmd as usize];
            while i < n {
                let elements = (i + per_cmd).min(n) - i;
                numbered(&mut args[1], b"hll:", i % keys, b"");
                for (arg, j) in args[2..].iter_mut().zip(i..i + elements) {
                    numbered(arg, b"e", j, b"");
                }
                conn.push(&args[..2 + elements as usize]);
                i += per_cmd;
                pending += 1;
                ops += 1;
                if pending == 1000 {
                    conn.flush().await?;
                    conn.skip(pending).await?;
                    pending = 0;
                }
            }
            conn.flush().await?;
            conn.skip(pending).await?;
            let m = phase.end(&mut ctl).await?;
            // Memory per key for the sparse variant, per element for the dense one.
            let units = if op == HllOp::AddSparse { keys } else { n };
            Ok(Sample::new(m, ops, units, Vec::new()))
        }
        HllOp::CountOne | HllOp::CountUnion | HllOp::Merge => {
            let per = ctx.n(100_000, 20_000);
            for (k, key) in ["d0", "d1", "d2"].iter().enumerate() {
                fill(&mut ctl, key, k as u64 * per / 2, per).await?;
            }
            let conns = ctx.conns(1).await?;
            let phase = ctx.begin(&mut ctl).await?;
            let done = closed_loop(conns, 32, Stop::For(ctx.timed()), move |_, seq, _, conn| {
                match op {
                    // Every other command adds an element, so each PFCOUNT recomputes.
                    HllOp::CountOne if seq % 2 == 0 => {
                        conn.push(&["PFADD", "d0", &format!("new{seq}")]);
                    }
                    HllOp::CountOne => conn.push(&["PFCOUNT", "d0"]),
                    HllOp::CountUnion => conn.push(&["PFCOUNT", "d0", "d1", "d2"]),
                    _ => conn.push(&["PFMERGE", "dst", "d0", "d1", "d2"]),
                }
            })
            .await?;
            let m = phase.end(&mut ctl).await?;
            Ok(Sample::new(m, done.ops, done.ops, done.lat_ns))
        }
    }
}
