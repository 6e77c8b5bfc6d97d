//! Replies held for the sync set (`min-sync-replicas`, `core/syncrepl.rs`): a
//! connection's batch of replies that shows the keyspace goes out only once every
//! member of the sync set acknowledged the stream offset of that moment, so no client
//! ever sees a write a failover could lose. One ACK releases every reply below it.
//!
//! ```text
//!  batch ran ─▶ appendfsync commit ─▶ hold: released >= offset? ──yes──▶ write replies
//!                                          │ no: wait (other connections run)
//!                                          ├─ members ACK past it ──────▶ write replies
//!                                          └─ timeout / set shrank ─────▶ errors instead
//! ```

use crate::core::{SharedCore, unix_ms};

/// The error a held reply becomes when the sync set did not acknowledge it in time (or
/// shrank meanwhile): the command's write, if any, may or may not survive a failover,
/// and it is never acknowledged later.
pub const TIMED_OUT: &[u8] = b"-TIMEOUT the sync replicas did not acknowledge in time (sync-replicas-timeout): the outcome of this command is unknown\r\n";

/// Waits until replies reflecting the stream as it is now may go out. `shows_data`:
/// the batch ran a command that read or wrote the keyspace (others, PING or INFO, never
/// wait). False when the wait timed out or the sync set changed under it: the replies
/// must become [`TIMED_OUT`] errors.
pub async fn hold(core: &SharedCore, shows_data: bool) -> bool {
    let (target, shrinks, mut rx, ticket, deadline) = {
        let mut c = core.borrow_mut();
        if !shows_data || !c.sync.on() || c.repl.is_replica() {
            return true;
        }
        let target = c.repl.offset;
        let release = c.sync.release();
        if release.upto >= target {
            return true;
        }
        let now = unix_ms();
        let ticket = c.sync.hold_begin(now);
        let deadline = now + c.sync.timeout_ms;
        (
            target,
            release.shrinks,
            c.sync.subscribe(),
            ticket,
            deadline,
        )
    };
    // No timer per held reply: the cron publishes the time while replies are held
    // (`SyncRepl::tick`), so the deadline is checked `hz` times a second.
    let waited = rx
        .wait_for(|r| r.shrinks != shrinks || r.upto >= target || r.now_ms >= deadline)
        .await
        .map(|r| *r);
    let released = matches!(waited, Ok(r) if r.shrinks == shrinks && r.upto >= target);
    core.borrow_mut().sync.hold_end(ticket, !released);
    released
}

/// Replaces each reply of a held batch that timed out with [`TIMED_OUT`]: `buf[..from]`
/// (messages queued before the batch) stays, and `marks` are the ends of the batch's
/// replies, in order (a command that replied nothing adds no error).
pub fn fail_replies(buf: &mut Vec<u8>, from: usize, marks: &[usize]) {
    let mut failed = buf[..from.min(buf.len())].to_vec();
    let mut start = from;
    for &end in marks {
        if end > start {
            failed.extend_from_slice(TIMED_OUT);
        }
        start = start.max(end);
    }
    *buf = failed;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_reply_of_a_failed_batch_becomes_one_error() {
        let mut buf = b">msg\r\n+OK\r\n:1\r\n".to_vec();
        // A message before the batch, then +OK, a command with no reply, :1.
        fail_replies(&mut buf, 6, &[11, 11, 15]);
        let mut want = b">msg\r\n".to_vec();
        want.extend_from_slice(TIMED_OUT);
        want.extend_from_slice(TIMED_OUT);
        assert_eq!(buf, want);
    }
}
