//! The set family against the real binary: every @set command's replies and errors
//! compared byte for byte with Redis 7.0 in RESP2 and RESP3 (unordered replies as
//! multisets, random ones by shape), the intset/hashtable switch, keyspace events
//! compared with Redis's, SPOP logged as SREMs (or DEL when it takes everything), sets
//! surviving a restart, SSCAN under resizes and the randomness of SPOP/SRANDMEMBER.

mod common;

use common::differential::*;
use common::*;
use std::collections::{HashMap, HashSet};

fn sadd(key: &str, members: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut v = vec!["SADD".to_string(), key.to_string()];
    v.extend(members);
    v
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn members_of(reply: &[u8]) -> Vec<Vec<u8>> {
    match parse(reply, 0).0 {
        V::Agg(_, Some(items)) => items
            .into_iter()
            .filter_map(|v| match v {
                V::Bulk(Some(b)) => Some(b),
                _ => None,
            })
            .collect(),
        V::Bulk(Some(b)) => vec![b],
        _ => Vec::new(),
    }
}

#[test]
fn set_replies_and_errors_match_redis_in_both_protocols() {
    let (s, r) = (start_server(), redis_server());
    let ints512 = sadd("s", (0..512).map(|i| i.to_string()));
    let words = sadd("w", (0..700).map(|i| format!("w{i}")));
    let mixed = sadd(
        "w2",
        (0..700)
            .map(|i| format!("w{i}"))
            .chain((0..100).map(|i| i.to_string())),
    );
    for proto in [2, 3] {
        let mut cases = exact(&[
            &["FLUSHALL"],
            &strs(&ints512),
            &["OBJECT", "ENCODING", "s"],
            &["SMEMBERS", "s"],
            &["SADD", "s", "512"],
            &["OBJECT", "ENCODING", "s"],
            &[
                "SADD",
                "i",
                "1",
                "-5",
                "70000",
                "9223372036854775807",
                "-9223372036854775808",
            ],
            &["OBJECT", "ENCODING", "i"],
            &["SMEMBERS", "i"],
            &["SSCAN", "i", "0"],
            &["SISMEMBER", "i", "70000"],
            &["SISMEMBER", "i", "070000"],
            &["SADD", "i", "01"],
            &["OBJECT", "ENCODING", "i"],
            &["SADD", "j", "3", "2", "1", "2"],
            &["SMEMBERS", "j"],
            &["SSCAN", "j", "0"],
            &["SSCAN", "j", "0", "MATCH", "[12]"],
            &["SRANDMEMBER", "j", "5"],
            &["SRANDMEMBER", "j", "3"],
            &["SRANDMEMBER", "j", "0"],
            &["SPOP", "j", "0"],
            &["SPOP", "j", "-1"],
            &["SPOP", "j", "x"],
            &["SPOP", "j", "1", "2"],
            &["SRANDMEMBER", "j", "1", "2"],
            &["SRANDMEMBER", "j", "x"],
            &["SRANDMEMBER", "j", "-9223372036854775808"],
            &["SPOP", "nokey"],
            &["SPOP", "nokey", "3"],
            &["SPOP", "nokey", "0"],
            &["SRANDMEMBER", "nokey"],
            &["SRANDMEMBER", "nokey", "3"],
            &["SRANDMEMBER", "nokey", "-3"],
            &["SPOP", "j", "3"],
            &["EXISTS", "j"],
            &["SCARD", "s"],
            &["SADD", "a", "x", "y", "1"],
            &["SADD", "b", "y", "1", "z"],
            &["SINTERCARD", "2", "a", "b"],
            &["SINTERCARD", "2", "a", "b", "LIMIT", "1"],
            &["SINTERCARD", "2", "a", "b", "LIMIT", "0"],
            &["SINTERCARD", "2", "a", "b", "LIMIT", "-1"],
            &["SINTERCARD", "2", "a", "b", "LIMIT", "x"],
            &["SINTERCARD", "2", "a", "b", "LIMIT"],
            &["SINTERCARD", "2", "a", "b", "BAD", "1"],
            &["SINTERCARD", "0", "a"],
            &["SINTERCARD", "-1", "a"],
            &["SINTERCARD", "x", "a"],
            &["SINTERCARD", "3", "a", "b"],
            &["SINTERCARD", "1", "a", "b"],
            &["SINTERCARD", "2", "a", "nokey"],
            &["SINTERCARD", "1", "nokey"],
            &["SDIFF", "nokey", "a"],
            &["SINTER", "a", "nokey"],
            &["SINTER", "nokey", "p"],
            &["SUNION", "nokey"],
            &["SMEMBERS", "nokey"],
            &["SCARD", "nokey"],
            &["SISMEMBER", "nokey", "a"],
            &["SMISMEMBER", "nokey", "a", "b"],
            &["SMISMEMBER", "a", "x", "q", "1"],
            &["HSET", "p", "f", "v"],
            &["SINTERSTORE", "p", "a", "b"],
            &["TYPE", "p"],
            &["SCARD", "p"],
            &["SISMEMBER", "p", "y"],
            &["HSET", "p", "f", "v"],
            &["SUNIONSTORE", "p", "nokey"],
            &["EXISTS", "p"],
            &["SUNIONSTORE", "q", "nokey"],
            &["EXISTS", "q"],
            &["HSET", "p", "f", "v"],
            &["SUNIONSTORE", "q", "p"],
            &["SINTER", "a", "p"],
            &["SINTER", "nokey", "p"],
            &["SUNION", "nokey", "p"],
            &["SDIFF", "a", "p"],
            &["SDIFF", "nokey", "p"],
            &["SINTERCARD", "2", "nokey", "p"],
            &["SDIFFSTORE", "a2", "a", "a"],
            &["EXISTS", "a2"],
            &["SDIFFSTORE", "d", "a", "b"],
            &["SMEMBERS", "d"],
            &["SINTERSTORE", "d2", "a", "b"],
            &["OBJECT", "ENCODING", "d2"],
            &["SINTERSTORE", "d3", "i", "s"],
            &["OBJECT", "ENCODING", "d3"],
            &["SMEMBERS", "d3"],
            &["SUNIONSTORE", "d4", "i", "j", "s"],
            &["OBJECT", "ENCODING", "d4"],
            &["SADD", "ttl", "a"],
            &["EXPIRE", "ttl", "100"],
            &["SUNIONSTORE", "ttl", "a"],
            &["TTL", "ttl"],
            &["SADD", "ttl2", "a", "b"],
            &["EXPIRE", "ttl2", "100"],
            &["SREM", "ttl2", "a"],
            &["SPOP", "ttl2", "0"],
            &["TTL", "ttl2"],
            &["XADD", "st", "1-1", "f", "v"],
            &["SADD", "st", "a"],
            &["SREM", "st", "a"],
            &["SCARD", "st"],
            &["SISMEMBER", "st", "a"],
            &["SMISMEMBER", "st", "a"],
            &["SMEMBERS", "st"],
            &["SPOP", "st"],
            &["SPOP", "st", "2"],
            &["SRANDMEMBER", "st"],
            &["SRANDMEMBER", "st", "2"],
            &["SSCAN", "st", "0"],
            &["SINTER", "a", "st"],
            &["SUNION", "st"],
            &["SDIFF", "nokey", "st"],
            &["SINTERCARD", "1", "st"],
            &["SUNIONSTORE", "d", "st"],
            &["SUNIONSTORE", "st", "a"],
            &["TYPE", "st"],
            &["XADD", "st", "1-1", "f", "v"],
            &["SMOVE", "st", "a", "x"],
            &["SMOVE", "a", "st", "x"],
            &["SMOVE", "nokey", "st", "x"],
            &["SMOVE", "a", "a", "x"],
            &["SMOVE", "a", "a", "nope"],
            &["SMOVE", "a", "new", "nope"],
            &["EXISTS", "new"],
            &["SMOVE", "a", "new", "x"],
            &["SMOVE", "a", "new", "y"],
            &["SADD", "new", "1"],
            &["SMOVE", "a", "new", "1"],
            &["EXISTS", "a"],
            &["SMISMEMBER", "new", "x", "q", "1"],
            &["SSCAN", "new", "0", "MATCH", "x"],
            &["SSCAN", "new", "0", "COUNT", "-1"],
            &["SSCAN", "new", "x"],
            &["SSCAN", "new", "18446744073709551616"],
            &["SSCAN", "nokey", "0"],
            &["SREM", "new", "x", "y", "1", "nope"],
            &["EXISTS", "new"],
            &["SREM", "nokey", "x"],
        ]);
        cases.extend([
            (Mode::Sorted, vec!["SMEMBERS", "s"]),
            (Mode::Sorted, vec!["SINTER", "a", "b"]),
            (Mode::Sorted, vec!["SUNION", "a", "b", "nokey", "i"]),
            (Mode::Sorted, vec!["SDIFF", "a", "b"]),
            (Mode::Shape, vec!["SPOP", "s", "10"]),
            (Mode::Exact, vec!["SCARD", "s"]),
            (Mode::Shape, vec!["SPOP", "s"]),
            (Mode::Shape, vec!["SPOP", "s", "480"]),
            (Mode::Exact, vec!["SCARD", "s"]),
            (Mode::Exact, vec!["OBJECT", "ENCODING", "s"]),
            (Mode::Exact, vec!["FLUSHALL"]),
            (Mode::Exact, words.iter().map(String::as_str).collect()),
            (Mode::Shape, vec!["SPOP", "w", "690"]),
            (Mode::Exact, vec!["SCARD", "w"]),
            (Mode::Exact, vec!["OBJECT", "ENCODING", "w"]),
            (Mode::Shape, vec!["SPOP", "w", "20"]),
            (Mode::Exact, vec!["EXISTS", "w"]),
            (Mode::Exact, mixed.iter().map(String::as_str).collect()),
            (Mode::Shape, vec!["SRANDMEMBER", "w2"]),
            (Mode::Shape, vec!["SRANDMEMBER", "w2", "1"]),
            (Mode::Shape, vec!["SRANDMEMBER", "w2", "5"]),
            (Mode::Shape, vec!["SRANDMEMBER", "w2", "700"]),
            (Mode::Shape, vec!["SRANDMEMBER", "w2", "-5"]),
            (Mode::Shape, vec!["SRANDMEMBER", "w2", "900"]),
            (Mode::Sorted, vec!["SRANDMEMBER", "w2", "900"]),
        ]);
        // Redis 7.2+ packs small sets of strings in a listpack where Debian's 7.0 has a
        // hashtable: a string joining a small intset, a SINTERSTORE of small sets, and
        // what SPOP leaves of a large set (its "case 3" builds the rest as a listpack).
        let (intset, hashtable, listpack) = (
            "$6\r\nintset\r\n",
            "$9\r\nhashtable\r\n",
            "$8\r\nlistpack\r\n",
        );
        newer(
            &mut cases,
            &[
                (&["OBJECT", "ENCODING", "s"], intset),
                (&["OBJECT", "ENCODING", "s"], hashtable),
                (&["OBJECT", "ENCODING", "i"], intset),
                (&["OBJECT", "ENCODING", "i"], listpack),
                (&["OBJECT", "ENCODING", "d2"], listpack),
                (&["OBJECT", "ENCODING", "s"], listpack),
                (&["OBJECT", "ENCODING", "w"], listpack),
            ],
        );
        let bad = differential(s.port, r.port, proto, &cases);
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }
}

fn events_of(port: u16, cmds: &[&[&str]]) -> Vec<String> {
    keyevents(port, "KEA", cmds)
}

#[test]
fn set_keyspace_events_match_redis() {
    let (s, r) = (start_server(), redis_server());
    let cmds: &[&[&str]] = &[
        &["SADD", "a", "1", "2", "3"],
        &["SADD", "a", "1"],
        &["SADD", "b", "2", "x"],
        &["SREM", "a", "9"],
        &["SREM", "a", "1"],
        &["SMOVE", "a", "b", "2"],
        &["SMOVE", "a", "c", "3"],
        &["SMOVE", "b", "b", "x"],
        &["SADD", "a", "7"],
        &["SINTERSTORE", "d", "b", "c"],
        &["SUNIONSTORE", "d", "b", "c"],
        &["SDIFFSTORE", "d", "b", "c"],
        &["SINTERSTORE", "d", "b", "nokey"],
        &["SINTERSTORE", "d", "b", "nokey"],
        &["SUNIONSTORE", "e", "nokey"],
        &["SPOP", "a"],
        &["SADD", "f", "1", "2", "3"],
        &["SPOP", "f", "1"],
        &["SPOP", "f", "5"],
        &["SPOP", "nokey", "5"],
        &["SREM", "b", "2", "x"],
        &["XADD", "str", "1-1", "f", "v"],
        &["SUNIONSTORE", "str", "c"],
    ];
    let ours = events_of(s.port, cmds);
    assert!(ours.len() > 15, "{ours:?}");
    assert_eq!(ours, events_of(r.port, cmds));
}

#[test]
fn keymiss_events_of_hash_and_set_reads_match_redis() {
    let (s, r) = (start_server(), redis_server());
    let cmds: &[&[&str]] = &[
        &["HGET", "m1", "f"],
        &["HMGET", "m2", "f"],
        &["HGETALL", "m3"],
        &["HRANDFIELD", "m4", "2"],
        &["HSCAN", "m5", "0"],
        &["HSET", "w1", "f", "v"],
        &["HDEL", "w2", "f"],
        &["SISMEMBER", "m6", "a"],
        &["SMEMBERS", "m7"],
        &["SINTER", "m8", "m9"],
        &["SINTERSTORE", "d", "m10", "m11"],
        &["SUNIONSTORE", "d", "m12"],
        &["SINTERCARD", "1", "m13"],
        &["SRANDMEMBER", "m14"],
        &["SPOP", "w3"],
        &["SMOVE", "w4", "w5", "a"],
        &["SADD", "w6", "a"],
        &["SSCAN", "m15", "0"],
    ];
    let ours = keyevents(s.port, "Em", cmds);
    assert!(ours.len() > 10, "{ours:?}");
    assert_eq!(ours, keyevents(r.port, "Em", cmds));
}

#[test]
fn spop_is_logged_as_srems_or_del_and_sets_survive_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let big = sadd("big", (0..2000).map(|i| format!("m{i}")));
    let want;
    {
        let node = Node::start(dir.path(), &["--appendonly", "yes", "--save", ""]);
        let mut c = node.raw();
        c.cmd_str(&["SADD", "s", "a", "b", "c", "d", "e"]);
        assert_eq!(members_of(&c.cmd_str(&["SPOP", "s", "2"])).len(), 2);
        c.cmd_str(&["SADD", "all", "1", "2", "3"]);
        assert_eq!(members_of(&c.cmd_str(&["SPOP", "all", "10"])).len(), 3);
        // Under lazyfree-lazy-server-del the same is an UNLINK (Redis 7.2+).
        c.cmd_str(&["CONFIG", "SET", "lazyfree-lazy-server-del", "yes"]);
        c.cmd_str(&["SADD", "all2", "1", "2", "3"]);
        assert_eq!(members_of(&c.cmd_str(&["SPOP", "all2", "3"])).len(), 3);
        c.cmd_str(&["CONFIG", "SET", "lazyfree-lazy-server-del", "no"]);
        c.cmd_str(&["SADD", "one", "x", "y"]);
        c.cmd_str(&["SPOP", "one"]);
        c.cmd_str(&strs(&big));
        assert_eq!(members_of(&c.cmd_str(&["SPOP", "big", "1990"])).len(), 1990);
        c.cmd_str(&["SADD", "ints", "5", "-3", "100000"]);
        want = [
            c.cmd_str(&["SMEMBERS", "ints"]),
            c.cmd_str(&["SCARD", "s"]),
            c.cmd_str(&["SCARD", "big"]),
            c.cmd_str(&["SCARD", "one"]),
            c.cmd_str(&["EXISTS", "all"]),
            c.cmd_str(&["OBJECT", "ENCODING", "ints"]),
        ];
        // What SPOP left of the large set is rebuilt as a listpack (Redis 7.2+); the
        // log replays the SADD and the SREMs, which leave a hashtable, as Redis's AOF
        // replay does.
        assert_eq!(
            c.cmd_str(&["OBJECT", "ENCODING", "big"]),
            b"$8\r\nlistpack\r\n"
        );
        let mut s_members = members_of(&c.cmd_str(&["SMEMBERS", "s"]));
        s_members.sort();
        let mut big_members = members_of(&c.cmd_str(&["SMEMBERS", "big"]));
        big_members.sort();
        node.stop();
        let bytes = dir_bytes(dir.path());
        assert_eq!(count(&bytes, b"SPOP"), 0, "SPOP is never logged as itself");
        // 2 + 1990 + 1 SREMs; SPOP of everything is a DEL.
        assert_eq!(count(&bytes, b"$4\r\nSREM\r\n"), 1993);
        assert_eq!(count(&bytes, b"$3\r\nDEL\r\n$3\r\nall\r\n"), 1);
        assert_eq!(count(&bytes, b"$6\r\nUNLINK\r\n$4\r\nall2\r\n"), 1);
        let node = Node::start(dir.path(), &["--appendonly", "yes", "--save", ""]);
        let mut c = node.raw();
        let got = [
            c.cmd_str(&["SMEMBERS", "ints"]),
            c.cmd_str(&["SCARD", "s"]),
            c.cmd_str(&["SCARD", "big"]),
            c.cmd_str(&["SCARD", "one"]),
            c.cmd_str(&["EXISTS", "all"]),
            c.cmd_str(&["OBJECT", "ENCODING", "ints"]),
        ];
        assert_eq!(
            c.cmd_str(&["OBJECT", "ENCODING", "big"]),
            b"$9\r\nhashtable\r\n"
        );
        assert_eq!(got.map(|g| escape(&g)), want.map(|w| escape(&w)));
        let mut again = members_of(&c.cmd_str(&["SMEMBERS", "s"]));
        again.sort();
        assert_eq!(again, s_members);
        let mut again = members_of(&c.cmd_str(&["SMEMBERS", "big"]));
        again.sort();
        assert_eq!(again, big_members);
    }
}

