//! The pending entries of one consumer group: the slab that stores each of them once, the
//! delivery-time list threaded through it, and the PEL indexes (the group PEL and each
//! consumer PEL) that order them by ID.
//!
//! Redis's names (t_stream.c, stream.h): a pending entry is a `streamNACK` with its
//! `delivery_time` and `delivery_count`; the group PEL is `streamCG.pel` and a consumer PEL
//! is `streamConsumer.pel`, both radix trees keyed by the 16-byte ID whose values point to
//! the one `streamNACK`. Here the `streamNACK` is a 40-byte `Slot` in the group's
//! `Slab`, and both PELs are `PelIndex`es: slot numbers in ID order, without keys.
//! Unowned entries (after XNACK) form the NACK zone at the head of the delivery-time list.
//!
//! ```text
//!   group PEL (PelIndex)    slab: pages of Slot, 40 bytes a slot
//!   slot numbers            slot │ id   owner  delivery_time  count │ prev  next
//!   in ID order             ─────┼──────────────────────────────────┼───────────
//!   ┌───┬───┬───┬───┐         0  │ 3-0  alice  1005           1     │  3    NIL  ← tail
//!   │ 2 │ 4 │ 0 │ 3 │         1  │ (free)                           │  ·    NIL  ← free_head
//!   └───┴───┴───┴───┘         2  │ 1-0  none   0              2     │ NIL   4    ← head
//!   (1-0 2-0 3-0 5-0)         3  │ 5-0  bob    1003           1     │  4    0
//!                             4  │ 2-0  none   0              1     │  2    3    ← nack_tail
//!
//!   the delivery-time list, through prev/next:
//!    head → [2] 1-0 ⇄ [4] 2-0 ⇄ [3] 5-0 @1003 ⇄ [0] 3-0 @1005 ← tail
//!           └──── NACK zone ───┘   └── oldest delivery first ──┘
//! ```
//!
//! An owner is a number the slab does not interpret (the group's consumer table index,
//! consumer.rs), or `NO_OWNER` for an unowned (NACKed) entry. Keeping the consumer PELs
//! in step with the owners is the group's job (group.rs): nothing here knows consumers.
//!
//! Invariants (checked by `Slab::check` and `check_pel_index` in the tests): the time
//! list holds exactly the live slots; its head segment up to `nack_tail` (the NACK zone)
//! holds exactly the unowned ones, in the order they were NACKed (FIFO), each with
//! `delivery_time == 0`; after the zone, delivery times never decrease, so the oldest idle
//! entry is the first after the zone. A PEL index holds its slots in strictly increasing
//! ID order, and a live slot's ID never changes.
//!
//! Costs: a PEL lookup, insert or removal is O(log n) (binary searches over the index's
//! chunks, then within one chunk of ≤ 128, reading IDs from the slab; each step prefetches
//! the two places the next one may read, see `partition_point_prefetched`). Placing an entry in
//! the time list is O(1) when its delivery time is at least the newest one (the normal
//! case); an older time walks back from the tail to its place.
//!
//! Memory: a pending entry costs its 40-byte slot plus about 4.5 bytes in each of the two
//! PEL indexes, ~49.5 bytes in all (`benches/group.rs` prints the figure; Redis 7 uses ~85).
//! That is why the PELs are not radix trees keyed by the 16-byte ID: two such keys would
//! cost more than the whole budget. The slab grows by whole pages (no copying, at most one
//! page spare) and, when fewer than half of its slots are live, is compacted (live slots
//! moved down, their references repointed) and shrunk, so acknowledging a large PEL gives
//! the memory back.

use super::id::StreamId;
use std::collections::{BTreeMap, VecDeque};

/// Largest delivery count (Redis: `LLONG_MAX`). Counts saturate here; XNACK FATAL sets it.
pub const DELIVERY_COUNT_MAX: u64 = i64::MAX as u64;

/// End of a slot list (time list links, free list).
pub(super) const NIL: u32 = u32::MAX;
/// The owner of an unowned (NACKed) entry.
pub(super) const NO_OWNER: u32 = u32::MAX;
/// `Slot::owner` of a slot on the free list. Owners are below it.
pub(super) const FREE_SLOT: u32 = u32::MAX - 1;
/// Slabs smaller than this are never compacted (a few hundred bytes at most). Tiny in
/// tests, so the model test compacts often.
pub(super) const COMPACT_MIN_SLOTS: usize = if cfg!(test) { 4 } else { 16 };
/// Slots in a slab page: 1638 × 40 = 65 520 bytes, just under the allocator's 64 KiB
/// size class (a power-of-two slot count would round up by 1/4). 3 in tests, so the
/// model test crosses pages.
const PAGE_SLOTS: usize = if cfg!(test) { 3 } else { 1638 };
/// `Slot::delivery_count` of a slot whose count does not fit in 32 bits; the count is in
/// `Slab::big_counts` instead (only XCLAIM RETRYCOUNT and XNACK FATAL/RETRYCOUNT make
/// such counts).
const COUNT_SPILLED: u32 = u32::MAX;
/// Smallest first allocation of the first page, in slots.
const PAGE_MIN_GROWTH: usize = if PAGE_SLOTS < 4 { PAGE_SLOTS } else { 4 };
/// Most slot numbers in one chunk of a PEL index (512 bytes). Small in tests, so the
/// model test splits and merges chunks.
const CHUNK_MAX: usize = if cfg!(test) { 8 } else { 128 };

