//! Idempotent producers against the real binary: `XADD ... IDMP pid iid` / `IDMPAUTO pid`,
//! `XCFGSET`, `XIDMPRECORD`, the XINFO STREAM counters and `compat-version`
//! (reference §2.1, §2.16, §2.18, §2.19, §3.5). Restarts are in tests/persistence.rs.
//!
//! - Every error string, as exact bytes, including the `XADD s IDMP p1 * f v` trap.
//! - Duplicates across connections, with binary pids and iids, with IDMPAUTO in another
//!   field order, after eviction and after expiry (no longer duplicates).
//! - A retrying producer: 10,000 XADDs each sent 1–3 times at random, pipelined, leave
//!   exactly 10,000 entries in order.
//! - `compat-version 7.4` hides the IDMP fields, options and commands.

mod common;

use common::reply::{bulk, err, int};
use common::{Raw, Rng, check, start_server, start_server_with};
use std::time::{Duration, Instant};

const OK: &[u8] = b"+OK\r\n";
const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

/// The bulk string of a reply (an ID), as text; panics on anything else.
fn id_of(reply: &[u8]) -> String {
    let text = String::from_utf8_lossy(reply);
    let mut lines = text.split("\r\n");
    let head = lines.next().unwrap_or_default();
    assert!(head.starts_with('$'), "not a bulk string: {text:?}");
    lines.next().unwrap_or_default().to_string()
}

/// XADD with byte arguments; returns the ID it answered.
fn xadd(r: &mut Raw, args: &[&[u8]]) -> String {
    let mut argv: Vec<&[u8]> = vec![b"XADD"];
    argv.extend_from_slice(args);
    id_of(&r.cmd(&argv))
}

/// An integer field of `XINFO STREAM key` (RESP2 flat array), or None if absent.
fn info_field(r: &mut Raw, key: &str, field: &str) -> Option<i64> {
    let reply = r.cmd_str(&["XINFO", "STREAM", key]);
    let text = String::from_utf8_lossy(&reply).into_owned();
    let needle = format!("${}\r\n{field}\r\n:", field.len());
    let at = text.find(&needle)? + needle.len();
    let digits: String = text[at..].chars().take_while(|c| *c != '\r').collect();
    digits.parse().ok()
}

fn counters(r: &mut Raw, key: &str) -> [i64; 4] {
    [
        "pids-tracked",
        "iids-tracked",
        "iids-added",
        "iids-duplicates",
    ]
    .map(|f| info_field(r, key, f).unwrap_or(-1))
}

#[test]
fn idmp_syntax_errors_match_redis() {
    let s = start_server();
    let mut r = s.raw();
    let explicit = "ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs";
    let twice = "ERR syntax error, IDMP/IDMPAUTO specified multiple times";
    check(
        &mut r,
        &[
            // The trap: `*` is the iid, so `f` is taken as the ID.
            (&["XADD", "s", "IDMP", "p1", "*", "f", "v"], err(INVALID_ID)),
            (
                &["XADD", "s", "IDMP", "p1", "i1", "1-1", "f", "v"],
                err(explicit),
            ),
            (
                &["XADD", "s", "IDMP", "p1", "i1", "5-*", "f", "v"],
                err(explicit),
            ),
            (
                &["XADD", "s", "IDMPAUTO", "p1", "1-1", "f", "v"],
                err(explicit),
            ),
            (
                &[
                    "XADD", "s", "IDMP", "p1", "i1", "IDMP", "p2", "i2", "*", "f", "v",
                ],
                err(twice),
            ),
            (
                &[
                    "XADD", "s", "IDMPAUTO", "p1", "IDMP", "p2", "i2", "*", "f", "v",
                ],
                err(twice),
            ),
            (
                &[
                    "XADD", "s", "IDMP", "p1", "i1", "IDMPAUTO", "p2", "*", "f", "v",
                ],
                err(twice),
            ),
            (
                &[
                    "XADD", "s", "IDMPAUTO", "p1", "IDMPAUTO", "p2", "*", "f", "v",
                ],
                err(twice),
            ),
            (
                &["XADD", "s", "IDMP", "", "i1", "*", "f", "v"],
                err("ERR syntax error, IDMP requires a non-empty producer ID"),
            ),
            (
                &["XADD", "s", "IDMP", "p1", "", "*", "f", "v"],
                err("ERR syntax error, IDMP requires a non-empty idempotent ID"),
            ),
            (
                &["XADD", "s", "IDMPAUTO", "", "*", "f", "v"],
                err("ERR syntax error, IDMPAUTO requires a non-empty producer ID"),
            ),
            // Nothing was created by any of them.
            (&["EXISTS", "s"], int(0)),
            // NOMKSTREAM on a missing key: null, before any IDMP work.
            (
                &["XADD", "s", "NOMKSTREAM", "IDMP", "p", "i", "*", "f", "v"],
                b"$-1\r\n".to_vec(),
            ),
            (&["EXISTS", "s"], int(0)),
        ],
    );
}

