//! XREAD and XREADGROUP: read entries from one or many streams, optionally blocking
//! until some arrive (reference §2.4, §2.5, §3.4). Both share one option parser,
//! [`parse_read_options`].
//!
//! XREADGROUP reads on behalf of a consumer of a group:
//!
//! ```text
//! XREADGROUP GROUP g c [COUNT n] [MAXCOUNT n] [MAXSIZE bytes] [BLOCK ms] [NOACK]
//!            [CLAIM min-idle] STREAMS key... id...
//!
//!  id = >    new entries (ID > group last_id): each becomes pending for c (unless NOACK),
//!            last_id and entries_read advance at delivery; with CLAIM, idle pending
//!            entries (NACKed first, then oldest delivery) are claimed first and every
//!            item is [id, fields, idle-ms, deliveries-before] (new ones: 0, 0)
//!  id = X    history: c's own pending entries with ID > X, deliveries +1, a deleted
//!            payload as [id, nil]; always answered, never blocks
//! ```
//!
//! Checks run key by key in Redis's order: the key and group must exist (NOGROUP), then the
//! ID token (`$` and `+` are refused). The consumer is created on first sight even when
//! nothing is read; `seen_time` is always updated, `active_time` when something is
//! delivered or claimed. With nothing to serve and BLOCK, the client blocks registered as
//! "unblock on no key", so a deleted key, FLUSH, RENAME or XGROUP DESTROY re-executes it
//! and it answers NOGROUP; each new entry goes to the first re-executed consumer (fan-in).
//!
//! With a dead-letter stream on the group (XGROUP SETDLQ, commands/deadletter.rs), a
//! history read or CLAIM that would take an entry's delivery count above MAXDELIVERIES
//! leaves it out of the reply and moves it there, acknowledged; `>` deliveries of new
//! entries (the first delivery) never move anything.
//!
//! `MAXCOUNT` and `MAXSIZE` (8.10) cap one call across all its streams ([`Caps`]): the
//! total number of entries, and the total bytes of the entries as encoded in the reply
//! (each `[id, [fields…]]` item, in the client's protocol). Streams are filled in
//! argument order; the first entry is always returned, even when it alone is larger than
//! MAXSIZE; once an entry does not fit, the call stops there — that entry and everything
//! after it, in this stream and the following ones, is neither sent nor (XREADGROUP)
//! added to a PEL or claimed. The caps apply to history reads, claims and new entries
//! alike, and again when a blocked call is re-executed. With `compat-version` below 8.10
//! both words are syntax errors.
//!
//! Not done here: the CLAIM timer (Redis wakes a blocked `XREADGROUP ... CLAIM` when its
//! oldest pending entry becomes idle enough, from `beforeSleep`); a blocked CLAIM reader
//! is woken only by the usual signals (XADD, key changes, XGROUP DESTROY) or its timeout.

use super::reply::StreamReply;
use super::xgroup::counters;
use super::xrange::{SharedNames, write_entry, write_range};
use super::{CommandSpec, flags::*, is, parse_i64};
use crate::commands::deadletter::{self, Move};
use crate::commands::effects::{GroupEffects, log_effects};
use crate::core::Ctx;
use crate::core::notify::class;
use crate::error::{ReplyError, lossy};
use crate::resp::Argv;
use crate::resp::writer::{DeferredLen, RespWriter};
use crate::stream::group::{ClaimSpec, DeliveryCount};
use crate::stream::id::parse_strict_id;
use crate::stream::{Entry, Stream, StreamId};
use bytes::Bytes;

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "xread",
        arity: -4,
        flags: READONLY | BLOCKING | MOVABLEKEYS,
        first_key: 0,
        last_key: 0,
        key_step: 0,
        acl: &["@stream"],
        summary: "Returns messages from multiple streams with IDs greater than the ones requested. Blocks until a message is available otherwise.",
        since: "5.0.0",
        group: "stream",
        handler: xread,
        subcommands: &[],
        key_flags: super::default_key_flags(READONLY | BLOCKING | MOVABLEKEYS, 0),
    },
    CommandSpec {
        name: "xreadgroup",
        arity: -7,
        flags: WRITE | BLOCKING | MOVABLEKEYS,
        first_key: 0,
        last_key: 0,
        key_step: 0,
        acl: &["@stream"],
        summary: "Returns new or historical messages from a stream for a consumer in a group. Blocks until a message is available otherwise.",
        since: "5.0.0",
        group: "stream",
        handler: xreadgroup,
        subcommands: &[],
        key_flags: super::keyflags::RO_ACCESS,
    },
];

const DOLLAR_IN_XREADGROUP: ReplyError = ReplyError::msg(
    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.",
);
const PLUS_IN_XREADGROUP: ReplyError = ReplyError::msg(
    "ERR The + ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The + ID would just return an empty result set.",
);

