//! Memory per entry and per stream, counted the way Redis's `used_memory` counts: every
//! heap allocation at its allocator size class (`streamd::alloc::CountingAlloc`), plus
//! the `Stream` struct itself, which lives inline in the keyspace's table.
//!
//! Data: 1M entries `bidder <0..999> amount <0..99999>`, three per millisecond, default
//! node limits (the same data as `benches/stream.rs`); one-entry streams created in a
//! keyspace as XADD to new keys creates them, with the acceptance check's keys and entries
//! (`auction:<i>`, `bidder 1 amount 100`) and the load tool's (`ms:<i>`, `bidder
//! <0..1e6> amount <1..1e5>`); a stream of 300k bids with server-made IDs, about 900 per
//! millisecond as a pipelined load gets them (streamd-bench `mem/entries`). Issue 9's
//! targets: at most 200 bytes per one-entry stream and 13 per entry. Run with
//! `cargo bench --bench memory`; it prints the figures (measured, not asserted).

use bytes::Bytes;
use std::hint::black_box;
use streamd::alloc::{CountingAlloc, allocated};
use streamd::core::keyspace::Db;
use streamd::stream::{NodeLimits, Stream, StreamId};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

const N: u64 = 1_000_000;
/// One-entry streams created to average the per-stream cost.
const STREAMS: usize = 10_000;

fn entry_id(i: u64) -> StreamId {
    StreamId::new(1_700_000_000_000 + i / 3, i % 3)
}

fn entry(i: u64) -> [Bytes; 4] {
    [
        Bytes::from_static(b"bidder"),
        Bytes::from((i * 7919 % 1000).to_string()),
        Bytes::from_static(b"amount"),
        Bytes::from((i * 104_729 % 100_000).to_string()),
    ]
}

fn main() {
    let lim = NodeLimits::default();
    let inline = std::mem::size_of::<Stream>();

    let before = allocated();
    let mut s = Stream::new();
    for i in 0..N {
        s.append(entry_id(i), &entry(i), &lim);
    }
    let heap = allocated() - before;
    let per_entry = (heap + inline) as f64 / N as f64;
    println!(
        "1M entries: {heap} heap bytes + {inline} inline = {per_entry:.2} bytes/entry \
         ({} nodes; memory_usage() estimate {:.2} bytes/entry; target <= 13, Redis 7 ~16.7)",
        s.radix_tree_keys(),
        s.memory_usage() as f64 / N as f64
    );
    black_box(&s);
    drop(s);

    let mut streams: Vec<Stream> = Vec::with_capacity(STREAMS);
    let before = allocated();
    for k in 0..STREAMS {
        let mut s = Stream::new();
        s.append(entry_id(k as u64), &entry(k as u64), &lim);
        streams.push(s);
    }
    let heap = (allocated() - before) as f64 / STREAMS as f64;
    println!(
        "one-entry stream: {heap:.1} heap bytes + {inline} inline = {:.1} bytes \
         (the keyspace adds the slot's link and key and a bucket: below)",
        heap + inline as f64
    );
    black_box(&streams);
    drop(streams);

    let check = bytes_per_stream(
        30_000,
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
    let tool = bytes_per_stream(100_000, |i| format!("ms:{i}"), random_bid);
    println!(
        "one-entry stream in the keyspace, all included: {check:.1} bytes (30k auction:<i>), \
         {tool:.1} bytes (100k ms:<i>); target <= 200, Redis 7 ~4,330"
    );
    let per_entry = bytes_per_entry(300_000);
    println!("300k bids at ~900 per ms: {per_entry:.2} bytes/entry; target <= 13");
}

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
        db.stream_or_create(k.as_bytes())
            .expect("a stream")
            .append(id, e, &lim);
    }
    while db.rehash(1000) {}
    let per = (allocated() - before) as f64 / n as f64;
    assert_eq!(db.len(), n);
    drop(db);
    per
}

/// The load tool's bid, `bidder <0..1e6> amount <1..1e5>`, from a hash of `i`.
fn random_bid(i: usize) -> [Bytes; 4] {
    let r = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11;
    [
        Bytes::from_static(b"bidder"),
        Bytes::from((r % 1_000_000).to_string()),
        Bytes::from_static(b"amount"),
        Bytes::from((1 + (r >> 20) % 100_000).to_string()),
    ]
}

/// Heap bytes per entry of one stream of `n` bids with server-made IDs, about 900 per
/// millisecond as a pipelined load gets them (streamd-bench `mem/entries`).
fn bytes_per_entry(n: usize) -> f64 {
    let lim = NodeLimits::default();
    let inputs: Vec<[Bytes; 4]> = (0..n).map(random_bid).collect();
    let mut db = Db::default();
    let before = allocated();
    let s = db.stream_or_create(b"m").expect("a stream");
    for (i, e) in inputs.iter().enumerate() {
        let id = StreamId::new(1_700_000_000_000 + (i / 900) as u64, (i % 900) as u64);
        s.append(id, e, &lim);
    }
    (allocated() - before) as f64 / n as f64
}
