//! The capacity-search planner: for every grid point, the highest value of one load knob
//! (`workload.arrival_speedup_ratio`, `workload.request_rate` or `workload.replay_concurrency`)
//! at which the point meets every `require` bound.
//!
//! Each point probes `high` and `low`, then bisects the bracket [last meeting, first missing]
//! (geometrically for ratios and rates, arithmetically for concurrency) until it is within
//! `precision` (relative). Every probe is an ordinary simulation of the point with the knob set,
//! stopped early once it certainly misses a bound. A point's probes run one after another; the
//! points run in parallel through the same executor as a grid. Each probe is appended to
//! `probes.jsonl`, so that `--resume` re-simulates nothing it already has.
//!
//! Assumption: meeting the bounds is monotone in load (more load never helps). A point whose
//! probes contradict it (it meets every bound at `high` but misses one at `low`) keeps the
//! bracket it has, and its row says `non_monotone` in `reason`.

use super::archive;
use super::execute::{execute, reuse, run_one, stop_bounds, Backend};
use super::expand::{dry_run_text, resolve_points, trace_identities};
use super::output::{
    check_output_dir, finish_sweep, output_dir, prepare_folder, unwritable, RunContext,
};
use super::record::{
    parse_points_with, workload_identity, write_atomic, PointRecord, PointsWriter, SearchOutcome,
    Status,
};
use super::resolve::{ResolvedPoint, Resolver, Verdict, WorkloadSource};
use super::served;
use super::spec::{CapacitySearch, Spec};
use super::{Stop, SweepError, SweepOptions, SweepOutcome};
use crate::error::InputError;
use crate::workload::sharing::PromptBlocks;
use crate::workload::Workload;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Every probe of a search, one JSON line each.
pub const PROBES_FILE: &str = "probes.jsonl";

/// One line of `probes.jsonl`: a simulation of a point at one knob value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeLine {
    pub knob: String,
    pub value: f64,
    /// Met every `require` bound.
    pub met: bool,
    #[serde(flatten)]
    pub record: PointRecord,
}

/// The spec with the knob set to `value` in its base workload.
pub fn spec_at(spec: &Spec, search: &CapacitySearch, value: f64) -> Spec {
    let mut s = spec.clone();
    let v = if search.integral() {
        Value::from(value as u64)
    } else {
        Value::from(value)
    };
    s.workload.insert(search.workload_key().to_string(), v);
    s
}

/// `x` rounded to `digits` significant digits.
fn round_significant(x: f64, digits: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let scale = 10f64.powi(digits - 1 - x.abs().log10().floor() as i32);
    (x * scale).round() / scale
}

/// The next knob value to probe inside (lo, hi), or `None` once the bracket is within the
/// precision (or nothing lies strictly between).
pub fn next_probe(search: &CapacitySearch, lo: f64, hi: f64) -> Option<f64> {
    if (hi - lo) / lo <= search.precision {
        return None;
    }
    let mid = if search.integral() {
        ((lo + hi) / 2.0).floor()
    } else {
        // Enough significant digits to resolve the precision, and readable values.
        let digits = (-search.precision.log10()).ceil() as i32 + 2;
        round_significant((lo * hi).sqrt(), digits.max(3))
    };
    (mid > lo && mid < hi).then_some(mid)
}

/// Prompt blocks computed once by the first probe that needs them.
type SharedPrompts = Arc<OnceLock<PromptBlocks>>;

/// Shared, lazily loaded workloads and prompt blocks of a search.
struct Workloads<'b> {
    backend: &'b Backend,
    loaded: Mutex<HashMap<String, Arc<Workload>>>,
    prompts: Mutex<HashMap<(String, u32), SharedPrompts>>,
}

impl Workloads<'_> {
    fn get(&self, src: &WorkloadSource) -> Result<Arc<Workload>, String> {
        let key = src.cache_key();
        let mut map = self.loaded.lock();
        if let Some(w) = map.get(&key) {
            return Ok(w.clone());
        }
        let w = match src {
            WorkloadSource::Trace { .. } => match src.trace_spec() {
                Some(t) => (self.backend.load_trace)(&t),
                None => return Err("a trace source without a trace spec".into()),
            },
            WorkloadSource::Synthetic { spec, block_size } => {
                (self.backend.generate)(spec, *block_size)
            }
        }
        .map_err(|e| e.to_string())?;
        let w = Arc::new(w);
        map.insert(key, w.clone());
        Ok(w)
    }

    fn prompts(&self, src: &WorkloadSource, block_size: u32) -> Arc<OnceLock<PromptBlocks>> {
        self.prompts
            .lock()
            .entry((src.cache_key(), block_size))
            .or_default()
            .clone()
    }
}

