//! The blocked-client registry: who waits on which key, in what order, until when.
//!
//! ```text
//!  by_key: (db, key) ──▶ FIFO of client ids      deadlines: ordered (deadline_ms, client id)
//!          (0,"s")   ──▶ [7, 12, 3]                           (1700000000100, 7)
//!          (0,"t")   ──▶ [12]                                 (1700000000250, 12)
//! ```
//!
//! A client blocked on several keys sits in the FIFO of each. When a key is signalled
//! ready (XADD, a key created/replaced/deleted, XGROUP DESTROY), the core walks that
//! key's FIFO — only the clients that were there when the round started — and
//! re-executes each one's command (Redis 7's model, reference §3.4). A client that
//! still has nothing keeps its place in every FIFO and its original deadline; a served
//! client leaves all of them. The cost of a wake is proportional to the waiters of the
//! signalled key, not to all blocked clients. Deadlines live in an ordered set that a
//! timer task sleeps on ([`BlockedClients::next_deadline`]).
//!
//! A consumer blocked on its 32 shards enters and leaves 32 FIFOs per message it gets
//! (the `auction/*` workloads), so the table is built for that: keys are hashed once
//! per visit with the keyspace's SipHash under a key of its own (clients name the keys;
//! see `siphash.rs`), looked up by their bytes without building a `(db, key)` pair, and
//! a FIFO holds its first client inline, so the common key with one waiter allocates
//! nothing beyond its table slot.

use crate::core::siphash::SipKey;
use crate::types::Kind;
use bytes::Bytes;
use hashbrown::HashTable;
use std::collections::{BTreeSet, HashMap, VecDeque};

/// The type of value a blocked command waits for (Redis: the client's `btype`), from its
/// name: a signalled key re-executes the command only when it holds that type (or the
/// client unblocks on no key, XREADGROUP). So a key deleted, or replaced by another
/// type, leaves a blocked XREAD (or BLPOP, BZPOPMIN) blocked, in its place and with its
/// deadline, until a value of its type comes back (Redis's `handleClientsBlockedOnKey`).
/// `None` for commands not blocked on keys.
pub fn waits_for(command: &[u8]) -> Option<Kind> {
    let is = |name: &str| command.eq_ignore_ascii_case(name.as_bytes());
    if is("xread") || is("xreadgroup") {
        Some(Kind::Stream)
    } else if ["blpop", "brpop", "brpoplpush", "blmove", "blmpop"]
        .iter()
        .any(|n| is(n))
    {
        Some(Kind::List)
    } else if ["bzpopmin", "bzpopmax", "bzmpop"].iter().any(|n| is(n)) {
        Some(Kind::ZSet)
    } else {
        None
    }
}

/// Whether a client blocked in `command` is re-executed when its key is signalled and
/// now holds a value of type `now` (`None`: the key is missing).
pub fn wakes(command: &[u8], unblock_on_nokey: bool, now: Option<Kind>) -> bool {
    if unblock_on_nokey {
        return true;
    }
    match (now, waits_for(command)) {
        (None, _) => false,
        (Some(k), Some(want)) => k == want,
        (Some(_), None) => true,
    }
}

/// One key's FIFO of waiting clients: `first`, then `rest` in blocking order.
#[derive(Debug)]
struct KeyWaiters {
    db: usize,
    key: Bytes,
    first: u64,
    rest: VecDeque<u64>,
}

impl KeyWaiters {
    fn contains(&self, client: u64) -> bool {
        self.first == client || self.rest.contains(&client)
    }

    /// Takes `client` out; false when nobody is left.
    fn remove(&mut self, client: u64) -> bool {
        if self.first != client {
            self.rest.retain(|&c| c != client);
            return true;
        }
        match self.rest.pop_front() {
            Some(next) => {
                self.first = next;
                true
            }
            None => false,
        }
    }
}

