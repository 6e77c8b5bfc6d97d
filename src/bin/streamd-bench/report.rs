//! Output: a Markdown table on stdout (one block of rows per workload, printed as soon as
//! the workload is done), or one JSON object per line with `--json`.
//!
//! ```text
//! | workload | server | ops/s | entries/s | latency p50 / p99 / p99.9 µs | CPU µs/op | memory B/unit |
//! | xadd/... | A      | 61.2k (58.0k–63.1k) | ...                                              |
//! | xadd/... | B      | ...                                                                     |
//! | xadd/... | A/B    | 1.12× | 1.12× | p99 0.91× | 0.62× | –                                      |
//! ```
//! Ratios are of medians. Throughput above 1 favours A; latency, CPU and memory below 1 do.
//!
//! A workload with figures of its own (`tiering/*`: disk reads, read speeds, restart time)
//! adds one row per server after those, its figures in the third cell:
//!
//! ```text
//! | tiering/restart | A figures | restart 0.05 s (0.04–0.06); VmRSS after 21.3 MB; ... | | | | |
//! ```

use std::fmt::Write as _;

use crate::measure::{Spread, Summary};
use crate::workloads::Workload;

/// One server's outcome for a workload.
pub struct Side {
    /// `A` or `B`.
    pub name: &'static str,
    /// Its address.
    pub addr: String,
    /// Its summary, or why it failed.
    pub result: Result<Summary, String>,
}

/// The Markdown table header.
pub fn header() -> String {
    "| workload | server | ops/s median (min–max) | entries/s median (min–max) | \
     latency p50 / p99 / p99.9 µs | server CPU µs/op · sys = kernel share | used_memory Δ B/unit |\n\
     |---|---|---|---|---|---|---|"
        .to_string()
}

/// `1234567.0` → `1.23M`, `12345.0` → `12.3k`.
pub fn rate(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.1}")
    }
}

fn spread_rate(s: Option<Spread>) -> String {
    s.map_or("–".into(), |s| {
        format!("{} ({}–{})", rate(s.median), rate(s.min), rate(s.max))
    })
}

fn small(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

fn spread_small(s: Option<Spread>) -> String {
    s.map_or("–".into(), |s| {
        format!("{} ({}–{})", small(s.median), small(s.min), small(s.max))
    })
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    let (a, b) = (a?, b?);
    (b != 0.0 && a.is_finite() && b.is_finite()).then(|| a / b)
}

fn times(r: Option<f64>) -> String {
    r.map_or("–".into(), |r| format!("{r:.2}×"))
}

/// `12` → `12`, `1234.5` → `1.2k`, `0.123` → `0.12`: a figure's value.
fn figure_value(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e4 {
        format!("{x:.0}")
    } else if x.abs() >= 1e3 {
        rate(x)
    } else {
        small(x)
    }
}

/// One figure as the table shows it: `name median unit`, then `(min–max)` when the rounds
/// differ as printed.
fn figure_text(name: &str, unit: &str, s: &Spread) -> String {
    let with_unit = |x: f64| match unit {
        "" => figure_value(x),
        "×" => format!("{x:.2}×"),
        u => format!("{} {u}", figure_value(x)),
    };
    let mut out = format!("{name} {}", with_unit(s.median));
    let (min, max) = (with_unit(s.min), with_unit(s.max));
    if min != max {
        let _ = write!(out, " ({min}–{max})");
    }
    out
}

/// The CPU cell of a server's row: CPU per command, and the share of it spent in the
/// kernel (`sys 62%`) when the phases were long enough to tell.
fn cpu_cell(sum: &Summary) -> String {
    let mut cell = spread_small(sum.cpu_per_op);
    if let Some(share) = sum.sys_share {
        let _ = write!(cell, " · sys {:.0}%", share.median * 100.0);
    }
    cell
}

/// The Markdown rows of one workload: one per server, then the A/B ratio row, then a
/// `figures` row per server whose workload reports figures of its own.
pub fn rows(w: &Workload, sides: &[Side]) -> String {
    let mut out = String::new();
    for s in sides {
        match &s.result {
            Ok(sum) => {
                let lat = sum.lat_us.map_or("–".into(), |[p50, p99, p999]| {
                    format!(
                        "{} / {} / {} ({})",
                        small(p50),
                        small(p99),
                        small(p999),
                        w.latency
                    )
                });
                let mem = sum.mem_per_entry.map_or("–".into(), |m| {
                    format!("{} /{}", spread_small(Some(m)), w.mem_unit)
                });
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} | {} |",
                    w.name,
                    s.name,
                    spread_rate(sum.ops),
                    spread_rate(sum.entries),
                    lat,
                    cpu_cell(sum),
                    mem
                );
            }
            Err(e) => {
                let _ = writeln!(out, "| {} | {} | FAILED: {} | | | | |", w.name, s.name, e);
            }
        }
    }
    if let [Side { result: Ok(a), .. }, Side { result: Ok(b), .. }] = sides {
        let med = |s: Option<Spread>| s.map(|s| s.median);
        let _ = writeln!(
            out,
            "| {} | A/B | {} | {} | p99 {} | {} | {} |",
            w.name,
            times(ratio(med(a.ops), med(b.ops))),
            times(ratio(med(a.entries), med(b.entries))),
            times(ratio(a.lat_us.map(|l| l[1]), b.lat_us.map(|l| l[1]))),
            times(ratio(med(a.cpu_per_op), med(b.cpu_per_op))),
            times(ratio(med(a.mem_per_entry), med(b.mem_per_entry))),
        );
    }
    for s in sides {
        if let Ok(sum) = &s.result
            && !sum.figures.is_empty()
        {
            let text: Vec<String> = sum
                .figures
                .iter()
                .map(|(name, unit, spread)| figure_text(name, unit, spread))
                .collect();
            let _ = writeln!(
                out,
                "| {} | {} figures | {} | | | | |",
                w.name,
                s.name,
                text.join("; ")
            );
        }
    }
    out
}

