//! The Grafana dashboard (`conf/grafana/streamd.json`) and the alert rules
//! (`conf/prometheus/streamd-alerts.yml`) against a real Prometheus (Debian's `prometheus`
//! package, which `scripts/test` installs) scraping real streamd servers.
//!
//! Seven servers, each with its metrics endpoint, make the scenarios:
//!
//! ```text
//!  healthy:  H (primary, min-replicas-to-write 1) ── HR (replica)     C (one-node cluster)
//!            a consumer reads and acknowledges everything H's producer writes
//!  faulty:   F1 (appendonly, appendfsync always) ── F1R (replica, then SIGSTOPped)
//!              group "lagging": 1500 entries behind and a producer adding more
//!              group "stuck": an entry pending for an hour (XCLAIM ... IDLE)
//!              group "senders": MAXDELIVERIES 1, an entry delivered twice → dead letter
//!            F2 (min-replicas-to-write 1, min-sync-replicas 1 and no replica; maxmemory
//!            just above its usage)
//!            D  (replica of a port where nothing listens)
//! ```
//!
//! One test, in steps: `promtool check rules` passes on the rules file; every query of
//! the dashboard (its `$instance`/`$stream` variables as "All", `$__rate_interval` as
//! `1m`, and its `label_values(...)` variable queries) and every rule's `expr` returns at
//! least one series through `/api/v1/query`, so none names a metric that is not served;
//! every rule evaluates without error; each alert reaches `firing` on the server made to
//! fire it; and no alert ever fires on H, HR or C, where the consumer-group alerts are
//! never even pending.
//!
//! What Prometheus loads is a copy of the rules with two changes, both printed: every
//! `for:` is `2s` (the test cannot wait minutes), and StreamdFsyncSlow's threshold of
//! 50 ms is 0 (no test can make a disk slow on demand; the expression, its series and
//! its arithmetic are still the real ones). Every other threshold is the shipped one:
//! the stuck entry is an hour old (XCLAIM's IDLE), the lag passes 1000, the replica
//! stops acknowledging for more than 10 s.
//!
//! Waits are for conditions (a target up, an alert firing, a query non-empty) with
//! bounded timeouts, never fixed sleeps. Without the `prometheus` binary the test
//! fails with the command that installs it.

mod common;

use common::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const DASHBOARD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/conf/grafana/streamd.json");
const RULES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/conf/prometheus/streamd-alerts.yml"
);

/// How long Prometheus may take to start and to see every target up.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the alerts may take to fire: the slowest is StreamdReplicaLagging (more
/// than 10 s without an ACK, then `for: 2s`, evaluated every second).
const FIRE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long every query may take to return a series (rates need two samples).
const QUERY_TIMEOUT: Duration = Duration::from_secs(60);
/// The alerts about consumer groups: on the healthy servers not even pending.
const QUEUE_ALERTS: [&str; 3] = [
    "StreamdGroupLagGrowing",
    "StreamdPendingEntryStuck",
    "StreamdEntriesDeadLettered",
];

