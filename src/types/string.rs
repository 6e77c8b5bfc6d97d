//! String values.
//!
//! (Initial representation: the bytes as they are. The strings family replaces this
//! with Redis's three encodings — `int`, `embstr`, `raw` — and their rules.)

use crate::short_bytes::ShortBytes;
use std::borrow::Cow;

/// A string value: inline up to 22 bytes, boxed beyond (24 bytes either way).
#[derive(Debug, Clone)]
pub struct StringValue(ShortBytes);

impl StringValue {
    /// A string holding a copy of `bytes`.
    pub fn new(bytes: &[u8]) -> StringValue {
        StringValue(ShortBytes::new(bytes))
    }

    /// The string's bytes.
    pub fn to_bytes(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.0)
    }

    /// Length in bytes (`STRLEN`).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True for the empty string.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `OBJECT ENCODING`'s name for it.
    pub fn encoding(&self) -> &'static str {
        if self.0.len() <= 44 { "embstr" } else { "raw" }
    }

    /// Bytes allocated outside the value itself.
    pub fn heap_size(&self) -> usize {
        if self.0.len() > ShortBytes::INLINE {
            self.0.len()
        } else {
            0
        }
    }
}
