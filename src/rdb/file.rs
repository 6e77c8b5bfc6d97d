//! Reading a whole `dump.rdb` for `streamd --import-rdb FILE` (and a streamd replica's
//! full sync from a Redis primary): every key of a type streamd stores goes into its
//! database, modules are skipped and counted, and the result is written as a normal
//! streamd snapshot before the server starts.
//!
//! ```text
//! "REDIS" <version: 4 ASCII digits, 0001..0014>
//! then, until EOF, one of:
//!   0xFA AUX          <name: string> <value: string>      redis-ver, ctime, ...
//!   0xFE SELECTDB     <db: len>                           following keys go there
//!   0xFB RESIZEDB     <db size: len> <expires size: len>
//!   0xFC EXPIRETIME_MS <unix ms: u64 LE>                  applies to the next key
//!   0xFD EXPIRETIME   <unix s: u32 LE>                    applies to the next key
//!   0xF8 IDLE <len>   0xF9 FREQ <u8>                      eviction hints, ignored
//!   0xF7 MODULE_AUX   <module id: len> <when-opcode> <when> <module opcodes... EOF>
//!   0xF5 FUNCTION2    <library code: string>              ignored
//!   0xF4 SLOT_INFO    <slot: len> <size: len> <expires size: len>
//!   <type: u8> <key: string> <value>                      a key
//!   0xFF EOF          then <CRC-64/Jones of every byte before it: u64 LE> (0 = none;
//!                     versions 1..=4 have no CRC and end at the EOF byte)
//! ```
//!
//! Streams of every type Redis writes (15, 19, 21, 26, 27) are read by `stream.rs`;
//! strings, lists, sets, sorted sets and hashes in every encoding Redis 2.0 to 8.x
//! writes (types 0–5, 9–14, 16–18, 20, 22–25) by `values.rs`, which draws them and
//! says what happens to a hash's field TTLs. Module values (type 7) are skipped by
//! walking their opcodes and counted; a file holding a type streamd cannot walk (a 4.0
//! release candidate's module type 6, Redis 8.8's array, 28) or Redis 8.6's
//! key-metadata opcode (243, module metadata attached to a key) is refused with the
//! offset and what was found. Files of RDB version 1 to 8 (Redis before 5.0) read
//! too: their key encodings are a subset of the later ones.
//!
//! The whole file is read into memory once; every length is checked against what is
//! left, so a lying length is an error (with its offset), never a large allocation. A
//! key whose expiry time has already passed is skipped, as Redis skips it when loading;
//! so is an empty collection (counted apart), as Redis's loader skips those.

