//! Tiered streams (`stream-tiering`, docs/tiering.md) against the real binary: a server
//! with a 1 MB hot budget and one without get the same commands, and every reply over cold
//! data (ranges both ways with COUNT, XREAD, groups, claims, XINFO, XDEL, trims, DUMP) is
//! the same byte for byte; cold nodes stay cold across a reload and a log rewrite; a trim
//! unlinks whole segments; the settings go through CONFIG.

mod common;

use common::{Raw, Rng, encode_cmd, info_field, start_server_with};
use std::time::{Duration, Instant};

/// Entries loaded into each stream: ~200-byte payloads, so ~20 per node and ~6 MB in all,
/// six times the 1 MB budget.
const ENTRIES: u64 = 30_000;

/// The field of INFO's tiering section, as a number (0 when absent).
fn tier(raw: &mut Raw, field: &str) -> u64 {
    info_field(raw, "tiering", field)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Waits (bounded) until `cond` holds; the mover runs on the server's cron (10 Hz).
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A payload of 200 bytes that depends on `i`.
fn payload(i: u64) -> String {
    let mut s = format!("{i:020}");
    while s.len() < 200 {
        s.push_str(&format!(
            "{:x}",
            i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ s.len() as u64
        ));
    }
    s.truncate(200);
    s
}

/// Appends `ENTRIES` entries `<i+1>-0 n <i> p <payload>` to `key`, pipelined.
fn load(raw: &mut Raw, key: &str) {
    load_range(raw, key, 0..ENTRIES);
}

/// Appends the entries `<i+1>-0 n <i> p <payload>` for `i` in `range` to `key`, pipelined.
fn load_range(raw: &mut Raw, key: &str, range: std::ops::Range<u64>) {
    let mut batch = Vec::new();
    let mut queued = 0;
    for i in range.clone() {
        let id = format!("{}-0", i + 1);
        let n = i.to_string();
        let p = payload(i);
        batch.extend_from_slice(&encode_cmd(&[
            b"XADD",
            key.as_bytes(),
            id.as_bytes(),
            b"n",
            n.as_bytes(),
            b"p",
            p.as_bytes(),
        ]));
        queued += 1;
        if queued == 500 || i + 1 == range.end {
            raw.send(&batch);
            batch.clear();
            for _ in 0..queued {
                let r = raw.read_reply();
                assert!(r.starts_with(b"$"), "XADD: {}", String::from_utf8_lossy(&r));
            }
            queued = 0;
        }
    }
}

/// A reply with what must differ between the two servers normalised: Unix-ms times
/// (13-digit integers; the servers run the commands a moment apart) and XINFO's
/// `radix-tree-nodes` (a cold node counts as one tree node: docs/tiering.md).
fn normalise(reply: &[u8]) -> String {
    let text = String::from_utf8_lossy(reply);
    let mut out = Vec::new();
    let mut after_nodes = false;
    for line in text.split("\r\n") {
        let is_time = line.len() == 14
            && line.starts_with(':')
            && line[1..].bytes().all(|c| c.is_ascii_digit());
        if after_nodes || is_time {
            out.push(":<n>");
        } else {
            out.push(line);
        }
        after_nodes = line == "radix-tree-nodes";
    }
    out.join("\r\n")
}

/// Sends `args` to both servers and asserts the replies are the same (bytes, but for
/// [`normalise`]).
fn same(a: &mut Raw, b: &mut Raw, args: &[&str]) -> Vec<u8> {
    let ra = a.cmd_str(args);
    let rb = b.cmd_str(args);
    assert_eq!(normalise(&ra), normalise(&rb), "{args:?}");
    ra
}

/// A server with tiering on and a 1 MB hot budget, then `extra`.
fn tiered(extra: &[&str]) -> common::Server {
    let mut args = vec![
        "--stream-tiering",
        "yes",
        "--stream-tiering-hot-bytes",
        "1mb",
    ];
    args.extend_from_slice(extra);
    start_server_with(&args)
}

/// A tiered server (1 MB budget) and a plain one, both loaded with `t` and a few keys.
fn pair(extra: &[&str]) -> (common::Server, common::Server) {
    let tiered = tiered(extra);
    let plain = start_server_with(extra);
    for s in [&tiered, &plain] {
        let mut r = s.raw();
        load(&mut r, "t");
        r.cmd_str(&["SET", "other", "v"]);
        r.cmd_str(&["XADD", "small", "1-1", "a", "b"]);
    }
    let mut r = tiered.raw();
    wait_until("the hot part within the budget", || {
        tier(&mut r, "tiering_cold_nodes") > 0
            && tier(&mut r, "tiering_hot_bytes") <= 1024 * 1024 + 64 * 1024
    });
    (tiered, plain)
}

#[test]
fn reads_over_cold_nodes_answer_as_without_tiering() {
    let (tiered, plain) = pair(&[]);
    let (mut a, mut b) = (tiered.raw(), plain.raw());
    assert!(tier(&mut a, "tiering_cold_entries") > ENTRIES / 2);
    for args in [
        &["XLEN", "t"][..],
        &["XRANGE", "t", "-", "+", "COUNT", "10"],
        &["XREVRANGE", "t", "+", "-", "COUNT", "10"],
        &["XRANGE", "t", "(1-0", "40"],
        &["XREVRANGE", "t", "(25000-0", "24000", "COUNT", "300"],
        &["XRANGE", "t", "15000", "15000"],
        &["XREAD", "COUNT", "5", "STREAMS", "t", "small", "100", "0"],
        &["XINFO", "STREAM", "t"],
        &["XINFO", "STREAM", "t", "FULL", "COUNT", "3"],
        &["GET", "other"],
        &["XRANGE", "small", "-", "+"],
    ] {
        same(&mut a, &mut b, args);
    }
    // Random windows, both directions.
    let mut rng = Rng(7);
    for _ in 0..60 {
        let start = 1 + rng.below(ENTRIES as usize) as u64;
        let len = 1 + rng.below(300) as u64;
        let (s, e) = (start.to_string(), (start + len).to_string());
        same(&mut a, &mut b, &["XRANGE", "t", &s, &e]);
        same(&mut a, &mut b, &["XREVRANGE", "t", &e, &s, "COUNT", "7"]);
    }
    assert!(
        tier(&mut a, "tiering_parked_commands") > 0,
        "reads parked for the disk"
    );
    assert!(tier(&mut a, "tiering_reads") > 0);
    // The whole history in one reply: more nodes than a command parks for.
    same(&mut a, &mut b, &["XRANGE", "t", "-", "+"]);
    // DUMP of a tiered stream restores into the plain server as the same stream.
    let dump = a.cmd(&[b"DUMP", b"t"]);
    let body = dump_payload(&dump);
    let r = b.cmd(&[b"RESTORE", b"copy", b"0", &body]);
    assert_eq!(r, b"+OK\r\n");
    let mut b2 = plain.raw();
    let x = b2.cmd_str(&["XRANGE", "copy", "-", "+"]);
    let y = b2.cmd_str(&["XRANGE", "t", "-", "+"]);
    assert_eq!(x, y);
}

#[test]
fn paged_scans_read_the_next_page_ahead_and_keep_few_warm_copies() {
    let (tiered, plain) = pair(&[]);
    let (mut a, mut b) = (tiered.raw(), plain.raw());
    let cold = tier(&mut a, "tiering_cold_entries");
    assert!(cold > ENTRIES / 2, "{cold} cold entries");
    // Page after page, both directions, every page the same as from memory.
    let mut next = "-".to_string();
    let mut pages = 0;
    loop {
        let reply = same(&mut a, &mut b, &["XRANGE", "t", &next, "+", "COUNT", "500"]);
        let ids = ids_of(&reply);
        let Some(last) = ids.last() else { break };
        next = format!("({last}");
        pages += 1;
    }
    assert_eq!(pages, ENTRIES.div_ceil(500));
    let mut back = "+".to_string();
    for _ in 0..10 {
        let reply = same(
            &mut a,
            &mut b,
            &["XREVRANGE", "t", &back, "-", "COUNT", "300"],
        );
        back = format!("({}", ids_of(&reply).last().expect("a page"));
    }
    // A group catching up over the cold history reads ahead too.
    same(&mut a, &mut b, &["XGROUP", "CREATE", "t", "g", "0"]);
    for _ in 0..20 {
        same(
            &mut a,
            &mut b,
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "c",
                "COUNT",
                "200",
                "STREAMS",
                "t",
                ">",
            ],
        );
    }
    let ahead = tier(&mut a, "tiering_readahead_reads");
    let reads = tier(&mut a, "tiering_reads");
    assert!(
        ahead > 0 && ahead <= reads,
        "{ahead} of {reads} reads ahead"
    );
    // Every node came from the pool (parked or read ahead), none on the core thread.
    assert_eq!(tier(&mut a, "tiering_sync_reads"), 0);
    // Warm copies are cooled as the scan moves on: within the limit (1 MB for a 1 MB
    // budget) plus the last read's nodes.
    let warm = tier(&mut a, "tiering_warm_bytes");
    assert!(warm <= 2 * 1024 * 1024, "{warm} warm bytes");
}

