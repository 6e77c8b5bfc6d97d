//! A stream value in RDB form (types 15, 19, 21, 26 and 27; the layout is drawn in
//! `rdb/mod.rs`, the 26/27 additions with their sources in `rdb/payload.rs`): [`read`]
//! builds a [`Stream`] from it, [`write`] serializes one.
//!
//! Nodes convert one for one: a Redis node becomes a streamd node with the same master
//! ID, entries, tombstones and counts ([`Stream::push_node`]), and a streamd node is
//! written as the Redis node Redis itself would have built. A Redis node whose entries
//! are all tombstones (Redis removes such nodes, so only a foreign writer makes them) is
//! dropped: it holds nothing readable.
//!
//! Consumer groups are rebuilt through the group engine's own operations: a pending
//! entry is inserted as its owner's claim with the recorded delivery time and count
//! (oldest delivery first, so each insert is O(1)), then each consumer gets its recorded
//! seen and active times. A pending entry whose stream entry was deleted is kept, as
//! Redis keeps it. A type-27 group's NACK zone is rebuilt last, in its recorded order,
//! through XNACK's own operation: each entry becomes unowned with its recorded delivery
//! count and delivery time 0 (the time every NACKed entry has, in Redis and here).
//!
//! The IDMP block of types 26/27 becomes the stream's [`Idmp`] state: settings, lifetime
//! counters, and each producer's iids recorded oldest first (so eviction order is kept).
//! A block that says nothing beyond a plain stream — no producer, both counters 0, and
//! the settings a new stream gets from this server's `stream-idmp-duration` and
//! `stream-idmp-maxsize` (`IdmpDefaults`) — leaves the stream without IDMP state, as if
//! it had never used IDMP; XINFO shows the same either way.
//!
//! Which type [`write`] uses ([`encoding_for`]): the smallest that carries the whole
//! state, so that older Redis versions read as much as possible —
//! - 27 (Redis 8.8+) when a group has NACKed (unowned) pending entries;
//! - else 26 (Redis 8.6+) when the stream has IDMP state beyond the defaults (see above);
//! - else 21 (Redis 7.4+) when some consumer's active time differs from its seen time
//!   (a type-19 reader sets active = seen, as Redis 7.2+ does);
//! - else 19 (Redis 7.0+).

use super::listpack::{Builder, Decoder};
use super::packed::{DecodeError, Elem};
use super::types::{
    STREAM_LISTPACKS, STREAM_LISTPACKS_2, STREAM_LISTPACKS_3, STREAM_LISTPACKS_4,
    STREAM_LISTPACKS_5,
};
use super::{RdbError, Reader, write};
use crate::stream::group::{
    ClaimSpec, DeliveryCount, NackMode, StreamCounters, estimate_entries_read,
};
use crate::stream::idmp::{DURATION_MAX, DURATION_MIN, Idmp, MAXSIZE_MAX, MAXSIZE_MIN};
use crate::stream::listpack::{Listpack, Value};
use crate::stream::{Stream, StreamId};

/// The IDMP settings a new stream gets on this server (`stream-idmp-duration` seconds,
/// `stream-idmp-maxsize`; `Core::idmp_defaults`). A stream whose IDMP state is exactly
/// these settings with no producer and zero counters has nothing a type-19/21 payload
/// loses (module doc).
pub type IdmpDefaults = (i64, i64);

/// Entry flag: a tombstone.
const FLAG_DELETED: i64 = 1;
/// Entry flag: the entry's field names are the master entry's.
const FLAG_SAMEFIELDS: i64 = 2;
/// Capacity hint when growing a node while it is rebuilt (its final size is fitted).
const NODE_GROW_HINT: usize = 4096;

// ---------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------

/// Reads a stream value of RDB type `t` (15, 19, 21, 26 or 27); `defaults` decide
/// whether an IDMP block becomes state (module doc).
pub fn read(r: &mut Reader<'_>, t: u8, defaults: IdmpDefaults) -> Result<Stream, RdbError> {
    debug_assert!(matches!(
        t,
        STREAM_LISTPACKS
            | STREAM_LISTPACKS_2
            | STREAM_LISTPACKS_3
            | STREAM_LISTPACKS_4
            | STREAM_LISTPACKS_5
    ));
    let mut s = Stream::new();
    let nodes = r.length()?;
    for _ in 0..nodes {
        let key_at = r.offset();
        let key = r.string()?;
        let master = StreamId::from_key(&key).ok_or_else(|| RdbError {
            offset: key_at,
            what: "stream node key is not a 16-byte ID".into(),
        })?;
        let lp_at = r.offset();
        let bytes = r.string()?;
        let node = decode_node(master, &bytes).map_err(|e| RdbError {
            offset: lp_at,
            what: format!(
                "bad stream node: {} (byte {} of the node)",
                e.reason, e.offset
            )
            .into(),
        })?;
        if let Some(lp) = node
            && !s.push_listpack(master, lp)
        {
            return Err(RdbError {
                offset: key_at,
                what: "stream nodes overlap or are out of order".into(),
            });
        }
    }
    let at = r.offset();
    let length = r.length()?;
    if length != s.len() {
        return Err(RdbError {
            offset: at,
            what: format!(
                "stream length {length} but its nodes hold {} entries",
                s.len()
            )
            .into(),
        });
    }
    let at = r.offset();
    let last_id = id(r)?;
    if last_id < s.last_id() {
        return Err(RdbError {
            offset: at,
            what: "stream last ID is smaller than its last entry".into(),
        });
    }
    s.set_last_id(last_id);
    if t >= STREAM_LISTPACKS_2 {
        let _first_id = id(r)?; // recomputed from the nodes
        let max_deleted = id(r)?;
        let entries_added = r.length()?;
        s.set_max_deleted_entry_id(max_deleted);
        s.set_entries_added(entries_added);
    } else {
        // Redis 7 loading a 5.0/6.x stream: no tombstone knowledge, added = length.
        s.set_entries_added(length);
    }
    let groups = r.length()?;
    for _ in 0..groups {
        read_group(r, t, &mut s)?;
    }
    if t >= STREAM_LISTPACKS_4 {
        s.set_idmp(read_idmp(r, defaults)?);
    }
    Ok(s)
}

