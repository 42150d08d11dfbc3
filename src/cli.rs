//! The command line of dynosim as clap definitions: `run` (DynoSim's `python -m dynamo.replay`
//! flags, same names and defaults, spec §1.1), `sweep` and `merge`. Only syntax lives here;
//! `run::plan` turns `RunArgs` into a validated plan, the sweep module handles the other two.
//!
//! Flags dynosim does not support (planner, AIC, policy YAML, online mode...) are still parsed so
//! that validation can refuse them with a clear message instead of "unexpected argument".
//! Integer flags are parsed as signed numbers, like argparse does, so that `--num-workers -1` gets
//! the same "must be >= 1" message as `--num-workers 0`.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Top-level parser.
#[derive(Debug, Parser)]
#[command(
    name = "dynosim",
    version,
    about = "Fast, deterministic re-implementation of NVIDIA Dynamo's DynoSim offline replay, \
             with parallel configuration sweeps"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Simulate one deployment on a trace or a synthetic workload (DynoSim replay flags).
    #[command(allow_negative_numbers = true, args_override_self = true)]
    Run(Box<RunArgs>),
    /// Simulate every point of a configuration grid described by a YAML spec, in parallel.
    Sweep(SweepArgs),
    /// Merge the output directories of sharded sweeps into one.
    Merge(MergeArgs),
    /// Rewrite report.html of a sweep output directory from its points.
    Report(ReportArgs),
    /// Compare two --report-json reports, or two sweep output directories.
    Compare(CompareArgs),
    /// Write the Dynamo deployment (Kubernetes, launch script), its AIPerf benchmark and README
    /// for a sweep's point (default: the winner) or a `dynosim run` report.
    Deploy(DeployArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Print the man page (roff), or write one page per command into a directory.
    Man(ManArgs),
    /// AIConfigurator timing: what the installed perf database supports.
    #[command(subcommand)]
    Aic(AicCommand),
    /// Simulate measured deployments (AIConfigurator's table, AIPerf exports) and compare the
    /// predicted TTFT and TPOT with the measured ones.
    #[command(allow_negative_numbers = true)]
    Validate(Box<ValidateArgs>),
    /// Fit per-family corrections (prefill and decode time scales, per-request overhead) to
    /// measured deployments by simulating them, cross-validated; writes a calibration file for
    /// --calibration.
    #[command(allow_negative_numbers = true)]
    Calibrate(Box<CalibrateArgs>),
}

/// `--fit-on` of `dynosim calibrate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FitOn {
    /// Each fold's fit sees that fold only and predicts the other rows (3 folds: calibrated on
    /// a third, checked on two thirds).
    #[value(name = "one")]
    One,
    /// Classic k-fold: each fold's fit sees the other folds and predicts the fold.
    #[value(name = "rest")]
    Rest,
}

/// Flags of `dynosim calibrate` (see docs/calibration.md). The measured points are read and
/// simulated as `dynosim validate` does, with the same flags.
#[derive(Debug, Clone, Args)]
pub struct CalibrateArgs {
    /// Measured points: table CSVs and/or AIPerf exports.
    #[arg(value_name = "MEASURED", required = true)]
    pub measured: Vec<PathBuf>,
    /// The calibration file to write (JSON).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// Cross-validation folds (points assigned round-robin in a fixed order, the repeats of a
    /// point always together); families with fewer rows than --loo-below are cross-validated
    /// leave-one-out instead.
    #[arg(long, default_value_t = 3, value_name = "K")]
    pub folds: usize,
    /// Which side of each fold the fit sees.
    #[arg(long, value_enum, default_value = "one")]
    pub fit_on: FitOn,
    /// Families with fewer rows are cross-validated leave-one-out (a point left out with its
    /// repeats).
    #[arg(long, default_value_t = 15, value_name = "N")]
    pub loo_below: usize,
    /// Leave the measured point with this id out of the fit (repeatable), e.g. one that the
    /// console names as still far off after fitting.
    #[arg(long, value_name = "ID")]
    pub exclude: Vec<String>,
    /// Do not fit the per-request overhead (request_overhead_ms: ms from the client's send to
    /// the engine, in every TTFT).
    #[arg(long)]
    pub no_request_overhead: bool,
    /// Do not fit the per-prefill-pass overhead. By default the fit also adjusts one
    /// (prefill_pass_overhead_ms: ms added to every engine pass that computes prompt tokens, so
    /// a prompt's fixed cost also stalls the requests decoding beside it) and keeps it only where
    /// it cross-validates better than the fit without one; that costs 1.1 to 1.5 times the
    /// simulations (each ratio tried runs once more with 1 ms of it, and every overhead on its
    /// lattice follows from the two), and a fit without it to compare.
    #[arg(long, overrides_with = "fit_pass_overhead")]
    pub no_fit_pass_overhead: bool,
    /// Fit the per-prefill-pass overhead (the default since 2026-12-05; accepted so that older
    /// commands keep working, and to undo an earlier --no-fit-pass-overhead).
    #[arg(long, hide = true, overrides_with = "no_fit_pass_overhead")]
    pub fit_pass_overhead: bool,
    /// Do not fit the per-decode-pass overhead. By default the fit also adjusts one
    /// (decode_pass_overhead_ms: ms, possibly negative, added to every engine pass that decodes,
    /// so TPOT becomes affine in the simulated step) and keeps it only where it cross-validates
    /// better than the fit without one; that costs twice the simulations (each probe also runs
    /// with 1 ms of it, which gives the overhead in closed form).
    #[arg(long, overrides_with = "fit_decode_overhead")]
    pub no_fit_decode_overhead: bool,
    /// Fit the per-decode-pass overhead (the default since 2026-12-05; accepted so that older
    /// commands keep working, and to undo an earlier --no-fit-decode-overhead).
    #[arg(long, hide = true, overrides_with = "no_fit_decode_overhead")]
    pub fit_decode_overhead: bool,
    /// Also fit the KV pool's size (kv_pool_scale: a factor on its block count, from 1/8 to 4)
    /// where the measured servers queued or preempted earlier or later than the memory model's
    /// pool makes them; kept only where it cross-validates better than the fit without one. 7
    /// more simulations of each row, up to 14 more per round where the factor moves, and a fit
    /// without it to compare.
    #[arg(long)]
    pub fit_kv_pool: bool,
    /// Fit no entries per deployment shape. By default each deployment shape of a family (TP,
    /// attention DP, EP) with at least 6 rows also gets an entry, fitted on its rows alone,
    /// that wins over the family's for pools of that shape; like every narrower entry, it is
    /// kept only where it predicts its rows better held out than the wider entry does.
    #[arg(long, overrides_with = "per_parallelism")]
    pub no_per_parallelism: bool,
    /// Keep every narrower entry (per decoding mode, weight quantisation and deployment
    /// shape) that has enough rows. By default one is kept only where its cross-validation
    /// predicts its rows better (mean |TTFT error| + mean |TPOT error|) than the wider entry's
    /// did; its rows otherwise take the wider entry, and stderr says why.
    #[arg(long)]
    pub keep_narrow_entries: bool,
    /// Fit an entry per deployment shape (the default since 2026-12-05; accepted so that older
    /// commands keep working, and to undo an earlier --no-per-parallelism).
    #[arg(long, hide = true, overrides_with = "no_per_parallelism")]
    pub per_parallelism: bool,
    /// Fit a family whose rows have several weight quantisations (e.g. FP8 and NVFP4) as one:
    /// no entries per quantisation. By default each quantisation with at least 6 rows also
    /// gets an entry, fitted on its rows alone, that wins over the family's for its pools (and
    /// the entries per deployment shape are fitted within it).
    #[arg(long)]
    pub no_per_quantisation: bool,
    /// Fit a family whose rows decode in several modes (plain, and multi-token prediction with
    /// N draft tokens, aic_nextn) as one: no entries per decoding mode. By default each mode
    /// with at least 6 rows also gets an entry, fitted on its rows alone, that wins over the
    /// family's for its pools (and the entries per quantisation and shape are fitted within
    /// it).
    #[arg(long)]
    pub no_per_decoding: bool,
    /// Fit a family whose rows were measured on several releases of the serving engine (the
    /// table's backend_version, e.g. vLLM 0.17.0 and 0.19.0) as one: no entries per release.
    /// By default each release with at least 6 rows also gets an entry, fitted on its rows
    /// alone and kept where it predicts them better than the family's, that wins over the
    /// family's for pools naming that release (engine key server_version; the entries per
    /// quantisation and shape are fitted within it).
    #[arg(long)]
    pub no_per_version: bool,
    #[command(flatten)]
    pub options: MeasuredOptions,
    #[command(flatten)]
    pub deployment: ExportDeployment,
}

