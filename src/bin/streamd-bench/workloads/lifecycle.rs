//! Lifecycle workloads (docs/beyond-redis.md): what streamd does in the server against what
//! a Redis user does around it.
//!
//! - `lifecycle/xadd-maxage-*`: a producer XADDs to a stream that keeps its last
//!   [`AGE_MS`] ms. On streamd the stream has `XCFGSET MAXAGE` and the producer sends plain
//!   `XADD s * ...`; on Redis the same producer sends `XADD s MINID <now - age> * ...`
//!   itself (exact MINID, the same trim). The stream is filled for one age first, so the
//!   measured phase trims all along.
//! - `lifecycle/sweep-1m`: a 1M-entry stream whose whole content expires at once. On
//!   streamd `XCFGSET MAXAGE` makes the background sweep remove it, a bounded amount per
//!   cron tick; on Redis a cron job's `XTRIM s MINID <id>` removes it in one command. A
//!   second connection sends PING after PING meanwhile: its round trips are the latency
//!   columns (what a client sees, machine noise included). The workload also prints the
//!   server's own figure for its longest pause: INFO's `stream_lifecycle_max_tick_usec` on
//!   streamd, the XTRIM's `usec` in INFO commandstats on Redis. entries/s is entries
//!   removed per second until the stream is empty.

use std::io;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::{Ctx, Ids, load, push_bid, push_bid_trimmed};
use crate::client::{Conn, Value, info_field};
use crate::driver::{Stop, closed_loop};
use crate::measure::{Sample, ns_since};

/// How much history the `xadd-maxage` stream keeps.
pub const AGE_MS: u64 = 1000;

/// Whether the server is streamd (its INFO names a `streamd_version`).
async fn is_streamd(ctl: &mut Conn) -> io::Result<bool> {
    let info = ctl.ok(&["INFO", "server"]).await?;
    Ok(info_field(&info, "streamd_version").is_some())
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// XADD of one bid per command to `s`, which keeps [`AGE_MS`] of history: by MAXAGE on
/// streamd, by the producer's `MINID <now - age>` on Redis (module doc).
pub async fn xadd_maxage(ctx: &Ctx, clients: usize, pipeline: usize) -> io::Result<Sample> {
    let mut ctl = ctx.fresh().await?;
    let streamd = is_streamd(&mut ctl).await?;
    if streamd {
        ctl.ok(&["XADD", "s", "*", "bidder", "0", "amount", "0"])
            .await?;
        let age = AGE_MS.to_string();
        ctl.ok(&["XCFGSET", "s", "MAXAGE", &age]).await?;
    }
    let make = move |_: usize, _: u64, rng: &mut crate::measure::Rng, conn: &mut Conn| {
        if streamd {
            push_bid(conn, b"s", b"*", rng);
        } else {
            let min = now_ms().saturating_sub(AGE_MS).to_string();
            push_bid_trimmed(conn, b"s", &[&b"MINID"[..], min.as_bytes()], b"*", rng);
        }
    };
    // Fill one age of history, so the measured phase trims from its first command.
    let warm = ctx.conns(clients).await?;
    closed_loop(
        warm,
        pipeline,
        Stop::For(Duration::from_millis(AGE_MS)),
        make,
    )
    .await?;
    let conns = ctx.conns(clients).await?;
    let phase = ctx.begin(&mut ctl).await?;
    let done = closed_loop(conns, pipeline, Stop::For(ctx.timed()), make).await?;
    let m = phase.end(&mut ctl).await?;
    Ok(Sample::new(m, done.ops, done.ops, done.lat_ns))
}

/// A stream of `1M × scale` entries expires whole at once; PING round trips measure the
/// server's pauses until it is empty (module doc).
pub async fn sweep(ctx: &Ctx) -> io::Result<Sample> {
    let mut ctl = ctx.fresh().await?;
    let streamd = is_streamd(&mut ctl).await?;
    let n = ctx.n(1_000_000, 10_000);
    // IDs `1-0 .. n-0`: from 1970, so every entry is older than any MAXAGE.
    load(&mut ctl, b"s", n, Ids::Seq).await?;
    // The server's own measure of its pause: the longest lifecycle tick on streamd, the
    // XTRIM's time on Redis (INFO commandstats), both from zero.
    ctl.ok(&["CONFIG", "RESETSTAT"]).await?;
    let mut probe = ctx.conn().await?;
    let phase = ctx.begin(&mut ctl).await?;
    let start = Instant::now();
    if streamd {
        ctl.ok(&["XCFGSET", "s", "MAXAGE", "1000"]).await?;
    } else {
        // What a cron job does: one exact trim to the cutoff, which is past every entry.
        // Sent without waiting, so the probe sees the pause it causes.
        let min = (n + 1).to_string();
        ctl.push(&["XTRIM", "s", "MINID", &min]);
        ctl.flush().await?;
    }
    let mut lat = Vec::new();
    let mut pings = 0u64;
    let deadline = start + ctx.timeout;
    loop {
        let sent = Instant::now();
        probe.ok(&["PING"]).await?;
        lat.push(ns_since(sent));
        pings += 1;
        // Every 64 PINGs (and at first), ask how much is left.
        if pings % 64 == 1 && probe.value(&["XLEN", "s"]).await? == Value::Int(0) {
            break;
        }
        if Instant::now() > deadline {
            return Err(io::Error::other("the stream did not empty in time"));
        }
    }
    if !streamd {
        crate::client::check(&ctl.reply().await?)?;
    }
    let emptied = start.elapsed();
    let m = phase.end(&mut ctl).await?;
    let server_pause_us = if streamd {
        let info = ctl.ok(&["INFO", "stats"]).await?;
        info_field(&info, "stream_lifecycle_max_tick_usec").and_then(|v| v.parse::<f64>().ok())
    } else {
        let info = ctl.ok(&["INFO", "commandstats"]).await?;
        info_field(&info, "cmdstat_xtrim").and_then(|v| {
            v.split(',')
                .find_map(|kv| kv.strip_prefix("usec="))
                .and_then(|u| u.parse::<f64>().ok())
        })
    };
    let longest = lat.iter().max().copied().unwrap_or(0);
    eprint!(
        "(server pause {} ms, longest PING {:.2} ms, emptied in {:.0} ms) ",
        server_pause_us.map_or("?".into(), |u| format!("{:.2}", u / 1000.0)),
        longest as f64 / 1e6,
        emptied.as_secs_f64() * 1000.0
    );
    Ok(Sample::new(m, pings, n, lat))
}
