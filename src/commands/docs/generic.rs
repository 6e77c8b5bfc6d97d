//! `COMMAND DOCS` entries of the generic (keyspace) commands, in the grammar of the parent
//! module's doc. One entry per command or subcommand, keyed by full name.

use super::Doc;

/// The generic (keyspace) group's entries.
pub const DOCS: &[Doc] = &[
    Doc::new("copy", "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.")
        .args(
            r"source:key@0 destination:key@1 [DB destination-db:integer] [REPLACE]",
        ),
    Doc::new("del", "O(N) where N is the number of keys that will be removed. When a key to remove holds a value other than a string, the individual complexity for this key is O(M) where M is the number of elements in the list, set, sorted set or hash. Removing a single key that holds a string value is O(1).")
        .args(
            r"key:key@0...",
        ),
    Doc::new("dump", "O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).")
        .args(
            r"key:key@0",
        ),
    Doc::new("exists", "O(N) where N is the number of keys to check.")
        .history(&[
            ("3.0.3", "Accepts multiple `key` arguments."),
        ])
        .args(
            r"key:key@0...",
        ),
    Doc::new("expire", "O(1)")
        .history(&[
            ("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`."),
        ])
        .args(
            r"key:key@0 seconds:integer [condition(NX | XX | GT | LT)]<since 7.0.0>",
        ),
    Doc::new("expireat", "O(1)")
        .history(&[
            ("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`."),
        ])
        .args(
            r"key:key@0 unix-time-seconds:unix-time [condition(NX | XX | GT | LT)]<since 7.0.0>",
        ),
    Doc::new("expiretime", "O(1)")
        .args(
            r"key:key@0",
        ),
    Doc::new("keys", "O(N) with N being the number of keys in the database, under the assumption that the key names in the database and the given pattern have limited length.")
        .args(
            r"pattern:pattern",
        ),
    Doc::new("migrate", "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target instance. See the pages of these commands for time complexity. Also an O(N) data transfer between the two instances is performed.")
        .history(&[
            ("3.0.0", "Added the `COPY` and `REPLACE` options."),
            ("3.0.6", "Added the `KEYS` option."),
            ("4.0.7", "Added the `AUTH` option."),
            ("6.0.0", "Added the `AUTH2` option."),
        ])
        .args(
            r#"host:string port:integer
             key-selector(key:key@0 | empty-string='""') destination-db:integer
             timeout:integer [COPY]<since 3.0.0> [REPLACE]<since 3.0.0>
             [authentication(AUTH auth:string<since 4.0.7><display password> |
             AUTH2 auth2{username:string password:string}<since 6.0.0>)]
             [KEYS keys:key@1]...<since 3.0.6><display key>"#,
        ),
    Doc::new("move", "O(1)")
        .args(
            r"key:key@0 db:integer",
        ),
    Doc::new("object", "Depends on subcommand."),
    Doc::new("object|encoding", "O(1)")
        .args(
            r"key:key@0",
        ),
    Doc::new("object|freq", "O(1)")
        .args(
            r"key:key@0",
        ),
    Doc::new("object|help", "O(1)"),
    Doc::new("object|idletime", "O(1)")
        .args(
            r"key:key@0",
        ),
    Doc::new("object|refcount", "O(1)")
        .args(
            r"key:key@0",
        ),
    Doc::new("persist", "O(1)")
        .args(
            r"key:key@0",
        ),
    Doc::new("pexpire", "O(1)")
        .history(&[
            ("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`."),
        ])
        .args(
            r"key:key@0 milliseconds:integer [condition(NX | XX | GT | LT)]<since 7.0.0>",
        ),
    Doc::new("pexpireat", "O(1)")
        .history(&[
            ("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`."),
        ])
        .args(
            r"key:key@0 unix-time-milliseconds:unix-time
             [condition(NX | XX | GT | LT)]<since 7.0.0>",
        ),
    Doc::new("pexpiretime", "O(1)")
        .args(
            r"key:key@0",
        ),
    Doc::new("pttl", "O(1)")
        .history(&[
            ("2.8.0", "Added the -2 reply."),
        ])
        .args(
            r"key:key@0",
        ),
    Doc::new("randomkey", "O(1)"),
    Doc::new("rename", "O(1)")
        .args(
            r"key:key@0 newkey:key@1",
        ),
    Doc::new("renamenx", "O(1)")
        .history(&[
            ("3.2.0", "The command no longer returns an error when source and destination names are the same."),
        ])
        .args(
            r"key:key@0 newkey:key@1",
        ),
    Doc::new("restore", "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).")
        .history(&[
            ("3.0.0", "Added the `REPLACE` modifier."),
            ("5.0.0", "Added the `ABSTTL` modifier."),
            ("5.0.0", "Added the `IDLETIME` and `FREQ` options."),
        ])
        .args(
            r"key:key@0 ttl:integer serialized-value:string
             [REPLACE]<since 3.0.0> [ABSTTL]<since 5.0.0>
             [IDLETIME seconds:integer]<since 5.0.0> [FREQ frequency:integer]<since 5.0.0>",
        ),
    Doc::new("scan", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.")
        .history(&[
            ("6.0.0", "Added the `TYPE` subcommand."),
        ])
        .args(
            r"cursor:integer [MATCH pattern:pattern] [COUNT count:integer]
             [TYPE type:string]<since 6.0.0>",
        ),
    Doc::new("sort", "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).")
        .args(
            r"key:key@0 [BY by-pattern:pattern@1]<display pattern>
             [LIMIT limit{offset:integer count:integer}]
             [GET get-pattern:pattern@1]...+<display pattern> [order(ASC | DESC)]
             [sorting=ALPHA] [STORE destination:key@2]",
        ),
    Doc::new("sort_ro", "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).")
        .args(
            r"key:key@0 [BY by-pattern:pattern@1]<display pattern>
             [LIMIT limit{offset:integer count:integer}]
             [GET get-pattern:pattern@1]...+<display pattern> [order(ASC | DESC)] [sorting=ALPHA]",
        ),
    Doc::new("touch", "O(N) where N is the number of keys that will be touched.")
        .args(
            r"key:key@0...",
        ),
    Doc::new("ttl", "O(1)")
        .history(&[
            ("2.8.0", "Added the -2 reply."),
        ])
        .args(
            r"key:key@0",
        ),
    Doc::new("type", "O(1)")
        .args(
            r"key:key@0",
        ),
    Doc::new("unlink", "O(1) for each key removed regardless of its size. Then the command does O(N) work in a different thread in order to reclaim memory, where N is the number of allocations the deleted objects where composed of.")
        .args(
            r"key:key@0...",
        ),
    Doc::new("wait", "O(1)")
        .args(
            r"numreplicas:integer timeout:integer",
        ),
    Doc::new("waitaof", "O(1)")
        .args(
            r"numlocal:integer numreplicas:integer timeout:integer",
        ),
];
