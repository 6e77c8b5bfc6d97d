//! The hash family against the real binary: every @hash command's replies and errors
//! compared byte for byte with Redis 7.0 in RESP2 and RESP3 (unordered replies as
//! multisets, random ones by shape), the listpack/hashtable switch, keyspace events
//! compared with Redis's, HINCRBYFLOAT logged as HSET, and hashes surviving a restart.

mod common;

use common::differential::*;
use common::*;

fn big_hset(key: &str, n: usize) -> Vec<String> {
    let mut v = vec!["HSET".to_string(), key.to_string()];
    for i in 0..n {
        v.push(format!("f{i}"));
        v.push(i.to_string());
    }
    v
}

#[test]
fn hash_replies_and_errors_match_redis_in_both_protocols() {
    let (s, r) = (start_server(), redis_server());
    let long64 = "x".repeat(64);
    let long65 = "x".repeat(65);
    let long100 = "y".repeat(100);
    let h3 = big_hset("h3", 512);
    let h3: Vec<&str> = h3.iter().map(String::as_str).collect();
    for proto in [2, 3] {
        let mut cases = exact(&[
            &["FLUSHALL"],
            &["HSET", "h", "f", "v"],
            &["OBJECT", "ENCODING", "h"],
            &["HSET", "h", "long", &long64],
            &["OBJECT", "ENCODING", "h"],
            &["HSET", "h", "long", &long65],
            &["OBJECT", "ENCODING", "h"],
            &["HGET", "h", "long"],
            &["HLEN", "h"],
            &["HSET", "h2", "a", "1"],
            &["HSETNX", "h2", "a", &long100],
            &["OBJECT", "ENCODING", "h2"],
            &["HSETNX", "h2", "b", &long100],
            &["OBJECT", "ENCODING", "h2"],
            &h3,
            &["OBJECT", "ENCODING", "h3"],
            &["HSET", "h3", "f0", "z"],
            &["OBJECT", "ENCODING", "h3"],
            &["HSET", "h3", "new", "z"],
            &["OBJECT", "ENCODING", "h3"],
            &["HLEN", "h3"],
            &[
                "HSET", "p", "a", "1", "b", "-7", "c", "1234567", "d", "01", "e", "",
            ],
            &["HGETALL", "p"],
            &["HKEYS", "p"],
            &["HVALS", "p"],
            &["HINCRBYFLOAT", "p", "a", "1.5"],
            &["HINCRBYFLOAT", "p", "a", "-3"],
            &["HINCRBYFLOAT", "p", "a", "1e3"],
            &["HINCRBYFLOAT", "p", "a", "-998.5"],
            &["HSET", "fl", "a", "0.1", "b", "0", "c", "1e308"],
            &["HINCRBYFLOAT", "fl", "a", "0.2"],
            &["HINCRBYFLOAT", "fl", "b", "123.1"],
            &["HINCRBYFLOAT", "fl", "b", "12345.6789"],
            &["HINCRBYFLOAT", "fl", "b", "-0.000003814697265625"],
            &["HINCRBYFLOAT", "fl", "c", "1e308"],
            &["HINCRBYFLOAT", "fl", "d", "5e-18"],
            &["HINCRBYFLOAT", "fl", "d", "1e5000"],
            &["HINCRBYFLOAT", "fl", "d", "1e-5000"],
            &["HINCRBYFLOAT", "fl", "d", ".5"],
            &["HINCRBYFLOAT", "fl", "d", "-3."],
            &["HMGET", "fl", "a", "b", "c", "d"],
            &["HINCRBYFLOAT", "p", "x", "inf"],
            &["HINCRBYFLOAT", "p", "x", "nan"],
            &["HINCRBYFLOAT", "p", "x", " 1"],
            &["HINCRBYFLOAT", "p", "x", ""],
            &["HINCRBYFLOAT", "p", "d", "1"],
            &["HINCRBYFLOAT", "p", "e", "1"],
            &["HSET", "p", "big", "1e308"],
            &["HINCRBYFLOAT", "p", "big", "-inf"],
            &["HINCRBY", "p", "b", "10"],
            &["HINCRBY", "p", "d", "1"],
            &["HINCRBY", "p", "a", "1"],
            &[
                "HSET",
                "p",
                "min",
                "-9223372036854775808",
                "max",
                "9223372036854775807",
            ],
            &["HINCRBY", "p", "min", "-1"],
            &["HINCRBY", "p", "max", "1"],
            &["HINCRBY", "p", "max", "0"],
            &["HINCRBY", "p", "z", "99999999999999999999"],
            &["HINCRBY", "p", "z", "1.5"],
            &["HINCRBY", "p", "z", "-5"],
            &["HGET", "p", "z"],
            &["HSTRLEN", "p", "z"],
            &["HSTRLEN", "p", "c"],
            &["HSTRLEN", "p", "min"],
            &["HSTRLEN", "p", "nope"],
            &["HSTRLEN", "nokey", "nope"],
            &["HEXISTS", "p", "c"],
            &["HEXISTS", "p", "nope"],
            &["HEXISTS", "nokey", "c"],
            &["HMGET", "p", "a", "zz", "min"],
            &["HMGET", "nokey", "a"],
            &["HGETALL", "nokey"],
            &["HKEYS", "nokey"],
            &["HVALS", "nokey"],
            &["HLEN", "nokey"],
            &["HGET", "nokey", "a"],
            &["HGETALL", "p"],
            &["HRANDFIELD", "nokey"],
            &["HRANDFIELD", "nokey", "5"],
            &["HRANDFIELD", "nokey", "5", "WITHVALUES"],
            &["HRANDFIELD", "nokey", "x"],
            &["HRANDFIELD", "h", "0"],
            &["HRANDFIELD", "h", "0", "WITHVALUES"],
            &["HRANDFIELD", "h", "x"],
            &["HRANDFIELD", "h", "-9223372036854775808"],
            &["HRANDFIELD", "h", "1", "WITHVALUE"],
            &["HRANDFIELD", "h", "1", "WITHVALUES", "x"],
            &["HRANDFIELD", "h", "-4611686018427387904", "WITHVALUES"],
            &["HRANDFIELD", "h", "4611686018427387904", "WITHVALUES"],
            &["HRANDFIELD", "p", "100"],
            &["HRANDFIELD", "p", "100", "WITHVALUES"],
            &["HSCAN", "p", "0"],
            &["HSCAN", "p", "0", "MATCH", "m*"],
            &["HSCAN", "p", "0", "MATCH", "m*", "COUNT", "1"],
            &["HSCAN", "p", "0", "COUNT", "0"],
            &["HSCAN", "p", "0", "COUNT", "x"],
            &["HSCAN", "p", "x"],
            &["HSCAN", "p", "-1"],
            &["HSCAN", "nokey", "0"],
            &["HSCAN", "nokey", "0", "BAD"],
            &["HSCAN", "p", "0", "BAD"],
            &["HSCAN", "p", "0", "COUNT"],
            &["HSET", "p", "a"],
            &["HSET", "p"],
            &["HMSET", "p", "a"],
            &["HMSET", "p", "q", "1"],
            &["HSETNX", "p", "q", "2"],
            &["HDEL", "p", "q", "q", "nope"],
            &["HDEL", "nokey", "a"],
            &["HDEL", "h", "f", "long"],
            &["EXISTS", "h"],
            &["HSET", "e", "f", "v"],
            &["EXPIRE", "e", "100"],
            &["HSET", "e", "g", "w"],
            &["HDEL", "e", "g"],
            &["TTL", "e"],
            &["XADD", "st", "1-1", "f", "v"],
            &["HSET", "st", "a", "b"],
            &["HSETNX", "st", "a", "b"],
            &["HGET", "st", "a"],
            &["HMGET", "st", "a"],
            &["HGETALL", "st"],
            &["HKEYS", "st"],
            &["HVALS", "st"],
            &["HLEN", "st"],
            &["HDEL", "st", "a"],
            &["HEXISTS", "st", "a"],
            &["HSTRLEN", "st", "a"],
            &["HINCRBY", "st", "a", "1"],
            &["HINCRBYFLOAT", "st", "a", "1"],
            &["HRANDFIELD", "st"],
            &["HRANDFIELD", "st", "2"],
            &["HSCAN", "st", "0"],
            &["SADD", "set", "a"],
            &["HGET", "set", "a"],
            &["HSET", "set", "a", "b"],
            &["TYPE", "p"],
        ]);
        cases.extend([
            (Mode::Pairs, vec!["HGETALL", "h3"]),
            (Mode::Sorted, vec!["HKEYS", "h3"]),
            (Mode::Sorted, vec!["HVALS", "h3"]),
            (Mode::Shape, vec!["HRANDFIELD", "h3"]),
            (Mode::Shape, vec!["HRANDFIELD", "h3", "-5", "WITHVALUES"]),
            (Mode::Shape, vec!["HRANDFIELD", "h3", "5", "WITHVALUES"]),
            (Mode::Shape, vec!["HRANDFIELD", "h3", "300"]),
            (Mode::Shape, vec!["HRANDFIELD", "h3", "600", "WITHVALUES"]),
            (Mode::Shape, vec!["HRANDFIELD", "p", "-30"]),
            (Mode::Shape, vec!["HRANDFIELD", "p", "3", "WITHVALUES"]),
            (Mode::Shape, vec!["HRANDFIELD", "p", "8", "WITHVALUES"]),
            (Mode::Shape, vec!["HRANDFIELD", "p", "1", "WITHVALUES"]),
            (Mode::Shape, vec!["HRANDFIELD", "p", "-1"]),
        ]);
        let bad = differential(s.port, r.port, proto, &cases);
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }
}

