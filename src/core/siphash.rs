//! SipHash-1-2, the keyspace's hash: the function Redis hashes its keys with
//! (`siphash.c`, one compression round per 8-byte word and two finalisation rounds),
//! keyed at random so that clients cannot choose keys that collide.
//!
//! std's `RandomState` is SipHash-1-3 behind the streaming `Hasher` interface, which
//! also hashes a length prefix before the bytes: for the short keys of a keyspace that
//! is about twice the work of this one-shot function, on every command that names a
//! key. SipHash-1-2 keeps Redis's margin against hash flooding (it is what Redis ships);
//! the tables of the types' members hash with foldhash (`types/table.rs`).
//!
//! ```text
//!  message: m0 m1 .. m(n-1) | tail
//!           8-byte little-endian words, then the last 0..7 bytes with the
//!           message length (mod 256) in the top byte:
//!           +----------------+--------------------------+
//!           | len mod 256    | 0 | .. | 0 | tail bytes  |   (little-endian u64)
//!           +----------------+--------------------------+
//!  state:   v0..v3 = key words XOR "somepseudorandomlygeneratedbytes"
//!  per word: v3 ^= m; C rounds; v0 ^= m          (C = 1)
//!  finish:   v2 ^= 0xff; D rounds; v0^v1^v2^v3   (D = 2)
//! ```

use std::hash::{BuildHasher, Hasher};

/// A 128-bit SipHash key, fixed for the life of the table set that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SipKey {
    k0: u64,
    k1: u64,
}

impl SipKey {
    /// A key from the given words (tests; [`SipKey::random`] otherwise).
    pub const fn new(k0: u64, k1: u64) -> Self {
        SipKey { k0, k1 }
    }

    /// A fresh random key, drawn from std's per-thread random keys (each call gives
    /// another one, as `RandomState::new` does).
    pub fn random() -> Self {
        let state = std::collections::hash_map::RandomState::new();
        let word = |salt: u64| {
            let mut h = state.build_hasher();
            h.write_u64(salt);
            h.finish()
        };
        SipKey {
            k0: word(0x5195_0001),
            k1: word(0x5195_0002),
        }
    }

    /// SipHash-1-2 of `data` under this key.
    #[inline]
    pub fn hash(&self, data: &[u8]) -> u64 {
        sip::<1, 2>(self.k0, self.k1, data)
    }
}

/// The state words.
struct State {
    v0: u64,
    v1: u64,
    v2: u64,
    v3: u64,
}

impl State {
    /// One SipRound.
    #[inline(always)]
    fn round(&mut self) {
        self.v0 = self.v0.wrapping_add(self.v1);
        self.v1 = self.v1.rotate_left(13);
        self.v1 ^= self.v0;
        self.v0 = self.v0.rotate_left(32);
        self.v2 = self.v2.wrapping_add(self.v3);
        self.v3 = self.v3.rotate_left(16);
        self.v3 ^= self.v2;
        self.v0 = self.v0.wrapping_add(self.v3);
        self.v3 = self.v3.rotate_left(21);
        self.v3 ^= self.v0;
        self.v2 = self.v2.wrapping_add(self.v1);
        self.v1 = self.v1.rotate_left(17);
        self.v1 ^= self.v2;
        self.v2 = self.v2.rotate_left(32);
    }

    /// Absorbs one message word with `C` rounds.
    #[inline(always)]
    fn compress<const C: usize>(&mut self, m: u64) {
        self.v3 ^= m;
        for _ in 0..C {
            self.round();
        }
        self.v0 ^= m;
    }
}

/// SipHash-C-D of `data` under the key `(k0, k1)`.
#[inline]
fn sip<const C: usize, const D: usize>(k0: u64, k1: u64, data: &[u8]) -> u64 {
    let mut s = State {
        v0: k0 ^ 0x736f_6d65_7073_6575,
        v1: k1 ^ 0x646f_7261_6e64_6f6d,
        v2: k0 ^ 0x6c79_6765_6e65_7261,
        v3: k1 ^ 0x7465_6462_7974_6573,
    };
    let (words, tail) = data.as_chunks::<8>();
    for word in words {
        s.compress::<C>(u64::from_le_bytes(*word));
    }
    let mut last = (data.len() as u64) << 56;
    for (i, &b) in tail.iter().enumerate() {
        last |= u64::from(b) << (8 * i);
    }
    s.compress::<C>(last);
    s.v2 ^= 0xff;
    for _ in 0..D {
        s.round();
    }
    s.v0 ^ s.v1 ^ s.v2 ^ s.v3
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference key of the SipHash paper's test vectors: bytes 00..0f.
    fn paper_key() -> (u64, u64) {
        (0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908)
    }

    #[test]
    fn siphash_2_4_matches_the_paper_vectors() {
        // The same round function and framing with 2/4 rounds is SipHash-2-4, whose
        // published vectors pin both: messages 00, 00 01, ... under key 00..0f.
        let (k0, k1) = paper_key();
        assert_eq!(sip::<2, 4>(k0, k1, &[]), 0x726f_db47_dd0e_0e31);
        assert_eq!(sip::<2, 4>(k0, k1, &[0]), 0x74f8_39c5_93dc_67fd);
    }

    #[test]
    #[allow(deprecated)]
    fn siphash_2_4_matches_std_at_every_length() {
        // std's (deprecated, still shipped) SipHasher is SipHash-2-4 over raw bytes:
        // an oracle for every tail length and several words.
        let (k0, k1) = (0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210);
        let data: Vec<u8> = (0..100u8).map(|b| b.wrapping_mul(37)).collect();
        for len in 0..data.len() {
            let mut h = std::hash::SipHasher::new_with_keys(k0, k1);
            h.write(&data[..len]);
            assert_eq!(
                sip::<2, 4>(k0, k1, &data[..len]),
                h.finish(),
                "length {len}"
            );
        }
    }

    #[test]
    fn siphash_1_2_differs_by_key_and_by_byte() {
        let a = SipKey::new(1, 2);
        let b = SipKey::new(1, 3);
        assert_ne!(a.hash(b"key"), b.hash(b"key"));
        assert_ne!(a.hash(b"key"), a.hash(b"kez"));
        // The length is part of the input: a trailing zero byte changes the hash.
        assert_ne!(a.hash(b"key"), a.hash(b"key\0"));
        assert_eq!(a.hash(b"key"), a.hash(b"key"));
        assert_ne!(SipKey::random(), SipKey::random());
    }
}
