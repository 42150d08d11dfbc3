//! The charts of `report.html`, drawn by plotters' SVG backend: the Pareto chart, latency CDFs
//! and capacity bars. Each chart comes back as SVG text plus the pixel position of every mark,
//! so the page can put a hover title (point id and parameters) over each one.

use plotters::coord::Shift;
use plotters::prelude::*;

/// Size of one chart in pixels.
pub const WIDTH: u32 = 820;
pub const HEIGHT: u32 = 460;

/// Marks of feasible points (and the capacity bars).
pub const FEASIBLE: RGBColor = RGBColor(31, 119, 180);
/// The line joining the Pareto front.
pub const FRONT: RGBColor = RGBColor(214, 39, 40);
/// Marks of infeasible points.
pub const INFEASIBLE: RGBColor = RGBColor(150, 150, 150);
/// One colour per top point in the latency charts.
pub const SERIES: [RGBColor; 5] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

const FONT: &str = "sans-serif";

/// A mark's position in the chart (pixels from the top left) and its hover title.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub x: i32,
    pub y: i32,
    pub title: String,
}

/// A drawn chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub svg: String,
    pub marks: Vec<Mark>,
}

/// One point of the Pareto chart.
#[derive(Debug, Clone)]
pub struct ScatterPoint {
    pub x: f64,
    pub y: f64,
    pub feasible: bool,
    pub front: bool,
    /// Drawn next to the mark (the point id).
    pub label: String,
    /// The hover title (point id and parameters).
    pub title: String,
}

/// `lo..hi` widened by 5 % on each side (and to a unit range around a single value).
fn padded(lo: f64, hi: f64) -> std::ops::Range<f64> {
    if !(lo.is_finite() && hi.is_finite()) {
        return 0.0..1.0;
    }
    if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        let d = lo.abs().max(1.0) * 0.1;
        return (lo - d)..(hi + d);
    }
    let pad = (hi - lo) * 0.05;
    (lo - pad)..(hi + pad)
}

/// A plotters error as the page shows it (also `validation.html`'s).
pub(crate) fn err(e: impl std::fmt::Display) -> String {
    format!("cannot draw a chart: {e}")
}

/// Draws a chart's series legend at `at`, in the style every chart of the reports shares.
pub(crate) fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    at: SeriesLabelPosition,
    font_size: u32,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(at)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(200, 200, 200))
        .label_font((FONT, font_size))
        .draw()
        .map_err(err)
}

fn canvas(svg: &mut String) -> DrawingArea<SVGBackend<'_>, Shift> {
    SVGBackend::with_string(svg, (WIDTH, HEIGHT)).into_drawing_area()
}

/// Short axis numbers: no long decimal tails.
fn tick(v: &f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if !(1e-3..1e6).contains(&a) {
        format!("{v:.1e}")
    } else if a >= 10.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// The Pareto chart: every point that ran on two objectives (`y` against `x`), feasible points
/// as filled circles, infeasible ones as grey crosses, the front of the feasible points joined
/// by a line. `label_all` writes every point's id next to its mark (else only the front's).
pub fn pareto(
    points: &[ScatterPoint],
    x_desc: &str,
    y_desc: &str,
    label_all: bool,
) -> Result<Chart, String> {
    let mut svg = String::new();
    let mut marks = Vec::new();
    {
        let root = canvas(&mut svg);
        root.fill(&WHITE).map_err(err)?;
        let (xmin, xmax) = min_max(points.iter().map(|p| p.x));
        let (ymin, ymax) = min_max(points.iter().map(|p| p.y));
        let mut chart = ChartBuilder::on(&root)
            .margin(16)
            .x_label_area_size(46)
            .y_label_area_size(70)
            .build_cartesian_2d(padded(xmin, xmax), padded(ymin, ymax))
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .axis_desc_style((FONT, 15))
            .label_style((FONT, 13))
            .light_line_style(RGBColor(238, 238, 238))
            .draw()
            .map_err(err)?;
        let mut front: Vec<(f64, f64)> = points
            .iter()
            .filter(|p| p.front)
            .map(|p| (p.x, p.y))
            .collect();
        front.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        if !front.is_empty() {
            chart
                .draw_series(LineSeries::new(front, FRONT.stroke_width(2)))
                .map_err(err)?
                .label("Pareto front (feasible)")
                .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], FRONT.stroke_width(2)));
        }
        chart
            .draw_series(
                points
                    .iter()
                    .filter(|p| !p.feasible)
                    .map(|p| Cross::new((p.x, p.y), 4, INFEASIBLE.stroke_width(2))),
            )
            .map_err(err)?
            .label("infeasible")
            .legend(|(x, y)| Cross::new((x + 9, y), 4, INFEASIBLE.stroke_width(2)));
        chart
            .draw_series(
                points
                    .iter()
                    .filter(|p| p.feasible)
                    .map(|p| Circle::new((p.x, p.y), 5, FEASIBLE.filled())),
            )
            .map_err(err)?
            .label("feasible")
            .legend(|(x, y)| Circle::new((x + 9, y), 5, FEASIBLE.filled()));
        chart
            .draw_series(points.iter().filter(|p| label_all || p.front).map(|p| {
                EmptyElement::at((p.x, p.y))
                    + Text::new(p.label.clone(), (7, -16), (FONT, 12).into_font())
            }))
            .map_err(err)?;
        legend(&mut chart, SeriesLabelPosition::LowerLeft, 13)?;
        for p in points {
            let (x, y) = chart.backend_coord(&(p.x, p.y));
            marks.push(Mark {
                x,
                y,
                title: p.title.clone(),
            });
        }
        root.present().map_err(err)?;
    }
    Ok(Chart { svg, marks })
}

