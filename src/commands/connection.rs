//! Connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET, READONLY,
//! READWRITE and the CLIENT container (reference §6).

use super::{CommandSpec, Family, flags::*, is, parse_i64};
use crate::core::client::ClientMsg;
use crate::core::{Ctx, redis_version};
use crate::error::ReplyError;
use crate::resp::writer::Protocol;

const CONN: &[&str] = &["@connection"];

/// The family of the connection commands' rows.
const CONNECTION: Family = Family::new("connection").categories(CONN);

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[
    CONNECTION.row(
        "ping",
        -1,
        FAST,
        "Returns the server's liveliness response.",
        "1.0.0",
        ping,
    ),
    CONNECTION.row(
        "echo",
        2,
        LOADING | STALE | FAST,
        "Returns the given string.",
        "1.0.0",
        echo,
    ),
    CONNECTION.row(
        "hello",
        -1,
        FAST | NO_AUTH | NOSCRIPT | LOADING | STALE | ALLOW_BUSY,
        "Handshakes with the Redis server.",
        "6.0.0",
        hello,
    ),
    CONNECTION.row(
        "auth",
        -2,
        FAST | NO_AUTH | NOSCRIPT | LOADING | STALE | ALLOW_BUSY,
        "Authenticates the connection.",
        "1.0.0",
        auth,
    ),
    CONNECTION.row(
        "select",
        2,
        FAST | LOADING | STALE,
        "Changes the selected database.",
        "1.0.0",
        select,
    ),
    CONNECTION.row(
        "quit",
        -1,
        FAST | NO_AUTH | NO_MULTI_QUEUE | NOSCRIPT | LOADING | STALE | ALLOW_BUSY,
        "Closes the connection.",
        "1.0.0",
        quit,
    ),
    CONNECTION.row(
        "reset",
        1,
        FAST | NO_AUTH | NO_MULTI_QUEUE | NOSCRIPT | LOADING | STALE | ALLOW_BUSY,
        "Resets the connection.",
        "6.2.0",
        reset,
    ),
    CommandSpec {
        handler: client_help,
        // Containers are only @slow in Redis: `+@connection` names the subcommands.
        ..CommandSpec::container(
            "client",
            "connection",
            "A container for client connection commands.",
            "2.4.0",
            CLIENT_SUBCOMMANDS,
        )
    },
];

const CLIENT_SUBCOMMANDS: &[CommandSpec] = &[
    CONNECTION.row(
        "client|id",
        2,
        NOSCRIPT | LOADING | STALE,
        "Returns the unique client ID of the connection.",
        "5.0.0",
        client_id,
    ),
    CONNECTION.row(
        "client|setname",
        3,
        NOSCRIPT | LOADING | STALE,
        "Sets the connection name.",
        "2.6.9",
        client_setname,
    ),
    CONNECTION.row(
        "client|getname",
        2,
        NOSCRIPT | LOADING | STALE,
        "Returns the name of the connection.",
        "2.6.9",
        client_getname,
    ),
    CONNECTION.row(
        "client|setinfo",
        4,
        NOSCRIPT | LOADING | STALE,
        "Sets information specific to the client or connection.",
        "7.2.0",
        client_setinfo,
    ),
    CONNECTION.row(
        "client|list",
        -2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Lists open connections.",
        "2.4.0",
        client_list,
    ),
    CONNECTION.row(
        "client|info",
        2,
        NOSCRIPT | LOADING | STALE,
        "Returns information about the connection.",
        "6.2.0",
        client_info,
    ),
    CONNECTION.row(
        "client|kill",
        -3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Terminates open connections.",
        "2.4.0",
        client_kill,
    ),
    CONNECTION.row(
        "client|no-evict",
        3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Sets the client eviction mode of the connection.",
        "7.0.0",
        client_no_evict,
    ),
    CONNECTION.row(
        "client|no-touch",
        3,
        NOSCRIPT | LOADING | STALE,
        "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.",
        "7.2.0",
        client_no_touch,
    ),
    CONNECTION.row(
        "client|unblock",
        -3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Unblocks a client blocked by a blocking command from a different connection.",
        "5.0.0",
        client_unblock,
    ),
    CONNECTION.row(
        "client|pause",
        -3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Suspends commands processing.",
        "2.9.50",
        client_pause,
    ),
    CONNECTION.row(
        "client|unpause",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        "Resumes processing commands from paused clients.",
        "6.2.0",
        client_unpause,
    ),
    CONNECTION.row(
        "client|reply",
        3,
        NOSCRIPT | LOADING | STALE,
        "Instructs the server whether to reply to commands.",
        "3.2.0",
        client_reply,
    ),
    CONNECTION.row(
        "client|tracking",
        -3,
        NOSCRIPT | LOADING | STALE,
        "Controls server-assisted client-side caching for the connection.",
        "6.0.0",
        super::client_tracking::client_tracking,
    ),
    CONNECTION.row(
        "client|caching",
        3,
        NOSCRIPT | LOADING | STALE,
        "Instructs the server whether to track the keys in the next request.",
        "6.0.0",
        super::client_tracking::client_caching,
    ),
    CONNECTION.row(
        "client|getredir",
        2,
        NOSCRIPT | LOADING | STALE,
        "Returns the client ID to which the connection's tracking notifications are redirected.",
        "6.0.0",
        super::client_tracking::client_getredir,
    ),
    CONNECTION.row(
        "client|trackinginfo",
        2,
        NOSCRIPT | LOADING | STALE,
        "Returns information about server-assisted client-side caching for the connection.",
        "6.2.0",
        super::client_tracking::client_trackinginfo,
    ),
    CONNECTION.row(
        "client|help",
        2,
        LOADING | STALE,
        "Returns helpful text about the different subcommands.",
        "5.0.0",
        client_help,
    ),
];

