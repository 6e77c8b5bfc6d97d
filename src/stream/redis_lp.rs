//! Sizes in Redis's listpack encoding (`listpack.c` `lpEncodeGetType`,
//! `lpEncodeBacklen`), the one place that says them: stream nodes (`listpack.rs`) add
//! them up to roll over to a new node exactly where Redis does, and the RDB listpack
//! writer (`rdb/listpack.rs`, which draws the byte layout) writes back-lens of these
//! sizes.
//!
//! Every element is its encoding (first byte, length bytes, data) followed by a back-len
//! holding the encoding's size in 7-bit groups:
//!
//! ```text
//!  integer            0..=127: 1 byte; 13-bit: 2; 16-bit: 3; 24-bit: 4; 32-bit: 5; else 9
//!  string of len n    n < 64: 1 + n; n < 4096: 2 + n; else 5 + n
//!  back-len of l      l <= 127: 1; < 16383: 2; < 2^21 - 1: 3; < 2^28 - 1: 4; else 5
//! ```

/// Bytes of an empty Redis listpack: header (u32 total bytes + u16 element count) plus
/// the EOF byte.
pub const EMPTY: usize = 6 + 1;

/// Bytes of a Redis listpack element holding integer `v`, back-len included (every
/// integer encoding is at most 9 bytes, so its back-len is 1 byte).
pub fn int_size(v: i64) -> usize {
    let enc = match v {
        0..=127 => 1,
        -4096..=4095 => 2,
        -32768..=32767 => 3,
        -8_388_608..=8_388_607 => 4,
        -2_147_483_648..=2_147_483_647 => 5,
        _ => 9,
    };
    enc + 1
}

/// Bytes of a Redis listpack element holding a string of `len` bytes, back-len included.
pub fn str_size(len: usize) -> usize {
    let enc = if len < 64 {
        1 + len
    } else if len < 4096 {
        2 + len
    } else {
        5 + len
    };
    enc + backlen_size(enc)
}

/// Bytes of the back-len of an element whose encoding takes `l` bytes.
pub fn backlen_size(l: usize) -> usize {
    match l {
        0..=127 => 1,
        128..16383 => 2,
        16383..2_097_151 => 3,
        2_097_151..268_435_455 => 4,
        _ => 5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_listpack_encodings() {
        assert_eq!(str_size(63), 65);
        assert_eq!(str_size(64), 67);
        assert_eq!(str_size(125), 128);
        assert_eq!(str_size(126), 130);
        assert_eq!(str_size(4096), 4103);
        assert_eq!(int_size(-1), 3);
        assert_eq!(int_size(40000), 5);
        assert_eq!(int_size(-(1 << 40)), 10);
        assert_eq!(
            [127, 128, 16382, 16383, 2_097_150, 2_097_151, 268_435_455].map(backlen_size),
            [1, 2, 2, 3, 3, 4, 5]
        );
    }
}