/// Hollow marks of points stopped early, at what was proven of the missed metric.
pub const STOPPED: RGBColor = RGBColor(255, 127, 14);

/// One point stopped early: when (simulated seconds) and what was proven of the missed metric,
/// in percent of the `require` bound it missed.
#[derive(Debug, Clone)]
pub struct StoppedPoint {
    pub at_s: f64,
    pub proven_percent: f64,
    /// Drawn next to the mark (the point id and the metric).
    pub label: String,
    pub title: String,
}

/// The chart of points stopped early: each a hollow circle at (time of the stop, proven lower
/// bound of the missed metric in percent of its bound), with the bound (100 %) as a red line.
pub fn stopped(points: &[StoppedPoint]) -> Result<Chart, String> {
    let mut svg = String::new();
    let mut marks = Vec::new();
    {
        let root = canvas(&mut svg);
        root.fill(&WHITE).map_err(err)?;
        let (xmin, xmax) = min_max(points.iter().map(|p| p.at_s));
        let (_, ymax) = min_max(points.iter().map(|p| p.proven_percent));
        // Room on the right for the last mark's label.
        let x_lo = xmin.min(0.0);
        let x_range = padded(x_lo, xmax + (xmax - x_lo).max(0.0) * 0.12);
        let y_range = padded(90.0, ymax.max(110.0));
        let mut chart = ChartBuilder::on(&root)
            .margin(16)
            .x_label_area_size(46)
            .y_label_area_size(70)
            .build_cartesian_2d(x_range.clone(), y_range)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("stopped at (simulated s)")
            .y_desc("proven lower bound (% of the require bound)")
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .axis_desc_style((FONT, 15))
            .label_style((FONT, 13))
            .light_line_style(RGBColor(238, 238, 238))
            .draw()
            .map_err(err)?;
        chart
            .draw_series(std::iter::once(PathElement::new(
                [(x_range.start, 100.0), (x_range.end, 100.0)],
                FRONT.stroke_width(1),
            )))
            .map_err(err)?
            .label("require bound (100 %)")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], FRONT.stroke_width(1)));
        chart
            .draw_series(
                points
                    .iter()
                    .map(|p| Circle::new((p.at_s, p.proven_percent), 5, STOPPED.stroke_width(2))),
            )
            .map_err(err)?
            .label("stopped early: the metric is at least this")
            .legend(|(x, y)| Circle::new((x + 9, y), 5, STOPPED.stroke_width(2)));
        chart
            .draw_series(points.iter().map(|p| {
                EmptyElement::at((p.at_s, p.proven_percent))
                    + Text::new(p.label.clone(), (7, -16), (FONT, 12).into_font())
            }))
            .map_err(err)?;
        legend(&mut chart, SeriesLabelPosition::LowerRight, 13)?;
        for p in points {
            let (x, y) = chart.backend_coord(&(p.at_s, p.proven_percent));
            marks.push(Mark {
                x,
                y,
                title: p.title.clone(),
            });
        }
        root.present().map_err(err)?;
    }
    Ok(Chart { svg, marks })
}

