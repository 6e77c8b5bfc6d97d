//! The keyspace's hash table: Redis's `dict`, chained buckets with incremental rehashing
//! and the reverse-binary `SCAN` cursor.
//!
//! # Why not `std::collections::HashMap`
//!
//! A `HashMap<Bytes, Stream>` stores the value inline in an open-addressed slot array, so
//! every empty slot costs a whole stream header (about 200 bytes) and the table doubles
//! all at once; at 30,000 one-entry streams that came to ~870 bytes per stream. `SCAN`
//! also needed a second, ordered index of every key. Here a key costs one bucket pointer
//! (8 bytes, at a load between 1/8 and 1) plus one allocation holding the chain link,
//! the value and the key — and `SCAN` walks the buckets themselves.
//!
//! # Layout
//!
//! ```text
//!  tables[0]  (the table; during a rehash, the old one)
//!  +--------+--------+--------+--------+
//!  | bucket | bucket | bucket | bucket |   size = 2^k buckets, each an optional pointer
//!  +---|----+--------+---|----+--------+
//!      v                 v
//!   +------+-------+-------+-----+---------+     +------+-------+-------+-----+-----+
//!   | next | value | clock | len | key ... | --> | next | value | clock | len | key | --> None
//!   +------+-------+-------+-----+---------+     +------+-------+-------+-----+-----+
//!    8 B    V       3 B     1 B   len bytes
//!
//!   one allocation per key, sized to it: the link, the value, the key's access clock
//!   (24 bits, little-endian: Redis's `robj.lru` field, see core/evict/clock.rs), then
//!   the key's bytes (a length byte; 255 and a usize for keys of 255 bytes or more).
//!   Always a copy: never a slice of a client's read buffer, which it would keep alive.
//!
//!  tables[1]  empty, except while rehashing: the new table (twice or a fraction the size)
//! ```
//!
//! With the keyspace's 24-byte `Value` (types/mod.rs) a slot is 36 bytes plus the key:
//! the 48-byte jemalloc class for keys of up to 12 bytes, 64 up to 28, and so on. The
//! three clock bytes have no padding to hide in (the head is 32 bytes, all used), so
//! they cost a size class only where the key's length left fewer than three bytes of
//! rounding (keys of 13 to 15 bytes, 29 to 31, ...: 3 lengths in 16). Before the clock
//! a slot was 33 bytes plus the key (it was
//! a fixed 56 bytes, with a 24-byte key field inline up to 22 bytes and a boxed copy
//! beyond: 64 bytes for every short key). Redis 8 embeds keys in its entries too. The
//! `slot` module below holds the allocation and the only `unsafe` code of the dict.
//!
//! A key lives in bucket `hash(key) & (size - 1)`. The hash is SipHash-1-2, Redis's
//! (core/siphash.rs), with a key drawn at random per table set, so clients cannot
//! choose colliding keys.
//!
//! # Growth and incremental rehashing
//!
//! When an insert finds `used >= size` (load factor 1) the table starts to grow to the
//! next power of two above `used`; when a removal leaves it less than 1/8 full (and
//! larger than [`MIN_SIZE`]) it starts to shrink. Either way a second table is allocated
//! and every later write moves a few buckets ([`REHASH_STEP`]) from the old table to the
//! new one — Redis's `_dictRehashStep` — so no single command pays for moving the whole
//! keyspace. While both tables exist, lookups try both and inserts go to the new one.
//!
//! # Scanning
//!
//! [`Dict::scan`] is Redis's `dictScan`: the cursor is a bucket index incremented in
//! *reversed* bit order, so that when the table grows or shrinks between two calls the
//! buckets already visited map onto buckets the cursor has already passed. Every key
//! present for the whole scan is returned at least once; a key may be returned twice
//! when the table shrank in between; a cursor of 0 starts and ends a scan.

use super::siphash::SipKey;
use slot::Slot;

/// Smallest non-empty table, in buckets (Redis's `DICT_HT_INITIAL_SIZE`).
pub const MIN_SIZE: usize = 4;

/// Buckets moved from the old table by each write during a rehash.
pub const REHASH_STEP: usize = 1;

/// A chain link: an optional slot (one word: the pointer is never null).
type Link<V> = Option<Slot<V>>;

/// The slot allocation and its owning pointer: the one place in the dict that needs
/// `unsafe`.
///
/// Why unsafe here: a slot is one allocation holding the chain link, the value and the
/// key's bytes, sized to the key, behind a *thin* 8-byte pointer (so that a bucket stays
/// one word). Safe Rust has no way to build such a value: a `Box` of a struct ending in
/// `[u8]` is a fat 16-byte pointer (doubling the bucket array), and a fixed-size key
/// field (the 24-byte `ShortBytes` this replaced) put every slot in the 64-byte size
/// class. With the bytes at the end, a short key and a 24-byte value fit the 48-byte
/// class: `SET str:<i> <integer>` costs 48 bytes of slot instead of 64, and a key of up to
/// 223 bytes never costs more than the fixed field (plus a boxed copy beyond 22) did.
///
/// The contract is small and checked by the tests below (a proptest against a
/// `HashMap`, with keys across the length-prefix boundary and values whose drops are
/// counted): [`Slot::new`] writes every byte it will later read; the key bytes are
/// written once and never again, and lie outside the `Head` that `head`/`head_mut`
/// borrow; `Drop` and [`Slot::into_value`] free the allocation with the layout it was
/// made with, computed from the stored length.
#[allow(unsafe_code)]
mod slot {
    use std::alloc::{self, Layout};
    use std::marker::PhantomData;
    use std::mem::ManuallyDrop;
    use std::ptr::{self, NonNull};

    /// The fixed part of a slot: the rest of the bucket's chain and the value.
    #[repr(C)]
    pub(super) struct Head<V> {
        /// The next slot of the bucket.
        pub next: Option<Slot<V>>,
        /// The key's value.
        pub value: V,
    }

    /// A length byte of this value means the length follows as a `usize`.
    const LONG: u8 = u8::MAX;

    /// An owning thin pointer to one slot allocation:
    ///
    /// ```text
    ///  | Head<V>: next, value | clock: 3 B | len: u8 | key bytes |            len < 255
    ///  | Head<V>: next, value | clock: 3 B | 255 | len: usize | key bytes |   longer keys
    /// ```
    pub(super) struct Slot<V> {
        ptr: NonNull<Head<V>>,
        _owns: PhantomData<Head<V>>,
    }

    // SAFETY: a `Slot` owns its allocation exactly as a `Box<Head<V>>` would (the key
    // bytes are plain bytes), so it may cross threads whenever `V` may.
    unsafe impl<V: Send> Send for Slot<V> {}
    // SAFETY: as above; `&Slot` only hands out `&Head<V>` and `&[u8]`.
    unsafe impl<V: Sync> Sync for Slot<V> {}

    impl<V> Slot<V> {
        /// Where the 24-bit access clock starts: right after the head (its size is a
        /// multiple of its alignment, so nothing of the head's own padding is reused).
        const CLOCK_AT: usize = std::mem::size_of::<Head<V>>();

