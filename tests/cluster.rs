//! The cluster bus codec (`streamd::cluster::bus`) against a live Redis 7.0.
//!
//! Each test starts two cluster-enabled `redis-server`s (A and B) on 127.0.0.1, gives them
//! slots and distinct config epochs, and lets them MEET. A fake node of ours (a 40-hex-char
//! id, a listener on its announced cluster port) then MEETs A over A's bus port with a frame
//! our encoder built. Everything Redis sends back, on our connection and on the ones it and
//! B open to our listener, is decoded by our decoder, checked field by field against what
//! `CLUSTER MYID` / `CLUSTER INFO` / `CLUSTER NODES` say, and re-encoded: the re-encoding
//! must equal the received bytes exactly.
//!
//! Every wait is bounded; the servers are killed by a guard's `Drop`, also when a test fails.

mod common;

use common::free_port_pair;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use bytes::Bytes;
use streamd::cluster::bus::{
    self, Body, Header, IpField, Message, MessageType, NodeName, PingBody, PingExt,
};
use streamd::cluster::nodes_conf::{NodeFlags, NodesConf};
use streamd::cluster::slots::SlotBitmap;

/// Bound on every wait of these tests.
const WAIT: Duration = Duration::from_secs(15);
/// The fake node's id.
const FAKE_ID: &str = "f00dfacef00dfacef00dfacef00dfacef00dface";
/// The client port the fake node announces (nobody connects to it).
const FAKE_PORT: u16 = 6999;

/// A cluster-enabled `redis-server` child, killed when dropped.
struct RedisNode {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Drop for RedisNode {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl RedisNode {
    fn start(config_epoch: u64, slots: (u16, u16), hostname: &str) -> RedisNode {
        let dir = tempfile::tempdir().expect("tempdir");
        let port = free_port_pair();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
            ])
            .args(["--cluster-announce-hostname", hostname])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (apt-get install redis-server)");
        let node = RedisNode { child, port, dir };
        wait_until("redis-server to answer PING", || {
            node.cli(&["ping"]) == "PONG"
        });
        let epoch = config_epoch.to_string();
        assert_eq!(node.cli(&["cluster", "set-config-epoch", &epoch]), "OK");
        let (start, end) = (slots.0.to_string(), slots.1.to_string());
        assert_eq!(node.cli(&["cluster", "addslotsrange", &start, &end]), "OK");
        node
    }

