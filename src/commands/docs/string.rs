//! `COMMAND DOCS` entries of the string commands, in the grammar of the parent
//! module's doc. One entry per command or subcommand, keyed by full name.

use super::Doc;

/// The string group's entries.
pub const DOCS: &[Doc] = &[
    Doc::new("append", "O(1). The amortized time complexity is O(1) assuming the appended value is small and the already present value is of any size, since the dynamic string library used by Redis will double the free space available on every reallocation.")
        .args(
            r"key:key@0 value:string",
        ),
    Doc::new("decr", "O(1)")
        .args(
            r"key:key@0",
        ),
    Doc::new("decrby", "O(1)")
        .args(
            r"key:key@0 decrement:integer",
        ),
    Doc::new("get", "O(1)")
        .args(
            r"key:key@0",
        ),
    Doc::new("getdel", "O(1)")
        .args(
            r"key:key@0",
        ),
    Doc::new("getex", "O(1)")
        .args(
            r"key:key@0
             [expiration(EX seconds:integer | PX milliseconds:integer | EXAT
             unix-time-seconds:unix-time | PXAT unix-time-milliseconds:unix-time | PERSIST)]",
        ),
    Doc::new("getrange", "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.")
        .args(
            r"key:key@0 start:integer end:integer",
        ),
    Doc::new("getset", "O(1)")
        .deprecated("6.2.0", "`SET` with the `!GET` argument")
        .args(
            r"key:key@0 value:string",
        ),
    Doc::new("incr", "O(1)")
        .args(
            r"key:key@0",
        ),
    Doc::new("incrby", "O(1)")
        .args(
            r"key:key@0 increment:integer",
        ),
    Doc::new("incrbyfloat", "O(1)")
        .args(
            r"key:key@0 increment:double",
        ),
    Doc::new("lcs", "O(N*M) where N and M are the lengths of s1 and s2, respectively")
        .args(
            r"key1:key@0 key2:key@0 [LEN] [IDX] [MINMATCHLEN min-match-len:integer] [WITHMATCHLEN]",
        ),
    Doc::new("mget", "O(N) where N is the number of keys to retrieve.")
        .args(
            r"key:key@0...",
        ),
    Doc::new("mset", "O(N) where N is the number of keys to set.")
        .args(
            r"data{key:key@0 value:string}...",
        ),
    Doc::new("msetnx", "O(N) where N is the number of keys to set.")
        .args(
            r"data{key:key@0 value:string}...",
        ),
    Doc::new("psetex", "O(1)")
        .deprecated("2.6.12", "`SET` with the `PX` argument")
        .args(
            r"key:key@0 milliseconds:integer value:string",
        ),
    Doc::new("set", "O(1)")
        .history(&[
            ("2.6.12", "Added the `EX`, `PX`, `NX` and `XX` options."),
            ("6.0.0", "Added the `KEEPTTL` option."),
            ("6.2.0", "Added the `GET`, `EXAT` and `PXAT` option."),
            ("7.0.0", "Allowed the `NX` and `GET` options to be used together."),
            ("8.4.0", "Added 'IFEQ', 'IFNE', 'IFDEQ', 'IFDNE' options."),
        ])
        .args(
            r"key:key@0 value:string
             [condition(NX | XX | IFEQ ifeq-value:string<since 8.4.0> |
             IFNE ifne-value:string<since 8.4.0> | IFDEQ ifdeq-digest:string<since 8.4.0> |
             IFDNE ifdne-digest:string<since 8.4.0>)]<since 2.6.12>
             [GET]<since 6.2.0>
             [expiration(EX seconds:integer<since 2.6.12> | PX milliseconds:integer<since 2.6.12>
             | EXAT unix-time-seconds:unix-time<since 6.2.0> |
             PXAT unix-time-milliseconds:unix-time<since 6.2.0> | KEEPTTL<since 6.0.0>)]",
        ),
    Doc::new("setex", "O(1)")
        .deprecated("2.6.12", "`SET` with the `EX` argument")
        .args(
            r"key:key@0 seconds:integer value:string",
        ),
    Doc::new("setnx", "O(1)")
        .deprecated("2.6.12", "`SET` with the `NX` argument")
        .args(
            r"key:key@0 value:string",
        ),
    Doc::new("setrange", "O(1), not counting the time taken to copy the new string in place. Usually, this string is very small so the amortized complexity is O(1). Otherwise, complexity is O(M) with M being the length of the value argument.")
        .args(
            r"key:key@0 offset:integer value:string",
        ),
    Doc::new("strlen", "O(1)")
        .args(
            r"key:key@0",
        ),
    Doc::new("substr", "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.")
        .deprecated("2.0.0", "`GETRANGE`")
        .args(
            r"key:key@0 start:integer end:integer",
        ),
    Doc::new("delex", "O(1) for IFEQ/IFNE, O(N) for IFDEQ/IFDNE where N is the length of the string value.")
        .args(
            r"key:key@0
             [condition(IFEQ ifeq-value:string | IFNE ifne-value:string |
             IFDEQ ifdeq-digest:string | IFDNE ifdne-digest:string)]",
        ),
    Doc::new("digest", "O(N) where N is the length of the string value.").args(r"key:key@0"),
    Doc::new("msetex", "O(N) where N is the number of keys to set.")
        .args(
            r"numkeys:integer data{key:key@0 value:string}... [condition(NX | XX)]
             [expiration(EX seconds:integer | PX milliseconds:integer |
             EXAT unix-time-seconds:unix-time | PXAT unix-time-milliseconds:unix-time | KEEPTTL)]",
        ),
    Doc::new("increx", "O(1)")
        .args(
            r#"key:key@0
             [increment(BYFLOAT float:double | BYINT integer:integer)]
             [SATURATE]<summary "Saturate the result to LBOUND/UBOUND (or the type limits when no
             explicit bound is given) when out of bounds. Without this option, out-of-bounds
             operations are rejected and reply [current_value, 0].">
             [LBOUND lowerbound:string]<summary "Integer when used with BYINT, floating-point when
             used with BYFLOAT.">
             [UBOUND upperbound:string]<summary "Integer when used with BYINT, floating-point when
             used with BYFLOAT.">
             [expiration(EX seconds:integer | PX milliseconds:integer |
             EXAT unix-time-seconds:unix-time | PXAT unix-time-milliseconds:unix-time | PERSIST)]
             [ENX]<summary "Only set the expiration if the key currently has no TTL. Requires one of
             EX/PX/EXAT/PXAT; cannot be combined with PERSIST.">"#,
        ),
];
