//! HOTKEYS START/STOP/GET/RESET/HELP (Redis 8.6): a session that tracks which keys take
//! the most CPU time and network bytes ([`crate::core::hotkeys`], filled by
//! `Core::call`).
//!
//! ```text
//! HOTKEYS START METRICS count [CPU] [NET] [COUNT k] [DURATION seconds] [SAMPLE ratio]
//!               [SLOTS count slot [slot ...]]      -> OK (error while one is active)
//! HOTKEYS STOP                                      -> OK, or nil when none is active
//! HOTKEYS GET                                       -> [ {field: value, ...} ], or nil
//! HOTKEYS RESET                                     -> OK (error while active)
//! ```
//!
//! GET answers an array holding one map (so a cluster client can concatenate the
//! answers of several nodes), its fields in this order, the bracketed ones only when
//! they apply:
//!
//! ```text
//! tracking-active, sample-ratio, selected-slots,
//! [sampled-commands-selected-slots-us], [all-commands-selected-slots-us],
//! all-commands-all-slots-us,
//! [net-bytes-sampled-commands-selected-slots], [net-bytes-all-commands-selected-slots],
//! net-bytes-all-commands-all-slots, collection-start-time-unix-ms,
//! collection-duration-ms, [total-cpu-time-user-ms, total-cpu-time-sys-ms] (CPU),
//! [total-net-bytes] (NET), [by-cpu-time-us] (CPU), [by-net-bytes] (NET)
//! ```
//!
//! `selected-slots` lists the SLOTS ranges, or without SLOTS the node's own slots (all of
//! them outside cluster mode) as `[slot]` or `[start, end]` arrays. The "sampled" fields
//! need SAMPLE above 1, the "selected" ones SLOTS.

use super::SERVER;
use super::{CommandSpec, flags::*};
use crate::cluster::slots::CLUSTER_SLOTS;
use crate::core::Ctx;
use crate::core::hotkeys::{MAX_COUNT, MAX_DURATION_SECS, Params, Session, process_cpu_ms};
use crate::error::ReplyError;

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[CommandSpec::container(
    "hotkeys",
    "server",
    "A container for hotkeys tracking commands.",
    "8.6.0",
    SUBCOMMANDS,
)];

const SUBCOMMANDS: &[CommandSpec] = &[
    SERVER.row(
        "hotkeys|get",
        2,
        ADMIN | NOSCRIPT,
        "Returns lists of top K hotkeys depending on metrics chosen in HOTKEYS START command.",
        "8.6.0",
        hotkeys_get,
    ),
    SERVER.row(
        "hotkeys|help",
        2,
        ADMIN | NOSCRIPT,
        "Returns helpful text about HOTKEYS commands and parameters.",
        "8.6.0",
        hotkeys_help,
    ),
    SERVER.row(
        "hotkeys|reset",
        2,
        ADMIN | NOSCRIPT,
        "Release the resources used for hotkey tracking.",
        "8.6.0",
        hotkeys_reset,
    ),
    SERVER.row(
        "hotkeys|start",
        -2,
        ADMIN | NOSCRIPT,
        "Starts hotkeys tracking.",
        "8.6.0",
        hotkeys_start,
    ),
    SERVER.row(
        "hotkeys|stop",
        2,
        ADMIN | NOSCRIPT,
        "Stops hotkeys tracking.",
        "8.6.0",
        hotkeys_stop,
    ),
];

/// Redis's HOTKEYS HELP lines (before the generic HELP ones).
const HELP: &[&str] = &[
    "START <METRICS count [CPU] [NET]> [COUNT k] [DURATION duration] [SAMPLE ratio] [SLOTS count slot...]",
    "    Starts hotkeys tracking with specified metrics.",
    "    * METRICS count [CPU] [NET]",
    "        Specify count of metrics and choose amongst:",
    "        - CPU: Track hotkeys by CPU time percentage",
    "        - NET: Track hotkeys by network bytes percentage",
    "    * COUNT k",
    "        Specifies the value of K for the top-K hotkeys tracking. Default: 10",
    "    * DURATION duration",
    "        Specifies tracking duration in seconds. 0 means tracking will continue until manually stopped. Default: 0",
    "    * SAMPLE ratio",
    "        Keys are tracked with probability 1/ratio. Default: 1 (tracks every key)",
    "    * SLOTS count slot...",
    "        Specify which slots to track keys from. Only available in cluster mode. Default: empty (track all slots)",
    "STOP",
    "    Stop hotkeys tracking. Results are still available via GET",
    "GET",
    "    Get results from hotkeys tracking.",
    "RESET",
    "    Reset memory used for hotkey tracking. Tracking must have been stopped.",
    "    Results will no longer be available after this command.",
];

