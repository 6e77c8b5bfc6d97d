//! The values a key can hold besides a stream: strings, lists, hashes, sets and sorted
//! sets, and [`Value`], the keyspace's sum of all six types.
//!
//! Each type is its own file with its own compact representation (chosen on measurement;
//! each file's header draws its layout). What the rest of the server needs from a type
//! is small and the same for all of them: build it from its elements (loading a
//! snapshot, RESTORE, RDB import), walk its elements in Redis's order (snapshots, DUMP,
//! replication), its length, the encoding name a Redis would report at that size
//! (`OBJECT ENCODING`) and what its allocations cost (`MEMORY USAGE`).
//!
//! This layer sits beside `stream/`: it uses only the leaf helpers and `stream` (a
//! [`Value`] may be a stream), and knows nothing of commands, clients or persistence.

pub mod geohash;
pub mod hash;
pub mod hash_ttl;
pub mod hyperloglog;
pub mod item;
pub mod list;
pub mod set;
pub mod string;
pub mod table;
pub mod zset;

pub use hash::Hash;
pub use list::List;
pub use set::Set;
pub use string::StringValue;
pub use zset::ZSet;

use crate::stream::Stream;

/// The size thresholds at which a Redis switches a collection from its packed encoding
/// to its large one (`hash-max-listpack-entries` and friends, read from the
/// configuration by the core and handed to the types' write paths). Defaults are Redis
/// 7.0's as Debian ships it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// `hash-max-listpack-entries`
    pub hash_max_listpack_entries: usize,
    /// `hash-max-listpack-value` (bytes of a field or value)
    pub hash_max_listpack_value: usize,
    /// `list-max-listpack-size`: entries per node when positive; when negative, -1..-5
    /// mean a node of at most 4, 8, 16, 32 or 64 KiB.
    pub list_max_listpack_size: i64,
    /// `list-compress-depth` (nodes at each end left uncompressed; 0 = none compressed)
    pub list_compress_depth: usize,
    /// `set-max-intset-entries`
    pub set_max_intset_entries: usize,
    /// `set-max-listpack-entries` (7.2)
    pub set_max_listpack_entries: usize,
    /// `set-max-listpack-value` (7.2; bytes of a member)
    pub set_max_listpack_value: usize,
    /// `zset-max-listpack-entries`
    pub zset_max_listpack_entries: usize,
    /// `zset-max-listpack-value` (bytes of a member)
    pub zset_max_listpack_value: usize,
    /// `hll-sparse-max-bytes` (bytes of a sparse HyperLogLog, header included)
    pub hll_sparse_max_bytes: usize,
}

impl Default for Thresholds {
    fn default() -> Thresholds {
        Thresholds {
            hash_max_listpack_entries: 512,
            hash_max_listpack_value: 64,
            list_max_listpack_size: -2,
            list_compress_depth: 0,
            set_max_intset_entries: 512,
            set_max_listpack_entries: 128,
            set_max_listpack_value: 64,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            hll_sparse_max_bytes: hyperloglog::HLL_SPARSE_MAX_BYTES,
        }
    }
}

/// The type of a key's value, as `TYPE` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `string`
    String,
    /// `list`
    List,
    /// `set`
    Set,
    /// `zset`
    ZSet,
    /// `hash`
    Hash,
    /// `stream`
    Stream,
}

impl Kind {
    /// The name `TYPE` replies with (and `SCAN ... TYPE` matches).
    pub fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::List => "list",
            Kind::Set => "set",
            Kind::ZSet => "zset",
            Kind::Hash => "hash",
            Kind::Stream => "stream",
        }
    }

    /// The kind `TYPE` calls `name` (case-insensitive, as `SCAN ... TYPE` compares).
    pub fn from_name(name: &[u8]) -> Option<Kind> {
        [
            Kind::String,
            Kind::List,
            Kind::Set,
            Kind::ZSet,
            Kind::Hash,
            Kind::Stream,
        ]
        .into_iter()
        .find(|k| name.eq_ignore_ascii_case(k.name().as_bytes()))
    }
}

