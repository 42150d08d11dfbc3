//! Parsing of `--extra-engine-args` / `--prefill-engine-args` / `--decode-engine-args` JSON
//! (DynoSim's `MockEngineArgs`, spec §4.1 and §1.2 rule 7) into [`EngineArgs`].
//!
//! Every key of upstream's table is known. Keys are sorted into three kinds:
//! * simulated: validated and copied into `EngineArgs`;
//! * no effect on offline timing (live-mode ports, startup time, AIC memory fractions...):
//!   type-checked, then dropped;
//! * would change the results but dynosim does not model them (SGLang/TRT-LLM engines, AIC
//!   timing, KV offload tiers): refused with a "not supported by dynosim yet" message when set.
//!
//! Parsing reads no file and runs no subprocess: the timing-model keys (`planner_profile_data`,
//! `aic_*`) become plain [`TimingArgs`] in a [`ParsedEngineArgs`], and
//! [`ParsedEngineArgs::load`] is the separate step that loads them through a [`TimingLoader`]
//! (reads the NPZ, runs AIC's compile step, applies AIC's KV-pool estimate).
//!
//! Unknown keys are rejected with the closest valid key as a suggestion.

use super::json_fields::{parse_json_text, JsonObject};
use super::{
    AdpBalance, BatchWait, EngineArgs, EngineType, KvTransferTimingMode, MixedPass, PreemptionMode,
    QueuePolicy, SchedulePolicy, WorkerType,
};
use crate::error::InputError;
use crate::timing::aic::AicArgs;
use crate::timing::interpolated::PROFILE_ARRAYS;
use crate::timing::{TimingArgs, TimingLoader};
use serde_json::Value;
use std::path::Path;

/// Default vLLM block size, used when `block_size` is 0 or absent.
pub const DEFAULT_VLLM_BLOCK_SIZE: u32 = 64;
/// Default TRT-LLM block size (DynoSim's CLI default for `engine_type` trtllm).
pub const DEFAULT_TRTLLM_BLOCK_SIZE: u32 = 32;

/// Every key upstream's `MockEngineArgs` accepts, in the order of the spec's table.
pub const ENGINE_ARGS_KEYS: &[&str] = &[
    "engine_type",
    "num_gpu_blocks",
    "block_size",
    "max_model_len",
    "max_num_seqs",
    "max_num_batched_tokens",
    "enable_prefix_caching",
    "enable_chunked_prefill",
    "speedup_ratio",
    "decode_speedup_ratio",
    "dp_size",
    "startup_time",
    "worker_type",
    "is_prefill",
    "is_decode",
    "preemption_mode",
    "planner_profile_data",
    "kv_bytes_per_token",
    "kv_transfer_bandwidth",
    "kv_transfer_timing_mode",
    "router_queue_policy",
    "request_overhead_ms",
    "prefill_pass_overhead_ms",
    "decode_pass_overhead_ms",
    "decode_time_scale",
    "mixed_pass",
    "kv_pool_scale",
    "server_version",
    "dp_rank_routing",
    "sglang",
    "trtllm",
    "g1_backend",
    "num_g2_blocks",
    "num_g3_blocks",
    "enable_g4_storage",
    "offload_batch_size",
    "bandwidth_g1_to_g2_gbps",
    "bandwidth_g2_to_g1_gbps",
    "bandwidth_g2_to_g3_gbps",
    "bandwidth_g3_to_g2_gbps",
    "bandwidth_g2_to_g4_gbps",
    "bandwidth_g4_to_g2_gbps",
    "aic_backend",
    "aic_system",
    "aic_backend_version",
    "aic_tp_size",
    "aic_model_path",
    "aic_moe_tp_size",
    "aic_moe_ep_size",
    "aic_attention_dp_size",
    "aic_gemm_dtype",
    "aic_moe_dtype",
    "aic_fmha_dtype",
    "aic_kv_cache_dtype",
    "aic_comm_dtype",
    "aic_nextn",
    "aic_nextn_accept_rates",
    "aic_mtp_seed",
    "gpu_memory_utilization",
    "mem_fraction_static",
    "free_gpu_memory_fraction",
    "aic_memory_model",
    "aic_decode_monotone",
    "reasoning",
    "response_replay_trace_path",
    "bootstrap_port",
    "handoff_session_timeout_ms",
    "zmq_kv_events_port",
    "zmq_replay_port",
    "enable_local_indexer",
    "has_perf_model",
];

