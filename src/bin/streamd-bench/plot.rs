//! `--svg FILE`: the run's A/B ratios as pictures, one chart per workload family (the
//! part of the name before `/`), drawn with plotters' SVG backend.
//!
//! ```text
//!  xadd: A/B ops/s (above 1 favours A) — dot = ratio of medians, bar = worst–best round
//!  c1-p1-k1     |            ●──┤ 1.10×
//!  c50-p32-k1   |       ├──●──────┤ 0.92×
//!               +--------:-----------  log scale; the dashed line is 1.0 (parity)
//! ```
//!
//! Each row is one workload: the dot is the ratio of the two servers' medians (the table's
//! A/B column), the bar runs from A's worst round over B's best to A's best over B's
//! worst, so a bar across the 1.0 line says the rounds do not separate the servers.
//! Throughput (ops/s; entries/s for workloads that time one operation and count no
//! commands, like `repl/fullsync-*`) is what most workloads compare; the memory
//! measurements (the `mem` family and every `*/mem-*` variant) compare `used_memory` per
//! unit, where below 1 favours A. A family with both kinds gets a chart for each. A row
//! is green when its whole bar favours A, red when it favours B, grey when the bar
//! crosses 1.0.

use std::path::Path;

use plotters::element::DashedPathElement;
use plotters::prelude::*;

use crate::measure::Spread;
use crate::report::Side;
use crate::workloads::Workload;

/// What a point compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// ops/s (or entries/s): above 1 favours A.
    Throughput,
    /// `used_memory` per unit: below 1 favours A.
    Memory,
}

/// One workload's A/B ratio and its spread.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The family (`xadd`, `pel`, ...).
    pub family: String,
    /// The rest of the name (`c1-p1-k1`), or the whole name when it has no `/`.
    pub variant: String,
    /// What is compared.
    pub metric: Metric,
    /// A's median over B's median.
    pub median: f64,
    /// A's smallest round over B's largest.
    pub low: f64,
    /// A's largest round over B's smallest.
    pub high: f64,
}

impl Point {
    /// The point of one workload, when both servers completed it and the compared figure
    /// is positive on both sides; `None` otherwise (a failed side, no measurement).
    pub fn of(w: &Workload, sides: &[Side]) -> Option<Point> {
        let [Side { result: Ok(a), .. }, Side { result: Ok(b), .. }] = sides else {
            return None;
        };
        let (family, variant) = w.name.split_once('/').unwrap_or((&w.name, &w.name));
        let memory = family == "mem" || w.name.split('/').skip(1).any(|v| v.starts_with("mem"));
        let (metric, sa, sb) = if memory {
            (Metric::Memory, a.mem_per_entry?, b.mem_per_entry?)
        } else {
            match (a.ops, b.ops) {
                (Some(sa), Some(sb)) => (Metric::Throughput, sa, sb),
                _ => (Metric::Throughput, a.entries?, b.entries?),
            }
        };
        let positive = |s: &Spread| s.min > 0.0 && s.median > 0.0 && s.max.is_finite();
        if !positive(&sa) || !positive(&sb) {
            return None;
        }
        Some(Point {
            family: family.to_string(),
            variant: variant.to_string(),
            metric,
            median: sa.median / sb.median,
            low: sa.min / sb.max,
            high: sa.max / sb.min,
        })
    }

    /// `Some(true)` when the whole spread favours A, `Some(false)` when it favours B,
    /// `None` when it crosses 1.0 (the rounds do not separate the servers).
    fn favours_a(&self) -> Option<bool> {
        let (above, below) = (self.low > 1.0, self.high < 1.0);
        match (self.metric, above, below) {
            (_, false, false) => None,
            (Metric::Throughput, above, _) => Some(above),
            (Metric::Memory, _, below) => Some(below),
        }
    }
}

/// Chart width, and the height of a chart's frame and of one workload row, in pixels.
const WIDTH: u32 = 900;
const CHART_FRAME: u32 = 90;
const ROW: u32 = 26;

