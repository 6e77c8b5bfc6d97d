//! CLIENT PAUSE / UNPAUSE, CLIENT REPLY, MODULE and the bounded glob matcher, against
//! the built binary; the errors and the replies that do not depend on time are compared
//! with Debian's `redis-server` 7.0.

mod common;

use common::differential::{differential, exact};
use common::*;
use std::time::{Duration, Instant};

/// Every error path of the commands, and MODULE's answers, compared byte for byte.
#[test]
fn errors_and_module_answers_match_redis() {
    let s = start_server();
    let r = redis_server();
    let cases = exact(&[
        &["CLIENT", "PAUSE"],
        &["CLIENT", "PAUSE", "x"],
        &["CLIENT", "PAUSE", "-1"],
        &["CLIENT", "PAUSE", "1.5"],
        &["CLIENT", "PAUSE", "10", "READ"],
        &["CLIENT", "PAUSE", "10", "WRITE", "x"],
        &["CLIENT", "PAUSE", "0", "write"],
        &["CLIENT", "UNPAUSE"],
        &["CLIENT", "UNPAUSE", "x"],
        &["CLIENT", "REPLY"],
        &["CLIENT", "REPLY", "maybe"],
        &["CLIENT", "REPLY", "ON"],
        &["CLIENT", "REPLY", "on", "x"],
        &["MODULE", "LIST"],
        &["MODULE", "LIST", "x"],
        &["MODULE", "LOAD", "/nonexistent.so"],
        &["MODULE", "LOADEX", "/nonexistent.so", "CONFIG", "a", "b"],
        &["MODULE", "UNLOAD", "nothing"],
        &["MODULE", "UNLOAD"],
        &["MODULE", "HELP"],
        &["MODULE", "NOPE"],
    ]);
    for proto in [2, 3] {
        let bad = differential(s.port, r.port, proto, &cases);
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }
    // COMMAND INFO in RESP2 (RESP3's empty sets are a 7.0-only shape, see server_info).
    let info = exact(&[&[
        "COMMAND",
        "INFO",
        "module|list",
        "client|pause",
        "client|unpause",
        "client|reply",
    ]]);
    let bad = differential(s.port, r.port, 2, &info);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // Redis 7.2's bound (7.0 let the deadline overflow into the past).
    let mut c = s.raw();
    assert_eq!(
        c.cmd_str(&["CLIENT", "PAUSE", "9223372036854775807"]),
        b"-ERR timeout is out of range\r\n"
    );
}

/// A write pause holds writes (and EXEC of a queued write, and PUBLISH) until UNPAUSE,
/// lets reads through, and counts the held clients as blocked.
#[test]
fn write_pause_holds_writes_until_unpause() {
    let s = start_server();
    let mut admin = s.raw();
    assert_eq!(admin.cmd_str(&["SET", "k", "v0"]), b"+OK\r\n");
    assert_eq!(
        admin.cmd_str(&["CLIENT", "PAUSE", "100000", "WRITE"]),
        b"+OK\r\n"
    );
    let mut reader = s.raw();
    assert_eq!(reader.cmd_str(&["GET", "k"]), b"$2\r\nv0\r\n");
    assert_eq!(reader.cmd_str(&["PING"]), b"+PONG\r\n");
    // A read-only transaction runs.
    assert_eq!(reader.cmd_str(&["MULTI"]), b"+OK\r\n");
    assert_eq!(reader.cmd_str(&["GET", "k"]), b"+QUEUED\r\n");
    assert_eq!(reader.cmd_str(&["EXEC"]), b"*1\r\n$2\r\nv0\r\n");

    let mut writer = s.raw();
    writer.send(&encode_cmd(&[b"SET", b"k", b"v1"]));
    let mut publisher = s.raw();
    publisher.send(&encode_cmd(&[b"PUBLISH", b"ch", b"m"]));
    wait_blocked(&mut admin, 2);
    // Still the old value: the write has not run.
    assert_eq!(admin.cmd_str(&["GET", "k"]), b"$2\r\nv0\r\n");
    assert_eq!(admin.cmd_str(&["CLIENT", "UNPAUSE"]), b"+OK\r\n");
    assert_eq!(writer.read_reply(), b"+OK\r\n");
    assert_eq!(publisher.read_reply(), b":0\r\n");
    assert_eq!(admin.cmd_str(&["GET", "k"]), b"$2\r\nv1\r\n");
    wait_blocked(&mut admin, 0);
}

/// A pause of everything holds reads too, and ends by itself at its deadline.
#[test]
fn pause_all_holds_reads_and_ends_at_its_deadline() {
    let s = start_server();
    let mut admin = s.raw();
    assert_eq!(admin.cmd_str(&["SET", "k", "v"]), b"+OK\r\n");
    let started = Instant::now();
    assert_eq!(admin.cmd_str(&["CLIENT", "PAUSE", "300"]), b"+OK\r\n");
    let mut reader = s.raw();
    reader.set_timeout(Duration::from_secs(30));
    reader.send(&encode_cmd(&[b"GET", b"k"]));
    // The reply comes only once the pause is over.
    assert_eq!(reader.read_reply(), b"$1\r\nv\r\n");
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "served {:?} after a 300 ms pause began",
        started.elapsed()
    );
}

