//! The node's cluster state while `cluster-enabled yes` (Redis's `clusterState` of one
//! node): my id, the epochs, the nodes table, which node owns each slot and the open
//! (migrating/importing) slots.
//!
//! It is loaded from `cluster-config-file` at start ([`ClusterState::load`], the file is
//! created when missing and a corrupt one stops start-up, as cluster.c `clusterInit` /
//! `clusterLoadConfig`), and saved with [`nodes_conf::write_atomically`] after every change
//! ([`ClusterState::save`], Redis's `clusterSaveConfigOrDie`). Without the cluster bus the
//! table holds the nodes the file named and no node is ever marked failing.

use super::command::{self, CommandSpec, flags};
use crate::cluster::nodes_conf::{
    self, LinkState, NodeFlags, NodeInfo, NodeLine, NodesConf, OpenSlot, SlotMigration,
};
use crate::cluster::owners::SlotOwners;
use crate::cluster::slots::{CLUSTER_SLOTS, SlotBitmap, key_hash_slot};
use crate::resp::Argv;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One node of the table (the `myself` node included): what nodes.conf saves of it
/// ([`NodeInfo`], shared with the file's [`NodeLine`]) and what the bus learns while
/// running. It derefs to its [`NodeInfo`], so the table reads `node.id`, `node.flags`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Id, address, flags, primary, config epoch.
    pub info: NodeInfo,
    /// What the bus learns while running (never saved, zero after a load).
    pub rt: NodeRuntime,
}

impl Node {
    /// A node that entered the table at `ctime` (ms), knowing only `info`.
    pub fn new(info: NodeInfo, ctime: u64) -> Node {
        Node {
            info,
            rt: NodeRuntime {
                ctime,
                ..NodeRuntime::default()
            },
        }
    }
}

impl std::ops::Deref for Node {
    type Target = NodeInfo;

    fn deref(&self) -> &NodeInfo {
        &self.info
    }
}

impl std::ops::DerefMut for Node {
    fn deref_mut(&mut self) -> &mut NodeInfo {
        &mut self.info
    }
}

/// The run-time part of a node (cluster.h `clusterNode` fields that are not saved): the
/// timers of failure detection, the replication offset it announced, its failure reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeRuntime {
    /// When the node entered the table (ms), for the handshake timeout.
    pub ctime: u64,
    /// When the pending PING was sent (ms), 0 when none is pending.
    pub ping_sent: u64,
    /// When the last PONG came (ms).
    pub pong_received: u64,
    /// When anything last came from it (ms).
    pub data_received: u64,
    /// When it was flagged FAIL (ms).
    pub fail_time: u64,
    /// When we last voted for a replica of this primary (ms).
    pub voted_time: u64,
    /// The replication offset of its last header.
    pub repl_offset: u64,
    /// An outbound link to it is connected.
    pub link: bool,
    /// When the current outbound link was made (ms).
    pub link_ctime: u64,
    /// The inbound connection it last used to reach us (its id among the inbound
    /// connections) and when we first heard from it there; `None` once it closed.
    pub inbound: Option<(u64, u64)>,
    /// Primaries that reported it PFAIL or FAIL, with the time of their last report.
    pub fail_reports: Vec<(String, u64)>,
    /// When this primary was first seen orphaned (no working replica, MIGRATE_TO set;
    /// 0 = not orphaned): replicas migrate only to a primary orphaned for a while.
    pub orphaned_time: u64,
}

/// A replica's election in progress (cluster.h `failover_auth_*`).
#[derive(Debug, Clone, Default)]
pub struct Election {
    /// When the vote request goes out (ms), 0 before the first attempt.
    pub auth_time: u64,
    /// Votes received.
    pub auth_count: usize,
    /// The request was sent.
    pub auth_sent: bool,
    /// This replica's rank among its primary's replicas (0 = best offset).
    pub auth_rank: u64,
    /// The epoch of the request.
    pub auth_epoch: u64,
    /// When (ms) this replica last logged that it does not stand because it is outside
    /// its primary's sync set (logged every few seconds while it holds).
    pub sync_fence_logged: u64,
}

/// The port the cluster bus listens on: `cluster-port`, else the client port + 10000
/// (Redis's `CLUSTER_PORT_INCR`). What the node *announces* may differ
/// (`cluster-announce-bus-port`).
pub fn bus_port(config: &crate::config::Config, port: u16) -> u16 {
    config
        .get_port("cluster-port")
        .unwrap_or_else(|| port.wrapping_add(10000))
}

/// The client port this node announces: `cluster-announce-port`, else the real one.
pub fn announced_port(config: &crate::config::Config, port: u16) -> u16 {
    config.get_port("cluster-announce-port").unwrap_or(port)
}

