//! The bitmap commands (Redis 7.0's `@bitmap` category, `bitops.c`): SETBIT, GETBIT,
//! BITCOUNT, BITPOS, BITOP, BITFIELD and BITFIELD_RO; with Redis 8.2's BITOP DIFF,
//! DIFF1, ANDOR and ONE.
//!
//! A bitmap is a string ([`StringValue`]); the bit arithmetic lives in
//! `types/string/bits.rs`, which draws the bit order. An `int`-encoded string is read as
//! its decimal text. A write that reaches past the end zero-extends the string, which
//! becomes `raw` (as SETRANGE leaves it); SETBIT and a writing BITFIELD leave an existing
//! string `raw` even when they change nothing (Redis unshares it before looking).
//!
//! Offsets are bits, at most `8 * proto-max-bulk-len - 1` (not checked for the log or
//! a primary's stream, as Redis does not check what it must obey).
//!
//! Side effects, as Redis 7.0 has them:
//!
//! ```text
//! key created (SETBIT, BITFIELD)  notify "new" (n)
//! SETBIT                          notify "setbit" when the key was created or grew, or
//!                                 the bit changed; else nothing (no event, not dirty)
//! BITFIELD                        one "setbit" when a SET/INCRBY wrote (FAIL writes
//!                                 nothing); dirty += number of writes that changed it
//! BITOP, non-empty result         the destination set as SET does (TTL dropped): "set"
//! BITOP, every source empty       the destination deleted: "del" (g), if it existed
//! ```
//!
//! Logged (propagated): each command verbatim when it changed something (BITOP when it
//! stored or deleted); nothing for GETBIT, BITCOUNT, BITPOS, BITFIELD_RO, a BITFIELD of
//! GETs only, or a write that changed nothing.

use super::string::{c_str, read_string, set_key, write_lookup, write_lookup_hashed};
use super::{CommandSpec, Family, flags::*, is, keyflags, parse_i64};
use crate::core::Ctx;
use crate::core::notify::class;
use crate::error::ReplyError;
use crate::types::string::bits::{self, BitOp, FieldType, Overflow};
use crate::types::{StringValue, Value};
use bytes::Bytes;
use std::borrow::Cow;

/// The family of the bitmap commands: the key is the first argument.
const BITMAP_ROWS: Family = Family::new("bitmap").categories(&["@bitmap"]).keys(1, 1, 1);

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    BITMAP_ROWS
        .row(
            "bitcount",
            -2,
            READONLY,
            "Count set bits in a string",
            "2.6.0",
            bitcount,
        )
        .with_key_flags(keyflags::RO_ACCESS),
    BITMAP_ROWS
        .row(
            "bitfield",
            -2,
            WRITE | DENYOOM,
            "Perform arbitrary bitfield integer operations on strings",
            "3.2.0",
            bitfield,
        )
        .with_key_flags(&[keyflags::RW | keyflags::UPDATE | keyflags::ACCESS]),
    BITMAP_ROWS
        .row(
            "bitfield_ro",
            -2,
            READONLY | FAST,
            "Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD",
            "6.0.0",
            bitfield_ro,
        )
        .with_key_flags(keyflags::RO_ACCESS),
    BITMAP_ROWS
        .row(
            "bitop",
            -4,
            WRITE | DENYOOM,
            "Perform bitwise operations between strings",
            "2.6.0",
            bitop,
        )
        .keys(2, -1, 1)
        .with_key_flags(&[
            keyflags::OW | keyflags::UPDATE,
            keyflags::RO | keyflags::ACCESS,
        ]),
    BITMAP_ROWS
        .row(
            "bitpos",
            -3,
            READONLY,
            "Find first bit set or clear in a string",
            "2.8.7",
            bitpos,
        )
        .with_key_flags(keyflags::RO_ACCESS),
    BITMAP_ROWS
        .row(
            "getbit",
            3,
            READONLY | FAST,
            "Returns the bit value at offset in the string value stored at key",
            "2.2.0",
            getbit,
        )
        .with_key_flags(keyflags::RO_ACCESS),
    BITMAP_ROWS
        .row(
            "setbit",
            4,
            WRITE | DENYOOM,
            "Sets or clears the bit at offset in the string value stored at key",
            "2.2.0",
            setbit,
        )
        .with_key_flags(&[keyflags::RW | keyflags::ACCESS | keyflags::UPDATE]),
];

