//! `dynosim run`: turns the parsed flags into a validated [`RunPlan`] (spec §1.2, applied in
//! upstream's order, plus refusals of what dynosim does not simulate), then executes it: load the
//! workload, simulate, write the JSON/JSONL reports, print the table.
//!
//! Validation is complete before anything is read or written, so a bad flag never leaves a report
//! file behind. Every message names the flag(s) involved.

use crate::cli::{ReplayMode, RouterModeArg, RunArgs, TraceFormat};
use crate::config::aic::{load_prefill_load_estimator, router_aic_engine, RouterAicValues};
use crate::config::engine_args::parse_engine_args_str;
use crate::config::limits::{
    check_memory, check_workload_memory, memory_budget, memory_floor, MemoryPart, WorkloadShape,
    MAX_ENGINE_RANKS,
};
use crate::config::router_config::parse_router_config_str;
use crate::config::{
    EngineArgs, EngineType, LoadSpec, PrefillLoadModel, RouterConfig, RouterMode, SimConfig, Sla,
    Topology, WorkerType,
};
use crate::error::InputError;
use crate::timing::TimingLoader;
use crate::workload::formats::{Timing, TraceSpec};
use crate::workload::synthetic::{SyntheticArrival, SyntheticSpec};
use crate::workload::Workload;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Tokens per trace `hash_id` when `--trace-block-size` is not given.
pub use crate::workload::formats::DEFAULT_TRACE_BLOCK_SIZE;

/// Where the requests come from.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkloadSource {
    /// Trace files; `Timing::ClosedLoop` when `--replay-concurrency` is set (sessions keep file
    /// order, timestamps are optional).
    Trace(TraceSpec),
    Synthetic(SyntheticSpec),
}

impl WorkloadSource {
    /// Reads or generates the workload. `engine_block_size` is the hash-id block size of the
    /// synthetic workload path (spec §3.2); traces carry their own block size.
    pub fn load(&self, engine_block_size: u32) -> Result<Workload, InputError> {
        match self {
            WorkloadSource::Trace(spec) => spec.load(),
            WorkloadSource::Synthetic(spec) => {
                crate::workload::synthetic::generate(spec, engine_block_size)
            }
        }
    }
}

/// A validated `dynosim run` invocation.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPlan {
    pub workload: WorkloadSource,
    pub sim: SimConfig,
    /// Resolved report path (a directory argument already has the timestamped name appended).
    pub report_json: PathBuf,
    pub report_jsonl: Option<PathBuf>,
}

fn err(msg: impl Into<String>) -> InputError {
    InputError::new(msg)
}

/// Validates the flags and builds the plan (no file is read or written).
pub fn plan(args: &RunArgs) -> Result<RunPlan, InputError> {
    plan_at(args, SystemTime::now())
}

