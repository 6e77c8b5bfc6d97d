//! Loading: reading framed records from snapshots and logs, and replaying them into the
//! core through the normal command path.
//!
//! [`FrameReader`] walks a byte range of one file in 1 MiB reads and classifies what it
//! finds at each offset (record.rs): a record, the end, a *torn tail* (the bytes end
//! inside the last frame, or the last frame's CRC fails: a crash mid-write), or
//! *corruption* (anything else). Whether a torn tail may be cut is the caller's call:
//! only for the newest log file, never for a snapshot.
//!
//! A frame that claims to run past the end of the file is a torn tail only if no valid
//! record starts anywhere after it; otherwise its length field is damaged and records
//! after it would be lost, so it is corruption. A run of zero bytes up to the end (a
//! file extended but never written, as some filesystems leave after a power loss) is a
//! torn tail too.
//!
//! [`Replayer`] executes records against a [`Core`] with a loader client: `SELECT`
//! switches its database, `MULTI` ... `EXEC` is buffered and applied whole (a
//! transaction without its `EXEC` at the end of the newest log is dropped whole), the
//! `STREAMD.NODES` snapshot records go to `snapshot.rs`, the other `STREAMD.*` records
//! to `groups.rs` and `idmp.rs`, everything else through [`Core::call`] exactly as a
//! client command.

use super::PersistError;
use super::record::{self, Frame, HEADER_LEN};
use crate::commands;
use crate::core::client::Client;
use crate::core::{Core, unix_ms};
use crate::resp::Argv;
use crate::resp::writer::{Protocol, RespWriter};
use crate::types::Value;
use bytes::{Buf, Bytes, BytesMut};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Read size.
const CHUNK: usize = 1 << 20;
/// The most trailing bytes examined to tell a torn tail from a damaged length field.
const MAX_TORN_SCAN: u64 = 64 << 20;

/// What [`FrameReader::next`] found.
#[derive(Debug)]
pub enum Next {
    /// A record at `offset`.
    Record {
        /// The command.
        argv: Argv,
        /// File offset of its frame.
        offset: u64,
        /// Frame size.
        size: u64,
    },
    /// The end of the range, on a frame boundary.
    End,
    /// The range ends inside the frame at `offset` (or its last frame is damaged).
    Torn {
        /// Where the torn frame starts: the file is good up to here.
        offset: u64,
        /// What was wrong.
        why: String,
    },
    /// A damaged frame at `offset` with data after it.
    Corrupt {
        /// Where the bad frame starts.
        offset: u64,
        /// What was wrong.
        why: String,
    },
}

/// Reads frames from `[start, end)` of a file.
pub struct FrameReader {
    file: File,
    path: PathBuf,
    /// File offset of `buf[0]`.
    pos: u64,
    /// File offset where `file`'s read position is.
    read_to: u64,
    /// End of the range.
    end: u64,
    /// Bytes from `pos` on.
    buf: BytesMut,
    /// Check each record's CRC (off for a snapshot whose file CRC was verified).
    check_crc: bool,
}

impl FrameReader {
    /// Opens `path` for reading `[start, end)`; `end` = `None` reads to the end of file.
    pub fn open(path: &Path, start: u64, end: Option<u64>) -> Result<FrameReader, PersistError> {
        let mut file = File::open(path).map_err(|e| PersistError::io("opening", path, e))?;
        let len = file
            .metadata()
            .map_err(|e| PersistError::io("reading", path, e))?
            .len();
        file.seek(SeekFrom::Start(start))
            .map_err(|e| PersistError::io("reading", path, e))?;
        Ok(FrameReader {
            file,
            path: path.to_path_buf(),
            pos: start,
            read_to: start,
            end: end.unwrap_or(len).min(len),
            buf: BytesMut::new(),
            check_crc: true,
        })
    }

    /// Skips the per-record CRC: the caller verified a CRC over the whole range.
    pub fn trust_file_crc(&mut self) {
        self.check_crc = false;
    }