/// Options of XREAD / XREADGROUP, parsed before any key is looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOptions {
    /// Per-stream COUNT (0 = unlimited; negative values become 0).
    pub count: usize,
    /// BLOCK timeout in ms (`Some(0)` = forever), `None` without BLOCK.
    pub block_ms: Option<u64>,
    /// `GROUP group consumer` (XREADGROUP only).
    pub group: Option<(Bytes, Bytes)>,
    /// NOACK (XREADGROUP only).
    pub noack: bool,
    /// CLAIM min-idle-time (XREADGROUP only).
    pub claim: Option<u64>,
    /// MAXCOUNT: most entries over all streams (positive, `>=` COUNT).
    pub maxcount: Option<usize>,
    /// MAXSIZE: most reply bytes of entries over all streams (positive).
    pub maxsize: Option<usize>,
    /// Index in argv of the first key (just after STREAMS).
    pub streams_at: usize,
    /// Number of keys (= number of IDs).
    pub nkeys: usize,
}

impl ReadOptions {
    /// The keys, `argv[streams_at .. streams_at + nkeys]`.
    pub fn keys<'a>(&self, argv: &'a Argv) -> &'a [Bytes] {
        &argv[self.streams_at..self.streams_at + self.nkeys]
    }

    /// The ID arguments, after the keys.
    pub fn ids<'a>(&self, argv: &'a Argv) -> &'a [Bytes] {
        &argv[self.streams_at + self.nkeys..self.streams_at + 2 * self.nkeys]
    }
}

const MAXCOUNT_NOT_POSITIVE: ReplyError =
    ReplyError::msg("ERR MAXCOUNT must be a positive integer");
const MAXSIZE_NOT_POSITIVE: ReplyError = ReplyError::msg("ERR MAXSIZE must be a positive integer");
const MAXCOUNT_BELOW_COUNT: ReplyError =
    ReplyError::msg("ERR MAXCOUNT must be greater than or equal to COUNT");

/// Parses the options of XREAD (`group_cmd` false) or XREADGROUP, with Redis's errors
/// and precedence (the option loop of `xreadCommand`). `caps` enables MAXCOUNT/MAXSIZE
/// (`compat-version` 8.10).
pub fn parse_read_options(
    argv: &Argv,
    group_cmd: bool,
    caps: bool,
) -> Result<ReadOptions, ReplyError> {
    let mut opts = ReadOptions {
        count: 0,
        block_ms: None,
        group: None,
        noack: false,
        claim: None,
        maxcount: None,
        maxsize: None,
        streams_at: 0,
        nkeys: 0,
    };
    let name = if group_cmd { "xreadgroup" } else { "xread" };
    let mut i = 1;
    while i < argv.len() {
        let more = argv.len() - i - 1;
        let a = &argv[i];
        if is(a, "BLOCK") && more >= 1 {
            i += 1;
            opts.block_ms = Some(parse_timeout(&argv[i])?);
        } else if is(a, "COUNT") && more >= 1 {
            i += 1;
            opts.count = parse_i64(&argv[i])?.max(0) as usize;
        } else if caps && is(a, "MAXCOUNT") && more >= 1 {
            i += 1;
            let n = parse_i64(&argv[i])?;
            if n < 1 {
                return Err(MAXCOUNT_NOT_POSITIVE);
            }
            opts.maxcount = Some(usize::try_from(n).unwrap_or(usize::MAX));
        } else if caps && is(a, "MAXSIZE") && more >= 1 {
            i += 1;
            let n = parse_i64(&argv[i])?;
            if n < 1 {
                return Err(MAXSIZE_NOT_POSITIVE);
            }
            opts.maxsize = Some(usize::try_from(n).unwrap_or(usize::MAX));
        } else if is(a, "STREAMS") && more >= 1 {
            opts.streams_at = i + 1;
            let n = argv.len() - opts.streams_at;
            if !n.is_multiple_of(2) {
                let what = if group_cmd {
                    "an ID or '>'"
                } else {
                    "an ID, '+', or '$'"
                };
                return Err(ReplyError::owned(format!(
                    "ERR Unbalanced '{name}' list of streams: for each stream key {what} must be specified."
                )));
            }
            opts.nkeys = n / 2;
            break;
        } else if is(a, "GROUP") && more >= 2 {
            if !group_cmd {
                return Err(only_for_xreadgroup("GROUP"));
            }
            opts.group = Some((argv[i + 1].clone(), argv[i + 2].clone()));
            i += 2;
        } else if is(a, "NOACK") {
            if !group_cmd {
                return Err(only_for_xreadgroup("NOACK"));
            }
            opts.noack = true;
        } else if is(a, "CLAIM") && more >= 1 {
            if !group_cmd {
                return Err(only_for_xreadgroup("CLAIM"));
            }
            i += 1;
            let v = parse_i64(&argv[i]).map_err(|_| {
                ReplyError::msg("ERR min-idle-time is not an integer or out of range")
            })?;
            if v < 0 {
                return Err(ReplyError::msg(
                    "ERR min-idle-time must be a positive integer",
                ));
            }
            opts.claim = Some(v as u64);
        } else {
            return Err(ReplyError::Syntax);
        }
        i += 1;
    }
    if opts.streams_at == 0 {
        return Err(ReplyError::Syntax);
    }
    if group_cmd && opts.group.is_none() {
        return Err(ReplyError::msg("ERR Missing GROUP option for XREADGROUP"));
    }
    if opts
        .maxcount
        .is_some_and(|m| opts.count > 0 && m < opts.count)
    {
        return Err(MAXCOUNT_BELOW_COUNT);
    }
    Ok(opts)
}

