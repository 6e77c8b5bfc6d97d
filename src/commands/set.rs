//! The set family: every command of Redis 7.0's `@set` category (SADD SCARD SDIFF
//! SDIFFSTORE SINTER SINTERCARD SINTERSTORE SISMEMBER SMEMBERS SMISMEMBER SMOVE SPOP
//! SRANDMEMBER SREM SSCAN SUNION SUNIONSTORE; SORT belongs to the lists) and Redis
//! 8.10's SDIFFCARD and SUNIONCARD.
//!
//! Reply shapes (RESP2 / RESP3) as Redis 7.0 writes them:
//!
//! ```text
//! SMEMBERS SINTER SUNION SDIFF   *n ... / ~n ...          missing keys: empty sets
//! SPOP k n                       *n ... / ~n ...          missing key: *0 / ~0
//! SRANDMEMBER k n                *n ... (an array in RESP3 too; missing key: *0)
//! SPOP k, SRANDMEMBER k          $member or null
//! SSCAN                          *2 $cursor *m ...
//! ```
//!
//! Effects: SPOP is logged as `SREM key member` (one per popped member, as 7.0 does;
//! the core wraps several in MULTI/EXEC), or as `DEL key` when it took every member.
//! The *STORE commands overwrite their destination whatever its type (a wrong-typed
//! *source* is WRONGTYPE), delete it when the result is empty, and are logged as sent.
//! Events: `sadd`, `srem`, `spop`, SMOVE's `srem` + `sadd`, `sinterstore` /
//! `sunionstore` / `sdiffstore`, `new` before the first event of a created key and
//! `del` when a set is emptied.

use super::hash::{
    OUT_OF_RANGE_ERR, REPEAT_LIMIT, SUB_STRATEGY_MUL, distinct_indices, empty_scan, parse_count,
    parse_scan_opts, read_value, value_or_create, write_value,
};
use super::{CommandSpec, Family, flags::*, is, keyflags, parse_i64};
use crate::core::Ctx;
use crate::core::notify::class;
use crate::error::ReplyError;
use crate::resp::writer::RespWriter;
use crate::types::set::Member;
use crate::types::{Kind, Set, Value};
use crate::util::glob_match;
use bytes::Bytes;

const SET: &[&str] = &["@set"];

/// The family of the set commands: the key is the first argument unless the row says otherwise.
const SET_ROWS: Family = Family::new("set").categories(SET).keys(1, 1, 1);

