//! The replication commands: REPLICAOF/SLAVEOF, REPLCONF, PSYNC/SYNC, WAIT, WAITAOF,
//! ROLE, and the text of INFO's `# Replication` section.
//!
//! They read and change the core's replication state (`core/replication.rs`); the
//! sockets behind it (streaming to a replica once PSYNC answered, the link to a
//! primary) belong to `replication/`, which notices what these handlers set: a client
//! marked [`ClientRepl::Replica`] is handed over to the sender when its batch ends, and
//! a REPLICAOF wakes the link task through `Replication::link_changed`.

use super::SERVER;
use super::{CommandSpec, Family, flags::*, parse_i64};
use crate::core::Ctx;
use crate::core::client::{BlockState, ClientRepl, ReplConf};
use crate::core::replication::{
    Failover, FailoverState, LinkState, ReplicaInfo, ReplicaState, Waiter,
};
use crate::core::{Core, unix_ms};
use crate::error::ReplyError;

/// WAIT and WAITAOF: Redis documents them under `generic`, in `@connection` (they wait
/// on what this connection wrote). (Redis 7.2+ also drops their `noscript` and marks
/// them `blocking`; streamd keeps refusing them in scripts, as Redis 7.0 does.)
const GENERIC_CONNECTION: Family = Family::new("generic").categories(&["@connection"]);

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    SERVER.row("replicaof", 3, ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING, "Configures a server as replica of another, or promotes it to a master.", "5.0.0", replicaof),
    SERVER.row("slaveof", 3, ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING, "Sets a Redis server as a replica of another, or promotes it to being a master.", "1.0.0", replicaof),
    SERVER.row("replconf", -1, ADMIN | NOSCRIPT | LOADING | STALE | ALLOW_BUSY, "An internal command for configuring the replication stream.", "3.0.0", replconf),
    SERVER.row("psync", -3, ADMIN | NOSCRIPT | NO_MULTI_QUEUE | NO_ASYNC_LOADING | NO_MULTI, "An internal command used in replication.", "2.8.0", psync),
    SERVER.row("sync", 1, ADMIN | NOSCRIPT | NO_MULTI_QUEUE | NO_ASYNC_LOADING | NO_MULTI, "An internal command used in replication.", "1.0.0", psync),
    GENERIC_CONNECTION.row("wait", 3, NOSCRIPT, "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.", "3.0.0", wait),
    GENERIC_CONNECTION.row("waitaof", 4, NOSCRIPT, "Blocks until all of the preceding write commands sent by the connection are written to the append-only file of the master and/or replicas.", "7.2.0", waitaof),
    SERVER.row("failover", -1, ADMIN | NOSCRIPT | STALE, "Starts a coordinated failover from a server to one of its replicas.", "6.2.0", failover),
    SERVER.row("role", 1, NOSCRIPT | LOADING | STALE | FAST, "Returns the replication role.", "2.8.12", role).categories(&["@admin", "@dangerous"]),
];

fn replicaof(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    // A cluster node's primary is chosen by the cluster (CLUSTER REPLICATE, failovers).
    if ctx.core.cluster.is_some() {
        return Err(ReplyError::msg(
            "ERR REPLICAOF not allowed in cluster mode.",
        ));
    }
    let host = ctx.arg(1).clone();
    let port = ctx.arg(2).clone();
    if host.eq_ignore_ascii_case(b"no") && port.eq_ignore_ascii_case(b"one") {
        // Outside its primary's sync set this replica may lack acknowledged writes
        // (core/syncrepl.rs): refusing here is the fence Sentinel cannot get around.
        if ctx.core.sync_refuses_promotion() {
            return Err(ReplyError::msg(
                "ERR this replica is not in its primary's sync set (min-sync-replicas): promoting it could lose acknowledged writes",
            ));
        }
        if ctx.core.repl.is_replica() {
            promote(ctx.core);
            tracing::info!(
                "MASTER MODE enabled (user request from 'id={} addr={}')",
                ctx.client.id,
                ctx.client.addr
            );
        }
        ctx.out.ok();
        return Ok(());
    }
    let port = parse_i64(&port)?;
    let port = u16::try_from(port).map_err(|_| ReplyError::msg("ERR Invalid master port"))?;
    let host = String::from_utf8_lossy(&host).into_owned();
    if ctx.core.config.get_bool("sentinel-rejoin")
        && ctx
            .core
            .repl
            .refuses_old_primary(&host, port, crate::core::unix_ms())
    {
        tracing::warn!(
            "REPLICAOF {host}:{port} refused: this server was promoted moments ago and replaced that primary, and no Sentinel names it under a newer configuration epoch (sentinel-rejoin; request from 'id={} addr={}')",
            ctx.client.id,
            ctx.client.addr
        );
        return Err(ReplyError::owned(format!(
            "ERR REPLICAOF refused: this server was promoted moments ago and replaced {host}:{port}, which no Sentinel names under a newer configuration epoch (sentinel-rejoin)"
        )));
    }
    if let Some(m) = &ctx.core.repl.master
        && m.host.eq_ignore_ascii_case(&host)
        && m.port == port
    {
        tracing::info!(
            "REPLICAOF would result into synchronization with the master we are already connected with. No operation performed."
        );
        ctx.out.simple(b"OK Already connected to specified master");
        return Ok(());
    }
    follow(ctx.core, host.clone(), port);
    tracing::info!(
        "REPLICAOF {host}:{port} enabled (user request from 'id={} addr={}')",
        ctx.client.id,
        ctx.client.addr
    );
    ctx.out.ok();
    Ok(())
}

