//! The rules of the cluster bus: what a node does with each message it receives and
//! what it does every 100 ms (cluster.c `clusterProcessPacket` and `clusterCron`).
//!
//! Everything here runs on the core's thread with the core borrowed, and never waits:
//! frames to send go into the outbound links' queues ([`Bus::send`]), new connections
//! are returned to the caller to open ([`Connect`]). The state is the core's
//! `ClusterState`; the rules, with the place in Redis each comes from, are listed in
//! `docs/cluster.md`.

use super::{Bus, LinkId};
use crate::cluster::bus::{
    Body, Gossip, Header, IpField, MFLAG0_FORCEACK, MFLAG0_PAUSED, Message, NodeName, PingBody,
    PingExt, STATE_FAIL, STATE_OK,
};
use crate::cluster::nodes_conf::{NodeFlags, NodeInfo};
use crate::cluster::slots::{CLUSTER_SLOTS, SlotBitmap};
use crate::core::Core;
use crate::core::cluster::{BusRequest, ClusterState, MF_TIMEOUT_MS, Node, random_node_id};
use crate::core::replication::LinkState;
use bytes::Bytes;

/// Where a frame came from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A connection a peer opened to us: replies go back on it, the sender is known
    /// only by the name in the header.
    Inbound {
        /// The peer's IP (the address a MEET's sender gets).
        peer_ip: String,
        /// Our end's IP (how we learn our own address).
        local_ip: String,
        /// This connection among the inbound ones (CLUSTER LINKS' "from" links).
        conn: u64,
    },
    /// Our link to a node.
    Outbound(LinkId),
}

/// A connection the caller must open: link `link` to `ip:cport`.
#[derive(Debug, Clone)]
pub struct Connect {
    /// The link registered for it.
    pub link: LinkId,
    /// Address.
    pub ip: String,
    /// Bus port.
    pub cport: u16,
}

/// What the rules decided that needs more of the core than the cluster state.
#[derive(Debug)]
enum After {
    /// Replicate this primary (`replicationSetMaster`).
    Follow(String, u16),
    /// Stop replicating (`replicationUnsetMaster`).
    Promote,
    /// Delete the keys of these slots (`delKeysInSlot`: we lost them to a newer owner).
    DropSlots(Vec<u16>),
    /// Hold (true) or release (false) writes, for a manual failover on the primary.
    PauseWrites(bool),
    /// Deliver a message published on another node.
    Publish {
        shard: bool,
        channel: Bytes,
        message: Bytes,
    },
}

/// The configuration and replication facts the rules read, sampled once per call.
struct Env {
    now: u64,
    node_timeout: u64,
    my_offset: u64,
    /// The client port this node announces: `cluster-announce-port`, else the real one.
    my_port: u16,
    /// The bus port it announces: `cluster-announce-bus-port`, else the one it listens on.
    my_cport: u16,
    announce_ip: Option<String>,
    hostname: Option<String>,
    full_coverage: bool,
    allow_replica_migration: bool,
    validity_factor: u64,
    repl_ping_period: u64,
    no_failover: bool,
    migration_barrier: usize,
    /// Milliseconds since the replica last heard from its primary.
    data_age: u64,
    /// A replica whose replication link is down or was never set up.
    master_link_down: bool,
    /// The core replicates from nobody.
    no_master_host: bool,
    /// A replica outside its primary's sync set (`min-sync-replicas`,
    /// core/syncrepl.rs): it may lack acknowledged writes, so it never stands for an
    /// automatic election.
    sync_fenced: bool,
    /// A primary restarted with `min-sync-replicas` on and not yet demoted or confirmed
    /// (core/syncrepl.rs): the bus goes silent (see [`Bus::set_muted`]).
    fenced_primary: bool,
}

impl Env {
    fn sample(core: &Core) -> Env {
        let now = crate::core::unix_ms();
        let cfg = &core.config;
        let text = |name: &str| {
            cfg.get(name)
                .filter(|v| !v.is_empty())
                .map(|v| v.to_string())
        };
        let (data_age, master_link_down) = match &core.repl.master {
            Some(m) if m.state == LinkState::Connected => (now.saturating_sub(m.last_io_ms), false),
            Some(m) => (now.saturating_sub(m.down_since_ms), true),
            None => (u64::MAX / 4, true),
        };
        Env {
            now,
            node_timeout: cfg.get_i64("cluster-node-timeout").max(1) as u64,
            my_offset: core.repl.offset,
            my_port: crate::core::cluster::announced_port(cfg, core.port),
            my_cport: crate::core::cluster::announced_bus_port(cfg, core.port),
            announce_ip: text("cluster-announce-ip"),
            hostname: text("cluster-announce-hostname"),
            full_coverage: cfg.get_bool("cluster-require-full-coverage"),
            allow_replica_migration: cfg.get_bool("cluster-allow-replica-migration"),
            validity_factor: cfg.get_i64("cluster-replica-validity-factor").max(0) as u64,
            repl_ping_period: cfg.get_i64("repl-ping-replica-period").max(1) as u64,
            no_failover: cfg.get_bool("cluster-replica-no-failover"),
            migration_barrier: cfg.get_i64("cluster-migration-barrier").max(0) as usize,
            data_age,
            master_link_down,
            no_master_host: core.repl.master.is_none(),
            sync_fenced: core.repl.is_replica() && core.sync.fenced(&core.repl.replid),
            fenced_primary: core.sync.fenced_primary,
        }
    }
}

/// A small xorshift generator for gossip picks and election delays.
fn random(bus: &mut Bus) -> u64 {
    let mut x = bus.rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    bus.rng = x;
    x
}

fn has(node: &Node, flag: u16) -> bool {
    node.flags.contains(flag)
}

fn set(node: &mut Node, flag: u16) {
    node.flags.0 |= flag;
}

fn clear(node: &mut Node, flag: u16) {
    node.flags.0 &= !flag;
}

fn name_of(id: &str) -> NodeName {
    NodeName::from_id(id).unwrap_or(NodeName([b'0'; 40]))
}

/// Runs `f` on the cluster state and then does what it decided on the rest of the core.
fn with_state<R>(
    core: &mut Core,
    bus: &mut Bus,
    f: impl FnOnce(&mut ClusterState, &Env, &mut Bus, &mut Vec<After>) -> R,
) -> Option<R> {
    let env = Env::sample(core);
    bus.set_muted(env.fenced_primary);
    let mut after = Vec::new();
    let st = core.cluster.as_deref_mut()?;
    let before = (st.config_key(), st.state_ok);
    let result = f(st, &env, bus, &mut after);
    st.refresh_state(env.full_coverage);
    let changed = st.config_key() != before.0;
    let owner_or_state_changed = changed || st.state_ok != before.1;
    if changed && let Err(e) = st.save_change() {
        tracing::error!(error = %e, "could not save the cluster configuration");
    }
    for a in after {
        match a {
            After::Follow(host, port) => {
                tracing::info!("Connecting to MASTER {host}:{port}");
                core.follow_master(host, port);
            }
            After::Promote => {
                tracing::info!("Promoted to master of the cluster's slots");
                core.become_primary();
            }
            After::DropSlots(slots) => drop_slots(core, &slots),
            After::PauseWrites(on) => {
                core.repl.pause_writes = on;
                if !on {
                    core.resume_paused();
                }
            }
            After::Publish {
                shard,
                channel,
                message,
            } => {
                if shard {
                    core.spublish(&channel, &message);
                } else {
                    core.publish(&channel, &message);
                }
            }
        }
    }
    if owner_or_state_changed {
        core.redirect_blocked_clients();
    }
    Some(result)
}

