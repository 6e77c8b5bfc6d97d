//! The Prometheus endpoint (`metrics-port`): `GET /metrics` in the Prometheus text format
//! (0.0.4), with the metric names, labels and types of redis_exporter, so dashboards, alert
//! rules and autoscaler triggers written for an exporter beside Redis read streamd as is.
//!
//! ```text
//!  scrape ──► gather (core thread)                          encode (blocking pool)
//!             ┌──────────┐ yield ┌──────────┐ yield  …       Snapshot ──► prometheus-client
//!             │ borrow 1 │──────►│ borrow 2 │──────►         sort, dedup,   text encoder
//!             │ ≤ ~1 ms  │       │ ≤ ~1 ms  │                cap, encode ──► HTTP body
//!             └──────────┘       └──────────┘
//! ```
//!
//! The core is one thread, so a scrape must not hold it: the numbers are copied out of the
//! keyspace in slices ([`SLICE_BUDGET`] of work per borrow, walking each database's dict
//! with its SCAN cursor, which stays valid across the yields and across rehashing), then
//! the text is built on tokio's blocking pool, off the core thread. SCAN may return a key
//! twice when the dict grows between two slices; the encoder sorts the rows and drops
//! such repeats, so no series appears twice. Numbers of different slices may be up to a
//! few milliseconds apart, as with any exporter that runs XINFO stream by stream.
//!
//! Cardinality is bounded by `metrics-max-streams`: beyond it the per-stream, per-group
//! and per-consumer series of the remaining streams are left out, and
//! `streamd_metrics_dropped_streams` says how many were. Beyond redis_exporter's names,
//! the endpoint serves what an exporter cannot see cheaply: each group's oldest pending
//! delivery (the head of the delivery-time list, O(1)), each stream's memory (MEMORY
//! USAGE's figure plus its groups' PELs), the log's fsync count, time and longest fsync,
//! dead-lettered entries, the replicas counted good for `min-replicas-to-write`, and this
//! scrape's own longest core pause.
//!
//! A stream's memory is computed at scrape time: MEMORY USAGE walks the stream's nodes,
//! and one stream cannot be split across slices, so a big stream lengthens the slice
//! that reaches it by about 1.5 ms per million entries (1.1-1.7 ms for 10,000 nodes,
//! 1.5-2.2 ms for 28,000, in release on a busy 2-core machine).
//!
//! Which series a dashboard or alert may use is pinned by `tests/dashboards.rs`: it runs
//! every query of `conf/grafana/streamd.json` and `conf/prometheus/streamd-alerts.yml`
//! through a real Prometheus scraping this endpoint.

use super::listeners::{Accept, ListenerGroup, SharedListeners};
use crate::cluster::nodes_conf::NodeFlags;
use crate::core::replication::{LinkState, ReplicaState};
use crate::core::{Core, SharedCore, unix_ms};
use crate::persist::FsyncStats;
use crate::stream::Stream;
use crate::types::Value;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeCounterValue, EncodeGaugeValue, EncodeLabelSet, NoLabelSet,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::convert::Infallible;
use std::fmt::Write as _;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Work done per borrow of the core while gathering: a slice ends at the first dict bucket
/// boundary after this much time, so the longest pause is this plus one bucket's streams.
pub const SLICE_BUDGET: Duration = Duration::from_micros(500);

/// A request that sends no complete header within this long is dropped.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Binds `metrics-bind` (or the first `bind` address) on `metrics-port`; nothing when
/// `metrics-port` is 0.
pub fn bind(config: &crate::config::Config) -> std::io::Result<ListenerGroup> {
    let port = u16::try_from(config.get_i64("metrics-port")).unwrap_or(0);
    let own = config.get("metrics-bind").unwrap_or("").trim();
    let addr = if own.is_empty() {
        config.get("bind").unwrap_or("127.0.0.1")
    } else {
        own
    };
    let first = addr.split_whitespace().next().unwrap_or("127.0.0.1");
    let addr = first.trim_start_matches('-');
    let group = ListenerGroup::bind(&[addr], port, config.get_i64("tcp-backlog"))
        .map_err(|e| std::io::Error::new(e.kind(), format!("metrics-port {addr}:{port}: {e}")))?;
    if let Some(port) = group.port() {
        tracing::info!("metrics endpoint ready on http://{addr}:{port}/metrics");
    }
    Ok(group)
}