/// A Prometheus server child with its own directory; killed on drop.
struct Prometheus {
    port: u16,
    child: Child,
    dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Starts `prometheus` on a free 127.0.0.1 port with `config` (and `rules` beside it as
    /// `streamd-alerts.yml`), and waits for `/-/ready`.
    fn start(program: &Path, config: &str, rules: &str) -> Prometheus {
        let mut last = String::new();
        for _ in 0..5 {
            let dir = tempfile::Builder::new()
                .prefix("prometheus-test-")
                .tempdir()
                .expect("temp dir");
            std::fs::write(dir.path().join("prometheus.yml"), config).expect("write config");
            std::fs::write(dir.path().join("streamd-alerts.yml"), rules).expect("write rules");
            let port = free_port();
            let log = std::fs::File::create(dir.path().join("prometheus.log")).expect("log");
            let child = Command::new(program)
                .arg(format!(
                    "--config.file={}",
                    dir.path().join("prometheus.yml").display()
                ))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    dir.path().join("data").display()
                ))
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .stdout(Stdio::from(log.try_clone().expect("log")))
                .stderr(Stdio::from(log))
                .spawn()
                .unwrap_or_else(|e| panic!("cannot spawn {}: {e}", program.display()));
            let mut p = Prometheus { port, child, dir };
            let deadline = Instant::now() + START_TIMEOUT;
            loop {
                if let Ok(Some(status)) = p.child.try_wait() {
                    last = format!("prometheus exited with {status}:\n{}", p.log());
                    break; // the port was taken, perhaps: try another
                }
                if http_get(port, "/-/ready").is_some_and(|(code, _)| code == 200) {
                    return p;
                }
                assert!(
                    Instant::now() < deadline,
                    "prometheus not ready in {START_TIMEOUT:?}:\n{}",
                    p.log()
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        panic!("prometheus did not start: {last}");
    }

    /// The end of its log.
    fn log(&self) -> String {
        let text =
            std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// `GET path` on the HTTP API, as JSON; panics with the log when it does not answer
    /// `"status": "success"`.
    fn api(&self, path: &str) -> Value {
        let (code, body) = http_get(self.port, path)
            .unwrap_or_else(|| panic!("no answer to {path}:\n{}", self.log()));
        let v: Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("{path}: HTTP {code}, not JSON ({e}): {body}"));
        assert_eq!(v["status"], "success", "{path}: HTTP {code}: {body}");
        v["data"].clone()
    }

    /// The series an instant query returns (an error fails the test, naming the query).
    fn query(&self, q: &str) -> Vec<Value> {
        let data = self.api(&format!("/api/v1/query?query={}", url_encode(q)));
        match &data["result"] {
            Value::Array(series) => series.clone(),
            other => panic!("{q}: result is not a vector: {other}"),
        }
    }
}

/// `GET path` with HTTP/1.0 (so the reply is neither chunked nor kept alive): the status
/// code and the body, or `None` when nothing answers.
fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let code = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((code, body.to_string()))
}

/// Percent-encodes a query parameter.
fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A streamd with its metrics endpoint, and its role in the scenarios.
struct Node {
    name: &'static str,
    server: Server,
    metrics_port: u16,
}

impl Node {
    fn start(name: &'static str, args: &[&str]) -> Node {
        let metrics_port = free_port();
        let mp = metrics_port.to_string();
        let mut all = vec!["--metrics-port", mp.as_str()];
        all.extend_from_slice(args);
        Node {
            name,
            server: start_server_with(&all),
            metrics_port,
        }
    }

    /// Prometheus's `instance` label for it.
    fn instance(&self) -> String {
        format!("127.0.0.1:{}", self.metrics_port)
    }

