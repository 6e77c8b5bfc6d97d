//! Memory per one-entry stream, counted as Redis counts `used_memory` (every allocation
//! at its jemalloc size class, `streamd::alloc::CountingAlloc`): the keyspace's table
//! slot with its key and stream header, the bucket array's share, and the stream's one
//! node. Issue 9's target is at most 200 bytes per stream (Redis 7: about 4,300).
//!
//! The keys and entries are the acceptance check's (`auction:<i>`, `bidder 1 amount
//! 100`) and the load tool's (`ms:<i>`, `bidder <0..1e6> amount <1..1e5>`), created the
//! way XADD creates them. The counter is process-wide, so this file holds one test.

use bytes::Bytes;
use streamd::alloc::{CountingAlloc, allocated};
use streamd::core::keyspace::Db;
use streamd::stream::{NodeLimits, StreamId};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// Creates `n` one-entry streams in a fresh database (keys from `key`, elements from
/// `entry`) and returns the heap bytes per stream, once any rehash has finished.
fn bytes_per_stream(
    n: usize,
    key: impl Fn(usize) -> String,
    entry: impl Fn(usize) -> [Bytes; 4],
) -> f64 {
    let lim = NodeLimits::default();
    // Built before counting: the elements are the client's, not the server's.
    let inputs: Vec<(String, [Bytes; 4])> = (0..n).map(|i| (key(i), entry(i))).collect();
    let mut db = Db::default();
    let before = allocated();
    for (i, (k, e)) in inputs.iter().enumerate() {
        let id = StreamId::new(1_700_000_000_000 + i as u64, 0);
        db.get_or_create(k.as_bytes()).append(id, e, &lim);
    }
    while db.rehash(1000) {}
    let per = (allocated() - before) as f64 / n as f64;
    assert_eq!(db.len(), n);
    drop(db);
    per
}

#[test]
fn a_one_entry_stream_costs_at_most_200_bytes() {
    let n = 30_000;
    let check = bytes_per_stream(
        n,
        |i| format!("auction:{i}"),
        |_| {
            [
                Bytes::from_static(b"bidder"),
                Bytes::from_static(b"1"),
                Bytes::from_static(b"amount"),
                Bytes::from_static(b"100"),
            ]
        },
    );
    // The load tool's many-streams/mem-100k: 100k streams, random integer values.
    let n = 100_000;
    let tool = bytes_per_stream(
        n,
        |i| format!("ms:{i}"),
        |i| {
            let r = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11;
            [
                Bytes::from_static(b"bidder"),
                Bytes::from((r % 1_000_000).to_string()),
                Bytes::from_static(b"amount"),
                Bytes::from((1 + r % 100_000).to_string()),
            ]
        },
    );
    println!(
        "bytes per one-entry stream: {check:.1} (auction:<i>, 30k), {tool:.1} (ms:<i>, 100k); \
         Stream header {} bytes",
        std::mem::size_of::<streamd::stream::Stream>()
    );
    assert!(check <= 200.0, "{check:.1} bytes per stream (auction:<i>)");
    assert!(tool <= 200.0, "{tool:.1} bytes per stream (ms:<i>)");
}
