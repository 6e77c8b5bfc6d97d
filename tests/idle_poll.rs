//! `idle-poll-us`: the server polls its sockets for a while after requests instead of
//! sleeping at once, and stops polling when the clients go quiet (an idle server must not
//! burn CPU). Configurable at start and with CONFIG SET, with Redis's range error.

mod common;

use common::{Raw, start_server_with};
use std::time::Duration;

/// The server's process id, from INFO.
fn server_pid(raw: &mut Raw) -> u32 {
    let info = raw.cmd_str(&["INFO", "server"]);
    String::from_utf8_lossy(&info)
        .lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("process_id in INFO server")
}

/// CPU time the process has used so far (user + system), in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/PID/stat");
    // Fields after the command name (which may contain spaces) are space separated;
    // utime and stime are fields 14 and 15, i.e. 12 and 13 after the name's ')'.
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = after.split(' ').collect();
    fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime")
}

/// Sends `n` PINGs one at a time (each waits for its reply).
fn ping_ping(raw: &mut Raw, n: usize) {
    for _ in 0..n {
        assert_eq!(raw.cmd_str(&["PING"]), b"+PONG\r\n");
    }
}

#[test]
fn a_quiet_server_stops_polling() {
    // A long window makes a poller that never parks easy to see: it would use a whole
    // CPU for as long as the test watches.
    let server = start_server_with(&["--idle-poll-us", "20000"]);
    let mut raw = server.raw();
    let pid = server_pid(&mut raw);
    ping_ping(&mut raw, 200);
    // Past the 20 ms window the server has nothing to do; over a whole second it must
    // use almost no CPU (a spinning server would use about 100 ticks).
    std::thread::sleep(Duration::from_millis(200));
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(1));
    let used = cpu_ticks(pid) - before;
    assert!(
        used <= 20,
        "an idle server used {used} of 100 CPU ticks in a second"
    );
    // And it still answers at once when a client comes back.
    ping_ping(&mut raw, 10);
}

#[test]
fn idle_poll_is_set_at_start_and_at_run_time_with_range_checks() {
    let server = start_server_with(&["--idle-poll-us", "0"]);
    let mut raw = server.raw();
    assert_eq!(
        raw.cmd_str(&["CONFIG", "GET", "idle-poll-us"]),
        b"*2\r\n$12\r\nidle-poll-us\r\n$1\r\n0\r\n"
    );
    ping_ping(&mut raw, 50);
    assert_eq!(
        raw.cmd_str(&["CONFIG", "SET", "idle-poll-us", "250"]),
        b"+OK\r\n"
    );
    ping_ping(&mut raw, 50);
    assert_eq!(
        raw.cmd_str(&["CONFIG", "GET", "idle-poll-us"]),
        b"*2\r\n$12\r\nidle-poll-us\r\n$3\r\n250\r\n"
    );
    let err = raw.cmd_str(&["CONFIG", "SET", "idle-poll-us", "-1"]);
    assert!(
        err.starts_with(b"-ERR CONFIG SET failed (possibly related to argument 'idle-poll-us')"),
        "{}",
        String::from_utf8_lossy(&err)
    );
    assert_eq!(
        raw.cmd_str(&["CONFIG", "GET", "idle-poll-us"]),
        b"*2\r\n$12\r\nidle-poll-us\r\n$3\r\n250\r\n"
    );
}
