//! What a write tells everyone who must know, in one place.
//!
//! A write to a key is seen by four parties besides the reply: keyspace notifications
//! (the type's event, and `del` when the key goes), WATCH (the key is touched), clients
//! blocked on the key (woken to look again), and the log and replicas (the effect is
//! propagated). Redis spreads these over each command (`signalModifiedKey`,
//! `notifyKeyspaceEvent`, `dbDelete` and `server.dirty++` in t_hash.c, t_set.c,
//! t_list.c, t_zset.c); here the four collection families and the key commands call
//! the helpers below, so a rule changed once holds for all of them:
//!
//! - [`Ctx::delete_key`]: a key leaves the database: WATCH and blocked clients are
//!   told ([`Core::key_deleted`](super::Core::key_deleted)) and `del` is notified.
//! - [`Ctx::delete_if_emptied`]: Redis never keeps an empty hash, set, list or sorted
//!   set; a write that empties one deletes the key as [`Ctx::delete_key`] does.
//! - [`Ctx::delete_and_log`]: a deletion that is the command's whole effect (GETDEL, an
//!   EXPIRE in the past): counted dirty and logged as `DEL key`; [`Ctx::expire_at_and_log`]
//!   the same for a deadline set, logged as `PEXPIREAT key <unix ms>`.
//! - [`Ctx::collection_written`]: the epilogue of a write to a collection: the type's
//!   event, WATCH and the dirty counter, the deletion if the write emptied it, the
//!   effect logged ([`Ctx::collection_changed`] without the last step, for a command
//!   whose effect is logged elsewhere, as the list pops are).

use super::Ctx;
use super::notify::class;
use crate::types::Value;

impl Ctx<'_> {
    /// Removes `key` from the client's database with the side effects of a deletion
    /// (Redis: `dbDelete` + `notifyKeyspaceEvent("del")`): WATCH invalidation, blocked
    /// clients that wait on the key woken, and the `del` keyspace event. True if the key
    /// existed. The caller counts `dirty` and propagates: DEL counts each key, a
    /// collection emptied by a write counts the write.
    pub fn delete_key(&mut self, key: &[u8]) -> bool {
        let lazy = self.core.lazy.server_del;
        self.delete_key_freeing(key, lazy)
    }

    /// [`Ctx::delete_key`], freeing the value in the background when `lazy` and it is
    /// big (UNLINK, DEL under `lazyfree-lazy-user-del`: `core/lazyfree.rs`).
    pub fn delete_key_freeing(&mut self, key: &[u8], lazy: bool) -> bool {
        let db = self.client.db;
        let Some(value) = self.core.dbs[db].remove(key) else {
            return false;
        };
        self.core.free_deleted(value, lazy);
        self.core.key_deleted(db, key);
        self.notify(class::GENERIC, "del", key);
        true
    }

    /// After a write that may have emptied the hash, set, list or sorted set at `key`:
    /// deletes the key if so, as [`Ctx::delete_key`] does (Redis never keeps an empty
    /// collection). True if deleted. A string or stream is never deleted for being
    /// empty. A caller that knows whether it emptied the collection passes that to
    /// [`Ctx::collection_written`] instead, saving the lookup.
    pub fn delete_if_emptied(&mut self, key: &[u8]) -> bool {
        let emptied = match self.db().get(key) {
            Some(Value::Hash(h)) => h.is_empty(),
            Some(Value::Set(s)) => s.is_empty(),
            Some(Value::List(l)) => l.is_empty(),
            Some(Value::ZSet(z)) => z.is_empty(),
            Some(Value::String(_) | Value::Stream(_)) | None => false,
        };
        emptied && self.delete_key(key)
    }

    /// Deletes `key` as the whole effect of the running command (GETDEL, GETEX or
    /// EXPIRE with a time already past): [`Ctx::delete_key`], one dirty write, and
    /// `DEL key` logged, so a replay never depends on the clock. No-op when the key
    /// does not exist.
    pub fn delete_and_log(&mut self, key: &[u8]) {
        if self.delete_key(key) {
            self.core.dirty += 1;
            self.propagate(&[b"DEL".as_slice(), key]);
        }
    }

    /// Sets `key`'s deadline to `at` (unix ms) as the command's effect (EXPIRE and its
    /// kin, GETEX): WATCH and one dirty write, the `expire` event, and `PEXPIREAT key at`
    /// logged, so a replay expires the key at the same instant whenever it runs.
    pub fn expire_at_and_log(&mut self, key: &[u8], at: u64) {
        let db = self.client.db;
        self.core.dbs[db].set_expire(key, at);
        self.modified(key);
        self.notify(class::GENERIC, "expire", key);
        let mut text = itoa::Buffer::new();
        let at = text.format(at).as_bytes();
        self.propagate(&[b"PEXPIREAT".as_slice(), key, at]);
    }

    /// The epilogue of a write that changed the collection at `key` (a hash, set, list
    /// or sorted set), its effect logged by the caller: the type's keyspace `event` of
    /// `class`, WATCH invalidation and one dirty write ([`Ctx::modified`]), and the key
    /// deleted when the write `emptied` the collection ([`Ctx::delete_key`], whose `del`
    /// follows the type's event as in Redis).
    pub fn collection_changed(&mut self, class: u32, event: &str, key: &[u8], emptied: bool) {
        self.notify(class, event, key);
        self.modified(key);
        if emptied {
            self.delete_key(key);
        }
    }

    /// [`Ctx::collection_changed`] followed by `effect` logged and sent to replicas: the
    /// whole epilogue of a collection write whose effect is known when it ends.
    pub fn collection_written<A: AsRef<[u8]>>(
        &mut self,
        class: u32,
        event: &str,
        key: &[u8],
        emptied: bool,
        effect: &[A],
    ) {
        self.collection_changed(class, event, key, emptied);
        self.propagate(effect);
    }
}