// --- errors (exact Redis texts) --------------------------------------------------------

const BIT_OFFSET: ReplyError = ReplyError::msg("ERR bit offset is not an integer or out of range");
const BIT_VALUE: ReplyError = ReplyError::msg("ERR bit is not an integer or out of range");
const BITPOS_BIT: ReplyError = ReplyError::msg("ERR The bit argument must be 1 or 0.");
const BITOP_NOT_ONE_KEY: ReplyError =
    ReplyError::msg("ERR BITOP NOT must be called with a single source key.");
const FIELD_TYPE: ReplyError = ReplyError::msg(
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.",
);
const OVERFLOW_TYPE: ReplyError = ReplyError::msg("ERR Invalid OVERFLOW type specified");
const BITFIELD_RO_WRITE: ReplyError =
    ReplyError::msg("ERR BITFIELD_RO only supports the GET subcommand");

// --- shared helpers --------------------------------------------------------------------

/// A bit offset argument (Redis's `getBitOffsetFromArgument`): a non-negative integer
/// whose byte is below `proto-max-bulk-len`. With `field_bits` (BITFIELD) the form
/// `#n` means `n * field_bits` (multiplied as Redis's 64-bit arithmetic does).
fn bit_offset(ctx: &Ctx<'_>, arg: &[u8], field_bits: Option<u32>) -> Result<u64, ReplyError> {
    let (digits, times) = match (arg.split_first(), field_bits) {
        (Some((b'#', rest)), Some(bits)) => (rest, i64::from(bits)),
        _ => (arg, 1),
    };
    let n = crate::types::string::string2ll(digits)
        .ok_or(BIT_OFFSET)?
        .wrapping_mul(times);
    let Ok(n) = u64::try_from(n) else {
        return Err(BIT_OFFSET);
    };
    if !ctx.core.replaying() && n >> 3 >= ctx.core.limits.parser.proto_max_bulk_len {
        return Err(BIT_OFFSET);
    }
    Ok(n)
}

/// The byte length a write up to bit `max_bit` needs, or the out-of-memory error where
/// it cannot be addressed on this machine.
fn bytes_for(max_bit: u64) -> Result<usize, ReplyError> {
    usize::try_from(max_bit >> 3)
        .ok()
        .and_then(|b| b.checked_add(1))
        .ok_or(BIT_OFFSET)
}

/// A `BYTE|BIT` unit word: true for BIT.
fn index_unit(arg: &[u8]) -> Result<bool, ReplyError> {
    let word = c_str(arg);
    if is(word, "bit") {
        Ok(true)
    } else if is(word, "byte") {
        Ok(false)
    } else {
        Err(ReplyError::Syntax)
    }
}

