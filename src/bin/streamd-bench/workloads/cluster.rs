//! Cluster workloads (`cluster/*`): the same Redis Cluster shape, 3 primaries with one
//! replica each, built from streamd (side A) and from Debian's `redis-server` (side B) every
//! round, on nodes this tool starts itself (as `repl/*` does), so the A/B ratios are
//! streamd/Redis. `--streamd /usr/bin/redis-server` makes A Redis too.
//!
//! ```text
//!   round:  6 nodes on 127.0.0.1 ports P (P + 10000 free for the bus), each
//!           <temp dir>/node.conf: cluster-enabled yes, cluster-config-file nodes.conf,
//!           cluster-node-timeout 2000, appendonly no, save ""  (the same for both kinds)
//!           redis-cli --cluster create <6 addrs> --cluster-replicas 1 --cluster-yes
//!           wait: cluster_state:ok on every node, `redis-cli --cluster check` clean,
//!                 every replica master_link_status:up
//!           measure │ kill every node, remove their directories (also on error)
//!
//!   client (one per connection of the original workloads):
//!     CLUSTER SLOTS ─► slot → primary map;  one Conn per primary
//!     batch [cmd(slot 12), cmd(slot 9000), cmd(slot 15000), ...]
//!        split by owner ─► node 1: one write ─┐  node 2: one write ─┐  node 3 ...
//!        replies read back per node, in batch order ◄─────────────────┘
//!        -MOVED <slot> <addr>: refresh the map from <addr>, resend those commands
//! ```
//!
//! Variants:
//! - `xadd-1024`: 50 clients, 16 XADDs per batch over the 1,024 keys `bids:{i}` (the hash
//!   tag `i` spreads them over all slots): ops/s, the whole cluster's CPU per XADD
//!   (primaries and replicas), batch latency.
//! - `auction`: [`super::live::auction`] across 3 primaries: 1,024 shard streams, 32
//!   consumers blocking on their 32 shards each, 16 producers; bids delivered/s and
//!   bid-to-consumer latency.
//! - `reshard-100k`: 100 streams × 1,000 entries, each with a group holding 100 pending
//!   entries, in the 100 lowest slots of the primary owning slot 0; the time of
//!   `redis-cli --cluster reshard` moving those 100 slots to the primary owning slot 16383
//!   (entries/s, and the time as the latency); the round fails unless the new owner then
//!   holds every stream whole with its pending entries and the old one holds none.
//! - `failover`: SIGKILL of the primary owning slot 0; the time until every survivor
//!   reports `cluster_state:ok` with slot 0 served by that primary's replica, and the
//!   replica's ROLE is `master` (latency p50: the median survivor; p99: the last one).
//!
//! Every wait is bounded: node start-up 10 s, `--cluster create`, each wait after it and
//! the failover `--timeout` each, the reshard 10 × `--timeout`; a `redis-cli` still running
//! at its bound is killed and fails the round.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

use streamd::cluster::slots::{CLUSTER_SLOTS, key_hash_slot};
use tokio::task::JoinSet;

use super::live::{Tally, join, micros};
use super::replication::{Program, Server};
use super::{Ctx, Ids, load};
use crate::client::{Conn, Value, check, encode, info_field, parse};
use crate::measure::{Measured, Phase, Rng, Sample, ns_since};

/// Nodes per cluster: 3 primaries and 3 replicas.
const NODES: usize = 6;
/// The configuration file every node gets, streamd and Redis alike.
const NODE_CONF: &str = "cluster-enabled yes\ncluster-config-file nodes.conf\n\
                         cluster-node-timeout 2000\nappendonly no\nsave \"\"\n";
/// Where the nodes listen (and what an empty host in a redirect means).
const HOST: &str = "127.0.0.1";
/// Time between two polls of the nodes while waiting.
const POLL_EVERY: Duration = Duration::from_millis(10);
/// Map refreshes one batch may need before its commands all land.
const MAX_REDIRECTS: usize = 5;
/// `xadd-1024`: connections, XADDs per batch, keys.
const XADD_CLIENTS: usize = 50;
const XADD_PIPELINE: usize = 16;
const XADD_KEYS: usize = 1024;
/// `auction`: shard streams, consumers, producers (as in `auction/1024x32`).
const SHARDS: usize = 1024;
const CONSUMERS: usize = 32;
const PRODUCERS: usize = 16;
/// `reshard-100k`: streams (one per moved slot), entries per stream, pending per stream.
const RESHARD_STREAMS: usize = 100;
const RESHARD_PER_STREAM: u64 = 1000;
const RESHARD_PENDING: u64 = 100;

/// What a `cluster/*` variant runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bench {
    /// Pipelined XADD over 1,024 keys through the slot-aware client.
    Xadd,
    /// The sharded auction across 3 primaries.
    Auction,
    /// `redis-cli --cluster reshard` of 100 slots holding 100k entries.
    Reshard,
    /// SIGKILL of a primary until its replica serves its slots everywhere.
    Failover,
}

/// Every `cluster/*` variant: (name after `cluster/`, parameters, what the latency times,
/// what the memory column counts).
pub fn variants() -> Vec<(&'static str, Bench, &'static str, &'static str)> {
    vec![
        ("xadd-1024", Bench::Xadd, "batch", "entry"),
        ("auction", Bench::Auction, "bid-to-consumer", "bid"),
        ("reshard-100k", Bench::Reshard, "reshard", "entry"),
        ("failover", Bench::Failover, "kill-to-ok", "entry"),
    ]
}

/// Runs one round of `b` on a cluster started from `ctx.spawn`.
pub async fn run(ctx: &Ctx, b: Bench) -> io::Result<Sample> {
    let program = ctx
        .spawn
        .as_ref()
        .ok_or_else(|| io::Error::other("cluster workloads need a server program to start"))?;
    let mut cluster = Cluster::start(ctx, program).await?;
    let result = match b {
        Bench::Xadd => xadd(ctx, &cluster).await,
        Bench::Auction => auction(ctx, &cluster).await,
        Bench::Reshard => {
            reshard(
                ctx,
                &mut cluster,
                RESHARD_STREAMS,
                RESHARD_PER_STREAM,
                RESHARD_PENDING,
            )
            .await
        }
        Bench::Failover => failover(ctx, &mut cluster).await,
    };
    result.map_err(|e| cluster.explain(e))
}

/// A port `p` of 127.0.0.1 with `p` and its bus port `p + 10000` free right now.
fn free_port_pair() -> io::Result<u16> {
    for _ in 0..200 {
        let p = std::net::TcpListener::bind((HOST, 0))?.local_addr()?.port();
        if p < 55000 && std::net::TcpListener::bind((HOST, p + 10000)).is_ok() {
            return Ok(p);
        }
    }
    Err(io::Error::other(
        "no free port P with P + 10000 free in 200 tries",
    ))
}

/// `redis-cli` from `PATH` (then `/usr/bin`).
fn redis_cli() -> io::Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin")])
        .map(|dir| dir.join("redis-cli"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            io::Error::other(
                "redis-cli not found in PATH (it forms the clusters): install it with \
                 `sudo apt-get install redis-tools`",
            )
        })
}

