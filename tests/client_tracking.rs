//! Client-side caching (CLIENT TRACKING / CACHING / GETREDIR / TRACKINGINFO) against the
//! built binary, each scenario run on streamd and on Debian's `redis-server` 7.0 with the
//! same commands, and every reply and invalidation compared byte for byte (client ids,
//! which differ between the two servers, are replaced by `<id>`).

mod common;

use common::differential::{differential, exact};
use common::*;
use std::time::Duration;

/// The two servers of a scenario.
fn servers() -> (Server, RedisServer) {
    (start_server(), redis_server())
}

/// `CLIENT ID` of a connection.
fn client_id(c: &mut Raw) -> String {
    let reply = c.cmd_str(&["CLIENT", "ID"]);
    String::from_utf8_lossy(&reply[1..reply.len() - 2]).into_owned()
}

/// Runs `scenario` on a server and returns the transcript it builds.
type Scenario = fn(port: u16) -> Vec<String>;

fn same_on_both(scenario: Scenario) {
    let (s, r) = servers();
    let ours = scenario(s.port);
    let theirs = scenario(r.port);
    assert_eq!(ours, theirs, "streamd (left) and Redis (right) differ");
}

/// Reads one reply (or push) as escaped text, with `id` replaced by `<id>`.
fn next(c: &mut Raw, id: &str) -> String {
    let text = escape(&c.read_reply());
    if id.is_empty() {
        text
    } else {
        text.replace(&format!(":{id}\\r\\n"), ":<id>\\r\\n")
    }
}

fn cmd(c: &mut Raw, args: &[&str], id: &str) -> String {
    let text = escape(&c.cmd_str(args));
    if id.is_empty() {
        text
    } else {
        text.replace(&format!(":{id}\\r\\n"), ":<id>\\r\\n")
    }
}

