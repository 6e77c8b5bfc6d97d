//! Consumer groups, Redis 8.2–8.8, against the real binary: XACKDEL, XDELEX, reference-aware
//! trimming (KEEPREF / DELREF / ACKED on XADD and XTRIM), XREADGROUP ... CLAIM and XNACK
//! (reference §2.1, §2.5, §2.7, §2.9, §2.10, §2.15, §3.1, §3.2).
//!
//! - The worked examples of the reference, as exact reply bytes where the reply does not
//!   depend on the clock (CLAIM items carry idle times: those are parsed and checked).
//! - A poison message: NACKed with FAIL three times, claimed each time by another consumer
//!   with the delivery count rising, then FATAL keeps it out of normal delivery.
//! - A model test (proptest): random XADD / XREADGROUP / XACK / XACKDEL / XDELEX / XTRIM /
//!   XNACK sequences on random node sizes, checked after every step against an in-test model
//!   of the entries, nodes, group cursors and PELs, plus two invariants read back from the
//!   server alone: ACKED never deletes an entry some group references, and after DELREF no
//!   PEL names an entry that operation deleted.

mod common;

use common::reply::{arr, bulk, err, int};

use common::{Raw, encode_cmd, escape, start_server, start_server_with, wait_blocked};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

// ---- expected-reply builders (exact RESP2 bytes) -------------------------------------

/// An array of integers (XACKDEL / XDELEX per-ID results).
fn ints(ns: &[i64]) -> Vec<u8> {
    arr(&ns.iter().map(|&n| int(n)).collect::<Vec<_>>())
}

/// One extended XPENDING item: `[id, consumer, idle, deliveries]`.
fn pending(id: &str, consumer: &str, idle: i64, count: i64) -> Vec<u8> {
    arr(&[bulk(id), bulk(consumer), int(idle), int(count)])
}

const OK: &[u8] = b"+OK\r\n";
const NIL_ARRAY: &[u8] = b"*-1\r\n";
const SYNTAX: &str = "ERR syntax error";
const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";
const NOT_INT: &str = "ERR value is not an integer or out of range";
const LLONG_MAX: i64 = i64::MAX;

/// Sends each command and compares the reply with the expected bytes. Idle times in
/// extended XPENDING replies depend on the clock: any value in `0..60_000` reads as 0
/// (NACKed entries show -1, compared as is).
fn check(raw: &mut Raw, cases: &[(&[&str], Vec<u8>)]) {
    for (args, want) in cases {
        let mut got = raw.cmd_str(args);
        if args[0].eq_ignore_ascii_case("XPENDING") && args.len() >= 6 && got.starts_with(b"*") {
            got = raw_bytes(&zero_idle(V::parse(&got)));
        }
        assert_eq!(
            escape(&got),
            escape(want),
            "reply to {args:?} differs (left: got, right: expected)"
        );
    }
}

/// Sends commands whose replies do not matter (setup), asserting none is an error.
fn run(raw: &mut Raw, cmds: &[&[&str]]) {
    for args in cmds {
        let got = raw.cmd_str(args);
        assert!(!got.starts_with(b"-"), "{args:?} failed: {}", escape(&got));
    }
}

// ---- a small RESP2 reader, for replies that carry times -----------------------------

/// A parsed RESP2 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
enum V {
    Int(i64),
    Str(Vec<u8>),
    Nil,
    Arr(Vec<V>),
    Simple(String),
    Err(String),
}

impl V {
    fn parse(buf: &[u8]) -> V {
        let mut pos = 0;
        let v = V::parse_at(buf, &mut pos);
        assert_eq!(pos, buf.len(), "one reply: {}", escape(buf));
        v
    }

    fn parse_at(buf: &[u8], pos: &mut usize) -> V {
        let end = *pos
            + buf[*pos..]
                .windows(2)
                .position(|w| w == b"\r\n")
                .expect("CRLF");
        let line = std::str::from_utf8(&buf[*pos + 1..end]).expect("utf-8 header");
        let kind = buf[*pos];
        *pos = end + 2;
        match kind {
            b':' => V::Int(line.parse().expect("integer")),
            b'+' => V::Simple(line.to_string()),
            b'-' => V::Err(line.to_string()),
            b'$' => {
                let n: i64 = line.parse().expect("bulk length");
                if n < 0 {
                    return V::Nil;
                }
                let s = buf[*pos..*pos + n as usize].to_vec();
                *pos += n as usize + 2;
                V::Str(s)
            }
            b'*' => {
                let n: i64 = line.parse().expect("array length");
                if n < 0 {
                    return V::Nil;
                }
                V::Arr((0..n).map(|_| V::parse_at(buf, pos)).collect())
            }
            other => panic!("unexpected RESP type {:?}", other as char),
        }
    }

    fn arr(&self) -> &[V] {
        match self {
            V::Arr(items) => items,
            other => panic!("expected an array, got {other:?}"),
        }
    }

    fn int(&self) -> i64 {
        match self {
            V::Int(n) => *n,
            other => panic!("expected an integer, got {other:?}"),
        }
    }

    fn str(&self) -> String {
        match self {
            V::Str(s) => String::from_utf8_lossy(s).into_owned(),
            other => panic!("expected a bulk string, got {other:?}"),
        }
    }

    /// A flat `k1 v1 k2 v2 ...` array's value for `key`.
    fn field(&self, key: &str) -> &V {
        self.arr()
            .chunks(2)
            .find(|kv| kv[0] == V::Str(key.as_bytes().to_vec()))
            .map(|kv| &kv[1])
            .unwrap_or_else(|| panic!("no field {key} in {self:?}"))
    }
}

/// An extended XPENDING reply with small idle times set to 0.
fn zero_idle(v: V) -> V {
    let items = v
        .arr()
        .iter()
        .map(|p| {
            let mut p = p.arr().to_vec();
            let idle = p[2].int();
            assert!(idle < 60_000, "idle {idle} in {p:?}");
            if idle >= 0 {
                p[2] = V::Int(0);
            }
            V::Arr(p)
        })
        .collect();
    V::Arr(items)
}

fn query(raw: &mut Raw, args: &[&str]) -> V {
    V::parse(&raw.cmd_str(args))
}

/// One CLAIM-mode XREADGROUP item: `(id, fields, idle ms, deliveries before this one)`.
fn claim_items(reply: &V, key: &str) -> Vec<(String, Vec<String>, i64, i64)> {
    let streams = reply.arr();
    assert_eq!(streams.len(), 1, "{reply:?}");
    assert_eq!(streams[0].arr()[0].str(), key);
    streams[0].arr()[1]
        .arr()
        .iter()
        .map(|item| {
            let item = item.arr();
            assert_eq!(item.len(), 4, "CLAIM items have 4 elements: {item:?}");
            let fields = item[1].arr().iter().map(V::str).collect();
            (item[0].str(), fields, item[2].int(), item[3].int())
        })
        .collect()
}

/// The IDs of an XRANGE reply.
fn range_ids(raw: &mut Raw, key: &str) -> Vec<String> {
    query(raw, &["XRANGE", key, "-", "+"])
        .arr()
        .iter()
        .map(|e| e.arr()[0].str())
        .collect()
}

// ---- XACKDEL ---------------------------------------------------------------------------

#[test]
fn xackdel_per_id_results_and_policies() {
    let server = start_server();
    let mut r = server.raw();
    run(
        &mut r,
        &[
            &["XADD", "s", "1-1", "f", "a"],
            &["XADD", "s", "2-1", "f", "b"],
            &["XADD", "s", "3-1", "f", "c"],
            &["XGROUP", "CREATE", "s", "g1", "0"],
            &["XGROUP", "CREATE", "s", "g2", "0"],
            &["XREADGROUP", "GROUP", "g1", "c", "STREAMS", "s", ">"],
        ],
    );
    check(
        &mut r,
        &[
            // KEEPREF (the default): acked and deleted although g2 never read it.
            (&["XACKDEL", "s", "g1", "IDS", "1", "1-1"], ints(&[1])),
            (&["XLEN", "s"], int(2)),
            // ACKED: acked, but g2 has not read 2-1 yet, so it stays.
            (
                &["XACKDEL", "s", "g1", "ACKED", "IDS", "1", "2-1"],
                ints(&[2]),
            ),
            (&["XLEN", "s"], int(2)),
            (
                &["XPENDING", "s", "g1", "-", "+", "10"],
                arr(&[pending("3-1", "c", 0, 1)]),
            ),
            // Not pending any more (acked above), and never existed: -1 both.
            (
                &["XACKDEL", "s", "g1", "IDS", "2", "2-1", "9-9"],
                ints(&[-1, -1]),
            ),
        ],
    );
    // g2 reads 2-1 and 3-1; acking 2-1 there with ACKED now deletes it: nobody holds it.
    run(
        &mut r,
        &[&["XREADGROUP", "GROUP", "g2", "c", "STREAMS", "s", ">"]],
    );
    check(
        &mut r,
        &[
            (
                &["XACKDEL", "s", "g2", "IDS", "1", "2-1", "ACKED"],
                ints(&[1]),
            ),
            (&["XLEN", "s"], int(1)),
            // DELREF: 3-1 goes from the stream and from g2's PEL as well.
            (
                &["XACKDEL", "s", "g1", "DELREF", "IDS", "1", "3-1"],
                ints(&[1]),
            ),
            (&["XLEN", "s"], int(0)),
            (
                &["XPENDING", "s", "g2"],
                arr(&[
                    int(0),
                    b"$-1\r\n".to_vec(),
                    b"$-1\r\n".to_vec(),
                    NIL_ARRAY.to_vec(),
                ]),
            ),
        ],
    );
    // Deleting raises max-deleted-entry-id (trimming does not).
    let info = query(&mut r, &["XINFO", "STREAM", "s"]);
    assert_eq!(info.field("max-deleted-entry-id").str(), "3-1");
    assert_eq!(info.field("recorded-first-entry-id").str(), "0-0");
}

