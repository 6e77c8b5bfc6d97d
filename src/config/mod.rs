//! Configuration: redis.conf syntax, command-line overrides, `CONFIG GET/SET`.
//!
//! Every directive is one row of [`DIRECTIVES`]: its name, default, kind (which values
//! are valid) and whether `CONFIG SET` may change it at run time. Values are kept as
//! their canonical text (what `CONFIG GET` shows) and read through typed getters.
//! The same table is the source of `conf/streamd.conf` and `docs/configuration.md`.
//!
//! Every other name Redis 7.0 knows is a row of [`redis::REDIS_ONLY`]: accepted and shown
//! with Redis's syntax and default, but without effect in streamd; [`redis::ALIASES`]
//! maps Redis's old names to the ones they stand for. [`rewrite`] is CONFIG REWRITE.

pub mod redis;
pub mod rewrite;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// What values a directive accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `yes` / `no`.
    Bool,
    /// A signed integer in `[min, max]`.
    Int {
        /// Smallest accepted value.
        min: i64,
        /// Largest accepted value.
        max: i64,
    },
    /// Bytes with optional unit suffix (`4kb`, `1gb`, `512mb`, `100`), in `[min, max]`.
    Memory {
        /// Smallest accepted value.
        min: i64,
        /// Largest accepted value.
        max: i64,
    },
    /// One of a fixed set of words.
    Enum(&'static [&'static str]),
    /// Any string.
    Str,
    /// A list of `seconds changes` pairs, or empty (the `save` directive).
    SavePoints,
    /// Space-separated percentiles, each in `[0, 100]`, or empty
    /// (`latency-tracking-info-percentiles`).
    Percentiles,
    /// A decimal fraction in `[0, 1]` (`stream-node-reclaim-ratio`).
    Ratio,
    /// `<class> <hard> <soft> <soft-seconds>` groups (the `client-output-buffer-limit`
    /// directive); classes not named keep their value.
    BufferLimits,
    /// An integer accepted in `[min, max]` and then brought into `[lo, hi]`, which
    /// `CONFIG GET` shows (`hz`: any int is accepted, 1000 becomes 500).
    IntClamped {
        /// Smallest accepted value.
        min: i64,
        /// Largest accepted value.
        max: i64,
        /// Smallest value kept.
        lo: i64,
        /// Largest value kept.
        hi: i64,
    },
    /// An octal number in `[0, max]` (`unixsocketperm`), shown in octal.
    Octal {
        /// Largest accepted value.
        max: i64,
    },
    /// A memory value in `[0, max]`, or a percentage of `maxmemory` (`10%`).
    MemoryOrPercent {
        /// Largest accepted byte value.
        max: i64,
    },
    /// One or more words of a fixed set, space separated (`shutdown-on-sigint nosave now`).
    Flags(&'static [&'static str]),
    /// Three OOM score adjustments in `[-2000, 2000]` (`oom-score-adj-values`).
    OomScoreAdjValues,
    /// `<host> <port>`, or `no one` for none (`replicaof`).
    ReplicaOf,
    /// Keyspace notification classes, Redis's letters (`notify-keyspace-events`).
    KeyspaceEvents,
}

impl Kind {
    /// True when a config file line gives the value as several words
    /// (`save 3600 1`, `client-output-buffer-limit normal 0 0 0`).
    fn multi_arg(self) -> bool {
        matches!(
            self,
            Kind::SavePoints
                | Kind::BufferLimits
                | Kind::Flags(_)
                | Kind::OomScoreAdjValues
                | Kind::ReplicaOf
        )
    }
}

/// One configuration directive.
#[derive(Debug, Clone, Copy)]
pub struct Directive {
    /// Name as in redis.conf (`stream-node-max-bytes`).
    pub name: &'static str,
    /// Default value text.
    pub default: &'static str,
    /// Accepted values.
    pub kind: Kind,
    /// May `CONFIG SET` change it while running?
    pub mutable: bool,
    /// One-line meaning, for the sample config and the docs.
    pub help: &'static str,
}

/// `i64::MAX`, the ceiling of most of Redis's long long ranges.
const I64_MAX: i64 = i64::MAX;

/// `i32::MAX`, the ceiling of Redis's int ranges.
const I32_MAX: i64 = i32::MAX as i64;

/// The values `compat-version` accepts, oldest first: Redis versions that changed the
/// stream surface.
pub const COMPAT_VERSIONS: &[&str] = &["7.4", "8.0", "8.2", "8.4", "8.6", "8.8", "8.10"];

/// A `compat-version` value as `(major, minor)`; the newest for anything unknown.
pub fn compat_version(text: &str) -> (u8, u8) {
    text.split_once('.')
        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
        .unwrap_or((8, 10))
}

