//! The slow log (Redis: `slowlog.c`): the last `slowlog-max-len` commands that took at
//! least `slowlog-log-slower-than` microseconds, newest first.
//!
//! [`Core::call`](super::Core::call) measures each command's time for INFO commandstats
//! and hands it to [`SlowLog::push`], which costs one comparison for a fast command. An
//! entry keeps a trimmed copy of the arguments, as Redis does, so that a huge command
//! does not pin its memory here:
//!
//! ```text
//! argv: at most SLOWLOG_ENTRY_MAX_ARGC (32) arguments; when there were more, the 32nd
//!       becomes "... (N more arguments)" (N counts it too)
//! each: at most SLOWLOG_ENTRY_MAX_STRING (128) bytes, then "... (N more bytes)"
//! ```
//!
//! Invariants: `entries.len() <= max_len` after every push; ids grow by one per entry and
//! are never reused, not even after `SLOWLOG RESET`.

use bytes::Bytes;
use std::collections::VecDeque;

/// Most arguments an entry keeps (slowlog.h `SLOWLOG_ENTRY_MAX_ARGC`).
pub const SLOWLOG_ENTRY_MAX_ARGC: usize = 32;
/// Most bytes of one argument an entry keeps (slowlog.h `SLOWLOG_ENTRY_MAX_STRING`).
pub const SLOWLOG_ENTRY_MAX_STRING: usize = 128;

/// One logged command (Redis: `slowlogEntry`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlowLogEntry {
    /// Unique, increasing id.
    pub id: u64,
    /// Unix seconds when the command was logged.
    pub time: u64,
    /// Its duration in microseconds.
    pub duration: u64,
    /// The arguments, trimmed as the module doc draws.
    pub argv: Vec<Bytes>,
    /// The client's `ip:port`.
    pub peer: String,
    /// The client's name (empty when it has none).
    pub name: Bytes,
}

/// The log and its two settings.
#[derive(Debug)]
pub struct SlowLog {
    /// Newest first.
    entries: VecDeque<SlowLogEntry>,
    /// The id the next entry gets.
    next_id: u64,
    /// `slowlog-log-slower-than`: microseconds; negative turns the log off.
    pub slower_than: i64,
    /// `slowlog-max-len`: entries kept.
    pub max_len: usize,
}

impl Default for SlowLog {
    fn default() -> Self {
        SlowLog {
            entries: VecDeque::new(),
            next_id: 0,
            slower_than: 10_000,
            max_len: 128,
        }
    }
}

impl SlowLog {
    /// Would a command of `duration` microseconds be logged? The hot path's only cost.
    #[inline]
    pub fn wants(&self, duration: u64) -> bool {
        self.slower_than >= 0 && duration >= self.slower_than as u64
    }

    /// Logs a command if it was slow enough (Redis: `slowlogPushEntryIfNeeded`), then
    /// trims the log to `max_len`. `argv` yields the arguments as they should be shown
    /// (credentials already redacted).
    pub fn push<'a>(
        &mut self,
        argv: impl ExactSizeIterator<Item = &'a [u8]>,
        duration: u64,
        now_secs: u64,
        peer: &str,
        name: Option<&Bytes>,
    ) {
        if self.wants(duration) {
            let entry = SlowLogEntry {
                id: self.next_id,
                time: now_secs,
                duration,
                argv: trimmed_argv(argv),
                peer: peer.to_string(),
                name: name.cloned().unwrap_or_default(),
            };
            self.next_id += 1;
            self.entries.push_front(entry);
        }
        self.trim();
    }

    /// Drops the oldest entries beyond `max_len` (also after `CONFIG SET slowlog-max-len`).
    pub fn trim(&mut self) {
        self.entries.truncate(self.max_len);
    }

    /// Entries, newest first.
    pub fn iter(&self) -> impl Iterator<Item = &SlowLogEntry> {
        self.entries.iter()
    }

    /// Number of entries (SLOWLOG LEN).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing is logged.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Forgets every entry (SLOWLOG RESET); ids keep counting.
    pub fn reset(&mut self) {
        self.entries.clear();
    }

    /// Heap bytes the entries hold, roughly (MEMORY STATS counts it as overhead).
    pub fn memory(&self) -> usize {
        self.entries
            .iter()
            .map(|e| {
                std::mem::size_of::<SlowLogEntry>()
                    + e.argv.iter().map(|a| a.len() + 32).sum::<usize>()
                    + e.peer.len()
                    + e.name.len()
            })
            .sum()
    }
}

