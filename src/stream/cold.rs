//! Cold nodes: the part of a stream whose listpack nodes live in segment files
//! (tiering, DESIGN.md §13, `docs/tiering.md`).
//!
//! ```text
//!   Stream ── Nodes.index: Rax<Listpack>          hot: the newest nodes, in memory
//!         └── Extra.cold: ColdNodes               cold: the oldest nodes, as stubs
//!
//!   IDs:  [ cold stub | cold stub | ... | cold stub ][ hot node | ... | hot tail ]
//!           oldest                                                        newest
//! ```
//!
//! Nodes go cold oldest first and never come back as hot nodes, so the cold nodes are
//! always a **prefix** of the stream: every cold ID is below every hot ID. That keeps the
//! hot part exactly what it was before tiering (the rax and everything written for it),
//! and lets the cold part be a sorted `VecDeque` of stubs (binary search by master ID,
//! trimming from the front), ~120 bytes per ~4 KB node instead of a rax leaf.
//!
//! A stub keeps what lookups need without I/O: master (first) ID, last ID, first live ID,
//! live and total entry counts, the [`NodeLocation`] and the IDs deleted since the node
//! went cold (tombstones; the segment is never rewritten for an XDEL). `XLEN`, `XINFO`
//! counts, first/last IDs and whole-node trimming read only stubs.
//!
//! **Reading entries.** A stub holds a `warm` copy of its node once it was read back
//! (tombstones applied). The data layer does no I/O of its own: the core reads nodes off
//! its thread and puts them here ([`Stream::warm_node`]) before it runs a command that
//! needs them (parking the command meanwhile). Anything that reaches a cold node that is
//! not warm (a script, a transaction, a background save) goes through the loader the
//! server installed ([`set_loader`]), which reads synchronously on the calling thread and
//! is counted ([`sync_loads`]); without a loader, or when the read fails, the node reads
//! as empty and the failure is counted ([`load_failures`]) and logged by the loader.
//!
//! [`Stream::warm_node`]: super::Stream::warm_node

use super::StreamId;
use super::listpack::Listpack;
use super::memory::usable_size;
use std::collections::VecDeque;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// Where a cold node lives: segment, offset, length and checksum of its record
/// (`tier/segment.rs` draws the record). `Copy`, 24 bytes (u64 + u32 + u32 + u64, no
/// padding). The tier room reads and writes records; the stream only keeps this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeLocation {
    /// The segment number (its file is `seg-<16 hex>.sdt`). Numbers only grow, and a
    /// number that ever held a durable record is never given to another segment.
    pub segment: u64,
    /// Byte offset of the record in the segment file.
    pub offset: u32,
    /// Length of the node bytes (the record is a fixed overhead longer).
    pub len: u32,
    /// The record's CRC-64/XZ, compared with the one read back.
    pub crc: u64,
}

/// Reads a cold node back: given its location and master ID, the node (checked byte by
/// byte) or why not. Installed by the server ([`set_loader`]); runs on the calling thread.
pub type NodeLoader = dyn Fn(NodeLocation, StreamId) -> Result<Listpack, String> + Send + Sync;

/// The installed loader.
static LOADER: RwLock<Option<Arc<NodeLoader>>> = RwLock::new(None);
/// Nodes read by the loader (synchronous reads).
static SYNC_LOADS: AtomicU64 = AtomicU64::new(0);
/// Loader calls that failed (the node read as empty).
static LOAD_FAILURES: AtomicU64 = AtomicU64::new(0);

/// Cold nodes retired (trimmed, deleted) since [`take_retired`] last looked.
static RETIRED: AtomicU64 = AtomicU64::new(0);

/// Records that a cold node left its stream (its record may become garbage).
pub fn note_retired() {
    RETIRED.fetch_add(1, Ordering::Relaxed);
}

/// Cold nodes retired since the last call (the core then looks for segments nothing
/// names any more).
pub fn take_retired() -> u64 {
    RETIRED.swap(0, Ordering::Relaxed)
}