/// What is left of one call's MAXCOUNT/MAXSIZE (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Entries still allowed (`None` = no MAXCOUNT).
    count_left: Option<usize>,
    /// Bytes still allowed (`None` = no MAXSIZE).
    bytes_left: Option<usize>,
    /// Entries admitted so far.
    served: usize,
    /// An entry did not fit: nothing more is served.
    full: bool,
}

impl Caps {
    /// The caps of `opts`.
    pub fn new(opts: &ReadOptions) -> Caps {
        Caps {
            count_left: opts.maxcount,
            bytes_left: opts.maxsize,
            served: 0,
            full: false,
        }
    }

    /// True when nothing more may be served.
    pub fn exhausted(&self) -> bool {
        self.full || self.count_left == Some(0)
    }

    /// Decides on an entry whose reply takes `size` bytes: true (and counted) if it may
    /// be served. The first entry of a call always may.
    pub fn admit(&mut self, size: usize) -> bool {
        if self.exhausted() {
            return false;
        }
        if let Some(left) = self.bytes_left {
            if size > left && self.served > 0 {
                self.full = true;
                return false;
            }
            self.bytes_left = Some(left.saturating_sub(size));
        }
        if let Some(n) = self.count_left.as_mut() {
            *n -= 1;
        }
        self.served += 1;
        true
    }

    /// Writes one entry with `write` and keeps it if [`Caps::admit`] does; otherwise
    /// removes its bytes again and returns false.
    fn write(&mut self, out: &mut RespWriter, write: impl FnOnce(&mut RespWriter)) -> bool {
        if self.exhausted() {
            return false;
        }
        let before = out.buf.len();
        write(out);
        if self.admit(out.buf.len() - before) {
            true
        } else {
            out.buf.truncate(before);
            false
        }
    }
}

fn only_for_xreadgroup(option: &str) -> ReplyError {
    ReplyError::owned(format!(
        "ERR The {option} option is only supported by XREADGROUP. You called XREAD instead."
    ))
}

/// BLOCK's argument: milliseconds, strict integer, not negative (Redis:
/// `getTimeoutFromObjectOrReply`).
fn parse_timeout(arg: &[u8]) -> Result<u64, ReplyError> {
    let v = parse_i64(arg)
        .map_err(|_| ReplyError::msg("ERR timeout is not an integer or out of range"))?;
    if v < 0 {
        return Err(ReplyError::msg("ERR timeout is negative"));
    }
    if v > 0 && v > i64::MAX - crate::core::unix_ms() as i64 {
        return Err(ReplyError::msg("ERR timeout is out of range"));
    }
    Ok(v as u64)
}

/// Where an XREAD starts on one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadFrom {
    /// Entries with ID strictly greater than this one.
    After(StreamId),
    /// `+`: only the last entry.
    LastEntry,
}