/// Makes the server a replica of `host:port` ([`Core::follow_master`]).
pub fn follow(core: &mut Core, host: String, port: u16) {
    core.follow_master(host, port);
}

/// Makes a replica a primary ([`Core::become_primary`]).
pub fn promote(core: &mut Core) {
    core.become_primary();
}

fn replconf(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    if argv.len().is_multiple_of(2) {
        return Err(ReplyError::Syntax);
    }
    let mut reply = true;
    for pair in argv[1..].chunks(2) {
        let (opt, val) = (&pair[0], &pair[1]);
        let lower = opt.to_ascii_lowercase();
        match lower.as_slice() {
            b"listening-port" => {
                let p = parse_i64(val)?;
                conf(ctx).port = u16::try_from(p).unwrap_or(0);
            }
            b"ip-address" => {
                conf(ctx).ip = Some(String::from_utf8_lossy(val).into_owned());
            }
            b"capa" => {
                let c = conf(ctx);
                if val.eq_ignore_ascii_case(b"eof") {
                    c.capa_eof = true;
                } else if val.eq_ignore_ascii_case(b"psync2") {
                    c.capa_psync2 = true;
                } else if val.eq_ignore_ascii_case(b"streamd") {
                    c.native = true;
                }
            }
            b"ack" | b"fack" => {
                // REPLCONF ACK <offset> [FACK <offset>]: from a replica, no reply.
                reply = false;
                if ctx.client.repl != ClientRepl::Replica {
                    continue;
                }
                let Ok(off) = parse_i64(val) else { continue };
                let now = ctx.now_ms;
                if let Some(r) = ctx.core.repl.replicas.get_mut(&ctx.client.id) {
                    let off = off.max(0) as u64;
                    if lower == b"ack" {
                        r.ack = r.ack.max(off);
                        r.online_on_ack = false;
                    } else {
                        r.fack = r.fack.max(off);
                    }
                    r.ack_ms = now;
                }
                let id = ctx.client.id;
                ctx.core.sync_note_ack(id);
                ctx.core.serve_waiters(now);
            }
            b"getack" => {
                reply = false;
                if ctx.client.repl == ClientRepl::Master {
                    ctx.core.repl.ack_requested = true;
                }
            }
            b"sync-id" => {
                // A streamd replica's id in sync sets (core/syncrepl.rs).
                conf(ctx).sync_id = Some(String::from_utf8_lossy(val).into_owned());
            }
            b"rdb-only" | b"rdb-filter-only" => {}
            _ => {
                return Err(ReplyError::owned(format!(
                    "ERR Unrecognized REPLCONF option: {}",
                    String::from_utf8_lossy(opt)
                )));
            }
        }
    }
    if reply {
        ctx.out.ok();
    }
    Ok(())
}

/// The handshake settings of the calling client, created on first use.
fn conf<'a>(ctx: &'a mut Ctx<'_>) -> &'a mut ReplConf {
    ctx.client.repl_conf.get_or_insert_with(Default::default)
}

