//! Generic keyspace commands against the real binary: exact reply bytes and error texts
//! (checked against Redis 7.0's), and behaviour: SCAN under concurrent changes, lazy and
//! active expiry, RENAME/COPY/MOVE moving values, TTLs and blocked readers.

mod common;

use common::c;

use common::*;
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// A parsed reply, enough for SCAN/KEYS results.
#[derive(Debug, PartialEq)]
enum V {
    Bulk(Vec<u8>),
    Int(i64),
    Array(Vec<V>),
    Other(Vec<u8>),
}

fn parse(buf: &[u8]) -> V {
    fn line(buf: &[u8], pos: usize) -> (&[u8], usize) {
        let end = pos
            + buf[pos..]
                .windows(2)
                .position(|w| w == b"\r\n")
                .expect("CRLF");
        (&buf[pos + 1..end], end + 2)
    }
    fn num(b: &[u8]) -> i64 {
        std::str::from_utf8(b).unwrap().parse().unwrap()
    }
    fn at(buf: &[u8], pos: usize) -> (V, usize) {
        let (head, next) = line(buf, pos);
        match buf[pos] {
            b'$' => {
                let n = num(head) as usize;
                (V::Bulk(buf[next..next + n].to_vec()), next + n + 2)
            }
            b':' => (V::Int(num(head)), next),
            b'*' => {
                let mut items = Vec::new();
                let mut p = next;
                for _ in 0..num(head) {
                    let (v, q) = at(buf, p);
                    items.push(v);
                    p = q;
                }
                (V::Array(items), p)
            }
            _ => (V::Other(buf[pos..next].to_vec()), next),
        }
    }
    at(buf, 0).0
}

/// One SCAN call: (next cursor, keys).
fn scan(r: &mut Raw, args: &[&str]) -> (String, Vec<String>) {
    let reply = r.cmd_str(args);
    let V::Array(parts) = parse(&reply) else {
        panic!("SCAN reply {:?}", escape(&reply));
    };
    let [V::Bulk(cursor), V::Array(keys)] = &parts[..] else {
        panic!("SCAN reply {:?}", escape(&reply));
    };
    let keys = keys
        .iter()
        .map(|k| match k {
            V::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
            other => panic!("key {other:?}"),
        })
        .collect();
    (String::from_utf8_lossy(cursor).into_owned(), keys)
}

/// Sorted keys of a KEYS reply.
fn keys(r: &mut Raw, pattern: &str) -> Vec<String> {
    let V::Array(items) = parse(&r.cmd_str(&["KEYS", pattern])) else {
        panic!("KEYS reply");
    };
    let mut out: Vec<String> = items
        .into_iter()
        .map(|v| match v {
            V::Bulk(b) => String::from_utf8(b).unwrap(),
            other => panic!("{other:?}"),
        })
        .collect();
    out.sort();
    out
}

fn int(r: &mut Raw, line: &str) -> i64 {
    let reply = c(r, line);
    reply
        .strip_prefix(':')
        .and_then(|s| s.trim_end().parse().ok())
        .unwrap_or_else(|| panic!("{line}: not an integer reply: {reply:?}"))
}

/// Polls `f` until it is true or `timeout` passes.
fn eventually(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}

#[test]
fn del_unlink_and_exists_count_keys_and_duplicates() {
    let s = start_server();
    let mut r = s.raw();
    c(&mut r, "XADD a 1-1 f v");
    c(&mut r, "XADD b 1-1 f v");
    c(&mut r, "XADD d 1-1 f v");
    assert_eq!(c(&mut r, "EXISTS a a b nokey"), ":3\r\n");
    assert_eq!(c(&mut r, "EXISTS nokey"), ":0\r\n");
    assert_eq!(c(&mut r, "DEL a a nokey"), ":1\r\n");
    assert_eq!(c(&mut r, "UNLINK b d b"), ":2\r\n");
    assert_eq!(c(&mut r, "DBSIZE"), ":0\r\n");
    assert_eq!(
        c(&mut r, "DEL"),
        "-ERR wrong number of arguments for 'del' command\r\n"
    );
    assert_eq!(
        c(&mut r, "EXISTS"),
        "-ERR wrong number of arguments for 'exists' command\r\n"
    );
}

