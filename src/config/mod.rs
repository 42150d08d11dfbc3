//! One deployment configuration as plain data: engine args per pool, router, load shaping, SLA.
//! Parsing from DynoSim's JSON flags lives in `engine_args` and `router_config`; this module owns
//! only the types and their defaults (spec §4.1, §6.4).

pub(crate) mod aic;
pub(crate) mod build;
pub mod engine_args;
mod json_fields;
pub(crate) mod limits;
pub(crate) mod router_config;

use crate::timing::aic::PrefillLoadEstimator;
use crate::timing::Timing;
use serde::{Deserialize, Serialize};

/// Which role an engine plays (spec §1.2 rule 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum WorkerType {
    #[default]
    Aggregated,
    Prefill,
    Decode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PreemptionMode {
    #[default]
    Lifo,
    Fifo,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum KvTransferTimingMode {
    #[default]
    FullPrompt,
    DestinationMissing,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum QueuePolicy {
    #[default]
    Fcfs,
    Lcfs,
    Wspt,
}

/// Which engine a worker pool runs (`engine_type`, case-insensitive in the JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum EngineType {
    #[default]
    Vllm,
    Sglang,
    Trtllm,
}

impl EngineType {
    /// The name as DynoSim's messages print it (`engine_type=Sglang`).
    pub fn display_name(self) -> &'static str {
        match self {
            EngineType::Vllm => "Vllm",
            EngineType::Sglang => "Sglang",
            EngineType::Trtllm => "Trtllm",
        }
    }
}

/// SGLang's waiting-queue order (`sglang.schedule_policy`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SchedulePolicy {
    /// `fifo`, `fcfs` or absent.
    #[default]
    Fifo,
    /// Longest prefix match first (spec breadth §1.8).
    Lpm,
    /// Any other name: DynoSim warns and runs FIFO.
    Unknown(String),
}

/// The `sglang` object of the engine args, defaults resolved (breadth §1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SglangArgs {
    pub schedule_policy: SchedulePolicy,
    /// Token budget of one pass's prefill batch.
    pub max_prefill_tokens: u64,
    /// Prompts longer than this are prefilled in chunks; also the per-pass chunk budget.
    pub chunked_prefill_size: u64,
    /// Cap on the remaining output a request reserves in the admission budget.
    pub clip_max_new_tokens: u64,
    /// Scales the initial `new_token_ratio` (0.7); not range-checked, like DynoSim.
    pub schedule_conservativeness: f64,
    /// SGLang's `--scheduler-recv-interval` (dynosim's; DynoSim ignores it): while the batch
    /// decodes, new requests are taken in once every this many decode passes (1: every pass).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub scheduler_recv_interval: u32,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

impl Default for SglangArgs {
    fn default() -> Self {
        SglangArgs {
            schedule_policy: SchedulePolicy::Fifo,
            max_prefill_tokens: 16384,
            chunked_prefill_size: 8192,
            clip_max_new_tokens: 4096,
            schedule_conservativeness: 1.0,
            scheduler_recv_interval: 1,
        }
    }
}