    /// Bytes of the range consumed so far (for progress).
    pub fn offset(&self) -> u64 {
        self.pos
    }

    /// End of the range.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Reads up to `want` more bytes (at least one chunk); false at the end of range.
    fn fill(&mut self, want: usize) -> Result<bool, PersistError> {
        let left = self.end - self.read_to;
        if left == 0 {
            return Ok(false);
        }
        let n = (want.max(CHUNK) as u64).min(left) as usize;
        let old = self.buf.len();
        self.buf.resize(old + n, 0);
        self.file
            .read_exact(&mut self.buf[old..])
            .map_err(|e| PersistError::io("reading", &self.path, e))?;
        self.read_to += n as u64;
        Ok(true)
    }

    /// The next frame.
    pub fn next_frame(&mut self) -> Result<Next, PersistError> {
        loop {
            if self.buf.is_empty() && self.read_to >= self.end {
                return Ok(Next::End);
            }
            let offset = self.pos;
            match record::decode_with(&self.buf, self.check_crc) {
                Frame::Record { payload_len, size } => {
                    let payload =
                        Bytes::copy_from_slice(&self.buf[HEADER_LEN..HEADER_LEN + payload_len]);
                    match record::parse_payload(&payload) {
                        Ok(argv) => {
                            self.buf.advance(size);
                            self.pos += size as u64;
                            return Ok(Next::Record {
                                argv,
                                offset,
                                size: size as u64,
                            });
                        }
                        Err(why) => return self.damaged(offset, why.to_string()),
                    }
                }
                Frame::Incomplete { needed } => {
                    let want = needed.unwrap_or(HEADER_LEN).saturating_sub(self.buf.len());
                    if self.fill(want)? {
                        continue;
                    }
                    let why = match needed {
                        Some(n) => format!(
                            "the record announces {n} bytes but only {} remain",
                            self.end - offset
                        ),
                        None => {
                            format!("only {} bytes of a record header remain", self.end - offset)
                        }
                    };
                    return self.damaged(offset, why);
                }
                Frame::Corrupt(why) => return self.damaged(offset, why.to_string()),
            }
        }
    }

    /// A bad frame at `offset` (the start of `buf`): a torn tail if nothing valid follows
    /// it — only zeros, or no complete record starting anywhere after it — else
    /// corruption (a damaged length or payload with good records behind it).
    fn damaged(&mut self, offset: u64, why: String) -> Result<Next, PersistError> {
        if self.end - offset > MAX_TORN_SCAN {
            return Ok(Next::Corrupt {
                offset,
                why: format!("{why}, with more than {MAX_TORN_SCAN} bytes after it"),
            });
        }
        while self.fill(CHUNK)? {}
        let b = &self.buf[..];
        if b.iter().all(|&c| c == 0) {
            return Ok(Next::Torn {
                offset,
                why: format!("{why} ({} zero bytes to the end)", b.len()),
            });
        }
        for p in 1..b
            .len()
            .saturating_sub(HEADER_LEN + record::MIN_PAYLOAD_LEN - 1)
        {
            // A payload starts with '*': a cheap filter before the CRC.
            if b[p + HEADER_LEN] != b'*' {
                continue;
            }
            if let Frame::Record { payload_len, .. } = record::decode(&b[p..]) {
                let payload =
                    Bytes::copy_from_slice(&b[p + HEADER_LEN..p + HEADER_LEN + payload_len]);
                if record::parse_payload(&payload).is_ok() {
                    return Ok(Next::Corrupt {
                        offset,
                        why: format!(
                            "{why}, and a valid record follows at offset {}",
                            offset + p as u64
                        ),
                    });
                }
            }
        }
        Ok(Next::Torn { offset, why })
    }
}

/// Replays records into a [`Core`].
pub struct Replayer {
    /// The loader's client (its `db` is the log's current database).
    client: Client,
    /// Reply sink (checked for errors, then cleared).
    out: RespWriter,
    /// The open transaction: its records and the offset of its MULTI.
    multi: Option<(Vec<(Argv, u64)>, u64)>,
    /// Records applied.
    pub records: u64,
    /// Records whose command answered an error (logged; the load goes on).
    pub failed: u64,
}

