//! Hash field expiration (Redis 7.4's HEXPIRE family, HTTL family, HPERSIST; 8.0's
//! HGETEX and HSETEX) against the real binary.
//!
//! Debian's Redis is 7.0, which has none of these commands, so the differential part is
//! against what Redis documents and its own suite (`tests/unit/type/hash-field-expire.tcl`)
//! asserts: the reply codes and error strings are written out here. The rest pins what
//! streamd adds around them: expired fields invisible to every read, the active cycle,
//! keyspace events, the logged effects, restarts (log and snapshot), RDB and DUMP/RESTORE,
//! RENAME/COPY/MOVE, and a replica dropping the same fields as its primary.
//!
//! Every wait is a bounded poll on a condition, never a bare sleep.

mod common;

use common::differential::*;
use common::reply::{arr, bulk, err, int, null};
use common::*;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as u64
}

/// Polls `probe` every 10 ms until it holds, for at most 10 s.
fn wait_until(what: &str, mut probe: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !probe() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn ints(v: &[i64]) -> Vec<u8> {
    arr(&v.iter().map(|&n| int(n)).collect::<Vec<_>>())
}

/// An integer reply's value.
fn int_of(reply: &[u8]) -> i64 {
    let text = String::from_utf8_lossy(reply);
    text.trim_start_matches(':')
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("not an integer reply: {text:?}"))
}

/// The integers of an array-of-integers reply.
fn ints_of(reply: &[u8]) -> Vec<i64> {
    String::from_utf8_lossy(reply)
        .lines()
        .skip(1)
        .map(|l| l.trim_start_matches(':').parse().expect("integer element"))
        .collect()
}

