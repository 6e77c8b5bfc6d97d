//! Replication workloads (`repl/*`): the same primary-and-replicas topology built from
//! streamd (side A) and from Debian's `redis-server` (side B), each round on servers this
//! tool starts itself, so the A/B ratios are streamd/Redis.
//!
//! ```text
//!   round:  start primary + K replicas (127.0.0.1, free ports, --save '' --appendonly no)
//!           CONFIG SET repl-diskless-sync-delay 0 on the primary (errors ignored)
//!           REPLICAOF 127.0.0.1 <primary> on each replica
//!           wait until the primary's INFO replication lists each as state=online
//!           XADD repl-bench:ready on the primary; wait until every replica shows it
//!           measure │ kill every server, remove their directories
//!
//!   xadd-*:    16 clients ──XADD s * ×16 per write──► primary ══stream══► replica 1..K
//!              probe ──XADD probe * n <i> every 10 ms──►  │                   │
//!                     ack at t_ack ◄──────────────────────┘                   │
//!              watcher K ──XREAD BLOCK 100 STREAMS probe <last>──────────────┘
//!                     entry i seen at t_seen;   lag = t_seen - t_ack (0 if earlier)
//! ```
//!
//! Variants (K = replicas):
//! - `xadd-c16-p16-rK` (K = 0, 1, 2): a bounded count of XADDs on the primary from 16
//!   connections 16 commands per write: ops/s, the primary's CPU per XADD; latency is the
//!   replication lag of the probes (none with no replica).
//! - `wait1-rK` (K = 1, 2): one client, `XADD` then `WAIT 1 1000`, repeated: latency is
//!   the WAIT round trip; ops are XADD+WAIT pairs. A WAIT that returns 0 fails the round.
//! - `fullsync-rK` (K = 1, 2): `--sync-entries` bids (default 5M) loaded on the primary
//!   before any replica is attached, then REPLICAOF to every replica at once: latency is
//!   the time from REPLICAOF to each replica reporting `master_link_status:up` with an
//!   XLEN equal to the primary's; entries/s is entries × K over the time until the last one;
//!   memory is the replicas' `used_memory` growth per entry copied.
//!
//! Why probes and not offsets: `master_repl_offset - slave_repl_offset` is a lag in bytes
//! of one server's replication stream, read from two INFO replies taken at different
//! moments; it only compares two servers if both encode their streams byte for byte alike,
//! and it needs a rate to become a time. A probe entry gives the time itself, the same way
//! for both servers: from the moment the writer has the primary's acknowledgement to the
//! moment a client reading the replica sees the entry, which is what a reader of replicas
//! experiences. The watcher's `XREAD BLOCK` is woken by the replicated XADD (as Redis wakes
//! blocked clients for its master's commands); a replica that does not wake it still
//! answers within the 100 ms block, so the lag is then coarse, never lost. Both timestamps
//! are taken by this single-threaded tool, whose other clients can delay either by a
//! scheduling slice, equally for both servers.
//!
//! Every wait is bounded: server start (10 s), `state=online` and the ready marker
//! (`--timeout` each), probes after the load (`--timeout`), full sync (10 × `--timeout`). A server that does not know
//! REPLICAOF or WAIT fails the round at once with the server's own error.

use std::cell::{Cell, RefCell};
use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::{Ctx, Ids, load, push_bid};
use crate::client::{Conn, Value, check, info_field, read_entries};
use crate::driver::{Stop, closed_loop};
use crate::measure::{Phase, Sample, used_memory};

/// XADD load connections.
const CLIENTS: usize = 16;
/// XADD commands per write.
const PIPELINE: usize = 16;
/// XADDs of a load at scale 1.
const LOAD_FULL: u64 = 1_000_000;
/// XADD + WAIT pairs at scale 1.
const WAITS_FULL: u64 = 10_000;
/// `WAIT 1 <this>`: a replica on this machine acknowledges in well under a millisecond.
const WAIT_TIMEOUT_MS: &str = "1000";
/// Time between two probe entries.
const PROBE_EVERY: Duration = Duration::from_millis(10);
/// The watcher's `XREAD BLOCK` (milliseconds): the lag's resolution if a replica never
/// wakes blocked readers.
const WATCH_BLOCK_MS: &str = "100";
/// The stream [`Topology::attach`] writes to see the replication stream flow.
const READY_KEY: &str = "repl-bench:ready";
/// Time between two polls while waiting for a replica.
const POLL_EVERY: Duration = Duration::from_millis(10);
/// How long a server may take to answer its first PING.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Ports tried when a server exits during start-up (another process took the port).
const START_ATTEMPTS: usize = 5;

