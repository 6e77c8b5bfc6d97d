//! The differential loop of `tests/hashes.rs` and `tests/sets.rs`: a small RESP2/RESP3 reply
//! parser, the normalisations a differential comparison needs where Redis leaves the
//! order or the choice unspecified (unordered replies sorted, random ones compared by
//! shape), a runner that sends the same commands to streamd and to redis-server, and a
//! streamd node restarted on the same data directory.

#![allow(dead_code)]

use super::{Raw, START_ATTEMPTS, escape, free_port, wait_serving};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A parsed reply.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum V {
    /// `+ - : , # ( _` lines: the type byte and the text.
    Line(u8, Vec<u8>),
    /// `$` / `=` bulk (None for `$-1`).
    Bulk(Option<Vec<u8>>),
    /// `* ~ % >` aggregates (a map's pairs flattened; None for `*-1`).
    Agg(u8, Option<Vec<V>>),
}

/// Parses one reply at `pos`: the value and the position after it.
pub fn parse(buf: &[u8], pos: usize) -> (V, usize) {
    let end = pos
        + buf[pos..]
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("CRLF");
    let (t, head, next) = (buf[pos], &buf[pos + 1..end], end + 2);
    let num = || -> i64 { std::str::from_utf8(head).unwrap().parse().unwrap() };
    match t {
        b'$' | b'=' => {
            let n = num();
            if n < 0 {
                return (V::Bulk(None), next);
            }
            let n = n as usize;
            (V::Bulk(Some(buf[next..next + n].to_vec())), next + n + 2)
        }
        b'*' | b'~' | b'%' | b'>' => {
            let n = num();
            if n < 0 {
                return (V::Agg(t, None), next);
            }
            let n = if t == b'%' { 2 * n } else { n } as usize;
            let mut items = Vec::with_capacity(n);
            let mut p = next;
            for _ in 0..n {
                let (v, q) = parse(buf, p);
                items.push(v);
                p = q;
            }
            (V::Agg(t, Some(items)), p)
        }
        _ => (V::Line(t, head.to_vec()), next),
    }
}

/// How a reply is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Byte for byte.
    Exact,
    /// Aggregate elements as a multiset (SMEMBERS, HKEYS of a large hash).
    Sorted,
    /// Map pairs as a multiset (HGETALL, HSCAN's flat pairs).
    Pairs,
    /// Types and sizes only (random choices).
    Shape,
    /// Redis 7.2+ answers this differently from the Debian 7.0 reference server (an
    /// `OBJECT ENCODING` of a listpack set or list): streamd's reply must be exactly
    /// these bytes, and Redis 7.0's is not compared. Set by [`newer`].
    Newer(&'static str),
}

/// Marks the cases that Redis 7.2+ answers differently from Debian's 7.0: each entry of
/// `answers` is a command and the bytes 7.2+ replies, in the order they occur; it marks
/// the next case with that command (after the one the previous entry marked) as
/// [`Mode::Newer`]. Panics when an entry finds no case, so a renamed command cannot
/// silently drop its check.
pub fn newer(cases: &mut [(Mode, Vec<&str>)], answers: &[(&[&str], &'static str)]) {
    let mut from = 0;
    for (argv, reply) in answers {
        let at = cases[from..]
            .iter()
            .position(|(_, c)| c.as_slice() == *argv)
            .unwrap_or_else(|| panic!("no case {argv:?} after case {from}"));
        cases[from + at].0 = Mode::Newer(reply);
        from += at + 1;
    }
}

fn shape(v: &V) -> V {
    match v {
        V::Agg(t, Some(items)) => V::Agg(*t, Some(items.iter().map(shape).collect())),
        V::Bulk(Some(_)) => V::Bulk(Some(Vec::new())),
        V::Line(t, text) if *t == b'-' => V::Line(*t, text.clone()),
        V::Line(t, _) => V::Line(*t, Vec::new()),
        other => other.clone(),
    }
}

/// The reply normalised for `mode`.
pub fn normalise(raw: &[u8], mode: Mode) -> V {
    let v = parse(raw, 0).0;
    match (mode, v) {
        (Mode::Exact, v) => v,
        (Mode::Sorted, V::Agg(t, Some(mut items))) => {
            items.sort();
            V::Agg(t, Some(items))
        }
        (Mode::Pairs, V::Agg(t, Some(items))) => {
            let mut pairs: Vec<V> = items
                .chunks(2)
                .map(|p| V::Agg(b'*', Some(p.to_vec())))
                .collect();
            pairs.sort();
            V::Agg(t, Some(pairs))
        }
        (Mode::Shape, v) => shape(&v),
        (_, v) => v,
    }
}

/// Sends every case to both servers on connections of protocol `proto` and returns the
/// divergences (command, streamd's bytes, Redis's bytes).
pub fn differential(sport: u16, rport: u16, proto: u8, cases: &[(Mode, Vec<&str>)]) -> Vec<String> {
    let (mut s, mut r) = (Raw::connect(sport), Raw::connect(rport));
    if proto == 3 {
        s.hello3();
        r.hello3();
    }
    let mut bad = Vec::new();
    for (mode, args) in cases {
        let (a, b) = (s.cmd_str(args), r.cmd_str(args));
        let (same, b) = match *mode {
            Mode::Exact => (a == b, b),
            Mode::Newer(reply) => (a == reply.as_bytes(), reply.as_bytes().to_vec()),
            mode => (normalise(&a, mode) == normalise(&b, mode), b),
        };
        if !same {
            bad.push(format!(
                "RESP{proto} {:?}\n  streamd {}\n  {} {}",
                args,
                escape(&a),
                if matches!(mode, Mode::Newer(_)) {
                    "7.2+  "
                } else {
                    "redis "
                },
                escape(&b)
            ));
        }
    }
    bad
}

/// Exact-byte cases.
pub fn exact<'a>(cases: &[&[&'a str]]) -> Vec<(Mode, Vec<&'a str>)> {
    cases.iter().map(|c| (Mode::Exact, c.to_vec())).collect()
}

