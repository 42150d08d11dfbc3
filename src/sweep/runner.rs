//! Running a sweep: validate and expand everything first, load each distinct workload once,
//! simulate the points on a rayon pool (largest first), append each finished point to
//! `points.jsonl`, and write the leaderboards of what finished.
//!
//! Each point is an independent simulation over a shared, read-only workload; the order points
//! finish in never reaches an output file except `points.jsonl` (whose order does not matter).

use super::archive;
use super::execute::execute;
use super::leaderboard::{self, classify, compare, Meta};
use super::progress::Progress;
use super::record::{
    file_sha256, read_points, record_line, workload_identity, write_atomic, write_atomic_with,
    PointRecord, PointsWriter, Status, StoppedOn, SweepMeta, CSV_FILE, DYNOSIM_VERSION, JSON_FILE,
    META_FILE, POINTS_FILE, SPEC_FILE,
};
use super::resolve::{ResolvedPoint, Resolver, Verdict, WorkloadSource};
use super::spec::{load_spec, Bound, Spec};
use super::values::value_text;
use super::{columns, console, html, markdown};
use super::{SweepError, SweepOptions, SweepOutcome};
use crate::config::limits::{
    check_memory, human_bytes, memory_budget, memory_floor, MemoryPart, WorkloadShape,
};
use crate::config::SimConfig;
use crate::error::{InputError, SimError};
use crate::sim::early_stop::{StopBound, Stopped};
use crate::sim::SimOutput;
use crate::workload::formats::TraceSpec;
use crate::workload::sharing::PromptBlocks;
use crate::workload::synthetic::SyntheticSpec;
use crate::workload::Workload;
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The stages a sweep drives: the real ones, or stand-ins in tests.
pub(crate) struct Backend {
    pub simulate: fn(&Workload, &PromptBlocks, &SimConfig) -> Result<SimOutput, SimError>,
    pub load_trace: fn(&TraceSpec) -> Result<Workload, InputError>,
    pub generate: fn(&SyntheticSpec, u32) -> Result<Workload, InputError>,
    /// The simulation with early stop on `require` bounds (`None`: `simulate`, to the end).
    pub simulate_bounded: Option<BoundedSim>,
}

/// A simulation that stops once one of the bounds is certainly missed.
pub(crate) type BoundedSim = fn(
    &Workload,
    &PromptBlocks,
    &SimConfig,
    &[StopBound],
) -> Result<Result<SimOutput, Stopped>, SimError>;

fn simulate_shared_bounded(
    w: &Workload,
    prompts: &PromptBlocks,
    cfg: &SimConfig,
    bounds: &[StopBound],
) -> Result<Result<SimOutput, Stopped>, SimError> {
    crate::sim::simulate_bounded(
        w,
        Some(prompts),
        cfg,
        crate::sim::SimOptions::default(),
        bounds,
    )
}

/// The `require` bounds a simulation can be stopped on (see `sim::early_stop`).
pub(crate) fn stop_bounds(require: &[Bound]) -> Vec<StopBound> {
    require
        .iter()
        .filter_map(|b| b.max.and_then(|m| StopBound::parse(&b.metric, m)))
        .collect()
}

/// The real simulation, with the workload's prompt blocks computed once for all its points.
fn simulate_shared(
    w: &Workload,
    prompts: &PromptBlocks,
    cfg: &SimConfig,
) -> Result<SimOutput, SimError> {
    crate::sim::simulate_prepared(w, Some(prompts), cfg, crate::sim::SimOptions::default())
}

pub(crate) const REAL_BACKEND: Backend = Backend {
    simulate: simulate_shared,
    load_trace: TraceSpec::load,
    generate: crate::workload::synthetic::generate,
    simulate_bounded: Some(simulate_shared_bounded),
};

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

/// Memory one simulated point's record takes until the leaderboards are written (its report,
/// configuration and parameters as JSON values), measured on a synthetic grid and rounded up.
const POINT_RESULT_BYTES: u64 = 40 << 10;
/// The same for a point that is not simulated (skipped or invalid: no report).
const POINT_STUB_BYTES: u64 = 8 << 10;

