//! Stream lifecycle beyond Redis against the real binary (docs/beyond-redis.md): retention
//! by age and size (`XCFGSET key MAXAGE | MAXBYTES | RETENTION-REFS`), dead-letter streams
//! (`XGROUP SETDLQ`, and the deliveries and `XNACK ... FATAL` that move entries there) and
//! tombstone reclamation (`stream-node-reclaim-ratio`).
//!
//! - Every new error string, as exact bytes; replies keep Redis's shape while the
//!   settings are off, and show the new fields only once set.
//! - MAXAGE trims on XADD and, for a stream nobody writes to, in the background; MAXBYTES
//!   keeps a stream under its cap and its newest entry; ACKED keeps what a group holds.
//! - Each delivering command moves an entry to the dead-letter stream once it has been
//!   delivered MAXDELIVERIES times, with the documented fields, and wakes its readers.
//! - XDEL of 90% of 20,000 entries gives three quarters of the memory back, changing
//!   nothing else a client can see.
//! - All of it survives a restart from the log and one after a rewrite, and the log holds
//!   the retention trims as exact `XTRIM ... MINID =` records.

mod common;

use common::reply::{arr, bulk, entry, err, int};
use common::{Raw, check, start_server, start_server_with, wait_blocked};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const OK: &[u8] = b"+OK\r\n";

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// An integer reply's value; panics on anything else.
fn int_of(reply: &[u8]) -> i64 {
    let text = String::from_utf8_lossy(reply);
    text.strip_prefix(':')
        .and_then(|t| t.trim_end().parse().ok())
        .unwrap_or_else(|| panic!("not an integer reply: {text:?}"))
}

/// The IDs in an XRANGE-shaped reply (RESP2), in order.
fn ids_of(reply: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(reply);
    let lines: Vec<&str> = text.split("\r\n").collect();
    let mut out = Vec::new();
    for w in lines.windows(3) {
        // Each entry is `*2 $<n> <id> *<m>`.
        if w[0] == "*2" && w[1].starts_with('$') && w[2].contains('-') {
            out.push(w[2].to_string());
        }
    }
    out
}

/// Whether a RESP2 XINFO reply holds the field `name`.
fn has_field(reply: &[u8], name: &str) -> bool {
    let needle = format!("${}\r\n{name}\r\n", name.len());
    String::from_utf8_lossy(reply).contains(&needle)
}

/// The integer after field `name` in a RESP2 XINFO reply.
fn field(reply: &[u8], name: &str) -> Option<i64> {
    let text = String::from_utf8_lossy(reply).into_owned();
    let needle = format!("${}\r\n{name}\r\n:", name.len());
    let at = text.find(&needle)? + needle.len();
    text[at..].split("\r\n").next().and_then(|d| d.parse().ok())
}

/// The number of top-level fields of a RESP2 XINFO STREAM reply.
fn field_count(reply: &[u8]) -> usize {
    let text = String::from_utf8_lossy(reply);
    let head = text.split("\r\n").next().unwrap_or_default();
    head.trim_start_matches('*').parse::<usize>().unwrap_or(0) / 2
}

/// Sends every command of `cmds` in one pipeline and reads all replies.
fn pipeline(r: &mut Raw, cmds: &[Vec<String>]) -> Vec<Vec<u8>> {
    let mut buf = Vec::new();
    for c in cmds {
        let args: Vec<&[u8]> = c.iter().map(|a| a.as_bytes()).collect();
        buf.extend_from_slice(&common::encode_cmd(&args));
    }
    r.send(&buf);
    r.read_replies(cmds.len())
}

fn words(s: &str) -> Vec<String> {
    s.split(' ').map(str::to_string).collect()
}

