//! Synchronous replication (`min-sync-replicas`, docs/replication.md "Synchronous
//! replicas"): a primary and streamd replicas on free 127.0.0.1 ports. A replica is
//! stopped with SIGSTOP to hold its ACKs back, so "the reply waits for the sync set" is
//! reached by construction; every wait polls a condition (INFO's `sync_*` fields) with a
//! deadline, and the only durations are the server's own `sync-replicas-timeout`.

mod common;

use common::{Server, info_field, start_server_with};
use std::time::{Duration, Instant};

/// How long an awaited condition may take (the machine may be busy).
const PATIENCE: Duration = Duration::from_secs(30);

/// Polls `cond` until it holds; panics with `what` after [`PATIENCE`].
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn field(server: &Server, name: &str) -> String {
    info_field(&mut server.raw(), "replication", name).unwrap_or_default()
}

fn signal(server: &Server, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, &server.pid().to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill {sig} {}", server.pid());
}

/// A primary with the mode switched on at run time (a primary started with it is
/// fenced, see `a_primary_started_with_the_mode_is_fenced_until_confirmed`).
fn sync_primary(timeout_ms: u64) -> Server {
    let timeout = timeout_ms.to_string();
    let p = start_server_with(&["--sync-replicas-timeout", &timeout]);
    let ok = p
        .raw()
        .cmd_str(&["CONFIG", "SET", "min-sync-replicas", "1"]);
    assert_eq!(ok, b"+OK\r\n");
    p
}

/// A replica of `p` with the mode on (so it is fenced outside the set).
fn sync_replica(p: &Server) -> Server {
    let port = p.port.to_string();
    start_server_with(&[
        "--replicaof",
        "127.0.0.1",
        &port,
        "--min-sync-replicas",
        "1",
    ])
}

/// A primary with the mode on (timeout `timeout_ms`) and one replica in its sync set.
fn primary_and_member(timeout_ms: u64) -> (Server, Server) {
    let p = sync_primary(timeout_ms);
    let r = sync_replica(&p);
    wait_until("the replica to join the sync set", || {
        field(&p, "sync_replicas") == "1" && field(&r, "sync_replica_member") == "1"
    });
    (p, r)
}

#[test]
fn a_primary_without_its_sync_set_refuses_writes_but_answers_reads() {
    let p = sync_primary(10_000);
    let mut c = p.raw();
    assert_eq!(
        c.cmd_str(&["XADD", "s", "*", "f", "v"]),
        b"-NOREPLICAS Not enough good replicas to write.\r\n"
    );
    assert_eq!(c.cmd_str(&["XLEN", "s"]), b":0\r\n");
    assert_eq!(c.cmd_str(&["PING"]), b"+PONG\r\n");
    assert_eq!(field(&p, "sync_write_refusals"), "1");
    // The mode off: writes go through as always.
    assert_eq!(
        c.cmd_str(&["CONFIG", "SET", "min-sync-replicas", "0"]),
        b"+OK\r\n"
    );
    assert_eq!(c.cmd_str(&["SET", "k", "v"]), b"+OK\r\n");
}

#[test]
fn a_reply_waits_until_the_sync_set_has_the_write() {
    let (p, r) = primary_and_member(20_000);
    let mut c = p.raw();
    let mut on_replica = r.raw();
    // Every acknowledged write is on the replica by the time its reply arrives.
    for i in 0..200 {
        let reply = c.cmd_str(&["XADD", "s", "*", "i", &i.to_string()]);
        assert!(reply.starts_with(b"$"), "{reply:?}");
        let len = on_replica.cmd_str(&["XLEN", "s"]);
        assert_eq!(len, format!(":{}\r\n", i + 1).as_bytes());
    }
    // With the replica stopped, a write (and a reader it wakes) is held...
    let mut reader = p.raw();
    reader.send(&common::encode_cmd(&[
        b"XREAD", b"BLOCK", b"0", b"STREAMS", b"s", b"$",
    ]));
    wait_until("the reader to block", || {
        common::blocked_clients(&mut p.raw()) == 1
    });
    signal(&r, "-STOP");
    c.send(&common::encode_cmd(&[b"XADD", b"s", b"*", b"i", b"held"]));
    wait_until("two held replies", || field(&p, "sync_held_replies") == "2");
    // ... while other clients' commands that show no data are not.
    assert_eq!(p.raw().cmd_str(&["PING"]), b"+PONG\r\n");
    assert!(field(&p, "sync_oldest_held_ms").parse::<u64>().is_ok());
    // Resumed, the replica ACKs and both replies go out.
    signal(&r, "-CONT");
    let reply = c.read_reply();
    assert!(reply.starts_with(b"$"), "{reply:?}");
    let delivered = reader.read_reply();
    assert!(delivered.windows(4).any(|w| w == b"held"), "{delivered:?}");
    assert_eq!(on_replica.cmd_str(&["XLEN", "s"]), b":201\r\n");
    assert_eq!(field(&p, "sync_held_replies"), "0");
}

