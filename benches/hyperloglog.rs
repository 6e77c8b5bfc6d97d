//! HyperLogLog benchmarks: the register work of PFADD, PFCOUNT and PFMERGE, without the
//! server around it.
//!
//! - `count_dense`: the estimate of a dense HLL (100,000 elements): the histogram of its
//!   16,384 six-bit registers and Ertl's estimator. PFCOUNT pays this each time the
//!   cached cardinality is stale (after any PFADD that changed a register).
//! - `count_sparse`: the same for a sparse HLL of 200 elements (a walk of its opcodes).
//! - `add_sparse`: fifty elements, one by one, into a sparse HLL of 50 elements (the
//!   opcode walk and the split of a run), the shape of `hll/pfadd-sparse`.
//! - `add_sparse_many_keys`: one element into each of 1,000 different sparse HLLs (20 to 120
//!   elements), so no two walks in a row are alike.
//! - `add_dense`: ten elements into a dense HLL (hash, then a six-bit register each).
//! - `count_registers`: the estimate from 16,384 plain one-byte registers (the PFCOUNT of
//!   several keys, after their merge).
//! - `merge_dense`: the registers of a dense HLL raised into a 16,384-byte maximum
//!   (PFMERGE and the PFCOUNT of several keys, per key).
//!
//! Run: `cargo bench --bench hyperloglog`.

use divan::{Bencher, black_box};
use streamd::types::hyperloglog::{self, HLL_REGISTERS, HLL_SPARSE_MAX_BYTES as SPARSE_MAX_BYTES};

fn main() {
    divan::main();
}

/// An HLL holding `e0 .. e<n-1>`.
fn hll_of(n: usize) -> Vec<u8> {
    let mut s = hyperloglog::new_hll();
    for i in 0..n {
        hyperloglog::add(&mut s, format!("e{i}").as_bytes(), SPARSE_MAX_BYTES)
            .expect("a new HLL is valid");
    }
    s
}

#[divan::bench]
fn count_dense(bencher: Bencher) {
    let s = hll_of(100_000);
    assert!(hyperloglog::is_dense(&s));
    bencher.bench(|| hyperloglog::count(black_box(&s)));
}

#[divan::bench]
fn count_sparse(bencher: Bencher) {
    let s = hll_of(200);
    assert!(!hyperloglog::is_dense(&s));
    bencher.bench(|| hyperloglog::count(black_box(&s)));
}

#[divan::bench]
fn add_sparse(bencher: Bencher) {
    let base = hll_of(50);
    let elements: Vec<String> = (0..50).map(|i| format!("new{i}")).collect();
    bencher
        .counter(divan::counter::ItemsCount::new(elements.len()))
        .with_inputs(|| base.clone())
        .bench_local_refs(|s| {
            for e in &elements {
                let _ = black_box(hyperloglog::add(s, e.as_bytes(), SPARSE_MAX_BYTES));
            }
        });
}

#[divan::bench]
fn add_sparse_many_keys(bencher: Bencher) {
    // 1,000 different sparse HLLs of 20 to 120 elements, one new element into each in
    // turn: the walks differ from one add to the next, as over `hll/pfadd-sparse`'s 10,000
    // keys (`add_sparse` repeats one HLL's walks, which a branch predictor can learn).
    let bases: Vec<Vec<u8>> = (0..1000usize)
        .map(|k| {
            let mut s = hyperloglog::new_hll();
            for i in 0..20 + k % 101 {
                hyperloglog::add(&mut s, format!("k{k}e{i}").as_bytes(), SPARSE_MAX_BYTES)
                    .expect("a new HLL is valid");
            }
            s
        })
        .collect();
    let elements: Vec<String> = (0..bases.len()).map(|i| format!("new{i}")).collect();
    bencher
        .counter(divan::counter::ItemsCount::new(elements.len()))
        .with_inputs(|| bases.clone())
        .bench_local_refs(|hlls| {
            for (s, e) in hlls.iter_mut().zip(&elements) {
                let _ = black_box(hyperloglog::add(s, e.as_bytes(), SPARSE_MAX_BYTES));
            }
        });
}

#[divan::bench]
fn add_dense(bencher: Bencher) {
    let mut s = hll_of(100_000);
    let elements: Vec<String> = (0..10).map(|i| format!("dense{i}")).collect();
    bencher.bench_local(|| {
        for e in &elements {
            let _ = black_box(hyperloglog::add(&mut s, e.as_bytes(), SPARSE_MAX_BYTES));
        }
    });
}

#[divan::bench]
fn merge_dense(bencher: Bencher) {
    let s = hll_of(100_000);
    let mut max = [0u8; HLL_REGISTERS];
    bencher.bench_local(|| hyperloglog::merge_into(black_box(&mut max), black_box(&s)));
}

#[divan::bench]
fn count_registers(bencher: Bencher) {
    let mut max = [0u8; HLL_REGISTERS];
    hyperloglog::merge_into(&mut max, &hll_of(100_000)).expect("a valid HLL");
    bencher.bench(|| hyperloglog::count_registers(black_box(&max)));
}