/// Deletes the keys of `slots` from database 0, propagated as DEL (cluster.c
/// `delKeysInSlot`).
fn drop_slots(core: &mut Core, slots: &[u16]) {
    for &slot in slots {
        for key in core.keys_in_slot(slot, usize::MAX) {
            if core.dbs[0].remove(&key).is_some() {
                core.key_deleted(0, &key);
                core.notify_keyspace_event(crate::core::notify::class::GENERIC, "del", &key, 0);
                core.dirty += 1;
                core.propagate(0, &[&b"DEL"[..], &key]);
            }
        }
    }
}

// ---------------------------------------------------------------- building messages

/// The header every message carries (cluster.c `clusterBuildMessageHdr`): the slots and
/// config epoch are my primary's when I am a replica.
fn header(st: &ClusterState, env: &Env) -> Header {
    let me = &st.nodes[0];
    let master = st.my_master().filter(|_| has(me, NodeFlags::SLAVE));
    let (slots_of, epoch) = match master {
        Some(m) => (m, st.nodes[m].config_epoch),
        None => (0, me.config_epoch),
    };
    let mut mflags = [0u8; 3];
    if has(me, NodeFlags::MASTER) && st.manual.end != 0 {
        mflags[0] |= MFLAG0_PAUSED;
    }
    Header {
        port: env.my_port,
        current_epoch: st.current_epoch,
        config_epoch: epoch,
        offset: env.my_offset,
        sender: name_of(&me.id),
        myslots: st.slots_of(slots_of),
        slaveof: if has(me, NodeFlags::SLAVE) {
            me.master.as_deref().map(name_of)
        } else {
            None
        },
        myip: env
            .announce_ip
            .as_deref()
            .and_then(IpField::from_text)
            .unwrap_or(IpField::EMPTY),
        pport: 0,
        cport: me.cport,
        flags: me.flags,
        state: if st.state_ok { STATE_OK } else { STATE_FAIL },
        mflags,
    }
}

fn gossip_entry(node: &Node) -> Gossip {
    Gossip {
        node: name_of(&node.id),
        ping_sent: (node.rt.ping_sent / 1000) as u32,
        pong_received: (node.rt.pong_received / 1000) as u32,
        ip: IpField::from_text(&node.ip).unwrap_or(IpField::EMPTY),
        port: node.port,
        cport: node.cport,
        flags: node.flags,
        pport: 0,
    }
}

/// A PING, PONG or MEET with its gossip (cluster.c `clusterSendPing`): about a tenth of
/// the other nodes (at least 3) picked at random, skipping nodes in handshake, without an
/// address, or disconnected and slotless, and then every node in PFAIL.
fn ping_frame(st: &ClusterState, env: &Env, bus: &mut Bus, kind: fn(PingBody) -> Body) -> Vec<u8> {
    let known = st.nodes.len();
    let fresh = known.saturating_sub(2);
    let wanted = (known / 10).max(3).min(fresh);
    let mut picked: Vec<usize> = Vec::new();
    let mut tries = wanted * 3;
    while picked.len() < wanted && tries > 0 && known > 1 {
        tries -= 1;
        let i = 1 + (random(bus) as usize) % (known - 1);
        let n = &st.nodes[i];
        if has(n, NodeFlags::PFAIL)
            || has(n, NodeFlags::HANDSHAKE)
            || has(n, NodeFlags::NOADDR)
            || (!n.rt.link && st.num_slots(i) == 0)
            || picked.contains(&i)
        {
            continue;
        }
        picked.push(i);
    }
    for (i, n) in st.nodes.iter().enumerate().skip(1) {
        if has(n, NodeFlags::PFAIL)
            && !has(n, NodeFlags::HANDSHAKE)
            && !has(n, NodeFlags::NOADDR)
            && !picked.contains(&i)
        {
            picked.push(i);
        }
    }
    let mut body = PingBody {
        gossip: picked.iter().map(|&i| gossip_entry(&st.nodes[i])).collect(),
        extensions: Vec::new(),
    };
    if let Some(h) = &env.hostname {
        body.extensions
            .push(PingExt::Hostname(Bytes::copy_from_slice(h.as_bytes())));
    }
    encode(header(st, env), kind(body))
}

fn encode(header: Header, body: Body) -> Vec<u8> {
    Message { header, body }.encode().unwrap_or_default()
}

fn count_sent(st: &mut ClusterState, body_code: u16) {
    if let Some(c) = st.stats[0].get_mut(usize::from(body_code)) {
        *c += 1;
    }
}

/// Sends a PING (or MEET) to node `i` on its link, noting the time of the PING.
fn send_ping(st: &mut ClusterState, env: &Env, bus: &mut Bus, i: usize, meet: bool) {
    let frame = if meet {
        ping_frame(st, env, bus, Body::Meet)
    } else {
        ping_frame(st, env, bus, Body::Ping)
    };
    if bus.send(&st.nodes[i].id, frame) {
        count_sent(st, if meet { 2 } else { 0 });
        if !meet {
            st.nodes[i].rt.ping_sent = env.now;
        }
    }
}

/// Sends `body` (with the usual header) to every node with a link, not in handshake
/// (`clusterBroadcastMessage`).
fn broadcast(st: &mut ClusterState, env: &Env, bus: &mut Bus, body: Body) {
    let code = body.message_type().code();
    let frame = encode(header(st, env), body);
    let targets: Vec<String> = st
        .nodes
        .iter()
        .skip(1)
        .filter(|n| !has(n, NodeFlags::HANDSHAKE))
        .map(|n| n.id.clone())
        .collect();
    for id in targets {
        if bus.send(&id, frame.clone()) {
            count_sent(st, code);
        }
    }
}

/// A PONG to every node, or to my primary's other replicas only (`clusterBroadcastPong`).
fn broadcast_pong(st: &mut ClusterState, env: &Env, bus: &mut Bus, local_replicas: bool) {
    let my_master = st.nodes[0].master.clone();
    let targets: Vec<String> = st
        .nodes
        .iter()
        .skip(1)
        .filter(|n| !has(n, NodeFlags::HANDSHAKE))
        .filter(|n| {
            !local_replicas
                || (has(n, NodeFlags::SLAVE) && n.master.is_some() && n.master == my_master)
        })
        .map(|n| n.id.clone())
        .collect();
    for id in targets {
        let frame = ping_frame(st, env, bus, Body::Pong);
        if bus.send(&id, frame) {
            count_sent(st, 1);
        }
    }
}

// ---------------------------------------------------------------- node table changes

