//! Consumer groups against the real binary (reference §2.5, §2.6, §2.11–§2.14, §2.16,
//! §3.2–§3.4): XGROUP, XREADGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM and the group parts of
//! XINFO.
//!
//! Replies that do not depend on the clock are compared byte for byte, in RESP2 and RESP3,
//! errors included. Replies that carry idle times or delivery times are parsed (a small RESP
//! reader below) and checked with bounds. The behaviour tests follow the life of a message:
//! fan-in delivery to blocked consumers, wake-ups with NOGROUP, the worked examples of the
//! reference (entries-read and lag, deleted payloads in the PEL), at-least-once recovery of a
//! crashed consumer's entries, and exactly-once delivery across 20 blocked consumers fed by 4
//! producers.

mod common;

use common::{check, send};

use common::reply::{arr, bulk, entry, err, int, null};

use common::{Raw, escape, info_field, start_server, wait_blocked};
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------
// Expected-bytes builders
// ---------------------------------------------------------------------------------------

fn status(s: &str) -> Vec<u8> {
    format!("+{s}\r\n").into_bytes()
}

fn ok() -> Vec<u8> {
    status("OK")
}

fn ids(ids: &[&str]) -> Vec<u8> {
    arr(&ids.iter().map(|i| bulk(i)).collect::<Vec<_>>())
}

/// `*-1` in RESP2, `_` in RESP3.
fn null_array(resp3: bool) -> Vec<u8> {
    if resp3 {
        b"_\r\n".to_vec()
    } else {
        b"*-1\r\n".to_vec()
    }
}

/// A map of `pairs`: `*2n` flat in RESP2, `%n` in RESP3.
fn map(resp3: bool, pairs: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut out = if resp3 {
        format!("%{}\r\n", pairs.len())
    } else {
        format!("*{}\r\n", pairs.len() * 2)
    }
    .into_bytes();
    for (k, v) in pairs {
        out.extend_from_slice(&bulk(k));
        out.extend_from_slice(v);
    }
    out
}

/// An XREAD/XREADGROUP reply: `[[key, entries], ...]` in RESP2, `{key: entries}` in RESP3.
fn streams(resp3: bool, per_key: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut out = if resp3 {
        format!("%{}\r\n", per_key.len())
    } else {
        format!("*{}\r\n", per_key.len())
    }
    .into_bytes();
    for (k, entries) in per_key {
        if !resp3 {
            out.extend_from_slice(b"*2\r\n");
        }
        out.extend_from_slice(&bulk(k));
        out.extend_from_slice(entries);
    }
    out
}

fn nogroup_read(key: &str, group: &str) -> Vec<u8> {
    err(&format!(
        "NOGROUP No such key '{key}' or consumer group '{group}' in XREADGROUP with GROUP option"
    ))
}

fn nogroup(key: &str, group: &str) -> Vec<u8> {
    err(&format!(
        "NOGROUP No such key '{key}' or consumer group '{group}'"
    ))
}

fn nogroup_for_key(key: &str, group: &str) -> Vec<u8> {
    err(&format!(
        "NOGROUP No such consumer group '{group}' for key name '{key}'"
    ))
}

const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";
const KEY_REQUIRED: &str = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.";

/// A connection in RESP2, or switched to RESP3.
fn conn(server: &common::Server, resp3: bool) -> Raw {
    let mut raw = server.raw();
    if resp3 {
        raw.hello3();
    }
    raw
}

// ---------------------------------------------------------------------------------------
// A small RESP reader, for replies with clock-dependent numbers
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum V {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    Null,
    Arr(Vec<V>),
    Map(Vec<(V, V)>),
}

impl V {
    fn arr(&self) -> &[V] {
        match self {
            V::Arr(v) => v,
            other => panic!("not an array: {other:?}"),
        }
    }
    fn int(&self) -> i64 {
        match self {
            V::Int(n) => *n,
            other => panic!("not an integer: {other:?}"),
        }
    }
    fn str(&self) -> String {
        match self {
            V::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
            V::Simple(s) => s.clone(),
            other => panic!("not a string: {other:?}"),
        }
    }
    /// A field of a RESP3 map or a RESP2 flat `k v k v` array.
    fn get(&self, field: &str) -> &V {
        match self {
            V::Map(pairs) => pairs
                .iter()
                .find(|(k, _)| k.str() == field)
                .map(|(_, v)| v)
                .unwrap_or_else(|| panic!("no field {field} in {self:?}")),
            V::Arr(items) => items
                .chunks(2)
                .find(|kv| kv[0].str() == field)
                .map(|kv| &kv[1])
                .unwrap_or_else(|| panic!("no field {field} in {self:?}")),
            other => panic!("not a map: {other:?}"),
        }
    }
    /// The field names of a map or flat array, in order.
    fn keys(&self) -> Vec<String> {
        match self {
            V::Map(pairs) => pairs.iter().map(|(k, _)| k.str()).collect(),
            V::Arr(items) => items.chunks(2).map(|kv| kv[0].str()).collect(),
            other => panic!("not a map: {other:?}"),
        }
    }
}

fn parse(bytes: &[u8]) -> V {
    let (v, used) = parse_at(bytes, 0);
    assert_eq!(used, bytes.len(), "trailing bytes in {:?}", escape(bytes));
    v
}

fn parse_at(b: &[u8], pos: usize) -> (V, usize) {
    let end = pos
        + b[pos..]
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("CRLF");
    let line = std::str::from_utf8(&b[pos + 1..end]).expect("utf8 header");
    let next = end + 2;
    match b[pos] {
        b'+' => (V::Simple(line.to_string()), next),
        b'-' => (V::Error(line.to_string()), next),
        b':' => (V::Int(line.parse().expect("int")), next),
        b'_' => (V::Null, next),
        b'$' => {
            let n: i64 = line.parse().expect("len");
            if n < 0 {
                return (V::Null, next);
            }
            let n = n as usize;
            (V::Bulk(b[next..next + n].to_vec()), next + n + 2)
        }
        b'*' => {
            let n: i64 = line.parse().expect("len");
            if n < 0 {
                return (V::Null, next);
            }
            let mut items = Vec::new();
            let mut p = next;
            for _ in 0..n {
                let (v, q) = parse_at(b, p);
                items.push(v);
                p = q;
            }
            (V::Arr(items), p)
        }
        b'%' => {
            let n: usize = line.parse().expect("len");
            let mut pairs = Vec::new();
            let mut p = next;
            for _ in 0..n {
                let (k, q) = parse_at(b, p);
                let (v, q) = parse_at(b, q);
                pairs.push((k, v));
                p = q;
            }
            (V::Map(pairs), p)
        }
        other => panic!("unexpected RESP type {:?}", other as char),
    }
}

fn cmd(raw: &mut Raw, args: &[&str]) -> V {
    parse(&raw.cmd_str(args))
}

/// The entries of the first stream of an XREADGROUP reply (RESP2 or RESP3).
fn read_entries(v: &V) -> Vec<V> {
    match v {
        V::Arr(keys) => keys[0].arr()[1].arr().to_vec(),
        V::Map(pairs) => pairs[0].1.arr().to_vec(),
        V::Null => Vec::new(),
        other => panic!("not an XREADGROUP reply: {other:?}"),
    }
}