/// The charts: each family's points of one metric, in order of first appearance.
fn families(points: &[Point]) -> Vec<(&str, Vec<&Point>)> {
    let mut out: Vec<(&str, Vec<&Point>)> = Vec::new();
    for p in points {
        let same = |(f, v): &&mut (&str, Vec<&Point>)| {
            *f == p.family && v.first().is_some_and(|q| q.metric == p.metric)
        };
        match out.iter_mut().find(|c| same(c)) {
            Some((_, v)) => v.push(p),
            None => out.push((&p.family, vec![p])),
        }
    }
    out
}

/// The ratios the x axis labels, those within `lo..hi`.
fn key_points(lo: f64, hi: f64) -> Vec<f64> {
    [
        0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0,
        100.0,
    ]
    .into_iter()
    .filter(|x| (lo..=hi).contains(x))
    .collect()
}

/// A ratio as the table prints it.
fn times(x: f64) -> String {
    if x >= 10.0 {
        format!("{x:.0}×")
    } else {
        format!("{x:.2}×")
    }
}

/// The log-scale axis range: every bar and 1.0, with some room, at least 0.5–2.
fn x_range(points: &[&Point]) -> (f64, f64) {
    let lo = points.iter().map(|p| p.low).fold(0.5_f64, f64::min);
    let hi = points.iter().map(|p| p.high).fold(2.0_f64, f64::max);
    (lo / 1.25, hi * 1.4)
}

