//! The commands that add, trim and delete entries: XADD, XTRIM, XDEL and XSETID
//! (reference §2.1, §2.8, §2.10, §2.17, §3.1).
//!
//! XADD and XTRIM share one option parser, [`AddTrimOptions::parse`] (Redis:
//! `streamParseAddOrTrimArgsOrReply`). It walks the arguments after the key in any order:
//!
//! ```text
//! XADD  key [NOMKSTREAM] [KEEPREF|DELREF|ACKED] [IDMPAUTO pid | IDMP pid iid]
//!           [MAXLEN|MINID [=|~] threshold [LIMIT n]]
//!           <* | ms-seq | ms-* | ms> field value [field value ...]
//! XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT n] [KEEPREF|DELREF|ACKED]
//! ```
//!
//! For XADD, the first token that is not a known option is the ID, so a misspelt option
//! gives the invalid-ID error; for XTRIM it is a syntax error. `MAXLEN`/`MINID`/`LIMIT`
//! are options only when a value follows; `~`/`=` only when two more arguments follow.
//! `IDMP` is an option only when two arguments follow it and `IDMPAUTO` when one does, so
//! in `XADD s IDMP p1 * f v` the `*` is the iid and `f` the (invalid) ID, as in Redis.
//! With `compat-version` below 8.6 both words are taken as the ID and refused.
//!
//! IDMP (reference §2.1, §3.5, stream/idmp.rs): a duplicate — a pid/iid the stream still
//! tracks — appends and trims nothing and answers the original entry's ID; a new iid is
//! recorded after the append. IDMP needs `*`: an explicit ID is refused, except while
//! loading, where the log's resolved IDs come back.
//!
//! Every argument error, and every check against the stream, happens before anything is
//! changed: a failed XADD never creates the key.
//!
//! Logged effects (persist/, reference §5): XADD with the ID it generated and, when its
//! trim removed entries, the trim as `MAXLEN = <length after>` (exact, so replay removes
//! the same entries whatever the node layout or LIMIT); XTRIM likewise; XDEL and XSETID
//! verbatim when they changed something. An accepted IDMP XADD is logged with its
//! `IDMP pid iid` / `IDMPAUTO pid` before the resolved ID (replay records the iid again);
//! a stream's first IDMP use is followed by `STREAMD.IDMP` with the settings it got; a
//! duplicate is logged as `STREAMD.IDMP` with the new counters only, so replaying the log
//! can never append it.

use super::STREAM_KEY1;
use super::reply::StreamReply;
use super::{CommandSpec, flags::*, is, parse_i64};
use crate::core::Ctx;
use crate::core::lifecycle::XADD_RETENTION_BUDGET;
use crate::core::notify::class;
use crate::error::ReplyError;
use crate::resp::Argv;
use crate::stream::id::{XAddId, parse_strict_id, parse_xadd_id};
use crate::stream::idmp::{Check, IdmpKey, auto_iid};
use crate::stream::memory::key_overhead;
use crate::stream::{RefPolicy, Stream, StreamId, TrimSpec, TrimStrategy};
use crate::types::Value;
use bytes::Bytes;

/// Redis `STREAM_LISTPACK_MAX_SIZE`: an entry whose fields and values total more than
/// this is refused (`Elements are too large to be stored`).
const STREAM_LISTPACK_MAX_SIZE: usize = 1 << 30;

const MAXLEN_AND_MINID: ReplyError = ReplyError::msg(
    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
);
const MAXLEN_NEGATIVE: ReplyError = ReplyError::msg("ERR The MAXLEN argument must be >= 0.");
const LIMIT_NEGATIVE: ReplyError = ReplyError::msg("ERR The LIMIT argument must be >= 0.");
const LIMIT_WITHOUT_STRATEGY: ReplyError = ReplyError::msg(
    "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
);
const XTRIM_WITHOUT_STRATEGY: ReplyError =
    ReplyError::msg("ERR syntax error, XTRIM must be called with a trimming strategy");
const LIMIT_WITHOUT_APPROX: ReplyError =
    ReplyError::msg("ERR syntax error, LIMIT cannot be used without the special ~ option");
const IDMP_TWICE: ReplyError =
    ReplyError::msg("ERR syntax error, IDMP/IDMPAUTO specified multiple times");
const IDMP_EMPTY_PID: ReplyError =
    ReplyError::msg("ERR syntax error, IDMP requires a non-empty producer ID");
const IDMP_EMPTY_IID: ReplyError =
    ReplyError::msg("ERR syntax error, IDMP requires a non-empty idempotent ID");
const IDMPAUTO_EMPTY_PID: ReplyError =
    ReplyError::msg("ERR syntax error, IDMPAUTO requires a non-empty producer ID");
const IDMP_EXPLICIT_ID: ReplyError =
    ReplyError::msg("ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs");
const ENTRIES_ADDED_NEGATIVE: ReplyError = ReplyError::msg("ERR entries_added must be positive");
const XSETID_BELOW_GIVEN_MAX_DELETED: ReplyError = ReplyError::msg(
    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
);
const XSETID_BELOW_MAX_DELETED: ReplyError =
    ReplyError::msg("ERR The ID specified in XSETID is smaller than current max_deleted_entry_id");
const XSETID_BELOW_TOP_ITEM: ReplyError =
    ReplyError::msg("ERR The ID specified in XSETID is smaller than the target stream top item");
