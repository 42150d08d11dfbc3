//! `dynosim validate MEASURED... -o DIR`: how far simulation is from measured GPUs. Each measured
//! point (a row of AIConfigurator's table of measured deployments, or an AIPerf export with the
//! deployment flags of `dynosim run`) becomes one `dynosim run` invocation: its deployment, its
//! benchmark-shaped workload; the points are simulated in parallel and their predicted TTFT and
//! TPOT compared with the measured ones.
//!
//! Data flows one way:
//! * `points`: reading the inputs (detected by content) into [`MeasuredPoint`]s;
//! * `deployment`: a point -> the engine-args JSON and workload flags of its run ([`Recipe`]),
//!   with the model-name and backend-version mapping onto the installed AIConfigurator data;
//! * `simulate`: recipes -> `run::plan_with` through one shared timing loader (each distinct AIC
//!   engine compiled and loaded once), then the plans simulated in parallel -> [`PointResult`];
//! * `summary`, `output`, `html`: the per-group errors, `validation.csv`/`.json`, the console
//!   summary and `validation.html`.
//!
//! The library API ([`MeasuredPoint`], [`Options`], [`Corrections`], [`Validator`],
//! [`simulate`]) is what `dynosim calibrate` reuses: it simulates the same points with
//! per-family corrections of the engine args (speed-up ratios and any other key).
//!
//! A point that cannot be simulated is never dropped: its result has status `unsupported` (the
//! deployment cannot be expressed: pipeline parallelism, a model or GPU without perf data,
//! DynoSim's refusals) or `failed` (it was expressed, but the simulation or AIC's estimator
//! failed), with the reason.

pub mod calibration;
pub(crate) mod catalog;
pub(crate) mod deployment;
pub(crate) mod deployment_from;
pub(crate) mod html;
pub(crate) mod launch;
pub(crate) mod output;
pub(crate) mod points;
pub(crate) mod simulate;
pub(crate) mod summary;

pub use catalog::AicCatalog;
pub use deployment::{DispatchOverhead, KvCacheDtype, MemoryModel, Recipe};
pub use launch::LaunchSettings;
pub use output::{run as run_command, ValidateOutcome};
pub use points::{
    read_inputs, Deployment, FlagDeployment, MeasuredPoint, Parallel, TableDeployment,
    WorkloadShape,
};
pub use simulate::{simulate, Validator};
pub use summary::{summarize, GroupSummary};

use crate::config::DpRankRouting;
use serde::Serialize;
use std::collections::BTreeMap;

/// How points are turned into simulations (the `dynosim validate` flags).
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Requests per unit of concurrency for table rows (`--prompts-per-concurrency`, InferenceX's
    /// `--num-prompts 10×C`).
    pub prompts_per_concurrency: u32,
    /// Lengths of table rows drawn uniformly in `[⌊R·L⌋, L]` (`--random-range-ratio`).
    pub random_range_ratio: f64,
    /// KV-cache dtype of table rows (`--kv-cache-dtype`).
    pub kv_cache_dtype: KvCacheDtype,
    /// How table rows' KV pools are sized (`--memory-model`).
    pub memory_model: MemoryModel,
    /// Whether table rows' AIC decode times are read as monotone in the batch
    /// (`--decode-timing monotone`: `aic_decode_monotone`).
    pub monotone_decode: bool,
    /// Whether table rows' vLLM and TRT-LLM steps that prefill and decode are timed as one
    /// forward (`--mixed-pass fused`: `mixed_pass`), where the row runs no MTP.
    pub fused_mixed_pass: bool,
    /// The dispatch cost of prefill passes of table rows (`--dispatch-overhead`).
    pub dispatch_overhead: DispatchOverhead,
    /// The scheduler settings of table rows' servers (`--launch-settings`).
    pub launch: LaunchSettings,
    /// Who picks the DP rank of table rows' requests (`--dp-rank-routing`).
    pub dp_rank_routing: DpRankRouting,
    /// `max_num_batched_tokens` of table rows (the measured servers' 8192).
    pub max_num_batched_tokens: u64,
    /// `--seed` of every run (router tie-breaking) and `--arrival-seed` (lengths, arrivals).
    pub seed: u64,
    /// Parallel simulations (`-j`); `None`: one per CPU.
    pub jobs: Option<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            prompts_per_concurrency: 10,
            random_range_ratio: 0.8,
            kv_cache_dtype: KvCacheDtype::Auto,
            memory_model: MemoryModel::Server,
            monotone_decode: true,
            fused_mixed_pass: false,
            dispatch_overhead: DispatchOverhead::Engines,
            launch: LaunchSettings::InferenceX,
            dp_rank_routing: DpRankRouting::Engine,
            max_num_batched_tokens: 8192,
            seed: 42,
            jobs: None,
        }
    }
}