/// Installs (or, with `None`, removes) the loader used for cold nodes that are not warm.
pub fn set_loader(loader: Option<Arc<NodeLoader>>) {
    *LOADER.write().unwrap_or_else(|e| e.into_inner()) = loader;
}

/// Cold nodes read synchronously since start.
pub fn sync_loads() -> u64 {
    SYNC_LOADS.load(Ordering::Relaxed)
}

/// Synchronous reads that failed since start.
pub fn load_failures() -> u64 {
    LOAD_FAILURES.load(Ordering::Relaxed)
}

/// Reads one node through the installed loader.
pub fn load(loc: NodeLocation, master: StreamId) -> Result<Listpack, String> {
    let loader = LOADER
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map(Arc::clone);
    let Some(loader) = loader else {
        LOAD_FAILURES.fetch_add(1, Ordering::Relaxed);
        return Err("no cold node loader is installed".into());
    };
    SYNC_LOADS.fetch_add(1, Ordering::Relaxed);
    loader(loc, master).inspect_err(|_| {
        LOAD_FAILURES.fetch_add(1, Ordering::Relaxed);
    })
}

/// Bytes the warm copies of all stubs take (clones included), process-wide.
static WARM_BYTES: AtomicU64 = AtomicU64::new(0);

/// Bytes the warm copies of cold nodes take now.
pub fn warm_bytes() -> usize {
    WARM_BYTES.load(Ordering::Relaxed) as usize
}

/// A warm node's live entries already encoded the way replies carry them, so a range
/// over the node is copied instead of decoded entry by entry. The encoding is the
/// caller's (`commands::xrange::render_node`: `*2 $id *2n $f1 $v1 ...` per entry, the
/// same in RESP2 and RESP3); it is made on a pool thread while the node is read back.
///
/// ```text
///  bytes:  [ entry ids[0] ........ | entry ids[1] ...... | ... | entry ids[n-1] ... ]
///           ^starts[0]              ^starts[1]                   ^starts[n-1]        ^len
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The live entries' encodings, oldest first, back to back.
    bytes: Box<[u8]>,
    /// Each live entry's ID, ascending.
    ids: Box<[StreamId]>,
    /// Where each entry's encoding starts in `bytes`.
    starts: Box<[u32]>,
}

impl Rendered {
    /// The encodings of entries with the IDs `ids` (ascending), back to back in `bytes`
    /// from the offsets `starts`. `None` when the parts do not fit together.
    pub fn new(bytes: Vec<u8>, ids: Vec<StreamId>, starts: Vec<u32>) -> Option<Rendered> {
        let fits = ids.len() == starts.len()
            && ids.windows(2).all(|w| w[0] < w[1])
            && starts.windows(2).all(|w| w[0] <= w[1])
            && starts.first().is_none_or(|&s| s == 0)
            && starts.last().is_none_or(|&s| s as usize <= bytes.len())
            && u32::try_from(bytes.len()).is_ok();
        fits.then(|| Rendered {
            bytes: bytes.into_boxed_slice(),
            ids: ids.into_boxed_slice(),
            starts: starts.into_boxed_slice(),
        })
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True when the node had no live entry.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The entries' IDs, ascending.
    pub fn ids(&self) -> &[StreamId] {
        &self.ids
    }

    /// The encodings of entries `a..b` (indexes into [`Rendered::ids`]), back to back.
    pub fn span(&self, a: usize, b: usize) -> &[u8] {
        let at = |i: usize| self.starts.get(i).map_or(self.bytes.len(), |&s| s as usize);
        &self.bytes[at(a)..at(b)]
    }

    /// Bytes its allocations take.
    pub fn heap_size(&self) -> usize {
        usable_size(self.bytes.len())
            + usable_size(self.ids.len() * std::mem::size_of::<StreamId>())
            + usable_size(self.starts.len() * 4)
    }
}

/// One cold node: what stays in memory when its bytes are in a segment.
#[derive(Debug)]
pub struct ColdStub {
    /// The node's master ID (its first entry's ID, deleted or not).
    pub master: StreamId,
    /// Its last entry's ID (deleted or not).
    pub last: StreamId,
    /// Its first live entry's ID.
    pub first_live: StreamId,
    /// Where its bytes are.
    pub loc: NodeLocation,
    /// Live entries (tombstones subtracted).
    pub live: u32,
    /// Entries in the node as written, deleted ones included.
    pub total: u32,
    /// IDs deleted since the node went cold, ascending.
    tombstones: Box<[StreamId]>,
    /// The node as read back, tombstones applied; empty until read.
    warm: OnceLock<Listpack>,
    /// The warm copy's live entries encoded for replies, when the read made them (only
    /// for a node without tombstones; dropped with the warm copy and by a delete).
    rendered: OnceLock<Rendered>,
}

impl Clone for ColdStub {
    fn clone(&self) -> Self {
        let warm = self.warm.clone();
        if let Some(lp) = warm.get() {
            WARM_BYTES.fetch_add(lp.heap_size() as u64, Ordering::Relaxed);
        }
        ColdStub {
            master: self.master,
            last: self.last,
            first_live: self.first_live,
            loc: self.loc,
            live: self.live,
            total: self.total,
            tombstones: self.tombstones.clone(),
            warm,
            // A clone is a save's or a copy's: it reads entries, it does not serve ranges.
            rendered: OnceLock::new(),
        }
    }
}

impl Drop for ColdStub {
    fn drop(&mut self) {
        self.cool();
    }
}

impl ColdStub {
    /// A stub for a node that goes cold now: `lp` is the node (keyed `master`).
    pub fn of_node(master: StreamId, lp: &Listpack, loc: NodeLocation) -> ColdStub {
        let first_live = lp
            .entries(master)
            .find(|e| !e.is_deleted())
            .map_or(master, |e| e.id);
        ColdStub {
            master,
            last: lp.last_id(master),
            first_live,
            loc,
            live: lp.live() as u32,
            total: lp.total_entries() as u32,
            tombstones: Box::default(),
            warm: OnceLock::new(),
            rendered: OnceLock::new(),
        }
    }

