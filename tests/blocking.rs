//! XREAD and blocking: readers parked on keys, woken by XADD (and by key changes),
//! timeouts, CLIENT UNBLOCK, disconnects while blocked (reference §2.4, §3.4).

mod common;

use common::send;

use common::{Raw, encode_cmd, info_field, redis_server, start_server, wait_blocked};
use std::time::{Duration, Instant};

fn s(text: &str) -> Vec<u8> {
    text.as_bytes().to_vec()
}

#[test]
fn xread_without_block_returns_entries_after_the_id_or_null() {
    let server = start_server();
    let mut c = server.raw();
    c.cmd_str(&["XADD", "s", "1-1", "a", "1"]);
    c.cmd_str(&["XADD", "s", "2-1", "b", "2"]);
    assert_eq!(
        c.cmd_str(&["XREAD", "STREAMS", "s", "1-1"]),
        s("*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n2-1\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n")
    );
    assert_eq!(c.cmd_str(&["XREAD", "STREAMS", "s", "2-1"]), s("*-1\r\n"));
    assert_eq!(c.cmd_str(&["XREAD", "STREAMS", "nokey", "0"]), s("*-1\r\n"));
    // `+` returns only the last entry, COUNT or not.
    assert_eq!(
        c.cmd_str(&["XREAD", "COUNT", "5", "STREAMS", "s", "+"]),
        s("*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n2-1\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n")
    );
    // COUNT per stream.
    assert_eq!(
        c.cmd_str(&["XREAD", "COUNT", "1", "STREAMS", "s", "0"]),
        s("*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n")
    );
    // RESP3: a map keyed by stream name; null is `_`.
    c.hello3();
    assert_eq!(
        c.cmd_str(&["XREAD", "STREAMS", "s", "1-1"]),
        s("%1\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n2-1\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n")
    );
    assert_eq!(c.cmd_str(&["XREAD", "STREAMS", "s", "$"]), s("_\r\n"));
}

#[test]
fn xread_argument_errors() {
    let server = start_server();
    let mut c = server.raw();
    let cases: &[(&[&str], &str)] = &[
        (
            &["XREAD", "STREAMS", "a", "b", "c"],
            "-ERR Unbalanced 'xread' list of streams: for each stream key an ID, '+', or '$' must be specified.\r\n",
        ),
        (
            &["XREAD", "BLOCK", "-1", "STREAMS", "a", "0"],
            "-ERR timeout is negative\r\n",
        ),
        (
            &["XREAD", "BLOCK", "1.5", "STREAMS", "a", "0"],
            "-ERR timeout is not an integer or out of range\r\n",
        ),
        (
            &["XREAD", "STREAMS", "a", ">"],
            "-ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.\r\n",
        ),
        (
            &["XREAD", "STREAMS", "a", "zz"],
            "-ERR Invalid stream ID specified as stream command argument\r\n",
        ),
        (
            &["XREAD", "NOACK", "STREAMS", "a", "0"],
            "-ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.\r\n",
        ),
        (&["XREAD", "COUNT", "1", "a", "0"], "-ERR syntax error\r\n"),
        (&["XREAD", "a", "b", "c"], "-ERR syntax error\r\n"),
    ];
    for (args, expected) in cases {
        assert_eq!(
            String::from_utf8_lossy(&c.cmd_str(args)),
            *expected,
            "{args:?}"
        );
    }
}

