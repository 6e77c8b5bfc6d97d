//! Consumer-group state in snapshots: the `STREAMD.*` records (written by
//! [`write_groups`], applied by [`apply_internal`]). See snapshot.rs for the forms.

use super::snapshot::SnapshotWriter;
use crate::core::Core;
use crate::resp::Argv;
use crate::stream::Stream;
use std::io::{self, Write};

/// Writes the groups of stream `key`.
pub fn write_groups<W: Write>(
    _w: &mut SnapshotWriter<W>,
    _key: &[u8],
    _s: &Stream,
) -> io::Result<()> {
    Ok(())
}

/// Applies one `STREAMD.*` record to database `db`.
pub fn apply_internal(_core: &mut Core, _db: usize, argv: &Argv) -> Result<(), String> {
    Err(format!(
        "unknown snapshot record {}",
        String::from_utf8_lossy(&argv[0])
    ))
}