/// What a `repl/*` variant runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repl {
    /// Pipelined XADD load on the primary; latency = replication lag of probes.
    Xadd {
        /// Replicas attached to the primary.
        replicas: usize,
    },
    /// One client: XADD, then `WAIT 1 1000`.
    Wait {
        /// Replicas attached to the primary.
        replicas: usize,
    },
    /// Time for replicas to copy a loaded primary.
    FullSync {
        /// Replicas attached at once.
        replicas: usize,
    },
}

/// Every `repl/*` variant: (name after `repl/`, parameters, what the latency times).
pub fn variants() -> Vec<(String, Repl, &'static str)> {
    let mut out = Vec::new();
    for replicas in 0..=2 {
        out.push((
            format!("xadd-c{CLIENTS}-p{PIPELINE}-r{replicas}"),
            Repl::Xadd { replicas },
            "probe-ack-to-replica",
        ));
    }
    for replicas in 1..=2 {
        out.push((
            format!("wait1-r{replicas}"),
            Repl::Wait { replicas },
            "wait",
        ));
    }
    for replicas in 1..=2 {
        out.push((
            format!("fullsync-r{replicas}"),
            Repl::FullSync { replicas },
            "replicaof-to-synced",
        ));
    }
    out
}

/// A server program the workloads start: streamd, or `redis-server`.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    /// What the messages call it (the file name: `streamd`, `redis-server`).
    pub name: String,
    /// The executable.
    pub path: PathBuf,
}

impl Program {
    /// The program at `path`, if it is a file.
    pub fn at(path: PathBuf) -> Result<Program, String> {
        if !path.is_file() {
            return Err(format!("{} is not a file", path.display()));
        }
        let name = path
            .file_name()
            .map_or("server".into(), |n| n.to_string_lossy().into_owned());
        Ok(Program { name, path })
    }

    /// The streamd binary: `explicit`, else `streamd` next to this executable (so
    /// `target/release/streamd-bench` runs `target/release/streamd`, as scripts/bench.sh).
    pub fn streamd(explicit: Option<PathBuf>) -> Result<Program, String> {
        let path = match explicit {
            Some(p) => p,
            None => std::env::current_exe()
                .map_err(|e| format!("cannot locate this executable: {e}"))?
                .with_file_name("streamd"),
        };
        Program::at(path.clone()).map_err(|_| {
            format!(
                "streamd not found at {}: build it with `cargo build --release --bin streamd` \
                 or pass --streamd PATH",
                path.display()
            )
        })
    }

    /// `redis-server` from `PATH` (then `/usr/bin`, `/usr/sbin`).
    pub fn redis() -> Result<Program, String> {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/sbin")])
            .map(|dir| dir.join("redis-server"))
            .find(|p| p.is_file())
            .ok_or_else(|| {
                "redis-server not found in PATH: install it with \
                 `sudo apt-get install redis-server`"
                    .to_string()
            })
            .and_then(Program::at)
    }
}

/// Runs one round of `r` on servers started from `ctx.spawn`.
pub async fn run(ctx: &Ctx, r: Repl) -> io::Result<Sample> {
    let program = ctx
        .spawn
        .as_ref()
        .ok_or_else(|| io::Error::other("repl workloads need a server program to start"))?;
    match r {
        Repl::Xadd { replicas } => xadd(ctx, program, replicas).await,
        Repl::Wait { replicas } => wait(ctx, program, replicas).await,
        Repl::FullSync { replicas } => full_sync(ctx, program, replicas).await,
    }
}

/// One server process started by this tool on a free port of 127.0.0.1, with its own
/// directory; killed (and the directory removed) when dropped. `cluster/*` starts its
/// nodes with [`Server::launch`] too.
pub(super) struct Server {
    /// `streamd primary`, `redis-server replica 2`: for messages.
    pub(super) what: String,
    /// The client port.
    pub(super) port: u16,
    child: Child,
    dir: PathBuf,
    log: PathBuf,
}

