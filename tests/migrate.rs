//! MIGRATE against the real binary and Debian's `redis-server` 7.0.
//!
//! - Differential: the same MIGRATE invocations run on a streamd source and on a Redis
//!   source, each with its own Redis targets (one open, one with a password and an ACL
//!   user), and every reply must be byte-identical: argument errors in Redis's order,
//!   NOKEY, IOERR on a refused connection and an unknown host, COPY, REPLACE, BUSYKEY, the KEYS form, AUTH,
//!   AUTH2, wrong passwords, a target's SELECT error, partial failures. The two targets
//!   then hold the same values.
//! - Streams with consumer groups and pending entries move Redis → streamd and
//!   streamd → Redis; XRANGE, XPENDING and XINFO STREAM FULL are compared, normalising
//!   only idle times and the fields Redis 7.0 lacks (as tests/interop.rs does).
//! - streamd → streamd: values and TTLs arrive as they left (same DUMP), the connection
//!   is reused (and re-made when the target dropped it), WATCH sees the deletion, and the
//!   deletion is in the append-only file (a restart keeps it).
//! - Cluster mode: a cluster-enabled streamd sends RESTORE-ASKING.

mod common;

use common::stream_view::{flat, norm_map, norm_pending};
use common::{Raw, client, escape, free_port, redis_server_with, start_server_with};
use redis::Value;
use redis::aio::MultiplexedConnection;
use std::time::{Duration, Instant};

/// The Redis target password, and the ACL user's credentials.
const PASSWORD: &str = "pw";
const USER: &str = "mover";
const USER_PASSWORD: &str = "up";

/// One source with its two targets.
struct Side {
    source: Raw,
    open: Raw,
    open_port: u16,
    locked_port: u16,
}

/// Replaces the target placeholders in a command.
fn fill(words: &[&str], side: &Side, dead: u16) -> Vec<String> {
    words
        .iter()
        .map(|w| match *w {
            "{open}" => side.open_port.to_string(),
            "{locked}" => side.locked_port.to_string(),
            "{dead}" => dead.to_string(),
            other => other.to_string(),
        })
        .collect()
}

fn run(raw: &mut Raw, words: &[String]) -> Vec<u8> {
    let args: Vec<&str> = words.iter().map(String::as_str).collect();
    raw.cmd_str(&args)
}

/// Fills both sources with the same keys of every type, some with TTLs.
fn populate(raw: &mut Raw) {
    for cmd in [
        &["SET", "s1", "hello"][..],
        &["SET", "s2", "with-ttl", "PX", "100000"],
        &["SET", "s3", "12345"],
        &["SET", "s4", "four"],
        &["SET", "s5", "five"],
        &["SET", "t0", "timeout-zero"],
        &["SET", "neg", "negative-db"],
        &["HSET", "h", "f1", "v1", "f2", "2"],
        &["PEXPIRE", "h", "200000"],
        &["RPUSH", "l", "a", "b", "c", "1", "2"],
        &["SADD", "set", "x", "y", "z"],
        &["ZADD", "z", "1", "one", "2.5", "two"],
        &["XADD", "st", "1-1", "f", "v"],
        &["XADD", "st", "2-1", "f", "w"],
        &["XGROUP", "CREATE", "st", "g", "0"],
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "c1",
            "COUNT",
            "1",
            "STREAMS",
            "st",
            ">",
        ],
        &["SET", "a1", "1"],
        &["SET", "b1", "2"],
        &["SET", "c1", "3"],
        &["SET", "d1", "4"],
    ] {
        let reply = raw.cmd_str(cmd);
        assert!(!reply.starts_with(b"-"), "{cmd:?}: {}", escape(&reply));
    }
}

