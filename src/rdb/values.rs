//! Strings, lists, hashes, sets and sorted sets in Redis's RDB format: [`write`] for
//! DUMP payloads and full-sync files, [`read`] for RESTORE, `--import-rdb` and a
//! streamd replica's full sync from a Redis.
//!
//! Written in the plain encodings every Redis since 2.x reads (a Redis 7.0 converts them
//! to its compact encodings itself when they are small enough):
//!
//! ```text
//! type 0  string      <string>
//! type 1  list        <n: len> n × <element: string>              head first
//! type 2  set         <n: len> n × <member: string>
//! type 4  hash        <n: len> n × ( <field: string> <value: string> )
//! type 5  zset (2)    <n: len> n × ( <member: string> <score: f64 LE, 8 bytes> )
//! ```
//!
//! Read in every encoding a Redis 2.0 to 8.x writes for these types (`<blob>` is one
//! RDB string, so it may itself be LZF-compressed; the blob formats are drawn in
//! `listpack.rs`, `ziplist.rs`, `intset.rs`, `zipmap.rs`):
//!
//! ```text
//! type 0   string           <string>: plain, integer-encoded (8/16/32-bit) or LZF
//! type 1   list             as above
//! type 10  list ziplist     <blob: ziplist of elements>                    (2.6–3.0)
//! type 14  list quicklist   <n: len> n × <blob: ziplist>                   (3.2–6.2)
//! type 18  list quicklist 2 <n: len> n × ( <container: len> <blob> )       (7.0+)
//!                             container 1 PLAIN: the blob is one element
//!                             container 2 PACKED: the blob is a listpack of elements
//! type 2   set              as above
//! type 11  set intset       <blob: intset>
//! type 20  set listpack     <blob: listpack of members>                    (7.2+)
//! type 3   zset             <n: len> n × ( <member: string> <score> )      (before 3.0)
//!                             score = <u8 n> n ASCII bytes, or 253 NaN, 254 +inf, 255 -inf
//! type 5   zset 2           as above
//! type 12  zset ziplist     <blob: ziplist of member, score, member, score ...>
//! type 17  zset listpack    <blob: listpack of member, score, ...>         (7.0+)
//!                             a score element is an integer or a double's text
//! type 4   hash             as above
//! type 9   hash zipmap      <blob: zipmap>                                 (2.0–2.4)
//! type 13  hash ziplist     <blob: ziplist of field, value, field, value ...>
//! type 16  hash listpack    <blob: listpack of field, value, ...>          (7.0+)
//! type 22  hash with field TTLs, 7.4 release candidates:
//!                           <n: len> n × ( <expire at: len, 0 = none> <field> <value> )
//! type 24  hash with field TTLs (7.4+):
//!                           <min expire: ms time> <n: len>
//!                           n × ( <ttl: len> <field: string> <value: string> )
//!                             ttl 0 = no TTL, else the field expires at ttl + min - 1
//! type 23  listpack hash with field TTLs, 7.4 release candidates:
//!                           <blob: listpack of field, value, expire-at (0 = none) ...>
//! type 25  listpack hash with field TTLs (7.4+): <min expire: ms time> then as 23
//! ```
//!
//! **Field TTLs (types 22–25).** streamd's hashes are Redis 7.0's, which have no field
//! expiry, so what a Redis 7.4 user sees at the moment of the load is what is kept: a
//! field whose TTL has already passed is dropped (a Redis hides it from then on), every
//! other field is kept *without* its TTL (it no longer expires; an `HPERSIST` of every
//! field, in 7.4 terms). A hash whose every field has expired loads as an expired key
//! (skipped, counted with the expired keys). Dropping the data instead would lose what
//! the user stored; keeping expired fields would resurrect what Redis already hides.
//!
//! A collection with no elements (possible in a hand-made or corrupt file) is
//! [`Loaded::Empty`]: `--import-rdb` skips the key as Redis's loader does, RESTORE
//! refuses it (`Bad data format`, as Redis). Duplicates (a set member, hash field or
//! sorted-set member twice) and NaN scores are refused, as Redis's deep sanitization
//! refuses them: a value is loaded exactly or not at all.

use super::listpack::{self, Elem};
use super::write::{len, string};
use super::{RdbError, Reader, intset, types, ziplist, zipmap};
use crate::types::{Hash, List, Set, StringValue, Thresholds, Value, ZSet};

