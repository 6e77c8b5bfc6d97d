//! CLUSTER, READONLY, READWRITE, ASKING and RESTORE-ASKING as a Redis node started with
//! `cluster-enabled no` answers them: the cluster commands exist (so the command table,
//! `COMMAND INFO/DOCS`, ACL categories and the script rules know them) and each answers
//! `-ERR This instance has cluster support disabled`, which is how clients tell a
//! standalone node from a cluster member. RESTORE-ASKING is RESTORE there.
//!
//! The summaries, arities and flags are Redis's command table (its `commands/*.json`);
//! Redis's `NO_ASYNC_LOADING` and `ASKING` flags are not modelled here (no command of
//! this server has them).
//!
//! Cluster mode itself (the bus, slots, redirections) is the `cluster` layer's work; these
//! rows are the standalone node's.

use super::{CommandSpec, Family, flags::*};
use crate::cluster::nodes_conf::NodeFlags;
use crate::cluster::slots::{CLUSTER_SLOTS, key_hash_slot};
use crate::core::Ctx;
use crate::core::cluster::{BusRequest, ClusterState, MESSAGE_TYPE_NAMES, Node};
use crate::error::ReplyError;

/// What every cluster command answers on a standalone node (Redis's text).
const DISABLED: &str = "ERR This instance has cluster support disabled";

/// Redis 7.0's CLUSTER HELP lines (the reply text, which clients may show).
const HELP: &[&str] = &[
    "ADDSLOTS <slot> [<slot> ...]",
    "    Assign slots to current node.",
    "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Assign slots which are between <start-slot> and <end-slot> to current node.",
    "BUMPEPOCH",
    "    Advance the cluster config epoch.",
    "COUNT-FAILURE-REPORTS <node-id>",
    "    Return number of failure reports for <node-id>.",
    "COUNTKEYSINSLOT <slot>",
    "    Return the number of keys in <slot>.",
    "DELSLOTS <slot> [<slot> ...]",
    "    Delete slots information from current node.",
    "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
    "FAILOVER [FORCE|TAKEOVER]",
    "    Promote current replica node to being a master.",
    "FORGET <node-id>",
    "    Remove a node from the cluster.",
    "GETKEYSINSLOT <slot> <count>",
    "    Return key names stored by current node in a slot.",
    "FLUSHSLOTS",
    "    Delete current node own slots information.",
    "INFO",
    "    Return information about the cluster.",
    "KEYSLOT <key>",
    "    Return the hash slot for <key>.",
    "MEET <ip> <port> [<bus-port>]",
    "    Connect nodes into a working cluster.",
    "MYID",
    "    Return the node id.",
    "NODES",
    "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
    "REPLICATE <node-id>",
    "    Configure current node as replica to <node-id>.",
    "RESET [HARD|SOFT]",
    "    Reset current node (default: soft).",
    "SET-CONFIG-EPOCH <epoch>",
    "    Set config epoch of current node.",
    "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
    "    Set slot state.",
    "REPLICAS <node-id>",
    "    Return <node-id> replicas.",
    "SAVECONFIG",
    "    Force saving cluster configuration on disk.",
    "SLOTS",
    "    Return information about slots range mappings. Each range is made of:",
    "    start, end, master and replicas IP addresses, ports and ids",
    "SHARDS",
    "    Return information about slot range mappings and the nodes associated with them.",
    "LINKS",
    "    Return information about all network links between this node and its peers.",
    "    Output format is an array where each array element is a map containing attributes of a link",
];

/// The state, or the disabled answer on a standalone node.
fn state<'a>(ctx: &'a mut Ctx<'_>) -> Result<&'a mut ClusterState, ReplyError> {
    ctx.core
        .cluster
        .as_deref_mut()
        .ok_or(ReplyError::msg(DISABLED))
}

/// The disabled answer on a standalone node.
fn enabled(ctx: &Ctx<'_>) -> Result<(), ReplyError> {
    match ctx.core.cluster {
        Some(_) => Ok(()),
        None => Err(ReplyError::msg(DISABLED)),
    }
}

fn saved(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    ctx.core.cluster_changed();
    Ok(())
}

/// A slot argument (cluster.c `getSlotOrReply`).
fn slot_arg(arg: &[u8]) -> Result<u16, ReplyError> {
    crate::stream::id::string2ll(arg)
        .filter(|&s| (0..CLUSTER_SLOTS as i64).contains(&s))
        .map(|s| s as u16)
        .ok_or(ReplyError::msg("ERR Invalid or out of range slot"))
}

