//! XADD, XRANGE, XREVRANGE, XLEN, XDEL, XTRIM and XSETID against the real binary:
//! exact reply bytes (RESP2 and RESP3) for shapes and every error string, the trimming
//! examples of reference §3.1, and a redis-rs round trip in both protocols.

mod common;

use common::check;

use common::reply::{arr, bulk, entry, err, int};

use common::{Raw, escape, start_server, start_server_with};
use redis::AsyncCommands;

// ---- expected-reply builders (exact RESP bytes) ------------------------------------

const OK: &[u8] = b"+OK\r\n";
const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";
const NOT_INT: &str = "ERR value is not an integer or out of range";
const SYNTAX: &str = "ERR syntax error";
const TOP_ITEM: &str =
    "ERR The ID specified in XADD is equal or smaller than the target stream top item";
const XADD_ARITY: &str = "ERR wrong number of arguments for 'xadd' command";

/// Sends all commands in one write and returns their replies.
fn pipeline(raw: &mut Raw, cmds: &[Vec<String>]) -> Vec<Vec<u8>> {
    let mut bytes = Vec::new();
    for c in cmds {
        let args: Vec<&[u8]> = c.iter().map(|a| a.as_bytes()).collect();
        bytes.extend_from_slice(&common::encode_cmd(&args));
    }
    raw.send(&bytes);
    raw.read_replies(cmds.len())
}