/// Binds the endpoint ([`bind`]) and serves scrapes in their own tasks, from whatever
/// listener the returned set holds (CONFIG SET `metrics-port` replaces it). A bind
/// failure is returned, so a server asked for metrics does not start without them.
pub fn start(core: &SharedCore) -> std::io::Result<SharedListeners> {
    let group = bind(&core.borrow().config)?;
    let set: SharedListeners = Rc::default();
    set.borrow_mut().set_plain(group);
    let core = core.clone();
    let accepting = set.clone();
    tokio::task::spawn_local(async move {
        loop {
            match Accept(&accepting).await {
                Ok((socket, _, _)) => serve_connection(socket, core.clone()),
                Err(e) => {
                    tracing::warn!(error = %e, "metrics accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
    });
    Ok(set)
}

/// Serves one HTTP/1.1 connection (keep-alive, as Prometheus uses) in its own task.
fn serve_connection(socket: tokio::net::TcpStream, core: SharedCore) {
    let _ = socket.set_nodelay(true);
    tokio::task::spawn_local(async move {
        let service = hyper::service::service_fn(move |req| respond(req, core.clone()));
        let served = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_TIMEOUT)
            .serve_connection(TokioIo::new(socket), service)
            .await;
        if let Err(e) = served {
            tracing::debug!(error = %e, "metrics connection ended");
        }
    });
}

/// `GET /metrics`: the exposition; `GET /`: a pointer to it; anything else 404 or 405.
async fn respond(
    req: Request<Incoming>,
    core: SharedCore,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path();
    let get = matches!(*req.method(), Method::GET | Method::HEAD);
    let reply = |status: StatusCode, body: String| {
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        r
    };
    Ok(match (get, path) {
        (true, "/metrics") => {
            let snapshot = gather(&core).await;
            match tokio::task::spawn_blocking(move || snapshot.into_text()).await {
                Ok(Ok(text)) => {
                    let mut r = reply(StatusCode::OK, text);
                    r.headers_mut().insert(
                        CONTENT_TYPE,
                        HeaderValue::from_static(
                            prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
                        ),
                    );
                    r
                }
                _ => reply(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "metrics encoding failed\n".into(),
                ),
            }
        }
        (true, "/") => reply(
            StatusCode::OK,
            "streamd metrics: GET /metrics (Prometheus text format)\n".into(),
        ),
        (false, "/metrics" | "/") => reply(
            StatusCode::METHOD_NOT_ALLOWED,
            "only GET is served\n".into(),
        ),
        _ => reply(StatusCode::NOT_FOUND, "not found; try /metrics\n".into()),
    })
}

// ---------------------------------------------------------------------------------------
// The snapshot: numbers copied out of the core, in slices
// ---------------------------------------------------------------------------------------

/// One consumer's numbers.
#[derive(Debug)]
struct ConsumerRow {
    name: String,
    pending: usize,
    /// ms since last seen (XINFO CONSUMERS `idle`).
    idle_ms: u64,
}

/// One group's numbers.
#[derive(Debug)]
struct GroupRow {
    name: String,
    consumers: Vec<ConsumerRow>,
    pending: usize,
    /// XINFO GROUPS `lag`; `None` when Redis would answer null.
    lag: Option<u64>,
    /// XINFO GROUPS `entries-read`; `None` when unknown.
    entries_read: Option<u64>,
    /// ms since the oldest owned pending entry was delivered; `None` with an empty PEL.
    oldest_pending_idle_ms: Option<u64>,
}

/// One stream's numbers.
#[derive(Debug)]
struct StreamRow {
    db: usize,
    key: String,
    length: u64,
    radix_tree_keys: usize,
    radix_tree_nodes: usize,
    last_generated_ms: u64,
    /// MEMORY USAGE of the key plus its groups' pending-entry lists, in bytes.
    memory_bytes: usize,
    groups: Vec<GroupRow>,
}

/// One command's INFO commandstats counters.
#[derive(Debug)]
struct CommandRow {
    name: &'static str,
    calls: u64,
    usec: u64,
    rejected: u64,
    failed: u64,
    /// INFO latencystats: (percentile label as Redis prints it, `99.9`; microseconds),
    /// one per `latency-tracking-info-percentiles`; empty while tracking is off.
    percentiles: Vec<(String, f64)>,
}

/// A replica's primary, as INFO replication shows it on the replica.
#[derive(Debug)]
struct MasterRow {
    host: String,
    port: String,
    /// `master_link_status:up`.
    link_up: bool,
    /// `master_last_io_seconds_ago`: -1 while the link is down, as Redis prints it.
    last_io_seconds_ago: i64,
    /// `master_sync_in_progress`.
    sync_in_progress: bool,
}

/// One connected replica, as INFO replication's `slaveN:` line shows it on the primary.
#[derive(Debug)]
struct ReplicaRow {
    ip: String,
    port: String,
    /// Redis's state name (`wait_bgsave`, `send_bulk`, `online`).
    state: &'static str,
    /// The offset the replica acknowledged.
    offset: u64,
    /// Seconds since its last acknowledgement once online, else 0 (Redis's `lag`).
    lag_seconds: u64,
}

/// Replication, as INFO replication shows it.
#[derive(Debug, Default)]
struct ReplRow {
    /// `Some` on a replica.
    master: Option<MasterRow>,
    replicas: Vec<ReplicaRow>,
    /// `master_repl_offset` (on a replica, the offset it has processed).
    offset: u64,
    /// Online replicas whose last ACK is within `min-replicas-max-lag` (what
    /// `min-replicas-to-write` compares with; refreshed by the replication cron).
    good_replicas: u64,
    /// The `min-replicas-to-write` setting (0 = off).
    min_replicas_to_write: u64,
    /// Synchronous replication (`min-sync-replicas`, core/syncrepl.rs).
    sync: SyncRow,
}

/// Synchronous replication's numbers (INFO replication's `sync_*` fields).
#[derive(Debug, Default)]
struct SyncRow {
    /// `min-sync-replicas` (0 = off).
    min: u64,
    /// Members of the sync set (on a primary).
    members: u64,
    /// On a replica: in its primary's sync set.
    member: bool,
    /// A primary restarted with the mode on and not confirmed yet.
    fenced_primary: bool,
    /// Replies held now, and the oldest one's age in seconds.
    held: u64,
    oldest_held_seconds: f64,
    /// Cumulative: batches held, timeouts, refused writes, refused promotions.
    held_total: u64,
    timeouts: u64,
    write_refusals: u64,
    promotion_refusals: u64,
}

/// CLUSTER INFO's numbers, on a node with `cluster-enabled yes`.
#[derive(Debug, Default)]
struct ClusterRow {
    state_ok: bool,
    /// Slots with an owner, and of those: owner fine, PFAIL, FAIL.
    slots: [usize; 4],
    known_nodes: usize,
    size: usize,
    current_epoch: u64,
}

/// Everything one scrape reports, owned, so it can be encoded on another thread.
#[derive(Debug, Default)]
struct Snapshot {
    clients: usize,
    blocked_clients: usize,
    used_memory: usize,
    /// Pub/Sub channels, patterns and shard channels with subscribers (INFO stats).
    pubsub: [usize; 3],
    commands: Vec<CommandRow>,
    /// (keys, keys with a TTL) per database.
    dbs: Vec<(usize, usize)>,
    streams: Vec<StreamRow>,
    /// Where the walk is: database and its dict's SCAN cursor.
    pos: (usize, u64),
    /// Streams were left out: the walk stopped at `max_streams`, or its last bucket
    /// carried it past and the encoder truncated; `total_streams` counts every key.
    capped: bool,
    max_streams: usize,
    total_streams: usize,
    fsync: Option<FsyncStats>,
    /// `redis_version`, `tcp_port`, `maxmemory_policy` (for `redis_instance_info`).
    version: String,
    tcp_port: u16,
    maxmemory_policy: String,
    /// `maxmemory` in bytes (0 = no limit).
    maxmemory: u64,
    /// Resident set size, read from `/proc/self/statm` when the text is built (off the
    /// core thread); 0 where that file does not exist.
    rss: u64,
    evicted_keys: u64,
    /// INFO errorstats: error code → replies with it.
    errors: Vec<(String, u64)>,
    /// Connections subscribed to any channel, pattern or shard channel (INFO clients
    /// `pubsub_clients`).
    pubsub_clients: usize,
    /// Entries moved to dead-letter streams since start (INFO stats
    /// `stream_dead_lettered_entries`).
    dead_lettered: u64,
    repl: ReplRow,
    /// `None` unless `cluster-enabled yes`.
    cluster: Option<ClusterRow>,
    /// The longest single borrow of the core in this scrape.
    pause_max: Duration,
    /// Borrows this scrape took.
    slices: u64,
    /// INFO tiering's numeric fields (`tiering_*`), when the segment store is open.
    tiering: Vec<(String, u64)>,
}

/// Copies the core's numbers out in slices of about [`SLICE_BUDGET`], yielding between
/// them so clients are served meanwhile.
async fn gather(core: &SharedCore) -> Snapshot {
    let mut snap = Snapshot::default();
    let mut first = true;
    loop {
        let started = Instant::now();
        let done = {
            let c = core.borrow();
            if first {
                snap.header(&c);
                first = false;
            }
            snap.slice(&c, started)
        };
        snap.pause_max = snap.pause_max.max(started.elapsed());
        snap.slices += 1;
        if done {
            break;
        }
        tokio::task::yield_now().await;
    }
    tracing::debug!(
        pause_usec = snap.pause_max.as_micros() as u64,
        slices = snap.slices,
        streams = snap.streams.len(),
        "metrics scrape gathered"
    );
    snap
}

impl Snapshot {
    /// The server-wide numbers (one borrow; their size does not grow with the data).
    fn header(&mut self, c: &Core) {
        if c.tier.is_open() {
            self.tiering = c
                .tier_info()
                .lines()
                .filter_map(|l| {
                    let (k, v) = l.trim_end().split_once(':')?;
                    let k = k.strip_prefix("tiering_")?;
                    Some((k.to_string(), v.parse().ok()?))
                })
                .collect();
        }
        // No client is executing while the endpoint holds the core, so every connected
        // client is in the table.
        self.clients = c.clients.len();
        self.blocked_clients = c.clients.values().filter(|c| c.blocked.is_some()).count();
        self.used_memory = c.used_memory();
        self.pubsub = [
            crate::pubsub::Kind::Channel,
            crate::pubsub::Kind::Pattern,
            crate::pubsub::Kind::Shard,
        ]
        .map(|k| c.pubsub.len(k));
        let labels: Vec<String> = c
            .latency
            .percentiles
            .iter()
            .map(|&p| crate::core::latency::percentile_label(p))
            .collect();
        self.commands = c
            .stats
            .commands
            .iter()
            .map(|(name, s)| CommandRow {
                name,
                calls: s.calls,
                usec: s.usec,
                rejected: s.rejected_calls,
                failed: s.failed_calls,
                percentiles: s.histogram.as_ref().map_or_else(Vec::new, |h| {
                    c.latency
                        .percentiles
                        .iter()
                        .zip(&labels)
                        .map(|(&p, label)| (label.clone(), h.percentile_usec(p)))
                        .collect()
                }),
            })
            .collect();
        self.commands.sort_unstable_by_key(|r| r.name);
        self.dbs = c.dbs.iter().map(|d| (d.len(), d.expires.len())).collect();
        self.max_streams = usize::try_from(c.config.get_i64("metrics-max-streams")).unwrap_or(0);
        // Room for every row now, so no slice pays for growing (copying) the vector.
        let keys: usize = c.dbs.iter().map(|d| d.len()).sum();
        self.streams
            .reserve(keys.min(self.max_streams).saturating_add(64));
        self.fsync = crate::persist::fsync_stats(c);
        self.version = crate::core::redis_version(c.compat);
        self.tcp_port = c.port;
        self.maxmemory_policy = c.config.get("maxmemory-policy").unwrap_or("").to_string();
        self.maxmemory = c.limits.maxmemory;
        self.evicted_keys = c.stats.evicted_keys;
        self.errors = c
            .stats
            .errors
            .iter()
            .map(|(k, &n)| (k.clone(), n))
            .collect();
        self.pubsub_clients = c.clients.values().filter(|c| c.in_pubsub()).count();
        self.dead_lettered = c.stats.stream_dead_lettered_entries;
        self.repl = repl_row(c);
        self.cluster = c.cluster.as_deref().map(|st| {
            let mut slots = [0; 4];
            for owner in st.owner.assigned() {
                slots[0] += 1;
                let flags = st.nodes.get(owner).map(|n| n.flags);
                match flags {
                    Some(f) if f.contains(NodeFlags::FAIL) => slots[3] += 1,
                    Some(f) if f.contains(NodeFlags::PFAIL) => slots[2] += 1,
                    _ => slots[1] += 1,
                }
            }
            ClusterRow {
                state_ok: st.is_ok(),
                slots,
                known_nodes: st.nodes.len(),
                size: st.size(),
                current_epoch: st.current_epoch,
            }
        });
    }

    /// Walks on from `pos` until the budget is spent; `true` when the walk is over.
    fn slice(&mut self, c: &Core, started: Instant) -> bool {
        let now = unix_ms();
        while let Some(db) = c.dbs.get(self.pos.0) {
            let dbi = self.pos.0;
            loop {
                if self.streams.len() >= self.max_streams && !db.is_empty() {
                    self.capped = true;
                    self.total_streams = c.dbs.iter().map(|d| d.len()).sum();
                    return true;
                }
                let streams = &mut self.streams;
                self.pos.1 = db.keys.scan(self.pos.1, |k, v| {
                    if let Value::Stream(s) = v {
                        let usage = crate::commands::memory::key_usage(db, k, v);
                        streams.push(stream_row(dbi, k, s, usage, now));
                    }
                });
                if self.pos.1 == 0 {
                    break;
                }
                if started.elapsed() >= SLICE_BUDGET {
                    return false;
                }
            }
            self.pos = (dbi + 1, 0);
        }
        // A bucket may have carried the walk past the cap: the encoder then drops rows,
        // and counts them against this total.
        self.total_streams = c.dbs.iter().map(|d| d.len()).sum();
        true
    }

    /// Sorts, removes SCAN's repeats, applies the cap and encodes the text format.
    fn into_text(mut self) -> Result<String, std::fmt::Error> {
        self.streams
            .sort_unstable_by(|a, b| (a.db, &a.key).cmp(&(b.db, &b.key)));
        self.streams.dedup_by(|a, b| a.db == b.db && a.key == b.key);
        if self.streams.len() > self.max_streams {
            self.streams.truncate(self.max_streams);
            self.capped = true;
        }
        self.rss = resident_bytes().unwrap_or(0);
        let mut registry = Registry::default();
        registry.register_collector(Box::new(self));
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)?;
        Ok(out)
    }

    /// Streams the cap left out.
    fn dropped_streams(&self) -> usize {
        if self.capped {
            self.total_streams.saturating_sub(self.streams.len())
        } else {
            0
        }
    }
}

/// INFO replication's numbers.
fn repl_row(c: &Core) -> ReplRow {
    let r = &c.repl;
    let now = unix_ms();
    let master = r.master.as_ref().map(|m| {
        let up = m.state == LinkState::Connected;
        MasterRow {
            host: m.host.clone(),
            port: m.port.to_string(),
            link_up: up,
            last_io_seconds_ago: if up {
                i64::try_from(now.saturating_sub(m.last_io_ms) / 1000).unwrap_or(i64::MAX)
            } else {
                -1
            },
            sync_in_progress: m.state == LinkState::Sync,
        }
    });
    let replicas = r
        .replicas
        .values()
        .map(|rep| ReplicaRow {
            ip: rep.ip.clone(),
            port: rep.port.to_string(),
            state: rep.state.name(),
            offset: rep.ack,
            lag_seconds: if rep.state == ReplicaState::Online {
                now.saturating_sub(rep.ack_ms) / 1000
            } else {
                0
            },
        })
        .collect();
    ReplRow {
        master,
        replicas,
        offset: r.offset,
        good_replicas: r.good_replicas,
        min_replicas_to_write: u64::try_from(c.config.get_i64("min-replicas-to-write"))
            .unwrap_or(0),
        sync: SyncRow {
            min: c.sync.min,
            members: c.sync.members.len() as u64,
            member: r.is_replica() && c.sync.is_member(&r.replid),
            fenced_primary: c.sync.fenced_primary,
            held: c.sync.stats.held_now,
            oldest_held_seconds: c.sync.oldest_held_ms(crate::core::unix_ms()) as f64 / 1000.0,
            held_total: c.sync.stats.held_total,
            timeouts: c.sync.stats.timeouts,
            write_refusals: c.sync.stats.write_refusals.get(),
            promotion_refusals: c.sync.stats.promotion_refusals,
        },
    }
}

/// The process's resident set in bytes (`/proc/self/statm`, Linux; INFO's
/// `used_memory_rss` reads the same file).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Copies one stream's numbers (and its groups' and consumers'). `key_usage` is what
/// MEMORY USAGE reports for the key (a walk of the stream's nodes, see the module doc);
/// the groups' pending-entry lists, which MEMORY USAGE leaves out, are added to it (their
/// slab pages and index chunks are walked, not their entries).
fn stream_row(db: usize, key: &[u8], s: &Stream, key_usage: usize, now: u64) -> StreamRow {
    let counters = crate::commands::xgroup::counters(s);
    let groups = s
        .groups()
        .iter()
        .map(|g| GroupRow {
            name: label_text(g.name()),
            consumers: g
                .consumers()
                .map(|(_, c)| ConsumerRow {
                    name: label_text(c.name()),
                    pending: c.pel_count(),
                    idle_ms: now.saturating_sub(c.seen_time()),
                })
                .collect(),
            pending: g.pel_count(),
            lag: g.lag(&counters),
            entries_read: g.entries_read(),
            oldest_pending_idle_ms: g.oldest_delivery_time().map(|t| now.saturating_sub(t)),
        })
        .collect();
    StreamRow {
        db,
        key: label_text(key),
        length: s.len(),
        radix_tree_keys: s.radix_tree_keys(),
        radix_tree_nodes: s.radix_tree_nodes(),
        last_generated_ms: s.last_id().ms,
        memory_bytes: key_usage + s.groups().iter().map(|g| g.pel_heap_bytes()).sum::<usize>(),
        groups,
    }
}

/// A key or name as a label value: UTF-8 as is, other bytes as `\xHH` (label values must
/// be UTF-8). The encoder escapes `\`, `"` and newlines.
fn label_text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => {
            let mut out = String::with_capacity(bytes.len() + 8);
            for chunk in bytes.utf8_chunks() {
                out.push_str(chunk.valid());
                for b in chunk.invalid() {
                    let _ = write!(out, "\\x{b:02x}");
                }
            }
            out
        }
    }
}

