//! The list family (Redis 7.0's `@list` category minus SORT, which is `sort.rs`):
//! LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LINDEX LSET LINSERT LRANGE LREM LTRIM LPOS
//! LMOVE RPOPLPUSH LMPOP, Redis 8.10's LMOVEM, and the blocking BLPOP BRPOP BLMOVE
//! BRPOPLPUSH BLMPOP BLMOVEM.
//!
//! Replies are Redis 7.0's, RESP2 and RESP3 alike (lists reply arrays in both):
//!
//! ```text
//! LPOP k        $elem | null                    LPOP k n     *n elems | null array (no key)
//!                                                             *0 (n = 0 on an existing key)
//! BLPOP k.. t   *2 $key $elem | null array      LMPOP ...    *2 $key *n elems | null array
//! BLMOVE ...    $elem | null array on timeout, null bulk when it cannot block (MULTI)
//! ```
//!
//! Blocking follows Redis 7.0: a client blocks only when every key is missing (a key of
//! another type is WRONGTYPE at once). When one of its keys is signalled ready the core
//! re-executes the command with [`Core::reprocess_key`](crate::core::Core) naming that
//! key, and the command then serves from that key only, as Redis 7.0's
//! `serveClientsBlockedOnListKey` does; a key that is not a list counts as empty then,
//! so a key turned into a string neither wakes nor answers the client. Served pops are
//! propagated as LPOP/RPOP (LPOP/RPOP with the count for BLMPOP and LMPOP, as 7.0
//! rewrites them) and BLMOVE/BRPOPLPUSH as LMOVE/RPOPLPUSH.

use super::{CommandSpec, Family, flags::*, is, keyflags};
use crate::core::Ctx;
use crate::core::notify::class;
use crate::error::ReplyError;
use crate::types::Value;
use crate::types::list::{List, Needle};
use bytes::Bytes;

const LIST: &[&str] = &["@list"];
const RW_ACCESS_DELETE: &[u32] = &[keyflags::RW | keyflags::ACCESS | keyflags::DELETE];
const RO_ACCESS: &[u32] = &[keyflags::RO | keyflags::ACCESS];
const MOVE_KEYS: &[u32] = &[
    keyflags::RW | keyflags::ACCESS | keyflags::DELETE,
    keyflags::RW | keyflags::INSERT,
];

/// The family of the list commands.
const LIST_ROWS: Family = Family::new("list").categories(LIST);

const PUSH_KEYS: &[u32] = keyflags::RW_INSERT;

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    LIST_ROWS.row("blmove", 6, WRITE | DENYOOM | NOSCRIPT | BLOCKING, "Pop an element from a list, push it to another list and return it; or block until one is available", "6.2.0", blmove).keys(1, 2, 1).with_key_flags(MOVE_KEYS),
    CommandSpec {
        first_key: 0,
        last_key: 0,
        key_step: 0,
        ..LIST_ROWS.row("blmpop", -5, WRITE | BLOCKING | MOVABLEKEYS, "Pop elements from a list, or block until one is available", "7.0.0", blmpop).keys(0, 0, 1).with_key_flags(RW_ACCESS_DELETE)
    },
    LIST_ROWS.row("blpop", -3, WRITE | NOSCRIPT | BLOCKING, "Remove and get the first element in a list, or block until one is available", "2.0.0", blpop).keys(1, -2, 1).with_key_flags(RW_ACCESS_DELETE),
    LIST_ROWS.row("blmovem", -6, WRITE | DENYOOM | BLOCKING, "Moves up to (or exactly) a number of elements from one list to another and returns them. Blocks until the elements are available otherwise. Deletes the source list if it becomes empty.", "8.10.0", blmovem).keys(1, 2, 1).with_key_flags(MOVE_KEYS),
    LIST_ROWS.row("brpop", -3, WRITE | NOSCRIPT | BLOCKING, "Remove and get the last element in a list, or block until one is available", "2.0.0", brpop).keys(1, -2, 1).with_key_flags(RW_ACCESS_DELETE),
    LIST_ROWS.row("brpoplpush", 4, WRITE | DENYOOM | NOSCRIPT | BLOCKING, "Pop an element from a list, push it to another list and return it; or block until one is available", "2.2.0", brpoplpush).keys(1, 2, 1).with_key_flags(MOVE_KEYS),
    LIST_ROWS.row("lindex", 3, READONLY, "Get an element from a list by its index", "1.0.0", lindex).keys(1, 1, 1).with_key_flags(RO_ACCESS),
    LIST_ROWS.row("linsert", 5, WRITE | DENYOOM, "Insert an element before or after another element in a list", "2.2.0", linsert).keys(1, 1, 1).with_key_flags(keyflags::RW_INSERT),
    LIST_ROWS.row("llen", 2, READONLY | FAST, "Get the length of a list", "1.0.0", llen).keys(1, 1, 1).with_key_flags(keyflags::RO_ONLY),
    LIST_ROWS.row("lmove", 5, WRITE | DENYOOM, "Pop an element from a list, push it to another list and return it", "6.2.0", lmove).keys(1, 2, 1).with_key_flags(MOVE_KEYS),
    LIST_ROWS.row("lmovem", -5, WRITE | DENYOOM, "Moves up to (or exactly) a number of elements from one list to another and returns them. Deletes the source list if it becomes empty.", "8.10.0", lmovem).keys(1, 2, 1).with_key_flags(MOVE_KEYS),
    CommandSpec {
        first_key: 0,
        last_key: 0,
        key_step: 0,
        ..LIST_ROWS.row("lmpop", -4, WRITE | MOVABLEKEYS, "Pop elements from a list", "7.0.0", lmpop).keys(0, 0, 1).with_key_flags(RW_ACCESS_DELETE)
    },
    LIST_ROWS.row("lpop", -2, WRITE | FAST, "Remove and get the first elements in a list", "1.0.0", lpop).keys(1, 1, 1).with_key_flags(RW_ACCESS_DELETE),
    LIST_ROWS.row("lpos", -3, READONLY, "Return the index of matching elements on a list", "6.0.6", lpos).keys(1, 1, 1).with_key_flags(RO_ACCESS),
    LIST_ROWS.row("lpush", -3, WRITE | DENYOOM | FAST, "Prepend one or multiple elements to a list", "1.0.0", lpush).keys(1, 1, 1).with_key_flags(PUSH_KEYS),
    LIST_ROWS.row("lpushx", -3, WRITE | DENYOOM | FAST, "Prepend an element to a list, only if the list exists", "2.2.0", lpushx).keys(1, 1, 1).with_key_flags(PUSH_KEYS),
    LIST_ROWS.row("lrange", 4, READONLY, "Get a range of elements from a list", "1.0.0", lrange).keys(1, 1, 1).with_key_flags(RO_ACCESS),
    LIST_ROWS.row("lrem", 4, WRITE, "Remove elements from a list", "1.0.0", lrem).keys(1, 1, 1).with_key_flags(keyflags::RW_DELETE),
    LIST_ROWS.row("lset", 4, WRITE | DENYOOM, "Set the value of an element in a list by its index", "1.0.0", lset).keys(1, 1, 1).with_key_flags(keyflags::RW_UPDATE),
    LIST_ROWS.row("ltrim", 4, WRITE, "Trim a list to the specified range", "1.0.0", ltrim).keys(1, 1, 1).with_key_flags(keyflags::RW_DELETE),
    LIST_ROWS.row("rpop", -2, WRITE | FAST, "Remove and get the last elements in a list", "1.0.0", rpop).keys(1, 1, 1).with_key_flags(RW_ACCESS_DELETE),
    LIST_ROWS.row("rpoplpush", 3, WRITE | DENYOOM, "Remove the last element in a list, prepend it to another list and return it", "1.2.0", rpoplpush).keys(1, 2, 1).with_key_flags(MOVE_KEYS),
    LIST_ROWS.row("rpush", -3, WRITE | DENYOOM | FAST, "Append one or multiple elements to a list", "1.0.0", rpush).keys(1, 1, 1).with_key_flags(PUSH_KEYS),
    LIST_ROWS.row("rpushx", -3, WRITE | DENYOOM | FAST, "Append an element to a list, only if the list exists", "2.2.0", rpushx).keys(1, 1, 1).with_key_flags(PUSH_KEYS),
];