#[test]
fn xackdel_counts_an_entry_already_gone_as_deleted() {
    let server = start_server();
    let mut r = server.raw();
    run(
        &mut r,
        &[
            &["XADD", "s", "1-1", "f", "a"],
            &["XADD", "s", "2-1", "f", "b"],
            &["XGROUP", "CREATE", "s", "g", "0"],
            &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"],
            &["XDEL", "s", "1-1"],
        ],
    );
    check(
        &mut r,
        &[
            // Pending with its payload gone: acked, answered 1.
            (
                &["XACKDEL", "s", "g", "IDS", "2", "1-1", "1-1"],
                ints(&[1, -1]),
            ),
            // Duplicates: the second occurrence is no longer pending.
            (
                &["XACKDEL", "s", "g", "IDS", "2", "2-1", "2-1"],
                ints(&[1, -1]),
            ),
            (&["XLEN", "s"], int(0)),
        ],
    );
}

#[test]
fn xackdel_errors_and_missing_key_or_group() {
    let server = start_server();
    let mut r = server.raw();
    run(
        &mut r,
        &[
            &["XADD", "s", "1-1", "f", "a"],
            &["XGROUP", "CREATE", "s", "g", "0"],
            &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"],
        ],
    );
    let numids = err("ERR Number of IDs must be a positive integer");
    let mismatch = err("ERR The `numids` parameter must match the number of arguments");
    check(
        &mut r,
        &[
            // Missing key or group: -1 per ID, the IDs are not even parsed.
            (
                &["XACKDEL", "nokey", "g", "IDS", "2", "bad", "1-1"],
                ints(&[-1, -1]),
            ),
            (&["XACKDEL", "s", "nogroup", "IDS", "1", "bad"], ints(&[-1])),
            // ... but the options are.
            (
                &["XACKDEL", "nokey", "g", "IDS", "0", "1-1"],
                numids.clone(),
            ),
            (&["XACKDEL", "s", "g", "IDS", "0", "1-1"], numids.clone()),
            (&["XACKDEL", "s", "g", "IDS", "-1", "1-1"], numids.clone()),
            (&["XACKDEL", "s", "g", "IDS", "one", "1-1"], numids.clone()),
            (&["XACKDEL", "s", "g", "IDS", "2", "1-1"], mismatch.clone()),
            (
                &["XACKDEL", "s", "g", "ACKED", "IDS", "1"],
                mismatch.clone(),
            ),
            (
                &["XACKDEL", "s", "g", "IDS", "1", "1-1", "2-1"],
                err(SYNTAX),
            ),
            (
                &["XACKDEL", "s", "g", "ACKED", "DELREF", "IDS", "1", "1-1"],
                err(SYNTAX),
            ),
            (
                &["XACKDEL", "s", "g", "IDS", "1", "1-1", "ACKED", "ACKED"],
                err(SYNTAX),
            ),
            (
                &["XACKDEL", "s", "g", "NOPE", "IDS", "1", "1-1"],
                err(SYNTAX),
            ),
            (
                &["XACKDEL", "s", "g", "IDS", "1"],
                err("ERR wrong number of arguments for 'xackdel' command"),
            ),
            // IDs: strict, all or nothing.
            (
                &["XACKDEL", "s", "g", "IDS", "2", "1-1", "+"],
                err(INVALID_ID),
            ),
            (&["XLEN", "s"], int(1)),
            (
                &["XPENDING", "s", "g", "-", "+", "10"],
                arr(&[pending("1-1", "c", 0, 1)]),
            ),
            (
                &["XACKDEL", "s", "g", "KEEPREF", "IDS", "1", "1"],
                ints(&[-1]),
            ),
        ],
    );
}

// ---- XDELEX ----------------------------------------------------------------------------

#[test]
fn xdelex_per_id_results_and_policies() {
    let server = start_server();
    let mut r = server.raw();
    for i in 1..=5 {
        run(&mut r, &[&["XADD", "d", &format!("{i}-1"), "f", "v"]]);
    }
    check(
        &mut r,
        &[
            // No groups: nothing is referenced, so ACKED deletes (the docs say 2; the code 1).
            (&["XDELEX", "d", "ACKED", "IDS", "1", "1-1"], ints(&[1])),
            (&["XDELEX", "d", "IDS", "2", "1-1", "2-1"], ints(&[-1, 1])),
            (&["XGROUP", "CREATE", "d", "g", "0"], OK.to_vec()),
            // Not read by g yet: referenced.
            (&["XDELEX", "d", "ACKED", "IDS", "1", "3-1"], ints(&[2])),
            (
                &[
                    "XREADGROUP",
                    "GROUP",
                    "g",
                    "c",
                    "COUNT",
                    "1",
                    "STREAMS",
                    "d",
                    ">",
                ],
                arr(&[arr(&[
                    bulk("d"),
                    arr(&[arr(&[bulk("3-1"), arr(&[bulk("f"), bulk("v")])])]),
                ])]),
            ),
            // 3-1 pending, 4-1 unread; an ID after everything is "referenced" too.
            (
                &["XDELEX", "d", "IDS", "3", "3-1", "4-1", "99-1", "ACKED"],
                ints(&[2, 2, 2]),
            ),
            // KEEPREF deletes and leaves g's reference dangling.
            (&["XDELEX", "d", "KEEPREF", "IDS", "1", "3-1"], ints(&[1])),
            (
                &["XPENDING", "d", "g", "-", "+", "10"],
                arr(&[pending("3-1", "c", 0, 1)]),
            ),
            (
                &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "d", "0"],
                arr(&[arr(&[
                    bulk("d"),
                    arr(&[arr(&[bulk("3-1"), NIL_ARRAY.to_vec()])]),
                ])]),
            ),
            // DELREF drops the reference though the entry is gone (-1).
            (&["XDELEX", "d", "DELREF", "IDS", "1", "3-1"], ints(&[-1])),
            (&["XPENDING", "d", "g", "-", "+", "10"], b"*0\r\n".to_vec()),
            (&["XDELEX", "d", "ACKED", "IDS", "1", "3-1"], ints(&[-1])),
            (&["XLEN", "d"], int(2)),
            // Missing key: -1 per ID without parsing them; options are parsed.
            (
                &["XDELEX", "nokey", "IDS", "2", "bad", "1-1"],
                ints(&[-1, -1]),
            ),
            (
                &["XDELEX", "nokey", "IDS", "0", "bad"],
                err("ERR Number of IDs must be a positive integer"),
            ),
            (&["XDELEX", "d", "IDS", "2", "4-1", "bad"], err(INVALID_ID)),
            (&["XDELEX", "d", "IDS", "1", "4-1", "5-1"], err(SYNTAX)),
            (
                &["XDELEX", "d", "DELREF", "ACKED", "IDS", "1", "4-1"],
                err(SYNTAX),
            ),
            (
                &["XDELEX", "d", "IDS", "1"],
                err("ERR wrong number of arguments for 'xdelex' command"),
            ),
            (&["XLEN", "d"], int(2)),
        ],
    );
    let info = query(&mut r, &["XINFO", "STREAM", "d"]);
    assert_eq!(info.field("max-deleted-entry-id").str(), "3-1");
    assert_eq!(info.field("recorded-first-entry-id").str(), "4-1");
}

// ---- reference-aware trimming ---------------------------------------------------------