        /// Where the key's length prefix starts: right after the clock.
        const KEY_AT: usize = Self::CLOCK_AT + 3;

        /// The bytes the length prefix takes for a key of `len` bytes.
        fn prefix(len: usize) -> usize {
            if len < usize::from(LONG) {
                1
            } else {
                1 + std::mem::size_of::<usize>()
            }
        }

        /// The allocation for a key of `len` bytes.
        pub(super) fn layout(len: usize) -> Layout {
            let size = Self::KEY_AT
                .saturating_add(Self::prefix(len))
                .saturating_add(len);
            // A key that exists in memory is far below isize::MAX bytes; failing here
            // is the "capacity overflow" every std collection panics with.
            Layout::from_size_align(size, std::mem::align_of::<Head<V>>())
                .expect("capacity overflow: a key near isize::MAX bytes")
        }

        /// A slot holding `key` (copied), `value` and the access clock `clock` (its
        /// low 24 bits), linked to nothing.
        pub(super) fn new(key: &[u8], value: V, clock: u32) -> Slot<V> {
            let layout = Self::layout(key.len());
            // SAFETY: the layout's size is at least KEY_AT + 1 > 0.
            let raw = unsafe { alloc::alloc(layout) };
            let Some(ptr) = NonNull::new(raw.cast::<Head<V>>()) else {
                alloc::handle_alloc_error(layout)
            };
            // SAFETY: `raw` is a fresh allocation of `layout`, aligned for `Head<V>` and
            // KEY_AT + prefix + len bytes long: the head, the prefix and the key bytes
            // are each written inside it, without overlap.
            unsafe {
                ptr.as_ptr().write(Head { next: None, value });
                let c = clock.to_le_bytes();
                ptr::copy_nonoverlapping(c.as_ptr(), raw.add(Self::CLOCK_AT), 3);
                let mut at = raw.add(Self::KEY_AT);
                if key.len() < usize::from(LONG) {
                    at.write(key.len() as u8);
                    at = at.add(1);
                } else {
                    at.write(LONG);
                    at.add(1).cast::<usize>().write_unaligned(key.len());
                    at = at.add(1 + std::mem::size_of::<usize>());
                }
                ptr::copy_nonoverlapping(key.as_ptr(), at, key.len());
            }
            Slot {
                ptr,
                _owns: PhantomData,
            }
        }

        /// The key's bytes.
        #[inline]
        pub(super) fn key(&self) -> &[u8] {
            // SAFETY: `new` wrote the prefix and the bytes it describes at KEY_AT, and
            // nothing writes them again; they lie outside the head, so no `&mut Head`
            // overlaps them.
            unsafe {
                let at = self.ptr.as_ptr().cast::<u8>().add(Self::KEY_AT);
                let first = at.read();
                if first < LONG {
                    std::slice::from_raw_parts(at.add(1), usize::from(first))
                } else {
                    let len = at.add(1).cast::<usize>().read_unaligned();
                    std::slice::from_raw_parts(at.add(1 + std::mem::size_of::<usize>()), len)
                }
            }
        }

        /// The access clock (24 bits).
        #[inline]
        pub(super) fn clock(&self) -> u32 {
            let mut c = [0u8; 4];
            // SAFETY: `new` wrote the three clock bytes at CLOCK_AT, inside the
            // allocation and outside the head, so no `&mut Head` overlaps them.
            unsafe {
                ptr::copy_nonoverlapping(
                    self.ptr.as_ptr().cast::<u8>().add(Self::CLOCK_AT),
                    c.as_mut_ptr(),
                    3,
                );
            }
            u32::from_le_bytes(c)
        }

        /// Sets the access clock (its low 24 bits are kept).
        #[inline]
        pub(super) fn set_clock(&mut self, clock: u32) {
            let c = clock.to_le_bytes();
            // SAFETY: as `clock`; `&mut self` makes the write unique, and the pointer
            // comes from the allocation itself, so it may write.
            unsafe {
                ptr::copy_nonoverlapping(
                    c.as_ptr(),
                    self.ptr.as_ptr().cast::<u8>().add(Self::CLOCK_AT),
                    3,
                );
            }
        }

        /// Asks the caches for this slot's lines: the head and the key's length prefix
        /// (a lookup compares the key first). Reads nothing itself.
        #[inline]
        pub(super) fn prefetch(&self) {
            let head = self.ptr.as_ptr().cast::<u8>();
            crate::util::prefetch(head);
            crate::util::prefetch(head.wrapping_add(Self::KEY_AT));
        }

        /// The link and the value.
        #[inline]
        pub(super) fn head(&self) -> &Head<V> {
            // SAFETY: the head was initialised by `new` and lives as long as `self`.
            unsafe { self.ptr.as_ref() }
        }

        /// The link and the value, mutable.
        #[inline]
        pub(super) fn head_mut(&mut self) -> &mut Head<V> {
            // SAFETY: as `head`; `&mut self` makes the borrow unique.
            unsafe { self.ptr.as_mut() }
        }

        /// Frees the slot and returns its value (the rest of the chain, if still
        /// linked, is dropped).
        pub(super) fn into_value(self) -> V {
            let me = ManuallyDrop::new(self);
            let layout = Self::layout(me.key().len());
            // SAFETY: the head is read out once (`me` is never dropped), then the
            // allocation is freed with the layout `new` made it with.
            let head = unsafe {
                let head = me.ptr.as_ptr().read();
                alloc::dealloc(me.ptr.as_ptr().cast(), layout);
                head
            };
            let Head { next, value } = head;
            drop(next);
            value
        }
    }

    impl<V> Drop for Slot<V> {
        fn drop(&mut self) {
            // Unlink the rest of the chain first, so that a long chain is freed in a
            // loop rather than by recursion.
            let mut next = self.head_mut().next.take();
            while let Some(mut slot) = next {
                next = slot.head_mut().next.take();
                drop(slot);
            }
            let layout = Self::layout(self.key().len());
            // SAFETY: the head is initialised and dropped exactly once here; then the
            // allocation is freed with the layout `new` made it with.
            unsafe {
                ptr::drop_in_place(self.ptr.as_ptr());
                alloc::dealloc(self.ptr.as_ptr().cast(), layout);
            }
        }
    }
}

/// One bucket array.
struct Table<V> {
    buckets: Vec<Link<V>>,
    used: usize,
}

impl<V> Table<V> {
    fn empty() -> Self {
        Table {
            buckets: Vec::new(),
            used: 0,
        }
    }

    fn with_size(size: usize) -> Self {
        let mut buckets = Vec::with_capacity(size);
        buckets.resize_with(size, || None);
        Table { buckets, used: 0 }
    }

    fn mask(&self) -> usize {
        self.buckets.len().wrapping_sub(1)
    }

    fn find(&self, hash: u64, key: &[u8]) -> Option<&Slot<V>> {
        if self.buckets.is_empty() {
            return None;
        }
        let mut link = &self.buckets[hash as usize & self.mask()];
        while let Some(slot) = link {
            if crate::util::bytes_eq(slot.key(), key) {
                return Some(slot);
            }
            link = &slot.head().next;
        }
        None
    }

