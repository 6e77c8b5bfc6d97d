//! `streamd --import-rdb FILE`: a Redis `dump.rdb` becomes this server's snapshot.
//!
//! `rdb/` reads the file into databases (it knows Redis's format, not ours); this
//! writes them as the configured snapshot, which the server then loads as usual.

use std::time::Instant;

/// `streamd --import-rdb FILE`: refuses a data directory that already holds data,
/// reads `path`, logs progress and what was skipped, and writes the databases as the
/// configured snapshot (`<dir>/<dbfilename>`), which the server then loads as usual.
/// The data directory's lock is held meanwhile, so no server can start on it.
pub fn import(
    config: &crate::config::Config,
    path: &std::path::Path,
) -> Result<crate::rdb::file::ImportStats, String> {
    use std::fs;
    let dir = std::path::PathBuf::from(config.get("dir").unwrap_or("./data"));
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let lock_path = dir.join(super::LOCK_FILE);
    let lock = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| format!("cannot open {}: {e}", lock_path.display()))?;
    lock.try_lock().map_err(|_| {
        format!(
            "{} is in use by another streamd; import into an unused, empty data directory",
            dir.display()
        )
    })?;
    let snap = dir.join(config.get("dbfilename").unwrap_or("dump.snap"));
    let aof_dir = dir.join(config.get("appenddirname").unwrap_or("appendonlydir"));
    let aof_has_files = fs::read_dir(&aof_dir).is_ok_and(|mut d| d.next().is_some());
    if snap.exists() || aof_has_files {
        let what = if snap.exists() { &snap } else { &aof_dir };
        return Err(format!(
            "the data directory {} already holds data ({}); --import-rdb only imports into \
             an empty data directory, so nothing is overwritten",
            dir.display(),
            what.display()
        ));
    }
    let started = Instant::now();
    let data = fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let databases = usize::try_from(config.get_i64("databases"))
        .unwrap_or(16)
        .max(1);
    let total = data.len() as u64;
    tracing::info!(file = %path.display(), bytes = total, "importing a Redis RDB file");
    let mut report = |keys: u64, done: u64| {
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        tracing::info!(
            keys,
            percent = format!("{:.1}", 100.0 * done as f64 / total.max(1) as f64),
            mb_per_sec = format!("{:.1}", done as f64 / 1e6 / secs),
            "importing"
        );
    };
    let idmp_defaults = (
        config.get_i64("stream-idmp-duration"),
        config.get_i64("stream-idmp-maxsize"),
    );
    let (dbs, stats) = crate::rdb::file::read(
        &data,
        databases,
        crate::core::unix_ms(),
        idmp_defaults,
        &mut report,
    )
    .map_err(|e| format!("{} is not a valid RDB file: {e}", path.display()))?;
    drop(data);
    let read_secs = started.elapsed().as_secs_f64();
    let saved = super::snapshot::save(&snap, &dbs, &[], crate::core::unix_ms())
        .map_err(|e| format!("cannot write the snapshot: {e}"))?;
    let secs = started.elapsed().as_secs_f64();
    let skipped: Vec<String> = stats
        .skipped
        .iter()
        .map(|(t, n)| format!("{t}={n}"))
        .collect();
    let imported: Vec<String> = stats
        .imported
        .iter()
        .map(|(t, n)| format!("{t}={n}"))
        .collect();
    tracing::info!(
        imported = %if imported.is_empty() { "none".to_string() } else { imported.join(" ") },
        streams = stats.streams,
        entries = stats.entries,
        expired = stats.expired,
        empty = stats.empty,
        skipped = %if skipped.is_empty() { "none".to_string() } else { skipped.join(" ") },
        rdb_version = stats.version,
        read_secs = format!("{read_secs:.3}"),
        read_mb_per_sec = format!("{:.1}", total as f64 / 1e6 / read_secs.max(1e-9)),
        total_secs = format!("{secs:.3}"),
        mb_per_sec = format!("{:.1}", total as f64 / 1e6 / secs.max(1e-9)),
        snapshot = %snap.display(),
        snapshot_bytes = saved.bytes,
        "RDB import done"
    );
    drop(lock);
    Ok(stats)
}