/// [`plan`] with the clock used for the default report name made explicit.
pub fn plan_at(args: &RunArgs, now: SystemTime) -> Result<RunPlan, InputError> {
    let using_trace = !args.trace_files.is_empty();

    // Rule 1: trace-file count per format.
    if args.trace_format == TraceFormat::Dynamo && !using_trace {
        return Err(err(
            "--trace-format dynamo requires at least one trace file",
        ));
    }
    if args.trace_format != TraceFormat::Dynamo && args.trace_files.len() > 1 {
        return Err(err(format!(
            "--trace-format {} requires exactly one trace file (got {})",
            args.trace_format.name(),
            args.trace_files.len()
        )));
    }
    refuse_unsupported_flags(args)?;

    // Rules 2-5: trace or synthetic workload, and its load controller.
    let synthetic_flags = synthetic_flags_set(args);
    let using_synthetic = !synthetic_flags.is_empty();
    if using_trace && using_synthetic {
        return Err(err(format!(
            "a trace file cannot be combined with synthetic-workload flags ({}); \
             use either a trace file or --input-tokens/--output-tokens/--request-count",
            synthetic_flags.join(", ")
        )));
    }
    if !using_trace && !using_synthetic {
        return Err(err("no workload given: provide a trace file or all of \
             --input-tokens, --output-tokens and --request-count"));
    }
    if using_synthetic {
        let missing: Vec<&str> = [
            ("--input-tokens", args.input_tokens),
            ("--output-tokens", args.output_tokens),
            ("--request-count", args.request_count),
        ]
        .iter()
        .filter(|(_, v)| v.is_none())
        .map(|(f, _)| *f)
        .collect();
        if !missing.is_empty() {
            return Err(err(format!(
                "synthetic replay requires --input-tokens, --output-tokens and --request-count \
                 (missing {})",
                missing.join(", ")
            )));
        }
        let controllers: Vec<&str> = [
            ("--replay-concurrency", args.replay_concurrency.is_some()),
            ("--request-rate", args.request_rate.is_some()),
            ("--arrival-interval-ms", args.arrival_interval_ms.is_some()),
        ]
        .iter()
        .filter(|(_, set)| *set)
        .map(|(f, _)| *f)
        .collect();
        if controllers.len() != 1 {
            let given = if controllers.is_empty() {
                "none given".to_string()
            } else {
                format!("got {}", controllers.join(" and "))
            };
            return Err(err(format!(
                "synthetic replay requires exactly one of --replay-concurrency, --request-rate \
                 or --arrival-interval-ms ({given})"
            )));
        }
    } else {
        for (flag, set) in [
            ("--request-rate", args.request_rate.is_some()),
            ("--arrival-interval-ms", args.arrival_interval_ms.is_some()),
        ] {
            if set {
                return Err(err(format!(
                    "{flag} only applies to synthetic replay; with a trace file, arrivals come \
                     from its timestamps (use --arrival-speedup-ratio or --replay-concurrency)"
                )));
            }
        }
    }

    // Rule 6: trace-file-only outputs.
    if args.report_jsonl.is_some() && !using_trace {
        return Err(err(
            "--report-jsonl currently only supports trace-file replay",
        ));
    }
    if args.max_sim_time_seconds.is_some() && !using_trace {
        return Err(err(
            "--max-sim-time-seconds currently only supports trace-file replay",
        ));
    }

    // Rule 7: engine args and router config JSON.
    // Files named in engine args are relative to the working directory; pools naming the same
    // timing source share one model.
    let mut timing = TimingLoader::default();
    let extra = parse_opt_engine_args(&args.extra_engine_args, "--extra-engine-args", &mut timing)?;
    let prefill = parse_opt_engine_args(
        &args.prefill_engine_args,
        "--prefill-engine-args",
        &mut timing,
    )?;
    let decode = parse_opt_engine_args(
        &args.decode_engine_args,
        "--decode-engine-args",
        &mut timing,
    )?;
    let mut router = match &args.router_config {
        Some(json) => parse_router_config_str(json, "--router-config")?,
        None => RouterConfig::default(),
    };
    let router_mode = match args.router_mode {
        RouterModeArg::RoundRobin => RouterMode::RoundRobin,
        RouterModeArg::KvRouter => RouterMode::KvRouter,
    };
    // Rule 8: the KV router's AIC prefill-load estimator.
    attach_router_aic(args, router_mode, &mut router, &mut timing)?;
    let aic = timing.aic_engines().stats();
    if aic.loaded > 0 {
        eprintln!("{}", aic.summary());
    }

    // Rules 9, 10, 12: aggregated or disaggregated topology.
    let topology = build_topology(args, extra, prefill, decode, router_mode)?;

    if using_trace {
        check_trace_format(args, &topology)?;
    }

    // Rule 13.
    let replay_concurrency = match args.replay_concurrency {
        None => None,
        Some(n) => Some(int_in_range("--replay-concurrency", n, 1)?),
    };
    if let Some(why) = topology.trtllm_disaggregation_problem(replay_concurrency.is_some()) {
        return Err(err(format!(
            "--prefill-engine-args/--decode-engine-args: {why}"
        )));
    }
    if !(args.arrival_speedup_ratio.is_finite() && args.arrival_speedup_ratio > 0.0) {
        return Err(err(format!(
            "--arrival-speedup-ratio must be a finite number > 0, got {}",
            args.arrival_speedup_ratio
        )));
    }
    // Rule 14.
    let max_sim_time_ms = match args.max_sim_time_seconds {
        None => None,
        Some(s) => Some(finite_non_negative("--max-sim-time-seconds", s)? * 1000.0),
    };
    let sla = Sla {
        ttft_ms: opt_finite_non_negative("--sla-ttft-ms", args.sla_ttft_ms)?,
        itl_ms: opt_finite_non_negative("--sla-itl-ms", args.sla_itl_ms)?,
        e2e_ms: opt_finite_non_negative("--sla-e2e-ms", args.sla_e2e_ms)?,
    };

    let workload = if using_trace {
        let trace_block_size = match args.trace_block_size {
            None => None,
            Some(n) => Some(int_in_range("--trace-block-size", n, 1)?),
        };
        let shared_prefix_ratio = args.trace_shared_prefix_ratio;
        if !(shared_prefix_ratio.is_finite() && (0.0..=1.0).contains(&shared_prefix_ratio)) {
            return Err(err(format!(
                "--trace-shared-prefix-ratio must be between 0.0 and 1.0, got {shared_prefix_ratio}"
            )));
        }
        WorkloadSource::Trace(TraceSpec {
            format: args.trace_format.into(),
            paths: args.trace_files.clone(),
            trace_block_size: match (args.trace_format, trace_block_size) {
                (TraceFormat::Dynamo, given) => given,
                (_, given) => Some(given.unwrap_or(DEFAULT_TRACE_BLOCK_SIZE)),
            },
            timing: if replay_concurrency.is_some() {
                Timing::ClosedLoop
            } else {
                Timing::OpenLoop
            },
            shared_prefix_ratio,
            num_prefix_groups: int_in_range(
                "--trace-num-prefix-groups",
                args.trace_num_prefix_groups,
                0,
            )?,
        })
    } else {
        // Like upstream, --trace-block-size is ignored by synthetic workloads.
        WorkloadSource::Synthetic(synthetic_spec(args, replay_concurrency.is_some())?)
    };

    let report_json = resolve_report_path(args.report_json.as_deref(), now);
    Ok(RunPlan {
        workload,
        sim: SimConfig {
            topology,
            router_mode,
            router,
            load: LoadSpec {
                arrival_speedup_ratio: args.arrival_speedup_ratio,
                replay_concurrency,
            },
            max_sim_time_ms,
            sla,
            seed: args.seed,
            record_requests: args.report_jsonl.is_some(),
        },
        report_json,
        report_jsonl: args.report_jsonl.clone(),
    })
}

/// Flags upstream accepts but dynosim cannot simulate: refused before any other rule so the user
/// learns first that the feature is missing.
fn refuse_unsupported_flags(args: &RunArgs) -> Result<(), InputError> {
    if args.planner_config.is_some() {
        return Err(err(
            "--planner-config is not supported by dynosim (no planner-in-the-loop simulation)",
        ));
    }
    if args.benchmark_granularity.is_some() {
        return Err(err(
            "--benchmark-granularity is not supported by dynosim (it only configures the planner)",
        ));
    }
    if args.router_policy_config.is_some() {
        return Err(err(
            "--router-policy-config (or DYN_ROUTER_POLICY_CONFIG) is not supported by dynosim \
             (policy-class router queues are not simulated)",
        ));
    }
    if args.model_name.is_some() {
        return Err(err(
            "--model-name is not supported by dynosim (it selects a profile of the router policy \
             config)",
        ));
    }
    if args.replay_mode == ReplayMode::Online {
        return Err(err(
            "--replay-mode online is not supported: dynosim simulates offline only",
        ));
    }
    Ok(())
}

