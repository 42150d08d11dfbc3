//! `validation.html`: one self-contained page (no script, no network) with, for TTFT and TPOT,
//! the predicted value of every simulated point against the measured one on log axes, the line
//! y = x and the ±10 % band, one colour per group; then the groups' error figures and the
//! points that could not be simulated. A pure function of the results.

use super::points::MeasuredPoint;
use super::summary::GroupSummary;
use super::{PointResult, Status};
use crate::sweep::html::charts::{err, legend, Chart, Mark};
use crate::sweep::html::{embed_titled, esc};
use plotters::prelude::*;
use std::fmt::Write;

const WIDTH: u32 = 820;
const HEIGHT: u32 = 560;
const FONT: &str = "sans-serif";

/// One colour per group (cycled beyond ten).
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// The ±10 % band's fill.
pub const BAND: RGBColor = RGBColor(225, 236, 246);

/// One mark: measured, predicted, its group's index, its hover title.
struct Dot {
    measured: f64,
    predicted: f64,
    group: usize,
    title: String,
}

fn group_key(p: &MeasuredPoint) -> (String, String, String, String) {
    (
        p.system.clone(),
        p.backend.clone(),
        p.model.clone(),
        p.mode.clone(),
    )
}

fn group_name(g: &GroupSummary) -> String {
    format!("{} {} {} {}", g.system, g.backend, g.model, g.mode)
}

/// Ticks of a log axis: 1, 2 and 5 times powers of ten within `lo..hi`.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut t = Vec::new();
    let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    for d in a..=b {
        for m in [1.0, 2.0, 5.0] {
            let v = m * 10f64.powi(d);
            if v >= lo && v <= hi {
                t.push(v);
            }
        }
    }
    t
}

fn tick(v: &f64) -> String {
    if *v >= 10.0 {
        format!("{v:.0}")
    } else if *v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// Predicted against measured for one metric.
fn scatter(dots: &[Dot], names: &[String], metric: &str) -> Result<Chart, String> {
    let mut svg = String::new();
    let mut marks = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let values = dots.iter().flat_map(|d| [d.measured, d.predicted]);
        let (lo, hi) = values
            .filter(|v| *v > 0.0 && v.is_finite())
            .fold((f64::INFINITY, 0.0f64), |(l, h), v| (l.min(v), h.max(v)));
        let (lo, hi) = if lo.is_finite() {
            (lo / 1.3, (hi * 1.3).max(lo * 2.0))
        } else {
            (1.0, 10.0)
        };
        let mut chart = ChartBuilder::on(&root)
            .margin(16)
            .x_label_area_size(46)
            .y_label_area_size(64)
            .build_cartesian_2d(
                (lo..hi).log_scale().with_key_points(log_ticks(lo, hi)),
                (lo..hi).log_scale().with_key_points(log_ticks(lo, hi)),
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(format!("measured {metric} (ms)"))
            .y_desc(format!("predicted {metric} (ms)"))
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .max_light_lines(1)
            .axis_desc_style((FONT, 15))
            .label_style((FONT, 13))
            .light_line_style(RGBColor(238, 238, 238))
            .draw()
            .map_err(err)?;
        let band = vec![
            (lo, lo * 0.9),
            (hi, hi * 0.9),
            (hi, hi * 1.1),
            (lo, lo * 1.1),
        ];
        chart
            .draw_series(std::iter::once(Polygon::new(band, BAND.filled())))
            .map_err(err)?
            .label("±10 %")
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 18, y + 5)], BAND.filled()));
        chart
            .draw_series(LineSeries::new(
                vec![(lo, lo), (hi, hi)],
                BLACK.stroke_width(1),
            ))
            .map_err(err)?
            .label("y = x")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], BLACK.stroke_width(1)));
        for (g, name) in names.iter().enumerate() {
            let color = PALETTE[g % PALETTE.len()];
            let pts: Vec<(f64, f64)> = dots
                .iter()
                .filter(|d| d.group == g)
                .map(|d| (d.measured, d.predicted))
                .collect();
            if pts.is_empty() {
                continue;
            }
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled())))
                .map_err(err)?
                .label(name.clone())
                .legend(move |(x, y)| Circle::new((x + 9, y), 4, color.filled()));
        }
        for d in dots {
            let (x, y) = chart.backend_coord(&(d.measured, d.predicted));
            marks.push(Mark {
                x,
                y,
                title: d.title.clone(),
            });
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft, 12)?;
        root.present().map_err(err)?;
    }
    Ok(Chart { svg, marks })
}

const STYLE: &str =
    "body{font-family:sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 16px}\
h1{font-size:1.6em}h2{font-size:1.2em;margin-top:32px;border-bottom:1px solid #ddd}\
.note{color:#666;font-size:.9em}\
.chart{position:relative;width:820px;height:560px;margin:8px 0}\
.chart svg{position:absolute;left:0;top:0}\
.mark{position:absolute;width:10px;height:10px;margin:-5px 0 0 -5px;border-radius:5px}\
.mark:hover{outline:2px solid #d62728}\
table{border-collapse:collapse;font-size:12px}th,td{border:1px solid #ddd;padding:2px 6px}\
th{background:#f3f3f3}td.n{text-align:right}";