impl Server {
    /// Starts `program` with persistence off and waits for its PING (bounded).
    async fn start(program: &Program, role: &str) -> io::Result<Server> {
        Server::launch(program, role, free_port, |port, dir| {
            let mut args: Vec<OsString> = ["--port", &port.to_string(), "--bind", "127.0.0.1"]
                .map(OsString::from)
                .to_vec();
            args.extend([OsString::from("--dir"), dir.as_os_str().to_owned()]);
            args.extend(["--save", "", "--appendonly", "no"].map(OsString::from));
            Ok(args)
        })
        .await
    }

    /// Starts `program` on a port `pick_port` chooses, in a new directory, with the
    /// arguments `args(port, dir)` returns (which may write files into `dir`), and waits
    /// for its PING (bounded by [`START_TIMEOUT`]). A server that exits during start-up
    /// (its port taken meanwhile) is retried on another port, [`START_ATTEMPTS`] times.
    pub(super) async fn launch(
        program: &Program,
        role: &str,
        pick_port: fn() -> io::Result<u16>,
        args: impl Fn(u16, &Path) -> io::Result<Vec<OsString>>,
    ) -> io::Result<Server> {
        let what = format!("{} {role}", program.name);
        let mut last = String::new();
        for _ in 0..START_ATTEMPTS {
            let port = pick_port()?;
            let dir = std::env::temp_dir().join(format!(
                "streamd-bench-{}-{port}-{}",
                std::process::id(),
                role.replace(' ', "")
            ));
            std::fs::create_dir_all(&dir)?;
            let log = dir.join("server.log");
            let child = spawn(program, &dir, File::create(&log)?, args(port, &dir)?)?;
            let mut s = Server {
                what: what.clone(),
                port,
                child,
                dir,
                log,
            };
            match s.wait_ready().await {
                Ok(()) => return Ok(s),
                // Exited on its own (the port was taken?): try another port.
                Err(e) if s.exited().is_some() => last = e,
                Err(e) => return Err(io::Error::other(e)),
            }
        }
        Err(io::Error::other(format!("{what} did not start: {last}")))
    }

    /// SIGKILLs the server and starts `program` again in the same directory (its files
    /// kept: a restart from what it saved), on a new free port, with the arguments
    /// `args(port, dir)`, and waits for its PING as [`Server::launch`] does.
    pub(super) async fn relaunch(
        &mut self,
        program: &Program,
        args: impl Fn(u16, &Path) -> io::Result<Vec<OsString>>,
    ) -> io::Result<()> {
        self.kill()?;
        let mut last = String::new();
        for _ in 0..START_ATTEMPTS {
            let port = free_port()?;
            let log = File::options().append(true).create(true).open(&self.log)?;
            self.child = spawn(program, &self.dir, log, args(port, &self.dir)?)?;
            self.port = port;
            match self.wait_ready().await {
                Ok(()) => return Ok(()),
                Err(e) if self.exited().is_some() => last = e,
                Err(e) => return Err(io::Error::other(e)),
            }
        }
        Err(io::Error::other(format!(
            "{} did not start again: {last}",
            self.what
        )))
    }

