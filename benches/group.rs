//! Consumer-group PEL benchmarks (`src/stream/group.rs`).
//!
//! - `deliver_ack_in_order`: a group holding a steady 10 000-entry PEL over 10 consumers;
//!   each iteration delivers 1000 new IDs (as XREADGROUP `>` does) and acks the 1000
//!   oldest. Divided by 1000, this is the cost of one deliver + one ack.
//! - `ack_random`: XACK of random pending IDs out of a 100 000-entry PEL (refilled
//!   outside the timing).
//! - `claimable_oldest_100`: the XREADGROUP CLAIM / XAUTOCLAIM scan: the 100 oldest idle
//!   entries of a 100 000-entry PEL, found through the delivery-time list.
//! - `build_pel`: 100 000 deliveries into an empty group, over 10 consumers. The
//!   allocation profile's `max alloc` is what the group keeps (requested sizes).
//!
//! Before the benchmarks, `main` prints the bytes per pending entry for 100 000 and
//! 1 000 000 pending entries, from `ConsumerGroup::pel_heap_bytes` (slab pages plus the
//! group's and consumers' PEL indexes).
//!
//! Run: `cargo bench --bench group`.

use divan::counter::ItemsCount;
use divan::{AllocProfiler, Bencher, black_box};
use std::cell::RefCell;
use streamd::stream::StreamId;
use streamd::stream::consumer::ConsumerId;
use streamd::stream::group::Groups;

#[global_allocator]
static ALLOC: AllocProfiler = AllocProfiler::system();

fn main() {
    for n in [100_000, 1_000_000] {
        let (mut groups, consumers) = setup();
        fill(&mut groups, &consumers, 0, n);
        let g = groups.get(b"g").expect("group");
        let bytes = g.pel_heap_bytes();
        println!(
            "memory: {n} pending entries over {CONSUMERS} consumers: {bytes} heap bytes in the \
             slab and PEL indexes = {:.1} bytes per pending entry",
            bytes as f64 / n as f64
        );
    }
    divan::main();
}

const CONSUMERS: usize = 10;

/// A stream's groups with one group `g` and `CONSUMERS` consumers.
fn setup() -> (Groups, Vec<ConsumerId>) {
    let mut groups = Groups::default();
    groups.create(b"g", StreamId::MIN, None);
    let mut g = groups.get_mut(b"g").expect("just created");
    let consumers = (0..CONSUMERS)
        .map(|i| {
            g.get_or_create_consumer(format!("consumer-{i}").as_bytes(), 0)
                .0
        })
        .collect();
    (groups, consumers)
}

/// Entry IDs shaped like real ones: a millisecond time with a few entries per ms.
fn id(n: u64) -> StreamId {
    StreamId::new(1_700_000_000_000 + n / 4, n % 4)
}

fn fill(groups: &mut Groups, consumers: &[ConsumerId], from: u64, to: u64) {
    let mut g = groups.get_mut(b"g").expect("group");
    for n in from..to {
        g.deliver(consumers[n as usize % consumers.len()], id(n), n);
    }
}

#[divan::bench]
fn deliver_ack_in_order(bencher: Bencher) {
    const STEADY: u64 = 10_000;
    const BATCH: u64 = 1000;
    let (mut groups, consumers) = setup();
    fill(&mut groups, &consumers, 0, STEADY);
    let mut next = STEADY;
    bencher.counter(ItemsCount::new(BATCH)).bench_local(|| {
        let mut g = groups.get_mut(b"g").expect("group");
        for n in next..next + BATCH {
            g.deliver(consumers[n as usize % CONSUMERS], id(n), n);
        }
        for n in next - STEADY..next - STEADY + BATCH {
            black_box(g.ack(id(n)));
        }
        next += BATCH;
    });
}

/// xorshift64*, deterministic.
fn random_ids(count: usize, below: u64, mut seed: u64) -> Vec<u64> {
    (0..count)
        .map(|_| {
            seed ^= seed >> 12;
            seed ^= seed << 25;
            seed ^= seed >> 27;
            seed.wrapping_mul(0x2545_f491_4f6c_dd1d) % below
        })
        .collect()
}

#[divan::bench]
fn ack_random(bencher: Bencher) {
    const PEL: u64 = 100_000;
    const BATCH: usize = 1000;
    let (mut groups, consumers) = setup();
    fill(&mut groups, &consumers, 0, PEL);
    // Both closures need the groups; neither holds it across the other.
    let groups = RefCell::new(groups);
    let mut round = 0u64;
    bencher
        .counter(ItemsCount::new(BATCH))
        .with_inputs(|| {
            round += 1;
            let picks = random_ids(BATCH, PEL, 0x9e37_79b9_7f4a_7c15 ^ round);
            // Put back what the previous round acked.
            fill_ids(&mut groups.borrow_mut(), &consumers, &picks);
            picks
        })
        .bench_local_values(|picks| {
            let mut groups = groups.borrow_mut();
            let mut g = groups.get_mut(b"g").expect("group");
            for &n in &picks {
                black_box(g.ack(id(n)));
            }
        });
}

fn fill_ids(groups: &mut Groups, consumers: &[ConsumerId], ns: &[u64]) {
    let mut g = groups.get_mut(b"g").expect("group");
    for &n in ns {
        if !g.is_pending(id(n)) {
            g.deliver(consumers[n as usize % consumers.len()], id(n), n);
        }
    }
}

#[divan::bench]
fn claimable_oldest_100(bencher: Bencher) {
    const PEL: u64 = 100_000;
    let (mut groups, consumers) = setup();
    fill(&mut groups, &consumers, 0, PEL);
    let g = groups.get(b"g").expect("group");
    bencher.counter(ItemsCount::new(100usize)).bench_local(|| {
        let ids: Vec<StreamId> = g
            .claimable(black_box(PEL), 1000)
            .take(100)
            .map(|e| e.id)
            .collect();
        ids
    });
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn build_pel(bencher: Bencher) {
    const PEL: u64 = 100_000;
    bencher.counter(ItemsCount::new(PEL)).bench_local(|| {
        let (mut groups, consumers) = setup();
        fill(&mut groups, &consumers, 0, PEL);
        groups
    });
}