/// What every point's search shares.
struct Ctx<'a> {
    spec: &'a Spec,
    search: &'a CapacitySearch,
    backend: &'a Backend,
    workloads: Workloads<'a>,
    trace_sha: &'a HashMap<PathBuf, String>,
    previous: &'a HashMap<String, PointRecord>,
    bounds: Vec<crate::sim::early_stop::StopBound>,
    probes: &'a PointsWriter,
    write_error: Mutex<Option<String>>,
}

impl Ctx<'_> {
    /// One probe of point `id` at `value`: reused from the earlier run, or simulated (and
    /// appended to `probes.jsonl`).
    fn probe(&self, id: u64, value: f64) -> (PointRecord, bool) {
        let at = spec_at(self.spec, self.search, value);
        let p = match Resolver::new(&at).resolve(id) {
            Ok(p) => p,
            Err(e) => return (failed_stub(id, &e.to_string()), false),
        };
        let identity = workload_identity(&p.workload, |path| {
            self.trace_sha.get(path).cloned().unwrap_or_default()
        });
        let mut rec = PointRecord::new(&p, &identity, Status::Failed, None);
        match &p.verdict {
            Verdict::Run => {}
            Verdict::Invalid(r) => {
                rec.status = Status::Invalid;
                rec.reason = Some(r.clone());
                return (rec, false);
            }
            Verdict::Skipped(r) => {
                rec.status = Status::Skipped;
                rec.reason = Some(r.clone());
                return (rec, false);
            }
        }
        if let Some(done) = self
            .previous
            .get(&rec.hash)
            .and_then(|prev| reuse(rec.clone(), prev, self.spec, &p.config))
        {
            return (done, true);
        }
        let rec = match self.workloads.get(&p.workload) {
            Err(e) => {
                rec.reason = Some(format!("workload at {} = {value}: {e}", self.search.knob));
                rec
            }
            Ok(w) => {
                let bs = p.config.topology.block_size();
                let prompts = self.workloads.prompts(&p.workload, bs);
                run_one(
                    rec,
                    &w,
                    &prompts,
                    &p.config,
                    self.spec,
                    self.backend,
                    &self.bounds,
                )
            }
        };
        let line = ProbeLine {
            knob: self.search.knob.clone(),
            value,
            met: rec.status == Status::Ok,
            record: rec.clone(),
        };
        if let Err(e) = self.probes.append_line(&probe_line(&line)) {
            self.write_error.lock().get_or_insert(format!(
                "cannot append to {}: {e}",
                self.probes.path.display()
            ));
        }
        (rec, false)
    }

    /// The whole search of one point: its leaderboard row.
    fn search_point(&self, point: &ResolvedPoint) -> PointRecord {
        let s = self.search;
        let mut probes = 0u64;
        let mut run = |v: f64| {
            probes += 1;
            self.probe(point.id, v).0
        };
        let high = run(s.high);
        if !high.status.ran() {
            return row(point, high, None);
        }
        let low = run(s.low);
        if !low.status.ran() {
            return row(point, low, None);
        }
        let met = |r: &PointRecord| r.status == Status::Ok;
        if met(&high) {
            let mut r = row(
                point,
                high,
                Some(SearchOutcome {
                    capacity: Some(s.high),
                    bracket_high: None,
                    probes: 2,
                }),
            );
            r.status = Status::AboveRange;
            let monotone = if met(&low) {
                None
            } else {
                Some(format!(
                    "non_monotone: meets every bound at high {} but not at low {} ({}); kept \
                     capacity = high",
                    s.high,
                    s.low,
                    low.reason.unwrap_or_default()
                ))
            };
            r.reason =
                served::join_reasons([monotone, served::few_requests_note(r.report.as_ref())]);
            return r;
        }
        if !met(&low) {
            let why = low.reason.clone().unwrap_or_default();
            let mut r = row(
                point,
                low,
                Some(SearchOutcome {
                    capacity: None,
                    bracket_high: Some(s.low),
                    probes: 2,
                }),
            );
            r.status = Status::BelowRange;
            r.reason = Some(format!("misses a bound even at low {}: {why}", s.low));
            r.report = None;
            r.stopped_on = None;
            return r;
        }
        let (mut lo, mut lo_rec) = (s.low, low);
        let (mut hi, mut hi_rec) = (s.high, high);
        while let Some(mid) = next_probe(s, lo, hi) {
            let r = run(mid);
            if !r.status.ran() {
                return row(point, r, None);
            }
            if met(&r) {
                (lo, lo_rec) = (mid, r);
            } else {
                (hi, hi_rec) = (mid, r);
            }
        }
        let mut r = row(
            point,
            lo_rec,
            Some(SearchOutcome {
                capacity: Some(lo),
                bracket_high: Some(hi),
                probes,
            }),
        );
        r.status = Status::Ok;
        r.reason = served::join_reasons([
            served::few_requests_note(r.report.as_ref()),
            hi_rec
                .reason
                .map(|why| format!("at {} = {hi}: {why}", s.knob)),
        ]);
        r
    }
}

