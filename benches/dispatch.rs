//! Command dispatch benchmarks: one command run through `Core::execute`, the path a
//! connection takes for each parsed request, without the socket (`src/core/mod.rs`,
//! `src/scripting/`).
//!
//! The network benchmarks (`streamd-bench`, `scripts/bench-scripting`) say how streamd
//! compares with Redis, but on this project's shared two-core machines their rounds move
//! by ±20% from one to the next. These measure the server's own user-space work per
//! command, which is what most per-command changes touch, with divan's spread.
//!
//! - `ping`, `set`, `get`, `incr`: the per-command framework (lookup, checks, statistics,
//!   the command clock) around a small command.
//! - `evalsha_incr`: `EVALSHA` of `return redis.call('INCR', KEYS[1])` (the
//!   `scripts/bench-scripting` "one" workload): the script cache, KEYS and ARGV, a run,
//!   one `redis.call`, its reply converted both ways.
//! - `evalsha_twenty`: the "twenty" workload (ten HSETs, ten ZADDs, a ZCARD).
//! - `evalsha_xtrim`: the "xtrim" workload (`XADD *` and `XTRIM MAXLEN ~ 1000`).
//! - `bitfield_incrby`, `getbit`, `setbit`: the `bitmaps/*-p32` commands on a 1 MiB
//!   string.
//! - `geodist`: `GEODIST` of two members of a 1,000-point set, in km.
//! - `auction_bid`: one bid of `auction/1024x32` (a reader blocked on 32 shards woken by
//!   an XADD, served, and acknowledging): blocking, waking and the 32-key group read.
//!
//! Run: `cargo bench --bench dispatch`.

use bytes::Bytes;
use divan::{Bencher, black_box};
use streamd::core::Core;
use streamd::core::client::Client;
use streamd::resp::writer::{Protocol, RespWriter};

fn main() {
    divan::main();
}

/// A core with every command and scripting, as `streamd::serve` builds it.
fn core() -> Core {
    let mut core = Core::new(
        streamd::config::Config::default(),
        7000,
        streamd::scripting::table(),
    );
    core.script_may_write = Some(streamd::scripting::may_write);
    core
}

fn client() -> Client {
    Client::new(
        1,
        "127.0.0.1:1".into(),
        "127.0.0.1:7000".into(),
        true,
        0,
        streamd::core::mailbox::mailbox().0,
    )
}

fn argv(words: &[&str]) -> Vec<Bytes> {
    words
        .iter()
        .map(|w| Bytes::copy_from_slice(w.as_bytes()))
        .collect()
}

/// Runs `words` once and answers the reply (for set-up and checks).
fn run(core: &mut Core, client: &mut Client, words: &[&str]) -> Vec<u8> {
    let mut out = RespWriter::new(Protocol::Resp2);
    core.execute(client, argv(words), &mut out);
    out.buf
}

/// Times `words` run again and again on a core prepared by `setup`; the reply must
/// start with `expect` (checked once, so a broken command cannot look fast).
fn bench_command(bencher: Bencher, setup: &[&[&str]], words: &[&str], expect: &[u8]) {
    let mut core = core();
    let mut client = client();
    for s in setup {
        run(&mut core, &mut client, s);
    }
    let reply = run(&mut core, &mut client, words);
    assert!(
        reply.starts_with(expect),
        "{words:?} answered {:?}",
        String::from_utf8_lossy(&reply)
    );
    let request = argv(words);
    let mut out = RespWriter::new(Protocol::Resp2);
    bencher.bench_local(|| {
        out.buf.clear();
        black_box(core.execute(&mut client, request.clone(), &mut out));
    });
}

#[divan::bench]
fn ping(bencher: Bencher) {
    bench_command(bencher, &[], &["PING"], b"+PONG");
}

#[divan::bench]
fn set(bencher: Bencher) {
    bench_command(bencher, &[], &["SET", "key:1", "value"], b"+OK");
}