/// Polls `f` until it is true or `within` has passed.
fn eventually(within: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if f() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn xcfgset_retention_errors_and_the_xinfo_fields() {
    let s = start_server();
    let mut r = s.raw();
    check(
        &mut r,
        &[
            (
                &["XCFGSET", "nokey", "MAXAGE", "10"],
                err("ERR no such key"),
            ),
            (&["XADD", "s", "1-1", "f", "v"], bulk("1-1")),
            (
                &["XCFGSET", "s", "MAXAGE", "-1"],
                err("ERR MAXAGE must be >= 0"),
            ),
            (
                &["XCFGSET", "s", "MAXBYTES", "-1"],
                err("ERR MAXBYTES must be >= 0"),
            ),
            (
                &["XCFGSET", "s", "MAXAGE", "x"],
                err("ERR value is not an integer or out of range"),
            ),
            (
                &["XCFGSET", "s", "MAXAGE", "1", "MAXAGE", "2"],
                err("ERR MAXAGE specified multiple times"),
            ),
            (
                &["XCFGSET", "s", "RETENTION-REFS", "SOME"],
                err("ERR RETENTION-REFS must be KEEPREF, DELREF, or ACKED"),
            ),
            (&["XCFGSET", "s", "MAXAGE"], err("ERR syntax error")),
        ],
    );
    // Off: Redis's 16 fields. Set: the new ones appear, and go with MAXAGE 0 again.
    let plain = r.cmd_str(&["XINFO", "STREAM", "s"]);
    assert_eq!(field_count(&plain), 16);
    assert!(!has_field(&plain, "max-age"));
    check(
        &mut r,
        &[(
            &[
                "XCFGSET",
                "s",
                "MAXAGE",
                "60000",
                "MAXBYTES",
                "100000",
                "RETENTION-REFS",
                "ACKED",
            ],
            OK.to_vec(),
        )],
    );
    let set = r.cmd_str(&["XINFO", "STREAM", "s"]);
    assert_eq!(field_count(&set), 19);
    assert_eq!(field(&set, "max-age"), Some(60000));
    assert_eq!(field(&set, "max-bytes"), Some(100000));
    assert!(String::from_utf8_lossy(&set).contains("$14\r\nretention-refs\r\n$5\r\nacked\r\n"));
    let full = r.cmd_str(&["XINFO", "STREAM", "s", "FULL"]);
    assert_eq!(field_count(&full), 18);
    // The IDMP settings are untouched (no IDMP state made), and vice versa.
    assert_eq!(field(&set, "pids-tracked"), Some(0));
    check(
        &mut r,
        &[
            (&["XCFGSET", "s", "IDMP-DURATION", "5"], OK.to_vec()),
            (
                &[
                    "XCFGSET",
                    "s",
                    "MAXAGE",
                    "0",
                    "MAXBYTES",
                    "0",
                    "RETENTION-REFS",
                    "KEEPREF",
                ],
                OK.to_vec(),
            ),
        ],
    );
    let off = r.cmd_str(&["XINFO", "STREAM", "s"]);
    assert_eq!(field_count(&off), 16);
    assert_eq!(field(&off, "idmp-duration"), Some(5));
}

#[test]
fn maxage_trims_on_xadd_and_in_the_background() {
    let s = start_server();
    let mut r = s.raw();
    let t = now_ms();
    let old: Vec<Vec<String>> = (0..100)
        .map(|i| words(&format!("XADD aged {}-0 n {i}", t - 100_000 + i * 1000)))
        .collect();
    pipeline(&mut r, &old);
    check(
        &mut r,
        &[(&["XCFGSET", "aged", "MAXAGE", "30000"], OK.to_vec())],
    );
    r.cmd_str(&["XADD", "aged", "*", "n", "new"]);
    let first = ids_of(&r.cmd_str(&["XRANGE", "aged", "-", "+", "COUNT", "1"]));
    let first_ms: u64 = first[0].split('-').next().unwrap().parse().unwrap();
    assert!(first_ms >= now_ms() - 31_000, "{first:?}");
    // About 30 entries are younger than 30 s, plus the new one.
    let len = int_of(&r.cmd_str(&["XLEN", "aged"]));
    assert!((29..=32).contains(&len), "{len}");
    // A stream nobody writes to shrinks by itself.
    let t = now_ms();
    let quiet: Vec<Vec<String>> = (0..10)
        .map(|i| words(&format!("XADD quiet {}-0 n {i}", t - 2000 + i)))
        .collect();
    pipeline(&mut r, &quiet);
    r.cmd_str(&["XADD", "quiet", "*", "n", "fresh"]);
    check(
        &mut r,
        &[(&["XCFGSET", "quiet", "MAXAGE", "2500"], OK.to_vec())],
    );
    assert_eq!(int_of(&r.cmd_str(&["XLEN", "quiet"])), 11);
    assert!(
        eventually(Duration::from_secs(3), || int_of(
            &r.cmd_str(&["XLEN", "quiet"])
        ) == 1),
        "the background sweep did not trim"
    );
    // The trims count like XTRIM's: max-deleted-entry-id stays, first-entry moves.
    let info = r.cmd_str(&["XINFO", "STREAM", "quiet"]);
    assert!(
        String::from_utf8_lossy(&info).contains("$20\r\nmax-deleted-entry-id\r\n$3\r\n0-0\r\n")
    );
}

#[test]
fn maxbytes_keeps_a_stream_under_its_cap_and_its_newest_entry() {
    let s = start_server();
    let mut r = s.raw();
    r.cmd_str(&["XADD", "capped", "*", "f", "v"]);
    check(
        &mut r,
        &[(&["XCFGSET", "capped", "MAXBYTES", "65536"], OK.to_vec())],
    );
    let payload = "x".repeat(200);
    let adds: Vec<Vec<String>> = (1..=2000)
        .map(|i| {
            vec![
                "XADD".into(),
                "capped".into(),
                "*".into(),
                "n".into(),
                i.to_string(),
                "p".into(),
                payload.clone(),
            ]
        })
        .collect();
    pipeline(&mut r, &adds);
    let usage = int_of(&r.cmd_str(&["MEMORY", "USAGE", "capped"]));
    assert!(usage <= 65536, "{usage}");
    assert!(
        usage > 65536 / 2,
        "whole nodes only, not more than needed: {usage}"
    );
    let last = r.cmd_str(&["XREVRANGE", "capped", "+", "-", "COUNT", "1"]);
    assert!(String::from_utf8_lossy(&last).contains("$4\r\n2000\r\n"));
    // A cap below one node keeps the last node.
    check(
        &mut r,
        &[(&["XCFGSET", "capped", "MAXBYTES", "1"], OK.to_vec())],
    );
    r.cmd_str(&["XADD", "capped", "*", "n", "2001", "p", "y"]);
    let info = r.cmd_str(&["XINFO", "STREAM", "capped"]);
    assert_eq!(field(&info, "radix-tree-keys"), Some(1));
}

#[test]
fn acked_retention_keeps_what_a_group_still_holds() {
    let s = start_server();
    let mut r = s.raw();
    let t = now_ms() - 60_000;
    let adds: Vec<Vec<String>> = (1..=10)
        .map(|i| words(&format!("XADD j {}-0 n {i}", t + i)))
        .collect();
    pipeline(&mut r, &adds);
    check(
        &mut r,
        &[
            (&["XGROUP", "CREATE", "j", "g", "0"], OK.to_vec()),
            (
                &["XCFGSET", "j", "MAXAGE", "1000", "RETENTION-REFS", "ACKED"],
                OK.to_vec(),
            ),
        ],
    );
    // Read 4 (pending), the group has not read 5..10: nothing may go yet.
    r.cmd_str(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "c",
        "COUNT",
        "4",
        "STREAMS",
        "j",
        ">",
    ]);
    r.cmd_str(&[
        "XACK",
        "j",
        "g",
        &format!("{}-0", t + 1),
        &format!("{}-0", t + 2),
    ]);
    assert!(eventually(Duration::from_secs(2), || int_of(
        &r.cmd_str(&["XLEN", "j"])
    ) == 8));
    let left = ids_of(&r.cmd_str(&["XRANGE", "j", "-", "+", "COUNT", "2"]));
    assert_eq!(left, vec![format!("{}-0", t + 3), format!("{}-0", t + 4)]);
}