/// An integer argument in `lo..=hi`, or `msg` (Redis's `getRangeLongFromObjectOrReply`
/// with a message: the same text for a non-number).
fn ranged(arg: &[u8], lo: i64, hi: i64, msg: &'static str) -> Result<i64, ReplyError> {
    crate::stream::id::string2ll(arg)
        .filter(|n| (lo..=hi).contains(n))
        .ok_or(ReplyError::msg(msg))
}

/// The session, with an elapsed DURATION applied.
fn session<'a>(ctx: &'a mut Ctx<'_>) -> Option<&'a mut Session> {
    let now = ctx.now_ms;
    let s = ctx.core.hotkeys.as_deref_mut()?;
    s.tick(now);
    Some(s)
}

/// HOTKEYS START (see the module doc).
fn hotkeys_start(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    if session(ctx).is_some_and(|s| s.active) {
        return Err(ReplyError::msg(
            "ERR hotkey tracking session already in progress",
        ));
    }
    let argv = ctx.argv;
    if argv.len() < 4 || !argv[2].eq_ignore_ascii_case(b"METRICS") {
        return Err(ReplyError::msg("ERR METRICS parameter is required"));
    }
    let wanted = ranged(&argv[3], 1, 2, "ERR METRICS count must be > 0 and <= 2")? as usize;
    let (mut cpu, mut net) = (false, false);
    let mut j = 4;
    let mut parsed = 0;
    // Redis counts `count` words after METRICS; only CPU and NET mean something.
    while j < argv.len() && parsed < wanted {
        let w = &argv[j];
        if w.eq_ignore_ascii_case(b"CPU") {
            if cpu {
                return Err(ReplyError::msg("ERR METRICS CPU defined more than once!"));
            }
            cpu = true;
        } else if w.eq_ignore_ascii_case(b"NET") {
            if net {
                return Err(ReplyError::msg("ERR METRICS NET defined more than once!"));
            }
            net = true;
        }
        parsed += 1;
        j += 1;
    }
    if parsed != wanted {
        return Err(ReplyError::msg(
            "ERR METRICS count does not match number of metric types provided",
        ));
    }
    if !cpu && !net {
        return Err(ReplyError::msg(
            "ERR METRICS no valid metrics passed. Supported: CPU|NET",
        ));
    }
    let mut params = Params {
        cpu,
        net,
        count: 10,
        duration_ms: 0,
        sample_ratio: 1,
        slots: None,
    };
    while j < argv.len() {
        let w = &argv[j];
        let more = j + 1 < argv.len();
        if more && w.eq_ignore_ascii_case(b"COUNT") {
            let k = ranged(
                &argv[j + 1],
                1,
                MAX_COUNT as i64,
                "ERR COUNT must be between 1 and 64",
            )?;
            params.count = k as usize;
            j += 2;
        } else if more && w.eq_ignore_ascii_case(b"DURATION") {
            let secs = ranged(
                &argv[j + 1],
                1,
                MAX_DURATION_SECS as i64,
                "ERR DURATION must be between 1 and 1000000",
            )?;
            params.duration_ms = secs as u64 * 1000;
            j += 2;
        } else if more && w.eq_ignore_ascii_case(b"SAMPLE") {
            let ratio = ranged(
                &argv[j + 1],
                1,
                i64::from(i32::MAX),
                "ERR SAMPLE ratio must be positive",
            )?;
            params.sample_ratio = ratio as u64;
            j += 2;
        } else if more && w.eq_ignore_ascii_case(b"SLOTS") {
            if ctx.core.cluster.is_none() {
                return Err(ReplyError::msg(
                    "ERR SLOTS parameter cannot be used in non-cluster mode",
                ));
            }
            if params.slots.is_some() {
                return Err(ReplyError::msg("ERR SLOTS parameter already specified"));
            }
            let n = ranged(
                &argv[j + 1],
                1,
                CLUSTER_SLOTS as i64,
                "ERR SLOTS count must be between 1 and 16384",
            )? as usize;
            if j + 1 + n >= argv.len() {
                return Err(ReplyError::msg("ERR not enough slot numbers provided"));
            }
            let mut slots = Vec::with_capacity(n);
            for arg in &argv[j + 2..j + 2 + n] {
                let slot = crate::stream::id::string2ll(arg)
                    .filter(|&s| (0..CLUSTER_SLOTS as i64).contains(&s))
                    .map(|s| s as u16)
                    .ok_or(ReplyError::msg("ERR Invalid or out of range slot"))?;
                let mine = ctx
                    .core
                    .cluster
                    .as_deref()
                    .is_some_and(|st| st.owner.get(usize::from(slot)) == Some(0));
                if !mine {
                    return Err(ReplyError::owned(format!(
                        "ERR slot {slot} not handled by this node"
                    )));
                }
                slots.push(slot);
            }
            slots.sort_unstable();
            if slots.windows(2).any(|w| w[0] == w[1]) {
                return Err(ReplyError::msg("ERR duplicate slot number"));
            }
            params.slots = Some(ranges(&slots));
            j += 2 + n;
        } else {
            return Err(ReplyError::Syntax);
        }
    }
    ctx.core.hotkeys = Some(Box::new(Session::start(params, ctx.now_ms)));
    ctx.out.ok();
    Ok(())
}

