//! Shared helpers for the integration tests: start the real `streamd` binary (or Debian's
//! `redis-server`, for differential tests) on a free port, talk to it in raw RESP bytes, or
//! connect redis-rs clients to it.
//!
//! Every test file uses a subset of these helpers, hence `dead_code` is allowed.
//!
//! - [`start_server`] / [`start_server_with`]: a [`Server`] child process with its own
//!   temporary data directory, killed on drop. Its stdout/stderr go to `streamd.log` in that
//!   directory; a failed start panics with the log.
//! - [`Raw`]: a blocking TCP connection that sends exact bytes and reads exactly one RESP2/RESP3
//!   reply at a time (the framing is parsed, never guessed from timing).
//! - [`client`] / [`client_resp3`]: redis-rs multiplexed async connections built with no
//!   response timeout (`reference/rust-crates.md`, trap 1).
//! - [`redis_server`]: the reference server for differential tests.
//! - [`require_program`]: an external program a test runs, or a panic with the install hint.

#![allow(dead_code)]

pub mod bus;
pub mod differential;

use std::fs::File;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to answer its first PING.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Default read timeout of a [`Raw`] connection.
const RAW_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How many ports to try when a start fails (another process may grab the free port between
/// our probe and the server's bind).
pub const START_ATTEMPTS: usize = 5;

/// Every port [`free_port`] and [`free_port_pair`] handed out in this test process.
static HANDED_OUT: std::sync::Mutex<std::collections::BTreeSet<u16>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// A port nobody listens on right now (the kernel chooses it: bind 127.0.0.1:0) and that no
/// other test of this process was given. Tests run in parallel threads, and some restart a
/// server on its old port after killing it: were that port handed to another test in
/// between, the two tests would talk to each other's servers.
pub fn free_port() -> u16 {
    free_port_where(&[])
}

/// Points the listening setting `name` (`port`, `tls-port`, `metrics-port`) at a fresh free
/// port through CONFIG SET and returns the port. A port picked free can be taken before the
/// server binds it (another test's client takes it as its ephemeral port), which CONFIG SET
/// answers with "Unable to listen on this port"; then another port is picked, up to five times.
pub fn listen_on_a_free_port(r: &mut Raw, name: &str) -> u16 {
    let mut last = Vec::new();
    for _ in 0..5 {
        let port = free_port();
        last = r.cmd_str(&["CONFIG", "SET", name, &port.to_string()]);
        if last == b"+OK\r\n" {
            return port;
        }
        assert!(
            String::from_utf8_lossy(&last).contains("Unable to listen on this port"),
            "CONFIG SET {name} {port}: {}",
            String::from_utf8_lossy(&last)
        );
    }
    panic!(
        "CONFIG SET {name}: no free port in five tries: {}",
        String::from_utf8_lossy(&last)
    );
}

/// A port `p` with `p` and `p + 10000` (its default cluster bus port) free, neither handed out
/// before in this process (see [`free_port`]).
pub fn free_port_pair() -> u16 {
    free_port_where(&[10000])
}

/// A fresh port `p` (see [`free_port`]) with `p + offset` free and fresh too for each offset.
fn free_port_where(offsets: &[u16]) -> u16 {
    let mut handed_out = HANDED_OUT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for _ in 0..1000 {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local_addr").port();
        let others: Option<Vec<u16>> = offsets.iter().map(|o| port.checked_add(*o)).collect();
        let Some(others) = others else { continue };
        let fresh = std::iter::once(port)
            .chain(others.iter().copied())
            .all(|p| !handed_out.contains(&p));
        if fresh
            && others
                .iter()
                .all(|&p| TcpListener::bind(("127.0.0.1", p)).is_ok())
        {
            handed_out.insert(port);
            handed_out.extend(others);
            return port;
        }
    }
    panic!("no fresh free port on 127.0.0.1 after 1000 tries");
}

/// A small deterministic generator (xorshift64*): a seed replays exactly, so a failing
/// random sequence can be rerun, without a dependency.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n` (which must not be 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// One of `pool` (which must not be empty).
    pub fn pick<'a>(&mut self, pool: &[&'a str]) -> &'a str {
        pool[self.below(pool.len())]
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// Field `field` of INFO section `section` on `raw`, trimmed; `None` when the reply has no
/// such field (or no reply came).
pub fn info_field(raw: &mut Raw, section: &str, field: &str) -> Option<String> {
    raw.try_send(&encode_cmd(&[b"INFO", section.as_bytes()]))
        .ok()?;
    let reply = raw.try_read_reply().ok()?;
    let prefix = format!("{field}:");
    String::from_utf8_lossy(&reply)
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.trim().to_string())
}