/// `n` capped at [`DELIVERY_COUNT_MAX`]: every delivery count set or incremented goes
/// through here.
pub(super) fn cap_count(n: u64) -> u64 {
    n.min(DELIVERY_COUNT_MAX)
}

// ---------------------------------------------------------------------------------------
// A pending entry as the commands see it
// ---------------------------------------------------------------------------------------

/// A pending entry as the commands see it (Redis: `streamNACK`): delivered to the group,
/// not yet acknowledged. Stored once per group (see the module diagram); this is a copy of
/// it with the owner's name resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingEntry<'a> {
    /// The entry ID.
    pub id: StreamId,
    /// Last delivery time, Unix ms; 0 for a NACKed entry.
    pub delivery_time: u64,
    /// Number of deliveries, at most [`DELIVERY_COUNT_MAX`].
    pub delivery_count: u64,
    /// The owning consumer's name, or `None` for an unowned (NACKed) entry.
    pub owner: Option<&'a [u8]>,
}

impl PendingEntry<'_> {
    /// True for an unowned entry, i.e. one in the NACK zone.
    pub fn is_nacked(&self) -> bool {
        self.owner.is_none()
    }

    /// Milliseconds since the last delivery, 0 if the clock is behind it. XPENDING shows
    /// -1 for NACKed entries instead; that choice is the caller's.
    pub fn idle(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.delivery_time)
    }
}

// ---------------------------------------------------------------------------------------
// The slab and the delivery-time list
// ---------------------------------------------------------------------------------------

/// One pending entry as stored: the only copy of it (Redis: `streamNACK`).
///
/// Packed to 4-byte alignment: 40 bytes instead of 48. The delivery count is stored in
/// 32 bits; the rare larger count (RETRYCOUNT, XNACK FATAL) spills to the slab's
/// `big_counts` map, so every count up to `DELIVERY_COUNT_MAX` is still exact. Fields are only ever copied out
/// (the accessors), never borrowed, which is what a packed struct requires; the compiler
/// rejects any reference to a field.
#[derive(Debug, Clone, Copy)]
#[repr(C, packed(4))]
pub(super) struct Slot {
    /// The entry ID; the order key of the group PEL and the owner's PEL. Never changes
    /// while the slot is live.
    id: StreamId,
    /// Last delivery, Unix ms; 0 while NACKed.
    delivery_time: u64,
    /// Deliveries so far, or `COUNT_SPILLED` (read it through [`Slab::count`]).
    delivery_count: u32,
    /// Owner's index in the consumer table, `NO_OWNER` (NACKed), or `FREE_SLOT`.
    owner: u32,
    /// Previous slot in the time list (`NIL` at the head).
    prev: u32,
    /// Next slot in the time list (`NIL` at the tail); for a free slot, the next free one.
    next: u32,
}

impl Slot {
    /// The entry ID.
    pub(super) fn id(&self) -> StreamId {
        self.id
    }
    /// Last delivery, Unix ms; 0 while NACKed.
    pub(super) fn delivery_time(&self) -> u64 {
        self.delivery_time
    }
    /// The owner, [`NO_OWNER`] or (on the free list) [`FREE_SLOT`].
    pub(super) fn owner(&self) -> u32 {
        self.owner
    }
    fn prev(&self) -> u32 {
        self.prev
    }
    fn next(&self) -> u32 {
        self.next
    }
}

/// The slab of a group's pending entries plus the delivery-time list through it.
///
/// Slot `i` lives in page `i / PAGE_SLOTS`. Pages after the first are allocated whole, so
/// growing never copies slots and wastes at most one page; the first page grows
/// geometrically, so a small PEL costs little.
#[derive(Debug, Clone)]
pub(super) struct Slab {
    /// The slots, `PAGE_SLOTS` to a page (the last page may be partial).
    pages: Vec<Vec<Slot>>,
    /// Number of slots, live or free.
    len: u32,
    /// First free slot (`NIL` if none); free slots chain through `next`.
    free_head: u32,
    /// Number of free slots.
    free_len: u32,
    /// Time list head: the NACK zone's first entry, else the oldest delivery.
    head: u32,
    /// Time list tail: the newest delivery.
    tail: u32,
    /// Last entry of the NACK zone (`NIL` when the zone is empty).
    nack_tail: u32,
    /// Number of entries in the NACK zone.
    nacked: u32,
    /// Delivery counts of the slots whose count is `COUNT_SPILLED` (≥ 2^32 − 1).
    big_counts: BTreeMap<u32, u64>,
}

impl Default for Slab {
    fn default() -> Self {
        Slab {
            pages: Vec::new(),
            len: 0,
            free_head: NIL,
            free_len: 0,
            head: NIL,
            tail: NIL,
            nack_tail: NIL,
            nacked: 0,
            big_counts: BTreeMap::new(),
        }
    }
}

impl Slab {
    /// A copy of slot `i`.
    pub(super) fn slot(&self, i: u32) -> Slot {
        let i = i as usize;
        self.pages[i / PAGE_SLOTS][i % PAGE_SLOTS]
    }

    fn slot_mut(&mut self, i: u32) -> &mut Slot {
        let i = i as usize;
        &mut self.pages[i / PAGE_SLOTS][i % PAGE_SLOTS]
    }

    /// Where slot `i` lives, for a prefetch (null past the last page; a prefetch of any
    /// address is harmless, and this is never dereferenced).
    fn slot_addr(&self, i: u32) -> *const Slot {
        let i = i as usize;
        self.pages
            .get(i / PAGE_SLOTS)
            .map_or(std::ptr::null(), |page| {
                page.as_ptr().wrapping_add(i % PAGE_SLOTS)
            })
    }

