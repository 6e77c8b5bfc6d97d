//! Replication as the core sees it: the replication ID and offset, the backlog the
//! effect stream is fed into, what the primary knows of its replicas, what a replica
//! knows of its link to its primary, and the clients waiting in WAIT.
//!
//! This is plain data. The sockets (a primary streaming to its replicas, a replica's
//! link to its primary) are `replication/`'s, a layer above, which reads and writes
//! this state in short borrows of the core; the command surface (REPLICAOF, PSYNC,
//! REPLCONF, WAIT, ROLE, INFO replication) is `commands/replication.rs`.
//!
//! **The stream.** Every effect a write command hands to [`Core::propagate`] is also
//! encoded here, when a backlog exists (the first replica creates it, as Redis's
//! `createReplicationBacklog`): a `SELECT` when the effect's database is not the
//! stream's, then the effect's RESP array. The effects of one command (or one EXEC)
//! are gathered first and wrapped in `MULTI`/`EXEC` when there are several, so a
//! replica applies them at once (Redis 7.0 does the same in `propagatePendingCommands`).
//! The offset is the number of stream bytes ever produced under the current history
//! (Redis's `master_repl_offset`), so a replica that has applied `n` bytes is at `n`.
//!
//! ```text
//!  offset:     start                                   master_repl_offset
//!                │◀──────────── backlog bytes ────────────▶│
//!  replica A:              sent ▲        (streaming: reads from its own offset)
//!  replica B:  sent ▲ (full sync in progress: holds the backlog from its sync offset)
//! ```
//!
//! The backlog keeps at least `repl-backlog-size` bytes, and more while a connected
//! replica still has to read them (Redis 7.0 shares one buffer between the backlog and
//! the replicas' output the same way); a replica further behind than the `replica`
//! class of `client-output-buffer-limit` allows is dropped instead.
//!
//! **Records a Redis replica cannot apply.** The stream is one byte sequence for every
//! replica, so offsets mean the same for all of them (PSYNC, WAIT, failover). Effects
//! that only streamd understands (`STREAMD.*`, Redis 8 options) are kept as *patches*:
//! the offset and same-length replacement bytes a Redis replica gets instead (its Redis
//! 7.0 form after `\n` padding, which Redis skips; see `replication/redis_forms.rs`,
//! which installs the translation with [`set_translator`]).

use super::Core;
use bytes::Bytes;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;
use tokio::sync::Notify;

/// How a record is rewritten for a replica that is not streamd: `None` when it goes as
/// it is, else exactly `encoded_len` replacement bytes.
pub type Translator = fn(argv: &[&[u8]], encoded_len: usize) -> Option<Vec<u8>>;

static TRANSLATOR: std::sync::OnceLock<Translator> = std::sync::OnceLock::new();

/// Installs the translation of records for replicas that are not streamd (the
/// replication layer does at start-up).
pub fn set_translator(t: Translator) {
    let _ = TRANSLATOR.set(t);
}

/// Runs the installed translator on `argv` (on the stack for up to 16 arguments, the
/// hot effects' size).
fn translate_argv<A: AsRef<[u8]>>(argv: &[A], encoded_len: usize) -> Option<Vec<u8>> {
    let t = TRANSLATOR.get()?;
    if argv.len() <= 16 {
        let mut parts: [&[u8]; 16] = [&[]; 16];
        for (p, a) in parts.iter_mut().zip(argv) {
            *p = a.as_ref();
        }
        t(&parts[..argv.len()], encoded_len)
    } else {
        let parts: Vec<&[u8]> = argv.iter().map(|a| a.as_ref()).collect();
        t(&parts, encoded_len)
    }
}

/// Capacity of the pending-records buffer kept between commands (larger ones are freed).
const PENDING_KEPT: usize = 64 * 1024;

/// `*1\r\n$5\r\nMULTI\r\n`.
const MULTI: &[u8] = b"*1\r\n$5\r\nMULTI\r\n";
/// `*1\r\n$4\r\nEXEC\r\n`.
const EXEC: &[u8] = b"*1\r\n$4\r\nEXEC\r\n";

/// Replacement bytes for a Redis replica at one stream offset.
#[derive(Debug, Clone)]
struct Patch {
    /// Stream offset of the record's first byte (0-based: byte `at` is the `at+1`-th).
    at: u64,
    /// Same length as the record.
    bytes: Box<[u8]>,
}

/// The replication backlog: the most recent stream bytes and their patches.
#[derive(Debug, Default)]
pub struct Backlog {
    buf: VecDeque<u8>,
    /// Offset of `buf[0]` (bytes before it are gone).
    start: u64,
    patches: VecDeque<Patch>,
}

impl Backlog {
    /// Offset of the first byte held.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// Bytes held.
    pub fn histlen(&self) -> u64 {
        self.buf.len() as u64
    }

    /// Copies up to `max` bytes from offset `from` (which must be held), with the
    /// patches applied when `native` is false.
    pub fn read(&self, from: u64, max: usize, native: bool) -> Vec<u8> {
        let Some(skip) = from.checked_sub(self.start) else {
            return Vec::new();
        };
        let skip = skip as usize;
        if skip >= self.buf.len() {
            return Vec::new();
        }
        let n = max.min(self.buf.len() - skip);
        let mut out: Vec<u8> = Vec::with_capacity(n);
        let (a, b) = self.buf.as_slices();
        if skip < a.len() {
            let end = (skip + n).min(a.len());
            out.extend_from_slice(&a[skip..end]);
            out.extend_from_slice(&b[..n - (end - skip)]);
        } else {
            out.extend_from_slice(&b[skip - a.len()..skip - a.len() + n]);
        }
        if !native {
            let end = from + n as u64;
            let first = self
                .patches
                .partition_point(|p| p.at + p.bytes.len() as u64 <= from);
            for p in self.patches.iter().skip(first) {
                if p.at >= end {
                    break;
                }
                for (i, &b) in p.bytes.iter().enumerate() {
                    let o = p.at + i as u64;
                    if o >= from && o < end {
                        out[(o - from) as usize] = b;
                    }
                }
            }
        }
        out
    }

    /// Drops bytes before `offset`.
    fn trim_to(&mut self, offset: u64) {
        if offset <= self.start {
            return;
        }
        let n = ((offset - self.start) as usize).min(self.buf.len());
        self.buf.drain(..n);
        self.start += n as u64;
        while self
            .patches
            .front()
            .is_some_and(|p| p.at + p.bytes.len() as u64 <= self.start)
        {
            self.patches.pop_front();
        }
    }
}

/// Where a replica of this server is in its life (INFO's `state=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaState {
    /// PSYNC answered with a full sync that has not started (`wait_bgsave`).
    WaitBgsave,
    /// The snapshot is being produced or sent (`send_bulk`).
    SendBulk,
    /// Streaming (`online`).
    Online,
}