/// Every directive streamd knows, in the order the sample config lists them.
pub const DIRECTIVES: &[Directive] = &[
    Directive {
        name: "bind",
        default: "127.0.0.1",
        kind: Kind::Str,
        mutable: true,
        help: "Addresses to listen on, space separated: `-addr` is skipped when it is not on this host, `*` is every IPv4 and `::*` every IPv6 address. CONFIG SET bind, port and tls-port rebind at once.",
    },
    Directive {
        name: "port",
        default: "6379",
        kind: Kind::Int { min: 0, max: 65535 },
        mutable: true,
        help: "TCP port (0 = do not listen on TCP).",
    },
    Directive {
        name: "tls-port",
        default: "0",
        kind: Kind::Int { min: 0, max: 65535 },
        mutable: true,
        help: "TLS port (0 = no TLS listener); served beside the plain port.",
    },
    Directive {
        name: "tls-cert-file",
        default: "",
        kind: Kind::Str,
        mutable: true,
        help: "Server certificate chain (PEM) for the TLS port.",
    },
    Directive {
        name: "tls-key-file",
        default: "",
        kind: Kind::Str,
        mutable: true,
        help: "Private key (PEM: PKCS#8, PKCS#1 or SEC1) of the server certificate.",
    },
    Directive {
        name: "tls-ca-cert-file",
        default: "",
        kind: Kind::Str,
        mutable: true,
        help: "CA certificates (PEM) that client certificates must chain to.",
    },
    Directive {
        name: "tls-auth-clients",
        default: "yes",
        kind: Kind::Enum(&["yes", "no", "optional"]),
        mutable: true,
        help: "Client certificates: required (yes), not asked for (no), or checked if sent (optional).",
    },
    Directive {
        name: "databases",
        default: "16",
        kind: Kind::Int {
            min: 1,
            max: 1 << 20,
        },
        mutable: false,
        help: "Number of databases (SELECT 0..n-1).",
    },
    Directive {
        name: "dir",
        default: "./data",
        kind: Kind::Str,
        mutable: true,
        help: "Data directory (created if missing).",
    },
    Directive {
        name: "loglevel",
        default: "notice",
        kind: Kind::Enum(&["debug", "verbose", "notice", "warning", "nothing"]),
        mutable: true,
        help: "Log verbosity.",
    },
    Directive {
        name: "log-format",
        default: "text",
        kind: Kind::Enum(&["text", "json"]),
        mutable: true,
        help: "Log line format: human text or JSON.",
    },
    Directive {
        name: "logfile",
        default: "",
        kind: Kind::Str,
        mutable: false,
        help: "Log file path; empty logs to standard output.",
    },
    Directive {
        name: "pidfile",
        default: "",
        kind: Kind::Str,
        mutable: false,
        help: "Write the process id to this file; empty for none.",
    },
    Directive {
        name: "supervised",
        default: "no",
        kind: Kind::Enum(&["upstart", "systemd", "auto", "no"]),
        mutable: false,
        help: "Tell a service manager when the server is ready: systemd sends READY=1 to NOTIFY_SOCKET once listening with the data loaded (for Type=notify units), auto does so when NOTIFY_SOCKET is set, no never; upstart is accepted and has no effect.",
    },
    Directive {
        name: "requirepass",
        default: "",
        kind: Kind::Str,
        mutable: true,
        help: "Password for the default user; empty means no authentication.",
    },
    Directive {
        name: "aclfile",
        default: "",
        kind: Kind::Str,
        mutable: false,
        help: "ACL users file (`user <name> <rules>` lines), loaded at start and by ACL LOAD, written by ACL SAVE; empty for none.",
    },
    Directive {
        name: "acl-pubsub-default",
        default: "resetchannels",
        kind: Kind::Enum(&["allchannels", "resetchannels"]),
        mutable: true,
        help: "The channel permissions of new ACL users and of `reset`: `allchannels` (`&*`) or `resetchannels` (none).",
    },
    Directive {
        name: "acllog-max-len",
        default: "128",
        kind: Kind::Int {
            min: 0,
            max: I64_MAX,
        },
        mutable: true,
        help: "Most entries kept in the ACL LOG.",
    },
    Directive {
        name: "maxclients",
        default: "10000",
        kind: Kind::Int {
            min: 1,
            max: 1 << 30,
        },
        mutable: true,
        help: "Maximum number of connected clients.",
    },
    Directive {
        name: "timeout",
        default: "0",
        kind: Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        mutable: true,
        help: "Close idle clients after this many seconds (0 = never).",
    },
    Directive {
        name: "tcp-keepalive",
        default: "300",
        kind: Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        mutable: true,
        help: "TCP keepalive interval in seconds (0 = off).",
    },
    Directive {
        name: "tcp-backlog",
        default: "511",
        kind: Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        mutable: false,
        help: "Listen backlog of the client, TLS and cluster bus ports: connections the kernel queues until streamd accepts them (capped by net.core.somaxconn).",
    },
    Directive {
        name: "proto-max-bulk-len",
        default: "536870912",
        kind: Kind::Memory {
            min: 1024 * 1024,
            max: I64_MAX,
        },
        mutable: true,
        help: "Largest accepted bulk string in a request.",
    },
    Directive {
        name: "client-query-buffer-limit",
        default: "1073741824",
        kind: Kind::Memory {
            min: 1024 * 1024,
            max: I64_MAX,
        },
        mutable: true,
        help: "Largest unparsed request buffer per client.",
    },
    Directive {
        name: "client-output-buffer-limit",
        default: "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        kind: Kind::BufferLimits,
        mutable: true,
        help: "Per class: hard limit, soft limit and seconds over the soft limit before a client whose replies pile up is closed (0 = none).",
    },
    Directive {
        name: "stream-node-max-bytes",
        default: "4096",
        kind: Kind::Memory {
            min: 0,
            max: I64_MAX,
        },
        mutable: true,
        help: "Largest stream node in bytes (0 = no byte limit).",
    },
    Directive {
        name: "stream-tiering",
        default: "no",
        kind: Kind::Bool,
        mutable: true,
        help: "Tiered streams: keep about stream-tiering-hot-bytes of stream nodes in memory and move the oldest sealed nodes to segment files under <dir>/tier (docs/tiering.md).",
    },
    Directive {
        name: "stream-tiering-hot-bytes",
        default: "1073741824",
        kind: Kind::Memory {
            min: 1024 * 1024,
            max: I64_MAX,
        },
        mutable: true,
        help: "With stream-tiering on: about how many bytes of stream nodes stay in memory; beyond it the oldest sealed nodes go to segment files.",
    },
    Directive {
        name: "stream-node-max-entries",
        default: "100",
        kind: Kind::Int {
            min: 0,
            max: I64_MAX,
        },
        mutable: true,
        help: "Most entries per stream node (0 = no count limit).",
    },
    Directive {
        name: "hash-max-listpack-entries",
        default: "512",
        kind: Kind::Int {
            min: 0,
            max: I64_MAX,
        },
        mutable: true,
        help: "Most fields a hash keeps in its packed form (OBJECT ENCODING listpack) before it becomes a hash table.",
    },
    Directive {
        name: "hash-max-listpack-value",
        default: "64",
        kind: Kind::Memory {
            min: 0,
            max: I64_MAX,
        },
        mutable: true,
        help: "Longest field or value (bytes) a hash keeps in its packed form.",
    },
    Directive {
        name: "list-max-listpack-size",
        default: "-2",
        kind: Kind::Int {
            min: -I32_MAX - 1,
            max: I32_MAX,
        },
        mutable: true,
        help: "Size of a list node: positive = most elements per node, -1..-5 = at most 4, 8, 16, 32 or 64 KiB per node.",
    },
    Directive {
        name: "set-max-intset-entries",
        default: "512",
        kind: Kind::Int {
            min: 0,
            max: I64_MAX,
        },
        mutable: true,
        help: "Most members a set of integers keeps in its packed form (OBJECT ENCODING intset).",
    },
    Directive {
        name: "set-max-listpack-entries",
        default: "128",
        kind: Kind::Int {
            min: 0,
            max: I64_MAX,
        },
        mutable: true,
        help: "Most members a set with non-integer members keeps in its packed form (OBJECT ENCODING listpack) before it becomes a hashtable.",
    },
    Directive {
        name: "set-max-listpack-value",
        default: "64",
        kind: Kind::Memory {
            min: 0,
            max: I64_MAX,
        },
        mutable: true,
        help: "Longest member (bytes) a set keeps in its packed form.",
    },
    Directive {
        name: "zset-max-listpack-entries",
        default: "128",
        kind: Kind::Int {
            min: 0,
            max: I64_MAX,
        },
        mutable: true,
        help: "Most members a sorted set keeps in its packed form (OBJECT ENCODING listpack) before it becomes a skiplist.",
    },
    Directive {
        name: "zset-max-listpack-value",
        default: "64",
        kind: Kind::Memory {
            min: 0,
            max: I64_MAX,
        },
        mutable: true,
        help: "Longest member (bytes) a sorted set keeps in its packed form.",
    },
    Directive {
        name: "hll-sparse-max-bytes",
        default: "3000",
        kind: Kind::Memory {
            min: 0,
            max: I64_MAX,
        },
        mutable: true,
        help: "Longest (bytes, header included) a HyperLogLog keeps its sparse form before it becomes dense.",
    },
    Directive {
        name: "stream-idmp-duration",
        default: "100",
        kind: Kind::Int { min: 1, max: 86400 },
        mutable: true,
        help: "Default IDMP duration in seconds for new streams.",
    },
    Directive {
        name: "stream-idmp-maxsize",
        default: "100",
        kind: Kind::Int { min: 1, max: 10000 },
        mutable: true,
        help: "Default IDMP entries kept per producer for new streams.",
    },
    Directive {
        name: "stream-node-reclaim-ratio",
        default: "0.5",
        kind: Kind::Ratio,
        mutable: true,
        help: "Rewrite a stream node without its deleted entries once they are more than this share of it, a node at a time in the background (0..1; 1 = never). streamd's own.",
    },
    Directive {
        name: "compat-version",
        default: "8.10",
        kind: Kind::Enum(COMPAT_VERSIONS),
        mutable: true,
        help: "Newest Redis version whose stream surface clients see: older values hide newer XINFO fields, options and commands.",
    },
    Directive {
        name: "appendonly",
        default: "yes",
        kind: Kind::Bool,
        mutable: true,
        help: "Keep the effect log (durability across restarts).",
    },
    Directive {
        name: "appendfsync",
        default: "everysec",
        kind: Kind::Enum(&["always", "everysec", "no"]),
        mutable: true,
        help: "When the log is fsynced.",
    },
    Directive {
        name: "appenddirname",
        default: "appendonlydir",
        kind: Kind::Str,
        mutable: false,
        help: "Directory (inside dir) holding the log.",
    },
    Directive {
        name: "appendfilename",
        default: "appendonly",
        kind: Kind::Str,
        mutable: false,
        help: "Base name of the log files.",
    },
    Directive {
        name: "dbfilename",
        default: "dump.snap",
        kind: Kind::Str,
        mutable: true,
        help: "Snapshot file name (inside dir).",
    },
    Directive {
        name: "save",
        default: "3600 1 300 100 60 10000",
        kind: Kind::SavePoints,
        mutable: true,
        help: "Snapshot after <seconds> if at least <changes> writes; empty disables.",
    },
    Directive {
        name: "auto-aof-rewrite-percentage",
        default: "100",
        kind: Kind::Int {
            min: 0,
            max: i32::MAX as i64,
        },
        mutable: true,
        help: "Rewrite the log when it grew by this percentage since the last rewrite (0 = never).",
    },
    Directive {
        name: "auto-aof-rewrite-min-size",
        default: "67108864",
        kind: Kind::Memory {
            min: 0,
            max: I64_MAX,
        },
        mutable: true,
        help: "No automatic rewrite while the log is smaller than this.",
    },
    Directive {
        name: "aof-load-truncated",
        default: "yes",
        kind: Kind::Bool,
        mutable: true,
        help: "At start-up, cut a torn last record of the log (yes) or refuse to start (no).",
    },
    Directive {
        name: "maxmemory",
        default: "0",
        kind: Kind::Memory {
            min: 0,
            max: I64_MAX,
        },
        mutable: true,
        help: "Memory limit in bytes (0 = none).",
    },
    Directive {
        name: "maxmemory-policy",
        default: "noeviction",
        kind: Kind::Enum(&[
            "volatile-lru",
            "volatile-lfu",
            "volatile-random",
            "volatile-ttl",
            "allkeys-lru",
            "allkeys-lfu",
            "allkeys-random",
            "noeviction",
        ]),
        mutable: true,
        help: "What to evict at maxmemory (LRU/LFU/random/TTL over all keys or keys with a TTL), or noeviction: refuse writes that grow memory.",
    },
    Directive {
        name: "lazyfree-lazy-eviction",
        default: "no",
        kind: Kind::Bool,
        mutable: true,
        help: "Free evicted keys on the background thread (core/lazyfree.rs) when freeing them is big work.",
    },
    Directive {
        name: "lazyfree-lazy-expire",
        default: "no",
        kind: Kind::Bool,
        mutable: true,
        help: "Free expired keys on the background thread when freeing them is big work.",
    },
    Directive {
        name: "lazyfree-lazy-server-del",
        default: "no",
        kind: Kind::Bool,
        mutable: true,
        help: "Free the values the server deletes itself (a STORE destination left empty, a key GETDEL or MIGRATE removes) on the background thread when big, and log an SPOP of a whole set as UNLINK; a value replaced by an overwrite is still freed at once.",
    },
    Directive {
        name: "lazyfree-lazy-user-del",
        default: "no",
        kind: Kind::Bool,
        mutable: true,
        help: "DEL frees like UNLINK: big values on the background thread.",
    },
    Directive {
        name: "lazyfree-lazy-user-flush",
        default: "no",
        kind: Kind::Bool,
        mutable: true,
        help: "FLUSHALL and FLUSHDB without SYNC/ASYNC free in the background (as with ASYNC).",
    },
    Directive {
        name: "notify-keyspace-events",
        default: "",
        kind: Kind::KeyspaceEvents,
        mutable: true,
        help: "Keyspace notification classes (Redis's letters; empty = off).",
    },
    Directive {
        name: "hz",
        default: "10",
        kind: Kind::IntClamped {
            min: 0,
            max: i32::MAX as i64,
            lo: 1,
            hi: 500,
        },
        mutable: true,
        help: "Background task frequency (active expiry) per second.",
    },
    Directive {
        name: "idle-poll-us",
        default: "100",
        kind: Kind::Int {
            min: 0,
            max: 100_000,
        },
        mutable: true,
        help: "After the last request, keep polling the sockets up to this many microseconds before sleeping (0 = off; the window adapts to the gaps between requests, and polling stops when another thread needs the CPU or the machine's CPUs are contended): saves the wake-up, tens of microseconds on virtual machines, at the cost of CPU while clients are active.",
    },
    Directive {
        name: "busy-reply-threshold",
        default: "5000",
        kind: Kind::Int {
            min: 0,
            max: I64_MAX,
        },
        mutable: true,
        help: "Milliseconds a script or function may run before other clients get -BUSY and SCRIPT KILL or FUNCTION KILL may stop it (alias lua-time-limit).",
    },
    Directive {
        name: "slowlog-log-slower-than",
        default: "10000",
        kind: Kind::Int {
            min: -1,
            max: I64_MAX,
        },
        mutable: true,
        help: "SLOWLOG records commands that take at least this many microseconds (0 = every command, negative = none).",
    },
    Directive {
        name: "slowlog-max-len",
        default: "128",
        kind: Kind::Int {
            min: 0,
            max: I64_MAX,
        },
        mutable: true,
        help: "Entries the slow log keeps; the oldest go first.",
    },
    Directive {
        name: "latency-monitor-threshold",
        default: "0",
        kind: Kind::Int {
            min: 0,
            max: I64_MAX,
        },
        mutable: true,
        help: "LATENCY records events (slow commands, snapshot and rewrite pauses) of at least this many milliseconds (0 = off).",
    },
    Directive {
        name: "latency-tracking",
        default: "yes",
        kind: Kind::Bool,
        mutable: true,
        help: "Keep a latency histogram per command for LATENCY HISTOGRAM and INFO latencystats.",
    },
    Directive {
        name: "latency-tracking-info-percentiles",
        default: "50 99 99.9",
        kind: Kind::Percentiles,
        mutable: true,
        help: "The percentiles INFO latencystats shows, space-separated, each 0 to 100.",
    },
    Directive {
        name: "protected-mode",
        default: "yes",
        kind: Kind::Bool,
        mutable: true,
        help: "Refuse non-loopback clients when no password is set.",
    },
    Directive {
        name: "metrics-port",
        default: "0",
        kind: Kind::Int { min: 0, max: 65535 },
        mutable: true,
        help: "Serve GET /metrics (Prometheus text, redis_exporter's names) on this port; 0 = off.",
    },
    Directive {
        name: "metrics-bind",
        default: "",
        kind: Kind::Str,
        mutable: true,
        help: "Address the metrics endpoint listens on; empty = the first `bind` address.",
    },
    Directive {
        name: "metrics-max-streams",
        default: "10000",
        kind: Kind::Int {
            min: 0,
            max: I64_MAX,
        },
        mutable: true,
        help: "Streams with per-stream series in a scrape; the rest are counted, not listed.",
    },
    Directive {
        name: "repl-diskless-sync",
        default: "yes",
        kind: Kind::Bool,
        mutable: true,
        help: "Full syncs stream the snapshot from memory (streamd always syncs diskless: the payload is produced from a copy-on-write clone, never written to the primary's disk); accepted for Redis's tools.",
    },
    Directive {
        name: "replica-serve-stale-data",
        default: "yes",
        kind: Kind::Bool,
        mutable: true,
        help: "While the link to the primary is down (or syncing), a replica answers with the data it has (yes) or refuses most commands with -MASTERDOWN (no).",
    },
    Directive {
        name: "replica-read-only",
        default: "yes",
        kind: Kind::Bool,
        mutable: true,
        help: "Replicas refuse write commands from clients with -READONLY.",
    },
    Directive {
        name: "replica-announced",
        default: "yes",
        kind: Kind::Bool,
        mutable: true,
        help: "Whether Sentinel lists this replica (INFO replication replica_announced).",
    },
    Directive {
        name: "replica-announce-ip",
        default: "",
        kind: Kind::Str,
        mutable: true,
        help: "The address a replica gives its primary (REPLCONF ip-address) instead of the connection's.",
    },
    Directive {
        name: "masteruser",
        default: "",
        kind: Kind::Str,
        mutable: true,
        help: "The user a replica authenticates as to its primary (AUTH masteruser masterauth).",
    },
    Directive {
        name: "masterauth",
        default: "",
        kind: Kind::Str,
        mutable: true,
        help: "The password a replica authenticates to its primary with.",
    },
    Directive {
        name: "replica-priority",
        default: "100",
        kind: Kind::Int {
            min: 0,
            max: I32_MAX,
        },
        mutable: true,
        help: "Sentinel promotes the replica with the lowest priority first; 0 never (INFO slave_priority).",
    },
    Directive {
        name: "repl-diskless-sync-delay",
        default: "5",
        kind: Kind::Int {
            min: 0,
            max: I32_MAX,
        },
        mutable: true,
        help: "Seconds a full sync waits for more replicas before it starts; only while a replica this primary has had is not connected (a first replica, or an old primary rejoining, syncs at once).",
    },
    Directive {
        name: "replica-announce-port",
        default: "0",
        kind: Kind::Int { min: 0, max: 65535 },
        mutable: true,
        help: "The port a replica gives its primary (REPLCONF listening-port) instead of its own.",
    },
    Directive {
        name: "repl-timeout",
        default: "60",
        kind: Kind::Int {
            min: 1,
            max: I32_MAX,
        },
        mutable: true,
        help: "Seconds without data (or PINGs) after which a replication link is dropped and reconnected.",
    },
    Directive {
        name: "repl-ping-replica-period",
        default: "10",
        kind: Kind::Int {
            min: 1,
            max: I32_MAX,
        },
        mutable: true,
        help: "Seconds between the PINGs a primary sends its replicas in the stream.",
    },
    Directive {
        name: "min-replicas-to-write",
        default: "0",
        kind: Kind::Int {
            min: 0,
            max: I32_MAX,
        },
        mutable: true,
        help: "A primary refuses writes (-NOREPLICAS) while fewer replicas than this acknowledged within min-replicas-max-lag; 0 off.",
    },
    Directive {
        name: "min-sync-replicas",
        default: "0",
        kind: Kind::Int {
            min: 0,
            max: I32_MAX,
        },
        mutable: true,
        help: "Synchronous replication: a primary releases a reply only once every replica of its sync set acknowledged it, and refuses writes (-NOREPLICAS) while the set has fewer members; a replica outside its primary's set refuses promotion. Set it on every server of the group; 0 off.",
    },
    Directive {
        name: "sync-replicas-timeout",
        default: "10000",
        kind: Kind::Int {
            min: 1,
            max: I32_MAX,
        },
        mutable: true,
        help: "Milliseconds a reply waits for the sync set before the command gets an error (its write may or may not be kept; it is never acknowledged later).",
    },
    Directive {
        name: "min-replicas-max-lag",
        default: "10",
        kind: Kind::Int {
            min: 0,
            max: I32_MAX,
        },
        mutable: true,
        help: "Seconds since a replica's last ACK for it to count toward min-replicas-to-write.",
    },
    Directive {
        name: "repl-diskless-sync-max-replicas",
        default: "0",
        kind: Kind::Int {
            min: 0,
            max: I32_MAX,
        },
        mutable: true,
        help: "A full sync starts before its delay once this many replicas wait; 0 no limit.",
    },
    Directive {
        name: "repl-backlog-size",
        default: "1048576",
        kind: Kind::Memory {
            min: 1,
            max: I64_MAX,
        },
        mutable: true,
        help: "Bytes of the replication stream kept so a replica that reconnects can continue (partial resync).",
    },
    Directive {
        name: "repl-backlog-ttl",
        default: "3600",
        kind: Kind::Int {
            min: 0,
            max: I64_MAX,
        },
        mutable: true,
        help: "Seconds without replicas after which a primary frees its backlog (0 never).",
    },
    Directive {
        name: "replicaof",
        default: "",
        kind: Kind::ReplicaOf,
        mutable: false,
        help: "The primary this server replicates (`replicaof <host> <port>`); REPLICAOF changes it and CONFIG REWRITE saves it.",
    },
    Directive {
        name: "sentinel-rejoin",
        default: "no",
        kind: Kind::Bool,
        mutable: true,
        help: "A primary left without replicas follows the primary that two Sentinels name in their __sentinel__:hello messages (newer configuration epoch) at once, instead of waiting 8-18 s for Sentinel's convert-to-slave; and a server promoted less than 10 s ago refuses REPLICAOF back to the primary it replaced unless a hello names that primary under a newer epoch (docs/replication.md).",
    },
    Directive {
        name: "shutdown-timeout",
        default: "10",
        kind: Kind::Int {
            min: 0,
            max: I32_MAX,
        },
        mutable: true,
        help: "SHUTDOWN/SIGTERM of a primary holds writes and waits up to this many seconds for lagging replicas to acknowledge everything.",
    },
    Directive {
        name: "cluster-enabled",
        default: "no",
        kind: Kind::Bool,
        mutable: false,
        help: "Run as a Redis Cluster node (startup only; docs/cluster.md).",
    },
    Directive {
        name: "cluster-config-file",
        default: "nodes.conf",
        kind: Kind::Str,
        mutable: false,
        help: "The node's cluster state file (nodes.conf format), in `dir`; written on every change.",
    },
    Directive {
        name: "cluster-node-timeout",
        default: "15000",
        kind: Kind::Int {
            min: 0,
            max: I64_MAX,
        },
        mutable: true,
        help: "Milliseconds a peer may be unreachable before it is suspected failing.",
    },
    Directive {
        name: "cluster-port",
        default: "0",
        kind: Kind::Int { min: 0, max: 65535 },
        mutable: false,
        help: "Cluster bus port; 0 = port + 10000.",
    },
    Directive {
        name: "cluster-announce-ip",
        default: "",
        kind: Kind::Str,
        mutable: true,
        help: "IP this node gives in redirections and CLUSTER SLOTS/SHARDS/NODES; empty = the address clients see.",
    },
    Directive {
        name: "cluster-announce-port",
        default: "0",
        kind: Kind::Int { min: 0, max: 65535 },
        mutable: true,
        help: "Client port announced to the cluster; 0 = the real port.",
    },
    Directive {
        name: "cluster-announce-bus-port",
        default: "0",
        kind: Kind::Int { min: 0, max: 65535 },
        mutable: true,
        help: "Bus port announced to the cluster; 0 = the real one.",
    },
    Directive {
        name: "cluster-announce-hostname",
        default: "",
        kind: Kind::Str,
        mutable: true,
        help: "Hostname announced to the cluster (CLUSTER SLOTS/SHARDS, NODES).",
    },
    Directive {
        name: "cluster-require-full-coverage",
        default: "yes",
        kind: Kind::Bool,
        mutable: true,
        help: "Refuse queries (CLUSTERDOWN) while any slot is unassigned.",
    },
    Directive {
        name: "cluster-slot-stats-enabled",
        default: "no",
        kind: Kind::Bool,
        mutable: true,
        help: "Count CPU time and network bytes per slot for CLUSTER SLOT-STATS (Redis 8.2).",
    },
    Directive {
        name: "cluster-allow-reads-when-down",
        default: "no",
        kind: Kind::Bool,
        mutable: true,
        help: "Serve reads while the cluster is down.",
    },
    Directive {
        name: "cluster-replica-validity-factor",
        default: "10",
        kind: Kind::Int {
            min: 0,
            max: I32_MAX,
        },
        mutable: true,
        help: "How stale (× node timeout) a replica may be and still fail over.",
    },
    Directive {
        name: "cluster-migration-barrier",
        default: "1",
        kind: Kind::Int {
            min: 0,
            max: I32_MAX,
        },
        mutable: true,
        help: "Replicas a primary keeps before one may migrate to an orphaned primary.",
    },
    Directive {
        name: "cluster-replica-no-failover",
        default: "no",
        kind: Kind::Bool,
        mutable: true,
        help: "This replica never fails over automatically.",
    },
    Directive {
        name: "cluster-allow-replica-migration",
        default: "yes",
        kind: Kind::Bool,
        mutable: true,
        help: "Replicas may migrate to orphaned primaries.",
    },
    Directive {
        name: "cluster-allow-pubsubshard-when-down",
        default: "yes",
        kind: Kind::Bool,
        mutable: true,
        help: "Serve sharded Pub/Sub while the cluster is down.",
    },
    Directive {
        name: "cluster-preferred-endpoint-type",
        default: "ip",
        kind: Kind::Enum(&["ip", "hostname", "unknown-endpoint"]),
        mutable: true,
        help: "What CLUSTER SLOTS/SHARDS and redirections name a node by: ip, hostname or unknown-endpoint.",
    },
];