/// The inclusive bit range `start..=end` (in `unit` bits or bytes, negative from the
/// end) of a string of `len` bytes, clamped as Redis clamps it; `None` when empty.
fn clamp_range(len: usize, mut start: i64, mut end: i64, in_bits: bool) -> Option<(u64, u64)> {
    let mut total = i64::try_from(len).unwrap_or(i64::MAX >> 3);
    if in_bits {
        total <<= 3;
    }
    if start < 0 {
        start += total;
    }
    if end < 0 {
        end += total;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= total {
        end = total - 1;
    }
    if start > end {
        return None;
    }
    // 0 <= start <= end < total here.
    let (start, end) = (start as u64, end as u64);
    Some(if in_bits {
        (start, end)
    } else {
        (start * 8, end * 8 + 7)
    })
}

/// Adds a new string at `key` (Redis's `dbAdd`): the `new` event. WATCH and the dirty
/// counter wait for the write (a BITFIELD that only failed to write counts neither).
fn add_bitmap(ctx: &mut Ctx<'_>, key: &[u8], value: StringValue) {
    let db = ctx.client.db;
    ctx.core.dbs[db].insert(key, Value::String(value));
    ctx.notify(class::NEW, "new", key);
}

/// A write changed the bitmap at `key` `changes` times: WATCH, dirty, the `setbit`
/// event, and the command logged verbatim.
fn bits_written(ctx: &mut Ctx<'_>, key: &[u8], changes: u64) {
    ctx.modified(key);
    ctx.core.dirty += changes.saturating_sub(1);
    ctx.notify(class::STRING, "setbit", key);
    let argv = ctx.argv;
    ctx.propagate(argv);
}

// --- SETBIT, GETBIT --------------------------------------------------------------------

/// SETBIT key offset 0|1: the bit's old value; the string grows to reach the bit.
fn setbit(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let offset = bit_offset(ctx, &argv[2], None)?;
    let on = parse_i64(&argv[3]).map_err(|_| BIT_VALUE)?;
    if on & !1 != 0 {
        return Err(BIT_VALUE);
    }
    let on = on == 1;
    let len = bytes_for(offset)?;
    let (old, dirty) = match write_lookup(ctx, key) {
        Some(Value::String(s)) => {
            let (bytes, grew) = s.bits_mut(len);
            (bits::set_bit(bytes, offset, on), grew)
        }
        Some(_) => return Err(ReplyError::WrongType),
        None => {
            let mut value = StringValue::zeroed_with(len, b"");
            let (bytes, _) = value.bits_mut(len);
            bits::set_bit(bytes, offset, on);
            add_bitmap(ctx, key, value);
            (false, true)
        }
    };
    if dirty || old != on {
        bits_written(ctx, key, 1);
    }
    ctx.out.integer(i64::from(old));
    Ok(())
}

/// GETBIT key offset: the bit, 0 past the end or for a missing key.
fn getbit(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let offset = bit_offset(ctx, &argv[2], None)?;
    let (found, out) = read_string(ctx, &argv[1]);
    let bit = found?.is_some_and(|s| s.with_bytes(|b| bits::get_bit(b, offset)));
    out.integer(i64::from(bit));
    Ok(())
}

// --- BITCOUNT, BITPOS ------------------------------------------------------------------

/// BITCOUNT key [start end [BYTE|BIT]]: set bits in the range (the whole string by
/// default), 0 for a missing key. The key is looked up before the range is read, so a
/// missing key answers 0 whatever follows it.
fn bitcount(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (found, out) = read_string(ctx, &argv[1]);
    let Some(s) = found? else {
        out.integer(0);
        return Ok(());
    };
    let range = match argv.len() {
        2 => None,
        4 | 5 => {
            let start = parse_i64(&argv[2])?;
            let end = parse_i64(&argv[3])?;
            if start < 0 && end < 0 && start > end {
                out.integer(0);
                return Ok(());
            }
            let in_bits = match argv.get(4) {
                Some(unit) => index_unit(unit)?,
                None => false,
            };
            Some((start, end, in_bits))
        }
        _ => return Err(ReplyError::Syntax),
    };
    let n = s.with_bytes(|bytes| {
        let (start, end, in_bits) = range.unwrap_or((0, -1, false));
        clamp_range(bytes.len(), start, end, in_bits)
            .map_or(0, |(from, to)| bits::count_ones(bytes, from, to))
    });
    out.integer(i64::try_from(n).unwrap_or(i64::MAX));
    Ok(())
}

/// BITPOS key 0|1 [start [end [BYTE|BIT]]]: the first bit equal to the argument in the
/// range, or -1. A missing key is all zeros (0 for a clear bit, -1 for a set one); with
/// no end given, a string of set bits has its first clear bit right after its end.
fn bitpos(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let bit = parse_i64(&argv[2])?;
    if bit != 0 && bit != 1 {
        return Err(BITPOS_BIT);
    }
    let bit = bit == 1;
    let (found, out) = read_string(ctx, &argv[1]);
    let Some(s) = found? else {
        out.integer(if bit { -1 } else { 0 });
        return Ok(());
    };
    let (start, end, in_bits) = match argv.len() {
        3 => (0, None, false),
        4..=6 => {
            let start = parse_i64(&argv[3])?;
            let in_bits = match argv.get(5) {
                Some(unit) => index_unit(unit)?,
                None => false,
            };
            let end = match argv.get(4) {
                Some(end) => Some(parse_i64(end)?),
                None => None,
            };
            (start, end, in_bits)
        }
        _ => return Err(ReplyError::Syntax),
    };
    let pos = s.with_bytes(|bytes| {
        // Without an end the range runs to the string's end (-1 is the last unit).
        let range = clamp_range(bytes.len(), start, end.unwrap_or(-1), in_bits);
        let Some((from, to)) = range else {
            return -1;
        };
        match bits::first_bit(bytes, bit, from, to) {
            Some(p) => i64::try_from(p).unwrap_or(i64::MAX),
            None if bit || end.is_some() => -1,
            None => i64::try_from(bytes.len() as u64 * 8).unwrap_or(i64::MAX),
        }
    });
    out.integer(pos);
    Ok(())
}

// --- BITOP -----------------------------------------------------------------------------

impl BitOp {
    /// The operation a client names, in any case (compared as a C string, as Redis's
    /// `strcasecmp` does).
    fn parse(word: &[u8]) -> Option<BitOp> {
        let word = c_str(word);
        [
            ("and", BitOp::And),
            ("or", BitOp::Or),
            ("xor", BitOp::Xor),
            ("not", BitOp::Not),
            ("diff", BitOp::Diff),
            ("diff1", BitOp::Diff1),
            ("andor", BitOp::AndOr),
            ("one", BitOp::One),
        ]
        .into_iter()
        .find_map(|(name, op)| is(word, name).then_some(op))
    }
}

/// BITOP AND|OR|XOR|NOT|DIFF|DIFF1|ANDOR|ONE destkey key [key ...]: stores the result
/// (as long as the longest source; missing sources are empty) and answers its length;
/// when every source is empty the destination is deleted instead.
fn bitop(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let op = BitOp::parse(&argv[1]).ok_or(ReplyError::Syntax)?;
    if op == BitOp::Not && argv.len() != 4 {
        return Err(BITOP_NOT_ONE_KEY);
    }
    let two_sources = match op {
        BitOp::Diff => "DIFF",
        BitOp::Diff1 => "DIFF1",
        BitOp::AndOr => "ANDOR",
        _ => "",
    };
    if !two_sources.is_empty() && argv.len() < 5 {
        return Err(ReplyError::owned(format!(
            "ERR BITOP {two_sources} must be called with at least two source keys."
        )));
    }
    let dest = &argv[2];
    let sources = &argv[3..];
    // First every lookup (lazy expiry, hit/miss stats, the type check), as Redis does
    // them in order; then the values, borrowed together.
    for key in sources {
        match ctx.lookup_value(key) {
            None | Some(Value::String(_)) => {}
            Some(_) => return Err(ReplyError::WrongType),
        }
    }
    let result = {
        let db = &ctx.core.dbs[ctx.client.db];
        let values: Vec<Cow<'_, [u8]>> = sources
            .iter()
            .map(|k| match db.get(k) {
                Some(Value::String(s)) => s.to_bytes(),
                _ => Cow::Borrowed(&[][..]),
            })
            .collect();
        let refs: Vec<&[u8]> = values.iter().map(|v| &**v).collect();
        bits::bitop(op, &refs)
    };
    let len = result.len();
    if len > 0 {
        ctx.expire_if_needed(dest);
        set_key(ctx, dest, StringValue::raw_from_vec(result), false);
        ctx.notify(class::STRING, "set", dest);
        ctx.propagate(argv);
    } else if ctx.delete_key(dest) {
        ctx.core.dirty += 1;
        ctx.propagate(argv);
    }
    ctx.out.integer(i64::try_from(len).unwrap_or(i64::MAX));
    Ok(())
}

// --- BITFIELD, BITFIELD_RO -------------------------------------------------------------

/// What one BITFIELD operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FieldOpKind {
    /// GET type offset.
    Get,
    /// SET type offset value: answers the old value.
    Set(i64),
    /// INCRBY type offset increment: answers the new value.
    IncrBy(i64),
}

