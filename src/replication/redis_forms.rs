//! What a Redis 7.0 replica (Debian's `redis-server` 7.0.15) gets in place of each effect
//! record of the replication stream.
//!
//! The replication stream carries the effects write commands produce (`Ctx::propagate`,
//! `Core::propagate`; `commands/effects.rs` draws the group and IDMP forms) as RESP
//! arrays, with `SELECT`, `MULTI` and `EXEC` around them as the log frames them. Most are
//! Redis 7.0 commands; some are not: streamd's own `STREAMD.*` records, and forms that use
//! commands or options newer than 7.0 (8.2's reference policies and XACKDEL/XDELEX, 8.6's
//! IDMP, 8.8's XNACK, DUMP payloads newer than RDB version 10). A Redis replica must never
//! get one of those, and its replication offset must still be the primary's byte for
//! byte. So each record whose Redis 7.0 form differs is replaced, in the bytes sent to a
//! Redis replica, by exactly as many bytes: `\n` padding, then the Redis form (a RESP
//! command no longer than the record), or padding alone when there is no Redis form:
//!
//! ```text
//! native record, encoded_len bytes  *6\r\n$7\r\nXACKDEL\r\n$1\r\nk\r\n$1\r\ng\r\n$3\r\nIDS\r\n ... \r\n
//! what a Redis 7.0 replica gets     \n\n\n ... \n*4\r\n$4\r\nXACK\r\n$1\r\nk\r\n$1\r\ng\r\n ... \r\n
//!                                   └─padding──┘└──────────── the Redis form ──────────────┘
//! a record with no Redis form       \n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n ... \n
//! ```
//!
//! Why this works (Redis 7.0 `networking.c`): a line that does not start with `*` is read
//! as an inline command, and an empty inline line from the master is skipped without a
//! reply or an error (`processInlineBuffer`: "masters may send us just a newline to keep
//! the connection active"; a non-empty inline line from the master would close the
//! link). The replica's applied offset (`reploff`) moves only when a command has run, to
//! the end of that command (`commandProcessed`), so the padding goes *before* the
//! replacement: the offset the replica acknowledges then lands at the record's end, as
//! the primary counts it. (After a record that is all padding the acknowledged offset
//! stays behind until the next command arrives, such as the primary's periodic PING.)
//!
//! # The forms
//!
//! Checked against Redis 7.0.15's argument parsing (`t_stream.c`
//! `streamParseAddOrTrimArgsOrReply`, `xgroupCommand`, `xsetidCommand`, `xclaimCommand`;
//! `cluster.c` `restoreCommand`, `verifyDumpPayload`; `db.c` COPY/MOVE/RENAME/SWAPDB) and,
//! in the tests below, against a running Debian `redis-server` when one is installed.
//!
//! ```text
//! native effect (emitted by)                           what a Redis 7.0 replica gets
//! ---------------------------------------------------  ------------------------------------
//! SELECT db, MULTI, EXEC (persist/mod.rs framing)      the same
//! DEL, UNLINK key... (keys.rs; expiry: core/mod.rs)    the same
//! RENAME, RENAMENX, COPY src dst [DB n] [REPLACE],     the same (COPY is 6.2's; the others
//!   MOVE key db, PERSIST key, PEXPIREAT key ms          are older)
//! FLUSHDB, FLUSHALL, SWAPDB a b (server.rs)            the same
//! XADD key [MAXLEN = n] id f v ... (xadd.rs)           the same
//! XADD key KEEPREF|DELREF MAXLEN = n id f v ...        XADD key MAXLEN = n id f v ...    (1)
//! XADD key ACKED MAXLEN = n id f v ...                 XADD key id f v ...               (2)
//! XADD ... IDMP pid iid | IDMPAUTO pid ... id ...      the XADD without it               (3)
//! XTRIM key MAXLEN = n [KEEPREF|DELREF] (xadd.rs)      XTRIM key MAXLEN = n              (1)
//! XTRIM key MAXLEN = n ACKED                           padding                           (2)
//! XDEL key id... (xadd.rs)                             the same
//! XSETID key id [ENTRIESADDED n] [MAXDELETEDID id]     the same (7.0 has both options)
//! XACK key group id... (xack.rs, effects.rs)           the same
//! XGROUP CREATE key g id [MKSTREAM] ENTRIESREAD n|-1   the same (7.0 has ENTRIESREAD, -1
//! XGROUP SETID key g id ENTRIESREAD n|-1                 meaning unknown; xgroup.rs)
//! XGROUP DESTROY|CREATECONSUMER|DELCONSUMER key g ...  the same
//! XCLAIM key g c 0 id TIME ms RETRYCOUNT n            the same (effects.rs; counts stop
//!   FORCE JUSTID                                         at LLONG_MAX, as 7.0 parses them)
//! XACKDEL key g [KEEPREF|DELREF|ACKED] IDS n id...     XACK key g id...                  (4)
//!   (8.2, xackdel.rs)
//! XDELEX key [KEEPREF|DELREF] IDS n id... (8.2)        XDEL key id...                    (1)
//! XDELEX key ACKED IDS n id...                         padding                           (2)
//! XNACK key g mode IDS n id... [RETRYCOUNT n] [FORCE]  padding                           (5)
//!   (8.8, xnack.rs)
//! XCFGSET key IDMP-DURATION s IDMP-MAXSIZE n (8.6)     padding                           (3)
//! XCFGSET key MAXAGE|MAXBYTES|RETENTION-REFS ...       padding (streamd's lifecycle; the
//!   (docs/beyond-redis.md)                               trims it makes are logged as XTRIM)
//! XGROUP SETDLQ key g dlq MAXDELIVERIES n | NONE       padding (the entries it moves are
//!   (deadletter.rs)                                      logged as XADD and XACK)
//! XIDMPRECORD key pid iid id (8.6, xidmp.rs)           padding                           (3)
//! STREAMD.NACK, STREAMD.CONSUMER, STREAMD.IDMP         padding (streamd's own records;
//!   (effects.rs; snapshots also write STREAMD.GROUP,    7.0 keeps no unowned entries, no
//!   .PENDING, .IID, .NODES: padding too)                active time, no IDMP state)
//! RESTORE key ms payload ABSTTL REPLACE (dump.rs)
//!   payload type 19 (or 15), RDB version <= 10         the same
//!   type 19 (or 15) with a newer version               the payload with version 10 and its
//!     (a Redis 7.4+ DUMP of a plain stream)              CRC redone: same length, same value
//!   type 21, 26 or 27 (7.4+, 8.6+, 8.8+)               re-serialized as type 19, v10     (6)
//!   not readable                                       padding (streamd refused it too)
//! anything else                                        the same, so that Redis reports a
//!                                                        form this table has missed
//! ```
//!
//! Where the record does not say what Redis 7.0 would need to know, the rule is: **the
//! replica keeps at least what the primary keeps**. A deletion that hinged on state the
//! record does not carry is left out rather than guessed, so the replica may hold more
//! entries or pending entries than the primary, never fewer.
//!
//! 1. KEEPREF is 7.0's only behaviour, so the word just goes. A DELREF trim or deletion
//!    removes the same entries (an exact `MAXLEN =` trim removes the oldest entries
//!    whatever the policy), but its dropping of those entries' references from every
//!    group's PEL cannot be said in 7.0: the replica keeps them as pending entries of
//!    deleted entries (7.0's XAUTOCLAIM clears those; XPENDING shows them).
//! 2. ACKED removes only entries no group references, skipping the others: which ones it
//!    removed the record does not say (`MAXLEN = n` is a count). A 7.0 `MAXLEN = n` would
//!    remove the oldest entries instead, pending ones included, so the trim (for XADD,
//!    the trim clause; for XTRIM and XDELEX, the whole record) is left out.
//! 3. The entry an `XADD ... IDMP` added is the same without the option; the IDMP state
//!    (tracked iids, settings, counters) is 8.6's and has no 7.0 form.
//! 4. XACKDEL acknowledges and then deletes. Both as `XACK` + `XDEL` do not fit (the IDs
//!    twice: 67 bytes against 56 for one short ID), so one command goes: XACK, which keeps
//!    the group exact and the replica a superset (the deletion, under KEEPREF/DELREF, is
//!    of the acknowledged IDs only, and under ACKED depends on other groups). The entries
//!    an XACKDEL deleted stay on a Redis replica.
//! 5. 7.0 has no unowned pending entries: a NACKed entry stays with its previous owner,
//!    with its previous delivery time and count, until a later claim or XACK moves it.
//!    The XCLAIM forms that follow (an `XREADGROUP ... CLAIM` or XCLAIM taking it) carry
//!    their own time and count, so the replica converges when the entry is taken again.
//! 6. The payload is read (`rdb::payload::restore`) and written again as type 19 with
//!    version 10, which 7.0 reads: consumers' active times (7.4), IDMP state (8.6) and the
//!    NACK zone (8.8) have no place there. NACKed (unowned) entries cannot stay unowned
//!    (7.0's `rdbLoadObject` refuses "Stream CG PEL entry without consumer" under
//!    `sanitize-dump-payload yes`, and without it XPENDING and XCLAIM would follow the
//!    missing consumer): they go to a consumer named `""` (the name XPENDING shows for
//!    them) with delivery time 0, so any XAUTOCLAIM takes them first, as the NACK zone
//!    serves them first. If that payload would be longer than the original (a consumer
//!    `""` to add and little else dropped), the NACKed entries are left out of the PEL
//!    instead. A payload still longer than the original (a foreign writer that packed its
//!    nodes tighter than streamd re-encodes them) becomes padding, by [`patch`]'s rule.