/// True for the loader-only `STREAMD.*` records (state that no client command sets).
pub fn is_internal(name: &[u8]) -> bool {
    name.len() > 8 && name[..8].eq_ignore_ascii_case(b"STREAMD.")
}

/// Applies one `STREAMD.*` record on database `db`: stream nodes, IDMP state, group and
/// consumer state (the log at start-up, snapshots, and a streamd primary's stream).
pub fn apply_internal(core: &mut Core, db: usize, argv: &Argv) -> Result<(), String> {
    let name = &argv[0];
    if name.eq_ignore_ascii_case(super::snapshot::NODES_RECORD) {
        return super::snapshot::apply_nodes(core, db, argv);
    }
    if name.eq_ignore_ascii_case(super::snapshot::COLD_RECORD) {
        return super::snapshot::apply_cold(core, db, argv);
    }
    if name.eq_ignore_ascii_case(crate::core::tier::TIER_RECORD) {
        return core.tier_replay(db, argv);
    }
    if name.eq_ignore_ascii_case(crate::core::tier::RELOC_RECORD) {
        return core.tier_replay_reloc(db, argv);
    }
    if super::idmp::apply_internal(core, db, argv)? {
        return Ok(());
    }
    super::groups::apply_internal(core, db, argv)
}

impl Default for Replayer {
    fn default() -> Self {
        Self::new()
    }
}

impl Replayer {
    /// A replayer on database 0.
    pub fn new() -> Replayer {
        let (tx, _rx) = crate::core::mailbox::mailbox();
        Replayer {
            client: Client::new(0, "loader".into(), String::new(), true, unix_ms(), tx),
            out: RespWriter::new(Protocol::Resp2),
            multi: None,
            records: 0,
            failed: 0,
        }
    }

    /// Starts a new file: database 0, no transaction.
    pub fn start_file(&mut self) {
        self.client.db = 0;
        self.multi = None;
    }

    /// If the file ended inside a transaction: its MULTI's offset (the transaction is
    /// dropped).
    pub fn open_transaction(&mut self) -> Option<u64> {
        self.multi.take().map(|(_, offset)| offset)
    }

    /// Applies one record read at `offset` of `path`.
    pub fn apply(
        &mut self,
        core: &mut Core,
        argv: Argv,
        path: &Path,
        offset: u64,
    ) -> Result<(), PersistError> {
        let name = &argv[0];
        if name.eq_ignore_ascii_case(b"MULTI") {
            if self.multi.is_some() {
                return Err(PersistError::corrupt(
                    path,
                    offset,
                    "MULTI inside a transaction",
                ));
            }
            self.multi = Some((Vec::new(), offset));
            return Ok(());
        }
        if name.eq_ignore_ascii_case(b"EXEC") {
            let Some((queued, _)) = self.multi.take() else {
                return Err(PersistError::corrupt(path, offset, "EXEC without MULTI"));
            };
            for (argv, off) in queued {
                self.run(core, argv, path, off)?;
            }
            return Ok(());
        }
        if let Some((queue, _)) = self.multi.as_mut() {
            queue.push((argv, offset));
            return Ok(());
        }
        self.run(core, argv, path, offset)
    }

