//! The grid planner: every point of the grid (or of its shard) simulated once. Its stages, in
//! order: settle what needs no simulation (invalid, skipped, reused from `--resume`, duplicates
//! waiting for their leader) and collect the rest as tasks; refuse what cannot fit in memory and
//! load each distinct workload once; prepare the output folder; run the tasks through the
//! executor (largest first) with the progress bar and the grace-period watchdog; write the
//! leaderboards. It shares the executor and the output stage with the capacity planner and
//! imports no other planner.

use super::archive;
use super::execute::{execute, reuse, run_one, stop_bounds, Backend};
use super::expand::{dry_run_text, resolve_points, trace_identities};
use super::leaderboard::compare;
use super::output::{
    check_output_dir, finish_sweep, output_dir, prepare_folder, unwritable, RunContext,
};
use super::progress::Progress;
use super::record::{read_points, workload_identity, PointRecord, PointsWriter, Status};
use super::resolve::{ResolvedPoint, Verdict, WorkloadSource};
use super::spec::Spec;
use super::{Stop, SweepError, SweepOptions, SweepOutcome};
use crate::config::limits::{
    check_memory, human_bytes, memory_budget, memory_floor, MemoryPart, WorkloadShape,
};
use crate::config::SimConfig;
use crate::error::InputError;
use crate::sim::early_stop::StopBound;
use crate::workload::sharing::PromptBlocks;
use crate::workload::Workload;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

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

/// Rough cost of simulating a workload, to start the biggest points first.
fn workload_cost(w: &Workload) -> u64 {
    w.requests
        .iter()
        .map(|r| r.input_length as u64 / 64 + r.output_length as u64 + 1)
        .sum()
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

/// A grid sweep: expand, plan, execute, record, rank, write.
pub(crate) fn run_grid(
    opts: &SweepOptions,
    spec: &Spec,
    total: u64,
    shard: Option<(u32, u32)>,
    backend: &Backend,
    stop: &Stop,
) -> Result<SweepOutcome, SweepError> {
    let points = resolve_points(spec, total, shard)?;
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

    check_results_fit(spec, &points, memory_budget())?;
    let dir = output_dir(spec, opts);
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
    let trace_sha = trace_identities(&points)?;
    let mut plan = settle(points, spec, &previous, &trace_sha);
    load_workloads(spec, &mut plan, backend)?;
    if (stop.requested)() {
        // Ctrl-C while loading: nothing ran, the folder is left as it was.
        outcome.interrupted = true;
        outcome.not_run = outcome.points;
        return Ok(outcome);
    }

    let run = RunContext {
        dir: &dir,
        spec,
        points_total: total,
        shard,
        quiet: opts.quiet,
    };
    let writer = prepare_folder(&run, &previous, &mut plan.settled)?;
    let finished = run_tasks(opts, &run, &plan, backend, stop, &writer, &outcome)?;
    let interrupted = (stop.requested)();
    let Plan {
        settled,
        dup_of,
        followers,
        reused,
        ..
    } = plan;
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
    finish_sweep(&run, &mut outcome, records, reused, interrupted)?;
    Ok(outcome)
}

/// The grid's points sorted into what is settled without a simulation and what must run.
struct Plan {
    /// Invalid, skipped and reused points (and, later, those refused for memory).
    settled: Vec<PointRecord>,
    /// The simulations to run.
    tasks: Vec<Task>,
    /// The distinct workloads of the tasks, each with the first point that uses it.
    sources: Vec<(WorkloadSource, u64)>,
    /// Duplicate point -> the point it is the same simulation as.
    dup_of: HashMap<u64, u64>,
    /// Duplicates of a point simulated in this run, waiting for its result.
    followers: Vec<PointRecord>,
    /// Points taken from the earlier run.
    reused: usize,
    /// The loaded workloads, by index in `sources` (filled by `load_workloads`).
    workloads: Vec<Workload>,
}

/// Settles what needs no simulation; collects the rest as tasks.
fn settle(
    points: Vec<ResolvedPoint>,
    spec: &Spec,
    previous: &archive::Previous,
    trace_sha: &HashMap<PathBuf, String>,
) -> Plan {
    let mut reusable: HashMap<&str, &PointRecord> = HashMap::new();
    for r in &previous.records {
        reusable.entry(r.hash.as_str()).or_insert(r);
    }
    let mut settled: Vec<PointRecord> = Vec::new();
    let mut tasks: Vec<Task> = Vec::new();
    let mut workload_index: HashMap<String, usize> = HashMap::new();
    let mut sources: Vec<(WorkloadSource, u64)> = Vec::new();
    // Duplicates of a point simulated in this run wait for its result.
    let dup_of: HashMap<u64, u64> = points
        .iter()
        .filter_map(|p| p.duplicate_of.map(|l| (p.id, l)))
        .collect();
    let mut task_points: HashSet<u64> = Default::default();
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
                    if let Some(done) = reuse(rec.clone(), prev, spec, &p.config) {
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
    Plan {
        settled,
        tasks,
        sources,
        dup_of,
        followers,
        reused,
        workloads: Vec::new(),
    }
}

/// Loads each distinct workload some task still needs once, before anything is written (a
/// `Workload::default()` stands in for one no task needs). Tasks whose simulation cannot fit in
/// memory fail with a message instead of being killed by the OS: synthetic workloads are judged
/// before they are generated, traces once loaded.
fn load_workloads(spec: &Spec, plan: &mut Plan, backend: &Backend) -> Result<(), SweepError> {
    let budget = memory_budget();
    let shapes: Shapes = plan
        .sources
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
    refuse_oversized(&mut plan.tasks, &mut plan.settled, &shapes, budget);

    // Load each distinct workload some point still needs once, before writing anything.
    let mut needed = vec![false; plan.sources.len()];
    for t in &plan.tasks {
        needed[t.workload] = true;
    }
    let mut workloads: Vec<Workload> = Vec::with_capacity(plan.sources.len());
    for (i, (src, first_point)) in plan.sources.iter().enumerate() {
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
                e
            )))
        })?;
        for warning in &w.warnings {
            eprintln!("dynosim: warning: {warning}");
        }
        workloads.push(w);
    }
    if plan
        .tasks
        .iter()
        .any(|t| crate::sim::ignores_time_cap(&workloads[t.workload], &t.config))
    {
        eprintln!("dynosim: warning: {}", crate::sim::TIME_CAP_IGNORED);
    }
    // Loaded workloads are judged on their exact shareable prompt blocks, which depend on the
    // engine block size: counted once per (workload, block size), before any is computed.
    let mut shapes = Shapes::new();
    for t in &plan.tasks {
        let bs = t.config.topology.block_size();
        shapes
            .entry((t.workload, bs))
            .or_insert_with(|| WorkloadShape::of_workload(&workloads[t.workload], bs));
    }
    refuse_oversized(&mut plan.tasks, &mut plan.settled, &shapes, budget);
    plan.workloads = workloads;
    Ok(())
}