/// A key's value: 24 bytes. A string sits inline (most keys of a Redis keyspace are
/// short strings, and an inline string costs no allocation); every other type is boxed,
/// the stream too, so that a dict slot (32 bytes and the key, core/dict.rs) is 48 bytes
/// for a key of up to 15 bytes rather than the 112 an inline 80-byte stream made it: a
/// small string key costs about 59 bytes in all (Redis 7.0: 72 to 106), for 32 more
/// bytes and one more pointer per stream.
#[derive(Debug, Clone)]
pub enum Value {
    /// A string (also what Redis stores integers, bitmaps and HyperLogLogs as).
    String(StringValue),
    /// A list.
    List(Box<List>),
    /// A hash (16 bytes: unboxed, its one allocation is its data).
    Hash(Hash),
    /// A set (16 bytes: unboxed, its one allocation is its data).
    Set(Set),
    /// A sorted set.
    ZSet(Box<ZSet>),
    /// A stream.
    Stream(Box<Stream>),
}

impl Value {
    /// Where the value's own data starts when it lives in an allocation of its own
    /// (a long string's bytes; a list, sorted set or stream header): what a command on
    /// it reads first after the keyspace slot. A prefetch hint (`core/prefetch.rs`);
    /// `None` for values held in the slot and for hashes and sets.
    pub fn heap_start(&self) -> Option<*const u8> {
        match self {
            Value::String(s) => s.heap_start(),
            Value::List(l) => Some(std::ptr::from_ref::<List>(l).cast()),
            Value::ZSet(z) => Some(std::ptr::from_ref::<ZSet>(z).cast()),
            Value::Stream(s) => Some(std::ptr::from_ref::<Stream>(s).cast()),
            Value::Hash(_) | Value::Set(_) => None,
        }
    }

    /// The value's type.
    pub fn kind(&self) -> Kind {
        match self {
            Value::String(_) => Kind::String,
            Value::List(_) => Kind::List,
            Value::Hash(_) => Kind::Hash,
            Value::Set(_) => Kind::Set,
            Value::ZSet(_) => Kind::ZSet,
            Value::Stream(_) => Kind::Stream,
        }
    }

    /// The stream, if this is one.
    pub fn as_stream(&self) -> Option<&Stream> {
        match self {
            Value::Stream(s) => Some(s),
            _ => None,
        }
    }

    /// The stream, mutable, if this is one.
    pub fn as_stream_mut(&mut self) -> Option<&mut Stream> {
        match self {
            Value::Stream(s) => Some(s),
            _ => None,
        }
    }

    /// `OBJECT ENCODING`'s name for the value.
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Stream(_) => "stream",
            Value::String(s) => s.encoding(),
            Value::List(l) => l.encoding(),
            Value::Hash(h) => h.encoding(),
            Value::Set(s) => s.encoding(),
            Value::ZSet(z) => z.encoding(),
        }
    }

    /// What `MEMORY USAGE` reports for the value (without its key): the value's own
    /// header and every allocation it owns.
    pub fn memory_usage(&self) -> usize {
        // The header a Redis object costs (robj), which the other types count as Redis.
        const OBJECT: usize = 16;
        match self {
            Value::Stream(s) => s.memory_usage(),
            // A string has no header of its own: its 24 bytes sit in the key's dict
            // slot, and only a long one allocates.
            Value::String(s) => std::mem::size_of::<StringValue>() + s.heap_size(),
            Value::List(l) => OBJECT + l.heap_size(),
            Value::Hash(h) => OBJECT + h.heap_size(),
            Value::Set(s) => OBJECT + s.heap_size(),
            Value::ZSet(z) => OBJECT + z.heap_size(),
        }
    }

    /// The value as a stream, if it is one.
    pub fn into_stream(self) -> Option<Stream> {
        match self {
            Value::Stream(s) => Some(*s),
            _ => None,
        }
    }
}

impl From<Stream> for Value {
    fn from(s: Stream) -> Value {
        Value::Stream(Box::new(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_round_trip() {
        for k in [
            Kind::String,
            Kind::List,
            Kind::Set,
            Kind::ZSet,
            Kind::Hash,
            Kind::Stream,
        ] {
            assert_eq!(Kind::from_name(k.name().to_uppercase().as_bytes()), Some(k));
        }
        assert_eq!(Kind::from_name(b"nope"), None);
    }

    #[test]
    fn a_value_is_no_larger_than_a_stream_slot_needs() {
        // The dict slot (core/dict.rs) holds a Value: 24 bytes keep a slot with a key of
        // up to 15 bytes at 48.
        assert_eq!(std::mem::size_of::<Value>(), 24);
    }
}
