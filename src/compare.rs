//! `dynosim compare A B`: two `--report-json` reports side by side (key metrics, B/A ratio,
//! change in percent), or two sweep output folders with their points matched by configuration
//! hash (per-metric comparison of the matched points, and the points only one side has).
//! Anything else is refused as bad input (exit 2).

use crate::error::InputError;
use crate::sweep::columns::{key_metrics, short_number};
use crate::sweep::folder::{is_output_folder, read_folder, Folder};
use crate::sweep::html::point_title;
use crate::sweep::record::PointRecord;
use crate::sweep::SweepError;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

/// Metrics of a report compared by default, in this order (those present in either side).
pub const REPORT_METRICS: &[&str] = &[
    "completed_requests",
    "duration_ms",
    "request_throughput_rps",
    "output_throughput_tok_s",
    "total_throughput_tok_s",
    "goodput_request_throughput_rps",
    "goodput_output_throughput_tok_s",
    "mean_ttft_ms",
    "p99_ttft_ms",
    "mean_itl_ms",
    "p99_itl_ms",
    "mean_e2e_latency_ms",
    "p99_e2e_latency_ms",
    "mean_output_token_throughput_per_user",
    "prefix_cache_reused_ratio",
    // Only in reports priced with --gpu-hour-usd.
    "usd_per_hour",
    "usd_per_million_output_tokens",
    "usd_per_million_requests",
];

/// Matched points shown per metric of a folder comparison.
const MAX_POINT_ROWS: usize = 50;

/// Points listed as "only in A/B".
const MAX_ONLY_ROWS: usize = 20;

enum Side {
    Report(Map<String, Value>),
    Folder(Box<Folder>),
}

fn bad(msg: String) -> InputError {
    InputError::new(msg)
}

fn read_side(p: &Path) -> Result<Side, InputError> {
    if p.is_dir() {
        if !is_output_folder(p) {
            return Err(bad(format!(
                "{}: a folder, but not a sweep output folder (no spec.yaml and sweep.json)",
                p.display()
            )));
        }
        return match read_folder(p) {
            Ok(f) => Ok(Side::Folder(Box::new(f))),
            Err(SweepError::Input(e)) => Err(e),
            Err(SweepError::Io(e)) => Err(bad(e)),
        };
    }
    let text = std::fs::read_to_string(p)
        .map_err(|e| bad(format!("{}: cannot read: {e}", p.display())))?;
    let not_report = || {
        bad(format!(
            "{}: not a report (a --report-json file of `dynosim run` or DynoSim) nor a sweep \
             output folder",
            p.display()
        ))
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(m))
            if m.contains_key("completed_requests") && m.contains_key("num_requests") =>
        {
            Ok(Side::Report(m))
        }
        _ => Err(not_report()),
    }
}

/// Whether a higher value of `metric` is better (`None`: neither, e.g. a count or a duration).
fn higher_is_better(metric: &str) -> Option<bool> {
    if metric.ends_with("_ms") || metric.starts_with("usd_per_") {
        Some(false)
    } else if metric.contains("throughput")
        || metric.ends_with("_rps")
        || metric.ends_with("reused_ratio")
        || metric.starts_with("goodput_")
    {
        Some(true)
    } else {
        None
    }
}

/// `B/A` and the change in percent, with "better"/"worse" where the metric has a direction.
fn ratio_cells(metric: &str, a: Option<f64>, b: Option<f64>) -> [String; 2] {
    match (a, b) {
        (Some(a), Some(b)) if a != 0.0 => {
            let r = b / a;
            let pct = (r - 1.0) * 100.0;
            let verdict = match higher_is_better(metric) {
                _ if pct.abs() < 0.05 => "",
                Some(true) if b > a => " better",
                Some(false) if b < a => " better",
                Some(_) => " worse",
                None => "",
            };
            [format!("{r:.3}"), format!("{pct:+.1}%{verdict}")]
        }
        (Some(a), Some(b)) if a == b => ["1.000".into(), "+0.0%".into()],
        _ => ["-".into(), "-".into()],
    }
}

fn num(v: Option<f64>) -> String {
    v.map(short_number).unwrap_or_else(|| "-".into())
}