/// The bus port this node announces: `cluster-announce-bus-port`, else the one it
/// listens on ([`bus_port`]).
pub fn announced_bus_port(config: &crate::config::Config, port: u16) -> u16 {
    config
        .get_port("cluster-announce-bus-port")
        .unwrap_or_else(|| bus_port(config, port))
}

/// A manual failover in progress (cluster.h `mf_*`), on the replica or on its primary.
#[derive(Debug, Clone, Default)]
pub struct ManualFailover {
    /// Deadline (ms); 0 = none in progress.
    pub end: u64,
    /// The replica may start its election.
    pub can_start: bool,
    /// The primary's offset when it paused, as its PAUSED PING said.
    pub master_offset: Option<u64>,
    /// On the primary: the replica asking.
    pub replica: Option<String>,
}

/// What a command asks of the bus task (which owns the sockets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BusRequest {
    /// Start a handshake with this address (CLUSTER MEET).
    Meet {
        /// IP.
        ip: String,
        /// Client port.
        port: u16,
        /// Bus port.
        cport: u16,
    },
    /// Send MFSTART to my primary (CLUSTER FAILOVER without FORCE/TAKEOVER).
    MfStart,
    /// Broadcast a PONG now (my configuration changed).
    BroadcastPong,
    /// Take my primary's slots without an election (CLUSTER FAILOVER TAKEOVER).
    Takeover,
    /// Send PUBLISH (`shard` false, to every node) or PUBLISHSHARD (to my shard).
    Publish {
        /// Shard channel (SPUBLISH).
        shard: bool,
        /// Channel.
        channel: bytes::Bytes,
        /// Message.
        message: bytes::Bytes,
    },
}

/// The saved part of a [`ClusterState`] ([`ClusterState::config_key`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigKey {
    nodes: Vec<NodeInfo>,
    /// The slot table's change count ([`SlotOwners::generation`]): the bus takes a key
    /// before and after every message it handles, and copying and comparing the table
    /// itself (32 KB) was most of that.
    owner_generation: u64,
    migrating: BTreeMap<u16, String>,
    importing: BTreeMap<u16, String>,
    epochs: (u64, u64),
}

/// Names of the bus message types in CLUSTER INFO, by type code (cluster.c
/// `clusterGetMessageTypeString`).
pub const MESSAGE_TYPE_NAMES: [&str; 11] = [
    "ping",
    "pong",
    "meet",
    "fail",
    "publish",
    "auth-req",
    "auth-ack",
    "update",
    "mfstart",
    "module",
    "publishshard",
];

/// How long a forgotten node may not come back through gossip (CLUSTER_BLACKLIST_TTL).
pub const BLACKLIST_TTL_MS: u64 = 60_000;
/// How long a manual failover may take (CLUSTER_MF_TIMEOUT).
pub const MF_TIMEOUT_MS: u64 = 5_000;

/// The state of this cluster node.
#[derive(Debug, Clone)]
pub struct ClusterState {
    /// Where the state is saved.
    pub path: PathBuf,
    /// The epochs ([`ClusterState::epochs`]) of the last fsynced save.
    durable_epochs: std::cell::Cell<(u64, u64, u64)>,
    /// The table; index 0 is always myself.
    pub nodes: Vec<Node>,
    /// Slot → index in `nodes` of its owner.
    pub owner: SlotOwners,
    /// Slots this node migrates, with the target id (`migrating_slots_to`).
    pub migrating: BTreeMap<u16, String>,
    /// Slots this node imports, with the source id (`importing_slots_from`).
    pub importing: BTreeMap<u16, String>,
    /// `currentEpoch`.
    pub current_epoch: u64,
    /// `lastVoteEpoch`.
    pub last_vote_epoch: u64,
    /// My shard id (Redis 7.2's; not in a 7.0 nodes.conf, so new at every start).
    pub shard_id: String,
    /// Bus messages sent (`[0]`) and received (`[1]`) by type code.
    pub stats: [[u64; 11]; 2],
    /// `cluster_state:ok`, as last computed by [`ClusterState::refresh_state`].
    pub state_ok: bool,
    /// Primaries serving at least one slot, as last computed.
    pub size_cached: usize,
    /// The election of this replica.
    pub election: Election,
    /// The manual failover in progress.
    pub manual: ManualFailover,
    /// What commands asked of the bus since it last looked.
    pub requests: Vec<BusRequest>,
    /// Wakes the bus task when a request is queued.
    pub wake: std::rc::Rc<tokio::sync::Notify>,
    /// Forgotten nodes and until when gossip may not re-add them (ms).
    pub blacklist: BTreeMap<String, u64>,
    /// CLUSTER SLOT-STATS's per-slot CPU and network counters.
    pub slot_stats: crate::cluster::slot_stats::SlotStats,
}