#[test]
fn setdlq_errors_and_shape() {
    let s = start_server();
    let mut r = s.raw();
    let syntax =
        "ERR unknown subcommand or wrong number of arguments for 'SETDLQ'. Try XGROUP HELP.";
    check(
        &mut r,
        &[
            (
                &["XGROUP", "SETDLQ", "nokey", "g", "NONE"],
                err(
                    "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.",
                ),
            ),
            (&["XADD", "jobs", "1-0", "task", "a"], bulk("1-0")),
            (
                &["XGROUP", "SETDLQ", "jobs", "nogroup", "NONE"],
                err("NOGROUP No such consumer group 'nogroup' for key name 'jobs'"),
            ),
            (&["XGROUP", "CREATE", "jobs", "w", "0"], OK.to_vec()),
            (&["XGROUP", "SETDLQ", "jobs", "w", "dead"], err(syntax)),
            (
                &["XGROUP", "SETDLQ", "jobs", "w", "dead", "MAXLEN", "2"],
                err(syntax),
            ),
            (
                &[
                    "XGROUP",
                    "SETDLQ",
                    "jobs",
                    "w",
                    "dead",
                    "MAXDELIVERIES",
                    "0",
                ],
                err("ERR MAXDELIVERIES must be a positive integer"),
            ),
            (
                &[
                    "XGROUP",
                    "SETDLQ",
                    "jobs",
                    "w",
                    "dead",
                    "MAXDELIVERIES",
                    "x",
                ],
                err("ERR MAXDELIVERIES must be a positive integer"),
            ),
            (
                &[
                    "XGROUP",
                    "SETDLQ",
                    "jobs",
                    "w",
                    "jobs",
                    "MAXDELIVERIES",
                    "2",
                ],
                err("ERR the dead-letter stream must be another key than the group's stream"),
            ),
            (
                &[
                    "COMMAND",
                    "GETKEYS",
                    "XGROUP",
                    "SETDLQ",
                    "jobs",
                    "w",
                    "dead",
                    "MAXDELIVERIES",
                    "2",
                ],
                arr(&[bulk("jobs"), bulk("dead")]),
            ),
        ],
    );
    let before = r.cmd_str(&["XINFO", "GROUPS", "jobs"]);
    assert!(before.starts_with(b"*1\r\n*12\r\n"));
    check(
        &mut r,
        &[(
            &[
                "XGROUP",
                "SETDLQ",
                "jobs",
                "w",
                "dead",
                "MAXDELIVERIES",
                "3",
            ],
            OK.to_vec(),
        )],
    );
    let set = r.cmd_str(&["XINFO", "GROUPS", "jobs"]);
    assert!(
        set.starts_with(b"*1\r\n*16\r\n"),
        "{:?}",
        String::from_utf8_lossy(&set)
    );
    assert!(
        String::from_utf8_lossy(&set)
            .ends_with("$7\r\ndlq-key\r\n$4\r\ndead\r\n$14\r\nmax-deliveries\r\n:3\r\n")
    );
    check(
        &mut r,
        &[(&["XGROUP", "SETDLQ", "jobs", "w", "none"], OK.to_vec())],
    );
    assert_eq!(r.cmd_str(&["XINFO", "GROUPS", "jobs"]), before);
}