const XSETID_ENTRIES_ADDED_BELOW_LENGTH: ReplyError = ReplyError::msg(
    "ERR The entries_added specified in XSETID is smaller than the target stream length",
);

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    STREAM_KEY1.row(
        "xadd",
        -5,
        WRITE | DENYOOM | FAST,
        "Appends a new message to a stream. Creates the key if it doesn't exist.",
        "5.0.0",
        xadd,
    ),
    CommandSpec {
        key_flags: super::keyflags::RW_DELETE,
        ..STREAM_KEY1.row(
            "xtrim",
            -4,
            WRITE,
            "Deletes messages from the beginning of a stream.",
            "5.0.0",
            xtrim,
        )
    },
    CommandSpec {
        key_flags: super::keyflags::RW_DELETE,
        ..STREAM_KEY1.row(
            "xdel",
            -3,
            WRITE | FAST,
            "Returns the number of messages after removing them from a stream.",
            "5.0.0",
            xdel,
        )
    },
    STREAM_KEY1.row(
        "xsetid",
        -3,
        WRITE | DENYOOM | FAST,
        "An internal command for replicating stream values.",
        "5.0.0",
        xsetid,
    ),
];

/// The argument as C sees it: Redis compares option words with `strcasecmp` on
/// NUL-terminated strings, so anything after an embedded NUL is ignored.
fn c_str(arg: &[u8]) -> &[u8] {
    // Options are short words: a plain scan beats setting up a vector search.
    let nul = if arg.len() <= 16 {
        arg.iter().position(|&b| b == 0)
    } else {
        memchr::memchr(0, arg)
    };
    match nul {
        Some(nul) => &arg[..nul],
        None => arg,
    }
}

/// The option word an argument is, found with one comparison (by length, then the
/// word of that length), case-insensitively as Redis's `strcasecmp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Word {
    Star,
    MaxLen,
    MinId,
    Limit,
    NoMkStream,
    Idmp,
    IdmpAuto,
    KeepRef,
    DelRef,
    Acked,
    Other,
}

impl Word {
    fn of(opt: &[u8]) -> Word {
        let (word, text) = match opt.len() {
            1 if opt == b"*" => return Word::Star,
            4 => (Word::Idmp, "IDMP"),
            5 => match opt[0].to_ascii_uppercase() {
                b'M' => (Word::MinId, "MINID"),
                b'L' => (Word::Limit, "LIMIT"),
                _ => (Word::Acked, "ACKED"),
            },
            6 => match opt[0].to_ascii_uppercase() {
                b'M' => (Word::MaxLen, "MAXLEN"),
                _ => (Word::DelRef, "DELREF"),
            },
            7 => (Word::KeepRef, "KEEPREF"),
            8 => (Word::IdmpAuto, "IDMPAUTO"),
            10 => (Word::NoMkStream, "NOMKSTREAM"),
            _ => return Word::Other,
        };
        if is(opt, text) { word } else { Word::Other }
    }
}

/// What the XADD option loop found where the ID goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IdArg {
    /// No argument was left for the ID (arity error later).
    Missing,
    /// A valid ID request.
    Given(XAddId),
    /// An explicit `0-0` (or `0`): refused, but only after the arity check, as Redis does.
    Zero,
}

/// XADD's idempotency option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdmpArg<'a> {
    /// `IDMP pid iid`.
    Explicit {
        /// Producer ID (non-empty).
        pid: &'a [u8],
        /// Idempotent ID (non-empty).
        iid: &'a [u8],
    },
    /// `IDMPAUTO pid`: the iid is derived from the fields and values.
    Auto {
        /// Producer ID (non-empty).
        pid: &'a [u8],
    },
}

impl<'a> IdmpArg<'a> {
    /// The producer ID.
    pub fn pid(&self) -> &'a [u8] {
        match self {
            IdmpArg::Explicit { pid, .. } | IdmpArg::Auto { pid } => pid,
        }
    }
}

/// How [`AddTrimOptions::parse_with`] reads the arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseMode {
    /// XADD's rules (the ID ends the options) rather than XTRIM's.
    pub xadd: bool,
    /// IDMP/IDMPAUTO are options (`compat-version` 8.6 or newer, or loading).
    pub idmp: bool,
    /// The command comes from the log or from this replica's primary: IDMP with an
    /// explicit ID is accepted.
    pub from_log: bool,
}

/// The options XADD and XTRIM share (Redis: `streamAddTrimArgs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddTrimOptions<'a> {
    /// The trim clause, if MAXLEN or MINID was given.
    pub trim: Option<TrimSpec>,
    /// XADD NOMKSTREAM.
    pub nomkstream: bool,
    /// XADD: position of the ID argument (`argv.len()` when none was found).
    id_pos: usize,
    /// XADD: the ID request found at `id_pos`.
    id: IdArg,
    /// XADD: IDMP or IDMPAUTO.
    pub idmp: Option<IdmpArg<'a>>,
}