use keyflags::{ACCESS, DELETE, INSERT, OW, RO, RW, UPDATE};
const RO_: &[u32] = &[RO];
const RO_ACCESS: &[u32] = &[RO | ACCESS];

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    SET_ROWS
        .row(
            "sadd",
            -3,
            WRITE | DENYOOM | FAST,
            "Add one or more members to a set",
            "1.0.0",
            sadd,
        )
        .with_key_flags(&[RW | INSERT]),
    SET_ROWS
        .row(
            "scard",
            2,
            READONLY | FAST,
            "Get the number of members in a set",
            "1.0.0",
            scard,
        )
        .with_key_flags(RO_),
    SET_ROWS
        .row(
            "sdiff",
            -2,
            READONLY,
            "Subtract multiple sets",
            "1.0.0",
            sdiff,
        )
        .keys(1, -1, 1)
        .with_key_flags(RO_ACCESS),
    CommandSpec {
        first_key: 0,
        last_key: 0,
        key_step: 0,
        ..SET_ROWS
            .row(
                "sdiffcard",
                -3,
                READONLY | MOVABLEKEYS,
                "Returns the number of members of the difference between the first set and all successive sets.",
                "8.10.0",
                sdiffcard,
            )
            .with_key_flags(RO_ACCESS)
    },
    SET_ROWS
        .row(
            "sdiffstore",
            -3,
            WRITE | DENYOOM,
            "Subtract multiple sets and store the resulting set in a key",
            "1.0.0",
            sdiffstore,
        )
        .keys(1, -1, 1)
        .with_key_flags(&[OW | UPDATE, RO | ACCESS]),
    SET_ROWS
        .row(
            "sinter",
            -2,
            READONLY,
            "Intersect multiple sets",
            "1.0.0",
            sinter,
        )
        .keys(1, -1, 1)
        .with_key_flags(RO_ACCESS),
    CommandSpec {
        first_key: 0,
        last_key: 0,
        key_step: 0,
        ..SET_ROWS
            .row(
                "sintercard",
                -3,
                READONLY | MOVABLEKEYS,
                "Intersect multiple sets and return the cardinality of the result",
                "7.0.0",
                sintercard,
            )
            .with_key_flags(RO_ACCESS)
    },
    SET_ROWS
        .row(
            "sinterstore",
            -3,
            WRITE | DENYOOM,
            "Intersect multiple sets and store the resulting set in a key",
            "1.0.0",
            sinterstore,
        )
        .keys(1, -1, 1)
        .with_key_flags(&[RW | UPDATE, RO | ACCESS]),
    SET_ROWS
        .row(
            "sismember",
            3,
            READONLY | FAST,
            "Determine if a given value is a member of a set",
            "1.0.0",
            sismember,
        )
        .with_key_flags(RO_),
    SET_ROWS
        .row(
            "smembers",
            2,
            READONLY,
            "Get all the members in a set",
            "1.0.0",
            smembers,
        )
        .with_key_flags(RO_ACCESS),
    SET_ROWS
        .row(
            "smismember",
            -3,
            READONLY | FAST,
            "Returns the membership associated with the given elements for a set",
            "6.2.0",
            smismember,
        )
        .with_key_flags(RO_ACCESS),
    SET_ROWS
        .row(
            "smove",
            4,
            WRITE | FAST,
            "Move a member from one set to another",
            "1.0.0",
            smove,
        )
        .keys(1, 2, 1)
        .with_key_flags(&[RW | ACCESS | DELETE, RW | INSERT]),
    SET_ROWS
        .row(
            "spop",
            -2,
            WRITE | FAST,
            "Remove and return one or multiple random members from a set",
            "1.0.0",
            spop,
        )
        .with_key_flags(&[RW | ACCESS | DELETE]),
    SET_ROWS
        .row(
            "srandmember",
            -2,
            READONLY,
            "Get one or multiple random members from a set",
            "1.0.0",
            srandmember,
        )
        .with_key_flags(RO_ACCESS),
    SET_ROWS
        .row(
            "srem",
            -3,
            WRITE | FAST,
            "Remove one or more members from a set",
            "1.0.0",
            srem,
        )
        .with_key_flags(&[RW | DELETE]),
    SET_ROWS
        .row(
            "sscan",
            -3,
            READONLY,
            "Incrementally iterate Set elements",
            "2.8.0",
            sscan,
        )
        .with_key_flags(RO_ACCESS),
    SET_ROWS
        .row("sunion", -2, READONLY, "Add multiple sets", "1.0.0", sunion)
        .keys(1, -1, 1)
        .with_key_flags(RO_ACCESS),
    CommandSpec {
        first_key: 0,
        last_key: 0,
        key_step: 0,
        ..SET_ROWS
            .row(
                "sunioncard",
                -3,
                READONLY | MOVABLEKEYS,
                "Returns the number of members of the union of multiple sets.",
                "8.10.0",
                sunioncard,
            )
            .with_key_flags(RO_ACCESS)
    },
    SET_ROWS
        .row(
            "sunionstore",
            -3,
            WRITE | DENYOOM,
            "Add multiple sets and store the resulting set in a key",
            "1.0.0",
            sunionstore,
        )
        .keys(1, -1, 1)
        .with_key_flags(&[OW | UPDATE, RO | ACCESS]),
];

// --- errors ------------------------------------------------------------------------------

const MUST_BE_POSITIVE: ReplyError = ReplyError::msg("ERR value is out of range, must be positive");
const NUMKEYS: ReplyError = ReplyError::msg("ERR numkeys should be greater than 0");
const TOO_MANY_KEYS: ReplyError =
    ReplyError::msg("ERR Number of keys can't be greater than number of args");
const LIMIT_NEGATIVE: ReplyError = ReplyError::msg("ERR LIMIT can't be negative");