/// The KV router's AIC prefill-load estimator (spec §1.2 rule 8): the `--aic-*` flags checked
/// with DynoSim's rules, paired with `--router-mode kv_router` and `router_prefill_load_model:
/// "aic"` (each requires the other; under round robin an "aic" load model alone is ignored, as
/// by DynoSim), and the engine loaded through `timing` (shared with AIC timing of the same
/// engine).
fn attach_router_aic(
    args: &RunArgs,
    router_mode: RouterMode,
    router: &mut RouterConfig,
    timing: &mut TimingLoader,
) -> Result<(), InputError> {
    let values = RouterAicValues {
        backend: args.aic_backend.clone(),
        system: args.aic_system.clone(),
        backend_version: args.aic_backend_version.clone(),
        model_path: args.aic_model_path.clone(),
        tp_size: args.aic_tp_size,
        moe_tp_size: args.aic_moe_tp_size,
        moe_ep_size: args.aic_moe_ep_size,
        attention_dp_size: args.aic_attention_dp_size,
        dtypes: [
            args.aic_gemm_dtype.clone(),
            args.aic_moe_dtype.clone(),
            args.aic_fmha_dtype.clone(),
            args.aic_kv_cache_dtype.clone(),
            args.aic_comm_dtype.clone(),
        ],
        nextn: args.aic_nextn,
        nextn_accept_rates: args.aic_nextn_accept_rates.clone(),
    };
    let engine = router_aic_engine(&values, |k| format!("--{}", k.replace('_', "-")))?;
    match (engine, router_mode, router.router_prefill_load_model) {
        (Some(_), RouterMode::RoundRobin, _) => Err(err(
            "the --aic-* flags configure the KV router's AIC prefill-load estimator and require \
             --router-mode kv_router",
        )),
        (Some(_), RouterMode::KvRouter, PrefillLoadModel::None) => Err(err(
            "the --aic-* flags configure the KV router's AIC prefill-load estimator and require \
             --router-config with \"router_prefill_load_model\": \"aic\"",
        )),
        (None, RouterMode::KvRouter, PrefillLoadModel::Aic) => Err(err(
            "--router-config: \"router_prefill_load_model\": \"aic\" requires the \
             AIConfigurator flags of its estimator: --aic-backend, --aic-system, \
             --aic-model-path and --aic-backend-version",
        )),
        (Some(id), RouterMode::KvRouter, PrefillLoadModel::Aic) => {
            router.prefill_load_estimator =
                Some(load_prefill_load_estimator(timing, &id, "--aic-* flags")?);
            Ok(())
        }
        (None, _, _) => Ok(()),
    }
}

/// What each trace format cannot be combined with, refused with DynoSim's reasons.
fn check_trace_format(args: &RunArgs, topology: &Topology) -> Result<(), InputError> {
    let disaggregated = matches!(topology, Topology::Disaggregated { .. });
    let closed_loop = args.replay_concurrency.is_some();
    match args.trace_format {
        TraceFormat::AppliedComputeAgentic if !closed_loop => Err(err(
            "--trace-format=applied_compute_agentic requires --replay-concurrency because the \
             source traces do not include first-turn timestamps",
        )),
        TraceFormat::AgenticMooncake if closed_loop => Err(err(
            "--trace-format agentic_mooncake: agentic_mooncake trace format is not supported \
             with replay_concurrency (--replay-concurrency)",
        )),
        TraceFormat::AgenticMooncake if disaggregated => Err(err(
            "--trace-format agentic_mooncake: agentic_mooncake trace format is not supported for \
             disaggregated replay",
        )),
        TraceFormat::MooncakeDelta if disaggregated => Err(err(
            "--trace-format mooncake-delta: mooncake-delta trace format is not supported for \
             disaggregated replay",
        )),
        _ => Ok(()),
    }
}

/// The synthetic-mode triggers of rule 2 that are set, by flag name.
fn synthetic_flags_set(args: &RunArgs) -> Vec<&'static str> {
    [
        ("--input-tokens", args.input_tokens.is_some()),
        ("--output-tokens", args.output_tokens.is_some()),
        ("--request-count", args.request_count.is_some()),
        ("--turns-per-session", args.turns_per_session != 1),
        ("--shared-prefix-ratio", args.shared_prefix_ratio != 0.0),
        ("--num-prefix-groups", args.num_prefix_groups != 0),
        ("--inter-turn-delay-ms", args.inter_turn_delay_ms != 0.0),
    ]
    .iter()
    .filter(|(_, set)| *set)
    .map(|(f, _)| *f)
    .collect()
}

fn parse_opt_engine_args(
    json: &Option<String>,
    flag: &str,
    timing: &mut TimingLoader,
) -> Result<Option<EngineArgs>, InputError> {
    json.as_deref()
        .map(|j| parse_engine_args_str(j, flag).and_then(|a| a.load(timing)))
        .transpose()
}