fn ping(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    if ctx.argv.len() <= 2 && ctx.client.in_pubsub() && ctx.client.proto == Protocol::Resp2 {
        // Subscribed RESP2 clients read only arrays: `[pong, ""]` or `[pong, msg]`.
        ctx.out.array(2);
        ctx.out.bulk(b"pong");
        ctx.out
            .bulk(ctx.argv.get(1).map_or(&b""[..], |m| m.as_ref()));
        return Ok(());
    }
    match ctx.argv.len() {
        1 => ctx.out.simple(b"PONG"),
        2 => ctx.out.bulk(&ctx.argv[1]),
        _ => return Err(ReplyError::arity(b"ping")),
    }
    Ok(())
}

fn echo(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    ctx.out.bulk(&ctx.argv[1]);
    Ok(())
}

/// Authenticates the client as `user` with `pass` (Redis's `ACLAuthenticateUser`): on
/// success the client runs as that user; on failure the attempt goes to the ACL log
/// (reason `auth`, object the command as typed) and the reply is WRONGPASS.
fn authenticate(ctx: &mut Ctx<'_>, user: &[u8], pass: &[u8]) -> Result<(), ReplyError> {
    if let Some(u) = ctx.core.acl.authenticate(user, pass) {
        ctx.client.user = Some(u);
        ctx.client.authenticated = true;
        return Ok(());
    }
    let context = if ctx.client.multi.is_some() {
        crate::core::acl::log::Context::Multi
    } else {
        crate::core::acl::log::Context::Toplevel
    };
    ctx.core.acl_log(
        ctx.client,
        crate::core::acl::log::Reason::Auth,
        context,
        ctx.argv[0].clone(),
        bytes::Bytes::copy_from_slice(user),
    );
    Err(ReplyError::WrongPass)
}