/// Redis's `SPOP_MOVE_STRATEGY_MUL`.
const SPOP_MOVE_STRATEGY_MUL: usize = 5;

// --- helpers -----------------------------------------------------------------------------

fn as_set(v: Option<&mut Value>) -> Result<Option<&mut Set>, ReplyError> {
    match v {
        None => Ok(None),
        Some(Value::Set(s)) => Ok(Some(s)),
        Some(_) => Err(ReplyError::WrongType),
    }
}

fn new_set() -> Value {
    Value::Set(Set::default())
}

/// Writes a member as a bulk string.
fn bulk_member(out: &mut RespWriter, m: Member<'_>) {
    match m {
        Member::Int(v) => out.bulk_int(v),
        Member::Bytes(b) => out.bulk(b),
    }
}

/// Looks every key up as a read (expiry, statistics) and checks that each is a set or
/// missing; Redis checks every key before computing anything.
fn check_sets(ctx: &mut Ctx<'_>, keys: &[Bytes]) -> Result<(), ReplyError> {
    for k in keys {
        as_set(read_value(ctx, k).0)?;
    }
    Ok(())
}

/// The sets at `keys` (after [`check_sets`]), `None` for a missing key.
fn sets_of<'d>(db: &'d crate::core::keyspace::Db, keys: &[Bytes]) -> Vec<Option<&'d Set>> {
    keys.iter()
        .map(|k| match db.get(k) {
            Some(Value::Set(s)) => Some(s),
            _ => None,
        })
        .collect()
}

/// Which combination of sets.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// Visits the members of the intersection of `sets`: the smallest set's members that
/// every other holds, in its order (none when a key is missing), until `visit` returns
/// false. SINTER, SINTERSTORE and SINTERCARD all walk it.
fn each_in_intersection<'s>(sets: &[Option<&'s Set>], mut visit: impl FnMut(Member<'s>) -> bool) {
    if sets.iter().any(Option::is_none) {
        return;
    }
    let mut present: Vec<&Set> = sets.iter().flatten().copied().collect();
    present.sort_by_key(|s| s.len());
    if let Some((first, rest)) = present.split_first() {
        for m in first.members() {
            let everywhere = rest
                .iter()
                .all(|s| std::ptr::eq(*s, *first) || s.contains_member(m));
            if everywhere && !visit(m) {
                return;
            }
        }
    }
}

/// Visits the members of the first set that none of the others holds (a missing first
/// key has none; missing others are empty), in its order, until `visit` returns false.
/// SDIFF, SDIFFSTORE and SDIFFCARD all walk it.
fn each_in_difference<'s>(sets: &[Option<&'s Set>], mut visit: impl FnMut(Member<'s>) -> bool) {
    if let Some((Some(first), rest)) = sets.split_first() {
        for m in first.members() {
            if !rest.iter().flatten().any(|s| s.contains_member(m)) && !visit(m) {
                return;
            }
        }
    }
}

/// Computes the combination into a new set (built the way Redis builds its result:
/// an intset that converts as members require).
fn combine(sets: &[Option<&Set>], op: Op, t: &crate::types::Thresholds) -> Set {
    let mut out = Set::new();
    // SINTER's result starts as a listpack unless the smallest set is an intset, and
    // becomes an intset at the end when only integers made it (Redis's
    // `sinterGenericCommand`): members keep the smallest set's order.
    let smallest = sets.iter().flatten().min_by_key(|s| s.len());
    if op == Op::Inter && smallest.is_some_and(|s| s.encoding() != "intset") {
        out = Set::new_listpack();
    }
    let mut add = |m: Member<'_>| {
        m.with_bytes(|b| out.insert(b, t));
        true
    };
    match op {
        Op::Inter => each_in_intersection(sets, &mut add),
        Op::Union => {
            for m in sets.iter().flatten().flat_map(|s| s.members()) {
                add(m);
            }
        }
        Op::Diff => each_in_difference(sets, &mut add),
    }
    if op == Op::Inter {
        out.settle_integers(t);
    }
    out
}

