//! CONFIG GET/SET/REWRITE: every Redis 7.0 configuration name is known with Redis's
//! default and errors (compared with Debian's redis-server 7.0), and CONFIG REWRITE
//! writes the running configuration back into the file the server started with.

mod common;

use common::{Raw, redis_server, start_server, start_server_with_conf};

/// The bulk strings of a flat RESP2 array reply (CONFIG GET), in order.
fn bulks(reply: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(reply).into_owned();
    let mut lines = text.split("\r\n").skip(1);
    let mut out = Vec::new();
    while let Some(header) = lines.next() {
        if header.starts_with('$') {
            out.push(lines.next().unwrap_or("").to_string());
        }
    }
    out
}

/// CONFIG GET `pattern` as (name, value) pairs.
fn config_get(raw: &mut Raw, pattern: &str) -> Vec<(String, String)> {
    let b = bulks(&raw.cmd_str(&["CONFIG", "GET", pattern]));
    b.chunks(2)
        .map(|p| (p[0].clone(), p.get(1).cloned().unwrap_or_default()))
        .collect()
}

#[test]
fn every_redis_name_is_known_with_redis_default() {
    let redis = redis_server();
    let server = start_server();
    let theirs = config_get(&mut redis.raw(), "*");
    let ours = config_get(&mut server.raw(), "*");
    assert!(theirs.len() >= 190, "{}", theirs.len());
    // Added with their effect by the latency monitor's own change.
    let elsewhere = [
        "latency-monitor-threshold",
        "latency-tracking",
        "latency-tracking-info-percentiles",
    ];
    for (name, value) in &theirs {
        if elsewhere.contains(&name.as_str()) {
            continue;
        }
        let Some((_, mine)) = ours.iter().find(|(n, _)| n == name) else {
            panic!("CONFIG GET * lacks {name}");
        };
        if streamd::config::redis::REDIS_ONLY
            .iter()
            .any(|d| d.name == name)
        {
            assert_eq!(mine, value, "default of {name}");
        }
    }
}

#[test]
fn config_set_replies_match_redis() {
    let redis = redis_server();
    let server = start_server();
    let (mut theirs, mut ours) = (redis.raw(), server.raw());
    let cases: &[&[&str]] = &[
        &["aof-use-rdb-preamble", "yes"],
        &["lazyfree-lazy-user-del", "yes"],
        &["activedefrag", "no"],
        &["repl-backlog-size", "4mb"],
        &["min-replicas-to-write", "0"],
        &["notify-keyspace-events", "Ex"],
        &["busy-reply-threshold", "5000"],
        &["hz", "20"],
        &["hz", "abc"],
        &["hz", "-1"],
        &["hz", "1000"],
        &["repl-backlog-size", "0"],
        &["repl-backlog-size", "1x"],
        &["activedefrag", "maybe"],
        &["daemonize", "yes"],
        &["unixsocketperm", "700"],
        &["repl-diskless-load", "sometimes"],
        &["notify-keyspace-events", "Q"],
        &["shutdown-on-sigint", "nosave now"],
        &["shutdown-on-sigint", "later"],
        &["oom-score-adj-values", "1 2"],
        &["maxmemory-clients", "10%"],
        &["slave-read-only", "no"],
        &["no-such-option", "1"],
        &["hz"],
        &["latency-tracking-info-percentiles", "abc"],
        &["latency-tracking-info-percentiles", "50 200"],
        &["latency-tracking-info-percentiles", "-1"],
        &["latency-tracking-info-percentiles", "50,99"],
        &["latency-tracking-info-percentiles", "50 99.9"],
    ];
    for case in cases {
        let mut argv = vec!["CONFIG", "SET"];
        argv.extend_from_slice(case);
        let want = theirs.cmd_str(&argv);
        assert_eq!(
            String::from_utf8_lossy(&ours.cmd_str(&argv)),
            String::from_utf8_lossy(&want),
            "CONFIG SET {case:?}"
        );
    }
    for name in [
        "notify-keyspace-events",
        "shutdown-on-sigint",
        "maxmemory-clients",
        "latency-tracking-info-percentiles",
    ] {
        assert_eq!(
            config_get(&mut ours, name),
            config_get(&mut theirs, name),
            "{name}"
        );
    }
}

