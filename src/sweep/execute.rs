//! The executor both planners share: the units of work on a rayon pool (`execute`), and what
//! one unit is made of — one simulation of a point (`run_one`) through the `Backend` (the real
//! simulation and workload loaders, or stand-ins in tests), an earlier run's result taken
//! instead (`reuse`), and the `require` bounds a simulation may stop early on (`stop_bounds`).
//!
//! `execute` runs units in the order the planner chose, handing each finished record to `done`
//! (which appends it to `points.jsonl` and moves the progress bar). It knows nothing about what a
//! unit does; the order units finish in never reaches a result except through `points.jsonl`,
//! whose order does not matter. This module plans nothing, writes no file and prints nothing.

use super::record::{PointRecord, Status, StoppedOn};
use super::served;
use super::spec::{Bound, Spec};
use super::SweepError;
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
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

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
    spec: &Spec,
    config: &SimConfig,
) -> Option<PointRecord> {
    let require = &spec.require;
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
    if prev.status == Status::Stalled && prev.report.is_none() {
        // The dead end of an uncapped run: nothing to classify, it stalls again.
        rec.status = Status::Stalled;
        rec.reason = prev.reason.clone();
        return Some(rec);
    }
    rec.report = prev.report.clone();
    if let Some(report) = rec.report.as_mut() {
        // Priced under today's `cost` (the prices may have changed since).
        super::cost::price_report(report, config, spec);
    }
    let (status, reason) = served::assess(&rec, require);
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
                proven_min: Some(stopped.proven_min),
                at_ms: Some(stopped.at_ms),
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
            served::add_window_rates(&mut report, config.max_sim_time_ms, workload.requests.len());
            super::cost::price_report(&mut report, config, spec);
            rec.report = Some(report);
            let (status, reason) = served::assess(&rec, &spec.require);
            rec.status = status;
            rec.reason = reason;
        }
        Ok(Err(SimError::DeadEnd(message))) => {
            rec.status = Status::Stalled;
            rec.reason = Some(format!("stalled: {message}"));
        }
        Ok(Err(e)) => {
            rec.status = Status::Failed;
            rec.reason = Some(e.to_string());
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

/// Runs `work(i)` for each `i` of `order` on `jobs` threads (all cores when `None`), stopping
/// to start new units once `stop()` says so or `done` fails. Returns the finished records in
/// finishing order.
pub(crate) fn execute(
    jobs: Option<usize>,
    order: &[usize],
    stop: &(dyn Fn() -> bool + Sync),
    work: &(dyn Fn(usize) -> PointRecord + Sync),
    done: &(dyn Fn(&PointRecord) -> Result<(), String> + Sync),
) -> Result<Vec<PointRecord>, SweepError> {
    // Worker threads get a main thread's stack, so a point that runs under `dynosim run` also
    // runs here.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.unwrap_or(0))
        .stack_size(8 << 20)
        .build()
        .map_err(|e| SweepError::Io(format!("cannot start worker threads: {e}")))?;
    let next = AtomicUsize::new(0);
    let finished: Mutex<Vec<PointRecord>> = Mutex::new(Vec::with_capacity(order.len()));
    let failure: Mutex<Option<String>> = Mutex::new(None);
    let threads = pool.current_num_threads().max(1);
    pool.scope(|s| {
        for _ in 0..threads {
            s.spawn(|_| loop {
                if stop() || failure.lock().is_some() {
                    break;
                }
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(&unit) = order.get(i) else {
                    break;
                };
                let rec = work(unit);
                if let Err(e) = done(&rec) {
                    failure.lock().get_or_insert(e);
                }
                finished.lock().push(rec);
            });
        }
    });
    if let Some(e) = failure.into_inner() {
        return Err(SweepError::Io(e));
    }
    Ok(finished.into_inner())
}