/// Whether the server behind `raw` is the process `pid` (INFO's `process_id`).
pub fn served_by(raw: &mut Raw, pid: u32) -> bool {
    info_field(raw, "server", "process_id") == Some(pid.to_string())
}

/// How long [`wait_blocked`] waits: a blocking command only has to reach the server.
const BLOCKED_TIMEOUT: Duration = Duration::from_secs(10);

/// INFO's `blocked_clients` on `raw`.
pub fn blocked_clients(raw: &mut Raw) -> usize {
    let field = info_field(raw, "clients", "blocked_clients");
    field
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("INFO clients gave blocked_clients {field:?}"))
}

/// Waits (bounded) until the server behind `raw` counts exactly `n` blocked clients (INFO
/// `blocked_clients`, in Redis as in streamd): a blocking command sent on another
/// connection has been taken, so what the test does next comes after it however busy the
/// machine is. A fixed sleep instead fails when the machine is slow.
pub fn wait_blocked(raw: &mut Raw, n: usize) {
    let deadline = Instant::now() + BLOCKED_TIMEOUT;
    loop {
        let blocked = blocked_clients(raw);
        if blocked == n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "never reached {n} blocked clients in {BLOCKED_TIMEOUT:?} (last {blocked})"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits (bounded by the start timeout) until `child` serves RESP on `port`: a TCP connect
/// and PING answered with `+PONG` by `child` itself (INFO's `process_id`), or `-NOAUTH`.
/// An error says the child exited during start-up (its port was probably taken: the
/// caller tries another) or never answered.
pub fn wait_serving(child: &mut Child, port: u16) -> Result<(), String> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("exited during start-up with {status}"));
        }
        if let Ok(mut raw) = Raw::try_connect(port) {
            raw.set_timeout(Duration::from_secs(2));
            // A reset here (a process exiting with the port) is "not ready yet": the
            // loop notices the child's exit and the caller tries another port.
            if raw.try_send(b"*1\r\n$4\r\nPING\r\n").is_ok()
                && let Ok(reply) = raw.try_read_reply()
            {
                // `-NOAUTH` (requirepass set) also means it is serving; `-LOADING` not yet.
                if reply.starts_with(b"-NOAUTH") {
                    return Ok(());
                }
                // Served by our child, not by another process that has the port: ours
                // would then exit saying so, and the caller tries another port.
                if reply == b"+PONG\r\n" && served_by(&mut raw, child.id()) {
                    return Ok(());
                }
            }
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("no PONG within {START_TIMEOUT:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A running child process serving RESP on `port`, with a temporary directory; killed on drop.
struct Process {
    port: u16,
    child: Child,
    dir: tempfile::TempDir,
    log: PathBuf,
}

impl Process {
    /// Spawns `program` with the arguments `make_args(port, dir)` on a free port and waits for
    /// a PING to be answered. Retries on a new port if the process exits during start-up (the
    /// port was taken); panics with the log if it never comes up.
    fn spawn(what: &str, program: &Path, make_args: &dyn Fn(u16, &Path) -> Vec<String>) -> Process {
        let mut last_log = String::new();
        for _ in 0..START_ATTEMPTS {
            let dir = tempfile::Builder::new()
                .prefix(&format!("{what}-test-"))
                .tempdir()
                .expect("create temp dir");
            let port = free_port();
            let log = dir.path().join(format!("{what}.log"));
            let out = File::create(&log).expect("create log file");
            let err = out.try_clone().expect("clone log file");
            let child = Command::new(program)
                .args(make_args(port, dir.path()))
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .stdout(Stdio::from(out))
                .stderr(Stdio::from(err))
                .spawn()
                .unwrap_or_else(|e| panic!("cannot spawn {}: {e}", program.display()));
            let mut p = Process {
                port,
                child,
                dir,
                log,
            };
            match p.wait_ready() {
                Ok(()) => return p,
                Err(e) => {
                    last_log = format!("{e}\n--- {what} log ---\n{}", p.log_text());
                    // Exited on its own (port collision?): try another port. Still running
                    // but not answering: give up now.
                    if p.child.try_wait().ok().flatten().is_none() {
                        break;
                    }
                }
            }
        }
        panic!("{what} did not start: {last_log}");
    }

    /// Waits (bounded) until our child answers PING (see [`wait_serving`]).
    fn wait_ready(&mut self) -> Result<(), String> {
        wait_serving(&mut self.child, self.port)
    }

    fn log_text(&self) -> String {
        std::fs::read(&self.log)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `streamd` child process on a free port; killed when dropped.
pub struct Server {
    /// The TCP port it serves on 127.0.0.1.
    pub port: u16,
    inner: Process,
}

impl Server {
    /// The server's data directory (`--dir`), deleted on drop.
    pub fn dir(&self) -> &Path {
        self.inner.dir.path()
    }

    /// What the server wrote to stdout/stderr so far.
    pub fn log(&self) -> String {
        self.inner.log_text()
    }

    /// `redis://127.0.0.1:port/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// A raw connection to this server.
    pub fn raw(&self) -> Raw {
        Raw::connect(self.port)
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.inner.child.try_wait(), Ok(None))
    }

    /// The child's OS process id.
    pub fn pid(&self) -> u32 {
        self.inner.child.id()
    }
}

/// Starts `streamd` with persistence off on a free port.
pub fn start_server() -> Server {
    start_server_with(&[])
}

/// Starts `streamd` with `--port <free> --dir <tempdir> --appendonly no --save ""` followed by
/// `args` (later directives override earlier ones).
pub fn start_server_with(args: &[&str]) -> Server {
    let extra: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let program = Path::new(env!("CARGO_BIN_EXE_streamd"));
    let inner = Process::spawn("streamd", program, &|port, dir| {
        let mut v = vec![
            "--port".to_string(),
            port.to_string(),
            "--dir".to_string(),
            dir.display().to_string(),
            "--appendonly".to_string(),
            "no".to_string(),
            "--save".to_string(),
            String::new(),
        ];
        v.extend(extra.iter().cloned());
        v
    });
    Server {
        port: inner.port,
        inner,
    }
}

/// Starts `streamd <conf>` (a configuration file comes first, as with redis-server)
/// followed by the directives of [`start_server_with`] and then `args`.
pub fn start_server_with_conf(conf: &Path, args: &[&str]) -> Server {
    let extra: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let program = Path::new(env!("CARGO_BIN_EXE_streamd"));
    let conf = conf.display().to_string();
    let inner = Process::spawn("streamd", program, &|port, dir| {
        let mut v = vec![conf.clone()];
        v.extend(
            [
                "--port",
                &port.to_string(),
                "--dir",
                &dir.display().to_string(),
                "--appendonly",
                "no",
                "--save",
                "",
            ]
            .iter()
            .map(|s| s.to_string()),
        );
        v.extend(extra.iter().cloned());
        v
    });
    Server {
        port: inner.port,
        inner,
    }
}

/// Debian's `redis-server` on a free port with persistence off; killed when dropped.
pub struct RedisServer {
    /// The TCP port it serves on 127.0.0.1.
    pub port: u16,
    inner: Process,
}

impl RedisServer {
    /// A raw connection to this server.
    pub fn raw(&self) -> Raw {
        Raw::connect(self.port)
    }

    /// What the server wrote to stdout/stderr so far.
    pub fn log(&self) -> String {
        self.inner.log_text()
    }
}

/// Where the reference server is expected (`apt-get install redis-server`).
pub const REDIS_SERVER_BIN: &str = "/usr/bin/redis-server";

/// The path of `program` (searched in `PATH`, then `/usr/sbin` and `/sbin`), or a panic
/// naming the Debian `package` to install: a test that needs an external program fails
/// without it, never skips. `scripts/test` installs every package of
/// `scripts/system-packages` before it runs the tests.
pub fn require_program(program: &str, package: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "{program} not found: this test needs it; install it with \
                 `sudo apt-get install {package}`, or run the tests with scripts/test, which does"
            )
        })
}