use crate::rdb::payload;
use crate::rdb::stream::{IdmpDefaults, write as write_stream};
use crate::rdb::types::{
    STREAM_LISTPACKS, STREAM_LISTPACKS_2, STREAM_LISTPACKS_3, STREAM_LISTPACKS_4,
    STREAM_LISTPACKS_5,
};
use crate::resp::writer::command;
use crate::stream::group::{ClaimSpec, DeliveryCount};
use crate::stream::id::string2ll;
use crate::stream::{Stream, StreamId};

/// What a Redis 7.0 replica gets instead of one effect record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedisForm {
    /// The record as it is: Redis 7.0 understands it.
    Same,
    /// This command (its arguments, name first) in the record's place.
    Replace(Vec<Vec<u8>>),
    /// Nothing: the record has no Redis 7.0 form.
    Drop,
}

/// The padding byte: an empty inline line, which Redis skips from its master.
pub const PADDING: u8 = b'\n';

/// Redis 7.0's `RDB_VERSION` (`rdb.h`): the newest DUMP payload version its RESTORE
/// accepts (`verifyDumpPayload`).
pub const REDIS_70_RDB_VERSION: u16 = 10;

/// DUMP payload footer: RDB version (u16 LE) and CRC-64 (u64 LE).
const FOOTER: usize = 10;

/// IDMP settings for reading a RESTORE payload again: any valid pair does, since the
/// IDMP state is not written back (type 19 has none).
const IDMP_DEFAULTS: IdmpDefaults = (100, 100);

/// The Redis 7.0 form of the effect record `argv` (table in the module doc). Command
/// names compare case-insensitively; option words as Redis's `strcasecmp` sees them (up
/// to an embedded NUL), as streamd's parsers read them.
pub fn redis_form(argv: &[&[u8]]) -> RedisForm {
    let Some(name) = argv.first() else {
        return RedisForm::Same;
    };
    if name
        .get(..8)
        .is_some_and(|p| p.eq_ignore_ascii_case(b"STREAMD."))
    {
        return RedisForm::Drop;
    }
    let named = |n: &str| name.eq_ignore_ascii_case(n.as_bytes());
    if named("XADD") {
        xadd_form(argv)
    } else if named("XTRIM") {
        xtrim_form(argv)
    } else if named("XACKDEL") {
        xackdel_form(argv)
    } else if named("XDELEX") {
        xdelex_form(argv)
    } else if named("RESTORE") {
        restore_form(argv)
    } else if named("XNACK")
        || named("XCFGSET")
        || named("XIDMPRECORD")
        || (named("XGROUP") && argv.get(1).is_some_and(|sub| is(sub, "SETDLQ")))
    {
        RedisForm::Drop
    } else {
        RedisForm::Same
    }
}

/// The bytes a Redis 7.0 replica gets for the record `argv`, whose native RESP encoding
/// is `encoded_len` bytes long: `None` when the record is sent as it is; else exactly
/// `encoded_len` bytes (padding, then the Redis form; or all padding). A replacement that
/// would be longer than the original falls back to all padding.
pub fn patch(argv: &[&[u8]], encoded_len: usize) -> Option<Vec<u8>> {
    let replacement = match redis_form(argv) {
        RedisForm::Same => return None,
        RedisForm::Drop => return Some(vec![PADDING; encoded_len]),
        RedisForm::Replace(r) => r,
    };
    let mut body = Vec::new();
    command(&mut body, &replacement);
    let mut out = Vec::with_capacity(encoded_len);
    match encoded_len.checked_sub(body.len()) {
        Some(pad) => {
            out.resize(pad, PADDING);
            out.extend_from_slice(&body);
        }
        None => out.resize(encoded_len, PADDING),
    }
    Some(out)
}

/// `arg` as C's `strcasecmp` sees it: up to an embedded NUL.
fn c_str(arg: &[u8]) -> &[u8] {
    crate::error::c_str_prefix(arg, usize::MAX)
}

/// Is `arg` the option word `word` (case-insensitive, as a C string)?
fn is(arg: &[u8], word: &str) -> bool {
    c_str(arg).eq_ignore_ascii_case(word.as_bytes())
}

/// 8.2's reference policy words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Policy {
    /// KEEPREF: what Redis 7.0 always does.
    KeepRef,
    /// DELREF: also drop the entries' PEL references.
    DelRef,
    /// ACKED: only entries no group references.
    Acked,
}

fn policy_of(arg: &[u8]) -> Option<Policy> {
    if is(arg, "KEEPREF") {
        Some(Policy::KeepRef)
    } else if is(arg, "DELREF") {
        Some(Policy::DelRef)
    } else if is(arg, "ACKED") {
        Some(Policy::Acked)
    } else {
        None
    }
}

