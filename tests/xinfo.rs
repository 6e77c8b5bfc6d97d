//! XINFO against the real binary: exact bytes of HELP, of the 16-field STREAM summary and
//! the 15-field FULL form in RESP2 (flat arrays) and RESP3 (maps), GROUPS/CONSUMERS before
//! consumer groups exist, and every error with its priority.

mod common;

use common::check;

use common::reply::{arr, bulk, entry, err, int, null};

use common::{Raw, start_server};

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

/// Stream-level numbers of the expected summary/FULL replies.
struct Expect<'a> {
    length: i64,
    keys: i64,
    nodes: i64,
    last: &'a str,
    max_deleted: &'a str,
    added: i64,
    first_id: &'a str,
}

/// Fields 1–13, shared by the summary and FULL.
fn common_fields<'a>(e: &Expect<'a>) -> Vec<(&'a str, Vec<u8>)> {
    vec![
        ("length", int(e.length)),
        ("radix-tree-keys", int(e.keys)),
        ("radix-tree-nodes", int(e.nodes)),
        ("last-generated-id", bulk(e.last)),
        ("max-deleted-entry-id", bulk(e.max_deleted)),
        ("entries-added", int(e.added)),
        ("recorded-first-entry-id", bulk(e.first_id)),
        ("idmp-duration", int(100)),
        ("idmp-maxsize", int(100)),
        ("pids-tracked", int(0)),
        ("iids-tracked", int(0)),
        ("iids-added", int(0)),
        ("iids-duplicates", int(0)),
    ]
}

fn summary(resp3: bool, e: &Expect<'_>, first: Vec<u8>, last: Vec<u8>) -> Vec<u8> {
    let mut pairs = common_fields(e);
    pairs.push(("groups", int(0)));
    pairs.push(("first-entry", first));
    pairs.push(("last-entry", last));
    assert_eq!(pairs.len(), 16);
    map(resp3, &pairs)
}

fn full(resp3: bool, e: &Expect<'_>, entries: &[Vec<u8>]) -> Vec<u8> {
    let mut pairs = common_fields(e);
    pairs.push(("entries", arr(entries)));
    pairs.push(("groups", arr(&[])));
    assert_eq!(pairs.len(), 15);
    map(resp3, &pairs)
}

#[test]
fn xinfo_help_lists_the_subcommands_with_redis_text() {
    let server = start_server();
    let mut r = server.raw();
    let status = |s: &str| format!("+{s}\r\n").into_bytes();
    let help = arr(&[
        status("XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"),
        status("CONSUMERS <key> <groupname>"),
        status("    Show consumers of <groupname>."),
        status("GROUPS <key>"),
        status("    Show the stream consumer groups."),
        // Redis's text lacks the closing `]`.
        status("STREAM <key> [FULL [COUNT <count>]"),
        status("    Show information about the stream."),
        status("HELP"),
        status("    Print this help."),
    ]);
    check(
        &mut r,
        &[
            (&["XINFO", "HELP"], help.clone()),
            (&["xinfo", "help"], help),
            (
                &["XINFO", "HELP", "x"],
                err("ERR wrong number of arguments for 'xinfo|help' command"),
            ),
        ],
    );
}

#[test]
fn xinfo_dispatch_and_arity_errors() {
    let server = start_server();
    let mut r = server.raw();
    check(
        &mut r,
        &[
            (
                &["XINFO"],
                err("ERR wrong number of arguments for 'xinfo' command"),
            ),
            (
                &["XINFO", "foo"],
                err("ERR unknown subcommand 'foo'. Try XINFO HELP."),
            ),
            (
                &["XINFO", "STREAM"],
                err("ERR wrong number of arguments for 'xinfo|stream' command"),
            ),
            (
                &["XINFO", "GROUPS"],
                err("ERR wrong number of arguments for 'xinfo|groups' command"),
            ),
            (
                &["XINFO", "GROUPS", "s", "x"],
                err("ERR wrong number of arguments for 'xinfo|groups' command"),
            ),
            (
                &["XINFO", "CONSUMERS", "s"],
                err("ERR wrong number of arguments for 'xinfo|consumers' command"),
            ),
            (
                &["XINFO", "CONSUMERS", "s", "g", "x"],
                err("ERR wrong number of arguments for 'xinfo|consumers' command"),
            ),
        ],
    );
}

#[test]
fn missing_key_is_reported_before_option_errors() {
    let server = start_server();
    let mut r = server.raw();
    let no_key = err("ERR no such key");
    check(
        &mut r,
        &[
            (&["XINFO", "STREAM", "nokey"], no_key.clone()),
            (&["XINFO", "STREAM", "nokey", "FULL"], no_key.clone()),
            (&["XINFO", "STREAM", "nokey", "bogus"], no_key.clone()),
            (
                &["XINFO", "STREAM", "nokey", "FULL", "COUNT", "x"],
                no_key.clone(),
            ),
            (&["XINFO", "GROUPS", "nokey"], no_key.clone()),
            (&["XINFO", "CONSUMERS", "nokey", "g"], no_key),
        ],
    );
}