#[test]
fn xtrim_acked_delref_keepref_reference_examples() {
    let server = start_server_with(&["--stream-node-max-entries", "2"]);
    let mut r = server.raw();
    // Reference §3.1: 2-entry nodes, everything read, acks on 1, 2 and 4:
    // `XTRIM MINID ~ 6-0 ACKED` removes exactly those three.
    for i in 1..=6 {
        run(&mut r, &[&["XADD", "t", &format!("{i}-0"), "f", "v"]]);
    }
    run(
        &mut r,
        &[
            &["XGROUP", "CREATE", "t", "g", "0"],
            &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "t", ">"],
        ],
    );
    check(
        &mut r,
        &[
            (&["XACK", "t", "g", "1-0", "2-0", "4-0"], int(3)),
            (&["XTRIM", "t", "MINID", "~", "6-0", "ACKED"], int(3)),
            (&["XLEN", "t"], int(3)),
            // Nothing more is unreferenced.
            (&["XTRIM", "t", "MINID", "~", "6-0", "ACKED"], int(0)),
            // With ACKED, `~` also works inside the node holding the threshold ([5, 6]).
            (&["XACK", "t", "g", "5-0"], int(1)),
            (&["XTRIM", "t", "MINID", "~", "6-0", "ACKED"], int(1)),
        ],
    );
    assert_eq!(range_ids(&mut r, "t"), ["3-0", "6-0"]);
    // A NACKed entry is still referenced.
    check(
        &mut r,
        &[
            (&["XNACK", "t", "g", "FAIL", "IDS", "1", "3-0"], int(1)),
            (&["XTRIM", "t", "MAXLEN", "0", "ACKED"], int(0)),
            (&["XACK", "t", "g", "3-0"], int(1)),
            (&["XTRIM", "t", "MAXLEN", "0", "ACKED"], int(1)),
            (&["XLEN", "t"], int(1)),
        ],
    );
    let info = query(&mut r, &["XINFO", "STREAM", "t"]);
    assert_eq!(
        info.field("max-deleted-entry-id").str(),
        "0-0",
        "trims don't raise it"
    );

    // The same example with `~` and KEEPREF removes only whole nodes: [1, 2].
    for i in 1..=6 {
        run(&mut r, &[&["XADD", "k", &format!("{i}-0"), "f", "v"]]);
    }
    run(
        &mut r,
        &[
            &["XGROUP", "CREATE", "k", "g", "0"],
            &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "k", ">"],
        ],
    );
    check(
        &mut r,
        &[
            (&["XTRIM", "k", "MINID", "~", "6-0", "KEEPREF"], int(4)),
            (&["XTRIM", "k", "MINID", "~", "6-0"], int(0)),
        ],
    );
    // ... leaving the group's references in place.
    assert_eq!(query(&mut r, &["XPENDING", "k", "g"]).arr()[0].int(), 6);

    // DELREF: trimmed IDs leave every PEL.
    for i in 1..=4 {
        run(&mut r, &[&["XADD", "v", &format!("{i}-0"), "f", "v"]]);
    }
    run(
        &mut r,
        &[
            &["XGROUP", "CREATE", "v", "g1", "0"],
            &["XGROUP", "CREATE", "v", "g2", "0"],
            &["XREADGROUP", "GROUP", "g1", "c", "STREAMS", "v", ">"],
            &["XREADGROUP", "GROUP", "g2", "c", "STREAMS", "v", ">"],
        ],
    );
    check(
        &mut r,
        &[
            (&["XTRIM", "v", "MINID", "3-0", "DELREF"], int(2)),
            (
                &["XPENDING", "v", "g2", "-", "+", "10"],
                arr(&[pending("3-0", "c", 0, 1), pending("4-0", "c", 0, 1)]),
            ),
            (
                &["XPENDING", "v", "g1", "-", "+", "10"],
                arr(&[pending("3-0", "c", 0, 1), pending("4-0", "c", 0, 1)]),
            ),
            // XADD's trim clause takes the policy too: 3, 4 are pending and 5 unread.
            (
                &["XADD", "v", "ACKED", "MAXLEN", "0", "5-0", "f", "v"],
                bulk("5-0"),
            ),
            (&["XLEN", "v"], int(3)),
            (
                &["XADD", "v", "MAXLEN", "=", "1", "DELREF", "6-0", "f", "v"],
                bulk("6-0"),
            ),
            (&["XLEN", "v"], int(1)),
            (&["XPENDING", "v", "g1", "-", "+", "10"], b"*0\r\n".to_vec()),
        ],
    );
}

/// The bytes of a parsed reply, for comparing a reply with itself once checked.
fn raw_bytes(v: &V) -> Vec<u8> {
    match v {
        V::Int(n) => int(*n),
        V::Str(s) => bulk(&String::from_utf8_lossy(s)),
        V::Nil => b"$-1\r\n".to_vec(),
        V::Arr(items) => arr(&items.iter().map(raw_bytes).collect::<Vec<_>>()),
        V::Simple(s) => format!("+{s}\r\n").into_bytes(),
        V::Err(s) => err(s),
    }
}

#[test]
fn acked_and_delref_without_groups() {
    let server = start_server_with(&["--stream-node-max-entries", "2"]);
    let mut r = server.raw();
    for key in ["a", "b", "c"] {
        for i in 1..=4 {
            run(&mut r, &[&["XADD", key, &format!("{i}-0"), "f", "v"]]);
        }
    }
    check(
        &mut r,
        &[
            // No groups: nothing is referenced; ACKED and DELREF delete like KEEPREF, but
            // `~` is whole-node only under KEEPREF.
            (&["XTRIM", "a", "MINID", "~", "2-0"], int(0)),
            (&["XTRIM", "b", "MINID", "~", "2-0", "ACKED"], int(1)),
            (&["XTRIM", "c", "MINID", "~", "2-0", "DELREF"], int(1)),
            (&["XTRIM", "a", "MAXLEN", "0", "ACKED"], int(4)),
            (
                &["XDELEX", "b", "ACKED", "IDS", "2", "2-0", "3-0"],
                ints(&[1, 1]),
            ),
            (&["XLEN", "b"], int(1)),
        ],
    );
}

// ---- XREADGROUP ... CLAIM ---------------------------------------------------------------