/// Starts a handshake with `ip:port` unless one is already going (cluster.c
/// `clusterStartHandshake`): a node with a random name, flagged HANDSHAKE and MEET.
fn start_handshake(st: &mut ClusterState, env: &Env, ip: &str, port: u16, cport: u16) -> bool {
    if ip.parse::<std::net::IpAddr>().is_err() || port == 0 || cport == 0 {
        return false;
    }
    let ip = ip
        .parse::<std::net::IpAddr>()
        .map(|a| a.to_string())
        .unwrap_or_default();
    if st.nodes.iter().any(|n| {
        has(n, NodeFlags::HANDSHAKE)
            && n.ip.eq_ignore_ascii_case(&ip)
            && n.port == port
            && n.cport == cport
    }) {
        return false;
    }
    st.nodes.push(Node::new(
        NodeInfo::new(
            random_node_id(),
            ip,
            port,
            cport,
            NodeFlags::HANDSHAKE | NodeFlags::MEET,
        ),
        env.now,
    ));
    true
}

/// Node `i` is a primary from now on (`clusterSetNodeAsMaster`).
fn set_node_as_master(st: &mut ClusterState, i: usize) {
    let n = &mut st.nodes[i];
    if has(n, NodeFlags::MASTER) {
        return;
    }
    // A replica that becomes a primary (a failover) is a target for replica migration
    // when it is left without replicas.
    if n.master.is_some() && i != 0 {
        set(n, NodeFlags::MIGRATE_TO);
    }
    n.master = None;
    clear(n, NodeFlags::SLAVE);
    set(n, NodeFlags::MASTER);
}

/// A primary that has (or had) a replica may receive migrating replicas
/// (cluster.c `clusterNodeAddSlave` sets MIGRATE_TO on the primary).
fn note_replica_of(st: &mut ClusterState, master: usize) {
    if master != 0 {
        set(&mut st.nodes[master], NodeFlags::MIGRATE_TO);
    }
}

/// A node neither PFAIL nor FAIL (cluster.h `nodeFailed` negated).
fn working(n: &crate::core::cluster::Node) -> bool {
    !has(n, NodeFlags::FAIL) && !has(n, NodeFlags::PFAIL)
}

/// Replicas of `m` that are neither PFAIL nor FAIL (cluster.c
/// `clusterCountNonFailingSlaves`).
fn working_replicas(st: &ClusterState, m: usize) -> usize {
    st.replicas_of(m)
        .into_iter()
        .filter(|&r| working(&st.nodes[r]))
        .count()
}

/// I replicate node `m` from now on (`clusterSetMaster`): a primary gives up its open
/// slots, the replication link is pointed at `m`, a manual failover ends.
fn set_my_master(st: &mut ClusterState, m: usize, after: &mut Vec<After>) {
    let me = &mut st.nodes[0];
    if has(me, NodeFlags::MASTER) {
        clear(me, NodeFlags::MASTER | NodeFlags::MIGRATE_TO);
        set(me, NodeFlags::SLAVE);
        st.migrating.clear();
        st.importing.clear();
    }
    let (id, ip, port) = (
        st.nodes[m].id.clone(),
        st.nodes[m].ip.clone(),
        st.nodes[m].port,
    );
    st.nodes[0].master = Some(id);
    note_replica_of(st, m);
    after.push(After::Follow(ip, port));
    reset_manual_failover(st, after);
}

fn reset_manual_failover(st: &mut ClusterState, after: &mut Vec<After>) {
    if st.manual.end != 0 && st.nodes[0].flags.contains(NodeFlags::MASTER) {
        after.push(After::PauseWrites(false));
    }
    if st.manual.replica.is_some() {
        after.push(After::PauseWrites(false));
    }
    st.manual = Default::default();
}

/// `sender` claims `slots` at `epoch` (cluster.c `clusterUpdateSlotsConfigWith`): every
/// slot whose owner has an older config epoch moves to it, unless we are importing it.
/// If my primary (or I) lost its last slot that way, I become a replica of `sender`;
/// otherwise keys of slots I lost are deleted.
fn update_slots_config_with(
    st: &mut ClusterState,
    env: &Env,
    sender: usize,
    epoch: u64,
    slots: &SlotBitmap,
    after: &mut Vec<After>,
) {
    if sender == 0 {
        return;
    }
    let cur_master = if has(&st.nodes[0], NodeFlags::MASTER) {
        Some(0)
    } else {
        st.my_master()
    };
    let mut new_master = false;
    let mut dirty: Vec<u16> = Vec::new();
    let mut migrated_ours = 0usize;
    let sender_slots = slots.count();
    // Only the claimed slots the sender does not already own can change.
    let new_claims = slots.without(&st.owner.bitmap_of(sender));
    for slot in new_claims.iter() {
        let s = usize::from(slot);
        let owner = st.owner.get(s);
        if owner == Some(sender) || st.importing.contains_key(&slot) {
            continue;
        }
        let older = match owner {
            None => true,
            Some(o) => st.nodes[o].config_epoch < epoch,
        };
        if !older {
            continue;
        }
        if owner == Some(0) {
            dirty.push(slot);
        }
        if owner.is_some() && owner == cur_master {
            new_master = true;
            migrated_ours += 1;
        }
        st.slot_stats.reset_slot(slot);
        st.owner.set(s, Some(sender));
    }
    let cur_empty = cur_master.is_some_and(|m| st.num_slots(m) == 0);
    if new_master && cur_empty && (env.allow_replica_migration || sender_slots == migrated_ours) {
        tracing::info!(
            "Configuration change detected. Reconfiguring myself as a replica of {}",
            st.nodes[sender].id
        );
        set_my_master(st, sender, after);
    } else if !dirty.is_empty() {
        after.push(After::DropSlots(dirty));
    }
}

/// Two primaries with the same config epoch: the one with the smaller id takes a new
/// epoch (cluster.c `clusterHandleConfigEpochCollision`).
fn handle_epoch_collision(st: &mut ClusterState, sender: usize) {
    if st.nodes[sender].config_epoch != st.nodes[0].config_epoch
        || !has(&st.nodes[sender], NodeFlags::MASTER)
        || !has(&st.nodes[0], NodeFlags::MASTER)
    {
        return;
    }
    if st.nodes[sender].id.as_str() <= st.nodes[0].id.as_str() {
        return;
    }
    st.current_epoch += 1;
    st.nodes[0].config_epoch = st.current_epoch;
    tracing::info!(
        "WARNING: configEpoch collision with node {}. configEpoch set to {}",
        st.nodes[sender].id,
        st.current_epoch
    );
}

/// Flags node `i` FAIL when enough primaries report it (cluster.c
/// `markNodeAsFailingIfNeeded`): a majority of the cluster's size, myself included when
/// I am a primary. The FAIL is broadcast.
fn mark_failing_if_needed(st: &mut ClusterState, env: &Env, bus: &mut Bus, i: usize) {
    let quorum = st.size() / 2 + 1;
    let n = &st.nodes[i];
    if !has(n, NodeFlags::PFAIL) || has(n, NodeFlags::FAIL) {
        return;
    }
    let mut failures = st.failure_reports(i, env.now, env.node_timeout * 2);
    if has(&st.nodes[0], NodeFlags::MASTER) {
        failures += 1;
    }
    if failures < quorum {
        return;
    }
    tracing::info!(
        "Marking node {} as failing (quorum reached).",
        st.nodes[i].id
    );
    let n = &mut st.nodes[i];
    clear(n, NodeFlags::PFAIL);
    set(n, NodeFlags::FAIL);
    n.rt.fail_time = env.now;
    let node = name_of(&n.id);
    broadcast(st, env, bus, Body::Fail { node });
}