impl ReplicaState {
    /// Redis's name for the state.
    pub fn name(self) -> &'static str {
        match self {
            ReplicaState::WaitBgsave => "wait_bgsave",
            ReplicaState::SendBulk => "send_bulk",
            ReplicaState::Online => "online",
        }
    }
}

/// Why a replica's connection is closed by the primary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// More than the replica class's hard output limit behind (counted in INFO stats
    /// `client_output_buffer_limit_disconnections`, as Redis counts it).
    OutputLimit,
    /// No ACK for `repl-timeout` seconds.
    Timeout,
}

/// What the primary knows of one connected replica.
#[derive(Debug, Clone)]
pub struct ReplicaInfo {
    /// The replica's address as it announced it (or its peer address).
    pub ip: String,
    /// `REPLCONF listening-port`.
    pub port: u16,
    /// Where it is.
    pub state: ReplicaState,
    /// Stream offset up to which it has been sent bytes.
    pub sent: u64,
    /// Offset it acknowledged (`REPLCONF ACK`).
    pub ack: u64,
    /// Offset its log made durable (`REPLCONF ACK ... FACK`).
    pub fack: u64,
    /// Unix ms of its last ACK.
    pub ack_ms: u64,
    /// It announced `capa streamd`: it gets the native stream and snapshots.
    pub native: bool,
    /// `capa eof` (diskless payloads).
    pub capa_eof: bool,
    /// `capa psync2`.
    pub capa_psync2: bool,
    /// Why its sender must close the connection, once it must.
    pub drop: Option<DropReason>,
    /// It asked with the old SYNC (no `+FULLRESYNC` line before the payload).
    pub old_sync: bool,
    /// Its payload went in the diskless `$EOF:` form: nothing more is sent until its
    /// first `REPLCONF ACK`, since bytes right after the end mark would reach it in the
    /// same read and hide the mark (Redis's `repl_put_online_on_ack`).
    pub online_on_ack: bool,
    /// Its id in sync sets (`REPLCONF sync-id`, streamd replicas).
    pub sync_id: Option<String>,
    /// Its first ACK on this connection was seen (a member then hears the set again).
    pub sync_seen: bool,
}

/// A replica's link to its primary (INFO's `master_link_status` and friends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// Must connect (`connect`).
    Connect,
    /// Connecting or in the handshake (`connecting`, `handshake`).
    Connecting,
    /// Receiving the full sync (`sync`).
    Sync,
    /// Streaming (`connected`).
    Connected,
}

/// What a replica knows of its primary.
#[derive(Debug, Clone)]
pub struct MasterInfo {
    /// `REPLICAOF host port`.
    pub host: String,
    /// Its port.
    pub port: u16,
    /// Link state.
    pub state: LinkState,
    /// Unix ms of the last bytes from the primary.
    pub last_io_ms: u64,
    /// Unix ms when the link went down (or was never up), for
    /// `master_link_down_since_seconds`.
    pub down_since_ms: u64,
    /// Payload bytes expected (-1 unknown, EOF-marked) and received during a sync.
    pub sync_total: i64,
    /// Payload bytes received so far.
    pub sync_read: u64,
    /// The primary's client id while the link is up.
    pub client_id: Option<u64>,
}

/// Where a FAILOVER is (INFO's `master_failover_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailoverState {
    /// Writes are held until the target acknowledged everything (`waiting-for-sync`).
    WaitingForSync,
    /// This server follows the target and asked it to take over
    /// (`failover-in-progress`).
    InProgress,
}

/// A FAILOVER command in progress.
#[derive(Debug, Clone)]
pub struct Failover {
    /// `TO host port`, or the replica chosen once caught up.
    pub target: Option<(String, u16)>,
    /// `FORCE`: fail over at the timeout even if the target is behind.
    pub force: bool,
    /// `TIMEOUT`, as a unix ms deadline.
    pub deadline_ms: Option<u64>,
    /// Where it is.
    pub state: FailoverState,
    /// Unix ms it entered `InProgress`.
    pub started_ms: u64,
}

/// How long after a WAIT the replicas are asked to acknowledge every batch of writes
/// ([`Core::ask_acks_for_waiters`]).
pub const WAIT_RECENT_MS: u64 = 1000;

/// A client blocked in WAIT (or WAITAOF).
#[derive(Debug, Clone)]
pub struct Waiter {
    /// The client.
    pub client_id: u64,
    /// The offset its replicas must reach.
    pub offset: u64,
    /// How many replicas.
    pub replicas: u64,
    /// WAITAOF: how many local fsyncs (0 or 1), else `None` for WAIT.
    pub aof_local: Option<u64>,
    /// Unix ms deadline, `None` for none.
    pub deadline_ms: Option<u64>,
}

/// The primary a promoted server followed until its promotion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftPrimary {
    /// Its host, as REPLICAOF named it.
    pub host: String,
    /// Its port.
    pub port: u16,
    /// The newest configuration epoch in the hellos known at the promotion.
    pub epoch: u64,
}

/// The last `__sentinel__:hello` one Sentinel published on this server: who that
/// Sentinel says is the primary of this server's group (Sentinel's `sentinelSendHello`:
/// `ip,port,runid,current_epoch,master_name,master_ip,master_port,master_config_epoch`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentinelHello {
    /// The primary's address as Sentinel knows it.
    pub master_ip: String,
    /// Its port.
    pub master_port: u16,
    /// The configuration epoch of that Sentinel's view of the group.
    pub config_epoch: u64,
    /// Unix ms it arrived.
    pub at_ms: u64,
}

impl SentinelHello {
    /// The sending Sentinel's run id and what its hello says; `None` when `payload` is
    /// not a hello's eight comma-separated fields.
    pub fn parse(payload: &[u8], now_ms: u64) -> Option<(String, SentinelHello)> {
        let text = std::str::from_utf8(payload).ok()?;
        let f: Vec<&str> = text.split(',').collect();
        if f.len() != 8 {
            return None;
        }
        let (Ok(master_port), Ok(config_epoch)) = (f[6].parse::<u16>(), f[7].parse::<u64>()) else {
            return None;
        };
        let hello = SentinelHello {
            master_ip: f[5].to_string(),
            master_port,
            config_epoch,
            at_ms: now_ms,
        };
        Some((f[2].to_string(), hello))
    }
}

impl super::Core {
    /// Whether a `__sentinel__:hello` published on a connection whose local address is
    /// `laddr` names this server as the primary: its primary address is this server's
    /// as Sentinel knows it, `replica-announce-ip`/`-port` where set, else the address
    /// that connection reached (what a Sentinel's `monitor` line or a primary's INFO
    /// gives it). A hello naming a host name never matches.
    pub fn hello_names_me(&self, payload: &[u8], laddr: &str) -> bool {
        let Some((_, hello)) = SentinelHello::parse(payload, 0) else {
            return false;
        };
        let ip = match self.replica_announced_ip() {
            Some(ip) => ip.to_string(),
            None => laddr
                .parse::<std::net::SocketAddr>()
                .map(|a| a.ip().to_string())
                .unwrap_or_default(),
        };
        hello.master_port == self.replica_announced_port() && hello.master_ip == ip
    }