fn build_topology(
    args: &RunArgs,
    extra: Option<EngineArgs>,
    prefill: Option<EngineArgs>,
    decode: Option<EngineArgs>,
    router_mode: RouterMode,
) -> Result<Topology, InputError> {
    // Rule 9: which argument set selects the mode.
    if extra.is_some() && (prefill.is_some() || decode.is_some()) {
        return Err(err(
            "--extra-engine-args cannot be combined with --prefill-engine-args/\
             --decode-engine-args (aggregated or disaggregated: choose one)",
        ));
    }
    match (prefill, decode) {
        (Some(prefill), Some(decode)) => {
            if args.num_workers != 1 {
                return Err(err(format!(
                    "--num-workers is only used for aggregated replay (got {}); use \
                     --num-prefill-workers and --num-decode-workers with disaggregated engine args",
                    args.num_workers
                )));
            }
            // Rule 12.
            let num_prefill_workers =
                int_in_range("--num-prefill-workers", args.num_prefill_workers, 1)?;
            let num_decode_workers =
                int_in_range("--num-decode-workers", args.num_decode_workers, 1)?;
            let ranks = u64::from(num_prefill_workers) + u64::from(num_decode_workers);
            if ranks > MAX_ENGINE_RANKS {
                return Err(err(format!(
                    "--num-prefill-workers + --num-decode-workers = {ranks} workers is above the \
                     limit of {MAX_ENGINE_RANKS} (each keeps its own scheduler and KV cache state)"
                )));
            }
            if prefill.worker_type != WorkerType::Prefill {
                return Err(err(format!(
                    "--prefill-engine-args must set worker_type \"prefill\" (or is_prefill: true), \
                     got {}",
                    worker_type_name(prefill.worker_type)
                )));
            }
            if decode.worker_type != WorkerType::Decode {
                return Err(err(format!(
                    "--decode-engine-args must set worker_type \"decode\" (or is_decode: true), \
                     got {}",
                    worker_type_name(decode.worker_type)
                )));
            }
            if prefill.dp_size != 1 || decode.dp_size != 1 {
                return Err(err(format!(
                    "disaggregated replay does not support attention DP: dp_size must be 1 in \
                     --prefill-engine-args and --decode-engine-args (got {} and {})",
                    prefill.dp_size, decode.dp_size
                )));
            }
            if prefill.engine_type != decode.engine_type {
                return Err(err(format!(
                    "disaggregated replay requires the same engine_type in \
                     --prefill-engine-args and --decode-engine-args (got {} and {})",
                    prefill.engine_type.display_name(),
                    decode.engine_type.display_name()
                )));
            }
            if prefill.block_size != decode.block_size {
                let what = if prefill.engine_type == EngineType::Sglang {
                    "page size (sglang.page_size or block_size)"
                } else {
                    "block_size"
                };
                return Err(err(format!(
                    "disaggregated replay requires the same {what} in \
                     --prefill-engine-args and --decode-engine-args (got {} and {})",
                    prefill.block_size, decode.block_size
                )));
            }
            Ok(Topology::Disaggregated {
                num_prefill_workers,
                prefill,
                num_decode_workers,
                decode,
            })
        }
        (Some(_), None) | (None, Some(_)) => Err(err(
            "--prefill-engine-args and --decode-engine-args must be provided together",
        )),
        (None, None) => {
            if args.num_prefill_workers != 1 || args.num_decode_workers != 1 {
                return Err(err(format!(
                    "--num-prefill-workers/--num-decode-workers are only used for disaggregated \
                     replay (got {}/{}); use --num-workers, or give --prefill-engine-args and \
                     --decode-engine-args",
                    args.num_prefill_workers, args.num_decode_workers
                )));
            }
            // Rule 10.
            let engine = extra.unwrap_or_default();
            let num_workers: u32 = int_in_range("--num-workers", args.num_workers, 1)?;
            if engine.worker_type != WorkerType::Aggregated {
                return Err(err(format!(
                    "--extra-engine-args: aggregated replay needs worker_type \"aggregated\", got \
                     {}; use --prefill-engine-args/--decode-engine-args for disaggregated replay",
                    worker_type_name(engine.worker_type)
                )));
            }
            let targets = num_workers as u64 * engine.dp_size as u64;
            if targets > MAX_ENGINE_RANKS {
                let what = if engine.dp_size == 1 {
                    format!("--num-workers {num_workers}")
                } else {
                    format!(
                        "--num-workers × dp_size = {num_workers} × {} = {targets} engine ranks",
                        engine.dp_size
                    )
                };
                return Err(err(format!(
                    "{what} is above the limit of {MAX_ENGINE_RANKS} engine ranks (each keeps \
                     its own scheduler and KV cache state); accepted: 1 to {MAX_ENGINE_RANKS}"
                )));
            }
            if router_mode == RouterMode::KvRouter && targets <= 1 {
                return Err(err(
                    "--router-mode kv_router needs more than one worker/DP-rank target \
                     (--num-workers × dp_size = 1); add workers or use round_robin",
                ));
            }
            Ok(Topology::Aggregated {
                num_workers,
                engine,
            })
        }
    }
}

fn worker_type_name(t: WorkerType) -> &'static str {
    match t {
        WorkerType::Aggregated => "\"aggregated\"",
        WorkerType::Prefill => "\"prefill\"",
        WorkerType::Decode => "\"decode\"",
    }
}

fn synthetic_spec(args: &RunArgs, closed_loop: bool) -> Result<SyntheticSpec, InputError> {
    // Presence was checked by rule 3.
    let (Some(isl), Some(osl), Some(count)) =
        (args.input_tokens, args.output_tokens, args.request_count)
    else {
        return Err(err(
            "synthetic replay requires --input-tokens, --output-tokens and --request-count",
        ));
    };
    let arrival = if closed_loop {
        SyntheticArrival::ClosedLoop
    } else if let Some(rate) = args.request_rate {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(err(format!(
                "--request-rate must be a finite number > 0, got {rate}"
            )));
        }
        SyntheticArrival::PoissonRate(rate)
    } else if let Some(ms) = args.arrival_interval_ms {
        SyntheticArrival::IntervalMs(finite_non_negative("--arrival-interval-ms", ms)?)
    } else {
        return Err(err(
            "synthetic replay requires exactly one of --replay-concurrency, --request-rate or \
             --arrival-interval-ms",
        ));
    };
    let ratio = args.shared_prefix_ratio;
    if !(ratio.is_finite() && (0.0..=1.0).contains(&ratio)) {
        return Err(err(format!(
            "--shared-prefix-ratio must be in [0, 1], got {ratio}"
        )));
    }
    Ok(SyntheticSpec {
        input_tokens: int_in_range("--input-tokens", isl, 1)?,
        output_tokens: int_in_range("--output-tokens", osl, 1)?,
        request_count: int_in_range("--request-count", count, 1)?,
        arrival,
        arrival_seed: args.arrival_seed,
        turns_per_session: int_in_range("--turns-per-session", args.turns_per_session, 1)?,
        shared_prefix_ratio: ratio,
        num_prefix_groups: int_in_range("--num-prefix-groups", args.num_prefix_groups, 0)?,
        inter_turn_delay_ms: finite_non_negative(
            "--inter-turn-delay-ms",
            args.inter_turn_delay_ms,
        )?,
    })
}

/// An integer flag that must be `>= min` and fit in a `u32`.
fn int_in_range(flag: &str, v: i64, min: i64) -> Result<u32, InputError> {
    if v < min {
        return Err(err(format!("{flag} must be >= {min}, got {v}")));
    }
    u32::try_from(v).map_err(|_| {
        err(format!(
            "{flag} is too large: {v} (accepted: {min} to {})",
            u32::MAX
        ))
    })
}

fn finite_non_negative(flag: &str, v: f64) -> Result<f64, InputError> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(err(format!("{flag} must be a finite number >= 0, got {v}")))
    }
}

fn opt_finite_non_negative(flag: &str, v: Option<f64>) -> Result<Option<f64>, InputError> {
    v.map(|x| finite_non_negative(flag, x)).transpose()
}