fn seconds(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

// ---------------------------------------------------------------------------------------
// Encoding: redis_exporter's families, through prometheus-client's text encoder
// ---------------------------------------------------------------------------------------

/// Writes one gauge family: its HELP and TYPE, then one sample per `(labels, value)`.
fn gauges<L: EncodeLabelSet, V: EncodeGaugeValue>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    samples: impl IntoIterator<Item = (L, V)>,
) -> std::fmt::Result {
    let mut family = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, v) in samples {
        family.encode_family(&labels)?.encode_gauge(&v)?;
    }
    Ok(())
}

/// Writes one counter family; the encoder appends `_total` to `name`.
fn counters<L: EncodeLabelSet, V: EncodeCounterValue>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    samples: impl IntoIterator<Item = (L, V)>,
) -> std::fmt::Result {
    let mut family = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, v) in samples {
        family
            .encode_family(&labels)?
            .encode_counter::<NoLabelSet, V, u64>(&v, None)?;
    }
    Ok(())
}

/// Writes a gauge family of one sample without labels.
fn gauge<V: EncodeGaugeValue>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    v: V,
) -> std::fmt::Result {
    enc.encode_descriptor(name, help, None, MetricType::Gauge)?
        .encode_gauge(&v)
}

/// Writes a counter family of one sample without labels (`name` gains `_total`).
fn counter<V: EncodeCounterValue>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    v: V,
) -> std::fmt::Result {
    enc.encode_descriptor(name, help, None, MetricType::Counter)?
        .encode_counter::<NoLabelSet, V, u64>(&v, None)
}

