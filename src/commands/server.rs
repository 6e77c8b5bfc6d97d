//! Server commands: INFO, CONFIG, COMMAND, TIME, DBSIZE, FLUSHDB, FLUSHALL, SWAPDB,
//! LASTSAVE, SAVE, BGSAVE, BGREWRITEAOF, FUNCTION FLUSH, DEBUG, MONITOR, SHUTDOWN.
//!
//! The persistence commands hand over to `persist/`; FLUSHDB, FLUSHALL and SWAPDB log
//! themselves verbatim.

use super::SERVER;
use super::{CommandSpec, flags::*, is, parse_i64};
use crate::core::{Core, Ctx, ShutdownKind, redis_version};
use crate::error::ReplyError;

const KEYSPACE: &[&str] = &["@keyspace"];

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    SERVER
        .row(
            "info",
            -1,
            LOADING | STALE,
            "Returns information and statistics about the server.",
            "1.0.0",
            info,
        )
        .categories(&["@dangerous"]),
    SERVER.row(
        "lolwut",
        -1,
        READONLY | FAST,
        "Displays computer art and the Redis version",
        "5.0.0",
        lolwut,
    ),
    SERVER.row(
        "time",
        1,
        FAST | LOADING | STALE,
        "Returns the server time.",
        "2.6.0",
        time,
    ),
    SERVER
        .row(
            "dbsize",
            1,
            READONLY | FAST,
            "Returns the number of keys in the database.",
            "1.0.0",
            dbsize,
        )
        .categories(KEYSPACE),
    SERVER
        .row(
            "flushdb",
            -1,
            WRITE,
            "Remove all keys from the current database.",
            "1.0.0",
            flushdb,
        )
        .categories(&["@keyspace", "@dangerous"]),
    SERVER
        .row(
            "flushall",
            -1,
            WRITE,
            "Removes all keys from all databases.",
            "1.0.0",
            flushall,
        )
        .categories(&["@keyspace", "@dangerous"]),
    SERVER
        .row(
            "swapdb",
            3,
            WRITE | FAST,
            "Swaps two Redis databases.",
            "4.0.0",
            swapdb,
        )
        .categories(&["@keyspace", "@dangerous"]),
    SERVER
        .row(
            "lastsave",
            1,
            LOADING | STALE | FAST,
            "Returns the Unix timestamp of the last successful save to disk.",
            "1.0.0",
            lastsave,
        )
        .categories(&["@admin", "@dangerous"]),
    SERVER.row(
        "save",
        1,
        ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI,
        "Synchronously saves the database(s) to disk.",
        "1.0.0",
        save,
    ),
    SERVER.row(
        "bgsave",
        -1,
        ADMIN | NOSCRIPT | NO_ASYNC_LOADING,
        "Asynchronously saves the database(s) to disk.",
        "1.0.0",
        bgsave,
    ),
    SERVER.row(
        "bgrewriteaof",
        1,
        ADMIN | NOSCRIPT | NO_ASYNC_LOADING,
        "Asynchronously rewrites the append-only file to disk.",
        "1.0.0",
        bgrewriteaof,
    ),
    SERVER.row(
        "monitor",
        1,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Listens for all requests received by the server in real-time.",
        "1.0.0",
        monitor,
    ),
    SERVER.row(
        "shutdown",
        -1,
        ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI_QUEUE | NO_MULTI | ALLOW_BUSY,
        "Synchronously saves the database(s) to disk and shuts down the Redis server.",
        "1.0.0",
        shutdown,
    ),
    SERVER.container(
        "config",
        "A container for server configuration commands.",
        "2.0.0",
        CONFIG_SUBCOMMANDS,
    ),
    CommandSpec {
        arity: -1,
        flags: LOADING | STALE,
        acl: &["@connection"],
        handler: command_dispatch,
        ..SERVER.container(
            "command",
            "Returns detailed information about all commands.",
            "2.8.13",
            COMMAND_SUBCOMMANDS_WITH_BARE,
        )
    },
    // A plain command in Redis 7.0, not a container: one row in COMMAND and in INFO
    // commandstats, its subcommands read by its handler.
    SERVER.row(
        "debug",
        -2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "A container for debugging commands",
        "1.0.0",
        debug,
    ),
];

const CONFIG_SUBCOMMANDS: &[CommandSpec] = &[
    SERVER.row(
        "config|get",
        -3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Returns the effective values of configuration parameters.",
        "2.0.0",
        config_get,
    ),
    SERVER.row(
        "config|set",
        -4,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Sets configuration parameters in-flight.",
        "2.0.0",
        config_set,
    ),
    SERVER.row(
        "config|resetstat",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Resets the server's statistics.",
        "2.0.0",
        config_resetstat,
    ),
    SERVER.row(
        "config|rewrite",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Persists the effective configuration to file.",
        "2.8.0",
        config_rewrite,
    ),
    SERVER.row(
        "config|help",
        2,
        LOADING | STALE,
        "Returns helpful text about the different subcommands.",
        "5.0.0",
        config_help,
    ),
];

