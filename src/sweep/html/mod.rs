//! `report.html`: one self-contained page (no script, no network, no external font) that shows
//! what a sweep asked and what it found — the question (spec name, comments, workload, bounds),
//! the Pareto chart, capacity bars for a capacity search, latency CDFs of the top points and the
//! top of the leaderboard. A pure function of the ranked rows and the spec, like the CSV, so the
//! page is byte-identical across `-j`, runs and merges.

pub(crate) mod charts;

use super::columns::{ordered_metrics, short_number, short_value, spec_key_metrics};
use super::leaderboard::{metric_columns, pareto_front, Row};
use super::record::{PointRecord, Status};
use super::spec::{Objective, Spec};
use super::values::value_text;
use charts::{Bar, Chart, Curve, ScatterPoint, StoppedPoint};
use serde_json::Value;
use std::fmt::Write;

/// File name in the output folder.
pub const HTML_FILE: &str = "report.html";

/// Rows in the page's leaderboard table.
pub const TABLE_ROWS: usize = 50;

/// Points whose latency distributions are drawn.
pub const CDF_POINTS: usize = 5;

/// Points labelled with their id on the Pareto chart (beyond this, only the front is).
const LABEL_ALL_UP_TO: usize = 40;

/// Marks given a hover title (beyond this, the page would grow without helping anyone).
const MAX_TITLED_MARKS: usize = 5000;

/// What the page says about the sweep besides its rows.
pub struct Page<'a> {
    pub spec: &'a Spec,
    pub points_total: u64,
    pub shard: Option<(u32, u32)>,
    pub interrupted: bool,
    /// Points a partial merge lacks.
    pub missing: u64,
}

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// `point 4: num_workers=8 router_mode=kv_router`.
pub fn point_title(r: &PointRecord, params: &[String]) -> String {
    let mut s = format!("point {}", r.point);
    let p: Vec<String> = params
        .iter()
        .filter_map(|c| {
            r.parameters
                .get(c)
                .map(|v| format!("{c}={}", value_text(v)))
        })
        .collect();
    if !p.is_empty() {
        s.push_str(": ");
        s.push_str(&p.join(" "));
    }
    s
}

const STYLE: &str = "body{font-family:sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 16px}\
h1{font-size:1.6em;margin-bottom:4px}h2{font-size:1.2em;margin-top:32px;border-bottom:1px solid #ddd}\
.comment{color:#555;margin:2px 0}.note{color:#666;font-size:.9em}\
dl{display:grid;grid-template-columns:max-content auto;gap:2px 16px}dt{font-weight:bold}dd{margin:0}\
.chart{position:relative;width:820px;height:460px;margin:8px 0}\
.chart svg{position:absolute;left:0;top:0}\
.mark{position:absolute;width:12px;height:12px;margin:-6px 0 0 -6px;border-radius:6px}\
.mark:hover{outline:2px solid #d62728}\
.table{overflow-x:auto;max-width:100%}\
table{border-collapse:collapse;font-size:12px}th,td{border:1px solid #ddd;padding:2px 6px;white-space:nowrap}\
th{background:#f3f3f3;position:sticky;top:0}td.n{text-align:right}td.reason{white-space:normal;min-width:260px;max-width:420px}\
tr.infeasible td{color:#777}tr.front td:nth-child(3){font-weight:bold}";

/// The whole page.
pub fn html(rows: &[Row], params: &[String], page: &Page) -> String {
    let spec = page.spec;
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>dynosim sweep: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        esc(&spec.name)
    );
    question(&mut out, rows, params, page);
    pareto_section(&mut out, rows, params, &spec.pareto);
    stopped_section(&mut out, rows, params);
    capacity_section(&mut out, rows, params, spec);
    latency_section(&mut out, rows, params);
    table_section(&mut out, rows, params, spec);
    out.push_str("</body>\n</html>\n");
    out
}

