//! Client limits: `maxclients`, `timeout` (never for blocked, MONITOR or subscribed clients),
//! `tcp-keepalive`, `client-query-buffer-limit`, `client-output-buffer-limit`, and
//! `maxmemory` with `noeviction`. Where Redis 7 has the same behaviour, the same bytes
//! are sent to `redis-server` and the replies compared.

mod common;

use common::{Raw, escape, redis_server, start_server_with};
use std::io::Write;
use std::time::Duration;

/// One `field:value` line of INFO, as a number.
fn info_field(raw: &mut Raw, field: &str) -> u64 {
    let info = raw.cmd_str(&["INFO", "everything"]);
    let text = String::from_utf8_lossy(&info);
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in INFO"))
}

#[test]
fn maxclients_refuses_the_connection_over_the_limit() {
    let server = start_server_with(&["--maxclients", "3"]);
    let mut conns: Vec<Raw> = (0..3).map(|_| server.raw()).collect();
    for c in &mut conns {
        assert_eq!(c.cmd_str(&["PING"]), b"+PONG\r\n");
    }
    let mut extra = server.raw();
    assert_eq!(
        extra.read_to_close(),
        b"-ERR max number of clients reached\r\n"
    );
    drop(conns.pop());
    // Once one leaves, a new client gets in (the server notices the close first).
    let mut again = loop {
        let mut c = server.raw();
        c.send(b"PING\r\n");
        match c.try_read_reply() {
            Ok(r) if r == b"+PONG\r\n" => break c,
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    assert!(info_field(&mut again, "rejected_connections") >= 1);
}

#[test]
fn idle_clients_are_closed_but_blocked_and_monitor_clients_are_not() {
    let server = start_server_with(&["--timeout", "1"]);
    let mut blocked = server.raw();
    blocked.send(&common::encode_cmd(&[
        b"XREAD", b"BLOCK", b"0", b"STREAMS", b"s", b"$",
    ]));
    let mut monitor = server.raw();
    assert_eq!(monitor.cmd_str(&["MONITOR"]), b"+OK\r\n");
    let mut idle = server.raw();
    assert_eq!(idle.cmd_str(&["PING"]), b"+PONG\r\n");
    // The idle client is closed after its timeout, without a reply...
    assert_eq!(idle.read_to_close(), b"");
    // ...while the blocked one, older than it, still waits and is served.
    let mut writer = server.raw();
    assert_eq!(
        writer.cmd_str(&["XADD", "s", "1-1", "f", "v"]),
        b"$3\r\n1-1\r\n"
    );
    let reply = blocked.read_reply();
    assert!(
        reply.starts_with(b"*1\r\n*2\r\n$1\r\ns\r\n"),
        "{}",
        escape(&reply)
    );
    // The MONITOR client is still there and saw the XADD (after the PINGs).
    let saw_xadd = (0..10)
        .any(|_| String::from_utf8_lossy(&monitor.read_reply()).contains("\"XADD\" \"s\" \"1-1\""));
    assert!(saw_xadd);
    // After being served, the formerly blocked client is an idle client like any other.
    assert_eq!(blocked.read_to_close(), b"");
    // CONFIG SET timeout 0 turns it off for clients already connected.
    let mut keeper = server.raw();
    assert_eq!(
        keeper.cmd_str(&["CONFIG", "SET", "timeout", "0"]),
        b"+OK\r\n"
    );
    keeper.set_timeout(Duration::from_millis(2500));
    assert!(!keeper.is_closed(), "closed although timeout is 0");
    assert_eq!(keeper.cmd_str(&["PING"]), b"+PONG\r\n");
}

/// `CONFIG SET timeout` on the server at `port`, then: the client that has waited since
/// before it is closed once idle that long, while a client that keeps sending commands
/// (every 200 ms) is not. True if the idle one was closed within 20 s.
fn timeout_set_at_run_time(port: u16) -> bool {
    let mut idle = Raw::connect(port);
    assert_eq!(idle.cmd_str(&["PING"]), b"+PONG\r\n");
    let mut active = Raw::connect(port);
    assert_eq!(
        active.cmd_str(&["CONFIG", "SET", "timeout", "1"]),
        b"+OK\r\n"
    );
    idle.set_timeout(Duration::from_millis(200));
    let closed = (0..100).any(|_| {
        assert_eq!(active.cmd_str(&["PING"]), b"+PONG\r\n");
        idle.is_closed()
    });
    assert_eq!(active.cmd_str(&["PING"]), b"+PONG\r\n");
    closed
}

#[test]
fn a_timeout_set_at_run_time_reaches_clients_already_waiting() {
    let server = start_server_with(&[]);
    assert!(
        timeout_set_at_run_time(server.port),
        "the idle client is still connected 20 s after CONFIG SET timeout 1"
    );
    let redis = redis_server();
    assert!(timeout_set_at_run_time(redis.port), "redis-server differs");
}

#[test]
fn tcp_keepalive_is_set_on_accepted_sockets() {
    let server = start_server_with(&["--tcp-keepalive", "77"]);
    let mut raw = server.raw();
    assert_eq!(raw.cmd_str(&["PING"]), b"+PONG\r\n");
    let out = std::process::Command::new(common::require_program("ss", "iproute2"))
        .args(["-tnoH", "state", "established"])
        .args(["(", "sport", "=", &format!(":{}", server.port), ")"])
        .output()
        .expect("run ss");
    let text = String::from_utf8_lossy(&out.stdout);
    // ss shows the keepalive timer of the server's socket, counting down from 77 s.
    assert!(text.contains("timer:(keepalive,"), "{text}");
}

/// Sends a bulk larger than `limit` to `port` after lowering its query buffer limit, and
/// returns what the server answered before closing.
fn overflow_query_buffer(port: u16) -> Vec<u8> {
    let mut admin = Raw::connect(port);
    assert_eq!(
        admin.cmd_str(&["CONFIG", "SET", "client-query-buffer-limit", "1mb"]),
        b"+OK\r\n"
    );
    let mut raw = Raw::connect(port);
    raw.send(b"*2\r\n$4\r\nECHO\r\n$3000000\r\n");
    let chunk = vec![b'x'; 64 * 1024];
    for _ in 0..(1_100_000 / chunk.len() + 1) {
        // The server may close before everything is sent.
        if raw.stream.write_all(&chunk).is_err() {
            break;
        }
    }
    let reply = raw.read_to_close();
    assert_eq!(admin.cmd_str(&["PING"]), b"+PONG\r\n");
    reply
}

#[test]
fn a_client_over_the_query_buffer_limit_is_closed_without_a_reply() {
    let server = start_server_with(&[]);
    assert_eq!(overflow_query_buffer(server.port), b"");
    let mut raw = server.raw();
    assert_eq!(
        info_field(&mut raw, "client_query_buffer_limit_disconnections"),
        1
    );
    let redis = redis_server();
    assert_eq!(
        overflow_query_buffer(redis.port),
        b"",
        "redis-server differs"
    );
}

/// Fills `s` with 1,000 entries of 1 KiB (a full XRANGE is about 1 MiB).
fn fill(raw: &mut Raw) {
    let value = vec![b'v'; 1024];
    let mut batch = Vec::new();
    for _ in 0..1000 {
        batch.extend(common::encode_cmd(&[b"XADD", b"s", b"*", b"f", &value]));
    }
    raw.send(&batch);
    for _ in 0..1000 {
        raw.read_reply();
    }
}

/// Pipelines 40 full XRANGEs (about 40 MiB of replies) without reading any, on a
/// server whose normal clients may hold 4 MiB; returns whether the server closed the
/// connection before all replies came.
fn stop_reading_xrange_replies(port: u16) -> bool {
    let mut admin = Raw::connect(port);
    assert_eq!(
        admin.cmd_str(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 4mb 1mb 1"
        ]),
        b"+OK\r\n"
    );
    fill(&mut admin);
    let mut reader = Raw::connect(port);
    let mut batch = Vec::new();
    for _ in 0..40 {
        batch.extend(common::encode_cmd(&[b"XRANGE", b"s", b"-", b"+"]));
    }
    reader.send(&batch);
    std::thread::sleep(Duration::from_millis(300));
    let got = reader.read_to_close();
    let mut complete = 0;
    let mut at = 0;
    while let Ok(Some(n)) = common::reply_len(&got[at..]) {
        at += n;
        complete += 1;
    }
    assert_eq!(admin.cmd_str(&["PING"]), b"+PONG\r\n");
    complete < 40
}

#[test]
fn a_consumer_that_stops_reading_is_disconnected_at_the_output_limit() {
    let server = start_server_with(&[]);
    assert!(stop_reading_xrange_replies(server.port));
    let mut raw = server.raw();
    assert_eq!(
        info_field(&mut raw, "client_output_buffer_limit_disconnections"),
        1
    );
    let redis = redis_server();
    assert!(
        stop_reading_xrange_replies(redis.port),
        "redis-server differs"
    );
}

#[test]
fn a_monitor_that_stops_reading_is_disconnected_at_the_output_limit() {
    let server = start_server_with(&["--client-output-buffer-limit", "normal", "1mb", "0", "0"]);
    let mut monitor = server.raw();
    assert_eq!(monitor.cmd_str(&["MONITOR"]), b"+OK\r\n");
    // Every XADD of 64 KiB becomes a MONITOR line of the same size; the monitor reads
    // nothing, so its queue passes 1 MiB long before the 64 MiB are sent.
    let mut writer = server.raw();
    let value = vec![b'v'; 64 * 1024];
    let mut raw = server.raw();
    for i in 0..1024 {
        writer.cmd(&[b"XADD", b"m", b"*", b"f", &value]);
        if i % 64 == 63 && info_field(&mut raw, "client_output_buffer_limit_disconnections") == 1 {
            break;
        }
    }
    assert_eq!(
        info_field(&mut raw, "client_output_buffer_limit_disconnections"),
        1
    );
    assert!(monitor.is_closed());
}

/// Runs the maxmemory script on `port` and returns every reply.
fn maxmemory_script(port: u16) -> Vec<Vec<u8>> {
    let mut raw = Raw::connect(port);
    let mut replies = Vec::new();
    for cmd in [
        &["XADD", "s", "1-1", "f", "v"][..],
        &["XADD", "s", "2-1", "f", "v"],
        &["XGROUP", "CREATE", "s", "g", "0"],
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
        &["CONFIG", "SET", "maxmemory", "1"],
        // Commands that may grow memory are refused...
        &["XADD", "s", "*", "f", "v"],
        &["XGROUP", "CREATE", "s", "g2", "$"],
        &["XGROUP", "CREATECONSUMER", "s", "g", "c2"],
        &["XSETID", "s", "3-1"],
        &["COPY", "s", "t"],
        // ...reads, acks, deliveries and deletes are not.
        &["XLEN", "s"],
        &["XRANGE", "s", "-", "+"],
        &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"],
        &["XACK", "s", "g", "1-1"],
        &["XPENDING", "s", "g"],
        &["XDEL", "s", "1-1"],
        &["XTRIM", "s", "MAXLEN", "5"],
        // Inside MULTI everything but EXEC/DISCARD is refused, dooming the EXEC.
        &["MULTI"],
        &["XLEN", "s"],
        &["EXEC"],
        &["CONFIG", "SET", "maxmemory", "0"],
        &["XADD", "s", "9-1", "f", "v"],
        &["DEL", "s"],
    ] {
        replies.push(raw.cmd_str(cmd));
    }
    replies
}

#[test]
fn at_maxmemory_writes_that_grow_memory_are_refused_and_the_rest_works() {
    let server = start_server_with(&[]);
    let got = maxmemory_script(server.port);
    let oom = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n".to_vec();
    assert_eq!(got[5], oom);
    assert_eq!(got[6], oom);
    assert_eq!(got[10], b":2\r\n");
    assert_eq!(got[13], b":1\r\n");
    assert_eq!(got[15], b":1\r\n");
    assert_eq!(got[18], oom);
    assert_eq!(
        got[19],
        b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    );
    assert_eq!(got[21], b"$3\r\n9-1\r\n");
    let redis = redis_server();
    let want = maxmemory_script(redis.port);
    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
        assert_eq!(escape(a), escape(b), "reply {i} differs from redis-server");
    }
}

#[test]
fn used_memory_comes_from_the_allocator_and_follows_the_data() {
    let server = start_server_with(&[]);
    let mut raw = server.raw();
    let before = info_field(&mut raw, "used_memory");
    fill(&mut raw);
    let after = info_field(&mut raw, "used_memory");
    // 1,000 entries of 1 KiB: at least 1 MB more.
    assert!(after >= before + 1_000_000, "{before} -> {after}");
    assert_eq!(raw.cmd_str(&["DEL", "s"]), b":1\r\n");
    let freed = info_field(&mut raw, "used_memory");
    assert!(freed + 900_000 <= after, "{after} -> {freed}");
}