/// A Redis target; `locked` ones need a password and have an ACL user.
fn target(locked: bool) -> common::RedisServer {
    if !locked {
        return redis_server_with(&[]);
    }
    let t = redis_server_with(&["--requirepass", PASSWORD]);
    let mut raw = t.raw();
    assert_eq!(raw.cmd_str(&["AUTH", PASSWORD]), b"+OK\r\n");
    let pass = format!(">{USER_PASSWORD}");
    assert_eq!(
        raw.cmd_str(&["ACL", "SETUSER", USER, "on", &pass, "~*", "+@all"]),
        b"+OK\r\n"
    );
    t
}

#[test]
fn replies_match_redis_invocation_by_invocation() {
    let ours = start_server_with(&[]);
    let theirs = redis_server_with(&[]);
    let (ours_open, ours_locked) = (target(false), target(true));
    let (theirs_open, theirs_locked) = (target(false), target(true));
    let dead = free_port();
    let mut sides = [
        Side {
            source: ours.raw(),
            open: ours_open.raw(),
            open_port: ours_open.port,
            locked_port: ours_locked.port,
        },
        Side {
            source: theirs.raw(),
            open: theirs_open.raw(),
            open_port: theirs_open.port,
            locked_port: theirs_locked.port,
        },
    ];
    for side in &mut sides {
        populate(&mut side.source);
        // A key the target already has, for BUSYKEY in the KEYS form.
        assert_eq!(side.open.cmd_str(&["SET", "b1", "there"]), b"+OK\r\n");
    }
    const M: &str = "MIGRATE";
    const H: &str = "127.0.0.1";
    let cases: &[&[&str]] = &[
        // Argument errors, in migrateCommand's order: options, then timeout, then db.
        &[M, H, "{open}", "s1", "0", "1000", "BADOPT"],
        &[M, H, "{open}", "s1", "0", "1000", "AUTH"],
        &[M, H, "{open}", "s1", "0", "1000", "AUTH2", "u"],
        &[M, H, "{open}", "s1", "0", "1000", "KEYS", "a1"],
        &[M, H, "{open}", "s1", "0", "abc", "KEYS", "a1"],
        &[M, H, "{open}", "s1", "0", "abc", "COPY", "KEYS"],
        &[M, H, "{open}", "s1", "0", "abc"],
        &[M, H, "{open}", "s1", "abc", "1000"],
        &[M, H, "{open}", "s1", "abc", "abc"],
        &[M, H, "{open}", "s1", "0", "99999999999999999999"],
        &[M, H, "{open}", "s1", "0"],
        &["MIGRATE"],
        // Nothing to move.
        &[M, H, "{open}", "missing", "0", "1000"],
        &[M, H, "{open}", "", "0", "1000", "KEYS", "nope1", "nope2"],
        &[M, H, "{dead}", "missing", "0", "1000"],
        // A refused connection (Redis 7.0 sees it at its first write), a name that does
        // not resolve, a port out of range.
        &[M, H, "{dead}", "s1", "0", "100"],
        &[M, "no-such-host.invalid", "6379", "s1", "0", "100"],
        &[M, H, "-5", "s1", "0", "100"],
        &[M, H, "0", "s1", "0", "100"],
        &["EXISTS", "s1"],
        // COPY keeps the key; then BUSYKEY; then REPLACE moves it.
        &[M, H, "{open}", "s1", "0", "1000", "COPY"],
        &["EXISTS", "s1"],
        &[M, H, "{open}", "s1", "0", "1000"],
        &["EXISTS", "s1"],
        &[M, H, "{open}", "s1", "0", "1000", "REPLACE", "copy"],
        &["EXISTS", "s1"],
        &[M, H, "{open}", "s1", "0", "1000", "REPLACE"],
        &["EXISTS", "s1"],
        // A TTL travels; the target's SELECT error is reported.
        &[M, H, "{open}", "s2", "0", "1000"],
        &[M, H, "{open}", "s3", "99", "1000"],
        // Database -1 right after an error: Redis's "unknown database" is -1 too, so
        // no SELECT is sent and the key lands in the target's current database.
        &[M, H, "{open}", "neg", "-1", "1000"],
        &["EXISTS", "s2", "s3", "neg"],
        &[M, H, "{open}", "s5", "-1", "1000", "COPY"],
        // Another database on the same (kept) connection, then back with a timeout of 0
        // (the default).
        &[M, H, "{open}", "s3", "3", "1000"],
        &[M, H, "{open}", "t0", "0", "0"],
        &[M, H, "{open}", "", "0", "1000", "KEYS"],
        // The KEYS form: missing keys skipped, the rest moved.
        &[
            M, H, "{open}", "", "0", "1000", "KEYS", "h", "l", "missing", "z",
        ],
        &["EXISTS", "h", "l", "z"],
        // One key busy on the target: the error, and only the others leave.
        &[M, H, "{open}", "", "0", "1000", "KEYS", "a1", "b1", "c1"],
        &["EXISTS", "a1", "b1", "c1"],
        // Options are case-insensitive.
        &[M, H, "{open}", "", "0", "1000", "copy", "keys", "d1"],
        &["EXISTS", "d1"],
        // Authentication.
        &[M, H, "{locked}", "set", "0", "1000"],
        &[M, H, "{locked}", "set", "0", "1000", "AUTH", "wrong"],
        &[M, H, "{locked}", "set", "0", "1000", "AUTH", PASSWORD],
        &[M, H, "{locked}", "s4", "0", "1000", "AUTH2", USER, "wrong"],
        &[
            M,
            H,
            "{locked}",
            "s4",
            "0",
            "1000",
            "AUTH2",
            USER,
            USER_PASSWORD,
        ],
        &[
            M, H, "{locked}", "", "0", "1000", "AUTH", PASSWORD, "AUTH2", USER, "x", "KEYS", "s5",
        ],
        &["EXISTS", "set", "s4", "s5"],
        // A stream with a group and a pending entry.
        &[M, H, "{open}", "st", "0", "1000"],
        &["EXISTS", "st"],
        &["DBSIZE"],
    ];
    for case in cases {
        let (wa, wb) = (fill(case, &sides[0], dead), fill(case, &sides[1], dead));
        let [a, b] = &mut sides;
        let (got, want) = (run(&mut a.source, &wa), run(&mut b.source, &wb));
        assert_eq!(
            escape(&got),
            escape(&want),
            "{case:?} (left: streamd, right: redis-server)"
        );
    }

    // The targets hold the same values.
    let reads: &[&[&str]] = &[
        &["DBSIZE"],
        &["GET", "s1"],
        &["GET", "s2"],
        &["GET", "t0"],
        &["GET", "b1"],
        &["MGET", "a1", "c1", "d1"],
        &["HGETALL", "h"],
        &["LRANGE", "l", "0", "-1"],
        &["ZRANGE", "z", "0", "-1", "WITHSCORES"],
        &["XRANGE", "st", "-", "+"],
        &["XPENDING", "st", "g"],
        &["XINFO", "GROUPS", "st"],
        &["TTL", "s1"],
        &["SELECT", "3"],
        &["GET", "s3"],
        &["SELECT", "0"],
    ];
    for read in reads {
        let [a, b] = &mut sides;
        let (got, want) = (a.open.cmd_str(read), b.open.cmd_str(read));
        assert_eq!(escape(&got), escape(&want), "target {read:?}");
    }
    for side in &mut sides {
        for key in ["s2", "h"] {
            let ttl = String::from_utf8_lossy(&side.open.cmd_str(&["PTTL", key])).into_owned();
            let ms: i64 = ttl.trim_start_matches(':').trim().parse().unwrap_or(-9);
            assert!(ms > 90_000, "PTTL {key} on the target: {ttl}");
        }
    }
    for (t, which) in [(&ours_locked, "ours"), (&theirs_locked, "theirs")] {
        let mut raw = t.raw();
        assert_eq!(raw.cmd_str(&["AUTH", PASSWORD]), b"+OK\r\n");
        assert_eq!(raw.cmd_str(&["SCARD", "set"]), b":3\r\n", "{which}");
        assert_eq!(raw.cmd_str(&["GET", "s4"]), b"$4\r\nfour\r\n", "{which}");
    }
}