#[test]
fn blocked_xread_is_woken_by_xadd_from_another_connection() {
    let server = start_server();
    let mut reader = server.raw();
    let mut writer = server.raw();
    writer.cmd_str(&["XADD", "s", "1-1", "old", "1"]);
    send(
        &mut reader,
        &["XREAD", "BLOCK", "5000", "STREAMS", "s", "$"],
    );
    wait_blocked(&mut writer, 1);
    let list = String::from_utf8_lossy(&writer.cmd_str(&["CLIENT", "LIST"])).into_owned();
    assert!(list.contains("cmd=xread"), "{list}");
    assert_eq!(
        info_field(&mut writer, "clients", "total_blocking_keys").as_deref(),
        Some("1")
    );
    let start = Instant::now();
    writer.cmd_str(&["XADD", "s", "2-1", "new", "2"]);
    let reply = reader.read_reply();
    eprintln!("wake latency after XADD reply: {:?}", start.elapsed());
    assert_eq!(
        reply,
        s("*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n2-1\r\n*2\r\n$3\r\nnew\r\n$1\r\n2\r\n")
    );
    assert_eq!(
        info_field(&mut writer, "clients", "blocked_clients").as_deref(),
        Some("0")
    );
}

#[test]
fn block_timeout_returns_the_null_array_after_the_timeout() {
    let server = start_server();
    let mut c = server.raw();
    let start = Instant::now();
    assert_eq!(
        c.cmd_str(&["XREAD", "BLOCK", "300", "STREAMS", "s", "$"]),
        s("*-1\r\n")
    );
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(290), "{took:?}");
    assert!(took < Duration::from_millis(1500), "{took:?}");
    c.hello3();
    assert_eq!(
        c.cmd_str(&["XREAD", "BLOCK", "50", "STREAMS", "s", "$"]),
        s("_\r\n")
    );
}

#[test]
fn only_the_key_that_received_data_is_in_the_reply_and_count_is_honoured() {
    let server = start_server();
    let mut reader = server.raw();
    let mut writer = server.raw();
    send(
        &mut reader,
        &[
            "XREAD", "COUNT", "2", "BLOCK", "0", "STREAMS", "a", "b", "c", "$", "$", "$",
        ],
    );
    wait_blocked(&mut writer, 1);
    writer.send(&common::encode_cmd(&[b"MULTI"]));
    for id in ["1-1", "1-2", "1-3"] {
        writer.send(&common::encode_cmd(&[
            b"XADD",
            b"b",
            id.as_bytes(),
            b"f",
            b"v",
        ]));
    }
    writer.send(&common::encode_cmd(&[b"EXEC"]));
    let replies = writer.read_replies(5);
    assert_eq!(
        replies[4][0],
        b'*',
        "{:?}",
        String::from_utf8_lossy(&replies[4])
    );
    assert_eq!(
        reader.read_reply(),
        s(
            "*1\r\n*2\r\n$1\r\nb\r\n*2\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n*2\r\n$3\r\n1-2\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
        )
    );
}