/// COMMAND with no subcommand is valid (the full table), so the container resolves a
/// missing argv[1] specially in [`command_dispatch`].
const COMMAND_SUBCOMMANDS_WITH_BARE: &[CommandSpec] = &[
    SERVER
        .row(
            "command|count",
            2,
            LOADING | STALE,
            "Returns a count of commands.",
            "2.8.13",
            command_count,
        )
        .categories(&["@connection"]),
    SERVER
        .row(
            "command|info",
            -2,
            LOADING | STALE,
            "Returns information about one, multiple or all commands.",
            "2.8.13",
            command_info,
        )
        .categories(&["@connection"]),
    SERVER
        .row(
            "command|docs",
            -2,
            LOADING | STALE,
            "Returns documentary information about one, multiple or all commands.",
            "7.0.0",
            command_docs,
        )
        .categories(&["@connection"]),
    SERVER
        .row(
            "command|getkeys",
            -3,
            LOADING | STALE,
            "Extracts the key names from an arbitrary command.",
            "2.8.13",
            command_getkeys,
        )
        .categories(&["@connection"]),
    SERVER
        .row(
            "command|getkeysandflags",
            -3,
            LOADING | STALE,
            "Extracts the key names and access flags for an arbitrary command.",
            "7.0.0",
            command_getkeysandflags,
        )
        .categories(&["@connection"]),
    SERVER
        .row(
            "command|list",
            -2,
            LOADING | STALE,
            "Returns a list of command names.",
            "7.0.0",
            command_list,
        )
        .categories(&["@connection"]),
    SERVER
        .row(
            "command|help",
            2,
            LOADING | STALE,
            "Returns helpful text about the different subcommands.",
            "5.0.0",
            command_help,
        )
        .categories(&["@connection"]),
];

/// Bare `COMMAND`: the whole table. Called by the dispatcher when argv has one element.
pub fn command_dispatch(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let all: Vec<&CommandSpec> = visible_commands(ctx.core).collect();
    ctx.out.array(all.len());
    for c in all {
        write_command_info(ctx, c);
    }
    Ok(())
}

fn info(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let sections: Vec<String> = ctx.argv[1..]
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    let text = info_text(ctx, &sections);
    ctx.out.verbatim(text.as_bytes());
    Ok(())
}

/// Builds INFO's text for the requested sections (none, `default`, `all`,
/// `everything` or names).
pub fn info_text(ctx: &Ctx<'_>, sections: &[String]) -> String {
    const DEFAULT: &[&str] = &[
        "server",
        "clients",
        "memory",
        "persistence",
        "stats",
        "replication",
        "cpu",
        "modules",
        "errorstats",
        "cluster",
        "keyspace",
    ];
    const ALL_EXTRA: &[&str] = &["commandstats", "latencystats", "tiering"];
    let wanted = |name: &str| -> bool {
        if sections.is_empty() || sections.iter().any(|s| s == "default") {
            return DEFAULT.contains(&name) || sections.iter().any(|s| s == name);
        }
        if sections.iter().any(|s| s == "all" || s == "everything") {
            return true;
        }
        sections.iter().any(|s| s == name) && (DEFAULT.contains(&name) || ALL_EXTRA.contains(&name))
    };
    let core = &*ctx.core;
    let mut out = String::new();
    let uptime = core.started.elapsed().as_secs();
    let mut push_section = |title: &str, body: String| {
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        out.push_str("# ");
        out.push_str(title);
        out.push_str("\r\n");
        out.push_str(&body);
    };
    if wanted("server") {
        push_section(
            "Server",
            format!(
                "redis_version:{}\r\nstreamd_version:{}\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_build_id:0\r\nredis_mode:standalone\r\nos:{} {}\r\narch_bits:64\r\nmonotonic_clock:{}\r\nmultiplexing_api:epoll\r\nprocess_id:{}\r\nrun_id:{}\r\ntcp_port:{}\r\nserver_time_usec:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\nhz:{}\r\nexecutable:streamd\r\nconfig_file:{}\r\n",
                redis_version(core.compat),
                crate::STREAMD_VERSION,
                std::env::consts::OS,
                std::env::consts::ARCH,
                crate::core::ticks::describe(),
                std::process::id(),
                crate::core::run_id(),
                core.port,
                ctx.now_ms * 1000,
                uptime,
                uptime / 86400,
                core.config.get_i64("hz"),
                core.config
                    .file
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
            ),
        );
    }
    if wanted("clients") {
        let blocked = core
            .clients
            .values()
            .filter(|c| c.blocked.is_some())
            .count();
        let tracking = core.tracking.clients.len();
        push_section(
            "Clients",
            format!(
                "connected_clients:{}\r\ncluster_connections:0\r\nmaxclients:{}\r\nclient_recent_max_input_buffer:0\r\nclient_recent_max_output_buffer:0\r\nblocked_clients:{blocked}\r\ntracking_clients:{tracking}\r\npubsub_clients:{}\r\nwatching_clients:{}\r\nclients_in_timeout_table:{blocked}\r\ntotal_watched_keys:{}\r\ntotal_blocking_keys:{}\r\ntotal_blocking_keys_on_nokey:{}\r\n",
                core.connected_clients(),
                core.config.get_i64("maxclients"),
                core.clients.values().filter(|c| c.in_pubsub()).count()
                    + usize::from(ctx.client.in_pubsub()),
                core.clients
                    .values()
                    .filter(|c| !c.watched.is_empty())
                    .count()
                    + usize::from(!ctx.client.watched.is_empty()),
                core.watched_keys.len(),
                blocking_keys(core, false),
                blocking_keys(core, true),
            ),
        );
    }
    if wanted("memory") {
        let scripts = script_memory_lines(&core.script_info);
        push_section("Memory", super::memory::info_section(core, &scripts));
    }
    if wanted("persistence") {
        push_section("Persistence", core.persist.info(core));
    }
    if wanted("stats") {
        let s = &core.stats;
        push_section(
            "Stats",
            format!(
                "total_connections_received:{}\r\ntotal_commands_processed:{}\r\ninstantaneous_ops_per_sec:0\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\nrejected_connections:{}\r\nsync_full:{}\r\nsync_partial_ok:{}\r\nsync_partial_err:{}\r\nexpired_keys:{}\r\nexpired_subkeys:{}\r\nevicted_keys:{}\r\nevicted_clients:0\r\ntotal_eviction_exceeded_time:{}\r\ncurrent_eviction_exceeded_time:{}\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\npubsubshard_channels:{}\r\nmigrate_cached_sockets:{}\r\ntracking_total_keys:{}\r\ntracking_total_items:{}\r\ntracking_total_prefixes:{}\r\nunexpected_error_replies:0\r\ntotal_error_replies:{}\r\nclient_query_buffer_limit_disconnections:{}\r\nclient_output_buffer_limit_disconnections:{}\r\nstream_retention_trimmed_entries:{}\r\nstream_dead_lettered_entries:{}\r\nstream_lifecycle_max_tick_usec:{}\r\n",
                s.total_connections_received,
                s.total_commands_processed,
                s.net_input_bytes,
                s.net_output_bytes,
                s.rejected_connections,
                core.repl.stats.sync_full,
                core.repl.stats.sync_partial_ok,
                core.repl.stats.sync_partial_err,
                s.expired_keys,
                s.expired_subkeys,
                s.evicted_keys,
                core.evict.exceeded_total_us / 1000,
                core.evict
                    .exceeded_since
                    .map_or(0, |t| t.elapsed().as_millis() as u64),
                s.keyspace_hits,
                s.keyspace_misses,
                core.pubsub.len(crate::pubsub::Kind::Channel),
                core.pubsub.len(crate::pubsub::Kind::Pattern),
                core.pubsub.len(crate::pubsub::Kind::Shard),
                core.migrate_sockets.len(),
                core.tracking.total_keys(),
                core.tracking.total_items(),
                core.tracking.total_prefixes(),
                s.errors.values().sum::<u64>(),
                s.client_query_buffer_limit_disconnections,
                s.client_output_buffer_limit_disconnections,
                s.stream_retention_trimmed_entries,
                s.stream_dead_lettered_entries,
                s.stream_lifecycle_max_tick_usec,
            ),
        );
    }
    if wanted("replication") {
        push_section("Replication", super::replication::info(core));
    }
    if wanted("cpu") {
        push_section(
            "CPU",
            "used_cpu_sys:0.000000\r\nused_cpu_user:0.000000\r\n".to_string(),
        );
    }
    if wanted("modules") {
        push_section("Modules", String::new());
    }
    if wanted("errorstats") {
        let body: String = core
            .stats
            .errors
            .iter()
            .map(|(code, n)| format!("errorstat_{code}:count={n}\r\n"))
            .collect();
        push_section("Errorstats", body);
    }
    if wanted("commandstats") {
        let mut by_name: Vec<_> = core.stats.commands.iter().collect();
        by_name.sort_unstable_by_key(|(name, _)| *name);
        let body: String = by_name
            .into_iter()
            .map(|(name, c)| {
                format!(
                    "cmdstat_{name}:calls={},usec={},usec_per_call={:.2},rejected_calls={},failed_calls={}\r\n",
                    c.calls,
                    c.usec,
                    if c.calls > 0 { c.usec as f64 / c.calls as f64 } else { 0.0 },
                    c.rejected_calls,
                    c.failed_calls
                )
            })
            .collect();
        push_section("Commandstats", body);
    }
    if wanted("latencystats") {
        push_section("Latencystats", latencystats(core));
    }
    if wanted("cluster") {
        let enabled = u8::from(core.cluster.is_some());
        push_section("Cluster", format!("cluster_enabled:{enabled}\r\n"));
    }
    if wanted("tiering") {
        push_section("Tiering", core.tier_info());
    }
    if wanted("keyspace") {
        let body: String = core
            .dbs
            .iter()
            .enumerate()
            .filter(|(_, db)| !db.is_empty())
            .map(|(i, db)| {
                format!(
                    "db{i}:keys={},expires={},avg_ttl=0,subexpiry={}\r\n",
                    db.len(),
                    db.expires.len(),
                    // Redis 7.4: hashes with at least one field TTL.
                    db.hexpires.len()
                )
            })
            .collect();
        push_section("Keyspace", body);
    }
    out
}