#[test]
fn sscan_of_a_large_set_returns_every_member_while_it_changes() {
    let s = start_server();
    let mut c = s.raw();
    c.cmd_str(&strs(&sadd("s", (0..3000).map(|i| format!("m{i}")))));
    let mut seen = HashSet::new();
    let mut cursor = "0".to_string();
    let mut round = 0;
    loop {
        let reply = c.cmd_str(&["SSCAN", "s", &cursor, "COUNT", "40"]);
        let V::Agg(_, Some(parts)) = parse(&reply, 0).0 else {
            panic!()
        };
        let (V::Bulk(Some(next)), V::Agg(_, Some(items))) = (&parts[0], &parts[1]) else {
            panic!()
        };
        for m in items {
            if let V::Bulk(Some(b)) = m {
                seen.insert(b.clone());
            }
        }
        round += 1;
        if round == 3 {
            c.cmd_str(&strs(&sadd("s", (3000..12000).map(|i| format!("m{i}")))));
        }
        if round == 40 {
            let mut del = vec!["SREM".to_string(), "s".to_string()];
            del.extend((3000..12000).map(|i| format!("m{i}")));
            c.cmd_str(&strs(&del));
        }
        cursor = String::from_utf8(next.clone()).expect("cursor");
        if cursor == "0" {
            break;
        }
    }
    for i in 0..3000 {
        assert!(
            seen.contains(format!("m{i}").as_bytes()),
            "m{i} was never returned"
        );
    }
}

#[test]
fn spop_and_srandmember_choose_every_member_about_equally() {
    let s = start_server();
    let mut c = s.raw();
    for (key, members) in [
        ("ints", (0..20).map(|i| i.to_string()).collect::<Vec<_>>()),
        ("words", (0..20).map(|i| format!("w{i}")).collect()),
    ] {
        c.cmd_str(&strs(&sadd(key, members.clone())));
        let mut hits: HashMap<Vec<u8>, usize> = HashMap::new();
        let reply = c.cmd_str(&["SRANDMEMBER", key, "-20000"]);
        for m in members_of(&reply) {
            *hits.entry(m).or_default() += 1;
        }
        assert_eq!(hits.len(), 20, "{key}: every member is drawn");
        for (m, n) in &hits {
            assert!(
                (700..1300).contains(n),
                "{key}: {m:?} drawn {n} times of 20000"
            );
        }
        // SPOP one at a time empties the set with every member once.
        let mut popped = HashSet::new();
        for _ in 0..20 {
            popped.extend(members_of(&c.cmd_str(&["SPOP", key])));
        }
        assert_eq!(popped.len(), 20);
        assert_eq!(c.cmd_str(&["EXISTS", key]), reply::int(0));
    }
}
