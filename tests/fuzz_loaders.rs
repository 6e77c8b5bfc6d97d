//! Loader fuzzing: damaged snapshots and logs never crash the server, never make it
//! allocate without bound, and are either refused with an error or loaded into a dataset
//! that is consistent (walkable, savable, and reloaded identically).
//!
//! `cargo fuzz` needs a nightly toolchain, so this is a proptest harness run by
//! `cargo test`. Each case takes one seed file of the checked-in corpus
//! (`tests/data/fuzz/`: a log with every record form, a version 3 snapshot of the
//! dataset it builds, its tombstones reclaimed, and the same dataset as a version 1
//! snapshot), applies one to four
//! mutations, and feeds the result to three targets:
//!
//! - the **snapshot loader** (start-up with `appendonly no` and the file as `dump.snap`);
//! - the **log loader** (start-up with `appendonly yes`, the file as the manifest's only
//!   incremental log, so that torn tails are cut as after a crash);
//! - **`streamd --check-aof`** ([`streamd::persist::check::check`]), without and with
//!   `--fix`; after `--fix` the file must check clean.
//!
//! Mutations work on bytes (truncation, bit flips, spliced random bytes) and on records:
//! a record dropped, duplicated, replaced by a random command, or its payload altered and
//! framed again with a *valid* CRC. For snapshots the whole-file CRC is recomputed in
//! most cases, so that the damage reaches the record and node checks behind it (a CRC
//! mismatch alone is refused before any record is read).
//!
//! The number of cases per target is 48 by default; set `STREAMD_FUZZ_CASES` for a
//! longer run (e.g. `STREAMD_FUZZ_CASES=20000 cargo test --release --test fuzz_loaders`).
//! `STREAMD_FUZZ_REGEN=1` rewrites the corpus from the code in [`seed_log`]
//! (`corpus_is_what_the_generator_writes` fails when the two differ).
//!
//! A crash found here becomes a regression test at the end of this file.

use proptest::prelude::*;
use proptest::sample::Index;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use streamd::config::Config;
use streamd::core::Core;
use streamd::persist::{self, check, record, snapshot};
use streamd::stream::StreamId;

#[global_allocator]
static ALLOC: streamd::alloc::PeakAlloc = streamd::alloc::PeakAlloc;

/// The allocation peak is process-wide: one load at a time in this binary.
static SERIAL: Mutex<()> = Mutex::new(());

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fuzz");
const SEED_LOG: &str = "seed.incr.log";
const SEED_SNAP_V3: &str = "seed-v3.snap";
const SEED_SNAP_V1: &str = "seed-v1.snap";

/// The most a load may allocate beyond what it started with: a fixed allowance (read
/// buffers of 1 MiB, the dataset's structures) plus a multiple of the input's size. A
/// length field trusted before it is checked against the file would blow far past it.
fn allocation_bound(input_len: usize) -> usize {
    (24 << 20) + 64 * input_len
}