    fn run(
        &mut self,
        core: &mut Core,
        argv: Argv,
        path: &Path,
        offset: u64,
    ) -> Result<(), PersistError> {
        self.records += 1;
        let name = &argv[0];
        if name.eq_ignore_ascii_case(b"SELECT") {
            let db = argv
                .get(1)
                .and_then(|a| std::str::from_utf8(a).ok())
                .and_then(|s| s.parse::<usize>().ok())
                .ok_or_else(|| PersistError::corrupt(path, offset, "SELECT without a database"))?;
            if db >= core.dbs.len() {
                return Err(PersistError::Replay {
                    path: path.to_path_buf(),
                    offset,
                    why: format!(
                        "SELECT {db}, but `databases` is {}: start with a larger `databases`",
                        core.dbs.len()
                    ),
                });
            }
            self.client.db = db;
            return Ok(());
        }
        if is_internal(name) {
            let db = self.client.db;
            let applied = apply_internal(core, db, &argv);
            return applied.map_err(|why| PersistError::Replay {
                path: path.to_path_buf(),
                offset,
                why: format!("{why}: {}", record::display_argv(&argv)),
            });
        }
        if name.eq_ignore_ascii_case(b"XADD") && self.fast_xadd(core, &argv) {
            return Ok(());
        }
        let spec = commands::lookup(name)
            .and_then(|s| commands::resolve_subcommand(s, &argv).ok())
            .filter(|s| s.arity_ok(argv.len()))
            .ok_or_else(|| PersistError::Replay {
                path: path.to_path_buf(),
                offset,
                why: format!(
                    "unknown command or wrong arity: {}",
                    record::display_argv(&argv)
                ),
            })?;
        self.out.buf.clear();
        core.call(&mut self.client, spec, &argv, &mut self.out, unix_ms());
        if self.out.buf.first() == Some(&b'-') {
            self.failed += 1;
            if self.failed <= 10 {
                tracing::warn!(
                    file = %path.display(),
                    offset,
                    command = %record::display_argv(&argv),
                    reply = %String::from_utf8_lossy(&self.out.buf).trim_end(),
                    "a logged command failed on replay"
                );
            }
        }
        self.out.buf.clear();
        Ok(())
    }
}

impl Replayer {
    /// The snapshot's and the log's plainest record, `XADD key <id> field value ...`
    /// with an explicit ID above the stream's last one, appended directly: the same
    /// effect as the command (during a load nothing watches, blocks or expires), without
    /// the command table, the reply or the statistics. Anything else (options, a
    /// missing or lower ID) returns false and goes through the command.
    fn fast_xadd(&mut self, core: &mut Core, argv: &Argv) -> bool {
        if argv.len() < 5 || argv.len().is_multiple_of(2) {
            return false;
        }
        let Ok(id) = crate::stream::id::parse_strict_id(&argv[2]) else {
            return false;
        };
        let limits = core.node_limits;
        let db = &mut core.dbs[self.client.db];
        match db.get_mut(&argv[1]) {
            Some(Value::Stream(stream)) if id > stream.last_id() => {
                stream.append(id, &argv[3..], &limits)
            }
            Some(_) => return false,
            None if id.is_zero() => return false,
            // A new key gets its own copy of the name (not a slice of the record buffer).
            None => match db.stream_or_create(&Bytes::copy_from_slice(&argv[1])) {
                Ok(stream) => stream.append(id, &argv[3..], &limits),
                Err(_) => return false,
            },
        }
        core.dirty += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_of(cmds: &[&[&str]]) -> Vec<u8> {
        let mut b = Vec::new();
        for c in cmds {
            record::encode(&mut b, c);
        }
        b
    }

    fn read_all(bytes: &[u8]) -> (Vec<String>, Next) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.log");
        std::fs::write(&p, bytes).unwrap();
        let mut r = FrameReader::open(&p, 0, None).unwrap();
        let mut got = Vec::new();
        loop {
            match r.next_frame().unwrap() {
                Next::Record { argv, .. } => got.push(record::display_argv(&argv)),
                other => return (got, other),
            }
        }
    }

