//! Consumer groups of one stream (Redis: `streamCG`): last-delivered IDs, read counters,
//! the group's pending entries kept in step with its consumers, and the stream-level
//! reverse index "ID → groups that still hold it" (Redis: `cgroups_ref`).
//!
//! The pieces a group is made of have their own files: the pending entries (Redis:
//! `streamNACK`), the delivery-time list and the PEL indexes are in pel.rs; the consumers
//! (Redis: `streamConsumer`) and their handles in consumer.rs. This file ties them
//! together: one pending entry is stored exactly once, as a slot in the group's slab, and
//! the group PEL, the owner's consumer PEL and the delivery-time list all refer to it by
//! slot number; every change here updates all of them and the reverse index.
//!
//! ```text
//!  Groups (one per stream)
//!  ├─ by_name : Rax  "billing" → 1, "emails" → 0        name order = XINFO order
//!  ├─ list    : [ConsumerGroup "emails", ConsumerGroup "billing"]
//!  ├─ refs    : Rax  ID → number of groups whose PEL holds ID   (only while ≥ 2 groups;
//!  │                                                             with one, its PEL answers)
//!  └─ min_last_id : smallest last_id over the groups
//!
//!  ConsumerGroup "emails"   last_id 5-0, entries_read 5
//!   pel       : group PEL, slot numbers in ID order      (pel.rs: PelIndex)
//!   slab      : the pending entries and the delivery-time list   (pel.rs: Slab)
//!   consumers : alice { seen_time, active_time, pel: [0] }      (consumer.rs)
//!               bob   { seen_time, active_time, pel: [3] }
//! ```
//!
//! Invariants (checked after every step by the property test at the bottom, together with
//! those of pel.rs and consumer.rs):
//! - the group PEL holds exactly the live slots;
//! - an owned slot is in its owner's PEL and in no other consumer's; an unowned slot (after
//!   XNACK) is in no consumer PEL;
//! - with two or more groups, `refs` maps each ID to the number of group PELs holding it
//!   (IDs held by none are absent); with fewer it is not kept;
//! - `min_last_id` is the smallest `last_id` over the groups (0-0 when there are none).
//!
//! Every PEL change goes through [`GroupMut`] (or [`Groups`]), which holds the whole
//! [`Groups`] borrowed, so the reverse index and `min_last_id` cannot fall out of step.
//! Nothing here reads a clock: each operation that needs "now" takes `now_ms`.
//!
//! Costs: deliver, ack, claim, NACK and re-delivery do one or two O(log n) PEL lookups or
//! changes plus O(1) in the slab and the time list (pel.rs). An XCLAIM with an older TIME
//! or IDLE walks the time list back from the tail to its place, so a snapshot reloaded in
//! [`ConsumerGroup::by_time`] order loads each entry in O(1). Memory per pending entry is
//! pel.rs's: ~49.5 bytes (`benches/group.rs` prints the figure).

use super::consumer::{Consumer, ConsumerId, ConsumerTable, UNSET, signed_or_unset};
use super::id::StreamId;
use super::pel::{
    DELIVERY_COUNT_MAX, NO_OWNER, PelIndex, PendingEntry, Slab, SlotRange, TimeOrder, cap_count,
};
use super::rax::Rax;
use std::cmp::Ordering;
use std::ops::Deref;

/// `entries_read` when the read counter is unknown (Redis: `SCG_INVALID_ENTRIES_READ`).
const SCG_INVALID_ENTRIES_READ: i64 = UNSET;

// ---------------------------------------------------------------------------------------
// entries-read and lag (reference §3.3)
// ---------------------------------------------------------------------------------------

/// The stream metadata the entries-read and lag rules read (reference §1.6, §3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamCounters {
    /// Number of live entries.
    pub length: u64,
    /// `last-generated-id`.
    pub last_id: StreamId,
    /// `recorded-first-entry-id` (first live entry, 0-0 when empty).
    pub first_id: StreamId,
    /// Largest ID removed by XDEL/XDELEX/XACKDEL (not by trimming).
    pub max_deleted_entry_id: StreamId,
    /// Lifetime count of added entries.
    pub entries_added: u64,
}

impl StreamCounters {
    /// True if a tombstone may lie at or after `start`: the stream is not empty, some entry
    /// was deleted at or after its first entry, and `start <= max_deleted_entry_id`
    /// (Redis: `streamRangeHasTombstones(s, start, NULL)`).
    pub fn has_tombstone_from(&self, start: StreamId) -> bool {
        let max_deleted = self.max_deleted_entry_id;
        if self.length == 0 || max_deleted.is_zero() || max_deleted < self.first_id {
            return false;
        }
        start <= max_deleted
    }
}

/// The logical read counter of `id`, i.e. how many entries were ever added up to and
/// including it, when that can be known from the stream's counters; `None` when it cannot
/// (Redis: `streamEstimateDistanceFromFirstEverEntry`, reference §3.3 `estimate`).
pub fn estimate_entries_read(c: &StreamCounters, id: StreamId) -> Option<u64> {
    if c.entries_added == 0 {
        return Some(0);
    }
    if c.length == 0 && id <= c.last_id {
        return Some(c.entries_added);
    }
    if !id.is_zero() && id < c.max_deleted_entry_id {
        // A deletion lies between `id` and the end: the distance is unknowable.
        return None;
    }
    match id.cmp(&c.last_id) {
        Ordering::Equal => return Some(c.entries_added),
        Ordering::Greater => return None,
        Ordering::Less => {}
    }
    let max_deleted = c.max_deleted_entry_id;
    if max_deleted.is_zero() || max_deleted < c.first_id {
        let before_first = c.entries_added.saturating_sub(c.length);
        match id.cmp(&c.first_id) {
            Ordering::Less => return Some(before_first),
            Ordering::Equal => return Some(before_first.saturating_add(1)),
            Ordering::Greater => {}
        }
    }
    None
}

// ---------------------------------------------------------------------------------------
// Public value types
// ---------------------------------------------------------------------------------------

/// How a claim sets `delivery_count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryCount {
    /// +1, saturating (XCLAIM without JUSTID, XAUTOCLAIM, XREADGROUP CLAIM).
    Increment,
    /// Unchanged (XCLAIM/XAUTOCLAIM JUSTID without RETRYCOUNT).
    Keep,
    /// This value, capped at [`DELIVERY_COUNT_MAX`] (XCLAIM RETRYCOUNT).
    Set(u64),
}

/// One claim request (XCLAIM, XAUTOCLAIM, XREADGROUP CLAIM, log replay).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimSpec {
    /// Owned entries idle less than this are left alone; 0 takes any. Unowned (NACKed or
    /// FORCE-created) entries ignore it.
    pub min_idle: u64,
    /// The new delivery time, Unix ms (now, now − IDLE, or TIME). A time after `now_ms`
    /// becomes `now_ms`, as XCLAIM does.
    pub delivery_time: u64,
    /// How the delivery count changes.
    pub count: DeliveryCount,
    /// FORCE: create the pending entry (unowned, count 0) when it is not pending. The
    /// caller must have checked that the stream entry exists.
    pub force: bool,
}

/// What [`GroupMut::claim`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// Now owned by the claiming consumer. The values are those before this claim (0, 0
    /// for an entry FORCE created): XREADGROUP CLAIM replies with them.
    Claimed {
        /// Delivery time before the claim.
        previous_delivery_time: u64,
        /// Delivery count before the claim.
        previous_delivery_count: u64,
    },
    /// Owned by someone and idle less than `min_idle`: untouched.
    NotIdle,
    /// Not pending, and no FORCE: untouched.
    NotPending,
}

/// Where a group moves entries delivered too often (`XGROUP SETDLQ`, streamd's own; see
/// docs/beyond-redis.md): the delivery that would take an entry's count above
/// `max_deliveries` appends it to the stream at `key` instead, and acknowledges it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// The dead-letter stream's key, in the group's database (never the group's own).
    pub key: Box<[u8]>,
    /// Deliveries an entry may have; at least 1.
    pub max_deliveries: u64,
}

/// XNACK's mode (reference §2.15).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NackMode {
    /// Delivery count −1, floor 0 (the failure was not the message's fault).
    Silent,
    /// Delivery count unchanged.
    Fail,
    /// Delivery count set to [`DELIVERY_COUNT_MAX`] (poison message).
    Fatal,
}

// ---------------------------------------------------------------------------------------
// ConsumerGroup (reads)
// ---------------------------------------------------------------------------------------

/// One consumer group (Redis: `streamCG`). Read it through `&ConsumerGroup` (from
/// [`Groups::get`] or a [`GroupMut`]); change it through [`GroupMut`].
#[derive(Debug, Clone)]
pub struct ConsumerGroup {
    /// The group's name.
    name: Box<[u8]>,
    /// Last delivered (not acknowledged) ID; `>` reads serve IDs above it.
    last_id: StreamId,
    /// Logical read counter, `SCG_INVALID_ENTRIES_READ` (-1) when unknown (§3.3).
    entries_read: i64,
    /// The group PEL: every live slot, in ID order.
    pel: PelIndex,
    /// The pending entries and the delivery-time list.
    slab: Slab,
    /// The consumers; a slot's owner is an index in this table.
    consumers: ConsumerTable,
    /// The dead-letter stream (XGROUP SETDLQ), boxed: most groups have none.
    dlq: Option<Box<DeadLetter>>,
}

impl ConsumerGroup {
    fn new(name: &[u8], last_id: StreamId, entries_read: Option<u64>) -> Self {
        ConsumerGroup {
            name: name.into(),
            last_id,
            entries_read: signed_or_unset(entries_read),
            pel: PelIndex::default(),
            slab: Slab::default(),
            consumers: ConsumerTable::new(),
            dlq: None,
        }
    }

    /// The group's dead-letter stream and its delivery limit, if set (XGROUP SETDLQ).
    pub fn dead_letter(&self) -> Option<&DeadLetter> {
        self.dlq.as_deref()
    }

    /// The delivery count [`GroupMut::claim`] would give `id` with `spec` at `now_ms`, or
    /// `None` when it would not claim it (not pending without FORCE, or owned and not
    /// idle enough). Must agree with [`GroupMut::claim`], which uses it.
    pub fn claim_count(&self, id: StreamId, spec: &ClaimSpec, now_ms: u64) -> Option<u64> {
        self.claim_count_at(self.pel.get(&self.slab, id), spec, now_ms)
    }

    /// [`ConsumerGroup::claim_count`] for the slot the PEL lookup found (`None`: not
    /// pending), so that a claim looks its entry up once.
    fn claim_count_at(&self, found: Option<u32>, spec: &ClaimSpec, now_ms: u64) -> Option<u64> {
        let previous = match found {
            Some(i) => {
                let s = self.slab.slot(i);
                if s.owner() != NO_OWNER
                    && spec.min_idle > 0
                    && now_ms.saturating_sub(s.delivery_time()) < spec.min_idle
                {
                    return None;
                }
                self.slab.count(i)
            }
            None if spec.force => 0,
            None => return None,
        };
        Some(match spec.count {
            DeliveryCount::Increment => cap_count(previous.saturating_add(1)),
            DeliveryCount::Keep => previous,
            DeliveryCount::Set(n) => cap_count(n),
        })
    }

    /// The delivery count a history read by `c` would give `id` ([`GroupMut::redeliver`]),
    /// or `None` when `id` is not pending with `c` as its owner.
    pub fn redeliver_count(&self, c: ConsumerId, id: StreamId) -> Option<u64> {
        self.redelivery(c, id).map(|(_, _, count)| count)
    }