/// XPENDING's extended rows as (id, consumer, idle, deliveries).
fn pending_rows(raw: &mut Raw, args: &[&str]) -> Vec<(String, String, i64, i64)> {
    cmd(raw, args)
        .arr()
        .iter()
        .map(|r| {
            let r = r.arr();
            (r[0].str(), r[1].str(), r[2].int(), r[3].int())
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// XGROUP
// ---------------------------------------------------------------------------------------

#[test]
fn xgroup_subcommands_reply_and_fail_exactly_as_redis() {
    let server = start_server();
    for resp3 in [false, true] {
        let mut c = conn(&server, resp3);
        c.cmd_str(&["FLUSHALL"]);
        c.cmd_str(&["XADD", "s", "1-1", "f", "v"]);
        let syntax = |sub: &str| {
            err(&format!(
                "ERR unknown subcommand or wrong number of arguments for '{sub}'. Try XGROUP HELP."
            ))
        };
        check(
            &mut c,
            &[
                (&["XGROUP", "CREATE", "s", "g", "0"], ok()),
                (
                    &["XGROUP", "CREATE", "s", "g", "$"],
                    err("BUSYGROUP Consumer Group name already exists"),
                ),
                (&["XGROUP", "CREATE", "nokey", "g", "$"], err(KEY_REQUIRED)),
                // The key is checked before the ID.
                (
                    &["XGROUP", "CREATE", "nokey", "g", "bad"],
                    err(KEY_REQUIRED),
                ),
                (&["XGROUP", "CREATE", "s", "g2", "bad"], err(INVALID_ID)),
                (&["XGROUP", "CREATE", "s", "g2", "-"], err(INVALID_ID)),
                (
                    &["XGROUP", "CREATE", "s", "g2", "0", "FOO"],
                    syntax("CREATE"),
                ),
                (
                    &[
                        "XGROUP", "create", "s", "g2", "0", "MKSTREAM", "MKSTREAM", "MKSTREAM",
                        "MKSTREAM",
                    ],
                    syntax("create"),
                ),
                (
                    &["XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD"],
                    syntax("CREATE"),
                ),
                (
                    &["XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD", "-3"],
                    err("ERR value for ENTRIESREAD must be positive or -1"),
                ),
                (
                    &["XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD", "x"],
                    err("ERR value is not an integer or out of range"),
                ),
                (
                    &["XGROUP", "CREATE", "s"],
                    err("ERR wrong number of arguments for 'xgroup|create' command"),
                ),
                (
                    &["XGROUP", "DESTROY", "s", "g", "x"],
                    err("ERR wrong number of arguments for 'xgroup|destroy' command"),
                ),
                (
                    &["XGROUP", "FOO", "s"],
                    err("ERR unknown subcommand 'FOO'. Try XGROUP HELP."),
                ),
                (
                    &["XGROUP"],
                    err("ERR wrong number of arguments for 'xgroup' command"),
                ),
                // MKSTREAM creates the key, but not when the ID is bad.
                (&["XGROUP", "CREATE", "new", "g", "$", "MKSTREAM"], ok()),
                (&["EXISTS", "new"], int(1)),
                (
                    &["XGROUP", "CREATE", "new2", "g", "bad", "MKSTREAM"],
                    err(INVALID_ID),
                ),
                (&["EXISTS", "new2"], int(0)),
                // SETID
                (
                    &["XGROUP", "SETID", "s", "nog", "0"],
                    nogroup_for_key("s", "nog"),
                ),
                (&["XGROUP", "SETID", "nokey", "g", "0"], err(KEY_REQUIRED)),
                (&["XGROUP", "SETID", "s", "g", "-"], ok()),
                (&["XGROUP", "SETID", "s", "g", "+"], ok()),
                (
                    &["XGROUP", "SETID", "s", "g", "$", "ENTRIESREAD", "1"],
                    ok(),
                ),
                (&["XGROUP", "SETID", "s", "g", "bad"], err(INVALID_ID)),
                (
                    &["XGROUP", "SETID", "s", "g", "0", "MKSTREAM"],
                    syntax("SETID"),
                ),
                (
                    &[
                        "XGROUP",
                        "SETID",
                        "s",
                        "g",
                        "0",
                        "ENTRIESREAD",
                        "1",
                        "ENTRIESREAD",
                        "2",
                    ],
                    syntax("SETID"),
                ),
                // Consumers
                (&["XGROUP", "CREATECONSUMER", "s", "g", "alice"], int(1)),
                (&["XGROUP", "CREATECONSUMER", "s", "g", "alice"], int(0)),
                (
                    &["XGROUP", "CREATECONSUMER", "s", "nog", "alice"],
                    nogroup_for_key("s", "nog"),
                ),
                (
                    &["XGROUP", "CREATECONSUMER", "nokey", "g", "alice"],
                    err(KEY_REQUIRED),
                ),
                (&["XGROUP", "DELCONSUMER", "s", "g", "bob"], int(0)),
                (&["XGROUP", "SETID", "s", "g", "0"], ok()),
                (
                    &["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"],
                    streams(resp3, &[("s", arr(&[entry("1-1", &["f", "v"])]))]),
                ),
                (&["XGROUP", "DELCONSUMER", "s", "g", "alice"], int(1)),
                (
                    &["XGROUP", "DELCONSUMER", "s", "nog", "alice"],
                    nogroup_for_key("s", "nog"),
                ),
                // Its pending entry went with it.
                (
                    &["XPENDING", "s", "g"],
                    arr(&[int(0), null(resp3), null(resp3), null_array(resp3)]),
                ),
                // DESTROY
                (&["XGROUP", "DESTROY", "s", "nog"], int(0)),
                (&["XGROUP", "DESTROY", "nokey", "g"], err(KEY_REQUIRED)),
                (&["XGROUP", "DESTROY", "s", "g"], int(1)),
                (&["XGROUP", "DESTROY", "s", "g"], int(0)),
            ],
        );
    }
}

#[test]
fn xgroup_help_lists_every_subcommand() {
    let server = start_server();
    let mut c = server.raw();
    let lines = [
        "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CREATE <key> <groupname> <id|$> [option]",
        "    Create a new consumer group. Options are:",
        "    * MKSTREAM",
        "      Create the empty stream if it does not exist.",
        "    * ENTRIESREAD entries_read",
        "      Set the group's entries_read counter (internal use).",
        "CREATECONSUMER <key> <groupname> <consumer>",
        "    Create a new consumer in the specified group.",
        "DELCONSUMER <key> <groupname> <consumer>",
        "    Remove the specified consumer.",
        "DESTROY <key> <groupname>",
        "    Remove the specified group.",
        "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
        "    Set the current group ID and entries_read counter.",
        "HELP",
        "    Print this help.",
    ];
    let want = arr(&lines.iter().map(|l| status(l)).collect::<Vec<_>>());
    check(
        &mut c,
        &[
            (&["XGROUP", "HELP"], want.clone()),
            (&["xgroup", "help"], want),
            (
                &["XGROUP", "HELP", "x"],
                err("ERR wrong number of arguments for 'xgroup|help' command"),
            ),
        ],
    );
}

#[test]
fn entriesread_is_capped_at_entries_added() {
    let server = start_server();
    let mut c = server.raw();
    c.cmd_str(&["XADD", "s", "1-1", "f", "v"]);
    c.cmd_str(&["XGROUP", "CREATE", "s", "g", "$", "ENTRIESREAD", "9999"]);
    c.cmd_str(&["XGROUP", "CREATE", "s", "h", "$"]);
    c.cmd_str(&["XGROUP", "SETID", "s", "h", "$", "ENTRIESREAD", "9999"]);
    let groups = cmd(&mut c, &["XINFO", "GROUPS", "s"]);
    for g in groups.arr() {
        assert_eq!(g.get("entries-read"), &V::Int(1), "{g:?}");
        assert_eq!(g.get("lag"), &V::Int(0), "{g:?}");
    }
}

// ---------------------------------------------------------------------------------------
// XREADGROUP
// ---------------------------------------------------------------------------------------

#[test]
fn xreadgroup_serves_new_entries_then_history_with_nil_for_deleted_payloads() {
    let server = start_server();
    for resp3 in [false, true] {
        let mut c = conn(&server, resp3);
        c.cmd_str(&["FLUSHALL"]);
        c.cmd_str(&["XADD", "s", "1-1", "a", "1"]);
        c.cmd_str(&["XADD", "s", "2-1", "b", "2", "c", "3"]);
        c.cmd_str(&["XGROUP", "CREATE", "s", "g", "0"]);
        let e1 = entry("1-1", &["a", "1"]);
        let e2 = entry("2-1", &["b", "2", "c", "3"]);
        let gone = arr(&[bulk("1-1"), null_array(resp3)]);
        check(
            &mut c,
            &[
                (
                    &[
                        "XREADGROUP",
                        "GROUP",
                        "g",
                        "c",
                        "COUNT",
                        "1",
                        "STREAMS",
                        "s",
                        ">",
                    ],
                    streams(resp3, &[("s", arr(std::slice::from_ref(&e1)))]),
                ),
                (
                    &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"],
                    streams(resp3, &[("s", arr(std::slice::from_ref(&e2)))]),
                ),
                // Nothing new: the null array, never an empty list.
                (
                    &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"],
                    null_array(resp3),
                ),
                (
                    &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0"],
                    streams(resp3, &[("s", arr(&[e1.clone(), e2.clone()]))]),
                ),
                (
                    &[
                        "XREADGROUP",
                        "GROUP",
                        "g",
                        "c",
                        "COUNT",
                        "1",
                        "STREAMS",
                        "s",
                        "1-1",
                    ],
                    streams(resp3, &[("s", arr(std::slice::from_ref(&e2)))]),
                ),
                (&["XDEL", "s", "1-1"], int(1)),
                (
                    &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0"],
                    streams(resp3, &[("s", arr(&[gone, e2.clone()]))]),
                ),
                // Another consumer has no history; the stream still appears.
                (
                    &["XREADGROUP", "GROUP", "g", "other", "STREAMS", "s", "0"],
                    streams(resp3, &[("s", arr(&[]))]),
                ),
                // The largest ID is how Redis spells `>` internally.
                (
                    &[
                        "XREADGROUP",
                        "GROUP",
                        "g",
                        "c",
                        "STREAMS",
                        "s",
                        "18446744073709551615-18446744073709551615",
                    ],
                    null_array(resp3),
                ),
            ],
        );
        // Deliveries: 1-1 once by `>` and once by history (the read of the deleted payload
        // does not count); 2-1 once by `>` and three times by history.
        let rows = pending_rows(&mut c, &["XPENDING", "s", "g", "-", "+", "10"]);
        let counts: Vec<(String, String, i64)> =
            rows.into_iter().map(|(id, c, _, n)| (id, c, n)).collect();
        assert_eq!(
            counts,
            vec![
                ("1-1".to_string(), "c".to_string(), 2),
                ("2-1".to_string(), "c".to_string(), 4)
            ]
        );
        // Consumers are created on first sight, even by a read that returns nothing.
        let consumers = cmd(&mut c, &["XINFO", "CONSUMERS", "s", "g"]);
        let names: Vec<String> = consumers
            .arr()
            .iter()
            .map(|c| c.get("name").str())
            .collect();
        assert_eq!(names, vec!["c", "other"]);
    }
}

#[test]
fn xreadgroup_serves_several_streams_in_argument_order() {
    let server = start_server();
    for resp3 in [false, true] {
        let mut c = conn(&server, resp3);
        c.cmd_str(&["FLUSHALL"]);
        c.cmd_str(&["XADD", "a", "1-1", "f", "a"]);
        c.cmd_str(&["XADD", "b", "2-1", "f", "b"]);
        c.cmd_str(&["XGROUP", "CREATE", "a", "g", "0"]);
        c.cmd_str(&["XGROUP", "CREATE", "b", "g", "0"]);
        c.cmd_str(&["XGROUP", "CREATE", "empty", "g", "0", "MKSTREAM"]);
        check(
            &mut c,
            &[
                (
                    &[
                        "XREADGROUP",
                        "GROUP",
                        "g",
                        "c",
                        "STREAMS",
                        "b",
                        "empty",
                        "a",
                        ">",
                        ">",
                        ">",
                    ],
                    streams(
                        resp3,
                        &[
                            ("b", arr(&[entry("2-1", &["f", "b"])])),
                            ("a", arr(&[entry("1-1", &["f", "a"])])),
                        ],
                    ),
                ),
                // A history read of one stream makes the reply non-null.
                (
                    &[
                        "XREADGROUP",
                        "GROUP",
                        "g",
                        "c",
                        "STREAMS",
                        "empty",
                        "a",
                        ">",
                        "1-1",
                    ],
                    streams(resp3, &[("a", arr(&[]))]),
                ),
            ],
        );
    }
}

#[test]
fn xreadgroup_errors_in_redis_order() {
    let server = start_server();
    let mut c = server.raw();
    c.cmd_str(&["XADD", "s", "1-1", "f", "v"]);
    c.cmd_str(&["XGROUP", "CREATE", "s", "g", "0"]);
    let meaningless = |tok: &str| {
        err(&format!(
            "ERR The {tok} ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The {tok} ID would just return an empty result set."
        ))
    };
    check(
        &mut c,
        &[
            (
                &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s"],
                err("ERR wrong number of arguments for 'xreadgroup' command"),
            ),
            (
                &[
                    "XREADGROUP",
                    "COUNT",
                    "1",
                    "BLOCK",
                    "1",
                    "STREAMS",
                    "s",
                    ">",
                ],
                err("ERR Missing GROUP option for XREADGROUP"),
            ),
            (
                &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "t", ">"],
                err(
                    "ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' must be specified.",
                ),
            ),
            (
                &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "$"],
                meaningless("$"),
            ),
            (
                &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "+"],
                meaningless("+"),
            ),
            (
                &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "1-"],
                err(INVALID_ID),
            ),
            (
                &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "-"],
                err(INVALID_ID),
            ),
            (
                &["XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">"],
                nogroup_read("s", "nog"),
            ),
            (
                &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "nokey", ">"],
                nogroup_read("nokey", "g"),
            ),
            // Key by key: the first key's bad ID wins over the second key's NOGROUP, and the
            // other way round.
            (
                &[
                    "XREADGROUP",
                    "GROUP",
                    "g",
                    "c",
                    "STREAMS",
                    "s",
                    "nokey",
                    "$",
                    ">",
                ],
                meaningless("$"),
            ),
            (
                &[
                    "XREADGROUP",
                    "GROUP",
                    "g",
                    "c",
                    "STREAMS",
                    "nokey",
                    "s",
                    ">",
                    "$",
                ],
                nogroup_read("nokey", "g"),
            ),
            (
                &["XREADGROUP", "GROUP", "g", "c", "FOO", "STREAMS", "s", ">"],
                err("ERR syntax error"),
            ),
            (
                &[
                    "XREADGROUP",
                    "GROUP",
                    "g",
                    "c",
                    "BLOCK",
                    "-1",
                    "STREAMS",
                    "s",
                    ">",
                ],
                err("ERR timeout is negative"),
            ),
            (
                &[
                    "XREADGROUP",
                    "GROUP",
                    "g",
                    "c",
                    "COUNT",
                    "x",
                    "STREAMS",
                    "s",
                    ">",
                ],
                err("ERR value is not an integer or out of range"),
            ),
            (
                &[
                    "XREADGROUP",
                    "GROUP",
                    "g",
                    "c",
                    "CLAIM",
                    "-1",
                    "STREAMS",
                    "s",
                    ">",
                ],
                err("ERR min-idle-time must be a positive integer"),
            ),
            (
                &[
                    "XREADGROUP",
                    "GROUP",
                    "g",
                    "c",
                    "CLAIM",
                    "+5",
                    "STREAMS",
                    "s",
                    ">",
                ],
                err("ERR min-idle-time is not an integer or out of range"),
            ),
        ],
    );
    // None of the failed calls created a consumer.
    check(&mut c, &[(&["XINFO", "CONSUMERS", "s", "g"], arr(&[]))]);
}

