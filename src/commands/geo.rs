//! The geo family (Redis 7.0's `@geo`): GEOADD, GEODIST, GEOHASH, GEOPOS, GEOSEARCH,
//! GEOSEARCHSTORE, GEORADIUS, GEORADIUSBYMEMBER and their `_RO` forms, after Redis's
//! `geo.c`. A geo set is a plain sorted set whose scores are 52-bit geohashes
//! ([`crate::types::geohash`] draws the bits), so every sorted-set command works on it
//! and ZSCORE, DUMP and snapshots agree with Redis's.
//!
//! Replies, as Redis writes them:
//!
//! ```text
//! GEODIST, WITHDIST    bulk "166274.1516"        value * 10^4 rounded half-even, 4 decimals
//! GEOPOS, WITHCOORD    [lon, lat]                each %.17Lf, trailing zeros cut
//!                                                ("13.36138933897018433"); RESP3 `,` doubles
//! GEOHASH              bulk "sqc8b49rny0"        11 chars, the last always '0'
//! WITHHASH             integer 3479099956230698  the score
//! search result        member | [member, dist?, hash?, [lon, lat]?]   (that order)
//! ```
//!
//! A search walks the centre's cell and its neighbours in Redis's order (centre, N, S,
//! E, W, NE, NW, SE, SW; a neighbour equal to the one scanned just before is skipped),
//! each cell one score range of the set in (score, member) order, keeping the points
//! inside the shape; `COUNT n ANY` stops once `n` are found. Without ASC/DESC (and
//! without COUNT, which implies ASC unless ANY) that walk order is the reply's order;
//! sorting reproduces Redis's sorts exactly ([`sort`]), ties included.
//!
//! Effects: GEOADD changes the set as ZADD does and is propagated as the `zadd` Redis
//! rewrites it into (`zadd key [NX|XX] [CH] score member ...`, the event is `zadd`);
//! the STORE forms write through the sorted-set store path with the `georadiusstore`
//! or `geosearchstore` event, or delete the destination when nothing matched, and are
//! propagated as sent.

mod sort;

use super::zset_range::store_result;
use super::zset_score::{lookup, reply_per_member, string2d};
use super::{CommandSpec, Family, flags::*, is, keyflags, parse_i64};
use crate::core::Ctx;
use crate::core::notify::class;
use crate::error::ReplyError;
use crate::resp::writer::RespWriter;
use crate::types::geohash::{
    GEO_LAT_MAX, GEO_LAT_MIN, GEO_LONG_MAX, GEO_LONG_MIN, Shape, ShapeKind, areas_by_shape,
    coord_text, decode_score, distance, distance_text, geohash_string, score_of, scores_of_box,
};
use crate::types::{Value, ZSet};
use bytes::Bytes;

const GEOCAT: &[&str] = &["@geo"];
const SINCE: &str = "3.2.0";

/// The geo commands whose key is their first argument.
const GEO: Family = Family::new("geo").categories(GEOCAT).keys(1, 1, 1);

/// GEORADIUS's keys: the source read, the STORE/STOREDIST destination overwritten.
const RADIUS_KEYS: &[u32] = &[
    keyflags::RO | keyflags::ACCESS,
    keyflags::OW | keyflags::UPDATE,
];
/// GEOSEARCHSTORE's keys: the destination, then the source.
const SEARCHSTORE_KEYS: &[u32] = &[
    keyflags::OW | keyflags::UPDATE,
    keyflags::RO | keyflags::ACCESS,
];

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    GEO.row("geoadd", -5, WRITE | DENYOOM, "Adds one or more members to a geospatial index. The key is created if it doesn't exist.", SINCE, geoadd),
    GEO.row("geodist", -4, READONLY, "Returns the distance between two members of a geospatial index.", SINCE, geodist),
    GEO.row("geohash", -2, READONLY, "Returns members from a geospatial index as geohash strings.", SINCE, geohash),
    GEO.row("geopos", -2, READONLY, "Returns the longitude and latitude of members from a geospatial index.", SINCE, geopos),
    GEO.row("georadius", -6, WRITE | DENYOOM | MOVABLEKEYS, "Queries a geospatial index for members within a distance from a coordinate, optionally stores the result.", SINCE, georadius).with_key_flags(RADIUS_KEYS),
    GEO.row("georadius_ro", -6, READONLY, "Returns members from a geospatial index that are within a distance from a coordinate.", "3.2.10", georadius_ro),
    GEO.row("georadiusbymember", -5, WRITE | DENYOOM | MOVABLEKEYS, "Queries a geospatial index for members within a distance from a member, optionally stores the result.", SINCE, georadiusbymember).with_key_flags(RADIUS_KEYS),
    GEO.row("georadiusbymember_ro", -5, READONLY, "Returns members from a geospatial index that are within a distance from a member.", "3.2.10", georadiusbymember_ro),
    GEO.row("geosearch", -7, READONLY, "Queries a geospatial index for members inside an area of a box or a circle.", "6.2.0", geosearch),
    GEO.row("geosearchstore", -8, WRITE | DENYOOM, "Queries a geospatial index for members inside an area of a box or a circle, optionally stores the result.", "6.2.0", geosearchstore).keys(1, 2, 1).with_key_flags(SEARCHSTORE_KEYS),
];