const OFFLOAD_BANDWIDTH_KEYS: &[&str] = &[
    "bandwidth_g1_to_g2_gbps",
    "bandwidth_g2_to_g1_gbps",
    "bandwidth_g2_to_g3_gbps",
    "bandwidth_g3_to_g2_gbps",
    "bandwidth_g2_to_g4_gbps",
    "bandwidth_g4_to_g2_gbps",
];

const OFFLOAD_WHY: &str = "KV offload tiers (G2/G3/G4, KVBM) are not simulated";

/// One engine-args object, parsed and checked but not loaded: the pool's settings with
/// DynoSim's polynomial timing, and the timing keys as plain data. [`Self::load`] makes the
/// [`EngineArgs`] a simulation takes.
#[derive(Debug, Clone)]
pub struct ParsedEngineArgs {
    args: EngineArgs,
    timing: TimingArgs,
    /// The flag or YAML key path the object came from, prefixing load errors.
    origin: String,
    /// The first failed check of the keys after `planner_profile_data`, when a profile is given:
    /// reported after the profile loads, so a profile that cannot be read stays the first error.
    pending: Option<InputError>,
}

impl ParsedEngineArgs {
    /// The timing keys as parsed.
    pub fn timing(&self) -> &TimingArgs {
        &self.timing
    }

    /// The pool's settings without the timing the keys name (DynoSim's polynomial, the KV pool
    /// as given): what describes a point whose timing cannot be built (a sweep's `invalid`
    /// point), never what a simulation runs with.
    pub fn unloaded(&self) -> EngineArgs {
        self.args.clone()
    }

    /// Loads the timing the args name through `loader` (which resolves the files they name and
    /// shares one model per distinct source): the profile, then AIC's engine (the one slow
    /// step: its compile step) and KV-pool estimate.
    pub fn load(self, loader: &mut TimingLoader) -> Result<EngineArgs, InputError> {
        let ParsedEngineArgs {
            mut args,
            timing,
            origin,
            pending,
        } = self;
        if let Some(file) = &timing.profile {
            args.timing = loader.load_profile(file).map_err(|e| {
                InputError::new(format!("{origin}: key \"planner_profile_data\": {e}"))
            })?;
        }
        if let Some(e) = pending {
            return Err(e);
        }
        let Some(aic) = &timing.aic else {
            return Ok(args);
        };
        let (t, blocks) = loader.load_aic(aic).map_err(|e| e.with_origin(&origin))?;
        // A profile wins over AIC (DynoSim's order); the KV pool is still AIC's estimate.
        if timing.profile.is_none() {
            args.timing = t;
        }
        if let Some(b) = blocks {
            if b == 0 || b > super::limits::MAX_NUM_GPU_BLOCKS {
                return Err(InputError::unbuildable(format!(
                    "{origin}: key \"aic_backend\" gives a KV pool of {b} blocks from AIC's memory model (the model does not fit, or the pool is too large); set num_gpu_blocks"
                )));
            }
            args.num_gpu_blocks = b;
        }
        Ok(args)
    }
}

/// One of dynosim's scale keys (`decode_time_scale`, `kv_pool_scale`): absent, or a number in
/// (0, `max`] that multiplies `what` (null, 0, a negative or a non-number refused).
fn positive_scale(
    o: &JsonObject,
    key: &str,
    max: f64,
    what: &str,
) -> Result<Option<f64>, InputError> {
    let x = o.non_null(key, o.float(key, 0.0, max)?)?;
    if x == Some(0.0) {
        return Err(o.error(
            key,
            format!("must be a number > 0 (it multiplies {what}; 1 = unscaled)"),
        ));
    }
    Ok(x)
}

/// Parses JSON text given to `flag` (e.g. `--extra-engine-args`); nothing is loaded yet.
pub fn parse_engine_args_str(json: &str, flag: &str) -> Result<ParsedEngineArgs, InputError> {
    parse_engine_args(&parse_json_text(json, flag)?, flag)
}

