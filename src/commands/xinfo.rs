//! The XINFO container: `XINFO STREAM`, `XINFO GROUPS`, `XINFO CONSUMERS` and
//! `XINFO HELP` (reference §2.16).
//!
//! Every subcommand but HELP looks the key up first (`ERR no such key`), then checks its
//! own options, as Redis's `xinfoCommand` does. Objects are maps in RESP3 and flat
//! `k1 v1 k2 v2 ...` arrays in RESP2 ([`RespWriter::map`]).
//!
//! ```text
//! XINFO STREAM key             16 fields: length radix-tree-keys radix-tree-nodes
//!                              last-generated-id max-deleted-entry-id entries-added
//!                              recorded-first-entry-id idmp-duration idmp-maxsize
//!                              pids-tracked iids-tracked iids-added iids-duplicates
//!                              groups first-entry last-entry
//! XINFO STREAM key FULL [COUNT n]
//!                              15 fields: the first 13 above, entries, groups
//! ```
//!
//! streamd's own settings add fields only where they are set, so that without them
//! every reply keeps Redis's shape: after `iids-duplicates`, `max-age`, `max-bytes` and
//! `retention-refs` (when not KEEPREF) of the stream's retention (XCFGSET); after a
//! group's last field (`lag` in XINFO GROUPS, `nacked-count` in FULL), `dlq-key` and
//! `max-deliveries` of its dead-letter stream (XGROUP SETDLQ).
//!
//! The consumer-group parts are small functions ([`write_full_groups`], [`write_groups`],
//! [`write_consumers`]); `entries-read` and `lag` follow reference §3.3 (null when
//! unknown). The IDMP fields show the stream's IDMP state (stream/idmp.rs), or the
//! configured defaults and zeros for a stream that never used IDMP. With
//! `compat-version` below 8.6 the six IDMP fields are left out (10 and 9 fields, the
//! 7.x shapes), and below 8.8 FULL's groups have no `nacked-count` (7 fields).

use super::STREAM;
use super::reply::StreamReply;
use super::xgroup::counters;
use super::xrange::{lookup_for_reply, write_entry, write_range};
use super::{CommandSpec, Family, flags::*, is, parse_i64};
use crate::core::Ctx;
use crate::error::{ReplyError, lossy};
use crate::resp::Argv;
use crate::resp::writer::RespWriter;
use crate::stream::group::{ConsumerGroup, StreamCounters};
use crate::stream::{RefPolicy, Stream, StreamId};

/// XINFO STREAM FULL's default COUNT (also used for a negative COUNT).
const FULL_DEFAULT_COUNT: usize = 10;

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[CommandSpec {
    handler: xinfo_help,
    // Containers are only @slow in Redis: `+@stream` names the subcommands.
    ..CommandSpec::container(
        "xinfo",
        "stream",
        "A container for stream introspection commands.",
        "5.0.0",
        XINFO_SUBCOMMANDS,
    )
}];

/// The family of XINFO's subcommands: the key is the argument after the subcommand.
const XINFO: Family = Family::new("stream").categories(STREAM).keys(2, 2, 1);

const XINFO_SUBCOMMANDS: &[CommandSpec] = &[
    XINFO.row(
        "xinfo|consumers",
        4,
        READONLY,
        "Returns a list of the consumers in a consumer group.",
        "5.0.0",
        xinfo_consumers,
    ),
    XINFO.row(
        "xinfo|groups",
        3,
        READONLY,
        "Returns a list of the consumer groups of a stream.",
        "5.0.0",
        xinfo_groups,
    ),
    XINFO.row(
        "xinfo|stream",
        -3,
        READONLY,
        "Returns information about a stream.",
        "5.0.0",
        xinfo_stream,
    ),
    CommandSpec {
        name: "xinfo|help",
        arity: 2,
        flags: LOADING | STALE,
        first_key: 0,
        last_key: 0,
        key_step: 0,
        acl: STREAM,
        summary: "Returns helpful text about the different subcommands.",
        since: "5.0.0",
        group: "stream",
        handler: xinfo_help,
        subcommands: &[],
        key_flags: super::default_key_flags(LOADING | STALE, 0),
    },
];

/// `XINFO HELP`. Redis's own text lacks the closing `]` of the STREAM line; kept.
fn xinfo_help(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    super::reply_help(
        ctx,
        "XINFO",
        &[
            "CONSUMERS <key> <groupname>",
            "    Show consumers of <groupname>.",
            "GROUPS <key>",
            "    Show the stream consumer groups.",
            "STREAM <key> [FULL [COUNT <count>]",
            "    Show information about the stream.",
        ],
    );
    Ok(())
}