#[test]
fn claim_serves_nacked_then_oldest_then_new_with_four_element_items() {
    let server = start_server();
    let mut r = server.raw();
    run(
        &mut r,
        &[
            &["XADD", "c", "1-1", "f", "a"],
            &["XADD", "c", "2-1", "f", "b"],
            &["XADD", "c", "3-1", "f", "c"],
            &["XGROUP", "CREATE", "c", "g", "0"],
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "alice",
                "COUNT",
                "1",
                "STREAMS",
                "c",
                ">",
            ],
        ],
    );
    std::thread::sleep(Duration::from_millis(20));
    run(
        &mut r,
        &[
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "alice",
                "COUNT",
                "1",
                "STREAMS",
                "c",
                ">",
            ],
            &["XNACK", "c", "g", "FAIL", "IDS", "1", "2-1"],
            &["XADD", "c", "4-1", "f", "d"],
        ],
    );
    // min-idle 10 000 ms: 1-1 is too young; the NACKed 2-1 is taken regardless.
    // COUNT caps claimed + new: 2-1 then 3-1.
    let got = query(
        &mut r,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "bob",
            "CLAIM",
            "10000",
            "COUNT",
            "2",
            "STREAMS",
            "c",
            ">",
        ],
    );
    let items = claim_items(&got, "c");
    assert_eq!(items.len(), 2, "{got:?}");
    assert_eq!(
        (items[0].0.as_str(), items[0].1.clone()),
        ("2-1", vec!["f".into(), "b".into()])
    );
    assert!(
        items[0].2 > 1_000_000,
        "a NACKed entry's idle counts from 0: {}",
        items[0].2
    );
    assert_eq!(items[0].3, 1, "deliveries before this claim");
    assert_eq!(&items[1].0, "3-1");
    assert_eq!((items[1].2, items[1].3), (0, 0), "new entries carry 0 0");

    // CLAIM 0: everything pending is idle enough: oldest delivery first (1-1 by alice,
    // then 2-1 and 3-1 by bob), then the new 4-1.
    std::thread::sleep(Duration::from_millis(5));
    let got = query(
        &mut r,
        &[
            "XREADGROUP",
            "CLAIM",
            "0",
            "GROUP",
            "g",
            "carol",
            "STREAMS",
            "c",
            ">",
        ],
    );
    let items = claim_items(&got, "c");
    let order: Vec<&str> = items.iter().map(|i| i.0.as_str()).collect();
    assert_eq!(order, ["1-1", "2-1", "3-1", "4-1"], "{got:?}");
    assert!(
        items[0].2 >= 20,
        "1-1 was delivered 20+ ms ago: {}",
        items[0].2
    );
    let counts: Vec<i64> = items.iter().map(|i| i.3).collect();
    assert_eq!(counts, [1, 2, 1, 0]);
    assert_eq!((items[3].2, items[3].3), (0, 0));
    check(
        &mut r,
        &[(
            &["XPENDING", "c", "g", "-", "+", "10"],
            arr(&[
                pending("1-1", "carol", 0, 2),
                pending("2-1", "carol", 0, 3),
                pending("3-1", "carol", 0, 2),
                pending("4-1", "carol", 0, 1),
            ]),
        )],
    );

    // NOACK does not apply to claimed entries: they stay pending, now owned by dave; only
    // the new 5-1 is delivered without a pending entry.
    run(&mut r, &[&["XADD", "c", "5-1", "f", "e"]]);
    let got = query(
        &mut r,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "dave",
            "NOACK",
            "CLAIM",
            "0",
            "STREAMS",
            "c",
            ">",
        ],
    );
    let order: Vec<String> = claim_items(&got, "c").into_iter().map(|i| i.0).collect();
    assert_eq!(order, ["1-1", "2-1", "3-1", "4-1", "5-1"]);
    let summary = query(&mut r, &["XPENDING", "c", "g"]);
    assert_eq!(summary.arr()[0].int(), 4);
    assert_eq!(
        raw_bytes(&summary.arr()[3]),
        arr(&[arr(&[bulk("dave"), bulk("4")])])
    );

    // Nothing claimable and nothing new: a null array; new entries alone are still
    // 4-element items under CLAIM.
    check(
        &mut r,
        &[(
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "erin",
                "CLAIM",
                "60000",
                "STREAMS",
                "c",
                ">",
            ],
            NIL_ARRAY.to_vec(),
        )],
    );
    run(&mut r, &[&["XADD", "c", "6-1", "f", "g"]]);
    check(
        &mut r,
        &[(
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "erin",
                "CLAIM",
                "60000",
                "STREAMS",
                "c",
                ">",
            ],
            arr(&[arr(&[
                bulk("c"),
                arr(&[arr(&[
                    bulk("6-1"),
                    arr(&[bulk("f"), bulk("g")]),
                    int(0),
                    int(0),
                ])]),
            ])]),
        )],
    );
}

#[test]
fn claim_skips_pending_entries_whose_payload_is_gone() {
    let server = start_server();
    let mut r = server.raw();
    run(
        &mut r,
        &[
            &["XADD", "c", "1-1", "f", "a"],
            &["XADD", "c", "2-1", "f", "b"],
            &["XGROUP", "CREATE", "c", "g", "0"],
            &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "c", ">"],
            &["XDEL", "c", "1-1"],
        ],
    );
    let got = query(
        &mut r,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "bob",
            "CLAIM",
            "0",
            "STREAMS",
            "c",
            ">",
        ],
    );
    let items = claim_items(&got, "c");
    assert_eq!(items.len(), 1);
    assert_eq!((items[0].0.as_str(), items[0].3), ("2-1", 1));
    // Skipped, not removed: 1-1 is still alice's.
    check(
        &mut r,
        &[(
            &["XPENDING", "c", "g", "-", "+", "10", "alice"],
            arr(&[pending("1-1", "alice", 0, 1)]),
        )],
    );
}

// ---- XNACK ----------------------------------------------------------------------------

#[test]
fn xnack_modes_retrycount_and_what_others_see() {
    let server = start_server();
    let mut r = server.raw();
    run(
        &mut r,
        &[
            &["XADD", "n", "1-1", "f", "a"],
            &["XADD", "n", "2-1", "f", "b"],
            &["XADD", "n", "3-1", "f", "c"],
            &["XGROUP", "CREATE", "n", "g", "0"],
            &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "n", ">"],
            // A history read: every delivery count becomes 2.
            &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "n", "0"],
        ],
    );
    check(
        &mut r,
        &[
            (&["XNACK", "n", "g", "SILENT", "IDS", "1", "1-1"], int(1)),
            (&["XNACK", "n", "g", "fail", "IDS", "1", "2-1"], int(1)),
            (&["XNACK", "n", "g", "Fatal", "IDS", "1", "3-1"], int(1)),
            (
                &["XPENDING", "n", "g", "-", "+", "10"],
                arr(&[
                    pending("1-1", "", -1, 1),
                    pending("2-1", "", -1, 2),
                    pending("3-1", "", -1, LLONG_MAX),
                ]),
            ),
            // Duplicates count each time; RETRYCOUNT overrides the mode; not pending: skipped.
            (
                &[
                    "XNACK",
                    "n",
                    "g",
                    "SILENT",
                    "RETRYCOUNT",
                    "7",
                    "IDS",
                    "3",
                    "1-1",
                    "1-1",
                    "9-9",
                ],
                int(2),
            ),
            (&["XNACK", "n", "g", "SILENT", "IDS", "1", "1-1"], int(1)),
            (
                &[
                    "XNACK",
                    "n",
                    "g",
                    "SILENT",
                    "IDS",
                    "1",
                    "2-1",
                    "RETRYCOUNT",
                    "0",
                ],
                int(1),
            ),
            (&["XNACK", "n", "g", "SILENT", "IDS", "1", "2-1"], int(1)),
            (
                &["XPENDING", "n", "g", "-", "+", "10"],
                arr(&[
                    pending("1-1", "", -1, 6),
                    pending("2-1", "", -1, 0),
                    pending("3-1", "", -1, LLONG_MAX),
                ]),
            ),
            // alice no longer owns them: her history is empty and she has 0 pending.
            (
                &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "n", "0"],
                arr(&[arr(&[bulk("n"), b"*0\r\n".to_vec()])]),
            ),
            (
                &["XPENDING", "n", "g", "-", "+", "10", "alice"],
                b"*0\r\n".to_vec(),
            ),
            // XACK takes NACKed entries too.
            (&["XACK", "n", "g", "2-1"], int(1)),
        ],
    );
    let consumers = query(&mut r, &["XINFO", "CONSUMERS", "n", "g"]);
    assert_eq!(consumers.arr().len(), 1, "XNACK creates no consumer");
    assert_eq!(consumers.arr()[0].field("pending").int(), 0);
    let full = query(&mut r, &["XINFO", "STREAM", "n", "FULL"]);
    let group = &full.field("groups").arr()[0];
    assert_eq!(group.field("pel-count").int(), 2);
    assert_eq!(group.field("nacked-count").int(), 2);
    for p in group.field("pending").arr() {
        assert_eq!(p.arr()[1].str(), "", "unowned");
        assert_eq!(p.arr()[2].int(), 0, "delivery time 0: {p:?}");
    }
    // XDEL keeps NACKed entries: ghosts until claimed or acked.
    check(&mut r, &[(&["XDEL", "n", "1-1"], int(1))]);
    assert_eq!(query(&mut r, &["XPENDING", "n", "g"]).arr()[0].int(), 2);
}

#[test]
fn xnack_then_claim_serves_the_nack_zone_in_nack_order() {
    let server = start_server();
    let mut r = server.raw();
    run(
        &mut r,
        &[
            &["XADD", "q", "1-1", "f", "a"],
            &["XADD", "q", "2-1", "f", "b"],
            &["XADD", "q", "3-1", "f", "c"],
            &["XADD", "q", "4-1", "f", "d"],
            &["XGROUP", "CREATE", "q", "g", "0"],
            &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "q", ">"],
        ],
    );
    check(
        &mut r,
        &[
            (
                &["XNACK", "q", "g", "FAIL", "IDS", "3", "2-1", "3-1", "1-1"],
                int(3),
            ),
            // A re-NACK moves 2-1 to the zone's tail: FIFO by last NACK.
            (&["XNACK", "q", "g", "FAIL", "IDS", "1", "2-1"], int(1)),
        ],
    );
    // Even with a huge min-idle the NACK zone is served, in order; the owned 4-1 is not.
    let got = query(
        &mut r,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "bob",
            "CLAIM",
            "3600000",
            "STREAMS",
            "q",
            ">",
        ],
    );
    let order: Vec<String> = claim_items(&got, "q").into_iter().map(|i| i.0).collect();
    assert_eq!(order, ["3-1", "1-1", "2-1"]);
    let summary = query(&mut r, &["XPENDING", "q", "g"]);
    assert_eq!(
        raw_bytes(&summary.arr()[3]),
        arr(&[
            arr(&[bulk("alice"), bulk("1")]),
            arr(&[bulk("bob"), bulk("3")])
        ])
    );
}

