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
    /// Unix ms of the latest grouped event.
    pub created_ms: u64,
    /// `CLIENT LIST` line of the client at the latest event.
    pub client_info: String,
}

/// The log, newest first.
#[derive(Debug, Default)]
pub struct AclLog {
    entries: VecDeque<Entry>,
}

impl AclLog {
    /// Records an event, grouping it with a recent identical one.
    pub fn add(&mut self, entry: Entry, max_len: usize) {
        let found = self.entries.iter().take(GROUPING_SCAN).position(|e| {
            e.reason == entry.reason
                && e.context == entry.context
                && e.object == entry.object
                && e.username == entry.username
                && e.created_ms.abs_diff(entry.created_ms) <= GROUPING_MAX_TIME_DELTA_MS
        });
        if let Some(mut old) = found.and_then(|i| self.entries.remove(i)) {
            old.count += 1;
            old.created_ms = entry.created_ms;
            old.client_info = entry.client_info;
            self.entries.push_front(old);
        } else {
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

    /// `ACL LOG [count]`: the newest `count` entries as maps of seven fields.
    pub fn reply(&self, out: &mut RespWriter, count: usize, now_ms: u64) {
        let n = count.min(self.entries.len());
        out.array(n);
        for e in self.entries.iter().take(n) {
            out.map(7);
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
            let age = now_ms.saturating_sub(e.created_ms) as f64 / 1000.0;
            double_g17(out, age);
            out.bulk(b"client-info");
            out.bulk(e.client_info.as_bytes());
        }
    }
}

/// A double as Redis's `addReplyDouble` writes it: `%.17g` text, a bulk string in RESP2
/// and a `,` double in RESP3.
fn double_g17(out: &mut RespWriter, d: f64) {
    let text = format_g17(d);
    if out.is_resp3() {
        out.buf.extend_from_slice(b",");
        out.buf.extend_from_slice(text.as_bytes());
        out.buf.extend_from_slice(b"\r\n");
    } else {
        out.bulk(text.as_bytes());
    }
}

/// C's `printf("%.17g", d)` for finite `d`.
pub fn format_g17(d: f64) -> String {
    if d == 0.0 {
        return "0".into();
    }
    // 17 significant digits, correctly rounded: d.dddddddddddddddde±x.
    let sci = format!("{:.16e}", d);
    let Some((mantissa, exp)) = sci.split_once('e') else {
        return sci;
    };
    let exp: i32 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if negative { "-" } else { "" };
    if !(-4..17).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let rest = rest.trim_end_matches('0');
        let dot = if rest.is_empty() { "" } else { "." };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{dot}{rest}e{esign}{:02}", exp.abs());
    }
    let text = if exp >= 0 {
        let int_len = exp as usize + 1;
        let (int, frac) = digits.split_at(int_len.min(digits.len()));
        format!("{int}.{frac}")
    } else {
        format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
    };
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{sign}{text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g17_matches_c_printf() {
        // Values as redis-server 7.0 printed them in ACL LOG age-seconds.
        assert_eq!(format_g17(0.082), "0.082000000000000003");
        assert_eq!(format_g17(87.117), "87.117000000000004");
        assert_eq!(format_g17(0.106), "0.106");
        assert_eq!(format_g17(0.01), "0.01");
        assert_eq!(format_g17(0.033), "0.033000000000000002");
        assert_eq!(format_g17(1.0), "1");
        assert_eq!(format_g17(12.5), "12.5");
        assert_eq!(format_g17(0.00001), "1.0000000000000001e-05");
        assert_eq!(format_g17(1e20), "1e+20");
    }

    fn entry(object: &str, at: u64) -> Entry {
        Entry {
            count: 1,
            reason: Reason::Command,
            context: Context::Toplevel,
            object: Bytes::copy_from_slice(object.as_bytes()),
            username: Bytes::from_static(b"alice"),
            created_ms: at,
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
        log.add(entry("a", 200_000), 3);
        log.add(entry("b", 200_000), 3);
        assert_eq!(log.len(), 3);
        assert_eq!(log.entries[0].object, "b");
    }
}
