//! Pub/Sub fan-out written from the core: a subscriber's messages go into its socket
//! without waking its connection task.
//!
//! A message published to 10,000 subscribers used to be queued in 10,000 mailboxes, and
//! each connection task was woken, polled and made its own write. Redis instead appends
//! to each client's buffer and, before its event loop sleeps, walks the list of clients
//! with pending output and writes each one (`handleClientsWithPendingWrites`). This does
//! the same for subscribers whose task waits idle:
//!
//! ```text
//!  PUBLISH ─▶ subscriber idle (its task waits in select, nothing queued) and a sink?
//!               │ yes: append to its `pending` bytes; first bytes: note its id and
//!               │      wake the flusher (one task for the whole server)
//!               │ no:  its mailbox, as before (ClientMsg::Shared)
//!  flusher (after the publishing batch) ─▶ for each noted id: try_write(pending)
//!               ├─ all written: done, no task woken
//!               └─ socket full (or partly written): the rest goes to the front of the
//!                  mailbox, the client is closed to direct writes, its task writes it
//!  task wakes (a read, a mailbox message) ─▶ closes itself to direct writes and writes
//!               what is still pending first: every byte keeps its order
//! ```
//!
//! Order: bytes go to `pending` only while the task is idle and its mailbox empty, so
//! they always come before anything queued later; the task takes them before its next
//! reply or message, and the flusher's remainder goes to the front of the mailbox.
//! Output limits count pending bytes as queued bytes. A TLS connection has no sink (its
//! stream has state only its task may touch): its messages always use the mailbox.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// Largest pending buffer a subscriber keeps between messages.
const MAX_KEPT: usize = 16 * 1024;

/// A connection's socket as seen by the flusher: writes what fits now, never waits.
pub trait Sink {
    /// Writes as much of `buf` as the socket takes without blocking (`WouldBlock`
    /// when it takes nothing).
    fn try_write(&self, buf: &[u8]) -> std::io::Result<usize>;
}

/// One connection's side of direct writes (kept in its
/// [`OutputState`](super::limits::OutputState)).
#[derive(Default)]
pub struct DirectOutput {
    /// The socket, for plain TCP connections.
    sink: RefCell<Option<Rc<dyn Sink>>>,
    /// The task waits idle with nothing queued: messages may bypass it.
    open: Cell<bool>,
    /// Messages not yet written by the flusher (nor taken by the task).
    pending: RefCell<Vec<u8>>,
}

impl std::fmt::Debug for DirectOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectOutput")
            .field("sink", &self.sink.borrow().is_some())
            .field("open", &self.open.get())
            .field("pending", &self.pending.borrow().len())
            .finish()
    }
}

impl DirectOutput {
    /// Gives the flusher this connection's socket.
    pub fn set_sink(&self, sink: Rc<dyn Sink>) {
        *self.sink.borrow_mut() = Some(sink);
    }

    /// The task is about to wait with an empty mailbox: direct writes may begin.
    pub fn open(&self) {
        if self.sink.borrow().is_some() {
            self.open.set(true);
        }
    }

    /// The task woke up (or the flusher could not write everything): no more direct
    /// writes. Returns the bytes still pending, which must be written before anything
    /// else.
    pub fn close(&self) -> Vec<u8> {
        self.open.set(false);
        std::mem::take(&mut *self.pending.borrow_mut())
    }

    /// Whether a message may go to [`DirectOutput::push`] now.
    pub fn accepts(&self) -> bool {
        self.open.get()
    }

    /// Appends `bytes` for the flusher; true when they are the first pending (the
    /// client must be noted for the next flush).
    pub fn push(&self, bytes: &[u8]) -> bool {
        let mut pending = self.pending.borrow_mut();
        let first = pending.is_empty();
        pending.extend_from_slice(bytes);
        first
    }

    /// The flusher's step for this client: writes what the socket takes. Returns
    /// (bytes written or dropped, the rest that must go to the task). A broken socket
    /// drops its bytes: the task sees the error on its next read.
    pub fn flush(&self) -> (usize, Vec<u8>) {
        if !self.open.get() {
            return (0, Vec::new());
        }
        let mut pending = self.pending.borrow_mut();
        let sink = self.sink.borrow();
        let Some(sink) = sink.as_ref() else {
            self.open.set(false);
            return (0, std::mem::take(&mut *pending));
        };
        let len = pending.len();
        let mut done = 0;
        let mut broken = false;
        while done < len {
            match sink.try_write(&pending[done..]) {
                Ok(0) => broken = true,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => broken = true,
            }
            if broken {
                done = len;
            }
        }
        let rest = if done < len {
            self.open.set(false);
            pending[done..].to_vec()
        } else {
            Vec::new()
        };
        // The buffer keeps its capacity for the next message (one allocation per
        // subscriber, not one per message), unless a burst made it large.
        pending.clear();
        if pending.capacity() > MAX_KEPT {
            pending.shrink_to(MAX_KEPT / 16);
        }
        (done, rest)
    }
}

impl super::Core {
    /// Writes the pending messages of every client noted since the last flush (the
    /// flusher task runs this once per batch that published).
    pub fn flush_direct(&mut self) {
        let noted = std::mem::take(&mut self.direct_pending);
        for (id, output) in noted {
            // A client over its output limit is closing: nothing more goes out.
            if output.killed() {
                continue;
            }
            let (written, rest) = output.direct.flush();
            output.count_written(written);
            output.remove_queued(written);
            self.stats.net_output_bytes += written as u64;
            if !rest.is_empty() {
                match self.clients.get(&id) {
                    Some(client) => client.requeue_first(rest),
                    None => output.remove_queued(rest.len()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A socket that takes at most `room` bytes, then `WouldBlock`.
    struct Tight {
        room: Cell<usize>,
        got: RefCell<Vec<u8>>,
    }

    impl Sink for Tight {
        fn try_write(&self, buf: &[u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.room.get());
            if n == 0 {
                return Err(std::io::ErrorKind::WouldBlock.into());
            }
            self.room.set(self.room.get() - n);
            self.got.borrow_mut().extend_from_slice(&buf[..n]);
            Ok(n)
        }
    }

    #[test]
    fn pending_bytes_are_written_in_order_and_the_rest_closes_direct_writes() {
        let sink = Rc::new(Tight {
            room: Cell::new(5),
            got: RefCell::new(Vec::new()),
        });
        let d = DirectOutput::default();
        assert!(!d.accepts(), "closed until the task opens it");
        d.open();
        assert!(!d.accepts(), "no sink (TLS): never open");
        d.set_sink(sink.clone());
        d.open();
        assert!(d.accepts());
        assert!(d.push(b"abc"), "the first bytes note the client");
        assert!(!d.push(b"def"));
        let (written, rest) = d.flush();
        assert_eq!((written, rest.as_slice()), (5, b"f".as_slice()));
        assert_eq!(sink.got.borrow().as_slice(), b"abcde");
        assert!(!d.accepts(), "a full socket hands the rest to the task");
        // The task takes whatever is still pending when it wakes.
        d.open();
        d.push(b"xy");
        assert_eq!(d.close(), b"xy");
        assert!(!d.accepts());
        assert_eq!(d.flush(), (0, Vec::new()), "closed: the flusher leaves it");
    }
}