/// Validates one engine-args object. `origin` (a flag or YAML key path) prefixes every message,
/// of parsing and of [`ParsedEngineArgs::load`].
pub fn parse_engine_args(value: &Value, origin: &str) -> Result<ParsedEngineArgs, InputError> {
    let o = JsonObject::new(value, origin, "engine args")?;
    o.reject_unknown_keys(ENGINE_ARGS_KEYS)?;
    let mut a = EngineArgs {
        engine_type: parse_engine_type(&o)?,
        worker_type: parse_worker_type(&o)?,
        ..EngineArgs::default()
    };
    if let Some(n) = o
        .int("num_gpu_blocks", 1, super::limits::MAX_NUM_GPU_BLOCKS)?
        .value()
    {
        a.num_gpu_blocks = n;
    }
    let block_size = o
        .non_null("block_size", o.int("block_size", 0, u32::MAX as u64)?)?
        .unwrap_or(0) as u32;
    a.block_size = match (block_size, a.engine_type) {
        (0, EngineType::Trtllm) => DEFAULT_TRTLLM_BLOCK_SIZE,
        (0, _) => DEFAULT_VLLM_BLOCK_SIZE,
        (b, _) => b,
    };
    a.max_model_len = o.int("max_model_len", 1, u64::MAX)?.value();
    a.max_num_seqs = o
        .int("max_num_seqs", 1, u64::MAX)?
        .null_is_none(a.max_num_seqs);
    a.max_num_batched_tokens = o
        .int("max_num_batched_tokens", 1, u64::MAX)?
        .null_is_none(a.max_num_batched_tokens);
    if let Some(b) = o.non_null("enable_prefix_caching", o.bool("enable_prefix_caching")?)? {
        a.enable_prefix_caching = b;
    }
    if let Some(b) = o.non_null("enable_chunked_prefill", o.bool("enable_chunked_prefill")?)? {
        a.enable_chunked_prefill = b;
    }
    if let Some(x) = o.non_null(
        "speedup_ratio",
        o.float("speedup_ratio", 0.0, f64::INFINITY)?,
    )? {
        a.speedup_ratio = x;
    }
    if let Some(x) = o.non_null(
        "decode_speedup_ratio",
        o.float("decode_speedup_ratio", 0.0, f64::INFINITY)?,
    )? {
        a.decode_speedup_ratio = x;
    }
    if let Some(x) = o.non_null(
        "request_overhead_ms",
        o.float("request_overhead_ms", 0.0, 3.6e6)?,
    )? {
        a.request_overhead_ms = x;
    }
    if let Some(x) = o.non_null(
        "prefill_pass_overhead_ms",
        o.float("prefill_pass_overhead_ms", 0.0, 3.6e6)?,
    )? {
        a.prefill_pass_overhead_ms = x;
    }
    if let Some(x) = o.non_null(
        "decode_pass_overhead_ms",
        o.float("decode_pass_overhead_ms", -3.6e6, 3.6e6)?,
    )? {
        a.decode_pass_overhead_ms = x;
    }
    if let Some(x) = positive_scale(&o, "decode_time_scale", 1e6, "every decode pass's time")? {
        a.decode_time_scale = x;
    }
    if let Some(x) = positive_scale(&o, "kv_pool_scale", 1e3, "the KV pool's block count")? {
        a.kv_pool_scale = x;
    }
    a.server_version = o
        .string("server_version")?
        .value()
        .filter(|v| !v.is_empty())
        .map(str::to_string);
    if let Some(n) = o.non_null(
        "dp_size",
        o.int("dp_size", 1, super::limits::MAX_ENGINE_RANKS)?,
    )? {
        a.dp_size = n as u32;
    }
    let routings = super::DpRankRouting::ALL.map(super::DpRankRouting::name);
    if let Some(m) = o.non_null(
        "dp_rank_routing",
        o.choice("dp_rank_routing", &routings, false)?,
    )? {
        a.dp_rank_routing = super::DpRankRouting::parse(m).unwrap_or_default();
    }
    // Only used when a planner adds workers; dynosim has no planner.
    o.float("startup_time", 0.0, f64::INFINITY)?;
    if let Some(m) = o.non_null(
        "preemption_mode",
        o.choice("preemption_mode", &["lifo", "fifo"], true)?,
    )? {
        a.preemption_mode = match m {
            "fifo" => PreemptionMode::Fifo,
            _ => PreemptionMode::Lifo,
        };
    }
    let profile = parse_profile_path(&o)?;
    let (aic, pending) = match parse_after_profile(&o, block_size, &mut a) {
        Ok(aic) => (aic, None),
        Err(e) if profile.is_some() => (None, Some(e)),
        Err(e) => return Err(e),
    };
    if profile.is_some() && a.mixed_pass == MixedPass::Fused {
        return Err(o.error(
            "mixed_pass",
            "set to \"fused\" needs AIC timing, which planner_profile_data replaces",
        ));
    }
    Ok(ParsedEngineArgs {
        args: a,
        timing: TimingArgs { profile, aic },
        origin: origin.to_string(),
        pending,
    })
}