impl CalibrateArgs {
    /// Whether each deployment shape gets an entry of its own: yes unless
    /// --no-per-parallelism is the last of the two flags given.
    pub fn fits_per_parallelism(&self) -> bool {
        !self.no_per_parallelism
    }

    /// Whether the fit adjusts a per-prefill-pass overhead: yes unless --no-fit-pass-overhead
    /// is the last of the two flags given.
    pub fn fits_pass_overhead(&self) -> bool {
        !self.no_fit_pass_overhead
    }

    /// Whether the fit adjusts a per-decode-pass overhead: yes unless --no-fit-decode-overhead
    /// is the last of the two flags given.
    pub fn fits_decode_overhead(&self) -> bool {
        !self.no_fit_decode_overhead
    }

    /// The same points and flags as `dynosim validate` takes them (`-o` unused).
    pub fn as_validate_args(&self) -> ValidateArgs {
        ValidateArgs {
            measured: self.measured.clone(),
            deployment_from: None,
            output_dir: PathBuf::new(),
            options: self.options.clone(),
            // Corrections are fitted on the engine's own passes; a calibrated family's pools
            // drop the uncalibrated dispatch model.
            dispatch_overhead: "none".into(),
            calibration: None,
            deployment: self.deployment.clone(),
        }
    }
}

/// Flags of `dynosim validate` (implemented in the validate module; see docs/validation.md).
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Writes into the output directory: validation.csv, validation.json, \
validation.html. Inputs are detected by content: AIConfigurator's table of measured deployments \
(CSV with silicon_ttft_ms/silicon_tpot_ms, e.g. aiconfigurator_core/systems/silicon_sample.csv or \
any subset of its rows), or AIPerf's profile_export_aiperf.json (simulated with the deployment \
flags below)."
)]
pub struct ValidateArgs {
    /// Measured points: table CSVs and/or AIPerf exports.
    #[arg(value_name = "MEASURED", required_unless_present = "deployment_from")]
    pub measured: Vec<PathBuf>,
    /// A `dynosim deploy` folder: its AIPerf export (benchmark.sh's) is measured, with the
    /// deployment flags of its deployment.json (they replace the deployment flags below).
    #[arg(long, value_name = "OUT")]
    pub deployment_from: Option<PathBuf>,
    /// Output directory.
    #[arg(short = 'o', long = "output-dir", value_name = "DIR")]
    pub output_dir: PathBuf,
    #[command(flatten)]
    pub options: MeasuredOptions,
    /// Table rows: the host's dispatch cost (engines = as each engine's measured servers show
    /// it: AIConfigurator's vLLM model, 0.8 ms per model layer, on each prefill pass of vLLM
    /// and SGLang rows, and 0.8 ms per MoE layer once per request on TRT-LLM rows;
    /// vllm-sglang = the same without TRT-LLM's; aic = AIConfigurator's model as it is, vLLM
    /// rows only; all = 0.8 ms per layer on each prefill pass of every row; none = the engine's
    /// passes alone, as DynoSim). Calibrated families drop it for their fitted corrections.
    #[arg(long, default_value = "engines", value_name = "MODEL")]
    pub dispatch_overhead: String,
    /// Calibration file (written by `dynosim calibrate`): points of a family it holds are
    /// simulated with its corrections.
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,

