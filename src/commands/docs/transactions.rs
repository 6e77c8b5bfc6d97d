//! `COMMAND DOCS` entries of the transactions commands, in the grammar of the parent
//! module's doc. One entry per command or subcommand, keyed by full name.

use super::Doc;

/// The transactions group's entries.
pub const DOCS: &[Doc] = &[
    Doc::new("discard", "O(N), when N is the number of queued commands"),
    Doc::new("exec", "Depends on commands in the transaction"),
    Doc::new("multi", "O(1)"),
    Doc::new("unwatch", "O(1)"),
    Doc::new("watch", "O(1) for every key.").args(r"key:key@0..."),
];