    /// The port this server gives its primary (`REPLCONF listening-port`) and so what
    /// Sentinel learns: `replica-announce-port`, else the real one.
    pub fn replica_announced_port(&self) -> u16 {
        self.config
            .get_port("replica-announce-port")
            .unwrap_or(self.port)
    }

    /// `replica-announce-ip`, when set (`REPLCONF ip-address`).
    pub fn replica_announced_ip(&self) -> Option<&str> {
        self.config
            .get("replica-announce-ip")
            .filter(|ip| !ip.is_empty())
    }
}

/// How recent a hello must be to count (Sentinel publishes every 2 s).
const HELLO_FRESH_MS: u64 = 5_000;
/// A primary promoted less than this ago never follows a hello: Sentinels that have not
/// heard of its promotion yet still name its old primary (Sentinel itself waits
/// `SENTINEL_PUBLISH_PERIOD*4` before it reconfigures a server for the same reason).
const PROMOTION_SETTLE_MS: u64 = 10_000;

/// Replication statistics for INFO stats.
#[derive(Debug, Default, Clone)]
pub struct ReplStats {
    /// Full syncs served.
    pub sync_full: u64,
    /// Partial resyncs accepted.
    pub sync_partial_ok: u64,
    /// Partial resyncs refused (a full sync followed).
    pub sync_partial_err: u64,
}

/// The core's replication state (see the module doc).
#[derive(Debug)]
pub struct Replication {
    /// The current history's id (40 hex characters).
    pub replid: String,
    /// The previous history's id (zeros when none), for PSYNC after a failover.
    pub replid2: String,
    /// Last offset (+1) valid under `replid2`, -1 when none.
    pub second_replid_offset: i64,
    /// Stream bytes produced under the history (`master_repl_offset`).
    pub offset: u64,
    /// The backlog, once a replica ever connected.
    pub backlog: Option<Backlog>,
    /// Connected replicas by client id.
    pub replicas: BTreeMap<u64, ReplicaInfo>,
    /// This server's primary, when it is a replica.
    pub master: Option<MasterInfo>,
    /// Bumped on every REPLICAOF, so the link task drops a link to a former primary.
    pub link_generation: u64,
    /// Wakes the link task (REPLICAOF).
    pub link_changed: Rc<Notify>,
    /// Wakes the replicas' senders (new stream bytes, a replica to drop).
    pub wake: Rc<Notify>,
    /// True while the core applies commands from its primary: their effects go to the
    /// log only (the link feeds the primary's own bytes on to sub-replicas).
    pub applying_master: bool,
    /// A command from the primary asked for an ACK (`REPLCONF GETACK`).
    pub ack_requested: bool,
    /// Clients in WAIT / WAITAOF.
    pub waiters: Vec<Waiter>,
    /// The latest `__sentinel__:hello` of each Sentinel (by its run id), for
    /// `sentinel-rejoin`.
    pub sentinel_hellos: BTreeMap<String, SentinelHello>,
    /// The highest configuration epoch of a hello that turned out to name this server.
    pub self_epoch: u64,
    /// Unix ms this server was last promoted (REPLICAOF NO ONE, FAILOVER), 0 never.
    pub promoted_ms: u64,
    /// The primary this server followed when it was last promoted, and the newest
    /// configuration epoch Sentinels' hellos had named by then
    /// ([`Replication::refuses_old_primary`]).
    pub left_primary: Option<LeftPrimary>,
    /// Every replica (by its announced address) that has been online with this
    /// server: a full sync waits `repl-diskless-sync-delay` only while one of them is
    /// not connected, since only then can another be expected to arrive.
    pub known_replicas: std::collections::BTreeSet<(String, u16)>,
    /// A `REPLCONF GETACK *` is in the stream since the last write.
    pub getack_pending: bool,
    /// Unix ms of the last WAIT or WAITAOF while replicas were attached
    /// ([`Core::ask_acks_for_waiters`]).
    pub wait_seen_ms: u64,
    /// The control records (PING, GETACK) fed since the last command's: the offsets
    /// they start and end at ([`Replication::wait_offset`]).
    control_tail: Option<(u64, u64)>,
    /// Replicas counted good for `min-replicas-to-write`.
    pub good_replicas: u64,
    /// Unix ms of the last PING fed to the stream (start-up at first: Redis pings every
    /// `repl-ping-replica-period` counted from its start, not at once).
    pub last_ping_ms: u64,
    /// Unix ms since when there have been no replicas (for `repl-backlog-ttl`).
    pub no_replicas_since_ms: u64,
    /// Offset the local log has made durable (WAITAOF's local count).
    pub fsynced_offset: u64,
    /// Commands from a primary this server does not know, by name (logged once each).
    pub unknown_from_master: BTreeMap<String, u64>,
    /// Cached `repl-backlog-size` and the `replica` class hard limit (refreshed with
    /// the config cache), read on every flush.
    pub limits: (u64, u64),
    /// Cached `min-replicas-to-write` (0 when `min-replicas-max-lag` is 0) and
    /// `replica-read-only`, read by every write command.
    pub write_rules: (u64, bool),
    /// A FAILOVER in progress.
    pub failover: Option<Failover>,
    /// Writes are held (a shutdown waiting for its replicas, `shutdown-timeout`).
    pub pause_writes: bool,
    /// Clients whose write commands are held (FAILOVER, shutdown).
    pub paused: Vec<u64>,
    /// The link's next PSYNC asks the primary to take over (`PSYNC ... FAILOVER`).
    pub psync_failover: bool,
    /// INFO stats counters.
    pub stats: ReplStats,
    /// On a replica: the database its primary's stream has selected, so a partial
    /// resync continues in it (Redis keeps it in the cached primary client).
    pub master_db: Option<usize>,
    /// Effects of the running command not yet in the backlog.
    pending: Vec<u8>,
    /// Patches of `pending` (offsets relative to it).
    pending_patches: Vec<(usize, Box<[u8]>)>,
    /// Records in `pending` (SELECT not counted).
    pending_records: u32,
    /// Nesting of `Core::call` (effects flush when it returns to 0).
    depth: u32,
    /// Database the stream has selected (`None`: the next effect sends SELECT).
    selected_db: Option<usize>,
}

