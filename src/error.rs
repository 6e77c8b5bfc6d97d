//! Every client-visible error, in one place.
//!
//! `ReplyError`'s `Display` is the exact text Redis sends after the leading `-`
//! (`ERR syntax error`, `WRONGTYPE Operation against ...`). Call sites return
//! `Err(ReplyError::...)` and the one dispatcher writes `-<text>\r\n`; no call site
//! formats error text of its own (STYLE.md §2). The strings come from
//! `reference/redis-streams.md` §1.3 and the per-command sections.

use std::borrow::Cow;
use std::fmt;

/// Why a queued command may no longer run at EXEC ([`ReplyError::NoPermChanged`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangedReason {
    /// The command or subcommand is no longer allowed.
    Command,
    /// One of its keys is no longer allowed.
    Key,
    /// One of its channels is no longer allowed.
    Channel,
}

/// An error reply. `Display` gives the wire text without the leading `-`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyError {
    /// `ERR syntax error`
    Syntax,
    /// `ERR value is not an integer or out of range`
    NotInteger,
    /// `ERR Invalid stream ID specified as stream command argument`
    InvalidStreamId,
    /// `ERR invalid start ID for the interval` (exclusive start at the maximum ID)
    InvalidStartInterval,
    /// `ERR invalid end ID for the interval` (exclusive end at 0-0)
    InvalidEndInterval,
    /// `WRONGTYPE Operation against a key holding the wrong kind of value`
    WrongType,
    /// `ERR no such key`
    NoSuchKey,
    /// `ERR wrong number of arguments for '<name>' command` (name lower-cased,
    /// `container|sub` for subcommands)
    WrongArity(String),
    /// `ERR unknown command '<name>', with args beginning with: '<a>' '<b>' `. The
    /// name and arguments are the client's bytes, already cut as Redis cuts them
    /// ([`unknown_command`]).
    UnknownCommand {
        /// The command name as the client sent it.
        name: Vec<u8>,
        /// The arguments after the name, as sent.
        args: Vec<Vec<u8>>,
    },
    /// `ERR unknown subcommand '<sub>'. Try <CONTAINER> HELP.`
    UnknownSubcommand {
        /// The subcommand as typed (raw bytes, cut like `%.128s`).
        sub: Vec<u8>,
        /// The container command, upper case (`XGROUP`).
        container: String,
    },
    /// `ERR unknown subcommand or wrong number of arguments for '<sub>'. Try <CONTAINER> HELP.`
    SubcommandSyntax {
        /// The subcommand as typed.
        sub: String,
        /// The container command, upper case (`XGROUP`).
        container: String,
    },
    /// `ERR The ID specified in XADD must be greater than 0-0`
    XAddIdZero,
    /// `ERR The ID specified in XADD is equal or smaller than the target stream top item`
    XAddIdTooSmall,
    /// `ERR The stream has exhausted the last possible ID, unable to add more items`
    StreamExhausted,
    /// `ERR Elements are too large to be stored`
    ElementsTooLarge,
    /// `NOGROUP No such key '<key>' or consumer group '<group>' in XREADGROUP with GROUP option`
    NoGroupReadGroup {
        /// Key name.
        key: String,
        /// Group name.
        group: String,
    },
    /// `NOGROUP No such key '<key>' or consumer group '<group>'`
    NoGroupKeyOrGroup {
        /// Key name.
        key: String,
        /// Group name.
        group: String,
    },
    /// `NOGROUP No such consumer group '<group>' for key name '<key>'`
    NoGroupForKey {
        /// Key name.
        key: String,
        /// Group name.
        group: String,
    },
    /// `NOAUTH Authentication required.`
    NoAuth,
    /// `EXECABORT Transaction discarded because of previous errors.`
    ExecAbort,
    /// `NOPERM this user has no permissions to run the '<name>' command` (Redis 7.0
    /// wording; `<name>` is the full name, `xgroup|create` for subcommands)
    NoPermCommand(&'static str),
    /// `NOPERM this user has no permissions to access one of the keys used as arguments`
    NoPermKey,
    /// `WRONGPASS invalid username-password pair or user is disabled.`
    WrongPass,
    /// `NOPERM ACLs rules changed between the moment the transaction was accumulated and
    /// the EXEC call. This command is no longer allowed for the following reason: <why>`
    /// (a queued command the user may no longer run).
    NoPermChanged {
        /// What the check denied.
        reason: ChangedReason,
    },
    /// `NOPERM this user has no permissions to access one of the channels used as
    /// arguments`
    NoPermChannel,
    /// `ERR Can't execute '<name>': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT /
    /// RESET are allowed in this context` (a RESP2 client in Pub/Sub mode)
    PubSubContext(&'static str),
    /// `ERR invalid expire time in '<name>' command` (EXPIRE family overflow)
    InvalidExpireTime(&'static str),
    /// `ERR Unsupported option <opt>` (EXPIRE family flags)
    UnsupportedOption(String),
    /// `OOM command not allowed when used memory > 'maxmemory'.` (a `denyoom` command
    /// while over `maxmemory`)
    Oom,
    /// Any other error: the full text after `-`, code included (`ERR ...`,
    /// `BUSYGROUP ...`). Constants for these live next to the command that raises them
    /// only when they are used once; shared ones get their own variant above.
    Other(Cow<'static, str>),
}

impl ReplyError {
    /// An error with fixed text (code included, e.g. `"ERR timeout is negative"`).
    pub const fn msg(text: &'static str) -> Self {
        ReplyError::Other(Cow::Borrowed(text))
    }

    /// An error with computed text (code included).
    pub fn owned(text: String) -> Self {
        ReplyError::Other(Cow::Owned(text))
    }

    /// The wrong-arity error for a command name (any case).
    pub fn arity(name: &[u8]) -> Self {
        ReplyError::WrongArity(String::from_utf8_lossy(name).to_ascii_lowercase())
    }

    /// The exact bytes after `-` on the wire. Errors quoting client input quote its
    /// raw bytes (Redis formats them with `%s`), everything else is the `Display` text.
    pub fn wire_text(&self) -> Vec<u8> {
        match self {
            ReplyError::UnknownCommand { name, args } => {
                let mut out = b"ERR unknown command '".to_vec();
                out.extend_from_slice(name);
                out.extend_from_slice(b"', with args beginning with: ");
                for a in args {
                    out.push(b'\'');
                    out.extend_from_slice(a);
                    out.extend_from_slice(b"' ");
                }
                out
            }
            ReplyError::UnknownSubcommand { sub, container } => {
                let mut out = b"ERR unknown subcommand '".to_vec();
                out.extend_from_slice(sub);
                out.extend_from_slice(format!("'. Try {container} HELP.").as_bytes());
                out
            }
            other => other.to_string().into_bytes(),
        }
    }

    /// The error code (first word), used for INFO errorstats.
    pub fn code(&self) -> String {
        let text = self.to_string();
        text.split(' ').next().unwrap_or("ERR").to_string()
    }
}

/// Lossy text of a client-supplied byte string, for quoting in error messages.
pub fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

impl fmt::Display for ReplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ReplyError::*;
        match self {
            Syntax => f.write_str("ERR syntax error"),
            NotInteger => f.write_str("ERR value is not an integer or out of range"),
            InvalidStreamId => {
                f.write_str("ERR Invalid stream ID specified as stream command argument")
            }
            InvalidStartInterval => f.write_str("ERR invalid start ID for the interval"),
            InvalidEndInterval => f.write_str("ERR invalid end ID for the interval"),
            WrongType => {
                f.write_str("WRONGTYPE Operation against a key holding the wrong kind of value")
            }
            NoSuchKey => f.write_str("ERR no such key"),
            WrongArity(name) => write!(f, "ERR wrong number of arguments for '{name}' command"),
            UnknownCommand { .. } | UnknownSubcommand { .. } => {
                f.write_str(&String::from_utf8_lossy(&self.wire_text()))
            }
            SubcommandSyntax { sub, container } => write!(
                f,
                "ERR unknown subcommand or wrong number of arguments for '{sub}'. Try {container} HELP."
            ),
            XAddIdZero => f.write_str("ERR The ID specified in XADD must be greater than 0-0"),
            XAddIdTooSmall => f.write_str(
                "ERR The ID specified in XADD is equal or smaller than the target stream top item",
            ),
            StreamExhausted => f.write_str(
                "ERR The stream has exhausted the last possible ID, unable to add more items",
            ),
            ElementsTooLarge => f.write_str("ERR Elements are too large to be stored"),
            NoGroupReadGroup { key, group } => write!(
                f,
                "NOGROUP No such key '{key}' or consumer group '{group}' in XREADGROUP with GROUP option"
            ),
            NoGroupKeyOrGroup { key, group } => {
                write!(f, "NOGROUP No such key '{key}' or consumer group '{group}'")
            }
            NoGroupForKey { key, group } => {
                write!(
                    f,
                    "NOGROUP No such consumer group '{group}' for key name '{key}'"
                )
            }
            NoAuth => f.write_str("NOAUTH Authentication required."),
            ExecAbort => f.write_str("EXECABORT Transaction discarded because of previous errors."),
            NoPermCommand(name) => write!(
                f,
                "NOPERM this user has no permissions to run the '{name}' command"
            ),
            NoPermKey => f.write_str(
                "NOPERM this user has no permissions to access one of the keys used as arguments",
            ),
            NoPermChanged { reason } => write!(
                f,
                "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {}",
                match reason {
                    ChangedReason::Key => "no permission to touch the specified keys",
                    ChangedReason::Command => "no permission to execute the command or subcommand",
                    ChangedReason::Channel =>
                        "no permission to access one of the channels used as arguments",
                }
            ),
            PubSubContext(name) => write!(
                f,
                "ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
            ),
            NoPermChannel => f.write_str(
                "NOPERM this user has no permissions to access one of the channels used as arguments",
            ),
            WrongPass => {
                f.write_str("WRONGPASS invalid username-password pair or user is disabled.")
            }
            InvalidExpireTime(name) => write!(f, "ERR invalid expire time in '{name}' command"),
            UnsupportedOption(opt) => write!(f, "ERR Unsupported option {opt}"),
            Oom => f.write_str("OOM command not allowed when used memory > 'maxmemory'."),
            Other(text) => f.write_str(text),
        }
    }
}

impl std::error::Error for ReplyError {}

/// C's `%.*s`: the bytes up to the first NUL, at most `max` of them.
pub fn c_str_prefix(bytes: &[u8], max: usize) -> &[u8] {
    let end = memchr::memchr(0, bytes).unwrap_or(bytes.len()).min(max);
    &bytes[..end]
}

/// The unknown-command error for `argv`, cut exactly as Redis's `processCommand` does:
/// the name as `%.128s`, then arguments while the list is shorter than 128 bytes, each
/// cut to the room left.
pub fn unknown_command(argv: &[bytes::Bytes]) -> ReplyError {
    let name = argv
        .first()
        .map(|n| c_str_prefix(n, 128).to_vec())
        .unwrap_or_default();
    let mut args = Vec::new();
    let mut len = 0usize;
    for a in argv.iter().skip(1) {
        if len >= 128 {
            break;
        }
        let cut = c_str_prefix(a, 128 - len).to_vec();
        len += cut.len() + 3;
        args.push(cut);
    }
    ReplyError::UnknownCommand { name, args }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_command_text_has_trailing_space_after_each_arg() {
        let e = ReplyError::UnknownCommand {
            name: "foo".into(),
            args: vec!["bar".into()],
        };
        assert_eq!(
            e.to_string(),
            "ERR unknown command 'foo', with args beginning with: 'bar' "
        );
    }

    #[test]
    fn arity_error_lowercases_the_name() {
        assert_eq!(
            ReplyError::arity(b"XADD").to_string(),
            "ERR wrong number of arguments for 'xadd' command"
        );
    }

    #[test]
    fn code_is_the_first_word() {
        assert_eq!(ReplyError::WrongType.code(), "WRONGTYPE");
        assert_eq!(ReplyError::Syntax.code(), "ERR");
    }
}
