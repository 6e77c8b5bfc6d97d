//! The forms in which commands hand group and IDMP state changes to the core as
//! effects (`Ctx::propagate`): the *resulting* state of what a command touched, so a
//! replay (the log at start-up, later a replica) never depends on the clock or on who
//! read what. `persist/groups.rs` and `persist/idmp.rs` document the records and apply
//! the internal `STREAMD.*` ones when loading; snapshots write the same forms.
//!
//! ```text
//! XGROUP CREATECONSUMER <key> <group> <consumer>         a consumer was created
//! XCLAIM <key> <group> <consumer> 0 <id> TIME <delivery_time> RETRYCOUNT <count> FORCE JUSTID
//!                                                        <id> is now owned, with this time/count
//! XACK <key> <group> <id>                                <id> is no longer pending
//! STREAMD.NACK <key> <group> <id> <count>                <id> is pending with no owner
//! XGROUP SETID <key> <group> <last_id> ENTRIESREAD <n|-1> the group's read position moved
//! STREAMD.CONSUMER <key> <group> <consumer> <seen_time> <active_time|-1>
//! STREAMD.IDMP <key> <duration> <maxsize> <iids_added> <iids_duplicates>
//! XCFGSET <key> MAXAGE <ms> MAXBYTES <bytes> RETENTION-REFS <policy>
//!                                                        the stream's retention settings
//! XTRIM <key> MINID = <id> [DELREF|ACKED]                a retention trim (core/lifecycle.rs)
//! XGROUP SETDLQ <key> <group> <dlq-key> MAXDELIVERIES <n> | NONE
//!                                                        the group's dead-letter stream
//! ```

use crate::core::Ctx;
use crate::stream::lifecycle::Retention;
use crate::stream::{RefPolicy, Stream, StreamId};
use crate::types::Value;

/// What a group command changed in one stream's group, for [`log_effects`].
#[derive(Debug, Default, Clone)]
pub struct GroupEffects {
    /// Pending entries whose state changed (delivered, claimed, re-delivered, dropped).
    pub ids: Vec<StreamId>,
    /// The consumer was created by this command.
    pub consumer_created: bool,
    /// The group's `last_id` / `entries_read` changed.
    pub position_changed: bool,
}

impl GroupEffects {
    /// True when there is something to log.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty() && !self.consumer_created && !self.position_changed
    }
}

/// The decimal text of `n`.
pub fn int(n: u64) -> Vec<u8> {
    itoa::Buffer::new().format(n).as_bytes().to_vec()
}

/// The decimal text of `n`, or `-1` for none (the forms' "unset").
pub fn signed(n: Option<u64>) -> Vec<u8> {
    signed_in(&mut itoa::Buffer::new(), n).to_vec()
}

/// [`signed`], written in `buf` (no allocation).
fn signed_in(buf: &mut itoa::Buffer, n: Option<u64>) -> &[u8] {
    match n {
        Some(n) => buf.format(n).as_bytes(),
        None => b"-1",
    }
}