    /// Slot `i`'s entry ID.
    pub(super) fn id(&self, i: u32) -> StreamId {
        self.slot(i).id()
    }

    /// Slot `i`'s delivery count.
    pub(super) fn count(&self, i: u32) -> u64 {
        match self.slot(i).delivery_count {
            COUNT_SPILLED => self
                .big_counts
                .get(&i)
                .copied()
                .unwrap_or(DELIVERY_COUNT_MAX),
            small => u64::from(small),
        }
    }

    /// Sets slot `i`'s delivery count, spilling it to `big_counts` when it needs more
    /// than 32 bits.
    fn set_count(&mut self, i: u32, count: u64) {
        match u32::try_from(count) {
            Ok(small) if small != COUNT_SPILLED => {
                if self.slot(i).delivery_count == COUNT_SPILLED {
                    self.big_counts.remove(&i);
                }
                self.slot_mut(i).delivery_count = small;
            }
            _ => {
                self.slot_mut(i).delivery_count = COUNT_SPILLED;
                self.big_counts.insert(i, count);
            }
        }
    }

    /// Number of live slots (pending entries).
    pub(super) fn live(&self) -> usize {
        (self.len - self.free_len) as usize
    }

    /// Number of entries in the NACK zone (unowned entries).
    pub(super) fn nacked(&self) -> u32 {
        self.nacked
    }

    /// A new pending entry: `owner`'s (linked after the NACK zone by delivery time), or
    /// with [`NO_OWNER`] unowned (linked at the NACK zone's tail). Returns its slot.
    pub(super) fn insert(
        &mut self,
        id: StreamId,
        owner: u32,
        delivery_time: u64,
        delivery_count: u64,
    ) -> u32 {
        let i = self.alloc(id, delivery_time, delivery_count, owner);
        if owner == NO_OWNER {
            self.link_nacked(i);
        } else {
            self.link_by_time(i);
        }
        i
    }

    /// Takes slot `i` out of the time list and frees it (an acknowledged entry).
    pub(super) fn remove(&mut self, i: u32) {
        self.unlink(i);
        self.release(i);
    }

    /// A delivery, re-delivery or claim of slot `i`: now owned by `owner`, delivered at
    /// `time` with `count`, and moved to its place by time after the NACK zone.
    pub(super) fn redeliver(&mut self, i: u32, owner: u32, time: u64, count: u64) {
        self.unlink(i);
        let s = self.slot_mut(i);
        s.owner = owner;
        s.delivery_time = time;
        self.set_count(i, count);
        self.link_by_time(i);
    }

    /// XNACK of slot `i`: unowned, delivery time 0, `count`, moved to the NACK zone's tail.
    pub(super) fn nack(&mut self, i: u32, count: u64) {
        self.unlink(i);
        let s = self.slot_mut(i);
        s.owner = NO_OWNER;
        s.delivery_time = 0;
        self.set_count(i, count);
        self.link_nacked(i);
    }

    /// The head of the delivery-time list: the first NACKed entry, else the oldest
    /// delivery.
    pub(super) fn oldest(&self) -> Option<u32> {
        (self.head != NIL).then_some(self.head)
    }

    /// The oldest owned entry's delivery time (NACKed entries aside).
    pub(super) fn oldest_delivery_time(&self) -> Option<u64> {
        let i = self.first_delivered();
        (i != NIL).then(|| self.slot(i).delivery_time())
    }

