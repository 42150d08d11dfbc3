//! Error figures per group of points: (system, backend, model, mode), with the count of points,
//! how many were simulated, and for TTFT and TPOT the mean and median absolute percentage error
//! and the signed median (negative: predictions below the measurements).

use super::points::MeasuredPoint;
use super::{PointResult, Status};
use serde::Serialize;
use std::collections::BTreeMap;

/// The error statistics of one metric over a group's simulated points.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ErrorStats {
    /// Points with both a measurement and a prediction.
    pub n: usize,
    pub mean_abs_pct: Option<f64>,
    pub median_abs_pct: Option<f64>,
    pub median_signed_pct: Option<f64>,
}

impl ErrorStats {
    pub fn of(errors: &[f64]) -> Self {
        let abs: Vec<f64> = errors.iter().map(|e| e.abs()).collect();
        ErrorStats {
            n: errors.len(),
            mean_abs_pct: (!abs.is_empty()).then(|| abs.iter().sum::<f64>() / abs.len() as f64),
            median_abs_pct: median(&abs),
            median_signed_pct: median(errors),
        }
    }
}

/// The median (mean of the two middle values for an even count).
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

/// One group's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupSummary {
    pub system: String,
    pub backend: String,
    pub model: String,
    pub mode: String,
    /// Points in the group, and how many were simulated (`ok`), `failed` and `unsupported`.
    pub points: usize,
    pub ok: usize,
    pub failed: usize,
    pub unsupported: usize,
    pub ttft: ErrorStats,
    pub tpot: ErrorStats,
}

/// The groups of `results` (sorted by system, backend, model, mode).
pub fn summarize(points: &[MeasuredPoint], results: &[PointResult]) -> Vec<GroupSummary> {
    type Key = (String, String, String, String);
    let mut groups: BTreeMap<Key, Vec<&PointResult>> = BTreeMap::new();
    for r in results {
        let p = &points[r.index];
        let key = (
            p.system.clone(),
            p.backend.clone(),
            p.model.clone(),
            p.mode.clone(),
        );
        groups.entry(key).or_default().push(r);
    }
    groups
        .into_iter()
        .map(|((system, backend, model, mode), rs)| {
            let count = |s: Status| rs.iter().filter(|r| r.status == s).count();
            let ttft: Vec<f64> = rs.iter().filter_map(|r| r.ttft_error_pct).collect();
            let tpot: Vec<f64> = rs.iter().filter_map(|r| r.tpot_error_pct).collect();
            GroupSummary {
                system,
                backend,
                model,
                mode,
                points: rs.len(),
                ok: count(Status::Ok),
                failed: count(Status::Failed),
                unsupported: count(Status::Unsupported),
                ttft: ErrorStats::of(&ttft),
                tpot: ErrorStats::of(&tpot),
            }
        })
        .collect()
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.1}"))
}

fn signed(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:+.1}"))
}

/// The console table: one line per group.
pub fn render(groups: &[GroupSummary]) -> String {
    let header = [
        "system",
        "backend",
        "model",
        "mode",
        "n",
        "ok",
        "ttft_mape",
        "ttft_med",
        "ttft_signed",
        "tpot_mape",
        "tpot_med",
        "tpot_signed",
    ];
    let rows: Vec<Vec<String>> = groups
        .iter()
        .map(|g| {
            vec![
                g.system.clone(),
                g.backend.clone(),
                g.model.clone(),
                g.mode.clone(),
                g.points.to_string(),
                g.ok.to_string(),
                pct(g.ttft.mean_abs_pct),
                pct(g.ttft.median_abs_pct),
                signed(g.ttft.median_signed_pct),
                pct(g.tpot.mean_abs_pct),
                pct(g.tpot.median_abs_pct),
                signed(g.tpot.median_signed_pct),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<String>| -> String {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                // Text columns left, numbers right.
                if i < 4 {
                    format!("{c:<w$}", w = widths[i])
                } else {
                    format!("{c:>w$}", w = widths[i])
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut out = line(header.iter().map(|h| h.to_string()).collect());
    out.push('\n');
    for r in rows {
        out.push_str(&line(r));
        out.push('\n');
    }
    out.push_str(
        "(errors in %: mape = mean absolute, med = median absolute, signed = median of \
         (predicted − measured)/measured; n = points, ok = simulated)\n",
    );
    out
}