/// The keys after `planner_profile_data`, in the order they are checked; the `aic_*` args.
fn parse_after_profile(
    o: &JsonObject,
    block_size: u32,
    a: &mut EngineArgs,
) -> Result<Option<AicArgs>, InputError> {
    a.kv_bytes_per_token = o.int("kv_bytes_per_token", 0, u64::MAX)?.value();
    a.kv_transfer_bandwidth = o
        .float("kv_transfer_bandwidth", 0.0, f64::INFINITY)?
        .value();
    if let Some(m) = o.non_null(
        "kv_transfer_timing_mode",
        o.choice(
            "kv_transfer_timing_mode",
            &["full_prompt", "destination_missing"],
            false,
        )?,
    )? {
        a.kv_transfer_timing_mode = match m {
            "destination_missing" => KvTransferTimingMode::DestinationMissing,
            _ => KvTransferTimingMode::FullPrompt,
        };
    }
    a.router_queue_policy = o
        .choice("router_queue_policy", &["fcfs", "lcfs", "wspt"], false)?
        .value()
        .map(queue_policy);

    if a.max_model_len.is_some() && a.engine_type != EngineType::Vllm {
        return Err(o.error(
            "max_model_len",
            format!(
                "is supported only for engine_type=vllm, got engine_type={}",
                a.engine_type.display_name()
            ),
        ));
    }
    let sglang = o.object("sglang")?.value();
    if a.engine_type == EngineType::Sglang {
        parse_sglang(o, sglang, block_size, a)?;
    }
    parse_trtllm(o, a)?;
    parse_offload_keys(o)?;
    let fractions = parse_memory_fractions(o)?;
    let mut aic = super::aic::parse_aic_args(
        o,
        o.int("num_gpu_blocks", 1, u64::MAX)?.is_set(),
        a.block_size,
        a.max_num_batched_tokens,
        fractions,
    )?;
    // GPUs per worker = aic_tp_size × ranks, with or without AIC timing (DynoSim's
    // `aic_gpus_per_worker`); attention DP materialises as that many ranks.
    if let Some(tp) = o.int("aic_tp_size", 1, 4096)?.value() {
        a.tp_size = tp as u32;
    }
    if let Some(dp) = o.int("aic_attention_dp_size", 1, 4096)?.value() {
        if dp > 1 {
            a.dp_size = dp as u32;
        }
    }
    a.mtp = super::aic::parse_mtp(o, a.decode_speedup_ratio)?;
    // AIC times each decode step at nextn + 1 tokens per sequence.
    if let Some(aic) = &mut aic {
        aic.engine.nextn = a.mtp.as_ref().map(|m| m.nextn);
    }
    a.mixed_pass = parse_mixed_pass(o, a, aic.is_some())?;
    parse_ignored_keys(o)?;
    Ok(aic)
}

/// dynosim's `mixed_pass`: `separate` (DynoSim's) or `fused`, which only AIC timing can give
/// (AIConfigurator's mixed-step estimate) and only engines that run a step as one forward use.
fn parse_mixed_pass(
    o: &JsonObject,
    a: &EngineArgs,
    aic_timing: bool,
) -> Result<MixedPass, InputError> {
    let choice = o.choice("mixed_pass", &["separate", "fused"], false)?;
    if o.non_null("mixed_pass", choice)? != Some("fused") {
        return Ok(MixedPass::Separate);
    }
    let why = if !aic_timing {
        "needs AIC timing (aic_backend): a fused step is AIConfigurator's mixed-step estimate"
    } else if a.engine_type == EngineType::Sglang {
        "applies to the vllm and trtllm engines (SGLang runs a step's prefill and its decode as \
         two forwards)"
    } else if a.mtp.is_some() {
        "is not available with multi-token prediction (aic_nextn)"
    } else {
        return Ok(MixedPass::Fused);
    };
    Err(o.error("mixed_pass", format!("set to \"fused\" {why}")))
}

