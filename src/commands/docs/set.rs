//! `COMMAND DOCS` entries of the set commands, in the grammar of the parent
//! module's doc. One entry per command or subcommand, keyed by full name.

use super::Doc;

/// The set group's entries.
pub const DOCS: &[Doc] = &[
    Doc::new("sadd", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .history(&[
            ("2.4.0", "Accepts multiple `member` arguments."),
        ])
        .args(
            r"key:key@0 member:string...",
        ),
    Doc::new("scard", "O(1)")
        .args(
            r"key:key@0",
        ),
    Doc::new("sdiff", "O(N) where N is the total number of elements in all given sets.")
        .args(
            r"key:key@0...",
        ),
    Doc::new("sdiffstore", "O(N) where N is the total number of elements in all given sets.")
        .args(
            r"destination:key@0 key:key@1...",
        ),
    Doc::new("sinter", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.")
        .args(
            r"key:key@0...",
        ),
    Doc::new("sintercard", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.")
        .args(
            r"numkeys:integer key:key@0... [LIMIT limit:integer]",
        ),
    Doc::new("sinterstore", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.")
        .args(
            r"destination:key@0 key:key@1...",
        ),
    Doc::new("sismember", "O(1)")
        .args(
            r"key:key@0 member:string",
        ),
    Doc::new("smembers", "O(N) where N is the set cardinality.")
        .args(
            r"key:key@0",
        ),
    Doc::new("smismember", "O(N) where N is the number of elements being checked for membership")
        .args(
            r"key:key@0 member:string...",
        ),
    Doc::new("smove", "O(1)")
        .args(
            r"source:key@0 destination:key@1 member:string",
        ),
    Doc::new("spop", "Without the count argument O(1), otherwise O(N) where N is the value of the passed count.")
        .history(&[
            ("3.2.0", "Added the `count` argument."),
        ])
        .args(
            r"key:key@0 [count:integer]<since 3.2.0>",
        ),
    Doc::new("srandmember", "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.")
        .history(&[
            ("2.6.0", "Added the optional `count` argument."),
        ])
        .args(
            r"key:key@0 [count:integer]<since 2.6.0>",
        ),
    Doc::new("srem", "O(N) where N is the number of members to be removed.")
        .history(&[
            ("2.4.0", "Accepts multiple `member` arguments."),
        ])
        .args(
            r"key:key@0 member:string...",
        ),
    Doc::new("sscan", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.")
        .args(
            r"key:key@0 cursor:integer [MATCH pattern:pattern] [COUNT count:integer]",
        ),
    Doc::new("sunion", "O(N) where N is the total number of elements in all given sets.")
        .args(
            r"key:key@0...",
        ),
    Doc::new("sunionstore", "O(N) where N is the total number of elements in all given sets.")
        .args(
            r"destination:key@0 key:key@1...",
        ),
    Doc::new("sdiffcard", "O(N) where N is the total number of elements in all given sets.")
        .args(r"numkeys:integer key:key@0... [LIMIT limit:integer]"),
    Doc::new("sunioncard", "O(N) where N is the total number of elements in all given sets.")
        .args(r"numkeys:integer key:key@0... [APPROX] [LIMIT limit:integer]"),
];