#[test]
fn duplicates_return_the_original_id_and_append_nothing() {
    let s = start_server();
    let mut r = s.raw();
    let id1 = xadd(
        &mut r,
        &[
            b"s",
            b"IDMP",
            b"p1",
            b"payment-abc",
            b"*",
            b"amount",
            b"100",
        ],
    );
    // Another connection, other fields, trimming and options in another order.
    let mut r2 = s.raw();
    let dup = xadd(
        &mut r2,
        &[
            b"s",
            b"MAXLEN",
            b"~",
            b"100",
            b"IDMP",
            b"p1",
            b"payment-abc",
            b"*",
            b"amount",
            b"200",
        ],
    );
    assert_eq!(dup, id1);
    check(
        &mut r,
        &[
            (&["XLEN", "s"], int(1)),
            (
                &["XRANGE", "s", "-", "+"],
                common::reply::arr(&[common::reply::entry(&id1, &["amount", "100"])]),
            ),
        ],
    );
    // Same iid, another producer: a new entry.
    let other = xadd(
        &mut r,
        &[b"s", b"IDMP", b"p2", b"payment-abc", b"*", b"amount", b"1"],
    );
    assert_ne!(other, id1);
    assert_eq!(counters(&mut r, "s"), [2, 2, 2, 1]);
    // Inside MULTI too.
    r.cmd_str(&["MULTI"]);
    for args in [
        ["XADD", "s", "IDMP", "p1", "t", "*", "f", "1"],
        ["XADD", "s", "IDMP", "p1", "t", "*", "f", "2"],
    ] {
        assert_eq!(r.cmd_str(&args), b"+QUEUED\r\n");
    }
    let exec = String::from_utf8_lossy(&r.cmd_str(&["EXEC"])).into_owned();
    let ids: Vec<&str> = exec.split("\r\n").filter(|l| l.contains('-')).collect();
    assert_eq!(ids.len(), 2, "{exec:?}");
    assert_eq!(ids[0], ids[1]);
    assert_eq!(counters(&mut r, "s"), [2, 3, 3, 2]);
}

#[test]
fn binary_pids_and_iids_are_exact_bytes() {
    let s = start_server();
    let mut r = s.raw();
    let pid: &[u8] = b"\x00\x01\xff";
    let iid: &[u8] = b"\x00\r\n\xfe";
    let a = xadd(&mut r, &[b"s", b"IDMP", pid, iid, b"*", b"f", b"v"]);
    assert_eq!(
        xadd(&mut r, &[b"s", b"IDMP", pid, iid, b"*", b"f", b"w"]),
        a
    );
    // One byte more or less is another producer / iid.
    assert_ne!(
        xadd(&mut r, &[b"s", b"IDMP", b"\x00\x01", iid, b"*", b"f", b"v"]),
        a
    );
    assert_ne!(
        xadd(&mut r, &[b"s", b"IDMP", pid, b"\x00\r\n", b"*", b"f", b"v"]),
        a
    );
    assert_eq!(counters(&mut r, "s"), [2, 3, 3, 1]);
}

