//! MULTI / EXEC / DISCARD / WATCH / UNWATCH against the real binary: exact reply bytes
//! and error texts (as Redis 7.0 sends them), EXECABORT, and WATCH invalidation by other
//! connections' writes, deletions, expiry and flushes.

mod common;

use common::c;

use common::*;
use std::time::Duration;

/// MULTI + `cmds` (each must be queued) + EXEC on `r`; returns EXEC's reply.
fn watched_exec(r: &mut Raw, cmds: &[&str]) -> String {
    assert_eq!(c(r, "MULTI"), "+OK\r\n");
    for cmd in cmds {
        assert_eq!(c(r, cmd), "+QUEUED\r\n", "{cmd}");
    }
    c(r, "EXEC")
}

#[test]
fn exec_runs_the_queued_commands_and_answers_one_array() {
    let s = start_server();
    let mut r = s.raw();
    assert_eq!(c(&mut r, "MULTI"), "+OK\r\n");
    assert_eq!(c(&mut r, "XADD s 1-1 a 1"), "+QUEUED\r\n");
    assert_eq!(c(&mut r, "XLEN s"), "+QUEUED\r\n");
    assert_eq!(c(&mut r, "PING"), "+QUEUED\r\n");
    // Nothing ran yet: another connection sees no key.
    assert_eq!(c(&mut s.raw(), "EXISTS s"), ":0\r\n");
    assert_eq!(c(&mut r, "EXEC"), "*3\r\n$3\r\n1-1\r\n:1\r\n+PONG\r\n");
    // An empty transaction answers an empty array.
    assert_eq!(c(&mut r, "MULTI"), "+OK\r\n");
    assert_eq!(c(&mut r, "EXEC"), "*0\r\n");
}

#[test]
fn runtime_errors_are_elements_of_the_exec_reply() {
    let s = start_server();
    let mut r = s.raw();
    let reply = watched_exec(&mut r, &["XADD s 5-1 a 1", "XADD s 1-1 a 1", "XLEN s"]);
    assert_eq!(
        reply,
        "*3\r\n$3\r\n5-1\r\n-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n:1\r\n"
    );
    // PING's own argument check happens when it runs.
    assert_eq!(
        watched_exec(&mut r, &["PING a b c"]),
        "*1\r\n-ERR wrong number of arguments for 'ping' command\r\n"
    );
}

#[test]
fn transaction_command_errors_match_redis() {
    let s = start_server();
    let mut r = s.raw();
    assert_eq!(c(&mut r, "EXEC"), "-ERR EXEC without MULTI\r\n");
    assert_eq!(c(&mut r, "DISCARD"), "-ERR DISCARD without MULTI\r\n");
    assert_eq!(
        c(&mut r, "WATCH"),
        "-ERR wrong number of arguments for 'watch' command\r\n"
    );
    assert_eq!(
        c(&mut r, "UNWATCH x"),
        "-ERR wrong number of arguments for 'unwatch' command\r\n"
    );
    assert_eq!(c(&mut r, "MULTI"), "+OK\r\n");
    // Neither of these aborts the transaction.
    assert_eq!(c(&mut r, "MULTI"), "-ERR MULTI calls can not be nested\r\n");
    assert_eq!(
        c(&mut r, "WATCH x"),
        "-ERR WATCH inside MULTI is not allowed\r\n"
    );
    assert_eq!(c(&mut r, "PING"), "+QUEUED\r\n");
    // UNWATCH is queued, as in Redis.
    assert_eq!(c(&mut r, "UNWATCH"), "+QUEUED\r\n");
    assert_eq!(c(&mut r, "EXEC"), "*2\r\n+PONG\r\n+OK\r\n");
}