    #[command(flatten)]
    pub deployment: ExportDeployment,
}

/// How `validate` and `calibrate` simulate measured points.
#[derive(Debug, Clone, Args)]
pub struct MeasuredOptions {
    /// Table rows: requests per unit of concurrency (the benchmark's --num-prompts 10×C; rows
    /// whose script sent another count keep it under --launch-settings inferencex).
    #[arg(long, default_value_t = 10, value_name = "K")]
    pub prompts_per_concurrency: u32,
    /// Table rows: input and output lengths uniform in [⌊R·L⌋, L] (the benchmark's
    /// --random-range-ratio).
    #[arg(long, default_value_t = 0.8, value_name = "R")]
    pub random_range_ratio: f64,
    /// Table rows: KV-cache dtype (auto = as the measured servers' scripts ran: fp8 for vLLM and
    /// TRT-LLM rows with FP8/FP4 weights and such SGLang rows on B200 and B300, bfloat16 for
    /// aggregated SGLang DeepSeek-R1 on H200; AIC's default for the model otherwise; model,
    /// fp8, bfloat16).
    #[arg(long, default_value = "auto", value_name = "DTYPE")]
    pub kv_cache_dtype: String,
    /// Table rows: how the KV pool is sized from AIC's memory breakdown (server = as each
    /// server accounts its memory: SGLang's mem_fraction_static holds the weights and the KV
    /// pool, activations outside it, and the weights are counted as the checkpoint holds them;
    /// aic = AIConfigurator's rule and weights for every backend, as DynoSim).
    #[arg(long, default_value = "server", value_name = "MODEL")]
    pub memory_model: String,
    /// Table rows: how AIC's decode step times are read (monotone = a step takes the least of
    /// AIC's times for its batch and for up to 4 times as many sequences, as a step never gets
    /// faster with more sequences: `aic_decode_monotone`; aic = as AIC gives them, as DynoSim).
    #[arg(long, default_value = "monotone", value_name = "MODEL")]
    pub decode_timing: String,
    /// Table rows: how a vLLM or TRT-LLM step that prefills and decodes is timed (separate = a
    /// prefill plus a decode step, two forwards over the weights, as DynoSim; fused = one
    /// forward, AIConfigurator's mixed-step estimate, as those servers run it: `mixed_pass`;
    /// SGLang rows and rows run with MTP stay separate).
    #[arg(long, default_value = "separate", value_name = "TIMING")]
    pub mixed_pass: String,
    /// Table rows: the servers' scheduler settings (inferencex = as InferenceX's launch scripts
    /// ran the measured servers: TRT-LLM's batch waiting for Llama 70B at ISL/OSL 1024/1024
    /// below TP 8, attention-DP balancing for DeepSeek-R1 and (B200) gpt-oss-120b with
    /// attention DP, and gpt-oss-120b's 20000-token budget; SGLang's
    /// scheduler receive interval, prefill budgets and memory fraction for DeepSeek-R1,
    /// Qwen3.5 and GLM-5, one wave of C prompts for Qwen3.5 on B300 in the runs the table
    /// marks work in progress, wip=True, and 5 x C prompts for GLM-5 on H200, and TRT-LLM
    /// DeepSeek-R1 rows measured on or after 2026-01-07, when InferenceX's MTP scripts landed,
    /// as those scripts ran them (multi-token prediction, their batch size and token budget),
    /// but B200 FP4 rows of TRT-LLM 1.2.0rc6.post2, a container only its plain script ran;
    /// inferencex-mtp / inferencex-plain = the same, with every TRT-LLM DeepSeek-R1 row run as
    /// the MTP / plain scripts ran them; none = the engines' defaults and
    /// --prompts-per-concurrency everywhere).
    #[arg(
        long,
        alias = "batch-wait",
        default_value = "inferencex",
        value_name = "SETTINGS"
    )]
    pub launch_settings: String,
    /// Table rows with attention DP: who picks a request's DP rank (engine = the worker, as
    /// its engine does serving alone, as the measured servers did: TRT-LLM's attention-DP
    /// router, vLLM's data-parallel load balancer, SGLang's round robin; router = the round
    /// robin over every (worker, rank), as DynoSim's frontend).
    #[arg(long, default_value = "engine", value_name = "WHO")]
    pub dp_rank_routing: String,
    /// Parallel simulations [default: number of CPUs].
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Seed of every simulated run (--seed and --arrival-seed).
    #[arg(long, default_value_t = 42, value_name = "N")]
    pub seed: u64,
    /// No console summary (errors still go to stderr).
    #[arg(long)]
    pub quiet: bool,
}