    /// For a history read of `id` by `c`: `c`'s table index, the slot and the new delivery
    /// count (+1, saturating); `None` when `id` is not pending with `c` as its owner.
    fn redelivery(&self, c: ConsumerId, id: StreamId) -> Option<(u32, u32, u64)> {
        let owner = self.consumers.index_of(c);
        let i = self.pel.get(&self.slab, id)?;
        (self.slab.slot(i).owner() == owner)
            .then(|| (owner, i, cap_count(self.slab.count(i).saturating_add(1))))
    }

    /// The group's name.
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// The last delivered ID (XINFO `last-delivered-id`).
    pub fn last_id(&self) -> StreamId {
        self.last_id
    }

    /// The logical read counter, `None` when unknown (XINFO `entries-read` null).
    pub fn entries_read(&self) -> Option<u64> {
        u64::try_from(self.entries_read).ok()
    }

    /// Entries not yet delivered to this group, or `None` when it cannot be known
    /// (XINFO `lag`; Redis: `streamReplyWithCGLag`, reference §3.3).
    pub fn lag(&self, c: &StreamCounters) -> Option<u64> {
        if c.entries_added == 0 || c.length == 0 {
            return Some(0);
        }
        if self.last_id < c.first_id && c.max_deleted_entry_id < c.first_id {
            return Some(c.length);
        }
        if let Some(read) = self.entries_read()
            && !c.has_tombstone_from(self.last_id)
        {
            return Some(c.entries_added.saturating_sub(read));
        }
        estimate_entries_read(c, self.last_id).map(|read| c.entries_added.saturating_sub(read))
    }

    /// Number of pending entries, NACKed ones included (XINFO `pel-count`, `pending`).
    pub fn pel_count(&self) -> usize {
        self.pel.len()
    }

    /// Number of NACKed (unowned) pending entries (XINFO FULL `nacked-count`).
    pub fn nacked_count(&self) -> usize {
        self.slab.nacked() as usize
    }

    /// Number of consumers.
    pub fn consumer_count(&self) -> usize {
        self.consumers.len()
    }

    /// True if `id` is pending in this group.
    pub fn is_pending(&self, id: StreamId) -> bool {
        self.pel.get(&self.slab, id).is_some()
    }

    /// The pending entry `id`.
    pub fn pending(&self, id: StreamId) -> Option<PendingEntry<'_>> {
        self.pel.get(&self.slab, id).map(|i| self.view(i))
    }

    /// The smallest pending ID (XPENDING summary).
    pub fn first_pending_id(&self) -> Option<StreamId> {
        self.pel.first().map(|i| self.slab.id(i))
    }

    /// The largest pending ID (XPENDING summary).
    pub fn last_pending_id(&self) -> Option<StreamId> {
        self.pel.last().map(|i| self.slab.id(i))
    }

    /// The first pending entry with ID ≥ `from` (an XAUTOCLAIM cursor step).
    pub fn next_pending(&self, from: StreamId) -> Option<PendingEntry<'_>> {
        self.pel_range(from, StreamId::MAX).next()
    }

    /// Pending entries with `start <= id <= end`, in ID order (XPENDING, XAUTOCLAIM).
    pub fn pel_range(&self, start: StreamId, end: StreamId) -> PelRange<'_> {
        PelRange {
            group: self,
            slots: self.pel.range(&self.slab, start, end),
        }
    }

    /// A consumer's pending entries with `start <= id <= end`, in ID order (XREADGROUP
    /// history, XPENDING with a consumer, XINFO STREAM FULL).
    pub fn consumer_pel(&self, c: ConsumerId, start: StreamId, end: StreamId) -> PelRange<'_> {
        PelRange {
            group: self,
            slots: self.consumers.get(c).pel().range(&self.slab, start, end),
        }
    }

    /// All pending entries in delivery-time list order: the NACK zone first (in NACK
    /// order), then by delivery time, oldest first. A snapshot written in this order
    /// reloads in O(1) per entry.
    pub fn by_time(&self) -> ByTime<'_> {
        ByTime {
            group: self,
            slots: self.slab.by_time(None),
        }
    }

    /// The entries XREADGROUP CLAIM may take, best first: every NACKed entry, then owned
    /// entries idle at least `min_idle`, oldest first. Lazy; stops at the first entry that
    /// is too young. Collect the IDs, then [`GroupMut::claim`] them.
    pub fn claimable(&self, now_ms: u64, min_idle: u64) -> ByTime<'_> {
        ByTime {
            group: self,
            slots: self.slab.by_time(Some((now_ms, min_idle))),
        }
    }

    /// The head of the delivery-time list: the first NACKed entry, else the oldest
    /// delivery.
    pub fn oldest(&self) -> Option<PendingEntry<'_>> {
        self.slab.oldest().map(|i| self.view(i))
    }

    /// The oldest owned entry's delivery time (NACKed entries aside).
    pub fn oldest_delivery_time(&self) -> Option<u64> {
        self.slab.oldest_delivery_time()
    }

    /// When the first entry becomes claimable with `min_idle` (Unix ms), for waking a
    /// blocked XREADGROUP CLAIM: 0 if a NACKed entry is waiting, `None` if the PEL is
    /// empty.
    pub fn next_claimable_at(&self, min_idle: u64) -> Option<u64> {
        if self.slab.nacked() > 0 {
            return Some(0);
        }
        self.oldest_delivery_time()
            .map(|t| t.saturating_add(min_idle))
    }

    /// The consumer called `name`.
    pub fn consumer_id(&self, name: &[u8]) -> Option<ConsumerId> {
        self.consumers.id(name)
    }

    /// The consumer behind a handle. Panics if it was deleted.
    pub fn consumer(&self, c: ConsumerId) -> &Consumer {
        self.consumers.get(c)
    }

    /// The consumer called `name`.
    pub fn consumer_by_name(&self, name: &[u8]) -> Option<&Consumer> {
        self.consumers.by_name(name)
    }

    /// All consumers in name order (XINFO CONSUMERS, XPENDING summary).
    pub fn consumers(&self) -> impl Iterator<Item = (ConsumerId, &Consumer)> + '_ {
        self.consumers.iter()
    }

    /// Heap bytes held by the pending entries: the slab pages and the group's and the
    /// consumers' PEL indexes (allocated capacities, requested sizes). The name trees are
    /// not included. Divided by [`ConsumerGroup::pel_count`] this is the memory cost of a
    /// pending entry.
    pub fn pel_heap_bytes(&self) -> usize {
        self.slab.heap_bytes() + self.pel.heap_bytes() + self.consumers.pel_heap_bytes()
    }

    // --- private helpers -------------------------------------------------------------

    fn owner_name(&self, owner: u32) -> Option<&[u8]> {
        if owner == NO_OWNER {
            return None;
        }
        self.consumers.name_at(owner)
    }

    fn view(&self, i: u32) -> PendingEntry<'_> {
        let s = self.slab.slot(i);
        PendingEntry {
            id: s.id(),
            delivery_time: s.delivery_time(),
            delivery_count: self.slab.count(i),
            owner: self.owner_name(s.owner()),
        }
    }

    // --- PEL mutation; every path updates the reverse index ------------------------------

    /// Creates a pending entry, linked and indexed. `id` must not be pending.
    fn insert_pending(
        &mut self,
        id: StreamId,
        owner: u32,
        delivery_time: u64,
        delivery_count: u64,
        refs: &mut RefIndex,
    ) -> u32 {
        let i = self.slab.insert(id, owner, delivery_time, delivery_count);
        self.pel.insert(&self.slab, i);
        if owner != NO_OWNER {
            self.consumers.at_mut(owner).pel_mut().insert(&self.slab, i);
        }
        refs.incr(&id.to_key());
        i
    }

    /// Removes pending entry `id` from the group PEL, its owner's PEL, the time list and
    /// the reverse index. False if it was not pending.
    fn remove_pending(&mut self, id: StreamId, refs: &mut RefIndex) -> bool {
        let Some(i) = self.pel.remove(&self.slab, id) else {
            return false;
        };
        let owner = self.slab.slot(i).owner();
        if owner != NO_OWNER {
            self.consumers
                .at_mut(owner)
                .pel_mut()
                .remove(&self.slab, id);
        }
        self.slab.remove(i);
        refs.decr(&id.to_key());
        self.maybe_compact();
        true
    }

    /// Moves slot `i` from its owner's PEL to `new_owner`'s (or to none); the slot's
    /// owner itself is the slab's to change.
    fn move_to_owner_pel(&mut self, i: u32, new_owner: u32) {
        let old = self.slab.slot(i).owner();
        if old == new_owner {
            return;
        }
        if old != NO_OWNER {
            let id = self.slab.id(i);
            self.consumers.at_mut(old).pel_mut().remove(&self.slab, id);
        }
        if new_owner != NO_OWNER {
            self.consumers
                .at_mut(new_owner)
                .pel_mut()
                .insert(&self.slab, i);
        }
    }

    /// Re-delivers slot `i` to `owner` at `time` with `count` (its PELs and time list).
    fn redeliver_slot(&mut self, i: u32, owner: u32, time: u64, count: u64) {
        self.move_to_owner_pel(i, owner);
        self.slab.redeliver(i, owner, time, count);
    }

    /// Compacts the slab when it has become sparse (pel.rs), repointing the group PEL
    /// and the owners' PELs at the moved slots.
    fn maybe_compact(&mut self) {
        let ConsumerGroup {
            pel,
            slab,
            consumers,
            ..
        } = self;
        slab.compact_if_sparse(|slab, id, owner, to| {
            pel.repoint(slab, id, to);
            if owner != NO_OWNER {
                consumers.at_mut(owner).pel_mut().repoint(slab, id, to);
            }
        });
    }
}

/// Pending entries of a group or consumer PEL in ID order, from [`ConsumerGroup::pel_range`]
/// or [`ConsumerGroup::consumer_pel`].
pub struct PelRange<'a> {
    group: &'a ConsumerGroup,
    slots: SlotRange<'a>,
}

impl<'a> Iterator for PelRange<'a> {
    type Item = PendingEntry<'a>;

    fn next(&mut self) -> Option<PendingEntry<'a>> {
        self.slots.next().map(|i| self.group.view(i))
    }
}

/// Pending entries in delivery-time list order, from [`ConsumerGroup::by_time`] or
/// [`ConsumerGroup::claimable`].
pub struct ByTime<'a> {
    group: &'a ConsumerGroup,
    slots: TimeOrder<'a>,
}

impl<'a> Iterator for ByTime<'a> {
    type Item = PendingEntry<'a>;

    fn next(&mut self) -> Option<PendingEntry<'a>> {
        self.slots.next().map(|i| self.group.view(i))
    }
}

// ---------------------------------------------------------------------------------------
// The reverse index
// ---------------------------------------------------------------------------------------

/// ID → number of group PELs holding it (Redis: `cgroups_ref`). Kept only while the stream
/// has two or more groups; with one, that group's PEL answers the same question.
#[derive(Debug, Clone, Default)]
struct RefIndex {
    counts: Option<Rax<u32>>,
}

impl RefIndex {
    fn incr(&mut self, key: &[u8; 16]) {
        let Some(counts) = &mut self.counts else {
            return;
        };
        match counts.get_mut(key) {
            Some(n) => *n += 1,
            None => {
                counts.insert(key, 1);
            }
        }
    }

    fn decr(&mut self, key: &[u8; 16]) {
        let Some(counts) = &mut self.counts else {
            return;
        };
        match counts.get_mut(key) {
            Some(n) if *n > 1 => *n -= 1,
            Some(_) => {
                counts.remove(key);
            }
            None => debug_assert!(false, "reverse index lost a pending ID"),
        }
    }

    fn contains(&self, key: &[u8; 16]) -> Option<bool> {
        self.counts.as_ref().map(|c| c.get(key).is_some())
    }
}

