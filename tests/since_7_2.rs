//! What Redis added after 7.0 and before 8.10 to commands streamd already had, and the
//! 8.10 commands, against the built binary: COPY of every type (unchanged since 6.2, so
//! compared byte for byte with Debian's redis-server 7.0, events and log included),
//! ZRANK/ZREVRANK WITHSCORE (7.2), HSCAN NOVALUES (7.4), AGGREGATE COUNT (8.8) and
//! SUNIONCARD/SDIFFCARD (8.10). The newer ones have no oracle on this machine, so their
//! exact replies are written out here, as Redis's `t_zset.c`, `db.c` and `t_set.c`
//! write them, in RESP2 and RESP3.

mod common;

use common::differential::*;
use common::reply::{arr, bulk, err, int};
use common::*;

/// A Raw connection in `proto`.
fn conn(port: u16, proto: u8) -> Raw {
    let mut r = Raw::connect(port);
    if proto == 3 {
        r.hello3();
    }
    r
}

/// Builds a command with `n` generated members after `head`.
fn many(head: &[&str], n: usize, item: impl Fn(usize) -> Vec<String>) -> Vec<String> {
    let mut v: Vec<String> = head.iter().map(|s| s.to_string()).collect();
    for i in 0..n {
        v.extend(item(i));
    }
    v
}

/// Sends each command and asserts its exact reply bytes.
fn expect_replies(r: &mut Raw, cases: &[(Vec<&str>, Vec<u8>)]) {
    for (args, want) in cases {
        let got = r.cmd_str(args);
        assert_eq!(escape(&got), escape(want), "reply to {args:?} (left: got)");
    }
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

// ---- COPY ---------------------------------------------------------------------------

#[test]
fn copy_of_every_type_matches_redis_in_both_protocols() {
    let (s, r) = (start_server(), redis_server());
    let big_list = many(&["RPUSH", "bl"], 2000, |i| vec![format!("e{i}")]);
    let big_hash = many(&["HSET", "bh"], 600, |i| {
        vec![format!("f{i}"), i.to_string()]
    });
    let big_set = many(&["SADD", "bs"], 600, |i| vec![format!("m{i}")]);
    let big_zset = many(&["ZADD", "bz"], 200, |i| {
        vec![i.to_string(), format!("m{i}")]
    });
    let long = "x".repeat(100);
    for proto in [2, 3] {
        let mut cases = exact(&[
            &["FLUSHALL"],
            // Strings: an integer, a short one, a long one, one grown by APPEND.
            &["SET", "int", "12345"],
            &["SET", "short", "hello"],
            &["SET", "long", &long],
            &["SET", "app", "a"],
            &["APPEND", "app", "bc"],
            &["COPY", "int", "int2"],
            &["COPY", "short", "short2"],
            &["COPY", "long", "long2"],
            &["COPY", "app", "app2"],
            &["GET", "int2"],
            &["GET", "short2"],
            &["GET", "long2"],
            &["GET", "app2"],
            &["OBJECT", "ENCODING", "int2"],
            &["OBJECT", "ENCODING", "short2"],
            &["OBJECT", "ENCODING", "long2"],
            &["INCR", "int2"],
            &["GET", "int"],
            // Lists, small and large.
            &["RPUSH", "l", "a", "b", "1", "c"],
            &["COPY", "l", "l2"],
            &["LRANGE", "l2", "0", "-1"],
            &["OBJECT", "ENCODING", "l2"],
            &["LPOP", "l2"],
            &["LRANGE", "l", "0", "-1"],
            &strs(&big_list),
            &["COPY", "bl", "bl2"],
            &["LLEN", "bl2"],
            &["LINDEX", "bl2", "150"],
            &["OBJECT", "ENCODING", "bl2"],
            // Hashes.
            &["HSET", "h", "f", "v", "g", "1"],
            &["COPY", "h", "h2"],
            &["HGET", "h2", "f"],
            &["HLEN", "h2"],
            &["OBJECT", "ENCODING", "h2"],
            &["HDEL", "h2", "f"],
            &["HLEN", "h"],
            &strs(&big_hash),
            &["COPY", "bh", "bh2"],
            &["HLEN", "bh2"],
            &["HGET", "bh2", "f599"],
            &["OBJECT", "ENCODING", "bh2"],
            // Sets: an intset and a hashtable.
            &["SADD", "si", "1", "2", "3"],
            &["COPY", "si", "si2"],
            &["SCARD", "si2"],
            &["SISMEMBER", "si2", "2"],
            &["OBJECT", "ENCODING", "si2"],
            &["SREM", "si2", "1"],
            &["SCARD", "si"],
            &strs(&big_set),
            &["COPY", "bs", "bs2"],
            &["SCARD", "bs2"],
            &["OBJECT", "ENCODING", "bs2"],
            // Sorted sets, small and large.
            &["ZADD", "z", "1", "a", "2.5", "b", "inf", "c"],
            &["COPY", "z", "z2"],
            &["ZRANGE", "z2", "0", "-1", "WITHSCORES"],
            &["OBJECT", "ENCODING", "z2"],
            &["ZINCRBY", "z2", "1", "a"],
            &["ZSCORE", "z", "a"],
            &strs(&big_zset),
            &["COPY", "bz", "bz2"],
            &["ZCARD", "bz2"],
            &["ZRANGE", "bz2", "100", "102", "WITHSCORES"],
            &["ZSCORE", "bz2", "m150"],
            &["OBJECT", "ENCODING", "bz2"],
            // Streams.
            &["XADD", "st", "1-1", "a", "1"],
            &["XGROUP", "CREATE", "st", "g", "0"],
            &["COPY", "st", "st2"],
            &["XRANGE", "st2", "-", "+"],
            &["XINFO", "GROUPS", "st2"],
            // The TTL goes with the copy; a key without one gives a key without one.
            &["SET", "ttl", "v", "EX", "5000"],
            &["COPY", "ttl", "ttl2"],
            &["TTL", "ttl2"],
            &["TTL", "int2"],
            // An existing destination: 0, then REPLACE (whatever its type).
            &["COPY", "l", "h"],
            &["TYPE", "h"],
            &["COPY", "l", "h", "REPLACE"],
            &["TYPE", "h"],
            &["LRANGE", "h", "0", "-1"],
            &["COPY", "z", "ttl2", "replace"],
            &["TTL", "ttl2"],
            &["TYPE", "ttl2"],
            // Another database, and back over the same name.
            &["COPY", "z", "z", "DB", "1"],
            &["COPY", "z", "z", "DB", "1"],
            &["COPY", "z", "z", "DB", "1", "REPLACE"],
            &["COPY", "h", "z", "db", "1", "replace"],
            &["SELECT", "1"],
            &["TYPE", "z"],
            &["LRANGE", "z", "0", "-1"],
            &["SELECT", "0"],
            &["TYPE", "z"],
            // Missing source, errors, arity.
            &["COPY", "nokey", "x"],
            &["COPY", "nokey", "nokey"],
            &["COPY", "z", "z"],
            &["COPY", "z", "z", "DB", "0"],
            &["COPY", "z", "x", "DB"],
            &["COPY", "z", "x", "DB", "16"],
            &["COPY", "z", "x", "DB", "-1"],
            &["COPY", "z", "x", "DB", "x"],
            &["COPY", "z", "x", "DB", "99999999999"],
            &["COPY", "z", "x", "REPLACE", "BAD"],
            &["COPY", "z"],
            &["COPY"],
            &["EXISTS", "x"],
            &["DBSIZE"],
        ]);
        // Redis 7.2+ keeps a small list in one listpack (Debian's 7.0: quicklist).
        newer(
            &mut cases,
            &[(&["OBJECT", "ENCODING", "l2"], "$8\r\nlistpack\r\n")],
        );
        cases.push((Mode::Sorted, vec!["SMEMBERS", "si2"]));
        cases.push((Mode::Pairs, vec!["HGETALL", "h2"]));
        let bad = differential(s.port, r.port, proto, &cases);
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }
}

#[test]
fn copy_keyspace_events_match_redis() {
    let (s, r) = (start_server(), redis_server());
    let cmds: &[&[&str]] = &[
        &["SET", "a", "1"],
        &["RPUSH", "l", "x"],
        &["HSET", "h", "f", "v"],
        &["SADD", "s", "m"],
        &["ZADD", "z", "1", "m"],
        &["COPY", "a", "a2"],
        &["COPY", "l", "l2"],
        &["COPY", "h", "h2"],
        &["COPY", "s", "s2"],
        &["COPY", "z", "z2"],
        // Refused: no events.
        &["COPY", "a", "l2"],
        &["COPY", "nokey", "x"],
        // REPLACE: no `del` for the replaced value, then `new` and `copy_to`.
        &["COPY", "z", "l2", "REPLACE"],
        // Into another database: its events are not on db 0's channel.
        &["COPY", "a", "a", "DB", "2"],
    ];
    let ours = keyevents(s.port, "KEAn", cmds);
    let theirs = keyevents(r.port, "KEAn", cmds);
    assert_eq!(ours, theirs);
    assert!(
        ours.contains(&"__keyevent@0__:copy_to l2".to_string()),
        "{ours:?}"
    );
    assert!(
        ours.contains(&"__keyevent@0__:new z2".to_string()),
        "{ours:?}"
    );
}

#[test]
fn copy_is_logged_as_sent_and_copies_survive_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let want;
    {
        let node = Node::start(dir.path(), &["--appendonly", "yes", "--save", ""]);
        let mut c = node.raw();
        c.cmd_str(&["HSET", "h", "f", "v"]);
        c.cmd_str(&["ZADD", "z", "1.5", "m"]);
        c.cmd_str(&["SET", "str", "v", "PX", "100000000"]);
        assert_eq!(c.cmd_str(&["COPY", "h", "h2"]), int(1));
        assert_eq!(c.cmd_str(&["COPY", "z", "h2", "REPLACE"]), int(1));
        assert_eq!(c.cmd_str(&["COPY", "str", "str", "DB", "5"]), int(1));
        assert_eq!(c.cmd_str(&["COPY", "h", "z"]), int(0));
        want = [
            c.cmd_str(&["TYPE", "h2"]),
            c.cmd_str(&["ZSCORE", "h2", "m"]),
            c.cmd_str(&["HGET", "h", "f"]),
        ];
        node.stop();
    }
    let bytes = dir_bytes(dir.path());
    // Logged verbatim (as Redis propagates it), only when it copied.
    assert_eq!(count(&bytes, b"$4\r\nCOPY\r\n"), 3, "three COPYs copied");
    assert_eq!(count(&bytes, b"$7\r\nREPLACE\r\n"), 1);
    let node = Node::start(dir.path(), &["--appendonly", "yes", "--save", ""]);
    let mut c = node.raw();
    let got = [
        c.cmd_str(&["TYPE", "h2"]),
        c.cmd_str(&["ZSCORE", "h2", "m"]),
        c.cmd_str(&["HGET", "h", "f"]),
    ];
    assert_eq!(got.map(|g| escape(&g)), want.map(|w| escape(&w)));
    c.cmd_str(&["SELECT", "5"]);
    assert_eq!(c.cmd_str(&["GET", "str"]), bulk("v"));
    let pttl = String::from_utf8(c.cmd_str(&["PTTL", "str"])).expect("utf8");
    let pttl: i64 = pttl.trim_start_matches(':').trim().parse().expect("int");
    assert!(pttl > 90_000_000, "the copy kept its TTL: {pttl}");
}

