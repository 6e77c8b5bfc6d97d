//! The network front end: the accept loop, per-connection tasks, graceful shutdown.
//!
//! Everything runs on one current-thread tokio runtime (see `core` for why). Each
//! connection task reads into its buffer, parses every complete command the read
//! produced, executes them against the [`Core`] in one borrow, and writes all replies
//! with one write. A blocked client keeps reading (to notice a disconnect at once) but
//! executes nothing until the core sends its reply.
//!
//! Two kinds of listener run side by side, on every `bind` address: the plain `port` and
//! the TLS `tls-port` (either may be off, `0`); CONFIG SET rebinds them (`listeners.rs`). A TLS client is handshaken in its own task (bounded by
//! [`tls::TLS_HANDSHAKE_TIMEOUT`]) and then served by the same connection code.

pub mod connection;
pub mod idle_poll;
pub mod keepalive;
pub mod listeners;
pub mod lookahead;
pub mod metrics;
pub mod notify;
pub mod protected;
pub mod shared_tcp;
pub mod tls;

use crate::core::{SharedCore, unix_ms};
use idle_poll::IdlePoll;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio_rustls::TlsAcceptor;

/// Why [`run`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// SHUTDOWN command.
    Shutdown,
    /// SIGTERM or SIGINT.
    Signal,
}

/// Listens on `addr:port` with a queue of `backlog` connections not yet accepted (the
/// `tcp-backlog` directive; the kernel caps it at `net.core.somaxconn`). `std`'s and tokio's
/// `bind` always ask for 128: a burst of connects beside busy clients then overflows the
/// queue, and each dropped SYN costs its client a retransmission (a second or more).
/// Redis listens with `tcp-backlog`, 511 by default.
pub fn listen(addr: &str, port: u16, backlog: i64) -> std::io::Result<TcpListener> {
    use std::net::ToSocketAddrs;
    let backlog = i32::try_from(backlog.max(0)).unwrap_or(i32::MAX);
    let mut last = None;
    for sa in (addr, port).to_socket_addrs()? {
        let bound = (|| {
            let socket = socket2::Socket::new(
                socket2::Domain::for_address(sa),
                socket2::Type::STREAM,
                Some(socket2::Protocol::TCP),
            )?;
            socket.set_reuse_address(true)?;
            socket.bind(&sa.into())?;
            socket.listen(backlog)?;
            socket.set_nonblocking(true)?;
            TcpListener::from_std(socket.into())
        })();
        match bound {
            Ok(listener) => return Ok(listener),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{addr} resolves to no address"),
        )
    }))
}

/// Sets up an accepted socket (no Nagle, keepalive) and serves it in its own task,
/// after a TLS handshake when `tls` is given.
fn spawn_client(
    socket: TcpStream,
    peer: SocketAddr,
    tls: Option<TlsAcceptor>,
    core: &SharedCore,
    stop: &Rc<Notify>,
    idle_poll: &Rc<IdlePoll>,
) {
    let _ = socket.set_nodelay(true);
    if let Some(idle) = core.borrow().limits.tcp_keepalive
        && let Err(e) = keepalive::set_keepalive(&socket, idle)
    {
        tracing::debug!(error = %e, "could not set TCP keepalive");
    }
    let laddr = socket
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let core = core.clone();
    let stop = stop.clone();
    let idle_poll = idle_poll.clone();
    tokio::task::spawn_local(async move {
        match tls {
            None => {
                // Plain TCP: the core may write Pub/Sub messages into it directly.
                let (socket, sink) = shared_tcp::SharedTcp::new(socket);
                connection::serve(socket, peer, laddr, core, stop, idle_poll, Some(sink)).await
            }
            Some(acceptor) => {
                let handshake =
                    tokio::time::timeout(tls::TLS_HANDSHAKE_TIMEOUT, acceptor.accept(socket));
                match handshake.await {
                    Ok(Ok(stream)) => {
                        connection::serve(stream, peer, laddr, core, stop, idle_poll, None).await
                    }
                    Ok(Err(e)) => {
                        tracing::warn!(addr = %peer, error = %e, "Error accepting a client connection (TLS handshake)");
                    }
                    Err(_) => {
                        tracing::warn!(addr = %peer, "TLS handshake timed out");
                    }
                }
            }
        }
    });
}

