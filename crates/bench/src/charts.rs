//! PNG charts drawn from a result ([`Report`]) with plotters' bitmap backend:
//!
//! - `bench-creates.png`: creates, latency (p50 and p99, log scale) against throughput,
//!   one line per system and value size, a point per client level.
//! - `bench-watch.png`: watch delivery p99 (log scale) against watcher count (log scale),
//!   one line per system and write rate.
//! - `bench-scale-*.png`: the scale scenario's figures (memory per object, restart to a
//!   consistent read, a new member's catch-up, LIST, creates/s) against the number of stored objects, one line per
//!   system.
//!
//! Text is drawn with ab_glyph (pure Rust) from DejaVu Sans, loaded at run time from
//! Debian's fonts-dejavu-core (scripts/setup.sh installs it; `$KUORUM_BENCH_FONT`
//! overrides the path).

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

use super::Report;

const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

fn load_font() -> Result<()> {
    let mut paths: Vec<PathBuf> = std::env::var_os("KUORUM_BENCH_FONT").map(PathBuf::from).into_iter().collect();
    paths.extend(FONT_PATHS.iter().map(PathBuf::from));
    for p in &paths {
        if let Ok(bytes) = std::fs::read(p) {
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
                .map_err(|_| anyhow!("{} is not a usable font", p.display()))?;
            return Ok(());
        }
    }
    bail!("no font found (install fonts-dejavu-core or set KUORUM_BENCH_FONT); tried {paths:?}")
}

/// Draws every chart the report has data for into `dir`; prints the paths.
pub(crate) fn draw_all(report: &Report, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    load_font()?;
    if !report.results.is_empty() {
        let p = dir.join("bench-creates.png");
        creates_chart(report, &p).with_context(|| p.display().to_string())?;
        eprintln!("chart: {}", p.display());
    }
    if report.watch.iter().any(|w| w.watchers > 0) {
        let p = dir.join("bench-watch.png");
        watch_chart(report, &p).with_context(|| p.display().to_string())?;
        eprintln!("chart: {}", p.display());
    }
    if !report.scale.is_empty() {
        for (file, caption, y_desc, figure) in SCALE_CHARTS {
            let p = dir.join(file);
            scale_chart(report, &p, caption, y_desc, *figure).with_context(|| p.display().to_string())?;
            eprintln!("chart: {}", p.display());
        }
    }
    Ok(())
}

type ScaleFigure = fn(&crate::scenarios::ScaleResult) -> Option<f64>;

/// The scale scenario's charts: file, caption, y axis, the figure.
const SCALE_CHARTS: &[(&str, &str, &str, ScaleFigure)] = &[
    (
        "bench-scale-memory.png",
        "Scale: resident memory per stored object (median server)",
        "RSS growth per object, bytes (log)",
        |r| median(&r.rss_growth_per_object),
    ),
    (
        "bench-scale-restart.png",
        "Scale: a killed follower, from its start to its first consistent read",
        "seconds (log)",
        |r| r.restart_to_read_s,
    ),
    (
        "bench-scale-list.png",
        "Scale: consistent LIST of every object on a follower (thick: whole, thin: paged)",
        "seconds (log)",
        |r| r.list_ms.map(|m| m / 1000.0),
    ),
    (
        "bench-scale-catchup.png",
        "Scale: a new member (empty data directory), from its addition to its first answer",
        "seconds (log)",
        |r| r.catch_up_s,
    ),
    ("bench-scale-creates.png", "Scale: creates/s at 64 clients", "creates/s (log)", |r| Some(r.creates_per_sec)),
];

fn median(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

fn scale_chart(report: &Report, path: &Path, caption: &str, y_desc: &str, figure: ScaleFigure) -> Result<()> {
    let mut systems: Vec<&str> = report.scale.iter().map(|r| r.system.as_str()).collect();
    systems.dedup();
    let mut series = Vec::new();
    for (i, sys) in systems.iter().enumerate() {
        let rows: Vec<_> = report.scale.iter().filter(|r| r.system == *sys).collect();
        series.push(Series {
            label: sys.to_string(),
            color: color(2 * i),
            dashed: false,
            points: rows.iter().filter_map(|r| Some((r.objects as f64, figure(r)?, String::new()))).collect(),
        });
        if path.ends_with("bench-scale-list.png") {
            series.push(Series {
                label: format!("{sys} paged"),
                color: color(2 * i),
                dashed: true,
                points: rows
                    .iter()
                    .filter_map(|r| Some((r.objects as f64, r.list_paged_ms? / 1000.0, String::new())))
                    .collect(),
            });
        }
    }
    let x_max = series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).fold(1.0f64, f64::max) * 1.5;
    let x_min = series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).fold(f64::MAX, f64::min).min(x_max) / 1.5;
    plot(path, caption, (x_min..x_max).log_scale(), "objects stored (log)", y_desc, &series)
}

fn color(i: usize) -> RGBColor {
    const C: &[RGBColor] = &[
        RGBColor(31, 119, 180),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
    ];
    C[i % C.len()]
}