    /// The slots in delivery-time list order: the NACK zone first, then by delivery time,
    /// oldest first. With `min = Some((now_ms, min_idle))` it stops at the first owned entry
    /// idle less than `min_idle`.
    pub(super) fn by_time(&self, min: Option<(u64, u64)>) -> TimeOrder<'_> {
        TimeOrder {
            slab: self,
            next: self.head,
            nacked_left: self.nacked,
            min,
        }
    }

    /// Heap bytes of the slab pages (allocated capacities, requested sizes).
    pub(super) fn heap_bytes(&self) -> usize {
        self.pages.capacity() * size_of::<Vec<Slot>>()
            + self
                .pages
                .iter()
                .map(|p| p.capacity() * size_of::<Slot>())
                .sum::<usize>()
    }

    /// Compacts the slab when fewer than half its slots are live, so memory follows the
    /// PEL down: each live slot above the live count moves down into a hole, and
    /// `moved(slab, id, owner, to)` is called for it so the caller repoints its PEL
    /// indexes (the old and the new slot both hold `id` then). Amortised O(log n) per
    /// release: after a compaction, at least half the slab must be released again before
    /// the next one.
    pub(super) fn compact_if_sparse(&mut self, mut moved: impl FnMut(&Slab, StreamId, u32, u32)) {
        let len = self.len;
        let live = self.live() as u32;
        if (len as usize) < COMPACT_MIN_SLOTS || live * 2 >= len {
            return;
        }
        let mut hole = 0u32;
        for src in live..len {
            if self.slot(src).owner() == FREE_SLOT {
                continue;
            }
            while self.slot(hole).owner() != FREE_SLOT {
                hole += 1;
            }
            let s = self.move_slot(src, hole);
            moved(self, s.id(), s.owner(), hole);
            self.slot_mut(src).owner = FREE_SLOT;
            hole += 1;
        }
        self.truncate(live);
    }

    /// Copies live slot `src` into free slot `dst` with its spilled count and time-list
    /// links; `src` keeps its contents until the caller frees it. Returns the slot.
    fn move_slot(&mut self, src: u32, dst: u32) -> Slot {
        let s = self.slot(src);
        *self.slot_mut(dst) = s;
        if s.delivery_count == COUNT_SPILLED
            && let Some(c) = self.big_counts.remove(&src)
        {
            self.big_counts.insert(dst, c);
        }
        self.point_next(s.prev(), dst);
        self.point_prev(s.next(), dst);
        if self.nack_tail == src {
            self.nack_tail = dst;
        }
        s
    }

    /// A new, unlinked slot.
    fn alloc(&mut self, id: StreamId, delivery_time: u64, delivery_count: u64, owner: u32) -> u32 {
        let slot = Slot {
            id,
            delivery_time,
            delivery_count: 0,
            owner,
            prev: NIL,
            next: NIL,
        };
        if self.free_head != NIL {
            let i = self.free_head;
            self.free_head = self.slot(i).next();
            self.free_len -= 1;
            *self.slot_mut(i) = slot;
            self.set_count(i, delivery_count);
            return i;
        }
        let i = self.len;
        assert!(
            i < FREE_SLOT,
            "a group PEL holds fewer than 2^32 - 2 entries"
        );
        if self.pages.last().is_none_or(|p| p.len() == PAGE_SLOTS) {
            let first = self.pages.is_empty();
            self.pages.push(if first {
                Vec::new()
            } else {
                Vec::with_capacity(PAGE_SLOTS)
            });
        }
        let page = self
            .pages
            .last_mut()
            .expect("a page with room was just ensured");
        if page.len() == page.capacity() {
            let want = (page.capacity() * 2).clamp(PAGE_MIN_GROWTH, PAGE_SLOTS);
            page.reserve_exact(want - page.len());
        }
        page.push(slot);
        self.len += 1;
        self.set_count(i, delivery_count);
        i
    }

    /// Returns an unlinked slot to the free list.
    fn release(&mut self, i: u32) {
        if self.slot(i).delivery_count == COUNT_SPILLED {
            self.big_counts.remove(&i);
        }
        let head = self.free_head;
        let s = self.slot_mut(i);
        s.owner = FREE_SLOT;
        s.prev = NIL;
        s.next = head;
        self.free_head = i;
        self.free_len += 1;
    }

    /// Keeps the first `n` slots (all live, none on the free list) and frees the rest.
    fn truncate(&mut self, n: u32) {
        let n = n as usize;
        let pages = n.div_ceil(PAGE_SLOTS);
        self.pages.truncate(pages);
        self.pages.shrink_to_fit();
        if let Some(last) = self.pages.last_mut() {
            last.truncate(n - (pages - 1) * PAGE_SLOTS);
            last.shrink_to_fit();
        }
        self.len = n as u32;
        self.free_head = NIL;
        self.free_len = 0;
    }

    /// Takes slot `i` out of the time list. Call before changing its owner: whether it
    /// leaves the NACK zone is read from it.
    fn unlink(&mut self, i: u32) {
        let s = self.slot(i);
        let (p, n) = (s.prev(), s.next());
        self.point_next(p, n);
        self.point_prev(n, p);
        if s.owner() == NO_OWNER {
            self.nacked -= 1;
            if self.nack_tail == i {
                self.nack_tail = p;
            }
        }
        let s = self.slot_mut(i);
        s.prev = NIL;
        s.next = NIL;
    }

    /// Links unlinked slot `i` right after `after` (`NIL`: at the head).
    fn link_after(&mut self, after: u32, i: u32) {
        let next = if after == NIL {
            self.head
        } else {
            self.slot(after).next()
        };
        {
            let s = self.slot_mut(i);
            s.prev = after;
            s.next = next;
        }
        self.point_next(after, i);
        self.point_prev(next, i);
    }

    /// Makes `to` follow slot `p` in the time list; `p == NIL` makes `to` the head.
    fn point_next(&mut self, p: u32, to: u32) {
        if p == NIL {
            self.head = to;
        } else {
            self.slot_mut(p).next = to;
        }
    }

    /// Makes `to` precede slot `n` in the time list; `n == NIL` makes `to` the tail.
    fn point_prev(&mut self, n: u32, to: u32) {
        if n == NIL {
            self.tail = to;
        } else {
            self.slot_mut(n).prev = to;
        }
    }

    /// Links owned, unlinked slot `i` after the NACK zone, in delivery-time order: after
    /// every entry delivered at or before its time. O(1) when it is the newest.
    fn link_by_time(&mut self, i: u32) {
        let t = self.slot(i).delivery_time();
        let mut after = self.tail;
        while after != NIL && after != self.nack_tail && self.slot(after).delivery_time() > t {
            after = self.slot(after).prev();
        }
        self.link_after(after, i);
    }

    /// Links unowned, unlinked slot `i` at the tail of the NACK zone.
    fn link_nacked(&mut self, i: u32) {
        self.link_after(self.nack_tail, i);
        self.nack_tail = i;
        self.nacked += 1;
    }

    /// The first slot after the NACK zone (the oldest delivery), or `NIL`.
    fn first_delivered(&self) -> u32 {
        if self.nack_tail == NIL {
            self.head
        } else {
            self.slot(self.nack_tail).next()
        }
    }
}

/// Slot numbers in delivery-time list order, from [`Slab::by_time`].
pub(super) struct TimeOrder<'a> {
    slab: &'a Slab,
    next: u32,
    /// NACK-zone entries still ahead.
    nacked_left: u32,
    /// `(now_ms, min_idle)`: stop at the first owned entry too young.
    min: Option<(u64, u64)>,
}

