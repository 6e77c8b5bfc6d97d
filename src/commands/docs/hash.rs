//! `COMMAND DOCS` entries of the hash commands, in the grammar of the parent
//! module's doc. One entry per command or subcommand, keyed by full name.

use super::Doc;

/// The hash group's entries.
pub const DOCS: &[Doc] = &[
    Doc::new("hdel", "O(N) where N is the number of fields to be removed.")
        .history(&[
            ("2.4.0", "Accepts multiple `field` arguments."),
        ])
        .args(
            r"key:key@0 field:string...",
        ),
    Doc::new("hexists", "O(1)")
        .args(
            r"key:key@0 field:string",
        ),
    Doc::new("hexpire", "O(N) where N is the number of specified fields")
        .args(
            r"key:key@0 seconds:integer [condition(NX | XX | GT | LT)]
             FIELDS fields{numfields:integer field:string...}",
        ),
    Doc::new("hexpireat", "O(N) where N is the number of specified fields")
        .args(
            r"key:key@0 unix-time-seconds:unix-time [condition(NX | XX | GT | LT)]
             FIELDS fields{numfields:integer field:string...}",
        ),
    Doc::new("hexpiretime", "O(N) where N is the number of specified fields")
        .args(
            r"key:key@0 FIELDS fields{numfields:integer field:string...}",
        ),
    Doc::new("hget", "O(1)")
        .args(
            r"key:key@0 field:string",
        ),
    Doc::new("hgetall", "O(N) where N is the size of the hash.")
        .args(
            r"key:key@0",
        ),
    Doc::new("hincrby", "O(1)")
        .args(
            r"key:key@0 field:string increment:integer",
        ),
    Doc::new("hincrbyfloat", "O(1)")
        .args(
            r"key:key@0 field:string increment:double",
        ),
    Doc::new("hkeys", "O(N) where N is the size of the hash.")
        .args(
            r"key:key@0",
        ),
    Doc::new("hlen", "O(1)")
        .args(
            r"key:key@0",
        ),
    Doc::new("hmget", "O(N) where N is the number of fields being requested.")
        .args(
            r"key:key@0 field:string...",
        ),
    Doc::new("hmset", "O(N) where N is the number of fields being set.")
        .deprecated("4.0.0", "`HSET` with multiple field-value pairs")
        .args(
            r"key:key@0 data{field:string value:string}...",
        ),
    Doc::new("hpersist", "O(N) where N is the number of specified fields")
        .args(
            r"key:key@0 FIELDS fields{numfields:integer field:string...}",
        ),
    Doc::new("hpexpire", "O(N) where N is the number of specified fields")
        .args(
            r"key:key@0 milliseconds:integer [condition(NX | XX | GT | LT)]
             FIELDS fields{numfields:integer field:string...}",
        ),
    Doc::new("hpexpireat", "O(N) where N is the number of specified fields")
        .args(
            r"key:key@0 unix-time-milliseconds:unix-time [condition(NX | XX | GT | LT)]
             FIELDS fields{numfields:integer field:string...}",
        ),
    Doc::new("hpexpiretime", "O(N) where N is the number of specified fields")
        .args(
            r"key:key@0 FIELDS fields{numfields:integer field:string...}",
        ),
    Doc::new("hpttl", "O(N) where N is the number of specified fields")
        .args(
            r"key:key@0 FIELDS fields{numfields:integer field:string...}",
        ),
    Doc::new("hrandfield", "O(N) where N is the number of fields returned")
        .args(
            r"key:key@0 [options{count:integer [WITHVALUES]}]",
        ),
    Doc::new("hscan", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.")
        .args(
            r"key:key@0 cursor:integer [MATCH pattern:pattern] [COUNT count:integer] [NOVALUES]",
        ),
    Doc::new("hset", "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.")
        .history(&[
            ("4.0.0", "Accepts multiple `field` and `value` arguments."),
        ])
        .args(
            r"key:key@0 data{field:string value:string}...",
        ),
    Doc::new("hsetnx", "O(1)")
        .args(
            r"key:key@0 field:string value:string",
        ),
    Doc::new("hstrlen", "O(1)")
        .args(
            r"key:key@0 field:string",
        ),
    Doc::new("httl", "O(N) where N is the number of specified fields")
        .args(
            r"key:key@0 FIELDS fields{numfields:integer field:string...}",
        ),
    Doc::new("hvals", "O(N) where N is the size of the hash.")
        .args(
            r"key:key@0",
        ),
    Doc::new("hgetdel", "O(N) where N is the number of specified fields")
        .args(r"key:key@0 FIELDS fields{numfields:integer field:string...}"),
    Doc::new("hgetex", "O(N) where N is the number of specified fields")
        .args(
            r"key:key@0
             [expiration(EX seconds:integer | PX milliseconds:integer | EXAT
             unix-time-seconds:unix-time | PXAT unix-time-milliseconds:unix-time | PERSIST)]
             FIELDS fields{numfields:integer field:string...}",
        ),
    Doc::new("hsetex", "O(N) where N is the number of fields being set.")
        .args(
            r"key:key@0 [condition(FNX | FXX)]
             [expiration(EX seconds:integer | PX milliseconds:integer |
             EXAT unix-time-seconds:unix-time | PXAT unix-time-milliseconds:unix-time | KEEPTTL)]
             FIELDS fields{numfields:integer data{field:string value:string}...}",
        ),
];