fn hello(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let mut next = 1;
    let mut proto = None;
    if argv.len() >= 2 {
        let ver = parse_i64(&argv[1]).map_err(|_| {
            ReplyError::msg("ERR Protocol version is not an integer or out of range")
        })?;
        if !(2..=3).contains(&ver) {
            return Err(ReplyError::msg("NOPROTO unsupported protocol version"));
        }
        proto = Some(if ver == 3 {
            Protocol::Resp3
        } else {
            Protocol::Resp2
        });
        next = 2;
    }
    let mut auth = None;
    let mut setname = None;
    while next < argv.len() {
        let more = argv.len() - next - 1;
        if is(&argv[next], "AUTH") && more >= 2 {
            auth = Some((argv[next + 1].clone(), argv[next + 2].clone()));
            next += 3;
        } else if is(&argv[next], "SETNAME") && more >= 1 {
            setname = Some(argv[next + 1].clone());
            next += 2;
        } else {
            return Err(ReplyError::owned(format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(&argv[next])
            )));
        }
    }
    if let Some((user, pass)) = &auth {
        authenticate(ctx, user, pass)?;
    }
    if !ctx.client.authenticated {
        return Err(ReplyError::msg(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time",
        ));
    }
    if let Some(name) = setname {
        validate_client_name(&name)?;
        ctx.client.name = if name.is_empty() { None } else { Some(name) };
    }
    if let Some(p) = proto {
        ctx.client.proto = p;
        ctx.out.proto = p;
    }
    let out = &mut *ctx.out;
    out.map(7);
    out.bulk(b"server");
    out.bulk(b"redis");
    out.bulk(b"version");
    out.bulk(redis_version(ctx.core.compat).as_bytes());
    out.bulk(b"proto");
    out.integer(if ctx.client.proto == Protocol::Resp3 {
        3
    } else {
        2
    });
    out.bulk(b"id");
    out.integer(ctx.client.id as i64);
    out.bulk(b"mode");
    out.bulk(b"standalone");
    out.bulk(b"role");
    out.bulk(b"master");
    out.bulk(b"modules");
    out.array(0);
    Ok(())
}

fn auth(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let (user, pass) = match argv.len() {
        2 => {
            if ctx.core.acl.default_user().borrow().nopass {
                return Err(ReplyError::msg(
                    "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
                ));
            }
            (&b"default"[..], &argv[1][..])
        }
        3 => (&argv[1][..], &argv[2][..]),
        _ => return Err(ReplyError::Syntax),
    };
    authenticate(ctx, user, pass)?;
    ctx.out.ok();
    Ok(())
}

fn select(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let idx = parse_i64(&ctx.argv[1])
        .map_err(|_| ReplyError::msg("ERR value is not an integer or out of range"))?;
    if idx < 0 || idx as usize >= ctx.core.dbs.len() {
        return Err(ReplyError::msg("ERR DB index is out of range"));
    }
    ctx.client.db = idx as usize;
    ctx.out.ok();
    Ok(())
}

fn quit(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    ctx.client.close_after_reply = true;
    ctx.out.ok();
    Ok(())
}

fn reset(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    ctx.client.multi = None;
    ctx.client.multi_error = false;
    ctx.core.unwatch_all(ctx.client);
    ctx.core.unsubscribe_everything(ctx.client);
    ctx.client.db = 0;
    ctx.client.proto = Protocol::Resp2;
    ctx.out.proto = Protocol::Resp2;
    ctx.client.name = None;
    ctx.client.no_evict = false;
    ctx.client.no_touch = false;
    if ctx.client.monitor {
        ctx.client.monitor = false;
        let id = ctx.client.id;
        ctx.core.monitors.retain(|&m| m != id);
    }
    // Back to the default user, authenticated only if it needs no password.
    if ctx.client.user.is_some() {
        ctx.client.user = Some(ctx.core.acl.default_user());
    }
    ctx.client.authenticated = ctx.core.acl.new_client_authenticated();
    ctx.out.simple(b"RESET");
    Ok(())
}

fn validate_client_name(name: &[u8]) -> Result<(), ReplyError> {
    if name.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err(ReplyError::msg(
            "ERR Client names cannot contain spaces, newlines or special characters.",
        ));
    }
    Ok(())
}

fn client_id(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    ctx.out.integer(ctx.client.id as i64);
    Ok(())
}

fn client_setname(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let name = ctx.argv[2].clone();
    validate_client_name(&name)?;
    ctx.client.name = if name.is_empty() { None } else { Some(name) };
    ctx.out.ok();
    Ok(())
}

fn client_getname(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    match &ctx.client.name {
        Some(n) => ctx.out.bulk(n),
        None => ctx.out.null(),
    }
    Ok(())
}