/// INFO latencystats: `latency_percentiles_usec_<cmd>:p50=…,p99=…,p99.9=…` for each
/// command with a latency histogram, percentiles as `latency-tracking-info-percentiles`
/// says, formatted as Redis's `fillPercentileDistributionLatencies`.
fn latencystats(core: &crate::core::Core) -> String {
    use crate::core::latency::percentile_label;
    let mut by_name: Vec<_> = core
        .stats
        .commands
        .iter()
        .filter_map(|(name, c)| c.histogram.as_ref().map(|h| (name, h)))
        .collect();
    by_name.sort_unstable_by_key(|(name, _)| *name);
    let mut body = String::new();
    for (name, h) in by_name {
        body.push_str("latency_percentiles_usec_");
        body.push_str(name);
        body.push(':');
        for (j, p) in core.latency.percentiles.iter().enumerate() {
            if j > 0 {
                body.push(',');
            }
            body.push_str(&format!(
                "p{}={:.3}",
                percentile_label(*p),
                h.percentile_usec(*p)
            ));
        }
        body.push_str("\r\n");
    }
    body
}

/// Distinct (db, key) pairs clients are blocked on; `nokey` counts only those of
/// clients that also wake on deletion (XREADGROUP).
fn blocking_keys(core: &crate::core::Core, nokey: bool) -> usize {
    let mut keys = std::collections::HashSet::new();
    for c in core.clients.values() {
        if let Some(b) = &c.blocked
            && (!nokey || b.unblock_on_nokey)
        {
            for k in b.keys.iter() {
                keys.insert((b.db, k.clone()));
            }
        }
    }
    keys.len()
}

/// Redis's `bytesToHuman`: B, then K, M, G with two decimals.
pub(super) fn human_bytes(n: usize) -> String {
    let n = n as f64;
    if n < 1024.0 {
        format!("{n}B")
    } else if n < 1024.0 * 1024.0 {
        format!("{:.2}K", n / 1024.0)
    } else if n < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2}M", n / (1024.0 * 1024.0))
    } else {
        format!("{:.2}G", n / (1024.0 * 1024.0 * 1024.0))
    }
}

