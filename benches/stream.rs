//! Stream engine throughput: appending `bidder <int> amount <int>` entries (plain, and with
//! the IDMP bookkeeping XADD adds: duplicate lookup, record, eviction past IDMP-MAXSIZE, and
//! the IDMPAUTO hash), and reading ranges of 10 and 100 entries (forwards and backwards,
//! every element decoded) from a stream of 1M such entries; and creating one-entry streams in
//! a database (XADD to new keys). Run with
//! `cargo bench --bench stream`.

use bytes::Bytes;
use divan::counter::ItemsCount;
use divan::{Bencher, black_box};
use std::sync::OnceLock;
use streamd::stream::idmp::{Check, IdmpKey};
use streamd::stream::listpack::Value;
use streamd::stream::{NodeLimits, Stream, StreamId};

fn main() {
    divan::main();
}

/// Entries in the stream the range benchmarks read.
const BIG: u64 = 1_000_000;
/// Entries appended per append sample.
const APPEND_BATCH: u64 = 10_000;

/// The i-th ID: three entries per millisecond, as a busy producer with `XADD *` makes.
fn entry_id(i: u64) -> StreamId {
    StreamId::new(1_700_000_000_000 + i / 3, i % 3)
}

/// The i-th entry: `bidder <0..999> amount <0..99999>`.
fn entry(i: u64) -> [Bytes; 4] {
    [
        Bytes::from_static(b"bidder"),
        Bytes::from((i * 7919 % 1000).to_string()),
        Bytes::from_static(b"amount"),
        Bytes::from((i * 104_729 % 100_000).to_string()),
    ]
}

fn big_stream() -> &'static Stream {
    static S: OnceLock<Stream> = OnceLock::new();
    S.get_or_init(|| {
        let lim = NodeLimits::default();
        let mut s = Stream::new();
        for i in 0..BIG {
            s.append(entry_id(i), &entry(i), &lim);
        }
        s
    })
}

/// Appends 10k entries to a fresh stream (node rollover and sealing included).
#[divan::bench]
fn append(bencher: Bencher) {
    let entries: Vec<_> = (0..APPEND_BATCH).map(entry).collect();
    let lim = NodeLimits::default();
    bencher
        .counter(ItemsCount::new(APPEND_BATCH))
        .with_inputs(Stream::new)
        .bench_local_values(|mut s| {
            for (i, e) in entries.iter().enumerate() {
                s.append(entry_id(i as u64), e, &lim);
            }
            s
        });
}

/// Creates 10k one-entry streams in a database, as XADD to new keys does (`ms:<i>`
/// keys: the keyspace slot, the stream, its one node); dropping them is not timed.
#[divan::bench]
fn new_streams(bencher: Bencher) {
    let keys: Vec<String> = (0..APPEND_BATCH).map(|i| format!("ms:{i}")).collect();
    let entries: Vec<_> = (0..APPEND_BATCH).map(entry).collect();
    let lim = NodeLimits::default();
    bencher
        .counter(ItemsCount::new(APPEND_BATCH))
        .with_inputs(streamd::core::keyspace::Db::default)
        .bench_local_values(|mut db| {
            for (i, (k, e)) in keys.iter().zip(&entries).enumerate() {
                db.stream_or_create(k.as_bytes()).expect("a stream").append(
                    entry_id(i as u64),
                    e,
                    &lim,
                );
            }
            db
        });
}

/// Appends 10k entries as `XADD ... IDMP producer-1 <iid>` does: pid and iid hashed once,
/// the iid looked up and recorded in one visit (not a duplicate; the oldest evicted past
/// the default IDMP-MAXSIZE of 100; the first one creates the state), the entry
/// appended. Compare with `append`.
#[divan::bench]
fn append_idmp(bencher: Bencher) {
    let entries: Vec<_> = (0..APPEND_BATCH).map(entry).collect();
    let iids: Vec<String> = (0..APPEND_BATCH)
        .map(|i| (100_000_000_000 + i * 7919).to_string())
        .collect();
    let lim = NodeLimits::default();
    bencher
        .counter(ItemsCount::new(APPEND_BATCH))
        .with_inputs(Stream::new)
        .bench_local_values(|mut s| {
            for (i, e) in entries.iter().enumerate() {
                let key = IdmpKey::new(b"producer-1", iids[i].as_bytes());
                let id = entry_id(i as u64);
                let check = s
                    .idmp_mut((100, 100))
                    .check_or_record(&key, Some(id.ms), Some(id));
                assert!(matches!(check, Check::Recorded { .. }));
                s.append(id, e, &lim);
            }
            s
        });
}

