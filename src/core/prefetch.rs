//! Prefetching the keys of a pipelined batch.
//!
//! A command's first keyspace probe is a hash, a load of the key's bucket and a load of
//! the slot it points to. On a keyspace larger than the caches both loads miss, and one
//! command at a time each miss is waited for in full: in a profile of `SET` on 100,000
//! random keys (`redis-benchmark -r 100000 -P 32`) the two loads of that first probe were
//! a third of the server's time. A connection that has several complete commands in its
//! buffer knows their keys before it runs them, so it asks for all their buckets, then
//! for all their slots, and the misses overlap instead of following one another (Redis
//! 8 does the same for the commands its I/O threads parsed, `memory_prefetch.c`).
//!
//! The connection parses ahead ([`crate::server::connection`]'s look-ahead) only over
//! commands for which that cannot change how the commands after them parse: a command
//! with a fixed first key ([`Core::lookahead_key`]) — a data command, which changes
//! neither the client's authentication, its database nor the parser's limits. The first
//! command without one ends the look-ahead; it runs before anything after it is parsed.
//!
//! A prefetch is only a hint: a key that is missing, a table that grows or rehashes in
//! between, or a command that does not look its key up after all costs the hash and two
//! cache-line requests, nothing else.

use super::Core;
use super::command::flags;
use crate::resp::Argv;

/// How many parsed commands a connection holds ahead of the one running (and the most
/// keys one [`Core::prefetch_keys`] asks for).
pub const LOOKAHEAD: usize = 16;

/// Below this many keys a database's buckets and slots stay in the caches between
/// commands (about 72 bytes a key: a few tens of KB), so a connection does not read
/// ahead at all: the look-ahead's own cost (a command lookup and a hash more per
/// command) would buy nothing.
pub const LOOKAHEAD_MIN_KEYS: usize = 1024;

impl Core {
    /// Where `argv`'s first key is, when its command has a fixed first key (no
    /// container, no keys found by parsing the arguments): the commands a connection
    /// may parse ahead over. `None` for every other command, unknown ones included.
    pub fn lookahead_key(&mut self, argv: &Argv) -> Option<usize> {
        let spec = self.lookup_command(argv.first()?)?;
        if spec.first_key <= 0
            || !spec.subcommands.is_empty()
            || spec.flags & flags::MOVABLEKEYS != 0
        {
            return None;
        }
        let at = spec.first_key as usize;
        (at < argv.len()).then_some(at)
    }

    /// Whether a connection on database `db` reads ahead ([`LOOKAHEAD_MIN_KEYS`]).
    pub fn worth_reading_ahead(&self, db: usize) -> bool {
        self.dbs
            .get(db)
            .is_some_and(|d| d.keys.len() >= LOOKAHEAD_MIN_KEYS)
    }

    /// Asks the caches for what looking up each of `keys` in database `db` will read:
    /// first every key's bucket, then (those having had the time to arrive) the first
    /// slot of every bucket's chain. At most [`LOOKAHEAD`] keys.
    pub fn prefetch_keys<'k>(&self, db: usize, keys: impl IntoIterator<Item = &'k [u8]>) {
        let Some(dict) = self.dbs.get(db).map(|d| &d.keys) else {
            return;
        };
        if dict.is_empty() {
            return;
        }
        let mut hashes = [0u64; LOOKAHEAD];
        let mut n = 0;
        for key in keys.into_iter().take(LOOKAHEAD) {
            let hash = dict.hash_key(key);
            dict.prefetch_bucket(hash);
            hashes[n] = hash;
            n += 1;
        }
        for &hash in &hashes[..n] {
            dict.prefetch_slot(hash);
        }
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
    fn prefetching_keys_changes_nothing() {
        let mut core = Core::new(crate::config::Config::default(), 7000, &[]);
        let keys: Vec<Vec<u8>> = (0..100).map(|i| format!("key:{i}").into_bytes()).collect();
        // An empty database and a missing one: nothing to do.
        core.prefetch_keys(0, keys.iter().map(Vec::as_slice));
        core.prefetch_keys(usize::MAX, keys.iter().map(Vec::as_slice));
        for k in &keys {
            core.dbs[0].insert(k, Value::String(StringValue::new(k)));
        }
        // More keys than LOOKAHEAD, present and missing, in a growing table.
        for _ in 0..2 {
            core.prefetch_keys(0, keys.iter().map(Vec::as_slice).chain([&b"missing"[..]]));
            assert_eq!(core.dbs[0].keys.len(), keys.len());
            for k in &keys {
                assert!(core.dbs[0].keys.get(k).is_some());
            }
            core.dbs[0].insert(b"more", Value::String(StringValue::new(b"x")));
            core.dbs[0].remove(b"more");
        }
    }
}