    fn cli(&self, args: &[&str]) -> String {
        let output = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli must be installed");
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    fn bus_port(&self) -> u16 {
        self.port + 10000
    }

    fn info_field(&self, field: &str) -> String {
        let info = self.cli(&["cluster", "info"]);
        info.lines()
            .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
            .unwrap_or_else(|| panic!("no {field} in CLUSTER INFO: {info}"))
            .to_string()
    }

    /// `CLUSTER NODES`, parsed with our nodes.conf parser (same format, no vars line).
    fn nodes(&self) -> Option<NodesConf> {
        NodesConf::parse(self.cli(&["cluster", "nodes"]).as_bytes()).ok()
    }
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Reads one whole frame from `stream` (which has a short read timeout), by the framing
/// rule of cluster.c clusterReadHandler: 8 bytes, then up to `totlen`. `Ok(None)` on
/// timeout or a closed connection.
fn read_frame(
    stream: &mut TcpStream,
    buffer: &mut Vec<u8>,
    deadline: Instant,
) -> Result<Option<Vec<u8>>, bus::BusError> {
    loop {
        if let Some(len) = bus::frame_length(buffer)?
            && buffer.len() >= len
        {
            return Ok(Some(buffer.drain(..len).collect()));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        let mut chunk = [0u8; 8192];
        match stream.read(&mut chunk) {
            Ok(0) => return Ok(None),
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return Ok(None),
        }
    }
}

/// What the fake node currently says about itself.
fn fake_header(cport: u16, myslots: SlotBitmap) -> Header {
    common::bus::fake_primary_header(FAKE_ID, FAKE_PORT, cport, myslots)
}

/// A frame received by the fake node: which connection, the bytes, the decoded message.
struct Received {
    /// True on connections Redis opened to our listener, false on the one we opened.
    on_accepted_link: bool,
    bytes: Vec<u8>,
    message: Message,
}

/// The fake node: our listener (answering every PING/MEET with a PONG, like a live node),
/// our own link to A, and a channel of everything received on either.
struct FakeNode {
    cport: u16,
    stop: Arc<AtomicBool>,
    /// Frames from the links Redis opened, or why one could not be framed or decoded.
    received: mpsc::Receiver<Result<Received, String>>,
    link: TcpStream,
    link_buffer: Vec<u8>,
}

impl Drop for FakeNode {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Serves one connection Redis opened to us: answers PING and MEET with a PONG and
/// forwards every frame.
fn serve_accepted(
    mut stream: TcpStream,
    cport: u16,
    stop: Arc<AtomicBool>,
    out: mpsc::Sender<Result<Received, String>>,
) {
    let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
    let mut buffer = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        let deadline = Instant::now() + Duration::from_millis(200);
        let bytes = match read_frame(&mut stream, &mut buffer, deadline) {
            Ok(Some(bytes)) => bytes,
            Ok(None) if stream.peek(&mut [0u8; 1]).is_ok_and(|n| n == 0) => return,
            Ok(None) => continue,
            Err(error) => {
                let _ = out.send(Err(format!("cannot frame Redis's bytes: {error}")));
                return;
            }
        };
        let message = match Message::decode(&bytes) {
            Ok(message) => message,
            Err(error) => {
                let _ = out.send(Err(format!("our decoder rejected a Redis frame: {error}")));
                return;
            }
        };
        if matches!(message.body, Body::Ping(_) | Body::Meet(_)) {
            let pong = Message {
                header: fake_header(cport, SlotBitmap::new()),
                body: Body::Pong(PingBody::default()),
            };
            let frame = pong.encode().expect("PONG encodes");
            if stream.write_all(&frame).is_err() {
                return;
            }
        }
        let received = Received {
            on_accepted_link: true,
            bytes,
            message,
        };
        if out.send(Ok(received)).is_err() {
            return;
        }
    }
}

impl FakeNode {
    /// Binds the listener and connects to `target`'s bus port (nothing is sent yet).
    fn start(target: &RedisNode) -> FakeNode {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind our cluster port");
        let cport = listener.local_addr().expect("addr").port();
        listener.set_nonblocking(true).expect("nonblocking");
        let stop = Arc::new(AtomicBool::new(false));
        let (sender, received) = mpsc::channel();
        let (accept_stop, accept_out) = (stop.clone(), sender.clone());
        std::thread::spawn(move || {
            while !accept_stop.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let _ = stream.set_nonblocking(false);
                        let (stop, out) = (accept_stop.clone(), accept_out.clone());
                        std::thread::spawn(move || serve_accepted(stream, cport, stop, out));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        let link = TcpStream::connect(("127.0.0.1", target.bus_port())).expect("connect to bus");
        link.set_read_timeout(Some(Duration::from_millis(100)))
            .expect("read timeout");
        FakeNode {
            cport,
            stop,
            received,
            link,
            link_buffer: Vec::new(),
        }
    }

    /// Sends `body` on our link to A, with our header claiming `myslots`.
    fn send(&mut self, body: Body, myslots: SlotBitmap) {
        let message = Message {
            header: fake_header(self.cport, myslots),
            body,
        };
        let frame = message.encode().expect("our message encodes");
        self.link.write_all(&frame).expect("write to Redis's bus");
    }

    /// Reads the next frame on our link to A.
    fn read_on_link(&mut self) -> Received {
        let deadline = Instant::now() + WAIT;
        let bytes = read_frame(&mut self.link, &mut self.link_buffer, deadline)
            .unwrap_or_else(|e| panic!("cannot frame Redis's bytes: {e}"))
            .expect("Redis answered on our link before the timeout");
        let message = Message::decode(&bytes)
            .unwrap_or_else(|e| panic!("our decoder rejected a Redis frame: {e}"));
        Received {
            on_accepted_link: false,
            bytes,
            message,
        }
    }

    /// Reads frames on our link to A until one that `wanted` accepts.
    fn read_on_link_until(&mut self, what: &str, wanted: impl Fn(&Received) -> bool) -> Received {
        let deadline = Instant::now() + WAIT;
        loop {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            let received = self.read_on_link();
            if wanted(&received) {
                return received;
            }
        }
    }

    /// Waits for a frame on a connection Redis opened to us that `wanted` accepts.
    fn wait_accepted(&self, what: &str, wanted: impl Fn(&Received) -> bool) -> Received {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.received.recv_timeout(left) {
                Ok(Ok(frame)) if wanted(&frame) => return frame,
                Ok(Ok(_)) => {}
                Ok(Err(error)) => panic!("while waiting for {what}: {error}"),
                Err(_) => panic!("timed out waiting for {what}"),
            }
        }
    }
}

/// Checks that our encoder turns the decoded message back into exactly the bytes Redis
/// sent.
fn assert_reencodes_exactly(received: &Received) {
    let again = received.message.encode().expect("re-encodes");
    assert_eq!(
        again,
        received.bytes,
        "re-encoding {:?} differs from Redis's bytes",
        received.message.body.message_type()
    );
}

/// Two Redis nodes that know each other (A: slots 0-5460, config epoch 5, hostname
/// a.test; B: slots 5461-10922, config epoch 6, hostname b.test).
fn two_node_cluster() -> (RedisNode, RedisNode) {
    let a = RedisNode::start(5, (0, 5460), "a.test");
    let b = RedisNode::start(6, (5461, 10922), "b.test");
    assert_eq!(
        a.cli(&["cluster", "meet", "127.0.0.1", &b.port.to_string()]),
        "OK"
    );
    let b_id = b.cli(&["cluster", "myid"]);
    wait_until("A and B to complete their handshake", || {
        a.nodes().is_some_and(|view| {
            view.nodes.iter().any(|n| {
                n.node.id == b_id
                    && !n.node.flags.contains(NodeFlags::HANDSHAKE)
                    && n.slots == [(5461, 10922)]
            })
        }) && a.info_field("cluster_current_epoch") == "6"
    });
    (a, b)
}

/// MEETs A and completes the handshake A then starts with us: A's PING on the link it
/// opens to our listener, answered with our PONG. Returns A's PONG to our MEET.
fn meet(a: &RedisNode, fake: &mut FakeNode) -> Received {
    fake.send(Body::Meet(PingBody::default()), SlotBitmap::new());
    let pong = fake.read_on_link();
    let a_id = a.cli(&["cluster", "myid"]);
    fake.wait_accepted("A's handshake PING on the link it opens to us", |r| {
        r.message.header.sender.to_id() == a_id
            && r.message.body.message_type() == MessageType::Ping
    });
    wait_until("A to know our node under our id", || {
        a.nodes().is_some_and(|view| {
            view.nodes
                .iter()
                .any(|n| n.node.id == FAKE_ID && !n.node.flags.contains(NodeFlags::HANDSHAKE))
        })
    });
    pong
}

#[test]
fn redis_answers_our_meet_with_a_pong_that_decodes_and_adds_our_node() {
    let (a, _b) = two_node_cluster();
    let mut fake = FakeNode::start(&a);
    let pong = meet(&a, &mut fake);

    let a_id = a.cli(&["cluster", "myid"]);
    let header = &pong.message.header;
    assert_eq!(pong.message.body.message_type(), MessageType::Pong);
    assert_eq!(header.sender.to_id(), a_id);
    assert_eq!(
        header.current_epoch.to_string(),
        a.info_field("cluster_current_epoch")
    );
    assert_eq!(
        header.config_epoch.to_string(),
        a.info_field("cluster_my_epoch")
    );
    assert_eq!(header.config_epoch, 5);
    assert_eq!(header.myslots.ranges().collect::<Vec<_>>(), [(0, 5460)]);
    assert_eq!(header.slaveof, None);
    assert_eq!(header.port, a.port);
    assert_eq!(header.cport, a.bus_port());
    assert_eq!(header.pport, 0);
    // Redis sends its own flags as they are, "myself" bit included.
    assert_eq!(header.flags.0, NodeFlags::MASTER | NodeFlags::MYSELF);
    assert_eq!(header.myip, IpField::EMPTY);
    let Body::Pong(ping) = &pong.message.body else {
        unreachable!("checked above");
    };
    assert_eq!(
        ping.extensions,
        [PingExt::Hostname(Bytes::from_static(b"a.test"))]
    );
    assert_eq!(header.mflags, [bus::MFLAG0_EXT_DATA, 0, 0]);

    // The recorded bytes themselves, independently of our decoder.
    let bytes = &pong.bytes;
    assert_eq!(&bytes[0..4], b"RCmb");
    assert_eq!(
        u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize,
        bytes.len()
    );
    assert_eq!(&bytes[8..10], &[0, 1], "version 1, big-endian");
    assert_eq!(&bytes[12..14], &[0, 1], "type PONG");
    assert_eq!(&bytes[40..80], a_id.as_bytes());
    assert_eq!(
        bytes[80], 0xFF,
        "slots 0..=7 are the low bits of myslots[0]"
    );
    let tail = &bytes[bytes.len() - 16..];
    assert_eq!(
        tail, b"\0\0\0\x10\0\0\0\0a.test\0\0",
        "hostname extension, 8-byte padded"
    );
    assert_reencodes_exactly(&pong);

    // A now lists our node as we announced it, with the address it saw us connect from.
    let view = a.nodes().expect("CLUSTER NODES parses");
    let ours = view
        .nodes
        .iter()
        .find(|n| n.node.id == FAKE_ID)
        .expect("our node is listed");
    assert_eq!(
        (ours.node.ip.as_str(), ours.node.port, ours.node.cport),
        ("127.0.0.1", FAKE_PORT, fake.cport)
    );
    assert!(ours.node.flags.contains(NodeFlags::MASTER));
    assert!(ours.slots.is_empty());
}

#[test]
fn redis_meets_and_pings_on_links_it_opens_to_us_decode_and_reencode_exactly() {
    let (a, b) = two_node_cluster();
    let fake = FakeNode::start(&a);
    let a_id = a.cli(&["cluster", "myid"]);
    let b_id = b.cli(&["cluster", "myid"]);

    // CLUSTER MEET makes A open a link to our cluster port and send a MEET there; our
    // PONG (with our id) ends A's handshake.
    let (port, cport) = (FAKE_PORT.to_string(), fake.cport.to_string());
    assert_eq!(
        a.cli(&["cluster", "meet", "127.0.0.1", &port, &cport]),
        "OK"
    );
    let meet = fake.wait_accepted("A's MEET", |r| {
        r.message.body.message_type() == MessageType::Meet
    });
    assert!(meet.on_accepted_link);
    assert_reencodes_exactly(&meet);
    let header = &meet.message.header;
    assert_eq!(header.sender.to_id(), a_id);
    assert_eq!((header.port, header.cport), (a.port, a.bus_port()));
    assert_eq!(header.config_epoch, 5);
    assert_eq!(header.current_epoch, 6);
    assert_eq!(header.myslots.ranges().collect::<Vec<_>>(), [(0, 5460)]);
    let Body::Meet(body) = &meet.message.body else {
        unreachable!("checked above");
    };
    assert_eq!(
        body.extensions,
        [PingExt::Hostname(Bytes::from_static(b"a.test"))]
    );
    wait_until("A to know our node under our id", || {
        a.nodes().is_some_and(|view| {
            view.nodes
                .iter()
                .any(|n| n.node.id == FAKE_ID && !n.node.flags.contains(NodeFlags::HANDSHAKE))
        })
    });

    // A gossips about us to B; B adds us under the gossiped id (no handshake: cluster.c
    // clusterProcessGossipSection) and PINGs us on a link of its own.
    let from_b = fake.wait_accepted("B's PING after A's gossip", |r| {
        r.message.header.sender.to_id() == b_id
            && r.message.body.message_type() == MessageType::Ping
    });
    assert_reencodes_exactly(&from_b);
    let header = &from_b.message.header;
    assert_eq!((header.port, header.cport), (b.port, b.bus_port()));
    assert_eq!(header.config_epoch, 6);
    assert_eq!(header.myslots.ranges().collect::<Vec<_>>(), [(5461, 10922)]);
    let Body::Ping(body) = &from_b.message.body else {
        unreachable!("checked above");
    };
    assert_eq!(
        body.extensions,
        [PingExt::Hostname(Bytes::from_static(b"b.test"))]
    );
    wait_until("B to list our node", || {
        b.nodes()
            .is_some_and(|view| view.nodes.iter().any(|n| n.node.id == FAKE_ID))
    });
}

#[test]
fn redis_gossip_entries_describe_its_peer() {
    let (a, b) = two_node_cluster();
    let mut fake = FakeNode::start(&a);
    meet(&a, &mut fake);
    let b_id = b.cli(&["cluster", "myid"]);
    // Which nodes a PONG gossips about is random (cluster.c clusterSendPing): ping until
    // one carries B.
    let deadline = Instant::now() + WAIT;
    let (pong, entry) = loop {
        assert!(
            Instant::now() < deadline,
            "no PONG gossiped about B in time"
        );
        fake.send(Body::Ping(PingBody::default()), SlotBitmap::new());
        let pong = fake.read_on_link();
        assert_reencodes_exactly(&pong);
        let Body::Pong(body) = &pong.message.body else {
            panic!("expected PONG, got {:?}", pong.message.body.message_type());
        };
        if let Some(entry) = body.gossip.iter().find(|g| g.node.to_id() == b_id).cloned() {
            break (pong, entry);
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(entry.ip.text(), b"127.0.0.1");
    assert_eq!(entry.port, b.port);
    assert_eq!(entry.cport, b.bus_port());
    assert_eq!(entry.pport, 0);
    assert_eq!(entry.flags.0, NodeFlags::MASTER);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs();
    assert!(
        u64::from(entry.pong_received).abs_diff(now) < 60,
        "pong_received is in seconds"
    );
    let Body::Pong(body) = &pong.message.body else {
        unreachable!("checked above");
    };
    let count = u16::from_be_bytes([pong.bytes[14], pong.bytes[15]]);
    assert_eq!(usize::from(count), body.gossip.len());
}

#[test]
fn redis_sends_update_when_we_claim_a_slot_of_a_newer_epoch_and_propagates_publish() {
    let (a, _b) = two_node_cluster();
    let mut fake = FakeNode::start(&a);
    meet(&a, &mut fake);
    let a_id = a.cli(&["cluster", "myid"]);

    // We claim slot 0 at config epoch 0; A owns it at epoch 5, so it tells us with an
    // UPDATE on its link to us (cluster.c clusterProcessPacket, clusterSendUpdate).
    let mut claim = SlotBitmap::new();
    claim.set(0);
    fake.send(Body::Ping(PingBody::default()), claim);
    let _pong = fake.read_on_link();
    let update = fake.wait_accepted("A's UPDATE", |r| {
        r.message.body.message_type() == MessageType::Update
    });
    assert_reencodes_exactly(&update);
    assert_eq!(update.bytes.len(), bus::HEADER_LEN + bus::UPDATE_BODY_LEN);
    let Body::Update {
        config_epoch,
        node,
        slots,
    } = &update.message.body
    else {
        unreachable!("checked above");
    };
    assert_eq!(*config_epoch, 5);
    assert_eq!(node.to_id(), a_id);
    assert_eq!(slots.ranges().collect::<Vec<_>>(), [(0, 5460)]);
    assert_eq!(slots.count(), 5461);

    // PUBLISH on A goes to every node A has a link to, us included.
    assert_eq!(a.cli(&["publish", "news", "hello bus"]), "0");
    let publish = fake.wait_accepted("A's PUBLISH", |r| {
        r.message.body.message_type() == MessageType::Publish
    });
    assert_reencodes_exactly(&publish);
    assert_eq!(
        publish.message.body,
        Body::Publish {
            channel: Bytes::from_static(b"news"),
            message: Bytes::from_static(b"hello bus"),
        }
    );
    assert_eq!(
        publish.bytes.len(),
        bus::HEADER_LEN + bus::PUBLISH_FIXED_LEN + 4 + 9
    );
}

/// Our header as a replica of `primary`, which serves `slots` at `config_epoch`.
fn replica_header(cport: u16, primary: &str, slots: (u16, u16), epochs: (u64, u64)) -> Header {
    let mut myslots = SlotBitmap::new();
    myslots.set_range(slots.0, slots.1);
    Header {
        current_epoch: epochs.0,
        config_epoch: epochs.1,
        slaveof: Some(NodeName::from_id(primary).expect("40 characters")),
        flags: NodeFlags(NodeFlags::SLAVE),
        ..fake_header(cport, myslots)
    }
}

fn send_message(fake: &mut FakeNode, header: Header, body: Body) {
    let frame = Message { header, body }.encode().expect("encodes");
    fake.link.write_all(&frame).expect("write to Redis's bus");
}

#[test]
fn redis_acts_on_our_fail_publish_vote_request_and_mfstart() {
    let (a, b) = two_node_cluster();
    let mut fake = FakeNode::start(&a);
    meet(&a, &mut fake);
    let a_id = a.cli(&["cluster", "myid"]);
    let b_id = b.cli(&["cluster", "myid"]);
    let b_name = NodeName::from_id(&b_id).expect("40 characters");

    // FAIL about B: A marks B failed (cluster.c clusterProcessPacket, FAIL branch).
    fake.send(Body::Fail { node: b_name }, SlotBitmap::new());
    wait_until("A to mark B as FAIL", || {
        a.nodes().is_some_and(|view| {
            view.nodes
                .iter()
                .any(|n| n.node.id == b_id && n.node.flags.contains(NodeFlags::FAIL))
        })
    });

    // PUBLISH over the bus reaches A's local subscribers.
    let mut subscriber = TcpStream::connect(("127.0.0.1", a.port)).expect("client connect");
    subscriber
        .set_read_timeout(Some(Duration::from_millis(100)))
        .expect("timeout");
    subscriber
        .write_all(b"SUBSCRIBE news\r\n")
        .expect("subscribe");
    read_until_contains(&mut subscriber, b":1\r\n");
    let publish = Body::Publish {
        channel: Bytes::from_static(b"news"),
        message: Bytes::from_static(b"from the bus"),
    };
    fake.send(publish, SlotBitmap::new());
    read_until_contains(
        &mut subscriber,
        b"$7\r\nmessage\r\n$4\r\nnews\r\n$12\r\nfrom the bus\r\n",
    );

    // As a replica of the failed B asking for votes at epoch 7 for B's slots at B's config
    // epoch 6, we get A's FAILOVER_AUTH_ACK (clusterSendFailoverAuthIfNeeded), on A's link
    // to us, and A's lastVoteEpoch becomes 7.
    let as_b_replica = replica_header(fake.cport, &b_id, (5461, 10922), (7, 6));
    send_message(
        &mut fake,
        as_b_replica.clone(),
        Body::Ping(PingBody::default()),
    );
    fake.read_on_link_until("A's PONG", |r| {
        r.message.body.message_type() == MessageType::Pong
    });
    wait_until("A to see us as B's replica", || {
        a.nodes().is_some_and(|view| {
            view.nodes
                .iter()
                .any(|n| n.node.id == FAKE_ID && n.node.master.as_deref() == Some(b_id.as_str()))
        })
    });
    send_message(&mut fake, as_b_replica, Body::FailoverAuthRequest);
    let ack = fake.wait_accepted("A's FAILOVER_AUTH_ACK", |r| {
        r.message.body.message_type() == MessageType::FailoverAuthAck
    });
    assert_reencodes_exactly(&ack);
    assert_eq!(ack.bytes.len(), bus::HEADER_LEN);
    assert_eq!(ack.message.header.sender.to_id(), a_id);
    assert_eq!(ack.message.header.current_epoch, 7);
    assert_eq!(ack.message.header.config_epoch, 5);
    assert_eq!(a.cli(&["cluster", "saveconfig"]), "OK");
    let saved = std::fs::read(a.dir.path().join("nodes.conf")).expect("nodes.conf");
    let saved = NodesConf::parse(&saved).expect("parses");
    assert_eq!((saved.current_epoch, saved.last_vote_epoch), (7, 7));

    // As A's replica, MFSTART makes A pause writes and PING us on the same link with
    // mflags PAUSED (cluster.c clusterProcessPacket, MFSTART branch).
    let as_a_replica = replica_header(fake.cport, &a_id, (0, 5460), (7, 5));
    send_message(
        &mut fake,
        as_a_replica.clone(),
        Body::Ping(PingBody::default()),
    );
    wait_until("A to see us as its replica", || {
        a.nodes().is_some_and(|view| {
            view.nodes
                .iter()
                .any(|n| n.node.id == FAKE_ID && n.node.master.as_deref() == Some(a_id.as_str()))
        })
    });
    send_message(&mut fake, as_a_replica, Body::MfStart);
    let paused = fake.read_on_link_until("A's PING with PAUSED", |r| {
        r.message.body.message_type() == MessageType::Ping
            && r.message.header.mflags[0] & bus::MFLAG0_PAUSED != 0
    });
    assert_reencodes_exactly(&paused);
    assert_eq!(paused.message.header.sender.to_id(), a_id);
}

/// Reads from a client connection until `needle` has arrived (bounded).
fn read_until_contains(stream: &mut TcpStream, needle: &[u8]) {
    let deadline = Instant::now() + WAIT;
    let mut seen = Vec::new();
    while !seen.windows(needle.len()).any(|w| w == needle) {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {:?}, got {:?}",
            String::from_utf8_lossy(needle),
            String::from_utf8_lossy(&seen)
        );
        let mut chunk = [0u8; 1024];
        match stream.read(&mut chunk) {
            Ok(0) => panic!("connection closed"),
            Ok(n) => seen.extend_from_slice(&chunk[..n]),
            Err(_) => {}
        }
    }
}