/// `jobs` with entries 1-0 (task a) and 2-0 (task b), group `w` from 0, dead-letter
/// stream `dead` after 2 deliveries, and both entries delivered once to c1.
fn dlq_setup(r: &mut Raw) {
    check(
        r,
        &[
            (&["XADD", "jobs", "1-0", "task", "a"], bulk("1-0")),
            (&["XADD", "jobs", "2-0", "task", "b"], bulk("2-0")),
            (&["XGROUP", "CREATE", "jobs", "w", "0"], OK.to_vec()),
            (
                &[
                    "XGROUP",
                    "SETDLQ",
                    "jobs",
                    "w",
                    "dead",
                    "MAXDELIVERIES",
                    "2",
                ],
                OK.to_vec(),
            ),
        ],
    );
    r.cmd_str(&["XREADGROUP", "GROUP", "w", "c1", "STREAMS", "jobs", ">"]);
}

/// The dead-letter entries' fields, one string per entry.
fn dead_letters(r: &mut Raw) -> Vec<String> {
    let reply = r.cmd_str(&["XRANGE", "dead", "-", "+"]);
    let text = String::from_utf8_lossy(&reply).into_owned();
    // After the top-level array's header, each entry opens with `*2`.
    let body = text.split_once("\r\n").map_or("", |(_, b)| b);
    let mut out = Vec::new();
    for e in body.split("*2\r\n").filter(|e| !e.is_empty()) {
        let vals: Vec<&str> = e
            .split("\r\n")
            .skip(2)
            .filter(|l| !l.starts_with('$') && !l.starts_with('*') && !l.is_empty())
            .collect();
        out.push(vals.join(" "));
    }
    out
}