/// CLUSTER HELP: Returns helpful text about the different subcommands.
fn cluster_help(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    ctx.out.array(HELP.len() + 1);
    ctx.out
        .simple(b"CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
    for l in HELP {
        ctx.out.simple(l.as_bytes());
    }
    // Redis's last HELP lines are part of the table.
    Ok(())
}

/// CLUSTER MYID: Returns the ID of a node.
fn cluster_myid(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    let id = state(ctx)?.my_id().to_string();
    ctx.out.bulk(id.as_bytes());
    Ok(())
}

/// CLUSTER MYSHARDID: Returns the shard ID of a node.
fn cluster_myshardid(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    let id = state(ctx)?.shard_id.clone();
    ctx.out.bulk(id.as_bytes());
    Ok(())
}

/// CLUSTER INFO: Returns information about the state of a node.
fn cluster_info(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    let text = info_text(ctx);
    ctx.out.verbatim(text.as_bytes());
    Ok(())
}

/// CLUSTER NODES: Returns the cluster configuration for a node.
fn cluster_nodes(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    let text = nodes_text(ctx);
    ctx.out.verbatim(text.as_bytes());
    Ok(())
}

/// CLUSTER SLOTS: Returns the mapping of cluster slots to nodes.
fn cluster_slots(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    slots_reply(ctx);
    Ok(())
}

/// CLUSTER SHARDS: Returns the mapping of cluster slots to shards.
fn cluster_shards(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    shards_reply(ctx);
    Ok(())
}

/// CLUSTER KEYSLOT: Returns the hash slot for a key.
fn cluster_keyslot(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    let slot = key_hash_slot(ctx.arg(2));
    ctx.out.integer(i64::from(slot));
    Ok(())
}

/// CLUSTER COUNTKEYSINSLOT: Returns the number of keys in a hash slot.
fn cluster_countkeysinslot(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    let slot = super::parse_i64(ctx.arg(2))?;
    if !(0..CLUSTER_SLOTS as i64).contains(&slot) {
        return Err(ReplyError::msg("ERR Invalid slot"));
    }
    let n = ctx.core.count_keys_in_slot(slot as u16);
    ctx.out.integer(n as i64);
    Ok(())
}

/// CLUSTER SLOT-STATS SLOTSRANGE start end | ORDERBY metric [LIMIT n] [ASC | DESC]
/// (Redis 8.2): per-slot usage of the slots this node's shard serves (its primary's when
/// it is a replica). Each entry is `[slot, {key-count: n}]`, and with
/// `cluster-slot-stats-enabled` also `cpu-usec`, `network-bytes-in` and
/// `network-bytes-out` (`cluster/slot_stats.rs`). SLOTSRANGE answers in slot order;
/// ORDERBY by the metric (DESC by default), ties by ascending slot, at most LIMIT
/// (1..=16384) entries.
fn cluster_slot_stats(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    use crate::cluster::slot_stats::Metric;
    enabled(ctx)?;
    let argv = ctx.argv;
    let detailed = ctx.core.slot_stats_enabled;
    let shard = {
        let st = state(ctx)?;
        st.my_master().unwrap_or(0)
    };
    let owned = |ctx: &Ctx<'_>, slot: u16| {
        ctx.core
            .cluster
            .as_deref()
            .is_some_and(|st| st.owner.get(usize::from(slot)) == Some(shard))
    };
    let sub = &argv[2];
    let slots: Vec<u16> = if argv.len() == 5 && sub.eq_ignore_ascii_case(b"slotsrange") {
        let start = slot_arg(&argv[3])?;
        let end = slot_arg(&argv[4])?;
        if start > end {
            return Err(ReplyError::owned(format!(
                "ERR Start slot number {start} is greater than end slot number {end}"
            )));
        }
        (start..=end).filter(|&s| owned(ctx, s)).collect()
    } else if argv.len() >= 4 && sub.eq_ignore_ascii_case(b"orderby") {
        let metric = match Metric::named(&argv[3]) {
            Some(Metric::KeyCount) => Metric::KeyCount,
            Some(m) if detailed => m,
            _ => {
                return Err(ReplyError::msg("ERR Unrecognized sort metric for ORDERBY."));
            }
        };
        let (mut limit, mut desc) = (CLUSTER_SLOTS, true);
        let (mut limits, mut orders) = (0, 0);
        let mut i = 4;
        while i < argv.len() {
            let word = &argv[i];
            if word.eq_ignore_ascii_case(b"limit") && i + 1 < argv.len() {
                limit = crate::stream::id::string2ll(&argv[i + 1])
                    .filter(|n| (1..=CLUSTER_SLOTS as i64).contains(n))
                    .map(|n| n as usize)
                    .ok_or(ReplyError::msg(
                        "ERR Limit has to lie in between 1 and 16384 (maximum number of slots).",
                    ))?;
                limits += 1;
                i += 1;
            } else if word.eq_ignore_ascii_case(b"asc") {
                desc = false;
                orders += 1;
            } else if word.eq_ignore_ascii_case(b"desc") {
                desc = true;
                orders += 1;
            } else {
                return Err(ReplyError::Syntax);
            }
            if limits > 1 || orders > 1 {
                return Err(ReplyError::msg(
                    "ERR Multiple filters of the same type are disallowed.",
                ));
            }
            i += 1;
        }
        let mut ranked: Vec<(u64, u16)> = Vec::new();
        for slot in 0..CLUSTER_SLOTS as u16 {
            if owned(ctx, slot) {
                ranked.push((slot_metric(ctx, slot, metric), slot));
            }
        }
        ranked.sort_by(|a, b| {
            let by_metric = if desc { b.0.cmp(&a.0) } else { a.0.cmp(&b.0) };
            by_metric.then(a.1.cmp(&b.1))
        });
        ranked.truncate(limit);
        ranked.into_iter().map(|(_, slot)| slot).collect()
    } else {
        return Err(subcommand_error(ctx));
    };
    ctx.out.array(slots.len());
    for slot in slots {
        ctx.out.array(2);
        ctx.out.integer(i64::from(slot));
        let keys = slot_metric(ctx, slot, Metric::KeyCount);
        if detailed {
            ctx.out.map(4);
        } else {
            ctx.out.map(1);
        }
        ctx.out.bulk(b"key-count");
        ctx.out.integer(keys as i64);
        if detailed {
            for (name, metric) in [
                (&b"cpu-usec"[..], Metric::CpuUsec),
                (b"network-bytes-in", Metric::NetworkBytesIn),
                (b"network-bytes-out", Metric::NetworkBytesOut),
            ] {
                let value = slot_metric(ctx, slot, metric);
                ctx.out.bulk(name);
                ctx.out.integer(i64::try_from(value).unwrap_or(i64::MAX));
            }
        }
    }
    Ok(())
}

/// One SLOT-STATS metric of `slot`.
fn slot_metric(ctx: &mut Ctx<'_>, slot: u16, metric: crate::cluster::slot_stats::Metric) -> u64 {
    use crate::cluster::slot_stats::Metric;
    if metric == Metric::KeyCount {
        return ctx.core.count_keys_in_slot(slot) as u64;
    }
    let row = ctx
        .core
        .cluster
        .as_deref()
        .map(|st| st.slot_stats.get(slot))
        .unwrap_or_default();
    match metric {
        Metric::KeyCount => 0,
        Metric::CpuUsec => row.cpu_usec,
        Metric::NetworkBytesIn => row.net_in,
        Metric::NetworkBytesOut => row.net_out,
    }
}

/// CLUSTER GETKEYSINSLOT: Returns the key names in a hash slot.
fn cluster_getkeysinslot(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    let slot = super::parse_i64(ctx.arg(2))?;
    let max = super::parse_i64(ctx.arg(3))?;
    if !(0..CLUSTER_SLOTS as i64).contains(&slot) || max < 0 {
        return Err(ReplyError::msg("ERR Invalid slot or number of keys"));
    }
    let keys = ctx.core.keys_in_slot(slot as u16, max as usize);
    ctx.out.array(keys.len());
    for k in keys {
        ctx.out.bulk(&k);
    }
    Ok(())
}

