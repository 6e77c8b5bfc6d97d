//! Clusters of several nodes talking over the cluster bus: six streamd nodes made into a
//! cluster by `redis-cli --cluster create`, PUBLISH and SPUBLISH across nodes,
//! redirections from primaries and replicas, failover of a killed primary (an election),
//! a manual CLUSTER FAILOVER, and mixed clusters where Redis 7.0 nodes vote for a
//! streamd replica and streamd nodes vote for a Redis replica.
//!
//! Every node gets a port `p` with `p + 10000` free for its bus, its own directory, and
//! is killed when the test ends. Waits are bounded (a failed wait panics with what was
//! last seen).

mod common;

use common::free_port_pair;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

const STREAMD: &str = env!("CARGO_BIN_EXE_streamd");

/// `cluster-node-timeout` of every node here, in milliseconds.
const NODE_TIMEOUT_MS: u64 = 2000;

/// Seconds a failover may take once a primary died, from the nodes' own timers: failure
/// detection (PFAIL after a node timeout, FAIL once a majority's gossip agrees: two
/// timeouts) and three election attempts (a replica whose votes did not all arrive tries
/// again four node timeouts later, cluster.c's `auth_retry_time`), half again on top for
/// a machine busy with other clusters.
const FAILOVER_SECS: u64 = NODE_TIMEOUT_MS * (2 + 3 * 4) * 3 / 2 / 1000;

/// Seconds for every node to learn a fact spread by gossip (a new node, a role, a slot
/// owner): each pair of nodes exchanges a PING at least every half node timeout, and a fact
/// may need a few hops; five node timeouts, doubled for a machine busy with other clusters.
const AGREE_SECS: u64 = NODE_TIMEOUT_MS * 5 * 2 / 1000;

/// Seconds for a replica to migrate to an orphaned primary: the dead replica's FAIL (a node
/// timeout, then a gossip round: two), cluster.c's 5 s `CLUSTER_SLAVE_MIGRATION_DELAY`, and
/// a node timeout for everyone to hear of it; three times that for a busy machine.
const MIGRATE_SECS: u64 = (NODE_TIMEOUT_MS * 3 + 5000) * 3 / 1000;

/// Seconds for a manual failover: cluster.c's 5 s `CLUSTER_MF_TIMEOUT` bounds it (after
/// that it is abandoned), plus a node timeout for the new roles to spread; doubled.
const MANUAL_FAILOVER_SECS: u64 = (5000 + NODE_TIMEOUT_MS) * 2 / 1000;

/// Seconds for a replica's first full sync: `repl-diskless-sync-delay` (5 s, skipped when
/// every known replica is connected) and a reconnect period; three times that.
const FIRST_SYNC_SECS: u64 = (5 + 1) * 3;

/// One cluster node process (streamd or redis-server), killed on drop.
struct Node {
    port: u16,
    child: Option<Child>,
    _dir: tempfile::TempDir,
    log: PathBuf,
    redis: bool,
}

impl Drop for Node {
    /// Kills the node; when a test failed, first prints the end of its log, so the failure
    /// says what each node saw and did (elections, votes, PFAIL/FAIL, migrations).
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = self.log_text();
            let lines: Vec<&str> = log.lines().collect();
            let tail = lines[lines.len().saturating_sub(40)..].join("\n");
            let what = if self.redis {
                "redis-server"
            } else {
                "streamd"
            };
            eprintln!(
                "--- node {} ({what}), end of {} ---\n{tail}",
                self.port,
                self.log.display()
            );
            if std::env::var_os("STREAMD_TEST_KEEP").is_some() {
                self._dir.disable_cleanup(true);
            }
        }
        self.kill();
    }
}

impl Node {
    fn start(redis: bool) -> Node {
        Node::start_with(redis, "")
    }

    /// [`Node::start`] with `extra` lines appended to the node's configuration file.
    fn start_with(redis: bool, extra: &str) -> Node {
        let dir = tempfile::tempdir().expect("tempdir");
        let port = free_port_pair();
        let conf = dir.path().join("node.conf");
        std::fs::write(
            &conf,
            format!(
                "cluster-enabled yes\ncluster-config-file nodes.conf\ncluster-node-timeout {NODE_TIMEOUT_MS}\nappendonly no\nsave \"\"\n{extra}"
            ),
        )
        .expect("write conf");
        let log = dir.path().join("node.log");
        let out = std::fs::File::create(&log).expect("log");
        let program = if redis { "redis-server" } else { STREAMD };
        let child = Command::new(program)
            .arg(&conf)
            .args(["--port", &port.to_string(), "--dir"])
            .arg(dir.path())
            .stdout(out.try_clone().expect("log"))
            .stderr(out)
            .spawn()
            .expect("start node (redis-server from Debian's package for the mixed tests)");
        let node = Node {
            port,
            child: Some(child),
            _dir: dir,
            log,
            redis,
        };
        wait_for(&format!("node {port} to answer PING"), 10, || {
            (node.cli(&["ping"]) == "PONG", String::new())
        });
        node
    }