impl Default for Replication {
    fn default() -> Self {
        Replication {
            replid: random_replid(),
            replid2: "0".repeat(40),
            second_replid_offset: -1,
            offset: 0,
            backlog: None,
            replicas: BTreeMap::new(),
            master: None,
            link_generation: 0,
            link_changed: Rc::new(Notify::new()),
            wake: Rc::new(Notify::new()),
            applying_master: false,
            ack_requested: false,
            waiters: Vec::new(),
            sentinel_hellos: BTreeMap::new(),
            self_epoch: 0,
            promoted_ms: 0,
            left_primary: None,
            known_replicas: std::collections::BTreeSet::new(),
            getack_pending: false,
            wait_seen_ms: 0,
            control_tail: None,
            good_replicas: 0,
            last_ping_ms: super::unix_ms(),
            no_replicas_since_ms: super::unix_ms(),
            fsynced_offset: 0,
            unknown_from_master: BTreeMap::new(),
            stats: ReplStats::default(),
            limits: (1024 * 1024, 256 * 1024 * 1024),
            write_rules: (0, true),
            failover: None,
            pause_writes: false,
            paused: Vec::new(),
            psync_failover: false,
            master_db: None,
            pending: Vec::new(),
            pending_patches: Vec::new(),
            pending_records: 0,
            depth: 0,
            selected_db: None,
        }
    }
}

/// A fresh replication id: 40 random hex characters (Redis's `changeReplicationId`).
pub fn random_replid() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut out = String::with_capacity(40);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut i = 0u64;
    while out.len() < 40 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(seed);
        h.write_u64(i);
        h.write_u32(std::process::id());
        out.push_str(&format!("{:016x}", h.finish()));
        i += 1;
    }
    out.truncate(40);
    out
}

impl Replication {
    /// True when this server follows a primary.
    pub fn is_replica(&self) -> bool {
        self.master.is_some()
    }

    /// True when effects must be encoded into the stream: only on a primary. A
    /// replica's stream is its primary's, byte for byte (`feed_from_master`); what its
    /// own clients change there (a PUBLISH, Sentinel's hello messages every two
    /// seconds, a write on a writable replica) must not enter it, or its offset would
    /// run ahead of its primary's, its ACKs would count bytes it never received, and
    /// a PSYNC would continue from the wrong place (Redis's `replicationFeedSlaves`
    /// returns at once when `masterhost` is set, for the same reason).
    pub fn feeding(&self) -> bool {
        self.backlog.is_some() && !self.applying_master && self.master.is_none()
    }

    /// Creates the backlog at the current offset if there is none.
    pub fn ensure_backlog(&mut self) {
        if self.backlog.is_none() {
            self.backlog = Some(Backlog {
                buf: VecDeque::new(),
                start: self.offset,
                patches: VecDeque::new(),
            });
            self.selected_db = None;
        }
    }

    /// A new history (Redis's `changeReplicationId` + `clearReplicationId2`): the
    /// backlog is dropped, so every replica must sync in full.
    pub fn new_history(&mut self) {
        self.replid = random_replid();
        self.replid2 = "0".repeat(40);
        self.second_replid_offset = -1;
        self.backlog = None;
        self.selected_db = None;
    }

    /// Promotion (Redis's `shiftReplicationId`): the current history becomes the second
    /// one, valid up to this offset, and a new id starts from here, so replicas of the
    /// old primary can continue with a partial resync.
    pub fn shift_history(&mut self) {
        self.replid2 = std::mem::replace(&mut self.replid, random_replid());
        self.second_replid_offset = self.offset as i64 + 1;
    }

    /// The next effect selects its database again (a full sync starts at this point:
    /// the replica does not know which database the stream had selected).
    pub fn force_select(&mut self) {
        self.selected_db = None;
    }

    /// True inside a command (its effects flush when it ends).
    pub fn in_command(&self) -> bool {
        self.depth > 0
    }

    /// Enters a command (`Core::call`).
    pub fn enter(&mut self) {
        self.depth += 1;
    }

    /// Leaves a command; true when its effects must be flushed.
    pub fn leave(&mut self) -> bool {
        self.depth = self.depth.saturating_sub(1);
        self.depth == 0 && !self.pending.is_empty()
    }

    /// Encodes one effect on database `db` into the pending stream bytes.
    pub fn feed<A: AsRef<[u8]>>(&mut self, db: usize, argv: &[A]) {
        if self.selected_db != Some(db) {
            let before = self.pending.len();
            let text = itoa::Buffer::new().format(db).to_string();
            crate::resp::writer::command(
                &mut self.pending,
                &[b"SELECT".as_slice(), text.as_bytes()],
            );
            // A SELECT that opens the batch is not a record of its own (one command
            // and its SELECT are not wrapped in MULTI/EXEC).
            if before != 0 {
                self.pending_records += 1;
            }
            self.selected_db = Some(db);
        }
        self.record(argv);
    }

    /// Encodes one database-independent record (PING, REPLCONF GETACK).
    fn record<A: AsRef<[u8]>>(&mut self, argv: &[A]) {
        let at = self.pending.len();
        crate::resp::writer::command(&mut self.pending, argv);
        let len = self.pending.len() - at;
        if let Some(p) = translate_argv(argv, len) {
            self.pending_patches.push((at, p.into_boxed_slice()));
        }
        self.pending_records += 1;
    }

    /// Moves the pending bytes into the backlog (wrapped in MULTI/EXEC when several
    /// records), then trims it; true when anything moved.
    pub fn flush(&mut self, backlog_size: u64, replica_hard_limit: u64) -> bool {
        if self.pending.is_empty() {
            return false;
        }
        let mut pending = std::mem::take(&mut self.pending);
        let patches = std::mem::take(&mut self.pending_patches);
        let wrap = self.pending_records > 1;
        self.pending_records = 0;
        let Some(b) = self.backlog.as_mut() else {
            return false;
        };
        let base = self.offset;
        // MULTI opens the transaction before its SELECT, as Redis 7.2+ propagates it, so
        // the database switch is inside what a replica applies atomically (7.0 sent the
        // SELECT first).
        let mut shift = 0u64;
        if wrap {
            b.buf.extend(MULTI);
            shift = MULTI.len() as u64;
        }
        b.buf.extend(&pending);
        if wrap {
            b.buf.extend(EXEC);
        }
        for (at, bytes) in patches {
            let at = at as u64 + shift;
            b.patches.push_back(Patch {
                at: base + at,
                bytes,
            });
        }
        self.offset += pending.len() as u64
            + if wrap {
                (MULTI.len() + EXEC.len()) as u64
            } else {
                0
            };
        self.getack_pending = false;
        self.trim(backlog_size, replica_hard_limit);
        // The buffer is kept for the next command's records (grown from empty it was
        // reallocated a few times per command), unless one outsized record grew it.
        if pending.capacity() <= PENDING_KEPT {
            pending.clear();
            self.pending = pending;
        }
        true
    }