    fn find_mut(&mut self, hash: u64, key: &[u8]) -> Option<&mut Slot<V>> {
        if self.buckets.is_empty() {
            return None;
        }
        let mask = self.mask();
        let mut link = &mut self.buckets[hash as usize & mask];
        while let Some(slot) = link {
            if crate::util::bytes_eq(slot.key(), key) {
                return Some(slot);
            }
            link = &mut slot.head_mut().next;
        }
        None
    }

    /// Unlinks the slot holding `key`.
    fn take(&mut self, hash: u64, key: &[u8]) -> Option<Slot<V>> {
        if self.buckets.is_empty() {
            return None;
        }
        let mask = self.mask();
        let mut link = &mut self.buckets[hash as usize & mask];
        loop {
            match link {
                None => return None,
                Some(slot) if crate::util::bytes_eq(slot.key(), key) => {
                    let mut slot = link.take()?;
                    *link = slot.head_mut().next.take();
                    self.used -= 1;
                    return Some(slot);
                }
                Some(slot) => link = &mut slot.head_mut().next,
            }
        }
    }

    /// Pushes `slot` at the head of its bucket (the table must be non-empty); returns it.
    fn push(&mut self, hash: u64, mut slot: Slot<V>) -> &mut Slot<V> {
        let idx = hash as usize & self.mask();
        slot.head_mut().next = self.buckets[idx].take();
        self.used += 1;
        self.buckets[idx].insert(slot)
    }

    /// Drops every chain (a slot frees the rest of its chain in a loop, not by
    /// recursion).
    fn clear(&mut self) {
        self.buckets = Vec::new();
        self.used = 0;
    }
}

impl<V> Drop for Table<V> {
    fn drop(&mut self) {
        self.clear();
    }
}

/// A hash table from byte-string keys to `V`, with Redis's rehashing and scan cursor.
pub struct Dict<V> {
    tables: [Table<V>; 2],
    /// Next bucket of `tables[0]` to move while rehashing; `None` when not rehashing.
    rehash_idx: Option<usize>,
    hasher: SipKey,
    /// The keys of each group (a cluster node's hash slots), once
    /// [`Dict::enable_groups`] asked for it; kept up to date by every insert and removal.
    groups: Option<Box<GroupIndex>>,
    /// The access clock a new key's slot starts with (core/evict/clock.rs: the LRU
    /// clock now, or LFU's "now, counter 5"), kept current by its owner.
    pub clock_init: u32,
    /// When a value is replaced: keep the slot's clock (true: LFU keeps the key's
    /// counter, as Redis's `dbSetValue` copies `lru` over) or start it at `clock_init`.
    pub clock_keep_on_replace: bool,
    /// `maxmemory` (0 = none), kept current by its owner: growing the table is put
    /// off while its new bucket array would take memory past it and the chains are
    /// still short (load at most 1.618), as Redis's `dictExpandAllowed` does, so that
    /// one insert does not set off a wave of evictions.
    pub max_memory: usize,
}

/// The entries [`Dict::take_all`] took out: dropping it frees them.
pub struct TakenEntries<V> {
    /// The two tables as they were.
    tables: [Table<V>; 2],
}

impl<V> TakenEntries<V> {
    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.tables[0].used + self.tables[1].used
    }

    /// True when it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Which group (hash slot) every key is in, so a group's keys are counted in O(1) and
/// listed without walking the table (CLUSTER COUNTKEYSINSLOT / GETKEYSINSLOT; Redis
/// 7.0 links each slot's keys through its dict entries for the same purpose).
///
/// It holds no keys, only their hashes: `members` maps (group, key hash) to how many
/// keys share that pair (two keys of one group with the same 64-bit hash stay apart),
/// and a key is found again from its hash by walking its bucket. About 20 bytes a key,
/// against Redis's 16 (two pointers per entry).
#[derive(Clone)]
struct GroupIndex {
    /// The group of a key.
    group_of: fn(&[u8]) -> u16,
    /// Keys per group.
    counts: Vec<u32>,
    /// (group, key hash) → number of keys with both.
    members: std::collections::BTreeMap<(u16, u64), u32>,
}

impl GroupIndex {
    fn add(&mut self, key: &[u8], hash: u64) {
        let g = (self.group_of)(key);
        if let Some(c) = self.counts.get_mut(usize::from(g)) {
            *c += 1;
        }
        *self.members.entry((g, hash)).or_insert(0) += 1;
    }

    fn remove(&mut self, key: &[u8], hash: u64) {
        let g = (self.group_of)(key);
        if let Some(c) = self.counts.get_mut(usize::from(g)) {
            *c = c.saturating_sub(1);
        }
        if let std::collections::btree_map::Entry::Occupied(mut e) = self.members.entry((g, hash)) {
            if *e.get() <= 1 {
                e.remove();
            } else {
                *e.get_mut() -= 1;
            }
        }
    }

    fn clear(&mut self) {
        self.counts.iter_mut().for_each(|c| *c = 0);
        self.members.clear();
    }
}

impl<V> Default for Dict<V> {
    fn default() -> Self {
        Dict {
            tables: [Table::empty(), Table::empty()],
            rehash_idx: None,
            hasher: SipKey::random(),
            groups: None,
            clock_init: 0,
            clock_keep_on_replace: false,
            max_memory: 0,
        }
    }
}

impl<V: Clone> Clone for Dict<V> {
    /// A copy with the same keys and values (the bucket order may differ).
    fn clone(&self) -> Self {
        let mut copy = Dict {
            tables: [
                Table::with_size(self.len().max(1).next_power_of_two().max(MIN_SIZE)),
                Table::empty(),
            ],
            rehash_idx: None,
            hasher: self.hasher,
            // Same hasher, so the hashes it holds stay right.
            groups: self.groups.clone(),
            clock_init: self.clock_init,
            clock_keep_on_replace: self.clock_keep_on_replace,
            max_memory: self.max_memory,
        };
        for slot in self.slots() {
            let key = slot.key();
            let hash = copy.hash(key);
            let s = Slot::new(key, slot.head().value.clone(), slot.clock());
            copy.tables[0].push(hash, s);
        }
        copy
    }
}

impl<V: std::fmt::Debug> std::fmt::Debug for Dict<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.iter().map(|(k, v)| (String::from_utf8_lossy(k), v)))
            .finish()
    }
}