/// Why the cluster state could not be loaded or saved.
#[derive(Debug)]
pub enum ClusterStateError {
    /// The file could not be read or written.
    Io(PathBuf, std::io::Error),
    /// The file is not a valid nodes.conf.
    Corrupt(PathBuf, nodes_conf::NodesConfError),
}

impl std::fmt::Display for ClusterStateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io(p, e) => write!(f, "cluster config file {}: {e}", p.display()),
            Self::Corrupt(p, e) => write!(
                f,
                "Unrecoverable error: corrupted cluster config file {}: {e}",
                p.display()
            ),
        }
    }
}

impl std::error::Error for ClusterStateError {}

/// A new random node id: 40 lowercase hex characters (cluster.c `getRandomHexChars`).
pub fn random_node_id() -> String {
    super::replication::random_replid()
}

impl ClusterState {
    /// A fresh node (no file yet): a new id, no slots, epochs 0 (`createClusterNode`).
    pub fn fresh(path: PathBuf, port: u16, cport: u16) -> Self {
        let me = Node::new(
            NodeInfo::new(
                random_node_id(),
                String::new(),
                port,
                cport,
                NodeFlags::MYSELF | NodeFlags::MASTER,
            ),
            0,
        );
        ClusterState {
            path,
            nodes: vec![me],
            owner: SlotOwners::new(),
            migrating: BTreeMap::new(),
            importing: BTreeMap::new(),
            current_epoch: 0,
            last_vote_epoch: 0,
            shard_id: random_node_id(),
            stats: [[0; 11]; 2],
            state_ok: false,
            size_cached: 0,
            election: Election::default(),
            manual: ManualFailover::default(),
            requests: Vec::new(),
            wake: std::rc::Rc::new(tokio::sync::Notify::new()),
            blacklist: BTreeMap::new(),
            slot_stats: Default::default(),
            durable_epochs: std::cell::Cell::new((0, 0, 0)),
        }
    }

    /// Loads `path`, or creates it for a fresh node when it does not exist. The ports of
    /// myself are the configured ones (Redis updates them at start too).
    pub fn load(path: &Path, port: u16, cport: u16) -> Result<Self, ClusterStateError> {
        let bytes = match std::fs::read(path) {
            Ok(b) if b.iter().all(|c| c.is_ascii_whitespace()) => None,
            Ok(b) => Some(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(ClusterStateError::Io(path.to_path_buf(), e)),
        };
        let Some(bytes) = bytes else {
            let state = Self::fresh(path.to_path_buf(), port, cport);
            state.save()?;
            return Ok(state);
        };
        let conf = NodesConf::parse(&bytes)
            .map_err(|e| ClusterStateError::Corrupt(path.to_path_buf(), e))?;
        let mut state = Self::fresh(path.to_path_buf(), port, cport);
        state.nodes.clear();
        state.current_epoch = conf.current_epoch;
        state.last_vote_epoch = conf.last_vote_epoch;
        let mut lines: Vec<&NodeLine> = conf.nodes.iter().collect();
        // Myself first.
        lines.sort_by_key(|n| !n.node.flags.contains(NodeFlags::MYSELF));
        for line in lines {
            let index = state.nodes.len();
            let mut node = Node::new(line.node.clone(), super::unix_ms());
            if index == 0 {
                node.port = port;
                node.cport = cport;
            }
            state.nodes.push(node);
            for &(start, end) in &line.slots {
                for slot in start..=end {
                    state.owner.set(usize::from(slot), Some(index));
                }
            }
            if index == 0 {
                for open in &line.open_slots {
                    let map = match open.direction {
                        SlotMigration::Migrating => &mut state.migrating,
                        SlotMigration::Importing => &mut state.importing,
                    };
                    map.insert(open.slot, open.node.clone());
                }
            }
        }
        // A primary with a replica in the file may receive migrating replicas
        // (`clusterLoadConfig` → `clusterNodeAddSlave` sets MIGRATE_TO).
        let primaries: Vec<String> = state
            .nodes
            .iter()
            .filter_map(|n| n.master.clone())
            .collect();
        for id in primaries {
            if let Some(m) = state.lookup(&id)
                && m != 0
            {
                state.nodes[m].flags.0 |= NodeFlags::MIGRATE_TO;
            }
        }
        // What the file holds is on disk already.
        state.durable_epochs.set(state.epochs());
        Ok(state)
    }

    /// Writes the state to its file atomically and durably (fsynced).
    pub fn save(&self) -> Result<(), ClusterStateError> {
        nodes_conf::write_atomically(&self.path, self.to_conf().write().as_bytes())
            .map_err(|e| ClusterStateError::Io(self.path.clone(), e))?;
        self.durable_epochs.set(self.epochs());
        Ok(())
    }

    /// Writes the state after a change: fsynced when an epoch changed since the last
    /// durable save (a vote, a new config epoch: what must survive a power loss for
    /// elections to stay safe), otherwise only replaced atomically, as Redis 7.0 saves
    /// slot changes without `CLUSTER_TODO_FSYNC_CONFIG`. `redis-cli --cluster reshard`
    /// sends a SETSLOT per node per slot; two fsyncs each were most of its time.
    pub fn save_change(&self) -> Result<(), ClusterStateError> {
        if self.epochs() != self.durable_epochs.get() {
            return self.save();
        }
        nodes_conf::write_replacing(&self.path, self.to_conf().write().as_bytes(), false)
            .map_err(|e| ClusterStateError::Io(self.path.clone(), e))
    }

    /// Current epoch, last vote epoch, my config epoch.
    fn epochs(&self) -> (u64, u64, u64) {
        (
            self.current_epoch,
            self.last_vote_epoch,
            self.nodes.first().map_or(0, |n| n.config_epoch),
        )
    }

    /// My node.
    pub fn myself(&self) -> &Node {
        &self.nodes[0]
    }

    /// My id.
    pub fn my_id(&self) -> &str {
        &self.nodes[0].id
    }

    /// The index of node `id` in the table.
    pub fn lookup(&self, id: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.id == id)
    }