#[test]
fn a_transaction_with_three_xadds_wakes_the_reader_once_with_all_three() {
    let server = start_server();
    let mut reader = server.raw();
    let mut writer = server.raw();
    send(&mut reader, &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    wait_blocked(&mut writer, 1);
    writer.send(&common::encode_cmd(&[b"MULTI"]));
    for id in ["1-1", "1-2", "1-3"] {
        writer.send(&common::encode_cmd(&[
            b"XADD",
            b"s",
            id.as_bytes(),
            b"f",
            b"v",
        ]));
    }
    writer.send(&common::encode_cmd(&[b"EXEC"]));
    writer.read_replies(5);
    let reply = String::from_utf8_lossy(&reader.read_reply()).into_owned();
    assert!(
        reply.starts_with("*1\r\n*2\r\n$1\r\ns\r\n*3\r\n"),
        "{reply}"
    );
}

#[test]
fn pipelined_xadd_then_del_still_serves_the_waiter() {
    let server = start_server();
    let mut reader = server.raw();
    let mut writer = server.raw();
    send(&mut reader, &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    wait_blocked(&mut writer, 1);
    writer.send(&common::encode_cmd(&[b"XADD", b"s", b"7-1", b"f", b"v"]));
    writer.send(&common::encode_cmd(&[b"DEL", b"s"]));
    assert_eq!(
        writer.read_replies(2),
        vec![s("$3\r\n7-1\r\n"), s(":1\r\n")]
    );
    assert_eq!(
        reader.read_reply(),
        s("*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n7-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n")
    );
}

#[test]
fn deleting_the_key_does_not_wake_xread_but_new_data_does() {
    let server = start_server();
    let mut reader = server.raw();
    let mut writer = server.raw();
    writer.cmd_str(&["XADD", "s", "5-1", "f", "v"]);
    send(&mut reader, &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    wait_blocked(&mut writer, 1);
    assert_eq!(writer.cmd_str(&["DEL", "s"]), s(":1\r\n"));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        info_field(&mut writer, "clients", "blocked_clients").as_deref(),
        Some("1")
    );
    // A new stream at the key: its entries after 5-1 are served.
    writer.cmd_str(&["XADD", "s", "3-1", "old", "1"]);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        info_field(&mut writer, "clients", "blocked_clients").as_deref(),
        Some("1")
    );
    writer.cmd_str(&["XADD", "s", "6-1", "new", "1"]);
    assert_eq!(
        reader.read_reply(),
        s("*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n6-1\r\n*2\r\n$3\r\nnew\r\n$1\r\n1\r\n")
    );
}

/// Redis's stream.tcl "XREAD: XADD + DEL + LPUSH should not awake client": the key
/// signalled by the XADD is a list when the transaction ends, so the reader is not
/// re-executed (no WRONGTYPE); it is served by the next stream at the key.
#[test]
fn xread_is_not_woken_when_the_key_ends_up_a_list() {
    let server = start_server();
    let mut reader = server.raw();
    let mut r = server.raw();
    r.cmd_str(&["DEL", "s1"]);
    send(
        &mut reader,
        &["XREAD", "BLOCK", "20000", "STREAMS", "s1", "$"],
    );
    wait_blocked(&mut r, 1);
    r.cmd_str(&["MULTI"]);
    r.cmd_str(&["XADD", "s1", "*", "old", "abcd1234"]);
    r.cmd_str(&["DEL", "s1"]);
    r.cmd_str(&["LPUSH", "s1", "foo", "bar"]);
    let exec = String::from_utf8_lossy(&r.cmd_str(&["EXEC"])).into_owned();
    assert!(exec.starts_with("*3\r\n$"), "{exec}");
    assert!(exec.ends_with(":1\r\n:2\r\n"), "{exec}");
    assert_eq!(
        info_field(&mut r, "clients", "blocked_clients").as_deref(),
        Some("1")
    );
    r.cmd_str(&["DEL", "s1"]);
    let id = String::from_utf8_lossy(&r.cmd_str(&["XADD", "s1", "*", "new", "abcd1234"]))
        .lines()
        .nth(1)
        .unwrap()
        .to_string();
    assert_eq!(
        String::from_utf8_lossy(&reader.read_reply()),
        format!(
            "*1\r\n*2\r\n$2\r\ns1\r\n*1\r\n*2\r\n${}\r\n{id}\r\n*2\r\n$3\r\nnew\r\n$8\r\nabcd1234\r\n",
            id.len()
        )
    );
}

/// Redis's stream.tcl "Blocking XREAD: key type changed with SET": a SET over the
/// stream leaves the reader blocked; the stream that comes back serves it.
#[test]
fn xread_stays_blocked_when_set_replaces_the_stream() {
    let server = start_server();
    let mut rd = server.raw();
    let mut r = server.raw();
    r.cmd_str(&["DEL", "mystream"]);
    r.cmd_str(&["XADD", "mystream", "666", "f", "v"]);
    send(
        &mut rd,
        &["XREAD", "BLOCK", "0", "STREAMS", "mystream", "$"],
    );
    wait_blocked(&mut r, 1);
    assert_eq!(r.cmd_str(&["SET", "mystream", "val1"]), s("+OK\r\n"));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        info_field(&mut r, "clients", "blocked_clients").as_deref(),
        Some("1")
    );
    r.cmd_str(&["DEL", "mystream"]);
    r.cmd_str(&["XADD", "mystream", "667", "f", "v"]);
    assert_eq!(
        rd.read_reply(),
        s("*1\r\n*2\r\n$8\r\nmystream\r\n*1\r\n*2\r\n$5\r\n667-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n")
    );
}