// ---------------------------------------------------------------------------------------
// Groups
// ---------------------------------------------------------------------------------------

/// All consumer groups of one stream, plus the reverse index ID → referencing groups.
///
/// Most streams have no groups, so the contents live behind one optional box: a stream
/// without groups pays one pointer, not the whole table (memory per stream is a headline
/// figure).
#[derive(Debug, Clone, Default)]
pub struct Groups {
    set: Option<Box<GroupSet>>,
}

impl Groups {
    /// No groups (what a stream without groups reads).
    pub const EMPTY: Groups = Groups { set: None };

    /// Number of groups.
    pub fn len(&self) -> usize {
        self.set.as_ref().map_or(0, |s| s.len())
    }

    /// True when the stream has no groups.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// One level of a prefetch of a group read's path (`core/prefetch.rs`), reading only
    /// what the level before asked for: 0 the group set, 1 its list of groups, 2 the
    /// names of the first [`FEW`] (what [`GroupSet::index`] compares). False when there
    /// is no further level.
    pub fn prefetch_level(&self, level: u8) -> bool {
        let Some(set) = self.set.as_deref() else {
            return false;
        };
        match level {
            0 => crate::util::prefetch(set),
            1 => crate::util::prefetch(set.list.as_ptr()),
            _ => {
                for g in set.list.iter().take(FEW) {
                    crate::util::prefetch(g.name.as_ptr());
                }
                return false;
            }
        }
        true
    }

    /// See [`GroupSet::is_referenced`].
    pub fn is_referenced(&self, id: StreamId) -> bool {
        self.set.as_ref().is_some_and(|s| s.is_referenced(id))
    }

    /// See [`GroupSet::remove_refs`].
    pub fn remove_refs(&mut self, id: StreamId) {
        if let Some(s) = self.set.as_mut() {
            s.remove_refs(id);
        }
    }

    /// See [`GroupSet::is_pending_anywhere`].
    pub fn is_pending_anywhere(&self, id: StreamId) -> bool {
        self.set.as_ref().is_some_and(|s| s.is_pending_anywhere(id))
    }

    /// See [`GroupSet::min_last_id`].
    pub fn min_last_id(&self) -> Option<StreamId> {
        self.set.as_ref().and_then(|s| s.min_last_id())
    }

    /// The group called `name`.
    pub fn get(&self, name: &[u8]) -> Option<&ConsumerGroup> {
        self.set.as_ref()?.get(name)
    }

    /// The group called `name`, borrowed for changes.
    pub fn get_mut(&mut self, name: &[u8]) -> Option<GroupMut<'_>> {
        self.set.as_mut()?.get_mut(name)
    }

    /// The groups in name (byte) order.
    pub fn iter(&self) -> impl Iterator<Item = &ConsumerGroup> + '_ {
        self.set.iter().flat_map(|s| s.iter())
    }

    /// See [`GroupSet::create`].
    pub fn create(&mut self, name: &[u8], last_id: StreamId, entries_read: Option<u64>) -> bool {
        self.set
            .get_or_insert_with(Default::default)
            .create(name, last_id, entries_read)
    }

    /// See [`GroupSet::destroy`]; the table is freed with the last group.
    pub fn destroy(&mut self, name: &[u8]) -> bool {
        let Some(s) = self.set.as_mut() else {
            return false;
        };
        let done = s.destroy(name);
        if s.is_empty() {
            self.set = None;
        }
        done
    }

    /// The group table, when there is one (tests and invariant checks).
    pub fn set(&self) -> Option<&GroupSet> {
        self.set.as_deref()
    }
}

/// Up to this many groups (of a stream) or consumers (of a group), a lookup by name
/// compares the names one by one instead of walking the name index.
pub(super) const FEW: usize = 4;

/// The contents of [`Groups`]: the group table, its name index and the reverse index.
#[derive(Debug, Clone, Default)]
pub struct GroupSet {
    /// Group name → index in `list`; iteration gives XINFO's byte order.
    by_name: Rax<u32>,
    /// The groups, densely packed (destroy moves the last one into the hole).
    list: Vec<ConsumerGroup>,
    /// ID → number of groups whose PEL holds it (while `list.len() >= 2`).
    refs: RefIndex,
    /// Smallest `last_id` over `list` (0-0 when empty).
    min_last_id: StreamId,
}

impl GroupSet {
    /// Number of groups.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True when the stream has no groups.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// True if some group still references `id` (reference §3.2): it is beyond some
    /// group's `last_id`, or pending in some group's PEL (NACKed entries included).
    /// False when there are no groups.
    pub fn is_referenced(&self, id: StreamId) -> bool {
        if self.list.is_empty() {
            return false;
        }
        if id > self.min_last_id {
            return true;
        }
        match self.refs.contains(&id.to_key()) {
            Some(held) => held,
            None => self.list.iter().any(|g| g.is_pending(id)),
        }
    }

    /// True if `id` is pending in some group's PEL (NACKed entries included): the
    /// reverse index with two groups or more, the one group's PEL otherwise. Unlike
    /// [`GroupSet::is_referenced`], IDs a group has not read yet do not count.
    pub fn is_pending_anywhere(&self, id: StreamId) -> bool {
        match self.refs.contains(&id.to_key()) {
            Some(held) => held,
            None => self.list.iter().any(|g| g.is_pending(id)),
        }
    }

    /// Removes `id` from every group's PEL (DELREF).
    pub fn remove_refs(&mut self, id: StreamId) {
        if self.refs.contains(&id.to_key()) == Some(false) {
            return;
        }
        let GroupSet { list, refs, .. } = self;
        for g in list.iter_mut() {
            g.remove_pending(id, refs);
        }
    }

    /// The smallest `last_id` over the groups, `None` without groups.
    pub fn min_last_id(&self) -> Option<StreamId> {
        (!self.list.is_empty()).then_some(self.min_last_id)
    }

    /// The group called `name`.
    pub fn get(&self, name: &[u8]) -> Option<&ConsumerGroup> {
        self.index(name).map(|i| &self.list[i])
    }

    /// The group called `name`, for changing it.
    pub fn get_mut(&mut self, name: &[u8]) -> Option<GroupMut<'_>> {
        let idx = self.index(name)?;
        Some(GroupMut { groups: self, idx })
    }

    /// Where the group called `name` is in `list`. A stream has a group or a few, and
    /// every group read looks its group up (a reader blocked on 32 shards: 32 times a
    /// call): up to [`FEW`] are compared by name, which costs less than a walk of the
    /// name index.
    fn index(&self, name: &[u8]) -> Option<usize> {
        if self.list.len() <= FEW {
            return self
                .list
                .iter()
                .position(|g| crate::util::bytes_eq(&g.name, name));
        }
        self.by_name.get(name).map(|&i| i as usize)
    }

    /// All groups in name (byte) order.
    pub fn iter(&self) -> impl Iterator<Item = &ConsumerGroup> + '_ {
        self.by_name
            .iter()
            .map(move |(_, &i)| &self.list[i as usize])
    }

    /// XGROUP CREATE: a new group reading after `last_id`, with `entries_read` (`None` =
    /// unknown; capping it at `entries_added` is the caller's). False if the name exists
    /// (BUSYGROUP).
    pub fn create(&mut self, name: &[u8], last_id: StreamId, entries_read: Option<u64>) -> bool {
        let idx = u32::try_from(self.list.len()).expect("fewer than 2^32 groups");
        if self.by_name.try_insert(name, idx).is_err() {
            return false;
        }
        self.list
            .push(ConsumerGroup::new(name, last_id, entries_read));
        if self.list.len() == 2 {
            // The index becomes necessary: seed it from the one group that has a PEL.
            let g = &self.list[0];
            let mut counts = Rax::new();
            for i in g.pel.iter() {
                counts.insert(&g.slab.id(i).to_key(), 1);
            }
            self.refs.counts = Some(counts);
        }
        self.refresh_min_last_id();
        true
    }

    /// XGROUP DESTROY: drops the group, its consumers and its PEL (NACKed entries too),
    /// and its references. False if there is no such group.
    pub fn destroy(&mut self, name: &[u8]) -> bool {
        let Some(idx) = self.by_name.remove(name) else {
            return false;
        };
        let group = self.list.swap_remove(idx as usize);
        if let Some(moved) = self.list.get(idx as usize) {
            self.by_name.insert(&moved.name, idx);
        }
        if self.list.len() < 2 {
            self.refs.counts = None;
        } else {
            for i in group.pel.iter() {
                self.refs.decr(&group.slab.id(i).to_key());
            }
        }
        self.refresh_min_last_id();
        true
    }

    fn refresh_min_last_id(&mut self) {
        self.min_last_id = self
            .list
            .iter()
            .map(|g| g.last_id)
            .min()
            .unwrap_or(StreamId::MIN);
    }
}

// ---------------------------------------------------------------------------------------
// GroupMut
// ---------------------------------------------------------------------------------------

/// A group borrowed for changes, from [`Groups::get_mut`]. Dereferences to
/// [`ConsumerGroup`] for reads. Holds the whole [`Groups`] so every PEL change also updates
/// the stream's reverse index.
pub struct GroupMut<'a> {
    groups: &'a mut GroupSet,
    idx: usize,
}

impl Deref for GroupMut<'_> {
    type Target = ConsumerGroup;

    fn deref(&self) -> &ConsumerGroup {
        &self.groups.list[self.idx]
    }
}