fn time(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    ctx.out.array(2);
    ctx.out.bulk_int(now.as_secs() as i64);
    ctx.out.bulk_int(i64::from(now.subsec_micros()));
    Ok(())
}

fn dbsize(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let n = ctx.db().len();
    ctx.out.integer(n as i64);
    Ok(())
}

/// FLUSHDB/FLUSHALL's optional ASYNC|SYNC argument: true to free in the background
/// (ASYNC, or neither under `lazyfree-lazy-user-flush`).
fn flush_mode(ctx: &Ctx<'_>) -> Result<bool, ReplyError> {
    match ctx.argv.len() {
        1 => Ok(ctx.core.lazy.user_flush),
        2 if is(&ctx.argv[1], "ASYNC") => Ok(true),
        2 if is(&ctx.argv[1], "SYNC") => Ok(false),
        _ => Err(ReplyError::Syntax),
    }
}

/// Empties database `db` as FLUSHDB does (blocked readers woken, WATCH invalidated),
/// without propagating anything; `lazy` frees the keys on the background thread.
pub(super) fn flush_db(ctx: &mut Ctx<'_>, db: usize, lazy: bool) {
    let keys: Vec<bytes::Bytes> = ctx.core.dbs[db]
        .keys
        .keys()
        .map(bytes::Bytes::copy_from_slice)
        .collect();
    ctx.core.dirty += keys.len() as u64;
    ctx.core.touch_watched_in(db, None);
    if lazy {
        let taken = ctx.core.dbs[db].take_all();
        ctx.core.lazyfree.free_db(taken);
    } else {
        ctx.core.dbs[db].clear();
    }
    for k in keys {
        ctx.core.ready_keys.push((db, k));
    }
}

fn flushdb(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let lazy = flush_mode(ctx)?;
    flush_db(ctx, ctx.client.db, lazy);
    ctx.core.tracking_invalidate_all();
    ctx.core.dirty += 1;
    ctx.propagate(&["FLUSHDB"]);
    ctx.out.ok();
    Ok(())
}

fn flushall(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let lazy = flush_mode(ctx)?;
    for db in 0..ctx.core.dbs.len() {
        flush_db(ctx, db, lazy);
    }
    ctx.core.tracking_invalidate_all();
    ctx.core.dirty += 1;
    ctx.propagate(&["FLUSHALL"]);
    ctx.out.ok();
    Ok(())
}

fn swapdb(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let a = parse_i64(&ctx.argv[1]).map_err(|_| ReplyError::msg("ERR invalid first DB index"))?;
    let b = parse_i64(&ctx.argv[2]).map_err(|_| ReplyError::msg("ERR invalid second DB index"))?;
    let n = ctx.core.dbs.len() as i64;
    if a < 0 || a >= n || b < 0 || b >= n {
        return Err(ReplyError::msg("ERR DB index is out of range"));
    }
    let (a, b) = (a as usize, b as usize);
    if a != b {
        ctx.core.touch_watched_in(a, Some(b));
        ctx.core.touch_watched_in(b, Some(a));
        ctx.core.dbs.swap(a, b);
        for db in [a, b] {
            let keys: Vec<bytes::Bytes> = ctx.core.dbs[db]
                .keys
                .keys()
                .map(bytes::Bytes::copy_from_slice)
                .collect();
            for k in keys {
                ctx.core.ready_keys.push((db, k));
            }
        }
        ctx.core.dirty += 1;
        let argv = ctx.argv;
        ctx.propagate(&[b"SWAPDB".as_slice(), &argv[1], &argv[2]]);
    }
    ctx.out.ok();
    Ok(())
}

fn lastsave(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    ctx.out.integer(ctx.core.lastsave as i64);
    Ok(())
}

fn save(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    ctx.core
        .with_persistence(|p, core| p.save(core))
        .map_err(ReplyError::owned)?;
    ctx.out.ok();
    Ok(())
}

/// BGSAVE [SCHEDULE].
fn bgsave(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let schedule = match ctx.argv.len() {
        1 => false,
        2 if is(&ctx.argv[1], "SCHEDULE") => true,
        _ => return Err(ReplyError::Syntax),
    };
    match ctx.core.with_persistence(|p, core| p.bgsave(core)) {
        Ok(()) => ctx.out.simple(b"Background saving started"),
        Err(_) if schedule => {
            ctx.core.persist.schedule_bgsave();
            ctx.out.simple(b"Background saving scheduled");
        }
        Err(e) => return Err(ReplyError::owned(e)),
    }
    Ok(())
}

fn bgrewriteaof(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    if ctx
        .core
        .with_persistence(|p, core| p.bgrewriteaof(core))
        .map_err(ReplyError::owned)?
    {
        ctx.out
            .simple(b"Background append only file rewriting started");
    } else {
        ctx.out
            .simple(b"Background append only file rewriting scheduled");
    }
    Ok(())
}

/// DEBUG RELOAD [MERGE|NOFLUSH|NOSAVE]... | LOADAOF | LOG <message> | SLEEP <seconds> |
/// HELP: the subcommands streamd has of Redis's DEBUG. Anything else, or a known one
/// with the wrong number of arguments, gets Redis's `unknown subcommand or wrong number
/// of arguments` error.
fn debug(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let sub = &argv[1];
    match argv.len() {
        2 if is(sub, "help") => {
            super::reply_help(
                ctx,
                "DEBUG",
                &[
                    "LOADAOF",
                    "    Flush the AOF buffers on disk and reload the AOF in memory.",
                    "LOG <message>",
                    "    Write <message> to the server log.",
                    "RELOAD [option ...]",
                    "    Save the RDB on disk and reload it back to memory. Options (accepted,",
                    "    without effect here): MERGE, NOFLUSH, NOSAVE.",
                    "SLEEP <seconds>",
                    "    Stop the server for <seconds>. Decimals allowed.",
                ],
            );
            Ok(())
        }
        // RELOAD's options are accepted without effect; LOADAOF reads no argument (and
        // Redis ignores any).
        _ if is(sub, "reload") => debug_reload(ctx),
        _ if is(sub, "loadaof") => debug_loadaof(ctx),
        3 if is(sub, "log") => debug_log(ctx),
        3 if is(sub, "sleep") => debug_sleep(ctx),
        _ => Err(ReplyError::SubcommandSyntax {
            sub: crate::error::lossy(sub),
            container: "DEBUG".into(),
        }),
    }
}