#[test]
fn xnack_force_on_unknown_ids() {
    let server = start_server();
    let mut r = server.raw();
    run(
        &mut r,
        &[
            &["XADD", "f", "1-1", "f", "a"],
            &["XADD", "f", "2-1", "f", "b"],
            &["XADD", "f", "3-1", "f", "c"],
            &["XGROUP", "CREATE", "f", "g", "$"],
        ],
    );
    check(
        &mut r,
        &[
            // Not pending, no FORCE: skipped.
            (
                &["XNACK", "f", "g", "FAIL", "IDS", "2", "1-1", "9-9"],
                int(0),
            ),
            // FORCE creates an unowned entry for 1-1 (count 0); 9-9 does not exist: skipped.
            (
                &["XNACK", "f", "g", "FAIL", "IDS", "2", "1-1", "9-9", "FORCE"],
                int(1),
            ),
            // FORCE before IDS; FATAL gives LLONG_MAX; RETRYCOUNT sets the count.
            (
                &["XNACK", "f", "g", "FATAL", "FORCE", "IDS", "1", "2-1"],
                int(1),
            ),
            (
                &[
                    "XNACK",
                    "f",
                    "g",
                    "SILENT",
                    "FORCE",
                    "RETRYCOUNT",
                    "4",
                    "IDS",
                    "2",
                    "3-1",
                    "5-5",
                ],
                int(1),
            ),
            (
                &["XPENDING", "f", "g", "-", "+", "10"],
                arr(&[
                    pending("1-1", "", -1, 0),
                    pending("2-1", "", -1, LLONG_MAX),
                    pending("3-1", "", -1, 4),
                ]),
            ),
        ],
    );
    let groups = query(&mut r, &["XINFO", "GROUPS", "f"]);
    assert_eq!(
        groups.arr()[0].field("consumers").int(),
        0,
        "no consumer created"
    );
    assert_eq!(groups.arr()[0].field("pending").int(), 3);
    let got = query(
        &mut r,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "bob",
            "CLAIM",
            "0",
            "STREAMS",
            "f",
            ">",
        ],
    );
    let items = claim_items(&got, "f");
    let seen: Vec<(&str, i64)> = items.iter().map(|i| (i.0.as_str(), i.3)).collect();
    assert_eq!(seen, [("1-1", 0), ("2-1", LLONG_MAX), ("3-1", 4)]);
    check(
        &mut r,
        &[(
            &["XPENDING", "f", "g", "-", "+", "10"],
            arr(&[
                pending("1-1", "bob", 0, 1),
                pending("2-1", "bob", 0, LLONG_MAX),
                pending("3-1", "bob", 0, 5),
            ]),
        )],
    );
}

#[test]
fn xnack_errors_in_redis_order() {
    let server = start_server();
    let mut r = server.raw();
    run(
        &mut r,
        &[
            &["XADD", "e", "1-1", "f", "a"],
            &["XGROUP", "CREATE", "e", "g", "0"],
            &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "e", ">"],
        ],
    );
    check(
        &mut r,
        &[
            (
                &["XNACK", "nokey", "g", "BAD", "IDS", "1", "x"],
                err("NOGROUP No such key 'nokey' or consumer group 'g'"),
            ),
            (
                &["XNACK", "e", "nog", "BAD", "IDS", "1", "x"],
                err("NOGROUP No such key 'e' or consumer group 'nog'"),
            ),
            (
                &["XNACK", "e", "g", "BAD", "IDS", "1", "x"],
                err("ERR mode must be SILENT, FAIL, or FATAL"),
            ),
            (
                &["XNACK", "e", "g", "FAIL", "IDS", "0", "1-1"],
                err("ERR numids must be a positive integer"),
            ),
            (
                &["XNACK", "e", "g", "FAIL", "IDS", "-2", "1-1"],
                err("ERR numids must be a positive integer"),
            ),
            (
                &["XNACK", "e", "g", "FAIL", "IDS", "3", "1-1", "2-1"],
                err("ERR number of IDs doesn't match numids"),
            ),
            (
                &[
                    "XNACK",
                    "e",
                    "g",
                    "FAIL",
                    "IDS",
                    "1",
                    "1-1",
                    "RETRYCOUNT",
                    "-1",
                ],
                err("ERR Invalid RETRYCOUNT value, must be >= 0"),
            ),
            (
                &[
                    "XNACK",
                    "e",
                    "g",
                    "FAIL",
                    "IDS",
                    "1",
                    "1-1",
                    "RETRYCOUNT",
                    "1.5",
                ],
                err(NOT_INT),
            ),
            (
                &["XNACK", "e", "g", "FAIL", "IDS", "1", "1-1", "RETRYCOUNT"],
                err("ERR Unrecognized XNACK option 'RETRYCOUNT'"),
            ),
            (
                &["XNACK", "e", "g", "FAIL", "IDS", "1", "1-1", "2-1"],
                err("ERR Unrecognized XNACK option '2-1'"),
            ),
            (
                &["XNACK", "e", "g", "FAIL", "SILENT", "IDS", "1", "1-1"],
                err("ERR Unrecognized XNACK option 'SILENT'"),
            ),
            (
                &["XNACK", "e", "g", "FAIL", "FORCE", "RETRYCOUNT", "1"],
                err("ERR syntax error, expected IDS keyword"),
            ),
            (
                &["XNACK", "e", "g", "FAIL", "IDS", "2", "1-1", "+"],
                err(INVALID_ID),
            ),
            (
                &["XNACK", "e", "g", "FAIL", "IDS", "1"],
                err("ERR wrong number of arguments for 'xnack' command"),
            ),
            // Nothing changed on the way.
            (
                &["XPENDING", "e", "g", "-", "+", "10"],
                arr(&[pending("1-1", "c", 0, 1)]),
            ),
        ],
    );
}

#[test]
fn xnack_wakes_a_blocked_claim_reader() {
    let server = start_server();
    let mut r = server.raw();
    run(
        &mut r,
        &[
            &["XADD", "b", "1-1", "f", "a"],
            &["XGROUP", "CREATE", "b", "g", "0"],
            &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "b", ">"],
        ],
    );
    let mut blocked = server.raw();
    let cmd: Vec<&[u8]> = [
        "XREADGROUP",
        "GROUP",
        "g",
        "bob",
        "BLOCK",
        "5000",
        "CLAIM",
        "600000",
        "STREAMS",
        "b",
        ">",
    ]
    .iter()
    .map(|a| a.as_bytes())
    .collect();
    blocked.send(&encode_cmd(&cmd));
    wait_blocked(&mut r, 1);
    assert!(blocked.pending().is_empty());
    check(
        &mut r,
        &[(&["XNACK", "b", "g", "FAIL", "IDS", "1", "1-1"], int(1))],
    );
    blocked.set_timeout(Duration::from_secs(3));
    let got = V::parse(&blocked.read_reply());
    let items = claim_items(&got, "b");
    assert_eq!(items.len(), 1);
    assert_eq!((items[0].0.as_str(), items[0].3), ("1-1", 1));
    check(
        &mut r,
        &[(
            &["XPENDING", "b", "g", "-", "+", "10"],
            arr(&[pending("1-1", "bob", 0, 2)]),
        )],
    );
}

// ---- a poison message -------------------------------------------------------------------