/// A FAIL node that answers again is cleared (cluster.c `clearNodeFailureIfNeeded`): at
/// once for a replica or a slotless primary, after twice the node timeout for a primary
/// that still has slots (nobody took them over).
fn clear_failure_if_needed(st: &mut ClusterState, env: &Env, i: usize) {
    if !has(&st.nodes[i], NodeFlags::FAIL) {
        return;
    }
    let slotless = st.num_slots(i) == 0;
    let n = &mut st.nodes[i];
    if has(n, NodeFlags::SLAVE) || slotless {
        tracing::info!("Clear FAIL state for node {}: is reachable again.", n.id);
        clear(n, NodeFlags::FAIL);
    } else if env.now.saturating_sub(n.rt.fail_time) > env.node_timeout * 2 {
        tracing::info!(
            "Clear FAIL state for node {}: is reachable again and nobody is serving its slots after some time.",
            n.id
        );
        clear(n, NodeFlags::FAIL);
    }
}

// ---------------------------------------------------------------- receiving

/// Handles one frame (cluster.c `clusterProcessPacket`); returns the frame to answer on
/// the same connection (a PONG to a PING or MEET).
pub fn process(core: &mut Core, bus: &mut Bus, frame: &[u8], src: &Source) -> Option<Vec<u8>> {
    let msg = match Message::decode(frame) {
        Ok(m) => m,
        Err(e) => {
            tracing::debug!(error = ?e, "dropping a cluster bus frame");
            return None;
        }
    };
    with_state(core, bus, |st, env, bus, after| {
        receive(st, env, bus, msg, src, after)
    })
    .flatten()
    .filter(|_| !bus.muted())
}

/// What every frame's header says about its known sender `s` (cluster.c
/// `clusterProcessPacket`'s first part): it is alive, a newer current epoch, its (or its
/// primary's) newer config epoch, its replication offset.
fn note_sender_header(
    st: &mut ClusterState,
    env: &Env,
    s: usize,
    h: &Header,
    src: &Source,
    sender_id: &str,
) {
    let n = &mut st.nodes[s];
    n.rt.data_received = env.now;
    if let Source::Inbound { conn, .. } = src
        && n.rt.inbound.is_none_or(|(c, _)| c != *conn)
    {
        n.rt.inbound = Some((*conn, env.now));
    }
    if h.current_epoch > st.current_epoch {
        st.current_epoch = h.current_epoch;
    }
    let n = &mut st.nodes[s];
    if h.config_epoch > n.config_epoch {
        n.config_epoch = h.config_epoch;
    }
    n.rt.repl_offset = h.offset;
    // The paused primary's offset, for the replica in a manual failover.
    if st.manual.end != 0
        && has(&st.nodes[0], NodeFlags::SLAVE)
        && st.nodes[0].master.as_deref() == Some(sender_id)
        && h.mflags[0] & MFLAG0_PAUSED != 0
        && st.manual.master_offset.is_none()
    {
        st.manual.master_offset = Some(h.offset);
    }
}