    fn raw(&self) -> Raw {
        self.server.raw()
    }
}

/// Waits (bounded) until INFO `section` of `node` has `field:value`.
fn wait_info(node: &Node, section: &str, field: &str, value: &str) {
    let mut r = node.raw();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = info_field(&mut r, section, field);
        if got.as_deref() == Some(value) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{}: INFO {section} never had {field}:{value} (last {got:?})\n{}",
            node.name,
            node.server.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The ID of the first entry of `key` (from XRANGE's reply bytes).
fn first_id(r: &mut Raw, key: &str) -> String {
    let reply = c(r, &format!("XRANGE {key} - + COUNT 1"));
    reply
        .split("\r\n")
        .find(|l| l.contains('-') && !l.starts_with('*') && !l.starts_with('$'))
        .unwrap_or_else(|| panic!("no entry in {key}: {reply:?}"))
        .to_string()
}

/// The rules as the test loads them: `for:` shortened and StreamdFsyncSlow's threshold
/// at 0 (see the module doc). Panics if the file no longer has what it changes.
fn test_rules(rules: &str) -> String {
    let fsync = "rate(streamd_aof_fsyncs_total[5m]) > 0.05";
    assert!(rules.contains(fsync), "StreamdFsyncSlow's expr changed");
    let mut out = String::new();
    for line in rules.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("for:") {
            let indent = &line[..line.len() - trimmed.len()];
            out.push_str(&format!("{indent}for: 2s\n"));
        } else {
            out.push_str(&line.replace(fsync, "rate(streamd_aof_fsyncs_total[5m]) > 0"));
            out.push('\n');
        }
    }
    out
}

/// `(alert, expr)` of every rule, read line by line (the file keeps each on one line).
fn rule_exprs(rules: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut alert = None;
    for line in rules.lines() {
        let t = line.trim_start();
        if let Some(name) = t.strip_prefix("- alert:") {
            alert = Some(name.trim().to_string());
        } else if let Some(expr) = t.strip_prefix("expr:") {
            let expr = expr.trim();
            assert!(
                !expr.is_empty() && !expr.starts_with('|') && !expr.starts_with('>'),
                "keep every expr on one line: {line}"
            );
            out.push((alert.take().expect("expr without alert"), expr.to_string()));
        }
    }
    out
}

/// Every query of the dashboard, with Grafana's variables replaced: `$instance` and
/// `$stream` as their "All" values, `$__rate_interval` as 1m. A `label_values(q, l)`
/// variable query becomes `q`. Returns `(where, query)`.
fn dashboard_queries(dash: &Value) -> Vec<(String, String)> {
    let grafana = |q: &str| {
        q.replace("$instance", ".+")
            .replace("$stream", ".*")
            .replace("$__rate_interval", "1m")
    };
    let mut out = Vec::new();
    for var in dash["templating"]["list"].as_array().expect("templating") {
        if let Some(q) = var["query"]["query"].as_str() {
            let inner = q
                .strip_prefix("label_values(")
                .and_then(|rest| rest.rsplit_once(','))
                .map_or(q, |(inner, _)| inner);
            out.push((format!("variable ${}", var["name"]), grafana(inner)));
        }
    }
    let mut panels = 0;
    for p in dash["panels"].as_array().expect("panels") {
        for t in p["targets"].as_array().into_iter().flatten() {
            let expr = t["expr"].as_str().expect("target without expr");
            out.push((format!("panel {}", p["title"]), grafana(expr)));
        }
        panels += usize::from(p["type"] != "row");
    }
    assert!(panels >= 20, "only {panels} panels in the dashboard");
    out
}

#[test]
fn dashboard_queries_and_alert_rules_work_against_a_real_prometheus() {
    let started = Instant::now();
    let prometheus = require_program("prometheus", "prometheus");
    let promtool = require_program("promtool", "prometheus");

    // promtool on the shipped file.
    let check = Command::new(&promtool)
        .args(["check", "rules", RULES])
        .output()
        .expect("run promtool");
    assert!(
        check.status.success(),
        "promtool check rules failed:\n{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    let rules = std::fs::read_to_string(RULES).expect("read rules");
    let exprs = rule_exprs(&rules);
    let alerts: BTreeSet<String> = exprs.iter().map(|(a, _)| a.clone()).collect();
    let loaded = test_rules(&rules);
    eprintln!("rules as loaded (for: 2s, StreamdFsyncSlow's threshold 0):\n{loaded}");
    let dash: Value =
        serde_json::from_str(&std::fs::read_to_string(DASHBOARD).expect("read dashboard"))
            .expect("the dashboard is JSON");
    let queries = dashboard_queries(&dash);

    // The servers.
    // H tiers its streams (a 1 MB hot budget), so the tiering panels have series.
    let h = Node::start(
        "H",
        &[
            "--stream-tiering",
            "yes",
            "--stream-tiering-hot-bytes",
            "1mb",
        ],
    );
    let hr = Node::start("HR", &[]);
    let bus = free_port().to_string();
    let cl = Node::start("C", &["--cluster-enabled", "yes", "--cluster-port", &bus]);
    let f1 = Node::start(
        "F1",
        &[
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--repl-timeout",
            "600",
        ],
    );
    let f1r = Node::start("F1R", &[]);
    let f2 = Node::start("F2", &[]);
    let d = Node::start("D", &[]);
    let nodes = [&h, &hr, &cl, &f1, &f1r, &f2, &d];
    let healthy: BTreeSet<String> = [&h, &hr, &cl].iter().map(|n| n.instance()).collect();
    let name_of: BTreeMap<String, &str> = nodes.iter().map(|n| (n.instance(), n.name)).collect();

    // Replication: HR follows H, F1R follows F1, D follows a port nobody serves.
    let dead = free_port();
    for (replica, primary) in [(&hr, h.server.port), (&f1r, f1.server.port), (&d, dead)] {
        let reply = c(
            &mut replica.raw(),
            &format!("REPLICAOF 127.0.0.1 {primary}"),
        );
        assert_eq!(reply, "+OK\r\n", "{}: {reply}", replica.name);
    }
    wait_info(&hr, "replication", "master_link_status", "up");
    wait_info(&f1r, "replication", "master_link_status", "up");
    // H refuses writes without one good replica: HR is one.
    let mut hraw = h.raw();
    assert_eq!(
        c(&mut hraw, "CONFIG SET min-replicas-to-write 1"),
        "+OK\r\n"
    );
    wait_info(&h, "replication", "min_slaves_good_slaves", "1");
    // H: 4 MB of history, four times its hot budget: some of it goes cold.
    let payload = "h".repeat(200);
    for chunk in 0..40 {
        let mut batch = Vec::new();
        for i in 0..500u64 {
            batch.extend_from_slice(&encode_cmd(&[
                b"XADD",
                b"history",
                format!("{}-1", chunk * 500 + i + 1).as_bytes(),
                b"p",
                payload.as_bytes(),
            ]));
        }
        hraw.send(&batch);
        hraw.read_replies(500);
    }
    {
        let deadline = Instant::now() + Duration::from_secs(30);
        while info_field(&mut hraw, "tiering", "tiering_cold_nodes").as_deref() == Some("0") {
            assert!(Instant::now() < deadline, "H never moved a node cold");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    assert_eq!(
        c(&mut hraw, "XGROUP CREATE orders workers $ MKSTREAM"),
        "+OK\r\n"
    );

    // C: a one-node cluster serving every slot.
    assert_eq!(c(&mut cl.raw(), "CLUSTER ADDSLOTSRANGE 0 16383"), "+OK\r\n");
    {
        let mut r = cl.raw();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !c(&mut r, "CLUSTER INFO").contains("cluster_state:ok") {
            assert!(
                Instant::now() < deadline,
                "C never reached cluster_state:ok"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    // F1: a lagging group, a stuck entry, a group with a dead-letter stream.
    let mut f1raw = f1.raw();
    let mut batch = Vec::new();
    for i in 0..1500 {
        batch.extend_from_slice(&encode_cmd(&[
            b"XADD",
            b"jobs",
            b"*",
            b"n",
            i.to_string().as_bytes(),
        ]));
    }
    f1raw.send(&batch);
    f1raw.read_replies(1500);
    assert_eq!(c(&mut f1raw, "XGROUP CREATE jobs lagging 0"), "+OK\r\n");
    c(&mut f1raw, "XADD tasks * task 1");
    assert_eq!(c(&mut f1raw, "XGROUP CREATE tasks stuck 0"), "+OK\r\n");
    c(
        &mut f1raw,
        "XREADGROUP GROUP stuck hung COUNT 1 STREAMS tasks >",
    );
    let stuck = first_id(&mut f1raw, "tasks");
    // Delivered an hour ago, as far as the PEL knows.
    let claimed = c(
        &mut f1raw,
        &format!("XCLAIM tasks stuck hung 0 {stuck} IDLE 3600000 JUSTID"),
    );
    assert!(claimed.contains(&stuck), "{claimed}");
    c(&mut f1raw, "XADD mail * to someone");
    assert_eq!(c(&mut f1raw, "XGROUP CREATE mail senders 0"), "+OK\r\n");
    assert_eq!(
        c(
            &mut f1raw,
            "XGROUP SETDLQ mail senders mail:dead MAXDELIVERIES 1"
        ),
        "+OK\r\n"
    );
    c(&mut f1raw, "XREADGROUP GROUP senders s1 STREAMS mail >");

    // F2: writes need a replica it does not have; maxmemory just above what it uses.
    let mut f2raw = f2.raw();
    assert_eq!(
        c(&mut f2raw, "CONFIG SET min-replicas-to-write 1"),
        "+OK\r\n"
    );
    // ... and synchronous replication on with an empty sync set.
    assert_eq!(c(&mut f2raw, "CONFIG SET min-sync-replicas 1"), "+OK\r\n");
    let refused = c(&mut f2raw, "XADD refused * f v");
    assert!(refused.starts_with("-NOREPLICAS"), "{refused}");
    let used: u64 = info_field(&mut f2raw, "memory", "used_memory")
        .and_then(|v| v.parse().ok())
        .expect("used_memory");
    let limit = used + used / 50;
    assert_eq!(
        c(&mut f2raw, &format!("CONFIG SET maxmemory {limit}")),
        "+OK\r\n"
    );

    // Prometheus scraping all seven every second, evaluating the rules every second.
    let targets: Vec<String> = nodes
        .iter()
        .map(|n| format!("\"{}\"", n.instance()))
        .collect();
    let config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
         rule_files:\n  - streamd-alerts.yml\n\
         scrape_configs:\n  - job_name: streamd\n    static_configs:\n      - targets: [{}]\n",
        targets.join(", ")
    );
    let prom = Prometheus::start(&prometheus, &config, &loaded);
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        let up = prom.query("up{job=\"streamd\"} == 1");
        if up.len() == nodes.len() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not every target up after {START_TIMEOUT:?}: {up:?}\n{}",
            prom.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // The workload: H's producer and consumer keep up; F1's producer feeds a group nobody
    // reads.
    let stop = Arc::new(AtomicBool::new(false));
    let workload = {
        let stop = stop.clone();
        let (hport, f1port) = (h.server.port, f1.server.port);
        std::thread::spawn(move || {
            let (mut h, mut f1) = (Raw::connect(hport), Raw::connect(f1port));
            let mut n = 0u64;
            // H's consumer acknowledges what it read one round later, so its group always
            // has a young pending entry: the stuck-entry alert sees a PEL and must not fire.
            let mut unacked: Vec<String> = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let added = c(&mut h, &format!("XADD orders * n {n}"));
                assert!(added.starts_with('$'), "H refused a write: {added}");
                for id in unacked.drain(..) {
                    c(&mut h, &format!("XACK orders workers {id}"));
                }
                let read = c(&mut h, "XREADGROUP GROUP workers w1 STREAMS orders >");
                unacked.extend(
                    read.split("\r\n")
                        .filter(|l| l.contains('-') && !l.starts_with('$'))
                        .map(String::from),
                );
                c(&mut f1, &format!("XADD jobs * n {n}"));
                std::thread::sleep(Duration::from_millis(50));
            }
            n
        })
    };

    // Once Prometheus holds a sample of F1's dead-letter counter, move an entry (a
    // second delivery with MAXDELIVERIES 1), so `increase` sees it; and stop F1R, so F1
    // sees its replica stop acknowledging and the scrapes of F1R time out.
    let f1_dead = format!(
        "streamd_stream_dead_lettered_entries_total{{instance=\"{}\"}} == 0",
        f1.instance()
    );
    let deadline = Instant::now() + START_TIMEOUT;
    while prom.query(&f1_dead).is_empty() {
        assert!(Instant::now() < deadline, "no sample of {f1_dead}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let second = c(&mut f1raw, "XREADGROUP GROUP senders s1 STREAMS mail 0");
    assert_eq!(
        c(&mut f1raw, "XLEN mail:dead"),
        ":1\r\n",
        "not dead-lettered: {second}"
    );
    let f1r_pid = f1r.server.pid().to_string();
    let stopped = Command::new("kill")
        .args(["-STOP", &f1r_pid])
        .status()
        .expect("kill -STOP");
    assert!(stopped.success());

    // Each alert fires on the server made for it; none is ever pending or firing on
    // the healthy ones.
    let expected: BTreeMap<&str, String> = [
        ("StreamdGroupLagGrowing", f1.instance()),
        ("StreamdPendingEntryStuck", f1.instance()),
        ("StreamdEntriesDeadLettered", f1.instance()),
        ("StreamdReplicaLagging", f1.instance()),
        ("StreamdFsyncSlow", f1.instance()),
        ("StreamdDown", f1r.instance()),
        ("StreamdTooFewReplicas", f2.instance()),
        ("StreamdSyncSetTooSmall", f2.instance()),
        ("StreamdMemoryNearLimit", f2.instance()),
        ("StreamdReplicaLinkDown", d.instance()),
    ]
    .into_iter()
    .collect();
    let named: BTreeSet<String> = expected.keys().map(|s| s.to_string()).collect();
    assert_eq!(
        named, alerts,
        "every alert of the rules file needs a scenario here"
    );
    let fire_started = Instant::now();
    let mut firing: BTreeMap<String, Duration> = BTreeMap::new();
    let deadline = Instant::now() + FIRE_TIMEOUT;
    loop {
        let data = prom.api("/api/v1/alerts");
        for a in data["alerts"].as_array().expect("alerts") {
            let name = a["labels"]["alertname"].as_str().unwrap_or("?");
            let instance = a["labels"]["instance"].as_str().unwrap_or("?");
            // On the healthy servers no alert may fire, and the queue alerts may not
            // even be pending. (StreamdDown may be pending for one slow scrape on a
            // loaded machine: it fires only after 2 s of failed scrapes.)
            let queue_alert = QUEUE_ALERTS.contains(&name);
            assert!(
                !healthy.contains(instance) || (a["state"] != "firing" && !queue_alert),
                "{name} is {} on healthy {}: {a}",
                a["state"],
                name_of.get(instance).unwrap_or(&"?"),
            );
            if a["state"] == "firing" && expected.get(name).is_some_and(|i| i == instance) {
                firing
                    .entry(name.to_string())
                    .or_insert_with(|| fire_started.elapsed());
            }
        }
        if firing.len() == expected.len() {
            break;
        }
        if Instant::now() >= deadline {
            let missing: Vec<_> = expected
                .iter()
                .filter(|(a, _)| !firing.contains_key(**a))
                .map(|(a, i)| format!("{a} on {}", name_of[i]))
                .collect();
            panic!(
                "not firing after {FIRE_TIMEOUT:?}: {missing:?}\nalerts: {}\n{}",
                data["alerts"],
                prom.log()
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    eprintln!("seconds from the faults to firing: {firing:?}");

    // Every query of the rules (as loaded) and of the dashboard returns a series.
    let loaded_exprs = rule_exprs(&loaded);
    let all: Vec<(String, String)> = loaded_exprs
        .into_iter()
        .map(|(a, e)| (format!("alert {a}"), e))
        .chain(queries)
        // The healthy group is watched too: it has a lag and a (young) pending entry, so
        // the queue alerts' silence on H is a verdict, not a missing series.
        .chain(
            [
                "redis_stream_group_lag",
                "streamd_stream_group_oldest_pending_idle_seconds",
            ]
            .map(|m| {
                (
                    "healthy H".to_string(),
                    format!("{m}{{instance=\"{}\", group=\"workers\"}}", h.instance()),
                )
            }),
        )
        .collect();
    let deadline = Instant::now() + QUERY_TIMEOUT;
    let mut empty: Vec<&(String, String)> = all.iter().collect();
    loop {
        empty.retain(|(_, q)| prom.query(q).is_empty());
        if empty.is_empty() || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(
        empty.is_empty(),
        "queries with no series after {QUERY_TIMEOUT:?} (a metric not served, or a \
         scenario missing):\n{}",
        empty
            .iter()
            .map(|(w, q)| format!("  {w}: {q}"))
            .collect::<Vec<_>>()
            .join("\n")
    );

    // Every rule evaluates without error (e.g. no many-to-many matching).
    let groups = prom.api("/api/v1/rules");
    let mut rules_seen = 0;
    for g in groups["groups"].as_array().expect("groups") {
        for r in g["rules"].as_array().expect("rules") {
            rules_seen += 1;
            assert_eq!(r["health"], "ok", "rule {} fails: {r}", r["name"]);
        }
    }
    assert_eq!(rules_seen, alerts.len());

    stop.store(true, Ordering::Relaxed);
    let writes = workload.join().expect("workload thread");
    let _ = Command::new("kill").args(["-CONT", &f1r_pid]).status();
    eprintln!(
        "{} queries and {} alerts checked against Prometheus, {writes} workload rounds, \
         {:.1} s in all",
        all.len(),
        alerts.len(),
        started.elapsed().as_secs_f64()
    );
}
