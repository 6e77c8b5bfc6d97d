//! `Rax` against `BTreeMap<[u8; 16], u64>` on the stream index's workload: 100k
//! 16-byte big-endian (ms, seq) keys, inserted in order (as XADD appends) and in random
//! order (as a PEL fills from several consumers), then looked up with seeks.
//!
//! Run with `cargo bench --bench rax`. Each sample times all 100k operations; divan's
//! item counter turns that into a time per key.

use divan::Bencher;
use divan::counter::ItemsCount;
use std::collections::BTreeMap;
use std::ops::Bound;
use streamd::stream::rax::{Rax, SeekOp};

/// Number of keys in every benchmark.
const N: usize = 100_000;

fn main() {
    divan::main();
}

/// A 16-byte stream-ID key: `ms` then `seq`, both big-endian.
fn id_key(ms: u64, seq: u64) -> [u8; 16] {
    let mut k = [0; 16];
    k[..8].copy_from_slice(&ms.to_be_bytes());
    k[8..].copy_from_slice(&seq.to_be_bytes());
    k
}

/// A small deterministic generator (xorshift64), so that every run times the same keys.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// `N` increasing IDs as a busy stream produces them: a millisecond clock that moves
/// on by 0–2 ms between entries, `seq` counting within a millisecond.
fn sequential_keys() -> Vec<[u8; 16]> {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let (mut ms, mut seq) = (1_700_000_000_000u64, 0u64);
    (0..N)
        .map(|_| {
            match rng.next() % 3 {
                0 => seq += 1,
                step => (ms, seq) = (ms + step, 0),
            }
            id_key(ms, seq)
        })
        .collect()
}

/// The same keys, shuffled.
fn shuffled_keys() -> Vec<[u8; 16]> {
    let mut keys = sequential_keys();
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    for i in (1..keys.len()).rev() {
        let j = (rng.next() % (i as u64 + 1)) as usize;
        keys.swap(i, j);
    }
    keys
}

/// Seek targets: every key, half of them moved one `seq` on so that they fall between
/// keys (or past the last), in random order.
fn seek_targets() -> Vec<[u8; 16]> {
    let mut targets = shuffled_keys();
    for (i, k) in targets.iter_mut().enumerate() {
        if i % 2 == 1 {
            k[15] = k[15].wrapping_add(1);
        }
    }
    targets
}

fn rax_of(keys: &[[u8; 16]]) -> Rax<u64> {
    let mut rax = Rax::new();
    for (i, k) in keys.iter().enumerate() {
        rax.insert(k, i as u64);
    }
    rax
}

/// One `insert` per key, as a caller adding keys one at a time does (`collect` would
/// sort and bulk-load instead, which no caller can do).
fn btree_of(keys: &[[u8; 16]]) -> BTreeMap<[u8; 16], u64> {
    let mut map = BTreeMap::new();
    for (i, k) in keys.iter().enumerate() {
        map.insert(*k, i as u64);
    }
    map
}

#[divan::bench_group(name = "insert_100k_sequential")]
mod insert_sequential {
    use super::*;

    #[divan::bench]
    fn rax(bencher: Bencher) {
        let keys = sequential_keys();
        bencher
            .counter(ItemsCount::new(N))
            .bench(|| rax_of(divan::black_box(&keys)));
    }

    #[divan::bench]
    fn btreemap(bencher: Bencher) {
        let keys = sequential_keys();
        bencher
            .counter(ItemsCount::new(N))
            .bench(|| btree_of(divan::black_box(&keys)));
    }
}

#[divan::bench_group(name = "insert_100k_shuffled")]
mod insert_shuffled {
    use super::*;

    #[divan::bench]
    fn rax(bencher: Bencher) {
        let keys = shuffled_keys();
        bencher
            .counter(ItemsCount::new(N))
            .bench(|| rax_of(divan::black_box(&keys)));
    }

    #[divan::bench]
    fn btreemap(bencher: Bencher) {
        let keys = shuffled_keys();
        bencher
            .counter(ItemsCount::new(N))
            .bench(|| btree_of(divan::black_box(&keys)));
    }
}

#[divan::bench_group(name = "seek_ge_100k")]
mod seek_ge {
    use super::*;

    #[divan::bench]
    fn rax(bencher: Bencher) {
        let rax = rax_of(&sequential_keys());
        let targets = seek_targets();
        bencher.counter(ItemsCount::new(N)).bench(|| {
            let mut cursor = rax.cursor();
            let mut sum = 0u64;
            for t in divan::black_box(&targets) {
                if cursor.seek(SeekOp::Ge, t) {
                    sum += cursor.next().map_or(0, |(_, v)| *v);
                }
            }
            sum
        });
    }

    #[divan::bench]
    fn btreemap(bencher: Bencher) {
        let map = btree_of(&sequential_keys());
        let targets = seek_targets();
        bencher.counter(ItemsCount::new(N)).bench(|| {
            let mut sum = 0u64;
            for t in divan::black_box(&targets) {
                sum += map
                    .range::<[u8; 16], _>((Bound::Included(t), Bound::Unbounded))
                    .next()
                    .map_or(0, |(_, v)| *v);
            }
            sum
        });
    }
}

#[divan::bench_group(name = "get_100k")]
mod get {
    use super::*;

    #[divan::bench]
    fn rax(bencher: Bencher) {
        let keys = shuffled_keys();
        let rax = rax_of(&keys);
        bencher.counter(ItemsCount::new(N)).bench(|| {
            divan::black_box(&keys)
                .iter()
                .map(|k| rax.get(k).copied().unwrap_or(0))
                .sum::<u64>()
        });
    }

    #[divan::bench]
    fn btreemap(bencher: Bencher) {
        let keys = shuffled_keys();
        let map = btree_of(&keys);
        bencher.counter(ItemsCount::new(N)).bench(|| {
            divan::black_box(&keys)
                .iter()
                .map(|k| map.get(k).copied().unwrap_or(0))
                .sum::<u64>()
        });
    }
}