fn cases() -> u32 {
    std::env::var("STREAMD_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48)
}

// --- the seed corpus --------------------------------------------------------------------

/// Delivery and seen times in the seed: fixed, so the corpus is reproducible.
const T0: u64 = 1_700_000_000_000;

/// The seed log: every record form the server writes (docs/format.md), building a
/// dataset with several nodes per stream, tombstones, trims, groups with owned and NACKed
/// pending entries (one whose entry was deleted), consumers, TTLs, an empty stream, a
/// transaction and three databases.
fn seed_log() -> Vec<u8> {
    let mut recs: Vec<Vec<String>> = Vec::new();
    let mut r = |v: &[&str]| recs.push(v.iter().map(|s| s.to_string()).collect());
    r(&["SELECT", "0"]);
    let long = "x".repeat(300);
    for i in 1..=260u64 {
        let id = format!("{}-{}", T0 + i / 3, i % 3);
        let (b, a) = (i.to_string(), (i * 7919 % 1000).to_string());
        match i % 17 {
            0 => r(&["XADD", "bids", &id, "bidder", &b, "note", &long]),
            5 => r(&["XADD", "bids", &id, "other", "-12", "amount", "0042"]),
            _ => r(&["XADD", "bids", &id, "bidder", &b, "amount", &a]),
        }
    }
    let id = |i: u64| format!("{}-{}", T0 + i / 3, i % 3);
    r(&[
        "XGROUP",
        "CREATE",
        "bids",
        "g1",
        &id(40),
        "ENTRIESREAD",
        "-1",
    ]);
    r(&["XGROUP", "CREATECONSUMER", "bids", "g1", "alice"]);
    for (i, who) in [(41, "alice"), (42, "bob"), (43, "alice"), (50, "bob")] {
        let t = (T0 + i).to_string();
        r(&[
            "XCLAIM",
            "bids",
            "g1",
            who,
            "0",
            &id(i),
            "TIME",
            &t,
            "RETRYCOUNT",
            "2",
            "FORCE",
            "JUSTID",
        ]);
    }
    r(&["STREAMD.NACK", "bids", "g1", &id(44), "3"]);
    r(&[
        "XGROUP",
        "SETID",
        "bids",
        "g1",
        &id(60),
        "ENTRIESREAD",
        "55",
    ]);
    r(&["XACK", "bids", "g1", &id(43)]);
    let (seen, active) = ((T0 + 100).to_string(), (T0 + 90).to_string());
    r(&["STREAMD.CONSUMER", "bids", "g1", "alice", &seen, &active]);
    r(&["STREAMD.CONSUMER", "bids", "g1", "bob", &seen, "-1"]);
    r(&["XDEL", "bids", &id(1)]);
    r(&["XDEL", "bids", &id(50), &id(51), &id(52)]);
    r(&["XDEL", "bids", &id(260)]);
    r(&["XTRIM", "bids", "MAXLEN", "=", "240"]);
    // Enough deletions in one node for reclamation to rewrite it in the snapshot seed.
    for i in (100..=160u64).filter(|i| i % 10 != 0) {
        r(&["XDEL", "bids", &id(i)]);
    }
    // Retention and dead-letter settings, and a retention trim as the log carries it.
    r(&[
        "XCFGSET",
        "bids",
        "MAXAGE",
        "604800000",
        "MAXBYTES",
        "10000000",
        "RETENTION-REFS",
        "DELREF",
    ]);
    r(&["XTRIM", "bids", "MINID", "=", &id(24), "DELREF"]);
    r(&[
        "XGROUP",
        "SETDLQ",
        "bids",
        "g1",
        "dead",
        "MAXDELIVERIES",
        "3",
    ]);
    r(&["XGROUP", "CREATE", "bids", "g2", "$", "ENTRIESREAD", "240"]);
    r(&["MULTI"]);
    r(&["XADD", "bids", &id(300), "bidder", "9", "amount", "9"]);
    r(&[
        "XADD",
        "bids",
        "MAXLEN",
        "=",
        "240",
        &id(301),
        "bidder",
        "9",
        "amount",
        "10",
    ]);
    r(&["EXEC"]);
    r(&[
        "XSETID",
        "bids",
        &id(400),
        "ENTRIESADDED",
        "500",
        "MAXDELETEDID",
        &id(260),
    ]);
    r(&["XADD", "t", "5-1", "f", "v"]);
    r(&["PEXPIREAT", "t", "99999999999999"]);
    r(&["SELECT", "3"]);
    r(&["XADD", "empty", "MAXLEN", "0", "0-1", "x", "y"]);
    r(&["XADD", "u", "1-1", "a", "b"]);
    r(&["XGROUP", "CREATE", "u", "g", "0", "ENTRIESREAD", "-1"]);
    r(&["SELECT", "15"]);
    r(&["XADD", "last", "2-2", "k", "v"]);
    let mut out = Vec::new();
    for rec in &recs {
        record::encode(&mut out, rec);
    }
    out
}

/// A core with `args` on top of the defaults, its data in `dir`.
fn core_in(dir: &Path, args: &[&str]) -> Core {
    let mut cli = vec!["--dir".to_string(), dir.display().to_string()];
    cli.extend(args.iter().map(|s| s.to_string()));
    let config = Config::load(None, &cli).expect("config");
    Core::new(config, 0, streamd::commands::FAMILIES)
}

/// Loads whatever `dir` holds as a server start-up would.
fn start_up(dir: &Path, appendonly: bool) -> Result<Core, persist::PersistError> {
    let mut core = core_in(
        dir,
        &["--appendonly", if appendonly { "yes" } else { "no" }],
    );
    let loader = persist::prepare(&mut core)?;
    loader.run_to_end(&mut core)?;
    Ok(core)
}

/// Loads `log` as the only file of a log directory.
fn load_log(log: &[u8]) -> Result<Core, persist::PersistError> {
    let tmp = tempfile::tempdir().expect("tempdir");
    let sub = tmp.path().join("appendonlydir");
    std::fs::create_dir_all(&sub).expect("mkdir");
    std::fs::write(sub.join("appendonly.1.incr.log"), log).expect("write");
    std::fs::write(
        sub.join("appendonly.manifest"),
        "file appendonly.1.incr.log seq 1 type i\n",
    )
    .expect("write");
    start_up(tmp.path(), true)
}

/// Loads `snap` as `dump.snap`.
fn load_snapshot(snap: &[u8]) -> Result<Core, persist::PersistError> {
    let tmp = tempfile::tempdir().expect("tempdir");
    std::fs::write(tmp.path().join("dump.snap"), snap).expect("write");
    start_up(tmp.path(), false)
}

/// The dataset of `core` as a snapshot file's bytes.
fn save_bytes(core: &Core) -> Vec<u8> {
    let tmp = tempfile::tempdir().expect("tempdir");
    let p = tmp.path().join("x.snap");
    snapshot::save(&p, &core.dbs, &[], T0).expect("saving a loaded dataset");
    std::fs::read(&p).expect("read")
}

/// The same dataset as a version 1 snapshot: every entry as an XADD record.
fn save_v1(core: &Core) -> Vec<u8> {
    let mut w = snapshot::SnapshotWriter::new(Vec::new(), T0).expect("in memory");
    for (i, db) in core.dbs.iter().enumerate() {
        if db.is_empty() {
            continue;
        }
        w.record(&["SELECT".to_string(), i.to_string()])
            .expect("mem");
        let mut keys: Vec<_> = db.keys.keys().collect();
        keys.sort();
        for key in keys {
            let Some(s) = db.get_stream(key) else {
                continue;
            };
            if s.is_empty() {
                w.record(&[&b"XADD"[..], key, b"MAXLEN", b"0", b"0-1", b"x", b"y"])
                    .expect("mem");
            }
            for e in s.range(StreamId::MIN, StreamId::MAX, false) {
                let mut argv = vec![b"XADD".to_vec(), key.to_vec(), e.id.to_text()];
                argv.extend(e.elements().map(|v| v.to_vec()));
                w.record(&argv).expect("mem");
            }
            w.record(&[
                &b"XSETID"[..],
                key,
                &s.last_id().to_text(),
                b"ENTRIESADDED",
                s.entries_added().to_string().as_bytes(),
                b"MAXDELETEDID",
                &s.max_deleted_entry_id().to_text(),
            ])
            .expect("mem");
            let retention = s.retention();
            if retention != Default::default() {
                w.record(&streamd::commands::effects::retention_record(
                    key, &retention,
                ))
                .expect("mem");
            }
            persist::groups::write_groups(&mut w, key, s).expect("mem");
            if let Some(at) = db.expires.get(key) {
                w.record(&[&b"PEXPIREAT"[..], key, at.to_string().as_bytes()])
                    .expect("mem");
            }
        }
    }
    let (mut bytes, _, _) = w.finish().expect("mem");
    bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
    fix_file_crc(&mut bytes);
    bytes
}

/// Recomputes a snapshot's trailing CRC (after a mutation, or a version patch).
fn fix_file_crc(bytes: &mut [u8]) {
    if bytes.len() < 8 {
        return;
    }
    let n = bytes.len();
    let crc = record::crc64(&bytes[..n - 8]);
    bytes[n - 8..].copy_from_slice(&crc.to_le_bytes());
}

/// The three seed files, as the generator makes them.
fn generate_corpus() -> Vec<(&'static str, Vec<u8>)> {
    let log = seed_log();
    let mut core = load_log(&log).expect("the seed log loads");
    reclaim_all(&mut core);
    let v3 = save_bytes(&core);
    let v1 = save_v1(&core);
    vec![(SEED_LOG, log), (SEED_SNAP_V3, v3), (SEED_SNAP_V1, v1)]
}

/// Runs the reclamation pass until no stream waits for it, as the cron would after the
/// load (the retention sweep, which reads the clock, is left out).
fn reclaim_all(core: &mut Core) {
    for _ in 0..1000 {
        if core.dbs.iter().all(|db| db.reclaim_key_count() == 0) {
            return;
        }
        core.reclaim_pass();
    }
    panic!("reclamation does not finish");
}

fn corpus_file(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(CORPUS).join(name))
        .unwrap_or_else(|e| panic!("{CORPUS}/{name}: {e} (STREAMD_FUZZ_REGEN=1 writes it)"))
}

