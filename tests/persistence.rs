//! Persistence against the real binary: restarts keep every reply the same, acknowledged
//! writes survive `kill -9` under `appendfsync always` (also during a rewrite), a torn last
//! record is cut with a warning, a damaged middle record stops start-up with the documented
//! error, and `streamd --check-aof --fix` repairs it.
//!
//! Each test drives its own server processes on one data directory (started, killed and
//! restarted here rather than through `common::start_server`, which owns its directory).

mod common;

use common::{Raw, encode_cmd, free_port};
use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_streamd");

/// Log files get a running number so restarts do not overwrite each other's.
static STARTS: AtomicU64 = AtomicU64::new(0);

/// One server process on a given data directory.
struct Node {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Node {
    /// Starts streamd on `dir` and waits until it answers PING with PONG (so loading is
    /// over). Panics with the log if it does not come up.
    fn start(dir: &Path, extra: &[&str]) -> Node {
        let (mut child, port, log) = spawn(dir, extra);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "streamd exited during start-up ({status}):\n{}",
                    read_log(&log)
                );
            }
            if let Ok(mut r) = Raw::try_connect(port) {
                r.set_timeout(Duration::from_secs(5));
                r.send(b"*1\r\n$4\r\nPING\r\n");
                if let Ok(reply) = r.try_read_reply()
                    && reply == b"+PONG\r\n"
                {
                    return Node { child, port, log };
                }
            }
            assert!(
                Instant::now() < deadline,
                "no PONG in 30 s:\n{}",
                read_log(&log)
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn raw(&self) -> Raw {
        Raw::connect(self.port)
    }

    fn cmd(&self, args: &[&str]) -> Vec<u8> {
        self.raw().cmd_str(args)
    }

    fn log(&self) -> String {
        read_log(&self.log)
    }

    /// SIGKILL, no chance to flush anything.
    fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SHUTDOWN with `args`, waiting for the process to exit.
    fn shutdown(mut self, args: &[&str]) {
        let mut a = vec!["SHUTDOWN"];
        a.extend_from_slice(args);
        let mut r = self.raw();
        r.send(&encode_cmd(
            &a.iter().map(|s| s.as_bytes()).collect::<Vec<_>>(),
        ));
        let _ = r.try_read_reply();
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.child.try_wait().ok().flatten().is_none() {
            assert!(Instant::now() < deadline, "no exit after SHUTDOWN");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(dir: &Path, extra: &[&str]) -> (Child, u16, PathBuf) {
    let port = free_port();
    let n = STARTS.fetch_add(1, Ordering::Relaxed);
    let log = dir
        .parent()
        .expect("data dirs live in a temp dir")
        .join(format!(
            "streamd-{}-{n}.log",
            dir.file_name().unwrap().to_string_lossy()
        ));
    let out = fs::File::create(&log).expect("log file");
    let err = out.try_clone().expect("log file");
    let mut args = vec![
        "--port".to_string(),
        port.to_string(),
        "--dir".to_string(),
        dir.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let child = Command::new(BIN)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .spawn()
        .expect("spawn streamd");
    (child, port, log)
}

/// Starts streamd expecting it to fail; returns its log.
fn start_expect_failure(dir: &Path, extra: &[&str]) -> String {
    let (mut child, _port, log) = spawn(dir, extra);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            assert!(
                !status.success(),
                "exited with success:\n{}",
                read_log(&log)
            );
            return read_log(&log);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("streamd kept running:\n{}", read_log(&log));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn read_log(p: &Path) -> String {
    fs::read(p)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// A fresh data directory inside a temp dir (logs go beside it).
fn data_dir(tmp: &tempfile::TempDir, name: &str) -> PathBuf {
    let d = tmp.path().join(name);
    fs::create_dir_all(&d).unwrap();
    d
}

// --- a small RESP reader for the checks -------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum V {
    Str(Vec<u8>),
    Int(i64),
    Nil,
    Arr(Vec<V>),
    Err(String),
}

impl V {
    fn s(&self) -> String {
        match self {
            V::Str(b) => String::from_utf8_lossy(b).into_owned(),
            V::Int(i) => i.to_string(),
            other => format!("{other:?}"),
        }
    }
    fn arr(&self) -> &[V] {
        match self {
            V::Arr(a) => a,
            other => panic!("not an array: {other:?}"),
        }
    }
    fn int(&self) -> i64 {
        match self {
            V::Int(i) => *i,
            V::Str(b) => String::from_utf8_lossy(b).parse().unwrap(),
            other => panic!("not an integer: {other:?}"),
        }
    }
}

fn parse(buf: &[u8]) -> V {
    fn line(buf: &[u8], pos: &mut usize) -> String {
        let start = *pos;
        while &buf[*pos..*pos + 2] != b"\r\n" {
            *pos += 1;
        }
        let s = String::from_utf8_lossy(&buf[start..*pos]).into_owned();
        *pos += 2;
        s
    }
    fn one(buf: &[u8], pos: &mut usize) -> V {
        let t = buf[*pos];
        *pos += 1;
        let l = line(buf, pos);
        match t {
            b'+' => V::Str(l.into_bytes()),
            b'-' => V::Err(l),
            b':' => V::Int(l.parse().unwrap()),
            b'$' => {
                let n: i64 = l.parse().unwrap();
                if n < 0 {
                    return V::Nil;
                }
                let s = buf[*pos..*pos + n as usize].to_vec();
                *pos += n as usize + 2;
                V::Str(s)
            }
            b'*' => {
                let n: i64 = l.parse().unwrap();
                if n < 0 {
                    return V::Nil;
                }
                V::Arr((0..n).map(|_| one(buf, pos)).collect())
            }
            _ => panic!("unexpected RESP type {}", t as char),
        }
    }
    let mut pos = 0;
    one(buf, &mut pos)
}

// --- the observable state of a dataset ---------------------------------------------------

/// What a client can see of the dataset, split into the parts that must be identical
/// across a restart and the times that must only have grown.
#[derive(Debug, Default)]
struct Observed {
    /// (db, key, reply) of XRANGE, XINFO STREAM FULL, XINFO GROUPS, and per group the
    /// XPENDING extended form without the idle column: byte for byte.
    exact: Vec<(usize, String, String, Vec<u8>)>,
    /// (db, key, what, value in ms): PEL idle times, consumer idle/inactive, PTTL.
    times: Vec<(usize, String, String, i64)>,
}

/// Every reply that must survive a restart, node layout included (XINFO STREAM FULL's
/// radix-tree-keys/-nodes: snapshots keep the nodes as they are).
fn observe(node: &Node) -> Observed {
    let mut o = Observed::default();
    let mut r = node.raw();
    for db in 0..4usize {
        r.cmd_str(&["SELECT", &db.to_string()]);
        let mut keys: Vec<String> = parse(&r.cmd_str(&["KEYS", "*"]))
            .arr()
            .iter()
            .map(|k| k.s())
            .collect();
        keys.sort();
        for key in keys {
            let mut exact = |what: &str, reply: Vec<u8>| {
                o.exact.push((db, key.clone(), what.to_string(), reply));
            };
            exact("xrange", r.cmd_str(&["XRANGE", &key, "-", "+"]));
            let full = parse(&r.cmd_str(&["XINFO", "STREAM", &key, "FULL"]));
            exact("full", format!("{full:?}").into_bytes());
            exact("groups", r.cmd_str(&["XINFO", "GROUPS", &key]));
            let groups = parse(&r.cmd_str(&["XINFO", "GROUPS", &key]));
            for g in groups.arr() {
                let g = g.arr();
                let name = g[1].s();
                let pending = parse(&r.cmd_str(&["XPENDING", &key, &name, "-", "+", "100000"]));
                let mut shape = Vec::new();
                for p in pending.arr() {
                    let p = p.arr();
                    shape.push(format!("{} {} {}", p[0].s(), p[1].s(), p[3].s()));
                    o.times.push((
                        db,
                        key.clone(),
                        format!("{name} idle {}", p[0].s()),
                        p[2].int(),
                    ));
                }
                o.exact.push((
                    db,
                    key.clone(),
                    format!("pel {name}"),
                    shape.join("\n").into_bytes(),
                ));
                let consumers = parse(&r.cmd_str(&["XINFO", "CONSUMERS", &key, &name]));
                for c in consumers.arr() {
                    let c = c.arr();
                    let cname = c[1].s();
                    o.exact.push((
                        db,
                        key.clone(),
                        format!("consumer {name} {cname}"),
                        c[3].s().into_bytes(),
                    ));
                    o.times
                        .push((db, key.clone(), format!("{name}/{cname} idle"), c[5].int()));
                    o.times.push((
                        db,
                        key.clone(),
                        format!("{name}/{cname} inactive"),
                        c[7].int(),
                    ));
                }
            }
            let pttl = parse(&r.cmd_str(&["PTTL", &key])).int();
            o.times.push((db, key.clone(), "pttl".into(), pttl));
        }
    }
    o
}

/// `after` shows the same data as `before`, with every time moved on by at most `elapsed`
/// (TTLs down, idle times up), measured from before `before` was observed until `after`
/// was.
fn assert_same(before: &Observed, after: &Observed, elapsed: Duration) {
    assert_eq!(
        before.exact.len(),
        after.exact.len(),
        "different number of replies"
    );
    for (b, a) in before.exact.iter().zip(&after.exact) {
        assert_eq!(
            (b.0, &b.1, &b.2),
            (a.0, &a.1, &a.2),
            "different keys or groups after the restart"
        );
        assert!(
            b.3 == a.3,
            "db {} key {} {}: before\n{}\nafter\n{}",
            b.0,
            b.1,
            b.2,
            String::from_utf8_lossy(&b.3),
            String::from_utf8_lossy(&a.3)
        );
    }
    let slack = elapsed.as_millis() as i64 + 50;
    assert_eq!(before.times.len(), after.times.len());
    for (b, a) in before.times.iter().zip(&after.times) {
        assert_eq!((b.0, &b.1, &b.2), (a.0, &a.1, &a.2));
        let what = format!("db {} key {} {}: {} then {}", b.0, b.1, b.2, b.3, a.3);
        if b.3 < 0 {
            assert_eq!(b.3, a.3, "{what}");
        } else if b.2 == "pttl" {
            assert!(a.3 <= b.3 && a.3 >= b.3 - slack, "{what}");
        } else {
            assert!(a.3 >= b.3 && a.3 <= b.3 + slack, "{what}");
        }
    }
}

/// Builds a dataset with everything the persistence must keep: many streams, deleted and
/// trimmed entries, XSETID metadata, empty streams, groups with consumers, PELs with
/// varied delivery counts and owners, NACKed entries (when XNACK exists), TTLs, several
/// databases, and a transaction.
fn build_dataset(node: &Node) {
    let mut r = node.raw();
    let mut pipeline = Vec::new();
    for s in 0..12 {
        for i in 1..=150 {
            let id = format!("{}-{}", 1000 + i, s);
            let f = if i % 7 == 0 { "other" } else { "field" };
            pipeline.extend(encode_cmd(&[
                b"XADD",
                format!("s{s}").as_bytes(),
                id.as_bytes(),
                f.as_bytes(),
                format!("value-{s}-{i}").as_bytes(),
                b"n",
                i.to_string().as_bytes(),
            ]));
        }
    }
    r.send(&pipeline);
    r.read_replies(12 * 150);
    let run = |r: &mut Raw, args: &[&str]| {
        let reply = r.cmd_str(args);
        assert!(
            !reply.starts_with(b"-"),
            "{args:?}: {}",
            String::from_utf8_lossy(&reply)
        );
        reply
    };
    for s in 0..12 {
        let k = format!("s{s}");
        for i in (3..150).step_by(11 + s) {
            run(&mut r, &["XDEL", &k, &format!("{}-{}", 1000 + i, s)]);
        }
        run(&mut r, &["XGROUP", "CREATE", &k, "g1", "0"]);
        if s % 2 == 0 {
            run(
                &mut r,
                &["XGROUP", "CREATE", &k, "g2", "1050-0", "ENTRIESREAD", "40"],
            );
        }
        run(
            &mut r,
            &[
                "XREADGROUP",
                "GROUP",
                "g1",
                "alice",
                "COUNT",
                "20",
                "STREAMS",
                &k,
                ">",
            ],
        );
        run(
            &mut r,
            &[
                "XREADGROUP",
                "GROUP",
                "g1",
                "bob",
                "COUNT",
                "15",
                "STREAMS",
                &k,
                ">",
            ],
        );
        run(
            &mut r,
            &["XREADGROUP", "GROUP", "g1", "bob", "STREAMS", &k, "0"],
        );
        run(
            &mut r,
            &["XACK", &k, "g1", &format!("1002-{s}"), &format!("1004-{s}")],
        );
        run(
            &mut r,
            &[
                "XCLAIM",
                &k,
                "g1",
                "carol",
                "0",
                &format!("1005-{s}"),
                &format!("1006-{s}"),
            ],
        );
        run(
            &mut r,
            &["XAUTOCLAIM", &k, "g1", "dave", "0", "0", "COUNT", "3"],
        );
        run(&mut r, &["XGROUP", "CREATECONSUMER", &k, "g1", "erin"]);
        if s % 2 == 0 {
            run(
                &mut r,
                &[
                    "XREADGROUP",
                    "GROUP",
                    "g2",
                    "x",
                    "NOACK",
                    "COUNT",
                    "5",
                    "STREAMS",
                    &k,
                    ">",
                ],
            );
            run(
                &mut r,
                &[
                    "XREADGROUP",
                    "GROUP",
                    "g2",
                    "y",
                    "COUNT",
                    "5",
                    "STREAMS",
                    &k,
                    ">",
                ],
            );
        }
        // Deleted after delivery: pending entries whose payload is gone.
        run(&mut r, &["XDEL", &k, &format!("1008-{s}")]);
        if s % 3 == 0 {
            run(&mut r, &["XTRIM", &k, "MAXLEN", "~", "100"]);
        }
        if s % 4 == 1 {
            run(
                &mut r,
                &["XADD", &k, "MAXLEN", "=", "120", "*", "late", "1"],
            );
        }
        if s % 5 == 2 {
            run(&mut r, &["PEXPIRE", &k, "3600000"]);
        }
    }
    // Redis 8 deletions and NACKs, and trims that look at group references.
    run(
        &mut r,
        &["XNACK", "s0", "g1", "FAIL", "IDS", "2", "1001-0", "1003-0"],
    );
    run(
        &mut r,
        &["XNACK", "s2", "g1", "FATAL", "IDS", "1", "1001-2"],
    );
    run(
        &mut r,
        &[
            "XACKDEL", "s4", "g1", "ACKED", "IDS", "2", "1001-4", "1003-4",
        ],
    );
    run(
        &mut r,
        &["XDELEX", "s6", "DELREF", "IDS", "2", "1001-6", "1009-6"],
    );
    run(&mut r, &["XTRIM", "s8", "MAXLEN", "~", "120", "ACKED"]);
    run(&mut r, &["XTRIM", "s10", "MINID", "~", "1060-10", "DELREF"]);
    run(
        &mut r,
        &["XADD", "s3", "MAXLEN", "~", "110", "DELREF", "*", "x", "1"],
    );
    run(&mut r, &["XADD", "empty", "1-1", "a", "b"]);
    run(&mut r, &["XTRIM", "empty", "MAXLEN", "0"]);
    run(
        &mut r,
        &[
            "XSETID",
            "empty",
            "5-5",
            "ENTRIESADDED",
            "9",
            "MAXDELETEDID",
            "3-0",
        ],
    );
    run(&mut r, &["XGROUP", "CREATE", "fresh", "g", "$", "MKSTREAM"]);
    run(
        &mut r,
        &["XGROUP", "CREATECONSUMER", "fresh", "g", "waiting"],
    );
    run(&mut r, &["XGROUP", "DELCONSUMER", "s1", "g1", "erin"]);
    run(&mut r, &["SELECT", "3"]);
    run(&mut r, &["XADD", "other-db", "7-7", "x", "y"]);
    run(&mut r, &["EXPIREAT", "other-db", "4102444800"]);
    run(&mut r, &["SELECT", "0"]);
    run(&mut r, &["MULTI"]);
    run(&mut r, &["XADD", "tx", "1-1", "a", "1"]);
    run(&mut r, &["XADD", "tx", "2-1", "a", "2"]);
    run(&mut r, &["EXEC"]);
    // Idempotent producers: settings, producers, evictions, counters (XINFO FULL shows
    // them), an iid whose entry was deleted, XIDMPRECORD, a duplicate inside MULTI.
    run(&mut r, &["XADD", "idmp", "*", "f", "plain"]);
    run(
        &mut r,
        &[
            "XCFGSET",
            "idmp",
            "IDMP-DURATION",
            "600",
            "IDMP-MAXSIZE",
            "2",
        ],
    );
    for (pid, iid) in [
        ("p1", "a"),
        ("p1", "b"),
        ("p1", "c"),
        ("p2", "a"),
        ("p1", "c"),
    ] {
        run(&mut r, &["XADD", "idmp", "IDMP", pid, iid, "*", "f", iid]);
    }
    run(
        &mut r,
        &["XADD", "idmp", "IDMPAUTO", "p3", "*", "x", "1", "y", "2"],
    );
    run(
        &mut r,
        &["XADD", "idmp", "IDMPAUTO", "p3", "*", "y", "2", "x", "1"],
    );
    let last = String::from_utf8_lossy(&run(
        &mut r,
        &["XADD", "idmp", "IDMP", "p4", "gone", "*", "f", "v"],
    ))
    .split("\r\n")
    .nth(1)
    .unwrap_or_default()
    .to_string();
    run(&mut r, &["XDEL", "idmp", &last]);
    let plain = run(&mut r, &["XADD", "idmp", "*", "f", "recorded"]);
    let plain = String::from_utf8_lossy(&plain)
        .split("\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_string();
    run(&mut r, &["XIDMPRECORD", "idmp", "p5", "r", &plain]);
    run(&mut r, &["MULTI"]);
    run(
        &mut r,
        &["XADD", "idmp", "IDMP", "p2", "a", "*", "f", "dup"],
    );
    run(&mut r, &["EXEC"]);
    run(
        &mut r,
        &["XADD", "idmp-defaults", "IDMP", "p", "i", "*", "f", "v"],
    );
}

#[test]
fn restart_from_the_log_keeps_every_reply() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = data_dir(&tmp, "aof");
    let node = Node::start(&dir, &["--save", ""]);
    build_dataset(&node);
    std::thread::sleep(Duration::from_millis(30));
    // The clock starts before the first observation: a time read at its start and
    // again at the end of a later one moved on by both spans and what lies between.
    let t = Instant::now();
    let before = observe(&node);
    eprintln!(
        "observed {} exact replies and {} times",
        before.exact.len(),
        before.times.len()
    );
    node.kill9();
    let node = Node::start(&dir, &["--save", ""]);
    let after = observe(&node);
    assert_same(&before, &after, t.elapsed());
    // And once more through SHUTDOWN. Times have moved on since `before` by everything
    // since then, both restarts included.
    node.shutdown(&[]);
    let node = Node::start(&dir, &["--save", ""]);
    assert_same(&before, &observe(&node), t.elapsed());
}

#[test]
fn restart_after_a_rewrite_keeps_every_reply() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = data_dir(&tmp, "rewrite");
    let node = Node::start(&dir, &["--save", ""]);
    build_dataset(&node);
    assert_eq!(
        node.cmd(&["BGREWRITEAOF"]),
        b"+Background append only file rewriting started\r\n"
    );
    wait_info(&node, "aof_rewrite_in_progress:0");
    // Writes after the rewrite go to the new segment.
    node.cmd(&["XADD", "after", "1-1", "k", "v"]);
    // The clock starts before the first observation: a time read at its start and
    // again at the end of a later one moved on by both spans and what lies between.
    let t = Instant::now();
    let before = observe(&node);
    let logdir = dir.join("appendonlydir");
    let manifest = fs::read_to_string(logdir.join("appendonly.manifest")).unwrap();
    assert!(manifest.contains("type b"), "{manifest}");
    assert_eq!(manifest.lines().count(), 2, "{manifest}");
    node.kill9();
    let node = Node::start(&dir, &["--save", ""]);
    assert_same(&before, &observe(&node), t.elapsed());
    // Only the files the manifest names are left.
    let files = fs::read_dir(&logdir).unwrap().count();
    assert_eq!(
        files,
        3,
        "{:?}",
        fs::read_dir(&logdir).unwrap().collect::<Vec<_>>()
    );
}

#[test]
fn snapshots_keep_every_reply_save_debug_reload_and_appendonly_no() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = data_dir(&tmp, "snap");
    let node = Node::start(&dir, &["--appendonly", "no", "--save", ""]);
    build_dataset(&node);
    // The clock starts before the first observation: a time read at its start and
    // again at the end of a later one moved on by both spans and what lies between.
    let t = Instant::now();
    let before = observe(&node);
    assert_eq!(node.cmd(&["DEBUG", "RELOAD"]), b"+OK\r\n");
    assert_same(&before, &observe(&node), t.elapsed());
    assert_eq!(node.cmd(&["BGSAVE"]), b"+Background saving started\r\n");
    wait_info(&node, "rdb_bgsave_in_progress:0");
    assert!(
        String::from_utf8_lossy(&node.cmd(&["INFO", "persistence"]))
            .contains("rdb_last_bgsave_status:ok")
    );
    node.shutdown(&["NOSAVE"]);
    assert!(dir.join("dump.snap").exists());
    let node = Node::start(&dir, &["--appendonly", "no", "--save", ""]);
    assert_same(&before, &observe(&node), t.elapsed());
    // Switching the log on at start-up: the snapshot becomes the log's base.
    node.shutdown(&["SAVE"]);
    let node = Node::start(&dir, &["--save", ""]);
    assert_same(&before, &observe(&node), t.elapsed());
    let manifest = fs::read_to_string(dir.join("appendonlydir/appendonly.manifest")).unwrap();
    assert!(manifest.contains("appendonly.1.base.snap"), "{manifest}");
}

#[test]
fn config_set_appendonly_yes_writes_a_base_first() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = data_dir(&tmp, "toggle");
    let node = Node::start(&dir, &["--appendonly", "no", "--save", ""]);
    build_dataset(&node);
    assert_eq!(
        node.cmd(&["CONFIG", "SET", "appendonly", "yes"]),
        b"+OK\r\n"
    );
    node.cmd(&["XADD", "while", "1-1", "a", "b"]);
    wait_info(&node, "aof_rewrite_in_progress:0");
    node.cmd(&["XADD", "later", "1-1", "a", "b"]);
    // The clock starts before the first observation: a time read at its start and
    // again at the end of a later one moved on by both spans and what lies between.
    let t = Instant::now();
    let before = observe(&node);
    node.kill9();
    let node = Node::start(&dir, &["--save", ""]);
    assert_same(&before, &observe(&node), t.elapsed());
}

fn wait_info(node: &Node, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let info = String::from_utf8_lossy(&node.cmd(&["INFO", "persistence"])).into_owned();
        if info.contains(what) {
            return;
        }
        assert!(Instant::now() < deadline, "no {what} in 30 s:\n{info}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

// --- crash safety ------------------------------------------------------------------------

/// A writer: XADD as fast as the server answers, remembering every acknowledged ID.
fn writer(port: u16, w: usize, acked: Arc<Mutex<Vec<String>>>, sent: Arc<AtomicU64>) {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return;
    };
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let mut buf = Vec::new();
    for i in 0u64.. {
        let cmd = encode_cmd(&[
            b"XADD",
            b"bids",
            b"*",
            b"worker",
            w.to_string().as_bytes(),
            b"seq",
            i.to_string().as_bytes(),
        ]);
        sent.fetch_max(i + 1, Ordering::Relaxed);
        if s.write_all(&cmd).is_err() {
            return;
        }
        // Read one `$n\r\n<id>\r\n` reply.
        loop {
            if let Some(end) = buf.windows(2).position(|x| x == b"\r\n")
                && buf.first() == Some(&b'$')
            {
                let n: usize = String::from_utf8_lossy(&buf[1..end]).parse().unwrap();
                if buf.len() >= end + 2 + n + 2 {
                    let id = String::from_utf8_lossy(&buf[end + 2..end + 2 + n]).into_owned();
                    buf.drain(..end + 2 + n + 2);
                    acked.lock().unwrap().push(id);
                    break;
                }
            }
            if !buf.is_empty() && buf[0] != b'$' {
                panic!("unexpected reply {:?}", String::from_utf8_lossy(&buf));
            }
            let mut chunk = [0u8; 256];
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    }
}

/// xorshift, seeded from the clock: the kill points differ from run to run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn acknowledged_writes_survive_kill_9_under_appendfsync_always() {
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let dir = data_dir(&tmp, "crash");
    let mut rng = Rng(std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1);
    let args = [
        "--appendfsync",
        "always",
        "--save",
        "",
        "--auto-aof-rewrite-percentage",
        "0",
    ];
    let mut all_acked: Vec<String> = Vec::new();
    let mut sent_by: Vec<u64> = vec![0; 8];
    for round in 0..20 {
        let node = Node::start(&dir, &args);
        let port = node.port;
        let acked = Arc::new(Mutex::new(Vec::new()));
        let sent: Vec<Arc<AtomicU64>> = (0..8).map(|_| Arc::new(AtomicU64::new(0))).collect();
        let handles: Vec<_> = (0..8)
            .map(|w| {
                let acked = acked.clone();
                let sent = sent[w].clone();
                std::thread::spawn(move || writer(port, w, acked, sent))
            })
            .collect();
        let kill_at = Duration::from_millis(100 + rng.next() % 500);
        if round % 4 == 3 {
            // Kill during (or right after) a rewrite.
            std::thread::sleep(kill_at / 2);
            let reply = node.cmd(&["BGREWRITEAOF"]);
            assert!(
                reply.starts_with(b"+Background"),
                "{}",
                String::from_utf8_lossy(&reply)
            );
            std::thread::sleep(Duration::from_millis(rng.next() % 40));
        } else {
            std::thread::sleep(kill_at);
        }
        node.kill9();
        for h in handles {
            h.join().unwrap();
        }
        // Entries carry (worker, seq): a worker's seq numbers restart at 0 each round, so
        // remember the total sent per worker to recognise garbage.
        let acked = std::mem::take(&mut *acked.lock().unwrap());
        all_acked.extend(acked);
        for (w, s) in sent.iter().enumerate() {
            sent_by[w] = sent_by[w].max(s.load(Ordering::Relaxed));
        }
        let node = Node::start(&dir, &args);
        let present = parse(&node.cmd(&["XRANGE", "bids", "-", "+"]));
        let mut ids = std::collections::HashSet::new();
        let mut last = String::new();
        for e in present.arr() {
            let e = e.arr();
            let id = e[0].s();
            let f = e[1].arr();
            assert_eq!(f.len(), 4, "round {round}: malformed entry {id}");
            assert_eq!(
                (f[0].s(), f[2].s()),
                ("worker".into(), "seq".into()),
                "round {round}"
            );
            let w: usize = f[1].s().parse().unwrap();
            let seq: u64 = f[3].s().parse().unwrap();
            assert!(
                w < 8 && seq < sent_by[w],
                "round {round}: entry {id} was never sent"
            );
            assert!(ids.insert(id.clone()), "round {round}: duplicate {id}");
            last = id;
        }
        let missing: Vec<&String> = all_acked.iter().filter(|id| !ids.contains(*id)).collect();
        assert!(
            missing.is_empty(),
            "round {round}: {} acknowledged IDs lost, e.g. {:?} (last present {last})\n{}",
            missing.len(),
            &missing[..missing.len().min(5)],
            node.log()
        );
        node.kill9();
    }
    assert!(
        all_acked.len() > 200,
        "only {} writes acknowledged",
        all_acked.len()
    );
    eprintln!(
        "{} acknowledged writes over 20 kill -9 rounds in {:?}",
        all_acked.len(),
        started.elapsed()
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "20 rounds took {:?}",
        started.elapsed()
    );
}

// --- torn tails, damaged records, --check-aof ---------------------------------------------

/// Byte offsets where each record of a log file starts, and the file length.
fn record_starts(log: &[u8]) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut off = 0;
    while off < log.len() {
        starts.push(off);
        let len = u32::from_le_bytes(log[off..off + 4].try_into().unwrap()) as usize;
        off += 12 + len;
    }
    assert_eq!(off, log.len(), "the log is made of whole records");
    starts
}

/// A stopped server's data directory holding a log of `n` XADDs to `s`.
fn log_with_entries(tmp: &tempfile::TempDir, n: usize) -> (PathBuf, PathBuf) {
    let dir = data_dir(tmp, "src");
    let node = Node::start(&dir, &["--save", ""]);
    for i in 1..=n {
        node.cmd(&[
            "XADD",
            "s",
            &format!("{i}-1"),
            "field",
            &format!("value number {i}"),
        ]);
    }
    node.shutdown(&["NOSAVE"]);
    let log = dir.join("appendonlydir/appendonly.1.incr.log");
    assert!(log.exists());
    (dir, log)
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to.join("appendonlydir")).unwrap();
    for f in fs::read_dir(from.join("appendonlydir")).unwrap() {
        let f = f.unwrap();
        fs::copy(f.path(), to.join("appendonlydir").join(f.file_name())).unwrap();
    }
}

#[test]
fn a_torn_last_record_is_cut_at_every_offset_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, log) = log_with_entries(&tmp, 3);
    let bytes = fs::read(&log).unwrap();
    let last = *record_starts(&bytes).last().unwrap();
    for cut in last..bytes.len() {
        let dir = tmp.path().join(format!("cut{cut}"));
        copy_dir(&src, &dir);
        let l = dir.join("appendonlydir/appendonly.1.incr.log");
        fs::OpenOptions::new()
            .write(true)
            .open(&l)
            .unwrap()
            .set_len(cut as u64)
            .unwrap();
        let node = Node::start(&dir, &["--save", ""]);
        assert_eq!(node.cmd(&["XLEN", "s"]), b":2\r\n", "cut at {cut}");
        let text = node.log();
        if cut == last {
            assert!(
                !text.contains("torn"),
                "cut at a record boundary warned:\n{text}"
            );
        } else {
            assert!(
                text.contains("torn record") && text.contains(&format!("offset {last}")),
                "cut at {cut}: no warning naming offset {last}:\n{text}"
            );
        }
        assert_eq!(
            fs::metadata(&l).unwrap().len(),
            last as u64,
            "the torn bytes are cut off"
        );
        // New writes after the cut survive a restart.
        node.cmd(&["XADD", "s", "9-9", "f", "v"]);
        node.kill9();
        let node = Node::start(&dir, &["--save", ""]);
        assert_eq!(
            node.cmd(&["XLEN", "s"]),
            b":3\r\n",
            "cut at {cut}, after a restart"
        );
        node.kill9();
        fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn a_transaction_cut_anywhere_is_dropped_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = data_dir(&tmp, "src");
    let node = Node::start(&dir, &["--save", ""]);
    node.cmd(&["XADD", "s", "1-1", "f", "v"]);
    let mut r = node.raw();
    for c in [
        &["MULTI"][..],
        &["XADD", "s", "2-1", "f", "v"],
        &["XADD", "t", "3-1", "f", "v"],
        &["EXEC"],
    ] {
        r.cmd_str(c);
    }
    node.shutdown(&["NOSAVE"]);
    let log = dir.join("appendonlydir/appendonly.1.incr.log");
    let bytes = fs::read(&log).unwrap();
    // SELECT, XADD, MULTI, XADD, XADD, EXEC.
    let starts = record_starts(&bytes);
    assert_eq!(starts.len(), 6);
    let multi = starts[2];
    for cut in (multi + 1..bytes.len()).step_by(7) {
        let d = tmp.path().join(format!("tx{cut}"));
        copy_dir(&dir, &d);
        let l = d.join("appendonlydir/appendonly.1.incr.log");
        fs::OpenOptions::new()
            .write(true)
            .open(&l)
            .unwrap()
            .set_len(cut as u64)
            .unwrap();
        let node = Node::start(&d, &["--save", ""]);
        assert_eq!(node.cmd(&["XLEN", "s"]), b":1\r\n", "cut at {cut}");
        assert_eq!(node.cmd(&["EXISTS", "t"]), b":0\r\n", "cut at {cut}");
        assert_eq!(
            fs::metadata(&l).unwrap().len(),
            multi as u64,
            "cut back to MULTI"
        );
        node.kill9();
    }
    let node = Node::start(&dir, &["--save", ""]);
    assert_eq!(node.cmd(&["XLEN", "s"]), b":2\r\n");
    assert_eq!(node.cmd(&["XLEN", "t"]), b":1\r\n");
}

#[test]
fn sigterm_flushes_the_log_and_saves_the_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = data_dir(&tmp, "term");
    let node = Node::start(&dir, &["--appendfsync", "no"]);
    node.cmd(&["XADD", "s", "1-1", "f", "v"]);
    let pid = node.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let mut node = node;
    let deadline = Instant::now() + Duration::from_secs(10);
    while node.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "no exit after SIGTERM");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        node.log().contains("Saving the final snapshot"),
        "{}",
        node.log()
    );
    assert!(dir.join("dump.snap").exists());
    drop(node);
    let node = Node::start(&dir, &["--appendonly", "no"]);
    assert_eq!(node.cmd(&["XLEN", "s"]), b":1\r\n");
}