fn client_setinfo(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let attr = &ctx.argv[2];
    let value = ctx.argv[3].clone();
    if value.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err(ReplyError::owned(format!(
            "ERR {} cannot contain spaces, newlines or special characters.",
            String::from_utf8_lossy(attr).to_ascii_lowercase()
        )));
    }
    let value = if value.is_empty() { None } else { Some(value) };
    if is(attr, "LIB-NAME") {
        ctx.client.lib_name = value;
    } else if is(attr, "LIB-VER") {
        ctx.client.lib_ver = value;
    } else {
        return Err(ReplyError::owned(format!(
            "ERR Unrecognized option '{}'",
            String::from_utf8_lossy(attr)
        )));
    }
    ctx.out.ok();
    Ok(())
}

fn client_list(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let mut only_ids: Option<Vec<u64>> = None;
    let mut only_type = None;
    let mut i = 2;
    while i < argv.len() {
        if is(&argv[i], "TYPE") && i + 1 < argv.len() {
            only_type = Some(client_type_by_name(&argv[i + 1])?);
            i += 2;
        } else if is(&argv[i], "ID") && i + 1 < argv.len() {
            let mut ids = only_ids.take().unwrap_or_default();
            for a in &argv[i + 1..] {
                let id = parse_i64(a)
                    .ok()
                    .filter(|v| *v > 0)
                    .ok_or(ReplyError::msg("ERR Invalid client ID"))?;
                ids.push(id as u64);
            }
            only_ids = Some(ids);
            i = argv.len();
        } else {
            return Err(ReplyError::Syntax);
        }
    }
    let now = ctx.now_ms;
    let fields = ctx.core.client_info_fields();
    let wanted = |c: &crate::core::client::Client| only_type.is_none_or(|t| client_type(c) == t);
    let mut lines: Vec<(u64, String)> = ctx
        .core
        .clients
        .values()
        .filter(|c| wanted(c))
        .map(|c| (c.id, c.info_line(now, fields)))
        .collect();
    if wanted(ctx.client) {
        lines.push((ctx.client.id, ctx.client.info_line(now, fields)));
    }
    lines.sort_by_key(|(id, _)| *id);
    let mut text = String::new();
    for (id, line) in lines {
        if only_ids.as_ref().is_none_or(|ids| ids.contains(&id)) {
            text.push_str(&line);
            text.push('\n');
        }
    }
    ctx.out.verbatim(text.as_bytes());
    Ok(())
}

/// Redis's client classes (`getClientType`): `master` for the link to this server's
/// primary, `replica` for a replica's connection, `pubsub` while subscribed to
/// anything, else `normal` (MONITOR clients included).
fn client_type(c: &crate::core::client::Client) -> &'static str {
    use crate::core::client::ClientRepl;
    match c.repl {
        ClientRepl::Master => "master",
        ClientRepl::Replica => "replica",
        ClientRepl::Normal if c.in_pubsub() => "pubsub",
        ClientRepl::Normal => "normal",
    }
}

/// A `TYPE` argument of CLIENT LIST / CLIENT KILL (Redis's `getClientTypeByName`).
fn client_type_by_name(name: &[u8]) -> Result<&'static str, ReplyError> {
    for t in ["normal", "pubsub", "master"] {
        if is(name, t) {
            return Ok(t);
        }
    }
    if is(name, "replica") || is(name, "slave") {
        return Ok("replica");
    }
    Err(ReplyError::owned(format!(
        "ERR Unknown client type '{}'",
        String::from_utf8_lossy(name)
    )))
}

fn client_info(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let fields = ctx.core.client_info_fields();
    let mut line = ctx.client.info_line(ctx.now_ms, fields);
    line.push('\n');
    ctx.out.verbatim(line.as_bytes());
    Ok(())
}

