//! INFO: `redis_version` and HELLO's `version` follow `compat-version`, and a blocked
//! command is counted once in `INFO commandstats`, as Redis counts it (compared with
//! Debian's redis-server where it is installed).

mod common;

use common::{Raw, info_field, redis_server, send, start_server, wait_blocked};

/// `calls=N` of `cmdstat_<name>`, 0 when the command has no line.
fn calls(raw: &mut Raw, name: &str) -> u64 {
    info_field(raw, "commandstats", &format!("cmdstat_{name}"))
        .and_then(|v| {
            v.split(',')
                .find_map(|kv| kv.strip_prefix("calls=").map(str::to_string))
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Blocks one XREADGROUP until an XADD serves it and one XREAD until it times out;
/// returns (xreadgroup calls, xread calls, total_commands_processed delta).
fn blocked_counts(port: u16) -> (u64, u64, u64) {
    let mut c = Raw::connect(port);
    c.cmd_str(&["XGROUP", "CREATE", "cs", "g", "$", "MKSTREAM"]);
    c.cmd_str(&["CONFIG", "RESETSTAT"]);
    let mut reader = Raw::connect(port);
    send(
        &mut reader,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "c",
            "BLOCK",
            "5000",
            "STREAMS",
            "cs",
            ">",
        ],
    );
    wait_blocked(&mut c, 1);
    c.cmd_str(&["XADD", "cs", "*", "f", "v"]);
    assert!(reader.read_reply().starts_with(b"*1\r\n"));
    let mut timed_out = Raw::connect(port);
    let reply = timed_out.cmd_str(&["XREAD", "BLOCK", "50", "STREAMS", "nokey", "$"]);
    assert_eq!(reply, b"*-1\r\n");
    let before = info_field(&mut c, "stats", "total_commands_processed")
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    let after = info_field(&mut c, "stats", "total_commands_processed")
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    (
        calls(&mut c, "xreadgroup"),
        calls(&mut c, "xread"),
        after - before,
    )
}

#[test]
fn a_blocked_command_counts_one_call_when_served_or_timed_out() {
    let server = start_server();
    let (xreadgroup, xread, info_step) = blocked_counts(server.port);
    assert_eq!((xreadgroup, xread), (1, 1));
    assert_eq!(info_step, 1, "each INFO counts once");
}

#[test]
fn blocked_command_counts_match_redis() {
    let redis = redis_server();
    let server = start_server();
    assert_eq!(blocked_counts(server.port), blocked_counts(redis.port));
}

#[test]
fn redis_version_follows_compat_version() {
    let server = start_server();
    let mut c = server.raw();
    assert_eq!(
        info_field(&mut c, "server", "redis_version").as_deref(),
        Some(streamd::core::REDIS_VERSION)
    );
    assert_eq!(streamd::core::REDIS_VERSION, "8.10.0");
    assert_eq!(
        c.cmd_str(&["CONFIG", "SET", "compat-version", "7.4"]),
        b"+OK\r\n"
    );
    assert_eq!(
        info_field(&mut c, "server", "redis_version").as_deref(),
        Some("7.4.0")
    );
    let hello = c.cmd_str(&["HELLO", "2"]);
    let text = String::from_utf8_lossy(&hello);
    assert!(text.contains("$7\r\nversion\r\n$5\r\n7.4.0\r\n"), "{text}");
}
