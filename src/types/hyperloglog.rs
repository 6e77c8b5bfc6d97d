//! HyperLogLog: a cardinality estimator kept inside an ordinary string value, byte for
//! byte as Redis 7.0 lays it out (`hyperloglog.c`), so that GET, SET, DUMP/RESTORE and
//! snapshots carry it between streamd and Redis unchanged.
//!
//! An HLL has 16384 registers (`HLL_P` = 14 bits of the element's hash pick the register;
//! the other 50 give the run of zeros, plus one, that the register keeps the maximum
//! of). The string starts with a 16-byte header:
//!
//! ```text
//!  byte   0    1    2    3    4     5    6    7    8 .................. 15
//!       +----+----+----+----+-----+----+----+----+------------------------+
//!       | 'H'| 'Y'| 'L'| 'L'|  E  |  unused (0)  | cached cardinality     |
//!       +----+----+----+----+-----+----+----+----+------------------------+
//!                             E: 0 dense, 1 sparse    u64 little endian; bit 7 of
//!                                                     byte 15 set = stale, recompute
//! ```
//!
//! then the registers in one of two encodings.
//!
//! **Dense** (exactly 16 + 12288 bytes): 6 bits per register, packed from the least
//! significant bit of each byte upwards, a register spilling into the next byte:
//!
//! ```text
//!  +--------+--------+--------+--------+--------+--------+----//
//!  |11000000|22221111|33333322|55444444|66665555|77777766|  ...     (bit 7 left)
//!  +--------+--------+--------+--------+--------+--------+----//
//!  register r: bits 6r .. 6r+5 of the little-endian bit string; 3 bytes hold 4 registers
//! ```
//!
//! **Sparse** (any length, at most `hll-sparse-max-bytes` as written by PFADD): a run-length
//! code of the registers in order, three opcodes:
//!
//! ```text
//!  ZERO   00xxxxxx            xxxxxx + 1 registers (1..=64) are 0
//!  XZERO  01xxxxxx yyyyyyyy   (xxxxxx << 8 | yyyyyyyy) + 1 registers (1..=16384) are 0
//!  VAL    1vvvvvxx            xx + 1 registers (1..=4) hold vvvvv + 1 (1..=32)
//! ```
//!
//! A new HLL is sparse, `XZERO:16384` (18 bytes in all). The runs must cover exactly
//! 16384 registers; a register that needs a value above 32, or a write that would make the
//! sparse form longer than `hll-sparse-max-bytes`, turns it dense for good.
//!
//! A user can SETRANGE anything into the string, so nothing here trusts the bytes: the
//! header is checked before use ([`is_hll`]), every walk of the sparse form is bounds
//! checked, and a sparse form whose runs do not add up to 16384 is [`Corrupted`]. Where
//! Redis reads one byte past the end (an XZERO cut in half, the dense form's last
//! register), it reads the sds terminator, a zero; [`at`] returns that zero, so corrupted
//! values are edited as Redis edits them. One case differs: when PFADD splits an XZERO
//! cut in half at the very end, Redis writes the new sequence's last byte over the
//! terminator, where its next read of that XZERO finds it; here the byte past the end
//! stays zero (a string has nothing past its length; Redis's own replicas and reloads see
//! a zero there too).
//!
//! The estimate is Redis 7.0's: the register histogram fed to Otmar Ertl's improved
//! estimator ("New cardinality estimation algorithms for HyperLogLog sketches",
//! arXiv:1702.01284, the `tau`/`sigma` series), computed in `f64` as Redis computes it,
//! so the counts are Redis's to the unit. The hash is MurmurHash64A with Redis's seed
//! `0xadc83b19`.

use std::sync::atomic::{AtomicBool, Ordering};

/// Register index bits (Redis's `HLL_P`).
pub const HLL_P: u32 = 14;
/// Hash bits that give the zero run (Redis's `HLL_Q`).
pub const HLL_Q: usize = 64 - HLL_P as usize;
/// Number of registers (Redis's `HLL_REGISTERS`).
pub const HLL_REGISTERS: usize = 1 << HLL_P;
/// Bits per dense register (Redis's `HLL_BITS`).
const HLL_BITS: usize = 6;
/// Largest register value (Redis's `HLL_REGISTER_MAX`).
const HLL_REGISTER_MAX: u8 = (1 << HLL_BITS) - 1;
/// Header bytes (Redis's `HLL_HDR_SIZE`).
pub const HLL_HDR_SIZE: usize = 16;
/// Length of a dense HLL string (Redis's `HLL_DENSE_SIZE`: 12304).
pub const HLL_DENSE_SIZE: usize = HLL_HDR_SIZE + (HLL_REGISTERS * HLL_BITS).div_ceil(8);
/// Encoding byte of a dense HLL (Redis's `HLL_DENSE`).
pub const HLL_DENSE: u8 = 0;
/// Encoding byte of a sparse HLL (Redis's `HLL_SPARSE`).
pub const HLL_SPARSE: u8 = 1;
/// Offset of the encoding byte in the header.
const ENCODING_AT: usize = 4;
/// Offset of the cached cardinality in the header.
const CARD_AT: usize = 8;
/// Largest value a sparse VAL opcode holds (Redis's `HLL_SPARSE_VAL_MAX_VALUE`).
const HLL_SPARSE_VAL_MAX_VALUE: u8 = 32;
/// Longest run of a VAL opcode (Redis's `HLL_SPARSE_VAL_MAX_LEN`).
const HLL_SPARSE_VAL_MAX_LEN: usize = 4;
/// Longest run of a ZERO opcode (Redis's `HLL_SPARSE_ZERO_MAX_LEN`).
const HLL_SPARSE_ZERO_MAX_LEN: usize = 64;
/// Longest run of an XZERO opcode (Redis's `HLL_SPARSE_XZERO_MAX_LEN`).
const HLL_SPARSE_XZERO_MAX_LEN: usize = 16384;
/// 0.5 / ln(2), the estimator's limit constant (Redis's `HLL_ALPHA_INF`).
const HLL_ALPHA_INF: f64 = 0.721_347_520_444_481_7;
/// The seed Redis hashes elements with.
pub const HLL_HASH_SEED: u32 = 0xadc8_3b19;
/// Default `hll-sparse-max-bytes`.
pub const HLL_SPARSE_MAX_BYTES: usize = 3000;

