//! Points -> results. Each point's recipe becomes a `dynosim run` plan through one shared timing
//! loader (so each distinct AIC engine is compiled and loaded once, however many points and
//! calls use it: calibration calls [`Validator::simulate`] many times), then the plans are
//! simulated in parallel on a rayon pool. Results are in the points' order and do not depend on
//! the number of threads.

use super::catalog::AicCatalog;
use super::deployment::{recipe, Recipe};
use super::points::{Deployment, MeasuredPoint};
use super::{error_pct, Corrections, Options, PointResult, Predicted, Status};
use crate::config::SimConfig;
use crate::error::InputError;
use crate::run::{plan_with, RunPlan};
use crate::timing::aic::AicStats;
use crate::timing::TimingLoader;
use parking_lot::Mutex;
use rayon::prelude::*;
use std::collections::HashMap;
use std::time::UNIX_EPOCH;

/// Simulates measured points; keeps the AIC engines loaded between calls.
pub struct Validator {
    options: Options,
    /// Loaded on first need (a table row), once.
    catalog: Mutex<Option<Result<AicCatalog, String>>>,
    loader: Mutex<TimingLoader>,
    /// Engine args whose AIC engine could not be built or loaded, with the message: a failed
    /// compile is not cached on disk, and many points share one engine.
    engine_failures: Mutex<HashMap<String, String>>,
    pool: rayon::ThreadPool,
}

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Validator")
            .field("options", &self.options)
            .finish()
    }
}

/// Simulates `points` once with `corrections` (a [`Validator`] for one call).
pub fn simulate(
    points: &[MeasuredPoint],
    options: &Options,
    corrections: &Corrections,
) -> Result<Vec<PointResult>, InputError> {
    Ok(Validator::new(options.clone())?.simulate(points, corrections))
}

impl Validator {
    pub fn new(options: Options) -> Result<Self, InputError> {
        let mut b = rayon::ThreadPoolBuilder::new();
        if let Some(j) = options.jobs {
            b = b.num_threads(j.max(1));
        }
        let pool = b
            .build()
            .map_err(|e| InputError::new(format!("cannot start the worker threads: {e}")))?;
        Ok(Validator {
            options,
            catalog: Mutex::new(None),
            loader: Mutex::new(TimingLoader::default()),
            engine_failures: Mutex::new(HashMap::new()),
            pool,
        })
    }

    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The AIC engines loaded so far.
    pub fn aic_stats(&self) -> AicStats {
        self.loader.lock().aic_engines().stats()
    }

    /// Refuses (with the installation hint) when `points` has table rows and AIConfigurator's
    /// package cannot be asked what it has: nothing of the table could be simulated.
    pub fn check_catalog(&self, points: &[MeasuredPoint]) -> Result<(), InputError> {
        if points
            .iter()
            .any(|p| matches!(p.deployment, Deployment::Table(_)))
        {
            self.catalog().map_err(InputError::new)?;
        }
        Ok(())
    }

    /// The installed AIC catalog (asked once); `Err`: why there is none.
    fn catalog(&self) -> Result<AicCatalog, String> {
        let mut c = self.catalog.lock();
        c.get_or_insert_with(|| AicCatalog::load().map_err(|e| e.to_string()))
            .clone()
    }

    /// Each point's recipe before corrections (`None`: the point cannot be expressed).
    pub fn recipes(&self, points: &[MeasuredPoint]) -> Vec<Option<Recipe>> {
        let catalog = self.catalog().ok();
        points
            .iter()
            .map(|p| recipe(p, &self.options, catalog.as_ref()).ok().map(|r| r.0))
            .collect()
    }

    /// The recipe and plan of each point, built in order through the shared loader.
    fn plan_all(
        &self,
        points: &[MeasuredPoint],
        corrections: &Corrections,
    ) -> Vec<Result<(Recipe, String, RunPlan), Box<PointResult>>> {
        let needs_catalog = points
            .iter()
            .any(|p| matches!(p.deployment, Deployment::Table(_)));
        let catalog = if needs_catalog {
            Some(self.catalog())
        } else {
            None
        };
        let mut loader = self.loader.lock();
        let mut failures = self.engine_failures.lock();
        points
            .iter()
            .enumerate()
            .map(|(index, p)| {
                let fail = |status, reason: String, recipe: Option<Recipe>, used: String| {
                    Box::new(PointResult {
                        index,
                        status,
                        reason,
                        backend_version_used: used,
                        recipe,
                        predicted: None,
                        ttft_error_pct: None,
                        tpot_error_pct: None,
                    })
                };
                let cat = match (&catalog, &p.deployment) {
                    (Some(Err(e)), Deployment::Table(_)) => {
                        return Err(fail(Status::Failed, e.clone(), None, String::new()))
                    }
                    (Some(Ok(c)), _) => Some(c),
                    _ => None,
                };
                let (mut r, used) = recipe(p, &self.options, cat)
                    .map_err(|why| fail(Status::Unsupported, why, None, String::new()))?;
                let narrow = super::calibration::narrowed(&r, p.family());
                if let Some(c) = corrections.get(&narrow) {
                    r.apply(c);
                }
                let args = match r.run_args() {
                    Ok(a) => a,
                    Err(e) => return Err(fail(Status::Unsupported, e.to_string(), Some(r), used)),
                };
                let engines = r.engine_args_json();
                if let Some(msg) = failures.get(&engines) {
                    return Err(fail(Status::Failed, msg.clone(), Some(r), used));
                }
                match plan_with(&args, UNIX_EPOCH, &mut loader) {
                    Ok(plan) => Ok((r, used, plan)),
                    Err(e) => {
                        // AIC refusing to build or load the engine (no perf data for one of its
                        // operations, no memory left for the KV cache) is a failure of the
                        // estimate; the rest are refusals of the deployment.
                        let msg = e.to_string();
                        let status = if e.is_unbuildable() || msg.contains("AIC engine") {
                            failures.insert(engines, msg.clone());
                            Status::Failed
                        } else {
                            Status::Unsupported
                        };
                        Err(fail(status, msg, Some(r), used))
                    }
                }
            })
            .collect()
    }

