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

/// A command's time in INFO commandstats, the slow log and LATENCY LATEST is the time it
/// ran, in microseconds (`core/ticks.rs` reads the processor's counter where it can): a
/// script that spins for 50 ms by the server's TIME counts at least 50,000 us in each,
/// and less than ten times that (room for a loaded machine, not for a clock off by a
/// unit).
#[test]
fn a_command_is_timed_in_microseconds_everywhere() {
    let s = start_server();
    let mut r = Raw::connect(s.port);
    for set in [
        "CONFIG SET latency-monitor-threshold 1",
        "CONFIG SET slowlog-log-slower-than 1000",
    ] {
        assert_eq!(c(&mut r, set), "+OK\r\n");
    }
    // The clock, named as Redis names its own (INFO server `monotonic_clock`).
    let server = c(&mut r, "INFO server");
    let clock = server
        .lines()
        .find_map(|l| l.strip_prefix("monotonic_clock:"))
        .unwrap_or_else(|| panic!("no monotonic_clock in {server}"));
    assert!(
        clock == "POSIX clock_gettime"
            || (clock.starts_with("X86 TSC @ ") && clock.ends_with(" ticks/us")),
        "{clock}"
    );
    let spin = "local function us() local t = redis.call('TIME') return t[1] * 1000000 + t[2] end \
                local stop = us() + 50000 while us() < stop do end return 1";
    assert_eq!(r.cmd_str(&["EVAL", spin, "0"]), b":1\r\n");
    let in_range = |what: &str, usec: u64| {
        assert!((50_000..500_000).contains(&usec), "{what}: {usec} us");
    };
    let stats = c(&mut r, "INFO commandstats");
    let line = stats
        .lines()
        .find(|l| l.starts_with("cmdstat_eval:"))
        .unwrap_or_else(|| panic!("no cmdstat_eval in {stats}"));
    let usec = line
        .split(',')
        .find_map(|f| f.strip_prefix("usec="))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no usec in {line}"));
    in_range("commandstats", usec);
    // *1 / *6 / :id / :time / :duration / ...
    let slowlog = c(&mut r, "SLOWLOG GET 1");
    let duration = slowlog
        .split("\r\n")
        .filter(|l| l.starts_with(':'))
        .nth(2)
        .and_then(|l| l[1..].parse().ok())
        .unwrap_or_else(|| panic!("no duration in {slowlog}"));
    in_range("slowlog", duration);
    // *1 / *4 / $7 command / :time / :latest ms / :max ms
    let latest = c(&mut r, "LATENCY LATEST");
    let ms: u64 = latest
        .split("\r\n")
        .filter(|l| l.starts_with(':'))
        .nth(1)
        .and_then(|l| l[1..].parse().ok())
        .unwrap_or_else(|| panic!("no latency in {latest}"));
    in_range("latency monitor", ms * 1000);
}
