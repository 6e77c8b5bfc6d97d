//! Which node serves each of the 16,384 hash slots.
//!
//! ```text
//!  slot:    0      1      2            16383
//!        +------+------+------+-- ... --+------+
//!        | u16  | u16  | u16  |         | u16  |   index into the node table,
//!        +------+------+------+-- ... --+------+   0xFFFF = nobody serves the slot
//! ```
//!
//! 32 KB, where a `Vec<Option<usize>>` takes 256 KB. The cluster bus walks this table
//! several times for every message it handles (the sender's slots for the header, the
//! comparison with the sender's claim, the cluster state, the saved-state comparison),
//! and `redis-cli --cluster reshard` makes five to eight such messages per slot moved on
//! each node; at 256 KB every walk missed the first-level cache and the walks were a
//! quarter of a reshard's server time. At 32 KB they stay in it and the loops over
//! `u16`s vectorise.
//!
//! The table also remembers what it last derived (each node's bitmap, which nodes serve
//! slots) until it next changes, and counts its changes ([`SlotOwners::generation`]), so
//! a bus message that changes no owner walks no slot table at all: the header's bitmap,
//! the comparison with the sender's claim, the cluster state and the "did the saved
//! state change" check all come from what was remembered.
//!
//! A cluster has at most a few thousand nodes; an index that does not fit below
//! [`NO_OWNER`] (65,535 nodes) is stored as unassigned.

use super::slots::{CLUSTER_SLOTS, SLOT_BITMAP_BYTES, SlotBitmap};
use std::cell::RefCell;

/// A slot nobody serves.
const NO_OWNER: u16 = u16::MAX;

/// Bitmaps remembered at once (a node needs its own, or its primary's, and the sender's
/// primary's of each message).
const REMEMBERED_BITMAPS: usize = 4;

/// Slot → index in the node table of the node serving it.
pub struct SlotOwners {
    owner: Box<[u16]>,
    /// Changes so far (every call that changed at least one slot's owner).
    generation: u64,
    /// What was derived from the table since its last change.
    derived: RefCell<Derived>,
}

/// Values computed from the table, valid until it changes.
#[derive(Default)]
struct Derived {
    /// Which node indexes serve a slot (indexed by node, as long as the largest owner),
    /// and whether a slot has no owner.
    serving: Option<(Vec<bool>, bool)>,
    /// Bitmaps of a few nodes, the last used at the end.
    bitmaps: Vec<(u16, Box<SlotBitmap>)>,
}

impl Clone for SlotOwners {
    fn clone(&self) -> Self {
        Self {
            owner: self.owner.clone(),
            generation: self.generation,
            derived: RefCell::default(),
        }
    }
}

impl PartialEq for SlotOwners {
    fn eq(&self, other: &Self) -> bool {
        self.owner == other.owner
    }
}

impl Eq for SlotOwners {}

impl std::fmt::Debug for SlotOwners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.runs().iter().map(|(a, b, o)| format!("{a}-{b}:{o}")))
            .finish()
    }
}

impl Default for SlotOwners {
    fn default() -> Self {
        Self::new()
    }
}

fn encode(owner: Option<usize>) -> u16 {
    owner
        .and_then(|i| u16::try_from(i).ok())
        .filter(|&i| i != NO_OWNER)
        .unwrap_or(NO_OWNER)
}

/// Slots per block of the table's walks: a block of one owner (the usual case, slots
/// are assigned in ranges) is decided with one comparison the compiler vectorises.
const BLOCK: usize = 64;

/// The one owner of `block`, when all its slots have the same.
fn uniform(block: &[u16]) -> Option<u16> {
    let first = *block.first()?;
    block
        .iter()
        .fold(true, |same, &o| same & (o == first))
        .then_some(first)
}

fn decode(raw: u16) -> Option<usize> {
    (raw != NO_OWNER).then_some(usize::from(raw))
}

impl SlotOwners {
    /// Every slot unassigned.
    pub fn new() -> Self {
        Self {
            owner: vec![NO_OWNER; CLUSTER_SLOTS].into_boxed_slice(),
            generation: 0,
            derived: RefCell::default(),
        }
    }

    /// How many changes the table has seen: equal generations of one table mean equal
    /// contents (the bus compares them around every message instead of the 32 KB).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Notes a change: forgets what was derived.
    fn changed(&mut self) {
        self.generation += 1;
        let d = self.derived.get_mut();
        d.serving = None;
        d.bitmaps.clear();
    }

    /// Who serves `slot` (`slot < 16384`).
    pub fn get(&self, slot: usize) -> Option<usize> {
        decode(self.owner[slot])
    }

    /// Makes `owner` serve `slot` (`None`: nobody).
    pub fn set(&mut self, slot: usize, owner: Option<usize>) {
        let raw = encode(owner);
        if self.owner[slot] != raw {
            self.owner[slot] = raw;
            self.changed();
        }
    }