/// The deployment AIPerf exports are simulated on (as `dynosim run`'s flags), for `validate`
/// and `calibrate`.
#[derive(Debug, Clone, Args)]
pub struct ExportDeployment {
    /// Aggregated engine config (MockEngineArgs JSON object).
    #[arg(
        long,
        value_name = "JSON",
        help_heading = "Deployment of AIPerf exports"
    )]
    pub extra_engine_args: Option<String>,
    /// Disaggregated prefill-pool engine config; must set worker_type=prefill.
    #[arg(
        long,
        value_name = "JSON",
        help_heading = "Deployment of AIPerf exports"
    )]
    pub prefill_engine_args: Option<String>,
    /// Disaggregated decode-pool engine config; must set worker_type=decode.
    #[arg(
        long,
        value_name = "JSON",
        help_heading = "Deployment of AIPerf exports"
    )]
    pub decode_engine_args: Option<String>,
    /// Aggregated worker count.
    #[arg(
        long,
        default_value_t = 1,
        value_name = "N",
        help_heading = "Deployment of AIPerf exports"
    )]
    pub num_workers: i64,
    /// Disaggregated prefill worker count.
    #[arg(
        long,
        default_value_t = 1,
        value_name = "N",
        help_heading = "Deployment of AIPerf exports"
    )]
    pub num_prefill_workers: i64,
    /// Disaggregated decode worker count.
    #[arg(
        long,
        default_value_t = 1,
        value_name = "N",
        help_heading = "Deployment of AIPerf exports"
    )]
    pub num_decode_workers: i64,
    /// Request routing across workers.
    #[arg(
        long,
        value_enum,
        default_value = "round_robin",
        help_heading = "Deployment of AIPerf exports"
    )]
    pub router_mode: RouterModeArg,
    /// Partial KvRouterConfig JSON object.
    #[arg(
        long,
        value_name = "JSON",
        help_heading = "Deployment of AIPerf exports"
    )]
    pub router_config: Option<String>,
}

/// `dynosim aic …`.
#[derive(Debug, Subcommand)]
pub enum AicCommand {
    /// Print the installed aiconfigurator-core (0.11.0 or 0.12.0: which estimator loads its
    /// specs) and the GPU systems, backends, backend versions and bundled models it supports
    /// (runs `python3`, or $DYNOSIM_PYTHON).
    List,
}

/// `--replay-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReplayMode {
    #[value(name = "offline")]
    Offline,
    #[value(name = "online")]
    Online,
}

/// `--random-range-style`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RangeStyleArg {
    #[value(name = "floor")]
    Floor,
    #[value(name = "symmetric")]
    Symmetric,
}

impl From<RangeStyleArg> for crate::workload::synthetic::RangeStyle {
    fn from(a: RangeStyleArg) -> Self {
        match a {
            RangeStyleArg::Floor => Self::Floor,
            RangeStyleArg::Symmetric => Self::Symmetric,
        }
    }
}

/// `--router-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RouterModeArg {
    #[value(name = "round_robin")]
    RoundRobin,
    #[value(name = "kv_router")]
    KvRouter,
}

/// `--trace-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TraceFormat {
    #[value(name = "mooncake")]
    Mooncake,
    #[value(name = "mooncake-delta", alias = "mooncake_delta")]
    MooncakeDelta,
    #[value(name = "agentic_mooncake", alias = "agentic-mooncake")]
    AgenticMooncake,
    #[value(name = "applied_compute_agentic")]
    AppliedComputeAgentic,
    #[value(name = "dynamo")]
    Dynamo,
}

impl From<TraceFormat> for crate::workload::formats::TraceFormat {
    fn from(f: TraceFormat) -> Self {
        use crate::workload::formats::TraceFormat as F;
        match f {
            TraceFormat::Mooncake => F::Mooncake,
            TraceFormat::MooncakeDelta => F::MooncakeDelta,
            TraceFormat::AgenticMooncake => F::AgenticMooncake,
            TraceFormat::AppliedComputeAgentic => F::AppliedComputeAgentic,
            TraceFormat::Dynamo => F::Dynamo,
        }
    }
}

impl TraceFormat {
    /// The spelling used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Mooncake => "mooncake",
            TraceFormat::MooncakeDelta => "mooncake-delta",
            TraceFormat::AgenticMooncake => "agentic_mooncake",
            TraceFormat::AppliedComputeAgentic => "applied_compute_agentic",
            TraceFormat::Dynamo => "dynamo",
        }
    }
}