#[test]
fn replies_and_errors_are_the_ones_redis_documents() {
    let s = start_server();
    let mut r = s.raw();
    let far = (now_ms() / 1000 + 100_000).to_string();
    let max_s = ((1u64 << 48) / 1000).to_string();
    let max_ms = (1u64 << 48).to_string();
    c(&mut r, "HSET h f1 v1 f2 v2 f3 v3");
    c(&mut r, "SET str x");
    let arity = |name: &str| {
        err(&format!(
            "ERR wrong number of arguments for '{name}' command"
        ))
    };
    check(
        &mut r,
        &[
            // Per-field codes: -2 missing, 0 condition not met, 1 set.
            (
                &["HEXPIRE", "h", "100", "FIELDS", "2", "f1", "nope"],
                ints(&[1, -2]),
            ),
            (
                &["HEXPIRE", "h", "200", "NX", "FIELDS", "2", "f1", "f2"],
                ints(&[0, 1]),
            ),
            (
                &["HEXPIRE", "h", "50", "XX", "FIELDS", "2", "f2", "f3"],
                ints(&[1, 0]),
            ),
            (
                &["HEXPIRE", "h", "40", "GT", "FIELDS", "2", "f1", "f3"],
                ints(&[0, 0]),
            ),
            (
                &["HEXPIRE", "h", "40", "LT", "FIELDS", "2", "f1", "f3"],
                ints(&[1, 1]),
            ),
            (&["HEXPIREAT", "h", &far, "FIELDS", "1", "f3"], ints(&[1])),
            (
                &["HEXPIRETIME", "h", "FIELDS", "2", "f3", "nope"],
                ints(&[far.parse().expect("n"), -2]),
            ),
            (&["HTTL", "h", "FIELDS", "1", "nope"], ints(&[-2])),
            (
                &["HTTL", "missing", "FIELDS", "2", "a", "b"],
                ints(&[-2, -2]),
            ),
            (
                &["HEXPIRE", "missing", "10", "FIELDS", "1", "a"],
                ints(&[-2]),
            ),
            (&["HPERSIST", "missing", "FIELDS", "1", "a"], ints(&[-2])),
            (
                &["HGETEX", "missing", "EX", "10", "FIELDS", "1", "a"],
                arr(&[null(false)]),
            ),
            (
                &["HPERSIST", "h", "FIELDS", "3", "f1", "nope", "f1"],
                ints(&[1, -2, -1]),
            ),
            (&["HTTL", "h", "FIELDS", "1", "f1"], ints(&[-1])),
            // A time in the past deletes (2), the key too once empty.
            (&["HSET", "gone", "a", "1", "b", "2"], int(2)),
            (&["HPEXPIREAT", "gone", "1", "FIELDS", "1", "a"], ints(&[2])),
            (&["HGETALL", "gone"], arr(&[bulk("b"), bulk("2")])),
            (
                &["HEXPIRE", "gone", "0", "FIELDS", "2", "b", "a"],
                ints(&[2, -2]),
            ),
            (&["EXISTS", "gone"], int(0)),
            // Errors, in Redis's words.
            (
                &["HEXPIRE", "h", "-1", "FIELDS", "1", "f1"],
                err("ERR invalid expire time, must be >= 0"),
            ),
            (
                &["HEXPIRE", "h", "x", "FIELDS", "1", "f1"],
                err("ERR value is not an integer or out of range"),
            ),
            (
                &["HEXPIRE", "h", &max_s, "FIELDS", "1", "f1"],
                err("ERR invalid expire time in 'hexpire' command"),
            ),
            (
                &["HPEXPIRE", "h", &max_ms, "FIELDS", "1", "f1"],
                err("ERR invalid expire time in 'hpexpire' command"),
            ),
            (
                &["HPEXPIREAT", "h", &max_ms, "FIELDS", "1", "f1"],
                err("ERR invalid expire time in 'hpexpireat' command"),
            ),
            (
                &["HPEXPIRE", "h", "1000", "NX", "FIELDS", "0", "f1"],
                err("ERR Parameter `numFields` should be greater than 0"),
            ),
            (
                &[
                    "HPEXPIRE", "h", "1000", "NX", "FIELDS", "4", "f1", "f2", "f3",
                ],
                err("ERR The `numfields` parameter must match the number of arguments"),
            ),
            (
                &["HPEXPIRE", "h", "1000", "FOO", "1", "f1"],
                err("ERR Mandatory argument FIELDS is missing or not at the right position"),
            ),
            (&["HPEXPIRE", "h", "1000", "FIELDS", "1"], arity("hpexpire")),
            (
                &["HTTL", "h", "FIELDS", "0", "f1"],
                err("ERR Number of fields must be a positive integer"),
            ),
            (
                &["HTTL", "h", "FIELDS", "2", "f1"],
                err("ERR The `numfields` parameter must match the number of arguments"),
            ),
            (
                &["HTTL", "h", "XFIELDS", "1", "f1"],
                err("ERR Mandatory argument FIELDS is missing or not at the right position"),
            ),
            (&["HPERSIST", "h", "FIELDS", "1"], arity("hpersist")),
            (
                &["HPERSIST", "h", "FIELDS", "4", "f1", "f2", "f3"],
                err("ERR The `numfields` parameter must match the number of arguments"),
            ),
            (
                &["HTTL", "str", "FIELDS", "1", "f1"],
                err("WRONGTYPE Operation against a key holding the wrong kind of value"),
            ),
            (
                &["HEXPIRE", "str", "10", "FIELDS", "1", "f1"],
                err("WRONGTYPE Operation against a key holding the wrong kind of value"),
            ),
            (
                &["HGETEX", "h", "FIELDS", "0", "a"],
                err("ERR Number of fields must be a positive integer"),
            ),
            (
                &["HGETEX", "h", "PXAT", "1", "1"],
                err("ERR Mandatory argument FIELDS is missing or not at the right position"),
            ),
            (
                &["HGETEX", "h", "PERSIST", "1", "FIELDS", "1", "a"],
                err("ERR Mandatory argument FIELDS is missing or not at the right position"),
            ),
            (
                &["HGETEX", "h", "EX", "bla", "FIELDS", "1", "a"],
                err("ERR value is not an integer or out of range"),
            ),
            (
                &["HGETEX", "h", "PX", "-1", "FIELDS", "1", "a"],
                err("ERR invalid expire time, must be >= 0"),
            ),
            (
                &["HGETEX", "h", "EX", &max_s, "FIELDS", "1", "a"],
                err("ERR invalid expire time in 'hgetex' command"),
            ),
            (&["HGETEX", "h"], arity("hgetex")),
            (&["HSETEX", "h", "fields", "2", "a", "b"], arity("hsetex")),
            (
                &["HSETEX", "h", "fields", "1", "a", "b", "unknown"],
                arity("hsetex"),
            ),
            (
                &["HSETEX", "h", "nx", "fields", "1", "a", "b"],
                err("ERR unknown argument: nx"),
            ),
            (
                &[
                    "HSETEX", "h", "fxx", "fnx", "EX", "100", "fields", "1", "a", "b",
                ],
                err("ERR Only one of FXX or FNX arguments can be specified"),
            ),
            (
                &[
                    "HSETEX", "h", "EX", "100", "KEEPTTL", "fields", "1", "a", "b",
                ],
                err("ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified"),
            ),
            (
                &["HSETEX", "h", "ex", "fields", "1", "a", "b"],
                err("ERR value is not an integer or out of range"),
            ),
            (
                &["HSETEX", "h", "EXAT", "-1", "1", "a", "b"],
                err("ERR invalid expire time, must be >= 0"),
            ),
            (
                &["HSETEX", "h", "fields", "0", "a", "b"],
                err("ERR invalid number of fields"),
            ),
            (
                &["HSETEX", "h", "fields", "x", "a", "b"],
                err("ERR invalid number of fields"),
            ),
            // HSETEX conditions: 0 when refused, nothing created.
            (&["HSETEX", "nokey", "FXX", "FIELDS", "1", "a", "b"], int(0)),
            (&["EXISTS", "nokey"], int(0)),
            (
                &[
                    "HSETEX", "hs", "FNX", "EX", "100", "FIELDS", "2", "a", "1", "b", "2",
                ],
                int(1),
            ),
            (
                &["HSETEX", "hs", "FNX", "FIELDS", "2", "a", "1", "c", "3"],
                int(0),
            ),
            (
                &["HSETEX", "hs", "FXX", "KEEPTTL", "FIELDS", "1", "a", "9"],
                int(1),
            ),
            (&["HTTL", "hs", "FIELDS", "2", "a", "c"], ints(&[100, -2])),
            (&["HSETEX", "hs", "FIELDS", "1", "a", "10"], int(1)),
            (&["HTTL", "hs", "FIELDS", "2", "a", "b"], ints(&[-1, 100])),
            (
                &["HSETEX", "hs", "PXAT", "1", "FIELDS", "1", "a", "x"],
                int(1),
            ),
            (&["HGETALL", "hs"], arr(&[bulk("b"), bulk("2")])),
            // HGETEX: values, TTLs set, dropped, or the field deleted.
            (&["HSET", "g", "a", "1", "b", "2", "c", "3"], int(3)),
            (
                &["HGETEX", "g", "EX", "100", "FIELDS", "2", "a", "nope"],
                arr(&[bulk("1"), null(false)]),
            ),
            (&["HTTL", "g", "FIELDS", "1", "a"], ints(&[100])),
            (
                &["HGETEX", "g", "PERSIST", "FIELDS", "2", "a", "b"],
                arr(&[bulk("1"), bulk("2")]),
            ),
            (&["HTTL", "g", "FIELDS", "1", "a"], ints(&[-1])),
            (
                &["HGETEX", "g", "PXAT", "1", "FIELDS", "2", "a", "a"],
                arr(&[bulk("1"), null(false)]),
            ),
            (
                &["HGETEX", "g", "FIELDS", "3", "a", "b", "c"],
                arr(&[null(false), bulk("2"), bulk("3")]),
            ),
            (
                &["HGETEX", "g", "EXAT", "1", "FIELDS", "2", "b", "c"],
                arr(&[bulk("2"), bulk("3")]),
            ),
            (&["EXISTS", "g"], int(0)),
        ],
    );
    // HPTTL is in ms, HTTL rounds up to whole seconds.
    c(&mut r, "HPEXPIRE h 1500 FIELDS 1 f1");
    let pttl = ints_of(&r.cmd_str(&["HPTTL", "h", "FIELDS", "1", "f1"]))[0];
    assert!((1..=1500).contains(&pttl), "{pttl}");
    assert_eq!(
        ints_of(&r.cmd_str(&["HTTL", "h", "FIELDS", "1", "f1"])),
        [2]
    );
    let at = ints_of(&r.cmd_str(&["HPEXPIRETIME", "h", "FIELDS", "1", "f1"]))[0];
    assert!((at - now_ms() as i64 - 1500).abs() < 1000, "{at}");
    // MEMORY USAGE counts the field TTLs kept beside the hash.
    let with = int_of(&r.cmd_str(&["MEMORY", "USAGE", "h"]));
    c(&mut r, "HSET copy f1 v1 f2 v2 f3 v3");
    let without = int_of(&r.cmd_str(&["MEMORY", "USAGE", "copy"]));
    assert!(with > without, "{with} > {without}");
    // OBJECT ENCODING: listpackex while a listpack hash has field TTLs.
    assert_eq!(r.cmd_str(&["OBJECT", "ENCODING", "h"]), bulk("listpackex"));
    c(&mut r, "HPERSIST h FIELDS 3 f1 f2 f3");
    assert_eq!(r.cmd_str(&["OBJECT", "ENCODING", "h"]), bulk("listpack"));
}

