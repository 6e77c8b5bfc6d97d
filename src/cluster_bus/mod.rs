//! The cluster bus of a `cluster-enabled yes` node: the listener on the cluster port,
//! one outbound link per known node, the inbound connections peers open to us, and the
//! 100 ms timer that drives gossip, failure detection and elections.
//!
//! **Its layer.** Above `replication` (a cluster replica is a replica: the rules point
//! the replication link at a primary and promote) and below `server`; the frames are
//! `cluster::bus`, the state is the core's `core::cluster::ClusterState`, the rules are
//! [`engine`]. Commands reach the bus only through the state: they queue a
//! `BusRequest` and wake the timer task.
//!
//! **Links.** As in Redis, every node sends its PINGs (and MEET, FAIL, UPDATE, votes)
//! on its own outbound link to a peer, and answers PONG on the connection a PING came
//! in on. A link's frames wait in an unbounded queue; its task writes them in order.
//! A link is forgotten ([`Bus::free_node`]) when its node changes address, goes silent
//! for the node timeout, or leaves the table; the timer opens a new one.

pub mod engine;

use crate::cluster::bus::frame_length;
use crate::core::SharedCore;
use bytes::BytesMut;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, mpsc};

/// Names one outbound link.
pub type LinkId = u64;

/// The largest frame we accept (a PING of 1000 nodes' gossip is ~100 KiB; a PUBLISH
/// may carry a large message).
const MAX_FRAME: usize = 512 * 1024 * 1024;

/// One outbound link: the node it reaches and its frame queue.
struct OutLink {
    node: String,
    connected: bool,
    tx: mpsc::UnboundedSender<Vec<u8>>,
    rx: Option<mpsc::UnboundedReceiver<Vec<u8>>>,
    stop: Rc<Notify>,
}

/// The outbound links, by id and by node, and the timer's counters.
pub struct Bus {
    links: HashMap<LinkId, OutLink>,
    by_node: HashMap<String, LinkId>,
    next: LinkId,
    /// State of the small random generator (gossip picks, election delays).
    pub rng: u64,
    /// Timer runs so far.
    pub iteration: u64,
    /// Nothing is sent (see [`Bus::set_muted`]).
    muted: bool,
}

impl Bus {
    fn new() -> Bus {
        let seed = crate::core::unix_ms() ^ (u64::from(std::process::id()) << 32);
        Bus {
            links: HashMap::new(),
            by_node: HashMap::new(),
            next: 1,
            rng: seed | 1,
            iteration: 0,
            muted: false,
        }
    }

    /// A new outbound link to node `node` (its task is started by the caller).
    pub fn register(&mut self, node: &str, _now: u64) -> LinkId {
        self.free_node(node);
        let id = self.next;
        self.next += 1;
        let (tx, rx) = mpsc::unbounded_channel();
        self.links.insert(
            id,
            OutLink {
                node: node.to_string(),
                connected: false,
                tx,
                rx: Some(rx),
                stop: Rc::new(Notify::new()),
            },
        );
        self.by_node.insert(node.to_string(), id);
        id
    }

    /// Whether node `node` has a link (connected or connecting).
    pub fn has_link(&self, node: &str) -> bool {
        self.by_node.contains_key(node)
    }

    /// Whether node `node`'s link is connected.
    pub fn connected(&self, node: &str) -> bool {
        self.by_node
            .get(node)
            .and_then(|id| self.links.get(id))
            .is_some_and(|l| l.connected)
    }

    /// Notes that link `link` connected.
    pub fn set_connected(&mut self, link: LinkId) {
        if let Some(l) = self.links.get_mut(&link) {
            l.connected = true;
        }
    }

    /// The node link `link` reaches.
    pub fn node_of(&self, link: LinkId) -> Option<String> {
        self.links.get(&link).map(|l| l.node.clone())
    }