impl Iterator for TimeOrder<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        if self.next == NIL {
            return None;
        }
        let i = self.next;
        let s = self.slab.slot(i);
        if self.nacked_left > 0 {
            self.nacked_left -= 1;
        } else if let Some((now, min_idle)) = self.min
            && now.saturating_sub(s.delivery_time()) < min_idle
        {
            self.next = NIL;
            return None;
        }
        self.next = s.next();
        Some(i)
    }
}

// ---------------------------------------------------------------------------------------
// PEL index: slot numbers in ID order, without keys
// ---------------------------------------------------------------------------------------

/// A PEL: the slot numbers of its entries, ordered by the IDs stored in those slots.
///
/// It keeps no keys of its own: comparisons read the ID from the slab, which every method
/// takes. That is what makes a pending entry cost 40 bytes of slot plus about 4–5 bytes in
/// each of the two PELs holding it, where a radix tree keyed by 16-byte IDs costs tens of
/// bytes per key.
///
/// ```text
///   chunks (VecDeque, ID order)
///   ┌──────────────────┬──────────────────┬─────
///   │ first 5-0        │ first 9-3        │ ...      first = ID of items[0], cached
///   │ items [7, 2, 11] │ items [4, 0, ..] │          items = slot numbers, ≤ 128, sorted
///   └──────────────────┴──────────────────┴─────              by slab[item].id
/// ```
///
/// Lookup: binary search over the chunks' cached first IDs, then over the chunk's items
/// (reading their IDs from the slab). Appending past the last full chunk (the usual `>`
/// delivery) starts a new chunk, so ID-ordered fills leave chunks full; an insert into a
/// full chunk elsewhere splits it in half; a chunk falling under a quarter full merges with
/// a neighbour when they fit in one, or shrinks its allocation.
#[derive(Debug, Clone, Default)]
pub(super) struct PelIndex {
    /// Non-empty chunks; every ID in a chunk is below every ID in the next one.
    chunks: VecDeque<Chunk>,
    /// Number of slot numbers held.
    len: u32,
}

/// `partition_point` over `len` elements for a search whose every step reads scattered
/// memory (a PEL index's chunks, then the slab slots of a chunk's items): the number of
/// leading elements for which `pred` holds (`pred` must hold for a prefix, then fail).
///
/// A random lookup's steps go left or right at random, so a branch on each comparison
/// mispredicts half the time and every step then waits for its own cache miss. Here the
/// step is a select instead of a branch, and each step first prefetches (`addr`) the two
/// elements the next one may read, so the next miss is already under way while this
/// step's comparison waits for its own.
fn partition_point_prefetched<T>(
    len: usize,
    addr: impl Fn(usize) -> *const T,
    pred: impl Fn(usize) -> bool,
) -> usize {
    if len == 0 {
        return 0;
    }
    // Everything before `base` satisfies `pred`; nothing from `base + size` on does.
    let (mut base, mut size) = (0usize, len);
    while size > 1 {
        let half = size / 2;
        let mid = base + half;
        let next = (size - half) / 2;
        crate::util::prefetch(addr(base + next));
        crate::util::prefetch(addr(mid + next));
        base = std::hint::select_unpredictable(pred(mid), mid, base);
        size -= half;
    }
    base + usize::from(pred(base))
}

/// A run of at most `CHUNK_MAX` slot numbers of a [`PelIndex`].
#[derive(Debug, Clone)]
struct Chunk {
    /// The ID of `items[0]`.
    first: StreamId,
    /// Slot numbers in ID order, never empty.
    items: Vec<u32>,
}

/// A position in a [`PelIndex`]: chunk, then item within it.
#[derive(Debug, Clone, Copy)]
struct PelPos {
    chunk: usize,
    item: usize,
}

impl PelIndex {
    /// Number of entries.
    pub(super) fn len(&self) -> usize {
        self.len as usize
    }

    /// The chunk that holds `id` or would receive it.
    fn chunk_for(&self, id: StreamId) -> usize {
        // Deliveries (and snapshot loads) come in ID order: try the last chunk first.
        if let Some(last) = self.chunks.back()
            && last.first <= id
        {
            return self.chunks.len() - 1;
        }
        let chunks = &self.chunks;
        partition_point_prefetched(
            chunks.len(),
            |c| {
                chunks
                    .get(c)
                    .map_or(std::ptr::null(), |c| c as *const Chunk)
            },
            |c| chunks[c].first <= id,
        )
        .saturating_sub(1)
    }

    /// Where `id` is (`Ok`) or would go (`Err`); `None` when the index is empty.
    fn locate(&self, slab: &Slab, id: StreamId) -> Option<(usize, Result<usize, usize>)> {
        if self.chunks.is_empty() {
            return None;
        }
        let c = self.chunk_for(id);
        let items = &self.chunks[c].items;
        // Past the chunk's last ID (an append): no search.
        if let Some(&last) = items.last()
            && slab.id(last) < id
        {
            return Some((c, Err(items.len())));
        }
        let below = partition_point_prefetched(
            items.len(),
            |k| slab.slot_addr(items[k]),
            |k| slab.id(items[k]) <= id,
        );
        Some((
            c,
            match below.checked_sub(1) {
                Some(k) if slab.id(items[k]) == id => Ok(k),
                _ => Err(below),
            },
        ))
    }