/// A point's row from the probe it reports: the grid's parameters (not the knob), the probe's
/// configuration and report.
fn row(point: &ResolvedPoint, probe: PointRecord, search: Option<SearchOutcome>) -> PointRecord {
    let mut r = probe;
    r.point = point.id;
    r.parameters = point.params.iter().cloned().collect();
    r.search = search;
    r
}

fn failed_stub(id: u64, why: &str) -> PointRecord {
    PointRecord {
        point: id,
        hash: String::new(),
        status: Status::Failed,
        reason: Some(why.to_string()),
        parameters: Default::default(),
        gpus: None,
        configuration: None,
        workload: None,
        report: None,
        stopped_on: None,
        search: None,
    }
}

fn probe_line(l: &ProbeLine) -> Vec<u8> {
    let mut line = serde_json::to_vec(l).unwrap_or_default();
    line.push(b'\n');
    line
}

/// `dynosim merge`: the shards' probes in one `probes.jsonl` (by point, then knob value), so a
/// merged search resumes without simulating again. Nothing is written when no shard has probes.
pub(crate) fn merge_probes<'d>(
    dirs: impl Iterator<Item = &'d Path>,
    out: &Path,
) -> std::io::Result<()> {
    let mut lines: Vec<((u64, u64), Vec<u8>)> = Vec::new();
    let mut any = false;
    for d in dirs {
        let text = match std::fs::read(d.join(PROBES_FILE)) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        any = true;
        for l in parse_points_with::<ProbeLine>(&text).records {
            lines.push(((l.record.point, l.value.to_bits()), probe_line(&l)));
        }
    }
    if !any {
        return Ok(());
    }
    lines.sort();
    lines.dedup();
    let bytes: Vec<u8> = lines.into_iter().flat_map(|(_, l)| l).collect();
    write_atomic(&out.join(PROBES_FILE), &bytes)
}

/// The probes of an earlier run (`--resume`), by configuration hash.
fn read_probes(dir: &Path) -> Result<HashMap<String, PointRecord>, SweepError> {
    let path = dir.join(PROBES_FILE);
    let text = match std::fs::read(&path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(unwritable(dir, e)),
    };
    let parsed = parse_points_with::<ProbeLine>(&text);
    if parsed.truncated_tail {
        eprintln!(
            "dynosim: {}: ignoring an incomplete last line (the run was killed)",
            path.display()
        );
    }
    let mut out = HashMap::new();
    for l in parsed.records {
        if l.record.status.ran() {
            out.entry(l.record.hash.clone()).or_insert(l.record);
        }
    }
    Ok(out)
}