/// Which end of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The head (`LEFT`, LPOP, LPUSH).
    Left,
    /// The tail (`RIGHT`, RPOP, RPUSH).
    Right,
}

impl End {
    /// `LEFT` / `RIGHT` (case-insensitive), else `ERR syntax error`.
    fn parse(arg: &[u8]) -> Result<End, ReplyError> {
        if is(arg, "left") {
            Ok(End::Left)
        } else if is(arg, "right") {
            Ok(End::Right)
        } else {
            Err(ReplyError::Syntax)
        }
    }

    fn pop_event(self) -> &'static str {
        match self {
            End::Left => "lpop",
            End::Right => "rpop",
        }
    }

    fn push_event(self) -> &'static str {
        match self {
            End::Left => "lpush",
            End::Right => "rpush",
        }
    }

    fn pop_name(self) -> &'static [u8] {
        match self {
            End::Left => b"LPOP",
            End::Right => b"RPOP",
        }
    }
}

/// A strict `long` argument (`ERR value is not an integer or out of range`).
fn parse_long(arg: &[u8]) -> Result<i64, ReplyError> {
    super::parse_i64(arg)
}

/// Redis's `getRangeLongFromObjectOrReply` with a message: `msg` both when the argument
/// is not an integer and when it is outside `min..=max`.
fn parse_range(arg: &[u8], min: i64, msg: &'static str) -> Result<i64, ReplyError> {
    match crate::stream::id::string2ll(arg) {
        Some(v) if v >= min => Ok(v),
        _ => Err(ReplyError::msg(msg)),
    }
}

/// A positive count (`getPositiveLongFromObjectOrReply` without a message).
fn parse_positive(arg: &[u8]) -> Result<i64, ReplyError> {
    parse_range(arg, 0, "ERR value is out of range, must be positive")
}