/// Flags of `dynosim run`, mirroring `python -m dynamo.replay` 1.4.2.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Trace file(s) (JSONL, plain or .gz; several shards for --trace-format dynamo). Omit for a
    /// synthetic workload.
    #[arg(value_name = "TRACE_FILES")]
    pub trace_files: Vec<PathBuf>,

    // ---- Engines and router ----
    /// Aggregated engine config (MockEngineArgs JSON object).
    #[arg(long, value_name = "JSON", help_heading = "Engines and router")]
    pub extra_engine_args: Option<String>,
    /// Disaggregated prefill-pool engine config; must set worker_type=prefill.
    #[arg(long, value_name = "JSON", help_heading = "Engines and router")]
    pub prefill_engine_args: Option<String>,
    /// Disaggregated decode-pool engine config; must set worker_type=decode.
    #[arg(long, value_name = "JSON", help_heading = "Engines and router")]
    pub decode_engine_args: Option<String>,
    /// Partial KvRouterConfig JSON object (unknown keys rejected).
    #[arg(long, value_name = "JSON", help_heading = "Engines and router")]
    pub router_config: Option<String>,
    /// Router policy-class YAML (not supported by dynosim; DYN_ROUTER_POLICY_CONFIG is read too).
    #[arg(long, value_name = "PATH", help_heading = "Engines and router")]
    pub router_policy_config: Option<String>,
    /// Model profile inside the policy YAML (not supported by dynosim).
    #[arg(long, value_name = "NAME", help_heading = "Engines and router")]
    pub model_name: Option<String>,
    /// Aggregated worker count.
    #[arg(
        long,
        default_value_t = 1,
        value_name = "N",
        help_heading = "Engines and router"
    )]
    pub num_workers: i64,
    /// Disaggregated prefill worker count.
    #[arg(
        long,
        default_value_t = 1,
        value_name = "N",
        help_heading = "Engines and router"
    )]
    pub num_prefill_workers: i64,
    /// Disaggregated decode worker count.
    #[arg(
        long,
        default_value_t = 1,
        value_name = "N",
        help_heading = "Engines and router"
    )]
    pub num_decode_workers: i64,
    /// Request routing across workers.
    #[arg(
        long,
        value_enum,
        default_value = "round_robin",
        help_heading = "Engines and router"
    )]
    pub router_mode: RouterModeArg,

    // ---- AIConfigurator prefill-load estimator of the KV router ----
    /// AIConfigurator backend (vllm, sglang, trtllm).
    #[arg(
        long,
        value_name = "S",
        help_heading = "KV router's AIC prefill-load estimator"
    )]
    pub aic_backend: Option<String>,
    /// GPU system of the perf data (e.g. h200_sxm).
    #[arg(
        long,
        value_name = "S",
        help_heading = "KV router's AIC prefill-load estimator"
    )]
    pub aic_system: Option<String>,
    /// Backend version of the perf data (e.g. 0.19.0).
    #[arg(
        long,
        value_name = "S",
        help_heading = "KV router's AIC prefill-load estimator"
    )]
    pub aic_backend_version: Option<String>,
    /// Tensor-parallel size (default 1).
    #[arg(
        long,
        value_name = "N",
        help_heading = "KV router's AIC prefill-load estimator"
    )]
    pub aic_tp_size: Option<i64>,
    /// Model name (e.g. Qwen/Qwen3-8B) or folder.
    #[arg(
        long,
        value_name = "S",
        help_heading = "KV router's AIC prefill-load estimator"
    )]
    pub aic_model_path: Option<String>,
    /// MoE tensor-parallel size.
    #[arg(
        long,
        value_name = "N",
        help_heading = "KV router's AIC prefill-load estimator"
    )]
    pub aic_moe_tp_size: Option<i64>,
    /// MoE expert-parallel size.
    #[arg(
        long,
        value_name = "N",
        help_heading = "KV router's AIC prefill-load estimator"
    )]
    pub aic_moe_ep_size: Option<i64>,
    /// Attention data-parallel size.
    #[arg(
        long,
        value_name = "N",
        help_heading = "KV router's AIC prefill-load estimator"
    )]
    pub aic_attention_dp_size: Option<i64>,
    /// GEMM quant mode (auto = model default).
    #[arg(
        long,
        value_name = "S",
        help_heading = "KV router's AIC prefill-load estimator"
    )]
    pub aic_gemm_dtype: Option<String>,
    /// MoE quant mode (auto = model default).
    #[arg(
        long,
        value_name = "S",
        help_heading = "KV router's AIC prefill-load estimator"
    )]
    pub aic_moe_dtype: Option<String>,
    /// Attention quant mode (auto = model default).
    #[arg(
        long,
        value_name = "S",
        help_heading = "KV router's AIC prefill-load estimator"
    )]
    pub aic_fmha_dtype: Option<String>,
    /// KV-cache quant mode (auto = model default).
    #[arg(
        long,
        value_name = "S",
        help_heading = "KV router's AIC prefill-load estimator"
    )]
    pub aic_kv_cache_dtype: Option<String>,
    /// Communication quant mode (auto = model default).
    #[arg(
        long,
        value_name = "S",
        help_heading = "KV router's AIC prefill-load estimator"
    )]
    pub aic_comm_dtype: Option<String>,
    /// MTP draft tokens, 1..=5: checked, then no effect (as in DynoSim 1.4.2).
    #[arg(
        long,
        value_name = "N",
        help_heading = "KV router's AIC prefill-load estimator"
    )]
    pub aic_nextn: Option<i64>,
    /// MTP acceptance rates, checked with --aic-nextn, then no effect (as in DynoSim 1.4.2).
    #[arg(
        long,
        value_name = "S",
        help_heading = "KV router's AIC prefill-load estimator"
    )]
    pub aic_nextn_accept_rates: Option<String>,

    // ---- Synthetic workload ----
    /// Synthetic prompt length in tokens (exact).
    #[arg(long, value_name = "N", help_heading = "Synthetic workload")]
    pub input_tokens: Option<i64>,
    /// Synthetic output length in tokens (exact).
    #[arg(long, value_name = "N", help_heading = "Synthetic workload")]
    pub output_tokens: Option<i64>,
    /// Number of synthetic requests; the number of sessions when --turns-per-session > 1.
    #[arg(long, value_name = "N", help_heading = "Synthetic workload")]
    pub request_count: Option<i64>,
    /// Poisson open-loop request rate in requests per second.
    #[arg(long, value_name = "R", help_heading = "Synthetic workload")]
    pub request_rate: Option<f64>,
    /// Fixed open-loop interval between synthetic requests in ms (0 = all at once).
    #[arg(long, value_name = "MS", help_heading = "Synthetic workload")]
    pub arrival_interval_ms: Option<f64>,
    /// Seed for synthetic open-loop arrival timestamps.
    #[arg(
        long,
        default_value_t = 42,
        value_name = "N",
        help_heading = "Synthetic workload"
    )]
    pub arrival_seed: u64,
    /// Turns per synthetic session.
    #[arg(
        long,
        default_value_t = 1,
        value_name = "N",
        help_heading = "Synthetic workload"
    )]
    pub turns_per_session: i64,
    /// Fraction of prompt blocks shared within a prefix group, in [0, 1].
    #[arg(
        long,
        default_value_t = 0.0,
        value_name = "F",
        help_heading = "Synthetic workload"
    )]
    pub shared_prefix_ratio: f64,
    /// Number of shared-prefix groups (0 disables sharing).
    #[arg(
        long,
        default_value_t = 0,
        value_name = "N",
        help_heading = "Synthetic workload"
    )]
    pub num_prefix_groups: i64,
    /// Think time after a turn completes before the next turn of the session, in ms.
    #[arg(
        long,
        default_value_t = 0.0,
        value_name = "MS",
        help_heading = "Synthetic workload"
    )]
    pub inter_turn_delay_ms: f64,
    /// Draw each request's input and output length uniformly around --input-tokens and
    /// --output-tokens: [floor(R x L), L] (SGLang bench_serving, InferenceX), or see
    /// --random-range-style. Not a DynoSim flag.
    #[arg(long, value_name = "R", help_heading = "Synthetic workload")]
    pub random_range_ratio: Option<f64>,
    /// Range of --random-range-ratio: floor = [floor(R x L), L]; symmetric = [floor(L x (1-R)),
    /// ceil(L x (1+R))] (vllm bench serve) [default: floor].
    #[arg(
        long,
        value_enum,
        value_name = "STYLE",
        help_heading = "Synthetic workload"
    )]
    pub random_range_style: Option<RangeStyleArg>,
    /// AIPerf's normal input lengths: standard deviation around --input-tokens (0 = exact).
    #[arg(long, value_name = "N", help_heading = "Synthetic workload")]
    pub input_tokens_stddev: Option<f64>,
    /// AIPerf's normal output lengths: standard deviation around --output-tokens (0 = exact).
    #[arg(long, value_name = "N", help_heading = "Synthetic workload")]
    pub output_tokens_stddev: Option<f64>,
    /// AIPerf's warm-up: requests simulated first, under the same load, and left out of every
    /// metric; the measured requests start when the last has finished.
    #[arg(long, value_name = "N", help_heading = "Synthetic workload")]
    pub warmup_request_count: Option<i64>,

    // ---- Load ----
    /// Closed-loop cap on in-flight requests (or active sessions); ignores trace timestamps.
    #[arg(long, value_name = "N", help_heading = "Load")]
    pub replay_concurrency: Option<i64>,
    /// Divides trace timestamps and inter-turn delays (2 = arrivals twice as dense).
    #[arg(long, default_value_t = 1.0, value_name = "F", help_heading = "Load")]
    pub arrival_speedup_ratio: f64,
    /// offline = virtual clock (the only mode dynosim simulates).
    #[arg(long, value_enum, default_value = "offline", help_heading = "Load")]
    pub replay_mode: ReplayMode,

    // ---- Trace ----
    /// Trace file format.
    #[arg(long, value_enum, default_value = "mooncake", help_heading = "Trace")]
    pub trace_format: TraceFormat,
    /// Tokens represented by each hash_id [default: 512].
    #[arg(long, value_name = "N", help_heading = "Trace")]
    pub trace_block_size: Option<i64>,
    /// applied_compute_agentic only: fraction of each session's first prompt shared in its group.
    #[arg(long, default_value_t = 0.0, value_name = "F", help_heading = "Trace")]
    pub trace_shared_prefix_ratio: f64,
    /// applied_compute_agentic only: number of shared-prefix groups (0 disables sharing).
    #[arg(long, default_value_t = 0, value_name = "N", help_heading = "Trace")]
    pub trace_num_prefix_groups: i64,
    /// Soft cap on simulated time in seconds (trace-file runs only).
    #[arg(long, value_name = "S", help_heading = "Trace")]
    pub max_sim_time_seconds: Option<f64>,

    // ---- Output ----
    /// Report path; an existing directory gets a timestamped file inside it
    /// [default: ./dynamo_replay_report_YYYYMMDD_HHMMSS.json, UTC].
    #[arg(long, value_name = "PATH", help_heading = "Output")]
    pub report_json: Option<PathBuf>,
    /// Write one JSON object per request here (trace-file runs only).
    #[arg(long, value_name = "PATH", help_heading = "Output")]
    pub report_jsonl: Option<PathBuf>,
    /// Goodput SLA: max time to first token (ms).
    #[arg(long, value_name = "MS", help_heading = "Output")]
    pub sla_ttft_ms: Option<f64>,
    /// Goodput SLA: max average inter-token latency (ms).
    #[arg(long, value_name = "MS", help_heading = "Output")]
    pub sla_itl_ms: Option<f64>,
    /// Goodput SLA: max end-to-end latency (ms).
    #[arg(long, value_name = "MS", help_heading = "Output")]
    pub sla_e2e_ms: Option<f64>,

    // ---- Planner (accepted, refused by validation) ----
    /// Planner-in-the-loop config (not supported by dynosim).
    #[arg(
        long,
        value_name = "PATH|JSON",
        help_heading = "Planner (not supported)"
    )]
    pub planner_config: Option<String>,
    /// Planner bootstrap granularity (not supported by dynosim) [upstream default: 8].
    #[arg(long, value_name = "N", help_heading = "Planner (not supported)")]
    pub benchmark_granularity: Option<i64>,

    // ---- dynosim ----
    /// Seed for router tie-breaking and other choices not seeded by a DynoSim flag.
    #[arg(long, default_value_t = 42, value_name = "N", help_heading = "dynosim")]
    pub seed: u64,
    /// GPU-hour price in USD: adds usd_per_hour, usd_per_million_output_tokens and
    /// usd_per_million_requests to the report. A bare number prices every GPU; SYSTEM=USD prices
    /// the GPUs of pools whose AIC timing names that aic_system (repeat for several).
    #[arg(long, value_name = "USD|SYSTEM=USD", help_heading = "dynosim")]
    pub gpu_hour_usd: Vec<String>,
    /// Calibration file (written by `dynosim calibrate`): corrects the pass times of pools with
    /// AIC timing of a family it holds.
    #[arg(long, value_name = "FILE", help_heading = "dynosim")]
    pub calibration: Option<PathBuf>,
}

