//! A stream's lifecycle beyond Redis: retention by age and by size, and tombstone
//! reclamation (docs/beyond-redis.md).
//!
//! ```text
//!  Stream.extra.lifecycle: Option<Box<Lifecycle>>   None while retention is off
//!  ├ retention    MAXAGE ms, MAXBYTES bytes (0 = off), RETENTION-REFS (XCFGSET)
//!  ├ node_heap    bytes of all nodes, kept up to date while MAXBYTES is set, so that the
//!  │              size check after each XADD costs O(1) instead of a walk of the nodes
//!  └ age_done     the MAXAGE cutoff (ms) the last complete age trim reached: a later
//!                 check with a cutoff not above it has nothing to do
//! ```
//!
//! **Retention** ([`Stream::apply_retention`]) turns the settings into exact trims,
//! `MINID = X` under the stream's reference policy (one for MAXAGE, one for MAXBYTES),
//! which is what the callers log and replicate (`XTRIM key MINID = X [DELREF|ACKED]`):
//! replaying those records removes exactly what was removed, whatever the node layout,
//! with no clock involved.
//!
//! * MAXAGE: entries whose ID's ms part is below `now - MAXAGE` (`X = (now - MAXAGE)-0`).
//! * MAXBYTES: whole oldest nodes, while the stream's memory (as `MEMORY USAGE` counts
//!   it, IDMP state aside, which retention cannot shrink) plus a tiered stream's cold
//!   bytes on disk is above the cap; the last node, with the newest entry, always stays
//!   (`X` = the master ID of the first node kept). Cold nodes go first, from their stubs.
//!
//! Both stop early when `budget` runs out (one unit per node dropped whole, one per entry
//! looked at entry by entry), and then `X` is where they stopped: the trim is still exact,
//! just shorter, and the next call (the next XADD, or the background sweep in
//! `core/lifecycle.rs`) goes on. So no single call removes an unbounded amount.
//!
//! **Reclamation** rewrites a node whose tombstones are more than `ratio` of its entries.
//! A deleting command does it at once for the nodes it touched
//! ([`Stream::delete_reclaiming`], [`Stream::reclaim_head`] after a trim from the
//! front), up to [`INLINE_RECLAIM_MAX_BYTES`] a node; [`Stream::reclaim`], the background
//! pass, visits nodes in ID order from a cursor for the rest (larger nodes, streams
//! brought in whole by RENAME/COPY/RESTORE, trims that leave tombstones in many nodes),
//! and rewrites every node whose tombstones are more than `ratio` of its entries
//! ([`Listpack::reclaim`](super::listpack::Listpack::reclaim)): tombstones go, except each node's last entry and those a
//! group's PEL still holds. IDs, order, counts, first and last entry, `max-deleted-entry-id`
//! and lag are unchanged, and so are node boundaries (a reclaimed node still counts its
//! tombstones the way Redis does). One node at a time, within a budget.

use super::group::Groups;
use super::{Extra, RefPolicy, Stream, StreamId, TrimSpec, TrimStrategy, master_of};
use super::{NodeLimits, memory, rax::SeekOp};

/// A stream's retention settings (XCFGSET MAXAGE / MAXBYTES / RETENTION-REFS). The
/// default is off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Retention {
    /// MAXAGE in ms: entries whose ID's ms part is older than now minus this go. 0 = off.
    pub max_age_ms: u64,
    /// MAXBYTES: whole oldest nodes go while the stream uses more. 0 = off.
    pub max_bytes: u64,
    /// How both trims treat entries consumer groups still reference (RETENTION-REFS).
    pub refs: RefPolicy,
}

impl Retention {
    /// True when neither MAXAGE nor MAXBYTES is set (the policy alone does nothing).
    pub fn is_off(&self) -> bool {
        self.max_age_ms == 0 && self.max_bytes == 0
    }
}

/// The boxed retention state of a stream (the module doc draws it).
#[derive(Debug, Clone, Default)]
pub struct Lifecycle {
    /// The settings.
    retention: Retention,
    /// Bytes of every node ([`Listpack::heap_size`](super::listpack::Listpack::heap_size)), exact while `retention.max_bytes`
    /// is set; every change to the nodes updates it ([`Stream::heap_changed`]).
    node_heap: usize,
    /// The cutoff (ms) of the last MAXAGE trim that removed everything below it; a check
    /// with a cutoff at or below this has nothing to do (entries appended since have IDs
    /// above it unless they are expired themselves, which the XADD check sees).
    age_done: u64,
}

/// The trims a retention pass made: `XTRIM key MINID = <id>` under `policy`, for each
/// of [`RetentionTrim::min_ids`] in order, removes exactly what it removed. There are two
/// when both MAXAGE and MAXBYTES trimmed: they are not always one trim to the larger ID
/// (under DELREF, a node that the first trim emptied of live entries goes with the
/// references of its trailing tombstones still held; a single trim would have dropped
/// them), so both are kept as they were.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionTrim {
    /// The exact MINID thresholds, in the order applied; `len` of them are set.
    min_ids: [StreamId; 2],
    /// How many of `min_ids` are set (1 or 2).
    len: usize,
    /// The reference policy they applied.
    pub policy: RefPolicy,
    /// Entries removed, in all.
    pub removed: u64,
}

impl RetentionTrim {
    /// The exact MINID thresholds, in the order they were applied.
    pub fn min_ids(&self) -> &[StreamId] {
        &self.min_ids[..self.len]
    }