/// Writes the charts of `points` to `path` as one SVG, one chart per family, under
/// `title`. An error names what failed (no points, the file, the drawing).
pub fn write_svg(path: &Path, title: &str, points: &[Point]) -> Result<(), String> {
    let fams = families(points);
    if fams.is_empty() {
        return Err("no workload has ratios to plot (both servers must complete it)".into());
    }
    let heights: Vec<u32> = fams
        .iter()
        .map(|(_, ps)| CHART_FRAME + ROW * ps.len() as u32)
        .collect();
    let title_h = 50;
    let total = title_h + heights.iter().sum::<u32>();
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let root = SVGBackend::new(path, (WIDTH, total)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (head, mut rest) = root.split_vertically(title_h);
    head.titled(title, ("sans-serif", 20))
        .map_err(|e| err(&e))?;
    for ((family, ps), h) in fams.iter().zip(&heights) {
        let (area, below) = rest.split_vertically(*h);
        rest = below;
        draw_family(&area, family, ps).map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// One family's chart on `area`.
fn draw_family<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    family: &str,
    ps: &[&Point],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let metric = ps.first().map_or(Metric::Throughput, |p| p.metric);
    let what = match metric {
        Metric::Throughput => "A/B throughput, above 1 favours A",
        Metric::Memory => "A/B used_memory per unit, below 1 favours A",
    };
    let (lo, hi) = x_range(ps);
    let names: Vec<&str> = ps.iter().map(|p| p.variant.as_str()).collect();
    let mut chart = ChartBuilder::on(area)
        .caption(format!("{family}: {what}"), ("sans-serif", 16))
        .margin(8)
        .margin_right(24)
        .x_label_area_size(28)
        .y_label_area_size(190)
        .build_cartesian_2d(
            (lo..hi).log_scale().with_key_points(key_points(lo, hi)),
            (0..ps.len()).into_segmented(),
        )?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(WHITE)
        .y_labels(ps.len())
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => names.get(*i).copied().unwrap_or("").to_string(),
            _ => String::new(),
        })
        .x_label_formatter(&|x| times(*x))
        .x_desc(
            "dot: ratio of medians; bar: A's worst round / B's best to A's best / B's worst; \
             green/red: the whole bar favours A/B, grey: it crosses 1.0 (dashed)",
        )
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 12))
        .draw()?;
    // Parity.
    chart.draw_series(std::iter::once(DashedPathElement::new(
        [
            (1.0, SegmentValue::Exact(0)),
            (1.0, SegmentValue::Exact(ps.len())),
        ],
        6,
        4,
        BLACK.stroke_width(1),
    )))?;
    for (i, p) in ps.iter().enumerate() {
        let color = match p.favours_a() {
            Some(true) => RGBColor(0x1b, 0x8a, 0x3a),
            Some(false) => RGBColor(0xc0, 0x39, 0x2b),
            None => RGBColor(0x80, 0x80, 0x80),
        };
        let y = SegmentValue::CenterOf(i);
        let cap = |x: f64| {
            EmptyElement::at((x, y.clone()))
                + PathElement::new(vec![(0, -6), (0, 6)], color.stroke_width(2))
        };
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(p.low, y.clone()), (p.high, y.clone())],
            color.stroke_width(2),
        )))?;
        chart.draw_series([cap(p.low), cap(p.high)])?;
        chart.draw_series(std::iter::once(
            EmptyElement::at((p.median, y.clone()))
                + Circle::new((0, 0), 5, color.filled())
                + Text::new(times(p.median), (8, -16), ("sans-serif", 12)),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{Sample, Summary};
    use crate::workloads::all;

    fn sample(ops: u64) -> Sample {
        Sample {
            ops,
            entries: ops,
            secs: 1.0,
            lat_ns: vec![1000],
            mem_delta: Some(ops as f64 * 10.0),
            cpu_us: Some(1.0),
            sys_share: None,
            figures: Vec::new(),
        }
    }

    fn side(name: &'static str, rounds: &[u64]) -> Side {
        let samples: Vec<Sample> = rounds.iter().map(|&o| sample(o)).collect();
        Side {
            name,
            addr: "127.0.0.1:1".into(),
            result: Ok(Summary::of(&samples)),
        }
    }

    #[test]
    fn a_point_is_the_ratio_of_medians_with_worst_and_best_rounds() {
        let w = all()
            .into_iter()
            .find(|w| w.name.starts_with("xadd/"))
            .unwrap();
        let p = Point::of(
            &w,
            &[side("A", &[100, 200, 300]), side("B", &[100, 100, 150])],
        )
        .unwrap();
        assert_eq!(p.family, "xadd");
        assert_eq!(p.metric, Metric::Throughput);
        assert_eq!((p.median, p.low, p.high), (2.0, 100.0 / 150.0, 3.0));
        assert_eq!(p.favours_a(), None, "the bar crosses 1.0");
        let p = Point::of(
            &w,
            &[side("A", &[300, 300, 300]), side("B", &[100, 100, 150])],
        )
        .unwrap();
        assert_eq!(p.favours_a(), Some(true));
        let failed = [
            side("A", &[1]),
            Side {
                name: "B",
                addr: "x".into(),
                result: Err("boom".into()),
            },
        ];
        assert_eq!(Point::of(&w, &failed), None);
        assert_eq!(Point::of(&w, &[side("A", &[0]), side("B", &[5])]), None);
    }

    #[test]
    fn the_svg_has_a_chart_per_family_and_the_parity_line() {
        let mk = |family: &str, variant: &str, median: f64| Point {
            family: family.into(),
            variant: variant.into(),
            metric: Metric::Throughput,
            median,
            low: median * 0.8,
            high: median * 1.3,
        };
        let points = [
            mk("xadd", "c1-p1-k1", 1.1),
            mk("pel", "xack", 0.7),
            mk("xadd", "c50-p32-k1", 2.4),
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ratios.svg");
        write_svg(&path, "streamd / Redis", &points).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
        for want in [
            "xadd: A/B throughput",
            "pel: A/B throughput",
            "c50-p32-k1",
            "2.40×",
            "0.70×",
            "streamd / Redis",
        ] {
            assert!(svg.contains(want), "no {want:?} in the SVG");
        }
        // One dot per workload.
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(write_svg(&path, "t", &[]).is_err());
    }
}
