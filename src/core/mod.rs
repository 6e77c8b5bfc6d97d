//! The core: owns the keyspace, the clients' shared state and the statistics, and runs
//! every command, one at a time (DESIGN.md §2).
//!
//! streamd runs the whole server on one current-thread tokio runtime: connection tasks
//! read and parse on the same thread that executes, and borrow the `Core` for the time
//! of one batch of pipelined commands. That is Redis's own model (one thread does I/O and
//! commands), needs no locks or channel hops, and measured faster than a channel to a
//! separate core thread on a 2-core machine where the load generator needs a core.
//!
//! Command flow ([`Core::execute`]): look the command up in the table → arity → auth →
//! maxmemory (denyoom) → loading → MULTI queueing → run the handler against a [`Ctx`] →
//! statistics → MONITOR feed.
//!
//! **Its layer.** The core sits above the data types (`stream`), the wire (`resp`),
//! `config` and `error`, and below everything that uses it: `commands` (handlers get a
//! [`Ctx`]), `persist`, `server`. Two things it needs come from above and arrive
//! through interfaces it defines, so no import points up: the command table's rows
//! (`commands::FAMILIES`, handed to [`Core::new`] and installed by [`command::install`])
//! and persistence (the [`persistence::Persistence`] trait, implemented by `persist/`
//! and installed with [`Core::set_persistence`]). Clients as commands see them
//! ([`client`]), their mailboxes ([`mailbox`]) and limits ([`limits`]) are the core's;
//! the connection task keeps only the socket side.

pub mod acl;
pub mod blocked;
pub mod client;
pub mod cluster;
pub mod cmdstats;
pub mod command;
pub mod dict;
pub mod direct_write;
pub mod evict;
mod field_expire;
pub mod hotkeys;
pub mod keyspace;
pub mod latency;
pub mod lazyfree;
pub mod lifecycle;
pub mod limits;
pub mod mailbox;
pub mod migrate_sockets;
pub mod notify;
pub mod pause;
pub mod persistence;
pub mod prefetch;
pub mod pubsub;
pub mod replication;
pub mod script;
pub mod siphash;
pub mod slowlog;
pub mod syncrepl;
pub mod ticks;
pub mod tier;
pub mod tracking;
pub mod waker_slot;
mod writes;

use crate::config::Config;
use crate::error::ReplyError;
use crate::resp::Argv;
use crate::resp::writer::RespWriter;
use crate::stream::{NodeLimits, Stream};
use crate::types::{Thresholds, Value};
use blocked::BlockedClients;
use bytes::Bytes;
use client::{BlockState, Client, ClientMsg};
use command::{CommandSpec, flags};
use keyspace::Db;
use persistence::{NoPersistence, Persistence};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;
use std::time::Instant;
use tokio::sync::Notify;

/// The Redis version streamd answers with under the default `compat-version` (HELLO
/// `version`, INFO `redis_version`); [`redis_version`] gives it for any setting.
pub const REDIS_VERSION: &str = "8.10.0";

/// The Redis version reported for `compat-version` `(major, minor)`: `<major>.<minor>.0`,
/// so clients that gate features on the server's version see exactly the surface that
/// `compat-version` leaves visible (8.10 → `8.10.0`, 7.4 → `7.4.0`).
pub fn redis_version(compat: (u8, u8)) -> String {
    format!("{}.{}.0", compat.0, compat.1)
}

/// The core as the runtime's tasks share it: one thread, borrowed for one batch at a
/// time.
pub type SharedCore = Rc<RefCell<Core>>;

/// The connected clients by id (see [`Core::clients`]).
pub type ClientTable = HashMap<u64, Client, foldhash::fast::FixedState>;

/// Per-command counters (INFO commandstats).
#[derive(Debug, Default, Clone)]
pub struct CommandStats {
    /// Successful and failed calls.
    pub calls: u64,
    /// Total microseconds spent.
    pub usec: u64,
    /// Calls rejected before running (arity, auth...).
    pub rejected_calls: u64,
    /// Calls that ran and returned an error.
    pub failed_calls: u64,
    /// Latency distribution of the calls, while `latency-tracking` is on (created at
    /// the first call, as Redis allocates it).
    pub histogram: Option<Box<latency::CommandHistogram>>,
}

/// Server statistics (INFO stats).
#[derive(Debug, Default, Clone)]
pub struct Stats {
    /// Connections accepted.
    pub total_connections_received: u64,
    /// Blocked clients served with data (a connection compares it before and after its
    /// batch to let the clients it woke write first).
    pub unblocked_served: u64,
    /// Pub/Sub messages queued for subscribers (a publishing connection compares it
    /// before and after its batch to write its own replies before the subscribers').
    pub pubsub_deliveries: u64,
    /// Commands processed.
    pub total_commands_processed: u64,
    /// Connections refused by maxclients.
    pub rejected_connections: u64,
    /// Keys removed by expiry.
    pub expired_keys: u64,
    /// Keys removed by eviction at maxmemory.
    pub evicted_keys: u64,
    /// Hash fields removed by field expiry (Redis 7.4's `expired_subkeys`).
    pub expired_subkeys: u64,
    /// Lookups of existing keys.
    pub keyspace_hits: u64,
    /// Lookups of missing keys.
    pub keyspace_misses: u64,
    /// Error replies by code (INFO errorstats).
    pub errors: BTreeMap<String, u64>,
    /// Per-command counters, by full lower-case name (`cmdstats.rs`: every command
    /// updates it, INFO sorts it when asked).
    pub commands: cmdstats::CommandStatsTable,
    /// Bytes read from clients.
    pub net_input_bytes: u64,
    /// Bytes written to clients.
    pub net_output_bytes: u64,
    /// Clients closed for going over `client-query-buffer-limit`.
    pub client_query_buffer_limit_disconnections: u64,
    /// Clients closed for going over `client-output-buffer-limit`.
    pub client_output_buffer_limit_disconnections: u64,
    /// Entries removed by retention (MAXAGE/MAXBYTES), on XADD and by the sweep.
    pub stream_retention_trimmed_entries: u64,
    /// Entries moved to dead-letter streams.
    pub stream_dead_lettered_entries: u64,
    /// The longest cron tick of the stream lifecycle passes, µs (lifecycle.rs).
    pub stream_lifecycle_max_tick_usec: u64,
}

/// How the server should stop (SHUTDOWN / signals).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownKind {
    /// Save if persistence is configured to (default).
    Default,
    /// SHUTDOWN SAVE.
    Save,
    /// SHUTDOWN NOSAVE.
    NoSave,
}

/// Which deletions free their values on the background thread (`lazyfree.rs`), from
/// the `lazyfree-lazy-*` settings; UNLINK and FLUSH* ASYNC always do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LazySettings {
    /// Evicted keys.
    pub eviction: bool,
    /// Expired keys.
    pub expire: bool,
    /// Values the server deletes itself (overwrites, RENAME and STORE destinations).
    pub server_del: bool,
    /// DEL.
    pub user_del: bool,
    /// FLUSHALL/FLUSHDB (and SCRIPT/FUNCTION FLUSH) without SYNC or ASYNC.
    pub user_flush: bool,
}

/// Which listening sockets a CONFIG SET changed the configuration of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Relisten {
    /// `bind` changed: every client listener moves.
    pub bind: bool,
    /// `port` changed: the plain listeners move.
    pub port: bool,
    /// `tls-port` or a TLS file or setting changed: the TLS listeners and acceptor.
    pub tls: bool,
    /// `metrics-bind` or `metrics-port` changed (or `bind`, which it defaults to).
    pub metrics: bool,
}

impl Relisten {
    /// True when some listener has to be rebound.
    pub fn any(&self) -> bool {
        self.bind || self.port || self.tls || self.metrics
    }
}

/// Rebinds what [`Relisten`] names from the configuration as it now is, closing the old
/// sockets first (as Redis does); returns the plain port now listened on (0: none), or
/// Redis's reason for the failure. Installed by the front end.
pub type RelistenHook = Rc<dyn Fn(&crate::config::Config, Relisten) -> Result<u16, &'static str>>;