fn receive(
    st: &mut ClusterState,
    env: &Env,
    bus: &mut Bus,
    msg: Message,
    src: &Source,
    after: &mut Vec<After>,
) -> Option<Vec<u8>> {
    let h = &msg.header;
    let code = msg.body.message_type().code();
    if let Some(c) = st.stats[1].get_mut(usize::from(code)) {
        *c += 1;
    }
    let sender_id = h.sender.to_id();
    let sender = st
        .lookup(&sender_id)
        .filter(|&i| i != 0 && !has(&st.nodes[i], NodeFlags::HANDSHAKE));
    let link_node: Option<usize> = match src {
        Source::Outbound(link) => bus.node_of(*link).and_then(|id| st.lookup(&id)),
        Source::Inbound { .. } => None,
    };
    if let Some(s) = sender {
        note_sender_header(st, env, s, h, src, &sender_id);
    }
    let mut reply = None;
    match &msg.body {
        Body::Ping(ping) | Body::Meet(ping) | Body::Pong(ping) => {
            let is_meet = matches!(msg.body, Body::Meet(_));
            let is_pong = matches!(msg.body, Body::Pong(_));
            if let Source::Inbound {
                peer_ip, local_ip, ..
            } = src
                && !is_pong
            {
                // Learn my own address from the socket (only without an announced IP).
                if (is_meet || st.nodes[0].ip.is_empty()) && env.announce_ip.is_none() {
                    st.nodes[0].ip = local_ip.clone();
                }
                // A MEET from an unknown node: add it in handshake, with the address
                // it came from, and learn the nodes it gossips about.
                if sender.is_none() && is_meet {
                    let ip = announced_ip(h, peer_ip);
                    st.nodes.push(Node::new(
                        NodeInfo::new(random_node_id(), ip, h.port, h.cport, NodeFlags::HANDSHAKE),
                        env.now,
                    ));
                    process_gossip(st, env, bus, None, &ping.gossip);
                }
                let frame = ping_frame(st, env, bus, Body::Pong);
                count_sent(st, 1);
                reply = Some(frame);
            }
            // Our outbound link's node: finish a handshake, or notice a changed id.
            if let Some(ln) = link_node {
                if has(&st.nodes[ln], NodeFlags::HANDSHAKE) {
                    if sender.is_some() {
                        // We already know it under its real name: this one goes.
                        let id = st.nodes[ln].id.clone();
                        st.del_node(ln);
                        bus.free_node(&id);
                        return reply;
                    }
                    let old = st.nodes[ln].id.clone();
                    let n = &mut st.nodes[ln];
                    n.id = sender_id.clone();
                    clear(n, NodeFlags::HANDSHAKE);
                    n.flags.0 |= h.flags.0 & (NodeFlags::MASTER | NodeFlags::SLAVE);
                    bus.rename(&old, &sender_id);
                    tracing::info!("Handshake with node {} completed.", sender_id);
                } else if st.nodes[ln].id != sender_id {
                    let n = &mut st.nodes[ln];
                    set(n, NodeFlags::NOADDR);
                    n.ip.clear();
                    n.port = 0;
                    n.cport = 0;
                    let id = n.id.clone();
                    bus.free_node(&id);
                    return reply;
                }
            }
            let known_before = sender.is_some();
            let sender = st
                .lookup(&sender_id)
                .filter(|&i| i != 0 && !has(&st.nodes[i], NodeFlags::HANDSHAKE));
            // A handshake just completed: the header's epochs are the new node's too. Were
            // its slots taken below without its config epoch, and the node died before its
            // next PING, its replica would ask for votes with config epoch 0 and every
            // primary would refuse them (a slot's owner has a newer epoch): no failover.
            if let Some(s) = sender.filter(|_| !known_before) {
                note_sender_header(st, env, s, h, src, &sender_id);
            }
            // A PING from a known node from another address: it moved.
            if let (Some(s), Source::Inbound { peer_ip, .. }) = (sender, src)
                && !is_pong
            {
                let ip = announced_ip(h, peer_ip);
                let n = &mut st.nodes[s];
                if n.ip != ip || n.port != h.port || n.cport != h.cport {
                    n.ip = ip;
                    n.port = h.port;
                    n.cport = h.cport;
                    clear(n, NodeFlags::NOADDR);
                    let id = n.id.clone();
                    bus.free_node(&id);
                    if st.nodes[0].master.as_deref() == Some(id.as_str()) {
                        after.push(After::Follow(st.nodes[s].ip.clone(), st.nodes[s].port));
                    }
                }
            }
            if let Some(ln) = link_node.and_then(|_| sender.filter(|_| is_pong)) {
                let n = &mut st.nodes[ln];
                n.rt.pong_received = env.now;
                n.rt.ping_sent = 0;
                if has(n, NodeFlags::PFAIL) {
                    clear(n, NodeFlags::PFAIL);
                } else {
                    clear_failure_if_needed(st, env, ln);
                }
            }
            let Some(s) = sender else { return reply };
            // The hostname extension (its absence clears the name).
            st.nodes[s].hostname = ping.extensions.iter().find_map(|e| match e {
                PingExt::Hostname(name) => Some(String::from_utf8_lossy(name).into_owned()),
                PingExt::Unknown { .. } => None,
            });
            // Role: a primary, or a replica of a named primary.
            match &h.slaveof {
                None => set_node_as_master(st, s),
                Some(master_name) => {
                    let master_id = master_name.to_id();
                    if has(&st.nodes[s], NodeFlags::MASTER) {
                        st.owner.reassign(s, None);
                        let n = &mut st.nodes[s];
                        clear(n, NodeFlags::MASTER | NodeFlags::MIGRATE_TO);
                        set(n, NodeFlags::SLAVE);
                    }
                    if let Some(m) = st.lookup(&master_id) {
                        st.nodes[s].master = Some(master_id);
                        note_replica_of(st, m);
                    }
                }
            }
            if has(&st.nodes[s], NodeFlags::NOFAILOVER) != h.flags.contains(NodeFlags::NOFAILOVER) {
                st.nodes[s].flags.0 ^= NodeFlags::NOFAILOVER;
            }
            // Slots: a primary's claim moves slots with older owners to it; a stale
            // claim gets an UPDATE about the newer owner.
            let sender_master = if has(&st.nodes[s], NodeFlags::MASTER) {
                Some(s)
            } else {
                st.nodes[s].master.as_deref().and_then(|m| st.lookup(m))
            };
            let dirty = sender_master.is_some_and(|m| st.slots_of(m) != h.myslots);
            if dirty && has(&st.nodes[s], NodeFlags::MASTER) {
                update_slots_config_with(st, env, s, h.config_epoch, &h.myslots, after);
            }
            if dirty {
                for slot in 0..CLUSTER_SLOTS as u16 {
                    if !h.myslots.test(slot) {
                        continue;
                    }
                    let Some(o) = st.owner.get(usize::from(slot)) else {
                        continue;
                    };
                    if o == s || st.nodes[o].config_epoch <= h.config_epoch {
                        continue;
                    }
                    let body = Body::Update {
                        config_epoch: st.nodes[o].config_epoch,
                        node: name_of(&st.nodes[o].id),
                        slots: Box::new(st.slots_of(o)),
                    };
                    let frame = encode(header(st, env), body);
                    if bus.send(&sender_id, frame) {
                        count_sent(st, 7);
                    }
                    break;
                }
            }
            handle_epoch_collision(st, s);
            process_gossip(st, env, bus, Some(s), &ping.gossip);
        }
        Body::Fail { node } => {
            sender?;
            if let Some(f) = st.lookup(&node.to_id())
                && f != 0
                && !has(&st.nodes[f], NodeFlags::FAIL)
            {
                tracing::info!(
                    "FAIL message received from {} about {}",
                    sender_id,
                    st.nodes[f].id
                );
                let n = &mut st.nodes[f];
                set(n, NodeFlags::FAIL);
                n.rt.fail_time = env.now;
                clear(n, NodeFlags::PFAIL);
            }
        }
        Body::Publish { channel, message } | Body::PublishShard { channel, message } => {
            if sender.is_some() {
                after.push(After::Publish {
                    shard: matches!(msg.body, Body::PublishShard { .. }),
                    channel: channel.clone(),
                    message: message.clone(),
                });
            }
        }
        Body::FailoverAuthRequest => {
            if let Some(s) = sender {
                maybe_vote(st, env, bus, s, h);
            }
        }
        Body::FailoverAuthAck => {
            // Only primaries with slots vote; a vote for an older election is stale.
            if let Some(s) = sender
                && has(&st.nodes[s], NodeFlags::MASTER)
                && st.num_slots(s) > 0
                && h.current_epoch >= st.election.auth_epoch
            {
                st.election.auth_count += 1;
            }
        }
        Body::MfStart => {
            let s = sender?;
            if st.nodes[s].master.as_deref() != Some(st.my_id()) {
                return None;
            }
            reset_manual_failover(st, after);
            st.manual.end = env.now + MF_TIMEOUT_MS;
            st.manual.replica = Some(sender_id.clone());
            after.push(After::PauseWrites(true));
            tracing::info!("Manual failover requested by replica {}.", sender_id);
            // Tell the replica my offset at once (the PAUSED flag is in the header).
            send_ping(st, env, bus, s, false);
        }
        Body::Update {
            config_epoch,
            node,
            slots,
        } => {
            sender?;
            let n = st.lookup(&node.to_id())?;
            if st.nodes[n].config_epoch >= *config_epoch {
                return None;
            }
            if has(&st.nodes[n], NodeFlags::SLAVE) {
                set_node_as_master(st, n);
            }
            st.nodes[n].config_epoch = *config_epoch;
            update_slots_config_with(st, env, n, *config_epoch, slots, after);
        }
        Body::Module { .. } => {}
    }
    reply
}

/// The sender's address: its announced IP, else the connection's peer
/// (cluster.c `nodeIp2String`).
fn announced_ip(h: &Header, peer_ip: &str) -> String {
    let text = h.myip.text();
    if text.is_empty() {
        peer_ip.to_string()
    } else {
        String::from_utf8_lossy(text).into_owned()
    }
}