/// `planner_profile_data`: the path of a mocker-format NPZ file (relative to the loader's
/// folder), read when the args are loaded. DynoSim treats any other path as a profiler results
/// folder to convert; dynosim does not convert, and refuses it.
fn parse_profile_path(o: &JsonObject) -> Result<Option<String>, InputError> {
    const KEY: &str = "planner_profile_data";
    let Some(file) = o.string(KEY)?.value() else {
        return Ok(None);
    };
    if Path::new(file).extension().and_then(|e| e.to_str()) != Some("npz") {
        return Err(o.error(
            KEY,
            format!(
                "= \"{file}\": expected the path of an .npz profile (arrays {}); dynosim does not \
                 read profiler results folders: convert one with Dynamo's \
                 convert_profile_results_to_npz (dynamo.mocker.utils.\
                 planner_profiler_perf_data_converter) and pass the .npz file",
                PROFILE_ARRAYS.join(", ")
            ),
        ));
    }
    Ok(Some(file.to_string()))
}

/// `engine_type`: case-insensitive, absent or null = vLLM.
fn parse_engine_type(o: &JsonObject) -> Result<EngineType, InputError> {
    let t = o.non_null(
        "engine_type",
        o.choice("engine_type", &["vllm", "sglang", "trtllm"], true)?,
    )?;
    match t {
        None | Some("vllm") => Ok(EngineType::Vllm),
        Some("sglang") => Ok(EngineType::Sglang),
        _ => Ok(EngineType::Trtllm),
    }
}

/// The `sglang` object and the rules DynoSim checks for SGLang engine args (breadth §1): the
/// page size is `block_size` (default 1), both must agree when both are set, the chunk size must
/// be a multiple of it (`max_model_len`, vLLM-only, is refused before). Unknown keys inside
/// `sglang` are ignored, as DynoSim does.
fn parse_sglang(
    o: &JsonObject,
    sglang: Option<&serde_json::Map<String, Value>>,
    block_size: u32,
    a: &mut EngineArgs,
) -> Result<(), InputError> {
    let inner_origin = format!("{}: sglang", o.origin());
    let empty = Value::Object(Default::default());
    let value = sglang.map(|m| Value::Object(m.clone()));
    let s = JsonObject::new(value.as_ref().unwrap_or(&empty), &inner_origin, "sglang")?;
    let page_size = s
        .non_null("page_size", s.int("page_size", 1, u32::MAX as u64)?)?
        .map(|p| p as u32);
    a.block_size = match (block_size, page_size) {
        (0, None) => 1,
        (0, Some(p)) => p,
        (b, Some(p)) if b != p => {
            return Err(o.error(
                "block_size",
                format!(
                    "must match sglang.page_size when both are set (engine_type=sglang), got \
                     block_size={b} and sglang.page_size={p}"
                ),
            ))
        }
        (b, _) => b,
    };
    let g = &mut a.sglang;
    if let Some(p) = s.non_null("schedule_policy", s.string("schedule_policy")?)? {
        g.schedule_policy = match p {
            "lpm" => SchedulePolicy::Lpm,
            "fifo" | "fcfs" => SchedulePolicy::Fifo,
            other => SchedulePolicy::Unknown(other.to_string()),
        };
    }
    for (key, slot) in [
        ("max_prefill_tokens", &mut g.max_prefill_tokens),
        ("chunked_prefill_size", &mut g.chunked_prefill_size),
        ("clip_max_new_tokens", &mut g.clip_max_new_tokens),
    ] {
        if let Some(n) = s.non_null(key, s.int(key, 1, u32::MAX as u64)?)? {
            *slot = n;
        }
    }
    if let Some(c) = s.non_null(
        "schedule_conservativeness",
        s.float("schedule_conservativeness", 0.0, f64::INFINITY)?,
    )? {
        g.schedule_conservativeness = c;
    }
    if let Some(n) = s.non_null(
        "scheduler_recv_interval",
        s.int("scheduler_recv_interval", 1, u64::from(u32::MAX))?,
    )? {
        g.scheduler_recv_interval = n as u32;
    }
    if s.contains("chunked_prefill_size")
        && !g
            .chunked_prefill_size
            .is_multiple_of(u64::from(a.block_size))
    {
        return Err(o.error(
            "sglang",
            format!(
                "chunked_prefill_size must be divisible by block_size (engine_type=sglang), got \
                 chunked_prefill_size={} and block_size={}",
                g.chunked_prefill_size, a.block_size
            ),
        ));
    }
    Ok(())
}