fn xread(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let opts = parse_read_options(argv, false, ctx.core.supports(8, 10))?;
    let keys = opts.keys(argv);
    let mut caps = Caps::new(&opts);
    let capped = opts.maxcount.is_some() || opts.maxsize.is_some();
    // Resolve the IDs against the current streams (`$` = last_id now).
    let mut from = Vec::with_capacity(keys.len());
    for (key, id) in keys.iter().zip(opts.ids(argv)) {
        let last_id = ctx.lookup(key)?.map(|s| s.last_id()).unwrap_or_default();
        let f = if id.as_ref() == b"$" {
            ReadFrom::After(last_id)
        } else if id.as_ref() == b"+" {
            ReadFrom::LastEntry
        } else if id.as_ref() == b">" {
            return Err(ReplyError::msg(
                "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
            ));
        } else {
            ReadFrom::After(parse_strict_id(id)?)
        };
        from.push(f);
    }
    if ctx.core.notify_flags & class::KEY_MISS != 0 {
        // Redis looks every key up a second time to serve it, so a missing key makes a
        // second `keymiss`, after those of the first pass.
        for key in keys {
            if !ctx.core.dbs[ctx.client.db].keys.contains_key(key) {
                ctx.notify(class::KEY_MISS, "keymiss", key);
            }
        }
    }
    // Serve what is there.
    let resp3 = ctx.out.is_resp3();
    let mut served = 0;
    let mut header = None;
    let db = &ctx.core.dbs[ctx.client.db];
    for (key, f) in keys.iter().zip(&from) {
        let Some(stream) = db.get_stream(key) else {
            continue;
        };
        let (start, count) = match *f {
            ReadFrom::LastEntry => match stream.last_entry() {
                Some(e) => (e.id, 1),
                None => continue,
            },
            ReadFrom::After(after) => {
                // Compared with the last entry still present, as Redis's
                // `streamLastValidID`: a stream whose newer entries were deleted has
                // nothing to serve.
                if !stream.has_entries_after(after) {
                    continue;
                }
                match after.incr() {
                    Some(s) => (s, opts.count),
                    None => continue,
                }
            }
        };
        let out = &mut *ctx.out;
        if !capped {
            open_stream(out, &mut header, key);
            write_range(out, stream, start, StreamId::MAX, false, count);
            served += 1;
            continue;
        }
        if caps.exhausted() {
            break;
        }
        let (mark, had_header) = (out.buf.len(), header.is_some());
        open_stream(out, &mut header, key);
        let list = out.defer_len();
        let limit = if count == 0 { usize::MAX } else { count };
        let mut n = 0;
        let mut names = SharedNames::default();
        for e in stream.range(start, StreamId::MAX, false) {
            if n == limit || !caps.write(out, |o| names.write_entry(o, &e)) {
                break;
            }
            n += 1;
        }
        if n == 0 {
            // Its first entry did not fit: the stream is left out, and so is the rest.
            drop(list);
            out.buf.truncate(mark);
            if !had_header {
                header = None;
            }
            break;
        }
        out.finish_array(list, n);
        served += 1;
    }
    if let Some(h) = header {
        if resp3 {
            ctx.out.finish_map(h, served);
        } else {
            ctx.out.finish_array(h, served);
        }
        return Ok(());
    }
    match opts.block_ms {
        Some(timeout) if ctx.can_block() => {
            // Re-execute later with `$` replaced by the IDs it meant now.
            let ids_at = opts.streams_at + opts.nkeys;
            let dollar = |i: usize| argv[ids_at + i].as_ref() == b"$";
            let again = (0..from.len()).any(dollar).then(|| {
                let mut again = argv.clone();
                for (i, f) in from.iter().enumerate() {
                    if let ReadFrom::After(id) = f
                        && dollar(i)
                    {
                        again[ids_at + i] = Bytes::from(id.to_string());
                    }
                }
                again
            });
            ctx.block(keys, timeout, false, again);
        }
        _ => ctx.out.null_array(),
    }
    Ok(())
}

/// Where an XREADGROUP reads one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GroupFrom {
    /// `>`: entries never delivered to the group.
    New,
    /// An explicit ID: the consumer's own pending entries after it.
    History(StreamId),
}

/// An XREADGROUP ID argument. The maximum ID reads as `>`, because Redis stores `>` as
/// that ID and cannot tell them apart.
fn parse_group_from(arg: &[u8]) -> Result<GroupFrom, ReplyError> {
    match arg {
        b"$" => Err(DOLLAR_IN_XREADGROUP),
        b"+" => Err(PLUS_IN_XREADGROUP),
        b">" => Ok(GroupFrom::New),
        _ => match parse_strict_id(arg)? {
            StreamId::MAX => Ok(GroupFrom::New),
            id => Ok(GroupFrom::History(id)),
        },
    }
}

