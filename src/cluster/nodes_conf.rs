//! `nodes.conf`, the cluster configuration file of Redis 7.0: its parser, its writer, and
//! the atomic file replacement used to save it.
//!
//! The file is the `CLUSTER NODES` output (cluster.c `clusterGenNodesDescription`, without
//! nodes in handshake) followed by one `vars` line (`clusterSaveConfig`); it is read back by
//! `clusterLoadConfig`. One line per node, fields separated by one space:
//!
//! ```text
//! <id> <ip>:<port>@<cport>[,<hostname>] <flags> <master-id|-> <ping_sent> <pong_recv>
//!      <config_epoch> <connected|disconnected> [<slot>|<start>-<end>]... [<open slot>]...
//! vars currentEpoch <n> lastVoteEpoch <m>
//!
//! id            40 lowercase hex characters (cluster.c verifyClusterNodeId)
//! ip            may be empty (":7000@17000") until the node learns its address from a MEET
//! @cport        missing in files older than 4.0: the cluster port is then port + 10000
//! ,hostname     only when the node announces one (cluster-announce-hostname)
//! flags         comma list in the order myself,master,slave,fail?,fail,handshake,noaddr,
//!               nofailover; "noflags" when none (cluster.c redisNodeFlagsTable)
//! ping_sent     ms unix time of the last unanswered PING, 0 if none; pong_recv likewise;
//!               on load Redis only asks "is it non-zero"
//! config_epoch  for a replica, its master's config epoch
//! slots         maximal runs in ascending slot order, a run of one slot as a bare number
//! open slot     "[<slot>->-<id>]" migrating to <id>, "[<slot>-<-<id>]" importing from <id>,
//!               ascending by slot, only on the "myself" line
//! ```
//!
//! [`NodesConf::parse`] followed by [`NodesConf::write`] reproduces a file Redis wrote byte
//! for byte. Unknown `vars` are skipped as Redis skips them (so they are not written back).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

/// Node flags, the `flags` field of `clusterNode` (cluster.h `CLUSTER_NODE_*`), shared by
/// nodes.conf and the bus header and gossip entries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NodeFlags(pub u16);

impl NodeFlags {
    /// The node is a primary (`CLUSTER_NODE_MASTER`).
    pub const MASTER: u16 = 1;
    /// The node is a replica (`CLUSTER_NODE_SLAVE`).
    pub const SLAVE: u16 = 2;
    /// Failure suspected, not yet agreed (`CLUSTER_NODE_PFAIL`, printed `fail?`).
    pub const PFAIL: u16 = 4;
    /// Failure agreed by a majority of primaries (`CLUSTER_NODE_FAIL`).
    pub const FAIL: u16 = 8;
    /// This line describes the node that wrote the file (`CLUSTER_NODE_MYSELF`).
    pub const MYSELF: u16 = 16;
    /// First PING/PONG not yet exchanged (`CLUSTER_NODE_HANDSHAKE`).
    pub const HANDSHAKE: u16 = 32;
    /// The node's address is unknown (`CLUSTER_NODE_NOADDR`).
    pub const NOADDR: u16 = 64;
    /// A MEET is to be sent to this node (`CLUSTER_NODE_MEET`; never printed).
    pub const MEET: u16 = 128;
    /// Primary eligible for replica migration (`CLUSTER_NODE_MIGRATE_TO`; never printed).
    pub const MIGRATE_TO: u16 = 256;
    /// Replica that will not fail over (`CLUSTER_NODE_NOFAILOVER`).
    pub const NOFAILOVER: u16 = 512;

    /// The printed names in the order Redis prints them (cluster.c `redisNodeFlagsTable`).
    pub const NAMES: [(u16, &'static str); 8] = [
        (Self::MYSELF, "myself"),
        (Self::MASTER, "master"),
        (Self::SLAVE, "slave"),
        (Self::PFAIL, "fail?"),
        (Self::FAIL, "fail"),
        (Self::HANDSHAKE, "handshake"),
        (Self::NOADDR, "noaddr"),
        (Self::NOFAILOVER, "nofailover"),
    ];

    /// Whether every bit of `flag` is set.
    pub fn contains(self, flag: u16) -> bool {
        self.0 & flag == flag
    }

    /// Parses the comma list of nodes.conf / `CLUSTER NODES` (case-insensitive, as
    /// `clusterLoadConfig`); `noflags` adds nothing. `None` on an unknown name.
    pub fn parse_list(text: &str) -> Option<Self> {
        let mut flags = 0;
        for name in text.split(',') {
            if name.eq_ignore_ascii_case("noflags") {
                continue;
            }
            let &(bit, _) = Self::NAMES
                .iter()
                .find(|(_, known)| known.eq_ignore_ascii_case(name))?;
            flags |= bit;
        }
        Some(Self(flags))
    }

    /// Appends the comma list as Redis prints it (`representClusterNodeFlags`).
    pub fn write_list(self, out: &mut String) {
        let start = out.len();
        for (bit, name) in Self::NAMES {
            if self.0 & bit != 0 {
                if out.len() > start {
                    out.push(',');
                }
                out.push_str(name);
            }
        }
        if out.len() == start {
            out.push_str("noflags");
        }
    }
}

/// Whether a node's link is up, as the eighth field says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkState {
    /// `connected`: a link to the node exists (always for `myself`).
    Connected,
    /// `disconnected`.
    Disconnected,
}

