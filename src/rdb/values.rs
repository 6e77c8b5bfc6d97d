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
//! **Field TTLs (types 22–25).** A field whose TTL has already passed at the load is
//! dropped (a Redis hides it from then on); every other field is kept with its TTL,
//! which [`read`] hands back beside the hash ([`Loaded::HashWithTtls`]) for the
//! database's field-TTL index (`types/hash_ttl.rs`). A hash whose every field has
//! expired loads as an expired key (skipped, counted with the expired keys).
//!
//! **Writing field TTLs.** A hash with at least one field TTL is written as type 24 (a
//! hash without any stays type 4, so a Redis 7.0 still reads it), in our words:
//!
//! ```text
//! type 24  <min: 8 bytes LE, unix ms, the earliest deadline of the hash's fields>
//!          <n: len>
//!          n × ( <ttl: len> <field: string> <value: string> )
//!            ttl = 0 when the field has no TTL, else (deadline - min + 1): relative to
//!            the minimum, plus one so that 0 stays free for "none"; a deadline is at
//!            most 2^48 - 1 ms
//! ```
//!
//! Redis 7.4+ reads type 24 whatever the file's version number; a Redis 7.0 refuses it,
//! as it must, having no way to keep the TTLs. Redis itself writes a small hash with
//! TTLs as type 25 (its `listpackex` bytes); type 24 carries the same data.
//!
//! A collection with no elements (possible in a hand-made or corrupt file) is
//! [`Loaded::Empty`]: `--import-rdb` skips the key as Redis's loader does, RESTORE
//! refuses it (`Bad data format`, as Redis). Duplicates (a set member, hash field or
//! sorted-set member twice) and NaN scores are refused, as Redis's deep sanitization
//! refuses them: a value is loaded exactly or not at all.

use super::listpack;
use super::packed::{DecodeError, Elem};
use super::write::{len, string};
use super::{RdbError, Reader, intset, types, ziplist, zipmap};
use crate::types::hash_ttl::FieldTtls;
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

/// `RDB_TYPE_HASH_METADATA`: a hash with field TTLs (module doc).
pub const HASH_METADATA: u8 = 24;

