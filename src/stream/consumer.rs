//! The consumers of one consumer group (Redis: `streamConsumer`, kept by name in the
//! group's `streamCG.consumers` radix tree), and the handles that name them.
//!
//! A consumer has a name, its `seen_time` (last attempted interaction) and `active_time`
//! (last successful read or claim), and its consumer PEL (Redis: `streamConsumer.pel`):
//! the group's pending entries it owns, as a `PelIndex` of slot numbers into the group's
//! slab (pel.rs). Which entries go in it is the group's business (group.rs); a consumer
//! only carries them.
//!
//! ```text
//!   ConsumerTable
//!   ├─ names : Rax  "alice" → 0, "bob" → 2          name order = XINFO CONSUMERS order
//!   ├─ slots : [0: gen 0 alice { seen, active, pel }, 1: gen 1 (free), 2: gen 0 bob {..}]
//!   └─ free  : [1]                                  vacant slots, reused first
//! ```
//!
//! The table index is what a pending entry stores as its owner; a [`ConsumerId`] adds the
//! slot's generation, so a handle kept past its consumer's deletion is caught (it panics)
//! instead of reaching whoever reuses the slot.

use super::pel::{FREE_SLOT, PelIndex};
use super::rax::Rax;

/// A handle to a consumer of one group, valid until that consumer is deleted. Using a
/// handle after its consumer was deleted panics (it is a programming error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConsumerId {
    /// Index in the group's consumer table.
    idx: u32,
    /// Generation of that table slot when the handle was made.
    generation: u32,
}

/// A consumer of a group (Redis: `streamConsumer`).
#[derive(Debug, Clone)]
pub struct Consumer {
    /// Name, as given by the client (binary safe, case sensitive).
    name: Box<[u8]>,
    /// Last attempted interaction (read or claim), Unix ms.
    seen_time: u64,
    /// Last successful read or claim, Unix ms; -1 when never.
    active_time: i64,
    /// This consumer's PEL: its slots in the group's slab, in ID order.
    pel: PelIndex,
}

impl Consumer {
    /// The consumer's name.
    pub fn name(&self) -> &[u8] {
        &self.name
    }
    /// Last attempted interaction (XINFO CONSUMERS `idle` = now − this), Unix ms.
    pub fn seen_time(&self) -> u64 {
        self.seen_time
    }
    /// Last successful read or claim, Unix ms; `None` when never (XINFO `inactive` -1).
    pub fn active_time(&self) -> Option<u64> {
        u64::try_from(self.active_time).ok()
    }
    /// Number of entries this consumer owns.
    pub fn pel_count(&self) -> usize {
        self.pel.len()
    }

    /// This consumer's PEL.
    pub(super) fn pel(&self) -> &PelIndex {
        &self.pel
    }

    /// This consumer's PEL, for the group to change.
    pub(super) fn pel_mut(&mut self) -> &mut PelIndex {
        &mut self.pel
    }

    /// Records an attempted interaction at `now_ms`.
    pub(super) fn touch(&mut self, now_ms: u64) {
        self.seen_time = now_ms;
    }

    /// Records a successful read or claim at `now_ms`.
    pub(super) fn mark_active(&mut self, now_ms: u64) {
        self.active_time = signed_or_unset(Some(now_ms));
    }

    /// Sets both times; `active_time` `None` = never.
    pub(super) fn set_times(&mut self, seen_time: u64, active_time: Option<u64>) {
        self.seen_time = seen_time;
        self.active_time = signed_or_unset(active_time);
    }
}

/// The stored form of "never" (a consumer's `active_time`) and "unknown" (a group's
/// `entries_read`, Redis: `SCG_INVALID_ENTRIES_READ`).
pub(super) const UNSET: i64 = -1;

/// `Some(n)` as an `i64` (saturating), `None` as [`UNSET`]: the encoding of a consumer's
/// `active_time` and a group's `entries_read`.
pub(super) fn signed_or_unset(value: Option<u64>) -> i64 {
    match value {
        Some(n) => i64::try_from(n).unwrap_or(i64::MAX),
        None => UNSET,
    }
}

/// A consumer table slot: a consumer, or a hole awaiting reuse.
#[derive(Debug, Clone)]
struct ConsumerSlot {
    /// Bumped each time the slot is vacated, so stale [`ConsumerId`]s are caught.
    generation: u32,
    /// The consumer living here, if any.
    consumer: Option<Consumer>,
}

