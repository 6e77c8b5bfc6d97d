//! Commands Redis added in 8.x that streamd lacked (issue 37), against the built binary:
//! INCREX (8.8), CLUSTER SLOT-STATS (8.2) and HOTKEYS (8.6).
//!
//! Debian's redis-server here is 7.0 and has none of them, so the exact replies are
//! written out from redis.io's pages (`commands/increx`, `commands/cluster-slot-stats`,
//! `commands/hotkeys`) and node-redis's INCREX tests. Where INCREX equals commands 7.0
//! has (INCRBY / INCRBYFLOAT + PEXPIREAT), the results are compared with 7.0 running
//! those.

mod common;

use common::reply::{arr, bulk, err, int};
use common::*;
use std::time::Duration;

/// A Raw connection in `proto`.
fn conn(port: u16, proto: u8) -> Raw {
    let mut r = Raw::connect(port);
    if proto == 3 {
        r.hello3();
    }
    r
}

/// Sends each command and asserts its exact reply bytes.
fn expect(r: &mut Raw, cases: &[(&[&str], Vec<u8>)]) {
    for (args, want) in cases {
        let got = r.cmd_str(args);
        assert_eq!(escape(&got), escape(want), "reply to {args:?} (left: got)");
    }
}

/// A RESP3 double `,<text>`.
fn dbl(text: &str) -> Vec<u8> {
    format!(",{text}\r\n").into_bytes()
}

const SYNTAX: &str = "ERR syntax error";
const NOT_INT: &str = "ERR value is not an integer or out of range";
const NOT_FLOAT: &str = "ERR value is not a valid float";

/// The reply to `TTL key` as a number.
fn ttl(r: &mut Raw, key: &str) -> i64 {
    let reply = r.cmd_str(&["TTL", key]);
    let text = String::from_utf8_lossy(&reply);
    text.trim_start_matches(':')
        .trim_end()
        .parse()
        .unwrap_or(i64::MIN)
}

// ---- INCREX --------------------------------------------------------------------------

#[test]
fn increx_answers_the_documented_examples() {
    let s = start_server();
    let mut r = s.raw();
    expect(
        &mut r,
        &[
            // Default increment, from 0.
            (&["INCREX", "mykey"], arr(&[int(1), int(1)])),
            (&["INCREX", "mykey"], arr(&[int(2), int(1)])),
            // BYINT, up and down.
            (&["SET", "mykey", "100"], b"+OK\r\n".to_vec()),
            (&["INCREX", "mykey", "BYINT", "5"], arr(&[int(105), int(5)])),
            (
                &["INCREX", "mykey", "BYINT", "-10"],
                arr(&[int(95), int(-10)]),
            ),
            // BYFLOAT.
            (&["SET", "mykey", "1.5"], b"+OK\r\n".to_vec()),
            (
                &["INCREX", "mykey", "BYFLOAT", "0.25"],
                arr(&[bulk("1.75"), bulk("0.25")]),
            ),
            (&["GET", "mykey"], bulk("1.75")),
            // Out of bounds: skipped, then saturated.
            (&["SET", "mykey", "99"], b"+OK\r\n".to_vec()),
            (
                &["INCREX", "mykey", "BYINT", "5", "UBOUND", "100"],
                arr(&[int(99), int(0)]),
            ),
            (&["GET", "mykey"], bulk("99")),
            (
                &["INCREX", "mykey", "BYINT", "5", "UBOUND", "100", "SATURATE"],
                arr(&[int(100), int(1)]),
            ),
            (&["GET", "mykey"], bulk("100")),
            // Lower bound.
            (&["SET", "c", "3"], b"+OK\r\n".to_vec()),
            (
                &["INCREX", "c", "BYINT", "-5", "LBOUND", "0"],
                arr(&[int(3), int(0)]),
            ),
            (
                &["INCREX", "c", "byint", "-5", "lbound", "0", "saturate"],
                arr(&[int(0), int(-3)]),
            ),
            // A missing key out of bounds is not created.
            (
                &["INCREX", "nokey", "BYINT", "5", "UBOUND", "3"],
                arr(&[int(0), int(0)]),
            ),
            (&["EXISTS", "nokey"], int(0)),
            // The node-redis precision case.
            (&["SET", "big", "9223372036854775000"], b"+OK\r\n".to_vec()),
            (
                &["INCREX", "big", "BYINT", "100"],
                arr(&[int(9223372036854775100), int(100)]),
            ),
        ],
    );
}

#[test]
fn increx_type_limits_are_bounds_not_errors() {
    let s = start_server();
    let mut r = s.raw();
    let max = i64::MAX.to_string();
    let min = i64::MIN.to_string();
    r.cmd_str(&["SET", "k", &max]);
    expect(
        &mut r,
        &[
            (&["INCREX", "k"], arr(&[int(i64::MAX), int(0)])),
            (&["INCREX", "k", "SATURATE"], arr(&[int(i64::MAX), int(0)])),
            (
                &["INCREX", "k", "BYINT", &min, "SATURATE"],
                arr(&[int(-1), int(i64::MIN)]),
            ),
            (&["INCREX", "k", "BYINT", &min], arr(&[int(-1), int(0)])),
        ],
    );
    // SATURATE whose applied increment does not fit in 64 bits.
    r.cmd_str(&["SET", "k", &max]);
    expect(
        &mut r,
        &[
            (
                &["INCREX", "k", "BYINT", "-1", "UBOUND", &min, "SATURATE"],
                err("ERR increment or decrement would overflow"),
            ),
            (&["GET", "k"], bulk(&max)),
        ],
    );
    // BYFLOAT: past LDBL_MAX is out of bounds (skipped); SATURATE stores LDBL_MAX.
    r.cmd_str(&["DEL", "f"]);
    let first = r.cmd_str(&["INCREX", "f", "BYFLOAT", "1e4932"]);
    assert!(first.starts_with(b"*2\r\n$"), "{}", escape(&first));
    let stored = r.cmd_str(&["GET", "f"]);
    let skipped = r.cmd_str(&["INCREX", "f", "BYFLOAT", "1e4932"]);
    assert!(skipped.ends_with(b"$1\r\n0\r\n"), "{}", escape(&skipped));
    assert_eq!(r.cmd_str(&["GET", "f"]), stored);
    let sat = r.cmd_str(&["INCREX", "f", "BYFLOAT", "1e4932", "SATURATE"]);
    let ldbl_max = r.cmd_str(&["GET", "f"]);
    assert_ne!(ldbl_max, stored);
    assert!(
        ldbl_max.starts_with(b"$4933\r\n11897314953572317650"),
        "{}",
        escape(&ldbl_max)
    );
    assert!(sat.starts_with(&[b"*2\r\n".as_slice(), &ldbl_max].concat()));
    // From -LDBL_MAX saturating up to LDBL_MAX: the applied increment is infinite.
    r.cmd_str(&["SET", "g", "-1e4932"]);
    expect(
        &mut r,
        &[(
            &[
                "INCREX", "g", "BYFLOAT", "1e4932", "LBOUND", "1e4932", "SATURATE",
            ],
            err("ERR increment would produce NaN or Infinity"),
        )],
    );
}

