//! The commands: one file per family, each with its rows of the command table next to
//! the handlers.
//!
//! Every command is one [`CommandSpec`] (the core's command model, `core/command.rs`):
//! name, arity, flags, key positions, ACL categories, documentation and handler. Each
//! family file (`xadd.rs`, `keys.rs`, ...) declares its rows in a `COMMANDS` slice;
//! [`FAMILIES`] lists the slices, and together they are the one table that drives
//! dispatch, arity errors, `COMMAND`, `COMMAND INFO/DOCS/GETKEYS/COUNT/LIST` and ACL
//! categories. `Core::new` installs it.
//!
//! This layer sits on the core and the data types and below persistence and the front
//! end: handlers see a [`Ctx`], write replies with the `resp` writer (stream-shaped
//! replies through [`reply`]), hand their effects to the core
//! ([`Ctx::propagate`](crate::core::Ctx::propagate); the group and IDMP forms are in
//! [`effects`]) and reach persistence only through the core's
//! [`Persistence`](crate::core::persistence::Persistence) interface.

pub mod acl;
pub mod bitmap;
pub mod client_tracking;
pub mod cluster;
pub mod connection;
pub mod deadletter;
pub mod docs;
pub mod dump;
pub mod effects;
pub mod geo;
pub mod hash;
pub mod hash_ttl;
pub mod hotkeys;
pub mod hyperloglog;
pub mod keys;
pub mod latency;
pub mod list;
pub mod memory;
pub mod migrate;
pub mod module;
pub mod pubsub;
pub mod replication;
pub mod reply;
pub mod server;
pub mod set;
pub mod slowlog;
pub mod sort;
pub mod string;
pub mod syncset;
pub mod tips;
pub mod transaction;
pub mod xack;
pub mod xackdel;
pub mod xadd;
pub mod xclaim;
pub mod xgroup;
pub mod xidmp;
pub mod xinfo;
pub mod xnack;
pub mod xpending;
pub mod xrange;
pub mod xread;
pub mod zset;
pub mod zset_range;
pub mod zset_score;
pub mod zset_store;

use crate::core::Ctx;
pub use crate::core::command::{
    CommandSpec, Family, Handler, default_key_flags, flags, keyflags, resolve_subcommand,
    since_version,
};
use crate::error::ReplyError;

/// The family of the rows documented under `server` without keys (ACL, LATENCY,
/// MEMORY, SLOWLOG, the replication and server commands).
pub const SERVER: Family = Family::new("server");

/// The ACL category of the stream commands.
pub const STREAM: &[&str] = &["@stream"];

/// The family of the stream commands whose key is their first argument.
pub const STREAM_KEY1: Family = Family::new("stream").categories(STREAM).keys(1, 1, 1);

/// Test support: the argv of a command line whose arguments are separated by single
/// spaces (`"XACKDEL s g IDS 1 1-1"`).
#[cfg(test)]
pub(crate) fn test_argv(line: &str) -> crate::resp::Argv {
    line.split(' ')
        .map(|a| bytes::Bytes::copy_from_slice(a.as_bytes()))
        .collect()
}

/// Every family's rows: together, the command table.
pub static FAMILIES: &[&[CommandSpec]] = &[
    connection::COMMANDS,
    server::COMMANDS,
    slowlog::COMMANDS,
    hotkeys::COMMANDS,
    replication::COMMANDS,
    syncset::COMMANDS,
    latency::COMMANDS,
    memory::COMMANDS,
    module::COMMANDS,
    acl::COMMANDS,
    keys::COMMANDS,
    dump::COMMANDS,
    migrate::COMMANDS,
    cluster::COMMANDS,
    transaction::COMMANDS,
    xadd::COMMANDS,
    xrange::COMMANDS,
    xinfo::COMMANDS,
    xread::COMMANDS,
    xgroup::COMMANDS,
    xack::COMMANDS,
    xpending::COMMANDS,
    xclaim::COMMANDS,
    xackdel::COMMANDS,
    xnack::COMMANDS,
    xidmp::COMMANDS,
    pubsub::COMMANDS,
    hash::COMMANDS,
    hash_ttl::COMMANDS,
    set::COMMANDS,
    list::COMMANDS,
    sort::COMMANDS,
    zset::COMMANDS,
    geo::COMMANDS,
    string::COMMANDS,
    hyperloglog::COMMANDS,
    bitmap::COMMANDS,
];

