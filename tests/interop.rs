//! Moving streams between Redis and streamd (issue 11): DUMP/RESTORE in both directions
//! against Debian's real `redis-server` (7.0), `streamd --import-rdb` of a `dump.rdb`
//! that Redis wrote with SAVE, and refusal of damaged input without a panic.
//!
//! Replies are compared after normalising only what must differ, each for a reason:
//! - idle times (`idle` in XINFO CONSUMERS, XPENDING's extended form): milliseconds since
//!   a moment, read at different times on the two servers;
//! - XINFO `radix-tree-nodes`: the radix tree's internal shape is each server's own
//!   (`radix-tree-keys`, the node boundaries, must match and is compared);
//! - fields Redis 7.0 does not have (7.2's consumer `active-time`/`inactive`, 8.6's
//!   six IDMP fields, 8.8's `nacked-count`): removed from streamd's replies, so the
//!   fields 7.0 has are compared in order.
//!
//! Delivery times and seen times are *not* normalised: the payload carries them exactly.

mod common;

use common::stream_view::{flat, norm_map, norm_pending, pairs};
use common::{Raw, client, escape, redis_server, start_server, start_server_with};
use redis::Value;
use redis::aio::MultiplexedConnection;
use std::path::Path;
use std::process::Command;
use streamd::rdb::crc64;

/// Runs a command, panicking on an error reply.
async fn q(con: &mut MultiplexedConnection, args: &[&[u8]]) -> Value {
    let mut c = redis::cmd(std::str::from_utf8(args[0]).expect("ascii name"));
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query_async(con)
        .await
        .unwrap_or_else(|e| panic!("{:?}: {e}", String::from_utf8_lossy(&args.concat())))
}

/// Runs a command given as text words.
async fn qs(con: &mut MultiplexedConnection, line: &str) -> Value {
    let words: Vec<&[u8]> = line.split_whitespace().map(str::as_bytes).collect();
    q(con, &words).await
}

/// What `build` puts in a stream, so each direction avoids what the other side lacks.
#[derive(Clone, Copy)]
struct Script {
    /// XGROUP CREATECONSUMER and history re-reads (consumers whose active time differs
    /// from their seen time need type 21, which Redis 7.0 cannot read).
    idle_consumers: bool,
}

/// A stream with several nodes, tombstones (one of them a node's first entry), entries
/// whose fields differ from their node's master fields, integer-looking, negative, empty,
/// binary and large values, three groups (one empty), pending entries owned by four
/// consumers, acknowledgements, a claim and a pending entry whose stream entry is gone.
async fn build(con: &mut MultiplexedConnection, key: &[u8], script: Script) {
    let big = vec![b'x'; 5000];
    let mid = vec![b'y'; 100];
    for i in 1..=300u32 {
        let id = format!("{}-{}", 1000 + i / 7, i % 7);
        let n = i.to_string();
        let amount = (i as i64 * 997 - 150_000).to_string();
        let mut args: Vec<&[u8]> = vec![b"XADD", key, id.as_bytes()];
        match i % 10 {
            3 => args.extend_from_slice(&[b"other", n.as_bytes(), b"more", b""]),
            7 => args.extend_from_slice(&[b"bidder", n.as_bytes(), b"blob", &big]),
            _ => args.extend_from_slice(&[
                b"bidder",
                n.as_bytes(),
                b"amount",
                amount.as_bytes(),
                b"note",
                if i % 2 == 0 { b"\x00\xffbin" } else { &mid },
            ]),
        }
        q(con, &args).await;
    }
    for id in ["1000-1", "1001-1", "1010-3", "1014-2", "1030-0"] {
        q(con, &[b"XDEL", key, id.as_bytes()]).await;
    }
    for line in [
        "XGROUP CREATE {k} g1 0",
        "XGROUP CREATE {k} g2 1020-0",
        "XGROUP CREATE {k} g3 $",
        "XREADGROUP GROUP g1 alice COUNT 40 STREAMS {k} >",
        "XREADGROUP GROUP g1 bob COUNT 10 STREAMS {k} >",
        "XREADGROUP GROUP g2 carol COUNT 5 STREAMS {k} >",
        "XACK {k} g1 1000-2 1000-3 1003-0",
        "XCLAIM {k} g1 dave 0 1002-1 1002-2",
        "XDEL {k} 1004-4",
    ] {
        let line = line.replace("{k}", std::str::from_utf8(key).expect("ascii key"));
        qs(con, &line).await;
    }
    if script.idle_consumers {
        for line in [
            "XGROUP CREATECONSUMER {k} g3 erin",
            "XREADGROUP GROUP g1 alice COUNT 3 STREAMS {k} 0",
        ] {
            let line = line.replace("{k}", std::str::from_utf8(key).expect("ascii key"));
            qs(con, &line).await;
        }
    }
}