// --- what a loaded dataset must satisfy ---------------------------------------------------

/// Everything a client can observe of the dataset, in a canonical order; with `layout`
/// the node boundaries too. Walks every stream forwards and backwards (a damaged node
/// that slipped through would panic or disagree here).
fn dump(core: &Core, layout: bool) -> String {
    let mut out = String::new();
    for (i, db) in core.dbs.iter().enumerate() {
        let mut keys: Vec<_> = db.keys.keys().collect();
        keys.sort();
        for key in keys {
            let Some(s) = db.get_stream(key) else {
                continue;
            };
            let _ = writeln!(
                out,
                "db {i} key {:?} len {} first {} last {} added {} maxdel {} ttl {:?} retention {:?}",
                bytes::Bytes::copy_from_slice(key),
                s.len(),
                s.first_id(),
                s.last_id(),
                s.entries_added(),
                s.max_deleted_entry_id(),
                db.expires.get(key),
                s.retention()
            );
            let fwd: Vec<_> = s.range(StreamId::MIN, StreamId::MAX, false).collect();
            let mut rev: Vec<StreamId> = s
                .range(StreamId::MIN, StreamId::MAX, true)
                .map(|e| e.id)
                .collect();
            rev.reverse();
            assert_eq!(rev, fwd.iter().map(|e| e.id).collect::<Vec<_>>());
            assert_eq!(fwd.len() as u64, s.len());
            for e in fwd {
                let els: Vec<Vec<u8>> = e.elements().map(|v| v.to_vec()).collect();
                let _ = writeln!(out, "  {} {els:?}", e.id);
            }
            if layout {
                for (m, b) in s.nodes() {
                    let _ = writeln!(out, "  node {m} {} bytes {:x}", b.len(), record::crc64(b));
                }
            }
            let mut groups: Vec<String> = s
                .groups()
                .iter()
                .map(|g| {
                    let mut t = format!(
                        "  group {} last {} read {:?} dlq {:?}\n",
                        String::from_utf8_lossy(g.name()),
                        g.last_id(),
                        g.entries_read(),
                        g.dead_letter()
                    );
                    for p in g.by_time() {
                        let _ = writeln!(
                            t,
                            "    pel {} {:?} {} {}",
                            p.id,
                            p.owner.map(String::from_utf8_lossy),
                            p.delivery_time,
                            p.delivery_count
                        );
                    }
                    let mut cs: Vec<String> = g
                        .consumers()
                        .map(|(_, c)| {
                            format!(
                                "    consumer {} {} {:?}",
                                String::from_utf8_lossy(c.name()),
                                c.seen_time(),
                                c.active_time()
                            )
                        })
                        .collect();
                    cs.sort();
                    for c in cs {
                        let _ = writeln!(t, "{c}");
                    }
                    t
                })
                .collect();
            groups.sort();
            out.extend(groups);
        }
    }
    out
}