#[test]
fn an_emptied_stream_still_exists_and_has_type_stream() {
    let s = start_server();
    let mut r = s.raw();
    c(&mut r, "XADD s 1-1 f v");
    c(&mut r, "XDEL s 1-1");
    assert_eq!(c(&mut r, "TYPE s"), "+stream\r\n");
    assert_eq!(c(&mut r, "TYPE nokey"), "+none\r\n");
    assert_eq!(c(&mut r, "OBJECT ENCODING s"), "$6\r\nstream\r\n");
    assert_eq!(c(&mut r, "OBJECT ENCODING nokey"), "$-1\r\n");
    assert_eq!(c(&mut r, "TOUCH s nokey s"), ":2\r\n");
}

#[test]
fn keys_matches_globs() {
    let s = start_server();
    let mut r = s.raw();
    for k in ["user:1", "user:2", "order:1", "u[x]"] {
        c(&mut r, &format!("XADD {k} 1-1 f v"));
    }
    assert_eq!(keys(&mut r, "*"), ["order:1", "u[x]", "user:1", "user:2"]);
    assert_eq!(keys(&mut r, "user:*"), ["user:1", "user:2"]);
    assert_eq!(keys(&mut r, "*:[2-9]"), ["user:2"]);
    assert_eq!(keys(&mut r, "u\\[x\\]"), ["u[x]"]);
    assert_eq!(keys(&mut r, "nothing*"), Vec::<String>::new());
}

#[test]
fn scan_argument_errors_match_redis() {
    let s = start_server();
    let mut r = s.raw();
    c(&mut r, "XADD s 1-1 f v");
    assert_eq!(c(&mut r, "SCAN x"), "-ERR invalid cursor\r\n");
    assert_eq!(c(&mut r, "SCAN 1x"), "-ERR invalid cursor\r\n");
    assert_eq!(
        r.cmd_str(&["SCAN", " 1"]),
        b"-ERR invalid cursor\r\n".to_vec()
    );
    assert_eq!(
        r.cmd_str(&["SCAN", "18446744073709551616"]),
        b"-ERR invalid cursor\r\n".to_vec()
    );
    assert_eq!(c(&mut r, "SCAN 0 COUNT 0"), "-ERR syntax error\r\n");
    assert_eq!(
        c(&mut r, "SCAN 0 COUNT x"),
        "-ERR value is not an integer or out of range\r\n"
    );
    assert_eq!(c(&mut r, "SCAN 0 MATCH"), "-ERR syntax error\r\n");
    assert_eq!(c(&mut r, "SCAN 0 FOO bar"), "-ERR syntax error\r\n");
    // Cursor errors come before option errors.
    assert_eq!(c(&mut r, "SCAN x COUNT 0"), "-ERR invalid cursor\r\n");
}

#[test]
fn scan_filters_by_match_and_type() {
    let s = start_server();
    let mut r = s.raw();
    for i in 0..30 {
        c(&mut r, &format!("XADD k:{i} 1-1 f v"));
    }
    c(&mut r, "XADD other 1-1 f v");
    let full = |r: &mut Raw, extra: &[&str]| {
        let mut cursor = "0".to_string();
        let mut seen = Vec::new();
        loop {
            let mut args = vec!["SCAN", cursor.as_str()];
            args.extend_from_slice(extra);
            let (next, keys) = scan(r, &args);
            seen.extend(keys);
            if next == "0" {
                break;
            }
            cursor = next;
        }
        seen.sort();
        seen
    };
    assert_eq!(full(&mut r, &[]).len(), 31);
    assert_eq!(full(&mut r, &["MATCH", "k:*", "COUNT", "7"]).len(), 30);
    assert_eq!(full(&mut r, &["MATCH", "other"]), ["other"]);
    assert_eq!(full(&mut r, &["TYPE", "STREAM"]).len(), 31);
    assert!(full(&mut r, &["TYPE", "string"]).is_empty());
    assert!(full(&mut r, &["TYPE", "nosuchtype"]).is_empty());
    // A huge COUNT returns everything at once.
    let (next, all) = scan(&mut r, &["SCAN", "0", "COUNT", "1000"]);
    assert_eq!((next.as_str(), all.len()), ("0", 31));
}

#[test]
fn scan_sees_every_key_present_throughout_despite_concurrent_inserts_and_deletes() {
    let s = start_server();
    let mut r = s.raw();
    let mut writer = s.raw();
    for i in 0..300 {
        c(&mut r, &format!("XADD stable:{i} 1-1 f v"));
        c(&mut r, &format!("XADD churn:{i} 1-1 f v"));
    }
    let mut seen = HashSet::new();
    let mut cursor = "0".to_string();
    let mut round = 0;
    loop {
        let (next, keys) = scan(&mut r, &["SCAN", &cursor, "COUNT", "10"]);
        seen.extend(keys);
        // Another connection deletes old keys and adds new ones between calls.
        c(&mut writer, &format!("DEL churn:{round}"));
        c(&mut writer, &format!("XADD new:{round} 1-1 f v"));
        round += 1;
        if next == "0" {
            break;
        }
        cursor = next;
    }
    assert!(round > 20, "the scan took {round} calls");
    for i in 0..300 {
        assert!(seen.contains(&format!("stable:{i}")), "missed stable:{i}");
    }
    assert!(
        seen.iter()
            .all(|k| k.starts_with("stable:") || k.starts_with("churn:") || k.starts_with("new:"))
    );
}