    /// A stub as a snapshot recorded it (see [`ColdStub::encode`]).
    pub fn from_parts(
        master: StreamId,
        last: StreamId,
        first_live: StreamId,
        loc: NodeLocation,
        live: u32,
        total: u32,
        tombstones: Vec<StreamId>,
    ) -> ColdStub {
        ColdStub {
            master,
            last,
            first_live,
            loc,
            live,
            total,
            tombstones: tombstones.into_boxed_slice(),
            warm: OnceLock::new(),
            rendered: OnceLock::new(),
        }
    }

    /// The IDs deleted since the node went cold.
    pub fn tombstones(&self) -> &[StreamId] {
        &self.tombstones
    }

    /// The warm copy, if the node was read back.
    pub fn warm(&self) -> Option<&Listpack> {
        self.warm.get()
    }

    /// True when the node was read back.
    pub fn is_warm(&self) -> bool {
        self.warm.get().is_some()
    }

    /// Memory this stub takes (its slot, tombstones and warm copy), as `MEMORY USAGE`
    /// counts it.
    pub fn memory(&self) -> usize {
        std::mem::size_of::<ColdStub>()
            + self.tombstones.len() * std::mem::size_of::<StreamId>()
            + self.warm_bytes()
    }

    /// Bytes the warm copy takes (its rendered entries included).
    pub fn warm_bytes(&self) -> usize {
        self.warm.get().map_or(0, |lp| lp.heap_size())
            + self.rendered.get().map_or(0, Rendered::heap_size)
    }

    /// The warm copy's live entries encoded for replies, if the read made them.
    pub fn rendered(&self) -> Option<&Rendered> {
        self.rendered.get()
    }

    /// Keeps `r` (the live entries of the warm copy, encoded on the pool) beside the
    /// warm copy. Refused (false) without a warm copy, with tombstones (the pool encoded
    /// the node as written, before they applied) or when `r` does not hold exactly the
    /// warm copy's live entries.
    pub fn set_rendered(&self, r: Rendered) -> bool {
        let fits = self.tombstones.is_empty()
            && self.rendered.get().is_none()
            && self
                .warm
                .get()
                .is_some_and(|lp| lp.live() == r.len() as u64)
            && r.ids.first() == Some(&self.first_live)
            && r.ids.last().is_some_and(|&l| l <= self.last);
        if fits {
            WARM_BYTES.fetch_add(r.heap_size() as u64, Ordering::Relaxed);
            let _ = self.rendered.set(r);
        }
        fits
    }