/// SINTER/SUNION/SDIFF (and SMEMBERS): the result as a set reply.
fn combine_reply(ctx: &mut Ctx<'_>, keys: &[Bytes], op: Op) -> Result<(), ReplyError> {
    check_sets(ctx, keys)?;
    let db = ctx.client.db;
    let sets = sets_of(&ctx.core.dbs[db], keys);
    let out = &mut *ctx.out;
    if op == Op::Inter {
        // Replied straight from the smallest set, as Redis does.
        let mut found: Vec<Member<'_>> = Vec::new();
        each_in_intersection(&sets, |m| {
            found.push(m);
            true
        });
        out.set(found.len());
        for m in found {
            bulk_member(out, m);
        }
        return Ok(());
    }
    let t = ctx.core.thresholds;
    let result = combine(&sets, op, &t);
    out.set(result.len());
    for m in result.members() {
        bulk_member(out, m);
    }
    Ok(())
}

/// SINTERSTORE/SUNIONSTORE/SDIFFSTORE: stores the result at `argv[1]` (or deletes it
/// when empty) and replies its size.
fn combine_store(ctx: &mut Ctx<'_>, op: Op, event: &str) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let dst = &argv[1];
    let keys = &argv[2..];
    check_sets(ctx, keys)?;
    let db = ctx.client.db;
    let t = ctx.core.thresholds;
    let result = combine(&sets_of(&ctx.core.dbs[db], keys), op, &t);
    ctx.expire_if_needed(dst);
    let existed = ctx.core.dbs[db].keys.contains_key(dst);
    let n = result.len();
    if n > 0 {
        ctx.core.dbs[db].insert(dst, Value::Set(result));
        ctx.out.integer(n as i64);
        if !existed {
            ctx.notify(class::NEW, "new", dst);
        }
        ctx.collection_written(class::SET, event, dst, false, argv);
    } else {
        ctx.out.integer(0);
        if ctx.delete_key(dst) {
            ctx.core.dirty += 1;
            ctx.propagate(argv);
        }
    }
    Ok(())
}

// --- commands ----------------------------------------------------------------------------

/// SADD key member [member ...]: how many were added.
fn sadd(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let t = ctx.core.thresholds;
    let (v, created) = value_or_create(ctx, key, Kind::Set, new_set)?;
    let Value::Set(s) = v else {
        return Err(ReplyError::WrongType);
    };
    // Redis picks the new set's encoding (or converts an existing one) for the number
    // of members about to come, before adding any.
    let hint = argv.len() - 2;
    if created {
        *s = Set::for_members(&argv[2], hint, &t);
    } else {
        s.expect(hint, &t);
    }
    let mut added = 0;
    for m in &argv[2..] {
        added += i64::from(s.insert(m, &t));
    }
    ctx.out.integer(added);
    if created {
        ctx.notify(class::NEW, "new", key);
    }
    if added > 0 {
        ctx.collection_written(class::SET, "sadd", key, false, argv);
    }
    Ok(())
}

/// SREM key member [member ...]: how many were removed.
fn srem(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let Some(s) = as_set(write_value(ctx, key))? else {
        ctx.out.integer(0);
        return Ok(());
    };
    let mut removed = 0;
    let mut emptied = false;
    for m in &argv[2..] {
        if s.remove(m) {
            removed += 1;
            if s.is_empty() {
                emptied = true;
                break;
            }
        }
    }
    ctx.out.integer(removed);
    if removed > 0 {
        ctx.collection_written(class::SET, "srem", key, emptied, argv);
    }
    Ok(())
}