    /// The slots node `index` owns (every bus message carries its sender's slots and
    /// every message received is compared with them: the table remembers the bitmap
    /// until it changes, [`SlotOwners::bitmap_of`]).
    pub fn slots_of(&self, index: usize) -> SlotBitmap {
        self.owner.bitmap_of(index)
    }

    /// The assigned slots as maximal runs of one owner, ascending: `(first, last,
    /// owner)`, in one pass over the slot table (CLUSTER SLOTS replies with them).
    pub fn slot_runs(&self) -> Vec<(u16, u16, usize)> {
        self.owner.runs()
    }

    /// Every node's slots as ascending ranges `(first, last)`, indexed like `nodes`,
    /// from [`ClusterState::slot_runs`] (a `slots_of` per node walks the table once per
    /// node: every nodes.conf save, which `redis-cli --cluster reshard` asks for five
    /// times a slot, and every CLUSTER NODES/SHARDS reply).
    pub fn slot_ranges_by_node(&self) -> Vec<Vec<(u16, u16)>> {
        let mut ranges: Vec<Vec<(u16, u16)>> = vec![Vec::new(); self.nodes.len()];
        for (first, last, owner) in self.slot_runs() {
            ranges[owner].push((first, last));
        }
        ranges
    }

    /// Number of assigned slots.
    pub fn slots_assigned(&self) -> usize {
        self.owner.assigned_count()
    }

    /// Primaries serving at least one slot (`cluster_size`), as last computed.
    pub fn size(&self) -> usize {
        self.size_cached
    }

    /// `cluster_state` ok (true) or fail, as last computed by [`Self::refresh_state`].
    pub fn is_ok(&self) -> bool {
        self.state_ok
    }

    /// Recomputes `cluster_state` and the size (cluster.c `clusterUpdateState`): fail
    /// when `require_full_coverage` and a slot is unassigned or served by a FAIL node, or
    /// when fewer than a majority of the slot-serving primaries are reachable (neither
    /// PFAIL nor FAIL). A cluster of size 0 has no majority.
    pub fn refresh_state(&mut self, require_full_coverage: bool) {
        let (serving, unassigned) = self.owner.serving(self.nodes.len());
        let mut ok = !(require_full_coverage && unassigned);
        let mut size = 0;
        let mut reachable = 0;
        for (i, node) in self.nodes.iter().enumerate() {
            if serving[i] && require_full_coverage && node.flags.contains(NodeFlags::FAIL) {
                ok = false;
            }
            if serving[i] && node.flags.contains(NodeFlags::MASTER) {
                size += 1;
                if !node.flags.contains(NodeFlags::FAIL) && !node.flags.contains(NodeFlags::PFAIL) {
                    reachable += 1;
                }
            }
        }
        self.size_cached = size;
        if size == 0 || reachable < size / 2 + 1 {
            ok = false;
        }
        self.state_ok = ok;
    }

    /// What is saved in nodes.conf, as a value to compare: a change means a save
    /// (the run-time fields and PFAIL are not saved).
    pub fn config_key(&self) -> ConfigKey {
        ConfigKey {
            nodes: self
                .nodes
                .iter()
                // PFAIL is not saved; a new hostname alone does not save either (as in
                // Redis 7.0, where an announced hostname is kept in memory only).
                .map(|n| NodeInfo {
                    hostname: None,
                    flags: NodeFlags(n.flags.0 & !NodeFlags::PFAIL),
                    ..n.info.clone()
                })
                .collect(),
            owner_generation: self.owner.generation(),
            migrating: self.migrating.clone(),
            importing: self.importing.clone(),
            epochs: (self.current_epoch, self.last_vote_epoch),
        }
    }

