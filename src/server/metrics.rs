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
//! delivery (the head of the delivery-time list, O(1)), the log's fsync count and longest
//! fsync, and this scrape's own longest core pause.

use super::listeners::{Accept, ListenerGroup, SharedListeners};
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
    /// The longest single borrow of the core in this scrape.
    pause_max: Duration,
    /// Borrows this scrape took.
    slices: u64,
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
                        streams.push(stream_row(dbi, k, s, now));
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

/// Copies one stream's numbers (and its groups' and consumers').
fn stream_row(db: usize, key: &[u8], s: &Stream, now: u64) -> StreamRow {
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
fn counter(enc: &mut DescriptorEncoder, name: &str, help: &str, v: u64) -> std::fmt::Result {
    enc.encode_descriptor(name, help, None, MetricType::Counter)?
        .encode_counter::<NoLabelSet, u64, u64>(&v, None)
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
        }
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
            "redis_stream_group_lag{db=\"db0\",stream=\"m\",group=\"grp\"} 3\n",
            "redis_stream_group_consumers{db=\"db0\",stream=\"m\",group=\"grp\"} 1\n",
            "streamd_stream_group_oldest_pending_idle_seconds{db=\"db0\",stream=\"m\",group=\"grp\"} 0.25\n",
            "redis_stream_group_consumer_messages_pending{db=\"db0\",stream=\"m\",group=\"grp\",consumer=\"alice\"} 2\n",
            "redis_stream_group_consumer_idle_seconds{db=\"db0\",stream=\"m\",group=\"grp\",consumer=\"alice\"} 1.5\n",
            "streamd_metrics_dropped_streams 0\n",
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