impl Collector for Snapshot {
    fn encode(&self, mut enc: DescriptorEncoder) -> std::fmt::Result {
        let e = &mut enc;
        let db_names: Vec<String> = (0..self.dbs.len()).map(|i| format!("db{i}")).collect();
        let db = |i: usize| db_names.get(i).map_or("db?", String::as_str);

        // Server-wide, as redis_exporter reads them from INFO.
        gauge(e, "redis_up", "Information about the Redis instance", 1u64)?;
        gauge(
            e,
            "redis_connected_clients",
            "connected_clients metric",
            self.clients as u64,
        )?;
        gauge(
            e,
            "redis_blocked_clients",
            "blocked_clients metric",
            self.blocked_clients as u64,
        )?;
        gauge(
            e,
            "redis_memory_used_bytes",
            "used_memory metric",
            self.used_memory as u64,
        )?;
        gauge(
            e,
            "redis_memory_used_rss_bytes",
            "used_memory_rss metric",
            self.rss,
        )?;
        gauge(
            e,
            "redis_memory_max_bytes",
            "maxmemory metric",
            self.maxmemory,
        )?;
        counter(
            e,
            "redis_evicted_keys",
            "evicted_keys metric",
            self.evicted_keys,
        )?;
        counters(
            e,
            "redis_errors",
            "Total number of errors per error type",
            self.errors.iter().map(|(k, n)| ([("err", k.as_str())], *n)),
        )?;
        let role = if self.repl.master.is_some() {
            "slave"
        } else {
            "master"
        };
        let port = self.tcp_port.to_string();
        let pid = std::process::id().to_string();
        let run_id = crate::core::run_id();
        let mode = if self.cluster.is_some() {
            "cluster"
        } else {
            "standalone"
        };
        gauges(
            e,
            "redis_instance_info",
            "Information about the Redis instance",
            [(
                [
                    ("role", role),
                    ("redis_version", self.version.as_str()),
                    ("redis_mode", mode),
                    ("maxmemory_policy", self.maxmemory_policy.as_str()),
                    ("tcp_port", port.as_str()),
                    ("run_id", run_id.as_str()),
                    ("process_id", pid.as_str()),
                ],
                1u64,
            )],
        )?;
        gauge(
            e,
            "redis_pubsub_clients",
            "pubsub_clients metric",
            self.pubsub_clients as u64,
        )?;
        for (name, help, n) in [
            (
                "redis_pubsub_channels",
                "pubsub_channels metric",
                self.pubsub[0],
            ),
            (
                "redis_pubsub_patterns",
                "pubsub_patterns metric",
                self.pubsub[1],
            ),
            (
                "redis_pubsubshard_channels",
                "pubsubshard_channels metric",
                self.pubsub[2],
            ),
        ] {
            gauge(e, name, help, n as u64)?;
        }
        let cmds = &self.commands;
        counters(
            e,
            "redis_commands",
            "Total number of calls per command",
            cmds.iter().map(|c| ([("cmd", c.name)], c.calls)),
        )?;
        counters(
            e,
            "redis_commands_duration_seconds",
            "Total amount of time in seconds spent per command",
            cmds.iter()
                .map(|c| ([("cmd", c.name)], c.usec as f64 / 1_000_000.0)),
        )?;
        counters(
            e,
            "redis_commands_rejected_calls",
            "Total number of errors prior command execution per command",
            cmds.iter().map(|c| ([("cmd", c.name)], c.rejected)),
        )?;
        counters(
            e,
            "redis_commands_failed_calls",
            "Total number of errors within command execution per command",
            cmds.iter().map(|c| ([("cmd", c.name)], c.failed)),
        )?;
        gauges(
            e,
            "redis_latency_percentiles_usec",
            "A summary of latency percentile distribution per command",
            cmds.iter().flat_map(|c| {
                c.percentiles
                    .iter()
                    .map(move |(q, usec)| ([("cmd", c.name), ("quantile", q.as_str())], *usec))
            }),
        )?;
        self.encode_replication(e)?;
        // Tiering (docs/tiering.md): INFO tiering's fields, cumulative ones as counters.
        for (k, v) in &self.tiering {
            let name = format!("streamd_tiering_{k}");
            let help = format!("INFO tiering's tiering_{k}");
            let cumulative = [
                "nodes_moved",
                "bytes_moved",
                "moves_abandoned",
                "move_errors",
                "parked_commands",
                "reads",
                "read_bytes",
                "readahead_reads",
                "sync_reads",
                "read_errors",
                "segments_unlinked",
                "rewrites_requested",
                "compactions",
                "compacted_bytes",
            ];
            if cumulative.contains(&k.as_str()) {
                counter(e, &name, &help, *v)?;
            } else {
                gauge(e, &name, &help, *v)?;
            }
        }
        if let Some(cl) = &self.cluster {
            for (name, v) in [
                ("redis_cluster_state", u64::from(cl.state_ok)),
                ("redis_cluster_slots_assigned", cl.slots[0] as u64),
                ("redis_cluster_slots_ok", cl.slots[1] as u64),
                ("redis_cluster_slots_pfail", cl.slots[2] as u64),
                ("redis_cluster_slots_fail", cl.slots[3] as u64),
                ("redis_cluster_known_nodes", cl.known_nodes as u64),
                ("redis_cluster_size", cl.size as u64),
                ("redis_cluster_current_epoch", cl.current_epoch),
            ] {
                let help = format!("{} metric", name.trim_start_matches("redis_"));
                gauge(e, name, &help, v)?;
            }
        }
        let dbs = self.dbs.iter().enumerate();
        gauges(
            e,
            "redis_db_keys",
            "Total number of keys by DB",
            dbs.clone()
                .map(|(i, &(keys, _))| ([("db", db(i))], keys as u64)),
        )?;
        gauges(
            e,
            "redis_db_keys_expiring",
            "Total number of expiring keys by DB",
            dbs.map(|(i, &(_, expiring))| ([("db", db(i))], expiring as u64)),
        )?;

        // Per stream: labels db, stream.
        let streams = &self.streams;
        let per_stream = |f: fn(&StreamRow) -> u64| {
            streams
                .iter()
                .map(move |s| ([("db", db(s.db)), ("stream", s.key.as_str())], f(s)))
        };
        gauges(
            e,
            "redis_stream_length",
            "The number of elements of the stream",
            per_stream(|s| s.length),
        )?;
        gauges(
            e,
            "redis_stream_radix_tree_keys",
            "Radix tree keys count",
            per_stream(|s| s.radix_tree_keys as u64),
        )?;
        gauges(
            e,
            "redis_stream_radix_tree_nodes",
            "Radix tree nodes count",
            per_stream(|s| s.radix_tree_nodes as u64),
        )?;
        gauges(
            e,
            "redis_stream_last_generated_id",
            "The epoch timestamp (ms) of the latest message on the stream",
            per_stream(|s| s.last_generated_ms),
        )?;
        gauges(
            e,
            "redis_stream_groups",
            "Groups count of stream",
            per_stream(|s| s.groups.len() as u64),
        )?;
        gauges(
            e,
            "streamd_stream_memory_bytes",
            "Bytes of the stream: MEMORY USAGE of its key plus its groups' pending-entry lists",
            per_stream(|s| s.memory_bytes as u64),
        )?;

        // Per group: labels db, stream, group.
        let per_group = || {
            streams.iter().flat_map(move |s| {
                s.groups.iter().map(move |g| {
                    let labels = [
                        ("db", db(s.db)),
                        ("stream", s.key.as_str()),
                        ("group", g.name.as_str()),
                    ];
                    (labels, g)
                })
            })
        };
        gauges(
            e,
            "redis_stream_group_consumers",
            "Consumers count of stream group",
            per_group().map(|(l, g)| (l, g.consumers.len() as u64)),
        )?;
        gauges(
            e,
            "redis_stream_group_messages_pending",
            "Pending number of messages in that stream group",
            per_group().map(|(l, g)| (l, g.pending as u64)),
        )?;
        gauges(
            e,
            "redis_stream_group_lag",
            "The number of messages waiting to be delivered to the stream group's consumers",
            per_group().filter_map(|(l, g)| Some((l, g.lag?))),
        )?;
        gauges(
            e,
            "redis_stream_group_entries_read",
            "The logical read counter of the stream group",
            per_group().filter_map(|(l, g)| Some((l, g.entries_read?))),
        )?;
        gauges(
            e,
            "streamd_stream_group_oldest_pending_idle_seconds",
            "Seconds since the group's oldest pending entry was delivered",
            per_group().filter_map(|(l, g)| Some((l, seconds(g.oldest_pending_idle_ms?)))),
        )?;

        // Per consumer: labels db, stream, group, consumer.
        let per_consumer = || {
            streams.iter().flat_map(move |s| {
                s.groups.iter().flat_map(move |g| {
                    g.consumers.iter().map(move |c| {
                        let labels = [
                            ("db", db(s.db)),
                            ("stream", s.key.as_str()),
                            ("group", g.name.as_str()),
                            ("consumer", c.name.as_str()),
                        ];
                        (labels, c)
                    })
                })
            })
        };
        gauges(
            e,
            "redis_stream_group_consumer_messages_pending",
            "Pending number of messages for this specific consumer",
            per_consumer().map(|(l, c)| (l, c.pending as u64)),
        )?;
        gauges(
            e,
            "redis_stream_group_consumer_idle_seconds",
            "Consumer idle time in seconds",
            per_consumer().map(|(l, c)| (l, seconds(c.idle_ms))),
        )?;

        // What the log and this endpoint know.
        if let Some(f) = self.fsync {
            counter(
                e,
                "streamd_aof_fsyncs",
                "fsyncs of the effect log since start",
                f.fsyncs,
            )?;
            gauge(
                e,
                "streamd_aof_fsync_max_seconds",
                "The longest fsync of the effect log since start, in seconds",
                f.max_usec as f64 / 1_000_000.0,
            )?;
            counter(
                e,
                "streamd_aof_fsync_seconds",
                "Time spent in fsyncs of the effect log since start, in seconds",
                f.total_usec as f64 / 1_000_000.0,
            )?;
        }
        counter(
            e,
            "streamd_stream_dead_lettered_entries",
            "Entries moved to dead-letter streams since start",
            self.dead_lettered,
        )?;
        gauge(
            e,
            "streamd_metrics_dropped_streams",
            "Streams left out of this scrape by metrics-max-streams",
            self.dropped_streams() as u64,
        )?;
        gauge(
            e,
            "streamd_metrics_scrape_core_pause_seconds",
            "The longest time this scrape held the core, in seconds",
            self.pause_max.as_secs_f64(),
        )?;
        gauge(
            e,
            "streamd_metrics_scrape_slices",
            "Borrows of the core this scrape took",
            self.slices,
        )?;
        Ok(())
    }
}