#[test]
fn command_getkeys_and_info_match_redis() {
    let ours = start_server_with(&[]);
    let theirs = redis_server_with(&[]);
    let (mut a, mut b) = (ours.raw(), theirs.raw());
    let cases: &[&[&str]] = &[
        &["COMMAND", "GETKEYS", "MIGRATE", "h", "1", "k", "0", "0"],
        &[
            "COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "0", "KEYS", "a", "b",
        ],
        &[
            "COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "0", "AUTH", "KEYS", "KEYS", "x",
        ],
        &[
            "COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "0", "AUTH2", "u", "p", "KEYS", "y",
        ],
        &[
            "COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "0", "COPY", "REPLACE",
        ],
        &[
            "COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "0", "KEYS",
        ],
        &["COMMAND", "GETKEYS", "MIGRATE", "KEYS", "1", "k", "0", "0"],
        &["COMMAND", "GETKEYS", "MIGRATE", "h", "1", "k"],
        &["COMMAND", "DOCS", "migrate"],
    ];
    for case in cases {
        let (got, want) = (a.cmd_str(case), b.cmd_str(case));
        if case[1] == "DOCS" {
            // Redis documents the arguments and history too; the summary, since and
            // group are what streamd's COMMAND DOCS has, and they must be Redis's.
            let text = String::from_utf8_lossy(&want).into_owned();
            for piece in [
                "Atomically transfer a key from a Redis instance to another one.",
                "2.6.0",
                "generic",
            ] {
                assert!(text.contains(piece));
                assert!(String::from_utf8_lossy(&got).contains(piece), "{piece}");
            }
            continue;
        }
        assert_eq!(escape(&got), escape(&want), "{case:?}");
    }
    // COMMAND INFO up to the tips: name, arity, flags, key positions, ACL categories.
    let head = |reply: &[u8]| {
        let text = String::from_utf8_lossy(reply).into_owned();
        let end = text.find("+@dangerous\r\n").map(|i| i + 13);
        text[..end.unwrap_or(text.len())].to_string()
    };
    let (got, want) = (
        a.cmd_str(&["COMMAND", "INFO", "migrate"]),
        b.cmd_str(&["COMMAND", "INFO", "migrate"]),
    );
    assert!(head(&want).ends_with("+@dangerous\r\n"));
    assert!(head(&want).contains("movablekeys"));
    assert_eq!(
        escape(head(&got).as_bytes()),
        escape(head(&want).as_bytes())
    );
}