#[test]
fn xinfo_stream_option_errors() {
    let server = start_server();
    let mut r = server.raw();
    assert_eq!(r.cmd_str(&["XADD", "s", "1-1", "f", "v"]), bulk("1-1"));
    let sub = |s: &str| {
        err(&format!(
            "ERR unknown subcommand or wrong number of arguments for '{s}'. Try XINFO HELP."
        ))
    };
    check(
        &mut r,
        &[
            (&["XINFO", "Stream", "s", "FULLX"], sub("Stream")),
            (&["XINFO", "STREAM", "s", "FULL", "COUNT"], sub("STREAM")),
            (
                &["XINFO", "stream", "s", "FULL", "LIMIT", "1"],
                sub("stream"),
            ),
            (
                &["XINFO", "STREAM", "s", "COUNT", "1", "FULL"],
                sub("STREAM"),
            ),
            (
                &["XINFO", "STREAM", "s", "FULL", "COUNT", "1", "x"],
                sub("STREAM"),
            ),
            (
                &["XINFO", "STREAM", "s", "FULL", "COUNT", "x"],
                err("ERR value is not an integer or out of range"),
            ),
            (
                &["XINFO", "STREAM", "s", "FULL", "COUNT", "+1"],
                err("ERR value is not an integer or out of range"),
            ),
        ],
    );
}

/// Three entries in one node, the middle one deleted.
fn fill(r: &mut Raw) {
    assert_eq!(
        r.cmd_str(&["XADD", "s", "1-1", "a", "1", "b", "2"]),
        bulk("1-1")
    );
    assert_eq!(
        r.cmd_str(&["XADD", "s", "2-1", "a", "3", "b", "4"]),
        bulk("2-1")
    );
    assert_eq!(r.cmd_str(&["XADD", "s", "3-1", "c", "5"]), bulk("3-1"));
    assert_eq!(r.cmd_str(&["XDEL", "s", "2-1"]), int(1));
}

const FILLED: Expect<'static> = Expect {
    length: 2,
    keys: 1,
    nodes: 2,
    last: "3-1",
    max_deleted: "2-1",
    added: 3,
    first_id: "1-1",
};

#[test]
fn xinfo_stream_summary_has_sixteen_fields_in_both_protocols() {
    let server = start_server();
    let mut r = server.raw();
    fill(&mut r);
    for resp3 in [false, true] {
        if resp3 {
            r.hello3();
        }
        check(
            &mut r,
            &[(
                &["XINFO", "STREAM", "s"],
                summary(
                    resp3,
                    &FILLED,
                    entry("1-1", &["a", "1", "b", "2"]),
                    entry("3-1", &["c", "5"]),
                ),
            )],
        );
    }
}

#[test]
fn xinfo_stream_of_an_empty_stream_has_null_entries() {
    let server = start_server();
    let mut r = server.raw();
    assert_eq!(r.cmd_str(&["XADD", "e", "5-1", "f", "v"]), bulk("5-1"));
    assert_eq!(r.cmd_str(&["XDEL", "e", "5-1"]), int(1));
    let empty = Expect {
        length: 0,
        keys: 0,
        nodes: 1,
        last: "5-1",
        max_deleted: "5-1",
        added: 1,
        first_id: "0-0",
    };
    for resp3 in [false, true] {
        if resp3 {
            r.hello3();
        }
        check(
            &mut r,
            &[
                (
                    &["XINFO", "STREAM", "e"],
                    summary(resp3, &empty, null(resp3), null(resp3)),
                ),
                (&["XINFO", "STREAM", "e", "FULL"], full(resp3, &empty, &[])),
            ],
        );
    }
}

#[test]
fn xinfo_stream_full_has_fifteen_fields_and_honours_count() {
    let server = start_server();
    let mut r = server.raw();
    fill(&mut r);
    let first = entry("1-1", &["a", "1", "b", "2"]);
    let last = entry("3-1", &["c", "5"]);
    for resp3 in [false, true] {
        if resp3 {
            r.hello3();
        }
        let both = full(resp3, &FILLED, &[first.clone(), last.clone()]);
        check(
            &mut r,
            &[
                (&["XINFO", "STREAM", "s", "FULL"], both.clone()),
                (
                    &["xinfo", "stream", "s", "full", "count", "0"],
                    both.clone(),
                ),
                (&["XINFO", "STREAM", "s", "FULL", "COUNT", "-1"], both),
                (
                    &["XINFO", "STREAM", "s", "FULL", "COUNT", "1"],
                    full(resp3, &FILLED, std::slice::from_ref(&first)),
                ),
            ],
        );
    }
}

