//! A byte string that lives inside its owner when short: the keyspace's keys (in their
//! dict slot, core/dict.rs) and IDMP iids (in their ring slot, stream/idmp.rs). Redis 8
//! embeds keys in its dict entries the same way.
//!
//! ```text
//!  inline (len <= 22):  | tag | len | 22 bytes, zero-padded |   24 bytes, no allocation
//!  boxed:               | tag | ... | Box<[u8]>: ptr, len   |   24 bytes + the bytes
//! ```
//!
//! Either way a copy: never a slice of a client's read buffer, which it would keep alive.

use std::fmt;
use std::ops::Deref;

/// Bytes kept inline up to [`ShortBytes::INLINE`], boxed beyond; 24 bytes either way.
#[derive(Clone)]
pub struct ShortBytes(Repr);

#[derive(Clone)]
enum Repr {
    /// `data[..len]`, the rest zero.
    Inline {
        len: u8,
        data: [u8; ShortBytes::INLINE],
    },
    /// More than [`ShortBytes::INLINE`] bytes.
    Boxed(Box<[u8]>),
}

impl ShortBytes {
    /// The most bytes kept inline: as many as fit beside the tag and the length in the
    /// 24 bytes the boxed form takes anyway.
    pub const INLINE: usize = 22;

    /// A copy of `bytes`.
    #[inline]
    pub fn new(bytes: &[u8]) -> ShortBytes {
        ShortBytes(if bytes.len() <= Self::INLINE {
            let mut data = [0; Self::INLINE];
            data[..bytes.len()].copy_from_slice(bytes);
            Repr::Inline {
                len: bytes.len() as u8,
                data,
            }
        } else {
            Repr::Boxed(bytes.into())
        })
    }

    /// Bytes allocated apart from the value itself: 0 inline, the length when boxed.
    pub fn heap_len(&self) -> usize {
        match &self.0 {
            Repr::Inline { .. } => 0,
            Repr::Boxed(b) => b.len(),
        }
    }
}

impl Deref for ShortBytes {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, data } => &data[..usize::from(*len)],
            Repr::Boxed(b) => b,
        }
    }
}

impl fmt::Debug for ShortBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::ShortBytes;

    #[test]
    fn short_and_long_bytes_read_back_in_24_bytes() {
        assert_eq!(std::mem::size_of::<ShortBytes>(), 24);
        for len in [0, 1, 21, 22, 23, 100] {
            let bytes: Vec<u8> = (0..len as u8).collect();
            let s = ShortBytes::new(&bytes);
            assert_eq!(&*s, &bytes[..], "{len}");
            assert_eq!(s.heap_len(), if len > 22 { len } else { 0 }, "{len}");
        }
    }
}