#[test]
fn randomkey_returns_a_live_key_or_null() {
    let s = start_server();
    let mut r = s.raw();
    assert_eq!(c(&mut r, "RANDOMKEY"), "$-1\r\n");
    c(&mut r, "XADD a 1-1 f v");
    c(&mut r, "XADD b 1-1 f v");
    let mut seen = HashSet::new();
    for _ in 0..200 {
        seen.insert(c(&mut r, "RANDOMKEY"));
    }
    assert_eq!(
        seen,
        HashSet::from(["$1\r\na\r\n".to_string(), "$1\r\nb\r\n".to_string()])
    );
    // Keys that expired are skipped (and deleted) rather than returned.
    c(&mut r, "PEXPIRE a 1");
    c(&mut r, "PEXPIRE b 1");
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(c(&mut r, "RANDOMKEY"), "$-1\r\n");
}

#[test]
fn rename_moves_the_value_and_ttl_and_replaces_the_destination() {
    let s = start_server();
    let mut r = s.raw();
    c(&mut r, "XADD src 1-1 from src");
    c(&mut r, "XADD dst 9-9 from dst");
    c(&mut r, "EXPIRE src 100");
    assert_eq!(c(&mut r, "RENAME src dst"), "+OK\r\n");
    assert_eq!(c(&mut r, "EXISTS src"), ":0\r\n");
    assert_eq!(
        c(&mut r, "XRANGE dst - +"),
        "*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$4\r\nfrom\r\n$3\r\nsrc\r\n"
    );
    let ttl = int(&mut r, "TTL dst");
    assert!((99..=100).contains(&ttl), "ttl {ttl}");
    // The destination's own stream is gone: XADD 2-1 works (last ID is 1-1 now).
    assert_eq!(c(&mut r, "XADD dst 2-1 f v"), "$3\r\n2-1\r\n");

    assert_eq!(c(&mut r, "RENAME nokey x"), "-ERR no such key\r\n");
    assert_eq!(c(&mut r, "RENAMENX nokey x"), "-ERR no such key\r\n");
    assert_eq!(c(&mut r, "RENAME nokey nokey"), "-ERR no such key\r\n");
    assert_eq!(c(&mut r, "RENAME dst dst"), "+OK\r\n");
    assert_eq!(c(&mut r, "RENAMENX dst dst"), ":0\r\n");
    c(&mut r, "XADD other 1-1 f v");
    assert_eq!(c(&mut r, "RENAMENX dst other"), ":0\r\n");
    assert_eq!(c(&mut r, "RENAMENX dst fresh"), ":1\r\n");
    assert_eq!(c(&mut r, "EXISTS dst fresh"), ":1\r\n");
    // A key without TTL renamed onto one with a TTL: the result has no TTL.
    assert!(int(&mut r, "TTL fresh") > 90, "RENAMENX moved the TTL too");
    c(&mut r, "XADD nottl 1-1 f v");
    c(&mut r, "EXPIRE other 100");
    assert_eq!(c(&mut r, "RENAME nottl other"), "+OK\r\n");
    assert_eq!(c(&mut r, "TTL other"), ":-1\r\n");
}

#[test]
fn rename_onto_a_key_wakes_a_reader_blocked_on_it() {
    let s = start_server();
    let mut r = s.raw();
    let mut reader = s.raw();
    c(&mut r, "XADD src 5-1 f v");
    reader.send(&encode_cmd(&[
        b"XREAD", b"BLOCK", b"5000", b"STREAMS", b"dst", b"$",
    ]));
    wait_blocked(&mut r, 1);
    assert_eq!(c(&mut r, "RENAME src dst"), "+OK\r\n");
    assert_eq!(
        String::from_utf8_lossy(&reader.read_reply()),
        "*1\r\n*2\r\n$3\r\ndst\r\n*1\r\n*2\r\n$3\r\n5-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
    );
}