    /// The slot holding `id`, if it is in this PEL.
    pub(super) fn get(&self, slab: &Slab, id: StreamId) -> Option<u32> {
        match self.locate(slab, id)? {
            (c, Ok(p)) => Some(self.chunks[c].items[p]),
            _ => None,
        }
    }

    /// Adds slot `i` (its ID must not be in the index yet).
    pub(super) fn insert(&mut self, slab: &Slab, i: u32) {
        let id = slab.id(i);
        let Some((c, found)) = self.locate(slab, id) else {
            self.chunks.push_back(Chunk {
                first: id,
                items: vec![i],
            });
            self.len = 1;
            return;
        };
        let p = match found {
            Ok(p) => {
                debug_assert!(false, "PelIndex::insert of an ID already present");
                self.chunks[c].items[p] = i;
                return;
            }
            Err(p) => p,
        };
        self.len += 1;
        let last = self.chunks.len() - 1;
        let chunk = &mut self.chunks[c];
        if chunk.items.len() < CHUNK_MAX {
            chunk.items.insert(p, i);
            if p == 0 {
                chunk.first = id;
            }
            return;
        }
        // Full. Past either end of the index, start a new chunk so in-order fills stay dense.
        if c == last && p == CHUNK_MAX {
            self.chunks.push_back(Chunk {
                first: id,
                items: vec![i],
            });
            return;
        }
        if c == 0 && p == 0 {
            self.chunks.push_front(Chunk {
                first: id,
                items: vec![i],
            });
            return;
        }
        let upper = chunk.items.split_off(CHUNK_MAX / 2);
        let upper_first = slab.id(upper[0]);
        self.chunks.insert(
            c + 1,
            Chunk {
                first: upper_first,
                items: upper,
            },
        );
        let (c, p) = if p > CHUNK_MAX / 2 {
            (c + 1, p - CHUNK_MAX / 2)
        } else {
            (c, p)
        };
        let chunk = &mut self.chunks[c];
        chunk.items.insert(p, i);
        if p == 0 {
            chunk.first = id;
        }
    }

    /// Removes `id`; returns its slot number. The slot must still hold `id`.
    pub(super) fn remove(&mut self, slab: &Slab, id: StreamId) -> Option<u32> {
        let (c, Ok(p)) = self.locate(slab, id)? else {
            return None;
        };
        self.len -= 1;
        let chunk = &mut self.chunks[c];
        let i = chunk.items.remove(p);
        if chunk.items.is_empty() {
            self.chunks.remove(c);
            return Some(i);
        }
        if p == 0 {
            chunk.first = slab.id(chunk.items[0]);
        }
        if chunk.items.len() < CHUNK_MAX / 4 {
            self.merge_or_shrink(c);
        }
        Some(i)
    }

    /// Chunk `c` got small: merge it with a neighbour if both fit in one chunk, else give
    /// back most of its spare capacity.
    fn merge_or_shrink(&mut self, c: usize) {
        let n = self.chunks[c].items.len();
        if let Some(next) = self.chunks.get(c + 1)
            && n + next.items.len() <= CHUNK_MAX
        {
            let next = self.chunks.remove(c + 1).expect("checked above");
            self.chunks[c].items.extend_from_slice(&next.items);
        } else if c > 0 && n + self.chunks[c - 1].items.len() <= CHUNK_MAX {
            let this = self.chunks.remove(c).expect("c is a valid index");
            self.chunks[c - 1].items.extend_from_slice(&this.items);
        } else {
            let items = &mut self.chunks[c].items;
            if items.capacity() > 4 && items.capacity() >= 4 * n {
                items.shrink_to(2 * n);
            }
        }
    }

    /// Points the entry `id` at slot `i` instead (the slab moved it). Both the old and the
    /// new slot must hold `id`.
    pub(super) fn repoint(&mut self, slab: &Slab, id: StreamId, i: u32) {
        if let Some((c, Ok(p))) = self.locate(slab, id) {
            self.chunks[c].items[p] = i;
        } else {
            debug_assert!(false, "PelIndex::repoint of a missing ID");
        }
    }

    /// The first position holding an ID ≥ `id`.
    fn seek_ge(&self, slab: &Slab, id: StreamId) -> PelPos {
        let Some((chunk, found)) = self.locate(slab, id) else {
            return PelPos { chunk: 0, item: 0 };
        };
        let item = found.unwrap_or_else(|p| p);
        if item == self.chunks[chunk].items.len() {
            PelPos {
                chunk: chunk + 1,
                item: 0,
            }
        } else {
            PelPos { chunk, item }
        }
    }

    /// The slot number at `pos` and the position after it.
    fn at(&self, pos: PelPos) -> Option<(u32, PelPos)> {
        let items = &self.chunks.get(pos.chunk)?.items;
        let i = *items.get(pos.item)?;
        let next = if pos.item + 1 == items.len() {
            PelPos {
                chunk: pos.chunk + 1,
                item: 0,
            }
        } else {
            PelPos {
                chunk: pos.chunk,
                item: pos.item + 1,
            }
        };
        Some((i, next))
    }

    /// The slot with the smallest ID.
    pub(super) fn first(&self) -> Option<u32> {
        self.chunks.front().map(|c| c.items[0])
    }

    /// The slot with the largest ID.
    pub(super) fn last(&self) -> Option<u32> {
        self.chunks.back().and_then(|c| c.items.last().copied())
    }