impl GroupMut<'_> {
    fn parts(&mut self) -> (&mut ConsumerGroup, &mut RefIndex) {
        let GroupSet { list, refs, .. } = &mut *self.groups;
        (&mut list[self.idx], refs)
    }

    fn group(&mut self) -> &mut ConsumerGroup {
        &mut self.groups.list[self.idx]
    }

    // --- last_id and entries_read ----------------------------------------------------

    /// XGROUP SETID (and log replay): sets `last_id` and `entries_read` (`None` = unknown,
    /// which is what SETID without ENTRIESREAD means). May move backwards; already pending
    /// IDs are then re-delivered by [`GroupMut::deliver`].
    pub fn set_last_id(&mut self, id: StreamId, entries_read: Option<u64>) {
        let g = self.group();
        g.last_id = id;
        g.entries_read = signed_or_unset(entries_read);
        self.groups.refresh_min_last_id();
    }

    /// A `>` read delivered entry `new_last`: if it is beyond `last_id`, moves `last_id` to
    /// it and keeps `entries_read` (reference §3.3): +1 when the counter is valid,
    /// `last_id >= first_id` and no tombstone lies at or after `last_id`; otherwise
    /// re-estimated for `new_last`. Call once per delivered entry, in ID order, with the
    /// stream's current counters.
    pub fn advance_last_id(&mut self, new_last: StreamId, c: &StreamCounters) {
        let g = self.group();
        if new_last <= g.last_id {
            return;
        }
        if g.entries_read != SCG_INVALID_ENTRIES_READ
            && g.last_id >= c.first_id
            && !c.has_tombstone_from(g.last_id)
        {
            g.entries_read = g.entries_read.saturating_add(1);
        } else if c.entries_added != 0 {
            g.entries_read = signed_or_unset(estimate_entries_read(c, new_last));
        }
        g.last_id = new_last;
        self.groups.refresh_min_last_id();
    }

    /// XGROUP SETDLQ: sets or (with `None`) clears the dead-letter stream. True if that
    /// changed anything.
    pub fn set_dead_letter(&mut self, dlq: Option<DeadLetter>) -> bool {
        let g = self.group();
        if g.dlq.as_deref() == dlq.as_ref() {
            return false;
        }
        g.dlq = dlq.map(Box::new);
        true
    }

    /// XCLAIM LASTID: raises `last_id` to `id` if greater; `entries_read` is unchanged.
    /// True if it changed.
    pub fn raise_last_id(&mut self, id: StreamId) -> bool {
        let g = self.group();
        if id <= g.last_id {
            return false;
        }
        g.last_id = id;
        self.groups.refresh_min_last_id();
        true
    }

    // --- consumers ---------------------------------------------------------------------

    /// The consumer called `name`, created if missing (seen now, never active). The bool
    /// is true when it was created (XREADGROUP/XCLAIM then notify `xgroup-createconsumer`).
    pub fn get_or_create_consumer(&mut self, name: &[u8], now_ms: u64) -> (ConsumerId, bool) {
        self.group().consumers.get_or_create(name, now_ms)
    }

    /// XGROUP CREATECONSUMER: true if created, false if it existed.
    pub fn create_consumer(&mut self, name: &[u8], now_ms: u64) -> bool {
        self.get_or_create_consumer(name, now_ms).1
    }

    /// XGROUP DELCONSUMER: deletes the consumer and drops its pending entries from the
    /// group PEL (unowned entries stay). Returns its pending count, `None` if there was no
    /// such consumer.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let (g, refs) = self.parts();
        let consumer = g.consumers.remove(name)?;
        for i in consumer.pel().iter() {
            let id = g.slab.id(i);
            g.pel.remove(&g.slab, id);
            g.slab.remove(i);
            refs.decr(&id.to_key());
        }
        g.maybe_compact();
        Some(consumer.pel_count())
    }

    /// Records an attempted interaction: `seen_time = now` (XREADGROUP, XCLAIM,
    /// XAUTOCLAIM do this even when they deliver nothing).
    pub fn touch(&mut self, c: ConsumerId, now_ms: u64) {
        let consumers = &mut self.group().consumers;
        consumers.at_mut(consumers.index_of(c)).touch(now_ms);
    }

    /// Sets both consumer times (log replay, snapshot load); `active_time` `None` = never.
    pub fn set_consumer_times(&mut self, c: ConsumerId, seen_time: u64, active_time: Option<u64>) {
        let consumers = &mut self.group().consumers;
        consumers
            .at_mut(consumers.index_of(c))
            .set_times(seen_time, active_time);
    }

    // --- the PEL -------------------------------------------------------------------------

    /// XREADGROUP `>` delivered `id` to `c` (not with NOACK): creates the pending entry
    /// (count 1, time now) and returns true; or, if `id` is already pending (after SETID
    /// moved backwards), moves it to `c`, resets its count to 1 and its time to now, and
    /// returns false. Either way `c` becomes active now.
    pub fn deliver(&mut self, c: ConsumerId, id: StreamId, now_ms: u64) -> bool {
        let (g, refs) = self.parts();
        let owner = g.consumers.index_of(c);
        let created = match g.pel.get(&g.slab, id) {
            Some(i) => {
                g.redeliver_slot(i, owner, now_ms, 1);
                false
            }
            None => {
                g.insert_pending(id, owner, now_ms, 1, refs);
                true
            }
        };
        g.consumers.at_mut(owner).mark_active(now_ms);
        created
    }

    /// XREADGROUP history read served `id` from `c`'s own PEL: count +1 (saturating),
    /// time now, moved to the time-list tail. False (nothing changed) if `id` is not
    /// pending with `c` as owner.
    pub fn redeliver(&mut self, c: ConsumerId, id: StreamId, now_ms: u64) -> bool {
        let g = self.group();
        let Some((owner, i, count)) = g.redelivery(c, id) else {
            return false;
        };
        g.redeliver_slot(i, owner, now_ms, count);
        true
    }

    /// XACK (and dropping a pending entry whose payload is gone): removes `id` from the
    /// group PEL, its owner's PEL, the time list and the reverse index. True if it was
    /// pending (NACKed entries too).
    pub fn ack(&mut self, id: StreamId) -> bool {
        let (g, refs) = self.parts();
        g.remove_pending(id, refs)
    }

    /// XCLAIM semantics for one ID (XAUTOCLAIM and XREADGROUP CLAIM use it too): if `id`
    /// is pending (or FORCE creates it), and it is unowned or idle at least
    /// `spec.min_idle`, it moves to `c` with the new delivery time and count, and `c`
    /// becomes active now. Checking that the stream entry still exists is the caller's.
    pub fn claim(
        &mut self,
        c: ConsumerId,
        id: StreamId,
        spec: &ClaimSpec,
        now_ms: u64,
    ) -> ClaimOutcome {
        let (g, refs) = self.parts();
        let owner = g.consumers.index_of(c);
        let found = g.pel.get(&g.slab, id);
        let Some(count) = g.claim_count_at(found, spec, now_ms) else {
            return if found.is_some() {
                ClaimOutcome::NotIdle
            } else {
                ClaimOutcome::NotPending
            };
        };
        let i = match found {
            Some(i) => i,
            None => g.insert_pending(id, NO_OWNER, 0, 0, refs),
        };
        let s = g.slab.slot(i);
        let previous_count = g.slab.count(i);
        let time = spec.delivery_time.min(now_ms);
        g.redeliver_slot(i, owner, time, count);
        g.consumers.at_mut(owner).mark_active(now_ms);
        ClaimOutcome::Claimed {
            previous_delivery_time: s.delivery_time(),
            previous_delivery_count: previous_count,
        }
    }

    /// XNACK one ID: adjusts the delivery count (`retry_count` overrides `mode`), detaches
    /// the owner, sets the delivery time to 0 and appends the entry at the NACK zone's tail
    /// (a re-NACK moves it there too). If `id` is not pending, FORCE creates it (count 0
    /// before the adjustment; the caller checks the stream entry exists). True if NACKed.
    pub fn nack(
        &mut self,
        id: StreamId,
        mode: NackMode,
        retry_count: Option<u64>,
        force: bool,
    ) -> bool {
        let (g, refs) = self.parts();
        let i = match g.pel.get(&g.slab, id) {
            Some(i) => i,
            None if force => g.insert_pending(id, NO_OWNER, 0, 0, refs),
            None => return false,
        };
        let old = g.slab.count(i);
        let count = match (retry_count, mode) {
            (Some(n), _) => cap_count(n),
            (None, NackMode::Silent) => old.saturating_sub(1),
            (None, NackMode::Fail) => old,
            (None, NackMode::Fatal) => DELIVERY_COUNT_MAX,
        };
        g.move_to_owner_pel(i, NO_OWNER);
        g.slab.nack(i, count);
        true
    }
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

/// Checks every invariant of the module doc, and those of pel.rs and consumer.rs.
#[cfg(test)]
fn check_invariants(groups: &Groups) {
    // An allocated table always holds at least one group.
    assert!(groups.set().is_none_or(|s| !s.is_empty()));
    let empty = GroupSet::default();
    let groups = groups.set().unwrap_or(&empty);
    check_set_invariants(groups);
}