/// A point's family (what one set of corrections applies to) is a calibration file's: GPU
/// system, backend and model, narrowed by a decoding mode, weight quantisation or deployment
/// shape where a calibration has entries for them.
pub use crate::calibrate::Family;

/// Engine-args keys set on every pool of a family's points (e.g. `speedup_ratio`,
/// `decode_speedup_ratio`), over what the point's deployment sets.
pub type Correction = serde_json::Map<String, serde_json::Value>;

/// Corrections per family; a family without one is simulated as it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Corrections {
    pub by_family: BTreeMap<Family, Correction>,
}

impl Corrections {
    /// No corrections.
    pub fn none() -> Self {
        Self::default()
    }

    /// The most specific correction for `family`, in the order calibration files are looked up
    /// ([`crate::calibrate::narrowings`]: from its decoding mode, quantisation and shape down
    /// to the family).
    pub fn get(&self, family: &Family) -> Option<&Correction> {
        family
            .fallbacks()
            .iter()
            .find_map(|f| self.by_family.get(f))
    }
}

/// What became of one point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Failed,
    Unsupported,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failed => "failed",
            Status::Unsupported => "unsupported",
        }
    }
}

/// The predicted metrics kept per point (from the run's report; milliseconds, requests/s,
/// tokens/s).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Predicted {
    pub ttft_ms: f64,
    pub tpot_ms: f64,
    pub median_ttft_ms: f64,
    pub p99_ttft_ms: f64,
    pub median_tpot_ms: f64,
    pub mean_itl_ms: f64,
    pub mean_e2e_latency_ms: f64,
    pub request_throughput_rps: f64,
    pub output_throughput_tok_s: f64,
    pub completed_requests: u64,
    pub duration_ms: f64,
}

/// One point's result: the point, the run that was simulated, the prediction and its errors.
#[derive(Debug, Clone, PartialEq)]
pub struct PointResult {
    /// Index of the point in the input slice.
    pub index: usize,
    pub status: Status,
    /// Why the point is `failed` or `unsupported` (empty when `ok`).
    pub reason: String,
    /// The installed AIC backend version the simulation used (may differ from the row's).
    pub backend_version_used: String,
    /// The simulated run, when one could be built (corrections applied).
    pub recipe: Option<Recipe>,
    pub predicted: Option<Predicted>,
    /// `(predicted − measured) / measured × 100`, when both exist.
    pub ttft_error_pct: Option<f64>,
    pub tpot_error_pct: Option<f64>,
}

impl PointResult {
    /// Where the simulation departs from the point as given (a relabelled parallelism, the
    /// launch script's prompt count, a context-attention dtype timed in place of the
    /// checkpoint's), one sentence each: the notes of its recipe.
    pub fn notes(&self) -> &[String] {
        self.recipe.as_ref().map_or(&[], |r| &r.notes)
    }
}

/// Signed percentage error of `predicted` against `measured` (`None` without a positive
/// measurement).
pub fn error_pct(predicted: f64, measured: Option<f64>) -> Option<f64> {
    let m = measured.filter(|m| m.is_finite() && *m > 0.0)?;
    predicted.is_finite().then(|| (predicted - m) / m * 100.0)
}

#[cfg(test)]
mod tests;