    /// Starts the node again on its port, directory and configuration (after
    /// [`Node::kill`]), with `args` after them; its log goes on.
    fn restart(&mut self, args: &[&str]) {
        let conf = self._dir.path().join("node.conf");
        let out = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.log)
            .expect("log");
        self.child = Some(
            Command::new(STREAMD)
                .arg(&conf)
                .args(["--port", &self.port.to_string(), "--dir"])
                .arg(self._dir.path())
                .args(args)
                .stdout(out.try_clone().expect("log"))
                .stderr(out)
                .spawn()
                .expect("restart"),
        );
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Runs `commands` (one per line) over one redis-cli connection, so a WAIT after
    /// writes waits for those writes (WAIT counts the calling client's own offset).
    fn cli_session(&self, commands: &[String]) -> Vec<String> {
        let mut child = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("redis-cli");
        let mut input = child.stdin.take().expect("stdin");
        input
            .write_all(commands.join("\n").as_bytes())
            .expect("write commands");
        drop(input);
        let out = child.wait_with_output().expect("redis-cli");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn info(&self, field: &str) -> String {
        self.cli(&["cluster", "info"])
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .unwrap_or("")
            .to_string()
    }

    /// CLUSTER NODES as `id → (port, flags, master, slots text)`.
    fn table(&self) -> BTreeMap<String, (u16, String, String, String)> {
        let mut t = BTreeMap::new();
        for line in self.cli(&["cluster", "nodes"]).lines() {
            let f: Vec<&str> = line.split(' ').collect();
            if f.len() < 8 {
                continue;
            }
            let port = f[1]
                .split('@')
                .next()
                .and_then(|a| a.rsplit(':').next())
                .and_then(|p| p.parse().ok())
                .unwrap_or(0);
            let flags = f[2].replace("myself,", "");
            t.insert(
                f[0].to_string(),
                (port, flags, f[3].to_string(), f[8..].join(" ")),
            );
        }
        t
    }

    fn id(&self) -> String {
        self.cli(&["cluster", "myid"])
    }

    fn role(&self) -> String {
        self.cli(&["role"]).lines().next().unwrap_or("").to_string()
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// Polls `probe` (which says whether it holds and what it saw) for up to `secs`.
fn wait_for(what: &str, secs: u64, mut probe: impl FnMut() -> (bool, String)) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let (ok, seen) = probe();
        if ok {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {secs} s waiting for {what}; last seen: {seen}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until every node of `nodes` lists the same nodes with the same roles, primaries
/// and slots, every replica with a known primary.
fn wait_tables_agree(nodes: &[Node], what: &str) {
    wait_for(what, AGREE_SECS, || {
        let views: Vec<(u16, Vec<_>)> = nodes
            .iter()
            .map(|n| (n.port, n.table().into_values().collect()))
            .collect();
        let complete = views[0].1.len() == nodes.len()
            && views[0]
                .1
                .iter()
                .all(|(_, flags, master, _)| !flags.contains("slave") || master != "-");
        let agree = views.iter().all(|v| v.1 == views[0].1);
        (complete && agree, format!("{views:?}"))
    });
}

/// `redis-cli --cluster create` over `nodes` with one replica per primary, then waits
/// until every node sees the same six nodes and `cluster_state:ok`.
fn create(nodes: &[Node]) {
    let addrs: Vec<String> = nodes
        .iter()
        .map(|n| format!("127.0.0.1:{}", n.port))
        .collect();
    let out = Command::new("redis-cli")
        .args(["--cluster", "create"])
        .args(&addrs)
        .args(["--cluster-replicas", "1", "--cluster-yes"])
        .output()
        .expect("redis-cli --cluster create");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "create failed: {text}");
    assert!(text.contains("[OK] All 16384 slots covered."), "{text}");
    wait_for(
        "every node to agree on the table and be ok",
        AGREE_SECS,
        || {
            let views: Vec<_> = nodes
                .iter()
                .map(|n| {
                    let t: Vec<_> = n.table().into_values().collect();
                    (t, n.info("cluster_state"))
                })
                .collect();
            let agree = views.iter().all(|v| v.0 == views[0].0 && v.1 == "ok");
            let replicas = views[0].0.iter().filter(|r| r.1 == "slave").count();
            (agree && replicas == 3, format!("{views:?}"))
        },
    );
    check_clean(&nodes[0]);
    // The replicas' first full sync (after repl-diskless-sync-delay) before any WAIT.
    wait_for(
        "every primary to have its replica online",
        FIRST_SYNC_SECS,
        || {
            let mut seen = String::new();
            let ok = nodes.iter().filter(|n| n.role() == "master").all(|n| {
                seen = n.cli(&["info", "replication"]);
                seen.contains("state=online")
            });
            (ok, seen)
        },
    );
}

fn check_clean(entry: &Node) {
    let addr = format!("127.0.0.1:{}", entry.port);
    wait_for("redis-cli --cluster check to be clean", AGREE_SECS, || {
        let out = Command::new("redis-cli")
            .args(["--cluster", "check", &addr])
            .output()
            .expect("check");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let ok = out.status.success()
            && text.contains("[OK] All nodes agree about slots configuration.")
            && text.contains("[OK] All 16384 slots covered.")
            && !text.contains("[WARNING]")
            && !text.contains("[ERR]");
        (ok, text)
    });
}

/// (primary, its replica) ports, primaries ordered by their first slot.
fn shards(entry: &Node) -> Vec<(u16, u16)> {
    let t = entry.table();
    let mut primaries: Vec<(u16, String, String)> = t
        .iter()
        .filter(|(_, v)| v.1 == "master" && !v.3.is_empty())
        .map(|(id, v)| {
            let first: u16 =
                v.3.split(['-', ' '])
                    .next()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
            (first, id.clone(), String::new())
        })
        .collect();
    primaries.sort();
    primaries
        .iter()
        .map(|(_, id, _)| {
            let p = t[id].0;
            let r = t
                .values()
                .find(|v| v.2 == *id && v.1 == "slave")
                .map_or(0, |v| v.0);
            (p, r)
        })
        .collect()
}

/// Waits (a failover's time, [`FAILOVER_SECS`]) until every node of `survivors` lists
/// node `port` as a primary with slots and says `cluster_state:ok`.
fn wait_promoted(nodes: &[Node], survivors: &[u16], port: u16, what: &str) {
    wait_for(what, FAILOVER_SECS, || {
        let mut seen = String::new();
        let ok = survivors.iter().all(|&s| {
            let n = nodes.iter().find(|n| n.port == s).expect("node");
            let t = n.table();
            seen = format!("{s}: {t:?} {}", n.info("cluster_state"));
            t.values()
                .any(|v| v.0 == port && v.1 == "master" && !v.3.is_empty())
                && n.info("cluster_state") == "ok"
        });
        (ok, seen)
    });
}

fn by_port(nodes: &mut [Node], port: u16) -> &mut Node {
    nodes
        .iter_mut()
        .find(|n| n.port == port)
        .expect("node of port")
}

fn start_all(kinds: &[bool]) -> Vec<Node> {
    kinds.iter().map(|&redis| Node::start(redis)).collect()
}

/// A key (with a hash tag) whose slot node `port` serves, per CLUSTER KEYSLOT and SLOTS.
fn key_on(entry: &Node, port: u16, prefix: &str) -> String {
    for i in 0..10_000 {
        let key = format!("{prefix}{{t{i}}}");
        let slot: u16 = entry
            .cli(&["cluster", "keyslot", &key])
            .parse()
            .unwrap_or(0);
        let owner = entry.table().into_values().find(|v| {
            v.1 == "master"
                && v.3.split(' ').any(|r| {
                    let mut it = r.split('-');
                    let a: u16 = it.next().and_then(|s| s.parse().ok()).unwrap_or(u16::MAX);
                    let b: u16 = it.next().and_then(|s| s.parse().ok()).unwrap_or(a);
                    a <= slot && slot <= b
                })
        });
        if owner.is_some_and(|o| o.0 == port) {
            return key;
        }
    }
    panic!("no key found for node {port}");
}

/// Subscribes on `port` and returns the connection once the subscription is confirmed.
fn subscriber(port: u16, command: &str, channel: &str) -> BufReader<TcpStream> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    write!(
        s,
        "*2\r\n${}\r\n{command}\r\n${}\r\n{channel}\r\n",
        command.len(),
        channel.len()
    )
    .expect("subscribe");
    let mut r = BufReader::new(s);
    let mut seen = String::new();
    for _ in 0..6 {
        let mut line = String::new();
        r.read_line(&mut line).expect("subscribe reply");
        seen.push_str(&line);
    }
    assert!(seen.contains(channel), "{seen}");
    r
}

fn read_message(r: &mut BufReader<TcpStream>) -> String {
    let mut seen = String::new();
    for _ in 0..7 {
        let mut line = String::new();
        if r.read_line(&mut line).is_err() {
            break;
        }
        seen.push_str(&line);
    }
    seen
}

#[test]
fn six_streamd_nodes_form_a_cluster_route_and_publish_across_nodes() {
    let nodes = start_all(&[false; 6]);
    create(&nodes);
    let sh = shards(&nodes[0]);
    assert_eq!(sh.len(), 3, "{sh:?}");
    let (p0, r0) = sh[0];
    let (p1, _) = sh[1];
    let n = |p: u16| nodes.iter().find(|n| n.port == p).expect("node");
    // Replication works under the cluster: what the primary writes the replica has.
    let key = key_on(n(p0), p0, "s");
    assert_eq!(
        n(p0).cli_session(&[format!("xadd {key} 1-1 f v"), "wait 1 2000".into()]),
        ["1-1", "1"]
    );
    let slot = n(p0).cli(&["cluster", "keyslot", &key]);
    let moved = format!("MOVED {slot} 127.0.0.1:{p0}");
    // -MOVED from another primary and from the replica (before the read-only refusal),
    // and a READONLY client reads on the replica.
    assert_eq!(n(p1).cli(&["xlen", &key]), moved);
    assert_eq!(n(r0).cli(&["xadd", &key, "*", "f", "v"]), moved);
    let mut raw = TcpStream::connect(("127.0.0.1", r0)).expect("connect");
    raw.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    raw.write_all(b"READONLY\r\nXLEN ").expect("send");
    raw.write_all(key.as_bytes()).expect("send");
    raw.write_all(b"\r\n").expect("send");
    let mut r = BufReader::new(raw);
    let (mut a, mut b) = (String::new(), String::new());
    r.read_line(&mut a).expect("reply");
    r.read_line(&mut b).expect("reply");
    assert_eq!((a.as_str(), b.as_str()), ("+OK\r\n", ":1\r\n"));
    // PUBLISH on one node reaches a subscriber on another; SPUBLISH reaches the shard's
    // replica.
    let mut sub = subscriber(p1, "SUBSCRIBE", "news");
    assert_eq!(n(p0).cli(&["publish", "news", "hello"]), "0");
    let got = read_message(&mut sub);
    assert!(got.contains("message") && got.contains("hello"), "{got}");
    let chan = key.clone();
    let mut ssub = subscriber(r0, "SSUBSCRIBE", &chan);
    n(p0).cli(&["spublish", &chan, "sharded"]);
    let got = read_message(&mut ssub);
    assert!(got.contains("smessage") && got.contains("sharded"), "{got}");
    // Sharded Pub/Sub routes by the channel's slot: another primary redirects, channels
    // of two slots are refused.
    assert_eq!(n(p1).cli(&["spublish", &chan, "x"]), moved);
    assert_eq!(n(p1).cli(&["ssubscribe", &chan]), moved);
    let other_chan = (0..)
        .map(|i| format!("c{i}"))
        .find(|c| n(p0).cli(&["cluster", "keyslot", c]) != slot)
        .expect("a channel in another slot");
    assert_eq!(
        n(p0).cli(&["ssubscribe", &chan, &other_chan]),
        "CROSSSLOT Keys in request don't hash to the same slot"
    );
    // CLUSTER INFO counts the bus traffic; COUNT-FAILURE-REPORTS knows the nodes.
    let sent: u64 = n(p0)
        .info("cluster_stats_messages_sent")
        .parse()
        .unwrap_or(0);
    assert!(sent > 10, "{sent}");
    let other = n(p1).id();
    assert_eq!(
        n(p0).cli(&["cluster", "count-failure-reports", &other]),
        "0"
    );
    // CLUSTER LINKS: a link to and a link from each of the five other nodes.
    wait_for("ten links in CLUSTER LINKS", AGREE_SECS, || {
        let links = n(p0).cli(&["cluster", "links"]);
        let to = links.lines().filter(|l| *l == "to").count();
        let from = links.lines().filter(|l| *l == "from").count();
        (to == 5 && from == 5, links)
    });
    // REPLICAOF is the cluster's business.
    assert_eq!(
        n(r0).cli(&["replicaof", "127.0.0.1", &p1.to_string()]),
        "ERR REPLICAOF not allowed in cluster mode."
    );
}

#[test]
fn a_killed_primary_is_replaced_by_its_replica_and_manual_failover_swaps_roles() {
    let mut nodes = start_all(&[false; 6]);
    create(&nodes);
    let sh = shards(&nodes[0]);
    let (p0, r0) = sh[0];
    let (p2, r2) = sh[2];
    let dead_slots = by_port(&mut nodes, p2)
        .table()
        .into_values()
        .find(|v| v.0 == p2)
        .map(|v| v.3)
        .unwrap_or_default();
    let key = key_on(by_port(&mut nodes, p2), p2, "acked");
    let primary = by_port(&mut nodes, p2);
    let mut session: Vec<String> = (0..20)
        .map(|i| format!("xadd {key} {}-1 i {i}", i + 1))
        .collect();
    session.push("wait 1 2000".into());
    assert_eq!(
        primary.cli_session(&session).last().map(String::as_str),
        Some("1"),
        "the replica acknowledges the writes"
    );
    primary.kill();
    let survivors: Vec<u16> = nodes
        .iter()
        .filter(|n| n.port != p2)
        .map(|n| n.port)
        .collect();
    // PFAIL, FAIL by a majority of primaries, an election won by the replica.
    wait_for(
        "the replica to take the dead primary's slots everywhere",
        FAILOVER_SECS,
        || {
            let mut seen = String::new();
            let ok = survivors.iter().all(|&p| {
                let n = nodes.iter().find(|n| n.port == p).expect("node");
                let t = n.table();
                let promoted = t
                    .values()
                    .any(|v| v.0 == r2 && v.1 == "master" && v.3 == dead_slots);
                let failed = t.values().any(|v| v.0 == p2 && v.1.contains("fail"));
                seen = format!("{p}: {t:?} {}", n.info("cluster_state"));
                promoted && failed && n.info("cluster_state") == "ok"
            });
            (ok, seen)
        },
    );
    let new_primary = by_port(&mut nodes, r2);
    assert_eq!(new_primary.role(), "master");
    assert_eq!(
        new_primary.cli(&["xlen", &key]),
        "20",
        "acknowledged entries survive"
    );
    assert!(new_primary.log_text().contains("Failover election won"));
    // A manual failover: the replica of another primary takes over without data loss.
    let replica = by_port(&mut nodes, r0);
    assert_eq!(replica.cli(&["cluster", "failover"]), "OK");
    let r0_id = by_port(&mut nodes, r0).id();
    wait_for(
        "the manual failover to swap the roles",
        MANUAL_FAILOVER_SECS,
        || {
            let a = nodes.iter().find(|n| n.port == r0).expect("node");
            let b = nodes.iter().find(|n| n.port == p0).expect("node");
            let t = b.table();
            let swapped = t.get(&r0_id).is_some_and(|v| v.1 == "master")
                && t.values()
                    .any(|v| v.0 == p0 && v.1 == "slave" && v.2 == r0_id);
            let roles = (a.role(), b.role());
            (
                swapped && roles == ("master".into(), "slave".into()),
                format!("{roles:?} {t:?}"),
            )
        },
    );
    let _ = survivors;
}

#[test]
fn mixed_clusters_elect_across_implementations() {
    // Redis, streamd, Redis, streamd, Redis, streamd: redis-cli makes the first three the
    // primaries and gives each a replica of the other kind or the same kind.
    let mut nodes = start_all(&[true, false, true, false, true, false]);
    create(&nodes);
    // Every node's view of every node agrees (checked by create); now kill each primary
    // whose replica is of the other implementation and watch that replica win the
    // election with votes from primaries of both kinds.
    let sh = shards(&nodes[0]);
    let kind = |nodes: &[Node], p: u16| nodes.iter().find(|n| n.port == p).map(|n| n.redis);
    let cross: Vec<(u16, u16)> = sh
        .iter()
        .copied()
        .filter(|&(p, r)| kind(&nodes, p) != kind(&nodes, r))
        .collect();
    assert!(
        !cross.is_empty(),
        "no primary with a replica of the other kind: {sh:?}"
    );
    // Both directions when the layout has both: a Redis replica elected by streamd and
    // Redis primaries, and a streamd replica elected by both kinds.
    let mut directions = Vec::new();
    for &(p, r) in &cross {
        if !directions
            .iter()
            .any(|&(q, _): &(u16, u16)| kind(&nodes, q) == kind(&nodes, p))
        {
            directions.push((p, r));
        }
    }
    for (p, r) in directions {
        let key = key_on(by_port(&mut nodes, p), p, "mixed");
        let primary = by_port(&mut nodes, p);
        let mut session: Vec<String> = (0..10).map(|i| format!("xadd {key} * i {i}")).collect();
        session.push("wait 1 3000".into());
        assert_eq!(
            primary.cli_session(&session).last().map(String::as_str),
            Some("1"),
            "the replica of the other kind acknowledges"
        );
        primary.kill();
        let survivors: Vec<u16> = nodes
            .iter()
            .filter(|n| n.child.is_some())
            .map(|n| n.port)
            .collect();
        wait_promoted(
            &nodes,
            &survivors,
            r,
            "the cross-implementation replica to be elected",
        );
        let promoted = by_port(&mut nodes, r);
        assert_eq!(promoted.role(), "master");
        assert_eq!(
            promoted.cli(&["xlen", &key]),
            "10",
            "the entries WAIT acknowledged survive on {} (redis: {}); its log:\n{}",
            promoted.port,
            promoted.redis,
            std::fs::read_to_string(&promoted.log).unwrap_or_default()
        );
    }
}

#[test]
fn a_replica_migrates_to_a_primary_left_without_replicas() {
    let mut nodes: Vec<Node> = (0..6).map(|_| Node::start(false)).collect();
    create(&nodes);
    let sh = shards(&nodes[0]);
    let (p0, _) = sh[0];
    let (p2, r2) = sh[2];
    // A seventh node joins as a second replica of the first primary.
    let extra = Node::start(false);
    let p0_id = by_port(&mut nodes, p0).id();
    let out = Command::new("redis-cli")
        .args(["--cluster", "add-node"])
        .arg(format!("127.0.0.1:{}", extra.port))
        .arg(format!("127.0.0.1:{p0}"))
        .args(["--cluster-slave", "--cluster-master-id", &p0_id])
        .output()
        .expect("redis-cli --cluster add-node");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    nodes.push(extra);
    // Every node must know every replica's primary before one dies: a node learns a
    // replica's primary only from the replica's own PING or PONG, and only once it knows
    // the primary. The new node, still meeting the others, may not yet; if the replica dies
    // first, that node never learns the third primary had a replica, so it never sees it
    // orphaned (cluster.c's MIGRATE_TO) and the migration never happens.
    wait_tables_agree(
        &nodes,
        "every node to know the first primary's two replicas",
    );
    // The third primary's only replica dies: the primary is orphaned, and one of the
    // first primary's two replicas (the one with the smaller id) moves to it.
    by_port(&mut nodes, r2).kill();
    let p2_id = by_port(&mut nodes, p2).id();
    let alive: Vec<u16> = nodes
        .iter()
        .filter(|n| n.child.is_some())
        .map(|n| n.port)
        .collect();
    wait_for(
        "a replica to migrate to the orphaned primary",
        MIGRATE_SECS,
        || {
            let mut seen = String::new();
            let ok = alive.iter().all(|&p| {
                let n = nodes.iter().find(|n| n.port == p).expect("node");
                let t = n.table();
                seen = format!("{p}: {t:?}");
                let of = |m: &str| t.values().filter(|v| v.2 == m && v.1 == "slave").count();
                of(&p2_id) == 1 && of(&p0_id) == 1
            });
            (ok, seen)
        },
    );
    let moved = nodes
        .iter()
        .filter(|n| n.child.is_some() && n.role() == "slave")
        .find(|n| n.table().values().any(|v| v.0 == n.port && v.2 == p2_id))
        .expect("the migrated replica");
    assert!(moved.log_text().contains("Migrating to orphaned master"));
    assert_eq!(
        moved
            .cli(&["info", "replication"])
            .lines()
            .find_map(|l| l.strip_prefix("master_port:"))
            .map(str::trim),
        Some(p2.to_string().as_str()),
        "its replication link follows the new primary"
    );
}

/// What a stream looks like from a client: its entries, its groups (without the
/// idle-dependent fields) and its pending summary, as redis-cli prints them.
fn stream_state(n: &Node, key: &str) -> String {
    let groups: Vec<String> = n
        .cli(&["xinfo", "groups", key])
        .lines()
        .map(str::to_string)
        .collect();
    format!(
        "{}\n{}\n{}",
        n.cli(&["xrange", key, "-", "+"]),
        groups.join("\n"),
        n.cli(&["xpending", key, "g"])
    )
}

/// `redis-cli --cluster reshard` of `count` slots from `from` to `to` (node ids).
fn reshard(entry: &Node, from: &str, to: &str, count: usize) {
    let out = Command::new("redis-cli")
        .args(["--cluster", "reshard"])
        .arg(format!("127.0.0.1:{}", entry.port))
        .args(["--cluster-from", from, "--cluster-to", to])
        .args(["--cluster-slots", &count.to_string(), "--cluster-yes"])
        .output()
        .expect("redis-cli --cluster reshard");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "reshard failed: {text}");
    check_clean(entry);
}

#[test]
fn resharding_moves_streams_with_their_groups_between_redis_and_streamd() {
    let mut nodes = start_all(&[true, false, true, false, true, false]);
    create(&nodes);
    let kind = |nodes: &[Node], p: u16| nodes.iter().find(|n| n.port == p).map(|n| n.redis);
    // Primaries in slot order: a Redis one, then a streamd one after it, so the slots
    // moved to streamd are its lowest and the way back moves the same slots.
    let sh = shards(&nodes[0]);
    let redis = sh
        .iter()
        .map(|s| s.0)
        .find(|&p| kind(&nodes, p) == Some(true))
        .expect("a Redis primary");
    let ours = sh
        .iter()
        .map(|s| s.0)
        .skip_while(|&p| p != redis)
        .find(|&p| kind(&nodes, p) == Some(false))
        .expect("a streamd primary after the Redis one");
    let (redis_id, ours_id) = (
        by_port(&mut nodes, redis).id(),
        by_port(&mut nodes, ours).id(),
    );
    // Streams with a group, delivered and acknowledged entries, in the first slot of
    // the Redis primary: `--cluster reshard` moves a source's slots from its lowest.
    let first_slot = |n: &Node, id: &str| -> u16 {
        n.table()[id]
            .3
            .split(['-', ' '])
            .next()
            .and_then(|s| s.parse().ok())
            .expect("a slot")
    };
    let slot = first_slot(by_port(&mut nodes, redis), &redis_id);
    let tag = (0..)
        .map(|i| format!("t{i}"))
        .find(|t| streamd::cluster::slots::key_hash_slot(t.as_bytes()) == slot)
        .expect("a tag in the slot");
    let keys: Vec<String> = (0..3).map(|i| format!("bids:{{{tag}}}:{i}")).collect();
    let src = by_port(&mut nodes, redis);
    for key in &keys {
        let mut session: Vec<String> = (1..=5).map(|i| format!("xadd {key} {i}-1 n {i}")).collect();
        session.push(format!("xgroup create {key} g 0"));
        session.push(format!("xreadgroup group g c1 count 3 streams {key} >"));
        session.push(format!("xack {key} g 1-1"));
        src.cli_session(&session);
    }
    let before: Vec<String> = keys.iter().map(|k| stream_state(src, k)).collect();
    assert!(
        before[0].contains("2-1") && before[0].contains("c1"),
        "{}",
        before[0]
    );
    // Redis → streamd: MIGRATE from Redis, RESTORE-ASKING into streamd.
    reshard(&nodes[0], &redis_id, &ours_id, 10);
    let dst = by_port(&mut nodes, ours);
    let after: Vec<String> = keys.iter().map(|k| stream_state(dst, k)).collect();
    assert_eq!(after, before, "the streams as streamd serves them");
    let moved = format!("MOVED {slot} 127.0.0.1:{ours}");
    assert_eq!(by_port(&mut nodes, redis).cli(&["xlen", &keys[0]]), moved);
    // streamd → Redis: our MIGRATE, our DUMP payloads into Redis's RESTORE-ASKING.
    reshard(&nodes[0], &ours_id, &redis_id, 10);
    let back: Vec<String> = keys
        .iter()
        .map(|k| stream_state(by_port(&mut nodes, redis), k))
        .collect();
    assert_eq!(back, before, "the streams back on Redis");
    assert_eq!(
        by_port(&mut nodes, ours).cli(&["exists", &keys[0]]),
        format!("MOVED {slot} 127.0.0.1:{redis}")
    );
}

/// A writer on its own connection: `XADD key * n <i>` then `WAIT 1 500`, again and
/// again, until the connection fails or `stop` is set. Returns the `n` of every write
/// that was acknowledged (an ID, then WAIT answered 1).
fn acked_writer(
    port: u16,
    key: String,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    acked: std::sync::Arc<std::sync::Mutex<Vec<u64>>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let Ok(s) = TcpStream::connect(("127.0.0.1", port)) else {
            return;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        let mut w = s.try_clone().expect("clone");
        let mut r = BufReader::new(s);
        let mut line = String::new();
        let read_line = |r: &mut BufReader<TcpStream>, line: &mut String| {
            line.clear();
            matches!(r.read_line(line), Ok(n) if n > 0)
        };
        for n in 0u64.. {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                return;
            }
            let nt = n.to_string();
            let cmd = format!(
                "*5\r\n$4\r\nXADD\r\n${}\r\n{key}\r\n$1\r\n*\r\n$1\r\nn\r\n${}\r\n{nt}\r\n\
                 *3\r\n$4\r\nWAIT\r\n$1\r\n1\r\n$3\r\n500\r\n",
                key.len(),
                nt.len()
            );
            if w.write_all(cmd.as_bytes()).is_err() || !read_line(&mut r, &mut line) {
                return;
            }
            let added = line.starts_with('$');
            if added && !read_line(&mut r, &mut line) {
                return;
            }
            if !read_line(&mut r, &mut line) {
                return;
            }
            if added && line.trim_end() == ":1" {
                acked.lock().expect("acked").push(n);
            }
        }
    })
}