impl Snapshot {
    /// INFO replication as redis_exporter serves it (`redis_master_link_up` and friends on
    /// a replica, `redis_connected_slave_*` per replica on a primary), plus the
    /// `min-replicas-to-write` setting and the replicas that count towards it.
    fn encode_replication(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        let r = &self.repl;
        gauge(
            e,
            "redis_connected_slaves",
            "connected_slaves metric",
            r.replicas.len() as u64,
        )?;
        gauge(
            e,
            "redis_master_repl_offset",
            "master_repl_offset metric",
            r.offset,
        )?;
        let slave_labels = |s: &ReplicaRow| {
            [
                ("slave_ip", s.ip.clone()),
                ("slave_port", s.port.clone()),
                ("slave_state", s.state.to_string()),
            ]
        };
        gauges(
            e,
            "redis_connected_slave_offset_bytes",
            "Offset of connected slave",
            r.replicas.iter().map(|s| (slave_labels(s), s.offset)),
        )?;
        gauges(
            e,
            "redis_connected_slave_lag_seconds",
            "Lag of connected slave",
            r.replicas.iter().map(|s| (slave_labels(s), s.lag_seconds)),
        )?;
        if let Some(m) = &r.master {
            let labels = [
                ("master_host", m.host.as_str()),
                ("master_port", m.port.as_str()),
            ];
            gauges(
                e,
                "redis_master_link_up",
                "Master link status on Redis slave",
                [(labels, u64::from(m.link_up))],
            )?;
            gauges(
                e,
                "redis_master_last_io_seconds_ago",
                "Master last io seconds ago",
                [(labels, m.last_io_seconds_ago)],
            )?;
            gauges(
                e,
                "redis_master_sync_in_progress",
                "Master sync in progress",
                [(labels, u64::from(m.sync_in_progress))],
            )?;
            gauges(
                e,
                "redis_slave_repl_offset",
                "Slave replication offset",
                [(labels, r.offset)],
            )?;
        }
        gauge(
            e,
            "redis_config_min_replicas_to_write",
            "The min-replicas-to-write setting (0: writes never wait for replicas)",
            r.min_replicas_to_write,
        )?;
        gauge(
            e,
            "streamd_replication_good_replicas",
            "Online replicas that acknowledged within min-replicas-max-lag",
            r.good_replicas,
        )?;
        self.encode_sync(e)
    }

