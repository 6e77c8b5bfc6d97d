//! Synchronous replication (`min-sync-replicas`, docs/replication.md "Synchronous
//! replicas"): the state behind the promise that no failover loses an acknowledged
//! write, without WAIT. The memo `strong-failover.md` argues the rules; this module keeps
//! them.
//!
//! ```text
//!  primary P                                   replica R (streamd, sync id r)
//!  ─────────                                   ─────────
//!  R online, caught up ─▶ S += {r}             (P waits for r's ACKs from here on)
//!  feed STREAMD.SYNCSET <replid> <m> r ... ──▶ applies it: "in S of <replid>"
//!                                              ACKs after every applied batch
//!  reply to a command held until every r in S ACKed the offset the reply reflects
//!  |S| < m: writes get -NOREPLICAS; a held reply times out with an error, never later OK
//! ```
//!
//! **Why the join is safe without a handshake.** P starts waiting for r's ACKs at the
//! moment it feeds the record naming r. R applies the stream in order, so when it
//! applies the record it holds every byte before it, and every write P acknowledged
//! before the record sits before it. From then on P acknowledges nothing r has not
//! ACKed. So a replica that believes it is in S holds every acknowledged write.
//!
//! **The fence.** A replica whose own `min-sync-replicas` is above 0 and that is not in
//! the sync set of the history it follows reports `slave_priority:0` (Sentinel's advisory
//! filter) and refuses `REPLICAOF NO ONE` (the check made at promotion time, with no
//! staleness: Sentinel's promotion then aborts and retries). Membership is this
//! process's (a random id: a restart starts outside), of one history (re-pointing, a
//! promotion of the primary or a full resync ends it).
//!
//! **Released offset.** Replies wait for [`SyncRepl::released`]: the highest offset a
//! full sync set acknowledged (or, when the mode was switched on, the offset of that
//! moment: what came before was acknowledged asynchronously). It never goes down; a
//! member leaving bumps `shrinks`, and replies held across it fail instead of being
//! released by a smaller set.

use std::collections::BTreeMap;
use tokio::sync::watch;

/// How far behind (stream bytes) a replica may be when it joins: joining later only
/// makes writes wait for it to catch up, never unsafe (see the module doc).
pub const JOIN_LAG: u64 = 256 * 1024;

/// The name of the stream record that announces the sync set.
pub const SYNCSET: &[u8] = b"STREAMD.SYNCSET";

/// One member of the sync set, as the primary knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its address as it announced it (`ip:port`), for INFO.
    pub addr: String,
    /// The highest offset it acknowledged.
    pub ack: u64,
    /// Being removed cooperatively: the stream offset after the record that left it
    /// out. It is out once it ACKs that offset (it applied the record, so it has
    /// already made itself unpromotable); until then the primary still waits for it.
    pub leaving_at: Option<u64>,
}

/// What a held reply waits on (published through a watch channel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Release {
    /// Replies reflecting stream offsets up to this one may go out.
    pub upto: u64,
    /// Members that left (or a demotion) since start: a reply held across a change
    /// fails.
    pub shrinks: u64,
}

/// Counters for INFO replication.
#[derive(Debug, Clone, Default)]
pub struct SyncStats {
    /// Replies held now.
    pub held_now: u64,
    /// Batches of replies that had to wait, since start.
    pub held_total: u64,
    /// Held replies that timed out (answered with an error).
    pub timeouts: u64,
    /// Writes refused with -NOREPLICAS for too small a sync set (counted where the
    /// core only reads).
    pub write_refusals: std::cell::Cell<u64>,
    /// `REPLICAOF NO ONE` refused because this replica is not in the sync set.
    pub promotion_refusals: u64,
}

