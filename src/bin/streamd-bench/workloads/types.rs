//! The other Redis types' memory: `types/mem-<type>-<shape>`. Each loads the same data
//! on both servers, pipelined 1,000 commands deep, and reports the `used_memory` delta
//! per element (per key for strings), keys included.
//!
//! ```text
//! shape   keys      elements per key   what it shows
//! small   10,000    10                 the packed encodings (listpack, intset)
//! large   1         100,000            the large ones (hashtable, skiplist, quicklist)
//! ```
//!
//! Elements are `member:<i>` (sets: the integer `<i>` for `set-int`), hash values and
//! list elements `value-<i>`, sorted-set scores `<i>.5`; strings are 100,000 keys
//! `str:<i>` holding `value-<i>` (`string-int`: the integer `<i>`).

use std::io;

use super::{Ctx, numbered};
use crate::measure::Sample;

/// A type and the command that loads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeKind {
    /// `SET str:<i> value-<i>`.
    String,
    /// `SET str:<i> <i>` (integer-encoded).
    StringInt,
    /// `HSET key member:<i> value-<i>`.
    Hash,
    /// `RPUSH key value-<i>`.
    List,
    /// `SADD key member:<i>`.
    Set,
    /// `SADD key <i>` (an intset while small).
    SetInt,
    /// `ZADD key <i>.5 member:<i>`.
    ZSet,
}

impl TypeKind {
    /// Every kind, with its name in the workload names.
    pub const ALL: &[(&str, TypeKind)] = &[
        ("string", TypeKind::String),
        ("string-int", TypeKind::StringInt),
        ("hash", TypeKind::Hash),
        ("list", TypeKind::List),
        ("set", TypeKind::Set),
        ("set-int", TypeKind::SetInt),
        ("zset", TypeKind::ZSet),
    ];

    /// Strings are one value per key: they have no shapes.
    pub fn is_string(self) -> bool {
        matches!(self, TypeKind::String | TypeKind::StringInt)
    }
}

/// Loads `keys` keys of `per_key` elements each (strings: `keys` keys) and measures the
/// memory per element.
pub async fn memory(ctx: &Ctx, kind: TypeKind, keys: u64, per_key: u64) -> io::Result<Sample> {
    let keys = if kind.is_string() || per_key == 1 {
        ctx.n(keys, 100)
    } else {
        keys
    };
    let per_key = if kind.is_string() {
        1
    } else {
        ctx.n(per_key, 10).min(per_key)
    };
    let mut ctl = ctx.fresh().await?;
    let mut conn = ctx.conn().await?;
    let phase = ctx.begin(&mut ctl).await?;
    let mut pending = 0;
    let mut commands = 0;
    // The names and values are written into buffers kept across commands: the tool's
    // own work per command stays small next to the server's (it waits for each batch
    // of replies before building the next, so its time adds to every round's).
    let (mut key, mut member, mut value, mut score) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut digits = itoa::Buffer::new();
    let prefix: &[u8] = if kind.is_string() { b"str:" } else { b"key:" };
    for k in 0..keys {
        numbered(&mut key, prefix, k, b"");
        for i in 0..per_key {
            let n = k * per_key + i;
            match kind {
                TypeKind::String => {
                    numbered(&mut value, b"value-", n, b"");
                    conn.push(&[b"SET", &key[..], &value[..]]);
                }
                TypeKind::StringInt => {
                    conn.push(&[b"SET", &key[..], digits.format(n).as_bytes()]);
                }
                TypeKind::Hash => {
                    numbered(&mut member, b"member:", i, b"");
                    numbered(&mut value, b"value-", n, b"");
                    conn.push(&[b"HSET", &key[..], &member[..], &value[..]]);
                }
                TypeKind::List => {
                    numbered(&mut value, b"value-", n, b"");
                    conn.push(&[b"RPUSH", &key[..], &value[..]]);
                }
                TypeKind::Set => {
                    numbered(&mut member, b"member:", i, b"");
                    conn.push(&[b"SADD", &key[..], &member[..]]);
                }
                TypeKind::SetInt => {
                    conn.push(&[b"SADD", &key[..], digits.format(n).as_bytes()]);
                }
                TypeKind::ZSet => {
                    numbered(&mut score, b"", i, b".5");
                    numbered(&mut member, b"member:", i, b"");
                    conn.push(&[b"ZADD", &key[..], &score[..], &member[..]]);
                }
            }
            pending += 1;
            commands += 1;
            if pending == 1000 {
                conn.flush().await?;
                conn.skip(pending).await?;
                pending = 0;
            }
        }
    }
    conn.flush().await?;
    conn.skip(pending).await?;
    let m = phase.end(&mut ctl).await?;
    Ok(Sample::new(m, commands, keys * per_key, Vec::new()))
}