/// A blocking timeout in seconds (a float, as Redis's `getTimeoutFromObjectOrReply`
/// with `UNIT_SECONDS` since 7.2): milliseconds, rounded up; 0 waits forever. The text is
/// read as `strtold` reads it (decimal, hexadecimal such as `0x1p3`, `inf`); more
/// milliseconds than a 64-bit deadline holds is `timeout is out of range` (7.0 said
/// `negative`).
pub fn parse_timeout_secs(arg: &[u8]) -> Result<u64, ReplyError> {
    const NOT_FLOAT: ReplyError = ReplyError::msg("ERR timeout is not a float or out of range");
    const NEGATIVE: ReplyError = ReplyError::msg("ERR timeout is negative");
    const OUT_OF_RANGE: ReplyError = ReplyError::msg("ERR timeout is out of range");
    let text = std::str::from_utf8(arg).map_err(|_| NOT_FLOAT)?;
    if text.is_empty()
        || text.len() >= 5 * 1024
        || text.starts_with(|c: char| c.is_ascii_whitespace())
    {
        return Err(NOT_FLOAT);
    }
    let lower = text.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    // strtold's words are inf/infinity/nan only; Rust's parser agrees on those.
    if body.starts_with("nan") {
        return Err(NOT_FLOAT);
    }
    let v: f64 = match body.strip_prefix("0x") {
        Some(hex) => {
            let v = parse_hex_float(hex).ok_or(NOT_FLOAT)?;
            if lower.starts_with('-') { -v } else { v }
        }
        None => text.parse().map_err(|_| NOT_FLOAT)?,
    };
    // A literal infinity is a value; a finite text past the range is strtold's ERANGE.
    if v.is_infinite() && !(body == "inf" || body == "infinity") {
        return Err(NOT_FLOAT);
    }
    let ms = v * 1000.0;
    if ms > i64::MAX as f64 {
        return Err(OUT_OF_RANGE);
    }
    // (long long) of -inf is LLONG_MIN: negative.
    let ms = ms.ceil();
    if ms.is_nan() || ms < 0.0 {
        return Err(NEGATIVE);
    }
    let ms = ms as u64;
    // The deadline, now + ms, must fit too.
    if ms > i64::MAX as u64 - crate::core::unix_ms() {
        return Err(OUT_OF_RANGE);
    }
    Ok(ms)
}

