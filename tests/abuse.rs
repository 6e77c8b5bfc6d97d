//! Hostile and broken clients: 10,000 concurrent connections, slowloris, a 1 GiB bulk
//! header followed by silence, 1,000 clients blocking and disconnecting in a loop, a
//! command with a million arguments, deeply nested aggregates.
//!
//! Each scenario runs against its own server while a [`Checker`] thread keeps sending
//! PING and XADD on its own connection: every PING must be answered, and every entry the
//! server acknowledged must be in the stream at the end. The scenarios run one at a time
//! (they share the machine's file descriptors and cores); the whole file takes well under
//! a minute.

mod common;

use common::{Raw, Server, encode_cmd, escape, start_server_with};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One scenario at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Connections of the many-clients scenario.
const MANY_CLIENTS: usize = 10_000;

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Raises this process's open-file limit to its hard limit (the server, spawned after,
/// inherits it); returns the limit in force.
fn raise_fd_limit() -> u64 {
    static LIMIT: OnceLock<u64> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        let read = |col: usize| {
            std::fs::read_to_string("/proc/self/limits")
                .ok()
                .and_then(|t| {
                    t.lines()
                        .find(|l| l.starts_with("Max open files"))
                        .and_then(|l| l.split_whitespace().nth(col))
                        .and_then(|v| v.parse::<u64>().ok())
                })
                .unwrap_or(1024)
        };
        let hard = read(4);
        let _ = std::process::Command::new("prlimit")
            .arg(format!("--pid={}", std::process::id()))
            .arg(format!("--nofile={hard}:{hard}"))
            .status();
        read(3)
    })
}

/// A server with room for the many-clients scenario.
fn server() -> Server {
    raise_fd_limit();
    start_server_with(&["--maxclients", "20000"])
}

/// Pings and appends on its own connection while a scenario runs.
struct Checker {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<(Vec<Vec<u8>>, u64, Duration)>,
    port: u16,
}

impl Checker {
    fn start(port: u16) -> Checker {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut raw = Raw::connect(port);
            let (mut acked, mut pings, mut worst) = (Vec::new(), 0u64, Duration::ZERO);
            while !flag.load(Ordering::Relaxed) {
                let t = Instant::now();
                assert_eq!(raw.cmd_str(&["PING"]), b"+PONG\r\n", "PING failed");
                worst = worst.max(t.elapsed());
                pings += 1;
                let reply = raw.cmd_str(&["XADD", "checker", "*", "n", &pings.to_string()]);
                assert!(reply.starts_with(b"$"), "XADD failed: {}", escape(&reply));
                acked.push(reply);
                std::thread::sleep(Duration::from_millis(5));
            }
            (acked, pings, worst)
        });
        Checker { stop, handle, port }
    }

    /// Stops the checker and verifies every acknowledged entry is there.
    fn finish(self, scenario: &str) {
        self.stop.store(true, Ordering::Relaxed);
        let (acked, pings, worst) = self.handle.join().expect("checker panicked");
        assert!(pings > 0, "the checker never got a PING in");
        let mut raw = Raw::connect(self.port);
        let len = raw.cmd_str(&["XLEN", "checker"]);
        assert_eq!(len, format!(":{}\r\n", acked.len()).into_bytes());
        let range = raw.cmd_str(&["XRANGE", "checker", "-", "+"]);
        for id in &acked {
            // `$<len>\r\n<id>\r\n` appears as is inside the XRANGE reply.
            assert!(
                range.windows(id.len()).any(|w| w == id.as_slice()),
                "acknowledged {} is missing",
                escape(id)
            );
        }
        eprintln!(
            "{scenario}: {pings} PINGs answered while it ran, slowest {worst:?}; {} acknowledged entries all present",
            acked.len()
        );
    }
}

/// One `field:value` of INFO.
fn info(raw: &mut Raw, field: &str) -> u64 {
    let text = String::from_utf8_lossy(&raw.cmd_str(&["INFO", "everything"])).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in INFO"))
}