#[test]
fn maxbytes_counts_cold_bytes_and_drops_cold_nodes_first() {
    let (tiered, plain) = pair(&[]);
    let (mut a, mut b) = (tiered.raw(), plain.raw());
    let cold = tier(&mut a, "tiering_cold_bytes");
    assert!(cold > 3 * 1024 * 1024, "{cold} cold bytes");
    // 2 MB: more than the stream's memory (the hot part and the stubs), less than its
    // size with the cold bytes.
    let memory = reply_int(&a.cmd_str(&["MEMORY", "USAGE", "t"]));
    assert!(memory < 2 * 1024 * 1024, "{memory} bytes in memory");
    assert_eq!(
        a.cmd_str(&["XCFGSET", "t", "MAXBYTES", "2097152"]),
        b"+OK\r\n"
    );
    let last = (ENTRIES + 1).to_string();
    a.cmd_str(&["XADD", "t", &format!("{last}-0"), "n", &last]);
    b.cmd_str(&["XADD", "t", &format!("{last}-0"), "n", &last]);
    // The trim runs in budgeted steps (the next writes, the background sweep).
    wait_until("the stream within 2 MB with its cold bytes", || {
        let len = reply_int(&a.cmd_str(&["XLEN", "t"]));
        len < ENTRIES / 2
            && tier(&mut a, "tiering_cold_bytes") + tier(&mut a, "tiering_hot_bytes")
                <= 2 * 1024 * 1024
    });
    let len = reply_int(&a.cmd_str(&["XLEN", "t"]));
    // Whole nodes go, no more than needed: about 2 MB of ~215-byte entries stay.
    assert!(len > 5_000, "{len} entries left");
    // What is left is exactly the tail of the same stream.
    let first = a.cmd_str(&["XRANGE", "t", "-", "+", "COUNT", "1"]);
    let first_id = ids_of(&first).pop().expect("an entry");
    b.cmd_str(&["XTRIM", "t", "MINID", "=", &first_id]);
    same(&mut a, &mut b, &["XLEN", "t"]);
    same(&mut a, &mut b, &["XRANGE", "t", "-", "+", "COUNT", "50"]);
    same(&mut a, &mut b, &["XREVRANGE", "t", "+", "-", "COUNT", "50"]);
}

