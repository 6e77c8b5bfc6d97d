//! Bit arithmetic on a string's bytes: what the bitmap commands (SETBIT, GETBIT,
//! BITCOUNT, BITPOS, BITOP, BITFIELD) compute, with no I/O and no knowledge of keys.
//!
//! A bitmap is a string read as a big-endian bit array: bit 0 is the most significant
//! bit of byte 0, bit 8 the most significant bit of byte 1, and so on. A bit past the
//! end of the string reads as 0.
//!
//! ```text
//!  byte        0                       1
//!        +--+--+--+--+--+--+--+--+--+--+--+--+--+--+--+--+
//!  bit   | 0| 1| 2| 3| 4| 5| 6| 7| 8| 9|10|11|12|13|14|15| ...
//!        +--+--+--+--+--+--+--+--+--+--+--+--+--+--+--+--+
//!         MSB                 LSB MSB
//!
//!  a BITFIELD integer of `bits` width at bit `offset` is the run
//!  offset .. offset+bits-1, most significant bit first (it may straddle up to 9 bytes)
//! ```
//!
//! Hence eight consecutive bytes read as a big-endian `u64` are 64 consecutive bits in
//! order, and `leading_zeros` of that word is the first set bit's distance from the
//! word's start: [`first_bit`] and [`count_ones`] work a word at a time. Ranges are
//! inclusive bit positions, already clamped by the caller to the string (`to < 8 *
//! len`), as Redis clamps them before it counts.

/// Number of set bits in `bytes` (Redis's `redisPopcount`), by the fastest loop this
/// CPU runs (`cpu.rs`).
pub fn popcount(bytes: &[u8]) -> u64 {
    super::cpu::popcount(bytes)
}

/// Number of set bits in `bytes`, eight bytes at a time, in portable code: the body
/// `cpu.rs` compiles once per instruction set (hence always inlined).
#[inline(always)]
pub(super) fn popcount_portable(bytes: &[u8]) -> u64 {
    let mut chunks = bytes.chunks_exact(32);
    // Four independent sums so the additions do not wait on each other. The byte order
    // does not matter to a count; little-endian is a plain load on the usual hosts.
    let mut sums = [0u64; 4];
    for c in &mut chunks {
        for (i, sum) in sums.iter_mut().enumerate() {
            let mut w = [0u8; 8];
            w.copy_from_slice(&c[i * 8..i * 8 + 8]);
            *sum += u64::from(u64::from_le_bytes(w).count_ones());
        }
    }
    let mut total: u64 = sums.iter().sum();
    let mut words = chunks.remainder().chunks_exact(8);
    for c in &mut words {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        total += u64::from(u64::from_le_bytes(w).count_ones());
    }
    for b in words.remainder() {
        total += u64::from(b.count_ones());
    }
    total
}

/// Bytes [`first_bit`] tests for "nothing wanted here" at once.
const SKIP_BLOCK: usize = 256;

/// Mask of the bits of a byte at and after bit `from % 8` (bit 0 = MSB).
fn head_mask(from: u64) -> u8 {
    0xFF >> (from % 8)
}

/// Mask of the bits of a byte at and before bit `to % 8` (bit 0 = MSB).
fn tail_mask(to: u64) -> u8 {
    0xFF << (7 - to % 8)
}

/// Set bits among bits `from..=to` of `bytes` (BITCOUNT). Requires `from <= to < 8 *
/// bytes.len()`.
pub fn count_ones(bytes: &[u8], from: u64, to: u64) -> u64 {
    let (first, last) = ((from / 8) as usize, (to / 8) as usize);
    let Some(span) = bytes.get(first..=last) else {
        return 0;
    };
    let all = popcount(span);
    let outside_head = (span[0] & !head_mask(from)).count_ones();
    let outside_tail = (span[span.len() - 1] & !tail_mask(to)).count_ones();
    all - u64::from(outside_head) - u64::from(outside_tail)
}