fn debug_reload(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    ctx.core
        .with_persistence(|p, core| p.debug_reload(core))
        .map_err(ReplyError::owned)?;
    ctx.out.ok();
    Ok(())
}

fn debug_loadaof(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    ctx.core
        .with_persistence(|p, core| p.debug_loadaof(core))
        .map_err(ReplyError::owned)?;
    ctx.out.ok();
    Ok(())
}

fn monitor(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    if ctx.client.multi.is_some() {
        return Err(ReplyError::msg("ERR MONITOR isn't allowed inside MULTI"));
    }
    if !ctx.client.monitor {
        ctx.client.monitor = true;
        ctx.core.monitors.push(ctx.client.id);
    }
    ctx.out.ok();
    Ok(())
}

fn shutdown(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let mut kind = ShutdownKind::Default;
    for a in &ctx.argv[1..] {
        if is(a, "NOSAVE") {
            kind = ShutdownKind::NoSave;
        } else if is(a, "SAVE") {
            kind = ShutdownKind::Save;
        } else if is(a, "NOW") || is(a, "FORCE") || is(a, "ABORT") {
            // NOW/FORCE change nothing without replicas; ABORT has nothing to abort.
            if is(a, "ABORT") {
                return Err(ReplyError::msg("ERR No shutdown in progress."));
            }
        } else {
            return Err(ReplyError::Syntax);
        }
    }
    if let Err(e) = ctx.core.with_persistence(|p, core| p.shutdown(core, kind)) {
        tracing::error!(error = %e, "SHUTDOWN: error saving the dataset; not shutting down");
        return Err(ReplyError::msg(
            "ERR Errors trying to SHUTDOWN. Check logs.",
        ));
    }
    ctx.core.shutdown = Some(kind);
    // The connection closes without a reply, as with Redis.
    ctx.client.close_after_reply = true;
    Ok(())
}

fn config_get(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let mut pairs: Vec<(&'static str, String)> = Vec::new();
    for pat in &ctx.argv[2..] {
        for (name, value) in ctx.core.config.matching(pat) {
            if !pairs.iter().any(|(n, _)| *n == name) {
                pairs.push((name, value.to_string()));
            }
        }
    }
    ctx.out.map(pairs.len());
    for (name, value) in pairs {
        ctx.out.bulk(name.as_bytes());
        ctx.out.bulk(value.as_bytes());
    }
    Ok(())
}

fn config_set(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let args = &ctx.argv[2..];
    if !args.len().is_multiple_of(2) {
        return Err(ReplyError::WrongArity("config|set".into()));
    }
    let pairs: Vec<(String, String)> = args
        .chunks(2)
        .map(|p| {
            (
                String::from_utf8_lossy(&p[0]).into_owned(),
                String::from_utf8_lossy(&p[1]).into_owned(),
            )
        })
        .collect();
    let before: Vec<(String, String)> = LISTENER_CONFIGS
        .iter()
        .map(|&n| {
            (
                n.to_string(),
                ctx.core.config.get(n).unwrap_or("").to_string(),
            )
        })
        .collect();
    // What every named setting was, to roll the whole command back if applying fails.
    let previous: Vec<(String, String)> = pairs
        .iter()
        .filter_map(|(n, _)| crate::config::directive(n))
        .map(|d| {
            (
                d.name.to_string(),
                ctx.core.config.get(d.name).unwrap_or("").to_string(),
            )
        })
        .collect();
    ctx.core
        .config
        .set_many(&pairs)
        .map_err(ReplyError::owned)?;
    relisten(ctx.core, &pairs, &before, &previous)?;
    let named = |want: &str| pairs.iter().any(|(n, _)| n.eq_ignore_ascii_case(want));
    if named("loglevel") || named("log-format") {
        crate::logging::reconfigure(&ctx.core.config, named("loglevel"), named("log-format"));
    }
    ctx.core.refresh_config_cache();
    if pairs
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("requirepass"))
    {
        ctx.core.apply_requirepass();
    }
    ctx.core
        .with_persistence(|p, core| p.config_changed(core))
        .map_err(ReplyError::owned)?;
    ctx.out.ok();
    Ok(())
}

/// The settings the listening sockets are made from.
const LISTENER_CONFIGS: [&str; 9] = [
    "bind",
    "port",
    "tls-port",
    "tls-cert-file",
    "tls-key-file",
    "tls-ca-cert-file",
    "tls-auth-clients",
    "metrics-bind",
    "metrics-port",
];