fn xreadgroup(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let opts = parse_read_options(argv, true, ctx.core.supports(8, 10))?;
    let mut state = ReadState {
        header: None,
        caps: Caps::new(&opts),
    };
    let (group, consumer) = opts
        .group
        .as_ref()
        .expect("parse_read_options requires GROUP for XREADGROUP");
    let keys = opts.keys(argv);
    // Key by key: the key and group must exist, then the ID must be acceptable.
    // Each key is hashed once; the hash serves both visits (Redis, too, looks every key
    // up twice, and counts two keyspace hits).
    // Several keys: hashed first, and every stream's path to its group prefetched
    // together (core/prefetch.rs); one key is hashed as it is visited (no vector).
    let mut hashes = Vec::new();
    if keys.len() > 1 {
        hashes.extend(keys.iter().map(|k| ctx.db().hash_key(k)));
        ctx.core.prefetch_group_reads(
            ctx.client.db,
            hashes.iter().copied().zip(keys.iter().map(|k| &k[..])),
        );
    }
    let mut from = Vec::with_capacity(keys.len());
    for (i, (key, id)) in keys.iter().zip(opts.ids(argv)).enumerate() {
        let hash = match hashes.get(i) {
            Some(&hash) => hash,
            None => ctx.db().hash_key(key),
        };
        if ctx
            .lookup_hashed(hash, key)?
            .is_none_or(|s| s.groups().get(group).is_none())
        {
            return Err(ReplyError::NoGroupReadGroup {
                key: lossy(key),
                group: lossy(group),
            });
        }
        from.push((parse_group_from(id)?, hash));
    }
    let now = ctx.now_ms;
    let moves_allowed = deadletter::allowed(ctx.core);
    let mut served = 0;
    for (key, &(f, hash)) in keys.iter().zip(&from) {
        let (stream, out) = ctx.lookup_hashed_with_out(hash, key);
        let Ok(Some(stream)) = stream else {
            continue; // validated above, in the same command
        };
        let read = GroupRead {
            group,
            consumer,
            opts: &opts,
            now,
        };
        let mut fx = GroupEffects::default();
        let mut dead = DeadLetters::default();
        if moves_allowed {
            dead.settings = stream
                .groups()
                .get(group)
                .and_then(|g| g.dead_letter())
                .cloned();
        }
        let (replied, mut dirty) = read.serve(out, stream, key, f, &mut state, &mut fx, &mut dead);
        served += usize::from(replied);
        if let Some(d) = &dead.settings
            && !dead.moves.is_empty()
        {
            dirty += deadletter::move_entries(ctx, key, group, &d.key, &dead.moves, &mut fx);
        }
        if dirty > 0 {
            ctx.modified(key);
            ctx.core.dirty += dirty - 1;
        }
        if fx.consumer_created {
            ctx.notify(class::STREAM, "xgroup-createconsumer", key);
        }
        // Deliveries and claims are logged as the PEL state they produced.
        log_effects(ctx, key, group, Some(consumer), &fx);
    }
    if let Some(h) = state.header {
        if ctx.out.is_resp3() {
            ctx.out.finish_map(h, served);
        } else {
            ctx.out.finish_array(h, served);
        }
        return Ok(());
    }
    match opts.block_ms {
        Some(timeout) if ctx.can_block() => {
            ctx.block(keys, timeout, true, None);
            // With CLAIM, also wake when the oldest pending entry of a key becomes
            // idle enough (a timer on the delivery-time list's head, no scanning).
            if let Some(min_idle) = opts.claim {
                let db = &ctx.core.dbs[ctx.client.db];
                let wake = keys
                    .iter()
                    .zip(&from)
                    .filter(|(_, (f, _))| matches!(f, GroupFrom::New))
                    .filter_map(|(k, _)| {
                        db.get_stream(k)?
                            .groups()
                            .get(group)?
                            .next_claimable_at(min_idle)
                    })
                    .min();
                // A time already past means the head is claimable but was not served
                // (its payload is gone): waking for it would spin, so wait for a key
                // event instead.
                if let Some(at) = wake.filter(|&at| at > now) {
                    ctx.block_wakeup_at(at);
                }
            }
        }
        _ => ctx.out.null_array(),
    }
    Ok(())
}

/// What an XREADGROUP carries from stream to stream: the top-level reply header (opened
/// by the first stream served) and the MAXCOUNT/MAXSIZE budget.
struct ReadState {
    /// The top-level aggregate, once opened.
    header: Option<DeferredLen>,
    /// What is left of the caps.
    caps: Caps,
}

/// What one stream's read sends to the group's dead-letter stream: the settings (when
/// moves may happen) and the entries that go (commands/deadletter.rs).
#[derive(Default)]
struct DeadLetters {
    /// The group's dead-letter stream; `None` when it has none or moves may not happen.
    settings: Option<crate::stream::group::DeadLetter>,
    /// The entries whose next delivery would exceed MAXDELIVERIES.
    moves: Vec<Move>,
}

impl DeadLetters {
    /// True when a delivery that gives an entry `count` deliveries must not happen.
    fn over(&self, count: Option<u64>) -> bool {
        self.settings
            .as_ref()
            .is_some_and(|d| count.is_some_and(|c| c > d.max_deliveries))
    }
}

/// One XREADGROUP's reader: the group, the consumer and the options.
struct GroupRead<'a> {
    group: &'a [u8],
    consumer: &'a [u8],
    opts: &'a ReadOptions,
    now: u64,
}

