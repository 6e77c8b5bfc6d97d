//! CLIENT TRACKING / CACHING / GETREDIR / TRACKINGINFO: the commands of client-side
//! caching (the rows are CLIENT's, in `connection.rs`; the state and the invalidations
//! are the core's, `core/tracking.rs`).

use super::is;
use crate::core::Ctx;
use crate::core::tracking::TrackingClient;
use crate::error::ReplyError;
use bytes::Bytes;

/// `CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX p]... [OPTIN] [OPTOUT]
/// [NOLOOP]`, with Redis 7.0's checks in its order.
pub(super) fn client_tracking(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let argv = ctx.argv;
    let mut new = TrackingClient::default();
    let mut j = 3;
    while j < argv.len() {
        let more = j + 1 < argv.len();
        let a = &argv[j];
        if is(a, "REDIRECT") && more {
            j += 1;
            if new.redirect != 0 {
                return Err(ReplyError::msg(
                    "ERR A client can only redirect to a single other client",
                ));
            }
            let id = super::parse_i64(&argv[j])?;
            let exists = id > 0
                && (id as u64 == ctx.client.id || ctx.core.clients.contains_key(&(id as u64)));
            if !exists {
                return Err(ReplyError::msg(
                    "ERR The client ID you want redirect to does not exist",
                ));
            }
            new.redirect = id as u64;
        } else if is(a, "BCAST") {
            new.bcast = true;
        } else if is(a, "OPTIN") {
            new.optin = true;
        } else if is(a, "OPTOUT") {
            new.optout = true;
        } else if is(a, "NOLOOP") {
            new.noloop = true;
        } else if is(a, "PREFIX") && more {
            j += 1;
            new.prefixes.push(argv[j].clone());
        } else {
            return Err(ReplyError::Syntax);
        }
        j += 1;
    }
    let id = ctx.client.id;
    if is(&argv[2], "OFF") {
        ctx.core.disable_tracking(id);
        ctx.out.ok();
        return Ok(());
    }
    if !is(&argv[2], "ON") {
        return Err(ReplyError::Syntax);
    }
    if !new.bcast && !new.prefixes.is_empty() {
        return Err(ReplyError::msg(
            "ERR PREFIX option requires BCAST mode to be enabled",
        ));
    }
    let old = ctx.core.tracking.clients.get(&id).cloned();
    if let Some(old) = &old
        && old.bcast != new.bcast
    {
        return Err(ReplyError::msg(
            "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.",
        ));
    }
    if new.bcast && (new.optin || new.optout) {
        return Err(ReplyError::msg(
            "ERR OPTIN and OPTOUT are not compatible with BCAST",
        ));
    }
    if new.optin && new.optout {
        return Err(ReplyError::msg(
            "ERR You can't specify both OPTIN mode and OPTOUT mode",
        ));
    }
    if let Some(old) = &old
        && ((new.optin && old.optout) || (new.optout && old.optin))
    {
        return Err(ReplyError::msg(
            "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.",
        ));
    }
    if new.bcast {
        check_prefix_collisions(ctx, &new.prefixes)?;
    }
    ctx.core.enable_tracking(id, new);
    ctx.out.ok();
    Ok(())
}

/// Redis's `checkPrefixCollisionsOrReply`: no new prefix may be a prefix of one the
/// client has, or of another new one (or the other way round).
fn check_prefix_collisions(ctx: &Ctx<'_>, prefixes: &[Bytes]) -> Result<(), ReplyError> {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    for (i, p) in prefixes.iter().enumerate() {
        if let Some(existing) = ctx.core.tracking.overlapping(ctx.client.id, p) {
            return Err(ReplyError::owned(format!(
                "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                text(p),
                text(existing)
            )));
        }
        for q in &prefixes[i + 1..] {
            if p.starts_with(q) || q.starts_with(p) {
                return Err(ReplyError::owned(format!(
                    "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                    text(p),
                    text(q)
                )));
            }
        }
    }
    Ok(())
}

/// CLIENT CACHING YES|NO: whether the next command's keys are tracked (OPTIN / OPTOUT).
pub(super) fn client_caching(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let arg = &ctx.argv[2];
    let Some(t) = ctx.core.tracking.clients.get_mut(&ctx.client.id) else {
        return Err(ReplyError::msg(
            "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled",
        ));
    };
    if is(arg, "YES") {
        if !t.optin {
            return Err(ReplyError::msg(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            ));
        }
    } else if is(arg, "NO") {
        if !t.optout {
            return Err(ReplyError::msg(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            ));
        }
    } else {
        return Err(ReplyError::Syntax);
    }
    t.caching = true;
    ctx.out.ok();
    Ok(())
}

/// CLIENT GETREDIR: the redirection (0 for none), -1 without tracking.
pub(super) fn client_getredir(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let redirect = match ctx.core.tracking.clients.get(&ctx.client.id) {
        Some(t) => t.redirect as i64,
        None => -1,
    };
    ctx.out.integer(redirect);
    Ok(())
}

/// CLIENT TRACKINGINFO: `{flags: [...], redirect: id, prefixes: [...]}`.
pub(super) fn client_trackinginfo(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let t = ctx.core.tracking.clients.get(&ctx.client.id).cloned();
    let out = &mut *ctx.out;
    out.map(3);
    out.bulk(b"flags");
    let mut flags: Vec<&[u8]> = Vec::new();
    match &t {
        None => flags.push(b"off"),
        Some(t) => {
            flags.push(b"on");
            if t.bcast {
                flags.push(b"bcast");
            }
            if t.optin {
                flags.push(b"optin");
                if t.caching {
                    flags.push(b"caching-yes");
                }
            }
            if t.optout {
                flags.push(b"optout");
                if t.caching {
                    flags.push(b"caching-no");
                }
            }
            if t.noloop {
                flags.push(b"noloop");
            }
            if t.broken_redirect {
                flags.push(b"broken_redirect");
            }
        }
    }
    out.set(flags.len());
    for f in flags {
        out.bulk(f);
    }
    out.bulk(b"redirect");
    out.integer(t.as_ref().map_or(-1, |t| t.redirect as i64));
    out.bulk(b"prefixes");
    let mut prefixes: Vec<Bytes> = t.map(|t| t.prefixes).unwrap_or_default();
    prefixes.sort();
    out.array(prefixes.len());
    for p in &prefixes {
        out.bulk(p);
    }
    Ok(())
}