fn min_max(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        })
}

/// One curve of a latency CDF: `(value, fraction of requests at or below it)` pairs.
#[derive(Debug, Clone)]
pub struct Curve {
    pub name: String,
    pub title: String,
    pub points: Vec<(f64, f64)>,
}

/// Empirical CDFs on a logarithmic value axis (latencies of one sweep span decades).
pub fn cdf(curves: &[Curve], x_desc: &str) -> Result<Chart, String> {
    let mut svg = String::new();
    let mut marks = Vec::new();
    {
        let root = canvas(&mut svg);
        root.fill(&WHITE).map_err(err)?;
        let (lo, hi) = min_max(
            curves
                .iter()
                .flat_map(|c| c.points.iter().map(|p| p.0))
                .filter(|v| *v > 0.0),
        );
        let (lo, hi) = if lo.is_finite() {
            (lo, hi.max(lo * 1.01))
        } else {
            (0.1, 1.0)
        };
        // Zero latencies (none in practice) sit on the left edge.
        let floor = lo / 1.2;
        let mut chart = ChartBuilder::on(&root)
            .margin(16)
            .x_label_area_size(46)
            .y_label_area_size(60)
            .build_cartesian_2d(
                (floor..hi * 1.2)
                    .log_scale()
                    .with_key_points(log_ticks(floor, hi * 1.2)),
                0.0..1.0,
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc("fraction of requests ≤ x")
            .x_label_formatter(&tick)
            .max_light_lines(1)
            .y_label_formatter(&|v| format!("{v:.1}"))
            .axis_desc_style((FONT, 15))
            .label_style((FONT, 13))
            .light_line_style(RGBColor(238, 238, 238))
            .draw()
            .map_err(err)?;
        for (i, c) in curves.iter().enumerate() {
            let color = SERIES[i % SERIES.len()];
            let pts: Vec<(f64, f64)> = c.points.iter().map(|&(x, q)| (x.max(floor), q)).collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(err)?
                .label(c.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 18, y)], color.stroke_width(2))
                });
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(err)?;
            for &p in &pts {
                let (x, y) = chart.backend_coord(&p);
                marks.push(Mark {
                    x,
                    y,
                    title: format!("{}: p{} = {}", c.title, percent(p.1), tick(&p.0)),
                });
            }
        }
        legend(&mut chart, SeriesLabelPosition::LowerRight, 13)?;
        root.present().map_err(err)?;
    }
    Ok(Chart { svg, marks })
}

/// Ticks of a log axis over `lo..hi`: 1, 2 and 5 times powers of ten, or every integer multiple
/// when that leaves fewer than four (a range within a decade or so).
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let pick = |mantissas: &[f64]| -> Vec<f64> {
        let mut out = Vec::new();
        let (d0, d1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
        for d in d0..=d1 {
            for m in mantissas {
                let v = m * 10f64.powi(d);
                if v >= lo && v <= hi {
                    out.push(v);
                }
            }
        }
        out
    };
    let coarse = pick(&[1.0, 2.0, 5.0]);
    if coarse.len() >= 4 || !(lo > 0.0 && hi > lo) {
        coarse
    } else {
        pick(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])
    }
}

fn percent(q: f64) -> String {
    let p = q * 100.0;
    if p.fract() == 0.0 {
        format!("{p:.0}")
    } else {
        format!("{p}")
    }
}

/// One bar of the capacity chart.
#[derive(Debug, Clone)]
pub struct Bar {
    pub label: String,
    pub title: String,
    pub value: f64,
    /// Upper end of the search bracket, drawn as a thin line above the bar.
    pub high: Option<f64>,
}

