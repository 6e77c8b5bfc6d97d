//! Snapshots: the whole dataset in one file (`dump.snap`, and the log's base files).
//!
//! ```text
//! offset 0   "STRMSNAP"                      magic, 8 bytes
//!        8   version         u32 LE          SNAPSHOT_VERSION (3; versions 1 and 2 are still read)
//!       12   flags           u32 LE          0 (reserved)
//!       16   created         u64 LE          unix ms when the dataset was taken
//!       24   records ...                     framed records (record.rs), below
//!   N - 12   0xFFFFFFFF      u32 LE          end marker (where a length would be)
//!   N - 8    CRC-64/XZ       u64 LE          of bytes 0 .. N-8 (header, records, marker)
//! ```
//!
//! Records use the log's framing (`u32 length | u64 CRC-64 | RESP array`), database by
//! database, key by key:
//!
//! ```text
//! SELECT <db>                                          before each non-empty database
//! STREAMD.COLD <key> <stub> [<stub> ...]              cold nodes (tiering) as stubs naming
//!                                                      their segment records, oldest first
//!                                                      (`write_cold` draws a stub)
//! STREAMD.NODES <key> <master> <node> [<master> <node> ...]
//!                                                      the stream's nodes, oldest first,
//!                                                      ~1 MiB of nodes per record
//! XADD <key> MAXLEN 0 0-1 x y                          instead, for a stream with no entries
//! XSETID <key> <last_id> ENTRIESADDED <n> MAXDELETEDID <id>
//! XCFGSET <key> MAXAGE <ms> MAXBYTES <bytes> RETENTION-REFS <policy>
//!                                                      streams with retention settings
//! STREAMD.GROUP <key> <group> <last_id> <entries_read|-1>
//! XGROUP SETDLQ <key> <group> <dlq-key> MAXDELIVERIES <n>
//!                                                      groups with a dead-letter stream
//! STREAMD.NACK <key> <group> <id> <delivery_count>     unowned entries, NACK-zone order
//! STREAMD.PENDING <key> <group> <consumer> <id> <delivery_time> <delivery_count>
//!                                                      owned entries, oldest delivery first
//! STREAMD.CONSUMER <key> <group> <consumer> <seen_time> <active_time|-1>
//! STREAMD.IDMP <key> <duration> <maxsize> <iids-added> <iids-duplicates>
//!                                                      streams with IDMP state (idmp.rs)
//! STREAMD.IID <key> <pid> <iid> <entry-id>             each tracked iid, per producer in
//!                                                      insertion order
//! SET <key> <bytes>                                   a string
//! RPUSH <key> <element> ...                            a list, head first, ~1 MiB a record
//! HSET <key> <field> <value> ...                       a hash, ~1 MiB of pairs a record
//! SADD <key> <member> ...                              a set, ~1 MiB a record
//! ZADD <key> <score> <member> ...                      a sorted set, ascending; each score
//!                                                      the shortest text of its double
//! PEXPIREAT <key> <unix ms>                            keys with a TTL
//! HPEXPIREAT <key> <unix ms> FIELDS <n> <field> ...    hash field TTLs, one record per
//!                                                      deadline shared by its fields
//! ```
//!
//! **Nodes as they are.** In `STREAMD.NODES`, `<master>` is a node's master ID as the 16
//! bytes of its index key (`ms` then `seq`, big-endian: `StreamId::to_key`) and `<node>`
//! the node's bytes exactly as listpack.rs draws them (header with live/deleted counters
//! and Redis size, the `gone` count of a node reclamation rewrote, master entry,
//! entries with the tombstones still in the node). Loading inserts each
//! node into the stream's index as it is ([`Stream::push_node`]): no entry is decoded or
//! re-appended, so a snapshot loads in one pass over its bytes and keeps the node layout
//! (`XINFO STREAM`'s `radix-tree-keys`/`-nodes` are the same after a restart). Because
//! the file's CRC only proves the bytes are what was written, every node is checked byte
//! by byte first ([`crate::stream::listpack::Listpack::from_bytes`]: varints and strings
//! inside the node, IDs increasing from the master ID, back-lens exact, counters and
//! Redis size matching the entries), and must start above the stream's last ID; a node
//! that fails stops the load with an error naming the record and the node. The node
//! encoding is therefore part of this format: changing listpack.rs's layout means a new
//! `SNAPSHOT_VERSION`.
//!
//! The stream's metadata follows its nodes as the client form `XSETID` (replayed through
//! the command path). The `STREAMD.*` group records are understood by the loader only (no
//! client can send them): they restore group state exactly — delivery times and counts,
//! consumer seen/active times, pending entries whose stream entry was deleted, and the
//! NACK zone order — which the client-visible forms (XCLAIM ... FORCE drops a pending
//! entry whose entry is gone; CREATECONSUMER resets times) cannot. Pending entries are
//! written in delivery-time order so each reloads in O(1). More per-stream records (for
//! other state) go after `XSETID`, before the groups.
//!
//! **Version 1** (before nodes were copied) wrote one `XADD <key> <id> <field> <value> ...`
//! record per live entry instead of `STREAMD.NODES`; its files still load, their entries
//! re-appended into fresh nodes.
//!
//! Writing goes to `<file>.tmp`, is fsynced, renamed over `<file>`, and the directory is
//! fsynced, so a crash leaves the old snapshot or the new one, never a mix. Loading
//! checks the magic, the version and the CRC over the whole file before replaying
//! anything.

