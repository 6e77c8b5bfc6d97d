//! Prefetching the keys of a pipelined batch.
//!
//! A command's first keyspace probe is a hash, a load of the key's bucket and a load of
//! the slot it points to. On a keyspace larger than the caches both loads miss, and one
//! command at a time each miss is waited for in full: in a profile of `SET` on 100,000
//! random keys (`redis-benchmark -r 100000 -P 32`) the two loads of that first probe were
//! a third of the server's time. A connection that has several complete commands in its
//! buffer knows their keys before it runs them, so the misses can overlap instead of
//! following one another (Redis 8 does the same for the commands its I/O threads parsed,
//! `memory_prefetch.c`), in three steps, each asking only for what the one before it
//! brought in:
//!
//! 1. [`Core::prefetch_bucket`] as each command is parsed: the key's hash, its bucket;
//! 2. [`Core::prefetch_slots`] once the look-ahead is parsed: each bucket's first slot;
//! 3. [`Core::prefetch_value`] as the command before it starts: the value's own data
//!    (a long string's bytes, a list, sorted set or stream header), which the command
//!    reads right after the slot: `GET` of 100-byte values over 100,000 random keys
//!    (`-P 32`) took 720 ns of server CPU a request with it against 840 ns without.
//!
//! The connection parses ahead (`server/lookahead.rs`) only over
//! commands for which that cannot change how the commands after them parse: a command
//! with a fixed first key ([`Core::lookahead_key`]) — a data command, which changes
//! neither the client's authentication, its database nor the parser's limits. The first
//! command without one ends the look-ahead; it runs before anything after it is parsed.
//!
//! One command of several keys (MGET, MSET, DEL, XREADGROUP over many streams) does the
//! first two steps for its own keys before touching the first (`Core::touch_keys`,
//! core/evict.rs).
//!
//! A prefetch is only a hint: a key that is missing, a table that grows or rehashes in
//! between, or a command that does not look its key up after all costs the hash and two
//! cache-line requests, nothing else.

use super::Core;
use super::command::flags;
use crate::resp::Argv;

/// The first key of a command a connection may parse ahead over
/// ([`Core::lookahead_key`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LookaheadKey {
    /// Where the key is in the command's arguments.
    pub at: usize,
    /// The command appends to the stream at the key (XADD): its path to the tail node is
    /// worth prefetching too ([`Core::prefetch_stream_tails`]).
    pub appends: bool,
}

/// How many parsed commands a connection holds ahead of the one running.
pub const LOOKAHEAD: usize = 16;

/// Below this many keys a database's buckets and slots stay in the caches between
/// commands (about 72 bytes a key: a few tens of KB), so a connection does not read
/// ahead at all: the look-ahead's own cost (a command lookup and a hash more per
/// command) would buy nothing.
pub const LOOKAHEAD_MIN_KEYS: usize = 1024;

/// Most keys of one group read whose paths [`Core::prefetch_group_reads`] walks (the
/// sharded auction's readers name 32).
const GROUP_READ_KEYS: usize = 32;

impl Core {
    /// Where `argv`'s first key is, when its command has a fixed first key (no
    /// container, no keys found by parsing the arguments): the commands a connection
    /// may parse ahead over. `None` for every other command, unknown ones included.
    pub fn lookahead_key(&mut self, argv: &Argv) -> Option<LookaheadKey> {
        let spec = self.lookup_command(argv.first()?)?;
        if spec.first_key <= 0
            || !spec.subcommands.is_empty()
            || spec.flags & flags::MOVABLEKEYS != 0
        {
            return None;
        }
        let at = spec.first_key as usize;
        (at < argv.len()).then_some(LookaheadKey {
            at,
            appends: spec.name == "xadd",
        })
    }

    /// Whether a connection on database `db` reads ahead ([`LOOKAHEAD_MIN_KEYS`]).
    pub fn worth_reading_ahead(&self, db: usize) -> bool {
        self.dbs
            .get(db)
            .is_some_and(|d| d.keys.len() >= LOOKAHEAD_MIN_KEYS)
    }

    /// Step 1 of a prefetch, as a command is parsed ahead: `key`'s hash in database `db`
    /// (kept with the command for the next steps), its bucket asked for. `None` when the
    /// database is missing or empty.
    pub fn prefetch_bucket(&self, db: usize, key: &[u8]) -> Option<u64> {
        let dict = &self.dbs.get(db)?.keys;
        if dict.is_empty() {
            return None;
        }
        let hash = dict.hash_key(key);
        dict.prefetch_bucket(hash);
        Some(hash)
    }