const NOT_A_FLOAT: ReplyError = ReplyError::msg("ERR value is not a valid float");
const BAD_UNIT: ReplyError =
    ReplyError::msg("ERR unsupported unit provided. please use M, KM, FT, MI");
const NO_MEMBER: ReplyError = ReplyError::msg("ERR could not decode requested zset member");

// ---- argument helpers ---------------------------------------------------------------

/// A longitude and a latitude inside the indexable box (Redis:
/// `extractLongLatOrReply`).
fn parse_lonlat(lon: &[u8], lat: &[u8]) -> Result<[f64; 2], ReplyError> {
    let lon = string2d(lon).ok_or(NOT_A_FLOAT)?;
    let lat = string2d(lat).ok_or(NOT_A_FLOAT)?;
    if !(GEO_LONG_MIN..=GEO_LONG_MAX).contains(&lon) || !(GEO_LAT_MIN..=GEO_LAT_MAX).contains(&lat)
    {
        return Err(ReplyError::owned(format!(
            "ERR invalid longitude,latitude pair {lon:.6},{lat:.6}"
        )));
    }
    Ok([lon, lat])
}

/// Meters per unit (Redis: `extractUnitOrReply`).
fn parse_unit(u: &[u8]) -> Result<f64, ReplyError> {
    if is(u, "m") {
        Ok(1.0)
    } else if is(u, "km") {
        Ok(1000.0)
    } else if is(u, "ft") {
        Ok(0.3048)
    } else if is(u, "mi") {
        Ok(1609.34)
    } else {
        Err(BAD_UNIT)
    }
}

/// `radius unit`: the radius and meters per unit (Redis: `extractDistanceOrReply`).
fn parse_distance(radius: &[u8], unit: &[u8]) -> Result<(f64, f64), ReplyError> {
    let r = string2d(radius).ok_or(ReplyError::msg("ERR need numeric radius"))?;
    if r < 0.0 {
        return Err(ReplyError::msg("ERR radius cannot be negative"));
    }
    Ok((r, parse_unit(unit)?))
}

/// `width height unit` (Redis: `extractBoxOrReply`).
fn parse_box(w: &[u8], h: &[u8], unit: &[u8]) -> Result<(f64, f64, f64), ReplyError> {
    let w = string2d(w).ok_or(ReplyError::msg("ERR need numeric width"))?;
    let h = string2d(h).ok_or(ReplyError::msg("ERR need numeric height"))?;
    if h < 0.0 || w < 0.0 {
        return Err(ReplyError::msg("ERR height or width cannot be negative"));
    }
    Ok((w, h, parse_unit(unit)?))
}

/// C's `(long long)` conversion of a score (WITHHASH): truncation, `LLONG_MIN` out of
/// range (x86-64's `cvttsd2si`).
fn score_as_i64(score: f64) -> i64 {
    if score.is_nan() || !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&score) {
        i64::MIN
    } else {
        score as i64
    }
}

/// Writes a position as Redis's `addReplyHumanLongDouble` twice.
fn reply_coords(ctx_out: &mut RespWriter, xy: [f64; 2]) {
    ctx_out.array(2);
    ctx_out.double_text(coord_text(xy[0]).as_bytes());
    ctx_out.double_text(coord_text(xy[1]).as_bytes());
}

// ---- GEOADD -------------------------------------------------------------------------