/// Whether the wide (12 bytes → 16 registers at a time) dense paths are used for
/// merging and histograms (`PFDEBUG SIMD ON|OFF`, Redis 8.0). Both paths give the same
/// registers; the switch exists so tests can compare them, as Redis's does for its AVX2
/// path. On by default.
static WIDE_PATHS: AtomicBool = AtomicBool::new(true);

/// Turns the wide dense paths on or off (`PFDEBUG SIMD`); returns whether they are on.
pub fn set_wide_paths(on: bool) -> bool {
    WIDE_PATHS.store(on, Ordering::Relaxed);
    on
}

fn wide_paths() -> bool {
    WIDE_PATHS.load(Ordering::Relaxed)
}

/// True when the dense registers `regs` are read twelve bytes at a time: the wide paths
/// are on and `regs` holds all 16,384 registers.
fn wide_dense(regs: &[u8]) -> bool {
    wide_paths() && regs.len() >= HLL_REGISTERS * HLL_BITS / 8
}

/// The value holds an HLL header but its registers are not a valid encoding (Redis:
/// `INVALIDOBJ Corrupted HLL object detected`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupted;

/// The byte at `i`, or the zero an sds string has after its end (its terminator).
#[inline]
fn at(buf: &[u8], i: usize) -> u8 {
    buf.get(i).copied().unwrap_or(0)
}

// --- the hash ------------------------------------------------------------------------