    /// Step 2, once every command of the look-ahead was parsed (their buckets having had
    /// the time to arrive): the first slot of each bucket's chain asked for.
    pub fn prefetch_slots(&self, db: usize, hashes: impl IntoIterator<Item = u64>) {
        let Some(dict) = self.dbs.get(db).map(|d| &d.keys) else {
            return;
        };
        for hash in hashes {
            dict.prefetch_slot(hash);
        }
    }

    /// Step 3 for the XADDs of a look-ahead (`tails`: each one's key and its hash, in
    /// order), right after step 2: each stream's path to its tail node, walked for all of
    /// them together, one level a round (`Stream::tail_prefetch`): the slots, the stream
    /// headers, the rax nodes from the root down, the tail node's start and end. An
    /// append to one of 1,024 streams otherwise waits for each level's miss in turn: in a
    /// profile of XADD to 1,024 streams pipelined 32 deep, the walk to the tail was 13% of
    /// the server and the node's header 4%. Reads only what the round before asked for.
    pub fn prefetch_stream_tails<'k>(
        &self,
        db: usize,
        tails: impl IntoIterator<Item = (u64, &'k [u8])>,
    ) {
        let (streams, n) = self.streams_at::<LOOKAHEAD, _>(db, tails, true);
        let mut walks: [Option<crate::stream::TailPrefetch<'_>>; LOOKAHEAD] =
            std::array::from_fn(|_| None);
        for (walk, stream) in walks.iter_mut().zip(&streams[..n]) {
            *walk = stream.map(crate::stream::Stream::tail_prefetch);
        }
        // A rax of 16-byte IDs is at most 17 nodes deep; the node's start and end follow.
        for _ in 0..20 {
            let mut pending = false;
            for walk in walks[..n].iter_mut().flatten() {
                pending |= walk.step();
            }
            if !pending {
                break;
            }
        }
    }

    /// For a group read of several keys (XREADGROUP over 32 shards), before it looks
    /// them up: each key's stream header, then the path from it to the group's name
    /// (the extra state, the group set, its list, the names), one level a round over all
    /// the keys, so that their misses overlap instead of each lookup waiting for its own
    /// five in turn. `keys` are the keys with their hashes; the dictionary slots are
    /// already cached (the access clock's pass looked every key up). Changes nothing.
    pub fn prefetch_group_reads<'k>(
        &self,
        db: usize,
        keys: impl IntoIterator<Item = (u64, &'k [u8])>,
    ) {
        let (streams, n) = self.streams_at::<GROUP_READ_KEYS, _>(db, keys, false);
        for level in 0..4 {
            let mut pending = false;
            for s in streams[..n].iter().flatten() {
                pending |= s.group_prefetch(level);
            }
            if !pending {
                break;
            }
        }
    }

    /// The streams at the first `N` of `keys` (each with its hash) in database `db`, in
    /// order, each one's header asked for; a stream named twice is kept once when
    /// `distinct` (the XADDs of a look-ahead may name one key many times). Keys that are
    /// missing or not streams are skipped. The second value is how many were found.
    fn streams_at<'k, const N: usize, I: IntoIterator<Item = (u64, &'k [u8])>>(
        &self,
        db: usize,
        keys: I,
        distinct: bool,
    ) -> ([Option<&crate::stream::Stream>; N], usize) {
        let mut streams: [Option<&crate::stream::Stream>; N] = [None; N];
        let mut n = 0;
        let Some(dict) = self.dbs.get(db).map(|d| &d.keys) else {
            return (streams, n);
        };
        for (hash, key) in keys.into_iter().take(N) {
            if let Some(crate::types::Value::Stream(s)) = dict.get_hashed(hash, key)
                && !(distinct
                    && streams[..n]
                        .iter()
                        .flatten()
                        .any(|seen| std::ptr::eq(*seen, &**s)))
            {
                crate::util::prefetch(&**s);
                streams[n] = Some(s);
                n += 1;
            }
        }
        (streams, n)
    }