use super::PersistError;
use super::manifest::{sync_dir, tmp_path};
use super::record;
use crate::commands::effects::retention_record;
use crate::core::Core;
use crate::core::keyspace::Db;
use crate::stream::cold::{ColdStub, NodeLocation};
use crate::stream::lifecycle::Retention;
use crate::stream::{Stream, StreamId};
use crate::types::Value;
use bytes::Bytes;
use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// The magic bytes at offset 0.
pub const MAGIC: &[u8; 8] = b"STRMSNAP";
/// The format version this build writes: 3 adds reclaimed nodes (listpack.rs: the
/// RECLAIMED header bit and `gone` count) and the retention and dead-letter records
/// (`XCFGSET ... MAXAGE`, `XGROUP SETDLQ`); 2 stored stream nodes as they are
/// (`STREAMD.NODES`); 1 wrote every entry as an `XADD` record. All three are read.
pub const SNAPSHOT_VERSION: u32 = 3;
/// The oldest format version this build reads.
pub const MIN_SNAPSHOT_VERSION: u32 = 1;
/// Header bytes before the first record.
pub const HEADER_LEN: u64 = 24;
/// The end marker, in place of a record length.
pub const END_MARKER: u32 = u32::MAX;
/// End marker plus CRC.
pub const TRAILER_LEN: u64 = 12;

/// Writes framed records behind a snapshot header, keeping the running CRC.
pub struct SnapshotWriter<W: Write> {
    out: W,
    digest: crc64fast::Digest,
    buf: Vec<u8>,
    bytes: u64,
    records: u64,
    /// Write cold stream nodes as `STREAMD.NODES` (read back through the loader) rather
    /// than as `STREAMD.COLD` stubs: a full sync's payload, for a replica that has no
    /// access to this server's segments.
    materialize_cold: bool,
}

impl<W: Write> SnapshotWriter<W> {
    /// Cold nodes are written as their bytes, not as stubs (see the field).
    pub fn materialize_cold(&mut self) {
        self.materialize_cold = true;
    }

