//! SHA-1 (FIPS 180-4), for script names: `EVAL` caches a script under the lower-case hex
//! digest of its body, as Redis does, and `redis.sha1hex` returns the same digest.
//!
//! The message is padded with `0x80`, zeros and its bit length (big-endian `u64`) to a
//! multiple of 64 bytes; each 64-byte block is expanded to 80 words and mixed into the
//! five-word state, which is the digest.

/// The 20-byte SHA-1 digest of `data`.
pub fn digest(data: &[u8]) -> [u8; 20] {
    let mut h: [u32; 5] = [
        0x6745_2301,
        0xEFCD_AB89,
        0x98BA_DCFE,
        0x1032_5476,
        0xC3D2_E1F0,
    ];
    let bit_len = (data.len() as u64).wrapping_mul(8);
    let mut tail = Vec::with_capacity(128);
    let full = data.len() / 64 * 64;
    tail.extend_from_slice(&data[full..]);
    tail.push(0x80);
    while tail.len() % 64 != 56 {
        tail.push(0);
    }
    tail.extend_from_slice(&bit_len.to_be_bytes());
    for block in data[..full].chunks_exact(64).chain(tail.chunks_exact(64)) {
        compress(&mut h, block);
    }
    let mut out = [0u8; 20];
    for (i, word) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&word.to_be_bytes());
    }
    out
}

fn compress(h: &mut [u32; 5], block: &[u8]) {
    let mut w = [0u32; 80];
    for (i, chunk) in block.chunks_exact(4).enumerate() {
        w[i] = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
    }
    for i in 16..80 {
        w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
    }
    let [mut a, mut b, mut c, mut d, mut e] = *h;
    for (i, word) in w.iter().enumerate() {
        let (f, k) = match i {
            0..=19 => ((b & c) | (!b & d), 0x5A82_7999),
            20..=39 => (b ^ c ^ d, 0x6ED9_EBA1),
            40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
            _ => (b ^ c ^ d, 0xCA62_C1D6),
        };
        let t = a
            .rotate_left(5)
            .wrapping_add(f)
            .wrapping_add(e)
            .wrapping_add(k)
            .wrapping_add(*word);
        e = d;
        d = c;
        c = b.rotate_left(30);
        b = a;
        a = t;
    }
    for (slot, v) in h.iter_mut().zip([a, b, c, d, e]) {
        *slot = slot.wrapping_add(v);
    }
}

/// The digest as 40 lower-case hex characters (Redis's `sha1hex`).
pub fn hex(data: &[u8]) -> [u8; 40] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 40];
    for (i, byte) in digest(data).iter().enumerate() {
        out[i * 2] = HEX[usize::from(byte >> 4)];
        out[i * 2 + 1] = HEX[usize::from(byte & 15)];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::hex;

    #[test]
    fn known_digests() {
        assert_eq!(&hex(b""), b"da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(&hex(b"abc"), b"a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(&hex(b"123"), b"40bd001563085fc35165329ea1ff5c5ecbdbbeef");
        // The EVAL of `return 'loaded'` that Redis names b534286061d4b9e4026607613b95c06c06015ae8.
        assert_eq!(
            &hex(b"return 'loaded'"),
            b"b534286061d4b9e4026607613b95c06c06015ae8"
        );
        let long = vec![b'a'; 1000];
        assert_eq!(&hex(&long), b"291e9a6c66994949b57ba5e650361e98fc36b1ba");
    }
}