    /// The last (largest) threshold: every entry below it is gone (or held, under ACKED).
    pub fn min_id(&self) -> StreamId {
        self.min_ids[self.len - 1]
    }
}

/// What one reclamation call did ([`Stream::reclaim`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReclaimStep {
    /// Where the next call resumes (the last node looked at), `None` when every node
    /// was looked at.
    pub resume_after: Option<StreamId>,
    /// Nodes rewritten.
    pub rewritten: u64,
    /// Bytes given back (node allocations before minus after).
    pub freed: usize,
}

/// Budget units a node rewrite costs per this many bytes of node (plus one to look at it).
pub const RECLAIM_BYTES_PER_UNIT: usize = 256;

/// Nodes larger than this are not rewritten by the deleting command itself but left to
/// the background pass ([`Stream::delete_reclaiming`]); nodes are at most 4 KiB with
/// the default `stream-node-max-bytes`.
pub const INLINE_RECLAIM_MAX_BYTES: usize = 64 * 1024;

/// A node is rewritten only when it holds at least this many tombstones that can go
/// (fewer save too little to pay for the copy). 1 in tests, so that the model test
/// reclaims its small nodes.
pub const RECLAIM_MIN_TOMBSTONES: u64 = if cfg!(test) { 1 } else { 4 };

impl Stream {
    /// The retention settings (all off for a stream without any).
    pub fn retention(&self) -> Retention {
        self.lifecycle()
            .map_or_else(Retention::default, |l| l.retention)
    }

    fn lifecycle(&self) -> Option<&Lifecycle> {
        self.extra.as_ref()?.lifecycle.as_deref()
    }

    fn lifecycle_mut(&mut self) -> Option<&mut Lifecycle> {
        self.extra.as_mut()?.lifecycle.as_deref_mut()
    }

    /// Sets the retention settings; true if they changed. Turning everything off frees
    /// the state; turning MAXBYTES on counts the nodes' bytes once (O(nodes)), after
    /// which every change keeps the count.
    pub fn set_retention(&mut self, r: Retention) -> bool {
        if r == self.retention() {
            return false;
        }
        if r == Retention::default() {
            if let Some(x) = &mut self.extra {
                x.lifecycle = None;
            }
            return true;
        }
        let counted = self.lifecycle().is_some_and(|l| l.retention.max_bytes != 0);
        let heap = if r.max_bytes != 0 && !counted {
            Some(self.nodes.index.iter().map(|(_, lp)| lp.heap_size()).sum())
        } else {
            None
        };
        let l = self
            .extra
            .get_or_insert_with(Box::<Extra>::default)
            .lifecycle
            .get_or_insert_with(Box::default);
        l.retention = r;
        if let Some(heap) = heap {
            l.node_heap = heap;
        }
        l.age_done = 0;
        true
    }

    /// True when node byte changes must be counted ([`Stream::heap_changed`]): MAXBYTES
    /// is set.
    pub(super) fn heap_counter(&self) -> bool {
        self.lifecycle().is_some_and(|l| l.retention.max_bytes != 0)
    }

    /// Records that the nodes now take `added` more and `removed` fewer bytes. Every
    /// change to the nodes' allocations calls it (append, delete, trim, loading a node,
    /// reclamation), so `node_heap` stays exact while it is counted.
    pub(super) fn heap_changed(&mut self, added: usize, removed: usize) {
        if added == removed {
            return;
        }
        if let Some(l) = self.lifecycle_mut()
            && l.retention.max_bytes != 0
        {
            l.node_heap = (l.node_heap + added).saturating_sub(removed);
        }
    }

    /// The memory MAXBYTES compares with the cap, key overhead aside: what
    /// [`Stream::memory_usage`] counts without the IDMP state. O(1) while MAXBYTES is
    /// set (the counted node bytes), a walk of the nodes otherwise.
    pub fn retained_bytes(&self) -> usize {
        let nodes = match self.lifecycle() {
            Some(l) if l.retention.max_bytes != 0 => l.node_heap,
            _ => self.nodes.index.iter().map(|(_, lp)| lp.heap_size()).sum(),
        };
        self.memory_with_nodes(nodes)
    }

    /// Applies the retention settings at `now_ms`: the MAXAGE cutoff, then the MAXBYTES
    /// cap (against [`Stream::retained_bytes`] plus `key_bytes`, the key's share of
    /// `MEMORY USAGE`), spending at most `budget` (module doc). Returns the exact trim
    /// that stands for what was removed, `None` when nothing was. Wakes nobody and leaves
    /// `max-deleted-entry-id` alone, like XTRIM.
    pub fn apply_retention(
        &mut self,
        now_ms: u64,
        key_bytes: usize,
        limits: &NodeLimits,
        budget: &mut usize,
    ) -> Option<RetentionTrim> {
        let r = self.retention();
        if r.is_off() || self.is_empty() {
            return None;
        }
        let mut done = RetentionTrim {
            min_ids: [StreamId::MIN; 2],
            len: 0,
            policy: r.refs,
            removed: 0,
        };
        let mut reached = StreamId::MIN;
        if r.max_age_ms != 0 {
            let cutoff = now_ms.saturating_sub(r.max_age_ms);
            let age_done = self.lifecycle().map_or(0, |l| l.age_done);
            // An entry appended since the last complete trim is below its cutoff only if
            // the whole stream is (its ID is the last one).
            if cutoff > age_done || self.last_id.ms < age_done {
                let want = StreamId::new(cutoff, 0);
                reached = self.minid_stop(want, r.refs, budget);
                self.retention_step(reached, limits, &mut done);
                if reached == want
                    && let Some(l) = self.lifecycle_mut()
                {
                    l.age_done = cutoff;
                }
            }
        }
        if r.max_bytes != 0 && *budget > 0 {
            let cap = usize::try_from(r.max_bytes).unwrap_or(usize::MAX);
            if let Some(x) = self.maxbytes_stop(cap.saturating_sub(key_bytes), r.refs, budget)
                && x > reached
            {
                self.retention_step(x, limits, &mut done);
            }
        }
        (done.len > 0).then_some(done)
    }

