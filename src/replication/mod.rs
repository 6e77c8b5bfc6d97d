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
pub mod sentinel_rejoin;
pub mod sync;

/// Called after each batch the replica applied from its primary: the server's idle
/// poller (`server/idle_poll.rs`, `idle-poll-us`) then keeps reading sockets for a
/// while before the thread sleeps, as it does after a client's batch. A replica that
/// slept would pay a wake-up per batch, and a primary in synchronous mode
/// (`min-sync-replicas`) waits for the ACK behind it.
pub type Activity = std::rc::Rc<dyn Fn()>;

/// Starts replication for a server that is about to serve: spawns the link task
/// (on the current `LocalSet`) and follows the configured `replicaof`, if any.
/// `activity` is called after every batch applied from a primary.
pub fn start(core: &crate::core::SharedCore, activity: Activity) {
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
    tokio::task::spawn_local(replica::run(core.clone(), activity));
    tokio::task::spawn_local(sentinel_rejoin::run(core.clone()));
}

/// Before a primary stops (SIGTERM, SHUTDOWN): holds new writes and gives lagging
/// replicas up to `shutdown-timeout` seconds to acknowledge everything, so a clean stop
/// loses nothing a replica could have had (Redis 7.0's `isReadyToShutdown` wait).
pub async fn wait_before_shutdown(core: &crate::core::SharedCore) {
    let (secs, behind) = {
        let c = core.borrow();
        let offset = c.repl.offset;
        let behind =
            c.repl.replicas.values().any(|r| {
                r.state == crate::core::replication::ReplicaState::Online && r.ack < offset
            });
        (
            c.config.get_i64("shutdown-timeout").max(0) as u64,
            behind && !c.repl.is_replica(),
        )
    };
    if !behind || secs == 0 {
        return;
    }
    tracing::info!("Waiting for replicas before shutting down.");
    core.borrow_mut().repl.pause_writes = true;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(secs);
    let mut asked = false;
    while tokio::time::Instant::now() < deadline {
        {
            let mut c = core.borrow_mut();
            let offset = c.repl.offset;
            let lagging = c
                .repl
                .replicas
                .values()
                .filter(|r| {
                    r.state == crate::core::replication::ReplicaState::Online && r.ack < offset
                })
                .count();
            if lagging == 0 {
                tracing::info!("Replicas caught up; shutting down.");
                return;
            }
            if !asked {
                c.repl_control(&[b"REPLCONF", b"GETACK", b"*"]);
                asked = true;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    tracing::warn!(
        "Lagging replica(s) did not catch up within shutdown-timeout; shutting down anyway."
    );
}