/// Refuses a run whose results cannot be held in memory until the leaderboards are written.
pub(crate) fn check_results_fit(
    spec: &Spec,
    points: &[ResolvedPoint],
    budget: u64,
) -> Result<(), SweepError> {
    let run = points.iter().filter(|p| p.verdict == Verdict::Run).count() as u64;
    let stubs = points.len() as u64 - run;
    let need = run
        .saturating_mul(POINT_RESULT_BYTES)
        .saturating_add(stubs.saturating_mul(POINT_STUB_BYTES));
    if need <= budget {
        return Ok(());
    }
    let shards = need.div_ceil(budget / 2).max(2);
    Err(SweepError::Input(InputError::new(format!(
        "{}: the {} points of this run would need about {} of memory for their results (about \
         {} per simulated point), more than this machine's {}; split the grid into shards \
         (--shard K/{shards}, then `dynosim merge`) or shrink it",
        spec.file.display(),
        points.len(),
        human_bytes(need),
        human_bytes(POINT_RESULT_BYTES),
        human_bytes(budget)
    ))))
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
    for id in 0..total {
        let mut p = resolver.resolve(id)?;
        if p.verdict == Verdict::Run {
            let leader = *first.entry(p.identity_key()).or_insert(id);
            p.duplicate_of = (leader != id).then_some(leader);
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
    let aic = resolver.aic_stats();
    if aic.loaded > 0 {
        eprintln!("{}", aic.summary());
    }
    Ok(points)
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

/// Where the results go: `-o`, else the spec's `output`, else `results/<name>`; a shard without
/// `-o` gets its own sibling folder.
pub(crate) fn output_dir(spec: &Spec, opts: &SweepOptions) -> PathBuf {
    if let Some(o) = &opts.output {
        return o.clone();
    }
    let base = spec
        .output
        .clone()
        .unwrap_or_else(|| Path::new("results").join(&spec.name));
    match opts.shard {
        Some((k, n)) => {
            let name = base
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| spec.name.clone());
            base.with_file_name(format!("{name}-shard-{k}-of-{n}"))
        }
        None => base,
    }
}

/// Refuses a non-empty output folder unless resuming; refuses a file in its place or on its
/// path (found before anything is loaded or run; nothing is created here).
pub(crate) fn check_output_dir(dir: &Path, resume: bool) -> Result<(), SweepError> {
    if dir.exists() && !dir.is_dir() {
        return Err(SweepError::Input(InputError::new(format!(
            "output folder {} is a file",
            dir.display()
        ))));
    }
    let mut ancestor = dir.parent();
    while let Some(a) = ancestor.filter(|a| !a.as_os_str().is_empty()) {
        match std::fs::metadata(a) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(SweepError::Input(InputError::new(format!(
                    "cannot write to output folder {}: {} is a file, not a folder",
                    dir.display(),
                    a.display()
                ))))
            }
            Err(_) => ancestor = a.parent(),
        }
    }
    if let Err((probed, e)) = crate::report::json::probe_writable(dir) {
        return Err(SweepError::Input(InputError::new(format!(
            "cannot write to output folder {}: cannot create files in {}: {e}",
            dir.display(),
            probed.display()
        ))));
    }
    if !resume {
        if let Ok(mut entries) = std::fs::read_dir(dir) {
            if entries.next().is_some() {
                return Err(SweepError::Input(InputError::new(format!(
                    "output folder {} is not empty: continue it with --resume, or choose another \
                     folder with -o",
                    dir.display()
                ))));
            }
        }
    }
    Ok(())
}

pub(crate) fn unwritable(dir: &Path, e: std::io::Error) -> SweepError {
    SweepError::Input(InputError::new(format!(
        "cannot write to output folder {}: {e}",
        dir.display()
    )))
}

/// Rough cost of simulating a workload, to start the biggest points first.
fn workload_cost(w: &Workload) -> u64 {
    w.requests
        .iter()
        .map(|r| r.input_length as u64 / 64 + r.output_length as u64 + 1)
        .sum()
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".into()
    }
}