    /// All slot numbers in ID order.
    pub(super) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.chunks.iter().flat_map(|c| c.items.iter().copied())
    }

    /// Heap bytes allocated (capacities, requested sizes).
    pub(super) fn heap_bytes(&self) -> usize {
        let items: usize = self.chunks.iter().map(|c| c.items.capacity()).sum();
        self.chunks.capacity() * size_of::<Chunk>() + items * size_of::<u32>()
    }

    /// The slots with `start <= id <= end`, in ID order.
    pub(super) fn range<'a>(
        &'a self,
        slab: &'a Slab,
        start: StreamId,
        end: StreamId,
    ) -> SlotRange<'a> {
        let pos = if start > end {
            self.end()
        } else {
            self.seek_ge(slab, start)
        };
        SlotRange {
            slab,
            pel: self,
            pos,
            end,
        }
    }

    /// The position past the last entry.
    fn end(&self) -> PelPos {
        PelPos {
            chunk: self.chunks.len(),
            item: 0,
        }
    }
}

/// Slot numbers of a [`PelIndex`] in an ID range, in ID order, from [`PelIndex::range`].
pub(super) struct SlotRange<'a> {
    slab: &'a Slab,
    pel: &'a PelIndex,
    pos: PelPos,
    end: StreamId,
}

impl Iterator for SlotRange<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        let (i, next) = self.pel.at(self.pos)?;
        if self.slab.id(i) > self.end {
            self.pos = self.pel.end();
            return None;
        }
        self.pos = next;
        Some(i)
    }
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

/// Checks a PEL index's shape and returns its slot numbers in order.
#[cfg(test)]
pub(super) fn check_pel_index(pel: &PelIndex, slab: &Slab) -> Vec<u32> {
    let mut all = Vec::new();
    for chunk in &pel.chunks {
        assert!(!chunk.items.is_empty() && chunk.items.len() <= CHUNK_MAX);
        assert_eq!(chunk.first, slab.id(chunk.items[0]));
        all.extend_from_slice(&chunk.items);
    }
    assert_eq!(all.len(), pel.len());
    assert!(
        all.windows(2).all(|w| slab.id(w[0]) < slab.id(w[1])),
        "PEL index out of order"
    );
    all
}

#[cfg(test)]
impl Slab {
    /// Checks the pages, the free list and the time list (symmetric links, the NACK zone
    /// first, then non-decreasing times); returns the number of live slots.
    pub(super) fn check(&self) -> usize {
        // Pages: all full but the last; the total is `len`.
        let total: usize = self.pages.iter().map(Vec::len).sum();
        assert_eq!(total, self.len as usize);
        if let Some((_, full)) = self.pages.split_last() {
            assert!(full.iter().all(|p| p.len() == PAGE_SLOTS));
        }
        // Free list.
        let mut free = 0;
        let mut f = self.free_head;
        while f != NIL {
            assert_eq!(self.slot(f).owner(), FREE_SLOT);
            free += 1;
            f = self.slot(f).next();
        }
        assert_eq!(free, self.free_len);
        let live = (0..self.len)
            .filter(|&i| self.slot(i).owner() != FREE_SLOT)
            .count();
        assert_eq!(live + free as usize, self.len as usize);
        // Time list.
        let mut prev = NIL;
        let mut i = self.head;
        let mut n = 0usize;
        let mut zone = 0u32;
        let mut in_zone = true;
        let mut last_time = 0u64;
        while i != NIL {
            let s = self.slot(i);
            assert_eq!(s.prev(), prev);
            assert_ne!(s.owner(), FREE_SLOT);
            if s.owner() == NO_OWNER {
                assert!(in_zone, "NACKed entry after the NACK zone");
                assert_eq!(s.delivery_time(), 0);
                zone += 1;
                if zone == self.nacked {
                    assert_eq!(self.nack_tail, i);
                }
            } else {
                in_zone = false;
                assert!(s.delivery_time() >= last_time, "time list out of order");
                last_time = s.delivery_time();
            }
            prev = i;
            i = s.next();
            n += 1;
        }
        assert_eq!(self.tail, prev);
        assert_eq!(n, live);
        assert_eq!(zone, self.nacked);
        if self.nacked == 0 {
            assert_eq!(self.nack_tail, NIL);
        }
        live
    }

    /// Number of slots, live or free.
    pub(super) fn slots(&self) -> usize {
        self.len as usize
    }

    /// Slots the pages have room for.
    pub(super) fn capacity(&self) -> usize {
        self.pages.iter().map(Vec::capacity).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ms: u64) -> StreamId {
        StreamId::new(ms, 0)
    }

    fn time_ids(slab: &Slab) -> Vec<StreamId> {
        slab.by_time(None).map(|i| slab.id(i)).collect()
    }

    #[test]
    fn a_pending_entry_slot_is_40_bytes() {
        // The memory figure: one slot per pending entry in the slab, plus a slot number in
        // the group PEL index and one in the owner's.
        assert_eq!(std::mem::size_of::<Slot>(), 40);
        assert_eq!(std::mem::align_of::<Slot>(), 4);
    }

    #[test]
    fn the_time_list_keeps_the_nack_zone_first_then_delivery_order() {
        let mut slab = Slab::default();
        let a = slab.insert(id(1), 0, 30, 1);
        let b = slab.insert(id(2), 0, 10, 1);
        let c = slab.insert(id(3), 1, 20, 1);
        let d = slab.insert(id(4), NO_OWNER, 0, 0);
        assert_eq!(time_ids(&slab), vec![id(4), id(2), id(3), id(1)]);
        slab.nack(a, 5);
        assert_eq!(time_ids(&slab), vec![id(4), id(1), id(2), id(3)]);
        assert_eq!((slab.count(a), slab.nacked()), (5, 2));
        assert_eq!(slab.oldest(), Some(d));
        assert_eq!(slab.oldest_delivery_time(), Some(10));
        slab.redeliver(d, 2, 15, 1);
        assert_eq!(time_ids(&slab), vec![id(1), id(2), id(4), id(3)]);
        let claimable: Vec<u32> = slab.by_time(Some((30, 15))).collect();
        assert_eq!(claimable, vec![a, b, d], "c is idle 10 < 15");
        slab.remove(b);
        slab.remove(c);
        assert_eq!(slab.check(), 2);
    }