/// Resolved engine arguments of one worker pool (`MockEngineArgs`, spec §4.1). Keys with no
/// effect offline are accepted by the parser and dropped.
/// Not `Deserialize`: the timing model is built from files, not read back from a record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EngineArgs {
    pub engine_type: EngineType,
    /// SGLang settings (used when `engine_type` is SGLang; `block_size` is its page size).
    pub sglang: SglangArgs,
    /// The KV pool's blocks per engine rank: given, or AIC's memory-model estimate (before
    /// `kv_pool_scale`; the engines size their pools by [`EngineArgs::kv_pool_blocks`]).
    pub num_gpu_blocks: u64,
    /// dynosim's `kv_pool_scale` (not a DynoSim key; 1 = DynoSim): multiplies the KV pool's
    /// block count (`num_gpu_blocks`, given or estimated). How a calibration corrects a pool
    /// the measured servers held more or fewer tokens in than the memory model gives.
    #[serde(skip_serializing_if = "is_unit")]
    pub kv_pool_scale: f64,
    /// dynosim's `server_version` (not a DynoSim key): the release of the serving engine the
    /// pool stands for (`"0.17.0"`), as measured deployments name it. It changes no timing (AIC
    /// times the pool by `aic_backend_version`'s data) and picks a calibration's entry for that
    /// release.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// Tokens per KV block (64 for vLLM when 0/absent).
    pub block_size: u32,
    pub max_model_len: Option<u64>,
    /// `None` = unlimited.
    pub max_num_seqs: Option<u64>,
    /// `None` = unlimited.
    pub max_num_batched_tokens: Option<u64>,
    pub enable_prefix_caching: bool,
    pub enable_chunked_prefill: bool,
    pub speedup_ratio: f64,
    pub decode_speedup_ratio: f64,
    pub dp_size: u32,
    pub worker_type: WorkerType,
    pub preemption_mode: PreemptionMode,
    pub kv_bytes_per_token: Option<u64>,
    /// GB/s; `None` or 0 disables the transfer delay.
    pub kv_transfer_bandwidth: Option<f64>,
    pub kv_transfer_timing_mode: KvTransferTimingMode,
    /// Replay-only override of the router queue policy.
    pub router_queue_policy: Option<QueuePolicy>,
    /// GPUs per worker for GPU-hours: `aic_tp_size.unwrap_or(1) * dp_size`.
    pub tp_size: u32,
    /// dynosim's `request_overhead_ms` (not a DynoSim key; 0 = DynoSim): ms from a client's send
    /// until the pool sees the request (HTTP, tokenisation, routing). It counts in TTFT and
    /// end-to-end latency and holds a closed-loop slot. Read from the pool requests enter (the
    /// aggregated pool, or the prefill pool).
    #[serde(skip_serializing_if = "is_zero")]
    pub request_overhead_ms: f64,
    /// dynosim's `prefill_pass_overhead_ms` (not a DynoSim key; 0 = DynoSim): ms added to every
    /// engine pass that computes prompt tokens, not scaled by `speedup_ratio`: the host's cost
    /// of dispatching an eagerly run prefill forward, which per-kernel timings leave out
    /// (AIConfigurator models it for vLLM as 0.8 ms per layer).
    #[serde(skip_serializing_if = "is_zero")]
    pub prefill_pass_overhead_ms: f64,
    /// dynosim's `decode_pass_overhead_ms` (not a DynoSim key; 0 = DynoSim): ms added to every
    /// engine pass that decodes, not scaled by the speed-up ratios; it may be negative (a pass's
    /// decode time never goes below 0). A calibration's per-iteration correction: the serving
    /// stack's fixed cost of a decode iteration that per-kernel timings leave out, or a fixed
    /// part of the timed step the measured servers did not pay.
    #[serde(skip_serializing_if = "is_zero")]
    pub decode_pass_overhead_ms: f64,
    /// dynosim's `decode_time_scale` (not a DynoSim key; 1 = DynoSim): multiplies the time of
    /// every pass that decodes, on top of the speed-up ratios (before `decode_pass_overhead_ms`).
    /// The same as dividing `decode_speedup_ratio`, and allowed where that ratio must stay 1
    /// (multi-token prediction): how a calibration scales an MTP pool's decode steps.
    #[serde(skip_serializing_if = "is_unit")]
    pub decode_time_scale: f64,
    /// TRT-LLM's batch waiting (`trtllm.batch_wait_timeout_iters` and
    /// `trtllm.batch_wait_max_tokens_ratio`, read for `engine_type` trtllm only; DynoSim ignores
    /// them; off by default).
    #[serde(skip_serializing_if = "BatchWait::is_off")]
    pub batch_wait: BatchWait,
    /// TRT-LLM's attention-DP balancing (`trtllm.attention_dp_enable_balance`,
    /// `trtllm.attention_dp_timeout_iters`, `trtllm.attention_dp_batching_wait_iters`; read for
    /// `engine_type` trtllm only, acting with `dp_size` > 1; DynoSim ignores them; off by default).
    #[serde(skip_serializing_if = "AdpBalance::is_off")]
    pub adp_balance: AdpBalance,
    /// dynosim's `dp_rank_routing` (not a DynoSim key; `router` = DynoSim): who picks a
    /// request's DP rank when `dp_size` > 1 and the pool routes round robin.
    #[serde(skip_serializing_if = "DpRankRouting::is_router")]
    pub dp_rank_routing: DpRankRouting,
    /// DynoSim's multi-token prediction (`aic_nextn`, `aic_nextn_accept_rates`, `aic_mtp_seed`):
    /// each decode pass emits a burst of accepted tokens per sequence. `None` = off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtp: Option<Mtp>,
    /// dynosim's `mixed_pass` (not a DynoSim key; `separate` = DynoSim): how a pass that
    /// computes prompt tokens and decodes is timed.
    #[serde(skip_serializing_if = "MixedPass::is_separate")]
    pub mixed_pass: MixedPass,
    /// Forward-pass timing model (spec §4.9), shared with every pool built from the same source.
    /// Left out of the serialised configuration when it is the default polynomial.
    #[serde(skip_serializing_if = "Timing::is_polynomial")]
    pub timing: Timing,
}