#[test]
fn increx_resp3_replies_doubles_in_float_mode() {
    let s = start_server();
    let mut r = conn(s.port, 3);
    expect(
        &mut r,
        &[
            (&["INCREX", "i", "BYINT", "7"], arr(&[int(7), int(7)])),
            (&["SET", "f", "10.5"], b"+OK\r\n".to_vec()),
            (
                &["INCREX", "f", "BYFLOAT", "0.1"],
                arr(&[dbl("10.6"), dbl("0.1")]),
            ),
            (
                &["INCREX", "f", "BYFLOAT", "5", "UBOUND", "12"],
                arr(&[dbl("10.6"), dbl("0")]),
            ),
            (
                &["INCREX", "f", "BYFLOAT", "5", "UBOUND", "12", "SATURATE"],
                arr(&[dbl("12"), dbl("1.4")]),
            ),
            (
                &["INCREX", "f", "BYFLOAT", "-2e0"],
                arr(&[dbl("10"), dbl("-2")]),
            ),
        ],
    );
}

#[test]
fn increx_errors() {
    let s = start_server();
    let mut r = s.raw();
    r.cmd_str(&["SET", "text", "abc"]);
    r.cmd_str(&["SET", "float", "1.5"]);
    r.cmd_str(&["RPUSH", "list", "a"]);
    expect(
        &mut r,
        &[
            (
                &["INCREX"],
                err("ERR wrong number of arguments for 'increx' command"),
            ),
            (&["INCREX", "k", "BYINT"], err(SYNTAX)),
            (&["INCREX", "k", "BYINT", "1", "BYFLOAT", "1"], err(SYNTAX)),
            (&["INCREX", "k", "EX", "1", "PX", "1"], err(SYNTAX)),
            (&["INCREX", "k", "EX", "1", "PERSIST"], err(SYNTAX)),
            (&["INCREX", "k", "PERSIST", "EX", "1"], err(SYNTAX)),
            (&["INCREX", "k", "ENX"], err(SYNTAX)),
            (&["INCREX", "k", "PERSIST", "ENX"], err(SYNTAX)),
            (&["INCREX", "k", "NX"], err(SYNTAX)),
            (&["INCREX", "k", "KEEPTTL"], err(SYNTAX)),
            (&["INCREX", "k", "BYINT", "1.5"], err(NOT_INT)),
            (&["INCREX", "k", "UBOUND", "1.5"], err(NOT_INT)),
            (&["INCREX", "k", "BYFLOAT", "abc"], err(NOT_FLOAT)),
            (
                &["INCREX", "k", "BYFLOAT", "inf"],
                err("ERR increment would produce NaN or Infinity"),
            ),
            (
                &["INCREX", "k", "BYFLOAT", "1", "UBOUND", "inf"],
                err(NOT_FLOAT),
            ),
            (
                &["INCREX", "k", "BYFLOAT", "1", "LBOUND", "x"],
                err(NOT_FLOAT),
            ),
            (
                &["INCREX", "k", "LBOUND", "5", "UBOUND", "4"],
                err("ERR LBOUND must be less than or equal to UBOUND"),
            ),
            (
                &[
                    "INCREX", "k", "BYFLOAT", "1", "LBOUND", "5.5", "UBOUND", "5.25",
                ],
                err("ERR LBOUND must be less than or equal to UBOUND"),
            ),
            (
                &["INCREX", "k", "EX", "0"],
                err("ERR invalid expire time in 'increx' command"),
            ),
            (
                &["INCREX", "k", "PX", "-5"],
                err("ERR invalid expire time in 'increx' command"),
            ),
            (&["INCREX", "k", "EX", "x"], err(NOT_INT)),
            (&["INCREX", "text"], err(NOT_INT)),
            (&["INCREX", "float"], err(NOT_INT)),
            (&["INCREX", "text", "BYFLOAT", "1"], err(NOT_FLOAT)),
            (
                &["INCREX", "list"],
                err("WRONGTYPE Operation against a key holding the wrong kind of value"),
            ),
            (&["EXISTS", "k"], int(0)),
            (&["GET", "float"], bulk("1.5")),
            // BYFLOAT reads integers and floats alike.
            (
                &["INCREX", "float", "BYFLOAT", "1"],
                arr(&[bulk("2.5"), bulk("1")]),
            ),
        ],
    );
}

#[test]
fn increx_expiration_options() {
    let s = start_server();
    let mut r = s.raw();
    // EX on a new key.
    assert_eq!(
        r.cmd_str(&["INCREX", "a", "BYINT", "1", "EX", "100"]),
        arr(&[int(1), int(1)])
    );
    assert!((99..=100).contains(&ttl(&mut r, "a")));
    // No option keeps the TTL.
    r.cmd_str(&["INCREX", "a"]);
    assert!((99..=100).contains(&ttl(&mut r, "a")));
    // ENX on a key without TTL sets it; with a TTL leaves it.
    r.cmd_str(&["SET", "b", "10"]);
    assert_eq!(
        r.cmd_str(&["INCREX", "b", "BYINT", "1", "EX", "100", "ENX"]),
        arr(&[int(11), int(1)])
    );
    assert!((99..=100).contains(&ttl(&mut r, "b")));
    r.cmd_str(&["SET", "b", "10", "EX", "500"]);
    assert_eq!(
        r.cmd_str(&["INCREX", "b", "BYINT", "1", "EX", "10", "ENX"]),
        arr(&[int(11), int(1)])
    );
    assert!(ttl(&mut r, "b") > 400);
    // Without ENX the TTL is replaced.
    r.cmd_str(&["INCREX", "b", "PX", "10000"]);
    assert!((9..=10).contains(&ttl(&mut r, "b")));
    // PERSIST.
    r.cmd_str(&["SET", "c", "5", "EX", "1000"]);
    assert_eq!(
        r.cmd_str(&["INCREX", "c", "BYINT", "1", "PERSIST"]),
        arr(&[int(6), int(1)])
    );
    assert_eq!(ttl(&mut r, "c"), -1);
    // EXAT / PXAT in the future.
    r.cmd_str(&["INCREX", "d", "EXAT", "4102444800"]);
    assert_eq!(r.cmd_str(&["PEXPIRETIME", "d"]), int(4102444800000));
    r.cmd_str(&["INCREX", "d", "PXAT", "4102444800123"]);
    assert_eq!(r.cmd_str(&["PEXPIRETIME", "d"]), int(4102444800123));
    // A skipped operation leaves the TTL alone.
    r.cmd_str(&["SET", "e", "99", "EX", "1000"]);
    assert_eq!(
        r.cmd_str(&["INCREX", "e", "BYINT", "5", "UBOUND", "100", "PERSIST"]),
        arr(&[int(99), int(0)])
    );
    assert!(ttl(&mut r, "e") > 900);
    // SATURATE still applies the expiration.
    assert_eq!(
        r.cmd_str(&[
            "INCREX", "e", "BYINT", "5", "UBOUND", "100", "SATURATE", "PERSIST"
        ]),
        arr(&[int(100), int(1)])
    );
    assert_eq!(ttl(&mut r, "e"), -1);
    // A past EXAT/PXAT: the increment is answered, the key is gone.
    assert_eq!(
        r.cmd_str(&["INCREX", "f", "BYINT", "3", "PXAT", "1"]),
        arr(&[int(3), int(3)])
    );
    assert_eq!(r.cmd_str(&["EXISTS", "f"]), int(0));
    // BYFLOAT keeps the TTL as INCRBYFLOAT does.
    r.cmd_str(&["SET", "g", "1", "EX", "1000"]);
    r.cmd_str(&["INCREX", "g", "BYFLOAT", "0.5"]);
    assert_eq!(r.cmd_str(&["GET", "g"]), bulk("1.5"));
    assert!(ttl(&mut r, "g") > 900);
}