/// A plain text table: first column left-aligned, the others right-aligned.
fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            let pad = widths[c].saturating_sub(cell.chars().count());
            if c == 0 {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str("  ");
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn compare_reports(a: &Map<String, Value>, b: &Map<String, Value>, an: &Path, bn: &Path) -> String {
    let mut rows = vec![vec![
        "metric".to_string(),
        "A".into(),
        "B".into(),
        "B/A".into(),
        "change".into(),
    ]];
    for m in REPORT_METRICS {
        let (x, y) = (
            a.get(*m).and_then(Value::as_f64),
            b.get(*m).and_then(Value::as_f64),
        );
        if x.is_none() && y.is_none() {
            continue;
        }
        let [r, c] = ratio_cells(m, x, y);
        rows.push(vec![m.to_string(), num(x), num(y), r, c]);
    }
    format!(
        "A: {}\nB: {}\n\n{}",
        an.display(),
        bn.display(),
        table(&rows)
    )
}

/// Pairs the points of two folders by configuration hash (in point order on both sides when a
/// hash repeats); returns the pairs and the points only A or only B has.
fn match_points<'a>(
    a: &'a [PointRecord],
    b: &'a [PointRecord],
) -> (
    Vec<(&'a PointRecord, &'a PointRecord)>,
    Vec<&'a PointRecord>,
    Vec<&'a PointRecord>,
) {
    pair_by(a, b, |r| Some(r.hash.clone()))
}

/// Pairs points with the same `key` (in point order on both sides when a key repeats); points
/// without a key are paired with nothing.
#[allow(clippy::type_complexity)]
fn pair_by<'a>(
    a: &'a [PointRecord],
    b: &'a [PointRecord],
    key: impl Fn(&PointRecord) -> Option<String>,
) -> (
    Vec<(&'a PointRecord, &'a PointRecord)>,
    Vec<&'a PointRecord>,
    Vec<&'a PointRecord>,
) {
    let mut by_key: BTreeMap<String, Vec<&PointRecord>> = BTreeMap::new();
    let mut bs: Vec<&PointRecord> = b.iter().collect();
    bs.sort_by_key(|r| r.point);
    let mut only_b = Vec::new();
    for r in bs {
        match key(r) {
            Some(k) => by_key.entry(k).or_default().push(r),
            None => only_b.push(r),
        }
    }
    for v in by_key.values_mut() {
        v.reverse();
    }
    let mut a_sorted: Vec<&PointRecord> = a.iter().collect();
    a_sorted.sort_by_key(|r| r.point);
    let mut pairs = Vec::new();
    let mut only_a = Vec::new();
    for r in a_sorted {
        match key(r).and_then(|k| by_key.get_mut(&k)?.pop()) {
            Some(m) => pairs.push((r, m)),
            None => only_a.push(r),
        }
    }
    only_b.extend(by_key.into_values().flatten());
    only_b.sort_by_key(|r| r.point);
    (pairs, only_a, only_b)
}

/// The grid parameters both specs set (in A's column order): what points are paired by when no
/// configuration is the same in both.
fn shared_parameters(a: &Folder, b: &Folder) -> Vec<String> {
    let in_b = b.spec.param_columns();
    a.spec
        .param_columns()
        .into_iter()
        .filter(|c| in_b.contains(c))
        .collect()
}

/// A point's values of `params`, as one key (none when it sets none of them).
fn parameter_key(r: &PointRecord, params: &[String]) -> Option<String> {
    let values: Vec<String> = params
        .iter()
        .map(|c| {
            r.parameters
                .get(c)
                .map(Value::to_string)
                .unwrap_or_default()
        })
        .collect();
    values
        .iter()
        .any(|v| !v.is_empty())
        .then(|| values.join("\u{1f}"))
}

/// Where two specs differ outside their grids: `workload.arrival_speedup_ratio 2 -> 4`, ...
fn spec_differences(a: &Folder, b: &Folder) -> Vec<String> {
    let mut out = Vec::new();
    let (x, y) = (&a.spec, &b.spec);
    let sections = [
        ("workload", &x.workload, &y.workload),
        ("engine", &x.engine, &y.engine),
        ("prefill_engine", &x.prefill_engine, &y.prefill_engine),
        ("decode_engine", &x.decode_engine, &y.decode_engine),
        ("router", &x.router, &y.router),
    ];
    for (name, ma, mb) in sections {
        let mut keys: Vec<&String> = ma.keys().chain(mb.keys()).collect();
        keys.sort();
        keys.dedup();
        for k in keys {
            let (va, vb) = (ma.get(k), mb.get(k));
            if va != vb {
                let text = |v: Option<&Value>| v.map(Value::to_string).unwrap_or("(unset)".into());
                out.push(format!("{name}.{k} {} -> {}", text(va), text(vb)));
            }
        }
    }
    let plain = [
        ("seed", x.seed.to_string(), y.seed.to_string()),
        ("mode", format!("{:?}", x.mode), format!("{:?}", y.mode)),
        (
            "router_mode",
            format!("{:?}", x.router_mode),
            format!("{:?}", y.router_mode),
        ),
        ("slo", format!("{:?}", x.sla), format!("{:?}", y.sla)),
    ];
    for (name, va, vb) in plain {
        if va != vb {
            out.push(format!("{name} differs"));
        }
    }
    if x.axes.len() != y.axes.len() || x.param_columns() != y.param_columns() {
        out.push("grid differs".into());
    }
    out
}