#[test]
fn a_held_write_times_out_with_an_error_and_is_never_acknowledged_later() {
    let (p, r) = primary_and_member(300);
    let mut c = p.raw();
    assert!(c.cmd_str(&["SET", "a", "1"]).starts_with(b"+OK"));
    signal(&r, "-STOP");
    // Two commands in one batch: each reply becomes the error.
    c.send(
        &[
            common::encode_cmd(&[b"SET", b"a", b"2"]),
            common::encode_cmd(&[b"GET", b"a"]),
        ]
        .concat(),
    );
    let first = c.read_reply();
    let second = c.read_reply();
    signal(&r, "-CONT");
    for reply in [&first, &second] {
        assert!(reply.starts_with(b"-TIMEOUT "), "{reply:?}");
    }
    assert_eq!(field(&p, "sync_timeouts"), "1");
    // Once the replica is back, the set releases new replies again.
    assert_eq!(c.cmd_str(&["GET", "a"]), b"$1\r\n2\r\n");
}

#[test]
fn only_a_member_of_the_sync_set_can_be_promoted() {
    // A replica whose primary does not run the mode is in no sync set: fenced.
    let plain = start_server_with(&[]);
    let port = plain.port.to_string();
    let outsider = start_server_with(&[
        "--replicaof",
        "127.0.0.1",
        &port,
        "--min-sync-replicas",
        "1",
    ]);
    wait_until("the outsider's link", || {
        field(&outsider, "master_link_status") == "up"
    });
    assert_eq!(field(&outsider, "slave_priority"), "0");
    let refused = outsider.raw().cmd_str(&["REPLICAOF", "NO", "ONE"]);
    assert!(refused.starts_with(b"-ERR this replica is not in its primary's sync set"));
    assert_eq!(field(&outsider, "role"), "slave");
    assert_eq!(field(&outsider, "sync_promotion_refusals"), "1");

    // A member is promotable, and the new primary starts with an empty set.
    let (p, r) = primary_and_member(5_000);
    assert_eq!(field(&r, "slave_priority"), "100");
    assert!(p.raw().cmd_str(&["SET", "k", "v"]).starts_with(b"+OK"));
    assert_eq!(r.raw().cmd_str(&["REPLICAOF", "NO", "ONE"]), b"+OK\r\n");
    assert_eq!(field(&r, "role"), "master");
    assert_eq!(
        r.raw().cmd_str(&["SET", "k", "w"]),
        b"-NOREPLICAS Not enough good replicas to write.\r\n"
    );
    // Its old primary, now following it, joins its set; writes go through again.
    let rport = r.port.to_string();
    assert!(
        p.raw()
            .cmd_str(&["REPLICAOF", "127.0.0.1", &rport])
            .starts_with(b"+OK")
    );
    wait_until("the old primary to join the new set", || {
        field(&r, "sync_replicas") == "1"
    });
    assert!(r.raw().cmd_str(&["SET", "k", "w"]).starts_with(b"+OK"));
    assert_eq!(p.raw().cmd_str(&["GET", "k"]), b"$1\r\nw\r\n");
}