/// (label, points) series, drawn on a linear-x or log-x, log-y chart.
struct Series {
    label: String,
    color: RGBColor,
    dashed: bool,
    points: Vec<(f64, f64, String)>,
}

fn y_range(series: &[Series]) -> (f64, f64) {
    let ys = series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).filter(|y| *y > 0.0);
    let (lo, hi) = ys.fold((f64::MAX, 0.0f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
    if hi <= 0.0 {
        return (0.1, 10.0);
    }
    (lo / 1.5, hi * 1.5)
}

fn creates_chart(report: &Report, path: &Path) -> Result<()> {
    let mut keys: Vec<(String, usize)> = Vec::new();
    for r in &report.results {
        let k = (r.system.clone(), r.value_size);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut series = Vec::new();
    for (i, (sys, size)) in keys.iter().enumerate() {
        let mut rows: Vec<_> = report.results.iter().filter(|r| &r.system == sys && r.value_size == *size).collect();
        rows.sort_by_key(|r| r.clients);
        let size_label = if size % 1024 == 0 { format!("{} KiB", size / 1024) } else { format!("{size} B") };
        for (pct, dashed) in [("p99", false), ("p50", true)] {
            series.push(Series {
                label: format!("{sys} {size_label} {pct}"),
                color: color(i),
                dashed,
                points: rows
                    .iter()
                    .map(|r| (r.ops_per_sec, if dashed { r.p50_ms } else { r.p99_ms }, format!("{}", r.clients)))
                    .collect(),
            });
        }
    }
    let x_max = series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).fold(0.0f64, f64::max) * 1.1 + 1.0;
    plot(
        path,
        "Creates: latency against throughput (points: clients)",
        0.0..x_max,
        "creates/s",
        "latency ms (log; thick: p99, thin: p50)",
        &series,
    )
}

fn watch_chart(report: &Report, path: &Path) -> Result<()> {
    let mut keys: Vec<(String, u64)> = Vec::new();
    for r in report.watch.iter().filter(|r| r.watchers > 0) {
        let k = (r.system.clone(), r.write_rate.round() as u64);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut rates: Vec<u64> = keys.iter().map(|k| k.1).collect();
    rates.sort_unstable_by(|a, b| b.cmp(a));
    rates.dedup();
    let mut series = Vec::new();
    for (sys, rate) in &keys {
        // One hue family per system (kuorum: blue, green, purple; etcd: red, orange,
        // brown), one hue per write rate; kuorum thick, etcd thin.
        let r = rates.iter().position(|x| x == rate).unwrap_or(0);
        let etcd = sys != "kuorum";
        let mut rows: Vec<_> = report
            .watch
            .iter()
            .filter(|r| r.watchers > 0 && &r.system == sys && r.write_rate.round() as u64 == *rate && r.p99_ms > 0.0)
            .collect();
        rows.sort_by_key(|r| r.watchers);
        series.push(Series {
            label: format!("{sys} {rate} writes/s"),
            color: if etcd { [color(2), color(3), color(5)][r % 3] } else { [color(0), color(1), color(4)][r % 3] },
            dashed: etcd,
            points: rows.iter().map(|r| (r.watchers as f64, r.p99_ms, String::new())).collect(),
        });
    }
    let x_max = series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).fold(1.0f64, f64::max) * 2.0;
    plot(
        path,
        "Watch: delivery p99 against watcher count",
        (0.7..x_max).log_scale(),
        "watchers (log)",
        "delivery p99 ms (log; write sent -> event received)",
        &series,
    )
}

/// A 1100×700 PNG at `path`: the caption, the x axis over `x`, a log-scale y axis over
/// the series' values, the series and their legend.
fn plot<X>(path: &Path, caption: &str, x: X, x_desc: &str, y_desc: &str, series: &[Series]) -> Result<()>
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
{
    let (y_lo, y_hi) = y_range(series);
    let root = BitMapBackend::new(path, (1100, 700)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 24))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(x, (y_lo..y_hi).log_scale())?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.1}"))
        .label_style(("sans-serif", 15))
        .draw()?;
    for s in series {
        let pts: Vec<(f64, f64)> = s.points.iter().map(|p| (p.0, p.1)).collect();
        let style =
            ShapeStyle { color: s.color.to_rgba(), filled: !s.dashed, stroke_width: if s.dashed { 1 } else { 2 } };
        let c = s.color;
        let filled = !s.dashed;
        chart.draw_series(LineSeries::new(pts.clone(), style))?.label(s.label.clone()).legend(move |(x, y)| {
            PathElement::new(
                vec![(x, y), (x + 20, y)],
                ShapeStyle { color: c.to_rgba(), filled, stroke_width: if filled { 3 } else { 1 } },
            )
        });
        chart.draw_series(pts.iter().map(|&(x, y)| Circle::new((x, y), 4, style)))?;
        chart.draw_series(
            s.points
                .iter()
                .filter(|p| !p.2.is_empty() && !s.dashed)
                .map(|p| Text::new(p.2.clone(), (p.0, p.1), ("sans-serif", 13).into_font().color(&c))),
        )?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", 14))
        .draw()?;
    root.present()?;
    Ok(())
}