/// The gossip section (cluster.c `clusterProcessGossipSection`): failure reports from
/// primaries, fresher PONG times, new nodes to shake hands with.
fn process_gossip(
    st: &mut ClusterState,
    env: &Env,
    bus: &mut Bus,
    sender: Option<usize>,
    gossip: &[Gossip],
) {
    let sender_is_master = sender.is_some_and(|s| has(&st.nodes[s], NodeFlags::MASTER));
    for g in gossip {
        let id = g.node.to_id();
        match st.lookup(&id) {
            Some(i) => {
                if let Some(s) = sender
                    && sender_is_master
                    && i != 0
                {
                    let by = st.nodes[s].id.clone();
                    if g.flags.contains(NodeFlags::FAIL) || g.flags.contains(NodeFlags::PFAIL) {
                        st.add_failure_report(i, &by, env.now);
                        mark_failing_if_needed(st, env, bus, i);
                    } else {
                        st.del_failure_report(i, &by);
                    }
                }
                // A fresher PONG seen by someone else (only while we wait for none).
                let n = &mut st.nodes[i];
                if i != 0
                    && !g.flags.contains(NodeFlags::FAIL)
                    && !g.flags.contains(NodeFlags::PFAIL)
                    && n.rt.ping_sent == 0
                    && n.rt.fail_reports.is_empty()
                {
                    let pong = u64::from(g.pong_received) * 1000;
                    if pong <= env.now + 500 && pong > n.rt.pong_received {
                        n.rt.pong_received = pong;
                    }
                }
                // A failed node we lost the address of, seen at a new one.
                let ip = String::from_utf8_lossy(g.ip.text()).into_owned();
                if i != 0
                    && (has(n, NodeFlags::FAIL)
                        || has(n, NodeFlags::PFAIL)
                        || has(n, NodeFlags::NOADDR))
                    && !g.flags.contains(NodeFlags::NOADDR)
                    && !ip.is_empty()
                    && (n.ip != ip || n.port != g.port || n.cport != g.cport)
                {
                    n.ip = ip;
                    n.port = g.port;
                    n.cport = g.cport;
                    clear(n, NodeFlags::NOADDR);
                    let id = n.id.clone();
                    bus.free_node(&id);
                }
            }
            None => {
                let blacklisted = st.blacklist.get(&id).is_some_and(|&until| until > env.now);
                if sender.is_some() && !g.flags.contains(NodeFlags::NOADDR) && !blacklisted {
                    let ip = String::from_utf8_lossy(g.ip.text()).into_owned();
                    start_handshake(st, env, &ip, g.port, g.cport);
                }
            }
        }
    }
}

/// A primary's vote for a replica asking to replace its failed primary (cluster.c
/// `clusterSendFailoverAuthIfNeeded`).
fn maybe_vote(st: &mut ClusterState, env: &Env, bus: &mut Bus, s: usize, h: &Header) {
    let me = &st.nodes[0];
    if has(me, NodeFlags::SLAVE) || st.num_slots(0) == 0 {
        return;
    }
    let asker = st.nodes[s].id.clone();
    // Each refusal is logged with its reason, as cluster.c does: an election that never
    // gathers a majority is explained by its voters' logs.
    let deny = |why: String| tracing::warn!("Failover auth denied to {asker}: {why}");
    if h.current_epoch < st.current_epoch {
        deny(format!(
            "reqEpoch ({}) < curEpoch({})",
            h.current_epoch, st.current_epoch
        ));
        return;
    }
    if st.last_vote_epoch == st.current_epoch {
        deny(format!("already voted for epoch {}", st.current_epoch));
        return;
    }
    let force = h.mflags[0] & MFLAG0_FORCEACK != 0;
    let Some(m) = h.slaveof.as_ref().and_then(|n| st.lookup(&n.to_id())) else {
        deny("its master is unknown".into());
        return;
    };
    if has(&st.nodes[s], NodeFlags::MASTER) {
        deny("it is a master node".into());
        return;
    }
    if !has(&st.nodes[m], NodeFlags::FAIL) && !force {
        deny("its master is up".into());
        return;
    }
    let since_vote = env.now.saturating_sub(st.nodes[m].rt.voted_time);
    if since_vote < env.node_timeout * 2 {
        deny(format!(
            "can't vote about this master before {} milliseconds",
            env.node_timeout * 2 - since_vote
        ));
        return;
    }
    for slot in 0..CLUSTER_SLOTS as u16 {
        if !h.myslots.test(slot) {
            continue;
        }
        if let Some(o) = st.owner.get(usize::from(slot))
            && st.nodes[o].config_epoch > h.config_epoch
        {
            deny(format!(
                "slot {slot} epoch ({}) > reqEpoch ({})",
                st.nodes[o].config_epoch, h.config_epoch
            ));
            return;
        }
    }
    st.last_vote_epoch = st.current_epoch;
    st.nodes[m].rt.voted_time = env.now;
    tracing::info!(
        "Failover auth granted to {} for epoch {}",
        st.nodes[s].id,
        st.current_epoch
    );
    let frame = encode(header(st, env), Body::FailoverAuthAck);
    let id = st.nodes[s].id.clone();
    if bus.send(&id, frame) {
        count_sent(st, 6);
    }
}

// ---------------------------------------------------------------- links

/// Our link to `link`'s node connected: send the MEET it waits for, or a PING
/// (cluster.c `clusterLinkConnectHandler`), keeping an older pending PING's time.
pub fn on_connected(core: &mut Core, bus: &mut Bus, link: LinkId) {
    with_state(core, bus, |st, env, bus, _| {
        let Some(i) = bus.node_of(link).and_then(|id| st.lookup(&id)) else {
            return;
        };
        bus.set_connected(link);
        let old_ping = st.nodes[i].rt.ping_sent;
        let meet = has(&st.nodes[i], NodeFlags::MEET);
        st.nodes[i].rt.link = true;
        st.nodes[i].rt.link_ctime = env.now;
        send_ping(st, env, bus, i, meet);
        if old_ping != 0 {
            st.nodes[i].rt.ping_sent = old_ping;
        }
        clear(&mut st.nodes[i], NodeFlags::MEET);
    });
}

/// Link `link` failed or closed: its node has no link until the cron makes a new one;
/// a node never reached counts as pinged, so failure detection runs.
pub fn on_link_closed(core: &mut Core, bus: &mut Bus, link: LinkId) {
    let Some(id) = bus.close(link) else { return };
    with_state(core, bus, |st, env, _, _| {
        if let Some(i) = st.lookup(&id) {
            st.nodes[i].rt.link = false;
            if st.nodes[i].rt.ping_sent == 0 {
                st.nodes[i].rt.ping_sent = env.now;
            }
        }
    });
}

/// Inbound connection `conn` closed: the node it came from has no inbound link now.
pub fn on_inbound_closed(core: &mut Core, conn: u64) {
    if let Some(st) = core.cluster.as_deref_mut() {
        for n in &mut st.nodes {
            if n.rt.inbound.is_some_and(|(c, _)| c == conn) {
                n.rt.inbound = None;
            }
        }
    }
}

// ---------------------------------------------------------------- the cron