/// Direction of an open (migrating or importing) slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotMigration {
    /// `[slot->-id]`: this node is migrating the slot to `id` (`migrating_slots_to`).
    Migrating,
    /// `[slot-<-id]`: this node is importing the slot from `id` (`importing_slots_from`).
    Importing,
}

/// One `[slot->-id]` / `[slot-<-id]` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenSlot {
    /// The slot being moved.
    pub slot: u16,
    /// Whether it moves away from or towards this node.
    pub direction: SlotMigration,
    /// The other node of the move (40 hex characters).
    pub node: String,
}

/// What a node line says about the node and what the node table
/// (`core::cluster::Node`) keeps of it: who the node is, where it listens, its flags,
/// its primary and its config epoch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    /// Node id, 40 lowercase hex characters.
    pub id: String,
    /// Last known IP address; empty when the node does not know its own yet.
    pub ip: String,
    /// Client port.
    pub port: u16,
    /// Cluster bus port.
    pub cport: u16,
    /// Announced hostname, `None` when none is announced (never `Some("")`).
    pub hostname: Option<String>,
    /// Flags.
    pub flags: NodeFlags,
    /// The primary's id if this node is a replica.
    pub master: Option<String>,
    /// Config epoch (in a file, the primary's for a replica).
    pub config_epoch: u64,
}

impl NodeInfo {
    /// A node known only by its id, address and flags: no hostname, no primary, config
    /// epoch 0 (cluster.c `createClusterNode`).
    pub fn new(id: String, ip: String, port: u16, cport: u16, flags: u16) -> Self {
        NodeInfo {
            id,
            ip,
            port,
            cport,
            hostname: None,
            flags: NodeFlags(flags),
            master: None,
            config_epoch: 0,
        }
    }
}

/// One node line of nodes.conf.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeLine {
    /// The node: id, address, flags, primary, config epoch.
    pub node: NodeInfo,
    /// ms unix time of the pending PING, 0 if none.
    pub ping_sent: i64,
    /// ms unix time of the last PONG, 0 if none.
    pub pong_recv: i64,
    /// Link state.
    pub link_state: LinkState,
    /// Served slots as inclusive `(start, end)` runs, in file order.
    pub slots: Vec<(u16, u16)>,
    /// Open slots, in file order (only on the `myself` line).
    pub open_slots: Vec<OpenSlot>,
}

/// A whole nodes.conf.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodesConf {
    /// Node lines in file order.
    pub nodes: Vec<NodeLine>,
    /// `vars currentEpoch`.
    pub current_epoch: u64,
    /// `vars lastVoteEpoch`.
    pub last_vote_epoch: u64,
}

/// Why a nodes.conf could not be read. Redis stops with "Unrecoverable error: corrupted
/// cluster config file." in all these cases; we also say where and what.
#[derive(Debug, PartialEq, Eq)]
pub enum NodesConfError {
    /// The file is not UTF-8 text.
    NotText,
    /// A node line has fewer than the eight fixed fields.
    TooFewFields {
        /// 1-based line number.
        line: usize,
    },
    /// A node id (or master id, or open-slot id) is not 40 lowercase hex characters.
    BadNodeId {
        /// 1-based line number.
        line: usize,
    },
    /// The address field is not `ip:port[@cport][,hostname]` with valid ports.
    BadAddress {
        /// 1-based line number.
        line: usize,
    },
    /// A flag name Redis does not know.
    UnknownFlag {
        /// 1-based line number.
        line: usize,
    },
    /// A number field (ping_sent, pong_recv, config_epoch, a vars value) does not parse.
    BadNumber {
        /// 1-based line number.
        line: usize,
    },
    /// The link-state field is neither `connected` nor `disconnected`.
    BadLinkState {
        /// 1-based line number.
        line: usize,
    },
    /// A slot, range or open-slot entry is malformed or out of 0..16384.
    BadSlot {
        /// 1-based line number.
        line: usize,
    },
    /// A `vars` line with a name and no value.
    BadVars {
        /// 1-based line number.
        line: usize,
    },
    /// No line has the `myself` flag.
    NoMyself,
}