#[test]
fn a_flipped_bit_in_the_middle_refuses_to_start_and_check_aof_fix_repairs_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, log) = log_with_entries(&tmp, 5);
    let mut bytes = fs::read(&log).unwrap();
    let starts = record_starts(&bytes);
    // Record 0 is SELECT 0; records 1..=5 are the XADDs. Damage the third XADD.
    let bad = starts[3];
    bytes[bad + 20] ^= 0x04;
    fs::write(&log, &bytes).unwrap();

    let text = start_expect_failure(&dir, &["--save", ""]);
    assert!(
        text.contains(&format!("Bad record in {} at offset {bad}", log.display())),
        "{text}"
    );
    assert!(text.contains("--check-aof"), "{text}");
    assert_eq!(
        fs::read(&log).unwrap(),
        bytes,
        "a refused start changes nothing"
    );

    let check = Command::new(BIN)
        .args(["--check-aof"])
        .arg(&log)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(1), "{out}");
    assert!(
        out.contains(&format!("bad record at offset {bad}")),
        "{out}"
    );

    let fix = Command::new(BIN)
        .args(["--check-aof"])
        .arg(&log)
        .arg("--fix")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&fix.stdout);
    assert!(fix.status.success(), "{out}");
    assert!(
        out.contains(&format!("cutting {} bytes", bytes.len() - bad)),
        "{out}"
    );
    assert_eq!(fs::metadata(&log).unwrap().len(), bad as u64);

    let node = Node::start(&dir, &["--save", ""]);
    assert_eq!(node.cmd(&["XLEN", "s"]), b":2\r\n");
    let check = Command::new(BIN)
        .args(["--check-aof"])
        .arg(dir.join("appendonlydir/appendonly.manifest"))
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
}