/// CLUSTER ADDSLOTS / DELSLOTS (`del`): Assigns new hash slots to a node.
fn cluster_addslots_or_del(ctx: &mut Ctx<'_>, del: bool) -> Result<(), ReplyError> {
    enabled(ctx)?;
    let mut slots = Vec::new();
    for a in &ctx.argv[2..] {
        slots.push(slot_arg(a)?);
    }
    assign(ctx, &slots, del)
}

/// CLUSTER ADDSLOTS.
fn cluster_addslots(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    cluster_addslots_or_del(ctx, false)
}

/// CLUSTER DELSLOTS.
fn cluster_delslots(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    cluster_addslots_or_del(ctx, true)
}

/// CLUSTER ADDSLOTSRANGE / DELSLOTSRANGE (`del`): Assigns new hash slot ranges to a node.
fn cluster_addslotsrange_or_del(ctx: &mut Ctx<'_>, del: bool) -> Result<(), ReplyError> {
    enabled(ctx)?;
    if ctx.argv.len() % 2 == 1 {
        return Err(ReplyError::WrongArity(
            if del {
                "cluster|delslotsrange"
            } else {
                "cluster|addslotsrange"
            }
            .to_string(),
        ));
    }
    let mut slots = Vec::new();
    for pair in ctx.argv[2..].chunks_exact(2) {
        let start = slot_arg(&pair[0])?;
        let end = slot_arg(&pair[1])?;
        if start > end {
            return Err(ReplyError::owned(format!(
                "ERR start slot number {start} is greater than end slot number {end}"
            )));
        }
        slots.extend(start..=end);
    }
    assign(ctx, &slots, del)
}

/// CLUSTER ADDSLOTSRANGE.
fn cluster_addslotsrange(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    cluster_addslotsrange_or_del(ctx, false)
}

/// CLUSTER DELSLOTSRANGE.
fn cluster_delslotsrange(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    cluster_addslotsrange_or_del(ctx, true)
}

/// CLUSTER FLUSHSLOTS: Deletes all slots information from a node.
fn cluster_flushslots(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    if !ctx.core.dbs[0].keys.is_empty() {
        return Err(ReplyError::msg(
            "ERR DB must be empty to perform CLUSTER FLUSHSLOTS.",
        ));
    }
    let st = state(ctx)?;
    st.owner.reassign(0, None);
    st.slot_stats.reset_all();
    ctx.core.redirect_blocked_clients();
    ctx.out.ok();
    saved(ctx)
}

/// CLUSTER SAVECONFIG: Forces a node to save the cluster configuration to disk.
fn cluster_saveconfig(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    if let Err(e) = state(ctx)?.save() {
        return Err(ReplyError::owned(format!(
            "ERR error saving the cluster node config: {e}"
        )));
    }
    ctx.out.ok();
    Ok(())
}

/// CLUSTER SET-CONFIG-EPOCH: Sets the configuration epoch for a new node.
fn cluster_set_config_epoch(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    let epoch = super::parse_i64(ctx.arg(2))?;
    let st = state(ctx)?;
    if epoch < 0 {
        return Err(ReplyError::owned(format!(
            "ERR Invalid config epoch specified: {epoch}"
        )));
    } else if st.nodes.len() > 1 {
        return Err(ReplyError::msg(
            "ERR The user can assign a config epoch only when the node does not know any other node.",
        ));
    } else if st.nodes[0].config_epoch != 0 {
        return Err(ReplyError::msg("ERR Node config epoch is already non-zero"));
    }
    st.nodes[0].config_epoch = epoch as u64;
    st.current_epoch = st.current_epoch.max(epoch as u64);
    ctx.out.ok();
    saved(ctx)
}

/// CLUSTER BUMPEPOCH: Advances the cluster config epoch.
fn cluster_bumpepoch(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    let st = state(ctx)?;
    let bumped = bump_epoch(st);
    let epoch = st.nodes[0].config_epoch;
    let word = if bumped { "BUMPED" } else { "STILL" };
    ctx.out.simple(format!("{word} {epoch}").as_bytes());
    saved(ctx)
}

/// CLUSTER RESET: Resets a node.
fn cluster_reset(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    let hard = match ctx.argv.len() {
        2 => false,
        3 if super::is(ctx.arg(2), "hard") => true,
        3 if super::is(ctx.arg(2), "soft") => false,
        3 => return Err(ReplyError::Syntax),
        _ => return Err(subcommand_error(ctx)),
    };
    let db = ctx.client.db;
    let replica = state(ctx)?.nodes[0].flags.contains(NodeFlags::SLAVE);
    if !replica && !ctx.core.dbs[db].keys.is_empty() {
        return Err(ReplyError::msg(
            "ERR CLUSTER RESET can't be called with master nodes containing keys",
        ));
    }
    if replica {
        // clusterReset: a replica turns into a primary and drops its data.
        {
            let me = &mut state(ctx)?.nodes[0];
            me.flags.0 &= !NodeFlags::SLAVE;
            me.flags.0 |= NodeFlags::MASTER;
            me.master = None;
        }
        ctx.core.become_primary();
        for db in 0..ctx.core.dbs.len() {
            super::server::flush_db(ctx, db, false);
        }
        ctx.core.dirty += 1;
        ctx.propagate(&["FLUSHALL"]);
    }
    let st = state(ctx)?;
    // clusterReset: forget every slot and every other node, close open slots,
    // end a manual failover; a hard reset also takes a new id and zeroes the
    // epochs.
    let manual_failover = st.manual.end != 0;
    st.manual = Default::default();
    st.owner.clear();
    st.slot_stats.reset_all();
    st.migrating.clear();
    st.importing.clear();
    st.nodes.truncate(1);
    if hard {
        st.current_epoch = 0;
        st.last_vote_epoch = 0;
        st.nodes[0].config_epoch = 0;
        st.nodes[0].id = crate::core::cluster::random_node_id();
    }
    // A primary paused for a manual failover takes writes again
    // (resetManualFailover).
    if manual_failover && ctx.core.repl.pause_writes {
        ctx.core.repl.pause_writes = false;
        ctx.core.resume_paused();
    }
    ctx.core.redirect_blocked_clients();
    ctx.out.ok();
    saved(ctx)
}

