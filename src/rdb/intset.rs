//! Redis's intset encoding (`intset.c`), as RDB type 11 (a set of integers) holds it.
//!
//! ```text
//! +------------+------------+-----------+-----------+-----+
//! | encoding   | length     | value 0   | value 1   | ... |
//! | u32 LE     | u32 LE     | enc bytes | enc bytes |     |
//! +------------+------------+-----------+-----------+-----+
//!  encoding = bytes per value: 2 (i16), 4 (i32) or 8 (i64); values little-endian,
//!  strictly ascending
//! ```
//!
//! [`values`] checks what Redis's `intsetValidateIntegrity` checks with deep
//! sanitization: a known encoding, the size exactly header + length × encoding, at
//! least one value, and values strictly ascending (so no duplicates).

/// Why an intset was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsError(pub &'static str);

/// The values of an intset, ascending.
pub fn values(buf: &[u8]) -> Result<Vec<i64>, IsError> {
    let Some((head, body)) = buf.split_first_chunk::<8>() else {
        return Err(IsError("intset shorter than its header"));
    };
    let enc = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
    if !matches!(enc, 2 | 4 | 8) {
        return Err(IsError("intset with an unknown encoding"));
    }
    if len == 0 {
        return Err(IsError("empty intset"));
    }
    if len.checked_mul(enc) != Some(body.len()) {
        return Err(IsError("intset length disagrees with its size"));
    }
    let mut out = Vec::with_capacity(len);
    for c in body.chunks_exact(enc) {
        let v = match *c {
            [a, b] => i64::from(i16::from_le_bytes([a, b])),
            [a, b, c, d] => i64::from(i32::from_le_bytes([a, b, c, d])),
            [a, b, c, d, e, f, g, h] => i64::from_le_bytes([a, b, c, d, e, f, g, h]),
            _ => return Err(IsError("intset with an unknown encoding")),
        };
        if out.last().is_some_and(|&p| p >= v) {
            return Err(IsError("intset values not strictly ascending"));
        }
        out.push(v);
    }
    Ok(out)
}

/// An intset of `values` (ascending, unique) in the smallest encoding, for tests.
#[cfg(test)]
pub fn build(values: &[i64]) -> Vec<u8> {
    let enc: usize = if values.iter().all(|&v| i16::try_from(v).is_ok()) {
        2
    } else if values.iter().all(|&v| i32::try_from(v).is_ok()) {
        4
    } else {
        8
    };
    let mut out = (enc as u32).to_le_bytes().to_vec();
    out.extend_from_slice(&(values.len() as u32).to_le_bytes());
    for &v in values {
        out.extend_from_slice(&v.to_le_bytes()[..enc]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn refusals() {
        assert!(values(&[]).is_err());
        assert!(values(&build(&[])).is_err());
        let mut b = build(&[1, 2]);
        b[0] = 3;
        assert!(values(&b).is_err());
        let b = build(&[2, 1]);
        assert!(values(&b).is_err());
        let b = build(&[1, 1]);
        assert!(values(&b).is_err());
        let b = build(&[1, 2]);
        assert!(values(&b[..b.len() - 1]).is_err());
    }

    proptest! {
        #[test]
        fn round_trips(set in proptest::collection::btree_set(any::<i64>(), 1..100)) {
            let v: Vec<i64> = set.into_iter().collect();
            prop_assert_eq!(values(&build(&v)), Ok(v));
        }

        #[test]
        fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..100)) {
            let _ = values(&b);
        }
    }
}