    /// Drops the rendered entries; returns the bytes freed.
    fn drop_rendered(&mut self) -> usize {
        let n = self.rendered.take().map_or(0, |r| r.heap_size());
        WARM_BYTES.fetch_sub(n as u64, Ordering::Relaxed);
        n
    }

    /// Drops the warm copy and its rendered entries (it can be read again).
    pub fn cool(&mut self) -> usize {
        let n = self.warm.take().map_or(0, |lp| lp.heap_size());
        WARM_BYTES.fetch_sub(n as u64, Ordering::Relaxed);
        n + self.drop_rendered()
    }

    /// Installs `lp` (the node as read from its segment) as the warm copy, applying the
    /// tombstones. False (and nothing changes) when it does not look like this node.
    pub fn set_warm(&self, lp: Listpack) -> bool {
        if self.warm.get().is_some() {
            return true;
        }
        match self.with_tombstones(lp) {
            Some(lp) => {
                WARM_BYTES.fetch_add(lp.heap_size() as u64, Ordering::Relaxed);
                let _ = self.warm.set(lp);
                true
            }
            None => false,
        }
    }

    /// `lp` (this node as read from its segment) with the tombstones applied, or `None`
    /// when it does not look like this node (other IDs or counts).
    fn with_tombstones(&self, mut lp: Listpack) -> Option<Listpack> {
        if lp.last_id(self.master) != self.last || lp.total_entries() != u64::from(self.total) {
            return None;
        }
        if !self.tombstones.is_empty() {
            let m = lp.master();
            let mut at = Vec::with_capacity(self.tombstones.len());
            for &id in self.tombstones.iter() {
                at.push(lp.live_entry(self.master, &m, id)?.start);
            }
            for start in at {
                lp.mark_deleted(start);
            }
        }
        (lp.live() == u64::from(self.live)).then_some(lp)
    }

    /// The node with its tombstones applied, without keeping it: the warm copy (shared),
    /// else a copy read through the loader for the caller alone. `None` when the read
    /// failed (counted).
    pub fn read_copy(&self) -> Option<Listpack> {
        if let Some(lp) = self.warm.get() {
            return Some(lp.clone());
        }
        let lp = load(self.loc, self.master).ok()?;
        let lp = self.with_tombstones(lp);
        if lp.is_none() {
            LOAD_FAILURES.fetch_add(1, Ordering::Relaxed);
        }
        lp
    }

    /// The warm copy, reading it through the loader first if needed; `None` when the
    /// read failed (counted).
    pub fn node(&self) -> Option<&Listpack> {
        if let Some(lp) = self.warm.get() {
            return Some(lp);
        }
        let lp = load(self.loc, self.master).ok()?;
        if !self.set_warm(lp) {
            LOAD_FAILURES.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        self.warm.get()
    }

    /// Deletes the live entry `id` of this node, reading it first if needed: true if it
    /// was live (then the counts, the first live ID and the tombstones follow).
    pub fn delete(&mut self, id: StreamId) -> bool {
        if id < self.master || id > self.last || self.node().is_none() {
            return false;
        }
        let Some(lp) = self.warm.get_mut() else {
            return false;
        };
        let m = lp.master();
        let Some(e) = lp.live_entry(self.master, &m, id) else {
            return false;
        };
        lp.mark_deleted(e.start);
        self.live -= 1;
        if self.live > 0 && id == self.first_live {
            self.first_live = lp
                .entries(self.master)
                .find(|e| !e.is_deleted())
                .map_or(self.master, |e| e.id);
        }
        let mut t = std::mem::take(&mut self.tombstones).into_vec();
        let at = t.partition_point(|&x| x < id);
        t.insert(at, id);
        self.tombstones = t.into_boxed_slice();
        self.drop_rendered();
        true
    }
}

/// The cold prefix of a stream: stubs in ID order.
#[derive(Debug, Clone, Default)]
pub struct ColdNodes {
    /// The stubs, ascending by master ID; every one holds a live entry.
    stubs: VecDeque<ColdStub>,
    /// Live entries over all stubs.
    live: u64,
    /// Node bytes on disk over all stubs.
    disk_bytes: u64,
}

impl Drop for ColdNodes {
    /// A stream with cold nodes went away (deleted, overwritten, flushed, or a save's
    /// copy done): the core then looks for segments nothing names any more.
    fn drop(&mut self) {
        if !self.stubs.is_empty() {
            note_retired();
        }
    }
}

impl ColdNodes {
    /// Number of cold nodes.
    pub fn len(&self) -> usize {
        self.stubs.len()
    }