    /// Appends a record the primary sent (a replica forwarding its primary's stream to
    /// its own replicas), already in the database it names. `raw` is the record's bytes
    /// as received, when the parser kept them: they go to the backlog as they are, as
    /// Redis's `replicationFeedStreamFromMasterStream` copies what it read; without them
    /// (a record that came in pieces) the arguments are encoded again. Either way the
    /// offset moves by the record's length, which is what the primary counted.
    pub fn feed_from_master(
        &mut self,
        argv: &[Bytes],
        raw: Option<&[u8]>,
        backlog_size: u64,
        hard_limit: u64,
    ) -> u64 {
        let encoded_len = crate::resp::writer::command_len(argv);
        // Without a backlog (no replica of ours ever connected) only the offset moves.
        if let Some(b) = self.backlog.as_mut() {
            if let Some(p) = translate_argv(argv, encoded_len) {
                b.patches.push_back(Patch {
                    at: self.offset,
                    bytes: p.into_boxed_slice(),
                });
            }
            match raw.filter(|r| r.len() == encoded_len) {
                Some(raw) => b.buf.extend(raw),
                None => {
                    let mut bytes = Vec::with_capacity(encoded_len);
                    crate::resp::writer::command(&mut bytes, argv);
                    b.buf.extend(&bytes);
                }
            }
        }
        let len = encoded_len as u64;
        self.offset += len;
        self.trim(backlog_size, hard_limit);
        len
    }

    /// Feeds a record outside any command (PING, REPLCONF GETACK) straight into the
    /// backlog.
    pub fn feed_control(&mut self, argv: &[&[u8]], backlog_size: u64, hard_limit: u64) {
        if !self.feeding() {
            return;
        }
        let before = self.offset;
        self.record(argv);
        self.flush(backlog_size, hard_limit);
        let from = match self.control_tail {
            Some((from, to)) if to == before => from,
            _ => before,
        };
        self.control_tail = Some((from, self.offset));
    }

    /// The offset WAIT and WAITAOF wait for: the end of the stream, less the control
    /// records (PING, REPLCONF GETACK) fed after the last command, which no write needs
    /// (Redis waits for the client's own last write). A Redis replica answers a GETACK
    /// with its offset before the GETACK, so a WAIT that counted the GETACK's own bytes
    /// would wait for that replica's next once-a-second ACK.
    pub fn wait_offset(&self) -> u64 {
        match self.control_tail {
            Some((from, to)) if to == self.offset => from,
            _ => self.offset,
        }
    }

    /// Whether the stream's last record is a command's, not a control record (a GETACK
    /// behind it would ask for something new).
    pub fn ends_with_write(&self) -> bool {
        self.control_tail
            .map_or(self.offset > 0, |(_, to)| to != self.offset)
    }

    /// Starts the stream afresh at `offset` (a full sync's, or a restart's saved one).
    pub fn reset_offset(&mut self, offset: u64) {
        self.offset = offset;
        self.control_tail = None;
    }

    /// Keeps `backlog_size` bytes and whatever a connected replica still needs; marks
    /// replicas more than `hard_limit` bytes behind (0 = no limit) for dropping.
    fn trim(&mut self, backlog_size: u64, hard_limit: u64) {
        let offset = self.offset;
        let mut floor = offset.saturating_sub(backlog_size);
        for r in self.replicas.values_mut() {
            if r.drop.is_some() {
                continue;
            }
            if hard_limit > 0 && offset - r.sent.min(offset) > hard_limit {
                r.drop = Some(DropReason::OutputLimit);
                continue;
            }
            floor = floor.min(r.sent);
        }
        if let Some(b) = self.backlog.as_mut() {
            b.trim_to(floor);
        }
    }

    /// Can PSYNC `replid` `psync_offset` (the next byte the replica wants) continue
    /// from the backlog? Redis's `masterTryPartialResynchronization` rules.
    pub fn can_continue(&self, replid: &str, psync_offset: i64) -> bool {
        let Some(b) = self.backlog.as_ref() else {
            return false;
        };
        if replid != self.replid
            && (replid != self.replid2 || psync_offset > self.second_replid_offset)
        {
            return false;
        }
        let first = b.start as i64 + 1;
        psync_offset >= first && psync_offset <= b.start as i64 + b.histlen() as i64 + 1
    }

    /// Replicas whose acknowledged offset reached `offset`.
    pub fn acked(&self, offset: u64) -> u64 {
        self.replicas.values().filter(|r| r.ack >= offset).count() as u64
    }

    /// Replicas whose durable offset reached `offset`.
    pub fn facked(&self, offset: u64) -> u64 {
        self.replicas.values().filter(|r| r.fack >= offset).count() as u64
    }

    /// Records a `__sentinel__:hello` message published on this server (ignored when
    /// it is not one).
    pub fn note_sentinel_hello(&mut self, payload: &[u8], now_ms: u64) {
        if let Some((runid, hello)) = SentinelHello::parse(payload, now_ms) {
            self.sentinel_hellos.insert(runid, hello);
        }
    }

    /// The primary Sentinels name for this server's group, when a primary that has lost
    /// its replicas should follow it (`sentinel-rejoin`): at least two Sentinels'
    /// recent hellos name the same address with the newest configuration epoch any of
    /// them reports, newer than any epoch that named this server; this server is a
    /// primary without replicas and was not promoted moments ago. Whether that address
    /// is this server itself, the caller asks it (run id).
    pub fn hello_candidate(&self, now_ms: u64) -> Option<(String, u16, u64)> {
        if self.is_replica()
            || !self.replicas.is_empty()
            || (self.promoted_ms > 0
                && now_ms.saturating_sub(self.promoted_ms) < PROMOTION_SETTLE_MS)
        {
            return None;
        }
        let recent: Vec<&SentinelHello> = self
            .sentinel_hellos
            .values()
            .filter(|h| now_ms.saturating_sub(h.at_ms) <= HELLO_FRESH_MS)
            .collect();
        let newest = recent.iter().map(|h| h.config_epoch).max()?;
        let named: Vec<&&SentinelHello> =
            recent.iter().filter(|h| h.config_epoch == newest).collect();
        let first = named.first()?;
        let agree = named
            .iter()
            .all(|h| h.master_ip == first.master_ip && h.master_port == first.master_port);
        (agree && named.len() >= 2 && newest > self.self_epoch)
            .then(|| (first.master_ip.clone(), first.master_port, newest))
    }

    /// Whether `sentinel-rejoin` refuses REPLICAOF `host port` as a stale Sentinel's:
    /// this server was promoted less than [`PROMOTION_SETTLE_MS`] ago, `host:port` is
    /// the primary it followed until then, and no hello names that address under a
    /// configuration epoch newer than every epoch known at the promotion. A Sentinel
    /// whose last look at this server predates the promotion (Sentinel's 8 s wait
    /// counts from the role it last saw, which can be a reign long past) converts it
    /// back to the primary it replaced before the winner's hellos reach it: the
    /// deposed primary's lone writes would then replace the new reign's. A real
    /// failover back to that server comes with a newer epoch; without one, after the
    /// settle time, REPLICAOF is obeyed as always.
    pub fn refuses_old_primary(&self, host: &str, port: u16, now_ms: u64) -> bool {
        let Some(left) = &self.left_primary else {
            return false;
        };
        let recent =
            self.promoted_ms > 0 && now_ms.saturating_sub(self.promoted_ms) < PROMOTION_SETTLE_MS;
        recent
            && left.port == port
            && left.host.eq_ignore_ascii_case(host)
            && !self.sentinel_hellos.values().any(|h| {
                h.config_epoch > left.epoch
                    && h.master_port == port
                    && h.master_ip.eq_ignore_ascii_case(host)
            })
    }

