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
//!               │ yes: its `pending` (the shared frame, or a copy after it); first: note it and
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

use crate::util::prefetch;
use bytes::{Bytes, BytesMut};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// A connection's socket as seen by the flusher: writes what fits now, never waits.
pub trait Sink {
    /// Writes as much of `buf` as the socket takes without blocking (`WouldBlock`
    /// when it takes nothing).
    fn try_write(&self, buf: &[u8]) -> std::io::Result<usize>;

    /// Asks for what [`Sink::try_write`] will read to be brought into the caches
    /// ([`prefetch`]); nothing by default.
    fn prefetch(&self) {}
}

/// The messages waiting for the flusher. A fan-out usually leaves one message per
/// subscriber between two flushes: that one is the publisher's encoded frame itself,
/// shared by every subscriber (no copy, no buffer of the subscriber's own to touch);
/// a second message before the flush makes it a buffer of its own.
#[derive(Debug, Default)]
enum Pending {
    #[default]
    Empty,
    /// One message: the frame shared with the other subscribers.
    One(Bytes),
    /// Several messages, in order.
    Many(BytesMut),
}

impl Pending {
    fn len(&self) -> usize {
        match self {
            Pending::Empty => 0,
            Pending::One(b) => b.len(),
            Pending::Many(b) => b.len(),
        }
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            Pending::Empty => &[],
            Pending::One(b) => b,
            Pending::Many(b) => b,
        }
    }

    /// Everything pending, leaving nothing.
    fn take(&mut self) -> Bytes {
        match std::mem::take(self) {
            Pending::Empty => Bytes::new(),
            Pending::One(b) => b,
            Pending::Many(b) => b.freeze(),
        }
    }
}

/// One connection's side of direct writes (kept in its
/// [`OutputState`](super::limits::OutputState)).
#[derive(Default)]
pub struct DirectOutput {
    /// The task waits idle with nothing queued: messages may bypass it.
    open: Cell<bool>,
    /// Messages not yet written by the flusher (nor taken by the task).
    pending: RefCell<Pending>,
    /// The socket, for plain TCP connections.
    sink: RefCell<Option<Rc<dyn Sink>>>,
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
    pub fn close(&self) -> Bytes {
        self.open.set(false);
        self.pending.borrow_mut().take()
    }

    /// Whether a message may go to [`DirectOutput::push`] now.
    pub fn accepts(&self) -> bool {
        self.open.get()
    }

    /// Appends the message `frame` for the flusher (sharing it when nothing else is
    /// pending); true when it is the first pending (the client must be noted for the
    /// next flush).
    pub fn push(&self, frame: &Bytes) -> bool {
        let mut pending = self.pending.borrow_mut();
        match &mut *pending {
            Pending::Empty => {
                *pending = Pending::One(frame.clone());
                return true;
            }
            Pending::One(first) => {
                let mut both = BytesMut::with_capacity(first.len() + frame.len());
                both.extend_from_slice(first);
                both.extend_from_slice(frame);
                *pending = Pending::Many(both);
            }
            Pending::Many(all) => all.extend_from_slice(frame),
        }
        false
    }

    /// The flusher's step for this client: writes what the socket takes. Returns
    /// (bytes written or dropped, the rest that must go to the task). A broken socket
    /// drops its bytes: the task sees the error on its next read.
    pub fn flush(&self) -> (usize, Bytes) {
        if !self.open.get() {
            return (0, Bytes::new());
        }
        let mut pending = self.pending.borrow_mut();
        let sink = self.sink.borrow();
        let Some(sink) = sink.as_ref() else {
            self.open.set(false);
            return (0, pending.take());
        };
        let bytes = pending.as_slice();
        let len = bytes.len();
        let mut done = 0;
        while done < len {
            match sink.try_write(&bytes[done..]) {
                Ok(0) => done = len,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => done = len,
            }
        }
        let all = pending.take();
        if done < len {
            self.open.set(false);
            return (done, all.slice(done..));
        }
        (done, Bytes::new())
    }