/// A point's result from an earlier run of the same configuration, classified under today's
/// `require`; `None` when it stopped early on a bound no longer required as strictly (it must
/// run again).
pub(crate) fn reuse(
    mut rec: PointRecord,
    prev: &PointRecord,
    require: &[Bound],
) -> Option<PointRecord> {
    if let Some(on) = &prev.stopped_on {
        let still = require
            .iter()
            .any(|b| b.metric == on.key && b.max.is_some_and(|m| m <= on.max));
        if !still || prev.report.is_some() {
            return None;
        }
        rec.status = Status::Infeasible;
        rec.reason = prev.reason.clone();
        rec.stopped_on = prev.stopped_on.clone();
        return Some(rec);
    }
    rec.report = prev.report.clone();
    let (status, reason) = classify(&rec, require);
    rec.status = status;
    rec.reason = reason;
    Some(rec)
}

/// Simulates one point: a report (`ok`/`infeasible`), or `failed` on an error or a panic.
pub(crate) fn run_one(
    mut rec: PointRecord,
    workload: &Workload,
    prompts: &OnceLock<PromptBlocks>,
    config: &SimConfig,
    spec: &Spec,
    backend: &Backend,
    bounds: &[StopBound],
) -> PointRecord {
    let run = || {
        // Computed by the first point that needs it; the others wait for it and share it.
        let prompts =
            prompts.get_or_init(|| PromptBlocks::new(workload, config.topology.block_size()));
        match backend.simulate_bounded.filter(|_| !bounds.is_empty()) {
            Some(bounded) => bounded(workload, prompts, config, bounds),
            None => (backend.simulate)(workload, prompts, config).map(Ok),
        }
    };
    let aic_scope = crate::timing::aic::FailureScope::enter();
    let outcome = catch_unwind(AssertUnwindSafe(run));
    let aic_failure = aic_scope.finish();
    match outcome {
        Ok(Ok(Err(stopped))) => {
            // Certainly infeasible: no report, rather than partial values shown as results.
            rec.status = Status::Infeasible;
            rec.reason = Some(stopped.reason());
            rec.stopped_on = Some(StoppedOn {
                key: stopped.key,
                max: stopped.max,
            });
        }
        Ok(Ok(Ok(out))) => {
            let mut report = match serde_json::to_value(&out.report) {
                Ok(Value::Object(m)) => m,
                _ => Default::default(),
            };
            let gpus = rec.gpus.unwrap_or(0);
            if let (Some(thr), true) = (
                report
                    .get("output_throughput_tok_s")
                    .and_then(Value::as_f64),
                gpus > 0,
            ) {
                report.insert(
                    "output_throughput_tok_s_per_gpu".into(),
                    Value::from(thr / gpus as f64),
                );
            }
            if let (Some(rps), true) = (
                report.get("request_throughput_rps").and_then(Value::as_f64),
                gpus > 0,
            ) {
                report.insert(
                    "request_throughput_rps_per_gpu".into(),
                    Value::from(rps / gpus as f64),
                );
            }
            rec.report = Some(report);
            let (status, reason) = classify(&rec, &spec.require);
            rec.status = status;
            rec.reason = reason;
        }
        Ok(Err(e)) => {
            rec.status = Status::Failed;
            rec.reason = Some(e.0);
        }
        Err(p) => {
            rec.status = Status::Failed;
            rec.reason = Some(format!("panicked: {}", panic_text(p.as_ref())));
        }
    }
    // A failed AIC estimate makes the point's timing unknown, as it stops `dynosim run`.
    if let (Some(e), false) = (aic_failure, rec.status == Status::Failed) {
        rec.status = Status::Failed;
        rec.reason = Some(e);
        rec.report = None;
        rec.stopped_on = None;
    }
    rec
}

struct Task {
    rec: PointRecord,
    config: SimConfig,
    workload: usize,
}

/// Workload shapes by (workload, engine block size).
type Shapes = HashMap<(usize, u32), WorkloadShape>;