#[test]
fn a_queuing_error_makes_exec_answer_execabort() {
    let s = start_server();
    let mut r = s.raw();
    assert_eq!(c(&mut r, "MULTI"), "+OK\r\n");
    assert_eq!(c(&mut r, "XADD s 1-1 a 1"), "+QUEUED\r\n");
    assert_eq!(
        c(&mut r, "XLEN"),
        "-ERR wrong number of arguments for 'xlen' command\r\n"
    );
    assert_eq!(c(&mut r, "PING"), "+QUEUED\r\n");
    assert_eq!(
        c(&mut r, "EXEC"),
        "-EXECABORT Transaction discarded because of previous errors.\r\n"
    );
    // Nothing ran, and the client left MULTI.
    assert_eq!(c(&mut r, "EXISTS s"), ":0\r\n");
    assert_eq!(c(&mut r, "EXEC"), "-ERR EXEC without MULTI\r\n");

    // An unknown command dooms the transaction the same way.
    assert_eq!(c(&mut r, "MULTI"), "+OK\r\n");
    assert_eq!(
        c(&mut r, "NOSUCHCMD x"),
        "-ERR unknown command 'NOSUCHCMD', with args beginning with: 'x' \r\n"
    );
    assert_eq!(
        c(&mut r, "EXEC"),
        "-EXECABORT Transaction discarded because of previous errors.\r\n"
    );
    // A new MULTI starts clean.
    assert_eq!(watched_exec(&mut r, &["PING"]), "*1\r\n+PONG\r\n");
}

#[test]
fn discard_drops_the_queue_and_the_watches() {
    let s = start_server();
    let mut r = s.raw();
    let mut other = s.raw();
    assert_eq!(c(&mut r, "WATCH s"), "+OK\r\n");
    assert_eq!(c(&mut r, "MULTI"), "+OK\r\n");
    assert_eq!(c(&mut r, "XADD s 1-1 a 1"), "+QUEUED\r\n");
    assert_eq!(c(&mut r, "DISCARD"), "+OK\r\n");
    assert_eq!(c(&mut r, "EXISTS s"), ":0\r\n");
    c(&mut other, "XADD s 1-1 a 1");
    // The watch went with DISCARD, so this transaction runs.
    assert_eq!(watched_exec(&mut r, &["XLEN s"]), "*1\r\n:1\r\n");
}

#[test]
fn a_write_by_another_connection_to_a_watched_key_fails_exec() {
    let s = start_server();
    let mut r = s.raw();
    let mut other = s.raw();
    c(&mut r, "XADD s 1-1 a 1");
    assert_eq!(c(&mut r, "WATCH s nokey s"), "+OK\r\n");
    c(&mut other, "XADD s 2-1 a 1");
    assert_eq!(watched_exec(&mut r, &["XADD s 3-1 a 1"]), "*-1\r\n");
    assert_eq!(c(&mut r, "XLEN s"), ":2\r\n", "the queued XADD did not run");
    // EXEC cleared the watches: the next transaction runs.
    c(&mut other, "XADD s 4-1 a 1");
    assert_eq!(watched_exec(&mut r, &["XLEN s"]), "*1\r\n:3\r\n");
}

#[test]
fn a_failed_exec_is_a_null_in_resp3() {
    let s = start_server();
    let mut r = s.raw();
    let mut other = s.raw();
    r.hello3();
    assert_eq!(c(&mut r, "WATCH s"), "+OK\r\n");
    c(&mut other, "XADD s 1-1 a 1");
    assert_eq!(watched_exec(&mut r, &["PING"]), "_\r\n");
}

#[test]
fn an_unmodified_watched_key_lets_exec_run() {
    let s = start_server();
    let mut r = s.raw();
    let mut other = s.raw();
    c(&mut r, "XADD s 1-1 a 1");
    assert_eq!(c(&mut r, "WATCH s"), "+OK\r\n");
    // Reads and writes to other keys do not matter.
    c(&mut other, "XLEN s");
    c(&mut other, "XRANGE s - +");
    c(&mut other, "XADD t 1-1 a 1");
    assert_eq!(watched_exec(&mut r, &["XLEN s"]), "*1\r\n:1\r\n");
}

#[test]
fn creating_a_watched_missing_key_fails_exec() {
    let s = start_server();
    let mut r = s.raw();
    let mut other = s.raw();
    assert_eq!(c(&mut r, "WATCH s"), "+OK\r\n");
    c(&mut other, "XADD s 1-1 a 1");
    assert_eq!(watched_exec(&mut r, &["PING"]), "*-1\r\n");
}