fn compare_folders(a: &Folder, b: &Folder) -> String {
    let (mut pairs, mut only_a, mut only_b) = match_points(&a.records, &b.records);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "A: {} ({}, {} points)\nB: {} ({}, {} points)",
        a.dir.display(),
        a.spec.name,
        a.records.len(),
        b.dir.display(),
        b.spec.name,
        b.records.len(),
    );
    let shared = shared_parameters(a, b);
    let by_parameters = pairs.is_empty() && !shared.is_empty();
    if by_parameters {
        // No configuration is the same in both (another load, trace or engine setting): the
        // points that set the same grid parameters are the ones to compare.
        (pairs, only_a, only_b) = pair_by(&a.records, &b.records, |r| parameter_key(r, &shared));
        let diff = spec_differences(a, b);
        let _ = writeln!(
            out,
            "pairing: by grid parameters ({}), as no point has the same configuration in both{}\n\
             {} points paired, {} only in A, {} only in B",
            shared.join(", "),
            if diff.is_empty() {
                String::new()
            } else {
                format!(" (the specs differ: {})", diff.join("; "))
            },
            pairs.len(),
            only_a.len(),
            only_b.len()
        );
    } else {
        let _ = writeln!(
            out,
            "pairing: by configuration hash (the same resolved configuration and workload)\n\
             {} points in both (same configuration hash), {} only in A, {} only in B",
            pairs.len(),
            only_a.len(),
            only_b.len()
        );
    }
    let params_a = if by_parameters {
        shared.clone()
    } else {
        a.spec.param_columns()
    };
    let mut metrics = key_metrics(&a.spec.rank_by, &a.spec.require, &a.spec.pareto);
    for m in key_metrics(&b.spec.rank_by, &b.spec.require, &b.spec.pareto) {
        if !metrics.contains(&m) {
            metrics.push(m);
        }
    }
    for m in &metrics {
        let both: Vec<(f64, f64)> = pairs
            .iter()
            .filter_map(|(x, y)| Some((x.metric(m)?, y.metric(m)?)))
            .filter(|(x, _)| *x != 0.0)
            .collect();
        let _ = write!(out, "\n{m}");
        if !both.is_empty() {
            // The geometric mean of B/A: the typical factor, not dragged by one outlier.
            let logs: Vec<f64> = both
                .iter()
                .map(|(x, y)| (y / x).ln())
                .filter(|l| l.is_finite())
                .collect();
            if !logs.is_empty() {
                let g = (logs.iter().sum::<f64>() / logs.len() as f64).exp();
                let _ = write!(
                    out,
                    ": B/A {g:.3} (geometric mean over {} points)",
                    logs.len()
                );
            }
        }
        out.push('\n');
        let mut rows = vec![vec![
            "point A".to_string(),
            "point B".into(),
            "status".into(),
            "A".into(),
            "B".into(),
            "B-A".into(),
            "B/A".into(),
            "change".into(),
            "parameters (A)".into(),
        ]];
        for (x, y) in pairs.iter().take(MAX_POINT_ROWS) {
            let status = if x.status == y.status {
                x.status.as_str().to_string()
            } else {
                format!("{} -> {}", x.status.as_str(), y.status.as_str())
            };
            let (va, vb) = (x.metric(m), y.metric(m));
            let [r, c] = ratio_cells(m, va, vb);
            let title = point_title(x, &params_a);
            let params = title.split_once(": ").map(|t| t.1).unwrap_or("");
            rows.push(vec![
                x.point.to_string(),
                y.point.to_string(),
                status,
                num(va),
                num(vb),
                match (va, vb) {
                    (Some(x), Some(y)) => {
                        let d = y - x;
                        format!("{}{}", if d > 0.0 { "+" } else { "" }, short_number(d))
                    }
                    _ => "-".into(),
                },
                r,
                c,
                params.to_string(),
            ]);
        }
        // Point ids read better right-aligned: pad the first column by hand.
        let w = rows.iter().map(|r| r[0].len()).max().unwrap_or(0);
        for r in rows.iter_mut().skip(1) {
            r[0] = format!("{:>w$}", r[0]);
        }
        out.push_str(&table(&rows));
        if pairs.len() > MAX_POINT_ROWS {
            let _ = writeln!(
                out,
                "… {} more matched points",
                pairs.len() - MAX_POINT_ROWS
            );
        }
    }
    for (name, only, f) in [("A", &only_a, a), ("B", &only_b, b)] {
        if only.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\nonly in {name} ({}):", f.dir.display());
        let params = f.spec.param_columns();
        for r in only.iter().take(MAX_ONLY_ROWS) {
            let _ = writeln!(out, "  {} ({})", point_title(r, &params), r.status.as_str());
        }
        if only.len() > MAX_ONLY_ROWS {
            let _ = writeln!(out, "  … {} more", only.len() - MAX_ONLY_ROWS);
        }
    }
    out
}