fn psync(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    if ctx.client.repl == ClientRepl::Replica {
        return Ok(());
    }
    // PSYNC <replid> <offset> FAILOVER: our primary hands over to us (its FAILOVER).
    if ctx.argv.len() > 3
        && ctx.arg(0).eq_ignore_ascii_case(b"psync")
        && ctx.arg(3).eq_ignore_ascii_case(b"failover")
    {
        if ctx.arg(1).as_ref() != ctx.core.repl.replid.as_bytes() {
            return Err(ReplyError::msg(
                "ERR PSYNC FAILOVER replid must match my replid.",
            ));
        }
        if ctx.core.repl.is_replica() {
            ctx.core.become_primary();
            tracing::info!(
                "MASTER MODE enabled (failover request from 'id={} addr={}')",
                ctx.client.id,
                ctx.client.addr
            );
        }
    }
    if let Some(m) = &ctx.core.repl.master
        && m.state != LinkState::Connected
    {
        return Err(ReplyError::msg(
            "NOMASTERLINK Can't SYNC while not connected with my master",
        ));
    }
    if ctx.client.multi.is_some() || ctx.client.in_exec {
        return Err(ReplyError::msg("ERR Replica can't be used inside MULTI"));
    }
    let is_psync = ctx.arg(0).eq_ignore_ascii_case(b"psync");
    let conf = *ctx.client.repl_conf.take().unwrap_or_default();
    let ip = conf.ip.clone().unwrap_or_else(|| {
        ctx.client
            .addr
            .rsplit_once(':')
            .map(|(ip, _)| ip.to_string())
            .unwrap_or_default()
    });
    let mut info = ReplicaInfo {
        ip,
        port: conf.port,
        state: ReplicaState::WaitBgsave,
        sent: 0,
        ack: 0,
        fack: 0,
        ack_ms: ctx.now_ms,
        native: conf.native,
        capa_eof: conf.capa_eof,
        capa_psync2: conf.capa_psync2,
        drop: None,
        old_sync: false,
        online_on_ack: false,
        sync_id: conf.sync_id.clone(),
        sync_seen: false,
    };
    let mut partial = false;
    if is_psync {
        let replid = String::from_utf8_lossy(ctx.arg(1)).into_owned();
        let offset = parse_i64(ctx.arg(2)).unwrap_or(-1);
        if ctx.core.repl.can_continue(&replid, offset) {
            partial = true;
            let from = (offset - 1).max(0) as u64;
            info.state = ReplicaState::Online;
            info.sent = from;
            info.ack = from;
            if conf.capa_psync2 {
                ctx.out
                    .simple(format!("CONTINUE {}", ctx.core.repl.replid).as_bytes());
            } else {
                ctx.out.simple(b"CONTINUE");
            }
            ctx.core.repl.stats.sync_partial_ok += 1;
            tracing::info!(
                replica = %format!("{}:{}", info.ip, info.port),
                "Partial resynchronization request accepted. Sending {} bytes of backlog starting from offset {offset}.",
                ctx.core.repl.offset.saturating_sub(from)
            );
        } else if replid != "?" {
            ctx.core.repl.stats.sync_partial_err += 1;
            tracing::info!(
                replica = %format!("{}:{}", info.ip, info.port),
                "Partial resynchronization not accepted (replid {replid}, offset {offset}); full resync"
            );
        } else {
            tracing::info!(
                replica = %format!("{}:{}", info.ip, info.port),
                "Replica asks for synchronization: full resync requested"
            );
        }
    }
    if !partial {
        ctx.core.repl.stats.sync_full += 1;
        // The snapshot is taken when the sender starts it; until then the backlog keeps
        // every byte from here.
        ctx.core.repl.ensure_backlog();
        info.sent = ctx.core.repl.offset;
        info.old_sync = !is_psync;
    }
    ctx.core.repl.replicas.insert(ctx.client.id, info);
    if partial {
        ctx.core.repl.set_online(ctx.client.id, ctx.now_ms);
    }
    ctx.client.repl = ClientRepl::Replica;
    Ok(())
}