/// RDB type numbers of the plain encodings (`rdb.h`).
pub mod plain {
    /// `RDB_TYPE_STRING`
    pub const STRING: u8 = 0;
    /// `RDB_TYPE_LIST`
    pub const LIST: u8 = 1;
    /// `RDB_TYPE_SET`
    pub const SET: u8 = 2;
    /// `RDB_TYPE_HASH`
    pub const HASH: u8 = 4;
    /// `RDB_TYPE_ZSET_2`
    pub const ZSET_2: u8 = 5;
}

/// Appends the value's type byte, then (when `key` is given, as in a file) the key, then
/// the value. Streams are written by `rdb/stream.rs`; here they write nothing.
pub fn write(out: &mut Vec<u8>, key: Option<&[u8]>, value: &Value) {
    let kind = match value {
        Value::String(_) => plain::STRING,
        Value::List(_) => plain::LIST,
        Value::Set(_) => plain::SET,
        Value::Hash(_) => plain::HASH,
        Value::ZSet(_) => plain::ZSET_2,
        Value::Stream(_) => return,
    };
    out.push(kind);
    if let Some(key) = key {
        string(out, key);
    }
    match value {
        Value::String(s) => string(out, &s.to_bytes()),
        Value::List(l) => {
            len(out, l.len() as u64);
            for e in l.iter() {
                string(out, &e);
            }
        }
        Value::Set(s) => {
            len(out, s.len() as u64);
            for m in s.iter() {
                string(out, &m);
            }
        }
        Value::Hash(h) => {
            len(out, h.len() as u64);
            for (f, v) in h.iter() {
                string(out, &f);
                string(out, &v);
            }
        }
        Value::ZSet(z) => {
            len(out, z.len() as u64);
            for (m, score) in z.iter() {
                string(out, &m);
                out.extend_from_slice(&score.to_le_bytes());
            }
        }
        Value::Stream(_) => {}
    }
}

/// What reading one value gave.
#[derive(Debug)]
pub enum Loaded {
    /// The value.
    Value(Value),
    /// A collection with no elements (Redis skips such keys when loading, and refuses
    /// them in RESTORE).
    Empty,
    /// A hash whose every field had a field TTL that already passed (types 22–25).
    Expired,
}

/// True for the type numbers [`read`] reads (all but streams, modules and arrays).
pub fn is_value_type(t: u8) -> bool {
    matches!(t, 0..=5 | 9..=14 | 16..=18 | 20 | 22..=25)
}