/// Composed faults on one shard under `XADD` + `WAIT 1`: the replica stopped (SIGSTOP)
/// while writes go on, then resumed; then the primary killed (-9) mid-write. Every write
/// WAIT acknowledged is on the replica that takes over, once each; the old primary,
/// restarted on its directory, rejoins as its replica and ends up with the same stream.
#[test]
fn no_wait_acknowledged_write_is_lost_when_a_cluster_replica_takes_over() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    let mut nodes = start_all(&[false; 6]);
    create(&nodes);
    let (p, r) = shards(&nodes[0])[1];
    let key = key_on(by_port(&mut nodes, p), p, "faults");
    let acked = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let count = |a: &Arc<Mutex<Vec<u64>>>| a.lock().expect("acked").len();
    let writer = acked_writer(p, key.clone(), stop.clone(), acked.clone());
    wait_for("50 acknowledged writes", 30, || {
        (count(&acked) >= 50, count(&acked).to_string())
    });
    // The replica stalls: writes go on but are not acknowledged; then it catches up.
    let replica_pid = by_port(&mut nodes, r)
        .child
        .as_ref()
        .expect("running")
        .id()
        .to_string();
    let signal = |sig: &str| {
        let ok = Command::new("kill")
            .args([sig, &replica_pid])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill {sig} {replica_pid}");
    };
    signal("-STOP");
    let before = count(&acked);
    std::thread::sleep(Duration::from_millis(1500));
    signal("-CONT");
    wait_for("20 more acknowledged writes after the stall", 30, || {
        (count(&acked) >= before + 20, count(&acked).to_string())
    });
    // The primary dies with writes in flight.
    by_port(&mut nodes, p).kill();
    writer.join().expect("writer");
    stop.store(true, Ordering::Relaxed);
    let acked = acked.lock().expect("acked").clone();
    let survivors: Vec<u16> = nodes.iter().map(|n| n.port).filter(|&x| x != p).collect();
    wait_promoted(
        &nodes,
        &survivors,
        r,
        "the replica to be a primary everywhere",
    );
    let promoted = nodes.iter().find(|n| n.port == r).expect("node");
    let entries = promoted.cli(&["xrange", &key, "-", "+"]);
    let mut seen: BTreeMap<u64, usize> = BTreeMap::new();
    let mut lines = entries.lines();
    while let Some(l) = lines.next() {
        if l == "n" {
            let n: u64 = lines.next().and_then(|v| v.parse().ok()).expect("n value");
            *seen.entry(n).or_default() += 1;
        }
    }
    let lost: Vec<u64> = acked
        .iter()
        .copied()
        .filter(|n| !seen.contains_key(n))
        .collect();
    let twice: Vec<u64> = seen
        .iter()
        .filter(|(_, c)| **c > 1)
        .map(|(n, _)| *n)
        .collect();
    assert!(
        lost.is_empty() && twice.is_empty(),
        "{} acknowledged writes; lost {lost:?}, duplicated {twice:?}",
        acked.len()
    );
    // The old primary comes back on its directory and follows the new one.
    by_port(&mut nodes, p).restart(&[]);
    let promoted = nodes.iter().find(|n| n.port == r).expect("node");
    let old = nodes.iter().find(|n| n.port == p).expect("node");
    wait_for(
        "the old primary to sync as the new one's replica",
        30,
        || {
            let session =
                promoted.cli_session(&[format!("xadd {key} * n done"), "wait 1 1000".into()]);
            let ok = old.role() == "slave" && session.last().map(String::as_str) == Some("1");
            (ok, format!("{} {session:?}", old.role()))
        },
    );
    // What each holds, read on the replica with READONLY (else it redirects).
    let view = |n: &Node| {
        let mut lines = n.cli_session(&[
            "readonly".into(),
            format!("xrange {key} - +"),
            format!("xinfo stream {key}"),
        ]);
        lines.retain(|l| l != "OK");
        lines.join("\n")
    };
    let (a, b) = (view(promoted), view(old));
    assert_eq!(
        a, b,
        "the old primary's stream differs from the new primary's"
    );
}