/// The options of an XADD or XTRIM record, walked as `commands/xadd.rs`
/// (`AddTrimOptions::parse_with`) walks them.
struct AddTrim<'a> {
    /// The options Redis 7.0 knows, in order; `true` for the trim clause's words
    /// (MAXLEN/MINID, `~`/`=`, threshold, LIMIT and its count).
    kept: Vec<(&'a [u8], bool)>,
    /// The reference policy word, if one was given.
    policy: Option<Policy>,
    /// Some word Redis 7.0 does not know was left out (policy, IDMP, IDMPAUTO).
    changed: bool,
    /// XADD: where the ID is (the options end there).
    rest: usize,
}

/// Walks the options from `argv[2]`; `xadd` for XADD's (the first word that is no
/// option is the ID), else XTRIM's (`None` for a word that is no option).
fn add_trim_options<'a>(argv: &[&'a [u8]], xadd: bool) -> Option<AddTrim<'a>> {
    let mut o = AddTrim {
        kept: Vec::new(),
        policy: None,
        changed: false,
        rest: argv.len(),
    };
    let mut i = 2;
    while i < argv.len() {
        let more = argv.len() - 1 - i;
        let opt = argv[i];
        if xadd && c_str(opt) == b"*" {
            break;
        } else if (is(opt, "MAXLEN") || is(opt, "MINID")) && more >= 1 {
            o.kept.push((opt, true));
            if more >= 2 && matches!(c_str(argv[i + 1]), b"~" | b"=") {
                o.kept.push((argv[i + 1], true));
                i += 1;
            }
            o.kept.push((argv[i + 1], true));
            i += 2;
        } else if is(opt, "LIMIT") && more >= 1 {
            o.kept.extend([(opt, true), (argv[i + 1], true)]);
            i += 2;
        } else if xadd && is(opt, "NOMKSTREAM") {
            o.kept.push((opt, false));
            i += 1;
        } else if xadd && is(opt, "IDMP") && more >= 2 {
            o.changed = true;
            i += 3;
        } else if xadd && is(opt, "IDMPAUTO") && more >= 1 {
            o.changed = true;
            i += 2;
        } else if let Some(p) = policy_of(opt).filter(|_| o.policy.is_none()) {
            o.policy = Some(p);
            o.changed = true;
            i += 1;
        } else if xadd {
            break;
        } else {
            return None;
        }
    }
    o.rest = i.min(argv.len());
    Some(o)
}

/// The arguments `head`, then `kept` without the trim clause when `drop_trim`, then
/// `tail`, as owned bytes.
fn rebuild(head: &[&[u8]], kept: &[(&[u8], bool)], drop_trim: bool, tail: &[&[u8]]) -> RedisForm {
    let mut out: Vec<Vec<u8>> = Vec::with_capacity(head.len() + kept.len() + tail.len());
    out.extend(head.iter().map(|a| a.to_vec()));
    out.extend(
        kept.iter()
            .filter(|(_, trim)| !(drop_trim && *trim))
            .map(|(a, _)| a.to_vec()),
    );
    out.extend(tail.iter().map(|a| a.to_vec()));
    RedisForm::Replace(out)
}

/// XADD: without the policy word and IDMP/IDMPAUTO; an ACKED trim clause goes too.
fn xadd_form(argv: &[&[u8]]) -> RedisForm {
    if argv.len() < 2 {
        return RedisForm::Same;
    }
    // The common effect, `XADD key <id> ...`: no option (no option word starts with a
    // digit), nothing to rewrite.
    if argv
        .get(2)
        .and_then(|a| a.first())
        .is_some_and(u8::is_ascii_digit)
    {
        return RedisForm::Same;
    }
    let Some(o) = add_trim_options(argv, true) else {
        return RedisForm::Same;
    };
    if !o.changed {
        return RedisForm::Same;
    }
    let acked = o.policy == Some(Policy::Acked);
    rebuild(&argv[..2], &o.kept, acked, &argv[o.rest..])
}

/// XTRIM: without the policy word; an ACKED trim has no Redis form.
fn xtrim_form(argv: &[&[u8]]) -> RedisForm {
    if argv.len() < 2 {
        return RedisForm::Same;
    }
    let Some(o) = add_trim_options(argv, false) else {
        return RedisForm::Same;
    };
    match o.policy {
        _ if !o.changed => RedisForm::Same,
        Some(Policy::Acked) => RedisForm::Drop,
        _ => rebuild(&argv[..2], &o.kept, false, &[]),
    }
}

/// The policy (KEEPREF when none) and IDs of XACKDEL/XDELEX options from `argv[start]`,
/// walked as `commands/xackdel.rs` (`DelArgs::parse`) walks them; `None` when they do not
/// parse (no such record is logged).
fn del_args<'a, 'b>(argv: &'b [&'a [u8]], start: usize) -> Option<(Policy, &'b [&'a [u8]])> {
    let mut policy = None;
    let mut ids = None;
    let mut j = start;
    while j < argv.len() {
        let word = argv[j];
        match policy_of(word) {
            Some(p) if policy.is_none() => {
                policy = Some(p);
                j += 1;
            }
            _ if is(word, "IDS") && j + 1 < argv.len() => {
                let n = string2ll(argv[j + 1]).filter(|&n| n >= 1)?;
                let n = usize::try_from(n)
                    .ok()
                    .filter(|&n| n <= argv.len() - j - 2)?;
                ids = Some((j + 2, n));
                j += 2 + n;
            }
            _ => return None,
        }
    }
    let (at, n) = ids?;
    Some((policy.unwrap_or(Policy::KeepRef), &argv[at..at + n]))
}

/// XACKDEL key group ... → XACK key group id... (note 4 of the module doc).
fn xackdel_form(argv: &[&[u8]]) -> RedisForm {
    if argv.len() < 3 {
        return RedisForm::Same;
    }
    match del_args(argv, 3) {
        Some((_, ids)) => rebuild(&[b"XACK".as_slice(), argv[1], argv[2]], &[], false, ids),
        None => RedisForm::Same,
    }
}

/// XDELEX key ... → XDEL key id..., nothing under ACKED.
fn xdelex_form(argv: &[&[u8]]) -> RedisForm {
    if argv.len() < 2 {
        return RedisForm::Same;
    }
    match del_args(argv, 2) {
        Some((Policy::Acked, _)) => RedisForm::Drop,
        Some((_, ids)) => rebuild(&[b"XDEL".as_slice(), argv[1]], &[], false, ids),
        None => RedisForm::Same,
    }
}

/// RESTORE key ttl payload ...: the same with a payload Redis 7.0 reads (note 6).
fn restore_form(argv: &[&[u8]]) -> RedisForm {
    let Some(&original) = argv.get(3) else {
        return RedisForm::Same;
    };
    match payload_for_redis_70(original) {
        Payload::AsIs => RedisForm::Same,
        Payload::Unreadable => RedisForm::Drop,
        Payload::Rewritten(p) => {
            let mut out: Vec<Vec<u8>> = argv.iter().map(|a| a.to_vec()).collect();
            out[3] = p;
            RedisForm::Replace(out)
        }
    }
}

/// What a DUMP payload needs to be RESTOREd by Redis 7.0.
#[derive(Debug, PartialEq, Eq)]
enum Payload {
    /// Redis 7.0 reads it (or refuses it as streamd did: then no record was logged).
    AsIs,
    /// This payload instead: type 19 (or 15), version 10.
    Rewritten(Vec<u8>),
    /// A type 7.0 lacks that does not read (streamd would have refused it).
    Unreadable,
}

