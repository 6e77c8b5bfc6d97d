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
        &["maxmemory-clients", "200%"],
        &["maxmemory-clients", "-5%"],
        &["maxmemory-clients", "abc%"],
        &["key-load-delay", "10"],
        &["key-load-delay", "x"],
        &["watchdog-period", "-1"],
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
        "key-load-delay",
        "loading-process-events-interval-bytes",
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

/// Redis's introspection.tcl "CONFIG SET port number" / "CONFIG SET bind address": the
/// listeners follow `port`, `bind` and `metrics-port` at run time. The old port closes
/// (the connection that asked stays), the new one serves; a bind that fails is refused
/// with Redis's words and the old listeners stay; an optional (`-`) address that is not
/// on this host is skipped.
#[test]
fn listeners_follow_config_set_at_run_time() {
    let server = start_server();
    let mut r = server.raw();
    let port = common::listen_on_a_free_port(&mut r, "port");
    let ok = b"+OK\r\n".to_vec();
    assert_eq!(
        r.cmd_str(&["PING"]),
        b"+PONG\r\n",
        "the asking connection stays"
    );
    assert!(
        Raw::try_connect(server.port).is_err(),
        "the old port is closed"
    );
    let mut moved = Raw::connect(port);
    assert_eq!(moved.cmd_str(&["PING"]), b"+PONG\r\n");
    let info = String::from_utf8_lossy(&moved.cmd_str(&["INFO", "server"])).into_owned();
    assert!(info.contains(&format!("tcp_port:{port}\r\n")), "{info}");

    // 192.0.2.1 (TEST-NET-1) is not an address of this host: refused as by Redis.
    let redis = redis_server();
    let refused = moved.cmd_str(&["CONFIG", "SET", "bind", "192.0.2.1"]);
    assert_eq!(
        String::from_utf8_lossy(&refused),
        "-ERR CONFIG SET failed (possibly related to argument 'bind') - Failed to bind to \
         specified addresses.\r\n"
    );
    assert_eq!(
        refused,
        redis.raw().cmd_str(&["CONFIG", "SET", "bind", "192.0.2.1"])
    );
    assert_eq!(
        config_get(&mut moved, "bind"),
        [("bind".to_string(), "127.0.0.1".to_string())]
    );
    assert_eq!(Raw::connect(port).cmd_str(&["PING"]), b"+PONG\r\n");
    assert_eq!(
        moved.cmd_str(&["CONFIG", "SET", "bind", "127.0.0.1 -192.0.2.1"]),
        ok
    );
    assert_eq!(Raw::connect(port).cmd_str(&["PING"]), b"+PONG\r\n");

    // A port someone else holds: refused, and the whole command rolls back (Redis's
    // "CONFIG SET rollback on apply error"); the current port keeps serving.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let taken_port = taken.local_addr().expect("addr").port().to_string();
    let maxmemory = config_get(&mut moved, "maxmemory");
    let cmd = [
        "CONFIG",
        "SET",
        "maxmemory",
        "10000001",
        "port",
        &taken_port,
        "client-query-buffer-limit",
        "10m",
    ];
    assert_eq!(
        String::from_utf8_lossy(&moved.cmd_str(&cmd)),
        "-ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on \
         this port. Check server logs.\r\n"
    );
    assert_eq!(
        config_get(&mut moved, "port"),
        [("port".to_string(), port.to_string())]
    );
    assert_eq!(config_get(&mut moved, "maxmemory"), maxmemory);
    assert_eq!(
        config_get(&mut moved, "client-query-buffer-limit"),
        [(
            "client-query-buffer-limit".to_string(),
            "1073741824".to_string()
        )]
    );
    assert_eq!(Raw::connect(port).cmd_str(&["PING"]), b"+PONG\r\n");

    // The metrics endpoint comes and goes with metrics-port.
    let mport = common::listen_on_a_free_port(&mut moved, "metrics-port");
    let mut http = std::net::TcpStream::connect(("127.0.0.1", mport)).expect("metrics port");
    use std::io::{Read, Write};
    http.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("write");
    let mut page = String::new();
    http.read_to_string(&mut page).expect("read");
    assert!(page.contains("redis_up 1"), "{page}");
    assert_eq!(moved.cmd_str(&["CONFIG", "SET", "metrics-port", "0"]), ok);
    assert!(std::net::TcpStream::connect(("127.0.0.1", mport)).is_err());
}