/// A sweep with `search.capacity`: expand (the grid, resolved at the knob's `low`), plan (each
/// point's probes), execute, record, rank, write.
pub(crate) fn run_search(
    opts: &SweepOptions,
    spec: &Spec,
    search: &CapacitySearch,
    total: u64,
    shard: Option<(u32, u32)>,
    backend: &Backend,
    stop: &Stop,
) -> Result<SweepOutcome, SweepError> {
    let stop = stop.requested;
    let at_low = spec_at(spec, search, search.low);
    let points = resolve_points(&at_low, total, shard)?;
    let mut outcome = SweepOutcome {
        points: points.len() as u64,
        ..Default::default()
    };
    if opts.dry_run {
        print!("{}", dry_run_text(&points, total, shard));
        println!(
            "capacity search: {} from {} to {} (precision {}) for each point to run",
            search.knob, search.low, search.high, search.precision
        );
        outcome.not_run = outcome.points;
        return Ok(outcome);
    }
    let dir = output_dir(spec, opts);
    check_output_dir(&dir, opts.resume)?;
    let previous = if opts.resume {
        read_probes(&dir)?
    } else {
        HashMap::new()
    };
    let trace_sha = trace_identities(&points)?;
    let workloads = Workloads {
        backend,
        loaded: Mutex::new(HashMap::new()),
        prompts: Mutex::new(HashMap::new()),
    };
    // Settle what needs no search; load every trace a search needs before writing anything.
    let mut settled: Vec<PointRecord> = Vec::new();
    let mut to_search: Vec<&ResolvedPoint> = Vec::new();
    for p in &points {
        let identity = workload_identity(&p.workload, |path| {
            trace_sha.get(path).cloned().unwrap_or_default()
        });
        match &p.verdict {
            Verdict::Invalid(r) => settled.push(PointRecord::new(
                p,
                &identity,
                Status::Invalid,
                Some(r.clone()),
            )),
            Verdict::Skipped(r) => settled.push(PointRecord::new(
                p,
                &identity,
                Status::Skipped,
                Some(r.clone()),
            )),
            Verdict::Run => {
                if matches!(p.workload, WorkloadSource::Trace { .. }) {
                    workloads.get(&p.workload).map_err(|e| {
                        SweepError::Input(InputError::new(format!(
                            "{}: workload of point {}: {e}",
                            spec.file.display(),
                            p.id
                        )))
                    })?;
                }
                to_search.push(p);
            }
        }
    }
    if stop() {
        outcome.interrupted = true;
        outcome.not_run = outcome.points;
        return Ok(outcome);
    }

    // Finished points already in the folder (a grid run's, or an earlier search's rows) are
    // archived, never dropped; the probes are what a resumed search reuses.
    let earlier = if opts.resume {
        archive::read_previous(&dir).map_err(|e| unwritable(&dir, e))?
    } else {
        archive::Previous::default()
    };
    let run = RunContext {
        dir: &dir,
        spec,
        points_total: total,
        shard,
        quiet: opts.quiet,
    };
    let writer = prepare_folder(&run, &earlier, &mut settled)?;
    let probes = PointsWriter::open(&dir.join(PROBES_FILE)).map_err(|e| unwritable(&dir, e))?;

    let ctx = Ctx {
        spec,
        search,
        backend,
        workloads,
        trace_sha: &trace_sha,
        previous: &previous,
        bounds: if opts.early_stop && spec.early_stop {
            stop_bounds(&spec.require)
        } else {
            Vec::new()
        },
        probes: &probes,
        write_error: Mutex::new(None),
    };
    let order: Vec<usize> = (0..to_search.len()).collect();
    let work = |i: usize| ctx.search_point(to_search[i]);
    let done = |rec: &PointRecord| {
        if let Some(e) = ctx.write_error.lock().clone() {
            return Err(e);
        }
        writer
            .append(rec)
            .map_err(|e| format!("cannot append to {}: {e}", writer.path.display()))
    };
    let finished = execute(opts.jobs, &order, stop, &work, &done)?;
    let interrupted = stop();
    let mut records = settled;
    records.extend(finished);
    records.sort_by_key(|r| r.point);
    // A search reuses probes, not rows: no point counts as taken from the earlier run.
    finish_sweep(&run, &mut outcome, records, 0, interrupted)?;
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(knob: &str, low: f64, high: f64, precision: f64) -> CapacitySearch {
        CapacitySearch {
            knob: knob.into(),
            low,
            high,
            precision,
        }
    }

    #[test]
    fn geometric_bisection_converges_within_precision() {
        let s = search("workload.arrival_speedup_ratio", 0.25, 16.0, 0.02);
        // Capacity 3.3: every probe below meets, above misses.
        let (mut lo, mut hi, mut n) = (0.25, 16.0, 0);
        while let Some(mid) = next_probe(&s, lo, hi) {
            assert!(mid > lo && mid < hi);
            if mid <= 3.3 {
                lo = mid
            } else {
                hi = mid
            }
            n += 1;
        }
        assert!(lo <= 3.3 && hi > 3.3);
        assert!((hi - lo) / lo <= 0.02, "{lo} {hi}");
        assert!(n <= 10, "{n} probes");
        assert_eq!(next_probe(&s, 1.0, 1.4), Some(1.183));
    }

    #[test]
    fn concurrency_bisects_whole_values() {
        let s = search("workload.replay_concurrency", 1.0, 64.0, 0.02);
        assert_eq!(next_probe(&s, 1.0, 64.0), Some(32.0));
        assert_eq!(next_probe(&s, 10.0, 11.0), None);
        assert_eq!(next_probe(&s, 10.0, 12.0), Some(11.0));
    }
}