#[test]
fn noack_advances_the_group_without_pending_entries() {
    let server = start_server();
    let mut c = server.raw();
    c.cmd_str(&["XADD", "s", "1-1", "f", "v"]);
    c.cmd_str(&["XADD", "s", "2-1", "f", "v"]);
    c.cmd_str(&["XGROUP", "CREATE", "s", "g", "0"]);
    check(
        &mut c,
        &[
            (
                &[
                    "XREADGROUP",
                    "GROUP",
                    "g",
                    "c",
                    "NOACK",
                    "STREAMS",
                    "s",
                    ">",
                ],
                streams(
                    false,
                    &[(
                        "s",
                        arr(&[entry("1-1", &["f", "v"]), entry("2-1", &["f", "v"])]),
                    )],
                ),
            ),
            (
                &["XPENDING", "s", "g"],
                arr(&[int(0), null(false), null(false), null_array(false)]),
            ),
            (
                &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"],
                null_array(false),
            ),
        ],
    );
    let g = cmd(&mut c, &["XINFO", "GROUPS", "s"]);
    let g = &g.arr()[0];
    assert_eq!(g.get("last-delivered-id").str(), "2-1");
    assert_eq!(g.get("entries-read"), &V::Int(2));
    // A NOACK read does not make the consumer active.
    let consumer = &cmd(&mut c, &["XINFO", "CONSUMERS", "s", "g"]).arr()[0].clone();
    assert_eq!(consumer.get("inactive"), &V::Int(-1));
}

#[test]
fn setid_backwards_redelivers_pending_entries_with_count_one() {
    let server = start_server();
    let mut c = server.raw();
    for i in 1..=5 {
        c.cmd_str(&["XADD", "events", &format!("{i}-0"), "f", "v"]);
    }
    c.cmd_str(&["XGROUP", "CREATE", "events", "g1", "4-0"]);
    let first = read_entries(&cmd(
        &mut c,
        &["XREADGROUP", "GROUP", "g1", "c1", "STREAMS", "events", ">"],
    ));
    assert_eq!(first.len(), 1);
    c.cmd_str(&["XREADGROUP", "GROUP", "g1", "c1", "STREAMS", "events", "0"]);
    check(&mut c, &[(&["XGROUP", "SETID", "events", "g1", "-"], ok())]);
    let again = read_entries(&cmd(
        &mut c,
        &["XREADGROUP", "GROUP", "g1", "c2", "STREAMS", "events", ">"],
    ));
    assert_eq!(again.len(), 5);
    let rows = pending_rows(&mut c, &["XPENDING", "events", "g1", "-", "+", "10"]);
    assert!(rows.iter().all(|r| r.1 == "c2" && r.3 == 1), "{rows:?}");
}

// ---------------------------------------------------------------------------------------
// XACK
// ---------------------------------------------------------------------------------------

#[test]
fn xack_counts_pending_ids_once_and_validates_only_with_a_group() {
    let server = start_server();
    let mut c = server.raw();
    for id in ["1-1", "2-1", "3-1"] {
        c.cmd_str(&["XADD", "s", id, "f", "v"]);
    }
    c.cmd_str(&["XGROUP", "CREATE", "s", "g", "0"]);
    c.cmd_str(&["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"]);
    check(
        &mut c,
        &[
            // No key or no group: 0, and the IDs are not looked at.
            (&["XACK", "nokey", "g", "bad"], int(0)),
            (&["XACK", "s", "nog", "bad"], int(0)),
            // One bad ID fails the whole call.
            (&["XACK", "s", "g", "1-1", "bad"], err(INVALID_ID)),
            (&["XACK", "s", "g", "1-1", "+"], err(INVALID_ID)),
            (&["XACK", "s", "g", "1-1", "1-1", "2-1", "9-9"], int(2)),
            (&["XACK", "s", "g", "1-1"], int(0)),
            (
                &["XACK", "s", "g"],
                err("ERR wrong number of arguments for 'xack' command"),
            ),
            (
                &["XPENDING", "s", "g"],
                arr(&[
                    int(1),
                    bulk("3-1"),
                    bulk("3-1"),
                    arr(&[arr(&[bulk("c"), bulk("1")])]),
                ]),
            ),
        ],
    );
}