#[test]
fn copy_is_a_deep_copy_with_the_ttl() {
    let s = start_server();
    let mut r = s.raw();
    c(&mut r, "XADD s 1-1 a 1");
    c(&mut r, "XADD s 2-1 b 2");
    c(&mut r, "PEXPIRE s 100000");
    assert_eq!(c(&mut r, "COPY s t"), ":1\r\n");
    assert_eq!(c(&mut r, "XRANGE t - +"), c(&mut r, "XRANGE s - +"));
    assert!(int(&mut r, "PTTL t") > 90_000);
    // Independent: a write to the copy leaves the source unchanged.
    c(&mut r, "XADD t 3-1 c 3");
    c(&mut r, "XDEL t 1-1");
    assert_eq!(c(&mut r, "XLEN s"), ":2\r\n");
    assert_eq!(c(&mut r, "XLEN t"), ":2\r\n");
    assert_eq!(
        c(&mut r, "XRANGE s - +"),
        "*2\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$3\r\n2-1\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n"
    );
    // Existing destination: 0 unless REPLACE.
    assert_eq!(c(&mut r, "COPY s t"), ":0\r\n");
    assert_eq!(c(&mut r, "COPY s t REPLACE"), ":1\r\n");
    assert_eq!(c(&mut r, "XLEN t"), ":2\r\n");
    assert_eq!(c(&mut r, "COPY nokey t"), ":0\r\n");
    // Another database.
    assert_eq!(c(&mut r, "COPY s s DB 3"), ":1\r\n");
    c(&mut r, "SELECT 3");
    assert_eq!(c(&mut r, "XLEN s"), ":2\r\n");
    c(&mut r, "SELECT 0");
    // Errors.
    assert_eq!(
        c(&mut r, "COPY s s"),
        "-ERR source and destination objects are the same\r\n"
    );
    assert_eq!(
        c(&mut r, "COPY s x DB 16"),
        "-ERR DB index is out of range\r\n"
    );
    assert_eq!(
        c(&mut r, "COPY s x DB -1"),
        "-ERR DB index is out of range\r\n"
    );
    assert_eq!(
        c(&mut r, "COPY s x DB x"),
        "-ERR value is not an integer or out of range\r\n"
    );
    assert_eq!(
        c(&mut r, "COPY s x DB 4294967296"),
        "-ERR value is out of range, value must between -2147483648 and 2147483647\r\n"
    );
    assert_eq!(c(&mut r, "COPY s x DB"), "-ERR syntax error\r\n");
    assert_eq!(c(&mut r, "COPY s x FOO"), "-ERR syntax error\r\n");
    assert_eq!(c(&mut r, "EXISTS x"), ":0\r\n");
}

#[test]
fn copy_duplicates_consumer_groups() {
    let s = start_server();
    let mut r = s.raw();
    c(&mut r, "XADD s 1-1 a 1");
    c(&mut r, "XADD s 2-1 b 2");
    assert_eq!(c(&mut r, "XGROUP CREATE s g 0"), "+OK\r\n");
    c(&mut r, "XREADGROUP GROUP g alice COUNT 1 STREAMS s >");
    assert_eq!(c(&mut r, "COPY s t"), ":1\r\n");
    assert_eq!(
        c(&mut r, "XINFO GROUPS t"),
        c(&mut r, "XINFO GROUPS s"),
        "the copy has the same groups"
    );
    assert_eq!(
        c(&mut r, "XPENDING t g - + 10 alice").split("\r\n").nth(3),
        Some("1-1"),
        "the copy has the pending entry"
    );
    // The copy is independent: acking and destroying in it leaves the source alone.
    assert_eq!(c(&mut r, "XACK t g 1-1"), ":1\r\n");
    c(&mut r, "XGROUP DESTROY t g");
    assert!(c(&mut r, "XINFO GROUPS s").starts_with("*1\r\n"));
    assert!(c(&mut r, "XPENDING s g").starts_with("*4\r\n:1\r\n"));
}

#[test]
fn move_transfers_a_key_to_another_database() {
    let s = start_server();
    let mut r = s.raw();
    c(&mut r, "XADD s 1-1 a 1");
    c(&mut r, "EXPIRE s 100");
    assert_eq!(c(&mut r, "MOVE s 1"), ":1\r\n");
    assert_eq!(c(&mut r, "EXISTS s"), ":0\r\n");
    assert_eq!(c(&mut r, "MOVE s 1"), ":0\r\n");
    c(&mut r, "SELECT 1");
    assert_eq!(c(&mut r, "XLEN s"), ":1\r\n");
    assert!(int(&mut r, "TTL s") > 90);
    // The target already has the key: nothing moves.
    c(&mut r, "SELECT 0");
    c(&mut r, "XADD s 5-5 b 2");
    assert_eq!(c(&mut r, "MOVE s 1"), ":0\r\n");
    assert_eq!(c(&mut r, "XLEN s"), ":1\r\n");
    assert_eq!(
        c(&mut r, "MOVE s 0"),
        "-ERR source and destination objects are the same\r\n"
    );
    assert_eq!(c(&mut r, "MOVE s 16"), "-ERR DB index is out of range\r\n");
    assert_eq!(
        c(&mut r, "MOVE s x"),
        "-ERR value is not an integer or out of range\r\n"
    );
}

