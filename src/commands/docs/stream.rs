//! `COMMAND DOCS` entries of the stream commands, in the grammar of the parent
//! module's doc. One entry per command or subcommand, keyed by full name.

use super::Doc;

/// The stream group's entries.
pub const DOCS: &[Doc] = &[
    Doc::new("xack", "O(1) for each message ID processed.")
        .args(
            r"key:key@0 group:string ID:string...",
        ),
    Doc::new("xadd", "O(1) when adding a new entry, O(N) when trimming where N being the number of entries evicted.")
        .history(&[
            ("6.2.0", "Added the `NOMKSTREAM` option, `MINID` trimming strategy and the `LIMIT` option."),
            ("7.0.0", "Added support for the `<ms>-*` explicit ID form."),
            ("8.2.0", "Added the `KEEPREF`, `DELREF` and `ACKED` options."),
            ("8.6.0", "Added the `IDMPAUTO` and `IDMP` options."),
        ])
        .args(
            r#"key:key@0 [NOMKSTREAM]<since 6.2.0>
             [condition(KEEPREF | DELREF | ACKED)]<since 8.2.0>
             [idmp(idmpauto-with-pid{idmpauto-token=IDMPAUTO pid:string<display producer-id>} |
             idmp-with-pid-iid{idmp-token=IDMP pid:string<display producer-id>
             iid:string<display idempotent-id>})]<since 8.6.0>
             [trim{strategy(MAXLEN | MINID<since 6.2.0>)
             [operator(equal="=" | approximately=~)] threshold:string
             [LIMIT count:integer]<since 6.2.0>}]
             id-selector(auto-id=* | id:string) data{field:string value:string}..."#,
        ),
    Doc::new("xautoclaim", "O(1) if COUNT is small.")
        .history(&[
            ("7.0.0", "Added an element to the reply array, containing deleted entries the command cleared from the PEL"),
        ])
        .args(
            r"key:key@0 group:string consumer:string min-idle-time:string start:string
             [COUNT count:integer] [JUSTID]",
        ),
    Doc::new("xclaim", "O(log N) with N being the number of messages in the PEL of the consumer group.")
        .args(
            r"key:key@0 group:string consumer:string min-idle-time:string ID:string...
             [IDLE ms:integer] [TIME unix-time-milliseconds:unix-time]
             [RETRYCOUNT count:integer] [FORCE] [JUSTID] [LASTID lastid:string]",
        ),
    Doc::new("xdel", "O(1) for each single item to delete in the stream, regardless of the stream size.")
        .args(
            r"key:key@0 ID:string...",
        ),
    Doc::new("xgroup", "Depends on subcommand."),
    Doc::new("xgroup|create", "O(1)")
        .history(&[
            ("7.0.0", "Added the `entries_read` named argument."),
        ])
        .args(
            r"key:key@0 group:string id-selector(id:string | new-id=$) [MKSTREAM]
             [ENTRIESREAD entriesread:integer]<display entries-read>",
        ),
    Doc::new("xgroup|createconsumer", "O(1)")
        .args(
            r"key:key@0 group:string consumer:string",
        ),
    Doc::new("xgroup|delconsumer", "O(1)")
        .args(
            r"key:key@0 group:string consumer:string",
        ),
    Doc::new("xgroup|destroy", "O(N) where N is the number of entries in the group's pending entries list (PEL).")
        .args(
            r"key:key@0 group:string",
        ),
    Doc::new("xgroup|help", "O(1)"),
    Doc::new("xgroup|setid", "O(1)")
        .history(&[
            ("7.0.0", "Added the optional `entries_read` argument."),
        ])
        .args(
            r"key:key@0 group:string id-selector(id:string | new-id=$)
             [ENTRIESREAD entriesread:integer]<display entries-read>",
        ),
    Doc::new("xinfo", "Depends on subcommand."),
    Doc::new("xinfo|consumers", "O(1)")
        .history(&[
            ("7.2.0", "Added the `inactive` field, and changed the meaning of `idle`."),
        ])
        .args(
            r"key:key@0 group:string",
        ),
    Doc::new("xinfo|groups", "O(1)")
        .history(&[
            ("7.0.0", "Added the `entries-read` and `lag` fields"),
        ])
        .args(
            r"key:key@0",
        ),
    Doc::new("xinfo|help", "O(1)"),
    Doc::new("xinfo|stream", "O(1)")
        .history(&[
            ("6.0.0", "Added the `FULL` modifier."),
            ("7.0.0", "Added the `max-deleted-entry-id`, `entries-added`, `recorded-first-entry-id`, `entries-read` and `lag` fields"),
            ("7.2.0", "Added the `active-time` field, and changed the meaning of `seen-time`."),
        ])
        .args(
            r"key:key@0 [full-block{FULL [COUNT count:integer]}]",
        ),
    Doc::new("xlen", "O(1)")
        .args(
            r"key:key@0",
        ),
    Doc::new("xpending", "O(N) with N being the number of elements returned, so asking for a small fixed number of entries per call is O(1). O(M), where M is the total number of entries scanned when used with the IDLE filter. When the command returns just the summary and the list of consumers is small, it runs in O(1) time; otherwise, an additional O(N) time for iterating every consumer.")
        .history(&[
            ("6.2.0", "Added the `IDLE` option and exclusive range intervals."),
        ])
        .args(
            r"key:key@0 group:string
             [filters{[IDLE min-idle-time:integer]<since 6.2.0> start:string
             end:string count:integer [consumer:string]}]",
        ),
    Doc::new("xrange", "O(N) with N being the number of elements being returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).")
        .history(&[
            ("6.2.0", "Added exclusive ranges."),
        ])
        .args(
            r"key:key@0 start:string end:string [COUNT count:integer]",
        ),
    Doc::new("xread", "")
        .history(&[
            ("8.10.0", "Added the `MAXCOUNT` and `MAXSIZE` options."),
        ])
        .args(
            r"[COUNT count:integer] [MAXCOUNT maxcount:integer]<since 8.10.0>
             [MAXSIZE maxsize:integer]<since 8.10.0> [BLOCK milliseconds:integer]
             STREAMS streams{key:key@0... ID:string...}",
        ),
    Doc::new("xreadgroup", "For each stream mentioned: O(M) with M being the number of elements returned. If M is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1). On the other side when XREADGROUP blocks, XADD will pay the O(N) time in order to serve the N clients blocked on the stream getting new data.")
        .history(&[
            ("8.4.0", "Added the `CLAIM` option."),
            ("8.10.0", "Added the `MAXCOUNT` and `MAXSIZE` options."),
        ])
        .args(
            r"GROUP group-block{group:string consumer:string} [COUNT count:integer]
             [MAXCOUNT maxcount:integer]<since 8.10.0> [MAXSIZE maxsize:integer]<since 8.10.0>
             [BLOCK milliseconds:integer] [CLAIM min-idle-time:integer]<since 8.4.0>
             [NOACK] STREAMS streams{key:key@0... ID:string...}",
        ),
    Doc::new("xrevrange", "O(N) with N being the number of elements returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).")
        .history(&[
            ("6.2.0", "Added exclusive ranges."),
        ])
        .args(
            r"key:key@0 end:string start:string [COUNT count:integer]",
        ),
    Doc::new("xsetid", "O(1)")
        .history(&[
            ("7.0.0", "Added the `entries_added` and `max_deleted_entry_id` arguments."),
        ])
        .args(
            r"key:key@0 last-id:string
             [ENTRIESADDED entries-added:integer]<since 7.0.0>
             [MAXDELETEDID max-deleted-id:string]<since 7.0.0>",
        ),
    Doc::new("xtrim", "O(N), with N being the number of evicted entries. Constant times are very small however, since entries are organized in macro nodes containing multiple entries that can be released with a single deallocation.")
        .history(&[
            ("6.2.0", "Added the `MINID` trimming strategy and the `LIMIT` option."),
            ("8.2.0", "Added the `KEEPREF`, `DELREF` and `ACKED` options."),
        ])
        .args(
            r#"key:key@0
             trim{strategy(MAXLEN | MINID<since 6.2.0>)
             [operator(equal="=" | approximately=~)] threshold:string
             [LIMIT count:integer]<since 6.2.0>} [condition(KEEPREF | DELREF | ACKED)]<since 8.2.0>"#,
        ),
    Doc::new("xackdel", "O(1) for each message ID processed.")
        .args(
            r"key:key@0 group:string [condition(KEEPREF | DELREF | ACKED)] IDS
             ids{numids:integer id:string...}",
        ),
    Doc::new("xdelex", "O(1) for each single item to delete in the stream, regardless of the stream size.")
        .args(r"key:key@0 [condition(KEEPREF | DELREF | ACKED)] IDS
               ids{numids:integer id:string...}"),
    Doc::new("xnack", "O(1) for each message ID processed.")
        .args(
            r"key:key@0 group:string mode(SILENT | FAIL | FATAL) IDS
             ids{numids:integer id:string...} [RETRYCOUNT retrycount:integer] [FORCE]",
        ),
    Doc::new("xcfgset", "O(1)")
        .args(r"key:key@0 [IDMP-DURATION duration:integer] [IDMP-MAXSIZE maxsize:integer]"),
    Doc::new("xidmprecord", "O(1)")
        .syscmd()
        .args(r"key:key@0 producer-id:string idempotent-id:string id:string"),
    Doc::new("xgroup|setdlq", "O(1)")
        .args(
            r"key:key@0 group:string
             target(dlq{dlq-key:key@1 MAXDELIVERIES maxdeliveries:integer} | NONE)",
        ),
];
