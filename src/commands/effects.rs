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
    match n {
        Some(n) => int(n),
        None => b"-1".to_vec(),
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
    let mut records: Vec<Vec<Vec<u8>>> = Vec::new();
    // A created consumer is logged on its own only when no XCLAIM below names it (an
    // XCLAIM creates its consumer on replay), as Redis does: NOACK, or nothing delivered.
    let claimed_by = |c: &[u8]| {
        fx.ids
            .iter()
            .any(|&id| g.pending(id).and_then(|p| p.owner) == Some(c))
    };
    if fx.consumer_created
        && let Some(c) = consumer
        && !claimed_by(c)
    {
        records.push(vec![
            b"XGROUP".to_vec(),
            b"CREATECONSUMER".to_vec(),
            key.to_vec(),
            group.to_vec(),
            c.to_vec(),
        ]);
    }
    for &id in &fx.ids {
        let rec = match g.pending(id) {
            Some(p) => match p.owner {
                Some(owner) => vec![
                    b"XCLAIM".to_vec(),
                    key.to_vec(),
                    group.to_vec(),
                    owner.to_vec(),
                    b"0".to_vec(),
                    id.to_text(),
                    b"TIME".to_vec(),
                    int(p.delivery_time),
                    b"RETRYCOUNT".to_vec(),
                    int(p.delivery_count),
                    b"FORCE".to_vec(),
                    b"JUSTID".to_vec(),
                ],
                None => vec![
                    b"STREAMD.NACK".to_vec(),
                    key.to_vec(),
                    group.to_vec(),
                    id.to_text(),
                    int(p.delivery_count),
                ],
            },
            None => vec![b"XACK".to_vec(), key.to_vec(), group.to_vec(), id.to_text()],
        };
        records.push(rec);
    }
    if fx.position_changed {
        records.push(vec![
            b"XGROUP".to_vec(),
            b"SETID".to_vec(),
            key.to_vec(),
            group.to_vec(),
            g.last_id().to_text(),
            b"ENTRIESREAD".to_vec(),
            signed(g.entries_read()),
        ]);
    }
    if let Some(c) = consumer.and_then(|c| g.consumer_by_name(c)) {
        records.push(consumer_record(
            key,
            group,
            c.name(),
            c.seen_time(),
            c.active_time(),
        ));
    }
    for r in records {
        core.propagate(db, &r);
    }
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