/// The spec's comment lines (`# ...`), without the `#`.
fn comment_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('#'))
        .map(|l| l.trim_start_matches('#').trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

fn bound_text(metric: &str, min: Option<f64>, max: Option<f64>) -> String {
    match (min, max) {
        (Some(a), Some(b)) => format!("{a} ≤ {metric} ≤ {b}"),
        (Some(a), None) => format!("{metric} ≥ {a}"),
        (None, Some(b)) => format!("{metric} ≤ {b}"),
        (None, None) => metric.to_string(),
    }
}

fn question(out: &mut String, rows: &[Row], params: &[String], page: &Page) {
    let spec = page.spec;
    let _ = writeln!(out, "<h1>{}</h1>", esc(&spec.name));
    for c in comment_lines(&spec.text) {
        let _ = writeln!(out, "<p class=\"comment\">{}</p>", esc(&c));
    }
    out.push_str("<h2>The question</h2>\n<dl>\n");
    let mut item = |k: &str, v: String| {
        let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(&v));
    };
    let workload: Vec<String> = spec
        .workload
        .iter()
        .map(|(k, v)| format!("{k}: {}", value_text(v)))
        .collect();
    item("workload", workload.join(", "));
    // Values in order of first appearance by point id: the spec's order along each axis.
    let mut by_point: Vec<&PointRecord> = rows.iter().map(|r| r.rec).collect();
    by_point.sort_by_key(|r| r.point);
    let mut axes: Vec<String> = Vec::new();
    for c in params {
        let mut values: Vec<String> = Vec::new();
        for r in &by_point {
            if let Some(v) = r.parameters.get(c) {
                let t = value_text(v);
                if !values.contains(&t) {
                    values.push(t);
                }
            }
        }
        axes.push(format!("{c} ∈ {{{}}}", values.join(", ")));
    }
    if !axes.is_empty() {
        item("grid", axes.join("; "));
    }
    if let Some(g) = spec.max_gpus {
        item("max_gpus", g.to_string());
    }
    if let Some(prices) = &spec.cost {
        item("GPU-hour prices (USD)", prices_text(prices));
    }
    let sla = &spec.sla;
    let slo: Vec<String> = [
        ("ttft_ms", sla.ttft_ms),
        ("itl_ms", sla.itl_ms),
        ("e2e_ms", sla.e2e_ms),
    ]
    .iter()
    .filter_map(|(k, v)| v.map(|v| format!("{k} ≤ {v}")))
    .collect();
    if !slo.is_empty() {
        item("slo (goodput)", slo.join(", "));
    }
    let require: Vec<String> = spec
        .require
        .iter()
        .map(|b| bound_text(&b.metric, b.min, b.max))
        .collect();
    item(
        "require",
        if require.is_empty() {
            "nothing (every point that ran is feasible)".into()
        } else {
            require.join(", ")
        },
    );
    let objectives = |o: &[Objective]| {
        o.iter()
            .map(|o| o.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(c) = &spec.search {
        item(
            "capacity search",
            format!(
                "the highest {} in [{}, {}] (precision {}) at which each point meets every \
                 require bound",
                c.knob, c.low, c.high, c.precision
            ),
        );
    }
    item("rank_by", objectives(&spec.rank_by));
    item("pareto", objectives(&spec.pareto));
    let count = |s: Status| rows.iter().filter(|r| r.rec.status == s).count();
    let mut points = format!(
        "{} of {} in this folder: {} ok, {} infeasible, {} skipped, {} invalid, {} failed",
        rows.len(),
        page.points_total,
        count(Status::Ok),
        count(Status::Infeasible),
        count(Status::Skipped),
        count(Status::Invalid),
        count(Status::Failed)
    );
    if spec.search.is_some() {
        let _ = write!(
            points,
            ", {} below_range, {} above_range",
            count(Status::BelowRange),
            count(Status::AboveRange)
        );
    }
    if count(Status::Overloaded) + count(Status::Stalled) > 0 {
        let _ = write!(
            points,
            ", {} overloaded, {} stalled",
            count(Status::Overloaded),
            count(Status::Stalled)
        );
    }
    if let Some((k, n)) = page.shard {
        let _ = write!(points, " (shard {k}/{n})");
    }
    if page.interrupted {
        points.push_str(" (interrupted: finish with --resume)");
    }
    if page.missing > 0 {
        let _ = write!(points, " ({} missing from a partial merge)", page.missing);
    }
    item("points", points);
    out.push_str("</dl>\n");
}

/// `h100_sxm 2.25, h200_sxm 3.5, any other GPU 2`, or `every GPU 2.5`.
fn prices_text(p: &crate::report::cost::GpuPrices) -> String {
    let mut parts: Vec<String> = p
        .systems
        .iter()
        .map(|(s, usd)| format!("{s} {usd}"))
        .collect();
    if let Some(d) = p.default {
        parts.push(if parts.is_empty() {
            format!("every GPU {d}")
        } else {
            format!("any other GPU {d}")
        });
    }
    parts.join(", ")
}

/// The chart SVG with an absolutely placed, titled box over each mark (the first
/// [`MAX_TITLED_MARKS`]).
fn embed(out: &mut String, chart: &Chart, id: &str) {
    embed_titled(out, chart, id, MAX_TITLED_MARKS);
}

/// The chart SVG with an absolutely placed, titled box over each of its first `limit` marks
/// (also `validation.html`'s).
pub(crate) fn embed_titled(out: &mut String, chart: &Chart, id: &str, limit: usize) {
    let _ = writeln!(out, "<div class=\"chart\" id=\"{id}\">");
    out.push_str(&chart.svg);
    out.push('\n');
    for m in chart.marks.iter().take(limit) {
        let _ = writeln!(
            out,
            "<span class=\"mark\" style=\"left:{}px;top:{}px\" title=\"{}\"></span>",
            m.x,
            m.y,
            esc(&m.title)
        );
    }
    out.push_str("</div>\n");
}

fn chart_error(out: &mut String, e: &str) {
    let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(e));
}

fn pareto_section(out: &mut String, rows: &[Row], params: &[String], pareto: &[Objective]) {
    out.push_str("<h2>Pareto chart</h2>\n");
    let (y_obj, x_obj) = match pareto {
        [y, x, ..] => (y, x),
        _ => {
            out.push_str("<p class=\"note\">The spec's <code>pareto</code> names fewer than two objectives: no chart.</p>\n");
            return;
        }
    };
    let ran: Vec<&PointRecord> = rows
        .iter()
        .map(|r| r.rec)
        .filter(|r| r.status.ran())
        .filter(|r| r.metric(&x_obj.metric).is_some() && r.metric(&y_obj.metric).is_some())
        .collect();
    if ran.is_empty() {
        out.push_str("<p class=\"note\">No point has both objectives: no chart.</p>\n");
        return;
    }
    let feasible: Vec<&PointRecord> = ran
        .iter()
        .copied()
        .filter(|r| r.status == Status::Ok)
        .collect();
    let on_front = pareto_front(&feasible, &[y_obj.clone(), x_obj.clone()]);
    let front_ids: Vec<u64> = feasible
        .iter()
        .zip(&on_front)
        .filter(|(_, on)| **on)
        .map(|(r, _)| r.point)
        .collect();
    let points: Vec<ScatterPoint> = ran
        .iter()
        .map(|r| ScatterPoint {
            x: r.metric(&x_obj.metric).unwrap_or(0.0),
            y: r.metric(&y_obj.metric).unwrap_or(0.0),
            feasible: r.status == Status::Ok,
            front: front_ids.contains(&r.point),
            label: format!("#{}", r.point),
            title: format!(
                "{} ({}){}",
                point_title(r, params),
                r.status.as_str(),
                if front_ids.contains(&r.point) {
                    ", on the front"
                } else {
                    ""
                }
            ),
        })
        .collect();
    let _ = writeln!(
        out,
        "<p class=\"note\">Every point that ran: <b>{}</b> ({}) against <b>{}</b> ({}). \
         Blue dots are feasible points, grey crosses infeasible ones; the red line joins the \
         feasible points no other feasible point beats on both ({} of {}). Hover a mark for its \
         point id and parameters.</p>",
        esc(&y_obj.metric),
        if y_obj.maximize {
            "higher is better"
        } else {
            "lower is better"
        },
        esc(&x_obj.metric),
        if x_obj.maximize {
            "higher is better"
        } else {
            "lower is better"
        },
        front_ids.len(),
        feasible.len()
    );
    match charts::pareto(
        &points,
        &x_obj.metric,
        &y_obj.metric,
        points.len() <= LABEL_ALL_UP_TO,
    ) {
        Ok(c) => embed(out, &c, "pareto"),
        Err(e) => chart_error(out, &e),
    }
}

/// Points stopped early on a `require` bound: they have no report to place on the Pareto
/// chart, so what was proven of the missed metric is drawn on its own chart below it (hollow
/// marks), with when the run stopped. Nothing when no point stopped early.
fn stopped_section(out: &mut String, rows: &[Row], params: &[String]) {
    let points: Vec<StoppedPoint> = rows
        .iter()
        .filter_map(|r| {
            let on = r.rec.stopped_on.as_ref()?;
            let (proven, at) = (on.proven_min?, on.at_ms?);
            (on.max > 0.0).then(|| StoppedPoint {
                at_s: at / 1000.0,
                proven_percent: proven / on.max * 100.0,
                label: format!("#{} {}", r.rec.point, on.key),
                title: format!(
                    "{}: stopped early at t={} s, {} >= {} ms (bound {} ms)",
                    point_title(r.rec, params),
                    short_number(at / 1000.0),
                    on.key,
                    short_number(proven),
                    short_number(on.max)
                ),
            })
        })
        .collect();
    if points.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<h3>Stopped early</h3>\n<p class=\"note\">{} point(s) certainly missed a \
         <code>require</code> bound and were stopped before the end of the run, so they have \
         no throughput to place on the Pareto chart. Each hollow mark is what the simulated \
         past proves of the missed metric (it is at least this, in percent of its bound) and \
         when the run stopped: a point stopped late in the run missed by less. Their rows in \
         <code>leaderboard.csv</code> carry <code>stopped_metric</code>, \
         <code>stopped_proven_min_ms</code> and <code>stopped_at_ms</code>; \
         <code>early_stop: false</code> in the spec (or <code>--no-early-stop</code>) runs them \
         to the end for full metrics.</p>",
        points.len()
    );
    match charts::stopped(&points) {
        Ok(c) => embed(out, &c, "stopped"),
        Err(e) => chart_error(out, &e),
    }
}

