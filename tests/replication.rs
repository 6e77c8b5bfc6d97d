//! Replication against the real binary: several streamd processes (and Debian's
//! redis-server 7.0 on either side) on free 127.0.0.1 ports, each with its own data
//! directory, exercising the protocol (PSYNC, `+FULLRESYNC` and its `$<len>` payload,
//! `+CONTINUE`, REPLCONF ACK, WAIT, ROLE, INFO replication) and every fault the design
//! names: a replica restarted cleanly or killed, a link cut and restored, a backlog
//! overflowed, a primary killed during a full sync, a failover and the old primary's
//! return, a chain, a replica of itself.
//!
//! **No timing windows.** Every wait polls a condition with a deadline ([`wait_for`]),
//! and nothing asserts speed; the only duration checked is that WAIT does not answer
//! before its timeout. Where a fault must strike at a precise point (a primary dying in
//! the middle of its payload), a [`Proxy`] between the replica and its primary stalls or
//! cuts the bytes on demand, so the point is reached by construction, not by luck.
//!
//! **Data equality** ([`dataset`]) is every key's XRANGE, XINFO STREAM FULL (all entries
//! and PEL entries: `COUNT 0`) and each group's XPENDING (summary and extended), with the
//! consumers' `seen-time` / `active-time` and XPENDING's idle time left out (the clock
//! reads them). Against Redis only the fields both servers define are compared.

mod common;

use common::{REDIS_SERVER_BIN, Raw, encode_cmd, escape, free_port};
use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::fs;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

const STREAMD: &str = env!("CARGO_BIN_EXE_streamd");

/// How long any awaited condition may take before the test fails (generous: the machine
/// may be busy with the other tests' servers).
const PATIENCE: Duration = Duration::from_secs(30);
/// Pause between two looks at a polled condition.
const POLL: Duration = Duration::from_millis(10);

// ---------------------------------------------------------------------------------------
// RESP values
// ---------------------------------------------------------------------------------------

/// A RESP2 reply, parsed.
#[derive(Clone, PartialEq, Eq)]
enum V {
    Status(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    Nil,
    Array(Vec<V>),
}

impl fmt::Debug for V {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            V::Status(s) => write!(f, "+{s}"),
            V::Error(s) => write!(f, "-{s}"),
            V::Int(n) => write!(f, "{n}"),
            V::Bulk(b) => write!(f, "\"{}\"", escape(b)),
            V::Nil => write!(f, "nil"),
            V::Array(items) => f.debug_list().entries(items).finish(),
        }
    }
}

impl V {
    /// The text of a bulk or status reply.
    fn text(&self) -> String {
        match self {
            V::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
            V::Status(s) => s.clone(),
            other => panic!("expected a string reply, got {other:?}"),
        }
    }

    fn int(&self) -> i64 {
        match self {
            V::Int(n) => *n,
            other => panic!("expected an integer reply, got {other:?}"),
        }
    }

    fn items(&self) -> &[V] {
        match self {
            V::Array(items) => items,
            other => panic!("expected an array reply, got {other:?}"),
        }
    }

    fn is_error(&self) -> bool {
        matches!(self, V::Error(_))
    }

    /// The value of `key` in a flat `[key, value, ...]` array.
    fn field(&self, key: &str) -> &V {
        self.items()
            .chunks(2)
            .find(|kv| kv[0].text() == key)
            .map(|kv| &kv[1])
            .unwrap_or_else(|| panic!("no field {key:?} in {self:?}"))
    }
}

fn bulk(s: &str) -> V {
    V::Bulk(s.as_bytes().to_vec())
}

/// Reads one RESP2 reply from `r`; with `raw`, also appends its exact bytes there (a
/// replica counts every stream byte toward its offset). Incremental: a reply of many
/// megabytes is read once, never re-scanned.
fn read_value(r: &mut impl BufRead, mut raw: Option<&mut Vec<u8>>) -> io::Result<V> {
    let mut line = Vec::new();
    if r.read_until(b'\n', &mut line)? == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "connection closed",
        ));
    }
    if let Some(raw) = raw.as_deref_mut() {
        raw.extend_from_slice(&line);
    }
    if line.len() < 3 || !line.ends_with(b"\r\n") {
        return Err(io::Error::other(format!(
            "bad RESP line {:?}",
            escape(&line)
        )));
    }
    let text = String::from_utf8_lossy(&line[1..line.len() - 2]).into_owned();
    let number = || -> io::Result<i64> {
        text.parse()
            .map_err(|_| io::Error::other(format!("bad number in {:?}", escape(&line))))
    };
    Ok(match line[0] {
        b'+' => V::Status(text.clone()),
        b'-' => V::Error(text.clone()),
        b':' => V::Int(number()?),
        b'$' | b'*' if number()? < 0 => V::Nil,
        b'$' => {
            let mut body = vec![0u8; number()? as usize + 2];
            r.read_exact(&mut body)?;
            if let Some(raw) = raw.as_deref_mut() {
                raw.extend_from_slice(&body);
            }
            body.truncate(body.len() - 2);
            V::Bulk(body)
        }
        b'*' => {
            let mut items = Vec::new();
            for _ in 0..number()? {
                items.push(read_value(r, raw.as_deref_mut())?);
            }
            V::Array(items)
        }
        _ => return Err(io::Error::other(format!("not RESP: {:?}", escape(&line)))),
    })
}

// ---------------------------------------------------------------------------------------
// Connections
// ---------------------------------------------------------------------------------------

/// A blocking RESP2 connection to one server, named for failure messages.
struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    who: String,
}

impl Conn {
    fn connect(port: u16, who: String) -> Conn {
        let writer = TcpStream::connect(("127.0.0.1", port))
            .unwrap_or_else(|e| panic!("connect to {who}: {e}"));
        writer.set_nodelay(true).expect("nodelay");
        writer
            .set_read_timeout(Some(PATIENCE))
            .expect("read timeout");
        let reader = BufReader::with_capacity(256 * 1024, writer.try_clone().expect("clone"));
        Conn {
            reader,
            writer,
            who,
        }
    }

    /// Writes bytes as they are.
    fn send_bytes(&mut self, bytes: &[u8]) {
        self.writer
            .write_all(bytes)
            .unwrap_or_else(|e| panic!("{}: write: {e}", self.who));
    }

    /// Sends one command and returns its parsed reply.
    fn cmd(&mut self, args: &[&str]) -> V {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.send_bytes(&encode_cmd(&args));
        self.read()
    }

    /// [`Conn::cmd`] with the command as whitespace-separated words.
    fn run(&mut self, line: &str) -> V {
        let args: Vec<&str> = line.split_whitespace().collect();
        self.cmd(&args)
    }

    /// [`Conn::run`], asserting the reply is not an error.
    fn ok(&mut self, line: &str) -> V {
        let v = self.run(line);
        assert!(!v.is_error(), "{}: {line} answered {v:?}", self.who);
        v
    }

    /// Sends a command without reading its reply.
    fn send(&mut self, line: &str) {
        let args: Vec<&[u8]> = line.split_whitespace().map(str::as_bytes).collect();
        self.send_bytes(&encode_cmd(&args));
    }

    /// Reads one reply.
    fn read(&mut self) -> V {
        read_value(&mut self.reader, None)
            .unwrap_or_else(|e| panic!("{}: reading a reply: {e}", self.who))
    }

    /// Reads one reply and returns its exact bytes.
    fn read_frame(&mut self) -> Vec<u8> {
        // A replica's link may carry keepalive newlines between commands.
        while self
            .reader
            .fill_buf()
            .is_ok_and(|b| b.first() == Some(&b'\n'))
        {
            self.reader.consume(1);
        }
        let mut raw = Vec::new();
        read_value(&mut self.reader, Some(&mut raw))
            .unwrap_or_else(|e| panic!("{}: reading a frame: {e}", self.who));
        raw
    }

    /// Reads exactly `n` bytes.
    fn read_bytes(&mut self, n: usize) -> Vec<u8> {
        let mut buf = vec![0u8; n];
        self.reader
            .read_exact(&mut buf)
            .unwrap_or_else(|e| panic!("{}: reading {n} bytes: {e}", self.who));
        buf
    }

    /// Sends a command and returns the exact bytes of its reply.
    fn cmd_bytes(&mut self, args: &[&str]) -> Vec<u8> {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.send_bytes(&encode_cmd(&args));
        self.read_frame()
    }

    /// One INFO section as `field → value`.
    fn info(&mut self, section: &str) -> BTreeMap<String, String> {
        let text = self.cmd(&["INFO", section]).text();
        text.lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.to_string(), v.trim_end().to_string()))
            .collect()
    }

    /// One INFO field (`""` when absent).
    fn info_field(&mut self, section: &str, field: &str) -> String {
        self.info(section).remove(field).unwrap_or_default()
    }

    /// An INFO stats counter (`sync_full`, `sync_partial_ok`, ...).
    fn stat(&mut self, name: &str) -> u64 {
        let v = self.info_field("stats", name);
        v.parse()
            .unwrap_or_else(|_| panic!("{}: INFO stats {name} is {v:?}", self.who))
    }

    /// `master_repl_offset`.
    fn repl_offset(&mut self) -> u64 {
        self.info_field("replication", "master_repl_offset")
            .parse()
            .expect("master_repl_offset is a number")
    }
}

// ---------------------------------------------------------------------------------------
// Server processes
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Program {
    Streamd,
    Redis,
}

/// One server process that can be stopped (SIGKILL, SIGTERM, SHUTDOWN) and started
/// again on the same data directory. Every start takes a new free port (a port is never
/// reused, so a restart never races the old socket). Killed on drop; when the test is
/// failing, the end of its logs goes to stderr.
struct Node {
    program: Program,
    name: String,
    port: u16,
    tmp: tempfile::TempDir,
    args: Vec<String>,
    child: Option<Child>,
    starts: usize,
}

impl Node {
    /// streamd with persistence off and `repl-diskless-sync-delay 0`, then `args`.
    fn streamd(name: &str, args: &[&str]) -> Node {
        Node::new(Program::Streamd, name, args)
    }

    /// Debian's redis-server with persistence off and `repl-diskless-sync-delay 0`.
    fn redis(name: &str, args: &[&str]) -> Node {
        Node::new(Program::Redis, name, args)
    }

    fn new(program: Program, name: &str, args: &[&str]) -> Node {
        let tmp = tempfile::Builder::new()
            .prefix(&format!("repl-{name}-"))
            .tempdir()
            .expect("temp dir");
        fs::create_dir(tmp.path().join("data")).expect("data dir");
        let mut node = Node {
            program,
            name: name.to_string(),
            port: 0,
            tmp,
            args: args.iter().map(|s| s.to_string()).collect(),
            child: None,
            starts: 0,
        };
        node.start();
        node
    }

    fn data_dir(&self) -> PathBuf {
        self.tmp.path().join("data")
    }

    fn log_path(&self, n: usize) -> PathBuf {
        self.tmp.path().join(format!("{}-{n}.log", self.name))
    }

    /// Every log of every start, in order.
    fn log(&self) -> String {
        (0..self.starts)
            .map(|n| fs::read(self.log_path(n)).unwrap_or_default())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .collect()
    }

    fn command_line(&self, port: u16) -> (PathBuf, Vec<String>) {
        let dir = self.data_dir().display().to_string();
        let port = port.to_string();
        let (program, base): (PathBuf, Vec<&str>) = match self.program {
            Program::Streamd => (
                PathBuf::from(STREAMD),
                vec![
                    "--port",
                    &port,
                    "--dir",
                    &dir,
                    "--appendonly",
                    "no",
                    "--save",
                    "",
                    "--repl-diskless-sync-delay",
                    "0",
                ],
            ),
            Program::Redis => (
                PathBuf::from(REDIS_SERVER_BIN),
                vec![
                    "--port",
                    &port,
                    "--bind",
                    "127.0.0.1",
                    "--dir",
                    &dir,
                    "--appendonly",
                    "no",
                    "--save",
                    "",
                    "--daemonize",
                    "no",
                    "--repl-diskless-sync-delay",
                    "0",
                ],
            ),
        };
        let mut args: Vec<String> = base.iter().map(|s| s.to_string()).collect();
        args.extend(self.args.iter().cloned());
        (program, args)
    }

