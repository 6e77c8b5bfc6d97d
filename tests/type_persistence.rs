//! Strings, lists, sets, sorted sets and hashes in Redis's serialization formats and in
//! streamd's own persistence, checked against Debian's real `redis-server` (7.0):
//!
//! - DUMP payloads streamd writes (`rdb::payload::dump_value`) RESTORE on Redis 7.0 to
//!   the same values, and Redis 7.0's payloads of every encoding it uses (listpack,
//!   quicklist, intset, hashtable, skiplist; int/embstr/raw/LZF strings) read back
//!   (`restore_value`), at the library level;
//! - the same through the binary: Redis's DUMP → RESTORE on streamd → streamd's DUMP →
//!   RESTORE on Redis, with BUSYKEY, REPLACE over another type, TTLs and the error
//!   replies compared byte for byte;
//! - `dump.rdb` files Redis 7.0 saves with each encoding forced by its configuration, and
//!   the older-encoding files of Redis's own test suite (zipmap, ziplist, quicklist 1,
//!   RDB versions 3 to 10, kept under `tests/data/rdb/`), read by `rdb::file::read` and
//!   compared key by key with what the same Redis serves after loading the same file;
//! - a Redis 7.0 replica of a streamd primary holding every type (the full-sync RDB, then
//!   RESTOREs propagated live);
//! - streamd's snapshot records for these types (`SET`/`RPUSH`/`HSET`/`SADD`/`ZADD`/
//!   `PEXPIREAT`) hold every value exactly (binary-safe, scores bit for bit, TTLs); and,
//!   once the type commands are in the binary, a restart on the same directory.

mod common;

use common::{free_port, start_server, start_server_with};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use streamd::core::keyspace::Db;
use streamd::rdb::payload;
use streamd::rdb::values::{self, Loaded};
use streamd::types::{Hash, List, Set, StringValue, Thresholds, Value, ZSet};

const IDMP: (i64, i64) = (100, 100);

// ---------------------------------------------------------------------------------------
// A value as plain data.

/// A value as plain data: what both servers must agree on.
#[derive(Debug, Clone, PartialEq)]
enum M {
    Str(Vec<u8>),
    List(Vec<Vec<u8>>),
    Set(BTreeSet<Vec<u8>>),
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    /// Ascending, scores as bits (exact; -0.0 apart from 0.0).
    ZSet(Vec<(Vec<u8>, u64)>),
}

fn model(v: &Value) -> M {
    match v {
        Value::String(s) => M::Str(s.to_bytes().to_vec()),
        Value::List(l) => M::List(l.iter().map(|e| e.to_vec()).collect()),
        Value::Set(s) => M::Set(s.iter().map(|e| e.to_vec()).collect()),
        Value::Hash(h) => M::Hash(h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect()),
        Value::ZSet(z) => M::ZSet(z.iter().map(|(m, s)| (m.to_vec(), s.to_bits())).collect()),
        Value::Stream(_) => panic!("a stream"),
    }
}

fn build(m: &M) -> Value {
    let th = Thresholds::default();
    match m {
        M::Str(s) => Value::String(StringValue::new(s)),
        M::List(v) => {
            let mut l = List::new();
            for e in v {
                l.push_back(e, &th);
            }
            values::from_list(l)
        }
        M::Set(v) => {
            let mut s = Set::new();
            for e in v {
                s.insert(e, &th);
            }
            values::from_set(s)
        }
        M::Hash(v) => {
            let mut h = Hash::new();
            for (f, x) in v {
                h.insert(f, x, &th);
            }
            values::from_hash(h)
        }
        M::ZSet(v) => {
            let mut z = ZSet::new();
            for (m, s) in v {
                z.insert(m, f64::from_bits(*s), &th);
            }
            values::from_zset(z)
        }
    }
}

/// The commands that create `m` at `key` on a Redis.
fn commands(key: &str, m: &M) -> Vec<Vec<Vec<u8>>> {
    let k = key.as_bytes().to_vec();
    let chunk = |head: &[u8], items: Vec<Vec<u8>>, per: usize| -> Vec<Vec<Vec<u8>>> {
        items
            .chunks(per)
            .map(|c| {
                let mut cmd = vec![head.to_vec(), k.clone()];
                cmd.extend(c.iter().cloned());
                cmd
            })
            .collect()
    };
    match m {
        M::Str(s) => vec![vec![b"SET".to_vec(), k.clone(), s.clone()]],
        M::List(v) => chunk(b"RPUSH", v.clone(), 200),
        M::Set(v) => chunk(b"SADD", v.iter().cloned().collect(), 200),
        M::Hash(v) => chunk(
            b"HSET",
            v.iter().flat_map(|(f, x)| [f.clone(), x.clone()]).collect(),
            200,
        ),
        M::ZSet(v) => chunk(
            b"ZADD",
            v.iter()
                .flat_map(|(m, s)| [redis_double(f64::from_bits(*s)), m.clone()])
                .collect(),
            200,
        ),
    }
}