    /// Writes the header.
    pub fn new(out: W, created_ms: u64) -> io::Result<SnapshotWriter<W>> {
        let mut w = SnapshotWriter {
            out,
            digest: crc64fast::Digest::new(),
            buf: Vec::with_capacity(64 * 1024),
            bytes: 0,
            records: 0,
            materialize_cold: false,
        };
        let mut header = Vec::with_capacity(HEADER_LEN as usize);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&SNAPSHOT_VERSION.to_le_bytes());
        header.extend_from_slice(&0u32.to_le_bytes());
        header.extend_from_slice(&created_ms.to_le_bytes());
        w.put(&header)?;
        Ok(w)
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.digest.write(bytes);
        self.bytes += bytes.len() as u64;
        self.out.write_all(bytes)
    }

    /// Appends one record.
    pub fn record<A: AsRef<[u8]>>(&mut self, argv: &[A]) -> io::Result<()> {
        record::encode(&mut self.buf, argv);
        self.records += 1;
        if self.buf.len() >= 64 * 1024 {
            self.flush_buf()?;
        }
        Ok(())
    }

    fn flush_buf(&mut self) -> io::Result<()> {
        let buf = std::mem::take(&mut self.buf);
        let r = self.put(&buf);
        self.buf = buf;
        self.buf.clear();
        r
    }

    /// Writes the end marker and the CRC; returns the sink, the file size and the number
    /// of records.
    pub fn finish(mut self) -> io::Result<(W, u64, u64)> {
        self.flush_buf()?;
        self.put(&END_MARKER.to_le_bytes())?;
        let crc = self.digest.sum64();
        self.out.write_all(&crc.to_le_bytes())?;
        self.bytes += 8;
        Ok((self.out, self.bytes, self.records))
    }
}

impl<W: Write> record::RecordSink for SnapshotWriter<W> {
    fn record<A: AsRef<[u8]>>(&mut self, argv: &[A]) -> io::Result<()> {
        SnapshotWriter::record(self, argv)
    }
}

/// Writes every database's keys as records (the module doc lists the forms).
pub fn write_dataset<W: Write>(
    w: &mut SnapshotWriter<W>,
    dbs: &[Db],
    functions: &[bytes::Bytes],
) -> io::Result<()> {
    // Function libraries first (they are data, as in an RDB), as FUNCTION LOAD records.
    for code in functions {
        w.record(&[b"FUNCTION".as_slice(), b"LOAD", b"REPLACE", code])?;
    }
    for (i, db) in dbs.iter().enumerate() {
        if db.is_empty() {
            continue;
        }
        w.record(&[
            b"SELECT".as_slice(),
            itoa::Buffer::new().format(i).as_bytes(),
        ])?;
        for (key, value) in &db.keys {
            match value {
                Value::Stream(stream) => write_stream(w, key, stream)?,
                other => write_value(w, key, other)?,
            }
            if let Some(at) = db.expires.get(key) {
                w.record(&[
                    b"PEXPIREAT".as_slice(),
                    key,
                    itoa::Buffer::new().format(*at).as_bytes(),
                ])?;
            }
            if let Some(ttls) = db.hexpires.of(key) {
                write_field_ttls(w, key, ttls)?;
            }
        }
    }
    Ok(())
}

/// A hash's field TTLs as `HPEXPIREAT <key> <unix ms> FIELDS <n> <field> ...` records,
/// one per run of fields sharing a deadline (earliest first), a run split at about
/// [`COLLECTION_RECORD_BYTES`]. Replayed while loading, a deadline already past is kept
/// (the field then expires lazily or in the next cycle), never applied at load time.
fn write_field_ttls<W: Write>(
    w: &mut SnapshotWriter<W>,
    key: &[u8],
    ttls: &crate::types::hash_ttl::FieldTtls,
) -> io::Result<()> {
    let mut run: Vec<&[u8]> = Vec::new();
    let mut run_at = 0;
    let mut bytes = 0;
    let emit = |w: &mut SnapshotWriter<W>, at: u64, fields: &[&[u8]]| {
        let mut at_text = itoa::Buffer::new();
        let mut n = itoa::Buffer::new();
        let mut argv: Vec<&[u8]> = vec![
            b"HPEXPIREAT",
            key,
            at_text.format(at).as_bytes(),
            b"FIELDS",
            n.format(fields.len()).as_bytes(),
        ];
        argv.extend_from_slice(fields);
        w.record(&argv)
    };
    for (field, at) in ttls.iter() {
        if !run.is_empty() && (at != run_at || bytes >= COLLECTION_RECORD_BYTES) {
            emit(w, run_at, &run)?;
            run.clear();
            bytes = 0;
        }
        run_at = at;
        bytes += field.len() + 16;
        run.push(field);
    }
    if !run.is_empty() {
        emit(w, run_at, &run)?;
    }
    Ok(())
}

