//! The workloads: each is a small async function that sets its data up on a flushed
//! server, measures one [`Phase`], and returns a [`Sample`]. The registry [`all`] names
//! every variant (`family/variant`), which `--only` selects by family or full name.
//!
//! Sizes are the full sizes (1M entries, 100k PEL, 100k streams) times `--scale`;
//! timed phases last [`TIMED_SECS`] times `--scale` (at least half a second).
//!
//! The `repl/*`, `cluster/*` and `tiering/*` families are the exception to "a flushed
//! server": they start their own servers every round (streamd for A; `redis-server` for B,
//! or for `tiering/*` the same streamd with tiering off), and run only when named
//! ([`OWN_SERVERS`]).

mod bitmaps;
mod cluster;
mod geo;
mod groups;
mod hyperloglog;
mod lifecycle;
mod live;
mod memory;
mod pubsub;
mod read;
mod replication;
mod syncrepl;
mod tiering;
mod types;
mod write;

use std::io;
use std::time::{Duration, Instant};

use crate::client::{Conn, info_field};
use crate::measure::{Phase, Rng, Sample};

pub use replication::Program;

/// Length of a timed phase at scale 1.
pub const TIMED_SECS: f64 = 3.0;

/// Where and how big: what every workload function receives.
pub struct Ctx {
    /// `host:port` of the server under test.
    pub addr: String,
    /// Whether the server runs on this machine (then its CPU time is read from `/proc`).
    pub local: bool,
    /// Size factor (see the module doc).
    pub scale: f64,
    /// Bound on every network wait.
    pub timeout: Duration,
    /// Origin of the microsecond timestamps carried inside entries.
    pub epoch: Instant,
    /// The server program `repl/*` and `cluster/*` start (`addr` is then only a label).
    pub spawn: Option<replication::Program>,
    /// Entries loaded before a `repl/fullsync-*` (not scaled).
    pub sync_entries: u64,
    /// Which side of the comparison this round runs: `A` or `B` (`tiering/*` starts the
    /// same program for both, with tiering on for A and off for B).
    pub side: &'static str,
}

impl Ctx {
    /// `full` scaled, at least `min`.
    pub fn n(&self, full: u64, min: u64) -> u64 {
        ((full as f64 * self.scale).round() as u64).max(min)
    }

    /// The length of a timed phase.
    pub fn timed(&self) -> Duration {
        Duration::from_secs_f64((TIMED_SECS * self.scale).max(0.5))
    }

    /// One new connection.
    pub async fn conn(&self) -> io::Result<Conn> {
        Conn::connect(&self.addr, self.timeout).await
    }

    /// `n` new connections.
    pub async fn conns(&self, n: usize) -> io::Result<Vec<Conn>> {
        Conn::connect_many(&self.addr, n, self.timeout).await
    }

    /// A control connection to an emptied server, once the connections of the previous
    /// round are gone (waits at most two seconds for that: someone else may be connected).
    pub async fn fresh(&self) -> io::Result<Conn> {
        let mut ctl = self.conn().await?;
        ctl.ok(&["FLUSHALL"]).await?;
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            let info = ctl.ok(&["INFO", "clients"]).await?;
            if info_field(&info, "connected_clients").is_none_or(|n| n == "1") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(ctl)
    }

    /// Starts a measured phase.
    pub async fn begin(&self, ctl: &mut Conn) -> io::Result<Phase> {
        Phase::begin(ctl, self.local).await
    }
}

/// Which operation a `pel/*` variant measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PelOp {
    /// XACK of one pending ID per command, random order.
    Xack,
    /// XCLAIM of one pending ID per command to another consumer, random order.
    Xclaim,
    /// XPENDING extended form, 10 entries from a random start.
    Xpending,
    /// XAUTOCLAIM COUNT 100 scans over the whole PEL.
    Xautoclaim,
}