/// `GEOADD key [NX|XX] [CH] longitude latitude member [...]` (Redis: `geoaddCommand`,
/// which checks the options and every coordinate, then runs ZADD on the scores).
fn geoadd(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let key = &argv[1];
    let (mut nx, mut xx, mut ch) = (false, false, false);
    let mut longidx = 2;
    while longidx < argv.len() {
        let o = &argv[longidx];
        if is(o, "nx") {
            nx = true;
        } else if is(o, "xx") {
            xx = true;
        } else if is(o, "ch") {
            ch = true;
        } else {
            break;
        }
        longidx += 1;
    }
    if !(argv.len() - longidx).is_multiple_of(3) || (xx && nx) {
        return Err(ReplyError::Syntax);
    }
    let elements = (argv.len() - longidx) / 3;
    if elements == 0 {
        // ZADD's own check on the rewritten command.
        return Err(ReplyError::Syntax);
    }
    let mut scores = Vec::with_capacity(elements);
    for i in 0..elements {
        let at = longidx + 3 * i;
        let [lon, lat] = parse_lonlat(&argv[at], &argv[at + 1])?;
        scores.push(score_of(lon, lat).unwrap_or(0));
    }
    let members = || (0..elements).map(|i| &argv[longidx + 3 * i + 2][..]);
    let t = ctx.core.thresholds;
    let apply = |z: &mut ZSet| {
        let (mut added, mut updated) = (0i64, 0i64);
        for (m, &s) in members().zip(&scores) {
            let score = s as f64;
            match z.score(m) {
                Some(_) if nx => {}
                Some(cur) => {
                    if cur != score {
                        z.insert(m, score, &t);
                        updated += 1;
                    }
                }
                None if xx => {}
                None => {
                    z.insert(m, score, &t);
                    added += 1;
                }
            }
        }
        z.compact();
        (added, updated)
    };
    let (z, _) = lookup(ctx, key);
    let (added, updated) = match z? {
        Some(z) => apply(z),
        None if xx => (0, 0),
        None => {
            let mut z = ZSet::new();
            let counts = apply(&mut z);
            if counts.0 > 0 {
                ctx.db().insert(key, Value::ZSet(Box::new(z)));
                ctx.notify(class::NEW, "new", key);
                ctx.signal_ready(key);
            }
            counts
        }
    };
    if added + updated > 0 {
        if ctx.propagates() {
            // Redis rewrites the command into the ZADD that did the work.
            let mut effect: Vec<Bytes> = Vec::with_capacity(longidx + 2 * elements);
            effect.push(Bytes::from_static(b"zadd"));
            effect.extend(argv[1..longidx].iter().cloned());
            for (m, s) in members().zip(&scores) {
                effect.push(Bytes::from(s.to_string()));
                effect.push(Bytes::copy_from_slice(m));
            }
            ctx.collection_written(class::ZSET, "zadd", key, false, &effect);
        } else {
            ctx.collection_changed(class::ZSET, "zadd", key, false);
        }
    }
    ctx.out.integer(if ch { added + updated } else { added });
    Ok(())
}

// ---- GEODIST, GEOHASH, GEOPOS ----------------------------------------------------------

/// `GEODIST key member1 member2 [M|KM|FT|MI]`
fn geodist(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let to_meter = match argv.len() {
        5 => parse_unit(&argv[4])?,
        n if n > 5 => return Err(ReplyError::Syntax),
        _ => 1.0,
    };
    let (z, out) = lookup(ctx, &argv[1]);
    let Some(z) = z? else {
        out.null();
        return Ok(());
    };
    match (z.score(&argv[2]), z.score(&argv[3])) {
        (Some(a), Some(b)) => {
            let (p, q) = (decode_score(a), decode_score(b));
            let d = distance(p[0], p[1], q[0], q[1]) / to_meter;
            out.bulk(distance_text(d).as_bytes());
        }
        _ => out.null(),
    }
    Ok(())
}

/// `GEOHASH key [member ...]`
fn geohash(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    reply_per_member(ctx, |out, s| out.bulk(&geohash_string(s)), RespWriter::null)
}

/// `GEOPOS key [member ...]`
fn geopos(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    reply_per_member(
        ctx,
        |out, s| reply_coords(out, decode_score(s)),
        RespWriter::null_array,
    )
}

// ---- the searches ---------------------------------------------------------------------

/// Which search command runs (Redis: `georadiusGeneric`'s flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// GEORADIUS / GEORADIUS_RO: centre and radius are positional.
    Coords,
    /// GEORADIUSBYMEMBER / _RO: a member and a radius are positional.
    Member,
    /// GEOSEARCH: FROM... and BY... options.
    Search,
    /// GEOSEARCHSTORE: GEOSEARCH storing into its first key.
    SearchStore,
}