/// Runs the tasks through the executor, largest workloads first (ties by id), appending each
/// finished point to `points.jsonl` and showing the best so far on the progress bar. With
/// `--stop-grace`, a watchdog writes the leaderboards without the points still running once the
/// grace period after a stop request is over, and ends the process. Returns the finished records.
fn run_tasks(
    opts: &SweepOptions,
    run: &RunContext,
    plan: &Plan,
    backend: &Backend,
    stop: &Stop,
    writer: &PointsWriter,
    outcome: &SweepOutcome,
) -> Result<Vec<PointRecord>, SweepError> {
    let (spec, tasks, workloads) = (run.spec, &plan.tasks, &plan.workloads);
    let bounds: Vec<StopBound> = if opts.early_stop && spec.early_stop {
        stop_bounds(&spec.require)
    } else {
        Vec::new()
    };
    let costs: Vec<u64> = workloads.iter().map(workload_cost).collect();
    // Largest points first; ties by id.
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    order.sort_by(|&a, &b| {
        costs[tasks[b].workload]
            .cmp(&costs[tasks[a].workload])
            .then(tasks[a].rec.point.cmp(&tasks[b].rec.point))
    });

    let bar = Progress::start(tasks.len() as u64, opts.quiet, opts.progress_every);
    let best: Mutex<Option<PointRecord>> = Mutex::new(
        plan.settled
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
            spec,
            backend,
            &bounds,
        );
        if let Some(&l) = plan.dup_of.get(&rec.point) {
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
            let watchdog = Watchdog {
                grace,
                stop,
                finalizing: &finalizing,
                pool_done: &pool_done,
                run,
                outcome,
                writer,
                reused: plan.reused,
            };
            ts.spawn(move || watchdog.watch());
        }
        let finished = execute(opts.jobs, &order, stop.requested, &work, &done);
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
    finished
}

/// After a stop request, waits out `--stop-grace` while points still run; then writes the
/// leaderboards of the settled and finished points (unless the run finished first) and hands
/// the exit code to `stop.end_process`.
struct Watchdog<'a> {
    grace: Duration,
    stop: &'a Stop<'a>,
    /// Set by whoever writes the leaderboards first.
    finalizing: &'a Mutex<bool>,
    pool_done: &'a AtomicBool,
    run: &'a RunContext<'a>,
    outcome: &'a SweepOutcome,
    writer: &'a PointsWriter,
    reused: usize,
}

impl Watchdog<'_> {
    fn watch(self) {
        let mut stopped_at: Option<Instant> = None;
        while !self.pool_done.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(100));
            if stopped_at.is_none() && (self.stop.requested)() {
                stopped_at = Some(Instant::now());
            }
            if stopped_at.is_none_or(|t| t.elapsed() < self.grace) {
                continue;
            }
            let mut claim = self.finalizing.lock();
            if *claim {
                return;
            }
            *claim = true;
            // No line is appended to points.jsonl from here on (held until the process ends);
            // it holds the settled points and every finished one (read back rather than kept
            // twice in memory).
            let _held = self.writer.hold();
            let code = self.finalize();
            (self.stop.end_process)(code);
        }
    }

    /// Writes the leaderboards from `points.jsonl` (held by the caller), without the points
    /// still running; returns the exit code.
    fn finalize(&self) -> i32 {
        let dir = self.run.dir;
        let mut records = match read_points(dir) {
            Ok(f) => f.records,
            Err(e) => {
                eprintln!("error: {}", unwritable(dir, e));
                return 1;
            }
        };
        records.sort_by_key(|r| r.point);
        eprintln!(
            "dynosim: the points still running did not finish within the {}s grace period \
             (--stop-grace); writing the leaderboards without them",
            self.grace.as_secs_f64()
        );
        let mut out = self.outcome.clone();
        out.signal = crate::signals::last_signal();
        match finish_sweep(self.run, &mut out, records, self.reused, true) {
            Ok(()) => out.exit_code(),
            Err(e) => {
                eprintln!("error: {e}");
                e.exit_code()
            }
        }
    }
}