#[test]
fn expire_options_and_errors_follow_redis_7() {
    let s = start_server();
    let mut r = s.raw();
    c(&mut r, "XADD s 1-1 a 1");
    assert_eq!(
        c(&mut r, "EXPIRE s 10 NX XX"),
        "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n"
    );
    assert_eq!(
        c(&mut r, "EXPIRE s 10 GT LT"),
        "-ERR GT and LT options at the same time are not compatible\r\n"
    );
    assert_eq!(
        c(&mut r, "EXPIRE s 10 foo"),
        "-ERR Unsupported option foo\r\n"
    );
    assert_eq!(
        c(&mut r, "EXPIRE s 99999999999999999"),
        "-ERR invalid expire time in 'expire' command\r\n"
    );
    assert_eq!(
        c(&mut r, "PEXPIRE s 9223372036854775807"),
        "-ERR invalid expire time in 'pexpire' command\r\n"
    );
    assert_eq!(
        c(&mut r, "EXPIREAT s 9223372036854775807"),
        "-ERR invalid expire time in 'expireat' command\r\n"
    );
    assert_eq!(
        c(&mut r, "EXPIRE s x"),
        "-ERR value is not an integer or out of range\r\n"
    );
    assert_eq!(
        c(&mut r, "EXPIRE s"),
        "-ERR wrong number of arguments for 'expire' command\r\n"
    );
    assert_eq!(c(&mut r, "EXPIRE nokey 10"), ":0\r\n");
    assert_eq!(c(&mut r, "TTL s"), ":-1\r\n");

    // XX and GT need a TTL; GT treats "no TTL" as infinite.
    assert_eq!(c(&mut r, "EXPIRE s 100 XX"), ":0\r\n");
    assert_eq!(c(&mut r, "EXPIRE s 100 GT"), ":0\r\n");
    assert_eq!(c(&mut r, "EXPIRE s 100 NX"), ":1\r\n");
    assert_eq!(c(&mut r, "EXPIRE s 200 NX"), ":0\r\n");
    assert_eq!(c(&mut r, "EXPIRE s 50 GT"), ":0\r\n");
    assert_eq!(c(&mut r, "EXPIRE s 200 GT"), ":1\r\n");
    assert_eq!(c(&mut r, "EXPIRE s 300 LT"), ":0\r\n");
    assert_eq!(c(&mut r, "EXPIRE s 150 LT XX"), ":1\r\n");
    assert_eq!(c(&mut r, "TTL s"), ":150\r\n");
    let pttl = int(&mut r, "PTTL s");
    assert!((149_000..=150_000).contains(&pttl), "pttl {pttl}");

    // LT on a key without TTL sets one.
    c(&mut r, "XADD t 1-1 a 1");
    assert_eq!(c(&mut r, "EXPIRE t 100 LT"), ":1\r\n");
}

#[test]
fn expire_in_the_past_deletes_the_key() {
    let s = start_server();
    let mut r = s.raw();
    c(&mut r, "XADD s 1-1 a 1");
    assert_eq!(c(&mut r, "EXPIRE s -1"), ":1\r\n");
    assert_eq!(c(&mut r, "EXISTS s"), ":0\r\n");
    c(&mut r, "XADD s 1-1 a 1");
    assert_eq!(c(&mut r, "PEXPIREAT s 1"), ":1\r\n");
    assert_eq!(c(&mut r, "DBSIZE"), ":0\r\n");
    c(&mut r, "XADD s 1-1 a 1");
    assert_eq!(c(&mut r, "EXPIRE s 0"), ":1\r\n");
    assert_eq!(c(&mut r, "DBSIZE"), ":0\r\n");
}