/// While clients are paused a key past its TTL reads as missing but is not deleted
/// (no `expired_keys`, no DEL); after UNPAUSE the next access deletes it.
#[test]
fn nothing_expires_while_paused() {
    let s = start_server();
    let mut c = s.raw();
    assert_eq!(c.cmd_str(&["SET", "k", "v", "PX", "1"]), b"+OK\r\n");
    assert_eq!(
        c.cmd_str(&["CLIENT", "PAUSE", "100000", "WRITE"]),
        b"+OK\r\n"
    );
    // Wait until the TTL has passed (the key reads as gone).
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.cmd_str(&["GET", "k"]) != b"$-1\r\n" {
        assert!(Instant::now() < deadline, "the key never read as expired");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(c.cmd_str(&["EXISTS", "k"]), b":0\r\n");
    assert_eq!(
        info_field(&mut c, "stats", "expired_keys").as_deref(),
        Some("0")
    );
    assert_eq!(c.cmd_str(&["DBSIZE"]), b":1\r\n");
    assert_eq!(c.cmd_str(&["CLIENT", "UNPAUSE"]), b"+OK\r\n");
    assert_eq!(c.cmd_str(&["GET", "k"]), b"$-1\r\n");
    assert_eq!(
        info_field(&mut c, "stats", "expired_keys").as_deref(),
        Some("1")
    );
    assert_eq!(c.cmd_str(&["DBSIZE"]), b":0\r\n");
}

/// CLIENT REPLY OFF drops every reply until ON; SKIP drops the next one only.
#[test]
fn client_reply_off_on_and_skip() {
    let s = start_server();
    let mut c = s.raw();
    // OFF answers nothing, nor do the commands after it; ON answers +OK.
    let mut batch = encode_cmd(&[b"CLIENT", b"REPLY", b"OFF"]);
    batch.extend(encode_cmd(&[b"SET", b"a", b"1"]));
    batch.extend(encode_cmd(&[b"GET", b"a"]));
    batch.extend(encode_cmd(&[b"CLIENT", b"REPLY", b"ON"]));
    batch.extend(encode_cmd(&[b"GET", b"a"]));
    c.send(&batch);
    assert_eq!(c.read_reply(), b"+OK\r\n");
    assert_eq!(c.read_reply(), b"$1\r\n1\r\n");
    // SKIP answers nothing and drops the next reply only.
    let mut batch = encode_cmd(&[b"CLIENT", b"REPLY", b"SKIP"]);
    batch.extend(encode_cmd(&[b"INCR", b"n"]));
    batch.extend(encode_cmd(&[b"INCR", b"n"]));
    c.send(&batch);
    assert_eq!(c.read_reply(), b":2\r\n");
    assert_eq!(c.cmd_str(&["PING"]), b"+PONG\r\n");
}

/// Pub/Sub frames are pushed, not replied: a client with CLIENT REPLY OFF still gets
/// its subscribe confirmations and its messages, in RESP2 as in RESP3 (Redis's
/// "PubSub messages with CLIENT REPLY OFF").
#[test]
fn client_reply_off_keeps_pubsub_frames() {
    let s = start_server();
    let r = redis_server();
    for port in [s.port, r.port] {
        for proto in [2, 3] {
            let mut c = Raw::connect(port);
            if proto == 3 {
                c.hello3();
            }
            let mut p = Raw::connect(port);
            // A channel per round: the previous round's subscriber may not be gone yet.
            let ch = format!("c{proto}");
            c.send(&encode_cmd(&[b"CLIENT", b"REPLY", b"OFF"]));
            c.send(&encode_cmd(&[b"SUBSCRIBE", ch.as_bytes()]));
            let confirm = c.read_reply();
            assert!(
                escape(&confirm).contains("subscribe"),
                "port {port} RESP{proto}: {}",
                escape(&confirm)
            );
            assert_eq!(p.cmd_str(&["PUBLISH", &ch, "m"]), b":1\r\n");
            let message = c.read_reply();
            assert!(
                escape(&message).ends_with(&format!("$2\\r\\n{ch}\\r\\n$1\\r\\nm\\r\\n")),
                "port {port} RESP{proto}: {}",
                escape(&message)
            );
        }
    }
}

/// The glob matcher is bounded as Redis's: a pattern of many stars against a long key
/// fails at once instead of backtracking exponentially (Redis's "Regression for
/// pattern matching long nested loops").
#[test]
fn nested_star_patterns_return_promptly() {
    let s = start_server();
    let mut c = s.raw();
    let key = "a".repeat(50_000);
    assert_eq!(c.cmd_str(&["SET", &key, "1"]), b"+OK\r\n");
    let pattern = format!("{}b", "a*".repeat(60));
    c.set_timeout(Duration::from_secs(60));
    assert_eq!(c.cmd_str(&["KEYS", &pattern]), b"*0\r\n");
    assert_eq!(
        c.cmd_str(&["SCAN", "0", "MATCH", &pattern, "COUNT", "10"]),
        b"*2\r\n$1\r\n0\r\n*0\r\n"
    );
    assert_eq!(c.cmd_str(&["PING"]), b"+PONG\r\n");
}