// ---- ZRANK / ZREVRANK WITHSCORE -------------------------------------------------------

#[test]
fn zrank_withscore_replies_rank_and_score() {
    let s = start_server();
    let big = many(&["ZADD", "big"], 300, |i| {
        vec![format!("{}.5", i), format!("m{i:03}")]
    });
    for proto in [2u8, 3] {
        let resp3 = proto == 3;
        let mut r = conn(s.port, proto);
        r.cmd_str(&["FLUSHALL"]);
        r.cmd_str(&["ZADD", "z", "1", "a", "2.5", "b", "inf", "c", "-3", "d"]);
        r.cmd_str(&strs(&big));
        r.cmd_str(&["SET", "str", "x"]);
        let score = |t: &str| {
            if resp3 {
                format!(",{t}\r\n").into_bytes()
            } else {
                bulk(t)
            }
        };
        let null = if resp3 {
            b"_\r\n".to_vec()
        } else {
            b"$-1\r\n".to_vec()
        };
        let null_array = if resp3 {
            b"_\r\n".to_vec()
        } else {
            b"*-1\r\n".to_vec()
        };
        expect_replies(
            &mut r,
            &[
                (vec!["ZRANK", "z", "a"], int(1)),
                (
                    vec!["ZRANK", "z", "a", "WITHSCORE"],
                    arr(&[int(1), score("1")]),
                ),
                (
                    vec!["ZRANK", "z", "b", "withscore"],
                    arr(&[int(2), score("2.5")]),
                ),
                (
                    vec!["ZRANK", "z", "c", "WithScore"],
                    arr(&[int(3), score("inf")]),
                ),
                (
                    vec!["ZRANK", "z", "d", "WITHSCORE"],
                    arr(&[int(0), score("-3")]),
                ),
                (
                    vec!["ZREVRANK", "z", "c", "WITHSCORE"],
                    arr(&[int(0), score("inf")]),
                ),
                (
                    vec!["ZREVRANK", "z", "d", "WITHSCORE"],
                    arr(&[int(3), score("-3")]),
                ),
                (vec!["ZREVRANK", "z", "b"], int(1)),
                // The skiplist encoding too.
                (
                    vec!["ZRANK", "big", "m150", "WITHSCORE"],
                    arr(&[int(150), score("150.5")]),
                ),
                (
                    vec!["ZREVRANK", "big", "m150", "WITHSCORE"],
                    arr(&[int(149), score("150.5")]),
                ),
                (
                    vec!["ZRANK", "big", "m000", "WITHSCORE"],
                    arr(&[int(0), score("0.5")]),
                ),
                // Missing member or key: the null, the null array with WITHSCORE.
                (vec!["ZRANK", "z", "nope"], null.clone()),
                (vec!["ZRANK", "z", "nope", "WITHSCORE"], null_array.clone()),
                (
                    vec!["ZREVRANK", "z", "nope", "WITHSCORE"],
                    null_array.clone(),
                ),
                (vec!["ZRANK", "nokey", "a"], null.clone()),
                (vec!["ZRANK", "nokey", "a", "WITHSCORE"], null_array.clone()),
                (
                    vec!["ZREVRANK", "nokey", "a", "WITHSCORE"],
                    null_array.clone(),
                ),
                // Errors: syntax before the type check, arity before both.
                (
                    vec!["ZRANK", "z", "a", "WITHSCORES"],
                    err("ERR syntax error"),
                ),
                (vec!["ZRANK", "str", "a", "BAD"], err("ERR syntax error")),
                (
                    vec!["ZREVRANK", "nokey", "a", "BAD"],
                    err("ERR syntax error"),
                ),
                (
                    vec!["ZRANK", "z", "a", "WITHSCORE", "WITHSCORE"],
                    err("ERR wrong number of arguments for 'zrank' command"),
                ),
                (
                    vec!["ZREVRANK", "z", "a", "WITHSCORE", "x"],
                    err("ERR wrong number of arguments for 'zrevrank' command"),
                ),
                (
                    vec!["ZRANK", "z"],
                    err("ERR wrong number of arguments for 'zrank' command"),
                ),
                (
                    vec!["ZRANK", "str", "a", "WITHSCORE"],
                    err("WRONGTYPE Operation against a key holding the wrong kind of value"),
                ),
                (
                    vec!["ZREVRANK", "str", "a"],
                    err("WRONGTYPE Operation against a key holding the wrong kind of value"),
                ),
            ],
        );
    }
}

#[test]
fn zrank_and_zrevrank_rows_say_arity_minus_three() {
    let s = start_server();
    let mut r = s.raw();
    for name in ["zrank", "zrevrank"] {
        let reply = r.cmd_str(&["COMMAND", "INFO", name]);
        let V::Agg(_, Some(rows)) = parse(&reply, 0).0 else {
            panic!("bad reply {}", escape(&reply))
        };
        let V::Agg(_, Some(row)) = &rows[0] else {
            panic!("no row for {name}")
        };
        assert_eq!(row[1], V::Line(b':', b"-3".to_vec()), "{name}");
    }
}

// ---- HSCAN NOVALUES ---------------------------------------------------------------------

#[test]
fn hscan_novalues_returns_only_fields() {
    let s = start_server();
    for proto in [2u8, 3] {
        let mut r = conn(s.port, proto);
        r.cmd_str(&["FLUSHALL"]);
        r.cmd_str(&["HSET", "h", "a", "1", "b", "2", "ab", "3"]);
        r.cmd_str(&["SADD", "s", "x"]);
        r.cmd_str(&["ZADD", "z", "1", "x"]);
        r.cmd_str(&["SET", "str", "x"]);
        let scan = |items: &[&str]| {
            arr(&[
                bulk("0"),
                arr(&items.iter().map(|i| bulk(i)).collect::<Vec<_>>()),
            ])
        };
        let only_hscan = err("ERR NOVALUES option can only be used in HSCAN");
        expect_replies(
            &mut r,
            &[
                (vec!["HSCAN", "h", "0", "NOVALUES"], scan(&["a", "b", "ab"])),
                (vec!["HSCAN", "h", "0", "novalues"], scan(&["a", "b", "ab"])),
                (
                    vec!["HSCAN", "h", "0", "MATCH", "a*", "NOVALUES"],
                    scan(&["a", "ab"]),
                ),
                (
                    vec!["HSCAN", "h", "0", "NOVALUES", "COUNT", "1", "MATCH", "b"],
                    scan(&["b"]),
                ),
                (
                    vec!["HSCAN", "h", "0", "NOVALUES", "NOVALUES"],
                    scan(&["a", "b", "ab"]),
                ),
                (
                    vec!["HSCAN", "h", "0"],
                    scan(&["a", "1", "b", "2", "ab", "3"]),
                ),
                // A missing key answers before the options are read.
                (vec!["HSCAN", "nokey", "0", "NOVALUES"], scan(&[])),
                (vec!["SSCAN", "nokey", "0", "NOVALUES"], scan(&[])),
                (vec!["ZSCAN", "nokey", "0", "NOVALUES"], scan(&[])),
                (vec!["ZSCAN", "nokey", "0", "BAD"], scan(&[])),
                // Anywhere but HSCAN it is an error.
                (vec!["SSCAN", "s", "0", "NOVALUES"], only_hscan.clone()),
                (vec!["ZSCAN", "z", "0", "NOVALUES"], only_hscan.clone()),
                (vec!["SCAN", "0", "NOVALUES"], only_hscan.clone()),
                (
                    vec!["SCAN", "0", "COUNT", "5", "NOVALUES"],
                    only_hscan.clone(),
                ),
                // Other errors as before.
                (
                    vec!["HSCAN", "h", "0", "NOVALUES", "BAD"],
                    err("ERR syntax error"),
                ),
                (
                    vec!["HSCAN", "h", "0", "NOVALUES", "COUNT"],
                    err("ERR syntax error"),
                ),
                (
                    vec!["HSCAN", "h", "x", "NOVALUES"],
                    err("ERR invalid cursor"),
                ),
                (
                    vec!["HSCAN", "str", "0", "NOVALUES"],
                    err("WRONGTYPE Operation against a key holding the wrong kind of value"),
                ),
                (
                    vec!["ZSCAN", "str", "0", "NOVALUES"],
                    err("WRONGTYPE Operation against a key holding the wrong kind of value"),
                ),
            ],
        );
    }
}