/// A configuration error, worded like Redis's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// The running configuration: canonical value text per directive.
#[derive(Debug, Clone)]
pub struct Config {
    values: BTreeMap<&'static str, String>,
    /// Path of the config file it was loaded from, if any (CONFIG REWRITE target).
    pub file: Option<std::path::PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            values: all()
                .chain(redis::HIDDEN)
                .map(|d| (d.name, d.default.to_string()))
                .collect(),
            file: None,
        }
    }
}

/// Every directive: those streamd acts on ([`DIRECTIVES`]), then Redis's names that it
/// accepts without effect ([`redis::REDIS_ONLY`]).
pub fn all() -> impl Iterator<Item = &'static Directive> {
    DIRECTIVES.iter().chain(redis::REDIS_ONLY)
}

/// Finds a directive by name or by one of Redis's aliases, case-insensitively.
pub fn directive(name: &str) -> Option<&'static Directive> {
    let name = redis::ALIASES
        .iter()
        .find(|(alias, _)| alias.eq_ignore_ascii_case(name))
        .map_or(name, |(_, target)| target);
    all()
        .chain(redis::HIDDEN)
        .find(|d| d.name.eq_ignore_ascii_case(name))
}

/// True when streamd acts on the directive (a row of [`DIRECTIVES`]); false for Redis's
/// names it only accepts.
pub fn has_effect(d: &Directive) -> bool {
    DIRECTIVES.iter().any(|x| x.name == d.name)
}