    /// Number of slots node `index` serves.
    pub fn num_slots(&self, index: usize) -> usize {
        self.owner.count_of(index)
    }

    /// Whether node `index` is a primary.
    pub fn is_master(&self, index: usize) -> bool {
        self.nodes[index].flags.contains(NodeFlags::MASTER)
    }

    /// Indices of the replicas of node `index` (nodes naming it as their primary).
    pub fn replicas_of(&self, index: usize) -> Vec<usize> {
        let id = &self.nodes[index].id;
        (0..self.nodes.len())
            .filter(|&i| {
                self.nodes[i].master.as_deref() == Some(id.as_str())
                    && self.nodes[i].flags.contains(NodeFlags::SLAVE)
            })
            .collect()
    }

    /// The index of my primary, when I am a replica of a known node.
    pub fn my_master(&self) -> Option<usize> {
        self.nodes[0].master.as_deref().and_then(|m| self.lookup(m))
    }

    /// Removes node `i` from the table (cluster.c `clusterDelNode`): its slots become
    /// unassigned, its failure reports go, the owners are renumbered.
    pub fn del_node(&mut self, i: usize) {
        if i == 0 || i >= self.nodes.len() {
            return;
        }
        let id = self.nodes.remove(i).info.id;
        self.owner.remove_node(i);
        self.migrating.retain(|_, to| *to != id);
        self.importing.retain(|_, from| *from != id);
        for n in self.nodes.iter_mut() {
            n.rt.fail_reports.retain(|(by, _)| *by != id);
        }
    }

    /// Records that primary `by` reports node `i` failing (`clusterNodeAddFailureReport`).
    pub fn add_failure_report(&mut self, i: usize, by: &str, now: u64) {
        let reports = &mut self.nodes[i].rt.fail_reports;
        match reports.iter_mut().find(|(b, _)| b == by) {
            Some(r) => r.1 = now,
            None => reports.push((by.to_string(), now)),
        }
    }

    /// Forgets `by`'s report about node `i` (`clusterNodeDelFailureReport`).
    pub fn del_failure_report(&mut self, i: usize, by: &str) {
        self.nodes[i].rt.fail_reports.retain(|(b, _)| b != by);
    }

    /// Failure reports about node `i` younger than `max_age` ms, the older ones dropped
    /// (`clusterNodeFailureReportsCount`).
    pub fn failure_reports(&mut self, i: usize, now: u64, max_age: u64) -> usize {
        let reports = &mut self.nodes[i].rt.fail_reports;
        reports.retain(|(_, t)| now.saturating_sub(*t) <= max_age);
        reports.len()
    }

    /// The state as nodes.conf lines.
    pub fn to_conf(&self) -> NodesConf {
        let mut ranges = self.slot_ranges_by_node();
        let nodes = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| NodeLine {
                node: NodeInfo {
                    // A replica prints its primary's epoch (clusterGenNodeDescription).
                    config_epoch: match n.master.as_deref().and_then(|m| self.lookup(m)) {
                        Some(m) if n.flags.contains(NodeFlags::SLAVE) => self.nodes[m].config_epoch,
                        _ => n.config_epoch,
                    },
                    ..n.info.clone()
                },
                ping_sent: n.rt.ping_sent as i64,
                pong_recv: n.rt.pong_received as i64,
                link_state: if i == 0 || n.rt.link {
                    LinkState::Connected
                } else {
                    LinkState::Disconnected
                },
                slots: std::mem::take(&mut ranges[i]),
                open_slots: if i == 0 {
                    self.open_slots()
                } else {
                    Vec::new()
                },
            })
            .collect();
        NodesConf {
            nodes,
            current_epoch: self.current_epoch,
            last_vote_epoch: self.last_vote_epoch,
        }
    }

    /// The open slots, ascending, migrating before importing for one slot (a slot both
    /// migrating and importing prints only migrating, as `clusterGenNodeDescription`).
    pub fn open_slots(&self) -> Vec<OpenSlot> {
        let mut open: BTreeMap<u16, OpenSlot> = BTreeMap::new();
        for (&slot, node) in &self.importing {
            open.insert(
                slot,
                OpenSlot {
                    slot,
                    direction: SlotMigration::Importing,
                    node: node.clone(),
                },
            );
        }
        for (&slot, node) in &self.migrating {
            open.insert(
                slot,
                OpenSlot {
                    slot,
                    direction: SlotMigration::Migrating,
                    node: node.clone(),
                },
            );
        }
        open.into_values().collect()
    }

    /// The greatest config epoch of the table (`clusterGetMaxEpoch`, with the current
    /// epoch).
    pub fn max_epoch(&self) -> u64 {
        self.nodes
            .iter()
            .map(|n| n.config_epoch)
            .max()
            .unwrap_or(0)
            .max(self.current_epoch)
    }
}