    /// True when no node is cold.
    pub fn is_empty(&self) -> bool {
        self.stubs.is_empty()
    }

    /// Live entries in cold nodes.
    pub fn live(&self) -> u64 {
        self.live
    }

    /// Node bytes in segments.
    pub fn disk_bytes(&self) -> u64 {
        self.disk_bytes
    }

    /// The stubs, oldest first.
    pub fn stubs(&self) -> impl DoubleEndedIterator<Item = &ColdStub> + ExactSizeIterator + '_ {
        self.stubs.iter()
    }

    /// The stub at `i` (oldest is 0).
    pub fn get(&self, i: usize) -> Option<&ColdStub> {
        self.stubs.get(i)
    }

    /// The stub at `i`, to change it.
    pub fn get_mut(&mut self, i: usize) -> Option<&mut ColdStub> {
        self.stubs.get_mut(i)
    }

    /// The first stub.
    pub fn first(&self) -> Option<&ColdStub> {
        self.stubs.front()
    }

    /// The last stub.
    pub fn last(&self) -> Option<&ColdStub> {
        self.stubs.back()
    }

    /// Index of the stub that would hold `id`: the last one whose master is `<= id`.
    pub fn index_for(&self, id: StreamId) -> Option<usize> {
        let after = self.stubs.partition_point(|s| s.master <= id);
        after.checked_sub(1)
    }

    /// Index of the stub whose master is exactly `master`.
    pub fn index_of(&self, master: StreamId) -> Option<usize> {
        self.stubs.binary_search_by(|s| s.master.cmp(&master)).ok()
    }

    /// Appends a stub after every other one (its IDs must be above theirs).
    pub fn push(&mut self, stub: ColdStub) {
        debug_assert!(self.stubs.back().is_none_or(|b| b.last < stub.master));
        self.live += u64::from(stub.live);
        self.disk_bytes += u64::from(stub.loc.len);
        self.stubs.push_back(stub);
    }

    /// Removes the stub at `i`; returns it.
    pub fn remove(&mut self, i: usize) -> Option<ColdStub> {
        let s = self.stubs.remove(i)?;
        self.live -= u64::from(s.live);
        self.disk_bytes -= u64::from(s.loc.len);
        Some(s)
    }

    /// Records that the stub at `i` lost one live entry (after [`ColdStub::delete`]).
    pub fn entry_deleted(&mut self) {
        self.live -= 1;
    }

    /// Drops every warm copy; returns the bytes freed.
    pub fn cool_all(&mut self) -> usize {
        self.stubs.iter_mut().map(ColdStub::cool).sum()
    }

    /// Bytes the warm copies take.
    pub fn warm_bytes(&self) -> usize {
        self.stubs.iter().map(ColdStub::warm_bytes).sum()
    }

    /// Memory the stubs take (the deque's slots and the tombstones, not warm copies).
    pub fn stub_bytes(&self) -> usize {
        self.stubs.capacity() * std::mem::size_of::<ColdStub>()
            + self
                .stubs
                .iter()
                .map(|s| s.tombstones.len() * std::mem::size_of::<StreamId>())
                .sum::<usize>()
    }
}

/// A store of node bytes in memory, with a loader over it, for the data layer's tests.
#[cfg(test)]
pub(crate) mod test_store {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Mutex;
    use std::sync::atomic::AtomicU64;