fn failover(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    if argv.len() == 2 && argv[1].eq_ignore_ascii_case(b"abort") {
        if ctx.core.repl.failover.is_none() {
            return Err(ReplyError::msg("ERR No failover in progress."));
        }
        let was_in_progress = ctx
            .core
            .repl
            .failover
            .as_ref()
            .is_some_and(|f| f.state == FailoverState::InProgress);
        ctx.core.end_failover("Failover manually aborted");
        if was_in_progress {
            ctx.core.become_primary();
        }
        ctx.out.ok();
        return Ok(());
    }
    let (mut timeout, mut force, mut target) = (0i64, false, None::<(String, u16)>);
    let mut j = 1;
    while j < argv.len() {
        let a = &argv[j];
        if a.eq_ignore_ascii_case(b"timeout") && j + 1 < argv.len() && timeout == 0 {
            timeout = parse_i64(&argv[j + 1])?;
            if timeout <= 0 {
                return Err(ReplyError::msg(
                    "ERR FAILOVER timeout must be greater than 0",
                ));
            }
            j += 2;
        } else if a.eq_ignore_ascii_case(b"to") && j + 2 < argv.len() && target.is_none() {
            let port = parse_i64(&argv[j + 2])?;
            let host = String::from_utf8_lossy(&argv[j + 1]).into_owned();
            target = Some((host, u16::try_from(port).unwrap_or(0)));
            j += 3;
        } else if a.eq_ignore_ascii_case(b"force") && !force {
            force = true;
            j += 1;
        } else {
            return Err(ReplyError::Syntax);
        }
    }
    let core = &mut *ctx.core;
    if core.repl.failover.is_some() {
        return Err(ReplyError::msg("ERR FAILOVER already in progress."));
    }
    if core.repl.is_replica() {
        return Err(ReplyError::msg(
            "ERR FAILOVER is not valid when server is a replica.",
        ));
    }
    if core.repl.replicas.is_empty() {
        return Err(ReplyError::msg("ERR FAILOVER requires connected replicas."));
    }
    if force && (timeout == 0 || target.is_none()) {
        return Err(ReplyError::msg(
            "ERR FAILOVER with force option requires both a timeout and target HOST and IP.",
        ));
    }
    if let Some((host, port)) = &target {
        let Some(r) = core
            .repl
            .replicas
            .values()
            .find(|r| r.ip == *host && r.port == *port)
        else {
            return Err(ReplyError::msg(
                "ERR FAILOVER target HOST and PORT is not a replica.",
            ));
        };
        if r.state != ReplicaState::Online {
            return Err(ReplyError::msg(
                "ERR FAILOVER target replica is not online.",
            ));
        }
        tracing::info!("FAILOVER requested to {host}:{port}.");
    } else {
        tracing::info!("FAILOVER requested to any replica.");
    }
    core.repl.failover = Some(Failover {
        target,
        force,
        deadline_ms: (timeout > 0).then(|| ctx.now_ms.saturating_add(timeout as u64)),
        state: FailoverState::WaitingForSync,
        started_ms: 0,
    });
    ctx.out.ok();
    Ok(())
}

fn parse_timeout(arg: &[u8]) -> Result<u64, ReplyError> {
    let t = parse_i64(arg)
        .map_err(|_| ReplyError::msg("ERR timeout is not an integer or out of range"))?;
    if t < 0 {
        return Err(ReplyError::msg("ERR timeout is negative"));
    }
    Ok(t as u64)
}

fn wait(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    if ctx.core.repl.is_replica() {
        return Err(ReplyError::msg(
            "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.",
        ));
    }
    let n = parse_i64(ctx.arg(1))?;
    let timeout = parse_timeout(ctx.arg(2))?;
    block_for_replicas(ctx, n.max(0) as u64, None, timeout)
}

fn waitaof(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    if ctx.core.repl.is_replica() {
        return Err(ReplyError::msg(
            "ERR WAITAOF cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated.",
        ));
    }
    let local = parse_i64(ctx.arg(1))?;
    let n = parse_i64(ctx.arg(2))?;
    let timeout = parse_timeout(ctx.arg(3))?;
    if local < 0 || n < 0 {
        return Err(ReplyError::NotInteger);
    }
    if local > 0 && !ctx.core.persist.recording() {
        return Err(ReplyError::msg(
            "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.",
        ));
    }
    block_for_replicas(ctx, n as u64, Some(local as u64), timeout)
}