/// The synchronous replication state (see the module doc).
#[derive(Debug)]
pub struct SyncRepl {
    /// `min-sync-replicas` (cached; 0 = off).
    pub min: u64,
    /// `sync-replicas-timeout` in ms (cached).
    pub timeout_ms: u64,
    /// This process's id in sync sets: random at start, so a restart is a new member.
    pub self_id: String,
    /// Primary: the sync set, by member id.
    pub members: BTreeMap<String, Member>,
    /// Primary: replicas removed from the set (by id), which do not join again by
    /// themselves (`SYNCSET ADD` lets one back).
    pub barred: std::collections::BTreeSet<String>,
    /// Primary: offsets up to this were acknowledged by a full set (or before the mode).
    committed: u64,
    /// Published release (see [`Release`]).
    release: watch::Sender<Release>,
    /// Replica: the history (replid) in whose sync set this server is.
    pub member_of: Option<String>,
    /// Replica: the primary runs the mode (its last record said so): ACK every batch.
    pub primary_sync_on: bool,
    /// Unix ms when each held batch began waiting, by a sequence number.
    held_since: BTreeMap<u64, u64>,
    /// Next sequence number for `held_since`.
    next_held: u64,
    /// Counters.
    pub stats: SyncStats,
    /// A primary that started with the mode on: it answers like a loading server and
    /// serves no replica until it is demoted (`REPLICAOF`) or confirmed (`SYNCSET
    /// CONFIRM`), since while it was down another server may have been promoted.
    pub fenced_primary: bool,
    /// The settings were read once (the first read is the start: it may fence).
    started: bool,
}

impl Default for SyncRepl {
    fn default() -> Self {
        SyncRepl {
            min: 0,
            timeout_ms: 10_000,
            self_id: super::replication::random_replid(),
            members: BTreeMap::new(),
            barred: std::collections::BTreeSet::new(),
            committed: 0,
            release: watch::channel(Release::default()).0,
            member_of: None,
            primary_sync_on: false,
            held_since: BTreeMap::new(),
            next_held: 0,
            stats: SyncStats::default(),
            fenced_primary: false,
            started: false,
        }
    }
}

impl SyncRepl {
    /// True when this server's own setting asks for the mode.
    pub fn on(&self) -> bool {
        self.min > 0
    }

    /// True when the set is large enough to acknowledge writes.
    pub fn enough(&self) -> bool {
        self.members.len() as u64 >= self.min
    }

    /// The current release.
    pub fn release(&self) -> Release {
        *self.release.borrow()
    }

    /// A receiver of releases (for a held reply).
    pub fn subscribe(&self) -> watch::Receiver<Release> {
        self.release.subscribe()
    }

    /// Recomputes the released offset after an ACK or a change of the set.
    pub fn recompute(&mut self) {
        if self.on() && !self.members.is_empty() && self.enough() {
            let acked = self.members.values().map(|m| m.ack).min().unwrap_or(0);
            self.committed = self.committed.max(acked);
        }
        let upto = self.committed;
        self.release.send_if_modified(|r| {
            let changed = r.upto != upto;
            r.upto = upto;
            changed
        });
    }

    /// The mode was switched on at stream offset `offset` (or the server started with it):
    /// what came before was acknowledged without it.
    pub fn switched_on(&mut self, offset: u64) {
        self.committed = self.committed.max(offset);
        self.recompute();
    }

    /// Every held reply fails and the set empties (a demotion, a promotion, the mode
    /// switched off, an attested removal).
    pub fn reset_members(&mut self) {
        self.members.clear();
        self.bump_shrinks();
    }

    /// Records a change that must fail every reply held now.
    pub fn bump_shrinks(&mut self) {
        self.release.send_modify(|r| r.shrinks += 1);
    }

    /// A promotion: the new primary starts with an empty set and releases nothing it
    /// holds until its own set acknowledges it (what it applied from the old primary may
    /// not have been acknowledged there).
    pub fn promoted(&mut self) {
        self.member_of = None;
        self.primary_sync_on = false;
        self.committed = 0;
        self.reset_members();
        self.recompute();
    }

    /// This server follows a (new) primary: it is in no sync set, and replies held as a
    /// primary fail.
    pub fn demoted(&mut self) {
        self.fenced_primary = false;
        self.member_of = None;
        self.primary_sync_on = false;
        self.reset_members();
    }

    /// A replica applied `STREAMD.SYNCSET <replid> <min> [id ...]` from its primary
    /// whose history is `current_replid`.
    pub fn apply_record(&mut self, current_replid: &str, args: &[bytes::Bytes]) {
        let replid = args
            .first()
            .map(|r| String::from_utf8_lossy(r).into_owned());
        let min: u64 = args
            .get(1)
            .and_then(|m| std::str::from_utf8(m).ok()?.parse().ok())
            .unwrap_or(0);
        let named = args
            .iter()
            .skip(2)
            .any(|id| id.as_ref() == self.self_id.as_bytes());
        self.primary_sync_on = min > 0;
        self.member_of = match replid {
            Some(r) if min > 0 && named && r == current_replid => Some(r),
            _ => None,
        };
    }