    /// Marks the replica `id` online and remembers its address.
    pub fn set_online(&mut self, id: u64, now_ms: u64) {
        if let Some(r) = self.replicas.get_mut(&id) {
            r.state = ReplicaState::Online;
            r.ack_ms = now_ms;
            self.known_replicas.insert((r.ip.clone(), r.port));
        }
    }

    /// True when every replica known to this server is connected (streaming or
    /// waiting for its full sync): no other is expected, so a full sync need not wait
    /// for one.
    pub fn every_known_replica_connected(&self) -> bool {
        self.known_replicas.iter().all(|(ip, port)| {
            self.replicas
                .values()
                .any(|r| r.ip == *ip && r.port == *port && r.drop.is_none())
        })
    }
}

impl Core {
    /// Makes the server a replica of `host:port` (REPLICAOF, the `replicaof` directive,
    /// FAILOVER): the link task connects and tries a partial resync with the current
    /// history (Redis's `replicationSetMaster` with `replicationCacheMasterUsingMyself`).
    pub fn follow_master(&mut self, host: String, port: u16) {
        let now = super::unix_ms();
        self.repl.master = Some(MasterInfo {
            host: host.clone(),
            port,
            state: LinkState::Connect,
            last_io_ms: now,
            down_since_ms: now,
            sync_total: -1,
            sync_read: 0,
            client_id: None,
        });
        self.repl.link_generation += 1;
        self.sync.demoted();
        self.config.set_value("replicaof", format!("{host} {port}"));
        self.close_master_client();
        self.repl.link_changed.notify_one();
        // WAIT has no meaning on a replica: its waiters get what they have.
        let now = super::unix_ms();
        for w in self.repl.waiters.iter_mut() {
            w.deadline_ms = Some(now);
        }
        self.serve_waiters(now);
    }

    /// Makes a replica a primary (REPLICAOF NO ONE, PSYNC ... FAILOVER): the history
    /// shifts so the other replicas of the old primary can continue from this one, and
    /// this server's own replicas reconnect to learn the new id (Redis's
    /// `replicationUnsetMaster`).
    pub fn become_primary(&mut self) {
        self.repl.promoted_ms = super::unix_ms();
        let newest = self
            .repl
            .sentinel_hellos
            .values()
            .map(|h| h.config_epoch)
            .max()
            .unwrap_or(0);
        self.repl.left_primary = self.repl.master.as_ref().map(|m| LeftPrimary {
            host: m.host.clone(),
            port: m.port,
            epoch: newest,
        });
        self.sync.promoted();
        self.repl.shift_history();
        self.repl.ensure_backlog();
        self.repl.force_select();
        self.repl.master = None;
        self.repl.link_generation += 1;
        self.config.set_value("replicaof", String::new());
        self.close_master_client();
        let replicas: Vec<u64> = self.repl.replicas.keys().copied().collect();
        for id in replicas {
            if let Some(c) = self.clients.get(&id) {
                let _ = c.tx.send(super::client::ClientMsg::Close);
            }
            self.repl.replicas.remove(&id);
        }
        self.repl.link_changed.notify_one();
    }

    fn close_master_client(&mut self) {
        for c in self.clients.values() {
            if c.repl == super::client::ClientRepl::Master {
                let _ = c.tx.send(super::client::ClientMsg::Close);
            }
        }
    }

    /// Ends a FAILOVER (done or aborted): the held writers run now (on a server that
    /// became a replica they get `-READONLY`, as in Redis).
    pub fn end_failover(&mut self, why: &str) {
        if self.repl.failover.take().is_none() {
            return;
        }
        tracing::info!("FAILOVER ended: {why}");
        self.resume_paused();
    }

    /// Runs the write commands held by a FAILOVER or a shutdown's wait.
    pub fn resume_paused(&mut self) {
        for id in std::mem::take(&mut self.repl.paused) {
            let Some(mut client) = self.clients.remove(&id) else {
                continue;
            };
            if let Some(state) = client.blocked.take() {
                let mut out = crate::resp::writer::RespWriter::new(client.proto);
                self.begin_batch();
                let saved = client.db;
                client.db = state.db;
                let outcome = self.execute(
                    &mut client,
                    std::rc::Rc::unwrap_or_clone(state.argv),
                    &mut out,
                );
                if client.db == state.db {
                    client.db = saved;
                }
                if outcome == super::Outcome::Done {
                    client.send(
                        super::client::ClientMsg::Unblocked(out.take()),
                        self.limits.output,
                    );
                }
                self.handle_ready_keys();
            }
            self.clients.insert(id, client);
        }
    }

    /// FAILOVER's progress, from the cron: once the target replica (or any, without
    /// TO) acknowledged everything, this server follows it and asks it, with `PSYNC
    /// ... FAILOVER`, to become the primary; on timeout it aborts, or fails over anyway
    /// with FORCE.
    fn failover_cron(&mut self, now_ms: u64) {
        let Some(f) = self.repl.failover.as_ref() else {
            return;
        };
        match f.state {
            FailoverState::WaitingForSync => {
                let timed_out = f.deadline_ms.is_some_and(|d| now_ms >= d);
                let offset = self.repl.offset;
                let caught_up = self
                    .repl
                    .replicas
                    .values()
                    .filter(|r| r.state == ReplicaState::Online)
                    .find(|r| match &f.target {
                        Some((h, p)) => r.ip == *h && r.port == *p,
                        None => r.ack >= offset,
                    })
                    .filter(|r| r.ack >= offset)
                    .map(|r| (r.ip.clone(), r.port));
                let target = match (caught_up, timed_out, f.force) {
                    (Some(t), _, _) => t,
                    (None, true, true) => match f.target.clone() {
                        Some(t) => t,
                        None => return self.end_failover("no target"),
                    },
                    (None, true, false) => {
                        return self.end_failover("Replica never caught up before timeout");
                    }
                    (None, false, _) => {
                        if !self.repl.getack_pending {
                            self.feed_getack();
                        }
                        return;
                    }
                };
                tracing::info!(
                    "Failover target {}:{} is synced, failing over.",
                    target.0,
                    target.1
                );
                if let Some(f) = self.repl.failover.as_mut() {
                    f.state = FailoverState::InProgress;
                    f.target = Some(target.clone());
                    f.started_ms = now_ms;
                }
                self.repl.psync_failover = true;
                let paused = self.repl.failover.take();
                self.follow_master(target.0, target.1);
                self.repl.failover = paused;
            }
            FailoverState::InProgress => {
                let connected = self
                    .repl
                    .master
                    .as_ref()
                    .is_some_and(|m| m.state == LinkState::Connected);
                if connected {
                    self.end_failover("Failover target is the primary now");
                } else if now_ms.saturating_sub(f.started_ms) > 60_000 {
                    self.repl.psync_failover = false;
                    self.end_failover("the target never took over");
                }
            }
        }
    }