/// The value of a hexadecimal floating-point text after its `0x` (`1f`, `.8`, `1.8p3`),
/// as `strtold` reads it; `None` when it is not one in full.
fn parse_hex_float(hex: &str) -> Option<f64> {
    let (mantissa, exponent) = match hex.split_once('p') {
        Some((m, e)) => (m, Some(e)),
        None => (hex, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut v = 0f64;
    for c in int.chars() {
        v = v * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut scale = 1.0 / 16.0;
    for c in frac.chars() {
        v += f64::from(c.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    if let Some(e) = exponent {
        let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let e: i32 = e.parse().unwrap_or(if e.starts_with('-') {
            i32::MIN
        } else {
            i32::MAX
        });
        v *= 2f64.powi(e.clamp(-100_000, 100_000));
    }
    Some(v)
}

/// The list at `key`, `WRONGTYPE` for another type. While a blocked command is
/// re-executed a non-list counts as missing (Redis 7.0 does not serve from it).
fn get_list<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> Result<Option<&'c mut List>, ReplyError> {
    let reprocessing = ctx.core.reprocessing.is_some();
    match ctx.lookup_value(key) {
        None => Ok(None),
        Some(Value::List(l)) => Ok(Some(l)),
        Some(_) if reprocessing => Ok(None),
        Some(_) => Err(ReplyError::WrongType),
    }
}

/// The list at `key` for a write: `WRONGTYPE` for another type, also while
/// re-executing (the destination of BLMOVE: Redis 7.0 answers the error).
fn get_list_strict<'c>(
    ctx: &'c mut Ctx<'_>,
    key: &[u8],
) -> Result<Option<&'c mut List>, ReplyError> {
    match ctx.lookup_value(key) {
        None => Ok(None),
        Some(Value::List(l)) => Ok(Some(l)),
        Some(_) => Err(ReplyError::WrongType),
    }
}

/// Creates an empty list at `key` (Redis's `dbAdd`: the key is signalled ready for
/// blocked clients and the `new` event fires).
fn create(ctx: &mut Ctx<'_>, key: &[u8]) {
    let list = List::with_thresholds(&ctx.core.thresholds);
    ctx.db().insert(key, Value::List(Box::new(list)));
    ctx.signal_ready(key);
    ctx.notify(class::NEW, "new", key);
}

/// LPUSH/RPUSH/LPUSHX/RPUSHX: one lookup when the list exists.
fn push_generic(ctx: &mut Ctx<'_>, end: End, only_existing: bool) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let th = ctx.core.thresholds;
    let push_all = |l: &mut List| {
        let bytes = argv[2..].iter().map(|e| e.len()).sum();
        l.prepare_push(bytes, argv.len() - 2);
        for e in &argv[2..] {
            match end {
                End::Left => l.push_front(e, &th),
                End::Right => l.push_back(e, &th),
            }
        }
        l.len()
    };
    let len = match ctx.lookup_value(key) {
        Some(Value::List(l)) => {
            let len = push_all(l);
            // A list that grew wakes BLMOVEM EXACTLY waiting for enough elements
            // (Redis 8.10's `signalKeyAsReadyNonEmptyList`).
            ctx.signal_ready(key);
            len
        }
        Some(_) => return Err(ReplyError::WrongType),
        None if only_existing => {
            ctx.out.integer(0);
            return Ok(());
        }
        None => {
            let mut l = List::with_thresholds(&th);
            let len = push_all(&mut l);
            ctx.db().insert(key, Value::List(Box::new(l)));
            ctx.signal_ready(key);
            ctx.notify(class::NEW, "new", key);
            len
        }
    };
    ctx.out.integer(len as i64);
    ctx.core.dirty += argv.len() as u64 - 3;
    ctx.collection_written(class::LIST, end.push_event(), key, false, argv);
    Ok(())
}

fn lpush(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    push_generic(ctx, End::Left, false)
}

fn rpush(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    push_generic(ctx, End::Right, false)
}

fn lpushx(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    push_generic(ctx, End::Left, true)
}

fn rpushx(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    push_generic(ctx, End::Right, true)
}

/// Pops up to `count` elements from `end` of the list at `key` (which exists and is
/// a list), writing them as an array; with `with_key`, as `[key, [elems]]`. Then the
/// events, deletion of an emptied key, WATCH and dirty. Returns how many.
fn pop_range_reply(ctx: &mut Ctx<'_>, key: &[u8], end: End, count: usize, with_key: bool) -> usize {
    let idx = ctx.client.db;
    let core = &mut *ctx.core;
    let out = &mut *ctx.out;
    let Some(Value::List(l)) = core.dbs[idx].get_mut(key) else {
        return 0;
    };
    let n = count.min(l.len());
    if with_key {
        out.array(2);
        out.bulk(key);
    }
    out.array(n);
    for _ in 0..n {
        match end {
            End::Left => l.pop_front_with(|b| out.bulk(b)),
            End::Right => l.pop_back_with(|b| out.bulk(b)),
        };
    }
    popped(ctx, key, end, n);
    n
}

/// The side effects of `n` elements popped from `end` of `key`.
fn popped(ctx: &mut Ctx<'_>, key: &[u8], end: End, n: usize) {
    let emptied = is_emptied(ctx, key);
    popped_known(ctx, key, end, emptied);
    ctx.core.dirty += (n as u64).saturating_sub(1);
}

/// [`popped`] when the caller knows whether the list became empty.
fn popped_known(ctx: &mut Ctx<'_>, key: &[u8], end: End, emptied: bool) {
    ctx.collection_changed(class::LIST, end.pop_event(), key, emptied);
}

/// True if the list at `key` is empty (a write just took its last element).
fn is_emptied(ctx: &mut Ctx<'_>, key: &[u8]) -> bool {
    matches!(ctx.db().get(key), Some(Value::List(l)) if l.is_empty())
}

/// LPOP/RPOP key [count].
fn pop_generic(ctx: &mut Ctx<'_>, end: End) -> Result<(), ReplyError> {
    if ctx.argv.len() > 3 {
        return Err(ReplyError::arity(ctx.arg(0)));
    }
    let count = match ctx.argv.get(2) {
        Some(a) => Some(parse_positive(a)?),
        None => None,
    };
    let argv = ctx.argv;
    let key = &argv[1];
    if count.is_none() {
        // The hot path: one lookup, the element written straight from the node.
        let hash = ctx.db().hash_key(key);
        let (found, out) = ctx.lookup_value_hashed_with_out(hash, key);
        let emptied = match found {
            None => {
                out.null();
                return Ok(());
            }
            Some(Value::List(list)) => {
                match end {
                    End::Left => list.pop_front_with(|b| out.bulk(b)),
                    End::Right => list.pop_back_with(|b| out.bulk(b)),
                };
                list.is_empty()
            }
            Some(_) => return Err(ReplyError::WrongType),
        };
        popped_known(ctx, key, end, emptied);
        ctx.propagate(argv);
        return Ok(());
    }
    let key = key.clone();
    if get_list(ctx, &key)?.is_none() {
        ctx.out.null_array();
        return Ok(());
    }
    match count {
        None => {}
        Some(0) => {
            ctx.out.array(0);
            return Ok(());
        }
        Some(n) => {
            pop_range_reply(ctx, &key, end, n as usize, false);
        }
    }
    ctx.propagate(ctx.argv);
    Ok(())
}

fn lpop(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    pop_generic(ctx, End::Left)
}

fn rpop(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    pop_generic(ctx, End::Right)
}

fn llen(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let key = ctx.arg(1).clone();
    let n = get_list_strict(ctx, &key)?.map_or(0, |l| l.len());
    ctx.out.integer(n as i64);
    Ok(())
}

/// `index` (negative from the tail) as a position in a list of `len`, if in range.
fn normalize(index: i64, len: usize) -> Option<usize> {
    let len = len as i64;
    let i = if index < 0 {
        len.checked_add(index)?
    } else {
        index
    };
    (0..len).contains(&i).then_some(i as usize)
}

fn lindex(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = ctx.arg(1).clone();
    let hash = ctx.db().hash_key(&key);
    let (found, out) = ctx.lookup_value_hashed_with_out(hash, &key);
    let list = match found {
        None => {
            out.null();
            return Ok(());
        }
        Some(Value::List(l)) => l,
        Some(_) => return Err(ReplyError::WrongType),
    };
    let index = parse_long(&argv[2])?;
    match normalize(index, list.len()).and_then(|i| list.get(i)) {
        Some(e) => out.bulk(&e),
        None => out.null(),
    }
    Ok(())
}

fn lset(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let key = ctx.arg(1).clone();
    let argv = ctx.argv;
    let Some(list) = get_list_strict(ctx, &key)? else {
        return Err(ReplyError::NoSuchKey);
    };
    let index = parse_long(&argv[2])?;
    let Some(i) = normalize(index, list.len()) else {
        return Err(ReplyError::msg("ERR index out of range"));
    };
    list.set(i, &argv[3]);
    ctx.out.ok();
    ctx.collection_written(class::LIST, "lset", &key, false, argv);
    Ok(())
}

fn linsert(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let after = if is(&argv[2], "after") {
        true
    } else if is(&argv[2], "before") {
        false
    } else {
        return Err(ReplyError::Syntax);
    };
    let key = argv[1].clone();
    let th = ctx.core.thresholds;
    let Some(list) = get_list_strict(ctx, &key)? else {
        ctx.out.integer(0);
        return Ok(());
    };
    // Redis converts before looking for the pivot, as if the insert will happen.
    list.prepare_push(argv[4].len(), 1);
    let pivot = Needle::new(&argv[3]);
    let mut it = list.iter();
    let mut pos = None;
    let mut i = 0;
    while let Some(e) = it.next_elem() {
        if pivot.matches(e) {
            pos = Some(i);
            break;
        }
        i += 1;
    }
    let Some(p) = pos else {
        ctx.out.integer(-1);
        return Ok(());
    };
    list.insert(if after { p + 1 } else { p }, &argv[4], &th);
    let len = list.len();
    ctx.signal_ready(&key);
    ctx.out.integer(len as i64);
    ctx.collection_written(class::LIST, "linsert", &key, false, argv);
    Ok(())
}

/// (start, end) of Redis's range normalisation for LRANGE/LTRIM, or `None` when empty.
fn range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let llen = len as i64;
    let mut s = if start < 0 {
        llen.saturating_add(start)
    } else {
        start
    };
    let mut e = if end < 0 {
        llen.saturating_add(end)
    } else {
        end
    };
    if s < 0 {
        s = 0;
    }
    if s > e || s >= llen {
        return None;
    }
    if e >= llen {
        e = llen - 1;
    }
    Some((s as usize, e as usize))
}

fn lrange(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let start = parse_long(&ctx.argv[2])?;
    let end = parse_long(&ctx.argv[3])?;
    let key = ctx.arg(1).clone();
    let hash = ctx.db().hash_key(&key);
    let (found, out) = ctx.lookup_value_hashed_with_out(hash, &key);
    let list = match found {
        None => {
            out.array(0);
            return Ok(());
        }
        Some(Value::List(l)) => l,
        Some(_) => return Err(ReplyError::WrongType),
    };
    match range(start, end, list.len()) {
        None => out.array(0),
        Some((s, e)) => {
            out.array(e - s + 1);
            let mut it = list.iter_from(s);
            for _ in s..=e {
                if let Some(el) = it.next_elem() {
                    el.with_bytes(|b| out.bulk(b));
                }
            }
        }
    }
    Ok(())
}

fn ltrim(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let start = parse_long(&argv[2])?;
    let end = parse_long(&argv[3])?;
    let key = argv[1].clone();
    let Some(list) = get_list_strict(ctx, &key)? else {
        ctx.out.ok();
        return Ok(());
    };
    let before = list.len();
    match range(start, end, before) {
        None => list.retain_range(1, 0),
        Some((s, e)) => list.retain_range(s, e),
    }
    let removed = before - list.len();
    let emptied = list.is_empty();
    ctx.core.dirty += (removed as u64).saturating_sub(1);
    ctx.out.ok();
    ctx.collection_written(class::LIST, "ltrim", &key, emptied, argv);
    Ok(())
}

fn lrem(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let count = parse_long(&argv[2])?;
    let key = argv[1].clone();
    let Some(list) = get_list_strict(ctx, &key)? else {
        ctx.out.integer(0);
        return Ok(());
    };
    let removed = list.remove_matching(&Needle::new(&argv[3]), count);
    let emptied = list.is_empty();
    ctx.out.integer(removed as i64);
    if removed > 0 {
        ctx.core.dirty += removed as u64 - 1;
        ctx.collection_written(class::LIST, "lrem", &key, emptied, argv);
    }
    Ok(())
}

fn lpos(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let mut rank: i64 = 1;
    let mut count: i64 = -1;
    let mut maxlen: i64 = 0;
    let mut j = 3;
    while j < argv.len() {
        let more = j + 1 < argv.len();
        if is(&argv[j], "rank") && more {
            j += 1;
            rank = parse_long(&argv[j])?;
            // -LONG_MAX..LONG_MAX: a negated LONG_MIN would overflow.
            if rank == i64::MIN {
                return Err(ReplyError::msg(
                    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
                ));
            }
            if rank == 0 {
                return Err(ReplyError::msg(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                ));
            }
        } else if is(&argv[j], "count") && more {
            j += 1;
            count = parse_range(&argv[j], 0, "ERR COUNT can't be negative")?;
        } else if is(&argv[j], "maxlen") && more {
            j += 1;
            maxlen = parse_range(&argv[j], 0, "ERR MAXLEN can't be negative")?;
        } else {
            return Err(ReplyError::Syntax);
        }
        j += 1;
    }
    let from_tail = rank < 0;
    if from_tail {
        rank = rank.wrapping_neg();
    }
    let key = argv[1].clone();
    let hash = ctx.db().hash_key(&key);
    let (found, out) = ctx.lookup_value_hashed_with_out(hash, &key);
    let list = match found {
        None => {
            if count != -1 {
                out.array(0);
            } else {
                out.null();
            }
            return Ok(());
        }
        Some(Value::List(l)) => l,
        Some(_) => return Err(ReplyError::WrongType),
    };
    let needle = Needle::new(&argv[2]);
    let len = list.len();
    let mut hits: Vec<i64> = Vec::new();
    let mut single = None;
    let mut matches: i64 = 0;
    let mut index: i64 = 0;
    let mut fwd = list.iter();
    let mut rev = list.iter_rev();
    loop {
        if maxlen != 0 && index >= maxlen {
            break;
        }
        let e = if from_tail {
            rev.next_elem()
        } else {
            fwd.next_elem()
        };
        let Some(e) = e else { break };
        if needle.matches(e) {
            matches += 1;
            let at = if from_tail {
                len as i64 - index - 1
            } else {
                index
            };
            if matches >= rank {
                if count != -1 {
                    hits.push(at);
                    if count != 0 && matches.wrapping_sub(rank).wrapping_add(1) >= count {
                        break;
                    }
                } else {
                    single = Some(at);
                    break;
                }
            }
        }
        index += 1;
    }
    if count != -1 {
        out.array(hits.len());
        for h in hits {
            out.integer(h);
        }
    } else {
        match single {
            Some(i) => out.integer(i),
            None => out.null(),
        }
    }
    Ok(())
}

/// LMOVE's work once `src` is known to hold a non-empty list: checks the
/// destination's type, pops, pushes, replies with the element, and the events in
/// Redis's order (`new`/`lpush`|`rpush` on the destination, then `lpop`|`rpop` and
/// maybe `del` on the source).
fn move_generic(
    ctx: &mut Ctx<'_>,
    src: &Bytes,
    dst: &Bytes,
    from: End,
    to: End,
) -> Result<(), ReplyError> {
    let dst_exists = get_list_strict(ctx, dst)?.is_some();
    let idx = ctx.client.db;
    let th = ctx.core.thresholds;
    let elem = match ctx.core.dbs[idx].get_mut(src) {
        Some(Value::List(l)) => match from {
            End::Left => l.pop_front(),
            End::Right => l.pop_back(),
        },
        _ => None,
    };
    let Some(elem) = elem else {
        ctx.out.null();
        return Ok(());
    };
    if !dst_exists && src != dst {
        create(ctx, dst);
    }
    if let Some(Value::List(l)) = ctx.core.dbs[idx].get_mut(dst) {
        l.prepare_push(elem.len(), 1);
        match to {
            End::Left => l.push_front(&elem, &th),
            End::Right => l.push_back(&elem, &th),
        }
    }
    if dst_exists {
        ctx.signal_ready(dst);
    }
    ctx.collection_changed(class::LIST, to.push_event(), dst, false);
    ctx.out.bulk(&elem);
    let emptied = is_emptied(ctx, src);
    ctx.collection_changed(class::LIST, from.pop_event(), src, emptied);
    ctx.core.dirty -= 1;
    Ok(())
}

/// LMOVE / RPOPLPUSH / BLMOVE / BRPOPLPUSH, `timeout_ms` set for the blocking ones.
fn lmove_command(
    ctx: &mut Ctx<'_>,
    from: End,
    to: End,
    timeout_ms: Option<u64>,
    effect: &[&[u8]],
) -> Result<(), ReplyError> {
    let src = ctx.arg(1).clone();
    let dst = ctx.arg(2).clone();
    if get_list(ctx, &src)?.is_none() {
        match timeout_ms {
            Some(t) if ctx.can_block() => {
                ctx.block(&[src], t, false, None);
            }
            _ => ctx.out.null(),
        }
        return Ok(());
    }
    move_generic(ctx, &src, &dst, from, to)?;
    ctx.propagate(effect);
    Ok(())
}

fn lmove(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let from = End::parse(&ctx.argv[3])?;
    let to = End::parse(&ctx.argv[4])?;
    let effect: Vec<&[u8]> = ctx.argv.iter().map(|a| &a[..]).collect();
    lmove_command(ctx, from, to, None, &effect)
}

fn rpoplpush(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let effect: Vec<&[u8]> = ctx.argv.iter().map(|a| &a[..]).collect();
    lmove_command(ctx, End::Right, End::Left, None, &effect)
}

fn blmove(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let from = End::parse(&ctx.argv[3])?;
    let to = End::parse(&ctx.argv[4])?;
    let timeout = parse_timeout_secs(&ctx.argv[5])?;
    let argv = ctx.argv;
    // LEFT/RIGHT as the client wrote them, as Redis rewrites BLMOVE into LMOVE.
    let effect: [&[u8]; 5] = [b"LMOVE", &argv[1], &argv[2], &argv[3], &argv[4]];
    lmove_command(ctx, from, to, Some(timeout), &effect)
}

fn brpoplpush(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let timeout = parse_timeout_secs(&ctx.argv[3])?;
    let argv = ctx.argv;
    let effect: [&[u8]; 3] = [b"RPOPLPUSH", &argv[1], &argv[2]];
    lmove_command(ctx, End::Right, End::Left, Some(timeout), &effect)
}

/// The optional `COUNT|EXACTLY n OBO|BULK` block of LMOVEM and BLMOVEM.
#[derive(Debug, Clone, Copy)]
struct HowMany {
    /// How many elements to move (at most, or exactly).
    count: usize,
    /// EXACTLY: all `count` or nothing (and BLMOVEM waits until there are enough).
    exactly: bool,
    /// BULK: the moved block keeps its order in the source; OBO: each element is
    /// pushed as it is popped.
    bulk: bool,
}

/// Parses the how-many block from `argv[at]` to the end: nothing is one element; else
/// exactly the three words, the count checked before the ordering word.
fn parse_how_many(argv: &[Bytes], at: usize) -> Result<HowMany, ReplyError> {
    if argv.len() == at {
        return Ok(HowMany {
            count: 1,
            exactly: false,
            bulk: true,
        });
    }
    if argv.len() != at + 3 {
        return Err(ReplyError::Syntax);
    }
    let exactly = if is(&argv[at], "exactly") {
        true
    } else if is(&argv[at], "count") {
        false
    } else {
        return Err(ReplyError::Syntax);
    };
    let count = parse_range(&argv[at + 1], 1, "ERR count should be greater than 0")?;
    let bulk = if is(&argv[at + 2], "bulk") {
        true
    } else if is(&argv[at + 2], "obo") {
        false
    } else {
        return Err(ReplyError::Syntax);
    };
    Ok(HowMany {
        count: usize::try_from(count).unwrap_or(usize::MAX),
        exactly,
        bulk,
    })
}

/// LMOVEM / BLMOVEM (`timeout_ms` set): moves up to (or, EXACTLY, all of) `how.count`
/// elements from `from` of the source to `to` of the destination and replies them in
/// the order they now have in the destination (a null array when nothing moved).
/// BULK keeps the block's source order; OBO pushes each element as popped. The
/// elements are all popped before any is pushed, so a list moved onto itself rotates.
/// Events as LMOVE's, once each: `new` and the push event on the destination, then
/// the pop event and maybe `del` on the source. BLMOVEM waits while the source is
/// missing or, EXACTLY, too short, and is logged as `LMOVEM ... EXACTLY n BULK|OBO`
/// with the number it moved; LMOVEM is logged as sent.
fn lmovem_command(
    ctx: &mut Ctx<'_>,
    from: End,
    to: End,
    how: HowMany,
    timeout_ms: Option<u64>,
) -> Result<(), ReplyError> {
    let src = ctx.arg(1).clone();
    let dst = ctx.arg(2).clone();
    let len = get_list(ctx, &src)?.map_or(0, |l| l.len());
    let dst_exists = if len > 0 {
        get_list_strict(ctx, &dst)?.is_some()
    } else {
        false
    };
    if len == 0 || (how.exactly && len < how.count) {
        match timeout_ms {
            Some(t) if ctx.can_block() => {
                ctx.block(&[src], t, false, None);
            }
            _ => ctx.out.null_array(),
        }
        return Ok(());
    }
    let n = how.count.min(len);
    let idx = ctx.client.db;
    let th = ctx.core.thresholds;
    let mut popped: Vec<Vec<u8>> = Vec::with_capacity(n);
    if let Some(Value::List(l)) = ctx.core.dbs[idx].get_mut(&src) {
        for _ in 0..n {
            let e = match from {
                End::Left => l.pop_front(),
                End::Right => l.pop_back(),
            };
            popped.extend(e);
        }
    }
    // The block as it will read in the destination, head to tail.
    let in_source_order = from == End::Left;
    let as_popped = if how.bulk {
        in_source_order
    } else {
        to == End::Right
    };
    if !as_popped {
        popped.reverse();
    }
    if !dst_exists && src != dst {
        create(ctx, &dst);
    }
    if let Some(Value::List(l)) = ctx.core.dbs[idx].get_mut(&dst) {
        l.prepare_push(popped.iter().map(|e| e.len()).sum(), popped.len());
        match to {
            End::Right => popped.iter().for_each(|e| l.push_back(e, &th)),
            End::Left => popped.iter().rev().for_each(|e| l.push_front(e, &th)),
        }
    }
    if dst_exists {
        ctx.signal_ready(&dst);
    }
    ctx.out.array(popped.len());
    for e in &popped {
        ctx.out.bulk(e);
    }
    ctx.collection_changed(class::LIST, to.push_event(), &dst, false);
    let emptied = is_emptied(ctx, &src);
    ctx.collection_changed(class::LIST, from.pop_event(), &src, emptied);
    ctx.core.dirty = (ctx.core.dirty + popped.len() as u64).saturating_sub(2);
    let argv = ctx.argv;
    if timeout_ms.is_some() {
        let mut b = itoa::Buffer::new();
        let order: &[u8] = if how.bulk { b"BULK" } else { b"OBO" };
        let effect: [&[u8]; 8] = [
            b"LMOVEM",
            &argv[1],
            &argv[2],
            &argv[3],
            &argv[4],
            b"EXACTLY",
            b.format(popped.len()).as_bytes(),
            order,
        ];
        ctx.propagate(&effect);
    } else {
        ctx.propagate(argv);
    }
    Ok(())
}

/// LMOVEM source destination LEFT|RIGHT LEFT|RIGHT [COUNT|EXACTLY n OBO|BULK] (8.10).
fn lmovem(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let from = End::parse(&ctx.argv[3])?;
    let to = End::parse(&ctx.argv[4])?;
    let how = parse_how_many(ctx.argv, 5)?;
    lmovem_command(ctx, from, to, how, None)
}

/// BLMOVEM source destination LEFT|RIGHT LEFT|RIGHT timeout [COUNT|EXACTLY n OBO|BULK].
fn blmovem(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let from = End::parse(&ctx.argv[3])?;
    let to = End::parse(&ctx.argv[4])?;
    let timeout = parse_timeout_secs(&ctx.argv[5])?;
    let how = parse_how_many(ctx.argv, 6)?;
    lmovem_command(ctx, from, to, how, Some(timeout))
}

/// BLPOP/BRPOP/BLMPOP (and LMPOP with `timeout_ms` = None): serve from the first
/// non-empty key (re-executing: from the key signalled ready), else block.
fn pop_keys(
    ctx: &mut Ctx<'_>,
    keys: &[Bytes],
    end: End,
    count: Option<usize>,
    timeout_ms: Option<u64>,
) -> Result<(), ReplyError> {
    let ready = if ctx.core.reprocessing.is_some() {
        ctx.core.reprocess_key.clone()
    } else {
        None
    };
    for key in keys {
        if ready.as_ref().is_some_and(|r| r != key) {
            continue;
        }
        let len = match get_list(ctx, key)? {
            Some(l) if !l.is_empty() => l.len(),
            _ => continue,
        };
        match count {
            Some(n) => {
                let n = pop_range_reply(ctx, key, end, n, true);
                let mut b = itoa::Buffer::new();
                let effect: [&[u8]; 3] = [end.pop_name(), key, b.format(n.min(len)).as_bytes()];
                ctx.propagate(&effect);
            }
            None => {
                let idx = ctx.client.db;
                let core = &mut *ctx.core;
                let out = &mut *ctx.out;
                if let Some(Value::List(l)) = core.dbs[idx].get_mut(key) {
                    out.array(2);
                    out.bulk(key);
                    match end {
                        End::Left => l.pop_front_with(|b| out.bulk(b)),
                        End::Right => l.pop_back_with(|b| out.bulk(b)),
                    };
                }
                popped(ctx, key, end, 1);
                let effect: [&[u8]; 2] = [end.pop_name(), key];
                ctx.propagate(&effect);
            }
        }
        return Ok(());
    }
    match timeout_ms {
        Some(t) if ctx.can_block() => {
            ctx.block(keys, t, false, None);
        }
        _ => ctx.out.null_array(),
    }
    Ok(())
}

fn blpop(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let n = ctx.argv.len();
    let timeout = parse_timeout_secs(&ctx.argv[n - 1])?;
    let keys: Vec<Bytes> = ctx.argv[1..n - 1].to_vec();
    pop_keys(ctx, &keys, End::Left, None, Some(timeout))
}

fn brpop(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let n = ctx.argv.len();
    let timeout = parse_timeout_secs(&ctx.argv[n - 1])?;
    let keys: Vec<Bytes> = ctx.argv[1..n - 1].to_vec();
    pop_keys(ctx, &keys, End::Right, None, Some(timeout))
}

/// Parses `numkeys key... LEFT|RIGHT [COUNT n]` from `argv[at]`: (keys, end, count).
fn parse_mpop(argv: &[Bytes], at: usize) -> Result<(Vec<Bytes>, End, usize), ReplyError> {
    let numkeys = parse_range(&argv[at], 1, "ERR numkeys should be greater than 0")?;
    let where_idx = (numkeys as u64)
        .checked_add(at as u64 + 1)
        .filter(|&w| w < argv.len() as u64)
        .ok_or(ReplyError::Syntax)? as usize;
    let end = End::parse(&argv[where_idx])?;
    let mut count: i64 = -1;
    let mut j = where_idx + 1;
    while j < argv.len() {
        let more = j + 1 < argv.len();
        if count == -1 && is(&argv[j], "count") && more {
            j += 1;
            count = parse_range(&argv[j], 1, "ERR count should be greater than 0")?;
        } else {
            return Err(ReplyError::Syntax);
        }
        j += 1;
    }
    let count = if count == -1 { 1 } else { count };
    let keys = argv[at + 1..where_idx].to_vec();
    Ok((keys, end, usize::try_from(count).unwrap_or(usize::MAX)))
}

fn lmpop(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let (keys, end, count) = parse_mpop(ctx.argv, 1)?;
    pop_keys(ctx, &keys, end, Some(count), None)
}

fn blmpop(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let (keys, end, count) = parse_mpop(ctx.argv, 2)?;
    let timeout = parse_timeout_secs(&ctx.argv[1])?;
    pop_keys(ctx, &keys, end, Some(count), Some(timeout))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_parse_as_redis_does() {
        assert_eq!(parse_timeout_secs(b"0"), Ok(0));
        assert_eq!(parse_timeout_secs(b"0.01"), Ok(10));
        assert_eq!(parse_timeout_secs(b"1.0001"), Ok(1001));
        assert_eq!(parse_timeout_secs(b"1e1"), Ok(10000));
        assert!(parse_timeout_secs(b"x").is_err());
        assert!(parse_timeout_secs(b"nan").is_err());
        assert!(parse_timeout_secs(b" 1").is_err());
        assert_eq!(
            parse_timeout_secs(b"-1").unwrap_err().to_string(),
            "ERR timeout is negative"
        );
        assert_eq!(
            parse_timeout_secs(b"").unwrap_err().to_string(),
            "ERR timeout is not a float or out of range"
        );
        // As strtold reads them: hexadecimal, infinities; Redis 7.2+'s range errors.
        assert_eq!(parse_timeout_secs(b"0x1p3"), Ok(8000));
        assert_eq!(parse_timeout_secs(b"0X10"), Ok(16000));
        assert_eq!(parse_timeout_secs(b"0x.8"), Ok(500));
        for bad in [&b"0x"[..], b"0xg", b"0x1p", b"0x1p+", b"1e5000"] {
            assert!(parse_timeout_secs(bad).is_err(), "{bad:?}");
        }
        let out = |t: &[u8]| parse_timeout_secs(t).unwrap_err().to_string();
        assert_eq!(out(b"0x7FFFFFFFFFFFFF"), "ERR timeout is out of range");
        assert_eq!(out(b"inf"), "ERR timeout is out of range");
        assert_eq!(out(b"9e20"), "ERR timeout is out of range");
        assert_eq!(out(b"-inf"), "ERR timeout is negative");
        assert_eq!(out(b"-0x1"), "ERR timeout is negative");
    }

    #[test]
    fn ranges_normalise_like_redis() {
        assert_eq!(range(0, -1, 3), Some((0, 2)));
        assert_eq!(range(-100, 100, 3), Some((0, 2)));
        assert_eq!(range(2, 1, 3), None);
        assert_eq!(range(5, 10, 3), None);
        assert_eq!(range(i64::MIN, i64::MAX, 3), Some((0, 2)));
        assert_eq!(normalize(-1, 3), Some(2));
        assert_eq!(normalize(3, 3), None);
        assert_eq!(normalize(i64::MIN, 3), None);
    }
}