impl Default for EngineArgs {
    fn default() -> Self {
        EngineArgs {
            engine_type: EngineType::Vllm,
            sglang: SglangArgs::default(),
            num_gpu_blocks: 16384,
            kv_pool_scale: 1.0,
            block_size: 64,
            max_model_len: None,
            max_num_seqs: Some(256),
            max_num_batched_tokens: Some(8192),
            enable_prefix_caching: true,
            enable_chunked_prefill: true,
            speedup_ratio: 1.0,
            decode_speedup_ratio: 1.0,
            dp_size: 1,
            worker_type: WorkerType::Aggregated,
            preemption_mode: PreemptionMode::Lifo,
            kv_bytes_per_token: None,
            kv_transfer_bandwidth: None,
            kv_transfer_timing_mode: KvTransferTimingMode::FullPrompt,
            router_queue_policy: None,
            tp_size: 1,
            request_overhead_ms: 0.0,
            prefill_pass_overhead_ms: 0.0,
            decode_pass_overhead_ms: 0.0,
            decode_time_scale: 1.0,
            server_version: None,
            batch_wait: BatchWait::default(),
            adp_balance: AdpBalance::default(),
            dp_rank_routing: DpRankRouting::Router,
            mtp: None,
            mixed_pass: MixedPass::Separate,
            timing: Timing::default(),
        }
    }
}

/// Multi-token prediction as DynoSim simulates it (its `aic_nextn` engine args): in each decode
/// pass a sequence emits 1 + k tokens, k the number of `nextn` drafted tokens accepted in a row,
/// the i-th accepted with probability `accept_rates[i]` given the ones before it, drawn from a
/// generator seeded `seed` + the scheduler's index in its pool (worker × DP ranks + rank). With
/// AIC timing the pass is timed at `nextn + 1` tokens per sequence (the target model verifying
/// the drafts).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mtp {
    pub nextn: u32,
    /// Conditional acceptance rate of each drafted token, `nextn` of them.
    pub accept_rates: Vec<f64>,
    pub seed: u64,
}

impl Mtp {
    /// DynoSim's (and AIConfigurator's) acceptance rates when none are given.
    pub const DEFAULT_ACCEPT_RATES: [f64; 5] = [0.85, 0.3, 0.0, 0.0, 0.0];
    /// DynoSim's `aic_mtp_seed` default.
    pub const DEFAULT_SEED: u64 = 42;
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

pub(crate) fn is_unit(x: &f64) -> bool {
    *x == 1.0
}

/// TRT-LLM's batch waiting (its `batch_wait_timeout_iters` and `batch_wait_max_tokens_ratio`
/// settings): while sequences are decoding, new prompts are held back from the batch, pass after
/// pass, until either `timeout_iters` passes have held them or the tokens the pass would
/// schedule (the held prompts' lengths plus one per decoding sequence) reach
/// `max_tokens_ratio × max_num_batched_tokens`; then they all join and the count starts again.
/// Both 0 = off.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct BatchWait {
    pub timeout_iters: u32,
    pub max_tokens_ratio: f64,
}

impl BatchWait {
    pub fn is_off(&self) -> bool {
        self.timeout_iters == 0 && self.max_tokens_ratio == 0.0
    }
}

