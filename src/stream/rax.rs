//! `Rax<V>`: an ordered map from byte strings to values, stored as a radix tree whose
//! single-child paths are compressed (the structure Redis calls *rax*).
//!
//! # Nodes
//!
//! A key is not stored in one node: it is spelled by the bytes on the path from the root
//! to the node where it ends, and that node carries its value. Every node has one of
//! three shapes:
//!
//! * **leaf**: no children. Every leaf except an empty tree's root holds a value.
//! * **compressed**: a run of one or more bytes and exactly one child, reached after all
//!   of them. The run is what saves nodes: a long stretch of bytes that no other key
//!   leaves midway costs one node, not one node per byte.
//! * **branch**: two or more children, each reached by one byte; the bytes are kept
//!   sorted, so walking the children in order walks the keys in order.
//!
//! Any node may also hold a value: that of the key spelled by the path down to it.
//! Take the keys `"bin"`, `"bus"`, `"bust"` and `"busy"` (a value is drawn as the key
//! in parentheses, a run in quotes, a branch in square brackets):
//!
//! ```text
//!                  "b"                 root: compressed, run of one byte
//!                   |
//!                [i   u]               branch on the second byte
//!                /     \
//!             "n"       "s"            compressed, each a run of one byte
//!              |         |
//!           ("bin")   ("bus") [t y]    "bus" ends here and the path goes on:
//!                             /   \     a value on a branch node
//!                       ("bust") ("busy")
//!                                      leaves, each holding a value
//! ```
//!
//! Eight nodes. Runs pay off on longer keys: `"stream:1"` and `"stream:2"` take four
//! (the root with the run `"stream:"`, a branch `[1 2]`, two leaves) where a trie with a
//! node per byte would take ten. Inserting `"bundle"` above splits nothing: the `"s"` node
//! after `u` becomes a branch `[n s]`, and below its `n` hang a new compressed node
//! `"dle"` and a new leaf `("bundle")`. Inserting `"bunny"` next leaves the run `"dle"`
//! at its first byte, so that node becomes a branch `[d n]`: below `d` a new node takes
//! the rest of the run, `"le"`; below `n` come a run `"y"` and a leaf `("bunny")`. A key
//! that leaves a run after its first byte first splits the run in two at that point.
//!
//! # The minimal shape
//!
//! For a given set of keys there is exactly one tree, and every insert and remove leaves
//! that tree, whatever the order of operations (the property tests check this by
//! comparing [`Rax::node_count`] with a tree built afresh). The rules:
//!
//! 1. a node without a value and without children exists only as the root of an empty
//!    tree (a removal deletes such nodes upwards);
//! 2. a branch has at least two children (a branch left with one child is a compressed
//!    node with a run of one byte);
//! 3. the child of a compressed node is never itself a compressed node without a value
//!    (the two runs are joined into one).
//!
//! The child of a *branch* may be a compressed node without a value: after `u` above,
//! `"bundle"` needs one node for the run `"dle"` and one leaf for its value. This is the
//! same shape as Redis's (there the value of a key also sits in the node reached after
//! its last byte), so [`Rax::node_count`], reported by XINFO as `radix-tree-nodes`,
//! counts what Redis counts for the same keys.
//!
//! # Memory
//!
//! A node has three fields and no tag (the number of children tells the shape; a
//! compressed node is laid out as a branch whose one child is reached by several
//! bytes):
//!
//! ```text
//! +---------------------------+---------------------------+---------------------+
//! | entry: key + value, or    | bytes: the run, or the    | children: boxed     |
//! | none where no key ends    | branch's sorted bytes     | slice of nodes      |
//! +---------------------------+---------------------------+---------------------+
//!   key: up to 22 bytes inline    up to 22 bytes inline       stored inline in
//!   (else one exact allocation)   (else one exact allocation) one allocation
//! ```
//!
//! A 16-byte stream ID therefore costs no allocation for its key or its runs; the only
//! allocations are the children slices (an empty one costs none). With `V = u32` a node
//! is 72 bytes (`size_of::<Node<u32>>()`, pinned by a test); a tree of 100k busy-stream
//! IDs has 1.9 nodes per key and takes about 150 bytes per key from malloc.
//!
//! Slices are kept at their exact size, with one exception: a branch of more than 16
//! children rounds its number of child slots up (to a multiple of a sixteenth of the
//! next power of two, see `capacity_for`), so that the widest branches of a stream index
//! (one child per millisecond) do not reallocate at every insertion. The spare slots are
//! empty nodes; at most about one slot in eight is spare, and the number of slots
//! depends only on the number of children, so memory use, like the shape, depends only
//! on the set of keys.
//!
//! A map of zero or one key has no tree at all: [`Rax`] keeps that key and its value
//! inline and builds the tree at the second key (a stream with a single node, the
//! common case in a keyspace of many small streams, saves the root node and its
//! allocated child, ~100 bytes). [`Rax::node_count`] still counts the nodes the tree
//! would have.
//!
//! Each entry keeps its whole key, although the path spells it too: that is what lets
//! [`Rax::iter`], [`Rax::first`] and [`Rax::last`] return the key as a plain `&[u8]`
//! borrowed from the tree.
//!
//! # Depth
//!
//! Lookups, inserts, removals, cursors, iteration and dropping are loops, not
//! recursion; the depth of the tree (at most one node more than the length of the
//! longest key) never reaches the call stack. Only `Clone` recurses.

use crate::short_bytes::ShortBytes;
use std::fmt;
use std::mem;

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

/// The radix tree behind a [`Rax`] of two or more keys.
struct Tree<V> {
    /// The root: the node reached by the empty key. Never removed; an empty tree is a
    /// root without value and without children.
    root: Node<V>,
    /// Number of keys.
    len: usize,
    /// Number of nodes, the root included (so an empty tree has one).
    nodes: usize,
}

/// A byte-keyed ordered map stored as a radix tree with compressed paths (Redis: `rax`).
///
/// Keys are compared byte by byte, as `memcmp` does; a key that is a prefix of another
/// sorts before it. The empty key is a valid key.
///
/// A map of zero or one key keeps that key and its value inline, without a tree: most
/// streams in a keyspace of many small streams have a single node, and a tree would
/// cost them a root node inline plus an allocated child (~100 bytes). The tree is built
/// at the second key and given up when a removal leaves one key. Every method behaves
/// the same either way; [`Rax::node_count`] reports the nodes the tree *would* have, so
/// XINFO's `radix-tree-nodes` still matches Redis.
pub struct Rax<V> {
    repr: Repr<V>,
}

/// The two forms of a [`Rax`].
enum Repr<V> {
    /// No key, or one key and its value.
    Small(Option<Entry<V>>),
    /// Two keys or more.
    Tree(Box<Tree<V>>),
}

impl<V: Clone> Clone for Rax<V> {
    fn clone(&self) -> Self {
        Rax {
            repr: match &self.repr {
                Repr::Small(e) => Repr::Small(e.clone()),
                Repr::Tree(t) => Repr::Tree(t.clone()),
            },
        }
    }
}