/// Rebinds the listeners whose settings CONFIG SET changed (an unchanged value applies
/// nothing, as in Redis). When that fails, every setting the command named goes back to
/// `previous` (Redis rolls the whole command back), the old listeners are bound again,
/// and the error names the first changed listener setting in `pairs`.
fn relisten(
    core: &mut Core,
    pairs: &[(String, String)],
    before: &[(String, String)],
    previous: &[(String, String)],
) -> Result<(), ReplyError> {
    let changed: Vec<&(String, String)> = before
        .iter()
        .filter(|(n, old)| core.config.get(n).unwrap_or("") != old)
        .collect();
    let is = |name: &str| changed.iter().any(|(n, _)| n == name);
    let what = crate::core::Relisten {
        bind: is("bind"),
        port: is("port"),
        tls: changed.iter().any(|(n, _)| n.starts_with("tls-")),
        metrics: is("metrics-bind")
            || is("metrics-port")
            || (is("bind") && core.config.get("metrics-bind").unwrap_or("").is_empty()),
    };
    let Some(hook) = core.relisten.clone().filter(|_| what.any()) else {
        return Ok(());
    };
    match hook(&core.config, what) {
        Ok(port) => {
            core.port = port;
            Ok(())
        }
        Err(reason) => {
            let restore: Vec<(String, String)> = changed.into_iter().cloned().collect();
            if let Err(e) = core.config.set_many(previous) {
                tracing::warn!(error = %e, "could not restore the listener settings");
            }
            match hook(&core.config, what) {
                Ok(port) => core.port = port,
                Err(again) => {
                    tracing::warn!(reason = again, "could not bind the old listeners again")
                }
            }
            let name = pairs
                .iter()
                .map(|(n, _)| n.to_ascii_lowercase())
                .find(|n| restore.iter().any(|(r, _)| r == n))
                .unwrap_or_default();
            Err(ReplyError::owned(format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}') - {reason}"
            )))
        }
    }
}

/// A key spec's `begin_search` or `find_keys` value up to its spec's fields: `{type:
/// <kind>, spec: {` with `fields` entries for the caller to write.
fn open_key_search(out: &mut crate::resp::writer::RespWriter, kind: &[u8], fields: usize) {
    out.map(2);
    out.bulk(b"type");
    out.bulk(kind);
    out.bulk(b"spec");
    out.map(fields);
}

/// A key spec's `find_keys` of type `range`: keys up to `lastkey`, every `keystep`, no
/// limit.
fn write_range_find_keys(out: &mut crate::resp::writer::RespWriter, lastkey: i64, keystep: i64) {
    out.bulk(b"find_keys");
    open_key_search(out, b"range", 3);
    out.bulk(b"lastkey");
    out.integer(lastkey);
    out.bulk(b"keystep");
    out.integer(keystep);
    out.bulk(b"limit");
    out.integer(0);
}

fn config_resetstat(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    ctx.core.stats = Default::default();
    ctx.core.lazyfree.reset_stats();
    if let Some(st) = ctx.core.cluster.as_deref_mut() {
        st.slot_stats.reset_all();
    }
    ctx.out.ok();
    Ok(())
}

fn config_rewrite(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let Some(path) = ctx.core.config.file.clone() else {
        return Err(ReplyError::msg(
            "ERR The server is running without a config file",
        ));
    };
    crate::config::rewrite::rewrite_file(&ctx.core.config, &path).map_err(|e| {
        tracing::warn!(error = %e, path = %path.display(), "CONFIG REWRITE failed");
        ReplyError::owned(format!("ERR Rewriting config file: {e}"))
    })?;
    tracing::info!(path = %path.display(), "CONFIG REWRITE executed with success");
    ctx.out.ok();
    Ok(())
}

fn config_help(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    super::reply_help(
        ctx,
        "CONFIG",
        &[
            "GET <pattern>",
            "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>",
            "    Set the configuration <directive> to <value>.",
            "RESETSTAT",
            "    Reset statistics reported by the INFO command.",
            "REWRITE",
            "    Rewrite the configuration file.",
        ],
    );
    Ok(())
}

/// The top-level commands a client can run: the installed table (every family, the
/// scripting one included) less the commands newer than `compat-version`, which the
/// dispatcher answers as unknown. COMMAND and all its subcommands list these.
fn visible_commands(core: &Core) -> impl Iterator<Item = &'static CommandSpec> + '_ {
    super::all().filter(|c| visible(core, c))
}

/// Does the dispatcher run `c` (a command or a subcommand) for clients under this
/// `compat-version`?
fn visible(core: &Core, c: &CommandSpec) -> bool {
    super::since_version(c.since) <= core.compat
}

fn command_count(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    ctx.out.integer(visible_commands(ctx.core).count() as i64);
    Ok(())
}