impl GroupRead<'_> {
    /// Most entries to return from one stream (COUNT 0 = no limit).
    fn limit(&self) -> usize {
        match self.opts.count {
            0 => usize::MAX,
            n => n,
        }
    }

    /// Serves one stream: creates the consumer if needed and marks it seen, then reads
    /// `from`. Writes `[key, entries]` (opening the top-level reply on first use) when
    /// there is something to say; returns whether it did and how many dirty changes it
    /// made (Redis: one for a created consumer, one per stream for deliveries, one per
    /// claim; none for history reads, which Redis does not propagate; streamd logs their
    /// delivery-count bumps, see persist/groups.rs).
    #[allow(clippy::too_many_arguments)]
    fn serve(
        &self,
        out: &mut RespWriter,
        stream: &mut Stream,
        key: &[u8],
        from: GroupFrom,
        state: &mut ReadState,
        fx: &mut GroupEffects,
        dead: &mut DeadLetters,
    ) -> (bool, u64) {
        let (cid, created) = {
            let mut g = stream.group_mut(self.group).expect("validated");
            let (cid, created) = g.get_or_create_consumer(self.consumer, self.now);
            g.touch(cid, self.now);
            (cid, created)
        };
        fx.consumer_created = created;
        let dirty = u64::from(created);
        match from {
            GroupFrom::History(after) => {
                fx.ids = self.serve_history(out, stream, key, cid, after, state, dead);
                (true, dirty)
            }
            GroupFrom::New => {
                let (replied, changes) = self.serve_new(out, stream, key, cid, state, fx, dead);
                (replied, dirty + changes)
            }
        }
    }

    /// History: the consumer's pending entries after `after`, each delivered once more
    /// (or, past the group's MAXDELIVERIES, moved to its dead-letter stream instead).
    /// Returns the IDs whose delivery count and time changed (to be logged).
    #[allow(clippy::too_many_arguments)]
    fn serve_history(
        &self,
        out: &mut RespWriter,
        stream: &mut Stream,
        key: &[u8],
        cid: crate::stream::consumer::ConsumerId,
        after: StreamId,
        state: &mut ReadState,
        dead: &mut DeadLetters,
    ) -> Vec<StreamId> {
        let start = after.incr().expect("the maximum ID reads as >");
        let ids: Vec<StreamId> = stream
            .groups()
            .get(self.group)
            .expect("validated")
            .consumer_pel(cid, start, StreamId::MAX)
            .take(self.limit())
            .map(|e| e.id)
            .collect();
        open_stream(out, &mut state.header, key);
        let list = out.defer_len();
        let mut n = 0;
        let mut redelivered = Vec::new();
        for id in ids {
            let entry = stream.get(id);
            if entry.is_some()
                && dead.over(
                    stream
                        .groups()
                        .get(self.group)
                        .and_then(|g| g.redeliver_count(cid, id)),
                )
            {
                dead.moves.push(Move::of(stream, self.group, id));
                continue;
            }
            let kept = state.caps.write(out, |out| match &entry {
                Some(e) => write_entry(out, e),
                None => {
                    // The payload was deleted (XDEL, trimming) but the entry is pending.
                    out.array(2);
                    out.bulk_id(id);
                    out.null_array();
                }
            });
            if !kept {
                break;
            }
            n += 1;
            if entry.is_some() {
                let mut g = stream.group_mut(self.group).expect("validated");
                if g.redeliver(cid, id, self.now) {
                    redelivered.push(id);
                }
            }
        }
        out.finish_array(list, n);
        redelivered
    }

    /// `>`: claimable entries first (with CLAIM; past the group's MAXDELIVERIES, moved to
    /// its dead-letter stream instead), then entries after the group's last_id.
    #[allow(clippy::too_many_arguments)]
    fn serve_new(
        &self,
        out: &mut RespWriter,
        stream: &mut Stream,
        key: &[u8],
        cid: crate::stream::consumer::ConsumerId,
        state: &mut ReadState,
        fx: &mut GroupEffects,
        dead: &mut DeadLetters,
    ) -> (bool, u64) {
        if state.caps.exhausted() {
            return (false, 0);
        }
        let limit = self.limit();
        let group = stream.groups().get(self.group).expect("validated");
        let last_id = group.last_id();
        // (id, delivery time, delivery count) of each entry to claim, before the claim.
        let mut claims: Vec<(StreamId, u64, u64)> = Vec::new();
        if let Some(min_idle) = self.opts.claim {
            for e in group.claimable(self.now, min_idle) {
                if claims.len() == limit {
                    break;
                }
                // Entries whose payload is gone are neither claimed nor dropped.
                if stream.get(e.id).is_some() {
                    claims.push((e.id, e.delivery_time, e.delivery_count));
                }
            }
        }
        let room = limit - claims.len();
        let new_from = if room > 0 && stream.has_entries_after(last_id) {
            last_id.incr()
        } else {
            None
        };
        if claims.is_empty() && new_from.is_none() {
            return (false, 0);
        }
        let (mark, had_header) = (out.buf.len(), state.header.is_some());
        open_stream(out, &mut state.header, key);
        let list = out.defer_len();
        let mut n = 0;
        let mut dirty = 0;
        let spec = ClaimSpec {
            min_idle: 0,
            delivery_time: self.now,
            count: DeliveryCount::Increment,
            force: false,
        };
        for (id, time, count) in claims {
            if dead.over(
                stream
                    .groups()
                    .get(self.group)
                    .and_then(|g| g.claim_count(id, &spec, self.now)),
            ) {
                dead.moves.push(Move::of(stream, self.group, id));
                continue;
            }
            let e = stream.get(id).expect("checked above");
            let idle = i64::try_from(self.now.saturating_sub(time)).unwrap_or(i64::MAX);
            let count = i64::try_from(count).unwrap_or(i64::MAX);
            if !state
                .caps
                .write(out, |out| write_claimed_entry(out, &e, idle, count))
            {
                break;
            }
            let mut g = stream.group_mut(self.group).expect("validated");
            g.claim(cid, id, &spec, self.now);
            fx.ids.push(id);
            n += 1;
            dirty += 1;
        }
        if let Some(start) = new_from {
            let counters = counters(stream);
            let mut delivered = Vec::new();
            let mut names = SharedNames::default();
            for e in stream.range(start, StreamId::MAX, false).take(room) {
                let kept = state.caps.write(out, |out| match self.opts.claim {
                    Some(_) => write_claimed_entry(out, &e, 0, 0),
                    None => names.write_entry(out, &e),
                });
                if !kept {
                    break;
                }
                delivered.push(e.id);
            }
            n += delivered.len();
            if delivered.is_empty() {
                return Self::finish_capped(
                    out,
                    list,
                    n,
                    dirty,
                    mark,
                    had_header,
                    &mut state.header,
                );
            }
            dirty += 1;
            let mut g = stream.group_mut(self.group).expect("validated");
            for id in delivered {
                if !self.opts.noack {
                    g.deliver(cid, id, self.now);
                    fx.ids.push(id);
                }
                g.advance_last_id(id, &counters);
            }
            fx.position_changed = true;
        } else if n == 0 {
            return Self::finish_capped(out, list, n, dirty, mark, had_header, &mut state.header);
        }
        out.finish_array(list, n);
        (true, dirty)
    }

    /// Ends a stream's part of the reply when MAXCOUNT/MAXSIZE stopped it with `n`
    /// items: with none, the stream is taken out of the reply again (its bytes from
    /// `mark` on, and the top-level header if this stream opened it).
    fn finish_capped(
        out: &mut RespWriter,
        list: DeferredLen,
        n: usize,
        dirty: u64,
        mark: usize,
        had_header: bool,
        header: &mut Option<DeferredLen>,
    ) -> (bool, u64) {
        if n > 0 {
            out.finish_array(list, n);
            return (true, dirty);
        }
        drop(list);
        out.buf.truncate(mark);
        if !had_header {
            *header = None;
        }
        (false, dirty)
    }
}