/// Every read reply about `key`, normalised, labelled for the failure message.
async fn view(con: &mut MultiplexedConnection, key: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for line in [
        "XLEN {k}",
        "XRANGE {k} - +",
        "XREVRANGE {k} + - COUNT 17",
        "XPENDING {k} g1",
        "XPENDING {k} g2",
        "XPENDING {k} g3",
    ] {
        let line = line.replace("{k}", key);
        out.push((line.clone(), qs(con, &line).await));
    }
    for line in [
        "XPENDING {k} g1 - + 1000",
        "XPENDING {k} g1 - + 1000 bob",
        "XPENDING {k} g2 - + 1000",
    ] {
        let line = line.replace("{k}", key);
        let v = qs(con, &line).await;
        out.push((line, norm_pending(v)));
    }
    let line = format!("XINFO STREAM {key} FULL");
    let v = qs(con, &line).await;
    out.push((line, flat(norm_map(v, &["groups"]))));
    let line = format!("XINFO STREAM {key}");
    let v = qs(con, &line).await;
    out.push((line, flat(norm_map(v, &[]))));
    let line = format!("XINFO GROUPS {key}");
    if let Value::Array(groups) = qs(con, &line).await {
        let gs = groups.into_iter().map(|g| flat(norm_map(g, &[]))).collect();
        out.push((line, Value::Array(gs)));
    }
    for g in ["g1", "g2", "g3"] {
        let line = format!("XINFO CONSUMERS {key} {g}");
        if let Value::Array(cs) = qs(con, &line).await {
            let cs = cs.into_iter().map(|c| flat(norm_map(c, &[]))).collect();
            out.push((line, Value::Array(cs)));
        }
    }
    out
}

fn assert_same_views(src: &[(String, Value)], dst: &[(String, Value)]) {
    assert_eq!(src.len(), dst.len());
    for ((line, a), (_, b)) in src.iter().zip(dst) {
        assert_eq!(a, b, "`{line}` differs (left: source, right: restored)");
    }
}

async fn dump(con: &mut MultiplexedConnection, key: &str) -> Vec<u8> {
    match qs(con, &format!("DUMP {key}")).await {
        Value::BulkString(b) => b,
        other => panic!("DUMP gave {other:?}"),
    }
}

async fn restore(con: &mut MultiplexedConnection, key: &str, payload: &[u8]) -> Value {
    q(con, &[b"RESTORE", key.as_bytes(), b"0", payload]).await
}

#[tokio::test]
async fn a_stream_made_in_redis_restores_into_streamd_with_identical_replies() {
    let redis = redis_server();
    let sd = start_server();
    let (mut r, mut s) = (client(redis.port).await, client(sd.port).await);
    build(
        &mut r,
        b"src",
        Script {
            idle_consumers: true,
        },
    )
    .await;
    let payload = dump(&mut r, "src").await;
    assert_eq!(payload[0], 19, "Redis 7.0 writes stream type 19");
    assert_eq!(restore(&mut s, "src", &payload).await, Value::Okay);
    assert_same_views(&view(&mut r, "src").await, &view(&mut s, "src").await);
    // Redis 7.2+'s rule for type 19: a consumer's active time is its seen time.
    let c = pairs(match qs(&mut s, "XINFO CONSUMERS src g3").await {
        Value::Array(mut cs) => cs.remove(0),
        other => panic!("{other:?}"),
    });
    assert!(
        c.iter()
            .any(|(k, v)| k == "inactive" && *v != Value::Int(-1))
    );
    // streamd's own DUMP of it (uncompressed, where Redis compresses long strings with
    // LZF) restores into Redis as the same stream.
    let again = dump(&mut s, "src").await;
    assert_eq!(restore(&mut r, "again", &again).await, Value::Okay);
    assert_same_views(&view(&mut r, "src").await, &view(&mut r, "again").await);
}

