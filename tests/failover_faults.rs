//! The project's composed fault schedule (`scripts/failover-faults`) for two seeds:
//! three streamd servers with `appendfsync always` under three Debian `redis-sentinel`s,
//! writers and a group reader acknowledging with `WAIT 2`, and six faults per seed
//! (kill -9 and restart of the primary, SIGSTOP of the primary until Sentinel fails
//! over, kill -9 of a replica, a replica's link reset or stalled through the tool's
//! proxies). The tool fails when an acknowledged write is lost or duplicated, when a
//! write an isolated old primary took survives, when a replica differs from its primary
//! (entries, XINFO, groups, consumers, PEL with delivery counts), or when a failover
//! does not complete; docs/replication.md has the twenty-seed numbers.

use std::process::Command;

#[test]
fn two_seeds_of_the_fault_schedule_lose_nothing_and_leave_replicas_equal() {
    let out = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/failover-faults"
        ))
        .args([
            "--server",
            "streamd",
            "--bin",
            env!("CARGO_BIN_EXE_streamd"),
        ])
        .args(["--seeds", "1,2"])
        .output()
        .expect("run python3 scripts/failover-faults (python3 and redis-sentinel are needed)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stdout.lines().last().unwrap_or("");
    assert!(
        out.status.success() && last.contains("lost=0 duplicated=0"),
        "the fault schedule failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
}