/// Starts one stream's part of an XREAD/XREADGROUP reply (`*2 $key` in RESP2, `$key` as
/// a map key in RESP3), opening the top-level aggregate first if needed.
fn open_stream(out: &mut RespWriter, header: &mut Option<DeferredLen>, key: &[u8]) {
    if header.is_none() {
        *header = Some(out.defer_len());
    }
    if !out.is_resp3() {
        out.array(2);
    }
    out.bulk(key);
}

/// An XREADGROUP CLAIM item: `[id, [fields], idle-ms, deliveries-before-this-one]`.
fn write_claimed_entry(out: &mut RespWriter, e: &Entry<'_>, idle: i64, count: i64) {
    out.array(4);
    out.bulk_id(e.id);
    out.array(e.pairs_len() * 2);
    for v in e.elements() {
        out.bulk_value(&v);
    }
    out.integer(idle);
    out.integer(count);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::test_argv as argv;

    #[test]
    fn options_in_any_order_and_streams_last() {
        let o = parse_read_options(
            &argv("XREAD BLOCK 10 COUNT -5 STREAMS a b 0 0"),
            false,
            true,
        )
        .unwrap();
        assert_eq!(o.block_ms, Some(10));
        assert_eq!(o.count, 0);
        assert_eq!(o.nkeys, 2);
        assert_eq!(o.streams_at, 6, "the first key, just after STREAMS");
    }

    #[test]
    fn xread_errors_match_redis() {
        let err = |s: &str| {
            parse_read_options(&argv(s), false, true)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err("XREAD STREAMS a b c"),
            "ERR Unbalanced 'xread' list of streams: for each stream key an ID, '+', or '$' must be specified."
        );
        assert_eq!(
            err("XREAD GROUP g c STREAMS a 0"),
            "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."
        );
        assert_eq!(err("XREAD BLOCK -1 STREAMS a 0"), "ERR timeout is negative");
        assert_eq!(
            err("XREAD BLOCK x STREAMS a 0"),
            "ERR timeout is not an integer or out of range"
        );
        assert_eq!(
            err("XREAD COUNT x STREAMS a 0"),
            "ERR value is not an integer or out of range"
        );
        assert_eq!(err("XREAD FOO STREAMS a 0"), "ERR syntax error");
        assert_eq!(err("XREAD COUNT 1 BLOCK 1"), "ERR syntax error");
    }

    #[test]
    fn xreadgroup_options() {
        let o = parse_read_options(
            &argv("XREADGROUP CLAIM 5 GROUP g c NOACK STREAMS s >"),
            true,
            true,
        )
        .unwrap();
        assert_eq!(o.claim, Some(5));
        assert!(o.noack);
        assert_eq!(o.group, Some((Bytes::from("g"), Bytes::from("c"))));
        let err = |s: &str| {
            parse_read_options(&argv(s), true, true)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err("XREADGROUP STREAMS s >"),
            "ERR Missing GROUP option for XREADGROUP"
        );
        assert_eq!(
            err("XREADGROUP GROUP g c CLAIM -1 STREAMS s >"),
            "ERR min-idle-time must be a positive integer"
        );
        assert_eq!(
            err("XREADGROUP GROUP g c CLAIM STREAMS s >"),
            "ERR min-idle-time is not an integer or out of range"
        );
    }

    #[test]
    fn maxcount_and_maxsize_options() {
        let o = parse_read_options(
            &argv("XREAD COUNT 2 MAXCOUNT 5 MAXSIZE 100 STREAMS a 0"),
            false,
            true,
        )
        .unwrap();
        assert_eq!((o.count, o.maxcount, o.maxsize), (2, Some(5), Some(100)));
        let err = |s: &str, caps: bool| {
            parse_read_options(&argv(s), false, caps)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err("XREAD MAXCOUNT 0 STREAMS a 0", true),
            "ERR MAXCOUNT must be a positive integer"
        );
        assert_eq!(
            err("XREAD MAXSIZE -1 STREAMS a 0", true),
            "ERR MAXSIZE must be a positive integer"
        );
        assert_eq!(
            err("XREAD MAXSIZE x STREAMS a 0", true),
            "ERR value is not an integer or out of range"
        );
        assert_eq!(
            err("XREAD MAXCOUNT 2 COUNT 3 STREAMS a 0", true),
            "ERR MAXCOUNT must be greater than or equal to COUNT"
        );
        assert_eq!(
            err("XREAD MAXCOUNT 2 STREAMS a 0", false),
            "ERR syntax error"
        );
    }

    #[test]
    fn caps_admit_the_first_entry_and_stop_at_the_first_that_does_not_fit() {
        let mut opts = parse_read_options(&argv("XREAD STREAMS a 0"), false, true).unwrap();
        opts.maxsize = Some(10);
        let mut caps = Caps::new(&opts);
        assert!(caps.admit(50), "the first entry always goes");
        assert!(!caps.admit(1));
        assert!(caps.exhausted());
        opts.maxsize = Some(10);
        opts.maxcount = Some(2);
        let mut caps = Caps::new(&opts);
        assert!(caps.admit(4) && caps.admit(6));
        assert!(!caps.admit(0), "MAXCOUNT reached");
    }

    #[test]
    fn xreadgroup_ids() {
        assert_eq!(parse_group_from(b">"), Ok(GroupFrom::New));
        assert_eq!(
            parse_group_from(b"18446744073709551615-18446744073709551615"),
            Ok(GroupFrom::New),
            "Redis encodes > as the largest ID"
        );
        assert_eq!(
            parse_group_from(b"5"),
            Ok(GroupFrom::History(StreamId::new(5, 0)))
        );
        assert_eq!(parse_group_from(b"$"), Err(DOLLAR_IN_XREADGROUP));
        assert_eq!(parse_group_from(b"+"), Err(PLUS_IN_XREADGROUP));
        assert_eq!(parse_group_from(b"-"), Err(ReplyError::InvalidStreamId));
    }
}