/// Most bytes of elements one record of a collection carries before the next record
/// goes on with the rest (so no record is huge, as with `STREAMD.NODES`).
const COLLECTION_RECORD_BYTES: usize = 1 << 20;

/// Writes a string, list, hash, set or sorted set as the client commands that rebuild
/// it: `SET`, then `RPUSH` / `HSET` / `SADD` / `ZADD` records of up to about 1 MiB of
/// elements each, in the value's own order. A sorted set's scores are written as the
/// shortest decimal digits that read back to the same double, with an exponent when
/// very large or small (`1e300`, `5e-324`; `inf`/`-inf`, `-0.0` included), so a score
/// reloads bit for bit and no record holds a 300-digit number.
fn write_value<W: Write>(w: &mut SnapshotWriter<W>, key: &[u8], value: &Value) -> io::Result<()> {
    fn chunked<'a, W: Write>(
        w: &mut SnapshotWriter<W>,
        head: &[&[u8]],
        items: impl Iterator<Item = Vec<std::borrow::Cow<'a, [u8]>>>,
    ) -> io::Result<()> {
        let mut args: Vec<std::borrow::Cow<'a, [u8]>> = Vec::new();
        let mut bytes = 0;
        // One record: `head` then the elements gathered so far.
        let emit = |w: &mut SnapshotWriter<W>, args: &[std::borrow::Cow<'a, [u8]>]| {
            let argv: Vec<&[u8]> = head
                .iter()
                .copied()
                .chain(args.iter().map(|a| &a[..]))
                .collect();
            w.record(&argv)
        };
        for item in items {
            bytes += item.iter().map(|a| a.len() + 16).sum::<usize>();
            args.extend(item);
            if bytes >= COLLECTION_RECORD_BYTES {
                emit(w, &args)?;
                args.clear();
                bytes = 0;
            }
        }
        if !args.is_empty() {
            emit(w, &args)?;
        }
        Ok(())
    }
    match value {
        Value::String(s) => w.record(&[b"SET".as_slice(), key, &s.to_bytes()]),
        Value::List(l) => chunked(w, &[b"RPUSH", key], l.iter().map(|e| vec![e])),
        Value::Hash(h) => chunked(w, &[b"HSET", key], h.iter().map(|(f, v)| vec![f, v])),
        Value::Set(s) => chunked(w, &[b"SADD", key], s.iter().map(|m| vec![m])),
        Value::ZSet(z) => chunked(
            w,
            &[b"ZADD", key],
            z.iter().map(|(m, score)| {
                vec![
                    std::borrow::Cow::Owned(format!("{score:?}").into_bytes()),
                    m,
                ]
            }),
        ),
        Value::Stream(s) => write_stream(w, key, s),
    }
}

/// One stream: entries, metadata, groups.
fn write_stream<W: Write>(w: &mut SnapshotWriter<W>, key: &[u8], s: &Stream) -> io::Result<()> {
    if s.is_empty() {
        w.record(&[&b"XADD"[..], key, b"MAXLEN", b"0", b"0-1", b"x", b"y"])?;
    } else {
        if s.cold().is_some() {
            write_cold(w, key, s)?;
        }
        write_nodes(w, key, s)?;
    }
    w.record(&[
        &b"XSETID"[..],
        key,
        &s.last_id().to_text(),
        b"ENTRIESADDED",
        itoa::Buffer::new().format(s.entries_added()).as_bytes(),
        b"MAXDELETEDID",
        &s.max_deleted_entry_id().to_text(),
    ])?;
    let retention = s.retention();
    if retention != Retention::default() {
        w.record(&retention_record(key, &retention))?;
    }
    super::groups::write_groups(w, key, s)?;
    super::idmp::write_idmp(w, key, s)
}