#[test]
fn command_rows_are_redis_s() {
    let s = start_server();
    let mut r = s.raw();
    for (name, arity, flag) in [
        ("hexpire", -6, "denyoom"),
        ("hpexpireat", -6, "denyoom"),
        ("httl", -5, "readonly"),
        ("hpexpiretime", -5, "readonly"),
        ("hpersist", -5, "write"),
        ("hgetex", -5, "write"),
        ("hsetex", -6, "denyoom"),
    ] {
        let info = String::from_utf8_lossy(&r.cmd_str(&["COMMAND", "INFO", name])).into_owned();
        assert!(info.contains(&format!(":{arity}\r\n")), "{name}: {info}");
        assert!(info.contains(flag), "{name}: {info}");
        assert!(info.contains("@hash"), "{name}: {info}");
    }
    let docs = String::from_utf8_lossy(&r.cmd_str(&["COMMAND", "DOCS", "hsetex"])).into_owned();
    assert!(docs.contains("8.0.0"), "{docs}");
}

#[test]
fn hset_drops_a_field_ttl_and_the_increments_keep_it() {
    let s = start_server();
    let mut r = s.raw();
    c(&mut r, "HSET h a 1 b 2 c x");
    c(&mut r, "HEXPIRE h 100 FIELDS 3 a b c");
    c(&mut r, "HINCRBY h a 5");
    c(&mut r, "HINCRBYFLOAT h b 0.5");
    c(&mut r, "HSET h c y");
    assert_eq!(
        r.cmd_str(&["HTTL", "h", "FIELDS", "3", "a", "b", "c"]),
        ints(&[100, 100, -1])
    );
    // HDEL and re-adding: no TTL left behind.
    c(&mut r, "HDEL h a");
    c(&mut r, "HSET h a 1");
    assert_eq!(r.cmd_str(&["HTTL", "h", "FIELDS", "1", "a"]), ints(&[-1]));
    // Overwriting the whole key with another type, then a new hash: no TTL either.
    c(&mut r, "SET h str");
    c(&mut r, "DEL h");
    c(&mut r, "HSET h b 1");
    assert_eq!(r.cmd_str(&["HTTL", "h", "FIELDS", "1", "b"]), ints(&[-1]));
}