// ---------------------------------------------------------------------------------------
// XPENDING
// ---------------------------------------------------------------------------------------

#[test]
fn xpending_summary_and_extended_forms() {
    let server = start_server();
    for resp3 in [false, true] {
        let mut c = conn(&server, resp3);
        c.cmd_str(&["FLUSHALL"]);
        for id in ["1-1", "2-1", "3-1"] {
            c.cmd_str(&["XADD", "s", id, "f", "v"]);
        }
        c.cmd_str(&["XGROUP", "CREATE", "s", "g", "0"]);
        check(
            &mut c,
            &[
                (
                    &["XPENDING", "s", "g"],
                    arr(&[int(0), null(resp3), null(resp3), null_array(resp3)]),
                ),
                (&["XPENDING", "s", "g", "-", "+", "10"], arr(&[])),
            ],
        );
        c.cmd_str(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "bob",
            "COUNT",
            "1",
            "STREAMS",
            "s",
            ">",
        ]);
        c.cmd_str(&["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"]);
        c.cmd_str(&["XGROUP", "CREATECONSUMER", "s", "g", "idle-one"]);
        check(
            &mut c,
            &[
                (
                    &["XPENDING", "s", "g"],
                    arr(&[
                        int(3),
                        bulk("1-1"),
                        bulk("3-1"),
                        arr(&[
                            arr(&[bulk("alice"), bulk("2")]),
                            arr(&[bulk("bob"), bulk("1")]),
                        ]),
                    ]),
                ),
                (&["XPENDING", "s", "g", "-", "+", "10", "nobody"], arr(&[])),
                (&["XPENDING", "s", "g", "-", "+", "0"], arr(&[])),
                (&["XPENDING", "s", "g", "-", "+", "-5"], arr(&[])),
                (
                    &["XPENDING", "s", "g", "IDLE", "3600000", "-", "+", "10"],
                    arr(&[]),
                ),
                (&["XPENDING", "s", "g", "-"], err("ERR syntax error")),
                (&["XPENDING", "s", "g", "-", "+"], err("ERR syntax error")),
                (
                    &["XPENDING", "s", "g", "IDLE", "5", "-", "+"],
                    err("ERR syntax error"),
                ),
                (
                    &["XPENDING", "s", "g", "-", "+", "10", "c", "x", "y", "z"],
                    err("ERR syntax error"),
                ),
                (
                    &["XPENDING", "s", "g", "-", "+", "x"],
                    err("ERR value is not an integer or out of range"),
                ),
                (
                    &["XPENDING", "s", "g", "IDLE", "x", "-", "+", "10"],
                    err("ERR value is not an integer or out of range"),
                ),
                (&["XPENDING", "s", "g", "(+", "+", "10"], err(INVALID_ID)),
                (
                    &["XPENDING", "s", "g", "-", "(0-0", "10"],
                    err("ERR invalid end ID for the interval"),
                ),
                (&["XPENDING", "nokey", "g"], nogroup("nokey", "g")),
                (
                    &["XPENDING", "s", "nog", "-", "+", "1"],
                    nogroup("s", "nog"),
                ),
                // Range arguments are checked before the group.
                (&["XPENDING", "s", "nog", "bad", "+", "1"], err(INVALID_ID)),
                (
                    &["XPENDING", "s"],
                    err("ERR wrong number of arguments for 'xpending' command"),
                ),
            ],
        );
        let rows = pending_rows(&mut c, &["XPENDING", "s", "g", "-", "+", "10"]);
        let who: Vec<(&str, &str, i64)> = rows
            .iter()
            .map(|(id, c, _, n)| (id.as_str(), c.as_str(), *n))
            .collect();
        assert_eq!(
            who,
            vec![("1-1", "bob", 1), ("2-1", "alice", 1), ("3-1", "alice", 1)]
        );
        assert!(rows.iter().all(|r| (0..1000).contains(&r.2)), "{rows:?}");
        let ex = pending_rows(&mut c, &["XPENDING", "s", "g", "(1-1", "(3-1", "10"]);
        assert_eq!(
            ex.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
            vec!["2-1"]
        );
        let alice = pending_rows(
            &mut c,
            &["XPENDING", "s", "g", "IDLE", "0", "-", "+", "1", "alice"],
        );
        assert_eq!(
            alice.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
            vec!["2-1"]
        );
        thread::sleep(Duration::from_millis(30));
        let idle = pending_rows(
            &mut c,
            &["XPENDING", "s", "g", "IDLE", "25", "-", "+", "10"],
        );
        assert_eq!(idle.len(), 3);
        assert!(idle.iter().all(|r| r.2 >= 25), "{idle:?}");
    }
}

// ---------------------------------------------------------------------------------------
// XCLAIM
// ---------------------------------------------------------------------------------------

#[test]
fn xclaim_moves_entries_and_honours_every_option() {
    let server = start_server();
    let mut c = server.raw();
    for id in ["1-1", "2-1", "3-1"] {
        c.cmd_str(&["XADD", "s", id, "f", "v"]);
    }
    c.cmd_str(&["XGROUP", "CREATE", "s", "g", "0"]);
    c.cmd_str(&["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"]);
    check(
        &mut c,
        &[
            (
                &["XCLAIM", "s", "g", "bob", "0", "1-1", "JUSTID"],
                ids(&["1-1"]),
            ),
            (
                &["XCLAIM", "s", "g", "bob", "0", "2-1", "1-1"],
                arr(&[entry("2-1", &["f", "v"]), entry("1-1", &["f", "v"])]),
            ),
            // Not idle long enough.
            (&["XCLAIM", "s", "g", "bob", "3600000", "3-1"], arr(&[])),
            // Not pending, no FORCE; not in the stream at all.
            (&["XCLAIM", "s", "g", "bob", "0", "9-9"], arr(&[])),
            (&["XCLAIM", "s", "g", "bob", "0", "9-9", "FORCE"], arr(&[])),
        ],
    );
    // JUSTID kept the count of 1-1 at 1, then the second claim made it 2; 2-1 went to 2.
    let rows = pending_rows(&mut c, &["XPENDING", "s", "g", "-", "+", "10"]);
    let who: Vec<(&str, &str, i64)> = rows
        .iter()
        .map(|(id, c, _, n)| (id.as_str(), c.as_str(), *n))
        .collect();
    assert_eq!(
        who,
        vec![("1-1", "bob", 2), ("2-1", "bob", 2), ("3-1", "alice", 1)]
    );

    // An entry deleted from the stream loses its pending entry and is not returned.
    c.cmd_str(&["XDEL", "s", "3-1"]);
    check(
        &mut c,
        &[(&["XCLAIM", "s", "g", "bob", "0", "3-1"], arr(&[]))],
    );
    assert_eq!(
        pending_rows(&mut c, &["XPENDING", "s", "g", "-", "+", "10", "alice"]),
        vec![]
    );

    // FORCE creates the pending entry: count 1 with JUSTID, 2 without, RETRYCOUNT wins.
    for id in ["4-1", "5-1", "6-1"] {
        c.cmd_str(&["XADD", "s", id, "f", "v"]);
    }
    check(
        &mut c,
        &[
            (
                &["XCLAIM", "s", "g", "carol", "0", "4-1", "FORCE", "JUSTID"],
                ids(&["4-1"]),
            ),
            (
                &["XCLAIM", "s", "g", "carol", "0", "5-1", "FORCE"],
                arr(&[entry("5-1", &["f", "v"])]),
            ),
            (
                &[
                    "XCLAIM",
                    "s",
                    "g",
                    "carol",
                    "0",
                    "6-1",
                    "FORCE",
                    "RETRYCOUNT",
                    "7",
                    "JUSTID",
                ],
                ids(&["6-1"]),
            ),
        ],
    );
    let counts: Vec<i64> = pending_rows(&mut c, &["XPENDING", "s", "g", "4-1", "+", "10", "carol"])
        .iter()
        .map(|r| r.3)
        .collect();
    assert_eq!(counts, vec![1, 2, 7]);

    // IDLE and TIME set the delivery time; a time in the future means now.
    c.cmd_str(&[
        "XCLAIM", "s", "g", "bob", "0", "4-1", "IDLE", "500000", "JUSTID",
    ]);
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let t = (now_ms - 1_000_000).to_string();
    c.cmd_str(&["XCLAIM", "s", "g", "bob", "0", "5-1", "TIME", &t, "JUSTID"]);
    c.cmd_str(&[
        "XCLAIM", "s", "g", "bob", "0", "6-1", "IDLE", "-100000", "JUSTID",
    ]);
    let rows = pending_rows(&mut c, &["XPENDING", "s", "g", "4-1", "+", "10"]);
    assert!((500_000..501_000).contains(&rows[0].2), "{rows:?}");
    assert!((1_000_000..1_001_000).contains(&rows[1].2), "{rows:?}");
    assert!((0..1000).contains(&rows[2].2), "{rows:?}");
    assert_eq!(
        rows.iter().map(|r| r.3).collect::<Vec<_>>(),
        vec![1, 2, 7],
        "JUSTID keeps counts"
    );

    // LASTID raises the group's last-delivered ID, never lowers it.
    c.cmd_str(&[
        "XCLAIM", "s", "g", "bob", "0", "1-1", "LASTID", "100-0", "JUSTID",
    ]);
    c.cmd_str(&[
        "XCLAIM", "s", "g", "bob", "0", "1-1", "LASTID", "50-0", "JUSTID",
    ]);
    let g = cmd(&mut c, &["XINFO", "GROUPS", "s"]);
    assert_eq!(g.arr()[0].get("last-delivered-id").str(), "100-0");
}

