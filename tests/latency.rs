//! LATENCY and INFO latencystats against the real binary, compared with Debian's
//! redis-server (7.0) for the reply shapes and errors.

mod common;

use common::{Raw, c, redis_server, start_server};

#[test]
fn a_slow_command_is_a_latency_event() {
    let s = start_server();
    let mut r = Raw::connect(s.port);
    assert_eq!(c(&mut r, "LATENCY LATEST"), "*0\r\n");
    assert!(c(&mut r, "LATENCY DOCTOR").contains("Latency monitoring is disabled"));
    assert_eq!(
        c(&mut r, "CONFIG SET latency-monitor-threshold 1"),
        "+OK\r\n"
    );
    assert_eq!(c(&mut r, "DEBUG SLEEP 0.02"), "+OK\r\n");
    let latest = c(&mut r, "LATENCY LATEST");
    assert!(
        latest.starts_with("*1\r\n*4\r\n$7\r\ncommand\r\n:"),
        "{latest}"
    );
    let history = c(&mut r, "LATENCY HISTORY command");
    assert!(history.starts_with("*1\r\n*2\r\n:"), "{history}");
    let graph = c(&mut r, "LATENCY GRAPH command");
    assert!(graph.contains("command - high "), "{graph}");
    let doctor = c(&mut r, "LATENCY DOCTOR");
    assert!(doctor.contains("1. command: 1 latency spikes"), "{doctor}");
    assert_eq!(c(&mut r, "LATENCY RESET command nosuch"), ":1\r\n");
    assert_eq!(c(&mut r, "LATENCY LATEST"), "*0\r\n");
    assert_eq!(
        c(&mut r, "LATENCY GRAPH command"),
        "-ERR No samples available for event 'command'\r\n"
    );
}

/// `LATENCY HISTOGRAM xadd` after one XADD, with the bucket label and the ID normalised.
fn histogram_shape(port: u16) -> String {
    let mut r = Raw::connect(port);
    c(&mut r, "XADD h 1-1 f v");
    let reply = c(&mut r, "LATENCY HISTOGRAM xadd nosuch");
    // *1 / $4 xadd / *4 / $5 calls / :1 / $14 histogram_usec / *2 / :<bucket> / :1
    let lines: Vec<&str> = reply.split("\r\n").collect();
    assert_eq!(lines.len(), 13, "{reply}");
    let mut l: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
    l[10] = ":<bucket>".to_string();
    l.join("\r\n")
}

#[test]
fn latency_histogram_has_redis_shape() {
    let s = start_server();
    let ours = histogram_shape(s.port);
    let mut r = Raw::connect(s.port);
    let info = c(&mut r, "INFO latencystats");
    assert!(info.starts_with("$"), "{info}");
    assert!(info.contains("# Latencystats\r\n"), "{info}");
    let line = info
        .lines()
        .find(|l| l.starts_with("latency_percentiles_usec_xadd:"))
        .unwrap_or_else(|| panic!("{info}"));
    let fields: Vec<&str> = line
        .trim_start_matches("latency_percentiles_usec_xadd:")
        .split(',')
        .map(|f| f.split('=').next().unwrap_or(""))
        .collect();
    assert_eq!(fields, ["p50", "p99", "p99.9"]);
    assert!(line.split('=').skip(1).all(|v| {
        v.split(',')
            .next()
            .is_some_and(|n| n.split_once('.').is_some_and(|(_, d)| d.len() == 3))
    }));
    c(&mut r, "CONFIG SET latency-tracking-info-percentiles 50");
    let info = c(&mut r, "INFO latencystats");
    assert!(
        info.contains("latency_percentiles_usec_xadd:p50="),
        "{info}"
    );
    assert!(!info.contains("p99="), "{info}");
    c(&mut r, "CONFIG RESETSTAT");
    assert_eq!(c(&mut r, "LATENCY HISTOGRAM xadd"), "*0\r\n");
    let redis = redis_server();
    assert_eq!(ours, histogram_shape(redis.port));
}

#[test]
fn latency_tracking_off_keeps_no_histograms() {
    let s = start_server();
    let mut r = Raw::connect(s.port);
    c(&mut r, "CONFIG SET latency-tracking no");
    c(&mut r, "XADD h 1-1 f v");
    assert_eq!(c(&mut r, "LATENCY HISTOGRAM xadd"), "*0\r\n");
}

#[test]
fn latency_errors_match_redis() {
    let redis = redis_server();
    let s = start_server();
    let (mut ours, mut theirs) = (Raw::connect(s.port), Raw::connect(redis.port));
    for line in [
        "LATENCY",
        "LATENCY foo",
        "LATENCY HISTORY",
        "LATENCY HISTORY nosuch",
        "LATENCY HISTORY a b",
        "LATENCY GRAPH",
        "LATENCY GRAPH nosuch",
        "LATENCY LATEST x",
        "LATENCY DOCTOR x",
        "LATENCY RESET",
        "LATENCY RESET x y",
        "LATENCY HISTOGRAM nosuch",
        "LATENCY DOCTOR",
    ] {
        assert_eq!(c(&mut ours, line), c(&mut theirs, line), "{line}");
    }
}