/// A JSON string literal.
fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_num(x: Option<f64>) -> String {
    x.filter(|x| x.is_finite())
        .map_or("null".into(), |x| format!("{x:.4}"))
}

fn json_spread(s: Option<Spread>) -> String {
    s.map_or("null".into(), |s| {
        format!(
            "{{\"median\":{},\"min\":{},\"max\":{}}}",
            json_num(Some(s.median)),
            json_num(Some(s.min)),
            json_num(Some(s.max))
        )
    })
}

/// The JSON lines of one workload: one object per server, then one for the ratios.
pub fn json(w: &Workload, sides: &[Side]) -> String {
    let mut out = String::new();
    let name = json_str(&w.name);
    for s in sides {
        let head = format!(
            "{{\"workload\":{name},\"server\":\"{}\",\"addr\":{}",
            s.name,
            json_str(&s.addr)
        );
        match &s.result {
            Ok(sum) => {
                let lat = sum.lat_us.map_or("null".into(), |[a, b, c]| {
                    format!(
                        "{{\"what\":{},\"p50\":{},\"p99\":{},\"p999\":{}}}",
                        json_str(w.latency),
                        json_num(Some(a)),
                        json_num(Some(b)),
                        json_num(Some(c))
                    )
                });
                let figures: Vec<String> = sum
                    .figures
                    .iter()
                    .map(|(name, unit, spread)| {
                        format!(
                            "{}:{{\"unit\":{},\"median\":{},\"min\":{},\"max\":{}}}",
                            json_str(name),
                            json_str(unit),
                            json_num(Some(spread.median)),
                            json_num(Some(spread.min)),
                            json_num(Some(spread.max))
                        )
                    })
                    .collect();
                let _ = writeln!(
                    out,
                    "{head},\"rounds\":{},\"ops_per_sec\":{},\"entries_per_sec\":{},\
                     \"latency_us\":{lat},\"cpu_us_per_op\":{},\"cpu_sys_share\":{},\"mem_unit\":{},\
                     \"mem_bytes_per_unit\":{},\"figures\":{{{}}}}}",
                    sum.rounds,
                    json_spread(sum.ops),
                    json_spread(sum.entries),
                    json_spread(sum.cpu_per_op),
                    json_spread(sum.sys_share),
                    json_str(w.mem_unit),
                    json_spread(sum.mem_per_entry),
                    figures.join(","),
                );
            }
            Err(e) => {
                let _ = writeln!(out, "{head},\"error\":{}}}", json_str(e));
            }
        }
    }
    if let [Side { result: Ok(a), .. }, Side { result: Ok(b), .. }] = sides {
        let med = |s: Option<Spread>| s.map(|s| s.median);
        let _ = writeln!(
            out,
            "{{\"workload\":{name},\"ratio\":\"A/B\",\"ops_per_sec\":{},\"entries_per_sec\":{},\
             \"latency_p99\":{},\"cpu_us_per_op\":{},\"mem_bytes_per_unit\":{}}}",
            json_num(ratio(med(a.ops), med(b.ops))),
            json_num(ratio(med(a.entries), med(b.entries))),
            json_num(ratio(a.lat_us.map(|l| l[1]), b.lat_us.map(|l| l[1]))),
            json_num(ratio(med(a.cpu_per_op), med(b.cpu_per_op))),
            json_num(ratio(med(a.mem_per_entry), med(b.mem_per_entry))),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{Figure, Sample};
    use crate::workloads::all;

    #[test]
    fn rates_and_json_strings() {
        assert_eq!(rate(1_234_567.0), "1.23M");
        assert_eq!(rate(12_345.0), "12.3k");
        assert_eq!(rate(12.34), "12.3");
        assert_eq!(json_str("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
        assert_eq!(json_num(Some(f64::NAN)), "null");
    }

    #[test]
    fn rows_carry_the_ratio() {
        let w = &all()[0];
        let sample = |ops: u64, cpu: f64| Sample {
            ops,
            entries: ops,
            secs: 1.0,
            lat_ns: vec![1000, 2000, 3000],
            mem_delta: Some(ops as f64 * 10.0),
            cpu_us: Some(cpu),
            sys_share: Some(0.625),
            figures: vec![Figure::new("disk reads", "", 0.0)],
        };
        let side = |name, ops, cpu| Side {
            name,
            addr: "127.0.0.1:1".into(),
            result: Ok(Summary::of(&[sample(ops, cpu)])),
        };
        let sides = [side("A", 2000, 1000.0), side("B", 1000, 2000.0)];
        let table = rows(w, &sides);
        assert!(
            table.contains("| A/B | 2.00× | 2.00× | p99 1.00× | 0.25× | 1.00× |"),
            "{table}"
        );
        assert!(table.contains(" · sys 62% |"), "{table}");
        let lines = json(w, &sides);
        assert_eq!(lines.lines().count(), 3);
        assert!(
            lines.contains("\"cpu_sys_share\":{\"median\":0.6250"),
            "{lines}"
        );
        assert!(
            lines.contains("\"ratio\":\"A/B\",\"ops_per_sec\":2.0000"),
            "{lines}"
        );
        let failed = [
            side("A", 1, 1.0),
            Side {
                name: "B",
                addr: "x".into(),
                result: Err("boom".into()),
            },
        ];
        assert!(
            table.contains("| A figures | disk reads 0 | | | | |"),
            "{table}"
        );
        assert!(
            lines.contains("\"figures\":{\"disk reads\":{\"unit\":\"\",\"median\":0.0000"),
            "{lines}"
        );
        let s = Spread {
            median: 0.5,
            min: 0.25,
            max: 1500.0,
        };
        assert_eq!(
            figure_text("restart", "s", &s),
            "restart 0.50 s (0.25 s–1500 s)"
        );
        assert_eq!(
            figure_text("ratio", "×", &s),
            "ratio 0.50× (0.25×–1500.00×)"
        );
        let close = Spread {
            median: 58.31,
            min: 58.30,
            max: 58.32,
        };
        assert_eq!(figure_text("cold", "MB", &close), "cold 58.3 MB");
        assert!(rows(w, &failed).contains("FAILED: boom"));
        assert!(!rows(w, &failed).contains("A/B"));
        assert!(json(w, &failed).contains("\"error\":\"boom\""));
    }
}