/// The last `n` non-empty lines of a tool's output, on one line, without the terminal
/// colour codes (`ESC [ ... m`) redis-cli puts around its errors even into a file.
fn tail(text: &str, n: usize) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\u{1b}') {
        plain.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        rest = match after
            .strip_prefix('[')
            .and_then(|a| a.find('m').map(|m| &a[m + 1..]))
        {
            Some(tail) => tail,
            None => after,
        };
    }
    plain.push_str(rest);
    let lines: Vec<&str> = plain
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

/// Six nodes formed into a cluster; every node is killed (and its directory removed) when
/// this is dropped.
struct Cluster {
    nodes: Vec<Server>,
    /// The `redis-cli` executable.
    cli: PathBuf,
    /// Where `redis-cli`'s output goes (a file each run, so no pipe can fill up).
    tools: PathBuf,
    /// `redis-cli` runs so far (names the output files).
    runs: usize,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.tools);
    }
}

impl Cluster {
    /// Starts [`NODES`] nodes of `program`, forms the cluster with `redis-cli --cluster
    /// create ... --cluster-replicas 1`, and waits until it is whole (see the module doc).
    async fn start(ctx: &Ctx, program: &Program) -> io::Result<Cluster> {
        let cli = redis_cli()?;
        // One directory per cluster: a cluster removes its own when dropped, and two may
        // be alive at once (the tests run side by side).
        static CLUSTERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = CLUSTERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tools = std::env::temp_dir().join(format!(
            "streamd-bench-{}-cluster-{n}-cli",
            std::process::id()
        ));
        std::fs::create_dir_all(&tools)?;
        let mut cluster = Cluster {
            nodes: Vec::with_capacity(NODES),
            cli,
            tools,
            runs: 0,
        };
        for i in 1..=NODES {
            let node = Server::launch(program, &format!("node {i}"), free_port_pair, node_args)
                .await
                .map_err(|e| cluster.explain(e))?;
            cluster.nodes.push(node);
        }
        let mut args: Vec<String> = vec!["--cluster".into(), "create".into()];
        args.extend(cluster.nodes.iter().map(Server::addr));
        args.extend(["--cluster-replicas", "1", "--cluster-yes"].map(String::from));
        let (ok, text) = cluster.cli(&args, ctx.timeout).await?;
        if !ok {
            let e = format!(
                "`redis-cli --cluster create` over {} nodes failed: {}",
                program.name,
                tail(&text, 6)
            );
            return Err(cluster.explain(e));
        }
        cluster.wait_state_ok(ctx).await?;
        cluster.wait_check_clean(ctx).await?;
        cluster.wait_replicas(ctx).await?;
        Ok(cluster)
    }

    /// `e`, with the end of the log of the first node that has died, if one has.
    fn explain(&mut self, e: impl std::fmt::Display) -> io::Error {
        for n in &mut self.nodes {
            if n.exited().is_some() {
                return n.explain(e);
            }
        }
        io::Error::other(e.to_string())
    }