/// One step of xorshift64* over `state` (never left at 0).
fn xorshift(state: &mut u64) -> u64 {
    let mut x = if *state == 0 {
        0x9e37_79b9_7f4a_7c15
    } else {
        *state
    };
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    x.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

/// Reverses the bits of a cursor (the SCAN cursor counts in reversed bit order).
fn rev(v: u64) -> u64 {
    v.reverse_bits()
}

impl<V> Dict<V> {
    /// An empty dict (allocates nothing until the first insert).
    pub fn new() -> Self {
        Self::default()
    }

    fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash(key)
    }

    /// The hash of `key` in this dict, for a command that looks the same key up more
    /// than once ([`Dict::get_mut_hashed`], [`Dict::get_or_insert_with_hashed`]).
    pub fn hash_key(&self, key: &[u8]) -> u64 {
        self.hash(key)
    }

    /// The first half of a prefetch of `hash`'s lookup (see `core/prefetch.rs`): asks
    /// the caches for its bucket in each table. Reads nothing.
    #[inline]
    pub fn prefetch_bucket(&self, hash: u64) {
        for t in &self.tables {
            if let Some(bucket) = t.buckets.get(hash as usize & t.mask()) {
                crate::util::prefetch(bucket);
            }
        }
    }

    /// The second half, once the buckets have had time to arrive: reads them and asks
    /// for the first slot of each chain (where a lookup of a key that exists usually
    /// stops: the load factor stays at or below 1).
    #[inline]
    pub fn prefetch_slot(&self, hash: u64) {
        for t in &self.tables {
            if let Some(Some(slot)) = t.buckets.get(hash as usize & t.mask()) {
                slot.prefetch();
            }
        }
    }

    /// The value of `key`, whose [`Dict::hash_key`] is `hash`, without a rehash step
    /// (for a prefetch, which must change nothing).
    pub fn get_hashed(&self, hash: u64, key: &[u8]) -> Option<&V> {
        if self.is_empty() {
            return None;
        }
        self.find_slot(hash, key).map(|slot| &slot.head().value)
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.tables[0].used + self.tables[1].used
    }

    /// True when there are no keys.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Buckets allocated in both tables (for memory accounting and tests).
    pub fn buckets(&self) -> usize {
        self.tables[0].buckets.len() + self.tables[1].buckets.len()
    }

    /// True while a rehash is in progress.
    pub fn is_rehashing(&self) -> bool {
        self.rehash_idx.is_some()
    }

    /// The value of `key`.
    pub fn get(&self, key: &[u8]) -> Option<&V> {
        if self.is_empty() {
            return None;
        }
        self.get_hashed(self.hash(key), key)
    }

    /// True if `key` is present.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// The value of `key`, mutable.
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        if self.is_empty() {
            return None;
        }
        let hash = self.hash(key);
        self.get_mut_hashed(hash, key)
    }

    /// [`Dict::get_mut`] with `hash` = [`Dict::hash_key`]`(key)` already computed.
    pub fn get_mut_hashed(&mut self, hash: u64, key: &[u8]) -> Option<&mut V> {
        if self.is_empty() {
            return None;
        }
        self.rehash_step();
        self.find_mut(hash, key)
    }

    /// Inserts or replaces `key`; returns the value it replaced. A new key's clock
    /// starts at `clock_init`; a replaced one's as `clock_keep_on_replace` says.
    pub fn insert(&mut self, key: &[u8], value: V) -> Option<V> {
        self.rehash_step();
        let hash = self.hash(key);
        let (init, keep) = (self.clock_init, self.clock_keep_on_replace);
        if let Some(slot) = self.find_slot_mut(hash, key) {
            if !keep {
                slot.set_clock(init);
            }
            return Some(std::mem::replace(&mut slot.head_mut().value, value));
        }
        self.push_new(hash, key, value);
        None
    }

    /// The slot of `key` (whose hash is `hash`) in either table.
    fn find_slot_mut(&mut self, hash: u64, key: &[u8]) -> Option<&mut Slot<V>> {
        let [t0, t1] = &mut self.tables;
        match t0.find_mut(hash, key) {
            Some(s) => Some(s),
            None => t1.find_mut(hash, key),
        }
    }

    /// The slot of `key` in either table.
    fn find_slot(&self, hash: u64, key: &[u8]) -> Option<&Slot<V>> {
        self.tables[0]
            .find(hash, key)
            .or_else(|| self.tables[1].find(hash, key))
    }

    /// [`Dict::get_mut_hashed`] that also sets the key's access clock to
    /// `touch(current clock)` (a lookup that counts as an access), in the same probe.
    pub fn get_mut_touch(
        &mut self,
        hash: u64,
        key: &[u8],
        touch: impl FnOnce(u32) -> u32,
    ) -> Option<&mut V> {
        if self.is_empty() {
            return None;
        }
        self.rehash_step();
        let slot = self.find_slot_mut(hash, key)?;
        let clock = touch(slot.clock());
        slot.set_clock(clock);
        Some(&mut slot.head_mut().value)
    }

    /// The access clock of `key` (24 bits), if present.
    pub fn clock(&self, key: &[u8]) -> Option<u32> {
        if self.is_empty() {
            return None;
        }
        self.find_slot(self.hash(key), key).map(Slot::clock)
    }

    /// Sets the access clock of `key` (its low 24 bits); false if the key is missing.
    pub fn set_clock(&mut self, key: &[u8], clock: u32) -> bool {
        if self.is_empty() {
            return false;
        }
        let hash = self.hash(key);
        match self.find_slot_mut(hash, key) {
            Some(slot) => {
                slot.set_clock(clock);
                true
            }
            None => false,
        }
    }

    /// Removes `key`; returns its value and its access clock (RENAME and MOVE carry
    /// the clock over, as Redis moves the object with its `lru` field).
    pub fn remove_with_clock(&mut self, key: &[u8]) -> Option<(V, u32)> {
        if self.is_empty() {
            return None;
        }
        self.rehash_step();
        let hash = self.hash(key);
        let slot = match self.tables[0].take(hash, key) {
            Some(s) => s,
            None => self.tables[1].take(hash, key)?,
        };
        if let Some(g) = self.groups.as_deref_mut() {
            g.remove(key, hash);
        }
        self.shrink_if_needed();
        let clock = slot.clock();
        Some((slot.into_value(), clock))
    }

    /// Up to `count` keys from a random place of the table, with their values and
    /// clocks (Redis's `dictGetSomeKeys`, what eviction samples): a random bucket, then
    /// the buckets after it, until `count` keys are found or `10 * count` buckets were
    /// visited. `rng` is the caller's random state (any non-zero start). A key may
    /// come twice (after a jump past a run of empty buckets, as in Redis), and the
    /// sample is not uniform, as Redis's is not.
    pub fn sample(&self, count: usize, rng: &mut u64, mut emit: impl FnMut(&[u8], &V, u32)) {
        if self.is_empty() || count == 0 {
            return;
        }
        let count = count.min(self.len());
        let moved = self.rehash_idx.unwrap_or(0);
        let mut found = 0;
        let mut budget = count.saturating_mul(10);
        // The larger table decides the walk.
        let big = self.tables[0]
            .buckets
            .len()
            .max(self.tables[1].buckets.len());
        let mut idx = (xorshift(rng) as usize) & big.wrapping_sub(1);
        let mut empty_run = 0;
        while found < count && budget > 0 {
            for (t, table) in self.tables.iter().enumerate() {
                if table.buckets.is_empty() {
                    continue;
                }
                // The smaller table (during a rehash) has no bucket this far out.
                if idx >= table.buckets.len() {
                    continue;
                }
                let i = idx;
                // Buckets of the old table below the rehash index are empty already.
                if t == 0 && self.is_rehashing() && i < moved {
                    continue;
                }
                let mut link = &table.buckets[i];
                if link.is_none() {
                    empty_run += 1;
                }
                while let Some(slot) = link {
                    empty_run = 0;
                    if found < count {
                        emit(slot.key(), &slot.head().value, slot.clock());
                        found += 1;
                    }
                    link = &slot.head().next;
                }
            }
            // A long run of empty buckets: jump somewhere else (Redis does the same
            // after `count` empty buckets in a row).
            if empty_run >= 5 && empty_run >= count {
                idx = xorshift(rng) as usize;
                empty_run = 0;
            } else {
                idx = idx.wrapping_add(1);
            }
            idx &= big.wrapping_sub(1);
            budget -= 1;
        }
    }

    /// The value of `key`, inserted with `make()` first if missing.
    pub fn get_or_insert_with(&mut self, key: &[u8], make: impl FnOnce() -> V) -> &mut V {
        let hash = self.hash(key);
        self.get_or_insert_with_hashed(hash, key, make)
    }

    /// [`Dict::get_or_insert_with`] with `hash` = [`Dict::hash_key`]`(key)` already
    /// computed.
    pub fn get_or_insert_with_hashed(
        &mut self,
        hash: u64,
        key: &[u8],
        make: impl FnOnce() -> V,
    ) -> &mut V {
        self.rehash_step();
        let present =
            self.tables[0].find(hash, key).is_some() || self.tables[1].find(hash, key).is_some();
        if !present {
            return self.push_new(hash, key, make());
        }
        self.find_mut(hash, key)
            .expect("the key was found a moment ago")
    }

    /// The value of `key` (whose hash is `hash`) in either table.
    fn find_mut(&mut self, hash: u64, key: &[u8]) -> Option<&mut V> {
        let [t0, t1] = &mut self.tables;
        match t0.find_mut(hash, key) {
            Some(s) => Some(&mut s.head_mut().value),
            None => t1.find_mut(hash, key).map(|s| &mut s.head_mut().value),
        }
    }

    /// Adds a key known to be absent (its hash is `hash`); returns its value.
    fn push_new(&mut self, hash: u64, key: &[u8], value: V) -> &mut V {
        self.expand_if_needed();
        if let Some(g) = self.groups.as_deref_mut() {
            g.add(key, hash);
        }
        let slot = Slot::new(key, value, self.clock_init);
        let target = if self.is_rehashing() { 1 } else { 0 };
        &mut self.tables[target].push(hash, slot).head_mut().value
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: &[u8]) -> Option<V> {
        if self.is_empty() {
            return None;
        }
        self.rehash_step();
        let hash = self.hash(key);
        let slot = match self.tables[0].take(hash, key) {
            Some(s) => s,
            None => self.tables[1].take(hash, key)?,
        };
        if let Some(g) = self.groups.as_deref_mut() {
            g.remove(key, hash);
        }
        self.shrink_if_needed();
        Some(slot.into_value())
    }

    /// Removes every key and frees the tables (a group index stays on, empty).
    pub fn clear(&mut self) {
        self.tables[0].clear();
        self.tables[1].clear();
        self.rehash_idx = None;
        if let Some(g) = self.groups.as_deref_mut() {
            g.clear();
        }
    }

    /// Empties the dictionary in O(1) and hands back what it held, to be dropped
    /// elsewhere (FLUSHALL ASYNC: `core/lazyfree.rs`); settings and the group index (now
    /// empty) stay.
    pub fn take_all(&mut self) -> TakenEntries<V> {
        let taken = TakenEntries {
            tables: [
                std::mem::replace(&mut self.tables[0], Table::empty()),
                std::mem::replace(&mut self.tables[1], Table::empty()),
            ],
        };
        self.rehash_idx = None;
        if let Some(g) = self.groups.as_deref_mut() {
            g.clear();
        }
        taken
    }

    /// Starts keeping the index of keys by group (`group_of(key) < groups`), built now
    /// from the keys present; nothing when it is already kept with the same function.
    pub fn enable_groups(&mut self, group_of: fn(&[u8]) -> u16, groups: usize) {
        if self
            .groups
            .as_deref()
            .is_some_and(|g| std::ptr::fn_addr_eq(g.group_of, group_of) && g.counts.len() == groups)
        {
            return;
        }
        let mut index = GroupIndex {
            group_of,
            counts: vec![0; groups],
            members: std::collections::BTreeMap::new(),
        };
        for (key, _) in self.iter() {
            index.add(key, self.hash(key));
        }
        self.groups = Some(Box::new(index));
    }

    /// True once [`Dict::enable_groups`] turned the group index on.
    pub fn has_groups(&self) -> bool {
        self.groups.is_some()
    }

    /// Keys in `group` (0 without a group index).
    pub fn group_len(&self, group: u16) -> usize {
        self.groups
            .as_deref()
            .and_then(|g| g.counts.get(usize::from(group)))
            .map_or(0, |&c| c as usize)
    }

    /// Up to `max` keys of `group`, in the order of their hashes (none without a group
    /// index).
    pub fn group_keys(&self, group: u16, max: usize) -> Vec<&[u8]> {
        let mut out = Vec::new();
        let Some(index) = self.groups.as_deref() else {
            return out;
        };
        for (&(_, hash), _) in index.members.range((group, 0)..=(group, u64::MAX)) {
            for table in &self.tables {
                if table.buckets.is_empty() {
                    continue;
                }
                let mut link = &table.buckets[hash as usize & table.mask()];
                while let Some(slot) = link {
                    let key = slot.key();
                    if out.len() < max && self.hash(key) == hash && (index.group_of)(key) == group {
                        out.push(key);
                    }
                    link = &slot.head().next;
                }
            }
            if out.len() >= max {
                break;
            }
        }
        out
    }

    /// Starts growing when the load factor reaches 1.
    fn expand_if_needed(&mut self) {
        if self.is_rehashing() {
            return;
        }
        let size = self.tables[0].buckets.len();
        if size == 0 {
            self.tables[0] = Table::with_size(MIN_SIZE);
        } else if self.tables[0].used >= size {
            let new_size = (self.tables[0].used + 1).next_power_of_two();
            // Redis's HASHTABLE_MAX_LOAD_FACTOR: past it, grow whatever the memory.
            let short_chains = self.tables[0].used as f64 / size as f64 <= 1.618;
            let more = new_size.saturating_mul(std::mem::size_of::<Link<V>>());
            if self.max_memory > 0
                && short_chains
                && crate::alloc::allocated().saturating_add(more) > self.max_memory
            {
                return;
            }
            self.start_rehash(new_size);
        }
    }

    /// Starts shrinking when the table is less than 1/8 full.
    fn shrink_if_needed(&mut self) {
        if self.is_rehashing() {
            return;
        }
        let size = self.tables[0].buckets.len();
        let used = self.tables[0].used;
        if size > MIN_SIZE && used * 8 < size {
            self.start_rehash(used.max(1).next_power_of_two().max(MIN_SIZE));
        }
    }

    fn start_rehash(&mut self, size: usize) {
        self.tables[1] = Table::with_size(size);
        self.rehash_idx = Some(0);
    }

    /// Moves up to [`REHASH_STEP`] non-empty buckets (visiting at most ten times as many
    /// empty ones) from the old table to the new; finishes the rehash when the old
    /// table is empty.
    #[inline]
    pub fn rehash_step(&mut self) {
        // Checked here, inlined into every lookup, so that the call is only paid while
        // a rehash is going on.
        if self.rehash_idx.is_some() {
            self.rehash(REHASH_STEP);
        }
    }

    /// Moves up to `n` non-empty buckets; returns true while a rehash is still going on.
    pub fn rehash(&mut self, n: usize) -> bool {
        let Some(mut idx) = self.rehash_idx else {
            return false;
        };
        let mut empty_visits = n.max(1) * 10;
        let mut moved = 0;
        while moved < n && self.tables[0].used > 0 && idx < self.tables[0].buckets.len() {
            let Some(mut link) = self.tables[0].buckets[idx].take() else {
                idx += 1;
                empty_visits -= 1;
                if empty_visits == 0 {
                    break;
                }
                continue;
            };
            loop {
                let next = link.head_mut().next.take();
                self.tables[0].used -= 1;
                let hash = self.hash(link.key());
                self.tables[1].push(hash, link);
                match next {
                    Some(n) => link = n,
                    None => break,
                }
            }
            idx += 1;
            moved += 1;
        }
        if self.tables[0].used == 0 {
            let new = std::mem::replace(&mut self.tables[1], Table::empty());
            self.tables[0] = new;
            self.rehash_idx = None;
            // The keys added or removed during the rehash may call for another resize
            // (Redis checks this from its cron).
            if self.tables[0].used >= self.tables[0].buckets.len() {
                self.expand_if_needed();
            } else {
                self.shrink_if_needed();
            }
            self.is_rehashing()
        } else {
            self.rehash_idx = Some(idx);
            true
        }
    }

    /// Every key and value, in no particular order.
    pub fn iter(&self) -> Iter<'_, V> {
        Iter {
            dict: self,
            table: 0,
            bucket: 0,
            slot: None,
        }
    }

    /// Every slot, in no particular order.
    fn slots(&self) -> impl Iterator<Item = &Slot<V>> {
        self.tables.iter().flat_map(|t| {
            t.buckets.iter().flat_map(|link| {
                std::iter::successors(link.as_ref(), |s: &&Slot<V>| s.head().next.as_ref())
            })
        })
    }

    /// Every key, in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = &[u8]> {
        self.iter().map(|(k, _)| k)
    }

    /// Calls `emit` for the keys of the bucket(s) at `cursor` and returns the next cursor
    /// (0 when the scan is complete). See the module comment for the guarantees.
    pub fn scan(&self, cursor: u64, mut emit: impl FnMut(&[u8], &V)) -> u64 {
        if self.is_empty() {
            return 0;
        }
        let mut v = cursor;
        let mut chain = |table: &Table<V>, idx: u64| {
            let mut link = &table.buckets[idx as usize];
            while let Some(slot) = link {
                emit(slot.key(), &slot.head().value);
                link = &slot.head().next;
            }
        };
        if !self.is_rehashing() {
            let t0 = &self.tables[0];
            let m0 = t0.mask() as u64;
            chain(t0, v & m0);
            v |= !m0;
            v = rev(rev(v).wrapping_add(1));
        } else {
            let (t0, t1) = if self.tables[0].buckets.len() <= self.tables[1].buckets.len() {
                (&self.tables[0], &self.tables[1])
            } else {
                (&self.tables[1], &self.tables[0])
            };
            let m0 = t0.mask() as u64;
            let m1 = t1.mask() as u64;
            chain(t0, v & m0);
            loop {
                chain(t1, v & m1);
                v |= !m1;
                v = rev(rev(v).wrapping_add(1));
                if v & (m0 ^ m1) == 0 {
                    break;
                }
            }
        }
        v
    }

    /// A key chosen at random from `seed` (RANDOMKEY): a random non-empty bucket, then a
    /// random key of its chain, as Redis's `dictGetRandomKey` does.
    pub fn random_key(&self, seed: u64) -> Option<&[u8]> {
        if self.is_empty() {
            return None;
        }
        let mut state = seed | 1;
        let mut next = move || {
            // xorshift64*
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            state.wrapping_mul(0x2545_F491_4F6C_DD1D)
        };
        let moved = self.rehash_idx.unwrap_or(0);
        let candidates: Vec<(&Table<V>, usize)> = self
            .tables
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.buckets.is_empty())
            .map(|(i, t)| (t, if i == 0 { moved } else { 0 }))
            .collect();
        let total: usize = candidates
            .iter()
            .map(|(t, from)| t.buckets.len() - from)
            .sum();
        // Bounded random probing, then a linear walk from a random point.
        let pick = |r: u64| {
            let mut i = (r % total as u64) as usize;
            for (t, from) in &candidates {
                let span = t.buckets.len() - from;
                if i < span {
                    return (*t, from + i);
                }
                i -= span;
            }
            (candidates[0].0, candidates[0].1)
        };
        let mut found = None;
        for _ in 0..1000 {
            let (t, idx) = pick(next());
            if t.buckets[idx].is_some() {
                found = Some((t, idx));
                break;
            }
        }
        let (table, idx) = match found {
            Some(f) => f,
            None => {
                let (t, idx) = pick(next());
                let at = (idx..t.buckets.len()).find(|&i| t.buckets[i].is_some());
                match at {
                    Some(i) => (t, i),
                    None => {
                        let (k, _) = self.iter().next()?;
                        return Some(k);
                    }
                }
            }
        };
        let mut len = 0;
        let mut link = &table.buckets[idx];
        while let Some(s) = link {
            len += 1;
            link = &s.head().next;
        }
        let mut n = (next() % len.max(1) as u64) as usize;
        let mut link = &table.buckets[idx];
        while let Some(s) = link {
            if n == 0 {
                return Some(s.key());
            }
            n -= 1;
            link = &s.head().next;
        }
        None
    }
}