/// Parses `4096`, `4kb`, `4k`, `1gb` ... as Redis's `memtoull` does.
pub fn parse_memory(s: &str) -> Option<i64> {
    let lower = s.to_ascii_lowercase();
    let units: [(&str, i64); 8] = [
        ("kb", 1024),
        ("mb", 1024 * 1024),
        ("gb", 1024 * 1024 * 1024),
        ("k", 1000),
        ("m", 1000 * 1000),
        ("g", 1000 * 1000 * 1000),
        ("b", 1),
        ("", 1),
    ];
    for (suffix, mul) in units {
        if let Some(num) = lower.strip_suffix(suffix) {
            if num.is_empty() || !num.bytes().all(|c| c.is_ascii_digit()) {
                continue;
            }
            return num.parse::<i64>().ok()?.checked_mul(mul);
        }
    }
    None
}

/// The client classes of `client-output-buffer-limit`, in Redis's order (`replica` is
/// accepted as another name for `slave`).
pub const CLIENT_CLASSES: [&str; 3] = ["normal", "slave", "pubsub"];

/// One class's output buffer limit: close a client whose pending replies exceed `hard`
/// bytes, or stay above `soft` bytes for `soft_seconds` (0 = no such limit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BufferLimit {
    /// Bytes that close the client at once (0 = none).
    pub hard: u64,
    /// Bytes that close the client once exceeded for `soft_seconds` (0 = none).
    pub soft: u64,
    /// Seconds a client may stay above `soft`.
    pub soft_seconds: u64,
}