impl RunArgs {
    /// Applies the environment fallback upstream uses for `--router-policy-config`.
    pub fn with_env_defaults(mut self) -> Self {
        if self.router_policy_config.is_none() {
            if let Ok(v) = std::env::var("DYN_ROUTER_POLICY_CONFIG") {
                if !v.is_empty() {
                    self.router_policy_config = Some(v);
                }
            }
        }
        self
    }
}

/// Flags of `dynosim sweep` (implemented in the sweep module).
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "The spec format (workload, grid, constraints, slo, require, rank_by, \
pareto) is described in README.md, section \"The spec\"; sweeps/*.yaml are examples to copy.\n\
Writes into the output directory: points.jsonl, leaderboard.csv, leaderboard.json, \
leaderboard.md, report.html, spec.yaml, sweep.json."
)]
pub struct SweepArgs {
    /// Sweep spec (YAML; format in README.md, "The spec").
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    /// Output directory.
    #[arg(short = 'o', long = "output-dir", value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// Parallel simulations [default: number of CPUs].
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Skip points already finished in the output directory (earlier finished points this run
    /// does not contain are kept in its points-archive.jsonl); the leaderboards and report.html
    /// are rewritten.
    #[arg(long)]
    pub resume: bool,
    /// Run only the points whose id % N == K (0 <= K < N), e.g. 0/4 .. 3/4.
    #[arg(long, value_name = "K/N", value_parser = crate::sweep::parse_shard)]
    pub shard: Option<(u32, u32)>,
    /// Validate the spec, list the expanded grid and its size, and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the output folder (from -o, the spec's output/name and --shard) and exit (for
    /// scripts).
    #[arg(long, conflicts_with = "dry_run")]
    pub print_output_dir: bool,
    /// Refuse grids with more points than this (checked before expanding).
    #[arg(long, default_value_t = 1_000_000, value_name = "N")]
    pub max_points: u64,
    /// No progress bar, no table, no summary line (errors and warnings still go to stderr).
    #[arg(long)]
    pub quiet: bool,
    /// Run every simulation to the end, even one that certainly misses a `require` bound.
    #[arg(long)]
    pub no_early_stop: bool,
    /// After Ctrl-C or SIGTERM, seconds the running points get to finish before the leaderboards
    /// are written without them (keep it below the scheduler's kill delay, e.g. Slurm's KillWait).
    #[arg(long, default_value_t = 20.0, value_name = "S", value_parser = parse_seconds)]
    pub stop_grace: f64,
    /// Seconds between plain progress lines when stderr is not a terminal (logs, pipes).
    #[arg(long, default_value_t = 5.0, value_name = "S", value_parser = parse_seconds)]
    pub progress_every: f64,
    /// Calibration file (written by `dynosim calibrate`) applied to every point with AIC timing;
    /// overrides the spec's `calibration`.
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
}

/// A duration in seconds: finite, >= 0.
fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && (0.0..=1e9).contains(&x) => Ok(x),
        _ => Err(format!("expected seconds (a number >= 0), found \"{s}\"")),
    }
}