/// SMOVE source destination member.
fn smove(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (src, dst, member) = (&argv[1], &argv[2], &argv[3]);
    let db = ctx.client.db;
    ctx.expire_if_needed(src);
    ctx.expire_if_needed(dst);
    let kinds = |k: &[u8]| ctx.core.dbs[db].get(k).map(Value::kind);
    let (sk, dk) = (kinds(src), kinds(dst));
    if sk.is_none() {
        ctx.out.integer(0);
        return Ok(());
    }
    if sk != Some(Kind::Set) || dk.is_some_and(|k| k != Kind::Set) {
        return Err(ReplyError::WrongType);
    }
    if src == dst {
        let found = as_set(ctx.core.dbs[db].get_mut(src))?.is_some_and(|s| s.contains(member));
        ctx.out.integer(i64::from(found));
        return Ok(());
    }
    let Some(s) = as_set(ctx.core.dbs[db].get_mut(src))? else {
        ctx.out.integer(0);
        return Ok(());
    };
    if !s.remove(member) {
        ctx.out.integer(0);
        return Ok(());
    }
    let emptied = s.is_empty();
    ctx.notify(class::SET, "srem", src);
    if emptied {
        ctx.delete_key(src);
    }
    let t = ctx.core.thresholds;
    let (v, created) = value_or_create(ctx, dst, Kind::Set, new_set)?;
    let added = match v {
        Value::Set(d) => d.insert(member, &t),
        _ => false,
    };
    if created {
        ctx.notify(class::NEW, "new", dst);
    }
    ctx.modified(src);
    if added {
        ctx.modified(dst);
        ctx.notify(class::SET, "sadd", dst);
    }
    ctx.out.integer(1);
    ctx.propagate(argv);
    Ok(())
}

/// SISMEMBER key member.
fn sismember(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (v, out) = read_value(ctx, &argv[1]);
    let found = as_set(v)?.is_some_and(|s| s.contains(&argv[2]));
    out.integer(i64::from(found));
    Ok(())
}

/// SMISMEMBER key member [member ...].
fn smismember(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (v, out) = read_value(ctx, &argv[1]);
    let s = as_set(v)?;
    out.array(argv.len() - 2);
    for m in &argv[2..] {
        out.integer(i64::from(s.as_ref().is_some_and(|s| s.contains(m))));
    }
    Ok(())
}

/// SCARD key.
fn scard(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (v, out) = read_value(ctx, &argv[1]);
    let n = as_set(v)?.map_or(0, |s| s.len());
    out.integer(n as i64);
    Ok(())
}

/// SMEMBERS key (Redis runs it as a one-key SINTER).
fn smembers(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    combine_reply(ctx, &argv[1..2], Op::Inter)
}

/// SINTER key [key ...].
fn sinter(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    combine_reply(ctx, &argv[1..], Op::Inter)
}

/// SUNION key [key ...].
fn sunion(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    combine_reply(ctx, &argv[1..], Op::Union)
}

/// SDIFF key [key ...].
fn sdiff(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    combine_reply(ctx, &argv[1..], Op::Diff)
}

/// SINTERSTORE destination key [key ...].
fn sinterstore(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    combine_store(ctx, Op::Inter, "sinterstore")
}

/// SUNIONSTORE destination key [key ...].
fn sunionstore(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    combine_store(ctx, Op::Union, "sunionstore")
}

/// SDIFFSTORE destination key [key ...].
fn sdiffstore(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    combine_store(ctx, Op::Diff, "sdiffstore")
}

/// The arguments of the `*CARD` commands, `numkeys key [key ...] [APPROX] [LIMIT limit]`
/// (Redis's `sinterCardCommand` and its 8.10 siblings): the keys and the limit (0 for
/// none). APPROX is accepted only where `approx` says so (SUNIONCARD).
fn parse_card(argv: &[Bytes], approx: bool) -> Result<(&[Bytes], usize), ReplyError> {
    let numkeys = parse_i64(&argv[1]).map_err(|_| NUMKEYS)?;
    if numkeys < 1 {
        return Err(NUMKEYS);
    }
    if numkeys > argv.len() as i64 - 2 {
        return Err(TOO_MANY_KEYS);
    }
    let numkeys = numkeys as usize;
    let mut limit = 0usize;
    let mut j = 2 + numkeys;
    while j < argv.len() {
        if is(&argv[j], "LIMIT") && j + 1 < argv.len() {
            let l = parse_i64(&argv[j + 1]).map_err(|_| LIMIT_NEGATIVE)?;
            if l < 0 {
                return Err(LIMIT_NEGATIVE);
            }
            limit = usize::try_from(l).unwrap_or(usize::MAX);
            j += 2;
        } else if approx && is(&argv[j], "APPROX") {
            j += 1;
        } else {
            return Err(ReplyError::Syntax);
        }
    }
    Ok((&argv[2..2 + numkeys], limit))
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit].
fn sintercard(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let (keys, limit) = parse_card(ctx.argv, false)?;
    check_sets(ctx, keys)?;
    let db = ctx.client.db;
    let sets = sets_of(&ctx.core.dbs[db], keys);
    let mut n = 0usize;
    each_in_intersection(&sets, |_| {
        n += 1;
        limit == 0 || n < limit
    });
    ctx.out.integer(n as i64);
    Ok(())
}