#[test]
fn xclaim_moves_an_entry_delivered_too_often() {
    let s = start_server();
    let mut r = s.raw();
    dlq_setup(&mut r);
    check(
        &mut r,
        &[
            (
                &["XCLAIM", "jobs", "w", "c2", "0", "1-0"],
                arr(&[entry("1-0", &["task", "a"])]),
            ),
            // A third delivery would exceed 2: moved instead, not in the reply.
            (&["XCLAIM", "jobs", "w", "c3", "0", "1-0"], arr(&[])),
            // JUSTID does not deliver: nothing moves.
            (
                &["XCLAIM", "jobs", "w", "c3", "0", "2-0", "JUSTID"],
                arr(&[bulk("2-0")]),
            ),
            (&["XPENDING", "jobs", "w", "-", "+", "10", "c2"], arr(&[])),
        ],
    );
    assert_eq!(
        dead_letters(&mut r),
        vec!["dlq-stream jobs dlq-group w dlq-id 1-0 dlq-deliveries 2 dlq-consumer c2 task a"]
    );
    let pending = r.cmd_str(&["XPENDING", "jobs", "w"]);
    assert!(
        pending.starts_with(b"*4\r\n:1\r\n$3\r\n2-0\r\n"),
        "{:?}",
        String::from_utf8_lossy(&pending)
    );
}

#[test]
fn history_reads_xautoclaim_and_claim_move_too() {
    let s = start_server();
    let mut r = s.raw();
    dlq_setup(&mut r);
    // History read: second delivery of both is fine, the third moves them.
    let again = r.cmd_str(&["XREADGROUP", "GROUP", "w", "c1", "STREAMS", "jobs", "0"]);
    assert_eq!(ids_of(&again), vec!["1-0", "2-0"]);
    let third = r.cmd_str(&["XREADGROUP", "GROUP", "w", "c1", "STREAMS", "jobs", "0"]);
    assert_eq!(ids_of(&third), Vec::<String>::new());
    assert_eq!(dead_letters(&mut r).len(), 2);
    // XAUTOCLAIM and XREADGROUP ... CLAIM on a fresh pair.
    check(
        &mut r,
        &[
            (&["XADD", "jobs", "3-0", "task", "c"], bulk("3-0")),
            (&["XADD", "jobs", "4-0", "task", "d"], bulk("4-0")),
        ],
    );
    r.cmd_str(&["XREADGROUP", "GROUP", "w", "c1", "STREAMS", "jobs", ">"]);
    let one = r.cmd_str(&["XAUTOCLAIM", "jobs", "w", "c2", "0", "0"]);
    assert_eq!(ids_of(&one), vec!["3-0", "4-0"]);
    let two = r.cmd_str(&["XAUTOCLAIM", "jobs", "w", "c2", "0", "0"]);
    assert!(
        two.starts_with(b"*3\r\n$3\r\n0-0\r\n*0\r\n*0\r\n"),
        "{:?}",
        String::from_utf8_lossy(&two)
    );
    assert_eq!(dead_letters(&mut r).len(), 4);
    check(
        &mut r,
        &[(&["XADD", "jobs", "5-0", "task", "e"], bulk("5-0"))],
    );
    r.cmd_str(&["XREADGROUP", "GROUP", "w", "c1", "STREAMS", "jobs", ">"]);
    r.cmd_str(&[
        "XREADGROUP",
        "GROUP",
        "w",
        "c1",
        "CLAIM",
        "0",
        "STREAMS",
        "jobs",
        ">",
    ]);
    let moved = r.cmd_str(&[
        "XREADGROUP",
        "GROUP",
        "w",
        "c1",
        "CLAIM",
        "0",
        "STREAMS",
        "jobs",
        ">",
    ]);
    assert_eq!(moved, b"*-1\r\n".to_vec());
    let all = dead_letters(&mut r);
    assert_eq!(all.len(), 5);
    assert_eq!(
        all[4],
        "dlq-stream jobs dlq-group w dlq-id 5-0 dlq-deliveries 2 dlq-consumer c1 task e"
    );
    assert_eq!(
        int_of(&r.cmd_str(&["XLEN", "jobs"])),
        5,
        "the entries stay in their stream"
    );
    let pending = r.cmd_str(&["XPENDING", "jobs", "w"]);
    assert!(pending.starts_with(b"*4\r\n:0\r\n"));
}

