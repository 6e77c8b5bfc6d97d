//! CRC-64/Jones, the checksum of Redis's RDB files and DUMP payloads (Redis `crc64.c`).
//!
//! Parameters (the "Jones" polynomial, as the CRC catalogue calls it `CRC-64/REDIS`):
//!
//! ```text
//! width 64   poly 0xad93d23594c935a9   init 0   refin/refout true   xorout 0
//! check ("123456789") = 0xe9c6d914c4b8d9ca
//! ```
//!
//! Reflected, so the table is built from the bit-reversed polynomial
//! `0x95ac9329ac4bc9b5` and the register shifts right. Eight tables ("slice-by-8")
//! let the loop consume eight bytes per step; an RDB import checksums the whole file,
//! so this runs at memory speed rather than a byte at a time.
//!
//! This is not the CRC-64/XZ that streamd's own files use (`crc64fast`).

/// The reflected Jones polynomial.
const POLY_REFLECTED: u64 = 0x95ac_9329_ac4b_c9b5;

/// `TABLES[0]` is the classic byte table; `TABLES[k][b]` is the CRC of byte `b`
/// followed by `k` zero bytes.
static TABLES: [[u64; 256]; 8] = build_tables();

const fn build_tables() -> [[u64; 256]; 8] {
    let mut t = [[0u64; 256]; 8];
    let mut b = 0;
    while b < 256 {
        let mut crc = b as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ POLY_REFLECTED
            } else {
                crc >> 1
            };
            bit += 1;
        }
        t[0][b] = crc;
        b += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut b = 0;
        while b < 256 {
            let prev = t[k - 1][b];
            t[k][b] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            b += 1;
        }
        k += 1;
    }
    t
}

/// Continues a CRC-64/Jones over `data` (start with `crc = 0`), as Redis's
/// `crc64(crc, p, len)`.
pub fn update(mut crc: u64, data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        let v = crc ^ u64::from_le_bytes(w);
        crc = TABLES[7][(v & 0xff) as usize]
            ^ TABLES[6][((v >> 8) & 0xff) as usize]
            ^ TABLES[5][((v >> 16) & 0xff) as usize]
            ^ TABLES[4][((v >> 24) & 0xff) as usize]
            ^ TABLES[3][((v >> 32) & 0xff) as usize]
            ^ TABLES[2][((v >> 40) & 0xff) as usize]
            ^ TABLES[1][((v >> 48) & 0xff) as usize]
            ^ TABLES[0][(v >> 56) as usize];
    }
    for &b in chunks.remainder() {
        crc = TABLES[0][((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

/// CRC-64/Jones of `data`.
pub fn crc64(data: &[u8]) -> u64 {
    update(0, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit-at-a-time reference, straight from the parameters.
    fn reference(data: &[u8]) -> u64 {
        let mut crc = 0u64;
        for &b in data {
            crc ^= u64::from(b);
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    (crc >> 1) ^ POLY_REFLECTED
                } else {
                    crc >> 1
                };
            }
        }
        crc
    }

    #[test]
    fn check_value_is_the_catalogue_one() {
        assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn slice_by_8_agrees_with_bitwise_for_every_length_and_split() {
        let data: Vec<u8> = (0..200u32).map(|i| (i * 37 + 11) as u8).collect();
        for len in 0..data.len() {
            let d = &data[..len];
            assert_eq!(crc64(d), reference(d), "len {len}");
            let mid = len / 3;
            assert_eq!(update(update(0, &d[..mid]), &d[mid..]), reference(d));
        }
    }
}