#[test]
fn expired_fields_are_invisible_to_every_read() {
    let s = start_server_with(&["--hz", "1"]);
    let mut r = s.raw();
    for encoding in ["listpack", "hashtable"] {
        c(&mut r, "DEL h");
        c(&mut r, "HSET h keep 1 go 22");
        if encoding == "hashtable" {
            r.cmd_str(&["HSET", "h", "big", &"x".repeat(100)]);
        }
        assert_eq!(r.cmd_str(&["OBJECT", "ENCODING", "h"]), bulk(encoding));
        c(&mut r, "HPEXPIRE h 20 FIELDS 1 go");
        wait_until("the field to expire", || {
            r.cmd_str(&["HGET", "h", "go"]) == null(false)
        });
        let n = if encoding == "hashtable" { 2 } else { 1 };
        assert_eq!(r.cmd_str(&["HEXISTS", "h", "go"]), int(0));
        assert_eq!(r.cmd_str(&["HSTRLEN", "h", "go"]), int(0));
        assert_eq!(r.cmd_str(&["HLEN", "h"]), int(n));
        assert!(!c(&mut r, "HKEYS h").contains("go"));
        assert!(!c(&mut r, "HGETALL h").contains("22"));
        assert!(!c(&mut r, "HSCAN h 0").contains("go"));
        assert!(!c(&mut r, "HRANDFIELD h -20").contains("go"));
        assert_eq!(
            r.cmd_str(&["HMGET", "h", "go", "keep"]),
            arr(&[null(false), bulk("1")])
        );
        assert_eq!(r.cmd_str(&["HTTL", "h", "FIELDS", "1", "go"]), ints(&[-2]));
    }
    // The last field expiring takes the key with it.
    c(&mut r, "HSET solo a 1");
    c(&mut r, "HPEXPIRE solo 20 FIELDS 1 a");
    wait_until("the key to go", || r.cmd_str(&["EXISTS", "solo"]) == int(0));
    assert!(info_field(&mut r, "stats", "expired_subkeys").is_some_and(|v| v != "0"));
}

