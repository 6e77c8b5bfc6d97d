//! Replication over Redis's protocol, both ways: this server as a primary streaming
//! to its replicas ([`primary`]), and as a replica following a primary ([`replica`]),
//! which may be another streamd or a real Redis.
//!
//! **Its layer.** Above `persist` (a full sync is a snapshot produced and loaded the
//! way persistence does) and below `server` (which hands a connection over once its
//! PSYNC was accepted, and starts the link task). The state both sides share with the
//! commands is the core's (`core/replication.rs`); the commands are
//! `commands/replication.rs`. `docs/replication.md` describes the protocol, the
//! guarantees and the faults.

pub mod primary;
pub mod redis_forms;
pub mod replica;

/// Starts replication for a server that is about to serve: spawns the link task
/// (on the current `LocalSet`) and follows the configured `replicaof`, if any.
pub fn start(core: &crate::core::SharedCore) {
    crate::core::replication::set_translator(redis_forms::patch);
    {
        let mut c = core.borrow_mut();
        let target = c.config.get("replicaof").unwrap_or("").to_string();
        if let Some((host, port)) = target.split_once(' ')
            && let Ok(port) = port.parse::<u16>()
        {
            crate::commands::replication::follow(&mut c, host.to_string(), port);
        }
    }
    tokio::task::spawn_local(replica::run(core.clone()));
}