/// Appends the value's type byte, then (when `key` is given, as in a file) the key, then
/// the value. Streams are written by `rdb/stream.rs`; here they write nothing. A hash
/// with `field_ttls` (not empty) is written as type 24 with them.
pub fn write(out: &mut Vec<u8>, key: Option<&[u8]>, value: &Value, field_ttls: Option<&FieldTtls>) {
    let field_ttls = field_ttls.filter(|t| !t.is_empty());
    let kind = match value {
        Value::String(_) => plain::STRING,
        Value::List(_) => plain::LIST,
        Value::Set(_) => plain::SET,
        Value::Hash(_) if field_ttls.is_some() => HASH_METADATA,
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
            let min = field_ttls.and_then(FieldTtls::min);
            if let Some(min) = min {
                out.extend_from_slice(&min.to_le_bytes());
            }
            len(out, h.len() as u64);
            for (f, v) in h.iter() {
                if let (Some(min), Some(t)) = (min, field_ttls) {
                    len(out, t.get(&f).map_or(0, |at| at - min + 1));
                }
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
    /// A hash with field TTLs still to come (types 22–25), and those TTLs.
    HashWithTtls(Value, FieldTtls),
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
            let mut l = List::bulk(th);
            for _ in 0..n {
                l.push_back(&r.string()?, th);
            }
            from_list(l)
        }
        10 => {
            let blob = r.string()?;
            let mut l = List::bulk(th);
            for e in zl(&blob, at)? {
                l.push_back(&e.to_bytes(), th);
            }
            from_list(l)
        }
        14 => {
            let n = r.length()?;
            let mut l = List::bulk(th);
            for _ in 0..n {
                let at = r.offset();
                let blob = r.string()?;
                for e in zl(&blob, at)? {
                    l.push_back(&e.to_bytes(), th);
                }
            }
            from_list(l)
        }
        18 => {
            let n = r.length()?;
            let mut l = List::bulk(th);
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
            from_list(l)
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
            from_set(s)
        }
        11 => {
            let blob = r.string()?;
            let mut s = Set::new();
            let vals = intset::values(&blob).map_err(|e| bad(at, e.0))?;
            let mut buf = itoa::Buffer::new();
            for v in vals {
                s.insert(buf.format(v).as_bytes(), th);
            }
            from_set(s)
        }
        20 => {
            let blob = r.string()?;
            // A listpack set stays one (Redis 7.2+ keeps integers in it too) while it
            // fits.
            let mut s = Set::new_listpack();
            for e in lp(&blob, at)? {
                if !s.insert(&e.to_bytes(), th) {
                    return Err(bad(at, "duplicate set member"));
                }
            }
            from_set(s)
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
            from_zset(z)
        }
        12 | 17 => {
            let blob = r.string()?;
            let els = if t == 12 {
                zl(&blob, at)?
            } else {
                lp(&blob, at)?
            };
            if els.len() % 2 != 0 {
                return Err(bad(at, "sorted set with a member without a score"));
            }
            let mut z = ZSet::new();
            for pair in els.chunks_exact(2) {
                let score = elem_score(&pair[1]).ok_or_else(|| bad(at, "bad sorted set score"))?;
                add_scored(&mut z, &pair[0].to_bytes(), score, th, at)?;
            }
            from_zset(z)
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
            from_hash(h)
        }
        9 => {
            let blob = r.string()?;
            let mut h = Hash::new();
            for (f, v) in zipmap::pairs(&blob).map_err(|e| bad(at, e.reason))? {
                add_field(&mut h, f, v, th, at)?;
            }
            from_hash(h)
        }
        13 | 16 => {
            let blob = r.string()?;
            let els = if t == 13 {
                zl(&blob, at)?
            } else {
                lp(&blob, at)?
            };
            if els.len() % 2 != 0 {
                return Err(bad(at, "hash with a field without a value"));
            }
            let mut h = Hash::new();
            for pair in els.chunks_exact(2) {
                add_field(&mut h, &pair[0].to_bytes(), &pair[1].to_bytes(), th, at)?;
            }
            from_hash(h)
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
            let mut ttls = FieldTtls::new();
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
                if expire_at != 0 {
                    ttls.set(&f, expire_at);
                }
            }
            if h.is_empty() && expired > 0 {
                return Ok(Loaded::Expired);
            }
            return Ok(with_ttls(h, ttls));
        }
        23 | 25 => {
            if t == 25 {
                r.ms_time()?;
            }
            let at = r.offset();
            let blob = r.string()?;
            let els = lp(&blob, at)?;
            if els.len() % 3 != 0 {
                return Err(bad(
                    at,
                    "hash with field TTLs that is not field, value, TTL triplets",
                ));
            }
            let mut h = Hash::new();
            let mut ttls = FieldTtls::new();
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
                let field = triplet[0].to_bytes();
                add_field(&mut h, &field, &triplet[1].to_bytes(), th, at)?;
                if expire_at != 0 {
                    ttls.set(&field, expire_at);
                }
            }
            if h.is_empty() && expired > 0 {
                return Ok(Loaded::Expired);
            }
            return Ok(with_ttls(h, ttls));
        }
        _ => {
            return Err(bad(
                at,
                format!(
                    "RDB type {t} ({}) is not a string or collection",
                    types::name(t)
                ),
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

/// A hash read from a field-TTL type: [`Loaded::HashWithTtls`], or a plain value when
/// no field kept a TTL ([`Loaded::Empty`] when nothing is left).
fn with_ttls(h: Hash, ttls: FieldTtls) -> Loaded {
    if h.is_empty() {
        Loaded::Empty
    } else if ttls.is_empty() {
        Loaded::Value(from_hash(h))
    } else {
        Loaded::HashWithTtls(from_hash(h), ttls)
    }
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

// The four constructors below hold the one place that knows whether a `Value` variant
// boxes its collection: `.into()` is `Box::new` for a boxed variant and the identity for
// an unboxed one (which clippy calls a useless conversion), so the readers keep working
// whichever representation a type's family chose.

/// A list as a [`Value`].
#[allow(clippy::useless_conversion)]
pub fn from_list(mut l: List) -> Value {
    l.settle_built();
    Value::List(l.into())
}

/// A set as a [`Value`].
#[allow(clippy::useless_conversion)]
pub fn from_set(s: Set) -> Value {
    Value::Set(s.into())
}

/// A hash as a [`Value`].
#[allow(clippy::useless_conversion)]
pub fn from_hash(h: Hash) -> Value {
    Value::Hash(h.into())
}

/// A sorted set as a [`Value`].
#[allow(clippy::useless_conversion)]
pub fn from_zset(z: ZSet) -> Value {
    Value::ZSet(z.into())
}

/// The elements of a ziplist blob that starts at `at`.
fn zl(blob: &[u8], at: u64) -> Result<Vec<Elem<'_>>, RdbError> {
    ziplist::entries(blob).map_err(|e| inside(e, "ziplist", at))
}

/// The elements of a listpack blob that starts at `at`.
fn lp(blob: &[u8], at: u64) -> Result<Vec<Elem<'_>>, RdbError> {
    listpack::elements(blob).map_err(|e| inside(e, "listpack", at))
}

/// `e`, found inside the `encoding` blob that starts at `at`, as an [`RdbError`].
fn inside(e: DecodeError, encoding: &str, at: u64) -> RdbError {
    bad(at, format!("{} ({encoding} byte {})", e.reason, e.offset))
}

fn add_field(h: &mut Hash, f: &[u8], v: &[u8], th: &Thresholds, at: u64) -> Result<(), RdbError> {
    if h.insert(f, v, th) {
        Ok(())
    } else {
        Err(bad(at, "duplicate hash field"))
    }
}

fn add_scored(
    z: &mut ZSet,
    m: &[u8],
    score: f64,
    th: &Thresholds,
    at: u64,
) -> Result<(), RdbError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdb::listpack::Builder;
    use crate::rdb::write;
    use crate::rdb::{intset, ziplist};
    use proptest::prelude::*;
    use std::collections::{BTreeMap, BTreeSet};

    const NOW: u64 = 1_000_000;

    /// A value as plain data, to compare with a model.
    #[derive(Debug, Clone, PartialEq)]
    enum Model {
        Str(Vec<u8>),
        List(Vec<Vec<u8>>),
        Set(BTreeSet<Vec<u8>>),
        Hash(BTreeMap<Vec<u8>, Vec<u8>>),
        ZSet(Vec<(Vec<u8>, u64)>),
    }

    fn model(v: &Value) -> Model {
        match v {
            Value::String(s) => Model::Str(s.to_bytes().to_vec()),
            Value::List(l) => Model::List(l.iter().map(|e| e.to_vec()).collect()),
            Value::Set(s) => Model::Set(s.iter().map(|e| e.to_vec()).collect()),
            Value::Hash(h) => {
                Model::Hash(h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect())
            }
            // Scores as bits: exact, and -0.0 apart from 0.0.
            Value::ZSet(z) => {
                Model::ZSet(z.iter().map(|(m, s)| (m.to_vec(), s.to_bits())).collect())
            }
            Value::Stream(_) => unreachable!("no streams here"),
        }
    }

    fn load(t: u8, body: &[u8]) -> Result<Loaded, RdbError> {
        let mut r = Reader::new(body, 0);
        let v = read(&mut r, t, &Thresholds::default(), NOW)?;
        if r.remaining() != 0 {
            return Err(r.err("left over"));
        }
        Ok(v)
    }

    fn value(t: u8, body: &[u8]) -> Model {
        match load(t, body) {
            Ok(Loaded::Value(v)) => model(&v),
            Ok(Loaded::HashWithTtls(v, _)) => model(&v),
            other => panic!("type {t}: {other:?}"),
        }
    }

    fn blob(b: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        write::string(&mut out, b);
        out
    }

    fn lp(items: &[&[u8]]) -> Vec<u8> {
        let mut b = Builder::new();
        for i in items {
            b.string(i);
        }
        b.finish()
    }

    fn zl(items: &[&[u8]]) -> Vec<u8> {
        let parsed: Vec<Result<i64, &[u8]>> = items
            .iter()
            .map(|i| match crate::stream::id::string2ll(i) {
                Some(v) => Ok(v),
                None => Err(*i),
            })
            .collect();
        ziplist::build::ziplist(&parsed)
    }

    fn strs(items: &[&[u8]]) -> Vec<Vec<u8>> {
        items.iter().map(|i| i.to_vec()).collect()
    }

    #[test]
    fn strings_in_every_form() {
        assert_eq!(value(0, &blob(b"hi")), Model::Str(b"hi".to_vec()));
        assert_eq!(value(0, &[0xC0, 0xF6]), Model::Str(b"-10".to_vec()));
        assert_eq!(
            value(0, &[0xC2, 0, 0, 0, 0x80]),
            Model::Str(b"-2147483648".to_vec())
        );
        assert_eq!(
            value(0, &[0xC3, 5, 22, 0x00, b'a', 0xE0, 12, 0x00]),
            Model::Str(vec![b'a'; 22])
        );
    }

    #[test]
    fn lists_in_every_encoding() {
        let items: &[&[u8]] = &[b"a", b"12", b"-5000", b"\x00bin", b"99999999999"];
        let want = Model::List(strs(items));
        let mut plain = Vec::new();
        write::len(&mut plain, 5);
        for i in items {
            write::string(&mut plain, i);
        }
        assert_eq!(value(1, &plain), want);
        assert_eq!(value(10, &blob(&zl(items))), want);
        // Quicklist: two ziplists, and an empty one in between (skipped, as Redis does).
        let mut q = Vec::new();
        write::len(&mut q, 3);
        q.extend(blob(&zl(&items[..2])));
        q.extend(blob(&zl(&[])));
        q.extend(blob(&zl(&items[2..])));
        assert_eq!(value(14, &q), want);
        // Quicklist 2: a packed node, a plain node, a packed node.
        let mut q = Vec::new();
        write::len(&mut q, 3);
        write::len(&mut q, 2);
        q.extend(blob(&lp(&items[..2])));
        write::len(&mut q, 1);
        q.extend(blob(items[2]));
        write::len(&mut q, 2);
        q.extend(blob(&lp(&items[3..])));
        assert_eq!(value(18, &q), want);
        let mut bad = Vec::new();
        write::len(&mut bad, 1);
        write::len(&mut bad, 3);
        bad.extend(blob(b"x"));
        assert!(load(18, &bad).is_err(), "unknown container");
    }

    #[test]
    fn sets_in_every_encoding() {
        let want = |m: &[&[u8]]| Model::Set(m.iter().map(|x| x.to_vec()).collect());
        let mut plain = Vec::new();
        write::len(&mut plain, 2);
        write::string(&mut plain, b"x");
        write::string(&mut plain, b"y");
        assert_eq!(value(2, &plain), want(&[b"x", b"y"]));
        assert_eq!(
            value(11, &blob(&intset::build(&[-70000, -3, 5, 1 << 40]))),
            want(&[b"-70000", b"-3", b"5", b"1099511627776"])
        );
        assert_eq!(
            value(20, &blob(&lp(&[b"a", b"7", b"b"]))),
            want(&[b"a", b"7", b"b"])
        );
        let mut dup = Vec::new();
        write::len(&mut dup, 2);
        write::string(&mut dup, b"x");
        write::string(&mut dup, b"x");
        assert!(load(2, &dup).is_err());
        assert!(load(20, &blob(&lp(&[b"a", b"a"]))).is_err());
    }

    #[test]
    fn sorted_sets_in_every_encoding() {
        let want = Model::ZSet(vec![
            (b"neg".to_vec(), (-1.5f64).to_bits()),
            (b"int".to_vec(), 3f64.to_bits()),
            (b"big".to_vec(), 1e300f64.to_bits()),
            (b"inf".to_vec(), f64::INFINITY.to_bits()),
        ]);
        // Type 3: scores as text with a length byte, 254 = +inf.
        let mut t3 = Vec::new();
        write::len(&mut t3, 4);
        for (m, s) in [
            (&b"int"[..], &b"3"[..]),
            (b"neg", b"-1.5"),
            (b"big", b"1e+300"),
        ] {
            write::string(&mut t3, m);
            t3.push(s.len() as u8);
            t3.extend_from_slice(s);
        }
        write::string(&mut t3, b"inf");
        t3.push(254);
        assert_eq!(value(3, &t3), want);
        let mut t5 = Vec::new();
        write::len(&mut t5, 4);
        for (m, s) in [
            (&b"inf"[..], f64::INFINITY),
            (b"int", 3.0),
            (b"neg", -1.5),
            (b"big", 1e300),
        ] {
            write::string(&mut t5, m);
            t5.extend_from_slice(&s.to_le_bytes());
        }
        assert_eq!(value(5, &t5), want);
        let pairs: &[&[u8]] = &[
            b"neg", b"-1.5", b"int", b"3", b"big", b"1e+300", b"inf", b"inf",
        ];
        assert_eq!(value(12, &blob(&zl(pairs))), want);
        assert_eq!(value(17, &blob(&lp(pairs))), want);
        // Refusals: NaN (text, 253, binary), a duplicate, an odd element count.
        assert!(load(17, &blob(&lp(&[b"a", b"nan"]))).is_err());
        assert!(load(17, &blob(&lp(&[b"a", b"1", b"a", b"2"]))).is_err());
        assert!(load(12, &blob(&zl(&[b"a", b"1", b"b"]))).is_err());
        assert!(load(3, &[1, 1, b'a', 253]).is_err());
        let mut nan = vec![1, 1, b'a'];
        nan.extend_from_slice(&f64::NAN.to_le_bytes());
        assert!(load(5, &nan).is_err());
    }

    #[test]
    fn hashes_in_every_encoding() {
        let want = Model::Hash(
            [(&b"f"[..], &b"v"[..]), (b"n", b"100000"), (b"\x00", b"")]
                .iter()
                .map(|(f, v)| (f.to_vec(), v.to_vec()))
                .collect(),
        );
        let flat: &[&[u8]] = &[b"f", b"v", b"n", b"100000", b"\x00", b""];
        let mut plain = Vec::new();
        write::len(&mut plain, 3);
        for i in flat {
            write::string(&mut plain, i);
        }
        assert_eq!(value(4, &plain), want);
        let zm = b"\x03\x01f\x01\x02v..\x01n\x06\x00100000\x01\x00\x00\x00\xff";
        assert_eq!(value(9, &blob(zm)), want);
        assert_eq!(value(13, &blob(&zl(flat))), want);
        assert_eq!(value(16, &blob(&lp(flat))), want);
        assert!(load(16, &blob(&lp(&[b"f", b"1", b"f", b"2"]))).is_err());
        assert!(load(13, &blob(&zl(&[b"f"]))).is_err());
    }

    /// Types 22–25: a field whose TTL passed is dropped, the others kept without TTL.
    #[test]
    fn hashes_with_field_ttls_keep_the_live_fields() {
        let want = Model::Hash(
            [(&b"keep"[..], &b"1"[..]), (b"later", b"2")]
                .iter()
                .map(|(f, v)| (f.to_vec(), v.to_vec()))
                .collect(),
        );
        // 24: min expire, then (ttl relative to min + 1, field, value).
        let min = NOW - 10;
        let mut t24 = min.to_le_bytes().to_vec();
        write::len(&mut t24, 3);
        for (ttl, f, v) in [
            (0u64, &b"keep"[..], &b"1"[..]),
            (1, b"gone", b"x"),
            (100, b"later", b"2"),
        ] {
            write::len(&mut t24, ttl);
            write::string(&mut t24, f);
            write::string(&mut t24, v);
        }
        assert_eq!(value(24, &t24), want);
        // 22: absolute expiry times.
        let mut t22 = Vec::new();
        write::len(&mut t22, 3);
        for (at, f, v) in [
            (0u64, &b"keep"[..], &b"1"[..]),
            (NOW, b"gone", b"x"),
            (NOW + 1, b"later", b"2"),
        ] {
            write::len(&mut t22, at);
            write::string(&mut t22, f);
            write::string(&mut t22, v);
        }
        assert_eq!(value(22, &t22), want);
        // 23 and 25: listpack triplets (field, value, absolute expiry or 0).
        let mut b = Builder::new();
        for (f, v, at) in [
            (&b"keep"[..], &b"1"[..], 0i64),
            (b"gone", b"x", 5),
            (b"later", b"2", (NOW + 5) as i64),
        ] {
            b.string(f);
            b.string(v);
            b.int(at);
        }
        let triplets = b.finish();
        assert_eq!(value(23, &blob(&triplets)), want);
        let mut t25 = min.to_le_bytes().to_vec();
        t25.extend(blob(&triplets));
        assert_eq!(value(25, &t25), want);
        // Every field expired: the key is expired.
        let mut all = min.to_le_bytes().to_vec();
        write::len(&mut all, 1);
        write::len(&mut all, 1);
        write::string(&mut all, b"f");
        write::string(&mut all, b"v");
        assert!(matches!(load(24, &all), Ok(Loaded::Expired)));
        // An expiry beyond 2^48 - 1 is corrupt.
        let mut far = Vec::new();
        write::len(&mut far, 1);
        write::len(&mut far, 1 << 50);
        write::string(&mut far, b"f");
        write::string(&mut far, b"v");
        assert!(load(22, &far).is_err());
        assert!(load(23, &blob(&lp(&[b"f", b"v"]))).is_err(), "not triplets");
    }

    #[test]
    fn empty_collections_are_reported_empty() {
        for (t, body) in [
            (1u8, vec![0u8]),
            (2, vec![0]),
            (4, vec![0]),
            (5, vec![0]),
            (16, blob(&lp(&[]))),
            (10, blob(&zl(&[]))),
            (14, vec![0]),
            (18, vec![0]),
        ] {
            assert!(matches!(load(t, &body), Ok(Loaded::Empty)), "type {t}");
        }
        assert!(
            load(11, &blob(&intset::build(&[]))).is_err(),
            "Redis refuses an empty intset"
        );
    }

    fn element() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            any::<i64>().prop_map(|i| i.to_string().into_bytes()),
            (-200i64..200).prop_map(|i| i.to_string().into_bytes()),
            proptest::collection::vec(any::<u8>(), 0..70),
            Just(b"007".to_vec()),
            Just(vec![b'z'; 5000]),
        ]
    }

    fn score() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<f64>().prop_filter("no NaN", |f| !f.is_nan()),
            (-100i32..100).prop_map(f64::from),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(-0.0),
        ]
    }

    fn a_value() -> impl Strategy<Value = Value> {
        let th = Thresholds::default();
        prop_oneof![
            element().prop_map(|e| Value::String(StringValue::new(&e))),
            proptest::collection::vec(element(), 1..40).prop_map(move |v| {
                let mut l = List::bulk(&th);
                for e in v {
                    l.push_back(&e, &th);
                }
                from_list(l)
            }),
            proptest::collection::btree_set(element(), 1..40).prop_map(move |v| {
                let mut s = Set::new();
                for e in v {
                    s.insert(&e, &th);
                }
                from_set(s)
            }),
            proptest::collection::btree_map(element(), element(), 1..40).prop_map(move |v| {
                let mut h = Hash::new();
                for (f, x) in v {
                    h.insert(&f, &x, &th);
                }
                from_hash(h)
            }),
            proptest::collection::btree_map(element(), score(), 1..40).prop_map(move |v| {
                let mut z = ZSet::new();
                for (m, s) in v {
                    z.insert(&m, s, &th);
                }
                from_zset(z)
            }),
        ]
    }

    /// What a Redis-written compact encoding of the model would hold, as a type and body.
    fn compact(m: &Model) -> Option<(u8, Vec<u8>)> {
        fn as_refs(v: &[Vec<u8>]) -> Vec<&[u8]> {
            v.iter().map(|x| &x[..]).collect()
        }
        Some(match m {
            Model::List(v) => (18, {
                let mut q = Vec::new();
                write::len(&mut q, 1);
                write::len(&mut q, 2);
                q.extend(blob(&lp(&as_refs(v))));
                q
            }),
            Model::Set(s) => {
                let v: Vec<Vec<u8>> = s.iter().cloned().collect();
                (20, blob(&lp(&as_refs(&v))))
            }
            Model::Hash(h) => {
                let v: Vec<Vec<u8>> = h.iter().flat_map(|(f, x)| [f.clone(), x.clone()]).collect();
                (16, blob(&lp(&as_refs(&v))))
            }
            Model::ZSet(z) => {
                let v: Vec<Vec<u8>> = z
                    .iter()
                    .flat_map(|(m, s)| {
                        [m.clone(), format!("{:?}", f64::from_bits(*s)).into_bytes()]
                    })
                    .collect();
                (17, blob(&lp(&as_refs(&v))))
            }
            Model::Str(_) => return None,
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// write then read gives the same value; so does the listpack form of it.
        #[test]
        fn write_then_read_is_the_same_value(v in a_value()) {
            let mut out = Vec::new();
            write(&mut out, None, &v, None);
            let m = model(&v);
            prop_assert_eq!(value(out[0], &out[1..]), m.clone());
            if let Some((t, body)) = compact(&m) {
                prop_assert_eq!(value(t, &body), m);
            }
        }

        /// Any bytes, under any type: an error or a value, never a panic.
        #[test]
        fn arbitrary_bytes_never_panic(t in 0u8..30, body in proptest::collection::vec(any::<u8>(), 0..120)) {
            if is_value_type(t) {
                let _ = load(t, &body);
            }
        }

        /// Valid values with one byte flipped or cut short never panic.
        #[test]
        fn corrupted_values_never_panic(v in a_value(), at in any::<usize>(), bit in 0u8..8, cut in any::<bool>()) {
            let mut out = Vec::new();
            write(&mut out, None, &v, None);
            let m = model(&v);
            let (t, mut body) = compact(&m).unwrap_or((out[0], out[1..].to_vec()));
            if body.is_empty() { return Ok(()); }
            let i = at % body.len();
            if cut { body.truncate(i); } else { body[i] ^= 1 << bit; }
            let _ = load(t, &body);
        }
    }
}