/// Serves `listeners` until SHUTDOWN or a signal, while `loading` (the dataset load,
/// `persist::run_loader`) runs to completion; a load error stops the server. Must run
/// inside a `LocalSet`. With `supervised systemd` it sends `READY=1` once loaded and
/// `STOPPING=1` when it stops ([`notify`]).
pub async fn run(
    listeners: listeners::SharedListeners,
    core: SharedCore,
    loading: impl std::future::Future<Output = Result<(), crate::persist::PersistError>>,
) -> std::io::Result<StopReason> {
    let stop = Rc::new(Notify::new());
    let notifier = notify::Notifier::from_config(&core.borrow().config);
    tokio::pin!(loading);
    let mut loaded = false;
    spawn_cron(core.clone());
    spawn_tier_mover(core.clone());
    spawn_block_timer(core.clone());
    spawn_script_driver(core.clone());
    spawn_eviction_driver(core.clone());
    spawn_direct_flusher(core.clone());
    // The Prometheus endpoint (`metrics-port`), on this thread like everything else.
    let metrics = metrics::start(&core)?;
    core.borrow_mut().relisten = Some(relisten_hook(listeners.clone(), metrics));
    // Polling before sleeping (`idle-poll-us`): connections report activity to it.
    let idle_poll = Rc::new(IdlePoll::new(core.borrow().limits.idle_poll).watching_cpu_pressure());
    tokio::task::spawn_local(idle_poll.clone().run());
    let mut sigterm = signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut sigint = signal(tokio::signal::unix::SignalKind::interrupt())?;
    loop {
        tokio::select! {
            result = &mut loading, if !loaded => {
                loaded = true;
                if let Err(e) = result {
                    tracing::error!("{e}");
                    return Err(std::io::Error::other(e.to_string()));
                }
                // Listening and loaded: a client connecting now is served, and a
                // replica connects to its primary.
                let (poller, limits) = (idle_poll.clone(), core.clone());
                crate::replication::start(&core, Rc::new(move || {
                    poller.set_window(limits.borrow().limits.idle_poll);
                    poller.note_activity();
                }));
                notifier.ready();
            }
            accepted = listeners::Accept(&listeners) => match accepted {
                Ok((socket, peer, tls)) => spawn_client(socket, peer, tls, &core, &stop, &idle_poll),
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            _ = stop.notified() => {
                tracing::warn!("User requested shutdown...");
                notifier.stopping();
                return Ok(StopReason::Shutdown);
            }
            _ = sigterm.recv() => {
                tracing::warn!("Received SIGTERM scheduling shutdown...");
                notifier.stopping();
                return Ok(StopReason::Signal);
            }
            _ = sigint.recv() => {
                tracing::warn!("Received SIGINT scheduling shutdown...");
                notifier.stopping();
                return Ok(StopReason::Signal);
            }
        }
    }
}

/// The addresses of `bind`, in order.
pub fn bind_addresses(config: &crate::config::Config) -> Vec<String> {
    config
        .get("bind")
        .unwrap_or("")
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Binds the client listeners the configuration asks for: `port` and, when `tls-port`
/// is set, `tls-port` with `acceptor`, on every `bind` address.
pub fn bind_listeners(
    config: &crate::config::Config,
    acceptor: Option<TlsAcceptor>,
) -> std::io::Result<listeners::ListenerSet> {
    let addrs = bind_addresses(config);
    let addrs: Vec<&str> = addrs.iter().map(String::as_str).collect();
    let backlog = config.get_i64("tcp-backlog");
    let port = u16::try_from(config.get_i64("port")).unwrap_or(0);
    let mut set = listeners::ListenerSet::default();
    set.set_plain(listeners::ListenerGroup::bind(&addrs, port, backlog)?);
    if let Some(acceptor) = acceptor {
        let tls_port = u16::try_from(config.get_i64("tls-port")).unwrap_or(0);
        set.set_tls(
            listeners::ListenerGroup::bind(&addrs, tls_port, backlog)?,
            Some(acceptor),
        );
    }
    Ok(set)
}

/// The CONFIG SET hook that rebinds the client and metrics listeners (Redis's
/// `applyBind`, `updatePort`, `applyTLSPort`, `applyTlsCfg`): old sockets are closed
/// before the new ones are bound, so the same address and port can be taken again.
fn relisten_hook(
    clients: listeners::SharedListeners,
    metrics: listeners::SharedListeners,
) -> crate::core::RelistenHook {
    Rc::new(move |config, what| {
        let addrs = bind_addresses(config);
        let addrs: Vec<&str> = addrs.iter().map(String::as_str).collect();
        let backlog = config.get_i64("tcp-backlog");
        let mut set = clients.borrow_mut();
        if what.bind || what.port {
            set.close_plain();
            let port = u16::try_from(config.get_i64("port")).unwrap_or(0);
            match listeners::ListenerGroup::bind(&addrs, port, backlog) {
                Ok(group) => set.set_plain(group),
                Err(e) => {
                    tracing::warn!(error = %e, "Failed to bind");
                    return Err(if what.bind {
                        "Failed to bind to specified addresses."
                    } else {
                        "Unable to listen on this port. Check server logs."
                    });
                }
            }
        }
        if what.bind || what.tls {
            set.close_tls();
            let acceptor = match tls::acceptor(config) {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "Failed to configure TLS");
                    return Err("Unable to update TLS configuration. Check server logs.");
                }
            };
            let tls_port = u16::try_from(config.get_i64("tls-port")).unwrap_or(0);
            let group = match acceptor {
                Some(_) => listeners::ListenerGroup::bind(&addrs, tls_port, backlog),
                None => Ok(listeners::ListenerGroup::default()),
            };
            match group {
                Ok(group) => set.set_tls(group, acceptor),
                Err(e) => {
                    tracing::warn!(error = %e, "Failed to bind the TLS port");
                    return Err(if what.bind {
                        "Failed to bind to specified addresses."
                    } else {
                        "Unable to listen on this port. Check server logs."
                    });
                }
            }
        }
        if what.metrics {
            let mut m = metrics.borrow_mut();
            m.close_plain();
            match metrics::bind(config) {
                Ok(group) => m.set_plain(group),
                Err(e) => {
                    tracing::warn!(error = %e, "Failed to bind the metrics port");
                    return Err("Unable to listen on this port. Check server logs.");
                }
            }
        }
        Ok(set.plain.port().unwrap_or(0))
    })
}

