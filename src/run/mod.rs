//! `dynosim run`: turns the parsed flags into a validated [`RunPlan`] (spec §1.2, applied in
//! upstream's order, plus refusals of what dynosim does not simulate), then executes it: load the
//! workload, simulate, write the JSON/JSONL reports, print the table.
//!
//! Validation is complete before anything is read or written, so a bad flag never leaves a report
//! file behind. Every message names the flag(s) involved.
//!
//! DynoSim's deployment rules are `config::build`'s, shared with a sweep point: this module turns
//! flags into the builder's inputs, `flags` words its problems by flag, `execute` runs the plan.

use crate::calibrate::{notes, CalibrationFile};
use crate::cli::{ReplayMode, RouterModeArg, RunArgs, TraceFormat};
use crate::config::aic::{load_prefill_load_estimator, router_aic_engine, RouterAicValues};
use crate::config::build::{self, PoolsInput, TopologyInput, Wording};
use crate::config::engine_args::parse_engine_args_str;
use crate::config::router_config::parse_router_config_str;
use crate::config::{
    EngineArgs, LoadSpec, PrefillLoadModel, RouterConfig, RouterMode, SimConfig, Sla, Topology,
};
use crate::error::InputError;
use crate::timing::TimingLoader;
use crate::workload::synthetic::{SyntheticArrival, SyntheticSpec};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Where the requests come from (one type with a sweep point's).
pub use crate::config::build::WorkloadSource;
/// Tokens per trace `hash_id` when `--trace-block-size` is not given.
pub use crate::config::build::DEFAULT_TRACE_BLOCK_SIZE;

/// A validated `dynosim run` invocation.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPlan {
    pub workload: WorkloadSource,
    pub sim: SimConfig,
    /// Resolved report path (a directory argument already has the timestamped name appended).
    pub report_json: PathBuf,
    pub report_jsonl: Option<PathBuf>,
    /// `--gpu-hour-usd`: the report gets the cost keys (`crate::report::cost`).
    pub gpu_prices: Option<crate::report::cost::GpuPrices>,
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
    // Files named in engine args are relative to the working directory; pools naming the same
    // timing source share one model.
    plan_inner(args, now, &mut TimingLoader::default(), true)
}

/// [`plan_at`] through a caller's `timing` loader: many plans (`dynosim validate`'s points)
/// share each distinct timing model, AIC engines included, and nothing is printed.
pub fn plan_with(
    args: &RunArgs,
    now: SystemTime,
    timing: &mut TimingLoader,
) -> Result<RunPlan, InputError> {
    plan_inner(args, now, timing, false)
}

fn plan_inner(
    args: &RunArgs,
    now: SystemTime,
    timing: &mut TimingLoader,
    print_aic: bool,
) -> Result<RunPlan, InputError> {
    let using_trace = check_workload_flags(args)?;

    // Rule 7: engine args and router config JSON.
    let extra = parse_opt_engine_args(&args.extra_engine_args, "--extra-engine-args", timing)?;
    let prefill =
        parse_opt_engine_args(&args.prefill_engine_args, "--prefill-engine-args", timing)?;
    let decode = parse_opt_engine_args(&args.decode_engine_args, "--decode-engine-args", timing)?;
    let mut router = match &args.router_config {
        Some(json) => parse_router_config_str(json, "--router-config")?,
        None => RouterConfig::default(),
    };
    let router_mode = match args.router_mode {
        RouterModeArg::RoundRobin => RouterMode::RoundRobin,
        RouterModeArg::KvRouter => RouterMode::KvRouter,
    };
    // Rule 8: the KV router's AIC prefill-load estimator.
    attach_router_aic(args, router_mode, &mut router, timing)?;
    let aic = timing.aic_engines().stats();
    if print_aic && aic.loaded > 0 {
        eprintln!("{}", aic.summary());
    }

    // Rules 9, 10, 12: aggregated or disaggregated topology.
    let mut topology = build_topology(args, extra, prefill, decode, router_mode)?;
    if let Some(path) = &args.calibration {
        let file = CalibrationFile::load(path, "--calibration")?;
        for line in notes(&file.apply_topology(&mut topology)) {
            eprintln!("calibration {}: {line}", path.display());
        }
    }

    if using_trace {
        check_trace_format(args, &topology)?;
    }
    let gpu_prices = price::parse_prices(&args.gpu_hour_usd)?;
    if let Some(prices) = &gpu_prices {
        price::check_priced(&topology, prices)?;
    }

    // Rule 13.
    let replay_concurrency = match args.replay_concurrency {
        None => None,
        Some(n) => Some(int_in_range("--replay-concurrency", n, 1)?),
    };
    if let Some(problem) = build::trtllm_problem(&topology, replay_concurrency.is_some()) {
        return Err(err(RunFlags.message(&problem)));
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
        let format = args.trace_format.into();
        WorkloadSource::Trace {
            files: args
                .trace_files
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            paths: args.trace_files.clone(),
            trace_block_size: build::trace_block_size(format, trace_block_size),
            closed_loop: replay_concurrency.is_some(),
            format,
            shared_prefix_ratio,
            num_prefix_groups: int_in_range(
                "--trace-num-prefix-groups",
                args.trace_num_prefix_groups,
                0,
            )?,
        }
    } else {
        // Like upstream, --trace-block-size is ignored by synthetic workloads.
        WorkloadSource::Synthetic {
            spec: synthetic_spec(args, replay_concurrency.is_some())?,
            block_size: topology.block_size(),
        }
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
        gpu_prices,
    })
}