/// Why a command is not served here (cluster.c `getNodeByQuery`'s error codes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redirect {
    /// `-MOVED <slot> <endpoint>:<port>`.
    Moved(u16, String),
    /// `-ASK <slot> <endpoint>:<port>`.
    Ask(u16, String),
    /// Keys in several slots.
    CrossSlot,
    /// Several keys, some missing, in an importing slot.
    TryAgain,
    /// The cluster is down.
    Down,
    /// The cluster is down and this command writes.
    DownReadOnly,
    /// The slot has no owner.
    Unbound,
}

impl Redirect {
    /// The error reply (cluster.c `clusterRedirectClient`).
    pub fn reply(&self) -> String {
        match self {
            Redirect::Moved(slot, to) => format!("MOVED {slot} {to}"),
            Redirect::Ask(slot, to) => format!("ASK {slot} {to}"),
            Redirect::CrossSlot => "CROSSSLOT Keys in request don't hash to the same slot".into(),
            Redirect::TryAgain => "TRYAGAIN Multiple keys request during rehashing of slot".into(),
            Redirect::Down => "CLUSTERDOWN The cluster is down".into(),
            Redirect::DownReadOnly => {
                "CLUSTERDOWN The cluster is down and only accepts read commands".into()
            }
            Redirect::Unbound => "CLUSTERDOWN Hash slot not served".into(),
        }
    }
}

impl super::Core {
    /// Saves the cluster state after a change (Redis's `clusterSaveConfigOrDie`, which
    /// exits on failure; we log and keep serving, the next change retries).
    pub fn cluster_changed(&mut self) {
        let full = self.config.get_bool("cluster-require-full-coverage");
        if let Some(st) = self.cluster.as_deref_mut() {
            st.refresh_state(full);
            if let Err(e) = st.save_change() {
                tracing::error!(error = %e, "could not save the cluster configuration");
            }
        }
    }

    /// Keys of database 0 in `slot`. The first call turns on the keyspace's index of
    /// keys by slot (built in one pass), which every later write keeps up to date.
    pub fn count_keys_in_slot(&mut self, slot: u16) -> usize {
        let keys = &mut self.dbs[0].keys;
        keys.enable_groups(key_hash_slot, CLUSTER_SLOTS);
        keys.group_len(slot)
    }

    /// The one hash slot the keys of `argv` live in (for EXEC, the keys of its queued
    /// commands; for sharded Pub/Sub, the channels), as Redis's `c->slot`: `None` for a
    /// command without keys, or with keys in more than one slot.
    pub fn command_slot(
        &self,
        client: &super::client::Client,
        spec: &'static CommandSpec,
        argv: &Argv,
    ) -> Option<u16> {
        let mut slot: Option<u16> = None;
        let mut visit = |s: &CommandSpec, a: &Argv| -> bool {
            let positions: Vec<usize> = if is_pubsub_shard(s) {
                (1..if s.name == "spublish" { 2 } else { a.len() }).collect()
            } else {
                s.key_positions(a)
            };
            for pos in positions {
                let Some(key) = a.get(pos) else { continue };
                let this = key_hash_slot(key);
                match slot {
                    None => slot = Some(this),
                    Some(prev) if prev != this => return false,
                    Some(_) => {}
                }
            }
            true
        };
        if spec.name == "exec" {
            for a in client.multi.as_deref().unwrap_or_default() {
                let Some(s) = a
                    .first()
                    .and_then(|n| command::lookup(n))
                    .and_then(|s| command::resolve_subcommand(s, a).ok())
                else {
                    continue;
                };
                if !visit(s, a) {
                    return None;
                }
            }
        } else if !visit(spec, argv) {
            return None;
        }
        slot
    }

    /// Adds a finished command to CLUSTER SLOT-STATS's counters of `slot`: its time,
    /// its request bytes (EXEC also its MULTI's 15, `*1\r\n$5\r\nmulti\r\n`, as Redis
    /// adds them) and `bytes_out` of reply.
    pub fn count_slot_stats(
        &mut self,
        client: &super::client::Client,
        spec: &'static CommandSpec,
        slot: u16,
        usec: u64,
        bytes_out: u64,
    ) {
        let Some(st) = self.cluster.as_deref_mut() else {
            return;
        };
        let Some(row) = st.slot_stats.row_mut(slot) else {
            return;
        };
        let multi = if spec.name == "exec" { 15 } else { 0 };
        row.cpu_usec += usec;
        row.net_in += client.cmd_input_bytes + multi;
        row.net_out += bytes_out;
    }