/// Arguments of `dynosim report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Sweep output directory (with spec.yaml, sweep.json and points.jsonl).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// Arguments of `dynosim compare`.
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Two reports: the key metrics of both, B/A and the change in percent. \
Two sweep output directories: points matched by configuration hash, each key metric of the \
specs (rank_by, require, pareto) compared point by point, and the points only one side has. \
Exit status 2 when A or B is neither."
)]
pub struct CompareArgs {
    /// The baseline: a --report-json file or a sweep output directory.
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// Compared with A: the same kind as A.
    #[arg(value_name = "B")]
    pub b: PathBuf,
}

/// Arguments of `dynosim deploy`.
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Writes into OUT: deployment.yaml (a Dynamo 1.4.2 DynamoGraphDeployment), \
launch.sh (Dynamo's CLI on one machine or as a Slurm job body), benchmark.sh (+ \
benchmark_trace.jsonl for a trace: the AIPerf 0.13 command replaying the simulated workload), \
deployment.json (the exact `dynosim run` flags, for `dynosim validate --deployment-from OUT`) and \
README.md. A report does not record its configuration: give the `dynosim run` flags that wrote it \
after `--`. Details: docs/deploy.md."
)]
pub struct DeployArgs {
    /// A sweep output folder, or a `dynosim run --report-json` report.
    #[arg(value_name = "DIR|REPORT")]
    pub source: PathBuf,
    /// The sweep point to deploy, by id [default: the point ranked first].
    #[arg(long, value_name = "N", conflicts_with = "top")]
    pub point: Option<u64>,
    /// Deploy the first K points of the ranking, each into OUT/rank-R-point-N/.
    #[arg(long, value_name = "K")]
    pub top: Option<usize>,
    /// Output folder (must not exist, or be empty).
    #[arg(short = 'o', long = "output-dir", value_name = "OUT", required = true)]
    pub output_dir: PathBuf,
    /// The model to serve [default: the point's aic_model_path, else Qwen/Qwen3-0.6B].
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Container image of every service [default: Dynamo 1.4.2's runtime image of the engine].
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
    /// metadata.name of the DynamoGraphDeployment [default: dynosim-<sweep>-p<point>].
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Kubernetes secret with HF_TOKEN for the model download.
    #[arg(long, value_name = "NAME", default_value = "hf-token-secret")]
    pub hf_secret: String,
    /// Warm-up requests AIPerf sends before measuring (not in the simulation).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub warmup_requests: u64,
    /// For a report: the `dynosim run` flags that wrote it.
    #[arg(last = true, value_name = "RUN FLAGS")]
    pub run_flags: Vec<String>,
}

/// Arguments of `dynosim completions`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Example: dynosim completions bash > /etc/bash_completion.d/dynosim")]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// Arguments of `dynosim man`.
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Example: dynosim man | man -l -   or   dynosim man -o /usr/local/share/man/man1"
)]
pub struct ManArgs {
    /// Write dynosim.1 and one page per command (dynosim-sweep.1, ...) here instead of
    /// printing dynosim.1.
    #[arg(short = 'o', long = "output-dir", value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
}

