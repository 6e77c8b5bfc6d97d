//! SHA-1, for script names: `EVAL` caches a script under the lower-case hex digest of its
//! body, as Redis does, and `redis.sha1hex` returns the same digest. The digest is
//! RustCrypto's `sha1`; this module gives it Redis's hex form and pins it with known
//! answers.

use sha1::Digest;

/// The 20-byte SHA-1 digest of `data`.
pub fn digest(data: &[u8]) -> [u8; 20] {
    sha1::Sha1::digest(data).into()
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