/// The IDMPAUTO iid of one `bidder <int> amount <int>` entry.
#[divan::bench]
fn idmpauto_iid(bencher: Bencher) {
    let e = entry(7);
    bencher.bench_local(|| streamd::stream::idmp::auto_iid(black_box(&e)));
}

/// Decodes every element, as a reply writer would.
fn consume<'a>(it: impl Iterator<Item = streamd::stream::Entry<'a>>) -> usize {
    let mut acc = 0usize;
    for e in it {
        acc = acc.wrapping_add(e.id.seq as usize);
        for v in e.elements() {
            acc = acc.wrapping_add(match v {
                Value::Str(s) => s.len(),
                Value::Int(i) => i as usize,
            });
        }
    }
    acc
}

/// XRANGE <start> + COUNT n from pseudo-random starts.
#[divan::bench(args = [10, 100])]
fn range(bencher: Bencher, n: usize) {
    let s = big_stream();
    let mut k = 0u64;
    bencher.counter(ItemsCount::new(n)).bench_local(|| {
        k = (k + 7_919_993) % (BIG - n as u64);
        black_box(consume(s.range(entry_id(k), StreamId::MAX, false).take(n)))
    });
}

/// XREVRANGE <end> - COUNT n from pseudo-random ends.
#[divan::bench(args = [10, 100])]
fn range_rev(bencher: Bencher, n: usize) {
    let s = big_stream();
    let mut k = 0u64;
    bencher.counter(ItemsCount::new(n)).bench_local(|| {
        k = (k + 7_919_993) % (BIG - n as u64);
        black_box(consume(
            s.range(StreamId::MIN, entry_id(k + n as u64), true).take(n),
        ))
    });
}

/// The stream the reply benchmark reads: `n <i> p <200 letters>`, as `tiering/cold-scan`
/// and the `xrange` workloads of streamd-bench write (about 215 node bytes per entry).
fn payload_stream() -> &'static Stream {
    static S: OnceLock<Stream> = OnceLock::new();
    S.get_or_init(|| {
        let lim = NodeLimits::default();
        let mut s = Stream::new();
        let payload = Bytes::from(vec![b'x'; 200]);
        for i in 0..100_000u64 {
            let e = [
                Bytes::from_static(b"n"),
                Bytes::from(i.to_string()),
                Bytes::from_static(b"p"),
                payload.clone(),
            ];
            s.append(StreamId::new(i + 1, 0), &e, &lim);
        }
        s
    })
}

/// The whole reply of `XRANGE s <start> + COUNT n` (RESP2 bytes into a writer that, like
/// a connection's, keeps its capacity between replies).
#[divan::bench(args = [10, 1000])]
fn xrange_reply(bencher: Bencher, n: usize) {
    use streamd::commands::xrange::write_range;
    use streamd::resp::writer::{Protocol, RespWriter};
    let s = payload_stream();
    let mut out = RespWriter::new(Protocol::Resp2);
    let mut k = 0u64;
    bencher.counter(ItemsCount::new(n)).bench_local(|| {
        k = (k + 7_919) % (100_000 - n as u64);
        out.buf.clear();
        let start = StreamId::new(k + 1, 0);
        black_box(write_range(&mut out, s, start, StreamId::MAX, false, n))
    });
}

/// The read pool's encoding of a whole cold node's entries for range replies
/// (`render_node`), over the nodes of the `payload_stream` (about 19 entries each).
#[divan::bench]
fn render_node(bencher: Bencher) {
    use streamd::commands::xrange::render_node;
    let s = payload_stream();
    let mut nodes = Vec::new();
    s.for_each_node(|master, lp| nodes.push((master, lp.clone())));
    let entries: usize = nodes
        .iter()
        .map(|(_, lp)| lp.live() as usize)
        .sum::<usize>()
        / nodes.len();
    let mut k = 0usize;
    bencher.counter(ItemsCount::new(entries)).bench_local(|| {
        k = (k + 7_919) % nodes.len();
        let (master, lp) = &nodes[k];
        black_box(render_node(lp, *master))
    });
}
