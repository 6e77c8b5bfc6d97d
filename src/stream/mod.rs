//! PLACEHOLDER (being replaced by the rax-of-listpacks implementation): the `Stream`
//! type's final public API over a `BTreeMap`, so commands can be written against it.

pub mod group;
pub mod id;
pub mod listpack;
pub mod rax;

pub use id::StreamId;

use crate::error::ReplyError;
use bytes::Bytes;
use group::Groups;
use id::XAddId;
use listpack::Value;
use std::collections::BTreeMap;

/// Node size limits (configs `stream-node-max-bytes`, `stream-node-max-entries`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeLimits {
    /// `stream-node-max-bytes` (0 = no byte limit, capped at 1 GiB).
    pub max_bytes: usize,
    /// `stream-node-max-entries` (0 = no count limit).
    pub max_entries: usize,
}

impl Default for NodeLimits {
    fn default() -> Self {
        NodeLimits { max_bytes: 4096, max_entries: 100 }
    }
}

/// What a trim keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrimStrategy {
    /// Keep at most this many entries.
    MaxLen(u64),
    /// Remove entries with IDs below this one.
    MinId(StreamId),
}

/// How trimming and deletion treat consumer-group references (8.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RefPolicy {
    /// Remove entries; PEL references stay (default).
    #[default]
    KeepRef,
    /// Remove entries and their references from every group PEL.
    DelRef,
    /// Remove only entries no group references.
    Acked,
}

/// A parsed trim request (XADD's trim clause or XTRIM).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrimSpec {
    /// MAXLEN or MINID and its threshold.
    pub strategy: TrimStrategy,
    /// `~`: whole nodes only (KEEPREF) / per entry in eligible nodes (DELREF, ACKED).
    pub approx: bool,
    /// LIMIT: `None` = the default (100 × node-max-entries, clamped), `Some(0)` =
    /// unlimited. Only meaningful with `approx`.
    pub limit: Option<u64>,
    /// Reference strategy.
    pub policy: RefPolicy,
}

/// One entry read out of a stream: its ID and its field/value elements.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    /// The entry ID.
    pub id: StreamId,
    fields: &'a [Bytes],
}

impl<'a> Entry<'a> {
    /// Number of field/value pairs.
    pub fn pairs_len(&self) -> usize {
        self.fields.len() / 2
    }
    /// The elements `f1, v1, f2, v2, ...` in insertion order.
    pub fn elements(&self) -> impl Iterator<Item = Value<'a>> + 'a {
        self.fields.iter().map(|b| Value::Str(b))
    }
}

/// A stream: entries ordered by ID plus the metadata Redis keeps (reference §1.6).
#[derive(Debug, Clone, Default)]
pub struct Stream {
    entries: BTreeMap<StreamId, Vec<Bytes>>,
    last_id: StreamId,
    first_id: StreamId,
    max_deleted_entry_id: StreamId,
    entries_added: u64,
    /// The stream's consumer groups.
    pub groups: Groups,
}

impl Stream {
    /// An empty stream.
    pub fn new() -> Self {
        Self::default()
    }
    /// Number of live entries.
    pub fn len(&self) -> u64 {
        self.entries.len() as u64
    }
    /// True when there are no live entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    /// The last generated ID (`last-generated-id`).
    pub fn last_id(&self) -> StreamId {
        self.last_id
    }
    /// The first live entry's ID, `0-0` when empty (`recorded-first-entry-id`).
    pub fn first_id(&self) -> StreamId {
        self.first_id
    }
    /// Largest ID ever removed by XDEL/XDELEX/XACKDEL.
    pub fn max_deleted_entry_id(&self) -> StreamId {
        self.max_deleted_entry_id
    }
    /// Lifetime count of appended entries.
    pub fn entries_added(&self) -> u64 {
        self.entries_added
    }
    /// XSETID: sets last_id (validation is the caller's).
    pub fn set_last_id(&mut self, id: StreamId) {
        self.last_id = id;
    }
    /// XSETID ENTRIESADDED.
    pub fn set_entries_added(&mut self, n: u64) {
        self.entries_added = n;
    }
    /// XSETID MAXDELETEDID.
    pub fn set_max_deleted_entry_id(&mut self, id: StreamId) {
        self.max_deleted_entry_id = id;
    }