/// The report key a capacity search writes (the highest load that met the bounds) and the upper
/// end of its final bracket.
pub const CAPACITY_METRIC: &str = "capacity";
pub const CAPACITY_HIGH_METRIC: &str = "capacity_bracket_high";

/// Bars of capacity per GPU, one per deployment that has a `capacity` (a capacity search's
/// result); nothing for a plain grid.
fn capacity_section(out: &mut String, rows: &[Row], params: &[String], spec: &Spec) {
    let with: Vec<&Row> = rows
        .iter()
        .filter(|r| r.rec.metric(CAPACITY_METRIC).is_some())
        .take(TABLE_ROWS)
        .collect();
    if let Some(search) = &spec.search {
        out.push_str("<h2>Capacity per GPU</h2>\n");
        capacity_counts(out, rows, search);
    } else if with.is_empty() {
        return;
    } else {
        out.push_str("<h2>Capacity per GPU</h2>\n");
    }
    if with.is_empty() {
        return;
    }
    let per_gpu = |r: &PointRecord, m: &str| {
        let g = r.gpus.unwrap_or(1).max(1) as f64;
        r.metric(m).map(|v| v / g)
    };
    let bars: Vec<Bar> = with
        .iter()
        .map(|r| Bar {
            label: format!("#{}", r.rec.point),
            title: format!(
                "{}: capacity {} on {} GPUs",
                point_title(r.rec, params),
                short_number(r.rec.metric(CAPACITY_METRIC).unwrap_or(0.0)),
                r.rec.gpus.unwrap_or(0)
            ),
            value: per_gpu(r.rec, CAPACITY_METRIC).unwrap_or(0.0),
            high: per_gpu(r.rec, CAPACITY_HIGH_METRIC),
        })
        .collect();
    out.push_str(
        "<p class=\"note\">The highest load each deployment served within the bounds, divided \
         by its GPUs, in leaderboard order; a red line above a bar reaches the lowest load \
         found to fail (the search's bracket).</p>\n",
    );
    match charts::bars(&bars, "capacity per GPU") {
        Ok(c) => embed(out, &c, "capacity"),
        Err(e) => chart_error(out, &e),
    }
}