/// A `STREAMD.NODES` record is closed once its nodes reach this many bytes (a single
/// larger node gets a record of its own).
pub const NODES_RECORD_BYTES: usize = 1 << 20;

/// The stream's nodes as they are, in `STREAMD.NODES <key> <master> <node> ...` records
/// of about [`NODES_RECORD_BYTES`] each; `<master>` is the 16-byte big-endian master ID
/// (the node's key in the stream's index), `<node>` the node's bytes (listpack.rs).
fn write_nodes<W: Write>(w: &mut SnapshotWriter<W>, key: &[u8], s: &Stream) -> io::Result<()> {
    let mut batch: Vec<([u8; 16], &[u8])> = Vec::new();
    let mut bytes = 0;
    let mut flush = |batch: &mut Vec<([u8; 16], &[u8])>| {
        let mut argv: Vec<&[u8]> = Vec::with_capacity(2 + 2 * batch.len());
        argv.push(NODES_RECORD);
        argv.push(key);
        for (master, node) in batch.iter() {
            argv.push(master);
            argv.push(node);
        }
        let r = w.record(&argv);
        batch.clear();
        r
    };
    for (master, node) in s.nodes() {
        batch.push((master.to_key(), node));
        bytes += node.len();
        if bytes >= NODES_RECORD_BYTES {
            flush(&mut batch)?;
            bytes = 0;
        }
    }
    if !batch.is_empty() {
        flush(&mut batch)?;
    }
    Ok(())
}

/// The name of the node record.
pub const NODES_RECORD: &[u8] = b"STREAMD.NODES";

/// The name of the cold stub record.
pub const COLD_RECORD: &[u8] = b"STREAMD.COLD";

/// Bytes of a cold stub in a `STREAMD.COLD` record before its tombstones.
const STUB_LEN: usize = 16 * 3 + 8 + 4 + 4 + 8 + 4 + 4 + 4;

/// The stream's cold nodes (tiering): as `STREAMD.COLD <key> <stub> ...` records of up to
/// [`NODES_RECORD_BYTES`], each stub
///
/// ```text
/// master 16 | last 16 | first live 16       IDs as 16-byte big-endian keys
/// segment u64 | offset u32 | len u32 | crc u64   its record's location (LE)
/// live u32 | total u32 | tombstones u32      counts (LE), then 16 bytes per tombstone
/// ```
///
/// so a snapshot costs what the hot data costs and a restart loads no cold byte; or, for
/// a replica's full sync (`materialize_cold`), as `STREAMD.NODES` of the nodes read back
/// one at a time (with their tombstones applied).
fn write_cold<W: Write>(w: &mut SnapshotWriter<W>, key: &[u8], s: &Stream) -> io::Result<()> {
    let Some(cold) = s.cold() else {
        return Ok(());
    };
    if w.materialize_cold {
        for stub in cold.stubs() {
            let lp = stub.read_copy().ok_or_else(|| {
                io::Error::other(format!(
                    "a cold node of stream {} (master ID {}) cannot be read",
                    String::from_utf8_lossy(key),
                    stub.master
                ))
            })?;
            let master = stub.master.to_key();
            w.record(&[NODES_RECORD, key, &master, lp.as_bytes()])?;
        }
        return Ok(());
    }
    let mut blob: Vec<u8> = Vec::new();
    let mut stubs: Vec<Vec<u8>> = Vec::new();
    let mut bytes = 0;
    for stub in cold.stubs() {
        blob.clear();
        blob.extend_from_slice(&stub.master.to_key());
        blob.extend_from_slice(&stub.last.to_key());
        blob.extend_from_slice(&stub.first_live.to_key());
        blob.extend_from_slice(&stub.loc.segment.to_le_bytes());
        blob.extend_from_slice(&stub.loc.offset.to_le_bytes());
        blob.extend_from_slice(&stub.loc.len.to_le_bytes());
        blob.extend_from_slice(&stub.loc.crc.to_le_bytes());
        blob.extend_from_slice(&stub.live.to_le_bytes());
        blob.extend_from_slice(&stub.total.to_le_bytes());
        blob.extend_from_slice(&(stub.tombstones().len() as u32).to_le_bytes());
        for t in stub.tombstones() {
            blob.extend_from_slice(&t.to_key());
        }
        bytes += blob.len();
        stubs.push(blob.clone());
        if bytes >= NODES_RECORD_BYTES {
            cold_record(w, key, &mut stubs)?;
            bytes = 0;
        }
    }
    if !stubs.is_empty() {
        cold_record(w, key, &mut stubs)?;
    }
    Ok(())
}