/// The single owner of all data.
pub struct Core {
    /// Running configuration.
    pub config: Config,
    /// Cached node limits (from the config, refreshed on CONFIG SET).
    pub node_limits: NodeLimits,
    /// Cached `stream-idmp-duration` and `stream-idmp-maxsize`: the IDMP settings a
    /// stream gets when it first uses IDMP.
    pub idmp_defaults: (i64, i64),
    /// `stream-node-reclaim-ratio`: a node is rewritten without its tombstones once they
    /// are more than this share of its entries (1 = never; core/lifecycle.rs).
    pub reclaim_ratio: f64,
    /// The collections' encoding thresholds (`hash-max-listpack-entries` and friends).
    pub thresholds: Thresholds,
    /// Cached `compat-version` as `(major, minor)`: features newer than it are hidden
    /// from clients (never from the loader).
    pub compat: (u8, u8),
    /// Databases.
    pub dbs: Vec<Db>,
    /// Connected clients other than the one executing right now. Every batch of commands
    /// takes its client out and puts it back, so the table hashes with foldhash: ids are
    /// the server's own sequence numbers, nothing a client could choose to collide.
    pub clients: ClientTable,
    /// Next client id to hand out.
    pub next_client_id: u64,
    /// Statistics.
    pub stats: Stats,
    /// Process start.
    pub started: Instant,
    /// TCP port served (INFO).
    pub port: u16,
    /// Writes since the last save.
    pub dirty: u64,
    /// Unix seconds of the last successful save (LASTSAVE).
    pub lastsave: u64,
    /// Set when SHUTDOWN was requested.
    pub shutdown: Option<ShutdownKind>,
    /// Versions of watched keys: (db, key) → (version, number of watchers).
    pub watched_keys: HashMap<(usize, Bytes), (u64, u32)>,
    /// Ids of clients in MONITOR mode.
    pub monitors: Vec<u64>,
    /// Keys signalled ready for blocked clients since the last round: (db, key).
    pub ready_keys: Vec<(usize, Bytes)>,
    /// Clients blocked in XREAD/XREADGROUP.
    pub blocked: BlockedClients,
    /// Wakes the timer task when an earlier block deadline appears.
    pub block_timer: Rc<Notify>,
    /// While a blocked command is re-executed: its block, which the client keeps (its
    /// place in the queues, its deadline) if the command blocks again.
    pub reprocessing: Option<BlockState>,
    /// While `execute_one` runs a client's command, whose arguments it owns: a block
    /// taken now gets them moved in when the command returns instead of a copy (see
    /// [`Ctx::block`]); nothing reads a block's command before that.
    argv_handed_over: bool,
    /// While a blocked command is re-executed because a key was signalled ready: that
    /// key (list pops serve from it only, as Redis 7.0's `serveClientsBlockedOnListKey`).
    pub reprocess_key: Option<Bytes>,
    /// Unix ms of the current batch: the command time of every command in it (one
    /// clock read per batch, not per command).
    pub batch_now_ms: u64,
    /// The table rows of the last two command names looked up, the latest first: a
    /// pipeline, and many clients sending the same command, look the same name up again,
    /// and a script alternates two (EVALSHA and its `redis.call`) (`lookup_command`).
    last_commands: [Option<&'static CommandSpec>; 2],
    /// When the previous command ended (or the batch began): the start of the next
    /// command's time for INFO commandstats, so each command costs one clock read
    /// (`core/ticks.rs`).
    clock: ticks::Tick,
    /// Where effects go and what runs SAVE, BGSAVE and the like: the effect log and
    /// snapshots of `persist/`, installed at start-up ([`Core::set_persistence`]).
    pub persist: Box<dyn Persistence>,
    /// True while the dataset is being loaded: clients get `-LOADING`, keys do not
    /// expire, and nothing is logged.
    pub loading: bool,
    /// Users, permissions and the ACL log (acl/).
    pub acl: acl::Acl,
    /// Client limits from the config (`timeout`, `tcp-keepalive`,
    /// `client-output-buffer-limit`, `maxmemory`, `idle-poll-us`), refreshed on CONFIG
    /// SET.
    pub limits: limits::ClientLimits,
    /// The slow log (SLOWLOG) and its settings.
    pub slowlog: slowlog::SlowLog,
    /// The latency monitor (LATENCY) and the latency-tracking settings.
    pub latency: latency::LatencyMonitor,
    /// `cluster-slot-stats-enabled`: count CPU and network per slot (cluster mode only).
    pub slot_stats_enabled: bool,
    /// The HOTKEYS session, active or stopped (`None`: never started or reset).
    pub hotkeys: Option<Box<hotkeys::Session>>,
    /// Heap bytes in use once the core was built (MEMORY STATS `startup.allocated`).
    pub startup_allocated: usize,
    /// Highest heap use seen (MEMORY STATS `peak.allocated`), updated by `cron` and
    /// whenever it is read ([`Core::peak_memory`]); CONFIG RESETSTAT restarts it.
    pub peak_allocated: usize,
    /// Pub/Sub channels, patterns and shard channels with their subscribers (the
    /// clients keep their own side, `Client::subs`).
    pub pubsub: crate::pubsub::PubSub,
    /// Clients out of `clients` right now (the running command's, one being
    /// re-executed after a block) with the Pub/Sub messages published to them
    /// meanwhile (`core/pubsub.rs`); usually one entry or none.
    pub detached: Vec<pubsub::Detached>,
    /// Clients with Pub/Sub messages waiting for the flusher (`core/direct_write.rs`).
    pub direct_pending: Vec<(u64, Rc<limits::OutputState>)>,
    /// Wakes the flusher when `direct_pending` gets its first id.
    pub direct_wake: Rc<tokio::sync::Notify>,
    /// Cached `notify-keyspace-events` as class bits (`notify::class`); 0 = off.
    pub notify_flags: u32,
    /// Replication: id, offset, backlog, replicas, the link to a primary, WAIT
    /// (`core/replication.rs`).
    pub repl: replication::Replication,
    /// Synchronous replication (`min-sync-replicas`): the sync set, held replies, the
    /// replica's fence (`core/syncrepl.rs`).
    pub sync: syncrepl::SyncRepl,
    /// Commands run that read or write the keyspace (`readonly`/`write`), since start:
    /// a batch whose replies show data is held for the sync set.
    pub data_calls: u64,
    /// The scripting layer's state (its VMs, the script cache, the function
    /// libraries), opaque to the core; `None` until scripting installs itself.
    pub scripting: Option<Box<dyn std::any::Any>>,
    /// The script running past `busy-reply-threshold`, suspended between slices: other
    /// clients get `-BUSY` meanwhile (`script.rs`).
    pub busy: Option<script::BusyScript>,
    /// The pause CLIENT PAUSE set, if any (`pause.rs`; FAILOVER's and a shutdown's
    /// pauses are the replication state's).
    pub client_pause: Option<pause::CommandPause>,
    /// Whether a script-running command may write, by its script's flags: installed
    /// by the scripting layer (`pause.rs`).
    pub script_may_write: Option<pause::ScriptMayWrite>,
    /// Rebinds the listening sockets after CONFIG SET changed what they depend on:
    /// installed by the front end (`server/listeners.rs`).
    pub relisten: Option<RelistenHook>,
    /// The background freer (`lazyfree.rs`).
    pub lazyfree: lazyfree::LazyFree,
    /// Which deletions free in the background (the `lazyfree-lazy-*` settings).
    pub lazy: LazySettings,
    /// Tiering: the segment store, the mover and its counters (`tier.rs`).
    pub tier: tier::Tiering,
    /// Client-side caching: who tracks what (`tracking.rs`).
    pub tracking: tracking::Tracking,
    /// Wakes the task that resumes a busy script.
    pub script_driver: Rc<Notify>,
    /// While a script runs: its effects, held back to be logged and replicated as one
    /// MULTI/EXEC when it ends (so a script stopped by SHUTDOWN NOSAVE leaves nothing).
    pub held_effects: Option<Vec<(usize, Vec<Bytes>)>>,
    /// Scripting's numbers for INFO.
    pub script_info: script::ScriptInfo,
    /// The cluster state when `cluster-enabled yes` (`core/cluster.rs`); `None` on a
    /// standalone node, and the routing hook of [`Core::execute`] checks only that.
    pub cluster: Option<Box<cluster::ClusterState>>,
    /// MIGRATE's connections to its targets, kept between calls (Redis's
    /// `migrate_cached_sockets`; closed by [`Core::cron`] after 10 idle seconds).
    pub migrate_sockets: migrate_sockets::MigrateSockets,
    /// Eviction at maxmemory: the policy and its settings, the candidate pool
    /// (`core/evict.rs`).
    pub evict: evict::Eviction,
    /// Wakes the task that goes on evicting between commands (Redis's
    /// `evictionTimeProc`), see [`Core::start_eviction_task`].
    pub eviction_driver: Rc<Notify>,
}

/// Everything a command handler may touch.
pub struct Ctx<'a> {
    /// The core (keyspace, config, stats, other clients).
    pub core: &'a mut Core,
    /// The calling client.
    pub client: &'a mut Client,
    /// Where the reply goes.
    pub out: &'a mut RespWriter,
    /// The command and its arguments.
    pub argv: &'a Argv,
    /// The command time, unix ms (one value for the whole command, as Redis's
    /// `commandTimeSnapshot`).
    pub now_ms: u64,
}

/// This process's `run_id` (INFO server): 40 hex digits derived from the process id,
/// so two servers on one machine never share one.
pub fn run_id() -> String {
    format!(
        "{:040x}",
        std::process::id() as u128 * 0x9e37_79b9_7f4a_7c15
    )
}