/// A dataset that loaded must save, and load back to the same thing.
fn assert_consistent(core: &Core) {
    let before = dump(core, true);
    let again = load_snapshot(&save_bytes(core)).expect("a loaded dataset saved and reloaded");
    assert_eq!(
        dump(&again, true),
        before,
        "save + load changed the dataset"
    );
}

/// Runs `f` with the allocation peak measured; fails when it passes the bound.
fn bounded<T>(input_len: usize, what: &str, f: impl FnOnce() -> T) -> T {
    streamd::alloc::reset_peak();
    let base = streamd::alloc::allocated();
    let r = f();
    let grew = streamd::alloc::peak().saturating_sub(base);
    assert!(
        grew <= allocation_bound(input_len),
        "{what}: allocated {grew} bytes for a {input_len}-byte input"
    );
    r
}

// --- mutations ---------------------------------------------------------------------------

/// One change to a file.
#[derive(Debug, Clone)]
enum Mutation {
    /// Cut the file at this point.
    Truncate(Index),
    /// Flip bit `.1 % 8` of the byte at `.0`.
    Flip(Vec<(Index, u8)>),
    /// Replace `len` bytes at `at` by `with`.
    Splice { at: Index, len: u8, with: Vec<u8> },
    /// Drop a record.
    DropRecord(Index),
    /// Repeat a record.
    DupRecord(Index),
    /// Replace a record by a random command (framed with a valid CRC).
    ReplaceRecord(Index, Vec<Vec<u8>>),
    /// Insert a random command before a record.
    InsertRecord(Index, Vec<Vec<u8>>),
    /// Flip bits in a record's payload, then frame it again with a valid CRC: damage that
    /// only the payload parser, the replay and the node checks can catch.
    AlterPayload(Index, Vec<(Index, u8)>),
}