/// MurmurHash2, 64-bit version A, reading the key as little-endian words (Redis's
/// endian-neutral `MurmurHash64A`).
pub fn murmurhash64a(key: &[u8], seed: u32) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = u64::from(seed) ^ (key.len() as u64).wrapping_mul(M);
    let mut words = key.chunks_exact(8);
    for w in &mut words {
        let mut k = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        for (i, b) in tail.iter().enumerate() {
            h ^= u64::from(*b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register `ele` falls in and the length of its `000..1` pattern, 1..=51 (Redis's
/// `hllPatLen`).
pub fn pat_len(ele: &[u8]) -> (usize, u8) {
    let hash = murmurhash64a(ele, HLL_HASH_SEED);
    let index = (hash & (HLL_REGISTERS as u64 - 1)) as usize;
    // The bit above the 50 used stops the count at 51.
    let rest = (hash >> HLL_P) | (1u64 << HLL_Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

// --- header --------------------------------------------------------------------------

/// A new, empty HLL: sparse, `XZERO:16384`, cached cardinality 0 (Redis's
/// `createHLLObject`).
pub fn new_hll() -> Vec<u8> {
    let mut s = Vec::with_capacity(HLL_HDR_SIZE + 2);
    s.extend_from_slice(b"HYLL");
    s.extend_from_slice(&[HLL_SPARSE, 0, 0, 0]);
    s.extend_from_slice(&[0; 8]);
    let mut aux = HLL_REGISTERS;
    while aux > 0 {
        let run = aux.min(HLL_SPARSE_XZERO_MAX_LEN);
        s.extend_from_slice(&xzero(run));
        aux -= run;
    }
    s
}

/// True if `s` passes Redis's `isHLLObjectOrReply` checks: at least a header, the magic
/// `HYLL`, a known encoding, and the exact length if dense. (The sparse form is checked
/// as it is walked.)
pub fn is_hll(s: &[u8]) -> bool {
    s.len() >= HLL_HDR_SIZE
        && &s[..4] == b"HYLL"
        && s[ENCODING_AT] <= HLL_SPARSE
        && (s[ENCODING_AT] != HLL_DENSE || s.len() == HLL_DENSE_SIZE)
}

/// True if the (valid) HLL `s` is dense.
pub fn is_dense(s: &[u8]) -> bool {
    s.get(ENCODING_AT) == Some(&HLL_DENSE)
}

/// The cached cardinality, unless it is marked stale.
pub fn cached_card(s: &[u8]) -> Option<u64> {
    let card: [u8; 8] = s.get(CARD_AT..HLL_HDR_SIZE)?.try_into().ok()?;
    (card[7] & 0x80 == 0).then(|| u64::from_le_bytes(card))
}

/// Stores `card` as the cached cardinality (valid).
pub fn set_cached_card(s: &mut [u8], card: u64) {
    if let Some(dst) = s.get_mut(CARD_AT..HLL_HDR_SIZE) {
        dst.copy_from_slice(&card.to_le_bytes());
    }
}

/// Marks the cached cardinality stale (Redis's `HLL_INVALIDATE_CACHE`).
pub fn invalidate_cache(s: &mut [u8]) {
    if let Some(b) = s.get_mut(HLL_HDR_SIZE - 1) {
        *b |= 0x80;
    }
}

// --- dense ---------------------------------------------------------------------------

/// Register `i` of the dense registers `regs` (Redis's `HLL_DENSE_GET_REGISTER`).
#[inline]
fn dense_get(regs: &[u8], i: usize) -> u8 {
    let byte = i * HLL_BITS / 8;
    let fb = (i * HLL_BITS) & 7;
    let b0 = u16::from(at(regs, byte));
    let b1 = u16::from(at(regs, byte + 1));
    (((b0 >> fb) | (b1 << (8 - fb))) & u16::from(HLL_REGISTER_MAX)) as u8
}

/// Sets register `i` of `regs` to `val` (Redis's `HLL_DENSE_SET_REGISTER`).
#[inline]
fn dense_put(regs: &mut [u8], i: usize, val: u8) {
    let byte = i * HLL_BITS / 8;
    let fb = (i * HLL_BITS) & 7;
    let v = u16::from(val);
    let max = u16::from(HLL_REGISTER_MAX);
    if let Some(b) = regs.get_mut(byte) {
        *b = ((u16::from(*b) & !(max << fb)) | (v << fb)) as u8;
    }
    // The high part of the register, if it spills into the next byte (the last
    // register does not, and Redis's write there only touches the terminator).
    if let Some(b) = regs.get_mut(byte + 1) {
        *b = ((u16::from(*b) & !(max >> (8 - fb))) | (v >> (8 - fb))) as u8;
    }
}

/// Raises register `i` to `count` if it is lower; true if it changed (Redis's
/// `hllDenseSet`).
fn dense_set(regs: &mut [u8], i: usize, count: u8) -> bool {
    if count > dense_get(regs, i) {
        dense_put(regs, i, count);
        true
    } else {
        false
    }
}

/// The 16 registers packed in 12 bytes.
#[inline]
fn unpack12(r: &[u8]) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (g, chunk) in r.chunks_exact(3).enumerate() {
        let w = u32::from(chunk[0]) | u32::from(chunk[1]) << 8 | u32::from(chunk[2]) << 16;
        out[4 * g] = (w & 63) as u8;
        out[4 * g + 1] = ((w >> 6) & 63) as u8;
        out[4 * g + 2] = ((w >> 12) & 63) as u8;
        out[4 * g + 3] = ((w >> 18) & 63) as u8;
    }
    out
}

/// Adds the 16,384 dense registers `regs` to `histo` (`histo[v]` registers hold `v`): the
/// histogram behind PFCOUNT's estimate (Redis's `hllDenseRegHisto`).
///
/// Counting into one table makes each increment wait for the one before it whenever two
/// registers hold the same value, and most do (the values crowd around log2(n / 16384)).
/// The wide path counts register `k` into table `k % 4`, so four increments are in
/// flight, and sums the tables at the end: 10-13 us -> 6-8 us per PFCOUNT that
/// recomputes (`benches/hyperloglog.rs`, `count_dense`). `PFDEBUG SIMD OFF` counts
/// register by register instead, as the tests compare.
fn dense_histogram(regs: &[u8], histo: &mut [i64; 64]) {
    if wide_dense(regs) {
        wide_histogram(regs, histo);
    } else {
        for i in 0..HLL_REGISTERS {
            histo[usize::from(dense_get(regs, i))] += 1;
        }
    }
}

/// [`dense_histogram`]'s twelve-bytes-at-a-time path (`regs` holds at least 12,288 bytes).
fn wide_histogram(regs: &[u8], histo: &mut [i64; 64]) {
    let mut tables = FourTables::new();
    for chunk in regs.chunks_exact(12).take(HLL_REGISTERS / 16) {
        for q in unpack12(chunk).chunks_exact(4) {
            tables.count(q);
        }
    }
    tables.add_to(histo);
}

/// Four register histograms counted side by side (see [`dense_histogram`]).
struct FourTables([[u32; 64]; 4]);

impl FourTables {
    /// Four empty tables.
    fn new() -> FourTables {
        FourTables([[0; 64]; 4])
    }

    /// Counts four register values (each below 64), one into each table.
    #[inline]
    fn count(&mut self, q: &[u8]) {
        let [t0, t1, t2, t3] = &mut self.0;
        t0[usize::from(q[0] & 63)] += 1;
        t1[usize::from(q[1] & 63)] += 1;
        t2[usize::from(q[2] & 63)] += 1;
        t3[usize::from(q[3] & 63)] += 1;
    }

    /// Adds the four tables' counts to `histo`.
    fn add_to(&self, histo: &mut [i64; 64]) {
        let [t0, t1, t2, t3] = &self.0;
        for (v, h) in histo.iter_mut().enumerate() {
            *h += i64::from(t0[v] + t1[v] + t2[v] + t3[v]);
        }
    }
}

/// Calls `f(i, value)` for every register of the dense registers `regs`.
fn dense_for_each(regs: &[u8], mut f: impl FnMut(usize, u8)) {
    if wide_dense(regs) {
        for (c, chunk) in regs.chunks_exact(12).take(HLL_REGISTERS / 16).enumerate() {
            for (k, v) in unpack12(chunk).into_iter().enumerate() {
                f(16 * c + k, v);
            }
        }
    } else {
        for i in 0..HLL_REGISTERS {
            f(i, dense_get(regs, i));
        }
    }
}

// --- sparse --------------------------------------------------------------------------

#[inline]
fn is_zero(b: u8) -> bool {
    b & 0xc0 == 0
}
#[inline]
fn is_xzero(b: u8) -> bool {
    b & 0xc0 == 0x40
}
#[inline]
fn is_val(b: u8) -> bool {
    b & 0x80 != 0
}
#[inline]
fn zero_len(b: u8) -> usize {
    usize::from(b & 0x3f) + 1
}
#[inline]
fn xzero_len(b: u8, next: u8) -> usize {
    (usize::from(b & 0x3f) << 8 | usize::from(next)) + 1
}
#[inline]
fn val_value(b: u8) -> u8 {
    ((b >> 2) & 0x1f) + 1
}
#[inline]
fn val_len(b: u8) -> usize {
    usize::from(b & 0x3) + 1
}
/// A VAL opcode: `val` 1..=32, `len` 1..=4.
#[inline]
fn val(val: u8, len: usize) -> u8 {
    ((val - 1) << 2 | (len as u8 - 1)) | 0x80
}
/// A ZERO opcode, `len` 1..=64.
#[inline]
fn zero(len: usize) -> u8 {
    (len - 1) as u8
}
/// An XZERO opcode, `len` 1..=16384.
#[inline]
fn xzero(len: usize) -> [u8; 2] {
    let l = len - 1;
    [((l >> 8) as u8 & 0x3f) | 0x40, (l & 0xff) as u8]
}

/// One opcode of a sparse walk: a run of `len` registers holding `value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// ZERO (1 byte) or XZERO (2 bytes): `len` zero registers.
    Zero { len: usize, xzero: bool },
    /// VAL: `len` registers of `value`.
    Val { value: u8, len: usize },
}

/// Walks the sparse registers `regs` opcode by opcode (reading a zero past the end, as
/// Redis does for an XZERO cut in half).
fn sparse_ops(regs: &[u8]) -> impl Iterator<Item = Op> + '_ {
    let mut p = 0;
    std::iter::from_fn(move || {
        let b = *regs.get(p)?;
        Some(if is_zero(b) {
            p += 1;
            Op::Zero {
                len: zero_len(b),
                xzero: false,
            }
        } else if is_xzero(b) {
            let len = xzero_len(b, at(regs, p + 1));
            p += 2;
            Op::Zero { len, xzero: true }
        } else {
            p += 1;
            Op::Val {
                value: val_value(b),
                len: val_len(b),
            }
        })
    })
}

/// Calls `f(i, value)` for every non-zero register of the sparse registers `regs`;
/// [`Corrupted`] unless the runs cover exactly 16384 registers, found at the first run
/// that would pass the end (Redis's `hllSparseToDense` and `hllMerge` with the
/// CVE-2025-32023 checks, which Debian's 7.0.15 carries).
fn sparse_for_each(regs: &[u8], mut f: impl FnMut(usize, u8)) -> Result<(), Corrupted> {
    let mut idx = 0usize;
    for op in sparse_ops(regs) {
        let len = match op {
            Op::Zero { len, .. } | Op::Val { len, .. } => len,
        };
        if idx + len > HLL_REGISTERS {
            return Err(Corrupted);
        }
        if let Op::Val { value, .. } = op {
            for i in idx..idx + len {
                f(i, value);
            }
        }
        idx += len;
    }
    if idx == HLL_REGISTERS {
        Ok(())
    } else {
        Err(Corrupted)
    }
}

/// Turns the valid HLL `s` dense, keeping its header (cached cardinality included);
/// nothing to do if it is dense already (Redis's `hllSparseToDense`). [`Corrupted`] if
/// the sparse form does not cover 16384 registers; `s` is then unchanged.
pub fn sparse_to_dense(s: &mut Vec<u8>) -> Result<(), Corrupted> {
    if s.get(ENCODING_AT) != Some(&HLL_SPARSE) {
        return Ok(());
    }
    let mut dense = vec![0u8; HLL_DENSE_SIZE];
    dense[..HLL_HDR_SIZE].copy_from_slice(&s[..HLL_HDR_SIZE]);
    dense[ENCODING_AT] = HLL_DENSE;
    {
        let regs = &mut dense[HLL_HDR_SIZE..];
        sparse_for_each(&s[HLL_HDR_SIZE..], |i, v| dense_put(regs, i, v))?;
    }
    *s = dense;
    Ok(())
}

/// Raises register `index` of the sparse HLL `s` to `count` if it is lower, editing
/// the run-length code in place; true if it changed (Redis's `hllSparseSet`, step by
/// step, so that even a corrupted value is edited as Redis edits it).
///
/// Turns `s` dense first when `count` is above 32 or the edit would make the string
/// longer than `max_bytes`. [`Corrupted`] when the walk runs off the end or the
/// promotion finds the runs do not add up.
fn sparse_set(
    s: &mut Vec<u8>,
    index: usize,
    count: u8,
    max_bytes: usize,
) -> Result<bool, Corrupted> {
    if count > HLL_SPARSE_VAL_MAX_VALUE {
        return promote(s, index, count);
    }
    // Step 1: find the opcode covering `index`: it starts at `p` and covers registers
    // `first ..= first + span - 1`; `prev` is the opcode before it.
    let start = HLL_HDR_SIZE;
    let mut end = s.len();
    let (mut p, mut first, mut span) = (start, 0usize, 0usize);
    let mut prev = None;
    while p < end {
        let b = s[p];
        let mut oplen = 1;
        span = if is_zero(b) {
            zero_len(b)
        } else if is_val(b) {
            val_len(b)
        } else {
            oplen = 2;
            xzero_len(b, at(s, p + 1))
        };
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += oplen;
        first += span;
    }
    if span == 0 || p >= end {
        return Err(Corrupted);
    }
    let b = s[p];
    let oldlen = if is_xzero(b) { 2 } else { 1 };
    let updated_in_place = if is_val(b) {
        // A: the register already holds as much. B: a run of one, rewritten.
        if val_value(b) >= count {
            return Ok(false);
        }
        val_len(b) == 1
    } else {
        // C: a ZERO run of one becomes a VAL.
        is_zero(b) && zero_len(b) == 1
    };
    if updated_in_place {
        s[p] = val(count, 1);
    } else {
        // D: split the run in up to three: before, the register, after.
        let mut seq = [0u8; 5];
        let mut n = 0;
        let last = first + span - 1;
        fn push_zeros(seq: &mut [u8; 5], n: &mut usize, len: usize) {
            if len > HLL_SPARSE_ZERO_MAX_LEN {
                seq[*n..*n + 2].copy_from_slice(&xzero(len));
                *n += 2;
            } else {
                seq[*n] = zero(len);
                *n += 1;
            }
        }
        if is_val(b) {
            let cur = val_value(b);
            if index != first {
                seq[n] = val(cur, index - first);
                n += 1;
            }
            seq[n] = val(count, 1);
            n += 1;
            if index != last {
                seq[n] = val(cur, last - index);
                n += 1;
            }
        } else {
            if index != first {
                push_zeros(&mut seq, &mut n, index - first);
            }
            seq[n] = val(count, 1);
            n += 1;
            if index != last {
                push_zeros(&mut seq, &mut n, last - index);
            }
        }
        // Step 3: put the new sequence where the opcode was.
        let new_len = end + n - oldlen;
        if n > oldlen && new_len > max_bytes {
            return promote(s, index, count);
        }
        // An XZERO cut in half at the very end loses the sequence's last byte, as the
        // string's length says it does in Redis.
        s.splice(p..(p + oldlen).min(end), seq[..n].iter().copied());
        s.truncate(new_len);
        end = new_len;
    }
    // Step 4: merge adjacent VALs of the same value, scanning up to five opcodes from
    // the one before the change.
    let mut p = prev.unwrap_or(start);
    let mut scan = 5;
    while p < end && scan > 0 {
        scan -= 1;
        let b = s[p];
        if is_xzero(b) {
            p += 2;
            continue;
        }
        if is_zero(b) {
            p += 1;
            continue;
        }
        if p + 1 < end && is_val(s[p + 1]) {
            let v = val_value(b);
            if v == val_value(s[p + 1]) {
                let len = val_len(b) + val_len(s[p + 1]);
                if len <= HLL_SPARSE_VAL_MAX_LEN {
                    s[p + 1] = val(v, len);
                    s.remove(p);
                    end -= 1;
                    continue;
                }
            }
        }
        p += 1;
    }
    invalidate_cache(s);
    Ok(true)
}

/// The sparse form cannot take the update: turn `s` dense and set the register there.
fn promote(s: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, Corrupted> {
    sparse_to_dense(s)?;
    // The register was lower than `count` (it had to be rewritten), so this changes it.
    Ok(dense_set(&mut s[HLL_HDR_SIZE..], index, count))
}

// --- the operations the commands use ---------------------------------------------------

/// Adds `ele` to the valid HLL `s` (Redis's `hllAdd`): true if a register changed.
/// `max_bytes` is `hll-sparse-max-bytes`. Only a sparse form can be [`Corrupted`].
pub fn add(s: &mut Vec<u8>, ele: &[u8], max_bytes: usize) -> Result<bool, Corrupted> {
    let (index, count) = pat_len(ele);
    set_register(s, index, count, max_bytes)
}

/// Raises register `index` of the valid HLL `s` to `count` if it is lower.
fn set_register(
    s: &mut Vec<u8>,
    index: usize,
    count: u8,
    max_bytes: usize,
) -> Result<bool, Corrupted> {
    match s.get(ENCODING_AT) {
        Some(&HLL_DENSE) => Ok(dense_set(&mut s[HLL_HDR_SIZE..], index, count)),
        Some(&HLL_SPARSE) => sparse_set(s, index, count, max_bytes),
        _ => Err(Corrupted),
    }
}

/// Raises each register of `max` to the valid HLL `s`'s value where that is higher
/// (Redis's `hllMerge`).
pub fn merge_into(max: &mut [u8; HLL_REGISTERS], s: &[u8]) -> Result<(), Corrupted> {
    let regs = s.get(HLL_HDR_SIZE..).ok_or(Corrupted)?;
    let mut raise = |i: usize, v: u8| {
        if v > max[i] {
            max[i] = v;
        }
    };
    if is_dense(s) {
        dense_for_each(regs, raise);
        Ok(())
    } else {
        sparse_for_each(regs, &mut raise)
    }
}

/// Writes the registers `max` into the valid HLL `s` (PFMERGE's destination, already
/// dense if any source was), raising each to `max`'s value, and marks its cached
/// cardinality stale.
pub fn store_registers(s: &mut Vec<u8>, max: &[u8; HLL_REGISTERS], max_bytes: usize) {
    for (i, &v) in max.iter().enumerate() {
        if v != 0 {
            // A destination that was merged as a source is valid, so this cannot fail;
            // Redis ignores the result too.
            let _ = set_register(s, i, v, max_bytes);
        }
    }
    invalidate_cache(s);
}

/// The estimated cardinality of the valid HLL `s` (Redis's `hllCount`); [`Corrupted`]
/// when a sparse form does not cover 16384 registers.
pub fn count(s: &[u8]) -> Result<u64, Corrupted> {
    let regs = s.get(HLL_HDR_SIZE..).ok_or(Corrupted)?;
    let mut histo = [0i64; 64];
    if is_dense(s) {
        dense_histogram(regs, &mut histo);
    } else {
        let mut idx = 0usize;
        for op in sparse_ops(regs) {
            let (v, len) = match op {
                Op::Zero { len, .. } => (0, len),
                Op::Val { value, len } => (value, len),
            };
            idx += len;
            if idx > HLL_REGISTERS {
                return Err(Corrupted);
            }
            histo[usize::from(v)] += len as i64;
        }
        if idx != HLL_REGISTERS {
            return Err(Corrupted);
        }
    }
    Ok(estimate(&histo))
}

/// The estimated cardinality of plain registers, one byte each (PFCOUNT of many keys:
/// Redis's `HLL_RAW`).
pub fn count_registers(max: &[u8; HLL_REGISTERS]) -> u64 {
    let mut tables = FourTables::new();
    for q in max.chunks_exact(4) {
        tables.count(q);
    }
    let mut histo = [0i64; 64];
    tables.add_to(&mut histo);
    estimate(&histo)
}

/// Ertl's `sigma` series.
fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let (mut y, mut z) = (1.0, x);
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if before == z {
            return z;
        }
    }
}

/// Ertl's `tau` series.
fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let (mut y, mut z) = (1.0, 1.0 - x);
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        let d = 1.0 - x;
        z -= d * d * y;
        if before == z {
            return z / 3.0;
        }
    }
}