/// Reads the IDMP block of types 26/27 (layout in `rdb/payload.rs`); `None` when it
/// holds nothing beyond `defaults` (module doc).
fn read_idmp(r: &mut Reader<'_>, defaults: IdmpDefaults) -> Result<Option<Box<Idmp>>, RdbError> {
    let setting = |r: &mut Reader<'_>, lo: i64, hi: i64, what: &'static str| {
        let at = r.offset();
        let n = r.length()?;
        i64::try_from(n)
            .ok()
            .filter(|v| (lo..=hi).contains(v))
            .ok_or(RdbError {
                offset: at,
                what: what.into(),
            })
    };
    let duration = setting(r, DURATION_MIN, DURATION_MAX, "IDMP duration out of range")?;
    let maxsize = setting(r, MAXSIZE_MIN, MAXSIZE_MAX, "IDMP maxsize out of range")?;
    let mut idmp = Box::new(Idmp::new(duration, maxsize));
    let producers = r.length()?;
    let mut pids = std::collections::HashSet::new();
    for _ in 0..producers {
        let at = r.offset();
        let pid = r.string()?.into_owned();
        if pid.is_empty() {
            return Err(RdbError {
                offset: at,
                what: "empty IDMP producer ID".into(),
            });
        }
        if !pids.insert(pid.clone()) {
            return Err(RdbError {
                offset: at,
                what: "duplicate IDMP producer".into(),
            });
        }
        let n = r.length()?;
        let mut iids = std::collections::HashSet::new();
        for _ in 0..n {
            let at = r.offset();
            let iid = r.string()?;
            if iid.is_empty() || !iids.insert(iid.clone()) {
                return Err(RdbError {
                    offset: at,
                    what: "empty or duplicate IDMP iid".into(),
                });
            }
            let entry = id(r)?;
            idmp.record(&pid, &iid, entry, false);
        }
    }
    let added = r.length()?;
    let duplicates = r.length()?;
    idmp.set_counters(added, duplicates);
    let plain = !idmp.has_producers()
        && added == 0
        && duplicates == 0
        && (i64::from(idmp.duration()), i64::from(idmp.maxsize())) == defaults;
    Ok((!plain).then_some(idmp))
}

fn id(r: &mut Reader<'_>) -> Result<StreamId, RdbError> {
    Ok(StreamId::new(r.length()?, r.length()?))
}

/// A pending entry as read, until its owner is known.
struct Pending {
    id: StreamId,
    delivery_time: u64,
    delivery_count: u64,
    owner: Option<usize>,
    /// In the NACK zone (type 27).
    nacked: bool,
}

fn read_group(r: &mut Reader<'_>, t: u8, s: &mut Stream) -> Result<(), RdbError> {
    let name_at = r.offset();
    let name = r.string()?.into_owned();
    let last_id = id(r)?;
    let entries_read = if t >= STREAM_LISTPACKS_2 {
        // u64::MAX is Redis's -1, "unknown"; anything beyond i64 is treated the same.
        let n = r.length()?;
        (i64::try_from(n).is_ok()).then_some(n)
    } else {
        let c = StreamCounters {
            length: s.len(),
            last_id: s.last_id(),
            first_id: s.first_id(),
            max_deleted_entry_id: s.max_deleted_entry_id(),
            entries_added: s.entries_added(),
        };
        estimate_entries_read(&c, last_id)
    };
    if !s.groups_mut().create(&name, last_id, entries_read) {
        return Err(RdbError {
            offset: name_at,
            what: "duplicate consumer group name".into(),
        });
    }
    let n = r.length()?;
    let mut pel: Vec<Pending> = Vec::new();
    for _ in 0..n {
        let at = r.offset();
        let id = r.raw_id()?;
        let time = r.ms_time()?;
        let count = r.length()?;
        if pel.last().is_some_and(|p| p.id >= id) {
            return Err(RdbError {
                offset: at,
                what: "group PEL entries duplicated or out of order".into(),
            });
        }
        pel.push(Pending {
            id,
            delivery_time: u64::try_from(time).unwrap_or(0),
            delivery_count: count,
            owner: None,
            nacked: false,
        });
    }
    let n = r.length()?;
    let mut consumers: Vec<(Vec<u8>, u64, Option<u64>)> = Vec::new();
    let mut names = std::collections::HashSet::new();
    for ci in 0..n {
        let at = r.offset();
        let cname = r.string()?.into_owned();
        if !names.insert(cname.clone()) {
            return Err(RdbError {
                offset: at,
                what: "duplicate consumer name in a group".into(),
            });
        }
        let seen = u64::try_from(r.ms_time()?).unwrap_or(0);
        let active = if t >= STREAM_LISTPACKS_3 {
            u64::try_from(r.ms_time()?).ok()
        } else {
            // What Redis 7.2+ does without the field: the best estimate is seen time.
            Some(seen)
        };
        let owned = r.length()?;
        for _ in 0..owned {
            let at = r.offset();
            let id = r.raw_id()?;
            let Ok(i) = pel.binary_search_by(|p| p.id.cmp(&id)) else {
                return Err(RdbError {
                    offset: at,
                    what: "consumer PEL entry not found in the group PEL".into(),
                });
            };
            if pel[i].owner.is_some() {
                return Err(RdbError {
                    offset: at,
                    what: "pending entry owned twice".into(),
                });
            }
            pel[i].owner = Some(ci as usize);
        }
        consumers.push((cname, seen, active));
    }
    // Type 27: the NACK zone, unowned pending entries in the order they were NACKed.
    let mut nacked: Vec<usize> = Vec::new();
    if t >= STREAM_LISTPACKS_5 {
        let n = r.length()?;
        for _ in 0..n {
            let at = r.offset();
            let id = r.raw_id()?;
            let Ok(i) = pel.binary_search_by(|p| p.id.cmp(&id)) else {
                return Err(RdbError {
                    offset: at,
                    what: "NACK zone entry not found in the group PEL".into(),
                });
            };
            if pel[i].owner.is_some() || pel[i].nacked {
                return Err(RdbError {
                    offset: at,
                    what: "NACK zone entry owned by a consumer or listed twice".into(),
                });
            }
            pel[i].nacked = true;
            nacked.push(i);
        }
    }
    if pel.iter().any(|p| p.owner.is_none() && !p.nacked) {
        return Err(RdbError {
            offset: r.offset(),
            what: "group PEL entry without a consumer".into(),
        });
    }
    // Indexes into `pel` before it is re-sorted by delivery time below.
    let zone: Vec<(StreamId, u64)> = nacked
        .iter()
        .map(|&i| (pel[i].id, pel[i].delivery_count))
        .collect();
    let mut g = s
        .group_mut(&name)
        .ok_or_else(|| r.err("group vanished while loading"))?;
    let ids: Vec<_> = consumers
        .iter()
        .map(|(cname, seen, _)| g.get_or_create_consumer(cname, *seen).0)
        .collect();
    // Oldest delivery first: each insert lands at the time list's tail.
    pel.sort_by_key(|p| (p.delivery_time, p.id));
    for p in &pel {
        let Some(owner) = p.owner.and_then(|o| ids.get(o)) else {
            continue;
        };
        let spec = ClaimSpec {
            min_idle: 0,
            delivery_time: p.delivery_time,
            count: DeliveryCount::Set(p.delivery_count),
            force: true,
        };
        g.claim(*owner, p.id, &spec, p.delivery_time);
    }
    for (id, count) in zone {
        g.nack(id, NackMode::Fail, Some(count), true);
    }
    for ((_, seen, active), cid) in consumers.iter().zip(&ids) {
        g.set_consumer_times(*cid, *seen, *active);
    }
    Ok(())
}