/// TRT-LLM's attention-DP balancing (its `attention_dp_config`: `enable_balance`,
/// `timeout_iters`, `batching_wait_iters`), decided each pass over all DP ranks of a worker:
/// new prompts join only in a pass where every rank has one to schedule and room for it (and
/// then, while every rank also decodes, only after `batching_wait_iters` such passes), or after
/// `timeout_iters` passes without that, or when some rank has nothing to decode. Off by default;
/// TRT-LLM's own defaults when enabled are 50 and 10.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct AdpBalance {
    pub enabled: bool,
    pub timeout_iters: u32,
    pub batching_wait_iters: u32,
}

impl AdpBalance {
    /// TRT-LLM's defaults of the two counts.
    pub const DEFAULT_TIMEOUT_ITERS: u32 = 50;
    pub const DEFAULT_BATCHING_WAIT_ITERS: u32 = 10;

    pub fn is_off(&self) -> bool {
        !self.enabled
    }
}

/// How a pass that computes prompt tokens and decodes in one engine step is timed
/// (`mixed_pass`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum MixedPass {
    /// DynoSim's: a prefill of the step's prompts plus a decode step of its decoding sequences,
    /// two forwards over the weights.
    #[default]
    Separate,
    /// One forward, as vLLM and TRT-LLM run such a step: AIConfigurator's mixed-step estimate
    /// (every token's non-attention work in one pass, plus the prompts' and the decodes'
    /// attention). AIC timing only, vLLM and TRT-LLM engines only, not with multi-token
    /// prediction.
    Fused,
}

impl MixedPass {
    pub fn is_separate(&self) -> bool {
        *self == MixedPass::Separate
    }
}

impl EngineArgs {
    /// Whether `mixed_pass: fused` applies to this pool: AIC timing, an engine that runs a
    /// step as one forward (vLLM, TRT-LLM), no multi-token prediction.
    pub fn can_fuse_mixed_passes(&self) -> bool {
        self.engine_type != EngineType::Sglang
            && self.mtp.is_none()
            && self.timing.aic_latency().is_some()
    }
}

/// Who picks the DP rank of a request to a worker with several (`dp_rank_routing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum DpRankRouting {
    /// DynoSim's: the pool's router picks a (worker, DP rank) target, as Dynamo's frontend
    /// names the rank.
    #[default]
    Router,
    /// The round robin picks the worker and the worker picks the rank, as its engine does when
    /// it serves alone: TRT-LLM's attention-DP router, vLLM's data-parallel load balancer,
    /// SGLang's round robin. A KV router still picks the rank itself.
    Engine,
}

impl DpRankRouting {
    pub fn is_router(&self) -> bool {
        *self == DpRankRouting::Router
    }

    /// Both, in the order their names are listed.
    pub const ALL: [DpRankRouting; 2] = [DpRankRouting::Router, DpRankRouting::Engine];

    /// The routing a `dp_rank_routing` value names ([`DpRankRouting::name`]).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.name() == s)
    }

    /// The `dp_rank_routing` value naming it.
    pub fn name(self) -> &'static str {
        match self {
            DpRankRouting::Router => "router",
            DpRankRouting::Engine => "engine",
        }
    }
}

impl EngineArgs {
    /// Blocks of each rank's KV pool: `num_gpu_blocks` times `kv_pool_scale`, rounded down, at
    /// least 1 (exactly `num_gpu_blocks` at scale 1).
    pub fn kv_pool_blocks(&self) -> u64 {
        if self.kv_pool_scale == 1.0 {
            return self.num_gpu_blocks;
        }
        // Exact for any block count a pool can have (< 2^31); saturates beyond.
        ((self.num_gpu_blocks as f64 * self.kv_pool_scale).floor() as u64).max(1)
    }