/// The integer of a `:<n>` reply.
fn reply_int(reply: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(reply);
    text.trim()
        .strip_prefix(':')
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not an integer reply: {text}"))
}

/// The entry IDs of an XRANGE/XREVRANGE reply, in order.
fn ids_of(reply: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(reply);
    let lines: Vec<&str> = text.split("\r\n").collect();
    // Each entry is `*2`, `$<n>`, `<id>`, then its fields array.
    lines
        .windows(3)
        .filter(|w| w[0] == "*2" && w[1].starts_with('$'))
        .map(|w| w[2].to_string())
        .filter(|id| id.contains('-') && id.split('-').all(|p| p.parse::<u64>().is_ok()))
        .collect()
}

/// The payload of a bulk string reply.
fn dump_payload(reply: &[u8]) -> Vec<u8> {
    assert_eq!(reply[0], b'$', "{}", String::from_utf8_lossy(reply));
    let nl = reply.iter().position(|&c| c == b'\n').expect("a header");
    let len: usize = std::str::from_utf8(&reply[1..nl - 1])
        .expect("digits")
        .parse()
        .expect("a length");
    reply[nl + 1..nl + 1 + len].to_vec()
}

#[test]
fn groups_claims_deletes_and_trims_over_cold_nodes_answer_as_without_tiering() {
    let (tiered, plain) = pair(&[]);
    let (mut a, mut b) = (tiered.raw(), plain.raw());
    same(&mut a, &mut b, &["XGROUP", "CREATE", "t", "g", "0"]);
    for i in 0..40 {
        let c = format!("c{}", i % 3);
        let r = same(
            &mut a,
            &mut b,
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                &c,
                "COUNT",
                "50",
                "STREAMS",
                "t",
                ">",
            ],
        );
        assert!(r.len() > 1000, "entries delivered");
    }
    same(&mut a, &mut b, &["XPENDING", "t", "g"]);
    same(
        &mut a,
        &mut b,
        &["XACK", "t", "g", "1-0", "2-0", "3-0", "900-0"],
    );
    // History: the consumer's pending entries with their data.
    same(
        &mut a,
        &mut b,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "c1",
            "COUNT",
            "30",
            "STREAMS",
            "t",
            "0",
        ],
    );
    same(
        &mut a,
        &mut b,
        &[
            "XCLAIM", "t", "g", "c9", "0", "10-0", "11-0", "500-0", "1999-0",
        ],
    );
    same(
        &mut a,
        &mut b,
        &["XAUTOCLAIM", "t", "g", "c8", "0", "0", "COUNT", "25"],
    );
    same(
        &mut a,
        &mut b,
        &["XINFO", "STREAM", "t", "FULL", "COUNT", "5"],
    );
    // XDEL of cold entries (and of IDs that do not exist) marks them without I/O errors.
    same(
        &mut a,
        &mut b,
        &["XDEL", "t", "5-0", "6-0", "5-1", "12345-0"],
    );
    same(&mut a, &mut b, &["XRANGE", "t", "1", "20"]);
    same(&mut a, &mut b, &["XLEN", "t"]);
    same(&mut a, &mut b, &["XINFO", "STREAM", "t"]);
    // Trims: approximate (whole nodes), exact inside a cold node, then MAXLEN.
    same(&mut a, &mut b, &["XTRIM", "t", "MINID", "~", "3000"]);
    same(&mut a, &mut b, &["XTRIM", "t", "MINID", "4001"]);
    same(&mut a, &mut b, &["XTRIM", "t", "MAXLEN", "20000"]);
    same(&mut a, &mut b, &["XRANGE", "t", "-", "+", "COUNT", "5"]);
    same(&mut a, &mut b, &["XINFO", "STREAM", "t"]);
    same(&mut a, &mut b, &["XPENDING", "t", "g"]);
    // New entries still go to the tail.
    same(&mut a, &mut b, &["XADD", "t", "99999-0", "n", "x"]);
    same(&mut a, &mut b, &["XREVRANGE", "t", "+", "-", "COUNT", "2"]);
}