#[test]
fn the_active_cycle_expires_fields_of_hashes_nobody_reads() {
    let s = start_server();
    let mut r = s.raw();
    for i in 0..50 {
        let key = format!("h{i}");
        r.cmd_str(&["HSET", &key, "a", "1", "b", "2"]);
        r.cmd_str(&["HPEXPIRE", &key, "30", "FIELDS", "2", "a", "b"]);
    }
    c(&mut r, "HSET stays a 1 b 2");
    c(&mut r, "HPEXPIRE stays 30 FIELDS 1 a");
    c(&mut r, "HSET long a 1");
    c(&mut r, "HEXPIRE long 1000 FIELDS 1 a");
    // DBSIZE and INFO look at no key: only the cycle can empty these hashes.
    wait_until("the cycle", || r.cmd_str(&["DBSIZE"]) == int(2));
    // INFO keyspace's subexpiry: hashes with a field TTL left (only `long`).
    let keyspace = String::from_utf8_lossy(&r.cmd_str(&["INFO", "keyspace"])).into_owned();
    assert!(
        keyspace.contains("db0:keys=2,expires=0,avg_ttl=0,subexpiry=1"),
        "{keyspace}"
    );
    let expired = info_field(&mut r, "stats", "expired_subkeys").expect("expired_subkeys");
    assert_eq!(expired, "101");
    assert_eq!(
        r.cmd_str(&["HGETALL", "stays"]),
        arr(&[bulk("b"), bulk("2")])
    );
}

#[test]
fn keyspace_events_are_redis_s() {
    let s = start_server();
    let port = s.port;
    let events = keyevents(
        port,
        "KEAn",
        &[
            &["HSET", "h", "a", "1", "b", "2"],
            &["HEXPIRE", "h", "100", "FIELDS", "1", "a"],
            &["HEXPIRE", "h", "100", "NX", "FIELDS", "1", "a"],
            &["HPERSIST", "h", "FIELDS", "1", "a"],
            &["HPEXPIRE", "h", "0", "FIELDS", "1", "a"],
            &["HGETEX", "h", "EX", "10", "FIELDS", "1", "b"],
            &["HGETEX", "h", "PERSIST", "FIELDS", "1", "b"],
            &["HSETEX", "n", "EX", "10", "FIELDS", "1", "x", "y"],
            &["HSETEX", "n", "PXAT", "1", "FIELDS", "1", "x", "y"],
            &["HGETEX", "h", "PXAT", "1", "FIELDS", "1", "b"],
        ],
    );
    let events: Vec<&str> = events
        .iter()
        .map(|e| e.trim_start_matches("__keyevent@0__:"))
        .collect();
    assert_eq!(
        events,
        [
            "new h",
            "hset h",
            "hexpire h",
            "hpersist h",
            "hdel h",
            "hexpire h",
            "hpersist h",
            "new n",
            "hset n",
            "hexpire n",
            "hset n",
            "hdel n",
            "del n",
            "hdel h",
            "del h",
        ]
    );
    // `hexpired` (then `del`) when a field's time comes.
    let mut cl = Raw::connect(port);
    let mut sub = Raw::connect(port);
    sub.cmd_str(&["SUBSCRIBE", "__keyevent@0__:hexpired", "__keyevent@0__:del"]);
    sub.read_reply();
    c(&mut cl, "HSET e a 1");
    c(&mut cl, "HPEXPIRE e 20 FIELDS 1 a");
    let first = String::from_utf8_lossy(&sub.read_reply()).into_owned();
    let second = String::from_utf8_lossy(&sub.read_reply()).into_owned();
    assert!(
        first.contains("hexpired") && first.ends_with("$1\r\ne\r\n"),
        "{first}"
    );
    assert!(
        second.contains(":del") && second.ends_with("$1\r\ne\r\n"),
        "{second}"
    );
}