    /// The same engine with the settings its engine type never reads put back to their
    /// defaults: two engines whose `without_unread` are equal simulate identically. SGLang does
    /// not read `max_num_batched_tokens`, `enable_prefix_caching`, `enable_chunked_prefill` or
    /// `preemption_mode`; TRT-LLM never preempts, so not `preemption_mode` either; vLLM and
    /// TRT-LLM ignore the `sglang` object.
    pub fn without_unread(&self) -> EngineArgs {
        let d = EngineArgs::default();
        let mut e = self.clone();
        match e.engine_type {
            EngineType::Sglang => {
                e.max_num_batched_tokens = d.max_num_batched_tokens;
                e.enable_prefix_caching = d.enable_prefix_caching;
                e.enable_chunked_prefill = d.enable_chunked_prefill;
                e.preemption_mode = d.preemption_mode;
            }
            EngineType::Trtllm => {
                e.preemption_mode = d.preemption_mode;
                e.sglang = d.sglang;
            }
            EngineType::Vllm => e.sglang = d.sglang,
        }
        if e.engine_type != EngineType::Trtllm {
            e.batch_wait = d.batch_wait;
            e.adp_balance = d.adp_balance;
        }
        e
    }

    /// Warnings DynoSim prints for accepted but odd settings (e.g. an unknown SGLang policy).
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.engine_type == EngineType::Sglang {
            if let SchedulePolicy::Unknown(p) = &self.sglang.schedule_policy {
                w.push(format!(
                    "Unknown sglang schedule_policy '{p}', falling back to FIFO"
                ));
            }
        }
        w
    }

    /// GPUs one worker occupies.
    pub fn gpus_per_worker(&self) -> u32 {
        self.tp_size * self.dp_size
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RouterMode {
    #[default]
    RoundRobin,
    KvRouter,
}

/// Resolved KV router configuration (`KvRouterConfig`, spec §6.4): only the keys that matter offline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouterConfig {
    pub overlap_score_credit: f64,
    pub overlap_score_credit_decay: f64,
    pub prefill_load_scale: f64,
    pub decode_active_request_weight: f64,
    pub router_temperature: f64,
    pub router_track_active_blocks: bool,
    pub router_track_output_blocks: bool,
    pub router_assume_kv_reuse: bool,
    pub router_track_prefill_tokens: bool,
    /// `None` disables router queueing.
    pub router_queue_threshold: Option<f64>,
    pub router_queue_policy: QueuePolicy,
    /// `router_prefill_load_model` (left out of the serialised configuration when "none").
    #[serde(default, skip_serializing_if = "PrefillLoadModel::is_none")]
    pub router_prefill_load_model: PrefillLoadModel,
    /// The AIC estimator of the "aic" load model, loaded from the `--aic-*` flags (`run`) or
    /// the `router.aic_*` keys (sweeps); serialised as its engine.
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub prefill_load_estimator: Option<PrefillLoadEstimator>,
}

/// How the KV router models a target's active prefill load over time (spec §6.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PrefillLoadModel {
    /// The load is the sum of the routed, unfinished prefills' tokens.
    #[default]
    None,
    /// Each prefill's tokens decay linearly over its AIC-predicted duration.
    Aic,
}

impl PrefillLoadModel {
    pub fn is_none(&self) -> bool {
        *self == PrefillLoadModel::None
    }
}

impl Default for RouterConfig {
    fn default() -> Self {
        RouterConfig {
            overlap_score_credit: 1.0,
            overlap_score_credit_decay: 0.0,
            prefill_load_scale: 1.0,
            decode_active_request_weight: 0.0,
            router_temperature: 0.0,
            router_track_active_blocks: true,
            router_track_output_blocks: false,
            router_assume_kv_reuse: true,
            router_track_prefill_tokens: true,
            router_queue_threshold: None,
            router_queue_policy: QueuePolicy::Fcfs,
            router_prefill_load_model: PrefillLoadModel::None,
            prefill_load_estimator: None,
        }
    }
}

/// The worker pools of one deployment.
// One value per simulation, never in a hot loop: the variants' size difference costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Topology {
    Aggregated {
        num_workers: u32,
        engine: EngineArgs,
    },
    Disaggregated {
        num_prefill_workers: u32,
        prefill: EngineArgs,
        num_decode_workers: u32,
        decode: EngineArgs,
    },
}