    /// Its directory (`--dir`).
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Its process ID.
    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until the server answers PING with +PONG.
    async fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = self.exited() {
                return Err(format!("exited at start with {status}{}", self.log_tail()));
            }
            if let Ok(mut c) = Conn::connect(&self.addr(), Duration::from_secs(2)).await
                && c.ok(&["PING"]).await.is_ok_and(|r| r == b"+PONG\r\n")
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{} gave no PONG within {START_TIMEOUT:?}{}",
                    self.what,
                    self.log_tail()
                ));
            }
            // Short: `tiering/restart` times a start with this.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// `127.0.0.1:<port>`.
    pub(super) fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// SIGKILL now, and reaps it (its directory stays until it is dropped).
    pub(super) fn kill(&mut self) -> io::Result<()> {
        self.child.kill()?;
        self.child.wait()?;
        Ok(())
    }

    /// Its exit status, if it has ended.
    pub(super) fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// The end of its log, for error messages.
    fn log_tail(&self) -> String {
        let text = std::fs::read(&self.log)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = lines[lines.len().saturating_sub(5)..].join(" | ");
        if tail.is_empty() {
            String::new()
        } else {
            format!("; end of its log ({}): {tail}", self.log.display())
        }
    }

    /// `e` with a note if the process has died meanwhile, and the end of its log.
    pub(super) fn explain(&mut self, e: impl std::fmt::Display) -> io::Error {
        match self.exited() {
            Some(status) => io::Error::other(format!(
                "{e} ({} exited with {status}){}",
                self.what,
                self.log_tail()
            )),
            None => io::Error::other(e.to_string()),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Starts `program` with `args` in `dir`, its stdout and stderr into `log`.
fn spawn(program: &Program, dir: &Path, log: File, args: Vec<OsString>) -> io::Result<Child> {
    let err = log.try_clone()?;
    Command::new(&program.path)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(err))
        .spawn()
        .map_err(|e| io::Error::other(format!("cannot start {}: {e}", program.path.display())))
}

/// A port nobody listens on right now (the kernel's choice for 127.0.0.1:0).
pub(super) fn free_port() -> io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// A primary and its replicas (not attached until [`Topology::attach`]).
struct Topology {
    primary: Server,
    replicas: Vec<Server>,
    /// The program's name, for messages.
    name: String,
}

impl Topology {
    /// Starts a primary and `replicas` replicas of `program`.
    async fn start(program: &Program, replicas: usize) -> io::Result<Topology> {
        let primary = Server::start(program, "primary").await?;
        let mut rs = Vec::with_capacity(replicas);
        for i in 1..=replicas {
            rs.push(Server::start(program, &format!("replica {i}")).await?);
        }
        Ok(Topology {
            primary,
            replicas: rs,
            name: program.name.clone(),
        })
    }

    /// A control connection to the primary, with `repl-diskless-sync-delay 0` set (a
    /// server without that setting is left as it is).
    async fn primary_ctl(&self, ctx: &Ctx) -> io::Result<Conn> {
        let mut ctl = Conn::connect(&self.primary.addr(), ctx.timeout).await?;
        ctl.push(&["CONFIG", "SET", "repl-diskless-sync-delay", "0"]);
        ctl.flush().await?;
        ctl.reply().await?;
        Ok(ctl)
    }

    /// Sends `REPLICAOF 127.0.0.1 <primary>` to every replica; a refusal (streamd before
    /// replication: unknown command) fails with the server's reply.
    async fn replicaof(&mut self, ctx: &Ctx) -> io::Result<()> {
        let port = self.primary.port.to_string();
        for r in &mut self.replicas {
            let mut c = Conn::connect(&r.addr(), ctx.timeout).await?;
            if let Err(e) = c.ok(&["REPLICAOF", "127.0.0.1", &port]).await {
                return Err(io::Error::other(format!(
                    "{} refused `REPLICAOF 127.0.0.1 {port}`: {e} (does {} implement \
                     replication yet?)",
                    r.what, self.name
                )));
            }
        }
        Ok(())
    }

    /// REPLICAOF on every replica, then waits until the primary's `INFO replication`
    /// lists each one (by its listening port) with `state=online`, and then until an entry
    /// written on the primary after that shows on every replica: Redis 7.0 lists a replica
    /// online before it starts streaming commands to it (it waits for the replica's first
    /// `REPLCONF ACK` after the RDB, which can come up to a second later), and the
    /// measurements must start on a flowing stream. Each wait is bounded by `ctx.timeout`.
    async fn attach(&mut self, ctx: &Ctx, ctl: &mut Conn) -> io::Result<()> {
        self.replicaof(ctx).await?;
        self.wait_online(ctx, ctl).await?;
        ctl.ok(&["XADD", READY_KEY, "*", "ready", "1"]).await?;
        let deadline = Instant::now() + ctx.timeout;
        for r in &mut self.replicas {
            let mut c = Conn::connect(&r.addr(), ctx.timeout).await?;
            loop {
                let len = c.value(&["XLEN", READY_KEY]).await;
                if matches!(len, Ok(Value::Int(1))) {
                    break;
                }
                if Instant::now() > deadline {
                    let e = format!(
                        "{} is listed online but shows no entry written on the primary {:?} \
                         later (XLEN {READY_KEY}: {len:?})",
                        r.what, ctx.timeout
                    );
                    return Err(r.explain(e));
                }
                tokio::time::sleep(POLL_EVERY).await;
            }
        }
        Ok(())
    }

    /// Waits until the primary's `INFO replication` lists every replica (by its listening
    /// port) with `state=online`, at most `ctx.timeout`.
    async fn wait_online(&mut self, ctx: &Ctx, ctl: &mut Conn) -> io::Result<()> {
        let deadline = Instant::now() + ctx.timeout;
        loop {
            let info = match ctl.ok(&["INFO", "replication"]).await {
                Ok(i) => i,
                Err(e) => return Err(self.primary.explain(e)),
            };
            let online = online_ports(&info);
            let missing: Vec<&mut Server> = self
                .replicas
                .iter_mut()
                .filter(|r| !online.contains(&r.port))
                .collect();
            let Some(r) = missing.into_iter().next() else {
                return Ok(());
            };
            if Instant::now() > deadline {
                let e = format!(
                    "{} (port {}) not listed with state=online in the primary's INFO \
                     replication {:?} after REPLICAOF; the primary said: {}",
                    r.what,
                    r.port,
                    ctx.timeout,
                    one_line(&info)
                );
                return Err(r.explain(e));
            }
            if r.exited().is_some() {
                return Err(r.explain("replica died while attaching"));
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }
}

/// An INFO reply on one line (`a:1, b:2`), for messages.
fn one_line(info: &[u8]) -> String {
    let text = String::from_utf8_lossy(info);
    let fields: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('$'))
        .collect();
    fields.join(", ")
}

/// The listening ports of the replicas an `INFO replication` reply lists with
/// `state=online`: lines `slave<N>:ip=...,port=<P>,state=online,offset=...,lag=...`.
fn online_ports(info: &[u8]) -> Vec<u16> {
    let Ok(text) = std::str::from_utf8(info) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| {
            let (name, fields) = line.split_once(':')?;
            let n = name.strip_prefix("slave")?;
            if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let (mut port, mut online) = (None, false);
            for kv in fields.trim().split(',') {
                match kv.split_once('=') {
                    Some(("port", p)) => port = p.parse().ok(),
                    Some(("state", s)) => online = s == "online",
                    _ => {}
                }
            }
            port.filter(|_| online)
        })
        .collect()
}

/// XADD load from [`CLIENTS`] connections, [`PIPELINE`] deep, [`LOAD_FULL`] × scale
/// commands, with `replicas` attached; meanwhile a probe every [`PROBE_EVERY`] and one
/// watcher per replica (see the module doc). Latency: probe lag per replica.
async fn xadd(ctx: &Ctx, program: &Program, replicas: usize) -> io::Result<Sample> {
    let mut topo = Topology::start(program, replicas).await?;
    let mut ctl = topo.primary_ctl(ctx).await?;
    topo.attach(ctx, &mut ctl).await?;
    let primary = topo.primary.addr();
    let conns = Conn::connect_many(&primary, CLIENTS, ctx.timeout).await?;
    let mut probe = Conn::connect(&primary, ctx.timeout).await?;
    let mut watchers = Vec::with_capacity(replicas);
    for r in &topo.replicas {
        watchers.push((r.what.clone(), Conn::connect(&r.addr(), ctx.timeout).await?));
    }
    // Set when the load is over: how many probes were acknowledged, and until when the
    // watchers may wait for the last of them.
    let finished: Rc<Cell<Option<(usize, Instant)>>> = Rc::new(Cell::new(None));
    let load_done = Rc::new(Cell::new(false));
    let mut tasks = tokio::task::JoinSet::new();
    for (what, mut conn) in watchers {
        let finished = Rc::clone(&finished);
        let timeout = ctx.timeout;
        tasks.spawn_local(async move {
            let mut last = b"0-0".to_vec();
            let mut seen: Vec<(usize, Instant)> = Vec::new();
            loop {
                if let Some((n, until)) = finished.get() {
                    if seen.len() >= n {
                        return Ok(seen);
                    }
                    if Instant::now() > until {
                        return Err(io::Error::other(format!(
                            "{what} showed {} of {n} probe entries {timeout:?} after the load \
                             ended (is it replicating?)",
                            seen.len()
                        )));
                    }
                }
                let reply = conn
                    .value(&[
                        &b"XREAD"[..],
                        b"COUNT",
                        b"1000",
                        b"BLOCK",
                        WATCH_BLOCK_MS.as_bytes(),
                        b"STREAMS",
                        b"probe",
                        &last,
                    ])
                    .await?;
                let at = Instant::now();
                let entries = read_entries(&reply);
                for e in &entries {
                    let n = e
                        .field(b"n")
                        .and_then(|v| std::str::from_utf8(v).ok()?.parse().ok())
                        .ok_or_else(|| io::Error::other("probe entry without n"))?;
                    seen.push((n, at));
                }
                if let Some(e) = entries.last() {
                    last = e.id.to_vec();
                }
            }
        });
    }
    let acks: Rc<RefCell<Vec<Instant>>> = Rc::new(RefCell::new(Vec::new()));
    let prober = (replicas > 0).then(|| {
        let (acks, load_done) = (Rc::clone(&acks), Rc::clone(&load_done));
        tokio::task::spawn_local(async move {
            let mut n = itoa::Buffer::new();
            while !load_done.get() {
                let i = acks.borrow().len();
                probe.ok(&["XADD", "probe", "*", "n", n.format(i)]).await?;
                acks.borrow_mut().push(Instant::now());
                tokio::time::sleep(PROBE_EVERY).await;
            }
            Ok::<(), io::Error>(())
        })
    });
    let phase = Phase::begin(&mut ctl, true).await?;
    let load = closed_loop(
        conns,
        PIPELINE,
        Stop::Count(ctx.n(LOAD_FULL, 10_000)),
        |_, _, rng, conn| push_bid(conn, b"s", b"*", rng),
    )
    .await;
    let measured = phase.end(&mut ctl).await;
    load_done.set(true);
    let (done, m) = match (load, measured) {
        (Ok(d), Ok(m)) => (d, m),
        (Err(e), _) | (_, Err(e)) => return Err(topo.primary.explain(e)),
    };
    if let Some(p) = prober {
        p.await.map_err(io::Error::other)??;
    }
    let acks = acks.take();
    finished.set(Some((acks.len(), Instant::now() + ctx.timeout)));
    let mut lag = Vec::with_capacity(acks.len() * replicas);
    while let Some(seen) = tasks.join_next().await {
        for (n, at) in seen.map_err(io::Error::other)?? {
            let ack = acks
                .get(n)
                .ok_or_else(|| io::Error::other(format!("replica showed unknown probe {n}")))?;
            let nanos = at.saturating_duration_since(*ack).as_nanos();
            lag.push(u64::try_from(nanos).unwrap_or(u64::MAX));
        }
    }
    Ok(Sample::new(m, done.ops, done.ops, lag))
}

/// One client: `XADD s * ...` then `WAIT 1 1000`, [`WAITS_FULL`] × scale times, with
/// `replicas` attached. Latency: the WAIT round trip.
async fn wait(ctx: &Ctx, program: &Program, replicas: usize) -> io::Result<Sample> {
    let mut topo = Topology::start(program, replicas).await?;
    let mut ctl = topo.primary_ctl(ctx).await?;
    topo.attach(ctx, &mut ctl).await?;
    let mut conn = Conn::connect(&topo.primary.addr(), ctx.timeout).await?;
    let n = ctx.n(WAITS_FULL, 200);
    let mut rng = crate::measure::Rng::new(0x3A17);
    let mut lat = Vec::with_capacity(n as usize);
    let phase = Phase::begin(&mut ctl, true).await?;
    for i in 0..n {
        push_bid(&mut conn, b"s", b"*", &mut rng);
        conn.flush().await?;
        conn.skip(1).await?;
        let sent = Instant::now();
        let acked = match conn.value(&["WAIT", "1", WAIT_TIMEOUT_MS]).await {
            Ok(v) => v,
            Err(e) => {
                return Err(topo.primary.explain(format!(
                    "{} refused `WAIT 1 {WAIT_TIMEOUT_MS}`: {e}",
                    topo.primary.what
                )));
            }
        };
        lat.push(crate::measure::ns_since(sent));
        if !matches!(acked, Value::Int(k) if k >= 1) {
            return Err(io::Error::other(format!(
                "`WAIT 1 {WAIT_TIMEOUT_MS}` after XADD {i} of {n} returned {acked:?}: no \
                 replica acknowledged within {WAIT_TIMEOUT_MS} ms"
            )));
        }
    }
    let m = phase.end(&mut ctl).await?;
    Ok(Sample::new(m, n, n, lat))
}

/// `ctx.sync_entries` bids loaded on a primary with no replica, then REPLICAOF on
/// `replicas` replicas at once; each is synced when it reports `master_link_status:up` and
/// its XLEN equals the primary's. Bounded by 10 × `ctx.timeout`.
async fn full_sync(ctx: &Ctx, program: &Program, replicas: usize) -> io::Result<Sample> {
    let mut topo = Topology::start(program, replicas).await?;
    let mut ctl = topo.primary_ctl(ctx).await?;
    load(&mut ctl, b"s", ctx.sync_entries, Ids::Auto)
        .await
        .map_err(|e| topo.primary.explain(e))?;
    let want = xlen(&mut ctl).await?;
    if want != Ok(ctx.sync_entries) {
        return Err(io::Error::other(format!(
            "the primary holds {want:?} entries after loading {}",
            ctx.sync_entries
        )));
    }
    let mut polls = Vec::with_capacity(replicas);
    let mut mem_before = 0.0;
    for r in &topo.replicas {
        let mut c = Conn::connect(&r.addr(), ctx.timeout).await?;
        mem_before += used_memory(&mut c).await?.unwrap_or(0.0);
        polls.push(c);
    }
    let start = Instant::now();
    topo.replicaof(ctx).await?;
    let deadline = start + ctx.timeout * 10;
    let mut synced: Vec<Option<u64>> = vec![None; replicas];
    while synced.iter().any(Option::is_none) {
        for (i, c) in polls.iter_mut().enumerate() {
            if synced[i].is_some() {
                continue;
            }
            let info = c.ok(&["INFO", "replication"]).await;
            let info = info.map_err(|e| topo.replicas[i].explain(e))?;
            // Set by REPLICAOF itself (`down` until the sync is done): missing, it never comes.
            let Some(link) = info_field(&info, "master_link_status").map(str::to_string) else {
                let e = format!(
                    "{} accepted REPLICAOF but its INFO replication has no master_link_status: {}",
                    topo.replicas[i].what,
                    one_line(&info)
                );
                return Err(topo.replicas[i].explain(e));
            };
            // XLEN only once the link is up: a loading replica answers -LOADING.
            let len = if link == "up" {
                xlen(c).await?
            } else {
                Err(String::new())
            };
            if len == Ok(ctx.sync_entries) {
                synced[i] = Some(crate::measure::ns_since(start));
            } else if Instant::now() > deadline {
                let e = format!(
                    "{} not synced {:?} after REPLICAOF: master_link_status:{link}, XLEN {} \
                     of {}",
                    topo.replicas[i].what,
                    ctx.timeout * 10,
                    len.map_or_else(|e| format!("unknown {e}"), |n| n.to_string()),
                    ctx.sync_entries
                );
                return Err(topo.replicas[i].explain(e));
            }
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
    let secs = start.elapsed().as_secs_f64();
    let mut mem_after = 0.0;
    for c in &mut polls {
        mem_after += used_memory(c).await?.unwrap_or(0.0);
    }
    Ok(Sample {
        ops: 0,
        entries: ctx.sync_entries * replicas as u64,
        secs,
        lat_ns: synced.into_iter().flatten().collect(),
        mem_delta: Some(mem_after - mem_before),
        // A primary that forks (Redis) spends the copy's CPU in a child /proc does not
        // count in the parent's times: no fair figure.
        cpu_us: None,
        sys_share: None,
        figures: Vec::new(),
    })
}

/// `XLEN s`: the length, or the error reply's text.
async fn xlen(conn: &mut Conn) -> io::Result<Result<u64, String>> {
    conn.push(&["XLEN", "s"]);
    conn.flush().await?;
    let reply = conn.reply().await?;
    if let Err(e) = check(&reply) {
        return Ok(Err(e.to_string()));
    }
    Ok(match crate::client::parse(&reply) {
        Some(Value::Int(n)) if n >= 0 => Ok(n as u64),
        other => Err(format!("{other:?}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn online_replicas_are_found_by_port() {
        let info = b"# Replication\r\nrole:master\r\nconnected_slaves:3\r\n\
            slave0:ip=127.0.0.1,port=7001,state=online,offset=42,lag=0\r\n\
            slave1:ip=127.0.0.1,port=7002,state=wait_bgsave,offset=0,lag=0\r\n\
            slave2:ip=127.0.0.1,port=7003,state=online,offset=42,lag=1\r\n\
            slave_read_only:1\r\nslave_repl_offset:42\r\nmaster_repl_offset:42\r\n";
        assert_eq!(online_ports(info), vec![7001, 7003]);
        assert!(online_ports(b"role:master\r\nconnected_slaves:0\r\n").is_empty());
        assert!(online_ports(b"slavex:port=1,state=online\r\n").is_empty());
    }

    #[test]
    fn variants_cover_each_topology() {
        let names: Vec<String> = variants().into_iter().map(|(n, _, _)| n).collect();
        assert_eq!(
            names,
            [
                "xadd-c16-p16-r0",
                "xadd-c16-p16-r1",
                "xadd-c16-p16-r2",
                "wait1-r1",
                "wait1-r2",
                "fullsync-r1",
                "fullsync-r2"
            ]
        );
    }

    fn test_ctx(program: Program) -> Ctx {
        Ctx {
            addr: program.name.clone(),
            local: true,
            scale: 0.01,
            timeout: Duration::from_secs(10),
            epoch: Instant::now(),
            spawn: Some(program),
            sync_entries: 2000,
            side: "A",
        }
    }

    /// Every variant against real Redis at a tiny size (the tool's own check, before
    /// streamd replicates), then a server that does not know REPLICAOF: it must fail at
    /// once with the server's reply, not wait for a replica.
    #[test]
    fn rounds_on_redis_measure_and_a_server_without_replicaof_fails_fast() {
        let redis = Program::redis().expect("the repl workloads compare with redis-server");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async {
            let ctx = test_ctx(redis.clone());
            for replicas in [0, 2] {
                let s = run(&ctx, Repl::Xadd { replicas })
                    .await
                    .expect("xadd round");
                assert_eq!(s.ops, 10_000);
                assert_eq!(s.lat_ns.is_empty(), replicas == 0);
                assert_eq!(s.lat_ns.len() % replicas.max(1), 0);
            }
            let s = run(&ctx, Repl::Wait { replicas: 1 })
                .await
                .expect("wait round");
            assert_eq!((s.ops, s.lat_ns.len()), (200, 200));
            let s = run(&ctx, Repl::FullSync { replicas: 2 })
                .await
                .expect("full sync round");
            assert_eq!((s.entries, s.lat_ns.len()), (4000, 2));

            let dir =
                std::env::temp_dir().join(format!("streamd-bench-test-{}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("temp dir");
            let script = dir.join("redis-server-without-replicaof");
            std::fs::write(
                &script,
                format!(
                    "#!/bin/sh\nexec '{}' \"$@\" --rename-command REPLICAOF ''\n",
                    redis.path.display()
                ),
            )
            .expect("write script");
            let chmod = Command::new("chmod").arg("755").arg(&script).status();
            assert!(chmod.is_ok_and(|s| s.success()));
            let ctx = test_ctx(Program::at(script).expect("script"));
            let started = Instant::now();
            let e = run(&ctx, Repl::Wait { replicas: 1 })
                .await
                .expect_err("no REPLICAOF, no round");
            assert!(
                e.to_string().contains("refused `REPLICAOF 127.0.0.1"),
                "{e}"
            );
            assert!(started.elapsed() < Duration::from_secs(5), "{e}");
            let _ = std::fs::remove_dir_all(&dir);
        });
    }

    #[test]
    fn programs_must_exist() {
        assert!(Program::at(PathBuf::from("/nonexistent/streamd")).is_err());
        let me = Program::at(std::env::current_exe().expect("own path")).expect("a file");
        assert!(me.name.starts_with("streamd_bench") || me.name.starts_with("streamd-bench"));
        assert!(
            Program::streamd(Some(PathBuf::from("/nonexistent/streamd")))
                .is_err_and(|e| e.contains("--streamd"))
        );
    }
}
