//! Sorted-set values.
//!
//! (Initial representation: a member → score map beside an ordered set. The sorted-sets
//! family replaces it with a packed array for small sets and a structure with ranks
//! beyond `zset-max-listpack-entries`/`-value`.)

use super::Thresholds;
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};

/// A score that orders as Redis orders scores (never NaN).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Score(f64);

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Score) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Score) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// A set of members ordered by (score, member).
#[derive(Debug, Clone, Default)]
pub struct ZSet {
    scores: HashMap<Box<[u8]>, f64>,
    order: BTreeSet<(Score, Box<[u8]>)>,
}

impl ZSet {
    /// An empty sorted set.
    pub fn new() -> ZSet {
        ZSet::default()
    }

    /// Number of members (`ZCARD`).
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// True when empty (an empty sorted set is never stored in the keyspace).
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// Sets `member`'s score (never NaN); true if the member is new.
    pub fn insert(&mut self, member: &[u8], score: f64, _t: &Thresholds) -> bool {
        let old = self.scores.insert(member.into(), score);
        if let Some(old) = old {
            self.order.remove(&(Score(old), Box::from(member)));
        }
        self.order.insert((Score(score), member.into()));
        old.is_none()
    }

    /// `member`'s score.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).copied()
    }

    /// The (member, score) pairs by ascending score, then member.
    pub fn iter(&self) -> impl Iterator<Item = (Cow<'_, [u8]>, f64)> {
        self.order.iter().map(|(s, m)| (Cow::Borrowed(&m[..]), s.0))
    }

    /// `OBJECT ENCODING`'s name for it.
    pub fn encoding(&self) -> &'static str {
        "skiplist"
    }

    /// Bytes allocated for the members and their order.
    pub fn heap_size(&self) -> usize {
        self.scores.capacity() * 32
            + self.order.len() * 48
            + self.scores.keys().map(|m| m.len() * 2).sum::<usize>()
    }
}
