//! PLACEHOLDER (being replaced by the real radix tree): the public API of `Rax<V>` over a
//! `BTreeMap`, so that the rest of the engine compiles against the final interface.

use std::collections::BTreeMap;
use std::ops::Bound;

/// Seek operators of [`Cursor::seek`] (Redis: `raxSeek` with `^ $ >= > <= < ==`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeekOp {
    /// The smallest key (`^`); the key argument is ignored.
    First,
    /// The largest key (`$`); the key argument is ignored.
    Last,
    /// Smallest key `>=` the argument.
    Ge,
    /// Smallest key `>` the argument.
    Gt,
    /// Largest key `<=` the argument.
    Le,
    /// Largest key `<` the argument.
    Lt,
    /// Exactly the argument.
    Eq,
}

/// A byte-keyed ordered map (radix tree).
#[derive(Debug, Clone)]
pub struct Rax<V> {
    map: BTreeMap<Vec<u8>, V>,
}

impl<V> Default for Rax<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V> Rax<V> {
    /// An empty tree.
    pub fn new() -> Self {
        Rax { map: BTreeMap::new() }
    }
    /// Number of keys.
    pub fn len(&self) -> usize {
        self.map.len()
    }
    /// True when there are no keys.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    /// Number of tree nodes (XINFO `radix-tree-nodes`).
    pub fn node_count(&self) -> usize {
        self.map.len() + 1
    }
    /// Inserts or replaces; returns the previous value.
    pub fn insert(&mut self, key: &[u8], value: V) -> Option<V> {
        self.map.insert(key.to_vec(), value)
    }
    /// Inserts only if absent; gives the value back if the key exists.
    pub fn try_insert(&mut self, key: &[u8], value: V) -> Result<(), V> {
        if self.map.contains_key(key) {
            Err(value)
        } else {
            self.map.insert(key.to_vec(), value);
            Ok(())
        }
    }
    /// The value at `key`.
    pub fn get(&self, key: &[u8]) -> Option<&V> {
        self.map.get(key)
    }
    /// The value at `key`, mutable.
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        self.map.get_mut(key)
    }
    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: &[u8]) -> Option<V> {
        self.map.remove(key)
    }
    /// A cursor, unpositioned until [`Cursor::seek`].
    pub fn cursor(&self) -> Cursor<'_, V> {
        Cursor { rax: self, pending: None, key: Vec::new(), done: true }
    }
    /// The smallest key and its value.
    pub fn first(&self) -> Option<(&[u8], &V)> {
        self.map.iter().next().map(|(k, v)| (k.as_slice(), v))
    }
    /// The largest key and its value.
    pub fn last(&self) -> Option<(&[u8], &V)> {
        self.map.iter().next_back().map(|(k, v)| (k.as_slice(), v))
    }
    /// All entries in key order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], &V)> {
        self.map.iter().map(|(k, v)| (k.as_slice(), v))
    }
    /// All values in key order, mutable.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.map.values_mut()
    }
}

/// A position in a [`Rax`]: after `seek`, the first `next()` or `prev()` returns the
/// element the seek found, and further calls walk forwards or backwards.
pub struct Cursor<'a, V> {
    rax: &'a Rax<V>,
    /// The element found by the last seek, not yet returned.
    pending: Option<Vec<u8>>,
    /// The key most recently returned.
    key: Vec<u8>,
    done: bool,
}

impl<'a, V> Cursor<'a, V> {
    /// Positions the cursor; returns false when no element satisfies the operator.
    pub fn seek(&mut self, op: SeekOp, key: &[u8]) -> bool {
        let m = &self.rax.map;
        let found = match op {
            SeekOp::First => m.keys().next(),
            SeekOp::Last => m.keys().next_back(),
            SeekOp::Ge => m.range::<[u8], _>((Bound::Included(key), Bound::Unbounded)).next().map(|(k, _)| k),
            SeekOp::Gt => m.range::<[u8], _>((Bound::Excluded(key), Bound::Unbounded)).next().map(|(k, _)| k),
            SeekOp::Le => m.range::<[u8], _>((Bound::Unbounded, Bound::Included(key))).next_back().map(|(k, _)| k),
            SeekOp::Lt => m.range::<[u8], _>((Bound::Unbounded, Bound::Excluded(key))).next_back().map(|(k, _)| k),
            SeekOp::Eq => m.get_key_value(key).map(|(k, _)| k),
        };
        self.pending = found.cloned();
        self.done = self.pending.is_none();
        !self.done
    }

    /// The next element in key order.
    pub fn next(&mut self) -> Option<(&[u8], &'a V)> {
        if self.done {
            return None;
        }
        let m = &self.rax.map;
        let found = match self.pending.take() {
            Some(k) => m.get_key_value(&k),
            None => m.range::<[u8], _>((Bound::Excluded(self.key.as_slice()), Bound::Unbounded)).next(),
        };
        match found {
            Some((k, v)) => {
                self.key.clear();
                self.key.extend_from_slice(k);
                Some((self.key.as_slice(), v))
            }
            None => {
                self.done = true;
                None
            }
        }
    }

    /// The previous element in key order.
    pub fn prev(&mut self) -> Option<(&[u8], &'a V)> {
        if self.done {
            return None;
        }
        let m = &self.rax.map;
        let found = match self.pending.take() {
            Some(k) => m.get_key_value(&k),
            None => m.range::<[u8], _>((Bound::Unbounded, Bound::Excluded(self.key.as_slice()))).next_back(),
        };
        match found {
            Some((k, v)) => {
                self.key.clear();
                self.key.extend_from_slice(k);
                Some((self.key.as_slice(), v))
            }
            None => {
                self.done = true;
                None
            }
        }
    }
}