#[test]
fn increx_matches_redis_7_0_incrby_incrbyfloat_and_pexpireat() {
    let (s, rs) = (start_server(), redis_server());
    let mut ours = s.raw();
    let mut theirs = rs.raw();
    let at = "4102444800000";
    let steps: &[(&[&str], &[&[&str]])] = &[
        (&["INCREX", "a"], &[&["INCRBY", "a", "1"]]),
        (
            &["INCREX", "a", "BYINT", "-42", "PXAT", at],
            &[&["INCRBY", "a", "-42"], &["PEXPIREAT", "a", at]],
        ),
        (&["INCREX", "a", "BYINT", "10"], &[&["INCRBY", "a", "10"]]),
        (
            &["INCREX", "f", "BYFLOAT", "10.5", "PXAT", at],
            &[&["INCRBYFLOAT", "f", "10.5"], &["PEXPIREAT", "f", at]],
        ),
        (
            &["INCREX", "f", "BYFLOAT", "0.1"],
            &[&["INCRBYFLOAT", "f", "0.1"]],
        ),
        (
            &["INCREX", "f", "BYFLOAT", "9223372036854775807"],
            &[&["INCRBYFLOAT", "f", "9223372036854775807"]],
        ),
        (
            &["INCREX", "f", "BYFLOAT", "-3.0e3"],
            &[&["INCRBYFLOAT", "f", "-3.0e3"]],
        ),
        (
            &["INCREX", "n", "BYFLOAT", "123456789.123456789"],
            &[&["INCRBYFLOAT", "n", "123456789.123456789"]],
        ),
        (
            &["INCREX", "n", "BYFLOAT", "0.000000001", "PERSIST"],
            &[&["INCRBYFLOAT", "n", "0.000000001"], &["PERSIST", "n"]],
        ),
    ];
    for (ours_cmd, their_cmds) in steps {
        ours.cmd_str(ours_cmd);
        for c in *their_cmds {
            theirs.cmd_str(c);
        }
    }
    for key in ["a", "f", "n"] {
        for probe in [["GET", key], ["PEXPIRETIME", key], ["OBJECT", "ENCODING"]] {
            let probe: Vec<&str> = if probe[0] == "OBJECT" {
                vec!["OBJECT", "ENCODING", key]
            } else {
                probe.to_vec()
            };
            assert_eq!(
                escape(&ours.cmd_str(&probe)),
                escape(&theirs.cmd_str(&probe)),
                "{probe:?}"
            );
        }
    }
}

#[test]
fn increx_events_are_incrby_expire_persist() {
    let s = start_server();
    let events = common::differential::keyevents(
        s.port,
        "EAn",
        &[
            &["INCREX", "a", "EX", "100"],
            &["INCREX", "a", "BYFLOAT", "1.5", "PERSIST"],
            &["INCREX", "a", "BYFLOAT", "1", "UBOUND", "0"],
            &["INCREX", "a", "BYINT", "1"],
            &["INCREX", "b", "PXAT", "1"],
        ],
    );
    assert_eq!(
        events,
        vec![
            "__keyevent@0__:new a",
            "__keyevent@0__:incrby a",
            "__keyevent@0__:expire a",
            "__keyevent@0__:incrbyfloat a",
            "__keyevent@0__:persist a",
            "__keyevent@0__:new b",
            "__keyevent@0__:incrby b",
            "__keyevent@0__:del b",
        ]
    );
}

#[test]
fn increx_is_logged_as_set_with_an_absolute_deadline() {
    let st = start_server_with(&["--appendonly", "yes"]);
    let mut c = st.raw();
    for step in [
        &["INCREX", "a", "BYINT", "5", "EX", "1000"][..],
        &["INCREX", "a", "BYINT", "1"],
        &["INCREX", "f", "BYFLOAT", "10.5", "PX", "1000000"],
        &["INCREX", "f", "BYFLOAT", "0.1", "PERSIST"],
        &["SET", "s", "1", "EX", "1000"],
        &["INCREX", "s", "UBOUND", "0"],
        &["INCREX", "p", "PXAT", "1"],
        &["INCREX", "e", "EX", "1000", "ENX"],
        &["INCREX", "e", "EX", "5", "ENX"],
    ] {
        c.cmd_str(step);
    }
    let probe: &[&[&str]] = &[
        &["MGET", "a", "f", "s", "p", "e"],
        &["PEXPIRETIME", "a"],
        &["PEXPIRETIME", "f"],
        &["PEXPIRETIME", "s"],
        &["PEXPIRETIME", "e"],
        &["DBSIZE"],
    ];
    let before: Vec<Vec<u8>> = probe.iter().map(|p| c.cmd_str(p)).collect();
    std::thread::sleep(Duration::from_millis(100));
    let mut log = Vec::new();
    for entry in std::fs::read_dir(st.dir().join("appendonlydir")).expect("appendonlydir") {
        let path = entry.expect("entry").path();
        log.extend(std::fs::read(path).unwrap_or_default());
    }
    let has = |needle: &[u8]| log.windows(needle.len()).any(|w| w == needle);
    assert!(!has(b"INCREX"), "the log holds INCREX");
    assert!(has(b"PXAT") && has(b"10.6"));
    assert_eq!(c.cmd_str(&["DEBUG", "LOADAOF"]), b"+OK\r\n");
    let after: Vec<Vec<u8>> = probe.iter().map(|p| c.cmd_str(p)).collect();
    assert_eq!(before, after);
    assert_eq!(
        after[0],
        arr(&[
            bulk("6"),
            bulk("10.6"),
            bulk("1"),
            b"$-1\r\n".to_vec(),
            bulk("2")
        ])
    );
    assert_eq!(after[2], int(-1));
}

