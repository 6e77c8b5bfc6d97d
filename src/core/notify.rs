//! Keyspace notifications (Redis `notify.c`): commands announce what they did to a key
//! as Pub/Sub messages, when `notify-keyspace-events` asks for that class of event.
//!
//! ```text
//! command ──ctx.notify(class, "xadd", key)──▶ Core::notify_keyspace_event
//!                                              │ class & notify_flags == 0 → return (one branch)
//!                                              │ loading → return (the log is not news)
//!                                              ├ K: PUBLISH __keyspace@<db>__:<key>   <event>
//!                                              └ E: PUBLISH __keyevent@<db>__:<event> <key>
//! ```
//!
//! The classes are Redis's letters (`config::notify_class`), cached as bits in
//! [`Core::notify_flags`] by `Core::refresh_config_cache`. Each emission point sits where
//! Redis has its `notifyKeyspaceEvent` call, in the same order relative to the others a
//! command emits (`new` as the key is added, before the command's own event; `xadd` before
//! `xtrim`; `rename_from` before `rename_to`), so a subscriber sees the same sequence from
//! streamd as from Redis for the same commands:
//!
//! | event | class | emitted by |
//! |---|---|---|
//! | `new` | n | XADD creating the key, XGROUP CREATE MKSTREAM, RENAME/COPY/MOVE destination, RESTORE |
//! | `xadd`, then `xtrim` if trimming removed entries | t | XADD |
//! | `xtrim` | t | XTRIM that removed entries |
//! | `xdel` | t | XDEL, XDELEX, XACKDEL that deleted entries |
//! | `xgroup-create` | t | XGROUP CREATE |
//! | `xgroup-createconsumer` | t | XGROUP CREATECONSUMER, and XREADGROUP / XCLAIM / XAUTOCLAIM creating their consumer |
//! | `xgroup-delconsumer`, `xgroup-destroy`, `xgroup-setid` | t | XGROUP DELCONSUMER / DESTROY / SETID |
//! | `xsetid` | t | XSETID |
//! | `del` | g | DEL/UNLINK per deleted key, EXPIRE family with a past deadline, RESTORE REPLACE with a past TTL |
//! | `rename_from`, `rename_to` | g | RENAME, RENAMENX |
//! | `move_from`, `move_to` | g | MOVE |
//! | `copy_to` | g | COPY |
//! | `expire`, `persist` | g | EXPIRE family, PERSIST |
//! | `restore` | g | RESTORE |
//! | `expired` | x | a key found expired on lookup, or by the `hz` cron |
//! | `hexpire`, `hpersist` | h | HEXPIRE family / HGETEX / HSETEX setting field TTLs; HPERSIST, HGETEX PERSIST |
//! | `hexpired` | h | hash fields found expired on lookup, or by the `hz` cron (then `del` if the hash emptied) |
//! | `keymiss` | m | a read of a missing key by a command Redis reads it with (`lookupKeyRead`) |
//!
//! XREADGROUP deliveries, XACK, XCLAIM's claims, XNACK and an XADD answered as an IDMP
//! duplicate emit nothing, as in Redis 8.x; FLUSHDB and FLUSHALL emit nothing either.
//! streamd holds no other types and evicts nothing, so `$ l s h z e d` are accepted and
//! shown but never fire.

use super::{Core, Ctx};
pub use crate::config::notify_class as class;

impl Core {
    /// Publishes `event` on `key` of database `db` if `class` is enabled (Redis:
    /// `notifyKeyspaceEvent`): `__keyspace@<db>__:<key>` with message `<event>` when `K`
    /// is on, then `__keyevent@<db>__:<event>` with message `<key>` when `E` is on.
    /// Nothing is published while the log loads.
    #[inline]
    pub fn notify_keyspace_event(&mut self, class: u32, event: &str, key: &[u8], db: usize) {
        // With nobody subscribed to anything there is no one to tell (and nothing to
        // build the channel names for).
        if self.notify_flags & class == 0 || self.loading || self.pubsub.is_empty() {
            return;
        }
        self.publish_keyspace_event(event.as_bytes(), key, db);
    }

    /// The publishing half of [`Core::notify_keyspace_event`], out of line so that the
    /// disabled case costs the callers one test.
    #[inline(never)]
    fn publish_keyspace_event(&mut self, event: &[u8], key: &[u8], db: usize) {
        let mut n = itoa::Buffer::new();
        let db = n.format(db).as_bytes();
        let channel = |prefix: &[u8], suffix: &[u8]| {
            let mut c = Vec::with_capacity(prefix.len() + db.len() + 3 + suffix.len());
            c.extend_from_slice(prefix);
            c.extend_from_slice(db);
            c.extend_from_slice(b"__:");
            c.extend_from_slice(suffix);
            c
        };
        if self.notify_flags & class::KEYSPACE != 0 {
            let ch = channel(b"__keyspace@", key);
            self.publish(&ch, event);
        }
        if self.notify_flags & class::KEYEVENT != 0 {
            let ch = channel(b"__keyevent@", event);
            self.publish(&ch, key);
        }
    }
}