/// Bars (capacity per GPU of each deployment), in the given order.
pub fn bars(items: &[Bar], y_desc: &str) -> Result<Chart, String> {
    let mut svg = String::new();
    let mut marks = Vec::new();
    {
        let root = canvas(&mut svg);
        root.fill(&WHITE).map_err(err)?;
        let top = items
            .iter()
            .map(|b| b.high.unwrap_or(b.value).max(b.value))
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max);
        let top = if top > 0.0 { top * 1.1 } else { 1.0 };
        let n = items.len().max(1);
        let labels: Vec<String> = items.iter().map(|b| b.label.clone()).collect();
        let mut chart = ChartBuilder::on(&root)
            .margin(16)
            .x_label_area_size(46)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..n as f64, 0.0..top)
            .map_err(err)?;
        let label_of = |v: &f64| {
            let i = v.floor() as usize;
            if (v - v.floor() - 0.5).abs() < 1e-9 {
                labels.get(i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n * 2 + 1)
            .x_label_formatter(&label_of)
            .y_label_formatter(&tick)
            .x_desc("point")
            .y_desc(y_desc)
            .axis_desc_style((FONT, 15))
            .label_style((FONT, 12))
            .light_line_style(RGBColor(238, 238, 238))
            .draw()
            .map_err(err)?;
        chart
            .draw_series(items.iter().enumerate().map(|(i, b)| {
                let x = i as f64;
                Rectangle::new([(x + 0.15, 0.0), (x + 0.85, b.value)], FEASIBLE.filled())
            }))
            .map_err(err)?;
        chart
            .draw_series(items.iter().enumerate().filter_map(|(i, b)| {
                let x = i as f64 + 0.5;
                b.high
                    .filter(|h| *h > b.value)
                    .map(|h| PathElement::new([(x, b.value), (x, h)], FRONT.stroke_width(2)))
            }))
            .map_err(err)?;
        for (i, b) in items.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(i as f64 + 0.5, b.value));
            marks.push(Mark {
                x,
                y,
                title: b.title.clone(),
            });
        }
        root.present().map_err(err)?;
    }
    Ok(Chart { svg, marks })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pareto_svg_has_marks_and_labels() {
        let pts: Vec<ScatterPoint> = (0..4)
            .map(|i| ScatterPoint {
                x: i as f64,
                y: 10.0 - i as f64,
                feasible: i != 3,
                front: i < 2,
                label: format!("#{i}"),
                title: format!("point {i}"),
            })
            .collect();
        let c = pareto(&pts, "x", "y", true).unwrap();
        assert!(c.svg.starts_with("<svg"), "{}", &c.svg[..40]);
        assert_eq!(c.svg.matches("<circle").count(), 3 + 1, "3 marks + legend");
        assert!(c.svg.contains("#2") && c.svg.contains("#0"));
        assert_eq!(c.marks.len(), 4);
        // Larger x is further right, larger y further up.
        assert!(c.marks[1].x > c.marks[0].x && c.marks[1].y > c.marks[0].y);
        for m in &c.marks {
            assert!(m.x > 0 && m.x < WIDTH as i32 && m.y > 0 && m.y < HEIGHT as i32);
        }
    }

    #[test]
    fn cdf_and_bars_draw() {
        let c = cdf(
            &[Curve {
                name: "#1".into(),
                title: "point 1".into(),
                points: vec![(1.0, 0.0), (10.0, 0.5), (100.0, 1.0)],
            }],
            "TTFT (ms)",
        )
        .unwrap();
        assert!(c.svg.contains("<polyline"));
        assert_eq!(c.marks.len(), 3);
        assert_eq!(c.marks[1].title, "point 1: p50 = 10");
        let t = log_ticks(3.0, 1500.0);
        assert_eq!(t.len(), 8, "{t:?}");
        assert!(
            (t[0] - 5.0).abs() < 1e-9 && (t[7] - 1000.0).abs() < 1e-9,
            "{t:?}"
        );
        let t = log_ticks(22.0, 130.0);
        assert_eq!(t.len(), 8, "30..=90 and 100: {t:?}");
        let b = bars(
            &[Bar {
                label: "#3".into(),
                title: "point 3".into(),
                value: 2.0,
                high: Some(2.5),
            }],
            "rps per GPU",
        )
        .unwrap();
        assert!(b.svg.contains("<rect") && b.svg.contains("#3"));
    }
}