/// The `trtllm` object: `capacity_scheduler_policy` may only be `guaranteed_no_evict` (the
/// policy dynosim simulates for `engine_type` trtllm); dynosim reads TRT-LLM's batch waiting
/// (`batch_wait_timeout_iters`, `batch_wait_max_tokens_ratio`) for engine_type trtllm; other
/// keys are ignored, as DynoSim does.
fn parse_trtllm(o: &JsonObject, a: &mut EngineArgs) -> Result<(), InputError> {
    let Some(t) = o.object("trtllm")?.value() else {
        return Ok(());
    };
    match t.get("capacity_scheduler_policy") {
        None | Some(Value::Null) => {}
        Some(Value::String(p)) if p == "guaranteed_no_evict" => {}
        Some(Value::String(p)) => {
            return Err(o.error(
                "trtllm",
                format!(
                    ".capacity_scheduler_policy: engine_type=trtllm v1 supports only \
                     capacity_scheduler_policy='guaranteed_no_evict', got '{p}'"
                ),
            ))
        }
        Some(v) => {
            return Err(o.error(
                "trtllm",
                format!(".capacity_scheduler_policy: expected a string, got {v}"),
            ))
        }
    }
    let inner_origin = format!("{}: trtllm", o.origin());
    let value = Value::Object(t.clone());
    let s = JsonObject::new(&value, &inner_origin, "trtllm")?;
    // A TRT-LLM iteration count (passes), when set.
    let iters = |key: &str| -> Result<Option<u32>, InputError> {
        Ok(s.non_null(key, s.int(key, 0, u64::from(u32::MAX))?)?
            .map(|n| n as u32))
    };
    // A TRT-LLM scheduler setting given for another engine type.
    let engine_type = a.engine_type;
    let not_trtllm = |keys: &str, what: &str| {
        o.error(
            "trtllm",
            format!(
                "{keys}: TRT-LLM's {what} applies only to engine_type=trtllm, got engine_type={}",
                engine_type.display_name()
            ),
        )
    };
    let wait_iters = iters("batch_wait_timeout_iters")?;
    let ratio = s.non_null(
        "batch_wait_max_tokens_ratio",
        s.float("batch_wait_max_tokens_ratio", 0.0, 1.0)?,
    )?;
    let wait = BatchWait {
        timeout_iters: wait_iters.unwrap_or(0),
        max_tokens_ratio: ratio.unwrap_or(0.0),
    };
    if !wait.is_off() && engine_type != EngineType::Trtllm {
        return Err(not_trtllm(
            ".batch_wait_timeout_iters / .batch_wait_max_tokens_ratio",
            "batch waiting",
        ));
    }
    a.batch_wait = wait;
    let balance = s.non_null(
        "attention_dp_enable_balance",
        s.bool("attention_dp_enable_balance")?,
    )?;
    let adp = AdpBalance {
        enabled: balance.unwrap_or(false),
        timeout_iters: iters("attention_dp_timeout_iters")?
            .unwrap_or(AdpBalance::DEFAULT_TIMEOUT_ITERS),
        batching_wait_iters: iters("attention_dp_batching_wait_iters")?
            .unwrap_or(AdpBalance::DEFAULT_BATCHING_WAIT_ITERS),
    };
    if adp.enabled && engine_type != EngineType::Trtllm {
        return Err(not_trtllm(
            ".attention_dp_enable_balance",
            "attention-DP balancing",
        ));
    }
    a.adp_balance = if adp.enabled {
        adp
    } else {
        AdpBalance::default()
    };
    Ok(())
}

