//! Freeing big values off the core thread (Redis's `lazyfree.c`).
//!
//! Dropping a stream of a million entries, or a whole database, takes the core as long
//! as it takes the allocator to free every node. UNLINK, FLUSHALL/FLUSHDB ASYNC and the
//! `lazyfree-lazy-*` settings hand such values to a background thread instead: the key
//! is gone from the keyspace at once (the command's effects and replies are unchanged),
//! only the memory comes back later. As in Redis, a value is sent away only when freeing
//! it costs more than [`LAZYFREE_THRESHOLD`] allocations ([`free_effort`]); below that,
//! the hand-off costs more than the free.
//!
//! INFO memory shows `lazyfree_pending_objects` (sent, not yet freed) and
//! `lazyfreed_objects` (freed by the thread since start or CONFIG RESETSTAT).

use super::keyspace::TakenDb;
use crate::types::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

/// Above this many allocations a value is freed in the background (Redis's
/// `LAZYFREE_THRESHOLD`).
pub const LAZYFREE_THRESHOLD: usize = 64;

/// About how many allocations freeing `value` costs (Redis's `lazyfreeGetFreeEffort`):
/// a collection's elements or nodes; a stream's nodes, plus its groups times the first
/// group's pending entries; 1 for anything packed into one allocation.
pub fn free_effort(value: &Value) -> usize {
    match value {
        Value::String(_) => 1,
        Value::List(l) => l.node_count().max(1),
        Value::Hash(h) if h.encoding() == "listpack" => 1,
        Value::Hash(h) => h.len(),
        Value::Set(s) if s.encoding() != "hashtable" => 1,
        Value::Set(s) => s.len(),
        Value::ZSet(z) if z.encoding() == "listpack" => 1,
        Value::ZSet(z) => z.len(),
        Value::Stream(s) => {
            let groups = s.groups();
            let first_pel = groups.iter().next().map_or(0, |g| g.pel_count());
            s.node_count() + groups.len() * (1 + first_pel)
        }
    }
}

/// True when freeing `value` is worth a trip to the background thread.
pub fn is_big(value: &Value) -> bool {
    free_effort(value) > LAZYFREE_THRESHOLD
}

/// Something sent to the thread, with how many objects it counts for.
struct Job {
    /// Dropped on the thread.
    garbage: Box<dyn Send>,
    /// Objects (keys) it frees: `lazyfreed_objects` grows by this much.
    objects: u64,
}

/// The counters INFO reads, shared with the thread.
#[derive(Default)]
struct Counters {
    /// Objects sent and not freed yet.
    pending: AtomicU64,
    /// Objects freed by the thread.
    freed: AtomicU64,
}

/// The background freer: a thread started on first use, fed through a channel.
#[derive(Default)]
pub struct LazyFree {
    /// The thread's queue, once started.
    sender: Option<mpsc::Sender<Job>>,
    /// See [`Counters`].
    counters: Arc<Counters>,
}

impl LazyFree {
    /// Frees `value` in the background when [`free_effort`] says it is worth it, at once
    /// otherwise.
    pub fn free_value(&mut self, value: Value) {
        if is_big(&value) {
            self.send(Box::new(value), 1);
        }
    }

    /// Frees a database's contents ([`super::keyspace::Db::take_all`]) in the background,
    /// counted as one object per key (Redis's `emptyDbAsync`).
    pub fn free_db(&mut self, taken: TakenDb) {
        let objects = taken.keys.len() as u64;
        if objects > 0 {
            self.send(Box::new(taken), objects);
        }
    }

    /// Objects waiting to be freed (`lazyfree_pending_objects`).
    pub fn pending(&self) -> u64 {
        self.counters.pending.load(Ordering::Relaxed)
    }

    /// Objects freed in the background (`lazyfreed_objects`).
    pub fn freed(&self) -> u64 {
        self.counters.freed.load(Ordering::Relaxed)
    }

    /// CONFIG RESETSTAT: `lazyfreed_objects` starts again from 0.
    pub fn reset_stats(&self) {
        self.counters.freed.store(0, Ordering::Relaxed);
    }

    /// Queues `garbage` for the thread (started now if needed); frees it here when no
    /// thread can be had.
    fn send(&mut self, garbage: Box<dyn Send>, objects: u64) {
        if self.sender.is_none() {
            self.sender = self.start();
        }
        let Some(tx) = &self.sender else {
            return;
        };
        self.counters.pending.fetch_add(objects, Ordering::Relaxed);
        if let Err(mpsc::SendError(job)) = tx.send(Job { garbage, objects }) {
            // The thread is gone: free here, and start another next time.
            self.counters.pending.fetch_sub(objects, Ordering::Relaxed);
            self.sender = None;
            drop(job);
        }
    }

    /// Starts the thread; `None` (logged) when the system refuses one.
    fn start(&self) -> Option<mpsc::Sender<Job>> {
        let (tx, rx) = mpsc::channel::<Job>();
        let counters = self.counters.clone();
        let spawned = std::thread::Builder::new()
            .name("lazyfree".into())
            .spawn(move || {
                for job in rx {
                    drop(job.garbage);
                    counters.pending.fetch_sub(job.objects, Ordering::Relaxed);
                    counters.freed.fetch_add(job.objects, Ordering::Relaxed);
                }
            });
        match spawned {
            Ok(_) => Some(tx),
            Err(e) => {
                tracing::warn!(error = %e, "could not start the lazyfree thread; freeing inline");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::{NodeLimits, Stream, StreamId};

    fn wait_freed(lf: &LazyFree, n: u64) {
        for _ in 0..1000 {
            if lf.freed() == n && lf.pending() == 0 {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        panic!("freed {} pending {}", lf.freed(), lf.pending());
    }

    #[test]
    fn a_big_stream_goes_to_the_thread_and_a_small_one_does_not() {
        let mut lf = LazyFree::default();
        let limits = NodeLimits {
            max_bytes: 0,
            max_entries: 5,
        };
        let fields = [
            bytes::Bytes::from_static(b"f"),
            bytes::Bytes::from_static(b"v"),
        ];
        let mut big = Stream::new();
        for i in 1..=1000u64 {
            big.append(StreamId::new(i, 0), &fields, &limits);
        }
        assert!(free_effort(&Value::Stream(Box::new(big.clone()))) > LAZYFREE_THRESHOLD);
        lf.free_value(Value::Stream(Box::new(big)));
        wait_freed(&lf, 1);
        let mut small = Stream::new();
        small.append(StreamId::new(1, 0), &fields, &limits);
        lf.free_value(Value::Stream(Box::new(small)));
        assert_eq!((lf.freed(), lf.pending()), (1, 0));
        lf.reset_stats();
        assert_eq!(lf.freed(), 0);
    }
}