impl<'a, V> IntoIterator for &'a Dict<V> {
    type Item = (&'a [u8], &'a V);
    type IntoIter = Iter<'a, V>;

    fn into_iter(self) -> Iter<'a, V> {
        self.iter()
    }
}

/// Iterator over a [`Dict`]'s keys and values.
pub struct Iter<'a, V> {
    dict: &'a Dict<V>,
    table: usize,
    bucket: usize,
    slot: Option<&'a Slot<V>>,
}

impl<'a, V> Iterator for Iter<'a, V> {
    type Item = (&'a [u8], &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(s) = self.slot {
                self.slot = s.head().next.as_ref();
                return Some((s.key(), &s.head().value));
            }
            let table = self.dict.tables.get(self.table)?;
            match table.buckets.get(self.bucket) {
                Some(link) => {
                    self.slot = link.as_ref();
                    self.bucket += 1;
                }
                None => {
                    self.table += 1;
                    self.bucket = 0;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{HashMap, HashSet};

    fn key(i: usize) -> Vec<u8> {
        format!("key:{i}").into_bytes()
    }

    #[test]
    fn insert_get_remove_through_growth_and_shrink() {
        let mut d = Dict::new();
        for i in 0..10_000 {
            assert_eq!(d.insert(&key(i), i), None);
        }
        assert_eq!(d.len(), 10_000);
        assert_eq!(d.insert(&key(7), 70), Some(7));
        for i in 0..10_000 {
            let want = if i == 7 { 70 } else { i };
            assert_eq!(d.get(&key(i)), Some(&want), "key {i}");
        }
        for i in 0..9_990 {
            assert!(d.remove(&key(i)).is_some());
        }
        assert_eq!(d.len(), 10);
        // Finish any rehash: the table shrank to fit.
        while d.rehash(100) {}
        assert!(d.buckets() <= 64, "{} buckets for 10 keys", d.buckets());
        for i in 9_990..10_000 {
            assert_eq!(d.get(&key(i)), Some(&i));
        }
        assert!(d.get(b"missing").is_none());
    }

    #[test]
    fn a_full_scan_returns_every_key() {
        let mut d = Dict::new();
        for i in 0..1000 {
            d.insert(&key(i), ());
        }
        let mut seen = HashSet::new();
        let mut cursor = 0;
        loop {
            cursor = d.scan(cursor, |k, _| {
                seen.insert(k.to_vec());
            });
            if cursor == 0 {
                break;
            }
        }
        assert_eq!(seen.len(), 1000);
    }

    #[test]
    fn clone_and_iter_agree() {
        let mut d = Dict::new();
        for i in 0..300 {
            d.insert(&key(i), i);
        }
        let c = d.clone();
        let a: HashMap<Vec<u8>, usize> = d.iter().map(|(k, v)| (k.to_vec(), *v)).collect();
        let b: HashMap<Vec<u8>, usize> = c.iter().map(|(k, v)| (k.to_vec(), *v)).collect();
        assert_eq!(a, b);
        assert_eq!(a.len(), 300);
    }

    #[test]
    fn random_key_finds_keys_and_none_when_empty() {
        let mut d: Dict<()> = Dict::new();
        assert!(d.random_key(1).is_none());
        for i in 0..50 {
            d.insert(&key(i), ());
        }
        let picked: HashSet<Vec<u8>> = (0..500u64)
            .filter_map(|s| {
                d.random_key(s.wrapping_mul(0x9E37_79B9_7F4A_7C15))
                    .map(<[u8]>::to_vec)
            })
            .collect();
        assert!(picked.len() > 10, "only {} distinct keys", picked.len());
        for k in &picked {
            assert!(d.contains_key(k));
        }
    }

    #[test]
    fn a_short_key_and_a_24_byte_value_fit_the_48_byte_class() {
        use crate::alloc::usable_size;
        type S = slot::Slot<[u64; 3]>;
        assert_eq!(usable_size(S::layout(b"str:99999".len()).size()), 48);
        assert_eq!(usable_size(S::layout(b"key:999999".len()).size()), 48);
        assert_eq!(usable_size(S::layout(12).size()), 48);
        assert_eq!(usable_size(S::layout(13).size()), 64);
        assert_eq!(usable_size(S::layout(28).size()), 64);
        // The long form: a 255-byte key takes 1 + 8 bytes of length (after the clock).
        assert_eq!(S::layout(254).size(), 32 + 3 + 1 + 254);
        assert_eq!(S::layout(255).size(), 32 + 3 + 9 + 255);
        // The clock costs a size class only for 3 key lengths in 16.
        let grew = (0..256)
            .filter(|&len| usable_size(S::layout(len).size()) > usable_size(32 + 1 + len))
            .count();
        assert!(grew <= 256 * 3 / 16 + 1, "{grew}");
        // No larger than the fixed 56-byte slot plus a boxed copy of a long key was, up
        // to 220-byte keys except where the clock tipped a class (beyond, one
        // allocation's rounding may cost a class more than the two allocations' did).
        for len in (0..12).chain(16..28).chain(32..44) {
            let old = if len <= 22 { 64 } else { 64 + usable_size(len) };
            assert!(usable_size(S::layout(len).size()) <= old, "{len}");
        }
    }

    #[test]
    fn keys_of_every_length_read_back() {
        let mut d = Dict::new();
        let key = |len: usize| -> Vec<u8> { (0..len).map(|i| (i * 7 + len) as u8).collect() };
        for len in (0..300).chain([1000, 70_000]) {
            assert_eq!(d.insert(&key(len), len), None);
        }
        for len in (0..300).chain([1000, 70_000]) {
            assert_eq!(d.get(&key(len)), Some(&len), "{len}");
        }
        let mut lens: Vec<usize> = d.keys().map(<[u8]>::len).collect();
        lens.sort_unstable();
        assert_eq!(lens, (0..300).chain([1000, 70_000]).collect::<Vec<_>>());
        for len in (0..300).step_by(3) {
            assert_eq!(d.remove(&key(len)), Some(len));
        }
        assert_eq!(d.len(), 302 - 100);
    }

    #[test]
    fn the_access_clock_starts_fresh_and_survives_rehash_and_clone() {
        let mut d = Dict::new();
        d.clock_init = 7;
        for i in 0..1000 {
            d.insert(&key(i), i);
        }
        assert_eq!(d.clock(&key(3)), Some(7));
        assert!(d.set_clock(&key(3), 0x00AB_CDEF));
        assert!(!d.set_clock(b"missing", 1));
        // Only 24 bits are kept.
        assert!(d.set_clock(&key(4), 0xFF12_3456));
        assert_eq!(d.clock(&key(4)), Some(0x12_3456));
        // Growth moves slots, not their clocks; a clone copies them.
        for i in 1000..5000 {
            d.insert(&key(i), i);
        }
        while d.rehash(100) {}
        assert_eq!(d.clock(&key(3)), Some(0x00AB_CDEF));
        assert_eq!(d.clone().clock(&key(3)), Some(0x00AB_CDEF));
        // A replaced value keeps the clock only when asked to.
        d.clock_init = 9;
        d.insert(&key(3), 0);
        assert_eq!(d.clock(&key(3)), Some(9));
        d.set_clock(&key(3), 5);
        d.clock_keep_on_replace = true;
        d.insert(&key(3), 1);
        assert_eq!(d.clock(&key(3)), Some(5));
        // A touch updates it in the same probe.
        let hash = d.hash_key(&key(3));
        assert_eq!(d.get_mut_touch(hash, &key(3), |c| c + 1), Some(&mut 1));
        assert_eq!(d.clock(&key(3)), Some(6));
        assert_eq!(d.remove_with_clock(&key(3)), Some((1, 6)));
    }

    #[test]
    fn samples_are_present_keys_even_while_rehashing() {
        let mut d = Dict::new();
        let mut rng = 1;
        let mut none = 0;
        d.sample(5, &mut rng, |_, _: &usize, _| none += 1);
        assert_eq!(none, 0);
        for n in [1usize, 3, 17, 300, 5000] {
            for i in 0..n {
                d.insert(&key(i), i);
            }
            for _ in 0..50 {
                let mut got = Vec::new();
                d.sample(5, &mut rng, |k, &v, _| got.push((k.to_vec(), v)));
                assert!(
                    !got.is_empty() && got.len() <= 5.min(n),
                    "{n}: {}",
                    got.len()
                );
                for (k, v) in got {
                    assert_eq!(d.get(&k), Some(&v));
                }
            }
            d.clear();
        }
    }

    #[test]
    fn a_long_chain_drops_without_recursion() {
        // Every key in one bucket: a table of 4 buckets holding a million-slot chain
        // would overflow the stack if dropping recursed.
        let mut t: Table<u32> = Table::with_size(MIN_SIZE);
        for i in 0..1_000_000u32 {
            t.push(0, slot::Slot::new(&i.to_le_bytes(), i, 0));
        }
        assert_eq!(
            t.find(0, &7u32.to_le_bytes()).map(|s| s.head().value),
            Some(7)
        );
        drop(t);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u16),
        Remove(u16),
        Scan,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => any::<u16>().prop_map(|k| Op::Insert(k % 2048)),
            2 => any::<u16>().prop_map(|k| Op::Remove(k % 2048)),
            1 => Just(Op::Scan),
        ]
    }