/// Flags of `dynosim merge` (implemented in the sweep module).
#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// Sweep output directories (e.g. one per shard).
    #[arg(value_name = "DIR", required = true, num_args = 1..)]
    pub dirs: Vec<PathBuf>,
    /// Merged output directory.
    #[arg(short = 'o', long = "output-dir", value_name = "DIR", required = true)]
    pub output_dir: PathBuf,
    /// Exit 0 even when points are missing (the output is still marked partial: MISSING file,
    /// "partial" in leaderboard.json).
    #[arg(long)]
    pub allow_partial: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn run_args(args: &[&str]) -> RunArgs {
        let mut argv = vec!["dynosim", "run"];
        argv.extend_from_slice(args);
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Run(a) => *a,
            other => panic!("not run: {other:?}"),
        }
    }

    #[test]
    fn definitions_are_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_defaults_match_upstream() {
        let a = run_args(&[]);
        assert!(a.trace_files.is_empty());
        assert_eq!(a.arrival_seed, 42);
        assert_eq!(a.turns_per_session, 1);
        assert_eq!(a.shared_prefix_ratio, 0.0);
        assert_eq!(a.num_prefix_groups, 0);
        assert_eq!(a.inter_turn_delay_ms, 0.0);
        assert_eq!(
            (a.num_workers, a.num_prefill_workers, a.num_decode_workers),
            (1, 1, 1)
        );
        assert_eq!(a.replay_mode, ReplayMode::Offline);
        assert_eq!(a.router_mode, RouterModeArg::RoundRobin);
        assert_eq!(a.arrival_speedup_ratio, 1.0);
        assert_eq!(a.trace_format, TraceFormat::Mooncake);
        assert_eq!(a.trace_block_size, None);
        assert_eq!(a.benchmark_granularity, None);
        assert_eq!(a.seed, 42);
    }

    #[test]
    fn negative_numbers_reach_validation_and_last_flag_wins() {
        let a = run_args(&[
            "--num-workers",
            "-1",
            "--replay-concurrency",
            "4",
            "--replay-concurrency",
            "8",
        ]);
        assert_eq!(a.num_workers, -1);
        assert_eq!(a.replay_concurrency, Some(8));
    }

    #[test]
    fn value_names_follow_upstream_spelling() {
        let a = run_args(&[
            "--router-mode",
            "kv_router",
            "--trace-format",
            "mooncake_delta",
        ]);
        assert_eq!(a.router_mode, RouterModeArg::KvRouter);
        assert_eq!(a.trace_format, TraceFormat::MooncakeDelta);
        assert!(Cli::try_parse_from(["dynosim", "run", "--router-mode", "random"]).is_err());
    }

    #[test]
    fn shard_parsing() {
        assert_eq!(crate::sweep::parse_shard("2/8"), Ok((2, 8)));
        assert_eq!(crate::sweep::parse_shard("0/8"), Ok((0, 8)));
        for bad in ["8/8", "9/8", "8", "a/b", "1/0"] {
            assert!(crate::sweep::parse_shard(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sweep_and_merge_flags() {
        let cli = Cli::try_parse_from([
            "dynosim",
            "sweep",
            "s.yaml",
            "-o",
            "out",
            "-j",
            "3",
            "--resume",
            "--shard",
            "1/2",
            "--dry-run",
            "--quiet",
        ])
        .unwrap();
        match cli.command {
            Command::Sweep(s) => {
                assert_eq!(s.spec, PathBuf::from("s.yaml"));
                assert_eq!(s.output_dir, Some(PathBuf::from("out")));
                assert_eq!(s.jobs, Some(3));
                assert!(s.resume && s.dry_run && s.quiet);
                assert_eq!(s.shard, Some((1, 2)));
                assert_eq!(s.max_points, 1_000_000);
            }
            other => panic!("{other:?}"),
        }
        let cli = Cli::try_parse_from(["dynosim", "merge", "a", "b", "-o", "m"]).unwrap();
        match cli.command {
            Command::Merge(m) => {
                assert_eq!(m.dirs.len(), 2);
                assert_eq!(m.output_dir, PathBuf::from("m"));
            }
            other => panic!("{other:?}"),
        }
        assert!(Cli::try_parse_from(["dynosim", "merge", "a"]).is_err());
    }

    /// `dynosim calibrate rows.csv -o c.json` with `extra` flags, parsed.
    fn calibrate_args(extra: &[&str]) -> CalibrateArgs {
        let mut argv = vec!["dynosim", "calibrate", "rows.csv", "-o", "c.json"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Calibrate(c) => *c,
            other => panic!("not calibrate: {other:?}"),
        }
    }

    #[test]
    fn the_pass_overheads_are_fitted_unless_the_last_flag_says_not() {
        type Fits = fn(&CalibrateArgs) -> bool;
        let overheads: [(&str, &str, Fits); 2] = [
            (
                "--fit-decode-overhead",
                "--no-fit-decode-overhead",
                CalibrateArgs::fits_decode_overhead,
            ),
            (
                "--fit-pass-overhead",
                "--no-fit-pass-overhead",
                CalibrateArgs::fits_pass_overhead,
            ),
        ];
        for (yes, no, fits) in overheads {
            let fits = |extra: &[&str]| fits(&calibrate_args(extra));
            assert!(fits(&[]), "{yes}");
            assert!(fits(&[yes]));
            assert!(!fits(&[no]));
            assert!(!fits(&[yes, no]));
            assert!(fits(&[no, yes]));
        }
        // Each flag leaves the other overhead fitted.
        assert!(calibrate_args(&["--no-fit-pass-overhead"]).fits_decode_overhead());
        assert!(calibrate_args(&["--no-fit-decode-overhead"]).fits_pass_overhead());
    }

    #[test]
    fn deployment_shapes_get_entries_unless_the_last_flag_says_not() {
        let shapes = |extra: &[&str]| calibrate_args(extra).fits_per_parallelism();
        assert!(shapes(&[]));
        assert!(shapes(&["--per-parallelism"]));
        assert!(!shapes(&["--no-per-parallelism"]));
        assert!(!shapes(&["--per-parallelism", "--no-per-parallelism"]));
        assert!(shapes(&["--no-per-parallelism", "--per-parallelism"]));
    }
}