fn client_kill(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    // Old form: CLIENT KILL ip:port → +OK or error.
    if argv.len() == 3 {
        let addr = String::from_utf8_lossy(&argv[2]).into_owned();
        let killed = kill_matching(ctx, |c| c.addr == addr, true);
        if killed == 0 {
            return Err(ReplyError::msg("ERR No such client"));
        }
        ctx.out.ok();
        return Ok(());
    }
    let mut id_filter = None;
    let mut addr_filter = None;
    let mut laddr_filter = None;
    let mut user_filter: Option<bytes::Bytes> = None;
    let mut type_filter = None;
    let mut skipme = true;
    let mut i = 2;
    while i + 1 < argv.len() {
        let v = &argv[i + 1];
        if is(&argv[i], "ID") {
            let id = parse_i64(v)
                .ok()
                .filter(|x| *x > 0)
                .ok_or(ReplyError::msg("ERR client-id should be greater than 0"))?;
            id_filter = Some(id as u64);
        } else if is(&argv[i], "ADDR") {
            addr_filter = Some(String::from_utf8_lossy(v).into_owned());
        } else if is(&argv[i], "LADDR") {
            laddr_filter = Some(String::from_utf8_lossy(v).into_owned());
        } else if is(&argv[i], "SKIPME") {
            skipme = if is(v, "yes") {
                true
            } else if is(v, "no") {
                false
            } else {
                return Err(ReplyError::Syntax);
            };
        } else if is(&argv[i], "USER") {
            if ctx.core.acl.get(v).is_none() {
                return Err(ReplyError::owned(format!(
                    "ERR No such user '{}'",
                    crate::error::lossy(v)
                )));
            }
            user_filter = Some(v.clone());
        } else if is(&argv[i], "TYPE") {
            type_filter = Some(client_type_by_name(v)?);
        } else if is(&argv[i], "MAXAGE") {
            // Accepted; it matches every client.
        } else {
            return Err(ReplyError::Syntax);
        }
        i += 2;
    }
    if i != argv.len() {
        return Err(ReplyError::Syntax);
    }
    let killed = kill_matching(
        ctx,
        |c| {
            id_filter.is_none_or(|id| c.id == id)
                && addr_filter.as_ref().is_none_or(|a| &c.addr == a)
                && laddr_filter.as_ref().is_none_or(|a| &c.laddr == a)
                && user_filter.as_ref().is_none_or(|u| c.username() == u)
                && type_filter.is_none_or(|t| client_type(c) == t)
        },
        skipme,
    );
    ctx.out.integer(killed as i64);
    Ok(())
}

/// Closes every client matching `pred` (the caller too unless `skipme`); returns the
/// number closed.
fn kill_matching(
    ctx: &mut Ctx<'_>,
    pred: impl Fn(&crate::core::client::Client) -> bool,
    skipme: bool,
) -> usize {
    let doomed: Vec<u64> = ctx
        .core
        .clients
        .values()
        .filter(|c| pred(c))
        .map(|c| c.id)
        .collect();
    let mut n = doomed.len();
    for id in doomed {
        if let Some(mut c) = ctx.core.clients.remove(&id) {
            // Out of Pub/Sub at once, as Redis frees the client: the next PUBLISH does
            // not count it.
            ctx.core.unsubscribe_everything(&mut c);
            c.send(ClientMsg::Close, Default::default());
            ctx.core.clients.insert(id, c);
        }
    }
    if !skipme && pred(ctx.client) {
        ctx.client.close_after_reply = true;
        n += 1;
    }
    n
}