    /// One exact `MINID = min` trim of a retention pass under its policy, recorded in
    /// `done` when it changed anything: removed entries, or (DELREF) dropped the
    /// references of tombstones while removing none.
    fn retention_step(&mut self, min: StreamId, limits: &NodeLimits, done: &mut RetentionTrim) {
        let pending = |s: &Stream| -> usize { s.groups().iter().map(|g| g.pel_count()).sum() };
        let before = (done.policy == RefPolicy::DelRef).then(|| pending(self));
        let removed = self.trim_exact_minid(min, done.policy, limits);
        if removed > 0 || before.is_some_and(|n| n != pending(self)) {
            done.min_ids[done.len] = min;
            done.len += 1;
            done.removed += removed;
        }
    }

    /// `XTRIM MINID = min` under `policy`.
    fn trim_exact_minid(&mut self, min: StreamId, policy: RefPolicy, limits: &NodeLimits) -> u64 {
        if min.is_zero() {
            return 0;
        }
        self.trim(
            &TrimSpec {
                strategy: TrimStrategy::MinId(min),
                approx: false,
                limit: None,
                policy,
            },
            limits,
        )
    }

    /// True when a trim under `policy` drops whole nodes without looking at their
    /// entries (KEEPREF, or no groups: nothing is referenced), as `Nodes::trim` decides.
    fn whole_nodes(&self, policy: RefPolicy) -> bool {
        policy == RefPolicy::KeepRef || self.groups().is_empty()
    }

    /// Where an exact `MINID = want` trim under `policy` must stop to cost at most
    /// `budget` (which it lowers by what it will cost): `want` itself when it fits, else
    /// the first node's master ID or entry ID that the trim cannot reach. The trim up to
    /// the returned ID does exactly what the full one would have done below it.
    fn minid_stop(&self, want: StreamId, policy: RefPolicy, budget: &mut usize) -> StreamId {
        let whole = self.whole_nodes(policy);
        for (key, lp) in self.nodes.index.iter() {
            let master = master_of(key);
            if master >= want {
                return want;
            }
            if whole && lp.last_id(master) < want {
                // Dropped whole: one unit.
                if *budget == 0 {
                    return master;
                }
                *budget -= 1;
                continue;
            }
            // Looked at entry by entry (DELREF/ACKED with groups, or the node `want`
            // falls in): one unit per entry below `want`.
            for e in lp.entries(master) {
                if e.id >= want {
                    return want;
                }
                if *budget == 0 {
                    return e.id;
                }
                *budget -= 1;
            }
        }
        want
    }

    /// Where a MAXBYTES trim must stop: the master ID of the first node to keep so that
    /// the stream's bytes come within `cap`, the last node always kept, spending at most
    /// `budget`. `None` when the stream is within the cap (or has one node).
    fn maxbytes_stop(&self, cap: usize, policy: RefPolicy, budget: &mut usize) -> Option<StreamId> {
        let cold = self.cold();
        // A tiered stream's cold nodes count with their bytes on disk: the cap bounds the
        // stream's size, wherever its nodes are.
        let cold_bytes = cold.map_or(0, |c| usize::try_from(c.disk_bytes()).unwrap_or(usize::MAX));
        let mut usage = self.retained_bytes().saturating_add(cold_bytes);
        let cold_nodes = cold.map_or(0, |c| c.len());
        if usage <= cap || self.nodes.index.len() + cold_nodes < 2 {
            return None;
        }
        let whole = self.whole_nodes(policy);
        let groups: &Groups = self.groups();
        let mut stop = None;
        let mut c = self.nodes.index.cursor();
        if !c.seek(SeekOp::First, &[]) {
            return None;
        }
        let mut current = c.next();
        // The cold stubs are the oldest nodes: they go first, whole, without reading them
        // (the hot part always keeps its tail node, so a stub always has a next node).
        if let Some(cold) = cold {
            let first_hot = current.as_ref().map(|(key, _)| master_of(key));
            let mut stubs = cold.stubs().peekable();
            while let Some(stub) = stubs.next() {
                let Some(next) = stubs.peek().map(|s| s.master).or(first_hot) else {
                    break;
                };
                let cost = if whole { 1 } else { stub.total as usize };
                if *budget < cost {
                    return stop;
                }
                *budget -= cost;
                // Under ACKED the node goes only if none of its entries is referenced:
                // beyond some group's last-delivered ID, or pending in a PEL.
                let freed = policy != RefPolicy::Acked
                    || whole
                    || !(groups.min_last_id().is_some_and(|m| stub.last > m)
                        || groups
                            .iter()
                            .any(|g| g.pel_range(stub.master, stub.last).next().is_some()));
                if freed {
                    usage = usage.saturating_sub(stub.loc.len as usize + stub.memory());
                }
                stop = Some(next);
                if usage <= cap {
                    return stop;
                }
            }
        }
        while let Some((key, lp)) = current {
            let master = master_of(key);
            let Some(next) = c.next() else {
                break; // the last node stays
            };
            let cost = if whole {
                1
            } else {
                usize::try_from(lp.physical_entries()).unwrap_or(usize::MAX)
            };
            if *budget < cost {
                break;
            }
            *budget -= cost;
            // Under ACKED the node goes only if no live entry of it is referenced.
            let freed = policy != RefPolicy::Acked
                || whole
                || !lp
                    .entries(master)
                    .any(|e| !e.is_deleted() && groups.is_referenced(e.id));
            if freed {
                usage = usage.saturating_sub(lp.heap_size() + memory::RAX_NODE_ESTIMATE);
            }
            stop = Some(master_of(next.0));
            if usage <= cap {
                break;
            }
            current = Some(next);
        }
        stop
    }