/// Current unix time in milliseconds.
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Ctx<'_> {
    /// The calling client's database.
    pub fn db(&mut self) -> &mut Db {
        let idx = self.client.db;
        &mut self.core.dbs[idx]
    }

    /// The value at `key` after lazy expiry (and keyspace hit/miss accounting): what
    /// the commands of every type start from (Redis's `lookupKeyRead`/`Write`).
    pub fn lookup_value(&mut self, key: &[u8]) -> Option<&mut Value> {
        let hash = self.db().hash_key(key);
        self.lookup_value_hashed_with_out(hash, key).0
    }

    /// [`Ctx::lookup_value`] with the key's hash already computed, also handing out
    /// the reply writer (one hash and one probe per key for a command that replies
    /// from the value it holds).
    pub fn lookup_value_hashed_with_out(
        &mut self,
        hash: u64,
        key: &[u8],
    ) -> (Option<&mut Value>, &mut RespWriter) {
        self.lookup_with(hash, key, true)
    }

    /// The value at `key` after lazy expiry, counted as a hit or miss, without
    /// notifying a miss (Redis's `LOOKUP_NONOTIFY`: OBJECT).
    pub fn lookup_value_nonotify(&mut self, key: &[u8]) -> Option<&mut Value> {
        let hash = self.db().hash_key(key);
        self.lookup_with(hash, key, false).0
    }

    /// Redis's `lookupKey`: lazy expiry, the `keymiss` event (when `notify`) and the
    /// hit/miss counters. The access clock is not its business here: the command's keys
    /// were touched before it ran ([`Core::touch_keys`]).
    fn lookup_with(
        &mut self,
        hash: u64,
        key: &[u8],
        notify: bool,
    ) -> (Option<&mut Value>, &mut RespWriter) {
        let hidden = self.expire_if_needed(key);
        let idx = self.client.db;
        if notify
            && self.core.notify_flags & notify::class::KEY_MISS != 0
            && (hidden || !self.core.dbs[idx].keys.contains_key(key))
        {
            self.notify_keymiss(key);
        }
        let core = &mut *self.core;
        let found = if hidden {
            None
        } else {
            core.dbs[idx].get_mut_hashed(hash, key)
        };
        if found.is_some() {
            core.stats.keyspace_hits += 1;
        } else {
            core.stats.keyspace_misses += 1;
        }
        (found, &mut *self.out)
    }

    /// The stream at `key` after lazy expiry (and keyspace hit/miss accounting);
    /// `WRONGTYPE` when the key holds another type.
    pub fn lookup(&mut self, key: &[u8]) -> Result<Option<&mut Stream>, ReplyError> {
        let hash = self.db().hash_key(key);
        self.lookup_hashed(hash, key)
    }

    /// [`Ctx::lookup`] with `hash` = [`Db::hash_key`]`(key)` already computed, for a
    /// command that reaches the same key again (XADD creates it after the checks).
    pub fn lookup_hashed(
        &mut self,
        hash: u64,
        key: &[u8],
    ) -> Result<Option<&mut Stream>, ReplyError> {
        self.lookup_hashed_with_out(hash, key).0
    }

    /// [`Ctx::lookup_hashed`] that also hands out the reply writer, for a read command
    /// that writes replies from the stream it holds (one hash and one probe per key).
    #[allow(clippy::type_complexity)]
    pub fn lookup_hashed_with_out(
        &mut self,
        hash: u64,
        key: &[u8],
    ) -> (Result<Option<&mut Stream>, ReplyError>, &mut RespWriter) {
        let (found, out) = self.lookup_value_hashed_with_out(hash, key);
        let stream = match found {
            None => Ok(None),
            Some(Value::Stream(s)) => Ok(Some(&mut **s)),
            Some(_) => Err(ReplyError::WrongType),
        };
        (stream, out)
    }

    /// True if `key` exists (after lazy expiry).
    pub fn exists(&mut self, key: &[u8]) -> bool {
        if self.expire_if_needed(key) {
            return false;
        }
        let idx = self.client.db;
        self.core.dbs[idx].keys.contains_key(key)
    }

    /// Deletes `key` if its TTL passed, with the side effects of a deletion (logged as
    /// `DEL`). Nothing expires while loading: the log says when keys went.
    ///
    /// True when the key is past its TTL but could not be deleted (clients are
    /// paused): the caller treats it as missing.
    pub fn expire_if_needed(&mut self, key: &[u8]) -> bool {
        let idx = self.client.db;
        let now_ms = self.now_ms;
        self.core.expire_if_needed(idx, key, now_ms)
    }

    /// Logs the deterministic effect of the running write command in the client's
    /// database (see [`Core::propagate`]).
    pub fn propagate<A: AsRef<[u8]>>(&mut self, argv: &[A]) {
        let db = self.client.db;
        self.core.propagate(db, argv);
    }

    /// Would [`Ctx::propagate`] record anything (an append-only log is open and the
    /// server is not loading)? Hot commands skip building their effect when not.
    pub fn propagates(&self) -> bool {
        self.core.propagates()
    }

    /// Records a write to `key`: WATCH invalidation and the dirty counter (Redis:
    /// `signalModifiedKey` + `server.dirty++`).
    pub fn modified(&mut self, key: &[u8]) {
        let db = self.client.db;
        self.core.touch_key(db, key);
        self.core.dirty += 1;
    }

    /// Signals blocked readers of `key` that it has new data or changed (Redis:
    /// `signalKeyAsReady`).
    pub fn signal_ready(&mut self, key: &[u8]) {
        let db = self.client.db;
        self.core.signal_ready(db, key);
    }

    /// True when the command may block: not inside MULTI/EXEC (Redis replies at once
    /// there).
    pub fn can_block(&self) -> bool {
        !self.client.in_exec && !self.client.in_script && self.client.multi.is_none()
    }

    /// Blocks the calling client on `keys` (Redis: `blockForKeys`). `rewritten` is the
    /// command to re-execute when a key is signalled if it is not this one as it came
    /// (XREAD with `$` resolved); `timeout_ms` 0 waits forever. When the command is
    /// itself a re-execution (the same command on the same keys), the client keeps its
    /// block as it was: its place in the queues and its original deadline.
    pub fn block(
        &mut self,
        keys: &[Bytes],
        timeout_ms: u64,
        unblock_on_nokey: bool,
        rewritten: Option<Argv>,
    ) {
        if let Some(state) = &self.core.reprocessing {
            self.client.blocked = Some(state.clone());
            // A re-execution recomputes its wake-up time, if it wants one.
            self.core.blocked.clear_wakeup(self.client.id);
            return;
        }
        let db = self.client.db;
        let deadline_ms = (timeout_ms != 0).then(|| self.now_ms.saturating_add(timeout_ms));
        self.core.blocked.add(self.client.id, db, keys, deadline_ms);
        if deadline_ms.is_some() {
            self.core.block_timer.notify_one();
        }
        let argv = match rewritten {
            Some(argv) => argv,
            // Moved in by `Core::execute_one` once the command returns (an empty command
            // is never a block's).
            None if self.core.argv_handed_over => Vec::new(),
            None => self.argv.clone(),
        };
        self.client.blocked = Some(BlockState {
            argv: Rc::new(argv),
            db,
            keys: Rc::from(keys),
            deadline_ms,
            unblock_on_nokey,
        });
    }

    /// Re-executes the blocked client's command at `at_ms` even if no key is signalled
    /// (XREADGROUP … CLAIM: when its oldest pending entry becomes idle enough). Call
    /// right after [`Ctx::block`].
    pub fn block_wakeup_at(&mut self, at_ms: u64) {
        if self.client.blocked.is_some() {
            self.core.blocked.set_wakeup(self.client.id, at_ms);
            self.core.block_timer.notify_one();
        }
    }

    /// `argv[i]`, which the arity check guarantees exists.
    pub fn arg(&self, i: usize) -> &Bytes {
        &self.argv[i]
    }
}

/// Outcome of one command for the connection task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The reply is in the writer.
    Done,
    /// The client blocked; its reply will come as [`ClientMsg::Unblocked`].
    Blocked,
}

