//! The HyperLogLog commands (Redis 7.0's `@hyperloglog`, `hyperloglog.c`): PFADD,
//! PFCOUNT (one key, or the union of many without touching them), PFMERGE, and the
//! internal PFDEBUG (GETREG, DECODE, ENCODING, TODENSE; and SIMD from Redis 8.0) and
//! PFSELFTEST.
//!
//! An HLL is a plain string value in Redis's own layout (`types/hyperloglog.rs` draws
//! it), so GET, SETRANGE, DUMP/RESTORE and snapshots see the same bytes as in Redis. A
//! string that is not an HLL answers `WRONGTYPE Key is not a valid HyperLogLog string
//! value.`; one whose sparse registers do not add up answers `INVALIDOBJ Corrupted HLL
//! object detected`; any other type answers the usual WRONGTYPE. Whatever they read, the
//! commands turn an `embstr` value `raw` as Redis's `dbUnshareStringValue` does.
//!
//! Side effects, as Redis 7.0 has them:
//!
//! ```text
//! PFADD creates the key    notify "new" (n)
//! PFADD changed a register notify "pfadd" ($); dirty += registers changed (+1 if created);
//!                          the cached cardinality is marked stale
//! PFMERGE                  notify "new" if it created the destination, then "pfadd" ($)
//!                          (not "pfmerge": Redis calls it a mass add); dirty += 1
//! PFCOUNT key, cache stale the recomputed cardinality is written into the header:
//!                          WATCH sees a change, dirty += 1, no event
//! PFDEBUG GETREG/TODENSE   turning a sparse value dense: dirty += 1 only
//! ```
//!
//! Logged (propagated) forms: every one of them verbatim, when it changed something —
//! PFCOUNT included (it is flagged read-only but rewrites the cached cardinality), and
//! PFDEBUG GETREG/TODENSE when they turned a value dense.

use super::{CommandSpec, Family, flags::*, is, keyflags};
use crate::core::Ctx;
use crate::core::notify::class;
use crate::error::ReplyError;
use crate::types::hyperloglog::{self as hll, HLL_REGISTERS};
use crate::types::{StringValue, Value};
use bytes::Bytes;

/// The family: documented under `hyperloglog`, `@hyperloglog` on every row.
const HLL: Family = Family::new("hyperloglog").categories(&["@hyperloglog"]);

/// A string that is not an HLL (Redis's `isHLLObjectOrReply`).
const NOT_HLL: ReplyError =
    ReplyError::msg("WRONGTYPE Key is not a valid HyperLogLog string value.");
/// An HLL whose sparse registers do not cover 16384 registers.
const INVALID: ReplyError = ReplyError::msg("INVALIDOBJ Corrupted HLL object detected");
/// PFDEBUG on a missing key.
const NO_KEY: ReplyError = ReplyError::msg("ERR The specified key does not exist");
/// PFDEBUG DECODE of a dense value.
const NOT_SPARSE: ReplyError = ReplyError::msg("ERR HLL encoding is not sparse");
/// PFDEBUG SIMD with another argument.
const ON_OR_OFF: ReplyError = ReplyError::msg("ERR Argument must be ON or OFF");

/// This family's rows of the command table (Redis 7.0's `src/commands/pf*.json`).
pub const COMMANDS: &[CommandSpec] = &[
    HLL.keys(1, 1, 1)
        .row(
            "pfadd",
            -2,
            WRITE | DENYOOM | FAST,
            "Adds the specified elements to the specified HyperLogLog.",
            "2.8.9",
            pfadd,
        )
        .with_key_flags(keyflags::RW_INSERT),
    HLL.keys(1, -1, 1)
        .row(
            "pfcount",
            -2,
            READONLY,
            "Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s).",
            "2.8.9",
            pfcount,
        )
        .with_key_flags(&[keyflags::RW | keyflags::ACCESS]),
    HLL.keys(2, 2, 1)
        .row(
            "pfdebug",
            3,
            WRITE | DENYOOM | ADMIN,
            "Internal commands for debugging HyperLogLog values",
            "2.8.9",
            pfdebug,
        )
        .with_key_flags(&[keyflags::RW | keyflags::ACCESS]),
    HLL.keys(1, -1, 1)
        .row(
            "pfmerge",
            -2,
            WRITE | DENYOOM,
            "Merge N different HyperLogLogs into a single one.",
            "2.8.9",
            pfmerge,
        )
        .with_key_flags(&[
            keyflags::RW | keyflags::ACCESS | keyflags::INSERT,
            keyflags::RO | keyflags::ACCESS,
        ]),
    HLL.row(
        "pfselftest",
        1,
        ADMIN,
        "An internal command for testing HyperLogLog values",
        "2.8.9",
        pfselftest,
    ),
];