/// CLUSTER COUNT-FAILURE-REPORTS: Returns the number of active failure reports active for a node.
fn cluster_count_failure_reports(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    let id = String::from_utf8_lossy(ctx.arg(2)).into_owned();
    let now = ctx.now_ms;
    let timeout = ctx.core.config.get_i64("cluster-node-timeout").max(1) as u64;
    let st = state(ctx)?;
    let Some(i) = st.lookup(&id) else {
        return Err(ReplyError::owned(format!("ERR Unknown node {id}")));
    };
    let n = st.failure_reports(i, now, timeout * 2);
    ctx.out.integer(n as i64);
    Ok(())
}

/// CLUSTER LINKS: Returns a list of all TCP links to and from peer nodes.
fn cluster_links(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    // clusterCommand "links" (addReplyClusterLinksDescription): every other
    // node's outbound link ("to") and the inbound one it uses ("from"). Our
    // frames go straight to the link's writer, so nothing waits in a send
    // buffer of ours: both buffer fields are 0.
    let st = state(ctx)?;
    let mut links: Vec<(&'static str, String, u64)> = Vec::new();
    for n in st.nodes.iter().skip(1) {
        if n.rt.link {
            links.push(("to", n.id.clone(), n.rt.link_ctime));
        }
        if let Some((_, since)) = n.rt.inbound {
            links.push(("from", n.id.clone(), since));
        }
    }
    ctx.out.array(links.len());
    for (direction, node, since) in links {
        ctx.out.map(6);
        ctx.out.bulk(b"direction");
        ctx.out.bulk(direction.as_bytes());
        ctx.out.bulk(b"node");
        ctx.out.bulk(node.as_bytes());
        ctx.out.bulk(b"create-time");
        ctx.out.integer(since as i64);
        ctx.out.bulk(b"events");
        ctx.out.bulk(b"r");
        ctx.out.bulk(b"send-buffer-allocated");
        ctx.out.integer(0);
        ctx.out.bulk(b"send-buffer-used");
        ctx.out.integer(0);
    }
    Ok(())
}

/// CLUSTER FORGET: Removes a node from the nodes table.
fn cluster_forget(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    let id = String::from_utf8_lossy(ctx.arg(2)).into_owned();
    let now = ctx.now_ms;
    let st = state(ctx)?;
    match st.lookup(&id) {
        None => Err(ReplyError::owned(format!("ERR Unknown node {id}"))),
        Some(0) => Err(ReplyError::msg(
            "ERR I tried hard but I can't forget myself...",
        )),
        Some(i) => {
            if st.nodes[0].master.as_deref() == Some(id.as_str()) {
                return Err(ReplyError::msg("ERR Can't forget my master!"));
            }
            st.del_node(i);
            st.blacklist
                .insert(id, now + crate::core::cluster::BLACKLIST_TTL_MS);
            ctx.out.ok();
            saved(ctx)
        }
    }
}

/// CLUSTER REPLICATE: Configure a node as replica of a master node.
fn cluster_replicate(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    let id = String::from_utf8_lossy(ctx.arg(2)).into_owned();
    let keys = !ctx.core.dbs[0].keys.is_empty();
    let st = state(ctx)?;
    match st.lookup(&id) {
        None => Err(ReplyError::owned(format!("ERR Unknown node {id}"))),
        Some(0) => Err(ReplyError::msg("ERR Can't replicate myself")),
        Some(i) if !st.nodes[i].flags.contains(NodeFlags::MASTER) => Err(ReplyError::msg(
            "ERR I can only replicate a master, not a replica.",
        )),
        Some(_)
            if st.nodes[0].flags.contains(NodeFlags::MASTER)
                && (st.owner.serves_any(0) || keys) =>
        {
            Err(ReplyError::msg(
                "ERR To set a master the node must be empty and without assigned slots.",
            ))
        }
        Some(i) => {
            // clusterSetMaster: a primary gives up its open slots and becomes a
            // replica; the replication link follows the new primary.
            let me = &mut st.nodes[0];
            me.flags.0 &= !(NodeFlags::MASTER | NodeFlags::MIGRATE_TO);
            me.flags.0 |= NodeFlags::SLAVE;
            me.master = Some(id);
            st.migrating.clear();
            st.importing.clear();
            st.manual = Default::default();
            let (ip, port) = (st.nodes[i].ip.clone(), st.nodes[i].port);
            st.requests.push(BusRequest::BroadcastPong);
            st.wake.notify_one();
            if !ip.is_empty() {
                super::replication::follow(ctx.core, ip, port);
            }
            ctx.out.ok();
            saved(ctx)
        }
    }
}

/// CLUSTER REPLICAS (and SLAVES): Lists the replica nodes of a master node.
fn cluster_replicas(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    let id = String::from_utf8_lossy(ctx.arg(2)).into_owned();
    let st = state(ctx)?;
    match st.lookup(&id) {
        None => Err(ReplyError::owned(format!("ERR Unknown node {id}"))),
        Some(i) if !st.nodes[i].flags.contains(NodeFlags::MASTER) => {
            Err(ReplyError::msg("ERR The specified node is not a master"))
        }
        Some(i) => {
            let text: Vec<String> = st
                .replicas_of(i)
                .into_iter()
                .map(|r| {
                    let mut line = String::new();
                    st.to_conf().nodes[r].write(&mut line);
                    line
                })
                .collect();
            ctx.out.array(text.len());
            for t in text {
                ctx.out.bulk(t.as_bytes());
            }
            Ok(())
        }
    }
}

/// CLUSTER FAILOVER: Forces a replica to perform a manual failover of its master.
fn cluster_failover(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    match ctx.argv.len() {
        2 => {}
        3 if super::is(ctx.arg(2), "force") || super::is(ctx.arg(2), "takeover") => {}
        _ => return Err(ReplyError::Syntax),
    }
    let force = ctx.argv.len() == 3 && super::is(ctx.arg(2), "force");
    let takeover = ctx.argv.len() == 3 && super::is(ctx.arg(2), "takeover");
    // FORCE and TAKEOVER promote without the primary's data: only a member of its
    // sync set may (a plain, coordinated failover first catches up with the primary).
    if (force || takeover) && ctx.core.sync_refuses_promotion() {
        return Err(ReplyError::msg(
            "ERR this replica is not in its primary's sync set (min-sync-replicas): CLUSTER FAILOVER FORCE or TAKEOVER could lose acknowledged writes",
        ));
    }
    let now = ctx.now_ms;
    let st = state(ctx)?;
    if st.nodes[0].flags.contains(NodeFlags::MASTER) {
        return Err(ReplyError::msg(
            "ERR You should send CLUSTER FAILOVER to a replica",
        ));
    }
    let Some(m) = st.my_master() else {
        return Err(ReplyError::msg(
            "ERR I'm a replica but my master is unknown to me",
        ));
    };
    if !force && !takeover && (st.nodes[m].flags.contains(NodeFlags::FAIL) || !st.nodes[m].rt.link)
    {
        return Err(ReplyError::msg(
            "ERR Master is down or failed, please use CLUSTER FAILOVER FORCE",
        ));
    }
    // clusterCommand "failover": a manual failover of MF_TIMEOUT.
    st.manual = Default::default();
    st.manual.end = now + crate::core::cluster::MF_TIMEOUT_MS;
    if takeover {
        st.requests.push(BusRequest::Takeover);
    } else if force {
        st.manual.can_start = true;
    } else {
        st.requests.push(BusRequest::MfStart);
    }
    st.wake.notify_one();
    ctx.out.ok();
    Ok(())
}

/// CLUSTER MEET ip port [cport]: the bus starts a handshake (cluster.c `clusterCommand`
/// "meet" → `clusterStartHandshake`).
fn meet(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    if ctx.argv.len() != 4 && ctx.argv.len() != 5 {
        return Err(subcommand_error(ctx));
    }
    let ip = String::from_utf8_lossy(ctx.arg(2)).into_owned();
    let port = super::parse_i64(ctx.arg(3)).map_err(|_| {
        ReplyError::owned(format!(
            "ERR Invalid TCP base port specified: {}",
            String::from_utf8_lossy(ctx.arg(3))
        ))
    })?;
    let cport = match ctx.argv.get(4) {
        Some(a) => super::parse_i64(a).map_err(|_| {
            ReplyError::owned(format!(
                "ERR Invalid TCP bus port specified: {}",
                String::from_utf8_lossy(a)
            ))
        })?,
        None => port + 10000,
    };
    let valid = ip.parse::<std::net::IpAddr>().is_ok()
        && (1..=65535).contains(&port)
        && (1..=65535).contains(&cport);
    if !valid {
        return Err(ReplyError::owned(format!(
            "ERR Invalid node address specified: {ip}:{port}"
        )));
    }
    let st = state(ctx)?;
    st.requests.push(BusRequest::Meet {
        ip,
        port: port as u16,
        cport: cport as u16,
    });
    st.wake.notify_one();
    ctx.out.ok();
    Ok(())
}

fn subcommand_error(ctx: &Ctx<'_>) -> ReplyError {
    ReplyError::SubcommandSyntax {
        sub: String::from_utf8_lossy(ctx.arg(1)).into_owned(),
        container: "CLUSTER".into(),
    }
}

/// cluster.c `clusterBumpConfigEpochWithoutConsensus`: a new epoch unless mine is
/// already the greatest and non-zero.
fn bump_epoch(st: &mut ClusterState) -> bool {
    let max = st.max_epoch();
    let mine = st.nodes[0].config_epoch;
    if mine == 0 || mine != max {
        st.current_epoch += 1;
        st.nodes[0].config_epoch = st.current_epoch;
        true
    } else {
        false
    }
}

/// ADDSLOTS/DELSLOTS after the checks of `checkSlotAssignmentsOrReply`, all or nothing.
fn assign(ctx: &mut Ctx<'_>, slots: &[u16], del: bool) -> Result<(), ReplyError> {
    let st = state(ctx)?;
    let mut seen = vec![false; CLUSTER_SLOTS];
    for &slot in slots {
        let owned = st.owner.get(usize::from(slot)).is_some();
        if del && !owned {
            return Err(ReplyError::owned(format!(
                "ERR Slot {slot} is already unassigned"
            )));
        } else if !del && owned {
            return Err(ReplyError::owned(format!(
                "ERR Slot {slot} is already busy"
            )));
        }
        if std::mem::replace(&mut seen[usize::from(slot)], true) {
            return Err(ReplyError::owned(format!(
                "ERR Slot {slot} specified multiple times"
            )));
        }
    }
    for &slot in slots {
        let s = usize::from(slot);
        st.slot_stats.reset_slot(slot);
        if del {
            st.owner.set(s, None);
        } else {
            // Adding a slot closes its import (clusterUpdateSlots).
            st.importing.remove(&slot);
            st.owner.set(s, Some(0));
        }
    }
    if del {
        ctx.core.redirect_blocked_clients();
    }
    ctx.out.ok();
    saved(ctx)
}

/// CLUSTER SETSLOT <slot> IMPORTING|MIGRATING|STABLE|NODE (cluster.c `clusterCommand`).
fn setslot(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    let me_master = state(ctx)?.nodes[0].flags.contains(NodeFlags::MASTER);
    if !me_master {
        return Err(ReplyError::msg("ERR Please use SETSLOT only with masters."));
    }
    let slot = slot_arg(ctx.arg(2))?;
    let action = String::from_utf8_lossy(ctx.arg(3)).to_ascii_lowercase();
    let argc = ctx.argv.len();
    let id = ctx
        .argv
        .get(4)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .unwrap_or_default();
    let keys = ctx.core.count_keys_in_slot(slot);
    let st = state(ctx)?;
    let s = usize::from(slot);
    let target = st.lookup(&id);
    let is_master = |i: usize| st.nodes[i].flags.contains(NodeFlags::MASTER);
    match (action.as_str(), argc) {
        ("migrating", 5) => {
            if st.owner.get(s) != Some(0) {
                return Err(ReplyError::owned(format!(
                    "ERR I'm not the owner of hash slot {slot}"
                )));
            }
            let Some(t) = target else {
                return Err(ReplyError::owned(format!(
                    "ERR I don't know about node {id}"
                )));
            };
            if !is_master(t) {
                return Err(ReplyError::msg("ERR Target node is not a master"));
            }
            st.migrating.insert(slot, id);
        }
        ("importing", 5) => {
            if st.owner.get(s) == Some(0) {
                return Err(ReplyError::owned(format!(
                    "ERR I'm already the owner of hash slot {slot}"
                )));
            }
            let Some(t) = target else {
                return Err(ReplyError::owned(format!(
                    "ERR I don't know about node {id}"
                )));
            };
            if !is_master(t) {
                return Err(ReplyError::msg("ERR Target node is not a master"));
            }
            st.importing.insert(slot, id);
        }
        ("stable", 4) => {
            st.importing.remove(&slot);
            st.migrating.remove(&slot);
        }
        ("node", 5) => {
            let Some(t) = target else {
                return Err(ReplyError::owned(format!("ERR Unknown node {id}")));
            };
            if !is_master(t) {
                return Err(ReplyError::msg("ERR Target node is not a master"));
            }
            if st.owner.get(s) == Some(0) && t != 0 && keys != 0 {
                return Err(ReplyError::owned(format!(
                    "ERR Can't assign hashslot {slot} to a different node while I still hold keys for this hash slot."
                )));
            }
            if keys == 0 {
                st.migrating.remove(&slot);
            }
            if st.owner.get(s) != Some(t) {
                st.slot_stats.reset_slot(slot);
            }
            st.owner.set(s, Some(t));
            if t == 0 && st.importing.remove(&slot).is_some() {
                // A new epoch for the moved slot, told to every node at once (Redis's
                // `clusterBroadcastPong` after an import): waiting for the next ping
                // lets another node bump to the same epoch meanwhile, and the collision
                // is then settled against the slot's new owner.
                bump_epoch(st);
                st.requests.push(BusRequest::BroadcastPong);
                st.wake.notify_one();
            }
            ctx.core.redirect_blocked_clients();
        }
        _ => {
            return Err(ReplyError::msg(
                "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP",
            ));
        }
    }
    ctx.out.ok();
    saved(ctx)
}

/// The endpoint a node is named by (cluster.c `getPreferredEndpoint`).
fn endpoint(ctx: &Ctx<'_>, node: &Node) -> Option<String> {
    match ctx.core.config.get("cluster-preferred-endpoint-type") {
        Some("hostname") => Some(node.hostname.clone().unwrap_or_else(|| "?".into())),
        Some("unknown-endpoint") => None,
        _ => Some(node.ip.clone()),
    }
}

/// CLUSTER INFO's text (cluster.c `clusterGenClusterInfoString`).
fn info_text(ctx: &Ctx<'_>) -> String {
    let Some(st) = ctx.core.cluster.as_deref() else {
        return String::new();
    };
    let (mut assigned, mut ok, mut pfail, mut fail) = (0, 0, 0, 0);
    for o in st.owner.assigned() {
        assigned += 1;
        let f = st.nodes[o].flags;
        if f.contains(NodeFlags::FAIL) {
            fail += 1;
        } else if f.contains(NodeFlags::PFAIL) {
            pfail += 1;
        } else {
            ok += 1;
        }
    }
    let my_epoch = match st.my_master() {
        Some(m) if st.nodes[0].flags.contains(NodeFlags::SLAVE) => st.nodes[m].config_epoch,
        _ => st.nodes[0].config_epoch,
    };
    let mut out = format!(
        "cluster_state:{}\r\ncluster_slots_assigned:{assigned}\r\ncluster_slots_ok:{ok}\r\ncluster_slots_pfail:{pfail}\r\ncluster_slots_fail:{fail}\r\ncluster_known_nodes:{}\r\ncluster_size:{}\r\ncluster_current_epoch:{}\r\ncluster_my_epoch:{my_epoch}\r\n",
        if st.is_ok() { "ok" } else { "fail" },
        st.nodes.len(),
        st.size(),
        st.current_epoch,
    );
    for (dir, word) in [(0, "sent"), (1, "received")] {
        let mut total = 0;
        for (code, name) in MESSAGE_TYPE_NAMES.iter().enumerate() {
            let n = st.stats[dir][code];
            if n > 0 {
                out.push_str(&format!("cluster_stats_messages_{name}_{word}:{n}\r\n"));
                total += n;
            }
        }
        out.push_str(&format!("cluster_stats_messages_{word}:{total}\r\n"));
    }
    out.push_str("total_cluster_links_buffer_limit_exceeded:0\r\n");
    out
}

/// CLUSTER NODES's text: nodes.conf's lines without the vars line, with the
/// announced IP for myself.
fn nodes_text(ctx: &Ctx<'_>) -> String {
    let Some(st) = ctx.core.cluster.as_deref() else {
        return String::new();
    };
    let mut out = String::new();
    for (i, line) in st.to_conf().nodes.iter().enumerate() {
        let mut line = line.clone();
        if i == 0 {
            line.node.ip = my_ip(ctx, st);
        }
        line.write(&mut out);
        out.push('\n');
    }
    out
}

/// The IP this node gives for itself: `cluster-announce-ip`, else the one it knows.
fn my_ip(ctx: &Ctx<'_>, st: &ClusterState) -> String {
    match ctx.core.config.get("cluster-announce-ip") {
        Some(ip) if !ip.is_empty() => ip.to_string(),
        _ => st.nodes[0].ip.clone(),
    }
}

/// The table with myself's announced address applied.
fn nodes_view(ctx: &Ctx<'_>) -> Vec<Node> {
    let Some(st) = ctx.core.cluster.as_deref() else {
        return Vec::new();
    };
    let mut nodes = st.nodes.clone();
    nodes[0].ip = my_ip(ctx, st);
    if let Some(h) = ctx.core.config.get("cluster-announce-hostname")
        && !h.is_empty()
    {
        nodes[0].hostname = Some(h.to_string());
    }
    nodes
}

/// CLUSTER SLOTS (cluster.c `clusterReplyMultiBulkSlots`, `addNodeToNodeReply`).
fn slots_reply(ctx: &mut Ctx<'_>) {
    let nodes = nodes_view(ctx);
    let runs = match ctx.core.cluster.as_deref() {
        Some(st) => st.slot_runs(),
        None => return,
    };
    let kind = ctx
        .core
        .config
        .get("cluster-preferred-endpoint-type")
        .unwrap_or("ip")
        .to_string();
    // Each run names its primary, then its replicas that are not failing.
    let replicas: Vec<Vec<usize>> = match ctx.core.cluster.as_deref() {
        Some(st) => (0..nodes.len())
            .map(|i| {
                st.replicas_of(i)
                    .into_iter()
                    .filter(|&r| !nodes[r].flags.contains(NodeFlags::FAIL))
                    .collect()
            })
            .collect(),
        None => return,
    };
    ctx.out.array(runs.len());
    for (start, end, n) in runs {
        ctx.out.array(3 + replicas[n].len());
        ctx.out.integer(i64::from(start));
        ctx.out.integer(i64::from(end));
        for &shown in std::iter::once(&n).chain(replicas[n].iter()) {
            slot_node(ctx, &nodes[shown], &kind);
        }
    }
}

/// One node of a CLUSTER SLOTS run (cluster.c `addNodeToNodeReply`).
fn slot_node(ctx: &mut Ctx<'_>, node: &Node, kind: &str) {
    ctx.out.array(4);
    {
        match endpoint(ctx, node) {
            Some(e) => ctx.out.bulk(e.as_bytes()),
            None => ctx.out.null(),
        }
        ctx.out.integer(i64::from(node.port));
        ctx.out.bulk(node.id.as_bytes());
        let mut extra: Vec<(&str, String)> = Vec::new();
        if kind != "ip" {
            extra.push(("ip", node.ip.clone()));
        }
        if kind != "hostname"
            && let Some(h) = &node.hostname
        {
            extra.push(("hostname", h.clone()));
        }
        ctx.out.map(extra.len());
        for (k, v) in extra {
            ctx.out.bulk(k.as_bytes());
            ctx.out.bulk(v.as_bytes());
        }
    }
}

/// CLUSTER SHARDS (cluster.c `clusterReplyShards`, `addNodeDetailsToShardReply`): one
/// entry per primary, its slots and its nodes (the primary first, then its replicas).
fn shards_reply(ctx: &mut Ctx<'_>) {
    let nodes = nodes_view(ctx);
    let Some(st) = ctx.core.cluster.as_deref() else {
        return;
    };
    let ranges = st.slot_ranges_by_node();
    let my_offset = ctx.core.repl.offset as i64;
    let masters: Vec<(usize, Vec<usize>)> = (0..nodes.len())
        .filter(|&i| nodes[i].flags.contains(NodeFlags::MASTER))
        .map(|i| (i, st.replicas_of(i)))
        .collect();
    ctx.out.array(masters.len());
    for (i, replicas) in masters {
        ctx.out.map(2);
        ctx.out.bulk(b"slots");
        ctx.out.array(ranges[i].len() * 2);
        for &(a, b) in &ranges[i] {
            ctx.out.integer(i64::from(a));
            ctx.out.integer(i64::from(b));
        }
        ctx.out.bulk(b"nodes");
        ctx.out.array(1 + replicas.len());
        for n in std::iter::once(i).chain(replicas) {
            let node = &nodes[n];
            let offset = if n == 0 {
                my_offset
            } else {
                node.rt.repl_offset as i64
            };
            let replica = node.flags.contains(NodeFlags::SLAVE);
            let health = if node.flags.contains(NodeFlags::FAIL) {
                "fail"
            } else if replica && offset == 0 {
                "loading"
            } else {
                "online"
            };
            let mut fields: Vec<(&str, Option<String>, Option<i64>)> = vec![
                ("id", Some(node.id.clone()), None),
                ("port", None, Some(i64::from(node.port))),
                ("ip", Some(node.ip.clone()), None),
                (
                    "endpoint",
                    Some(endpoint(ctx, node).unwrap_or_else(|| "?".into())),
                    None,
                ),
            ];
            if let Some(h) = &node.hostname {
                fields.push(("hostname", Some(h.clone()), None));
            }
            let role = if replica { "replica" } else { "master" };
            fields.push(("role", Some(role.into()), None));
            fields.push(("replication-offset", None, Some(offset)));
            fields.push(("health", Some(health.into()), None));
            ctx.out.map(fields.len());
            for (k, text, int) in fields {
                ctx.out.bulk(k.as_bytes());
                match (text, int) {
                    (Some(t), _) => ctx.out.bulk(t.as_bytes()),
                    (None, Some(n)) => ctx.out.integer(n),
                    (None, None) => ctx.out.null(),
                }
            }
        }
    }
}

/// READONLY / READWRITE: the client flag that lets a replica serve reads.
fn readonly(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    ctx.client.cluster_readonly = super::is(ctx.arg(0), "readonly");
    ctx.out.ok();
    Ok(())
}

/// ASKING: the next command may touch an importing slot.
fn asking(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    enabled(ctx)?;
    ctx.client.asking = true;
    ctx.out.ok();
    Ok(())
}

/// The family of CLUSTER's subcommands.
const CLUSTER: Family = Family::new("cluster");

/// The flags Redis 7.0 gives the administrative subcommands that only look.
const CONFIGURE: u32 = ADMIN | STALE;
/// The flags Redis 7.0 gives the subcommands that change the cluster's configuration:
/// refused during an asynchronous load as well.
const RECONFIGURE: u32 = CONFIGURE | NO_ASYNC_LOADING;

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec::container(
        "cluster",
        "cluster",
        "A container for Redis Cluster commands.",
        "3.0.0",
        SUBCOMMANDS,
    ),
    CommandSpec {
        acl: &["@connection"],
        ..CommandSpec::new(
            "readonly",
            1,
            FAST | LOADING | STALE,
            "cluster",
            "Enables read-only queries for a connection to a Redis Cluster replica node.",
            "3.0.0",
            readonly,
        )
    },
    CommandSpec {
        acl: &["@connection"],
        ..CommandSpec::new(
            "readwrite",
            1,
            FAST | LOADING | STALE,
            "cluster",
            "Enables read-write queries for a connection to a Reids Cluster replica node.",
            "3.0.0",
            readonly,
        )
    },
    CommandSpec {
        acl: &["@connection"],
        ..CommandSpec::new(
            "asking",
            1,
            FAST,
            "cluster",
            "Signals that a cluster client is following an -ASK redirect.",
            "3.0.0",
            asking,
        )
    },
    CommandSpec {
        name: "restore-asking",
        summary: "An internal command for migrating keys in a cluster.",
        since: "3.0.0",
        group: "server",
        flags: super::dump::COMMANDS[super::dump::RESTORE_ROW].flags | super::flags::ASKING,
        ..super::dump::COMMANDS[super::dump::RESTORE_ROW]
    },
];