/// A reader left blocked by a type change keeps its original deadline, and a BLPOP is
/// not woken by a stream either (Redis serves only the type a client waits for).
#[test]
fn a_type_change_keeps_the_deadline_and_other_blockers_wait_for_their_type() {
    let server = start_server();
    let mut rd = server.raw();
    let mut lp = server.raw();
    let mut r = server.raw();
    r.cmd_str(&["XADD", "s", "1-1", "f", "v"]);
    let start = Instant::now();
    send(&mut rd, &["XREAD", "BLOCK", "400", "STREAMS", "s", "$"]);
    send(&mut lp, &["BLPOP", "l", "0"]);
    wait_blocked(&mut r, 2);
    r.cmd_str(&["SET", "s", "x"]);
    r.cmd_str(&["XADD", "l", "1-1", "f", "v"]);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        info_field(&mut r, "clients", "blocked_clients").as_deref(),
        Some("2")
    );
    assert_eq!(rd.read_reply(), s("*-1\r\n"));
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(390) && waited < Duration::from_millis(2000),
        "{waited:?}"
    );
    r.cmd_str(&["DEL", "l"]);
    r.cmd_str(&["RPUSH", "l", "a"]);
    assert_eq!(lp.read_reply(), s("*2\r\n$1\r\nl\r\n$1\r\na\r\n"));
}