/// SUNIONCARD numkeys key [key ...] [APPROX] [LIMIT limit] (Redis 8.10): the number of
/// distinct members of the union, at most `limit` when one is given (0: no limit). A
/// member is counted in the first set that holds it, so nothing is built.
///
/// APPROX asks Redis for a HyperLogLog estimate; streamd counts exactly either way
/// (the estimate's error is allowed, not required: see docs/compatibility.md).
fn sunioncard(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let (keys, limit) = parse_card(ctx.argv, true)?;
    check_sets(ctx, keys)?;
    let db = ctx.client.db;
    let sets: Vec<&Set> = sets_of(&ctx.core.dbs[db], keys)
        .into_iter()
        .flatten()
        .collect();
    let mut n = 0usize;
    'sets: for (i, s) in sets.iter().enumerate() {
        for m in s.members() {
            if sets[..i].iter().any(|earlier| earlier.contains_member(m)) {
                continue;
            }
            n += 1;
            if limit != 0 && n >= limit {
                break 'sets;
            }
        }
    }
    ctx.out.integer(n as i64);
    Ok(())
}

/// SDIFFCARD numkeys key [key ...] [LIMIT limit] (Redis 8.10): the number of members of
/// the first set in none of the others, at most `limit` when one is given (0: no
/// limit). A missing first key counts 0; missing others are empty sets.
fn sdiffcard(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let (keys, limit) = parse_card(ctx.argv, false)?;
    check_sets(ctx, keys)?;
    let db = ctx.client.db;
    let sets = sets_of(&ctx.core.dbs[db], keys);
    let mut n = 0usize;
    each_in_difference(&sets, |_| {
        n += 1;
        limit == 0 || n < limit
    });
    ctx.out.integer(n as i64);
    Ok(())
}

/// SPOP key [count].
fn spop(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    match argv.len() {
        2 => {}
        3 => return spop_count(ctx),
        _ => return Err(ReplyError::Syntax),
    }
    let Some(s) = as_set(write_value(ctx, key))? else {
        ctx.out.null();
        return Ok(());
    };
    let Some(m) = s.pop_random() else {
        ctx.out.null();
        return Ok(());
    };
    let emptied = s.is_empty();
    ctx.out.bulk(&m);
    ctx.collection_written(
        class::SET,
        "spop",
        key,
        emptied,
        &[b"SREM".as_slice(), key, &m],
    );
    Ok(())
}