/// What a variant runs, with its parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// XADD from `clients` connections, `pipeline` deep, over `keys` streams, optionally
    /// `MAXLEN ~ maxlen`.
    Xadd {
        /// Connections.
        clients: usize,
        /// Commands per write.
        pipeline: usize,
        /// Streams written, chosen at random per command.
        keys: u64,
        /// `MAXLEN ~` bound, if any.
        maxlen: Option<u64>,
    },
    /// XRANGE with COUNT `count` from a random start.
    Xrange {
        /// Entries per call.
        count: u64,
    },
    /// XREADGROUP COUNT 100 drain of a loaded stream.
    Drain {
        /// With NOACK (no PEL).
        noack: bool,
    },
    /// 70/30 XADD / blocked XREADGROUP from 1,000 consumer connections.
    ProduceConsume,
    /// XREADGROUP → XAUTOCLAIM → XACK cycles.
    AutoclaimCycle,
    /// One PEL operation on a 100k PEL.
    Pel(PelOp),
    /// XREADGROUP over 1,000 streams per call.
    ManyRead,
    /// 100k one-entry streams: memory per stream.
    ManyMem,
    /// The sharded auction.
    Auction,
    /// 1M-entry load: bytes per entry.
    MemEntries,
    /// 100k-entry PEL: bytes per pending entry.
    MemPending,
    /// PUBLISH to `subscribers` connections of one channel: deliveries per second.
    Fanout {
        /// Connections subscribed to the channel.
        subscribers: usize,
    },
    /// Subscribing: bytes per subscription.
    SubsMem {
        /// Connections.
        clients: usize,
        /// Subscriptions per connection.
        per_client: u64,
        /// Each connection its own channels (else all share them).
        distinct: bool,
    },
    /// XADD throughput while `readers` connections block, then their wake-up latency.
    BlockedReaders {
        /// Connections blocked in `XREAD BLOCK 0`, one key each.
        readers: usize,
    },
    /// Replication, on servers the workload starts itself.
    Repl(replication::Repl),
    /// A 3-primary, 3-replica cluster, on nodes the workload starts itself.
    Cluster(cluster::Bench),
    /// XADD to a stream keeping a time window: MAXAGE on streamd, the producer's MINID
    /// on Redis.
    XaddMaxAge {
        /// Connections.
        clients: usize,
        /// Commands per write.
        pipeline: usize,
    },
    /// A 1M-entry stream expiring whole at once: the longest pause while it goes.
    Sweep,
    /// A HyperLogLog command's throughput (and memory, for PFADD).
    Hll(hyperloglog::HllOp),
    /// One of the bitmap commands (`bitmaps.rs`), `pipeline` deep.
    Bitmap(bitmaps::BitmapOp, usize),
    /// Memory per element of one of the other Redis types.
    TypesMem {
        /// Which type.
        kind: types::TypeKind,
        /// Keys loaded.
        keys: u64,
        /// Elements per key.
        per_key: u64,
    },
    /// One of the geo commands, pipelined.
    Geo(geo::GeoOp),
    /// Tiered streams, on servers the workload starts itself (A tiering on, B off).
    Tiering(tiering::Bench),
    /// Synchronous replication, on servers the workload starts itself (A sync, B async).
    SyncRepl(syncrepl::Load),
}

/// One named workload variant.
#[derive(Debug, Clone)]
pub struct Workload {
    /// `family/variant`.
    pub name: String,
    /// What the memory column counts per entry (`entry`, `pending`, `stream`).
    pub mem_unit: &'static str,
    /// What the latency samples time.
    pub latency: &'static str,
    /// Parameters.
    pub kind: Kind,
}