#[test]
fn a_member_leaves_only_after_making_itself_unpromotable() {
    let (p, r) = primary_and_member(20_000);
    let addr = format!("127.0.0.1:{}", r.port);
    assert_eq!(p.raw().cmd_str(&["SYNCSET", "REMOVE", &addr]), b"+OK\r\n");
    wait_until("the member to leave", || field(&p, "sync_replicas") == "0");
    // It applied the record that left it out before its ACK let it go.
    assert_eq!(field(&r, "sync_replica_member"), "0");
    assert!(
        r.raw()
            .cmd_str(&["REPLICAOF", "NO", "ONE"])
            .starts_with(b"-ERR this replica")
    );
    assert_eq!(
        p.raw().cmd_str(&["SET", "k", "v"]),
        b"-NOREPLICAS Not enough good replicas to write.\r\n"
    );
    // Removed, it does not join again by itself; SYNCSET ADD lets it.
    assert_eq!(p.raw().cmd_str(&["SYNCSET", "LIST"]), b"*0\r\n");
    assert_eq!(p.raw().cmd_str(&["SYNCSET", "ADD", &addr]), b"+OK\r\n");
    wait_until("the replica to join again", || {
        field(&p, "sync_replicas") == "1" && field(&r, "sync_replica_member") == "1"
    });
    assert!(p.raw().cmd_str(&["SET", "k", "v"]).starts_with(b"+OK"));
    let list = p.raw().cmd_str(&["SYNCSET", "LIST"]);
    assert!(
        list.windows(addr.len()).any(|w| w == addr.as_bytes()),
        "{list:?}"
    );
    // Unknown names and a missing attestation are refused.
    assert!(
        p.raw()
            .cmd_str(&["SYNCSET", "REMOVE", "nobody"])
            .starts_with(b"-ERR no sync set member")
    );
    assert!(
        p.raw()
            .cmd_str(&["SYNCSET", "FORGET", &addr, "yes"])
            .starts_with(b"-ERR SYNCSET FORGET")
    );
    assert!(
        r.raw()
            .cmd_str(&["SYNCSET", "REMOVE", &addr])
            .starts_with(b"-ERR SYNCSET changes")
    );
}

#[test]
fn forgetting_a_dead_member_fails_the_replies_held_for_it() {
    let (p, r) = primary_and_member(60_000);
    let addr = format!("127.0.0.1:{}", r.port);
    signal(&r, "-STOP");
    let mut c = p.raw();
    c.send(&common::encode_cmd(&[b"SET", b"k", b"v"]));
    wait_until("a held reply", || field(&p, "sync_held_replies") == "1");
    let forget = p
        .raw()
        .cmd_str(&["SYNCSET", "FORGET", &addr, "I-ATTEST-IT-IS-DEAD"]);
    assert_eq!(forget, b"+OK\r\n");
    // At once, not after the 60 s timeout: a smaller set never acknowledges it.
    let reply = c.read_reply();
    assert!(reply.starts_with(b"-TIMEOUT "), "{reply:?}");
    assert_eq!(field(&p, "sync_replicas"), "0");
    signal(&r, "-CONT");
}

#[test]
fn a_primary_started_with_the_mode_is_fenced_until_confirmed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let port = common::free_port();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_streamd"))
        .args([
            "--port",
            &port.to_string(),
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .arg("--dir")
        .arg(dir.path())
        .args(["--min-sync-replicas", "1"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn streamd");
    let mut c = None;
    wait_until("the fenced primary to answer INFO", || {
        c = common::Raw::try_connect(port).ok();
        c.as_mut().is_some_and(|c| {
            c.try_send(&common::encode_cmd(&[b"INFO", b"server"]))
                .is_ok()
                && c.try_read_reply().is_ok_and(|r| r.starts_with(b"$"))
        })
    });
    let mut c = c.expect("connected");
    let fenced = c.cmd_str(&["PING"]);
    assert!(
        fenced.starts_with(b"-LOADING this primary restarted"),
        "{fenced:?}"
    );
    assert!(c.cmd_str(&["SET", "k", "v"]).starts_with(b"-LOADING"));
    assert!(c.cmd_str(&["PSYNC", "?", "-1"]).starts_with(b"-LOADING"));
    assert_eq!(c.cmd_str(&["SYNCSET", "CONFIRM"]), b"+OK\r\n");
    assert_eq!(c.cmd_str(&["PING"]), b"+PONG\r\n");
    // Serving again, it still needs its sync set for writes.
    assert!(c.cmd_str(&["SET", "k", "v"]).starts_with(b"-NOREPLICAS"));
    let _ = child.kill();
    let _ = child.wait();
}