/// Registry of blocked clients (the per-client part lives in `Client::blocked`).
#[derive(Debug)]
pub struct BlockedClients {
    /// (db, key) → waiting client ids in blocking order.
    by_key: HashTable<KeyWaiters>,
    /// The hash key of `by_key`.
    sip: SipKey,
    /// (deadline unix ms, client id) for clients with a timeout.
    deadlines: BTreeSet<(u64, u64)>,
    /// Number of blocked clients.
    count: usize,
    /// (wake-up unix ms, client id): XREADGROUP … CLAIM readers to re-execute when
    /// their oldest pending entry becomes idle enough (not a timeout).
    wakeups: BTreeSet<(u64, u64)>,
    /// Client id → its entry in `wakeups`.
    wakeup_of: HashMap<u64, u64>,
}

impl Default for BlockedClients {
    fn default() -> Self {
        BlockedClients {
            by_key: HashTable::new(),
            sip: SipKey::random(),
            deadlines: BTreeSet::new(),
            count: 0,
            wakeups: BTreeSet::new(),
            wakeup_of: HashMap::new(),
        }
    }
}

/// The hash of (db, key) in `by_key`: the key's SipHash, the database mixed in (the
/// same key in two databases is two entries that rarely share a bucket).
fn slot_hash(sip: &SipKey, db: usize, key: &[u8]) -> u64 {
    sip.hash(key) ^ (db as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

impl BlockedClients {
    /// Every (db, key) someone waits on.
    pub fn all_keys(&self) -> Vec<(usize, Bytes)> {
        self.by_key.iter().map(|w| (w.db, w.key.clone())).collect()
    }

    fn find(&self, db: usize, key: &[u8]) -> Option<&KeyWaiters> {
        self.by_key.find(slot_hash(&self.sip, db, key), |w| {
            w.db == db && crate::util::bytes_eq(&w.key, key)
        })
    }

    /// Registers `client` on `keys` of `db` with an optional deadline.
    pub fn add(&mut self, client: u64, db: usize, keys: &[Bytes], deadline_ms: Option<u64>) {
        let sip = self.sip;
        for k in keys {
            let hash = slot_hash(&sip, db, k);
            match self.by_key.entry(
                hash,
                |w| w.db == db && crate::util::bytes_eq(&w.key, k),
                |w| slot_hash(&sip, w.db, &w.key),
            ) {
                hashbrown::hash_table::Entry::Occupied(mut e) => {
                    let w = e.get_mut();
                    if !w.contains(client) {
                        w.rest.push_back(client);
                    }
                }
                hashbrown::hash_table::Entry::Vacant(e) => {
                    e.insert(KeyWaiters {
                        db,
                        key: k.clone(),
                        first: client,
                        rest: VecDeque::new(),
                    });
                }
            }
        }
        if let Some(d) = deadline_ms {
            self.deadlines.insert((d, client));
        }
        self.count += 1;
    }

    /// Unregisters `client` from `keys` and its deadline.
    pub fn remove(&mut self, client: u64, db: usize, keys: &[Bytes], deadline_ms: Option<u64>) {
        for k in keys {
            let hash = slot_hash(&self.sip, db, k);
            if let Ok(mut e) = self
                .by_key
                .find_entry(hash, |w| w.db == db && crate::util::bytes_eq(&w.key, k))
                && !e.get_mut().remove(client)
            {
                e.remove();
            }
        }
        if let Some(d) = deadline_ms {
            self.deadlines.remove(&(d, client));
        }
        self.clear_wakeup(client);
        self.count = self.count.saturating_sub(1);
    }

    /// Sets (or moves) the wake-up time of a blocked client.
    pub fn set_wakeup(&mut self, client: u64, at_ms: u64) {
        self.clear_wakeup(client);
        self.wakeups.insert((at_ms, client));
        self.wakeup_of.insert(client, at_ms);
    }

    /// Drops a client's wake-up time, if any.
    pub fn clear_wakeup(&mut self, client: u64) {
        if let Some(at) = self.wakeup_of.remove(&client) {
            self.wakeups.remove(&(at, client));
        }
    }

    /// Clients whose wake-up time is at or before `now_ms`.
    pub fn due_wakeups(&self, now_ms: u64) -> Vec<u64> {
        self.wakeups
            .range(..=(now_ms, u64::MAX))
            .map(|(_, c)| *c)
            .collect()
    }

    /// The clients waiting on (db, key) right now, in blocking order, appended to `out`
    /// (a buffer the caller keeps).
    pub fn waiters_into(&self, db: usize, key: &[u8], out: &mut Vec<u64>) {
        if let Some(w) = self.find(db, key) {
            out.push(w.first);
            out.extend(w.rest.iter().copied());
        }
    }

    /// True if anyone waits on (db, key).
    pub fn has_waiters(&self, db: usize, key: &[u8]) -> bool {
        self.find(db, key).is_some()
    }

    /// True when nobody is blocked.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Number of blocked clients.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Number of distinct keys waited on.
    pub fn keys_len(&self) -> usize {
        self.by_key.len()
    }

    /// The earliest deadline or wake-up time, if any.
    pub fn next_deadline(&self) -> Option<u64> {
        let d = self.deadlines.first().map(|(d, _)| *d);
        let w = self.wakeups.first().map(|(w, _)| *w);
        match (d, w) {
            (Some(d), Some(w)) => Some(d.min(w)),
            (x, None) | (None, x) => x,
        }
    }

    /// Clients whose deadline has passed (is before `now_ms`, as Redis's
    /// `handleBlockedClientsTimeout` compares), earliest first: with millisecond clocks a
    /// deadline equal to `now_ms` may still be up to a millisecond away, and a client
    /// asking for a 300 ms timeout must not be answered after 299.5 ms.
    pub fn expired(&self, now_ms: u64) -> Vec<u64> {
        self.deadlines
            .range(..(now_ms, 0))
            .map(|(_, c)| *c)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn k(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    impl BlockedClients {
        fn waiters(&self, db: usize, key: &[u8]) -> Vec<u64> {
            let mut out = Vec::new();
            self.waiters_into(db, key, &mut out);
            out
        }
    }

    #[test]
    fn fifo_order_per_key_and_removal_from_all_keys() {
        let mut b = BlockedClients::default();
        b.add(7, 0, &[k("s"), k("t")], Some(100));
        b.add(3, 0, &[k("s")], None);
        assert_eq!(b.waiters(0, &k("s")), vec![7, 3]);
        assert_eq!(b.waiters(0, &k("t")), vec![7]);
        assert_eq!(b.next_deadline(), Some(100));
        b.remove(7, 0, &[k("s"), k("t")], Some(100));
        assert_eq!(b.waiters(0, &k("s")), vec![3]);
        assert!(!b.has_waiters(0, &k("t")));
        assert_eq!(b.next_deadline(), None);
        assert_eq!(b.len(), 1);
    }

    #[test]
    fn expired_lists_due_clients_only() {
        let mut b = BlockedClients::default();
        b.add(1, 0, &[k("a")], Some(50));
        b.add(2, 0, &[k("a")], Some(150));
        assert_eq!(b.expired(100), vec![1]);
        assert_eq!(b.expired(150), vec![1]);
        assert_eq!(b.expired(151), vec![1, 2]);
    }

    #[test]
    fn wakeups_move_and_leave_with_the_client() {
        let mut b = BlockedClients::default();
        b.add(1, 0, &[k("a")], Some(500));
        b.set_wakeup(1, 100);
        assert_eq!(b.next_deadline(), Some(100));
        b.set_wakeup(1, 200);
        assert_eq!(b.due_wakeups(150), Vec::<u64>::new());
        assert_eq!(b.due_wakeups(200), vec![1]);
        b.remove(1, 0, &[k("a")], Some(500));
        assert_eq!(b.next_deadline(), None);
    }

    #[test]
    fn only_the_awaited_type_wakes_unless_unblock_on_nokey() {
        assert!(wakes(b"XREAD", false, Some(Kind::Stream)));
        assert!(!wakes(b"xread", false, Some(Kind::List)));
        assert!(!wakes(b"xread", false, Some(Kind::String)));
        assert!(!wakes(b"xread", false, None));
        assert!(wakes(b"xreadgroup", true, Some(Kind::String)));
        assert!(wakes(b"xreadgroup", true, None));
        assert!(wakes(b"blpop", false, Some(Kind::List)));
        assert!(!wakes(b"blpop", false, Some(Kind::Stream)));
        assert!(wakes(b"bzpopmin", false, Some(Kind::ZSet)));
        assert!(!wakes(b"bzmpop", false, Some(Kind::Set)));
    }

    /// One step of [`registry_matches_a_model`]: block client `c` (if it is not
    /// blocked) on the keys picked by the bits of `keys` in database `db`, or unblock it.
    #[derive(Debug, Clone)]
    enum Step {
        Block { c: u64, db: usize, keys: u8 },
        Unblock { c: u64 },
    }

    proptest! {
        /// The registry against a map of (db, key) to the clients in blocking order:
        /// any interleaving of blocks and unblocks of up to six clients on up to eight
        /// keys in two databases leaves the same FIFOs, key count and client count.
        #[test]
        fn registry_matches_a_model(steps in proptest::collection::vec(
            prop_oneof![
                (0u64..6, 0usize..2, 1u8..=255).prop_map(|(c, db, keys)| Step::Block { c, db, keys }),
                (0u64..6).prop_map(|c| Step::Unblock { c }),
            ],
            1..80,
        )) {
            use std::collections::BTreeMap;
            let names: Vec<Bytes> = (0..8).map(|i| k(&format!("key:{i}"))).collect();
            let mut real = BlockedClients::default();
            let mut model: BTreeMap<(usize, Bytes), Vec<u64>> = BTreeMap::new();
            let mut blocked: BTreeMap<u64, (usize, Vec<Bytes>)> = BTreeMap::new();
            for step in steps {
                match step {
                    Step::Block { c, db, keys } => {
                        if blocked.contains_key(&c) {
                            continue;
                        }
                        let keys: Vec<Bytes> = (0..8)
                            .filter(|i| keys & (1 << i) != 0)
                            .map(|i| names[i].clone())
                            .collect();
                        real.add(c, db, &keys, Some(c));
                        for key in &keys {
                            model.entry((db, key.clone())).or_default().push(c);
                        }
                        blocked.insert(c, (db, keys));
                    }
                    Step::Unblock { c } => {
                        let Some((db, keys)) = blocked.remove(&c) else {
                            continue;
                        };
                        real.remove(c, db, &keys, Some(c));
                        for key in &keys {
                            let q = model.get_mut(&(db, key.clone())).expect("registered");
                            q.retain(|&x| x != c);
                            if q.is_empty() {
                                model.remove(&(db, key.clone()));
                            }
                        }
                    }
                }
                prop_assert_eq!(real.len(), blocked.len());
                prop_assert_eq!(real.keys_len(), model.len());
                for db in 0..2 {
                    for name in &names {
                        let want = model.get(&(db, name.clone())).cloned().unwrap_or_default();
                        prop_assert_eq!(real.has_waiters(db, name), !want.is_empty());
                        prop_assert_eq!(real.waiters(db, name), want);
                    }
                }
                let mut keys = real.all_keys();
                keys.sort();
                prop_assert_eq!(keys, model.keys().cloned().collect::<Vec<_>>());
                prop_assert_eq!(real.next_deadline(), blocked.keys().next().copied());
            }
        }
    }

    #[test]
    fn databases_are_separate() {
        let mut b = BlockedClients::default();
        b.add(1, 0, &[k("a")], None);
        assert!(!b.has_waiters(1, &k("a")));
    }
}