    #[test]
    fn counts_above_32_bits_spill_and_come_back() {
        let mut slab = Slab::default();
        let big = u64::from(u32::MAX) + 7;
        let a = slab.insert(id(1), 0, 1, big);
        let b = slab.insert(id(2), 0, 1, u64::from(u32::MAX));
        assert_eq!((slab.count(a), slab.count(b)), (big, u64::from(u32::MAX)));
        slab.redeliver(a, 0, 2, 3);
        assert_eq!(slab.count(a), 3);
        assert_eq!(slab.big_counts.len(), 1);
        slab.remove(b);
        assert!(slab.big_counts.is_empty());
        slab.check();
    }

    #[test]
    fn compaction_moves_live_slots_down_and_reports_each_move() {
        let mut slab = Slab::default();
        let mut pel = PelIndex::default();
        for ms in 1..=20 {
            let i = slab.insert(id(ms), 0, ms, u64::from(u32::MAX) + ms);
            pel.insert(&slab, i);
        }
        for ms in 1..=15 {
            let i = pel.remove(&slab, id(ms)).expect("pending");
            slab.remove(i);
        }
        let mut moves = 0;
        slab.compact_if_sparse(|slab, id, owner, to| {
            assert_eq!(owner, 0);
            pel.repoint(slab, id, to);
            moves += 1;
        });
        assert_eq!(moves, 5);
        assert_eq!((slab.slots(), slab.check()), (5, 5));
        let got: Vec<(StreamId, u64)> = pel.iter().map(|i| (slab.id(i), slab.count(i))).collect();
        let want: Vec<(StreamId, u64)> = (16..=20)
            .map(|ms| (id(ms), u64::from(u32::MAX) + ms))
            .collect();
        assert_eq!(got, want);
        assert_eq!(time_ids(&slab), (16..=20).map(id).collect::<Vec<_>>());
        check_pel_index(&pel, &slab);
    }

    proptest::proptest! {
        /// The prefetching search finds what `partition_point` finds, for every length
        /// (odd and even halves) and every split point, and PEL lookups built on it
        /// find present IDs and place absent ones.
        #[test]
        fn the_prefetching_search_is_partition_point(
            mut keys in proptest::collection::vec(0u64..400, 0..300),
            probes in proptest::collection::vec(0u64..420, 1..40),
        ) {
            keys.sort_unstable();
            keys.dedup();
            for &x in &probes {
                let got = partition_point_prefetched(
                    keys.len(),
                    |k| keys.as_ptr().wrapping_add(k),
                    |k| keys[k] <= x,
                );
                proptest::prop_assert_eq!(got, keys.partition_point(|&k| k <= x));
            }
            let mut slab = Slab::default();
            let mut pel = PelIndex::default();
            for &k in keys.iter().rev() {
                let i = slab.insert(id(k + 1), 0, 1, 1);
                pel.insert(&slab, i);
            }
            check_pel_index(&pel, &slab);
            for &x in &probes {
                let found = pel.get(&slab, id(x + 1)).map(|i| slab.id(i));
                let want = keys.binary_search(&x).ok().map(|_| id(x + 1));
                proptest::prop_assert_eq!(found, want);
            }
        }
    }

    #[test]
    fn the_pel_index_splits_and_merges_chunks_and_answers_ranges() {
        let mut slab = Slab::default();
        let mut pel = PelIndex::default();
        // Out of order, so inserts land inside full chunks and split them.
        for k in 0..60u64 {
            let ms = (k * 37) % 60 + 1;
            let i = slab.insert(id(ms), 0, 1, 1);
            pel.insert(&slab, i);
            check_pel_index(&pel, &slab);
        }
        assert_eq!(pel.len(), 60);
        assert!(pel.chunks.len() > 60 / CHUNK_MAX);
        let ids = |r: SlotRange<'_>| r.map(|i| slab.id(i)).collect::<Vec<_>>();
        assert_eq!(
            ids(pel.range(&slab, id(10), id(13))),
            (10..=13).map(id).collect::<Vec<_>>()
        );
        assert_eq!(ids(pel.range(&slab, id(13), id(10))), vec![]);
        assert_eq!(
            ids(pel.range(&slab, StreamId::new(59, 1), StreamId::MAX)),
            vec![id(60)]
        );
        assert_eq!(pel.first().map(|i| slab.id(i)), Some(id(1)));
        assert_eq!(pel.last().map(|i| slab.id(i)), Some(id(60)));
        let before = pel.chunks.len();
        for ms in (1..=60).filter(|ms| ms % 7 != 0) {
            assert!(pel.remove(&slab, id(ms)).is_some());
            check_pel_index(&pel, &slab);
        }
        assert_eq!(pel.remove(&slab, id(1)), None);
        assert_eq!(pel.len(), 8);
        assert!(pel.chunks.len() < before, "emptied and small chunks go");
        assert_eq!(pel.get(&slab, id(14)).map(|i| slab.id(i)), Some(id(14)));
    }
}
