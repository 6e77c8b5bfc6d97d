//! Per-client resource limits: the idle `timeout`, `tcp-keepalive`, and the output
//! buffer limits of `client-output-buffer-limit` (classes `normal` and `pubsub`), as the core caches
//! them from the config for the connection tasks to read.
//!
//! A client's *pending output* is every reply byte produced for it and not yet handed to
//! the socket:
//!
//! ```text
//!   core ──execute──▶ RespWriter (replies of the current batch) ─┐
//!   core ──Client::send──▶ mailbox (MONITOR lines, blocked      ├─▶ socket
//!                                   replies)                      ┘
//!   pending = bytes in the batch's writer + bytes queued in the mailbox
//! ```
//!
//! [`OutputState`] is shared (`Rc`) between the [`Client`](super::client::Client) in the
//! core and its connection task. The core adds what it queues, the connection subtracts
//! what it wrote, and both ask [`OutputState::check`] whether the client went over its
//! limit: above the hard limit at once, or above the soft limit for longer than its
//! seconds (Redis: `checkClientOutputBufferLimits`). A client over its limit is killed:
//! its pending replies are dropped and the connection closed, even while the task is
//! stuck writing to a peer that stopped reading.

use super::waker_slot::WakerSlot;
use crate::config::{BufferLimit, Config};
use std::cell::Cell;
use std::task::Poll;
use std::time::Duration;
use tokio::time::Instant;

/// The limits in force for client connections, read from the config at start and after
/// every `CONFIG SET` (`Core::refresh_config_cache`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientLimits {
    /// Close a client idle for this long (`timeout`; `None` = never). Blocked and
    /// MONITOR clients are never closed for idleness.
    pub timeout: Option<Duration>,
    /// Keepalive idle time for new connections (`tcp-keepalive`; `None` = off).
    pub tcp_keepalive: Option<Duration>,
    /// Output buffer limit of normal clients.
    pub output: BufferLimit,
    /// Output buffer limit of clients in Pub/Sub mode (class `pubsub`: subscribed to
    /// anything, as Redis's `getClientType` decides).
    pub pubsub: BufferLimit,
    /// `maxmemory` in bytes (0 = none).
    pub maxmemory: u64,
    /// What the request parser accepts (`proto-max-bulk-len`,
    /// `client-query-buffer-limit`), set on each connection's parser every batch.
    pub parser: crate::resp::parser::ParserLimits,
    /// How long the server keeps polling the sockets after the last batch
    /// (`idle-poll-us`; zero = off). The front end's poller reads it with each batch.
    pub idle_poll: Duration,
}

impl ClientLimits {
    /// The limits `config` sets.
    pub fn from_config(config: &Config) -> ClientLimits {
        let secs = |name: &str| {
            u64::try_from(config.get_i64(name))
                .ok()
                .filter(|&s| s > 0)
                .map(Duration::from_secs)
        };
        ClientLimits {
            timeout: secs("timeout"),
            tcp_keepalive: secs("tcp-keepalive"),
            output: config.output_buffer_limit("normal"),
            pubsub: config.output_buffer_limit("pubsub"),
            maxmemory: u64::try_from(config.get_i64("maxmemory")).unwrap_or(0),
            parser: crate::resp::parser::ParserLimits {
                proto_max_bulk_len: config.get_i64("proto-max-bulk-len").max(0) as u64,
                client_query_buffer_limit: config.get_i64("client-query-buffer-limit").max(0)
                    as usize,
            },
            idle_poll: Duration::from_micros(config.get_i64("idle-poll-us").max(0) as u64),
        }
    }
}

/// One client's pending output, shared by the core and the connection task.
#[derive(Debug, Default)]
pub struct OutputState {
    /// Bytes queued in the mailbox to the connection and not yet written.
    queued: Cell<usize>,
    /// Since when the pending output has been above the soft limit (Redis:
    /// `obuf_soft_limit_reached_time`); `None` while below it.
    soft_since: Cell<Option<Instant>>,
    /// Set once the client went over its limit; the connection closes.
    killed: Cell<bool>,
    /// The connection task's waker, left by [`OutputState::wait_killed`] and woken when
    /// `killed` is set. A plain cell rather than a `Notify`: everything runs on one
    /// thread, and the task waits on it around every read and write, where a `Notify`
    /// costs a lock and a waiter-list insertion and removal (~230 instructions per
    /// unpipelined request under callgrind).
    kill_waker: WakerSlot,
    /// Bytes read from the connection (CLIENT LIST `tot-net-in`): one add per read.
    net_in: Cell<u64>,
    /// Bytes written to it (`tot-net-out`): one add per write.
    net_out: Cell<u64>,
    /// Reads that returned data (`read-events`).
    read_events: Cell<u64>,
    /// Pub/Sub messages written by the core while the task waits
    /// (`core/direct_write.rs`).
    pub direct: super::direct_write::DirectOutput,
}

impl OutputState {
    /// Counts one read of `n` bytes from the connection.
    #[inline]
    pub fn count_read(&self, n: usize) {
        self.net_in.set(self.net_in.get() + n as u64);
        self.read_events.set(self.read_events.get() + 1);
    }