impl AddTrimOptions<'_> {
    /// Parses the options after the key; `xadd` selects XADD's rules (the ID ends the
    /// options, NOMKSTREAM exists, `*` is a fast path) over XTRIM's (every token must be
    /// an option). Returns the first error in Redis's order.
    pub fn parse(argv: &Argv, xadd: bool) -> Result<AddTrimOptions<'_>, ReplyError> {
        Self::parse_with(
            argv,
            ParseMode {
                xadd,
                idmp: xadd,
                from_log: false,
            },
        )
    }

    /// [`AddTrimOptions::parse`] with every switch explicit.
    pub fn parse_with(argv: &Argv, mode: ParseMode) -> Result<AddTrimOptions<'_>, ReplyError> {
        let xadd = mode.xadd;
        let mut idmp: Option<IdmpArg<'_>> = None;
        let mut strategy = None;
        let mut approx = false;
        let mut limit: Option<u64> = None;
        let mut policy: Option<RefPolicy> = None;
        let mut nomkstream = false;
        let mut id = IdArg::Missing;
        let mut i = 2;
        while i < argv.len() {
            let more = argv.len() - 1 - i;
            let opt = c_str(&argv[i]);
            let w = Word::of(opt);
            if xadd && w == Word::Star {
                id = IdArg::Given(XAddId::Auto);
                break;
            } else if (w == Word::MaxLen || w == Word::MinId) && more >= 1 {
                if strategy.is_some() {
                    return Err(MAXLEN_AND_MINID);
                }
                approx = false;
                if more >= 2 {
                    match c_str(&argv[i + 1]) {
                        b"~" => {
                            approx = true;
                            i += 1;
                        }
                        b"=" => i += 1,
                        _ => {}
                    }
                }
                let threshold = &argv[i + 1];
                strategy = Some(if w == Word::MaxLen {
                    let n = parse_i64(threshold)?;
                    TrimStrategy::MaxLen(u64::try_from(n).map_err(|_| MAXLEN_NEGATIVE)?)
                } else {
                    TrimStrategy::MinId(parse_strict_id(threshold)?)
                });
                i += 1;
            } else if w == Word::Limit && more >= 1 {
                let n = parse_i64(&argv[i + 1])?;
                limit = Some(u64::try_from(n).map_err(|_| LIMIT_NEGATIVE)?);
                i += 1;
            } else if xadd && w == Word::NoMkStream {
                nomkstream = true;
            } else if mode.idmp && w == Word::Idmp && more >= 2 {
                if idmp.is_some() {
                    return Err(IDMP_TWICE);
                }
                let (pid, iid) = (&argv[i + 1], &argv[i + 2]);
                if pid.is_empty() {
                    return Err(IDMP_EMPTY_PID);
                }
                if iid.is_empty() {
                    return Err(IDMP_EMPTY_IID);
                }
                idmp = Some(IdmpArg::Explicit { pid, iid });
                i += 2;
            } else if mode.idmp && w == Word::IdmpAuto && more >= 1 {
                if idmp.is_some() {
                    return Err(IDMP_TWICE);
                }
                let pid = &argv[i + 1];
                if pid.is_empty() {
                    return Err(IDMPAUTO_EMPTY_PID);
                }
                idmp = Some(IdmpArg::Auto { pid });
                i += 1;
            } else if policy.is_none() && w == Word::KeepRef {
                policy = Some(RefPolicy::KeepRef);
            } else if policy.is_none() && w == Word::DelRef {
                policy = Some(RefPolicy::DelRef);
            } else if policy.is_none() && w == Word::Acked {
                policy = Some(RefPolicy::Acked);
            } else if xadd {
                // Not an option, so this is the ID (or a syntax error reported as a bad ID).
                id = match parse_xadd_id(&argv[i]) {
                    Ok(req) => IdArg::Given(req),
                    Err(ReplyError::XAddIdZero) => IdArg::Zero,
                    Err(e) => return Err(e),
                };
                break;
            } else {
                return Err(ReplyError::Syntax);
            }
            i += 1;
        }
        // Redis tests `args->limit` here, so `LIMIT 0` slips through to the next checks.
        if limit.is_some_and(|l| l != 0) && strategy.is_none() {
            return Err(LIMIT_WITHOUT_STRATEGY);
        }
        if !xadd && strategy.is_none() {
            return Err(XTRIM_WITHOUT_STRATEGY);
        }
        if limit.is_some() && !approx {
            return Err(LIMIT_WITHOUT_APPROX);
        }
        let explicit_id = !matches!(id, IdArg::Given(XAddId::Auto) | IdArg::Missing);
        if idmp.is_some() && explicit_id && !mode.from_log {
            return Err(IDMP_EXPLICIT_ID);
        }
        Ok(AddTrimOptions {
            trim: strategy.map(|strategy| TrimSpec {
                strategy,
                approx,
                limit,
                policy: policy.unwrap_or_default(),
            }),
            nomkstream,
            id_pos: i,
            id,
            idmp,
        })
    }
}

/// Parsed `XADD`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XAdd<'a> {
    /// The stream.
    pub key: Bytes,
    /// Reply null instead of creating a missing stream.
    pub nomkstream: bool,
    /// Trim after appending.
    pub trim: Option<TrimSpec>,
    /// The requested ID.
    pub id: XAddId,
    /// `f1, v1, f2, v2, ...`.
    pub elements: &'a [Bytes],
    /// IDMP / IDMPAUTO.
    pub idmp: Option<IdmpArg<'a>>,
    /// The elements total more than [`STREAM_LISTPACK_MAX_SIZE`] bytes. Redis reports
    /// this only after the ID checks, so it is kept as a verdict for `exec`.
    too_large: bool,
}

