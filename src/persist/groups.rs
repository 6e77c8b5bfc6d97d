//! Consumer-group state in the log and in snapshots.
//!
//! **In the log**, group commands record the *resulting* state of what they touched, in
//! the forms of reference §5, so replay never depends on the clock or on who read what:
//!
//! ```text
//! XGROUP CREATECONSUMER <key> <group> <consumer>         a consumer was created
//! XCLAIM <key> <group> <consumer> 0 <id> TIME <delivery_time> RETRYCOUNT <count> FORCE JUSTID
//!                                                        <id> is now owned, with this time/count
//! XACK <key> <group> <id>                                <id> is no longer pending
//! STREAMD.NACK <key> <group> <id> <count>                <id> is pending with no owner
//! XGROUP SETID <key> <group> <last_id> ENTRIESREAD <n|-1> the group's read position moved
//! STREAMD.CONSUMER <key> <group> <consumer> <seen_time> <active_time|-1>
//!                                                        the consumer's times, exactly
//! ```
//!
//! A command collects what it changed in a `GroupEffects` and calls `log_effects` once
//! it is done (`commands/effects.rs`, where the commands that change groups live); the
//! records are read from the group as it is then. Unlike Redis, history
//! reads (`XREADGROUP ... 0`) log their delivery-count bumps, so counts survive a restart.
//!
//! **In snapshots**, [`write_groups`] writes each group as `STREAMD.GROUP`, its
//! dead-letter stream if it has one (`XGROUP SETDLQ`, the client form, replayed through
//! the command path), its pending entries in delivery-time order (`STREAMD.NACK` /
//! `STREAMD.PENDING`, each reloading in O(1)) and its consumers' times
//! (`STREAMD.CONSUMER`); see snapshot.rs.
//!
//! [`apply_internal`] applies the `STREAMD.*` records. Only the loader accepts them; they
//! go straight to the group engine (pending entries whose stream entry was deleted are
//! kept, which `XCLAIM ... FORCE` would drop).

use super::args::{parse_id, parse_opt, parse_u64};
use super::record::RecordSink;
use crate::commands::effects::{consumer_record, int, signed};
use crate::commands::xgroup::setdlq_record;
use crate::core::Core;
use crate::resp::Argv;
use crate::stream::Stream;
use crate::stream::group::{ClaimSpec, DeliveryCount, NackMode};
use std::io;

/// Writes the groups of stream `key` into a snapshot.
pub fn write_groups(w: &mut impl RecordSink, key: &[u8], s: &Stream) -> io::Result<()> {
    for g in s.groups().iter() {
        let name = g.name();
        w.record(&[
            b"STREAMD.GROUP".as_slice(),
            key,
            name,
            &g.last_id().to_text(),
            &signed(g.entries_read()),
        ])?;
        if let Some(d) = g.dead_letter() {
            w.record(&setdlq_record(key, name, Some(d)))?;
        }
        for p in g.by_time() {
            match p.owner {
                None => w.record(&[
                    b"STREAMD.NACK".as_slice(),
                    key,
                    name,
                    &p.id.to_text(),
                    &int(p.delivery_count),
                ])?,
                Some(owner) => w.record(&[
                    b"STREAMD.PENDING".as_slice(),
                    key,
                    name,
                    owner,
                    &p.id.to_text(),
                    &int(p.delivery_time),
                    &int(p.delivery_count),
                ])?,
            }
        }
        for (_, c) in g.consumers() {
            w.record(&consumer_record(
                key,
                name,
                c.name(),
                c.seen_time(),
                c.active_time(),
            ))?;
        }
    }
    Ok(())
}

/// Applies one `STREAMD.*` record to database `db`.
pub fn apply_internal(core: &mut Core, db: usize, argv: &Argv) -> Result<(), String> {
    let name = argv[0].to_ascii_uppercase();
    let arity = match &name[..] {
        b"STREAMD.GROUP" => 5,
        b"STREAMD.NACK" => 5,
        b"STREAMD.PENDING" => 7,
        b"STREAMD.CONSUMER" => 6,
        _ => return Err("unknown loader record".into()),
    };
    if argv.len() != arity {
        return Err("wrong number of arguments".into());
    }
    let (key, group) = (&argv[1], &argv[2]);
    let stream = core.dbs[db]
        .get_stream_mut(key)
        .ok_or_else(|| "no such stream".to_string())?;
    if name == b"STREAMD.GROUP" {
        let last = parse_id(&argv[3])?;
        let read = parse_opt(&argv[4])?;
        if !stream.groups_mut().create(group, last, read) {
            return Err("the group exists already".into());
        }
        return Ok(());
    }
    let mut g = stream
        .group_mut(group)
        .ok_or_else(|| "no such group".to_string())?;
    match &name[..] {
        b"STREAMD.NACK" => {
            let id = parse_id(&argv[3])?;
            let count = parse_u64(&argv[4])?;
            g.nack(id, NackMode::Fail, Some(count), true);
        }
        b"STREAMD.PENDING" => {
            let id = parse_id(&argv[4])?;
            let time = parse_u64(&argv[5])?;
            let count = parse_u64(&argv[6])?;
            let (cid, _) = g.get_or_create_consumer(&argv[3], time);
            let spec = ClaimSpec {
                min_idle: 0,
                delivery_time: time,
                count: DeliveryCount::Set(count),
                force: true,
            };
            g.claim(cid, id, &spec, time);
        }
        _ => {
            let seen = parse_u64(&argv[4])?;
            let active = parse_opt(&argv[5])?;
            let (cid, _) = g.get_or_create_consumer(&argv[3], seen);
            g.set_consumer_times(cid, seen, active);
        }
    }
    Ok(())
}
