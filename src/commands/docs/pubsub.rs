//! `COMMAND DOCS` entries of the Pub/Sub commands, in the grammar of the parent
//! module's doc. One entry per command or subcommand, keyed by full name.

use super::Doc;

/// The Pub/Sub group's entries.
pub const DOCS: &[Doc] = &[
    Doc::new("psubscribe", "O(N) where N is the number of patterns to subscribe to.")
        .args(
            r"pattern:pattern...",
        ),
    Doc::new("publish", "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).")
        .args(
            r"channel:string message:string",
        ),
    Doc::new("pubsub", "Depends on subcommand."),
    Doc::new("pubsub|channels", "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)")
        .args(
            r"[pattern:pattern]",
        ),
    Doc::new("pubsub|help", "O(1)"),
    Doc::new("pubsub|numpat", "O(1)"),
    Doc::new("pubsub|numsub", "O(N) for the NUMSUB subcommand, where N is the number of requested channels")
        .args(
            r"[channel:string]...",
        ),
    Doc::new("pubsub|shardchannels", "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).")
        .args(
            r"[pattern:pattern]",
        ),
    Doc::new("pubsub|shardnumsub", "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels")
        .args(
            r"[shardchannel:string]...",
        ),
    Doc::new("punsubscribe", "O(N) where N is the number of patterns to unsubscribe.")
        .args(
            r"[pattern:pattern]...",
        ),
    Doc::new("spublish", "O(N) where N is the number of clients subscribed to the receiving shard channel.")
        .args(
            r"shardchannel:string message:string",
        ),
    Doc::new("ssubscribe", "O(N) where N is the number of shard channels to subscribe to.")
        .args(
            r"shardchannel:string...",
        ),
    Doc::new("subscribe", "O(N) where N is the number of channels to subscribe to.")
        .args(
            r"channel:string...",
        ),
    Doc::new("sunsubscribe", "O(N) where N is the number of shard channels to unsubscribe.")
        .args(
            r"[shardchannel:string]...",
        ),
    Doc::new("unsubscribe", "O(N) where N is the number of channels to unsubscribe.")
        .args(
            r"[channel:string]...",
        ),
];