impl<'a> XAdd<'a> {
    /// Parses XADD (Redis: `xaddCommand` up to the key lookup): options, then the
    /// field/value count, then the `0-0` check.
    pub fn parse(argv: &'a Argv) -> Result<XAdd<'a>, ReplyError> {
        Self::parse_with(
            argv,
            ParseMode {
                xadd: true,
                idmp: true,
                from_log: false,
            },
        )
    }

    /// [`XAdd::parse`] under `mode` (IDMP hidden by `compat-version`, or loading).
    pub fn parse_with(argv: &'a Argv, mode: ParseMode) -> Result<XAdd<'a>, ReplyError> {
        let opts = AddTrimOptions::parse_with(argv, mode)?;
        let field_pos = opts.id_pos + 1;
        let nargs = argv.len().saturating_sub(field_pos);
        if field_pos > argv.len() || nargs < 2 || nargs % 2 == 1 {
            return Err(ReplyError::arity(b"xadd"));
        }
        let id = match opts.id {
            IdArg::Given(id) => id,
            IdArg::Zero => return Err(ReplyError::XAddIdZero),
            IdArg::Missing => return Err(ReplyError::arity(b"xadd")),
        };
        let elements = &argv[field_pos..];
        let total: usize = elements.iter().map(|e| e.len()).sum();
        Ok(XAdd {
            key: argv[1].clone(),
            nomkstream: opts.nomkstream,
            trim: opts.trim,
            id,
            elements,
            idmp: opts.idmp,
            too_large: total > STREAM_LISTPACK_MAX_SIZE,
        })
    }

    /// The ID this entry would get in `stream`, or why it cannot be added, checked in
    /// Redis's order: exhausted stream, ID not above the top item, elements too large.
    fn resolve_id(&self, stream: &Stream, now_ms: u64) -> Result<StreamId, ReplyError> {
        if stream.last_id() == StreamId::MAX {
            return Err(ReplyError::StreamExhausted);
        }
        let id = stream.next_id(self.id, now_ms)?;
        if self.too_large {
            return Err(ReplyError::ElementsTooLarge);
        }
        Ok(id)
    }

    /// Appends, trims, replies with the new ID and signals the key; with IDMP, answers a
    /// duplicate with the original ID instead, or records the new iid.
    pub fn exec(self, ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
        let limits = ctx.core.node_limits;
        let now_ms = ctx.now_ms;
        let loading = ctx.core.replaying();
        // IDMPAUTO's iid, derived once from the fields and values.
        let auto;
        let idmp = match &self.idmp {
            Some(IdmpArg::Explicit { pid, iid }) => Some((*pid, *iid)),
            Some(IdmpArg::Auto { pid }) => {
                auto = auto_iid(self.elements);
                Some((&pid[..], &auto[..]))
            }
            None => None,
        };
        let idmp = idmp.map(|(pid, iid)| IdmpKey::new(pid, iid));
        // With IDMP state on the stream, the duplicate check also records a new iid (the
        // ID is resolved first; appending cannot fail after that): `Some(new producer)`.
        let mut recorded = None;
        let key_hash = ctx.db().hash_key(&self.key);
        let mut created = false;
        let id = match ctx.lookup_hashed(key_hash, &self.key)? {
            Some(stream) => {
                let resolved = self.resolve_id(stream, now_ms);
                if let Some(key) = &idmp
                    && let Some(state) = stream.idmp_state_mut()
                {
                    let now = (!loading).then_some(now_ms);
                    match state.check_or_record(key, now, resolved.as_ref().ok().copied()) {
                        Check::Duplicate(original) => {
                            state.note_duplicate();
                            ctx.out.bulk_id(original);
                            ctx.core.dirty += 1;
                            log_idmp_state(ctx, &self.key);
                            return Ok(());
                        }
                        Check::Recorded { new_producer } => recorded = Some(new_producer),
                        Check::Absent => {}
                    }
                }
                resolved?
            }
            None if self.nomkstream => {
                ctx.out.null();
                return Ok(());
            }
            None => {
                created = true;
                self.resolve_id(&Stream::new(), now_ms)?
            }
        };
        let defaults = ctx.core.idmp_defaults;
        // Retention is the primary's to apply: loading and a replica replay its trims.
        let retain = !loading && !ctx.core.repl.is_replica();
        let ratio = ctx.core.reclaim_ratio;
        let db = ctx.db();
        let stream = db.stream_or_create_hashed(key_hash, &self.key)?;
        let hot_nodes_before = stream.hot_node_count();
        stream.append(id, self.elements, &limits);
        let removed = match &self.trim {
            Some(trim) => stream.trim(trim, &limits),
            None => 0,
        };
        let len_after = stream.len();
        // This append sealed a node (it started a new one) and the stream now has sealed
        // hot nodes: the tiering mover is told once per node, not on every XADD (a stream
        // stays its candidate while it has more than one hot node).
        let hot_nodes = stream.hot_node_count();
        let sealed_nodes = hot_nodes > 1 && hot_nodes > hot_nodes_before;
        // MAXAGE / MAXBYTES (XCFGSET), after the command's own trim, within a budget.
        let retention = if retain {
            let mut budget = XADD_RETENTION_BUDGET;
            stream.apply_retention(now_ms, key_overhead(&self.key), &limits, &mut budget)
        } else {
            None
        };
        let mut to_pass = match &self.trim {
            Some(t) if removed > 0 => stream.reclaim_after_trim(t.policy, ratio),
            _ => false,
        };
        if let Some(t) = &retention {
            to_pass |= stream.reclaim_after_trim(t.policy, ratio);
        }
        let mut first_use = false;
        if let Some(key) = &idmp {
            first_use = stream.idmp().is_none();
            // Not recorded above only when the stream had no IDMP state yet (so the iid
            // is new).
            let new_producer = match recorded {
                Some(new_producer) => new_producer,
                None => stream.idmp_mut(defaults).record_new(key, id),
            };
            if new_producer {
                db.note_idmp(&self.key);
            }
        }
        if to_pass {
            db.note_reclaim(&self.key);
        }
        if sealed_nodes && ctx.core.tier.is_open() {
            let db = ctx.client.db;
            ctx.core.tier.note_stream(db, &self.key);
        }
        ctx.out.bulk_id(id);
        ctx.modified(&self.key);
        // Redis's order: `new` as the key is added, `xadd`, then `xtrim` if the trim
        // removed something (nothing else can be seen in between).
        if created {
            ctx.notify(class::NEW, "new", &self.key);
        }
        ctx.notify(class::STREAM, "xadd", &self.key);
        if removed > 0 || retention.is_some() {
            ctx.notify(class::STREAM, "xtrim", &self.key);
        }
        if ctx.propagates() {
            let (id_text, id_len) = id.format();
            let mut len_text = itoa::Buffer::new();
            let mut effect: Vec<&[u8]> = Vec::with_capacity(10 + self.elements.len());
            effect.extend([b"XADD".as_slice(), &self.key]);
            if removed > 0 {
                let trim = self.trim.as_ref().expect("something was trimmed");
                effect.extend(policy_word(trim.policy));
                effect.extend([
                    b"MAXLEN".as_slice(),
                    b"=",
                    len_text.format(len_after).as_bytes(),
                ]);
            }
            match &self.idmp {
                Some(IdmpArg::Explicit { pid, iid }) => {
                    effect.extend([b"IDMP".as_slice(), pid, iid])
                }
                Some(IdmpArg::Auto { pid }) => effect.extend([b"IDMPAUTO".as_slice(), pid]),
                None => {}
            }
            effect.push(&id_text[..id_len]);
            effect.extend(self.elements.iter().map(|e| &e[..]));
            ctx.propagate(&effect);
        }
        if let Some(t) = &retention {
            // Logged after the XADD, as the exact trim it was.
            let db = ctx.client.db;
            ctx.core.retention_trimmed(db, &self.key, t);
        }
        if first_use {
            // The settings the stream's IDMP state got, so replay does not depend on
            // the defaults then.
            log_idmp_state(ctx, &self.key);
        }
        ctx.signal_ready(&self.key);
        Ok(())
    }
}

/// Logs `key`'s IDMP settings and counters as they are now (`STREAMD.IDMP key duration
/// maxsize iids-added iids-duplicates`, persist/idmp.rs).
fn log_idmp_state(ctx: &mut Ctx<'_>, key: &[u8]) {
    if !ctx.propagates() {
        return;
    }
    let db = ctx.client.db;
    if let Some(record) = ctx.core.dbs[db]
        .get(key)
        .and_then(Value::as_stream)
        .and_then(|s| crate::commands::effects::idmp_state_record(key, s))
    {
        ctx.propagate(&record);
    }
}

fn xadd(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let mode = ParseMode {
        xadd: true,
        idmp: ctx.core.supports(8, 6),
        // The primary's stream carries the same forms as the log (an IDMP XADD with the
        // ID it generated), so a replica takes them as a replay does.
        from_log: ctx.core.replaying(),
    };
    XAdd::parse_with(argv, mode)?.exec(ctx)
}

/// Records a write that removed `n >= 1` entries: WATCH invalidation, and the dirty
/// counter raised by `n` as Redis does for XDEL and XTRIM.
/// The word for a non-default reference policy in a logged trim.
fn policy_word(policy: RefPolicy) -> Option<&'static [u8]> {
    match policy {
        RefPolicy::KeepRef => None,
        RefPolicy::DelRef => Some(b"DELREF"),
        RefPolicy::Acked => Some(b"ACKED"),
    }
}

/// Logs a trim of `key` that left `len_after` entries as `XTRIM key MAXLEN = n`.
fn propagate_trim(ctx: &mut Ctx<'_>, key: &[u8], len_after: u64, policy: RefPolicy) {
    let mut n = itoa::Buffer::new();
    let mut effect: Vec<&[u8]> = vec![
        b"XTRIM",
        key,
        b"MAXLEN",
        b"=",
        n.format(len_after).as_bytes(),
    ];
    effect.extend(policy_word(policy));
    ctx.propagate(&effect);
}

fn modified_by(ctx: &mut Ctx<'_>, key: &[u8], n: u64) {
    ctx.modified(key);
    ctx.core.dirty += n.saturating_sub(1);
}

/// Parsed `XTRIM`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XTrim {
    /// The stream.
    pub key: Bytes,
    /// The trim to apply.
    pub trim: TrimSpec,
}