impl<V> Default for Rax<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V> Rax<V> {
    /// An empty map.
    pub fn new() -> Self {
        Rax {
            repr: Repr::Small(None),
        }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Small(e) => usize::from(e.is_some()),
            Repr::Tree(t) => t.len(),
        }
    }

    /// True when there are no keys.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of radix tree nodes for the keys held, the root included (XINFO
    /// `radix-tree-nodes`). An empty tree has one node (the root); a single key has a
    /// root whose run spells it and the leaf holding it (one node for the empty key).
    /// The count depends only on the set of keys.
    pub fn node_count(&self) -> usize {
        match &self.repr {
            Repr::Small(None) => 1,
            Repr::Small(Some(e)) if e.key.is_empty() => 1,
            Repr::Small(Some(_)) => 2,
            Repr::Tree(t) => t.node_count(),
        }
    }

    /// Removes every key.
    pub fn clear(&mut self) {
        self.repr = Repr::Small(None);
    }

    /// Inserts or replaces; returns the previous value.
    pub fn insert(&mut self, key: &[u8], value: V) -> Option<V> {
        match &mut self.repr {
            Repr::Small(Some(e)) if crate::util::bytes_eq(&e.key[..], key) => {
                Some(mem::replace(&mut e.value, value))
            }
            Repr::Small(slot @ None) => {
                *slot = Some(Entry {
                    key: Bytes::new(key),
                    value,
                });
                None
            }
            Repr::Small(Some(_)) => {
                self.grow(key, value);
                None
            }
            Repr::Tree(t) => t.insert(key, value),
        }
    }

    /// Inserts only if absent; gives the value back if the key exists (and then leaves
    /// the map as it was).
    pub fn try_insert(&mut self, key: &[u8], value: V) -> Result<(), V> {
        match &mut self.repr {
            Repr::Small(Some(e)) if crate::util::bytes_eq(&e.key[..], key) => Err(value),
            Repr::Small(slot @ None) => {
                *slot = Some(Entry {
                    key: Bytes::new(key),
                    value,
                });
                Ok(())
            }
            Repr::Small(Some(_)) => {
                self.grow(key, value);
                Ok(())
            }
            Repr::Tree(t) => t.try_insert(key, value),
        }
    }

    /// Moves the one inline key into a new tree and adds `key` (absent) to it.
    fn grow(&mut self, key: &[u8], value: V) {
        let mut tree = Box::new(Tree::new());
        if let Repr::Small(Some(e)) = mem::replace(&mut self.repr, Repr::Small(None)) {
            tree.insert(&e.key, e.value);
        }
        tree.insert(key, value);
        self.repr = Repr::Tree(tree);
    }

    /// The value at `key`.
    pub fn get(&self, key: &[u8]) -> Option<&V> {
        match &self.repr {
            Repr::Small(Some(e)) if crate::util::bytes_eq(&e.key[..], key) => Some(&e.value),
            Repr::Small(_) => None,
            Repr::Tree(t) => t.get(key),
        }
    }

    /// The value at `key`, mutable.
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        match &mut self.repr {
            Repr::Small(Some(e)) if crate::util::bytes_eq(&e.key[..], key) => Some(&mut e.value),
            Repr::Small(_) => None,
            Repr::Tree(t) => t.get_mut(key),
        }
    }

    /// True when `key` is present.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// Removes `key`; returns its value. The tree left is the one built from the
    /// remaining keys (a last remaining key moves back inline).
    pub fn remove(&mut self, key: &[u8]) -> Option<V> {
        match &mut self.repr {
            Repr::Small(slot) => match slot {
                Some(e) if crate::util::bytes_eq(&e.key[..], key) => slot.take().map(|e| e.value),
                _ => None,
            },
            Repr::Tree(t) => {
                let value = t.remove(key)?;
                if t.len() == 1 {
                    let last = t.first().map(|(k, _)| k.to_vec());
                    if let Some(k) = last
                        && let Some(v) = t.remove(&k)
                    {
                        self.repr = Repr::Small(Some(Entry {
                            key: Bytes::new(&k),
                            value: v,
                        }));
                    }
                }
                Some(value)
            }
        }
    }

    /// A cursor, unpositioned until [`Cursor::seek`].
    pub fn cursor(&self) -> Cursor<'_, V> {
        Cursor {
            inner: match &self.repr {
                Repr::Small(e) => CursorRepr::Small {
                    entry: e.as_ref(),
                    pending: false,
                },
                Repr::Tree(t) => CursorRepr::Tree(t.cursor()),
            },
        }
    }

    /// The smallest key and its value.
    pub fn first(&self) -> Option<(&[u8], &V)> {
        match &self.repr {
            Repr::Small(e) => e.as_ref().map(|e| (&e.key[..], &e.value)),
            Repr::Tree(t) => t.first(),
        }
    }

    /// The largest key and its value.
    pub fn last(&self) -> Option<(&[u8], &V)> {
        match &self.repr {
            Repr::Small(e) => e.as_ref().map(|e| (&e.key[..], &e.value)),
            Repr::Tree(t) => t.last(),
        }
    }

    /// The largest key and its value, mutable (one walk down the rightmost path).
    pub fn last_mut(&mut self) -> Option<(&[u8], &mut V)> {
        match &mut self.repr {
            Repr::Small(e) => e.as_mut().map(|e| (&e.key[..], &mut e.value)),
            Repr::Tree(t) => t.last_mut(),
        }
    }

    /// A walk down the rightmost path to the largest key's value, one node a step, for
    /// prefetching ([`LastPath`]). Asks the caches for the tree's root.
    pub fn last_path(&self) -> LastPath<'_, V> {
        let at = match &self.repr {
            Repr::Small(e) => e.as_ref().map_or(PathAt::Done, |e| PathAt::Leaf(&e.value)),
            Repr::Tree(t) => {
                crate::util::prefetch(&t.root);
                PathAt::Node(&t.root)
            }
        };
        LastPath { at }
    }

    /// All entries in key order; iterates from both ends.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], &V)> + ExactSizeIterator {
        match &self.repr {
            Repr::Small(e) => RaxIter::Small(e.as_ref().map(|e| (&e.key[..], &e.value))),
            Repr::Tree(t) => RaxIter::Tree(t.iter()),
        }
    }

    /// All entries in key order, values mutable.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&[u8], &mut V)> {
        let (small, tree) = match &mut self.repr {
            Repr::Small(e) => (e.as_mut().map(|e| (&e.key[..], &mut e.value)), None),
            Repr::Tree(t) => (None, Some(t.iter_mut())),
        };
        small.into_iter().chain(tree.into_iter().flatten())
    }

    /// All values in key order, mutable.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.iter_mut().map(|(_, v)| v)
    }
}

/// Iterator of [`Rax::iter`], one form per form of the map.
enum RaxIter<'a, V> {
    Small(Option<(&'a [u8], &'a V)>),
    Tree(Iter<'a, V>),
}

impl<'a, V> Iterator for RaxIter<'a, V> {
    type Item = (&'a [u8], &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            RaxIter::Small(e) => e.take(),
            RaxIter::Tree(t) => t.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            RaxIter::Small(e) => (usize::from(e.is_some()), Some(usize::from(e.is_some()))),
            RaxIter::Tree(t) => t.size_hint(),
        }
    }
}

impl<V> DoubleEndedIterator for RaxIter<'_, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            RaxIter::Small(e) => e.take(),
            RaxIter::Tree(t) => t.next_back(),
        }
    }
}

impl<V> ExactSizeIterator for RaxIter<'_, V> {}

/// A position in a [`Rax`]: after `seek`, the first `next()` or `prev()` returns the
/// element the seek found, and further calls walk forwards or backwards. Once a walk
/// runs off either end, both directions return `None` until the next seek.
pub struct Cursor<'a, V> {
    inner: CursorRepr<'a, V>,
}

/// The two forms of a [`Cursor`], one per form of [`Rax`].
enum CursorRepr<'a, V> {
    /// Over the inline key: `pending` while the seek found it and it was not returned.
    Small {
        entry: Option<&'a Entry<V>>,
        pending: bool,
    },
    Tree(TreeCursor<'a, V>),
}

impl<'a, V> Cursor<'a, V> {
    /// Positions the cursor; returns false when no element satisfies the operator.
    pub fn seek(&mut self, op: SeekOp, key: &[u8]) -> bool {
        match &mut self.inner {
            CursorRepr::Small { entry, pending } => {
                let found = entry.is_some_and(|e| {
                    let k = &e.key[..];
                    match op {
                        SeekOp::First | SeekOp::Last => true,
                        SeekOp::Ge => k >= key,
                        SeekOp::Gt => k > key,
                        SeekOp::Le => k <= key,
                        SeekOp::Lt => k < key,
                        SeekOp::Eq => k == key,
                    }
                });
                *pending = found;
                found
            }
            CursorRepr::Tree(c) => c.seek(op, key),
        }
    }

    /// The next element in key order.
    // Not `Iterator::next`: a cursor also walks back and seeks again, and the one name
    // pairs with `prev`, as `raxNext`/`raxPrev` do.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<(&'a [u8], &'a V)> {
        match &mut self.inner {
            CursorRepr::Small { entry, pending } => Self::small_step(*entry, pending),
            CursorRepr::Tree(c) => c.next(),
        }
    }

    /// The previous element in key order.
    pub fn prev(&mut self) -> Option<(&'a [u8], &'a V)> {
        match &mut self.inner {
            CursorRepr::Small { entry, pending } => Self::small_step(*entry, pending),
            CursorRepr::Tree(c) => c.prev(),
        }
    }

    /// With one key, the element found by the seek comes once; any step from it runs
    /// off an end.
    fn small_step(entry: Option<&'a Entry<V>>, pending: &mut bool) -> Option<(&'a [u8], &'a V)> {
        if !mem::take(pending) {
            return None;
        }
        entry.map(|e| (&e.key[..], &e.value))
    }
}

/// A walk down a [`Rax`]'s rightmost path that takes one node a step ([`Rax::last_path`]),
/// so that the walks of several trees can be interleaved, each step reading a node the
/// step before it asked the caches for: a pipeline of XADDs to different streams waits
/// for the misses of their paths together rather than one after another
/// (`core/prefetch.rs`).
pub struct LastPath<'a, V> {
    at: PathAt<'a, V>,
}

/// Where a [`LastPath`] is.
enum PathAt<'a, V> {
    /// At a node asked for by the last step, not read yet.
    Node(&'a Node<V>),
    /// At the largest key's value.
    Leaf(&'a V),
    /// The tree is empty, or the walk has handed its value over.
    Done,
}

impl<'a, V> LastPath<'a, V> {
    /// One step: reads the node the walk is at and asks the caches for its last child.
    /// `Some(value)` once, when the walk reaches the largest key's value; `None` before
    /// that and after it (see [`LastPath::is_done`]).
    pub fn step(&mut self) -> Option<&'a V> {
        match std::mem::replace(&mut self.at, PathAt::Done) {
            PathAt::Node(node) => {
                match node.kids().last() {
                    Some(kid) => {
                        crate::util::prefetch(kid);
                        self.at = PathAt::Node(kid);
                    }
                    None => {
                        self.at = node
                            .entry
                            .as_ref()
                            .map_or(PathAt::Done, |e| PathAt::Leaf(&e.value))
                    }
                }
                None
            }
            PathAt::Leaf(value) => Some(value),
            PathAt::Done => None,
        }
    }

    /// True once the walk has handed its value over (or found the tree empty).
    pub fn is_done(&self) -> bool {
        matches!(self.at, PathAt::Done)
    }
}

/// One node of the tree. The shape is told by the length of `children`:
///
/// | `children.len()` | shape      | `bytes`                                          |
/// |------------------|------------|--------------------------------------------------|
/// | 0                | leaf       | empty                                            |
/// | 1                | compressed | the run (one byte or more) leading to the child  |
/// | ≥ 2              | branch     | n ≥ 2 bytes, sorted: `bytes[i]` leads to child `i` |
///
/// A branch with n children has `children.len() == capacity_for(n)`: the slots after the
/// first n are spare, holding empty nodes (which own no memory), so that a wide branch
/// does not reallocate its children for every child added.
#[derive(Clone)]
struct Node<V> {
    /// The key that ends at this node, and its value.
    entry: Option<Entry<V>>,
    /// See the table above.
    bytes: Bytes,
    /// The children, stored inline, then a branch's spare slots; see [`Node::kids`].
    children: Box<[Node<V>]>,
}