    /// Step 3, as the command before it starts (its slot having arrived): the value's
    /// own data (`Value::heap_start`: a long string's bytes, a stream's header), its
    /// first two cache lines asked for. Reads the slot; changes nothing.
    pub fn prefetch_value(&self, db: usize, hash: u64, key: &[u8]) {
        let Some(start) = self
            .dbs
            .get(db)
            .and_then(|d| d.keys.get_hashed(hash, key))
            .and_then(crate::types::Value::heap_start)
        else {
            return;
        };
        crate::util::prefetch(start);
        crate::util::prefetch(start.wrapping_add(64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Value;
    use crate::types::string::StringValue;

    // Which commands are read ahead over needs the command table (installed from the
    // layer above): tests/pipeline.rs checks it end to end.

    #[test]
    fn prefetching_stream_tails_changes_nothing() {
        use crate::stream::{NodeLimits, Stream, StreamId};
        let mut core = Core::new(crate::config::Config::default(), 7000, &[]);
        core.prefetch_stream_tails(usize::MAX, [(1, &b"s"[..])]);
        core.prefetch_stream_tails(0, [(1, &b"s"[..])]);
        let keys: Vec<Vec<u8>> = (0..40).map(|i| format!("s:{i}").into_bytes()).collect();
        for (i, k) in keys.iter().enumerate() {
            // Streams of 0 to 3,900 entries (inline and tree indexes), and strings.
            let v = if i % 4 == 3 {
                Value::String(StringValue::new(b"not a stream"))
            } else {
                let mut s = Stream::new();
                for ms in 1..=(i as u64 * 100) {
                    s.append(
                        StreamId { ms, seq: 0 },
                        &[
                            bytes::Bytes::from_static(b"f"),
                            bytes::Bytes::from_static(b"v"),
                        ],
                        &NodeLimits::default(),
                    );
                }
                Value::Stream(Box::new(s))
            };
            core.dbs[0].insert(k, v);
        }
        let snapshot = |core: &Core| -> Vec<(u64, Option<StreamId>)> {
            keys.iter()
                .map(|k| match core.dbs[0].keys.get(k) {
                    Some(Value::Stream(s)) => (s.len(), s.last_entry().map(|e| e.id)),
                    _ => (u64::MAX, None),
                })
                .collect()
        };
        let before = snapshot(&core);
        // Every key once, a key repeated, more keys than a look-ahead holds, a missing one.
        let mut tails: Vec<(u64, &[u8])> = keys
            .iter()
            .map(|k| (core.dbs[0].keys.hash_key(k), k.as_slice()))
            .collect();
        tails.insert(1, tails[0]);
        tails.push((core.dbs[0].keys.hash_key(b"missing"), b"missing"));
        for chunk in tails.chunks(LOOKAHEAD + 3) {
            core.prefetch_stream_tails(0, chunk.iter().copied());
        }
        assert_eq!(snapshot(&core), before);
    }

    #[test]
    fn prefetching_keys_changes_nothing() {
        let mut core = Core::new(crate::config::Config::default(), 7000, &[]);
        let keys: Vec<Vec<u8>> = (0..100).map(|i| format!("key:{i}").into_bytes()).collect();
        // An empty database and a missing one: nothing to hash.
        assert_eq!(core.prefetch_bucket(0, b"key:1"), None);
        assert_eq!(core.prefetch_bucket(usize::MAX, b"key:1"), None);
        core.prefetch_slots(usize::MAX, [1, 2, 3]);
        core.prefetch_value(usize::MAX, 1, b"key:1");
        for (i, k) in keys.iter().enumerate() {
            // Short, long (a heap allocation) and integer strings.
            let v = if i % 3 == 0 {
                vec![b'x'; 100]
            } else {
                k.clone()
            };
            core.dbs[0].insert(k, Value::String(StringValue::new(&v)));
        }
        // Present and missing keys, in a table that grows and shrinks in between.
        for round in 0..2 {
            let hashes: Vec<(u64, &[u8])> = keys
                .iter()
                .map(Vec::as_slice)
                .chain([&b"missing"[..]])
                .map(|k| (core.prefetch_bucket(0, k).expect("a database with keys"), k))
                .collect();
            assert_eq!(hashes[5].0, core.dbs[0].keys.hash_key(&keys[5]));
            core.prefetch_slots(0, hashes.iter().map(|h| h.0));
            for (hash, key) in &hashes {
                core.prefetch_value(0, *hash, key);
            }
            assert_eq!(core.dbs[0].keys.len(), keys.len() + round);
            for k in &keys {
                assert!(core.dbs[0].keys.get(k).is_some());
            }
            core.dbs[0].insert(
                format!("more:{round}").as_bytes(),
                Value::String(StringValue::new(b"x")),
            );
        }
    }
}