/// One parsed BITFIELD operation, with the OVERFLOW policy in force where it stands.
#[derive(Debug, Clone, Copy)]
struct FieldOp {
    /// GET, SET or INCRBY with its argument.
    kind: FieldOpKind,
    /// The integer type.
    ty: FieldType,
    /// Bit offset of the field's most significant bit.
    offset: u64,
    /// The overflow policy of the last OVERFLOW before the operation (WRAP if none).
    overflow: Overflow,
}

/// BITFIELD's arguments, parsed before anything is looked up (Redis's
/// `bitfieldGeneric` first loop: every error, in argument order).
struct BitField {
    /// The operations in order.
    ops: Vec<FieldOp>,
    /// The highest bit a SET or INCRBY reaches; `None` when there are only GETs.
    highest_write: Option<u64>,
}

impl BitField {
    fn parse(ctx: &Ctx<'_>, argv: &[Bytes]) -> Result<BitField, ReplyError> {
        // At most one operation per three arguments: one allocation.
        let mut ops = Vec::with_capacity(argv.len().saturating_sub(2) / 3);
        let mut highest_write: Option<u64> = None;
        let mut overflow = Overflow::Wrap;
        let mut j = 2;
        while j < argv.len() {
            let remaining = argv.len() - j - 1;
            let sub = c_str(&argv[j]);
            let kind_of = |v: i64| {
                if is(sub, "set") {
                    FieldOpKind::Set(v)
                } else {
                    FieldOpKind::IncrBy(v)
                }
            };
            let writes = if is(sub, "get") && remaining >= 2 {
                false
            } else if (is(sub, "set") || is(sub, "incrby")) && remaining >= 3 {
                true
            } else if is(sub, "overflow") && remaining >= 1 {
                let policy = c_str(&argv[j + 1]);
                overflow = if is(policy, "wrap") {
                    Overflow::Wrap
                } else if is(policy, "sat") {
                    Overflow::Sat
                } else if is(policy, "fail") {
                    Overflow::Fail
                } else {
                    return Err(OVERFLOW_TYPE);
                };
                j += 2;
                continue;
            } else {
                return Err(ReplyError::Syntax);
            };
            let Some(ty) = FieldType::parse(c_str(&argv[j + 1])) else {
                return Err(FIELD_TYPE);
            };
            let offset = bit_offset(ctx, &argv[j + 2], Some(ty.bits))?;
            let kind = if writes {
                let last = offset + u64::from(ty.bits) - 1;
                highest_write = Some(highest_write.map_or(last, |h| h.max(last)));
                kind_of(parse_i64(&argv[j + 3])?)
            } else {
                FieldOpKind::Get
            };
            ops.push(FieldOp {
                kind,
                ty,
                offset,
                overflow,
            });
            j += if writes { 4 } else { 3 };
        }
        Ok(BitField { ops, highest_write })
    }
}