#[test]
fn a_second_server_cannot_use_the_same_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = data_dir(&tmp, "locked");
    let _node = Node::start(&dir, &["--save", ""]);
    let text = start_expect_failure(&dir, &["--save", ""]);
    assert!(text.contains("in use by another streamd"), "{text}");
}

#[test]
fn clients_get_loading_while_a_large_log_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = data_dir(&tmp, "big");
    let node = Node::start(&dir, &["--save", ""]);
    let mut r = node.raw();
    let batch = 10_000;
    for b in 0..30 {
        let mut p = Vec::new();
        for i in 0..batch {
            p.extend(encode_cmd(&[
                b"XADD",
                format!("k{}", i % 50).as_bytes(),
                b"*",
                b"field",
                format!("some value {b} {i}").as_bytes(),
            ]));
        }
        r.send(&p);
        r.read_replies(batch);
    }
    node.shutdown(&["NOSAVE"]);
    let (mut child, port, log) = spawn(&dir, &["--save", ""]);
    let mut saw_loading = false;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(
            Instant::now() < deadline,
            "never served:\n{}",
            read_log(&log)
        );
        let Ok(mut c) = Raw::try_connect(port) else {
            std::thread::sleep(Duration::from_millis(2));
            continue;
        };
        let reply = c.cmd_str(&["XLEN", "k0"]);
        if reply.starts_with(b"-LOADING") {
            saw_loading = true;
            let info = String::from_utf8_lossy(&c.cmd_str(&["INFO", "persistence"])).into_owned();
            assert!(
                info.contains("loading:1") || info.contains("loading:0"),
                "{info}"
            );
            continue;
        }
        assert_eq!(reply, b":6000\r\n");
        break;
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        saw_loading,
        "no -LOADING reply while 300000 records loaded:\n{}",
        read_log(&log)
    );
    assert!(
        read_log(&log).contains("DB loaded from disk"),
        "{}",
        read_log(&log)
    );
}

