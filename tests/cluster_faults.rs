//! Issue 40's cluster acceptance (`scripts/cluster-faults`) for one seed: a 3+3 cluster
//! behind the tool's proxies with `min-sync-replicas 1` on every node, six writers doing
//! `XADD` without WAIT on keys of all three shards, one primary killed with `kill -9` (and
//! restarted once its replica took over), one killed and restarted at once (fenced, it must
//! still be failed over), and one primary partitioned from every other node for longer than
//! the node timeout. The tool fails when an acknowledged write is lost or
//! duplicated, when the isolated primary acknowledges a write or one it took survives, when
//! two nodes acknowledge writes for one slot at the same time, when a replica differs from
//! its primary, or when a shard does not get a writable primary with a replica back;
//! docs/cluster.md has the numbers over more seeds.

use std::process::Command;

#[test]
fn killed_restarted_and_partitioned_primaries_lose_no_acknowledged_write_with_sync_replicas() {
    let out = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/cluster-faults"
        ))
        .args(["--bin", env!("CARGO_BIN_EXE_streamd")])
        .args(["--sync", "--seeds", "1"])
        .output()
        .expect("run python3 scripts/cluster-faults (python3 and redis-cli are needed)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stdout.lines().last().unwrap_or("");
    assert!(
        out.status.success()
            && last.starts_with("cluster-faults: mode=sync seeds=1 lost=0 duplicated=0")
            && last.contains("failovers=3/3"),
        "the cluster fault schedule failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
}
