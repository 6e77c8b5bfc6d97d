//! A cluster-enabled streamd as a one-node cluster, against a one-node Redis 7.0 cluster:
//! the CLUSTER commands, READONLY/READWRITE/ASKING and the redirections (`-CLUSTERDOWN`,
//! `-CROSSSLOT`, `-MOVED`), compared reply by reply in RESP2 and RESP3. Only what must
//! differ between two nodes is normalised: node ids (40 hex digits), the client and bus
//! ports, and the shard id. Also: `redis-cli -c` through streamd, and the node's identity
//! and slots across a restart.

mod common;

use common::differential::Node;
use common::{Raw, escape, free_port, redis_server_with, start_server_with};
use std::process::Command;
use std::time::{Duration, Instant};

/// Replaces every run of 40 hex digits by `<id>` and the given ports by `<port>`.
fn normalise(reply: &[u8], ports: &[u16]) -> String {
    let text = String::from_utf8_lossy(reply).into_owned();
    let mut out = String::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let run = chars[i..]
            .iter()
            .take_while(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
            .count();
        if run == 40 {
            out.push_str("<id>");
            i += 40;
        } else if run > 0 {
            out.extend(&chars[i..i + run]);
            i += run;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    for port in ports {
        out = out.replace(&port.to_string(), "<port>");
    }
    out
}

/// Waits (bounded) until `cluster_state` in CLUSTER INFO is `want`.
fn wait_state(raw: &mut Raw, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info = String::from_utf8_lossy(&raw.cmd_str(&["CLUSTER", "INFO"])).into_owned();
        if info.contains(&format!("cluster_state:{want}")) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "cluster_state never {want}: {info}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The cluster-enabled pair: streamd and Redis, each a fresh one-node cluster.
struct Pair {
    streamd: common::Server,
    redis: common::RedisServer,
    ports: Vec<u16>,
}

fn pair() -> Pair {
    let (sbus, rbus) = (free_port(), free_port());
    let streamd = start_server_with(&[
        "--cluster-enabled",
        "yes",
        "--cluster-port",
        &sbus.to_string(),
    ]);
    let redis = redis_server_with(&[
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
        "--cluster-port",
        &rbus.to_string(),
    ]);
    let ports = vec![streamd.port, redis.port, sbus, rbus];
    Pair {
        streamd,
        redis,
        ports,
    }
}

/// Sends each command to both and collects the differences.
fn compare(pair: &Pair, proto: u8, cases: &[Vec<&str>]) -> Vec<String> {
    let (mut s, mut r) = (pair.streamd.raw(), pair.redis.raw());
    if proto == 3 {
        s.hello3();
        r.hello3();
    }
    let mut bad = Vec::new();
    for case in cases {
        let (rs, rr) = (s.cmd_str(case), r.cmd_str(case));
        let (ns, nr) = (normalise(&rs, &pair.ports), normalise(&rr, &pair.ports));
        if ns != nr {
            bad.push(format!(
                "RESP{proto} {}\n  streamd {}\n  redis   {}",
                case.join(" "),
                escape(ns.as_bytes()),
                escape(nr.as_bytes())
            ));
        }
    }
    bad
}

#[test]
fn a_one_node_cluster_answers_as_redis_does() {
    let pair = pair();
    // Redis holds a fresh master's state at "fail" for two seconds after start.
    let mut r = pair.redis.raw();
    let unassigned = vec![
        vec!["CLUSTER", "INFO"],
        vec!["SET", "foo", "bar"],
        vec!["GET", "foo"],
        vec!["PING"],
        vec!["CLUSTER", "KEYSLOT", "foo"],
        vec!["CLUSTER", "KEYSLOT", "{user1000}.following"],
        vec!["CLUSTER", "COUNTKEYSINSLOT", "12182"],
        vec!["CLUSTER", "COUNTKEYSINSLOT", "16384"],
        vec!["CLUSTER", "COUNTKEYSINSLOT", "x"],
        vec!["CLUSTER", "ADDSLOTS", "16384"],
        vec!["CLUSTER", "ADDSLOTS", "-1"],
        vec!["CLUSTER", "ADDSLOTS", "1", "1"],
        vec!["CLUSTER", "ADDSLOTSRANGE", "5", "1"],
        vec!["CLUSTER", "ADDSLOTSRANGE", "1"],
        vec!["CLUSTER", "DELSLOTS", "7"],
        vec!["CLUSTER", "SLOTS"],
        vec!["CLUSTER", "SHARDS"],
        vec!["CLUSTER", "NODES"],
        vec!["CLUSTER", "MYID"],
        vec!["READONLY"],
        vec!["READWRITE"],
        vec!["ASKING"],
        vec!["CLUSTER", "LINKS"],
        vec!["CLUSTER", "BOGUS"],
        vec![
            "CLUSTER",
            "FORGET",
            "0123456789012345678901234567890123456789",
        ],
        vec![
            "CLUSTER",
            "COUNT-FAILURE-REPORTS",
            "0123456789012345678901234567890123456789",
        ],
        vec![
            "CLUSTER",
            "SETSLOT",
            "5",
            "MIGRATING",
            "0123456789012345678901234567890123456789",
        ],
        vec!["CLUSTER", "SETSLOT", "99999", "STABLE"],
        vec!["CLUSTER", "SETSLOT", "5", "BOGUS"],
        vec!["CLUSTER", "FAILOVER"],
        vec!["CLUSTER", "FAILOVER", "BOGUS"],
    ];
    let assigned = vec![
        vec!["CLUSTER", "ADDSLOTSRANGE", "0", "16383"],
        vec!["CLUSTER", "ADDSLOTS", "5"],
        vec!["SET", "foo", "bar"],
        vec!["GET", "foo"],
        vec!["MSET", "a", "1", "b", "2"],
        vec!["MSET", "{a}1", "x", "{a}2", "y"],
        vec!["XADD", "{s}1", "1-1", "f", "v"],
        vec!["XREAD", "STREAMS", "{s}1", "{s}2", "0", "0"],
        vec!["XREAD", "STREAMS", "{s}1", "other", "0", "0"],
        vec!["CLUSTER", "COUNTKEYSINSLOT", "12182"],
        vec!["CLUSTER", "GETKEYSINSLOT", "12182", "10"],
        vec!["CLUSTER", "GETKEYSINSLOT", "12182", "-1"],
        vec!["CLUSTER", "INFO"],
        vec!["CLUSTER", "SLOTS"],
        vec!["CLUSTER", "NODES"],
        vec!["CLUSTER", "FLUSHSLOTS"],
        vec!["CLUSTER", "RESET"],
        vec!["CLUSTER", "BUMPEPOCH"],
        vec!["CLUSTER", "BUMPEPOCH"],
        vec!["CLUSTER", "SET-CONFIG-EPOCH", "5"],
        vec!["EVAL", "return redis.call('get', KEYS[1])", "1", "foo"],
        vec!["EVAL", "return 1", "2", "a", "b"],
        vec!["MULTI"],
        vec!["SET", "{a}1", "z"],
        vec!["SET", "other", "z"],
        vec!["EXEC"],
        vec!["CLUSTER", "DELSLOTS", "12182"],
        vec!["GET", "foo"],
        vec!["GET", "{a}1"],
        vec!["CLUSTER", "INFO"],
        vec!["CLUSTER", "SLOTS"],
        vec!["CLUSTER", "ADDSLOTS", "12182"],
    ];
    // Both servers have finished starting before anything is compared.
    std::thread::sleep(Duration::from_millis(2200));
    let mut bad = compare(&pair, 2, &unassigned);
    bad.extend(compare(
        &pair,
        3,
        &[vec!["CLUSTER", "SLOTS"], vec!["CLUSTER", "SHARDS"]],
    ));
    bad.extend(compare(&pair, 2, &assigned[..2]));
    wait_state(&mut r, "ok");
    bad.extend(compare(&pair, 2, &assigned[2..]));
    bad.extend(compare(
        &pair,
        3,
        &[
            vec!["CLUSTER", "SLOTS"],
            vec!["CLUSTER", "SHARDS"],
            vec!["CLUSTER", "INFO"],
            vec!["GET", "foo"],
        ],
    ));
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn redis_cli_follows_the_node_and_the_identity_survives_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A fresh bus port on every start (a taken one makes the start retry).
    let args = |_port: u16| -> Vec<String> {
        let bus = free_port().to_string();
        ["--cluster-enabled", "yes", "--cluster-port", &bus]
            .into_iter()
            .chain(["--appendonly", "no", "--save", ""])
            .map(String::from)
            .collect()
    };
    let cli = |port: u16, args: &[&str]| {
        let out = Command::new(common::require_program("redis-cli", "redis-tools"))
            .args(["-c", "-p", &port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli runs");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let node = Node::start_with(dir.path(), &args);
    let p = node.port;
    assert_eq!(cli(p, &["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]), "OK");
    assert_eq!(cli(p, &["SET", "k", "v"]), "OK");
    assert_eq!(cli(p, &["GET", "k"]), "v");
    assert_eq!(cli(p, &["XADD", "s", "1-1", "f", "v"]), "1-1");
    assert_eq!(cli(p, &["XRANGE", "s", "-", "+"]), "1-1\nf\nv");
    let id = cli(p, &["CLUSTER", "MYID"]);
    assert_eq!(id.len(), 40, "{id}");
    assert_eq!(cli(p, &["CLUSTER", "BUMPEPOCH"]), "BUMPED 1");
    let nodes_before = cli(p, &["CLUSTER", "NODES"]);
    assert!(nodes_before.contains("myself,master"), "{nodes_before}");
    assert!(nodes_before.contains("0-16383"), "{nodes_before}");
    assert!(dir.path().join("nodes.conf").exists());
    node.stop();
    let node = Node::start_with(dir.path(), &args);
    let p = node.port;
    assert_eq!(cli(p, &["CLUSTER", "MYID"]), id);
    let nodes_after = cli(p, &["CLUSTER", "NODES"]);
    assert!(nodes_after.contains("0-16383"), "{nodes_after}");
    let info = cli(p, &["CLUSTER", "INFO"]);
    assert!(info.contains("cluster_current_epoch:1"), "{info}");
    assert!(info.contains("cluster_my_epoch:1"), "{info}");
}