/// Random commands: mostly the record forms the server writes, with arguments from a
/// small vocabulary so that they hit existing keys, groups and IDs.
fn command() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let name = prop::sample::select(vec![
        "XADD",
        "XADD",
        "XADD",
        "XDEL",
        "XTRIM",
        "XSETID",
        "XGROUP",
        "XGROUP",
        "XCLAIM",
        "XACK",
        "XACKDEL",
        "XDELEX",
        "XNACK",
        "STREAMD.NACK",
        "STREAMD.PENDING",
        "STREAMD.CONSUMER",
        "STREAMD.GROUP",
        "STREAMD.NODES",
        "SELECT",
        "MULTI",
        "EXEC",
        "DEL",
        "PEXPIREAT",
        "EXPIRE",
        "RENAME",
        "COPY",
        "MOVE",
        "SWAPDB",
        "FLUSHDB",
        "FLUSHALL",
        "PERSIST",
        "UNLINK",
        "XREAD",
        "XREADGROUP",
        "XRANGE",
        "XINFO",
        "XLEN",
        "PING",
        "NOSUCHCMD",
    ]);
    let word = prop::sample::select(vec![
        "bids",
        "t",
        "u",
        "empty",
        "new",
        "g1",
        "g2",
        "g",
        "alice",
        "bob",
        "zed",
        "CREATE",
        "SETID",
        "DESTROY",
        "CREATECONSUMER",
        "DELCONSUMER",
        "MAXLEN",
        "MINID",
        "=",
        "~",
        "LIMIT",
        "ENTRIESREAD",
        "ENTRIESADDED",
        "MAXDELETEDID",
        "TIME",
        "RETRYCOUNT",
        "FORCE",
        "JUSTID",
        "IDS",
        "KEEPREF",
        "DELREF",
        "ACKED",
        "STREAMS",
        "GROUP",
        "COUNT",
        "BLOCK",
        "MKSTREAM",
        "FAIL",
        "SILENT",
        "0",
        "1",
        "3",
        "15",
        "16",
        "-1",
        "$",
        ">",
        "*",
        "0-0",
        "0-1",
        "1-1",
        "5-1",
        "1700000000013-1",
        "1700000000020-0",
        "18446744073709551615-18446744073709551615",
        "18446744073709551615",
        "99999999999999",
        "f",
        "v",
    ]);
    let arg = prop_oneof![
        8 => word.prop_map(|w| w.as_bytes().to_vec()),
        1 => prop::collection::vec(any::<u8>(), 0..20),
        1 => prop::collection::vec(any::<u8>(), 16..=16),
    ];
    (name, prop::collection::vec(arg, 0..10)).prop_map(|(n, args)| {
        let mut v = vec![n.as_bytes().to_vec()];
        v.extend(args);
        v
    })
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let flips = || prop::collection::vec((any::<Index>(), any::<u8>()), 1..4);
    prop_oneof![
        2 => any::<Index>().prop_map(Mutation::Truncate),
        2 => flips().prop_map(Mutation::Flip),
        1 => (any::<Index>(), 0u8..16, prop::collection::vec(any::<u8>(), 0..16))
            .prop_map(|(at, len, with)| Mutation::Splice { at, len, with }),
        1 => any::<Index>().prop_map(Mutation::DropRecord),
        1 => any::<Index>().prop_map(Mutation::DupRecord),
        2 => (any::<Index>(), command()).prop_map(|(i, c)| Mutation::ReplaceRecord(i, c)),
        2 => (any::<Index>(), command()).prop_map(|(i, c)| Mutation::InsertRecord(i, c)),
        3 => (any::<Index>(), flips()).prop_map(|(i, f)| Mutation::AlterPayload(i, f)),
    ]
}

/// The frames of `bytes[start..end]`, as payloads, and where valid framing stops.
fn split_records(bytes: &[u8], start: usize, end: usize) -> (Vec<Vec<u8>>, usize) {
    let mut out = Vec::new();
    let mut pos = start;
    while pos < end {
        match record::decode(&bytes[pos..end]) {
            record::Frame::Record { payload_len, size } => {
                out.push(
                    bytes[pos + record::HEADER_LEN..pos + record::HEADER_LEN + payload_len]
                        .to_vec(),
                );
                pos += size;
            }
            _ => break,
        }
    }
    (out, pos)
}

fn frame(out: &mut Vec<u8>, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&record::crc64(payload).to_le_bytes());
    out.extend_from_slice(payload);
}

fn payload_of(argv: &[Vec<u8>]) -> Vec<u8> {
    let mut b = Vec::new();
    record::encode(&mut b, argv);
    b.split_off(record::HEADER_LEN)
}

