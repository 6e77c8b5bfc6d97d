//! SLOWLOG against the real binary, compared with Debian's redis-server (7.0) where the
//! two must agree: the entry's shape and its trimmed arguments, the errors, HELP.

mod common;

use common::{Raw, c, redis_server, start_server};
use redis::Value;

fn conn(port: u16) -> redis::Connection {
    redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .and_then(|cl| cl.get_connection())
        .expect("connect")
}

fn q(con: &mut redis::Connection, args: &[&[u8]]) -> Value {
    let mut cmd = redis::cmd(std::str::from_utf8(args[0]).expect("name"));
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query::<Value>(con)
        .unwrap_or_else(|e| Value::SimpleString(format!("error: {e}")))
}

/// The newest entry after logging every command and running a 43-argument XADD with
/// a 200-byte value from a named client: (field count, argv, peer, name).
fn newest_entry(port: u16) -> (usize, Vec<Vec<u8>>, String, Vec<u8>) {
    let mut con = conn(port);
    q(&mut con, &[b"CLIENT", b"SETNAME", b"slowpoke"]);
    q(
        &mut con,
        &[b"CONFIG", b"SET", b"slowlog-log-slower-than", b"0"],
    );
    q(&mut con, &[b"SLOWLOG", b"RESET"]);
    let long = vec![b'v'; 200];
    let mut args: Vec<Vec<u8>> = vec![b"XADD".to_vec(), b"s".to_vec(), b"1-1".to_vec()];
    for i in 0..20 {
        args.push(format!("f{i}").into_bytes());
        args.push(if i == 0 { long.clone() } else { b"v".to_vec() });
    }
    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    q(&mut con, &refs);
    let Value::Array(entries) = q(&mut con, &[b"SLOWLOG", b"GET", b"1"]) else {
        panic!("SLOWLOG GET is not an array");
    };
    let Some(Value::Array(entry)) = entries.first() else {
        panic!("no entry");
    };
    let bytes = |v: &Value| match v {
        Value::BulkString(b) => b.clone(),
        other => panic!("not a bulk string: {other:?}"),
    };
    let Value::Array(argv) = &entry[3] else {
        panic!("argv is not an array");
    };
    assert!(matches!(entry[0], Value::Int(_)), "id");
    assert!(
        matches!(entry[1], Value::Int(t) if t > 1_600_000_000),
        "time"
    );
    assert!(matches!(entry[2], Value::Int(d) if d >= 0), "duration");
    (
        entry.len(),
        argv.iter().map(bytes).collect(),
        String::from_utf8_lossy(&bytes(&entry[4])).into_owned(),
        bytes(&entry[5]),
    )
}

#[test]
fn slowlog_entries_have_redis_shape_and_trimming() {
    let ours = start_server();
    let (n, argv, peer, name) = newest_entry(ours.port);
    assert_eq!(n, 6);
    assert_eq!(argv.len(), 32);
    assert_eq!(argv[31], b"... (12 more arguments)");
    assert_eq!(&argv[4][128..], b"... (72 more bytes)");
    assert!(peer.starts_with("127.0.0.1:"), "{peer}");
    assert_eq!(name, b"slowpoke");
    let redis = redis_server();
    let (rn, rargv, _, rname) = newest_entry(redis.port);
    assert_eq!((n, &argv, &name), (rn, &rargv, &rname));
}

#[test]
fn slowlog_threshold_len_and_reset() {
    let s = start_server();
    let mut r = Raw::connect(s.port);
    assert_eq!(
        c(&mut r, "CONFIG SET slowlog-log-slower-than -1"),
        "+OK\r\n"
    );
    assert_eq!(c(&mut r, "SLOWLOG RESET"), "+OK\r\n");
    c(&mut r, "XADD s * f v");
    assert_eq!(c(&mut r, "SLOWLOG LEN"), ":0\r\n");
    assert_eq!(c(&mut r, "CONFIG SET slowlog-log-slower-than 0"), "+OK\r\n");
    c(&mut r, "CONFIG SET slowlog-max-len 3");
    for _ in 0..5 {
        c(&mut r, "XLEN s");
    }
    assert_eq!(c(&mut r, "SLOWLOG LEN"), ":3\r\n");
    // AUTH's arguments are redacted; EXEC is not logged but what it ran is.
    c(&mut r, "SLOWLOG RESET");
    c(&mut r, "AUTH secret");
    c(&mut r, "MULTI");
    c(&mut r, "XLEN s");
    c(&mut r, "EXEC");
    let all = c(&mut r, "SLOWLOG GET -1");
    assert!(all.contains("(redacted)"), "{all}");
    assert!(!all.contains("secret"), "{all}");
    assert!(!all.contains("EXEC"), "{all}");
    assert!(all.contains("XLEN"), "{all}");
    assert_eq!(
        c(&mut r, "CONFIG SET slowlog-log-slower-than 10000000"),
        "+OK\r\n"
    );
    c(&mut r, "SLOWLOG RESET");
    c(&mut r, "XLEN s");
    assert_eq!(c(&mut r, "SLOWLOG GET"), "*0\r\n");
}

#[test]
fn slowlog_errors_and_help_match_redis() {
    let cases = [
        "SLOWLOG",
        "SLOWLOG foo",
        "SLOWLOG GET x",
        "SLOWLOG GET -2",
        "SLOWLOG GET 1 2",
        "SLOWLOG LEN x",
        "SLOWLOG RESET x",
    ];
    let s = start_server();
    let mut ours = Raw::connect(s.port);
    let help = c(&mut ours, "SLOWLOG HELP");
    assert!(help.starts_with(
        "*12\r\n+SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n"
    ));
    let redis = redis_server();
    let mut theirs = Raw::connect(redis.port);
    for line in cases {
        assert_eq!(c(&mut ours, line), c(&mut theirs, line), "{line}");
    }
    // HELP: the same lines but the last, which is `Print this help.` since Redis 8.
    let theirs_help = c(&mut theirs, "SLOWLOG HELP");
    let cut = |t: &str| t.rsplitn(3, "\r\n").nth(2).map(str::to_string);
    assert_eq!(cut(&help), cut(&theirs_help));
}
