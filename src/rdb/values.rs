//! Strings, lists, hashes, sets and sorted sets in Redis's RDB format.
//!
//! Written in the plain encodings every Redis since 2.x reads (a Redis 7.0 converts them
//! to its compact encodings itself when they are small enough):
//!
//! ```text
//! type 0  string      <string>
//! type 1  list        <n: len> n × <element: string>              head first
//! type 2  set         <n: len> n × <member: string>
//! type 4  hash        <n: len> n × ( <field: string> <value: string> )
//! type 5  zset (2)    <n: len> n × ( <member: string> <score: f64 LE, 8 bytes> )
//! ```

use super::write::{len, string};
use crate::types::Value;

/// RDB type numbers of the plain encodings (`rdb.h`).
pub mod plain {
    /// `RDB_TYPE_STRING`
    pub const STRING: u8 = 0;
    /// `RDB_TYPE_LIST`
    pub const LIST: u8 = 1;
    /// `RDB_TYPE_SET`
    pub const SET: u8 = 2;
    /// `RDB_TYPE_HASH`
    pub const HASH: u8 = 4;
    /// `RDB_TYPE_ZSET_2`
    pub const ZSET_2: u8 = 5;
}

/// Appends the value's type byte, then (when `key` is given, as in a file) the key, then
/// the value. Streams are written by `rdb/stream.rs`; here they write nothing.
pub fn write(out: &mut Vec<u8>, key: Option<&[u8]>, value: &Value) {
    let kind = match value {
        Value::String(_) => plain::STRING,
        Value::List(_) => plain::LIST,
        Value::Set(_) => plain::SET,
        Value::Hash(_) => plain::HASH,
        Value::ZSet(_) => plain::ZSET_2,
        Value::Stream(_) => return,
    };
    out.push(kind);
    if let Some(key) = key {
        string(out, key);
    }
    match value {
        Value::String(s) => string(out, &s.to_bytes()),
        Value::List(l) => {
            len(out, l.len() as u64);
            for e in l.iter() {
                string(out, &e);
            }
        }
        Value::Set(s) => {
            len(out, s.len() as u64);
            for m in s.iter() {
                string(out, &m);
            }
        }
        Value::Hash(h) => {
            len(out, h.len() as u64);
            for (f, v) in h.iter() {
                string(out, &f);
                string(out, &v);
            }
        }
        Value::ZSet(z) => {
            len(out, z.len() as u64);
            for (m, score) in z.iter() {
                string(out, &m);
                out.extend_from_slice(&score.to_le_bytes());
            }
        }
        Value::Stream(_) => {}
    }
}