/// Logs the state of what `fx` says changed in `group` of `key` (client's database),
/// acting for `consumer`.
pub fn log_effects(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    group: &[u8],
    consumer: Option<&[u8]>,
    fx: &GroupEffects,
) {
    let db = ctx.client.db;
    let core = &mut *ctx.core;
    if !core.propagates() || fx.is_empty() {
        return;
    }
    let Some(g) = core.dbs[db]
        .get(key)
        .and_then(Value::as_stream)
        .and_then(|s| s.groups().get(group))
    else {
        return;
    };
    // The figures are copied out of the group before the records are written (through
    // the core that holds the group); names are the command's own, so a record costs no
    // allocation (every delivery of a group read writes two or three of them).
    // A created consumer is logged on its own only when no XCLAIM below names it (an
    // XCLAIM creates its consumer on replay), as Redis does: NOACK, or nothing delivered.
    let created_alone = fx.consumer_created
        && consumer.is_some_and(|c| {
            !fx.ids
                .iter()
                .any(|&id| g.pending(id).and_then(|p| p.owner) == Some(c))
        });
    let states: Vec<(StreamId, PendingState)> = fx
        .ids
        .iter()
        .map(|&id| {
            let state = match g.pending(id) {
                Some(p) => match p.owner {
                    Some(owner) => PendingState::Owned {
                        other_owner: (Some(owner) != consumer).then(|| owner.to_vec()),
                        time: p.delivery_time,
                        count: p.delivery_count,
                    },
                    None => PendingState::Unowned {
                        count: p.delivery_count,
                    },
                },
                None => PendingState::Gone,
            };
            (id, state)
        })
        .collect();
    let position = fx.position_changed.then(|| (g.last_id(), g.entries_read()));
    let times = consumer
        .and_then(|c| g.consumer_by_name(c))
        .map(|c| (c.seen_time(), c.active_time()));
    let (mut n1, mut n2) = (itoa::Buffer::new(), itoa::Buffer::new());
    if created_alone && let Some(c) = consumer {
        core.propagate(
            db,
            &[b"XGROUP".as_slice(), b"CREATECONSUMER", key, group, c],
        );
    }
    for (id, state) in &states {
        let (text, len) = id.format();
        let id = &text[..len];
        match state {
            PendingState::Owned {
                other_owner,
                time,
                count,
            } => {
                let owner = other_owner.as_deref().or(consumer).unwrap_or_default();
                core.propagate(
                    db,
                    &[
                        b"XCLAIM".as_slice(),
                        key,
                        group,
                        owner,
                        b"0",
                        id,
                        b"TIME",
                        n1.format(*time).as_bytes(),
                        b"RETRYCOUNT",
                        n2.format(*count).as_bytes(),
                        b"FORCE",
                        b"JUSTID",
                    ],
                );
            }
            PendingState::Unowned { count } => core.propagate(
                db,
                &[
                    b"STREAMD.NACK".as_slice(),
                    key,
                    group,
                    id,
                    n1.format(*count).as_bytes(),
                ],
            ),
            PendingState::Gone => core.propagate(db, &[b"XACK".as_slice(), key, group, id]),
        }
    }
    if let Some((last_id, entries_read)) = position {
        let (text, len) = last_id.format();
        let read = signed_in(&mut n1, entries_read);
        core.propagate(
            db,
            &[
                b"XGROUP".as_slice(),
                b"SETID",
                key,
                group,
                &text[..len],
                b"ENTRIESREAD",
                read,
            ],
        );
    }
    if let (Some(c), Some((seen, active))) = (consumer, times) {
        let active = signed_in(&mut n2, active);
        core.propagate(
            db,
            &[
                b"STREAMD.CONSUMER".as_slice(),
                key,
                group,
                c,
                n1.format(seen).as_bytes(),
                active,
            ],
        );
    }
}

/// A pending entry's state after a group command, as [`log_effects`] records it.
enum PendingState {
    /// Owned: by the acting consumer, or by `other_owner`.
    Owned {
        other_owner: Option<Vec<u8>>,
        time: u64,
        count: u64,
    },
    /// Pending with no owner (NACKed).
    Unowned { count: u64 },
    /// No longer pending.
    Gone,
}

/// Logs a consumer's times (after XGROUP CREATECONSUMER).
pub fn log_consumer(ctx: &mut Ctx<'_>, key: &[u8], group: &[u8], consumer: &[u8]) {
    let db = ctx.client.db;
    let core = &mut *ctx.core;
    if !core.propagates() {
        return;
    }
    let Some(c) = core.dbs[db]
        .get(key)
        .and_then(Value::as_stream)
        .and_then(|s| s.groups().get(group))
        .and_then(|g| g.consumer_by_name(consumer))
    else {
        return;
    };
    let r = consumer_record(key, group, c.name(), c.seen_time(), c.active_time());
    core.propagate(db, &r);
}

/// `STREAMD.CONSUMER <key> <group> <consumer> <seen_time> <active_time|-1>`: a
/// consumer's times, exactly (the log and snapshots both carry it).
pub fn consumer_record(
    key: &[u8],
    group: &[u8],
    name: &[u8],
    seen: u64,
    active: Option<u64>,
) -> Vec<Vec<u8>> {
    vec![
        b"STREAMD.CONSUMER".to_vec(),
        key.to_vec(),
        group.to_vec(),
        name.to_vec(),
        int(seen),
        signed(active),
    ]
}

/// `STREAMD.IDMP` for `key`'s current settings and counters, if it has IDMP state.
pub fn idmp_state_record(key: &[u8], s: &Stream) -> Option<Vec<Vec<u8>>> {
    let i = s.idmp()?;
    Some(vec![
        b"STREAMD.IDMP".to_vec(),
        key.to_vec(),
        int(u64::from(i.duration())),
        int(u64::from(i.maxsize())),
        int(i.iids_added()),
        int(i.iids_duplicates()),
    ])
}

/// `XCFGSET key MAXAGE <ms> MAXBYTES <bytes> RETENTION-REFS <policy>`: a stream's
/// retention settings as the log and snapshots carry them.
pub fn retention_record(key: &[u8], r: &Retention) -> Vec<Vec<u8>> {
    let refs: &[u8] = match r.refs {
        RefPolicy::KeepRef => b"KEEPREF",
        RefPolicy::DelRef => b"DELREF",
        RefPolicy::Acked => b"ACKED",
    };
    vec![
        b"XCFGSET".to_vec(),
        key.to_vec(),
        b"MAXAGE".to_vec(),
        int(r.max_age_ms),
        b"MAXBYTES".to_vec(),
        int(r.max_bytes),
        b"RETENTION-REFS".to_vec(),
        refs.to_vec(),
    ]
}