/// Every workload variant, in run order.
pub fn all() -> Vec<Workload> {
    let w = |name: String, mem_unit, latency, kind| Workload {
        name,
        mem_unit,
        latency,
        kind,
    };
    let mut out = Vec::new();
    for (clients, pipeline, keys) in [
        (1, 1, 1),
        (1, 32, 1),
        (50, 1, 1),
        (50, 32, 1),
        (1, 1, 1024),
        (1, 32, 1024),
        (50, 1, 1024),
        (50, 32, 1024),
    ] {
        out.push(w(
            format!("xadd/c{clients}-p{pipeline}-k{keys}"),
            "entry",
            "batch",
            Kind::Xadd {
                clients,
                pipeline,
                keys,
                maxlen: None,
            },
        ));
    }
    out.push(w(
        "xadd-maxlen/c50-p1".into(),
        "entry",
        "batch",
        Kind::Xadd {
            clients: 50,
            pipeline: 1,
            keys: 1,
            maxlen: Some(1000),
        },
    ));
    for count in [10, 100] {
        out.push(w(
            format!("xrange/count{count}"),
            "entry",
            "batch",
            Kind::Xrange { count },
        ));
    }
    for (v, noack) in [("count100", false), ("count100-noack", true)] {
        out.push(w(
            format!("xreadgroup-drain/{v}"),
            "pending",
            "batch",
            Kind::Drain { noack },
        ));
    }
    out.push(w(
        "produce-consume/c1000".into(),
        "entry",
        "xadd-to-delivery",
        Kind::ProduceConsume,
    ));
    out.push(w(
        "xautoclaim-cycle/count100".into(),
        "entry",
        "batch",
        Kind::AutoclaimCycle,
    ));
    for (v, op) in [
        ("xack", PelOp::Xack),
        ("xclaim", PelOp::Xclaim),
        ("xpending", PelOp::Xpending),
        ("xautoclaim", PelOp::Xautoclaim),
    ] {
        out.push(w(format!("pel/{v}"), "entry", "batch", Kind::Pel(op)));
    }
    out.push(w(
        "many-streams/xreadgroup-1000".into(),
        "pending",
        "batch",
        Kind::ManyRead,
    ));
    out.push(w(
        "many-streams/mem-100k".into(),
        "stream",
        "batch",
        Kind::ManyMem,
    ));
    out.push(w(
        "auction/1024x32".into(),
        "bid",
        "bid-to-consumer",
        Kind::Auction,
    ));
    out.push(w("mem/entries".into(), "entry", "batch", Kind::MemEntries));
    out.push(w(
        "mem/pending".into(),
        "pending",
        "batch",
        Kind::MemPending,
    ));
    for readers in [100, 1000, 10_000] {
        out.push(w(
            format!("blocked-readers/r{readers}"),
            "entry",
            "wake-up",
            Kind::BlockedReaders { readers },
        ));
    }
    for subscribers in [1, 100, 10_000] {
        out.push(w(
            format!("pubsub/fanout-s{subscribers}"),
            "message",
            "publish-to-delivery",
            Kind::Fanout { subscribers },
        ));
    }
    for (v, clients, per_client, distinct) in [
        ("mem-1x100k", 1, 100_000, true),
        ("mem-10kx1", 10_000, 1, false),
        ("mem-100x1k", 100, 1000, false),
    ] {
        out.push(w(
            format!("pubsub/{v}"),
            "subscription",
            "batch",
            Kind::SubsMem {
                clients,
                per_client,
                distinct,
            },
        ));
    }
    for (clients, pipeline) in [(1, 1), (50, 1), (1, 32)] {
        out.push(w(
            format!("lifecycle/xadd-maxage-c{clients}-p{pipeline}"),
            "entry",
            "batch",
            Kind::XaddMaxAge { clients, pipeline },
        ));
    }
    out.push(w(
        "lifecycle/sweep-1m".into(),
        "entry",
        "ping-during-sweep",
        Kind::Sweep,
    ));
    for &(name, kind) in types::TypeKind::ALL {
        let shapes: &[(&str, u64, u64)] = if kind.is_string() {
            &[("100k", 100_000, 1)]
        } else {
            &[("small", 10_000, 10), ("large", 1, 100_000)]
        };
        for &(shape, keys, per_key) in shapes {
            out.push(w(
                format!("types/mem-{name}-{shape}"),
                "element",
                "batch",
                Kind::TypesMem {
                    kind,
                    keys,
                    per_key,
                },
            ));
        }
    }
    for &(v, op) in geo::GeoOp::ALL {
        out.push(w(format!("geo/{v}"), "point", "batch", Kind::Geo(op)));
    }
    for &(v, op) in hyperloglog::VARIANTS {
        out.push(w(format!("hll/{v}"), "element", "batch", Kind::Hll(op)));
    }
    for &(v, op, pipeline) in bitmaps::BitmapOp::ALL {
        let unit = if op == bitmaps::BitmapOp::Memory {
            "bit"
        } else {
            "command"
        };
        out.push(w(
            format!("bitmaps/{v}"),
            unit,
            "batch",
            Kind::Bitmap(op, pipeline),
        ));
    }
    for (v, r, latency) in replication::variants() {
        out.push(w(format!("repl/{v}"), "entry", latency, Kind::Repl(r)));
    }
    for (v, b, latency, unit) in cluster::variants() {
        out.push(w(format!("cluster/{v}"), unit, latency, Kind::Cluster(b)));
    }
    for (v, b, latency, unit) in tiering::variants() {
        out.push(w(format!("tiering/{v}"), unit, latency, Kind::Tiering(b)));
    }
    for (v, load, latency) in syncrepl::variants() {
        out.push(w(
            format!("syncrepl/{v}"),
            "entry",
            latency,
            Kind::SyncRepl(load),
        ));
    }
    out
}

