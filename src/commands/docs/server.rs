//! `COMMAND DOCS` entries of the server commands, in the grammar of the parent
//! module's doc. One entry per command or subcommand, keyed by full name.

use super::Doc;

/// The server group's entries.
pub const DOCS: &[Doc] = &[
    Doc::new("acl", "Depends on subcommand."),
    Doc::new("acl|cat", "O(1) since the categories and commands are a fixed set.")
        .args(
            r"[category:string]",
        ),
    Doc::new("acl|deluser", "O(1) amortized time considering the typical user.")
        .args(
            r"username:string...",
        ),
    Doc::new("acl|dryrun", "O(1).")
        .args(
            r"username:string command:string [arg:string]...",
        ),
    Doc::new("acl|genpass", "O(1)")
        .args(
            r"[bits:integer]",
        ),
    Doc::new("acl|getuser", "O(N). Where N is the number of password, command and pattern rules that the user has.")
        .history(&[
            ("6.2.0", "Added Pub/Sub channel patterns."),
            ("7.0.0", "Added selectors and changed the format of key and channel patterns from a list to their rule representation."),
        ])
        .args(
            r"username:string",
        ),
    Doc::new("acl|help", "O(1)"),
    Doc::new("acl|list", "O(N). Where N is the number of configured users."),
    Doc::new("acl|load", "O(N). Where N is the number of configured users."),
    Doc::new("acl|log", "O(N) with N being the number of entries shown.")
        .history(&[
            ("7.2.0", "Added entry ID, timestamp created, and timestamp last updated."),
        ])
        .args(
            r"[operation(count:integer | RESET)]",
        ),
    Doc::new("acl|save", "O(N). Where N is the number of configured users."),
    Doc::new("acl|setuser", "O(N). Where N is the number of rules provided.")
        .history(&[
            ("6.2.0", "Added Pub/Sub channel patterns."),
            ("7.0.0", "Added selectors and key based permissions."),
        ])
        .args(
            r"username:string [rule:string]...",
        ),
    Doc::new("acl|users", "O(N). Where N is the number of configured users."),
    Doc::new("acl|whoami", "O(1)"),
    Doc::new("bgrewriteaof", "O(1)"),
    Doc::new("bgsave", "O(1)")
        .history(&[
            ("3.2.2", "Added the `SCHEDULE` option."),
        ])
        .args(
            r"[SCHEDULE]<since 3.2.2>",
        ),
    Doc::new("command", "O(N) where N is the total number of Redis commands"),
    Doc::new("command|count", "O(1)"),
    Doc::new("command|docs", "O(N) where N is the number of commands to look up")
        .args(
            r"[command-name:string]...",
        ),
    Doc::new("command|getkeys", "O(N) where N is the number of arguments to the command")
        .args(
            r"command:string [arg:string]...",
        ),
    Doc::new("command|getkeysandflags", "O(N) where N is the number of arguments to the command")
        .args(
            r"command:string [arg:string]...",
        ),
    Doc::new("command|help", "O(1)"),
    Doc::new("command|info", "O(N) where N is the number of commands to look up")
        .history(&[
            ("7.0.0", "Allowed to be called with no argument to get info on all commands."),
        ])
        .args(
            r"[command-name:string]...",
        ),
    Doc::new("command|list", "O(N) where N is the total number of Redis commands")
        .args(
            r"[FILTERBY
             filterby(MODULE module-name:string | ACLCAT category:string | PATTERN pattern:pattern)]",
        ),
    Doc::new("config", "Depends on subcommand."),
    Doc::new("config|get", "O(N) when N is the number of configuration parameters provided")
        .history(&[
            ("7.0.0", "Added the ability to pass multiple pattern parameters in one call"),
        ])
        .args(
            r"parameter:string...",
        ),
    Doc::new("config|help", "O(1)"),
    Doc::new("config|resetstat", "O(1)"),
    Doc::new("config|rewrite", "O(1)"),
    Doc::new("config|set", "O(N) when N is the number of configuration parameters provided")
        .history(&[
            ("7.0.0", "Added the ability to set multiple parameters in one call."),
        ])
        .args(
            r"data{parameter:string value:string}...",
        ),
    Doc::new("dbsize", "O(1)"),
    Doc::new("debug", "Depends on subcommand.")
        .syscmd(),
    Doc::new("failover", "O(1)")
        .args(
            r"[TO target{host:string port:integer [FORCE]}] [ABORT] [TIMEOUT milliseconds:integer]",
        ),
    Doc::new("flushall", "O(N) where N is the total number of keys in all databases")
        .history(&[
            ("4.0.0", "Added the `ASYNC` flushing mode modifier."),
            ("6.2.0", "Added the `SYNC` flushing mode modifier."),
        ])
        .args(
            r"[flush-type(ASYNC<since 4.0.0> | SYNC<since 6.2.0>)]",
        ),
    Doc::new("flushdb", "O(N) where N is the number of keys in the selected database")
        .history(&[
            ("4.0.0", "Added the `ASYNC` flushing mode modifier."),
            ("6.2.0", "Added the `SYNC` flushing mode modifier."),
        ])
        .args(
            r"[flush-type(ASYNC<since 4.0.0> | SYNC<since 6.2.0>)]",
        ),
    Doc::new("info", "O(1)")
        .history(&[
            ("7.0.0", "Added support for taking multiple section arguments."),
        ])
        .args(
            r"[section:string]...",
        ),
    Doc::new("lastsave", "O(1)"),
    Doc::new("latency", "Depends on subcommand."),
    Doc::new("latency|doctor", "O(1)"),
    Doc::new("latency|graph", "O(1)")
        .args(
            r"event:string",
        ),
    Doc::new("latency|help", "O(1)"),
    Doc::new("latency|histogram", "O(N) where N is the number of commands with latency information being retrieved.")
        .args(
            r"[COMMAND:string]...",
        ),
    Doc::new("latency|history", "O(1)")
        .args(
            r"event:string",
        ),
    Doc::new("latency|latest", "O(1)"),
    Doc::new("latency|reset", "O(1)")
        .args(
            r"[event:string]...",
        ),
    Doc::new("lolwut", "")
        .args(
            r"[VERSION version:integer]",
        ),
    Doc::new("memory", "Depends on subcommand."),
    Doc::new("memory|doctor", "O(1)"),
    Doc::new("memory|help", "O(1)"),
    Doc::new("memory|malloc-stats", "Depends on how much memory is allocated, could be slow"),
    Doc::new("memory|purge", "Depends on how much memory is allocated, could be slow"),
    Doc::new("memory|stats", "O(1)"),
    Doc::new("memory|usage", "O(N) where N is the number of samples.")
        .args(
            r"key:key@0 [SAMPLES count:integer]",
        ),
    Doc::new("module", "Depends on subcommand."),
    Doc::new("module|help", "O(1)"),
    Doc::new("module|list", "O(N) where N is the number of loaded modules."),
    Doc::new("module|load", "O(1)")
        .args(
            r"path:string [arg:string]...",
        ),
    Doc::new("module|loadex", "O(1)")
        .args(
            r"path:string [CONFIG configs{name:string value:string}]...+ [ARGS args{arg:string}]...",
        ),
    Doc::new("module|unload", "O(1)")
        .args(
            r"name:string",
        ),
    Doc::new("monitor", ""),
    Doc::new("psync", "")
        .args(
            r"replicationid:string offset:integer",
        ),
    Doc::new("replconf", "O(1)")
        .syscmd(),
    Doc::new("replicaof", "O(1)")
        .args(
            r"args(host-port{host:string port:integer} | no-one{NO ONE})",
        ),
    Doc::new("restore-asking", "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).")
        .syscmd()
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
    Doc::new("role", "O(1)"),
    Doc::new("save", "O(N) where N is the total number of keys in all databases"),
    Doc::new("shutdown", "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)")
        .history(&[
            ("7.0.0", "Added the `NOW`, `FORCE` and `ABORT` modifiers."),
        ])
        .args(
            r"[save-selector(NOSAVE | SAVE)] [NOW]<since 7.0.0>
             [FORCE]<since 7.0.0> [ABORT]<since 7.0.0>",
        ),
    Doc::new("slaveof", "O(1)")
        .deprecated("5.0.0", "`REPLICAOF`")
        .args(
            r"args(host-port{host:string port:integer} | no-one{NO ONE})",
        ),
    Doc::new("slowlog", "Depends on subcommand."),
    Doc::new("slowlog|get", "O(N) where N is the number of entries returned")
        .history(&[
            ("4.0.0", "Added client IP address, port and name to the reply."),
        ])
        .args(
            r"[count:integer]",
        ),
    Doc::new("slowlog|help", "O(1)"),
    Doc::new("slowlog|len", "O(1)"),
    Doc::new("slowlog|reset", "O(N) where N is the number of entries in the slowlog"),
    Doc::new("swapdb", "O(N) where N is the count of clients watching or blocking on keys from both databases.")
        .args(
            r"index1:integer index2:integer",
        ),
    Doc::new("sync", ""),
    Doc::new("syncset", "Depends on subcommand."),
    Doc::new("syncset|add", "O(N) where N is the number of removed replicas")
        .args(r"member:string"),
    Doc::new("syncset|confirm", "O(1)"),
    Doc::new("syncset|forget", "O(1)")
        .args(r"member:string I-ATTEST-IT-IS-DEAD"),
    Doc::new("syncset|list", "O(N) where N is the number of members of the sync set"),
    Doc::new("syncset|remove", "O(1)")
        .args(r"member:string"),
    Doc::new("time", "O(1)"),
    Doc::new("hotkeys", "Depends on subcommand."),
    Doc::new("hotkeys|help", "O(1)"),
    Doc::new("hotkeys|start", "O(1)")
        .args(
            r"METRICS metrics{count:integer [CPU] [NET]} [COUNT k:integer]
             [DURATION seconds:integer] [SAMPLE ratio:integer]
             [SLOTS slots{count:integer slot:integer...}]",
        ),
    Doc::new("hotkeys|stop", "O(1)"),
    Doc::new("hotkeys|get", "O(K) where K is the number of hotkeys to return."),
    Doc::new("hotkeys|reset", "O(1)"),
];