    /// Synchronous replication (docs/replication.md "Synchronous replicas"): the
    /// setting, the sync set, held replies and what was refused; served with the mode
    /// off too (zeros), so dashboards and alerts always find the series.
    fn encode_sync(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        let s = &self.repl.sync;
        gauge(
            e,
            "streamd_sync_replicas_min",
            "The min-sync-replicas setting (0: replication is asynchronous)",
            s.min,
        )?;
        gauge(
            e,
            "streamd_sync_replicas",
            "Members of this primary's sync set",
            s.members,
        )?;
        gauge(
            e,
            "streamd_sync_replica_member",
            "1 when this replica is in its primary's sync set (only then may it be promoted)",
            u64::from(s.member),
        )?;
        gauge(
            e,
            "streamd_sync_fenced_primary",
            "1 while a primary restarted with min-sync-replicas on waits for REPLICAOF or SYNCSET CONFIRM",
            u64::from(s.fenced_primary),
        )?;
        gauge(
            e,
            "streamd_sync_held_replies",
            "Batches of replies waiting for the sync set's acknowledgement now",
            s.held,
        )?;
        gauge(
            e,
            "streamd_sync_oldest_held_seconds",
            "Age of the oldest reply waiting for the sync set",
            s.oldest_held_seconds,
        )?;
        counter(
            e,
            "streamd_sync_held",
            "Batches of replies that waited for the sync set",
            s.held_total,
        )?;
        counter(
            e,
            "streamd_sync_timeouts",
            "Held replies that timed out (sync-replicas-timeout) and became errors",
            s.timeouts,
        )?;
        counter(
            e,
            "streamd_sync_write_refusals",
            "Writes refused with NOREPLICAS because the sync set was too small",
            s.write_refusals,
        )?;
        counter(
            e,
            "streamd_sync_promotion_refusals",
            "Promotions (REPLICAOF NO ONE, CLUSTER FAILOVER FORCE/TAKEOVER) refused outside the sync set",
            s.promotion_refusals,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_text_escapes_only_invalid_utf8() {
        assert_eq!(label_text(b"orders"), "orders");
        assert_eq!(label_text("é".as_bytes()), "é");
        assert_eq!(label_text(b"a\xffb"), "a\\xffb");
    }

    fn row(db: usize, key: &str) -> StreamRow {
        StreamRow {
            db,
            key: key.into(),
            length: 5,
            radix_tree_keys: 1,
            radix_tree_nodes: 2,
            last_generated_ms: 1700,
            memory_bytes: 4096,
            groups: vec![GroupRow {
                name: "grp".into(),
                consumers: vec![ConsumerRow {
                    name: "alice".into(),
                    pending: 2,
                    idle_ms: 1500,
                }],
                pending: 2,
                lag: Some(3),
                entries_read: None,
                oldest_pending_idle_ms: Some(250),
            }],
        }
    }

    #[test]
    fn encodes_redis_exporter_names_labels_and_types() {
        let snap = Snapshot {
            clients: 3,
            commands: vec![CommandRow {
                name: "xadd",
                calls: 7,
                usec: 1500,
                rejected: 0,
                failed: 1,
                percentiles: vec![("50".into(), 85.503), ("99.9".into(), 120.0)],
            }],
            dbs: vec![(1, 0), (0, 0)],
            streams: vec![row(0, "m"), row(0, "m"), row(0, "a\"b")],
            max_streams: 10,
            ..Snapshot::default()
        };
        let text = snap.into_text().unwrap();
        for want in [
            "# TYPE redis_up gauge\nredis_up 1\n",
            "redis_connected_clients 3\n",
            "# TYPE redis_commands_total counter\n",
            "redis_commands_total{cmd=\"xadd\"} 7\n",
            "redis_commands_duration_seconds_total{cmd=\"xadd\"} 0.0015\n",
            "redis_commands_failed_calls_total{cmd=\"xadd\"} 1\n",
            "redis_db_keys{db=\"db0\"} 1\n",
            "redis_db_keys{db=\"db1\"} 0\n",
            "redis_stream_length{db=\"db0\",stream=\"m\"} 5\n",
            "redis_stream_length{db=\"db0\",stream=\"a\\\"b\"} 5\n",
            "redis_stream_groups{db=\"db0\",stream=\"m\"} 1\n",
            "redis_stream_last_generated_id{db=\"db0\",stream=\"m\"} 1700\n",
            "# TYPE streamd_stream_memory_bytes gauge\n",
            "streamd_stream_memory_bytes{db=\"db0\",stream=\"m\"} 4096\n",
            "redis_stream_group_lag{db=\"db0\",stream=\"m\",group=\"grp\"} 3\n",
            "redis_stream_group_consumers{db=\"db0\",stream=\"m\",group=\"grp\"} 1\n",
            "streamd_stream_group_oldest_pending_idle_seconds{db=\"db0\",stream=\"m\",group=\"grp\"} 0.25\n",
            "redis_stream_group_consumer_messages_pending{db=\"db0\",stream=\"m\",group=\"grp\",consumer=\"alice\"} 2\n",
            "redis_stream_group_consumer_idle_seconds{db=\"db0\",stream=\"m\",group=\"grp\",consumer=\"alice\"} 1.5\n",
            "streamd_metrics_dropped_streams 0\n",
            "redis_latency_percentiles_usec{cmd=\"xadd\",quantile=\"50\"} 85.503\n",
            "redis_latency_percentiles_usec{cmd=\"xadd\",quantile=\"99.9\"} 120.0\n",
        ] {
            assert!(text.contains(want), "missing {want:?} in\n{text}");
        }
        // entries-read unknown: no sample; the duplicate row appears once.
        assert!(!text.contains("redis_stream_group_entries_read{"));
        assert_eq!(
            text.matches("redis_stream_length{db=\"db0\",stream=\"m\"}")
                .count(),
            1
        );
        for line in text.lines().filter(|l| l.starts_with("# TYPE")) {
            assert_eq!(line.split(' ').count(), 4, "{line}");
        }
        assert!(!text.contains("# EOF"));
    }

    #[test]
    fn encodes_memory_errors_replication_cluster_and_dead_letters() {
        let snap = Snapshot {
            version: "8.10.0".into(),
            tcp_port: 6379,
            maxmemory_policy: "noeviction".into(),
            maxmemory: 1 << 20,
            evicted_keys: 4,
            errors: vec![("NOREPLICAS".into(), 2), ("OOM".into(), 1)],
            pubsub_clients: 3,
            dead_lettered: 9,
            fsync: Some(FsyncStats {
                fsyncs: 10,
                max_usec: 3000,
                total_usec: 12_500,
            }),
            repl: ReplRow {
                master: Some(MasterRow {
                    host: "10.0.0.1".into(),
                    port: "6380".into(),
                    link_up: false,
                    last_io_seconds_ago: -1,
                    sync_in_progress: false,
                }),
                replicas: vec![ReplicaRow {
                    ip: "127.0.0.1".into(),
                    port: "7001".into(),
                    state: "online",
                    offset: 1234,
                    lag_seconds: 7,
                }],
                offset: 2000,
                good_replicas: 1,
                min_replicas_to_write: 2,
                sync: SyncRow {
                    min: 1,
                    member: true,
                    held: 2,
                    oldest_held_seconds: 0.25,
                    timeouts: 3,
                    ..Default::default()
                },
            },
            cluster: Some(ClusterRow {
                state_ok: true,
                slots: [16384, 16000, 384, 0],
                known_nodes: 3,
                size: 3,
                current_epoch: 5,
            }),
            ..Snapshot::default()
        };
        let text = snap.into_text().unwrap();
        for want in [
            "redis_memory_max_bytes 1048576\n",
            "# TYPE redis_evicted_keys_total counter\nredis_evicted_keys_total 4\n",
            "redis_errors_total{err=\"NOREPLICAS\"} 2\n",
            "redis_errors_total{err=\"OOM\"} 1\n",
            "redis_pubsub_clients 3\n",
            "redis_instance_info{role=\"slave\",redis_version=\"8.10.0\",redis_mode=\"cluster\",maxmemory_policy=\"noeviction\",tcp_port=\"6379\",",
            "redis_connected_slaves 1\n",
            "redis_master_repl_offset 2000\n",
            "redis_connected_slave_offset_bytes{slave_ip=\"127.0.0.1\",slave_port=\"7001\",slave_state=\"online\"} 1234\n",
            "redis_connected_slave_lag_seconds{slave_ip=\"127.0.0.1\",slave_port=\"7001\",slave_state=\"online\"} 7\n",
            "redis_master_link_up{master_host=\"10.0.0.1\",master_port=\"6380\"} 0\n",
            "redis_master_last_io_seconds_ago{master_host=\"10.0.0.1\",master_port=\"6380\"} -1\n",
            "redis_slave_repl_offset{master_host=\"10.0.0.1\",master_port=\"6380\"} 2000\n",
            "redis_config_min_replicas_to_write 2\n",
            "streamd_replication_good_replicas 1\n",
            "streamd_sync_replicas_min 1\n",
            "streamd_sync_replica_member 1\n",
            "streamd_sync_held_replies 2\n",
            "streamd_sync_oldest_held_seconds 0.25\n",
            "streamd_sync_timeouts_total 3\n",
            "redis_cluster_state 1\n",
            "redis_cluster_slots_assigned 16384\n",
            "redis_cluster_slots_ok 16000\n",
            "redis_cluster_slots_pfail 384\n",
            "redis_cluster_size 3\n",
            "# TYPE streamd_aof_fsync_seconds_total counter\nstreamd_aof_fsync_seconds_total 0.0125\n",
            "# TYPE streamd_stream_dead_lettered_entries_total counter\nstreamd_stream_dead_lettered_entries_total 9\n",
        ] {
            assert!(text.contains(want), "missing {want:?} in\n{text}");
        }
        // The RSS is read when the text is built.
        let rss = text
            .lines()
            .find_map(|l| l.strip_prefix("redis_memory_used_rss_bytes "))
            .and_then(|v| v.parse::<u64>().ok());
        assert!(rss.is_some_and(|r| r > 0), "{text}");
        // A primary without cluster mode: no replica-side or cluster series.
        let text = Snapshot::default().into_text().unwrap();
        for absent in [
            "redis_master_link_up",
            "redis_cluster_state",
            "redis_errors_total{",
        ] {
            assert!(!text.contains(absent), "{absent} in\n{text}");
        }
        assert!(text.contains("redis_instance_info{role=\"master\","));
    }

    #[test]
    fn the_cap_drops_streams_and_says_how_many() {
        let snap = Snapshot {
            streams: vec![row(0, "c"), row(0, "a"), row(0, "b")],
            capped: true,
            total_streams: 5,
            max_streams: 2,
            ..Snapshot::default()
        };
        let text = snap.into_text().unwrap();
        assert_eq!(text.matches("redis_stream_length{").count(), 2);
        assert!(text.contains("stream=\"a\""));
        assert!(!text.contains("stream=\"c\""));
        assert!(text.contains("streamd_metrics_dropped_streams 3\n"));
        // The walk's last bucket went past the cap: the extra row is dropped and counted.
        let snap = Snapshot {
            streams: vec![row(0, "c"), row(0, "a"), row(0, "b")],
            total_streams: 3,
            max_streams: 2,
            ..Snapshot::default()
        };
        let text = snap.into_text().unwrap();
        assert_eq!(text.matches("redis_stream_length{").count(), 2);
        assert!(text.contains("streamd_metrics_dropped_streams 1\n"));
    }
}