/// WAIT / WAITAOF: answers at once when enough replicas (and the local log) reached
/// the current offset or the client cannot block; otherwise blocks until
/// `Core::serve_waiters` answers.
fn block_for_replicas(
    ctx: &mut Ctx<'_>,
    n: u64,
    aof_local: Option<u64>,
    timeout_ms: u64,
) -> Result<(), ReplyError> {
    let offset = ctx.core.repl.wait_offset();
    if !ctx.core.repl.replicas.is_empty() {
        ctx.core.repl.wait_seen_ms = ctx.now_ms;
    }
    let replicas = match aof_local {
        None => ctx.core.repl.acked(offset),
        Some(_) => ctx.core.repl.facked(offset),
    };
    let local = u64::from(ctx.core.persist.recording() && ctx.core.repl.fsynced_offset >= offset);
    let done = replicas >= n && aof_local.is_none_or(|l| local >= l);
    if done || !ctx.can_block() {
        match aof_local {
            None => ctx.out.integer(replicas as i64),
            Some(_) => {
                ctx.out.array(2);
                ctx.out.integer(local as i64);
                ctx.out.integer(replicas as i64);
            }
        }
        return Ok(());
    }
    ctx.core.repl.waiters.push(Waiter {
        client_id: ctx.client.id,
        offset,
        replicas: n,
        aof_local,
        deadline_ms: (timeout_ms > 0).then(|| ctx.now_ms.saturating_add(timeout_ms)),
    });
    ctx.client.blocked = Some(BlockState::held(ctx.argv.clone(), ctx.client.db));
    if !ctx.core.repl.replicas.is_empty() && !ctx.core.repl.getack_pending {
        ctx.core.feed_getack();
    }
    Ok(())
}

fn role(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let core = &*ctx.core;
    let out = &mut *ctx.out;
    match &core.repl.master {
        None => {
            out.array(3);
            out.bulk(b"master");
            out.integer(core.repl.offset as i64);
            let replicas: Vec<&ReplicaInfo> = core
                .repl
                .replicas
                .values()
                .filter(|r| r.state == ReplicaState::Online)
                .collect();
            out.array(replicas.len());
            for r in replicas {
                out.array(3);
                out.bulk(r.ip.as_bytes());
                out.bulk(r.port.to_string().as_bytes());
                out.bulk(r.ack.to_string().as_bytes());
            }
        }
        Some(m) => {
            out.array(5);
            out.bulk(b"slave");
            out.bulk(m.host.as_bytes());
            out.integer(i64::from(m.port));
            let state: &[u8] = match m.state {
                LinkState::Connect => b"connect",
                LinkState::Connecting => b"connecting",
                LinkState::Sync => b"sync",
                LinkState::Connected => b"connected",
            };
            out.bulk(state);
            out.integer(if m.state == LinkState::Connected {
                core.repl.offset as i64
            } else {
                -1
            });
        }
    }
    Ok(())
}