/// `worker_type` is shorthand for `is_prefill`/`is_decode` and cannot be combined with them.
fn parse_worker_type(o: &JsonObject) -> Result<WorkerType, InputError> {
    let worker_type = o.choice("worker_type", &["aggregated", "prefill", "decode"], false)?;
    if worker_type.is_set() && (o.contains("is_prefill") || o.contains("is_decode")) {
        return Err(o.error(
            "worker_type",
            "cannot be combined with is_prefill or is_decode",
        ));
    }
    let is_prefill = o.non_null("is_prefill", o.bool("is_prefill")?)?;
    let is_decode = o.non_null("is_decode", o.bool("is_decode")?)?;
    if let Some(t) = worker_type.value() {
        return Ok(match t {
            "prefill" => WorkerType::Prefill,
            "decode" => WorkerType::Decode,
            _ => WorkerType::Aggregated,
        });
    }
    match (is_prefill == Some(true), is_decode == Some(true)) {
        (true, true) => Err(InputError::new(format!(
            "{}: is_prefill and is_decode cannot both be true",
            o.origin()
        ))),
        (true, false) => Ok(WorkerType::Prefill),
        (false, true) => Ok(WorkerType::Decode),
        (false, false) => Ok(WorkerType::Aggregated),
    }
}

fn parse_offload_keys(o: &JsonObject) -> Result<(), InputError> {
    if let Some(b) = o.non_null(
        "g1_backend",
        o.choice("g1_backend", &["native", "kvbm"], false)?,
    )? {
        if b == "kvbm" {
            return Err(o.unsupported("g1_backend", OFFLOAD_WHY));
        }
    }
    for key in ["num_g2_blocks", "num_g3_blocks", "offload_batch_size"] {
        if o.int(key, 0, u64::MAX)?.is_set() {
            return Err(o.unsupported(key, OFFLOAD_WHY));
        }
    }
    if o.non_null("enable_g4_storage", o.bool("enable_g4_storage")?)? == Some(true) {
        return Err(o.unsupported("enable_g4_storage", OFFLOAD_WHY));
    }
    for &key in OFFLOAD_BANDWIDTH_KEYS {
        if o.float(key, 0.0, f64::INFINITY)?.is_set() {
            return Err(o.unsupported(key, OFFLOAD_WHY));
        }
    }
    Ok(())
}

/// The memory fractions AIC's KV-pool estimate uses (no effect without `aic_backend`).
fn parse_memory_fractions(o: &JsonObject) -> Result<super::aic::MemoryFractions, InputError> {
    Ok(super::aic::MemoryFractions {
        gpu_memory_utilization: o.float("gpu_memory_utilization", 0.0, 1.0)?.value(),
        mem_fraction_static: o.float("mem_fraction_static", 0.0, 1.0)?.value(),
        free_gpu_memory_fraction: o.float("free_gpu_memory_fraction", 0.0, 1.0)?.value(),
        server_accounting: o
            .choice("aic_memory_model", &["aic", "server"], false)?
            .value()
            == Some("server"),
    })
}

/// Keys with no effect on offline timing: type-checked like upstream does, then dropped.
fn parse_ignored_keys(o: &JsonObject) -> Result<(), InputError> {
    o.object("reasoning")?;
    o.string("response_replay_trace_path")?;
    for key in ["bootstrap_port", "zmq_kv_events_port", "zmq_replay_port"] {
        o.int(key, 0, u16::MAX as u64)?;
    }
    o.non_null(
        "handoff_session_timeout_ms",
        o.int("handoff_session_timeout_ms", 0, u64::MAX)?,
    )?;
    o.non_null("enable_local_indexer", o.bool("enable_local_indexer")?)?;
    // `has_perf_model` is an internal flag upstream accepts with any value.
    Ok(())
}

fn queue_policy(s: &str) -> QueuePolicy {
    match s {
        "lcfs" => QueuePolicy::Lcfs,
        "wspt" => QueuePolicy::Wspt,
        _ => QueuePolicy::Fcfs,
    }
}

#[cfg(test)]
mod tests;
