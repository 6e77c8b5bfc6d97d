//! The ACL container: SETUSER, GETUSER, DELUSER, LIST, USERS, WHOAMI, CAT, GENPASS, LOG,
//! LOAD, SAVE, DRYRUN, HELP (Redis 7.0 replies and errors). The users and the permission
//! logic live in `core/acl/`; this file parses arguments and shapes replies.

use super::SERVER;
use super::{CommandSpec, flags::*, is, parse_i64};
use crate::core::Ctx;
use crate::core::acl;
use crate::core::command::CATEGORIES;
use crate::error::ReplyError;
use bytes::Bytes;
use std::io::Read;

/// Flags of the administrative subcommands (everything that reads or changes users).
const ADMIN_SUB: u32 = ADMIN | NOSCRIPT | LOADING | STALE;
/// Flags of the subcommands any user may be given (CAT, GENPASS, WHOAMI).
const PLAIN_SUB: u32 = NOSCRIPT | LOADING | STALE;

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[CommandSpec {
    handler: acl_help,
    ..SERVER.container(
        "acl",
        "A container for Access List Control commands",
        "6.0.0",
        ACL_SUBCOMMANDS,
    )
}];

const ACL_SUBCOMMANDS: &[CommandSpec] = &[
    SERVER.row(
        "acl|cat",
        -2,
        PLAIN_SUB,
        "List the ACL categories or the commands inside a category",
        "6.0.0",
        acl_cat,
    ),
    SERVER.row(
        "acl|deluser",
        -3,
        ADMIN_SUB,
        "Remove the specified ACL users and the associated rules",
        "6.0.0",
        acl_deluser,
    ),
    SERVER.row(
        "acl|dryrun",
        -4,
        ADMIN_SUB,
        "Returns whether the user can execute the given command without executing the command.",
        "7.0.0",
        acl_dryrun,
    ),
    SERVER.row(
        "acl|genpass",
        -2,
        PLAIN_SUB,
        "Generate a pseudorandom secure password to use for ACL users",
        "6.0.0",
        acl_genpass,
    ),
    SERVER.row(
        "acl|getuser",
        3,
        ADMIN_SUB,
        "Get the rules for a specific ACL user",
        "6.0.0",
        acl_getuser,
    ),
    SERVER.row(
        "acl|list",
        2,
        ADMIN_SUB,
        "List the current ACL rules in ACL config file format",
        "6.0.0",
        acl_list,
    ),
    SERVER.row(
        "acl|load",
        2,
        ADMIN_SUB,
        "Reload the ACLs from the configured ACL file",
        "6.0.0",
        acl_load,
    ),
    SERVER.row(
        "acl|log",
        -2,
        ADMIN_SUB,
        "List latest events denied because of ACLs in place",
        "6.0.0",
        acl_log,
    ),
    SERVER.row(
        "acl|save",
        2,
        ADMIN_SUB,
        "Save the current ACL rules in the configured ACL file",
        "6.0.0",
        acl_save,
    ),
    SERVER.row(
        "acl|setuser",
        -3,
        ADMIN_SUB,
        "Modify or create the rules for a specific ACL user",
        "6.0.0",
        acl_setuser,
    ),
    SERVER.row(
        "acl|users",
        2,
        ADMIN_SUB,
        "List the username of all the configured ACL rules",
        "6.0.0",
        acl_users,
    ),
    SERVER.row(
        "acl|whoami",
        2,
        PLAIN_SUB,
        "Return the name of the user associated to the current connection",
        "6.0.0",
        acl_whoami,
    ),
    SERVER.row(
        "acl|help",
        2,
        LOADING | STALE,
        "Show helpful text about the different subcommands",
        "6.0.0",
        acl_help,
    ),
];

const NO_ACL_FILE: ReplyError = ReplyError::msg(
    "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.",
);
const GENPASS_RANGE: ReplyError = ReplyError::msg(
    "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096",
);

/// `ERR unknown subcommand or wrong number of arguments for '<sub>'. Try ACL HELP.`
fn syntax(ctx: &Ctx<'_>) -> ReplyError {
    ReplyError::SubcommandSyntax {
        sub: crate::error::lossy(&ctx.argv[1]),
        container: "ACL".into(),
    }
}

fn acl_setuser(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let name = &ctx.argv[2];
    if !acl::valid_username(name) {
        return Err(ReplyError::msg(
            "ERR Usernames can't contain spaces or null characters",
        ));
    }
    let rules = &ctx.argv[3..];
    let before = ctx.core.acl.get(name).map(|u| u.borrow().clone());
    ctx.core.acl.set_user(name, rules).map_err(|(i, e)| {
        ReplyError::owned(format!(
            "ERR Error in ACL SETUSER modifier '{}': {}",
            String::from_utf8_lossy(&rules[i]),
            e.message()
        ))
    })?;
    // Subscribers that lost a channel they listen to are disconnected.
    if let (Some(before), Some(user)) = (before, ctx.core.acl.get(name)) {
        ctx.core
            .kill_pubsub_clients_if_needed(&user, &before, ctx.client);
    }
    ctx.out.ok();
    Ok(())
}