/// A key and its value, kept in the node where the key ends.
#[derive(Clone)]
struct Entry<V> {
    /// The whole key (equal to the bytes on the path from the root).
    key: Bytes,
    value: V,
}

impl<V> Node<V> {
    /// A node without value or children.
    fn empty() -> Self {
        Node {
            entry: None,
            bytes: Bytes::EMPTY,
            children: Box::default(),
        }
    }

    /// Number of children, spare slots excluded.
    fn kid_count(&self) -> usize {
        kid_count(self.children.len(), self.bytes.len())
    }

    /// The children, spare slots excluded.
    fn kids(&self) -> &[Node<V>] {
        &self.children[..self.kid_count()]
    }

    /// True for a node that should not exist (rule 1), unless it is the root.
    fn is_vacant(&self) -> bool {
        self.entry.is_none() && self.children.is_empty()
    }

    /// True for a compressed node without value: one that can be joined onto a
    /// compressed parent (rule 3).
    fn is_bare_compressed(&self) -> bool {
        self.entry.is_none() && self.children.len() == 1
    }

    /// The index of the child that `key[i..]` continues into, and the number of key
    /// bytes that the step consumes; `None` when no child matches.
    fn step(&self, rest: &[u8]) -> Option<(usize, usize)> {
        match self.children.len() {
            0 => None,
            1 => rest
                .starts_with(&self.bytes[..])
                .then_some((0, self.bytes.len())),
            _ => {
                let first = rest.first()?;
                self.bytes.binary_search(first).ok().map(|k| (k, 1))
            }
        }
    }

    /// Splits a compressed node after `j` bytes of its run (0 < j < run length): this
    /// node keeps `bytes[..j]` and gets a new child without value holding the rest of
    /// the run and the old child.
    fn split_run(&mut self, j: usize) {
        let bytes = mem::take(&mut self.bytes);
        let tail = Node {
            entry: None,
            bytes: Bytes::new(&bytes[j..]),
            children: mem::take(&mut self.children),
        };
        self.bytes = Bytes::new(&bytes[..j]);
        self.children = Box::new([tail]);
    }

    /// Turns a compressed node into a branch on the first byte of its run, with (for a
    /// moment, until the caller adds one) a single child. Returns the number of nodes
    /// created: 1 when the rest of the run needs its own node, else 0.
    fn run_to_branch(&mut self) -> usize {
        if self.bytes.len() == 1 {
            // A run of one byte is already a branch with one child.
            return 0;
        }
        let bytes = mem::take(&mut self.bytes);
        let tail = Node {
            entry: None,
            bytes: Bytes::new(&bytes[1..]),
            children: mem::take(&mut self.children),
        };
        self.bytes = Bytes::new(&bytes[..1]);
        self.children = Box::new([tail]);
        1
    }

    /// Adds an empty child reached by `byte` (absent so far) to a branch, or to a
    /// compressed node whose run is one byte; returns its index.
    fn add_child(&mut self, byte: u8) -> usize {
        let n = self.bytes.len();
        let k = self.bytes.binary_search(&byte).unwrap_err();
        self.bytes.insert(k, byte);
        if self.children.len() == n {
            // No spare slot left: grow to the capacity for n + 1 children, the new
            // slots empty.
            let capacity = capacity_for(n + 1);
            let mut v = mem::take(&mut self.children).into_vec();
            v.reserve_exact(capacity - n);
            v.resize_with(capacity, Node::empty);
            self.children = v.into_boxed_slice();
        }
        // Slot n is empty: rotate it into place at k.
        self.children[k..=n].rotate_right(1);
        k
    }

    /// Removes child `k` (which must be empty) of a compressed node or a branch; a
    /// branch left with one child is a compressed node with a run of one byte.
    fn remove_child(&mut self, k: usize) {
        let n = self.kid_count();
        if n == 1 {
            self.bytes = Bytes::EMPTY;
            self.children = Box::default();
            return;
        }
        self.bytes.remove(k);
        // The removed (empty) node becomes the first spare slot.
        self.children[k..n].rotate_left(1);
        let capacity = capacity_for(n - 1);
        if capacity < self.children.len() {
            let mut v = mem::take(&mut self.children).into_vec();
            v.truncate(capacity);
            self.children = v.into_boxed_slice();
        }
    }

    /// Joins a compressed node without value below this compressed node onto it
    /// (rule 3); returns whether it did.
    fn join_child(&mut self) -> bool {
        if self.children.len() != 1 || !self.children[0].is_bare_compressed() {
            return false;
        }
        let mut child = mem::take(&mut self.children)
            .into_vec()
            .pop()
            .expect("one child");
        self.bytes = Bytes::concat(&self.bytes, &child.bytes);
        self.children = mem::take(&mut child.children);
        true
    }
}

/// Number of children of a node with `slots` child slots and `bytes` bytes: a branch
/// has one byte per child, the other shapes as many children as slots.
fn kid_count(slots: usize, bytes: usize) -> usize {
    if slots <= 1 { slots } else { bytes }
}

/// Number of child slots of a node with `n` children: `n` up to 16, then `n` rounded up
/// to a multiple of a sixteenth of the next power of two, so at most about one slot in
/// eight is spare (a branch of 129 children has 144 slots; one of 256, 256). A wide
/// branch thus reallocates its children once every 2 to 16 additions instead of at
/// every one, and the size still depends only on `n`.
fn capacity_for(n: usize) -> usize {
    let step = (n.next_power_of_two() / 16).max(1);
    n.div_ceil(step) * step
}

/// Bytes of a node (a run, or a branch's child bytes), and entry keys: up to
/// [`ShortBytes::INLINE`] of them inside the node itself, more in an allocation of the
/// exact size. Short is the common case (a 16-byte stream ID never needs a longer run),
/// so a step down the tree usually reads the bytes from the node it already has in cache
/// instead of following one more pointer. A given byte string always takes the same
/// form, so memory use depends only on the contents.
type Bytes = ShortBytes;

/// The number of nodes a [`Rax`] holding exactly `keys` has ([`Rax::node_count`]),
/// computed from the keys alone, in one pass and without building the tree. A stream
/// whose oldest nodes are cold keeps their keys outside its tree; XINFO's
/// `radix-tree-nodes` still counts the tree of every key, as Redis does.
///
/// `keys` must be strictly ascending, and no key may be a prefix of another (true of
/// keys of one length, such as stream IDs).
///
/// Why it works: in the minimal shape (module doc) a node exists at a prefix exactly
/// when the prefix is the root, a key, a branch point (two or more children) or a
/// child of a branch point; every other prefix lies inside a run. With ascending keys,
/// every branch point is the common prefix of some two neighbours, and a branch point
/// with `c` children is the common prefix of `c - 1` neighbouring pairs. So, for n keys
/// and B distinct branch points, the children of branch points number n - 1 + B, and
///
/// ```text
/// nodes = [root not a branch] + n + B + (n - 1 + B)
///         - (children that are keys) - (children that are branch points)
/// ```
///
/// A key is a child of a branch point when it is one byte longer than its deepest
/// branching ancestor (the longer of its common prefixes with its two neighbours). The
/// branch points are found with a stack of increasing depths (the common prefixes seen
/// so far that are still ancestors of the current key); a branch point taken off the
/// stack learns its parent branch point then, and is a child of it when one byte
/// deeper.
pub fn node_count_of_sorted<K: AsRef<[u8]>>(keys: impl IntoIterator<Item = K>) -> usize {
    let mut keys = keys.into_iter();
    let Some(first) = keys.next() else {
        return 1;
    };
    let mut n = 1usize;
    let mut prev = first.as_ref().to_vec();
    // The common prefix of `prev` with the key before it (None for the first key).
    let mut prev_lcp: Option<usize> = None;
    let mut stack: Vec<usize> = Vec::new();
    let mut branch_points = 0usize;
    let mut root_branches = false;
    let mut child_keys = 0usize;
    let mut child_branches = 0usize;
    // Takes branch points deeper than `depth` off the stack; `depth` None ends the walk.
    let mut unwind = |stack: &mut Vec<usize>, depth: Option<usize>| {
        while let Some(&top) = stack.last() {
            if depth.is_some_and(|d| top <= d) {
                break;
            }
            stack.pop();
            let parent = match (stack.last().copied(), depth) {
                (Some(below), Some(d)) => Some(below.max(d)),
                (below, d) => below.or(d),
            };
            if parent.is_some_and(|p| top == p + 1) {
                child_branches += 1;
            }
        }
    };
    for key in keys {
        let key = key.as_ref();
        debug_assert!(prev.as_slice() < key, "keys not ascending");
        let lcp = common_prefix(&prev, key);
        debug_assert!(lcp < prev.len() && lcp < key.len(), "a key is a prefix");
        if prev.len() == prev_lcp.map_or(lcp, |p| p.max(lcp)) + 1 {
            child_keys += 1;
        }
        unwind(&mut stack, Some(lcp));
        if stack.last() != Some(&lcp) {
            stack.push(lcp);
            branch_points += 1;
            root_branches |= lcp == 0;
        }
        n += 1;
        prev.clear();
        prev.extend_from_slice(key);
        prev_lcp = Some(lcp);
    }
    let Some(last_lcp) = prev_lcp else {
        return if prev.is_empty() { 1 } else { 2 };
    };
    if prev.len() == last_lcp + 1 {
        child_keys += 1;
    }
    unwind(&mut stack, None);
    usize::from(!root_branches) + n + branch_points + (n - 1 + branch_points)
        - child_keys
        - child_branches
}