#[tokio::test]
async fn a_stream_made_in_streamd_restores_into_redis_with_identical_replies() {
    let redis = redis_server();
    let sd = start_server();
    let (mut r, mut s) = (client(redis.port).await, client(sd.port).await);
    let script = Script {
        idle_consumers: false,
    };
    build(&mut s, b"src", script).await;
    let payload = dump(&mut s, "src").await;
    assert_eq!(payload[0], 19);
    assert_eq!(&payload[payload.len() - 10..payload.len() - 8], &[10, 0]);
    assert_eq!(restore(&mut r, "src", &payload).await, Value::Okay);
    assert_same_views(&view(&mut s, "src").await, &view(&mut r, "src").await);
    // Node for node as Redis builds them: the same script run on Redis gives the same
    // node boundaries (IDs are explicit), which XINFO's radix-tree-keys shows.
    build(&mut r, b"twin", script).await;
    let keys = |v: Value| {
        pairs(v)
            .into_iter()
            .find(|(k, _)| k == "radix-tree-keys")
            .map(|(_, v)| v)
    };
    let twin = keys(qs(&mut r, "XINFO STREAM twin").await);
    assert_eq!(twin, keys(qs(&mut s, "XINFO STREAM src").await));
    assert_eq!(twin, keys(qs(&mut r, "XINFO STREAM src").await));
}

#[tokio::test]
async fn consumers_never_active_need_type_21_which_redis_7_0_refuses_and_streamd_reads() {
    let redis = redis_server();
    let sd = start_server();
    let mut s = client(sd.port).await;
    qs(&mut s, "XADD k 1-1 f v").await;
    qs(&mut s, "XGROUP CREATE k g 0").await;
    qs(&mut s, "XGROUP CREATECONSUMER k g idle").await;
    let payload = dump(&mut s, "k").await;
    assert_eq!(payload[0], 21);
    assert_eq!(&payload[payload.len() - 10..payload.len() - 8], &[12, 0]);
    let mut raw = redis.raw();
    let reply = raw.cmd(&[b"RESTORE", b"k", b"0", &payload]);
    assert_eq!(
        escape(&reply),
        escape(b"-ERR DUMP payload version or checksum are wrong\r\n")
    );
    assert_eq!(restore(&mut s, "k2", &payload).await, Value::Okay);
    let before = flat(norm_map(
        match qs(&mut s, "XINFO CONSUMERS k g").await {
            Value::Array(mut v) => v.remove(0),
            o => o,
        },
        &[],
    ));
    let v = qs(&mut s, "XINFO CONSUMERS k2 g").await;
    let Value::Array(mut cs) = v else { panic!() };
    let after = pairs(cs.remove(0));
    assert!(after.contains(&("inactive".to_string(), Value::Int(-1))));
    assert_eq!(flat(norm_map(flat(after), &[])), before);
}

/// The bulk string of a reply, as text.
fn bulk_text(reply: &[u8]) -> String {
    let text = String::from_utf8_lossy(reply);
    assert!(text.starts_with('$'), "not a bulk string: {text:?}");
    text.split("\r\n").nth(1).unwrap_or_default().to_string()
}

/// The stream IDs in a reply, in order (values in these tests never look like IDs).
fn ids_in(reply: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(reply)
        .split("\r\n")
        .filter(|l| {
            l.split_once('-').is_some_and(|(a, b)| {
                !a.is_empty()
                    && !b.is_empty()
                    && a.bytes().all(|c| c.is_ascii_digit())
                    && b.bytes().all(|c| c.is_ascii_digit())
            })
        })
        .map(str::to_string)
        .collect()
}

/// A DUMP reply's payload (the bulk string's bytes).
fn payload_of(reply: &[u8]) -> Vec<u8> {
    let start = reply.iter().position(|&b| b == b'\n').expect("header") + 1;
    reply[start..reply.len() - 2].to_vec()
}

/// Replies that must be byte for byte the same for the original and the restored key:
/// nothing in them depends on when they are asked.
fn assert_same_replies(r: &mut Raw, a: &str, b: &str, lines: &[&str]) {
    for line in lines {
        let (x, y) = (
            common::c(r, &line.replace("{k}", a)),
            common::c(r, &line.replace("{k}", b)),
        );
        assert_eq!(x, y, "`{line}` differs between {a} and {b}");
    }
}

