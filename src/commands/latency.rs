//! LATENCY LATEST/HISTORY/RESET/GRAPH/DOCTOR/HISTOGRAM/HELP: the latency monitor's
//! events and the per-command histograms, both kept by [`crate::core::latency`].
//!
//! Reply shapes follow Redis 7.0: LATEST is an array of `[event, time, latest ms, max ms]`,
//! HISTORY an array of `[time, ms]`, HISTOGRAM a map of command → `{calls,
//! histogram_usec: {bucket µs: cumulative calls}}`, GRAPH and DOCTOR verbatim text.

use super::SERVER;
use super::{CommandSpec, flags::*};
use crate::core::latency::{LatencyMonitor, TimeSeries};
use crate::core::{Ctx, unix_ms};
use crate::error::ReplyError;
use std::fmt::Write as _;

const MONITOR: u32 = ADMIN | NOSCRIPT | LOADING | STALE;

/// This family's rows of the command table.
pub const COMMANDS: &[CommandSpec] = &[CommandSpec::container(
    "latency",
    "server",
    "A container for latency diagnostics commands.",
    "2.8.13",
    SUBCOMMANDS,
)];

const SUBCOMMANDS: &[CommandSpec] = &[
    SERVER.row(
        "latency|doctor",
        2,
        MONITOR,
        "Returns a human-readable latency analysis report.",
        "2.8.13",
        latency_doctor,
    ),
    SERVER.row(
        "latency|graph",
        3,
        MONITOR,
        "Returns a latency graph for an event.",
        "2.8.13",
        latency_graph,
    ),
    SERVER.row(
        "latency|history",
        3,
        MONITOR,
        "Returns timestamp-latency samples for an event.",
        "2.8.13",
        latency_history,
    ),
    SERVER.row(
        "latency|latest",
        2,
        MONITOR,
        "Returns the latest latency samples for all events.",
        "2.8.13",
        latency_latest,
    ),
    SERVER.row(
        "latency|reset",
        -2,
        MONITOR,
        "Resets the latency data for one or more events.",
        "2.8.13",
        latency_reset,
    ),
    CommandSpec {
        since: "7.0.0",
        ..SERVER.row(
            "latency|histogram",
            -2,
            MONITOR,
            "Returns the cumulative distribution of latencies of a subset or all commands.",
            "2.8.13",
            latency_histogram,
        )
    },
    SERVER.row(
        "latency|help",
        2,
        LOADING | STALE,
        "Returns helpful text about the different subcommands.",
        "2.8.13",
        latency_help,
    ),
];

fn latency_latest(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let events = ctx.core.latency.events();
    ctx.out.array(events.len());
    for (name, ts) in events {
        let last = ts.latest();
        ctx.out.array(4);
        ctx.out.bulk(name.as_bytes());
        ctx.out.integer(last.time as i64);
        ctx.out.integer(last.latency as i64);
        ctx.out.integer(ts.max as i64);
    }
    Ok(())
}

fn latency_history(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let Some((_, ts)) = ctx.core.latency.event(&ctx.argv[2]) else {
        ctx.out.array(0);
        return Ok(());
    };
    let samples: Vec<_> = ts.samples().collect();
    ctx.out.array(samples.len());
    for s in samples {
        ctx.out.array(2);
        ctx.out.integer(s.time as i64);
        ctx.out.integer(s.latency as i64);
    }
    Ok(())
}

fn latency_reset(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let resets = if ctx.argv.len() == 2 {
        ctx.core.latency.reset(None)
    } else {
        ctx.argv[2..]
            .iter()
            .map(|e| ctx.core.latency.reset(Some(e)))
            .sum()
    };
    ctx.out.integer(resets as i64);
    Ok(())
}

fn latency_graph(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let Some((name, ts)) = ctx.core.latency.event(&ctx.argv[2]) else {
        return Err(ReplyError::owned(format!(
            "ERR No samples available for event '{}'",
            String::from_utf8_lossy(&ctx.argv[2])
        )));
    };
    let graph = graph(name, ts, unix_ms() / 1000);
    ctx.out.verbatim(graph.as_bytes());
    Ok(())
}

/// Width of LATENCY GRAPH (latency.c `LATENCY_GRAPH_COLS`).
const GRAPH_COLS: usize = 80;
/// Rows of the bars.
const GRAPH_ROWS: u64 = 4;