/// Length of the common prefix of `a` and `b`.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl<V> Tree<V> {
    /// An empty tree (one node: the root).
    fn new() -> Self {
        Tree {
            root: Node::empty(),
            len: 0,
            nodes: 1,
        }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Number of tree nodes, the root included (XINFO `radix-tree-nodes`). An empty tree
    /// has one node; the count depends only on the set of keys, not on the order in
    /// which they were inserted or removed.
    pub fn node_count(&self) -> usize {
        self.nodes
    }

    /// Inserts or replaces; returns the previous value. On replace the tree does not
    /// change shape.
    pub fn insert(&mut self, key: &[u8], value: V) -> Option<V> {
        let node = Self::make_node(&mut self.root, &mut self.nodes, key);
        match &mut node.entry {
            Some(entry) => Some(mem::replace(&mut entry.value, value)),
            None => {
                node.entry = Some(Entry {
                    key: Bytes::new(key),
                    value,
                });
                self.len += 1;
                None
            }
        }
    }

    /// Inserts only if absent; gives the value back if the key exists (and then leaves
    /// the tree as it was).
    pub fn try_insert(&mut self, key: &[u8], value: V) -> Result<(), V> {
        let node = Self::make_node(&mut self.root, &mut self.nodes, key);
        if node.entry.is_some() {
            return Err(value);
        }
        node.entry = Some(Entry {
            key: Bytes::new(key),
            value,
        });
        self.len += 1;
        Ok(())
    }

    /// The node where `key` ends, created (with the splits it takes) if missing. Nodes
    /// are only created when the key is absent, so when it is present the tree is left
    /// as it was.
    fn make_node<'n>(root: &'n mut Node<V>, nodes: &mut usize, key: &[u8]) -> &'n mut Node<V> {
        let mut node = root;
        let mut i = 0;
        while i < key.len() {
            let rest = &key[i..];
            let (k, consumed) = match node.children.len() {
                0 => {
                    // A leaf (or the empty root): the rest of the key becomes its run.
                    node.bytes = Bytes::new(rest);
                    node.children = Box::new([Node::empty()]);
                    *nodes += 1;
                    (0, rest.len())
                }
                1 => {
                    let j = common_prefix(&node.bytes, rest);
                    if j == node.bytes.len() {
                        (0, j)
                    } else if j > 0 {
                        // The key leaves the run (or ends) after `j` bytes: split there
                        // and go on from the new node.
                        node.split_run(j);
                        *nodes += 1;
                        (0, j)
                    } else {
                        // The key leaves the run at its first byte.
                        *nodes += node.run_to_branch() + 1;
                        (node.add_child(rest[0]), 1)
                    }
                }
                _ => match node.bytes.binary_search(&rest[0]) {
                    Ok(k) => (k, 1),
                    Err(_) => {
                        *nodes += 1;
                        (node.add_child(rest[0]), 1)
                    }
                },
            };
            node = &mut node.children[k];
            i += consumed;
        }
        node
    }

    /// The node where `key` ends, if the path exists.
    fn find(&self, key: &[u8]) -> Option<&Node<V>> {
        let mut node = &self.root;
        let mut i = 0;
        while i < key.len() {
            let (k, consumed) = node.step(&key[i..])?;
            node = &node.children[k];
            i += consumed;
        }
        Some(node)
    }

    /// The value at `key`.
    pub fn get(&self, key: &[u8]) -> Option<&V> {
        self.find(key)?.entry.as_ref().map(|e| &e.value)
    }

    /// The value at `key`, mutable.
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        let mut node = &mut self.root;
        let mut i = 0;
        while i < key.len() {
            let (k, consumed) = node.step(&key[i..])?;
            node = &mut node.children[k];
            i += consumed;
        }
        node.entry.as_mut().map(|e| &mut e.value)
    }

    /// Removes `key`; returns its value. The nodes the key alone needed are freed and
    /// runs are joined again, so the tree is the one built from the remaining keys.
    pub fn remove(&mut self, key: &[u8]) -> Option<V> {
        // Walk down once, noting the child taken at each level (a child index is below
        // 256, one per byte value).
        let mut path: Vec<u8> = Vec::with_capacity(24);
        let mut node = &self.root;
        let mut i = 0;
        while i < key.len() {
            let (k, consumed) = node.step(&key[i..])?;
            node = &node.children[k];
            path.push(k as u8);
            i += consumed;
        }
        node.entry.as_ref()?;
        let entry = Self::node_on(&mut self.root, &path)
            .entry
            .take()
            .expect("checked above");
        self.len -= 1;
        // Repair upwards, one parent at a time, for as long as something changed. That
        // is at most four levels: the target may lose its node, which may leave its
        // parent a leaf to delete in turn, or a branch with one child to join with that
        // child and with a compressed grandparent; nothing above can change. Each parent
        // is reached again from the root by index, a few walks of a path already in
        // cache instead of a recursion as deep as the tree.
        for level in (0..path.len()).rev() {
            let parent = Self::node_on(&mut self.root, &path[..level]);
            let k = usize::from(path[level]);
            let mut changed = false;
            if parent.children[k].is_vacant() {
                parent.remove_child(k);
                self.nodes -= 1;
                changed = true;
            }
            if parent.join_child() {
                self.nodes -= 1;
                changed = true;
            }
            if !changed {
                break;
            }
        }
        Some(entry.value)
    }

    /// The node reached from `root` by taking child `path[0]`, then `path[1]`, and so on.
    fn node_on<'n>(root: &'n mut Node<V>, path: &[u8]) -> &'n mut Node<V> {
        path.iter()
            .fold(root, |node, &k| &mut node.children[usize::from(k)])
    }

    /// A cursor, unpositioned until [`Cursor::seek`].
    fn cursor(&self) -> TreeCursor<'_, V> {
        TreeCursor {
            root: &self.root,
            stack: Vec::new(),
            pending: false,
            done: true,
        }
    }

    /// The smallest key and its value.
    pub fn first(&self) -> Option<(&[u8], &V)> {
        // The smallest key of a subtree is its root's, or else the smallest of its
        // first child's subtree: a key sorts before every key it is a prefix of.
        let mut node = &self.root;
        loop {
            if let Some(e) = &node.entry {
                return Some((&e.key, &e.value));
            }
            node = node.children.first()?;
        }
    }

    /// The largest key and its value.
    pub fn last(&self) -> Option<(&[u8], &V)> {
        let mut node = &self.root;
        while let Some(last) = node.kids().last() {
            node = last;
        }
        node.entry.as_ref().map(|e| (&e.key[..], &e.value))
    }

    /// The largest key and its value, mutable.
    fn last_mut(&mut self) -> Option<(&[u8], &mut V)> {
        let mut node = &mut self.root;
        loop {
            let n = node.kid_count();
            if n == 0 {
                break;
            }
            node = &mut node.children[n - 1];
        }
        node.entry.as_mut().map(|e| (&e.key[..], &mut e.value))
    }

    /// All entries in key order; iterates from both ends.
    fn iter(&self) -> Iter<'_, V> {
        Iter {
            front: vec![std::slice::from_ref(&self.root).iter()],
            back: vec![(std::slice::from_ref(&self.root).iter(), None)],
            remaining: self.len,
        }
    }

    /// All entries in key order, values mutable.
    fn iter_mut(&mut self) -> IterMut<'_, V> {
        IterMut {
            stack: vec![&mut self.root],
        }
    }
}

/// Drops a subtree with a loop, so that a deep tree cannot exhaust the stack: each
/// children array is emptied of its grandchildren arrays before it is dropped.
fn teardown<V>(mut root: Node<V>) {
    let mut stack = vec![mem::take(&mut root.children)];
    while let Some(mut children) = stack.pop() {
        for child in children.iter_mut().filter(|c| !c.children.is_empty()) {
            stack.push(mem::take(&mut child.children));
        }
    }
}

impl<V> Drop for Tree<V> {
    fn drop(&mut self) {
        teardown(mem::replace(&mut self.root, Node::empty()));
    }
}

impl<V: Clone> Clone for Tree<V> {
    fn clone(&self) -> Self {
        Tree {
            root: self.root.clone(),
            len: self.len,
            nodes: self.nodes,
        }
    }
}

impl<V: fmt::Debug> fmt::Debug for Rax<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// One level of [`Iter`]'s back walk: the siblings still to visit from the right, and
/// the parent whose own key comes once they are all done (none for the root's level).
type BackFrame<'a, V> = (std::slice::Iter<'a, Node<V>>, Option<&'a Node<V>>);

/// Iterator of [`Rax::iter`]: a walk from each end, stopping when they meet.
struct Iter<'a, V> {
    /// Front walk, in pre-order (a node before its children): one slice iterator per
    /// level, over the siblings still to visit.
    front: Vec<std::slice::Iter<'a, Node<V>>>,
    /// Back walk, in reverse: one frame per level.
    back: Vec<BackFrame<'a, V>>,
    /// Entries not yet returned by either end.
    remaining: usize,
}

impl<'a, V> Iterator for Iter<'a, V> {
    type Item = (&'a [u8], &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        loop {
            let top = self.front.last_mut()?;
            match top.next() {
                Some(node) => {
                    if !node.children.is_empty() {
                        self.front.push(node.kids().iter());
                    }
                    if let Some(e) = &node.entry {
                        self.remaining -= 1;
                        return Some((&e.key, &e.value));
                    }
                }
                None => {
                    self.front.pop();
                }
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl<V> DoubleEndedIterator for Iter<'_, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        loop {
            let (top, _) = self.back.last_mut()?;
            match top.next_back() {
                Some(node) => self.back.push((node.kids().iter(), Some(node))),
                None => {
                    let (_, parent) = self.back.pop()?;
                    if let Some(e) = parent.and_then(|p| p.entry.as_ref()) {
                        self.remaining -= 1;
                        return Some((&e.key, &e.value));
                    }
                }
            }
        }
    }
}