impl XTrim {
    /// Parses XTRIM with the shared option parser.
    pub fn parse(argv: &Argv) -> Result<XTrim, ReplyError> {
        let opts = AddTrimOptions::parse(argv, false)?;
        let trim = opts
            .trim
            .expect("the XTRIM parser refuses a missing strategy");
        Ok(XTrim {
            key: argv[1].clone(),
            trim,
        })
    }

    /// Trims; replies with the number of entries removed (0 for a missing key).
    pub fn exec(self, ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
        let (limits, ratio) = (ctx.core.node_limits, ctx.core.reclaim_ratio);
        let (deleted, len_after, to_pass) = match ctx.lookup(&self.key)? {
            Some(stream) => {
                let deleted = stream.trim(&self.trim, &limits);
                let to_pass = deleted > 0 && stream.reclaim_after_trim(self.trim.policy, ratio);
                (deleted, stream.len(), to_pass)
            }
            None => (0, 0, false),
        };
        if deleted > 0 {
            modified_by(ctx, &self.key, deleted);
            if to_pass {
                ctx.db().note_reclaim(&self.key);
            }
            ctx.notify(class::STREAM, "xtrim", &self.key);
            propagate_trim(ctx, &self.key, len_after, self.trim.policy);
        }
        ctx.out.integer(i64::try_from(deleted).unwrap_or(i64::MAX));
        Ok(())
    }
}

fn xtrim(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    XTrim::parse(ctx.argv)?.exec(ctx)
}

/// Parsed `XDEL key id [id ...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XDel {
    /// The stream.
    pub key: Bytes,
    /// The IDs, or the first ID error. Redis answers 0 for a missing key without looking
    /// at the IDs, so the error is only reported when the key exists.
    pub ids: Result<Vec<StreamId>, ReplyError>,
}

impl XDel {
    /// Parses every ID (strict; all-or-nothing).
    pub fn parse(argv: &Argv) -> XDel {
        XDel {
            key: argv[1].clone(),
            ids: argv[2..].iter().map(|a| parse_strict_id(a)).collect(),
        }
    }