fn client_unblock(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let id = parse_i64(&argv[2])?;
    let with_error = match argv.len() {
        3 => false,
        4 if is(&argv[3], "TIMEOUT") => false,
        4 if is(&argv[3], "ERROR") => true,
        4 => {
            return Err(ReplyError::msg(
                "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            ));
        }
        _ => return Err(ReplyError::Syntax),
    };
    let done = id > 0 && ctx.core.unblock_client(id as u64, with_error);
    ctx.out.integer(i64::from(done));
    Ok(())
}

/// CLIENT PAUSE timeout [WRITE | ALL]: holds the commands of other clients (every
/// command, or those that may write) for `timeout` milliseconds (`core/pause.rs`).
fn client_pause(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    use crate::core::pause::PauseKind;
    let argv = ctx.argv;
    if argv.len() > 4 {
        return Err(ReplyError::SubcommandSyntax {
            sub: String::from_utf8_lossy(&argv[1]).into_owned(),
            container: "CLIENT".into(),
        });
    }
    let kind = match argv.get(3) {
        None => PauseKind::All,
        Some(a) if is(a, "WRITE") => PauseKind::Write,
        Some(a) if is(a, "ALL") => PauseKind::All,
        Some(_) => {
            return Err(ReplyError::msg(
                "ERR CLIENT PAUSE mode must be WRITE or ALL",
            ));
        }
    };
    let timeout = crate::stream::id::string2ll(&argv[2]).ok_or(ReplyError::msg(
        "ERR timeout is not an integer or out of range",
    ))?;
    if timeout < 0 {
        return Err(ReplyError::msg("ERR timeout is negative"));
    }
    // Redis 7.2's check (7.0 let the sum overflow into a deadline in the past).
    let now = ctx.now_ms as i64;
    if timeout > i64::MAX - now {
        return Err(ReplyError::msg("ERR timeout is out of range"));
    }
    // A zero timeout ends at once (Redis keeps 0 as the deadline, already past).
    let end_ms = if timeout > 0 {
        (now + timeout) as u64
    } else {
        0
    };
    ctx.core.pause_clients(kind, end_ms);
    ctx.out.ok();
    Ok(())
}

/// CLIENT UNPAUSE: ends CLIENT PAUSE; the held clients run.
fn client_unpause(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    ctx.core.unpause_clients();
    ctx.out.ok();
    Ok(())
}

/// CLIENT REPLY ON | OFF | SKIP: whether this connection gets replies (`Core::execute`
/// drops them). ON answers `+OK`; OFF and SKIP answer nothing.
fn client_reply(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    use crate::core::client::ReplyMode;
    let arg = &ctx.argv[2];
    if is(arg, "ON") {
        ctx.client.reply_mode = ReplyMode::On;
        ctx.out.ok();
    } else if is(arg, "OFF") {
        ctx.client.reply_mode = ReplyMode::Off;
    } else if is(arg, "SKIP") {
        if ctx.client.reply_mode != ReplyMode::Off {
            ctx.client.reply_mode = ReplyMode::SkipNext;
        }
    } else {
        return Err(ReplyError::Syntax);
    }
    Ok(())
}

fn on_off(arg: &[u8]) -> Result<bool, ReplyError> {
    if is(arg, "on") {
        Ok(true)
    } else if is(arg, "off") {
        Ok(false)
    } else {
        Err(ReplyError::Syntax)
    }
}

fn client_no_evict(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    ctx.client.no_evict = on_off(&ctx.argv[2])?;
    ctx.out.ok();
    Ok(())
}

fn client_no_touch(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    ctx.client.no_touch = on_off(&ctx.argv[2])?;
    ctx.out.ok();
    Ok(())
}

fn client_help(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    super::reply_help(
        ctx,
        "CLIENT",
        &[
            "CACHING (YES|NO)",
            "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
            "GETREDIR",
            "    Return the client ID we are redirecting to when tracking is enabled.",
            "GETNAME",
            "    Return the name of the current connection.",
            "ID",
            "    Return the ID of the current connection.",
            "INFO",
            "    Return information about the current client connection.",
            "KILL <ip:port>",
            "    Kill connection made from <ip:port>.",
            "KILL <option> <value> [<option> <value> [...]]",
            "    Kill connections. Options are: ID <client-id>, ADDR <ip:port>, LADDR <ip:port>, SKIPME (YES|NO).",
            "LIST [TYPE normal|pubsub] [ID <id> [<id> ...]]",
            "    Return information about client connections.",
            "NO-EVICT (ON|OFF)",
            "    Protect current client connection from eviction.",
            "NO-TOUCH (ON|OFF)",
            "    Will not touch LRU/LFU stats when this mode is on.",
            "PAUSE <timeout> [WRITE|ALL]",
            "    Suspend all, or just write, clients for <timeout> milliseconds.",
            "REPLY (ON|OFF|SKIP)",
            "    Control the replies sent to the current connection.",
            "SETINFO <option> <value>",
            "    Set client meta attr. Options are: LIB-NAME, LIB-VER.",
            "SETNAME <name>",
            "    Assign the name <name> to the current connection.",
            "UNBLOCK <clientid> [TIMEOUT|ERROR]",
            "    Unblock the specified blocked client.",
            "UNPAUSE",
            "    Stop the current client pause, resuming traffic.",
            "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
            "         [OPTIN] [OPTOUT] [NOLOOP]",
            "    Control server assisted client side caching.",
            "TRACKINGINFO",
            "    Report tracking status for the current connection.",
        ],
    );
    Ok(())
}