    /// Runs `redis-cli args`, bounded by `limit` (killed then); returns whether it exited
    /// with 0, and its output (stdout and stderr).
    async fn cli<S: AsRef<str>>(
        &mut self,
        args: &[S],
        limit: Duration,
    ) -> io::Result<(bool, String)> {
        self.runs += 1;
        let log = self.tools.join(format!("redis-cli-{}.log", self.runs));
        let out = File::create(&log)?;
        let err = out.try_clone()?;
        let shown: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
        let mut child = Command::new(&self.cli)
            .args(&shown)
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .map_err(|e| io::Error::other(format!("cannot run {}: {e}", self.cli.display())))?;
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                let text = String::from_utf8_lossy(&std::fs::read(&log)?).into_owned();
                let e = format!(
                    "`redis-cli {}` still running after {limit:?} (killed): {}",
                    shown.join(" "),
                    tail(&text, 6)
                );
                return Err(self.explain(e));
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        };
        let text = String::from_utf8_lossy(&std::fs::read(&log)?).into_owned();
        Ok((status.success(), text))
    }

    /// A connection to every node, in node order.
    async fn ctls(&self, ctx: &Ctx) -> io::Result<Vec<Conn>> {
        let mut out = Vec::with_capacity(self.nodes.len());
        for n in &self.nodes {
            out.push(Conn::connect(&n.addr(), ctx.timeout).await?);
        }
        Ok(out)
    }

    /// CLUSTER SLOTS as the first node sees it.
    async fn ranges(&self, ctx: &Ctx) -> io::Result<Vec<SlotRange>> {
        let addr = self
            .nodes
            .first()
            .map(Server::addr)
            .ok_or_else(|| io::Error::other("a cluster without nodes"))?;
        let mut c = Conn::connect(&addr, ctx.timeout).await?;
        fetch_ranges(&mut c).await
    }

    /// The slot map as the first node sees it.
    async fn map(&self, ctx: &Ctx) -> io::Result<SlotMap> {
        SlotMap::from_ranges(&self.ranges(ctx).await?).map_err(io::Error::other)
    }

    /// Waits until every node's CLUSTER INFO says `cluster_state:ok` (bounded).
    async fn wait_state_ok(&mut self, ctx: &Ctx) -> io::Result<()> {
        let mut ctls = self.ctls(ctx).await?;
        let deadline = Instant::now() + ctx.timeout;
        loop {
            let mut states = Vec::with_capacity(ctls.len());
            for c in &mut ctls {
                let info = c.ok(&["CLUSTER", "INFO"]).await?;
                states.push(
                    info_field(&info, "cluster_state")
                        .unwrap_or("?")
                        .to_string(),
                );
            }
            if states.iter().all(|s| s == "ok") {
                return Ok(());
            }
            if Instant::now() > deadline {
                let e = format!(
                    "not every node reached cluster_state:ok {:?} after --cluster create: {}",
                    ctx.timeout,
                    self.describe(&states)
                );
                return Err(self.explain(e));
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }

    /// `node (port): what` for each node, for messages.
    fn describe(&self, what: &[String]) -> String {
        self.nodes
            .iter()
            .zip(what)
            .map(|(n, w)| format!("{} ({}): {w}", n.what, n.port))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Runs `redis-cli --cluster check` until it is clean: exit 0, every slot covered,
    /// every node agreeing, no warning or error (bounded).
    async fn wait_check_clean(&mut self, ctx: &Ctx) -> io::Result<()> {
        let entry = self
            .nodes
            .first()
            .map(Server::addr)
            .ok_or_else(|| io::Error::other("a cluster without nodes"))?;
        let deadline = Instant::now() + ctx.timeout;
        loop {
            let (ok, text) = self
                .cli(&["--cluster", "check", &entry], ctx.timeout)
                .await?;
            if ok && check_is_clean(&text) {
                return Ok(());
            }
            if Instant::now() > deadline {
                let e = format!(
                    "`redis-cli --cluster check {entry}` not clean {:?} after the cluster \
                     was formed: {}",
                    ctx.timeout,
                    tail(&text, 8)
                );
                return Err(self.explain(e));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until half the nodes are replicas whose `master_link_status` is `up`, so no
    /// first full sync runs during the measurement (bounded).
    async fn wait_replicas(&mut self, ctx: &Ctx) -> io::Result<()> {
        let mut ctls = self.ctls(ctx).await?;
        let deadline = Instant::now() + ctx.timeout;
        loop {
            let mut seen = Vec::with_capacity(ctls.len());
            for c in &mut ctls {
                let info = c.ok(&["INFO", "replication"]).await?;
                let role = info_field(&info, "role").unwrap_or("?");
                let link = info_field(&info, "master_link_status").unwrap_or("-");
                seen.push(format!("role:{role} master_link_status:{link}"));
            }
            let up = seen
                .iter()
                .filter(|s| s.as_str() == "role:slave master_link_status:up")
                .count();
            if up == NODES / 2 {
                return Ok(());
            }
            if Instant::now() > deadline {
                let e = format!(
                    "{up} of {} replicas synced with their primaries {:?} after the cluster \
                     was formed: {}",
                    NODES / 2,
                    ctx.timeout,
                    self.describe(&seen)
                );
                return Err(self.explain(e));
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }
}

/// The arguments of a node: its configuration file (written into `dir`: [`NODE_CONF`]),
/// then `--port P --bind 127.0.0.1 --dir <dir>`.
fn node_args(port: u16, dir: &Path) -> io::Result<Vec<OsString>> {
    let conf = dir.join("node.conf");
    std::fs::write(&conf, NODE_CONF)?;
    let mut args = vec![conf.into_os_string()];
    args.extend(["--port", &port.to_string(), "--bind", HOST, "--dir"].map(OsString::from));
    args.push(dir.as_os_str().to_owned());
    Ok(args)
}

/// Whether `redis-cli --cluster check` output says the cluster is whole and consistent.
fn check_is_clean(text: &str) -> bool {
    text.contains("[OK] All nodes agree about slots configuration.")
        && text.contains("[OK] All 16384 slots covered.")
        && !text.contains("[WARNING]")
        && !text.contains("[ERR]")
}

/// A node as CLUSTER SLOTS names it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct NodeRef {
    /// `host:port`.
    addr: String,
    /// The node ID (empty if the reply had none).
    id: String,
}

/// One range of a CLUSTER SLOTS reply.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SlotRange {
    start: u16,
    end: u16,
    primary: NodeRef,
    replicas: Vec<NodeRef>,
}

/// Parses a CLUSTER SLOTS reply: `[[start, end, [ip, port, id, ...], replica..., ], ...]`.
/// An empty or `?` IP (a node that does not know its address) stands for `host`.
fn parse_slots(reply: &Value, host: &str) -> Result<Vec<SlotRange>, String> {
    let Value::Array(ranges) = reply else {
        return Err(format!("CLUSTER SLOTS replied {reply:?}"));
    };
    let slot = |v: Option<&Value>| match v {
        Some(Value::Int(n)) => u16::try_from(*n)
            .ok()
            .filter(|&s| usize::from(s) < CLUSTER_SLOTS),
        _ => None,
    };
    ranges
        .iter()
        .map(|r| {
            let items = r.items();
            let (Some(start), Some(end)) = (slot(items.first()), slot(items.get(1))) else {
                return Err(format!("CLUSTER SLOTS range without slots: {r:?}"));
            };
            if end < start {
                return Err(format!("CLUSTER SLOTS range {start}-{end}"));
            }
            let mut nodes = items.iter().skip(2).map(|n| node_ref(n, host));
            let primary = nodes
                .next()
                .ok_or_else(|| format!("CLUSTER SLOTS range {start}-{end} without a node"))??;
            Ok(SlotRange {
                start,
                end,
                primary,
                replicas: nodes.collect::<Result<_, _>>()?,
            })
        })
        .collect()
}

/// One `[ip, port, id, ...]` node entry of CLUSTER SLOTS.
fn node_ref(v: &Value, host: &str) -> Result<NodeRef, String> {
    let [ip, Value::Int(port), rest @ ..] = v.items() else {
        return Err(format!("CLUSTER SLOTS node entry {v:?}"));
    };
    let port = u16::try_from(*port).map_err(|_| format!("CLUSTER SLOTS port {port}"))?;
    let ip = String::from_utf8_lossy(ip.bytes());
    let ip = if ip.is_empty() || ip == "?" {
        host
    } else {
        &ip
    };
    let addr = if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    };
    let id = rest
        .first()
        .map(|i| String::from_utf8_lossy(i.bytes()).into_owned())
        .unwrap_or_default();
    Ok(NodeRef { addr, id })
}

/// CLUSTER SLOTS from `conn`, parsed.
async fn fetch_ranges(conn: &mut Conn) -> io::Result<Vec<SlotRange>> {
    let reply = conn.value(&["CLUSTER", "SLOTS"]).await?;
    parse_slots(&reply, HOST).map_err(io::Error::other)
}

/// Which primary owns each slot.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SlotMap {
    /// Index into `nodes` per slot.
    owner: Vec<u16>,
    /// The primaries, in order of their first range in the reply.
    nodes: Vec<NodeRef>,
}

impl SlotMap {
    /// The map of `ranges`; every slot must have a primary.
    fn from_ranges(ranges: &[SlotRange]) -> Result<SlotMap, String> {
        const NONE: u16 = u16::MAX;
        let mut owner = vec![NONE; CLUSTER_SLOTS];
        let mut nodes: Vec<NodeRef> = Vec::new();
        for r in ranges {
            let i = match nodes.iter().position(|n| n.addr == r.primary.addr) {
                Some(i) => i,
                None => {
                    nodes.push(r.primary.clone());
                    nodes.len() - 1
                }
            };
            let i = u16::try_from(i).map_err(|_| "too many primaries".to_string())?;
            for s in r.start..=r.end {
                owner[usize::from(s)] = i;
            }
        }
        if let Some(s) = owner.iter().position(|&o| o == NONE) {
            return Err(format!("slot {s} has no primary in CLUSTER SLOTS"));
        }
        Ok(SlotMap { owner, nodes })
    }

    /// The index of the primary owning `slot`.
    fn node_of(&self, slot: u16) -> Option<usize> {
        self.owner.get(usize::from(slot)).map(|&o| usize::from(o))
    }

    /// The slots of primary `node`, ascending.
    fn slots_of(&self, node: usize) -> impl Iterator<Item = u16> + '_ {
        (0..CLUSTER_SLOTS as u16).filter(move |&s| self.node_of(s) == Some(node))
    }
}

/// The positions of `slots` (one per command of a batch) grouped by the primary owning
/// each: `out[node]` lists that node's commands in batch order.
fn split_by_node(slots: &[u16], map: &SlotMap) -> Result<Vec<Vec<usize>>, String> {
    let mut out = vec![Vec::new(); map.nodes.len()];
    for (pos, &slot) in slots.iter().enumerate() {
        let node = map
            .node_of(slot)
            .and_then(|n| out.get_mut(n))
            .ok_or_else(|| format!("no primary for slot {slot}"))?;
        node.push(pos);
    }
    Ok(out)
}

/// A `-MOVED <slot> <host:port>` error reply: the slot and its owner's address (an empty
/// host, `-MOVED 12 :7001`, means `host`). `None` for any other reply.
fn parse_moved(reply: &[u8], host: &str) -> Option<(u16, String)> {
    let text = std::str::from_utf8(reply).ok()?.strip_prefix("-MOVED ")?;
    let (slot, addr) = text.trim_end().split_once(' ')?;
    let slot: u16 = slot
        .parse()
        .ok()
        .filter(|&s| usize::from(s) < CLUSTER_SLOTS)?;
    if addr.is_empty() || addr.contains(' ') {
        return None;
    }
    let addr = match addr.strip_prefix(':') {
        Some(port) => format!("{host}:{port}"),
        None => addr.to_string(),
    };
    Some((slot, addr))
}

/// A command encoded by [`encode`], with the slot of its key.
type Cmd = (u16, Vec<u8>);

/// Encodes `args` with the slot of `key`.
fn cmd<A: AsRef<[u8]>>(key: &[u8], args: &[A]) -> Cmd {
    let mut out = Vec::with_capacity(64);
    encode(&mut out, args);
    (key_hash_slot(key), out)
}

/// The slot-aware client: one [`Conn`] per primary of its [`SlotMap`].
struct ClusterConn {
    map: SlotMap,
    /// `conns[i]` is connected to `map.nodes[i]`.
    conns: Vec<Conn>,
    timeout: Duration,
}

impl ClusterConn {
    /// Connects to every primary of `map`.
    async fn connect(map: &SlotMap, timeout: Duration) -> io::Result<ClusterConn> {
        let mut conns = Vec::with_capacity(map.nodes.len());
        for n in &map.nodes {
            conns.push(Conn::connect(&n.addr, timeout).await?);
        }
        Ok(ClusterConn {
            map: map.clone(),
            conns,
            timeout,
        })
    }

    /// `n` clients on the same map.
    async fn connect_many(map: &SlotMap, n: usize, timeout: Duration) -> io::Result<Vec<Self>> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(ClusterConn::connect(map, timeout).await?);
        }
        Ok(out)
    }

    /// Reloads the map from the node at `from` (the one a redirect named), keeping the
    /// connections to primaries that remain and opening ones to new primaries.
    async fn refresh(&mut self, from: &str) -> io::Result<()> {
        let mut c = Conn::connect(from, self.timeout).await?;
        let map = SlotMap::from_ranges(&fetch_ranges(&mut c).await?).map_err(io::Error::other)?;
        let mut old: Vec<(String, Conn)> = self
            .map
            .nodes
            .iter()
            .map(|n| n.addr.clone())
            .zip(self.conns.drain(..))
            .collect();
        let mut conns = Vec::with_capacity(map.nodes.len());
        for n in &map.nodes {
            match old.iter().position(|(a, _)| *a == n.addr) {
                Some(i) => conns.push(old.swap_remove(i).1),
                None => conns.push(Conn::connect(&n.addr, self.timeout).await?),
            }
        }
        self.map = map;
        self.conns = conns;
        Ok(())
    }

    /// Sends a batch: the commands of each primary in one write (all writes before any
    /// reply is read), then the replies, returned in batch order (error replies too, as
    /// `-...` bytes). Commands answered `-MOVED` are sent again after a map refresh, at
    /// most [`MAX_REDIRECTS`] times.
    async fn send(&mut self, cmds: &[Cmd]) -> io::Result<Vec<Vec<u8>>> {
        let mut replies: Vec<Option<Vec<u8>>> = vec![None; cmds.len()];
        let mut todo: Vec<usize> = (0..cmds.len()).collect();
        for _ in 0..=MAX_REDIRECTS {
            let slots: Vec<u16> = todo.iter().map(|&i| cmds[i].0).collect();
            let groups = split_by_node(&slots, &self.map).map_err(io::Error::other)?;
            for (conn, group) in self.conns.iter_mut().zip(&groups) {
                if group.is_empty() {
                    continue;
                }
                for &pos in group {
                    conn.push_encoded(&cmds[todo[pos]].1);
                }
                conn.flush().await?;
            }
            let mut moved: Vec<usize> = Vec::new();
            let mut moved_to: Option<String> = None;
            for (conn, group) in self.conns.iter_mut().zip(&groups) {
                for &pos in group {
                    let reply = conn.reply().await?;
                    match parse_moved(&reply, HOST) {
                        Some((_, addr)) => {
                            moved.push(todo[pos]);
                            moved_to = Some(addr);
                        }
                        None => replies[todo[pos]] = Some(reply),
                    }
                }
            }
            let Some(addr) = moved_to else {
                return Ok(replies.into_iter().flatten().collect());
            };
            self.refresh(&addr).await?;
            todo = moved;
        }
        Err(io::Error::other(format!(
            "{} commands still redirected after {MAX_REDIRECTS} map refreshes",
            todo.len()
        )))
    }

    /// Sends one command and parses its reply, failing on an error reply.
    async fn call(&mut self, c: Cmd) -> io::Result<Value> {
        let reply = self
            .send(std::slice::from_ref(&c))
            .await?
            .pop()
            .ok_or_else(|| io::Error::other("no reply"))?;
        check(&reply)?;
        parse(&reply).ok_or_else(|| io::Error::other("unparsable reply"))
    }
}