#[test]
fn poison_message_is_retried_then_parked_by_fatal() {
    let server = start_server();
    let mut r = server.raw();
    run(
        &mut r,
        &[
            &["XADD", "jobs", "1-1", "job", "explode"],
            &["XGROUP", "CREATE", "jobs", "workers", "0"],
        ],
    );
    let first = query(
        &mut r,
        &[
            "XREADGROUP",
            "GROUP",
            "workers",
            "w0",
            "STREAMS",
            "jobs",
            ">",
        ],
    );
    assert_eq!(first.arr()[0].arr()[1].arr()[0].arr()[0].str(), "1-1");
    // Three failures; each time another worker takes it over through CLAIM, and the
    // delivery count it reports (before its own claim) rises: 1, 2, 3.
    let workers = ["w1", "w2", "w3"];
    for (round, worker) in workers.iter().enumerate() {
        check(
            &mut r,
            &[
                (
                    &["XNACK", "jobs", "workers", "FAIL", "IDS", "1", "1-1"],
                    int(1),
                ),
                (
                    &["XPENDING", "jobs", "workers", "-", "+", "10"],
                    arr(&[pending("1-1", "", -1, round as i64 + 1)]),
                ),
            ],
        );
        let got = query(
            &mut r,
            &[
                "XREADGROUP",
                "GROUP",
                "workers",
                worker,
                "CLAIM",
                "60000",
                "STREAMS",
                "jobs",
                ">",
            ],
        );
        let items = claim_items(&got, "jobs");
        assert_eq!(items.len(), 1, "round {round}: {got:?}");
        assert_eq!(items[0].0, "1-1");
        assert_eq!(items[0].1, ["job", "explode"]);
        assert_eq!(
            items[0].3,
            round as i64 + 1,
            "deliveries before round {round}"
        );
        check(
            &mut r,
            &[(
                &["XPENDING", "jobs", "workers", "-", "+", "10"],
                arr(&[pending("1-1", worker, 0, round as i64 + 2)]),
            )],
        );
    }
    // Given up on: FATAL parks it with the largest count.
    check(
        &mut r,
        &[
            (
                &["XNACK", "jobs", "workers", "FATAL", "IDS", "1", "1-1"],
                int(1),
            ),
            (
                &["XPENDING", "jobs", "workers", "-", "+", "10"],
                arr(&[pending("1-1", "", -1, LLONG_MAX)]),
            ),
            // Normal delivery never hands it out again: not new, and no owner's history.
            (
                &[
                    "XREADGROUP",
                    "GROUP",
                    "workers",
                    "w4",
                    "STREAMS",
                    "jobs",
                    ">",
                ],
                NIL_ARRAY.to_vec(),
            ),
            (
                &[
                    "XREADGROUP",
                    "GROUP",
                    "workers",
                    "w3",
                    "STREAMS",
                    "jobs",
                    "0",
                ],
                arr(&[arr(&[bulk("jobs"), b"*0\r\n".to_vec()])]),
            ),
        ],
    );
    // A new job still flows past it.
    run(&mut r, &[&["XADD", "jobs", "2-1", "job", "fine"]]);
    let got = query(
        &mut r,
        &[
            "XREADGROUP",
            "GROUP",
            "workers",
            "w4",
            "STREAMS",
            "jobs",
            ">",
        ],
    );
    let ids: Vec<String> = got.arr()[0].arr()[1]
        .arr()
        .iter()
        .map(|e| e.arr()[0].str())
        .collect();
    assert_eq!(ids, ["2-1"]);
    // A dead-letter handler that claims it sees the saturated count, which stays saturated.
    let got = query(
        &mut r,
        &[
            "XREADGROUP",
            "GROUP",
            "workers",
            "dlq",
            "CLAIM",
            "60000",
            "STREAMS",
            "jobs",
            ">",
        ],
    );
    let items = claim_items(&got, "jobs");
    assert_eq!((items[0].0.as_str(), items[0].3), ("1-1", LLONG_MAX));
    check(
        &mut r,
        &[
            (
                &["XPENDING", "jobs", "workers", "-", "+", "10", "dlq"],
                arr(&[pending("1-1", "dlq", 0, LLONG_MAX)]),
            ),
            (
                &["XACKDEL", "jobs", "workers", "IDS", "1", "1-1"],
                ints(&[1]),
            ),
            (&["XLEN", "jobs"], int(1)),
        ],
    );
}

// ---- the model test ----------------------------------------------------------------------