/// The body of INFO's `# Replication` section, field for field as Redis 7.0 prints it.
pub fn info(core: &Core) -> String {
    use std::fmt::Write;
    let r = &core.repl;
    let now = unix_ms();
    let mut s = String::new();
    match &r.master {
        None => s.push_str("role:master\r\n"),
        Some(m) => {
            let up = m.state == LinkState::Connected;
            let _ = write!(
                s,
                "role:slave\r\nmaster_host:{}\r\nmaster_port:{}\r\nmaster_link_status:{}\r\nmaster_last_io_seconds_ago:{}\r\nmaster_sync_in_progress:{}\r\nslave_read_repl_offset:{}\r\nslave_repl_offset:{}\r\n",
                m.host,
                m.port,
                if up { "up" } else { "down" },
                if up {
                    (now.saturating_sub(m.last_io_ms) / 1000) as i64
                } else {
                    -1
                },
                u8::from(m.state == LinkState::Sync),
                r.offset,
                r.offset,
            );
            if m.state == LinkState::Sync {
                let total = m.sync_total;
                let left = if total >= 0 {
                    total - m.sync_read as i64
                } else {
                    0
                };
                let perc = if total > 0 {
                    m.sync_read as f64 * 100.0 / total as f64
                } else {
                    0.0
                };
                let _ = write!(
                    s,
                    "master_sync_total_bytes:{total}\r\nmaster_sync_read_bytes:{}\r\nmaster_sync_left_bytes:{left}\r\nmaster_sync_perc:{perc:.2}\r\nmaster_sync_last_io_seconds_ago:{}\r\n",
                    m.sync_read,
                    now.saturating_sub(m.last_io_ms) / 1000
                );
            }
            if !up {
                let _ = write!(
                    s,
                    "master_link_down_since_seconds:{}\r\n",
                    now.saturating_sub(m.down_since_ms) / 1000
                );
            }
            let _ = write!(
                s,
                "slave_priority:{}\r\nslave_read_only:{}\r\nreplica_announced:{}\r\n",
                // A replica that must not be promoted says so to Sentinel (advisory;
                // the refusal of REPLICAOF NO ONE is the fence).
                if core.sync.fenced(&r.replid) {
                    0
                } else {
                    core.config.get_i64("replica-priority")
                },
                u8::from(core.config.get_bool("replica-read-only")),
                u8::from(core.config.get_bool("replica-announced")),
            );
        }
    }
    let _ = write!(s, "connected_slaves:{}\r\n", r.replicas.len());
    let min = core.config.get_i64("min-replicas-to-write");
    if min > 0 && core.config.get_i64("min-replicas-max-lag") > 0 {
        let _ = write!(s, "min_slaves_good_slaves:{}\r\n", r.good_replicas);
    }
    if core.sync.on() {
        write_sync_fields(&mut s, core, now);
    }
    for (i, rep) in r.replicas.values().enumerate() {
        let _ = write!(
            s,
            "slave{i}:ip={},port={},state={},offset={},lag={}\r\n",
            rep.ip,
            rep.port,
            rep.state.name(),
            rep.ack,
            // Redis: the seconds since the last ACK once online, else 0.
            if rep.state == ReplicaState::Online {
                now.saturating_sub(rep.ack_ms) / 1000
            } else {
                0
            }
        );
    }
    let (active, first, histlen) = match &r.backlog {
        Some(b) => (1, b.start() + 1, b.histlen()),
        None => (0, 0, 0),
    };
    let _ = write!(
        s,
        "master_failover_state:{}\r\nmaster_replid:{}\r\nmaster_replid2:{}\r\nmaster_repl_offset:{}\r\nsecond_repl_offset:{}\r\nrepl_backlog_active:{active}\r\nrepl_backlog_size:{}\r\nrepl_backlog_first_byte_offset:{first}\r\nrepl_backlog_histlen:{histlen}\r\n",
        match r.failover.as_ref().map(|f| f.state) {
            None => "no-failover",
            Some(FailoverState::WaitingForSync) => "waiting-for-sync",
            Some(FailoverState::InProgress) => "failover-in-progress",
        },
        r.replid,
        r.replid2,
        r.offset,
        r.second_replid_offset,
        core.repl_backlog_size(),
    );
    if !r.unknown_from_master.is_empty() {
        let list: Vec<String> = r
            .unknown_from_master
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = write!(s, "master_skipped_commands:{}\r\n", list.join(","));
    }
    s
}

/// INFO replication's synchronous replication fields (`min-sync-replicas` above 0):
/// the set, what is held and for how long, what was refused (docs/replication.md).
fn write_sync_fields(s: &mut String, core: &Core, now: u64) {
    use std::fmt::Write as _;
    let sync = &core.sync;
    let member = if core.repl.is_replica() {
        u8::from(sync.is_member(&core.repl.replid))
    } else {
        0
    };
    let _ = write!(
        s,
        "sync_replicas_min:{}\r\nsync_replicas:{}\r\nsync_replica_member:{member}\r\nsync_released_offset:{}\r\nsync_held_replies:{}\r\nsync_oldest_held_ms:{}\r\nsync_held_total:{}\r\nsync_timeouts:{}\r\nsync_write_refusals:{}\r\nsync_promotion_refusals:{}\r\n",
        sync.min,
        sync.members.len(),
        sync.release().upto,
        sync.stats.held_now,
        sync.oldest_held_ms(now),
        sync.stats.held_total,
        sync.stats.timeouts,
        sync.stats.write_refusals.get(),
        sync.stats.promotion_refusals,
    );
    for (i, (id, m)) in sync.members.iter().enumerate() {
        let _ = write!(
            s,
            "sync_member{i}:id={id},addr={},ack={}\r\n",
            m.addr, m.ack
        );
    }
}