#[test]
fn xclaim_errors_match_redis() {
    let server = start_server();
    let mut c = server.raw();
    c.cmd_str(&["XADD", "s", "1-1", "f", "v"]);
    c.cmd_str(&["XGROUP", "CREATE", "s", "g", "0"]);
    check(
        &mut c,
        &[
            (
                &["XCLAIM", "nokey", "g", "c", "0", "1-1"],
                nogroup("nokey", "g"),
            ),
            // The group is checked before min-idle-time.
            (
                &["XCLAIM", "s", "nog", "c", "x", "1-1"],
                nogroup("s", "nog"),
            ),
            (
                &["XCLAIM", "s", "g", "c", "x", "1-1"],
                err("ERR Invalid min-idle-time argument for XCLAIM"),
            ),
            (
                &["XCLAIM", "s", "g", "c", "0", "1-1", "IDLE", "x"],
                err("ERR Invalid IDLE option argument for XCLAIM"),
            ),
            (
                &["XCLAIM", "s", "g", "c", "0", "1-1", "TIME", "x"],
                err("ERR Invalid TIME option argument for XCLAIM"),
            ),
            (
                &["XCLAIM", "s", "g", "c", "0", "1-1", "RETRYCOUNT", "x"],
                err("ERR Invalid RETRYCOUNT option argument for XCLAIM"),
            ),
            (
                &["XCLAIM", "s", "g", "c", "0", "1-1", "LASTID", "+"],
                err(INVALID_ID),
            ),
            (
                &["XCLAIM", "s", "g", "c", "0", "1-1", "FOO"],
                err("ERR Unrecognized XCLAIM option 'FOO'"),
            ),
            // A malformed ID ends the IDs: it is read as an option.
            (
                &["XCLAIM", "s", "g", "c", "0", "1-1", "1-", "2-2"],
                err("ERR Unrecognized XCLAIM option '1-'"),
            ),
            (
                &["XCLAIM", "s", "g", "c", "0", "1-1", "IDLE"],
                err("ERR Unrecognized XCLAIM option 'IDLE'"),
            ),
            (
                &["XCLAIM", "s", "g", "c", "0"],
                err("ERR wrong number of arguments for 'xclaim' command"),
            ),
        ],
    );
    // Failed calls created no consumer.
    check(&mut c, &[(&["XINFO", "CONSUMERS", "s", "g"], arr(&[]))]);
}

// ---------------------------------------------------------------------------------------
// XAUTOCLAIM
// ---------------------------------------------------------------------------------------

#[test]
fn xautoclaim_iterates_and_purges_deleted_entries() {
    let server = start_server();
    for resp3 in [false, true] {
        let mut c = conn(&server, resp3);
        c.cmd_str(&["FLUSHALL"]);
        for id in ["1-0", "2-0", "3-0"] {
            c.cmd_str(&["XADD", "x", id, "f", "v"]);
        }
        c.cmd_str(&["XGROUP", "CREATE", "x", "grp", "0"]);
        c.cmd_str(&["XREADGROUP", "GROUP", "grp", "Alice", "STREAMS", "x", ">"]);
        c.cmd_str(&["XDEL", "x", "1-0"]);
        c.cmd_str(&["XDEL", "x", "2-0"]);
        check(
            &mut c,
            &[
                // Deleted entries count against COUNT and come back in the third element.
                (
                    &["XAUTOCLAIM", "x", "grp", "Bob", "0", "0-0", "COUNT", "1"],
                    arr(&[bulk("2-0"), arr(&[]), ids(&["1-0"])]),
                ),
                (
                    &["XAUTOCLAIM", "x", "grp", "Bob", "0", "2-0", "COUNT", "1"],
                    arr(&[bulk("3-0"), arr(&[]), ids(&["2-0"])]),
                ),
                (
                    &["XAUTOCLAIM", "x", "grp", "Bob", "0", "3-0", "COUNT", "1"],
                    arr(&[bulk("0-0"), arr(&[entry("3-0", &["f", "v"])]), arr(&[])]),
                ),
                (&["XPENDING", "x", "grp", "-", "+", "10", "Alice"], arr(&[])),
                (
                    &["XAUTOCLAIM", "x", "grp", "Carol", "0", "-", "JUSTID"],
                    arr(&[bulk("0-0"), ids(&["3-0"]), arr(&[])]),
                ),
                // Owned entries not idle long enough are passed over; the cursor moves on.
                (
                    &["XAUTOCLAIM", "x", "grp", "Bob", "3600000", "-"],
                    arr(&[bulk("0-0"), arr(&[]), arr(&[])]),
                ),
            ],
        );
    }
}

#[test]
fn xautoclaim_as_an_iterator_with_the_attempts_limit() {
    let server = start_server();
    let mut c = server.raw();
    for i in 1..=25 {
        c.cmd_str(&["XADD", "s", &format!("{i}-0"), "f", "v"]);
    }
    c.cmd_str(&["XGROUP", "CREATE", "s", "g", "0"]);
    c.cmd_str(&["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"]);
    // Nothing is idle an hour: COUNT 2 looks at 20 entries, then stops with a cursor.
    check(
        &mut c,
        &[(
            &[
                "XAUTOCLAIM",
                "s",
                "g",
                "bob",
                "3600000",
                "0",
                "COUNT",
                "2",
                "JUSTID",
            ],
            arr(&[bulk("21-0"), arr(&[]), arr(&[])]),
        )],
    );
    // Walk with the cursor, two at a time.
    let mut cursor = "0".to_string();
    let mut claimed = Vec::new();
    loop {
        let r = cmd(
            &mut c,
            &[
                "XAUTOCLAIM",
                "s",
                "g",
                "bob",
                "0",
                &cursor,
                "COUNT",
                "2",
                "JUSTID",
            ],
        );
        let r = r.arr();
        claimed.extend(r[1].arr().iter().map(V::str));
        cursor = r[0].str();
        if cursor == "0-0" {
            break;
        }
    }
    let want: Vec<String> = (1..=25).map(|i| format!("{i}-0")).collect();
    assert_eq!(claimed, want);
    check(
        &mut c,
        &[
            (
                &["XAUTOCLAIM", "s", "g", "c", "x", "0"],
                err("ERR Invalid min-idle-time argument for XAUTOCLAIM"),
            ),
            (
                &["XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "0"],
                err("ERR COUNT must be > 0"),
            ),
            (
                &[
                    "XAUTOCLAIM",
                    "s",
                    "g",
                    "c",
                    "0",
                    "0",
                    "COUNT",
                    "8070450532247928833",
                ],
                err("ERR COUNT must be > 0"),
            ),
            (
                &["XAUTOCLAIM", "s", "g", "c", "0", "0", "FOO"],
                err("ERR syntax error"),
            ),
            (&["XAUTOCLAIM", "s", "g", "c", "0", "bad"], err(INVALID_ID)),
            (
                &["XAUTOCLAIM", "nokey", "g", "c", "0", "0"],
                nogroup("nokey", "g"),
            ),
            // Arguments are checked before the key.
            (
                &["XAUTOCLAIM", "nokey", "g", "c", "x", "0"],
                err("ERR Invalid min-idle-time argument for XAUTOCLAIM"),
            ),
            (
                &["XAUTOCLAIM", "s", "g", "c", "0"],
                err("ERR wrong number of arguments for 'xautoclaim' command"),
            ),
        ],
    );
}

// ---------------------------------------------------------------------------------------
// XREADGROUP CLAIM (8.4)
// ---------------------------------------------------------------------------------------

#[test]
fn xreadgroup_claim_serves_idle_pending_entries_before_new_ones() {
    let server = start_server();
    for resp3 in [false, true] {
        let mut c = conn(&server, resp3);
        c.cmd_str(&["FLUSHALL"]);
        c.cmd_str(&["XADD", "s", "1-0", "f", "v1"]);
        c.cmd_str(&["XADD", "s", "2-0", "f", "v2"]);
        c.cmd_str(&["XGROUP", "CREATE", "s", "g", "0"]);
        c.cmd_str(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "c1",
            "COUNT",
            "1",
            "STREAMS",
            "s",
            ">",
        ]);
        // Not idle enough and nothing new: null.
        c.cmd_str(&["XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">"]);
        check(
            &mut c,
            &[(
                &[
                    "XREADGROUP",
                    "GROUP",
                    "g",
                    "c2",
                    "CLAIM",
                    "60000",
                    "STREAMS",
                    "s",
                    ">",
                ],
                null_array(resp3),
            )],
        );
        c.cmd_str(&["XADD", "s", "3-0", "f", "v3"]);
        c.cmd_str(&["XADD", "s", "4-0", "f", "v4"]);
        thread::sleep(Duration::from_millis(120));
        let got = read_entries(&cmd(
            &mut c,
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "c2",
                "COUNT",
                "3",
                "CLAIM",
                "100",
                "STREAMS",
                "s",
                ">",
            ],
        ));
        let shape: Vec<(String, i64)> = got
            .iter()
            .map(|e| (e.arr()[0].str(), e.arr()[3].int()))
            .collect();
        assert_eq!(
            shape,
            vec![("1-0".into(), 1), ("2-0".into(), 1), ("3-0".into(), 0)],
            "{got:?}"
        );
        assert!(got[0].arr()[2].int() >= 100 && got[1].arr()[2].int() >= 100);
        assert_eq!(got[2].arr()[2], V::Int(0));
        assert_eq!(
            got[0].arr()[1],
            V::Arr(vec![V::Bulk(b"f".to_vec()), V::Bulk(b"v1".to_vec())])
        );
        let rows = pending_rows(&mut c, &["XPENDING", "s", "g", "-", "+", "10"]);
        let who: Vec<(&str, &str, i64)> = rows
            .iter()
            .map(|(id, c, _, n)| (id.as_str(), c.as_str(), *n))
            .collect();
        assert_eq!(
            who,
            vec![("1-0", "c2", 2), ("2-0", "c2", 2), ("3-0", "c2", 1)]
        );
        // CLAIM is ignored by history reads.
        let hist = read_entries(&cmd(
            &mut c,
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "c2",
                "CLAIM",
                "0",
                "STREAMS",
                "s",
                "0",
            ],
        ));
        assert!(hist.iter().all(|e| e.arr().len() == 2), "{hist:?}");
    }
}