impl BufferLimit {
    /// True when neither limit is set (Redis's default for normal clients).
    pub fn is_unlimited(&self) -> bool {
        self.hard == 0 && self.soft == 0
    }
}

/// Parses a canonical `client-output-buffer-limit` text into one limit per class of
/// [`CLIENT_CLASSES`].
fn parse_buffer_limits(text: &str) -> Result<[BufferLimit; 3], String> {
    let mut out = [BufferLimit::default(); 3];
    merge_buffer_limits(&mut out, text)?;
    Ok(out)
}

/// Applies `class hard soft seconds` groups to `limits` (Redis's wording for errors).
fn merge_buffer_limits(limits: &mut [BufferLimit; 3], text: &str) -> Result<(), String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if !words.len().is_multiple_of(4) {
        return Err("Wrong number of arguments in buffer limit configuration.".into());
    }
    for group in words.chunks_exact(4) {
        let class = match group[0].to_ascii_lowercase().as_str() {
            "normal" => 0,
            "slave" | "replica" => 1,
            "pubsub" => 2,
            _ => {
                return Err("Invalid client class specified in buffer limit configuration.".into());
            }
        };
        let bad = || "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
        let hard = parse_memory(group[1]).and_then(|v| u64::try_from(v).ok());
        let soft = parse_memory(group[2]).and_then(|v| u64::try_from(v).ok());
        let secs =
            crate::stream::id::string2ll(group[3].as_bytes()).and_then(|v| u64::try_from(v).ok());
        let (Some(hard), Some(soft), Some(soft_seconds)) = (hard, soft, secs) else {
            return Err(bad().into());
        };
        limits[class] = BufferLimit {
            hard,
            soft,
            soft_seconds,
        };
    }
    Ok(())
}