use super::types::{
    self, STREAM_LISTPACKS, STREAM_LISTPACKS_2, STREAM_LISTPACKS_3, STREAM_LISTPACKS_4,
    STREAM_LISTPACKS_5,
};
use super::values::{self, Loaded};
use super::{RdbError, Reader, crc64, stream};
use crate::core::keyspace::Db;
use crate::types::{Thresholds, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Oldest and newest RDB versions read (Redis 2.0 writes 1..=4, 3.2 7, 4.0 8, 5.0 9, 7.0
/// 10, 7.2 11, 7.4 12, 8.6 13, 8.8 14).
pub const VERSIONS: std::ops::RangeInclusive<u32> = 1..=14;

/// What an import found.
#[derive(Debug, Default, Clone)]
pub struct ImportStats {
    /// RDB version of the file.
    pub version: u32,
    /// Streams imported.
    pub streams: u64,
    /// Stream entries imported.
    pub entries: u64,
    /// Keys imported, by type name (`string`, `list`, `set`, `zset`, `hash`, `stream`).
    pub imported: BTreeMap<&'static str, u64>,
    /// Keys of other types skipped (modules), by type name.
    pub skipped: BTreeMap<&'static str, u64>,
    /// Keys skipped because their TTL had passed (or, for a hash with field TTLs, every
    /// field's had).
    pub expired: u64,
    /// Empty collections skipped (as Redis's loader skips them).
    pub empty: u64,
    /// File size in bytes.
    pub bytes: u64,
}

/// Called about once a second with (keys so far, bytes read so far).
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);

/// Parses an RDB file image into `databases` databases; `idmp_defaults` are the
/// server's settings for new streams (`rdb/stream.rs`). Collections are built with
/// Redis 7.0's default encoding thresholds ([`read_with`] takes others).
pub fn read(
    data: &[u8],
    databases: usize,
    now_ms: u64,
    idmp_defaults: stream::IdmpDefaults,
    progress: Progress<'_>,
) -> Result<(Vec<Db>, ImportStats), RdbError> {
    read_with(
        data,
        databases,
        now_ms,
        idmp_defaults,
        &Thresholds::default(),
        progress,
    )
}

/// [`read`], building collections with the thresholds `th` (the server's configured
/// `hash-max-listpack-entries` and friends).
pub fn read_with(
    data: &[u8],
    databases: usize,
    now_ms: u64,
    idmp_defaults: stream::IdmpDefaults,
    th: &Thresholds,
    progress: Progress<'_>,
) -> Result<(Vec<Db>, ImportStats), RdbError> {
    let mut dbs: Vec<Db> = (0..databases).map(|_| Db::default()).collect();
    let mut stats = ImportStats {
        bytes: data.len() as u64,
        ..Default::default()
    };
    let mut r = Reader::new(data, 0);
    let magic = r.bytes(9)?;
    if &magic[..5] != b"REDIS" {
        return Err(RdbError {
            offset: 0,
            what: "not an RDB file (no REDIS signature)".into(),
        });
    }
    let version = std::str::from_utf8(&magic[5..])
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .ok_or(RdbError {
            offset: 5,
            what: "bad RDB version digits".into(),
        })?;
    if !VERSIONS.contains(&version) {
        return Err(RdbError {
            offset: 5,
            what: format!(
                "RDB version {version} is not supported (streamd reads {}..={})",
                VERSIONS.start(),
                VERSIONS.end()
            )
            .into(),
        });
    }
    stats.version = version;
    let mut db = 0usize;
    let mut expire: Option<u64> = None;
    let mut keys = 0u64;
    let mut last_report = Instant::now();
    loop {
        let at = r.offset();
        let op = r.u8()?;
        match op {
            0xFA => {
                r.skip_string()?;
                r.skip_string()?;
            }
            0xFE => {
                let n = r.length()?;
                db = usize::try_from(n)
                    .ok()
                    .filter(|&d| d < databases)
                    .ok_or_else(|| RdbError {
                        offset: at,
                        what: format!(
                            "the file uses database {n}, but streamd is configured with \
                             databases {databases}"
                        )
                        .into(),
                    })?;
            }
            0xFB => {
                r.length()?;
                r.length()?;
            }
            0xFC => {
                let b = r.bytes(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                expire = Some(u64::from_le_bytes(a));
            }
            0xFD => {
                let b = r.bytes(4)?;
                expire = Some(u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])) * 1000);
            }
            0xF8 => {
                r.length()?;
            }
            0xF9 => {
                r.u8()?;
            }
            0xF7 => {
                r.length()?; // module id
                let when_op = r.length()?;
                if when_op != 2 {
                    return Err(r.err("module aux data without its 'when' field"));
                }
                r.length()?;
                skip_module_value(&mut r)?;
            }
            0xF5 => r.skip_string()?,
            0xF4 => {
                r.length()?;
                r.length()?;
                r.length()?;
            }
            0xF3 => {
                return Err(RdbError {
                    offset: at,
                    what: "key metadata (RDB opcode 243, Redis 8.6 module key metadata) is \
                           not supported"
                        .into(),
                });
            }
            0xFF => break,
            t => {
                let key_at = r.offset();
                let key = r.string()?.into_owned();
                let this_expire = expire.take();
                let expired = this_expire.is_some_and(|e| e <= now_ms);
                let value = match t {
                    STREAM_LISTPACKS | STREAM_LISTPACKS_2 | STREAM_LISTPACKS_3
                    | STREAM_LISTPACKS_4 | STREAM_LISTPACKS_5 => {
                        let s = stream::read(&mut r, t, idmp_defaults)?;
                        if !expired {
                            stats.entries += s.len();
                        }
                        Loaded::Value(Value::Stream(Box::new(s)))
                    }
                    t if values::is_value_type(t) => values::read(&mut r, t, th, now_ms)?,
                    _ => {
                        skip_value(&mut r, t, at)?;
                        *stats.skipped.entry(types::name(t)).or_insert(0) += 1;
                        Loaded::Empty
                    }
                };
                let (value, field_ttls) = match value {
                    Loaded::HashWithTtls(v, t) => (Loaded::Value(v), Some(t)),
                    other => (other, None),
                };
                match value {
                    _ if expired => stats.expired += 1,
                    Loaded::Expired => stats.expired += 1,
                    Loaded::Empty if values::is_value_type(t) => stats.empty += 1,
                    Loaded::Empty => {}
                    // Split off above, before this match.
                    Loaded::HashWithTtls(..) => {}
                    Loaded::Value(v) => {
                        let d = &mut dbs[db];
                        if d.keys.contains_key(key.as_slice()) {
                            return Err(RdbError {
                                offset: key_at,
                                what: "duplicate key".into(),
                            });
                        }
                        let kind = v.kind().name();
                        d.insert(&key, v);
                        if let Some(e) = this_expire {
                            d.set_expire(&key, e);
                        }
                        if let Some(t) = field_ttls {
                            d.hexpires.put(&key, t);
                        }
                        *stats.imported.entry(kind).or_insert(0) += 1;
                        if kind == "stream" {
                            stats.streams += 1;
                        }
                    }
                }
                keys += 1;
                if last_report.elapsed() >= Duration::from_secs(1) {
                    progress(keys, r.offset());
                    last_report = Instant::now();
                }
            }
        }
    }
    // Everything up to and including the EOF opcode is checksummed (RDB 5 and later;
    // the files of Redis before 2.6 end at the EOF opcode).
    if version >= 5 {
        let crc_at = r.offset();
        let stored = r.bytes(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(stored);
        let stored = u64::from_le_bytes(a);
        if stored != 0 && crc64::crc64(&data[..crc_at as usize]) != stored {
            return Err(RdbError {
                offset: crc_at,
                what: "RDB checksum mismatch".into(),
            });
        }
    }
    if r.remaining() != 0 {
        return Err(r.err("data after the end of the RDB file"));
    }
    progress(keys, r.offset());
    Ok((dbs, stats))
}

