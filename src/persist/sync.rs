//! What replication needs from persistence: the snapshot a streamd replica receives
//! (the same format as `dump.snap`, produced in memory), loading a received snapshot
//! in place of the dataset, and the replication state a clean shutdown leaves behind
//! so a restarted server continues its history (`replication.state`).
//!
//! ```text
//! replication.state (text, written atomically at a clean shutdown, removed at start):
//!   streamd-replication 1
//!   replid <40 hex>
//!   offset <bytes of the stream the saved dataset contains>
//!   db <database the primary's stream had selected, -1 unknown>
//! ```
//!
//! The file is only written when the shutdown made the whole dataset durable (a final
//! snapshot, or a log synced to its end), so the offset describes exactly what the next
//! start loads. It is read and deleted when loading ends: after a kill -9 there is no
//! file, and a replica asks for a full resync (what Redis 7 does without an RDB that
//! carries the offset).

use super::{PersistError, Source, load_files};
use crate::core::Core;
use crate::core::keyspace::Db;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The file name in the data directory.
pub const STATE_FILE: &str = "replication.state";

/// Replaces the dataset with the snapshot at `path` (a full sync's payload). On an
/// error the previous dataset is put back untouched, so a replica never serves half a
/// sync.
pub fn load_snapshot_file(core: &mut Core, path: &Path) -> Result<(), PersistError> {
    let fresh: Vec<Db> = (0..core.dbs.len()).map(|_| Db::default()).collect();
    let old = std::mem::replace(&mut core.dbs, fresh);
    match load_files(core, vec![Source::Snapshot(path.to_path_buf())]) {
        Ok(()) => {
            core.touch_all(None);
            Ok(())
        }
        Err(e) => {
            core.dbs = old;
            Err(e)
        }
    }
}

/// After a full sync replaced the dataset: when a log is on, rewrite it so its base is
/// the new dataset (Redis's `restartAOFAfterSYNC`). Until that rewrite ends, a restart
/// loads the previous dataset whole and nothing of the new history counts as durable
/// (a replica's FACK, WAITAOF), so no FACK promises what a crash would lose.
pub fn after_full_sync(core: &mut Core) {
    // Offsets restart in the primary's history: nothing of it is durable here yet.
    core.repl.fsynced_offset = 0;
    if let Some(p) = super::state_mut(core)
        && p.aof.is_some()
    {
        // Until a rewrite that starts from now has finished, the log's files hold the
        // previous dataset (see `Persist::sync_hold`).
        p.sync_hold = true;
    }
    if core.persist.recording() {
        let r = core.with_persistence(|p, core| p.bgrewriteaof(core));
        if let Err(e) = r {
            tracing::warn!(error = %e, "could not rewrite the append only file after a full sync");
        }
    }
}

fn state_path(core: &Core) -> PathBuf {
    super::dump_path(core)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
        .join(STATE_FILE)
}

/// Writes `replication.state` (see the module doc); called by a shutdown that made the
/// dataset durable.
pub fn save_state(core: &Core) -> io::Result<()> {
    let path = state_path(core);
    let tmp = path.with_extension("tmp");
    let db = core.repl.master_db.map_or(-1, |d| d as i64);
    let text = format!(
        "streamd-replication 1\nreplid {}\noffset {}\ndb {db}\n",
        core.repl.replid, core.repl.offset
    );
    fs::write(&tmp, text)?;
    fs::File::open(&tmp)?.sync_all()?;
    fs::rename(&tmp, &path)
}

/// Reads and removes `replication.state`, and continues the saved history: the
/// replication id, the offset and the selected database (a replica then asks its
/// primary for a partial resync; a primary accepts one from its replicas).
pub fn restore_state(core: &mut Core) {
    let path = state_path(core);
    let Ok(text) = fs::read_to_string(&path) else {
        return;
    };
    let _ = fs::remove_file(&path);
    let mut lines = text.lines();
    if lines.next() != Some("streamd-replication 1") {
        tracing::warn!(file = %path.display(), "ignoring a replication state file of an unknown format");
        return;
    }
    let (mut replid, mut offset, mut db) = (None, None, None);
    for line in lines {
        match line.split_once(' ') {
            Some(("replid", v)) if v.len() == 40 && v.bytes().all(|b| b.is_ascii_hexdigit()) => {
                replid = Some(v.to_string())
            }
            Some(("offset", v)) => offset = v.parse::<u64>().ok(),
            Some(("db", v)) => db = v.parse::<i64>().ok(),
            _ => {}
        }
    }
    let (Some(replid), Some(offset)) = (replid, offset) else {
        tracing::warn!(file = %path.display(), "ignoring an incomplete replication state file");
        return;
    };
    tracing::info!(replid = %replid, offset, "continuing the replication history saved at shutdown");
    core.repl.replid = replid;
    core.repl.reset_offset(offset);
    core.repl.master_db = db.and_then(|d| usize::try_from(d).ok());
    core.repl.ensure_backlog();
}

/// Removes a state file of an older run without reading it (when the dataset it
/// describes is not what was loaded).
pub fn forget_state(core: &Core) {
    let _ = fs::remove_file(state_path(core));
}

/// [`save_state`] for the shutdown path, which holds the persistence lent out.
pub(super) fn save_state_logged(core: &Core) {
    if let Err(e) = save_state(core) {
        tracing::warn!(error = %e, "could not save the replication state");
    }
}