    /// Deletes; replies with the number of entries deleted.
    pub fn exec(self, ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
        let ratio = ctx.core.reclaim_ratio;
        let Some(stream) = ctx.lookup(&self.key)? else {
            ctx.out.integer(0);
            return Ok(());
        };
        let ids = self.ids?;
        // Nodes that pass stream-node-reclaim-ratio are rewritten as they do.
        let (mut deleted, mut to_pass) = (0u64, false);
        for &id in &ids {
            let (gone, left) = stream.delete_reclaiming(id, ratio);
            deleted += u64::from(gone);
            to_pass |= left;
        }
        if to_pass {
            ctx.db().note_reclaim(&self.key);
        }
        if deleted > 0 {
            modified_by(ctx, &self.key, deleted);
            ctx.notify(class::STREAM, "xdel", &self.key);
            let argv = ctx.argv;
            ctx.propagate(argv);
        }
        ctx.out.integer(i64::try_from(deleted).unwrap_or(i64::MAX));
        Ok(())
    }
}

fn xdel(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    XDel::parse(ctx.argv).exec(ctx)
}

/// Parsed `XSETID key last-id [ENTRIESADDED n] [MAXDELETEDID id]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XSetId {
    /// The stream.
    pub key: Bytes,
    /// The new `last_id`.
    pub last_id: StreamId,
    /// ENTRIESADDED, if given.
    pub entries_added: Option<u64>,
    /// MAXDELETEDID, if given (`0-0` leaves the current value, as in Redis).
    pub max_deleted_id: StreamId,
}

impl XSetId {
    /// Parses XSETID (Redis: `xsetidCommand` up to the key lookup). Options may repeat;
    /// each MAXDELETEDID is checked against the new last ID as it is read.
    pub fn parse(argv: &Argv) -> Result<XSetId, ReplyError> {
        let last_id = parse_strict_id(&argv[2])?;
        let mut entries_added = None;
        let mut max_deleted_id = StreamId::MIN;
        let mut i = 3;
        while i < argv.len() {
            let more = argv.len() - 1 - i;
            let opt = c_str(&argv[i]);
            if is(opt, "ENTRIESADDED") && more >= 1 {
                let n = parse_i64(&argv[i + 1])?;
                entries_added = Some(u64::try_from(n).map_err(|_| ENTRIES_ADDED_NEGATIVE)?);
            } else if is(opt, "MAXDELETEDID") && more >= 1 {
                max_deleted_id = parse_strict_id(&argv[i + 1])?;
                if last_id < max_deleted_id {
                    return Err(XSETID_BELOW_GIVEN_MAX_DELETED);
                }
            } else {
                return Err(ReplyError::Syntax);
            }
            i += 2;
        }
        Ok(XSetId {
            key: argv[1].clone(),
            last_id,
            entries_added,
            max_deleted_id,
        })
    }

    /// Checks the new values against the stream, then sets them.
    pub fn exec(self, ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
        let stream = ctx.lookup(&self.key)?.ok_or(ReplyError::NoSuchKey)?;
        if self.last_id < stream.max_deleted_entry_id() {
            return Err(XSETID_BELOW_MAX_DELETED);
        }
        if let Some(top) = stream.last_entry().map(|e| e.id) {
            if self.last_id < top {
                return Err(XSETID_BELOW_TOP_ITEM);
            }
            if self.entries_added.is_some_and(|n| n < stream.len()) {
                return Err(XSETID_ENTRIES_ADDED_BELOW_LENGTH);
            }
        }
        stream.set_last_id(self.last_id);
        if let Some(n) = self.entries_added {
            stream.set_entries_added(n);
        }
        if !self.max_deleted_id.is_zero() {
            stream.set_max_deleted_entry_id(self.max_deleted_id);
        }
        ctx.modified(&self.key);
        ctx.notify(class::STREAM, "xsetid", &self.key);
        let argv = ctx.argv;
        ctx.propagate(argv);
        ctx.out.ok();
        Ok(())
    }
}