#[test]
fn ttl_persist_and_expiretime() {
    let s = start_server();
    let mut r = s.raw();
    assert_eq!(c(&mut r, "TTL nokey"), ":-2\r\n");
    assert_eq!(c(&mut r, "PTTL nokey"), ":-2\r\n");
    assert_eq!(c(&mut r, "EXPIRETIME nokey"), ":-2\r\n");
    assert_eq!(c(&mut r, "PEXPIRETIME nokey"), ":-2\r\n");
    c(&mut r, "XADD s 1-1 a 1");
    assert_eq!(c(&mut r, "EXPIRETIME s"), ":-1\r\n");
    assert_eq!(c(&mut r, "PEXPIRETIME s"), ":-1\r\n");
    assert_eq!(c(&mut r, "PERSIST s"), ":0\r\n");
    assert_eq!(c(&mut r, "PERSIST nokey"), ":0\r\n");
    assert_eq!(c(&mut r, "EXPIREAT s 4102444800"), ":1\r\n");
    assert_eq!(c(&mut r, "EXPIRETIME s"), ":4102444800\r\n");
    assert_eq!(c(&mut r, "PEXPIRETIME s"), ":4102444800000\r\n");
    assert_eq!(c(&mut r, "PEXPIREAT s 4102444800123"), ":1\r\n");
    assert_eq!(c(&mut r, "PEXPIRETIME s"), ":4102444800123\r\n");
    assert_eq!(c(&mut r, "EXPIRETIME s"), ":4102444800\r\n");
    assert_eq!(c(&mut r, "PEXPIREAT s 4102444800600"), ":1\r\n");
    assert_eq!(c(&mut r, "EXPIRETIME s"), ":4102444801\r\n", "rounded");
    assert_eq!(c(&mut r, "PERSIST s"), ":1\r\n");
    assert_eq!(c(&mut r, "TTL s"), ":-1\r\n");
}

#[test]
fn an_expired_key_disappears_on_access() {
    let s = start_server();
    let mut r = s.raw();
    c(&mut r, "XADD s 1-1 a 1");
    assert_eq!(c(&mut r, "PEXPIRE s 50"), ":1\r\n");
    assert_eq!(c(&mut r, "EXISTS s"), ":1\r\n");
    std::thread::sleep(Duration::from_millis(80));
    // Any access sees it gone, whether or not the active cycle removed it already.
    assert_eq!(c(&mut r, "TTL s"), ":-2\r\n");
    assert_eq!(c(&mut r, "XLEN s"), ":0\r\n");
    assert_eq!(c(&mut r, "TYPE s"), "+none\r\n");
    assert_eq!(c(&mut r, "KEYS *"), "*0\r\n");
    assert_eq!(c(&mut r, "RENAME s t"), "-ERR no such key\r\n");
}

#[test]
fn expired_keys_are_removed_by_the_active_cycle_without_access() {
    let s = start_server();
    let mut r = s.raw();
    for i in 0..20 {
        c(&mut r, &format!("XADD k{i} 1-1 a 1"));
        c(&mut r, &format!("PEXPIRE k{i} 30"));
    }
    c(&mut r, "XADD keep 1-1 a 1");
    // DBSIZE counts stored keys without expiring any, so it only drops through the cycle.
    assert!(
        eventually(Duration::from_secs(5), || c(&mut r, "DBSIZE") == ":1\r\n"),
        "DBSIZE stayed at {}",
        c(&mut r, "DBSIZE")
    );
    assert_eq!(c(&mut r, "EXISTS keep"), ":1\r\n");
}

#[test]
fn object_subcommands() {
    let s = start_server();
    let mut r = s.raw();
    c(&mut r, "XADD s 1-1 a 1");
    assert_eq!(c(&mut r, "OBJECT REFCOUNT s"), ":1\r\n");
    assert_eq!(c(&mut r, "OBJECT IDLETIME s"), ":0\r\n");
    assert_eq!(c(&mut r, "OBJECT IDLETIME nokey"), "$-1\r\n");
    assert_eq!(c(&mut r, "OBJECT FREQ nokey"), "$-1\r\n");
    assert_eq!(
        c(&mut r, "OBJECT FREQ s"),
        "-ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.\r\n"
    );
    assert_eq!(
        c(&mut r, "OBJECT ENCODING"),
        "-ERR wrong number of arguments for 'object|encoding' command\r\n"
    );
    assert_eq!(
        c(&mut r, "OBJECT"),
        "-ERR wrong number of arguments for 'object' command\r\n"
    );
    assert_eq!(
        c(&mut r, "OBJECT foo"),
        "-ERR unknown subcommand 'foo'. Try OBJECT HELP.\r\n"
    );
    let help = c(&mut r, "OBJECT HELP");
    assert!(help.starts_with("*15\r\n+OBJECT <subcommand>"), "{help:?}");
    assert!(help.contains("+ENCODING <key>\r\n"));
    // RESP3: a missing key is `_`.
    r.hello3();
    assert_eq!(c(&mut r, "OBJECT ENCODING nokey"), "_\r\n");
}

