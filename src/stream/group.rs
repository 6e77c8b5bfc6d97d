//! PLACEHOLDER: consumer groups are being written. Only the interface the stream uses
//! for reference-aware trimming is here.

use super::id::StreamId;

/// All consumer groups of one stream, plus the reverse index ID → referencing groups.
#[derive(Debug, Clone, Default)]
pub struct Groups {}

impl Groups {
    /// Number of groups.
    pub fn len(&self) -> usize {
        0
    }
    /// True when the stream has no groups.
    pub fn is_empty(&self) -> bool {
        true
    }
    /// True if some group still references `id` (reference §3.2): it is beyond some
    /// group's `last_id`, or pending in some group's PEL.
    pub fn is_referenced(&self, _id: StreamId) -> bool {
        false
    }
    /// Removes `id` from every group's PEL (DELREF).
    pub fn remove_refs(&mut self, _id: StreamId) {}
}