impl Topology {
    /// The same pools with each engine's unread settings at their defaults (see
    /// [`EngineArgs::without_unread`]).
    pub fn without_unread(&self) -> Topology {
        match self {
            Topology::Aggregated {
                num_workers,
                engine,
            } => Topology::Aggregated {
                num_workers: *num_workers,
                engine: engine.without_unread(),
            },
            Topology::Disaggregated {
                num_prefill_workers,
                prefill,
                num_decode_workers,
                decode,
            } => Topology::Disaggregated {
                num_prefill_workers: *num_prefill_workers,
                prefill: prefill.without_unread(),
                num_decode_workers: *num_decode_workers,
                decode: decode.without_unread(),
            },
        }
    }

    /// Total simulated GPUs of the deployment.
    pub fn gpus(&self) -> u64 {
        match self {
            Topology::Aggregated {
                num_workers,
                engine,
            } => *num_workers as u64 * engine.gpus_per_worker() as u64,
            Topology::Disaggregated {
                num_prefill_workers,
                prefill,
                num_decode_workers,
                decode,
            } => {
                *num_prefill_workers as u64 * prefill.gpus_per_worker() as u64
                    + *num_decode_workers as u64 * decode.gpus_per_worker() as u64
            }
        }
    }

    /// The pool requests enter: the aggregated pool, or the prefill pool.
    pub fn entry_pool(&self) -> &EngineArgs {
        match self {
            Topology::Aggregated { engine, .. } => engine,
            Topology::Disaggregated { prefill, .. } => prefill,
        }
    }

    /// The engine args of every pool (one aggregated, or prefill then decode).
    pub fn engines(&self) -> Vec<&EngineArgs> {
        match self {
            Topology::Aggregated { engine, .. } => vec![engine],
            Topology::Disaggregated {
                prefill, decode, ..
            } => vec![prefill, decode],
        }
    }

    /// Engine block size used for hashing prompts: the entry pool's (the prefill pool's in
    /// disaggregated mode).
    pub fn block_size(&self) -> u32 {
        self.entry_pool().block_size
    }
}

/// How requests are released into the cluster (spec §2.8, §2.9).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LoadSpec {
    /// Divides first-arrival timestamps and inter-turn delays in open-loop mode.
    pub arrival_speedup_ratio: f64,
    /// Closed-loop cap on in-flight requests (flat) or active sessions (multi-turn).
    pub replay_concurrency: Option<u32>,
}

impl Default for LoadSpec {
    fn default() -> Self {
        LoadSpec {
            arrival_speedup_ratio: 1.0,
            replay_concurrency: None,
        }
    }
}

/// Goodput bounds (`--sla-*-ms`, spec §8.3).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Sla {
    pub ttft_ms: Option<f64>,
    pub itl_ms: Option<f64>,
    pub e2e_ms: Option<f64>,
}

impl Sla {
    pub fn is_set(&self) -> bool {
        self.ttft_ms.is_some() || self.itl_ms.is_some() || self.e2e_ms.is_some()
    }
}

impl SimConfig {
    pub fn topology_is_disaggregated(&self) -> bool {
        matches!(self.topology, Topology::Disaggregated { .. })
    }
}

/// Everything one simulation needs besides the workload. Plain data (plus shared, read-only timing
/// models): a sweep point resolves to one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimConfig {
    pub topology: Topology,
    pub router_mode: RouterMode,
    pub router: RouterConfig,
    pub load: LoadSpec,
    pub max_sim_time_ms: Option<f64>,
    pub sla: Sla,
    /// Seeds router tie-breaking and any other random choice not seeded by a DynoSim flag.
    pub seed: u64,
    /// Keep per-request records (for `--report-jsonl`).
    pub record_requests: bool,
}

impl Topology {
    /// DynoSim refuses TRT-LLM pools in disaggregated replay; its message names the replay mode
    /// (`closed_loop`: `--replay-concurrency`).
    pub fn trtllm_disaggregation_problem(&self, closed_loop: bool) -> Option<String> {
        let Topology::Disaggregated {
            prefill, decode, ..
        } = self
        else {
            return None;
        };
        let trt = EngineType::Trtllm;
        (prefill.engine_type == trt || decode.engine_type == trt).then(|| {
            let mode = if closed_loop {
                "concurrency replay"
            } else {
                "trace replay"
            };
            format!("{mode} disaggregation does not support TRT-LLM")
        })
    }
}