/// Applies `m` to `file`; `snapshot` files keep their header and trailer around the
/// records for record-level mutations.
fn apply(file: &mut Vec<u8>, m: &Mutation, snapshot: bool) {
    if let Mutation::Truncate(i) = m {
        let at = i.index(file.len() + 1);
        file.truncate(at);
        return;
    }
    if let Mutation::Flip(flips) = m {
        if !file.is_empty() {
            for (i, bit) in flips {
                let at = i.index(file.len());
                file[at] ^= 1 << (bit % 8);
            }
        }
        return;
    }
    if let Mutation::Splice { at, len, with } = m {
        let at = at.index(file.len() + 1);
        let end = (at + usize::from(*len)).min(file.len());
        file.splice(at..end, with.iter().copied());
        return;
    }
    let (head, end) = if snapshot {
        let h = snapshot::HEADER_LEN as usize;
        (
            h.min(file.len()),
            file.len()
                .saturating_sub(snapshot::TRAILER_LEN as usize)
                .max(h.min(file.len())),
        )
    } else {
        (0, file.len())
    };
    let (mut recs, good_end) = split_records(file, head, end);
    let rest = file[good_end..].to_vec();
    let pick = |i: &Index, n: usize| if n == 0 { None } else { Some(i.index(n)) };
    match m {
        Mutation::DropRecord(i) => {
            if let Some(k) = pick(i, recs.len()) {
                recs.remove(k);
            }
        }
        Mutation::DupRecord(i) => {
            if let Some(k) = pick(i, recs.len()) {
                recs.insert(k, recs[k].clone());
            }
        }
        Mutation::ReplaceRecord(i, argv) => match pick(i, recs.len()) {
            Some(k) => recs[k] = payload_of(argv),
            None => recs.push(payload_of(argv)),
        },
        Mutation::InsertRecord(i, argv) => {
            let k = i.index(recs.len() + 1);
            recs.insert(k, payload_of(argv));
        }
        Mutation::AlterPayload(i, flips) => {
            if let Some(k) = pick(i, recs.len()) {
                let p = &mut recs[k];
                for (j, bit) in flips {
                    let at = j.index(p.len());
                    p[at] ^= 1 << (bit % 8);
                }
            }
        }
        _ => unreachable!("byte mutations handled above"),
    }
    let mut out = file[..head].to_vec();
    for r in &recs {
        frame(&mut out, r);
    }
    out.extend_from_slice(&rest);
    *file = out;
}

/// Which seed a case starts from.
#[derive(Debug, Clone, Copy)]
enum Seed {
    Log,
    SnapV3,
    SnapV1,
}

fn seed_bytes(seed: Seed) -> Vec<u8> {
    corpus_file(match seed {
        Seed::Log => SEED_LOG,
        Seed::SnapV3 => SEED_SNAP_V3,
        Seed::SnapV1 => SEED_SNAP_V1,
    })
}

/// Feeds one file to every target.
fn run_case(file: &[u8]) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let loaded = bounded(file.len(), "snapshot loader", || load_snapshot(file));
    if let Ok(core) = loaded {
        assert_consistent(&core);
    }
    let loaded = bounded(file.len(), "log loader", || load_log(file));
    if let Ok(core) = loaded {
        assert_consistent(&core);
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let p = tmp.path().join("appendonly.1.incr.log");
    std::fs::write(&p, file).expect("write");
    let report = bounded(file.len(), "check-aof", || check::check(&p, false)).expect("check");
    let fixed = bounded(file.len(), "check-aof --fix", || check::check(&p, true)).expect("fix");
    assert!(
        !fixed.damaged || !report.damaged || is_snapshot(file),
        "{:?}",
        fixed.lines
    );
    if !is_snapshot(file) {
        let after = check::check(&p, false).expect("check after fix");
        assert!(
            !after.damaged,
            "still damaged after --fix: {:?}",
            after.lines
        );
    }
}

fn is_snapshot(file: &[u8]) -> bool {
    file.starts_with(snapshot::MAGIC)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        max_shrink_iters: 2000,
        ..ProptestConfig::default()
    })]

    /// Damaged logs: refused with an error, or cut at a torn tail and loaded consistently.
    #[test]
    fn damaged_logs_are_refused_or_load_consistently(
        muts in prop::collection::vec(mutation(), 1..4),
    ) {
        let mut f = seed_bytes(Seed::Log);
        for m in &muts {
            apply(&mut f, m, false);
        }
        run_case(&f);
    }

    /// Damaged snapshots of both versions, the CRC trailer recomputed in most cases.
    #[test]
    fn damaged_snapshots_are_refused_or_load_consistently(
        v1 in any::<bool>(),
        muts in prop::collection::vec(mutation(), 1..4),
        fix_crc in prop::bool::weighted(0.85),
    ) {
        let mut f = seed_bytes(if v1 { Seed::SnapV1 } else { Seed::SnapV3 });
        for m in &muts {
            apply(&mut f, m, true);
        }
        if fix_crc {
            fix_file_crc(&mut f);
        }
        run_case(&f);
    }

    /// Random bytes, with and without a snapshot header.
    #[test]
    fn random_files_are_refused_or_load_consistently(
        header in any::<bool>(),
        body in prop::collection::vec(any::<u8>(), 0..512),
    ) {
        let mut f = Vec::new();
        if header {
            f.extend_from_slice(snapshot::MAGIC);
            f.extend_from_slice(&2u32.to_le_bytes());
            f.extend_from_slice(&[0; 12]);
        }
        f.extend_from_slice(&body);
        if header {
            f.extend_from_slice(&[0xff; 12]);
            fix_file_crc(&mut f);
        }
        run_case(&f);
    }
}