/// The canonical text of per-class limits (what `CONFIG GET` shows).
fn format_buffer_limits(limits: &[BufferLimit; 3]) -> String {
    CLIENT_CLASSES
        .iter()
        .zip(limits)
        .map(|(class, l)| format!("{class} {} {} {}", l.hard, l.soft, l.soft_seconds))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Validates `value` for `d` and returns its canonical text; `current` is the value in
/// force (directives like `client-output-buffer-limit` change only what `value` names).
fn canonical(d: &Directive, value: &str, current: &str) -> Result<String, String> {
    match d.kind {
        Kind::Bool => match value.to_ascii_lowercase().as_str() {
            "yes" => Ok("yes".into()),
            "no" => Ok("no".into()),
            _ => Err("argument must be 'yes' or 'no'".into()),
        },
        Kind::Int { min, max } => {
            let v: i64 = crate::stream::id::string2ll(value.as_bytes())
                .ok_or_else(|| "argument couldn't be parsed into an integer".to_string())?;
            if v < min || v > max {
                return Err(format!(
                    "argument must be between {min} and {max} inclusive"
                ));
            }
            Ok(v.to_string())
        }
        Kind::Memory { min, max } => {
            let v =
                parse_memory(value).ok_or_else(|| "argument must be a memory value".to_string())?;
            if v < min || v > max {
                return Err(format!(
                    "argument must be between {min} and {max} inclusive"
                ));
            }
            Ok(v.to_string())
        }
        Kind::Enum(words) => {
            let lower = value.to_ascii_lowercase();
            if words.contains(&lower.as_str()) {
                Ok(lower)
            } else {
                Err("argument(s) must be one of the following: ".to_string() + &words.join(", "))
            }
        }
        Kind::Str => Ok(value.to_string()),
        Kind::Percentiles => {
            let mut shown = Vec::new();
            for part in value.split_whitespace() {
                let p: f64 = part
                    .parse()
                    .ok()
                    .filter(|p: &f64| !p.is_nan())
                    .ok_or_else(|| format!("Invalid {} parameters", d.name))?;
                if !(0.0..=100.0).contains(&p) {
                    return Err(format!(
                        "{} parameters should sit between [0.0,100.0]",
                        d.name
                    ));
                }
                shown.push(p.to_string());
            }
            Ok(shown.join(" "))
        }
        Kind::Ratio => {
            let r: f64 = value
                .trim()
                .parse()
                .ok()
                .filter(|r: &f64| r.is_finite())
                .ok_or_else(|| "argument couldn't be parsed into a number".to_string())?;
            if !(0.0..=1.0).contains(&r) {
                return Err("argument must be between 0 and 1 inclusive".into());
            }
            Ok(r.to_string())
        }
        Kind::SavePoints => {
            let parts: Vec<&str> = value.split_whitespace().collect();
            if !parts.len().is_multiple_of(2) || parts.iter().any(|p| p.parse::<u64>().is_err()) {
                return Err("Invalid save parameters".into());
            }
            Ok(parts.join(" "))
        }
        Kind::BufferLimits => {
            let mut limits = parse_buffer_limits(current).unwrap_or_default();
            merge_buffer_limits(&mut limits, value)?;
            Ok(format_buffer_limits(&limits))
        }
        Kind::IntClamped { min, max, lo, hi } => {
            let exact = Directive {
                kind: Kind::Int { min, max },
                ..*d
            };
            let v: i64 = canonical(&exact, value, current)?
                .parse()
                .map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
            Ok(v.clamp(lo, hi).to_string())
        }
        Kind::Octal { max } => {
            let v = i64::from_str_radix(value, 8)
                .ok()
                .filter(|v| *v >= 0)
                .ok_or_else(|| "argument couldn't be parsed into an integer".to_string())?;
            if v > max {
                return Err(format!("argument must be between 0 and {max} inclusive"));
            }
            Ok(format!("{v:o}"))
        }
        Kind::MemoryOrPercent { max } => {
            if let Some(pct) = value.strip_suffix('%') {
                match crate::stream::id::string2ll(pct.as_bytes()) {
                    Some(p) if (0..=100).contains(&p) => Ok(format!("{p}%")),
                    Some(p) if p > 100 => {
                        Err("percentage argument must be less or equal to 100".into())
                    }
                    _ => Err("argument must be a memory or percent value".into()),
                }
            } else {
                let v = parse_memory(value)
                    .ok_or_else(|| "argument must be a memory or percent value".to_string())?;
                if v > max {
                    return Err(format!("argument must be between -100 and {max} inclusive"));
                }
                Ok(v.to_string())
            }
        }
        Kind::Flags(words) => {
            let mut out = Vec::new();
            for w in value.split_whitespace() {
                let lower = w.to_ascii_lowercase();
                if !words.contains(&lower.as_str()) {
                    return Err("argument(s) must be one of the following: ".to_string()
                        + &words.join(", "));
                }
                out.push(lower);
            }
            if out.is_empty() {
                return Err(
                    "argument(s) must be one of the following: ".to_string() + &words.join(", ")
                );
            }
            Ok(out.join(" "))
        }
        Kind::OomScoreAdjValues => {
            let parts: Vec<&str> = value.split_whitespace().collect();
            if parts.len() != 3 {
                return Err("wrong number of arguments".into());
            }
            let mut out = Vec::new();
            for p in parts {
                match crate::stream::id::string2ll(p.as_bytes()) {
                    Some(v) if (-2000..=2000).contains(&v) => out.push(v.to_string()),
                    _ => {
                        return Err("Invalid oom-score-adj-values, elements must be between -2000 and 2000.".into());
                    }
                }
            }
            Ok(out.join(" "))
        }
        Kind::ReplicaOf => {
            let parts: Vec<&str> = value.split_whitespace().collect();
            match parts.as_slice() {
                [] => Ok(String::new()),
                [no, one] if no.eq_ignore_ascii_case("no") && one.eq_ignore_ascii_case("one") => {
                    Ok(String::new())
                }
                [host, port] => match port.parse::<u16>() {
                    Ok(port) => Ok(format!("{host} {port}")),
                    Err(_) => Err("Invalid master port".into()),
                },
                _ => Err("wrong number of arguments".into()),
            }
        }
        Kind::KeyspaceEvents => keyspace_events(value)
            .ok_or_else(|| "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".to_string()),
    }
}

/// The keyspace notification classes of `notify-keyspace-events` as bits, with Redis's
/// values (`server.h` `NOTIFY_*`): what [`keyspace_event_flags`] returns and the core
/// caches (`core/notify.rs` publishes an event only when its class bit is set).
pub mod notify_class {
    /// `K`: publish on `__keyspace@<db>__:<key>`.
    pub const KEYSPACE: u32 = 1 << 0;
    /// `E`: publish on `__keyevent@<db>__:<event>`.
    pub const KEYEVENT: u32 = 1 << 1;
    /// `g`: generic commands (DEL, EXPIRE, RENAME, COPY, RESTORE, ...).
    pub const GENERIC: u32 = 1 << 2;
    /// `$`: string commands.
    pub const STRING: u32 = 1 << 3;
    /// `l`: list commands.
    pub const LIST: u32 = 1 << 4;
    /// `s`: set commands.
    pub const SET: u32 = 1 << 5;
    /// `h`: hash commands.
    pub const HASH: u32 = 1 << 6;
    /// `z`: sorted set commands.
    pub const ZSET: u32 = 1 << 7;
    /// `x`: a key removed because its TTL passed (`expired`).
    pub const EXPIRED: u32 = 1 << 8;
    /// `e`: a key evicted for maxmemory (`evicted`).
    pub const EVICTED: u32 = 1 << 9;
    /// `t`: stream commands.
    pub const STREAM: u32 = 1 << 10;
    /// `m`: a read of a missing key (`keymiss`); not part of `A`.
    pub const KEY_MISS: u32 = 1 << 11;
    /// `d`: module key types.
    pub const MODULE: u32 = 1 << 13;
    /// `n`: a key added to the dataset (`new`); not part of `A`.
    pub const NEW: u32 = 1 << 14;
    /// `A`: every type class (`g$lshzxetd`), not `K`, `E`, `m` or `n`.
    pub const ALL: u32 =
        GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;
}

/// The classes in the order Redis writes them back (`notify.c`): letter and bit.
const KEYSPACE_CLASSES: [(char, u32); 14] = {
    use notify_class::*;
    [
        ('g', GENERIC),
        ('$', STRING),
        ('l', LIST),
        ('s', SET),
        ('h', HASH),
        ('z', ZSET),
        ('x', EXPIRED),
        ('e', EVICTED),
        ('t', STREAM),
        ('d', MODULE),
        ('n', NEW),
        ('K', KEYSPACE),
        ('E', KEYEVENT),
        ('m', KEY_MISS),
    ]
};

/// The class bits of a `notify-keyspace-events` value (Redis:
/// `keyspaceEventsStringToFlags`), or `None` for a letter Redis does not know.
pub fn keyspace_event_flags(value: &str) -> Option<u32> {
    let mut flags = 0;
    for c in value.chars() {
        flags |= if c == 'A' {
            notify_class::ALL
        } else {
            KEYSPACE_CLASSES.iter().find(|(l, _)| *l == c)?.1
        };
    }
    Some(flags)
}

/// Canonical text of a `notify-keyspace-events` value (`Ex` → `xE`, all type classes →
/// `A`), or `None` for a letter Redis does not know (Redis:
/// `keyspaceEventsFlagsToString`).
fn keyspace_events(value: &str) -> Option<String> {
    let flags = keyspace_event_flags(value)?;
    let mut out = String::new();
    let all = flags & notify_class::ALL == notify_class::ALL;
    if all {
        out.push('A');
    }
    for (letter, bit) in KEYSPACE_CLASSES {
        let in_all = bit & notify_class::ALL != 0;
        if flags & bit != 0 && !(all && in_all) {
            out.push(letter);
        }
    }
    Some(out)
}

impl Config {
    /// Reads a redis.conf-syntax file and then applies command-line directives
    /// (`["--port", "7000", "--appendonly", "no"]`). Errors carry Redis's wording with
    /// the offending line.
    pub fn load(file: Option<&Path>, cli: &[String]) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        let mut text = String::new();
        if let Some(path) = file {
            text = std::fs::read_to_string(path).map_err(|e| {
                ConfigError(format!(
                    "Fatal error, can't open config file '{}': {e}",
                    path.display()
                ))
            })?;
            config.file = Some(path.to_path_buf());
        }
        config.apply_text(&text, 0)?;
        // Command-line directives become extra lines: "--port 7000" → "port 7000".
        let mut lines = Vec::new();
        for arg in cli {
            if let Some(name) = arg.strip_prefix("--") {
                lines.push(name.to_string());
            } else if let Some(last) = lines.last_mut() {
                last.push(' ');
                last.push_str(&quote_arg(arg));
            } else {
                return Err(fatal(0, arg, "Bad directive or wrong number of arguments"));
            }
        }
        config.apply_text(&lines.join("\n"), text.lines().count())?;
        Ok(config)
    }

    fn apply_text(&mut self, text: &str, line_offset: usize) -> Result<(), ConfigError> {
        // In a file, `save` lines add up (Redis: the first one replaces the default).
        let mut saves_seen = false;
        for (n, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let args =
                crate::resp::inline::split_args(&bytes::Bytes::copy_from_slice(line.as_bytes()))
                    .map_err(|_| {
                        fatal(
                            n + 1 + line_offset,
                            line,
                            "Unbalanced quotes in configuration line",
                        )
                    })?;
            let args: Vec<String> = args
                .iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            let Some((name, values)) = args.split_first() else {
                continue;
            };
            let Some(d) = directive(name) else {
                return Err(fatal(
                    n + 1 + line_offset,
                    line,
                    "Bad directive or wrong number of arguments",
                ));
            };
            let value = match d.kind {
                Kind::SavePoints if saves_seen && values.iter().any(|v| !v.is_empty()) => {
                    let before = self.values.get(d.name).map(String::as_str).unwrap_or("");
                    format!("{before} {}", values.join(" "))
                }
                Kind::Str if d.name == "bind" => values.join(" "),
                kind if kind.multi_arg() => values.join(" "),
                _ if values.len() == 1 => values[0].clone(),
                _ => {
                    return Err(fatal(
                        n + 1 + line_offset,
                        line,
                        "Bad directive or wrong number of arguments",
                    ));
                }
            };
            let current = self
                .values
                .get(d.name)
                .map(String::as_str)
                .unwrap_or(d.default);
            let canon =
                canonical(d, &value, current).map_err(|e| fatal(n + 1 + line_offset, line, &e))?;
            saves_seen |= d.kind == Kind::SavePoints;
            self.values.insert(d.name, canon);
        }
        Ok(())
    }

    /// The canonical text of a directive.
    pub fn get(&self, name: &str) -> Option<&str> {
        directive(name)
            .and_then(|d| self.values.get(d.name))
            .map(String::as_str)
    }

    /// Sets `name` to `value` (already canonical) from inside the server, as REPLICAOF
    /// does to `replicaof` so CONFIG REWRITE and CONFIG GET see the current primary.
    pub fn set_value(&mut self, name: &'static str, value: String) {
        if let Some(d) = directive(name) {
            self.values.insert(d.name, value);
        }
    }

    /// A numeric directive's value (0 if it is not numeric).
    pub fn get_i64(&self, name: &str) -> i64 {
        self.get(name).and_then(|v| v.parse().ok()).unwrap_or(0)
    }

    /// A port directive that overrides a default when set: `Some` for 1..=65535, `None`
    /// for 0 (unset) or anything else.
    pub fn get_port(&self, name: &str) -> Option<u16> {
        match self.get_i64(name) {
            p @ 1..=65535 => Some(p as u16),
            _ => None,
        }
    }

    /// A yes/no directive's value.
    pub fn get_bool(&self, name: &str) -> bool {
        self.get(name) == Some("yes")
    }

    /// The `client-output-buffer-limit` of one class of [`CLIENT_CLASSES`] (`normal`,
    /// `slave`, `pubsub`); no limit for an unknown class.
    pub fn output_buffer_limit(&self, class: &str) -> BufferLimit {
        let Some(i) = CLIENT_CLASSES.iter().position(|c| *c == class) else {
            return BufferLimit::default();
        };
        self.get("client-output-buffer-limit")
            .and_then(|text| parse_buffer_limits(text).ok())
            .map(|limits| limits[i])
            .unwrap_or_default()
    }

    /// All (name, value) pairs whose name matches the glob `pattern` (CONFIG GET):
    /// directives, then Redis's aliases with the value of the name they stand for; a
    /// hidden setting ([`redis::HIDDEN`]) only for its exact name, as in Redis.
    pub fn matching(&self, pattern: &[u8]) -> Vec<(&'static str, &str)> {
        let value = |name: &str| self.values.get(name).map(String::as_str).unwrap_or("");
        let hidden = redis::HIDDEN
            .iter()
            .filter(|d| d.name.as_bytes().eq_ignore_ascii_case(pattern))
            .map(|d| (d.name, d.name));
        all()
            .map(|d| (d.name, d.name))
            .chain(redis::ALIASES.iter().copied())
            .filter(|(name, _)| crate::util::glob_match(pattern, name.as_bytes(), true))
            .chain(hidden)
            .map(|(name, target)| (name, value(target)))
            .collect()
    }

    /// CONFIG SET of several pairs: all validated first, then all applied (atomic).
    pub fn set_many(&mut self, pairs: &[(String, String)]) -> Result<(), String> {
        let mut staged = Vec::new();
        for (i, (name, value)) in pairs.iter().enumerate() {
            if pairs[..i].iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
                return Err(format!(
                    "ERR CONFIG SET failed (possibly related to argument '{name}') - duplicate parameter"
                ));
            }
            let Some(d) = directive(name) else {
                return Err(format!(
                    "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
                ));
            };
            if !d.mutable {
                return Err(format!(
                    "ERR CONFIG SET failed (possibly related to argument '{name}') - can't set immutable config"
                ));
            }
            let current = self
                .values
                .get(d.name)
                .map(String::as_str)
                .unwrap_or(d.default);
            let canon = canonical(d, value, current).map_err(|e| {
                format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {e}")
            })?;
            staged.push((d.name, canon));
        }
        for (name, value) in staged {
            self.values.insert(name, value);
        }
        Ok(())
    }
}

