//! List values.
//!
//! (Initial representation: a deque of boxed elements. The lists family replaces it with
//! chunked packed nodes, Redis's quicklist, and `OBJECT ENCODING`'s `listpack` /
//! `quicklist` switch.)

use super::Thresholds;
use std::borrow::Cow;
use std::collections::VecDeque;

/// A list of byte strings.
#[derive(Debug, Clone, Default)]
pub struct List {
    items: VecDeque<Box<[u8]>>,
}

impl List {
    /// An empty list.
    pub fn new() -> List {
        List::default()
    }

    /// Number of elements (`LLEN`).
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when empty (an empty list is never stored in the keyspace).
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Appends `elem` at the tail (RPUSH).
    pub fn push_back(&mut self, elem: &[u8], _t: &Thresholds) {
        self.items.push_back(elem.into());
    }

    /// Prepends `elem` at the head (LPUSH).
    pub fn push_front(&mut self, elem: &[u8], _t: &Thresholds) {
        self.items.push_front(elem.into());
    }

    /// The elements, head to tail.
    pub fn iter(&self) -> impl Iterator<Item = Cow<'_, [u8]>> {
        self.items.iter().map(|e| Cow::Borrowed(&e[..]))
    }

    /// `OBJECT ENCODING`'s name for it.
    pub fn encoding(&self) -> &'static str {
        "quicklist"
    }

    /// Bytes allocated for the elements.
    pub fn heap_size(&self) -> usize {
        self.items.capacity() * 16 + self.items.iter().map(|e| e.len()).sum::<usize>()
    }
}
