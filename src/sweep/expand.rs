//! The expand stage both planners start from: `--shard` and `--max-points` checked, the grid's
//! points resolved (every point, so that a shard refuses a spec bad anywhere; duplicates named
//! over the whole grid), the `--dry-run` listing, and the trace files' identities. Nothing is
//! loaded, simulated or written here.

use super::record::file_sha256;
use super::resolve::{ResolvedPoint, Resolver, Verdict, WorkloadSource};
use super::spec::Spec;
use super::values::value_text;
use super::SweepError;
use crate::error::InputError;
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

/// Checks `--shard K/N`.
pub(crate) fn check_shard(shard: Option<(u32, u32)>) -> Result<Option<(u32, u32)>, SweepError> {
    match shard {
        Some((k, n)) if n == 0 || k >= n => Err(SweepError::Input(InputError::new(format!(
            "--shard {k}/{n}: expected K/N with 0 <= K < N"
        )))),
        other => Ok(other),
    }
}

/// The grid size, refused above `max_points` before anything is expanded.
pub(crate) fn checked_size(spec: &Spec, max_points: u64) -> Result<u64, SweepError> {
    let sizes: Vec<String> = spec
        .axes
        .iter()
        .map(|a| {
            format!(
                "{} {}",
                a.name,
                a.size()
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "(huge)".into())
            )
        })
        .collect();
    let size = spec.grid_size();
    match size {
        Some(n) if n <= max_points as u128 => Ok(n as u64),
        _ => {
            let n = size
                .map(|n| n.to_string())
                .unwrap_or_else(|| "more than 2^128".into());
            Err(SweepError::Input(InputError::new(format!(
                "{}: the grid has {n} points ({}), above --max-points {max_points}; shrink the grid \
                 or raise --max-points",
                spec.file.display(),
                sizes.join(" x ")
            ))))
        }
    }
}

/// Resolves the points of this run (all, or the shard's), in id order. Every point of the grid
/// is resolved, so a shard refuses a spec that is bad anywhere, like a whole run would.
pub(crate) fn resolve_points(
    spec: &Spec,
    total: u64,
    shard: Option<(u32, u32)>,
) -> Result<Vec<ResolvedPoint>, SweepError> {
    let mut resolver = Resolver::new(spec);
    let mut points = Vec::new();
    // First point of every distinct simulation over the whole grid (so that a shard names the
    // same duplicates as a whole run).
    let mut first: HashMap<String, u64> = HashMap::new();
    // DynoSim's warnings for odd engine settings (an unknown SGLang `schedule_policy`), once
    // per distinct text over the points this run simulates, on stderr like `dynosim run`'s.
    let mut warned: Vec<String> = Vec::new();
    // The AIC systems the simulated points run on (for prices no point uses).
    let mut systems: BTreeSet<String> = BTreeSet::new();
    for id in 0..total {
        let mut p = resolver.resolve(id)?;
        if p.verdict == Verdict::Run {
            let leader = *first.entry(p.identity_key()).or_insert(id);
            p.duplicate_of = (leader != id).then_some(leader);
            if spec.cost.is_some() {
                super::cost::check_priced(spec, &p)?;
                systems.extend(super::cost::systems(&p));
            }
        }
        if shard.is_none_or(|(k, n)| id % n as u64 == k as u64) {
            if p.verdict == Verdict::Run {
                for w in p
                    .config
                    .topology
                    .engines()
                    .iter()
                    .flat_map(|e| e.warnings())
                {
                    if !warned.contains(&w) {
                        eprintln!("dynosim: warning: {w}");
                        warned.push(w);
                    }
                }
            }
            points.push(p);
        }
    }
    if let Some(prices) = &spec.cost {
        for w in super::cost::unused_prices(prices, &systems) {
            eprintln!("dynosim: warning: {w}");
        }
    }
    let aic = resolver.aic_stats();
    if aic.loaded > 0 {
        eprintln!("{}", aic.summary());
    }
    if let Some(c) = &spec.calibration {
        for line in calibration_notes(&c.0, &points) {
            eprintln!("{line}");
        }
    }
    Ok(points)
}

/// One note per distinct outcome of the calibration over the points of this run that are
/// simulated: which families were calibrated and how, and which points were not and why.
fn calibration_notes(file: &str, points: &[ResolvedPoint]) -> Vec<String> {
    let mut counts: Vec<(String, u64)> = Vec::new();
    let mut simulated = 0;
    for p in points.iter().filter(|p| p.verdict == Verdict::Run) {
        simulated += 1;
        for line in crate::calibrate::notes(&p.calibration) {
            match counts.iter_mut().find(|(l, _)| *l == line) {
                Some((_, n)) => *n += 1,
                None => counts.push((line, 1)),
            }
        }
    }
    counts
        .into_iter()
        .map(|(line, n)| {
            format!("dynosim: calibration {file}: {line} ({n} of {simulated} points to simulate)")
        })
        .collect()
}

fn params_text(p: &ResolvedPoint) -> String {
    p.params
        .iter()
        .map(|(k, v)| format!("{k}={}", value_text(v)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The `--dry-run` listing: one line per point, then the count.
pub(crate) fn dry_run_text(
    points: &[ResolvedPoint],
    total: u64,
    shard: Option<(u32, u32)>,
) -> String {
    let width = points.last().map(|p| p.id.to_string().len()).unwrap_or(1);
    let mut out = String::new();
    let (mut skipped, mut invalid, mut duplicates) = (0, 0, 0);
    for p in points {
        let (status, why) = match &p.verdict {
            Verdict::Run => match p.duplicate_of {
                Some(n) => {
                    duplicates += 1;
                    ("", format!("  (same as point {n})"))
                }
                None => ("", String::new()),
            },
            Verdict::Skipped(r) => {
                skipped += 1;
                ("skipped", format!("  ({r})"))
            }
            Verdict::Invalid(r) => {
                invalid += 1;
                ("invalid", format!("  ({r})"))
            }
        };
        let params = params_text(p);
        let line = format!("{:>width$}  {status:<7}  {params}{why}", p.id);
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let to_run = points.len() - skipped - invalid;
    let scope = match shard {
        Some((k, n)) => format!(" in shard {k}/{n} of a {total}-point grid"),
        None => String::new(),
    };
    let same = if duplicates > 0 {
        format!(" ({duplicates} the same as an earlier point, simulated once)")
    } else {
        String::new()
    };
    out.push_str(&format!(
        "{} points{scope}: {to_run} to run{same}, {skipped} skipped, {invalid} invalid\n",
        points.len()
    ));
    out
}

/// Trace identities (content hashes) of the points' trace files, once per file.
pub(crate) fn trace_identities(
    points: &[ResolvedPoint],
) -> Result<HashMap<PathBuf, String>, SweepError> {
    let mut trace_sha: HashMap<PathBuf, String> = HashMap::new();
    for p in points {
        if let WorkloadSource::Trace { paths, .. } = &p.workload {
            for path in paths {
                if !trace_sha.contains_key(path) {
                    let sha = file_sha256(path).map_err(|e| {
                        SweepError::Input(InputError::new(format!(
                            "cannot read trace {}: {e}",
                            path.display()
                        )))
                    })?;
                    trace_sha.insert(path.clone(), sha);
                }
            }
        }
    }
    Ok(trace_sha)
}