    /// Up to `max` key names of database 0 in `slot` (from the same index as
    /// [`Core::count_keys_in_slot`]).
    pub fn keys_in_slot(&mut self, slot: u16, max: usize) -> Vec<bytes::Bytes> {
        let keys = &mut self.dbs[0].keys;
        keys.enable_groups(key_hash_slot, CLUSTER_SLOTS);
        keys.group_keys(slot, max)
            .into_iter()
            .map(bytes::Bytes::copy_from_slice)
            .collect()
    }

    /// `<endpoint>:<port>` of node `index` as redirections name it.
    fn node_address(&self, st: &ClusterState, index: usize) -> String {
        let node = &st.nodes[index];
        let host = match self.config.get("cluster-preferred-endpoint-type") {
            Some("hostname") => node.hostname.clone().unwrap_or_else(|| "?".into()),
            Some("unknown-endpoint") => "?".into(),
            _ => node.ip.clone(),
        };
        format!("{host}:{}", node.port)
    }

    /// Where the command `argv` (and, for EXEC, every queued command) must run (cluster.c
    /// `getNodeByQuery`): `None` = here.
    pub fn cluster_route(
        &self,
        client: &super::client::Client,
        spec: &'static CommandSpec,
        argv: &Argv,
    ) -> Option<Redirect> {
        let st = self.cluster.as_deref()?;
        let mut commands: Vec<(&'static CommandSpec, &Argv)> = Vec::new();
        let queued;
        if spec.name == "exec" {
            queued = client.multi.clone().unwrap_or_default();
            for a in &queued {
                if let Some(s) = a
                    .first()
                    .and_then(|n| command::lookup(n))
                    .and_then(|s| command::resolve_subcommand(s, a).ok())
                {
                    commands.push((s, a));
                }
            }
        } else {
            commands.push((spec, argv));
        }
        let mut slot: Option<u16> = None;
        let mut first_key: Option<&[u8]> = None;
        let mut multiple_keys = false;
        let mut missing = 0usize;
        let mut migrating = false;
        let mut importing = false;
        let mut owner: Option<usize> = None;
        let mut any_write = false;
        let db = client.db;
        let mut pubsub_shard = false;
        for (s, a) in &commands {
            // Sharded Pub/Sub routes by its channels' slots as if they were keys
            // (Redis 7.0 gives the three commands NOT_KEY key specs), but never looks
            // them up in the keyspace.
            let shard = is_pubsub_shard(s);
            pubsub_shard |= shard;
            let positions = if shard {
                (1..if s.name == "spublish" { 2 } else { a.len() }).collect()
            } else {
                s.key_positions(a)
            };
            if !positions.is_empty() && s.flags & flags::WRITE != 0 {
                any_write = true;
            }
            for pos in positions {
                let Some(key) = a.get(pos) else { continue };
                let this = key_hash_slot(key);
                match slot {
                    None => {
                        slot = Some(this);
                        first_key = Some(key);
                        owner = st.owner.get(usize::from(this));
                        let Some(o) = owner else {
                            return Some(Redirect::Unbound);
                        };
                        migrating = o == 0 && st.migrating.contains_key(&this);
                        importing = st.importing.contains_key(&this);
                    }
                    Some(prev) if prev != this => return Some(Redirect::CrossSlot),
                    Some(_) => {
                        if first_key != Some(key.as_ref()) {
                            multiple_keys = true;
                        }
                    }
                }
                if (migrating || importing) && !shard && !self.dbs[db].keys.contains_key(key) {
                    missing += 1;
                }
            }
        }
        let (slot, owner) = (slot?, owner?);
        if !st.is_ok() {
            if pubsub_shard {
                if !self.config.get_bool("cluster-allow-pubsubshard-when-down") {
                    return Some(Redirect::Down);
                }
            } else if !self.config.get_bool("cluster-allow-reads-when-down") {
                return Some(Redirect::Down);
            } else if any_write {
                return Some(Redirect::DownReadOnly);
            }
        }
        if (migrating || importing) && spec.name == "migrate" {
            return None;
        }
        if migrating && missing > 0 {
            let to = st.migrating.get(&slot)?;
            let index = st.lookup(to)?;
            return Some(Redirect::Ask(slot, self.node_address(st, index)));
        }
        if importing && (client.asking || spec.name == "restore-asking") {
            if multiple_keys && missing > 0 {
                return Some(Redirect::TryAgain);
            }
            return None;
        }
        // A READONLY client of a replica reads its primary's slots here
        // (getNodeByQuery: `c->flags & CLIENT_READONLY`, no write, myself a replica of n).
        if owner != 0
            && !((client.cluster_readonly || pubsub_shard)
                && !any_write
                && st.nodes[0].flags.contains(NodeFlags::SLAVE)
                && st.nodes[0].master.as_deref() == Some(st.nodes[owner].id.as_str()))
        {
            return Some(Redirect::Moved(slot, self.node_address(st, owner)));
        }
        None
    }

    /// Answers blocked clients whose keys' slot is no longer served here with the
    /// redirection (cluster.c `clusterRedirectBlockedClientIfNeeded`), after a change of
    /// slot ownership.
    pub fn redirect_blocked_clients(&mut self) {
        if self.blocked.is_empty() {
            return;
        }
        let Some(st) = self.cluster.as_deref() else {
            return;
        };
        let down = !st.is_ok() && !self.config.get_bool("cluster-allow-reads-when-down");
        let mut answers: Vec<(u64, String)> = Vec::new();
        for (id, c) in &self.clients {
            let Some(state) = &c.blocked else { continue };
            let Some(key) = state.keys.first() else {
                continue;
            };
            let slot = key_hash_slot(key);
            let s = usize::from(slot);
            let reply = if down {
                Some(Redirect::Down)
            } else {
                match st.owner.get(s) {
                    None => Some(Redirect::Unbound),
                    Some(0) => None,
                    Some(o) if st.importing.contains_key(&slot) && c.asking => {
                        let _ = o;
                        None
                    }
                    Some(o) => Some(Redirect::Moved(slot, self.node_address(st, o))),
                }
            };
            if let Some(r) = reply {
                answers.push((*id, r.reply()));
            }
        }
        for (id, text) in answers {
            if let Some(mut client) = self.clients.remove(&id) {
                let reply = format!("-{text}\r\n").into_bytes();
                self.end_block_with(&mut client, reply);
                self.clients.insert(id, client);
            }
        }
    }
}

/// SSUBSCRIBE, SUNSUBSCRIBE and SPUBLISH: routed by their channels' hash slots
/// (cluster.c `getNodeByQuery`'s `is_pubsubshard`).
pub fn is_pubsub_shard(spec: &CommandSpec) -> bool {
    matches!(spec.name, "ssubscribe" | "sunsubscribe" | "spublish")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_state_saves_and_loads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nodes.conf");
        let mut s = ClusterState::load(&path, 7000, 17000).unwrap();
        assert!(crate::cluster::nodes_conf::is_valid_node_id(s.my_id()));
        s.owner.set(5, Some(0));
        s.migrating.insert(5, "a".repeat(40));
        s.current_epoch = 3;
        s.save().unwrap();
        let back = ClusterState::load(&path, 7000, 17000).unwrap();
        assert_eq!(back.my_id(), s.my_id());
        assert_eq!(back.owner.get(5), Some(0));
        assert_eq!(back.migrating.get(&5), Some(&"a".repeat(40)));
        assert_eq!(back.current_epoch, 3);
        let mut back = back;
        back.refresh_state(true);
        assert!(!back.is_ok());
        back.refresh_state(false);
        assert!(back.is_ok());
    }

