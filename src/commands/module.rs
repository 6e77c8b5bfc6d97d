//! MODULE LIST/LOAD/LOADEX/UNLOAD/HELP. streamd loads no Redis modules (they are C
//! shared objects written against Redis's own memory and object model), so it answers
//! as a Redis with no module loaded: LIST is empty (tools call it to detect modules),
//! LOAD and LOADEX fail as a module that cannot be loaded fails, UNLOAD finds nothing.
//!
//! LOAD, LOADEX and UNLOAD are protected commands, as in Redis 7.0: refused unless
//! `enable-module-command` is `yes`, or `local` and the client is on a loopback or
//! Unix-socket connection.

use super::SERVER;
use super::{CommandSpec, flags::*};
use crate::core::Ctx;
use crate::error::ReplyError;
use std::borrow::Cow;

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[CommandSpec::container(
    "module",
    "server",
    "A container for module commands.",
    "4.0.0",
    SUBCOMMANDS,
)];

const SUBCOMMANDS: &[CommandSpec] = &[
    SERVER.row(
        "module|help",
        2,
        LOADING | STALE,
        "Returns helpful text about the different subcommands.",
        "5.0.0",
        module_help,
    ),
    SERVER.row(
        "module|list",
        2,
        ADMIN | NOSCRIPT,
        "Returns all loaded modules.",
        "4.0.0",
        module_list,
    ),
    SERVER.row(
        "module|load",
        -3,
        NO_ASYNC_LOADING | ADMIN | NOSCRIPT,
        "Loads a module.",
        "4.0.0",
        module_load,
    ),
    SERVER.row(
        "module|loadex",
        -3,
        NO_ASYNC_LOADING | ADMIN | NOSCRIPT,
        "Loads a module using extended parameters.",
        "7.0.0",
        module_load,
    ),
    SERVER.row(
        "module|unload",
        3,
        NO_ASYNC_LOADING | ADMIN | NOSCRIPT,
        "Unloads a module.",
        "4.0.0",
        module_unload,
    ),
];

/// The refusal of a protected MODULE subcommand (Redis's `rejectCommandFormat` for
/// `CMD_PROTECTED` with `enable-module-command`).
const NOT_ALLOWED: ReplyError = ReplyError::Other(Cow::Borrowed(
    "ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.",
));

/// Is a protected subcommand allowed for this client (`enable-module-command`)?
fn allowed(ctx: &Ctx<'_>) -> bool {
    match ctx.core.config.get("enable-module-command").unwrap_or("no") {
        "yes" => true,
        "local" => {
            let addr = &ctx.client.addr;
            addr.starts_with("127.")
                || addr.starts_with("[::1]")
                || addr.starts_with("::1")
                || addr.starts_with('/')
        }
        _ => false,
    }
}

fn module_list(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    ctx.out.array(0);
    Ok(())
}

/// MODULE LOAD / LOADEX: no module can be loaded; Redis's reply to a failed load.
fn module_load(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    if !allowed(ctx) {
        return Err(NOT_ALLOWED);
    }
    tracing::warn!(
        path = %String::from_utf8_lossy(&ctx.argv[2]),
        "Module failed to load: streamd does not load Redis modules"
    );
    Err(ReplyError::msg(
        "ERR Error loading the extension. Please check the server logs.",
    ))
}

fn module_unload(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    if !allowed(ctx) {
        return Err(NOT_ALLOWED);
    }
    Err(ReplyError::msg(
        "ERR Error unloading module: no such module with that name",
    ))
}

fn module_help(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    super::reply_help_ending(
        ctx,
        "MODULE",
        &[
            "LIST",
            "    Return a list of loaded modules.",
            "LOAD <path> [<arg> ...]",
            "    Load a module library from <path>, passing to it any optional arguments.",
            "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
            "    Load a module library from <path>, while passing it module configurations and optional arguments.",
            "UNLOAD <name>",
            "    Unload a module.",
        ],
        "    Prints this help.",
    );
    Ok(())
}