#[test]
fn increx_command_row_and_compat_version() {
    let s = start_server();
    let mut r = s.raw();
    let info = r.cmd_str(&["COMMAND", "INFO", "increx"]);
    let text = String::from_utf8_lossy(&info);
    assert!(
        text.starts_with("*1\r\n*10\r\n$6\r\nincrex\r\n:-2\r\n"),
        "{text}"
    );
    for word in [
        "write", "denyoom", "fast", "@string", "RW", "access", "update",
    ] {
        assert!(text.contains(word), "{word} missing from {text}");
    }
    let docs = r.cmd_str(&["COMMAND", "DOCS", "increx"]);
    let docs = String::from_utf8_lossy(&docs);
    assert!(docs.contains("8.8.0") && docs.contains("string"), "{docs}");
    expect(
        &mut r,
        &[
            (
                &["CONFIG", "SET", "compat-version", "8.6"],
                b"+OK\r\n".to_vec(),
            ),
            (
                &["INCREX", "k"],
                err("ERR unknown command 'INCREX', with args beginning with: 'k' "),
            ),
            (
                &["CONFIG", "SET", "compat-version", "8.8"],
                b"+OK\r\n".to_vec(),
            ),
            (&["INCREX", "k"], arr(&[int(1), int(1)])),
        ],
    );
}

// ---- CLUSTER SLOT-STATS ----------------------------------------------------------------