#[test]
fn memory_usage_estimates_and_validates() {
    let s = start_server();
    let mut r = s.raw();
    assert_eq!(c(&mut r, "MEMORY USAGE nokey"), "$-1\r\n");
    c(&mut r, "XADD s 1-1 a 1");
    let small = int(&mut r, "MEMORY USAGE s");
    assert!(small > 0);
    for i in 2..2000 {
        r.send(&encode_cmd(&[
            b"XADD",
            b"s",
            format!("{i}-1").as_bytes(),
            b"field",
            &[b'x'; 100],
        ]));
    }
    r.read_replies(1998);
    let big = int(&mut r, "MEMORY USAGE s SAMPLES 0");
    assert!(big > small + 100_000, "{small} -> {big}");
    assert_eq!(int(&mut r, "MEMORY USAGE s SAMPLES 5"), big);
    assert_eq!(
        c(&mut r, "MEMORY USAGE s SAMPLES -1"),
        "-ERR syntax error\r\n"
    );
    assert_eq!(
        c(&mut r, "MEMORY USAGE s SAMPLES x"),
        "-ERR value is not an integer or out of range\r\n"
    );
    assert_eq!(c(&mut r, "MEMORY USAGE s SAMPLES"), "-ERR syntax error\r\n");
    assert_eq!(c(&mut r, "MEMORY USAGE s FOO"), "-ERR syntax error\r\n");
    assert_eq!(
        c(&mut r, "MEMORY USAGE"),
        "-ERR wrong number of arguments for 'memory|usage' command\r\n"
    );
    let help = c(&mut r, "MEMORY HELP");
    assert!(help.starts_with("*14\r\n+MEMORY <subcommand>"), "{help:?}");
}

#[test]
fn keyspace_commands_answer_like_redis_7() {
    // Differential check of replies that do not depend on generated IDs, times or sizes.
    let redis = redis_server();
    let s = start_server();
    let (mut a, mut b) = (redis.raw(), s.raw());
    let script = [
        "XADD s 1-1 a 1",
        "XADD t 1-1 b 2",
        "EXISTS s s t nokey",
        "TYPE s",
        "TYPE nokey",
        "SCAN x",
        "SCAN 0 COUNT 0",
        "SCAN 0 TYPE hash",
        "SCAN 0 TYPE stream MATCH s",
        "RENAME nokey x",
        "RENAMENX s t",
        "RENAME s u",
        "RENAME u t",
        "XRANGE t - +",
        "COPY t t",
        "COPY t t2 DB 99",
        "COPY t t2",
        "COPY t t2",
        "COPY t t2 REPLACE",
        "COPY t t2 DB 1",
        "MOVE t2 0",
        "MOVE t2 1",
        "MOVE t 1",
        "EXPIRE t 10 NX XX",
        "EXPIRE t 10 foo",
        "EXPIRE t 100 XX",
        "EXPIRE t 100 NX",
        "TTL t",
        "EXPIRE t 50 GT",
        "EXPIREAT t 4102444800",
        "EXPIRETIME t",
        "PERSIST t",
        "PERSIST t",
        "EXPIRE t -1",
        "EXISTS t",
        "TOUCH t2 nokey t2",
        "OBJECT ENCODING t2",
        "OBJECT FREQ t2",
        "OBJECT REFCOUNT t2",
        "OBJECT foo",
        "MEMORY USAGE nokey",
        "MEMORY USAGE t2 SAMPLES -1",
        "DEL t2 t2 nokey",
        "RANDOMKEY",
        "KEYS *",
        "DBSIZE",
    ];
    for line in script {
        assert_eq!(c(&mut a, line), c(&mut b, line), "{line}");
    }
}