/// The payload `p` in a form Redis 7.0 RESTOREs (note 6 of the module doc).
fn payload_for_redis_70(p: &[u8]) -> Payload {
    let Some(body_len) = p.len().checked_sub(FOOTER) else {
        return Payload::AsIs;
    };
    let (body, footer) = p.split_at(body_len);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    match body.first().copied() {
        Some(STREAM_LISTPACKS | STREAM_LISTPACKS_2) if version <= REDIS_70_RDB_VERSION => {
            Payload::AsIs
        }
        Some(STREAM_LISTPACKS | STREAM_LISTPACKS_2) => {
            Payload::Rewritten(with_footer(body.to_vec()))
        }
        Some(STREAM_LISTPACKS_3 | STREAM_LISTPACKS_4 | STREAM_LISTPACKS_5) => {
            let Ok(mut s) = payload::restore(p, IDMP_DEFAULTS) else {
                return Payload::Unreadable;
            };
            let unowned = unowned_entries(&s);
            if !unowned.is_empty() {
                let mut adopted = s.clone();
                adopt_unowned(&mut adopted, &unowned);
                let first = type_19(&adopted);
                if first.len() <= p.len() {
                    return Payload::Rewritten(first);
                }
                drop_unowned(&mut s, &unowned);
            }
            Payload::Rewritten(type_19(&s))
        }
        _ => Payload::AsIs,
    }
}