#[test]
fn xnack_fatal_moves_at_once_and_deleted_entries_are_only_acked() {
    let s = start_server();
    let mut r = s.raw();
    dlq_setup(&mut r);
    check(
        &mut r,
        &[
            (&["XDEL", "jobs", "2-0"], int(1)),
            (
                &["XNACK", "jobs", "w", "FATAL", "IDS", "2", "1-0", "2-0"],
                int(2),
            ),
            (
                &["XPENDING", "jobs", "w"],
                arr(&[
                    int(0),
                    common::reply::null(false),
                    common::reply::null(false),
                    b"*-1\r\n".to_vec(),
                ]),
            ),
            // FAIL still NACKs as before.
            (&["XADD", "jobs", "3-0", "task", "c"], bulk("3-0")),
        ],
    );
    assert_eq!(
        dead_letters(&mut r),
        vec!["dlq-stream jobs dlq-group w dlq-id 1-0 dlq-deliveries 1 dlq-consumer c1 task a"]
    );
    r.cmd_str(&["XREADGROUP", "GROUP", "w", "c1", "STREAMS", "jobs", ">"]);
    check(
        &mut r,
        &[(&["XNACK", "jobs", "w", "FAIL", "IDS", "1", "3-0"], int(1))],
    );
    assert_eq!(dead_letters(&mut r).len(), 1);
}

#[test]
fn a_move_wakes_readers_blocked_on_the_dead_letter_stream() {
    let s = start_server();
    let mut r = s.raw();
    dlq_setup(&mut r);
    let mut reader = s.raw();
    reader.set_timeout(Duration::from_secs(5));
    reader.send(&common::encode_cmd(&[
        b"XREAD", b"BLOCK", b"5000", b"STREAMS", b"dead", b"$",
    ]));
    wait_blocked(&mut r, 1);
    check(
        &mut r,
        &[(&["XNACK", "jobs", "w", "FATAL", "IDS", "1", "1-0"], int(1))],
    );
    let got = reader.read_reply();
    assert!(
        String::from_utf8_lossy(&got).contains("dlq-id"),
        "{:?}",
        String::from_utf8_lossy(&got)
    );
}

#[test]
fn reclamation_gives_memory_back_and_nothing_else_changes() {
    let s = start_server();
    let mut r = s.raw();
    let adds: Vec<Vec<String>> = (1..=20_000)
        .map(|i: u64| words(&format!("XADD tomb {i}-0 bidder {i} amount {}", i * 7)))
        .collect();
    for chunk in adds.chunks(2000) {
        pipeline(&mut r, chunk);
    }
    let before = int_of(&r.cmd_str(&["MEMORY", "USAGE", "tomb"]));
    let dels: Vec<Vec<String>> = (1..=20_000u64)
        .filter(|i| i % 10 != 0)
        .map(|i| words(&format!("XDEL tomb {i}-0")))
        .collect();
    for chunk in dels.chunks(2000) {
        pipeline(&mut r, chunk);
    }
    let info_before = r.cmd_str(&["XINFO", "STREAM", "tomb"]);
    assert!(
        eventually(Duration::from_secs(3), || int_of(
            &r.cmd_str(&["MEMORY", "USAGE", "tomb"])
        ) * 4
            <= before),
        "memory did not come back: {} of {before}",
        int_of(&r.cmd_str(&["MEMORY", "USAGE", "tomb"]))
    );
    // Same XINFO (node boundaries included), same entries.
    assert_eq!(r.cmd_str(&["XINFO", "STREAM", "tomb"]), info_before);
    assert_eq!(int_of(&r.cmd_str(&["XLEN", "tomb"])), 2000);
    let first = ids_of(&r.cmd_str(&["XRANGE", "tomb", "-", "+", "COUNT", "3"]));
    assert_eq!(first, vec!["10-0", "20-0", "30-0"]);
    // Off: nothing is rewritten.
    check(
        &mut r,
        &[(
            &["CONFIG", "SET", "stream-node-reclaim-ratio", "1"],
            OK.to_vec(),
        )],
    );
    check(
        &mut r,
        &[
            (
                &["CONFIG", "SET", "stream-node-reclaim-ratio", "1.5"],
                err(
                    "ERR CONFIG SET failed (possibly related to argument 'stream-node-reclaim-ratio') - argument must be between 0 and 1 inclusive",
                ),
            ),
            (
                &["CONFIG", "GET", "stream-node-reclaim-ratio"],
                arr(&[bulk("stream-node-reclaim-ratio"), bulk("1")]),
            ),
        ],
    );
}