/// Redis's introspection.tcl "CONFIG sanity": every setting CONFIG GET * shows, less the
/// ones that test skips (immutable in Redis), can be set to its own value and reads back
/// the same.
#[test]
fn every_setting_can_be_set_to_its_own_value() {
    const SKIPPED: &str = "rdbchecksum daemonize io-threads-do-reads tcp-backlog \
        always-show-logo syslog-enabled cluster-enabled disable-thp aclfile unixsocket \
        pidfile syslog-ident appendfilename appenddirname supervised syslog-facility \
        databases io-threads logfile unixsocketperm replicaof slaveof requirepass \
        server_cpulist bio_cpulist aof_rewrite_cpulist bgsave_cpulist set-proc-title \
        cluster-config-file cluster-port oom-score-adj oom-score-adj-values \
        enable-protected-configs enable-debug-command enable-module-command dbfilename \
        dir socket-mark-id tls-prefer-server-ciphers tls-session-cache-timeout \
        tls-session-cache-size tls-session-caching tls-cert-file tls-key-file \
        tls-client-cert-file tls-client-key-file tls-dh-params-file tls-ca-cert-file \
        tls-ca-cert-dir tls-protocols tls-ciphers tls-ciphersuites tls-port";
    let skipped: Vec<&str> = SKIPPED.split_whitespace().collect();
    let server = start_server();
    let mut r = server.raw();
    let before: Vec<(String, String)> = config_get(&mut r, "*")
        .into_iter()
        .filter(|(k, _)| !skipped.contains(&k.as_str()))
        .collect();
    assert!(before.len() > 150, "{}", before.len());
    // Hidden settings answer only to their exact name (Redis's "CONFIG GET hidden configs").
    assert!(before.iter().all(|(k, _)| k != "key-load-delay"));
    assert_eq!(
        config_get(&mut r, "key-load-delay"),
        [("key-load-delay".to_string(), "0".to_string())]
    );
    for (k, v) in &before {
        assert_eq!(
            String::from_utf8_lossy(&r.cmd_str(&["CONFIG", "SET", k, v])),
            "+OK\r\n",
            "CONFIG SET {k} {v:?}"
        );
    }
    let after: std::collections::HashMap<String, String> =
        config_get(&mut r, "*").into_iter().collect();
    for (k, v) in &before {
        assert_eq!(after.get(k), Some(v), "{k}");
    }
}

/// `loglevel` and `log-format` take effect when set, not only at start.
#[test]
fn log_level_and_format_change_at_run_time() {
    let server = start_server();
    let mut r = server.raw();
    let ok = b"+OK\r\n".to_vec();
    // An INFO-level line, in text: the metrics endpoint coming up.
    common::listen_on_a_free_port(&mut r, "metrics-port");
    let wait_for_line = |what: &str, pred: &dyn Fn(&str) -> bool| {
        for _ in 0..200 {
            if server.log().lines().any(pred) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("no {what} in the log:\n{}", server.log());
    };
    wait_for_line("text line", &|l| {
        l.contains("INFO") && l.contains("metrics endpoint ready") && !l.starts_with('{')
    });
    assert_eq!(r.cmd_str(&["CONFIG", "SET", "log-format", "json"]), ok);
    assert_eq!(r.cmd_str(&["CONFIG", "SET", "metrics-port", "0"]), ok);
    let mport = common::listen_on_a_free_port(&mut r, "metrics-port");
    wait_for_line("JSON line", &|l| {
        l.starts_with('{') && l.contains("\"level\":\"INFO\"") && l.contains(&mport.to_string())
    });
    // At `warning`, the same INFO line is no longer written.
    assert_eq!(r.cmd_str(&["CONFIG", "SET", "loglevel", "warning"]), ok);
    assert_eq!(r.cmd_str(&["CONFIG", "SET", "metrics-port", "0"]), ok);
    let quiet = common::listen_on_a_free_port(&mut r, "metrics-port");
    // A WARN line after it proves the log was written up to there.
    let refused = r.cmd_str(&["CONFIG", "SET", "bind", "192.0.2.1"]);
    assert!(refused.starts_with(b"-ERR"), "{refused:?}");
    wait_for_line("WARN line", &|l| {
        l.contains("\"level\":\"WARN\"") && l.contains("192.0.2.1")
    });
    assert!(
        !server.log().contains(&format!("/{quiet}/") as &str)
            && !server.log().contains(&format!(":{quiet}/metrics")),
        "an INFO line at loglevel warning:\n{}",
        server.log()
    );
}