/// Writes one `STREAMD.COLD` record of `stubs` and empties it.
fn cold_record<W: Write>(
    w: &mut SnapshotWriter<W>,
    key: &[u8],
    stubs: &mut Vec<Vec<u8>>,
) -> io::Result<()> {
    let mut argv: Vec<&[u8]> = Vec::with_capacity(2 + stubs.len());
    argv.push(COLD_RECORD);
    argv.push(key);
    argv.extend(stubs.iter().map(Vec::as_slice));
    let r = w.record(&argv);
    stubs.clear();
    r
}

/// Decodes one stub of a `STREAMD.COLD` record (see [`write_cold`]).
fn decode_stub(b: &[u8]) -> Result<ColdStub, String> {
    if b.len() < STUB_LEN {
        return Err("a cold stub is too short".into());
    }
    let id = |at: usize| StreamId::from_key(&b[at..at + 16]).ok_or("bad ID");
    let u32_at = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let u64_at = |at: usize| {
        let mut x = [0u8; 8];
        x.copy_from_slice(&b[at..at + 8]);
        u64::from_le_bytes(x)
    };
    let loc = NodeLocation {
        segment: u64_at(48),
        offset: u32_at(56),
        len: u32_at(60),
        crc: u64_at(64),
    };
    let (live, total, ntomb) = (u32_at(72), u32_at(76), u32_at(80) as usize);
    if b.len() != STUB_LEN + 16 * ntomb {
        return Err("a cold stub's length does not match its tombstones".into());
    }
    let mut tombstones = Vec::with_capacity(ntomb);
    for i in 0..ntomb {
        tombstones.push(id(STUB_LEN + 16 * i)?);
    }
    if tombstones.windows(2).any(|w| w[0] >= w[1]) {
        return Err("a cold stub's tombstones are not ascending".into());
    }
    Ok(ColdStub::from_parts(
        id(0)?,
        id(16)?,
        id(32)?,
        loc,
        live,
        total,
        tombstones,
    ))
}

/// Applies a `STREAMD.COLD <key> <stub> ...` record to database `db`: each stub is added
/// after the stream's last node (no segment is read; the locations are claimed once the
/// load ends, `Core::tier_loaded`).
pub fn apply_cold(core: &mut Core, db: usize, argv: &[Bytes]) -> Result<(), String> {
    if argv.len() < 3 {
        return Err("wrong number of arguments".into());
    }
    let stream = loaded_stream(&mut core.dbs[db], &argv[1])?;
    for (i, b) in argv[2..].iter().enumerate() {
        let stub = decode_stub(b).map_err(|e| format!("cold stub {i}: {e}"))?;
        let master = stub.master;
        stream
            .push_cold(stub)
            .map_err(|e| format!("cold stub {i} (master ID {master}): {e}"))?;
    }
    core.dirty += 1;
    Ok(())
}

/// The stream a loaded node record adds to: `key`'s, created if missing.
fn loaded_stream<'a>(db: &'a mut Db, key: &Bytes) -> Result<&'a mut Stream, String> {
    if db.get(key).is_some_and(|v| v.as_stream().is_none()) {
        return Err("the key holds another type".into());
    }
    db.stream_or_create(key).map_err(|e| e.to_string())
}