#[test]
fn cold_nodes_stay_cold_across_a_reload_and_a_rewrite() {
    let tiered = tiered(&["--appendonly", "yes"]);
    let mut r = tiered.raw();
    load(&mut r, "t");
    wait_until("cold nodes", || tier(&mut r, "tiering_cold_nodes") > 100);
    let before = r.cmd_str(&["XRANGE", "t", "-", "+"]);
    let info = r.cmd_str(&["XINFO", "STREAM", "t"]);
    // The log names each move (STREAMD.TIER): a reload from it turns the same nodes cold.
    assert_eq!(r.cmd_str(&["DEBUG", "LOADAOF"]), b"+OK\r\n");
    assert!(tier(&mut r, "tiering_cold_nodes") > 100);
    assert!(tier(&mut r, "tiering_hot_bytes") <= 2 * 1024 * 1024);
    assert_eq!(r.cmd_str(&["XRANGE", "t", "-", "+"]), before);
    // A rewrite writes the cold nodes as stubs: the new base is far smaller than the data.
    assert_eq!(
        r.cmd_str(&["BGREWRITEAOF"]),
        b"+Background append only file rewriting started\r\n"
    );
    wait_until("the rewrite", || {
        info_field(&mut r, "persistence", "aof_rewrite_in_progress").as_deref() == Some("0")
    });
    let base: u64 = std::fs::read_dir(tiered.dir().join("appendonlydir"))
        .expect("the log directory")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".base."))
        .map(|e| e.metadata().map_or(0, |m| m.len()))
        .sum();
    assert!(base < 3 * 1024 * 1024, "base of {base} bytes");
    assert_eq!(r.cmd_str(&["DEBUG", "LOADAOF"]), b"+OK\r\n");
    assert!(tier(&mut r, "tiering_cold_nodes") > 100);
    assert_eq!(r.cmd_str(&["XRANGE", "t", "-", "+"]), before);
    assert_eq!(r.cmd_str(&["XINFO", "STREAM", "t"]), info);
}

#[test]
fn trimming_history_unlinks_whole_segments() {
    let tiered = tiered(&[]);
    let mut r = tiered.raw();
    // ~40 MB: three 16 MB segments.
    for k in 0..7 {
        load(&mut r, &format!("s{k}"));
    }
    wait_until("cold nodes", || tier(&mut r, "tiering_segments") >= 3);
    let bytes = tier(&mut r, "tiering_segment_bytes");
    for k in 0..7 {
        r.cmd_str(&["DEL", &format!("s{k}")]);
    }
    wait_until("segments unlinked", || {
        tier(&mut r, "tiering_segments_unlinked") >= 2
    });
    assert!(tier(&mut r, "tiering_segment_bytes") < bytes / 2);
    let files = std::fs::read_dir(tiered.dir().join("tier"))
        .expect("the tier directory")
        .count();
    assert!(files <= 2, "{files} segment files left");
}