    /// Simulates every point (in parallel) with `corrections`; one result per point, in order.
    pub fn simulate(
        &self,
        points: &[MeasuredPoint],
        corrections: &Corrections,
    ) -> Vec<PointResult> {
        let planned = self.plan_all(points, corrections);
        self.pool.install(|| {
            planned
                .into_par_iter()
                .enumerate()
                .map(|(index, planned)| match planned {
                    Err(result) => *result,
                    Ok((recipe, used, plan)) => run_one(index, &points[index], recipe, used, &plan),
                })
                .collect()
        })
    }
}

/// The first failed timing prediction of any pool (AIC estimator errors are fatal, as in
/// `dynosim run`).
fn timing_failure(cfg: &SimConfig) -> Option<String> {
    cfg.topology
        .engines()
        .iter()
        .find_map(|e| e.timing.failure())
}

/// A note for each pool timed with another context-attention dtype than its checkpoint's.
fn fmha_fallbacks(cfg: &SimConfig) -> Vec<String> {
    let engines = cfg.topology.engines();
    let mut notes: Vec<String> = engines
        .iter()
        .filter_map(|e| {
            let dtype = e.timing.aic_latency()?.fmha_fallback()?;
            Some(format!(
                "context attention timed with {dtype} data: AIC's perf data has none for the \
                 checkpoint's fp8 (AIConfigurator's own fallback, which aic_fmha_dtype overrides)"
            ))
        })
        .collect();
    notes.dedup();
    notes
}

fn run_one(
    index: usize,
    p: &MeasuredPoint,
    mut recipe: Recipe,
    used: String,
    plan: &RunPlan,
) -> PointResult {
    recipe.notes.extend(fmha_fallbacks(&plan.sim));
    let mut result = PointResult {
        index,
        status: Status::Failed,
        reason: String::new(),
        backend_version_used: used,
        recipe: Some(recipe),
        predicted: None,
        ttft_error_pct: None,
        tpot_error_pct: None,
    };
    match simulate_plan(plan) {
        Err(why) => result.reason = why,
        Ok(pred) => {
            result.status = Status::Ok;
            result.ttft_error_pct = error_pct(pred.ttft_ms, p.measured_ttft_ms);
            result.tpot_error_pct = error_pct(pred.tpot_ms, p.measured_tpot_ms);
            result.predicted = Some(pred);
        }
    }
    result
}

fn simulate_plan(plan: &RunPlan) -> Result<Predicted, String> {
    let workload = plan.workload.load().map_err(|e| e.to_string())?;
    if let Some(why) = crate::sim::driver::unsupported_release(&workload, &plan.sim) {
        return Err(why.into());
    }
    let out = crate::sim::simulate(&workload, &plan.sim).map_err(|e| e.to_string())?;
    if let Some(e) = timing_failure(&plan.sim) {
        return Err(e);
    }
    let r = &out.report;
    if let Some(w) = crate::report::accounting::warning(r) {
        return Err(w);
    }
    let get = |k: &str| r.get(k).unwrap_or(f64::NAN);
    let completed = r.get("completed_requests").unwrap_or(0.0);
    if completed < 1.0 {
        return Err("no request completed".into());
    }
    Ok(Predicted {
        ttft_ms: get("mean_ttft_ms"),
        tpot_ms: get("mean_tpot_ms"),
        median_ttft_ms: get("median_ttft_ms"),
        p99_ttft_ms: get("p99_ttft_ms"),
        median_tpot_ms: get("median_tpot_ms"),
        mean_itl_ms: get("mean_itl_ms"),
        mean_e2e_latency_ms: get("mean_e2e_latency_ms"),
        request_throughput_rps: get("request_throughput_rps"),
        output_throughput_tok_s: get("output_throughput_tok_s"),
        completed_requests: completed as u64,
        duration_ms: get("duration_ms"),
    })
}