#[test]
fn xinfo_stream_full_default_count_is_ten() {
    let server = start_server();
    let mut r = server.raw();
    for i in 1..=12 {
        let id = format!("{i}-0");
        assert_eq!(r.cmd_str(&["XADD", "s", &id, "f", "v"]), bulk(&id));
    }
    let e = Expect {
        length: 12,
        keys: 1,
        nodes: 2,
        last: "12-0",
        max_deleted: "0-0",
        added: 12,
        first_id: "1-0",
    };
    let ten: Vec<Vec<u8>> = (1..=10)
        .map(|i| entry(&format!("{i}-0"), &["f", "v"]))
        .collect();
    let all: Vec<Vec<u8>> = (1..=12)
        .map(|i| entry(&format!("{i}-0"), &["f", "v"]))
        .collect();
    check(
        &mut r,
        &[
            (&["XINFO", "STREAM", "s", "FULL"], full(false, &e, &ten)),
            (
                &["XINFO", "STREAM", "s", "FULL", "COUNT", "-7"],
                full(false, &e, &ten),
            ),
            (
                &["XINFO", "STREAM", "s", "FULL", "COUNT", "0"],
                full(false, &e, &all),
            ),
            (
                &["XINFO", "STREAM", "s", "FULL", "COUNT", "99"],
                full(false, &e, &all),
            ),
        ],
    );
}

#[test]
fn radix_tree_counts_follow_the_node_size() {
    let server = common::start_server_with(&["--stream-node-max-entries", "2"]);
    let mut r = server.raw();
    for i in 1..=5 {
        let id = format!("{i}-0");
        assert_eq!(r.cmd_str(&["XADD", "s", &id, "f", "v"]), bulk(&id));
    }
    // Five entries in nodes of two: three radix-tree keys.
    let info = r.cmd_str(&["XINFO", "STREAM", "s"]);
    let text = String::from_utf8_lossy(&info);
    assert!(text.contains("$15\r\nradix-tree-keys\r\n:3\r\n"), "{text}");
    assert!(text.contains("$6\r\nlength\r\n:5\r\n"), "{text}");
}

#[test]
fn groups_and_consumers_before_consumer_groups_exist() {
    let server = start_server();
    let mut r = server.raw();
    fill(&mut r);
    check(
        &mut r,
        &[
            (&["XINFO", "GROUPS", "s"], arr(&[])),
            (
                &["XINFO", "CONSUMERS", "s", "g"],
                err("NOGROUP No such consumer group 'g' for key name 's'"),
            ),
        ],
    );
    r.hello3();
    check(
        &mut r,
        &[
            (&["XINFO", "GROUPS", "s"], arr(&[])),
            (
                &["XINFO", "CONSUMERS", "s", "mygroup"],
                err("NOGROUP No such consumer group 'mygroup' for key name 's'"),
            ),
        ],
    );
}

#[tokio::test]
async fn redis_rs_reads_xinfo_stream() {
    let server = start_server();
    for mut con in [
        common::client(server.port).await,
        common::client_resp3(server.port).await,
    ] {
        let _: String = redis::cmd("XADD")
            .arg("rs")
            .arg("1-1")
            .arg("k")
            .arg("v")
            .query_async(&mut con)
            .await
            .unwrap();
        let info: std::collections::HashMap<String, redis::Value> = redis::cmd("XINFO")
            .arg("STREAM")
            .arg("rs")
            .query_async(&mut con)
            .await
            .unwrap();
        assert_eq!(info.len(), 16);
        assert_eq!(info["length"], redis::Value::Int(1));
        assert_eq!(info["groups"], redis::Value::Int(0));
        assert_eq!(info["idmp-duration"], redis::Value::Int(100));
        let full: std::collections::HashMap<String, redis::Value> = redis::cmd("XINFO")
            .arg("STREAM")
            .arg("rs")
            .arg("FULL")
            .query_async(&mut con)
            .await
            .unwrap();
        assert_eq!(full.len(), 15);
        assert!(full.contains_key("entries"));
        // Empty the stream and rewind it so the next connection can add 1-1 again.
        let _: redis::Value = redis::cmd("XTRIM")
            .arg("rs")
            .arg("MAXLEN")
            .arg("0")
            .query_async(&mut con)
            .await
            .unwrap();
        let _: redis::Value = redis::cmd("XSETID")
            .arg("rs")
            .arg("0-1")
            .query_async(&mut con)
            .await
            .unwrap();
    }
}