/// Families that start their own servers (so ignore `--a`/`--b`) and run only when named
/// in `--only`: a default run stays the one against the given servers.
pub const OWN_SERVERS: &[&str] = &["repl", "cluster", "tiering", "syncrepl"];

/// Families of [`OWN_SERVERS`] whose side B is `redis-server`; the others compare two
/// configurations of streamd.
pub const AGAINST_REDIS: &[&str] = &["repl", "cluster"];

/// How the two sides of a family that runs streamd against itself are labelled: what A
/// and B turn on or off.
pub fn side_labels(name: &str) -> (&'static str, &'static str) {
    match family(name) {
        "syncrepl" => (" (sync replication)", " (async replication)"),
        _ => (" (tiering on)", " (tiering off)"),
    }
}

/// The family of a workload name or `--only` entry (`tiering` of `tiering/xadd`).
pub fn family(name: &str) -> &str {
    name.split('/').next().unwrap_or(name)
}

/// Whether the workload `name` (or the `--only` entry naming it) belongs to a family of
/// [`OWN_SERVERS`].
pub fn starts_own_servers(name: &str) -> bool {
    OWN_SERVERS.contains(&family(name))
}

/// Whether the workload `name` starts `redis-server` for side B ([`AGAINST_REDIS`]).
pub fn against_redis(name: &str) -> bool {
    AGAINST_REDIS.contains(&family(name))
}