    /// The fake disk keeps written and durable bytes apart; a power loss keeps the
    /// durable image plus any prefix of what was written after it. Whatever the image,
    /// loading yields a prefix of the records written, at least every acknowledged one,
    /// and at most one torn frame at its end.
    #[test]
    fn every_crash_image_holds_the_acknowledged_records() {
        use crate::persist::log::{FsyncPolicy, LogWriter};
        use crate::persist::sink::CrashSink;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("crash.log");
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for _ in 0..60 {
            let sink = CrashSink::default();
            let mut w = LogWriter::new(Box::new(sink.clone()), 0, FsyncPolicy::Always).unwrap();
            let mut expected = Vec::new();
            let mut acked = 0;
            for i in 0..(20 + next() % 80) {
                let value = "v".repeat((next() % 300) as usize);
                let id = format!("{i}-1");
                w.append(&["XADD", "s", &id, "f", &value]);
                expected.push(format!("XADD s {id} f {}", &value[..value.len().min(64)]));
                if next() % 3 == 0 {
                    w.flush().unwrap();
                    if next() % 2 == 0 {
                        w.durability().wait_durable_blocking(w.appended()).unwrap();
                        acked = w.appended() as usize;
                    }
                }
            }
            w.flush().unwrap();
            let unsynced = {
                let d = sink.disk.lock().unwrap();
                d.written.len() - d.durable.len()
            };
            let image = sink.crash_image((next() % (unsynced as u64 + 1)) as usize);
            drop(w);
            let (got, end) = {
                std::fs::write(&path, &image).unwrap();
                let mut r = FrameReader::open(&path, 0, None).unwrap();
                let mut got = Vec::new();
                let mut good = 0;
                let end = loop {
                    match r.next_frame().unwrap() {
                        Next::Record { argv, size, .. } => {
                            got.push(record::display_argv(&argv));
                            good += size;
                        }
                        other => break (other, good),
                    }
                };
                (got, end)
            };
            assert!(
                got.len() >= acked,
                "{} records read, {acked} acknowledged",
                got.len()
            );
            assert_eq!(
                got[..],
                expected[..got.len()],
                "not a prefix of what was written"
            );
            match end {
                (Next::End, good) => assert_eq!(good, image.len() as u64),
                (Next::Torn { offset, .. }, good) => assert_eq!(offset, good),
                (other, _) => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn torn_tail_at_every_offset_of_the_last_record() {
        let full = log_of(&[
            &["XADD", "s", "1-1", "f", "v"],
            &["XADD", "s", "2-1", "f", "v"],
        ]);
        let first = log_of(&[&["XADD", "s", "1-1", "f", "v"]]).len();
        for cut in first + 1..full.len() {
            let (got, end) = read_all(&full[..cut]);
            assert_eq!(got, vec!["XADD s 1-1 f v"], "cut {cut}");
            assert!(
                matches!(end, Next::Torn { offset, .. } if offset == first as u64),
                "cut {cut}: {end:?}"
            );
        }
        let (got, end) = read_all(&full);
        assert_eq!(got.len(), 2);
        assert!(matches!(end, Next::End));
    }

    #[test]
    fn a_damaged_record_in_the_middle_is_corruption() {
        let full = log_of(&[&["DEL", "a"], &["DEL", "b"], &["DEL", "c"]]);
        let one = log_of(&[&["DEL", "a"]]).len();
        // Every bit of the middle record.
        for byte in one..2 * one {
            for bit in 0..8 {
                let mut b = full.clone();
                b[byte] ^= 1 << bit;
                let (got, end) = read_all(&b);
                assert_eq!(got, vec!["DEL a"], "flip {byte}.{bit}");
                assert!(
                    matches!(end, Next::Corrupt { offset, .. } if offset == one as u64),
                    "flip {byte}.{bit}: {end:?}"
                );
            }
        }
    }

    #[test]
    fn a_damaged_last_record_is_a_torn_tail_and_zeros_too() {
        let full = log_of(&[&["DEL", "a"], &["DEL", "b"]]);
        let one = log_of(&[&["DEL", "a"]]).len();
        let mut b = full.clone();
        let n = b.len();
        b[n - 3] ^= 0xff;
        assert!(matches!(read_all(&b).1, Next::Torn { offset, .. } if offset == one as u64));
        let mut z = full[..one].to_vec();
        z.extend_from_slice(&[0u8; 4096]);
        assert!(matches!(read_all(&z).1, Next::Torn { offset, .. } if offset == one as u64));
    }
}
