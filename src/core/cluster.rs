//! The node's cluster state while `cluster-enabled yes` (Redis's `clusterState` of one
//! node): my id, the epochs, the nodes table, which node owns each slot and the open
//! (migrating/importing) slots.
//!
//! It is loaded from `cluster-config-file` at start ([`ClusterState::load`], the file is
//! created when missing and a corrupt one stops start-up, as cluster.c `clusterInit` /
//! `clusterLoadConfig`), and saved with [`nodes_conf::write_atomically`] after every change
//! ([`ClusterState::save`], Redis's `clusterSaveConfigOrDie`). Without the cluster bus the
//! table holds the nodes the file named and no node is ever marked failing.

use crate::cluster::nodes_conf::{
    self, LinkState, NodeFlags, NodeLine, NodesConf, OpenSlot, SlotMigration,
};
use crate::cluster::slots::{CLUSTER_SLOTS, SlotBitmap};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One node of the table (the `myself` node included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// 40 lowercase hex characters.
    pub id: String,
    /// Last known IP (empty until known).
    pub ip: String,
    /// Client port.
    pub port: u16,
    /// Bus port.
    pub cport: u16,
    /// Announced hostname.
    pub hostname: Option<String>,
    /// Flags (`NodeFlags` bits).
    pub flags: NodeFlags,
    /// The primary's id for a replica.
    pub master: Option<String>,
    /// Config epoch.
    pub config_epoch: u64,
}

/// The state of this cluster node.
#[derive(Debug, Clone)]
pub struct ClusterState {
    /// Where the state is saved.
    pub path: PathBuf,
    /// The table; index 0 is always myself.
    pub nodes: Vec<Node>,
    /// Slot → index in `nodes` of its owner.
    pub owner: Vec<Option<usize>>,
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
    /// Cluster bus messages sent and received by type (always zero without the bus).
    pub stats_messages: u64,
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
        let me = Node {
            id: random_node_id(),
            ip: String::new(),
            port,
            cport,
            hostname: None,
            flags: NodeFlags(NodeFlags::MYSELF | NodeFlags::MASTER),
            master: None,
            config_epoch: 0,
        };
        ClusterState {
            path,
            nodes: vec![me],
            owner: vec![None; CLUSTER_SLOTS],
            migrating: BTreeMap::new(),
            importing: BTreeMap::new(),
            current_epoch: 0,
            last_vote_epoch: 0,
            shard_id: random_node_id(),
            stats_messages: 0,
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
        lines.sort_by_key(|n| !n.flags.contains(NodeFlags::MYSELF));
        for line in lines {
            let index = state.nodes.len();
            let mut node = Node {
                id: line.id.clone(),
                ip: line.ip.clone(),
                port: line.port,
                cport: line.cport,
                hostname: line.hostname.clone(),
                flags: line.flags,
                master: line.master.clone(),
                config_epoch: line.config_epoch,
            };
            if index == 0 {
                node.port = port;
                node.cport = cport;
            }
            state.nodes.push(node);
            for &(start, end) in &line.slots {
                for slot in start..=end {
                    state.owner[usize::from(slot)] = Some(index);
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
        Ok(state)
    }

    /// Writes the state to its file atomically.
    pub fn save(&self) -> Result<(), ClusterStateError> {
        nodes_conf::write_atomically(&self.path, self.to_conf().write().as_bytes())
            .map_err(|e| ClusterStateError::Io(self.path.clone(), e))
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

    /// The slots node `index` owns.
    pub fn slots_of(&self, index: usize) -> SlotBitmap {
        let mut bitmap = SlotBitmap::default();
        for (slot, owner) in self.owner.iter().enumerate() {
            if *owner == Some(index) {
                bitmap.set(slot as u16);
            }
        }
        bitmap
    }

    /// Number of assigned slots.
    pub fn slots_assigned(&self) -> usize {
        self.owner.iter().filter(|o| o.is_some()).count()
    }

    /// Primaries serving at least one slot (`cluster_size`).
    pub fn size(&self) -> usize {
        (0..self.nodes.len())
            .filter(|&i| {
                self.nodes[i].flags.contains(NodeFlags::MASTER) && self.owner.contains(&Some(i))
            })
            .count()
    }

    /// `cluster_state` ok (true) or fail, as cluster.c `clusterUpdateState` decides it
    /// for nodes that never fail: every slot assigned when `require_full_coverage`, and
    /// a majority of the slot-serving primaries reachable (all are, without a bus; a
    /// cluster of size 0 has no majority).
    pub fn is_ok(&self, require_full_coverage: bool) -> bool {
        if require_full_coverage && self.slots_assigned() < CLUSTER_SLOTS {
            return false;
        }
        self.size() > 0
    }

    /// The state as nodes.conf lines.
    pub fn to_conf(&self) -> NodesConf {
        let nodes = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| NodeLine {
                id: n.id.clone(),
                ip: n.ip.clone(),
                port: n.port,
                cport: n.cport,
                hostname: n.hostname.clone(),
                flags: n.flags,
                master: n.master.clone(),
                ping_sent: 0,
                pong_recv: 0,
                config_epoch: n.config_epoch,
                link_state: if i == 0 {
                    LinkState::Connected
                } else {
                    LinkState::Disconnected
                },
                slots: self.slots_of(i).ranges().collect(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_state_saves_and_loads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nodes.conf");
        let mut s = ClusterState::load(&path, 7000, 17000).unwrap();
        assert!(crate::cluster::nodes_conf::is_valid_node_id(s.my_id()));
        s.owner[5] = Some(0);
        s.migrating.insert(5, "a".repeat(40));
        s.current_epoch = 3;
        s.save().unwrap();
        let back = ClusterState::load(&path, 7000, 17000).unwrap();
        assert_eq!(back.my_id(), s.my_id());
        assert_eq!(back.owner[5], Some(0));
        assert_eq!(back.migrating.get(&5), Some(&"a".repeat(40)));
        assert_eq!(back.current_epoch, 3);
        assert!(!back.is_ok(true));
        assert!(back.is_ok(false));
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