/// Parsed `XINFO STREAM key [FULL [COUNT n]]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XInfoStream {
    /// The 16-field summary.
    Summary,
    /// FULL, with at most this many entries and PEL items per list (`0` = all).
    Full {
        /// COUNT (default 10; negative becomes 10).
        count: usize,
    },
}

impl XInfoStream {
    /// Parses the options after the key: none, `FULL`, or `FULL COUNT n`; any other
    /// shape is the subcommand syntax error.
    pub fn parse(argv: &Argv) -> Result<XInfoStream, ReplyError> {
        let opts = &argv[3..];
        if opts.is_empty() {
            return Ok(XInfoStream::Summary);
        }
        if (opts.len() != 1 && opts.len() != 3)
            || !is(&opts[0], "FULL")
            || (opts.len() == 3 && !is(&opts[1], "COUNT"))
        {
            return Err(ReplyError::SubcommandSyntax {
                sub: lossy(&argv[1]),
                container: "XINFO".to_string(),
            });
        }
        let mut count = FULL_DEFAULT_COUNT;
        if opts.len() == 3 {
            let n = parse_i64(&opts[2])?;
            count = usize::try_from(n).unwrap_or(FULL_DEFAULT_COUNT);
        }
        Ok(XInfoStream::Full { count })
    }
}

/// What XINFO STREAM shows beyond the 7.x fields: the IDMP fields (8.6) when `idmp` is
/// set, and FULL's `nacked-count` (8.8) when `nacked` is; `compat-version` clears them.
#[derive(Debug, Clone, Copy)]
struct Shape {
    /// Show the six IDMP fields.
    idmp: bool,
    /// Show `nacked-count` in FULL groups.
    nacked: bool,
    /// IDMP settings of a stream without IDMP state (the configured defaults).
    defaults: (i64, i64),
}

/// Writes fields 1–13 (1–7 without IDMP), common to the summary and FULL.
fn write_common_fields(out: &mut RespWriter, stream: &Stream, shape: Shape) {
    let int = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    let uint = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    out.bulk(b"length");
    out.integer(uint(stream.len()));
    out.bulk(b"radix-tree-keys");
    out.integer(int(stream.radix_tree_keys()));
    out.bulk(b"radix-tree-nodes");
    out.integer(int(stream.radix_tree_nodes()));
    out.bulk(b"last-generated-id");
    out.bulk_id(stream.last_id());
    out.bulk(b"max-deleted-entry-id");
    out.bulk_id(stream.max_deleted_entry_id());
    out.bulk(b"entries-added");
    out.integer(uint(stream.entries_added()));
    out.bulk(b"recorded-first-entry-id");
    out.bulk_id(stream.first_id());
    if shape.idmp {
        write_idmp_fields(out, stream, shape.defaults);
    }
    write_retention_fields(out, stream);
}

/// streamd's retention fields, each only when set (so a stream without retention keeps
/// Redis's shape): `max-age` (ms), `max-bytes`, and `retention-refs` when it is not the
/// default KEEPREF ([`retention_field_count`] counts them).
fn write_retention_fields(out: &mut RespWriter, stream: &Stream) {
    let r = stream.retention();
    if r.max_age_ms != 0 {
        out.bulk(b"max-age");
        out.integer(uint(r.max_age_ms));
    }
    if r.max_bytes != 0 {
        out.bulk(b"max-bytes");
        out.integer(uint(r.max_bytes));
    }
    if r.refs != RefPolicy::KeepRef {
        out.bulk(b"retention-refs");
        out.bulk(if r.refs == RefPolicy::Acked {
            b"acked"
        } else {
            b"delref"
        });
    }
}

/// How many fields [`write_retention_fields`] writes for `stream` (must agree with it).
fn retention_field_count(stream: &Stream) -> usize {
    let r = stream.retention();
    usize::from(r.max_age_ms != 0)
        + usize::from(r.max_bytes != 0)
        + usize::from(r.refs != RefPolicy::KeepRef)
}

/// The six IDMP fields (always present since 8.6, even for a stream that never used
/// IDMP: then the configured defaults and zeros).
fn write_idmp_fields(out: &mut RespWriter, stream: &Stream, (duration, maxsize): (i64, i64)) {
    let values = match stream.idmp() {
        Some(i) => [
            i64::from(i.duration()),
            i64::from(i.maxsize()),
            uint(i.pids_tracked() as u64),
            uint(i.iids_tracked()),
            uint(i.iids_added()),
            uint(i.iids_duplicates()),
        ],
        None => [duration, maxsize, 0, 0, 0, 0],
    };
    let names: [&[u8]; 6] = [
        b"idmp-duration",
        b"idmp-maxsize",
        b"pids-tracked",
        b"iids-tracked",
        b"iids-added",
        b"iids-duplicates",
    ];
    for (name, value) in names.into_iter().zip(values) {
        out.bulk(name);
        out.integer(value);
    }
}