/// SPOP key count (Redis's `spopWithCountCommand`, its three cases).
fn spop_count(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let count = parse_i64(&argv[2]).map_err(|_| MUST_BE_POSITIVE)?;
    let count = usize::try_from(count).map_err(|_| MUST_BE_POSITIVE)?;
    let t = ctx.core.thresholds;
    ctx.expire_if_needed(key);
    let db = ctx.client.db;
    let Some(s) = as_set(ctx.core.dbs[db].get_mut(key))? else {
        ctx.out.set(0);
        return Ok(());
    };
    if count == 0 {
        ctx.out.set(0);
        return Ok(());
    }
    let size = s.len();
    if count >= size {
        // Everything: the reply is the whole set, the effect a DEL (UNLINK under
        // lazyfree-lazy-server-del, as Redis 7.2+ logs it).
        let out = &mut *ctx.out;
        out.set(size);
        for m in s.members() {
            bulk_member(out, m);
        }
        let del: &[u8] = if ctx.core.lazy.server_del {
            b"UNLINK"
        } else {
            b"DEL"
        };
        ctx.collection_written(class::SET, "spop", key, true, &[del, key]);
        return Ok(());
    }
    let remaining = size - count;
    let mut popped: Vec<Vec<u8>> = Vec::with_capacity(count);
    if remaining * SPOP_MOVE_STRATEGY_MUL > count {
        for _ in 0..count {
            if let Some(m) = s.pop_random() {
                popped.push(m);
            }
        }
    } else {
        // Most of the set goes: draw the members that stay into a new set (whose
        // encoding is chosen afresh, as Redis's new set's is) and pop the rest.
        // Redis's new set: an intset from an intset, else a listpack (which converts
        // as the members drawn require).
        let mut kept = match s.encoding() {
            "intset" => Set::new(),
            _ => Set::new_listpack(),
        };
        for _ in 0..remaining {
            if let Some(m) = s.pop_random() {
                kept.insert(&m, &t);
            }
        }
        popped.extend(s.iter().map(|m| m.into_owned()));
        *s = kept;
    }
    ctx.notify(class::SET, "spop", key);
    ctx.out.set(popped.len());
    for m in &popped {
        ctx.out.bulk(m);
    }
    for m in &popped {
        ctx.propagate(&[b"SREM".as_slice(), key, m]);
    }
    ctx.modified(key);
    Ok(())
}

/// SRANDMEMBER key [count].
fn srandmember(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    match argv.len() {
        2 => {
            let (v, out) = read_value(ctx, &argv[1]);
            match as_set(v)?.and_then(|s| s.random()) {
                Some(m) => bulk_member(out, m),
                None => out.null(),
            }
            return Ok(());
        }
        3 => {}
        _ => return Err(ReplyError::Syntax),
    }
    let l = parse_count(&argv[2])?;
    let (v, out) = read_value(ctx, &argv[1]);
    let Some(s) = as_set(v)? else {
        out.array(0);
        return Ok(());
    };
    let count = l.unsigned_abs() as usize;
    let size = s.len();
    if count == 0 {
        out.array(0);
        return Ok(());
    }
    if l < 0 && count > REPEAT_LIMIT {
        return Err(OUT_OF_RANGE_ERR);
    }
    if l < 0 || count == 1 {
        out.array(count);
        for _ in 0..count {
            if let Some(m) = s.random() {
                bulk_member(out, m);
            }
        }
        return Ok(());
    }
    if count >= size {
        out.array(size);
        for m in s.members() {
            bulk_member(out, m);
        }
        return Ok(());
    }
    out.array(count);
    match &*s {
        Set::Small(_) => {
            for i in distinct_indices(size, count) {
                if let Some(m) = s.small_nth(i) {
                    bulk_member(out, m);
                }
            }
        }
        Set::Table(_) if count * SUB_STRATEGY_MUL > size => {
            let all: Vec<Member<'_>> = s.members().collect();
            for i in distinct_indices(size, count) {
                bulk_member(out, all[i]);
            }
        }
        Set::Table(_) => {
            let mut seen = std::collections::HashSet::with_capacity(count);
            while seen.len() < count {
                if let Some(Member::Bytes(b)) = s.random()
                    && seen.insert(b)
                {
                    out.bulk(b);
                }
            }
        }
    }
    Ok(())
}

/// SSCAN key cursor [MATCH pattern] [COUNT count].
fn sscan(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let cursor = super::keys::parse_scan_cursor(&argv[2])?;
    let (v, out) = read_value(ctx, &argv[1]);
    let Some(s) = as_set(v)? else {
        empty_scan(out);
        return Ok(());
    };
    let opts = parse_scan_opts(argv, false)?;
    let mut found: Vec<Vec<u8>> = Vec::new();
    let next = s.scan(cursor, opts.count, |m| {
        m.with_bytes(|b| {
            if opts
                .pattern
                .as_ref()
                .is_none_or(|p| glob_match(p, b, false))
            {
                found.push(b.to_vec());
            }
        })
    });
    out.array(2);
    out.bulk(itoa::Buffer::new().format(next).as_bytes());
    out.array(found.len());
    for m in &found {
        out.bulk(m);
    }
    Ok(())
}