/// The comparison text of two reports or two sweep output folders.
pub fn compare(a: &Path, b: &Path) -> Result<String, InputError> {
    match (read_side(a)?, read_side(b)?) {
        (Side::Report(x), Side::Report(y)) => Ok(compare_reports(&x, &y, a, b)),
        (Side::Folder(x), Side::Folder(y)) => Ok(compare_folders(&x, &y)),
        _ => Err(bad(format!(
            "cannot compare {} with {}: give two reports (--report-json files) or two sweep \
             output folders",
            a.display(),
            b.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::record::Status;
    use serde_json::json;

    fn rec(point: u64, hash: &str, thr: f64) -> PointRecord {
        PointRecord {
            search: None,
            stopped_on: None,
            point,
            hash: hash.into(),
            status: Status::Ok,
            reason: None,
            parameters: Map::new(),
            gpus: Some(1),
            configuration: None,
            workload: None,
            report: json!({"thr": thr}).as_object().cloned(),
        }
    }

    #[test]
    fn ratios_and_verdicts() {
        assert_eq!(
            ratio_cells("mean_ttft_ms", Some(200.0), Some(150.0)),
            ["0.750".to_string(), "-25.0% better".to_string()]
        );
        assert_eq!(
            ratio_cells("output_throughput_tok_s", Some(100.0), Some(90.0)),
            ["0.900".to_string(), "-10.0% worse".to_string()]
        );
        assert_eq!(
            ratio_cells("completed_requests", Some(10.0), Some(12.0)),
            ["1.200".to_string(), "+20.0%".to_string()]
        );
        assert_eq!(ratio_cells("x", None, Some(1.0))[0], "-");
        assert_eq!(ratio_cells("x", Some(0.0), Some(0.0))[0], "1.000");
    }

    #[test]
    fn points_match_by_hash_with_repeats() {
        let a = vec![
            rec(0, "h1", 1.0),
            rec(1, "h2", 2.0),
            rec(2, "h2", 3.0),
            rec(3, "h9", 0.0),
        ];
        let b = vec![rec(5, "h2", 1.0), rec(4, "h1", 1.0), rec(7, "h8", 1.0)];
        let (pairs, only_a, only_b) = match_points(&a, &b);
        let ids: Vec<(u64, u64)> = pairs.iter().map(|(x, y)| (x.point, y.point)).collect();
        assert_eq!(ids, [(0, 4), (1, 5)]);
        assert_eq!(only_a.iter().map(|r| r.point).collect::<Vec<_>>(), [2, 3]);
        assert_eq!(only_b.iter().map(|r| r.point).collect::<Vec<_>>(), [7]);
    }

    #[test]
    fn anything_else_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.json");
        std::fs::write(&p, "{\"a\": 1}").unwrap();
        let e = compare(&p, &p).unwrap_err().to_string();
        assert!(e.contains("not a report"), "{e}");
        let e = compare(dir.path(), dir.path()).unwrap_err().to_string();
        assert!(e.contains("not a sweep output folder"), "{e}");
        let r = dir.path().join("r.json");
        std::fs::write(
            &r,
            "{\"num_requests\": 3, \"completed_requests\": 3, \"mean_ttft_ms\": 10}",
        )
        .unwrap();
        let e = compare(&r, dir.path()).unwrap_err().to_string();
        assert!(e.contains("not a sweep output folder"), "{e}");
        let e = compare(&r, &dir.path().join("missing.json"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot read"), "{e}");
        let t = compare(&r, &r).unwrap();
        assert!(t.contains("mean_ttft_ms") && t.contains("1.000"), "{t}");
    }
}