    /// One step of tombstone reclamation: from the node after `after` (the first when
    /// `None`), rewrites every node in which tombstones are more than `ratio` of the
    /// entries it holds (and at least [`RECLAIM_MIN_TOMBSTONES`] can go), while `budget`
    /// lasts (one unit per node looked at, one per [`RECLAIM_BYTES_PER_UNIT`] bytes
    /// rewritten). Tombstones that a group's PEL still holds stay, and so does each
    /// node's last entry
    /// ([`Listpack::reclaim`](super::listpack::Listpack::reclaim)). A `ratio` of 1 or more
    /// never rewrites.
    pub fn reclaim(
        &mut self,
        after: Option<StreamId>,
        ratio: f64,
        budget: &mut usize,
    ) -> ReclaimStep {
        let mut step = ReclaimStep::default();
        let mut cursor = after;
        while *budget > 0 {
            let Some((master, lp)) = self.nodes.next_node(cursor) else {
                step.resume_after = None;
                return step;
            };
            *budget -= 1;
            cursor = Some(master);
            step.resume_after = cursor;
            if !over_ratio(lp, ratio) {
                continue;
            }
            *budget = budget.saturating_sub(lp.len() / RECLAIM_BYTES_PER_UNIT);
            if let Some(freed) = self.reclaim_node(master) {
                step.rewritten += 1;
                step.freed += freed;
            }
        }
        step
    }

    /// Rewrites the node keyed `master` without the tombstones that can go, if at least
    /// [`RECLAIM_MIN_TOMBSTONES`] can; returns the bytes given back.
    fn reclaim_node(&mut self, master: StreamId) -> Option<usize> {
        let key = master.to_key();
        let lp = self.nodes.index.get(&key)?;
        let groups = self.groups();
        let new = lp.reclaim(master, |id| groups.is_pending_anywhere(id))?;
        if lp.deleted() - new.deleted() < RECLAIM_MIN_TOMBSTONES {
            return None;
        }
        let (before, after) = (lp.heap_size(), new.heap_size());
        *self
            .nodes
            .index
            .get_mut(&key)
            .expect("node found a moment ago") = new;
        self.heap_changed(after, before);
        Some(before.saturating_sub(after))
    }

    /// What a deleting command does instead of [`Stream::delete`] (XDEL, XDELEX,
    /// XACKDEL): deletes `id`, then, if its node now has tombstones over `ratio`,
    /// rewrites that node at once, a node being at most [`INLINE_RECLAIM_MAX_BYTES`]: its
    /// rewrite costs about what decoding it once does, and happens about twice in a
    /// node's life however many entries go one by one; the ratio check is two header
    /// words. Returns whether `id` was deleted, and whether its node was too large to
    /// rewrite here (the caller then leaves the stream to the background pass).
    pub fn delete_reclaiming(&mut self, id: StreamId, ratio: f64) -> (bool, bool) {
        let Some(node) = self.delete_at(id) else {
            return (false, false);
        };
        let Some(master) = node else {
            return (true, false);
        };
        let Some(lp) = self.nodes.index.get(&master.to_key()) else {
            return (true, false);
        };
        if !over_ratio(lp, ratio) {
            return (true, false);
        }
        if lp.len() > INLINE_RECLAIM_MAX_BYTES {
            return (true, true);
        }
        self.reclaim_node(master);
        (true, false)
    }

    /// [`Stream::delete_reclaiming`] for a trim that removed entries under `policy`
    /// (XTRIM, XADD's trim clause, retention). A trim goes from the front, and only the
    /// node it stopped in keeps the tombstones it made ([`Stream::reclaim_head`]), except
    /// under ACKED with groups, which skips referenced entries and so may leave
    /// tombstones in every node it went through: then the stream is left to the
    /// background pass (true).
    pub fn reclaim_after_trim(&mut self, policy: RefPolicy, ratio: f64) -> bool {
        if policy == RefPolicy::Acked && !self.groups().is_empty() {
            return true;
        }
        self.reclaim_head(ratio)
    }

    /// Reclaims the first node if it needs it; true when it is too large to rewrite
    /// here ([`INLINE_RECLAIM_MAX_BYTES`]).
    pub fn reclaim_head(&mut self, ratio: f64) -> bool {
        let Some((key, lp)) = self.nodes.index.first() else {
            return false;
        };
        if !over_ratio(lp, ratio) {
            return false;
        }
        if lp.len() > INLINE_RECLAIM_MAX_BYTES {
            return true;
        }
        let master = master_of(key);
        self.reclaim_node(master);
        false
    }

    /// True if some node holds more tombstones than `ratio` of its entries (O(nodes)).
    pub fn has_reclaimable_nodes(&self, ratio: f64) -> bool {
        self.nodes.index.iter().any(|(_, lp)| over_ratio(lp, ratio))
    }
}