/// `dynamo_replay_report_YYYYMMDD_HHMMSS.json` with the time in UTC.
pub fn default_report_file_name(now: SystemTime) -> String {
    let secs = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "dynamo_replay_report_{y:04}{m:02}{d:02}_{:02}{:02}{:02}.json",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Proleptic Gregorian (year, month, day) of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// `--report-json`: absent → timestamped file in the current directory; an existing directory →
/// timestamped file inside it; anything else is the file path itself.
fn resolve_report_path(arg: Option<&Path>, now: SystemTime) -> PathBuf {
    let name = default_report_file_name(now);
    match arg {
        None => std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("."))
            .join(name),
        Some(p) if p.is_dir() => p.join(name),
        Some(p) => p.to_path_buf(),
    }
}

/// The first failed timing prediction of any pool (AIC estimator errors are fatal, as in
/// DynoSim; the simulation cannot stop inside a pass, so it is checked afterwards).
fn timing_failure(cfg: &SimConfig) -> Option<String> {
    match &cfg.topology {
        Topology::Aggregated { engine, .. } => engine.timing.failure(),
        Topology::Disaggregated {
            prefill, decode, ..
        } => prefill.timing.failure().or_else(|| decode.timing.failure()),
    }
}

/// Runs a validated plan: workload, simulation, reports, console output.
///
/// Report paths that can never be written and simulations that cannot fit in memory are refused
/// (as input errors) before anything is simulated. The reports are written to temporary names
/// and renamed; when one cannot be written, the other is removed again, so a failed run leaves
/// no report behind.
pub fn execute(plan: &RunPlan) -> anyhow::Result<()> {
    check_writable(&plan.report_json, "--report-json")?;
    if let Some(path) = &plan.report_jsonl {
        check_writable(path, "--report-jsonl")?;
    }
    let block_size = plan.sim.topology.block_size();
    let budget = memory_budget();
    let hint = |shape: &WorkloadShape, part| match &plan.workload {
        WorkloadSource::Synthetic(_) => synthetic_memory_hint(part, shape.stored_blocks > 0),
        WorkloadSource::Trace { .. } => trace_memory_hint(part),
    };
    if let WorkloadSource::Synthetic(spec) = &plan.workload {
        // Checked before generating: the workload itself may be what does not fit.
        let shape = WorkloadShape::of_synthetic(spec, block_size);
        let floor = memory_floor(&shape, &plan.sim);
        check_memory(&floor, budget, hint(&shape, floor.largest())).map_err(err)?;
    }
    let workload = plan.workload.load(block_size)?;
    if let Some(why) = crate::sim::driver::unsupported_release(&workload, &plan.sim) {
        return Err(err(why).into());
    }
    for w in &workload.warnings {
        eprintln!("warning: {w}");
    }
    if crate::sim::ignores_time_cap(&workload, &plan.sim) {
        eprintln!("warning: {}", crate::sim::TIME_CAP_IGNORED);
    }
    for w in plan
        .sim
        .topology
        .engines()
        .iter()
        .flat_map(|e| e.warnings())
    {
        eprintln!("warning: {w}");
    }
    // Once loaded, its shareable prompt blocks are counted exactly (unless a quick bound of them
    // fits already), before they are computed.
    check_workload_memory(&workload, &plan.sim, budget, hint).map_err(err)?;
    let out = crate::sim::simulate(&workload, &plan.sim)?;
    if let Some(e) = timing_failure(&plan.sim) {
        anyhow::bail!(e);
    }

    // JSONL first: if the main report then fails, the JSONL is removed again, with any folder
    // created for them.
    let mut created: Vec<PathBuf> = missing_folders(&plan.report_json);
    if let Some(path) = &plan.report_jsonl {
        created.extend(missing_folders(path));
    }
    created.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    created.dedup();
    let undo = |written: Option<&PathBuf>| {
        if let Some(p) = written {
            let _ = std::fs::remove_file(p);
        }
        for dir in &created {
            let _ = std::fs::remove_dir(dir);
        }
    };
    if let Some(path) = &plan.report_jsonl {
        if let Err(e) = crate::report::write_jsonl(&out.records, path) {
            undo(None);
            return Err(e).with_context(|| format!("writing {}", path.display()));
        }
    }
    if let Err(e) = crate::report::write_json(&out.report, &plan.report_json) {
        undo(plan.report_jsonl.as_ref());
        return Err(e).with_context(|| format!("writing {}", plan.report_json.display()));
    }
    println!("{}", crate::report::table::render(&out.report));
    println!("Saved full report to: {}", plan.report_json.display());
    if let Some(w) = crate::report::accounting::warning(&out.report) {
        eprintln!("warning: {w}");
    }
    Ok(())
}

/// `stores_blocks`: the workload keeps its prompts' block ids (shared prefixes, several turns).
fn synthetic_memory_hint(part: MemoryPart, stores_blocks: bool) -> &'static str {
    match part {
        MemoryPart::Requests if stores_blocks => {
            "lower --request-count (or --turns-per-session) or --input-tokens"
        }
        MemoryPart::Requests => "lower --request-count (or --turns-per-session)",
        MemoryPart::PromptBlocks => {
            "lower --input-tokens or --shared-prefix-ratio, or raise the engine block_size \
             (every request keeps an id per block of its shared prefix)"
        }
        MemoryPart::Ranks => "lower --num-workers or dp_size",
    }
}

fn trace_memory_hint(part: MemoryPart) -> &'static str {
    match part {
        MemoryPart::Requests => "split the trace into smaller files",
        MemoryPart::PromptBlocks => {
            "its requests share too many prompt blocks (long input_length over common \
             hash_ids): check input_length and --trace-block-size, or raise the engine block_size"
        }
        MemoryPart::Ranks => "lower --num-workers or dp_size",
    }
}

/// The folders on `path`'s way that do not exist yet, deepest first.
fn missing_folders(path: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dir = path.parent();
    while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
        out.push(d.to_path_buf());
        dir = d.parent();
    }
    out
}