/// The text of LATENCY GRAPH: Redis's header, then one column per sample (oldest left,
/// at most [`GRAPH_COLS`]) as a bar of `#` scaled between the lowest and the highest
/// sample (the lowest drawn as `_`), then each column's age (`12s`, `3m`, `2h`, `1d`)
/// written downwards.
fn graph(name: &str, ts: &TimeSeries, now_secs: u64) -> String {
    let samples: Vec<_> = ts.samples().collect();
    let samples = &samples[samples.len().saturating_sub(GRAPH_COLS)..];
    let min = samples.iter().map(|s| s.latency).min().unwrap_or(0);
    let max = samples.iter().map(|s| s.latency).max().unwrap_or(0);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{name} - high {max} ms, low {min} ms (all time high {} ms)",
        ts.max
    );
    out.push_str(&"-".repeat(GRAPH_COLS));
    out.push('\n');
    let heights: Vec<u64> = samples
        .iter()
        .map(|s| {
            if max == min {
                GRAPH_ROWS
            } else {
                (s.latency - min) * GRAPH_ROWS / (max - min)
            }
        })
        .collect();
    for row in (1..=GRAPH_ROWS).rev() {
        let line: String = heights
            .iter()
            .map(|&h| if h >= row { '#' } else { ' ' })
            .collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let base: String = heights
        .iter()
        .map(|&h| if h == 0 { '_' } else { '#' })
        .collect();
    out.push_str(&base);
    out.push('\n');
    let labels: Vec<Vec<char>> = samples
        .iter()
        .map(|s| age_label(now_secs.saturating_sub(s.time)).chars().collect())
        .collect();
    let depth = labels.iter().map(|l| l.len()).max().unwrap_or(0);
    for i in 0..depth {
        let line: String = labels
            .iter()
            .map(|l| l.get(i).copied().unwrap_or(' '))
            .collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// How long ago, as LATENCY GRAPH labels it.
fn age_label(elapsed: u64) -> String {
    match elapsed {
        0..60 => format!("{elapsed}s"),
        60..3600 => format!("{}m", elapsed / 60),
        3600..86400 => format!("{}h", elapsed / 3600),
        _ => format!("{}d", elapsed / 86400),
    }
}

fn latency_doctor(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let report = doctor(ctx.core, unix_ms() / 1000);
    ctx.out.verbatim(report.as_bytes());
    Ok(())
}

/// The text of LATENCY DOCTOR: Redis's opening lines, one line per event with its
/// figures ([`LatencyMonitor::analyze`]), then the advice those events call for.
fn doctor(core: &crate::core::Core, now_secs: u64) -> String {
    let monitor = &core.latency;
    if monitor.events().len() == 0 && monitor.threshold_ms == 0 {
        return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n".to_string();
    }
    if monitor.events().len() == 0 {
        return "Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n".to_string();
    }
    let mut out = String::from(
        "Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n",
    );
    let mut advice: Vec<&str> = Vec::new();
    for (n, (name, ts)) in monitor.events().enumerate() {
        let st = LatencyMonitor::analyze(ts, now_secs);
        let _ = writeln!(
            out,
            "{}. {name}: {} latency spikes (average {}ms, mean deviation {}ms, period {:.2} sec). Worst all time event {}ms.",
            n + 1,
            st.samples,
            st.avg,
            st.mad,
            st.period as f64 / st.samples.max(1) as f64,
            ts.max
        );
        match name {
            "command" => {
                let slower_than = core.slowlog.slower_than;
                if slower_than < 0 {
                    advice.push("- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than <microseconds>'. If the Slow log is disabled Redis is not able to log slow commands execution for you.");
                } else if (slower_than / 1000) as u64 > monitor.threshold_ms {
                    advice.push("- You may want to lower the slowlog-log-slower-than threshold, so that it is equal to or below latency-monitor-threshold, to see the commands behind these events.");
                }
                advice.push("- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.");
                advice.push("- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large streams, trim them (XTRIM, XADD MAXLEN) in small steps rather than deleting them at once.");
            }
            "fast-command" => advice.push("- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to: 1) Lower the system load. 2) Use a computer / VM just for Redis if you are running in a virtualized environment. 3) Check if you have a \"noisy neighbour\" problem."),
            _ => advice.push("- Snapshot, rewrite and fsync pauses grow with the dataset and the disk: put `dir` on a local SSD, and consider `appendfsync everysec` if the log's fsync events are large."),
        }
    }
    advice.dedup();
    if advice.is_empty() {
        out.push_str("\nI have no advice for you.\n");
    } else {
        out.push_str("\nI have a few advices for you:\n\n");
        for a in advice {
            out.push_str(a);
            out.push('\n');
        }
    }
    out
}

fn latency_histogram(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    let stats = &ctx.core.stats.commands;
    let mut names: Vec<&'static str> = Vec::new();
    if ctx.argv.len() == 2 {
        names.extend(stats.keys());
        names.sort_unstable();
    } else {
        for arg in &ctx.argv[2..] {
            for spec in named_commands(arg) {
                if !names.contains(&spec) {
                    names.push(spec);
                }
            }
        }
    }
    let with_data: Vec<_> = names
        .into_iter()
        .filter_map(|n| {
            stats
                .get(n)
                .and_then(|s| s.histogram.as_ref())
                .map(|h| (n, h))
        })
        .collect();
    ctx.out.map(with_data.len());
    for (name, h) in with_data {
        ctx.out.bulk(name.as_bytes());
        ctx.out.map(2);
        ctx.out.bulk(b"calls");
        ctx.out
            .integer(i64::try_from(h.calls()).unwrap_or(i64::MAX));
        ctx.out.bulk(b"histogram_usec");
        let cdf = h.cdf_usec();
        ctx.out.map(cdf.len());
        for (bucket, count) in cdf {
            ctx.out.integer(bucket as i64);
            ctx.out.integer(i64::try_from(count).unwrap_or(i64::MAX));
        }
    }
    Ok(())
}

/// The full names LATENCY HISTOGRAM's `arg` stands for: the command itself and, for a
/// container, its subcommands; `container|sub` names one subcommand.
fn named_commands(arg: &[u8]) -> Vec<&'static str> {
    let (top, sub) = match arg.iter().position(|&b| b == b'|') {
        Some(i) => (&arg[..i], Some(&arg[i + 1..])),
        None => (arg, None),
    };
    let Some(spec) = crate::core::command::lookup(top) else {
        return Vec::new();
    };
    match sub {
        Some(sub) => spec
            .subcommands
            .iter()
            .filter(|s| {
                s.name
                    .as_bytes()
                    .eq_ignore_ascii_case(&[top, b"|", sub].concat())
            })
            .map(|s| s.name)
            .collect(),
        None => std::iter::once(spec.name)
            .chain(spec.subcommands.iter().map(|s| s.name))
            .collect(),
    }
}

fn latency_help(ctx: &mut Ctx<'_>) -> Result<(), ReplyError> {
    super::reply_help(
        ctx,
        "LATENCY",
        &[
            "DOCTOR",
            "    Return a human readable latency analysis report.",
            "GRAPH <event>",
            "    Return an ASCII latency graph for the <event> class.",
            "HISTORY <event>",
            "    Return time-latency samples for the <event> class.",
            "LATEST",
            "    Return the latest latency samples for all events.",
            "RESET [<event> ...]",
            "    Reset latency data of one or more <event> classes.",
            "    (default: reset all data for all event classes)",
            "HISTOGRAM [COMMAND ...]",
            "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
            "    If no commands are specified then all histograms are replied.",
        ],
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_are_labelled_in_the_largest_whole_unit() {
        assert_eq!(age_label(5), "5s");
        assert_eq!(age_label(120), "2m");
        assert_eq!(age_label(7200), "2h");
        assert_eq!(age_label(200_000), "2d");
    }

    #[test]
    fn the_graph_has_redis_header_and_one_column_per_sample() {
        let mut m = LatencyMonitor::default();
        m.add("command", 10, 100);
        m.add("command", 50, 101);
        let (name, ts) = m.event(b"command").expect("event");
        let g = graph(name, ts, 110);
        let lines: Vec<&str> = g.lines().collect();
        assert_eq!(
            lines[0],
            "command - high 50 ms, low 10 ms (all time high 50 ms)"
        );
        assert_eq!(lines[1], "-".repeat(80));
        assert_eq!(lines[2], " #");
        assert_eq!(lines[6], "_#");
        assert_eq!(lines[7], "19");
        assert_eq!(lines[8], "0s");
    }
}