    proptest! {
        /// The dict agrees with a HashMap model under any mix of inserts and removals
        /// (growth, shrinking and rehashing in between), and a scan that runs across
        /// the changes returns every key present from its start to its end.
        #[test]
        fn matches_a_hashmap_and_scans_survive_changes(ops in proptest::collection::vec(op(), 1..3000)) {
            let mut d = Dict::new();
            let mut model: HashMap<u16, u32> = HashMap::new();
            let mut scan: Option<(u64, HashSet<u16>, HashSet<u16>)> = None; // cursor, seen, present-throughout
            for (n, op) in ops.iter().enumerate() {
                match *op {
                    Op::Insert(k) => {
                        prop_assert_eq!(d.insert(&k.to_be_bytes(), n as u32), model.insert(k, n as u32));
                    }
                    Op::Remove(k) => {
                        prop_assert_eq!(d.remove(&k.to_be_bytes()), model.remove(&k));
                        if let Some((_, _, always)) = scan.as_mut() {
                            always.remove(&k);
                        }
                    }
                    Op::Scan => {
                        let (cursor, mut seen, always) = scan.take().unwrap_or_else(|| {
                            (0, HashSet::new(), model.keys().copied().collect())
                        });
                        let next = d.scan(cursor, |k, _| {
                            seen.insert(u16::from_be_bytes([k[0], k[1]]));
                        });
                        if next == 0 {
                            for k in &always {
                                prop_assert!(seen.contains(k), "scan missed {}", k);
                            }
                        } else {
                            scan = Some((next, seen, always));
                        }
                    }
                }
                prop_assert_eq!(d.len(), model.len());
            }
            for (k, v) in &model {
                prop_assert_eq!(d.get(&k.to_be_bytes()), Some(v));
            }
            prop_assert_eq!(d.iter().count(), model.len());
        }

        /// The group index (a cluster node's keys by hash slot) agrees with a model
        /// grouping of the keys present, whether it was turned on before, during or
        /// after the inserts and removals, through rehashes, clears and clones.
        #[test]
        fn group_index_matches_the_keys_present(
            ops in proptest::collection::vec(op(), 1..2000),
            enable_at in 0usize..2000,
            clear_at in 0usize..4000,
        ) {
            fn group_of(key: &[u8]) -> u16 {
                u16::from(key.iter().fold(0u8, |a, b| a.wrapping_add(*b)) % 7)
            }
            let mut d = Dict::new();
            let mut model: HashMap<u16, u32> = HashMap::new();
            for (n, op) in ops.iter().enumerate() {
                if n == enable_at {
                    d.enable_groups(group_of, 7);
                }
                if n == clear_at {
                    d.clear();
                    model.clear();
                }
                match *op {
                    Op::Insert(k) => {
                        d.insert(&k.to_be_bytes(), n as u32);
                        model.insert(k, n as u32);
                    }
                    Op::Remove(k) => {
                        d.remove(&k.to_be_bytes());
                        model.remove(&k);
                    }
                    Op::Scan => {}
                }
            }
            d.enable_groups(group_of, 7);
            let copy = d.clone();
            for dict in [&d, &copy] {
                for g in 0..7u16 {
                    let mut want: Vec<Vec<u8>> = model
                        .keys()
                        .map(|k| k.to_be_bytes().to_vec())
                        .filter(|k| group_of(k) == g)
                        .collect();
                    want.sort();
                    prop_assert_eq!(dict.group_len(g), want.len());
                    let mut got: Vec<Vec<u8>> =
                        dict.group_keys(g, usize::MAX).into_iter().map(<[u8]>::to_vec).collect();
                    got.sort();
                    prop_assert_eq!(&got, &want);
                    let few = dict.group_keys(g, 3);
                    prop_assert_eq!(few.len(), want.len().min(3));
                    prop_assert!(few.iter().all(|k| group_of(k) == g));
                }
            }
        }

        /// Keys of any length (across the one-byte/long length prefix at 255 bytes) and
        /// values that own something: the dict agrees with a HashMap, and every value
        /// it ever held is dropped exactly once — replaced, removed, cleared or left in
        /// the dict when it goes.
        #[test]
        fn owned_values_and_keys_of_any_length_match_a_hashmap(
            ops in proptest::collection::vec((0u8..4, 0usize..40, 0usize..3), 1..600),
        ) {
            use std::rc::Rc;
            let token = Rc::new(());
            let key = |k: usize, shape: usize| -> Vec<u8> {
                let len = [k % 16, 240 + k % 30, 300 + k][shape];
                (0..len).map(|i| (i + k) as u8).collect()
            };
            {
                let mut d: Dict<(usize, Rc<()>)> = Dict::new();
                let mut model: HashMap<Vec<u8>, usize> = HashMap::new();
                for (n, &(op, k, shape)) in ops.iter().enumerate() {
                    let key = key(k, shape);
                    match op {
                        0 | 1 => {
                            let old = d.insert(&key, (n, token.clone())).map(|v| v.0);
                            prop_assert_eq!(old, model.insert(key, n));
                        }
                        2 => {
                            prop_assert_eq!(d.remove(&key).map(|v| v.0), model.remove(&key));
                        }
                        _ => {
                            let v = d.get_or_insert_with(&key, || (n, token.clone())).0;
                            prop_assert_eq!(v, *model.entry(key).or_insert(n));
                        }
                    }
                    prop_assert_eq!(d.len(), model.len());
                    prop_assert_eq!(Rc::strong_count(&token), 1 + model.len());
                }
                for (k, v) in &model {
                    prop_assert_eq!(d.get(k).map(|v| v.0), Some(*v));
                }
                let copy = d.clone();
                prop_assert_eq!(Rc::strong_count(&token), 1 + 2 * model.len());
                drop(copy);
                if ops.len() % 2 == 0 {
                    d.clear();
                    prop_assert_eq!(Rc::strong_count(&token), 1);
                }
            }
            prop_assert_eq!(Rc::strong_count(&token), 1);
        }
    }
}