/// BITFIELD key [GET type offset | [OVERFLOW WRAP|SAT|FAIL] SET type offset value |
/// INCRBY type offset increment]...: one reply per GET/SET/INCRBY.
fn bitfield(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    bitfield_generic(ctx, false)
}

/// BITFIELD_RO key [GET type offset]...: BITFIELD's GETs on a read-only path.
fn bitfield_ro(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    bitfield_generic(ctx, true)
}

/// Redis's `bitfieldGeneric`: parse everything, then read (GETs only) or write.
fn bitfield_generic(ctx: &mut Ctx<'_>, read_only: bool) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let parsed = BitField::parse(ctx, argv)?;
    let Some(highest) = parsed.highest_write else {
        let (found, out) = read_string(ctx, key);
        let found = found?;
        out.array(parsed.ops.len());
        let mut get_all = |bytes: &[u8]| {
            for op in &parsed.ops {
                out.integer(op.ty.get(bytes, op.offset));
            }
        };
        match found {
            Some(s) => s.with_bytes(get_all),
            None => get_all(&[]),
        }
        return Ok(());
    };
    if read_only {
        return Err(BITFIELD_RO_WRITE);
    }
    let len = bytes_for(highest)?;
    // One hash for both lookups (the second finds the key the first found or made).
    let hash = ctx.db().hash_key(key);
    let created = match write_lookup_hashed(ctx, hash, key) {
        Some(Value::String(_)) => false,
        Some(_) => return Err(ReplyError::WrongType),
        None => {
            add_bitmap(ctx, key, StringValue::zeroed_with(len, b""));
            true
        }
    };
    let db = ctx.client.db;
    let Some(Value::String(s)) = ctx.core.dbs[db].get_mut_hashed(hash, key) else {
        // Not reached: the key holds a string since the lookup above.
        return Ok(());
    };
    let (bytes, grew) = s.bits_mut(len);
    let dirty = created || grew;
    let out = &mut *ctx.out;
    out.array(parsed.ops.len());
    let mut changes = 0u64;
    for op in &parsed.ops {
        let old = op.ty.get(bytes, op.offset);
        let (stored, answer_new) = match op.kind {
            FieldOpKind::Get => {
                out.integer(old);
                continue;
            }
            FieldOpKind::Set(v) => (op.ty.set(v, op.overflow), false),
            FieldOpKind::IncrBy(by) => (op.ty.incr(old, by, op.overflow), true),
        };
        match stored {
            Some(new) => {
                out.integer(if answer_new { new } else { old });
                bits::set_field(bytes, op.offset, op.ty.bits, new as u64);
                if dirty || old != new {
                    changes += 1;
                }
            }
            None => out.null(),
        }
    }
    if changes > 0 {
        bits_written(ctx, key, changes);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::test_argv;

    #[test]
    fn ranges_clamp_as_redis() {
        assert_eq!(clamp_range(3, 0, -1, false), Some((0, 23)));
        assert_eq!(clamp_range(3, -100, 100, false), Some((0, 23)));
        assert_eq!(clamp_range(3, 2, 1, false), None);
        assert_eq!(clamp_range(3, 5, -1, true), Some((5, 23)));
        assert_eq!(clamp_range(3, -3, -2, true), Some((21, 22)));
        assert_eq!(clamp_range(0, 0, -1, false), None);
        assert_eq!(clamp_range(2, i64::MIN, i64::MAX, true), Some((0, 15)));
    }

    #[test]
    fn bitop_names_any_case() {
        assert_eq!(BitOp::parse(b"aNdOr"), Some(BitOp::AndOr));
        assert_eq!(BitOp::parse(b"diff1"), Some(BitOp::Diff1));
        assert_eq!(BitOp::parse(b"not\0x"), Some(BitOp::Not));
        assert_eq!(BitOp::parse(b"nand"), None);
    }

    #[test]
    fn bitfield_key_flags_follow_the_arguments() {
        use crate::core::command::bitfield_reads_only;
        assert!(bitfield_reads_only(&test_argv(
            "BITFIELD k GET u8 0 OVERFLOW SAT"
        )));
        assert!(bitfield_reads_only(&test_argv("BITFIELD k")));
        assert!(!bitfield_reads_only(&test_argv(
            "BITFIELD k GET u8 0 SET u8 0 1"
        )));
        assert!(!bitfield_reads_only(&test_argv("BITFIELD k GET u8")));
    }
}