/// XREADGROUP unblocks on any change of the key: a type change answers WRONGTYPE.
#[test]
fn xreadgroup_is_woken_by_a_type_change_with_wrongtype() {
    let server = start_server();
    let mut rd = server.raw();
    let mut r = server.raw();
    r.cmd_str(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    send(
        &mut rd,
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
    );
    wait_blocked(&mut r, 1);
    r.cmd_str(&["SET", "s", "x"]);
    assert_eq!(
        rd.read_reply(),
        s("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n")
    );
    // Redis's stream-cgroups.tcl "Blocking XREADGROUP: key type changed with
    // transaction": DEL and SADD in one EXEC.
    r.cmd_str(&["DEL", "s"]);
    r.cmd_str(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    send(
        &mut rd,
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
    );
    wait_blocked(&mut r, 1);
    r.cmd_str(&["MULTI"]);
    r.cmd_str(&["DEL", "s"]);
    r.cmd_str(&["SADD", "s", "e1"]);
    r.cmd_str(&["EXEC"]);
    assert_eq!(
        rd.read_reply(),
        s("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n")
    );
}

#[test]
fn client_unblock_with_timeout_and_error() {
    let server = start_server();
    let mut reader = server.raw();
    let mut admin = server.raw();
    let id = String::from_utf8_lossy(&reader.cmd_str(&["CLIENT", "ID"]))
        .trim_start_matches(':')
        .trim()
        .to_string();
    send(&mut reader, &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    wait_blocked(&mut admin, 1);
    assert_eq!(admin.cmd_str(&["CLIENT", "UNBLOCK", &id]), s(":1\r\n"));
    assert_eq!(reader.read_reply(), s("*-1\r\n"));
    send(&mut reader, &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    wait_blocked(&mut admin, 1);
    assert_eq!(
        admin.cmd_str(&["CLIENT", "UNBLOCK", &id, "ERROR"]),
        s(":1\r\n")
    );
    assert_eq!(
        reader.read_reply(),
        s("-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n")
    );
    assert_eq!(admin.cmd_str(&["CLIENT", "UNBLOCK", &id]), s(":0\r\n"));
    assert_eq!(
        admin.cmd_str(&["CLIENT", "UNBLOCK", &id, "MAYBE"]),
        s("-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n")
    );
    // The reader is usable again after being unblocked.
    assert_eq!(reader.cmd_str(&["PING"]), s("+PONG\r\n"));
}

#[test]
fn a_client_that_disconnects_while_blocked_is_forgotten() {
    let server = start_server();
    let mut admin = server.raw();
    {
        let mut reader = server.raw();
        send(&mut reader, &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
        wait_blocked(&mut admin, 1);
    }
    wait_blocked(&mut admin, 0);
    assert_eq!(
        info_field(&mut admin, "clients", "total_blocking_keys").as_deref(),
        Some("0")
    );
    admin.cmd_str(&["XADD", "s", "1-1", "f", "v"]);
    assert_eq!(admin.cmd_str(&["PING"]), s("+PONG\r\n"));
}

#[test]
fn blocking_inside_multi_answers_null_at_once() {
    let server = start_server();
    let mut c = server.raw();
    c.cmd_str(&["MULTI"]);
    assert_eq!(
        c.cmd_str(&["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]),
        s("+QUEUED\r\n")
    );
    assert_eq!(c.cmd_str(&["EXEC"]), s("*1\r\n*-1\r\n"));
}

#[test]
fn many_readers_on_many_keys_are_all_woken() {
    let server = start_server();
    let mut writer = server.raw();
    let mut readers: Vec<Raw> = (0..50).map(|_| server.raw()).collect();
    for (i, r) in readers.iter_mut().enumerate() {
        send(
            r,
            &["XREAD", "BLOCK", "10000", "STREAMS", &format!("k{i}"), "$"],
        );
    }
    wait_blocked(&mut writer, 50);
    for i in 0..50 {
        writer.cmd_str(&["XADD", &format!("k{i}"), "*", "n", &i.to_string()]);
    }
    for (i, r) in readers.iter_mut().enumerate() {
        let reply = String::from_utf8_lossy(&r.read_reply()).into_owned();
        assert!(reply.contains(&format!("k{i}\r\n")), "{reply}");
    }
}

#[test]
fn every_reader_of_a_hot_key_gets_the_entry_in_blocking_order() {
    let server = start_server();
    let mut writer = server.raw();
    let mut readers: Vec<Raw> = (0..20).map(|_| server.raw()).collect();
    for r in readers.iter_mut() {
        send(r, &["XREAD", "BLOCK", "0", "STREAMS", "hot", "$"]);
    }
    wait_blocked(&mut writer, 20);
    writer.cmd_str(&["XADD", "hot", "1-1", "f", "v"]);
    for r in readers.iter_mut() {
        assert!(String::from_utf8_lossy(&r.read_reply()).contains("1-1"));
    }
}

#[test]
fn blocked_xreadgroup_claim_wakes_when_a_pending_entry_becomes_idle_enough() {
    let server = start_server();
    let mut c = server.raw();
    c.cmd_str(&["XADD", "s", "1-1", "f", "v"]);
    c.cmd_str(&["XGROUP", "CREATE", "s", "g", "0"]);
    // alice takes the entry and never acks it.
    c.cmd_str(&["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"]);
    let mut bob = server.raw();
    let start = Instant::now();
    send(
        &mut bob,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "bob",
            "CLAIM",
            "300",
            "BLOCK",
            "5000",
            "STREAMS",
            "s",
            ">",
        ],
    );
    let reply = String::from_utf8_lossy(&bob.read_reply()).into_owned();
    let took = start.elapsed();
    assert!(reply.contains("1-1"), "{reply}");
    assert!(
        took >= Duration::from_millis(250),
        "woken before the entry was idle: {took:?}"
    );
    assert!(
        took < Duration::from_millis(2500),
        "not woken by the idle timer: {took:?}"
    );
    // bob owns it now.
    let pending =
        String::from_utf8_lossy(&c.cmd_str(&["XPENDING", "s", "g", "-", "+", "10"])).into_owned();
    assert!(pending.contains("bob"), "{pending}");
}

#[test]
fn a_woken_reader_still_honours_maxcount_across_streams() {
    let server = start_server();
    let mut reader = server.raw();
    let mut greader = server.raw();
    let mut writer = server.raw();
    for key in ["a", "b"] {
        writer.cmd_str(&["XGROUP", "CREATE", key, "g", "$", "MKSTREAM"]);
    }
    send(
        &mut reader,
        &[
            "XREAD", "MAXCOUNT", "2", "BLOCK", "0", "STREAMS", "a", "b", "$", "$",
        ],
    );
    send(
        &mut greader,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "c",
            "MAXCOUNT",
            "2",
            "BLOCK",
            "0",
            "STREAMS",
            "a",
            "b",
            ">",
            ">",
        ],
    );
    wait_blocked(&mut writer, 2);
    writer.send(&common::encode_cmd(&[b"MULTI"]));
    for (key, id) in [("a", "1-1"), ("b", "1-1"), ("b", "1-2")] {
        writer.send(&common::encode_cmd(&[
            b"XADD",
            key.as_bytes(),
            id.as_bytes(),
            b"f",
            b"v",
        ]));
    }
    writer.send(&common::encode_cmd(&[b"EXEC"]));
    writer.read_replies(5);
    let want = "*2\r\n*2\r\n$1\r\na\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n\
                *2\r\n$1\r\nb\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n";
    assert_eq!(String::from_utf8_lossy(&reader.read_reply()), want);
    assert_eq!(String::from_utf8_lossy(&greader.read_reply()), want);
    // The group got b 1-2 neither pending nor past its cursor.
    let pending = writer.cmd_str(&["XPENDING", "b", "g"]);
    assert!(pending.starts_with(b"*4\r\n:1\r\n$3\r\n1-1\r\n$3\r\n1-1\r\n"));
    let info = String::from_utf8_lossy(&writer.cmd_str(&["XINFO", "GROUPS", "b"])).into_owned();
    assert!(
        info.contains("last-delivered-id\r\n$3\r\n1-1\r\n"),
        "{info}"
    );
}

/// MONITOR shows a blocked command once, when it blocks, not again when a write serves
/// it (Redis's "MONITOR log blocked command only once"); the same lines as Redis's.
#[test]
fn monitor_shows_a_blocked_command_once() {
    let redis = redis_server();
    let ours = start_server();
    let run = |port: u16| -> Vec<String> {
        let mut mon = Raw::connect(port);
        assert_eq!(mon.cmd_str(&["MONITOR"]), b"+OK\r\n");
        let mut blocked = Raw::connect(port);
        let mut w = Raw::connect(port);
        blocked.send(&encode_cmd(&[b"BLPOP", b"mylist", b"0"]));
        wait_blocked(&mut w, 1);
        w.cmd_str(&["LPUSH", "mylist", "1"]);
        blocked.read_reply();
        blocked.send(&encode_cmd(&[
            b"XREAD", b"BLOCK", b"0", b"STREAMS", b"s", b"$",
        ]));
        wait_blocked(&mut w, 1);
        w.cmd_str(&["XADD", "s", "1-1", "f", "v"]);
        blocked.read_reply();
        w.cmd_str(&["LPUSH", "mylist", "2"]);
        // The command part of each line, less the INFO polls of wait_blocked.
        let mut lines = Vec::new();
        while lines.last().is_none_or(|l: &String| !l.contains("\"2\"")) {
            let line = String::from_utf8_lossy(&mon.read_reply()).into_owned();
            let cmd = line
                .split_once("] ")
                .map_or(line.clone(), |(_, c)| c.to_string());
            if !cmd.starts_with("\"INFO\"") && !cmd.starts_with("\"info\"") {
                lines.push(cmd);
            }
        }
        lines
    };
    let theirs = run(redis.port);
    assert_eq!(run(ours.port), theirs);
    assert_eq!(theirs.len(), 5, "{theirs:?}");
}
