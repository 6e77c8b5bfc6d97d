//! SLOWLOG GET/LEN/RESET/HELP: reads the core's slow log ([`crate::core::slowlog`]),
//! which `Core::call` fills.
//!
//! An entry is the six-element array of Redis 7: id, unix time, duration in
//! microseconds, the (trimmed) arguments, the client's `ip:port`, the client's name.

use super::SERVER;
use super::{CommandSpec, flags::*, parse_i64};
use crate::core::Ctx;
use crate::error::ReplyError;

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[CommandSpec::container(
    "slowlog",
    "server",
    "A container for slow log commands.",
    "2.2.12",
    SUBCOMMANDS,
)];

const SUBCOMMANDS: &[CommandSpec] = &[
    SERVER.row(
        "slowlog|get",
        -2,
        ADMIN | LOADING | STALE,
        "Returns the slow log's entries.",
        "2.2.12",
        slowlog_get,
    ),
    SERVER.row(
        "slowlog|len",
        2,
        ADMIN | LOADING | STALE,
        "Returns the number of entries in the slow log.",
        "2.2.12",
        slowlog_len,
    ),
    SERVER.row(
        "slowlog|reset",
        2,
        ADMIN | LOADING | STALE,
        "Clears all entries from the slow log.",
        "2.2.12",
        slowlog_reset,
    ),
    SERVER.row(
        "slowlog|help",
        2,
        LOADING | STALE,
        "Show helpful text about the different subcommands",
        "6.2.0",
        slowlog_help,
    ),
];

/// The error for a bad GET count (Redis passes this text to
/// `getRangeLongFromObjectOrReply`, so it covers non-numbers too).
const BAD_COUNT: ReplyError = ReplyError::msg("ERR count should be greater than or equal to -1");

/// Default entries SLOWLOG GET returns.
const DEFAULT_COUNT: usize = 10;

fn slowlog_get(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    if ctx.argv.len() > 3 {
        return Err(ReplyError::SubcommandSyntax {
            sub: String::from_utf8_lossy(&ctx.argv[1]).into_owned(),
            container: "SLOWLOG".to_string(),
        });
    }
    let count = match ctx.argv.get(2) {
        None => DEFAULT_COUNT,
        Some(arg) => match parse_i64(arg).map_err(|_| BAD_COUNT)? {
            -1 => usize::MAX,
            n if n < -1 => return Err(BAD_COUNT),
            n => usize::try_from(n).unwrap_or(usize::MAX),
        },
    };
    let log = &ctx.core.slowlog;
    let n = log.len().min(count);
    ctx.out.array(n);
    for e in log.iter().take(n) {
        ctx.out.array(6);
        ctx.out.integer(e.id as i64);
        ctx.out.integer(e.time as i64);
        ctx.out
            .integer(i64::try_from(e.duration).unwrap_or(i64::MAX));
        ctx.out.array(e.argv.len());
        for a in &e.argv {
            ctx.out.bulk(a);
        }
        ctx.out.bulk(e.peer.as_bytes());
        ctx.out.bulk(&e.name);
    }
    Ok(())
}

fn slowlog_len(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let n = ctx.core.slowlog.len();
    ctx.out.integer(n as i64);
    Ok(())
}

fn slowlog_reset(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    ctx.core.slowlog.reset();
    ctx.out.ok();
    Ok(())
}

fn slowlog_help(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    super::reply_help(
        ctx,
        "SLOWLOG",
        &[
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "    Entries are made of:",
            "    id, timestamp, time in microseconds, arguments array, client IP and port,",
            "    client name",
            "LEN",
            "    Return the length of the slowlog.",
            "RESET",
            "    Reset the slowlog.",
        ],
    );
    Ok(())
}