fn acl_getuser(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let Some(user) = ctx.core.acl.get(&ctx.argv[2]) else {
        ctx.out.null();
        return Ok(());
    };
    let u = user.borrow();
    let out = &mut *ctx.out;
    out.map(6);
    out.bulk(b"flags");
    let flags = u.flag_names();
    out.set(flags.len());
    for f in flags {
        out.bulk(f.as_bytes());
    }
    out.bulk(b"passwords");
    out.array(u.passwords.len());
    for p in &u.passwords {
        out.bulk(p.as_bytes());
    }
    out.bulk(b"commands");
    out.bulk(u.describe_commands().as_bytes());
    out.bulk(b"keys");
    out.bulk(u.describe_keys().as_bytes());
    out.bulk(b"channels");
    out.bulk(u.describe_channels().as_bytes());
    out.bulk(b"selectors");
    out.array(0);
    Ok(())
}

fn acl_deluser(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let names = &ctx.argv[2..];
    if names.iter().any(|n| n.as_ref() == b"default") {
        return Err(ReplyError::msg("ERR The 'default' user cannot be removed"));
    }
    let mut deleted = Vec::new();
    for n in names {
        if let Some(u) = ctx.core.acl.delete(n) {
            deleted.push(u);
        }
    }
    ctx.core.disconnect_users(&deleted);
    close_if_user_in(ctx, &deleted);
    ctx.out.integer(deleted.len() as i64);
    Ok(())
}

/// The calling client is not in `core.clients`: when its own user went away, it is
/// closed after this reply (Redis's `CLIENT_CLOSE_AFTER_COMMAND`).
fn close_if_user_in(ctx: &mut Ctx<'_>, users: &[acl::UserRef]) {
    if let Some(u) = &ctx.client.user
        && users.iter().any(|d| std::rc::Rc::ptr_eq(d, u))
    {
        ctx.client.close_after_reply = true;
    }
}

fn acl_list(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let lines: Vec<String> = ctx
        .core
        .acl
        .users()
        .map(|u| u.borrow().list_line())
        .collect();
    ctx.out.array(lines.len());
    for l in lines {
        ctx.out.bulk(l.as_bytes());
    }
    Ok(())
}

fn acl_users(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let names: Vec<Bytes> = ctx
        .core
        .acl
        .users()
        .map(|u| u.borrow().name.clone())
        .collect();
    ctx.out.array(names.len());
    for n in names {
        ctx.out.bulk(&n);
    }
    Ok(())
}

fn acl_whoami(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let name = ctx.client.username();
    ctx.out.bulk(&name);
    Ok(())
}

fn acl_cat(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    match ctx.argv.len() {
        2 => {
            ctx.out.array(CATEGORIES.len());
            for c in CATEGORIES {
                ctx.out.bulk(c.as_bytes());
            }
        }
        3 => {
            let name = String::from_utf8_lossy(&ctx.argv[2]).into_owned();
            let Some(cat) = acl::category_index(&name) else {
                return Err(ReplyError::owned(format!(
                    "ERR Unknown category '{}'",
                    String::from_utf8_lossy(crate::error::c_str_prefix(&ctx.argv[2], 128))
                )));
            };
            let ix = acl::index();
            let names: Vec<&str> = (0..ix.len())
                .filter(|&id| ix.categories[id] & (1 << cat) != 0)
                .map(|id| ix.specs[id].name)
                .collect();
            ctx.out.array(names.len());
            for n in names {
                ctx.out.bulk(n.as_bytes());
            }
        }
        _ => return Err(syntax(ctx)),
    }
    Ok(())
}

/// `n` random bytes from the kernel's CSPRNG.
fn random_bytes(n: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; n];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut buf)?;
    Ok(buf)
}

fn acl_genpass(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let bits = match ctx.argv.len() {
        2 => 256,
        3 => parse_i64(&ctx.argv[2])?,
        _ => return Err(syntax(ctx)),
    };
    if !(1..=4096).contains(&bits) {
        return Err(GENPASS_RANGE);
    }
    let chars = (bits as usize).div_ceil(4);
    let bytes = random_bytes(chars.div_ceil(2)).map_err(|e| {
        tracing::error!(error = %e, "ACL GENPASS: cannot read /dev/urandom");
        ReplyError::msg("ERR Failed to generate a random password")
    })?;
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut pass: Vec<u8> = bytes
        .iter()
        .flat_map(|b| [HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]])
        .collect();
    pass.truncate(chars);
    ctx.out.bulk(&pass);
    Ok(())
}