/// [`check_invariants`] for an allocated group table.
#[cfg(test)]
fn check_set_invariants(groups: &GroupSet) {
    use super::pel::{FREE_SLOT, check_pel_index};
    use std::collections::BTreeMap;

    // Group table and name index agree.
    assert_eq!(groups.by_name.len(), groups.list.len());
    for (name, &i) in groups.by_name.iter() {
        assert_eq!(&*groups.list[i as usize].name, name);
    }
    let min = groups
        .list
        .iter()
        .map(|g| g.last_id)
        .min()
        .unwrap_or(StreamId::MIN);
    assert_eq!(groups.min_last_id, min);

    let mut union: BTreeMap<Vec<u8>, u32> = BTreeMap::new();
    for g in &groups.list {
        let slab = &g.slab;
        // Pages, free list and time list (pel.rs).
        let live = slab.check();
        // The group PEL holds every live slot; owners hold theirs.
        let pel = check_pel_index(&g.pel, slab);
        assert_eq!(pel.len(), live);
        let consumers = g.consumers.check();
        let owned_by = |owner: u32| {
            consumers
                .iter()
                .find(|(idx, _)| *idx == owner)
                .map(|(_, c)| *c)
                .expect("owners are live consumers")
        };
        for &i in &pel {
            let s = slab.slot(i);
            assert_ne!(s.owner(), FREE_SLOT);
            assert_eq!(g.pel.get(slab, s.id()), Some(i));
            if s.owner() != NO_OWNER {
                assert_eq!(owned_by(s.owner()).pel().get(slab, s.id()), Some(i));
            }
            *union.entry(s.id().to_key().to_vec()).or_default() += 1;
        }
        // Consumer PELs hold only their own entries.
        let mut owned = 0;
        for &(ci, c) in &consumers {
            for i in check_pel_index(c.pel(), slab) {
                assert_eq!(slab.slot(i).owner(), ci);
                assert_eq!(g.pel.get(slab, slab.id(i)), Some(i));
            }
            owned += c.pel_count();
        }
        // Unowned entries are exactly the NACK zone (pel.rs checks the zone holds them).
        assert_eq!(owned + g.nacked_count(), live);
    }
    // Reverse index.
    match &groups.refs.counts {
        Some(counts) => {
            assert!(groups.list.len() >= 2);
            let got: BTreeMap<Vec<u8>, u32> =
                counts.iter().map(|(k, &v)| (k.to_vec(), v)).collect();
            assert_eq!(got, union);
        }
        None => assert!(groups.list.len() < 2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ms: u64) -> StreamId {
        StreamId::new(ms, 0)
    }

    fn ids<'a>(it: impl Iterator<Item = PendingEntry<'a>>) -> Vec<StreamId> {
        it.map(|e| e.id).collect()
    }

    fn one_group() -> Groups {
        let mut groups = Groups::default();
        assert!(groups.create(b"g", StreamId::MIN, None));
        groups
    }

    fn counters(
        length: u64,
        first: u64,
        last: u64,
        max_deleted: u64,
        added: u64,
    ) -> StreamCounters {
        StreamCounters {
            length,
            last_id: id(last),
            first_id: id(first),
            max_deleted_entry_id: id(max_deleted),
            entries_added: added,
        }
    }

    #[test]
    fn create_rejects_existing_name_and_lists_groups_in_byte_order() {
        let mut groups = Groups::default();
        assert!(groups.create(b"zeta", id(0), None));
        assert!(groups.create(b"alpha", id(0), Some(3)));
        assert!(groups.create(b"Mid", id(0), None));
        assert!(!groups.create(b"alpha", id(9), None));
        let names: Vec<&[u8]> = groups.iter().map(|g| g.name()).collect();
        assert_eq!(names, vec![&b"Mid"[..], b"alpha", b"zeta"]);
        assert_eq!(groups.get(b"alpha").and_then(|g| g.entries_read()), Some(3));
        assert_eq!(groups.get(b"zeta").and_then(|g| g.entries_read()), None);
        check_invariants(&groups);
    }

    #[test]
    fn destroy_frees_the_group_and_its_references() {
        let mut groups = Groups::default();
        groups.create(b"a", id(10), None);
        groups.create(b"b", id(10), None);
        groups.create(b"c", id(10), None);
        for name in [&b"a"[..], b"b"] {
            let mut g = groups.get_mut(name).expect("group");
            let (c, _) = g.get_or_create_consumer(b"x", 1);
            g.deliver(c, id(5), 1);
            g.nack(id(5), NackMode::Fail, None, false);
            g.deliver(c, id(6), 1);
        }
        check_invariants(&groups);
        assert!(groups.is_referenced(id(5)));
        assert!(groups.destroy(b"a"));
        assert!(!groups.destroy(b"a"));
        check_invariants(&groups);
        assert!(groups.is_referenced(id(5)), "b still holds 5");
        assert!(groups.destroy(b"b"));
        check_invariants(&groups);
        assert!(!groups.is_referenced(id(5)));
        assert!(!groups.is_referenced(id(6)));
        assert!(groups.is_referenced(id(11)), "c has not read past 10");
        assert_eq!(
            groups.iter().map(|g| g.name().to_vec()).collect::<Vec<_>>(),
            vec![b"c".to_vec()]
        );
        assert!(groups.destroy(b"c"));
        assert!(!groups.is_referenced(id(11)));
        assert!(groups.is_empty());
    }

    #[test]
    fn consumers_are_created_on_demand_and_deleted_with_their_pending_entries() {
        let mut groups = one_group();
        let mut g = groups.get_mut(b"g").expect("group");
        let (alice, created) = g.get_or_create_consumer(b"alice", 100);
        assert!(created);
        assert_eq!(g.get_or_create_consumer(b"alice", 200), (alice, false));
        assert!(g.create_consumer(b"bob", 150));
        assert!(!g.create_consumer(b"bob", 160));
        let bob = g.consumer_id(b"bob").expect("bob");
        assert_eq!(g.consumer(alice).seen_time(), 100);
        assert_eq!(g.consumer(alice).active_time(), None);
        for ms in 1..=4 {
            g.deliver(alice, id(ms), 300);
        }
        g.deliver(bob, id(5), 300);
        g.nack(id(2), NackMode::Fail, None, false);
        assert_eq!(g.consumer(alice).pel_count(), 3);
        assert_eq!(g.consumer(alice).active_time(), Some(300));
        assert_eq!(g.delete_consumer(b"alice"), Some(3));
        assert_eq!(g.delete_consumer(b"alice"), None);
        assert_eq!(
            ids(g.pel_range(StreamId::MIN, StreamId::MAX)),
            vec![id(2), id(5)]
        );
        assert_eq!(
            g.pending(id(2)).map(|e| e.owner),
            Some(None),
            "NACKed entry survives"
        );
        let names: Vec<Vec<u8>> = g.consumers().map(|(_, c)| c.name().to_vec()).collect();
        assert_eq!(names, vec![b"bob".to_vec()]);
        // The freed table slot is reused under a new generation.
        let (carol, _) = g.get_or_create_consumer(b"carol", 400);
        assert_ne!(carol, alice);
        check_invariants(&groups);
    }

    #[test]
    #[should_panic(expected = "after its consumer was deleted")]
    fn a_stale_consumer_handle_panics() {
        let mut groups = one_group();
        let mut g = groups.get_mut(b"g").expect("group");
        let (alice, _) = g.get_or_create_consumer(b"alice", 1);
        g.delete_consumer(b"alice");
        g.get_or_create_consumer(b"bob", 1);
        g.deliver(alice, id(1), 1);
    }

    #[test]
    fn touch_and_set_consumer_times() {
        let mut groups = one_group();
        let mut g = groups.get_mut(b"g").expect("group");
        let (c, _) = g.get_or_create_consumer(b"c", 5);
        g.touch(c, 50);
        assert_eq!(g.consumer(c).seen_time(), 50);
        assert_eq!(g.consumer(c).active_time(), None);
        g.set_consumer_times(c, 7, Some(6));
        assert_eq!(
            (g.consumer(c).seen_time(), g.consumer(c).active_time()),
            (7, Some(6))
        );
        g.set_consumer_times(c, 8, None);
        assert_eq!(g.consumer(c).active_time(), None);
    }

    #[test]
    fn deliver_creates_an_entry_and_redelivery_after_setid_moves_it_with_count_one() {
        let mut groups = one_group();
        let mut g = groups.get_mut(b"g").expect("group");
        let (a, _) = g.get_or_create_consumer(b"a", 0);
        let (b, _) = g.get_or_create_consumer(b"b", 0);
        assert!(g.deliver(a, id(1), 10));
        assert!(g.redeliver(a, id(1), 20));
        assert_eq!(g.pending(id(1)).map(|e| e.delivery_count), Some(2));
        // SETID backwards; the entry is read again through `>` by b.
        g.set_last_id(StreamId::MIN, None);
        assert!(!g.deliver(b, id(1), 30));
        let e = g.pending(id(1)).expect("pending");
        assert_eq!(
            (e.owner, e.delivery_time, e.delivery_count),
            (Some(&b"b"[..]), 30, 1)
        );
        assert_eq!(g.consumer(a).pel_count(), 0);
        assert_eq!(g.consumer(b).pel_count(), 1);
        assert_eq!(g.pel_count(), 1);
        check_invariants(&groups);
    }

    #[test]
    fn history_redelivery_bumps_count_and_moves_the_entry_to_the_tail() {
        let mut groups = one_group();
        let mut g = groups.get_mut(b"g").expect("group");
        let (a, _) = g.get_or_create_consumer(b"a", 0);
        let (b, _) = g.get_or_create_consumer(b"b", 0);
        g.deliver(a, id(1), 10);
        g.deliver(a, id(2), 11);
        g.deliver(b, id(3), 12);
        assert_eq!(ids(g.by_time()), vec![id(1), id(2), id(3)]);
        assert!(g.redeliver(a, id(1), 13));
        assert_eq!(ids(g.by_time()), vec![id(2), id(3), id(1)]);
        let e = g.pending(id(1)).expect("pending");
        assert_eq!((e.delivery_time, e.delivery_count), (13, 2));
        assert!(!g.redeliver(a, id(3), 14), "not a's entry");
        assert!(!g.redeliver(a, id(9), 14), "not pending");
        g.nack(id(2), NackMode::Fail, None, false);
        assert!(
            !g.redeliver(a, id(2), 14),
            "NACKed entries are in no consumer's history"
        );
        // Saturation.
        g.claim(a, id(1), &claim_at(15, DeliveryCount::Set(u64::MAX)), 15);
        assert!(g.redeliver(a, id(1), 16));
        assert_eq!(
            g.pending(id(1)).map(|e| e.delivery_count),
            Some(DELIVERY_COUNT_MAX)
        );
        check_invariants(&groups);
    }

    #[test]
    fn ack_removes_the_entry_everywhere() {
        let mut groups = one_group();
        let mut g = groups.get_mut(b"g").expect("group");
        let (a, _) = g.get_or_create_consumer(b"a", 0);
        g.deliver(a, id(1), 1);
        g.deliver(a, id(2), 2);
        g.advance_last_id(id(2), &StreamCounters::default());
        g.nack(id(2), NackMode::Silent, None, false);
        assert!(g.ack(id(1)));
        assert!(!g.ack(id(1)));
        assert!(g.ack(id(2)), "NACKed entries can be acked");
        assert_eq!(g.pel_count(), 0);
        assert_eq!(g.nacked_count(), 0);
        assert_eq!(g.consumer(a).pel_count(), 0);
        assert!(g.by_time().next().is_none());
        assert_eq!(g.first_pending_id(), None);
        check_invariants(&groups);
        assert!(!groups.is_referenced(id(1)));
    }

    fn claim_at(time: u64, count: DeliveryCount) -> ClaimSpec {
        ClaimSpec {
            min_idle: 0,
            delivery_time: time,
            count,
            force: false,
        }
    }

    #[test]
    fn claim_moves_owner_and_sets_time_and_count() {
        let mut groups = one_group();
        let mut g = groups.get_mut(b"g").expect("group");
        let (a, _) = g.get_or_create_consumer(b"a", 0);
        let (b, _) = g.get_or_create_consumer(b"b", 0);
        g.deliver(a, id(1), 100);
        let idle = ClaimSpec {
            min_idle: 50,
            ..claim_at(140, DeliveryCount::Increment)
        };
        assert_eq!(g.claim(b, id(1), &idle, 140), ClaimOutcome::NotIdle);
        assert_eq!(
            g.claim(b, id(1), &idle, 150),
            ClaimOutcome::Claimed {
                previous_delivery_time: 100,
                previous_delivery_count: 1
            }
        );
        let e = g.pending(id(1)).expect("pending");
        assert_eq!(
            (e.owner, e.delivery_time, e.delivery_count),
            (Some(&b"b"[..]), 140, 2)
        );
        assert_eq!(g.consumer(b).active_time(), Some(150));
        assert_eq!(
            (g.consumer(a).pel_count(), g.consumer(b).pel_count()),
            (0, 1)
        );
        // JUSTID keeps the count; RETRYCOUNT sets it; a future TIME becomes now.
        g.claim(a, id(1), &claim_at(999, DeliveryCount::Keep), 160);
        assert_eq!(
            g.pending(id(1))
                .map(|e| (e.delivery_time, e.delivery_count)),
            Some((160, 2))
        );
        g.claim(a, id(1), &claim_at(161, DeliveryCount::Set(7)), 161);
        assert_eq!(g.pending(id(1)).map(|e| e.delivery_count), Some(7));
        g.claim(a, id(1), &claim_at(161, DeliveryCount::Set(u64::MAX)), 161);
        assert_eq!(
            g.pending(id(1)).map(|e| e.delivery_count),
            Some(DELIVERY_COUNT_MAX)
        );
        g.claim(a, id(1), &claim_at(162, DeliveryCount::Increment), 162);
        assert_eq!(
            g.pending(id(1)).map(|e| e.delivery_count),
            Some(DELIVERY_COUNT_MAX)
        );
        assert_eq!(
            g.claim(a, id(2), &claim_at(1, DeliveryCount::Increment), 1),
            ClaimOutcome::NotPending
        );
        check_invariants(&groups);
    }

    #[test]
    fn claim_with_force_creates_an_unowned_entry_then_claims_it() {
        let mut groups = one_group();
        let mut g = groups.get_mut(b"g").expect("group");
        let (a, _) = g.get_or_create_consumer(b"a", 0);
        let force = |count| ClaimSpec {
            min_idle: 1000,
            delivery_time: 40,
            count,
            force: true,
        };
        assert_eq!(
            g.claim(a, id(3), &force(DeliveryCount::Keep), 50),
            ClaimOutcome::Claimed {
                previous_delivery_time: 0,
                previous_delivery_count: 0
            }
        );
        assert_eq!(
            g.pending(id(3))
                .map(|e| (e.delivery_time, e.delivery_count)),
            Some((40, 0))
        );
        g.claim(a, id(4), &force(DeliveryCount::Increment), 50);
        assert_eq!(g.pending(id(4)).map(|e| e.delivery_count), Some(1));
        g.claim(a, id(5), &force(DeliveryCount::Set(9)), 50);
        assert_eq!(g.pending(id(5)).map(|e| e.delivery_count), Some(9));
        assert_eq!(g.nacked_count(), 0);
        assert_eq!(g.consumer(a).pel_count(), 3);
        check_invariants(&groups);
    }

    #[test]
    fn claim_with_an_old_time_keeps_the_time_list_sorted() {
        let mut groups = one_group();
        let mut g = groups.get_mut(b"g").expect("group");
        let (a, _) = g.get_or_create_consumer(b"a", 0);
        for ms in 1..=5 {
            g.deliver(a, id(ms), ms * 10);
        }
        g.claim(a, id(5), &claim_at(25, DeliveryCount::Increment), 100);
        assert_eq!(ids(g.by_time()), vec![id(1), id(2), id(5), id(3), id(4)]);
        g.claim(a, id(4), &claim_at(0, DeliveryCount::Increment), 100);
        assert_eq!(ids(g.by_time()), vec![id(4), id(1), id(2), id(5), id(3)]);
        g.nack(id(3), NackMode::Fail, None, false);
        g.claim(a, id(1), &claim_at(0, DeliveryCount::Increment), 100);
        assert_eq!(
            ids(g.by_time()),
            vec![id(3), id(4), id(1), id(2), id(5)],
            "after the zone"
        );
        check_invariants(&groups);
    }

    #[test]
    fn unowned_entries_ignore_min_idle() {
        let mut groups = one_group();
        let mut g = groups.get_mut(b"g").expect("group");
        let (a, _) = g.get_or_create_consumer(b"a", 0);
        g.deliver(a, id(1), 100);
        g.nack(id(1), NackMode::Fail, None, false);
        let spec = ClaimSpec {
            min_idle: u64::MAX,
            ..claim_at(101, DeliveryCount::Increment)
        };
        assert_eq!(
            g.claim(a, id(1), &spec, 101),
            ClaimOutcome::Claimed {
                previous_delivery_time: 0,
                previous_delivery_count: 1
            }
        );
        assert_eq!(g.nacked_count(), 0);
        check_invariants(&groups);
    }

    #[test]
    fn nack_modes_adjust_the_count_and_detach_the_owner() {
        let mut groups = one_group();
        let mut g = groups.get_mut(b"g").expect("group");
        let (a, _) = g.get_or_create_consumer(b"a", 0);
        for ms in 1..=4 {
            g.deliver(a, id(ms), 10);
            g.claim(a, id(ms), &claim_at(10, DeliveryCount::Set(3)), 10);
        }
        assert!(g.nack(id(1), NackMode::Silent, None, false));
        assert!(g.nack(id(2), NackMode::Fail, None, false));
        assert!(g.nack(id(3), NackMode::Fatal, None, false));
        assert!(g.nack(id(4), NackMode::Fatal, Some(8), false));
        let got: Vec<(StreamId, u64, u64, bool)> = g
            .by_time()
            .map(|e| (e.id, e.delivery_time, e.delivery_count, e.is_nacked()))
            .collect();
        assert_eq!(
            got,
            vec![
                (id(1), 0, 2, true),
                (id(2), 0, 3, true),
                (id(3), 0, DELIVERY_COUNT_MAX, true),
                (id(4), 0, 8, true),
            ]
        );
        assert_eq!(g.consumer(a).pel_count(), 0);
        assert_eq!(g.nacked_count(), 4);
        // SILENT floors at 0.
        for _ in 0..3 {
            g.nack(id(1), NackMode::Silent, None, false);
        }
        assert_eq!(g.pending(id(1)).map(|e| e.delivery_count), Some(0));
        assert!(
            !g.nack(id(9), NackMode::Fail, None, false),
            "not pending, no FORCE"
        );
        check_invariants(&groups);
    }

    #[test]
    fn nack_zone_is_fifo_and_renack_moves_to_its_tail() {
        let mut groups = one_group();
        let mut g = groups.get_mut(b"g").expect("group");
        let (a, _) = g.get_or_create_consumer(b"a", 0);
        for ms in 1..=5 {
            g.deliver(a, id(ms), ms);
        }
        g.nack(id(4), NackMode::Fail, None, false);
        g.nack(id(2), NackMode::Fail, None, false);
        g.nack(id(4), NackMode::Fail, None, false);
        assert_eq!(ids(g.by_time()), vec![id(2), id(4), id(1), id(3), id(5)]);
        assert_eq!(g.oldest().map(|e| e.id), Some(id(2)));
        assert_eq!(g.oldest_delivery_time(), Some(1));
        assert_eq!(g.next_claimable_at(100), Some(0));
        // XPENDING-style view: NACKed entries have no owner.
        let owners: Vec<Option<&[u8]>> = g.pel_range(id(1), id(5)).map(|e| e.owner).collect();
        let a_name = Some(&b"a"[..]);
        assert_eq!(owners, vec![a_name, None, a_name, None, a_name]);
        check_invariants(&groups);
    }

    #[test]
    fn nack_with_force_creates_unowned_entries() {
        let mut groups = one_group();
        let mut g = groups.get_mut(b"g").expect("group");
        assert!(g.nack(id(1), NackMode::Fail, None, true));
        assert!(g.nack(id(2), NackMode::Silent, None, true));
        assert!(g.nack(id(3), NackMode::Fatal, None, true));
        assert!(g.nack(id(4), NackMode::Fail, Some(5), true));
        let counts: Vec<u64> = g.by_time().map(|e| e.delivery_count).collect();
        assert_eq!(counts, vec![0, 0, DELIVERY_COUNT_MAX, 5]);
        assert_eq!(g.nacked_count(), 4);
        assert_eq!(g.next_claimable_at(10), Some(0));
        check_invariants(&groups);
        assert!(groups.is_referenced(id(3)));
    }

    #[test]
    fn claimable_serves_the_nack_zone_first_then_oldest_idle_entries() {
        let mut groups = one_group();
        let mut g = groups.get_mut(b"g").expect("group");
        let (a, _) = g.get_or_create_consumer(b"a", 0);
        g.deliver(a, id(1), 100);
        g.deliver(a, id(2), 200);
        g.deliver(a, id(3), 300);
        g.deliver(a, id(4), 400);
        g.nack(id(3), NackMode::Fail, None, false);
        assert_eq!(ids(g.claimable(350, 100)), vec![id(3), id(1), id(2)]);
        assert_eq!(ids(g.claimable(350, 200)), vec![id(3), id(1)]);
        assert_eq!(ids(g.claimable(350, 0)), vec![id(3), id(1), id(2), id(4)]);
        g.ack(id(3));
        assert_eq!(ids(g.claimable(150, 100)), Vec::<StreamId>::new());
        assert_eq!(g.next_claimable_at(100), Some(200));
        g.ack(id(1));
        g.ack(id(2));
        g.ack(id(4));
        assert_eq!(g.next_claimable_at(100), None);
    }

    #[test]
    fn pel_ranges_are_inclusive_and_filter_by_consumer() {
        let mut groups = one_group();
        let mut g = groups.get_mut(b"g").expect("group");
        let (a, _) = g.get_or_create_consumer(b"a", 0);
        let (b, _) = g.get_or_create_consumer(b"b", 0);
        for ms in 1..=6 {
            g.deliver(if ms % 2 == 0 { a } else { b }, id(ms), ms);
        }
        assert_eq!(ids(g.pel_range(id(2), id(4))), vec![id(2), id(3), id(4)]);
        assert_eq!(ids(g.pel_range(id(4), id(2))), Vec::<StreamId>::new());
        assert_eq!(
            ids(g.pel_range(id(7), StreamId::MAX)),
            Vec::<StreamId>::new()
        );
        assert_eq!(
            ids(g.consumer_pel(a, StreamId::MIN, StreamId::MAX)),
            vec![id(2), id(4), id(6)]
        );
        assert_eq!(ids(g.consumer_pel(b, id(2), id(5))), vec![id(3), id(5)]);
        assert_eq!(
            g.next_pending(StreamId::new(3, 1)).map(|e| e.id),
            Some(id(4))
        );
        assert_eq!(g.next_pending(StreamId::new(6, 1)), None);
        assert_eq!(
            (g.first_pending_id(), g.last_pending_id()),
            (Some(id(1)), Some(id(6)))
        );
        let summary: Vec<(Vec<u8>, usize)> = g
            .consumers()
            .map(|(_, c)| (c.name().to_vec(), c.pel_count()))
            .collect();
        assert_eq!(summary, vec![(b"a".to_vec(), 3), (b"b".to_vec(), 3)]);
        let e = g.pending(id(4)).expect("pending");
        assert_eq!((e.idle(10), e.idle(1)), (6, 0));
    }

    #[test]
    fn is_referenced_follows_last_ids_and_pels() {
        let mut groups = Groups::default();
        assert!(
            !groups.is_referenced(id(1)),
            "no groups, nothing referenced"
        );
        groups.create(b"a", id(5), None);
        assert!(!groups.is_referenced(id(5)));
        assert!(groups.is_referenced(id(6)));
        let mut g = groups.get_mut(b"a").expect("group");
        let (c, _) = g.get_or_create_consumer(b"c", 0);
        g.deliver(c, id(3), 1);
        g.nack(id(3), NackMode::Fail, None, false);
        assert!(groups.is_referenced(id(3)), "NACKed entries count");
        groups.create(b"b", id(2), None);
        assert_eq!(groups.min_last_id(), Some(id(2)));
        assert!(groups.is_referenced(id(4)), "b has not read 4");
        assert!(!groups.is_referenced(id(2)));
        groups.get_mut(b"b").expect("b").set_last_id(id(9), Some(9));
        assert!(!groups.is_referenced(id(4)));
        assert!(groups.is_referenced(id(3)));
        assert!(groups.is_referenced(id(6)), "a has not read 6");
        check_invariants(&groups);
    }

    #[test]
    fn remove_refs_drops_an_id_from_every_group() {
        let mut groups = Groups::default();
        for name in [&b"a"[..], b"b", b"c"] {
            groups.create(name, id(10), None);
            let mut g = groups.get_mut(name).expect("group");
            let (c, _) = g.get_or_create_consumer(b"c", 0);
            g.deliver(c, id(1), 1);
            g.deliver(c, id(2), 1);
        }
        groups
            .get_mut(b"b")
            .expect("b")
            .nack(id(1), NackMode::Fail, None, false);
        groups.remove_refs(id(1));
        groups.remove_refs(id(7));
        check_invariants(&groups);
        for g in groups.iter() {
            assert_eq!(ids(g.pel_range(StreamId::MIN, StreamId::MAX)), vec![id(2)]);
        }
        assert!(!groups.is_referenced(id(1)));
        // Single group: no index, the PEL answers.
        let mut one = one_group();
        let mut g = one.get_mut(b"g").expect("group");
        let (c, _) = g.get_or_create_consumer(b"c", 0);
        g.deliver(c, id(1), 1);
        one.remove_refs(id(1));
        assert_eq!(one.get(b"g").map(|g| g.pel_count()), Some(0));
        check_invariants(&one);
    }

    #[test]
    fn the_reverse_index_exists_only_with_two_or_more_groups() {
        let mut groups = one_group();
        let mut g = groups.get_mut(b"g").expect("group");
        let (c, _) = g.get_or_create_consumer(b"c", 0);
        g.deliver(c, id(1), 1);
        let counts = |g: &Groups| {
            g.set()
                .and_then(|s| s.refs.counts.as_ref().map(|r| r.len()))
        };
        assert_eq!(counts(&groups), None);
        groups.create(b"h", id(0), None);
        assert_eq!(counts(&groups), Some(1));
        check_invariants(&groups);
        groups.destroy(b"g");
        assert_eq!(counts(&groups), None);
        check_invariants(&groups);
    }

    #[test]
    fn deep_clone_is_independent() {
        let mut groups = one_group();
        let mut g = groups.get_mut(b"g").expect("group");
        let (c, _) = g.get_or_create_consumer(b"c", 0);
        g.deliver(c, id(1), 1);
        g.deliver(c, id(2), 2);
        let copy = groups.clone();
        let mut g = groups.get_mut(b"g").expect("group");
        g.ack(id(1));
        g.nack(id(2), NackMode::Fatal, None, false);
        g.delete_consumer(b"c");
        let cg = copy.get(b"g").expect("copied group");
        assert_eq!(
            ids(cg.pel_range(StreamId::MIN, StreamId::MAX)),
            vec![id(1), id(2)]
        );
        assert_eq!(cg.consumer_by_name(b"c").map(|c| c.pel_count()), Some(2));
        assert_eq!(cg.nacked_count(), 0);
        check_invariants(&copy);
        check_invariants(&groups);
    }

    #[test]
    fn the_slab_shrinks_when_most_entries_are_acked() {
        let mut groups = one_group();
        let mut g = groups.get_mut(b"g").expect("group");
        let (a, _) = g.get_or_create_consumer(b"a", 0);
        let (b, _) = g.get_or_create_consumer(b"b", 0);
        for ms in 1..=1000 {
            g.deliver(if ms % 3 == 0 { a } else { b }, id(ms), ms);
        }
        for ms in 1..=1000 {
            if ms % 10 == 7 {
                g.nack(id(ms), NackMode::Fail, None, false);
            }
        }
        for ms in 1..=1000 {
            if ms % 10 != 0 && ms % 10 != 7 {
                g.ack(id(ms));
            }
        }
        assert_eq!(g.pel_count(), 200);
        check_invariants(&groups);
        let slab = &groups.get(b"g").expect("g").slab;
        assert!(
            slab.slots() <= 400,
            "slab kept {} slots for 200 entries",
            slab.slots()
        );
        let mut g = groups.get_mut(b"g").expect("group");
        assert_eq!(
            g.delete_consumer(b"b"),
            Some(67),
            "b owned the multiples of 10 not of 30"
        );
        for ms in (10..=1000).step_by(10) {
            g.ack(id(ms));
        }
        for ms in (7..=1000).step_by(10) {
            g.ack(id(ms));
        }
        check_invariants(&groups);
        let slab = &groups.get(b"g").expect("g").slab;
        assert_eq!(slab.live(), 0);
        assert!(
            slab.capacity() < 2 * super::super::pel::COMPACT_MIN_SLOTS,
            "memory returned"
        );
    }

    // --- entries-read and lag (reference §3.3) ---------------------------------------

    #[test]
    fn group_at_zero_on_five_entries_has_unknown_entries_read_and_lag_five() {
        let c = counters(5, 1, 5, 0, 5);
        let mut groups = Groups::default();
        groups.create(b"g", StreamId::MIN, None);
        let g = groups.get(b"g").expect("group");
        assert_eq!(g.entries_read(), None);
        assert_eq!(g.lag(&c), Some(5));
        let mut g = groups.get_mut(b"g").expect("group");
        g.advance_last_id(id(1), &c);
        assert_eq!((g.entries_read(), g.lag(&c)), (Some(1), Some(4)));
        for ms in 2..=5 {
            g.advance_last_id(id(ms), &c);
        }
        assert_eq!((g.entries_read(), g.lag(&c)), (Some(5), Some(0)));
        // Reading backwards or the same ID does nothing.
        g.advance_last_id(id(3), &c);
        assert_eq!((g.last_id(), g.entries_read()), (id(5), Some(5)));
    }

    #[test]
    fn xdel_in_the_middle_makes_lag_unknown_until_read_past_the_tombstone() {
        // 1..5 added, 3 deleted.
        let c = counters(4, 1, 5, 3, 5);
        let mut groups = Groups::default();
        groups.create(b"g", StreamId::MIN, None);
        let mut g = groups.get_mut(b"g").expect("group");
        assert_eq!(g.lag(&c), None);
        let mut seen = Vec::new();
        for ms in [1, 2, 4, 5] {
            g.advance_last_id(id(ms), &c);
            seen.push((g.entries_read(), g.lag(&c)));
        }
        assert_eq!(
            seen,
            vec![(None, None), (None, None), (None, None), (Some(5), Some(0))]
        );
        // Another XADD: the counter keeps counting.
        let c = counters(5, 1, 6, 3, 6);
        assert_eq!(g.lag(&c), Some(1));
        g.advance_last_id(id(6), &c);
        assert_eq!((g.entries_read(), g.lag(&c)), (Some(6), Some(0)));
    }

    #[test]
    fn lag_is_kept_when_the_group_counter_is_valid_and_no_tombstone_lies_ahead() {
        // Group read 1 and 2 with a valid counter; then 4 is deleted (tombstone ahead).
        let before = counters(5, 1, 5, 0, 5);
        let mut groups = Groups::default();
        groups.create(b"g", StreamId::MIN, None);
        let mut g = groups.get_mut(b"g").expect("group");
        g.advance_last_id(id(1), &before);
        g.advance_last_id(id(2), &before);
        assert_eq!(g.lag(&before), Some(3));
        let after = counters(4, 1, 5, 4, 5);
        assert_eq!(
            g.lag(&after),
            None,
            "tombstone after last_id, counter not trusted"
        );
        // Reading 3 re-estimates (3 < max_deleted: unknown).
        g.advance_last_id(id(3), &after);
        assert_eq!(g.entries_read(), None);
        g.advance_last_id(id(5), &after);
        assert_eq!((g.entries_read(), g.lag(&after)), (Some(5), Some(0)));
    }

    #[test]
    fn xtrim_does_not_invalidate_lag() {
        // 10 added, group read 4 (counter valid), then trimmed to 6..10.
        let full = counters(10, 1, 10, 0, 10);
        let mut groups = Groups::default();
        groups.create(b"g", StreamId::MIN, None);
        let mut g = groups.get_mut(b"g").expect("group");
        for ms in 1..=4 {
            g.advance_last_id(id(ms), &full);
        }
        let trimmed = counters(5, 6, 10, 0, 10);
        assert_eq!(
            g.lag(&trimmed),
            Some(5),
            "last_id before first entry: lag = length"
        );
        g.advance_last_id(id(6), &trimmed);
        assert_eq!((g.entries_read(), g.lag(&trimmed)), (Some(6), Some(4)));
        // A group created at 0 with an unknown counter on the trimmed stream.
        groups.create(b"h", StreamId::MIN, None);
        let mut h = groups.get_mut(b"h").expect("group");
        assert_eq!(h.lag(&trimmed), Some(5));
        h.advance_last_id(id(6), &trimmed);
        assert_eq!((h.entries_read(), h.lag(&trimmed)), (Some(6), Some(4)));
    }

    #[test]
    fn lag_edge_cases() {
        let mut groups = Groups::default();
        groups.create(b"g", id(3), Some(2));
        let g = groups.get(b"g").expect("group");
        assert_eq!(
            g.lag(&counters(0, 0, 0, 0, 0)),
            Some(0),
            "never-used stream"
        );
        assert_eq!(
            g.lag(&counters(0, 0, 9, 9, 9)),
            Some(0),
            "everything deleted"
        );
        assert_eq!(g.lag(&counters(5, 1, 5, 0, 5)), Some(3), "valid counter");
        let mut groups = Groups::default();
        groups.create(b"g", id(3), None);
        let g = groups.get(b"g").expect("group");
        assert_eq!(
            g.lag(&counters(5, 1, 5, 0, 5)),
            None,
            "unknown counter mid-stream"
        );
        assert_eq!(
            g.lag(&counters(3, 1, 3, 0, 3)),
            Some(0),
            "at last_id: estimate exact"
        );
    }

    #[test]
    fn estimate_entries_read_rules() {
        let c = counters(5, 3, 7, 0, 7); // entries 3..7, two trimmed earlier
        assert_eq!(
            estimate_entries_read(&counters(0, 0, 0, 0, 0), id(9)),
            Some(0)
        );
        assert_eq!(
            estimate_entries_read(&counters(0, 0, 7, 0, 7), id(5)),
            Some(7)
        );
        assert_eq!(estimate_entries_read(&c, id(7)), Some(7));
        assert_eq!(estimate_entries_read(&c, id(8)), None);
        assert_eq!(estimate_entries_read(&c, id(1)), Some(2));
        assert_eq!(estimate_entries_read(&c, id(0)), Some(2));
        assert_eq!(estimate_entries_read(&c, id(3)), Some(3));
        assert_eq!(
            estimate_entries_read(&c, id(4)),
            None,
            "between first and last"
        );
        let frag = counters(4, 3, 7, 5, 7);
        assert_eq!(
            estimate_entries_read(&frag, id(4)),
            None,
            "before a tombstone"
        );
        assert_eq!(
            estimate_entries_read(&frag, id(0)),
            None,
            "fragmented: unknown even for 0-0"
        );
        assert_eq!(estimate_entries_read(&frag, id(7)), Some(7));
        let old_tombstone = counters(4, 3, 7, 2, 7);
        assert_eq!(estimate_entries_read(&old_tombstone, id(3)), Some(4));
        assert!(!old_tombstone.has_tombstone_from(StreamId::MIN));
        assert!(frag.has_tombstone_from(id(5)));
        assert!(!frag.has_tombstone_from(StreamId::new(5, 1)));
    }

    #[test]
    fn raise_last_id_only_moves_forward() {
        let mut groups = one_group();
        let mut g = groups.get_mut(b"g").expect("group");
        g.set_last_id(id(5), Some(5));
        assert!(!g.raise_last_id(id(4)));
        assert!(g.raise_last_id(id(8)));
        assert_eq!((g.last_id(), g.entries_read()), (id(8), Some(5)));
        assert_eq!(groups.min_last_id(), Some(id(8)));
    }
}