impl<V> ExactSizeIterator for Iter<'_, V> {}

/// Iterator of [`Rax::iter_mut`], in pre-order.
struct IterMut<'a, V> {
    /// Nodes still to visit, the next one on top.
    stack: Vec<&'a mut Node<V>>,
}

impl<'a, V> Iterator for IterMut<'a, V> {
    type Item = (&'a [u8], &'a mut V);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let Node {
                entry,
                bytes,
                children,
            } = self.stack.pop()?;
            // The fields are borrowed apart (not through `kids_mut`) so that the entry
            // stays available next to the children.
            let n = kid_count(children.len(), bytes.len());
            self.stack.extend(children[..n].iter_mut().rev());
            if let Some(Entry { key, value }) = entry {
                return Some((key, value));
            }
        }
    }
}

/// A [`Cursor`] over a [`Tree`].
struct TreeCursor<'a, V> {
    /// The root of the tree walked.
    root: &'a Node<V>,
    /// The path from the root to the current node; each frame also holds the index of
    /// the child that the next frame is (meaningless on the top frame).
    stack: Vec<Frame<'a, V>>,
    /// The current node was found by the last seek and not yet returned.
    pending: bool,
    /// Not positioned: never sought, the seek failed, or a walk ran off an end.
    done: bool,
}

/// One level of a [`Cursor`]'s path.
struct Frame<'a, V> {
    node: &'a Node<V>,
    child: usize,
}

/// Where a searched key falls relative to a node on its path, once the key leaves the
/// tree there.
enum Gap {
    /// After the node's own key, before every key below it.
    BeforeChildren,
    /// After every key of the subtree of the node's child `k`, and before the next
    /// child's (if any).
    AfterChild(usize),
    /// After every key of the node's subtree.
    AfterSubtree,
}

impl<'a, V> TreeCursor<'a, V> {
    /// Positions the cursor; returns false when no element satisfies the operator.
    fn seek(&mut self, op: SeekOp, key: &[u8]) -> bool {
        self.stack.clear();
        self.stack.push(Frame {
            node: self.root,
            child: 0,
        });
        let found = match op {
            SeekOp::First => self.descend_first(),
            SeekOp::Last => self.descend_last(),
            _ => self.seek_key(op, key),
        };
        self.pending = found;
        self.done = !found;
        found
    }

    /// The next element in key order.
    // Not `Iterator::next`: a cursor also walks back and seeks again, and the one name
    // pairs with `prev`, as `raxNext`/`raxPrev` do.
    #[allow(clippy::should_implement_trait)]
    fn next(&mut self) -> Option<(&'a [u8], &'a V)> {
        if self.done {
            return None;
        }
        if !mem::take(&mut self.pending) && !self.step_next() {
            self.done = true;
            return None;
        }
        self.current()
    }

    /// The previous element in key order.
    fn prev(&mut self) -> Option<(&'a [u8], &'a V)> {
        if self.done {
            return None;
        }
        if !mem::take(&mut self.pending) && !self.step_prev() {
            self.done = true;
            return None;
        }
        self.current()
    }

    /// The entry of the current node (which holds one whenever a walk or seek stops).
    fn current(&self) -> Option<(&'a [u8], &'a V)> {
        let e = self.top().entry.as_ref()?;
        Some((&e.key, &e.value))
    }

    fn top(&self) -> &'a Node<V> {
        self.stack
            .last()
            .expect("cursor path starts at the root")
            .node
    }

    /// Moves down to child `k` of the current node.
    fn push_child(&mut self, k: usize) {
        let frame = self
            .stack
            .last_mut()
            .expect("cursor path starts at the root");
        frame.child = k;
        let node = &frame.node.children[k];
        self.stack.push(Frame { node, child: 0 });
    }

    /// Follows `key` down the tree, then settles on the answer for `op`.
    fn seek_key(&mut self, op: SeekOp, key: &[u8]) -> bool {
        let mut i = 0;
        let gap = loop {
            let node = self.top();
            if i == key.len() {
                // The key ends at this node.
                return match op {
                    SeekOp::Eq | SeekOp::Ge | SeekOp::Le if node.entry.is_some() => true,
                    SeekOp::Ge | SeekOp::Gt => self.step_next(),
                    SeekOp::Le | SeekOp::Lt => self.step_prev(),
                    _ => false,
                };
            }
            let rest = &key[i..];
            match node.children.len() {
                // The node's key is a proper prefix of the searched one.
                0 => break Gap::AfterSubtree,
                1 => {
                    let j = common_prefix(&node.bytes, rest);
                    if j == node.bytes.len() {
                        self.push_child(0);
                        i += j;
                    } else if j == rest.len() || rest[j] < node.bytes[j] {
                        break Gap::BeforeChildren;
                    } else {
                        break Gap::AfterSubtree;
                    }
                }
                _ => match node.bytes.binary_search(&rest[0]) {
                    Ok(k) => {
                        self.push_child(k);
                        i += 1;
                    }
                    Err(0) => break Gap::BeforeChildren,
                    Err(k) => break Gap::AfterChild(k - 1),
                },
            }
        };
        if op == SeekOp::Eq {
            return false;
        }
        let forward = matches!(op, SeekOp::Ge | SeekOp::Gt);
        match gap {
            Gap::BeforeChildren if forward => self.step_next(),
            Gap::BeforeChildren => self.top().entry.is_some() || self.step_prev(),
            Gap::AfterChild(k) => {
                self.push_child(k);
                if forward {
                    self.skip_subtree()
                } else {
                    self.descend_last()
                }
            }
            Gap::AfterSubtree if forward => self.skip_subtree(),
            Gap::AfterSubtree => self.descend_last(),
        }
    }

    /// Stops at the smallest key of the current node's subtree, the node included.
    fn descend_first(&mut self) -> bool {
        loop {
            let node = self.top();
            if node.entry.is_some() {
                return true;
            }
            if node.children.is_empty() {
                return false; // the root of an empty tree
            }
            self.push_child(0);
        }
    }

    /// Stops at the largest key of the current node's subtree, the node included.
    fn descend_last(&mut self) -> bool {
        loop {
            let node = self.top();
            if node.children.is_empty() {
                return node.entry.is_some();
            }
            self.push_child(node.kid_count() - 1);
        }
    }

    /// Stops at the smallest key after the whole subtree of the current node.
    fn skip_subtree(&mut self) -> bool {
        loop {
            self.stack.pop();
            let Some(parent) = self.stack.last() else {
                return false;
            };
            if parent.child + 1 < parent.node.kid_count() {
                let k = parent.child + 1;
                self.push_child(k);
                return self.descend_first();
            }
        }
    }

    /// Stops at the smallest key after the current node's own.
    fn step_next(&mut self) -> bool {
        if self.top().children.is_empty() {
            self.skip_subtree()
        } else {
            self.push_child(0);
            self.descend_first()
        }
    }

    /// Stops at the largest key before the current node's own: in the subtree of a
    /// sibling on the left, or at an ancestor (whose key is a prefix of this one).
    fn step_prev(&mut self) -> bool {
        loop {
            self.stack.pop();
            let Some(parent) = self.stack.last() else {
                return false;
            };
            if parent.child > 0 {
                let k = parent.child - 1;
                self.push_child(k);
                return self.descend_last();
            }
            if parent.node.entry.is_some() {
                return true;
            }
        }
    }
}

#[cfg(test)]
impl<V> Rax<V> {
    /// Checks every invariant of the module doc and the counters; panics on the first
    /// one broken.
    fn check(&self) {
        match &self.repr {
            Repr::Small(None) => {}
            Repr::Small(Some(_)) => assert_eq!(self.len(), 1),
            Repr::Tree(t) => {
                assert!(t.len >= 2, "a tree of fewer than two keys");
                t.check();
            }
        }
    }
}