    /// True when this replica (following history `replid`) is in its primary's sync set.
    pub fn is_member(&self, replid: &str) -> bool {
        self.member_of.as_deref() == Some(replid)
    }

    /// True when this replica must not be promoted: its own setting asks for the mode
    /// and it is not in the sync set of the history it follows.
    pub fn fenced(&self, replid: &str) -> bool {
        self.on() && !self.is_member(replid)
    }

    /// A batch of replies starts waiting at unix ms `now`; returns its ticket.
    pub fn hold_begin(&mut self, now: u64) -> u64 {
        let t = self.next_held;
        self.next_held += 1;
        self.held_since.insert(t, now);
        self.stats.held_now += 1;
        self.stats.held_total += 1;
        t
    }

    /// A held batch went out (`timed_out`: as errors).
    pub fn hold_end(&mut self, ticket: u64, timed_out: bool) {
        if self.held_since.remove(&ticket).is_some() {
            self.stats.held_now = self.stats.held_now.saturating_sub(1);
        }
        if timed_out {
            self.stats.timeouts += 1;
        }
    }

    /// Age in ms of the oldest reply held now (0 when none).
    pub fn oldest_held_ms(&self, now: u64) -> u64 {
        self.held_since
            .values()
            .next()
            .map_or(0, |&since| now.saturating_sub(since))
    }

    /// The record's arguments announcing the current set under `replid`.
    pub fn record(&self, replid: &str) -> Vec<Vec<u8>> {
        let mut argv = vec![
            SYNCSET.to_vec(),
            replid.as_bytes().to_vec(),
            self.min.to_string().into_bytes(),
        ];
        argv.extend(
            self.members
                .iter()
                .filter(|(_, m)| m.leaving_at.is_none())
                .map(|(k, _)| k.as_bytes().to_vec()),
        );
        argv
    }

    /// The member named by its id or its `ip:port`.
    pub fn find(&self, name: &str) -> Option<String> {
        self.members
            .iter()
            .find(|(id, m)| id.as_str() == name || m.addr == name)
            .map(|(id, _)| id.clone())
    }
}

impl super::Core {
    /// Re-reads `min-sync-replicas` and `sync-replicas-timeout`; on a primary, switching
    /// the mode on starts from the current offset and switching it off empties the set
    /// (held replies fail); either way the replicas hear of it.
    pub fn refresh_sync_settings(&mut self) {
        let min = self.config.get_i64("min-sync-replicas").max(0) as u64;
        self.sync.timeout_ms = self.config.get_i64("sync-replicas-timeout").max(1) as u64;
        let was = self.sync.min;
        self.sync.min = min;
        let starting = !std::mem::replace(&mut self.sync.started, true);
        if starting && min > 0 && !self.repl.is_replica() {
            // Started as a primary with the mode on: fenced (see `fenced_primary`).
            tracing::warn!(
                "Started as a primary with min-sync-replicas on: fenced until REPLICAOF or SYNCSET CONFIRM (another server may have been promoted meanwhile)"
            );
            self.sync.fenced_primary = true;
        }
        if self.repl.is_replica() || was == min {
            return;
        }
        if was == 0 {
            self.sync.switched_on(self.repl.offset);
        } else if min == 0 {
            self.sync.reset_members();
        }
        self.sync.recompute();
        self.sync_announce();
    }

    /// Feeds the `STREAMD.SYNCSET` record naming the current set (primary only).
    pub fn sync_announce(&mut self) {
        if self.repl.is_replica() || !self.repl.feeding() {
            return;
        }
        let argv = self.sync.record(&self.repl.replid);
        let parts: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
        self.repl_control(&parts);
    }