/// A node learns a primary's config epoch from the same frame as its slots: the PONG that
/// completes their handshake. Taking the slots without the epoch (as once happened) left
/// the primary at config epoch 0 in that node's view until its next PING; a primary killed
/// before then had a replica whose vote requests carried epoch 0 (a replica sends its
/// primary's), and every other primary refused them ("slot epoch > reqEpoch"): no failover,
/// ever. A fake primary here answers the handshake and then says nothing more.
#[test]
fn the_handshake_pong_teaches_a_primarys_config_epoch_with_its_slots() {
    use std::io::Read;
    use streamd::cluster::bus::{self, Body, Header, Message, PingBody};
    use streamd::cluster::slots::SlotBitmap;
    const FAKE_ID: &str = "f00dfacef00dfacef00dfacef00dfacef00dface";
    let a = Node::start(false);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the fake bus port");
    let cport = listener.local_addr().expect("addr").port();
    let fake_port = free_port_pair();
    assert_eq!(
        a.cli(&[
            "cluster",
            "meet",
            "127.0.0.1",
            &fake_port.to_string(),
            &cport.to_string()
        ]),
        "OK"
    );
    // A connects to the fake's bus port and sends MEET.
    listener.set_nonblocking(true).expect("nonblocking");
    let deadline = Instant::now() + Duration::from_secs(AGREE_SECS);
    let mut link = loop {
        match listener.accept() {
            Ok((stream, _)) => break stream,
            Err(_) => {
                assert!(Instant::now() < deadline, "A never connected to the fake");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    };
    link.set_nonblocking(false).expect("blocking");
    link.set_read_timeout(Some(Duration::from_secs(AGREE_SECS)))
        .expect("read timeout");
    let mut frame = vec![0u8; 8];
    link.read_exact(&mut frame).expect("A's first frame");
    let len = bus::frame_length(&frame)
        .expect("a valid length")
        .expect("eight bytes are enough");
    frame.resize(len, 0);
    link.read_exact(&mut frame[8..]).expect("A's first frame");
    let meet = Message::decode(&frame).expect("A's MEET decodes");
    assert!(matches!(meet.body, Body::Meet(_)), "{:?}", meet.body);
    // One PONG: a primary of slots 0-99 at config epoch 7; then silence.
    let mut slots = SlotBitmap::new();
    slots.set_range(0, 99);
    let pong = Message {
        header: Header {
            current_epoch: 7,
            config_epoch: 7,
            ..common::bus::fake_primary_header(FAKE_ID, fake_port, cport, slots)
        },
        body: Body::Pong(PingBody::default()),
    };
    link.write_all(&pong.encode().expect("PONG encodes"))
        .expect("answer A's MEET");
    let mut line = String::new();
    wait_for(
        "A to list the fake primary with its slots",
        AGREE_SECS,
        || {
            line = a
                .cli(&["cluster", "nodes"])
                .lines()
                .find(|l| l.starts_with(FAKE_ID))
                .unwrap_or("")
                .to_string();
            (line.ends_with(" 0-99"), line.clone())
        },
    );
    let fields: Vec<&str> = line.split(' ').collect();
    assert_eq!(fields[2], "master", "{line}");
    assert_eq!(
        fields[6], "7",
        "its config epoch came with its slots: {line}"
    );
    assert_eq!(a.info("cluster_current_epoch"), "7");
    drop(link);
}

/// A 3+3 cluster of streamd nodes with `min-sync-replicas 1` switched on at run time
/// on every node (a primary started with it would come back fenced).
fn start_sync_cluster() -> Vec<Node> {
    let nodes = start_all(&[false; 6]);
    create(&nodes);
    for n in &nodes {
        assert_eq!(n.cli(&["config", "set", "min-sync-replicas", "1"]), "OK");
    }
    nodes
}

/// Whether replica `n` is in its primary's sync set (INFO's `sync_replica_member`).
fn is_sync_member(n: &Node) -> bool {
    n.cli(&["info", "replication"])
        .lines()
        .any(|l| l == "sync_replica_member:1")
}

/// Waits until the replica on `port` is in its primary's sync set.
fn wait_sync_member(nodes: &mut [Node], port: u16, what: &str) {
    wait_for(what, AGREE_SECS, || {
        (is_sync_member(by_port(nodes, port)), String::new())
    });
}

/// Writes `count` entries to `key` on `node` without WAIT; every one must be
/// acknowledged (an ID back).
fn xadd_acknowledged(node: &Node, key: &str, count: usize) {
    let session: Vec<String> = (0..count)
        .map(|i| format!("xadd {key} {}-1 i {i}", i + 1))
        .collect();
    let replies = node.cli_session(&session);
    assert!(
        replies.len() == count && replies.iter().all(|r| r.ends_with("-1")),
        "{replies:?}"
    );
}

/// Synchronous replication in a cluster (`min-sync-replicas`, docs/replication.md): a
/// replica in its primary's sync set has every write the primary acknowledged without
/// WAIT and wins the election when the primary dies; a replica outside the set refuses
/// `CLUSTER FAILOVER FORCE` and does not stand for the election at all.
#[test]
fn only_a_replica_of_the_sync_set_takes_over_in_a_cluster() {
    let mut nodes = start_sync_cluster();
    let sh = shards(&nodes[0]);
    let (p0, r0) = sh[0];
    let (p2, r2) = sh[2];
    for r in [r0, r2] {
        wait_sync_member(
            &mut nodes,
            r,
            "the replicas to join their primaries' sync sets",
        );
    }
    let key = key_on(by_port(&mut nodes, p2), p2, "sync");
    xadd_acknowledged(by_port(&mut nodes, p2), &key, 20);
    // Acknowledged means on the replica already (a replica's reads are not held).
    assert_eq!(by_port(&mut nodes, r2).cli(&["-c", "readonly"]), "OK");
    let on_replica =
        by_port(&mut nodes, r2).cli_session(&["readonly".into(), format!("xlen {key}")]);
    assert_eq!(on_replica.last().map(String::as_str), Some("20"));
    by_port(&mut nodes, p2).kill();
    let survivors: Vec<u16> = nodes.iter().map(|n| n.port).filter(|&p| p != p2).collect();
    wait_promoted(
        &nodes,
        &survivors,
        r2,
        "the sync set's replica to take over",
    );
    // Its set is empty now: it refuses writes, and holds replies showing data, until a
    // replica joins it (docs/replication.md).
    let refused = by_port(&mut nodes, r2).cli(&["xadd", &key, "*", "i", "x"]);
    assert!(refused.starts_with("NOREPLICAS"), "{refused}");

    // Removed from its primary's set, r0 may lack acknowledged writes.
    let addr = format!("127.0.0.1:{r0}");
    assert_eq!(
        by_port(&mut nodes, p0).cli(&["syncset", "remove", &addr]),
        "OK"
    );
    wait_for("r0 to leave the sync set", AGREE_SECS, || {
        (!is_sync_member(by_port(&mut nodes, r0)), String::new())
    });
    let forced = by_port(&mut nodes, r0).cli(&["cluster", "failover", "force"]);
    assert!(
        forced.starts_with("ERR this replica is not in its primary's sync set"),
        "{forced}"
    );
    let takeover = by_port(&mut nodes, r0).cli(&["cluster", "failover", "takeover"]);
    assert!(takeover.starts_with("ERR this replica"), "{takeover}");
    by_port(&mut nodes, p0).kill();
    wait_for("r0 to decline the election", FAILOVER_SECS, || {
        let log = by_port(&mut nodes, r0).log_text();
        (log.contains("Not standing for election"), String::new())
    });
    assert_eq!(by_port(&mut nodes, r0).role(), "slave");
}

/// A primary killed and restarted before the others saw it fail comes back fenced
/// (`min-sync-replicas` on its command line); were it to answer the bus, no one would
/// ever count it down and its slots would stay unserved. Fenced, it reads the bus but
/// sends nothing: its peers mark it failed, the replica of its sync set (which has every
/// acknowledged write) is elected, and the new owner's messages turn the old primary
/// into its replica, which lifts the fence.
#[test]
fn a_primary_restarted_fenced_is_failed_over_and_rejoins_in_a_cluster() {
    let mut nodes = start_sync_cluster();
    let (p, r) = shards(&nodes[0])[1];
    wait_sync_member(&mut nodes, r, "the replica to join its primary's sync set");
    let key = key_on(by_port(&mut nodes, p), p, "fenced");
    xadd_acknowledged(by_port(&mut nodes, p), &key, 20);
    let old = by_port(&mut nodes, p);
    old.kill();
    old.restart(&["--min-sync-replicas", "1"]);
    let survivors: Vec<u16> = nodes.iter().map(|n| n.port).filter(|&n| n != p).collect();
    wait_promoted(&nodes, &survivors, r, "the sync set's replica to take over");
    let old = nodes.iter().find(|n| n.port == p).expect("node");
    wait_for(
        "the fenced primary to become the new primary's replica",
        FAILOVER_SECS,
        || {
            let ok = old.role() == "slave" && old.cli(&["ping"]) == "PONG";
            (ok, format!("{} {}", old.role(), old.cli(&["ping"])))
        },
    );
    let promoted = nodes.iter().find(|n| n.port == r).expect("node");
    assert_eq!(promoted.cli(&["xlen", &key]), "20");
    // The old primary is in the new one's sync set: writes are acknowledged again.
    wait_for(
        "a write acknowledged by the new primary",
        AGREE_SECS,
        || {
            let id = promoted.cli(&["xadd", &key, "*", "i", "after"]);
            (id.contains('-') && !id.contains(' '), id)
        },
    );
}

/// `cluster-announce-port` and `cluster-announce-bus-port` (a node behind NAT or in a
/// container): the node names them for itself, every peer learns them from its
/// messages, and redirections send clients there, as in Redis; the bus still listens on
/// its real port. Side by side with Redis 7.0 as the peer that learns them.
#[test]
fn announced_ports_are_what_the_cluster_sees() {
    let (announced, announced_bus) = (free_port_pair(), free_port_pair() + 1);
    let extra =
        format!("cluster-announce-port {announced}\ncluster-announce-bus-port {announced_bus}\n");
    let node = Node::start_with(false, &extra);
    // Before any MEET a node does not know its own IP (Redis prints `:port@cport` too).
    let me = format!(":{announced}@{announced_bus}");
    let nodes = node.cli(&["cluster", "nodes"]);
    assert!(nodes.contains(&me), "{nodes}");
    assert_eq!(node.cli(&["cluster", "addslots", "0"]), "OK");
    let moved = node.cli(&["cluster", "slots"]);
    assert!(moved.contains(&announced.to_string()), "{moved}");
    // A Redis peer met at the real bus port records the announced ports.
    let peer = Node::start(true);
    let bus = (node.port + 10000).to_string();
    assert_eq!(
        peer.cli(&["cluster", "meet", "127.0.0.1", &node.port.to_string(), &bus]),
        "OK"
    );
    let seen = format!("127.0.0.1{me}");
    wait_for("the peer to learn the announced ports", AGREE_SECS, || {
        let t = peer.cli(&["cluster", "nodes"]);
        (t.contains(&seen), t)
    });
}
