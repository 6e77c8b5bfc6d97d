//! `COMMAND DOCS` entries of the connection commands, in the grammar of the parent
//! module's doc. One entry per command or subcommand, keyed by full name.

use super::Doc;

/// The connection group's entries.
pub const DOCS: &[Doc] = &[
    Doc::new("auth", "O(N) where N is the number of passwords defined for the user")
        .history(&[
            ("6.0.0", "Added ACL style (username and password)."),
        ])
        .args(
            r"[username:string]<since 6.0.0> password:string",
        ),
    Doc::new("client", "Depends on subcommand."),
    Doc::new("client|getname", "O(1)"),
    Doc::new("client|help", "O(1)"),
    Doc::new("client|id", "O(1)"),
    Doc::new("client|info", "O(1)"),
    Doc::new("client|kill", "O(N) where N is the number of client connections")
        .history(&[
            ("2.8.12", "Added new filter format."),
            ("2.8.12", "`ID` option."),
            ("3.2.0", "Added `master` type in for `TYPE` option."),
            ("5.0.0", "Replaced `slave` `TYPE` with `replica`. `slave` still supported for backward compatibility."),
            ("6.2.0", "`LADDR` option."),
            ("7.4.0", "`MAXAGE` option."),
        ])
        .args(
            r"filter(old-format:string<deprecated 2.8.12><display ip:port> |
             new-format([ID client-id:integer]<since 2.8.12> |
             [TYPE
             client-type(normal | master<since 3.2.0> | slave | replica<since 5.0.0> | pubsub)]<since 2.8.12>
             | [USER username:string] | [ADDR addr:string]<display ip:port> |
             [LADDR laddr:string]<since 6.2.0><display ip:port> | [SKIPME skipme(YES | NO)]
             | [MAXAGE maxage:integer]<since 7.4.0>)...)",
        ),
    Doc::new("client|list", "O(N) where N is the number of client connections")
        .history(&[
            ("2.8.12", "Added unique client `id` field."),
            ("5.0.0", "Added optional `TYPE` filter."),
            ("6.0.0", "Added `user` field."),
            ("6.2.0", "Added `argv-mem`, `tot-mem`, `laddr` and `redir` fields and the optional `ID` filter."),
            ("7.0.0", "Added `resp`, `multi-mem`, `rbs` and `rbp` fields."),
            ("7.0.3", "Added `ssub` field."),
        ])
        .args(
            r"[TYPE client-type(normal | master | replica | pubsub)]<since 5.0.0>
             [ID client-id:integer]...<since 6.2.0>",
        ),
    Doc::new("client|no-evict", "O(1)")
        .args(
            r"enabled(ON | OFF)",
        ),
    Doc::new("client|no-touch", "O(1)")
        .args(
            r"enabled(ON | OFF)",
        ),
    Doc::new("client|caching", "O(1)")
        .args(
            r"mode(YES | NO)",
        ),
    Doc::new("client|getredir", "O(1)"),
    Doc::new("client|pause", "O(1)")
        .history(&[("6.2.0", "`CLIENT PAUSE WRITE` mode added along with the `mode` option.")])
        .args(
            r"timeout:integer [mode(WRITE | ALL)]<since 6.2.0>",
        ),
    Doc::new("client|reply", "O(1)")
        .args(
            r"on_off_skip(ON | OFF | SKIP)",
        ),
    Doc::new("client|setinfo", "O(1)")
        .args(
            r"attr(lib-name libname:string | lib-ver libver:string)",
        ),
    Doc::new("client|setname", "O(1)")
        .args(
            r"connection-name:string",
        ),
    Doc::new("client|tracking", "O(1). Some options may introduce additional complexity.")
        .args(
            r"status(ON | OFF) [REDIRECT client-id:integer] [PREFIX prefix:string]...+ [BCAST]
             [OPTIN] [OPTOUT] [NOLOOP]",
        ),
    Doc::new("client|trackinginfo", "O(1)"),
    Doc::new("client|unblock", "O(log N) where N is the number of client connections")
        .args(
            r"client-id:integer [unblock-type(TIMEOUT | ERROR)]",
        ),
    Doc::new("client|unpause", "O(N) Where N is the number of paused clients"),
    Doc::new("echo", "O(1)")
        .args(
            r"message:string",
        ),
    Doc::new("hello", "O(1)")
        .history(&[
            ("6.2.0", "`protover` made optional; when called without arguments the command reports the current connection's context."),
        ])
        .args(
            r"[arguments{protover:integer [AUTH auth{username:string password:string}]
             [SETNAME clientname:string]}]",
        ),
    Doc::new("ping", "O(1)")
        .args(
            r"[message:string]",
        ),
    Doc::new("quit", "O(1)")
        .deprecated("7.2.0", "just closing the connection"),
    Doc::new("reset", "O(1)"),
    Doc::new("select", "O(1)")
        .args(
            r"index:integer",
        ),
];