    /// Silences the bus, or lets it speak again. A fenced restarted primary
    /// (`min-sync-replicas`, core/syncrepl.rs) sends nothing, not even PONGs, yet reads
    /// every frame: to the others it is down, so after `cluster-node-timeout` a replica
    /// of its sync set is elected, and the new owner's PINGs, read here, turn it into
    /// that owner's replica, which lifts the fence (as `SYNCSET CONFIRM` does).
    pub fn set_muted(&mut self, muted: bool) {
        if muted != self.muted {
            if muted {
                tracing::warn!(
                    "Fenced primary: silent on the cluster bus until another node takes my slots or SYNCSET CONFIRM"
                );
            } else {
                tracing::info!("No longer fenced: speaking on the cluster bus again");
            }
            self.muted = muted;
        }
    }

    /// Whether the bus is silenced.
    pub fn muted(&self) -> bool {
        self.muted
    }

    /// Queues `frame` on node `node`'s link; false when it has none (or the bus is
    /// muted: the frame is dropped).
    pub fn send(&mut self, node: &str, frame: Vec<u8>) -> bool {
        if self.muted {
            return false;
        }
        match self.by_node.get(node).and_then(|id| self.links.get(id)) {
            Some(link) => link.tx.send(frame).is_ok(),
            None => false,
        }
    }

    /// Drops node `node`'s link; its task closes the connection.
    pub fn free_node(&mut self, node: &str) {
        if let Some(id) = self.by_node.remove(node)
            && let Some(link) = self.links.remove(&id)
        {
            link.stop.notify_one();
        }
    }

    /// Forgets link `link` (its connection ended); the node it reached, if it was still
    /// that node's link.
    pub fn close(&mut self, link: LinkId) -> Option<String> {
        let l = self.links.remove(&link)?;
        if self.by_node.get(&l.node) == Some(&link) {
            self.by_node.remove(&l.node);
        }
        Some(l.node)
    }

    /// Node `old` is now called `new` (a finished handshake).
    pub fn rename(&mut self, old: &str, new: &str) {
        if let Some(id) = self.by_node.remove(old) {
            if let Some(l) = self.links.get_mut(&id) {
                l.node = new.to_string();
            }
            self.by_node.insert(new.to_string(), id);
        }
    }

    /// Drops the links of nodes not in `known`.
    pub fn retain_nodes(&mut self, known: &[String]) {
        let gone: Vec<String> = self
            .by_node
            .keys()
            .filter(|n| !known.contains(n))
            .cloned()
            .collect();
        for n in gone {
            self.free_node(&n);
        }
    }
}

/// The shared bus of the running node.
pub type SharedBus = Rc<RefCell<Bus>>;

/// Starts the bus on `listener`: the accept loop and the timer, on the current
/// `LocalSet`.
pub fn start(core: &SharedCore, listener: TcpListener) {
    let bus: SharedBus = Rc::new(RefCell::new(Bus::new()));
    {
        let c = core.borrow();
        if let Some(st) = c.cluster.as_deref() {
            tracing::info!(node_id = st.my_id(), "cluster bus started");
        }
    }
    tokio::task::spawn_local(accept_loop(core.clone(), bus.clone(), listener));
    tokio::task::spawn_local(timer(core.clone(), bus));
}

