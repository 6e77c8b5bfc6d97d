//! A byte string that lives inside its owner when short: hash and set elements (in their
//! table slot, types/hash.rs and types/set.rs), pub/sub channel names (pubsub/mod.rs),
//! IDMP iids (in their ring slot, stream/idmp.rs) and the radix tree's node bytes and
//! keys (stream/rax.rs, which also edits them in place). The keyspace's keys were one too; they now sit at the end of
//! their dict slot's allocation, sized to the key (core/dict.rs).
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

    /// No bytes.
    pub const EMPTY: ShortBytes = ShortBytes(Repr::Inline {
        len: 0,
        data: [0; Self::INLINE],
    });

    /// `a` followed by `b`.
    #[inline]
    pub fn concat(a: &[u8], b: &[u8]) -> ShortBytes {
        ShortBytes(if a.len() + b.len() <= Self::INLINE {
            let mut data = [0; Self::INLINE];
            data[..a.len()].copy_from_slice(a);
            data[a.len()..a.len() + b.len()].copy_from_slice(b);
            Repr::Inline {
                len: (a.len() + b.len()) as u8,
                data,
            }
        } else {
            Repr::Boxed([a, b].concat().into_boxed_slice())
        })
    }

    /// Inserts `byte` at `k` (the bytes move to the box once they no longer fit).
    pub fn insert(&mut self, k: usize, byte: u8) {
        match &mut self.0 {
            Repr::Inline { len, data } if usize::from(*len) < Self::INLINE => {
                data.copy_within(k..usize::from(*len), k + 1);
                data[k] = byte;
                *len += 1;
            }
            Repr::Inline { .. } => {
                self.0 = Repr::Boxed([&self[..k], &[byte], &self[k..]].concat().into());
            }
            Repr::Boxed(b) => {
                // Growing by exactly one goes through `realloc`, which can often extend
                // the block in place.
                let mut v = std::mem::take(b).into_vec();
                v.reserve_exact(1);
                v.insert(k, byte);
                *b = v.into_boxed_slice();
            }
        }
    }

    /// Removes the byte at `k` (back inline once the rest fits).
    pub fn remove(&mut self, k: usize) {
        match &mut self.0 {
            Repr::Inline { len, data } => {
                data.copy_within(k + 1..usize::from(*len), k);
                *len -= 1;
                data[usize::from(*len)] = 0;
            }
            Repr::Boxed(b) if b.len() - 1 <= Self::INLINE => {
                *self = ShortBytes::concat(&b[..k], &b[k + 1..]);
            }
            Repr::Boxed(b) => {
                let mut v = std::mem::take(b).into_vec();
                v.remove(k);
                *b = v.into_boxed_slice();
            }
        }
    }

    /// True when the bytes are in the value itself. A given byte string always takes
    /// the same form: inline exactly when it has at most [`ShortBytes::INLINE`] bytes.
    pub fn is_inline(&self) -> bool {
        matches!(self.0, Repr::Inline { .. })
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

impl PartialEq for ShortBytes {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for ShortBytes {}

/// Hashes as the bytes do, so tables keyed by `ShortBytes` are searched with a `&[u8]`.
impl std::hash::Hash for ShortBytes {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (**self).hash(state)
    }
}

impl std::borrow::Borrow<[u8]> for ShortBytes {
    fn borrow(&self) -> &[u8] {
        self
    }
}

impl Default for ShortBytes {
    fn default() -> Self {
        ShortBytes::EMPTY
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
    fn edits_keep_the_form_that_the_length_implies() {
        let mut model: Vec<u8> = Vec::new();
        let mut s = ShortBytes::default();
        for i in 0..30u8 {
            let k = usize::from(i) % (model.len() + 1);
            model.insert(k, i);
            s.insert(k, i);
            assert_eq!(&*s, &model[..]);
            assert_eq!(s.is_inline(), model.len() <= ShortBytes::INLINE);
        }
        while !model.is_empty() {
            let k = model.len() / 3;
            model.remove(k);
            s.remove(k);
            assert_eq!(&*s, &model[..]);
            assert_eq!(s.is_inline(), model.len() <= ShortBytes::INLINE);
        }
        let joined = ShortBytes::concat(&[1; 20], &[2; 3]);
        assert_eq!(&*joined, &[[1u8; 20].as_slice(), &[2; 3]].concat()[..]);
        assert!(!joined.is_inline());
        assert!(ShortBytes::concat(&[1; 20], &[2; 2]).is_inline());
    }

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