/// What a capacity search found, in words: the knob and its range, how many points ended in
/// range, `below_range` and `above_range`, and why there is no bar when none has a capacity.
fn capacity_counts(out: &mut String, rows: &[Row], search: &super::spec::CapacitySearch) {
    let count = |s: Status| rows.iter().filter(|r| r.rec.status == s).count();
    let (ok, below, above) = (
        count(Status::Ok),
        count(Status::BelowRange),
        count(Status::AboveRange),
    );
    let _ = writeln!(
        out,
        "<p class=\"note\">The search varied <code>{}</code> from {} to {}: {ok} point(s) found \
         their capacity inside the range, {below} <code>below_range</code> (they miss a \
         <code>require</code> bound even at {}), {above} <code>above_range</code> (they meet \
         every bound even at {}: their capacity is at least that).</p>",
        esc(&search.knob),
        search.low,
        search.high,
        search.low,
        search.high
    );
    if ok + above > 0 || below == 0 {
        return;
    }
    // Every point that ran misses a bound at the low end: say which bounds, not an empty chart.
    let mut missed: Vec<(String, usize)> = Vec::new();
    for r in rows.iter().filter(|r| r.rec.status == Status::BelowRange) {
        // "misses a bound even at low 0.25: p99_ttft_ms 2500 > max 2000"
        let reason = r.rec.reason.as_deref().unwrap_or("");
        let reason = reason.split_once(": ").map_or(reason, |(_, why)| why);
        let metric = reason.split_whitespace().next().unwrap_or("?").to_string();
        match missed.iter_mut().find(|(m, _)| *m == metric) {
            Some((_, n)) => *n += 1,
            None => missed.push((metric, 1)),
        }
    }
    let missed: Vec<String> = missed
        .iter()
        .map(|(m, n)| format!("<code>{}</code> ({n})", esc(m)))
        .collect();
    let _ = writeln!(
        out,
        "<p class=\"note\"><b>No deployment meets the bounds anywhere in the range.</b> Every \
         point that ran is <code>below_range</code>: even at <code>{}</code> = {} it misses a \
         bound (the bound each misses, with the number of points: {}; each row's reason \
         below says by how much). So there is no capacity to draw. Lower <code>low</code>, relax the \
         <code>require</code> bounds, or add workers or GPUs to the grid.</p>",
        esc(&search.knob),
        search.low,
        missed.join(", ")
    );
}