impl Ctx<'_> {
    /// [`Core::notify_keyspace_event`] for `key` in the calling client's database.
    #[inline]
    pub fn notify(&mut self, class: u32, event: &str, key: &[u8]) {
        let db = self.client.db;
        self.core.notify_keyspace_event(class, event, key, db);
    }

    /// `keymiss` for a lookup of `key` that found nothing, when the running command
    /// reads its keys the way Redis's `lookupKeyRead` does (write commands look keys up
    /// without it, and so do OBJECT and MEMORY USAGE). Called by the lookups only while
    /// class `m` is on.
    #[cold]
    pub(super) fn notify_keymiss(&mut self, key: &[u8]) {
        if reads_with_keymiss(&self.argv[0]) {
            self.notify(class::KEY_MISS, "keymiss", key);
        }
    }
}

/// Commands whose key lookups are Redis's `lookupKeyRead` (which fires `keymiss`), as
/// opposed to `lookupKeyWrite` or a raw dictionary probe. COPY reads its source this
/// way; its destination, like every write command's keys, does not come through
/// `Ctx::lookup`.
fn reads_with_keymiss(command: &[u8]) -> bool {
    const READS: [&str; 32] = [
        "xrange",
        "xrevrange",
        "xlen",
        "xread",
        "xreadgroup",
        "xpending",
        "xinfo",
        "xack",
        "xclaim",
        "xautoclaim",
        "exists",
        "touch",
        "type",
        "ttl",
        "pttl",
        "expiretime",
        "pexpiretime",
        "dump",
        "copy",
        // strings (SET only reads through its GET option)
        "get",
        "getdel",
        "getex",
        "getset",
        "set",
        "getrange",
        "substr",
        "strlen",
        "mget",
        "lcs",
        // 8.4: DIGEST and DELEX look their key up to read it, MSETEX XX its keys.
        "digest",
        "delex",
        "msetex",
    ];
    READS
        .iter()
        .chain(HASH_SET_READS)
        .any(|c| command.eq_ignore_ascii_case(c.as_bytes()))
}

/// The hash and set commands that read their keys with `lookupKeyRead` (types-hs; the
/// *STORE commands read their sources this way too, not their destination).
const HASH_SET_READS: &[&str] = &[
    "hget",
    "hmget",
    "hlen",
    "hstrlen",
    "hexists",
    "hgetall",
    "hkeys",
    "hvals",
    "hrandfield",
    "hscan",
    "sismember",
    "smismember",
    "scard",
    "srandmember",
    "sscan",
    "smembers",
    "sinter",
    "sintercard",
    "sinterstore",
    "sunion",
    "sunionstore",
    "sdiff",
    "sdiffstore",
    "sunioncard",
    "sdiffcard",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::keyspace_event_flags as flags;

    #[test]
    fn letters_map_to_redis_class_bits() {
        assert_eq!(flags(""), Some(0));
        assert_eq!(flags("K"), Some(1));
        assert_eq!(flags("E"), Some(2));
        assert_eq!(flags("g"), Some(4));
        assert_eq!(flags("t"), Some(1 << 10));
        assert_eq!(flags("x"), Some(1 << 8));
        assert_eq!(flags("m"), Some(1 << 11));
        assert_eq!(flags("n"), Some(1 << 14));
        assert_eq!(flags("Et"), Some(class::KEYEVENT | class::STREAM));
        assert_eq!(flags("Kt"), Some(class::KEYSPACE | class::STREAM));
    }

    #[test]
    fn a_is_every_type_class_but_not_k_e_m_or_n() {
        let a = flags("A").unwrap();
        assert_eq!(a, flags("g$lshzxetd").unwrap());
        for not_in_a in ["K", "E", "m", "n"] {
            assert_eq!(a & flags(not_in_a).unwrap(), 0, "{not_in_a}");
        }
        assert_eq!(flags("KEA").unwrap(), a | class::KEYSPACE | class::KEYEVENT);
        assert_eq!(flags("AKEmn").unwrap().count_ones(), 14);
    }

    #[test]
    fn letters_repeat_and_combine_in_any_order() {
        assert_eq!(flags("tEtE"), flags("Et"));
        assert_eq!(flags("AA"), flags("A"));
    }

    #[test]
    fn unknown_letters_are_refused() {
        for bad in ["a", "KEA ", "T", "X", "k", "?", "é"] {
            assert_eq!(flags(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn keymiss_only_for_commands_that_read_like_lookup_key_read() {
        for read in [
            "XRANGE",
            "xlen",
            "XReadGroup",
            "exists",
            "dump",
            "COPY",
            "ttl",
        ] {
            assert!(reads_with_keymiss(read.as_bytes()), "{read}");
        }
        for write in [
            "xadd", "XTRIM", "xdel", "xgroup", "xsetid", "del", "rename", "object",
        ] {
            assert!(!reads_with_keymiss(write.as_bytes()), "{write}");
        }
    }
}
