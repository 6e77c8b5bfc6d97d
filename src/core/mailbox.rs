//! The queue from the core to one connection task: replies for a client that was
//! blocked, MONITOR lines, Pub/Sub messages, and the order to close.
//!
//! The whole server runs on one thread, and each queue has one sender (the `Client`
//! in the core) and one receiver (its connection task), so the queue is a `VecDeque`
//! in a `RefCell` with the receiving task's waker next to it. A tokio `mpsc` channel did
//! the same with atomics and a block list, and the connection task polls its queue
//! around every read: ~50 instructions per request under callgrind that bought nothing
//! here.
//!
//! ```text
//!   Sender (in Client) ──send──▶ queue: VecDeque<ClientMsg> ──recv──▶ Receiver (task)
//!                         └──── wakes the waker the receiver left ◀──┘
//! ```
//!
//! [`Receiver::recv`] is cancel-safe: a message leaves the queue only in the poll that
//! returns it. `recv` answers `None` once the sender is gone and the queue is empty;
//! `send` fails once the receiver is gone.

use super::waker_slot::WakerSlot;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::rc::Rc;
use std::task::Poll;

/// A message from the core to a connection task, outside the request/reply rhythm.
#[derive(Debug)]
pub enum ClientMsg {
    /// Bytes to write (a MONITOR line, or the reply of a blocked command once served).
    Write(Vec<u8>),
    /// Bytes to write that other clients get too (a Pub/Sub message frame, built once
    /// per publish and shared by every subscriber with the same protocol).
    Shared(bytes::Bytes),
    /// The client was blocked and is now served: write these bytes and resume reading.
    Unblocked(Vec<u8>),
    /// Close the connection (CLIENT KILL, SHUTDOWN).
    Close,
    /// The client ran no command for `timeout` (the cron's check): the connection
    /// closes if it read and wrote nothing for that long either, else it goes on. A
    /// connection that started waiting before `timeout` was set learns of it this way.
    IdleCheck,
}

/// The state both ends share.
#[derive(Debug, Default)]
struct Shared {
    queue: RefCell<VecDeque<ClientMsg>>,
    /// The receiving task's waker, left by its last pending `recv`.
    waker: WakerSlot,
    sender_gone: Cell<bool>,
    receiver_gone: Cell<bool>,
}

/// The core's end of a client's queue.
#[derive(Debug)]
pub struct Sender(Rc<Shared>);

/// The connection task's end of its queue.
#[derive(Debug)]
pub struct Receiver(Rc<Shared>);

/// A new empty queue.
pub fn mailbox() -> (Sender, Receiver) {
    let shared = Rc::new(Shared::default());
    (Sender(shared.clone()), Receiver(shared))
}

impl Sender {
    /// Queues `msg` and wakes the receiver; gives the message back when the receiver is
    /// gone (the connection ended).
    pub fn send(&self, msg: ClientMsg) -> Result<(), ClientMsg> {
        self.queue(msg, VecDeque::push_back)
    }

    /// Queues `msg` with `push` (at the back or the front) and wakes the receiver.
    fn queue(
        &self,
        msg: ClientMsg,
        push: fn(&mut VecDeque<ClientMsg>, ClientMsg),
    ) -> Result<(), ClientMsg> {
        if self.0.receiver_gone.get() {
            return Err(msg);
        }
        push(&mut self.0.queue.borrow_mut(), msg);
        self.0.waker.wake();
        Ok(())
    }
}

impl Sender {
    /// Queues `msg` ahead of everything queued and wakes the receiver (bytes that were
    /// due before them: the rest of a direct write, `core/direct_write.rs`).
    pub fn send_front(&self, msg: ClientMsg) -> Result<(), ClientMsg> {
        self.queue(msg, VecDeque::push_front)
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        self.0.sender_gone.set(true);
        self.0.waker.wake();
    }
}

impl Receiver {
    /// The next message, or `None` once the sender is gone and nothing is left.
    pub fn recv(&mut self) -> impl Future<Output = Option<ClientMsg>> + '_ {
        std::future::poll_fn(move |cx| {
            let shared = &self.0;
            if let Some(msg) = shared.queue.borrow_mut().pop_front() {
                return Poll::Ready(Some(msg));
            }
            if shared.sender_gone.get() {
                return Poll::Ready(None);
            }
            shared.waker.register(cx);
            Poll::Pending
        })
    }
}

