//! Redis's zipmap encoding (`zipmap.c`, Redis 2.0–2.4 hashes), as RDB type 9 holds it.
//! Read only.
//!
//! ```text
//! <zmlen: u8> ( <len> <field> <len> <free: u8> <value> <free bytes> )* 0xFF
//!   zmlen  pairs; 254 = "too many, count them"
//!   len    0..=253: 1 byte; 254 then u32 (host order: little-endian on every
//!          machine that wrote one in practice); 255 is the end byte
//!   free   unused bytes after the value, skipped
//! ```
//!
//! [`pairs`] checks what Redis's `zipmapValidateIntegrity` checks with deep
//! sanitization: the end byte, every length and skip inside the bytes, at least one
//! pair, and zmlen (unless 254) equal to the pairs found.

use super::packed::{DecodeError, bad};

/// A (field, value) pair borrowed from the zipmap.
pub type Pair<'a> = (&'a [u8], &'a [u8]);

/// The (field, value) pairs of a zipmap, in order.
pub fn pairs(zm: &[u8]) -> Result<Vec<Pair<'_>>, DecodeError> {
    if zm.len() < 2 || zm[zm.len() - 1] != 0xFF {
        return bad(0, "zipmap without its end byte");
    }
    // Everything read must lie before the end byte.
    let end = zm.len() - 1;
    let take = |p: usize, n: usize| -> Option<&[u8]> {
        let to = p.checked_add(n)?;
        (to <= end).then(|| &zm[p..to])
    };
    let len_at = |p: usize| -> Option<(usize, usize)> {
        match *take(p, 1)?.first()? {
            254 => {
                let d = take(p + 1, 4)?;
                Some((u32::from_le_bytes([d[0], d[1], d[2], d[3]]) as usize, p + 5))
            }
            255 => None,
            n => Some((usize::from(n), p + 1)),
        }
    };
    let mut out = Vec::new();
    let mut p = 1;
    while p < end {
        let at = p;
        let Some((flen, q)) = len_at(p) else {
            return bad(at, "zipmap field length runs past the end");
        };
        let Some(field) = take(q, flen) else {
            return bad(at, "zipmap field runs past the end");
        };
        let Some((vlen, q)) = len_at(q + flen) else {
            return bad(at, "zipmap value length runs past the end");
        };
        let Some(&free) = take(q, 1).and_then(|d| d.first()) else {
            return bad(at, "zipmap free byte runs past the end");
        };
        let Some(value) = take(q + 1, vlen) else {
            return bad(at, "zipmap value runs past the end");
        };
        p = q + 1 + vlen + usize::from(free);
        if p > end {
            return bad(at, "zipmap free space runs past the end");
        }
        out.push((field, value));
    }
    if out.is_empty() {
        return bad(0, "empty zipmap");
    }
    if zm[0] != 254 && usize::from(zm[0]) != out.len() {
        return bad(0, "zipmap count disagrees with its pairs");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_in_zipmap_c() {
        let zm = b"\x02\x03foo\x03\x00bar\x05hello\x05\x00world\xff";
        assert_eq!(
            pairs(zm),
            Ok(vec![(&b"foo"[..], &b"bar"[..]), (b"hello", b"world")])
        );
        // With free bytes after a value and a big length.
        let mut zm = vec![1, 1, b'f', 254];
        zm.extend_from_slice(&300u32.to_le_bytes());
        zm.push(2);
        zm.extend_from_slice(&[b'v'; 300]);
        zm.extend_from_slice(&[0, 0, 0xFF]);
        let p = pairs(&zm).expect("valid");
        assert_eq!(p[0].1.len(), 300);
    }

    #[test]
    fn truncations_and_flips_never_panic() {
        let zm = b"\x02\x03foo\x03\x01bar!\x05hello\x05\x00world\xff";
        for cut in 0..zm.len() {
            assert!(pairs(&zm[..cut]).is_err(), "cut {cut}");
        }
        for i in 0..zm.len() {
            for bit in 0..8 {
                let mut b = zm.to_vec();
                b[i] ^= 1 << bit;
                let _ = pairs(&b);
            }
        }
        assert!(pairs(b"\x00\xff").is_err());
        assert!(pairs(b"\x03\x01a\x01\x00b\xff").is_err());
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let _ = pairs(&b);
        }
    }
}
