//! Tiering's storage room (DESIGN.md §13, `docs/tiering.md`): cold stream nodes in
//! segment files, read back off the core thread. The stream keeps cold stubs
//! (`stream/cold.rs`); the core drives the store (`core/tier.rs`: the mover, parked
//! commands' reads, garbage collection and compaction).
//!
//! ```text
//! core thread                                  tier/
//!  stream rax leaf: Listpack | cold stub ──────▶ Location {segment, offset, len, crc}
//!                                                 │
//!  mover: append(stream, first, last, node) ───▶ store.rs  SegmentStore: <dir>/seg-*.sdt,
//!         sync() before the Location is durable           buffered appends, sealing,
//!                                                           live/dead bytes, compaction
//!  parked command: pool.submit(batch) ─────────▶ pool.rs   ReadPool: std threads, pread,
//!         ◀──── tokio oneshot with the nodes ───            CRC-checked, in batch order
//! ```
//!
//! The unit is one listpack node, as bytes (`Listpack::as_bytes`): a record in a segment
//! file (`segment.rs` draws the bytes) carries the node with its stream's id, its master ID
//! and its last ID, and a CRC-64/XZ. What stays in memory for a cold node is a
//! [`Location`] (24 bytes) beside whatever the stream keeps to answer without I/O.
//!
//! This module sits on the data layer: it knows `stream::StreamId` and nothing above
//! (no core, no commands, no persistence); the core drives it.

pub mod pool;
pub mod segment;
pub mod store;

pub use pool::{ReadBatch, ReadPool};
pub use store::{
    CheckReport, CompactionChunk, CompactionSource, PendingSync, SegmentStats, SegmentStore,
    StoreOptions,
};

use crate::stream::StreamId;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Where a cold node lives: what a cold stub keeps in memory to read it back and check
/// that it got the right bytes. Defined by the data layer (`stream::cold`), which keeps it
/// in its stubs; this room gives it its record arithmetic.
pub use crate::stream::cold::NodeLocation as Location;

impl Location {
    /// Bytes the record takes in its segment (node plus framing).
    pub fn record_size(&self) -> u64 {
        segment::record_size(self.len)
    }

    /// Offset just past the record.
    pub fn end(&self) -> u64 {
        u64::from(self.offset) + self.record_size()
    }
}

/// A node read back from a segment, with what its record says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColdNode {
    /// The caller's stream id given to [`SegmentStore::append`].
    pub stream: u64,
    /// The node's master ID (its rax key; `Listpack::from_bytes` needs it).
    pub first: StreamId,
    /// The node's last entry ID.
    pub last: StreamId,
    /// The node bytes as they were appended.
    pub node: Vec<u8>,
}

/// Tiering failures: I/O with the file involved, and damage with the file and offset.
/// Data read from disk never panics; it ends here.
#[derive(Debug)]
#[non_exhaustive]
pub enum TierError {
    /// An I/O error while `what` on `path`.
    Io {
        /// What was being done (`reading a record`, `creating a segment`, ...).
        what: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// A damaged segment header, record or seal.
    Corrupt {
        /// The segment file.
        path: PathBuf,
        /// Byte offset of the damaged header, record or seal.
        offset: u64,
        /// What is wrong.
        why: &'static str,
    },
    /// The newest segment ends in a torn record (a crash mid-write); opening with
    /// `repair` cuts it. Records after `offset` were never synced, so never durable.
    TornTail {
        /// The segment file.
        path: PathBuf,
        /// Where the torn record starts (the file would be cut here).
        offset: u64,
        /// Bytes that would be cut.
        cut: u64,
    },
    /// A location names a segment the store does not have (never existed or unlinked).
    UnknownSegment {
        /// The segment number.
        segment: u64,
    },
    /// A location lies outside its segment's records.
    OutOfRange {
        /// The location.
        loc: Location,
    },
    /// A node that cannot be a record: too short or too long, or `first > last`.
    InvalidNode {
        /// The node length.
        len: u64,
        /// What is wrong.
        why: &'static str,
    },
    /// Compaction was asked for the segment being appended to.
    NotSealed {
        /// The segment number.
        segment: u64,
    },
    /// The read pool has shut down (or a worker died) before answering.
    PoolClosed,
    /// An earlier write to a segment failed (or was dropped unwritten): the active
    /// segment may have a hole, so nothing more is written until a restart, whose open
    /// cuts the unsealed tail at the first bad record.
    WritesStopped,
}

impl TierError {
    /// An I/O error.
    pub fn io(what: &'static str, path: &Path, source: io::Error) -> TierError {
        TierError::Io {
            what,
            path: path.to_path_buf(),
            source,
        }
    }
}

impl fmt::Display for TierError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TierError::Io { what, path, source } => {
                write!(f, "I/O error {what} {}: {source}", path.display())
            }
            TierError::Corrupt { path, offset, why } => {
                write!(
                    f,
                    "Bad segment {} at offset {offset}: {why}",
                    path.display()
                )
            }
            TierError::TornTail { path, offset, cut } => write!(
                f,
                "Segment {} ends in a torn record at offset {offset} ({cut} bytes); \
                 opening with repair truncates it there",
                path.display()
            ),
            TierError::UnknownSegment { segment } => {
                write!(f, "no segment {segment} (never written, or unlinked)")
            }
            TierError::OutOfRange { loc } => write!(
                f,
                "location {}:{}+{} lies outside the segment's records",
                loc.segment, loc.offset, loc.len
            ),
            TierError::InvalidNode { len, why } => {
                write!(f, "a node of {len} bytes cannot be a segment record: {why}")
            }
            TierError::WritesStopped => write!(
                f,
                "an earlier segment write failed: segments are not written until a restart"
            ),
            TierError::NotSealed { segment } => {
                write!(
                    f,
                    "segment {segment} is being appended to; only sealed ones compact"
                )
            }
            TierError::PoolClosed => f.write_str("the tier read pool has shut down"),
        }
    }
}

impl std::error::Error for TierError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TierError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_is_24_bytes_and_copy() {
        assert_eq!(std::mem::size_of::<Location>(), 24);
        assert_eq!(std::mem::size_of::<Option<Location>>(), 32);
        let l = Location {
            segment: 1,
            offset: 32,
            len: 12,
            crc: 0,
        };
        let m = l;
        assert_eq!(l, m);
        assert_eq!(l.end(), 32 + 64);
    }
}