/// The CDF of a latency from the quantiles the report keeps: min, median, p75, p90, p95, p99,
/// max.
fn quantile_curve(r: &PointRecord, metric: &str) -> Option<Vec<(f64, f64)>> {
    let q = [
        ("min", 0.0),
        ("median", 0.5),
        ("p75", 0.75),
        ("p90", 0.9),
        ("p95", 0.95),
        ("p99", 0.99),
        ("max", 1.0),
    ];
    q.iter()
        .map(|(p, f)| r.metric(&format!("{p}_{metric}")).map(|v| (v, *f)))
        .collect()
}

fn latency_section(out: &mut String, rows: &[Row], params: &[String]) {
    let top: Vec<&Row> = rows
        .iter()
        .filter(|r| r.rec.status.ran())
        .take(CDF_POINTS)
        .collect();
    if top.is_empty() {
        return;
    }
    out.push_str("<h2>Latency distributions of the top points</h2>\n");
    let _ = writeln!(
        out,
        "<p class=\"note\">For the {} best-ranked points, the fraction of requests whose latency \
         is at most x (x on a log scale), drawn through the quantiles each report keeps (min, \
         median, p75, p90, p95, p99, max).</p>",
        top.len()
    );
    for (metric, desc, id) in [
        ("ttft_ms", "time to first token (ms)", "cdf-ttft"),
        ("itl_ms", "inter-token latency (ms)", "cdf-itl"),
    ] {
        let curves: Vec<Curve> = top
            .iter()
            .filter_map(|r| {
                quantile_curve(r.rec, metric).map(|points| Curve {
                    name: format!(
                        "#{} (rank {})",
                        r.rec.point,
                        r.rank.map(|x| x.to_string()).unwrap_or_default()
                    ),
                    title: point_title(r.rec, params),
                    points,
                })
            })
            .collect();
        let _ = writeln!(out, "<h3>{}</h3>", esc(desc));
        if curves.is_empty() {
            chart_error(out, "no quantiles in the reports");
            continue;
        }
        match charts::cdf(&curves, desc) {
            Ok(c) => embed(out, &c, id),
            Err(e) => chart_error(out, &e),
        }
    }
}