#[test]
fn the_settings_go_through_config() {
    let s = start_server_with(&[]);
    let mut r = s.raw();
    assert_eq!(
        r.cmd_str(&["CONFIG", "GET", "stream-tiering*"]),
        b"*4\r\n$14\r\nstream-tiering\r\n$2\r\nno\r\n$24\r\nstream-tiering-hot-bytes\r\n$10\r\n1073741824\r\n"
    );
    assert_eq!(
        r.cmd_str(&["CONFIG", "SET", "stream-tiering-hot-bytes", "2"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'stream-tiering-hot-bytes') - argument must be between 1048576 and 9223372036854775807 inclusive\r\n"
    );
    assert_eq!(
        r.cmd_str(&["CONFIG", "SET", "stream-tiering", "maybe"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'stream-tiering') - argument must be 'yes' or 'no'\r\n"
    );
    // Turned on while running: the store opens and the mover starts.
    load(&mut r, "t");
    assert_eq!(
        r.cmd_str(&[
            "CONFIG",
            "SET",
            "stream-tiering",
            "yes",
            "stream-tiering-hot-bytes",
            "1mb"
        ]),
        b"+OK\r\n"
    );
    wait_until("cold nodes", || tier(&mut r, "tiering_cold_nodes") > 0);
    assert!(s.dir().join("tier").is_dir());
    assert_eq!(
        r.cmd_str(&["XLEN", "t"]),
        format!(":{ENTRIES}\r\n").into_bytes()
    );
}

#[test]
fn segments_mostly_dead_are_compacted_and_their_survivors_read_the_same() {
    let tiered = tiered(&[]);
    let mut r = tiered.raw();
    // Three streams written in turns, so their cold nodes share segments.
    for step in 0..(3 * ENTRIES / 1000) {
        let range = step * 1000 / 3..(step + 1) * 1000 / 3;
        for k in ["a", "b", "c"] {
            load_range(&mut r, k, range.clone());
        }
    }
    wait_until("cold nodes in several segments", || {
        tier(&mut r, "tiering_segments") >= 2 && tier(&mut r, "tiering_cold_nodes") > 1000
    });
    let before = r.cmd_str(&["XRANGE", "a", "-", "+"]);
    // Two thirds of every segment's records die: each is compacted, then unlinked.
    r.cmd_str(&["DEL", "b", "c"]);
    wait_until("a compaction", || tier(&mut r, "tiering_compactions") >= 1);
    wait_until("the compacted segment unlinked", || {
        tier(&mut r, "tiering_segments_unlinked") >= 1
    });
    assert_eq!(r.cmd_str(&["XRANGE", "a", "-", "+"]), before);
    assert!(tier(&mut r, "tiering_compacted_bytes") > 0);
}

#[test]
fn check_tier_verifies_every_record_and_names_the_damage() {
    let mut tiered = tiered(&[]);
    let mut r = tiered.raw();
    load(&mut r, "t");
    wait_until("cold nodes", || tier(&mut r, "tiering_cold_nodes") > 100);
    // The check is for a store no server is writing (at start, or offline): a live
    // server's mover may be halfway through a record of its newest segment.
    r.send(&common::encode_cmd(&[b"SHUTDOWN", b"NOSAVE"]));
    wait_until("the server to exit", || !tiered.is_running());
    let dir = tiered.dir().join("tier");
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_streamd"))
            .arg("--check-tier")
            .args(args)
            .output()
            .expect("run streamd --check-tier")
    };
    let d = dir.display().to_string();
    let ok = run(&[&d]);
    let text = String::from_utf8_lossy(&ok.stdout).to_string();
    assert_eq!(ok.status.code(), Some(0), "{text}");
    assert!(text.contains(": ok"), "{text}");
    // One flipped byte inside the first record of the oldest segment.
    let seg = dir.join("seg-0000000000000001.sdt");
    let mut bytes = std::fs::read(&seg).expect("read the segment");
    bytes[100] ^= 0xff;
    std::fs::write(&seg, &bytes).expect("write the segment");
    let bad = run(&[&d]);
    let text = String::from_utf8_lossy(&bad.stdout).to_string();
    assert_eq!(bad.status.code(), Some(1), "{text}");
    assert!(text.contains("seg-0000000000000001.sdt"), "{text}");
    assert_eq!(run(&[]).status.code(), Some(2));
}