/// A stream with IDMP state (XCFGSET settings, producers, a duplicate answered), then
/// NACKed entries: DUMP writes type 26 (RDB 13) and then type 27 (RDB 14), streamd
/// restores both with every reply the same, and a retried XADD IDMP on the restored key
/// is still recognised. Redis 7.0 refuses both payloads by their version.
#[test]
fn idmp_state_travels_in_type_26_and_nacked_entries_in_type_27() {
    let sd = start_server();
    let mut r = sd.raw();
    common::c(&mut r, "XADD k 1-1 f v");
    common::c(&mut r, "XCFGSET k IDMP-DURATION 600 IDMP-MAXSIZE 3");
    let first = bulk_text(&r.cmd_str(&["XADD", "k", "IDMP", "p1", "i1", "*", "f", "a"]));
    let second = bulk_text(&r.cmd_str(&["XADD", "k", "IDMP", "p1", "i2", "*", "f", "b"]));
    r.cmd(&[
        b"XADD",
        b"k",
        b"IDMP",
        b"p\x00bin",
        b"\xff",
        b"*",
        b"f",
        b"c",
    ]);
    r.cmd_str(&["XADD", "k", "IDMPAUTO", "p3", "*", "f", "d"]);
    let dup = bulk_text(&r.cmd_str(&["XADD", "k", "IDMP", "p1", "i1", "*", "f", "x"]));
    assert_eq!(dup, first);

    let p26 = payload_of(&r.cmd_str(&["DUMP", "k"]));
    assert_eq!(p26[0], 26, "IDMP state needs type 26");
    assert_eq!(&p26[p26.len() - 10..p26.len() - 8], &[13, 0]);
    assert_eq!(r.cmd(&[b"RESTORE", b"k26", b"0", &p26]), b"+OK\r\n");
    let lines = [
        "XINFO STREAM {k}",
        "XINFO STREAM {k} FULL",
        "XRANGE {k} - +",
    ];
    assert_same_replies(&mut r, "k", "k26", &lines);
    // A producer retrying after the move is answered with the original ID, adds nothing.
    let len = common::c(&mut r, "XLEN k26");
    for key in ["k", "k26"] {
        let again = bulk_text(&r.cmd_str(&["XADD", key, "IDMP", "p1", "i2", "*", "f", "y"]));
        assert_eq!(again, second, "{key}");
    }
    assert_eq!(common::c(&mut r, "XLEN k26"), len);
    assert_same_replies(&mut r, "k", "k26", &lines);

    common::c(&mut r, "XGROUP CREATE k g 0");
    common::c(&mut r, "XREADGROUP GROUP g alice COUNT 4 STREAMS k >");
    common::c(&mut r, "XREADGROUP GROUP g bob COUNT 1 STREAMS k >");
    let nacked_first = second.clone();
    common::c(&mut r, &format!("XNACK k g FAIL IDS 1 {nacked_first}"));
    common::c(&mut r, "XNACK k g FATAL IDS 1 1-1");
    let p27 = payload_of(&r.cmd_str(&["DUMP", "k"]));
    assert_eq!(p27[0], 27, "NACKed entries need type 27");
    assert_eq!(&p27[p27.len() - 10..p27.len() - 8], &[14, 0]);
    assert_eq!(r.cmd(&[b"RESTORE", b"k27", b"0", &p27]), b"+OK\r\n");
    let lines = [
        "XINFO STREAM {k}",
        "XINFO STREAM {k} FULL",
        "XPENDING {k} g",
        "XINFO GROUPS {k}",
    ];
    assert_same_replies(&mut r, "k", "k27", &lines);
    // XPENDING's detail, idle times aside (NACKed entries have none to compare).
    let detail = |r: &mut Raw, key: &str| {
        let text = common::c(r, &format!("XPENDING {key} g - + 10"));
        ids_in(text.as_bytes())
    };
    assert_eq!(detail(&mut r, "k"), detail(&mut r, "k27"));
    // The NACK zone kept its order: XREADGROUP CLAIM serves it first, in NACK order.
    let claimed = |r: &mut Raw, key: &str| {
        let reply = r.cmd_str(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "carol",
            "CLAIM",
            "3600000",
            "COUNT",
            "2",
            "STREAMS",
            key,
            ">",
        ]);
        ids_in(&reply)
    };
    let a = claimed(&mut r, "k");
    assert_eq!(a, vec![nacked_first, "1-1".to_string()]);
    assert_eq!(claimed(&mut r, "k27"), a);
    let dup = bulk_text(&r.cmd_str(&["XADD", "k27", "IDMP", "p1", "i1", "*", "f", "z"]));
    assert_eq!(dup, first);

    let redis = redis_server();
    let mut raw = redis.raw();
    for p in [&p26, &p27] {
        let reply = raw.cmd(&[b"RESTORE", b"x", b"0", p]);
        assert_eq!(
            escape(&reply),
            escape(b"-ERR DUMP payload version or checksum are wrong\r\n")
        );
    }
}

