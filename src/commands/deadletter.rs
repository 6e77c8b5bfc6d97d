//! Dead-letter streams (streamd's own, docs/beyond-redis.md): what the delivering commands
//! share once they have decided that an entry goes to its group's dead-letter stream
//! (`XGROUP SETDLQ`, stream/group.rs
//! [`DeadLetter`](crate::stream::group::DeadLetter)).
//!
//! A delivery that would take a pending entry's delivery count above the group's
//! `MAXDELIVERIES` (an `XREADGROUP` history read or `CLAIM`, `XCLAIM` without JUSTID or
//! RETRYCOUNT, `XAUTOCLAIM` without JUSTID) does not happen; nor does the NACK of
//! `XNACK ... FATAL`. Instead, in the same command, the entry is appended to the
//! dead-letter stream (created if missing) as
//!
//! ```text
//! dlq-stream <key> dlq-group <group> dlq-id <id> dlq-deliveries <count so far>
//! dlq-consumer <last owner, "" for none> <the entry's own field value pairs ...>
//! ```
//!
//! and acknowledged in the group. An entry whose payload is gone (XDEL, trimming) is only
//! acknowledged. The commands collect their moves while they hold the source stream, and
//! hand them to [`move_entries`] afterwards, which appends first and acknowledges second,
//! so a crash between the two log records leaves the entry both pending and dead-lettered
//! (delivered twice, never lost).
//!
//! Effects, in Redis's forms: `XADD <dlq> <id> <fields ...>` with the ID it got (and the
//! dead-letter stream's own retention trim, if it has retention), then the group's
//! `XACK <key> <group> <id>` (through [`GroupEffects`], logged by the caller). Blocked
//! readers of the dead-letter stream are woken, as an XADD wakes them. Nothing moves while
//! the log loads or on a replica: there the primary's records say what moved.

use crate::commands::effects::GroupEffects;
use crate::core::lifecycle::XADD_RETENTION_BUDGET;
use crate::core::notify::class;
use crate::core::{Core, Ctx};
use crate::stream::id::XAddId;
use crate::stream::memory::key_overhead;
use crate::stream::{Stream, StreamId};
use crate::types::Value;
use bytes::Bytes;

/// One entry on its way to the dead-letter stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Move {
    /// The entry's ID in its stream.
    pub id: StreamId,
    /// Its delivery count before the delivery that did not happen.
    pub deliveries: u64,
    /// Its owner then (empty for an unowned entry).
    pub consumer: Bytes,
    /// Its fields and values; `None` when the payload is gone (only acknowledged).
    pub fields: Option<Vec<Bytes>>,
}

impl Move {
    /// The move of entry `id` of `stream`, pending (or not, with FORCE) in `group`.
    pub fn of(stream: &Stream, group: &[u8], id: StreamId) -> Move {
        let pending = stream.groups().get(group).and_then(|g| g.pending(id));
        let entry = stream.get(id);
        Move {
            id,
            deliveries: pending.map_or(0, |p| p.delivery_count),
            consumer: pending
                .and_then(|p| p.owner)
                .map(Bytes::copy_from_slice)
                .unwrap_or_default(),
            fields: entry.map(|e| e.elements().map(|v| Bytes::from(v.to_vec())).collect()),
        }
    }
}

/// True when entries may move now: the server neither loads its log nor follows a
/// primary (there the records say what moved). Callers ask before they borrow the
/// stream, then read the group's [`DeadLetter`](crate::stream::group::DeadLetter) from it.
pub fn allowed(core: &Core) -> bool {
    !core.loading && !core.repl.is_replica()
}

/// Appends every move with a payload to `dlq` and acknowledges every move in `group` of
/// `key` (client's database), recording the acknowledgements in `fx` for the caller's
/// [`crate::commands::effects::log_effects`]. Returns how many entries were handled.
pub fn move_entries(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    group: &[u8],
    dlq: &[u8],
    moves: &[Move],
    fx: &mut GroupEffects,
) -> u64 {
    let mut handled = 0;
    for m in moves {
        if let Some(fields) = &m.fields
            && !append(ctx, key, group, dlq, m, fields)
        {
            // The dead-letter stream cannot take another entry (its last ID is the
            // largest there is): the entry stays pending rather than being lost.
            continue;
        }
        let acked = ctx
            .db()
            .get_mut(key)
            .and_then(Value::as_stream_mut)
            .and_then(|s| s.group_mut(group))
            .is_some_and(|mut g| g.ack(m.id));
        if acked {
            fx.ids.push(m.id);
        }
        handled += 1;
    }
    if handled > 0 {
        ctx.modified(key);
        ctx.core.stats.stream_dead_lettered_entries += handled;
    }
    handled
}

/// Appends one moved entry to `dlq`: the XADD's effects (key created, WATCH, `new` and
/// `xadd` events, the log record with the ID it got, wake-ups) and the dead-letter
/// stream's own retention. False when the stream is exhausted.
fn append(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    group: &[u8],
    dlq: &[u8],
    m: &Move,
    fields: &[Bytes],
) -> bool {
    let id_text = m.id.to_text();
    let count = crate::commands::effects::int(m.deliveries);
    let mut elements: Vec<Bytes> = Vec::with_capacity(10 + fields.len());
    for (name, value) in [
        (&b"dlq-stream"[..], key),
        (b"dlq-group", group),
        (b"dlq-id", &id_text),
        (b"dlq-deliveries", &count),
        (b"dlq-consumer", &m.consumer),
    ] {
        elements.push(Bytes::from_static(name));
        elements.push(Bytes::copy_from_slice(value));
    }
    elements.extend_from_slice(fields);
    let (now_ms, limits) = (ctx.now_ms, ctx.core.node_limits);
    let created = !ctx.exists(dlq);
    let db = ctx.db();
    // A dead-letter key of another type takes nothing: the entry stays pending.
    let Ok(stream) = db.stream_or_create(dlq) else {
        return false;
    };
    let Ok(new_id) = stream.next_id(XAddId::Auto, now_ms) else {
        if created {
            db.remove(dlq);
        }
        return false;
    };
    stream.append(new_id, &elements, &limits);
    let mut budget = XADD_RETENTION_BUDGET;
    let retention = stream.apply_retention(now_ms, key_overhead(dlq), &limits, &mut budget);
    ctx.modified(dlq);
    if created {
        ctx.notify(class::NEW, "new", dlq);
    }
    ctx.notify(class::STREAM, "xadd", dlq);
    if retention.is_some() {
        ctx.notify(class::STREAM, "xtrim", dlq);
    }
    if ctx.propagates() {
        let new_text = new_id.to_text();
        let mut effect: Vec<&[u8]> = Vec::with_capacity(3 + elements.len());
        effect.extend([b"XADD".as_slice(), dlq, &new_text]);
        effect.extend(elements.iter().map(|e| &e[..]));
        ctx.propagate(&effect);
    }
    if let Some(t) = &retention {
        let db = ctx.client.db;
        ctx.core.retention_trimmed(db, dlq, t);
    }
    ctx.signal_ready(dlq);
    true
}