/// Result order (Redis: `SORT_NONE`, `SORT_ASC`, `SORT_DESC`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    None,
    Asc,
    Desc,
}

/// A parsed search.
#[derive(Debug)]
struct Query {
    shape: Shape,
    /// Argument index of the destination key (STORE, STOREDIST, GEOSEARCHSTORE).
    store: Option<usize>,
    storedist: bool,
    withdist: bool,
    withhash: bool,
    withcoord: bool,
    order: Order,
    any: bool,
    /// 0: no COUNT.
    count: usize,
}

/// One point found (Redis: `geoPoint`).
#[derive(Debug, Clone)]
struct Point {
    xy: [f64; 2],
    /// Meters from the centre.
    dist: f64,
    score: f64,
    member: Vec<u8>,
}

/// Parses a search's arguments as `georadiusGeneric` does, looking the centre member
/// up in `z` (the source set; `None` when the key does not exist, in which case the
/// member is not looked up and, for GEORADIUSBYMEMBER, the radius not parsed).
fn parse_query(
    argv: &[Bytes],
    kind: Kind,
    nostore: bool,
    z: Option<&ZSet>,
) -> Result<Query, ReplyError> {
    let member_xy = |m: &[u8]| -> Result<[f64; 2], ReplyError> {
        let s = z.and_then(|z| z.score(m)).ok_or(NO_MEMBER)?;
        Ok(decode_score(s))
    };
    let mut q = Query {
        shape: Shape {
            xy: [0.0, 0.0],
            conversion: 0.0,
            kind: ShapeKind::Radius(0.0),
        },
        store: None,
        storedist: false,
        withdist: false,
        withhash: false,
        withcoord: false,
        order: Order::None,
        any: false,
        count: 0,
    };
    let base = match kind {
        Kind::Coords => {
            q.shape.xy = parse_lonlat(&argv[2], &argv[3])?;
            let (r, conv) = parse_distance(&argv[4], &argv[5])?;
            q.shape.kind = ShapeKind::Radius(r);
            q.shape.conversion = conv;
            6
        }
        Kind::Member if z.is_none() => 5,
        Kind::Member => {
            q.shape.xy = member_xy(&argv[2])?;
            let (r, conv) = parse_distance(&argv[3], &argv[4])?;
            q.shape.kind = ShapeKind::Radius(r);
            q.shape.conversion = conv;
            5
        }
        Kind::Search => 2,
        Kind::SearchStore => {
            q.store = Some(1);
            3
        }
    };
    let search = matches!(kind, Kind::Search | Kind::SearchStore);
    let (mut frommember, mut fromloc, mut byradius, mut bybox) = (false, false, false, false);
    let remaining = argv.len().saturating_sub(base);
    let mut i = 0;
    while i < remaining {
        let arg = &argv[base + i];
        let more = |n: usize| i + n < remaining;
        if is(arg, "withdist") {
            q.withdist = true;
        } else if is(arg, "withhash") {
            q.withhash = true;
        } else if is(arg, "withcoord") {
            q.withcoord = true;
        } else if is(arg, "any") {
            q.any = true;
        } else if is(arg, "asc") {
            q.order = Order::Asc;
        } else if is(arg, "desc") {
            q.order = Order::Desc;
        } else if is(arg, "count") && more(1) {
            let c = parse_i64(&argv[base + i + 1])?;
            if c <= 0 {
                return Err(ReplyError::msg("ERR COUNT must be > 0"));
            }
            q.count = usize::try_from(c).unwrap_or(usize::MAX);
            i += 1;
        } else if (is(arg, "store") || is(arg, "storedist")) && more(1) && !nostore && !search {
            q.store = Some(base + i + 1);
            q.storedist = is(arg, "storedist");
            i += 1;
        } else if is(arg, "storedist") && kind == Kind::SearchStore {
            q.storedist = true;
        } else if is(arg, "frommember") && more(1) && search && !fromloc {
            if z.is_some() {
                q.shape.xy = member_xy(&argv[base + i + 1])?;
            }
            frommember = true;
            i += 1;
        } else if is(arg, "fromlonlat") && more(2) && search && !frommember {
            q.shape.xy = parse_lonlat(&argv[base + i + 1], &argv[base + i + 2])?;
            fromloc = true;
            i += 2;
        } else if is(arg, "byradius") && more(2) && search && !bybox {
            let (r, conv) = parse_distance(&argv[base + i + 1], &argv[base + i + 2])?;
            q.shape.kind = ShapeKind::Radius(r);
            q.shape.conversion = conv;
            byradius = true;
            i += 2;
        } else if is(arg, "bybox") && more(3) && search && !byradius {
            let (width, height, conv) = parse_box(
                &argv[base + i + 1],
                &argv[base + i + 2],
                &argv[base + i + 3],
            )?;
            q.shape.kind = ShapeKind::Box { width, height };
            q.shape.conversion = conv;
            bybox = true;
            i += 3;
        } else {
            return Err(ReplyError::Syntax);
        }
        i += 1;
    }
    if q.store.is_some() && (q.withdist || q.withhash || q.withcoord) {
        let what = if kind == Kind::SearchStore {
            "GEOSEARCHSTORE"
        } else {
            "STORE option in GEORADIUS"
        };
        return Err(ReplyError::owned(format!(
            "ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        )));
    }
    let name = String::from_utf8_lossy(&argv[0]);
    if search && !(frommember || fromloc) {
        return Err(ReplyError::owned(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
        )));
    }
    if search && !(byradius || bybox) {
        return Err(ReplyError::owned(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {name}"
        )));
    }
    if q.any && q.count == 0 {
        return Err(ReplyError::msg(
            "ERR the ANY argument requires COUNT argument",
        ));
    }
    Ok(q)
}

/// The points of `z` inside the query's shape, in Redis's walk order, stopping at
/// `limit` points when nonzero (Redis: `membersOfAllNeighbors`).
fn find_points(z: &ZSet, shape: &Shape, limit: usize) -> Vec<Point> {
    let cells = areas_by_shape(shape).walk_order();
    let mut found = Vec::new();
    let full = |found: &Vec<Point>| !found.is_empty() && limit > 0 && found.len() >= limit;
    // Redis compares a cell with the last one scanned only when that was not the
    // centre (its index 0 doubles as "none yet").
    let mut last_processed = 0usize;
    for (i, cell) in cells.iter().enumerate() {
        if cell.is_zero() {
            continue;
        }
        if last_processed != 0 && *cell == cells[last_processed] {
            continue;
        }
        if full(&found) {
            break;
        }
        let (min, max) = scores_of_box(*cell);
        let (min, max) = (min as f64, max as f64);
        let start = z.partition_point(|_, s| s < min);
        for (m, s) in z.range(start, z.len(), false) {
            if s >= max {
                break;
            }
            let xy = decode_score(s);
            if let Some(dist) = shape.contains(xy[0], xy[1]) {
                found.push(Point {
                    xy,
                    dist,
                    score: s,
                    member: m.to_vec(),
                });
            }
            if full(&found) {
                break;
            }
        }
        last_processed = i;
    }
    found
}

/// Redis's `sort_gp_asc`.
fn cmp_asc(a: &Point, b: &Point) -> i32 {
    if a.dist > b.dist {
        1
    } else if a.dist == b.dist {
        0
    } else {
        -1
    }
}

/// Redis's `sort_gp_desc`.
fn cmp_desc(a: &Point, b: &Point) -> i32 {
    -cmp_asc(a, b)
}

/// The searches' common path (Redis: `georadiusGeneric`): `src` is the source key's
/// argument index, `nostore` refuses STORE/STOREDIST (the `_RO` forms).
fn search_generic(
    ctx: &mut Ctx<'_>,
    src: usize,
    kind: Kind,
    nostore: bool,
) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (z, _) = lookup(ctx, &argv[src]);
    let z: Option<&ZSet> = z?.map(|z| &*z);
    let q = parse_query(argv, kind, nostore, z)?;
    let Some(z) = z else {
        match q.store {
            Some(dst) => delete_destination(ctx, &argv[dst]),
            None => ctx.out.array(0),
        }
        return Ok(());
    };
    let mut order = q.order;
    if q.count != 0 && order == Order::None && !q.any {
        order = Order::Asc;
    }
    let mut points = find_points(z, &q.shape, if q.any { q.count } else { 0 });
    if points.is_empty() && q.store.is_none() {
        ctx.out.array(0);
        return Ok(());
    }
    let returned = if q.count == 0 {
        points.len()
    } else {
        points.len().min(q.count)
    };
    if order != Order::None {
        let cmp = if order == Order::Asc {
            cmp_asc
        } else {
            cmp_desc
        };
        if returned == points.len() {
            sort::merge_sort(&mut points, &cmp);
        } else if returned > 0 {
            sort::pqsort(&mut points, &cmp, 0, returned - 1);
        }
    }
    points.truncate(returned);
    let conversion = q.shape.conversion;
    match q.store {
        None => {
            let opts = usize::from(q.withdist) + usize::from(q.withhash) + usize::from(q.withcoord);
            let out = &mut *ctx.out;
            out.array(returned);
            for p in &points {
                if opts > 0 {
                    out.array(opts + 1);
                }
                out.bulk(&p.member);
                if q.withdist {
                    out.bulk(distance_text(p.dist / conversion).as_bytes());
                }
                if q.withhash {
                    out.integer(score_as_i64(p.score));
                }
                if q.withcoord {
                    reply_coords(out, p.xy);
                }
            }
        }
        Some(dst) if returned > 0 => {
            let items: Vec<(Vec<u8>, f64)> = points
                .into_iter()
                .map(|p| {
                    let score = if q.storedist {
                        p.dist / conversion
                    } else {
                        p.score
                    };
                    (p.member, score)
                })
                .collect();
            let event = if matches!(kind, Kind::Search | Kind::SearchStore) {
                "geosearchstore"
            } else {
                "georadiusstore"
            };
            store_result(ctx, &argv[dst], items, event);
            // Redis counts one change per stored member.
            ctx.core.dirty += returned as u64 - 1;
        }
        Some(dst) => delete_destination(ctx, &argv[dst]),
    }
    Ok(())
}