/// A `dump.rdb` in RDB version 14 (Redis 8.8) holding a type-27 stream with IDMP state,
/// put together from streamd's own DUMP payload body: `--import-rdb` reads it.
#[test]
fn an_rdb_14_file_with_a_type_27_stream_is_imported() {
    let sd = start_server();
    let mut r = sd.raw();
    common::c(&mut r, "XADD k 1-1 f v");
    r.cmd_str(&["XADD", "k", "IDMP", "p", "i", "*", "f", "w"]);
    common::c(&mut r, "XGROUP CREATE k g 0");
    common::c(&mut r, "XREADGROUP GROUP g c STREAMS k >");
    common::c(&mut r, "XNACK k g SILENT IDS 1 1-1");
    let payload = payload_of(&r.cmd_str(&["DUMP", "k"]));
    assert_eq!(payload[0], 27);
    let mut file = b"REDIS0014".to_vec();
    file.extend_from_slice(&[0xFE, 0, 27, 1, b'k']); // SELECTDB 0, a type-27 key "k"
    file.extend_from_slice(&payload[1..payload.len() - 10]);
    file.push(0xFF);
    let crc = crc64::crc64(&file);
    file.extend_from_slice(&crc.to_le_bytes());
    let dir = tempfile::tempdir().expect("tempdir");
    let rdb = dir.path().join("dump.rdb");
    std::fs::write(&rdb, &file).expect("write the file");
    let data = dir.path().join("data");
    let imported = import(&rdb, &data);
    let mut s = imported.raw();
    for line in [
        "XINFO STREAM k FULL",
        "XPENDING k g",
        "XRANGE k - +",
        "XINFO STREAM k",
    ] {
        assert_eq!(common::c(&mut s, line), common::c(&mut r, line), "{line}");
    }
    assert!(imported.log().contains("RDB import done"));
}

/// Exact error replies, compared with Redis's.
#[test]
fn restore_errors_match_redis() {
    let redis = redis_server();
    let sd = start_server();
    let (mut r, mut s) = (redis.raw(), sd.raw());
    for raw in [&mut r, &mut s] {
        raw.cmd(&[b"XADD", b"k", b"1-1", b"f", b"v"]);
    }
    let good = r.cmd(&[b"DUMP", b"k"]);
    // Strip the bulk header: `$<len>\r\n<payload>\r\n`.
    let start = good.iter().position(|&b| b == b'\n').expect("header") + 1;
    let payload = good[start..good.len() - 2].to_vec();
    let mut bad_crc = payload.clone();
    bad_crc[5] ^= 1;
    let cases: Vec<Vec<&[u8]>> = vec![
        vec![b"RESTORE", b"k", b"0", &payload],
        vec![b"RESTORE", b"k", b"0", &payload, b"BADOPT"],
        vec![b"RESTORE", b"n", b"-1", &payload],
        vec![b"RESTORE", b"n", b"x", &payload],
        vec![b"RESTORE", b"n", b"0", b"short"],
        vec![b"RESTORE", b"n", b"0", &bad_crc],
        vec![b"RESTORE", b"n", b"0", &payload, b"IDLETIME", b"-1"],
        vec![b"RESTORE", b"n", b"0", &payload, b"IDLETIME", b"x"],
        vec![b"RESTORE", b"n", b"0", &payload, b"FREQ", b"256"],
        vec![
            b"RESTORE",
            b"n",
            b"0",
            &payload,
            b"FREQ",
            b"1",
            b"IDLETIME",
            b"1",
        ],
        vec![b"RESTORE", b"n", b"0", &payload, b"IDLETIME"],
        vec![b"RESTORE", b"n", b"0"],
        vec![
            b"RESTORE",
            b"n",
            b"0",
            &payload,
            b"IDLETIME",
            b"5",
            b"REPLACE",
        ],
        vec![b"RESTORE", b"k", b"0", &payload, b"REPLACE", b"FREQ", b"3"],
        vec![b"RESTORE", b"t", b"100000", &payload],
        vec![b"RESTORE", b"t2", b"1", &payload, b"ABSTTL"],
        vec![b"EXISTS", b"n", b"t", b"t2"],
        vec![b"PTTL", b"t"],
        vec![b"DUMP", b"missing"],
        vec![b"DUMP"],
    ];
    for args in cases {
        let (a, b) = (r.cmd(&args), s.cmd(&args));
        // PTTL counts down on its own; the sign and magnitude are what matter.
        if args[0] == b"PTTL" {
            for reply in [&a, &b] {
                let t: i64 = String::from_utf8_lossy(&reply[1..reply.len() - 2])
                    .parse()
                    .expect("an integer reply");
                assert!((1..=100_000).contains(&t), "PTTL {t}");
            }
            continue;
        }
        assert_eq!(escape(&b), escape(&a), "reply to {:?}", args[..2].to_vec());
    }
}