/// Applies a `STREAMD.NODES <key> <master> <node> ...` record to database `db`: each node
/// is checked byte by byte and appended after the stream's last entry (the key is
/// created if it does not exist). Nothing is applied from a record with a bad node after
/// the nodes before it; the error stops the load anyway.
pub fn apply_nodes(core: &mut Core, db: usize, argv: &[Bytes]) -> Result<(), String> {
    if argv.len() < 4 || !argv.len().is_multiple_of(2) {
        return Err("wrong number of arguments".into());
    }
    let db_index = db;
    let stream = loaded_stream(&mut core.dbs[db], &argv[1])?;
    for (i, pair) in argv[2..].chunks_exact(2).enumerate() {
        let master = StreamId::from_key(&pair[0])
            .ok_or_else(|| format!("node {i}: the master ID is not 16 bytes"))?;
        stream
            .push_node(master, pair[1].to_vec())
            .map_err(|e| format!("node {i} (master ID {master}): {e}"))?;
    }
    core.dirty += 1;
    core.tier_while_loading(db_index, &argv[1]);
    Ok(())
}

/// What [`save`] wrote.
#[derive(Debug, Clone, Copy)]
pub struct SaveStats {
    /// File size in bytes.
    pub bytes: u64,
    /// Number of records.
    pub records: u64,
}

/// Writes `dbs` as a snapshot to `path` atomically (temp file, fsync, rename, directory
/// fsync).
pub fn save(
    path: &Path,
    dbs: &[Db],
    functions: &[bytes::Bytes],
    created_ms: u64,
) -> Result<SaveStats, PersistError> {
    let tmp = tmp_path(path);
    let file = File::create(&tmp).map_err(|e| PersistError::io("creating", &tmp, e))?;
    let result = (|| {
        let mut w = SnapshotWriter::new(BufWriter::with_capacity(1 << 20, file), created_ms)?;
        write_dataset(&mut w, dbs, functions)?;
        let (buf, bytes, records) = w.finish()?;
        let file = buf.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok::<_, io::Error>(SaveStats { bytes, records })
    })();
    let stats = match result {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(PersistError::io("writing", &tmp, e));
        }
    };
    std::fs::rename(&tmp, path).map_err(|e| PersistError::io("renaming", &tmp, e))?;
    sync_dir(path)?;
    Ok(stats)
}