    /// Why `client` may not run `spec` given the server's replication role, if it may
    /// not (Redis's `processCommand`: `-NOREPLICAS` under `min-replicas-to-write`,
    /// `-READONLY` on a read-only replica, `-MASTERDOWN` on a replica whose link is
    /// down with `replica-serve-stale-data no`). The primary's own client is exempt.
    pub fn replication_refusal(
        &self,
        client: &super::client::Client,
        spec: &super::command::CommandSpec,
    ) -> Option<crate::error::ReplyError> {
        use super::command::flags;
        use crate::error::ReplyError;
        if client.repl == super::client::ClientRepl::Master {
            return None;
        }
        // EXEC answers for its queued commands (Redis's `mstate.cmd_flags` and
        // `cmd_inv_flags`): it writes if one of them does, it is refused on a stale
        // replica if one of them would be.
        let (any, all) = match &client.multi {
            Some(queue) if spec.name == "exec" => super::command::queued_flags(queue),
            _ => (spec.flags, spec.flags),
        };
        let write = any & flags::WRITE != 0;
        let (min, read_only) = self.repl.write_rules;
        if write && self.sync.on() && !self.repl.is_replica() && !self.sync.enough() {
            let refused = &self.sync.stats.write_refusals;
            refused.set(refused.get() + 1);
            return Some(ReplyError::msg(
                "NOREPLICAS Not enough good replicas to write.",
            ));
        }
        if write && min > 0 && !self.repl.is_replica() && self.repl.good_replicas < min {
            return Some(ReplyError::msg(
                "NOREPLICAS Not enough good replicas to write.",
            ));
        }
        let master = self.repl.master.as_ref()?;
        if write && read_only {
            return Some(ReplyError::msg(
                "READONLY You can't write against a read only replica.",
            ));
        }
        if master.state != LinkState::Connected
            && !self.config.get_bool("replica-serve-stale-data")
            && (spec.flags & flags::STALE == 0 || all & flags::STALE == 0)
        {
            return Some(ReplyError::msg(
                "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
            ));
        }
        None
    }

    /// The `repl-backlog-size` in bytes (cached).
    pub fn repl_backlog_size(&self) -> u64 {
        self.repl.limits.0
    }

    /// The hard limit of the `replica` class of `client-output-buffer-limit` (0 none;
    /// cached).
    pub fn replica_hard_limit(&self) -> u64 {
        self.repl.limits.1
    }

    /// Re-reads the replication settings cached for the hot path.
    pub fn refresh_repl_limits(&mut self) {
        self.repl.limits = (
            self.config.get_i64("repl-backlog-size").max(16 * 1024) as u64,
            self.config.output_buffer_limit("slave").hard,
        );
        let min = self.config.get_i64("min-replicas-to-write").max(0) as u64;
        let lag = self.config.get_i64("min-replicas-max-lag");
        self.repl.write_rules = (
            if lag > 0 { min } else { 0 },
            self.config.get_bool("replica-read-only"),
        );
        self.refresh_sync_settings();
    }

    /// Moves the running command's effects into the backlog and wakes the senders.
    pub fn repl_flush(&mut self) {
        let (size, hard) = (self.repl_backlog_size(), self.replica_hard_limit());
        if self.repl.flush(size, hard) {
            self.repl.wake.notify_waiters();
        }
    }

    /// While clients use WAIT (one did in the last [`WAIT_RECENT_MS`]), asks the replicas
    /// for an ACK behind the writes at the stream's end. A replica sender calls this as
    /// it wakes with new bytes to send, so it happens once per batch of writes, not per
    /// command. The replicas then acknowledge each batch as it arrives, and the WAIT that
    /// follows a write usually finds its ACK there or on its way, instead of asking only
    /// then and waiting a whole round trip to the replicas (Redis asks when WAIT blocks,
    /// as this server does without recent WAITs). Only a primary asks: a replica's stream
    /// is its primary's, byte for byte.
    pub fn ask_acks_for_waiters(&mut self) {
        if !self.repl.feeding()
            || !self.repl.ends_with_write()
            || self.repl.wait_seen_ms.saturating_add(WAIT_RECENT_MS) < self.batch_now_ms
            || self.repl.replicas.is_empty()
        {
            return;
        }
        self.feed_getack();
    }

    /// Feeds `REPLCONF GETACK *` (the replicas answer with an ACK) and notes that one
    /// is in the stream since the last write (`getack_pending`).
    pub fn feed_getack(&mut self) {
        self.repl_control(&[b"REPLCONF", b"GETACK", b"*"]);
        self.repl.getack_pending = true;
    }

    /// Feeds a control record (PING, REPLCONF GETACK) and wakes the senders.
    pub fn repl_control(&mut self, argv: &[&[u8]]) {
        let (size, hard) = (self.repl_backlog_size(), self.replica_hard_limit());
        self.repl.feed_control(argv, size, hard);
        self.repl.wake.notify_waiters();
    }

    /// Answers WAIT / WAITAOF clients whose replicas caught up or whose time ran out
    /// (`now_ms`), after an ACK or from the cron.
    pub fn serve_waiters(&mut self, now_ms: u64) {
        if self.repl.waiters.is_empty() {
            return;
        }
        let waiters = std::mem::take(&mut self.repl.waiters);
        let mut kept = Vec::new();
        for w in waiters {
            let replicas = match w.aof_local {
                None => self.repl.acked(w.offset),
                Some(_) => self.repl.facked(w.offset),
            };
            let local = u64::from(self.repl.fsynced_offset >= w.offset && self.persist.recording());
            let done_replicas = replicas >= w.replicas;
            let done_local = w.aof_local.is_none_or(|n| local >= n);
            let timed_out = w.deadline_ms.is_some_and(|d| now_ms >= d);
            if !(timed_out || done_replicas && done_local) {
                kept.push(w);
                continue;
            }
            let Some(mut client) = self.clients.remove(&w.client_id) else {
                continue;
            };
            let mut out = crate::resp::writer::RespWriter::new(client.proto);
            match w.aof_local {
                None => out.integer(replicas as i64),
                Some(_) => {
                    out.array(2);
                    out.integer(local as i64);
                    out.integer(replicas as i64);
                }
            }
            client.blocked = None;
            client.send(
                super::client::ClientMsg::Unblocked(out.take()),
                self.limits.output,
            );
            let name = if w.aof_local.is_some() {
                "waitaof"
            } else {
                "wait"
            };
            let stat = self.stats.commands.entry(name);
            stat.calls += 1;
            self.stats.total_commands_processed += 1;
            client.cmds += 1;
            self.clients.insert(w.client_id, client);
        }
        self.repl.waiters.extend(kept);
    }

