//! The idempotent-production commands besides XADD's options: `XCFGSET` (8.6) sets a
//! stream's IDMP settings and `XIDMPRECORD` (8.6.2) records one pid/iid → entry mapping
//! (reference §2.18, §2.19; state in stream/idmp.rs). XCFGSET also sets streamd's own
//! retention settings (stream/lifecycle.rs, docs/beyond-redis.md).
//!
//! ```text
//! XCFGSET key [IDMP-DURATION seconds] [IDMP-MAXSIZE n]        +OK
//!             [MAXAGE ms] [MAXBYTES bytes] [RETENTION-REFS KEEPREF|DELREF|ACKED]
//! XIDMPRECORD key pid iid entry-id                            +OK
//! ```
//!
//! The retention options (0 = off) are checked like the IDMP ones: repeated, not an
//! integer, negative, or an unknown policy word. They leave the IDMP state alone (a
//! stream gets none from them), and the IDMP options leave retention alone. A change to
//! retention is logged as `XCFGSET key MAXAGE a MAXBYTES b RETENTION-REFS p` with all
//! three resulting values, apart from the IDMP record, so each record replays on its own
//! and the IDMP one stays Redis's. Setting retention trims nothing by itself: the next
//! XADD or the background sweep does (core/lifecycle.rs).
//!
//! XCFGSET checks the key first (`no such key`), then its options in order: a repeated
//! option, a non-integer value, a value out of range; an option with no value or an
//! unknown word is a syntax error, and no option at all is its own error. A value that
//! differs from the current one clears the stream's producers (counters stay); a call
//! that changes nothing is not logged. XIDMPRECORD refuses a missing entry and an iid
//! that the producer already maps to another entry; recording the same mapping again is
//! `+OK` and changes nothing. Neither raises `iids-added`, which counts XADDs.
//!
//! Both are logged verbatim when they change something (XCFGSET with both resulting
//! values, so replay does not depend on the defaults then); replaying XCFGSET always
//! clears the producers, since only a change was logged.

use super::STREAM_KEY1;
use super::{CommandSpec, flags::*, is, parse_i64};
use crate::core::Ctx;
use crate::error::ReplyError;
use crate::stream::RefPolicy;
use crate::stream::id::parse_strict_id;
use crate::stream::idmp::{DURATION_MAX, DURATION_MIN, MAXSIZE_MAX, MAXSIZE_MIN};
use crate::stream::lifecycle::Retention;

const DURATION_TWICE: ReplyError = ReplyError::msg("ERR IDMP-DURATION specified multiple times");
const MAXSIZE_TWICE: ReplyError = ReplyError::msg("ERR IDMP-MAXSIZE specified multiple times");
const DURATION_RANGE: ReplyError =
    ReplyError::msg("ERR IDMP-DURATION must be between 1 and 86400 seconds");
const MAXSIZE_RANGE: ReplyError =
    ReplyError::msg("ERR IDMP-MAXSIZE must be between 1 and 10000 entries");
const NO_PARAMETER: ReplyError = ReplyError::msg("ERR At least one parameter must be specified");
const MAXAGE_TWICE: ReplyError = ReplyError::msg("ERR MAXAGE specified multiple times");
const MAXBYTES_TWICE: ReplyError = ReplyError::msg("ERR MAXBYTES specified multiple times");
const REFS_TWICE: ReplyError = ReplyError::msg("ERR RETENTION-REFS specified multiple times");
const MAXAGE_NEGATIVE: ReplyError = ReplyError::msg("ERR MAXAGE must be >= 0");
const MAXBYTES_NEGATIVE: ReplyError = ReplyError::msg("ERR MAXBYTES must be >= 0");
const BAD_REFS: ReplyError =
    ReplyError::msg("ERR RETENTION-REFS must be KEEPREF, DELREF, or ACKED");