/// A measured phase over every node: the wall time, and the sums of the nodes' CPU time
/// and `used_memory` growth (primaries and replicas: the cluster's cost).
struct ClusterPhase {
    start: Instant,
    phases: Vec<Phase>,
}

impl ClusterPhase {
    async fn begin(ctls: &mut [Conn]) -> io::Result<ClusterPhase> {
        let mut phases = Vec::with_capacity(ctls.len());
        for c in ctls.iter_mut() {
            phases.push(Phase::begin(c, true).await?);
        }
        Ok(ClusterPhase {
            start: Instant::now(),
            phases,
        })
    }

    async fn end(self, ctls: &mut [Conn]) -> io::Result<Measured> {
        let secs = self.start.elapsed().as_secs_f64();
        let (mut mem, mut cpu, mut sys) = (Some(0.0), Some(0.0), Some(0.0));
        for (p, c) in self.phases.into_iter().zip(ctls.iter_mut()) {
            let m = p.end(c).await?;
            mem = mem.zip(m.mem_delta).map(|(a, b)| a + b);
            cpu = cpu.zip(m.cpu_us).map(|(a, b)| a + b);
            // Each node's kernel time, for the share over all nodes.
            sys = sys
                .zip(m.sys_share.zip(m.cpu_us))
                .map(|(a, (s, c))| a + s * c);
        }
        Ok(Measured {
            secs,
            mem_delta: mem,
            cpu_us: cpu,
            sys_share: sys.zip(cpu).filter(|&(_, c)| c > 0.0).map(|(s, c)| s / c),
        })
    }
}

/// `xadd-1024`: [`XADD_CLIENTS`] slot-aware clients, each sending batches of
/// [`XADD_PIPELINE`] `XADD bids:{i} * bidder <n> amount <n>` (i random in 0..1024) for the
/// timed phase. Latency: the batch round trip (all its nodes).
async fn xadd(ctx: &Ctx, cluster: &Cluster) -> io::Result<Sample> {
    let map = cluster.map(ctx).await?;
    let keys: Rc<Vec<String>> = Rc::new((0..XADD_KEYS).map(|i| format!("bids:{{{i}}}")).collect());
    let clients = ClusterConn::connect_many(&map, XADD_CLIENTS, ctx.timeout).await?;
    let mut ctls = cluster.ctls(ctx).await?;
    let phase = ClusterPhase::begin(&mut ctls).await?;
    let until = Instant::now() + ctx.timed();
    let mut set = JoinSet::new();
    for (i, mut cc) in clients.into_iter().enumerate() {
        let keys = Rc::clone(&keys);
        set.spawn_local(async move {
            let mut rng = Rng::new(i as u64 + 1);
            let (mut b, mut a) = (itoa::Buffer::new(), itoa::Buffer::new());
            let mut t = Tally::default();
            let mut batch: Vec<Cmd> = Vec::with_capacity(XADD_PIPELINE);
            while Instant::now() < until {
                batch.clear();
                for _ in 0..XADD_PIPELINE {
                    let key = &keys[rng.below(XADD_KEYS as u64) as usize];
                    let bidder = b.format(rng.below(1_000_000));
                    let amount = a.format(1 + rng.below(100_000));
                    batch.push(cmd(
                        key.as_bytes(),
                        &["XADD", key, "*", "bidder", bidder, "amount", amount],
                    ));
                }
                let sent = Instant::now();
                for r in cc.send(&batch).await? {
                    check(&r)?;
                }
                t.lat_ns.push(ns_since(sent));
                t.ops += XADD_PIPELINE as u64;
            }
            Ok(t)
        });
    }
    let t = join(set).await?;
    let m = phase.end(&mut ctls).await?;
    Ok(Sample::new(m, t.ops, t.ops, t.lat_ns))
}