#[test]
fn idmpauto_ignores_field_order_but_not_names_or_values() {
    let s = start_server();
    let mut r = s.raw();
    let a = xadd(
        &mut r,
        &[
            b"s",
            b"IDMPAUTO",
            b"p",
            b"*",
            b"f1",
            b"a",
            b"f2",
            b"b",
            b"f3",
            b"c",
        ],
    );
    let b = xadd(
        &mut r,
        &[
            b"s",
            b"IDMPAUTO",
            b"p",
            b"*",
            b"f2",
            b"b",
            b"f3",
            b"c",
            b"f1",
            b"a",
        ],
    );
    assert_eq!(a, b);
    let moved = xadd(
        &mut r,
        &[
            b"s",
            b"IDMPAUTO",
            b"p",
            b"*",
            b"f1",
            b"b",
            b"f2",
            b"a",
            b"f3",
            b"c",
        ],
    );
    assert_ne!(moved, a, "values swapped between fields");
    let renamed = xadd(
        &mut r,
        &[
            b"s",
            b"IDMPAUTO",
            b"p",
            b"*",
            b"g1",
            b"a",
            b"f2",
            b"b",
            b"f3",
            b"c",
        ],
    );
    assert_ne!(renamed, a);
    let binary = xadd(&mut r, &[b"s", b"IDMPAUTO", b"p", b"*", b"f", b"\x00\xff"]);
    assert_eq!(
        xadd(&mut r, &[b"s", b"IDMPAUTO", b"p", b"*", b"f", b"\x00\xff"]),
        binary
    );
    check(&mut r, &[(&["XLEN", "s"], int(4))]);
    assert_eq!(counters(&mut r, "s"), [1, 4, 4, 2]);
}

#[test]
fn maxsize_evicts_per_producer_and_counters_are_lifetime() {
    let s = start_server();
    let mut r = s.raw();
    xadd(&mut r, &[b"s", b"IDMP", b"p1", b"init", b"*", b"f", b"v"]);
    check(
        &mut r,
        &[(
            &["XCFGSET", "s", "IDMP-MAXSIZE", "3", "IDMP-DURATION", "60"],
            OK.to_vec(),
        )],
    );
    // The changed settings cleared the producers, not the counters.
    assert_eq!(counters(&mut r, "s"), [0, 0, 1, 0]);
    let ids: Vec<String> = (1..=4)
        .map(|i| {
            let iid = format!("req-{i}");
            xadd(
                &mut r,
                &[b"s", b"IDMP", b"p1", iid.as_bytes(), b"*", b"f", b"v"],
            )
        })
        .collect();
    xadd(&mut r, &[b"s", b"IDMP", b"p2", b"req-1", b"*", b"f", b"v"]);
    // req-1 was evicted by req-4; req-2..4 are still duplicates.
    assert_ne!(
        xadd(&mut r, &[b"s", b"IDMP", b"p1", b"req-1", b"*", b"f", b"v"]),
        ids[0]
    );
    assert_eq!(
        xadd(&mut r, &[b"s", b"IDMP", b"p1", b"req-4", b"*", b"f", b"v"]),
        ids[3]
    );
    // p1 holds 3 (req-3, req-4, new req-1), p2 holds 1.
    assert_eq!(counters(&mut r, "s"), [2, 4, 7, 1]);
    check(
        &mut r,
        &[
            (&["XLEN", "s"], int(7)),
            // Same values: nothing cleared.
            (
                &["XCFGSET", "s", "IDMP-DURATION", "60", "IDMP-MAXSIZE", "3"],
                OK.to_vec(),
            ),
        ],
    );
    assert_eq!(counters(&mut r, "s"), [2, 4, 7, 1]);
    assert_eq!(info_field(&mut r, "s", "idmp-duration"), Some(60));
    assert_eq!(info_field(&mut r, "s", "idmp-maxsize"), Some(3));
}