impl Receiver {
    /// Nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.0.queue.borrow().is_empty()
    }

    /// The next message if it is bytes to write ([`ClientMsg::Write`] or
    /// [`ClientMsg::Shared`]), without waiting: the connection gathers the writes queued
    /// behind the one it received into a single socket write (a subscriber of a busy
    /// channel gets many messages per wake-up).
    pub fn try_recv_write(&mut self) -> Option<ClientMsg> {
        let mut queue = self.0.queue.borrow_mut();
        match queue.front() {
            Some(ClientMsg::Write(_)) | Some(ClientMsg::Shared(_)) => queue.pop_front(),
            _ => None,
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.0.receiver_gone.set(true);
        self.0.queue.borrow_mut().clear();
        self.0.waker.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local<F: Future>(f: F) -> F::Output {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        tokio::task::LocalSet::new().block_on(&rt, f)
    }

    fn write(s: &'static str) -> ClientMsg {
        ClientMsg::Write(s.as_bytes().to_vec())
    }

    fn text(m: Option<ClientMsg>) -> String {
        match m {
            Some(ClientMsg::Write(b)) => format!("write {}", String::from_utf8_lossy(&b)),
            Some(ClientMsg::Unblocked(b)) => format!("unblocked {}", String::from_utf8_lossy(&b)),
            Some(ClientMsg::Shared(b)) => format!("shared {}", String::from_utf8_lossy(&b)),
            Some(ClientMsg::Close) => "close".into(),
            Some(ClientMsg::IdleCheck) => "idle check".into(),
            None => "none".into(),
        }
    }

    #[test]
    fn messages_arrive_in_order_and_wake_a_waiting_receiver() {
        local(async {
            let (tx, mut rx) = mailbox();
            let reader = tokio::task::spawn_local(async move {
                let mut got = Vec::new();
                loop {
                    let m = rx.recv().await;
                    let done = m.is_none();
                    got.push(text(m));
                    if done {
                        return got;
                    }
                }
            });
            // The reader is parked on an empty queue before anything is sent.
            tokio::task::yield_now().await;
            tx.send(write("a")).expect("receiver alive");
            tokio::task::yield_now().await;
            tx.send(ClientMsg::Unblocked(b"b".to_vec()))
                .expect("receiver alive");
            tx.send(ClientMsg::Close).expect("receiver alive");
            drop(tx);
            let got = reader.await.expect("reader finished");
            assert_eq!(got, ["write a", "unblocked b", "close", "none"]);
        });
    }

    #[test]
    fn queued_writes_are_taken_up_to_the_first_other_message() {
        let (tx, mut rx) = mailbox();
        tx.send(write("a")).expect("receiver alive");
        tx.send(ClientMsg::Shared(bytes::Bytes::from_static(b"b")))
            .expect("receiver alive");
        tx.send(ClientMsg::Close).expect("receiver alive");
        assert_eq!(text(rx.try_recv_write()), "write a");
        assert_eq!(text(rx.try_recv_write()), "shared b");
        assert_eq!(text(rx.try_recv_write()), "none");
        local(async move {
            assert_eq!(text(rx.recv().await), "close");
        });
    }

    #[test]
    fn a_dropped_receiver_refuses_messages_and_a_cancelled_recv_loses_none() {
        local(async {
            let (tx, mut rx) = mailbox();
            // A recv that is polled once and dropped (as a losing select! branch) takes
            // nothing out of the queue.
            let mut fut = Box::pin(rx.recv());
            let waker = std::task::Waker::noop();
            let mut cx = std::task::Context::from_waker(waker);
            assert!(fut.as_mut().poll(&mut cx).is_pending());
            drop(fut);
            tx.send(write("kept")).expect("receiver alive");
            assert_eq!(text(rx.recv().await), "write kept");
            drop(rx);
            assert!(matches!(tx.send(write("late")), Err(ClientMsg::Write(_))));
        });
    }
}