fn acl_log(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let count = match ctx.argv.len() {
        2 => 10,
        3 if is(&ctx.argv[2], "RESET") => {
            ctx.core.acl.log.reset();
            ctx.out.ok();
            return Ok(());
        }
        3 => parse_i64(&ctx.argv[2])?.max(0) as usize,
        _ => return Err(syntax(ctx)),
    };
    ctx.core
        .acl
        .log
        .reply(ctx.out, count, crate::core::unix_ms());
    Ok(())
}

fn acl_file(ctx: &Ctx<'_>) -> Result<std::path::PathBuf, ReplyError> {
    match ctx.core.config.get("aclfile") {
        Some(p) if !p.is_empty() => Ok(std::path::PathBuf::from(p)),
        _ => Err(NO_ACL_FILE),
    }
}

fn acl_load(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let path = acl_file(ctx)?;
    let users = acl::file::load(&path).map_err(|e| ReplyError::owned(format!("ERR {e}")))?;
    let default_before = ctx.core.acl.default_user().borrow().clone();
    let replaced = ctx.core.acl.replace_users(users);
    // The default user keeps its clients; those whose subscriptions it no longer allows
    // go, as after ACL SETUSER.
    let default = ctx.core.acl.default_user();
    ctx.core
        .kill_pubsub_clients_if_needed(&default, &default_before, ctx.client);
    ctx.core.disconnect_users(&replaced);
    close_if_user_in(ctx, &replaced);
    ctx.out.ok();
    Ok(())
}

fn acl_save(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let path = acl_file(ctx)?;
    let text = acl::file::render(ctx.core.acl.users().map(|u| u.borrow().list_line()));
    acl::file::save(&path, &text).map_err(|e| {
        tracing::error!(error = %e, path = %path.display(), "ACL SAVE failed");
        ReplyError::msg(
            "ERR There was an error trying to save the ACLs. Please check the server logs for more information",
        )
    })?;
    ctx.out.ok();
    Ok(())
}

fn acl_dryrun(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let Some(user) = ctx.core.acl.get(&argv[2]) else {
        return Err(ReplyError::owned(format!(
            "ERR User '{}' not found",
            crate::error::lossy(&argv[2])
        )));
    };
    let target: crate::resp::Argv = argv[3..].to_vec();
    let spec = super::lookup(&target[0])
        .and_then(|s| super::resolve_subcommand(s, &target).ok())
        .ok_or_else(|| {
            ReplyError::owned(format!(
                "ERR Command '{}' not found",
                crate::error::lossy(&target[0])
            ))
        })?;
    if !spec.arity_ok(target.len()) {
        return Err(ReplyError::WrongArity(spec.full_name().to_string()));
    }
    match user.borrow().check(spec, &target) {
        Ok(()) => ctx.out.ok(),
        Err(acl::Denied::Command) => ctx.out.bulk(
            format!(
                "This user has no permissions to run the '{}' command",
                spec.full_name()
            )
            .as_bytes(),
        ),
        Err(acl::Denied::Key(pos)) => ctx.out.bulk(
            format!(
                "This user has no permissions to access the '{}' key",
                crate::error::lossy(&target[pos])
            )
            .as_bytes(),
        ),
        Err(acl::Denied::Channel(pos)) => ctx.out.bulk(
            format!(
                "This user has no permissions to access the '{}' channel",
                crate::error::lossy(&target[pos])
            )
            .as_bytes(),
        ),
    }
    Ok(())
}

fn acl_help(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    super::reply_help(
        ctx,
        "ACL",
        &[
            "CAT [<category>]",
            "    List all commands that belong to <category>, or all command categories",
            "    when no category is specified.",
            "DELUSER <username> [<username> ...]",
            "    Delete a list of users.",
            "DRYRUN <username> <command> [<arg> ...]",
            "    Returns whether the user can execute the given command without executing the command.",
            "GETUSER <username>",
            "    Get the user's details.",
            "GENPASS [<bits>]",
            "    Generate a secure 256-bit user password. The optional `bits` argument can",
            "    be used to specify a different size.",
            "LIST",
            "    Show users details in config file format.",
            "LOAD",
            "    Reload users from the ACL file.",
            "LOG [<count> | RESET]",
            "    Show the ACL log entries.",
            "SAVE",
            "    Save the current config to the ACL file.",
            "SETUSER <username> <attribute> [<attribute> ...]",
            "    Create or modify a user with the specified attributes.",
            "USERS",
            "    List all the registered usernames.",
            "WHOAMI",
            "    Return the current connection username.",
        ],
    );
    Ok(())
}