/// XADDs `p`/`i` to `key` and returns the reply.
fn idmp_add(node: &Node, key: &str, pid: &str, iid: &str) -> Vec<u8> {
    node.cmd(&["XADD", key, "IDMP", pid, iid, "*", "f", "v"])
}

#[test]
fn a_duplicate_is_still_recognised_after_restart_rewrite_and_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = data_dir(&tmp, "idmp");
    let node = Node::start(&dir, &["--save", "", "--appendfsync", "always"]);
    let first = idmp_add(&node, "s", "p1", "i1");
    assert!(
        first.starts_with(b"$"),
        "{}",
        String::from_utf8_lossy(&first)
    );
    assert_eq!(idmp_add(&node, "s", "p1", "i1"), first);
    let auto = node.cmd(&["XADD", "s", "IDMPAUTO", "p2", "*", "a", "1", "b", "2"]);
    // 1. Restart from the log after kill -9.
    node.kill9();
    let node = Node::start(&dir, &["--save", ""]);
    assert_eq!(idmp_add(&node, "s", "p1", "i1"), first);
    assert_eq!(
        node.cmd(&["XADD", "s", "IDMPAUTO", "p2", "*", "b", "2", "a", "1"]),
        auto
    );
    assert_eq!(node.cmd(&["XLEN", "s"]), b":2\r\n");
    // 2. After a rewrite (the state is in the new base snapshot).
    assert_eq!(
        node.cmd(&["BGREWRITEAOF"]),
        b"+Background append only file rewriting started\r\n"
    );
    wait_info(&node, "aof_rewrite_in_progress:0");
    node.kill9();
    let node = Node::start(&dir, &["--save", ""]);
    assert_eq!(idmp_add(&node, "s", "p1", "i1"), first);
    assert_eq!(node.cmd(&["XLEN", "s"]), b":2\r\n");
    // 3. From a snapshot alone.
    node.shutdown(&["SAVE"]);
    fs::remove_dir_all(dir.join("appendonlydir")).unwrap();
    let node = Node::start(&dir, &["--save", "", "--appendonly", "no"]);
    assert_eq!(idmp_add(&node, "s", "p1", "i1"), first);
    assert_eq!(node.cmd(&["XLEN", "s"]), b":2\r\n");
    let info = String::from_utf8_lossy(&node.cmd(&["XINFO", "STREAM", "s"])).into_owned();
    for (field, n) in [
        ("pids-tracked", 2),
        ("iids-tracked", 2),
        ("iids-added", 2),
        ("iids-duplicates", 5),
    ] {
        assert!(
            info.contains(&format!("{field}\r\n:{n}\r\n")),
            "{field} {n}: {info}"
        );
    }
}
