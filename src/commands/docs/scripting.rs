//! `COMMAND DOCS` entries of the scripting and functions commands, in the grammar of the parent
//! module's doc. One entry per command or subcommand, keyed by full name.

use super::Doc;

/// The scripting and functions group's entries.
pub const DOCS: &[Doc] = &[
    Doc::new("eval", "Depends on the script that is executed.")
        .args(
            r"script:string numkeys:integer [key:key@0]... [arg:string]...",
        ),
    Doc::new("eval_ro", "Depends on the script that is executed.")
        .args(
            r"script:string numkeys:integer [key:key@0]... [arg:string]...",
        ),
    Doc::new("evalsha", "Depends on the script that is executed.")
        .args(
            r"sha1:string numkeys:integer [key:key@0]... [arg:string]...",
        ),
    Doc::new("evalsha_ro", "Depends on the script that is executed.")
        .args(
            r"sha1:string numkeys:integer [key:key@0]... [arg:string]...",
        ),
    Doc::new("fcall", "Depends on the function that is executed.")
        .args(
            r"function:string numkeys:integer [key:key@0]... [arg:string]...",
        ),
    Doc::new("fcall_ro", "Depends on the function that is executed.")
        .args(
            r"function:string numkeys:integer [key:key@0]... [arg:string]...",
        ),
    Doc::new("function", "Depends on subcommand."),
    Doc::new("function|delete", "O(1)")
        .args(
            r"library-name:string",
        ),
    Doc::new("function|dump", "O(N) where N is the number of functions"),
    Doc::new("function|flush", "O(N) where N is the number of functions deleted")
        .args(
            r"[flush-type(ASYNC | SYNC)]",
        ),
    Doc::new("function|help", "O(1)"),
    Doc::new("function|kill", "O(1)"),
    Doc::new("function|list", "O(N) where N is the number of functions")
        .args(
            r"[LIBRARYNAME library-name-pattern:string] [WITHCODE]",
        ),
    Doc::new("function|load", "O(1) (considering compilation time is redundant)")
        .args(
            r"[REPLACE] function-code:string",
        ),
    Doc::new("function|restore", "O(N) where N is the number of functions on the payload")
        .args(
            r"serialized-value:string [policy(FLUSH | APPEND | REPLACE)]",
        ),
    Doc::new("function|stats", "O(1)"),
    Doc::new("script", "Depends on subcommand."),
    Doc::new("script|debug", "O(1)")
        .args(
            r"mode(YES | SYNC | NO)",
        ),
    Doc::new("script|exists", "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).")
        .args(
            r"sha1:string...",
        ),
    Doc::new("script|flush", "O(N) with N being the number of scripts in cache")
        .history(&[
            ("6.2.0", "Added the `ASYNC` and `SYNC` flushing mode modifiers."),
        ])
        .args(
            r"[flush-type(ASYNC | SYNC)]<since 6.2.0>",
        ),
    Doc::new("script|help", "O(1)"),
    Doc::new("script|kill", "O(1)"),
    Doc::new("script|load", "O(N) with N being the length in bytes of the script body.")
        .args(
            r"script:string",
        ),
];