    /// Asks the CPU to bring this client's sink (`deep`: what the sink points to)
    /// into its caches: the flusher calls it for the next clients before writing the
    /// current one, so the cache misses of a walk over thousands of subscribers overlap
    /// with a system call instead of following it.
    fn prefetch_sink(&self, deep: bool) {
        if let Ok(sink) = self.sink.try_borrow()
            && let Some(sink) = sink.as_ref()
        {
            if deep {
                sink.prefetch();
            } else {
                prefetch(Rc::as_ptr(sink));
            }
        }
    }
}

impl super::Core {
    /// Writes the pending messages of every client noted since the last flush (the
    /// flusher task runs this once per batch that published).
    pub fn flush_direct(&mut self) {
        let noted = std::mem::take(&mut self.direct_pending);
        for (k, (id, output)) in noted.iter().enumerate() {
            // A pipeline of prefetches, one hop per client: three clients ahead, their
            // state; two ahead, their sink (the state came a step ago); one ahead, the
            // socket behind the sink.
            if let Some((_, later)) = noted.get(k + 3) {
                prefetch(Rc::as_ptr(later));
                prefetch(std::ptr::from_ref(&later.direct));
            }
            if let Some((_, later)) = noted.get(k + 2) {
                later.direct.prefetch_sink(false);
            }
            if let Some((_, next)) = noted.get(k + 1) {
                next.direct.prefetch_sink(true);
            }
            // A client over its output limit is closing: nothing more goes out.
            if output.killed() {
                continue;
            }
            let (written, rest) = output.direct.flush();
            output.count_written(written);
            output.remove_queued(written);
            self.stats.net_output_bytes += written as u64;
            if !rest.is_empty() {
                match self.clients.get(id) {
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
        assert!(
            d.push(&Bytes::from_static(b"abc")),
            "the first bytes note the client"
        );
        assert!(!d.push(&Bytes::from_static(b"def")));
        let (written, rest) = d.flush();
        assert_eq!((written, &rest[..]), (5, b"f".as_slice()));
        assert_eq!(sink.got.borrow().as_slice(), b"abcde");
        assert!(!d.accepts(), "a full socket hands the rest to the task");
        // The task takes whatever is still pending when it wakes.
        d.open();
        d.push(&Bytes::from_static(b"xy"));
        assert_eq!(&d.close()[..], b"xy");
        assert!(!d.accepts());
        assert_eq!(
            d.flush(),
            (0, Bytes::new()),
            "closed: the flusher leaves it"
        );
    }

    /// One pending message is the publisher's frame itself; more make a buffer of the
    /// client's own, in order, and the frame is left as it was.
    #[test]
    fn one_message_is_shared_and_more_are_concatenated_in_order() {
        let sink = Rc::new(Tight {
            room: Cell::new(usize::MAX),
            got: RefCell::new(Vec::new()),
        });
        let d = DirectOutput::default();
        d.set_sink(sink.clone());
        d.open();
        let frame = Bytes::from(b"*3\r\n$7\r\nmessage\r\n".to_vec());
        assert!(d.push(&frame));
        assert!(
            matches!(&*d.pending.borrow(), Pending::One(b) if b.as_ptr() == frame.as_ptr()),
            "the first message is not copied"
        );
        assert_eq!(d.flush(), (frame.len(), Bytes::new()));
        assert!(d.accepts(), "all written: still open");
        for part in [&b"1"[..], b"22", b"333"] {
            d.push(&Bytes::copy_from_slice(part));
        }
        assert_eq!(d.pending.borrow().len(), 6);
        assert_eq!(d.flush(), (6, Bytes::new()));
        let mut want = frame.to_vec();
        want.extend_from_slice(b"122333");
        assert_eq!(sink.got.borrow().as_slice(), want.as_slice());
        assert_eq!(&frame[..], b"*3\r\n$7\r\nmessage\r\n");
    }
}