/// The name of shard `i` of the auction. A consumer blocks on all its 32 shards with one
/// XREADGROUP, and a cluster serves a multi-key command only when every key is in one slot
/// (else `-CROSSSLOT`), so each key carries its consumer's hash tag: consumer `j` owns
/// shards `i % 32 == j`, named `auction:{c<j>}:<i>`, and all 32 hash to slot
/// CRC16("c<j>"). The 32 tags spread the consumers (and their shards' writes) over the
/// three primaries as CRC16 does, 11 / 13 / 8 with the slots `--cluster create` assigns
/// (slot 0-5460, 5461-10922, 10923-16383); a consumer's shards cannot be spread further
/// without splitting its XREADGROUP per node.
fn shard_key(i: usize) -> String {
    format!("auction:{{c{}}}:{i}", i % CONSUMERS)
}

/// `auction`: [`super::live::auction`] through slot-aware clients, shards named by
/// [`shard_key`]: 1,024 streams with group `g`, 32 consumers each blocking in
/// `XREADGROUP GROUP g c<j> COUNT 100 BLOCK 1000 STREAMS <its 32 shards> >...` on the
/// primary of its slot then XACKing what it got (one per shard, pipelined), 16 producers
/// XADDing one bid at a time to the shard its bidder hashes to. Entries = bids delivered;
/// latency: bid sent to bid received.
async fn auction(ctx: &Ctx, cluster: &Cluster) -> io::Result<Sample> {
    let map = cluster.map(ctx).await?;
    let keys: Rc<Vec<String>> = Rc::new((0..SHARDS).map(shard_key).collect());
    let mut setup = ClusterConn::connect(&map, ctx.timeout).await?;
    let groups: Vec<Cmd> = keys
        .iter()
        .map(|k| cmd(k.as_bytes(), &["XGROUP", "CREATE", k, "g", "$", "MKSTREAM"]))
        .collect();
    for r in setup.send(&groups).await? {
        check(&r)?;
    }
    let consumers = ClusterConn::connect_many(&map, CONSUMERS, ctx.timeout).await?;
    let producers = ClusterConn::connect_many(&map, PRODUCERS, ctx.timeout).await?;
    let epoch = ctx.epoch;
    let mut ctls = cluster.ctls(ctx).await?;
    let phase = ClusterPhase::begin(&mut ctls).await?;
    let until = Instant::now() + ctx.timed();
    let mut set = JoinSet::new();
    for (j, mut cc) in consumers.into_iter().enumerate() {
        let mine: Vec<String> = keys.iter().skip(j).step_by(CONSUMERS).cloned().collect();
        set.spawn_local(async move {
            let name = format!("c{j}");
            let mut args: Vec<&str> = vec!["XREADGROUP", "GROUP", "g", &name];
            args.extend(["COUNT", "100", "BLOCK", "1000", "STREAMS"]);
            args.extend(mine.iter().map(String::as_str));
            args.extend(std::iter::repeat_n(">", mine.len()));
            let mut t = Tally::default();
            while Instant::now() < until {
                let reply = cc.call(cmd(name.as_bytes(), &args)).await?;
                if Instant::now() >= until {
                    break;
                }
                t.ops += 1;
                let mut acks: Vec<Cmd> = Vec::new();
                t.take_delivered(&reply, epoch, |key, ack| acks.push(cmd(key, ack)));
                for r in cc.send(&acks).await? {
                    check(&r)?;
                }
                t.ops += acks.len() as u64;
            }
            Ok(t)
        });
    }
    for (i, mut cc) in producers.into_iter().enumerate() {
        let keys = Rc::clone(&keys);
        set.spawn_local(async move {
            let mut rng = Rng::new(0xB1D + i as u64);
            let mut t = Tally::default();
            let (mut b, mut a, mut ts) = (
                itoa::Buffer::new(),
                itoa::Buffer::new(),
                itoa::Buffer::new(),
            );
            while Instant::now() < until {
                let bidder = rng.below(1_000_000);
                // Fibonacci hashing of the bidder picks its shard (as in `auction/1024x32`).
                let shard = (bidder.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) as usize;
                let key = &keys[shard % SHARDS];
                cc.call(cmd(
                    key.as_bytes(),
                    &[
                        "XADD",
                        key,
                        "*",
                        "bidder",
                        b.format(bidder),
                        "amount",
                        a.format(1 + rng.below(100_000)),
                        "ts",
                        ts.format(micros(epoch)),
                    ],
                ))
                .await?;
                if Instant::now() < until {
                    t.ops += 1;
                }
            }
            Ok(t)
        });
    }
    tokio::time::sleep_until(until.into()).await;
    let m = phase.end(&mut ctls).await?;
    let t = join(set).await?;
    Ok(Sample::new(m, t.ops, t.delivered, t.lat_ns))
}

/// A hash tag for each of `slots` (`r<n>`, the first `n` whose CRC16 lands there), so a
/// key `...{r<n>}...` goes to exactly that slot.
fn tags_for_slots(slots: &[u16]) -> Result<Vec<String>, String> {
    let mut want: HashMap<u16, usize> = slots.iter().enumerate().map(|(i, &s)| (s, i)).collect();
    let mut out = vec![String::new(); slots.len()];
    for n in 0..10_000_000u32 {
        if want.is_empty() {
            return Ok(out);
        }
        let tag = format!("r{n}");
        if let Some(i) = want.remove(&key_hash_slot(tag.as_bytes())) {
            out[i] = tag;
        }
    }
    Err(format!("no hash tag found for slots {:?}", want.keys()))
}