#[divan::bench]
fn get(bencher: Bencher) {
    bench_command(
        bencher,
        &[&["SET", "key:1", "value"]],
        &["GET", "key:1"],
        b"$5",
    );
}

#[divan::bench]
fn incr(bencher: Bencher) {
    bench_command(bencher, &[], &["INCR", "counter"], b":");
}

const ONE: &str = "return redis.call('INCR', KEYS[1])";
const TWENTY: &str = "for i = 1, 10 do redis.call('HSET', KEYS[1], 'f' .. i, i) end
for i = 1, 10 do redis.call('ZADD', KEYS[2], i, 'm' .. i) end
return redis.call('ZCARD', KEYS[2])";

const XTRIM: &str = "redis.call('XADD', KEYS[1], '*', 'f', 'v') return redis.call('XTRIM', KEYS[1], 'MAXLEN', '~', 1000)";

/// The SHA-1 of `body`, as SCRIPT LOAD answers it.
fn sha_of(body: &str) -> String {
    let mut core = core();
    let mut client = client();
    let reply = run(&mut core, &mut client, &["SCRIPT", "LOAD", body]);
    // `$40\r\n<sha>\r\n`
    String::from_utf8_lossy(&reply[5..45]).into_owned()
}

#[divan::bench]
fn evalsha_incr(bencher: Bencher) {
    let sha = sha_of(ONE);
    bench_command(
        bencher,
        &[&["SCRIPT", "LOAD", ONE]],
        &["EVALSHA", &sha, "1", "bench:counter"],
        b":",
    );
}

#[divan::bench]
fn evalsha_twenty(bencher: Bencher) {
    let sha = sha_of(TWENTY);
    bench_command(
        bencher,
        &[&["SCRIPT", "LOAD", TWENTY]],
        &["EVALSHA", &sha, "2", "bench:h", "bench:z"],
        b":10",
    );
}

#[divan::bench]
fn evalsha_xtrim(bencher: Bencher) {
    let sha = sha_of(XTRIM);
    bench_command(
        bencher,
        &[&["SCRIPT", "LOAD", XTRIM]],
        &["EVALSHA", &sha, "1", "bench:s"],
        b":",
    );
}

/// SETRANGE commands that fill `bm` with 1 MiB of bytes.
fn megabyte() -> Vec<Vec<String>> {
    let piece: String = (0..1024)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    (0..1024)
        .map(|i| {
            vec![
                "SETRANGE".into(),
                "bm".into(),
                (i * 1024).to_string(),
                piece.clone(),
            ]
        })
        .collect()
}

/// [`bench_command`] after set-up commands built at run time.
fn bench_after(bencher: Bencher, setup: &[Vec<String>], words: &[&str], expect: &[u8]) {
    let setup: Vec<Vec<&str>> = setup
        .iter()
        .map(|c| c.iter().map(String::as_str).collect())
        .collect();
    let setup: Vec<&[&str]> = setup.iter().map(Vec::as_slice).collect();
    bench_command(bencher, &setup, words, expect);
}

fn bench_on_megabyte(bencher: Bencher, words: &[&str], expect: &[u8]) {
    bench_after(bencher, &megabyte(), words, expect);
}

#[divan::bench]
fn bitfield_incrby(bencher: Bencher) {
    bench_on_megabyte(
        bencher,
        &["BITFIELD", "bm", "INCRBY", "u8", "#123457", "1"],
        b"*1",
    );
}

#[divan::bench]
fn getbit(bencher: Bencher) {
    bench_on_megabyte(bencher, &["GETBIT", "bm", "4567891"], b":");
}

#[divan::bench]
fn setbit(bencher: Bencher) {
    bench_on_megabyte(bencher, &["SETBIT", "bm", "4567891", "1"], b":");
}