/// Starts the reference `redis-server` (foreground child, no persistence). Panics with the
/// install hint when it is not installed: a comparison with Redis never passes without Redis.
pub fn redis_server() -> RedisServer {
    redis_server_with(&[])
}

/// [`redis_server`] with `args` after the defaults (later directives win).
pub fn redis_server_with(args: &[&str]) -> RedisServer {
    let extra: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let program = Path::new(REDIS_SERVER_BIN);
    assert!(
        program.exists(),
        "{REDIS_SERVER_BIN} not found: the tests that compare with Redis need Debian's \
         redis-server; install it with `sudo apt-get install redis-server`, or run the tests \
         with scripts/test, which does"
    );
    let inner = Process::spawn("redis-server", program, &|port, dir| {
        [
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            "--dir",
            &dir.display().to_string(),
        ]
        .iter()
        .map(|s| s.to_string())
        .chain(extra.iter().cloned())
        .collect()
    });
    RedisServer {
        port: inner.port,
        inner,
    }
}

/// Encodes `args` as a RESP array of bulk strings.
pub fn encode_cmd(args: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + args.iter().map(|a| a.len() + 16).sum::<usize>());
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Renders bytes readably for failure messages: printable ASCII as is, `\r` `\n` `\t` `\\` and
/// `\"` escaped, anything else as `\xHH`.
pub fn escape(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() + 8);
    for &b in bytes {
        match b {
            b'\r' => s.push_str("\\r"),
            b'\n' => s.push_str("\\n"),
            b'\t' => s.push_str("\\t"),
            b'\\' => s.push_str("\\\\"),
            b'"' => s.push_str("\\\""),
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    s
}

/// Length of the first complete RESP2/RESP3 reply in `buf`: `Ok(Some(n))` when `buf[..n]` is
/// one whole reply, `Ok(None)` when more bytes are needed, `Err` on bytes that are not RESP.
///
/// Types: `+ - : _ , # (` (one line), `$ ! =` (length-prefixed; `$-1` is the RESP2 null),
/// `* ~ >` (n elements; `*-1` is the RESP2 null array), `%` (n key/value pairs), and `|`
/// (an attribute map of n pairs, followed by the reply it annotates).
pub fn reply_len(buf: &[u8]) -> Result<Option<usize>, String> {
    frame_end(buf, 0)
}

/// Finds the end of the line starting at `pos`: returns (line content end, next position).
fn line_at(buf: &[u8], pos: usize) -> Option<(usize, usize)> {
    let rel = buf.get(pos..)?.windows(2).position(|w| w == b"\r\n")?;
    Some((pos + rel, pos + rel + 2))
}

fn frame_end(buf: &[u8], pos: usize) -> Result<Option<usize>, String> {
    let Some(&kind) = buf.get(pos) else {
        return Ok(None);
    };
    let Some((line_end, next)) = line_at(buf, pos) else {
        return Ok(None);
    };
    let header = &buf[pos + 1..line_end];
    let number = || -> Result<i64, String> {
        std::str::from_utf8(header)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .ok_or_else(|| format!("bad length in RESP header {:?}", escape(&buf[pos..next])))
    };
    match kind {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => Ok(Some(next)),
        b'$' | b'!' | b'=' => {
            let n = number()?;
            if n < 0 {
                return if kind == b'$' && n == -1 {
                    Ok(Some(next))
                } else {
                    Err(format!("bad bulk length {n}"))
                };
            }
            let end = next + n as usize + 2;
            if buf.len() < end {
                return Ok(None);
            }
            if &buf[end - 2..end] != b"\r\n" {
                return Err(format!(
                    "bulk of length {n} not followed by CRLF: {:?}",
                    escape(&buf[pos..end])
                ));
            }
            Ok(Some(end))
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = number()?;
            if n < 0 {
                return if kind == b'*' && n == -1 {
                    Ok(Some(next))
                } else {
                    Err(format!("bad aggregate length {n}"))
                };
            }
            let mut items = n as usize;
            if kind == b'%' || kind == b'|' {
                items *= 2;
            }
            if kind == b'|' {
                // The attribute annotates the reply that follows it.
                items += 1;
            }
            let mut p = next;
            for _ in 0..items {
                match frame_end(buf, p)? {
                    Some(e) => p = e,
                    None => return Ok(None),
                }
            }
            Ok(Some(p))
        }
        _ => Err(format!(
            "not a RESP type byte {:?} at {:?}",
            kind as char,
            escape(&buf[pos..buf.len().min(pos + 64)])
        )),
    }
}

/// A raw blocking TCP connection speaking exact bytes, with a read timeout.
pub struct Raw {
    /// The socket (public for tests that need to shut it down half-way, etc.).
    pub stream: TcpStream,
    /// Bytes read but not yet returned as a reply.
    pending: Vec<u8>,
}

impl Raw {
    /// Connects to 127.0.0.1:`port`; panics on failure.
    pub fn connect(port: u16) -> Raw {
        Raw::try_connect(port).unwrap_or_else(|e| panic!("connect to 127.0.0.1:{port}: {e}"))
    }

    /// Connects to 127.0.0.1:`port`.
    pub fn try_connect(port: u16) -> std::io::Result<Raw> {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_read_timeout(Some(RAW_READ_TIMEOUT))?;
        stream.set_nodelay(true)?;
        Ok(Raw {
            stream,
            pending: Vec::new(),
        })
    }

    /// Changes the read timeout.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.stream
            .set_read_timeout(Some(timeout))
            .expect("set_read_timeout");
    }

    /// Writes `bytes` as they are (one write call).
    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write to server");
    }

    /// [`Raw::send`], reporting a failed write instead of panicking (a server that is
    /// still starting, or exiting because its port was taken, resets the connection).
    pub fn try_send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// Sends one command as a RESP array and returns its complete reply.
    pub fn cmd(&mut self, args: &[&[u8]]) -> Vec<u8> {
        self.send(&encode_cmd(args));
        self.read_reply()
    }

    /// Like [`Raw::cmd`] with string arguments.
    pub fn cmd_str(&mut self, args: &[&str]) -> Vec<u8> {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.cmd(&args)
    }

    /// Reads exactly one complete reply; panics on timeout, EOF or non-RESP bytes.
    pub fn read_reply(&mut self) -> Vec<u8> {
        self.try_read_reply()
            .unwrap_or_else(|e| panic!("reading a reply: {e}"))
    }

    /// Reads exactly one complete reply.
    pub fn try_read_reply(&mut self) -> Result<Vec<u8>, String> {
        loop {
            if let Some(n) = reply_len(&self.pending)? {
                let rest = self.pending.split_off(n);
                return Ok(std::mem::replace(&mut self.pending, rest));
            }
            if self.fill()? == 0 {
                return Err(format!(
                    "connection closed with an incomplete reply {:?}",
                    escape(&self.pending)
                ));
            }
        }
    }

    /// Reads `n` replies and returns them one by one.
    pub fn read_replies(&mut self, n: usize) -> Vec<Vec<u8>> {
        (0..n).map(|_| self.read_reply()).collect()
    }

    /// Reads until `n` bytes are available and returns exactly those bytes.
    pub fn read_exact_bytes(&mut self, n: usize) -> Vec<u8> {
        while self.pending.len() < n {
            match self.fill() {
                Ok(0) => panic!(
                    "connection closed after {:?}, wanted {n} bytes",
                    escape(&self.pending)
                ),
                Ok(_) => {}
                Err(e) => panic!("reading {n} bytes: {e}"),
            }
        }
        let rest = self.pending.split_off(n);
        std::mem::replace(&mut self.pending, rest)
    }

    /// Everything the server sends until it closes the connection (panics on timeout).
    pub fn read_to_close(&mut self) -> Vec<u8> {
        loop {
            match self.fill() {
                Ok(0) => return std::mem::take(&mut self.pending),
                Ok(_) => {}
                Err(e) => panic!(
                    "waiting for the server to close (got {:?} so far): {e}",
                    escape(&self.pending)
                ),
            }
        }
    }

    /// Whether the server has closed the connection, after reading and discarding anything
    /// still in flight (waits up to the read timeout).
    pub fn is_closed(&mut self) -> bool {
        self.pending.clear();
        loop {
            match self.fill() {
                Ok(0) => return true,
                Ok(_) => self.pending.clear(),
                Err(_) => return false,
            }
        }
    }

    /// Bytes already read but not yet consumed as a reply.
    pub fn pending(&self) -> &[u8] {
        &self.pending
    }

    /// Switches the connection to RESP3 with `HELLO 3`; returns the HELLO reply (a map).
    pub fn hello3(&mut self) -> Vec<u8> {
        let reply = self.cmd(&[b"HELLO", b"3"]);
        assert!(
            reply.starts_with(b"%"),
            "HELLO 3 did not answer a map: {:?}",
            escape(&reply)
        );
        reply
    }

    /// Closes the writing half (the server sees EOF).
    pub fn shutdown_write(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }

    /// One read call into `pending`; returns the number of bytes read (0 = EOF).
    fn fill(&mut self) -> Result<usize, String> {
        let mut chunk = [0u8; 64 * 1024];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(n) => {
                    self.pending.extend_from_slice(&chunk[..n]);
                    return Ok(n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // A reset after the server closed counts as EOF.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(0),
                Err(e) => {
                    return Err(format!(
                        "read error ({e}) with {:?} pending",
                        escape(&self.pending)
                    ));
                }
            }
        }
    }
}