/// The slow log shows MIGRATE's credentials as `(redacted)`, as Redis does.
#[test]
fn credentials_are_redacted_in_the_slow_log() {
    let ours = start_server_with(&["--slowlog-log-slower-than", "0"]);
    let theirs = redis_server_with(&["--slowlog-log-slower-than", "0"]);
    let dead = free_port().to_string();
    for raw in [&mut ours.raw(), &mut theirs.raw()] {
        assert_eq!(raw.cmd_str(&["SET", "k", "v"]), b"+OK\r\n");
        let reply = raw.cmd_str(&[
            "MIGRATE",
            "127.0.0.1",
            &dead,
            "k",
            "0",
            "50",
            "AUTH",
            "secret1",
            "AUTH2",
            "user",
            "secret2",
        ]);
        assert!(reply.starts_with(b"-IOERR"), "{}", escape(&reply));
        let log = String::from_utf8_lossy(&raw.cmd_str(&["SLOWLOG", "GET", "1"])).into_owned();
        assert!(!log.contains("secret") && !log.contains("user"), "{log}");
        assert_eq!(log.matches("(redacted)").count(), 3, "{log}");
    }
}

/// streamd to streamd: values and TTLs, the kept connection, WATCH, the deletion in the
/// append-only file.
#[test]
fn streamd_to_streamd_moves_values_and_logs_the_deletion() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dir_text = dir.path().display().to_string();
    let persistent = ["--dir", &dir_text, "--appendonly", "yes"];
    let source = start_server_with(&persistent);
    let target = start_server_with(&[]);
    let port = target.port.to_string();
    let mut s = source.raw();
    populate(&mut s);
    let keys = ["s1", "s2", "h", "l", "set", "z", "st"];
    // DUMP for all but the set, whose members a hash table orders: those sorted.
    let read = |raw: &mut Raw, key: &str| match key {
        "set" => raw.cmd_str(&["SORT", key, "ALPHA"]),
        _ => raw.cmd_str(&["DUMP", key]),
    };
    let dumps: Vec<Vec<u8>> = keys.iter().map(|k| read(&mut s, k)).collect();
    let mut t = target.raw();
    let connections = |t: &mut Raw| {
        let info = String::from_utf8_lossy(&t.cmd_str(&["INFO", "stats"])).into_owned();
        info.lines()
            .find_map(|l| l.strip_prefix("total_connections_received:"))
            .and_then(|n| n.trim().parse::<u64>().ok())
            .expect("total_connections_received")
    };
    let before = connections(&mut t);

    // WATCH sees the key leave.
    let mut watcher = source.raw();
    assert_eq!(watcher.cmd_str(&["WATCH", "s1"]), b"+OK\r\n");
    assert_eq!(watcher.cmd_str(&["MULTI"]), b"+OK\r\n");
    assert_eq!(watcher.cmd_str(&["GET", "s1"]), b"+QUEUED\r\n");
    for key in ["s1", "s2", "h", "l"] {
        assert_eq!(
            s.cmd_str(&["MIGRATE", "127.0.0.1", &port, key, "0", "1000"]),
            b"+OK\r\n",
            "{key}"
        );
    }
    assert_eq!(watcher.cmd_str(&["EXEC"]), b"*-1\r\n");
    assert_eq!(
        s.cmd_str(&[
            "MIGRATE",
            "127.0.0.1",
            &port,
            "",
            "0",
            "1000",
            "KEYS",
            "set",
            "z",
            "st"
        ]),
        b"+OK\r\n"
    );
    // One connection for all of them.
    assert_eq!(connections(&mut t), before + 1);
    for (key, dump) in keys.iter().zip(&dumps) {
        assert_eq!(s.cmd_str(&["EXISTS", key]), b":0\r\n", "{key}");
        assert_eq!(
            escape(&read(&mut t, key)),
            escape(dump),
            "{key} arrives as it left"
        );
    }
    for (key, ttl) in [("s2", true), ("h", true), ("s1", false), ("st", false)] {
        let reply = String::from_utf8_lossy(&t.cmd_str(&["PTTL", key])).into_owned();
        let ms: i64 = reply.trim_start_matches(':').trim().parse().unwrap_or(-9);
        if ttl {
            assert!(ms > 90_000, "{key}: {reply}");
        } else {
            assert_eq!(ms, -1, "{key}");
        }
    }

    // The target drops the kept connection: the next MIGRATE connects again.
    assert!(t.cmd_str(&["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]) != b":0\r\n");
    assert_eq!(
        s.cmd_str(&["MIGRATE", "127.0.0.1", &port, "s3", "0", "1000", "COPY"]),
        b"+OK\r\n"
    );
    assert_eq!(connections(&mut t), before + 2);
    assert_eq!(t.cmd_str(&["GET", "s3"]), b"$5\r\n12345\r\n");

    // A restart of the source from its append-only file keeps the deletions (and the
    // copied key).
    drop(s);
    drop(watcher);
    drop(source);
    let source = start_server_with(&persistent);
    let mut s = source.raw();
    for key in keys {
        assert_eq!(
            s.cmd_str(&["EXISTS", key]),
            b":0\r\n",
            "{key} after restart"
        );
    }
    assert_eq!(s.cmd_str(&["GET", "s3"]), b"$5\r\n12345\r\n");
    assert_eq!(s.cmd_str(&["EXISTS", "a1", "b1"]), b":2\r\n");
}

/// A target that accepts the connection and never answers: the timeout, as IOERR.
#[test]
fn a_silent_target_times_out_with_ioerr() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = silent.local_addr().expect("addr").port().to_string();
    let source = start_server_with(&[]);
    let mut s = source.raw();
    assert_eq!(s.cmd_str(&["SET", "k", "v"]), b"+OK\r\n");
    let started = Instant::now();
    assert_eq!(
        s.cmd_str(&["MIGRATE", "127.0.0.1", &port, "k", "0", "200"]),
        b"-IOERR error or timeout reading to target instance\r\n"
    );
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(s.cmd_str(&["EXISTS", "k"]), b":1\r\n");
    drop(silent);
}

// --- streams with groups, both directions -------------------------------------------

/// Runs a command, panicking on an error reply.
async fn q(con: &mut MultiplexedConnection, line: &str) -> Value {
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut c = redis::cmd(words[0]);
    for w in &words[1..] {
        c.arg(*w);
    }
    c.query_async(con)
        .await
        .unwrap_or_else(|e| panic!("{line}: {e}"))
}

/// A stream over several nodes, with deletions, three groups, pending entries of
/// several consumers, an acknowledgement and a claim.
async fn build(con: &mut MultiplexedConnection, key: &str) {
    for i in 1..=250u32 {
        let id = format!("{}-{}", 1000 + i / 7, i % 7);
        let line = if i % 10 == 3 {
            format!("XADD {key} {id} other {i}")
        } else {
            format!("XADD {key} {id} bidder {i} amount {}", i * 31)
        };
        q(con, &line).await;
    }
    for line in [
        "XDEL {k} 1000-1 1010-3",
        "XGROUP CREATE {k} g1 0",
        "XGROUP CREATE {k} g2 1020-0",
        "XGROUP CREATE {k} g3 $",
        "XREADGROUP GROUP g1 alice COUNT 40 STREAMS {k} >",
        "XREADGROUP GROUP g1 bob COUNT 10 STREAMS {k} >",
        "XREADGROUP GROUP g2 carol COUNT 5 STREAMS {k} >",
        "XACK {k} g1 1000-2 1000-3",
        "XCLAIM {k} g1 dave 0 1002-1 1002-2",
    ] {
        q(con, &line.replace("{k}", key)).await;
    }
}

/// The read replies about `key`, normalised.
async fn view(con: &mut MultiplexedConnection, key: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for line in [
        "XLEN {k}",
        "XRANGE {k} - +",
        "XPENDING {k} g1",
        "XPENDING {k} g2",
        "XPENDING {k} g3",
    ] {
        let line = line.replace("{k}", key);
        out.push((line.clone(), q(con, &line).await));
    }
    for line in ["XPENDING {k} g1 - + 1000", "XPENDING {k} g2 - + 1000"] {
        let line = line.replace("{k}", key);
        let v = q(con, &line).await;
        out.push((line, norm_pending(v)));
    }
    let line = format!("XINFO STREAM {key} FULL");
    let v = q(con, &line).await;
    out.push((line, flat(norm_map(v, &["groups"]))));
    out
}

fn assert_same_views(a: &[(String, Value)], b: &[(String, Value)], what: &str) {
    assert_eq!(a.len(), b.len());
    for ((line, x), (_, y)) in a.iter().zip(b) {
        assert_eq!(x, y, "{what}: `{line}` differs");
    }
}

#[tokio::test]
async fn streams_with_groups_move_redis_to_streamd_and_back() {
    let redis = redis_server_with(&[]);
    let back = redis_server_with(&[]);
    let sd = start_server_with(&[]);
    let (mut r, mut s, mut b) = (
        client(redis.port).await,
        client(sd.port).await,
        client(back.port).await,
    );
    build(&mut r, "orders").await;
    let original = view(&mut r, "orders").await;

    // Redis → streamd (Redis runs the MIGRATE), keeping the original with COPY.
    let line = format!("MIGRATE 127.0.0.1 {} orders 0 5000 COPY", sd.port);
    assert_eq!(q(&mut r, &line).await, Value::Okay);
    assert_same_views(&original, &view(&mut s, "orders").await, "in streamd");

    // streamd → Redis (streamd runs the MIGRATE): the key leaves streamd.
    let line = format!("MIGRATE 127.0.0.1 {} orders 0 5000", back.port);
    assert_eq!(q(&mut s, &line).await, Value::Okay);
    assert_eq!(q(&mut s, "EXISTS orders").await, Value::Int(0));
    assert_same_views(&original, &view(&mut b, "orders").await, "back in Redis");

    // And streamd → streamd's own view through Redis again, with REPLACE over a key the
    // target has.
    q(&mut s, "SET orders placeholder").await;
    let line = format!("MIGRATE 127.0.0.1 {} orders 0 5000 REPLACE", sd.port);
    assert_eq!(q(&mut b, &line).await, Value::Okay);
    assert_same_views(
        &original,
        &view(&mut s, "orders").await,
        "replaced in streamd",
    );
}

// --- cluster mode ---------------------------------------------------------------------

/// Waits (bounded) until `cluster_state:ok`.
fn wait_ok(raw: &mut Raw) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info = String::from_utf8_lossy(&raw.cmd_str(&["CLUSTER", "INFO"])).into_owned();
        if info.contains("cluster_state:ok") {
            return;
        }
        assert!(Instant::now() < deadline, "cluster never ok: {info}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_cluster_node_sends_restore_asking() {
    let bus = free_port().to_string();
    let sd = start_server_with(&["--cluster-enabled", "yes", "--cluster-port", &bus]);
    let rbus = free_port().to_string();
    let redis = redis_server_with(&[
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
        "--cluster-port",
        &rbus,
    ]);
    let (mut s, mut r) = (sd.raw(), redis.raw());
    for raw in [&mut s, &mut r] {
        assert_eq!(
            raw.cmd_str(&["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]),
            b"+OK\r\n"
        );
        wait_ok(raw);
    }
    assert_eq!(s.cmd_str(&["SET", "{x}a", "1"]), b"+OK\r\n");
    assert_eq!(s.cmd_str(&["SET", "{x}b", "2"]), b"+OK\r\n");
    let port = redis.port.to_string();
    assert_eq!(
        s.cmd_str(&[
            "MIGRATE",
            "127.0.0.1",
            &port,
            "",
            "0",
            "1000",
            "KEYS",
            "{x}a",
            "{x}b"
        ]),
        b"+OK\r\n"
    );
    assert_eq!(
        r.cmd_str(&["MGET", "{x}a", "{x}b"]),
        b"*2\r\n$1\r\n1\r\n$1\r\n2\r\n"
    );
    let stats = String::from_utf8_lossy(&r.cmd_str(&["INFO", "commandstats"])).into_owned();
    assert!(stats.contains("cmdstat_restore-asking:calls=2,"), "{stats}");
    assert!(!stats.contains("cmdstat_restore:"), "{stats}");
    // Keys of different slots are refused by the routing, as Redis does.
    assert_eq!(
        s.cmd_str(&[
            "MIGRATE",
            "127.0.0.1",
            &port,
            "",
            "0",
            "1000",
            "KEYS",
            "a",
            "b"
        ]),
        b"-CROSSSLOT Keys in request don't hash to the same slot\r\n"
    );
}