fn events_of(port: u16, cmds: &[&[&str]]) -> Vec<String> {
    keyevents(port, "KEA", cmds)
}

#[test]
fn hash_keyspace_events_match_redis() {
    let (s, r) = (start_server(), redis_server());
    let cmds: &[&[&str]] = &[
        &["HSET", "h", "a", "1", "b", "2"],
        &["HSET", "h", "a", "3"],
        &["HMSET", "h", "c", "x"],
        &["HSETNX", "h", "a", "9"],
        &["HSETNX", "h", "d", "9"],
        &["HINCRBY", "h", "a", "2"],
        &["HINCRBY", "h", "c", "2"],
        &["HINCRBYFLOAT", "h", "a", "0.5"],
        &["HINCRBYFLOAT", "n", "a", "0.5"],
        &["HINCRBY", "n2", "a", "5"],
        &["HDEL", "h", "zz"],
        &["HDEL", "h", "a", "b"],
        &["HDEL", "h", "c", "d"],
        &["HGET", "h", "a"],
        &["HSETNX", "h5", "a", "1"],
    ];
    let ours = events_of(s.port, cmds);
    assert!(ours.len() > 10, "{ours:?}");
    assert_eq!(ours, events_of(r.port, cmds));
}

#[test]
fn hincrbyfloat_is_logged_as_hset_and_hashes_survive_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let h3 = big_hset("big", 600);
    let h3: Vec<&str> = h3.iter().map(String::as_str).collect();
    let want;
    {
        let node = Node::start(dir.path(), &["--appendonly", "yes", "--save", ""]);
        let mut c = node.raw();
        c.cmd_str(&["HSET", "small", "a", "1", "b", "text", "c", "-12"]);
        assert_eq!(
            c.cmd_str(&["HINCRBYFLOAT", "small", "a", "0.25"]),
            reply::bulk("1.25")
        );
        c.cmd_str(&["HINCRBY", "small", "c", "2"]);
        c.cmd_str(&h3);
        c.cmd_str(&["HDEL", "big", "f7"]);
        c.cmd_str(&["HSET", "long", "f", &"v".repeat(100)]);
        want = [
            c.cmd_str(&["HGETALL", "small"]),
            c.cmd_str(&["HLEN", "big"]),
            c.cmd_str(&["HGET", "big", "f599"]),
            c.cmd_str(&["OBJECT", "ENCODING", "small"]),
            c.cmd_str(&["OBJECT", "ENCODING", "big"]),
            c.cmd_str(&["OBJECT", "ENCODING", "long"]),
        ];
        node.stop();
    }
    let bytes = dir_bytes(dir.path());
    assert_eq!(
        count(&bytes, b"HINCRBYFLOAT"),
        0,
        "HINCRBYFLOAT must be logged as HSET"
    );
    assert!(
        count(&bytes, b"$4\r\n1.25\r\n") >= 1,
        "the HSET of the result is logged"
    );
    let node = Node::start(dir.path(), &["--appendonly", "yes", "--save", ""]);
    let mut c = node.raw();
    let got = [
        c.cmd_str(&["HGETALL", "small"]),
        c.cmd_str(&["HLEN", "big"]),
        c.cmd_str(&["HGET", "big", "f599"]),
        c.cmd_str(&["OBJECT", "ENCODING", "small"]),
        c.cmd_str(&["OBJECT", "ENCODING", "big"]),
        c.cmd_str(&["OBJECT", "ENCODING", "long"]),
    ];
    assert_eq!(got.map(|g| escape(&g)), want.map(|w| escape(&w)));
}