/// True when `lp`'s tombstones are more than `ratio` of the entries it holds, and at least
/// [`RECLAIM_MIN_TOMBSTONES`] (cheap: two header words).
fn over_ratio(lp: &super::listpack::Listpack, ratio: f64) -> bool {
    let (deleted, physical) = (lp.deleted(), lp.physical_entries());
    ratio < 1.0 && deleted >= RECLAIM_MIN_TOMBSTONES && deleted as f64 > ratio * physical as f64
}

#[cfg(test)]
mod tests {
    use super::super::group::StreamCounters;
    use super::*;
    use bytes::Bytes;
    use std::collections::BTreeMap;

    fn id(ms: u64, seq: u64) -> StreamId {
        StreamId::new(ms, seq)
    }

    fn els(v: &str) -> Vec<Bytes> {
        vec![
            Bytes::from_static(b"f"),
            Bytes::copy_from_slice(v.as_bytes()),
        ]
    }

    fn limits(max_entries: usize) -> NodeLimits {
        NodeLimits {
            max_bytes: 4096,
            max_entries,
        }
    }

    /// Appends entries `ms-0` for each ms in `range`.
    fn fill(s: &mut Stream, range: std::ops::Range<u64>, lim: &NodeLimits) {
        for ms in range {
            s.append(id(ms, 0), &els(&ms.to_string()), lim);
        }
    }

    fn ids(s: &Stream) -> Vec<StreamId> {
        s.range(StreamId::MIN, StreamId::MAX, false)
            .map(|e| e.id)
            .collect()
    }

    fn counters(s: &Stream) -> StreamCounters {
        StreamCounters {
            length: s.len(),
            last_id: s.last_id(),
            first_id: s.first_id(),
            max_deleted_entry_id: s.max_deleted_entry_id(),
            entries_added: s.entries_added(),
        }
    }

    /// The counted node bytes equal a fresh count.
    fn check_heap(s: &Stream) {
        if let Some(l) = s.lifecycle()
            && l.retention.max_bytes != 0
        {
            let fresh: usize = s.nodes.index.iter().map(|(_, lp)| lp.heap_size()).sum();
            assert_eq!(l.node_heap, fresh, "counted node bytes drifted");
        }
    }

    fn age(ms: u64, refs: RefPolicy) -> Retention {
        Retention {
            max_age_ms: ms,
            max_bytes: 0,
            refs,
        }
    }

    #[test]
    fn maxage_trims_exactly_below_the_cutoff_and_says_so() {
        let lim = limits(10);
        let mut s = Stream::new();
        fill(&mut s, 1..101, &lim);
        assert!(s.set_retention(age(30, RefPolicy::KeepRef)));
        assert!(!s.set_retention(age(30, RefPolicy::KeepRef)));
        let t = s
            .apply_retention(100, 0, &lim, &mut usize::MAX.clone())
            .expect("70 entries are older than 30 ms");
        assert_eq!(t.min_ids(), &[id(70, 0)]);
        assert_eq!(t.removed, 69);
        assert_eq!(ids(&s).first(), Some(&id(70, 0)));
        // Nothing more at the same time; the cutoff moving on trims again.
        assert_eq!(s.apply_retention(100, 0, &lim, &mut 1000), None);
        let t = s
            .apply_retention(105, 0, &lim, &mut 1000)
            .expect("five more");
        assert_eq!((t.min_id(), t.removed), (id(75, 0), 5));
        // Off again: nothing happens, and the state is gone.
        assert!(s.set_retention(Retention::default()));
        assert!(s.lifecycle().is_none());
        assert_eq!(s.apply_retention(1000, 0, &lim, &mut 1000), None);
    }

    #[test]
    fn a_small_budget_stops_early_with_an_exact_threshold() {
        let lim = limits(10);
        let mut s = Stream::new();
        fill(&mut s, 1..1001, &lim);
        s.set_retention(age(1, RefPolicy::KeepRef));
        let mut pauses = 0;
        let mut copy = s.clone();
        copy.set_retention(Retention::default());
        while let Some(t) = s.apply_retention(2000, 0, &lim, &mut 7) {
            pauses += 1;
            // The logged form replayed on a copy removes the same entries.
            let replayed: u64 = t
                .min_ids()
                .iter()
                .map(|&m| copy.trim_exact_minid(m, t.policy, &lim))
                .sum();
            assert_eq!(replayed, t.removed);
            assert_eq!(ids(&copy), ids(&s));
            assert!(t.removed <= 7 * 10);
        }
        assert!(s.is_empty());
        assert!(pauses >= 1000 / 70, "{pauses}");
    }

    #[test]
    fn an_old_explicit_id_added_later_is_trimmed_again() {
        let lim = limits(10);
        let mut s = Stream::new();
        fill(&mut s, 1..5, &lim);
        s.set_retention(age(10, RefPolicy::KeepRef));
        assert!(s.apply_retention(100, 0, &lim, &mut 100).is_some());
        assert!(s.is_empty());
        s.append(id(50, 0), &els("old"), &lim);
        let t = s
            .apply_retention(100, 0, &lim, &mut 100)
            .expect("expired on arrival");
        assert_eq!((t.min_id(), t.removed), (id(90, 0), 1));
    }