#[cfg(test)]
mod prop {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;
    use std::collections::{BTreeMap, BTreeSet};

    const GROUPS: [&[u8]; 3] = [b"g0", b"g1", b"g2"];
    const CONSUMERS: [&[u8]; 4] = [b"c0", b"c1", b"c2", b"c3"];

    fn sid(n: u8) -> StreamId {
        StreamId::new(u64::from(n / 3), u64::from(n % 3))
    }

    #[derive(Debug, Clone)]
    enum Op {
        CreateGroup(usize, u8),
        DestroyGroup(usize),
        CreateConsumer(usize, usize),
        DeleteConsumer(usize, usize),
        Deliver(usize, usize, u8),
        DeliverMany(usize, usize, u8, u8),
        AckMany(usize, u8, u8),
        Redeliver(usize, usize, u8),
        Ack(usize, u8),
        Claim {
            g: usize,
            c: usize,
            id: u8,
            min_idle: u64,
            offset: i64,
            count: DeliveryCount,
            force: bool,
        },
        Nack {
            g: usize,
            id: u8,
            mode: NackMode,
            retry: Option<u64>,
            force: bool,
        },
        SetLastId(usize, u8),
        RemoveRefs(u8),
        Tick(i64),
    }

    fn op() -> impl Strategy<Value = Op> {
        let g = 0..GROUPS.len();
        let c = 0..CONSUMERS.len();
        let i = 0u8..24;
        let count = prop_oneof![
            Just(DeliveryCount::Increment),
            Just(DeliveryCount::Keep),
            (0u64..5).prop_map(DeliveryCount::Set),
            // Around the 32-bit boundary where counts spill out of the slot.
            ((u64::from(u32::MAX) - 2)..(u64::from(u32::MAX) + 2)).prop_map(DeliveryCount::Set),
            Just(DeliveryCount::Set(u64::MAX)),
        ];
        let mode = prop_oneof![
            Just(NackMode::Silent),
            Just(NackMode::Fail),
            Just(NackMode::Fatal)
        ];
        let retry = prop_oneof![
            Just(None),
            (0u64..4).prop_map(Some),
            Just(Some(u64::from(u32::MAX))),
            Just(Some(u64::MAX))
        ];
        prop_oneof![
            2 => (g.clone(), i.clone()).prop_map(|(g, i)| Op::CreateGroup(g, i)),
            1 => g.clone().prop_map(Op::DestroyGroup),
            2 => (g.clone(), c.clone()).prop_map(|(g, c)| Op::CreateConsumer(g, c)),
            1 => (g.clone(), c.clone()).prop_map(|(g, c)| Op::DeleteConsumer(g, c)),
            8 => (g.clone(), c.clone(), i.clone()).prop_map(|(g, c, i)| Op::Deliver(g, c, i)),
            1 => (g.clone(), c.clone(), i.clone(), 1u8..24).prop_map(|(g, c, i, n)| Op::DeliverMany(g, c, i, n)),
            1 => (g.clone(), i.clone(), 1u8..24).prop_map(|(g, i, n)| Op::AckMany(g, i, n)),
            3 => (g.clone(), c.clone(), i.clone()).prop_map(|(g, c, i)| Op::Redeliver(g, c, i)),
            4 => (g.clone(), i.clone()).prop_map(|(g, i)| Op::Ack(g, i)),
            4 => (g.clone(), c.clone(), i.clone(), prop_oneof![Just(0u64), 1u64..40], -40i64..10, count, any::<bool>())
                .prop_map(|(g, c, id, min_idle, offset, count, force)| Op::Claim {
                    g, c, id, min_idle, offset, count, force
                }),
            4 => (g.clone(), i.clone(), mode, retry, any::<bool>())
                .prop_map(|(g, id, mode, retry, force)| Op::Nack { g, id, mode, retry, force }),
            1 => (g.clone(), i.clone()).prop_map(|(g, i)| Op::SetLastId(g, i)),
            1 => i.prop_map(Op::RemoveRefs),
            3 => (-3i64..20).prop_map(Op::Tick),
        ]
    }