#[test]
fn hscan_of_a_large_hash_returns_every_field_while_it_changes() {
    let s = start_server();
    let mut c = s.raw();
    let h = big_hset("h", 2000);
    let h: Vec<&str> = h.iter().map(String::as_str).collect();
    c.cmd_str(&h);
    let mut seen = std::collections::HashSet::new();
    let mut cursor = "0".to_string();
    let mut round = 0;
    loop {
        let reply = c.cmd_str(&["HSCAN", "h", &cursor, "COUNT", "50"]);
        let V::Agg(_, Some(parts)) = parse(&reply, 0).0 else {
            panic!("bad reply")
        };
        let (V::Bulk(Some(next)), V::Agg(_, Some(items))) = (&parts[0], &parts[1]) else {
            panic!("bad reply")
        };
        for pair in items.chunks(2) {
            if let [V::Bulk(Some(f)), V::Bulk(Some(v))] = pair {
                assert_eq!(&f[1..], &v[..], "field and value travel together");
                seen.insert(f.clone());
            }
        }
        round += 1;
        // Grow and shrink the table between calls.
        if round == 5 {
            let more = big_hset("h", 6000);
            let more: Vec<&str> = more.iter().map(String::as_str).collect();
            c.cmd_str(&more);
        }
        if round == 20 {
            let mut del = vec!["HDEL".to_string(), "h".to_string()];
            del.extend((2000..6000).map(|i| format!("f{i}")));
            let del: Vec<&str> = del.iter().map(String::as_str).collect();
            c.cmd_str(&del);
        }
        cursor = String::from_utf8(next.clone()).expect("cursor");
        if cursor == "0" {
            break;
        }
    }
    for i in 0..2000 {
        assert!(
            seen.contains(format!("f{i}").as_bytes()),
            "f{i} was never returned"
        );
    }
}