/// The consumers of one group (Redis: `streamCG.consumers`): by name, and by the table
/// index that pending entries store as their owner.
#[derive(Debug, Clone)]
pub(super) struct ConsumerTable {
    /// Consumer name → index in `slots`.
    names: Rax<u32>,
    /// The consumers; a pending entry's owner indexes this.
    slots: Vec<ConsumerSlot>,
    /// Vacant indices of `slots`.
    free: Vec<u32>,
}

impl ConsumerTable {
    /// No consumers.
    pub(super) fn new() -> Self {
        ConsumerTable {
            names: Rax::new(),
            slots: Vec::new(),
            free: Vec::new(),
        }
    }

    /// Number of consumers.
    pub(super) fn len(&self) -> usize {
        self.names.len()
    }

    /// The consumer called `name`.
    pub(super) fn id(&self, name: &[u8]) -> Option<ConsumerId> {
        self.index(name).map(|idx| self.handle(idx))
    }

    /// The table index of the consumer called `name`: with up to
    /// [`FEW`](super::group::FEW) slots the names are compared one by one (a group read
    /// looks its consumer up in every stream it reads), else the name index is walked.
    fn index(&self, name: &[u8]) -> Option<u32> {
        if self.slots.len() <= super::group::FEW {
            let at = self.slots.iter().position(|s| {
                s.consumer
                    .as_ref()
                    .is_some_and(|c| crate::util::bytes_eq(&c.name, name))
            })?;
            return u32::try_from(at).ok();
        }
        self.names.get(name).copied()
    }

    /// The consumer behind a handle. Panics if it was deleted.
    pub(super) fn get(&self, c: ConsumerId) -> &Consumer {
        let idx = self.index_of(c);
        self.slots[idx as usize]
            .consumer
            .as_ref()
            .expect("index_of checked it is live")
    }

    /// The consumer called `name`.
    pub(super) fn by_name(&self, name: &[u8]) -> Option<&Consumer> {
        self.index(name)
            .and_then(|idx| self.slots[idx as usize].consumer.as_ref())
    }

    /// All consumers in name order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (ConsumerId, &Consumer)> + '_ {
        self.names.iter().filter_map(move |(_, &idx)| {
            let slot = &self.slots[idx as usize];
            slot.consumer.as_ref().map(|c| {
                (
                    ConsumerId {
                        idx,
                        generation: slot.generation,
                    },
                    c,
                )
            })
        })
    }

    /// The table index of a live handle (what pending entries store as their owner).
    /// Panics on a stale one.
    pub(super) fn index_of(&self, c: ConsumerId) -> u32 {
        let live = self
            .slots
            .get(c.idx as usize)
            .is_some_and(|s| s.generation == c.generation && s.consumer.is_some());
        assert!(live, "ConsumerId used after its consumer was deleted");
        c.idx
    }

    /// The consumer at table index `idx`, which slot owners and checked handles guarantee
    /// live.
    pub(super) fn at_mut(&mut self, idx: u32) -> &mut Consumer {
        self.slots[idx as usize]
            .consumer
            .as_mut()
            .expect("slot owners and handles name live consumers")
    }

    /// The name of the consumer at table index `idx`, if live.
    pub(super) fn name_at(&self, idx: u32) -> Option<&[u8]> {
        self.slots[idx as usize].consumer.as_ref().map(|c| &*c.name)
    }

    /// The consumer called `name`, created if missing (seen now, never active). The bool
    /// is true when it was created.
    pub(super) fn get_or_create(&mut self, name: &[u8], now_ms: u64) -> (ConsumerId, bool) {
        if let Some(idx) = self.index(name) {
            return (self.handle(idx), false);
        }
        let consumer = Consumer {
            name: name.into(),
            seen_time: now_ms,
            active_time: UNSET,
            pel: PelIndex::default(),
        };
        let idx = match self.free.pop() {
            Some(idx) => {
                self.slots[idx as usize].consumer = Some(consumer);
                idx
            }
            None => {
                let idx = u32::try_from(self.slots.len())
                    .ok()
                    .filter(|&i| i < FREE_SLOT)
                    .expect("a group has fewer than 2^32 - 2 consumers");
                self.slots.push(ConsumerSlot {
                    generation: 0,
                    consumer: Some(consumer),
                });
                idx
            }
        };
        self.names.insert(name, idx);
        (self.handle(idx), true)
    }

    /// Deletes the consumer called `name` and returns it (with its PEL, which the group
    /// must empty from its own); its handles go stale. `None` if there is no such consumer.
    pub(super) fn remove(&mut self, name: &[u8]) -> Option<Consumer> {
        let idx = self.names.remove(name)?;
        let slot = &mut self.slots[idx as usize];
        let consumer = slot
            .consumer
            .take()
            .expect("the consumer map names live consumers");
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(idx);
        Some(consumer)
    }

    /// Heap bytes held by the consumers' PEL indexes.
    pub(super) fn pel_heap_bytes(&self) -> usize {
        self.slots
            .iter()
            .filter_map(|s| s.consumer.as_ref())
            .map(|c| c.pel.heap_bytes())
            .sum()
    }

    fn handle(&self, idx: u32) -> ConsumerId {
        ConsumerId {
            idx,
            generation: self.slots[idx as usize].generation,
        }
    }
}