#[test]
fn the_clients_own_write_before_multi_fails_exec() {
    let s = start_server();
    let mut r = s.raw();
    assert_eq!(c(&mut r, "WATCH s"), "+OK\r\n");
    c(&mut r, "XADD s 1-1 a 1");
    assert_eq!(watched_exec(&mut r, &["PING"]), "*-1\r\n");
}

#[test]
fn unwatch_forgets_the_watched_keys() {
    let s = start_server();
    let mut r = s.raw();
    let mut other = s.raw();
    assert_eq!(c(&mut r, "WATCH s"), "+OK\r\n");
    assert_eq!(c(&mut r, "UNWATCH"), "+OK\r\n");
    c(&mut other, "XADD s 1-1 a 1");
    assert_eq!(watched_exec(&mut r, &["PING"]), "*1\r\n+PONG\r\n");
}

#[test]
fn deletions_renames_ttls_and_flushes_fail_exec() {
    let s = start_server();
    let mut r = s.raw();
    let mut other = s.raw();
    let cases: &[(&str, &[&str])] = &[
        ("DEL", &["DEL s"]),
        ("UNLINK", &["UNLINK s"]),
        ("RENAME away", &["RENAME s t"]),
        ("RENAME onto", &["XADD t 1-1 b 2", "RENAME t s"]),
        ("EXPIRE", &["EXPIRE s 100"]),
        ("PERSIST", &["EXPIRE s 100", "PERSIST s"]),
        ("EXPIRE past", &["EXPIRE s -1"]),
        ("XDEL", &["XDEL s 1-1"]),
        ("FLUSHDB", &["FLUSHDB"]),
        ("FLUSHALL", &["FLUSHALL"]),
        ("COPY onto", &["XADD t 1-1 b 2", "COPY t s REPLACE"]),
        ("MOVE away", &["MOVE s 1"]),
    ];
    for (name, writes) in cases {
        c(&mut other, "FLUSHALL");
        c(&mut other, "XADD s 1-1 a 1");
        assert_eq!(c(&mut r, "WATCH s"), "+OK\r\n", "{name}");
        for w in *writes {
            let reply = c(&mut other, w);
            assert!(!reply.starts_with('-'), "{name}: {w} -> {reply}");
        }
        assert_eq!(watched_exec(&mut r, &["PING"]), "*-1\r\n", "{name}");
    }
    // PERSIST of a key without TTL and a failed RENAMENX change nothing.
    for (name, w) in [
        ("PERSIST no-op", "PERSIST s"),
        ("RENAMENX no-op", "RENAMENX s t"),
    ] {
        c(&mut other, "FLUSHALL");
        c(&mut other, "XADD s 1-1 a 1");
        c(&mut other, "XADD t 1-1 a 1");
        assert_eq!(c(&mut r, "WATCH s"), "+OK\r\n");
        c(&mut other, w);
        assert_eq!(watched_exec(&mut r, &["PING"]), "*1\r\n+PONG\r\n", "{name}");
    }
}

#[test]
fn a_watched_key_in_another_database_is_tracked_separately() {
    let s = start_server();
    let mut r = s.raw();
    let mut other = s.raw();
    assert_eq!(c(&mut r, "WATCH s"), "+OK\r\n");
    c(&mut other, "SELECT 1");
    c(&mut other, "XADD s 1-1 a 1");
    assert_eq!(watched_exec(&mut r, &["PING"]), "*1\r\n+PONG\r\n");
    c(&mut r, "SELECT 1");
    assert_eq!(c(&mut r, "WATCH s"), "+OK\r\n");
    c(&mut other, "XADD s 2-1 a 1");
    assert_eq!(watched_exec(&mut r, &["PING"]), "*-1\r\n");
}

#[test]
fn a_watched_key_that_expires_fails_exec() {
    let s = start_server();
    let mut r = s.raw();
    c(&mut r, "XADD s 1-1 a 1");
    c(&mut r, "PEXPIRE s 100");
    assert_eq!(c(&mut r, "WATCH s"), "+OK\r\n");
    std::thread::sleep(Duration::from_millis(150));
    // Whether the active cycle deleted it already or it is only logically expired.
    assert_eq!(watched_exec(&mut r, &["PING"]), "*-1\r\n");
}