#[test]
fn hrandfield_counts_pick_distinct_fields_or_repeat_for_negative_counts() {
    let s = start_server();
    let mut c = s.raw();
    for (key, n) in [("small", 10), ("large", 1000)] {
        let h = big_hset(key, n);
        let h: Vec<&str> = h.iter().map(String::as_str).collect();
        c.cmd_str(&h);
        for count in [2, n / 2, n - 1] {
            let reply = c.cmd_str(&["HRANDFIELD", key, &count.to_string(), "WITHVALUES"]);
            let V::Agg(_, Some(items)) = parse(&reply, 0).0 else {
                panic!()
            };
            assert_eq!(items.len(), 2 * count);
            let fields: std::collections::HashSet<_> =
                items.chunks(2).map(|p| p[0].clone()).collect();
            assert_eq!(
                fields.len(),
                count,
                "{key} {count}: fields must be distinct"
            );
        }
        let reply = c.cmd_str(&["HRANDFIELD", key, "-50"]);
        let V::Agg(_, Some(items)) = parse(&reply, 0).0 else {
            panic!()
        };
        assert_eq!(items.len(), 50);
        let fields: std::collections::HashSet<_> = items.iter().collect();
        if key == "small" {
            assert!(fields.len() < 50, "a negative count repeats fields");
        }
    }
}