/// `entries-read`: the counter, or null when unknown.
fn write_entries_read(out: &mut RespWriter, g: &ConsumerGroup) {
    match g.entries_read() {
        Some(n) => out.integer(i64::try_from(n).unwrap_or(i64::MAX)),
        None => out.null(),
    }
}

/// `lag`: entries not yet delivered to the group, or null when unknowable (§3.3).
fn write_lag(out: &mut RespWriter, g: &ConsumerGroup, c: &StreamCounters) {
    match g.lag(c) {
        Some(n) => out.integer(i64::try_from(n).unwrap_or(i64::MAX)),
        None => out.null(),
    }
}

fn int(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn uint(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// FULL's `groups` value: an array of 8-field group maps (name, last-delivered-id,
/// entries-read, lag, pel-count, nacked-count, pending, consumers), groups in name order.
/// `pending` lists `[id, consumer-or-"", delivery-time, deliveries]` and each consumer's
/// `pending` lists `[id, delivery-time, deliveries]`, each at most `count` long (0 = all).
pub fn write_full_groups(out: &mut RespWriter, stream: &Stream, count: usize, nacked: bool) {
    let limit = if count == 0 { usize::MAX } else { count };
    let c = counters(stream);
    out.array(stream.groups().len());
    for g in stream.groups().iter() {
        out.map(if nacked { 8 } else { 7 } + dead_letter_field_count(g));
        out.bulk(b"name");
        out.bulk(g.name());
        out.bulk(b"last-delivered-id");
        out.bulk_id(g.last_id());
        out.bulk(b"entries-read");
        write_entries_read(out, g);
        out.bulk(b"lag");
        write_lag(out, g, &c);
        out.bulk(b"pel-count");
        out.integer(int(g.pel_count()));
        if nacked {
            out.bulk(b"nacked-count");
            out.integer(int(g.nacked_count()));
        }
        write_dead_letter_fields(out, g);
        out.bulk(b"pending");
        out.array(g.pel_count().min(limit));
        for e in g.pel_range(StreamId::MIN, StreamId::MAX).take(limit) {
            out.array(4);
            out.bulk_id(e.id);
            out.bulk(e.owner.unwrap_or_default());
            out.integer(uint(e.delivery_time));
            out.integer(uint(e.delivery_count));
        }
        out.bulk(b"consumers");
        out.array(g.consumer_count());
        for (cid, consumer) in g.consumers() {
            out.map(5);
            out.bulk(b"name");
            out.bulk(consumer.name());
            out.bulk(b"seen-time");
            out.integer(uint(consumer.seen_time()));
            out.bulk(b"active-time");
            out.integer(consumer.active_time().map_or(-1, uint));
            out.bulk(b"pel-count");
            out.integer(int(consumer.pel_count()));
            out.bulk(b"pending");
            out.array(consumer.pel_count().min(limit));
            for e in g
                .consumer_pel(cid, StreamId::MIN, StreamId::MAX)
                .take(limit)
            {
                out.array(3);
                out.bulk_id(e.id);
                out.integer(uint(e.delivery_time));
                out.integer(uint(e.delivery_count));
            }
        }
    }
}

/// `XINFO GROUPS`' reply: an array of 6-field group maps (name, consumers, pending,
/// last-delivered-id, entries-read, lag) in name order; `*0` without groups.
pub fn write_groups(out: &mut RespWriter, stream: &Stream) {
    let c = counters(stream);
    out.array(stream.groups().len());
    for g in stream.groups().iter() {
        out.map(6 + dead_letter_field_count(g));
        out.bulk(b"name");
        out.bulk(g.name());
        out.bulk(b"consumers");
        out.integer(int(g.consumer_count()));
        out.bulk(b"pending");
        out.integer(int(g.pel_count()));
        out.bulk(b"last-delivered-id");
        out.bulk_id(g.last_id());
        out.bulk(b"entries-read");
        write_entries_read(out, g);
        out.bulk(b"lag");
        write_lag(out, g, &c);
        write_dead_letter_fields(out, g);
    }
}

/// streamd's dead-letter fields of a group, only when it has a dead-letter stream (so a
/// group without one keeps Redis's shape): `dlq-key` and `max-deliveries`.
fn write_dead_letter_fields(out: &mut RespWriter, g: &ConsumerGroup) {
    if let Some(d) = g.dead_letter() {
        out.bulk(b"dlq-key");
        out.bulk(&d.key);
        out.bulk(b"max-deliveries");
        out.integer(uint(d.max_deliveries));
    }
}

/// How many fields [`write_dead_letter_fields`] writes (must agree with it).
fn dead_letter_field_count(g: &ConsumerGroup) -> usize {
    if g.dead_letter().is_some() { 2 } else { 0 }
}

/// `XINFO CONSUMERS`' reply for `group`: an array of 4-field consumer maps (name,
/// pending, idle = ms since last seen floored at 0, inactive = ms since last active or
/// -1 if never), in name order; or the NOGROUP error.
pub fn write_consumers(
    out: &mut RespWriter,
    stream: &Stream,
    key: &[u8],
    group: &[u8],
    now_ms: u64,
) -> Result<(), ReplyError> {
    let g = stream
        .groups()
        .get(group)
        .ok_or_else(|| ReplyError::NoGroupForKey {
            key: lossy(key),
            group: lossy(group),
        })?;
    let now = uint(now_ms);
    out.array(g.consumer_count());
    for (_, consumer) in g.consumers() {
        out.map(4);
        out.bulk(b"name");
        out.bulk(consumer.name());
        out.bulk(b"pending");
        out.integer(int(consumer.pel_count()));
        out.bulk(b"idle");
        out.integer(now.saturating_sub(uint(consumer.seen_time())).max(0));
        out.bulk(b"inactive");
        out.integer(
            consumer
                .active_time()
                .map_or(-1, |t| now.saturating_sub(uint(t))),
        );
    }
    Ok(())
}

fn xinfo_stream(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    // Parsed first, reported after the key check (Redis looks the key up first).
    let parsed = XInfoStream::parse(argv);
    let shape = Shape {
        idmp: ctx.core.supports(8, 6),
        nacked: ctx.core.supports(8, 8),
        defaults: ctx.core.idmp_defaults,
    };
    let idmp_fields = if shape.idmp { 6 } else { 0 };
    let (stream, out) = lookup_for_reply(ctx, &argv[2])?;
    let stream = stream.ok_or(ReplyError::NoSuchKey)?;
    match parsed? {
        XInfoStream::Summary => {
            out.map(10 + idmp_fields + retention_field_count(stream));
            write_common_fields(out, stream, shape);
            out.bulk(b"groups");
            out.integer(i64::try_from(stream.groups().len()).unwrap_or(i64::MAX));
            out.bulk(b"first-entry");
            match stream.first_entry() {
                Some(e) => write_entry(out, &e),
                None => out.null(),
            }
            out.bulk(b"last-entry");
            match stream.last_entry() {
                Some(e) => write_entry(out, &e),
                None => out.null(),
            }
        }
        XInfoStream::Full { count } => {
            out.map(9 + idmp_fields + retention_field_count(stream));
            write_common_fields(out, stream, shape);
            out.bulk(b"entries");
            write_range(out, stream, StreamId::MIN, StreamId::MAX, false, count);
            out.bulk(b"groups");
            write_full_groups(out, stream, count, shape.nacked);
        }
    }
    Ok(())
}

fn xinfo_groups(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (stream, out) = lookup_for_reply(ctx, &argv[2])?;
    write_groups(out, stream.ok_or(ReplyError::NoSuchKey)?);
    Ok(())
}

fn xinfo_consumers(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let now_ms = ctx.now_ms;
    let (stream, out) = lookup_for_reply(ctx, &argv[2])?;
    let stream = stream.ok_or(ReplyError::NoSuchKey)?;
    write_consumers(out, stream, &argv[2], &argv[3], now_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::resp::argv;

    #[test]
    fn stream_options() {
        let p = |a: &[&str]| XInfoStream::parse(&argv(a));
        assert_eq!(p(&["xinfo", "stream", "k"]), Ok(XInfoStream::Summary));
        assert_eq!(
            p(&["xinfo", "stream", "k", "full"]),
            Ok(XInfoStream::Full { count: 10 })
        );
        assert_eq!(
            p(&["xinfo", "stream", "k", "FULL", "count", "0"]),
            Ok(XInfoStream::Full { count: 0 })
        );
        assert_eq!(
            p(&["xinfo", "stream", "k", "FULL", "COUNT", "-4"]),
            Ok(XInfoStream::Full { count: 10 })
        );
        assert_eq!(
            p(&["xinfo", "stream", "k", "FULL", "COUNT", "x"]),
            Err(ReplyError::NotInteger)
        );
        for bad in [
            &["xinfo", "Stream", "k", "FULLX"][..],
            &["xinfo", "Stream", "k", "FULL", "COUNT"],
            &["xinfo", "Stream", "k", "FULL", "LIMIT", "1"],
            &["xinfo", "Stream", "k", "FULL", "COUNT", "1", "x"],
        ] {
            assert_eq!(
                p(bad).unwrap_err().to_string(),
                "ERR unknown subcommand or wrong number of arguments for 'Stream'. Try XINFO HELP.",
                "{bad:?}"
            );
        }
    }
}