/// The commented sample configuration (`conf/streamd.conf`), generated from
/// [`DIRECTIVES`] so the file can never disagree with the code (a test pins it).
pub fn sample_conf() -> String {
    let mut out = String::from(
        "# streamd sample configuration (redis.conf syntax).\n\
         #\n\
         # Start with:   streamd conf/streamd.conf\n\
         # Every directive can also be given on the command line: --port 7000 --appendonly no\n\
         # The values below are the defaults. Directives marked (runtime) can be changed\n\
         # with CONFIG SET while the server runs.\n\n",
    );
    for d in DIRECTIVES {
        out.push_str(&format!(
            "# {}{}\n",
            d.help,
            if d.mutable { " (runtime)" } else { "" }
        ));
        out.push_str(&format!("{} {}\n\n", d.name, quote_arg(d.default)));
    }
    out.push_str(
        "# Every other Redis 7.0 directive (aof-use-rdb-preamble, activedefrag,\n\
         # jemalloc-bg-thread, ...) is accepted here, on the command line and by CONFIG SET\n\
         # with Redis's syntax and default, but has no effect in streamd; docs/configuration.md\n\
         # lists them with the reason.\n",
    );
    out
}

/// The configuration reference page (`docs/configuration.md`), generated from
/// [`DIRECTIVES`] (a test pins it).
pub fn docs_page() -> String {
    let mut out = String::from(
        "# Configuration\n\n\
         streamd reads a configuration file in redis.conf syntax (`streamd /path/to/streamd.conf`)\n\
         and then applies command-line directives (`--port 7000 --dir /var/lib/streamd`), which win.\n\
         An unknown or malformed directive stops start-up with Redis's `Bad directive or wrong\n\
         number of arguments` message naming the offending line. `CONFIG GET pattern` reads values\n\
         at run time; `CONFIG SET` changes those marked *runtime* (several pairs at once, all\n\
         validated before any is applied); `CONFIG REWRITE` writes the running configuration back\n\
         into the file the server was started with, as Redis does: comments and order kept, changed\n\
         lines rewritten in place, new non-default ones appended under `# Generated by CONFIG\n\
         REWRITE`, atomically (temporary file, fsync, rename).\n\n\
         `conf/streamd.conf` is a commented sample listing every directive with its default. Both\n\
         it and this page are generated from the tables in `src/config/`\n\
         (`STREAMD_REGEN=1 cargo test --lib config` rewrites them).\n\n\
         | Directive | Default | Runtime | Meaning |\n|---|---|---|---|\n",
    );
    for d in DIRECTIVES {
        out.push_str(&format!(
            "| `{}` | `{}` | {} | {} |\n",
            d.name,
            d.default,
            if d.mutable { "yes" } else { "no" },
            d.help
        ));
    }
    out.push_str(
        "\n## Accepted, no effect in streamd\n\n\
         Every other name Redis 7.0 lists in `CONFIG GET *` is accepted in the configuration file,\n\
         on the command line and by `CONFIG SET`, with Redis's value syntax (memory units, `yes`/`no`,\n\
         enums, Redis's integer ranges), Redis's errors for bad values and Redis's mutability (an\n\
         immutable name gives `can't set immutable config`). `CONFIG GET` shows its value (Redis's\n\
         default until set) and `CONFIG REWRITE` writes it back, but nothing in streamd acts on it,\n\
         so that Redis tools and test frameworks that set these never abort. The table is\n\
         `src/config/redis.rs`; a name moves to the table above when streamd gives it its effect.\n\n\
         | Directive | Default | Runtime | Why it has no effect |\n|---|---|---|---|\n",
    );
    for d in redis::REDIS_ONLY {
        out.push_str(&format!(
            "| `{}` | `{}` | {} | {} |\n",
            d.name,
            d.default,
            if d.mutable { "yes" } else { "no" },
            d.help
        ));
    }
    out.push_str(
        "\n## Aliases\n\n\
         Redis's older names read and write the same value as the name they stand for, and\n\
         `CONFIG GET *` lists both; `CONFIG REWRITE` writes the current name.\n\n\
         | Alias | Stands for |\n|---|---|\n",
    );
    for (alias, target) in redis::ALIASES {
        out.push_str(&format!("| `{alias}` | `{target}` |\n"));
    }
    out
}

/// Quotes a value for a config line when it is empty or has spaces.
fn quote_arg(v: &str) -> String {
    if v.is_empty() || v.contains(char::is_whitespace) || v.contains('"') {
        format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        v.to_string()
    }
}

