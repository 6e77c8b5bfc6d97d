//! Memory per entry and per stream, counted the way Redis's `used_memory` counts: every
//! heap allocation at its allocator size class (`streamd::alloc::CountingAlloc`), plus
//! the `Stream` struct itself, which lives inline in the keyspace's table.
//!
//! Data: 1M entries `bidder <0..999> amount <0..99999>`, three per millisecond, default
//! node limits (the same data as `benches/stream.rs`). Run with
//! `cargo bench --bench memory`; it prints the figures.

use bytes::Bytes;
use std::hint::black_box;
use streamd::alloc::{CountingAlloc, allocated};
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
         ({} nodes; memory_usage() estimate {:.2} bytes/entry; target <= 14, Redis 7 ~16.7)",
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
         (the keyspace adds the slot's link and key and a bucket: tests/memory.rs; \
         target <= 200 in all, Redis 7 ~4,300)",
        heap + inline as f64
    );
    black_box(&streams);
}