/// Refuses a report path that can never be written: a directory, or a path under an existing
/// regular file. Creates nothing.
fn check_writable(path: &Path, flag: &str) -> Result<(), InputError> {
    if path.is_dir() {
        return Err(err(format!(
            "{flag} {}: is a directory, expected a file path",
            path.display()
        )));
    }
    let mut ancestor = path.parent();
    while let Some(dir) = ancestor {
        if dir.as_os_str().is_empty() {
            break;
        }
        match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(err(format!(
                    "{flag} {}: cannot create it because {} is not a folder",
                    path.display(),
                    dir.display()
                )))
            }
            Err(_) => ancestor = dir.parent(),
        }
    }
    let parent = path.parent().unwrap_or(Path::new(""));
    crate::report::json::probe_writable(parent).map_err(|(probed, e)| {
        err(format!(
            "{flag} {}: cannot create files in {}: {e}",
            path.display(),
            probed.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use crate::config::{KvTransferTimingMode, QueuePolicy};
    use clap::Parser;
    use std::time::Duration;

    /// `SYN` at the start of `line` stands for a complete synthetic workload (ISL 100, OSL 10,
    /// 5 requests); arguments are whitespace-separated (JSON values contain no spaces).
    fn argv(line: &str) -> Vec<String> {
        let line = line.replacen(
            "SYN",
            "--input-tokens 100 --output-tokens 10 --request-count 5",
            1,
        );
        let mut v = vec!["dynosim".to_string(), "run".to_string()];
        v.extend(line.split_whitespace().map(str::to_string));
        v
    }

    fn args(line: &str) -> RunArgs {
        match Cli::try_parse_from(argv(line))
            .expect("clap accepts")
            .command
        {
            Command::Run(a) => *a,
            other => panic!("{other:?}"),
        }
    }

    /// 2026-11-29 14:50:35 UTC.
    fn fixed_now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_963_835)
    }

    fn ok(line: &str) -> RunPlan {
        plan_at(&args(line), fixed_now()).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    fn bad(line: &str) -> String {
        match plan_at(&args(line), fixed_now()) {
            Ok(p) => panic!("{line} accepted: {p:?}"),
            Err(e) => e.0,
        }
    }

    fn aggregated_engine(p: &RunPlan) -> &EngineArgs {
        match &p.sim.topology {
            Topology::Aggregated { engine, .. } => engine,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn default_report_name_is_utc_timestamped() {
        assert_eq!(
            default_report_file_name(fixed_now()),
            "dynamo_replay_report_20261129_145035.json"
        );
        assert_eq!(
            default_report_file_name(SystemTime::UNIX_EPOCH),
            "dynamo_replay_report_19700101_000000.json"
        );
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    }

    #[test]
    fn synthetic_plan_maps_every_flag() {
        let p = ok(
            "SYN --request-rate 4.5 --arrival-seed 7 --turns-per-session 3 \
             --shared-prefix-ratio 0.5 --num-prefix-groups 4 --inter-turn-delay-ms 250 \
             --num-workers 3 --router-mode kv_router --arrival-speedup-ratio 2 \
             --sla-ttft-ms 500 --sla-itl-ms 20 --seed 9 \
             --extra-engine-args {\"block_size\":16,\"dp_size\":2} \
             --router-config {\"overlap_score_weight\":0}",
        );
        let WorkloadSource::Synthetic(s) = &p.workload else {
            panic!("{:?}", p.workload)
        };
        assert_eq!(
            (s.input_tokens, s.output_tokens, s.request_count),
            (100, 10, 5)
        );
        assert_eq!(s.arrival, SyntheticArrival::PoissonRate(4.5));
        assert_eq!(s.arrival_seed, 7);
        assert_eq!(s.turns_per_session, 3);
        assert_eq!(s.shared_prefix_ratio, 0.5);
        assert_eq!(s.num_prefix_groups, 4);
        assert_eq!(s.inter_turn_delay_ms, 250.0);
        let engine = aggregated_engine(&p);
        assert_eq!((engine.block_size, engine.dp_size), (16, 2));
        assert_eq!(p.sim.topology.gpus(), 6);
        assert_eq!(p.sim.router_mode, RouterMode::KvRouter);
        assert_eq!(p.sim.router.prefill_load_scale, 0.0);
        assert_eq!(p.sim.router.overlap_score_credit, 0.0);
        assert_eq!(p.sim.load.arrival_speedup_ratio, 2.0);
        assert_eq!(p.sim.load.replay_concurrency, None);
        let sla = Sla {
            ttft_ms: Some(500.0),
            itl_ms: Some(20.0),
            e2e_ms: None,
        };
        assert_eq!(p.sim.sla, sla);
        assert_eq!(p.sim.seed, 9);
        assert!(!p.sim.record_requests);
        assert_eq!(p.sim.max_sim_time_ms, None);
        assert_eq!(p.report_jsonl, None);
        assert!(p.report_json.is_absolute());
        assert!(p
            .report_json
            .ends_with("dynamo_replay_report_20261129_145035.json"));
    }

    #[test]
    fn synthetic_load_controllers() {
        let p = ok("SYN --replay-concurrency 4");
        assert_eq!(p.sim.load.replay_concurrency, Some(4));
        let WorkloadSource::Synthetic(s) = &p.workload else {
            panic!()
        };
        assert_eq!(s.arrival, SyntheticArrival::ClosedLoop);
        let WorkloadSource::Synthetic(s) = ok("SYN --arrival-interval-ms 0").workload else {
            panic!()
        };
        assert_eq!(s.arrival, SyntheticArrival::IntervalMs(0.0));
        // Like upstream, --trace-block-size and --trace-format are ignored without a trace.
        ok("SYN --replay-concurrency 1 --trace-block-size 0 --trace-format mooncake-delta");
    }

    #[test]
    fn trace_plan_defaults() {
        let p = ok(
            "trace.jsonl --report-jsonl out/req.jsonl --max-sim-time-seconds 1.5 \
             --report-json out/r.json",
        );
        let expected = WorkloadSource::Trace(TraceSpec {
            format: crate::workload::formats::TraceFormat::Mooncake,
            paths: vec!["trace.jsonl".into()],
            trace_block_size: Some(512),
            timing: Timing::OpenLoop,
            shared_prefix_ratio: 0.0,
            num_prefix_groups: 0,
        });
        assert_eq!(p.workload, expected);
        assert_eq!(p.sim.max_sim_time_ms, Some(1500.0));
        assert!(p.sim.record_requests);
        assert_eq!(p.report_json, PathBuf::from("out/r.json"));
        assert_eq!(p.report_jsonl, Some(PathBuf::from("out/req.jsonl")));
        assert_eq!(*aggregated_engine(&p), EngineArgs::default());
        assert_eq!(p.sim.topology.gpus(), 1);
        assert_eq!(p.sim.router_mode, RouterMode::RoundRobin);
        assert_eq!(p.sim.router, RouterConfig::default());
        assert_eq!(p.sim.load, LoadSpec::default());
        assert_eq!(p.sim.seed, 42);
        let p = ok("t.jsonl --trace-block-size 64 --replay-concurrency 3");
        assert!(matches!(
            p.workload,
            WorkloadSource::Trace(TraceSpec {
                trace_block_size: Some(64),
                timing: Timing::ClosedLoop,
                ..
            })
        ));
        assert_eq!(p.sim.load.replay_concurrency, Some(3));
    }

    #[test]
    fn report_json_directory_gets_timestamped_file() {
        let dir = std::env::temp_dir();
        let p = ok(&format!("t.jsonl --report-json {}", dir.display()));
        assert_eq!(
            p.report_json,
            dir.join("dynamo_replay_report_20261129_145035.json")
        );
    }

    #[test]
    fn disaggregated_plan() {
        let p = ok("t.jsonl --num-prefill-workers 2 --num-decode-workers 3 \
             --prefill-engine-args {\"worker_type\":\"prefill\",\"block_size\":32,\"kv_bytes_per_token\":1000,\"kv_transfer_bandwidth\":2} \
             --decode-engine-args {\"is_decode\":true,\"block_size\":32,\"kv_transfer_timing_mode\":\"destination_missing\"}");
        let Topology::Disaggregated {
            num_prefill_workers,
            prefill,
            num_decode_workers,
            decode,
        } = &p.sim.topology
        else {
            panic!("{:?}", p.sim.topology)
        };
        assert_eq!((*num_prefill_workers, *num_decode_workers), (2, 3));
        assert_eq!(prefill.worker_type, WorkerType::Prefill);
        assert_eq!(prefill.kv_bytes_per_token, Some(1000));
        assert_eq!(prefill.kv_transfer_bandwidth, Some(2.0));
        assert_eq!(decode.worker_type, WorkerType::Decode);
        assert_eq!(
            decode.kv_transfer_timing_mode,
            KvTransferTimingMode::DestinationMissing
        );
        assert_eq!(p.sim.topology.block_size(), 32);
        assert_eq!(p.sim.topology.gpus(), 5);
        // 1.4.2 does not force kv_router for disaggregated replay.
        assert_eq!(p.sim.router_mode, RouterMode::RoundRobin);
    }

    #[test]
    fn engine_router_queue_policy_is_kept_for_the_simulator() {
        let p = ok("t.jsonl --extra-engine-args {\"router_queue_policy\":\"lcfs\"}");
        assert_eq!(
            aggregated_engine(&p).router_queue_policy,
            Some(QueuePolicy::Lcfs)
        );
    }

    #[test]
    fn an_aic_load_model_under_round_robin_is_ignored_like_dynosim() {
        let p = ok("t.jsonl --router-config {\"router_prefill_load_model\":\"aic\"}");
        assert_eq!(
            p.sim.router.router_prefill_load_model,
            PrefillLoadModel::Aic
        );
        assert!(p.sim.router.prefill_load_estimator.is_none());
        // `auto` dtypes set nothing, so they need no other flag.
        ok("t.jsonl --aic-gemm-dtype auto");
    }

    #[test]
    fn kv_router_needs_more_than_one_target() {
        let m = bad("t.jsonl --router-mode kv_router");
        assert!(
            m.contains("kv_router") && m.contains("more than one"),
            "{m}"
        );
        // DP ranks count as targets.
        ok("t.jsonl --router-mode kv_router --extra-engine-args {\"dp_size\":2}");
        ok("t.jsonl --router-mode kv_router --num-workers 2");
    }

    /// (command line, words the message must contain).
    const BAD_INPUTS: &[(&str, &[&str])] = &[
        // Rule 1.
        ("a b", &["requires exactly one trace file", "got 2"]),
        ("--trace-format dynamo", &["dynamo", "at least one trace file"]),
        // Refused flags.
        ("t --trace-format applied_compute_agentic", &["applied_compute_agentic requires --replay-concurrency"]),
        ("t --trace-format agentic_mooncake --replay-concurrency 2", &["not supported with replay_concurrency"]),
        ("t --trace-format agentic_mooncake --prefill-engine-args {\"worker_type\":\"prefill\"} --decode-engine-args {\"worker_type\":\"decode\"}", &["agentic_mooncake trace format is not supported for disaggregated replay"]),
        ("t --trace-format applied_compute_agentic --replay-concurrency 2 --trace-shared-prefix-ratio 1.5", &["--trace-shared-prefix-ratio must be between 0.0 and 1.0"]),
        ("t --trace-format applied_compute_agentic --replay-concurrency 2 --trace-num-prefix-groups -1", &["--trace-num-prefix-groups"]),
        ("t --planner-config p.yaml", &["--planner-config is not supported by dynosim"]),
        ("t --benchmark-granularity 8", &["--benchmark-granularity is not supported"]),
        // Rule 8 (details are unit-tested in config::aic).
        ("t --aic-backend vllm", &["requires --aic-system, --aic-model-path"]),
        ("t --aic-tp-size 2", &["requires --aic-backend, --aic-system, --aic-model-path"]),
        ("t --aic-backend vllm --aic-system h200_sxm --aic-model-path Q --aic-backend-version 1", &["require --router-mode kv_router"]),
        ("t --num-workers 2 --router-mode kv_router --aic-backend vllm --aic-system h200_sxm --aic-model-path Q --aic-backend-version 1", &["require --router-config with \"router_prefill_load_model\": \"aic\""]),
        ("t --num-workers 2 --router-mode kv_router --router-config {\"router_prefill_load_model\":\"aic\"}", &["--router-config", "requires the AIConfigurator flags", "--aic-backend-version"]),
        ("t --aic-backend vllm --aic-system h200_sxm --aic-model-path Q --aic-nextn 6", &["--aic-nextn must be 1..=5"]),
        ("t --router-config {\"router_prefill_load_model\":\"aic\",\"router_track_prefill_tokens\":false}", &["requires router_track_prefill_tokens"]),
        ("t --router-policy-config p.yaml", &["--router-policy-config", "not supported"]),
        ("t --model-name m", &["--model-name is not supported by dynosim"]),
        ("t --replay-mode online", &["dynosim simulates offline only"]),
        // Rules 2-5.
        ("", &["no workload"]),
        ("t --input-tokens 5", &["cannot be combined", "--input-tokens"]),
        ("t --turns-per-session 2", &["cannot be combined", "--turns-per-session"]),
        ("t --inter-turn-delay-ms 5", &["--inter-turn-delay-ms"]),
        ("--input-tokens 5 --request-rate 1", &["missing --output-tokens, --request-count"]),
        ("SYN", &["exactly one of", "none given"]),
        ("SYN --request-rate 1 --replay-concurrency 2", &["got --replay-concurrency and --request-rate"]),
        ("t --request-rate 3", &["--request-rate only applies to synthetic"]),
        ("t --arrival-interval-ms 3", &["--arrival-interval-ms only applies"]),
        // Rule 6.
        ("SYN --replay-concurrency 1 --report-jsonl x", &["--report-jsonl", "trace-file"]),
        ("SYN --replay-concurrency 1 --max-sim-time-seconds 3", &["--max-sim-time-seconds", "trace-file"]),
        // Rule 7 (details are unit-tested in config::engine_args / router_config).
        ("t --extra-engine-args {", &["--extra-engine-args: invalid JSON", "column"]),
        ("t --extra-engine-args [1]", &["--extra-engine-args", "must be a JSON object"]),
        ("t --extra-engine-args {\"num_gpu_block\":5}", &["did you mean \"num_gpu_blocks\""]),
        ("t --extra-engine-args {\"engine_type\":\"tgi\"}", &["engine_type", "one of \"vllm\""]),
        ("t --router-config {\"x\":1}", &["--router-config: unknown key \"x\""]),
        // Rule 9.
        ("t --extra-engine-args {} --prefill-engine-args {}", &["cannot be combined"]),
        ("t --prefill-engine-args {\"worker_type\":\"prefill\"}", &["must be provided together"]),
        ("t --decode-engine-args {\"worker_type\":\"decode\"}", &["must be provided together"]),
        ("t --num-prefill-workers 2", &["--num-prefill-workers", "only used for disaggregated"]),
        ("t --num-workers 2 --prefill-engine-args {\"is_prefill\":true} --decode-engine-args {\"is_decode\":true}", &["--num-workers is only used for aggregated"]),
        // Rule 10.
        ("t --num-workers 0", &["--num-workers must be >= 1, got 0"]),
        ("t --num-workers -3", &["--num-workers must be >= 1, got -3"]),
        ("t --extra-engine-args {\"worker_type\":\"decode\"}", &["aggregated replay needs worker_type"]),
        ("t --router-mode kv_router --num-workers 1", &["more than one worker/DP-rank target"]),
        // Rule 12.
        ("t --prefill-engine-args {} --decode-engine-args {\"worker_type\":\"decode\"}", &["--prefill-engine-args must set worker_type \"prefill\""]),
        ("t --prefill-engine-args {\"is_prefill\":true} --decode-engine-args {}", &["--decode-engine-args must set worker_type \"decode\""]),
        ("t --num-decode-workers 0 --prefill-engine-args {\"is_prefill\":true} --decode-engine-args {\"is_decode\":true}", &["--num-decode-workers must be >= 1"]),
        ("t --num-prefill-workers 0 --prefill-engine-args {\"is_prefill\":true} --decode-engine-args {\"is_decode\":true}", &["--num-prefill-workers must be >= 1"]),
        ("t --prefill-engine-args {\"is_prefill\":true,\"dp_size\":2} --decode-engine-args {\"is_decode\":true}", &["dp_size must be 1", "got 2 and 1"]),
        ("t --prefill-engine-args {\"is_prefill\":true,\"block_size\":16} --decode-engine-args {\"is_decode\":true}", &["same block_size", "got 16 and 64"]),
        // Rules 13, 14, SLA, trace block size.
        ("t --replay-concurrency 0", &["--replay-concurrency must be >= 1"]),
        ("t --arrival-speedup-ratio 0", &["--arrival-speedup-ratio", "> 0"]),
        ("t --arrival-speedup-ratio inf", &["--arrival-speedup-ratio"]),
        ("t --max-sim-time-seconds -1", &["--max-sim-time-seconds must be a finite number >= 0"]),
        ("t --sla-ttft-ms -1", &["--sla-ttft-ms"]),
        ("t --sla-itl-ms NaN", &["--sla-itl-ms"]),
        ("t --sla-e2e-ms inf", &["--sla-e2e-ms"]),
        ("t --trace-block-size 0", &["--trace-block-size must be >= 1"]),
        // Synthetic ranges (spec §3).
        ("SYN --request-rate 0", &["--request-rate must be a finite number > 0"]),
        ("SYN --request-rate nan", &["--request-rate"]),
        ("SYN --arrival-interval-ms -5", &["--arrival-interval-ms must be a finite number >= 0"]),
        ("SYN --replay-concurrency 1 --shared-prefix-ratio 1.5", &["--shared-prefix-ratio must be in [0, 1]"]),
        ("SYN --replay-concurrency 1 --num-prefix-groups -1", &["--num-prefix-groups must be >= 0"]),
        ("SYN --replay-concurrency 1 --turns-per-session 0", &["--turns-per-session must be >= 1"]),
        ("SYN --replay-concurrency 1 --inter-turn-delay-ms -1", &["--inter-turn-delay-ms"]),
        ("--input-tokens 0 --output-tokens 1 --request-count 1 --replay-concurrency 1", &["--input-tokens must be >= 1"]),
        ("--input-tokens 1 --output-tokens 0 --request-count 1 --replay-concurrency 1", &["--output-tokens must be >= 1"]),
        ("--input-tokens 1 --output-tokens 1 --request-count 0 --replay-concurrency 1", &["--request-count must be >= 1"]),
        ("--input-tokens 5000000000 --output-tokens 1 --request-count 1 --replay-concurrency 1", &["--input-tokens is too large"]),
    ];

    #[test]
    fn bad_inputs_are_rejected_with_the_flag_named() {
        for (line, words) in BAD_INPUTS {
            let m = bad(line);
            for w in *words {
                assert!(m.contains(w), "{line}: {m:?} lacks {w:?}");
            }
            assert!(!m.contains('\n'), "{line}: message is not one line: {m:?}");
        }
    }
}