fn signal(kind: tokio::signal::unix::SignalKind) -> std::io::Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(kind)
}

/// Sleeps until the earliest BLOCK deadline (or until an earlier one appears) and
/// answers the clients whose timeout passed.
fn spawn_block_timer(core: SharedCore) {
    let notify = core.borrow().block_timer.clone();
    tokio::task::spawn_local(async move {
        loop {
            let next = core.borrow().blocked.next_deadline();
            let sleep = match next {
                // A deadline is due once it has passed (`BlockedClients::expired`).
                Some(deadline) => Duration::from_millis((deadline + 1).saturating_sub(unix_ms())),
                None => Duration::from_secs(3600),
            };
            tokio::select! {
                _ = tokio::time::sleep(sleep) => {}
                _ = notify.notified() => {}
            }
            core.borrow_mut().expire_blocked(unix_ms());
        }
    });
}

/// Resumes a script that ran past `busy-reply-threshold`, one slice at a time, letting
/// the connection tasks answer `-BUSY` in between (`scripting::resume_busy`).
fn spawn_script_driver(core: SharedCore) {
    let notify = core.borrow().script_driver.clone();
    tokio::task::spawn_local(async move {
        loop {
            notify.notified().await;
            loop {
                tokio::task::yield_now().await;
                let mut c = core.borrow_mut();
                if c.shutdown.is_some() || !crate::scripting::resume_busy(&mut c) {
                    break;
                }
            }
        }
    });
}

/// Goes on evicting keys between commands while memory stays over `maxmemory`
/// (Redis's `evictionTimeProc`): started by CONFIG SET maxmemory and by an eviction
/// run that used up its time, it runs one eviction run per turn of the event loop,
/// letting clients in between, until memory is within the limit or nothing is left
/// to evict. Its DELs are written out as a command's would be.
/// Writes subscribers' Pub/Sub messages from the core (`core/direct_write.rs`): woken
/// once by a batch that published to idle subscribers, it runs after that batch, as
/// Redis writes its pending clients before its event loop sleeps.
fn spawn_direct_flusher(core: SharedCore) {
    let wake = core.borrow().direct_wake.clone();
    tokio::task::spawn_local(async move {
        loop {
            wake.notified().await;
            core.borrow_mut().flush_direct();
        }
    });
}

fn spawn_eviction_driver(core: SharedCore) {
    let notify = core.borrow().eviction_driver.clone();
    tokio::task::spawn_local(async move {
        loop {
            notify.notified().await;
            loop {
                tokio::task::yield_now().await;
                let more = {
                    let mut c = core.borrow_mut();
                    if c.shutdown.is_some() {
                        c.evict.running = false;
                        break;
                    }
                    c.begin_batch();
                    let result = c.perform_evictions();
                    // Readers blocked on an evicted key (XREADGROUP) are answered now.
                    c.handle_ready_keys();
                    let more = result == crate::core::evict::EvictResult::Running
                        && !c.loading
                        && c.busy.is_none();
                    if !more {
                        c.evict.running = false;
                    }
                    more
                };
                if crate::persist::commit(&core).await.is_err() {
                    break;
                }
                if !more {
                    break;
                }
            }
        }
    });
}

/// The tiering mover's own tick (`core/tier.rs`): small rounds often, so a fast writer
/// is followed closely and no round holds the core for long. Sleeps a second at a time
/// while no segment store is open.
fn spawn_tier_mover(core: SharedCore) {
    tokio::task::spawn_local(async move {
        loop {
            let open = core.borrow().tier.is_open();
            let pause = if open {
                TIER_TICK
            } else {
                Duration::from_secs(1)
            };
            tokio::time::sleep(pause).await;
            if open {
                core.borrow_mut().tier_mover_tick();
            }
        }
    });
}

/// How often the tiering mover runs while a segment store is open.
const TIER_TICK: Duration = Duration::from_millis(10);

/// Periodic background work, `hz` times a second (Redis's serverCron): active expiry.
fn spawn_cron(core: SharedCore) {
    tokio::task::spawn_local(async move {
        loop {
            let hz = core.borrow().config.get_i64("hz").clamp(1, 500) as u64;
            tokio::time::sleep(Duration::from_millis(1000 / hz)).await;
            let mut c = core.borrow_mut();
            c.cron();
        }
    });
}
