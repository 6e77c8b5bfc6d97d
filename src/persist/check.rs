//! `streamd --check-aof FILE [--fix]`: inspects a log file (or a snapshot, or every file a
//! manifest names) without starting a server. Without `--fix` it only reports; with it, a
//! log is truncated to its last good record (no prompt) and the report says how many
//! bytes were cut.

use super::load::{FrameReader, Next};
use super::manifest::{Manifest, Names};
use super::{PersistError, snapshot};
use crate::commands;
use std::fs::{self, OpenOptions};
use std::io::Read;
use std::path::Path;

/// What the check found.
#[derive(Debug, Default)]
pub struct Report {
    /// Human-readable lines.
    pub lines: Vec<String>,
    /// A problem was found (and not fixed).
    pub damaged: bool,
    /// A file was truncated.
    pub fixed: bool,
}

/// Checks `path`: a manifest (every file it names), a snapshot (by its magic), or a log.
pub fn check(path: &Path, fix: bool) -> Result<Report, PersistError> {
    let mut report = Report::default();
    if path.extension().is_some_and(|e| e == "manifest") {
        let m = Manifest::load(path)?.ok_or_else(|| PersistError::Missing {
            path: path.to_path_buf(),
        })?;
        let names = Names {
            dir: path.parent().unwrap_or(Path::new(".")).to_path_buf(),
            stem: String::new(),
        };
        report.lines.push(format!(
            "{}: manifest with {} file(s)",
            path.display(),
            m.base.iter().count() + m.incrs.len()
        ));
        if let Some(b) = &m.base {
            check_snapshot(&names.path(&b.name), &mut report);
        }
        for f in &m.incrs {
            check_log(&names.path(&f.name), fix, &mut report)?;
        }
        return Ok(report);
    }
    let mut magic = [0u8; 8];
    let is_snapshot = fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && &magic == snapshot::MAGIC;
    if is_snapshot {
        check_snapshot(path, &mut report);
        if fix && report.damaged {
            report
                .lines
                .push("a damaged snapshot cannot be repaired; restore it from a backup".into());
        }
    } else {
        check_log(path, fix, &mut report)?;
    }
    Ok(report)
}

/// SELECT and the snapshot's `STREAMD.*` records, which the loader handles itself.
fn is_loader_only(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b"SELECT")
        || (name.len() > 8 && name[..8].eq_ignore_ascii_case(b"STREAMD."))
}

fn check_snapshot(path: &Path, report: &mut Report) {
    match snapshot::verify(path) {
        Ok((start, end)) => report.lines.push(format!(
            "{}: snapshot OK ({} bytes of records, CRC-64 matches)",
            path.display(),
            end - start
        )),
        Err(e) => {
            report.damaged = true;
            report.lines.push(format!("{}: {e}", path.display()));
        }
    }
}

fn check_log(path: &Path, fix: bool, report: &mut Report) -> Result<(), PersistError> {
    let mut r = FrameReader::open(path, 0, None)?;
    let len = r.end();
    let mut records = 0u64;
    let mut multi: Option<u64> = None;
    let mut records_before_multi = 0u64;
    let problem = loop {
        match r.next_frame()? {
            Next::Record { argv, offset, .. } => {
                let name = &argv[0];
                // The loader refuses these two (load.rs): they are damage here too.
                let nested = multi.is_some() && name.eq_ignore_ascii_case(b"MULTI");
                let stray = multi.is_none() && name.eq_ignore_ascii_case(b"EXEC");
                if nested || stray {
                    let why = if nested {
                        "MULTI inside a transaction"
                    } else {
                        "EXEC without MULTI"
                    };
                    break Some((offset, why.to_string(), false));
                }
                if name.eq_ignore_ascii_case(b"MULTI") {
                    multi = Some(offset);
                    records_before_multi = records;
                } else if name.eq_ignore_ascii_case(b"EXEC") {
                    multi = None;
                } else if !is_loader_only(name) && commands::lookup(name).is_none() {
                    break Some((
                        offset,
                        format!("unknown command {:?}", String::from_utf8_lossy(name)),
                        false,
                    ));
                }
                records += 1;
            }
            Next::End => {
                break multi.map(|m| (m, "a transaction without its EXEC at the end".into(), true));
            }
            Next::Torn { offset, why } => {
                break Some((
                    multi.unwrap_or(offset).min(offset),
                    format!("torn last record: {why}"),
                    true,
                ));
            }
            Next::Corrupt { offset, why } => break Some((offset, why, false)),
        }
    };
    let Some((offset, why, torn)) = problem else {
        report.lines.push(format!(
            "{}: OK, {records} records, {len} bytes",
            path.display()
        ));
        return Ok(());
    };
    // Inside a transaction the cut goes back to its MULTI: a transaction is applied whole
    // or not at all, and a MULTI left at the end would itself be a torn tail.
    let offset = multi.map_or(offset, |m| m.min(offset));
    if multi == Some(offset) {
        records = records_before_multi;
    }
    let cut = len - offset;
    report.lines.push(format!(
        "{}: {} at offset {offset} ({records} good records before it; {cut} bytes from there to the end)",
        path.display(),
        if torn { "torn tail" } else { "bad record" },
    ));
    report.lines.push(format!("  {why}"));
    if multi.is_some_and(|m| m == offset) && !why.contains("EXEC") {
        report.lines.push(format!(
            "  (in the transaction whose MULTI is at offset {offset}: the whole transaction goes)"
        ));
    }
    if fix {
        let f = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| PersistError::io("opening", path, e))?;
        f.set_len(offset)
            .and_then(|()| f.sync_all())
            .map_err(|e| PersistError::io("truncating", path, e))?;
        report.fixed = true;
        report.lines.push(format!(
            "  fixed: truncated {} to {offset} bytes, cutting {cut} bytes",
            path.display()
        ));
    } else {
        report.damaged = true;
        report.lines.push(format!(
            "  run `streamd --check-aof {} --fix` to truncate it to offset {offset} (cuts {cut} bytes)",
            path.display()
        ));
    }
    Ok(())
}