/// Payloads of the other types, as Redis made them, RESTORE (every type and encoding is
/// covered in tests/type_persistence.rs); a module value is refused naming its type.
#[test]
fn non_stream_payloads_restore_and_module_values_are_refused() {
    let redis = redis_server();
    let sd = start_server();
    let (mut r, mut s) = (redis.raw(), sd.raw());
    r.cmd(&[b"SET", b"str", b"hello"]);
    r.cmd(&[b"RPUSH", b"list", b"a", b"b"]);
    for (key, name) in [("str", "string"), ("list", "list")] {
        let dumped = r.cmd(&[b"DUMP", key.as_bytes()]);
        let start = dumped.iter().position(|&b| b == b'\n').expect("header") + 1;
        let payload = &dumped[start..dumped.len() - 2];
        assert_eq!(
            s.cmd(&[b"RESTORE", key.as_bytes(), b"0", payload]),
            b"+OK\r\n"
        );
        assert_eq!(
            s.cmd(&[b"TYPE", key.as_bytes()]),
            format!("+{name}\r\n").into_bytes()
        );
    }
    // A module value (type 7: module id, then its opcodes up to EOF).
    let module = refooter(&[7, 0x81, 0, 0, 0, 0, 0, 0, 0, 1, 0], 10);
    let reply = String::from_utf8_lossy(&s.cmd(&[b"RESTORE", b"x", b"0", &module])).into_owned();
    assert!(
        reply.starts_with("-ERR streamd does not store this type") && reply.contains("module"),
        "{reply}"
    );
    assert_eq!(s.cmd(&[b"EXISTS", b"x"]), b":0\r\n");
}