/// `reshard-100k` (with `streams` × `per_stream` entries): the streams `reshard:{<tag>}`,
/// one in each of the `streams` lowest slots of the primary owning slot 0, each with
/// group `g` holding `pending` delivered entries; then `redis-cli --cluster reshard` of
/// exactly those slots (`--cluster-slots <streams>` from one source takes its lowest slots)
/// to the primary owning slot 16383. Entries/s over the time redis-cli runs; that time is
/// also the latency sample. The round fails unless afterwards the new owner holds every
/// stream with its length and its pending count, serves every moved slot, and the old
/// owner holds no key.
async fn reshard(
    ctx: &Ctx,
    cluster: &mut Cluster,
    streams: usize,
    per_stream: u64,
    pending: u64,
) -> io::Result<Sample> {
    let map = cluster.map(ctx).await?;
    let (Some(src), Some(dst)) = (map.node_of(0), map.node_of(CLUSTER_SLOTS as u16 - 1)) else {
        return Err(io::Error::other("slots 0 and 16383 have no primary"));
    };
    if src == dst {
        return Err(io::Error::other("one primary owns slots 0 and 16383"));
    }
    let (from, to) = (map.nodes[src].clone(), map.nodes[dst].clone());
    let slots: Vec<u16> = map.slots_of(src).take(streams).collect();
    if slots.len() < streams {
        return Err(io::Error::other(format!(
            "{} owns {} slots, fewer than {streams}",
            from.addr,
            slots.len()
        )));
    }
    let keys: Vec<String> = tags_for_slots(&slots)
        .map_err(io::Error::other)?
        .iter()
        .map(|t| format!("reshard:{{{t}}}"))
        .collect();
    let mut c = Conn::connect(&from.addr, ctx.timeout).await?;
    let count = pending.to_string();
    for key in &keys {
        load(&mut c, key.as_bytes(), per_stream, Ids::Auto).await?;
        c.ok(&["XGROUP", "CREATE", key, "g", "0"]).await?;
        c.ok(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "c1",
            "COUNT",
            &count,
            "STREAMS",
            key,
            ">",
        ])
        .await?;
    }
    let held = c.value(&["DBSIZE"]).await?;
    if held != Value::Int(streams as i64) {
        return Err(io::Error::other(format!(
            "{} holds {held:?} keys after loading {streams} streams",
            from.addr
        )));
    }
    let n = streams.to_string();
    let args = [
        "--cluster",
        "reshard",
        &from.addr,
        "--cluster-from",
        &from.id,
        "--cluster-to",
        &to.id,
        "--cluster-slots",
        &n,
        "--cluster-yes",
    ];
    let start = Instant::now();
    let (ok, text) = cluster.cli(&args, ctx.timeout * 10).await?;
    let nanos = ns_since(start);
    if !ok {
        return Err(io::Error::other(format!(
            "`redis-cli {}` failed after {:.2} s: {}",
            args.join(" "),
            nanos as f64 / 1e9,
            tail(&text, 6)
        )));
    }
    verify_reshard(ctx, &map, &keys, &slots, &from, &to, (per_stream, pending)).await?;
    Ok(Sample {
        ops: 0,
        entries: streams as u64 * per_stream,
        secs: nanos as f64 / 1e9,
        lat_ns: vec![nanos],
        mem_delta: None,
        cpu_us: None,
        sys_share: None,
        figures: Vec::new(),
    })
}

/// After a reshard: `from` has exactly `slots.len()` slots fewer than in `before`, `to`
/// serves every moved slot (its own CLUSTER SLOTS) and holds every key with `want` =
/// (XLEN, entries pending in group `g`); `from` holds no key.
async fn verify_reshard(
    ctx: &Ctx,
    before: &SlotMap,
    keys: &[String],
    slots: &[u16],
    from: &NodeRef,
    to: &NodeRef,
    (per_stream, pending): (u64, u64),
) -> io::Result<()> {
    let mut d = Conn::connect(&to.addr, ctx.timeout).await?;
    let after = SlotMap::from_ranges(&fetch_ranges(&mut d).await?).map_err(io::Error::other)?;
    let stray: Vec<u16> = slots
        .iter()
        .copied()
        .filter(|&s| after.node_of(s).and_then(|i| after.nodes.get(i)) != Some(to))
        .collect();
    let mut wrong = Vec::new();
    if !stray.is_empty() {
        wrong.push(format!("slots {stray:?} not served by {}", to.addr));
    }
    // `--cluster-slots N` from one source moves exactly its N lowest slots: no more.
    let left = |m: &SlotMap| {
        let i = m.nodes.iter().position(|n| n == from);
        i.map_or(0, |i| m.slots_of(i).count())
    };
    if left(&after) + slots.len() != left(before) {
        wrong.push(format!(
            "{} went from {} to {} slots, moving {} was asked",
            from.addr,
            left(before),
            left(&after),
            slots.len()
        ));
    }
    for key in keys {
        d.push(&["XLEN", key]);
        d.push(&["XPENDING", key, "g"]);
    }
    d.flush().await?;
    for key in keys {
        let len = parse(&d.reply().await?);
        let summary = parse(&d.reply().await?);
        let held = summary
            .as_ref()
            .and_then(|s| s.items().first().cloned())
            .unwrap_or(Value::Null);
        if len != Some(Value::Int(per_stream as i64)) || held != Value::Int(pending as i64) {
            wrong.push(format!(
                "{key} on {}: XLEN {len:?} (want {per_stream}), pending {held:?} (want \
                 {pending})",
                to.addr
            ));
        }
    }
    let mut s = Conn::connect(&from.addr, ctx.timeout).await?;
    let left = s.value(&["DBSIZE"]).await?;
    if left != Value::Int(0) {
        wrong.push(format!("{} still holds {left:?} keys", from.addr));
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        let n = wrong.len();
        wrong.truncate(5);
        Err(io::Error::other(format!(
            "after the reshard, {n} problem(s): {}",
            wrong.join("; ")
        )))
    }
}