#[test]
fn the_log_holds_absolute_times_and_hdels_and_a_restart_keeps_the_ttls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let want;
    {
        let node = Node::start(dir.path(), &["--appendonly", "yes", "--save", ""]);
        let mut r = node.raw();
        c(&mut r, "HSET h a 1 b 2 c 3 d 4 e 1.5");
        c(&mut r, "HEXPIRE h 1000 FIELDS 1 a");
        c(&mut r, "HGETEX h PX 2000000 FIELDS 1 b");
        c(&mut r, "HSETEX h EX 3000 FIELDS 1 c 33");
        c(&mut r, "HEXPIRE h 4000 FIELDS 1 e");
        c(&mut r, "HINCRBYFLOAT h e 1");
        c(&mut r, "HINCRBYFLOAT h other 1");
        c(&mut r, "HPEXPIRE h 20 FIELDS 1 d");
        wait_until("d to expire", || {
            r.cmd_str(&["HEXISTS", "h", "d"]) == int(0)
        });
        want = r.cmd_str(&["HPEXPIRETIME", "h", "FIELDS", "5", "a", "b", "c", "d", "e"]);
        node.stop();
    }
    let bytes = dir_bytes(dir.path());
    assert_eq!(
        count(&bytes, b"HEXPIRE\r\n"),
        0,
        "relative forms are not logged"
    );
    assert_eq!(count(&bytes, b"HGETEX"), 0);
    assert!(count(&bytes, b"HPEXPIREAT") >= 2);
    assert_eq!(count(&bytes, b"$4\r\nHDEL\r\n$1\r\nh\r\n$1\r\nd\r\n"), 1);
    assert!(count(&bytes, b"$4\r\nPXAT\r\n") >= 1);
    // HINCRBYFLOAT: HSETEX KEEPTTL for a field with a TTL, HSET for one without.
    assert_eq!(
        count(
            &bytes,
            b"$7\r\nKEEPTTL\r\n$6\r\nFIELDS\r\n$1\r\n1\r\n$1\r\ne\r\n"
        ),
        1
    );
    assert_eq!(
        count(&bytes, b"$4\r\nHSET\r\n$1\r\nh\r\n$5\r\nother\r\n"),
        1
    );
    // The log replays to the same deadlines.
    let node = Node::start(dir.path(), &["--appendonly", "yes", "--save", ""]);
    let mut r = node.raw();
    assert_eq!(
        r.cmd_str(&["HPEXPIRETIME", "h", "FIELDS", "5", "a", "b", "c", "d", "e"]),
        want
    );
    // And so does a rewritten log (snapshot base) and a snapshot alone.
    c(&mut r, "BGREWRITEAOF");
    wait_until("the rewrite", || {
        info_field(&mut r, "persistence", "aof_rewrite_in_progress").as_deref() == Some("0")
            && info_field(&mut r, "persistence", "aof_rewrite_scheduled").as_deref() != Some("1")
    });
    c(&mut r, "SAVE");
    node.stop();
    let node = Node::start(dir.path(), &["--appendonly", "yes", "--save", ""]);
    let mut r = node.raw();
    assert_eq!(
        r.cmd_str(&["HPEXPIRETIME", "h", "FIELDS", "5", "a", "b", "c", "d", "e"]),
        want
    );
    node.stop();
    let node = Node::start(dir.path(), &["--appendonly", "no", "--save", ""]);
    let mut r = node.raw();
    assert_eq!(
        r.cmd_str(&["HPEXPIRETIME", "h", "FIELDS", "5", "a", "b", "c", "d", "e"]),
        want
    );
    assert_eq!(r.cmd_str(&["OBJECT", "ENCODING", "h"]), bulk("listpackex"));
}

#[test]
fn a_field_ttl_past_at_restart_expires_after_the_load() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let node = Node::start(dir.path(), &["--appendonly", "yes", "--save", ""]);
        let mut r = node.raw();
        c(&mut r, "HSET h a 1 b 2");
        c(&mut r, "HPEXPIRE h 300 FIELDS 1 a");
        // Stopped before the field's time: no HDEL in the log.
        node.stop();
    }
    let start = Instant::now();
    wait_until("the deadline to pass", || {
        start.elapsed() >= Duration::from_millis(300)
    });
    let node = Node::start(dir.path(), &["--appendonly", "yes", "--save", ""]);
    let mut r = node.raw();
    assert_eq!(r.cmd_str(&["HGETALL", "h"]), arr(&[bulk("b"), bulk("2")]));
}