// --- the corpus itself --------------------------------------------------------------------

/// The checked-in corpus is what the generator writes (so the seeds cover every record
/// form of this build), or is rewritten with `STREAMD_FUZZ_REGEN=1`.
#[test]
fn corpus_is_what_the_generator_writes() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let regen = std::env::var_os("STREAMD_FUZZ_REGEN").is_some();
    for (name, bytes) in generate_corpus() {
        let path = PathBuf::from(CORPUS).join(name);
        if regen {
            std::fs::create_dir_all(CORPUS).expect("mkdir");
            std::fs::write(&path, &bytes).expect("write corpus");
            continue;
        }
        let have = corpus_file(name);
        if name == SEED_LOG {
            assert!(
                have == bytes,
                "{name} differs from the generator's (STREAMD_FUZZ_REGEN=1 rewrites it)"
            );
        } else {
            // Keys are written in hash order: compare what the snapshots hold.
            let have = load_snapshot(&have).expect("checked-in snapshot");
            let want = load_snapshot(&bytes).expect("generated snapshot");
            assert_eq!(
                dump(&have, true),
                dump(&want, true),
                "{name} differs from the generator's (STREAMD_FUZZ_REGEN=1 rewrites it)"
            );
        }
    }
}

/// The seeds load, and all three give the same dataset (version 1 re-appends entries, so
/// its node layout differs); the seed log's dataset is the one the generator describes.
#[test]
fn the_seeds_load_to_the_same_dataset() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut from_log = load_log(&corpus_file(SEED_LOG)).expect("log");
    let v3 = load_snapshot(&corpus_file(SEED_SNAP_V3)).expect("v3");
    let v1 = load_snapshot(&corpus_file(SEED_SNAP_V1)).expect("v1");
    // Reclamation changes the node bytes and nothing else.
    let unreclaimed = dump(&from_log, false);
    reclaim_all(&mut from_log);
    assert_eq!(dump(&from_log, false), unreclaimed);
    assert_eq!(dump(&v3, true), dump(&from_log, true));
    assert_eq!(dump(&v1, false), dump(&from_log, false));
    let d = dump(&from_log, true);
    for want in [
        "db 0 key b\"bids\" len 181",
        "max_age_ms: 604800000, max_bytes: 10000000, refs: DelRef",
        "dlq Some(DeadLetter { key: [100, 101, 97, 100], max_deliveries: 3 })",
        "db 0 key b\"t\" len 1",
        "db 3 key b\"empty\" len 0",
        "db 15 key b\"last\"",
        "group g1 last 1700000000020-0 read Some(55)",
        "pel 1700000000014-2 None 0 3",
        "pel 1700000000016-2 Some(\"bob\") 1700000000050 2",
        "consumer alice 1700000000100 Some(1700000000090)",
    ] {
        assert!(d.contains(want), "{want:?} missing from\n{d}");
    }
    assert_eq!(d.matches("  node ").count(), 6, "{d}");
    // The snapshot seed holds a reclaimed node (and so does the log's dataset once the
    // reclamation pass ran).
    let reclaimed = |core: &Core| {
        core.dbs[0]
            .get_stream(b"bids")
            .is_some_and(|s| s.node_listpacks().any(|(_, lp)| lp.gone() > 0))
    };
    assert!(reclaimed(&v3) && reclaimed(&from_log));
    for core in [&from_log, &v3, &v1] {
        assert_consistent(core);
    }
}

// --- regressions: each crash or wrong answer the fuzzer found ----------------------------

