//! Hash values.
//!
//! (Initial representation: a map. The hashes family replaces it with a packed array
//! for small hashes and a hash table beyond `hash-max-listpack-entries`/`-value`.)

use super::Thresholds;
use std::borrow::Cow;
use std::collections::HashMap;

/// A map of fields to values.
#[derive(Debug, Clone, Default)]
pub struct Hash {
    map: HashMap<Box<[u8]>, Box<[u8]>>,
}

impl Hash {
    /// An empty hash.
    pub fn new() -> Hash {
        Hash::default()
    }

    /// Number of fields (`HLEN`).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when empty (an empty hash is never stored in the keyspace).
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Sets `field` to `value`; true if the field is new.
    pub fn insert(&mut self, field: &[u8], value: &[u8], _t: &Thresholds) -> bool {
        self.map.insert(field.into(), value.into()).is_none()
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<Cow<'_, [u8]>> {
        self.map.get(field).map(|v| Cow::Borrowed(&v[..]))
    }

    /// The (field, value) pairs, in the hash's own order.
    pub fn iter(&self) -> impl Iterator<Item = (Cow<'_, [u8]>, Cow<'_, [u8]>)> {
        self.map
            .iter()
            .map(|(f, v)| (Cow::Borrowed(&f[..]), Cow::Borrowed(&v[..])))
    }

    /// `OBJECT ENCODING`'s name for it.
    pub fn encoding(&self) -> &'static str {
        "hashtable"
    }

    /// Bytes allocated for the fields and values.
    pub fn heap_size(&self) -> usize {
        self.map.capacity() * 40
            + self
                .map
                .iter()
                .map(|(f, v)| f.len() + v.len())
                .sum::<usize>()
    }
}