    /// Every slot's owner, slot 0 first.
    pub fn iter(&self) -> impl Iterator<Item = Option<usize>> + '_ {
        self.owner.iter().map(|&o| decode(o))
    }

    /// The owner of every assigned slot (one item per slot).
    pub fn assigned(&self) -> impl Iterator<Item = usize> + '_ {
        self.owner
            .iter()
            .filter(|&&o| o != NO_OWNER)
            .map(|&o| usize::from(o))
    }

    /// Number of slots with an owner.
    pub fn assigned_count(&self) -> usize {
        self.owner.iter().filter(|&&o| o != NO_OWNER).count()
    }

    /// Number of slots node `index` serves.
    pub fn count_of(&self, index: usize) -> usize {
        let raw = encode(Some(index));
        if raw == NO_OWNER {
            return 0;
        }
        self.owner.iter().filter(|&&o| o == raw).count()
    }

    /// Whether node `index` serves at least one slot.
    pub fn serves_any(&self, index: usize) -> bool {
        let raw = encode(Some(index));
        raw != NO_OWNER && self.owner.contains(&raw)
    }

    /// Which of `nodes` nodes serve at least one slot, and whether some slot has no
    /// owner, in one pass.
    pub fn serving(&self, nodes: usize) -> (Vec<bool>, bool) {
        let mut derived = self.derived.borrow_mut();
        let (by_index, unassigned) = derived.serving.get_or_insert_with(|| {
            let mut serving = Vec::new();
            let mut unassigned = false;
            let mut note = |o: u16| {
                if o == NO_OWNER {
                    unassigned = true;
                    return;
                }
                let i = usize::from(o);
                if i >= serving.len() {
                    serving.resize(i + 1, false);
                }
                serving[i] = true;
            };
            for block in self.owner.chunks(BLOCK) {
                match uniform(block) {
                    Some(o) => note(o),
                    None => block.iter().for_each(|&o| note(o)),
                }
            }
            (serving, unassigned)
        });
        let mut serving = vec![false; nodes];
        for (s, &by) in serving.iter_mut().zip(by_index.iter()) {
            *s = by;
        }
        (serving, *unassigned)
    }

    /// Gives every slot of node `from` to `to` (`None`: unassigns them).
    pub fn reassign(&mut self, from: usize, to: Option<usize>) {
        let (from, to) = (encode(Some(from)), encode(to));
        if from == NO_OWNER || from == to {
            return;
        }
        let mut any = false;
        for o in self.owner.iter_mut().filter(|o| **o == from) {
            *o = to;
            any = true;
        }
        if any {
            self.changed();
        }
    }

    /// Node `index` left the table: its slots become unassigned and the owners after it
    /// move down by one.
    pub fn remove_node(&mut self, index: usize) {
        let Some(i) = u16::try_from(index).ok().filter(|&i| i != NO_OWNER) else {
            return;
        };
        let mut any = false;
        for o in self.owner.iter_mut() {
            if *o == i {
                *o = NO_OWNER;
                any = true;
            } else if *o != NO_OWNER && *o > i {
                *o -= 1;
                any = true;
            }
        }
        if any {
            self.changed();
        }
    }

    /// Unassigns every slot.
    pub fn clear(&mut self) {
        if self.assigned_count() > 0 {
            self.owner.fill(NO_OWNER);
            self.changed();
        }
    }

    /// The slots node `index` serves, as the bus's bitmap; built a byte (eight slots) at
    /// a time without branches.
    pub fn bitmap_of(&self, index: usize) -> SlotBitmap {
        let raw = encode(Some(index));
        if raw == NO_OWNER {
            return SlotBitmap::new();
        }
        let mut derived = self.derived.borrow_mut();
        let bitmaps = &mut derived.bitmaps;
        if let Some(at) = bitmaps.iter().position(|(i, _)| *i == raw) {
            let hit = bitmaps.remove(at);
            let bitmap = (*hit.1).clone();
            bitmaps.push(hit);
            return bitmap;
        }
        let mut bytes = [0u8; SLOT_BITMAP_BYTES];
        for (out, block) in bytes
            .chunks_exact_mut(BLOCK / 8)
            .zip(self.owner.chunks_exact(BLOCK))
        {
            match uniform(block) {
                Some(o) if o == raw => out.fill(0xff),
                Some(_) => {}
                None => {
                    for (byte, owners) in out.iter_mut().zip(block.chunks_exact(8)) {
                        *byte = owners
                            .iter()
                            .enumerate()
                            .fold(0u8, |b, (bit, &o)| b | (u8::from(o == raw) << bit));
                    }
                }
            }
        }
        let bitmap = SlotBitmap::from_bytes(bytes);
        if bitmaps.len() == REMEMBERED_BITMAPS {
            bitmaps.remove(0);
        }
        bitmaps.push((raw, Box::new(bitmap.clone())));
        bitmap
    }

    /// The assigned slots as maximal runs of one owner, ascending: `(first, last,
    /// owner)`, in one pass.
    pub fn runs(&self) -> Vec<(u16, u16, usize)> {
        let mut runs: Vec<(u16, u16, usize)> = Vec::new();
        let mut slot = 0;
        while slot < CLUSTER_SLOTS {
            let o = self.owner[slot];
            let mut len = 0;
            // Whole blocks of the same owner first, then slot by slot.
            while let Some(block) = self.owner.get(slot + len..slot + len + BLOCK)
                && uniform(block) == Some(o)
            {
                len += BLOCK;
            }
            len += self.owner[slot + len..]
                .iter()
                .take_while(|&&x| x == o)
                .count();
            if o != NO_OWNER {
                // Slots are below 16384: both ends fit in a u16.
                runs.push((slot as u16, (slot + len - 1) as u16, usize::from(o)));
            }
            slot += len;
        }
        runs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_index_that_does_not_fit_is_unassigned() {
        let mut t = SlotOwners::new();
        t.set(3, Some(7));
        t.set(4, Some(usize::from(NO_OWNER)));
        t.set(5, Some(1 << 20));
        assert_eq!((t.get(3), t.get(4), t.get(5)), (Some(7), None, None));
        assert_eq!(t.count_of(usize::from(NO_OWNER)), 0);
        assert!(!t.serves_any(1 << 20));
    }

    proptest! {
        /// Every operation agrees with a plain `Vec<Option<usize>>`.
        #[test]
        fn owners_behave_like_a_vector_of_options(
            runs in proptest::collection::vec((0usize..6, 1usize..4000), 1..30),
            ops in proptest::collection::vec((0u8..5, 0usize..6, 0usize..6), 0..6),
        ) {
            let mut model: Vec<Option<usize>> = vec![None; CLUSTER_SLOTS];
            let mut t = SlotOwners::new();
            let mut slot = 0;
            for (who, len) in runs {
                for _ in 0..len {
                    if slot < CLUSTER_SLOTS {
                        let o = (who < 5).then_some(who);
                        model[slot] = o;
                        t.set(slot, o);
                        slot += 1;
                    }
                }
            }
            // Fill what the table remembers: every change below must forget it.
            for i in 0..6 {
                let _ = t.bitmap_of(i);
            }
            let _ = t.serving(6);
            let generation = t.generation();
            let mut changes = false;
            for (op, a, b) in ops {
                let before = model.clone();
                match op {
                    0 => {
                        let to = (b < 5).then_some(b);
                        model.iter_mut().filter(|o| **o == Some(a)).for_each(|o| *o = to);
                        t.reassign(a, to);
                    }
                    1 => {
                        for o in model.iter_mut() {
                            *o = match *o {
                                Some(x) if x == a => None,
                                Some(x) if x > a => Some(x - 1),
                                other => other,
                            };
                        }
                        t.remove_node(a);
                    }
                    2 => {
                        let s = (a * 2731 + b * 17) % CLUSTER_SLOTS;
                        model[s] = Some(b);
                        t.set(s, Some(b));
                    }
                    _ => {
                        model.fill(None);
                        t.clear();
                    }
                }
                changes |= model != before;
            }
            prop_assert_eq!(t.generation() != generation, changes, "a change moves the generation");
            prop_assert_eq!(t.iter().collect::<Vec<_>>(), model.clone());
            let (serving, unassigned) = t.serving(6);
            prop_assert_eq!(unassigned, model.contains(&None));
            for (i, s) in serving.iter().enumerate() {
                prop_assert_eq!(*s, model.contains(&Some(i)));
            }
            prop_assert_eq!(t.assigned_count(), model.iter().flatten().count());
            prop_assert_eq!(t.assigned().collect::<Vec<_>>(), model.iter().flatten().copied().collect::<Vec<_>>());
            let mut expected_runs: Vec<(u16, u16, usize)> = Vec::new();
            for (s, o) in model.iter().enumerate() {
                let Some(o) = *o else { continue };
                match expected_runs.last_mut() {
                    Some(r) if r.2 == o && usize::from(r.1) + 1 == s => r.1 = s as u16,
                    _ => expected_runs.push((s as u16, s as u16, o)),
                }
            }
            prop_assert_eq!(t.runs(), expected_runs);
            for i in 0..6 {
                let n = model.iter().filter(|o| **o == Some(i)).count();
                prop_assert_eq!(t.count_of(i), n);
                prop_assert_eq!(t.serves_any(i), n > 0);
                let bitmap = t.bitmap_of(i);
                for (s, o) in model.iter().enumerate() {
                    prop_assert_eq!(bitmap.test(s as u16), *o == Some(i));
                }
            }
        }
    }
}