/// Recomputes a payload's CRC so that a change reaches the value parser.
fn refooter(body: &[u8], version: u16) -> Vec<u8> {
    let mut p = body.to_vec();
    p.extend_from_slice(&version.to_le_bytes());
    let crc = crc64::crc64(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    p
}

#[tokio::test]
async fn damaged_payloads_are_refused_and_change_nothing() {
    let redis = redis_server();
    let sd = start_server();
    let mut r = client(redis.port).await;
    build(
        &mut r,
        b"src",
        Script {
            idle_consumers: true,
        },
    )
    .await;
    // A small stream keeps the number of cases in the thousands.
    qs(&mut r, "XTRIM src MAXLEN 12").await;
    let payload = dump(&mut r, "src").await;
    let body = &payload[..payload.len() - 10];
    let mut raw = sd.raw();
    raw.cmd(&[b"XADD", b"dst", b"1-1", b"keep", b"me"]);
    let mut sent = 0;
    let mut check = |p: &[u8], raw: &mut Raw| {
        let reply = raw.cmd(&[b"RESTORE", b"dst", b"0", p, b"REPLACE"]);
        sent += 1;
        if reply == b"+OK\r\n" {
            // A change the format cannot detect (a value byte): put the original back.
            raw.cmd(&[b"DEL", b"dst"]);
            raw.cmd(&[b"XADD", b"dst", b"1-1", b"keep", b"me"]);
        } else {
            assert!(reply.starts_with(b"-ERR"), "{}", escape(&reply));
        }
    };
    // Every truncation, footer intact and recomputed.
    for cut in 0..payload.len() {
        check(&payload[..cut], &mut raw);
        if cut < body.len() {
            check(&refooter(&body[..cut], 10), &mut raw);
        }
    }
    // Every byte flipped, with a correct CRC so the parser sees it.
    for i in 0..body.len() {
        let mut b = body.to_vec();
        b[i] ^= 0xFF;
        check(&refooter(&b, 10), &mut raw);
    }
    assert!(sent > 1000);
    assert_eq!(
        escape(&raw.cmd(&[b"XRANGE", b"dst", b"-", b"+"])),
        escape(b"*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$4\r\nkeep\r\n$2\r\nme\r\n")
    );
}

#[tokio::test]
async fn restore_wakes_a_blocked_reader() {
    let sd = start_server();
    let mut s = client(sd.port).await;
    qs(&mut s, "XADD src 5-1 f v").await;
    let payload = dump(&mut s, "src").await;
    let mut reader = sd.raw();
    common::send(&mut reader, &["XREAD", "BLOCK", "0", "STREAMS", "dst", "$"]);
    // The reader is registered once CLIENT LIST shows it blocked.
    for _ in 0..200 {
        let info = String::from_utf8_lossy(&sd.raw().cmd_str(&["INFO", "clients"])).into_owned();
        if info.contains("blocked_clients:1") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(restore(&mut s, "dst", &payload).await, Value::Okay);
    let reply = reader.read_reply();
    assert!(
        escape(&reply).contains("5-1"),
        "reader got {}",
        escape(&reply)
    );
}

#[tokio::test]
async fn a_restored_stream_survives_a_restart_from_the_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8 path");
    let args = ["--dir", d, "--appendonly", "yes"];
    let payload;
    let before;
    {
        let sd = start_server_with(&args);
        let mut s = client(sd.port).await;
        build(
            &mut s,
            b"src",
            Script {
                idle_consumers: true,
            },
        )
        .await;
        payload = dump(&mut s, "src").await;
        assert_eq!(
            q(&mut s, &[b"RESTORE", b"dst", b"100000", &payload]).await,
            Value::Okay
        );
        qs(&mut s, "DEL src").await;
        before = view(&mut s, "dst").await;
    }
    let sd = start_server_with(&args);
    let mut s = client(sd.port).await;
    assert_same_views(&before, &view(&mut s, "dst").await);
    assert_eq!(dump(&mut s, "dst").await, payload);
    let pttl = qs(&mut s, "PTTL dst").await;
    assert!(
        matches!(pttl, Value::Int(t) if t > 0 && t <= 100_000),
        "{pttl:?}"
    );
}

/// Runs `streamd --import-rdb` to completion's first phase: returns the server (serving
/// what it imported) and its log.
fn import(rdb: &Path, dir: &Path) -> common::Server {
    start_server_with(&[
        "--dir",
        dir.to_str().expect("utf-8 path"),
        "--import-rdb",
        rdb.to_str().expect("utf-8 path"),
    ])
}

#[tokio::test]
async fn a_dump_rdb_saved_by_redis_is_imported() {
    let redis = redis_server();
    let mut r = client(redis.port).await;
    build(
        &mut r,
        b"s1",
        Script {
            idle_consumers: true,
        },
    )
    .await;
    for line in [
        "SELECT 3",
        "XADD s3 7-7 field value",
        "XADD s3 8-0 field aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "SET plain value",
        "SET compressed aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "SET counter 12345",
        "RPUSH alist a b c",
        "SADD aset x y",
        "ZADD azset 1 a 2.5 b",
        "HSET ahash f v",
        "XADD withttl 1-1 f v",
        "PEXPIRE withttl 3600000",
        "SELECT 0",
        "SET other value",
        "SAVE",
    ] {
        qs(&mut r, line).await;
    }
    let rdb = Path::new(&redis_dir(&redis)).join("dump.rdb");
    let dir = tempfile::tempdir().expect("tempdir");
    let sd = import(&rdb, dir.path());
    let mut s = client(sd.port).await;
    assert_same_views(&view(&mut r, "s1").await, &view(&mut s, "s1").await);
    qs(&mut r, "SELECT 3").await;
    qs(&mut s, "SELECT 3").await;
    // Every type is imported (types-persist): the same keys and values as Redis.
    for line in [
        "XRANGE s3 - +",
        "DBSIZE",
        "KEYS *",
        "GET plain",
        "GET compressed",
        "GET counter",
        "LRANGE alist 0 -1",
        "ZRANGE azset 0 -1 WITHSCORES",
        "HGETALL ahash",
        "SISMEMBER aset x",
        "SCARD aset",
    ] {
        let (a, b) = (qs(&mut r, line).await, qs(&mut s, line).await);
        if line == "KEYS *" {
            let (Value::Array(mut a), Value::Array(mut b)) = (a, b) else {
                panic!()
            };
            a.sort_by_key(|k| format!("{k:?}"));
            b.sort_by_key(|k| format!("{k:?}"));
            assert_eq!(a, b);
        } else {
            assert_eq!(a, b, "{line}");
        }
    }
    let ttl = qs(&mut s, "PTTL withttl").await;
    assert!(matches!(ttl, Value::Int(t) if t > 3_000_000), "{ttl:?}");
    let log = sd.log();
    assert!(log.contains("RDB import done"), "{log}");
    for imported in [
        "string=4",
        "list=1",
        "set=1",
        "zset=1",
        "hash=1",
        "skipped=none",
    ] {
        assert!(
            log.contains(imported),
            "{imported} missing from the log: {log}"
        );
    }
    // The snapshot it wrote is a normal one: a second start on the directory loads it.
    drop(s);
    drop(sd);
    qs(&mut r, "SELECT 0").await;
    let again = start_server_with(&["--dir", dir.path().to_str().expect("utf-8")]);
    let mut s = client(again.port).await;
    assert_eq!(qs(&mut s, "XLEN s1").await, qs(&mut r, "XLEN s1").await);
}

/// The directory the reference server runs in (its `--dir`, where SAVE writes).
fn redis_dir(redis: &common::RedisServer) -> String {
    let mut raw = redis.raw();
    let reply = raw.cmd_str(&["CONFIG", "GET", "dir"]);
    let text = String::from_utf8_lossy(&reply).into_owned();
    text.lines()
        .filter(|l| !l.starts_with(['*', '$']))
        .nth(1)
        .expect("CONFIG GET dir")
        .to_string()
}

fn streamd_import_fails(rdb: &Path, dir: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_streamd"))
        .args([
            "--import-rdb",
            rdb.to_str().expect("utf-8"),
            "--dir",
            dir.to_str().expect("utf-8"),
            "--port",
            "0",
            "--appendonly",
            "no",
        ])
        .output()
        .expect("run streamd");
    assert!(!out.status.success(), "the import should have failed");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn a_corrupt_file_or_a_used_directory_is_refused() {
    let redis = redis_server();
    let mut r = client(redis.port).await;
    qs(&mut r, "XADD s 1-1 f v").await;
    qs(&mut r, "SAVE").await;
    let rdb = Path::new(&redis_dir(&redis)).join("dump.rdb");
    let good = std::fs::read(&rdb).expect("dump.rdb");
    let tmp = tempfile::tempdir().expect("tempdir");
    // Truncated in the middle of the stream value.
    let cut = tmp.path().join("cut.rdb");
    std::fs::write(&cut, &good[..good.len() - 30]).expect("write");
    let err = streamd_import_fails(&cut, &tmp.path().join("d1"));
    assert!(err.contains("at offset"), "{err}");
    // A flipped byte: caught by the parser or by the file's checksum.
    let mut bad = good.clone();
    let n = bad.len();
    bad[n - 40] ^= 0x20;
    let flipped = tmp.path().join("flipped.rdb");
    std::fs::write(&flipped, &bad).expect("write");
    let err = streamd_import_fails(&flipped, &tmp.path().join("d2"));
    assert!(err.contains("at offset"), "{err}");
    // A data directory that already holds a snapshot.
    let used = tmp.path().join("used");
    std::fs::create_dir_all(&used).expect("mkdir");
    std::fs::write(used.join("dump.snap"), b"x").expect("write");
    let err = streamd_import_fails(&rdb, &used);
    assert!(err.contains("already holds data"), "{err}");
    assert_eq!(std::fs::read(used.join("dump.snap")).expect("kept"), b"x");
}