// ---------------------------------------------------------------------------------------
// XINFO GROUPS / CONSUMERS / STREAM FULL
// ---------------------------------------------------------------------------------------

#[test]
fn xinfo_groups_shape_in_resp2_and_resp3() {
    let server = start_server();
    for resp3 in [false, true] {
        let mut c = conn(&server, resp3);
        c.cmd_str(&["FLUSHALL"]);
        for id in ["1-0", "2-0", "3-0"] {
            c.cmd_str(&["XADD", "s", id, "f", "v"]);
        }
        c.cmd_str(&["XGROUP", "CREATE", "s", "zeta", "0"]);
        c.cmd_str(&["XGROUP", "CREATE", "s", "alpha", "$"]);
        c.cmd_str(&[
            "XREADGROUP",
            "GROUP",
            "zeta",
            "c",
            "COUNT",
            "1",
            "STREAMS",
            "s",
            ">",
        ]);
        let group = |name: &str, consumers, pending, last: &str, read: Vec<u8>, lag: Vec<u8>| {
            map(
                resp3,
                &[
                    ("name", bulk(name)),
                    ("consumers", int(consumers)),
                    ("pending", int(pending)),
                    ("last-delivered-id", bulk(last)),
                    ("entries-read", read),
                    ("lag", lag),
                ],
            )
        };
        check(
            &mut c,
            &[
                (
                    &["XINFO", "GROUPS", "s"],
                    arr(&[
                        // `$` on a stream with entries: entries-read unknown, lag 0.
                        group("alpha", 0, 0, "3-0", null(resp3), int(0)),
                        group("zeta", 1, 1, "1-0", int(1), int(2)),
                    ]),
                ),
                (
                    &["XINFO", "CONSUMERS", "s", "nog"],
                    nogroup_for_key("s", "nog"),
                ),
                (&["XINFO", "CONSUMERS", "s", "alpha"], arr(&[])),
                (&["XINFO", "GROUPS", "nokey"], err("ERR no such key")),
            ],
        );
        let consumers = cmd(&mut c, &["XINFO", "CONSUMERS", "s", "zeta"]);
        let one = &consumers.arr()[0];
        assert_eq!(one.keys(), vec!["name", "pending", "idle", "inactive"]);
        assert_eq!(one.get("name").str(), "c");
        assert_eq!(one.get("pending"), &V::Int(1));
        assert!((0..1000).contains(&one.get("idle").int()));
        assert!((0..1000).contains(&one.get("inactive").int()));
        assert_eq!(matches!(one, V::Map(_)), resp3);
    }
}

#[test]
fn xinfo_full_groups_list_pending_entries_and_consumers() {
    let server = start_server();
    for resp3 in [false, true] {
        let mut c = conn(&server, resp3);
        c.cmd_str(&["FLUSHALL"]);
        for (i, f) in ["a", "b", "c", "e", "f"].iter().enumerate() {
            c.cmd_str(&["XADD", "x", &format!("{}", 100 + i), f, "1"]);
        }
        c.cmd_str(&["XGROUP", "CREATE", "x", "g1", "0"]);
        c.cmd_str(&["XGROUP", "CREATE", "x", "g2", "0"]);
        c.cmd_str(&[
            "XREADGROUP",
            "GROUP",
            "g1",
            "Alice",
            "COUNT",
            "1",
            "STREAMS",
            "x",
            ">",
        ]);
        c.cmd_str(&[
            "XREADGROUP",
            "GROUP",
            "g1",
            "Bob",
            "COUNT",
            "1",
            "STREAMS",
            "x",
            ">",
        ]);
        c.cmd_str(&[
            "XREADGROUP",
            "GROUP",
            "g1",
            "Bob",
            "NOACK",
            "COUNT",
            "1",
            "STREAMS",
            "x",
            ">",
        ]);
        c.cmd_str(&[
            "XREADGROUP",
            "GROUP",
            "g2",
            "Charlie",
            "COUNT",
            "4",
            "STREAMS",
            "x",
            ">",
        ]);
        c.cmd_str(&["XDEL", "x", "103"]);
        let full = cmd(&mut c, &["XINFO", "STREAM", "x", "FULL"]);
        let groups = full.get("groups").arr();
        assert_eq!(groups.len(), 2);
        let g1 = &groups[0];
        assert_eq!(
            g1.keys(),
            vec![
                "name",
                "last-delivered-id",
                "entries-read",
                "lag",
                "pel-count",
                "nacked-count",
                "pending",
                "consumers"
            ]
        );
        assert_eq!(g1.get("name").str(), "g1");
        assert_eq!(g1.get("last-delivered-id").str(), "102-0");
        assert_eq!(g1.get("entries-read"), &V::Int(3));
        // A tombstone (103) lies after the group's position: lag unknown.
        assert_eq!(g1.get("lag"), &V::Null);
        assert_eq!(g1.get("pel-count"), &V::Int(2));
        assert_eq!(g1.get("nacked-count"), &V::Int(0));
        let pending = g1.get("pending").arr();
        assert_eq!(pending.len(), 2);
        assert_eq!(pending[0].arr()[0].str(), "100-0");
        assert_eq!(pending[0].arr()[1].str(), "Alice");
        assert_eq!(pending[0].arr()[3], V::Int(1));
        let consumers = g1.get("consumers").arr();
        assert_eq!(consumers.len(), 2);
        let alice = &consumers[0];
        assert_eq!(
            alice.keys(),
            vec!["name", "seen-time", "active-time", "pel-count", "pending"]
        );
        assert_eq!(alice.get("name").str(), "Alice");
        assert_eq!(alice.get("pel-count"), &V::Int(1));
        assert_eq!(alice.get("pending").arr()[0].arr()[0].str(), "100-0");
        assert_eq!(alice.get("pending").arr()[0].arr().len(), 3);
        let seen = alice.get("seen-time").int();
        assert_eq!(alice.get("active-time").int(), seen);
        assert_eq!(
            pending[0].arr()[2].int(),
            seen,
            "delivery time of Alice's entry"
        );
        let g2 = &groups[1];
        assert_eq!(g2.get("name").str(), "g2");
        let charlie = &g2.get("consumers").arr()[0];
        let ids: Vec<String> = charlie
            .get("pending")
            .arr()
            .iter()
            .map(|p| p.arr()[0].str())
            .collect();
        assert_eq!(ids, vec!["100-0", "101-0", "102-0", "103-0"]);
        // COUNT limits every list.
        let full = cmd(&mut c, &["XINFO", "STREAM", "x", "FULL", "COUNT", "1"]);
        let g2 = &full.get("groups").arr()[1];
        assert_eq!(g2.get("pending").arr().len(), 1);
        assert_eq!(g2.get("consumers").arr()[0].get("pending").arr().len(), 1);
        assert_eq!(g2.get("pel-count"), &V::Int(4));
        // A consumer that never read anything is inactive -1.
        c.cmd_str(&["XGROUP", "CREATECONSUMER", "x", "g2", "Dan"]);
        let full = cmd(&mut c, &["XINFO", "STREAM", "x", "FULL"]);
        let dan = &full.get("groups").arr()[1].get("consumers").arr()[1];
        assert_eq!(dan.get("active-time"), &V::Int(-1));
        let summary = cmd(&mut c, &["XINFO", "STREAM", "x"]);
        assert_eq!(summary.get("groups"), &V::Int(2));
    }
}

/// Reads `group`'s (entries-read, lag) from XINFO STREAM FULL (None = null).
fn read_and_lag(c: &mut Raw, key: &str, group: usize) -> (Option<i64>, Option<i64>) {
    let full = cmd(c, &["XINFO", "STREAM", key, "FULL"]);
    let g = &full.get("groups").arr()[group];
    let opt = |v: &V| match v {
        V::Int(n) => Some(*n),
        V::Null => None,
        other => panic!("{other:?}"),
    };
    (opt(g.get("entries-read")), opt(g.get("lag")))
}

