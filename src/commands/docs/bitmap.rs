//! `COMMAND DOCS` entries of the bitmap commands, in the grammar of the parent module's
//! doc. One entry per command, keyed by name. BITOP's operation is the oneof of tokens
//! Redis 8.2 documents (Redis 7.0 said only `operation:string`).

use super::Doc;

/// The bitmap group's entries.
pub const DOCS: &[Doc] = &[
    Doc::new("bitcount", "O(N)")
        .history(&[("7.0.0", "Added the `BYTE|BIT` option.")])
        .args(
            r"key:key@0 [index{start:integer end:integer [index_unit(BYTE | BIT)]<since 7.0.0>}]",
        ),
    Doc::new("bitfield", "O(1) for each subcommand specified")
        .args(
            r"key:key@0 [operation(GET encoding_offset{encoding:string offset:integer} |
             write{[OVERFLOW wrap_sat_fail(WRAP | SAT | FAIL)]
             write_operation(SET encoding_offset_value{encoding:string offset:integer value:integer} |
             INCRBY encoding_offset_increment{encoding:string offset:integer increment:integer})})]...",
        ),
    Doc::new("bitfield_ro", "O(1) for each subcommand specified")
        .args(
            r"key:key@0 [GET encoding_offset{encoding:string offset:integer}]...+",
        ),
    Doc::new("bitop", "O(N)")
        .args(
            r"operation(AND | OR | XOR | NOT | DIFF | DIFF1 | ANDOR | ONE) destkey:key@0 key:key@1...",
        ),
    Doc::new("bitpos", "O(N)")
        .history(&[("7.0.0", "Added the `BYTE|BIT` option.")])
        .args(
            r"key:key@0 bit:integer
             [index{start:integer [end_index{end:integer [index_unit(BYTE | BIT)]<since 7.0.0>}]}]",
        ),
    Doc::new("getbit", "O(1)")
        .args(
            r"key:key@0 offset:integer",
        ),
    Doc::new("setbit", "O(1)")
        .args(
            r"key:key@0 offset:integer value:integer",
        ),
];
