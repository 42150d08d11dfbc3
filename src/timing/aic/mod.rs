//! AIConfigurator (AIC) timing (spec §4.9.4, breadth spec §5), from the engine's identity to the
//! per-pass estimate:
//! * what an AIC engine *is* ([`AicEngineId`]: model, GPU system, backend, version, parallelism,
//!   dtypes), how its KV pool is estimated ([`AicKvEstimate`]), and the parsed `aic_*` engine args
//!   ([`AicArgs`]): plain data, here;
//! * `engines`: the compile step (AIConfigurator's Python SDK in a subprocess running
//!   `helper.py`), its disk cache, and the [`AicEngines`] set that loads each engine once;
//! * `estimator`: the Rust estimators (`aiconfigurator-core` 0.11.0 and 0.12.0) that answer queries;
//! * `latency`: [`AicLatency`], the latency model over one loaded engine, with its memo;
//! * `prefill_load_estimator`: the KV router's [`PrefillLoadEstimator`] over the same model.
//!
//! Reading the `aic_*` keys from JSON and checking them is `config::aic`'s; where the KV estimate
//! is applied is the caller's. Imports nothing above `timing`.

pub(crate) mod engines;
pub(crate) mod estimator;
pub(crate) mod latency;
pub(crate) mod prefill_load_estimator;

pub use engines::{
    cache_dir, catalog, python, systems_path_override, AicEngines, AicStats, Catalog, CompiledSpec,
    LoadedEngine, INSTALL_HINT,
};
pub use estimator::{Estimator, EstimatorVersion};
pub use latency::{AicLatency, FailureScope, DECODE_CONTEXT_STEP};
pub use prefill_load_estimator::PrefillLoadEstimator;

use serde::{Deserialize, Serialize};

/// One AIC engine: everything AIConfigurator's compile step takes. Two pools or sweep points with
/// equal ids share one compiled and loaded engine.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AicEngineId {
    pub model_path: String,
    pub system: String,
    pub backend: String,
    pub backend_version: String,
    pub tp_size: u32,
    pub attention_dp_size: u32,
    pub moe_tp_size: Option<u32>,
    pub moe_ep_size: Option<u32>,
    pub gemm_dtype: Option<String>,
    pub moe_dtype: Option<String>,
    pub fmha_dtype: Option<String>,
    pub kv_cache_dtype: Option<String>,
    pub comm_dtype: Option<String>,
    /// Multi-token prediction (`aic_nextn`): AIC times each decode step at `nextn + 1` tokens
    /// per sequence. Absent from the compile request (and so from its cache key) when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nextn: Option<u32>,
}

/// Inputs of the KV-pool estimate used when `num_gpu_blocks` is not given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AicKvEstimate {
    pub block_size: u32,
    pub max_num_batched_tokens: u64,
    /// `of_total` (vLLM, SGLang), `of_free` (TRT-LLM), or dynosim's `of_static` (SGLang's own
    /// accounting, `aic_memory_model: server`).
    pub memory_fraction_kind: String,
    pub memory_fraction_value: f64,
    /// `aic_memory_model: server`: count the weights as the checkpoint holds them where AIC's
    /// model class counts them otherwise (helper.py `checkpoint_weights_overcount`). Left out of
    /// the request (and so of the cache key) when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub checkpoint_weights: bool,
}

/// The `aic_*` keys of one engine-args object, as parsed (nothing compiled or loaded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AicArgs {
    pub engine: AicEngineId,
    /// `Some` when `num_gpu_blocks` was not given: the pool size comes from AIC's memory model.
    pub kv_estimate: Option<AicKvEstimate>,
    /// dynosim's `aic_decode_monotone` (not a DynoSim key): a decode step takes the least of
    /// AIC's times over its batch and larger ones ([`latency`]'s module doc).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub monotone_decode: bool,
}