const SUBCOMMANDS: &[CommandSpec] = &[
    CLUSTER.row(
        "cluster|addslots",
        -3,
        RECONFIGURE,
        "Assigns new hash slots to a node.",
        "3.0.0",
        cluster_addslots,
    ),
    CLUSTER.row(
        "cluster|addslotsrange",
        -4,
        RECONFIGURE,
        "Assigns new hash slot ranges to a node.",
        "7.0.0",
        cluster_addslotsrange,
    ),
    CLUSTER.row(
        "cluster|bumpepoch",
        2,
        RECONFIGURE,
        "Advances the cluster config epoch.",
        "3.0.0",
        cluster_bumpepoch,
    ),
    CLUSTER.row(
        "cluster|count-failure-reports",
        3,
        CONFIGURE,
        "Returns the number of active failure reports active for a node.",
        "3.0.0",
        cluster_count_failure_reports,
    ),
    CLUSTER.row(
        "cluster|countkeysinslot",
        3,
        STALE,
        "Returns the number of keys in a hash slot.",
        "3.0.0",
        cluster_countkeysinslot,
    ),
    CLUSTER.row(
        "cluster|delslots",
        -3,
        RECONFIGURE,
        "Sets hash slots as unbound for a node.",
        "3.0.0",
        cluster_delslots,
    ),
    CLUSTER.row(
        "cluster|delslotsrange",
        -4,
        RECONFIGURE,
        "Sets hash slot ranges as unbound for a node.",
        "7.0.0",
        cluster_delslotsrange,
    ),
    CLUSTER.row(
        "cluster|failover",
        -2,
        RECONFIGURE,
        "Forces a replica to perform a manual failover of its master.",
        "3.0.0",
        cluster_failover,
    ),
    CLUSTER.row(
        "cluster|flushslots",
        2,
        RECONFIGURE,
        "Deletes all slots information from a node.",
        "3.0.0",
        cluster_flushslots,
    ),
    CLUSTER.row(
        "cluster|forget",
        3,
        RECONFIGURE,
        "Removes a node from the nodes table.",
        "3.0.0",
        cluster_forget,
    ),
    CLUSTER.row(
        "cluster|getkeysinslot",
        4,
        STALE,
        "Returns the key names in a hash slot.",
        "3.0.0",
        cluster_getkeysinslot,
    ),
    CLUSTER.row(
        "cluster|help",
        2,
        LOADING | STALE,
        "Returns helpful text about the different subcommands.",
        "5.0.0",
        cluster_help,
    ),
    CLUSTER.row(
        "cluster|info",
        2,
        STALE,
        "Returns information about the state of a node.",
        "3.0.0",
        cluster_info,
    ),
    CLUSTER.row(
        "cluster|keyslot",
        3,
        STALE,
        "Returns the hash slot for a key.",
        "3.0.0",
        cluster_keyslot,
    ),
    CLUSTER.row(
        "cluster|links",
        2,
        STALE,
        "Returns a list of all TCP links to and from peer nodes.",
        "7.0.0",
        cluster_links,
    ),
    CLUSTER.row(
        "cluster|meet",
        -4,
        RECONFIGURE,
        "Forces a node to handshake with another node.",
        "3.0.0",
        meet,
    ),
    CLUSTER.row(
        "cluster|myid",
        2,
        STALE,
        "Returns the ID of a node.",
        "3.0.0",
        cluster_myid,
    ),
    CLUSTER.row(
        "cluster|myshardid",
        2,
        STALE,
        "Returns the shard ID of a node.",
        "7.2.0",
        cluster_myshardid,
    ),
    CLUSTER.row(
        "cluster|nodes",
        2,
        STALE,
        "Returns the cluster configuration for a node.",
        "3.0.0",
        cluster_nodes,
    ),
    CLUSTER.row(
        "cluster|replicas",
        3,
        CONFIGURE,
        "Lists the replica nodes of a master node.",
        "5.0.0",
        cluster_replicas,
    ),
    CLUSTER.row(
        "cluster|replicate",
        3,
        RECONFIGURE,
        "Configure a node as replica of a master node.",
        "3.0.0",
        cluster_replicate,
    ),
    CLUSTER.row(
        "cluster|reset",
        -2,
        CONFIGURE | NOSCRIPT,
        "Resets a node.",
        "3.0.0",
        cluster_reset,
    ),
    CLUSTER.row(
        "cluster|saveconfig",
        2,
        RECONFIGURE,
        "Forces a node to save the cluster configuration to disk.",
        "3.0.0",
        cluster_saveconfig,
    ),
    CLUSTER.row(
        "cluster|set-config-epoch",
        3,
        RECONFIGURE,
        "Sets the configuration epoch for a new node.",
        "3.0.0",
        cluster_set_config_epoch,
    ),
    CLUSTER.row(
        "cluster|setslot",
        -4,
        RECONFIGURE,
        "Binds a hash slot to a node.",
        "3.0.0",
        setslot,
    ),
    CLUSTER.row(
        "cluster|shards",
        2,
        LOADING | STALE,
        "Returns the mapping of cluster slots to shards.",
        "7.0.0",
        cluster_shards,
    ),
    CLUSTER.row(
        "cluster|slaves",
        3,
        CONFIGURE,
        "Lists the replica nodes of a master node.",
        "3.0.0",
        cluster_replicas,
    ),
    CLUSTER.row(
        "cluster|slot-stats",
        -4,
        STALE | LOADING,
        "Return an array of slot usage statistics for slots assigned to the current node.",
        "8.2.0",
        cluster_slot_stats,
    ),
    CLUSTER.row(
        "cluster|slots",
        2,
        LOADING | STALE,
        "Returns the mapping of cluster slots to nodes.",
        "3.0.0",
        cluster_slots,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restore_asking_is_restore_with_asking() {
        let restore = &super::super::dump::COMMANDS[super::super::dump::RESTORE_ROW];
        assert_eq!(restore.name, "restore");
        let asking = COMMANDS
            .iter()
            .find(|c| c.name == "restore-asking")
            .expect("a row");
        // RESTORE's flags, and `asking` (served on an importing slot after ASKING).
        assert_eq!(
            (asking.arity, asking.flags),
            (restore.arity, restore.flags | ASKING)
        );
        assert_eq!(asking.key_flags, restore.key_flags);
    }

    #[test]
    fn subcommands_are_sorted_and_named_under_the_container() {
        let names: Vec<&str> = SUBCOMMANDS.iter().map(|c| c.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        assert!(names.iter().all(|n| n.starts_with("cluster|")));
    }
}