#[test]
fn hscan_novalues_walks_a_large_hash_to_the_end() {
    let s = start_server();
    let mut r = s.raw();
    let h = many(&["HSET", "h"], 1000, |i| {
        vec![format!("f{i}"), format!("v{i}")]
    });
    r.cmd_str(&strs(&h));
    let mut seen = std::collections::HashSet::new();
    let mut cursor = "0".to_string();
    loop {
        let reply = r.cmd_str(&["HSCAN", "h", &cursor, "COUNT", "100", "NOVALUES"]);
        let V::Agg(_, Some(parts)) = parse(&reply, 0).0 else {
            panic!("bad reply")
        };
        let (V::Bulk(Some(next)), V::Agg(_, Some(items))) = (&parts[0], &parts[1]) else {
            panic!("bad reply")
        };
        for item in items {
            let V::Bulk(Some(f)) = item else {
                panic!("a field is a bulk")
            };
            assert!(f.starts_with(b"f"), "only fields: {}", escape(f));
            seen.insert(f.clone());
        }
        cursor = String::from_utf8(next.clone()).expect("cursor");
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(seen.len(), 1000);
}

// ---- AGGREGATE COUNT ----------------------------------------------------------------------

#[test]
fn aggregate_count_counts_the_inputs_holding_each_member() {
    let s = start_server();
    for proto in [2u8, 3] {
        let resp3 = proto == 3;
        let mut r = conn(s.port, proto);
        r.cmd_str(&["FLUSHALL"]);
        r.cmd_str(&["ZADD", "s1", "1", "foo", "1", "bar"]);
        r.cmd_str(&["ZADD", "s2", "2", "foo", "2", "bar"]);
        r.cmd_str(&["ZADD", "s3", "3", "foo"]);
        r.cmd_str(&["SADD", "plain", "foo", "baz"]);
        r.cmd_str(&["SET", "str", "x"]);
        let score = |t: &str| {
            if resp3 {
                format!(",{t}\r\n").into_bytes()
            } else {
                bulk(t)
            }
        };
        // WITHSCORES: flat pairs in RESP2, [member, score] pairs in RESP3.
        let with = |pairs: &[(&str, &str)]| {
            if resp3 {
                arr(&pairs
                    .iter()
                    .map(|(m, s)| arr(&[bulk(m), score(s)]))
                    .collect::<Vec<_>>())
            } else {
                arr(&pairs
                    .iter()
                    .flat_map(|(m, s)| [bulk(m), bulk(s)])
                    .collect::<Vec<_>>())
            }
        };
        let stored = |pairs: &[(&str, &str)]| {
            arr(&pairs
                .iter()
                .flat_map(|(m, s)| [bulk(m), bulk(s)])
                .collect::<Vec<_>>())
        };
        expect_replies(
            &mut r,
            &[
                (
                    vec![
                        "ZUNIONSTORE",
                        "out",
                        "3",
                        "s1",
                        "s2",
                        "s3",
                        "AGGREGATE",
                        "COUNT",
                    ],
                    int(2),
                ),
                (
                    vec!["ZRANGE", "out", "0", "-1", "WITHSCORES"],
                    if resp3 {
                        with(&[("bar", "2"), ("foo", "3")])
                    } else {
                        stored(&[("bar", "2"), ("foo", "3")])
                    },
                ),
                (
                    vec![
                        "ZUNION",
                        "3",
                        "s1",
                        "s2",
                        "s3",
                        "aggregate",
                        "count",
                        "WITHSCORES",
                    ],
                    with(&[("bar", "2"), ("foo", "3")]),
                ),
                (
                    vec![
                        "ZINTER",
                        "3",
                        "s1",
                        "s2",
                        "s3",
                        "AGGREGATE",
                        "COUNT",
                        "WITHSCORES",
                    ],
                    with(&[("foo", "3")]),
                ),
                (
                    vec!["ZINTERSTORE", "out", "2", "s1", "s2", "AGGREGATE", "COUNT"],
                    int(2),
                ),
                (vec!["ZSCORE", "out", "foo"], score("2")),
                // Weights are what each input adds, whatever the scores.
                (
                    vec![
                        "ZUNION",
                        "3",
                        "s1",
                        "s2",
                        "s3",
                        "WEIGHTS",
                        "10",
                        "1",
                        "0.5",
                        "AGGREGATE",
                        "COUNT",
                        "WITHSCORES",
                    ],
                    with(&[("bar", "11"), ("foo", "11.5")]),
                ),
                // Plain sets count like sorted sets.
                (
                    vec![
                        "ZUNION",
                        "2",
                        "s3",
                        "plain",
                        "AGGREGATE",
                        "COUNT",
                        "WITHSCORES",
                    ],
                    with(&[("baz", "1"), ("foo", "2")]),
                ),
                // inf + -inf is NaN, which becomes 0 as a NaN sum does.
                (
                    vec![
                        "ZUNION",
                        "2",
                        "s1",
                        "s2",
                        "WEIGHTS",
                        "inf",
                        "-inf",
                        "AGGREGATE",
                        "COUNT",
                        "WITHSCORES",
                    ],
                    with(&[("bar", "0"), ("foo", "0")]),
                ),
                (
                    vec![
                        "ZUNION",
                        "1",
                        "s1",
                        "WEIGHTS",
                        "-inf",
                        "AGGREGATE",
                        "COUNT",
                        "WITHSCORES",
                    ],
                    with(&[("bar", "-inf"), ("foo", "-inf")]),
                ),
                // The last AGGREGATE wins.
                (
                    vec![
                        "ZUNION",
                        "2",
                        "s1",
                        "s3",
                        "AGGREGATE",
                        "COUNT",
                        "AGGREGATE",
                        "MAX",
                        "WITHSCORES",
                    ],
                    with(&[("bar", "1"), ("foo", "3")]),
                ),
                (
                    vec!["ZUNION", "1", "s1", "AGGREGATE", "AVG"],
                    err("ERR syntax error"),
                ),
                (
                    vec!["ZUNION", "1", "s1", "AGGREGATE"],
                    err("ERR syntax error"),
                ),
                // Not an option of ZDIFF or ZINTERCARD.
                (
                    vec!["ZDIFF", "1", "s1", "AGGREGATE", "COUNT"],
                    err("ERR syntax error"),
                ),
                (
                    vec!["ZINTERCARD", "1", "s1", "AGGREGATE", "COUNT"],
                    err("ERR syntax error"),
                ),
                (
                    vec!["ZUNION", "2", "s1", "str", "AGGREGATE", "COUNT"],
                    err("WRONGTYPE Operation against a key holding the wrong kind of value"),
                ),
            ],
        );
    }
}

// ---- SUNIONCARD / SDIFFCARD ---------------------------------------------------------------

#[test]
fn sunioncard_and_sdiffcard_count_without_building_the_result() {
    let s = start_server();
    let big = many(&["SADD", "big"], 1000, |i| vec![i.to_string()]);
    for proto in [2u8, 3] {
        let mut r = conn(s.port, proto);
        r.cmd_str(&["FLUSHALL"]);
        r.cmd_str(&["SADD", "sports", "football", "tennis", "golf"]);
        r.cmd_str(&["SADD", "news", "politics", "golf"]);
        r.cmd_str(&["SADD", "all", "alice", "bob", "carol", "dave", "erin"]);
        r.cmd_str(&["SADD", "optout", "carol", "dave"]);
        r.cmd_str(&["SADD", "bounced", "erin", "frank"]);
        r.cmd_str(&["SADD", "ints", "1", "2", "3", "1000"]);
        r.cmd_str(&strs(&big));
        r.cmd_str(&["SET", "str", "x"]);
        r.cmd_str(&["ZADD", "z", "1", "golf"]);
        let wrongtype = err("WRONGTYPE Operation against a key holding the wrong kind of value");
        expect_replies(
            &mut r,
            &[
                (vec!["SUNIONCARD", "2", "sports", "news"], int(4)),
                (
                    vec!["SUNIONCARD", "2", "sports", "news", "LIMIT", "3"],
                    int(3),
                ),
                (
                    vec!["SUNIONCARD", "2", "sports", "news", "LIMIT", "0"],
                    int(4),
                ),
                (
                    vec!["SUNIONCARD", "2", "sports", "news", "LIMIT", "100"],
                    int(4),
                ),
                (vec!["SUNIONCARD", "2", "sports", "news", "APPROX"], int(4)),
                (
                    vec!["SUNIONCARD", "2", "sports", "news", "approx", "limit", "2"],
                    int(2),
                ),
                (
                    vec!["SUNIONCARD", "2", "sports", "news", "LIMIT", "2", "APPROX"],
                    int(2),
                ),
                (vec!["SUNIONCARD", "1", "sports"], int(3)),
                (vec!["SUNIONCARD", "2", "sports", "sports"], int(3)),
                (vec!["SUNIONCARD", "2", "nokey", "news"], int(2)),
                (vec!["SUNIONCARD", "2", "nokey", "nokey2"], int(0)),
                (vec!["SUNIONCARD", "2", "ints", "big"], int(1001)),
                (vec!["SUNIONCARD", "3", "ints", "big", "news"], int(1003)),
                (vec!["SDIFFCARD", "3", "all", "optout", "bounced"], int(2)),
                (
                    vec!["SDIFFCARD", "3", "all", "optout", "bounced", "LIMIT", "1"],
                    int(1),
                ),
                (
                    vec!["SDIFFCARD", "3", "all", "optout", "bounced", "LIMIT", "0"],
                    int(2),
                ),
                (vec!["SDIFFCARD", "1", "all"], int(5)),
                (vec!["SDIFFCARD", "2", "all", "all"], int(0)),
                (vec!["SDIFFCARD", "2", "all", "nokey"], int(5)),
                (vec!["SDIFFCARD", "2", "nokey", "all"], int(0)),
                (vec!["SDIFFCARD", "2", "big", "ints"], int(997)),
                (vec!["SDIFFCARD", "2", "ints", "big"], int(1)),
                // numkeys and LIMIT errors as SINTERCARD's.
                (
                    vec!["SUNIONCARD", "0", "a"],
                    err("ERR numkeys should be greater than 0"),
                ),
                (
                    vec!["SDIFFCARD", "-1", "a"],
                    err("ERR numkeys should be greater than 0"),
                ),
                (
                    vec!["SUNIONCARD", "x", "a"],
                    err("ERR numkeys should be greater than 0"),
                ),
                (
                    vec!["SUNIONCARD", "3", "a", "b"],
                    err("ERR Number of keys can't be greater than number of args"),
                ),
                (
                    vec!["SDIFFCARD", "2", "a"],
                    err("ERR Number of keys can't be greater than number of args"),
                ),
                (
                    vec!["SUNIONCARD", "1", "a", "LIMIT", "-1"],
                    err("ERR LIMIT can't be negative"),
                ),
                (
                    vec!["SDIFFCARD", "1", "a", "LIMIT", "x"],
                    err("ERR LIMIT can't be negative"),
                ),
                (
                    vec!["SUNIONCARD", "1", "a", "LIMIT"],
                    err("ERR syntax error"),
                ),
                (vec!["SUNIONCARD", "1", "a", "BAD"], err("ERR syntax error")),
                // APPROX is SUNIONCARD's alone.
                (
                    vec!["SDIFFCARD", "1", "a", "APPROX"],
                    err("ERR syntax error"),
                ),
                (vec!["SUNIONCARD", "2", "news", "str"], wrongtype.clone()),
                (vec!["SUNIONCARD", "1", "z"], wrongtype.clone()),
                (vec!["SDIFFCARD", "2", "all", "str"], wrongtype.clone()),
                (vec!["SDIFFCARD", "2", "nokey", "z"], wrongtype.clone()),
                (
                    vec!["SUNIONCARD", "1"],
                    err("ERR wrong number of arguments for 'sunioncard' command"),
                ),
                (
                    vec!["SDIFFCARD"],
                    err("ERR wrong number of arguments for 'sdiffcard' command"),
                ),
            ],
        );
    }
}

#[test]
fn the_card_rows_are_redis_8_10s() {
    let s = start_server();
    let mut r = s.raw();
    // Rows shaped like SINTERCARD's (arity -3, readonly + movablekeys, @read @set,
    // the keys found after numkeys), with their own names.
    let reply = r.cmd_str(&["COMMAND", "INFO", "sintercard", "sunioncard", "sdiffcard"]);
    let V::Agg(_, Some(rows)) = parse(&reply, 0).0 else {
        panic!("bad reply {}", escape(&reply))
    };
    let without_name = |v: &V| match v {
        V::Agg(t, Some(items)) => V::Agg(*t, Some(items[1..].to_vec())),
        other => panic!("no row: {other:?}"),
    };
    assert_eq!(without_name(&rows[1]), without_name(&rows[0]));
    assert_eq!(without_name(&rows[2]), without_name(&rows[0]));
    let V::Agg(_, Some(row)) = &rows[1] else {
        panic!("no row")
    };
    assert_eq!(row[0], V::Bulk(Some(b"sunioncard".to_vec())));
    assert_eq!(row[1], V::Line(b':', b"-3".to_vec()));
    assert_eq!(
        r.cmd_str(&[
            "COMMAND",
            "GETKEYS",
            "SUNIONCARD",
            "2",
            "a",
            "b",
            "LIMIT",
            "1"
        ]),
        arr(&[bulk("a"), bulk("b")])
    );
    assert_eq!(
        r.cmd_str(&["COMMAND", "GETKEYS", "SDIFFCARD", "1", "a"]),
        arr(&[bulk("a")])
    );
    let docs = r.cmd_str(&["COMMAND", "DOCS", "sunioncard", "sdiffcard"]);
    let text = String::from_utf8_lossy(&docs);
    assert!(text.contains("8.10.0"), "{text}");
    assert!(
        text.contains("Returns the number of members of the union of multiple sets."),
        "{text}"
    );
    assert!(
        text.contains(
            "Returns the number of members of the difference between the first set and all successive sets."
        ),
        "{text}"
    );
}

// ---- LMOVEM / BLMOVEM (8.10) ----------------------------------------------------------

/// The null array a RESP2 / RESP3 connection sees when LMOVEM moved nothing.
fn null_array(proto: u8) -> Vec<u8> {
    if proto == 3 {
        b"_\r\n".to_vec()
    } else {
        b"*-1\r\n".to_vec()
    }
}

fn bulks(items: &[&str]) -> Vec<u8> {
    arr(&items.iter().map(|i| bulk(i)).collect::<Vec<_>>())
}

#[test]
fn lmovem_moves_a_block_in_both_orders() {
    let s = start_server();
    for proto in [2, 3] {
        let mut r = conn(s.port, proto);
        let nil = null_array(proto);
        expect_replies(
            &mut r,
            &[
                (vec!["FLUSHALL"], b"+OK\r\n".to_vec()),
                // No block: one element, as an array (Redis's list-4.tcl).
                (vec!["RPUSH", "src", "a", "b", "c"], int(3)),
                (vec!["LMOVEM", "src", "dst", "left", "right"], bulks(&["a"])),
                (vec!["LRANGE", "dst", "0", "-1"], bulks(&["a"])),
                (vec!["DEL", "src", "dst"], int(2)),
                // OBO pushes each as popped: reversed at the head; BULK keeps the order.
                (vec!["RPUSH", "src", "1", "2", "3", "4", "5"], int(5)),
                (
                    vec!["LMOVEM", "src", "dst", "LEFT", "LEFT", "COUNT", "3", "OBO"],
                    bulks(&["3", "2", "1"]),
                ),
                (vec!["LRANGE", "dst", "0", "-1"], bulks(&["3", "2", "1"])),
                (vec!["LRANGE", "src", "0", "-1"], bulks(&["4", "5"])),
                (vec!["DEL", "src", "dst"], int(2)),
                (vec!["RPUSH", "src", "1", "2", "3", "4", "5"], int(5)),
                (
                    vec!["LMOVEM", "src", "dst", "left", "left", "count", "3", "bulk"],
                    bulks(&["1", "2", "3"]),
                ),
                (vec!["LRANGE", "dst", "0", "-1"], bulks(&["1", "2", "3"])),
                (vec!["DEL", "src", "dst"], int(2)),
                // From the tail: pop order 5 4 3.
                (vec!["RPUSH", "src", "x", "1", "2", "3", "4", "5"], int(6)),
                (
                    vec![
                        "LMOVEM", "src", "dst", "right", "right", "count", "3", "obo",
                    ],
                    bulks(&["5", "4", "3"]),
                ),
                (vec!["LRANGE", "src", "0", "-1"], bulks(&["x", "1", "2"])),
                (vec!["DEL", "src", "dst"], int(2)),
                (vec!["RPUSH", "src", "x", "1", "2", "3", "4", "5"], int(6)),
                (
                    vec![
                        "LMOVEM", "src", "dst", "right", "right", "count", "3", "bulk",
                    ],
                    bulks(&["3", "4", "5"]),
                ),
                (vec!["LRANGE", "dst", "0", "-1"], bulks(&["3", "4", "5"])),
                (vec!["DEL", "src", "dst"], int(2)),
                // COUNT moves what there is and deletes the emptied source.
                (vec!["RPUSH", "src", "a", "b", "c"], int(3)),
                (
                    vec![
                        "LMOVEM", "src", "dst", "left", "right", "count", "100", "bulk",
                    ],
                    bulks(&["a", "b", "c"]),
                ),
                (vec!["EXISTS", "src"], int(0)),
                // EXACTLY: all or nothing; the destination is not created.
                (vec!["RPUSH", "s2", "a", "b"], int(2)),
                (
                    vec![
                        "LMOVEM", "s2", "d2", "left", "right", "exactly", "3", "bulk",
                    ],
                    nil.clone(),
                ),
                (vec!["EXISTS", "d2"], int(0)),
                (vec!["LRANGE", "s2", "0", "-1"], bulks(&["a", "b"])),
                (
                    vec![
                        "LMOVEM", "s2", "dst", "left", "right", "exactly", "2", "obo",
                    ],
                    bulks(&["a", "b"]),
                ),
                // Into an existing destination.
                (
                    vec!["LRANGE", "dst", "0", "-1"],
                    bulks(&["a", "b", "c", "a", "b"]),
                ),
                // Onto itself: a rotation.
                (vec!["RPUSH", "k", "1", "2", "3", "4", "5"], int(5)),
                (
                    vec!["LMOVEM", "k", "k", "left", "right", "count", "2", "bulk"],
                    bulks(&["1", "2"]),
                ),
                (
                    vec!["LRANGE", "k", "0", "-1"],
                    bulks(&["3", "4", "5", "1", "2"]),
                ),
                (
                    vec!["LMOVEM", "k", "k", "left", "right", "count", "5", "bulk"],
                    bulks(&["3", "4", "5", "1", "2"]),
                ),
                (vec!["EXISTS", "k"], int(1)),
                // Missing source: a null array, nothing created.
                (vec!["LMOVEM", "nokey", "d3", "left", "right"], nil.clone()),
                (
                    vec![
                        "LMOVEM", "nokey", "d3", "left", "right", "count", "5", "bulk",
                    ],
                    nil.clone(),
                ),
                (vec!["EXISTS", "d3"], int(0)),
            ],
        );
    }
}

#[test]
fn lmovem_errors_and_wrong_type() {
    let s = start_server();
    for proto in [2, 3] {
        let mut r = conn(s.port, proto);
        let count = err("ERR count should be greater than 0");
        expect_replies(
            &mut r,
            &[
                (vec!["FLUSHALL"], b"+OK\r\n".to_vec()),
                (vec!["RPUSH", "src", "a", "b", "c"], int(3)),
                (
                    vec![
                        "LMOVEM", "src", "dst", "left", "right", "count", "0", "bulk",
                    ],
                    count.clone(),
                ),
                (
                    vec![
                        "LMOVEM", "src", "dst", "left", "right", "exactly", "0", "bulk",
                    ],
                    count.clone(),
                ),
                (
                    vec![
                        "LMOVEM", "src", "dst", "left", "right", "count", "-1", "bulk",
                    ],
                    count.clone(),
                ),
                (
                    vec![
                        "LMOVEM", "src", "dst", "left", "right", "count", "a", "bulk",
                    ],
                    count.clone(),
                ),
                (
                    vec!["LMOVEM", "src", "dst", "left"],
                    err("ERR wrong number of arguments for 'lmovem' command"),
                ),
                (
                    vec!["BLMOVEM", "src", "dst", "left", "right"],
                    err("ERR wrong number of arguments for 'blmovem' command"),
                ),
                // The ordering word is required with COUNT/EXACTLY.
                (
                    vec!["LMOVEM", "src", "dst", "left", "right", "count", "2"],
                    err("ERR syntax error"),
                ),
                (
                    vec![
                        "LMOVEM", "src", "dst", "left", "right", "count", "2", "obo", "x",
                    ],
                    err("ERR syntax error"),
                ),
                (
                    vec!["LMOVEM", "src", "dst", "left", "right", "bad", "2", "obo"],
                    err("ERR syntax error"),
                ),
                (
                    vec![
                        "LMOVEM", "src", "dst", "left", "right", "count", "2", "badorder",
                    ],
                    err("ERR syntax error"),
                ),
                (
                    vec![
                        "LMOVEM", "src", "dst", "badwhere", "right", "count", "2", "obo",
                    ],
                    err("ERR syntax error"),
                ),
                (
                    vec![
                        "LMOVEM", "src", "dst", "left", "badwhere", "count", "2", "obo",
                    ],
                    err("ERR syntax error"),
                ),
                (
                    vec!["BLMOVEM", "src", "dst", "left", "right", "x"],
                    err("ERR timeout is not a float or out of range"),
                ),
                (vec!["SET", "str", "foo"], b"+OK\r\n".to_vec()),
                (
                    vec!["LMOVEM", "str", "dst", "left", "right"],
                    err("WRONGTYPE Operation against a key holding the wrong kind of value"),
                ),
                (
                    vec![
                        "LMOVEM", "src", "str", "left", "right", "count", "2", "bulk",
                    ],
                    err("WRONGTYPE Operation against a key holding the wrong kind of value"),
                ),
                // Nothing left the source.
                (vec!["LRANGE", "src", "0", "-1"], bulks(&["a", "b", "c"])),
                // Inside MULTI BLMOVEM does not block: a null array.
                (vec!["MULTI"], b"+OK\r\n".to_vec()),
                (
                    vec![
                        "BLMOVEM", "none", "dst", "left", "right", "0", "exactly", "3", "bulk",
                    ],
                    b"+QUEUED\r\n".to_vec(),
                ),
                (vec!["EXEC"], arr(&[null_array(proto)])),
            ],
        );
    }
}

#[test]
fn lmovem_and_blmovem_rows_are_redis_8_10s() {
    let s = start_server();
    let mut r = s.raw();
    let reply = r.cmd_str(&["COMMAND", "INFO", "lmovem", "blmovem"]);
    let text = escape(&reply);
    assert!(text.contains("$6\\r\\nlmovem\\r\\n:-5\\r\\n*2\\r\\n+write\\r\\n+denyoom\\r\\n:1\\r\\n:2\\r\\n:1\\r\\n"), "{text}");
    assert!(text.contains("$7\\r\\nblmovem\\r\\n:-6\\r\\n*3\\r\\n+write\\r\\n+denyoom\\r\\n+blocking\\r\\n:1\\r\\n:2\\r\\n:1\\r\\n"), "{text}");
    assert_eq!(
        r.cmd_str(&["COMMAND", "GETKEYSANDFLAGS", "LMOVEM", "a", "b", "LEFT", "RIGHT"]),
        b"*2\r\n*2\r\n$1\r\na\r\n*3\r\n+RW\r\n+access\r\n+delete\r\n*2\r\n$1\r\nb\r\n*2\r\n+RW\r\n+insert\r\n".to_vec()
    );
}

#[test]
fn blmovem_waits_for_enough_elements() {
    let s = start_server();
    let mut r = s.raw();
    let mut waiter = s.raw();
    // COUNT: served by the first push.
    send(
        &mut waiter,
        &[
            "BLMOVEM", "src", "dst", "left", "right", "0", "count", "5", "bulk",
        ],
    );
    wait_blocked(&mut r, 1);
    r.cmd_str(&["RPUSH", "src", "a", "b"]);
    assert_eq!(waiter.read_reply(), bulks(&["a", "b"]));
    // EXACTLY: stays blocked until the source is long enough, whatever grows it.
    send(
        &mut waiter,
        &[
            "BLMOVEM", "src", "dst", "left", "right", "0", "exactly", "3", "bulk",
        ],
    );
    wait_blocked(&mut r, 1);
    r.cmd_str(&["RPUSH", "src", "1", "2"]);
    wait_blocked(&mut r, 1);
    assert_eq!(r.cmd_str(&["LLEN", "src"]), int(2));
    r.cmd_str(&["RPUSH", "src", "3"]);
    assert_eq!(waiter.read_reply(), bulks(&["1", "2", "3"]));
    assert_eq!(r.cmd_str(&["EXISTS", "src"]), int(0));
    // LINSERT and LMOVE into the source wake it too.
    r.cmd_str(&["RPUSH", "src", "1", "2"]);
    send(
        &mut waiter,
        &[
            "BLMOVEM", "src", "d2", "left", "right", "0", "exactly", "3", "bulk",
        ],
    );
    wait_blocked(&mut r, 1);
    r.cmd_str(&["LINSERT", "src", "BEFORE", "1", "0"]);
    assert_eq!(waiter.read_reply(), bulks(&["0", "1", "2"]));
    r.cmd_str(&["RPUSH", "src", "1", "2"]);
    r.cmd_str(&["RPUSH", "feed", "9"]);
    send(
        &mut waiter,
        &[
            "BLMOVEM", "src", "d3", "left", "right", "0", "exactly", "3", "obo",
        ],
    );
    wait_blocked(&mut r, 1);
    r.cmd_str(&["LMOVE", "feed", "src", "left", "right"]);
    assert_eq!(waiter.read_reply(), bulks(&["1", "2", "9"]));
    // A timeout answers the null array.
    send(
        &mut waiter,
        &[
            "BLMOVEM", "src", "dst", "left", "right", "0.05", "exactly", "3", "bulk",
        ],
    );
    assert_eq!(waiter.read_reply(), b"*-1\r\n".to_vec());
}

#[test]
fn lmovem_events_and_log() {
    let s = start_server();
    let cmds: &[&[&str]] = &[
        &["RPUSH", "src", "a", "b", "c"],
        &[
            "LMOVEM", "src", "dst", "LEFT", "RIGHT", "COUNT", "2", "BULK",
        ],
        &["LMOVEM", "src", "dst", "RIGHT", "LEFT"],
        // Nothing moved: no events.
        &["LMOVEM", "src", "dst", "LEFT", "RIGHT"],
    ];
    let got = keyevents(s.port, "KEA", cmds);
    let want: Vec<String> = [
        "rpush src",
        "rpush dst",
        "lpop src",
        "lpush dst",
        "rpop src",
        "del src",
    ]
    .iter()
    .map(|e| format!("__keyevent@0__:{e}"))
    .collect();
    assert_eq!(got, want);

    let dir = tempfile::tempdir().expect("tempdir");
    {
        let node = Node::start(dir.path(), &["--appendonly", "yes", "--save", ""]);
        let mut c = node.raw();
        let mut waiter = node.raw();
        c.cmd_str(&["RPUSH", "src", "1", "2", "3", "4"]);
        c.cmd_str(&[
            "LMOVEM", "src", "dst", "left", "right", "count", "2", "bulk",
        ]);
        c.cmd_str(&[
            "BLMOVEM", "src", "dst", "left", "right", "0", "count", "5", "obo",
        ]);
        send(&mut waiter, &["BLMOVEM", "s2", "d2", "right", "left", "0"]);
        wait_blocked(&mut c, 1);
        c.cmd_str(&["RPUSH", "s2", "x"]);
        assert_eq!(waiter.read_reply(), bulks(&["x"]));
        node.stop();
    }
    let bytes = dir_bytes(dir.path());
    // LMOVEM as sent; BLMOVEM as LMOVEM EXACTLY <moved> with its ordering.
    assert_eq!(count(&bytes, b"$6\r\nLMOVEM\r\n"), 3);
    assert_eq!(
        count(&bytes, b"$5\r\ncount\r\n$1\r\n2\r\n$4\r\nbulk\r\n"),
        1
    );
    assert_eq!(
        count(&bytes, b"$7\r\nEXACTLY\r\n$1\r\n2\r\n$3\r\nOBO\r\n"),
        1
    );
    assert_eq!(
        count(&bytes, b"$7\r\nEXACTLY\r\n$1\r\n1\r\n$4\r\nBULK\r\n"),
        1
    );
    assert_eq!(count(&bytes, b"BLMOVEM"), 0);
    let node = Node::start(dir.path(), &["--appendonly", "yes", "--save", ""]);
    let mut c = node.raw();
    assert_eq!(
        c.cmd_str(&["LRANGE", "dst", "0", "-1"]),
        bulks(&["1", "2", "3", "4"])
    );
    assert_eq!(c.cmd_str(&["LRANGE", "d2", "0", "-1"]), bulks(&["x"]));
    assert_eq!(c.cmd_str(&["EXISTS", "src", "s2"]), int(0));
}

// ---- HGETDEL (8.0) --------------------------------------------------------------------

#[test]
fn hgetdel_returns_and_deletes() {
    let s = start_server();
    for proto in [2, 3] {
        let mut r = conn(s.port, proto);
        let null = common::reply::null(proto == 3);
        let wrongtype = err("WRONGTYPE Operation against a key holding the wrong kind of value");
        expect_replies(
            &mut r,
            &[
                (vec!["FLUSHALL"], b"+OK\r\n".to_vec()),
                (vec!["HSET", "h", "a", "1", "b", "2", "c", "3"], int(3)),
                (
                    vec!["HGETDEL", "h", "FIELDS", "3", "a", "x", "a"],
                    arr(&[bulk("1"), null.clone(), null.clone()]),
                ),
                (vec!["HLEN", "h"], int(2)),
                (
                    vec!["HGETDEL", "h", "fields", "2", "b", "c"],
                    arr(&[bulk("2"), bulk("3")]),
                ),
                (vec!["EXISTS", "h"], int(0)),
                (
                    vec!["HGETDEL", "h", "FIELDS", "2", "a", "b"],
                    arr(&[null.clone(), null.clone()]),
                ),
                (
                    vec!["HGETDEL", "h", "FIELDS", "1"],
                    err("ERR wrong number of arguments for 'hgetdel' command"),
                ),
                (
                    vec!["HGETDEL", "h", "FIELD", "1", "a"],
                    err("ERR Mandatory argument FIELDS is missing or not at the right position"),
                ),
                (
                    vec!["HGETDEL", "h", "FIELDS", "0", "a"],
                    err("ERR Number of fields must be a positive integer"),
                ),
                (
                    vec!["HGETDEL", "h", "FIELDS", "x", "a"],
                    err("ERR Number of fields must be a positive integer"),
                ),
                (
                    vec!["HGETDEL", "h", "FIELDS", "2", "a"],
                    err("ERR The `numfields` parameter must match the number of arguments"),
                ),
                (vec!["SET", "str", "v"], b"+OK\r\n".to_vec()),
                // The type is checked first.
                (vec!["HGETDEL", "str", "FIELD", "1", "a"], wrongtype.clone()),
                (vec!["HGETDEL", "str", "FIELDS", "1", "a"], wrongtype),
            ],
        );
    }
}

#[test]
fn hgetdel_events_and_log() {
    let s = start_server();
    let cmds: &[&[&str]] = &[
        &["HSET", "h", "a", "1", "b", "2"],
        &["HGETDEL", "h", "FIELDS", "1", "nofield"],
        &["HGETDEL", "h", "FIELDS", "1", "a"],
        &["HGETDEL", "h", "FIELDS", "2", "b", "a"],
    ];
    let got = keyevents(s.port, "KEA", cmds);
    let want: Vec<String> = ["hset h", "hdel h", "hdel h", "del h"]
        .iter()
        .map(|e| format!("__keyevent@0__:{e}"))
        .collect();
    assert_eq!(got, want);

    let dir = tempfile::tempdir().expect("tempdir");
    {
        let node = Node::start(dir.path(), &["--appendonly", "yes", "--save", ""]);
        let mut c = node.raw();
        c.cmd_str(&["HSET", "h", "a", "1", "b", "2", "c", "3"]);
        c.cmd_str(&["HGETDEL", "h", "FIELDS", "2", "a", "zz"]);
        c.cmd_str(&["HGETDEL", "h", "FIELDS", "1", "zz"]);
        node.stop();
    }
    let bytes = dir_bytes(dir.path());
    // Logged as HDEL key field..., only when it deleted.
    assert_eq!(count(&bytes, b"HGETDEL"), 0);
    assert_eq!(
        count(
            &bytes,
            b"*4\r\n$4\r\nHDEL\r\n$1\r\nh\r\n$1\r\na\r\n$2\r\nzz\r\n"
        ),
        1
    );
    let node = Node::start(dir.path(), &["--appendonly", "yes", "--save", ""]);
    let mut c = node.raw();
    assert_eq!(c.cmd_str(&["HLEN", "h"]), int(2));
}

// ---- COMMAND GETKEYSANDFLAGS (7.0) ----------------------------------------------------

#[test]
fn command_getkeysandflags_matches_redis() {
    let (s, r) = (start_server(), redis_server());
    let cases = exact(&[
        &["COMMAND", "GETKEYSANDFLAGS", "SET", "a", "b"],
        &[
            "COMMAND",
            "GETKEYSANDFLAGS",
            "SET",
            "a",
            "b",
            "EX",
            "10",
            "get",
        ],
        &["COMMAND", "GETKEYSANDFLAGS", "SET", "a", "b", "NX"],
        &["COMMAND", "GETKEYSANDFLAGS", "GET", "a"],
        &["COMMAND", "GETKEYSANDFLAGS", "MSET", "a", "1", "b", "2"],
        &["COMMAND", "GETKEYSANDFLAGS", "DEL", "a", "b", "c"],
        &[
            "COMMAND",
            "GETKEYSANDFLAGS",
            "LMOVE",
            "a",
            "b",
            "LEFT",
            "RIGHT",
        ],
        &["COMMAND", "GETKEYSANDFLAGS", "RPOPLPUSH", "a", "b"],
        &["COMMAND", "GETKEYSANDFLAGS", "COPY", "a", "b"],
        &["COMMAND", "GETKEYSANDFLAGS", "RENAME", "a", "b"],
        &["COMMAND", "GETKEYSANDFLAGS", "SMOVE", "a", "b", "m"],
        &["COMMAND", "GETKEYSANDFLAGS", "SDIFFSTORE", "d", "a", "b"],
        &["COMMAND", "GETKEYSANDFLAGS", "HSET", "h", "f", "v"],
        &["COMMAND", "GETKEYSANDFLAGS", "LPUSH", "l", "x"],
        &["COMMAND", "GETKEYSANDFLAGS", "XADD", "s", "*", "f", "v"],
        &["COMMAND", "GETKEYSANDFLAGS", "ZADD", "z", "1", "m"],
        &["COMMAND", "GETKEYSANDFLAGS", "EXISTS", "a", "b"],
        &["COMMAND", "GETKEYSANDFLAGS", "GETDEL", "a"],
        &["COMMAND", "GETKEYSANDFLAGS", "nosuchcommand", "a"],
        &["COMMAND", "GETKEYSANDFLAGS", "GET", "a", "b"],
        &["COMMAND", "GETKEYSANDFLAGS", "PING", "x"],
        &["COMMAND", "GETKEYSANDFLAGS", "CONFIG", "GET", "a"],
        &["COMMAND", "GETKEYSANDFLAGS"],
        &["COMMAND", "GETKEYS", "SET", "a", "b"],
    ]);
    let mut bad = differential(s.port, r.port, 2, &cases);
    bad.extend(differential(s.port, r.port, 3, &cases));
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

// ---- DIGEST, DELEX, SET IFEQ/IFNE/IFDEQ/IFDNE, MSETEX (8.4) -------------------------------
//
// As Redis 8.4's `t_string.c` and `db.c` write them: DIGEST is XXH3-64 of the value's
// bytes as lowercase hex without leading zeros (`"%" PRIx64`), and IFDEQ/IFDNE compare
// that text byte for byte.

/// DIGEST's reply for `key`, as text.
fn digest_of(r: &mut Raw, key: &str) -> String {
    let reply = r.cmd_str(&["DIGEST", key]);
    let V::Bulk(Some(b)) = parse(&reply, 0).0 else {
        panic!("bad DIGEST reply {}", escape(&reply))
    };
    String::from_utf8(b).expect("hex")
}

#[test]
fn digest_is_xxh3_of_the_value_as_hex() {
    let s = start_server();
    for proto in [2u8, 3] {
        let mut r = conn(s.port, proto);
        r.cmd_str(&["FLUSHALL"]);
        r.cmd_str(&["SET", "empty", ""]);
        r.cmd_str(&["SET", "int", "12345"]);
        r.cmd_str(&["SET", "text", "12345"]);
        r.cmd_str(&["APPEND", "grown", "123"]);
        r.cmd_str(&["APPEND", "grown", "45"]);
        r.cmd_str(&["RPUSH", "list", "a"]);
        let nil = common::reply::null(proto == 3);
        let wrongtype = err("WRONGTYPE Operation against a key holding the wrong kind of value");
        expect_replies(
            &mut r,
            &[
                // XXH3-64 of no bytes (the reference test vector 0x2D06800538D394C2).
                (vec!["DIGEST", "empty"], bulk("2d06800538d394c2")),
                (vec!["DIGEST", "nokey"], nil),
                (vec!["DIGEST", "list"], wrongtype),
                (
                    vec!["DIGEST"],
                    err("ERR wrong number of arguments for 'digest' command"),
                ),
                (
                    vec!["DIGEST", "a", "b"],
                    err("ERR wrong number of arguments for 'digest' command"),
                ),
            ],
        );
        // An int hashes as its decimal text, whatever the encoding.
        let d = digest_of(&mut r, "int");
        assert_eq!(d, digest_of(&mut r, "text"));
        assert_eq!(d, digest_of(&mut r, "grown"));
        assert!(d.len() <= 16 && !d.starts_with('0'), "{d}");
        assert!(
            d.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_ne!(d, digest_of(&mut r, "empty"));
    }
}

#[test]
fn delex_deletes_on_a_condition_or_like_del() {
    let s = start_server();
    for proto in [2u8, 3] {
        let mut r = conn(s.port, proto);
        r.cmd_str(&["FLUSHALL"]);
        r.cmd_str(&["SET", "s", "hello"]);
        r.cmd_str(&["SET", "n", "-999"]);
        r.cmd_str(&["SET", "bin", "a\0b"]);
        r.cmd_str(&["HSET", "h", "f", "v"]);
        r.cmd_str(&["ZADD", "z", "1", "m"]);
        r.cmd_str(&["LPUSH", "l", "x"]);
        let d = digest_of(&mut r, "s");
        let upper = d.to_uppercase();
        let arity = err("ERR wrong number of arguments for 'delex' command");
        let not_string = err("ERR Key should be of string type if conditions are specified");
        let bad = err("ERR Invalid condition. Use IFEQ, IFNE, IFDEQ, or IFDNE");
        expect_replies(
            &mut r,
            &[
                (vec!["DELEX", "s", "IFEQ", "world"], int(0)),
                (vec!["DELEX", "s", "IFNE", "hello"], int(0)),
                (vec!["DELEX", "s", "IFDNE", &d], int(0)),
                // The digest is compared as text: case matters.
                (vec!["DELEX", "s", "IFDEQ", &upper], int(0)),
                (vec!["DELEX", "s", "IFDEQ", "0"], int(0)),
                (vec!["GET", "s"], bulk("hello")),
                (vec!["DELEX", "s", "ifdeq", &d], int(1)),
                (vec!["EXISTS", "s"], int(0)),
                (vec!["DELEX", "n", "IFEQ", "-999"], int(1)),
                (vec!["DELEX", "bin", "IFNE", "a"], int(1)),
                // No condition: DEL of one key, any type.
                (vec!["DELEX", "h"], int(1)),
                (vec!["DELEX", "h"], int(0)),
                (vec!["DELEX", "nokey", "IFEQ", "x"], int(0)),
                (vec!["DELEX", "nokey", "IFDNE", "1234567890"], int(0)),
                (vec!["DELEX", "nokey", "BAD", "x"], int(0)),
                (vec!["DELEX", "z", "IFEQ", "m"], not_string.clone()),
                (vec!["DELEX", "l", "BAD", "x"], not_string),
                (vec!["SET", "s", "hello"], b"+OK\r\n".to_vec()),
                (vec!["DELEX", "s", "INVALID", "hello"], bad.clone()),
                (vec!["DELEX", "s", "IF", "hello"], bad.clone()),
                (vec!["DELEX", "s", "IFEQ\0", "hello"], int(1)),
                (vec!["DELEX"], arity.clone()),
                (vec!["DELEX", "s", "IFEQ"], arity.clone()),
                (vec!["DELEX", "nokey", "IFEQ"], arity.clone()),
                (vec!["DELEX", "s", "IFEQ", "v", "extra"], arity),
                (vec!["EXISTS", "z", "l"], int(2)),
            ],
        );
    }
}

#[test]
fn set_with_a_condition_sets_only_when_it_holds() {
    let s = start_server();
    for proto in [2u8, 3] {
        let mut r = conn(s.port, proto);
        r.cmd_str(&["FLUSHALL"]);
        let nil = common::reply::null(proto == 3);
        let ok = b"+OK\r\n".to_vec();
        let syntax = err("ERR syntax error");
        let wrongtype = err("WRONGTYPE Operation against a key holding the wrong kind of value");
        r.cmd_str(&["SET", "k", "hello"]);
        let d = digest_of(&mut r, "k");
        r.cmd_str(&["SET", "i", "12345"]);
        r.cmd_str(&["LPUSH", "l", "x"]);
        expect_replies(
            &mut r,
            &[
                (vec!["SET", "k", "v", "IFEQ", "other"], nil.clone()),
                (vec!["SET", "k", "v", "IFNE", "hello"], nil.clone()),
                (vec!["SET", "k", "v", "IFDNE", &d], nil.clone()),
                (vec!["SET", "k", "v", "IFDEQ", "1234567890"], nil.clone()),
                (vec!["GET", "k"], bulk("hello")),
                (vec!["SET", "k", "world", "IFDEQ", &d], ok.clone()),
                (vec!["SET", "k", "w2", "ifeq", "world"], ok.clone()),
                (vec!["SET", "k", "w3", "IFNE", "x"], ok.clone()),
                (vec!["SET", "k", "w4", "IFDNE", "x"], ok.clone()),
                (vec!["GET", "k"], bulk("w4")),
                (vec!["SET", "i", "v", "IFEQ", "12345"], ok.clone()),
                // A missing key: IFEQ/IFDEQ refuse (like XX), IFNE/IFDNE set.
                (vec!["SET", "m1", "v", "IFEQ", "v"], nil.clone()),
                (vec!["SET", "m1", "v", "IFDEQ", "1"], nil.clone()),
                (vec!["SET", "m2", "v", "IFNE", "v"], ok.clone()),
                (vec!["SET", "m3", "v", "IFDNE", "1"], ok.clone()),
                (vec!["EXISTS", "m1", "m2", "m3"], int(2)),
                // With GET: the old value whether or not it set.
                (vec!["SET", "k", "a", "IFEQ", "no", "GET"], bulk("w4")),
                (vec!["SET", "k", "a", "GET", "IFEQ", "w4"], bulk("w4")),
                (vec!["GET", "k"], bulk("a")),
                (vec!["SET", "m4", "v", "IFEQ", "x", "GET"], nil.clone()),
                (vec!["SET", "m4", "v", "IFNE", "x", "GET"], nil.clone()),
                (vec!["GET", "m4"], bulk("v")),
                // With an expire.
                (vec!["SET", "k", "b", "IFEQ", "a", "EX", "100"], ok.clone()),
                (vec!["TTL", "k"], int(100)),
                (vec!["SET", "k", "c", "IFEQ", "b", "KEEPTTL"], ok.clone()),
                (vec!["TTL", "k"], int(100)),
                (
                    vec!["SET", "k", "d", "IFEQ", "nope", "EX", "0"],
                    err("ERR invalid expire time in 'set' command"),
                ),
                // Another type: WRONGTYPE, even where IFEQ would refuse.
                (vec!["SET", "l", "v", "IFEQ", "x"], wrongtype.clone()),
                (vec!["SET", "l", "v", "IFDNE", "x"], wrongtype.clone()),
                (vec!["SET", "l", "v", "IFEQ", "x", "GET"], wrongtype),
                // One condition; none after NX or XX; the same one twice (the last wins).
                (
                    vec!["SET", "k", "v", "IFEQ", "c", "IFNE", "c"],
                    syntax.clone(),
                ),
                (vec!["SET", "k", "v", "NX", "IFEQ", "c"], syntax.clone()),
                (vec!["SET", "k", "v", "XX", "IFDNE", "c"], syntax.clone()),
                (vec!["SET", "k", "v", "IFEQ"], syntax.clone()),
                (vec!["SET", "k", "v", "IFEQ", "x", "IFEQ", "c"], ok.clone()),
                // NX and XX after a condition are accepted, as Redis's parser has it.
                (vec!["SET", "k", "e", "IFEQ", "v", "XX"], ok.clone()),
                (vec!["SET", "k", "f", "IFNE", "x", "NX"], nil.clone()),
                (vec!["GET", "k"], bulk("e")),
            ],
        );
    }
}

#[test]
fn msetex_sets_every_pair_with_one_deadline() {
    let s = start_server();
    for proto in [2u8, 3] {
        let mut r = conn(s.port, proto);
        r.cmd_str(&["FLUSHALL"]);
        let syntax = err("ERR syntax error");
        let numkeys = err("ERR invalid numkeys value");
        let pairs = err("ERR wrong number of key-value pairs");
        r.cmd_str(&["SET", "old", "x", "EX", "500"]);
        r.cmd_str(&["LPUSH", "l", "x"]);
        expect_replies(
            &mut r,
            &[
                (vec!["MSETEX", "2", "a", "1", "b", "2"], int(1)),
                (vec!["MGET", "a", "b"], arr(&[bulk("1"), bulk("2")])),
                (vec!["TTL", "a"], int(-1)),
                (vec!["MSETEX", "2", "a", "3", "c", "4", "EX", "100"], int(1)),
                (vec!["TTL", "a"], int(100)),
                (vec!["TTL", "c"], int(100)),
                (vec!["MSETEX", "1", "d", "5", "PX", "5000"], int(1)),
                (vec!["MSETEX", "1", "e", "6", "EXAT", "4000000000"], int(1)),
                (vec!["EXPIRETIME", "e"], int(4_000_000_000)),
                (
                    vec!["MSETEX", "1", "e", "7", "PXAT", "4000000000123"],
                    int(1),
                ),
                (vec!["PEXPIRETIME", "e"], int(4_000_000_000_123)),
                (vec!["MSETEX", "1", "old", "y", "KEEPTTL"], int(1)),
                (vec!["TTL", "old"], int(500)),
                (vec!["MSETEX", "1", "old", "z"], int(1)),
                (vec!["TTL", "old"], int(-1)),
                // NX: none may exist; XX: all must.
                (vec!["MSETEX", "2", "new", "1", "a", "1", "NX"], int(0)),
                (vec!["EXISTS", "new"], int(0)),
                (
                    vec!["MSETEX", "2", "new", "1", "new2", "1", "NX", "EX", "10"],
                    int(1),
                ),
                (vec!["MSETEX", "2", "a", "9", "nope", "9", "XX"], int(0)),
                (vec!["MSETEX", "2", "a", "9", "b", "9", "xx"], int(1)),
                (
                    vec!["MGET", "a", "b", "nope"],
                    arr(&[bulk("9"), bulk("9"), common::reply::null(proto == 3)]),
                ),
                // Overwrites any type, like MSET.
                (vec!["MSETEX", "1", "l", "s"], int(1)),
                (vec!["GET", "l"], bulk("s")),
                // Errors, before anything is set.
                (vec!["MSETEX", "k", "v", "EX", "10"], numkeys.clone()),
                (vec!["MSETEX", "0", "k", "v"], numkeys.clone()),
                (vec!["MSETEX", "-1", "k", "v"], numkeys.clone()),
                (vec!["MSETEX", "2147483648", "k", "v"], numkeys),
                (vec!["MSETEX", "2147483647", "k", "v"], pairs.clone()),
                (vec!["MSETEX", "2", "k", "v", "k2"], pairs),
                (vec!["MSETEX", "1", "k", "v", "BAD"], syntax.clone()),
                (vec!["MSETEX", "1", "k", "v", "NX", "XX"], syntax.clone()),
                (
                    vec!["MSETEX", "1", "k", "v", "EX", "10", "PX", "10"],
                    syntax.clone(),
                ),
                (
                    vec!["MSETEX", "1", "k", "v", "KEEPTTL", "EX", "10"],
                    syntax.clone(),
                ),
                (vec!["MSETEX", "1", "k", "v", "GET"], syntax.clone()),
                (vec!["MSETEX", "1", "k", "v", "IFEQ", "v"], syntax.clone()),
                (vec!["MSETEX", "1", "k", "v", "EX"], syntax),
                (
                    vec!["MSETEX", "1", "k", "v", "EX", "0"],
                    err("ERR invalid expire time in 'msetex' command"),
                ),
                (
                    vec!["MSETEX", "1", "k", "v", "PX", "x"],
                    err("ERR value is not an integer or out of range"),
                ),
                (vec!["EXISTS", "k"], int(0)),
                (
                    vec!["MSETEX", "1", "k"],
                    err("ERR wrong number of arguments for 'msetex' command"),
                ),
            ],
        );
    }
}

#[test]
fn the_8_4_string_commands_tell_keyspace_events() {
    let s = start_server();
    let got = keyevents(
        s.port,
        "KEA",
        &[
            &["SET", "k", "v"],
            &["SET", "k", "w", "IFEQ", "no"],
            &["SET", "k", "w", "IFEQ", "v"],
            &["DELEX", "k", "IFNE", "w"],
            &["DELEX", "k", "IFEQ", "w"],
            &["MSETEX", "2", "a", "1", "b", "2", "EX", "10"],
            &["MSETEX", "1", "a", "1", "NX"],
            &["DELEX", "a"],
        ],
    );
    assert_eq!(
        got,
        [
            "__keyevent@0__:set k",
            "__keyevent@0__:set k",
            "__keyevent@0__:del k",
            "__keyevent@0__:expire a",
            "__keyevent@0__:set a",
            "__keyevent@0__:expire b",
            "__keyevent@0__:set b",
            "__keyevent@0__:del a",
        ]
    );
    // A missing key read: `keymiss` (MSETEX only under XX; NX looks for writing).
    let got = keyevents(
        s.port,
        "Em",
        &[
            &["DIGEST", "nokey"],
            &["DELEX", "nokey2", "IFEQ", "v"],
            &["MSETEX", "1", "nokey3", "v", "XX"],
            &["MSETEX", "1", "nokey4", "v", "NX"],
            &["SET", "nokey5", "v", "IFNE", "x"],
        ],
    );
    assert_eq!(
        got,
        [
            "__keyevent@0__:keymiss nokey",
            "__keyevent@0__:keymiss nokey2",
            "__keyevent@0__:keymiss nokey3",
        ]
    );
}

#[test]
fn the_8_4_string_commands_log_their_effect_and_survive_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let want;
    {
        let node = Node::start(dir.path(), &["--appendonly", "yes", "--save", ""]);
        let mut c = node.raw();
        c.cmd_str(&["SET", "a", "1"]);
        c.cmd_str(&["SET", "b", "x"]);
        c.cmd_str(&["SET", "c", "y"]);
        c.cmd_str(&["HSET", "h", "f", "v"]);
        assert_eq!(c.cmd_str(&["SET", "a", "2", "IFEQ", "1"]), b"+OK\r\n");
        assert_eq!(c.cmd_str(&["SET", "a", "3", "IFEQ", "1"]), b"$-1\r\n");
        assert_eq!(c.cmd_str(&["DELEX", "b", "IFEQ", "x"]), int(1));
        assert_eq!(c.cmd_str(&["DELEX", "c", "IFEQ", "no"]), int(0));
        assert_eq!(c.cmd_str(&["DELEX", "h"]), int(1));
        assert_eq!(
            c.cmd_str(&["MSETEX", "2", "m1", "v1", "m2", "v2", "EX", "100000"]),
            int(1)
        );
        assert_eq!(c.cmd_str(&["MSETEX", "1", "m3", "v3", "NX"]), int(1));
        want = c.cmd_str(&["MGET", "a", "b", "c", "h", "m1", "m2", "m3"]);
        node.stop();
    }
    let bytes = dir_bytes(dir.path());
    // SET with a condition: verbatim when it set; DELEX with one: `DEL key`; DELEX
    // without: verbatim; MSETEX: EX rewritten to PXAT.
    assert_eq!(
        count(&bytes, b"$4\r\nIFEQ\r\n"),
        1,
        "one conditional SET applied"
    );
    assert_eq!(count(&bytes, b"$3\r\nDEL\r\n$1\r\nb\r\n"), 1);
    assert_eq!(count(&bytes, b"$5\r\nDELEX\r\n$1\r\nh\r\n"), 1);
    assert_eq!(
        count(&bytes, b"$5\r\nDELEX\r\n"),
        1,
        "only the DEL-like DELEX"
    );
    assert_eq!(count(&bytes, b"$6\r\nMSETEX\r\n"), 2);
    assert_eq!(count(&bytes, b"$4\r\nPXAT\r\n"), 1);
    assert_eq!(count(&bytes, b"$2\r\nEX\r\n"), 0);
    let node = Node::start(dir.path(), &["--appendonly", "yes", "--save", ""]);
    let mut c = node.raw();
    let got = c.cmd_str(&["MGET", "a", "b", "c", "h", "m1", "m2", "m3"]);
    assert_eq!(escape(&got), escape(&want));
    let ttl = String::from_utf8(c.cmd_str(&["TTL", "m2"])).expect("utf8");
    let ttl: i64 = ttl.trim_start_matches(':').trim().parse().expect("int");
    assert!(ttl > 99_000, "the MSETEX deadline survived: {ttl}");
}

#[test]
fn the_8_4_string_rows_are_redis_s() {
    let s = start_server();
    let mut r = s.raw();
    let reply = r.cmd_str(&["COMMAND", "INFO", "digest", "delex", "msetex"]);
    let V::Agg(_, Some(rows)) = parse(&reply, 0).0 else {
        panic!("bad reply {}", escape(&reply))
    };
    let head = |v: &V| match v {
        V::Agg(_, Some(items)) => items[..6].to_vec(),
        other => panic!("no row: {other:?}"),
    };
    let flags = |names: &[&str]| {
        V::Agg(
            b'*',
            Some(
                names
                    .iter()
                    .map(|n| V::Line(b'+', n.as_bytes().to_vec()))
                    .collect(),
            ),
        )
    };
    let line = |n: i64| V::Line(b':', n.to_string().into_bytes());
    assert_eq!(
        head(&rows[0]),
        [
            V::Bulk(Some(b"digest".to_vec())),
            line(2),
            flags(&["readonly", "fast"]),
            line(1),
            line(1),
            line(1),
        ]
    );
    assert_eq!(
        head(&rows[1]),
        [
            V::Bulk(Some(b"delex".to_vec())),
            line(-2),
            flags(&["write", "fast"]),
            line(1),
            line(1),
            line(1),
        ]
    );
    assert_eq!(
        head(&rows[2]),
        [
            V::Bulk(Some(b"msetex".to_vec())),
            line(-4),
            flags(&["write", "denyoom", "movablekeys"]),
            line(0),
            line(0),
            line(0),
        ]
    );
    assert_eq!(
        r.cmd_str(&[
            "COMMAND", "GETKEYS", "MSETEX", "2", "a", "1", "b", "2", "EX", "5"
        ]),
        arr(&[bulk("a"), bulk("b")])
    );
    let docs =
        String::from_utf8_lossy(&r.cmd_str(&["COMMAND", "DOCS", "digest", "delex", "msetex"]))
            .into_owned();
    assert_eq!(docs.matches("8.4.0").count(), 3, "{docs}");
}

/// Redis 7.2 bounds LPOS's RANK to -LONG_MAX..LONG_MAX (7.0 negated LONG_MIN, an
/// overflow) and, for BLPOP and the other float timeouts, reads a timeout past a 64-bit
/// deadline as `out of range` (7.0: `negative`), in both protocols; Redis 7.2.6's
/// `LPOS RANK (positive, negative and zero rank) option` and `BLPOP: timeout value out of
/// range`.
#[test]
fn lpos_rank_bounds_and_timeout_ranges_follow_redis_7_2() {
    let s = start_server();
    for proto in [2, 3] {
        let mut r = conn(s.port, proto);
        expect_replies(
            &mut r,
            &[
                (vec!["RPUSH", "l", "a", "b", "a"], int(3)),
                (
                    vec!["LPOS", "l", "a", "RANK", "-9223372036854775808"],
                    err(
                        "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
                    ),
                ),
                (
                    vec!["LPOS", "l", "a", "RANK", "-9223372036854775807"],
                    if proto == 3 {
                        b"_\r\n".to_vec()
                    } else {
                        b"$-1\r\n".to_vec()
                    },
                ),
                (vec!["LPOS", "l", "a", "RANK", "-1"], int(2)),
                (
                    vec!["BLPOP", "nolist", "0x7FFFFFFFFFFFFF"],
                    err("ERR timeout is out of range"),
                ),
                (
                    vec!["BLPOP", "nolist", "inf"],
                    err("ERR timeout is out of range"),
                ),
                (
                    vec!["BZPOPMIN", "nolist", "9e20"],
                    err("ERR timeout is out of range"),
                ),
                (
                    vec!["BLMOVE", "nolist", "x", "LEFT", "LEFT", "-inf"],
                    err("ERR timeout is negative"),
                ),
                (
                    vec!["BLPOP", "nolist", "-0x1"],
                    err("ERR timeout is negative"),
                ),
                (
                    vec!["BLPOP", "nolist", "0x"],
                    err("ERR timeout is not a float or out of range"),
                ),
                (vec!["DEL", "l"], int(1)),
            ],
        );
    }
}