    /// Node bytes by segment number, with their master IDs.
    type Nodes = HashMap<u64, (StreamId, Vec<u8>)>;

    static NODES: Mutex<Option<Nodes>> = Mutex::new(None);
    static NEXT: AtomicU64 = AtomicU64::new(1 << 40);

    /// Keeps `lp`'s bytes under a new location and installs the loader that reads them.
    pub fn put(master: StreamId, lp: &Listpack) -> NodeLocation {
        let segment = NEXT.fetch_add(1, Ordering::Relaxed);
        NODES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(HashMap::new)
            .insert(segment, (master, lp.as_bytes().to_vec()));
        set_loader(Some(Arc::new(|loc: NodeLocation, master: StreamId| {
            let bytes = NODES
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .and_then(|m| m.get(&loc.segment).cloned());
            match bytes {
                Some((m, b)) if m == master => Listpack::from_bytes(b, master)
                    .map(|(lp, _)| lp)
                    .map_err(|e| e.to_string()),
                _ => Err("not in the test store".into()),
            }
        })));
        NodeLocation {
            segment,
            offset: 32,
            len: lp.as_bytes().len() as u32,
            crc: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn node(ids: std::ops::Range<u64>) -> (StreamId, Listpack) {
        let els = |i: u64| vec![Bytes::from("f"), Bytes::from(format!("v{i}"))];
        let mut lp = Listpack::new(&els(ids.start));
        let master = StreamId::new(ids.start, 0);
        for i in ids.start + 1..ids.end {
            lp.append(master, StreamId::new(i, 0), &els(i), 1 << 20);
        }
        (master, lp)
    }

    fn loc(n: u64) -> NodeLocation {
        NodeLocation {
            segment: n,
            offset: 32,
            len: 100,
            crc: n,
        }
    }

    #[test]
    fn a_stub_keeps_counts_and_ids_and_tombstones_apply_to_the_warm_copy() {
        let (m, lp) = node(1..11);
        let mut s = ColdStub::of_node(m, &lp, loc(1));
        assert_eq!(
            (s.live, s.total, s.last, s.first_live),
            (10, 10, StreamId::new(10, 0), m)
        );
        assert!(s.set_warm(lp.clone()));
        assert!(s.delete(StreamId::new(1, 0)));
        assert!(!s.delete(StreamId::new(1, 0)));
        assert!(!s.delete(StreamId::new(5, 1)));
        assert_eq!((s.live, s.first_live), (9, StreamId::new(2, 0)));
        s.cool();
        assert!(!s.is_warm());
        // Read again: the tombstone is applied to the fresh copy.
        assert!(s.set_warm(lp.clone()));
        assert_eq!(s.warm().map(|w| w.live()), Some(9));
        // A node that is not this one is refused.
        s.cool();
        let (_, other) = node(1..12);
        assert!(!s.set_warm(other));
    }

    #[test]
    fn an_unreadable_cold_node_reads_as_missing_and_is_counted() {
        let (m, lp) = node(1..3);
        // Segment 2 is in no store (the test store's numbers start at 2^40).
        let s = ColdStub::of_node(m, &lp, loc(2));
        let before = load_failures();
        assert!(s.node().is_none());
        assert!(load_failures() > before);
    }

    #[test]
    fn stubs_are_found_by_id() {
        let mut c = ColdNodes::default();
        for (i, r) in [1..5u64, 5..9, 9..13].into_iter().enumerate() {
            let (m, lp) = node(r);
            c.push(ColdStub::of_node(m, &lp, loc(i as u64)));
        }
        assert_eq!(c.live(), 12);
        assert_eq!(c.index_for(StreamId::new(0, 5)), None);
        assert_eq!(c.index_for(StreamId::new(4, 9)), Some(0));
        assert_eq!(c.index_for(StreamId::new(9, 0)), Some(2));
        assert_eq!(c.index_of(StreamId::new(5, 0)), Some(1));
        assert_eq!(c.remove(0).map(|s| s.live), Some(4));
        assert_eq!(c.live(), 8);
    }
}