/// `hll-sparse-max-bytes`: the longest a sparse HLL may grow before it turns dense.
fn sparse_max_bytes(ctx: &Ctx<'_>) -> usize {
    ctx.core.thresholds.hll_sparse_max_bytes
}

/// The HLL string held by `v`, or the error Redis's `isHLLObjectOrReply` answers: the
/// usual WRONGTYPE for another type, its own WRONGTYPE for a string that is not an HLL
/// (too short, no `HYLL` magic, unknown encoding, dense of the wrong length, or an
/// `int`-encoded string, which has no bytes).
fn hll_string(v: &mut Value) -> Result<&mut StringValue, ReplyError> {
    match v {
        Value::String(s) if s.as_slice().is_some_and(hll::is_hll) => Ok(s),
        Value::String(_) => Err(NOT_HLL),
        _ => Err(ReplyError::WrongType),
    }
}

/// The key's value for a write (Redis's `lookupKeyWrite`: lazy expiry, no hit/miss
/// count).
fn write_lookup<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> Option<&'c mut Value> {
    ctx.expire_if_needed(key);
    let db = ctx.client.db;
    ctx.core.dbs[db].keys.get_mut(key)
}

/// Creates `key` holding an empty HLL (Redis's `createHLLObject` + `dbAdd`), with its
/// `new` event.
fn add_empty(ctx: &mut Ctx<'_>, key: &[u8]) {
    let db = ctx.client.db;
    ctx.core.dbs[db].insert(key, Value::String(StringValue::raw(&hll::new_hll())));
    ctx.notify(class::NEW, "new", key);
}

/// Adds every element; the number of registers that changed.
fn add_all(buf: &mut Vec<u8>, elements: &[Bytes], max_bytes: usize) -> Result<u64, hll::Corrupted> {
    let mut changed = 0;
    for e in elements {
        if hll::add(buf, e, max_bytes)? {
            changed += 1;
        }
    }
    Ok(changed)
}

/// PFADD key [element ...]: 1 if the key was created or a register changed, else 0.
fn pfadd(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let max_bytes = sparse_max_bytes(ctx);
    // The cached cardinality goes stale when anything changed (a new key included).
    let add = |buf: &mut Vec<u8>, created: bool| {
        let changed = add_all(buf, &argv[2..], max_bytes)?;
        if changed > 0 || created {
            hll::invalidate_cache(buf);
        }
        Ok::<_, hll::Corrupted>(changed + u64::from(created))
    };
    let updated = match write_lookup(ctx, key) {
        // On a corrupted value the registers changed before the error stay changed,
        // and nothing is signalled, as in Redis.
        Some(v) => hll_string(v)?.with_raw_vec(|buf| add(buf, false)),
        None => {
            let mut buf = hll::new_hll();
            let updated = add(&mut buf, true);
            let db = ctx.client.db;
            ctx.core.dbs[db].insert(key, Value::String(StringValue::raw(&buf)));
            ctx.notify(class::NEW, "new", key);
            updated
        }
    };
    let updated = updated.map_err(|_| INVALID)?;
    if updated > 0 {
        ctx.modified(key);
        ctx.core.dirty += updated - 1;
        ctx.notify(class::STRING, "pfadd", key);
        ctx.propagate(argv);
    }
    ctx.out.integer(i64::from(updated > 0));
    Ok(())
}

/// PFCOUNT key [key ...]: the estimated cardinality of one HLL (from its cache when
/// valid, else computed and cached), or of the union of several (computed on the side,
/// the keys untouched); missing keys count as empty HLLs.
fn pfcount(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    if argv.len() > 2 {
        let mut max = Box::new([0u8; HLL_REGISTERS]);
        for key in &argv[1..] {
            let Some(v) = ctx.lookup_value(key) else {
                continue;
            };
            let s = hll_string(v)?;
            let bytes = s.as_slice().unwrap_or_default();
            hll::merge_into(&mut max, bytes).map_err(|_| INVALID)?;
        }
        let card = hll::count_registers(&max);
        ctx.out.integer(i64::try_from(card).unwrap_or(i64::MAX));
        return Ok(());
    }
    let key = &argv[1];
    let Some(v) = ctx.lookup_value(key) else {
        ctx.out.integer(0);
        return Ok(());
    };
    let s = hll_string(v)?;
    let counted = s.with_raw_vec(|buf| match hll::cached_card(buf) {
        Some(card) => Ok((card, false)),
        None => {
            let card = hll::count(buf)?;
            hll::set_cached_card(buf, card);
            Ok::<_, hll::Corrupted>((card, true))
        }
    });
    let (card, cached_now) = counted.map_err(|_| INVALID)?;
    if cached_now {
        // The value changed (its cache): WATCH, dirty, and the command goes to the log
        // and the replicas so their copies cache the same.
        ctx.modified(key);
        ctx.propagate(argv);
    }
    ctx.out.integer(i64::try_from(card).unwrap_or(i64::MAX));
    Ok(())
}