/// What commands queued for the bus: MEETs, MFSTART, PONG broadcasts, publishes.
pub fn handle_requests(core: &mut Core, bus: &mut Bus) {
    with_state(core, bus, |st, env, bus, after| {
        for r in std::mem::take(&mut st.requests) {
            match r {
                BusRequest::Meet { ip, port, cport } => {
                    start_handshake(st, env, &ip, port, cport);
                }
                BusRequest::MfStart => {
                    if let Some(m) = st.my_master() {
                        let frame = encode(header(st, env), Body::MfStart);
                        let id = st.nodes[m].id.clone();
                        if bus.send(&id, frame) {
                            count_sent(st, 8);
                        }
                    }
                }
                BusRequest::BroadcastPong => broadcast_pong(st, env, bus, false),
                BusRequest::Takeover => {
                    // A new epoch without votes (clusterBumpConfigEpochWithoutConsensus),
                    // then the takeover.
                    let max = st.max_epoch();
                    if st.nodes[0].config_epoch == 0 || st.nodes[0].config_epoch != max {
                        st.current_epoch += 1;
                        st.nodes[0].config_epoch = st.current_epoch;
                    }
                    replace_my_master(st, env, bus, after);
                }
                BusRequest::Publish {
                    shard,
                    channel,
                    message,
                } => {
                    if shard {
                        // To my shard only: my primary (or me) and its replicas.
                        let master = if has(&st.nodes[0], NodeFlags::MASTER) {
                            Some(0)
                        } else {
                            st.my_master()
                        };
                        let Some(m) = master else { continue };
                        let mut targets = st.replicas_of(m);
                        targets.push(m);
                        let frame =
                            encode(header(st, env), Body::PublishShard { channel, message });
                        for t in targets.into_iter().filter(|&t| t != 0) {
                            let id = st.nodes[t].id.clone();
                            if bus.send(&id, frame.clone()) {
                                count_sent(st, 10);
                            }
                        }
                    } else {
                        broadcast(st, env, bus, Body::Publish { channel, message });
                    }
                }
            }
        }
    });
}

/// One run of the 100 ms timer (cluster.c `clusterCron`); returns the links to open.
pub fn cron(core: &mut Core, bus: &mut Bus) -> Vec<Connect> {
    handle_requests(core, bus);
    with_state(core, bus, |st, env, bus, after| {
        // The announced ports may change at run time (cluster.c
        // `clusterUpdateMyselfAnnouncedPorts`): peers learn them from the next header.
        st.nodes[0].port = env.my_port;
        st.nodes[0].cport = env.my_cport;
        let mut connects = Vec::new();
        bus.iteration += 1;
        let handshake_timeout = env.node_timeout.max(1000);
        st.blacklist.retain(|_, until| *until > env.now);
        // Handshakes that took too long go; nodes without a link get one.
        let mut i = 1;
        while i < st.nodes.len() {
            let n = &st.nodes[i];
            if has(n, NodeFlags::HANDSHAKE)
                && env.now.saturating_sub(n.rt.ctime) > handshake_timeout
            {
                let id = n.id.clone();
                st.del_node(i);
                bus.free_node(&id);
                continue;
            }
            if !has(n, NodeFlags::NOADDR) && !n.ip.is_empty() && !bus.has_link(&n.id) {
                let link = bus.register(&n.id, env.now);
                connects.push(Connect {
                    link,
                    ip: n.ip.clone(),
                    cport: n.cport,
                });
            }
            i += 1;
        }
        // Links to nodes no longer in the table close.
        let known: Vec<String> = st.nodes.iter().map(|n| n.id.clone()).collect();
        bus.retain_nodes(&known);
        for n in st.nodes.iter_mut().skip(1) {
            n.rt.link = bus.connected(&n.id);
        }
        // Once a second, PING the one of five random nodes we heard from last.
        if bus.iteration % 10 == 0 && st.nodes.len() > 1 {
            let mut best: Option<usize> = None;
            for _ in 0..5 {
                let j = 1 + (random(bus) as usize) % (st.nodes.len() - 1);
                let n = &st.nodes[j];
                if !n.rt.link || n.rt.ping_sent != 0 || has(n, NodeFlags::HANDSHAKE) {
                    continue;
                }
                if best.is_none_or(|b| n.rt.pong_received < st.nodes[b].rt.pong_received) {
                    best = Some(j);
                }
            }
            if let Some(j) = best {
                send_ping(st, env, bus, j, false);
            }
        }
        // Per node: reconnect a silent link, PING when half the timeout passed,
        // flag PFAIL past the timeout.
        let mut orphaned_masters = 0usize;
        let mut max_replicas = 0usize;
        let mut my_master_ok_replicas = 0usize;
        let me_slave = has(&st.nodes[0], NodeFlags::SLAVE);
        for j in 1..st.nodes.len() {
            let n = &st.nodes[j];
            if has(n, NodeFlags::HANDSHAKE) || has(n, NodeFlags::NOADDR) {
                continue;
            }
            if me_slave && has(n, NodeFlags::MASTER) && working(n) {
                let ok = working_replicas(st, j);
                if ok == 0 && st.num_slots(j) > 0 && has(n, NodeFlags::MIGRATE_TO) {
                    orphaned_masters += 1;
                }
                max_replicas = max_replicas.max(ok);
                if st.nodes[0].master.as_deref() == Some(n.id.as_str()) {
                    my_master_ok_replicas = ok;
                }
            }
            let n = &st.nodes[j];
            let ping_delay = env.now.saturating_sub(n.rt.ping_sent);
            let data_delay = env.now.saturating_sub(n.rt.data_received);
            if n.rt.link
                && env.now.saturating_sub(n.rt.link_ctime) > env.node_timeout
                && n.rt.ping_sent != 0
                && ping_delay > env.node_timeout / 2
                && data_delay > env.node_timeout / 2
            {
                let id = n.id.clone();
                st.nodes[j].rt.link = false;
                bus.free_node(&id);
                continue;
            }
            if n.rt.link
                && n.rt.ping_sent == 0
                && env.now.saturating_sub(n.rt.pong_received) > env.node_timeout / 2
            {
                send_ping(st, env, bus, j, false);
                continue;
            }
            if st.manual.end != 0
                && has(&st.nodes[0], NodeFlags::MASTER)
                && st.manual.replica.as_deref() == Some(n.id.as_str())
                && n.rt.link
            {
                send_ping(st, env, bus, j, false);
                continue;
            }
            let n = &st.nodes[j];
            if n.rt.ping_sent == 0 {
                continue;
            }
            let delay = ping_delay.min(data_delay);
            if delay > env.node_timeout && !has(n, NodeFlags::PFAIL) && !has(n, NodeFlags::FAIL) {
                tracing::info!("*** NODE {} possibly failing", n.id);
                set(&mut st.nodes[j], NodeFlags::PFAIL);
            }
        }
        // A replica whose primary's address is known replicates it.
        if me_slave
            && env.no_master_host
            && let Some(m) = st.my_master()
            && !st.nodes[m].ip.is_empty()
        {
            after.push(After::Follow(st.nodes[m].ip.clone(), st.nodes[m].port));
        }
        // Manual failover timeout, then the replica's part of it and of elections.
        if st.manual.end != 0 && st.manual.end < env.now {
            tracing::info!("Manual failover timed out.");
            reset_manual_failover(st, after);
        }
        if me_slave {
            if st.manual.end != 0
                && !st.manual.can_start
                && st.manual.master_offset == Some(env.my_offset)
            {
                st.manual.can_start = true;
                tracing::info!(
                    "All master replication stream processed, manual failover can start."
                );
            }
            handle_replica_failover(st, env, bus, after);
            if orphaned_masters > 0
                && max_replicas >= 2
                && my_master_ok_replicas == max_replicas
                && env.allow_replica_migration
            {
                migrate_to_orphan(st, env, max_replicas, after);
            }
        }
        connects
    })
    .unwrap_or_default()
}

