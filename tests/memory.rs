//! MEMORY against the real binary, compared with Debian's redis-server (7.0): the STATS
//! keys and their order, DOCTOR on a small instance, the errors and HELP.

mod common;

use common::{Raw, c, redis_server, start_server};
use redis::Value;

/// MEMORY STATS' keys in order (nested `db.N` maps flattened as `db.N/<key>`), after one
/// stream was added.
fn stats_keys(port: u16) -> Vec<String> {
    let mut con = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .and_then(|cl| cl.get_connection())
        .expect("connect");
    redis::cmd("XADD")
        .arg("m")
        .arg("1-1")
        .arg("f")
        .arg("v")
        .query::<Value>(&mut con)
        .expect("xadd");
    let Value::Array(items) = redis::cmd("MEMORY")
        .arg("STATS")
        .query::<Value>(&mut con)
        .expect("memory stats")
    else {
        panic!("not an array");
    };
    let name = |v: &Value| match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("key is not a bulk string: {other:?}"),
    };
    let mut keys = Vec::new();
    for pair in items.chunks(2) {
        let k = name(&pair[0]);
        match &pair[1] {
            Value::Array(inner) => {
                for p in inner.chunks(2) {
                    keys.push(format!("{k}/{}", name(&p[0])));
                }
            }
            Value::Int(_) | Value::BulkString(_) => keys.push(k),
            other => panic!("{k}: {other:?}"),
        }
    }
    keys
}

#[test]
fn memory_stats_has_redis_keys_in_redis_order() {
    let s = start_server();
    let ours = stats_keys(s.port);
    for k in [
        "peak.allocated",
        "total.allocated",
        "startup.allocated",
        "dataset.bytes",
    ] {
        assert!(ours.iter().any(|o| o == k), "{k} missing: {ours:?}");
    }
    assert!(ours.iter().any(|o| o == "db.0/overhead.hashtable.main"));
    let mut r = Raw::connect(s.port);
    let reply = c(&mut r, "MEMORY STATS");
    assert!(reply.contains("$10\r\nkeys.count\r\n:1\r\n"), "{reply}");
    let redis = redis_server();
    assert_eq!(ours, stats_keys(redis.port));
}

#[test]
fn memory_subcommands_match_redis() {
    let s = start_server();
    let mut ours = Raw::connect(s.port);
    assert!(c(&mut ours, "MEMORY MALLOC-STATS").contains("allocated: "));
    let redis = redis_server();
    let mut theirs = Raw::connect(redis.port);
    for line in [
        "MEMORY",
        "MEMORY foo",
        "MEMORY STATS x",
        "MEMORY DOCTOR x",
        "MEMORY PURGE",
        "MEMORY PURGE x",
        "MEMORY MALLOC-STATS x",
        "MEMORY USAGE nokey",
        "MEMORY USAGE nokey SAMPLES",
        "MEMORY DOCTOR",
    ] {
        assert_eq!(c(&mut ours, line), c(&mut theirs, line), "{line}");
    }
    let cut = |t: String| t.rsplitn(3, "\r\n").nth(2).map(str::to_string);
    assert_eq!(
        cut(c(&mut ours, "MEMORY HELP")),
        cut(c(&mut theirs, "MEMORY HELP"))
    );
}