/// All top-level commands of the installed table, in table order: every family here
/// and the ones the top layer adds (scripting's EVAL family), as dispatch sees them.
/// Installs [`FAMILIES`] first if no core installed a table yet (unit tests).
pub fn all() -> impl Iterator<Item = &'static CommandSpec> {
    crate::core::command::install_unless_installed(FAMILIES);
    crate::core::command::all()
}

/// Looks a command name up in the installed table, case-insensitively, installing
/// [`FAMILIES`] first if no core did yet (unit tests).
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    crate::core::command::install_unless_installed(FAMILIES);
    crate::core::command::lookup(name)
}

/// Parses a strict integer argument (`string2ll`), or `ERR value is not an integer or
/// out of range`.
pub fn parse_i64(arg: &[u8]) -> Result<i64, ReplyError> {
    crate::stream::id::string2ll(arg).ok_or(ReplyError::NotInteger)
}

/// Case-insensitive comparison of an argument with an ASCII keyword.
pub fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// Help text reply: status lines (Redis's `addReplyHelp`): a header line naming the
/// command, the given lines, then the `HELP` lines.
pub fn reply_help(ctx: &mut Ctx<'_>, container: &str, lines: &[&str]) {
    reply_help_ending(ctx, container, lines, "    Print this help.");
}

/// [`reply_help`] with another last line (Redis 7.0 wrote `    Prints this help.`).
pub fn reply_help_ending(ctx: &mut Ctx<'_>, container: &str, lines: &[&str], last: &str) {
    ctx.out.array(lines.len() + 3);
    ctx.out.simple(
        format!("{container} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:").as_bytes(),
    );
    for l in lines {
        ctx.out.simple(l.as_bytes());
    }
    ctx.out.simple(b"HELP");
    ctx.out.simple(last.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_versions_read_as_split_and_parse_would() {
        crate::core::command::install(crate::commands::FAMILIES);
        let by_parsing = |since: &str| {
            let mut parts = since.split('.').map(|p| p.parse::<u8>().unwrap_or(0));
            (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
        };
        let texts = all()
            .flat_map(|c| std::iter::once(c.since).chain(c.subcommands.iter().map(|s| s.since)))
            .chain([
                "", "8", "8.", ".6", "8.10.1", "x.6", "8.y", "300.1", "7.255", "7.256",
            ]);
        for since in texts {
            assert_eq!(since_version(since), by_parsing(since), "{since:?}");
        }
        assert_eq!(since_version("8.10.0"), (8, 10));
    }

    #[test]
    fn every_command_is_found_case_insensitively() {
        crate::core::command::install(crate::commands::FAMILIES);
        for c in all() {
            assert!(lookup(c.name.as_bytes()).is_some(), "{}", c.name);
            assert!(
                lookup(c.name.to_ascii_uppercase().as_bytes()).is_some(),
                "{}",
                c.name
            );
            assert_eq!(c.name, c.name.to_ascii_lowercase());
            for s in c.subcommands {
                assert!(s.name.starts_with(&format!("{}|", c.name)), "{}", s.name);
            }
        }
    }

    #[test]
    fn no_duplicate_names() {
        crate::core::command::install(crate::commands::FAMILIES);
        let mut names: Vec<_> = all().map(|c| c.name).collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(n, names.len());
    }

    #[test]
    fn arity_rules() {
        crate::core::command::install(crate::commands::FAMILIES);
        let spec = lookup(b"xadd").expect("xadd");
        assert!(!spec.arity_ok(4));
        assert!(spec.arity_ok(5));
        assert!(spec.arity_ok(9));
    }
}