/// A streamd process on a given data directory (kept across restarts), killed on drop.
pub struct Node {
    /// Its port.
    pub port: u16,
    child: Child,
}

impl Node {
    /// Starts streamd on `dir` with `args` and waits for PONG (loading done).
    pub fn start(dir: &Path, args: &[&str]) -> Node {
        Node::start_with(dir, &|_| args.iter().map(|a| a.to_string()).collect())
    }

    /// Starts streamd on `dir` with the arguments `make_args(port)` and waits until it
    /// serves. Another process may take the free port (or one `make_args` chose) between
    /// the probe and the bind: the server then exits and a new port is tried.
    pub fn start_with(dir: &Path, make_args: &dyn Fn(u16) -> Vec<String>) -> Node {
        let mut why = String::new();
        for _ in 0..START_ATTEMPTS {
            let port = free_port();
            let log = tempfile::NamedTempFile::new().expect("log file");
            let out = log.reopen().expect("reopen log file");
            let err = out.try_clone().expect("clone log file");
            let mut child = Command::new(env!("CARGO_BIN_EXE_streamd"))
                .args([
                    "--port",
                    &port.to_string(),
                    "--dir",
                    &dir.display().to_string(),
                ])
                .args(make_args(port))
                .stdout(Stdio::from(out))
                .stderr(Stdio::from(err))
                .spawn()
                .expect("spawn streamd");
            match wait_serving(&mut child, port) {
                Ok(()) => return Node { port, child },
                Err(e) => {
                    let exited = child.try_wait().ok().flatten().is_some();
                    let _ = child.kill();
                    let _ = child.wait();
                    let text = std::fs::read_to_string(log.path()).unwrap_or_default();
                    why = format!("{e}\n--- streamd log ---\n{text}");
                    if !exited {
                        break;
                    }
                }
            }
        }
        panic!("streamd did not start on {}: {why}", dir.display());
    }

    /// A raw connection.
    pub fn raw(&self) -> Raw {
        Raw::connect(self.port)
    }

    /// Stops it with SIGTERM-like SHUTDOWN and waits for the exit.
    pub fn stop(mut self) {
        let mut r = self.raw();
        r.send(&super::encode_cmd(&[b"SHUTDOWN"]));
        let _ = self.child.wait();
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every byte of every file under `dir`, concatenated (to look for logged effects).
pub fn dir_bytes(dir: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(b) = std::fs::read(&p) {
                out.extend(b);
            }
        }
    }
    out
}

/// How many times `needle` occurs in `hay`.
pub fn count(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

/// The keyspace events (`event key` lines) a subscriber to `__keyevent@0__:*` sees on a
/// flushed server with `notify-keyspace-events` set to `flags` while `cmds` run. A last
/// PUBLISH on `done` marks the end: events come in order, so no wait for silence.
pub fn keyevents(port: u16, flags: &str, cmds: &[&[&str]]) -> Vec<String> {
    let mut c = Raw::connect(port);
    c.cmd_str(&["FLUSHALL"]);
    c.cmd_str(&["CONFIG", "SET", "notify-keyspace-events", flags]);
    let mut sub = Raw::connect(port);
    sub.cmd_str(&["PSUBSCRIBE", "__keyevent@0__:*", "done"]);
    for cmd in cmds {
        c.cmd_str(cmd);
    }
    c.cmd_str(&["PUBLISH", "done", "x"]);
    let mut got = Vec::new();
    loop {
        let reply = sub.read_reply();
        let V::Agg(_, Some(items)) = parse(&reply, 0).0 else {
            continue;
        };
        let text = |v: &V| match v {
            V::Bulk(Some(b)) => String::from_utf8_lossy(b).into_owned(),
            _ => String::new(),
        };
        if items.len() == 4 {
            let channel = text(&items[2]);
            if channel == "done" {
                return got;
            }
            got.push(format!("{channel} {}", text(&items[3])));
        }
    }
}