/// A damaged record inside a transaction: `--fix` cut at the damaged record and left the
/// transaction's MULTI at the end, which the next check reported as a torn tail. The cut
/// now goes back to the MULTI.
#[test]
fn check_aof_fix_cuts_a_damaged_transaction_from_its_multi() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut log = Vec::new();
    record::encode(&mut log, &["XADD", "s", "1-1", "f", "v"]);
    let multi_at = log.len() as u64;
    record::encode(&mut log, &["MULTI"]);
    record::encode(&mut log, &["XADD", "s", "2-1", "f", "v"]);
    // A CRC-valid frame whose payload is not a RESP array.
    frame(&mut log, b"+XADD s 3-1 f v\r\n");
    record::encode(&mut log, &["EXEC"]);
    record::encode(&mut log, &["XADD", "s", "4-1", "f", "v"]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let p = tmp.path().join("appendonly.1.incr.log");
    std::fs::write(&p, &log).expect("write");
    let report = check::check(&p, false).expect("check");
    assert!(report.damaged);
    assert!(
        report.lines[0].contains(&format!("bad record at offset {multi_at} (1 good records")),
        "{:?}",
        report.lines
    );
    let fixed = check::check(&p, true).expect("fix");
    assert!(fixed.fixed, "{:?}", fixed.lines);
    assert_eq!(std::fs::metadata(&p).expect("stat").len(), multi_at);
    assert!(!check::check(&p, false).expect("check").damaged);
    let core = load_log(&std::fs::read(&p).expect("read")).expect("loads after --fix");
    assert!(dump(&core, false).contains("len 1 first 1-1 last 1-1"));
}

/// A snapshot whose file CRC is right but one node byte is wrong (written by a buggy
/// build, or damaged before the CRC was computed) is refused, naming the record, the
/// node and what is wrong with it.
#[test]
fn a_crc_valid_snapshot_with_a_damaged_node_is_refused() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let good = corpus_file(SEED_SNAP_V3);
    let h = snapshot::HEADER_LEN as usize;
    let (recs, _) = split_records(&good, h, good.len() - snapshot::TRAILER_LEN as usize);
    let k = (0..recs.len())
        .filter(|&i| recs[i].windows(13).any(|w| w == snapshot::NODES_RECORD))
        .max_by_key(|&i| recs[i].len())
        .expect("a node record");
    let mut refused = 0;
    // Every byte of the last 64 of the record: node bytes of its last node.
    for back in 3..67 {
        let mut recs = recs.clone();
        let p = &mut recs[k];
        let at = p.len() - back;
        p[at] ^= 0x40;
        let mut f = good[..h].to_vec();
        for r in &recs {
            frame(&mut f, r);
        }
        f.extend_from_slice(&good[good.len() - snapshot::TRAILER_LEN as usize..]);
        fix_file_crc(&mut f);
        match load_snapshot(&f) {
            Err(e) => {
                let msg = e.to_string();
                assert!(
                    msg.contains("STREAMD.NODES") && msg.contains("node "),
                    "{msg}"
                );
                refused += 1;
            }
            Ok(core) => assert_consistent(&core),
        }
    }
    assert!(refused > 10, "{refused} of 64 flips refused");
}

/// A MULTI inside a transaction (the loader refuses it): `--check-aof` took it for the
/// start of the transaction and `--fix` cut there, leaving the outer MULTI without EXEC.
/// Both it and an EXEC without MULTI are bad records now, cut from the outer MULTI.
#[test]
fn check_aof_treats_nested_multi_and_stray_exec_as_damage() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let p = tmp.path().join("appendonly.1.incr.log");
    for (bad, cut_to_first) in [(&["MULTI"][..], true), (&["EXEC"][..], false)] {
        let mut log = Vec::new();
        record::encode(&mut log, &["XADD", "s", "1-1", "f", "v"]);
        let first = log.len() as u64;
        if cut_to_first {
            record::encode(&mut log, &["MULTI"]);
        }
        let second = log.len() as u64;
        record::encode(&mut log, bad);
        record::encode(&mut log, &["XADD", "s", "2-1", "f", "v"]);
        record::encode(&mut log, &["EXEC"]);
        std::fs::write(&p, &log).expect("write");
        assert!(load_log(&log).is_err(), "{bad:?}: the loader refuses it");
        let report = check::check(&p, false).expect("check");
        assert!(report.damaged, "{bad:?}: {:?}", report.lines);
        assert!(check::check(&p, true).expect("fix").fixed);
        let want = if cut_to_first { first } else { second };
        assert_eq!(std::fs::metadata(&p).expect("stat").len(), want, "{bad:?}");
        assert!(!check::check(&p, false).expect("check").damaged);
        load_log(&std::fs::read(&p).expect("read")).expect("loads after --fix");
    }
}