fn fmt(v: Option<f64>, signed: bool) -> String {
    match v {
        None => "-".into(),
        Some(x) if signed => format!("{x:+.1}"),
        Some(x) => format!("{x:.1}"),
    }
}

/// The page.
pub fn page(points: &[MeasuredPoint], results: &[PointResult], groups: &[GroupSummary]) -> String {
    let names: Vec<String> = groups.iter().map(group_name).collect();
    let keys: Vec<(String, String, String, String)> = groups
        .iter()
        .map(|g| {
            (
                g.system.clone(),
                g.backend.clone(),
                g.model.clone(),
                g.mode.clone(),
            )
        })
        .collect();
    let dots = |measured: fn(&MeasuredPoint) -> Option<f64>,
                predicted: fn(&super::Predicted) -> f64,
                metric: &str|
     -> Vec<Dot> {
        results
            .iter()
            .filter_map(|r| {
                let p = &points[r.index];
                let m = measured(p).filter(|v| *v > 0.0)?;
                let y = r.predicted.as_ref().map(predicted).filter(|v| *v > 0.0)?;
                let group = keys.iter().position(|k| *k == group_key(p))?;
                Some(Dot {
                    measured: m,
                    predicted: y,
                    group,
                    title: {
                        let mut t = format!(
                            "{}: {metric} measured {m:.2} ms, predicted {y:.2} ms ({:+.1} %)",
                            p.id,
                            (y - m) / m * 100.0
                        );
                        for n in r.notes() {
                            t.push('\n');
                            t.push_str(n);
                        }
                        t
                    },
                })
            })
            .collect()
    };
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<title>dynosim validate</title>");
    let _ = writeln!(out, "<style>{STYLE}</style></head><body>");
    out.push_str("<h1>Predicted against measured</h1>\n");
    let ok = results.iter().filter(|r| r.status == Status::Ok).count();
    let _ = writeln!(
        out,
        "<p class=\"note\">{} points, {ok} simulated. Log axes; the line is y = x, the shaded band \
         ±10 %. Hover a point for its id and error.</p>",
        results.len()
    );
    for (metric, id, m, p) in [
        (
            "TTFT",
            "ttft",
            (|x: &MeasuredPoint| x.measured_ttft_ms) as fn(&MeasuredPoint) -> Option<f64>,
            (|x: &super::Predicted| x.ttft_ms) as fn(&super::Predicted) -> f64,
        ),
        (
            "TPOT",
            "tpot",
            |x: &MeasuredPoint| x.measured_tpot_ms,
            |x: &super::Predicted| x.tpot_ms,
        ),
    ] {
        let _ = writeln!(out, "<h2>{metric}</h2>");
        match scatter(&dots(m, p, metric), &names, metric) {
            Ok(chart) => embed_titled(&mut out, &chart, id, usize::MAX),
            Err(e) => {
                let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(&e));
            }
        }
    }
    groups_table(&mut out, groups);
    not_simulated(&mut out, points, results);
    out.push_str("</body></html>\n");
    out
}

fn groups_table(out: &mut String, groups: &[GroupSummary]) {
    out.push_str("<h2>Errors per group (%)</h2>\n<table id=\"groups\"><tr><th>group</th><th>points</th><th>ok</th>\
<th>TTFT mean abs</th><th>TTFT median abs</th><th>TTFT signed median</th>\
<th>TPOT mean abs</th><th>TPOT median abs</th><th>TPOT signed median</th></tr>\n");
    for (i, g) in groups.iter().enumerate() {
        let c = PALETTE[i % PALETTE.len()];
        let _ = writeln!(
            out,
            "<tr><td><span style=\"color:rgb({},{},{})\">●</span> {}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            c.0,
            c.1,
            c.2,
            esc(&group_name(g)),
            g.points,
            g.ok,
            fmt(g.ttft.mean_abs_pct, false),
            fmt(g.ttft.median_abs_pct, false),
            fmt(g.ttft.median_signed_pct, true),
            fmt(g.tpot.mean_abs_pct, false),
            fmt(g.tpot.median_abs_pct, false),
            fmt(g.tpot.median_signed_pct, true),
        );
    }
    out.push_str("</table>\n");
}

fn not_simulated(out: &mut String, points: &[MeasuredPoint], results: &[PointResult]) {
    let bad: Vec<&PointResult> = results.iter().filter(|r| r.status != Status::Ok).collect();
    if bad.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<h2>Not simulated ({})</h2>\n<table id=\"not-simulated\"><tr><th>id</th><th>status</th><th>reason</th></tr>",
        bad.len()
    );
    for r in bad {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&points[r.index].id),
            r.status.name(),
            esc(&r.reason)
        );
    }
    out.push_str("</table>\n");
}