/// The first bit equal to `bit` among bits `from..=to` of `bytes` (BITPOS), or `None`.
/// Requires `from <= to < 8 * bytes.len()`.
pub fn first_bit(bytes: &[u8], bit: bool, from: u64, to: u64) -> Option<u64> {
    let (first, last) = ((from / 8) as usize, (to / 8) as usize);
    let span = bytes.get(first..=last)?;
    // Looking for a 0 is looking for a 1 in the complement.
    let flip = if bit { 0u8 } else { 0xFF };
    let flip64 = if bit { 0u64 } else { u64::MAX };
    let at = |byte: usize, v: u8| (first + byte) as u64 * 8 + u64::from(v.leading_zeros());
    if span.len() == 1 {
        let v = (span[0] ^ flip) & head_mask(from) & tail_mask(to);
        return (v != 0).then(|| at(0, v));
    }
    let v = (span[0] ^ flip) & head_mask(from);
    if v != 0 {
        return Some(at(0, v));
    }
    let middle = &span[1..span.len() - 1];
    // Skip blocks holding no bit wanted (one OR of eight words per block, which the
    // compiler turns into vector loads; the byte order does not matter to a test for
    // zero), then find the bit word by word from the first block that has one. A
    // megabyte of zeros, in a loop here: 32-byte blocks 22.6 µs from L1/L2 and 22.8
    // from L3, 256-byte ones 9.5 and 14.1 (a branch per block was the cost). Inside the
    // server BITPOS of a megabyte finds it further out (~40 µs, as Redis's scan does).
    let mut skip = 0;
    for block in middle.chunks_exact(SKIP_BLOCK) {
        let mut any = 0u64;
        for c in block.chunks_exact(8) {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            any |= u64::from_le_bytes(w) ^ flip64;
        }
        if any != 0 {
            break;
        }
        skip += SKIP_BLOCK;
    }
    let middle = &middle[skip..];
    let mut words = middle.chunks_exact(8);
    for (i, c) in (&mut words).enumerate() {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        let w = u64::from_be_bytes(w) ^ flip64;
        if w != 0 {
            return Some((first + 1 + skip + i * 8) as u64 * 8 + u64::from(w.leading_zeros()));
        }
    }
    let rest_at = 1 + skip + middle.len() - words.remainder().len();
    for (i, b) in words.remainder().iter().enumerate() {
        let v = b ^ flip;
        if v != 0 {
            return Some(at(rest_at + i, v));
        }
    }
    let v = (span[span.len() - 1] ^ flip) & tail_mask(to);
    (v != 0).then(|| at(span.len() - 1, v))
}

/// The bit at `offset` (GETBIT): 0 past the end.
pub fn get_bit(bytes: &[u8], offset: u64) -> bool {
    usize::try_from(offset / 8)
        .ok()
        .and_then(|i| bytes.get(i))
        .is_some_and(|b| b & (0x80 >> (offset % 8)) != 0)
}

/// Sets the bit at `offset` to `on` (SETBIT); returns its old value. Requires `offset <
/// 8 * bytes.len()`.
pub fn set_bit(bytes: &mut [u8], offset: u64, on: bool) -> bool {
    let mask = 0x80u8 >> (offset % 8);
    let Some(b) = usize::try_from(offset / 8)
        .ok()
        .and_then(|i| bytes.get_mut(i))
    else {
        return false;
    };
    let old = *b & mask != 0;
    if on {
        *b |= mask;
    } else {
        *b &= !mask;
    }
    old
}

/// A BITOP operation: the first four since Redis 2.6, the last four since 8.2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitOp {
    /// Bits set in every source.
    And,
    /// Bits set in any source.
    Or,
    /// Bits set in an odd number of sources.
    Xor,
    /// The complement of the one source.
    Not,
    /// Bits of the first source set in none of the others: `X & !(A1 | .. | An)`.
    Diff,
    /// Bits set in one of the others but not in the first: `!X & (A1 | .. | An)`.
    Diff1,
    /// Bits of the first source set in one of the others too: `X & (A1 | .. | An)`.
    AndOr,
    /// Bits set in exactly one source.
    One,
}

/// A BITOP source's bytes in `start..end`: fewer (or none) past its end.
fn piece(s: &[u8], start: usize, end: usize) -> &[u8] {
    s.get(start..end.min(s.len())).unwrap_or(&[])
}

/// Bytes of BITOP's result combined from every source before the next ones: the piece
/// of the result stays in the L1 cache while each source's piece streams past it.
const BITOP_CHUNK: usize = 4096;