    /// After an ACK from the replica on client `id`: a member's ACK moves the release;
    /// a caught-up streamd replica outside the set joins it (P waits for its ACKs from
    /// the record on, see the module doc).
    pub fn sync_note_ack(&mut self, id: u64) {
        if !self.sync.on() || self.repl.is_replica() {
            return;
        }
        let offset = self.repl.offset;
        let Some(r) = self.repl.replicas.get_mut(&id) else {
            return;
        };
        let Some(sid) = r.sync_id.clone() else {
            return;
        };
        let (ack, online) = (r.ack, r.state == super::replication::ReplicaState::Online);
        let addr = format!("{}:{}", r.ip, r.port);
        let first_ack = !std::mem::replace(&mut r.sync_seen, true);
        if let Some(m) = self.sync.members.get_mut(&sid) {
            m.ack = m.ack.max(ack);
            m.addr = addr;
            if m.leaving_at.is_some_and(|at| m.ack >= at) {
                // It applied the record that left it out: it is unpromotable now.
                tracing::info!(replica = %m.addr, "Replica left the sync set");
                self.sync.members.remove(&sid);
            }
            self.sync.recompute();
            if first_ack {
                // A member that connected again (maybe after a full sync, which ends
                // its own view of the membership) hears that it is in.
                self.sync_announce();
            }
            return;
        }
        if online && ack + JOIN_LAG >= offset && !self.sync.barred.contains(&sid) {
            tracing::info!(replica = %addr, "Replica joins the sync set");
            self.sync.members.insert(
                sid,
                Member {
                    addr,
                    ack,
                    leaving_at: None,
                },
            );
            self.sync_announce();
            self.sync.recompute();
        }
    }

    /// True (counted) when this replica must refuse `REPLICAOF NO ONE`.
    pub fn sync_refuses_promotion(&mut self) -> bool {
        if self.repl.is_replica() && self.sync.fenced(&self.repl.replid) {
            self.sync.stats.promotion_refusals += 1;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn member(ack: u64) -> Member {
        Member {
            addr: "127.0.0.1:1".into(),
            ack,
            leaving_at: None,
        }
    }

    #[test]
    fn the_release_is_the_slowest_members_ack_and_never_goes_down() {
        let mut s = SyncRepl {
            min: 1,
            ..Default::default()
        };
        s.switched_on(100);
        assert_eq!(s.release().upto, 100);
        s.members.insert("a".into(), member(150));
        s.members.insert("b".into(), member(120));
        s.recompute();
        assert_eq!(s.release().upto, 120);
        if let Some(m) = s.members.get_mut("b") {
            m.ack = 200;
        }
        s.recompute();
        assert_eq!(s.release().upto, 150);
        // Too few members: nothing more is released, nothing goes back.
        s.min = 3;
        if let Some(m) = s.members.get_mut("a") {
            m.ack = 300;
        }
        s.recompute();
        assert_eq!(s.release().upto, 150);
        let before = s.release().shrinks;
        s.reset_members();
        assert_eq!(s.release().shrinks, before + 1);
        assert_eq!(s.release().upto, 150);
    }

    #[test]
    fn a_replica_is_a_member_only_when_named_under_the_history_it_follows() {
        let mut s = SyncRepl {
            min: 1,
            ..Default::default()
        };
        let me = Bytes::from(s.self_id.clone());
        assert!(s.fenced("h1"));
        s.apply_record("h1", &[Bytes::from("h1"), Bytes::from("1"), me.clone()]);
        assert!(s.is_member("h1") && !s.fenced("h1"));
        // Another history (the primary was replaced): not a member of that one.
        assert!(s.fenced("h2"));
        // Named under a history that is not the one followed: not a member.
        s.apply_record("h2", &[Bytes::from("h1"), Bytes::from("1"), me.clone()]);
        assert!(s.fenced("h2") && s.member_of.is_none());
        // Left out of the list: out.
        s.apply_record("h1", &[Bytes::from("h1"), Bytes::from("1"), me.clone()]);
        s.apply_record(
            "h1",
            &[Bytes::from("h1"), Bytes::from("1"), Bytes::from("x")],
        );
        assert!(s.fenced("h1"));
        // The primary switched the mode off: no member, no ACK per batch.
        s.apply_record("h1", &[Bytes::from("h1"), Bytes::from("0"), me]);
        assert!(!s.primary_sync_on && s.member_of.is_none());
        // Without its own setting a replica is never fenced.
        s.min = 0;
        assert!(!s.fenced("h1"));
    }

    #[test]
    fn held_replies_are_counted_with_their_age() {
        let mut s = SyncRepl::default();
        let a = s.hold_begin(1_000);
        let b = s.hold_begin(1_500);
        assert_eq!((s.stats.held_now, s.oldest_held_ms(2_000)), (2, 1_000));
        s.hold_end(a, false);
        assert_eq!(s.oldest_held_ms(2_000), 500);
        s.hold_end(b, true);
        assert_eq!((s.stats.held_now, s.stats.timeouts), (0, 1));
        assert_eq!(s.oldest_held_ms(2_000), 0);
    }
}