/// Reads one value of RDB type `t` (the type byte and key already read); `now_ms`
/// decides which hash fields' TTLs have passed (types 22–25). Collections are built
/// through the types' own insertion API with `th`. Every element is checked: a
/// duplicate set member, hash field or sorted-set member, a NaN score, a listpack,
/// ziplist, intset or zipmap that fails its validation, or a blob with bytes left over
/// is an error at the offset of the value's part that failed.
pub fn read(r: &mut Reader<'_>, t: u8, th: &Thresholds, now_ms: u64) -> Result<Loaded, RdbError> {
    let at = r.offset();
    let v = match t {
        types::STRING => Value::String(StringValue::new(&r.string()?)),
        1 => {
            let n = r.length()?;
            let mut l = List::new();
            for _ in 0..n {
                l.push_back(&r.string()?, th);
            }
            list(l)
        }
        10 => {
            let blob = r.string()?;
            let mut l = List::new();
            for e in zl(&blob, at)? {
                l.push_back(&e.to_bytes(), th);
            }
            list(l)
        }
        14 => {
            let n = r.length()?;
            let mut l = List::new();
            for _ in 0..n {
                let at = r.offset();
                let blob = r.string()?;
                for e in zl(&blob, at)? {
                    l.push_back(&e.to_bytes(), th);
                }
            }
            list(l)
        }
        18 => {
            let n = r.length()?;
            let mut l = List::new();
            for _ in 0..n {
                let at = r.offset();
                match r.length()? {
                    QUICKLIST_PLAIN => l.push_back(&r.string()?, th),
                    QUICKLIST_PACKED => {
                        let at = r.offset();
                        let blob = r.string()?;
                        for e in lp(&blob, at)? {
                            l.push_back(&e.to_bytes(), th);
                        }
                    }
                    _ => return Err(bad(at, "unknown quicklist node container")),
                }
            }
            list(l)
        }
        2 => {
            let n = r.length()?;
            let mut s = Set::new();
            for _ in 0..n {
                let at = r.offset();
                if !s.insert(&r.string()?, th) {
                    return Err(bad(at, "duplicate set member"));
                }
            }
            set(s)
        }
        11 => {
            let blob = r.string()?;
            let mut s = Set::new();
            let vals = intset::values(&blob).map_err(|e| bad(at, e.0))?;
            let mut buf = itoa::Buffer::new();
            for v in vals {
                s.insert(buf.format(v).as_bytes(), th);
            }
            set(s)
        }
        20 => {
            let blob = r.string()?;
            let mut s = Set::new();
            for e in lp(&blob, at)? {
                if !s.insert(&e.to_bytes(), th) {
                    return Err(bad(at, "duplicate set member"));
                }
            }
            set(s)
        }
        3 | 5 => {
            let n = r.length()?;
            let mut z = ZSet::new();
            for _ in 0..n {
                let at = r.offset();
                let member = r.string()?;
                let score = if t == 5 {
                    f64::from_le_bytes(r.array()?)
                } else {
                    text_double(r)?
                };
                add_scored(&mut z, &member, score, th, at)?;
            }
            zset(z)
        }
        12 | 17 => {
            let blob = r.string()?;
            let els = if t == 12 { zl(&blob, at)? } else { lp(&blob, at)? };
            if els.len() % 2 != 0 {
                return Err(bad(at, "sorted set with a member without a score"));
            }
            let mut z = ZSet::new();
            for pair in els.chunks_exact(2) {
                let score = elem_score(&pair[1]).ok_or_else(|| bad(at, "bad sorted set score"))?;
                add_scored(&mut z, &pair[0].to_bytes(), score, th, at)?;
            }
            zset(z)
        }
        4 => {
            let n = r.length()?;
            let mut h = Hash::new();
            for _ in 0..n {
                let at = r.offset();
                let f = r.string()?;
                let v = r.string()?;
                add_field(&mut h, &f, &v, th, at)?;
            }
            hash(h)
        }
        9 => {
            let blob = r.string()?;
            let mut h = Hash::new();
            for (f, v) in zipmap::pairs(&blob).map_err(|e| bad(at, e.what))? {
                add_field(&mut h, f, v, th, at)?;
            }
            hash(h)
        }
        13 | 16 => {
            let blob = r.string()?;
            let els = if t == 13 { zl(&blob, at)? } else { lp(&blob, at)? };
            if els.len() % 2 != 0 {
                return Err(bad(at, "hash with a field without a value"));
            }
            let mut h = Hash::new();
            for pair in els.chunks_exact(2) {
                add_field(&mut h, &pair[0].to_bytes(), &pair[1].to_bytes(), th, at)?;
            }
            hash(h)
        }
        22 | 24 => {
            let min_expire = if t == 24 {
                let m = r.ms_time()? as u64;
                if m > FIELD_EXPIRE_MAX && m != FIELD_EXPIRE_NONE {
                    return Err(bad(at, "invalid minimum field expiry"));
                }
                Some(m)
            } else {
                None
            };
            let n = r.length()?;
            let mut h = Hash::new();
            let mut expired = 0u64;
            for _ in 0..n {
                let at = r.offset();
                let ttl = r.length()?;
                let expire_at = match (ttl, min_expire) {
                    (0, _) => 0,
                    (ttl, Some(min)) => ttl.checked_add(min).map_or(u64::MAX, |e| e - 1),
                    (ttl, None) => ttl,
                };
                if expire_at > FIELD_EXPIRE_MAX {
                    return Err(bad(at, "invalid field expiry time"));
                }
                let f = r.string()?;
                let v = r.string()?;
                if expire_at != 0 && expire_at <= now_ms {
                    expired += 1;
                    continue;
                }
                add_field(&mut h, &f, &v, th, at)?;
            }
            if h.is_empty() && expired > 0 {
                return Ok(Loaded::Expired);
            }
            hash(h)
        }
        23 | 25 => {
            if t == 25 {
                r.ms_time()?;
            }
            let at = r.offset();
            let blob = r.string()?;
            let els = lp(&blob, at)?;
            if els.len() % 3 != 0 {
                return Err(bad(at, "hash with field TTLs that is not field, value, TTL triplets"));
            }
            let mut h = Hash::new();
            let mut expired = 0u64;
            for triplet in els.chunks_exact(3) {
                let expire_at = match triplet[2] {
                    Elem::Int(e) if (0..=FIELD_EXPIRE_MAX as i64).contains(&e) => e as u64,
                    _ => return Err(bad(at, "invalid field expiry time")),
                };
                if expire_at != 0 && expire_at <= now_ms {
                    expired += 1;
                    continue;
                }
                add_field(&mut h, &triplet[0].to_bytes(), &triplet[1].to_bytes(), th, at)?;
            }
            if h.is_empty() && expired > 0 {
                return Ok(Loaded::Expired);
            }
            hash(h)
        }
        _ => {
            return Err(bad(
                at,
                format!("RDB type {t} ({}) is not a string or collection", types::name(t)),
            ));
        }
    };
    Ok(match v {
        Value::List(ref l) if l.is_empty() => Loaded::Empty,
        Value::Set(ref s) if s.is_empty() => Loaded::Empty,
        Value::Hash(ref h) if h.is_empty() => Loaded::Empty,
        Value::ZSet(ref z) if z.is_empty() => Loaded::Empty,
        v => Loaded::Value(v),
    })
}