    /// The model: per group, last_id, consumers, and the PEL as a plain map; plus the
    /// NACK zone order.
    #[derive(Debug, Default, Clone)]
    struct MGroup {
        last_id: StreamId,
        consumers: BTreeSet<usize>,
        pel: BTreeMap<StreamId, (Option<usize>, u64, u64)>,
        nack_order: Vec<StreamId>,
    }

    impl MGroup {
        fn leave_zone(&mut self, id: StreamId) {
            self.nack_order.retain(|&x| x != id);
        }
    }

    fn step(groups: &mut Groups, model: &mut BTreeMap<usize, MGroup>, now: &mut u64, op: &Op) {
        match *op {
            Op::CreateGroup(g, i) => {
                let created = groups.create(GROUPS[g], sid(i), None);
                assert_eq!(created, !model.contains_key(&g));
                model.entry(g).or_insert_with(|| MGroup {
                    last_id: sid(i),
                    ..MGroup::default()
                });
            }
            Op::DestroyGroup(g) => {
                assert_eq!(groups.destroy(GROUPS[g]), model.remove(&g).is_some());
            }
            Op::CreateConsumer(g, c) => {
                let Some(m) = model.get_mut(&g) else { return };
                let mut gm = groups.get_mut(GROUPS[g]).expect("group");
                assert_eq!(
                    gm.create_consumer(CONSUMERS[c], *now),
                    m.consumers.insert(c)
                );
            }
            Op::DeleteConsumer(g, c) => {
                let Some(m) = model.get_mut(&g) else { return };
                let mut gm = groups.get_mut(GROUPS[g]).expect("group");
                let got = gm.delete_consumer(CONSUMERS[c]);
                if m.consumers.remove(&c) {
                    let before = m.pel.len();
                    m.pel.retain(|_, e| e.0 != Some(c));
                    assert_eq!(got, Some(before - m.pel.len()));
                } else {
                    assert_eq!(got, None);
                }
            }
            Op::Deliver(g, c, i) => {
                let Some(m) = model.get_mut(&g) else { return };
                let mut gm = groups.get_mut(GROUPS[g]).expect("group");
                let (cid, created) = gm.get_or_create_consumer(CONSUMERS[c], *now);
                assert_eq!(created, m.consumers.insert(c));
                let fresh = gm.deliver(cid, sid(i), *now);
                let id = sid(i);
                assert_eq!(fresh, !m.pel.contains_key(&id));
                m.leave_zone(id);
                m.pel.insert(id, (Some(c), *now, 1));
            }
            Op::DeliverMany(g, c, i, n) => {
                for k in i..i.saturating_add(n).min(24) {
                    step(groups, model, now, &Op::Deliver(g, c, k));
                }
            }
            Op::AckMany(g, i, n) => {
                for k in i..i.saturating_add(n).min(24) {
                    step(groups, model, now, &Op::Ack(g, k));
                }
            }
            Op::Redeliver(g, c, i) => {
                let Some(m) = model.get_mut(&g) else { return };
                let mut gm = groups.get_mut(GROUPS[g]).expect("group");
                let Some(cid) = gm.consumer_id(CONSUMERS[c]) else {
                    return;
                };
                let id = sid(i);
                let expect = m.pel.get_mut(&id).filter(|e| e.0 == Some(c));
                let ok = gm.redeliver(cid, id, *now);
                assert_eq!(ok, expect.is_some());
                if let Some(e) = expect {
                    e.1 = *now;
                    e.2 = e.2.saturating_add(1).min(DELIVERY_COUNT_MAX);
                }
            }
            Op::Ack(g, i) => {
                let Some(m) = model.get_mut(&g) else { return };
                let mut gm = groups.get_mut(GROUPS[g]).expect("group");
                assert_eq!(gm.ack(sid(i)), m.pel.remove(&sid(i)).is_some());
                m.leave_zone(sid(i));
            }
            Op::Claim {
                g,
                c,
                id,
                min_idle,
                offset,
                count,
                force,
            } => {
                let Some(m) = model.get_mut(&g) else { return };
                let mut gm = groups.get_mut(GROUPS[g]).expect("group");
                let (cid, created) = gm.get_or_create_consumer(CONSUMERS[c], *now);
                assert_eq!(created, m.consumers.insert(c));
                let id = sid(id);
                let time = now.saturating_add_signed(offset);
                let spec = ClaimSpec {
                    min_idle,
                    delivery_time: time,
                    count,
                    force,
                };
                let got = gm.claim(cid, id, &spec, *now);
                let entry = match m.pel.get(&id) {
                    Some(&e) => e,
                    None if force => (None, 0, 0),
                    None => {
                        assert_eq!(got, ClaimOutcome::NotPending);
                        return;
                    }
                };
                if entry.0.is_some() && min_idle > 0 && now.saturating_sub(entry.1) < min_idle {
                    assert_eq!(got, ClaimOutcome::NotIdle);
                    return;
                }
                assert_eq!(
                    got,
                    ClaimOutcome::Claimed {
                        previous_delivery_time: entry.1,
                        previous_delivery_count: entry.2
                    }
                );
                let new_count = match count {
                    DeliveryCount::Increment => entry.2.saturating_add(1).min(DELIVERY_COUNT_MAX),
                    DeliveryCount::Keep => entry.2,
                    DeliveryCount::Set(n) => n.min(DELIVERY_COUNT_MAX),
                };
                m.leave_zone(id);
                m.pel.insert(id, (Some(c), time.min(*now), new_count));
            }
            Op::Nack {
                g,
                id,
                mode,
                retry,
                force,
            } => {
                let Some(m) = model.get_mut(&g) else { return };
                let mut gm = groups.get_mut(GROUPS[g]).expect("group");
                let id = sid(id);
                let got = gm.nack(id, mode, retry, force);
                let old = match m.pel.get(&id) {
                    Some(e) => e.2,
                    None if force => 0,
                    None => {
                        assert!(!got);
                        return;
                    }
                };
                assert!(got);
                let count = match (retry, mode) {
                    (Some(n), _) => n.min(DELIVERY_COUNT_MAX),
                    (None, NackMode::Silent) => old.saturating_sub(1),
                    (None, NackMode::Fail) => old,
                    (None, NackMode::Fatal) => DELIVERY_COUNT_MAX,
                };
                m.leave_zone(id);
                m.nack_order.push(id);
                m.pel.insert(id, (None, 0, count));
            }
            Op::SetLastId(g, i) => {
                let Some(m) = model.get_mut(&g) else { return };
                groups
                    .get_mut(GROUPS[g])
                    .expect("group")
                    .set_last_id(sid(i), None);
                m.last_id = sid(i);
            }
            Op::RemoveRefs(i) => {
                groups.remove_refs(sid(i));
                for m in model.values_mut() {
                    m.pel.remove(&sid(i));
                    m.leave_zone(sid(i));
                }
            }
            Op::Tick(dt) => *now = now.saturating_add_signed(dt),
        }
    }