/// Whether `name` is selected by the `--only` list (family or full names; empty = all).
pub fn selected(name: &str, only: &[String]) -> bool {
    only.is_empty()
        || only.iter().any(|o| {
            name == o
                || name
                    .strip_prefix(o.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
}

/// Runs one round of `w` against the server of `ctx`.
pub async fn run(w: &Workload, ctx: &Ctx) -> io::Result<Sample> {
    match w.kind {
        Kind::Xadd {
            clients,
            pipeline,
            keys,
            maxlen,
        } => write::xadd(ctx, clients, pipeline, keys, maxlen).await,
        Kind::Xrange { count } => read::xrange(ctx, count).await,
        Kind::Drain { noack } => read::drain(ctx, noack).await,
        Kind::ManyRead => read::many_streams_read(ctx).await,
        Kind::ManyMem => memory::many_streams_memory(ctx).await,
        Kind::ProduceConsume => live::produce_consume(ctx).await,
        Kind::Auction => live::auction(ctx).await,
        Kind::BlockedReaders { readers } => live::blocked_readers(ctx, readers).await,
        Kind::AutoclaimCycle => groups::autoclaim_cycle(ctx).await,
        Kind::Pel(op) => groups::pel(ctx, op).await,
        Kind::MemEntries => memory::entries(ctx).await,
        Kind::MemPending => memory::pending(ctx).await,
        Kind::Fanout { subscribers } => pubsub::fanout(ctx, subscribers).await,
        Kind::SubsMem {
            clients,
            per_client,
            distinct,
        } => pubsub::memory(ctx, clients, per_client, distinct).await,
        Kind::Repl(r) => replication::run(ctx, r).await,
        Kind::Cluster(b) => cluster::run(ctx, b).await,
        Kind::XaddMaxAge { clients, pipeline } => {
            lifecycle::xadd_maxage(ctx, clients, pipeline).await
        }
        Kind::Sweep => lifecycle::sweep(ctx).await,
        Kind::Bitmap(op, pipeline) => bitmaps::run(ctx, op, pipeline).await,
        Kind::TypesMem {
            kind,
            keys,
            per_key,
        } => types::memory(ctx, kind, keys, per_key).await,
        Kind::Geo(op) => geo::run(ctx, op).await,
        Kind::Hll(op) => hyperloglog::run(ctx, op).await,
        Kind::Tiering(b) => tiering::run(ctx, b).await,
        Kind::SyncRepl(load) => syncrepl::run(ctx, load).await,
    }
}

/// How a load names its entries. The choice matters for memory: a PEL (and the stream
/// index) is a radix tree over 16-byte big-endian IDs, and `1-0, 2-0, ...` (a new
/// millisecond per entry, sequence 0) shares fewer key bytes between neighbours than
/// server-generated IDs (many entries per millisecond), so Redis's PEL costs 148 bytes per
/// entry with the first and 84 with the second here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ids {
    /// `1-0`, `2-0`, ... (so a workload can name any entry).
    Seq,
    /// `*` (server-generated, as producers do).
    Auto,
}

/// Pushes `XADD key <id> bidder <int> amount <int>` (an auction bid, the entry shape used
/// throughout).
pub fn push_bid(conn: &mut Conn, key: &[u8], id: &[u8], rng: &mut Rng) {
    push_bid_trimmed(conn, key, &[], id, rng);
}

/// [`push_bid`] with trimming options (`MAXLEN ~ 1000`) between the key and the ID.
pub fn push_bid_trimmed(conn: &mut Conn, key: &[u8], trim: &[&[u8]], id: &[u8], rng: &mut Rng) {
    let mut b = itoa::Buffer::new();
    let mut a = itoa::Buffer::new();
    let bidder = b.format(rng.below(1_000_000));
    let amount = a.format(1 + rng.below(100_000));
    let mut args: Vec<&[u8]> = Vec::with_capacity(7 + trim.len());
    args.extend_from_slice(&[b"XADD", key]);
    args.extend_from_slice(trim);
    args.extend_from_slice(&[
        id,
        b"bidder",
        bidder.as_bytes(),
        b"amount",
        amount.as_bytes(),
    ]);
    conn.push(&args);
}

/// Loads `n` bids into `key`, pipelined 1,000 deep.
pub async fn load(conn: &mut Conn, key: &[u8], n: u64, ids: Ids) -> io::Result<()> {
    let mut rng = Rng::new(0x5EED);
    let mut id = itoa::Buffer::new();
    let mut next = 1;
    while next <= n {
        let end = (next + 1000).min(n + 1);
        for j in next..end {
            match ids {
                Ids::Auto => push_bid(conn, key, b"*", &mut rng),
                Ids::Seq => {
                    let mut text = id.format(j).as_bytes().to_vec();
                    text.extend_from_slice(b"-0");
                    push_bid(conn, key, &text, &mut rng);
                }
            }
        }
        conn.flush().await?;
        conn.skip((end - next) as usize).await?;
        next = end;
    }
    Ok(())
}

/// `XREADGROUP GROUP g <consumer> COUNT <count> [NOACK] STREAMS <key> >` until it
/// delivers nothing; returns (commands, entries delivered, per-command latencies).
pub async fn drain_group(
    conn: &mut Conn,
    key: &[u8],
    consumer: &[u8],
    count: u64,
    noack: bool,
) -> io::Result<(u64, u64, Vec<u64>)> {
    let count = count.to_string();
    let mut args: Vec<&[u8]> = vec![b"XREADGROUP", b"GROUP", b"g", consumer];
    args.extend_from_slice(&[b"COUNT", count.as_bytes()]);
    if noack {
        args.push(b"NOACK");
    }
    args.extend_from_slice(&[b"STREAMS", key, b">"]);
    let (mut ops, mut entries, mut lat) = (0, 0, Vec::new());
    loop {
        let sent = Instant::now();
        let reply = conn.value(&args).await?;
        lat.push(crate::measure::ns_since(sent));
        ops += 1;
        let n: usize = reply
            .items()
            .iter()
            .map(|s| s.items().get(1).map_or(0, |e| e.items().len()))
            .sum();
        if n == 0 {
            return Ok((ops, entries, lat));
        }
        entries += n as u64;
    }
}

/// FLUSHALL, `n` bids in `s` named as `ids` says, group `g` at 0.
pub async fn setup_group(ctx: &Ctx, n: u64, ids: Ids) -> io::Result<Conn> {
    let mut ctl = ctx.fresh().await?;
    load(&mut ctl, b"s", n, ids).await?;
    ctl.ok(&["XGROUP", "CREATE", "s", "g", "0"]).await?;
    Ok(ctl)
}

/// Writes `<prefix><n><suffix>` into `buf`, replacing what it held: a numbered name or
/// value for a command, built without allocating (loaders that build a batch and then
/// wait for its replies pay their own time in every round).
pub(crate) fn numbered(buf: &mut Vec<u8>, prefix: &[u8], n: u64, suffix: &[u8]) {
    buf.clear();
    buf.extend_from_slice(prefix);
    buf.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    buf.extend_from_slice(suffix);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_replaces_the_buffer_with_prefix_number_suffix() {
        let mut buf = b"something longer".to_vec();
        numbered(&mut buf, b"str:", 42, b"");
        assert_eq!(buf, b"str:42");
        numbered(&mut buf, b"", 7, b".5");
        assert_eq!(buf, b"7.5");
        numbered(&mut buf, b"e", u64::MAX, b"");
        assert_eq!(buf, format!("e{}", u64::MAX).as_bytes());
    }

    #[test]
    fn names_are_unique_and_selectable() {
        let ws = all();
        let mut names: Vec<&str> = ws.iter().map(|w| w.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ws.len());
        let only = |o: &[&str]| -> Vec<String> {
            let only: Vec<String> = o.iter().map(|s| s.to_string()).collect();
            ws.iter()
                .filter(|w| selected(&w.name, &only))
                .map(|w| w.name.clone())
                .collect()
        };
        assert_eq!(only(&["xadd"]).len(), 8);
        assert_eq!(only(&["xadd-maxlen"]), vec!["xadd-maxlen/c50-p1"]);
        assert_eq!(
            only(&["pel/xack", "mem"]),
            vec!["pel/xack", "mem/entries", "mem/pending"]
        );
        assert!(only(&["xad"]).is_empty());
        assert_eq!(
            only(&["cluster"]),
            vec![
                "cluster/xadd-1024",
                "cluster/auction",
                "cluster/reshard-100k",
                "cluster/failover"
            ]
        );
        assert!(starts_own_servers("cluster/failover") && starts_own_servers("cluster"));
        assert!(!starts_own_servers("auction/1024x32"));
        assert_eq!(
            only(&["tiering"]),
            vec![
                "tiering/xadd",
                "tiering/tail-consumers",
                "tiering/cold-scan",
                "tiering/restart"
            ]
        );
        assert!(starts_own_servers("tiering/xadd") && starts_own_servers("tiering"));
        assert!(against_redis("repl/wait1-r1") && against_redis("cluster"));
        assert!(!against_redis("tiering/restart") && !against_redis("xadd/c1-p1-k1"));
        assert_eq!(family("tiering/cold-scan"), "tiering");
        assert_eq!(only(&[]).len(), ws.len());
    }
}