/// Every argument error and the TRACKINGINFO / GETREDIR answers without a redirection.
#[test]
fn tracking_errors_and_info_match_redis() {
    let (s, r) = servers();
    let cases = exact(&[
        &["CLIENT", "TRACKINGINFO"],
        &["CLIENT", "GETREDIR"],
        &["CLIENT", "CACHING", "yes"],
        &["CLIENT", "TRACKING", "maybe"],
        &["CLIENT", "TRACKING", "on", "PREFIX", "a"],
        &["CLIENT", "TRACKING", "on", "BCAST", "OPTIN"],
        &["CLIENT", "TRACKING", "on", "OPTIN", "OPTOUT"],
        &["CLIENT", "TRACKING", "on", "REDIRECT", "999999"],
        &["CLIENT", "TRACKING", "on", "REDIRECT", "x"],
        &["CLIENT", "TRACKING", "on", "NOPE"],
        &[
            "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "ab", "PREFIX", "abc",
        ],
        &["CLIENT", "TRACKING", "on", "OPTIN"],
        &["CLIENT", "TRACKINGINFO"],
        &["CLIENT", "GETREDIR"],
        &["CLIENT", "CACHING", "no"],
        &["CLIENT", "CACHING", "maybe"],
        &["CLIENT", "CACHING", "yes"],
        &["CLIENT", "TRACKINGINFO"],
        &["CLIENT", "TRACKING", "on", "OPTOUT"],
        &["CLIENT", "TRACKING", "on", "BCAST"],
        &["CLIENT", "TRACKING", "off"],
        &[
            "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "b", "PREFIX", "a", "NOLOOP",
        ],
        &["CLIENT", "TRACKINGINFO"],
        &["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "bc"],
        &["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "c"],
        &["CLIENT", "TRACKINGINFO"],
        &["CLIENT", "TRACKING", "off"],
        &["CLIENT", "TRACKINGINFO"],
    ]);
    for proto in [2, 3] {
        let bad = differential(s.port, r.port, proto, &cases);
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }
}

/// RESP3 default mode: a read is tracked, another client's write invalidates it once;
/// NOLOOP hides the client's own writes; FLUSHALL invalidates everything with null.
#[test]
fn resp3_invalidations_match_redis() {
    same_on_both(|port| {
        let mut t = Raw::connect(port);
        t.hello3();
        let mut w = Raw::connect(port);
        let mut log = vec![cmd(&mut t, &["CLIENT", "TRACKING", "on"], "")];
        log.push(cmd(&mut w, &["MSET", "a", "1", "b", "2"], ""));
        log.push(cmd(&mut t, &["MGET", "a", "b"], ""));
        log.push(cmd(&mut w, &["SET", "a", "3"], ""));
        log.push(next(&mut t, ""));
        // Invalidated once: the second write is not reported.
        log.push(cmd(&mut w, &["SET", "a", "4"], ""));
        log.push(cmd(&mut w, &["DEL", "b"], ""));
        log.push(next(&mut t, ""));
        // Its own write: the invalidation follows the reply.
        log.push(cmd(&mut t, &["GET", "a"], ""));
        t.send(&encode_cmd(&[b"SET", b"a", b"5"]));
        log.push(next(&mut t, ""));
        log.push(next(&mut t, ""));
        // NOLOOP: its own writes are not reported.
        log.push(cmd(&mut t, &["CLIENT", "TRACKING", "on", "NOLOOP"], ""));
        log.push(cmd(&mut t, &["GET", "a"], ""));
        log.push(cmd(&mut t, &["SET", "a", "6"], ""));
        log.push(cmd(&mut t, &["PING"], ""));
        log.push(cmd(&mut t, &["GET", "a"], ""));
        log.push(cmd(&mut w, &["FLUSHALL"], ""));
        log.push(next(&mut t, ""));
        log
    });
}

/// A RESP2 client redirecting to a connection subscribed to `__redis__:invalidate`;
/// BCAST with prefixes; OPTIN with CLIENT CACHING yes; a broken redirection.
#[test]
fn redirect_bcast_and_optin_match_redis() {
    same_on_both(|port| {
        let mut sub = Raw::connect(port);
        let id = client_id(&mut sub);
        let mut log = vec![cmd(&mut sub, &["SUBSCRIBE", "__redis__:invalidate"], "")];
        let mut t = Raw::connect(port);
        let mut w = Raw::connect(port);
        log.push(cmd(
            &mut t,
            &["CLIENT", "TRACKING", "on", "REDIRECT", &id],
            "",
        ));
        log.push(cmd(&mut t, &["CLIENT", "GETREDIR"], &id));
        log.push(cmd(&mut t, &["GET", "k"], ""));
        log.push(cmd(&mut w, &["SET", "k", "1"], ""));
        log.push(next(&mut sub, ""));
        // BCAST: every key under the prefixes, in one message per command.
        log.push(cmd(&mut t, &["CLIENT", "TRACKING", "off"], ""));
        log.push(cmd(
            &mut t,
            &[
                "CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", &id, "PREFIX", "user:",
            ],
            "",
        ));
        log.push(cmd(
            &mut w,
            &["MSET", "user:1", "a", "other", "b", "user:2", "c"],
            "",
        ));
        log.push(next(&mut sub, ""));
        log.push(cmd(&mut t, &["CLIENT", "TRACKINGINFO"], &id));
        // OPTIN: only the command after CLIENT CACHING yes is tracked.
        log.push(cmd(&mut t, &["CLIENT", "TRACKING", "off"], ""));
        log.push(cmd(
            &mut t,
            &["CLIENT", "TRACKING", "on", "OPTIN", "REDIRECT", &id],
            "",
        ));
        log.push(cmd(&mut t, &["GET", "x"], ""));
        log.push(cmd(&mut t, &["CLIENT", "CACHING", "yes"], ""));
        log.push(cmd(&mut t, &["GET", "y"], ""));
        log.push(cmd(&mut w, &["MSET", "x", "1", "y", "2"], ""));
        log.push(next(&mut sub, ""));
        log
    });
    // A redirection that went away: a RESP3 client is told, TRACKINGINFO shows it.
    same_on_both(|port| {
        let mut gone = Raw::connect(port);
        let id = client_id(&mut gone);
        let mut t = Raw::connect(port);
        t.hello3();
        let mut w = Raw::connect(port);
        let mut log = vec![cmd(
            &mut t,
            &["CLIENT", "TRACKING", "on", "REDIRECT", &id],
            "",
        )];
        log.push(cmd(&mut t, &["GET", "k"], ""));
        drop(gone);
        // Wait until the server has seen the connection go.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while info_field(&mut w, "clients", "connected_clients").as_deref() != Some("2") {
            assert!(
                std::time::Instant::now() < deadline,
                "the connection never went"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        log.push(cmd(&mut w, &["SET", "k", "1"], ""));
        log.push(next(&mut t, &id));
        log.push(cmd(&mut t, &["CLIENT", "TRACKINGINFO"], &id));
        log
    });
}

/// Redis's tracking.tcl "Tracking invalidation message of eviction keys should be before
/// response": the command that makes room by evicting a key this client tracks gets the
/// invalidation first, then its reply; on both servers.
#[test]
fn an_eviction_invalidates_before_the_reply_that_caused_it() {
    same_on_both(|port| {
        let mut t = Raw::connect(port);
        t.hello3();
        let mut log = vec![cmd(&mut t, &["CLIENT", "TRACKING", "on"], "")];
        let used: u64 = info_field(&mut t, "memory", "used_memory")
            .and_then(|v| v.parse().ok())
            .expect("used_memory");
        let uncounted: u64 = info_field(&mut t, "memory", "mem_not_counted_for_evict")
            .and_then(|v| v.parse().ok())
            .expect("mem_not_counted_for_evict");
        let limit = (used - uncounted + 100 * 1024).to_string();
        log.push(cmd(&mut t, &["CONFIG", "SET", "maxmemory", &limit], ""));
        log.push(cmd(
            &mut t,
            &["CONFIG", "SET", "maxmemory-policy", "volatile-random"],
            "",
        ));
        log.push(cmd(&mut t, &["SETEX", "volatile-key", "10000", "x"], ""));
        log.push(cmd(&mut t, &["GET", "volatile-key"], ""));
        // 200 KB over the limit: the next command evicts the only volatile key.
        log.push(cmd(&mut t, &["SETBIT", "big-key", "1600000", "0"], ""));
        log.push(cmd(&mut t, &["GETBIT", "big-key", "0"], ""));
        log.push(next(&mut t, ""));
        log.push(cmd(&mut t, &["CONFIG", "SET", "maxmemory", "0"], ""));
        log.push(cmd(&mut t, &["EXISTS", "volatile-key"], ""));
        log
    });
}

/// Redis 7.2+'s "Tracking only occurs for scripts when a command calls a read-only
/// command": a script's caller tracks the keys its read-only `redis.call`s read, not every
/// key the EVAL declared (Redis 7.0 tracked those); a script that only writes, or an
/// EVAL_RO that reads nothing, tracks nothing. No 7.2 oracle here: written out.
#[test]
fn a_script_tracks_the_keys_it_read_not_the_ones_it_declared() {
    let s = start_server();
    let mut t = Raw::connect(s.port);
    t.hello3();
    let mut w = Raw::connect(s.port);
    assert_eq!(t.cmd_str(&["CLIENT", "TRACKING", "on"]), b"+OK\r\n");
    w.cmd_str(&["MSET", "k1", "1", "k2", "1"]);
    t.cmd_str(&["EVAL", "redis.call('set', 'k3', 'bar')", "2", "k1", "k2"]);
    w.cmd_str(&["MSET", "k1", "2", "k2", "2"]);
    assert_eq!(t.cmd_str(&["PING"]), b"+PONG\r\n", "nothing tracked");
    t.cmd_str(&["EVAL", "return redis.call('get', KEYS[2])", "2", "k1", "k2"]);
    w.cmd_str(&["MSET", "k1", "3", "k2", "3"]);
    let push = |key: &str| {
        format!(
            ">2\r\n$10\r\ninvalidate\r\n*1\r\n${}\r\n{key}\r\n",
            key.len()
        )
    };
    assert_eq!(escape(&t.cmd_str(&["PING"])), escape(push("k2").as_bytes()));
    assert_eq!(t.read_reply(), b"+PONG\r\n");
    t.cmd_str(&["EVAL_RO", "return redis.call('ping')", "2", "k1", "k2"]);
    w.cmd_str(&["MSET", "k1", "4", "k2", "4"]);
    assert_eq!(t.cmd_str(&["PING"]), b"+PONG\r\n", "nothing tracked");
    t.cmd_str(&["EVAL_RO", "return redis.call('get', 'k1')", "2", "k1", "k2"]);
    w.cmd_str(&["MSET", "k1", "5", "k2", "5"]);
    assert_eq!(escape(&t.cmd_str(&["PING"])), escape(push("k1").as_bytes()));
    assert_eq!(t.read_reply(), b"+PONG\r\n");
}