/// `body` (type byte and value) with Redis 7.0's RDB version and the CRC-64 of both.
fn with_footer(mut body: Vec<u8>) -> Vec<u8> {
    body.extend_from_slice(&REDIS_70_RDB_VERSION.to_le_bytes());
    let crc = crate::rdb::crc64::crc64(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    body
}

/// `s` as a type-19, version-10 DUMP payload. Its groups must have no unowned entry.
fn type_19(s: &Stream) -> Vec<u8> {
    let mut out = vec![STREAM_LISTPACKS_2];
    write_stream(&mut out, s, STREAM_LISTPACKS_2, IDMP_DEFAULTS);
    with_footer(out)
}

/// Each group (by name) with its unowned (NACKed) pending entries.
type Unowned = Vec<(Vec<u8>, Vec<StreamId>)>;

/// The unowned (NACKed) pending entries of `s`, by group.
fn unowned_entries(s: &Stream) -> Unowned {
    s.groups()
        .iter()
        .filter(|g| g.nacked_count() > 0)
        .map(|g| {
            let ids = g
                .pel_range(StreamId::MIN, StreamId::MAX)
                .filter(|p| p.owner.is_none())
                .map(|p| p.id)
                .collect();
            (g.name().to_vec(), ids)
        })
        .collect()
}

/// Gives the unowned entries to consumer `""` with delivery time 0 and their counts.
fn adopt_unowned(s: &mut Stream, unowned: &Unowned) {
    let spec = ClaimSpec {
        min_idle: 0,
        delivery_time: 0,
        count: DeliveryCount::Keep,
        force: false,
    };
    for (name, ids) in unowned {
        let Some(mut g) = s.group_mut(name) else {
            continue;
        };
        let (cid, _) = g.get_or_create_consumer(b"", 0);
        for &id in ids {
            g.claim(cid, id, &spec, 0);
        }
    }
}

/// Removes the unowned entries from their groups' PELs.
fn drop_unowned(s: &mut Stream, unowned: &Unowned) {
    for (name, ids) in unowned {
        if let Some(mut g) = s.group_mut(name) {
            for &id in ids {
                g.ack(id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdb::stream::encoding_for;
    use crate::stream::NodeLimits;
    use crate::stream::group::NackMode;
    use bytes::Bytes;

    /// `s` split on spaces, as a record.
    fn rec(s: &str) -> Vec<Vec<u8>> {
        s.split(' ').map(|a| a.as_bytes().to_vec()).collect()
    }

    fn refs(r: &[Vec<u8>]) -> Vec<&[u8]> {
        r.iter().map(|a| a.as_slice()).collect()
    }

    fn form(s: &str) -> RedisForm {
        redis_form(&refs(&rec(s)))
    }

    fn encoded(r: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        command(&mut out, r);
        out
    }

    /// Checks [`patch`] against [`redis_form`] for record `r`: `None` for Same; else
    /// exactly the record's length, padding first, then the form's RESP (or all padding).
    fn check_patch(r: &[Vec<u8>]) {
        let argv = refs(r);
        let native = encoded(r);
        let patched = patch(&argv, native.len());
        match redis_form(&argv) {
            RedisForm::Same => assert_eq!(patched, None),
            RedisForm::Drop => assert_eq!(patched, Some(vec![PADDING; native.len()])),
            RedisForm::Replace(f) => {
                let p = patched.expect("a replaced record is patched");
                assert_eq!(p.len(), native.len());
                let body = encoded(&f);
                assert!(
                    body.len() <= native.len(),
                    "{:?} grew",
                    String::from_utf8_lossy(&native)
                );
                let pad = native.len() - body.len();
                assert!(p[..pad].iter().all(|&b| b == PADDING));
                assert_eq!(&p[pad..], &body[..]);
            }
        }
    }

    /// Every form streamd emits that Redis 7.0 takes as it is.
    const SAME: &[&str] = &[
        "SELECT 3",
        "MULTI",
        "EXEC",
        "DEL k",
        "del a b",
        "UNLINK k",
        "RENAME a b",
        "RENAMENX a b",
        "COPY a b",
        "COPY a b DB 2 REPLACE",
        "MOVE k 1",
        "PERSIST k",
        "PEXPIREAT k 1700000000000",
        "FLUSHDB",
        "FLUSHALL",
        "SWAPDB 0 1",
        "XADD k 1-1 f v",
        "XADD k MAXLEN = 5 1-2 f v g w",
        "xadd k maxlen = 5 1-2 f v",
        "XADD k NOMKSTREAM 1-2 f v",
        "XTRIM k MAXLEN = 0",
        "XDEL k 1-1 2-2",
        "XSETID k 5-0 ENTRIESADDED 9 MAXDELETEDID 4-0",
        "XACK k g 1-1 1-2",
        "XGROUP CREATE k g 0-0 ENTRIESREAD -1",
        "XGROUP CREATE k g 1-5 MKSTREAM ENTRIESREAD 3",
        "XGROUP SETID k g 1-5 ENTRIESREAD 3",
        "XGROUP DESTROY k g",
        "XGROUP CREATECONSUMER k g c",
        "XGROUP DELCONSUMER k g c",
        "XCLAIM k g c 0 1-1 TIME 1700000000000 RETRYCOUNT 9223372036854775807 FORCE JUSTID",
    ];

    #[test]
    fn redis_70_forms_pass_unchanged() {
        for s in SAME {
            assert_eq!(form(s), RedisForm::Same, "{s}");
            check_patch(&rec(s));
        }
    }

    #[test]
    fn streamd_records_and_8x_only_commands_become_padding() {
        for s in [
            "STREAMD.NACK k g 1-1 3",
            "STREAMD.CONSUMER k g c 1000 -1",
            "STREAMD.IDMP k 100 100 4 1",
            "streamd.iid k p i 1-1",
            "STREAMD.GROUP k g 1-1 -1",
            "STREAMD.PENDING k g c 1-1 1000 2",
            "XNACK k g FAIL IDS 2 1-1 1-2 RETRYCOUNT 3 FORCE",
            "xnack k g silent IDS 1 1-1",
            "XCFGSET k IDMP-DURATION 100 IDMP-MAXSIZE 100",
            "XCFGSET k MAXAGE 60000",
            "XCFGSET k MAXBYTES 1000000 RETENTION-REFS ACKED",
            "XGROUP SETDLQ k g dead MAXDELIVERIES 3",
            "xgroup setdlq k g NONE",
            "XIDMPRECORD k p i 1-1",
            "XTRIM k MAXLEN = 2 ACKED",
            "XDELEX k ACKED IDS 1 1-1",
            "XDELEX k IDS 1 1-1 acked",
        ] {
            assert_eq!(form(s), RedisForm::Drop, "{s}");
            check_patch(&rec(s));
        }
    }

    #[test]
    fn a_streamd_prefix_alone_is_not_a_streamd_record() {
        assert_eq!(form("STREAMD"), RedisForm::Same);
        assert_eq!(form("STREAMD."), RedisForm::Drop);
    }

    #[test]
    fn replaced_forms() {
        for (native, redis) in [
            // Reference policies: KEEPREF is 7.0's behaviour; DELREF removes the same entries.
            (
                "XADD k DELREF MAXLEN = 3 1-4 f v",
                "XADD k MAXLEN = 3 1-4 f v",
            ),
            (
                "XADD k MAXLEN = 3 keepref 1-4 f v",
                "XADD k MAXLEN = 3 1-4 f v",
            ),
            // ACKED: the trim clause goes, the entry stays.
            ("XADD k ACKED MAXLEN = 3 1-4 f v", "XADD k 1-4 f v"),
            (
                "XADD k NOMKSTREAM MAXLEN ~ 3 LIMIT 9 ACKED 1-4 f v",
                "XADD k NOMKSTREAM 1-4 f v",
            ),
            // IDMP.
            ("XADD k IDMP p i 1-4 f v", "XADD k 1-4 f v"),
            ("XADD k idmpauto p 1-4 f v", "XADD k 1-4 f v"),
            (
                "XADD k DELREF MAXLEN = 3 IDMP p i 1-4 f v",
                "XADD k MAXLEN = 3 1-4 f v",
            ),
            (
                "XADD k IDMPAUTO p ACKED MAXLEN = 0 1-4 IDMP v",
                "XADD k 1-4 IDMP v",
            ),
            // XTRIM.
            ("XTRIM k MAXLEN = 3 DELREF", "XTRIM k MAXLEN = 3"),
            ("XTRIM k KEEPREF MINID = 5-0", "XTRIM k MINID = 5-0"),
            // XACKDEL: the acknowledgement.
            ("XACKDEL k g IDS 2 1-1 1-2", "XACK k g 1-1 1-2"),
            ("XACKDEL k g DELREF IDS 1 1-1", "XACK k g 1-1"),
            ("xackdel k g IDS 1 1-1 ACKED", "XACK k g 1-1"),
            // XDELEX: the deletion, unless ACKED.
            ("XDELEX k IDS 1 1-1", "XDEL k 1-1"),
            ("XDELEX k KEEPREF IDS 2 1-1 2-2", "XDEL k 1-1 2-2"),
            ("xdelex k ids 1 1-1 DELREF", "XDEL k 1-1"),
        ] {
            assert_eq!(form(native), RedisForm::Replace(rec(redis)), "{native}");
            check_patch(&rec(native));
        }
    }

    #[test]
    fn option_words_are_read_as_c_strings() {
        let r = vec![
            b"XADD".to_vec(),
            b"k".to_vec(),
            b"DELREF\0x".to_vec(),
            b"MAXLEN".to_vec(),
            b"=".to_vec(),
            b"1".to_vec(),
            b"1-1".to_vec(),
            b"f".to_vec(),
            b"v".to_vec(),
        ];
        assert_eq!(
            form_of(&r),
            RedisForm::Replace(rec("XADD k MAXLEN = 1 1-1 f v"))
        );
        // A second policy word is not an option: it would be the ID (streamd refuses it).
        assert_eq!(
            form("XADD k DELREF ACKED 1-1 f v"),
            RedisForm::Replace(rec("XADD k ACKED 1-1 f v"))
        );
    }

    fn form_of(r: &[Vec<u8>]) -> RedisForm {
        redis_form(&refs(r))
    }

    #[test]
    fn fields_after_the_id_are_never_options() {
        assert_eq!(form("XADD k 1-1 DELREF IDMP p i"), RedisForm::Same);
        assert_eq!(form("XADD k * IDMP p"), RedisForm::Same);
    }

    #[test]
    fn records_that_do_not_parse_pass_unchanged() {
        for s in [
            "XADD",
            "XTRIM k BOGUS DELREF",
            "XACKDEL k g IDS 0 1-1",
            "XACKDEL k g IDS 3 1-1",
            "XACKDEL k g",
            "XDELEX k DELREF",
            "XDELEX k IDS x 1-1",
            "RESTORE k 0",
            "RESTORE k 0 short",
        ] {
            assert_eq!(form(s), RedisForm::Same, "{s}");
        }
        assert_eq!(redis_form(&[]), RedisForm::Same);
    }

    #[test]
    fn a_repeated_ids_block_takes_the_last_as_streamd_does() {
        assert_eq!(
            form("XDELEX k IDS 1 1-1 IDS 2 2-2 3-3"),
            RedisForm::Replace(rec("XDEL k 2-2 3-3"))
        );
    }

    #[test]
    fn xackdel_and_xack_with_xdel_would_not_fit() {
        // Why XACKDEL becomes XACK alone (module doc, note 4).
        let native = encoded(&rec("XACKDEL k g IDS 1 1-1"));
        let both = encoded(&rec("XACK k g 1-1")).len() + encoded(&rec("XDEL k 1-1")).len();
        assert_eq!((native.len(), both), (56, 67));
    }

    #[test]
    fn patch_pads_before_the_form_and_keeps_the_length() {
        let r = rec("XACKDEL orders workers IDS 1 1700000000000-0");
        let native = encoded(&r);
        let p = patch(&refs(&r), native.len()).expect("patched");
        let body =
            b"*4\r\n$4\r\nXACK\r\n$6\r\norders\r\n$7\r\nworkers\r\n$15\r\n1700000000000-0\r\n";
        assert_eq!(p.len(), native.len());
        assert_eq!(&p[p.len() - body.len()..], &body[..]);
        let pad = native.len() - body.len();
        assert_eq!(&p[..pad], &vec![b'\n'; pad][..]);
    }

    #[test]
    fn patch_of_a_record_with_no_form_is_all_padding() {
        let nack = [b"STREAMD.NACK".as_slice(), b"k"];
        assert_eq!(patch(&nack, 7), Some(b"\n\n\n\n\n\n\n".to_vec()));
        assert_eq!(patch(&nack[..1], 0), Some(Vec::new()));
        let xadd = [b"XADD".as_slice(), b"k", b"1-1", b"f", b"v"];
        assert_eq!(patch(&xadd, 40), None);
    }

    #[test]
    fn a_replacement_longer_than_the_record_becomes_padding() {
        // Given a length shorter than the form's (no real record is), all padding.
        let r = rec("XADD k IDMP p i 1-1 f v");
        assert_eq!(patch(&refs(&r), 5), Some(vec![PADDING; 5]));
        let needed = encoded(&rec("XADD k 1-1 f v")).len();
        let exact = patch(&refs(&r), needed).expect("patched");
        assert_eq!(exact, encoded(&rec("XADD k 1-1 f v")));
    }

    #[test]
    fn redis_70_rdb_version_is_the_one_type_19_payloads_carry() {
        assert_eq!(REDIS_70_RDB_VERSION, payload::VERSION_FOR_TYPE_19);
    }

    // --- RESTORE payloads ------------------------------------------------------------

    const D: IdmpDefaults = IDMP_DEFAULTS;

    fn id(ms: u64) -> StreamId {
        StreamId::new(ms, 0)
    }

    /// Entries 1-0..=3-0 with `f v`.
    fn plain() -> Stream {
        let mut s = Stream::new();
        let f = [Bytes::from_static(b"f"), Bytes::from_static(b"v")];
        for i in 1..=3 {
            s.append(id(i), &f, &NodeLimits::default());
        }
        s
    }

    /// `plain` with group `g`: consumer `c` has 1-0 and 2-0 pending.
    fn with_group() -> Stream {
        let mut s = plain();
        assert!(s.groups_mut().create(b"g", id(2), Some(2)));
        let mut g = s.group_mut(b"g").expect("created");
        let (c, _) = g.get_or_create_consumer(b"c", 1000);
        g.deliver(c, id(1), 1000);
        g.deliver(c, id(2), 1000);
        s
    }

    /// Type 21: `c` was seen after it was last active.
    fn type_21_stream() -> Stream {
        let mut s = with_group();
        let mut g = s.group_mut(b"g").expect("exists");
        let (c, _) = g.get_or_create_consumer(b"c", 0);
        g.set_consumer_times(c, 3000, Some(1000));
        s
    }

    /// Type 26: IDMP state.
    fn type_26_stream() -> Stream {
        let mut s = with_group();
        s.idmp_mut(D).record(b"p", b"i", id(3), true);
        s
    }

    /// Type 27: 1-0 NACKed; with `keep_consumer` false, `c` is deleted afterwards (its
    /// owned 2-0 goes with it; the unowned 1-0 stays).
    fn type_27_stream(keep_consumer: bool) -> Stream {
        let mut s = with_group();
        let mut g = s.group_mut(b"g").expect("exists");
        assert!(g.nack(id(1), NackMode::Fail, None, false));
        if !keep_consumer {
            g.delete_consumer(b"c");
        }
        s
    }

    fn dump(s: &Stream) -> Vec<u8> {
        payload::dump(s, D)
    }

    fn version_of(p: &[u8]) -> u16 {
        u16::from_le_bytes([p[p.len() - 10], p[p.len() - 9]])
    }

    /// The payload of type byte and value `body` with a footer saying `version`.
    fn with_footer_version(body: &[u8], version: u16) -> Vec<u8> {
        let mut p = body.to_vec();
        p.extend_from_slice(&version.to_le_bytes());
        let crc = crate::rdb::crc64::crc64(&p);
        p.extend_from_slice(&crc.to_le_bytes());
        p
    }

    /// Payload `p` with its footer saying `version` (CRC redone).
    fn with_version(p: &[u8], version: u16) -> Vec<u8> {
        with_footer_version(&p[..p.len() - 10], version)
    }

    fn restore_record(p: &[u8]) -> Vec<Vec<u8>> {
        vec![
            b"RESTORE".to_vec(),
            b"k".to_vec(),
            b"0".to_vec(),
            p.to_vec(),
            b"ABSTTL".to_vec(),
            b"REPLACE".to_vec(),
        ]
    }

    /// The payload of the RESTORE Redis 7.0 gets for payload `p`.
    fn redis_payload(p: &[u8]) -> Vec<u8> {
        match form_of(&restore_record(p)) {
            RedisForm::Replace(f) => {
                assert_eq!(f[..3], restore_record(p)[..3]);
                assert_eq!(f[4..], restore_record(p)[4..]);
                f[3].clone()
            }
            other => panic!("expected a replaced payload, got {other:?}"),
        }
    }

    #[test]
    fn a_type_19_version_10_payload_passes_unchanged() {
        let p = dump(&with_group());
        assert_eq!((p[0], version_of(&p)), (STREAM_LISTPACKS_2, 10));
        assert_eq!(form_of(&restore_record(&p)), RedisForm::Same);
    }

    #[test]
    fn a_type_19_payload_of_a_newer_redis_gets_version_10() {
        let p = with_version(&dump(&with_group()), 12);
        let q = redis_payload(&p);
        assert_eq!(q, dump(&with_group()));
        assert_eq!(q.len(), p.len());
        check_patch(&restore_record(&p));
    }

    #[test]
    fn newer_stream_types_are_written_as_type_19() {
        for (s, t) in [
            (type_21_stream(), STREAM_LISTPACKS_3),
            (type_26_stream(), STREAM_LISTPACKS_4),
            (type_27_stream(true), STREAM_LISTPACKS_5),
        ] {
            assert_eq!(encoding_for(&s, D), t);
            let p = dump(&s);
            let q = redis_payload(&p);
            assert_eq!((q[0], version_of(&q)), (STREAM_LISTPACKS_2, 10), "type {t}");
            assert!(q.len() <= p.len(), "type {t}");
            check_patch(&restore_record(&p));
            // streamd reads it back: same entries and groups, as far as type 19 goes.
            let back = payload::restore(&q, D).expect("a valid payload");
            assert_eq!(back.len(), s.len());
            assert!(back.idmp().is_none());
            let g = back.groups().get(b"g").expect("the group");
            assert_eq!(g.pel_count(), 2, "type {t}");
            assert_eq!(g.nacked_count(), 0);
        }
    }

    #[test]
    fn nacked_entries_go_to_consumer_empty_with_delivery_time_0() {
        let q = redis_payload(&dump(&type_27_stream(true)));
        let back = payload::restore(&q, D).expect("a valid payload");
        let g = back.groups().get(b"g").expect("the group");
        let p = g.pending(id(1)).expect("still pending");
        assert_eq!(
            (p.owner, p.delivery_time, p.delivery_count),
            (Some(&b""[..]), 0, 1)
        );
        assert_eq!(g.pending(id(2)).and_then(|p| p.owner), Some(&b"c"[..]));
    }

    #[test]
    fn nacked_entries_leave_the_pel_when_adding_consumer_empty_does_not_fit() {
        // No consumer left: `""` would add more than the NACK zone and IDMP block save.
        let s = type_27_stream(false);
        let p = dump(&s);
        let mut adopted = s.clone();
        adopt_unowned(&mut adopted, &unowned_entries(&s));
        assert!(type_19(&adopted).len() > p.len());
        let q = redis_payload(&p);
        assert!(q.len() <= p.len());
        let back = payload::restore(&q, D).expect("a valid payload");
        let g = back.groups().get(b"g").expect("the group");
        assert_eq!((g.pel_count(), g.consumer_count()), (0, 0));
        check_patch(&restore_record(&p));
    }

    #[test]
    fn an_unreadable_newer_payload_becomes_padding() {
        let p = with_footer_version(&[STREAM_LISTPACKS_3, 1, 2, 3], 12);
        assert_eq!(form_of(&restore_record(&p)), RedisForm::Drop);
    }

    // --- against a real Redis 7.0 ----------------------------------------------------

    /// A `redis-server` child on a free local port, killed when dropped.
    struct RedisServer {
        child: std::process::Child,
        port: u16,
        _dir: tempfile::TempDir,
    }

    impl RedisServer {
        /// Starts Debian's redis-server with `extra` arguments, or `None` when it is not
        /// installed.
        fn start(extra: &[&str]) -> Option<RedisServer> {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let dir = tempfile::tempdir().expect("a temporary directory");
            let child = std::process::Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .args(["--sanitize-dump-payload", "yes"])
                .args(extra)
                .arg("--dir")
                .arg(dir.path())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .ok()?;
            Some(RedisServer {
                child,
                port,
                _dir: dir,
            })
        }

        fn connect(&self) -> std::net::TcpStream {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            loop {
                match std::net::TcpStream::connect(("127.0.0.1", self.port)) {
                    Ok(c) => {
                        c.set_read_timeout(Some(std::time::Duration::from_secs(10)))
                            .expect("timeout");
                        return c;
                    }
                    Err(e) if std::time::Instant::now() > deadline => {
                        panic!("redis-server did not accept connections: {e}")
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
                }
            }
        }
    }

    impl Drop for RedisServer {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// A RESP2 reply.
    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Reply {
        Status(String),
        Error(String),
        Int(i64),
        Bulk(Option<Vec<u8>>),
        Array(Option<Vec<Reply>>),
    }

    /// A blocking RESP2 reply reader (10 s timeout per read).
    struct Conn {
        s: std::io::BufReader<std::net::TcpStream>,
    }

    impl Conn {
        fn send(&mut self, bytes: &[u8]) {
            use std::io::Write;
            self.s.get_mut().write_all(bytes).expect("send");
        }

        fn line(&mut self) -> Vec<u8> {
            use std::io::BufRead;
            let mut l = Vec::new();
            self.s.read_until(b'\n', &mut l).expect("a reply");
            assert!(l.ends_with(b"\r\n"), "truncated reply {l:?}");
            l.truncate(l.len() - 2);
            l
        }

        fn reply(&mut self) -> Reply {
            use std::io::Read;
            let l = self.line();
            let text = String::from_utf8_lossy(&l[1..]).into_owned();
            let n = || text.parse::<i64>().expect("a number");
            match l.first() {
                Some(b'+') => Reply::Status(text),
                Some(b'-') => Reply::Error(text),
                Some(b':') => Reply::Int(n()),
                Some(b'$') if n() < 0 => Reply::Bulk(None),
                Some(b'$') => {
                    let mut b = vec![0; n() as usize + 2];
                    self.s.read_exact(&mut b).expect("bulk");
                    b.truncate(b.len() - 2);
                    Reply::Bulk(Some(b))
                }
                Some(b'*') if n() < 0 => Reply::Array(None),
                Some(b'*') => Reply::Array(Some((0..n()).map(|_| self.reply()).collect())),
                _ => panic!("unexpected reply line {l:?}"),
            }
        }

        fn call(&mut self, s: &str) -> Reply {
            self.send(&encoded(&rec(s)));
            self.reply()
        }
    }

    /// Effects in the forms streamd emits, telling one consistent story.
    fn story() -> Vec<Vec<Vec<u8>>> {
        let mut r: Vec<Vec<Vec<u8>>> = [
            "SELECT 0",
            "XADD s 1-1 f v",
            "XADD s IDMP p i1 1-2 f v",
            "STREAMD.IDMP s 100 100 1 0",
            "XADD s IDMPAUTO p 1-3 f v",
            "STREAMD.IDMP s 100 100 2 1",
            "XGROUP CREATE s g 0-0 ENTRIESREAD 0",
            "XGROUP CREATE s2 g 0-0 MKSTREAM ENTRIESREAD -1",
            "XGROUP CREATECONSUMER s g alice",
            "STREAMD.CONSUMER s g alice 1000 -1",
            "XCLAIM s g alice 0 1-1 TIME 1000 RETRYCOUNT 1 FORCE JUSTID",
            "XCLAIM s g alice 0 1-2 TIME 1000 RETRYCOUNT 1 FORCE JUSTID",
            "XCLAIM s g alice 0 1-3 TIME 1000 RETRYCOUNT 1 FORCE JUSTID",
            "XGROUP SETID s g 1-3 ENTRIESREAD 3",
            "STREAMD.CONSUMER s g alice 1000 1000",
            "XNACK s g FAIL IDS 1 1-1",
            "STREAMD.NACK s g 1-1 1",
            "XCLAIM s g bob 0 1-1 TIME 2000 RETRYCOUNT 2 FORCE JUSTID",
            "XACK s g 1-1",
            "XACKDEL s g IDS 1 1-2",
            "XACKDEL s g ACKED IDS 1 1-3",
            "MULTI",
            "XADD s DELREF MAXLEN = 3 1-4 f v",
            "XADD s ACKED MAXLEN = 3 1-5 f v",
            "EXEC",
            "XTRIM s MAXLEN = 3 DELREF",
            "XTRIM s MAXLEN = 2 ACKED",
            "XDELEX s IDS 1 1-3",
            "XDELEX s DELREF IDS 2 1-4 1-9",
            "XDELEX s ACKED IDS 1 1-5",
            "XDEL s 1-2",
            "XSETID s 1-9 ENTRIESADDED 10 MAXDELETEDID 1-4",
            "XCFGSET s IDMP-DURATION 100 IDMP-MAXSIZE 100",
            "XIDMPRECORD s p i2 1-5",
            "XGROUP SETID s g 1-5 ENTRIESREAD -1",
            "XGROUP DELCONSUMER s g alice",
            "XGROUP DESTROY s2 g",
            "PEXPIREAT s 99999999999999",
            "PERSIST s",
            "COPY s s3",
            "COPY s s3 DB 1 REPLACE",
            "RENAME s3 s4",
            "RENAMENX s4 s5",
            "MOVE s5 2",
            "SWAPDB 0 1",
            "SWAPDB 0 1",
            "SELECT 1",
            "DEL s3",
            "SELECT 0",
            "UNLINK s4 s5",
        ]
        .iter()
        .map(|s| rec(s))
        .collect();
        let plain19 = dump(&with_group());
        for (key, p) in [
            ("r19", plain19.clone()),
            ("r19v12", with_version(&plain19, 12)),
            ("r21", dump(&type_21_stream())),
            ("r26", dump(&type_26_stream())),
            ("r27", dump(&type_27_stream(true))),
            ("r27b", dump(&type_27_stream(false))),
        ] {
            let mut rr = restore_record(&p);
            rr[1] = key.as_bytes().to_vec();
            r.push(rr);
        }
        r
    }

    /// XPENDING's summary of an empty PEL.
    fn no_pending() -> Reply {
        Reply::Array(Some(vec![
            Reply::Int(0),
            Reply::Bulk(None),
            Reply::Bulk(None),
            Reply::Array(None),
        ]))
    }

    #[test]
    fn redis_70_accepts_every_redis_form() {
        let Some(server) = RedisServer::start(&[]) else {
            eprintln!("note: redis-server is not installed; the Redis 7.0 check is skipped");
            return;
        };
        let mut c = Conn {
            s: std::io::BufReader::new(server.connect()),
        };
        match c.call("INFO server") {
            Reply::Bulk(Some(info)) => {
                let info = String::from_utf8_lossy(&info).into_owned();
                if !info.contains("redis_version:7.0.") {
                    eprintln!("note: redis-server is not 7.0; checking against it anyway");
                }
            }
            other => panic!("INFO: {other:?}"),
        }
        for r in story() {
            let argv = refs(&r);
            let native = encoded(&r);
            let name = String::from_utf8_lossy(&native[..native.len().min(60)]).into_owned();
            let sent = patch(&argv, native.len()).unwrap_or_else(|| native.clone());
            assert_eq!(sent.len(), native.len());
            c.send(&sent);
            if sent.iter().all(|&b| b == PADDING) {
                continue;
            }
            let reply = c.reply();
            assert!(!matches!(reply, Reply::Error(_)), "{name:?}: {reply:?}");
        }
        // Padding produced no reply of its own: the next reply is PING's.
        assert_eq!(c.call("PING"), Reply::Status("PONG".into()));
        // The story's end, as the table says a Redis replica sees it.
        assert_eq!(c.call("XLEN s"), Reply::Int(1));
        assert_eq!(
            c.call("XRANGE s - +"),
            Reply::Array(Some(vec![Reply::Array(Some(vec![
                Reply::Bulk(Some(b"1-5".to_vec())),
                Reply::Array(Some(vec![
                    Reply::Bulk(Some(b"f".to_vec())),
                    Reply::Bulk(Some(b"v".to_vec())),
                ])),
            ]))]))
        );
        assert_eq!(c.call("XPENDING s g"), no_pending());
        for key in ["r19", "r19v12", "r21", "r26", "r27", "r27b"] {
            assert_eq!(c.call(&format!("XLEN {key}")), Reply::Int(3), "{key}");
        }
        // The NACKed entry of r27 belongs to consumer "" in Redis.
        let pending = c.call("XPENDING r27 g - + 10");
        let Reply::Array(Some(entries)) = &pending else {
            panic!("XPENDING r27: {pending:?}");
        };
        let Some(Reply::Array(Some(first))) = entries.first() else {
            panic!("XPENDING r27: {pending:?}");
        };
        assert_eq!(entries.len(), 2, "{pending:?}");
        assert_eq!(first[0], Reply::Bulk(Some(b"1-0".to_vec())));
        assert_eq!(first[1], Reply::Bulk(Some(Vec::new())));
        assert_eq!(first[3], Reply::Int(1));
        assert_eq!(c.call("XPENDING r27b g"), no_pending());
        for s in ["FLUSHDB", "FLUSHALL"] {
            assert_eq!(c.call(s), Reply::Status("OK".into()));
        }
    }

    /// The value of `field` in an INFO reply.
    fn info_field(info: &Reply, field: &str) -> Option<String> {
        let Reply::Bulk(Some(text)) = info else {
            return None;
        };
        String::from_utf8_lossy(text).lines().find_map(|l| {
            l.strip_prefix(field)
                .and_then(|r| r.strip_prefix(':'))
                .map(|v| v.trim().to_string())
        })
    }

    /// Polls the replica's INFO until `field` is `want` (10 s at most); the last value.
    fn wait_info(c: &mut Conn, section: &str, field: &str, want: &str) -> Option<String> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let v = info_field(&c.call(&format!("INFO {section}")), field);
            if v.as_deref() == Some(want) || std::time::Instant::now() > deadline {
                return v;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    #[test]
    fn a_redis_70_replica_takes_the_patched_stream_at_the_native_offsets() {
        use std::time::{Duration, Instant};
        // A fake primary: full resync with an empty RDB, then the story as a Redis
        // replica gets it.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a local port");
        let primary_port = listener.local_addr().expect("bound").port().to_string();
        let Some(server) = RedisServer::start(&["--replicaof", "127.0.0.1", &primary_port]) else {
            eprintln!(
                "note: redis-server is not installed; the Redis 7.0 replica check is skipped"
            );
            return;
        };
        listener.set_nonblocking(true).expect("nonblocking");
        let deadline = Instant::now() + Duration::from_secs(10);
        let link = loop {
            match listener.accept() {
                Ok((link, _)) => break link,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    assert!(Instant::now() < deadline, "the replica did not connect");
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("accept: {e}"),
            }
        };
        link.set_nonblocking(false).expect("blocking");
        link.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let mut primary = Conn {
            s: std::io::BufReader::new(link),
        };
        loop {
            let Reply::Array(Some(cmd)) = primary.reply() else {
                panic!("the replica sent something else than a command");
            };
            let name = match cmd.first() {
                Some(Reply::Bulk(Some(n))) => n.to_ascii_uppercase(),
                other => panic!("handshake: {other:?}"),
            };
            match &name[..] {
                b"PING" => primary.send(b"+PONG\r\n"),
                b"REPLCONF" | b"AUTH" => primary.send(b"+OK\r\n"),
                b"PSYNC" | b"SYNC" => break,
                other => panic!("handshake: {:?}", String::from_utf8_lossy(other)),
            }
        }
        let mut rdb = b"REDIS0010\xff".to_vec();
        let crc = crate::rdb::crc64::crc64(&rdb);
        rdb.extend_from_slice(&crc.to_le_bytes());
        primary.send(b"+FULLRESYNC 0123456789abcdef0123456789abcdef01234567 0\r\n");
        primary.send(format!("${}\r\n", rdb.len()).as_bytes());
        primary.send(&rdb);

        let mut total = 0usize;
        for r in story() {
            let argv = refs(&r);
            let native = encoded(&r);
            let sent = patch(&argv, native.len()).unwrap_or_else(|| native.clone());
            primary.send(&sent);
            total += native.len();
        }
        let mut replica = Conn {
            s: std::io::BufReader::new(server.connect()),
        };
        let total = total.to_string();
        assert_eq!(
            wait_info(&mut replica, "replication", "slave_repl_offset", &total),
            Some(total.clone()),
            "the replica's offset is the native stream's"
        );
        assert_eq!(
            info_field(&replica.call("INFO replication"), "master_link_status").as_deref(),
            Some("up")
        );
        assert_eq!(
            info_field(&replica.call("INFO stats"), "total_error_replies").as_deref(),
            Some("0"),
            "no record failed on the replica"
        );
        assert_eq!(replica.call("XLEN s"), Reply::Int(1));
        assert_eq!(replica.call("XLEN r27"), Reply::Int(3));
        // A record that is all padding moves the applied offset only with the next
        // command: that is why padding goes first.
        let nack = rec("STREAMD.NACK s g 1-5 1");
        let padding = patch(&refs(&nack), encoded(&nack).len()).expect("padding");
        primary.send(&padding);
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(
            info_field(&replica.call("INFO replication"), "slave_repl_offset"),
            Some(total.clone())
        );
        let ping = encoded(&rec("PING"));
        primary.send(&ping);
        let after: usize = total.parse::<usize>().expect("a number") + padding.len() + ping.len();
        let after = after.to_string();
        assert_eq!(
            wait_info(&mut replica, "replication", "slave_repl_offset", &after),
            Some(after.clone())
        );
        // A native 8.2 record, unpatched, is an error there (the count above is live).
        let xackdel = encoded(&rec("XACKDEL s g IDS 1 1-5"));
        primary.send(&xackdel);
        assert_eq!(
            wait_info(&mut replica, "stats", "total_error_replies", "1").as_deref(),
            Some("1")
        );
    }
}