#[test]
fn entries_read_and_lag_follow_the_reference_examples() {
    let server = start_server();
    let mut c = server.raw();
    // Sanity: a group at 0 on 5 entries, then reading 1, then all, then one more XADD.
    for i in 1..=5 {
        c.cmd_str(&["XADD", "x", &format!("{i}-0"), "data", "v"]);
    }
    c.cmd_str(&["XGROUP", "CREATE", "x", "g1", "0"]);
    assert_eq!(read_and_lag(&mut c, "x", 0), (None, Some(5)));
    c.cmd_str(&[
        "XREADGROUP",
        "GROUP",
        "g1",
        "c11",
        "COUNT",
        "1",
        "STREAMS",
        "x",
        ">",
    ]);
    assert_eq!(read_and_lag(&mut c, "x", 0), (Some(1), Some(4)));
    c.cmd_str(&[
        "XREADGROUP",
        "GROUP",
        "g1",
        "c12",
        "COUNT",
        "10",
        "STREAMS",
        "x",
        ">",
    ]);
    assert_eq!(read_and_lag(&mut c, "x", 0), (Some(5), Some(0)));
    c.cmd_str(&["XADD", "x", "6-0", "data", "f"]);
    assert_eq!(read_and_lag(&mut c, "x", 0), (Some(5), Some(1)));

    // With an XDEL in the middle, lag is unknown until the group reads past the tombstone.
    c.cmd_str(&["DEL", "y"]);
    for i in 1..=5 {
        c.cmd_str(&["XADD", "y", &format!("{i}-0"), "data", "v"]);
    }
    c.cmd_str(&["XDEL", "y", "3-0"]);
    c.cmd_str(&["XGROUP", "CREATE", "y", "g1", "0"]);
    c.cmd_str(&["XGROUP", "CREATE", "y", "g2", "0"]);
    assert_eq!(read_and_lag(&mut c, "y", 0), (None, None));
    for _ in 0..3 {
        c.cmd_str(&[
            "XREADGROUP",
            "GROUP",
            "g1",
            "c11",
            "COUNT",
            "1",
            "STREAMS",
            "y",
            ">",
        ]);
        assert_eq!(read_and_lag(&mut c, "y", 0), (None, None));
    }
    c.cmd_str(&[
        "XREADGROUP",
        "GROUP",
        "g1",
        "c11",
        "COUNT",
        "1",
        "STREAMS",
        "y",
        ">",
    ]);
    assert_eq!(read_and_lag(&mut c, "y", 0), (Some(5), Some(0)));
    c.cmd_str(&["XADD", "y", "6-0", "data", "f"]);
    assert_eq!(read_and_lag(&mut c, "y", 0), (Some(5), Some(1)));
    // XTRIM does not invalidate lag.
    c.cmd_str(&["XTRIM", "y", "MINID", "=", "3-0"]);
    assert_eq!(read_and_lag(&mut c, "y", 0), (Some(5), Some(1)));
    assert_eq!(read_and_lag(&mut c, "y", 1), (None, Some(3)));
    c.cmd_str(&["XTRIM", "y", "MINID", "=", "5-0"]);
    assert_eq!(read_and_lag(&mut c, "y", 1), (None, Some(2)));

    // Empty streams: lag 0 whatever the counters.
    c.cmd_str(&["XGROUP", "CREATE", "z", "g1", "0", "MKSTREAM"]);
    assert_eq!(read_and_lag(&mut c, "z", 0), (None, Some(0)));
    c.cmd_str(&["XADD", "z", "1-0", "data", "a"]);
    c.cmd_str(&["XDEL", "z", "1-0"]);
    assert_eq!(read_and_lag(&mut c, "z", 0), (None, Some(0)));
}

// ---------------------------------------------------------------------------------------
// Blocking
// ---------------------------------------------------------------------------------------

#[test]
fn blocked_xreadgroup_fans_in_one_entry_per_consumer() {
    let server = start_server();
    let mut c = server.raw();
    c.cmd_str(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    let mut w1 = server.raw();
    let mut w2 = server.raw();
    send(
        &mut w1,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "w1",
            "BLOCK",
            "0",
            "STREAMS",
            "s",
            ">",
        ],
    );
    wait_blocked(&mut c, 1);
    send(
        &mut w2,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "w2",
            "BLOCK",
            "0",
            "STREAMS",
            "s",
            ">",
        ],
    );
    wait_blocked(&mut c, 2);
    c.cmd_str(&["XADD", "s", "1-1", "f", "v"]);
    // The first blocked consumer gets it; the other stays blocked.
    assert_eq!(
        escape(&w1.read_reply()),
        escape(&streams(false, &[("s", arr(&[entry("1-1", &["f", "v"])]))]))
    );
    wait_blocked(&mut c, 1);
    c.cmd_str(&["XADD", "s", "2-1", "f", "v"]);
    assert_eq!(
        escape(&w2.read_reply()),
        escape(&streams(false, &[("s", arr(&[entry("2-1", &["f", "v"])]))]))
    );
    wait_blocked(&mut c, 0);
    let rows = pending_rows(&mut c, &["XPENDING", "s", "g", "-", "+", "10"]);
    let who: Vec<(&str, &str)> = rows.iter().map(|r| (r.0.as_str(), r.1.as_str())).collect();
    assert_eq!(who, vec![("1-1", "w1"), ("2-1", "w2")]);
}

#[test]
fn blocked_xreadgroup_gets_nogroup_when_the_key_or_group_goes() {
    let server = start_server();
    for resp3 in [false, true] {
        let mut c = server.raw();
        c.cmd_str(&["FLUSHALL"]);
        c.cmd_str(&["CONFIG", "RESETSTAT"]);
        // DEL
        c.cmd_str(&["XADD", "s", "666", "f", "v"]);
        c.cmd_str(&["XGROUP", "CREATE", "s", "g", "$"]);
        let mut w = conn(&server, resp3);
        send(
            &mut w,
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "Alice",
                "BLOCK",
                "0",
                "STREAMS",
                "s",
                ">",
            ],
        );
        wait_blocked(&mut c, 1);
        c.cmd_str(&["DEL", "s"]);
        assert_eq!(escape(&w.read_reply()), escape(&nogroup_read("s", "g")));
        // XGROUP DESTROY
        c.cmd_str(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
        send(
            &mut w,
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "Alice",
                "BLOCK",
                "0",
                "STREAMS",
                "s",
                ">",
            ],
        );
        wait_blocked(&mut c, 1);
        check(&mut c, &[(&["XGROUP", "DESTROY", "s", "g"], int(1))]);
        assert_eq!(escape(&w.read_reply()), escape(&nogroup_read("s", "g")));
        // FLUSHALL
        c.cmd_str(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
        send(
            &mut w,
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "Alice",
                "BLOCK",
                "0",
                "STREAMS",
                "s",
                ">",
            ],
        );
        wait_blocked(&mut c, 1);
        c.cmd_str(&["FLUSHALL"]);
        assert_eq!(escape(&w.read_reply()), escape(&nogroup_read("s", "g")));
        wait_blocked(&mut c, 0);
        // The failed re-executions count as NOGROUP errors of XREADGROUP.
        assert_eq!(
            info_field(&mut c, "errorstats", "errorstat_NOGROUP").as_deref(),
            Some("count=3")
        );
        let stat = info_field(&mut c, "commandstats", "cmdstat_xreadgroup").expect("cmdstat");
        assert!(stat.ends_with("failed_calls=3"), "{stat}");
    }
}