/// One COMMAND INFO entry (Redis 7 shape: name, arity, flags, first, last, step, ACL
/// categories, tips, key specs, subcommands).
fn write_command_info(ctx: &mut Ctx<'_>, c: &CommandSpec) {
    let out = &mut *ctx.out;
    out.array(10);
    out.bulk(c.name.as_bytes());
    out.integer(i64::from(c.arity));
    let names: Vec<&str> = NAMES
        .iter()
        .filter(|(bit, _)| c.flags & bit != 0)
        .map(|(_, n)| *n)
        .collect();
    out.set(names.len());
    for n in names {
        out.simple(n.as_bytes());
    }
    out.integer(i64::from(c.first_key));
    out.integer(i64::from(c.last_key));
    out.integer(i64::from(c.key_step));
    let cats = c.acl_categories();
    out.set(cats.len());
    for cat in cats {
        out.simple(cat.as_bytes());
    }
    let tips = super::tips::of(c.name);
    out.set(tips.len());
    for tip in tips {
        out.bulk(tip.as_bytes());
    }
    if c.first_key > 0 {
        // One key spec per entry of `key_flags` when the keys differ (COPY, RENAME: source
        // then destination; SDIFFSTORE: the destination, then every source), the last
        // covering the keys that remain, else one range spec for all the keys.
        let per_key = c.key_flags.len() > 1;
        let keyword = crate::core::command::keyword_keys(c.name);
        let specs: Vec<(i32, i64, u32)> = if !keyword.is_empty() {
            // The first key by index, the others by keyword (GEORADIUS's STORE).
            vec![(c.first_key, 0, c.key_flags_at(0))]
        } else if per_key {
            let n = c.key_flags.len();
            (0..n)
                .map(|i| {
                    let index = c.first_key + i as i32 * c.key_step.max(1);
                    let lastkey = match i + 1 == n {
                        true if c.last_key < 0 => i64::from(c.last_key),
                        true => i64::from(c.last_key - index).max(0),
                        false => 0,
                    };
                    (index, lastkey, c.key_flags[i])
                })
                .collect()
        } else {
            let last = if c.last_key < 0 {
                i64::from(c.last_key)
            } else {
                i64::from(c.last_key - c.first_key)
            };
            vec![(c.first_key, last, c.key_flags_at(0))]
        };
        out.array(specs.len() + keyword.len());
        for (i, (index, lastkey, kflags)) in specs.into_iter().enumerate() {
            let note = super::tips::key_spec_note(c.name, i);
            out.map(3 + usize::from(note.is_some()));
            if let Some(note) = note {
                out.bulk(b"notes");
                out.bulk(note.as_bytes());
            }
            out.bulk(b"flags");
            write_key_flags(out, kflags);
            out.bulk(b"begin_search");
            open_key_search(out, b"index", 1);
            out.bulk(b"index");
            out.integer(i64::from(index));
            write_range_find_keys(out, lastkey, i64::from(c.key_step));
        }
        for k in keyword {
            out.map(3);
            out.bulk(b"flags");
            write_key_flags(out, k.flags);
            out.bulk(b"begin_search");
            open_key_search(out, b"keyword", 2);
            out.bulk(b"keyword");
            out.bulk(k.keyword.as_bytes());
            out.bulk(b"startfrom");
            out.integer(k.startfrom as i64);
            write_range_find_keys(out, 0, 1);
        }
    } else {
        out.array(0);
    }
    let subs: Vec<&CommandSpec> = c
        .subcommands
        .iter()
        .filter(|s| visible(ctx.core, s))
        .collect();
    ctx.out.array(subs.len());
    for s in subs {
        write_command_info(ctx, s);
    }
}

/// A command (`xadd`) or subcommand (`xgroup|create`) by name, as COMMAND INFO and
/// DOCS take them; `None` for what the dispatcher would not run (`compat-version`).
fn find_command(core: &Core, name: &[u8]) -> Option<&'static CommandSpec> {
    if let Some(c) = super::lookup(name) {
        return Some(c).filter(|c| visible(core, c));
    }
    // "xgroup|create" form.
    let text = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
    let (parent, _) = text.split_once('|')?;
    super::lookup(parent.as_bytes())
        .filter(|c| visible(core, c))?
        .subcommands
        .iter()
        .find(|s| s.name == text && visible(core, s))
}

fn command_info(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    if ctx.argv.len() == 2 {
        return command_dispatch(ctx);
    }
    let names: Vec<bytes::Bytes> = ctx.argv[2..].to_vec();
    ctx.out.array(names.len());
    for n in names {
        match find_command(ctx.core, &n) {
            Some(c) => write_command_info(ctx, c),
            None => ctx.out.null_array(),
        }
    }
    Ok(())
}

/// One COMMAND DOCS entry: the row's summary, since and group, and what
/// [`super::docs`] holds for it, cut to the client's `compat-version`.
fn write_command_docs(ctx: &mut Ctx<'_>, c: &CommandSpec) {
    let core = &*ctx.core;
    super::docs::write(ctx.out, c, core.compat, &|s| visible(core, s));
}

fn command_docs(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let wanted: Vec<&'static CommandSpec> = if ctx.argv.len() == 2 {
        visible_commands(ctx.core).collect()
    } else {
        ctx.argv[2..]
            .iter()
            .filter_map(|n| find_command(ctx.core, n))
            .collect()
    };
    ctx.out.map(wanted.len());
    for c in wanted {
        write_command_docs(ctx, c);
    }
    Ok(())
}

fn command_getkeys(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    getkeys(ctx, false)
}

/// COMMAND GETKEYSANDFLAGS (7.0): each key as `[key, [flags...]]`, the flags those of
/// the key spec that found it, written as COMMAND INFO writes them.
fn command_getkeysandflags(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    getkeys(ctx, true)
}

/// COMMAND GETKEYS / GETKEYSANDFLAGS: the keys of the command in `argv[2..]`.
fn getkeys(ctx: &mut Ctx<'_>, with_flags: bool) -> Result<(), ReplyError> {
    let target: crate::resp::Argv = ctx.argv[2..].to_vec();
    let Some(spec) = super::lookup(&target[0]).filter(|c| visible(ctx.core, c)) else {
        return Err(ReplyError::msg("ERR Invalid command specified"));
    };
    let spec = super::resolve_subcommand(spec, &target)
        .map_err(|_| ReplyError::msg("ERR Invalid command specified"))?;
    // Redis's order: a command without keys at all, then the arity, then arguments
    // that name no key (fine for EVAL with 0 keys: `no_mandatory_keys`).
    if spec.first_key <= 0 && spec.flags & MOVABLEKEYS == 0 {
        return Err(ReplyError::msg("ERR The command has no key arguments"));
    }
    if !spec.arity_ok(target.len()) {
        return Err(ReplyError::msg(
            "ERR Invalid number of arguments specified for command",
        ));
    }
    let keys = spec.key_positions(&target);
    if keys.is_empty() {
        if spec.flags & NO_MANDATORY_KEYS != 0 {
            ctx.out.array(0);
            return Ok(());
        }
        return Err(ReplyError::msg(
            "ERR Invalid arguments specified for command",
        ));
    }
    ctx.out.array(keys.len());
    for (n, i) in keys.into_iter().enumerate() {
        if with_flags {
            ctx.out.array(2);
            ctx.out.bulk(&target[i]);
            write_key_flags(ctx.out, key_flags_for(spec, &target, n));
        } else {
            ctx.out.bulk(&target[i]);
        }
    }
    Ok(())
}