/// Polls INFO until `field` satisfies `ok` (at most 20 s); returns the last value.
fn wait_info(raw: &mut Raw, field: &str, ok: impl Fn(u64) -> bool) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let v = info(raw, field);
        if ok(v) || Instant::now() > deadline {
            return v;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ten_thousand_concurrent_connections() {
    let _serial = serial();
    let limit = raise_fd_limit();
    assert!(
        limit >= MANY_CLIENTS as u64 + 500,
        "the open-file limit is {limit}; this test needs {} (ulimit -Hn)",
        MANY_CLIENTS + 500
    );
    let server = server();
    let checker = Checker::start(server.port);
    let mut admin = server.raw();
    let before = info(&mut admin, "used_memory");
    let mut conns: Vec<TcpStream> = (0..MANY_CLIENTS)
        .map(|i| {
            TcpStream::connect(("127.0.0.1", server.port))
                .unwrap_or_else(|e| panic!("connection {i}: {e}"))
        })
        .collect();
    for c in &mut conns {
        c.write_all(b"*1\r\n$4\r\nPING\r\n").expect("send PING");
    }
    for (i, c) in conns.iter_mut().enumerate() {
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut buf = [0u8; 7];
        c.read_exact(&mut buf)
            .unwrap_or_else(|e| panic!("connection {i}: {e}"));
        assert_eq!(&buf, b"+PONG\r\n");
    }
    let connected = info(&mut admin, "connected_clients");
    assert!(connected > MANY_CLIENTS as u64, "{connected} connected");
    let during = info(&mut admin, "used_memory");
    eprintln!(
        "{MANY_CLIENTS} idle clients: used_memory {before} -> {during} ({} bytes per client)",
        during.saturating_sub(before) / MANY_CLIENTS as u64
    );
    drop(conns);
    let left = wait_info(&mut admin, "connected_clients", |n| n <= 3);
    assert!(left <= 3, "{left} clients still connected");
    checker.finish("10,000 connections");
}

#[test]
fn slowloris_clients_do_not_hold_up_others() {
    let _serial = serial();
    let server = server();
    let checker = Checker::start(server.port);
    let port = server.port;
    // 20 clients send a PING one byte per 100 ms; 5 more trickle a bulk that never ends.
    let slow: Vec<JoinHandle<Vec<u8>>> = (0..25)
        .map(|i| {
            std::thread::spawn(move || {
                let mut raw = Raw::connect(port);
                let bytes: &[u8] = if i < 20 {
                    b"*1\r\n$4\r\nPING\r\n"
                } else {
                    b"*2\r\n$4\r\nECHO\r\n$100000\r\nxxxx"
                };
                for b in bytes {
                    raw.send(std::slice::from_ref(b));
                    std::thread::sleep(Duration::from_millis(100));
                }
                if i < 20 { raw.read_reply() } else { Vec::new() }
            })
        })
        .collect();
    for h in slow {
        let reply = h.join().expect("slow client");
        assert!(
            reply.is_empty() || reply == b"+PONG\r\n",
            "{}",
            escape(&reply)
        );
    }
    checker.finish("slowloris");
}

#[test]
fn a_huge_bulk_header_then_silence_keeps_memory_bounded() {
    let _serial = serial();
    let server = server();
    let checker = Checker::start(server.port);
    let mut admin = server.raw();
    // By default a 1 GiB bulk is over proto-max-bulk-len (512 MiB).
    let mut raw = server.raw();
    raw.send(b"*2\r\n$4\r\nECHO\r\n$1073741824\r\n");
    assert_eq!(
        raw.read_to_close(),
        b"-ERR Protocol error: invalid bulk length\r\n"
    );
    // Allowed, 50 clients each announce 1 GiB and send nothing more.
    assert_eq!(
        admin.cmd_str(&["CONFIG", "SET", "proto-max-bulk-len", "2gb"]),
        b"+OK\r\n"
    );
    let before = info(&mut admin, "used_memory");
    let input = info(&mut admin, "total_net_input_bytes");
    let header = b"*2\r\n$4\r\nECHO\r\n$1073741824\r\n";
    let silent: Vec<Raw> = (0..50)
        .map(|_| {
            let mut r = server.raw();
            r.send(header);
            r
        })
        .collect();
    wait_info(&mut admin, "connected_clients", |n| n >= 52);
    let want = input + 50 * header.len() as u64;
    wait_info(&mut admin, "total_net_input_bytes", |n| n >= want);
    let after = info(&mut admin, "used_memory");
    eprintln!("50 silent 1 GiB bulks: used_memory {before} -> {after}");
    // Far below the 50 GiB announced: about 1 MiB each at most.
    assert!(after < before + 50 * (2 << 20), "{before} -> {after}");
    assert_eq!(admin.cmd_str(&["PING"]), b"+PONG\r\n");
    drop(silent);
    checker.finish("1 GiB bulk headers");
}

/// Opens `n` connections that each block in XREAD or XREADGROUP on `jobs`.
async fn open_blocked(port: u16, n: usize) -> Vec<tokio::net::TcpStream> {
    let mut conns = Vec::new();
    for i in 0..n {
        let mut c = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        let consumer = format!("c{i}");
        let cmd = if i % 2 == 0 {
            encode_cmd(&[b"XREAD", b"BLOCK", b"0", b"STREAMS", b"jobs", b"$"])
        } else {
            encode_cmd(&[
                b"XREADGROUP",
                b"GROUP",
                b"g",
                consumer.as_bytes(),
                b"BLOCK",
                b"0",
                b"STREAMS",
                b"jobs",
                b">",
            ])
        };
        tokio::io::AsyncWriteExt::write_all(&mut c, &cmd)
            .await
            .expect("send");
        conns.push(c);
    }
    conns
}

#[test]
fn a_thousand_clients_block_and_disconnect_in_a_loop() {
    let _serial = serial();
    let server = server();
    let checker = Checker::start(server.port);
    let port = server.port;
    let mut admin = server.raw();
    assert_eq!(
        admin.cmd_str(&["XGROUP", "CREATE", "jobs", "g", "$", "MKSTREAM"]),
        b"+OK\r\n"
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let _enter = runtime.enter();
    for round in 0..3 {
        let conns = runtime.block_on(open_blocked(port, 1000));
        let blocked = wait_info(&mut admin, "blocked_clients", |n| n == 1000);
        assert_eq!(blocked, 1000, "round {round}");
        drop(conns);
        let left = wait_info(&mut admin, "blocked_clients", |n| n == 0);
        assert_eq!(left, 0, "round {round}: blocked clients left behind");
    }
    // Nothing was delivered to the clients that left; a new reader gets the next entry.
    let mut reader = server.raw();
    reader.send(&encode_cmd(&[
        b"XREADGROUP",
        b"GROUP",
        b"g",
        b"last",
        b"BLOCK",
        b"0",
        b"STREAMS",
        b"jobs",
        b">",
    ]));
    wait_info(&mut admin, "blocked_clients", |n| n == 1);
    assert_eq!(
        admin.cmd_str(&["XADD", "jobs", "1-1", "f", "v"]),
        b"$3\r\n1-1\r\n"
    );
    let reply = reader.read_reply();
    assert!(
        reply.starts_with(b"*1\r\n*2\r\n$4\r\njobs\r\n"),
        "{}",
        escape(&reply)
    );
    let pending = admin.cmd_str(&["XPENDING", "jobs", "g"]);
    assert!(pending.starts_with(b"*4\r\n:1\r\n"), "{}", escape(&pending));
    drop(server.raw());
    checker.finish("1,000 blocking clients x 3");
}

#[test]
fn a_command_with_a_million_arguments() {
    let _serial = serial();
    let server = server();
    let checker = Checker::start(server.port);
    // XADD big 1-1 + 499,999 field/value pairs = 1,000,001 arguments.
    let pairs = 499_999;
    let mut args: Vec<Vec<u8>> = vec![b"XADD".to_vec(), b"big".to_vec(), b"1-1".to_vec()];
    for i in 0..pairs {
        args.push(format!("f{i}").into_bytes());
        args.push(b"v".to_vec());
    }
    let argv: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    assert!(argv.len() > 1_000_000);
    let mut raw = server.raw();
    raw.set_timeout(Duration::from_secs(60));
    assert_eq!(raw.cmd(&argv), b"$3\r\n1-1\r\n");
    assert_eq!(raw.cmd_str(&["XLEN", "big"]), b":1\r\n");
    let entry = raw.cmd_str(&["XRANGE", "big", "-", "+"]);
    let header = format!("*1\r\n*2\r\n$3\r\n1-1\r\n*{}\r\n", 2 * pairs);
    assert!(
        entry.starts_with(header.as_bytes()),
        "{}",
        escape(&entry[..64])
    );
    // With a query buffer limit below its size, the same command closes the client.
    assert_eq!(
        raw.cmd_str(&["CONFIG", "SET", "client-query-buffer-limit", "1mb"]),
        b"+OK\r\n"
    );
    let mut other = server.raw();
    other.set_timeout(Duration::from_secs(60));
    let bytes = encode_cmd(&argv);
    let _ = other.stream.write_all(&bytes);
    assert_eq!(other.read_to_close(), b"");
    assert_eq!(raw.cmd_str(&["XLEN", "big"]), b":1\r\n");
    checker.finish("1M arguments");
}

#[test]
fn deeply_nested_aggregates_are_refused() {
    let _serial = serial();
    let server = server();
    let checker = Checker::start(server.port);
    // Requests are arrays of bulk strings: a nested array is a protocol error.
    let mut raw = server.raw();
    raw.send(&b"*1\r\n".repeat(100_000));
    assert_eq!(
        raw.read_to_close(),
        b"-ERR Protocol error: expected '$', got '*'\r\n"
    );
    // RESP3 aggregate types as requests are inline commands, answered one by one.
    for prefix in ["%1", "~1", ">1", "|1"] {
        let mut raw = server.raw();
        raw.hello3();
        raw.send(format!("{prefix}\r\n").repeat(10_000).as_bytes());
        for _ in 0..10_000 {
            let reply = raw.read_reply();
            assert!(
                reply.starts_with(b"-ERR unknown command"),
                "{}",
                escape(&reply)
            );
        }
        assert_eq!(raw.cmd_str(&["PING"]), b"+PONG\r\n");
    }
    checker.finish("nested aggregates");
}