#[test]
fn blocked_xreadgroup_times_out_with_null_and_history_never_blocks() {
    let server = start_server();
    for resp3 in [false, true] {
        let mut c = conn(&server, resp3);
        c.cmd_str(&["FLUSHALL"]);
        c.cmd_str(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
        c.cmd_str(&["XADD", "s", "666", "f", "v"]);
        c.cmd_str(&["XDEL", "s", "666"]);
        let start = Instant::now();
        check(
            &mut c,
            &[
                // The last entry was deleted: nothing to serve, so it blocks, then times out.
                (
                    &[
                        "XREADGROUP",
                        "GROUP",
                        "g",
                        "c",
                        "BLOCK",
                        "50",
                        "STREAMS",
                        "s",
                        ">",
                    ],
                    null_array(resp3),
                ),
            ],
        );
        assert!(start.elapsed() >= Duration::from_millis(50));
        check(
            &mut c,
            &[
                (
                    &[
                        "XREADGROUP",
                        "GROUP",
                        "g",
                        "c",
                        "BLOCK",
                        "0",
                        "STREAMS",
                        "s",
                        "0",
                    ],
                    streams(resp3, &[("s", arr(&[]))]),
                ),
                // Inside MULTI a blocking read answers at once.
                (&["MULTI"], ok()),
                (
                    &[
                        "XREADGROUP",
                        "GROUP",
                        "g",
                        "c",
                        "BLOCK",
                        "0",
                        "STREAMS",
                        "s",
                        ">",
                    ],
                    status("QUEUED"),
                ),
                (&["EXEC"], arr(&[null_array(resp3)])),
            ],
        );
    }
}

// ---------------------------------------------------------------------------------------
// At-least-once and exactly-once delivery
// ---------------------------------------------------------------------------------------

#[test]
fn a_crashed_consumers_entries_are_recovered_and_acked_exactly_once() {
    let server = start_server();
    let mut admin = server.raw();
    for i in 1..=100 {
        admin.cmd_str(&["XADD", "s", &format!("{i}-0"), "n", &i.to_string()]);
    }
    admin.cmd_str(&["XGROUP", "CREATE", "s", "g", "0"]);
    {
        // Consumer A reads everything and dies without acknowledging.
        let mut a = server.raw();
        let got = read_entries(&cmd(
            &mut a,
            &["XREADGROUP", "GROUP", "g", "A", "STREAMS", "s", ">"],
        ));
        assert_eq!(got.len(), 100);
    }
    // Consumer C finds nothing new: every entry was delivered once.
    let mut consumer_c = server.raw();
    check(
        &mut consumer_c,
        &[(
            &["XREADGROUP", "GROUP", "g", "C", "STREAMS", "s", ">"],
            null_array(false),
        )],
    );
    // B cannot take them before they are idle long enough...
    let mut b = server.raw();
    check(
        &mut b,
        &[(
            &["XAUTOCLAIM", "s", "g", "B", "100", "0", "COUNT", "10"],
            arr(&[bulk("0-0"), arr(&[]), arr(&[])]),
        )],
    );
    thread::sleep(Duration::from_millis(120));
    // ...then recovers them all, 30 at a time, and acknowledges each batch.
    let mut cursor = "0-0".to_string();
    let mut recovered = Vec::new();
    let mut acked = 0;
    loop {
        let r = cmd(
            &mut b,
            &["XAUTOCLAIM", "s", "g", "B", "100", &cursor, "COUNT", "30"],
        );
        let r = r.arr();
        let batch: Vec<String> = r[1].arr().iter().map(|e| e.arr()[0].str()).collect();
        assert!(r[2].arr().is_empty());
        if !batch.is_empty() {
            // Delivered twice now: once to A, once to B.
            let rows = pending_rows(
                &mut b,
                &[
                    "XPENDING",
                    "s",
                    "g",
                    &batch[0],
                    &batch[batch.len() - 1],
                    "100",
                ],
            );
            assert!(rows.iter().all(|r| r.1 == "B" && r.3 == 2), "{rows:?}");
            let mut args = vec!["XACK", "s", "g"];
            args.extend(batch.iter().map(String::as_str));
            acked += cmd(&mut b, &args).int();
        }
        recovered.extend(batch);
        cursor = r[0].str();
        if cursor == "0-0" {
            break;
        }
    }
    let want: Vec<String> = (1..=100).map(|i| format!("{i}-0")).collect();
    assert_eq!(recovered, want);
    assert_eq!(acked, 100);
    check(
        &mut admin,
        &[
            (
                &["XPENDING", "s", "g"],
                arr(&[int(0), null(false), null(false), null_array(false)]),
            ),
            // Acknowledging again changes nothing.
            (&["XACK", "s", "g", "1-0", "50-0", "100-0"], int(0)),
        ],
    );
    let consumers = cmd(&mut admin, &["XINFO", "CONSUMERS", "s", "g"]);
    let names: Vec<String> = consumers
        .arr()
        .iter()
        .map(|c| c.get("name").str())
        .collect();
    assert_eq!(names, vec!["A", "B", "C"]);
}

#[test]
fn twenty_blocked_consumers_get_every_entry_of_four_producers_exactly_once() {
    const PRODUCERS: usize = 4;
    const PER_PRODUCER: usize = 2500;
    const CONSUMERS: usize = 20;
    const TOTAL: usize = PRODUCERS * PER_PRODUCER;
    let server = start_server();
    let mut admin = server.raw();
    admin.cmd_str(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    let received = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|i| {
            let mut raw = server.raw();
            let received = received.clone();
            let stop = stop.clone();
            let name = format!("c{i}");
            thread::spawn(move || {
                let mut mine = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    let reply = cmd(
                        &mut raw,
                        &[
                            "XREADGROUP",
                            "GROUP",
                            "g",
                            &name,
                            "COUNT",
                            "50",
                            "BLOCK",
                            "100",
                            "STREAMS",
                            "s",
                            ">",
                        ],
                    );
                    let ids: Vec<String> = read_entries(&reply)
                        .iter()
                        .map(|e| e.arr()[0].str())
                        .collect();
                    if ids.is_empty() {
                        continue;
                    }
                    let mut args = vec!["XACK", "s", "g"];
                    args.extend(ids.iter().map(String::as_str));
                    assert_eq!(cmd(&mut raw, &args).int(), ids.len() as i64);
                    received.fetch_add(ids.len(), Ordering::SeqCst);
                    mine.extend(ids);
                }
                mine
            })
        })
        .collect();
    wait_blocked(&mut admin, CONSUMERS);
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let mut raw = server.raw();
            thread::spawn(move || {
                for i in 0..PER_PRODUCER {
                    let reply =
                        raw.cmd_str(&["XADD", "s", "*", "p", &p.to_string(), "i", &i.to_string()]);
                    assert!(reply.starts_with(b"$"), "{}", escape(&reply));
                }
            })
        })
        .collect();
    for p in producers {
        p.join().expect("producer");
    }
    let start = Instant::now();
    while received.load(Ordering::SeqCst) < TOTAL {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "only {} of {TOTAL} entries delivered",
            received.load(Ordering::SeqCst)
        );
        thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::SeqCst);
    let mut all = Vec::new();
    let mut busy = 0;
    for c in consumers {
        let mine = c.join().expect("consumer");
        busy += usize::from(!mine.is_empty());
        all.extend(mine);
    }
    let unique: HashSet<&String> = all.iter().collect();
    assert_eq!(all.len(), TOTAL, "no entry delivered twice");
    assert_eq!(unique.len(), TOTAL, "no entry lost");
    assert!(busy > 1, "the work was shared");
    check(
        &mut admin,
        &[
            (&["XLEN", "s"], int(TOTAL as i64)),
            (
                &["XPENDING", "s", "g"],
                arr(&[int(0), null(false), null(false), null_array(false)]),
            ),
        ],
    );
    let g = &cmd(&mut admin, &["XINFO", "GROUPS", "s"]).arr()[0].clone();
    assert_eq!(g.get("entries-read"), &V::Int(TOTAL as i64));
    assert_eq!(g.get("lag"), &V::Int(0));
}

// ---------------------------------------------------------------------------------------
// redis-rs interop
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn redis_rs_parses_group_replies() {
    use redis::AsyncCommands;
    use redis::streams::{
        StreamAutoClaimReply, StreamClaimReply, StreamInfoGroupsReply, StreamPendingCountReply,
        StreamPendingReply, StreamReadOptions, StreamReadReply,
    };
    let server = start_server();
    for resp3 in [false, true] {
        let mut con = if resp3 {
            common::client_resp3(server.port).await
        } else {
            common::client(server.port).await
        };
        let _: () = redis::cmd("FLUSHALL").query_async(&mut con).await.unwrap();
        let _: () = con.xgroup_create_mkstream("s", "g", "$").await.unwrap();
        for i in 0..3 {
            let _: String = con.xadd("s", "*", &[("n", i)]).await.unwrap();
        }
        let opts = StreamReadOptions::default().group("g", "alice").count(2);
        let read: StreamReadReply = con.xread_options(&["s"], &[">"], &opts).await.unwrap();
        assert_eq!(read.keys[0].ids.len(), 2);
        let first = read.keys[0].ids[0].id.clone();
        let pending: StreamPendingReply = con.xpending("s", "g").await.unwrap();
        assert_eq!(pending.count(), 2);
        let rows: StreamPendingCountReply =
            con.xpending_count("s", "g", "-", "+", 10).await.unwrap();
        assert_eq!(rows.ids.len(), 2);
        assert_eq!(rows.ids[0].consumer, "alice");
        let claimed: StreamClaimReply = con.xclaim("s", "g", "bob", 0, &[&first]).await.unwrap();
        assert_eq!(claimed.ids[0].id, first);
        let auto: StreamAutoClaimReply = con
            .xautoclaim_options(
                "s",
                "g",
                "carol",
                0,
                "0",
                redis::streams::StreamAutoClaimOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(auto.claimed.len(), 2);
        assert_eq!(auto.next_stream_id, "0-0");
        let acked: usize = con.xack("s", "g", &[&first]).await.unwrap();
        assert_eq!(acked, 1);
        let groups: StreamInfoGroupsReply = con.xinfo_groups("s").await.unwrap();
        assert_eq!(groups.groups[0].name, "g");
        assert_eq!(groups.groups[0].pending, 1);
        assert_eq!(groups.groups[0].entries_read, Some(2));
        assert_eq!(groups.groups[0].lag, Some(1));
        // CLAIM's 4-element items.
        let opts = StreamReadOptions::default().group("g", "dave").claim(0);
        let read: StreamReadReply = con.xread_options(&["s"], &[">"], &opts).await.unwrap();
        let items = &read.keys[0].ids;
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].delivered_count, Some(2));
        assert_eq!(items[1].delivered_count, Some(0));
    }
}