/// A one-node cluster serving every slot, its state ok.
fn cluster_node() -> Server {
    let bus = free_port();
    let s = start_server_with(&[
        "--cluster-enabled",
        "yes",
        "--cluster-port",
        &bus.to_string(),
    ]);
    let mut r = s.raw();
    assert_eq!(
        r.cmd_str(&["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]),
        b"+OK\r\n"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let info = String::from_utf8_lossy(&r.cmd_str(&["CLUSTER", "INFO"])).into_owned();
        if info.contains("cluster_state:ok") {
            return s;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "state never ok: {info}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `CLUSTER KEYSLOT key` as a number.
fn keyslot(r: &mut Raw, key: &str) -> u16 {
    let reply = r.cmd_str(&["CLUSTER", "KEYSLOT", key]);
    String::from_utf8_lossy(&reply)
        .trim_start_matches(':')
        .trim_end()
        .parse()
        .unwrap_or(u16::MAX)
}

/// One `[slot, {key-count: n}]` entry in RESP2 (the map flattened) or RESP3.
fn key_count_entry(slot: u16, n: i64, resp3: bool) -> Vec<u8> {
    let map = if resp3 {
        b"%1\r\n".to_vec()
    } else {
        b"*2\r\n".to_vec()
    };
    let mut v = b"*2\r\n".to_vec();
    v.extend(int(i64::from(slot)));
    v.extend(map);
    v.extend(bulk("key-count"));
    v.extend(int(n));
    v
}

#[test]
fn slot_stats_on_a_standalone_node_is_disabled() {
    let s = start_server();
    let mut r = s.raw();
    expect(
        &mut r,
        &[(
            &["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0", "10"],
            err("ERR This instance has cluster support disabled"),
        )],
    );
}

#[test]
fn slot_stats_key_count_ranges_order_and_errors() {
    let s = cluster_node();
    let mut r = s.raw();
    let foo = keyslot(&mut r, "FOO");
    r.cmd_str(&["SET", "FOO", "v"]);
    expect(
        &mut r,
        &[
            (
                &[
                    "CLUSTER",
                    "SLOT-STATS",
                    "SLOTSRANGE",
                    &foo.to_string(),
                    &foo.to_string(),
                ],
                arr(&[key_count_entry(foo, 1, false)]),
            ),
            (
                &["CLUSTER", "slot-stats", "slotsrange", "100", "102"],
                arr(&[
                    key_count_entry(100, 0, false),
                    key_count_entry(101, 0, false),
                    key_count_entry(102, 0, false),
                ]),
            ),
        ],
    );
    let mut r3 = conn(s.port, 3);
    expect(
        &mut r3,
        &[(
            &[
                "CLUSTER",
                "SLOT-STATS",
                "SLOTSRANGE",
                &foo.to_string(),
                &foo.to_string(),
            ],
            arr(&[key_count_entry(foo, 1, true)]),
        )],
    );
    r.cmd_str(&["DEL", "FOO"]);
    // Three keys in one slot, two in another, one in a third.
    for key in ["a{x}", "b{x}", "c{x}", "a{y}", "b{y}", "a{z}"] {
        r.cmd_str(&["SET", key, "v"]);
    }
    let (x, y, z) = (
        keyslot(&mut r, "x"),
        keyslot(&mut r, "y"),
        keyslot(&mut r, "z"),
    );
    expect(
        &mut r,
        &[
            (
                &[
                    "CLUSTER",
                    "SLOT-STATS",
                    "ORDERBY",
                    "key-count",
                    "LIMIT",
                    "3",
                ],
                arr(&[
                    key_count_entry(x, 3, false),
                    key_count_entry(y, 2, false),
                    key_count_entry(z, 1, false),
                ]),
            ),
            (
                &[
                    "CLUSTER",
                    "SLOT-STATS",
                    "ORDERBY",
                    "KEY-COUNT",
                    "DESC",
                    "LIMIT",
                    "1",
                ],
                arr(&[key_count_entry(x, 3, false)]),
            ),
            // Ties go by ascending slot.
            (
                &[
                    "CLUSTER",
                    "SLOT-STATS",
                    "ORDERBY",
                    "key-count",
                    "LIMIT",
                    "2",
                    "ASC",
                ],
                arr(&[key_count_entry(0, 0, false), key_count_entry(1, 0, false)]),
            ),
        ],
    );
    let all = r.cmd_str(&["CLUSTER", "SLOT-STATS", "ORDERBY", "key-count"]);
    assert!(all.starts_with(b"*16384\r\n"), "{}", escape(&all[..20]));
    // Slots the node does not serve are left out.
    r.cmd_str(&["CONFIG", "SET", "cluster-require-full-coverage", "no"]);
    assert_eq!(r.cmd_str(&["CLUSTER", "DELSLOTS", "101"]), b"+OK\r\n");
    expect(
        &mut r,
        &[(
            &["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "100", "102"],
            arr(&[
                key_count_entry(100, 0, false),
                key_count_entry(102, 0, false),
            ]),
        )],
    );
    let all = r.cmd_str(&["CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "ASC"]);
    assert!(all.starts_with(b"*16383\r\n"), "{}", escape(&all[..20]));
    // Errors.
    let metric_err = err("ERR Unrecognized sort metric for ORDERBY.");
    let limit_err = err("ERR Limit has to lie in between 1 and 16384 (maximum number of slots).");
    let multiple = err("ERR Multiple filters of the same type are disallowed.");
    expect(
        &mut r,
        &[
            (
                &["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "10", "5"],
                err("ERR Start slot number 10 is greater than end slot number 5"),
            ),
            (
                &["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0", "16384"],
                err("ERR Invalid or out of range slot"),
            ),
            (
                &["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "x", "1"],
                err("ERR Invalid or out of range slot"),
            ),
            (
                &["CLUSTER", "SLOT-STATS", "ORDERBY", "cpu-usec"],
                metric_err.clone(),
            ),
            (
                &["CLUSTER", "SLOT-STATS", "ORDERBY", "network-bytes-in"],
                metric_err.clone(),
            ),
            (
                &["CLUSTER", "SLOT-STATS", "ORDERBY", "nope"],
                metric_err.clone(),
            ),
            (
                &[
                    "CLUSTER",
                    "SLOT-STATS",
                    "ORDERBY",
                    "key-count",
                    "LIMIT",
                    "0",
                ],
                limit_err.clone(),
            ),
            (
                &[
                    "CLUSTER",
                    "SLOT-STATS",
                    "ORDERBY",
                    "key-count",
                    "LIMIT",
                    "-1",
                ],
                limit_err.clone(),
            ),
            (
                &[
                    "CLUSTER",
                    "SLOT-STATS",
                    "ORDERBY",
                    "key-count",
                    "LIMIT",
                    "16385",
                ],
                limit_err.clone(),
            ),
            (
                &[
                    "CLUSTER",
                    "SLOT-STATS",
                    "ORDERBY",
                    "key-count",
                    "LIMIT",
                    "x",
                ],
                limit_err,
            ),
            (
                &["CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "nope"],
                err(SYNTAX),
            ),
            (
                &["CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT"],
                err(SYNTAX),
            ),
            (
                &[
                    "CLUSTER",
                    "SLOT-STATS",
                    "ORDERBY",
                    "key-count",
                    "ASC",
                    "DESC",
                ],
                multiple.clone(),
            ),
            (
                &[
                    "CLUSTER",
                    "SLOT-STATS",
                    "ORDERBY",
                    "key-count",
                    "LIMIT",
                    "1",
                    "LIMIT",
                    "2",
                ],
                multiple,
            ),
            (
                &["CLUSTER", "SLOT-STATS", "ORDERBY"],
                err("ERR wrong number of arguments for 'cluster|slot-stats' command"),
            ),
        ],
    );
    let sub = r.cmd_str(&["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "1", "2", "3"]);
    assert!(
        sub.starts_with(b"-ERR unknown subcommand"),
        "{}",
        escape(&sub)
    );
}

/// The `[slot, {...}]` entry of `slot` with every metric: (key-count, cpu-usec,
/// network-bytes-in, network-bytes-out).
fn full_stats(r: &mut Raw, slot: u16) -> (i64, i64, i64, i64) {
    let reply = r.cmd_str(&[
        "CLUSTER",
        "SLOT-STATS",
        "SLOTSRANGE",
        &slot.to_string(),
        &slot.to_string(),
    ]);
    let text = String::from_utf8_lossy(&reply).into_owned();
    let head = format!("*1\r\n*2\r\n:{slot}\r\n*8\r\n");
    assert!(text.starts_with(&head), "{}", escape(&reply));
    let field = |name: &str| -> i64 {
        let at = text
            .find(&format!("{name}\r\n:"))
            .map(|i| i + name.len() + 3);
        at.and_then(|i| text[i..].split("\r\n").next().and_then(|n| n.parse().ok()))
            .unwrap_or(-1)
    };
    (
        field("key-count"),
        field("cpu-usec"),
        field("network-bytes-in"),
        field("network-bytes-out"),
    )
}

#[test]
fn slot_stats_counts_cpu_and_network_per_slot_when_enabled() {
    let s = cluster_node();
    let mut r = s.raw();
    let slot = keyslot(&mut r, "key");
    expect(
        &mut r,
        &[
            (
                &["CONFIG", "SET", "cluster-slot-stats-enabled", "yes"],
                b"+OK\r\n".to_vec(),
            ),
            (&["CONFIG", "RESETSTAT"], b"+OK\r\n".to_vec()),
        ],
    );
    assert_eq!(full_stats(&mut r, slot), (0, 0, 0, 0));
    // *3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n = 33 bytes in, +OK\r\n = 5 out.
    r.cmd_str(&["SET", "key", "value"]);
    let (keys, _cpu, bytes_in, bytes_out) = full_stats(&mut r, slot);
    assert_eq!((keys, bytes_in, bytes_out), (1, 33, 5));
    // Commands without a key count nowhere.
    r.cmd_str(&["INFO"]);
    r.cmd_str(&["PING"]);
    let (_, _, bytes_in, bytes_out) = full_stats(&mut r, slot);
    assert_eq!((bytes_in, bytes_out), (33, 5));
    // An inline command: SET key value\r\n = 15 bytes.
    r.cmd_str(&["CONFIG", "RESETSTAT"]);
    r.send(b"SET key value\r\n");
    assert_eq!(r.read_reply(), b"+OK\r\n");
    let (_, _, bytes_in, bytes_out) = full_stats(&mut r, slot);
    assert_eq!((bytes_in, bytes_out), (15, 5));
    // MULTI (15) + SET (33) + EXEC (14) = 62 in; +QUEUED\r\n (9) and EXEC's reply
    // *1\r\n+OK\r\n (9) = 18 out.
    r.cmd_str(&["CONFIG", "RESETSTAT"]);
    r.cmd_str(&["MULTI"]);
    r.cmd_str(&["SET", "key", "value"]);
    assert_eq!(r.cmd_str(&["EXEC"]), arr(&[b"+OK\r\n".to_vec()]));
    let (_, _, bytes_in, bytes_out) = full_stats(&mut r, slot);
    assert_eq!((bytes_in, bytes_out), (62, 18));
    // A blocked command counts when it is served: BLPOP key 0 (31 in) waits, then
    // LPUSH key value (35 in, :1 out) serves it (*2 $3 key $5 value, 24 out).
    r.cmd_str(&["DEL", "key"]);
    r.cmd_str(&["CONFIG", "RESETSTAT"]);
    let mut waiter = s.raw();
    waiter.send(&encode_cmd(&[b"BLPOP", b"key", b"0"]));
    wait_blocked(&mut r, 1);
    let (_, _, bytes_in, bytes_out) = full_stats(&mut r, slot);
    assert_eq!((bytes_in, bytes_out), (0, 0));
    assert_eq!(r.cmd_str(&["LPUSH", "key", "value"]), int(1));
    assert_eq!(waiter.read_reply(), arr(&[bulk("key"), bulk("value")]));
    let (_, _, bytes_in, bytes_out) = full_stats(&mut r, slot);
    assert_eq!((bytes_in, bytes_out), (66, 28));
    r.cmd_str(&["SET", "key", "value"]);
    // CPU time adds up; ORDERBY accepts the detailed metrics now.
    r.cmd_str(&["CONFIG", "RESETSTAT"]);
    let big: Vec<String> = (0..2000).map(|i| i.to_string()).collect();
    let mut cmd = vec!["RPUSH", "key2{key}"];
    cmd.extend(big.iter().map(String::as_str));
    r.cmd_str(&cmd);
    for _ in 0..20 {
        r.cmd_str(&["LRANGE", "key2{key}", "0", "-1"]);
    }
    let (_, cpu, _, bytes_out) = full_stats(&mut r, slot);
    assert!(cpu > 0, "cpu-usec {cpu}");
    assert!(bytes_out > 20 * 2000 * 4, "network-bytes-out {bytes_out}");
    for metric in ["cpu-usec", "network-bytes-in", "network-bytes-out"] {
        let top = r.cmd_str(&["CLUSTER", "SLOT-STATS", "ORDERBY", metric, "LIMIT", "1"]);
        let head = format!("*1\r\n*2\r\n:{slot}\r\n*8\r\n");
        assert!(
            top.starts_with(head.as_bytes()),
            "{metric}: {}",
            escape(&top)
        );
    }
    // RESETSTAT zeroes the counters, not the keys.
    r.cmd_str(&["CONFIG", "RESETSTAT"]);
    assert_eq!(full_stats(&mut r, slot), (2, 0, 0, 0));
    // Disabled again: key-count only.
    r.cmd_str(&["CONFIG", "SET", "cluster-slot-stats-enabled", "no"]);
    expect(
        &mut r,
        &[(
            &[
                "CLUSTER",
                "SLOT-STATS",
                "SLOTSRANGE",
                &slot.to_string(),
                &slot.to_string(),
            ],
            arr(&[key_count_entry(slot, 2, false)]),
        )],
    );
}

#[test]
fn slot_stats_count_each_pipelined_command_over_a_large_keyspace() {
    // Past this many keys a connection parses pipelined commands ahead of running them
    // (server/lookahead.rs): each must still count its own request's bytes.
    let s = cluster_node();
    let mut r = s.raw();
    let slot = keyslot(&mut r, "key");
    let n = streamd::core::prefetch::LOOKAHEAD_MIN_KEYS + 100;
    let mut fill = Vec::new();
    for i in 0..n {
        fill.extend(encode_cmd(&[
            b"SET",
            format!("{{fill}}:{i}").as_bytes(),
            b"1",
        ]));
    }
    r.send(&fill);
    for reply in r.read_replies(n) {
        assert_eq!(reply, b"+OK\r\n");
    }
    assert_ne!(keyslot(&mut r, "{fill}"), slot);
    r.cmd_str(&["CONFIG", "SET", "cluster-slot-stats-enabled", "yes"]);
    r.cmd_str(&["CONFIG", "RESETSTAT"]);
    // One write: 20 SETs (33 bytes in, 5 out each) and a GET (22 in, $5 value 11 out),
    // then a SET split over two writes (33 in once it is whole).
    let mut input = Vec::new();
    for _ in 0..20 {
        input.extend(encode_cmd(&[b"SET", b"key", b"value"]));
    }
    input.extend(encode_cmd(&[b"GET", b"key"]));
    let split = encode_cmd(&[b"SET", b"key", b"value"]);
    input.extend_from_slice(&split[..10]);
    r.send(&input);
    for _ in 0..20 {
        assert_eq!(r.read_reply(), b"+OK\r\n");
    }
    assert_eq!(r.read_reply(), b"$5\r\nvalue\r\n");
    r.send(&split[10..]);
    assert_eq!(r.read_reply(), b"+OK\r\n");
    let (keys, _cpu, bytes_in, bytes_out) = full_stats(&mut r, slot);
    assert_eq!(
        (keys, bytes_in, bytes_out),
        (1, 20 * 33 + 22 + 33, 20 * 5 + 11 + 5)
    );
}

#[test]
fn slot_stats_row_and_compat_version() {
    let s = cluster_node();
    let mut r = s.raw();
    let info = r.cmd_str(&["COMMAND", "INFO", "cluster|slot-stats"]);
    let text = String::from_utf8_lossy(&info);
    assert!(text.contains("cluster|slot-stats\r\n:-4\r\n"), "{text}");
    assert!(text.contains("stale") && text.contains("loading"), "{text}");
    r.cmd_str(&["CONFIG", "SET", "compat-version", "8.0"]);
    let old = r.cmd_str(&["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0", "0"]);
    assert!(
        old.starts_with(b"-ERR unknown subcommand"),
        "{}",
        escape(&old)
    );
    // COMMAND INFO and DOCS leave it out too.
    assert_eq!(
        r.cmd_str(&["COMMAND", "INFO", "cluster|slot-stats"]),
        b"*1\r\n*-1\r\n"
    );
    let info = r.cmd_str(&["COMMAND", "INFO", "cluster"]);
    assert!(!String::from_utf8_lossy(&info).contains("slot-stats"));
    let docs = r.cmd_str(&["COMMAND", "DOCS", "cluster"]);
    assert!(!String::from_utf8_lossy(&docs).contains("slot-stats"));
    assert!(String::from_utf8_lossy(&docs).contains("countkeysinslot"));
    r.cmd_str(&["CONFIG", "SET", "compat-version", "8.2"]);
    assert_eq!(
        r.cmd_str(&["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0", "0"]),
        arr(&[key_count_entry(0, 0, false)])
    );
}

// ---- HOTKEYS ---------------------------------------------------------------------------

use common::differential::{V, parse};

/// HOTKEYS GET's one map as (field, value) pairs, with the map's type byte.
fn hotkeys_get(r: &mut Raw) -> (u8, Vec<(String, V)>) {
    let reply = r.cmd_str(&["HOTKEYS", "GET"]);
    let V::Agg(b'*', Some(outer)) = parse(&reply, 0).0 else {
        panic!("not an array: {}", escape(&reply));
    };
    assert_eq!(outer.len(), 1, "{}", escape(&reply));
    let Some(V::Agg(kind, Some(items))) = outer.into_iter().next() else {
        panic!("no map: {}", escape(&reply));
    };
    let pairs = items
        .chunks(2)
        .map(|p| {
            let name = match &p[0] {
                V::Bulk(Some(b)) => String::from_utf8_lossy(b).into_owned(),
                other => panic!("field name {other:?}"),
            };
            (name, p[1].clone())
        })
        .collect();
    (kind, pairs)
}

/// An integer reply value.
fn vint(n: i64) -> V {
    V::Line(b':', n.to_string().into_bytes())
}

/// A bulk reply value.
fn vbulk(s: &str) -> V {
    V::Bulk(Some(s.as_bytes().to_vec()))
}

/// An array reply value.
fn varr(items: Vec<V>) -> V {
    V::Agg(b'*', Some(items))
}

/// The field names of a GET map.
fn names(pairs: &[(String, V)]) -> Vec<&str> {
    pairs.iter().map(|(n, _)| n.as_str()).collect()
}

/// The value of one field.
fn field<'a>(pairs: &'a [(String, V)], name: &str) -> &'a V {
    pairs
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no {name} in {pairs:?}"))
}

#[test]
fn hotkeys_errors_and_session_lifecycle() {
    let s = start_server();
    let mut r = s.raw();
    let null = b"$-1\r\n".to_vec();
    let ok = b"+OK\r\n".to_vec();
    expect(
        &mut r,
        &[
            (&["HOTKEYS", "GET"], null.clone()),
            (&["HOTKEYS", "STOP"], null.clone()),
            (&["HOTKEYS", "RESET"], ok.clone()),
            (
                &["HOTKEYS", "START"],
                err("ERR METRICS parameter is required"),
            ),
            (
                &["HOTKEYS", "START", "COUNT", "5"],
                err("ERR METRICS parameter is required"),
            ),
            (
                &["HOTKEYS", "START", "METRICS", "0", "CPU"],
                err("ERR METRICS count must be > 0 and <= 2"),
            ),
            (
                &["HOTKEYS", "START", "METRICS", "3", "CPU", "NET", "CPU"],
                err("ERR METRICS count must be > 0 and <= 2"),
            ),
            (
                &["HOTKEYS", "START", "METRICS", "x", "CPU"],
                err("ERR METRICS count must be > 0 and <= 2"),
            ),
            (
                &["HOTKEYS", "START", "METRICS", "2", "CPU"],
                err("ERR METRICS count does not match number of metric types provided"),
            ),
            (
                &["HOTKEYS", "START", "METRICS", "1", "MEM"],
                err("ERR METRICS no valid metrics passed. Supported: CPU|NET"),
            ),
            (
                &["HOTKEYS", "START", "METRICS", "2", "cpu", "CPU"],
                err("ERR METRICS CPU defined more than once!"),
            ),
            (
                &["HOTKEYS", "START", "METRICS", "2", "NET", "net"],
                err("ERR METRICS NET defined more than once!"),
            ),
            (
                &["HOTKEYS", "START", "METRICS", "1", "CPU", "COUNT", "65"],
                err("ERR COUNT must be between 1 and 64"),
            ),
            (
                &["HOTKEYS", "START", "METRICS", "1", "CPU", "DURATION", "0"],
                err("ERR DURATION must be between 1 and 1000000"),
            ),
            (
                &["HOTKEYS", "START", "METRICS", "1", "CPU", "SAMPLE", "0"],
                err("ERR SAMPLE ratio must be positive"),
            ),
            (
                &["HOTKEYS", "START", "METRICS", "1", "CPU", "SLOTS", "1", "0"],
                err("ERR SLOTS parameter cannot be used in non-cluster mode"),
            ),
            (
                &["HOTKEYS", "START", "METRICS", "1", "CPU", "BOGUS"],
                err(SYNTAX),
            ),
            (
                &["HOTKEYS", "START", "METRICS", "1", "CPU", "COUNT"],
                err(SYNTAX),
            ),
            (&["HOTKEYS", "GET"], null.clone()),
            // METRICS counts words; only CPU and NET mean something.
            (
                &[
                    "HOTKEYS", "START", "METRICS", "2", "NET", "MEM", "COUNT", "2",
                ],
                ok.clone(),
            ),
            (
                &["HOTKEYS", "START", "METRICS", "1", "CPU"],
                err("ERR hotkey tracking session already in progress"),
            ),
            (
                &["HOTKEYS", "RESET"],
                err("ERR hotkey tracking session in progress, stop tracking first"),
            ),
            (
                &["HOTKEYS", "GET", "x"],
                err("ERR wrong number of arguments for 'hotkeys|get' command"),
            ),
        ],
    );
    let nope = r.cmd_str(&["HOTKEYS", "NOPE"]);
    assert!(
        nope.starts_with(b"-ERR unknown subcommand 'NOPE'"),
        "{}",
        escape(&nope)
    );
    // *3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\nx\r\n (27) + +OK\r\n (5) = 32 a SET.
    for _ in 0..3 {
        r.cmd_str(&["SET", "a", "x"]);
    }
    for _ in 0..2 {
        r.cmd_str(&["SET", "b", "x"]);
    }
    // *2\r\n$3\r\nGET\r\n$1\r\nc\r\n (20) + $-1\r\n (5).
    r.cmd_str(&["GET", "c"]);
    r.cmd_str(&["PING"]);
    let (kind, pairs) = hotkeys_get(&mut r);
    assert_eq!(kind, b'*');
    assert_eq!(
        names(&pairs),
        vec![
            "tracking-active",
            "sample-ratio",
            "selected-slots",
            "all-commands-all-slots-us",
            "net-bytes-all-commands-all-slots",
            "collection-start-time-unix-ms",
            "collection-duration-ms",
            "total-net-bytes",
            "by-net-bytes",
        ]
    );
    assert_eq!(field(&pairs, "tracking-active"), &vint(1));
    assert_eq!(field(&pairs, "sample-ratio"), &vint(1));
    assert_eq!(
        field(&pairs, "selected-slots"),
        &varr(vec![varr(vec![vint(0), vint(16383)])])
    );
    assert_eq!(
        field(&pairs, "net-bytes-all-commands-all-slots"),
        &vint(185)
    );
    assert_eq!(field(&pairs, "total-net-bytes"), &vint(185));
    // COUNT 2: the two heaviest keys.
    assert_eq!(
        field(&pairs, "by-net-bytes"),
        &varr(vec![vbulk("a"), vint(96), vbulk("b"), vint(64)])
    );
    // Stopped: results kept, nothing more counted.
    expect(
        &mut r,
        &[
            (&["HOTKEYS", "STOP"], ok.clone()),
            (&["HOTKEYS", "STOP"], null.clone()),
            (&["SET", "c", "x"], ok.clone()),
        ],
    );
    let (_, pairs) = hotkeys_get(&mut r);
    assert_eq!(field(&pairs, "tracking-active"), &vint(0));
    assert_eq!(field(&pairs, "total-net-bytes"), &vint(185));
    expect(
        &mut r,
        &[
            (&["HOTKEYS", "RESET"], ok.clone()),
            (&["HOTKEYS", "GET"], null.clone()),
        ],
    );
    // RESP3: a map inside the array, nil as `_`.
    let mut r3 = conn(s.port, 3);
    expect(&mut r3, &[(&["HOTKEYS", "GET"], b"_\r\n".to_vec())]);
    r3.cmd_str(&[
        "HOTKEYS", "START", "METRICS", "2", "CPU", "NET", "SAMPLE", "3",
    ]);
    r3.cmd_str(&["SET", "k", "v"]);
    let (kind, pairs) = hotkeys_get(&mut r3);
    assert_eq!(kind, b'%');
    assert_eq!(
        names(&pairs),
        vec![
            "tracking-active",
            "sample-ratio",
            "selected-slots",
            "all-commands-all-slots-us",
            "net-bytes-all-commands-all-slots",
            "collection-start-time-unix-ms",
            "collection-duration-ms",
            "total-cpu-time-user-ms",
            "total-cpu-time-sys-ms",
            "total-net-bytes",
            "by-cpu-time-us",
            "by-net-bytes",
        ]
    );
    assert_eq!(field(&pairs, "sample-ratio"), &vint(3));
    r3.cmd_str(&["HOTKEYS", "STOP"]);
}

#[test]
fn hotkeys_duration_stops_the_session() {
    let s = start_server();
    let mut r = s.raw();
    assert_eq!(
        r.cmd_str(&["HOTKEYS", "START", "METRICS", "1", "CPU", "DURATION", "1"]),
        b"+OK\r\n"
    );
    std::thread::sleep(Duration::from_millis(1100));
    let (_, pairs) = hotkeys_get(&mut r);
    assert_eq!(field(&pairs, "tracking-active"), &vint(0));
    assert_eq!(field(&pairs, "collection-duration-ms"), &vint(1000));
    assert_eq!(r.cmd_str(&["HOTKEYS", "STOP"]), b"$-1\r\n");
    assert_eq!(r.cmd_str(&["HOTKEYS", "RESET"]), b"+OK\r\n");
}

#[test]
fn hotkeys_slots_in_cluster_mode() {
    let s = cluster_node();
    let mut r = s.raw();
    let (x, y) = (keyslot(&mut r, "x"), keyslot(&mut r, "y"));
    let (lo, hi) = (x.min(y), x.max(y));
    expect(
        &mut r,
        &[
            (
                &[
                    "HOTKEYS", "START", "METRICS", "1", "NET", "SLOTS", "2", "5", "5",
                ],
                err("ERR duplicate slot number"),
            ),
            (
                &[
                    "HOTKEYS", "START", "METRICS", "1", "NET", "SLOTS", "1", "16384",
                ],
                err("ERR Invalid or out of range slot"),
            ),
            (
                &[
                    "HOTKEYS", "START", "METRICS", "1", "NET", "SLOTS", "3", "1", "2",
                ],
                err("ERR not enough slot numbers provided"),
            ),
            (
                &["HOTKEYS", "START", "METRICS", "1", "NET", "SLOTS", "0"],
                err("ERR SLOTS count must be between 1 and 16384"),
            ),
            (
                &[
                    "HOTKEYS", "START", "METRICS", "1", "NET", "SLOTS", "1", "1", "SLOTS", "1", "2",
                ],
                err("ERR SLOTS parameter already specified"),
            ),
            (
                &[
                    "HOTKEYS",
                    "START",
                    "METRICS",
                    "1",
                    "NET",
                    "SLOTS",
                    "3",
                    &hi.to_string(),
                    &lo.to_string(),
                    "0",
                ],
                b"+OK\r\n".to_vec(),
            ),
        ],
    );
    r.cmd_str(&["SET", "{x}k", "v"]);
    r.cmd_str(&["SET", "other", "v"]);
    let (_, pairs) = hotkeys_get(&mut r);
    assert_eq!(
        names(&pairs),
        vec![
            "tracking-active",
            "sample-ratio",
            "selected-slots",
            "all-commands-selected-slots-us",
            "all-commands-all-slots-us",
            "net-bytes-all-commands-selected-slots",
            "net-bytes-all-commands-all-slots",
            "collection-start-time-unix-ms",
            "collection-duration-ms",
            "total-net-bytes",
            "by-net-bytes",
        ]
    );
    assert_eq!(
        field(&pairs, "selected-slots"),
        &varr(vec![
            varr(vec![vint(0)]),
            varr(vec![vint(i64::from(lo))]),
            varr(vec![vint(i64::from(hi))]),
        ])
    );
    // Only the key in a selected slot is ranked: *3 $3 SET $4 {x}k $1 v = 30 + 5.
    assert_eq!(
        field(&pairs, "by-net-bytes"),
        &varr(vec![vbulk("{x}k"), vint(35)])
    );
    assert_eq!(
        field(&pairs, "net-bytes-all-commands-selected-slots"),
        &vint(35)
    );
    // *3 $3 SET $5 other $1 v = 31 + 5 more for all slots.
    assert_eq!(field(&pairs, "net-bytes-all-commands-all-slots"), &vint(71));
}

#[test]
fn hotkeys_rows_and_compat_version() {
    let s = start_server();
    let mut r = s.raw();
    let info = r.cmd_str(&["COMMAND", "INFO", "hotkeys"]);
    let text = String::from_utf8_lossy(&info);
    for sub in [
        "hotkeys|start",
        "hotkeys|stop",
        "hotkeys|get",
        "hotkeys|reset",
    ] {
        assert!(text.contains(sub), "{sub} missing: {text}");
    }
    let help = r.cmd_str(&["HOTKEYS", "HELP"]);
    assert!(
        help.starts_with(
            b"*24\r\n+HOTKEYS <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n"
        ),
        "{}",
        escape(&help)
    );
    r.cmd_str(&["CONFIG", "SET", "compat-version", "8.4"]);
    expect(
        &mut r,
        &[(
            &["HOTKEYS", "GET"],
            err("ERR unknown command 'HOTKEYS', with args beginning with: 'GET' "),
        )],
    );
}