    /// Starts the process on a free port and waits until it answers PING with PONG
    /// (loading done). Tries another port if it exits during start-up.
    fn start(&mut self) {
        assert!(self.child.is_none(), "{} is already running", self.name);
        let mut why = String::new();
        for _ in 0..5 {
            let port = free_port();
            let (program, args) = self.command_line(port);
            let log = self.log_path(self.starts);
            self.starts += 1;
            let out = fs::File::create(&log).expect("log file");
            let err = out.try_clone().expect("log file");
            let child = Command::new(&program)
                .args(&args)
                .current_dir(self.tmp.path())
                .stdin(Stdio::null())
                .stdout(Stdio::from(out))
                .stderr(Stdio::from(err))
                .spawn()
                .unwrap_or_else(|e| panic!("cannot spawn {}: {e}", program.display()));
            self.child = Some(child);
            self.port = port;
            match self.wait_ready() {
                Ok(()) => return,
                Err(e) => {
                    why = e;
                    let exited = self
                        .child
                        .as_mut()
                        .is_some_and(|c| c.try_wait().ok().flatten().is_some());
                    self.stop_now();
                    if !exited {
                        break;
                    }
                }
            }
        }
        panic!("{} did not start: {why}\n{}", self.name, self.log());
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                return Err(format!("exited during start-up with {status}"));
            }
            if let Ok(mut raw) = Raw::try_connect(self.port) {
                raw.set_timeout(Duration::from_secs(5));
                raw.send(b"*1\r\n$4\r\nPING\r\n");
                if raw.try_read_reply().is_ok_and(|r| r == b"+PONG\r\n") {
                    return Ok(());
                }
            }
            if Instant::now() > deadline {
                return Err(format!("no PONG within {PATIENCE:?}"));
            }
            std::thread::sleep(POLL);
        }
    }

    /// A new connection.
    fn conn(&self) -> Conn {
        Conn::connect(self.port, format!("{}:{}", self.name, self.port))
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// SIGKILL: nothing flushed, nothing saved.
    fn kill9(&mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM, then waits for the exit.
    fn sigterm(&mut self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM failed");
        self.wait_exit("SIGTERM");
    }

    /// SHUTDOWN, then waits for the exit.
    fn shutdown(&mut self) {
        let mut c = self.conn();
        c.send("SHUTDOWN");
        let _ = read_value(&mut c.reader, None);
        self.wait_exit("SHUTDOWN");
    }

    fn wait_exit(&mut self, after: &str) {
        let mut child = self.child.take().expect("running");
        let deadline = Instant::now() + PATIENCE;
        loop {
            match child.try_wait() {
                Ok(Some(_)) => return,
                Ok(None) if Instant::now() < deadline => std::thread::sleep(POLL),
                _ => {
                    let _ = child.kill();
                    panic!("{} did not exit after {after}\n{}", self.name, self.log());
                }
            }
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.stop_now();
        if std::thread::panicking() {
            let log = self.log();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            eprintln!("--- {} (last lines of its log) ---", self.name);
            for l in tail.iter().rev() {
                eprintln!("{l}");
            }
        }
    }
}

/// True when Debian's redis-server is installed; otherwise says why the test is skipped.
fn have_redis(test: &str) -> bool {
    if Path::new(REDIS_SERVER_BIN).exists() {
        return true;
    }
    eprintln!(
        "SKIPPED {test}: {REDIS_SERVER_BIN} not found (install it with \
         `sudo apt-get install redis-server`; CI does)"
    );
    false
}

// ---------------------------------------------------------------------------------------
// Waiting
// ---------------------------------------------------------------------------------------

/// Polls `probe` until it returns `Ok`, for at most [`PATIENCE`]; on timeout the test
/// fails with `what` and the last `Err` (what was seen instead).
fn wait_for<T>(what: &str, mut probe: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + PATIENCE;
    loop {
        match probe() {
            Ok(t) => return t,
            Err(seen) if Instant::now() > deadline => {
                panic!("waited {PATIENCE:?} for {what}; last seen: {seen}")
            }
            Err(_) => std::thread::sleep(POLL),
        }
    }
}

/// Waits until `INFO <section>` has `field:<want>`.
fn wait_info(c: &mut Conn, section: &str, field: &str, want: &str) {
    let what = format!("{}: INFO {section} {field}:{want}", c.who);
    wait_for(&what, || {
        let got = c.info_field(section, field);
        if got == want { Ok(()) } else { Err(got) }
    });
}

/// Waits until an INFO stats counter reaches `want` exactly (never above).
fn wait_stat(c: &mut Conn, name: &str, want: u64) {
    let what = format!("{}: INFO stats {name}:{want}", c.who);
    wait_for(&what, || match c.stat(name) {
        n if n == want => Ok(()),
        n if n > want => panic!("{what}: went past it to {n}"),
        n => Err(n.to_string()),
    });
}

/// REPLICAOF 127.0.0.1 `port`, then waits for the link to be up.
fn follow(replica: &mut Conn, port: u16) {
    let reply = replica.run(&format!("REPLICAOF 127.0.0.1 {port}"));
    assert_eq!(reply, V::Status("OK".into()), "{}", replica.who);
    wait_info(replica, "replication", "master_link_status", "up");
}

/// `WAIT n 20000` must count `n` replicas.
fn wait_acked(primary: &mut Conn, n: i64) {
    let got = primary.run(&format!("WAIT {n} 20000"));
    assert_eq!(got, V::Int(n), "{}: WAIT {n} 20000", primary.who);
}

/// Waits until both servers report the same `master_repl_offset`.
fn wait_same_offset(a: &mut Conn, b: &mut Conn) -> u64 {
    let what = format!("{} and {} at the same master_repl_offset", a.who, b.who);
    wait_for(&what, || {
        let (x, y) = (a.repl_offset(), b.repl_offset());
        if x == y {
            Ok(x)
        } else {
            Err(format!("{x} vs {y}"))
        }
    })
}

// ---------------------------------------------------------------------------------------
// Data equality
// ---------------------------------------------------------------------------------------

/// How much of XINFO STREAM FULL two servers must agree on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Compare {
    /// Two streamd servers: everything but the clock's readings.
    Streamd,
    /// streamd and Redis 7.0: the fields both define, minus `lag` (derived, and Redis
    /// 7.0 and streamd compute it differently after a trim) and the radix-tree counts
    /// (how the nodes are cut, not the data).
    WithRedis,
}

const COMMON_STREAM_FIELDS: &[&str] = &[
    "length",
    "last-generated-id",
    "max-deleted-entry-id",
    "entries-added",
    "recorded-first-entry-id",
    "entries",
    "groups",
];
const COMMON_GROUP_FIELDS: &[&str] = &[
    "name",
    "last-delivered-id",
    "entries-read",
    "pel-count",
    "pending",
    "consumers",
];
const COMMON_CONSUMER_FIELDS: &[&str] = &["name", "pel-count", "pending"];
/// The consumer fields that are the clock's readings on the server that answers.
const CLOCK_FIELDS: &[&str] = &["seen-time", "active-time"];

/// Keeps the `[key, value, ...]` pairs whose key `keep` accepts, each value passed
/// through `inner`.
fn filter_map(v: &V, keep: &dyn Fn(&str) -> bool, inner: &dyn Fn(&str, &V) -> V) -> V {
    let mut out = Vec::new();
    for kv in v.items().chunks(2) {
        let k = kv[0].text();
        if keep(&k) {
            out.push(kv[0].clone());
            out.push(inner(&k, &kv[1]));
        }
    }
    V::Array(out)
}

fn normalize_full(full: &V, how: Compare) -> V {
    let keep = |k: &str| how == Compare::Streamd || COMMON_STREAM_FIELDS.contains(&k);
    filter_map(full, &keep, &|k, v| match k {
        "groups" => V::Array(v.items().iter().map(|g| normalize_group(g, how)).collect()),
        _ => v.clone(),
    })
}

fn normalize_group(group: &V, how: Compare) -> V {
    let keep = |k: &str| how == Compare::Streamd || COMMON_GROUP_FIELDS.contains(&k);
    filter_map(group, &keep, &|k, v| match k {
        "consumers" => V::Array(
            v.items()
                .iter()
                .map(|c| {
                    let keep = |k: &str| {
                        !CLOCK_FIELDS.contains(&k)
                            && (how == Compare::Streamd || COMMON_CONSUMER_FIELDS.contains(&k))
                    };
                    filter_map(c, &keep, &|_, v| v.clone())
                })
                .collect(),
        ),
        _ => v.clone(),
    })
}

/// Every stream key's contents, groups and PELs, as text to compare (see the module
/// doc). With [`Compare::WithRedis`] keys of other types are left out (streamd does not
/// store them).
fn dataset(c: &mut Conn, how: Compare) -> String {
    let mut keys: Vec<String> = c.cmd(&["KEYS", "*"]).items().iter().map(V::text).collect();
    keys.sort();
    let mut out = String::new();
    for k in keys {
        let ty = c.cmd(&["TYPE", &k]).text();
        if ty != "stream" {
            if how == Compare::Streamd {
                let _ = writeln!(out, "{k}: type {ty}");
            }
            continue;
        }
        let range = c.cmd(&["XRANGE", &k, "-", "+"]);
        let _ = writeln!(out, "{k}: XRANGE {range:?}");
        let full = c.cmd(&["XINFO", "STREAM", &k, "FULL", "COUNT", "0"]);
        assert!(
            !full.is_error(),
            "{}: XINFO STREAM {k} FULL: {full:?}",
            c.who
        );
        let _ = writeln!(
            out,
            "{k}: XINFO STREAM FULL {:?}",
            normalize_full(&full, how)
        );
        let groups: Vec<String> = full
            .field("groups")
            .items()
            .iter()
            .map(|g| g.field("name").text())
            .collect();
        for g in groups {
            let summary = c.cmd(&["XPENDING", &k, &g]);
            let _ = writeln!(out, "{k} {g}: XPENDING {summary:?}");
            let extended = c.cmd(&["XPENDING", &k, &g, "-", "+", "1000000"]);
            let entries: Vec<V> = extended
                .items()
                .iter()
                .map(|e| {
                    let mut e = e.items().to_vec();
                    e[2] = bulk("<idle>");
                    V::Array(e)
                })
                .collect();
            let _ = writeln!(out, "{k} {g}: XPENDING - + {:?}", V::Array(entries));
        }
    }
    out
}

/// Asserts both servers hold the same data (see [`dataset`]); the message shows the
/// first lines that differ.
fn assert_same_data(a: &mut Conn, b: &mut Conn, how: Compare) {
    let (x, y) = (dataset(a, how), dataset(b, how));
    if x == y {
        return;
    }
    let mut msg = format!("{} and {} hold different data:\n", a.who, b.who);
    let (xl, yl): (Vec<&str>, Vec<&str>) = (x.lines().collect(), y.lines().collect());
    for i in 0..xl.len().max(yl.len()) {
        let (l, r) = (xl.get(i).copied(), yl.get(i).copied());
        if l != r {
            let _ = writeln!(
                msg,
                "  {}: {}\n  {}: {}",
                a.who,
                l.unwrap_or("<none>"),
                b.who,
                r.unwrap_or("<none>")
            );
        }
    }
    panic!("{msg}");
}

// ---------------------------------------------------------------------------------------
// A proxy that cuts, stalls and restores a link
// ---------------------------------------------------------------------------------------

/// A TCP proxy between a replica and its primary (the replica is pointed at the proxy's
/// port). [`Proxy::cut`] closes every forwarded connection and refuses new ones until
/// [`Proxy::restore`]; [`Proxy::hold_after`] lets only so many more bytes through from
/// the primary to the replica and then stalls that direction (the primary's writes back
/// up in the sockets), until [`Proxy::release`]. Threads, not tasks: the test's other
/// connections are blocking too.
struct Proxy {
    port: u16,
    shared: Arc<ProxyShared>,
}

struct ProxyShared {
    state: Mutex<ProxyState>,
}

#[derive(Default)]
struct ProxyState {
    /// Where connections are forwarded to.
    upstream: u16,
    /// Refusing connections.
    cut: bool,
    /// The proxy is gone: the accept thread ends.
    stopped: bool,
    /// Bumped by every cut: forwarding threads of an older generation stop.
    generation: u64,
    /// Both sockets of every forwarded connection, to shut them down on a cut.
    sockets: Vec<TcpStream>,
    /// Connections the replica opened (forwarded or refused).
    attempts: u64,
    /// Bytes the primary may still send the replica (`None`: no limit).
    budget: Option<u64>,
    /// Bytes forwarded from the primary to the replica so far.
    forwarded_down: u64,
    /// Keep what the replica sends its primary in `upstream_bytes`.
    record_upstream: bool,
    /// What the replica sent its primary (when recording).
    upstream_bytes: Vec<u8>,
}

impl Proxy {
    fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let shared = Arc::new(ProxyShared {
            state: Mutex::new(ProxyState {
                upstream,
                ..ProxyState::default()
            }),
        });
        let s = shared.clone();
        std::thread::spawn(move || accept_loop(listener, s));
        Proxy { port, shared }
    }

    fn state(&self) -> MutexGuard<'_, ProxyState> {
        self.shared.state.lock().expect("proxy state")
    }

    /// Closes every forwarded connection and refuses new ones.
    fn cut(&self) {
        let mut st = self.state();
        st.cut = true;
        st.generation += 1;
        for s in st.sockets.drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Accepts and forwards connections again.
    fn restore(&self) {
        self.state().cut = false;
    }

    /// Forwards new connections to `port`.
    fn set_upstream(&self, port: u16) {
        self.state().upstream = port;
    }

    /// From now on, forwards at most `bytes` more from the primary to the replica.
    fn hold_after(&self, bytes: u64) {
        self.state().budget = Some(bytes);
    }

    /// Lifts [`Proxy::hold_after`].
    fn release(&self) {
        self.state().budget = None;
    }

    /// True when a hold is in place and its bytes are all used.
    fn holding(&self) -> bool {
        self.state().budget == Some(0)
    }

    fn attempts(&self) -> u64 {
        self.state().attempts
    }

    /// From now on, keeps every byte the replica sends its primary.
    fn record_upstream(&self) {
        self.state().record_upstream = true;
    }

    /// The replica's `REPLCONF ACK <offset> FACK <durable offset>` commands recorded so
    /// far, as `(offset, durable offset)`.
    fn acks(&self) -> Vec<(u64, u64)> {
        let bytes = self.state().upstream_bytes.clone();
        let mut cursor = io::Cursor::new(&bytes[..]);
        let mut acks = Vec::new();
        while let Ok(V::Array(argv)) = read_value(&mut cursor, None) {
            let words: Vec<String> = argv.iter().map(V::text).collect();
            if let [replconf, ack, off, fack, durable] = &words[..]
                && replconf.eq_ignore_ascii_case("REPLCONF")
                && ack.eq_ignore_ascii_case("ACK")
                && fack.eq_ignore_ascii_case("FACK")
            {
                acks.push((
                    off.parse().expect("offset"),
                    durable.parse().expect("offset"),
                ));
            }
        }
        acks
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.state().stopped = true;
        self.cut();
        // Wakes the accept thread so it sees `stopped`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<ProxyShared>) {
    for conn in listener.incoming() {
        let Ok(down) = conn else { continue };
        let mut st = shared.state.lock().expect("proxy state");
        if st.stopped {
            return;
        }
        st.attempts += 1;
        if st.cut {
            let _ = down.shutdown(Shutdown::Both);
            continue;
        }
        let Ok(up) = TcpStream::connect(("127.0.0.1", st.upstream)) else {
            let _ = down.shutdown(Shutdown::Both);
            continue;
        };
        let _ = (down.set_nodelay(true), up.set_nodelay(true));
        let clones = (down.try_clone(), up.try_clone());
        let (Ok(down2), Ok(up2)) = clones else {
            continue;
        };
        for s in [&down, &up] {
            if let Ok(c) = s.try_clone() {
                st.sockets.push(c);
            }
        }
        let generation = st.generation;
        drop(st);
        let s = shared.clone();
        std::thread::spawn(move || pump(down, up, &s, generation, false));
        let s = shared.clone();
        std::thread::spawn(move || pump(up2, down2, &s, generation, true));
    }
}

/// Copies `from` → `to` until either ends or the link is cut; `downstream` (primary to
/// replica) honours the hold budget.
fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    shared: &ProxyShared,
    generation: u64,
    downstream: bool,
) {
    let mut buf = vec![0u8; 64 * 1024];
    'copy: loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut done = 0;
        while done < n {
            let take = loop {
                let mut st = shared.state.lock().expect("proxy state");
                if st.generation != generation {
                    break 'copy;
                }
                let want = (n - done) as u64;
                let allowed = match st.budget {
                    _ if !downstream => want,
                    None => want,
                    Some(b) => want.min(b),
                };
                if allowed > 0 {
                    if !downstream && st.record_upstream {
                        st.upstream_bytes
                            .extend_from_slice(&buf[done..done + allowed as usize]);
                    }
                    if downstream {
                        st.forwarded_down += allowed;
                        if let Some(b) = st.budget.as_mut() {
                            *b -= allowed;
                        }
                    }
                    break allowed as usize;
                }
                drop(st);
                std::thread::sleep(Duration::from_millis(5));
            };
            if to.write_all(&buf[done..done + take]).is_err() {
                break 'copy;
            }
            done += take;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

// ---------------------------------------------------------------------------------------
// Workloads
// ---------------------------------------------------------------------------------------

/// Stream writes of every kind a replica must follow: entries with explicit and
/// generated IDs, two groups, reads by three consumers, XACK, XCLAIM, XAUTOCLAIM,
/// XDEL, XTRIM, XGROUP CREATECONSUMER / SETID / DELCONSUMER, a MULTI/EXEC, a second key
/// and one in database 1. Keys are prefixed with `p` so workloads can run twice.
fn stream_workload(c: &mut Conn, p: &str) {
    for i in 1..=12 {
        c.ok(&format!("XADD {p}s {i}-1 field {i} other value-{i}"));
    }
    c.ok(&format!("XADD {p}s * generated yes"));
    c.ok(&format!("XGROUP CREATE {p}s g 0"));
    c.ok(&format!("XGROUP CREATE {p}s g2 $ ENTRIESREAD 13"));
    c.ok(&format!("XREADGROUP GROUP g alice COUNT 3 STREAMS {p}s >"));
    c.ok(&format!("XREADGROUP GROUP g bob COUNT 4 STREAMS {p}s >"));
    c.ok(&format!("XACK {p}s g 1-1 5-1"));
    c.ok(&format!("XCLAIM {p}s g carol 0 2-1 6-1"));
    c.ok(&format!("XAUTOCLAIM {p}s g dave 0 0 COUNT 1"));
    c.ok(&format!("XDEL {p}s 4-1 9-1"));
    c.ok(&format!("XTRIM {p}s MAXLEN 9"));
    c.ok(&format!("XGROUP CREATECONSUMER {p}s g erin"));
    c.ok(&format!("XGROUP CREATECONSUMER {p}s g frank"));
    c.ok(&format!("XGROUP DELCONSUMER {p}s g frank"));
    c.ok(&format!("XGROUP SETID {p}s g2 7-1"));
    c.ok(&format!("XREADGROUP GROUP g2 gina STREAMS {p}s >"));
    c.ok("MULTI");
    c.ok(&format!("XADD {p}t MAXLEN ~ 1000 * in multi"));
    c.ok(&format!("XADD {p}s 100-1 in multi"));
    c.ok(&format!("XREADGROUP GROUP g alice STREAMS {p}s >"));
    let exec = c.ok("EXEC");
    assert_eq!(exec.items().len(), 3, "EXEC: {exec:?}");
    c.ok("SELECT 1");
    c.ok(&format!("XADD {p}db1 5-5 in db1"));
    c.ok("SELECT 0");
}

/// `n` entries of about `size` bytes each into `key`, pipelined.
fn fill(c: &mut Conn, key: &str, n: usize, size: usize) {
    let value = "x".repeat(size);
    let mut sent = 0;
    while sent < n {
        let batch = (n - sent).min(1000);
        let mut bytes = Vec::new();
        for i in 0..batch {
            let i = (sent + i).to_string();
            bytes.extend(encode_cmd(&[
                b"XADD".as_slice(),
                key.as_bytes(),
                b"*",
                b"i",
                i.as_bytes(),
                b"v",
                value.as_bytes(),
            ]));
        }
        c.send_bytes(&bytes);
        for _ in 0..batch {
            let r = c.read();
            assert!(!r.is_error(), "{}: XADD {key}: {r:?}", c.who);
        }
        sent += batch;
    }
}

/// Both servers' data compared with [`Compare::Streamd`] in each database used.
fn assert_same_streamd_data(a: &mut Conn, b: &mut Conn) {
    for db in ["0", "1"] {
        a.ok(&format!("SELECT {db}"));
        b.ok(&format!("SELECT {db}"));
        assert_same_data(a, b, Compare::Streamd);
    }
    a.ok("SELECT 0");
    b.ok("SELECT 0");
}

// ---------------------------------------------------------------------------------------
// 1. The basic case
// ---------------------------------------------------------------------------------------

#[test]
fn a_replica_gets_every_write_and_both_sides_report_it() {
    // No periodic PING while the offsets are compared (the first goes out at once).
    let primary = Node::streamd("primary", &["--repl-ping-replica-period", "3600"]);
    let replica = Node::streamd("replica", &[]);
    let (mut p, mut r) = (primary.conn(), replica.conn());
    // Some data goes in the full sync's payload, the rest through the stream.
    stream_workload(&mut p, "before-");
    follow(&mut r, primary.port);
    stream_workload(&mut p, "after-");
    wait_acked(&mut p, 1);
    assert_same_streamd_data(&mut p, &mut r);
    assert!(
        dataset(&mut r, Compare::Streamd).contains("after-s"),
        "the stream part reached the replica"
    );

    // INFO replication on both sides.
    let offset = wait_same_offset(&mut p, &mut r);
    let pi = p.info("replication");
    assert_eq!(pi["role"], "master");
    assert_eq!(pi["connected_slaves"], "1");
    let slave0 = &pi["slave0"];
    assert!(
        slave0.starts_with(&format!(
            "ip=127.0.0.1,port={},state=online,offset=",
            replica.port
        )),
        "slave0:{slave0}"
    );
    let ri = r.info("replication");
    assert_eq!(ri["role"], "slave");
    assert_eq!(ri["master_host"], "127.0.0.1");
    assert_eq!(ri["master_port"], primary.port.to_string());
    assert_eq!(ri["master_link_status"], "up");
    assert_eq!(ri["master_sync_in_progress"], "0");
    assert_eq!(ri["slave_read_only"], "1");
    assert_eq!(ri["master_replid"], pi["master_replid"]);
    assert_eq!(pi["master_replid"].len(), 40);
    assert_eq!(ri["master_repl_offset"], offset.to_string());

    // ROLE, exact shapes. The acknowledged offset trails until the next ACK.
    let acked = wait_for("the replica's ACK of the last offset", || {
        let role = p.cmd(&["ROLE"]);
        let items = role.items();
        assert_eq!(items.len(), 3, "ROLE on the primary: {role:?}");
        assert_eq!(items[0], bulk("master"));
        let replicas = items[2].items();
        assert_eq!(replicas.len(), 1, "ROLE replicas: {role:?}");
        let one = replicas[0].items();
        assert_eq!(one.len(), 3, "ROLE replica: {role:?}");
        assert_eq!(one[0], bulk("127.0.0.1"));
        assert_eq!(one[1], bulk(&replica.port.to_string()));
        let ack: i64 = one[2].text().parse().expect("offset as a bulk number");
        if items[1] == V::Int(offset as i64) && ack == offset as i64 {
            Ok(role)
        } else {
            Err(format!("{role:?}"))
        }
    });
    let want = V::Array(vec![
        bulk("master"),
        V::Int(offset as i64),
        V::Array(vec![V::Array(vec![
            bulk("127.0.0.1"),
            bulk(&replica.port.to_string()),
            bulk(&offset.to_string()),
        ])]),
    ]);
    assert_eq!(acked, want);
    assert_eq!(
        r.cmd(&["ROLE"]),
        V::Array(vec![
            bulk("slave"),
            bulk("127.0.0.1"),
            V::Int(primary.port as i64),
            bulk("connected"),
            V::Int(offset as i64),
        ])
    );
    // One full sync: the replica offered its own history, which the primary does not
    // know (a Redis server that was a primary asks the same way).
    assert_eq!(p.stat("sync_full"), 1);
    assert_eq!(p.stat("sync_partial_ok"), 0);
}

// ---------------------------------------------------------------------------------------
// 2. Read-only replicas
// ---------------------------------------------------------------------------------------

#[test]
fn a_replica_refuses_writes_unless_replica_read_only_is_no() {
    let primary = Node::streamd("primary", &[]);
    let replica = Node::streamd("replica", &[]);
    let (mut p, mut r) = (primary.conn(), replica.conn());
    p.ok("XADD s 1-1 f v");
    p.ok("XGROUP CREATE s g 0");
    follow(&mut r, primary.port);
    wait_acked(&mut p, 1);
    let readonly = b"-READONLY You can't write against a read only replica.\r\n";
    for cmd in [
        &["XADD", "s", "*", "f", "v"][..],
        &["XGROUP", "CREATE", "s", "g2", "0"],
        &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"],
        &["XTRIM", "s", "MAXLEN", "0"],
        &["DEL", "s"],
    ] {
        assert_eq!(
            escape(&r.cmd_bytes(cmd)),
            escape(readonly),
            "{cmd:?} on a read-only replica"
        );
    }
    // Reads are served.
    assert_eq!(r.run("XLEN s"), V::Int(1));

    r.ok("CONFIG SET replica-read-only no");
    assert_eq!(r.info_field("replication", "slave_read_only"), "0");
    let id = r.ok("XADD local 1-1 only here").text();
    assert_eq!(id, "1-1");
    // A local write stays local: the primary never had it, and the link stays up.
    assert_eq!(p.run("EXISTS local"), V::Int(0));
    p.ok("XADD s 2-1 f v2");
    wait_acked(&mut p, 1);
    assert_eq!(r.run("XLEN s"), V::Int(2));
    assert_eq!(r.info_field("replication", "master_link_status"), "up");
}

// ---------------------------------------------------------------------------------------
// 3. Blocked readers on a replica
// ---------------------------------------------------------------------------------------

#[test]
fn a_reader_blocked_on_the_replica_wakes_on_a_write_to_the_primary() {
    let primary = Node::streamd("primary", &[]);
    let replica = Node::streamd("replica", &[]);
    let (mut p, mut r) = (primary.conn(), replica.conn());
    p.ok("XADD s 1-1 f old");
    follow(&mut r, primary.port);
    wait_acked(&mut p, 1);
    let mut reader = replica.conn();
    reader.send("XREAD BLOCK 25000 STREAMS s $");
    wait_info(&mut r, "clients", "blocked_clients", "1");
    p.ok("XADD s 2-1 f new");
    assert_eq!(
        reader.read(),
        V::Array(vec![V::Array(vec![
            bulk("s"),
            V::Array(vec![V::Array(vec![
                bulk("2-1"),
                V::Array(vec![bulk("f"), bulk("new")])
            ])]),
        ])])
    );
}

// ---------------------------------------------------------------------------------------
// 4. WAIT
// ---------------------------------------------------------------------------------------

#[test]
fn wait_counts_only_replicas_that_acknowledged_answers_at_once_in_multi_and_errors_on_a_replica() {
    let primary = Node::streamd("primary", &[]);
    let up = Node::streamd("replica-up", &[]);
    let mut down = Node::streamd("replica-down", &[]);
    let mut p = primary.conn();
    follow(&mut up.conn(), primary.port);
    follow(&mut down.conn(), primary.port);
    p.ok("XADD s * f 1");
    wait_acked(&mut p, 2);

    down.kill9();
    p.ok("XADD s * f 2");
    let started = Instant::now();
    assert_eq!(
        p.run("WAIT 2 1000"),
        V::Int(1),
        "one of two replicas is down"
    );
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(990),
        "WAIT 2 1000 answered after {waited:?}, before its timeout"
    );

    // Inside MULTI, WAIT cannot block: EXEC answers at once even with no timeout.
    p.ok("MULTI");
    p.ok("XADD s * f 3");
    p.ok("WAIT 5 0");
    let exec = p.ok("EXEC");
    let items = exec.items();
    assert_eq!(items.len(), 2, "EXEC: {exec:?}");
    let counted = items[1].int();
    assert!(
        (0..=1).contains(&counted),
        "WAIT in MULTI counted {counted}"
    );

    // WAIT on a replica is an error, with Redis's text.
    let mut r = up.conn();
    assert_eq!(
        r.run("WAIT 1 100"),
        V::Error(
            "ERR WAIT cannot be used with replica instances. Please also note that since \
             Redis 4.0 if a replica is configured to be writable (which is not the default) \
             writes to replicas are just local and are not propagated."
                .into()
        )
    );
}

// ---------------------------------------------------------------------------------------
// 5. min-replicas-to-write
// ---------------------------------------------------------------------------------------

#[test]
fn min_replicas_to_write_refuses_writes_without_a_good_replica() {
    let primary = Node::streamd("primary", &["--min-replicas-to-write", "1"]);
    let mut p = primary.conn();
    assert_eq!(
        escape(&p.cmd_bytes(&["XADD", "s", "*", "f", "v"])),
        escape(b"-NOREPLICAS Not enough good replicas to write.\r\n")
    );
    assert_eq!(
        p.run("EXISTS s"),
        V::Int(0),
        "the refused write did nothing"
    );
    assert_eq!(p.run("XLEN s"), V::Int(0), "reads are served");
    let mut replica = Node::streamd("replica", &[]);
    follow(&mut replica.conn(), primary.port);
    let id = wait_for("a write accepted with one good replica", || {
        match p.run("XADD s * f v") {
            V::Bulk(id) => Ok(String::from_utf8_lossy(&id).into_owned()),
            other => Err(format!("{other:?}")),
        }
    });
    wait_acked(&mut p, 1);
    assert_eq!(
        replica.conn().run("XLEN s"),
        V::Int(1),
        "{id} reached the replica"
    );
    replica.kill9();
    wait_for(
        "writes refused again once the replica is gone",
        || match p.run("XADD s * f v") {
            V::Error(e) if e == "NOREPLICAS Not enough good replicas to write." => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
}

// ---------------------------------------------------------------------------------------
// 6. Replica restarts
// ---------------------------------------------------------------------------------------

#[test]
fn a_cleanly_restarted_replica_continues_and_a_killed_one_syncs_in_full() {
    let primary = Node::streamd("primary", &[]);
    let mut p = primary.conn();
    let target = format!("127.0.0.1 {}", primary.port);
    let mut replica = Node::streamd("replica", &["--appendonly", "yes", "--replicaof", &target]);
    stream_workload(&mut p, "a-");
    wait_acked(&mut p, 1);
    assert_same_streamd_data(&mut p, &mut replica.conn());
    let full = p.stat("sync_full");
    let mut partial = p.stat("sync_partial_ok");
    assert_eq!(full, 1);

    for (how, round) in [("SIGTERM", "b-"), ("SHUTDOWN", "c-")] {
        if how == "SIGTERM" {
            replica.sigterm();
        } else {
            replica.shutdown();
        }
        let state = replica.data_dir().join("replication.state");
        assert!(
            state.exists(),
            "a clean stop ({how}) leaves {}",
            state.display()
        );
        stream_workload(&mut p, round);
        replica.start();
        partial += 1;
        wait_stat(&mut p, "sync_partial_ok", partial);
        assert_eq!(
            p.stat("sync_full"),
            full,
            "after a {how} restart: no full sync"
        );
        wait_acked(&mut p, 1);
        assert_same_streamd_data(&mut p, &mut replica.conn());
    }

    replica.kill9();
    assert!(!replica.data_dir().join("replication.state").exists());
    stream_workload(&mut p, "d-");
    replica.start();
    wait_stat(&mut p, "sync_full", full + 1);
    assert_eq!(p.stat("sync_partial_ok"), partial);
    wait_acked(&mut p, 1);
    assert_same_streamd_data(&mut p, &mut replica.conn());
}

/// A primary stopped cleanly keeps its history (`replication.state`), so its replica
/// continues after the restart; after kill -9 the history is new and the replica syncs in
/// full. The replica follows through a proxy, as the restarted primary has a new port.
#[test]
fn a_cleanly_restarted_primary_lets_its_replica_continue_and_a_killed_one_does_not() {
    let mut primary = Node::streamd("primary", &["--appendonly", "yes"]);
    let proxy = Proxy::start(primary.port);
    let replica = Node::streamd("replica", &[]);
    let mut r = replica.conn();
    follow(&mut r, proxy.port);
    let mut p = primary.conn();
    stream_workload(&mut p, "a-");
    wait_acked(&mut p, 1);
    let replid = p.info_field("replication", "master_replid");

    primary.sigterm();
    wait_info(&mut r, "replication", "master_link_status", "down");
    primary.start();
    proxy.set_upstream(primary.port);
    let mut p = primary.conn();
    assert_eq!(p.info_field("replication", "master_replid"), replid);
    wait_info(&mut r, "replication", "master_link_status", "up");
    wait_stat(&mut p, "sync_partial_ok", 1);
    assert_eq!(p.stat("sync_full"), 0, "the replica continued");
    stream_workload(&mut p, "b-");
    wait_acked(&mut p, 1);
    assert_same_streamd_data(&mut p, &mut r);

    primary.kill9();
    wait_info(&mut r, "replication", "master_link_status", "down");
    primary.start();
    proxy.set_upstream(primary.port);
    let mut p = primary.conn();
    assert_ne!(p.info_field("replication", "master_replid"), replid);
    wait_stat(&mut p, "sync_full", 1);
    wait_acked(&mut p, 1);
    assert_same_streamd_data(&mut p, &mut r);
}

// ---------------------------------------------------------------------------------------
// 7. Cut links
// ---------------------------------------------------------------------------------------

/// A primary and a replica that follows it through a proxy.
fn primary_and_proxied_replica(primary_args: &[&str]) -> (Node, Node, Proxy) {
    let primary = Node::streamd("primary", primary_args);
    let proxy = Proxy::start(primary.port);
    let replica = Node::streamd("replica", &[]);
    follow(&mut replica.conn(), proxy.port);
    (primary, replica, proxy)
}

/// Cuts the proxy and waits until both sides noticed.
fn cut_and_wait(proxy: &Proxy, p: &mut Conn, r: &mut Conn) {
    proxy.cut();
    wait_info(p, "replication", "connected_slaves", "0");
    wait_info(r, "replication", "master_link_status", "down");
}

#[test]
fn a_cut_link_continues_from_the_backlog_once_restored() {
    let (primary, replica, proxy) = primary_and_proxied_replica(&[]);
    let (mut p, mut r) = (primary.conn(), replica.conn());
    stream_workload(&mut p, "a-");
    wait_acked(&mut p, 1);
    let (full, partial) = (p.stat("sync_full"), p.stat("sync_partial_ok"));

    cut_and_wait(&proxy, &mut p, &mut r);
    stream_workload(&mut p, "b-");
    assert!(!dataset(&mut r, Compare::Streamd).contains("b-s"));
    proxy.restore();
    wait_stat(&mut p, "sync_partial_ok", partial + 1);
    wait_acked(&mut p, 1);
    assert_eq!(p.stat("sync_full"), full, "no full sync");
    assert_same_streamd_data(&mut p, &mut r);
    wait_same_offset(&mut p, &mut r);
}

#[test]
fn a_cut_longer_than_the_backlog_ends_in_a_full_resync() {
    let (primary, replica, proxy) = primary_and_proxied_replica(&[]);
    let (mut p, mut r) = (primary.conn(), replica.conn());
    // Below the minimum, the backlog keeps 16 kB, as Redis's.
    p.ok("CONFIG SET repl-backlog-size 1000");
    assert_eq!(p.info_field("replication", "repl_backlog_size"), "16384");
    p.ok("CONFIG SET repl-backlog-size 16kb");
    assert_eq!(p.info_field("replication", "repl_backlog_size"), "16384");
    stream_workload(&mut p, "a-");
    wait_acked(&mut p, 1);
    let (full, partial, refused) = (
        p.stat("sync_full"),
        p.stat("sync_partial_ok"),
        p.stat("sync_partial_err"),
    );
    let replica_offset = r.repl_offset();

    cut_and_wait(&proxy, &mut p, &mut r);
    fill(&mut p, "big", 64, 1024);
    let first: u64 = p
        .info_field("replication", "repl_backlog_first_byte_offset")
        .parse()
        .expect("number");
    assert!(
        first > replica_offset + 1,
        "the backlog (from {first}) no longer holds the replica's next byte ({})",
        replica_offset + 1
    );
    proxy.restore();
    wait_stat(&mut p, "sync_full", full + 1);
    assert_eq!(p.stat("sync_partial_ok"), partial);
    assert_eq!(p.stat("sync_partial_err"), refused + 1);
    wait_acked(&mut p, 1);
    assert_same_streamd_data(&mut p, &mut r);
    assert_eq!(r.run("XLEN big"), V::Int(64));
}

// ---------------------------------------------------------------------------------------
// 8. A primary dying during a full sync
// ---------------------------------------------------------------------------------------

#[test]
fn a_replica_keeps_its_data_when_the_primary_dies_during_a_full_sync() {
    let mut primary = Node::streamd("primary", &[]);
    let mut p = primary.conn();
    // A payload of megabytes, far more than the proxy lets through.
    fill(&mut p, "big", 200_000, 16);
    p.ok("XGROUP CREATE big g 0");
    p.ok("XREADGROUP GROUP g c COUNT 1000 STREAMS big >");
    p.ok("SAVE");
    let replica = Node::streamd("replica", &[]);
    let mut r = replica.conn();
    stream_workload(&mut r, "mine-");
    let before = dataset(&mut r, Compare::Streamd);

    let proxy = Proxy::start(primary.port);
    proxy.hold_after(64 * 1024);
    r.ok(&format!("REPLICAOF 127.0.0.1 {}", proxy.port));
    // The replica has read part of the payload and waits for the rest.
    let (read, total) = wait_for("the replica in the middle of the payload", || {
        let i = r.info("replication");
        let read: u64 = i
            .get("master_sync_read_bytes")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let total: i64 = i
            .get("master_sync_total_bytes")
            .and_then(|v| v.parse().ok())
            .unwrap_or(-1);
        if proxy.holding() && i["master_sync_in_progress"] == "1" && read > 0 {
            Ok((read, total))
        } else {
            Err(format!("{i:?}"))
        }
    });
    // A streamd primary streams its snapshot in the diskless form: the length is not
    // known up front (-1, as with Redis's diskless sync).
    assert_eq!(total, -1, "read {read} of {total}");
    assert!(
        read <= 64 * 1024 + 4096,
        "read {read} past what the proxy let through"
    );
    assert_eq!(
        dataset(&mut r, Compare::Streamd),
        before,
        "nothing half-loaded"
    );

    primary.kill9();
    proxy.cut();
    wait_info(&mut r, "replication", "master_sync_in_progress", "0");
    assert_eq!(r.info_field("replication", "master_link_status"), "down");
    assert_eq!(r.info_field("replication", "role"), "slave");
    assert_eq!(
        dataset(&mut r, Compare::Streamd),
        before,
        "the replica kept its previous dataset"
    );

    // It keeps trying (the proxy sees the attempts; nothing answers behind it).
    proxy.release();
    proxy.restore();
    let attempts = proxy.attempts();
    wait_for("two more link attempts", || {
        let n = proxy.attempts();
        if n >= attempts + 2 {
            Ok(())
        } else {
            Err(n.to_string())
        }
    });
    assert_eq!(r.info_field("replication", "master_link_status"), "down");
    assert_eq!(dataset(&mut r, Compare::Streamd), before);

    // The primary is back (with its saved dataset): the replica syncs.
    primary.start();
    proxy.set_upstream(primary.port);
    let mut p = primary.conn();
    assert_eq!(
        p.run("XLEN big"),
        V::Int(200_000),
        "the primary reloaded its snapshot"
    );
    wait_info(&mut r, "replication", "master_link_status", "up");
    wait_acked(&mut p, 1);
    assert_same_data(&mut p, &mut r, Compare::Streamd);
    assert_eq!(
        r.run("EXISTS mine-s"),
        V::Int(0),
        "the old dataset was replaced"
    );
}

// ---------------------------------------------------------------------------------------
// 9, 10. Failover
// ---------------------------------------------------------------------------------------

#[test]
fn a_promoted_replica_continues_the_history_for_the_other_replicas() {
    let mut a = Node::streamd("old-primary", &["--repl-ping-replica-period", "3600"]);
    let b = Node::streamd("promoted", &[]);
    let c = Node::streamd("other-replica", &[]);
    let (mut pa, mut pb, mut pc) = (a.conn(), b.conn(), c.conn());
    follow(&mut pb, a.port);
    follow(&mut pc, a.port);
    stream_workload(&mut pa, "a-");
    wait_acked(&mut pa, 2);
    let old_id = pa.info_field("replication", "master_replid");
    a.kill9();
    wait_info(&mut pb, "replication", "master_link_status", "down");
    wait_info(&mut pc, "replication", "master_link_status", "down");
    let offset = wait_same_offset(&mut pb, &mut pc);

    assert_eq!(pb.run("REPLICAOF NO ONE"), V::Status("OK".into()));
    assert_eq!(
        pb.cmd(&["ROLE"]),
        V::Array(vec![
            bulk("master"),
            V::Int(offset as i64),
            V::Array(vec![])
        ])
    );
    let bi = pb.info("replication");
    assert_eq!(bi["role"], "master");
    assert_eq!(bi["master_replid2"], old_id);
    assert_ne!(bi["master_replid"], old_id);
    assert_eq!(bi["second_repl_offset"], (offset + 1).to_string());
    let new_id = bi["master_replid"].clone();
    stream_workload(&mut pb, "b-");

    follow(&mut pc, b.port);
    wait_stat(&mut pb, "sync_partial_ok", 1);
    assert_eq!(
        pb.stat("sync_full"),
        0,
        "the other replica continued, no full sync"
    );
    wait_acked(&mut pb, 1);
    assert_same_streamd_data(&mut pb, &mut pc);
    let ci = pc.info("replication");
    assert_eq!(ci["master_replid"], new_id);
    assert_eq!(ci["master_replid2"], old_id);

    // The exact answer to a PSYNC of the old history, from where the promotion was.
    let mut fake = b.conn();
    assert_eq!(
        fake.run("REPLCONF capa eof capa psync2"),
        V::Status("OK".into())
    );
    assert_eq!(
        fake.run(&format!("PSYNC {old_id} {}", offset + 1)),
        V::Status(format!("CONTINUE {new_id}"))
    );
    wait_stat(&mut pb, "sync_partial_ok", 2);
    // One byte further than the old history went is not the old history.
    let mut fake = b.conn();
    let reply = fake.run(&format!("PSYNC {old_id} {}", offset + 2));
    assert!(
        matches!(&reply, V::Status(s) if s.starts_with(&format!("FULLRESYNC {new_id} "))),
        "{reply:?}"
    );
}

#[test]
fn an_old_primary_repointed_to_the_new_one_drops_its_own_writes() {
    let a = Node::streamd("old-primary", &[]);
    let b = Node::streamd("new-primary", &[]);
    let (mut pa, mut pb) = (a.conn(), b.conn());
    follow(&mut pb, a.port);
    stream_workload(&mut pa, "a-");
    wait_acked(&mut pa, 1);

    pb.ok("REPLICAOF NO ONE");
    wait_info(&mut pa, "replication", "connected_slaves", "0");
    // Writes the new primary never gets.
    pa.ok("XADD a-s * only old-primary");
    pa.ok("XADD only-old * f v");
    stream_workload(&mut pa, "old-");
    // And the new primary's own.
    pb.ok("XADD a-s * on new-primary");
    stream_workload(&mut pb, "new-");
    let (full, refused) = (pb.stat("sync_full"), pb.stat("sync_partial_err"));

    follow(&mut pa, b.port);
    wait_stat(&mut pb, "sync_full", full + 1);
    assert_eq!(pb.stat("sync_partial_err"), refused + 1);
    wait_acked(&mut pb, 1);
    assert_same_streamd_data(&mut pb, &mut pa);
    assert_eq!(pa.run("EXISTS only-old old-s"), V::Int(0));
    assert_only_new_primary_entries(&mut pa);
}

/// The old primary `c`, now a replica, holds the entry the new primary wrote
/// (`on new-primary`) and none it wrote itself (`only old-primary`).
fn assert_only_new_primary_entries(c: &mut Conn) {
    let kept = dataset(c, Compare::Streamd);
    assert!(
        !kept.contains("old-primary"),
        "{}: the old primary kept writes the new primary never had",
        c.who
    );
    assert!(kept.contains("new-primary"), "{}: {kept}", c.who);
}

// ---------------------------------------------------------------------------------------
// 11. Chains and loops
// ---------------------------------------------------------------------------------------

#[test]
fn a_replica_of_a_replica_gets_the_top_primarys_writes() {
    let a = Node::streamd("top", &[]);
    let b = Node::streamd("middle", &[]);
    let c = Node::streamd("bottom", &[]);
    let (mut pa, mut pb, mut pc) = (a.conn(), b.conn(), c.conn());
    stream_workload(&mut pa, "a-");
    follow(&mut pb, a.port);
    // SLAVEOF is REPLICAOF's older name.
    let reply = pc.run(&format!("SLAVEOF 127.0.0.1 {}", b.port));
    assert_eq!(reply, V::Status("OK".into()));
    wait_info(&mut pc, "replication", "master_link_status", "up");
    stream_workload(&mut pa, "b-");
    wait_acked(&mut pa, 1);
    wait_same_offset(&mut pa, &mut pc);
    assert_same_streamd_data(&mut pa, &mut pc);
    assert_eq!(
        pc.info_field("replication", "master_replid"),
        pa.info_field("replication", "master_replid")
    );
    assert_eq!(pb.info_field("replication", "connected_slaves"), "1");
    // WAIT on the middle one is refused; it has its own replica all the same.
    assert!(pb.run("WAIT 1 10").is_error());
}

#[test]
fn a_server_made_replica_of_itself_stays_up_with_its_link_down() {
    let node = Node::streamd("self", &[]);
    let mut c = node.conn();
    c.ok("XADD s 1-1 f v");
    let connections = c.stat("total_connections_received");
    assert_eq!(
        c.run(&format!("REPLICAOF 127.0.0.1 {}", node.port)),
        V::Status("OK".into())
    );
    // Each attempt is a connection to itself; let a couple fail.
    wait_for("two link attempts", || {
        let n = c.stat("total_connections_received");
        if n >= connections + 2 {
            Ok(())
        } else {
            Err(n.to_string())
        }
    });
    assert_eq!(c.run("PING"), V::Status("PONG".into()));
    let i = c.info("replication");
    assert_eq!(i["role"], "slave");
    assert_eq!(i["master_link_status"], "down");
    let role = c.cmd(&["ROLE"]);
    assert_eq!(role.items()[0], bulk("slave"));
    assert_eq!(
        role.items()[4],
        V::Int(-1),
        "no offset while not connected: {role:?}"
    );
    assert_eq!(c.run("XLEN s"), V::Int(1), "the data is still served");
    // With stale data refused, the link being down shows.
    c.ok("CONFIG SET replica-serve-stale-data no");
    assert_eq!(
        c.run("XLEN s"),
        V::Error(
            "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."
                .into()
        )
    );
    c.ok("REPLICAOF NO ONE");
    assert_eq!(c.run("XLEN s"), V::Int(1));
}

// ---------------------------------------------------------------------------------------
// The protocol as a hand-made replica sees it
// ---------------------------------------------------------------------------------------

/// Reads the payload that follows `+FULLRESYNC`: keepalive newlines, `$<len>\r\n`, then
/// exactly `len` bytes.
fn read_payload(c: &mut Conn) -> Vec<u8> {
    let mut header = Vec::new();
    loop {
        let b = c.read_bytes(1)[0];
        if header.is_empty() && b == b'\n' {
            continue;
        }
        header.push(b);
        if header.ends_with(b"\r\n") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&header).into_owned();
    // The diskless form (the replica announced `capa eof`): the bytes up to the mark.
    if let Some(mark) = text.strip_prefix("$EOF:") {
        let mark = mark.trim_end().as_bytes();
        assert_eq!(mark.len(), 40, "{text:?}");
        let mut payload = Vec::new();
        while !payload.ends_with(mark) {
            payload.extend_from_slice(&c.read_bytes(1));
        }
        payload.truncate(payload.len() - mark.len());
        return payload;
    }
    let len: usize = text
        .strip_prefix('$')
        .and_then(|t| t.trim_end().parse().ok())
        .unwrap_or_else(|| panic!("payload header {text:?}"));
    c.read_bytes(len)
}

#[test]
fn a_handmade_replica_sees_the_exact_protocol() {
    let primary = Node::streamd("primary", &["--repl-ping-replica-period", "3600"]);
    let mut p = primary.conn();
    p.ok("XADD s 1-1 f before");
    let mut fake = primary.conn();
    assert_eq!(
        fake.run("REPLCONF listening-port 4321"),
        V::Status("OK".into())
    );
    assert_eq!(
        fake.run("REPLCONF capa eof capa psync2"),
        V::Status("OK".into())
    );
    fake.send("PSYNC ? -1");
    let line = fake.read();
    let V::Status(line) = line else {
        panic!("PSYNC answered {line:?}")
    };
    let parts: Vec<&str> = line.split(' ').collect();
    assert_eq!(parts.len(), 3, "{line}");
    assert_eq!(parts[0], "FULLRESYNC");
    assert_eq!(parts[1], p.info_field("replication", "master_replid"));
    let mut offset: u64 = parts[2].parse().expect("offset");
    // Not streamd (no `capa streamd`): the payload is an RDB Redis 7.0 loads.
    let payload = read_payload(&mut fake);
    assert!(
        payload.starts_with(b"REDIS0010"),
        "{:?}",
        escape(&payload[..16])
    );
    assert_eq!(
        payload[payload.len() - 9],
        0xff,
        "RDB EOF opcode before the checksum"
    );
    assert_eq!(p.stat("sync_full"), 1);
    // After a payload in the diskless form the stream waits for the replica's first ACK
    // (as Redis's does), so that no byte follows the end mark in the same read.
    fake.send(&format!("REPLCONF ACK {offset}"));

    // The stream: every byte counts toward the offset.
    let id = p.ok("XADD s 2-1 f after").text();
    let mut frames = Vec::new();
    let want = [
        encode_cmd(&[b"SELECT", b"0"]),
        encode_cmd(&[b"XADD", b"s", id.as_bytes(), b"f", b"after"]),
    ];
    while frames.len() < want.len() {
        let frame = fake.read_frame();
        offset += frame.len() as u64;
        if frame != encode_cmd(&[b"PING"]) {
            frames.push(frame);
        }
    }
    assert_eq!(
        frames.iter().map(|f| escape(f)).collect::<Vec<_>>(),
        want.iter().map(|f| escape(f)).collect::<Vec<_>>()
    );
    // Nothing else is pending once the primary's offset is ours (only PINGs can come).
    wait_for("the primary's offset equal to the bytes received", || {
        let theirs = p.repl_offset();
        if theirs > offset {
            let frame = fake.read_frame();
            assert_eq!(escape(&frame), escape(&encode_cmd(&[b"PING"])));
            offset += frame.len() as u64;
        }
        if theirs == offset {
            Ok(())
        } else {
            Err(format!("{theirs} vs {offset}"))
        }
    });
    fake.send(&format!("REPLCONF ACK {offset}"));
    let slave0 = format!("ip=127.0.0.1,port=4321,state=online,offset={offset},lag=");
    wait_for("the ACK in INFO", || {
        let s = p.info_field("replication", "slave0");
        if s.starts_with(&slave0) {
            Ok(())
        } else {
            Err(s)
        }
    });
    assert_eq!(
        p.cmd(&["ROLE"]),
        V::Array(vec![
            bulk("master"),
            V::Int(offset as i64),
            V::Array(vec![V::Array(vec![
                bulk("127.0.0.1"),
                bulk("4321"),
                bulk(&offset.to_string()),
            ])]),
        ])
    );
    assert_eq!(p.run("WAIT 1 0"), V::Int(1));

    // A PSYNC from the offset reached continues: the backlog from there.
    let mut again = primary.conn();
    again.ok("REPLCONF capa psync2");
    let replid = parts[1];
    assert_eq!(
        again.run(&format!("PSYNC {replid} {}", offset + 1)),
        V::Status(format!("CONTINUE {replid}"))
    );
    p.ok("XADD s 3-1 f later");
    let frame = again.read_frame();
    assert_eq!(
        escape(&frame),
        escape(&encode_cmd(&[b"XADD", b"s", b"3-1", b"f", b"later"])),
        "the continued stream keeps the selected database"
    );
    assert_eq!(p.stat("sync_partial_ok"), 1);
}

/// While clients use WAIT, the primary asks for an ACK behind each batch of writes as
/// it sends them (so the WAIT that follows a write finds the ACK on its way), and only
/// then; and WAIT waits for the last write, not for the GETACK after it, which a Redis
/// replica answers with its offset before the GETACK.
#[test]
fn writes_are_followed_by_a_getack_only_while_clients_wait() {
    let primary = Node::streamd("primary", &["--repl-ping-replica-period", "3600"]);
    let mut p = primary.conn();
    let mut fake = sync_replica(&primary, &mut p);
    let getack = encode_cmd(&[b"REPLCONF", b"GETACK", b"*"]);
    let next = |fake: &mut Conn| loop {
        let frame = fake.read_frame();
        if frame != encode_cmd(&[b"SELECT", b"0"]) {
            return escape(&frame);
        }
    };
    // No WAIT yet: one write comes right after the other.
    p.ok("XADD s 1-1 f a");
    p.ok("XADD s 2-1 f b");
    assert_eq!(
        next(&mut fake),
        escape(&encode_cmd(&[b"XADD", b"s", b"1-1", b"f", b"a"]))
    );
    assert_eq!(
        next(&mut fake),
        escape(&encode_cmd(&[b"XADD", b"s", b"2-1", b"f", b"b"]))
    );
    // A WAIT (answered at once) marks WAIT as in use: the next write carries a GETACK.
    assert_eq!(p.run("WAIT 0 0"), V::Int(0));
    p.ok("XADD s 3-1 f c");
    assert_eq!(
        next(&mut fake),
        escape(&encode_cmd(&[b"XADD", b"s", b"3-1", b"f", b"c"]))
    );
    assert_eq!(next(&mut fake), escape(&getack));
    // Answered as a Redis replica answers: the offset before the GETACK. The WAIT
    // counts it at once (it would otherwise time out: nothing else is acknowledged).
    let before_getack = p.repl_offset() - getack.len() as u64;
    fake.send(&format!("REPLCONF ACK {before_getack}"));
    assert_eq!(p.run("WAIT 1 10000"), V::Int(1));
}

/// A replica made by hand: a connection that sent `SYNC`, read the payload, and is
/// online (the primary's `slave0` says so), so the stream follows on it.
fn sync_replica(primary: &Node, p: &mut Conn) -> Conn {
    let mut fake = primary.conn();
    fake.send("SYNC");
    read_payload(&mut fake);
    wait_for("the SYNC replica online", || {
        let s = p.info_field("replication", "slave0");
        if s.contains(",state=online,") {
            Ok(())
        } else {
            Err(s)
        }
    });
    fake
}

/// The words of a logged command (a frame is an array of bulk strings).
fn frame_words(frame: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(frame)
        .split("\r\n")
        .filter(|w| !w.is_empty() && !w.starts_with('*') && !w.starts_with('$'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn an_old_style_sync_gets_the_payload_without_a_fullresync_line() {
    let primary = Node::streamd("primary", &[]);
    let mut p = primary.conn();
    p.ok("XADD s 1-1 f before");
    let mut fake = primary.conn();
    fake.send("SYNC");
    let payload = read_payload(&mut fake);
    assert!(
        payload.starts_with(b"REDIS0010"),
        "{:?}",
        escape(&payload[..16])
    );
    assert_eq!(p.stat("sync_full"), 1);
    wait_for("the SYNC replica online", || {
        let s = p.info_field("replication", "slave0");
        if s.contains(",state=online,") {
            Ok(())
        } else {
            Err(s)
        }
    });
    p.ok("XADD s 2-1 f after");
    let mut frames = Vec::new();
    while frames.len() < 2 {
        let frame = fake.read_frame();
        if frame != encode_cmd(&[b"PING"]) {
            frames.push(escape(&frame));
        }
    }
    assert_eq!(
        frames,
        [
            escape(&encode_cmd(&[b"SELECT", b"0"])),
            escape(&encode_cmd(&[b"XADD", b"s", b"2-1", b"f", b"after"])),
        ]
    );
}

/// A consumer created by an XREADGROUP that delivers entries reaches a replica through
/// the XCLAIMs (which create it on replay), with no XGROUP CREATECONSUMER of its own, as
/// Redis 7.0–7.4's `MULTI propagation of XREADGROUP` expects; with NOACK nothing else
/// carries the consumer, so CREATECONSUMER is logged.
#[test]
fn xreadgroup_logs_createconsumer_only_when_no_xclaim_carries_the_consumer() {
    let primary = Node::streamd("primary", &[]);
    let mut p = primary.conn();
    p.ok("XADD s 1-1 f a");
    p.ok("XADD s 2-1 f b");
    p.ok("XGROUP CREATE s g 0");
    let mut fake = sync_replica(&primary, &mut p);
    p.run("XREADGROUP GROUP g alice COUNT 1 STREAMS s >");
    p.run("XREADGROUP GROUP g bob COUNT 1 NOACK STREAMS s >");
    p.ok("SET marker 1");
    // Each logged command as its words (the frames are arrays of bulk strings).
    let mut logged: Vec<Vec<String>> = Vec::new();
    loop {
        let frame = fake.read_frame();
        let words = frame_words(&frame);
        if words.iter().any(|w| w == "marker") {
            break;
        }
        if !matches!(words.first().map(String::as_str), Some("PING" | "SELECT")) {
            logged.push(words);
        }
    }
    let names: Vec<String> = logged
        .iter()
        .map(|w| w[..w.len().min(3)].join(" "))
        .collect();
    let created: Vec<&Vec<String>> = logged
        .iter()
        .filter(|w| w.get(1).map(String::as_str) == Some("CREATECONSUMER"))
        .collect();
    assert_eq!(created.len(), 1, "{names:?}");
    assert_eq!(created[0][2..], ["s", "g", "bob"], "{names:?}");
    let claims = names.iter().filter(|n| n.starts_with("XCLAIM")).count();
    assert_eq!(claims, 1, "{names:?}");
}

/// A transaction reaches replicas as Redis 7.2+ sends it: MULTI first, then the SELECT of
/// its database, its writes, EXEC (Redis 7.0 sent the SELECT before MULTI); a single
/// write after it needs no SELECT and no MULTI.
#[test]
fn a_transaction_is_sent_with_its_select_inside_multi() {
    let primary = Node::streamd("primary", &[]);
    let mut p = primary.conn();
    let mut fake = sync_replica(&primary, &mut p);
    p.ok("SELECT 3");
    p.ok("MULTI");
    p.run("SET a 1");
    p.run("SET b 2");
    p.run("GET a");
    p.run("EXEC");
    p.ok("SET c 3");
    let mut words = Vec::new();
    while words.last().map(String::as_str) != Some("SET c 3") {
        let frame = fake.read_frame();
        let w = frame_words(&frame);
        if w.first().map(String::as_str) != Some("PING") {
            words.push(w.join(" "));
        }
    }
    assert_eq!(
        words,
        ["MULTI", "SELECT 3", "SET a 1", "SET b 2", "EXEC", "SET c 3"]
    );
}

#[test]
fn waitaof_counts_replicas_whose_log_is_durable() {
    let primary = Node::streamd("primary", &[]);
    let durable = Node::streamd("replica-aof", &["--appendonly", "yes"]);
    let volatile = Node::streamd("replica-no-aof", &[]);
    let mut p = primary.conn();
    follow(&mut durable.conn(), primary.port);
    follow(&mut volatile.conn(), primary.port);
    p.ok("XADD s * f v");
    wait_acked(&mut p, 2);
    assert_eq!(
        p.run("WAITAOF 0 1 20000"),
        V::Array(vec![V::Int(0), V::Int(1)])
    );
    // The replica without a log never counts. Within the timeout the one with a log
    // acknowledges everything, the GETACK included, in its once-a-second ACK at the
    // latest.
    assert_eq!(
        p.run("WAITAOF 0 2 2500"),
        V::Array(vec![V::Int(0), V::Int(1)])
    );
    assert_eq!(
        p.run("WAITAOF 1 0 0"),
        V::Error(
            "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.".into()
        )
    );
    assert_eq!(
        durable.conn().run("WAITAOF 0 0 0"),
        V::Error(
            "ERR WAITAOF cannot be used with replica instances. Please also note that writes \
             to replicas are just local and are not propagated."
                .into()
        )
    );
}

/// WAITAOF counts a replica once its `FACK` (the offset its log made durable) reaches
/// the target; the ACK a replica sends in answer to `REPLCONF GETACK` must therefore
/// report its log as it is after the batch that carried the GETACK, or WAITAOF waits for
/// the next once-a-second ACK (a Redis 7.2 replica sends an ACK as soon as its fsynced
/// offset moves).
#[test]
fn a_durable_replica_answers_getack_with_its_log_synced_to_the_offset_it_acknowledges() {
    let primary = Node::streamd("primary", &["--repl-ping-replica-period", "3600"]);
    let proxy = Proxy::start(primary.port);
    let replica = Node::streamd(
        "replica",
        &["--appendonly", "yes", "--appendfsync", "always"],
    );
    follow(&mut replica.conn(), proxy.port);
    // Until the log's new base (the full sync's dataset) is written, nothing of the new
    // history is durable on the replica and its FACK stays behind.
    wait_info(
        &mut replica.conn(),
        "persistence",
        "aof_rewrite_in_progress",
        "0",
    );
    let mut p = primary.conn();
    proxy.record_upstream();
    p.ok("XADD s * f v");
    // WAIT blocks, so the primary feeds REPLCONF GETACK after the XADD.
    wait_acked(&mut p, 1);
    let offset = p.repl_offset();
    let (ack, fack) = wait_for("an ACK that covers the whole stream", || {
        let acks = proxy.acks();
        acks.iter()
            .find(|(ack, _)| *ack >= offset)
            .copied()
            .ok_or_else(|| format!("{acks:?}"))
    });
    assert_eq!(
        fack, ack,
        "the first ACK of offset {offset} (the GETACK's answer): ACK {ack} FACK {fack}, with \
         appendfsync always"
    );
}

// ---------------------------------------------------------------------------------------
// streamd-only records between streamd servers
// ---------------------------------------------------------------------------------------

/// The primary's clock reading in milliseconds (TIME).
fn now_ms(c: &mut Conn) -> i64 {
    let t = c.cmd(&["TIME"]);
    let secs: i64 = t.items()[0].text().parse().expect("seconds");
    let usecs: i64 = t.items()[1].text().parse().expect("microseconds");
    secs * 1000 + usecs / 1000
}

/// The effects only streamd understands (`STREAMD.CONSUMER`: a consumer's times,
/// `STREAMD.IDMP`: a stream's IDMP settings and counters) must be applied by a streamd
/// replica, not skipped as unknown commands: the replica then holds exactly what the
/// primary holds, clock readings included.
#[test]
fn streamd_only_records_are_applied_by_a_streamd_replica() {
    let (primary, replica, proxy) = primary_and_proxied_replica(&["--stream-idmp-duration", "300"]);
    let (mut p, mut r) = (primary.conn(), replica.conn());
    p.ok("XADD s 1-1 f v");
    p.ok("XGROUP CREATE s g 0");
    wait_acked(&mut p, 1);
    // The replica gets the next records only once the primary's clock has moved on, so
    // a clock reading the replica took itself cannot equal the primary's.
    proxy.hold_after(0);
    p.ok("XREADGROUP GROUP g alice STREAMS s >");
    p.ok("XGROUP CREATECONSUMER s g erin");
    let id = p.ok("XADD s IDMP producer-1 msg-1 * f v2").text();
    assert_eq!(
        p.ok("XADD s IDMP producer-1 msg-1 * f v2").text(),
        id,
        "a duplicate"
    );
    let last = now_ms(&mut p);
    wait_for("the primary's clock past its last write", || {
        let now = now_ms(&mut p);
        if now > last + 1 {
            Ok(())
        } else {
            Err(now.to_string())
        }
    });
    proxy.release();
    wait_acked(&mut p, 1);
    let full = |c: &mut Conn| c.cmd(&["XINFO", "STREAM", "s", "FULL", "COUNT", "0"]);
    assert_eq!(
        full(&mut r),
        full(&mut p),
        "XINFO STREAM s FULL, replica vs primary"
    );
    assert_eq!(
        r.info_field("replication", "master_skipped_commands"),
        "",
        "a streamd replica skips nothing its streamd primary sends"
    );
}

/// The primary hands an IDMP XADD on with the ID it generated (`XADD key IDMP pid iid
/// <id> ...`, as its log has it); the replica must take that form, which a client may
/// not send, so the entry and its iid reach it and a promoted replica still recognises
/// the duplicate.
#[test]
fn an_idmp_xadd_reaches_a_streamd_replica_and_is_recognised_after_a_failover() {
    let primary = Node::streamd("primary", &[]);
    let replica = Node::streamd("replica", &[]);
    let (mut p, mut r) = (primary.conn(), replica.conn());
    follow(&mut r, primary.port);
    let id = p.ok("XADD s IDMP producer-1 msg-1 * f v").text();
    let auto = p.ok("XADD s IDMPAUTO producer-2 * f w").text();
    wait_acked(&mut p, 1);
    let range = |c: &mut Conn| c.cmd(&["XRANGE", "s", "-", "+"]);
    assert_eq!(range(&mut r), range(&mut p), "XRANGE s, replica vs primary");
    let counters = |c: &mut Conn| {
        let info = c.cmd(&["XINFO", "STREAM", "s"]);
        ["pids-tracked", "iids-tracked", "iids-added"].map(|f| info.field(f).clone())
    };
    assert_eq!(
        counters(&mut r),
        counters(&mut p),
        "IDMP counters, replica vs primary"
    );

    r.ok("REPLICAOF NO ONE");
    assert_eq!(r.ok("XADD s IDMP producer-1 msg-1 * f v").text(), id);
    assert_eq!(r.ok("XADD s IDMPAUTO producer-2 * f w").text(), auto);
    assert_eq!(
        r.run("XLEN s"),
        V::Int(2),
        "no duplicate entry after the failover"
    );
}

// ---------------------------------------------------------------------------------------
// 12, 13. With Redis 7.0
// ---------------------------------------------------------------------------------------

/// The group commands Redis 7.0 has, on `key`, `count` entries read at first.
fn redis_group_workload(c: &mut Conn, key: &str) {
    c.ok(&format!("XREADGROUP GROUP g bob COUNT 3 STREAMS {key} >"));
    c.ok(&format!("XACK {key} g 1-1"));
    c.ok(&format!("XCLAIM {key} g carol 0 2-1"));
    c.ok(&format!("XAUTOCLAIM {key} g dave 0 0 COUNT 1"));
    c.ok(&format!("XGROUP CREATECONSUMER {key} g erin"));
    c.ok(&format!("XGROUP CREATE {key} g2 $"));
    c.ok(&format!("XGROUP SETID {key} g2 3-1"));
    c.ok(&format!(
        "XREADGROUP GROUP g2 frank COUNT 2 STREAMS {key} >"
    ));
}

/// Needs the Redis-forms translator (`replication/redis_forms.rs`, installed with
/// `core::replication::set_translator`): without it a Redis 7.0 replica gets streamd's
/// `STREAMD.CONSUMER` records inside the primary's MULTI blocks, refuses them as unknown
/// commands and discards each whole block (EXECABORT), so the groups' reads, claims and
/// acknowledgements never reach it.
#[test]
fn a_redis_replica_follows_a_streamd_primary() {
    if !have_redis("a_redis_replica_follows_a_streamd_primary") {
        return;
    }
    let primary = Node::streamd("primary", &[]);
    let redis = Node::redis("redis-replica", &[]);
    let (mut p, mut q) = (primary.conn(), redis.conn());
    // Before the sync (in the RDB payload) ...
    for i in 1..=10 {
        p.ok(&format!("XADD s {i}-1 f {i}"));
    }
    p.ok("XGROUP CREATE s g 0");
    p.ok("XREADGROUP GROUP g alice COUNT 2 STREAMS s >");
    follow(&mut q, primary.port);
    // ... and after (in the stream).
    for i in 11..=20 {
        p.ok(&format!("XADD s {i}-1 f {i}"));
    }
    redis_group_workload(&mut p, "s");
    p.ok("XDEL s 4-1 12-1");
    p.ok("XTRIM s MAXLEN 15");
    p.ok("XADD t * f v");
    wait_acked(&mut p, 1);
    assert_same_data(&mut p, &mut q, Compare::WithRedis);
}

#[test]
fn streamd_follows_a_redis_primary_and_skips_what_it_does_not_store() {
    if !have_redis("streamd_follows_a_redis_primary_and_skips_what_it_does_not_store") {
        return;
    }
    let primary = Node::redis("redis-primary", &[]);
    // Redis's own replica is the oracle: what a replica of this primary holds (Redis 7.0
    // sends XREADGROUP as XCLAIMs without ENTRIESREAD, so even its own replicas differ
    // from it in entries-read).
    let oracle = Node::redis("redis-replica", &[]);
    let replica = Node::streamd("replica", &[]);
    let (mut p, mut o, mut r) = (primary.conn(), oracle.conn(), replica.conn());
    for i in 1..=10 {
        p.ok(&format!("XADD s {i}-1 f {i}"));
    }
    p.ok("XGROUP CREATE s g 0");
    p.ok("XREADGROUP GROUP g alice COUNT 2 STREAMS s >");
    p.ok("SET before-sync v");
    follow(&mut o, primary.port);
    follow(&mut r, primary.port);
    for i in 11..=300 {
        p.ok(&format!("XADD s {i}-1 f {i}"));
    }
    redis_group_workload(&mut p, "s");
    p.ok("XTRIM s MAXLEN ~ 150");
    p.ok("XDEL s 250-1 251-1");
    p.ok("XADD t * f v");
    p.ok("SET k v");
    p.ok("INCR n");
    p.ok("INCR n");
    // HyperLogLogs (to the primary's bytes) and bitmaps (strings) are applied.
    p.ok("PFADD hll a b c");
    p.ok("SETBIT bits 7 1");
    p.ok("SETBIT bits 9 1");
    wait_acked(&mut p, 2);
    wait_same_offset(&mut p, &mut r);
    assert_same_data(&mut o, &mut r, Compare::WithRedis);
    assert_eq!(
        p.cmd(&["XRANGE", "s", "-", "+"]),
        r.cmd(&["XRANGE", "s", "-", "+"]),
        "the entries equal the primary's"
    );
    assert!(
        r.run("XLEN s").int() < 300,
        "the approximate trim removed whole nodes"
    );
    let skipped = r.info_field("replication", "master_skipped_commands");
    assert!(
        !skipped.contains("pfadd") && !skipped.contains("setbit") && !skipped.contains("set="),
        "master_skipped_commands:{skipped}"
    );
    assert_eq!(r.cmd(&["GET", "hll"]), p.cmd(&["GET", "hll"]));
    assert_eq!(r.run("BITCOUNT bits"), V::Int(2));
    // The other core types are applied like streams.
    assert_eq!(r.run("GET k"), bulk("v"));
    assert_eq!(r.run("GET n"), bulk("2"));
    // What the full sync's RDB holds is loaded whatever its type (types-persist).
    assert_eq!(r.run("EXISTS before-sync"), V::Int(1));

    let before = dataset(&mut r, Compare::Streamd);
    assert_eq!(r.run("REPLICAOF NO ONE"), V::Status("OK".into()));
    assert_eq!(r.info_field("replication", "role"), "master");
    assert_eq!(r.cmd(&["ROLE"]).items()[0], bulk("master"));
    assert_eq!(
        dataset(&mut r, Compare::Streamd),
        before,
        "promotion keeps the data"
    );
    r.ok("XADD s * after promotion");
    r.ok("XREADGROUP GROUP g alice STREAMS s >");
}

// ---------------------------------------------------------------------------------------
// Invariants a failover relies on (docs/replication.md, "Guarantees"): offsets stay in
// the primary's space, WAIT counts only applied bytes, an old primary never keeps writes
// the new one never had, a replica's log claims only what a restart would load.
// ---------------------------------------------------------------------------------------

/// What Sentinel does to every server every two seconds: PUBLISH a hello message on
/// `__sentinel__:hello`. `n` of them, about 250 bytes each.
fn sentinel_hellos(c: &mut Conn, n: usize) {
    let payload = "127.0.0.1,26379,0123456789abcdef0123456789abcdef01234567,1,mymaster,\
                   127.0.0.1,6379,1"
        .repeat(2);
    for _ in 0..n {
        c.ok(&format!("PUBLISH __sentinel__:hello {payload}"));
    }
}

/// The `offset=` a primary's INFO reports for its replica `slave0` (its last ACK).
fn acked_offset(primary: &mut Conn) -> u64 {
    let line = primary.info_field("replication", "slave0");
    line.split(',')
        .find_map(|kv| kv.strip_prefix("offset="))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{}: no offset in slave0:{line}", primary.who))
}

#[test]
fn a_replicas_offset_never_passes_its_primarys_when_its_own_clients_publish() {
    let a = Node::streamd("primary", &["--repl-ping-replica-period", "3600"]);
    let b = Node::streamd("replica", &[]);
    let (mut pa, mut pb) = (a.conn(), b.conn());
    follow(&mut pb, a.port);
    pa.ok("XADD s * f v");
    wait_acked(&mut pa, 1);
    // A replica's stream is its primary's: what its own clients publish is delivered
    // to its subscribers and goes no further.
    sentinel_hellos(&mut pb, 40);
    pa.ok("XADD s * f w");
    wait_acked(&mut pa, 1);
    let primary_offset = pa.repl_offset();
    let replica_offset = wait_for("the replica at the primary's offset", || {
        let r = pb.repl_offset();
        assert!(
            r <= primary_offset,
            "the replica reports offset {r}, past its primary's {primary_offset}"
        );
        if r == primary_offset {
            Ok(r)
        } else {
            Err(format!("{r} vs {primary_offset}"))
        }
    });
    assert_eq!(
        pb.info_field("replication", "slave_repl_offset"),
        replica_offset.to_string()
    );
    let acked = acked_offset(&mut pa);
    assert!(
        acked <= primary_offset,
        "the replica acknowledged {acked}, past everything its primary sent ({primary_offset})"
    );
}

#[test]
fn wait_counts_a_replica_only_for_bytes_it_applied() {
    let (a, b, proxy) = primary_and_proxied_replica(&["--repl-ping-replica-period", "3600"]);
    let (mut pa, mut pb) = (a.conn(), b.conn());
    pa.ok("XADD s 1-1 f v");
    wait_acked(&mut pa, 1);
    sentinel_hellos(&mut pb, 40);
    // From here the replica gets nothing more from its primary.
    proxy.hold_after(0);
    pa.ok("XADD s 2-1 f held");
    assert_eq!(
        pa.run("WAIT 1 1500"),
        V::Int(0),
        "WAIT counted a replica that never received the write"
    );
    assert_eq!(pb.run("XLEN s"), V::Int(1));
    proxy.release();
    wait_acked(&mut pa, 1);
    assert_eq!(pb.run("XLEN s"), V::Int(2));
    wait_same_offset(&mut pa, &mut pb);
    assert_same_streamd_data(&mut pa, &mut pb);
}

#[test]
fn an_old_primary_never_keeps_writes_its_promoted_replica_never_had() {
    let (a, b, proxy) = primary_and_proxied_replica(&["--repl-ping-replica-period", "3600"]);
    let (mut pa, mut pb) = (a.conn(), b.conn());
    stream_workload(&mut pa, "a-");
    wait_acked(&mut pa, 1);
    sentinel_hellos(&mut pb, 40);
    // The primary takes writes the replica never receives (its link stalls), then the
    // replica is promoted and the old primary follows it, as Sentinel would do.
    proxy.hold_after(0);
    for i in 0..5 {
        pa.ok(&format!("XADD a-s * only old-primary n {i}"));
    }
    pb.ok("REPLICAOF NO ONE");
    proxy.release();
    pb.ok("XADD a-s * on new-primary");
    follow(&mut pa, b.port);
    wait_acked(&mut pb, 1);
    wait_same_offset(&mut pa, &mut pb);
    assert_same_streamd_data(&mut pb, &mut pa);
    assert_only_new_primary_entries(&mut pa);
}

#[test]
fn waitaof_never_counts_a_replica_for_a_log_of_another_history() {
    let x = Node::streamd("first-primary", &["--repl-ping-replica-period", "3600"]);
    let y = Node::streamd("second-primary", &["--repl-ping-replica-period", "3600"]);
    let proxy = Proxy::start(y.port);
    let r = Node::streamd(
        "replica",
        &["--appendonly", "yes", "--appendfsync", "always"],
    );
    let (mut px, mut py, mut pr) = (x.conn(), y.conn(), r.conn());
    follow(&mut pr, x.port);
    // A long history under the first primary: the replica's log made it all durable.
    fill(&mut px, "big", 2000, 100);
    assert_eq!(
        px.run("WAITAOF 0 1 20000"),
        V::Array(vec![V::Int(0), V::Int(1)])
    );
    py.ok("XADD s 1-1 f v");
    assert!(py.repl_offset() < px.repl_offset());
    // The replica moves to another primary, whose offsets are far lower.
    follow(&mut pr, proxy.port);
    wait_acked(&mut py, 1);
    assert_eq!(
        py.run("WAITAOF 0 1 20000"),
        V::Array(vec![V::Int(0), V::Int(1)])
    );
    proxy.hold_after(0);
    py.ok("XADD s 2-1 f held");
    assert_eq!(
        py.run("WAITAOF 0 1 1500"),
        V::Array(vec![V::Int(0), V::Int(0)]),
        "WAITAOF counted the replica's log for a write it never received"
    );
    assert_eq!(py.run("WAIT 1 200"), V::Int(0));
    proxy.release();
    assert_eq!(
        py.run("WAITAOF 0 1 20000"),
        V::Array(vec![V::Int(0), V::Int(1)])
    );
}

/// A replica with a log that full-syncs from another primary and is killed at once
/// restarts with one whole dataset: the previous one (the log's new base was not
/// written yet) or the new one with what followed it, never the previous dataset with
/// the new history's records on top.
#[test]
fn a_replica_killed_after_a_full_sync_restarts_with_one_whole_dataset() {
    let x = Node::streamd("first-primary", &[]);
    let y = Node::streamd("second-primary", &[]);
    let mut r = Node::streamd(
        "replica",
        &["--appendonly", "yes", "--appendfsync", "always"],
    );
    let (mut px, mut py) = (x.conn(), y.conn());
    let mut pr = r.conn();
    follow(&mut pr, x.port);
    px.ok("XADD x-only 1-1 from first-primary");
    wait_acked(&mut px, 1);
    // The new dataset is large, so writing the replica's new log base takes a while.
    fill(&mut py, "y-before", 60_000, 200);
    follow(&mut pr, y.port);
    for i in 1..=20 {
        py.ok(&format!("XADD y-after {i}-1 n {i}"));
    }
    wait_acked(&mut py, 1);
    r.kill9();
    r.start();
    let mut pr = r.conn();
    let has = |c: &mut Conn, key: &str| c.run(&format!("EXISTS {key}")) == V::Int(1);
    let (old, before, after) = (
        has(&mut pr, "x-only"),
        has(&mut pr, "y-before"),
        pr.run("XLEN y-after").int(),
    );
    let whole_old = old && !before && after == 0;
    let whole_new = !old && before && after == 20;
    assert!(
        whole_old || whole_new,
        "after kill -9 the replica loaded x-only={old} y-before={before} y-after={after} \
         entries: a mix of two datasets"
    );
}

/// `repl-diskless-sync-delay` gathers replicas that arrive together into one sync. A
/// full sync waits for it only while a replica this primary has had is missing: when
/// every known replica is connected (a first replica, an old primary rejoining the one
/// that replaced it) nobody else is coming, and the sync starts at once.
#[test]
fn a_full_sync_waits_for_the_delay_only_while_a_known_replica_is_missing() {
    let p = Node::streamd("primary", &["--repl-diskless-sync-delay", "3600"]);
    let a = Node::streamd("replica-a", &[]);
    let b = Node::streamd("replica-b", &[]);
    let proxy = Proxy::start(p.port);
    let (mut pp, mut pa, mut pb) = (p.conn(), a.conn(), b.conn());
    // The first replica: none is known, so its sync does not wait an hour.
    follow(&mut pa, p.port);
    follow(&mut pb, proxy.port);
    pp.ok("XADD s * f v");
    wait_acked(&mut pp, 2);
    // B is gone; A asks for a full sync (a new history of its own): it waits for B.
    proxy.cut();
    wait_info(&mut pp, "replication", "connected_slaves", "1");
    wait_info(&mut pb, "replication", "master_link_status", "down");
    pa.ok("REPLICAOF NO ONE");
    let full = pp.stat("sync_full");
    pa.ok(&format!("REPLICAOF 127.0.0.1 {}", p.port));
    wait_stat(&mut pp, "sync_full", full + 1);
    for _ in 0..10 {
        let line = pp.info_field("replication", "slave0");
        assert!(line.contains("state=wait_bgsave"), "{line}");
        std::thread::sleep(Duration::from_millis(100));
    }
    // B is back (it continues from the backlog): every known replica is here.
    proxy.restore();
    wait_info(&mut pa, "replication", "master_link_status", "up");
    wait_info(&mut pb, "replication", "master_link_status", "up");
    pp.ok("XADD s * f w");
    wait_acked(&mut pp, 2);
    assert_same_streamd_data(&mut pp, &mut pa);
}

/// A `__sentinel__:hello` payload from Sentinel `runid` naming `port` as the primary
/// under configuration epoch `epoch`.
fn hello(runid: &str, port: u16, epoch: u64) -> String {
    format!("127.0.0.1,26379,{runid},{epoch},mymaster,127.0.0.1,{port},{epoch}")
}

/// `sentinel-rejoin yes`: a primary without replicas follows the primary two Sentinels
/// name in their hellos, and only then: not on one Sentinel's word, not when the
/// address named is its own, not while its own promotion is recent.
#[test]
fn sentinel_rejoin_follows_the_primary_two_sentinels_name_and_nothing_less() {
    let a = Node::streamd("old-primary", &["--sentinel-rejoin", "yes"]);
    let b = Node::streamd("new-primary", &[]);
    let (mut pa, mut pb) = (a.conn(), b.conn());
    pa.ok("XADD only-old * f v");
    pb.ok("XADD s 1-1 f new");
    let (s1, s2) = ("1".repeat(40), "2".repeat(40));
    // One Sentinel, or two that disagree, or two naming this very server: it stays.
    let stays = |c: &mut Conn, hellos: &[String]| {
        for h in hellos {
            c.ok(&format!("PUBLISH __sentinel__:hello {h}"));
        }
        for _ in 0..10 {
            assert_eq!(c.info_field("replication", "role"), "master", "{hellos:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    stays(&mut pa, &[hello(&s1, b.port, 5)]);
    stays(&mut pa, &[hello(&s1, b.port, 5), hello(&s2, b.port, 4)]);
    stays(&mut pa, &[hello(&s1, a.port, 6), hello(&s2, a.port, 6)]);
    // Epoch 6 named this server: an older epoch naming another does not move it.
    stays(&mut pa, &[hello(&s1, b.port, 6), hello(&s2, b.port, 6)]);
    // Two Sentinels agree on another primary under a newer epoch: it follows it, and the
    // writes it took alone are gone.
    pa.ok(&format!(
        "PUBLISH __sentinel__:hello {}",
        hello(&s1, b.port, 7)
    ));
    pa.ok(&format!(
        "PUBLISH __sentinel__:hello {}",
        hello(&s2, b.port, 7)
    ));
    wait_info(&mut pa, "replication", "master_link_status", "up");
    assert_eq!(
        pa.info_field("replication", "master_port"),
        b.port.to_string()
    );
    wait_acked(&mut pb, 1);
    assert_eq!(pa.run("EXISTS only-old"), V::Int(0));
    assert_eq!(pa.run("XLEN s"), V::Int(1));
    // Promoted a moment ago, it does not step down on hellos that name its old primary.
    pa.ok("REPLICAOF NO ONE");
    let c = Node::streamd("third", &[]);
    stays(&mut pa, &[hello(&s1, c.port, 8), hello(&s2, c.port, 8)]);
}

/// `sentinel-rejoin yes`: a server promoted moments ago refuses REPLICAOF back to the
/// primary it replaced (a Sentinel that has not heard of the promotion sends it) until
/// a hello names that primary under a newer configuration epoch; other addresses are
/// obeyed at once.
#[test]
fn sentinel_rejoin_refuses_a_stale_replicaof_to_the_primary_just_replaced() {
    let a = Node::streamd("old-primary", &[]);
    let b = Node::streamd("replica", &["--sentinel-rejoin", "yes"]);
    let (mut pa, mut pb) = (a.conn(), b.conn());
    pa.ok("XADD s 1-1 f v");
    pb.ok(&format!("REPLICAOF 127.0.0.1 {}", a.port));
    wait_info(&mut pb, "replication", "master_link_status", "up");
    let (s1, s2) = ("1".repeat(40), "2".repeat(40));
    for h in [hello(&s1, a.port, 3), hello(&s2, a.port, 3)] {
        pb.ok(&format!("PUBLISH __sentinel__:hello {h}"));
    }
    pb.ok("REPLICAOF NO ONE");
    pb.ok("XADD s 2-1 f mine");
    // The stale Sentinel's reconfiguration, as Sentinel sends it: refused, in or out of
    // a transaction, and the server stays a primary with its writes.
    let refused = pb.run(&format!("REPLICAOF 127.0.0.1 {}", a.port));
    assert!(
        matches!(&refused, V::Error(e) if e.starts_with("ERR REPLICAOF refused") && e.contains("sentinel-rejoin")),
        "{refused:?}"
    );
    pb.ok("MULTI");
    pb.run(&format!("SLAVEOF 127.0.0.1 {}", a.port));
    let exec = pb.run("EXEC");
    assert!(
        matches!(&exec, V::Array(items) if matches!(items.first(), Some(V::Error(_)))),
        "{exec:?}"
    );
    assert_eq!(pb.info_field("replication", "role"), "master");
    assert_eq!(pb.run("XLEN s"), V::Int(2));
    // A hello under the epoch known at the promotion changes nothing; a newer epoch
    // naming that primary (a failover back to it) is obeyed.
    pb.ok(&format!(
        "PUBLISH __sentinel__:hello {}",
        hello(&s1, a.port, 3)
    ));
    assert!(
        pb.run(&format!("REPLICAOF 127.0.0.1 {}", a.port))
            .is_error()
    );
    pb.ok(&format!(
        "PUBLISH __sentinel__:hello {}",
        hello(&s1, a.port, 4)
    ));
    pb.ok(&format!("REPLICAOF 127.0.0.1 {}", a.port));
    wait_info(&mut pb, "replication", "master_link_status", "up");
    assert_eq!(pb.run("XLEN s"), V::Int(1));
}