/// Quicklist 2 node containers (`quicklist.h`).
const QUICKLIST_PLAIN: u64 = 1;
const QUICKLIST_PACKED: u64 = 2;
/// Largest field expiry time Redis 7.4 accepts (`EB_EXPIRE_TIME_MAX`, 2^48 - 1 ms).
const FIELD_EXPIRE_MAX: u64 = (1 << 48) - 1;
/// "No field expires" as type 24's minimum (`EB_EXPIRE_TIME_INVALID`, 2^48).
const FIELD_EXPIRE_NONE: u64 = 1 << 48;

fn bad(at: u64, what: impl Into<std::borrow::Cow<'static, str>>) -> RdbError {
    RdbError {
        offset: at,
        what: what.into(),
    }
}

fn list(l: List) -> Value {
    Value::List(Box::new(l))
}

fn set(s: Set) -> Value {
    Value::Set(Box::new(s))
}

fn hash(h: Hash) -> Value {
    Value::Hash(Box::new(h))
}

fn zset(z: ZSet) -> Value {
    Value::ZSet(Box::new(z))
}

/// The elements of a ziplist blob that starts at `at`.
fn zl(blob: &[u8], at: u64) -> Result<Vec<Elem<'_>>, RdbError> {
    ziplist::entries(blob).map_err(|e| bad(at, format!("{} (ziplist byte {})", e.what, e.offset)))
}

/// The elements of a listpack blob that starts at `at`.
fn lp(blob: &[u8], at: u64) -> Result<Vec<Elem<'_>>, RdbError> {
    let err = |e: listpack::LpError| bad(at, format!("{} (listpack byte {})", e.what, e.offset));
    let mut d = listpack::Decoder::new(blob).map_err(err)?;
    let mut v = Vec::new();
    while let Some(e) = d.next_elem().map_err(err)? {
        v.push(e);
    }
    Ok(v)
}

fn add_field(h: &mut Hash, f: &[u8], v: &[u8], th: &Thresholds, at: u64) -> Result<(), RdbError> {
    if h.insert(f, v, th) {
        Ok(())
    } else {
        Err(bad(at, "duplicate hash field"))
    }
}

fn add_scored(z: &mut ZSet, m: &[u8], score: f64, th: &Thresholds, at: u64) -> Result<(), RdbError> {
    if score.is_nan() {
        return Err(bad(at, "sorted set score is NaN"));
    }
    if z.score(m).is_some() {
        return Err(bad(at, "duplicate sorted set member"));
    }
    z.insert(m, score, th);
    Ok(())
}

/// A score inside a ziplist or listpack: an integer, or the text of a double.
fn elem_score(e: &Elem<'_>) -> Option<f64> {
    match e {
        Elem::Int(i) => Some(*i as f64),
        Elem::Str(s) => parse_double(s),
    }
}

/// A double's text as Redis writes it (`%.17g`, `inf`, `-inf`); NaN is refused.
fn parse_double(s: &[u8]) -> Option<f64> {
    let v: f64 = std::str::from_utf8(s).ok()?.trim_start().parse().ok()?;
    (!v.is_nan()).then_some(v)
}

/// A type 3 score (`rdbLoadDoubleValue`): a length byte, 253 NaN, 254 +inf, 255 -inf,
/// else that many bytes of text.
fn text_double(r: &mut Reader<'_>) -> Result<f64, RdbError> {
    let at = r.offset();
    match r.u8()? {
        253 => Err(bad(at, "sorted set score is NaN")),
        254 => Ok(f64::INFINITY),
        255 => Ok(f64::NEG_INFINITY),
        n => parse_double(r.bytes(usize::from(n))?).ok_or_else(|| bad(at, "bad sorted set score")),
    }
}