fn fatal(line_no: usize, line: &str, why: &str) -> ConfigError {
    ConfigError(format!(
        "\n*** FATAL CONFIG FILE ERROR (streamd {}) ***\nReading the configuration file, at line {line_no}\n>>> '{line}'\n{why}",
        crate::STREAMD_VERSION
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn defaults_are_redis_defaults() {
        let c = Config::default();
        assert_eq!(c.get("port"), Some("6379"));
        assert_eq!(c.get("stream-node-max-entries"), Some("100"));
        assert_eq!(c.get("save"), Some("3600 1 300 100 60 10000"));
    }

    #[test]
    fn command_line_overrides_and_accepts_empty_save() {
        let c = Config::load(
            None,
            &cli(&["--port", "7000", "--save", "", "--appendonly", "no"]),
        )
        .unwrap();
        assert_eq!(c.get_i64("port"), 7000);
        assert_eq!(c.get("save"), Some(""));
        assert!(!c.get_bool("appendonly"));
    }

    #[test]
    fn unknown_directive_stops_startup_naming_the_line() {
        let e = Config::load(None, &cli(&["--no-such-thing", "1"])).unwrap_err();
        assert!(
            e.0.contains("Bad directive or wrong number of arguments"),
            "{e}"
        );
        assert!(e.0.contains(">>> 'no-such-thing 1'"), "{e}");
    }

    #[test]
    fn memory_units() {
        assert_eq!(parse_memory("4kb"), Some(4096));
        assert_eq!(parse_memory("1GB"), Some(1 << 30));
        assert_eq!(parse_memory("12"), Some(12));
        assert_eq!(parse_memory("x"), None);
    }

    #[test]
    fn sample_conf_and_docs_list_every_directive() {
        let root = env!("CARGO_MANIFEST_DIR");
        let files = [
            ("conf/streamd.conf", sample_conf()),
            ("docs/configuration.md", docs_page()),
        ];
        for (path, expected) in files {
            let full = format!("{root}/{path}");
            if std::env::var_os("STREAMD_REGEN").is_some() {
                std::fs::write(&full, &expected).unwrap();
            }
            let actual = std::fs::read_to_string(&full).unwrap_or_default();
            assert_eq!(
                actual, expected,
                "{path} is stale: run STREAMD_REGEN=1 cargo test --lib config"
            );
        }
        // The sample itself must load and give the defaults.
        let c = Config::load(
            Some(std::path::Path::new(&format!("{root}/conf/streamd.conf"))),
            &[],
        )
        .unwrap();
        for d in DIRECTIVES {
            assert_eq!(c.get(d.name), Some(d.default), "{}", d.name);
        }
    }

    #[test]
    fn output_buffer_limit_changes_only_the_classes_named() {
        let mut c = Config::default();
        assert_eq!(c.output_buffer_limit("normal"), BufferLimit::default());
        c.set_many(&[(
            "client-output-buffer-limit".into(),
            "normal 1mb 512kb 10".into(),
        )])
        .unwrap();
        assert_eq!(
            c.get("client-output-buffer-limit"),
            Some("normal 1048576 524288 10 slave 268435456 67108864 60 pubsub 33554432 8388608 60")
        );
        assert_eq!(
            c.output_buffer_limit("normal"),
            BufferLimit {
                hard: 1 << 20,
                soft: 1 << 19,
                soft_seconds: 10
            }
        );
        let err = |v: &str| {
            Config::default()
                .set_many(&[("client-output-buffer-limit".into(), v.into())])
                .unwrap_err()
        };
        assert!(
            err("normal 1mb 512kb")
                .ends_with("Wrong number of arguments in buffer limit configuration.")
        );
        assert!(
            err("foo 1 1 1")
                .ends_with("Invalid client class specified in buffer limit configuration.")
        );
        assert!(err("normal x 1 1").ends_with(
            "Error in hard, soft or soft_seconds setting in buffer limit configuration."
        ));
        // Config file lines merge the same way; `replica` names the `slave` class.
        let c = Config::load(
            None,
            &cli(&["--client-output-buffer-limit", "replica", "1", "2", "3"]),
        )
        .unwrap();
        assert_eq!(c.output_buffer_limit("slave").soft_seconds, 3);
        assert_eq!(c.output_buffer_limit("normal"), BufferLimit::default());
    }

    #[test]
    fn config_set_is_atomic() {
        let mut c = Config::default();
        let err = c
            .set_many(&[
                ("stream-node-max-entries".into(), "7".into()),
                ("stream-node-max-bytes".into(), "nope".into()),
            ])
            .unwrap_err();
        assert!(err.contains("stream-node-max-bytes"));
        assert_eq!(c.get("stream-node-max-entries"), Some("100"));
        c.set_many(&[("stream-node-max-entries".into(), "7".into())])
            .unwrap();
        assert_eq!(c.get_i64("stream-node-max-entries"), 7);
    }

    #[test]
    fn every_redis_name_loads_from_a_file_at_its_default() {
        let mut text = String::new();
        for d in redis::REDIS_ONLY {
            let value = if d.kind.multi_arg() {
                d.default.to_string()
            } else {
                quote_arg(d.default)
            };
            text.push_str(&format!("{} {value}\n", d.name));
        }
        for (alias, target) in redis::ALIASES {
            let d = directive(target).expect("alias target exists");
            text.push_str(&format!("{alias} {}\n", quote_arg(d.default)));
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("redis.conf");
        std::fs::write(&path, text).expect("write");
        let c = Config::load(Some(&path), &[]).expect("every Redis name loads");
        for d in redis::REDIS_ONLY {
            assert_eq!(c.get(d.name), Some(d.default), "{}", d.name);
            assert!(!has_effect(d), "{}", d.name);
        }
        assert_eq!(c.get("slave-read-only"), Some("yes"));
        assert_eq!(c.get("lua-time-limit"), Some("5000"));
    }

    #[test]
    fn redis_value_syntax_and_errors() {
        let set = |name: &str, value: &str| {
            let mut c = Config::default();
            c.set_many(&[(name.into(), value.into())])
                .map(|()| c.get(name).unwrap_or("").to_string())
        };
        assert_eq!(set("repl-backlog-size", "4mb").as_deref(), Ok("4194304"));
        assert_eq!(set("notify-keyspace-events", "Ex").as_deref(), Ok("xE"));
        assert_eq!(set("notify-keyspace-events", "KEA").as_deref(), Ok("AKE"));
        assert_eq!(
            set("notify-keyspace-events", "g$lshzxetd").as_deref(),
            Ok("A")
        );
        assert_eq!(set("maxmemory-clients", "10%").as_deref(), Ok("10%"));
        assert_eq!(
            set("shutdown-on-sigint", "NOSAVE now").as_deref(),
            Ok("nosave now")
        );
        assert_eq!(set("slave-read-only", "no").as_deref(), Ok("no"));
        assert_eq!(set("busy-reply-threshold", "7").as_deref(), Ok("7"));
        let prefix = |name: &str| {
            format!("ERR CONFIG SET failed (possibly related to argument '{name}') - ")
        };
        let cases = [
            ("hz", "abc", "argument couldn't be parsed into an integer"),
            (
                "repl-backlog-size",
                "0",
                "argument must be between 1 and 9223372036854775807 inclusive",
            ),
            ("repl-backlog-size", "1x", "argument must be a memory value"),
            ("activedefrag", "maybe", "argument must be 'yes' or 'no'"),
            ("daemonize", "yes", "can't set immutable config"),
            ("replicaof", "a 1", "can't set immutable config"),
            (
                "repl-diskless-load",
                "x",
                "argument(s) must be one of the following: disabled, on-empty-db, swapdb",
            ),
            (
                "notify-keyspace-events",
                "Q",
                "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.",
            ),
            ("oom-score-adj-values", "1 2", "wrong number of arguments"),
        ];
        for (name, value, why) in cases {
            assert_eq!(set(name, value), Err(prefix(name) + why), "{name} {value}");
        }
        assert_eq!(
            set("no-such-option", "1"),
            Err(
                "ERR Unknown option or number of arguments for CONFIG SET - 'no-such-option'"
                    .into()
            )
        );
    }

    #[test]
    fn save_lines_in_a_file_add_up_and_aliases_are_listed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("redis.conf");
        std::fs::write(&path, "save 900 1\nsave 300 10\nunixsocketperm 700\n").expect("write");
        let c = Config::load(Some(&path), &[]).expect("load");
        assert_eq!(c.get("save"), Some("900 1 300 10"));
        assert_eq!(c.get("unixsocketperm"), Some("700"));
        let names: Vec<&str> = c.matching(b"slave-*").iter().map(|(n, _)| *n).collect();
        assert!(names.contains(&"slave-read-only"), "{names:?}");
        assert_eq!(c.matching(b"replicaof"), vec![("replicaof", "")]);
    }
}