/// A redis-rs multiplexed async connection (RESP2) with no response timeout.
pub async fn client(port: u16) -> redis::aio::MultiplexedConnection {
    connect_url(&format!("redis://127.0.0.1:{port}/")).await
}

/// A redis-rs multiplexed async connection speaking RESP3 (`HELLO 3` on connect), with no
/// response timeout.
pub async fn client_resp3(port: u16) -> redis::aio::MultiplexedConnection {
    connect_url(&format!("redis://127.0.0.1:{port}/?protocol=resp3")).await
}

/// A redis-rs multiplexed async connection to `url` with no response timeout (for URLs with a
/// password or a database number).
pub async fn connect_url(url: &str) -> redis::aio::MultiplexedConnection {
    let client = redis::Client::open(url).unwrap_or_else(|e| panic!("bad url {url}: {e}"));
    let cfg = redis::AsyncConnectionConfig::new().set_response_timeout(None);
    client
        .get_multiplexed_async_connection_with_config(&cfg)
        .await
        .unwrap_or_else(|e| panic!("connect to {url}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::reply_len;

    #[test]
    fn reply_framing_covers_resp2_and_resp3_types() {
        let whole: &[&[u8]] = &[
            b"+OK\r\n",
            b"-ERR x\r\n",
            b":5\r\n",
            b"$-1\r\n",
            b"*-1\r\n",
            b"$3\r\na\r\n\r\n",
            b"*2\r\n$1\r\na\r\n*1\r\n:1\r\n",
            b"%1\r\n+k\r\n~2\r\n_\r\n,1.5\r\n",
            b">2\r\n+message\r\n#t\r\n",
            b"!3\r\nerr\r\n",
            b"=7\r\ntxt:abc\r\n",
            b"(123\r\n",
            b"|1\r\n+a\r\n+b\r\n:1\r\n",
            b"*0\r\n",
        ];
        for w in whole {
            assert_eq!(reply_len(w).unwrap(), Some(w.len()), "{w:?}");
            for cut in 0..w.len() {
                assert_eq!(reply_len(&w[..cut]).unwrap(), None, "{w:?} cut at {cut}");
            }
            let mut two = w.to_vec();
            two.extend_from_slice(b"+PONG\r\n");
            assert_eq!(reply_len(&two).unwrap(), Some(w.len()));
        }
        assert!(reply_len(b"?x\r\n").is_err());
    }
}

/// Sends a command without waiting for its reply.
pub fn send(raw: &mut Raw, args: &[&str]) {
    let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    raw.send(&encode_cmd(&bytes));
}

/// Sends a whitespace-separated command and returns the reply as text.
pub fn c(r: &mut Raw, line: &str) -> String {
    let args: Vec<&str> = line.split_whitespace().collect();
    String::from_utf8_lossy(&r.cmd_str(&args)).into_owned()
}

/// Sends each command and asserts its reply is exactly the expected bytes.
pub fn check(raw: &mut Raw, cases: &[(&[&str], Vec<u8>)]) {
    for (args, want) in cases {
        let got = raw.cmd_str(args);
        assert_eq!(
            escape(&got),
            escape(want),
            "reply to {args:?} differs (left: got, right: expected)"
        );
    }
}

/// Exact RESP2 reply bytes, for tables of expected replies.
pub mod reply {
    /// Null: `$-1` in RESP2, `_` in RESP3.
    pub fn null(resp3: bool) -> Vec<u8> {
        if resp3 {
            b"_\r\n".to_vec()
        } else {
            b"$-1\r\n".to_vec()
        }
    }

    /// `-<text>\r\n`
    pub fn err(text: &str) -> Vec<u8> {
        format!("-{text}\r\n").into_bytes()
    }

    /// `:<n>\r\n`
    pub fn int(n: i64) -> Vec<u8> {
        format!(":{n}\r\n").into_bytes()
    }

    /// `$<len>\r\n<s>\r\n`
    pub fn bulk(s: &str) -> Vec<u8> {
        format!("${}\r\n{s}\r\n", s.len()).into_bytes()
    }

    /// An array of already-encoded items.
    pub fn arr(items: &[Vec<u8>]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", items.len()).into_bytes();
        for i in items {
            out.extend_from_slice(i);
        }
        out
    }

    /// A stream entry: `[id, [f1, v1, ...]]`.
    pub fn entry(id: &str, fields: &[&str]) -> Vec<u8> {
        let fields: Vec<Vec<u8>> = fields.iter().map(|f| bulk(f)).collect();
        arr(&[bulk(id), arr(&fields)])
    }
}

/// Normalising stream replies (XINFO maps, XPENDING entries) of two servers so that what
/// must differ (idle times, fields Redis 7.0 lacks) does not, for tests that compare a
/// stream moved between streamd and Redis.
pub mod stream_view {
    use redis::Value;

    /// A flat `[k1, v1, k2, v2 ...]` reply as pairs.
    pub fn pairs(v: Value) -> Vec<(String, Value)> {
        let Value::Array(items) = v else {
            panic!("expected a flat map, got {v:?}");
        };
        let mut out = Vec::new();
        let mut it = items.into_iter();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            let k = match k {
                Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
                Value::SimpleString(s) => s,
                other => panic!("field name {other:?}"),
            };
            out.push((k, v));
        }
        out
    }

    /// Fields Redis 7.0 lacks, and fields that must differ between two servers (the radix
    /// tree's node count is each server's own shape; consumers' active times are newer).
    pub const DROPPED: &[&str] = &[
        "radix-tree-nodes",
        "idmp-duration",
        "idmp-maxsize",
        "pids-tracked",
        "iids-tracked",
        "iids-added",
        "iids-duplicates",
        "nacked-count",
        "active-time",
        "inactive",
    ];

    /// A flat map with the dropped fields removed, `idle` zeroed, and `nested` fields
    /// normalised as arrays of flat maps.
    pub fn norm_map(v: Value, nested: &[&str]) -> Vec<(String, Value)> {
        pairs(v)
            .into_iter()
            .filter(|(k, _)| !DROPPED.contains(&k.as_str()))
            .map(|(k, v)| {
                let v = if k == "idle" {
                    Value::Int(0)
                } else if nested.contains(&k.as_str()) {
                    match v {
                        Value::Array(items) => Value::Array(
                            items
                                .into_iter()
                                .map(|g| flat(norm_map(g, &["consumers"])))
                                .collect(),
                        ),
                        other => other,
                    }
                } else {
                    v
                };
                (k, v)
            })
            .collect()
    }

    /// Pairs back as a flat `[k1, v1, ...]` reply.
    pub fn flat(p: Vec<(String, Value)>) -> Value {
        Value::Array(
            p.into_iter()
                .flat_map(|(k, v)| [Value::BulkString(k.into_bytes()), v])
                .collect(),
        )
    }

    /// XPENDING extended entries with the idle time zeroed.
    pub fn norm_pending(v: Value) -> Value {
        match v {
            Value::Array(items) => Value::Array(
                items
                    .into_iter()
                    .map(|e| match e {
                        Value::Array(mut f) if f.len() == 4 => {
                            f[2] = Value::Int(0);
                            Value::Array(f)
                        }
                        other => other,
                    })
                    .collect(),
            ),
            other => other,
        }
    }
}