    /// Replication chores of the `hz` cron: PING every `repl-ping-replica-period`, WAIT
    /// timeouts and GETACKs, the good-replica count, the backlog's time to live.
    pub fn repl_cron(&mut self, now_ms: u64) {
        self.sync.tick(now_ms);
        if !self.repl.replicas.is_empty() && !self.repl.is_replica() {
            let period = self.config.get_i64("repl-ping-replica-period").max(1) as u64 * 1000;
            if now_ms.saturating_sub(self.repl.last_ping_ms) >= period {
                self.repl.last_ping_ms = now_ms;
                self.repl_control(&[b"ping"]);
            }
        }
        if !self.repl.waiters.is_empty()
            && !self.repl.getack_pending
            && !self.repl.replicas.is_empty()
        {
            self.feed_getack();
        }
        // A replica silent (no ACK) for repl-timeout is dropped, as Redis does.
        let timeout = self.config.get_i64("repl-timeout").max(1) as u64 * 1000;
        let mut dropped = false;
        for r in self.repl.replicas.values_mut() {
            if r.state == ReplicaState::Online
                && now_ms.saturating_sub(r.ack_ms) > timeout
                && r.drop.is_none()
            {
                tracing::warn!(replica = %format!("{}:{}", r.ip, r.port), "Disconnecting timedout replica (streaming sync)");
                r.drop = Some(DropReason::Timeout);
                dropped = true;
            }
        }
        if dropped {
            self.repl.wake.notify_waiters();
        }
        self.failover_cron(now_ms);
        self.serve_waiters(now_ms);
        let max_lag = self.config.get_i64("min-replicas-max-lag").max(0) as u64 * 1000;
        self.repl.good_replicas = self
            .repl
            .replicas
            .values()
            .filter(|r| {
                r.state == ReplicaState::Online && now_ms.saturating_sub(r.ack_ms) <= max_lag
            })
            .count() as u64;
        if self.repl.replicas.is_empty() {
            let ttl = self.config.get_i64("repl-backlog-ttl").max(0) as u64 * 1000;
            if ttl > 0
                && !self.repl.is_replica()
                && self.repl.backlog.is_some()
                && now_ms.saturating_sub(self.repl.no_replicas_since_ms) >= ttl
            {
                // Redis frees the backlog and changes the id, so a later replica cannot
                // continue a history whose bytes are gone.
                self.repl.new_history();
            }
        } else {
            self.repl.no_replicas_since_ms = now_ms;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(runid: char, port: u16, epoch: u64) -> Vec<u8> {
        let id: String = std::iter::repeat_n(runid, 40).collect();
        format!("127.0.0.1,26379,{id},{epoch},mymaster,127.0.0.1,{port},{epoch}").into_bytes()
    }

    #[test]
    fn a_hello_names_me_by_the_announced_address_else_the_address_reached() {
        let mut c = crate::core::Core::new(crate::config::Config::default(), 7000, &[]);
        assert!(c.hello_names_me(&hello('a', 7000, 1), "127.0.0.1:7000"));
        assert!(!c.hello_names_me(&hello('a', 7001, 1), "127.0.0.1:7000"));
        assert!(!c.hello_names_me(&hello('a', 7000, 1), "10.0.0.1:7000"));
        assert!(!c.hello_names_me(b"127.0.0.1,7000", "127.0.0.1:7000"));
        // Behind a proxy or NAT: the announced port and IP are what Sentinel knows.
        c.config.set_value("replica-announce-port", "9000".into());
        assert!(!c.hello_names_me(&hello('a', 7000, 1), "127.0.0.1:7000"));
        assert!(c.hello_names_me(&hello('a', 9000, 1), "127.0.0.1:7000"));
        c.config.set_value("replica-announce-ip", "10.0.0.9".into());
        assert!(!c.hello_names_me(&hello('a', 9000, 1), "127.0.0.1:7000"));
    }

    #[test]
    fn a_hello_candidate_needs_two_fresh_sentinels_agreeing_on_the_newest_epoch() {
        let mut r = Replication::default();
        let now = 1_000_000;
        r.note_sentinel_hello(&hello('a', 7000, 3), now);
        assert_eq!(r.hello_candidate(now), None, "one Sentinel");
        r.note_sentinel_hello(&hello('b', 7000, 3), now);
        assert_eq!(r.hello_candidate(now), Some(("127.0.0.1".into(), 7000, 3)));
        // A third Sentinel with a newer epoch alone: the newest epoch has one voice.
        r.note_sentinel_hello(&hello('c', 7001, 4), now);
        assert_eq!(r.hello_candidate(now), None);
        r.note_sentinel_hello(&hello('a', 7001, 4), now);
        assert_eq!(r.hello_candidate(now), Some(("127.0.0.1".into(), 7001, 4)));
        // Stale hellos do not count.
        assert_eq!(r.hello_candidate(now + HELLO_FRESH_MS + 1), None);
        // An epoch that named this server itself is not overridden by an equal one.
        r.self_epoch = 4;
        assert_eq!(r.hello_candidate(now), None);
        r.self_epoch = 0;
        // Not on a replica, not with replicas, not right after a promotion.
        r.promoted_ms = now - 1;
        assert_eq!(r.hello_candidate(now), None);
        r.promoted_ms = now - PROMOTION_SETTLE_MS;
        assert!(r.hello_candidate(now).is_some());
        // Malformed payloads are ignored.
        r.note_sentinel_hello(b"garbage", now);
        r.note_sentinel_hello(b"a,b,c,d,e,f,notaport,1", now);
        assert_eq!(r.sentinel_hellos.len(), 3);
    }

    #[test]
    fn a_fresh_promotion_refuses_its_old_primary_until_a_newer_epoch_names_it() {
        let now = 1_000_000;
        let mut r = Replication::default();
        // Never promoted, or promoted from no primary: nothing is refused.
        assert!(!r.refuses_old_primary("127.0.0.1", 7000, now));
        r.note_sentinel_hello(&hello('a', 7000, 3), now - 100);
        r.promoted_ms = now - 50;
        r.left_primary = Some(LeftPrimary {
            host: "127.0.0.1".into(),
            port: 7000,
            epoch: 3,
        });
        assert!(r.refuses_old_primary("127.0.0.1", 7000, now));
        // Another address, or the settle time over: obeyed.
        assert!(!r.refuses_old_primary("127.0.0.1", 7001, now));
        assert!(!r.refuses_old_primary("127.0.0.2", 7000, now));
        assert!(!r.refuses_old_primary("127.0.0.1", 7000, now - 50 + PROMOTION_SETTLE_MS));
        // A hello naming it under the epoch known at the promotion changes nothing; a
        // newer epoch naming it (a failover back to it) makes it obeyed.
        r.note_sentinel_hello(&hello('b', 7000, 3), now);
        assert!(r.refuses_old_primary("127.0.0.1", 7000, now));
        r.note_sentinel_hello(&hello('b', 7001, 4), now);
        assert!(r.refuses_old_primary("127.0.0.1", 7000, now));
        r.note_sentinel_hello(&hello('c', 7000, 5), now);
        assert!(!r.refuses_old_primary("127.0.0.1", 7000, now));
    }
}