/// The flags of the `n`-th key `argv` names: the row's, but for SET, whose key spec
/// has Redis's VARIABLE_FLAGS and whose `setGetKeys` tells by the arguments: with GET
/// the value is read (`RW access update`), without it only overwritten (`OW update`);
/// the others as [`CommandSpec::key_flags_in`] says (BITFIELD's depend on its arguments).
fn key_flags_for(spec: &CommandSpec, argv: &[bytes::Bytes], n: usize) -> u32 {
    use super::keyflags::{ACCESS, OW, RW, UPDATE};
    if spec.name == "set" {
        return if argv[3..].iter().any(|a| is(a, "get")) {
            RW | ACCESS | UPDATE
        } else {
            OW | UPDATE
        };
    }
    spec.key_flags_in(argv, n)
}

/// A key spec's flags as Redis replies them: a set of status strings.
fn write_key_flags(out: &mut crate::resp::writer::RespWriter, kflags: u32) {
    let names: Vec<&str> = super::keyflags::NAMES
        .iter()
        .filter(|(bit, _)| kflags & bit != 0)
        .map(|(_, n)| *n)
        .collect();
    out.set(names.len());
    for n in names {
        out.simple(n.as_bytes());
    }
}

/// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]: every command
/// and, after each container, its subcommands (`xinfo`, `xinfo|help`, `xinfo|stream`...),
/// as Redis's `commandListWithoutFilter` walks them; a filter applies to each full name
/// (a subcommand by its own categories).
fn command_list(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let mut specs: Vec<&'static CommandSpec> = Vec::new();
    for c in visible_commands(ctx.core) {
        specs.push(c);
        specs.extend(c.subcommands.iter().filter(|s| visible(ctx.core, s)));
    }
    if argv.len() > 2 {
        if argv.len() != 5 || !is(&argv[2], "FILTERBY") {
            return Err(ReplyError::Syntax);
        }
        let value = String::from_utf8_lossy(&argv[4]).to_ascii_lowercase();
        if is(&argv[3], "PATTERN") {
            specs.retain(|c| crate::util::glob_match(value.as_bytes(), c.name.as_bytes(), true));
        } else if is(&argv[3], "ACLCAT") {
            let cat = format!("@{}", value.trim_start_matches('@'));
            specs.retain(|c| c.acl_categories().contains(&cat.as_str()));
        } else if is(&argv[3], "MODULE") {
            specs.clear();
        } else {
            return Err(ReplyError::Syntax);
        }
    }
    ctx.out.array(specs.len());
    for c in specs {
        ctx.out.bulk(c.name.as_bytes());
    }
    Ok(())
}

fn command_help(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    super::reply_help(
        ctx,
        "COMMAND",
        &[
            "(no subcommand)",
            "    Return details about all commands.",
            "COUNT",
            "    Return the total number of commands in this server.",
            "LIST",
            "    Return a list of all commands in this server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple commands.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple commands.",
            "GETKEYS <full-command>",
            "    Return the keys from a full command.",
            "GETKEYSANDFLAGS <full-command>",
            "    Return the keys and the access flags from a full command.",
        ],
    );
    Ok(())
}

/// LOLWUT [VERSION v]: the server's version line, as Redis answers for versions it has
/// no drawing for (Redis 7.0's own default); the drawings of versions 5 and 6 are not
/// reproduced.
fn lolwut(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let mut i = 1;
    while i < ctx.argv.len() {
        if is(&ctx.argv[i], "version") && i + 1 < ctx.argv.len() {
            super::parse_i64(&ctx.argv[i + 1])?;
            i += 2;
        } else {
            super::parse_i64(&ctx.argv[i])?;
            i += 1;
        }
    }
    let text = format!(
        "Redis ver. {}\n",
        crate::core::redis_version(ctx.core.compat)
    );
    ctx.out.verbatim(text.as_bytes());
    Ok(())
}

/// INFO memory's scripting lines, as Redis 7.0 names them.
fn script_memory_lines(s: &crate::core::script::ScriptInfo) -> String {
    let vm_total = s.eval_vm_bytes + s.functions_vm_bytes;
    format!(
        "used_memory_lua:{ev}\r\nused_memory_vm_eval:{ev}\r\nused_memory_lua_human:{evh}\r\nused_memory_scripts_eval:{sc}\r\nnumber_of_cached_scripts:{n}\r\nnumber_of_functions:{nf}\r\nnumber_of_libraries:{nl}\r\nused_memory_vm_functions:{fv}\r\nused_memory_vm_total:{vt}\r\nused_memory_vm_total_human:{vth}\r\nused_memory_functions:0\r\nused_memory_scripts:{sc}\r\nused_memory_scripts_human:{sch}\r\n",
        ev = s.eval_vm_bytes,
        evh = human_bytes(s.eval_vm_bytes),
        sc = s.eval_cache_bytes,
        n = s.cached_scripts,
        nf = s.functions,
        nl = s.libraries,
        fv = s.functions_vm_bytes,
        vt = vm_total,
        vth = human_bytes(vm_total),
        sch = human_bytes(s.eval_cache_bytes),
    )
}

fn debug_log(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    tracing::warn!(message = %String::from_utf8_lossy(&ctx.argv[2]), "DEBUG LOG");
    ctx.out.ok();
    Ok(())
}

fn debug_sleep(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let secs: f64 = std::str::from_utf8(&ctx.argv[2])
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|v: &f64| v.is_finite() && *v >= 0.0)
        .ok_or(ReplyError::msg("ERR value is not a valid float"))?;
    std::thread::sleep(std::time::Duration::from_secs_f64(secs.min(60.0)));
    ctx.out.ok();
    Ok(())
}