/// The cardinality estimate from the register histogram (`histo[v]` registers hold
/// `v`), in Redis's order of floating-point operations.
fn estimate(histo: &[i64; 64]) -> u64 {
    let m = HLL_REGISTERS as f64;
    let mut z = m * tau((m - histo[HLL_Q + 1] as f64) / m);
    for j in (1..=HLL_Q).rev() {
        z += histo[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(histo[0] as f64 / m);
    (HLL_ALPHA_INF * m * m / z).round() as u64
}

/// The 16384 registers of the dense HLL `s` (PFDEBUG GETREG, after turning it dense).
pub fn dense_registers(s: &[u8]) -> Vec<u8> {
    let regs = s.get(HLL_HDR_SIZE..).unwrap_or_default();
    (0..HLL_REGISTERS).map(|i| dense_get(regs, i)).collect()
}

/// The sparse opcodes of `s` as PFDEBUG DECODE prints them: `z:N` (ZERO), `Z:N`
/// (XZERO), `v:VALUE,N` (VAL), separated by spaces.
pub fn decode_sparse(s: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for op in sparse_ops(s.get(HLL_HDR_SIZE..).unwrap_or_default()) {
        if !out.is_empty() {
            out.push(' ');
        }
        let _ = match op {
            Op::Zero { len, xzero: false } => write!(out, "z:{len}"),
            Op::Zero { len, xzero: true } => write!(out, "Z:{len}"),
            Op::Val { value, len } => write!(out, "v:{value},{len}"),
        };
    }
    out
}

// --- self test -----------------------------------------------------------------------

/// Redis's PFSELFTEST: (1) random values written to and read back from every dense
/// register, 1000 times; (2) ten million distinct elements added to a dense and a sparse
/// HLL at once, checking at 1, 10, 100, ... that the sparse one is still sparse while
/// small, that both estimate the same, and that the error stays within six standard
/// errors. `Err` carries Redis's `TESTFAILED ...` text.
pub fn self_test(max_bytes: usize, mut seed: u64) -> Result<(), String> {
    let mut rand = move || {
        // xorshift64*
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        seed.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let mut dense = vec![0u8; HLL_DENSE_SIZE];
    dense[..4].copy_from_slice(b"HYLL");
    let mut bytes = [0u8; HLL_REGISTERS];
    for _ in 0..1000 {
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (rand() >> 32) as u8 & HLL_REGISTER_MAX;
            dense_put(&mut dense[HLL_HDR_SIZE..], i, *b);
        }
        for (i, &b) in bytes.iter().enumerate() {
            let got = dense_get(&dense[HLL_HDR_SIZE..], i);
            if got != b {
                return Err(format!(
                    "TESTFAILED Register {i} should be {b} but is {got}"
                ));
            }
        }
    }
    dense[HLL_HDR_SIZE..].fill(0);
    let mut sparse = new_hll();
    let relerr = 1.04 / (HLL_REGISTERS as f64).sqrt();
    let mut checkpoint: u64 = 1;
    let seed = rand();
    for j in 1..=10_000_000u64 {
        let ele = (j ^ seed).to_le_bytes();
        add(&mut dense, &ele, max_bytes).map_err(|_| "TESTFAILED corrupted".to_string())?;
        add(&mut sparse, &ele, max_bytes).map_err(|_| "TESTFAILED corrupted".to_string())?;
        if j != checkpoint {
            continue;
        }
        if j < (max_bytes / 2) as u64 && is_dense(&sparse) {
            return Err("TESTFAILED sparse encoding not used".into());
        }
        let card = count(&dense).map_err(|_| "TESTFAILED corrupted".to_string())?;
        if count(&sparse).ok() != Some(card) {
            return Err("TESTFAILED dense/sparse disagree".into());
        }
        let abserr = checkpoint.abs_diff(card);
        let maxerr = if j == 10 {
            1
        } else {
            (relerr * 6.0 * checkpoint as f64).ceil() as u64
        };
        if abserr > maxerr {
            return Err(format!(
                "TESTFAILED Too big error. card:{checkpoint} abserr:{abserr}"
            ));
        }
        checkpoint *= 10;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hll_of(elements: impl IntoIterator<Item = String>, max_bytes: usize) -> Vec<u8> {
        let mut s = new_hll();
        for e in elements {
            add(&mut s, e.as_bytes(), max_bytes).unwrap();
        }
        s
    }

    #[test]
    fn murmurhash64a_matches_reference_values() {
        // Values of Redis's MurmurHash64A with seed 0xadc83b19 (the element's register and
        // run length are cross-checked against redis-server in tests/hyperloglog.rs).
        assert_eq!(murmurhash64a(b"", 0), 0);
        let h = murmurhash64a(b"hello", HLL_HASH_SEED);
        assert_eq!(h, murmurhash64a(b"hello", HLL_HASH_SEED));
        assert_ne!(h, murmurhash64a(b"hellp", HLL_HASH_SEED));
        // Every tail length goes through its own branch.
        let key = b"0123456789abcdef";
        let all: std::collections::HashSet<u64> = (0..=16)
            .map(|n| murmurhash64a(&key[..n], HLL_HASH_SEED))
            .collect();
        assert_eq!(all.len(), 17);
    }

    #[test]
    fn a_new_hll_is_sparse_xzero_16384() {
        let s = new_hll();
        assert_eq!(s.len(), 18);
        assert_eq!(&s[..5], b"HYLL\x01");
        assert_eq!(&s[16..], &[0x7f, 0xff]);
        assert!(is_hll(&s));
        assert_eq!(decode_sparse(&s), "Z:16384");
        assert_eq!(count(&s), Ok(0));
        assert_eq!(cached_card(&s), Some(0));
    }

    #[test]
    fn dense_registers_round_trip_and_do_not_touch_neighbours() {
        let mut regs = vec![0u8; HLL_DENSE_SIZE - HLL_HDR_SIZE];
        for i in 0..HLL_REGISTERS {
            dense_put(&mut regs, i, (i % 64) as u8);
        }
        for i in 0..HLL_REGISTERS {
            assert_eq!(dense_get(&regs, i), (i % 64) as u8);
        }
        let unpacked: Vec<u8> = regs.chunks_exact(12).flat_map(unpack12).collect();
        assert_eq!(unpacked, dense_registers(&[&[0u8; 16][..], &regs].concat()));
    }

    #[test]
    fn header_checks_follow_is_hll_object_or_reply() {
        let mut s = new_hll();
        assert!(is_hll(&s));
        s[0] = b'h';
        assert!(!is_hll(&s));
        let mut s = new_hll();
        s[4] = 2;
        assert!(!is_hll(&s));
        s[4] = 0;
        assert!(!is_hll(&s), "dense of the wrong length");
        assert!(!is_hll(b"HYLL"));
        assert!(
            is_hll(&new_hll()[..16]),
            "a bare sparse header passes the checks"
        );
        assert_eq!(count(&new_hll()[..16]), Err(Corrupted));
    }

    #[test]
    fn cache_bit_marks_staleness() {
        let mut s = new_hll();
        invalidate_cache(&mut s);
        assert_eq!(cached_card(&s), None);
        set_cached_card(&mut s, 42);
        assert_eq!(cached_card(&s), Some(42));
    }

    #[test]
    fn sparse_and_dense_agree_and_promote_at_the_limit() {
        for n in [0usize, 1, 5, 100, 1000, 5000] {
            let elements = (0..n).map(|i| format!("e{i}"));
            let sparse = hll_of(elements.clone(), HLL_SPARSE_MAX_BYTES);
            let mut dense = new_hll();
            sparse_to_dense(&mut dense).unwrap();
            for e in elements {
                add(&mut dense, e.as_bytes(), HLL_SPARSE_MAX_BYTES).unwrap();
            }
            assert_eq!(count(&sparse), count(&dense), "n={n}");
            assert!(sparse.len() <= HLL_SPARSE_MAX_BYTES || is_dense(&sparse));
            if n <= 100 {
                assert!(!is_dense(&sparse));
            }
            if n >= 5000 {
                assert!(is_dense(&sparse));
            }
            let mut promoted = sparse.clone();
            sparse_to_dense(&mut promoted).unwrap();
            assert_eq!(dense_registers(&promoted), dense_registers(&dense));
        }
    }

    #[test]
    fn estimates_are_close() {
        for n in [10usize, 1000, 100_000] {
            let s = hll_of((0..n).map(|i| i.to_string()), HLL_SPARSE_MAX_BYTES);
            let c = count(&s).unwrap() as f64;
            assert!((c - n as f64).abs() <= n as f64 * 0.05 + 1.0, "n={n} c={c}");
        }
    }

    #[test]
    fn wide_and_register_paths_agree() {
        let s = hll_of((0..20000).map(|i| i.to_string()), HLL_SPARSE_MAX_BYTES);
        assert!(is_dense(&s));
        let mut a = [0u8; HLL_REGISTERS];
        let mut b = [0u8; HLL_REGISTERS];
        set_wide_paths(false);
        merge_into(&mut a, &s).unwrap();
        let ca = count(&s);
        set_wide_paths(true);
        merge_into(&mut b, &s).unwrap();
        assert_eq!(a, b);
        assert_eq!(ca, count(&s));
        assert_eq!(count_registers(&a), count(&s).unwrap());
    }

    #[test]
    fn corrupted_sparse_forms_are_errors_not_panics() {
        let mut s = hll_of(["a", "b", "c"].map(String::from), 3000);
        s.extend_from_slice(b"hello");
        assert_eq!(count(&s), Err(Corrupted));
        let mut m = [0u8; HLL_REGISTERS];
        assert_eq!(merge_into(&mut m, &s), Err(Corrupted));
        // A truncated XZERO at the end reads the terminator as its second byte.
        let mut t = new_hll();
        t.truncate(17);
        assert_eq!(count(&t), Err(Corrupted));
        assert_eq!(add(&mut t, b"x", 3000), Err(Corrupted));
    }

    #[test]
    fn self_test_passes() {
        assert_eq!(
            self_test(HLL_SPARSE_MAX_BYTES, 0x1234_5678_9abc_def1),
            Ok(())
        );
    }

    mod prop {
        use super::super::*;
        use proptest::prelude::*;

        /// The registers a sparse or dense value stands for, by a plain walk.
        fn model_registers(s: &[u8]) -> Option<Vec<u8>> {
            if is_dense(s) {
                return Some(dense_registers(s));
            }
            let mut regs = Vec::new();
            for op in sparse_ops(&s[HLL_HDR_SIZE..]) {
                match op {
                    Op::Zero { len, .. } => regs.extend(std::iter::repeat_n(0, len)),
                    Op::Val { value, len } => regs.extend(std::iter::repeat_n(value, len)),
                }
            }
            (regs.len() == HLL_REGISTERS).then_some(regs)
        }

        proptest! {
            /// Register writes in any order match an array of registers, in both forms,
            /// whatever the sparse limit; the sparse form stays canonical enough to decode.
            #[test]
            fn sets_match_a_register_array(
                writes in proptest::collection::vec((0usize..HLL_REGISTERS, 1u8..=51), 0..400),
                max_bytes in 0usize..4000,
            ) {
                let mut s = new_hll();
                let mut model = vec![0u8; HLL_REGISTERS];
                for (i, v) in writes {
                    let changed = set_register(&mut s, i, v, max_bytes).unwrap();
                    prop_assert_eq!(changed, v > model[i]);
                    model[i] = model[i].max(v);
                    prop_assert!(is_hll(&s));
                }
                prop_assert_eq!(model_registers(&s), Some(model.clone()));
                let mut raw = [0u8; HLL_REGISTERS];
                merge_into(&mut raw, &s).unwrap();
                prop_assert_eq!(&raw[..], &model[..]);
                prop_assert_eq!(count(&s).unwrap(), count_registers(&raw));
            }

            /// The histogram of dense registers, twelve bytes at a time into four
            /// tables, counts what reading each register one by one counts, for any
            /// bytes (every value 0..=63 in every position of a twelve-byte group).
            #[test]
            fn dense_histogram_counts_every_register(
                seed in proptest::collection::vec(any::<u8>(), 64),
                stride in 1usize..97,
            ) {
                let regs: Vec<u8> = (0..HLL_REGISTERS * HLL_BITS / 8 + 1)
                    .map(|i| seed[i % seed.len()].wrapping_add((i / stride) as u8))
                    .collect();
                let mut fast = [0i64; 64];
                wide_histogram(&regs, &mut fast);
                let mut slow = [0i64; 64];
                for i in 0..HLL_REGISTERS {
                    slow[usize::from(dense_get(&regs, i))] += 1;
                }
                prop_assert_eq!(fast, slow);
            }

            /// Arbitrary bytes written over a valid HLL never panic any operation.
            #[test]
            fn corrupted_values_never_panic(
                n in 0usize..600,
                edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
                extra in proptest::collection::vec(any::<u8>(), 0..8),
                cut in any::<usize>(),
                elements in proptest::collection::vec(any::<u32>(), 0..20),
            ) {
                let mut s = new_hll();
                for i in 0..n {
                    add(&mut s, i.to_string().as_bytes(), 3000).unwrap();
                }
                let len = s.len();
                for (pos, b) in edits {
                    let i = pos % len;
                    s[i] = b;
                }
                s.extend_from_slice(&extra);
                if cut % 3 == 0 {
                    let keep = HLL_HDR_SIZE + cut % (s.len() - HLL_HDR_SIZE + 1);
                    s.truncate(keep);
                }
                if !is_hll(&s) {
                    return Ok(());
                }
                let _ = count(&s);
                let _ = decode_sparse(&s);
                let mut m = [0u8; HLL_REGISTERS];
                let _ = merge_into(&mut m, &s);
                let mut t = s.clone();
                for e in elements {
                    if add(&mut t, &e.to_le_bytes(), 3000).is_err() {
                        break;
                    }
                }
                let _ = count(&t);
                let mut d = s.clone();
                if sparse_to_dense(&mut d).is_ok() {
                    prop_assert_eq!(d.len(), HLL_DENSE_SIZE);
                    let _ = count(&d);
                }
            }
        }
    }
}