    #[test]
    fn slot_bitmaps_and_ranges_match_the_slot_table() {
        use proptest::prelude::*;
        let dir = tempfile::tempdir().unwrap();
        let mut s = ClusterState::fresh(dir.path().join("nodes.conf"), 7000, 17000);
        for n in 1..4 {
            let mut other = s.nodes[0].clone();
            other.info.id = format!("{n:040}");
            s.nodes.push(other);
        }
        // Runs of one owner (or none) of random lengths, up to the last slot.
        let layout = proptest::collection::vec((0usize..5, 1usize..3000), 1..40);
        let s = std::cell::RefCell::new(s);
        let mut runner = proptest::test_runner::TestRunner::default();
        runner
            .run(&layout, |runs| {
                let mut s = s.borrow_mut();
                let mut slot = 0;
                for (who, len) in runs {
                    for _ in 0..len {
                        if slot < CLUSTER_SLOTS {
                            s.owner.set(slot, (who < 4).then_some(who));
                            slot += 1;
                        }
                    }
                }
                let by_node = s.slot_ranges_by_node();
                prop_assert_eq!(by_node.len(), 4);
                for (i, ranges) in by_node.iter().enumerate() {
                    let bitmap = s.slots_of(i);
                    for slot in 0..CLUSTER_SLOTS {
                        prop_assert_eq!(bitmap.test(slot as u16), s.owner.get(slot) == Some(i));
                    }
                    let expected: Vec<(u16, u16)> = bitmap.ranges().collect();
                    prop_assert_eq!(ranges, &expected);
                }
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn corrupt_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nodes.conf");
        std::fs::write(&path, "garbage line\n").unwrap();
        assert!(matches!(
            ClusterState::load(&path, 7000, 17000),
            Err(ClusterStateError::Corrupt(..))
        ));
    }
}