    #[test]
    fn maxbytes_drops_whole_oldest_nodes_and_keeps_the_last() {
        let lim = limits(10);
        let mut s = Stream::new();
        s.append(id(1, 0), &els("x"), &lim);
        s.set_retention(Retention {
            max_age_ms: 0,
            max_bytes: 2000,
            refs: RefPolicy::KeepRef,
        });
        for ms in 2..500 {
            s.append(id(ms, 0), &els(&"y".repeat(40)), &lim);
            if let Some(t) = s.apply_retention(0, 40, &lim, &mut 1000) {
                // Whole nodes: the threshold is a node's master ID.
                assert!(
                    s.node_listpacks()
                        .next()
                        .is_some_and(|(m, _)| m == t.min_id())
                );
            }
            check_heap(&s);
            assert!(s.retained_bytes() + 40 <= 2000 || s.radix_tree_keys() == 1);
        }
        assert_eq!(s.last_entry().map(|e| e.id), Some(id(499, 0)));
        assert!(s.len() >= 10);
        // One node bigger than the cap: it stays.
        s.set_retention(Retention {
            max_age_ms: 0,
            max_bytes: 1,
            refs: RefPolicy::KeepRef,
        });
        s.apply_retention(0, 40, &lim, &mut 1000);
        assert_eq!(s.radix_tree_keys(), 1);
        check_heap(&s);
    }

    #[test]
    fn acked_retention_keeps_what_a_group_still_holds() {
        let lim = limits(4);
        let mut s = Stream::new();
        fill(&mut s, 1..21, &lim);
        assert!(s.groups_mut().create(b"g", id(10, 0), Some(10)));
        {
            let mut g = s.group_mut(b"g").expect("group");
            let (c, _) = g.get_or_create_consumer(b"c", 0);
            g.deliver(c, id(3, 0), 0);
            g.deliver(c, id(7, 0), 0);
        }
        s.set_retention(age(1, RefPolicy::Acked));
        let t = s.apply_retention(100, 0, &lim, &mut 1000).expect("some go");
        // 3 and 7 are pending; 11..20 are beyond the group's last ID.
        assert_eq!(
            ids(&s),
            [3, 7, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20].map(|m| id(m, 0))
        );
        assert_eq!(
            (t.min_id(), t.policy, t.removed),
            (id(99, 0), RefPolicy::Acked, 8)
        );
        // DELREF drops them and their references.
        s.set_retention(age(1, RefPolicy::DelRef));
        s.apply_retention(100, 0, &lim, &mut 1000)
            .expect("the rest go");
        assert!(s.is_empty());
        assert_eq!(s.groups().get(b"g").map(|g| g.pel_count()), Some(0));
    }

    /// Found by the model test: under DELREF, trimming to the MAXAGE cutoff then to the
    /// MAXBYTES node is not one trim to the larger ID. The first trim empties a node of
    /// live entries whose last entry, a tombstone past the cutoff, a group still holds:
    /// the node goes, the reference stays. One trim to the larger ID would have dropped
    /// the reference too. So the pass reports (and the log carries) both trims.
    #[test]
    fn delref_age_then_bytes_trims_are_reported_as_two() {
        let lim = limits(5);
        let mut s = Stream::new();
        s.groups_mut().create(b"g0", StreamId::MIN, Some(0));
        s.groups_mut().create(b"g1", StreamId::MIN, Some(0));
        // Nodes of five: [1-2 1-3 1-4 1-5 3-6] [5-7 6-8 6-9 8-10 10-11] [11-0].
        for (ms, seq) in [
            (1, 2),
            (1, 3),
            (1, 4),
            (1, 5),
            (3, 6),
            (5, 7),
            (6, 8),
            (6, 9),
            (8, 10),
            (10, 11),
            (11, 12),
        ] {
            s.append(id(ms, seq), &els("v"), &lim);
        }
        {
            let mut g = s.group_mut(b"g0").expect("group");
            let (c, _) = g.get_or_create_consumer(b"c", 0);
            g.deliver(c, id(3, 6), 0);
        }
        assert!(s.delete(id(3, 6)));
        let mut replay = s.clone();
        s.set_retention(Retention {
            max_age_ms: 38,
            max_bytes: 1,
            refs: RefPolicy::DelRef,
        });
        let t = s
            .apply_retention(40, 30, &lim, &mut 1000)
            .expect("both trim");
        assert_eq!(t.min_ids(), &[id(2, 0), id(11, 12)]);
        let mut once = replay.clone();
        for &m in t.min_ids() {
            replay.trim_exact_minid(m, t.policy, &lim);
        }
        once.trim_exact_minid(t.min_id(), t.policy, &lim);
        let pel = |s: &Stream| -> Vec<StreamId> {
            s.groups()
                .get(b"g0")
                .map(|g| {
                    g.pel_range(StreamId::MIN, StreamId::MAX)
                        .map(|p| p.id)
                        .collect()
                })
                .unwrap_or_default()
        };
        assert_eq!(pel(&s), vec![id(3, 6)]);
        assert_eq!(pel(&replay), pel(&s));
        assert_eq!(ids(&replay), ids(&s));
        assert!(
            pel(&once).is_empty(),
            "one trim would not have been the same"
        );
    }