#[divan::bench]
fn geodist(bencher: Bencher) {
    let points: Vec<Vec<String>> = (0..1000)
        .map(|i| {
            let lon = -10.0 + (i as f64 * 0.037) % 40.0;
            let lat = 35.0 + (i as f64 * 0.023) % 25.0;
            vec![
                "GEOADD".into(),
                "geo".into(),
                format!("{lon:.6}"),
                format!("{lat:.6}"),
                format!("m:{i}"),
            ]
        })
        .collect();
    bench_after(
        bencher,
        &points,
        &["GEODIST", "geo", "m:17", "m:801", "km"],
        b"$",
    );
}

/// One bid of the `auction/1024x32` workload, in the core: a reader blocks with
/// `XREADGROUP ... BLOCK 0 STREAMS <32 shards> >...`, a producer's `XADD` to one shard
/// wakes it, the woken read is served, and the reader acknowledges the entry. The
/// blocking bookkeeping on 32 keys (registering, waking, unregistering) and the 32-key
/// read run twice per bid, as on a server.
#[divan::bench]
fn auction_bid(bencher: Bencher) {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    const SHARDS: usize = 32;
    let mut core = core();
    let mut producer = client();
    let shards: Vec<String> = (0..SHARDS).map(|i| format!("auction:{i}")).collect();
    for s in &shards {
        run(
            &mut core,
            &mut producer,
            &["XGROUP", "CREATE", s, "g", "$", "MKSTREAM"],
        );
    }
    let (sender, mut receiver) = streamd::core::mailbox::mailbox();
    let reader = Client::new(
        2,
        "127.0.0.1:2".into(),
        "127.0.0.1:7000".into(),
        true,
        0,
        sender,
    );
    let reader = core.add_client(reader);
    let mut read = argv(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "c",
        "COUNT",
        "100",
        "BLOCK",
        "0",
    ]);
    read.push(Bytes::from_static(b"STREAMS"));
    read.extend(shards.iter().map(|s| Bytes::copy_from_slice(s.as_bytes())));
    read.extend((0..SHARDS).map(|_| Bytes::from_static(b">")));
    let mut out = RespWriter::new(Protocol::Resp2);
    let mut bid = 0usize;
    let mut one_bid = |check: bool| {
        let shard = &shards[bid % SHARDS];
        bid += 1;
        // The reader blocks on its 32 shards.
        let mut r = core.clients.remove(&reader).expect("reader registered");
        out.buf.clear();
        let blocked = core.execute(&mut r, read.clone(), &mut out);
        core.clients.insert(reader, r);
        // A bid wakes it.
        out.buf.clear();
        core.execute(
            &mut producer,
            argv(&["XADD", shard, "*", "bidder", "7", "amount", "42"]),
            &mut out,
        );
        let id = out.buf[out
            .buf
            .iter()
            .position(|&b| b == b'\n')
            .map_or(0, |p| p + 1)..]
            .strip_suffix(b"\r\n")
            .map(<[u8]>::to_vec)
            .unwrap_or_default();
        core.handle_ready_keys();
        let mut served = Vec::new();
        let mut cx = Context::from_waker(Waker::noop());
        while let Poll::Ready(Some(msg)) = std::pin::pin!(receiver.recv()).poll(&mut cx) {
            if let streamd::core::mailbox::ClientMsg::Unblocked(bytes) = msg {
                served = bytes;
            }
        }
        // It acknowledges what it got.
        let mut r = core.clients.remove(&reader).expect("reader registered");
        out.buf.clear();
        core.execute(
            &mut r,
            vec![
                Bytes::from_static(b"XACK"),
                Bytes::copy_from_slice(shard.as_bytes()),
                Bytes::from_static(b"g"),
                Bytes::from(id.clone()),
            ],
            &mut out,
        );
        core.clients.insert(reader, r);
        if check {
            assert_eq!(blocked, streamd::core::Outcome::Blocked);
            assert!(
                served.windows(id.len()).any(|w| w == id.as_slice()),
                "the woken read answered {:?}, not entry {:?}",
                String::from_utf8_lossy(&served),
                String::from_utf8_lossy(&id)
            );
            assert_eq!(out.buf, b":1\r\n");
        }
    };
    one_bid(true);
    bencher.bench_local(|| one_bid(false));
}