    /// Counts `n` bytes written to the connection.
    #[inline]
    pub fn count_written(&self, n: usize) {
        self.net_out.set(self.net_out.get() + n as u64);
    }

    /// (bytes read, bytes written, reads) so far.
    pub fn net_totals(&self) -> (u64, u64, u64) {
        (
            self.net_in.get(),
            self.net_out.get(),
            self.read_events.get(),
        )
    }

    /// Bytes queued in the mailbox.
    pub fn queued(&self) -> usize {
        self.queued.get()
    }

    /// Records `n` more bytes queued in the mailbox.
    pub fn add_queued(&self, n: usize) {
        self.queued.set(self.queued.get().saturating_add(n));
    }

    /// Records `n` queued bytes written (or dropped).
    pub fn remove_queued(&self, n: usize) {
        self.queued.set(self.queued.get().saturating_sub(n));
    }

    /// True once the client went over its output limit.
    pub fn killed(&self) -> bool {
        self.killed.get()
    }

    /// Resolves when the client is killed for its output. Only one task (the client's
    /// connection) waits; its waker is kept until replaced, so a wait that was dropped
    /// at most causes one spurious wake-up of that task.
    pub fn wait_killed(&self) -> impl std::future::Future<Output = ()> + '_ {
        std::future::poll_fn(move |cx| {
            if self.killed.get() {
                return Poll::Ready(());
            }
            self.kill_waker.register(cx);
            Poll::Pending
        })
    }

    /// Checks `pending` bytes (the batch's replies plus the queue) against `limit` now;
    /// true (and the client marked killed, its task woken) when the client must be
    /// closed. Costs nothing more than a flag test when no limit is set, and reads the
    /// clock only while above the soft limit.
    pub fn check(&self, limit: BufferLimit, pending: usize) -> bool {
        if self.killed.get() {
            return true;
        }
        if limit.is_unlimited() {
            return false;
        }
        self.check_at(limit, pending, Instant::now)
    }

    /// [`OutputState::check`] with the clock `now`, read only above the soft limit
    /// (tests move it).
    pub fn check_at(&self, limit: BufferLimit, pending: usize, now: impl Fn() -> Instant) -> bool {
        if self.killed.get() {
            return true;
        }
        let pending = pending as u64;
        let mut over = limit.hard > 0 && pending >= limit.hard;
        if limit.soft > 0 && pending >= limit.soft {
            let now = now();
            match self.soft_since.get() {
                None => self.soft_since.set(Some(now)),
                Some(since) => {
                    if now.saturating_duration_since(since)
                        > Duration::from_secs(limit.soft_seconds)
                    {
                        over = true;
                    }
                }
            }
        } else {
            self.soft_since.set(None);
        }
        if over {
            self.killed.set(true);
            self.kill_waker.wake();
        }
        over
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: BufferLimit = BufferLimit {
        hard: 1000,
        soft: 100,
        soft_seconds: 2,
    };

    #[test]
    fn hard_limit_kills_at_once() {
        let s = OutputState::default();
        let now = Instant::now();
        assert!(!s.check_at(LIMIT, 999, || now));
        assert!(s.check_at(LIMIT, 1000, || now));
        assert!(s.killed());
        // Once killed, always killed.
        assert!(s.check_at(LIMIT, 0, || now));
    }

    #[test]
    fn soft_limit_kills_only_after_its_seconds() {
        let s = OutputState::default();
        let t0 = Instant::now();
        assert!(!s.check_at(LIMIT, 200, || t0));
        assert!(!s.check_at(LIMIT, 200, || t0 + Duration::from_secs(2)));
        // Dropping below the soft limit restarts the clock.
        assert!(!s.check_at(LIMIT, 50, || t0 + Duration::from_secs(2)));
        assert!(!s.check_at(LIMIT, 200, || t0 + Duration::from_secs(3)));
        assert!(!s.check_at(LIMIT, 200, || t0 + Duration::from_secs(5)));
        assert!(s.check_at(LIMIT, 200, || t0 + Duration::from_millis(5001)));
    }

    #[test]
    fn zero_limits_never_kill() {
        let s = OutputState::default();
        assert!(!s.check(BufferLimit::default(), usize::MAX));
    }

    #[test]
    fn limits_follow_the_config() {
        let mut c = Config::default();
        assert_eq!(ClientLimits::from_config(&c).timeout, None);
        assert_eq!(
            ClientLimits::from_config(&c).tcp_keepalive,
            Some(Duration::from_secs(300))
        );
        c.set_many(&[
            ("timeout".into(), "7".into()),
            ("tcp-keepalive".into(), "0".into()),
            ("maxmemory".into(), "1mb".into()),
        ])
        .unwrap();
        let l = ClientLimits::from_config(&c);
        assert_eq!(l.timeout, Some(Duration::from_secs(7)));
        assert_eq!(l.tcp_keepalive, None);
        assert_eq!(l.maxmemory, 1 << 20);
    }
}