/// The arguments an entry keeps: Redis's limits on their number and length.
fn trimmed_argv<'a>(argv: impl ExactSizeIterator<Item = &'a [u8]>) -> Vec<Bytes> {
    let argc = argv.len();
    let kept = argc.min(SLOWLOG_ENTRY_MAX_ARGC);
    let mut out = Vec::with_capacity(kept);
    for (j, arg) in argv.take(kept).enumerate() {
        if kept != argc && j == kept - 1 {
            out.push(Bytes::from(format!(
                "... ({} more arguments)",
                argc - kept + 1
            )));
        } else if arg.len() > SLOWLOG_ENTRY_MAX_STRING {
            let mut s = arg[..SLOWLOG_ENTRY_MAX_STRING].to_vec();
            s.extend_from_slice(
                format!("... ({} more bytes)", arg.len() - SLOWLOG_ENTRY_MAX_STRING).as_bytes(),
            );
            out.push(Bytes::from(s));
        } else {
            out.push(Bytes::copy_from_slice(arg));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push(log: &mut SlowLog, args: &[&[u8]], duration: u64) {
        log.push(args.iter().copied(), duration, 1, "127.0.0.1:1", None);
    }

    #[test]
    fn commands_at_or_above_the_threshold_are_logged_newest_first() {
        let mut log = SlowLog {
            slower_than: 100,
            ..SlowLog::default()
        };
        push(&mut log, &[b"a"], 99);
        push(&mut log, &[b"b"], 100);
        push(&mut log, &[b"c"], 500);
        let names: Vec<_> = log.iter().map(|e| (e.id, e.argv[0].clone())).collect();
        assert_eq!(names, vec![(1, Bytes::from("c")), (0, Bytes::from("b"))]);
    }

    #[test]
    fn a_negative_threshold_disables_and_zero_logs_everything() {
        let mut log = SlowLog {
            slower_than: -1,
            ..SlowLog::default()
        };
        push(&mut log, &[b"a"], u64::MAX);
        assert!(log.is_empty());
        log.slower_than = 0;
        push(&mut log, &[b"a"], 0);
        assert_eq!(log.len(), 1);
    }

    #[test]
    fn the_log_keeps_max_len_entries_and_ids_survive_reset() {
        let mut log = SlowLog {
            slower_than: 0,
            max_len: 2,
            ..SlowLog::default()
        };
        for _ in 0..5 {
            push(&mut log, &[b"x"], 1);
        }
        assert_eq!(log.len(), 2);
        log.reset();
        push(&mut log, &[b"x"], 1);
        assert_eq!(log.iter().next().map(|e| e.id), Some(5));
    }

    #[test]
    fn long_commands_are_trimmed_as_redis_trims_them() {
        let many: Vec<Vec<u8>> = (0..40).map(|i| i.to_string().into_bytes()).collect();
        let argv = trimmed_argv(many.iter().map(|a| a.as_slice()));
        assert_eq!(argv.len(), 32);
        assert_eq!(argv[30], Bytes::from("30"));
        assert_eq!(argv[31], Bytes::from("... (9 more arguments)"));
        let long = vec![b'a'; 130];
        let argv = trimmed_argv([long.as_slice()].into_iter());
        assert_eq!(&argv[0][..128], &long[..128]);
        assert_eq!(&argv[0][128..], b"... (2 more bytes)");
        let exact: Vec<&[u8]> = vec![b"x"; 32];
        assert_eq!(trimmed_argv(exact.into_iter()).len(), 32);
    }
}