const EMPTY_PID: ReplyError = ReplyError::msg("ERR producer ID must be non-empty");
const EMPTY_IID: ReplyError = ReplyError::msg("ERR idempotent ID must be non-empty");
const NO_SUCH_MESSAGE: ReplyError = ReplyError::msg("ERR No such message in stream");
const IID_ELSEWHERE: ReplyError =
    ReplyError::msg("ERR IID already exists for this producer with a different stream ID");

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    STREAM_KEY1.row(
        "xcfgset",
        -2,
        WRITE | FAST,
        "Sets the IDMP configuration parameters for a stream.",
        "8.6.0",
        xcfgset,
    ),
    // Redis's xidmprecord.json says 8.6.2 (the 8.6.x fix that added it for AOF
    // rewrites; the documentation site says 8.8.0): visible from compat-version 8.6.
    STREAM_KEY1.row(
        "xidmprecord",
        5,
        WRITE | DENYOOM | FAST,
        "An internal command for setting IDMP metadata on an existing stream message.",
        "8.6.2",
        xidmprecord,
    ),
];

/// Parsed XCFGSET options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct XCfgSet {
    /// IDMP-DURATION, seconds.
    pub duration: Option<u32>,
    /// IDMP-MAXSIZE.
    pub maxsize: Option<u32>,
    /// MAXAGE, ms (0 = off).
    pub max_age: Option<u64>,
    /// MAXBYTES (0 = off).
    pub max_bytes: Option<u64>,
    /// RETENTION-REFS.
    pub refs: Option<RefPolicy>,
}

impl XCfgSet {
    /// True when a retention option was given.
    fn sets_retention(&self) -> bool {
        self.max_age.is_some() || self.max_bytes.is_some() || self.refs.is_some()
    }

    /// `current` with the retention options given applied.
    fn retention(&self, current: Retention) -> Retention {
        Retention {
            max_age_ms: self.max_age.unwrap_or(current.max_age_ms),
            max_bytes: self.max_bytes.unwrap_or(current.max_bytes),
            refs: self.refs.unwrap_or(current.refs),
        }
    }
}

/// A non-negative integer option value.
fn parse_non_negative(arg: &[u8], negative: ReplyError) -> Result<u64, ReplyError> {
    u64::try_from(parse_i64(arg)?).map_err(|_| negative)
}

impl XCfgSet {
    /// Parses the options after the key (Redis's order of checks, module doc).
    pub fn parse(args: &[bytes::Bytes]) -> Result<XCfgSet, ReplyError> {
        let mut cfg = XCfgSet::default();
        let mut i = 0;
        while i < args.len() {
            let more = args.len() - 1 - i;
            let opt = &args[i];
            if is(opt, "IDMP-DURATION") && more >= 1 {
                if cfg.duration.is_some() {
                    return Err(DURATION_TWICE);
                }
                let v = parse_i64(&args[i + 1])?;
                if !(DURATION_MIN..=DURATION_MAX).contains(&v) {
                    return Err(DURATION_RANGE);
                }
                cfg.duration = Some(v as u32);
            } else if is(opt, "IDMP-MAXSIZE") && more >= 1 {
                if cfg.maxsize.is_some() {
                    return Err(MAXSIZE_TWICE);
                }
                let v = parse_i64(&args[i + 1])?;
                if !(MAXSIZE_MIN..=MAXSIZE_MAX).contains(&v) {
                    return Err(MAXSIZE_RANGE);
                }
                cfg.maxsize = Some(v as u32);
            } else if is(opt, "MAXAGE") && more >= 1 {
                if cfg.max_age.is_some() {
                    return Err(MAXAGE_TWICE);
                }
                cfg.max_age = Some(parse_non_negative(&args[i + 1], MAXAGE_NEGATIVE)?);
            } else if is(opt, "MAXBYTES") && more >= 1 {
                if cfg.max_bytes.is_some() {
                    return Err(MAXBYTES_TWICE);
                }
                cfg.max_bytes = Some(parse_non_negative(&args[i + 1], MAXBYTES_NEGATIVE)?);
            } else if is(opt, "RETENTION-REFS") && more >= 1 {
                if cfg.refs.is_some() {
                    return Err(REFS_TWICE);
                }
                let w = &args[i + 1];
                cfg.refs = Some(if is(w, "KEEPREF") {
                    RefPolicy::KeepRef
                } else if is(w, "DELREF") {
                    RefPolicy::DelRef
                } else if is(w, "ACKED") {
                    RefPolicy::Acked
                } else {
                    return Err(BAD_REFS);
                });
            } else {
                return Err(ReplyError::Syntax);
            }
            i += 2;
        }
        if cfg.duration.is_none() && cfg.maxsize.is_none() && !cfg.sets_retention() {
            return Err(NO_PARAMETER);
        }
        Ok(cfg)
    }
}