    /// Resolves XADD's requested ID against `last_id` and the clock (reference §2.1).
    pub fn next_id(&self, req: XAddId, now_ms: u64) -> Result<StreamId, ReplyError> {
        let last = self.last_id;
        match req {
            XAddId::Auto => {
                if now_ms > last.ms {
                    Ok(StreamId::new(now_ms, 0))
                } else {
                    last.incr().ok_or(ReplyError::StreamExhausted)
                }
            }
            XAddId::AutoSeq(ms) => {
                if ms == last.ms {
                    if last.seq == u64::MAX {
                        return Err(ReplyError::XAddIdTooSmall);
                    }
                    Ok(StreamId::new(ms, last.seq + 1))
                } else if ms > last.ms {
                    Ok(StreamId::new(ms, 0))
                } else {
                    Err(ReplyError::XAddIdTooSmall)
                }
            }
            XAddId::Explicit(id) => {
                if last == StreamId::MAX {
                    Err(ReplyError::StreamExhausted)
                } else if id <= last {
                    Err(ReplyError::XAddIdTooSmall)
                } else {
                    Ok(id)
                }
            }
        }
    }

    /// Appends an entry; `id` must be greater than `last_id` (from [`Stream::next_id`]).
    /// `elements` is `f1, v1, f2, v2, ...`.
    pub fn append(&mut self, id: StreamId, elements: &[Bytes], _limits: &NodeLimits) {
        assert!(id > self.last_id || (self.last_id.is_zero() && !id.is_zero()));
        if self.entries.is_empty() {
            self.first_id = id;
        }
        self.entries.insert(id, elements.to_vec());
        self.last_id = id;
        self.entries_added += 1;
    }

    /// Entries with `start <= id <= end`, ascending (`rev` false) or descending.
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
        rev: bool,
    ) -> Box<dyn Iterator<Item = Entry<'_>> + '_> {
        if start > end {
            return Box::new(std::iter::empty());
        }
        let it = self.entries.range(start..=end).map(|(id, f)| Entry { id: *id, fields: f });
        if rev { Box::new(it.rev()) } else { Box::new(it) }
    }

    /// The entry with this ID, if live.
    pub fn get(&self, id: StreamId) -> Option<Entry<'_>> {
        self.entries.get(&id).map(|f| Entry { id, fields: f })
    }

    /// The first live entry.
    pub fn first_entry(&self) -> Option<Entry<'_>> {
        self.entries.iter().next().map(|(id, f)| Entry { id: *id, fields: f })
    }

    /// The last live entry.
    pub fn last_entry(&self) -> Option<Entry<'_>> {
        self.entries.iter().next_back().map(|(id, f)| Entry { id: *id, fields: f })
    }

    /// Deletes one entry (XDEL): true if it was live. Raises `max_deleted_entry_id`
    /// and keeps `first_id` correct.
    pub fn delete(&mut self, id: StreamId) -> bool {
        if self.entries.remove(&id).is_none() {
            return false;
        }
        if id > self.max_deleted_entry_id {
            self.max_deleted_entry_id = id;
        }
        self.first_id = self.entries.keys().next().copied().unwrap_or(StreamId::MIN);
        true
    }

    /// Trims; returns the number of entries removed. Does not touch
    /// `max_deleted_entry_id`.
    pub fn trim(&mut self, spec: &TrimSpec, _limits: &NodeLimits) -> u64 {
        let mut removed = 0;
        loop {
            let Some((&id, _)) = self.entries.iter().next() else { break };
            let go = match spec.strategy {
                TrimStrategy::MaxLen(n) => self.len() > n,
                TrimStrategy::MinId(min) => id < min,
            };
            if !go {
                break;
            }
            self.entries.remove(&id);
            removed += 1;
        }
        self.first_id = self.entries.keys().next().copied().unwrap_or(StreamId::MIN);
        removed
    }

    /// Number of nodes (XINFO `radix-tree-keys`).
    pub fn radix_tree_keys(&self) -> usize {
        self.entries.len().div_ceil(100)
    }

    /// Number of radix tree nodes (XINFO `radix-tree-nodes`).
    pub fn radix_tree_nodes(&self) -> usize {
        self.radix_tree_keys() + 1
    }

    /// Estimated memory use in bytes (MEMORY USAGE).
    pub fn memory_usage(&self) -> usize {
        self.entries.values().map(|f| 16 + f.iter().map(|b| b.len() + 8).sum::<usize>()).sum()
    }
}