    fn compare(groups: &Groups, model: &BTreeMap<usize, MGroup>) {
        check_invariants(groups);
        let names: Vec<&[u8]> = groups.iter().map(|g| g.name()).collect();
        let want: Vec<&[u8]> = model.keys().map(|&g| GROUPS[g]).collect();
        assert_eq!(names, want);
        for (&gi, m) in model {
            let g = groups.get(GROUPS[gi]).expect("group");
            assert_eq!(g.last_id(), m.last_id);
            // Group PEL.
            let got: Vec<(StreamId, Option<Vec<u8>>, u64, u64)> = g
                .pel_range(StreamId::MIN, StreamId::MAX)
                .map(|e| {
                    (
                        e.id,
                        e.owner.map(<[u8]>::to_vec),
                        e.delivery_time,
                        e.delivery_count,
                    )
                })
                .collect();
            let want: Vec<(StreamId, Option<Vec<u8>>, u64, u64)> = m
                .pel
                .iter()
                .map(|(&id, &(o, t, n))| (id, o.map(|c| CONSUMERS[c].to_vec()), t, n))
                .collect();
            assert_eq!(got, want);
            assert_eq!(g.pel_count(), m.pel.len());
            assert_eq!(g.first_pending_id(), m.pel.keys().next().copied());
            assert_eq!(g.last_pending_id(), m.pel.keys().next_back().copied());
            // Consumers and their PELs.
            let got: Vec<&[u8]> = g.consumers().map(|(_, c)| c.name()).collect();
            let want: Vec<&[u8]> = m.consumers.iter().map(|&c| CONSUMERS[c]).collect();
            assert_eq!(got, want);
            assert_eq!(g.consumer_count(), m.consumers.len());
            for &c in &m.consumers {
                let cid = g.consumer_id(CONSUMERS[c]).expect("consumer");
                let got: Vec<StreamId> = g
                    .consumer_pel(cid, StreamId::MIN, StreamId::MAX)
                    .map(|e| e.id)
                    .collect();
                let want: Vec<StreamId> = m
                    .pel
                    .iter()
                    .filter(|(_, e)| e.0 == Some(c))
                    .map(|(&id, _)| id)
                    .collect();
                assert_eq!(got, want);
                assert_eq!(g.consumer(cid).pel_count(), want.len());
            }
            // Time list: NACK zone in NACK order, then owned entries by time.
            let by_time: Vec<PendingEntry<'_>> = g.by_time().collect();
            assert_eq!(by_time.len(), m.pel.len());
            assert_eq!(g.nacked_count(), m.nack_order.len());
            let zone: Vec<StreamId> = by_time[..m.nack_order.len()].iter().map(|e| e.id).collect();
            assert_eq!(zone, m.nack_order);
            assert!(
                by_time[m.nack_order.len()..]
                    .iter()
                    .all(|e| e.owner.is_some())
            );
            assert!(
                by_time[m.nack_order.len()..]
                    .windows(2)
                    .all(|w| w[0].delivery_time <= w[1].delivery_time)
            );
        }
        // References.
        for n in 0u8..26 {
            let id = sid(n);
            let want = !model.is_empty()
                && (model.values().any(|m| id > m.last_id)
                    || model.values().any(|m| m.pel.contains_key(&id)));
            assert_eq!(groups.is_referenced(id), want, "is_referenced({id})");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn groups_match_the_model(ops in vec(op(), 1..200)) {
            let mut groups = Groups::default();
            let mut model = BTreeMap::new();
            let mut now = 1000u64;
            for op in &ops {
                step(&mut groups, &mut model, &mut now, op);
                compare(&groups, &model);
            }
            // A deep copy behaves the same from here on.
            let copy = groups.clone();
            compare(&copy, &model);
        }
    }
}