impl Core {
    /// A core with `config`'s settings and empty databases, running the commands of
    /// `families` (installed as the process's command table, [`command::install`]).
    /// It records nothing until a persistence layer is installed
    /// ([`Core::set_persistence`]).
    pub fn new(config: Config, port: u16, families: &'static [&'static [CommandSpec]]) -> Core {
        command::install(families);
        let ndb = config.get_i64("databases").max(1) as usize;
        let mut core = Core {
            node_limits: NodeLimits::default(),
            idmp_defaults: (100, 100),
            reclaim_ratio: 0.5,
            thresholds: Thresholds::default(),
            compat: (8, 10),
            dbs: (0..ndb).map(|_| Db::default()).collect(),
            clients: HashMap::default(),
            next_client_id: 1,
            stats: Stats::default(),
            started: Instant::now(),
            port,
            dirty: 0,
            lastsave: unix_ms() / 1000,
            shutdown: None,
            watched_keys: HashMap::new(),
            monitors: Vec::new(),
            ready_keys: Vec::new(),
            blocked: BlockedClients::default(),
            block_timer: Rc::new(Notify::new()),
            scripting: None,
            busy: None,
            client_pause: None,
            script_may_write: None,
            relisten: None,
            lazyfree: Default::default(),
            lazy: Default::default(),
            tier: Default::default(),
            tracking: tracking::Tracking::default(),
            script_driver: Rc::new(Notify::new()),
            held_effects: None,
            script_info: script::ScriptInfo::default(),
            reprocessing: None,
            argv_handed_over: false,
            reprocess_key: None,
            batch_now_ms: unix_ms(),
            last_commands: [None; 2],
            clock: ticks::Tick::now(),
            persist: Box::new(NoPersistence),
            loading: false,
            acl: acl::Acl::new(),
            limits: Default::default(),
            slowlog: Default::default(),
            latency: Default::default(),
            slot_stats_enabled: false,
            hotkeys: None,
            startup_allocated: 0,
            peak_allocated: 0,
            pubsub: Default::default(),
            detached: Vec::new(),
            direct_pending: Vec::new(),
            direct_wake: Rc::new(tokio::sync::Notify::new()),
            notify_flags: 0,
            repl: Default::default(),
            sync: Default::default(),
            data_calls: 0,
            cluster: None,
            migrate_sockets: Default::default(),
            evict: Default::default(),
            eviction_driver: Rc::new(Notify::new()),
            config,
        };
        core.refresh_config_cache();
        core.apply_requirepass();
        core.startup_allocated = core.used_memory();
        core.peak_allocated = core.startup_allocated;
        core
    }

    /// Re-reads cached settings after a CONFIG SET.
    pub fn refresh_config_cache(&mut self) {
        self.script_info.busy_threshold_ms =
            self.config.get_i64("busy-reply-threshold").max(0) as u64;
        let bytes = self.config.get_i64("stream-node-max-bytes").max(0) as usize;
        let entries = self.config.get_i64("stream-node-max-entries").max(0) as usize;
        self.node_limits = NodeLimits {
            max_bytes: bytes,
            max_entries: entries,
        };
        self.lazy = LazySettings {
            eviction: self.config.get_bool("lazyfree-lazy-eviction"),
            expire: self.config.get_bool("lazyfree-lazy-expire"),
            server_del: self.config.get_bool("lazyfree-lazy-server-del"),
            user_del: self.config.get_bool("lazyfree-lazy-user-del"),
            user_flush: self.config.get_bool("lazyfree-lazy-user-flush"),
        };
        self.idmp_defaults = (
            self.config.get_i64("stream-idmp-duration"),
            self.config.get_i64("stream-idmp-maxsize"),
        );
        self.reclaim_ratio = self
            .config
            .get("stream-node-reclaim-ratio")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.5);
        let size = |name: &str| usize::try_from(self.config.get_i64(name)).unwrap_or(0);
        self.thresholds = Thresholds {
            hash_max_listpack_entries: size("hash-max-listpack-entries"),
            hash_max_listpack_value: size("hash-max-listpack-value"),
            list_max_listpack_size: self.config.get_i64("list-max-listpack-size"),
            list_compress_depth: size("list-compress-depth"),
            set_max_intset_entries: size("set-max-intset-entries"),
            set_max_listpack_entries: size("set-max-listpack-entries"),
            set_max_listpack_value: size("set-max-listpack-value"),
            zset_max_listpack_entries: size("zset-max-listpack-entries"),
            zset_max_listpack_value: size("zset-max-listpack-value"),
            hll_sparse_max_bytes: size("hll-sparse-max-bytes"),
        };
        self.compat =
            crate::config::compat_version(self.config.get("compat-version").unwrap_or(""));
        let old_maxmemory = self.limits.maxmemory;
        self.limits = limits::ClientLimits::from_config(&self.config);
        self.refresh_repl_limits();
        self.refresh_eviction();
        // A new limit is enforced at once, by the eviction task (Redis's
        // `updateMaxmemory` starting `evictionTimeProc`).
        if self.limits.maxmemory > 0 && self.limits.maxmemory != old_maxmemory {
            self.start_eviction_task();
        }
        acl::set_pubsub_default(self.config.get("acl-pubsub-default") == Some("allchannels"));
        self.notify_flags = crate::config::keyspace_event_flags(
            self.config.get("notify-keyspace-events").unwrap_or(""),
        )
        .unwrap_or(0);
        self.slot_stats_enabled = self.config.get_bool("cluster-slot-stats-enabled");
        self.slowlog.slower_than = self.config.get_i64("slowlog-log-slower-than");
        self.slowlog.max_len = self.config.get_i64("slowlog-max-len").max(0) as usize;
        self.slowlog.trim();
        self.latency.threshold_ms = self.config.get_i64("latency-monitor-threshold").max(0) as u64;
        self.latency.tracking = self.config.get("latency-tracking") != Some("no");
        self.latency.percentiles = latency::parse_percentiles(
            self.config
                .get("latency-tracking-info-percentiles")
                .unwrap_or(""),
        )
        .unwrap_or_default();
    }

    /// Records a latency sample of `ms` for `event` if the latency monitor is on and
    /// it reaches `latency-monitor-threshold` (Redis: `latencyAddSampleIfNeeded`): for
    /// the layers above that measure their own pauses (snapshot, rewrite, fsync).
    pub fn latency_sample(&mut self, event: &str, ms: u64) {
        self.latency.add_if_needed(event, ms, unix_ms() / 1000);
    }

    /// The highest heap use so far, including now (MEMORY STATS `peak.allocated`).
    pub fn peak_memory(&mut self) -> usize {
        self.peak_allocated = self.peak_allocated.max(self.used_memory());
        self.peak_allocated
    }

    /// True when clients may see a feature of Redis `major.minor`: `compat-version` is at
    /// least that, or the dataset is being loaded (the log may use anything).
    pub fn supports(&self, major: u8, minor: u8) -> bool {
        self.replaying() || self.compat >= (major, minor)
    }

    /// The CLIENT LIST / CLIENT INFO fields `compat-version` shows.
    pub fn client_info_fields(&self) -> client::InfoFields {
        client::InfoFields {
            since_8_0: self.compat >= (8, 0),
            since_8_8: self.compat >= (8, 8),
        }
    }

    /// True while the commands running are deterministic effects being replayed: the
    /// log at start-up, or the stream from this server's primary. They may use every
    /// form the log uses (an IDMP XADD with its ID, a deadline already past), whatever
    /// `compat-version` shows clients.
    pub fn replaying(&self) -> bool {
        self.loading || self.repl.applying_master
    }

    /// True when `maxmemory` is set and the memory in use is above it (Redis's
    /// `performEvictions` failing under `noeviction`).
    pub fn over_maxmemory(&self) -> bool {
        self.limits.maxmemory > 0 && self.used_memory() as u64 > self.limits.maxmemory
    }

    /// Would Redis refuse `spec` from `client` when over `maxmemory`? Commands that may
    /// grow memory (`denyoom`), EXEC of a transaction holding one, and anything but
    /// EXEC/DISCARD/QUIT/RESET queued inside MULTI (the queue itself grows).
    fn denied_on_oom(client: &Client, spec: &CommandSpec) -> bool {
        if spec.flags & flags::DENYOOM != 0 {
            return true;
        }
        match &client.multi {
            Some(queue) if spec.name == "exec" => {
                command::queued_flags(queue).0 & flags::DENYOOM != 0
            }
            Some(_) => !matches!(spec.name, "discard" | "quit" | "reset"),
            None => false,
        }
    }

    /// Would [`Core::propagate`] record anything: an append-only log is open and the
    /// server is not loading.
    pub fn propagates(&self) -> bool {
        !self.loading && (self.persist.recording() || self.repl.feeding())
    }

    /// Appends the effect `argv` (a command in replayable, deterministic form) on
    /// database `db` to the log, when the log is on and nothing is being loaded. Write
    /// commands call it (through [`Ctx::propagate`]) right where the write succeeded;
    /// the records are written and made durable before the replies go out
    /// (`persist::commit`).
    pub fn propagate<A: AsRef<[u8]>>(&mut self, db: usize, argv: &[A]) {
        if self.loading {
            return;
        }
        if let Some(held) = self.held_effects.as_mut()
            && (self.persist.recording() || self.repl.feeding())
        {
            held.push((
                db,
                argv.iter()
                    .map(|a| Bytes::copy_from_slice(a.as_ref()))
                    .collect(),
            ));
            return;
        }
        if let Some(buf) = self.persist.effect_begin(db) {
            crate::resp::writer::command(buf, argv);
            self.persist.effect_end();
        }
        if self.repl.feeding() {
            self.repl.feed(db, argv);
            if !self.repl.in_command() {
                self.repl_flush();
            }
        }
    }

    /// Hands `argv` to the replicas only, not to the log (PUBLISH: Redis's
    /// `PROPAGATE_REPL`).
    pub fn propagate_to_replicas<A: AsRef<[u8]>>(&mut self, db: usize, argv: &[A]) {
        if !self.loading && self.repl.feeding() {
            self.repl.feed(db, argv);
            if !self.repl.in_command() {
                self.repl_flush();
            }
        }
    }

    /// Installs the persistence layer effects go to and SAVE and the like run through.
    pub fn set_persistence(&mut self, persistence: Box<dyn Persistence>) {
        self.persist = persistence;
    }

    /// Runs `f` with the persistence layer lent out of the core, so it can read and
    /// change the core as well (SAVE, BGSAVE, CONFIG SET, the cron chores). Meanwhile
    /// the core holds [`NoPersistence`]: an operation that wrote effects while its
    /// persistence is lent out would lose them, and none does (loading, the only
    /// path that runs commands inside, records nothing).
    pub fn with_persistence<R>(
        &mut self,
        f: impl FnOnce(&mut dyn Persistence, &mut Core) -> R,
    ) -> R {
        let mut lent = std::mem::replace(&mut self.persist, Box::new(NoPersistence));
        let result = f(&mut *lent, self);
        self.persist = lent;
        result
    }

    /// Memory in use: the counted allocator's figure when the binary installed it
    /// (`alloc::CountingAlloc`, usable sizes as Redis's zmalloc counts them), else the
    /// streams' own estimates plus 1 MiB for the rest (library users, tests).
    pub fn used_memory(&self) -> usize {
        let counted = crate::alloc::allocated();
        if counted > 0 {
            return counted;
        }
        let streams: usize = self
            .dbs
            .iter()
            .flat_map(|db| db.keys.iter())
            .map(|(k, s)| k.len() + s.memory_usage())
            .sum();
        streams + 1024 * 1024
    }

    /// `requirepass` becomes the default user's only password (or `nopass` when
    /// empty), as Redis does at start and on `CONFIG SET requirepass`.
    pub fn apply_requirepass(&mut self) {
        let pass = self
            .config
            .get("requirepass")
            .unwrap_or("")
            .as_bytes()
            .to_vec();
        self.acl.set_default_password(&pass);
    }

    /// Loads the `aclfile`, if one is configured, in place of the current users (start
    /// and `ACL LOAD`). Clients of replaced users are disconnected; the caller's own
    /// client (not in `clients`) is left to the caller. `Ok(false)` when no file is set.
    pub fn load_acl_file(&mut self) -> Result<bool, String> {
        let path = self.config.get("aclfile").unwrap_or("").to_string();
        if path.is_empty() {
            return Ok(false);
        }
        let users = acl::file::load(std::path::Path::new(&path))?;
        let replaced = self.acl.replace_users(users);
        self.disconnect_users(&replaced);
        Ok(true)
    }

    /// Closes the connections of clients authenticated as any of `users` (deleted or
    /// replaced users, as Redis's `ACLFreeUserAndKillClients`).
    pub fn disconnect_users(&mut self, users: &[acl::UserRef]) {
        for c in self.clients.values_mut() {
            if let Some(u) = &c.user
                && users.iter().any(|d| Rc::ptr_eq(d, u))
            {
                c.user = Some(self.acl.default_user());
                c.authenticated = false;
                // Gone at once from Pub/Sub too, as Redis frees such clients.
                for kind in [
                    crate::pubsub::Kind::Channel,
                    crate::pubsub::Kind::Pattern,
                    crate::pubsub::Kind::Shard,
                ] {
                    self.pubsub.unsubscribe_all(kind, &mut c.subs, c.id);
                }
                let _ = c.tx.send(ClientMsg::Close);
            }
        }
    }

    /// True when `client` must authenticate before running commands other than AUTH,
    /// HELLO, QUIT and RESET (Redis's `authRequired`).
    pub fn auth_required(&self, client: &Client) -> bool {
        client.user.is_some() && self.acl.auth_required(client.authenticated)
    }

    /// Checks `client`'s permissions for `spec` with `argv`; on a denial, records it in
    /// the ACL log (`context` says where the command ran) and returns the error to send.
    pub fn acl_check(
        &mut self,
        client: &Client,
        spec: &'static CommandSpec,
        argv: &Argv,
        context: acl::log::Context,
    ) -> Result<(), acl::Denied> {
        let Some(user) = &client.user else {
            return Ok(());
        };
        let result = {
            let u = user.borrow();
            if u.all_commands()
                && u.all_keys()
                && (u.all_channels() || acl::channel_args(spec, argv.len()).is_none())
            {
                Ok(())
            } else {
                u.check(spec, argv)
            }
        };
        if let Err(denied) = result {
            let (reason, object) = match denied {
                acl::Denied::Command => (
                    acl::log::Reason::Command,
                    Bytes::from_static(spec.full_name().as_bytes()),
                ),
                acl::Denied::Key(pos) => (acl::log::Reason::Key, argv[pos].clone()),
                acl::Denied::Channel(pos) => (acl::log::Reason::Channel, argv[pos].clone()),
            };
            self.acl_log(client, reason, context, object, client.username());
        }
        result
    }

    /// Adds an ACL log entry for `client`.
    pub fn acl_log(
        &mut self,
        client: &Client,
        reason: acl::log::Reason,
        context: acl::log::Context,
        object: Bytes,
        username: Bytes,
    ) {
        let max = self.config.get_i64("acllog-max-len").max(0) as usize;
        let entry = acl::log::Entry {
            count: 1,
            reason,
            context,
            object,
            username,
            created_ms: unix_ms(),
            updated_ms: 0,
            id: 0,
            client_info: client.info_line(self.batch_now_ms, self.client_info_fields()),
        };
        self.acl.log.add(entry, max);
    }

    /// Bumps the WATCH version of a key if anyone watches it.
    ///
    /// Also the change clients tracking the key are told about (`tracking.rs`).
    pub fn touch_key(&mut self, db: usize, key: &[u8]) {
        self.tracking_invalidate_key(key);
        if self.watched_keys.is_empty() {
            return;
        }
        if let Some(v) = self
            .watched_keys
            .get_mut(&(db, Bytes::copy_from_slice(key)))
        {
            v.0 += 1;
        }
    }

    /// Bumps the watched keys of `db` that exist in it or, for SWAPDB, in the database
    /// `swapped_with` whose contents replace it (Redis's `touchAllWatchedKeysInDb`): a
    /// watched key that was missing and stays missing did not change. Called before the
    /// flush or the swap.
    pub fn touch_watched_in(&mut self, db: usize, swapped_with: Option<usize>) {
        let dbs = &self.dbs;
        for ((d, key), v) in self.watched_keys.iter_mut() {
            if *d == db
                && (dbs[db].keys.contains_key(&key[..])
                    || swapped_with.is_some_and(|o| dbs[o].keys.contains_key(&key[..])))
            {
                v.0 += 1;
            }
        }
    }

    /// Bumps every watched key of `db` (FLUSHDB, SWAPDB).
    pub fn touch_all(&mut self, db: Option<usize>) {
        for ((d, _), v) in self.watched_keys.iter_mut() {
            if db.is_none_or(|x| x == *d) {
                v.0 += 1;
            }
        }
    }

    /// Deletes `key` of database `db` if its TTL passed at `now_ms` (lazy expiry, in
    /// any database); nothing expires while loading. See [`Core::expired`].
    ///
    /// True when the key is past its TTL but stays (Redis's `expireIfNeeded` returning
    /// 1 without deleting): while clients are paused nothing is deleted (`pause.rs`), so
    /// the key only reads as missing.
    pub fn expire_if_needed(&mut self, db: usize, key: &[u8], now_ms: u64) -> bool {
        // Nothing in the database has a TTL (key or hash field): nothing to look up.
        if self.dbs[db].expires.is_empty() && self.dbs[db].hexpires.is_empty() {
            return false;
        }
        // A replica leaves expiry to its primary, whose DEL arrives in the stream.
        if self.loading || self.repl.is_replica() {
            return false;
        }
        if self.pause_in_force(now_ms).is_some() {
            return self.dbs[db].is_expired(key, now_ms);
        }
        if let Some(value) = self.dbs[db].expire_if_needed(key, now_ms) {
            self.free_deleted(value, self.lazy.expire);
            self.expired(db, key);
        } else if !self.dbs[db].hexpires.is_empty() {
            self.expire_fields(db, key, now_ms, usize::MAX);
        }
        false
    }

    /// Frees a value taken out of the keyspace: on the background thread when `lazy`
    /// and it is big (`lazyfree.rs`), here otherwise.
    pub fn free_deleted(&mut self, value: Value, lazy: bool) {
        if lazy {
            self.lazyfree.free_value(value);
        }
    }

    /// The side effects of `key` having been removed from `db` because its TTL passed
    /// (Redis: `deleteExpiredKeyAndPropagate`): the `expired` notification, the
    /// `expired_keys` count, WATCH and blocked readers, and a `DEL` in the log.
    pub fn expired(&mut self, db: usize, key: &[u8]) {
        self.notify_keyspace_event(notify::class::EXPIRED, "expired", key, db);
        self.stats.expired_keys += 1;
        self.key_deleted(db, key);
        self.propagate(db, &[b"DEL".as_slice(), key]);
    }

    /// Side effects of a key disappearing (expiry, DEL, FLUSH): WATCH invalidation and
    /// waking readers that unblock on deletion.
    pub fn key_deleted(&mut self, db: usize, key: &[u8]) {
        self.touch_key(db, key);
        self.signal_ready(db, key);
    }

    /// Marks (db, key) ready for its blocked clients, if it has any.
    pub fn signal_ready(&mut self, db: usize, key: &[u8]) {
        if self.blocked.is_empty() {
            return;
        }
        if self.blocked.has_waiters(db, key) {
            self.ready_keys.push((db, Bytes::copy_from_slice(key)));
        }
    }

    /// Serves blocked clients of every key signalled since the last call, by
    /// re-executing their commands in blocking order (Redis: `handleClientsBlockedOnKeys`).
    /// Keys signalled while serving are handled in further rounds.
    pub fn handle_ready_keys(&mut self) {
        // Nothing is served while a script is suspended: it is still one atomic step.
        if self.busy.is_some() {
            return;
        }
        let mut waiters = Vec::new();
        while !self.ready_keys.is_empty() {
            let keys = std::mem::take(&mut self.ready_keys);
            // Each key once per round; the rounds of a command have a key or a few.
            let mut seen = (keys.len() > 8).then(HashSet::new);
            for (i, (db, key)) in keys.iter().enumerate() {
                let again = match &mut seen {
                    Some(seen) => !seen.insert((*db, key)),
                    None => keys[..i].iter().any(|(d, k)| d == db && k == key),
                };
                if again {
                    continue;
                }
                waiters.clear();
                self.blocked.waiters_into(*db, key, &mut waiters);
                for &id in &waiters {
                    let Some(mut client) = self.clients.remove(&id) else {
                        continue;
                    };
                    if let Some(state) = client.blocked.take() {
                        // XREAD is not woken by a deletion nor by another type taking
                        // the key (reference §3.4); XREADGROUP is.
                        let now = self.dbs.get(*db).and_then(|d| d.get(key)).map(Value::kind);
                        if blocked::wakes(&state.argv[0], state.unblock_on_nokey, now) {
                            self.reprocess_key = Some(key.clone());
                            self.reprocess(&mut client, state);
                            self.reprocess_key = None;
                        } else {
                            client.blocked = Some(state);
                        }
                    }
                    self.clients.insert(id, client);
                }
            }
        }
    }

    /// Re-executes a blocked client's command (its block taken out of `client`); if it
    /// is served, unregisters it and sends the reply to its connection.
    fn reprocess(&mut self, client: &mut Client, state: BlockState) {
        let Some(spec) = self
            .lookup_command(&state.argv[0])
            .and_then(|s| command::resolve_subcommand(s, &state.argv).ok())
        else {
            client.blocked = Some(state);
            return;
        };
        client.blocked = None;
        // The user's permissions may have changed while the client was blocked.
        if let Err(denied) = self.acl_check(client, spec, &state.argv, acl::log::Context::Toplevel)
        {
            self.blocked
                .remove(client.id, state.db, &state.keys, state.deadline_ms);
            let mut out = RespWriter::new(client.proto);
            out.error(&denied.reply(spec));
            client.send(ClientMsg::Unblocked(out.take()), self.limits.output);
            return;
        }
        let argv = Rc::clone(&state.argv);
        let mut out = RespWriter::new(client.proto);
        let saved_db = client.db;
        client.db = state.db;
        self.reprocessing = Some(state.clone());
        self.begin_batch();
        self.call(client, spec, &argv, &mut out, self.batch_now_ms);
        client.db = saved_db;
        self.reprocessing = None;
        if client.blocked.is_none() {
            self.blocked
                .remove(client.id, state.db, &state.keys, state.deadline_ms);
            client.send(ClientMsg::Unblocked(out.take()), self.limits.output);
            self.stats.unblocked_served += 1;
            // Its request's bytes were counted by this served call (SLOT-STATS, HOTKEYS).
            client.cmd_input_bytes = 0;
        }
    }

    /// Ends a client's block with `reply` (timeout or CLIENT UNBLOCK); false if it was
    /// not blocked.
    fn end_block(&mut self, client: &mut Client, reply: Vec<u8>) -> bool {
        let Some(state) = client.blocked.take() else {
            return false;
        };
        self.blocked
            .remove(client.id, state.db, &state.keys, state.deadline_ms);
        // The call that blocked is counted now that it has its answer (see `call`).
        if let Some(spec) = self
            .lookup_command(&state.argv[0])
            .and_then(|s| command::resolve_subcommand(s, &state.argv).ok())
        {
            self.stats.commands.entry(spec.full_name()).calls += 1;
            self.stats.total_commands_processed += 1;
            client.cmds += 1;
        }
        client.cmd_input_bytes = 0;
        client.send(ClientMsg::Unblocked(reply), self.limits.output);
        true
    }

    /// Ends a client's block with `reply` (the cluster's redirection of a slot that
    /// moved away); false if it was not blocked.
    pub fn end_block_with(&mut self, client: &mut Client, reply: Vec<u8>) -> bool {
        self.end_block(client, reply)
    }

    /// Ends the block of a client whose script (busy past the threshold) finished, with
    /// the script's reply.
    pub fn finish_script_block(&mut self, client: &mut Client, reply: Vec<u8>) -> bool {
        self.end_block(client, reply)
    }

    /// The timeout reply for a client's protocol: the null array.
    fn timeout_reply(client: &Client) -> Vec<u8> {
        let mut out = RespWriter::new(client.proto);
        out.null_array();
        out.take()
    }

    /// Replies to clients whose BLOCK timeout passed, and re-executes those whose
    /// wake-up time came.
    pub fn expire_blocked(&mut self, now_ms: u64) {
        if self.busy.is_some() {
            return;
        }
        for id in self.blocked.due_wakeups(now_ms) {
            self.blocked.clear_wakeup(id);
            if let Some(mut client) = self.clients.remove(&id) {
                if let Some(state) = client.blocked.take() {
                    self.reprocess(&mut client, state);
                }
                self.clients.insert(id, client);
            }
        }
        self.handle_ready_keys();
        for id in self.blocked.expired(now_ms) {
            if let Some(mut client) = self.clients.remove(&id) {
                let reply = Self::timeout_reply(&client);
                self.end_block(&mut client, reply);
                self.clients.insert(id, client);
            }
        }
    }

    /// CLIENT UNBLOCK: ends another client's block with the timeout reply or the
    /// UNBLOCKED error; false if it is not blocked.
    pub fn unblock_client(&mut self, id: u64, with_error: bool) -> bool {
        // A WAIT/WAITAOF client answers what it has (Redis's timeout reply for it).
        if let Some(w) = self.repl.waiters.iter_mut().find(|w| w.client_id == id) {
            if with_error {
                self.repl.waiters.retain(|w| w.client_id != id);
                if let Some(c) = self.clients.get_mut(&id) {
                    c.blocked = None;
                    c.send(
                        ClientMsg::Unblocked(
                            b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n".to_vec(),
                        ),
                        self.limits.output,
                    );
                }
            } else {
                w.deadline_ms = Some(0);
                self.serve_waiters(unix_ms());
            }
            return true;
        }
        // A client held by a pause is not blocked on anything CLIENT UNBLOCK ends
        // (Redis's BLOCKED_POSTPONE).
        if self.repl.paused.contains(&id) {
            return false;
        }
        let Some(mut client) = self.clients.remove(&id) else {
            return false;
        };
        let reply = if with_error {
            b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n".to_vec()
        } else {
            Self::timeout_reply(&client)
        };
        let done = self.end_block(&mut client, reply);
        self.clients.insert(id, client);
        done
    }

    /// Registers a new client and returns its id.
    pub fn add_client(&mut self, mut client: Client) -> u64 {
        let id = self.next_client_id;
        self.next_client_id += 1;
        client.id = id;
        self.stats.total_connections_received += 1;
        self.clients.insert(id, client);
        id
    }

    /// Forgets a disconnected client: its watches, subscriptions, MONITOR and blocked
    /// state.
    pub fn remove_client(&mut self, id: u64) {
        if let Some(mut c) = self.clients.remove(&id) {
            self.unwatch_all(&mut c);
            self.unsubscribe_everything(&mut c);
            if let Some(state) = c.blocked.take() {
                self.blocked
                    .remove(id, state.db, &state.keys, state.deadline_ms);
            }
        }
        self.monitors.retain(|&m| m != id);
        self.disable_tracking(id);
        self.repl.waiters.retain(|w| w.client_id != id);
        if self.repl.replicas.remove(&id).is_some() {
            tracing::info!(client_id = id, "Connection with replica lost.");
        }
    }

    /// Drops all of a client's watched keys.
    pub fn unwatch_all(&mut self, client: &mut Client) {
        for (db, key, _) in client.watched.drain(..) {
            let k = (db, key);
            if let Some(v) = self.watched_keys.get_mut(&k) {
                v.1 -= 1;
                if v.1 == 0 {
                    self.watched_keys.remove(&k);
                }
            }
        }
    }

    /// Current version of a watched key (0 when unwatched).
    pub fn watch_version(&self, db: usize, key: &Bytes) -> u64 {
        self.watched_keys
            .get(&(db, key.clone()))
            .map(|v| v.0)
            .unwrap_or(0)
    }

    /// Number of clients, including the executing one.
    pub fn connected_clients(&self) -> usize {
        self.clients.len() + 1
    }

    /// When the command running now started (sampled once per command, not read anew).
    pub fn command_started(&self) -> Instant {
        self.clock.to_instant()
    }

    /// Starts a batch of commands from one read: samples the clock once for all of
    /// them.
    pub fn begin_batch(&mut self) {
        self.batch_now_ms = unix_ms();
        self.clock = ticks::Tick::now();
        self.refresh_key_clock();
    }

    /// Re-reads the eviction settings (`maxmemory-policy` and friends) after a CONFIG
    /// SET; the dicts learn whether an overwrite keeps a key's clock (LFU) or not.
    fn refresh_eviction(&mut self) {
        let policy = evict::Policy::from_name(self.config.get("maxmemory-policy").unwrap_or(""));
        if policy != self.evict.policy {
            // Redis keeps its pool across policy changes too, but its scores would mix
            // two meanings: start afresh.
            self.evict.set_policy(policy);
        }
        let num = |name: &str| u32::try_from(self.config.get_i64(name).max(0)).unwrap_or(u32::MAX);
        self.evict.samples = num("maxmemory-samples").max(1) as usize;
        self.evict.tenacity = num("maxmemory-eviction-tenacity").min(100);
        self.evict.lfu_log_factor = num("lfu-log-factor");
        self.evict.lfu_decay_time = num("lfu-decay-time");
        self.refresh_key_clock();
    }

    /// Sets the access clock new keys start with to now (once per batch and per cron
    /// tick: the LRU clock has a resolution of a second, LFU's of a minute).
    pub fn refresh_key_clock(&mut self) {
        let fresh = self.evict.fresh_clock(self.batch_now_ms);
        let lfu = self.evict.policy.is_lfu();
        let max = usize::try_from(self.limits.maxmemory).unwrap_or(usize::MAX);
        for db in &mut self.dbs {
            db.keys.clock_init = fresh;
            db.keys.clock_keep_on_replace = lfu;
            db.keys.max_memory = max;
            db.expires.max_memory = max;
        }
    }

    /// Runs one command for `client`, writing its reply to `out`. The command time is
    /// that of the batch ([`Core::begin_batch`]).
    pub fn execute(&mut self, client: &mut Client, argv: Argv, out: &mut RespWriter) -> Outcome {
        if self.tracking.clients.is_empty() {
            return self.execute_replying(client, argv, out);
        }
        // CLIENT CACHING's yes/no lasts for one command (a transaction's, up to EXEC),
        // CLIENT subcommands aside (Redis's `resetClient`).
        let is_client = argv
            .first()
            .is_some_and(|n| n.eq_ignore_ascii_case(b"client"));
        let id = client.id;
        let caching_before = self.tracking.clients.get(&id).is_some_and(|t| t.caching);
        let outcome = self.execute_replying(client, argv, out);
        if caching_before
            && !is_client
            && client.multi.is_none()
            && let Some(t) = self.tracking.clients.get_mut(&id)
        {
            t.caching = false;
        }
        outcome
    }

    /// [`Core::execute`] with CLIENT REPLY's modes.
    fn execute_replying(
        &mut self,
        client: &mut Client,
        argv: Argv,
        out: &mut RespWriter,
    ) -> Outcome {
        use client::ReplyMode;
        if client.reply_mode == ReplyMode::On {
            return self.execute_asking(client, argv, out);
        }
        // CLIENT REPLY OFF or SKIP: the command runs, and what it wrote is dropped
        // unless it turned replies back on (CLIENT REPLY ON answers `+OK`).
        if client.reply_mode == ReplyMode::SkipNext {
            client.reply_mode = ReplyMode::Skip;
        }
        // Pub/Sub frames are pushed, not replied (Redis's CLIENT_PUSHING): the
        // (un)subscribe confirmations arrive whatever CLIENT REPLY says, as the
        // messages do, in RESP2 too.
        let pushes_only = argv.first().is_some_and(|n| {
            [
                "subscribe",
                "psubscribe",
                "ssubscribe",
                "unsubscribe",
                "punsubscribe",
                "sunsubscribe",
            ]
            .iter()
            .any(|c| n.eq_ignore_ascii_case(c.as_bytes()))
        });
        let before = out.buf.len();
        let outcome = self.execute_asking(client, argv, out);
        let drop_replies = |out: &mut RespWriter| {
            if !pushes_only {
                out.buf.truncate(before);
            }
        };
        match client.reply_mode {
            ReplyMode::Off => drop_replies(out),
            ReplyMode::Skip => {
                drop_replies(out);
                client.reply_mode = ReplyMode::On;
            }
            // ON, or CLIENT REPLY SKIP itself, which answers nothing.
            ReplyMode::On | ReplyMode::SkipNext => {}
        }
        outcome
    }

    /// [`Core::execute`] with the ASKING bookkeeping.
    fn execute_asking(&mut self, client: &mut Client, argv: Argv, out: &mut RespWriter) -> Outcome {
        if !client.asking {
            return self.execute_one(client, argv, out);
        }
        // ASKING lasts for one command (Redis's resetClient), or the whole MULTI.
        let is_asking = argv
            .first()
            .is_some_and(|n| n.eq_ignore_ascii_case(b"asking"));
        let outcome = self.execute_one(client, argv, out);
        if !is_asking && client.multi.is_none() {
            client.asking = false;
        }
        outcome
    }

    /// [`command::lookup`] through a two-entry memo of the last names looked up (clients'
    /// commands and a script's `redis.call`s share it).
    pub(crate) fn lookup_command(&mut self, name: &[u8]) -> Option<&'static CommandSpec> {
        let [first, second] = self.last_commands;
        if let Some(spec) = first
            && spec.name.as_bytes().eq_ignore_ascii_case(name)
        {
            return Some(spec);
        }
        if let Some(spec) = second
            && spec.name.as_bytes().eq_ignore_ascii_case(name)
        {
            self.last_commands = [second, first];
            return Some(spec);
        }
        let spec = command::lookup(name)?;
        self.last_commands = [Some(spec), first];
        Some(spec)
    }

    /// [`Core::execute`] without the ASKING bookkeeping.
    fn execute_one(&mut self, client: &mut Client, argv: Argv, out: &mut RespWriter) -> Outcome {
        let now_ms = self.batch_now_ms;
        client.last_interaction_ms = now_ms;
        let Some(name) = argv.first() else {
            return Outcome::Done;
        };
        // Commands newer than `compat-version` do not exist for clients.
        let Some(spec) = self
            .lookup_command(name)
            .filter(|s| self.replaying() || command::since_version(s.since) <= self.compat)
        else {
            let err = crate::error::unknown_command(&argv);
            self.reject(client, out, None, &err);
            return Outcome::Done;
        };
        // Resolve container subcommands (XGROUP CREATE, CONFIG GET, ...).
        let spec = match command::resolve_subcommand(spec, &argv) {
            // A subcommand newer than `compat-version` is unknown too.
            Ok(s) if !self.replaying() && command::since_version(s.since) > self.compat => {
                let err = ReplyError::UnknownSubcommand {
                    sub: crate::error::c_str_prefix(argv.get(1).map_or(&[][..], |a| a), 128)
                        .to_vec(),
                    container: String::from_utf8_lossy(name).to_ascii_uppercase(),
                };
                self.reject(client, out, Some(spec), &err);
                return Outcome::Done;
            }
            Ok(s) => s,
            Err(err) => {
                self.reject(client, out, Some(spec), &err);
                return Outcome::Done;
            }
        };
        if !spec.arity_ok(argv.len()) {
            let err = ReplyError::WrongArity(spec.full_name().to_string());
            self.reject(client, out, Some(spec), &err);
            return Outcome::Done;
        }
        if spec.flags & flags::NO_AUTH == 0 && self.auth_required(client) {
            self.reject(client, out, Some(spec), &ReplyError::NoAuth);
            return Outcome::Done;
        }
        // SAVE, SHUTDOWN, SYNC and PSYNC cannot be part of a transaction.
        if client.multi.is_some() && spec.flags & flags::NO_MULTI != 0 {
            let err = ReplyError::msg("ERR Command not allowed inside a transaction");
            self.reject(client, out, Some(spec), &err);
            return Outcome::Done;
        }
        // Permissions, before MULTI queueing (a denied command dooms the transaction).
        if client.user.is_some() {
            let context = if client.multi.is_some() {
                acl::log::Context::Multi
            } else {
                acl::log::Context::Toplevel
            };
            client.last_cmd = spec.full_name();
            if let Err(denied) = self.acl_check(client, spec, &argv, context) {
                self.reject(client, out, Some(spec), &denied.reply(spec));
                return Outcome::Done;
            }
        }
        // Cluster routing (Redis's processCommand → getNodeByQuery, right after the ACL
        // check, before OOM, read-only replica and loading refusals): only in cluster
        // mode, never for the primary's link or log replay.
        if self.cluster.is_some()
            && client.repl != client::ClientRepl::Master
            && !self.replaying()
            && !client.in_script
            && (spec.flags & flags::MOVABLEKEYS != 0
                || !spec.key_flags.is_empty()
                || spec.name == "exec"
                || cluster::is_pubsub_shard(spec))
            && let Some(redirect) = self.cluster_route(client, spec, &argv)
        {
            if spec.name == "exec" {
                client.multi = None;
                client.multi_error = false;
                self.unwatch_all(client);
            }
            let err = ReplyError::owned(redirect.reply());
            self.reject(client, out, Some(spec), &err);
            return Outcome::Done;
        }
        // Evict before every command while maxmemory is set (Redis's processCommand →
        // performEvictions); what cannot be freed refuses commands that grow memory.
        // The primary's own client is never refused for memory (Redis exempts it too:
        // the replica must apply what the primary did).
        if self.limits.maxmemory > 0 && self.busy.is_none() {
            let evicted = self.perform_evictions();
            // The invalidations of evicted keys this client tracks go before its reply,
            // as in Redis (they are pushed while the command has not answered yet).
            self.flush_pushes(client.id, out);
            if evicted == evict::EvictResult::Fail
                && client.repl != client::ClientRepl::Master
                && Self::denied_on_oom(client, spec)
            {
                self.reject(client, out, Some(spec), &ReplyError::Oom);
                return Outcome::Done;
            }
        }
        // RESP2 clients in Pub/Sub mode read only subscription frames (RESP3 ones can
        // tell pushes from replies).
        if client.proto == crate::resp::writer::Protocol::Resp2
            && client.in_pubsub()
            && !matches!(
                spec.name,
                "ping"
                    | "subscribe"
                    | "ssubscribe"
                    | "unsubscribe"
                    | "sunsubscribe"
                    | "psubscribe"
                    | "punsubscribe"
                    | "quit"
                    | "reset"
            )
        {
            let err = ReplyError::PubSubContext(spec.full_name());
            self.reject(client, out, Some(spec), &err);
            return Outcome::Done;
        }
        if self.loading && spec.flags & flags::LOADING == 0 {
            self.reject(client, out, Some(spec), &LOADING);
            return Outcome::Done;
        }
        // A primary restarted with synchronous replication on serves nothing but what a
        // loading server serves until it is demoted or confirmed (core/syncrepl.rs).
        if self.sync.fenced_primary
            && spec.flags & flags::LOADING == 0
            && !matches!(spec.name, "replicaof" | "slaveof")
            && client.repl != client::ClientRepl::Master
        {
            // A Sentinel that names this server the primary must not count it as
            // available (it does count -LOADING), or it would never fail it over.
            let err = if spec.name == "ping" && client.sentinel_names_me_primary {
                &FENCED_TO_SENTINEL
            } else {
                &FENCED
            };
            self.reject(client, out, Some(spec), err);
            return Outcome::Done;
        }
        if spec.flags & flags::WRITE != 0
            && let Some(why) = self.persist.write_refusal()
        {
            self.reject(client, out, Some(spec), &ReplyError::owned(why));
            return Outcome::Done;
        }
        if let Some(err) = self.replication_refusal(client, spec) {
            self.reject(client, out, Some(spec), &err);
            return Outcome::Done;
        }
        // Paused clients (CLIENT PAUSE, FAILOVER, a shutdown's wait) are held before
        // their command is queued or run, as Redis's processCommand does.
        self.expire_client_pause(now_ms);
        if self.hold_if_paused(client, spec, &argv) {
            return Outcome::Blocked;
        }
        if let Some(busy) = &self.busy
            && busy.client_id != client.id
            && (!script::allowed_while_busy(spec.full_name())
                || (spec.name == "shutdown"
                    && !argv
                        .iter()
                        .skip(1)
                        .any(|a| a.eq_ignore_ascii_case(b"nosave"))))
        {
            let err = ReplyError::owned(script::busy_error(busy.is_eval).to_string());
            self.reject(client, out, Some(spec), &err);
            return Outcome::Done;
        }
        if client.multi.is_some() && spec.flags & flags::NO_MULTI_QUEUE == 0 {
            // A queued command's request and `+QUEUED` count for its slot now, as in
            // Redis (its time and its result count through EXEC).
            if self.slot_stats_enabled
                && let Some(slot) = self.command_slot(client, spec, &argv)
            {
                self.count_slot_stats(client, spec, slot, 0, b"+QUEUED\r\n".len() as u64);
            }
            if let Some(queue) = client.multi.as_mut() {
                queue.push(argv);
            }
            out.simple(b"QUEUED");
            return Outcome::Done;
        }
        self.argv_handed_over = true;
        let outcome = self.call(client, spec, &argv, out, now_ms);
        self.argv_handed_over = false;
        if let Some(state) = &mut client.blocked
            && state.argv.is_empty()
        {
            state.argv = Rc::new(argv);
        }
        outcome
    }

    /// Runs an already-validated command (used by EXEC for queued commands too).
    pub fn call(
        &mut self,
        client: &mut Client,
        spec: &'static CommandSpec,
        argv: &Argv,
        out: &mut RespWriter,
        now_ms: u64,
    ) -> Outcome {
        // Script runners (`skip_monitor`) show before the commands their script runs.
        if spec.flags & flags::SKIP_MONITOR != 0 {
            self.feed_monitors(client, spec, argv, now_ms);
        }
        // CLUSTER SLOT-STATS: the slot of the command's keys, unless it runs inside
        // EXEC or a script (they count for their commands, as Redis's
        // `canAddCpuDuration`) or replays the log.
        let stat_slot =
            if self.slot_stats_enabled && !client.in_exec && !client.in_script && !self.replaying()
            {
                self.command_slot(client, spec, argv)
            } else {
                None
            };
        let out_before = out.buf.len();
        let started = self.clock;
        if spec.flags & (flags::WRITE | flags::READONLY) != 0 {
            self.data_calls += 1;
        }
        client.last_cmd = spec.full_name();
        out.proto = client.proto;
        // A transaction's effects are logged between MULTI and EXEC records.
        let is_exec = spec.name == "exec";
        if is_exec {
            self.persist.exec_begin();
        }
        self.repl.enter();
        // Messages published to this client while its command runs wait in the core
        // (core/pubsub.rs).
        let detached = self.detach(client);
        let tracked_before = self.tracking.current;
        self.tracking.current = if client.in_script {
            client.script_caller
        } else {
            client.id
        };
        self.touch_keys(client, spec, argv, now_ms);
        let result = {
            let mut ctx = Ctx {
                core: self,
                client,
                out,
                argv,
                now_ms,
            };
            (spec.handler)(&mut ctx)
        };
        if !self.tracking.clients.is_empty() {
            let caller = self.tracking.current;
            self.tracking_remember(caller, spec, argv);
            if !client.in_script && !client.in_exec {
                self.tracking_broadcast();
            }
        }
        self.tracking.current = tracked_before;
        // MONITOR sees a command once it ran (Redis's `call`), so EXEC shows after the
        // commands it ran; a blocked command once, when it blocked, not again when it is
        // served (Redis 7.2's "MONITOR log blocked command only once").
        if spec.flags & flags::SKIP_MONITOR == 0 && self.reprocessing.is_none() {
            self.feed_monitors(client, spec, argv, now_ms);
        }
        // After the reply, as Redis 7.2+ appends `pending_push_messages`; a command
        // queued in MULTI leaves its messages to follow EXEC's whole reply.
        if detached {
            self.attach(client.id, out);
        } else if !client.in_exec {
            self.flush_pushes(client.id, out);
        }
        if is_exec {
            self.persist.exec_end();
        }
        if self.repl.leave() {
            self.repl_flush();
        }
        let ended = ticks::Tick::now();
        let usec = ended.micros_since(started);
        self.clock = ended;
        if let Some(slot) = stat_slot
            && client.blocked.is_none()
        {
            let bytes_out = out.buf.len().saturating_sub(out_before) as u64;
            self.count_slot_stats(client, spec, slot, usec, bytes_out);
        }
        if self.hotkeys.is_some() && client.blocked.is_none() && !client.in_script {
            let bytes_out = out.buf.len().saturating_sub(out_before) as u64;
            self.record_hotkeys(client, spec, argv, now_ms, usec, bytes_out);
        }
        let stat = self.stats.commands.entry(spec.full_name());
        stat.usec += usec;
        // A command that blocks is counted once, when it is finally served or its block
        // ends (`end_block`), as Redis does; the time of every attempt adds up.
        if client.blocked.is_none() {
            stat.calls += 1;
            self.stats.total_commands_processed += 1;
            client.cmds += 1;
            // Latency and the slow log measure the final execution only (Redis does the
            // same), and nothing is measured while loading.
            if !self.loading {
                if self.latency.tracking {
                    stat.histogram
                        .get_or_insert_with(Default::default)
                        .record_usec(usec);
                }
                if self.latency.threshold_ms != 0 {
                    let event = if spec.flags & flags::FAST != 0 {
                        "fast-command"
                    } else {
                        "command"
                    };
                    self.latency
                        .add_if_needed(event, usec / 1000, now_ms / 1000);
                }
                // EXEC is not logged itself (Redis: CMD_SKIP_SLOWLOG); its commands are.
                if self.slowlog.wants(usec) && !is_exec {
                    let shown = argv.iter().enumerate().map(|(i, a)| {
                        if redacted(spec, argv, i) {
                            b"(redacted)".as_slice()
                        } else {
                            a.as_ref()
                        }
                    });
                    self.slowlog.push(
                        shown,
                        usec,
                        now_ms / 1000,
                        &client.addr,
                        client.name.as_ref(),
                    );
                }
            }
        }
        if let Err(err) = result {
            // The entry made above for its time, found again among the names remembered.
            self.stats.commands.entry(spec.full_name()).failed_calls += 1;
            *self.stats.errors.entry(err.code()).or_default() += 1;
            out.error(&err);
        }
        if client.blocked.is_some() {
            Outcome::Blocked
        } else {
            Outcome::Done
        }
    }

    /// Hands a finished command to the active HOTKEYS session ([`hotkeys`]): its keys,
    /// its slot, its time and its bytes (request + reply; a command inside EXEC counts
    /// its arguments as a request would carry them).
    fn record_hotkeys(
        &mut self,
        client: &Client,
        spec: &'static CommandSpec,
        argv: &Argv,
        now_ms: u64,
        usec: u64,
        bytes_out: u64,
    ) {
        if !self.hotkeys.as_deref_mut().is_some_and(|h| h.tick(now_ms)) {
            return;
        }
        let positions = spec.key_positions(argv);
        if positions.is_empty() {
            return;
        }
        let slot = if self.cluster.is_some() {
            self.command_slot(client, spec, argv)
        } else {
            None
        };
        let bytes_in = if client.in_exec {
            let mut n = 0u64;
            let mut len = itoa::Buffer::new();
            n += 3 + len.format(argv.len()).len() as u64;
            for a in argv.iter() {
                n += 5 + len.format(a.len()).len() as u64 + a.len() as u64;
            }
            n
        } else {
            client.cmd_input_bytes
        };
        let keys: Vec<&[u8]> = positions
            .iter()
            .filter_map(|&p| argv.get(p).map(|k| k.as_ref()))
            .collect();
        if let Some(h) = self.hotkeys.as_deref_mut() {
            h.record(&keys, slot, usec, bytes_in + bytes_out);
        }
    }

    /// Replies with an error raised before the command ran; inside MULTI it also
    /// dooms the transaction (EXECABORT), as Redis does.
    fn reject(
        &mut self,
        client: &mut Client,
        out: &mut RespWriter,
        spec: Option<&'static CommandSpec>,
        err: &ReplyError,
    ) {
        if client.multi.is_some() {
            client.multi_error = true;
        }
        if let Some(spec) = spec {
            self.stats.commands.entry(spec.full_name()).rejected_calls += 1;
        }
        out.proto = client.proto;
        // A refused EXEC discards the transaction (Redis's `execCommandAbort`): the
        // client leaves MULTI and learns why.
        if spec.is_some_and(|s| s.name == "exec") && client.multi.is_some() {
            client.multi = None;
            client.multi_error = false;
            self.unwatch_all(client);
            let abort =
                ReplyError::owned(format!("EXECABORT Transaction discarded because of: {err}"));
            *self.stats.errors.entry(abort.code()).or_default() += 1;
            out.error(&abort);
            return;
        }
        *self.stats.errors.entry(err.code()).or_default() += 1;
        out.error(err);
    }

    /// Sends the command line to MONITOR clients (`+<time> [<db> <addr>] "cmd" "arg"`).
    /// Administrative commands (ACL SETUSER, CONFIG SET requirepass ...) are not shown,
    /// and credentials are shown as `(redacted)`, as Redis does.
    fn feed_monitors(&mut self, client: &Client, spec: &CommandSpec, argv: &Argv, now_ms: u64) {
        if self.monitors.is_empty() || spec.flags & flags::ADMIN != 0 {
            return;
        }
        let mut line = format!(
            "+{}.{:06} [{} {}]",
            now_ms / 1000,
            (now_ms % 1000) * 1000,
            client.db,
            if client.in_script {
                "lua"
            } else {
                &client.addr
            }
        );
        for (i, a) in argv.iter().enumerate() {
            if redacted(spec, argv, i) {
                line.push_str(" \"(redacted)\"");
                continue;
            }
            line.push_str(" \"");
            for &c in a.iter() {
                match c {
                    b'\\' => line.push_str("\\\\"),
                    b'"' => line.push_str("\\\""),
                    b'\n' => line.push_str("\\n"),
                    b'\r' => line.push_str("\\r"),
                    b'\t' => line.push_str("\\t"),
                    0x20..=0x7e => line.push(c as char),
                    _ => line.push_str(&format!("\\x{c:02x}")),
                }
            }
            line.push('"');
        }
        line.push_str("\r\n");
        for id in &self.monitors {
            if let Some(m) = self.clients.get(id) {
                m.send(
                    ClientMsg::Write(line.clone().into_bytes()),
                    self.limits.output,
                );
            }
        }
    }

    /// With `timeout` set, asks the connection of each client that ran no command for
    /// that long to close if it was idle that long (Redis's `clientsCronHandleTimeout`;
    /// blocked, MONITOR, Pub/Sub and replication clients are exempt, as there). The
    /// connection decides on its own reads and writes, so a client still receiving a long
    /// reply stays. Connections work out their own deadline whenever they start waiting;
    /// this reaches the ones that started before `timeout` was set (CONFIG SET), once per
    /// stretch of idleness.
    fn check_idle_clients(&mut self, now_ms: u64) {
        let Some(timeout) = self.limits.timeout else {
            return;
        };
        let idle_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        for c in self.clients.values_mut() {
            if c.idle_checked_ms != c.last_interaction_ms
                && now_ms.saturating_sub(c.last_interaction_ms) > idle_ms
                && c.blocked.is_none()
                && !c.monitor
                && !c.in_pubsub()
                && c.repl == client::ClientRepl::Normal
            {
                c.idle_checked_ms = c.last_interaction_ms;
                let _ = c.tx.send(ClientMsg::IdleCheck);
            }
        }
    }

    /// Periodic work (Redis `serverCron`): active expiry (logged as `DEL`; hash fields
    /// as `HDEL`: field_expire.rs), a share of
    /// any ongoing keyspace rehash (Redis's `activerehashing`), IDMP expiry, the stream
    /// lifecycle passes (retention, reclamation: lifecycle.rs), then the persistence chores ([`Persistence::cron`]: write pending records, reap background
    /// saves, save rules, automatic rewrite), and the check of idle clients (`timeout`).
    /// Nothing runs while loading.
    pub fn cron(&mut self) {
        // A suspended busy script is one atomic step: no expiry, no background work.
        if self.busy.is_some() {
            return;
        }
        if self.loading {
            return;
        }
        let now = unix_ms();
        self.expire_client_pause(now);
        self.check_idle_clients(now);
        let fresh = self.evict.fresh_clock(now);
        for db in &mut self.dbs {
            db.rehash(ACTIVE_REHASH_BUCKETS);
            db.keys.clock_init = fresh;
        }
        // Nothing expires while clients are paused (`pause.rs`).
        let paused = self.pause_in_force(now).is_some();
        let expire_started = Instant::now();
        for db in 0..self.dbs.len() {
            if self.dbs[db].expires.is_empty() || self.repl.is_replica() || paused {
                continue;
            }
            let gone = self.dbs[db].active_expire(now, 200);
            for (k, value) in gone {
                self.free_deleted(value, self.lazy.expire);
                self.expired(db, &k);
            }
        }
        if !self.repl.is_replica() && !paused {
            self.active_expire_fields(now);
        }
        // The latency monitor's `expire-cycle` event: one active expiry pass.
        if self.latency.threshold_ms != 0 {
            let ms = expire_started.elapsed().as_millis() as u64;
            self.latency.add_if_needed("expire-cycle", ms, now / 1000);
        }
        // IDMP expiry: bounded work per tick over all databases.
        let mut budget = IDMP_EXPIRE_BUDGET;
        for db in &mut self.dbs {
            db.expire_idmp(now, &mut budget);
        }
        // Retention and tombstone reclamation, bounded the same way (lifecycle.rs).
        self.lifecycle_cron(now);
        self.tier_cron();
        self.handle_ready_keys();
        // Keys that expired or went under BCAST prefixes meanwhile, and a tracking
        // table over a lowered `tracking-table-max-keys`.
        if !self.tracking.clients.is_empty() {
            self.tracking_limit();
            self.tracking_broadcast();
        }
        self.peak_memory();
        self.migrate_sockets.close_idle(now / 1000);
        self.repl_cron(now);
        self.with_persistence(|p, core| p.cron(core));
    }
}