/// Reads `lazyfree_pending_objects` and `lazyfreed_objects` once the former is 0.
fn lazyfreed(raw: &mut Raw) -> u64 {
    let field = |raw: &mut Raw, f: &str| -> u64 {
        info_field(raw, "memory", f)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("INFO memory {f}"))
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while field(raw, "lazyfree_pending_objects") != 0 {
        assert!(
            Instant::now() < deadline,
            "the lazyfree thread did not finish"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    field(raw, "lazyfreed_objects")
}

/// Redis's lazyfree.tcl: UNLINK frees a big value (a stream of 200 nodes with a group and
/// pending entries) on the background thread and a small one inline; DEL does only under
/// `lazyfree-lazy-user-del`; FLUSHALL ASYNC and `lazyfree-lazy-user-flush` hand the whole
/// database over (one object per key); CONFIG RESETSTAT zeroes the count. The keys are
/// gone at once either way.
#[test]
fn big_values_are_freed_in_the_background() {
    let s = start_server_with(&["--stream-node-max-entries", "5"]);
    let mut r = s.raw();
    let ok = b"+OK\r\n".to_vec();
    assert_eq!(lazyfreed(&mut r), 0);
    let fill = |r: &mut Raw, key: &str, n: usize| {
        for i in 0..n {
            r.send(&encode_cmd(&[
                b"XADD",
                key.as_bytes(),
                b"*",
                b"f",
                i.to_string().as_bytes(),
            ]));
        }
        r.read_replies(n);
    };
    fill(&mut r, "big", 1000);
    r.cmd_str(&["XGROUP", "CREATE", "big", "g", "0"]);
    r.cmd_str(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "alice",
        "COUNT",
        "2",
        "STREAMS",
        "big",
        ">",
    ]);
    assert_eq!(r.cmd_str(&["UNLINK", "big"]), b":1\r\n");
    assert_eq!(r.cmd_str(&["EXISTS", "big"]), b":0\r\n");
    assert_eq!(lazyfreed(&mut r), 1);
    // Small: freed inline, not counted.
    fill(&mut r, "small", 3);
    assert_eq!(r.cmd_str(&["UNLINK", "small"]), b":1\r\n");
    assert_eq!(lazyfreed(&mut r), 1);
    // DEL is synchronous unless lazyfree-lazy-user-del.
    fill(&mut r, "big", 1000);
    assert_eq!(r.cmd_str(&["DEL", "big"]), b":1\r\n");
    assert_eq!(lazyfreed(&mut r), 1);
    assert_eq!(
        r.cmd_str(&["CONFIG", "SET", "lazyfree-lazy-user-del", "yes"]),
        ok
    );
    fill(&mut r, "big", 1000);
    assert_eq!(r.cmd_str(&["DEL", "big"]), b":1\r\n");
    assert_eq!(lazyfreed(&mut r), 2);
    assert_eq!(r.cmd_str(&["CONFIG", "RESETSTAT"]), ok);
    assert_eq!(lazyfreed(&mut r), 0);
    // FLUSHALL ASYNC: every key, in every database.
    fill(&mut r, "a", 2);
    fill(&mut r, "b", 2);
    r.cmd_str(&["SELECT", "3"]);
    fill(&mut r, "c", 2);
    assert_eq!(r.cmd_str(&["FLUSHALL", "ASYNC"]), ok);
    assert_eq!(r.cmd_str(&["DBSIZE"]), b":0\r\n");
    assert_eq!(lazyfreed(&mut r), 3);
    // FLUSHDB SYNC frees here; plain FLUSHDB follows lazyfree-lazy-user-flush.
    fill(&mut r, "c", 2);
    assert_eq!(r.cmd_str(&["FLUSHDB", "SYNC"]), ok);
    assert_eq!(lazyfreed(&mut r), 3);
    fill(&mut r, "c", 2);
    assert_eq!(
        r.cmd_str(&["CONFIG", "SET", "lazyfree-lazy-user-flush", "yes"]),
        ok
    );
    assert_eq!(r.cmd_str(&["FLUSHDB"]), ok);
    assert_eq!(lazyfreed(&mut r), 4);
    assert_eq!(r.cmd_str(&["DBSIZE"]), b":0\r\n");
}

/// `lazyfree-lazy-expire`: a big key whose TTL passes is freed in the background; the
/// `expired` bookkeeping is as before.
#[test]
fn expired_big_values_are_freed_in_the_background_when_asked() {
    let s = start_server_with(&[
        "--stream-node-max-entries",
        "5",
        "--lazyfree-lazy-expire",
        "yes",
    ]);
    let mut r = s.raw();
    for i in 0..1000 {
        r.send(&encode_cmd(&[
            b"XADD",
            b"big",
            b"*",
            b"f",
            i.to_string().as_bytes(),
        ]));
    }
    r.read_replies(1000);
    assert_eq!(r.cmd_str(&["PEXPIRE", "big", "1"]), b":1\r\n");
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(r.cmd_str(&["EXISTS", "big"]), b":0\r\n");
    assert_eq!(lazyfreed(&mut r), 1);
    assert_eq!(
        info_field(&mut r, "stats", "expired_keys").as_deref(),
        Some("1")
    );
}
