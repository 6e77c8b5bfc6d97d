//! Pub/Sub's tables, as plain data: who listens to which channel, pattern and shard
//! channel (Redis: `server.pubsub_channels`, `server.pubsub_patterns`,
//! `server.pubsubshard_channels`, and each client's `pubsub_*` sets).
//!
//! ```text
//!  PubSub ── tables[Channel]: name    ──▶ Subscribers {client id, ...}
//!         ├─ tables[Pattern]: pattern ──▶ Subscribers
//!         └─ tables[Shard]:   name    ──▶ Subscribers
//!
//!  ClientSubs (one per client, kept by the client) ── [Channel] {name, ...}
//!                                                   ├ [Pattern] {pattern, ...}
//!                                                   └ [Shard]   {name, ...}
//! ```
//!
//! Invariants, kept by [`PubSub::subscribe`], [`PubSub::unsubscribe`] and
//! [`PubSub::unsubscribe_all`], the only functions that change either side: client `id`
//! is in `tables[k][name]` exactly when `name` is in that client's `ClientSubs[k]`; no
//! table holds an empty subscriber set (a channel nobody listens to is gone, as Redis
//! frees it, so `PUBSUB CHANNELS` and `NUMPAT` count live entries only).
//!
//! This module knows no client, socket or reply: the core (`core/pubsub.rs`) owns a
//! [`PubSub`], keeps a [`ClientSubs`] in each client, and formats and delivers the
//! messages. Patterns are Redis's glob patterns ([`crate::util::glob_match`], Redis's
//! `stringmatchlen`), matched case-sensitively against every published channel name.
//!
//! Sets are [`SmallSet`]s: a vector while small (most channels have a few subscribers and
//! most clients a few channels; one subscription then costs its 8-byte id or its
//! 24-byte name), a hash set beyond, so a channel with 10,000 subscribers or a client
//! with 100,000 channels still subscribes and unsubscribes in constant time.

use crate::short_bytes::ShortBytes;
use std::borrow::Borrow;
use std::hash::Hash;

/// The hasher of every table: seeded per process, as channel names come from clients.
type Hasher = foldhash::fast::RandomState;

/// A hash set with this module's hasher.
type HashSet<T> = hashbrown::HashSet<T, Hasher>;

/// A hash map with this module's hasher.
type HashMap<K, V> = hashbrown::HashMap<K, V, Hasher>;

/// Which of the three tables (Redis's `pubsubtype`, plus patterns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Channels of SUBSCRIBE / PUBLISH.
    Channel = 0,
    /// Patterns of PSUBSCRIBE.
    Pattern = 1,
    /// Shard channels of SSUBSCRIBE / SPUBLISH.
    Shard = 2,
}

/// The most elements a [`SmallSet`] keeps in its vector before it becomes a hash set.
const FEW_MAX: usize = 16;

/// A set kept as a vector (insertion order, linear search) up to [`FEW_MAX`] elements
/// and as a boxed hash set beyond; it goes back to the vector once emptied.
#[derive(Debug, Clone)]
pub struct SmallSet<T>(Repr<T>);

#[derive(Debug, Clone)]
enum Repr<T> {
    /// At most [`FEW_MAX`] distinct elements, in insertion order.
    Few(Vec<T>),
    /// More than [`FEW_MAX`] once; stays a hash set until emptied.
    Many(Box<HashSet<T>>),
}

impl<T> Default for SmallSet<T> {
    fn default() -> Self {
        SmallSet(Repr::Few(Vec::new()))
    }
}