#[test]
fn config_rewrite_without_a_file_is_refused_as_by_redis() {
    let server = start_server();
    let want = b"-ERR The server is running without a config file\r\n".to_vec();
    assert_eq!(server.raw().cmd_str(&["CONFIG", "REWRITE"]), want);
    let redis = redis_server();
    assert_eq!(redis.raw().cmd_str(&["CONFIG", "REWRITE"]), want);
}

#[test]
fn config_rewrite_keeps_the_file_and_survives_a_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let conf = dir.path().join("streamd.conf");
    std::fs::write(
        &conf,
        "# operator's notes\nslowlog-max-len 128\n\n# old name of busy-reply-threshold\nlua-time-limit 5000\n",
    )
    .expect("write conf");
    {
        let server = start_server_with_conf(&conf, &[]);
        let mut c = server.raw();
        for (name, value) in [
            ("slowlog-max-len", "77"),
            ("busy-reply-threshold", "100"),
            ("aof-use-rdb-preamble", "no"),
        ] {
            assert_eq!(c.cmd_str(&["CONFIG", "SET", name, value]), b"+OK\r\n");
        }
        assert_eq!(c.cmd_str(&["CONFIG", "REWRITE"]), b"+OK\r\n");
    }
    let text = std::fs::read_to_string(&conf).expect("read conf");
    assert!(
        text.starts_with(
            "# operator's notes\nslowlog-max-len 77\n\n# old name of busy-reply-threshold\nbusy-reply-threshold 100\n"
        ),
        "{text}"
    );
    let tail = text
        .split_once("# Generated by CONFIG REWRITE\n")
        .map(|(_, t)| t)
        .unwrap_or_else(|| panic!("no signature in {text}"));
    assert!(
        tail.lines().any(|l| l == "aof-use-rdb-preamble no"),
        "{text}"
    );
    assert_eq!(text.matches("slowlog-max-len").count(), 1, "{text}");
    let server = start_server_with_conf(&conf, &[]);
    let mut c = server.raw();
    assert_eq!(
        config_get(&mut c, "slowlog-max-len"),
        vec![("slowlog-max-len".to_string(), "77".to_string())]
    );
    assert_eq!(config_get(&mut c, "lua-time-limit")[0].1, "100");
    assert_eq!(config_get(&mut c, "aof-use-rdb-preamble")[0].1, "no");
}

/// The listen queue length `ss` shows for the listener on `port` (its Send-Q column).
fn listen_backlog(port: u16) -> u64 {
    let out = std::process::Command::new("ss")
        .args(["-Hltn", &format!("sport = :{port}")])
        .output()
        .expect("ss (iproute2)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.split_whitespace()
        .nth(2)
        .and_then(|q| q.parse().ok())
        .unwrap_or_else(|| panic!("no listener on {port} in {text:?}"))
}

/// `tcp-backlog` sizes the listen queue, as in Redis (the kernel caps it at somaxconn):
/// with `std`'s 128, a burst of connects beside busy clients lost SYNs, a second each.
#[test]
fn tcp_backlog_sizes_the_listen_queue() {
    let somaxconn: u64 = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(4096);
    let default = start_server();
    assert_eq!(listen_backlog(default.port), 511.min(somaxconn));
    let small = common::start_server_with(&["--tcp-backlog", "77"]);
    assert_eq!(listen_backlog(small.port), 77.min(somaxconn));
    let mut raw = small.raw();
    assert_eq!(
        config_get(&mut raw, "tcp-backlog"),
        [("tcp-backlog".to_string(), "77".to_string())]
    );
}