    #[test]
    fn reclaim_gives_memory_back_and_changes_nothing_visible() {
        let lim = limits(100);
        let mut s = Stream::new();
        for i in 1..=20_000u64 {
            let (a, b) = (i.to_string(), (i * 7).to_string());
            s.append(
                id(i, 0),
                &[
                    Bytes::from_static(b"bidder"),
                    Bytes::from(a),
                    Bytes::from_static(b"amount"),
                    Bytes::from(b),
                ],
                &lim,
            );
        }
        let before = s.memory_usage();
        for i in 1..=20_000u64 {
            if i % 10 != 0 {
                assert!(s.delete(id(i, 0)));
            }
        }
        let (keys, nodes, first, last, maxdel) = (
            s.radix_tree_keys(),
            s.radix_tree_nodes(),
            s.first_id(),
            s.last_entry().map(|e| e.id),
            s.max_deleted_entry_id(),
        );
        let want = ids(&s);
        let mut after = None;
        let mut steps = 0;
        loop {
            let step = s.reclaim(after, 0.5, &mut 500);
            steps += 1;
            after = step.resume_after;
            if after.is_none() {
                break;
            }
        }
        assert!(steps > 1, "the work is spread over several steps");
        assert_eq!(ids(&s), want);
        assert_eq!(
            (s.radix_tree_keys(), s.radix_tree_nodes(), s.first_id()),
            (keys, nodes, first)
        );
        assert_eq!(
            (s.last_entry().map(|e| e.id), s.max_deleted_entry_id()),
            (last, maxdel)
        );
        let now = s.memory_usage();
        assert!(now * 4 <= before, "{now} of {before}");
        assert!(!s.has_reclaimable_nodes(0.5));
        // Appends still split nodes where Redis does: the reclaimed tail still counts 100.
        s.append(id(30_000, 0), &els("z"), &lim);
        assert_eq!(s.radix_tree_keys(), keys + 1);
    }

    #[test]
    fn reclaim_keeps_tombstones_a_group_holds() {
        let lim = limits(100);
        let mut s = Stream::new();
        fill(&mut s, 1..51, &lim);
        s.groups_mut().create(b"g", StreamId::MIN, None);
        {
            let mut g = s.group_mut(b"g").expect("group");
            let (c, _) = g.get_or_create_consumer(b"c", 0);
            g.deliver(c, id(5, 0), 0);
        }
        for ms in 1..40 {
            s.delete(id(ms, 0));
        }
        let step = s.reclaim(None, 0.5, &mut 100);
        assert_eq!(step.rewritten, 1);
        let (master, lp) = s.node_listpacks().next().expect("one node");
        let tombstones: Vec<StreamId> = lp
            .entries(master)
            .filter(|e| e.is_deleted())
            .map(|e| e.id)
            .collect();
        assert_eq!(tombstones, vec![id(5, 0)]);
        // A later DELREF trim still finds it and drops the reference.
        s.trim_exact_minid(id(45, 0), RefPolicy::DelRef, &lim);
        assert_eq!(s.groups().get(b"g").map(|g| g.pel_count()), Some(0));
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        #[derive(Debug, Clone)]
        enum Op {
            /// Appends with the ms part advanced by this much.
            Append(u8),
            /// XDEL of the n-th appended ID.
            Delete(usize),
            /// Exact or approximate KEEPREF MAXLEN.
            MaxLen(u64, bool),
            /// XREADGROUP `>` of up to n entries for group g.
            Read(usize, usize),
            /// XACK of the n-th appended ID in group g.
            Ack(usize, usize),
            /// One reclamation step.
            Reclaim(u8, usize),
            /// Retention: MAXAGE, MAXBYTES, policy, the clock's lead, budget.
            Retain(u64, u64, u8, u64, usize),
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                12 => (0u8..3).prop_map(Op::Append),
                6 => any::<usize>().prop_map(Op::Delete),
                1 => (0u64..40, any::<bool>()).prop_map(|(n, a)| Op::MaxLen(n, a)),
                3 => (0usize..2, 1usize..6).prop_map(|(g, n)| Op::Read(g, n)),
                3 => (0usize..2, any::<usize>()).prop_map(|(g, n)| Op::Ack(g, n)),
                3 => (0u8..10, 1usize..30).prop_map(|(r, b)| Op::Reclaim(r, b)),
                2 => (0u64..40, prop_oneof![Just(0u64), 300u64..3000], 0u8..3, 0u64..60, 1usize..40)
                    .prop_map(|(a, b, p, t, n)| Op::Retain(a, b, p, t, n)),
            ]
        }

        const GROUPS: [&[u8]; 2] = [b"g0", b"g1"];