impl std::fmt::Display for NodesConfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (what, line) = match *self {
            Self::NotText => return f.write_str("cluster config file is not text"),
            Self::NoMyself => return f.write_str("cluster config file has no 'myself' node"),
            Self::TooFewFields { line } => ("fewer than 8 fields", line),
            Self::BadNodeId { line } => ("invalid node id", line),
            Self::BadAddress { line } => ("invalid address", line),
            Self::UnknownFlag { line } => ("unknown flag", line),
            Self::BadNumber { line } => ("invalid number", line),
            Self::BadLinkState { line } => ("invalid link state", line),
            Self::BadSlot { line } => ("invalid slot", line),
            Self::BadVars { line } => ("odd number of vars arguments", line),
        };
        write!(f, "corrupted cluster config file: {what} at line {line}")
    }
}

impl std::error::Error for NodesConfError {}

/// Whether `id` is a node id as Redis checks it: 40 characters in `[0-9a-f]`
/// (cluster.c `verifyClusterNodeId`).
pub fn is_valid_node_id(id: &str) -> bool {
    id.len() == 40 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The parsed slot number, if it is in 0..16384.
fn parse_slot(text: &str) -> Option<u16> {
    text.parse::<u16>()
        .ok()
        .filter(|&s| usize::from(s) < super::slots::CLUSTER_SLOTS)
}

impl NodesConf {
    /// Parses a whole file. Blank lines are skipped, as Redis skips them.
    pub fn parse(bytes: &[u8]) -> Result<Self, NodesConfError> {
        let text = std::str::from_utf8(bytes).map_err(|_| NodesConfError::NotText)?;
        let mut conf = NodesConf {
            nodes: Vec::new(),
            current_epoch: 0,
            last_vote_epoch: 0,
        };
        for (index, raw) in text.split('\n').enumerate() {
            let line = index + 1;
            let fields: Vec<&str> = raw.split_ascii_whitespace().collect();
            let Some(&first) = fields.first() else {
                continue;
            };
            if first.eq_ignore_ascii_case("vars") {
                conf.parse_vars(&fields[1..], line)?;
            } else {
                conf.nodes.push(parse_node_line(&fields, line)?);
            }
        }
        if !conf
            .nodes
            .iter()
            .any(|n| n.node.flags.contains(NodeFlags::MYSELF))
        {
            return Err(NodesConfError::NoMyself);
        }
        Ok(conf)
    }

    fn parse_vars(&mut self, pairs: &[&str], line: usize) -> Result<(), NodesConfError> {
        if !pairs.len().is_multiple_of(2) {
            return Err(NodesConfError::BadVars { line });
        }
        for pair in pairs.chunks_exact(2) {
            let target = if pair[0].eq_ignore_ascii_case("currentEpoch") {
                &mut self.current_epoch
            } else if pair[0].eq_ignore_ascii_case("lastVoteEpoch") {
                &mut self.last_vote_epoch
            } else {
                continue; // Redis logs "Skipping unknown cluster config variable".
            };
            *target = pair[1]
                .parse()
                .map_err(|_| NodesConfError::BadNumber { line })?;
        }
        Ok(())
    }

    /// The file's bytes, exactly as Redis would write this configuration.
    pub fn write(&self) -> String {
        let mut out = String::new();
        for node in &self.nodes {
            node.write(&mut out);
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "vars currentEpoch {} lastVoteEpoch {}",
            self.current_epoch, self.last_vote_epoch
        );
        out
    }

    /// The line with the `myself` flag (a parsed file always has one).
    pub fn myself(&self) -> Option<&NodeLine> {
        self.nodes
            .iter()
            .find(|n| n.node.flags.contains(NodeFlags::MYSELF))
    }
}

fn parse_node_line(fields: &[&str], line: usize) -> Result<NodeLine, NodesConfError> {
    if fields.len() < 8 {
        return Err(NodesConfError::TooFewFields { line });
    }
    let node_id = |text: &str| {
        if is_valid_node_id(text) {
            Ok(text.to_string())
        } else {
            Err(NodesConfError::BadNodeId { line })
        }
    };
    let id = node_id(fields[0])?;
    let (ip, port, cport, hostname) =
        parse_address(fields[1]).ok_or(NodesConfError::BadAddress { line })?;
    let flags = NodeFlags::parse_list(fields[2]).ok_or(NodesConfError::UnknownFlag { line })?;
    let master = match fields[3] {
        "-" => None,
        other => Some(node_id(other)?),
    };
    let ping_sent = fields[4]
        .parse()
        .map_err(|_| NodesConfError::BadNumber { line })?;
    let pong_recv = fields[5]
        .parse()
        .map_err(|_| NodesConfError::BadNumber { line })?;
    let config_epoch = fields[6]
        .parse()
        .map_err(|_| NodesConfError::BadNumber { line })?;
    let link_state = match fields[7] {
        "connected" => LinkState::Connected,
        "disconnected" => LinkState::Disconnected,
        _ => return Err(NodesConfError::BadLinkState { line }),
    };
    let mut slots = Vec::new();
    let mut open_slots = Vec::new();
    for &entry in &fields[8..] {
        let bad_slot = NodesConfError::BadSlot { line };
        if let Some(inner) = entry.strip_prefix('[') {
            let inner = inner.strip_suffix(']').ok_or(bad_slot)?;
            let (slot, direction, node) = if let Some((slot, node)) = inner.split_once("->-") {
                (slot, SlotMigration::Migrating, node)
            } else if let Some((slot, node)) = inner.split_once("-<-") {
                (slot, SlotMigration::Importing, node)
            } else {
                return Err(NodesConfError::BadSlot { line });
            };
            let slot = parse_slot(slot).ok_or(NodesConfError::BadSlot { line })?;
            open_slots.push(OpenSlot {
                slot,
                direction,
                node: node_id(node)?,
            });
        } else {
            let (start, end) = entry.split_once('-').unwrap_or((entry, entry));
            let start = parse_slot(start).ok_or(NodesConfError::BadSlot { line })?;
            let end = parse_slot(end).ok_or(NodesConfError::BadSlot { line })?;
            slots.push((start, end));
        }
    }
    Ok(NodeLine {
        node: NodeInfo {
            id,
            ip,
            port,
            cport,
            hostname,
            flags,
            master,
            config_epoch,
        },
        ping_sent,
        pong_recv,
        link_state,
        slots,
        open_slots,
    })
}

/// Splits `ip:port[@cport][,hostname]` as `clusterLoadConfig` does: hostname after the
/// first `,`, port after the last `:` (IPv6 addresses hold colons), cport after `@`.
fn parse_address(field: &str) -> Option<(String, u16, u16, Option<String>)> {
    let (address, hostname) = match field.split_once(',') {
        Some((address, hostname)) => (address, (!hostname.is_empty()).then_some(hostname)),
        None => (field, None),
    };
    let (ip, ports) = address.rsplit_once(':')?;
    let (port, cport) = match ports.split_once('@') {
        Some((port, cport)) => {
            let port: u16 = port.parse().ok()?;
            (port, cport.parse().ok()?)
        }
        None => {
            // Before Redis 4.0 there was no "@cport": the bus port is port + 10000.
            let port: u16 = ports.parse().ok()?;
            (port, port.checked_add(10000)?)
        }
    };
    Some((ip.to_string(), port, cport, hostname.map(str::to_string)))
}

impl NodeLine {
    /// Appends this line (without its `\n`) as `clusterGenNodeDescription` prints it.
    pub fn write(&self, out: &mut String) {
        let n = &self.node;
        let _ = write!(out, "{} {}:{}@{}", n.id, n.ip, n.port, n.cport);
        if let Some(hostname) = &n.hostname {
            out.push(',');
            out.push_str(hostname);
        }
        out.push(' ');
        n.flags.write_list(out);
        let _ = write!(
            out,
            " {} {} {} {} {}",
            n.master.as_deref().unwrap_or("-"),
            self.ping_sent,
            self.pong_recv,
            n.config_epoch,
            match self.link_state {
                LinkState::Connected => "connected",
                LinkState::Disconnected => "disconnected",
            }
        );
        for &(start, end) in &self.slots {
            if start == end {
                let _ = write!(out, " {start}");
            } else {
                let _ = write!(out, " {start}-{end}");
            }
        }
        for open in &self.open_slots {
            let arrow = match open.direction {
                SlotMigration::Migrating => "->-",
                SlotMigration::Importing => "-<-",
            };
            let _ = write!(out, " [{}{}{}]", open.slot, arrow, open.node);
        }
    }
}

/// Replaces `path` with `contents` so that a crash leaves either the old file or the new
/// one: write `<path>.tmp-<pid>` in the same directory, fsync it, rename it over `path`,
/// fsync the directory.
pub fn write_atomically(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    write_replacing(path, contents, true)
}

/// Largest file rewritten in place by [`write_replacing`]: one page. The kernel copies a
/// `write` into the page cache page by page and stops between pages only for a fatal
/// signal, so a write of one page at offset 0 is whole or absent after a crash of the
/// process.
const IN_PLACE_MAX: u64 = 4096;

/// [`write_atomically`], with the two fsyncs only when `durable`. A power loss may lose
/// a change saved without them (Redis 7.0 fsyncs nodes.conf only for epoch changes and
/// CLUSTER SAVECONFIG, `CLUSTER_TODO_FSYNC_CONFIG`); a crash of the process must not
/// leave a mix of the two files, which two ways guarantee:
/// - old and new file both at most one page ([`IN_PLACE_MAX`]): written in place with
///   one `pwrite`, padded with newlines to the old length and then truncated, as Redis
///   7.0's `clusterSaveConfig` does (a blank line is skipped when the file is read back,
///   by streamd and by Redis). `redis-cli --cluster reshard` sends a SETSLOT per node per
///   slot and each saves the file; renaming a new file over the old one made ext4 start
///   writing it back at once (`auto_da_alloc`), 200-370 µs a save against ~20 µs;
/// - otherwise a new file renamed over the old one.
pub fn write_replacing(path: &Path, contents: &[u8], durable: bool) -> std::io::Result<()> {
    if !durable && contents.len() as u64 <= IN_PLACE_MAX {
        match std::fs::OpenOptions::new().write(true).open(path) {
            Ok(file) => {
                let old_len = file.metadata()?.len();
                if old_len <= IN_PLACE_MAX {
                    return rewrite_in_place(&file, contents, old_len);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    replace_by_rename(path, contents, durable)
}

/// Overwrites the one-page `file` (now `old_len` bytes) with `contents` in one `pwrite`,
/// padded with newlines up to `old_len`, then cuts the padding off.
fn rewrite_in_place(file: &std::fs::File, contents: &[u8], old_len: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt as _;
    let padded_len = (old_len as usize).max(contents.len());
    let mut page = Vec::with_capacity(padded_len);
    page.extend_from_slice(contents);
    page.resize(padded_len, b'\n');
    file.write_all_at(&page, 0)?;
    if padded_len > contents.len() {
        file.set_len(contents.len() as u64)?;
    }
    Ok(())
}

/// Writes `<path>.tmp-<pid>`, renames it over `path`; with `durable`, fsyncs the file
/// before and the directory after.
fn replace_by_rename(path: &Path, contents: &[u8], durable: bool) -> std::io::Result<()> {
    let file_name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("cluster config path has no file name"))?;
    let mut temp_name = file_name.to_os_string();
    temp_name.push(format!(".tmp-{}", std::process::id()));
    let temp_path = path.with_file_name(temp_name);
    let result = (|| {
        let mut file = std::fs::File::create(&temp_path)?;
        file.write_all(contents)?;
        if durable {
            file.sync_all()?;
        }
        drop(file);
        std::fs::rename(&temp_path, path)?;
        if !durable {
            return Ok(());
        }
        let dir = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp_path);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "6d15be0d2e82479e776950e49b4219c4aa3455b9";
    const B: &str = "0123456789abcdef0123456789abcdef01234567";

    fn sample() -> String {
        format!(
            "{A} 127.0.0.1:7000@17000,host-a.example myself,master - 0 0 3 connected 0-100 200 \
             5000-5460 [300->-{B}] [301-<-{B}]\n\
             {B} :7001@17001 slave,fail?,nofailover {A} 1700000000000 1700000000123 3 \
             disconnected\n\
             vars currentEpoch 5 lastVoteEpoch 4\n"
        )
    }

    #[test]
    fn parse_then_write_is_byte_identical() {
        let text = sample();
        let conf = NodesConf::parse(text.as_bytes()).expect("sample parses");
        assert_eq!(conf.write(), text);
        let me = conf.myself().expect("myself");
        assert_eq!(me.node.id, A);
        assert_eq!(me.node.hostname.as_deref(), Some("host-a.example"));
        assert_eq!(me.slots, [(0, 100), (200, 200), (5000, 5460)]);
        assert_eq!(me.open_slots[0].direction, SlotMigration::Migrating);
        assert_eq!(me.open_slots[1].direction, SlotMigration::Importing);
        let replica = &conf.nodes[1];
        assert_eq!(replica.node.ip, "");
        assert_eq!(replica.node.master.as_deref(), Some(A));
        assert!(
            replica
                .node
                .flags
                .contains(NodeFlags::SLAVE | NodeFlags::PFAIL)
        );
        assert_eq!(replica.pong_recv, 1_700_000_000_123);
        assert_eq!(replica.link_state, LinkState::Disconnected);
        assert_eq!((conf.current_epoch, conf.last_vote_epoch), (5, 4));
    }

    #[test]
    fn address_without_cport_gets_port_plus_10000() {
        let text = format!("{A} 10.0.0.1:6379 myself,master - 0 0 0 connected\n");
        let conf = NodesConf::parse(text.as_bytes()).expect("old format parses");
        assert_eq!(conf.nodes[0].node.cport, 16379);
    }

    #[test]
    fn noflags_and_flag_order_follow_redis() {
        let mut out = String::new();
        NodeFlags(0).write_list(&mut out);
        assert_eq!(out, "noflags");
        out.clear();
        NodeFlags(NodeFlags::MASTER | NodeFlags::MYSELF | NodeFlags::MEET).write_list(&mut out);
        assert_eq!(out, "myself,master");
        assert_eq!(NodeFlags::parse_list("noflags"), Some(NodeFlags(0)));
        assert_eq!(NodeFlags::parse_list("master,bogus"), None);
    }

    #[test]
    fn corrupted_files_are_rejected_with_the_line() {
        let cases = [
            (
                format!("{A} :1@2 myself,master - 0 0 0\n"),
                NodesConfError::TooFewFields { line: 1 },
            ),
            (
                "xyz :1@2 myself,master - 0 0 0 connected\n".to_string(),
                NodesConfError::BadNodeId { line: 1 },
            ),
            (
                format!("{A} nocolon myself - 0 0 0 connected\n"),
                NodesConfError::BadAddress { line: 1 },
            ),
            (
                format!("{A} :1@2 myself,boss - 0 0 0 connected\n"),
                NodesConfError::UnknownFlag { line: 1 },
            ),
            (
                format!("{A} :1@2 myself - x 0 0 connected\n"),
                NodesConfError::BadNumber { line: 1 },
            ),
            (
                format!("{A} :1@2 myself - 0 0 0 up\n"),
                NodesConfError::BadLinkState { line: 1 },
            ),
            (
                format!("{A} :1@2 myself - 0 0 0 connected 16384\n"),
                NodesConfError::BadSlot { line: 1 },
            ),
            (
                format!("{A} :1@2 myself - 0 0 0 connected [5-?-{B}]\n"),
                NodesConfError::BadSlot { line: 1 },
            ),
            (
                format!("\n{A} :1@2 myself - 0 0 0 connected\nvars currentEpoch\n"),
                NodesConfError::BadVars { line: 3 },
            ),
            (
                format!("{A} :1@2 master - 0 0 0 connected\n"),
                NodesConfError::NoMyself,
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(NodesConf::parse(text.as_bytes()), Err(expected), "{text}");
        }
        assert_eq!(NodesConf::parse(b"\xff"), Err(NodesConfError::NotText));
    }

    #[test]
    fn unknown_vars_are_skipped_and_blank_lines_ignored() {
        let text = format!("\n{A} :1@2 myself - 0 0 0 connected\n\nvars foo 1 currentEpoch 9\n");
        let conf = NodesConf::parse(text.as_bytes()).expect("parses");
        assert_eq!(conf.current_epoch, 9);
        assert_eq!(conf.last_vote_epoch, 0);
    }

    #[test]
    fn write_atomically_replaces_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("nodes.conf");
        std::fs::write(&path, "old contents that are longer\n").expect("seed");
        write_atomically(&path, b"new\n").expect("write");
        assert_eq!(std::fs::read(&path).expect("read"), b"new\n");
        let leftovers = std::fs::read_dir(dir.path()).expect("list").count();
        assert_eq!(leftovers, 1);
    }

    #[test]
    fn saves_without_fsync_rewrite_small_files_in_place_and_rename_large_ones() {
        use std::os::unix::fs::MetadataExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("nodes.conf");
        // Absent: created (by rename).
        write_replacing(&path, b"first version, fairly long\n", false).expect("create");
        assert_eq!(
            std::fs::read(&path).expect("read"),
            b"first version, fairly long\n"
        );
        let inode = std::fs::metadata(&path).expect("stat").ino();
        // Shorter, then longer: the same file (same inode), exactly the new bytes.
        write_replacing(&path, b"short\n", false).expect("shorter");
        assert_eq!(std::fs::read(&path).expect("read"), b"short\n");
        let longer = vec![b'x'; 4096];
        write_replacing(&path, &longer, false).expect("longer");
        assert_eq!(std::fs::read(&path).expect("read"), longer);
        assert_eq!(std::fs::metadata(&path).expect("stat").ino(), inode);
        // Beyond a page: replaced by a new file.
        let large = vec![b'y'; 5000];
        write_replacing(&path, &large, false).expect("large");
        assert_eq!(std::fs::read(&path).expect("read"), large);
        assert_ne!(std::fs::metadata(&path).expect("stat").ino(), inode);
        // A large file is not rewritten in place either, even with small contents.
        let inode = std::fs::metadata(&path).expect("stat").ino();
        write_replacing(&path, b"small again\n", false).expect("small");
        assert_eq!(std::fs::read(&path).expect("read"), b"small again\n");
        assert_ne!(std::fs::metadata(&path).expect("stat").ino(), inode);
        let leftovers = std::fs::read_dir(dir.path()).expect("list").count();
        assert_eq!(leftovers, 1);
    }

    #[test]
    fn a_save_cut_before_its_truncate_still_parses() {
        // In-place saves pad with newlines to the old length before truncating: a crash
        // between the two leaves blank lines at the end, which the parser skips.
        let padded = format!("{}\n\n\n\n", sample());
        let parsed = NodesConf::parse(padded.as_bytes()).expect("parse");
        assert_eq!(parsed.write(), sample());
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        fn node_id() -> impl Strategy<Value = String> {
            "[0-9a-f]{40}"
        }

        fn node_line(myself: bool) -> impl Strategy<Value = NodeLine> {
            (
                (
                    node_id(),
                    "(|127\\.0\\.0\\.1|::1)",
                    any::<u16>(),
                    any::<u16>(),
                ),
                (proptest::option::of("[a-z][a-z0-9.-]{0,20}"), 0u16..1024),
                (
                    proptest::option::of(node_id()),
                    0i64..i64::MAX,
                    0i64..i64::MAX,
                    any::<u64>(),
                ),
                (
                    any::<bool>(),
                    proptest::collection::vec((0u16..16384, 0u16..100), 0..5),
                ),
                proptest::collection::vec((0u16..16384, any::<bool>(), node_id()), 0..3),
            )
                .prop_map(move |(address, named, times, slotted, open)| {
                    let (id, ip, port, cport) = address;
                    let (hostname, flag_bits) = named;
                    let (master, ping_sent, pong_recv, config_epoch) = times;
                    let (connected, runs) = slotted;
                    let mut flags =
                        flag_bits & !(NodeFlags::MYSELF | NodeFlags::MEET | NodeFlags::MIGRATE_TO);
                    if myself {
                        flags |= NodeFlags::MYSELF;
                    }
                    NodeLine {
                        node: NodeInfo {
                            id,
                            ip,
                            port,
                            cport,
                            hostname,
                            flags: NodeFlags(flags),
                            master,
                            config_epoch,
                        },
                        ping_sent,
                        pong_recv,
                        link_state: if connected {
                            LinkState::Connected
                        } else {
                            LinkState::Disconnected
                        },
                        slots: runs
                            .into_iter()
                            .map(|(s, len)| (s, (s + len).min(16383)))
                            .collect(),
                        open_slots: open
                            .into_iter()
                            .map(|(slot, migrating, node)| OpenSlot {
                                slot,
                                direction: if migrating {
                                    SlotMigration::Migrating
                                } else {
                                    SlotMigration::Importing
                                },
                                node,
                            })
                            .collect(),
                    }
                })
        }

        proptest! {
            /// Whatever we write, we read back as the same structs.
            #[test]
            fn written_files_parse_back_to_the_same_structs(
                me in node_line(true),
                others in proptest::collection::vec(node_line(false), 0..4),
                current_epoch in any::<u64>(),
                last_vote_epoch in any::<u64>(),
            ) {
                let mut nodes = vec![me];
                nodes.extend(others);
                let conf = NodesConf { nodes, current_epoch, last_vote_epoch };
                let text = conf.write();
                prop_assert_eq!(NodesConf::parse(text.as_bytes()), Ok(conf));
            }
        }
    }

    /// A `redis-server` child with cluster mode on, killed when dropped (also when a test
    /// fails half-way).
    struct RedisNode {
        child: std::process::Child,
        port: u16,
        dir: tempfile::TempDir,
    }

    impl Drop for RedisNode {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// A port `p` on 127.0.0.1 such that `p` and `p + 10000` are both free right now.
    fn free_port_pair() -> u16 {
        for _ in 0..100 {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            let port = listener.local_addr().expect("addr").port();
            if port < 55000 && std::net::TcpListener::bind(("127.0.0.1", port + 10000)).is_ok() {
                return port;
            }
        }
        panic!("no free port pair");
    }

    impl RedisNode {
        fn start() -> RedisNode {
            let dir = tempfile::tempdir().expect("tempdir");
            let port = free_port_pair();
            let child = std::process::Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args([
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                ])
                .args(["--save", "", "--appendonly", "no"])
                .arg("--dir")
                .arg(dir.path())
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("redis-server must be installed (apt-get install redis-server)");
            let node = RedisNode { child, port, dir };
            node.wait_for(|n| n.cli(&["ping"]) == "PONG", "redis-server to start");
            node
        }

        fn cli(&self, args: &[&str]) -> String {
            let output = std::process::Command::new("redis-cli")
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
                .args(args)
                .output()
                .expect("redis-cli");
            String::from_utf8_lossy(&output.stdout).trim().to_string()
        }

        fn wait_for(&self, done: impl Fn(&RedisNode) -> bool, what: &str) {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while !done(self) {
                assert!(
                    std::time::Instant::now() < deadline,
                    "timed out waiting for {what}"
                );
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
    }

    #[test]
    fn reads_and_rewrites_the_nodes_conf_of_a_real_redis_7() {
        let a = RedisNode::start();
        let b = RedisNode::start();
        let b_id = b.cli(&["cluster", "myid"]);
        assert_eq!(
            a.cli(&["config", "set", "cluster-announce-hostname", "node-a.test"]),
            "OK"
        );
        assert_eq!(
            a.cli(&["cluster", "addslotsrange", "0", "100", "200", "200"]),
            "OK"
        );
        assert_eq!(a.cli(&["cluster", "addslotsrange", "5000", "5460"]), "OK");
        assert_eq!(b.cli(&["cluster", "addslotsrange", "6000", "6001"]), "OK");
        assert_eq!(
            a.cli(&["cluster", "meet", "127.0.0.1", &b.port.to_string()]),
            "OK"
        );
        a.wait_for(
            |a| {
                // Done when b is known under its id and the two primaries' equal config
                // epochs (both 0) have been told apart (cluster.c
                // clusterHandleConfigEpochCollision), so nothing changes after SAVECONFIG.
                let nodes = a.cli(&["cluster", "nodes"]);
                let Ok(view) = NodesConf::parse(nodes.as_bytes()) else {
                    return false;
                };
                let epochs: Vec<u64> = view.nodes.iter().map(|n| n.node.config_epoch).collect();
                view.nodes.len() == 2
                    && view
                        .nodes
                        .iter()
                        .any(|n| n.node.id == b_id && n.slots == [(6000, 6001)])
                    && epochs[0] != epochs[1]
            },
            "the MEET handshake and the epoch collision to settle",
        );
        assert_eq!(
            a.cli(&["cluster", "setslot", "5000", "migrating", &b_id]),
            "OK"
        );
        assert_eq!(
            a.cli(&["cluster", "setslot", "6001", "importing", &b_id]),
            "OK"
        );
        assert_eq!(a.cli(&["cluster", "saveconfig"]), "OK");

        let bytes = std::fs::read(a.dir.path().join("nodes.conf")).expect("nodes.conf");
        let conf = NodesConf::parse(&bytes).expect("Redis's nodes.conf parses");
        assert_eq!(
            conf.write().as_bytes(),
            &bytes[..],
            "{}",
            String::from_utf8_lossy(&bytes)
        );

        let me = conf.myself().expect("myself");
        assert_eq!(me.node.id, a.cli(&["cluster", "myid"]));
        assert_eq!(me.node.port, a.port);
        assert_eq!(me.node.cport, a.port + 10000);
        assert_eq!(me.node.hostname.as_deref(), Some("node-a.test"));
        assert!(me.node.flags.contains(NodeFlags::MASTER));
        assert_eq!(me.slots, [(0, 100), (200, 200), (5000, 5460)]);
        let open = [
            (5000, SlotMigration::Migrating),
            (6001, SlotMigration::Importing),
        ];
        let found: Vec<_> = me
            .open_slots
            .iter()
            .map(|o| (o.slot, o.direction))
            .collect();
        assert_eq!(found, open);
        assert!(me.open_slots.iter().all(|o| o.node == b_id));
        let other = conf
            .nodes
            .iter()
            .find(|n| n.node.id == b_id)
            .expect("b's line");
        assert_eq!(
            (other.node.ip.as_str(), other.node.port),
            ("127.0.0.1", b.port)
        );
        assert_eq!(other.slots, [(6000, 6001)]);
        assert_eq!(other.link_state, LinkState::Connected);
        let info = a.cli(&["cluster", "info"]);
        let epoch_line = format!("cluster_current_epoch:{}", conf.current_epoch);
        assert!(info.contains(&epoch_line), "{info}");
    }
}
