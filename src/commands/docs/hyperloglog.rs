//! `COMMAND DOCS` entries of the HyperLogLog commands, in the grammar of the parent
//! module's doc. One entry per command, keyed by name.

use super::Doc;

/// The hyperloglog group's entries.
pub const DOCS: &[Doc] = &[
    Doc::new("pfadd", "O(1) to add every element.").args(r"key:key@0 [element:string]..."),
    Doc::new("pfcount", "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.")
        .args(r"key:key@0..."),
    Doc::new("pfdebug", "N/A")
        .syscmd()
        .args(r"subcommand:string key:key@0"),
    Doc::new("pfmerge", "O(N) to merge N HyperLogLogs, but with high constant times.")
        .args(r"destkey:key@0 sourcekey:key@1..."),
    Doc::new("pfselftest", "N/A").syscmd(),
];