#[test]
fn dump_restore_rename_copy_and_move_keep_field_ttls() {
    let s = start_server();
    let mut r = s.raw();
    let at = (now_ms() + 1_000_000).to_string();
    c(&mut r, "HSET small a 1 b 2");
    r.cmd_str(&["HPEXPIREAT", "small", &at, "FIELDS", "1", "a"]);
    let mut big = vec!["HSET".to_string(), "big".to_string()];
    for i in 0..600 {
        big.push(format!("f{i}"));
        big.push(i.to_string());
    }
    r.cmd_str(&big.iter().map(String::as_str).collect::<Vec<_>>());
    r.cmd_str(&["HPEXPIREAT", "big", &at, "FIELDS", "2", "f1", "f599"]);
    let want_small = r.cmd_str(&["HPEXPIRETIME", "small", "FIELDS", "2", "a", "b"]);
    let want_big = r.cmd_str(&["HPEXPIRETIME", "big", "FIELDS", "3", "f1", "f2", "f599"]);
    assert_eq!(want_small, ints(&[at.parse().expect("n"), -1]));
    for (key, fields, want) in [
        ("small", &["a", "b"][..], &want_small),
        ("big", &["f1", "f2", "f599"][..], &want_big),
    ] {
        let dump = r.cmd_str(&["DUMP", key]);
        let start = dump.iter().position(|&b| b == b'\n').expect("header") + 1;
        let payload = &dump[start..dump.len() - 2];
        assert_eq!(
            payload[0], 24,
            "a hash with field TTLs is dumped as type 24"
        );
        let copy = format!("{key}-restored");
        let mut args: Vec<&[u8]> = vec![b"RESTORE", copy.as_bytes(), b"0", payload];
        assert_eq!(r.cmd(&args), b"+OK\r\n");
        args.push(b"REPLACE");
        assert_eq!(r.cmd(&args), b"+OK\r\n");
        let n = fields.len().to_string();
        let mut q = vec!["HPEXPIRETIME", copy.as_str(), "FIELDS", n.as_str()];
        q.extend_from_slice(fields);
        assert_eq!(&r.cmd_str(&q), want, "{key} after RESTORE");
        assert_eq!(r.cmd_str(&["HLEN", &copy]), r.cmd_str(&["HLEN", key]));
    }
    // A plain hash still dumps as type 4 (a Redis 7.0 restores it).
    c(&mut r, "HSET plain a 1");
    let dump = r.cmd_str(&["DUMP", "plain"]);
    let start = dump.iter().position(|&b| b == b'\n').expect("header") + 1;
    assert_eq!(dump[start], 4);
    // RENAME, COPY (to another db) and MOVE carry the TTLs.
    c(&mut r, "RENAME small renamed");
    assert_eq!(
        r.cmd_str(&["HPEXPIRETIME", "renamed", "FIELDS", "2", "a", "b"]),
        want_small
    );
    c(&mut r, "COPY renamed copied DB 2");
    c(&mut r, "MOVE renamed 3");
    for db in ["2", "3"] {
        c(&mut r, &format!("SELECT {db}"));
        let key = if db == "2" { "copied" } else { "renamed" };
        assert_eq!(
            r.cmd_str(&["HPEXPIRETIME", key, "FIELDS", "2", "a", "b"]),
            want_small
        );
    }
    c(&mut r, "SELECT 0");
    assert_eq!(
        r.cmd_str(&["HPEXPIRETIME", "renamed", "FIELDS", "1", "a"]),
        ints(&[-2])
    );
}