#[test]
fn settings_moves_and_reclaimed_nodes_survive_restarts_and_a_rewrite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dir_arg = dir.path().display().to_string();
    let args = [
        "--dir",
        &dir_arg,
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
    ];
    let signature = |r: &mut Raw| -> Vec<Vec<u8>> {
        [
            &["XINFO", "STREAM", "aged"][..],
            &["XRANGE", "aged", "-", "+"],
            &["XINFO", "GROUPS", "jobs"],
            &["XRANGE", "dead", "-", "+"],
            &["XPENDING", "jobs", "w"],
            &["XINFO", "STREAM", "tomb", "FULL"],
        ]
        .iter()
        .map(|c| r.cmd_str(c))
        .collect()
    };
    let before = {
        let s = start_server_with(&args);
        let mut r = s.raw();
        let t = now_ms();
        let old: Vec<Vec<String>> = (0..50)
            .map(|i| words(&format!("XADD aged {}-0 n {i}", t - 50_000 + i * 1000)))
            .collect();
        pipeline(&mut r, &old);
        check(
            &mut r,
            &[(&["XCFGSET", "aged", "MAXAGE", "20000"], OK.to_vec())],
        );
        r.cmd_str(&["XADD", "aged", "*", "n", "new"]);
        dlq_setup(&mut r);
        r.cmd_str(&["XNACK", "jobs", "w", "FATAL", "IDS", "1", "1-0"]);
        let adds: Vec<Vec<String>> = (1..=1000)
            .map(|i: u64| words(&format!("XADD tomb {i}-0 f {i}")))
            .collect();
        pipeline(&mut r, &adds);
        let dels: Vec<Vec<String>> = (1..=1000u64)
            .filter(|i| i % 10 != 0)
            .map(|i| words(&format!("XDEL tomb {i}-0")))
            .collect();
        pipeline(&mut r, &dels);
        std::thread::sleep(Duration::from_millis(500));
        let reclaimed = int_of(&r.cmd_str(&["MEMORY", "USAGE", "tomb"]));
        assert!(reclaimed < 4000, "{reclaimed}");
        // The retention trim is in the log as the exact trim it was.
        let log_bytes: Vec<u8> = std::fs::read_dir(dir.path().join("appendonlydir"))
            .expect("log dir")
            .flatten()
            .flat_map(|e| std::fs::read(e.path()).unwrap_or_default())
            .collect();
        let log_text = String::from_utf8_lossy(&log_bytes);
        assert!(log_text.contains("$5\r\nXTRIM\r\n$4\r\naged\r\n$5\r\nMINID\r\n$1\r\n=\r\n"));
        assert!(log_text.contains("$6\r\nSETDLQ\r\n"));
        signature(&mut r)
    };
    // Retention keeps working in the background: compare what does not depend on time.
    let strip_aged = |mut v: Vec<Vec<u8>>| {
        v.drain(..2);
        v
    };
    let after_restart = {
        let s = start_server_with(&args);
        let mut r = s.raw();
        let sig = signature(&mut r);
        assert_eq!(field(&sig[0], "max-age"), Some(20000));
        // Replayed from the log, the nodes are rebuilt with their tombstones and
        // reclaimed again in the background.
        assert!(eventually(Duration::from_secs(3), || {
            int_of(&r.cmd_str(&["MEMORY", "USAGE", "tomb"])) < 4000
        }));
        let _ = r.cmd_str(&["BGREWRITEAOF"]);
        assert!(eventually(Duration::from_secs(10), || {
            !String::from_utf8_lossy(&r.cmd_str(&["INFO", "persistence"]))
                .contains("aof_rewrite_in_progress:1")
        }));
        std::thread::sleep(Duration::from_millis(200));
        sig
    };
    assert_eq!(strip_aged(after_restart), strip_aged(before.clone()));
    let s = start_server_with(&args);
    let mut r = s.raw();
    // The rewrite's snapshot holds the reclaimed nodes themselves.
    assert!(int_of(&r.cmd_str(&["MEMORY", "USAGE", "tomb"])) < 4000);
    let after_rewrite = signature(&mut r);
    assert_eq!(field(&after_rewrite[0], "max-age"), Some(20000));
    assert_eq!(strip_aged(after_rewrite), strip_aged(before));
}
