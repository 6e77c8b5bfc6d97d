//! Command tips (`COMMAND INFO`'s eighth element, Redis 7.0+): what a cluster client or
//! proxy needs to know to route a command it cannot route by its keys, and how to merge the
//! replies, and which replies a test must not compare byte for byte.
//!
//! ```text
//! nondeterministic_output          the reply may differ between runs (TIME, SPOP, XADD *)
//! nondeterministic_output_order    same elements, any order (SMEMBERS, HGETALL, KEYS)
//! request_policy:all_shards        send to every primary (KEYS, DBSIZE, FLUSHALL)
//! request_policy:all_nodes         send to every node, replicas too (CONFIG SET, SCRIPT LOAD)
//! request_policy:multi_shard       split by key slot (DEL, MGET, MSET)
//! request_policy:special           the client must know (SCAN)
//! response_policy:agg_sum|agg_min|agg_logical_and|all_succeeded|one_succeeded|special
//!                                  how the per-shard replies combine
//! ```
//!
//! The tips are Redis's own, command by command (read from the `COMMAND INFO` of Redis
//! 7.0 and, for the commands added later, from their command documentation). A command
//! that is not in [`TIPS`] has none.

/// `(full command name, its tips)`, sorted by name.
pub const TIPS: &[(&str, &[&str])] = &[
    ("client|info", &["nondeterministic_output"]),
    ("client|list", &["nondeterministic_output"]),
    ("cluster|bumpepoch", &["nondeterministic_output"]),
    (
        "cluster|count-failure-reports",
        &["nondeterministic_output"],
    ),
    ("cluster|getkeysinslot", &["nondeterministic_output"]),
    ("cluster|info", &["nondeterministic_output"]),
    ("cluster|links", &["nondeterministic_output"]),
    ("cluster|nodes", &["nondeterministic_output"]),
    ("cluster|replicas", &["nondeterministic_output"]),
    ("cluster|shards", &["nondeterministic_output"]),
    ("cluster|slaves", &["nondeterministic_output"]),
    ("cluster|slots", &["nondeterministic_output"]),
    ("command", &["nondeterministic_output_order"]),
    ("command|docs", &["nondeterministic_output_order"]),
    ("command|info", &["nondeterministic_output_order"]),
    ("command|list", &["nondeterministic_output_order"]),
    (
        "config|set",
        &["request_policy:all_nodes", "response_policy:all_succeeded"],
    ),
    (
        "dbsize",
        &["request_policy:all_shards", "response_policy:agg_sum"],
    ),
    (
        "del",
        &["request_policy:multi_shard", "response_policy:agg_sum"],
    ),
    ("dump", &["nondeterministic_output"]),
    (
        "exists",
        &["request_policy:multi_shard", "response_policy:agg_sum"],
    ),
    (
        "flushall",
        &["request_policy:all_shards", "response_policy:all_succeeded"],
    ),
    (
        "flushdb",
        &["request_policy:all_shards", "response_policy:all_succeeded"],
    ),
    (
        "function|delete",
        &["request_policy:all_shards", "response_policy:all_succeeded"],
    ),
    (
        "function|flush",
        &["request_policy:all_shards", "response_policy:all_succeeded"],
    ),
    (
        "function|kill",
        &["request_policy:all_shards", "response_policy:one_succeeded"],
    ),
    ("function|list", &["nondeterministic_output_order"]),
    (
        "function|load",
        &["request_policy:all_shards", "response_policy:all_succeeded"],
    ),
    (
        "function|restore",
        &["request_policy:all_shards", "response_policy:all_succeeded"],
    ),
    (
        "function|stats",
        &[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ],
    ),
    ("hgetall", &["nondeterministic_output_order"]),
    ("hkeys", &["nondeterministic_output_order"]),
    ("hrandfield", &["nondeterministic_output"]),
    ("hscan", &["nondeterministic_output"]),
    ("hvals", &["nondeterministic_output_order"]),
    (
        "info",
        &[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ],
    ),
    (
        "keys",
        &["request_policy:all_shards", "nondeterministic_output_order"],
    ),
    ("lastsave", &["nondeterministic_output"]),
    (
        "latency|doctor",
        &[
            "nondeterministic_output",
            "request_policy:all_nodes",
            "response_policy:special",
        ],
    ),
    (
        "latency|graph",
        &[
            "nondeterministic_output",
            "request_policy:all_nodes",
            "response_policy:special",
        ],
    ),
    (
        "latency|histogram",
        &[
            "nondeterministic_output",
            "request_policy:all_nodes",
            "response_policy:special",
        ],
    ),
    (
        "latency|history",
        &[
            "nondeterministic_output",
            "request_policy:all_nodes",
            "response_policy:special",
        ],
    ),
    (
        "latency|latest",
        &[
            "nondeterministic_output",
            "request_policy:all_nodes",
            "response_policy:special",
        ],
    ),
    (
        "latency|reset",
        &["request_policy:all_nodes", "response_policy:all_succeeded"],
    ),
    (
        "memory|doctor",
        &[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ],
    ),
    (
        "memory|malloc-stats",
        &[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ],
    ),
    (
        "memory|purge",
        &["request_policy:all_shards", "response_policy:all_succeeded"],
    ),
    (
        "memory|stats",
        &[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ],
    ),
    ("mget", &["request_policy:multi_shard"]),
    ("migrate", &["nondeterministic_output"]),
    ("module|list", &["nondeterministic_output_order"]),
    (
        "mset",
        &[
            "request_policy:multi_shard",
            "response_policy:all_succeeded",
        ],
    ),
    (
        "msetnx",
        &["request_policy:multi_shard", "response_policy:agg_min"],
    ),
    ("object|encoding", &["nondeterministic_output"]),
    ("object|freq", &["nondeterministic_output"]),
    ("object|idletime", &["nondeterministic_output"]),
    ("object|refcount", &["nondeterministic_output"]),
    (
        "ping",
        &["request_policy:all_shards", "response_policy:all_succeeded"],
    ),
    ("pttl", &["nondeterministic_output"]),
    (
        "randomkey",
        &["request_policy:all_shards", "nondeterministic_output"],
    ),
    (
        "scan",
        &["nondeterministic_output", "request_policy:special"],
    ),
    (
        "script|exists",
        &[
            "request_policy:all_shards",
            "response_policy:agg_logical_and",
        ],
    ),
    (
        "script|flush",
        &["request_policy:all_nodes", "response_policy:all_succeeded"],
    ),
    (
        "script|kill",
        &["request_policy:all_shards", "response_policy:one_succeeded"],
    ),
    (
        "script|load",
        &["request_policy:all_nodes", "response_policy:all_succeeded"],
    ),
    ("sdiff", &["nondeterministic_output_order"]),
    ("sinter", &["nondeterministic_output_order"]),
    (
        "slowlog|get",
        &["request_policy:all_nodes", "nondeterministic_output"],
    ),
    (
        "slowlog|len",
        &[
            "request_policy:all_nodes",
            "response_policy:agg_sum",
            "nondeterministic_output",
        ],
    ),
    (
        "slowlog|reset",
        &["request_policy:all_nodes", "response_policy:all_succeeded"],
    ),
    ("smembers", &["nondeterministic_output_order"]),
    ("spop", &["nondeterministic_output"]),
    ("srandmember", &["nondeterministic_output"]),
    ("sscan", &["nondeterministic_output"]),
    ("sunion", &["nondeterministic_output_order"]),
    ("time", &["nondeterministic_output"]),
    (
        "touch",
        &["request_policy:multi_shard", "response_policy:agg_sum"],
    ),
    ("ttl", &["nondeterministic_output"]),
    (
        "unlink",
        &["request_policy:multi_shard", "response_policy:agg_sum"],
    ),
    (
        "wait",
        &["request_policy:all_shards", "response_policy:agg_min"],
    ),
    (
        "waitaof",
        &["request_policy:all_shards", "response_policy:agg_min"],
    ),
    ("xadd", &["nondeterministic_output"]),
    ("xautoclaim", &["nondeterministic_output"]),
    ("xclaim", &["nondeterministic_output"]),
    ("xinfo|consumers", &["nondeterministic_output"]),
    ("xpending", &["nondeterministic_output"]),
    ("xtrim", &["nondeterministic_output"]),
    ("zrandmember", &["nondeterministic_output"]),
    ("zscan", &["nondeterministic_output"]),
];

/// The tips of the command `name` (a full name: `config|set`).
pub fn of(name: &str) -> &'static [&'static str] {
    TIPS.binary_search_by(|(n, _)| n.cmp(&name))
        .map_or(&[], |i| TIPS[i].1)
}

/// Key specs that carry a note in Redis's table (`COMMAND INFO` shows it as the spec's
/// first field): `(command, index of the spec, note)`.
const KEY_SPEC_NOTES: &[(&str, usize, &str)] = &[(
    "pfcount",
    0,
    "RW because it may change the internal representation of the key, and propagate to replicas",
)];

/// The note of key spec `spec` of the command `name`, if Redis gives it one.
pub fn key_spec_note(name: &str, spec: usize) -> Option<&'static str> {
    KEY_SPEC_NOTES
        .iter()
        .find(|(n, i, _)| *n == name && *i == spec)
        .map(|(_, _, note)| *note)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_for_the_binary_search() {
        // Every entry names a real command: `tests/server_info.rs` compares each command's
        // tips with Redis 7.0's, so a misspelt name leaves its command without tips there.
        assert!(TIPS.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(
            of("config|set"),
            ["request_policy:all_nodes", "response_policy:all_succeeded"]
        );
        assert!(of("get").is_empty());
    }
}
