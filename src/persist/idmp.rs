//! Idempotent-production state (stream/idmp.rs) in the log and in snapshots.
//!
//! ```text
//! STREAMD.IDMP <key> <duration> <maxsize> <iids-added> <iids-duplicates>
//!         the stream's IDMP settings and lifetime counters, exactly (creates the state
//!         if the stream has none; keeps the producers)
//! STREAMD.IID <key> <pid> <iid> <entry-id>
//!         one tracked iid, in each producer's insertion order (pid/iid binary)
//! ```
//!
//! **In the log**: an accepted `XADD ... IDMP` is logged as the XADD itself with its
//! resolved ID (replay records the iid again, evicting exactly as it did live); the
//! stream's first IDMP use is followed by `STREAMD.IDMP` with the settings it got (so
//! replay does not depend on the defaults then); a duplicate is logged as `STREAMD.IDMP` alone, so replay restores the
//! `iids-duplicates` counter and cannot append anything. XCFGSET and XIDMPRECORD are
//! logged verbatim when they changed something. Expiry is not logged: it follows entry
//! ID time, so the expiry pass after loading drops what the live server had dropped.
//!
//! **In snapshots**, [`write_idmp`] adds, after a stream's entries and groups, one
//! `STREAMD.IDMP` and the `STREAMD.IID` of every tracked iid. `STREAMD.IID` does not
//! require the entry to exist (an iid outlives a deleted or trimmed entry), which the
//! client command `XIDMPRECORD` does.

use super::args::{parse_id, parse_u64};
use super::record::RecordSink;
use crate::commands::effects::idmp_state_record;
use crate::core::Core;
use crate::resp::Argv;
use crate::stream::Stream;
use std::io;

/// Writes `key`'s IDMP state, if any, as snapshot records (module doc).
pub fn write_idmp(w: &mut impl RecordSink, key: &[u8], s: &Stream) -> io::Result<()> {
    let Some(record) = idmp_state_record(key, s) else {
        return Ok(());
    };
    w.record(&record)?;
    let state = s.idmp().expect("state_record found it");
    for (pid, iids) in state.producers() {
        for (iid, id) in iids {
            w.record(&[&b"STREAMD.IID"[..], key, pid, iid, &id.to_text()])?;
        }
    }
    Ok(())
}

/// Applies `STREAMD.IDMP` or `STREAMD.IID` to database `db`; `Ok(false)` when `argv` is
/// neither.
pub fn apply_internal(core: &mut Core, db: usize, argv: &Argv) -> Result<bool, String> {
    let name = argv[0].to_ascii_uppercase();
    let arity = match &name[..] {
        b"STREAMD.IDMP" => 6,
        b"STREAMD.IID" => 5,
        _ => return Ok(false),
    };
    if argv.len() != arity {
        return Err("wrong number of arguments".into());
    }
    let defaults = core.idmp_defaults;
    let d = &mut core.dbs[db];
    let stream = d
        .get_stream_mut(&argv[1])
        .ok_or_else(|| "no such stream".to_string())?;
    if name == b"STREAMD.IDMP" {
        let nums = argv[2..]
            .iter()
            .map(|a| parse_u64(a))
            .collect::<Result<Vec<u64>, String>>()?;
        let in_range = |n: u64, lo: i64, hi: i64| {
            u32::try_from(n)
                .ok()
                .filter(|&v| i64::from(v) >= lo && i64::from(v) <= hi)
                .ok_or_else(|| format!("IDMP setting {n} out of range"))
        };
        use crate::stream::idmp::{DURATION_MAX, DURATION_MIN, MAXSIZE_MAX, MAXSIZE_MIN};
        let duration = in_range(nums[0], DURATION_MIN, DURATION_MAX)?;
        let maxsize = in_range(nums[1], MAXSIZE_MIN, MAXSIZE_MAX)?;
        let state = stream.idmp_mut(defaults);
        state.restore_settings(duration, maxsize);
        state.set_counters(nums[2], nums[3]);
        return Ok(true);
    }
    let id = parse_id(&argv[4])?;
    if argv[2].is_empty() || argv[3].is_empty() {
        return Err("empty producer or idempotent ID".into());
    }
    if stream
        .idmp_mut(defaults)
        .record(&argv[2], &argv[3], id, false)
    {
        d.note_idmp(&argv[1]);
    }
    Ok(true)
}