fn table_section(out: &mut String, rows: &[Row], params: &[String], spec: &Spec) {
    let shown: Vec<&Row> = rows.iter().take(TABLE_ROWS).collect();
    let _ = writeln!(
        out,
        "<h2>Leaderboard</h2>\n<p class=\"note\">The first {} of {} rows of \
         <code>leaderboard.csv</code>, key metrics first; bold status = on the Pareto front.</p>",
        shown.len(),
        rows.len()
    );
    let key = spec_key_metrics(spec);
    let metrics = ordered_metrics(&key, &metric_columns(rows));
    out.push_str("<div class=\"table\"><table>\n<thead><tr>");
    let mut header: Vec<&str> = vec!["rank", "point", "status", "reason"];
    header.extend(params.iter().map(String::as_str));
    header.push("gpus");
    header.extend(metrics.iter().map(String::as_str));
    for h in &header {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in shown {
        let r = row.rec;
        let class = match (r.status, row.pareto) {
            (_, Some(true)) => "front",
            (Status::Infeasible | Status::Overloaded | Status::Stalled, _) => "infeasible",
            _ => "",
        };
        let _ = write!(
            out,
            "<tr class=\"{class}\" id=\"point-{}\"><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"reason\">{}</td>",
            r.point,
            row.rank.map(|x| x.to_string()).unwrap_or_default(),
            r.point,
            r.status.as_str(),
            esc(r.reason.as_deref().unwrap_or(""))
        );
        for c in params {
            let v = r.parameters.get(c);
            let numeric = matches!(v, Some(Value::Number(_)));
            let _ = write!(
                out,
                "<td{}>{}</td>",
                if numeric { " class=\"n\"" } else { "" },
                esc(&v.map(value_text).unwrap_or_default())
            );
        }
        let _ = write!(
            out,
            "<td class=\"n\">{}</td>",
            r.gpus.map(|g| g.to_string()).unwrap_or_default()
        );
        for m in &metrics {
            let v = r.report.as_ref().and_then(|rep| rep.get(m));
            let _ = write!(out, "<td class=\"n\">{}</td>", esc(&short_value(v)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
}

#[cfg(test)]
mod tests;