/// A double as text Redis parses back exactly.
fn redis_double(d: f64) -> Vec<u8> {
    format!("{d:?}").into_bytes()
}

fn strs<I: IntoIterator<Item = S>, S: AsRef<[u8]>>(items: I) -> Vec<Vec<u8>> {
    items.into_iter().map(|s| s.as_ref().to_vec()).collect()
}

fn zset(pairs: &[(&str, f64)]) -> M {
    let mut v: Vec<(Vec<u8>, f64)> = pairs
        .iter()
        .map(|(m, s)| (m.as_bytes().to_vec(), *s))
        .collect();
    v.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    M::ZSet(v.into_iter().map(|(m, s)| (m, s.to_bits())).collect())
}

/// One value of every shape the DUMP check uses, and a few harder ones.
fn fixtures() -> Vec<(&'static str, M)> {
    let bin: Vec<u8> = (0..=255u8).collect();
    let compressible = vec![b'x'; 21 * 1024];
    let incompressible: Vec<u8> = (0..21 * 1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let mut biglist = strs((0..1000).map(|i| format!("item-{i}")));
    biglist.push(vec![b'x'; 100]);
    let bighash: BTreeMap<Vec<u8>, Vec<u8>> = (0..600)
        .map(|i| (format!("f{i}").into_bytes(), format!("v{i}").into_bytes()))
        .collect();
    let bigzset: Vec<(String, f64)> = (0..300)
        .map(|i| (format!("z{i:03}"), i as f64 * 0.5))
        .collect();
    let bigzset: Vec<(&str, f64)> = bigzset.iter().map(|(m, s)| (m.as_str(), *s)).collect();
    vec![
        ("str", M::Str(b"hello".to_vec())),
        ("int", M::Str(b"12345".to_vec())),
        ("negint", M::Str(b"-9000000000".to_vec())),
        ("notint", M::Str(b"007".to_vec())),
        ("emptystr", M::Str(Vec::new())),
        ("binstr", M::Str(bin.clone())),
        ("big21k", M::Str(compressible)),
        ("rand21k", M::Str(incompressible)),
        (
            "hash",
            M::Hash(
                [(&b"f"[..], &b"v"[..]), (b"n", b"1"), (b"\x00k", b"\xff")]
                    .iter()
                    .map(|(f, v)| (f.to_vec(), v.to_vec()))
                    .collect(),
            ),
        ),
        ("bighash", M::Hash(bighash)),
        (
            "widehash",
            M::Hash([(b"f".to_vec(), vec![b'w'; 100])].into_iter().collect()),
        ),
        ("list", M::List(strs(["a", "b", "c", "12"]))),
        ("biglist", M::List(biglist)),
        (
            "binlist",
            M::List(vec![
                bin.clone(),
                Vec::new(),
                b"-1".to_vec(),
                vec![b'y'; 5000],
            ]),
        ),
        ("set", M::Set(strs(["a", "b", "c"]).into_iter().collect())),
        (
            "intset",
            M::Set(strs(["1", "2", "3", "-7"]).into_iter().collect()),
        ),
        (
            "bigset",
            M::Set(
                strs((0..300).map(|i| format!("m{i}")))
                    .into_iter()
                    .collect(),
            ),
        ),
        (
            "bigintset",
            M::Set(
                strs((0..600).map(|i| (i * 7 - 2000).to_string()))
                    .into_iter()
                    .collect(),
            ),
        ),
        ("zset", zset(&[("a", 1.0), ("b", 2.5), ("c", -3.0)])),
        ("bigzset", zset(&bigzset)),
        (
            "zspecial",
            zset(&[
                ("inf", f64::INFINITY),
                ("ninf", f64::NEG_INFINITY),
                ("huge", 1e300),
                ("tiny", 5e-324),
                ("tenth", 0.1),
                ("third", 1.0 / 3.0),
                ("\x00bin", 7.0),
            ]),
        ),
    ]
}

// ---------------------------------------------------------------------------------------
// Talking to the servers.

fn connect(port: u16) -> redis::Connection {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).expect("url");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match client.get_connection() {
            Ok(c) => return c,
            Err(e) if Instant::now() > deadline => panic!("connect to {port}: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn q<T: redis::FromRedisValue>(c: &mut redis::Connection, args: &[&[u8]]) -> T {
    let mut cmd = redis::cmd(std::str::from_utf8(args[0]).expect("ascii command"));
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(c)
        .unwrap_or_else(|e| panic!("{:?}: {e}", String::from_utf8_lossy(args[0])))
}

fn qv(c: &mut redis::Connection, args: &[&[u8]]) -> Result<redis::Value, redis::RedisError> {
    let mut cmd = redis::cmd(std::str::from_utf8(args[0]).expect("ascii command"));
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(c)
}

fn run(c: &mut redis::Connection, cmds: &[Vec<Vec<u8>>]) {
    for cmd in cmds {
        let args: Vec<&[u8]> = cmd.iter().map(|a| &a[..]).collect();
        let _: redis::Value = q(c, &args);
    }
}

/// What a Redis serves at `key`, read with Redis's own commands.
fn view(c: &mut redis::Connection, key: &[u8]) -> Option<M> {
    let t: String = q(c, &[b"TYPE", key]);
    Some(match t.as_str() {
        "none" => return None,
        "string" => M::Str(q(c, &[b"GET", key])),
        "list" => M::List(q(c, &[b"LRANGE", key, b"0", b"-1"])),
        "set" => M::Set(
            q::<Vec<Vec<u8>>>(c, &[b"SMEMBERS", key])
                .into_iter()
                .collect(),
        ),
        "hash" => {
            let flat: Vec<Vec<u8>> = q(c, &[b"HGETALL", key]);
            M::Hash(
                flat.chunks(2)
                    .map(|p| (p[0].clone(), p[1].clone()))
                    .collect(),
            )
        }
        "zset" => {
            let flat: Vec<Vec<u8>> = q(c, &[b"ZRANGE", key, b"0", b"-1", b"WITHSCORES"]);
            M::ZSet(
                flat.chunks(2)
                    .map(|p| {
                        let s: f64 = std::str::from_utf8(&p[1])
                            .expect("score text")
                            .parse()
                            .expect("a score");
                        (p[0].clone(), s.to_bits())
                    })
                    .collect(),
            )
        }
        other => panic!("type {other}"),
    })
}

/// A redis-server 7.0 of our own (extra arguments, a known directory), killed on drop.
struct Redis {
    port: u16,
    child: Child,
    dir: tempfile::TempDir,
}

impl Redis {
    fn start(extra: &[&str]) -> Redis {
        Redis::start_in(tempfile::tempdir().expect("tempdir"), extra)
    }

    fn start_in(dir: tempfile::TempDir, extra: &[&str]) -> Redis {
        let program = common::REDIS_SERVER_BIN;
        assert!(
            Path::new(program).exists(),
            "{program} not found: install Debian's redis-server (scripts/test does)"
        );
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("redis.log")).expect("log");
        let mut args: Vec<String> = [
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            &dir.path().display().to_string(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        let child = Command::new(program)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone().expect("log")))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("spawn redis-server");
        let mut r = Redis { port, child, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(mut raw) = common::Raw::try_connect(port) {
                raw.set_timeout(Duration::from_secs(2));
                if let Ok(reply) = {
                    raw.send(b"*1\r\n$4\r\nPING\r\n");
                    raw.try_read_reply()
                } && reply == b"+PONG\r\n"
                {
                    return r;
                }
            }
            if Instant::now() > deadline || r.child.try_wait().ok().flatten().is_some() {
                panic!("redis-server did not start: {}", r.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("redis.log")).unwrap_or_default()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn restore_value(p: &[u8]) -> Value {
    match payload::restore_value(p, IDMP, &Thresholds::default(), now_ms()) {
        Ok(Loaded::Value(v)) => v,
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// DUMP / RESTORE.

/// streamd's payloads RESTORE on Redis 7.0 to the same value; Redis's payloads of the same
/// values, in Redis's default encodings and with each large encoding forced, read back.
#[test]
fn dump_payloads_cross_between_streamd_and_redis_70() {
    let redis = Redis::start(&[]);
    let mut r = connect(redis.port);
    for (key, m) in fixtures() {
        let p = payload::dump_value(&build(&m), None, IDMP);
        assert_eq!(
            &p[p.len() - 10..p.len() - 8],
            &10u16.to_le_bytes(),
            "{key}: version 10"
        );
        let restored: String = q(&mut r, &[b"RESTORE", key.as_bytes(), b"0", &p]);
        assert_eq!(restored, "OK", "{key}");
        assert_eq!(
            view(&mut r, key.as_bytes()).as_ref(),
            Some(&m),
            "{key}: on Redis"
        );
        // And back: Redis's own DUMP of what it restored.
        let theirs: Vec<u8> = q(&mut r, &[b"DUMP", key.as_bytes()]);
        assert_eq!(model(&restore_value(&theirs)), m, "{key}: Redis's payload");
    }
    // (No -0.0 score among the fixtures: Redis 7.0 itself turns a restored -0.0 into 0 when
    // it converts the value to a listpack; the unit tests of rdb/values.rs keep -0.0.)
    // Every encoding Redis 7.0 writes, created by its own commands.
    let configs: &[(&str, &[(&str, &str)])] = &[
        ("default", &[]),
        (
            "large",
            &[
                ("hash-max-listpack-entries", "0"),
                ("set-max-intset-entries", "0"),
                ("zset-max-listpack-entries", "0"),
                ("list-max-listpack-size", "1"),
            ],
        ),
        (
            "compressed",
            &[
                ("list-compress-depth", "1"),
                ("list-max-listpack-size", "4"),
            ],
        ),
    ];
    let mut encodings = BTreeSet::new();
    for (name, cfg) in configs {
        for (k, v) in *cfg {
            let _: String = q(&mut r, &[b"CONFIG", b"SET", k.as_bytes(), v.as_bytes()]);
        }
        for (key, m) in fixtures() {
            let key = format!("{name}:{key}");
            run(&mut r, &commands(&key, &m));
            let enc: String = q(&mut r, &[b"OBJECT", b"ENCODING", key.as_bytes()]);
            encodings.insert(enc);
            let p: Vec<u8> = q(&mut r, &[b"DUMP", key.as_bytes()]);
            assert_eq!(model(&restore_value(&p)), m, "{key}");
        }
    }
    for e in [
        "int",
        "embstr",
        "raw",
        "listpack",
        "quicklist",
        "intset",
        "hashtable",
        "skiplist",
    ] {
        assert!(encodings.contains(e), "no {e} among {encodings:?}");
    }
}

fn raw_reply(raw: &mut common::Raw, args: &[&[u8]]) -> Vec<u8> {
    raw.cmd(args)
}

/// Through the binary: Redis's DUMP → RESTORE on streamd → streamd's DUMP → RESTORE on
/// Redis gives Redis's value back; BUSYKEY, REPLACE over another type, TTLs, and the error
/// replies for broken payloads are Redis's.
#[test]
fn restore_and_dump_of_every_type_through_the_binary() {
    let redis = Redis::start(&[]);
    let sd = start_server();
    let (mut r, mut s) = (connect(redis.port), connect(sd.port));
    for (key, m) in fixtures() {
        let k = key.as_bytes();
        run(&mut r, &commands(key, &m));
        let theirs: Vec<u8> = q(&mut r, &[b"DUMP", k]);
        let ok: String = q(&mut s, &[b"RESTORE", k, b"0", &theirs]);
        assert_eq!(ok, "OK");
        let t_sd: String = q(&mut s, &[b"TYPE", k]);
        let t_r: String = q(&mut r, &[b"TYPE", k]);
        assert_eq!(t_sd, t_r, "{key}");
        let ours: Vec<u8> = q(&mut s, &[b"DUMP", k]);
        let back = format!("back:{key}");
        let ok: String = q(&mut r, &[b"RESTORE", back.as_bytes(), b"0", &ours]);
        assert_eq!(ok, "OK");
        assert_eq!(view(&mut r, back.as_bytes()), Some(m.clone()), "{key}");
        assert_eq!(model(&restore_value(&ours)), m, "{key}");
    }
    // REPLACE over another type (no WRONGTYPE), BUSYKEY without it, TTLs.
    let hash_payload: Vec<u8> = q(&mut r, &[b"DUMP", b"hash"]);
    let (mut rr, mut sr) = (redis.raw_conn(), sd.raw());
    // A string at x (through RESTORE: the strings family's SET may not be in this build)
    // and a stream.
    let str_payload: Vec<u8> = q(&mut r, &[b"DUMP", b"str"]);
    for raw in [&mut rr, &mut sr] {
        raw_reply(raw, &[b"RESTORE", b"x", b"0", &str_payload, b"REPLACE"]);
        raw_reply(raw, &[b"XADD", b"stream", b"1-1", b"f", b"v"]);
    }
    let future = (now_ms() + 3_600_000).to_string();
    let past = "1000".to_string();
    let cases: Vec<Vec<&[u8]>> = vec![
        vec![b"RESTORE", b"x", b"0", &hash_payload],
        vec![b"RESTORE", b"stream", b"0", &hash_payload],
        vec![b"RESTORE", b"stream", b"0", &hash_payload, b"REPLACE"],
        vec![b"TYPE", b"stream"],
        vec![b"RESTORE", b"x", b"5000", &hash_payload, b"REPLACE"],
        vec![b"TYPE", b"x"],
        vec![
            b"RESTORE",
            b"y",
            future.as_bytes(),
            &hash_payload,
            b"ABSTTL",
        ],
        vec![b"RESTORE", b"z", past.as_bytes(), &hash_payload, b"ABSTTL"],
        vec![b"EXISTS", b"z"],
        vec![
            b"RESTORE",
            b"x",
            b"0",
            &hash_payload,
            b"REPLACE",
            b"IDLETIME",
            b"10",
        ],
        vec![b"RESTORE", b"w", b"0", &hash_payload, b"FREQ", b"3"],
    ];
    for case in &cases {
        assert_eq!(
            common::escape(&raw_reply(&mut sr, case)),
            common::escape(&raw_reply(&mut rr, case)),
            "{:?}",
            case.iter()
                .map(|a| String::from_utf8_lossy(a))
                .collect::<Vec<_>>()
        );
    }
    // y has its absolute TTL; x was last restored without one.
    let (a, b): (i64, i64) = (q(&mut s, &[b"PTTL", b"y"]), q(&mut r, &[b"PTTL", b"y"]));
    assert!(
        a > 3_000_000 && b > 3_000_000 && (a - b).abs() < 2000,
        "PTTL {a} vs {b}"
    );
    let (a, b): (i64, i64) = (q(&mut s, &[b"PTTL", b"x"]), q(&mut r, &[b"PTTL", b"x"]));
    assert_eq!((a, b), (-1, -1));
    // Broken payloads: an empty collection, a bad listpack, a duplicate, a lying length;
    // and bytes after a good value, which Redis ignores.
    let with_footer = |mut body: Vec<u8>| {
        body.extend_from_slice(&10u16.to_le_bytes());
        let crc = streamd::rdb::crc64::crc64(&body);
        body.extend_from_slice(&crc.to_le_bytes());
        body
    };
    let empty_list = with_footer(vec![1, 0]);
    let bad_lp = with_footer(vec![16, 7, 7, 0, 0, 0, 0, 0, 0xFE]);
    let dup_set = with_footer(vec![2, 2, 1, b'a', 1, b'a']);
    let lying = with_footer(vec![1, 0x80, 0xFF, 0xFF, 0xFF, 0xFF, 1, b'a']);
    let trailing = with_footer(vec![0, 1, b'a', 0]);
    for p in [&empty_list, &bad_lp, &dup_set, &lying, &trailing] {
        let case: Vec<&[u8]> = vec![b"RESTORE", b"bad", b"0", p];
        assert_eq!(
            common::escape(&raw_reply(&mut sr, &case)),
            common::escape(&raw_reply(&mut rr, &case)),
            "{}",
            common::escape(p)
        );
    }
}

impl Redis {
    fn raw_conn(&self) -> common::Raw {
        common::Raw::connect(self.port)
    }
}

// ---------------------------------------------------------------------------------------
// RDB files.

/// Reads `data` as `--import-rdb` does; every key of every database with its expiry.
fn import(data: &[u8], now: u64) -> (Vec<Db>, streamd::rdb::file::ImportStats) {
    streamd::rdb::file::read(data, 16, now, IDMP, &mut |_, _| {}).expect("the file reads")
}

/// Compares every key streamd read from a file with what `redis` serves (database 0..16).
fn assert_same_keys(redis: &mut redis::Connection, dbs: &[Db]) -> usize {
    let mut n = 0;
    for (i, db) in dbs.iter().enumerate() {
        let _: String = q(redis, &[b"SELECT", i.to_string().as_bytes()]);
        let mut theirs: Vec<Vec<u8>> = q(redis, &[b"KEYS", b"*"]);
        theirs.sort();
        let mut ours: Vec<Vec<u8>> = db.keys.iter().map(|(k, _)| k.to_vec()).collect();
        ours.sort();
        assert_eq!(
            ours.iter()
                .map(|k| String::from_utf8_lossy(k))
                .collect::<Vec<_>>(),
            theirs
                .iter()
                .map(|k| String::from_utf8_lossy(k))
                .collect::<Vec<_>>(),
            "keys of db {i}"
        );
        for key in &ours {
            let v = db.get(key).expect("listed");
            if matches!(v, Value::Stream(_)) {
                continue;
            }
            assert_eq!(
                Some(model(v)),
                view(redis, key),
                "{}",
                String::from_utf8_lossy(key)
            );
            let pexpiretime: i64 = q(redis, &[b"PEXPIRETIME", key]);
            let ours_at = db.expires.get(key.as_slice()).map_or(-1, |&at| at as i64);
            assert_eq!(
                ours_at,
                pexpiretime,
                "expiry of {}",
                String::from_utf8_lossy(key)
            );
            n += 1;
        }
    }
    let _: String = q(redis, &[b"SELECT", b"0"]);
    n
}

/// `dump.rdb` files Redis 7.0 saves, with every encoding it has forced by configuration,
/// read as `--import-rdb` reads them.
#[test]
fn rdb_files_saved_by_redis_70_import_in_every_encoding() {
    let redis = Redis::start(&["--enable-debug-command", "yes"]);
    let mut r = connect(redis.port);
    let mut expected = 0;
    let configs: &[(&str, &[(&str, &str)])] = &[
        ("default", &[]),
        (
            "large",
            &[
                ("hash-max-listpack-entries", "0"),
                ("set-max-intset-entries", "0"),
                ("zset-max-listpack-entries", "0"),
                ("list-max-listpack-size", "2"),
            ],
        ),
        (
            "nocompress",
            &[("rdbcompression", "no"), ("list-max-listpack-size", "-5")],
        ),
    ];
    for (db, (name, cfg)) in configs.iter().enumerate() {
        let _: String = q(&mut r, &[b"SELECT", db.to_string().as_bytes()]);
        for (k, v) in *cfg {
            let _: String = q(&mut r, &[b"CONFIG", b"SET", k.as_bytes(), v.as_bytes()]);
        }
        for (key, m) in fixtures() {
            let key = format!("{name}:{key}");
            run(&mut r, &commands(&key, &m));
            expected += 1;
        }
    }
    // Quicklist PLAIN nodes (elements above the packed threshold), in db 3.
    let _: String = q(&mut r, &[b"SELECT", b"3"]);
    let _: redis::Value = q(&mut r, &[b"DEBUG", b"QUICKLIST-PACKED-THRESHOLD", b"100"]);
    let plain = M::List(vec![
        vec![b'p'; 300],
        b"small".to_vec(),
        vec![b'q'; 1000],
        b"7".to_vec(),
    ]);
    run(&mut r, &commands("plainnodes", &plain));
    // TTLs: one far away, one that will have passed at import time.
    let _: i64 = q(&mut r, &[b"PEXPIRE", b"plainnodes", b"86400000"]);
    run(&mut r, &commands("soon", &M::Str(b"gone".to_vec())));
    let _: i64 = q(&mut r, &[b"PEXPIRE", b"soon", b"200000"]);
    let _: String = q(&mut r, &[b"SAVE"]);
    let data = std::fs::read(redis.dir.path().join("dump.rdb")).expect("dump.rdb");
    assert_eq!(&data[..9], b"REDIS0010");
    let (dbs, stats) = import(&data, now_ms());
    // Every value streamd read is what Redis serves.
    let compared = assert_same_keys(&mut r, &dbs);
    assert_eq!(compared, expected + 2);
    assert_eq!(stats.empty, 0);
    assert!(stats.skipped.is_empty(), "{:?}", stats.skipped);
    for t in ["string", "list", "set", "zset", "hash"] {
        assert!(
            stats.imported.get(t).is_some_and(|&n| n > 0),
            "{t}: {:?}",
            stats.imported
        );
    }
    // Later than `soon`'s TTL: that key is skipped as expired, the rest still load.
    let (later, stats) = import(&data, now_ms() + 300_000);
    assert_eq!(stats.expired, 1);
    assert!(later[3].get(b"soon").is_none());
    assert!(later[3].get(b"plainnodes").is_some());
    // Every truncation is refused, never a panic.
    for cut in (0..data.len()).step_by(97) {
        assert!(
            streamd::rdb::file::read(&data[..cut], 16, now_ms(), IDMP, &mut |_, _| {}).is_err()
        );
    }
}

/// The RDB files of Redis's own test suite (tests/assets of 7.0.15), copied to
/// tests/data/rdb/: RDB versions 3 to 10, with zipmap hashes (type 9), ziplist lists,
/// hashes and sorted sets (10, 13, 12), quicklist 1 (14), intsets (11), type 3
/// zsets... Each loads in Redis 7.0 (which converts them) and in streamd, to the same keys.
#[test]
fn older_encodings_from_redis_test_files_import() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/rdb");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/data/rdb")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "rdb"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    for f in files {
        let data = std::fs::read(&f).expect("fixture");
        let tmp = tempfile::tempdir().expect("tempdir");
        std::fs::write(tmp.path().join("fixture.rdb"), &data).expect("copy");
        let redis = Redis::start_in(tmp, &["--dbfilename", "fixture.rdb"]);
        let mut r = connect(redis.port);
        let (dbs, _) = import(&data, now_ms());
        let n = assert_same_keys(&mut r, &dbs);
        assert!(n > 0, "{}: no keys", f.display());
    }
}

// ---------------------------------------------------------------------------------------
// Replication: a Redis 7.0 replica of streamd.

#[test]
fn a_redis_70_replica_of_streamd_gets_every_type() {
    let sd = start_server();
    let mut s = connect(sd.port);
    let all = fixtures();
    let (before, after) = all.split_at(all.len() / 2);
    for (key, m) in before {
        let p = payload::dump_value(&build(m), None, IDMP);
        let _: String = q(&mut s, &[b"RESTORE", key.as_bytes(), b"0", &p]);
    }
    let _: String = q(
        &mut s,
        &[
            b"RESTORE",
            b"ttl",
            b"3600000",
            &payload::dump_value(&build(&M::Str(b"t".to_vec())), None, IDMP),
        ],
    );
    let replica = Redis::start(&[]);
    let mut r = connect(replica.port);
    let _: String = q(
        &mut r,
        &[b"REPLICAOF", b"127.0.0.1", sd.port.to_string().as_bytes()],
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let info: String = q(&mut r, &[b"INFO", b"replication"]);
        if info.contains("master_link_status:up") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no sync: {info}\n{}",
            replica.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Then the live stream: RESTOREs (propagated as given, TTL 0).
    for (key, m) in after {
        let p = payload::dump_value(&build(m), None, IDMP);
        let _: String = q(&mut s, &[b"RESTORE", key.as_bytes(), b"0", &p]);
    }
    let _: String = q(
        &mut s,
        &[
            b"RESTORE",
            b"list",
            b"0",
            &payload::dump_value(&build(&M::List(strs(["replaced"]))), None, IDMP),
            b"REPLACE",
        ],
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let n: i64 = q(&mut r, &[b"DBSIZE"]);
        if n == all.len() as i64 + 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "replica has {n} keys\n{}",
            replica.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut wait = 0;
    while view(&mut r, b"list") != Some(M::List(strs(["replaced"]))) && wait < 100 {
        std::thread::sleep(Duration::from_millis(50));
        wait += 1;
    }
    for (key, m) in &all {
        let want = if *key == "list" {
            M::List(strs(["replaced"]))
        } else {
            m.clone()
        };
        assert_eq!(
            view(&mut r, key.as_bytes()),
            Some(want),
            "{key} on the replica"
        );
    }
    let pttl: i64 = q(&mut r, &[b"PTTL", b"ttl"]);
    assert!(pttl > 3_000_000, "PTTL {pttl}");
}

// ---------------------------------------------------------------------------------------
// streamd's snapshots.

/// A model keyspace: (database, key) → what it holds.
type Keys<T> = BTreeMap<(usize, Vec<u8>), T>;

/// Applies snapshot records for the five types to a model keyspace, as the command path
/// would (SET replaces; RPUSH/HSET/SADD/ZADD add; PEXPIREAT sets the TTL).
fn replay(path: &Path) -> (Keys<M>, Keys<u64>) {
    use streamd::persist::load::{FrameReader, Next};
    use streamd::persist::snapshot::{HEADER_LEN, TRAILER_LEN};
    let len = std::fs::metadata(path).expect("snapshot").len();
    let mut fr = FrameReader::open(path, HEADER_LEN, Some(len - TRAILER_LEN)).expect("open");
    let (mut keys, mut ttls) = (BTreeMap::new(), BTreeMap::new());
    let mut db = 0usize;
    loop {
        let argv = match fr.next_frame().expect("frames") {
            Next::Record { argv, .. } => argv,
            Next::End => break,
            other => panic!("{other:?}"),
        };
        let name = String::from_utf8_lossy(&argv[0]).to_ascii_uppercase();
        if name == "SELECT" {
            db = std::str::from_utf8(&argv[1])
                .expect("db")
                .parse()
                .expect("db");
            continue;
        }
        let k = (db, argv[1].to_vec());
        let rest: Vec<Vec<u8>> = argv[2..].iter().map(|a| a.to_vec()).collect();
        match name.as_str() {
            "SET" => {
                keys.insert(k, M::Str(rest[0].clone()));
            }
            "RPUSH" => match keys.entry(k).or_insert(M::List(Vec::new())) {
                M::List(l) => l.extend(rest),
                other => panic!("{other:?}"),
            },
            "SADD" => match keys.entry(k).or_insert(M::Set(BTreeSet::new())) {
                M::Set(s) => s.extend(rest),
                other => panic!("{other:?}"),
            },
            "HSET" => match keys.entry(k).or_insert(M::Hash(BTreeMap::new())) {
                M::Hash(h) => h.extend(rest.chunks(2).map(|p| (p[0].clone(), p[1].clone()))),
                other => panic!("{other:?}"),
            },
            "ZADD" => match keys.entry(k).or_insert(M::ZSet(Vec::new())) {
                M::ZSet(z) => {
                    for p in rest.chunks(2) {
                        let s: f64 = std::str::from_utf8(&p[0])
                            .expect("text")
                            .parse()
                            .expect("score");
                        z.push((p[1].clone(), s.to_bits()));
                    }
                }
                other => panic!("{other:?}"),
            },
            "PEXPIREAT" => {
                let at: u64 = std::str::from_utf8(&rest[0])
                    .expect("ms")
                    .parse()
                    .expect("ms");
                ttls.insert(k, at);
            }
            other => panic!("unexpected record {other}"),
        }
    }
    (keys, ttls)
}

/// The snapshot records of every fixture (and collections large enough to need several
/// records) hold the values exactly, with their TTLs, in two databases.
#[test]
fn snapshot_records_hold_every_value_exactly() {
    let mut dbs: Vec<Db> = (0..2).map(|_| Db::default()).collect();
    let mut want = BTreeMap::new();
    let mut ttls = BTreeMap::new();
    let huge: Vec<Vec<u8>> = (0..3000u32).map(|i| vec![(i % 251) as u8; 700]).collect();
    let mut all = fixtures();
    all.push(("hugelist", M::List(huge.clone())));
    all.push((
        "hugeset",
        M::Set(
            huge.iter()
                .enumerate()
                .map(|(i, v)| [v.clone(), (i as u32).to_le_bytes().to_vec()].concat())
                .collect(),
        ),
    ));
    for (i, (key, m)) in all.iter().enumerate() {
        let db = i % 2;
        dbs[db].insert(key.as_bytes(), build(m));
        want.insert((db, key.as_bytes().to_vec()), m.clone());
        if i % 3 == 0 {
            let at = 4_000_000_000_000 + i as u64;
            dbs[db].set_expire(key.as_bytes(), at);
            ttls.insert((db, key.as_bytes().to_vec()), at);
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("dump.snap");
    streamd::persist::snapshot::save(&path, &dbs, &[], now_ms()).expect("save");
    let (got, got_ttls) = replay(&path);
    // The model sorts sorted sets by replaying in record order, which must be ascending.
    for (k, m) in &got {
        if let M::ZSet(z) = m {
            let mut sorted = z.clone();
            sorted.sort_by(|a, b| {
                f64::from_bits(a.1)
                    .total_cmp(&f64::from_bits(b.1))
                    .then(a.0.cmp(&b.0))
            });
            assert_eq!(&sorted, z, "{k:?} in ascending order");
        }
    }
    assert_eq!(got, want);
    assert_eq!(got_ttls, ttls);
}

/// Through the binary, once the type commands are in it (they replay the snapshot): every
/// type survives a restart on the same directory.
#[test]
fn every_type_survives_a_restart_once_the_commands_are_in() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8");
    let sd = start_server_with(&["--dir", d]);
    let mut s = connect(sd.port);
    let has: redis::Value = q(
        &mut s,
        &[
            b"COMMAND", b"INFO", b"hset", b"rpush", b"sadd", b"zadd", b"set",
        ],
    );
    let complete =
        matches!(&has, redis::Value::Array(v) if v.iter().all(|c| !matches!(c, redis::Value::Nil)));
    if !complete {
        eprintln!(
            "every_type_survives_a_restart_once_the_commands_are_in: SET/RPUSH/HSET/SADD/ZADD \
             are not in this build yet (the type families are merged separately); only the \
             library-level snapshot test ran"
        );
        return;
    }
    for (key, m) in fixtures() {
        let p = payload::dump_value(&build(&m), None, IDMP);
        let _: String = q(&mut s, &[b"RESTORE", key.as_bytes(), b"3600000", &p]);
    }
    let _: redis::Value = qv(&mut s, &[b"SAVE"]).expect("SAVE");
    drop(s);
    drop(sd);
    let sd = start_server_with(&["--dir", d]);
    let mut s = connect(sd.port);
    for (key, m) in fixtures() {
        let p: Vec<u8> = q(&mut s, &[b"DUMP", key.as_bytes()]);
        assert_eq!(model(&restore_value(&p)), m, "{key} after the restart");
        let pttl: i64 = q(&mut s, &[b"PTTL", key.as_bytes()]);
        assert!(pttl > 3_000_000, "{key}: PTTL {pttl}");
    }
}

/// Every fixture file (Redis 7.0's encodings, Redis's own test files), with its CRC
/// zeroed so that damage reaches the value readers: thousands of flipped, cut, inserted
/// and overwritten bytes are refused or read, never a panic, and a file that still reads
/// holds only what the readers accept.
#[test]
fn damaged_rdb_files_never_panic() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/rdb");
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).expect("tests/data/rdb") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "rdb") {
            continue;
        }
        files += 1;
        let mut data = std::fs::read(&path).expect("fixture");
        let version: u32 = std::str::from_utf8(&data[5..9])
            .expect("digits")
            .parse()
            .expect("version");
        if version >= 5 {
            let n = data.len();
            data[n - 8..].fill(0); // CRC 0: not checked
        }
        assert!(
            streamd::rdb::file::read(&data, 16, now_ms(), IDMP, &mut |_, _| {}).is_ok(),
            "{} reads with its CRC zeroed",
            path.display()
        );
        // Keep the header (and so the version) intact: damage the body.
        let body = 9..data.len() - if version >= 5 { 8 } else { 0 };
        for _ in 0..4000 {
            let mut d = data.clone();
            let at = body.start + (rnd() as usize) % body.len();
            match rnd() % 4 {
                0 => d[at] ^= 1 << (rnd() % 8),
                1 => d.truncate(at),
                2 => d.insert(at, rnd() as u8),
                _ => d[at] = rnd() as u8,
            }
            let _ = streamd::rdb::file::read(&d, 16, now_ms(), IDMP, &mut |_, _| {});
        }
    }
    assert!(files >= 6, "{files} fixture files");
}