/// How long a primary must stay orphaned before a replica migrates to it (cluster.h
/// `CLUSTER_SLAVE_MIGRATION_DELAY`).
const REPLICA_MIGRATION_DELAY_MS: u64 = 5000;

/// Replica migration (cluster.c `clusterHandleSlaveMigration`): when the cluster is ok
/// and my primary keeps more than `cluster-migration-barrier` working replicas without
/// me, the replica with the smallest id among those of the primaries with the most
/// working replicas moves to the first orphaned primary with slots, once that primary
/// has been orphaned for [`REPLICA_MIGRATION_DELAY_MS`].
fn migrate_to_orphan(
    st: &mut ClusterState,
    env: &Env,
    max_replicas: usize,
    after: &mut Vec<After>,
) {
    if !st.state_ok {
        return;
    }
    let Some(mine) = st.my_master() else { return };
    if working_replicas(st, mine) <= env.migration_barrier {
        return;
    }
    let mut candidate = 0usize;
    let mut target: Option<usize> = None;
    for j in 1..st.nodes.len() {
        let n = &st.nodes[j];
        let ok = if has(n, NodeFlags::MASTER) {
            working_replicas(st, j)
        } else {
            0
        };
        let orphaned = has(n, NodeFlags::MASTER)
            && !has(n, NodeFlags::FAIL)
            && has(n, NodeFlags::MIGRATE_TO)
            && ok == 0;
        if orphaned {
            if target.is_none() && st.num_slots(j) > 0 {
                target = Some(j);
            }
            if st.nodes[j].rt.orphaned_time == 0 {
                st.nodes[j].rt.orphaned_time = env.now;
            }
        } else {
            st.nodes[j].rt.orphaned_time = 0;
        }
        if has(&st.nodes[j], NodeFlags::MASTER) && ok == max_replicas {
            for r in st.replicas_of(j) {
                if st.nodes[r].id < st.nodes[candidate].id {
                    candidate = r;
                }
            }
        }
    }
    if let Some(t) = target
        && candidate == 0
        && env.now.saturating_sub(st.nodes[t].rt.orphaned_time) > REPLICA_MIGRATION_DELAY_MS
    {
        tracing::info!("Migrating to orphaned master {}", st.nodes[t].id);
        set_my_master(st, t, after);
    }
}

/// This replica's rank: how many other replicas of my primary have a greater offset
/// (cluster.c `clusterGetSlaveRank`).
fn replica_rank(st: &ClusterState, env: &Env) -> u64 {
    let Some(m) = st.my_master() else { return 0 };
    st.replicas_of(m)
        .into_iter()
        .filter(|&r| r != 0 && !has(&st.nodes[r], NodeFlags::NOFAILOVER))
        .filter(|&r| st.nodes[r].rt.repl_offset > env.my_offset)
        .count() as u64
}

/// A replica of a failed primary (or one in a manual failover) asks the primaries for
/// votes and, with a majority, takes its primary's slots (cluster.c
/// `clusterHandleSlaveFailover`).
fn handle_replica_failover(
    st: &mut ClusterState,
    env: &Env,
    bus: &mut Bus,
    after: &mut Vec<After>,
) {
    let quorum = st.size() / 2 + 1;
    let manual = st.manual.end != 0 && st.manual.can_start;
    let auth_timeout = (env.node_timeout * 2).max(2000);
    let auth_retry = auth_timeout * 2;
    let Some(m) = st.my_master() else { return };
    if !has(&st.nodes[0], NodeFlags::SLAVE)
        || (!has(&st.nodes[m], NodeFlags::FAIL) && !manual)
        || (env.no_failover && !manual)
        || st.num_slots(m) == 0
    {
        return;
    }
    if env.sync_fenced && !manual {
        if env.now.saturating_sub(st.election.sync_fence_logged) >= 5000 {
            st.election.sync_fence_logged = env.now;
            tracing::warn!(
                "Not standing for election: this replica is not in its primary's sync set (min-sync-replicas) and may lack acknowledged writes"
            );
        }
        return;
    }
    // Data too old (the link to the primary was down too long) forbids an automatic
    // failover.
    let mut data_age = env.data_age;
    if data_age > env.node_timeout {
        data_age -= env.node_timeout;
    }
    if env.validity_factor != 0
        && data_age > env.repl_ping_period * 1000 + env.node_timeout * env.validity_factor
        && !manual
        && env.master_link_down
    {
        return;
    }
    if env.now.saturating_sub(st.election.auth_time) > auth_retry || st.election.auth_time == 0 {
        let rank = replica_rank(st, env);
        st.election.auth_time = env.now + 500 + random(bus) % 500 + rank * 1000;
        st.election.auth_count = 0;
        st.election.auth_sent = false;
        st.election.auth_rank = rank;
        if manual {
            st.election.auth_time = env.now;
            st.election.auth_rank = 0;
        }
        tracing::info!(
            "Start of election delayed for {} milliseconds (rank #{}, offset {}).",
            st.election.auth_time.saturating_sub(env.now),
            st.election.auth_rank,
            env.my_offset
        );
        broadcast_pong(st, env, bus, true);
        return;
    }
    if !st.election.auth_sent && !manual {
        let rank = replica_rank(st, env);
        if rank > st.election.auth_rank {
            st.election.auth_time += (rank - st.election.auth_rank) * 1000;
            st.election.auth_rank = rank;
        }
    }
    if env.now < st.election.auth_time {
        return;
    }
    if env.now - st.election.auth_time > auth_timeout {
        return;
    }
    if !st.election.auth_sent {
        st.current_epoch += 1;
        st.election.auth_epoch = st.current_epoch;
        st.election.auth_sent = true;
        tracing::info!(
            "Starting a failover election for epoch {}.",
            st.current_epoch
        );
        let mut h = header(st, env);
        if manual {
            h.mflags[0] |= MFLAG0_FORCEACK;
        }
        let frame = encode(h, Body::FailoverAuthRequest);
        let targets: Vec<String> = st
            .nodes
            .iter()
            .skip(1)
            .filter(|n| !has(n, NodeFlags::HANDSHAKE))
            .map(|n| n.id.clone())
            .collect();
        for id in targets {
            if bus.send(&id, frame.clone()) {
                count_sent(st, 5);
            }
        }
        return;
    }
    if st.election.auth_count >= quorum {
        tracing::info!("Failover election won: I'm the new master.");
        if st.nodes[0].config_epoch < st.election.auth_epoch {
            st.nodes[0].config_epoch = st.election.auth_epoch;
        }
        replace_my_master(st, env, bus, after);
    }
}

/// Takes my primary's slots and becomes a primary (cluster.c
/// `clusterFailoverReplaceYourMaster`), then tells everybody.
fn replace_my_master(st: &mut ClusterState, env: &Env, bus: &mut Bus, after: &mut Vec<After>) {
    let Some(old) = st.my_master() else { return };
    set_node_as_master(st, 0);
    after.push(After::Promote);
    st.owner.reassign(old, Some(0));
    st.refresh_state(env.full_coverage);
    broadcast_pong(st, env, bus, false);
    reset_manual_failover(st, after);
    st.election = Default::default();
}