#[test]
fn an_expired_iid_is_no_longer_a_duplicate_and_the_timer_drops_it() {
    let s = start_server();
    let mut r = s.raw();
    xadd(&mut r, &[b"s", b"*", b"f", b"v"]);
    check(
        &mut r,
        &[(&["XCFGSET", "s", "IDMP-DURATION", "1"], OK.to_vec())],
    );
    let a = xadd(&mut r, &[b"s", b"IDMP", b"p", b"i", b"*", b"f", b"v"]);
    xadd(&mut r, &[b"s", b"IDMP", b"q", b"j", b"*", b"f", b"v"]);
    assert_eq!(
        xadd(&mut r, &[b"s", b"IDMP", b"p", b"i", b"*", b"f", b"v"]),
        a
    );
    // The core's timer drops both iids and both producers once their entry time is a
    // duration old; wait for it (bounded).
    let deadline = Instant::now() + Duration::from_secs(20);
    while counters(&mut r, "s")[..2] != [0, 0] {
        assert!(
            Instant::now() < deadline,
            "iids never expired: {:?}",
            counters(&mut r, "s")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let b = xadd(&mut r, &[b"s", b"IDMP", b"p", b"i", b"*", b"f", b"v"]);
    assert_ne!(b, a);
    assert_eq!(counters(&mut r, "s"), [1, 1, 3, 1]);
}

#[test]
fn xcfgset_checks_the_key_first_then_its_options() {
    let s = start_server();
    let mut r = s.raw();
    let not_int = "ERR value is not an integer or out of range";
    check(
        &mut r,
        &[
            (
                &["XCFGSET", "s", "IDMP-DURATION", "5"],
                err("ERR no such key"),
            ),
            (&["XCFGSET", "s"], err("ERR no such key")),
            (
                &["XCFGSET"],
                err("ERR wrong number of arguments for 'xcfgset' command"),
            ),
        ],
    );
    xadd(&mut r, &[b"s", b"*", b"f", b"v"]);
    check(
        &mut r,
        &[
            (
                &["XCFGSET", "s"],
                err("ERR At least one parameter must be specified"),
            ),
            (&["XCFGSET", "s", "IDMP-DURATION"], err("ERR syntax error")),
            (&["XCFGSET", "s", "INVALID"], err("ERR syntax error")),
            (&["XCFGSET", "s", "IDMP-DURATION", "A"], err(not_int)),
            (&["XCFGSET", "s", "IDMP-DURATION", "3.14"], err(not_int)),
            (&["XCFGSET", "s", "IDMP-MAXSIZE", "000000000"], err(not_int)),
            (
                &[
                    "XCFGSET",
                    "s",
                    "IDMP-DURATION",
                    "IDMP-DURATION",
                    "IDMP-DURATION",
                ],
                err(not_int),
            ),
            (
                &["XCFGSET", "s", "IDMP-DURATION", "INVALID", "IDMP-MAXSIZE"],
                err(not_int),
            ),
            (
                &["XCFGSET", "s", "IDMP-DURATION", "0"],
                err("ERR IDMP-DURATION must be between 1 and 86400 seconds"),
            ),
            (
                &["XCFGSET", "s", "IDMP-DURATION", "86401"],
                err("ERR IDMP-DURATION must be between 1 and 86400 seconds"),
            ),
            (
                &["XCFGSET", "s", "IDMP-MAXSIZE", "10001"],
                err("ERR IDMP-MAXSIZE must be between 1 and 10000 entries"),
            ),
            (
                &["XCFGSET", "s", "IDMP-MAXSIZE", "-50"],
                err("ERR IDMP-MAXSIZE must be between 1 and 10000 entries"),
            ),
            (
                &["XCFGSET", "s", "IDMP-DURATION", "5", "IDMP-DURATION", "6"],
                err("ERR IDMP-DURATION specified multiple times"),
            ),
            (
                &[
                    "XCFGSET",
                    "s",
                    "IDMP-DURATION",
                    "86400",
                    "IDMP-MAXSIZE",
                    "10000",
                ],
                OK.to_vec(),
            ),
        ],
    );
    assert_eq!(info_field(&mut r, "s", "idmp-duration"), Some(86400));
    assert_eq!(info_field(&mut r, "s", "idmp-maxsize"), Some(10000));
}

#[test]
fn xidmprecord_records_a_mapping_for_an_existing_entry() {
    let s = start_server();
    let mut r = s.raw();
    check(
        &mut r,
        &[
            (
                &["XIDMPRECORD", "s", "p", "i", "1-1"],
                err("ERR no such key"),
            ),
            (
                &["XIDMPRECORD", "s", "", "i", "1-1"],
                err("ERR producer ID must be non-empty"),
            ),
            (
                &["XIDMPRECORD", "s", "p", "", "1-1"],
                err("ERR idempotent ID must be non-empty"),
            ),
            (&["XIDMPRECORD", "s", "p", "i", "x"], err(INVALID_ID)),
            (
                &["XIDMPRECORD", "s", "p", "i"],
                err("ERR wrong number of arguments for 'xidmprecord' command"),
            ),
        ],
    );
    // Entries of now: an iid expires by its entry's time, so 1-1 would be long gone.
    let a = xadd(&mut r, &[b"s", b"*", b"f", b"v"]);
    let b = xadd(&mut r, &[b"s", b"*", b"f", b"v"]);
    check(
        &mut r,
        &[
            (
                &["XIDMPRECORD", "s", "p", "i", "1-1"],
                err("ERR No such message in stream"),
            ),
            (&["XIDMPRECORD", "s", "p", "i", &a], OK.to_vec()),
            (&["XIDMPRECORD", "s", "p", "i", &a], OK.to_vec()),
            (
                &["XIDMPRECORD", "s", "p", "i", &b],
                err("ERR IID already exists for this producer with a different stream ID"),
            ),
        ],
    );
    // XADD now sees the recorded iid as a duplicate.
    assert_eq!(
        xadd(&mut r, &[b"s", b"IDMP", b"p", b"i", b"*", b"f", b"v"]),
        a
    );
    // Not counted as an add; the mapping is tracked.
    assert_eq!(counters(&mut r, "s"), [1, 1, 0, 1]);
}

#[test]
fn a_retrying_producer_leaves_each_message_exactly_once_in_order() {
    const MESSAGES: usize = 10_000;
    let s = start_server();
    let mut r = s.raw();
    // A window of 10,000 iids so that no retry outlives its iid.
    xadd(&mut r, &[b"s", b"*", b"init", b"1"]);
    check(
        &mut r,
        &[(&["XCFGSET", "s", "IDMP-MAXSIZE", "10000"], OK.to_vec())],
    );
    let mut rng = Rng(0x5eed_1dea);
    let mut sent = 0;
    let mut first_ids: Vec<String> = Vec::with_capacity(MESSAGES);
    for batch in (0..MESSAGES).collect::<Vec<_>>().chunks(500) {
        let mut expected = Vec::new();
        let mut wire = Vec::new();
        for &m in batch {
            let iid = format!("msg-{m}");
            let seq = m.to_string();
            let times = 1 + (rng.next() % 3) as usize;
            for _ in 0..times {
                wire.extend(common::encode_cmd(&[
                    b"XADD",
                    b"s",
                    b"IDMP",
                    b"producer-1",
                    iid.as_bytes(),
                    b"*",
                    b"seq",
                    seq.as_bytes(),
                ]));
                expected.push(m);
                sent += 1;
            }
        }
        r.send(&wire);
        let mut seen_for: Option<(usize, String)> = None;
        for m in expected {
            let id = id_of(&r.read_reply());
            match &seen_for {
                Some((prev, prev_id)) if *prev == m => assert_eq!(&id, prev_id, "msg {m}"),
                _ => {
                    first_ids.push(id.clone());
                    seen_for = Some((m, id));
                }
            }
        }
    }
    assert!(sent > MESSAGES + MESSAGES / 2, "retries were sent: {sent}");
    check(&mut r, &[(&["XLEN", "s"], int(MESSAGES as i64 + 1))]);
    // In order: entry k (after the first) holds seq k-1 and the ID its first send got.
    let range = String::from_utf8_lossy(&r.cmd_str(&["XRANGE", "s", "-", "+"])).into_owned();
    let seqs: Vec<&str> = range
        .split("\r\n")
        .collect::<Vec<_>>()
        .windows(3)
        .filter(|w| w[0] == "seq")
        .map(|w| w[2])
        .collect();
    assert_eq!(seqs.len(), MESSAGES);
    for (k, s) in seqs.iter().enumerate() {
        assert_eq!(*s, k.to_string());
    }
    for id in &first_ids {
        assert!(range.contains(&format!("\r\n{id}\r\n")), "{id} missing");
    }
    assert_eq!(
        counters(&mut r, "s"),
        [
            1,
            MESSAGES as i64,
            MESSAGES as i64,
            (sent - MESSAGES) as i64
        ]
    );
}

#[test]
fn compat_version_hides_the_newer_surface() {
    let s = start_server_with(&["--compat-version", "7.4"]);
    let mut r = s.raw();
    xadd(&mut r, &[b"s", b"1-1", b"f", b"v"]);
    check(
        &mut r,
        &[
            (
                &["XADD", "s", "IDMP", "p", "i", "*", "f", "v"],
                err(INVALID_ID),
            ),
            (
                &["XCFGSET", "s", "IDMP-DURATION", "5"],
                err(
                    "ERR unknown command 'XCFGSET', with args beginning with: 's' 'IDMP-DURATION' '5' ",
                ),
            ),
            (
                &["XREAD", "MAXCOUNT", "1", "STREAMS", "s", "0"],
                err("ERR syntax error"),
            ),
            (
                &["CONFIG", "GET", "compat-version"],
                common::reply::arr(&[bulk("compat-version"), bulk("7.4")]),
            ),
        ],
    );
    // The 7.x XINFO STREAM shape: 10 fields, no IDMP names.
    let info = r.cmd_str(&["XINFO", "STREAM", "s"]);
    assert!(info.starts_with(b"*20\r\n"), "{}", common::escape(&info));
    assert!(info_field(&mut r, "s", "idmp-duration").is_none());
    let full = r.cmd_str(&["XINFO", "STREAM", "s", "FULL"]);
    assert!(full.starts_with(b"*18\r\n"), "{}", common::escape(&full));
    // Back to the newest: everything is there again.
    check(
        &mut r,
        &[(&["CONFIG", "SET", "compat-version", "8.10"], OK.to_vec())],
    );
    assert!(r.cmd_str(&["XINFO", "STREAM", "s"]).starts_with(b"*32\r\n"));
    assert_eq!(info_field(&mut r, "s", "idmp-duration"), Some(100));
    assert!(r.cmd_str(&["XCFGSET", "s", "IDMP-DURATION", "5"]) == OK);
    check(
        &mut r,
        &[(
            &["CONFIG", "SET", "compat-version", "9.0"],
            err(
                "ERR CONFIG SET failed (possibly related to argument 'compat-version') - argument(s) must be one of the following: 7.4, 8.0, 8.2, 8.4, 8.6, 8.8, 8.10",
            ),
        )],
    );
}

#[test]
fn compat_version_8_6_keeps_idmp_but_hides_nacked_count_and_xnack() {
    let s = start_server_with(&["--compat-version", "8.6"]);
    let mut r = s.raw();
    xadd(&mut r, &[b"s", b"1-1", b"f", b"v"]);
    check(
        &mut r,
        &[(&["XGROUP", "CREATE", "s", "g", "0"], OK.to_vec())],
    );
    let full = String::from_utf8_lossy(&r.cmd_str(&["XINFO", "STREAM", "s", "FULL"])).into_owned();
    assert!(full.starts_with("*30\r\n"), "{full:?}");
    assert!(!full.contains("nacked-count"), "{full:?}");
    assert!(full.contains("iids-duplicates"), "{full:?}");
    let nack = String::from_utf8_lossy(&r.cmd_str(&["XNACK", "s", "g", "FAIL", "IDS", "1", "1-1"]))
        .into_owned();
    assert!(nack.starts_with("-ERR unknown command 'XNACK'"), "{nack:?}");
}