/// Rules 1-6 (and the refused flags): a trace or a synthetic workload, with the flags each
/// needs and the flags it cannot take. Returns whether a trace is replayed.
fn check_workload_flags(args: &RunArgs) -> Result<bool, InputError> {
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
    if using_trace {
        let shape: Vec<&str> = shape_flags_set(args)
            .iter()
            .filter(|(_, set)| *set)
            .map(|(f, _)| *f)
            .collect();
        if !shape.is_empty() {
            return Err(err(format!(
                "{} only shape synthetic workloads (--input-tokens/--output-tokens/\
                 --request-count); a trace file gives every request's lengths and arrival: \
                 remove the trace file or these flags",
                shape.join(", ")
            )));
        }
    }
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
    Ok(using_trace)
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
    match build::trace_format_problem(args.trace_format.into(), closed_loop, disaggregated) {
        Some(problem) => Err(err(RunFlags.message(&problem))),
        None => Ok(()),
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
    .into_iter()
    .chain(shape_flags_set(args))
    .collect::<Vec<_>>()
    .iter()
    .filter(|(_, set)| *set)
    .map(|(f, _)| *f)
    .collect()
}

/// The benchmark-shape flags (drawn lengths, warm-up) that are set, by flag name: they only
/// shape synthetic workloads.
fn shape_flags_set(args: &RunArgs) -> [(&'static str, bool); 5] {
    [
        ("--random-range-ratio", args.random_range_ratio.is_some()),
        ("--random-range-style", args.random_range_style.is_some()),
        ("--input-tokens-stddev", args.input_tokens_stddev.is_some()),
        (
            "--output-tokens-stddev",
            args.output_tokens_stddev.is_some(),
        ),
        (
            "--warmup-request-count",
            args.warmup_request_count.is_some(),
        ),
    ]
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

/// Rules 9, 10, 12: which engine-args flags select the mode, then the deployment rules shared
/// with a sweep point (the first problem is the error).
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
    let pools = match (prefill, decode) {
        (Some(prefill), Some(decode)) => PoolsInput::Disaggregated { prefill, decode },
        (Some(_), None) | (None, Some(_)) => {
            return Err(err(
                "--prefill-engine-args and --decode-engine-args must be provided together",
            ))
        }
        (None, None) => PoolsInput::Aggregated {
            engine: extra.unwrap_or_default(),
        },
    };
    let input = TopologyInput {
        pools,
        num_workers: args.num_workers,
        num_prefill_workers: args.num_prefill_workers,
        num_decode_workers: args.num_decode_workers,
        router_mode,
    };
    let (topology, problems) = build::build_topology(input, &RunFlags);
    match problems.first() {
        Some(problem) => Err(err(RunFlags.message(problem))),
        None => Ok(topology),
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
    let num_prefix_groups = int_in_range("--num-prefix-groups", args.num_prefix_groups, 0)?;
    let inter_turn_delay_ms =
        finite_non_negative("--inter-turn-delay-ms", args.inter_turn_delay_ms)?;
    let spec = SyntheticSpec {
        input_tokens: int_in_range("--input-tokens", isl, 1)?,
        output_tokens: int_in_range("--output-tokens", osl, 1)?,
        request_count: int_in_range("--request-count", count, 1)?,
        arrival,
        arrival_seed: args.arrival_seed,
        turns_per_session: int_in_range("--turns-per-session", args.turns_per_session, 0)?,
        shared_prefix_ratio: ratio,
        num_prefix_groups,
        inter_turn_delay_ms,
        random_range_ratio: args.random_range_ratio,
        random_range_style: args.random_range_style.map(Into::into).unwrap_or_default(),
        input_tokens_stddev: args.input_tokens_stddev.unwrap_or(0.0),
        output_tokens_stddev: args.output_tokens_stddev.unwrap_or(0.0),
        warmup_request_count: match args.warmup_request_count {
            None => 0,
            Some(n) => int_in_range("--warmup-request-count", n, 0)?,
        },
    }
    .with_dynosim_turns();
    if spec.turns_per_session == 0 {
        return Err(err(
            "--turns-per-session must be at least 1 with --shared-prefix-ratio, \
             --num-prefix-groups or --inter-turn-delay-ms, got 0",
        ));
    }
    if args.random_range_style.is_some() && args.random_range_ratio.is_none() {
        return Err(err(
            "--random-range-style only applies with --random-range-ratio",
        ));
    }
    spec.check_shape()?;
    Ok(spec)
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
    format!(
        "dynamo_replay_report_{}.json",
        crate::report::dates::compact_utc(now)
    )
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

mod execute;
mod flags;
mod price;
#[cfg(test)]
mod tests;

pub use execute::execute;
use flags::RunFlags;