        /// Everything a client can see of the stream and its groups.
        fn visible(s: &Stream) -> Vec<String> {
            let c = counters(s);
            let mut v = vec![format!(
                "{:?} keys={} first={:?} last={:?}",
                c,
                s.radix_tree_keys(),
                s.first_entry().map(|e| e.id),
                s.last_entry().map(|e| e.id),
            )];
            for g in s.groups().iter() {
                let pel: Vec<StreamId> = g
                    .pel_range(StreamId::MIN, StreamId::MAX)
                    .map(|p| p.id)
                    .collect();
                v.push(format!(
                    "{:?} last={} read={:?} lag={:?} pel={pel:?}",
                    g.name(),
                    g.last_id(),
                    g.entries_read(),
                    g.lag(&c)
                ));
            }
            v
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

            /// `live` gets reclamation and retention; `replay` only the trims they
            /// reported (what the log carries), never a reclamation; `model` is the
            /// live entries. All three must agree after every step, on IDs, lengths,
            /// first and last entry, lag and node boundaries.
            #[test]
            fn retention_and_reclamation_match_the_model(
                max_entries in 1usize..8,
                ops in proptest::collection::vec(op(), 1..200),
            ) {
                let lim = limits(max_entries);
                let mut live = Stream::new();
                let mut replay = Stream::new();
                let mut model: BTreeMap<StreamId, String> = BTreeMap::new();
                let mut appended: Vec<StreamId> = Vec::new();
                for s in [&mut live, &mut replay] {
                    for g in GROUPS {
                        s.groups_mut().create(g, StreamId::MIN, Some(0));
                    }
                }
                let mut ms = 1u64;
                let mut cursor = None;
                for op in ops {
                    match op {
                        Op::Append(step) => {
                            ms += u64::from(step);
                            let nid = StreamId::new(ms, appended.len() as u64);
                            let v = format!("v{}", appended.len());
                            live.append(nid, &els(&v), &lim);
                            replay.append(nid, &els(&v), &lim);
                            model.insert(nid, v);
                            appended.push(nid);
                        }
                        Op::Delete(i) => {
                            if appended.is_empty() { continue }
                            let d = appended[i % appended.len()];
                            let was = model.remove(&d).is_some();
                            // What XDEL does: delete, and rewrite the node if it needs it.
                            prop_assert_eq!(live.delete_reclaiming(d, 0.5).0, was);
                            prop_assert_eq!(replay.delete(d), was);
                        }
                        Op::MaxLen(n, approx) => {
                            let spec = TrimSpec {
                                strategy: TrimStrategy::MaxLen(n),
                                approx,
                                limit: None,
                                policy: RefPolicy::KeepRef,
                            };
                            let removed = live.trim(&spec, &lim);
                            prop_assert_eq!(replay.trim(&spec, &lim), removed);
                            let gone: Vec<StreamId> = model.keys().take(removed as usize).copied().collect();
                            for k in gone { model.remove(&k); }
                        }
                        Op::Read(g, n) => {
                            for s in [&mut live, &mut replay] {
                                let c = counters(s);
                                let last = s.groups().get(GROUPS[g]).map(|x| x.last_id()).unwrap_or_default();
                                let Some(from) = last.incr() else { continue };
                                let batch: Vec<StreamId> = s.range(from, StreamId::MAX, false).take(n).map(|e| e.id).collect();
                                let mut grp = s.group_mut(GROUPS[g]).expect("group");
                                let (cid, _) = grp.get_or_create_consumer(b"c", 0);
                                for i in batch {
                                    grp.deliver(cid, i, 0);
                                    grp.advance_last_id(i, &c);
                                }
                            }
                        }
                        Op::Ack(g, i) => {
                            if appended.is_empty() { continue }
                            let a = appended[i % appended.len()];
                            for s in [&mut live, &mut replay] {
                                s.group_mut(GROUPS[g]).expect("group").ack(a);
                            }
                        }
                        Op::Reclaim(r, budget) => {
                            let ratio = f64::from(r) / 10.0;
                            let mut b = budget;
                            cursor = live.reclaim(cursor, ratio, &mut b).resume_after;
                        }
                        Op::Retain(age_ms, bytes, p, lead, budget) => {
                            let refs = [RefPolicy::KeepRef, RefPolicy::DelRef, RefPolicy::Acked][p as usize];
                            live.set_retention(Retention { max_age_ms: age_ms, max_bytes: bytes, refs });
                            let now = ms + lead;
                            let referenced: Vec<StreamId> = model.keys().copied().filter(|k| live.groups().is_referenced(*k)).collect();
                            let mut b = budget;
                            if let Some(t) = live.apply_retention(now, 30, &lim, &mut b) {
                                prop_assert_eq!(t.policy, refs);
                                let replayed: u64 = t.min_ids().iter().map(|&m| replay.trim_exact_minid(m, t.policy, &lim)).sum();
                                prop_assert_eq!(replayed, t.removed);
                                let gone: Vec<StreamId> = model
                                    .keys()
                                    .copied()
                                    .filter(|k| *k < t.min_id() && !(refs == RefPolicy::Acked && referenced.contains(k)))
                                    .collect();
                                prop_assert_eq!(gone.len() as u64, t.removed);
                                for k in gone { model.remove(&k); }
                                if age_ms != 0 && bytes == 0 && b > 0 {
                                    // The budget was enough: nothing expired is left but
                                    // what a group holds under ACKED.
                                    let cutoff = now.saturating_sub(age_ms);
                                    prop_assert!(model.keys().all(|k| k.ms >= cutoff
                                        || (refs == RefPolicy::Acked && referenced.contains(k))));
                                }
                            }
                            check_heap(&live);
                        }
                    }
                    let got: Vec<(StreamId, Vec<u8>)> = live
                        .range(StreamId::MIN, StreamId::MAX, false)
                        .map(|e| (e.id, e.elements().nth(1).map(|v| v.to_vec()).unwrap_or_default()))
                        .collect();
                    let want: Vec<(StreamId, Vec<u8>)> = model.iter().map(|(k, v)| (*k, v.clone().into_bytes())).collect();
                    prop_assert_eq!(got, want);
                    prop_assert_eq!(ids(&replay), ids(&live));
                    prop_assert_eq!(visible(&live), visible(&replay));
                    let back: Vec<StreamId> = live.range(StreamId::MIN, StreamId::MAX, true).map(|e| e.id).collect();
                    prop_assert!(back.iter().rev().eq(model.keys()));
                    check_heap(&live);
                }
                // Snapshot round trip of the reclaimed nodes.
                let mut copy = Stream::new();
                for (master, bytes) in live.nodes() {
                    prop_assert!(copy.push_node(master, bytes.to_vec()).is_ok());
                }
                prop_assert_eq!(ids(&copy), ids(&live));
                prop_assert_eq!(copy.radix_tree_keys(), live.radix_tree_keys());
            }
        }
    }
}
