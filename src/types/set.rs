//! Set values.
//!
//! (Initial representation: a hash set. The sets family replaces it with Redis 7.0's
//! `intset` for small all-integer sets and a hash table otherwise.)

use super::Thresholds;
use std::borrow::Cow;
use std::collections::HashSet;

/// A set of byte strings.
#[derive(Debug, Clone, Default)]
pub struct Set {
    members: HashSet<Box<[u8]>>,
}

impl Set {
    /// An empty set.
    pub fn new() -> Set {
        Set::default()
    }

    /// Number of members (`SCARD`).
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// True when empty (an empty set is never stored in the keyspace).
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Adds `member`; true if it was not there.
    pub fn insert(&mut self, member: &[u8], _t: &Thresholds) -> bool {
        self.members.insert(member.into())
    }

    /// True if `member` is in the set.
    pub fn contains(&self, member: &[u8]) -> bool {
        self.members.contains(member)
    }

    /// The members, in the set's own order.
    pub fn iter(&self) -> impl Iterator<Item = Cow<'_, [u8]>> {
        self.members.iter().map(|m| Cow::Borrowed(&m[..]))
    }

    /// `OBJECT ENCODING`'s name for it.
    pub fn encoding(&self) -> &'static str {
        "hashtable"
    }

    /// Bytes allocated for the members.
    pub fn heap_size(&self) -> usize {
        self.members.capacity() * 24 + self.members.iter().map(|m| m.len()).sum::<usize>()
    }
}