/// A Redis listpack element as a node element: integers stay integers (no decimal text
/// to format and parse again), strings are classified as streamd stores them (an
/// integer's canonical text becomes the integer, as Redis's own encoder would have made
/// it).
fn node_value(e: Elem<'_>) -> Value<'_> {
    match e {
        Elem::Str(s) => Value::classify(s),
        Elem::Int(i) => Value::Int(i),
    }
}

/// Rebuilds one Redis node as a streamd node; `None` when it has no live entry.
fn decode_node(master: StreamId, bytes: &[u8]) -> Result<Option<Listpack>, DecodeError> {
    let mut d = Decoder::new(bytes)?;
    let bad = |d: &Decoder<'_>, reason| super::packed::bad(d.offset(), reason);
    let count = d.expect_int()?;
    let deleted = d.expect_int()?;
    let nfields = d.expect_int()?;
    if count < 0 || deleted < 0 || nfields < 0 {
        return bad(&d, "negative count in the master entry");
    }
    let mut master_fields: Vec<Value<'_>> = Vec::new();
    for _ in 0..nfields {
        master_fields.push(node_value(d.expect()?));
    }
    if d.expect_int()? != 0 {
        return bad(&d, "master entry not closed by 0");
    }
    let mut lp: Option<Listpack> = None;
    let (mut live, mut dead) = (0i64, 0i64);
    let mut prev: Option<StreamId> = None;
    let mut tombstones: Vec<usize> = Vec::new();
    let mut elements: Vec<Value<'_>> = Vec::new();
    let mut ordinal = 0usize;
    while !d.at_end() {
        let flags = d.expect_int()?;
        if !(0..=3).contains(&flags) {
            return bad(&d, "unknown entry flags");
        }
        let ms = master.ms.wrapping_add(d.expect_int()? as u64);
        let seq = master.seq.wrapping_add(d.expect_int()? as u64);
        let id = StreamId::new(ms, seq);
        match prev {
            None if id != master => return bad(&d, "first entry's ID is not the master ID"),
            Some(p) if id <= p => return bad(&d, "entry IDs not increasing"),
            _ => {}
        }
        prev = Some(id);
        elements.clear();
        let pairs = if flags & FLAG_SAMEFIELDS != 0 {
            for f in &master_fields {
                elements.push(*f);
                elements.push(node_value(d.expect()?));
            }
            master_fields.len()
        } else {
            let n = d.expect_int()?;
            if n <= 0 || n as u64 > bytes.len() as u64 {
                return bad(&d, "bad entry field count");
            }
            for _ in 0..n {
                elements.push(node_value(d.expect()?));
                elements.push(node_value(d.expect()?));
            }
            n as usize
        };
        if pairs == 0 {
            return bad(&d, "entry without fields");
        }
        let lp_count = if flags & FLAG_SAMEFIELDS != 0 {
            pairs + 3
        } else {
            2 * pairs + 4
        };
        if d.expect_int()? != lp_count as i64 {
            return bad(&d, "entry lp-count disagrees with its elements");
        }
        match &mut lp {
            None => {
                let same = elements
                    .iter()
                    .step_by(2)
                    .zip(&master_fields)
                    .all(|(a, b)| a == b);
                if !same || pairs != master_fields.len() {
                    return bad(&d, "first entry's fields are not the master fields");
                }
                let mut first = Listpack::from_values(&elements);
                // Our encoding of a node is no larger than Redis's, bar a few bytes.
                first.reserve_total(bytes.len() + 64);
                lp = Some(first);
            }
            Some(lp) => lp.append_values(
                master,
                id,
                &elements,
                NODE_GROW_HINT,
                flags & FLAG_SAMEFIELDS != 0,
            ),
        }
        if flags & FLAG_DELETED != 0 {
            dead += 1;
            tombstones.push(ordinal);
        } else {
            live += 1;
        }
        ordinal += 1;
    }
    if d.next_elem()?.is_some() {
        return bad(&d, "data after the last entry");
    }
    let Some(mut lp) = lp else {
        return bad(&d, "stream node without entries");
    };
    if live != count || dead != deleted {
        return bad(&d, "master entry counts disagree with the entries");
    }
    if live == 0 {
        return Ok(None);
    }
    if !tombstones.is_empty() {
        let starts: Vec<usize> = lp
            .entries(master)
            .enumerate()
            .filter(|(i, _)| tombstones.binary_search(i).is_ok())
            .map(|(_, e)| e.start)
            .collect();
        for start in starts {
            lp.mark_deleted(start);
        }
    }
    Ok(Some(lp))
}

// ---------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------

/// True when `s` has IDMP state a type-19/21 payload would lose: producers, non-zero
/// counters, or settings other than `defaults` (module doc).
pub fn has_idmp_state(s: &Stream, defaults: IdmpDefaults) -> bool {
    s.idmp().is_some_and(|i| {
        i.has_producers()
            || i.iids_added() != 0
            || i.iids_duplicates() != 0
            || (i64::from(i.duration()), i64::from(i.maxsize())) != defaults
    })
}

/// The smallest type that carries all of `s` (19, 21, 26 or 27; module doc).
pub fn encoding_for(s: &Stream, defaults: IdmpDefaults) -> u8 {
    if s.groups().iter().any(|g| g.nacked_count() > 0) {
        return STREAM_LISTPACKS_5;
    }
    if has_idmp_state(s, defaults) {
        return STREAM_LISTPACKS_4;
    }
    let active_differs = s.groups().iter().any(|g| {
        g.consumers()
            .any(|(_, c)| c.active_time() != Some(c.seen_time()))
    });
    if active_differs {
        STREAM_LISTPACKS_3
    } else {
        STREAM_LISTPACKS_2
    }
}

/// Appends `s` as a stream value of type `t` (from [`encoding_for`]: 19, 21, 26 or 27).
/// A type-26/27 IDMP block of a stream without IDMP state records `defaults` and no
/// producer, which reads back as no state.
pub fn write(out: &mut Vec<u8>, s: &Stream, t: u8, defaults: IdmpDefaults) {
    // Cold nodes (tiering) are read back one at a time; one that cannot be read is
    // left out (the loader logs and counts it), so the count is taken as written.
    let mut nodes = Vec::new();
    let mut count = 0u64;
    s.for_each_node(|master, lp| {
        write::string(&mut nodes, &master.to_key());
        write::string(&mut nodes, &encode_node(master, lp));
        count += 1;
    });
    write::len(out, count);
    out.extend_from_slice(&nodes);
    write_after_nodes(out, s, t, defaults);
}

/// [`write`] for a stream that may be far larger than memory (a tiered stream's cold
/// history): each node is appended to `out` as it is read, and `spill` is handed `out`
/// (to send and empty it) whenever it holds [`SPILL_BYTES`]. The node count goes first,
/// so a cold node that cannot be read is an error here, not a node left out.
pub fn write_spilling(
    out: &mut Vec<u8>,
    s: &Stream,
    t: u8,
    defaults: IdmpDefaults,
    spill: &mut dyn FnMut(&mut Vec<u8>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let expected = s.node_count() as u64;
    write::len(out, expected);
    let mut count = 0u64;
    let mut failed = None;
    s.for_each_node(|master, lp| {
        if failed.is_some() {
            return;
        }
        write::string(out, &master.to_key());
        write::string(out, &encode_node(master, lp));
        count += 1;
        if out.len() >= SPILL_BYTES
            && let Err(e) = spill(out)
        {
            failed = Some(e);
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    if count != expected {
        return Err(std::io::Error::other(format!(
            "{} of the stream's {expected} nodes could not be read back",
            expected - count
        )));
    }
    write_after_nodes(out, s, t, defaults);
    Ok(())
}

/// How many bytes [`write_spilling`] gathers before handing them on.
pub const SPILL_BYTES: usize = 256 * 1024;

/// What follows the nodes in a stream value: length, IDs, groups, IDMP state.
fn write_after_nodes(out: &mut Vec<u8>, s: &Stream, t: u8, defaults: IdmpDefaults) {
    write::len(out, s.len());
    write_id(out, s.last_id());
    write_id(out, s.first_id());
    write_id(out, s.max_deleted_entry_id());
    write::len(out, s.entries_added());
    write::len(out, s.groups().len() as u64);
    for g in s.groups().iter() {
        write::string(out, g.name());
        write_id(out, g.last_id());
        write::len(out, g.entries_read().unwrap_or(u64::MAX));
        write::len(out, g.pel_count() as u64);
        for p in g.pel_range(StreamId::MIN, StreamId::MAX) {
            out.extend_from_slice(&p.id.to_key());
            write::ms_time(out, p.delivery_time as i64);
            write::len(out, p.delivery_count);
        }
        write::len(out, g.consumer_count() as u64);
        for (cid, c) in g.consumers() {
            write::string(out, c.name());
            write::ms_time(out, c.seen_time() as i64);
            if t >= STREAM_LISTPACKS_3 {
                write::ms_time(out, c.active_time().map_or(-1, |a| a as i64));
            }
            write::len(out, c.pel_count() as u64);
            for p in g.consumer_pel(cid, StreamId::MIN, StreamId::MAX) {
                out.extend_from_slice(&p.id.to_key());
            }
        }
        if t >= STREAM_LISTPACKS_5 {
            // The delivery-time list starts with the NACK zone, in NACK order.
            let n = g.nacked_count();
            write::len(out, n as u64);
            for p in g.by_time().take(n) {
                out.extend_from_slice(&p.id.to_key());
            }
        }
    }
    if t >= STREAM_LISTPACKS_4 {
        write_idmp(out, s, defaults);
    }
}

/// The IDMP block of types 26/27 (layout in `rdb/payload.rs`).
fn write_idmp(out: &mut Vec<u8>, s: &Stream, defaults: IdmpDefaults) {
    let Some(i) = s.idmp() else {
        // Settings are validated into u32 ranges when configured; clamp for the write.
        let clamp = |v: i64, lo: i64, hi: i64| v.clamp(lo, hi) as u64;
        write::len(out, clamp(defaults.0, DURATION_MIN, DURATION_MAX));
        write::len(out, clamp(defaults.1, MAXSIZE_MIN, MAXSIZE_MAX));
        write::len(out, 0); // producers
        write::len(out, 0); // iids added
        write::len(out, 0); // iids duplicates
        return;
    };
    write::len(out, u64::from(i.duration()));
    write::len(out, u64::from(i.maxsize()));
    let producers = i.producers();
    write::len(out, producers.len() as u64);
    for (pid, iids) in producers {
        write::string(out, pid);
        write::len(out, iids.len() as u64);
        for (iid, entry) in iids {
            write::string(out, iid);
            write_id(out, entry);
        }
    }
    write::len(out, i.iids_added());
    write::len(out, i.iids_duplicates());
}

fn write_id(out: &mut Vec<u8>, id: StreamId) {
    write::len(out, id.ms);
    write::len(out, id.seq);
}

/// Appends an element of a streamd node: its strings are never canonical integer text
/// (the node stores those as integers), so they go in as strings without the check.
fn put_value(b: &mut Builder, v: Value<'_>) {
    match v {
        Value::Int(i) => b.int(i),
        Value::Str(s) => b.text(s),
    }
}

/// One streamd node as the Redis listpack `streamAppendItem` would have built: the
/// master entry holds the node's master field names, and an entry flagged SAMEFIELDS in
/// the node (the same rule as Redis's) stores only its values. The node knows the size
/// of that encoding ([`Listpack::redis_bytes`]), so the buffer is allocated once.
fn encode_node(master: StreamId, lp: &Listpack) -> Vec<u8> {
    let m = lp.master();
    let mut b = Builder::with_capacity(lp.redis_bytes() + 16);
    b.int(lp.live() as i64);
    b.int(lp.deleted() as i64);
    let fields = lp.master_fields(&m);
    b.int(fields.len() as i64);
    for f in fields {
        put_value(&mut b, f);
    }
    b.int(0);
    for e in lp.entries(master) {
        let pairs = e.pairs();
        let mut flags = 0;
        if e.is_deleted() {
            flags |= FLAG_DELETED;
        }
        if e.same_fields() {
            flags |= FLAG_SAMEFIELDS;
        }
        b.int(flags);
        b.int(e.id.ms.wrapping_sub(master.ms) as i64);
        b.int(e.id.seq.wrapping_sub(master.seq) as i64);
        // Redis's entry: [num-fields, fields...] only without SAMEFIELDS, the values, then
        // lp-count, the entry's element count.
        if !e.same_fields() {
            b.int(pairs as i64);
        }
        for v in lp.stored(&e) {
            put_value(&mut b, v);
        }
        b.int(if e.same_fields() {
            pairs as i64 + 3
        } else {
            2 * pairs as i64 + 4
        });
    }
    b.finish()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::stream::NodeLimits;
    use bytes::Bytes;

    const D: IdmpDefaults = (100, 100);

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn sample() -> Stream {
        let mut s = Stream::new();
        let limits = NodeLimits {
            max_bytes: 4096,
            max_entries: 3,
        };
        for i in 1..=10u64 {
            let fields = if i % 4 == 0 {
                vec![b("other"), b(&i.to_string())]
            } else {
                vec![
                    b("name"),
                    b(&format!("v{i}")),
                    b("n"),
                    b(&(i * 1000).to_string()),
                ]
            };
            s.append(StreamId::new(100 + i, i % 3), &fields, &limits);
        }
        s.delete(StreamId::new(102, 2));
        s.delete(StreamId::new(105, 2));
        s.groups_mut().create(b"g", StreamId::new(106, 0), Some(6));
        let mut g = s.group_mut(b"g").expect("group");
        let (alice, _) = g.get_or_create_consumer(b"alice", 50);
        let (_bob, _) = g.get_or_create_consumer(b"bob", 60);
        g.deliver(alice, StreamId::new(101, 1), 70);
        g.deliver(alice, StreamId::new(103, 0), 80);
        g.set_consumer_times(alice, 80, Some(80));
        s
    }

    /// Every entry with its elements, length, radix-tree keys, last, first and
    /// max-deleted IDs, entries added: what a round trip keeps of a stream besides its
    /// groups and IDMP state.
    pub(crate) type StreamView = (
        Vec<(StreamId, Vec<Vec<u8>>)>,
        u64,
        usize,
        StreamId,
        StreamId,
        StreamId,
        u64,
    );

    /// A stream's entries and metadata as comparable values.
    pub(crate) fn stream_view(s: &Stream) -> StreamView {
        (
            s.range(StreamId::MIN, StreamId::MAX, false)
                .map(|e| (e.id, e.elements().map(|v| v.to_vec()).collect()))
                .collect(),
            s.len(),
            s.radix_tree_keys(),
            s.last_id(),
            s.first_id(),
            s.max_deleted_entry_id(),
            s.entries_added(),
        )
    }

    /// A group's consumers with their seen and active times.
    pub(crate) fn consumer_times(
        g: &crate::stream::group::ConsumerGroup,
    ) -> Vec<(Vec<u8>, u64, Option<u64>)> {
        g.consumers()
            .map(|(_, c)| (c.name().to_vec(), c.seen_time(), c.active_time()))
            .collect()
    }

    /// `s` written as type `t` and read back whole; written again, the stream read back
    /// gives the same bytes (nodes included).
    fn round_trip(s: &Stream, t: u8) -> Stream {
        let mut out = Vec::new();
        write(&mut out, s, t, D);
        let mut r = Reader::new(&out, 0);
        let back = read(&mut r, t, D).expect("reads back");
        assert_eq!(r.remaining(), 0);
        let mut again = Vec::new();
        write(&mut again, &back, t, D);
        assert_eq!(again, out, "a second round writes the same bytes");
        back
    }

    #[test]
    fn write_then_read_keeps_entries_nodes_and_groups() {
        let s = sample();
        let t = encoding_for(&s, D);
        // bob was never active: his active time differs from his seen time.
        assert_eq!(t, STREAM_LISTPACKS_3);
        let back = round_trip(&s, t);
        assert_eq!(stream_view(&back), stream_view(&s));
        let (g0, g1) = (
            s.groups().get(b"g").unwrap(),
            back.groups().get(b"g").unwrap(),
        );
        assert_eq!(g1.last_id(), g0.last_id());
        assert_eq!(g1.entries_read(), g0.entries_read());
        assert_eq!(pel_view(g1), pel_view(g0));
        assert_eq!(consumer_times(g1), consumer_times(g0));
    }

    #[test]
    fn type_19_when_active_equals_seen_and_27_with_nacks() {
        let mut s = sample();
        {
            let mut g = s.group_mut(b"g").unwrap();
            let bob = g.consumer_id(b"bob").unwrap();
            g.set_consumer_times(bob, 60, Some(60));
        }
        assert_eq!(encoding_for(&s, D), STREAM_LISTPACKS_2);
        {
            let mut g = s.group_mut(b"g").unwrap();
            g.nack(
                StreamId::new(101, 1),
                crate::stream::group::NackMode::Fail,
                None,
                false,
            );
        }
        assert_eq!(encoding_for(&s, D), STREAM_LISTPACKS_5);
    }

    #[test]
    fn type_15_from_redis_5_and_6_reads_with_redis_7_defaults() {
        let mut src = Stream::new();
        for i in 1..=3u64 {
            src.append(
                StreamId::new(i, 0),
                &[b("f"), b("v")],
                &NodeLimits::default(),
            );
        }
        src.delete(StreamId::new(2, 0));
        let mut out = Vec::new();
        write::len(&mut out, 1);
        let (master, lp) = src.node_listpacks().next().expect("one node");
        write::string(&mut out, &master.to_key());
        write::string(&mut out, &encode_node(master, lp));
        write::len(&mut out, 2);
        write_id(&mut out, StreamId::new(3, 0));
        write::len(&mut out, 1); // one group, no entries-read field in type 15
        write::string(&mut out, b"g");
        write_id(&mut out, StreamId::new(1, 0));
        write::len(&mut out, 1);
        out.extend_from_slice(&StreamId::new(1, 0).to_key());
        write::ms_time(&mut out, 500);
        write::len(&mut out, 2);
        write::len(&mut out, 1);
        write::string(&mut out, b"alice");
        write::ms_time(&mut out, 600); // seen time, no active time in type 15
        write::len(&mut out, 1);
        out.extend_from_slice(&StreamId::new(1, 0).to_key());
        let mut r = Reader::new(&out, 0);
        let s = read(&mut r, STREAM_LISTPACKS, D).expect("type 15 reads");
        assert_eq!(r.remaining(), 0);
        assert_eq!(s.len(), 2);
        // Redis 7 loading type 15: entries added = length, no known deletions.
        assert_eq!(s.entries_added(), 2);
        assert_eq!(s.max_deleted_entry_id(), StreamId::MIN);
        let g = s.groups().get(b"g").expect("group");
        // Estimated: 1-0 is the first entry, so one entry was read.
        assert_eq!(g.entries_read(), Some(1));
        let p = g.pending(StreamId::new(1, 0)).expect("pending");
        assert_eq!(
            (p.delivery_time, p.delivery_count, p.owner),
            (500, 2, Some(&b"alice"[..]))
        );
        let c = g.consumer_by_name(b"alice").expect("consumer");
        assert_eq!((c.seen_time(), c.active_time()), (600, Some(600)));
    }

    #[test]
    fn every_truncation_is_refused_without_panic() {
        let s = sample();
        let mut out = Vec::new();
        write(&mut out, &s, STREAM_LISTPACKS_3, D);
        for cut in 0..out.len() {
            let mut r = Reader::new(&out[..cut], 0);
            assert!(read(&mut r, STREAM_LISTPACKS_3, D).is_err(), "cut {cut}");
        }
        for i in 0..out.len() {
            let mut bad = out.clone();
            bad[i] ^= 0x55;
            let mut r = Reader::new(&bad, 0);
            let _ = read(&mut r, STREAM_LISTPACKS_3, D);
        }
    }

    // --- types 26 and 27 ------------------------------------------------------------

    /// A group's PEL as comparable values: ID, delivery time and count, owner.
    pub(crate) fn pel_view(
        g: &crate::stream::group::ConsumerGroup,
    ) -> Vec<(StreamId, u64, u64, Option<Vec<u8>>)> {
        g.pel_range(StreamId::MIN, StreamId::MAX)
            .map(|p| {
                (
                    p.id,
                    p.delivery_time,
                    p.delivery_count,
                    p.owner.map(<[u8]>::to_vec),
                )
            })
            .collect()
    }

    /// A group's pending IDs in delivery-time order (the NACK zone first).
    pub(crate) fn time_order(g: &crate::stream::group::ConsumerGroup) -> Vec<StreamId> {
        g.by_time().map(|p| p.id).collect()
    }

    /// Duration, maxsize, iids added, duplicates, tracked, and every producer's iids.
    pub(crate) type IdmpView = (
        u32,
        u32,
        u64,
        u64,
        u64,
        Vec<(Vec<u8>, Vec<(Vec<u8>, StreamId)>)>,
    );

    /// A stream's IDMP state as comparable values.
    pub(crate) fn idmp_view(s: &Stream) -> Option<IdmpView> {
        s.idmp().map(|i| {
            (
                i.duration(),
                i.maxsize(),
                i.iids_added(),
                i.iids_duplicates(),
                i.iids_tracked(),
                i.producers()
                    .into_iter()
                    .map(|(pid, iids)| {
                        (
                            pid.to_vec(),
                            iids.into_iter()
                                .map(|(iid, id)| (iid.to_vec(), id))
                                .collect(),
                        )
                    })
                    .collect(),
            )
        })
    }

    /// `sample()` with NACKed entries (one of them forced, its entry never delivered)
    /// and IDMP state.
    fn sample_8x() -> Stream {
        let mut s = sample();
        {
            let mut g = s.group_mut(b"g").unwrap();
            g.nack(StreamId::new(103, 0), NackMode::Fatal, None, false);
            g.nack(StreamId::new(101, 1), NackMode::Silent, None, false);
            g.nack(StreamId::new(104, 1), NackMode::Fail, Some(7), true);
        }
        let i = s.idmp_mut((100, 100));
        i.configure(Some(30), Some(2));
        i.record(b"p1", b"a", StreamId::new(101, 1), true);
        i.record(b"p1", b"b", StreamId::new(103, 0), true);
        i.record(b"p1", b"c", StreamId::new(104, 1), true); // evicts "a" (maxsize 2)
        i.record(b"p0", b"\x00bin", StreamId::new(110, 1), true);
        i.note_duplicate();
        s
    }

    #[test]
    fn nacked_entries_and_idmp_state_round_trip_in_type_27() {
        let s = sample_8x();
        let t = encoding_for(&s, D);
        assert_eq!(t, STREAM_LISTPACKS_5);
        let back = round_trip(&s, t);
        let (g0, g1) = (
            s.groups().get(b"g").unwrap(),
            back.groups().get(b"g").unwrap(),
        );
        assert_eq!(g1.nacked_count(), 3);
        assert_eq!(pel_view(g1), pel_view(g0));
        // The NACK zone keeps its order (103-0, 101-1, 104-1), then oldest delivery.
        assert_eq!(time_order(g1), time_order(g0));
        assert_eq!(
            time_order(g1)[..3],
            [
                StreamId::new(103, 0),
                StreamId::new(101, 1),
                StreamId::new(104, 1)
            ]
        );
        assert_eq!(idmp_view(&back), idmp_view(&s));
        assert_eq!(
            idmp_view(&back).map(|v| (v.0, v.1, v.2, v.3)),
            Some((30, 2, 4, 1))
        );
    }

    #[test]
    fn the_smallest_type_is_chosen() {
        let mut s = sample();
        {
            let mut g = s.group_mut(b"g").unwrap();
            let bob = g.consumer_id(b"bob").unwrap();
            g.set_consumer_times(bob, 60, Some(60));
        }
        assert_eq!(encoding_for(&s, D), STREAM_LISTPACKS_2);
        // IDMP state equal to this server's defaults with nothing recorded is no state.
        s.idmp_mut((100, 100));
        assert_eq!(encoding_for(&s, D), STREAM_LISTPACKS_2);
        assert_eq!(encoding_for(&s, (50, 100)), STREAM_LISTPACKS_4);
        s.idmp_mut(D).set_counters(0, 1);
        assert_eq!(encoding_for(&s, D), STREAM_LISTPACKS_4);
        s.group_mut(b"g")
            .unwrap()
            .nack(StreamId::new(101, 1), NackMode::Fail, None, false);
        assert_eq!(encoding_for(&s, D), STREAM_LISTPACKS_5);
    }

    #[test]
    fn a_type_27_stream_without_idmp_state_reads_back_without_it() {
        let mut s = sample();
        s.group_mut(b"g")
            .unwrap()
            .nack(StreamId::new(101, 1), NackMode::Fail, None, false);
        for defaults in [D, (7, 9)] {
            let mut out = Vec::new();
            write(&mut out, &s, STREAM_LISTPACKS_5, defaults);
            let mut r = Reader::new(&out, 0);
            let back = read(&mut r, STREAM_LISTPACKS_5, defaults).expect("reads");
            assert!(back.idmp().is_none());
            // Read with other defaults, the recorded settings are kept as state.
            let mut r = Reader::new(&out, 0);
            let other = read(&mut r, STREAM_LISTPACKS_5, (8, 9)).expect("reads");
            assert_eq!(
                idmp_view(&other),
                Some((defaults.0 as u32, defaults.1 as u32, 0, 0, 0, vec![]))
            );
        }
    }

    /// A stream of three entries 1-0, 2-0, 3-0 (field `f`, value `v`) as a type-19 value
    /// without its trailing group count, for hand-built type 26/27 values.
    fn three_entries() -> Vec<u8> {
        let mut s = Stream::new();
        for ms in 1..=3 {
            s.append(
                StreamId::new(ms, 0),
                &[b("f"), b("v")],
                &NodeLimits::default(),
            );
        }
        let mut out = Vec::new();
        write(&mut out, &s, STREAM_LISTPACKS_2, D);
        assert_eq!(out.pop(), Some(0), "no groups");
        out
    }

    /// A raw 16-byte ID (PELs, consumer PELs, the NACK zone): ms then seq, big-endian.
    fn raw(ms: u8, seq: u8) -> Vec<u8> {
        let mut v = vec![0; 16];
        v[7] = ms;
        v[15] = seq;
        v
    }

    /// The bytes of a type-27 value by hand, following the layout in `rdb/payload.rs`.
    fn hand_built_27() -> Vec<u8> {
        let mut v = three_entries();
        v.extend_from_slice(&[1, 1, b'g', 3, 0, 3]); // 1 group "g", last 3-0, read 3
        v.push(3); // PEL: 1-0 at 1000 ×1, 2-0 at 0 ×2, 3-0 at 0 ×1
        for (ms, time, count) in [(1u8, 1000i64, 1u8), (2, 0, 2), (3, 0, 1)] {
            v.extend_from_slice(&raw(ms, 0));
            v.extend_from_slice(&time.to_le_bytes());
            v.push(count);
        }
        v.extend_from_slice(&[1, 1, b'c']); // 1 consumer "c"
        v.extend_from_slice(&1000i64.to_le_bytes()); // seen
        v.extend_from_slice(&1500i64.to_le_bytes()); // active
        v.push(1); // owns 1-0
        v.extend_from_slice(&raw(1, 0));
        v.push(2); // NACK zone: 3-0, then 2-0
        v.extend_from_slice(&raw(3, 0));
        v.extend_from_slice(&raw(2, 0));
        // IDMP block: duration 100 (14-bit length), maxsize 100, no producers, 0, 0.
        v.extend_from_slice(&[0x40, 100, 0x40, 100, 0, 0, 0]);
        v
    }

    #[test]
    fn a_hand_built_type_27_value_decodes_to_its_nack_zone() {
        let v = hand_built_27();
        let mut r = Reader::new(&v, 0);
        let s = read(&mut r, STREAM_LISTPACKS_5, D).expect("reads");
        assert_eq!(r.remaining(), 0);
        assert!(s.idmp().is_none(), "the defaults, nothing recorded");
        let g = s.groups().get(b"g").expect("group");
        assert_eq!(g.nacked_count(), 2);
        assert_eq!(
            pel_view(g),
            vec![
                (StreamId::new(1, 0), 1000, 1, Some(b"c".to_vec())),
                (StreamId::new(2, 0), 0, 2, None),
                (StreamId::new(3, 0), 0, 1, None),
            ]
        );
        assert_eq!(
            time_order(g),
            [
                StreamId::new(3, 0),
                StreamId::new(2, 0),
                StreamId::new(1, 0)
            ]
        );
        let c = g.consumer_by_name(b"c").expect("consumer");
        assert_eq!(
            (c.seen_time(), c.active_time(), c.pel_count()),
            (1000, Some(1500), 1)
        );
        // streamd writes the same bytes back.
        let mut out = Vec::new();
        write(&mut out, &s, encoding_for(&s, D), D);
        assert_eq!(out, v);
    }

    #[test]
    fn a_hand_built_type_26_value_decodes_to_its_idmp_state() {
        let p1: &[u8] = &[
            2, b'p', b'1', 2, // "p1", 2 iids, oldest first
            1, b'a', 2, 0, //    "a" → 2-0
            1, b'b', 0x41, 0x2C, 1, // "b" → 300-1 (14-bit ms)
        ];
        let p2: &[u8] = &[2, b'p', b'2', 0]; // "p2", no iid left (all expired at save)
        let with = |producers: &[&[u8]]| {
            let mut v = three_entries();
            v.push(0); // no groups
            v.extend_from_slice(&[60, 5, producers.len() as u8]); // 60 s, maxsize 5
            for p in producers {
                v.extend_from_slice(p);
            }
            v.extend_from_slice(&[7, 3]); // iids added 7, duplicates 3
            v
        };
        let v = with(&[p1, p2]);
        let mut r = Reader::new(&v, 0);
        let s = read(&mut r, STREAM_LISTPACKS_4, D).expect("reads");
        assert_eq!(r.remaining(), 0);
        assert_eq!(
            idmp_view(&s),
            Some((
                60,
                5,
                7,
                3,
                2,
                vec![(
                    b"p1".to_vec(),
                    vec![
                        (b"a".to_vec(), StreamId::new(2, 0)),
                        (b"b".to_vec(), StreamId::new(300, 1))
                    ]
                )]
            ))
        );
        let i = s.idmp().expect("state");
        assert_eq!((i.pids_tracked(), i.iids_tracked()), (1, 2));
        let mut i = i.clone();
        assert_eq!(
            i.lookup(&crate::stream::idmp::IdmpKey::new(b"p1", b"b"), None),
            Some(StreamId::new(300, 1))
        );
        // Written back, the producer without iids is gone; the rest is byte for byte.
        let mut out = Vec::new();
        write(&mut out, &s, encoding_for(&s, D), D);
        assert_eq!(out, with(&[p1]));
    }

    #[test]
    fn inconsistent_nack_zones_and_idmp_blocks_are_refused() {
        let good = hand_built_27();
        let zone = good.len() - 7 - 32 - 1; // the NACK zone's count byte
        assert_eq!(good[zone], 2);
        let refused = |v: &[u8], t: u8, what: &str| {
            let mut r = Reader::new(v, 0);
            let e = read(&mut r, t, D).expect_err(what);
            assert!(e.what.contains(what), "{e}");
        };
        // An owned entry in the zone.
        let mut v = good.clone();
        v[zone + 1..zone + 17].copy_from_slice(&raw(1, 0));
        refused(
            &v,
            STREAM_LISTPACKS_5,
            "owned by a consumer or listed twice",
        );
        // The same entry twice.
        let mut v = good.clone();
        v[zone + 17..zone + 33].copy_from_slice(&raw(3, 0));
        refused(
            &v,
            STREAM_LISTPACKS_5,
            "owned by a consumer or listed twice",
        );
        // An ID the PEL does not hold.
        let mut v = good.clone();
        v[zone + 1..zone + 17].copy_from_slice(&raw(9, 0));
        refused(&v, STREAM_LISTPACKS_5, "not found in the group PEL");
        // A zone missing an unowned entry.
        let mut v = good.clone();
        v[zone] = 1;
        v.drain(zone + 17..zone + 33);
        refused(&v, STREAM_LISTPACKS_5, "without a consumer");
        // Read as type 26, the zone bytes are not there: the PEL has unowned entries.
        refused(&good, STREAM_LISTPACKS_4, "without a consumer");
        // IDMP settings out of range, an empty producer ID.
        let idmp = good.len() - 7;
        let mut v = good.clone();
        v[idmp..idmp + 2].copy_from_slice(&[0, 0]);
        v.remove(idmp + 1);
        refused(&v, STREAM_LISTPACKS_5, "IDMP duration out of range");
        let mut v = good[..idmp].to_vec();
        v.extend_from_slice(&[10, 10, 1, 0, 1, 1, b'x', 1, 0, 0, 0]);
        refused(&v, STREAM_LISTPACKS_5, "empty IDMP producer ID");
    }

    #[test]
    fn every_truncation_of_types_26_and_27_is_refused_without_panic() {
        let s = sample_8x();
        let mut out = Vec::new();
        write(&mut out, &s, STREAM_LISTPACKS_5, D);
        for t in [STREAM_LISTPACKS_4, STREAM_LISTPACKS_5] {
            for cut in 0..out.len() {
                let mut r = Reader::new(&out[..cut], 0);
                assert!(read(&mut r, t, D).is_err(), "type {t} cut {cut}");
            }
            for i in 0..out.len() {
                for flip in [0x01, 0x40, 0xA5] {
                    let mut bad = out.clone();
                    bad[i] ^= flip;
                    let mut r = Reader::new(&bad, 0);
                    let _ = read(&mut r, t, D);
                }
            }
        }
    }
}