/// Skips a module value's opcodes up to its EOF (Redis `rdbLoadCheckModuleValue`).
fn skip_module_value(r: &mut Reader<'_>) -> Result<(), RdbError> {
    loop {
        let at = r.offset();
        match r.length()? {
            0 => return Ok(()),
            1 | 2 => {
                r.length()?;
            }
            3 => {
                r.bytes(4)?;
            }
            4 => {
                r.bytes(8)?;
            }
            5 => r.skip_string()?,
            _ => {
                return Err(RdbError {
                    offset: at,
                    what: "unknown module value opcode".into(),
                });
            }
        }
    }
}

/// Skips one value of type `t` that is neither a stream nor a string or collection
/// (`values::is_value_type`): a module value, whose type byte was at `type_at`.
fn skip_value(r: &mut Reader<'_>, t: u8, type_at: u64) -> Result<(), RdbError> {
    match t {
        // module 2: module id, then its opcodes
        7 => {
            r.length()?;
            skip_module_value(r)
        }
        t => Err(RdbError {
            offset: type_at,
            what: match types::name(t) {
                "unknown" => format!("unknown value type {t}").into(),
                name => format!("cannot read a {name} of RDB type {t}").into(),
            },
        }),
    }
}

/// The RDB version [`write`] produces: 10, what Redis 7.0 writes and loads.
pub const WRITE_VERSION: u32 = 10;