impl<T: Hash + Eq> SmallSet<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Few(v) => v.len(),
            Repr::Many(s) => s.len(),
        }
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when `x` is in the set.
    pub fn contains<Q>(&self, x: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        match &self.0 {
            Repr::Few(v) => v.iter().any(|e| e.borrow() == x),
            Repr::Many(s) => s.contains(x),
        }
    }

    /// Adds `x`; false if it was there already.
    pub fn insert(&mut self, x: T) -> bool {
        match &mut self.0 {
            Repr::Few(v) => {
                if v.contains(&x) {
                    return false;
                }
                if v.len() < FEW_MAX {
                    v.push(x);
                    return true;
                }
                let mut set: HashSet<T> = v.drain(..).collect();
                set.insert(x);
                self.0 = Repr::Many(Box::new(set));
                true
            }
            Repr::Many(s) => s.insert(x),
        }
    }

    /// Removes `x`; false if it was not there.
    pub fn remove<Q>(&mut self, x: &Q) -> bool
    where
        T: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        match &mut self.0 {
            Repr::Few(v) => match v.iter().position(|e| e.borrow() == x) {
                Some(i) => {
                    v.remove(i);
                    true
                }
                None => false,
            },
            Repr::Many(s) => {
                let removed = s.remove(x);
                if s.is_empty() {
                    self.0 = Repr::Few(Vec::new());
                }
                removed
            }
        }
    }

    /// The elements (insertion order while small).
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        let (few, many) = match &self.0 {
            Repr::Few(v) => (Some(v.iter()), None),
            Repr::Many(s) => (None, Some(s.iter())),
        };
        few.into_iter().flatten().chain(many.into_iter().flatten())
    }

    /// Empties the set, returning its elements.
    pub fn take(&mut self) -> Vec<T> {
        match std::mem::take(&mut self.0) {
            Repr::Few(v) => v,
            Repr::Many(s) => s.into_iter().collect(),
        }
    }

    /// Heap bytes held (the allocation's length in elements, before the allocator's size
    /// classes), for memory reports.
    pub fn heap_bytes(&self) -> usize {
        match &self.0 {
            Repr::Few(v) => v.capacity() * std::mem::size_of::<T>(),
            Repr::Many(s) => {
                std::mem::size_of::<HashSet<T>>()
                    + s.capacity() * (std::mem::size_of::<T>() + 1)
                    + 16
            }
        }
    }
}

impl<T> Default for Repr<T> {
    fn default() -> Self {
        Repr::Few(Vec::new())
    }
}

/// The client ids subscribed to one channel or pattern.
pub type Subscribers = SmallSet<u64>;

/// One client's subscriptions, by [`Kind`] (Redis: `c->pubsub_channels`,
/// `c->pubsub_patterns`, `c->pubsubshard_channels`).
#[derive(Debug, Clone, Default)]
pub struct ClientSubs {
    sets: [SmallSet<ShortBytes>; 3],
}

impl ClientSubs {
    /// Number of `kind` subscriptions (CLIENT LIST `sub=`, `psub=`, `ssub=`).
    pub fn count(&self, kind: Kind) -> usize {
        self.sets[kind as usize].len()
    }

    /// Channels plus patterns: the count that (P)SUBSCRIBE and (P)UNSUBSCRIBE replies
    /// carry (Redis's `clientSubscriptionsCount`; shard channels count apart).
    pub fn channels_and_patterns(&self) -> usize {
        self.count(Kind::Channel) + self.count(Kind::Pattern)
    }

    /// Every subscription of every kind (Redis's `clientTotalPubSubSubscriptionCount`):
    /// non-zero exactly while the client is in Pub/Sub mode (flag `P`).
    pub fn total(&self) -> usize {
        self.sets.iter().map(SmallSet::len).sum()
    }

    /// True when subscribed to `name` as `kind`.
    pub fn contains(&self, kind: Kind, name: &[u8]) -> bool {
        self.sets[kind as usize].contains(name)
    }

    /// The `kind` names subscribed to.
    pub fn names(&self, kind: Kind) -> impl Iterator<Item = &[u8]> {
        self.sets[kind as usize].iter().map(|n| &**n)
    }
}

/// The server's three tables.
#[derive(Debug, Default)]
pub struct PubSub {
    tables: [HashMap<ShortBytes, Subscribers>; 3],
}

impl PubSub {
    /// Subscribes client `id` (whose sets are `subs`) to `name`; false if it already was.
    pub fn subscribe(&mut self, kind: Kind, subs: &mut ClientSubs, id: u64, name: &[u8]) -> bool {
        let mine = &mut subs.sets[kind as usize];
        if mine.contains(name) {
            return false;
        }
        mine.insert(ShortBytes::new(name));
        let table = &mut self.tables[kind as usize];
        match table.get_mut(name) {
            Some(s) => {
                s.insert(id);
            }
            None => {
                let mut s = Subscribers::default();
                s.insert(id);
                table.insert(ShortBytes::new(name), s);
            }
        }
        true
    }

    /// Unsubscribes client `id` from `name`; false if it was not subscribed.
    pub fn unsubscribe(&mut self, kind: Kind, subs: &mut ClientSubs, id: u64, name: &[u8]) -> bool {
        if !subs.sets[kind as usize].remove(name) {
            return false;
        }
        let table = &mut self.tables[kind as usize];
        let emptied = match table.get_mut(name) {
            Some(s) => {
                s.remove(&id);
                s.is_empty()
            }
            None => false,
        };
        if emptied {
            table.remove(name);
        }
        true
    }