#[test]
fn a_key_already_expired_when_watched_does_not_fail_exec() {
    let s = start_server();
    let mut r = s.raw();
    c(&mut r, "XADD s 1-1 a 1");
    c(&mut r, "PEXPIRE s 20");
    std::thread::sleep(Duration::from_millis(60));
    assert_eq!(c(&mut r, "WATCH s"), "+OK\r\n");
    std::thread::sleep(Duration::from_millis(250));
    assert_eq!(watched_exec(&mut r, &["EXISTS s"]), "*1\r\n:0\r\n");
}

#[test]
fn a_blocking_read_inside_exec_answers_at_once() {
    let s = start_server();
    let mut r = s.raw();
    r.set_timeout(Duration::from_secs(3));
    assert_eq!(
        watched_exec(&mut r, &["XREAD BLOCK 0 STREAMS nokey $", "PING"]),
        "*2\r\n*-1\r\n+PONG\r\n"
    );
    // The client is usable afterwards (not left blocked).
    assert_eq!(c(&mut r, "PING"), "+PONG\r\n");
}

#[test]
fn writes_inside_exec_wake_blocked_readers_once_after_exec() {
    let s = start_server();
    let mut r = s.raw();
    let mut reader = s.raw();
    c(&mut r, "XADD s 1-1 a 1");
    reader.send(&encode_cmd(&[
        b"XREAD", b"BLOCK", b"5000", b"STREAMS", b"s", b"$",
    ]));
    wait_blocked(&mut r, 1);
    assert_eq!(
        watched_exec(&mut r, &["XADD s 2-1 b 2", "XADD s 3-1 c 3"]),
        "*2\r\n$3\r\n2-1\r\n$3\r\n3-1\r\n"
    );
    // The reader gets both entries in one reply.
    assert_eq!(
        String::from_utf8_lossy(&reader.read_reply()),
        "*1\r\n*2\r\n$1\r\ns\r\n*2\r\n*2\r\n$3\r\n2-1\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n*2\r\n$3\r\n3-1\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n"
    );
}

#[test]
fn select_inside_exec_changes_the_database_for_the_rest() {
    let s = start_server();
    let mut r = s.raw();
    assert_eq!(
        watched_exec(&mut r, &["SELECT 2", "XADD s 1-1 a 1"]),
        "*2\r\n+OK\r\n$3\r\n1-1\r\n"
    );
    assert_eq!(c(&mut r, "XLEN s"), ":1\r\n");
    c(&mut r, "SELECT 0");
    assert_eq!(c(&mut r, "EXISTS s"), ":0\r\n");
}

#[test]
fn transactions_answer_like_redis_7() {
    let redis = redis_server();
    let s = start_server();
    let (mut a, mut b) = (redis.raw(), s.raw());
    let script = [
        "MULTI",
        "MULTI",
        "WATCH x",
        "PING",
        "EXEC",
        "MULTI",
        "NOSUCH",
        "PING",
        "EXEC",
        "EXEC",
        "DISCARD",
        "MULTI",
        "EXEC",
        "MULTI",
        "XADD s 5-1 a 1",
        "XADD s 1-1 a 1",
        "UNWATCH",
        "EXEC",
        "WATCH s",
        "DEL s",
        "MULTI",
        "EXEC",
        "WATCH s",
        "MULTI",
        "XADD s 1-1 a 1",
        "DISCARD",
        "XLEN s",
        "MULTI",
        "XLEN",
        "EXEC",
    ];
    for line in script {
        assert_eq!(c(&mut a, line), c(&mut b, line), "{line}");
    }
}

/// SAVE, SHUTDOWN and SYNC cannot be queued (`no_multi`): each is refused and marks the
/// transaction, whose EXEC then aborts; compared with Redis 7.0 byte for byte.
#[test]
fn no_multi_commands_are_refused_inside_multi_as_redis_does() {
    use common::differential::{differential, exact};
    let s = start_server();
    let redis = redis_server();
    let cases = exact(&[
        &["MULTI"],
        &["SET", "k", "v"],
        &["SAVE"],
        &["SHUTDOWN", "NOSAVE"],
        &["SYNC"],
        &["EXEC"],
        &["GET", "k"],
    ]);
    for proto in [2, 3] {
        let bad = differential(s.port, redis.port, proto, &cases);
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }
}