#[cfg(test)]
impl ConsumerTable {
    /// Checks that the name index, the slots and the free list agree; returns the live
    /// consumers as `(table index, consumer)` in name order.
    pub(super) fn check(&self) -> Vec<(u32, &Consumer)> {
        let mut all = Vec::new();
        for (name, &idx) in self.names.iter() {
            let c = self.slots[idx as usize]
                .consumer
                .as_ref()
                .expect("live consumer");
            assert_eq!(&*c.name, name);
            all.push((idx, c));
        }
        let live = self.slots.iter().filter(|s| s.consumer.is_some()).count();
        assert_eq!(live, self.names.len());
        assert_eq!(live + self.free.len(), self.slots.len());
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumers_are_listed_by_name_and_a_freed_slot_is_reused_under_a_new_generation() {
        let mut t = ConsumerTable::new();
        let (bob, created) = t.get_or_create(b"bob", 5);
        assert!(created);
        let (alice, _) = t.get_or_create(b"alice", 6);
        assert_eq!(t.get_or_create(b"bob", 7), (bob, false));
        assert_eq!(
            t.get(bob).seen_time(),
            5,
            "an existing consumer is not touched"
        );
        let names: Vec<&[u8]> = t.iter().map(|(_, c)| c.name()).collect();
        assert_eq!(names, vec![&b"alice"[..], b"bob"]);
        assert_eq!(t.id(b"alice"), Some(alice));
        assert!(t.remove(b"bob").is_some());
        assert!(t.remove(b"bob").is_none());
        assert_eq!((t.len(), t.id(b"bob")), (1, None));
        let (carol, _) = t.get_or_create(b"carol", 8);
        assert_eq!(t.index_of(carol), bob.idx, "the slot is reused");
        assert_ne!(carol, bob);
        assert_eq!(t.name_at(carol.idx), Some(&b"carol"[..]));
        assert_eq!(t.check().len(), 2);
    }

    #[test]
    #[should_panic(expected = "after its consumer was deleted")]
    fn a_stale_handle_panics_even_when_its_slot_is_reused() {
        let mut t = ConsumerTable::new();
        let (alice, _) = t.get_or_create(b"alice", 1);
        t.remove(b"alice");
        t.get_or_create(b"bob", 1);
        t.get(alice);
    }

    #[test]
    fn times_and_the_never_active_encoding() {
        let mut t = ConsumerTable::new();
        let (c, _) = t.get_or_create(b"c", 5);
        assert_eq!((t.get(c).seen_time(), t.get(c).active_time()), (5, None));
        let idx = t.index_of(c);
        t.at_mut(idx).touch(50);
        t.at_mut(idx).mark_active(60);
        assert_eq!(
            (t.get(c).seen_time(), t.get(c).active_time()),
            (50, Some(60))
        );
        t.at_mut(idx).set_times(7, None);
        assert_eq!((t.get(c).seen_time(), t.get(c).active_time()), (7, None));
        assert_eq!(signed_or_unset(Some(u64::MAX)), i64::MAX);
        assert_eq!(signed_or_unset(None), -1);
    }
}