/// A type-25 payload (Redis's listpackex bytes, as Redis 7.4+ dumps a small hash with
/// field TTLs) restores with its TTLs; a field already past is dropped.
#[test]
fn a_redis_type_25_payload_restores_with_its_ttls() {
    use streamd::rdb::{crc64, listpack::Builder, write};
    let s = start_server();
    let mut r = s.raw();
    let at = now_ms() + 1_000_000;
    let mut lp = Builder::new();
    for (f, v, t) in [("a", "1", at as i64), ("b", "2", 0), ("old", "3", 5)] {
        lp.string(f.as_bytes());
        lp.string(v.as_bytes());
        lp.int(t);
    }
    let mut p = vec![25u8];
    p.extend_from_slice(&5u64.to_le_bytes());
    write::string(&mut p, &lp.finish());
    p.extend_from_slice(&12u16.to_le_bytes());
    let crc = crc64::crc64(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(r.cmd(&[b"RESTORE", b"k", b"0", &p]), b"+OK\r\n");
    assert_eq!(
        r.cmd_str(&["HPEXPIRETIME", "k", "FIELDS", "3", "a", "b", "old"]),
        ints(&[at as i64, -1, -2])
    );
}

/// A `dump.rdb` (version 12, Redis 7.4's) with a type-24 hash, built from streamd's own
/// DUMP payload body, is imported with its field TTLs.
#[test]
fn an_rdb_file_with_field_ttls_is_imported_with_them() {
    use streamd::rdb::crc64;
    let s = start_server();
    let mut r = s.raw();
    let at = (now_ms() + 1_000_000).to_string();
    c(&mut r, "HSET k a 1 b 2");
    r.cmd_str(&["HPEXPIREAT", "k", &at, "FIELDS", "1", "b"]);
    let dump = r.cmd_str(&["DUMP", "k"]);
    let start = dump.iter().position(|&b| b == b'\n').expect("header") + 1;
    let payload = &dump[start..dump.len() - 2];
    let mut file = b"REDIS0012".to_vec();
    file.extend_from_slice(&[0xFE, 0, 24, 1, b'k']);
    file.extend_from_slice(&payload[1..payload.len() - 10]);
    file.push(0xFF);
    let crc = crc64::crc64(&file);
    file.extend_from_slice(&crc.to_le_bytes());
    let dir = tempfile::tempdir().expect("tempdir");
    let rdb = dir.path().join("dump.rdb");
    std::fs::write(&rdb, &file).expect("write the file");
    let data = dir.path().join("data");
    let imported = start_server_with(&[
        "--dir",
        data.to_str().expect("utf-8 path"),
        "--import-rdb",
        rdb.to_str().expect("utf-8 path"),
    ]);
    let mut i = imported.raw();
    assert_eq!(
        i.cmd_str(&["HPEXPIRETIME", "k", "FIELDS", "2", "a", "b"]),
        ints(&[-1, at.parse().expect("n")])
    );
    assert_eq!(i.cmd_str(&["HGET", "k", "a"]), bulk("1"));
}

#[test]
fn a_replica_drops_the_fields_its_primary_expires_and_no_others() {
    let pdir = tempfile::tempdir().expect("tempdir");
    let rdir = tempfile::tempdir().expect("tempdir");
    let primary = Node::start(pdir.path(), &["--appendonly", "no", "--save", ""]);
    let mut p = primary.raw();
    c(&mut p, "HSET before a 1 b 2");
    c(&mut p, "HEXPIRE before 1000 FIELDS 1 a");
    let target = format!("127.0.0.1 {}", primary.port);
    let replica = Node::start(rdir.path(), &["--appendonly", "no", "--save", ""]);
    let mut q = replica.raw();
    c(&mut q, &format!("REPLICAOF {target}"));
    wait_until("the link", || {
        info_field(&mut q, "replication", "master_link_status").as_deref() == Some("up")
    });
    // The full sync carried the TTL.
    wait_until("the full sync", || {
        q.cmd_str(&["EXISTS", "before"]) == int(1)
    });
    assert_eq!(
        q.cmd_str(&["HEXPIRETIME", "before", "FIELDS", "2", "a", "b"]),
        p.cmd_str(&["HEXPIRETIME", "before", "FIELDS", "2", "a", "b"])
    );
    // Commands stream: TTLs as absolute times, expiries as HDELs.
    c(&mut p, "HSET h keep 1 go 2 now 3");
    c(&mut p, "HPEXPIRE h 100 FIELDS 1 go");
    c(&mut p, "HGETEX h PXAT 1 FIELDS 1 now");
    wait_until("the stream", || {
        q.cmd_str(&["HPEXPIRETIME", "h", "FIELDS", "1", "go"])
            == p.cmd_str(&["HPEXPIRETIME", "h", "FIELDS", "1", "go"])
    });
    wait_until("the primary's expiry to reach the replica", || {
        q.cmd_str(&["HKEYS", "h"]) == arr(&[bulk("keep")])
    });
    assert_eq!(
        info_field(&mut q, "stats", "expired_subkeys").as_deref(),
        Some("0")
    );
    assert_ne!(
        info_field(&mut p, "stats", "expired_subkeys").as_deref(),
        Some("0")
    );
    // A TTL the replica holds but the primary has not acted on yet is not expired by the
    // replica itself: with the link cut, the field stays on the replica.
    c(&mut p, "HSET late x 1 y 2");
    c(&mut p, "HPEXPIRE late 300 FIELDS 1 x");
    wait_until("the TTL on the replica", || {
        ints_of(&q.cmd_str(&["HPTTL", "late", "FIELDS", "1", "x"]))
            .first()
            .is_some_and(|&t| t > 0)
    });
    drop(primary);
    let start = Instant::now();
    wait_until("the deadline to pass", || {
        start.elapsed() >= Duration::from_millis(500)
    });
    assert_eq!(int_of(&q.cmd_str(&["HLEN", "late"])), 2);
    // Its TTL reads as gone, as Redis's replica answers.
    assert_eq!(
        q.cmd_str(&["HPTTL", "late", "FIELDS", "1", "x"]),
        ints(&[-2])
    );
    // Promoted, it expires on its own.
    c(&mut q, "REPLICAOF NO ONE");
    wait_until("the promoted node to expire", || {
        q.cmd_str(&["HLEN", "late"]) == int(1)
    });
}