/// The result of `op` over `sources` (BITOP), as long as the longest source, a shorter
/// source reading as zeros past its end. Empty when every source is.
///
/// One pass over the result, [`BITOP_CHUNK`] bytes at a time: each piece starts as the
/// first source's bytes (or what an empty start is for the operation) and every other
/// source is folded into it while it is in the cache, as Redis's loop folds all sources
/// a word at a time. (Filling the whole result, copying the first source over it and
/// then one pass per source cost about half the server's time of `BITOP AND` over four
/// 256 KiB strings.)
pub fn bitop(op: BitOp, sources: &[&[u8]]) -> Vec<u8> {
    let maxlen = sources.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = Vec::with_capacity(maxlen);
    let Some((first, rest)) = sources.split_first() else {
        out.resize(maxlen, 0);
        return out;
    };
    // ONE's "set in two or more sources so far", a piece at a time.
    let mut twice = if op == BitOp::One {
        vec![0u8; BITOP_CHUNK.min(maxlen)]
    } else {
        Vec::new()
    };
    let mut start = 0;
    while start < maxlen {
        let end = (start + BITOP_CHUNK).min(maxlen);
        let at = out.len();
        let head = piece(first, start, end);
        // The piece starts as the first source (zeros past its end), complemented for
        // NOT; the DIFF family starts from zeros and takes the first source last.
        match op {
            BitOp::Not => {
                out.extend(head.iter().map(|b| !b));
                out.resize(at + (end - start), 0xFF);
            }
            BitOp::Diff | BitOp::Diff1 | BitOp::AndOr => out.resize(at + (end - start), 0),
            BitOp::And | BitOp::Or | BitOp::Xor | BitOp::One => {
                out.extend_from_slice(head);
                out.resize(at + (end - start), 0);
            }
        }
        let o = &mut out[at..];
        match op {
            BitOp::Not => {}
            BitOp::And => {
                for s in rest {
                    let p = piece(s, start, end);
                    for (o, b) in o.iter_mut().zip(p) {
                        *o &= b;
                    }
                    // Past a source's end every bit of the conjunction is 0.
                    o[p.len()..].fill(0);
                }
            }
            BitOp::Or | BitOp::Xor => {
                for s in rest {
                    let p = piece(s, start, end);
                    if op == BitOp::Or {
                        for (o, b) in o.iter_mut().zip(p) {
                            *o |= b;
                        }
                    } else {
                        for (o, b) in o.iter_mut().zip(p) {
                            *o ^= b;
                        }
                    }
                }
            }
            BitOp::Diff | BitOp::Diff1 | BitOp::AndOr => {
                // The disjunction of the others, then combined with the first.
                for s in rest {
                    for (o, b) in o.iter_mut().zip(piece(s, start, end)) {
                        *o |= b;
                    }
                }
                let x = head.iter().copied().chain(std::iter::repeat(0));
                for (o, x) in o.iter_mut().zip(x) {
                    *o = match op {
                        BitOp::Diff => x & !*o,
                        BitOp::Diff1 => !x & *o,
                        _ => x & *o,
                    };
                }
            }
            BitOp::One => {
                // `o`: bits set in at least one source so far; `t`: in two or more.
                let t = &mut twice[..end - start];
                t.fill(0);
                for s in rest {
                    for ((o, t), b) in o.iter_mut().zip(t.iter_mut()).zip(piece(s, start, end)) {
                        *t |= *o & b;
                        *o |= b;
                    }
                }
                for (o, t) in o.iter_mut().zip(t.iter()) {
                    *o &= !t;
                }
            }
        }
        start = end;
    }
    out
}

/// The unsigned integer of `bits` (1..=64) bits at bit `offset`, zero past the end of
/// `bytes` (BITFIELD GET reads through a zero-padded window, as Redis does).
pub fn get_unsigned(bytes: &[u8], offset: u64, bits: u32) -> u64 {
    let window = read_window(bytes, offset);
    let shifted = window << (offset % 8);
    (shifted >> (128 - bits)) as u64
}