    /// Unsubscribes client `id` from every `kind` name; returns the names, in the
    /// client's order.
    pub fn unsubscribe_all(
        &mut self,
        kind: Kind,
        subs: &mut ClientSubs,
        id: u64,
    ) -> Vec<ShortBytes> {
        let names = subs.sets[kind as usize].take();
        let table = &mut self.tables[kind as usize];
        for name in &names {
            let emptied = match table.get_mut(&**name) {
                Some(s) => {
                    s.remove(&id);
                    s.is_empty()
                }
                None => false,
            };
            if emptied {
                table.remove(&**name);
            }
        }
        names
    }

    /// The subscribers of `name` in table `kind`.
    pub fn subscribers(&self, kind: Kind, name: &[u8]) -> Option<&Subscribers> {
        self.tables[kind as usize].get(name)
    }

    /// Number of clients subscribed to `name` as `kind` (PUBSUB NUMSUB / SHARDNUMSUB).
    pub fn numsub(&self, kind: Kind, name: &[u8]) -> usize {
        self.subscribers(kind, name).map_or(0, SmallSet::len)
    }

    /// Number of distinct names in table `kind` (INFO `pubsub_channels`,
    /// `pubsub_patterns`, `pubsubshard_channels`; PUBSUB NUMPAT).
    pub fn len(&self, kind: Kind) -> usize {
        self.tables[kind as usize].len()
    }

    /// True when nobody is subscribed to anything.
    pub fn is_empty(&self) -> bool {
        self.tables.iter().all(|t| t.is_empty())
    }

    /// True when some client has a pattern subscription (PUBLISH then matches them).
    pub fn has_patterns(&self) -> bool {
        !self.tables[Kind::Pattern as usize].is_empty()
    }