/// `failover`: SIGKILL of the primary owning slot 0, then polls every survivor (CLUSTER
/// INFO, CLUSTER SLOTS, and ROLE on the replica) until each reports `cluster_state:ok` with
/// slot 0 served by the killed primary's replica, and the replica is `master`. The time to
/// the last survivor is the round's time; each survivor's time is a latency sample.
async fn failover(ctx: &Ctx, cluster: &mut Cluster) -> io::Result<Sample> {
    let ranges = cluster.ranges(ctx).await?;
    let first = ranges
        .iter()
        .find(|r| r.start == 0)
        .ok_or_else(|| io::Error::other("no range holds slot 0"))?;
    let victim = first.primary.clone();
    let victim_node = cluster
        .nodes
        .iter()
        .position(|n| n.addr() == victim.addr)
        .ok_or_else(|| io::Error::other(format!("{} is none of our nodes", victim.addr)))?;
    // The replica by its own INFO replication: CLUSTER SLOTS lists a primary's replicas
    // only once the node asked has learnt of them by gossip (Redis 7.0 listed none for
    // slot 0 in one round here, seconds after --cluster check was clean).
    let victim_port = cluster.nodes[victim_node].port.to_string();
    let mut replica = None;
    for n in &cluster.nodes {
        let mut c = Conn::connect(&n.addr(), ctx.timeout).await?;
        let info = c.ok(&["INFO", "replication"]).await?;
        if info_field(&info, "role") == Some("slave")
            && info_field(&info, "master_port") == Some(victim_port.as_str())
        {
            replica = Some(n.addr());
        }
    }
    let replica = replica.ok_or_else(|| {
        io::Error::other(format!(
            "no node is a replica of the primary {}",
            victim.addr
        ))
    })?;
    let mut survivors: Vec<(String, Conn)> = Vec::with_capacity(NODES - 1);
    for (i, n) in cluster.nodes.iter().enumerate() {
        if i != victim_node {
            survivors.push((n.addr(), Conn::connect(&n.addr(), ctx.timeout).await?));
        }
    }
    // Out of the cluster's list, so an error below does not blame the node killed on
    // purpose (`Cluster::explain` quotes the first node that has exited); its directory
    // goes when it is dropped at the end.
    let mut killed = cluster.nodes.remove(victim_node);
    let start = Instant::now();
    killed.kill()?;
    let deadline = start + ctx.timeout;
    let mut done: Vec<Option<u64>> = vec![None; survivors.len()];
    let mut seen: Vec<String> = vec![String::new(); survivors.len()];
    while done.iter().any(Option::is_none) {
        for (k, (addr, c)) in survivors.iter_mut().enumerate() {
            if done[k].is_some() {
                continue;
            }
            let info = c.ok(&["CLUSTER", "INFO"]).await?;
            let state = info_field(&info, "cluster_state")
                .unwrap_or("?")
                .to_string();
            let ranges = fetch_ranges(c).await?;
            let owner = ranges
                .iter()
                .find(|r| r.start == 0)
                .map_or("nobody".to_string(), |r| r.primary.addr.clone());
            let mut converged = state == "ok" && owner == replica;
            seen[k] = format!("{addr}: cluster_state:{state}, slot 0 on {owner}");
            if *addr == replica {
                let role = c.value(&["ROLE"]).await?;
                let role = role.items().first().map(|r| r.bytes().to_vec());
                converged &= role.as_deref() == Some(&b"master"[..]);
                seen[k].push_str(&format!(
                    ", ROLE {}",
                    String::from_utf8_lossy(role.as_deref().unwrap_or(b"?"))
                ));
            }
            if converged {
                done[k] = Some(ns_since(start));
            }
        }
        if done.iter().any(Option::is_none) {
            if Instant::now() > deadline {
                let waiting: Vec<&str> = done
                    .iter()
                    .zip(&seen)
                    .filter(|(d, _)| d.is_none())
                    .map(|(_, s)| s.as_str())
                    .collect();
                return Err(io::Error::other(format!(
                    "{:?} after killing the primary {} the failover to {} is not done: {}",
                    ctx.timeout,
                    victim.addr,
                    replica,
                    waiting.join("; ")
                )));
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }
    let lat: Vec<u64> = done.into_iter().flatten().collect();
    let secs = lat.iter().copied().max().unwrap_or(0) as f64 / 1e9;
    Ok(Sample {
        ops: 0,
        entries: 0,
        secs,
        lat_ns: lat,
        mem_delta: None,
        cpu_us: None,
        sys_share: None,
        figures: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::Str(s.as_bytes().to_vec())
    }

    fn node(ip: &str, port: i64, id: &str) -> Value {
        Value::Array(vec![
            bulk(ip),
            Value::Int(port),
            bulk(id),
            Value::Array(vec![]),
        ])
    }

    /// A Redis 7.0 shaped reply: three ranges, one replica each, ranges out of order.
    fn three_primaries() -> Value {
        let range = |a: i64, b: i64, p: i64, r: i64| {
            Value::Array(vec![
                Value::Int(a),
                Value::Int(b),
                node("127.0.0.1", p, &format!("id{p}")),
                node("127.0.0.1", r, &format!("id{r}")),
            ])
        };
        Value::Array(vec![
            range(5461, 10922, 7002, 7005),
            range(0, 5460, 7001, 7004),
            range(10923, 16383, 7003, 7006),
        ])
    }

    #[test]
    fn cluster_slots_reply_becomes_a_slot_map() {
        let ranges = parse_slots(&three_primaries(), HOST).expect("parses");
        assert_eq!(ranges.len(), 3);
        assert_eq!((ranges[1].start, ranges[1].end), (0, 5460));
        assert_eq!(ranges[1].primary.addr, "127.0.0.1:7001");
        assert_eq!(ranges[1].primary.id, "id7001");
        assert_eq!(ranges[1].replicas[0].addr, "127.0.0.1:7004");
        let map = SlotMap::from_ranges(&ranges).expect("covers every slot");
        let addr = |slot| map.node_of(slot).map(|i| map.nodes[i].addr.as_str());
        assert_eq!(addr(0), Some("127.0.0.1:7001"));
        assert_eq!(addr(5460), Some("127.0.0.1:7001"));
        assert_eq!(addr(5461), Some("127.0.0.1:7002"));
        assert_eq!(addr(16383), Some("127.0.0.1:7003"));
        assert_eq!(map.nodes.len(), 3);
        let first = map.slots_of(map.node_of(0).expect("owned")).take(3);
        assert_eq!(first.collect::<Vec<_>>(), vec![0, 1, 2]);
        // Two ranges of one primary share its index.
        let split = Value::Array(vec![
            Value::Array(vec![Value::Int(0), Value::Int(99), node("", 7001, "a")]),
            Value::Array(vec![
                Value::Int(100),
                Value::Int(16283),
                node("?", 7002, "b"),
            ]),
            Value::Array(vec![
                Value::Int(16284),
                Value::Int(16383),
                node("", 7001, "a"),
            ]),
        ]);
        let map = SlotMap::from_ranges(&parse_slots(&split, HOST).expect("parses"))
            .expect("covers every slot");
        assert_eq!(map.nodes.len(), 2);
        assert_eq!(map.nodes[1].addr, "127.0.0.1:7002");
        assert_eq!(map.node_of(16383), map.node_of(0));
        assert_eq!(map.slots_of(0).count(), 200);
        // Gaps, bad ranges and bad shapes are errors, not panics.
        let gap = Value::Array(vec![Value::Array(vec![
            Value::Int(0),
            Value::Int(100),
            node("127.0.0.1", 7001, "a"),
        ])]);
        let ranges = parse_slots(&gap, HOST).expect("parses");
        assert!(SlotMap::from_ranges(&ranges).is_err_and(|e| e.contains("slot 101")));
        for bad in [
            Value::Int(1),
            Value::Array(vec![Value::Array(vec![Value::Int(5), Value::Int(1)])]),
            Value::Array(vec![Value::Array(vec![Value::Int(0), Value::Int(16384)])]),
            Value::Array(vec![Value::Array(vec![Value::Int(0), Value::Int(1)])]),
            Value::Array(vec![Value::Array(vec![
                Value::Int(0),
                Value::Int(1),
                Value::Array(vec![bulk("h"), Value::Int(70000)]),
            ])]),
        ] {
            assert!(parse_slots(&bad, HOST).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_batch_splits_by_owner_in_order() {
        let map = SlotMap::from_ranges(&parse_slots(&three_primaries(), HOST).expect("parses"))
            .expect("map");
        // nodes: 7002 (first in the reply), 7001, 7003.
        let keys = ["bids:{0}", "bids:{1}", "bids:{2}", "bids:{3}", "bids:{4}"];
        let slots: Vec<u16> = keys.iter().map(|k| key_hash_slot(k.as_bytes())).collect();
        let groups = split_by_node(&slots, &map).expect("all owned");
        assert_eq!(groups.len(), 3);
        let mut all: Vec<usize> = groups.concat();
        all.sort_unstable();
        assert_eq!(all, vec![0, 1, 2, 3, 4]);
        for (node, group) in groups.iter().enumerate() {
            assert!(group.windows(2).all(|w| w[0] < w[1]), "batch order kept");
            for &pos in group {
                assert_eq!(map.node_of(slots[pos]), Some(node));
            }
        }
        // Slots 13907, 9842, 5649, 1584, 14039: nodes 7003, 7002, 7002, 7001, 7003.
        assert_eq!(slots, vec![13907, 9842, 5649, 1584, 14039]);
        assert_eq!(groups, vec![vec![1, 2], vec![3], vec![0, 4]]);
        assert!(split_by_node(&[], &map).is_ok_and(|g| g.iter().all(Vec::is_empty)));
    }

    #[test]
    fn moved_redirects_parse() {
        assert_eq!(
            parse_moved(b"-MOVED 3999 127.0.0.1:6381\r\n", HOST),
            Some((3999, "127.0.0.1:6381".to_string()))
        );
        assert_eq!(
            parse_moved(b"-MOVED 0 :7001\r\n", "10.1.1.1"),
            Some((0, "10.1.1.1:7001".to_string()))
        );
        assert_eq!(parse_moved(b"-ASK 3999 127.0.0.1:6381\r\n", HOST), None);
        assert_eq!(parse_moved(b"-MOVED 16384 127.0.0.1:1\r\n", HOST), None);
        assert_eq!(parse_moved(b"-MOVED x 127.0.0.1:1\r\n", HOST), None);
        assert_eq!(parse_moved(b"-MOVED 1\r\n", HOST), None);
        assert_eq!(parse_moved(b"+OK\r\n", HOST), None);
        assert_eq!(parse_moved(b"$5\r\nMOVED\r\n", HOST), None);
    }

    #[test]
    fn tags_land_in_their_slots_and_auction_shards_share_their_consumers_slot() {
        let slots: Vec<u16> = (0..100).chain([5000, 16383]).collect();
        let tags = tags_for_slots(&slots).expect("found");
        for (tag, &slot) in tags.iter().zip(&slots) {
            assert_eq!(key_hash_slot(format!("reshard:{{{tag}}}").as_bytes()), slot);
        }
        for i in [0, 31, 32, 1023] {
            let j = i % CONSUMERS;
            assert_eq!(
                key_hash_slot(shard_key(i).as_bytes()),
                key_hash_slot(format!("c{j}").as_bytes())
            );
        }
        // How the 32 consumer tags fall on the slots --cluster create assigns.
        let mut per_primary = [0; 3];
        for j in 0..CONSUMERS {
            let slot = key_hash_slot(format!("c{j}").as_bytes());
            per_primary[usize::from(slot > 5460) + usize::from(slot > 10922)] += 1;
        }
        assert_eq!(per_primary, [11, 13, 8]);
    }

    /// Runs `body` with the context of a tiny-size round on real Redis nodes, on a
    /// single-threaded runtime as the tool does.
    fn on_redis_nodes<F: std::future::Future<Output = ()>>(body: impl FnOnce(Ctx, Program) -> F) {
        let redis = Program::redis().expect("the cluster workloads compare with redis-server");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let local = tokio::task::LocalSet::new();
        let ctx = Ctx {
            addr: redis.name.clone(),
            local: true,
            scale: 0.01,
            timeout: Duration::from_secs(20),
            epoch: Instant::now(),
            spawn: Some(redis.clone()),
            sync_entries: 0,
            side: "A",
        };
        local.block_on(&rt, body(ctx, redis));
    }

    // Every variant on a cluster of real Redis nodes at a tiny size (the tool's own check;
    // streamd nodes go through the same code with `--only cluster`), one test each so they
    // run side by side: each starts its own cluster and mostly waits on its timers.

    #[test]
    fn an_xadd_round_on_a_redis_cluster_measures() {
        on_redis_nodes(|ctx, _| async move {
            let s = run(&ctx, Bench::Xadd).await.expect("xadd round");
            assert!(s.ops > 0 && s.ops % XADD_PIPELINE as u64 == 0, "{}", s.ops);
            assert!(s.cpu_us.is_some_and(|c| c > 0.0));
        });
    }

    #[test]
    fn an_auction_round_on_a_redis_cluster_measures() {
        on_redis_nodes(|ctx, _| async move {
            let s = run(&ctx, Bench::Auction).await.expect("auction round");
            assert!(s.entries > 0 && !s.lat_ns.is_empty());
        });
    }

    #[test]
    fn a_failover_round_on_a_redis_cluster_measures() {
        on_redis_nodes(|ctx, _| async move {
            let s = run(&ctx, Bench::Failover).await.expect("failover round");
            assert_eq!(s.lat_ns.len(), NODES - 1);
            assert!(s.secs > 0.0);
        });
    }

    /// The client follows -MOVED from a map that puts every slot on one primary, and a
    /// reshard round measures.
    #[test]
    fn redirects_are_followed_and_a_reshard_round_measures_on_a_redis_cluster() {
        on_redis_nodes(|ctx, redis| async move {
            let mut cluster = Cluster::start(&ctx, &redis).await.expect("cluster");
            let map = cluster.map(&ctx).await.expect("map");
            let wrong = SlotMap {
                owner: vec![0; CLUSTER_SLOTS],
                nodes: map.nodes.clone(),
            };
            let mut cc = ClusterConn::connect(&wrong, ctx.timeout)
                .await
                .expect("connect");
            let batch: Vec<Cmd> = (0..64)
                .map(|i| {
                    let k = format!("moved:{{{i}}}");
                    cmd(k.as_bytes(), &["XADD", &k, "*", "f", "v"])
                })
                .collect();
            let replies = cc.send(&batch).await.expect("redirects followed");
            assert_eq!(replies.len(), 64);
            assert!(replies.iter().all(|r| check(r).is_ok()));
            let owner = |m: &SlotMap, s: u16| m.node_of(s).map(|i| m.nodes[i].addr.clone());
            assert!((0..CLUSTER_SLOTS as u16).all(|s| owner(&cc.map, s) == owner(&map, s)));
            let mut check_conn = ClusterConn::connect(&map, ctx.timeout)
                .await
                .expect("connect");
            // Each entry landed once, on its slot's owner; then the keys go, so the
            // reshard below starts from an empty source.
            for i in 0..64 {
                let k = format!("moved:{{{i}}}");
                let len = check_conn
                    .call(cmd(k.as_bytes(), &["XLEN", &k]))
                    .await
                    .expect("XLEN");
                assert_eq!(len, Value::Int(1), "{k}");
                check_conn
                    .call(cmd(k.as_bytes(), &["DEL", &k]))
                    .await
                    .expect("DEL");
            }
            let s = reshard(&ctx, &mut cluster, 10, 100, 10)
                .await
                .expect("reshard round");
            assert_eq!((s.entries, s.lat_ns.len()), (1000, 1));
        });
    }

    #[test]
    fn check_output_must_be_clean() {
        let ok = "127.0.0.1:7001 (a...) -> 0 keys | 5461 slots | 1 slaves.\n\
                  [OK] All nodes agree about slots configuration.\n\
                  >>> Check for open slots...\n>>> Check slots coverage...\n\
                  [OK] All 16384 slots covered.\n";
        assert!(check_is_clean(ok));
        assert!(!check_is_clean(&format!(
            "{ok}[WARNING] Node 127.0.0.1:7001 has slots in importing state 12.\n"
        )));
        assert!(!check_is_clean(&ok.replace("All 16384", "Not all 16384")));
        assert!(!check_is_clean(""));
        assert_eq!(tail("a\n\nb\nc\n", 2), "b | c");
        assert_eq!(
            tail(
                "x\n\u{1b}[31;1mNode replied with error:\n ERR no\n\u{1b}[0m\n",
                2
            ),
            "Node replied with error: | ERR no"
        );
    }
}