fn owned(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

// ---- XADD ---------------------------------------------------------------------------

#[test]
fn xadd_explicit_and_partial_ids_and_their_errors() {
    let server = start_server();
    let mut r = server.raw();
    check(
        &mut r,
        &[
            (&["XADD", "s", "1-1", "a", "1"], bulk("1-1")),
            (&["XADD", "s", "1-1", "a", "2"], err(TOP_ITEM)),
            (&["XADD", "s", "1-0", "a", "2"], err(TOP_ITEM)),
            (&["XADD", "s", "5-*", "b", "2"], bulk("5-0")),
            (&["XADD", "s", "5-*", "b", "3"], bulk("5-1")),
            (&["XADD", "s", "4-*", "b", "3"], err(TOP_ITEM)),
            (&["XADD", "s", "007-01", "c", "1"], bulk("7-1")),
            (&["XADD", "s", "8", "c", "1"], bulk("8-0")),
            (&["XADD", "fresh", "0-*", "f", "v"], bulk("0-1")),
            (&["XADD", "s", "nope", "f", "v"], err(INVALID_ID)),
            (&["XADD", "s", "-", "f", "v"], err(INVALID_ID)),
            (&["XADD", "s", "+", "f", "v"], err(INVALID_ID)),
            (&["XADD", "s", "9-", "f", "v"], err(INVALID_ID)),
            (&["XADD", "s", "9-**", "f", "v"], err(INVALID_ID)),
            (&["XLEN", "s"], int(5)),
        ],
    );
}

#[test]
fn xadd_zero_id_is_refused_after_the_arity_check_and_creates_nothing() {
    let server = start_server();
    let mut r = server.raw();
    check(
        &mut r,
        &[
            (
                &["XADD", "z", "0-0", "f", "v"],
                err("ERR The ID specified in XADD must be greater than 0-0"),
            ),
            (
                &["XADD", "z", "0", "f", "v"],
                err("ERR The ID specified in XADD must be greater than 0-0"),
            ),
            (&["XADD", "z", "0-0", "f", "v", "g"], err(XADD_ARITY)),
            (&["XINFO", "STREAM", "z"], err("ERR no such key")),
        ],
    );
}

#[test]
fn xadd_auto_id_never_goes_backwards() {
    let server = start_server();
    let mut r = server.raw();
    check(
        &mut r,
        &[
            (
                &["XADD", "x", "2577343934890-18446744073709551615", "f", "v"],
                bulk("2577343934890-18446744073709551615"),
            ),
            (&["XADD", "x", "*", "f", "v"], bulk("2577343934891-0")),
            (&["XADD", "x", "*", "f", "v"], bulk("2577343934891-1")),
            (
                &["XADD", "y", "2577343934890-18446744073709551615", "f", "v"],
                { bulk("2577343934890-18446744073709551615") },
            ),
            // `ms-*` with the sequence exhausted at that ms: "equal or smaller".
            (&["XADD", "y", "2577343934890-*", "f", "v"], err(TOP_ITEM)),
        ],
    );
    // A plain `*` on a fresh stream is now-ish.
    let reply = r.cmd_str(&["XADD", "t", "*", "f", "v"]);
    let text = String::from_utf8(reply).unwrap();
    let id = text.lines().nth(1).unwrap();
    let (ms, seq) = id.split_once('-').unwrap();
    assert!(ms.parse::<u64>().unwrap() > 1_600_000_000_000, "{id}");
    assert_eq!(seq, "0");
}

#[test]
fn xadd_on_an_exhausted_stream_is_refused_for_every_id_form() {
    let server = start_server();
    let mut r = server.raw();
    let exhausted = "ERR The stream has exhausted the last possible ID, unable to add more items";
    let max = "18446744073709551615-18446744073709551615";
    check(
        &mut r,
        &[
            (&["XADD", "s", max, "f", "v"], bulk(max)),
            (&["XADD", "s", "*", "f", "v"], err(exhausted)),
            (&["XADD", "s", "5-*", "f", "v"], err(exhausted)),
            (
                &["XADD", "s", "18446744073709551615-*", "f", "v"],
                err(exhausted),
            ),
            (&["XADD", "s", max, "f", "v"], err(exhausted)),
            (&["XLEN", "s"], int(1)),
        ],
    );
}

#[test]
fn xadd_option_errors_have_redis_texts() {
    let server = start_server();
    let mut r = server.raw();
    check(
        &mut r,
        &[
            (
                &["XADD", "s", "MAXLEN", "-1", "*", "f", "v"],
                err("ERR The MAXLEN argument must be >= 0."),
            ),
            (&["XADD", "s", "MAXLEN", "x", "*", "f", "v"], err(NOT_INT)),
            (&["XADD", "s", "MAXLEN", "+1", "*", "f", "v"], err(NOT_INT)),
            (
                &["XADD", "s", "MAXLEN", "~", "01", "*", "f", "v"],
                err(NOT_INT),
            ),
            (&["XADD", "s", "MINID", "-", "*", "f", "v"], err(INVALID_ID)),
            (
                &["XADD", "s", "MINID", "~", "x", "*", "f", "v"],
                err(INVALID_ID),
            ),
            (
                &[
                    "XADD", "s", "MAXLEN", "~", "1", "LIMIT", "-1", "*", "f", "v",
                ],
                err("ERR The LIMIT argument must be >= 0."),
            ),
            (
                &["XADD", "s", "MAXLEN", "~", "1", "LIMIT", "x", "*", "f", "v"],
                err(NOT_INT),
            ),
            (
                &["XADD", "s", "MAXLEN", "1", "MINID", "1", "*", "f", "v"],
                err(
                    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
                ),
            ),
            (
                &["XADD", "s", "MINID", "1", "MAXLEN", "1", "*", "f", "v"],
                err(
                    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
                ),
            ),
            (
                &["XADD", "s", "LIMIT", "5", "*", "f", "v"],
                err(
                    "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
                ),
            ),
            (
                &["XADD", "s", "MAXLEN", "1", "LIMIT", "5", "*", "f", "v"],
                err("ERR syntax error, LIMIT cannot be used without the special ~ option"),
            ),
            (
                &["XADD", "s", "MAXLEN", "=", "1", "LIMIT", "5", "*", "f", "v"],
                err("ERR syntax error, LIMIT cannot be used without the special ~ option"),
            ),
            // Redis tests the LIMIT value, so `LIMIT 0` reaches the `~` check instead.
            (
                &["XADD", "s", "LIMIT", "0", "*", "f", "v"],
                err("ERR syntax error, LIMIT cannot be used without the special ~ option"),
            ),
            // An unknown option word is taken as the ID.
            (&["XADD", "s", "NOPE", "*", "f", "v"], err(INVALID_ID)),
            // KEEPREF/DELREF/ACKED are accepted once; a second is taken as the ID.
            (
                &["XADD", "s", "KEEPREF", "ACKED", "*", "f", "v"],
                err(INVALID_ID),
            ),
            // IDMP takes two values, so here `*` is the iid and `f` the (invalid) ID.
            (&["XADD", "s", "IDMP", "p", "*", "f", "v"], err(INVALID_ID)),
            // IDMPAUTO with nothing after its value: the word is the ID.
            (&["XADD", "s", "IDMPAUTO", "f", "v"], err(INVALID_ID)),
            (&["XADD", "s", "*", "f"], err(XADD_ARITY)),
            (&["XADD", "s", "*", "f", "v", "g"], err(XADD_ARITY)),
            (
                &["XADD", "s", "NOMKSTREAM", "NOMKSTREAM", "NOMKSTREAM"],
                err(XADD_ARITY),
            ),
            (&["XADD", "s", "MAXLEN", "1", "NOMKSTREAM"], err(XADD_ARITY)),
            (&["XADD", "s"], err(XADD_ARITY)),
            (&["XADD", "s", "*", "f"], err(XADD_ARITY)),
            // None of the above created the key.
            (&["XINFO", "STREAM", "s"], err("ERR no such key")),
        ],
    );
}

#[test]
fn xadd_options_are_accepted_in_any_order_and_case() {
    let server = start_server();
    let mut r = server.raw();
    check(
        &mut r,
        &[
            (&["XADD", "s", "1-1", "a", "1"], bulk("1-1")),
            (&["XADD", "s", "2-1", "a", "2"], bulk("2-1")),
            (
                &[
                    "xadd",
                    "s",
                    "delref",
                    "maxlen",
                    "=",
                    "1",
                    "nomkstream",
                    "3-1",
                    "a",
                    "3",
                ],
                bulk("3-1"),
            ),
            (
                &["XRANGE", "s", "-", "+"],
                arr(&[entry("3-1", &["a", "3"])]),
            ),
            (
                &[
                    "XADD", "s", "MINID", "~", "4", "LIMIT", "0", "ACKED", "4-1", "a", "4",
                ],
                { bulk("4-1") },
            ),
            (&["XADD", "s", "MINID", "4-1", "5-1", "a", "5"], bulk("5-1")),
            (
                &["XRANGE", "s", "-", "+"],
                arr(&[entry("4-1", &["a", "4"]), entry("5-1", &["a", "5"])]),
            ),
        ],
    );
    // Fields may be named like options once the ID is found.
    check(
        &mut r,
        &[
            (
                &["XADD", "s", "MAXLEN", "5", "6-1", "MAXLEN", "LIMIT"],
                bulk("6-1"),
            ),
            (
                &["XRANGE", "s", "6-1", "6-1"],
                arr(&[entry("6-1", &["MAXLEN", "LIMIT"])]),
            ),
        ],
    );
}

#[test]
fn xadd_nomkstream_replies_null_in_both_protocols_and_creates_nothing() {
    let server = start_server();
    let mut r = server.raw();
    check(
        &mut r,
        &[
            (
                &["XADD", "s", "NOMKSTREAM", "*", "f", "v"],
                b"$-1\r\n".to_vec(),
            ),
            (&["XLEN", "s"], int(0)),
            (&["XINFO", "STREAM", "s"], err("ERR no such key")),
        ],
    );
    r.hello3();
    check(
        &mut r,
        &[
            (
                &["XADD", "s", "NOMKSTREAM", "*", "f", "v"],
                b"_\r\n".to_vec(),
            ),
            (&["XADD", "s", "1-1", "f", "v"], bulk("1-1")),
            (&["XADD", "s", "NOMKSTREAM", "2-1", "f", "v"], bulk("2-1")),
            (&["XLEN", "s"], int(2)),
        ],
    );
}

#[test]
fn fields_repeat_and_values_come_back_byte_for_byte() {
    let server = start_server();
    let mut r = server.raw();
    let fields = [
        "a",
        "1",
        "a",
        "2",
        "n",
        "-12",
        "z",
        "007",
        "big",
        "9223372036854775808",
        "e",
        "",
    ];
    let mut args = vec!["XADD", "s", "1-1"];
    args.extend_from_slice(&fields);
    check(
        &mut r,
        &[
            (&args, bulk("1-1")),
            (&["XRANGE", "s", "-", "+"], arr(&[entry("1-1", &fields)])),
        ],
    );
    // Binary keys, fields and values.
    let reply = r.cmd(&[b"XADD", b"k\x00\xff", b"2-2", b"\x00\r\n", b"\xff\xfe"]);
    assert_eq!(reply, bulk("2-2"));
    let reply = r.cmd(&[b"XRANGE", b"k\x00\xff", b"-", b"+"]);
    assert_eq!(
        reply,
        b"*1\r\n*2\r\n$3\r\n2-2\r\n*2\r\n$3\r\n\x00\r\n\r\n$2\r\n\xff\xfe\r\n".to_vec()
    );
}

// ---- XRANGE / XREVRANGE / XLEN -----------------------------------------------------

fn fill_six(r: &mut Raw) {
    for (id, v) in [
        ("1-1", "a"),
        ("1-2", "b"),
        ("2-0", "c"),
        ("3-5", "d"),
        ("3-6", "e"),
        ("4-0", "f"),
    ] {
        assert_eq!(r.cmd_str(&["XADD", "s", id, "v", v]), bulk(id));
    }
}

#[test]
fn xrange_and_xrevrange_bounds_exclusive_ranges_and_count() {
    let server = start_server();
    let mut r = server.raw();
    fill_six(&mut r);
    let e = |id: &str, v: &str| entry(id, &["v", v]);
    check(
        &mut r,
        &[
            (
                &["XRANGE", "s", "-", "+"],
                arr(&[
                    e("1-1", "a"),
                    e("1-2", "b"),
                    e("2-0", "c"),
                    e("3-5", "d"),
                    e("3-6", "e"),
                    e("4-0", "f"),
                ]),
            ),
            // Incomplete IDs: seq 0 at the start, max at the end.
            (
                &["XRANGE", "s", "3", "3"],
                arr(&[e("3-5", "d"), e("3-6", "e")]),
            ),
            (
                &["XRANGE", "s", "1-2", "2"],
                arr(&[e("1-2", "b"), e("2-0", "c")]),
            ),
            (
                &["XRANGE", "s", "(1-2", "(3-6"],
                arr(&[e("2-0", "c"), e("3-5", "d")]),
            ),
            // `(1` excludes only 1-0: an incomplete exclusive start is `<ms>-0` + 1.
            (
                &["XRANGE", "s", "(1", "(3-5"],
                arr(&[e("1-1", "a"), e("1-2", "b"), e("2-0", "c")]),
            ),
            (
                &["XRANGE", "s", "(1-2", "+"],
                arr(&[e("2-0", "c"), e("3-5", "d"), e("3-6", "e"), e("4-0", "f")]),
            ),
            (
                &["XRANGE", "s", "-", "(2"],
                arr(&[e("1-1", "a"), e("1-2", "b"), e("2-0", "c")]),
            ),
            (&["XRANGE", "s", "(3-6", "+"], arr(&[e("4-0", "f")])),
            (&["XRANGE", "s", "4", "1"], arr(&[])),
            (&["XRANGE", "s", "5", "+"], arr(&[])),
            (
                &["XRANGE", "s", "-", "+", "COUNT", "2"],
                arr(&[e("1-1", "a"), e("1-2", "b")]),
            ),
            (
                &["XRANGE", "s", "-", "+", "COUNT", "9", "count", "1"],
                arr(&[e("1-1", "a")]),
            ),
            (&["XRANGE", "s", "5", "5", "COUNT", "100"], arr(&[])),
            (
                &["XREVRANGE", "s", "+", "-", "COUNT", "2"],
                arr(&[e("4-0", "f"), e("3-6", "e")]),
            ),
            (
                &["XREVRANGE", "s", "3", "2"],
                arr(&[e("3-6", "e"), e("3-5", "d"), e("2-0", "c")]),
            ),
            (
                &["XREVRANGE", "s", "(3-6", "(1-2"],
                arr(&[e("3-5", "d"), e("2-0", "c")]),
            ),
            (&["XREVRANGE", "s", "1", "4"], arr(&[])),
        ],
    );
}

#[test]
fn xrange_count_zero_is_a_null_array_on_an_existing_key_only() {
    let server = start_server();
    let mut r = server.raw();
    fill_six(&mut r);
    check(
        &mut r,
        &[
            (
                &["XRANGE", "s", "-", "+", "COUNT", "0"],
                b"*-1\r\n".to_vec(),
            ),
            (
                &["XRANGE", "s", "-", "+", "COUNT", "-5"],
                b"*-1\r\n".to_vec(),
            ),
            (
                &["XREVRANGE", "s", "+", "-", "COUNT", "0"],
                b"*-1\r\n".to_vec(),
            ),
            (&["XRANGE", "nokey", "-", "+", "COUNT", "0"], arr(&[])),
            (&["XRANGE", "nokey", "-", "+"], arr(&[])),
            (&["XREVRANGE", "nokey", "+", "-"], arr(&[])),
        ],
    );
    r.hello3();
    check(
        &mut r,
        &[
            (&["XRANGE", "s", "-", "+", "COUNT", "0"], b"_\r\n".to_vec()),
            (
                &["XREVRANGE", "s", "+", "-", "COUNT", "-1"],
                b"_\r\n".to_vec(),
            ),
            (&["XRANGE", "nokey", "-", "+"], arr(&[])),
            // Entries keep the same shape in RESP3.
            (
                &["XRANGE", "s", "-", "+", "COUNT", "1"],
                arr(&[entry("1-1", &["v", "a"])]),
            ),
        ],
    );
}

#[test]
fn xrange_errors_come_before_the_key_lookup() {
    let server = start_server();
    let mut r = server.raw();
    fill_six(&mut r);
    for key in ["s", "nokey"] {
        check(
            &mut r,
            &[
                (&["XRANGE", key, "x", "+"], err(INVALID_ID)),
                (&["XRANGE", key, "-", "x"], err(INVALID_ID)),
                (&["XRANGE", key, "(-", "+"], err(INVALID_ID)),
                (&["XRANGE", key, "-", "(+"], err(INVALID_ID)),
                (&["XRANGE", key, "(", "+"], err(INVALID_ID)),
                (&["XRANGE", key, "1-", "+"], err(INVALID_ID)),
                (&["XRANGE", key, "-", "+", "COUNT"], err(SYNTAX)),
                (&["XRANGE", key, "-", "+", "LIMIT", "1"], err(SYNTAX)),
                (&["XRANGE", key, "-", "+", "COUNT", "x"], err(NOT_INT)),
                (
                    &["XRANGE", key, "-", "+", "COUNT", "1", "COUNT"],
                    err(SYNTAX),
                ),
                (
                    &[
                        "XRANGE",
                        key,
                        "(18446744073709551615-18446744073709551615",
                        "+",
                    ],
                    err("ERR invalid start ID for the interval"),
                ),
                (
                    &["XRANGE", key, "-", "(0-0"],
                    err("ERR invalid end ID for the interval"),
                ),
                (
                    &["XREVRANGE", key, "(0-0", "-"],
                    err("ERR invalid end ID for the interval"),
                ),
                // XREVRANGE parses its start (the last ID argument) first.
                (
                    &[
                        "XREVRANGE",
                        key,
                        "x",
                        "(18446744073709551615-18446744073709551615",
                    ],
                    err("ERR invalid start ID for the interval"),
                ),
                (
                    &["XRANGE", key, "-"],
                    err("ERR wrong number of arguments for 'xrange' command"),
                ),
                (
                    &["XREVRANGE", key, "+"],
                    err("ERR wrong number of arguments for 'xrevrange' command"),
                ),
            ],
        );
    }
}

#[test]
fn xlen_counts_live_entries() {
    let server = start_server();
    let mut r = server.raw();
    check(
        &mut r,
        &[
            (&["XLEN", "nokey"], int(0)),
            (&["XADD", "s", "1-1", "f", "v"], bulk("1-1")),
            (&["XADD", "s", "2-1", "f", "v"], bulk("2-1")),
            (&["XLEN", "s"], int(2)),
            (&["XDEL", "s", "1-1"], int(1)),
            (&["XLEN", "s"], int(1)),
            (
                &["XLEN"],
                err("ERR wrong number of arguments for 'xlen' command"),
            ),
            (
                &["XLEN", "a", "b"],
                err("ERR wrong number of arguments for 'xlen' command"),
            ),
        ],
    );
}

// ---- XDEL ---------------------------------------------------------------------------

#[test]
fn xdel_validates_all_ids_first_and_ignores_them_on_a_missing_key() {
    let server = start_server();
    let mut r = server.raw();
    fill_six(&mut r);
    check(
        &mut r,
        &[
            (&["XDEL", "nokey", "bad", "-", "+"], int(0)),
            (&["XDEL", "s", "1-1", "bad"], err(INVALID_ID)),
            (&["XDEL", "s", "1-1", "+"], err(INVALID_ID)),
            (&["XLEN", "s"], int(6)),
            (&["XDEL", "s", "1-1", "9-9", "1-1", "2"], int(2)),
            (&["XDEL", "s", "1-1"], int(0)),
            (&["XLEN", "s"], int(4)),
            (
                &["XRANGE", "s", "-", "+", "COUNT", "1"],
                arr(&[entry("1-2", &["v", "b"])]),
            ),
            (
                &["XDEL", "s"],
                err("ERR wrong number of arguments for 'xdel' command"),
            ),
            // A deleted top ID still counts for XADD.
            (&["XDEL", "s", "4-0"], int(1)),
            (&["XADD", "s", "4-0", "v", "g"], err(TOP_ITEM)),
            (&["XADD", "s", "4-*", "v", "g"], bulk("4-1")),
        ],
    );
    // max-deleted-entry-id and recorded-first-entry-id follow.
    let info = r.cmd_str(&["XINFO", "STREAM", "s"]);
    let text = String::from_utf8_lossy(&info);
    assert!(
        text.contains("$20\r\nmax-deleted-entry-id\r\n$3\r\n4-0\r\n"),
        "{text}"
    );
    assert!(
        text.contains("$23\r\nrecorded-first-entry-id\r\n$3\r\n1-2\r\n"),
        "{text}"
    );
}

#[test]
fn a_stream_emptied_by_xdel_still_exists() {
    let server = start_server();
    let mut r = server.raw();
    check(
        &mut r,
        &[
            (&["XADD", "s", "1-1", "f", "v"], bulk("1-1")),
            (&["XDEL", "s", "1-1"], int(1)),
            (&["XLEN", "s"], int(0)),
            (&["XRANGE", "s", "-", "+"], arr(&[])),
            (
                &["XRANGE", "s", "-", "+", "COUNT", "0"],
                b"*-1\r\n".to_vec(),
            ),
            (&["XADD", "s", "NOMKSTREAM", "2-1", "f", "v"], bulk("2-1")),
        ],
    );
}

// ---- XTRIM and trimming --------------------------------------------------------------

#[test]
fn xtrim_errors_and_missing_key() {
    let server = start_server();
    let mut r = server.raw();
    let no_strategy = "ERR syntax error, XTRIM must be called with a trimming strategy";
    check(
        &mut r,
        &[
            (&["XTRIM", "nokey", "MAXLEN", "0"], int(0)),
            (&["XTRIM", "nokey", "MAXLEN", "x"], err(NOT_INT)),
            (&["XTRIM", "s", "FOO", "1"], err(SYNTAX)),
            (&["XTRIM", "s", "MAXLEN", "~"], err(NOT_INT)),
            (&["XTRIM", "s", "*", "MAXLEN", "1"], err(SYNTAX)),
            (&["XTRIM", "s", "MAXLEN", "1", "NOMKSTREAM"], err(SYNTAX)),
            (
                &["XTRIM", "s", "MAXLEN", "1", "KEEPREF", "DELREF"],
                err(SYNTAX),
            ),
            (&["XTRIM", "s", "MAXLEN", "1", "junk"], err(SYNTAX)),
            (&["XTRIM", "s", "KEEPREF", "ACKED"], err(SYNTAX)),
            (&["XTRIM", "s", "DELREF", "LIMIT", "0"], err(no_strategy)),
            (&["XTRIM", "s", "LIMIT", "0"], err(no_strategy)),
            (
                &["XTRIM", "s", "LIMIT", "1"],
                err(
                    "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
                ),
            ),
            (
                &["XTRIM", "s", "MAXLEN", "1", "LIMIT", "1"],
                err("ERR syntax error, LIMIT cannot be used without the special ~ option"),
            ),
            (
                &["XTRIM", "s", "MAXLEN", "-1"],
                err("ERR The MAXLEN argument must be >= 0."),
            ),
            (
                &["XTRIM", "s", "MAXLEN", "~", "1", "LIMIT", "-1"],
                err("ERR The LIMIT argument must be >= 0."),
            ),
            (
                &["XTRIM", "s", "MAXLEN", "1", "MINID", "1"],
                err(
                    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
                ),
            ),
            (&["XTRIM", "s", "MINID", "+"], err(INVALID_ID)),
            (
                &["XTRIM", "s"],
                err("ERR wrong number of arguments for 'xtrim' command"),
            ),
            (
                &["XTRIM", "s", "MAXLEN"],
                err("ERR wrong number of arguments for 'xtrim' command"),
            ),
        ],
    );
}

#[test]
fn xtrim_exact_maxlen_and_minid() {
    let server = start_server();
    let mut r = server.raw();
    fill_six(&mut r);
    check(
        &mut r,
        &[
            (&["XTRIM", "s", "MAXLEN", "5"], int(1)),
            (&["XTRIM", "s", "MAXLEN", "=", "5"], int(0)),
            (&["XTRIM", "s", "MINID", "3-6"], int(3)),
            (
                &["XRANGE", "s", "-", "+"],
                arr(&[entry("3-6", &["v", "e"]), entry("4-0", &["v", "f"])]),
            ),
            (&["XTRIM", "s", "KEEPREF", "MINID", "=", "3"], int(0)),
            (&["XTRIM", "s", "maxlen", "0", "delref"], int(2)),
            (&["XLEN", "s"], int(0)),
            // The key survives, and keeps its last ID.
            (&["XADD", "s", "4-0", "v", "g"], err(TOP_ITEM)),
        ],
    );
    // Trimming raises neither max-deleted-entry-id nor anything but first_id.
    let info = String::from_utf8_lossy(&r.cmd_str(&["XINFO", "STREAM", "s"])).into_owned();
    assert!(
        info.contains("$20\r\nmax-deleted-entry-id\r\n$3\r\n0-0\r\n"),
        "{info}"
    );
    assert!(
        info.contains("$23\r\nrecorded-first-entry-id\r\n$3\r\n0-0\r\n"),
        "{info}"
    );
    assert!(info.contains("$13\r\nentries-added\r\n:6\r\n"), "{info}");
}

#[test]
fn approximate_trimming_removes_whole_nodes_only() {
    let server = start_server();
    let mut r = server.raw();
    assert_eq!(
        r.cmd_str(&["CONFIG", "SET", "stream-node-max-entries", "100"]),
        OK
    );
    // Reference §3.1: 1000 XADDs with MAXLEN ~ 555 leave 600; XTRIM MAXLEN ~ 444 then
    // removes one more node.
    let cmds: Vec<Vec<String>> = (0..1000)
        .map(|i| {
            owned(&[
                "XADD",
                "s",
                "MAXLEN",
                "~",
                "555",
                "*",
                "xitem",
                &i.to_string(),
            ])
        })
        .collect();
    for reply in pipeline(&mut r, &cmds) {
        assert!(reply.starts_with(b"$"), "{}", escape(&reply));
    }
    check(
        &mut r,
        &[
            (&["XLEN", "s"], int(600)),
            (&["XTRIM", "s", "MAXLEN", "~", "444"], int(100)),
            (&["XLEN", "s"], int(500)),
            (&["XTRIM", "s", "MAXLEN", "~", "450"], int(0)),
            (&["XTRIM", "s", "MAXLEN", "450"], int(50)),
            (&["XLEN", "s"], int(450)),
        ],
    );
}

#[test]
fn approximate_trimming_honours_limit() {
    let server = start_server_with(&["--stream-node-max-entries", "10"]);
    let mut r = server.raw();
    let cmds: Vec<Vec<String>> = (1..=100)
        .map(|i| owned(&["XADD", "s", &format!("{i}-0"), "f", "v"]))
        .collect();
    pipeline(&mut r, &cmds);
    check(
        &mut r,
        &[
            // 10-entry nodes: at most 30 removed per call, whole nodes only.
            (
                &[
                    "XADD", "s", "MAXLEN", "~", "55", "LIMIT", "30", "101-0", "f", "v",
                ],
                bulk("101-0"),
            ),
            (&["XLEN", "s"], int(71)),
            (
                &[
                    "XADD", "s", "MAXLEN", "~", "55", "LIMIT", "30", "102-0", "f", "v",
                ],
                bulk("102-0"),
            ),
            (&["XLEN", "s"], int(62)),
            // LIMIT 0 means no limit.
            (&["XTRIM", "s", "MAXLEN", "~", "10", "LIMIT", "0"], int(50)),
            (&["XLEN", "s"], int(12)),
            (&["XTRIM", "s", "MINID", "~", "95"], int(0)),
            (&["XTRIM", "s", "MINID", "95"], int(4)),
            (&["XLEN", "s"], int(8)),
        ],
    );
    assert_eq!(
        r.cmd_str(&["CONFIG", "SET", "stream-node-max-entries", "2"]),
        OK
    );
    check(
        &mut r,
        &[
            (&["XADD", "t", "1-1", "f", "v"], bulk("1-1")),
            (&["XADD", "t", "2-1", "f", "v"], bulk("2-1")),
            // The 2-entry node is over LIMIT 1, so nothing goes.
            (&["XTRIM", "t", "MAXLEN", "~", "0", "LIMIT", "1"], int(0)),
            (&["XLEN", "t"], int(2)),
            (&["XTRIM", "t", "MAXLEN", "~", "0"], int(2)),
            (&["XLEN", "t"], int(0)),
        ],
    );
}

#[test]
fn xadd_with_maxlen_zero_leaves_an_empty_stream() {
    let server = start_server();
    let mut r = server.raw();
    check(
        &mut r,
        &[
            (&["XADD", "s", "MAXLEN", "0", "1-1", "f", "v"], bulk("1-1")),
            (&["XLEN", "s"], int(0)),
            (&["XRANGE", "s", "-", "+"], arr(&[])),
            (&["XADD", "s", "1-1", "f", "v"], err(TOP_ITEM)),
        ],
    );
}

// ---- XSETID -------------------------------------------------------------------------

#[test]
fn xsetid_checks_in_order() {
    let server = start_server();
    let mut r = server.raw();
    fill_six(&mut r);
    check(
        &mut r,
        &[
            // Argument errors come before the key lookup.
            (&["XSETID", "nokey", "+"], err(INVALID_ID)),
            (&["XSETID", "nokey", "1-1", "0"], err(SYNTAX)),
            (&["XSETID", "nokey", "1-1", "ENTRIESADDED"], err(SYNTAX)),
            (
                &["XSETID", "nokey", "1-1", "ENTRIESADDED", "-1"],
                err("ERR entries_added must be positive"),
            ),
            (
                &["XSETID", "nokey", "1-1", "ENTRIESADDED", "x"],
                err(NOT_INT),
            ),
            (
                &["XSETID", "nokey", "1-1", "MAXDELETEDID", "2-0"],
                err(
                    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                ),
            ),
            (
                &["XSETID", "nokey", "1-1", "MAXDELETEDID", "x"],
                err(INVALID_ID),
            ),
            (&["XSETID", "nokey", "1-1"], err("ERR no such key")),
            (
                &["XSETID", "s"],
                err("ERR wrong number of arguments for 'xsetid' command"),
            ),
            // Against the stream.
            (
                &["XSETID", "s", "3-0"],
                err("ERR The ID specified in XSETID is smaller than the target stream top item"),
            ),
            (
                &["XSETID", "s", "9-0", "ENTRIESADDED", "5"],
                err(
                    "ERR The entries_added specified in XSETID is smaller than the target stream length",
                ),
            ),
            // Equal to the top item is fine.
            (&["XSETID", "s", "4-0", "ENTRIESADDED", "6"], OK.to_vec()),
            (&["XADD", "s", "4-0", "v", "x"], err(TOP_ITEM)),
            (
                &[
                    "XSETID",
                    "s",
                    "9-0",
                    "ENTRIESADDED",
                    "50",
                    "MAXDELETEDID",
                    "8-0",
                ],
                OK.to_vec(),
            ),
            (
                &["XSETID", "s", "7-0"],
                err("ERR The ID specified in XSETID is smaller than current max_deleted_entry_id"),
            ),
            (&["XADD", "s", "9-0", "v", "x"], err(TOP_ITEM)),
            (&["XADD", "s", "9-*", "v", "x"], bulk("9-1")),
        ],
    );
    let info = String::from_utf8_lossy(&r.cmd_str(&["XINFO", "STREAM", "s"])).into_owned();
    assert!(
        info.contains("$17\r\nlast-generated-id\r\n$3\r\n9-1\r\n"),
        "{info}"
    );
    assert!(
        info.contains("$20\r\nmax-deleted-entry-id\r\n$3\r\n8-0\r\n"),
        "{info}"
    );
    assert!(info.contains("$13\r\nentries-added\r\n:51\r\n"), "{info}");
}

#[test]
fn xsetid_on_an_empty_stream_may_go_below_its_last_id() {
    let server = start_server();
    let mut r = server.raw();
    check(
        &mut r,
        &[
            (&["XADD", "s", "5-5", "f", "v"], bulk("5-5")),
            (&["XTRIM", "s", "MAXLEN", "0"], int(1)),
            // No entries and no XDEL: any ID goes, as in Redis.
            (&["XSETID", "s", "1-0", "ENTRIESADDED", "0"], OK.to_vec()),
            (&["XADD", "s", "1-*", "f", "v"], bulk("1-1")),
            // MAXDELETEDID 0-0 leaves max-deleted-entry-id alone.
            (&["XDEL", "s", "1-1"], int(1)),
            (&["XSETID", "s", "2-0", "MAXDELETEDID", "0-0"], OK.to_vec()),
            (
                &["XSETID", "s", "1-0"],
                err("ERR The ID specified in XSETID is smaller than current max_deleted_entry_id"),
            ),
        ],
    );
}

// ---- transactions and WATCH ---------------------------------------------------------

#[test]
fn successful_writes_invalidate_watch_and_no_ops_do_not() {
    let server = start_server();
    let mut a = server.raw();
    let mut b = server.raw();
    assert_eq!(a.cmd_str(&["XADD", "s", "1-1", "f", "v"]), bulk("1-1"));
    // Each (command, invalidates?) pair runs between WATCH and EXEC.
    let cases: &[(&[&str], bool)] = &[
        (&["XDEL", "s", "9-9"], false),
        (&["XTRIM", "s", "MAXLEN", "5"], false),
        (&["XADD", "s", "1-1", "f", "v"], false),
        (&["XADD", "s", "NOMKSTREAM", "2-1", "f", "v"], true),
        (&["XSETID", "s", "3-0"], true),
        (&["XTRIM", "s", "MAXLEN", "1"], true),
        (&["XDEL", "s", "2-1"], true),
    ];
    for (cmd, invalidates) in cases {
        assert_eq!(a.cmd_str(&["WATCH", "s"]), OK);
        b.cmd_str(cmd);
        assert_eq!(a.cmd_str(&["MULTI"]), OK);
        assert_eq!(a.cmd_str(&["XLEN", "s"]), b"+QUEUED\r\n".to_vec());
        let exec = a.cmd_str(&["EXEC"]);
        assert_eq!(
            exec.starts_with(b"*-1"),
            *invalidates,
            "{cmd:?}: {}",
            escape(&exec)
        );
    }
}

// ---- redis-rs -------------------------------------------------------------------------

async fn redis_rs_round_trip(mut con: redis::aio::MultiplexedConnection) {
    let id: String = con
        .xadd("rs", "1-1", &[("name", "ada"), ("lang", "en")])
        .await
        .unwrap();
    assert_eq!(id, "1-1");
    let auto: String = con.xadd("rs", "*", &[("name", "bob")]).await.unwrap();
    assert!(auto.contains('-'));
    let len: usize = con.xlen("rs").await.unwrap();
    assert_eq!(len, 2);
    let range: redis::streams::StreamRangeReply = con.xrange_all("rs").await.unwrap();
    assert_eq!(range.ids.len(), 2);
    assert_eq!(range.ids[0].id, "1-1");
    let name: String = range.ids[0].get("name").unwrap();
    assert_eq!(name, "ada");
    let rev: redis::streams::StreamRangeReply =
        con.xrevrange_count("rs", "+", "-", 1).await.unwrap();
    assert_eq!(rev.ids.len(), 1);
    assert_eq!(rev.ids[0].id, auto);
    let deleted: usize = con.xdel("rs", &["1-1"]).await.unwrap();
    assert_eq!(deleted, 1);
    let trimmed: usize = con
        .xtrim("rs", redis::streams::StreamMaxlen::Equals(0))
        .await
        .unwrap();
    assert_eq!(trimmed, 1);
    let err = con
        .xadd::<_, _, _, _, String>("rs", "0-0", &[("a", "b")])
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("The ID specified in XADD must be greater than 0-0"),
        "{err}"
    );
}

#[tokio::test]
async fn redis_rs_resp2_round_trip() {
    let server = start_server();
    redis_rs_round_trip(common::client(server.port).await).await;
}

#[tokio::test]
async fn redis_rs_resp3_round_trip() {
    let server = start_server();
    redis_rs_round_trip(common::client_resp3(server.port).await).await;
}