/// A store that found nothing: the destination is deleted (Redis's `dbDelete`, no
/// expiry check first), the change counted and the command propagated if it existed;
/// the reply is 0.
fn delete_destination(ctx: &mut Ctx<'_>, dst: &[u8]) {
    if ctx.delete_key(dst) {
        ctx.core.dirty += 1;
        ctx.propagate(ctx.argv);
    }
    ctx.out.integer(0);
}

/// `GEORADIUS key longitude latitude radius unit [WITHCOORD] [WITHDIST] [WITHHASH]
/// [COUNT count [ANY]] [ASC|DESC] [STORE key|STOREDIST key]`
fn georadius(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    search_generic(ctx, 1, Kind::Coords, false)
}

/// `GEORADIUS_RO`: GEORADIUS without STORE.
fn georadius_ro(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    search_generic(ctx, 1, Kind::Coords, true)
}

/// `GEORADIUSBYMEMBER key member radius unit [options as GEORADIUS]`
fn georadiusbymember(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    search_generic(ctx, 1, Kind::Member, false)
}

/// `GEORADIUSBYMEMBER_RO`: GEORADIUSBYMEMBER without STORE.
fn georadiusbymember_ro(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    search_generic(ctx, 1, Kind::Member, true)
}

/// `GEOSEARCH key FROMMEMBER m|FROMLONLAT lon lat BYRADIUS r unit|BYBOX w h unit
/// [ASC|DESC] [COUNT count [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH]`
fn geosearch(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    search_generic(ctx, 1, Kind::Search, false)
}

/// `GEOSEARCHSTORE destination source ... [STOREDIST]`
fn geosearchstore(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    search_generic(ctx, 2, Kind::SearchStore, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_convert_as_c_does() {
        assert_eq!(score_as_i64(3_479_099_956_230_698.0), 3_479_099_956_230_698);
        assert_eq!(score_as_i64(-1.5), -1);
        assert_eq!(score_as_i64(1e19), i64::MIN);
        assert_eq!(score_as_i64(f64::NEG_INFINITY), i64::MIN);
    }

    #[test]
    fn arguments_are_checked_as_redis_checks_them() {
        assert!(parse_lonlat(b"180", b"85.05112878").is_ok());
        let e = parse_lonlat(b"200", b"1").err().map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("ERR invalid longitude,latitude pair 200.000000,1.000000")
        );
        assert_eq!(parse_unit(b"KM").ok(), Some(1000.0));
        assert!(parse_unit(b"yd").is_err());
        assert!(parse_distance(b"-1", b"m").is_err());
        assert_eq!(parse_box(b"2", b"4", b"ft").ok(), Some((2.0, 4.0, 0.3048)));
    }
}