/// [`get_unsigned`] read as a two's complement integer of `bits` bits.
pub fn get_signed(bytes: &[u8], offset: u64, bits: u32) -> i64 {
    let v = get_unsigned(bytes, offset, bits);
    sign_extend(v, bits)
}

/// `v`'s low `bits` bits as a two's complement integer.
pub fn sign_extend(v: u64, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((v << shift) as i64) >> shift
}

/// Writes the low `bits` bits of `value` at bit `offset`. Requires the field to lie in
/// `bytes` (`offset + bits <= 8 * bytes.len()`); bits outside the field are kept.
pub fn set_field(bytes: &mut [u8], offset: u64, bits: u32, value: u64) {
    let Ok(first) = usize::try_from(offset / 8) else {
        return;
    };
    let window = read_window(bytes, offset);
    let lead = offset % 8;
    let low = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let at = 128 - u64::from(bits) - lead;
    let mask = u128::from(low) << at;
    let window = (window & !mask) | (u128::from(value & low) << at);
    let out = window.to_be_bytes();
    let Some(dst) = bytes.get_mut(first..) else {
        return;
    };
    // A whole 16-byte window is one store (the bytes past the field are written back
    // unchanged); near the end only the bytes that exist.
    if let Some(whole) = dst.first_chunk_mut::<16>() {
        *whole = out;
    } else {
        for (d, s) in dst.iter_mut().zip(out.iter().take(9)) {
            *d = *s;
        }
    }
}

/// The bytes starting at the byte of bit `offset`, zero-padded past the end, as a
/// big-endian `u128`: a field of at most 64 bits starting within the first byte lies in
/// its top 72 bits. Where 16 bytes are there it is one load.
fn read_window(bytes: &[u8], offset: u64) -> u128 {
    let Some(src) = usize::try_from(offset / 8)
        .ok()
        .and_then(|i| bytes.get(i..))
    else {
        return 0;
    };
    if let Some(whole) = src.first_chunk::<16>() {
        return u128::from_be_bytes(*whole);
    }
    let mut buf = [0u8; 16];
    for (d, s) in buf.iter_mut().zip(src.iter().take(9)) {
        *d = *s;
    }
    u128::from_be_bytes(buf)
}

/// BITFIELD's overflow policy (`OVERFLOW WRAP|SAT|FAIL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// Keep the low bits (two's complement wrap-around); the default.
    Wrap,
    /// Clamp to the type's minimum or maximum.
    Sat,
    /// Refuse the write; the operation answers nil.
    Fail,
}

/// A BITFIELD integer type: `i1`..`i64` or `u1`..`u63`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldType {
    /// Signed (`i`) or unsigned (`u`).
    pub signed: bool,
    /// Width in bits: 1..=64 signed, 1..=63 unsigned.
    pub bits: u32,
}

impl FieldType {
    /// Parses `i16`, `u8`... (Redis's `getBitfieldTypeFromArgument`): the sign letter in
    /// lower case, then a strict decimal width.
    pub fn parse(arg: &[u8]) -> Option<FieldType> {
        let (signed, digits) = match arg.split_first() {
            Some((b'i', rest)) => (true, rest),
            Some((b'u', rest)) => (false, rest),
            _ => return None,
        };
        let bits = crate::types::string::string2ll(digits)?;
        let max = if signed { 64 } else { 63 };
        (1..=max).contains(&bits).then_some(FieldType {
            signed,
            bits: bits as u32,
        })
    }

    /// The largest value of the type, as Redis computes it (an `i64`; `u63` at most).
    fn max(self) -> i64 {
        if self.signed {
            if self.bits == 64 {
                i64::MAX
            } else {
                (1i64 << (self.bits - 1)) - 1
            }
        } else {
            ((1u64 << self.bits) - 1) as i64
        }
    }

    /// The field's value at `offset` as an integer of this type.
    pub fn get(self, bytes: &[u8], offset: u64) -> i64 {
        if self.signed {
            get_signed(bytes, offset, self.bits)
        } else {
            // At most 63 bits: fits an i64.
            get_unsigned(bytes, offset, self.bits) as i64
        }
    }

    /// What SET stores for its argument `v` under `policy`: `Some(stored)`, or `None`
    /// when it does not fit and the policy is FAIL. An unsigned type reads a negative
    /// argument as its 64-bit two's complement, so SAT makes it the maximum.
    pub fn set(self, v: i64, policy: Overflow) -> Option<i64> {
        self.check(v as u64, 0, policy)
    }