/// PFMERGE destkey [sourcekey ...]: the destination (a source too) becomes the union
/// of all; dense if any source was.
fn pfmerge(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let max_bytes = sparse_max_bytes(ctx);
    let mut max = Box::new([0u8; HLL_REGISTERS]);
    let mut use_dense = false;
    for key in &argv[1..] {
        let Some(v) = ctx.lookup_value(key) else {
            continue;
        };
        let s = hll_string(v)?;
        let bytes = s.as_slice().unwrap_or_default();
        use_dense |= hll::is_dense(bytes);
        hll::merge_into(&mut max, bytes).map_err(|_| INVALID)?;
    }
    let dest = &argv[1];
    if write_lookup(ctx, dest).is_none() {
        add_empty(ctx, dest);
    }
    let db = ctx.client.db;
    let Some(v) = ctx.core.dbs[db].keys.get_mut(dest) else {
        return Err(INVALID);
    };
    let s = hll_string(v)?;
    let stored = s.with_raw_vec(|buf| {
        if use_dense {
            hll::sparse_to_dense(buf)?;
        }
        hll::store_registers(buf, &max, max_bytes);
        Ok::<_, hll::Corrupted>(())
    });
    stored.map_err(|_| INVALID)?;
    ctx.modified(dest);
    ctx.notify(class::STRING, "pfadd", dest);
    ctx.propagate(argv);
    ctx.out.ok();
    Ok(())
}

/// The C string Redis's `%s` prints: the bytes up to the first NUL.
fn c_str(arg: &[u8]) -> &[u8] {
    arg.split(|&b| b == 0).next().unwrap_or_default()
}

/// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key, PFDEBUG SIMD ON|OFF.
fn pfdebug(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let cmd = &argv[1];
    if is(cmd, "simd") {
        // Redis 8.0: turns its AVX2 paths on or off; ours are the wide dense paths.
        let on = if is(&argv[2], "on") {
            true
        } else if is(&argv[2], "off") {
            false
        } else {
            // (Redis 8 also sends the status reply after this error: one reply here.)
            return Err(ON_OR_OFF);
        };
        let enabled = hll::set_wide_paths(on);
        ctx.out
            .simple(if enabled { b"enabled" } else { b"disabled" });
        return Ok(());
    }
    let key = &argv[2];
    let Some(v) = write_lookup(ctx, key) else {
        return Err(NO_KEY);
    };
    let s = hll_string(v)?;
    if is(cmd, "getreg") || is(cmd, "todense") {
        let converted = s.with_raw_vec(|buf| {
            let sparse = !hll::is_dense(buf);
            hll::sparse_to_dense(buf).map(|()| (sparse, hll::dense_registers(buf)))
        });
        let (converted, regs) = converted.map_err(|_| INVALID)?;
        if converted {
            // Redis forces the propagation of the new encoding (dirty only: no event,
            // no WATCH signal).
            ctx.core.dirty += 1;
            ctx.propagate(argv);
        }
        if is(cmd, "getreg") {
            ctx.out.array(HLL_REGISTERS);
            for r in regs {
                ctx.out.integer(i64::from(r));
            }
        } else {
            ctx.out.integer(i64::from(converted));
        }
    } else if is(cmd, "decode") {
        let decoded = s.with_raw_vec(|buf| (!hll::is_dense(buf)).then(|| hll::decode_sparse(buf)));
        let decoded = decoded.ok_or(NOT_SPARSE)?;
        ctx.out.bulk(decoded.as_bytes());
    } else if is(cmd, "encoding") {
        let dense = s.with_raw_vec(|buf| hll::is_dense(buf));
        ctx.out.simple(if dense { b"dense" } else { b"sparse" });
    } else {
        return Err(ReplyError::owned(format!(
            "ERR Unknown PFDEBUG subcommand '{}'",
            String::from_utf8_lossy(c_str(cmd))
        )));
    }
    Ok(())
}

/// PFSELFTEST: Redis's self test of the register code and the estimator.
fn pfselftest(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let max_bytes = sparse_max_bytes(ctx);
    let seed = ctx.now_ms.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    hll::self_test(max_bytes, seed).map_err(ReplyError::owned)?;
    ctx.out.ok();
    Ok(())
}