/// Checks a snapshot's header and CRC; returns the byte range of its records.
pub fn verify(path: &Path) -> Result<(u64, u64), PersistError> {
    let mut f = File::open(path).map_err(|e| PersistError::io("opening", path, e))?;
    let len = f
        .metadata()
        .map_err(|e| PersistError::io("reading", path, e))?
        .len();
    let bad = |why: String| PersistError::Snapshot {
        path: path.to_path_buf(),
        why,
    };
    if len < HEADER_LEN + TRAILER_LEN {
        return Err(bad(format!("file too short ({len} bytes)")));
    }
    let mut header = [0u8; HEADER_LEN as usize];
    f.read_exact(&mut header)
        .map_err(|e| PersistError::io("reading", path, e))?;
    if &header[0..8] != MAGIC {
        return Err(bad("not a streamd snapshot (bad magic)".into()));
    }
    let version = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes"));
    if !(MIN_SNAPSHOT_VERSION..=SNAPSHOT_VERSION).contains(&version) {
        return Err(bad(format!(
            "snapshot format version {version}; this streamd reads versions \
             {MIN_SNAPSHOT_VERSION} to {SNAPSHOT_VERSION}"
        )));
    }
    let io_err = |e| PersistError::io("reading", path, e);
    let mut tail = [0u8; TRAILER_LEN as usize];
    f.seek(SeekFrom::Start(len - TRAILER_LEN)).map_err(io_err)?;
    f.read_exact(&mut tail).map_err(io_err)?;
    f.seek(SeekFrom::Start(0)).map_err(io_err)?;
    let mut digest = crc64fast::Digest::new();
    let mut left = len - 8;
    let mut buf = vec![0u8; 1 << 20];
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        f.read_exact(&mut buf[..n]).map_err(io_err)?;
        digest.write(&buf[..n]);
        left -= n as u64;
    }
    let stored = u64::from_le_bytes(tail[4..12].try_into().expect("8 bytes"));
    if u32::from_le_bytes(tail[..4].try_into().expect("4 bytes")) != END_MARKER {
        return Err(bad(format!(
            "no end marker at offset {}",
            len - TRAILER_LEN
        )));
    }
    let computed = digest.sum64();
    if stored != computed {
        return Err(bad(format!(
            "CRC-64 mismatch (stored {stored:#018x}, computed {computed:#018x}): the file is damaged"
        )));
    }
    Ok((HEADER_LEN, len - TRAILER_LEN))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_trailer_layout() {
        let (bytes, size, records) = {
            let mut w = SnapshotWriter::new(Vec::new(), 0x0102_0304_0506_0708).unwrap();
            w.record(&["SELECT", "0"]).unwrap();
            w.finish().unwrap()
        };
        assert_eq!(size as usize, bytes.len());
        assert_eq!(records, 1);
        assert_eq!(&bytes[0..8], b"STRMSNAP");
        assert_eq!(&bytes[8..12], &3u32.to_le_bytes());
        assert_eq!(&bytes[12..16], &[0, 0, 0, 0]);
        assert_eq!(&bytes[16..24], &0x0102_0304_0506_0708u64.to_le_bytes());
        let n = bytes.len();
        assert_eq!(&bytes[n - 12..n - 8], &[0xff; 4]);
        assert_eq!(
            u64::from_le_bytes(bytes[n - 8..].try_into().unwrap()),
            record::crc64(&bytes[..n - 8])
        );
    }

    #[test]
    fn verify_accepts_good_files_and_refuses_any_flipped_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dump.snap");
        let mut db = Db::default();
        let mut s = Stream::new();
        s.append(
            StreamId::new(1, 1),
            &[
                bytes::Bytes::from_static(b"f"),
                bytes::Bytes::from_static(b"v"),
            ],
            &Default::default(),
        );
        db.insert(b"s", s);
        save(&path, &[db], &[], 7).unwrap();
        let good = std::fs::read(&path).unwrap();
        let (start, end) = verify(&path).unwrap();
        assert_eq!(start, HEADER_LEN);
        assert_eq!(end, good.len() as u64 - TRAILER_LEN);
        for i in 0..good.len() {
            let mut b = good.clone();
            b[i] ^= 0x10;
            std::fs::write(&path, &b).unwrap();
            assert!(verify(&path).is_err(), "flip at {i} accepted");
        }
        std::fs::write(&path, &good[..good.len() - 1]).unwrap();
        assert!(verify(&path).is_err());
    }
}

#[cfg(test)]
mod format_doc {
    use super::*;

    /// The records of a snapshot of one stream `s` holding `1-1 f v`, byte for byte as
    /// docs/format.md draws them (section 3).
    #[test]
    fn the_documented_example_snapshot_is_what_we_write() {
        let mut db = Db::default();
        let mut s = Stream::new();
        s.append(
            StreamId::new(1, 1),
            &[Bytes::from_static(b"f"), Bytes::from_static(b"v")],
            &Default::default(),
        );
        db.insert(b"s", s);
        let mut w = SnapshotWriter::new(Vec::new(), 0).unwrap();
        write_dataset(&mut w, &[db], &[]).unwrap();
        let (bytes, _, _) = w.finish().unwrap();
        let records = &bytes[HEADER_LEN as usize..bytes.len() - TRAILER_LEN as usize];
        // SELECT 0, then the node record.
        let nodes = &records[35..35 + 12 + 0x51];
        let hex: String = nodes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "51000000fabc5ab73a41b379\
             2a340d0a\
             2431330d0a53545245414d442e4e4f4445530d0a\
             24310d0a730d0a\
             2431360d0a00000000000000010000000000000001 0d0a\
             2432300d0a 010000000000000019000000 01 0266 02000276 04 0d0a"
                .replace(' ', "")
        );
    }
}
