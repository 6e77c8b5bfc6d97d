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
    let mut child = spawn_streamd(port, dir.path(), &[]);
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
    // A Sentinel whose hello names this server the primary gets an error it does not
    // count as "available" (it counts -LOADING); one naming another primary, and
    // every other connection, still get -LOADING.
    let hello = |port: u16| format!("127.0.0.1,26379,{},1,m,127.0.0.1,{port},1", "a".repeat(40));
    let mut sentinel = common::Raw::connect(port);
    let published = sentinel.cmd_str(&["PUBLISH", "__sentinel__:hello", &hello(port)]);
    assert_eq!(published, b":0\r\n");
    let to_sentinel = sentinel.cmd_str(&["PING"]);
    assert!(to_sentinel.starts_with(b"-FENCED "), "{to_sentinel:?}");
    assert!(c.cmd_str(&["PING"]).starts_with(b"-LOADING"));
    let elsewhere = hello(port.wrapping_add(1));
    sentinel.cmd_str(&["PUBLISH", "__sentinel__:hello", &elsewhere]);
    assert!(sentinel.cmd_str(&["PING"]).starts_with(b"-LOADING"));
    assert_eq!(c.cmd_str(&["SYNCSET", "CONFIRM"]), b"+OK\r\n");
    assert_eq!(c.cmd_str(&["PING"]), b"+PONG\r\n");
    // Serving again, it still needs its sync set for writes.
    assert!(c.cmd_str(&["SET", "k", "v"]).starts_with(b"-NOREPLICAS"));
    let _ = child.kill();
    let _ = child.wait();
}

/// Children killed when the test ends, however it ends.
struct Children(Vec<std::process::Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// streamd on `port` in `dir` with the mode on, then `args`.
fn spawn_streamd(port: u16, dir: &std::path::Path, args: &[&str]) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_streamd"))
        .args([
            "--port",
            &port.to_string(),
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .arg("--dir")
        .arg(dir)
        .args([
            "--min-sync-replicas",
            "1",
            "--sync-replicas-timeout",
            "30000",
        ])
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn streamd")
}

/// One reply to `args` from 127.0.0.1:`port`, or an empty reply when it cannot be had.
fn ask(port: u16, args: &[&str]) -> Vec<u8> {
    let Ok(mut c) = common::Raw::try_connect(port) else {
        return Vec::new();
    };
    c.set_timeout(Duration::from_secs(5));
    let argv: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    if c.try_send(&common::encode_cmd(&argv)).is_err() {
        return Vec::new();
    }
    c.try_read_reply().unwrap_or_default()
}

/// A primary killed and restarted at once comes back fenced before any Sentinel saw it
/// down; Sentinel counts a `-LOADING` PING reply as "available", and without
/// `master-reboot-down-after-period` (off here) it never counts a reboot as down, so
/// nothing but the fence's answer to a Sentinel that names it the primary (`-FENCED`)
/// gets it failed over. Three Debian Sentinels then promote the member of the sync
/// set, which has every acknowledged write, and the old primary becomes its replica,
/// which lifts its fence.
#[test]
fn sentinel_fails_over_a_primary_restarted_fenced_before_it_was_seen_down() {
    let sentinel_bin = common::require_program("redis-sentinel", "redis-sentinel");
    let dir = tempfile::tempdir().expect("temp dir");
    let (p_port, r_port) = (common::free_port(), common::free_port());
    let (p_dir, r_dir) = (dir.path().join("p"), dir.path().join("r"));
    std::fs::create_dir_all(&p_dir).expect("mkdir");
    std::fs::create_dir_all(&r_dir).expect("mkdir");
    let mut kids = Children(vec![spawn_streamd(p_port, &p_dir, &[])]);
    wait_until("the primary to answer", || {
        ask(p_port, &["SYNCSET", "CONFIRM"]) == b"+OK\r\n"
    });
    let p_arg = p_port.to_string();
    kids.0.push(spawn_streamd(
        r_port,
        &r_dir,
        &["--replicaof", "127.0.0.1", &p_arg],
    ));
    let joined = |port: u16, name: &str, want: &str| {
        let reply = ask(port, &["INFO", "replication"]);
        String::from_utf8_lossy(&reply).contains(&format!("{name}:{want}\r\n"))
    };
    wait_until("the replica to join the sync set", || {
        joined(p_port, "sync_replicas", "1") && joined(r_port, "sync_replica_member", "1")
    });
    let mut sentinels = Vec::new();
    for i in 0..3 {
        let port = common::free_port();
        let conf = dir.path().join(format!("sentinel{i}.conf"));
        let text = format!(
            "port {port}\nbind 127.0.0.1\ndir {}\n\
             sentinel monitor m 127.0.0.1 {p_port} 2\n\
             sentinel down-after-milliseconds m 2000\n\
             sentinel failover-timeout m 20000\n",
            dir.path().display()
        );
        std::fs::write(&conf, text).expect("write sentinel.conf");
        kids.0.push(
            std::process::Command::new(&sentinel_bin)
                .arg(&conf)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("spawn redis-sentinel"),
        );
        sentinels.push(port);
    }
    let field_of = |reply: &[u8], name: &str| {
        // SENTINEL MASTER's flat array: find `name` and take the next bulk string.
        let text = String::from_utf8_lossy(reply).to_string();
        let lines: Vec<&str> = text.split("\r\n").collect();
        lines
            .iter()
            .position(|l| *l == name)
            .and_then(|i| lines.get(i + 2))
            .map(|v| v.to_string())
            .unwrap_or_default()
    };
    wait_until(
        "every Sentinel to know the replica and the other Sentinels",
        || {
            sentinels.iter().all(|&s| {
                let m = ask(s, &["SENTINEL", "MASTER", "m"]);
                field_of(&m, "num-slaves") == "1" && field_of(&m, "num-other-sentinels") == "2"
            })
        },
    );
    let acked: Vec<String> = (0..20)
        .map(|i| {
            let id = ask(p_port, &["XADD", "orders", "*", "n", &i.to_string()]);
            assert!(id.starts_with(b"$"), "{id:?}");
            String::from_utf8_lossy(&id).to_string()
        })
        .collect();
    // Kill and restart at once: the Sentinels' next PINGs find it answering, fenced.
    let primary = &mut kids.0[0];
    primary.kill().expect("kill -9 the primary");
    let _ = primary.wait();
    kids.0[0] = spawn_streamd(p_port, &p_dir, &[]);
    let r_arg = r_port.to_string();
    wait_until("every Sentinel to name the replica the primary", || {
        sentinels.iter().all(|&s| {
            let addr = ask(s, &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", "m"]);
            String::from_utf8_lossy(&addr).contains(&format!("\r\n{r_arg}\r\n"))
        })
    });
    wait_until(
        "the old primary to be demoted, which lifts its fence",
        || joined(p_port, "master_port", &r_arg) && ask(p_port, &["PING"]) == b"+PONG\r\n",
    );
    let on_new = ask(r_port, &["XLEN", "orders"]);
    assert_eq!(on_new, format!(":{}\r\n", acked.len()).into_bytes());
    assert_eq!(ask(r_port, &["SET", "after", "1"]), b"+OK\r\n");
}