/// IDs used by the model test are `<n>-1` with `1 <= n <= MAX_ID` (entries are appended in
/// order, so some requested IDs do not exist yet or any more).
const MAX_ID: u64 = 24;
const GROUPS: [&str; 2] = ["g0", "g1"];
const CONSUMERS: [&str; 2] = ["c0", "c1"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pol {
    Keep,
    DelRef,
    Acked,
}

impl Pol {
    fn word(self) -> Option<&'static str> {
        match self {
            Pol::Keep => None,
            Pol::DelRef => Some("DELREF"),
            Pol::Acked => Some("ACKED"),
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum TrimBy {
    MinId(u64),
    MaxLen(u64),
}

#[derive(Debug, Clone)]
enum Op {
    Add,
    Read {
        g: usize,
        c: usize,
        count: usize,
    },
    Ack {
        g: usize,
        ids: Vec<u64>,
    },
    AckDel {
        g: usize,
        pol: Pol,
        ids: Vec<u64>,
    },
    DelEx {
        pol: Pol,
        ids: Vec<u64>,
    },
    Trim {
        pol: Pol,
        approx: bool,
        by: TrimBy,
    },
    Nack {
        g: usize,
        ids: Vec<u64>,
        force: bool,
    },
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let pol = prop_oneof![Just(Pol::Keep), Just(Pol::DelRef), Just(Pol::Acked)];
    let ids = || prop::collection::vec(1..=MAX_ID, 1..4);
    let by = prop_oneof![
        (1..=MAX_ID + 1).prop_map(TrimBy::MinId),
        (0..10u64).prop_map(TrimBy::MaxLen)
    ];
    prop_oneof![
        5 => Just(Op::Add),
        3 => (0..2usize, 0..2usize, 0..4usize).prop_map(|(g, c, count)| Op::Read { g, c, count }),
        1 => (0..2usize, ids()).prop_map(|(g, ids)| Op::Ack { g, ids }),
        2 => (0..2usize, pol.clone(), ids()).prop_map(|(g, pol, ids)| Op::AckDel { g, pol, ids }),
        2 => (pol.clone(), ids()).prop_map(|(pol, ids)| Op::DelEx { pol, ids }),
        2 => (pol, any::<bool>(), by).prop_map(|(pol, approx, by)| Op::Trim { pol, approx, by }),
        1 => (0..2usize, ids(), any::<bool>()).prop_map(|(g, ids, force)| Op::Nack { g, ids, force }),
    ]
}

/// One entry slot in a model node: its ID and whether it is a tombstone.
type Slot = (u64, bool);

/// The model: the stream's nodes (as Redis lays them out: a new node when the tail holds
/// `max_entries` entries, tombstones included; a node goes when its last live entry does),
/// each group's cursor and PEL (ID → owner, `None` once NACKed).
#[derive(Debug, Clone, Default)]
struct Model {
    max_entries: usize,
    nodes: Vec<Vec<Slot>>,
    next: u64,
    last: [u64; 2],
    pel: [BTreeMap<u64, Option<usize>>; 2],
}

impl Model {
    fn new(max_entries: usize) -> Model {
        Model {
            max_entries,
            next: 1,
            ..Model::default()
        }
    }

    fn live(&self) -> BTreeSet<u64> {
        self.nodes
            .iter()
            .flatten()
            .filter(|s| !s.1)
            .map(|s| s.0)
            .collect()
    }

    fn len(&self) -> u64 {
        self.live().len() as u64
    }

    fn is_live(&self, id: u64) -> bool {
        self.live().contains(&id)
    }

    /// Reference §3.2: beyond some group's cursor, or pending in some group.
    fn referenced(&self, id: u64) -> bool {
        (0..2).any(|g| id > self.last[g] || self.pel[g].contains_key(&id))
    }

    fn add(&mut self) -> u64 {
        let id = self.next;
        self.next += 1;
        match self.nodes.last_mut() {
            Some(tail) if tail.len() < self.max_entries => tail.push((id, false)),
            _ => self.nodes.push(vec![(id, false)]),
        }
        id
    }

    /// XDEL of one entry: true if it was live.
    fn delete(&mut self, id: u64) -> bool {
        for i in 0..self.nodes.len() {
            if let Some(slot) = self.nodes[i].iter_mut().find(|s| s.0 == id && !s.1) {
                slot.1 = true;
                if self.nodes[i].iter().all(|s| s.1) {
                    self.nodes.remove(i);
                }
                return true;
            }
        }
        false
    }

    fn drop_refs(&mut self, id: u64) {
        for pel in &mut self.pel {
            pel.remove(&id);
        }
    }

    fn may_delete(&mut self, id: u64, pol: Pol) -> bool {
        match pol {
            Pol::Keep => true,
            Pol::DelRef => {
                self.drop_refs(id);
                true
            }
            Pol::Acked => !self.referenced(id),
        }
    }

    fn read(&mut self, g: usize, c: usize, count: usize) -> Vec<u64> {
        let last = self.last[g];
        let ids: Vec<u64> = self
            .live()
            .into_iter()
            .filter(|&id| id > last)
            .take(if count == 0 { usize::MAX } else { count })
            .collect();
        for &id in &ids {
            self.pel[g].insert(id, Some(c));
            self.last[g] = id;
        }
        ids
    }

    fn ack(&mut self, g: usize, ids: &[u64]) -> i64 {
        ids.iter()
            .filter(|id| self.pel[g].remove(id).is_some())
            .count() as i64
    }

    fn ackdel(&mut self, g: usize, pol: Pol, ids: &[u64]) -> Vec<i64> {
        ids.iter()
            .map(|&id| {
                if self.pel[g].remove(&id).is_none() {
                    -1
                } else if self.may_delete(id, pol) {
                    self.delete(id);
                    1
                } else {
                    2
                }
            })
            .collect()
    }

    fn delex(&mut self, pol: Pol, ids: &[u64]) -> Vec<i64> {
        ids.iter()
            .map(|&id| {
                if !self.may_delete(id, pol) {
                    2
                } else if self.delete(id) {
                    1
                } else {
                    -1
                }
            })
            .collect()
    }

    fn nack(&mut self, g: usize, ids: &[u64], force: bool) -> i64 {
        let mut n = 0;
        for &id in ids {
            if self.pel[g].contains_key(&id) || (force && self.is_live(id)) {
                self.pel[g].insert(id, None);
                n += 1;
            }
        }
        n
    }

    /// `streamTrim` (t_stream.c, 8.2.x) on the model's nodes; the model always has groups.
    fn trim(&mut self, pol: Pol, approx: bool, by: TrimBy) -> u64 {
        let mut deleted = 0;
        let mut i = 0;
        while i < self.nodes.len() {
            let len = self.len();
            if let TrimBy::MaxLen(max) = by
                && len <= max
            {
                break;
            }
            let live = self.nodes[i].iter().filter(|s| !s.1).count() as u64;
            let eligible = match by {
                TrimBy::MaxLen(max) => len - live >= max,
                TrimBy::MinId(min) => self.nodes[i].last().expect("no empty nodes").0 < min,
            };
            if eligible && pol == Pol::Keep {
                self.nodes.remove(i);
                deleted += live;
                continue;
            }
            if approx && pol == Pol::Keep {
                break;
            }
            for k in 0..self.nodes[i].len() {
                let (id, gone) = self.nodes[i][k];
                let stop = match by {
                    TrimBy::MaxLen(max) => self.len() <= max,
                    TrimBy::MinId(min) => id >= min,
                };
                if stop {
                    break;
                }
                if pol == Pol::DelRef {
                    self.drop_refs(id);
                }
                if gone || (pol == Pol::Acked && self.referenced(id)) {
                    continue;
                }
                self.nodes[i][k].1 = true;
                deleted += 1;
            }
            if self.nodes[i].iter().all(|s| s.1) {
                self.nodes.remove(i);
            } else {
                i += 1;
            }
            if !eligible {
                break;
            }
        }
        deleted
    }
}

/// What the server shows of one stream: live IDs, and per group the cursor and the PEL
/// (ID → owner name, "" when NACKed).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    live: BTreeSet<u64>,
    last: [u64; 2],
    pel: [BTreeMap<u64, String>; 2],
}

fn ms(id: &str) -> u64 {
    let (ms, seq) = id.split_once('-').expect("an ID");
    assert_eq!(seq, "1", "model IDs end in -1 ({id})");
    ms.parse().expect("ms")
}

fn observe(r: &mut Raw, key: &str) -> Seen {
    let live = range_ids(r, key).iter().map(|id| ms(id)).collect();
    let groups = query(r, &["XINFO", "GROUPS", key]);
    let mut last = [0; 2];
    let mut pel: [BTreeMap<u64, String>; 2] = Default::default();
    for (g, name) in GROUPS.iter().enumerate() {
        let info = groups
            .arr()
            .iter()
            .find(|i| i.field("name").str() == *name)
            .expect("group exists");
        let l = info.field("last-delivered-id").str();
        last[g] = if l == "0-0" { 0 } else { ms(&l) };
        for p in query(r, &["XPENDING", key, name, "-", "+", "1000"]).arr() {
            let p = p.arr();
            pel[g].insert(ms(&p[0].str()), p[1].str());
        }
    }
    Seen { live, last, pel }
}

/// The model as the server should show it.
fn expected(m: &Model) -> Seen {
    Seen {
        live: m.live(),
        last: m.last,
        pel: [0, 1].map(|g| {
            m.pel[g]
                .iter()
                .map(|(&id, owner)| (id, owner.map_or(String::new(), |c| CONSUMERS[c].into())))
                .collect()
        }),
    }
}

/// IDs some group references according to what the server shows (reference §3.2).
fn referenced_on_server(s: &Seen) -> BTreeSet<u64> {
    s.live
        .iter()
        .copied()
        .filter(|&id| (0..2).any(|g| id > s.last[g] || s.pel[g].contains_key(&id)))
        .collect()
}

fn id_args(ids: &[u64]) -> Vec<String> {
    let mut v = vec!["IDS".to_string(), ids.len().to_string()];
    v.extend(ids.iter().map(|id| format!("{id}-1")));
    v
}

fn cmd(r: &mut Raw, args: &[String]) -> V {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    query(r, &args)
}

fn results(v: &V) -> Vec<i64> {
    v.arr().iter().map(V::int).collect()
}

/// Runs one op on the server and the model; checks the reply and the ACKED / DELREF
/// invariants from the server's own state.
fn step(r: &mut Raw, key: &str, m: &mut Model, op: &Op) {
    let before = observe(r, key);
    // XACKDEL acknowledges first, then decides: references are judged after its own ack.
    let mut refs_before = before.clone();
    if let Op::AckDel { g, ids, .. } = op {
        for id in ids {
            refs_before.pel[*g].remove(id);
        }
    }
    let protected = referenced_on_server(&refs_before);
    let k = key.to_string();
    let (acked_policy, delref) = match op {
        Op::Add => {
            let id = m.add();
            let got = cmd(
                r,
                &["XADD".into(), k, format!("{id}-1"), "f".into(), "v".into()],
            );
            assert_eq!(got, V::Str(format!("{id}-1").into_bytes()));
            (false, false)
        }
        Op::Read { g, c, count } => {
            let want = m.read(*g, *c, *count);
            let mut args = vec!["XREADGROUP", "GROUP", GROUPS[*g], CONSUMERS[*c]];
            let count_s = count.to_string();
            if *count > 0 {
                args.extend(["COUNT", &count_s]);
            }
            args.extend(["STREAMS", key, ">"]);
            let got = query(r, &args);
            let ids: Vec<u64> = match &got {
                V::Nil => vec![],
                v => v.arr()[0].arr()[1]
                    .arr()
                    .iter()
                    .map(|e| ms(&e.arr()[0].str()))
                    .collect(),
            };
            assert_eq!(ids, want, "XREADGROUP {op:?}");
            (false, false)
        }
        Op::Ack { g, ids } => {
            let want = m.ack(*g, ids);
            let mut args = vec!["XACK".to_string(), k, GROUPS[*g].into()];
            args.extend(ids.iter().map(|id| format!("{id}-1")));
            assert_eq!(cmd(r, &args).int(), want, "{op:?}");
            (false, false)
        }
        Op::AckDel { g, pol, ids } => {
            let want = m.ackdel(*g, *pol, ids);
            let mut args = vec!["XACKDEL".to_string(), k, GROUPS[*g].into()];
            args.extend(pol.word().map(String::from));
            args.extend(id_args(ids));
            assert_eq!(results(&cmd(r, &args)), want, "{op:?}");
            (*pol == Pol::Acked, *pol == Pol::DelRef)
        }
        Op::DelEx { pol, ids } => {
            let want = m.delex(*pol, ids);
            let mut args = vec!["XDELEX".to_string(), k];
            args.extend(id_args(ids));
            // The policy after the IDS block this time.
            args.extend(pol.word().map(String::from));
            assert_eq!(results(&cmd(r, &args)), want, "{op:?}");
            (*pol == Pol::Acked, *pol == Pol::DelRef)
        }
        Op::Trim { pol, approx, by } => {
            let want = m.trim(*pol, *approx, *by);
            let mut args = vec!["XTRIM".to_string(), k];
            match by {
                TrimBy::MinId(x) => args.extend(["MINID".into(), format!("{x}-1")]),
                TrimBy::MaxLen(n) => args.extend(["MAXLEN".into(), n.to_string()]),
            }
            if *approx {
                args.insert(3, "~".into());
            }
            args.extend(pol.word().map(String::from));
            assert_eq!(cmd(r, &args).int(), want as i64, "{op:?}");
            (*pol == Pol::Acked, *pol == Pol::DelRef)
        }
        Op::Nack { g, ids, force } => {
            let want = m.nack(*g, ids, *force);
            let mut args = vec!["XNACK".to_string(), k, GROUPS[*g].into(), "FAIL".into()];
            args.extend(id_args(ids));
            if *force {
                args.push("FORCE".into());
            }
            assert_eq!(cmd(r, &args).int(), want, "{op:?}");
            (false, false)
        }
    };
    let after = observe(r, key);
    if acked_policy {
        for id in &protected {
            assert!(
                after.live.contains(id),
                "{op:?} deleted {id}-1, which a group still referenced"
            );
        }
    }
    if delref {
        let gone: BTreeSet<u64> = before.live.difference(&after.live).copied().collect();
        for (g, pel) in after.pel.iter().enumerate() {
            for id in &gone {
                assert!(
                    !pel.contains_key(id),
                    "{op:?} deleted {id}-1 but {}'s PEL still names it",
                    GROUPS[g]
                );
            }
        }
    }
    assert_eq!(after, expected(m), "state after {op:?}");
}

#[test]
fn model_acked_never_deletes_referenced_entries_and_delref_leaves_no_dangling_pel() {
    let server = start_server();
    let mut runner = TestRunner::new(Config {
        cases: 96,
        failure_persistence: None,
        ..Config::default()
    });
    let key_no = std::cell::Cell::new(0u64);
    let strategy = (1usize..=4, prop::collection::vec(op_strategy(), 1..48));
    runner
        .run(&strategy, |(max_entries, ops)| {
            let mut r = server.raw();
            run(
                &mut r,
                &[&[
                    "CONFIG",
                    "SET",
                    "stream-node-max-entries",
                    &max_entries.to_string(),
                ]],
            );
            key_no.set(key_no.get() + 1);
            let key = format!("m{}", key_no.get());
            run(
                &mut r,
                &[
                    &["XGROUP", "CREATE", &key, GROUPS[0], "0", "MKSTREAM"],
                    &["XGROUP", "CREATE", &key, GROUPS[1], "0"],
                ],
            );
            let mut model = Model::new(max_entries);
            for op in &ops {
                step(&mut r, &key, &mut model, op);
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

// ---- XREAD / XREADGROUP MAXCOUNT and MAXSIZE (8.10) --------------------------------------

/// Three streams a, b, c with entries 1-1..3-1 (`f <stream><n>`) and a group `g` on each.
fn three_streams(raw: &mut Raw) {
    for s in ["a", "b", "c"] {
        for n in 1..=3 {
            let id = format!("{n}-1");
            let v = format!("{s}{n}");
            run(raw, &[&["XADD", s, &id, "f", &v]]);
        }
        run(raw, &[&["XGROUP", "CREATE", s, "g", "0"]]);
    }
}

/// The XPENDING summary of a group with nothing pending.
fn empty_summary() -> Vec<u8> {
    let nil = b"$-1\r\n".to_vec();
    arr(&[int(0), nil.clone(), nil, NIL_ARRAY.to_vec()])
}

/// `[key, [entries]]`.
fn stream_part(key: &str, entries: &[Vec<u8>]) -> Vec<u8> {
    arr(&[bulk(key), arr(entries)])
}

fn e(id: &str, v: &str) -> Vec<u8> {
    common::reply::entry(id, &["f", v])
}

#[test]
fn maxcount_and_maxsize_cap_a_read_across_streams() {
    let s = start_server();
    let mut r = s.raw();
    three_streams(&mut r);
    // One entry's reply bytes: *2 $3 1-1 *2 $1 f $2 a1 = 32 bytes.
    check(
        &mut r,
        &[
            (
                &[
                    "XREAD", "MAXCOUNT", "4", "STREAMS", "a", "b", "c", "0", "0", "0",
                ],
                arr(&[
                    stream_part("a", &[e("1-1", "a1"), e("2-1", "a2"), e("3-1", "a3")]),
                    stream_part("b", &[e("1-1", "b1")]),
                ]),
            ),
            // COUNT stays per stream; MAXCOUNT bounds the total.
            (
                &[
                    "XREAD", "COUNT", "2", "MAXCOUNT", "5", "STREAMS", "a", "b", "c", "0", "0", "0",
                ],
                arr(&[
                    stream_part("a", &[e("1-1", "a1"), e("2-1", "a2")]),
                    stream_part("b", &[e("1-1", "b1"), e("2-1", "b2")]),
                    stream_part("c", &[e("1-1", "c1")]),
                ]),
            ),
            // At least one entry, even larger than MAXSIZE.
            (
                &[
                    "XREAD", "MAXSIZE", "1", "STREAMS", "a", "b", "c", "0", "0", "0",
                ],
                arr(&[stream_part("a", &[e("1-1", "a1")])]),
            ),
            // 64 bytes hold exactly two entries; the third does not fit, and the read
            // stops there (nothing from c).
            (
                &[
                    "XREAD", "MAXSIZE", "64", "STREAMS", "a", "b", "c", "2-1", "2-1", "0",
                ],
                arr(&[
                    stream_part("a", &[e("3-1", "a3")]),
                    stream_part("b", &[e("3-1", "b3")]),
                ]),
            ),
            // A stream whose first entry does not fit is left out of the reply.
            (
                &["XREAD", "MAXSIZE", "40", "STREAMS", "a", "b", "2-1", "0"],
                arr(&[stream_part("a", &[e("3-1", "a3")])]),
            ),
            (
                &["XREAD", "MAXCOUNT", "0", "STREAMS", "a", "0"],
                err("ERR MAXCOUNT must be a positive integer"),
            ),
            (
                &["XREAD", "MAXSIZE", "0", "STREAMS", "a", "0"],
                err("ERR MAXSIZE must be a positive integer"),
            ),
            (
                &["XREAD", "COUNT", "3", "MAXCOUNT", "2", "STREAMS", "a", "0"],
                err("ERR MAXCOUNT must be greater than or equal to COUNT"),
            ),
            (
                &["XREAD", "MAXCOUNT", "x", "STREAMS", "a", "0"],
                err(NOT_INT),
            ),
        ],
    );
}

#[test]
fn xreadgroup_caps_leave_skipped_entries_undelivered() {
    let s = start_server();
    let mut r = s.raw();
    three_streams(&mut r);
    check(
        &mut r,
        &[
            (
                &[
                    "XREADGROUP",
                    "GROUP",
                    "g",
                    "c1",
                    "MAXCOUNT",
                    "4",
                    "STREAMS",
                    "a",
                    "b",
                    "c",
                    ">",
                    ">",
                    ">",
                ],
                arr(&[
                    stream_part("a", &[e("1-1", "a1"), e("2-1", "a2"), e("3-1", "a3")]),
                    stream_part("b", &[e("1-1", "b1")]),
                ]),
            ),
            // Only what was sent is pending; the group cursors stop at it.
            (
                &["XPENDING", "a", "g"],
                arr(&[
                    int(3),
                    bulk("1-1"),
                    bulk("3-1"),
                    arr(&[arr(&[bulk("c1"), bulk("3")])]),
                ]),
            ),
            (
                &["XPENDING", "b", "g"],
                arr(&[
                    int(1),
                    bulk("1-1"),
                    bulk("1-1"),
                    arr(&[arr(&[bulk("c1"), bulk("1")])]),
                ]),
            ),
            (&["XPENDING", "c", "g"], empty_summary()),
            // The next read continues where the cap stopped: b2 and b3 fit in 64 bytes,
            // c1 does not.
            (
                &[
                    "XREADGROUP",
                    "GROUP",
                    "g",
                    "c1",
                    "MAXSIZE",
                    "64",
                    "STREAMS",
                    "a",
                    "b",
                    "c",
                    ">",
                    ">",
                    ">",
                ],
                arr(&[stream_part("b", &[e("2-1", "b2"), e("3-1", "b3")])]),
            ),
            (&["XPENDING", "c", "g"], empty_summary()),
            // History reads are capped too (and do not re-deliver what is skipped).
            (
                &[
                    "XREADGROUP",
                    "GROUP",
                    "g",
                    "c1",
                    "MAXCOUNT",
                    "2",
                    "STREAMS",
                    "a",
                    "b",
                    "0",
                    "0",
                ],
                arr(&[
                    stream_part("a", &[e("1-1", "a1"), e("2-1", "a2")]),
                    stream_part("b", &[]),
                ]),
            ),
        ],
    );
    // a3 and b's entries were not re-delivered by the capped history read.
    let ext = query(&mut r, &["XPENDING", "a", "g", "-", "+", "10"]);
    let counts: Vec<i64> = ext.arr().iter().map(|p| p.arr()[3].int()).collect();
    assert_eq!(counts, vec![2, 2, 1]);
    let ext = query(&mut r, &["XPENDING", "b", "g", "-", "+", "10"]);
    let counts: Vec<i64> = ext.arr().iter().map(|p| p.arr()[3].int()).collect();
    assert_eq!(counts, vec![1, 1, 1]);
}