fn xsetid(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    XSetId::parse(ctx.argv)?.exec(ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::resp::argv;

    fn add(args: &[&str]) -> Result<(Option<TrimSpec>, bool, XAddId, usize), ReplyError> {
        let a = argv(args);
        XAdd::parse(&a).map(|x| (x.trim, x.nomkstream, x.id, x.elements.len()))
    }

    fn trim(args: &[&str]) -> Result<TrimSpec, ReplyError> {
        XTrim::parse(&argv(args)).map(|t| t.trim)
    }

    #[test]
    fn xadd_options_in_any_order() {
        let (t, nomk, id, n) = add(&[
            "xadd",
            "k",
            "acked",
            "MAXLEN",
            "~",
            "10",
            "nomkstream",
            "LIMIT",
            "5",
            "1-*",
            "f",
            "v",
        ])
        .unwrap();
        assert!(nomk);
        assert_eq!(id, XAddId::AutoSeq(1));
        assert_eq!(n, 2);
        assert_eq!(
            t,
            Some(TrimSpec {
                strategy: TrimStrategy::MaxLen(10),
                approx: true,
                limit: Some(5),
                policy: RefPolicy::Acked,
            })
        );
        let (t, _, id, _) = add(&["xadd", "k", "MINID", "=", "5", "*", "f", "v"]).unwrap();
        assert_eq!(id, XAddId::Auto);
        let t = t.unwrap();
        assert_eq!(t.strategy, TrimStrategy::MinId(StreamId::new(5, 0)));
        assert!(!t.approx);
        assert_eq!(t.limit, None);
    }

    #[test]
    fn xadd_unknown_words_are_ids() {
        for args in [
            &["xadd", "k", "NOPE", "f", "v"][..],
            &["xadd", "k", "KEEPREF", "DELREF", "*", "f", "v"],
            // IDMP takes two values: `*` is the iid and `f` the ID.
            &["xadd", "k", "IDMP", "p", "*", "f", "v"],
            &["xadd", "k", "IDMPAUTO", "f", "v"],
        ] {
            assert_eq!(add(args), Err(ReplyError::InvalidStreamId), "{args:?}");
        }
    }

    #[test]
    fn option_words_match_case_insensitively_and_only_whole() {
        let words = [
            ("*", Word::Star),
            ("maxlen", Word::MaxLen),
            ("MinId", Word::MinId),
            ("LIMIT", Word::Limit),
            ("nomkstream", Word::NoMkStream),
            ("idmp", Word::Idmp),
            ("IdmpAuto", Word::IdmpAuto),
            ("keepref", Word::KeepRef),
            ("DELREF", Word::DelRef),
            ("acked", Word::Acked),
        ];
        for (text, word) in words {
            assert_eq!(Word::of(text.as_bytes()), word, "{text}");
        }
        for other in [
            "", "**", "IDMQ", "MAXLEX", "MINIT", "LIMIX", "ACKER", "DELRED", "x", "1-1",
        ] {
            assert_eq!(Word::of(other.as_bytes()), Word::Other, "{other}");
        }
    }

    #[test]
    fn xadd_idmp_options_and_errors() {
        let a = argv(&["xadd", "k", "IDMP", "p", "i", "MAXLEN", "5", "*", "f", "v"]);
        let x = XAdd::parse(&a).unwrap();
        assert_eq!(
            x.idmp,
            Some(IdmpArg::Explicit {
                pid: &b"p"[..],
                iid: &b"i"[..]
            })
        );
        let a = argv(&["xadd", "k", "KEEPREF", "IDMPAUTO", "p", "*", "f", "v"]);
        assert_eq!(
            XAdd::parse(&a).unwrap().idmp,
            Some(IdmpArg::Auto { pid: &b"p"[..] })
        );
        let cases: &[(&[&str], &str)] = &[
            (
                &[
                    "xadd", "k", "IDMP", "p", "i", "IDMP", "q", "j", "*", "f", "v",
                ],
                "ERR syntax error, IDMP/IDMPAUTO specified multiple times",
            ),
            (
                &[
                    "xadd", "k", "IDMP", "p", "i", "IDMPAUTO", "q", "*", "f", "v",
                ],
                "ERR syntax error, IDMP/IDMPAUTO specified multiple times",
            ),
            (
                &["xadd", "k", "IDMP", "", "i", "*", "f", "v"],
                "ERR syntax error, IDMP requires a non-empty producer ID",
            ),
            (
                &["xadd", "k", "IDMP", "p", "", "*", "f", "v"],
                "ERR syntax error, IDMP requires a non-empty idempotent ID",
            ),
            (
                &["xadd", "k", "IDMPAUTO", "", "*", "f", "v"],
                "ERR syntax error, IDMPAUTO requires a non-empty producer ID",
            ),
            (
                &["xadd", "k", "IDMP", "p", "i", "1-1", "f", "v"],
                "ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs",
            ),
            (
                &["xadd", "k", "IDMPAUTO", "p", "5-*", "f", "v"],
                "ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs",
            ),
        ];
        for (args, text) in cases {
            assert_eq!(
                XAdd::parse(&argv(args)).unwrap_err().to_string(),
                *text,
                "{args:?}"
            );
        }
        // The log replays IDMP with the resolved ID.
        let a = argv(&["xadd", "k", "IDMP", "p", "i", "1-1", "f", "v"]);
        let mode = ParseMode {
            xadd: true,
            idmp: true,
            from_log: true,
        };
        assert!(XAdd::parse_with(&a, mode).is_ok());
        // Below compat-version 8.6 the words are IDs.
        let mode = ParseMode {
            xadd: true,
            idmp: false,
            from_log: false,
        };
        let a = argv(&["xadd", "k", "IDMP", "p", "i", "*", "f", "v"]);
        assert_eq!(
            XAdd::parse_with(&a, mode).unwrap_err(),
            ReplyError::InvalidStreamId
        );
    }

    #[test]
    fn xadd_maxlen_needs_a_value_after_it() {
        // `MAXLEN` as the last-but-field word is the ID.
        assert_eq!(add(&["xadd", "k", "*", "MAXLEN", "1"]).map(|r| r.3), Ok(2));
        // `~` followed by one argument is the threshold itself.
        assert_eq!(
            add(&["xadd", "k", "MAXLEN", "~"]),
            Err(ReplyError::NotInteger)
        );
    }

    #[test]
    fn xadd_errors_in_redis_order() {
        let cases: &[(&[&str], &str)] = &[
            (
                &["xadd", "k", "MAXLEN", "-1", "*", "f", "v"],
                "ERR The MAXLEN argument must be >= 0.",
            ),
            (
                &["xadd", "k", "MAXLEN", "x", "*", "f", "v"],
                "ERR value is not an integer or out of range",
            ),
            (
                &["xadd", "k", "MAXLEN", "+1", "*", "f", "v"],
                "ERR value is not an integer or out of range",
            ),
            (
                &["xadd", "k", "MINID", "-", "*", "f", "v"],
                "ERR Invalid stream ID specified as stream command argument",
            ),
            (
                &[
                    "xadd", "k", "MAXLEN", "~", "1", "LIMIT", "-1", "*", "f", "v",
                ],
                "ERR The LIMIT argument must be >= 0.",
            ),
            (
                &["xadd", "k", "MAXLEN", "1", "MINID", "1", "*", "f", "v"],
                "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
            ),
            (
                &["xadd", "k", "MAXLEN", "1", "MAXLEN", "1", "*", "f", "v"],
                "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
            ),
            (
                &["xadd", "k", "LIMIT", "5", "*", "f", "v"],
                "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
            ),
            (
                &["xadd", "k", "LIMIT", "0", "*", "f", "v"],
                "ERR syntax error, LIMIT cannot be used without the special ~ option",
            ),
            (
                &["xadd", "k", "MAXLEN", "1", "LIMIT", "5", "*", "f", "v"],
                "ERR syntax error, LIMIT cannot be used without the special ~ option",
            ),
            (
                &["xadd", "k", "*", "f"],
                "ERR wrong number of arguments for 'xadd' command",
            ),
            (
                &["xadd", "k", "*", "f", "v", "g"],
                "ERR wrong number of arguments for 'xadd' command",
            ),
            (
                &["xadd", "k", "nomkstream", "nomkstream", "nomkstream"],
                "ERR wrong number of arguments for 'xadd' command",
            ),
            // The 0-0 check comes after the arity check.
            (
                &["xadd", "k", "0-0", "f"],
                "ERR wrong number of arguments for 'xadd' command",
            ),
            (
                &["xadd", "k", "0-0", "f", "v"],
                "ERR The ID specified in XADD must be greater than 0-0",
            ),
            (
                &["xadd", "k", "0", "f", "v"],
                "ERR The ID specified in XADD must be greater than 0-0",
            ),
            (
                &["xadd", "k", "LIMIT", "5", "0-0", "f", "v"],
                "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
            ),
        ];
        for (args, text) in cases {
            assert_eq!(
                add(args).map(|_| ()).unwrap_err().to_string(),
                *text,
                "{args:?}"
            );
        }
        assert_eq!(
            add(&["xadd", "k", "0-*", "f", "v"]).map(|r| r.2),
            Ok(XAddId::AutoSeq(0))
        );
    }

    #[test]
    fn xtrim_parsing() {
        assert_eq!(
            trim(&["xtrim", "k", "DELREF", "MINID", "~", "7-1", "LIMIT", "0"]),
            Ok(TrimSpec {
                strategy: TrimStrategy::MinId(StreamId::new(7, 1)),
                approx: true,
                limit: Some(0),
                policy: RefPolicy::DelRef,
            })
        );
        let cases: &[(&[&str], &str)] = &[
            (&["xtrim", "k", "MAXLEN"], "ERR syntax error"),
            (&["xtrim", "k", "*", "MAXLEN", "1"], "ERR syntax error"),
            (
                &["xtrim", "k", "MAXLEN", "1", "NOMKSTREAM"],
                "ERR syntax error",
            ),
            (
                &["xtrim", "k", "MAXLEN", "1", "KEEPREF", "ACKED"],
                "ERR syntax error",
            ),
            (
                &["xtrim", "k", "KEEPREF"],
                "ERR syntax error, XTRIM must be called with a trimming strategy",
            ),
            (
                &["xtrim", "k", "LIMIT", "0"],
                "ERR syntax error, XTRIM must be called with a trimming strategy",
            ),
            (
                &["xtrim", "k", "LIMIT", "1"],
                "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
            ),
        ];
        for (args, text) in cases {
            assert_eq!(trim(args).unwrap_err().to_string(), *text, "{args:?}");
        }
    }

    #[test]
    fn xdel_defers_id_errors() {
        let d = XDel::parse(&argv(&["xdel", "k", "1-1", "bad"]));
        assert_eq!(d.ids, Err(ReplyError::InvalidStreamId));
        let d = XDel::parse(&argv(&["xdel", "k", "1-1", "2"]));
        assert_eq!(d.ids, Ok(vec![StreamId::new(1, 1), StreamId::new(2, 0)]));
    }

    #[test]
    fn xsetid_parsing() {
        let s = XSetId::parse(&argv(&[
            "xsetid",
            "k",
            "5-5",
            "ENTRIESADDED",
            "9",
            "MAXDELETEDID",
            "5-5",
        ]))
        .unwrap();
        assert_eq!(s.entries_added, Some(9));
        assert_eq!(s.max_deleted_id, StreamId::new(5, 5));
        let cases: &[(&[&str], &str)] = &[
            (
                &["xsetid", "k", "+"],
                "ERR Invalid stream ID specified as stream command argument",
            ),
            (&["xsetid", "k", "1-1", "0"], "ERR syntax error"),
            (&["xsetid", "k", "1-1", "ENTRIESADDED"], "ERR syntax error"),
            (
                &["xsetid", "k", "1-1", "ENTRIESADDED", "-1"],
                "ERR entries_added must be positive",
            ),
            (
                &["xsetid", "k", "1-1", "ENTRIESADDED", "x"],
                "ERR value is not an integer or out of range",
            ),
            (
                &["xsetid", "k", "1-1", "MAXDELETEDID", "2-0"],
                "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
            ),
            (
                &["xsetid", "k", "1-1", "MAXDELETEDID", "-"],
                "ERR Invalid stream ID specified as stream command argument",
            ),
        ];
        for (args, text) in cases {
            assert_eq!(
                XSetId::parse(&argv(args)).unwrap_err().to_string(),
                *text,
                "{args:?}"
            );
        }
    }

    #[test]
    fn elements_over_one_gib_are_flagged() {
        // Zeroed memory comes from the allocator untouched, so this costs no real RAM.
        let big = Bytes::from(vec![0u8; STREAM_LISTPACK_MAX_SIZE / 2 + 1]);
        let a: Argv = vec![
            Bytes::from_static(b"xadd"),
            Bytes::from_static(b"k"),
            Bytes::from_static(b"*"),
            big.clone(),
            big,
        ];
        let x = XAdd::parse(&a).unwrap();
        assert!(x.too_large);
        assert_eq!(
            x.resolve_id(&Stream::new(), 5),
            Err(ReplyError::ElementsTooLarge)
        );
    }
}