/// Moves the tasks whose simulation would not fit in `budget` bytes to `settled`, as `failed`
/// with the reason. Tasks whose workload shape is not known yet stay.
fn refuse_oversized(
    tasks: &mut Vec<Task>,
    settled: &mut Vec<PointRecord>,
    shapes: &Shapes,
    budget: u64,
) {
    let mut kept = Vec::with_capacity(tasks.len());
    for mut t in tasks.drain(..) {
        if let Some(shape) = shapes.get(&(t.workload, t.config.topology.block_size())) {
            let floor = memory_floor(shape, &t.config);
            let hint = match floor.largest() {
                MemoryPart::Requests => {
                    "lower workload.request_count (or turns_per_session), or split the trace"
                }
                MemoryPart::PromptBlocks => {
                    "lower workload.input_tokens or workload.shared_prefix_ratio (for a trace: \
                     its shared prompts' input lengths or workload.trace_block_size), or raise \
                     engine.block_size"
                }
                MemoryPart::Ranks => "use fewer workers or a smaller dp_size",
            };
            if let Err(m) = check_memory(&floor, budget, hint) {
                t.rec.status = Status::Failed;
                t.rec.reason = Some(format!("refused: {m}"));
                settled.push(t.rec);
                continue;
            }
        }
        kept.push(t);
    }
    *tasks = kept;
}

/// Printed for a spec with neither `require` nor `search`.
pub(crate) const NOTHING_REQUIRED: &str = "dynosim: note: the spec has no `require`, so every \
    simulated point is `ok` (nothing is required); add bounds such as require: {p99_ttft_ms: \
    {max: 2000}} to tell deployments that serve the load from those that do not";