#[cfg(test)]
impl<V> Tree<V> {
    fn check(&self) {
        let mut nodes = 0;
        let mut keys = 0;
        let mut stack: Vec<(&Node<V>, Vec<u8>, bool)> = vec![(&self.root, Vec::new(), true)];
        while let Some((node, path, root)) = stack.pop() {
            nodes += 1;
            if let Some(e) = &node.entry {
                keys += 1;
                assert_eq!(&e.key[..], &path[..], "entry key differs from its path");
            }
            assert!(
                root || !node.is_vacant(),
                "a node without value or children"
            );
            let n = node.kid_count();
            assert_eq!(
                node.bytes.is_inline(),
                node.bytes.len() <= Bytes::INLINE,
                "short bytes on the heap"
            );
            assert_eq!(node.children.len(), capacity_for(n), "child slots");
            assert!(
                node.children[n..]
                    .iter()
                    .all(|c| c.is_vacant() && c.bytes.is_empty())
            );
            match n {
                0 => assert!(node.bytes.is_empty()),
                1 => {
                    assert!(!node.bytes.is_empty(), "empty run");
                    assert!(
                        !node.children[0].is_bare_compressed(),
                        "two runs not joined"
                    );
                }
                _ => {
                    assert!(n >= 2 && node.children.len() >= 2, "branch of one child");
                    assert!(
                        node.bytes.windows(2).all(|w| w[0] < w[1]),
                        "branch bytes unsorted"
                    );
                }
            }
            for (k, child) in node.kids().iter().enumerate() {
                let mut p = path.clone();
                if n == 1 {
                    p.extend_from_slice(&node.bytes);
                } else {
                    p.push(node.bytes[k]);
                }
                stack.push((child, p, false));
            }
        }
        assert_eq!(nodes, self.nodes, "node counter");
        assert_eq!(keys, self.len, "key counter");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::ops::Bound;

    /// A tree holding `keys`, each with its index as value.
    fn tree(keys: &[&[u8]]) -> Rax<usize> {
        let mut rax = Rax::new();
        for (i, k) in keys.iter().enumerate() {
            rax.insert(k, i);
        }
        rax.check();
        rax
    }

    fn keys_of<V>(rax: &Rax<V>) -> Vec<Vec<u8>> {
        rax.iter().map(|(k, _)| k.to_vec()).collect()
    }

    /// Node count of a tree built afresh (in sorted order) from the keys of `rax`.
    fn fresh_node_count<V>(rax: &Rax<V>) -> usize {
        let mut fresh = Rax::new();
        for (k, _) in rax.iter() {
            fresh.insert(k, ());
        }
        fresh.node_count()
    }

    fn id_key(ms: u64, seq: u64) -> [u8; 16] {
        let mut k = [0; 16];
        k[..8].copy_from_slice(&ms.to_be_bytes());
        k[8..].copy_from_slice(&seq.to_be_bytes());
        k
    }

    #[test]
    fn empty_tree_has_one_node_and_no_keys() {
        let rax: Rax<u32> = Rax::new();
        assert_eq!((rax.len(), rax.node_count()), (0, 1));
        assert!(rax.is_empty());
        assert_eq!(rax.first(), None);
        assert_eq!(rax.last(), None);
        assert_eq!(rax.iter().next(), None);
        assert_eq!(rax.iter().next_back(), None);
        assert_eq!(rax.get(b""), None);
        let mut c = rax.cursor();
        for op in [
            SeekOp::First,
            SeekOp::Last,
            SeekOp::Ge,
            SeekOp::Le,
            SeekOp::Eq,
        ] {
            assert!(!c.seek(op, b"x"));
            assert_eq!(c.next(), None);
        }
    }

    #[test]
    fn doc_example_has_the_node_count_drawn() {
        let mut rax = tree(&[b"bin", b"bus", b"busy", b"bust"]);
        assert_eq!(rax.node_count(), 8);
        rax.insert(b"bundle", 4);
        assert_eq!(rax.node_count(), 10);
        rax.insert(b"bunny", 5);
        rax.check();
        // "dle" becomes a branch [d n]: "d" → "le" → ("bundle"), "n" → "y" → ("bunny").
        assert_eq!(rax.node_count(), 13);
        assert_eq!(tree(&[b"stream:1", b"stream:2"]).node_count(), 4);
    }

    #[test]
    fn one_key_takes_a_run_and_a_leaf() {
        let rax = tree(&[b"hello"]);
        assert_eq!(rax.node_count(), 2);
        assert_eq!(rax.get(b"hello"), Some(&0));
        assert_eq!(rax.get(b"hell"), None);
        assert_eq!(rax.get(b"hello!"), None);
        assert_eq!(rax.get(b""), None);
    }

    #[test]
    fn empty_key_lives_on_the_root() {
        let mut rax = tree(&[b""]);
        assert_eq!((rax.len(), rax.node_count()), (1, 1));
        assert_eq!(rax.get(b""), Some(&0));
        rax.insert(b"a", 1);
        assert_eq!(rax.node_count(), 2);
        assert_eq!(keys_of(&rax), [b"".to_vec(), b"a".to_vec()]);
        assert_eq!(rax.remove(b""), Some(0));
        rax.check();
        assert_eq!(rax.node_count(), 2);
        assert_eq!(rax.remove(b"a"), Some(1));
        rax.check();
        assert_eq!((rax.len(), rax.node_count()), (0, 1));
    }

    #[test]
    fn keys_that_are_prefixes_of_others_each_get_a_node() {
        let rax = tree(&[b"abcdef", b"abc", b"a", b"abcdefgh"]);
        // root "a" -> ("a") "bc" -> ("abc") "def" -> ("abcdef") "gh" -> ("abcdefgh")
        assert_eq!(rax.node_count(), 5);
        assert_eq!(
            keys_of(&rax),
            [&b"a"[..], b"abc", b"abcdef", b"abcdefgh"].map(|k| k.to_vec())
        );
        assert_eq!(rax.get(b"ab"), None);
        assert_eq!(rax.get(b"abc"), Some(&1));
        assert_eq!(rax.get(b"abcde"), None);
    }

    #[test]
    fn insert_replaces_and_try_insert_refuses() {
        let mut rax = tree(&[b"k1", b"k2"]);
        let nodes = rax.node_count();
        assert_eq!(rax.insert(b"k1", 10), Some(0));
        assert_eq!(rax.try_insert(b"k2", 20), Err(20));
        assert_eq!(rax.node_count(), nodes);
        assert_eq!(rax.get(b"k2"), Some(&1));
        assert_eq!(rax.try_insert(b"k", 30), Ok(()));
        assert_eq!(rax.try_insert(b"k3", 40), Ok(()));
        rax.check();
        assert_eq!(rax.len(), 4);
        assert_eq!(rax.get(b"k1"), Some(&10));
        *rax.get_mut(b"k3").unwrap() += 1;
        assert_eq!(rax.get(b"k3"), Some(&41));
        assert_eq!(rax.get_mut(b"k4"), None);
    }

    #[test]
    fn remove_joins_runs_back_to_the_fresh_shape() {
        let all: [&[u8]; 9] = [
            b"romane",
            b"romanus",
            b"romulus",
            b"rubens",
            b"ruber",
            b"rubicon",
            b"rubicundus",
            b"r",
            b"rom",
        ];
        let mut rax = tree(&all);
        for (n, k) in all.iter().enumerate() {
            assert_eq!(rax.remove(k), Some(n));
            assert_eq!(rax.remove(k), None);
            rax.check();
            assert_eq!(
                rax.node_count(),
                fresh_node_count(&rax),
                "after removing {k:?}"
            );
        }
        assert_eq!((rax.len(), rax.node_count()), (0, 1));
    }

    #[test]
    fn removing_the_middle_key_of_a_chain_joins_two_runs() {
        let mut rax = tree(&[b"abc", b"abcdef", b"abcdefghi"]);
        assert_eq!(rax.node_count(), 4);
        rax.remove(b"abcdef");
        rax.check();
        assert_eq!(rax.node_count(), 3);
        rax.remove(b"abc");
        rax.check();
        assert_eq!(rax.node_count(), 2);
    }

    #[test]
    fn removing_a_branch_sibling_joins_three_runs() {
        // "ab" then a branch [c x]; "c" leads to run "def"; removing "abx…" leaves one run.
        let mut rax = tree(&[b"abcdef", b"abxyz"]);
        assert_eq!(rax.node_count(), 6);
        rax.remove(b"abxyz");
        rax.check();
        assert_eq!(rax.node_count(), 2);
    }

    #[test]
    fn missing_keys_are_not_removed_and_change_nothing() {
        let mut rax = tree(&[b"abc", b"abd"]);
        let nodes = rax.node_count();
        for k in [&b""[..], b"a", b"ab", b"abe", b"abcd", b"x"] {
            assert_eq!(rax.remove(k), None);
        }
        rax.check();
        assert_eq!((rax.len(), rax.node_count()), (2, nodes));
    }

    #[test]
    fn insert_order_does_not_change_the_shape() {
        let keys: Vec<Vec<u8>> = (0..200u64)
            .map(|i| id_key(1000 + i * 7 % 300, i % 3).to_vec())
            .collect();
        let mut a = Rax::new();
        let mut b = Rax::new();
        for k in &keys {
            a.insert(k, ());
        }
        for k in keys.iter().rev() {
            b.insert(k, ());
        }
        a.check();
        b.check();
        assert_eq!(a.node_count(), b.node_count());
        assert_eq!(keys_of(&a), keys_of(&b));
    }

    /// Keys "a", "b", "ba", "bb", "bba", "c": exercises every seek operator at keys,
    /// between keys, inside runs and beyond both ends.
    fn seek_fixture() -> Rax<usize> {
        tree(&[b"b", b"bba", b"a", b"c", b"bb", b"ba", b"dxyz"])
    }

    fn seek(rax: &Rax<usize>, op: SeekOp, key: &[u8]) -> Option<Vec<u8>> {
        let mut c = rax.cursor();
        let found = c.seek(op, key);
        let got = c.next().map(|(k, _)| k.to_vec());
        assert_eq!(found, got.is_some());
        got
    }

    #[test]
    fn seek_first_and_last_ignore_the_key() {
        let rax = seek_fixture();
        assert_eq!(seek(&rax, SeekOp::First, b"zzz"), Some(b"a".to_vec()));
        assert_eq!(seek(&rax, SeekOp::Last, b""), Some(b"dxyz".to_vec()));
    }

    #[test]
    fn seek_eq_finds_only_present_keys() {
        let rax = seek_fixture();
        assert_eq!(seek(&rax, SeekOp::Eq, b"bb"), Some(b"bb".to_vec()));
        for k in [&b""[..], b"bbb", b"d", b"dx", b"dxyzz", b"e"] {
            assert_eq!(seek(&rax, SeekOp::Eq, k), None, "{k:?}");
        }
    }

    #[test]
    fn seek_ge_and_gt() {
        let rax = seek_fixture();
        let s = |op, k: &[u8]| seek(&rax, op, k);
        assert_eq!(s(SeekOp::Ge, b""), Some(b"a".to_vec()));
        assert_eq!(s(SeekOp::Gt, b""), Some(b"a".to_vec()));
        assert_eq!(s(SeekOp::Ge, b"b"), Some(b"b".to_vec()));
        assert_eq!(s(SeekOp::Gt, b"b"), Some(b"ba".to_vec()));
        assert_eq!(s(SeekOp::Gt, b"bba"), Some(b"c".to_vec()));
        assert_eq!(s(SeekOp::Ge, b"bbaa"), Some(b"c".to_vec()));
        assert_eq!(s(SeekOp::Ge, b"bc"), Some(b"c".to_vec()));
        assert_eq!(s(SeekOp::Ge, b"d"), Some(b"dxyz".to_vec()));
        assert_eq!(s(SeekOp::Ge, b"dxa"), Some(b"dxyz".to_vec()));
        assert_eq!(s(SeekOp::Ge, b"dxz"), None);
        assert_eq!(s(SeekOp::Gt, b"dxyz"), None);
        assert_eq!(s(SeekOp::Ge, b"e"), None);
    }

    #[test]
    fn seek_le_and_lt() {
        let rax = seek_fixture();
        let s = |op, k: &[u8]| seek(&rax, op, k);
        assert_eq!(s(SeekOp::Le, b""), None);
        assert_eq!(s(SeekOp::Lt, b"a"), None);
        assert_eq!(s(SeekOp::Le, b"a"), Some(b"a".to_vec()));
        assert_eq!(s(SeekOp::Lt, b"b"), Some(b"a".to_vec()));
        assert_eq!(s(SeekOp::Lt, b"ba"), Some(b"b".to_vec()));
        assert_eq!(s(SeekOp::Le, b"b0"), Some(b"b".to_vec()));
        assert_eq!(s(SeekOp::Lt, b"c"), Some(b"bba".to_vec()));
        assert_eq!(s(SeekOp::Le, b"bbz"), Some(b"bba".to_vec()));
        assert_eq!(s(SeekOp::Le, b"dx"), Some(b"c".to_vec()));
        assert_eq!(s(SeekOp::Lt, b"dxyz"), Some(b"c".to_vec()));
        assert_eq!(s(SeekOp::Le, b"dxz"), Some(b"dxyz".to_vec()));
        assert_eq!(s(SeekOp::Le, b"\xff"), Some(b"dxyz".to_vec()));
    }

    #[test]
    fn cursor_walks_both_ways_from_the_seek() {
        let rax = seek_fixture();
        let all = keys_of(&rax);
        let mut c = rax.cursor();
        assert_eq!(c.next(), None, "unpositioned");
        assert!(c.seek(SeekOp::Ge, b"bb"));
        assert_eq!(c.prev().map(|(k, _)| k.to_vec()), Some(b"bb".to_vec()));
        assert_eq!(c.prev().map(|(k, _)| k.to_vec()), Some(b"ba".to_vec()));
        assert_eq!(c.next().map(|(k, _)| k.to_vec()), Some(b"bb".to_vec()));
        assert_eq!(c.next().map(|(k, _)| k.to_vec()), Some(b"bba".to_vec()));

        assert!(c.seek(SeekOp::First, b""));
        let mut fwd = Vec::new();
        while let Some((k, v)) = c.next() {
            assert_eq!(rax.get(k), Some(v));
            fwd.push(k.to_vec());
        }
        assert_eq!(fwd, all);
        assert_eq!(c.prev(), None, "stays exhausted");

        assert!(c.seek(SeekOp::Last, b""));
        let mut back = Vec::new();
        while let Some((k, _)) = c.prev() {
            back.push(k.to_vec());
        }
        back.reverse();
        assert_eq!(back, all);
        assert_eq!(c.next(), None, "stays exhausted");
    }

    #[test]
    fn iter_meets_in_the_middle() {
        let rax = seek_fixture();
        let mut it = rax.iter();
        let mut got = Vec::new();
        loop {
            match (it.next(), it.next_back()) {
                (Some(a), Some(b)) => got.extend([a.0.to_vec(), b.0.to_vec()]),
                (Some(a), None) => got.push(a.0.to_vec()),
                (None, _) => break,
            }
        }
        got.sort();
        assert_eq!(got, keys_of(&rax));
        assert_eq!(rax.iter().size_hint(), (rax.len(), Some(rax.len())));
    }

    #[test]
    fn values_mut_and_iter_mut_visit_in_key_order() {
        let mut rax = seek_fixture();
        for v in rax.values_mut() {
            *v *= 10;
        }
        for (i, (k, v)) in rax.iter_mut().enumerate() {
            assert_eq!(rax_key_rank(k), i);
            *v += 1;
        }
        assert_eq!(rax.get(b"a"), Some(&21));
        assert_eq!(
            rax.first().map(|(k, v)| (k.to_vec(), *v)),
            Some((b"a".to_vec(), 21))
        );
        assert_eq!(
            rax.last().map(|(k, v)| (k.to_vec(), *v)),
            Some((b"dxyz".to_vec(), 61))
        );
    }

    fn rax_key_rank(k: &[u8]) -> usize {
        [&b"a"[..], b"b", b"ba", b"bb", b"bba", b"c", b"dxyz"]
            .iter()
            .position(|x| *x == k)
            .unwrap()
    }

    #[test]
    fn clear_and_clone() {
        let mut rax = seek_fixture();
        let copy = rax.clone();
        rax.clear();
        rax.check();
        copy.check();
        assert_eq!((rax.len(), rax.node_count()), (0, 1));
        assert_eq!(copy.len(), 7);
        assert_eq!(format!("{:?}", tree(&[b"a"])), "{[97]: 0}");
    }

    #[test]
    fn a_deep_chain_needs_no_deep_stack() {
        // Keys "", "A", "AA", … make one node per key on a single path. Every
        // operation below runs on a 64 KiB stack, which a recursion per level would
        // overflow.
        let run = || {
            let mut rax = Rax::new();
            let long = vec![b'A'; 4000];
            for n in 0..=long.len() {
                rax.insert(&long[..n], ());
            }
            assert_eq!(rax.node_count(), long.len() + 1);
            assert_eq!(rax.remove(&long[..2000]), Some(()));
            assert_eq!(rax.node_count(), long.len());
            let mut c = rax.cursor();
            assert!(c.seek(SeekOp::Ge, &long[..2000]));
            assert_eq!(c.next().map(|(k, _)| k.len()), Some(2001));
            assert!(c.seek(SeekOp::Last, b""));
            assert_eq!(c.prev().map(|(k, _)| k.len()), Some(4000));
            assert_eq!(rax.iter().rev().count(), long.len());
            assert_eq!(rax.values_mut().count(), long.len());
            drop(rax);
        };
        std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(run)
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn a_wide_branch_grows_and_shrinks_through_its_spare_slots() {
        let mut rax = Rax::new();
        let bytes: Vec<u8> = (0..=255u8).map(|b| b.wrapping_mul(167)).collect();
        for (i, &b) in bytes.iter().enumerate() {
            rax.insert(&[b'x', b, b'y'], i);
            rax.check();
        }
        assert_eq!(rax.node_count(), 2 + 2 * 256);
        assert_eq!(capacity_for(129), 144);
        assert_eq!(capacity_for(256), 256);
        for (i, &b) in bytes.iter().enumerate().rev() {
            assert_eq!(rax.remove(&[b'x', b, b'y']), Some(i));
            rax.check();
        }
        assert_eq!(rax.node_count(), 1);
    }

    #[test]
    fn node_sizes_are_as_documented() {
        assert_eq!(mem::size_of::<Bytes>(), 24);
        assert_eq!(mem::size_of::<Node<u32>>(), 72);
        assert_eq!(mem::size_of::<Node<u64>>(), 72);
        assert_eq!(mem::size_of::<Node<Box<[u8]>>>(), 80);
    }

    #[test]
    fn sequential_stream_ids_keep_two_nodes_per_key_or_less() {
        let mut rax = Rax::new();
        for ms in 0..10_000u64 {
            rax.insert(&id_key(1_700_000_000_000 + ms, 0), ());
        }
        rax.check();
        assert!(
            rax.node_count() <= 2 * rax.len() + 64,
            "{}",
            rax.node_count()
        );
        let mut c = rax.cursor();
        assert!(c.seek(SeekOp::Le, &id_key(1_700_000_000_500, 7)));
        assert_eq!(
            c.next().map(|(k, _)| k.to_vec()),
            Some(id_key(1_700_000_000_500, 0).to_vec())
        );
    }

    // ---- model tests --------------------------------------------------------------

    #[derive(Debug, Clone)]
    enum Op {
        Insert(Vec<u8>, u32),
        TryInsert(Vec<u8>, u32),
        Remove(Vec<u8>),
        Get(Vec<u8>),
        /// Seek, then walk: `true` is `next()`, `false` is `prev()`.
        Seek(SeekOp, Vec<u8>, Vec<bool>),
    }

    /// Alphabet "abcd", lengths 0..8: many shared prefixes and prefix keys.
    fn small_keys() -> BoxedStrategy<Vec<u8>> {
        prop::collection::vec(prop::sample::select(b"abcd".to_vec()), 0..8).boxed()
    }

    /// "A" repeated 0..40 times: a single path, every key a prefix of the next.
    fn chain_keys() -> BoxedStrategy<Vec<u8>> {
        (0..40usize).prop_map(|n| vec![b'A'; n]).boxed()
    }

    /// Random bytes, including 0x00 and 0xff, lengths 0..12.
    fn random_keys() -> BoxedStrategy<Vec<u8>> {
        prop::collection::vec(any::<u8>(), 0..12).boxed()
    }

    /// 16-byte big-endian (ms, seq) pairs, as the stream index and PELs use.
    fn id_keys() -> BoxedStrategy<Vec<u8>> {
        let ms = prop_oneof![
            0u64..64,
            1_700_000_000_000u64..1_700_000_000_300,
            any::<u64>()
        ];
        (ms, prop_oneof![0u64..4, any::<u64>()])
            .prop_map(|(m, s)| id_key(m, s).to_vec())
            .boxed()
    }

    fn seek_ops() -> impl Strategy<Value = SeekOp> {
        prop::sample::select(vec![
            SeekOp::First,
            SeekOp::Last,
            SeekOp::Ge,
            SeekOp::Gt,
            SeekOp::Le,
            SeekOp::Lt,
            SeekOp::Eq,
        ])
    }

    fn ops(keys: BoxedStrategy<Vec<u8>>) -> impl Strategy<Value = Vec<Op>> {
        let op = prop_oneof![
            4 => (keys.clone(), any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
            1 => (keys.clone(), any::<u32>()).prop_map(|(k, v)| Op::TryInsert(k, v)),
            3 => keys.clone().prop_map(Op::Remove),
            1 => keys.clone().prop_map(Op::Get),
            2 => (seek_ops(), keys, prop::collection::vec(any::<bool>(), 0..6))
                .prop_map(|(o, k, w)| Op::Seek(o, k, w)),
        ];
        prop::collection::vec(op, 0..120)
    }

    fn any_ops() -> impl Strategy<Value = Vec<Op>> {
        prop_oneof![
            ops(small_keys()),
            ops(chain_keys()),
            ops(random_keys()),
            ops(id_keys())
        ]
    }

    /// What `seek` finds in the model.
    fn model_seek(m: &BTreeMap<Vec<u8>, u32>, op: SeekOp, key: &[u8]) -> Option<Vec<u8>> {
        let r = |lo: Bound<&[u8]>, hi: Bound<&[u8]>| m.range::<[u8], _>((lo, hi));
        let found = match op {
            SeekOp::First => m.keys().next(),
            SeekOp::Last => m.keys().next_back(),
            SeekOp::Ge => r(Bound::Included(key), Bound::Unbounded)
                .next()
                .map(|e| e.0),
            SeekOp::Gt => r(Bound::Excluded(key), Bound::Unbounded)
                .next()
                .map(|e| e.0),
            SeekOp::Le => r(Bound::Unbounded, Bound::Included(key))
                .next_back()
                .map(|e| e.0),
            SeekOp::Lt => r(Bound::Unbounded, Bound::Excluded(key))
                .next_back()
                .map(|e| e.0),
            SeekOp::Eq => m.get_key_value(key).map(|e| e.0),
        };
        found.cloned()
    }

    /// Runs `ops` on a Rax and on a BTreeMap and compares every answer, then the whole
    /// contents both ways and the node count against a tree built afresh.
    fn run_model(ops: &[Op]) -> Result<(), TestCaseError> {
        let mut rax = Rax::new();
        let mut model: BTreeMap<Vec<u8>, u32> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Insert(k, v) => prop_assert_eq!(rax.insert(k, *v), model.insert(k.clone(), *v)),
                Op::TryInsert(k, v) => {
                    let expect = if model.contains_key(k) {
                        Err(*v)
                    } else {
                        model.insert(k.clone(), *v);
                        Ok(())
                    };
                    prop_assert_eq!(rax.try_insert(k, *v), expect);
                }
                Op::Remove(k) => prop_assert_eq!(rax.remove(k), model.remove(k)),
                Op::Get(k) => {
                    prop_assert_eq!(rax.get(k), model.get(k));
                    prop_assert_eq!(rax.get_mut(k).copied(), model.get(k).copied());
                }
                Op::Seek(sop, k, walk) => {
                    let mut c = rax.cursor();
                    let mut expect = model_seek(&model, *sop, k);
                    prop_assert_eq!(c.seek(*sop, k), expect.is_some());
                    let mut first = true;
                    for &forward in walk {
                        if !first {
                            expect = expect.and_then(|at| {
                                let b = Bound::Excluded(at.as_slice());
                                let mut r = if forward {
                                    model.range::<[u8], _>((b, Bound::Unbounded))
                                } else {
                                    model.range::<[u8], _>((Bound::Unbounded, b))
                                };
                                let e = if forward { r.next() } else { r.next_back() };
                                e.map(|e| e.0.clone())
                            });
                        }
                        first = false;
                        let got = if forward { c.next() } else { c.prev() };
                        let got = got.map(|(k, v)| (k.to_vec(), *v));
                        let want = expect.as_ref().map(|k| (k.clone(), model[k]));
                        prop_assert_eq!(got, want, "{:?} {:?} walk {:?}", sop, k, walk);
                    }
                }
            }
            rax.check();
            prop_assert_eq!(rax.len(), model.len());
        }
        let fwd: Vec<(Vec<u8>, u32)> = rax.iter().map(|(k, v)| (k.to_vec(), *v)).collect();
        let want: Vec<(Vec<u8>, u32)> = model.iter().map(|(k, v)| (k.clone(), *v)).collect();
        prop_assert_eq!(&fwd, &want);
        let mut back: Vec<(Vec<u8>, u32)> =
            rax.iter().rev().map(|(k, v)| (k.to_vec(), *v)).collect();
        back.reverse();
        prop_assert_eq!(&back, &want);
        let mut cur = rax.cursor();
        let mut walked = Vec::new();
        if cur.seek(SeekOp::Last, b"") {
            while let Some((k, v)) = cur.prev() {
                walked.push((k.to_vec(), *v));
            }
        }
        walked.reverse();
        prop_assert_eq!(&walked, &want);
        prop_assert_eq!(
            rax.first().map(|(k, v)| (k.to_vec(), *v)),
            want.first().cloned()
        );
        prop_assert_eq!(
            rax.last().map(|(k, v)| (k.to_vec(), *v)),
            want.last().cloned()
        );
        let fresh = tree(&want.iter().map(|(k, _)| k.as_slice()).collect::<Vec<_>>());
        prop_assert_eq!(rax.node_count(), fresh.node_count(), "tree not minimal");
        Ok(())
    }

    #[test]
    fn node_count_of_sorted_keys_by_hand() {
        let count = |keys: &[&[u8]]| node_count_of_sorted(keys.iter());
        assert_eq!(count(&[]), 1);
        assert_eq!(count(&[b""]), 1);
        assert_eq!(count(&[b"abc"]), 2);
        // A root branch and two leaves.
        assert_eq!(count(&[b"a", b"b"]), 3);
        // Root run "a", a branch [b c], two leaves.
        assert_eq!(count(&[b"ab", b"ac"]), 4);
        // Root branch [a b]; "a" a run to the branch "ab" [c d]; three leaves.
        assert_eq!(count(&[b"abc", b"abd", b"b"]), 6);
        for keys in [
            &[&b"abc"[..], b"abd", b"b"][..],
            &[b"aa", b"ab", b"ac", b"b"],
            &[b"stream:1", b"stream:2", b"stream:30"],
        ] {
            assert_eq!(count(keys), tree(keys).node_count(), "{keys:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

        #[test]
        fn rax_agrees_with_btreemap(ops in any_ops()) {
            run_model(&ops)?;
        }

        #[test]
        fn the_last_path_walk_ends_at_the_largest_key(
            keys in prop_oneof![
                prop::collection::vec(id_keys(), 0..200),
                prop::collection::vec(random_keys(), 0..60),
            ],
            removed in 0usize..4,
        ) {
            let mut rax = Rax::new();
            for (i, k) in keys.iter().enumerate() {
                rax.insert(k, i);
            }
            // Removals too (a tree given back to one key, or to none).
            for k in keys.iter().rev().take(removed) {
                rax.remove(k);
            }
            let mut walk = rax.last_path();
            let mut reached = None;
            for _ in 0..=keys.iter().map(Vec::len).max().unwrap_or(0) + 2 {
                if let Some(v) = walk.step() {
                    prop_assert!(reached.is_none(), "the value is handed over once");
                    reached = Some(*v);
                }
            }
            prop_assert!(walk.is_done());
            prop_assert_eq!(walk.step(), None);
            prop_assert_eq!(reached, rax.last().map(|(_, v)| *v));
        }

        #[test]
        fn node_count_of_sorted_keys_matches_the_tree(
            keys in prop_oneof![
                prop::collection::vec(id_keys(), 0..200),
                prop::collection::vec(prop::collection::vec(prop::sample::select(b"ab".to_vec()), 1..6), 0..40),
                prop::collection::vec(random_keys(), 0..60),
            ],
        ) {
            let mut rax = Rax::new();
            for k in &keys {
                rax.insert(k, ());
            }
            // Drop every key that is a prefix of another.
            let sorted: Vec<&[u8]> = rax.iter().map(|(k, _)| k).collect();
            let free: Vec<&[u8]> = sorted
                .iter()
                .copied()
                .filter(|k| !sorted.iter().any(|o| o.len() > k.len() && o.starts_with(k)))
                .collect();
            let mut fresh = Rax::new();
            for k in &free {
                fresh.insert(k, ());
            }
            prop_assert_eq!(node_count_of_sorted(free.iter()), fresh.node_count());
        }

        #[test]
        fn node_count_depends_only_on_the_key_set(
            keys in prop::collection::vec(prop_oneof![small_keys(), id_keys(), random_keys()], 0..80),
            removed in prop::collection::vec(any::<prop::sample::Index>(), 0..40),
        ) {
            let mut rax = Rax::new();
            for k in &keys {
                rax.insert(k, ());
            }
            for i in &removed {
                if !keys.is_empty() {
                    rax.remove(&keys[i.index(keys.len())]);
                }
            }
            rax.check();
            let mut sorted = Rax::new();
            for (k, _) in rax.iter() {
                sorted.insert(k, ());
            }
            let mut reversed = Rax::new();
            for (k, _) in rax.iter().rev() {
                reversed.insert(k, ());
            }
            prop_assert_eq!(rax.node_count(), sorted.node_count());
            prop_assert_eq!(rax.node_count(), reversed.node_count());
        }
    }
}
