//! streamd: a Redis-protocol stream server.
//!
//! # Layers
//!
//! ```text
//! server/    sockets, TLS, connection tasks                     (uses everything below)
//! replication/  replica senders, a replica's link, Redis 7.0 forms
//! persist/   effect log, snapshots, loading: implements core::persistence::Persistence
//! scripting/ Lua 5.1 VMs, EVAL/SCRIPT/FUNCTION/FCALL, redis.call
//! commands/  the command table's rows and handlers, one file per family
//! rdb/       Redis's RDB format: DUMP/RESTORE payloads, dump.rdb reading
//! core/      keyspace, clients, command model and dispatch, ACL, blocking, effects
//! config     redis.conf directives                              logging
//! stream/    IDs, rax, listpack nodes, groups      resp/  bytes in, bytes out
//! tier/      segment files of cold stream nodes, read pool (in progress, issue 39)
//! pubsub/    channel, pattern and shard-channel tables (plain data)
//! cluster/   hash slots, nodes.conf, the cluster bus frames (plain data)
//! error      client-visible error texts
//! util, short_bytes, alloc                                      leaves
//! ```
//!
//! Each module imports only from the ones below it. Everything runs on one thread (a
//! current-thread tokio runtime), like Redis's main thread: commands are atomic without
//! locks. [`serve`] wires the layers together. See `docs/architecture.md`.

pub mod alloc;
pub mod cluster;
pub mod cluster_bus;
pub mod commands;
pub mod config;
pub mod core;
pub mod error;
pub mod logging;
pub mod persist;
pub mod pubsub;
pub mod rdb;
pub mod replication;
pub mod resp;
pub mod scripting;
pub mod server;
pub mod short_bytes;
pub mod stream;
pub mod tier;
pub mod types;
pub mod util;

use std::cell::RefCell;
use std::rc::Rc;

/// The configured `tls-port` (0 = none).
fn config_tls_port(config: &config::Config) -> u16 {
    u16::try_from(config.get_i64("tls-port")).unwrap_or(0)
}

/// streamd's own version (`--version`, INFO `streamd_version`).
pub const STREAMD_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Takes the data directory, binds the configured address, loads the dataset (clients
/// get `-LOADING` meanwhile) and serves until SHUTDOWN or a signal.
pub fn serve(config: config::Config) -> std::io::Result<()> {
    let dir = config.get("dir").unwrap_or("./data").to_string();
    std::fs::create_dir_all(&dir)?;
    let port = config.get_i64("port") as u16;
    let bind = config.get("bind").unwrap_or("127.0.0.1").to_string();
    let cluster = if config.get_bool("cluster-enabled") {
        let file = config.get("cluster-config-file").unwrap_or("nodes.conf");
        let path = std::path::Path::new(&dir).join(file);
        // Myself carries the ports it announces (NAT, containers); the bus listens on
        // the real one below.
        let cport = core::cluster::announced_bus_port(&config, port);
        let my_port = core::cluster::announced_port(&config, port);
        // A corrupt file stops start-up, as Redis's clusterLoadConfig does.
        let state = core::cluster::ClusterState::load(&path, my_port, cport)
            .map_err(std::io::Error::other)?;
        tracing::info!(node_id = state.my_id(), "cluster state loaded");
        Some(Box::new(state))
    } else {
        None
    };
    let mut core = core::Core::new(config, port, scripting::table());
    core.cluster = cluster;
    core.script_may_write = Some(scripting::may_write);
    core.tier.render_node = Some(commands::xrange::render_node);
    // A broken ACL file stops start-up, as with Redis: better no server than one whose
    // users are not the ones configured.
    core.load_acl_file().map_err(|e| {
        std::io::Error::other(format!("Aborting startup because of ACL errors: {e}"))
    })?;
    // Before binding: a second server on the same directory stops here.
    let loader = persist::prepare(&mut core).map_err(std::io::Error::other)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    let tls_port = config_tls_port(&core.config);
    let acceptor = server::tls::acceptor(&core.config).map_err(std::io::Error::other)?;
    if port == 0 && acceptor.is_none() {
        return Err(std::io::Error::other(
            "Configured to not listen anywhere (port 0 and tls-port 0), exiting.",
        ));
    }
    local.block_on(&runtime, async move {
        let addr = bind.split_whitespace().next().unwrap_or("127.0.0.1").trim_start_matches('-');
        let backlog = core.config.get_i64("tcp-backlog");
        let listeners = server::bind_listeners(&core.config, acceptor)?;
        if let Some(port) = listeners.tls.port() {
            tracing::info!(port, "TLS port ready");
        }
        // The cluster bus port (a port in use stops start-up, as in Redis).
        let cluster_listener = match core.cluster.as_deref() {
            Some(_) => {
                let cport = core::cluster::bus_port(&core.config, core.port);
                let l = server::listen(addr, cport, backlog)?;
                tracing::info!(cport, "cluster bus port ready");
                Some(l)
            }
            None => None,
        };
        core.cluster_changed();
        let port = listeners.plain.port().unwrap_or(0);
        let listeners = Rc::new(RefCell::new(listeners));
        tracing::info!(
            version = STREAMD_VERSION,
            port,
            tls_port,
            pid = std::process::id(),
            config_file = %core.config.file.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "none".into()),
            "streamd started; ready to accept connections on {addr}:{port}"
        );
        core.port = port;
        let core = Rc::new(RefCell::new(core));
        if let Some(listener) = cluster_listener {
            cluster_bus::start(&core, listener);
        }
        let loading = persist::run_loader(core.clone(), loader);
        let reason = server::run(listeners, core.clone(), loading).await?;
        replication::wait_before_shutdown(&core).await;
        if reason == server::StopReason::Signal {
            // SHUTDOWN did this in its handler (so it could report errors).
            let mut c = core.borrow_mut();
            if let Err(e) = persist::shutdown(&mut c, core::ShutdownKind::Default) {
                tracing::error!(error = %e, "error saving the dataset on shutdown");
            }
        }
        tracing::info!(?reason, "streamd is now ready to exit, bye bye...");
        Ok(())
    })
}