/// The whole sweep; `stop` says when to stop starting points (Ctrl-C).
pub(crate) fn run_with(
    opts: &SweepOptions,
    backend: &Backend,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<SweepOutcome, SweepError> {
    let spec = load_spec(&opts.spec)?;
    let shard = check_shard(opts.shard)?;
    let total = checked_size(&spec, opts.max_points)?;
    if spec.require.is_empty() && spec.search.is_none() && !opts.quiet {
        eprintln!("{NOTHING_REQUIRED}");
    }
    if let Some(search) = &spec.search {
        return super::capacity::run_search(opts, &spec, search, total, shard, backend, stop);
    }
    let points = resolve_points(&spec, total, shard)?;
    let mut outcome = SweepOutcome {
        points: points.len() as u64,
        ..Default::default()
    };
    if opts.dry_run {
        print!("{}", dry_run_text(&points, total, shard));
        for p in &points {
            match p.verdict {
                Verdict::Run => {}
                Verdict::Skipped(_) => outcome.skipped += 1,
                Verdict::Invalid(_) => outcome.invalid += 1,
            }
        }
        outcome.not_run = outcome.points - outcome.skipped - outcome.invalid;
        return Ok(outcome);
    }

    check_results_fit(&spec, &points, memory_budget())?;
    let dir = output_dir(&spec, opts);
    check_output_dir(&dir, opts.resume)?;
    let previous = if opts.resume {
        let p = archive::read_previous(&dir).map_err(|e| unwritable(&dir, e))?;
        for w in &p.warnings {
            eprintln!("dynosim: {w}");
        }
        p
    } else {
        archive::Previous::default()
    };
    let mut reusable: HashMap<&str, &PointRecord> = HashMap::new();
    for r in &previous.records {
        reusable.entry(r.hash.as_str()).or_insert(r);
    }

    let trace_sha = trace_identities(&points)?;

    // Settle what needs no simulation; collect the rest as tasks.
    let mut settled: Vec<PointRecord> = Vec::new();
    let mut tasks: Vec<Task> = Vec::new();
    let mut workload_index: HashMap<String, usize> = HashMap::new();
    let mut sources: Vec<(WorkloadSource, u64)> = Vec::new();
    // Duplicates of a point simulated in this run wait for its result.
    let dup_of: HashMap<u64, u64> = points
        .iter()
        .filter_map(|p| p.duplicate_of.map(|l| (p.id, l)))
        .collect();
    let mut task_points: std::collections::HashSet<u64> = Default::default();
    let mut followers: Vec<PointRecord> = Vec::new();
    for p in points {
        let identity = workload_identity(&p.workload, |path| {
            trace_sha.get(path).cloned().unwrap_or_default()
        });
        match &p.verdict {
            Verdict::Invalid(r) => settled.push(PointRecord::new(
                &p,
                &identity,
                Status::Invalid,
                Some(r.clone()),
            )),
            Verdict::Skipped(r) => settled.push(PointRecord::new(
                &p,
                &identity,
                Status::Skipped,
                Some(r.clone()),
            )),
            Verdict::Run => {
                let rec = PointRecord::new(&p, &identity, Status::Failed, None);
                if let Some(prev) = reusable.get(rec.hash.as_str()) {
                    if let Some(done) = reuse(rec.clone(), prev, &spec.require) {
                        settled.push(done);
                        continue;
                    }
                }
                if p.duplicate_of.is_some_and(|l| task_points.contains(&l)) {
                    followers.push(rec);
                    continue;
                }
                task_points.insert(p.id);
                let key = p.workload.cache_key();
                let w = *workload_index.entry(key).or_insert_with(|| {
                    sources.push((p.workload.clone(), p.id));
                    sources.len() - 1
                });
                tasks.push(Task {
                    rec,
                    config: p.config,
                    workload: w,
                });
            }
        }
    }
    let reused = settled.iter().filter(|r| r.status.ran()).count();
    same_as_leaders(&mut settled, Vec::new(), &dup_of);
    let bounds = if opts.early_stop {
        stop_bounds(&spec.require)
    } else {
        Vec::new()
    };

    // Points whose simulation cannot fit in memory fail with a message instead of being killed
    // by the OS: synthetic workloads are judged before they are generated, traces once loaded.
    let budget = memory_budget();
    let shapes: Shapes = sources
        .iter()
        .enumerate()
        .filter_map(|(i, (src, _))| match src {
            WorkloadSource::Synthetic {
                spec: s,
                block_size,
            } => Some((
                (i, *block_size),
                WorkloadShape::of_synthetic(s, *block_size),
            )),
            WorkloadSource::Trace { .. } => None,
        })
        .collect();
    refuse_oversized(&mut tasks, &mut settled, &shapes, budget);

    // Load each distinct workload some point still needs once, before writing anything.
    let mut needed = vec![false; sources.len()];
    for t in &tasks {
        needed[t.workload] = true;
    }
    let mut workloads: Vec<Workload> = Vec::with_capacity(sources.len());
    for (i, (src, first_point)) in sources.iter().enumerate() {
        if !needed[i] {
            workloads.push(Workload::default());
            continue;
        }
        let loaded = match src {
            WorkloadSource::Trace { .. } => match src.trace_spec() {
                Some(t) => (backend.load_trace)(&t),
                None => unreachable!("a trace source has a trace spec"),
            },
            WorkloadSource::Synthetic {
                spec: s,
                block_size,
            } => (backend.generate)(s, *block_size),
        };
        let w = loaded.map_err(|e| {
            SweepError::Input(InputError::new(format!(
                "{}: workload of point {first_point}: {}",
                spec.file.display(),
                e.0
            )))
        })?;
        for warning in &w.warnings {
            eprintln!("dynosim: warning: {warning}");
        }
        workloads.push(w);
    }
    if tasks
        .iter()
        .any(|t| crate::sim::ignores_time_cap(&workloads[t.workload], &t.config))
    {
        eprintln!("dynosim: warning: {}", crate::sim::TIME_CAP_IGNORED);
    }
    // Loaded workloads are judged on their exact shareable prompt blocks, which depend on the
    // engine block size: counted once per (workload, block size), before any is computed.
    let mut shapes = Shapes::new();
    for t in &tasks {
        let bs = t.config.topology.block_size();
        shapes
            .entry((t.workload, bs))
            .or_insert_with(|| WorkloadShape::of_workload(&workloads[t.workload], bs));
    }
    refuse_oversized(&mut tasks, &mut settled, &shapes, budget);
    let costs: Vec<u64> = workloads.iter().map(workload_cost).collect();
    if stop() {
        // Ctrl-C while loading: nothing ran, the folder is left as it was.
        outcome.interrupted = true;
        outcome.not_run = outcome.points;
        return Ok(outcome);
    }

    let writer = prepare_folder(&dir, &spec, total, shard, &previous, &mut settled)?;

    // Largest points first; ties by id.
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    order.sort_by(|&a, &b| {
        costs[tasks[b].workload]
            .cmp(&costs[tasks[a].workload])
            .then(tasks[a].rec.point.cmp(&tasks[b].rec.point))
    });

    let bar = Progress::start(tasks.len() as u64, opts.quiet, opts.progress_every);
    let best: Mutex<Option<PointRecord>> = Mutex::new(
        settled
            .iter()
            .filter(|r| r.status == Status::Ok)
            .min_by(|a, b| compare(a, b, &spec.rank_by))
            .cloned(),
    );
    let best_text = |r: &PointRecord| {
        let o = &spec.rank_by[0];
        let v = r
            .metric(&o.metric)
            .map(|x| format!("{x:.2}"))
            .unwrap_or_else(|| "-".into());
        format!("best: point {} {}={v}", r.point, o.metric)
    };
    if let Some(r) = best.lock().as_ref() {
        bar.set_message(best_text(r));
    }

    // Prompt blocks per (workload, block size), shared by the points that use them.
    let prompt_blocks: HashMap<(usize, u32), OnceLock<PromptBlocks>> = tasks
        .iter()
        .map(|t| {
            (
                (t.workload, t.config.topology.block_size()),
                OnceLock::new(),
            )
        })
        .collect();
    let work = |t: usize| {
        let task = &tasks[t];
        let mut rec = run_one(
            task.rec.clone(),
            &workloads[task.workload],
            &prompt_blocks[&(task.workload, task.config.topology.block_size())],
            &task.config,
            &spec,
            backend,
            &bounds,
        );
        if let Some(&l) = dup_of.get(&rec.point) {
            rec.reason = Some(format!("same as point {l}"));
        }
        rec
    };
    let done = |rec: &PointRecord| {
        writer
            .append(rec)
            .map_err(|e| format!("cannot append to {}: {e}", writer.path.display()))?;
        if rec.status == Status::Ok {
            let mut cur = best.lock();
            if cur
                .as_ref()
                .is_none_or(|c| compare(rec, c, &spec.rank_by).is_lt())
            {
                bar.set_message(best_text(rec));
                *cur = Some(rec.clone());
            }
        }
        bar.inc();
        Ok(())
    };
    // Whoever writes the leaderboards first: the end of the run, or the grace-period watchdog.
    let finalizing = Mutex::new(false);
    let pool_done = AtomicBool::new(false);
    let finished = std::thread::scope(|ts| {
        if let Some(grace) = opts.stop_grace {
            let (finalizing, pool_done) = (&finalizing, &pool_done);
            let (outcome, writer, dir, spec) = (&outcome, &writer, &dir, &spec);
            ts.spawn(move || {
                let mut stopped_at: Option<Instant> = None;
                while !pool_done.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(100));
                    if stopped_at.is_none() && stop() {
                        stopped_at = Some(Instant::now());
                    }
                    if stopped_at.is_none_or(|t| t.elapsed() < grace) {
                        continue;
                    }
                    let mut claim = finalizing.lock();
                    if *claim {
                        return;
                    }
                    *claim = true;
                    // No line is appended to points.jsonl from here on; it holds the settled
                    // points and every finished one (read back rather than kept twice in memory).
                    let _held = writer.hold();
                    let mut records = match read_points(dir) {
                        Ok(f) => f.records,
                        Err(e) => {
                            eprintln!("error: {}", unwritable(dir, e));
                            std::process::exit(1);
                        }
                    };
                    records.sort_by_key(|r| r.point);
                    eprintln!(
                        "dynosim: the points still running did not finish within the {}s grace \
                         period (--stop-grace); writing the leaderboards without them",
                        grace.as_secs_f64()
                    );
                    let mut out = outcome.clone();
                    out.signal = crate::signals::last_signal();
                    let code = match finish_sweep(
                        &mut out, records, reused, true, dir, spec, total, shard, opts.quiet,
                    ) {
                        Ok(()) => out.exit_code(),
                        Err(e) => {
                            eprintln!("error: {e}");
                            e.exit_code()
                        }
                    };
                    std::process::exit(code);
                }
            });
        }
        let finished = execute(opts.jobs, &order, stop, &work, &done);
        let watchdog_finalizes = std::mem::replace(&mut *finalizing.lock(), true);
        pool_done.store(true, Ordering::SeqCst);
        if watchdog_finalizes {
            // It is writing the leaderboards and ends the process.
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        finished
    });
    bar.finish();
    let finished = finished?;
    let interrupted = stop();
    let mut records = settled;
    records.extend(finished);
    records.sort_by_key(|r| r.point);
    let copies = same_as_leaders(&mut records, followers, &dup_of);
    for r in &copies {
        writer.append(r).map_err(|e| {
            SweepError::Io(format!("cannot append to {}: {e}", writer.path.display()))
        })?;
    }
    records.extend(copies);
    records.sort_by_key(|r| r.point);
    finish_sweep(
        &mut outcome,
        records,
        reused,
        interrupted,
        &dir,
        &spec,
        total,
        shard,
        opts.quiet,
    )?;
    Ok(outcome)
}