    /// What INCRBY stores for the field's value `old` plus `by` under `policy`.
    pub fn incr(self, old: i64, by: i64, policy: Overflow) -> Option<i64> {
        self.check(old as u64, by, policy)
    }

    /// Redis's `checkSignedBitfieldOverflow` / `checkUnsignedBitfieldOverflow` and the
    /// store that follows, computed as they are, in 64-bit two's complement: `value` is
    /// the old value (INCRBY) or the argument (SET, `incr` 0). Their limits on the
    /// increment (`max - value`, `min - value`) may wrap, and then the comparison says
    /// what Redis says: a signed SET of a value below `max - i64::MAX` (possible for
    /// widths under 64) counts as overflowing *upwards*, so SAT stores the maximum.
    fn check(self, value: u64, incr: i64, policy: Overflow) -> Option<i64> {
        let bits = self.bits;
        let max = self.max();
        let wrapped = || {
            let sum = value.wrapping_add(incr as u64);
            if self.signed {
                sign_extend(sum, bits)
            } else {
                (sum & !(u64::MAX << bits)) as i64
            }
        };
        // +1: above the maximum; -1: below the minimum; 0: fits.
        let direction = if self.signed {
            let v = value as i64;
            let min = -max - 1;
            let max_incr = (max as u64).wrapping_sub(value) as i64;
            let min_incr = min.wrapping_sub(v);
            if v > max || (bits != 64 && incr > max_incr) || (v >= 0 && incr > 0 && incr > max_incr)
            {
                1
            } else if v < min
                || (bits != 64 && incr < min_incr)
                || (v < 0 && incr < 0 && incr < min_incr)
            {
                -1
            } else {
                0
            }
        } else {
            let max_incr = (max as u64).wrapping_sub(value) as i64;
            let min_incr = 0u64.wrapping_sub(value) as i64;
            if value > max as u64 || (incr > 0 && incr > max_incr) {
                1
            } else if incr < 0 && incr < min_incr {
                -1
            } else {
                0
            }
        };
        match (direction, policy) {
            (0, _) => Some(value.wrapping_add(incr as u64) as i64),
            (_, Overflow::Fail) => None,
            (_, Overflow::Wrap) => Some(wrapped()),
            (1, Overflow::Sat) => Some(max),
            (_, Overflow::Sat) => Some(if self.signed { -max - 1 } else { 0 }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit `i` of `bytes`, one at a time: the model the word-at-a-time code must match.
    fn bit(bytes: &[u8], i: u64) -> bool {
        bytes[(i / 8) as usize] & (0x80 >> (i % 8)) != 0
    }

    #[test]
    fn popcount_counts_every_length() {
        for n in 0..80 {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 37 + 11) as u8).collect();
            let want: u64 = bytes.iter().map(|b| u64::from(b.count_ones())).sum();
            assert_eq!(popcount(&bytes), want, "{n}");
        }
    }

    #[test]
    fn count_and_first_bit_match_a_bit_by_bit_walk() {
        let bytes: Vec<u8> = (0..40u32).map(|i| (i * 73 % 251) as u8).collect();
        // Long runs without the bit wanted, so a whole skip block is skipped.
        let mut zeros = [0u8; 100];
        zeros[90] = 1;
        let mut ones = [0xFFu8; 100];
        ones[75] = 0xFE;
        for data in [&bytes[..], &zeros[..], &ones[..]] {
            let n = data.len() as u64 * 8;
            for from in (0..n).step_by(3) {
                for to in (from..n).step_by(5) {
                    let want = (from..=to).filter(|&i| bit(data, i)).count() as u64;
                    assert_eq!(count_ones(data, from, to), want);
                    for b in [false, true] {
                        let want = (from..=to).find(|&i| bit(data, i) == b);
                        assert_eq!(first_bit(data, b, from, to), want, "{from} {to} {b}");
                    }
                }
            }
        }
    }

    #[test]
    fn first_bit_finds_a_lone_bit_past_many_skipped_blocks() {
        // One wanted bit (a set bit in zeros, a clear one in ones) anywhere in strings of
        // several skip blocks, searched from starts and to ends around block edges.
        for len in [130usize, 200, 333, 600] {
            let n = len as u64 * 8;
            for lone in (0..n).step_by(7).chain([n - 1]) {
                for wanted in [true, false] {
                    let mut data = vec![if wanted { 0u8 } else { 0xFF }; len];
                    data[(lone / 8) as usize] ^= 0x80 >> (lone % 8);
                    for from in [0, 1, 7, 8, 9, 511, 512, 520, lone.saturating_sub(1), lone] {
                        for to in [n - 1, n - 2, lone, lone + 1, 1031] {
                            if from > to || to >= n {
                                continue;
                            }
                            let want = (from..=to).find(|&i| bit(&data, i) == wanted);
                            assert_eq!(
                                first_bit(&data, wanted, from, to),
                                want,
                                "len {len} lone {lone} from {from} to {to} {wanted}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn bits_are_msb_first() {
        let mut b = vec![0u8; 2];
        assert!(!set_bit(&mut b, 1, true));
        assert!(set_bit(&mut b, 1, true));
        assert!(!set_bit(&mut b, 15, true));
        assert_eq!(b, [0x40, 0x01]);
        assert!(get_bit(&b, 1) && get_bit(&b, 15) && !get_bit(&b, 16) && !get_bit(&b, 0));
        assert!(!get_bit(&b, u64::MAX));
    }

    /// BITOP's byte `i` computed alone, every source read as 0 past its end.
    fn bitop_byte(op: BitOp, sources: &[&[u8]], i: usize) -> u8 {
        let b: Vec<u8> = sources
            .iter()
            .map(|s| s.get(i).copied().unwrap_or(0))
            .collect();
        let others = b[1..].iter().fold(0, |a, x| a | x);
        match op {
            BitOp::Not => !b[0],
            BitOp::And => b.iter().fold(0xFF, |a, x| a & x),
            BitOp::Or => b.iter().fold(0, |a, x| a | x),
            BitOp::Xor => b.iter().fold(0, |a, x| a ^ x),
            BitOp::Diff => b[0] & !others,
            BitOp::Diff1 => !b[0] & others,
            BitOp::AndOr => b[0] & others,
            BitOp::One => (0..8)
                .filter(|bit| b.iter().filter(|x| *x & (1 << bit) != 0).count() == 1)
                .fold(0, |a, bit| a | (1 << bit)),
        }
    }

    #[test]
    fn bitop_matches_a_byte_by_byte_model_across_chunks() {
        let bytes = |len: usize, seed: u32| -> Vec<u8> {
            (0..len as u32)
                .map(|i| (i.wrapping_add(seed).wrapping_mul(2_654_435_761) >> 13) as u8)
                .collect()
        };
        let c = BITOP_CHUNK;
        let lens = [0, 1, c - 1, c, c + 1, 2 * c + 17];
        let ops = [
            BitOp::Not,
            BitOp::And,
            BitOp::Or,
            BitOp::Xor,
            BitOp::Diff,
            BitOp::Diff1,
            BitOp::AndOr,
            BitOp::One,
        ];
        for (k, &a) in lens.iter().enumerate() {
            for &b in &lens[k..] {
                // Three sources: the longest in each position in turn.
                let (x, y, z) = (bytes(a, 1), bytes(b, 2), bytes((a + b) / 2, 3));
                for order in [[&x, &y, &z], [&y, &z, &x], [&z, &x, &y]] {
                    let sources: Vec<&[u8]> = order.iter().map(|v| v.as_slice()).collect();
                    for op in ops {
                        let srcs = if op == BitOp::Not {
                            &sources[..1]
                        } else {
                            &sources[..]
                        };
                        let got = bitop(op, srcs);
                        let maxlen = srcs.iter().map(|s| s.len()).max().unwrap_or(0);
                        assert_eq!(got.len(), maxlen, "{op:?} {a} {b}");
                        for (i, g) in got.iter().enumerate() {
                            assert_eq!(*g, bitop_byte(op, srcs, i), "{op:?} {a} {b} byte {i}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn bitop_pads_shorter_sources_with_zeros() {
        let (a, b, c): (&[u8], &[u8], &[u8]) = (&[0xF0, 0xFF], &[0x3C], &[0x0F, 0x01]);
        assert_eq!(bitop(BitOp::And, &[a, b]), [0x30, 0]);
        assert_eq!(bitop(BitOp::Or, &[a, b]), [0xFC, 0xFF]);
        assert_eq!(bitop(BitOp::Xor, &[a, b, c]), [0xC3, 0xFE]);
        assert_eq!(bitop(BitOp::Not, &[b]), [0xC3]);
        assert_eq!(bitop(BitOp::Diff, &[a, b, c]), [0xC0, 0xFE]);
        assert_eq!(bitop(BitOp::Diff1, &[a, b, c]), [0x0F, 0x00]);
        assert_eq!(bitop(BitOp::AndOr, &[a, b, c]), [0x30, 0x01]);
        assert_eq!(bitop(BitOp::One, &[a, b, c]), [0xC3, 0xFE]);
        assert_eq!(bitop(BitOp::One, &[a, a]), [0, 0]);
        assert!(bitop(BitOp::Or, &[b"", b""]).is_empty());
    }

    #[test]
    fn field_types_parse_as_redis() {
        assert_eq!(
            FieldType::parse(b"i64"),
            Some(FieldType {
                signed: true,
                bits: 64
            })
        );
        assert!(FieldType::parse(b"u63").is_some());
        for bad in [
            &b"u64"[..],
            b"i65",
            b"i0",
            b"I8",
            b"u",
            b"",
            b"u+8",
            b"u08",
            b"x8",
        ] {
            assert_eq!(FieldType::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn overflow_policies_at_the_type_edges() {
        let i8t = FieldType::parse(b"i8").expect("valid");
        let u8t = FieldType::parse(b"u8").expect("valid");
        let i62t = FieldType::parse(b"i62").expect("valid");
        let i64t = FieldType::parse(b"i64").expect("valid");
        assert_eq!(i8t.incr(127, 1, Overflow::Wrap), Some(-128));
        assert_eq!(i8t.incr(127, 1, Overflow::Sat), Some(127));
        assert_eq!(i8t.incr(-128, -1, Overflow::Sat), Some(-128));
        assert_eq!(i8t.incr(-128, -1, Overflow::Wrap), Some(127));
        assert_eq!(i8t.set(128, Overflow::Fail), None);
        assert_eq!(i8t.set(-200, Overflow::Sat), Some(-128));
        assert_eq!(u8t.incr(255, 1, Overflow::Wrap), Some(0));
        assert_eq!(u8t.incr(0, -1, Overflow::Wrap), Some(255));
        assert_eq!(u8t.incr(0, -1, Overflow::Sat), Some(0));
        assert_eq!(u8t.set(-1, Overflow::Sat), Some(255));
        assert_eq!(i64t.incr(i64::MAX, 1, Overflow::Wrap), Some(i64::MIN));
        assert_eq!(i64t.incr(i64::MAX, 1, Overflow::Sat), Some(i64::MAX));
        assert_eq!(i64t.incr(i64::MIN, -1, Overflow::Sat), Some(i64::MIN));
        assert_eq!(i64t.set(i64::MIN, Overflow::Fail), Some(i64::MIN));
        // Redis's `max - value` wraps for a very negative SET: it saturates upwards.
        assert_eq!(
            i62t.set(-8870478103543957516, Overflow::Sat),
            Some((1 << 61) - 1)
        );
        assert_eq!(i62t.set(-(1 << 62), Overflow::Sat), Some(-(1 << 61)));
    }

    #[test]
    fn fields_straddle_bytes_and_keep_their_neighbours() {
        let mut b = vec![0xFFu8; 10];
        set_field(&mut b, 5, 64, 0);
        assert_eq!(b, [0xF8, 0, 0, 0, 0, 0, 0, 0, 0x07, 0xFF]);
        set_field(&mut b, 5, 64, u64::MAX);
        assert_eq!(b, [0xFF; 10]);
        let mut b = vec![0u8; 2];
        set_field(&mut b, 4, 8, 0xAB);
        assert_eq!(b, [0x0A, 0xB0]);
        assert_eq!(get_unsigned(&b, 4, 8), 0xAB);
        assert_eq!(get_signed(&b, 4, 8), 0xABu8 as i8 as i64);
        assert_eq!(get_unsigned(&b, 12, 8), 0);
        assert_eq!(get_unsigned(&b, 1000, 8), 0);
    }

    mod prop {
        use super::super::*;
        use proptest::prelude::*;

        #[derive(Debug, Clone)]
        enum Op {
            Set(bool, u32, u64, i64, u8),
            Incr(bool, u32, u64, i64, u8),
        }

        fn ty() -> impl Strategy<Value = (bool, u32)> {
            prop_oneof![(Just(true), 1u32..=64), (Just(false), 1u32..=63)]
        }

        fn op() -> impl Strategy<Value = Op> {
            let value = prop_oneof![any::<i64>(), -300i64..300, Just(i64::MIN), Just(i64::MAX)];
            (ty(), 0u64..100, value, 0u8..3, any::<bool>()).prop_map(
                |((s, b), off, v, pol, incr)| {
                    if incr {
                        Op::Incr(s, b, off, v, pol)
                    } else {
                        Op::Set(s, b, off, v, pol)
                    }
                },
            )
        }

        /// The model: a vector of bools, one per bit, and arbitrary-precision
        /// arithmetic with the wrap/saturate rules spelt out bit by bit.
        fn model_get(bits: &[bool], signed: bool, width: u32, off: u64) -> i128 {
            let mut v: i128 = 0;
            for i in 0..u64::from(width) {
                let b = bits.get((off + i) as usize).copied().unwrap_or(false);
                v = v * 2 + i128::from(b);
            }
            if signed && v >= 1i128 << (width - 1) {
                v -= 1i128 << width;
            }
            v
        }

        fn model_store(signed: bool, width: u32, v: i128, pol: u8, set: bool) -> Option<i128> {
            let (min, max) = if signed {
                (-(1i128 << (width - 1)), (1i128 << (width - 1)) - 1)
            } else {
                (0, (1i128 << width) - 1)
            };
            if v >= min && v <= max {
                return Some(v);
            }
            // Redis computes `max - value` in 64 bits: for a signed SET so far below the
            // minimum that it passes i64::MAX, the value counts as above the maximum.
            let above = v > max || (signed && set && max - v > i128::from(i64::MAX));
            match pol {
                0 => {
                    let m = v.rem_euclid(1i128 << width);
                    Some(if signed && m > max {
                        m - (1i128 << width)
                    } else {
                        m
                    })
                }
                1 => Some(if above { max } else { min }),
                _ => None,
            }
        }

        proptest! {
            #[test]
            fn bitfield_matches_a_bit_vector(ops in proptest::collection::vec(op(), 1..40)) {
                let mut bytes = vec![0u8; 21];
                let mut model = vec![false; 168];
                for op in ops {
                    let (signed, width, off, v, pol, incr) = match op {
                        Op::Set(s, b, o, v, p) => (s, b, o, v, p, false),
                        Op::Incr(s, b, o, v, p) => (s, b, o, v, p, true),
                    };
                    let t = FieldType { signed, bits: width };
                    let policy = [Overflow::Wrap, Overflow::Sat, Overflow::Fail][pol as usize];
                    let old = t.get(&bytes, off);
                    prop_assert_eq!(i128::from(old), model_get(&model, signed, width, off));
                    let (exact, stored) = if incr {
                        (i128::from(old) + i128::from(v), t.incr(old, v, policy))
                    } else {
                        let exact = if signed { i128::from(v) } else { i128::from(v as u64) };
                        (exact, t.set(v, policy))
                    };
                    let want = model_store(signed, width, exact, pol, !incr);
                    prop_assert_eq!(stored.map(i128::from), want);
                    if let Some(s) = stored {
                        set_field(&mut bytes, off, width, s as u64);
                        for i in 0..u64::from(width) {
                            model[(off + i) as usize] =
                                (s as u64) >> (u64::from(width) - 1 - i) & 1 == 1;
                        }
                    }
                    for (i, &b) in model.iter().enumerate() {
                        prop_assert_eq!(get_bit(&bytes, i as u64), b);
                    }
                }
            }
        }
    }
}