fn xcfgset(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    if !ctx.exists(key) {
        return Err(ReplyError::NoSuchKey);
    }
    let cfg = XCfgSet::parse(&argv[2..])?;
    if cfg.duration.is_some() || cfg.maxsize.is_some() {
        configure_idmp(ctx, key, &cfg);
    }
    if cfg.sets_retention() {
        configure_retention(ctx, key, &cfg);
    }
    ctx.out.ok();
    Ok(())
}

/// XCFGSET's IDMP options: applied, and logged with both resulting values if changed.
fn configure_idmp(ctx: &mut Ctx<'_>, key: &[u8], cfg: &XCfgSet) {
    let defaults = ctx.core.idmp_defaults;
    let loading = ctx.core.replaying();
    let stream = ctx.db().get_stream_mut(key).expect("checked by the caller");
    let state = stream.idmp_mut(defaults);
    let mut changed = state.configure(cfg.duration, cfg.maxsize);
    if loading && !changed {
        // Only changes are logged: a replayed XCFGSET cleared the producers live.
        state.configure(Some(state.duration()), Some(state.maxsize()));
        changed = true;
    }
    let (duration, maxsize) = (state.duration(), state.maxsize());
    if changed {
        ctx.modified(key);
        let (mut d, mut m) = (itoa::Buffer::new(), itoa::Buffer::new());
        ctx.propagate(&[
            b"XCFGSET".as_slice(),
            key,
            b"IDMP-DURATION",
            d.format(duration).as_bytes(),
            b"IDMP-MAXSIZE",
            m.format(maxsize).as_bytes(),
        ]);
    }
}

/// XCFGSET's retention options: applied, the key noted for the retention sweep, and
/// logged with all three resulting values if anything changed.
fn configure_retention(ctx: &mut Ctx<'_>, key: &[u8], cfg: &XCfgSet) {
    let db = ctx.db();
    let stream = db.get_stream_mut(key).expect("checked by the caller");
    let r = cfg.retention(stream.retention());
    if !stream.set_retention(r) {
        return;
    }
    if !r.is_off() {
        db.note_retention(key);
    }
    ctx.modified(key);
    ctx.propagate(&crate::commands::effects::retention_record(key, &r));
}