/// A whole RDB image of `dbs` in Redis 7.0's format (version 10, streams as type 19),
/// for a replica that is a real Redis: the `aux` fields first (`redis-ver`,
/// `repl-id`, ...), then each non-empty database (`SELECTDB`, `RESIZEDB`, each key
/// with its expiry), `EOF` and the CRC-64 of everything before it. A cold stream node
/// that cannot be read back is an error.
pub fn write(
    dbs: &[Db],
    aux: &[(&str, String)],
    idmp_defaults: stream::IdmpDefaults,
) -> std::io::Result<Vec<u8>> {
    let mut image = Vec::with_capacity(1024);
    write_to(dbs, aux, idmp_defaults, &mut |bytes| {
        image.extend_from_slice(bytes);
        Ok(())
    })?;
    Ok(image)
}

/// [`write`], handing the image to `sink` piece by piece as it is produced (a full sync
/// streams it to a replica), so that it is never whole in memory: each piece is at most
/// about [`stream::SPILL_BYTES`] plus one value that is not a stream.
pub fn write_to(
    dbs: &[Db],
    aux: &[(&str, String)],
    idmp_defaults: stream::IdmpDefaults,
    sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    use super::write::{len, string};
    let mut crc = 0u64;
    let mut spill = |out: &mut Vec<u8>| -> std::io::Result<()> {
        crc = crc64::update(crc, out);
        sink(out)?;
        out.clear();
        Ok(())
    };
    let mut out = Vec::with_capacity(stream::SPILL_BYTES + 64 * 1024);
    out.extend_from_slice(format!("REDIS{WRITE_VERSION:04}").as_bytes());
    for (k, v) in aux {
        out.push(0xFA);
        string(&mut out, k.as_bytes());
        string(&mut out, v.as_bytes());
    }
    for (i, db) in dbs.iter().enumerate() {
        if db.is_empty() {
            continue;
        }
        out.push(0xFE);
        len(&mut out, i as u64);
        out.push(0xFB);
        len(&mut out, db.len() as u64);
        len(&mut out, db.expires.len() as u64);
        for (key, s) in db.keys.iter() {
            if let Some(&at) = db.expires.get(key.as_ref()) {
                out.push(0xFC);
                out.extend_from_slice(&at.to_le_bytes());
            }
            match s {
                Value::Stream(s) => {
                    out.push(STREAM_LISTPACKS_2);
                    string(&mut out, key);
                    stream::write_spilling(
                        &mut out,
                        s,
                        STREAM_LISTPACKS_2,
                        idmp_defaults,
                        &mut spill,
                    )?;
                }
                other => super::values::write(&mut out, Some(key), other, db.hexpires.of(key)),
            }
            if out.len() >= stream::SPILL_BYTES {
                spill(&mut out)?;
            }
        }
    }
    out.push(0xFF);
    spill(&mut out)?;
    sink(&crc.to_le_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdb::write;
    use crate::stream::{NodeLimits, Stream, StreamId};

    const D: stream::IdmpDefaults = (100, 100);

    /// A small RDB file: a string, a stream, an expired stream, an expired string, in db
    /// 0; a quicklist of one ziplist, an empty set and a module value in db 1.
    fn file() -> Vec<u8> {
        let mut f = b"REDIS0010".to_vec();
        f.push(0xFA);
        write::string(&mut f, b"redis-ver");
        write::string(&mut f, b"7.0.15");
        f.push(0xFE);
        write::len(&mut f, 0);
        f.push(0);
        write::string(&mut f, b"plain");
        write::string(&mut f, b"value");
        let mut s = Stream::new();
        s.append(
            StreamId::new(5, 0),
            &[
                bytes::Bytes::from_static(b"f"),
                bytes::Bytes::from_static(b"v"),
            ],
            &NodeLimits::default(),
        );
        f.push(STREAM_LISTPACKS_2);
        write::string(&mut f, b"st");
        stream::write(&mut f, &s, STREAM_LISTPACKS_2, D);
        f.push(0xFC);
        f.extend_from_slice(&1000u64.to_le_bytes());
        f.push(STREAM_LISTPACKS_2);
        write::string(&mut f, b"gone");
        stream::write(&mut f, &s, STREAM_LISTPACKS_2, D);
        f.push(0xFC);
        f.extend_from_slice(&1000u64.to_le_bytes());
        f.push(0);
        write::string(&mut f, b"gone-string");
        write::string(&mut f, b"x");
        f.push(0xFE);
        write::len(&mut f, 1);
        f.push(14);
        write::string(&mut f, b"list");
        write::len(&mut f, 1);
        write::string(
            &mut f,
            &crate::rdb::ziplist::build::ziplist(&[Err(b"a"), Ok(7), Err(b"c")]),
        );
        f.push(2);
        write::string(&mut f, b"empty");
        write::len(&mut f, 0);
        f.push(7);
        write::string(&mut f, b"module");
        write::len(&mut f, 12345); // module id
        write::len(&mut f, 2); // an unsigned integer opcode
        write::len(&mut f, 99);
        write::len(&mut f, 0); // EOF
        f.push(0xFF);
        let crc = crc64::crc64(&f);
        f.extend_from_slice(&crc.to_le_bytes());
        f
    }

    #[test]
    fn an_image_handed_on_in_pieces_is_the_whole_image_and_loads() {
        let mut db = Db::default();
        let mut s = Stream::new();
        let payload = bytes::Bytes::from(vec![b'p'; 200]);
        for i in 1..=6_000u64 {
            s.append(
                StreamId::new(i, 0),
                &[bytes::Bytes::from_static(b"f"), payload.clone()],
                &NodeLimits::default(),
            );
        }
        db.insert(b"big", Value::Stream(Box::new(s)));
        db.insert(
            b"str",
            Value::String(crate::types::string::StringValue::new(b"v")),
        );
        let mut pieces = Vec::new();
        write_to(&[db], &[("redis-ver", "7.0.15".into())], D, &mut |b| {
            pieces.push(b.to_vec());
            Ok(())
        })
        .expect("written");
        // Over a megabyte of nodes: handed on as it grew, never much above a spill.
        assert!(pieces.len() > 4, "{} pieces", pieces.len());
        assert!(pieces.iter().all(|p| p.len() < 2 * stream::SPILL_BYTES));
        let image = pieces.concat();
        let crc = crc64::crc64(&image[..image.len() - 8]);
        assert_eq!(image[image.len() - 8..], crc.to_le_bytes());
        let (dbs, _) = read(&image, 16, 0, D, &mut |_, _| {}).expect("reads");
        match dbs[0].get(b"big") {
            Some(Value::Stream(s)) => {
                assert_eq!(s.len(), 6_000);
                assert_eq!(s.last_id(), StreamId::new(6_000, 0));
            }
            other => panic!("{other:?}"),
        }
        assert!(dbs[0].get(b"str").is_some());
    }

    #[test]
    fn hash_field_ttls_survive_an_rdb_round_trip() {
        let th = Thresholds::default();
        let mut db = Db::default();
        for (key, n) in [(&b"small"[..], 3), (b"big", 600)] {
            let mut h = crate::types::Hash::new();
            for i in 0..n {
                h.insert(format!("f{i}").as_bytes(), b"v", &th);
            }
            db.insert(key, Value::Hash(h));
            db.hexpires.set(key, b"f1", 5_000);
            db.hexpires.set(key, b"f2", 9_000);
            db.hexpires.set(key, b"f0", 1_500);
        }
        let mut plain = crate::types::Hash::new();
        plain.insert(b"a", b"b", &th);
        db.insert(b"plain", Value::Hash(plain));
        let image = write(&[db], &[], D).expect("an image");
        // At 2000 ms f0 has expired: dropped at the load; f1 and f2 keep their TTLs.
        let (dbs, stats) = read(&image, 16, 2000, D, &mut |_, _| {}).expect("reads");
        assert_eq!(stats.imported.get("hash"), Some(&3));
        for (key, n) in [(&b"small"[..], 3), (b"big", 600)] {
            match dbs[0].get(key) {
                Some(Value::Hash(h)) => assert_eq!(h.len(), n - 1),
                other => panic!("{other:?}"),
            }
            assert_eq!(dbs[0].hexpires.get(key, b"f1"), Some(5_000));
            assert_eq!(dbs[0].hexpires.get(key, b"f2"), Some(9_000));
            assert_eq!(dbs[0].hexpires.get(key, b"f0"), None);
            assert_eq!(dbs[0].hexpires.get(key, b"f3"), None);
        }
        assert!(!dbs[0].hexpires.contains_key(b"plain"));
    }

    #[test]
    fn every_type_is_imported_and_modules_counted() {
        let (dbs, stats) = read(&file(), 16, 2000, D, &mut |_, _| {}).expect("reads");
        assert_eq!(stats.version, 10);
        assert_eq!(stats.streams, 1);
        assert_eq!(stats.expired, 2);
        assert_eq!(stats.empty, 1);
        assert_eq!(stats.imported.get("string"), Some(&1));
        assert_eq!(stats.imported.get("list"), Some(&1));
        assert_eq!(stats.imported.get("stream"), Some(&1));
        assert_eq!(stats.skipped.get("module"), Some(&1));
        assert_eq!(stats.skipped.len(), 1);
        assert_eq!(dbs[0].get_stream(b"st").map(|s| s.len()), Some(1));
        assert!(dbs[0].get(b"gone").is_none());
        assert!(dbs[0].get(b"gone-string").is_none());
        match dbs[0].get(b"plain") {
            Some(Value::String(s)) => assert_eq!(&s.to_bytes()[..], b"value"),
            other => panic!("{other:?}"),
        }
        match dbs[1].get(b"list") {
            Some(Value::List(l)) => {
                let items: Vec<Vec<u8>> = l.iter().map(|e| e.to_vec()).collect();
                assert_eq!(items, [b"a".to_vec(), b"7".to_vec(), b"c".to_vec()]);
            }
            other => panic!("{other:?}"),
        }
        assert!(dbs[1].get(b"empty").is_none());
        assert!(dbs[1].get(b"module").is_none());
    }

    #[test]
    fn corruption_is_refused_with_an_offset_never_a_panic() {
        let f = file();
        for cut in 0..f.len() {
            assert!(
                read(&f[..cut], 16, 2000, D, &mut |_, _| {}).is_err(),
                "cut {cut}"
            );
        }
        let mut bad = f.clone();
        let n = bad.len();
        bad[n - 20] ^= 0x40;
        let e = read(&bad, 16, 2000, D, &mut |_, _| {}).unwrap_err();
        assert!(e.offset > 0, "{e}");
        for i in 0..f.len() {
            let mut bad = f.clone();
            bad[i] ^= 0xA5;
            assert!(read(&bad, 16, 2000, D, &mut |_, _| {}).is_err(), "byte {i}");
        }
    }

    #[test]
    fn too_few_databases_is_refused() {
        let e = read(&file(), 1, 2000, D, &mut |_, _| {}).unwrap_err();
        assert!(e.what.contains("database 1"), "{e}");
    }
}