    /// The patterns that match `channel`, with their subscribers (Redis's loop over
    /// `server.pubsub_patterns` in `pubsubPublishMessage`).
    pub fn matching_patterns<'a>(
        &'a self,
        channel: &'a [u8],
    ) -> impl Iterator<Item = (&'a [u8], &'a Subscribers)> + 'a {
        self.tables[Kind::Pattern as usize]
            .iter()
            .filter(move |(p, _)| crate::util::glob_match(p, channel, false))
            .map(|(p, s)| (&**p, s))
    }

    /// The names in table `kind` matching `pattern` (all without one): PUBSUB CHANNELS
    /// and SHARDCHANNELS.
    pub fn names<'a>(
        &'a self,
        kind: Kind,
        pattern: Option<&'a [u8]>,
    ) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.tables[kind as usize]
            .keys()
            .filter(move |n| pattern.is_none_or(|p| crate::util::glob_match(p, n, false)))
            .map(|n| &**n)
    }

    /// Approximate heap bytes of the tables (not counting the clients' own sets).
    pub fn heap_bytes(&self) -> usize {
        self.tables
            .iter()
            .map(|t| {
                t.capacity() * (std::mem::size_of::<(ShortBytes, Subscribers)>() + 1)
                    + t.iter()
                        .map(|(k, s)| k.heap_len() + s.heap_bytes())
                        .sum::<usize>()
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_channel_lives_while_someone_listens() {
        let mut ps = PubSub::default();
        let (mut a, mut b) = (ClientSubs::default(), ClientSubs::default());
        assert!(ps.subscribe(Kind::Channel, &mut a, 1, b"news"));
        assert!(!ps.subscribe(Kind::Channel, &mut a, 1, b"news"));
        assert!(ps.subscribe(Kind::Channel, &mut b, 2, b"news"));
        assert!(ps.subscribe(Kind::Pattern, &mut b, 2, b"n*"));
        assert_eq!(ps.numsub(Kind::Channel, b"news"), 2);
        assert_eq!(b.channels_and_patterns(), 2);
        assert_eq!(b.total(), 2);
        assert!(ps.unsubscribe(Kind::Channel, &mut a, 1, b"news"));
        assert!(!ps.unsubscribe(Kind::Channel, &mut a, 1, b"news"));
        assert_eq!(ps.len(Kind::Channel), 1);
        let gone = ps.unsubscribe_all(Kind::Channel, &mut b, 2);
        assert_eq!(gone.len(), 1);
        assert_eq!(ps.len(Kind::Channel), 0);
        assert_eq!(ps.numsub(Kind::Channel, b"news"), 0);
        assert_eq!(ps.matching_patterns(b"nope").count(), 1);
        assert_eq!(ps.matching_patterns(b"xnope").count(), 0);
    }

    #[test]
    fn shard_channels_are_a_table_apart() {
        let mut ps = PubSub::default();
        let mut a = ClientSubs::default();
        ps.subscribe(Kind::Shard, &mut a, 1, b"s");
        assert_eq!(ps.len(Kind::Channel), 0);
        assert_eq!(ps.len(Kind::Shard), 1);
        assert_eq!(a.channels_and_patterns(), 0);
        assert_eq!(a.total(), 1);
        assert_eq!(
            ps.names(Kind::Shard, Some(b"[rs]")).collect::<Vec<_>>(),
            [b"s"]
        );
    }

    #[test]
    fn small_sets_grow_into_hash_sets_and_back() {
        let mut s = SmallSet::<u64>::default();
        for i in 0..100 {
            assert!(s.insert(i));
            assert!(!s.insert(i));
        }
        assert_eq!(s.len(), 100);
        assert!(matches!(s.0, Repr::Many(_)));
        for i in 0..100 {
            assert!(s.contains(&i));
            assert!(s.remove(&i));
        }
        assert!(s.is_empty());
        assert!(matches!(s.0, Repr::Few(_)));
    }

    mod prop {
        use super::super::*;
        use proptest::prelude::*;
        use std::collections::{BTreeMap, BTreeSet};

        #[derive(Debug, Clone)]
        enum Op {
            Sub(usize, u8, u8),
            Unsub(usize, u8, u8),
            UnsubAll(usize, u8),
        }

        fn kind(k: u8) -> Kind {
            match k % 3 {
                0 => Kind::Channel,
                1 => Kind::Pattern,
                _ => Kind::Shard,
            }
        }

        fn op() -> impl Strategy<Value = Op> {
            // Few clients and names, so sets collide, grow past FEW_MAX and empty.
            prop_oneof![
                4 => (0..24usize, 0..3u8, 0..40u8).prop_map(|(c, k, n)| Op::Sub(c, k, n)),
                2 => (0..24usize, 0..3u8, 0..40u8).prop_map(|(c, k, n)| Op::Unsub(c, k, n)),
                1 => (0..24usize, 0..3u8).prop_map(|(c, k)| Op::UnsubAll(c, k)),
            ]
        }

        proptest! {
            #[test]
            fn tables_agree_with_the_clients_sets(ops in proptest::collection::vec(op(), 0..600)) {
                let mut ps = PubSub::default();
                let mut clients = vec![ClientSubs::default(); 24];
                // model: (kind, name) -> ids
                let mut model: BTreeMap<(u8, Vec<u8>), BTreeSet<u64>> = BTreeMap::new();
                for op in ops {
                    match op {
                        Op::Sub(c, k, n) => {
                            let name = vec![b'a' + n % 26; 1 + n as usize / 26];
                            let added = ps.subscribe(kind(k), &mut clients[c], c as u64, &name);
                            let m = model.entry((k % 3, name)).or_default().insert(c as u64);
                            prop_assert_eq!(added, m);
                        }
                        Op::Unsub(c, k, n) => {
                            let name = vec![b'a' + n % 26; 1 + n as usize / 26];
                            let removed = ps.unsubscribe(kind(k), &mut clients[c], c as u64, &name);
                            let key = (k % 3, name);
                            let m = model.get_mut(&key).is_some_and(|s| s.remove(&(c as u64)));
                            if model.get(&key).is_some_and(|s| s.is_empty()) {
                                model.remove(&key);
                            }
                            prop_assert_eq!(removed, m);
                        }
                        Op::UnsubAll(c, k) => {
                            let gone = ps.unsubscribe_all(kind(k), &mut clients[c], c as u64);
                            let mut expect = 0;
                            model.retain(|(mk, _), ids| {
                                if *mk == k % 3 && ids.remove(&(c as u64)) {
                                    expect += 1;
                                }
                                !ids.is_empty()
                            });
                            prop_assert_eq!(gone.len(), expect);
                        }
                    }
                }
                for k in 0..3u8 {
                    let names: BTreeSet<Vec<u8>> =
                        ps.names(kind(k), None).map(<[u8]>::to_vec).collect();
                    let want: BTreeSet<Vec<u8>> = model
                        .keys()
                        .filter(|(mk, _)| *mk == k)
                        .map(|(_, n)| n.clone())
                        .collect();
                    prop_assert_eq!(names, want);
                    for ((mk, name), ids) in &model {
                        if *mk != k {
                            continue;
                        }
                        let got: BTreeSet<u64> = ps
                            .subscribers(kind(k), name)
                            .map(|s| s.iter().copied().collect())
                            .unwrap_or_default();
                        prop_assert_eq!(&got, ids);
                        for id in ids {
                            prop_assert!(clients[*id as usize].contains(kind(k), name));
                        }
                    }
                    for (c, subs) in clients.iter().enumerate() {
                        for name in subs.names(kind(k)) {
                            prop_assert!(model
                                .get(&(k, name.to_vec()))
                                .is_some_and(|s| s.contains(&(c as u64))));
                        }
                    }
                }
            }
        }
    }
}