fn xidmprecord(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (key, pid, iid) = (&argv[1], &argv[2], &argv[3]);
    if pid.is_empty() {
        return Err(EMPTY_PID);
    }
    if iid.is_empty() {
        return Err(EMPTY_IID);
    }
    let id = parse_strict_id(&argv[4])?;
    let now = (!ctx.core.replaying()).then_some(ctx.now_ms);
    let defaults = ctx.core.idmp_defaults;
    let stream = ctx.lookup(key)?.ok_or(ReplyError::NoSuchKey)?;
    if stream.get(id).is_none() {
        return Err(NO_SUCH_MESSAGE);
    }
    let tracked = stream
        .idmp_state_mut()
        .and_then(|s| s.lookup(&crate::stream::idmp::IdmpKey::new(pid, iid), now));
    match tracked {
        Some(existing) if existing == id => {}
        Some(_) => return Err(IID_ELSEWHERE),
        None => {
            if stream.idmp_mut(defaults).record(pid, iid, id, false) {
                ctx.db().note_idmp(key);
            }
            ctx.modified(key);
            ctx.propagate(argv);
        }
    }
    ctx.out.ok();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn parse(args: &[&str]) -> Result<XCfgSet, String> {
        let a: Vec<Bytes> = args
            .iter()
            .map(|s| Bytes::copy_from_slice(s.as_bytes()))
            .collect();
        XCfgSet::parse(&a).map_err(|e| e.to_string())
    }

    #[test]
    fn xcfgset_options_and_errors() {
        assert_eq!(
            parse(&["idmp-maxsize", "5", "IDMP-DURATION", "86400"]),
            Ok(XCfgSet {
                duration: Some(86400),
                maxsize: Some(5),
                ..XCfgSet::default()
            })
        );
        assert_eq!(
            parse(&[
                "maxage",
                "30000",
                "RETENTION-REFS",
                "acked",
                "MAXBYTES",
                "0"
            ]),
            Ok(XCfgSet {
                max_age: Some(30000),
                max_bytes: Some(0),
                refs: Some(RefPolicy::Acked),
                ..XCfgSet::default()
            })
        );
        let cases: &[(&[&str], &str)] = &[
            (&[], "ERR At least one parameter must be specified"),
            (&["IDMP-DURATION"], "ERR syntax error"),
            (&["INVALID"], "ERR syntax error"),
            (&["IDMP-DURATION", "5", "x"], "ERR syntax error"),
            (
                &["IDMP-DURATION", "IDMP-DURATION", "IDMP-DURATION"],
                "ERR value is not an integer or out of range",
            ),
            (
                &["IDMP-MAXSIZE", "000000000"],
                "ERR value is not an integer or out of range",
            ),
            (
                &["IDMP-DURATION", "0"],
                "ERR IDMP-DURATION must be between 1 and 86400 seconds",
            ),
            (
                &["IDMP-DURATION", "86401"],
                "ERR IDMP-DURATION must be between 1 and 86400 seconds",
            ),
            (
                &["IDMP-MAXSIZE", "-50"],
                "ERR IDMP-MAXSIZE must be between 1 and 10000 entries",
            ),
            (
                &["IDMP-MAXSIZE", "10001"],
                "ERR IDMP-MAXSIZE must be between 1 and 10000 entries",
            ),
            (
                &["IDMP-DURATION", "5", "IDMP-DURATION", "6"],
                "ERR IDMP-DURATION specified multiple times",
            ),
            (
                &["IDMP-MAXSIZE", "5", "IDMP-MAXSIZE", "x"],
                "ERR IDMP-MAXSIZE specified multiple times",
            ),
            (&["MAXAGE", "-1"], "ERR MAXAGE must be >= 0"),
            (&["MAXBYTES", "-5"], "ERR MAXBYTES must be >= 0"),
            (
                &["MAXAGE", "1d"],
                "ERR value is not an integer or out of range",
            ),
            (
                &["MAXAGE", "1", "MAXAGE", "2"],
                "ERR MAXAGE specified multiple times",
            ),
            (
                &["MAXBYTES", "1", "MAXBYTES", "2"],
                "ERR MAXBYTES specified multiple times",
            ),
            (
                &["RETENTION-REFS", "ACKED", "RETENTION-REFS", "DELREF"],
                "ERR RETENTION-REFS specified multiple times",
            ),
            (
                &["RETENTION-REFS", "NONE"],
                "ERR RETENTION-REFS must be KEEPREF, DELREF, or ACKED",
            ),
            (&["MAXAGE"], "ERR syntax error"),
        ];
        for (args, text) in cases {
            assert_eq!(parse(args).unwrap_err(), *text, "{args:?}");
        }
    }
}