/// Sorted distinct slots as inclusive ranges of consecutive slots.
fn ranges(sorted: &[u16]) -> Vec<(u16, u16)> {
    let mut out: Vec<(u16, u16)> = Vec::new();
    for &s in sorted {
        match out.last_mut() {
            Some((_, end)) if u32::from(*end) + 1 == u32::from(s) => *end = s,
            _ => out.push((s, s)),
        }
    }
    out
}

/// HOTKEYS STOP: OK, or nil when no session is active.
fn hotkeys_stop(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let now = ctx.now_ms;
    match session(ctx) {
        Some(s) if s.active => {
            s.stop(now);
            ctx.out.ok();
        }
        _ => ctx.out.null(),
    }
    Ok(())
}

/// HOTKEYS RESET: drops the session; an error while it is active.
fn hotkeys_reset(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    if session(ctx).is_some_and(|s| s.active) {
        return Err(ReplyError::msg(
            "ERR hotkey tracking session in progress, stop tracking first",
        ));
    }
    ctx.core.hotkeys = None;
    ctx.out.ok();
    Ok(())
}

/// HOTKEYS HELP.
fn hotkeys_help(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    super::reply_help(ctx, "HOTKEYS", HELP);
    Ok(())
}

/// HOTKEYS GET (see the module doc): nil without a session.
fn hotkeys_get(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let now = ctx.now_ms;
    let Some(s) = session(ctx).map(|s| s.clone()) else {
        ctx.out.null();
        return Ok(());
    };
    let own = own_slot_ranges(ctx);
    let p = &s.params;
    let sampling = p.sample_ratio > 1;
    let selected = p.slots.is_some();
    let mut fields = 7;
    fields += usize::from(sampling && selected) * 2 + usize::from(selected) * 2;
    fields += usize::from(p.cpu) * 3 + usize::from(p.net) * 2;
    let out = &mut *ctx.out;
    out.array(1);
    out.map(fields);
    let int = |out: &mut crate::resp::writer::RespWriter, name: &str, n: u64| {
        out.bulk(name.as_bytes());
        out.integer(i64::try_from(n).unwrap_or(i64::MAX));
    };
    int(out, "tracking-active", u64::from(s.active));
    int(out, "sample-ratio", p.sample_ratio);
    out.bulk(b"selected-slots");
    let shown = p.slots.as_deref().unwrap_or(&own);
    out.array(shown.len());
    for &(a, b) in shown {
        if a == b {
            out.array(1);
            out.integer(i64::from(a));
        } else {
            out.array(2);
            out.integer(i64::from(a));
            out.integer(i64::from(b));
        }
    }
    if sampling && selected {
        int(out, "sampled-commands-selected-slots-us", s.usec_sampled);
    }
    if selected {
        int(out, "all-commands-selected-slots-us", s.usec_selected);
    }
    int(out, "all-commands-all-slots-us", s.usec_all);
    if sampling && selected {
        int(
            out,
            "net-bytes-sampled-commands-selected-slots",
            s.net_sampled,
        );
    }
    if selected {
        int(out, "net-bytes-all-commands-selected-slots", s.net_selected);
    }
    int(out, "net-bytes-all-commands-all-slots", s.net_all);
    int(out, "collection-start-time-unix-ms", s.start_ms);
    int(out, "collection-duration-ms", s.duration_ms(now));
    if p.cpu {
        let (user, sys) = process_cpu_ms();
        int(
            out,
            "total-cpu-time-user-ms",
            user.saturating_sub(s.cpu_at_start.0),
        );
        int(
            out,
            "total-cpu-time-sys-ms",
            sys.saturating_sub(s.cpu_at_start.1),
        );
    }
    if let Some(t) = s.by_net.as_ref() {
        int(out, "total-net-bytes", t.total);
    }
    for (name, table) in [("by-cpu-time-us", &s.by_cpu), ("by-net-bytes", &s.by_net)] {
        let Some(t) = table else { continue };
        let top = t.top(p.count);
        out.bulk(name.as_bytes());
        out.array(top.len() * 2);
        for (key, n) in top {
            out.bulk(&key);
            out.integer(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }
    Ok(())
}

/// This node's slots as ranges (every slot outside cluster mode).
fn own_slot_ranges(ctx: &Ctx<'_>) -> Vec<(u16, u16)> {
    let Some(st) = ctx.core.cluster.as_deref() else {
        return vec![(0, CLUSTER_SLOTS as u16 - 1)];
    };
    st.slots_of(0).ranges().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_fold_into_ranges() {
        assert_eq!(ranges(&[1, 2, 3, 7, 9, 10]), vec![(1, 3), (7, 7), (9, 10)]);
        assert!(ranges(&[]).is_empty());
    }
}