/// Counts the outcome, writes the leaderboards of `records` (sorted by point) and prints the
/// summary.
#[allow(clippy::too_many_arguments)]
fn finish_sweep(
    outcome: &mut SweepOutcome,
    records: Vec<PointRecord>,
    reused: usize,
    interrupted: bool,
    dir: &Path,
    spec: &Spec,
    total: u64,
    shard: Option<(u32, u32)>,
    quiet: bool,
) -> Result<(), SweepError> {
    outcome.interrupted = interrupted;
    outcome.not_run = outcome.points - records.len() as u64;
    outcome.reused = reused as u64;
    outcome.count_statuses(&records);
    outcome.output = Some(dir.to_path_buf());
    write_leaderboards(dir, spec, total, shard, &records, interrupted, &[], quiet)?;
    if !quiet {
        println!("{}", outcome.summary());
    }
    Ok(())
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

/// The output folder before anything runs: earlier finished points this run does not reuse
/// (archived first, so that a kill at any moment loses none), spec copy, meta, and the points
/// settled so far (sorted by id); returns the writer that appends the rest.
pub(crate) fn prepare_folder(
    dir: &Path,
    spec: &Spec,
    total: u64,
    shard: Option<(u32, u32)>,
    previous: &archive::Previous,
    settled: &mut [PointRecord],
) -> Result<PointsWriter, SweepError> {
    std::fs::create_dir_all(dir).map_err(|e| unwritable(dir, e))?;
    keep_earlier_points(dir, spec, previous, settled)?;
    write_atomic(&dir.join(SPEC_FILE), spec.text.as_bytes()).map_err(|e| unwritable(dir, e))?;
    let meta = SweepMeta {
        name: spec.name.clone(),
        spec_file: spec.file.display().to_string(),
        spec_sha256: spec.sha256.clone(),
        dynosim_version: DYNOSIM_VERSION.to_string(),
        points_total: total,
        shard: shard.map(|(k, n)| [k, n]),
    };
    let meta_bytes = serde_json::to_vec_pretty(&meta).unwrap_or_default();
    write_atomic(&dir.join(META_FILE), &meta_bytes).map_err(|e| unwritable(dir, e))?;
    settled.sort_by_key(|r| r.point);
    let settled_bytes: Vec<u8> = settled.iter().flat_map(record_line).collect();
    write_atomic(&dir.join(POINTS_FILE), &settled_bytes).map_err(|e| unwritable(dir, e))?;
    PointsWriter::open(&dir.join(POINTS_FILE)).map_err(|e| unwritable(dir, e))
}

/// Before `points.jsonl` is rewritten with this run's points: archives the earlier finished
/// points this run does not reuse, and says so when the folder held another spec's results.
fn keep_earlier_points(
    dir: &Path,
    spec: &Spec,
    previous: &archive::Previous,
    settled: &[PointRecord],
) -> Result<(), SweepError> {
    let kept: HashSet<&str> = settled
        .iter()
        .filter(|r| r.status.ran())
        .map(|r| r.hash.as_str())
        .collect();
    let archived =
        archive::archive_unkept(dir, &previous.records, &kept).map_err(|e| unwritable(dir, e))?;
    let archive_path = dir.join(archive::ARCHIVE_FILE);
    match &previous.meta {
        Some(m) if m.spec_sha256 != spec.sha256 => {
            let old_spec = archive::archive_spec(dir, &m.spec_sha256)
                .map_err(|e| unwritable(dir, e))?
                .map(|f| format!(" (its spec is kept as {f})"))
                .unwrap_or_default();
            eprintln!(
                "dynosim: {} holds the results of a different spec (\"{}\" from {}, SHA-256 \
                 {}; now \"{}\", {}): {} of its finished points are in the new grid and reused, \
                 {archived} more are kept in {}{old_spec}; the leaderboards cover the new grid",
                dir.display(),
                m.name,
                m.spec_file,
                &m.spec_sha256[..m.spec_sha256.len().min(12)],
                spec.name,
                &spec.sha256[..12],
                kept.len(),
                archive_path.display()
            );
        }
        _ if archived > 0 => eprintln!(
            "dynosim: {archived} finished points of {} are not part of this run (another shard \
             or an edited spec); they are kept in {}",
            dir.display(),
            archive_path.display()
        ),
        _ => {}
    }
    Ok(())
}

/// Duplicate points: the followers whose leader has a result get a copy of it, and every
/// duplicate (also one simulated on its own, in another shard or an earlier run) says `same as
/// point N`. Returns the copies.
fn same_as_leaders(
    records: &mut [PointRecord],
    followers: Vec<PointRecord>,
    dup_of: &HashMap<u64, u64>,
) -> Vec<PointRecord> {
    let same = |l: u64| Some(format!("same as point {l}"));
    for r in records.iter_mut() {
        if let Some(&l) = dup_of.get(&r.point) {
            r.reason = same(l);
        }
    }
    let mut copies = Vec::new();
    for mut f in followers {
        let l = dup_of[&f.point];
        let Ok(i) = records.binary_search_by_key(&l, |r| r.point) else {
            continue; // not run (interrupted)
        };
        let leader = &records[i];
        f.status = leader.status;
        f.report = leader.report.clone();
        f.stopped_on = leader.stopped_on.clone();
        f.reason = same(l);
        copies.push(f);
    }
    copies
}

/// Writes `leaderboard.csv`, `leaderboard.json`, `leaderboard.md` and `report.html` (atomically)
/// and prints the top-10 table.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_leaderboards(
    dir: &Path,
    spec: &Spec,
    total: u64,
    shard: Option<(u32, u32)>,
    records: &[PointRecord],
    interrupted: bool,
    missing: &[u64],
    quiet: bool,
) -> Result<(), SweepError> {
    let rows = leaderboard::rank_grouped(records, &spec.rank_by, &spec.pareto, &spec.group_by);
    let columns = spec.param_columns();
    let io = |e: std::io::Error| {
        SweepError::Io(format!(
            "cannot write the leaderboards in {}: {e}",
            dir.display()
        ))
    };
    let key = columns::spec_key_metrics(spec);
    write_atomic(
        &dir.join(CSV_FILE),
        &leaderboard::csv_bytes(&rows, &columns, &key),
    )
    .map_err(io)?;
    let meta = Meta {
        name: &spec.name,
        spec_text: &spec.text,
        spec_sha256: &spec.sha256,
        points_total: total,
        shard,
        rank_by: &spec.rank_by,
        pareto: &spec.pareto,
        interrupted,
        missing,
    };
    write_atomic_with(&dir.join(JSON_FILE), |w| {
        leaderboard::write_json(&rows, &meta, w)
    })
    .map_err(io)?;
    let page = html::Page {
        spec,
        points_total: total,
        shard,
        interrupted,
        missing: missing.len() as u64,
    };
    write_atomic(
        &dir.join(html::HTML_FILE),
        html::html(&rows, &columns, &page).as_bytes(),
    )
    .map_err(io)?;
    write_atomic(
        &dir.join(markdown::MD_FILE),
        markdown::markdown(&rows, &columns, &key, markdown::MD_ROWS).as_bytes(),
    )
    .map_err(io)?;
    if !quiet {
        print!("{}", console::top_table(&rows, &key, &columns, 10));
    }
    Ok(())
}
