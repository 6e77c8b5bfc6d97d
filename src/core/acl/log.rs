//! The ACL log (`ACL LOG`): recent permission denials and authentication failures.
//!
//! Newest entry first. A new event that matches one of the 10 newest entries (same
//! reason, context, object and user, less than 60 s apart) moves that entry to the front
//! and bumps its `count` instead of adding a line, as Redis's `addACLLogEntry` does; the
//! list is cut to `acllog-max-len` entries.

use crate::resp::writer::RespWriter;
use bytes::Bytes;
use std::collections::VecDeque;

/// Events closer than this (ms) are grouped into one entry (`ACL_LOG_GROUPING_MAX_TIME_DELTA`).
const GROUPING_MAX_TIME_DELTA_MS: u64 = 60_000;
/// How many of the newest entries are searched for a match.
const GROUPING_SCAN: usize = 10;

/// Why the event was logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The command is not allowed.
    Command,
    /// A key is not allowed.
    Key,
    /// A channel or pattern is not allowed.
    Channel,
    /// AUTH / HELLO AUTH failed.
    Auth,
}

impl Reason {
    /// The word `ACL LOG` shows.
    pub fn name(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Channel => "channel",
            Reason::Auth => "auth",
        }
    }
}

/// Where the command ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// A command sent by the client.
    Toplevel,
    /// A command queued in, or run by, MULTI/EXEC.
    Multi,
    /// A command a Lua script ran (`redis.call`).
    Lua,
}

impl Context {
    /// The word `ACL LOG` shows.
    pub fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

/// One `ACL LOG` entry.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Events grouped into this entry.
    pub count: u64,
    /// Why.
    pub reason: Reason,
    /// Where.
    pub context: Context,
    /// The command name, the key, or (for auth) the command as typed.
    pub object: Bytes,
    /// The user the client was (or tried to authenticate as).
    pub username: Bytes,
    /// Unix ms of the first event of the entry (`timestamp-created`).
    pub created_ms: u64,
    /// Unix ms of the latest grouped event (`timestamp-last-updated`; `age-seconds`
    /// counts from it).
    pub updated_ms: u64,
    /// The entry's number since the server started, from 0 (`entry-id`); set by
    /// [`AclLog::add`]. `ACL LOG RESET` does not restart it, so a reader can tell
    /// whether entries went missing between two reads.
    pub id: u64,
    /// `CLIENT LIST` line of the client at the latest event.
    pub client_info: String,
}

/// The log, newest first.
#[derive(Debug, Default)]
pub struct AclLog {
    entries: VecDeque<Entry>,
    /// The id the next new entry gets (Redis: `ACLLogEntryCount`).
    next_id: u64,
}

impl AclLog {
    /// Records an event (`entry` as one new event: its `created_ms` is its time), grouping
    /// it with a recent identical one.
    pub fn add(&mut self, mut entry: Entry, max_len: usize) {
        let found = self.entries.iter().take(GROUPING_SCAN).position(|e| {
            e.reason == entry.reason
                && e.context == entry.context
                && e.object == entry.object
                && e.username == entry.username
                && e.updated_ms.abs_diff(entry.created_ms) <= GROUPING_MAX_TIME_DELTA_MS
        });
        if let Some(mut old) = found.and_then(|i| self.entries.remove(i)) {
            old.count += 1;
            old.updated_ms = entry.created_ms;
            old.client_info = entry.client_info;
            self.entries.push_front(old);
        } else {
            entry.updated_ms = entry.created_ms;
            entry.id = self.next_id;
            self.next_id += 1;
            self.entries.push_front(entry);
        }
        self.entries.truncate(max_len);
    }

    /// `ACL LOG RESET`.
    pub fn reset(&mut self) {
        self.entries.clear();
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `ACL LOG [count]`: the newest `count` entries as maps of ten fields (Redis 7.2
    /// added the last three).
    pub fn reply(&self, out: &mut RespWriter, count: usize, now_ms: u64) {
        let n = count.min(self.entries.len());
        out.array(n);
        for e in self.entries.iter().take(n) {
            out.map(10);
            out.bulk(b"count");
            out.integer(e.count as i64);
            out.bulk(b"reason");
            out.bulk(e.reason.name().as_bytes());
            out.bulk(b"context");
            out.bulk(e.context.name().as_bytes());
            out.bulk(b"object");
            out.bulk(&e.object);
            out.bulk(b"username");
            out.bulk(&e.username);
            out.bulk(b"age-seconds");
            let age = now_ms.saturating_sub(e.updated_ms) as f64 / 1000.0;
            out.double_g17(age);
            out.bulk(b"client-info");
            out.bulk(e.client_info.as_bytes());
            out.bulk(b"entry-id");
            out.integer(i64::try_from(e.id).unwrap_or(i64::MAX));
            out.bulk(b"timestamp-created");
            out.integer(i64::try_from(e.created_ms).unwrap_or(i64::MAX));
            out.bulk(b"timestamp-last-updated");
            out.integer(i64::try_from(e.updated_ms).unwrap_or(i64::MAX));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(object: &str, at: u64) -> Entry {
        Entry {
            count: 1,
            reason: Reason::Command,
            context: Context::Toplevel,
            object: Bytes::copy_from_slice(object.as_bytes()),
            username: Bytes::from_static(b"alice"),
            created_ms: at,
            updated_ms: at,
            id: 0,
            client_info: String::new(),
        }
    }

    #[test]
    fn identical_recent_events_are_grouped_and_the_log_is_bounded() {
        let mut log = AclLog::default();
        log.add(entry("xadd", 1000), 3);
        log.add(entry("xadd", 2000), 3);
        assert_eq!(log.len(), 1);
        assert_eq!(log.entries[0].count, 2);
        log.add(entry("xadd", 2000 + GROUPING_MAX_TIME_DELTA_MS), 3);
        assert_eq!(log.len(), 1, "60 s after the latest grouped event");
        log.add(entry("xadd", 200_000), 3);
        assert_eq!(log.len(), 2);
        let grouped = &log.entries[1];
        assert_eq!((grouped.id, grouped.count), (0, 3));
        assert_eq!((grouped.created_ms, grouped.updated_ms), (1000, 62_000));
        assert_eq!(log.entries[0].id, 1);
        log.add(entry("a", 200_000), 3);
        log.add(entry("b", 200_000), 3);
        assert_eq!(log.len(), 3);
        assert_eq!(log.entries[0].object, "b");
        log.reset();
        log.add(entry("c", 300_000), 3);
        assert_eq!(log.entries[0].id, 4, "RESET does not restart the ids");
    }
}