async fn accept_loop(core: SharedCore, bus: SharedBus, listener: TcpListener) {
    let mut next_conn: u64 = 0;
    loop {
        match listener.accept().await {
            Ok((socket, peer)) => {
                let _ = socket.set_nodelay(true);
                let local = socket
                    .local_addr()
                    .map(|a| a.ip().to_string())
                    .unwrap_or_default();
                next_conn += 1;
                let src = engine::Source::Inbound {
                    peer_ip: peer.ip().to_string(),
                    local_ip: local,
                    conn: next_conn,
                };
                tokio::task::spawn_local(inbound(core.clone(), bus.clone(), socket, src));
            }
            Err(e) => {
                tracing::debug!(error = %e, "cluster bus accept failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// Reads whole frames from `socket` into `buf`; `None` at EOF, error or a bad frame.
async fn next_frame(
    socket: &mut (impl AsyncReadExt + Unpin),
    buf: &mut BytesMut,
) -> Option<BytesMut> {
    loop {
        match frame_length(buf) {
            Err(_) => return None,
            Ok(Some(len)) if len > MAX_FRAME => return None,
            Ok(Some(len)) if buf.len() >= len => return Some(buf.split_to(len)),
            Ok(_) => {}
        }
        buf.reserve(16 * 1024);
        match socket.read_buf(buf).await {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
    }
}

/// A connection a peer opened: every frame is processed, PINGs and MEETs answered.
async fn inbound(core: SharedCore, bus: SharedBus, mut socket: TcpStream, src: engine::Source) {
    let mut buf = BytesMut::with_capacity(16 * 1024);
    while let Some(frame) = next_frame(&mut socket, &mut buf).await {
        let reply = {
            let mut c = core.borrow_mut();
            let mut b = bus.borrow_mut();
            engine::process(&mut c, &mut b, &frame, &src)
        };
        if let Some(reply) = reply
            && socket.write_all(&reply).await.is_err()
        {
            break;
        }
    }
    if let engine::Source::Inbound { conn, .. } = src {
        engine::on_inbound_closed(&mut core.borrow_mut(), conn);
    }
}

/// Our link `link` to `ip:cport`: connect (within the node timeout), send what is
/// queued, process what comes back, until the bus drops the link or it fails.
async fn outbound(core: SharedCore, bus: SharedBus, link: LinkId, ip: String, cport: u16) {
    let (rx, stop, timeout) = {
        let mut b = bus.borrow_mut();
        let Some(l) = b.links.get_mut(&link) else {
            return;
        };
        let timeout = core
            .borrow()
            .config
            .get_i64("cluster-node-timeout")
            .clamp(100, 60_000) as u64;
        (l.rx.take(), l.stop.clone(), timeout)
    };
    let Some(mut rx) = rx else { return };
    let connected = tokio::time::timeout(
        Duration::from_millis(timeout),
        TcpStream::connect((ip.as_str(), cport)),
    )
    .await;
    let socket = match connected {
        Ok(Ok(s)) => s,
        _ => {
            let mut c = core.borrow_mut();
            let mut b = bus.borrow_mut();
            engine::on_link_closed(&mut c, &mut b, link);
            return;
        }
    };
    let _ = socket.set_nodelay(true);
    {
        let mut c = core.borrow_mut();
        let mut b = bus.borrow_mut();
        if !b.links.contains_key(&link) {
            return;
        }
        engine::on_connected(&mut c, &mut b, link);
    }
    let (mut reader, mut writer) = socket.into_split();
    let write_half = async move {
        while let Some(frame) = rx.recv().await {
            if writer.write_all(&frame).await.is_err() {
                break;
            }
        }
    };
    let read_half = async {
        let mut buf = BytesMut::with_capacity(16 * 1024);
        while let Some(frame) = next_frame(&mut reader, &mut buf).await {
            let mut c = core.borrow_mut();
            let mut b = bus.borrow_mut();
            let _ = engine::process(&mut c, &mut b, &frame, &engine::Source::Outbound(link));
        }
    };
    tokio::select! {
        _ = write_half => {}
        _ = read_half => {}
        _ = stop.notified() => {}
    }
    let mut c = core.borrow_mut();
    let mut b = bus.borrow_mut();
    engine::on_link_closed(&mut c, &mut b, link);
}

/// The 100 ms timer, woken early when a command queues a request.
async fn timer(core: SharedCore, bus: SharedBus) {
    let wake = match core.borrow().cluster.as_deref() {
        Some(st) => st.wake.clone(),
        None => return,
    };
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let full = tokio::select! {
            _ = tick.tick() => true,
            _ = wake.notified() => false,
        };
        let connects = {
            let mut c = core.borrow_mut();
            let mut b = bus.borrow_mut();
            if full {
                engine::cron(&mut c, &mut b)
            } else {
                engine::handle_requests(&mut c, &mut b);
                Vec::new()
            }
        };
        for conn in connects {
            tokio::task::spawn_local(outbound(
                core.clone(),
                bus.clone(),
                conn.link,
                conn.ip,
                conn.cport,
            ));
        }
    }
}