/// Buckets of an ongoing keyspace rehash moved by each `cron` tick (Redis moves 100 at a
/// time for up to 1 ms).
const ACTIVE_REHASH_BUCKETS: usize = 1000;

/// Most units of IDMP expiry work (streams, producers and iids looked at) per cron tick.
const IDMP_EXPIRE_BUDGET: usize = 1000;

/// Is `argv[i]` a credential MONITOR and the slow log must not show: every argument of
/// AUTH, the user and password after HELLO's AUTH, and MIGRATE's AUTH/AUTH2 credentials
/// (Redis's `redactClientCommandArgument`).
fn redacted(spec: &CommandSpec, argv: &Argv, i: usize) -> bool {
    match spec.name {
        "auth" => i > 0,
        // Every argument after the user name, whether the command succeeds or not.
        "acl|setuser" => i >= 2,
        // The values of the sensitive settings (Redis's `SENSITIVE_CONFIG`).
        "config|set" => {
            i >= 3
                && (i - 3).is_multiple_of(2)
                && ["masteruser", "masterauth", "requirepass"]
                    .iter()
                    .any(|name| argv[i - 1].eq_ignore_ascii_case(name.as_bytes()))
        }
        // MIGRATE ... AUTH password / AUTH2 username password, in its option part (Redis's
        // migrateCommand redacts the arguments it consumes; KEYS ends the options).
        "migrate" => {
            let mut j = 6;
            while j < argv.len() && j < i {
                let a = &argv[j];
                if a.eq_ignore_ascii_case(b"KEYS") {
                    return false;
                } else if a.eq_ignore_ascii_case(b"AUTH") {
                    if i == j + 1 {
                        return true;
                    }
                    j += 1;
                } else if a.eq_ignore_ascii_case(b"AUTH2") {
                    if j + 2 >= argv.len() {
                        return false;
                    }
                    if i == j + 1 || i == j + 2 {
                        return true;
                    }
                    j += 2;
                } else if !a.eq_ignore_ascii_case(b"COPY") && !a.eq_ignore_ascii_case(b"REPLACE") {
                    return false;
                }
                j += 1;
            }
            false
        }
        "hello" => argv
            .iter()
            .take(i)
            .enumerate()
            .skip(2)
            .any(|(j, a)| a.eq_ignore_ascii_case(b"AUTH") && i <= j + 2),
        _ => false,
    }
}

/// The reply to commands that cannot run while the dataset loads.
const LOADING: ReplyError = ReplyError::msg("LOADING Redis is loading the dataset in memory");
/// What a fenced primary answers (a `-LOADING` error: clients retry, and a Sentinel that
/// sees it as a replica counts it available, so it can send the REPLICAOF that lifts the
/// fence; one that names it the primary gets [`FENCED_TO_SENTINEL`]).
const FENCED: ReplyError = ReplyError::msg(
    "LOADING this primary restarted with min-sync-replicas on and is fenced until REPLICAOF or SYNCSET CONFIRM",
);

/// The fenced primary's answer to the PINGs of a Sentinel that names it the primary: an
/// error Sentinel does not take as "available" (PONG, LOADING and MASTERDOWN are), so
/// the primary turns subjectively down after `down-after-milliseconds` and a member of
/// the sync set is promoted. A Sentinel that already sees it as a replica gets
/// [`FENCED`] and reconfigures it with REPLICAOF, which lifts the fence.
const FENCED_TO_SENTINEL: ReplyError = ReplyError::msg(
    "FENCED this primary restarted with min-sync-replicas on and does not serve as the primary until REPLICAOF or SYNCSET CONFIRM",
);
