//! A measured point -> the `dynosim run` invocation that simulates it ([`Recipe`]): the
//! engine-args JSON of its pools and its workload flags.
//!
//! For a table row the deployment is built from the row, as the measured servers ran:
//! * AIC timing with the row's system, backend and parallelism (TP, attention DP, MoE TP/EP per
//!   pool) and its GEMM/MoE quantisation; the engine type is the backend;
//! * the model's Hugging Face name mapped onto a bundled AIC model config
//!   ([`AicCatalog::model_for`]), the backend version onto an installed perf database
//!   ([`AicCatalog::version_for`]), and the row's own release as `server_version` (it picks a
//!   calibration's entry for that release);
//! * prefix caching off, `max_num_batched_tokens` 8192 (or a launch script's own budget,
//!   [`LaunchSettings`]) and `max_num_seqs` = the concurrency (the benchmark servers'
//!   `--no-enable-prefix-caching --max-num-batched-tokens 8192 --max-num-seqs $CONC`), the KV
//!   pool from AIC's memory model at the engines' default memory fraction (0.9 of the GPU for
//!   vLLM, as the servers' `--gpu-memory-utilization 0.9`);
//! * the KV-cache dtype of [`KvCacheDtype`];
//! * the host's dispatch cost of [`DispatchOverhead`] (`prefill_pass_overhead_ms`, and TRT-LLM's
//!   `request_overhead_ms`);
//! * the scheduler settings of [`LaunchSettings`]: TRT-LLM's batch waiting and attention-DP
//!   balancing (the `trtllm` object), a script's own token budget, the MTP scripts' draft
//!   tokens and budgets, and SGLang's receive interval and prefill budgets (the `sglang`
//!   object).
//!
//! Points read with the command line's deployment flags (AIPerf exports) take them as given.

use super::catalog::AicCatalog;
use super::points::{Deployment, FlagDeployment, MeasuredPoint, Parallel, TableDeployment};
use super::{Correction, Options};
use crate::cli::{Cli, Command, RouterModeArg, RunArgs};
use crate::config::DpRankRouting;
use crate::error::InputError;
use clap::Parser;
use serde::Serialize;
use serde_json::{json, Map, Value};

/// The KV-cache dtype of table rows (`--kv-cache-dtype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KvCacheDtype {
    /// As the measured deployments ran: FP8 for vLLM and TRT-LLM rows with FP8 or FP4 weights
    /// (InferenceX's scripts pass `--kv-cache-dtype fp8` / `kv_cache_config.dtype: fp8`) and
    /// for such SGLang rows on B200 and B300 (`--kv-cache-dtype fp8_e4m3`), BF16 for aggregated
    /// SGLang DeepSeek-R1 on H200 (its script sets none; SGLang's default is the model's dtype),
    /// BF16 for gpt-oss-120b on H100 and H200 (its vLLM and TRT-LLM scripts set FP8 on
    /// Blackwell only) and for vLLM MiniMax-M2.5 on H100 (its script sets none), AIC's default for the model (BF16 unless its checkpoint says otherwise;
    /// FP8 for DeepSeek-R1) for every other row (H200 SGLang Qwen3.5's script sets FP8, which
    /// AIC has no context-attention data for there).
    #[default]
    Auto,
    /// AIC's default for the model (its checkpoint's KV quantisation, else BF16).
    Model,
    Fp8,
    Bfloat16,
}

impl KvCacheDtype {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "auto" => KvCacheDtype::Auto,
            "model" => KvCacheDtype::Model,
            "fp8" => KvCacheDtype::Fp8,
            "bfloat16" | "bf16" => KvCacheDtype::Bfloat16,
            _ => return None,
        })
    }

    /// The `aic_kv_cache_dtype` of a row (`None`: the model's default).
    fn for_row(self, p: &MeasuredPoint, t: &TableDeployment) -> Option<&'static str> {
        match self {
            KvCacheDtype::Model => None,
            KvCacheDtype::Fp8 => Some("fp8"),
            KvCacheDtype::Bfloat16 => Some("bfloat16"),
            KvCacheDtype::Auto => {
                let low_precision = t.gemm_quant.starts_with("fp8")
                    || t.gemm_quant.contains("fp4")
                    || matches!(t.precision.as_str(), "fp8" | "fp4");
                if p.backend == "sglang" && p.system == "h200_sxm" {
                    // The aggregated DeepSeek-R1 script passes no `--kv-cache-dtype`: SGLang's
                    // `auto` is the model's dtype, BF16, where AIC's default for the checkpoint
                    // is FP8. The Qwen3.5 script's FP8 has no context-attention data in AIC
                    // there.
                    let bf16 = p.mode == "agg" && t.script_model.contains("deepseek-r1");
                    return bf16.then_some("bfloat16");
                }
                // gpt-oss's vLLM and TRT-LLM scripts set an FP8 KV cache on Blackwell only;
                // on H100 and H200 they leave it at `auto`, the checkpoint's BF16.
                if t.script_model.contains("gpt-oss") && PRE_BLACKWELL.contains(&p.system.as_str())
                {
                    return Some("bfloat16");
                }
                // MiniMax-M2.5's vLLM script for H100 passes no `--kv-cache-dtype` (its H200,
                // B300 and the B200 servers ran FP8): vLLM's `auto`, the checkpoint's BF16.
                if p.backend == "vllm"
                    && p.system == "h100_sxm"
                    && t.script_model.contains("minimax")
                {
                    return Some("bfloat16");
                }
                let fp8_kv = matches!(p.backend.as_str(), "vllm" | "trtllm" | "sglang");
                (low_precision && fp8_kv).then_some("fp8")
            }
        }
    }
}

/// How table rows' KV pools are sized from AIC's memory breakdown (`--memory-model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoryModel {
    /// As each measured server accounts its memory: every row gets `aic_memory_model: server`
    /// (SGLang's `mem_fraction_static` holds the weights and the KV pool, activations and CUDA
    /// graphs live outside it; the weights are counted as the checkpoint holds them where AIC's
    /// model class counts them otherwise); vLLM's and TRT-LLM's fractions are AIC's.
    #[default]
    Server,
    /// AIConfigurator's rule for every backend (DynoSim's).
    Aic,
}

impl MemoryModel {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "server" => MemoryModel::Server,
            "aic" => MemoryModel::Aic,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            MemoryModel::Server => "server",
            MemoryModel::Aic => "aic",
        }
    }
}

/// The host-side cost that table rows are simulated with (`--dispatch-overhead`), beyond the
/// GPU kernels AIC times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DispatchOverhead {
    /// Each engine's as its measured servers show it: AIConfigurator's vLLM model, 0.8 ms per
    /// model layer ([`VLLM_DISPATCH_MS_PER_LAYER`]), on every pass of a vLLM or SGLang row that
    /// computes prompt tokens (SGLang's prefill passes, like vLLM's, are not replayed from CUDA
    /// graphs; AIC itself models none for SGLang); on a TRT-LLM row, the same 0.8 ms per MoE
    /// layer once per request (`request_overhead_ms`), none for a dense model. The table's
    /// TRT-LLM servers show the cost in TTFT, not in TPOT (charged per pass it lengthens
    /// TPOT on every TRT-LLM group), and on MoE models only (their dense Llama-3.1-70B servers
    /// show about 0.2 ms per layer, calibrated).
    #[default]
    Engines,
    /// The same for vLLM and SGLang rows, none for TRT-LLM rows (the default until 2026-12-05).
    VllmSglang,
    /// AIConfigurator's model as it is: the vLLM rows' cost only.
    Aic,
    /// The vLLM cost on every pass of every row, TRT-LLM's included.
    All,
    /// None: the engine passes take the time AIC's kernels give (DynoSim's passes).
    None,
}

/// The host cost [`DispatchOverhead`] gives a row's pools, in ms (`None`: not set).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Dispatch {
    /// Added to every pass that computes prompt tokens (`prefill_pass_overhead_ms`).
    pub prefill_pass_ms: Option<f64>,
    /// Added once to every request, before the engine sees it (`request_overhead_ms`).
    pub request_ms: Option<f64>,
}

impl DispatchOverhead {
    const ALL: [DispatchOverhead; 5] = [
        DispatchOverhead::Engines,
        DispatchOverhead::VllmSglang,
        DispatchOverhead::Aic,
        DispatchOverhead::All,
        DispatchOverhead::None,
    ];

    /// The model a flag value names ([`DispatchOverhead::name`]).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.name() == s)
    }

    /// The flag's value naming it.
    pub fn name(self) -> &'static str {
        match self {
            DispatchOverhead::Engines => "engines",
            DispatchOverhead::VllmSglang => "vllm-sglang",
            DispatchOverhead::Aic => "aic",
            DispatchOverhead::All => "all",
            DispatchOverhead::None => "none",
        }
    }

    /// What a row of `backend` gets, for a model of `layers` layers of which `moe_layers`
    /// route to experts.
    pub fn for_row(self, backend: &str, layers: Option<u32>, moe_layers: Option<u32>) -> Dispatch {
        // Rounded to µs so the engine_args column reads well.
        let ms = |n: u32| (f64::from(n) * VLLM_DISPATCH_MS_PER_LAYER * 1000.0).round() / 1000.0;
        let per_pass = match (self, backend) {
            (DispatchOverhead::Aic, "vllm")
            | (DispatchOverhead::Engines | DispatchOverhead::VllmSglang, "vllm" | "sglang")
            | (DispatchOverhead::All, _) => layers.map(ms),
            _ => None,
        };
        let per_request = match (self, backend) {
            (DispatchOverhead::Engines, "trtllm") => moe_layers.filter(|&n| n > 0).map(ms),
            _ => None,
        };
        Dispatch {
            prefill_pass_ms: per_pass,
            request_ms: per_request,
        }
    }
}

/// Whether a pool's engine args may take `mixed_pass: fused` (what it accepts beside AIC
/// timing: not SGLang, which runs a step's prefill and decode as two forwards, and not with
/// multi-token prediction).
pub(crate) fn pool_can_fuse(pool: &Map<String, Value>) -> bool {
    pool.get("engine_type").and_then(Value::as_str) != Some("sglang") && !runs_mtp(pool)
}

/// Whether a pool's engine args turn multi-token prediction on (`aic_nextn`, not null).
pub(crate) fn runs_mtp(pool: &Map<String, Value>) -> bool {
    pool.get("aic_nextn").is_some_and(|n| !n.is_null())
}

/// A pool with multi-token prediction (`aic_nextn`) must keep `decode_speedup_ratio` at 1
/// (DynoSim's rule, which `dynosim run` applies too): a ratio the corrections set there moves
/// into dynosim's `decode_time_scale`, which times the decode steps the same.
fn keep_mtp_decode_ratio(o: &mut Map<String, Value>) {
    if !runs_mtp(o) {
        return;
    }
    let Some(d) = o
        .get("decode_speedup_ratio")
        .and_then(Value::as_f64)
        .filter(|d| *d > 0.0 && *d != 1.0)
    else {
        return;
    };
    let scale = o
        .get("decode_time_scale")
        .and_then(Value::as_f64)
        .unwrap_or(1.0);
    o.insert("decode_speedup_ratio".into(), json!(1.0));
    o.insert("decode_time_scale".into(), json!(scale / d));
}

/// AIConfigurator's host dispatch cost of an eager vLLM prefill forward, per model layer (its
/// vLLM backend's `_prefill_dispatch_overhead_ms`, calibrated there against the measured table
/// across GPUs and models).
pub const VLLM_DISPATCH_MS_PER_LAYER: f64 = 0.8;

/// AIC systems without FP4 tensor cores (Hopper, Ampere, Ada).
const PRE_BLACKWELL: &[&str] = &["h100_sxm", "h200_sxm", "a100_sxm", "l40s"];

/// The rows (and columns) of the weight blocks of the block-FP8 checkpoints AIC bundles
/// (`weight_block_size` [128, 128]), which AIC's MoE model also checks a rank's slice against.
const FP8_WEIGHT_BLOCK: u32 = 128;

/// The AIC quant mode a row's GEMM or MoE label ran as (`None`: the model's default in AIC),
/// given the quantisation its bundled config declares for the checkpoint (`checkpoint`:
/// `mxfp4`, `fp8_block`, …):
/// * an FP4 label ran the checkpoint's own 4-bit format (the model's default) where the GPU
///   has no FP4 tensor cores for NVFP4, and any label did where the checkpoint is MXFP4
///   (gpt-oss: the table labels its rows `nvfp4` on every GPU, and its H100 TRT-LLM
///   gap-analysis rows `fp8`; the checkpoint holds MXFP4 experts and BF16 elsewhere, and AIC
///   times its MoE in the checkpoint's format);
///   TRT-LLM runs an MXFP4 MoE on Blackwell with MXFP8 activations (its gpt-oss support
///   matrix: BF16 activations on Hopper, MXFP8 on Blackwell), `w4a8_mxfp4_mxfp8`, whatever
///   the label (empty included), as the checkpoint decides the format;
/// * on TRT-LLM and SGLang, an `fp8` label on a checkpoint quantised in 128 × 128 blocks
///   (DeepSeek-R1) ran those blocks: `fp8_block` (the table labels that checkpoint's MoE `fp8`
///   on TRT-LLM rows and `fp8_block` on SGLang's, and its GEMMs `fp8` on both);
/// * on vLLM the same holds for the MoE where the blocks divide each rank's slice of the
///   experts (`blocks_fit`; vLLM refuses the checkpoint otherwise, and so does AIC), while the
///   GEMMs keep their `fp8` label: AIC's vLLM 0.24.0 collection timed block-FP8 GEMMs on a slow
///   path (on B200 a 6144 × 3072 GEMM takes 0.17–0.27 ms from 1 to 1,024 tokens, 6–31 × its
///   BF16 time), which put B200 MiniMax-M2.5's TPOT at twice the measured one, and timed H200's
///   per-tensor FP8 MoE 3–4 × slower than BF16, which put H200 Qwen3-235B-A22B-FP8's TPOT at
///   2.2 × the measured one (both 2026-12-04, [`checkpoint_quant`]'s notes in Validation);
/// * an empty label is the model's default; any other label is taken as given.
fn checkpoint_quant(
    label: &str,
    moe: bool,
    backend: &str,
    checkpoint: Option<&str>,
    pre_blackwell: bool,
    blocks_fit: bool,
) -> Option<String> {
    let mxfp4 = checkpoint == Some("mxfp4");
    if moe && mxfp4 && backend == "trtllm" && !pre_blackwell {
        return Some("w4a8_mxfp4_mxfp8".into());
    }
    if label.is_empty() || mxfp4 || (label.contains("fp4") && pre_blackwell) {
        return None;
    }
    if label == "fp8"
        && checkpoint == Some("fp8_block")
        && (backend != "vllm" || (moe && blocks_fit))
    {
        return Some("fp8_block".into());
    }
    Some(label.to_string())
}

/// The `dynosim run` invocation that simulates one point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recipe {
    /// Aggregated: the engine args; disaggregated: `prefill_engine_args`/`decode_engine_args`.
    pub extra_engine_args: Option<Value>,
    pub prefill_engine_args: Option<Value>,
    pub decode_engine_args: Option<Value>,
    pub num_workers: i64,
    pub num_prefill_workers: i64,
    pub num_decode_workers: i64,
    /// `round_robin` or `kv_router`.
    pub router_mode: &'static str,
    pub router_config: Option<String>,
    pub input_tokens: u32,
    pub output_tokens: u32,
    pub request_count: u32,
    pub replay_concurrency: Option<u32>,
    pub request_rate: Option<f64>,
    /// Lengths uniform in `[⌊R·L⌋, L]` (1: exact).
    pub random_range_ratio: f64,
    pub input_tokens_stddev: f64,
    pub output_tokens_stddev: f64,
    pub warmup_request_count: u32,
    pub seed: u64,
    /// The uncalibrated dispatch model's overheads the pools carry ([`DispatchOverhead`]),
    /// which a calibration's corrections replace.
    #[serde(skip)]
    pub dispatch: Dispatch,
    /// Where the run departs from the point as given, for `validation.csv`'s `notes`: the
    /// row's relabelled shape and the script's prompt count, and once simulated a fallback
    /// context-attention dtype.
    #[serde(skip)]
    pub notes: Vec<String>,
}

impl Recipe {
    /// Whether the pools carry the dispatch model's `prefill_pass_overhead_ms`.
    pub fn modelled_dispatch(&self) -> bool {
        self.dispatch.prefill_pass_ms.is_some()
    }

    /// The `engine_args` column: the aggregated engine's JSON, or `{"prefill": …, "decode": …}`.
    pub fn engine_args_json(&self) -> String {
        let v = match &self.extra_engine_args {
            Some(e) => e.clone(),
            None => match (&self.prefill_engine_args, &self.decode_engine_args) {
                (None, None) => json!({}),
                (p, d) => json!({"prefill": p, "decode": d}),
            },
        };
        v.to_string()
    }

    /// Sets `keys` on every pool's engine args (a family's correction).
    pub fn apply(&mut self, keys: &Correction) {
        for pool in [
            &mut self.extra_engine_args,
            &mut self.prefill_engine_args,
            &mut self.decode_engine_args,
        ]
        .into_iter()
        .flatten()
        {
            if let Value::Object(o) = pool {
                for (k, v) in keys {
                    o.insert(k.clone(), v.clone());
                }
                keep_mtp_decode_ratio(o);
            }
        }
    }

    /// The flags of the run, in `dynosim run`'s syntax (values not yet shell-quoted).
    pub fn flags(&self) -> Vec<(String, String)> {
        let mut f: Vec<(String, String)> = Vec::new();
        let mut add = |k: &str, v: String| f.push((format!("--{k}"), v));
        for (k, v) in [
            ("extra-engine-args", &self.extra_engine_args),
            ("prefill-engine-args", &self.prefill_engine_args),
            ("decode-engine-args", &self.decode_engine_args),
        ] {
            if let Some(v) = v {
                add(k, v.to_string());
            }
        }
        if self.extra_engine_args.is_some() || self.prefill_engine_args.is_none() {
            add("num-workers", self.num_workers.to_string());
        } else {
            add("num-prefill-workers", self.num_prefill_workers.to_string());
            add("num-decode-workers", self.num_decode_workers.to_string());
        }
        add("router-mode", self.router_mode.to_string());
        if let Some(c) = &self.router_config {
            add("router-config", c.clone());
        }
        add("input-tokens", self.input_tokens.to_string());
        add("output-tokens", self.output_tokens.to_string());
        add("request-count", self.request_count.to_string());
        if let Some(c) = self.replay_concurrency {
            add("replay-concurrency", c.to_string());
        }
        if let Some(r) = self.request_rate {
            add("request-rate", r.to_string());
        }
        if self.random_range_ratio < 1.0 {
            add("random-range-ratio", self.random_range_ratio.to_string());
        }
        if self.input_tokens_stddev > 0.0 {
            add("input-tokens-stddev", self.input_tokens_stddev.to_string());
        }
        if self.output_tokens_stddev > 0.0 {
            add(
                "output-tokens-stddev",
                self.output_tokens_stddev.to_string(),
            );
        }
        if self.warmup_request_count > 0 {
            add(
                "warmup-request-count",
                self.warmup_request_count.to_string(),
            );
        }
        add("seed", self.seed.to_string());
        add("arrival-seed", self.seed.to_string());
        f
    }

    /// `dynosim run …` reproducing the point, shell-quoted.
    pub fn command_line(&self) -> String {
        let mut s = String::from("dynosim run");
        for (k, v) in self.flags() {
            s.push(' ');
            s.push_str(&k);
            s.push(' ');
            s.push_str(&shell_quote(&v));
        }
        s
    }

    /// The run's flags as `dynosim run` parses them.
    pub fn run_args(&self) -> Result<RunArgs, InputError> {
        let mut argv = vec!["dynosim".to_string(), "run".to_string()];
        for (k, v) in self.flags() {
            argv.push(k);
            argv.push(v);
        }
        match Cli::try_parse_from(&argv) {
            Ok(Cli {
                command: Command::Run(a),
            }) => Ok(*a),
            Ok(_) => Err(InputError::new("internal: not a run command")),
            Err(e) => Err(InputError::new(format!(
                "the point's run flags do not parse: {}",
                e.to_string().lines().next().unwrap_or("")
            ))),
        }
    }
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Why a point has no recipe: the deployment cannot be expressed (`unsupported`).
pub type Unsupported = String;

/// The recipe of one point (before corrections), and the backend version it uses.
pub fn recipe(
    p: &MeasuredPoint,
    opts: &Options,
    catalog: Option<&AicCatalog>,
) -> Result<(Recipe, String), Unsupported> {
    let w = &p.workload;
    let per_concurrency = match &p.deployment {
        Deployment::Table(t) => opts.launch.prompts_per_concurrency(p, t),
        _ => None,
    };
    let request_count = match (w.request_count, w.concurrency) {
        (Some(n), _) => n,
        (None, Some(c)) => {
            c.saturating_mul(per_concurrency.unwrap_or(opts.prompts_per_concurrency))
        }
        (None, None) => return Err("no request count and no concurrency".into()),
    };
    let mut r = Recipe {
        extra_engine_args: None,
        prefill_engine_args: None,
        decode_engine_args: None,
        num_workers: 1,
        num_prefill_workers: 1,
        num_decode_workers: 1,
        router_mode: "round_robin",
        router_config: None,
        input_tokens: w.isl,
        output_tokens: w.osl,
        request_count,
        replay_concurrency: w.concurrency,
        request_rate: if w.concurrency.is_some() {
            None
        } else {
            w.request_rate
        },
        random_range_ratio: w.range_ratio.unwrap_or(opts.random_range_ratio),
        input_tokens_stddev: w.isl_stddev,
        output_tokens_stddev: w.osl_stddev,
        warmup_request_count: w.warmup_request_count,
        seed: opts.seed,
        dispatch: Dispatch::default(),
        notes: Vec::new(),
    };
    if let (Some(k), None, Some(_)) = (per_concurrency, w.request_count, w.concurrency) {
        r.notes.push(format!(
            "{k} prompt{} per unit of concurrency, as its launch script's client sent",
            if k == 1 { "" } else { "s" }
        ));
    }
    let version = match &p.deployment {
        Deployment::Unsupported(why) => return Err(why.clone()),
        Deployment::Flags(f) => {
            from_flags(&mut r, f)?;
            p.backend_version.clone()
        }
        Deployment::Table(t) => {
            let Some(catalog) = catalog else {
                return Err("AIConfigurator's catalog is not available".into());
            };
            from_table(&mut r, p, t, opts, catalog)?
        }
    };
    Ok((r, version))
}

fn from_flags(r: &mut Recipe, f: &FlagDeployment) -> Result<(), Unsupported> {
    let parse = |flag: &str, j: &Option<String>| -> Result<Option<Value>, Unsupported> {
        j.as_deref()
            .map(|s| {
                serde_json::from_str::<Value>(s)
                    .map_err(|e| format!("{flag}: not valid JSON ({e})"))
            })
            .transpose()
    };
    r.extra_engine_args = parse("--extra-engine-args", &f.extra_engine_args)?;
    r.prefill_engine_args = parse("--prefill-engine-args", &f.prefill_engine_args)?;
    r.decode_engine_args = parse("--decode-engine-args", &f.decode_engine_args)?;
    r.num_workers = f.num_workers;
    r.num_prefill_workers = f.num_prefill_workers;
    r.num_decode_workers = f.num_decode_workers;
    r.router_mode = match f.router_mode {
        RouterModeArg::RoundRobin => "round_robin",
        RouterModeArg::KvRouter => "kv_router",
    };
    r.router_config = f.router_config.clone();
    Ok(())
}

fn from_table(
    r: &mut Recipe,
    p: &MeasuredPoint,
    t: &TableDeployment,
    opts: &Options,
    catalog: &AicCatalog,
) -> Result<String, Unsupported> {
    if !matches!(p.backend.as_str(), "vllm" | "sglang" | "trtllm") {
        return Err(format!("backend {:?} is not simulated", p.backend));
    }
    if let Some(pp) = t.pools.iter().map(|x| x.pp).find(|pp| *pp > 1) {
        return Err(format!(
            "pipeline parallelism (pp_size {pp}) is not simulated"
        ));
    }
    // DynoSim's refusals of disaggregated pools, found before any AIC engine is compiled for
    // them (`dynosim run` words the same rules for its flags).
    if t.pools.len() == 2 && p.backend == "trtllm" {
        return Err("DynoSim does not simulate TRT-LLM in disaggregated replay".into());
    }
    if t.pools.len() == 2 && t.pools.iter().any(|x| x.attention_dp > 1) {
        return Err(
            "DynoSim does not simulate attention data parallelism in disaggregated replay".into(),
        );
    }
    let model = catalog.model_for(&p.model).ok_or_else(|| {
        format!(
            "model {:?} has no bundled AIC model config (see `dynosim aic list`)",
            p.model
        )
    })?;
    let version = catalog.version_for(&p.system, &p.backend, &p.backend_version)?;
    r.notes.extend(t.notes.iter().cloned());
    let kv = opts.kv_cache_dtype.for_row(p, t);
    // A row's quantisation label is read as the checkpoint ran it ([`checkpoint_quant`]): the
    // bundled config's, or for FP8 weights on an unquantised config the bundled `-FP8`
    // checkpoint of the same model (GLM-5's FP8 rows ran `zai-org/GLM-5-FP8`).
    let checkpoint = catalog
        .checkpoint_quant
        .get(&model)
        .or_else(|| {
            (t.precision == "fp8")
                .then(|| catalog.checkpoint_quant.get(&format!("{model}-FP8")))
                .flatten()
        })
        .map(String::as_str);
    let pre_blackwell = PRE_BLACKWELL.contains(&p.system.as_str());
    // Each pool's ranks hold 1/MoE-TP of every expert's intermediate rows (all of them with
    // no MoE split given: TP × DP); the checkpoint's blocks must divide that slice.
    let blocks_fit = catalog.moe_inter_size.get(&model).is_some_and(|&inter| {
        t.pools.iter().all(|pool| {
            let split = pool.moe_tp.unwrap_or_else(|| pool.gpus()).max(1);
            inter % split == 0 && (inter / split).is_multiple_of(FP8_WEIGHT_BLOCK)
        })
    });
    let quant = |label: &str, moe: bool| {
        checkpoint_quant(
            label,
            moe,
            &p.backend,
            checkpoint,
            pre_blackwell,
            blocks_fit,
        )
    };
    let gemm_quant = quant(&t.gemm_quant, false);
    let moe_quant = quant(&t.moe_quant, true);
    let as_given =
        |label: &str, read: &Option<String>| label.is_empty() || read.as_deref() == Some(label);
    if !as_given(&t.gemm_quant, &gemm_quant) || !as_given(&t.moe_quant, &moe_quant) {
        let read = |q: &Option<String>| q.clone().unwrap_or_else(|| "the model's default".into());
        r.notes.push(format!(
            "quantisation {}/{} read as the checkpoint ran it: GEMM {}, MoE {}{}",
            t.gemm_quant,
            t.moe_quant,
            read(&gemm_quant),
            read(&moe_quant),
            checkpoint.map_or(String::new(), |c| format!(" (checkpoint {c})"))
        ));
    }
    // TRT-LLM's MXFP4 MoE (gpt-oss) is in AIC's data split by EP only; a pool that splits it
    // by TP is timed as EP over the same GPUs, which holds the same share of the experts'
    // weights and does the same work per GPU (every token's slice of its experts, or a share
    // of the tokens through whole experts).
    let moe_by_ep = p.backend == "trtllm" && checkpoint == Some("mxfp4");
    let ep_for_tp = |pool: &Parallel| -> Option<u32> {
        let (mtp, mep) = (pool.moe_tp?, pool.moe_ep?);
        (moe_by_ep && mtp > 1 && mtp.saturating_mul(mep) == pool.gpus()).then_some(mtp * mep)
    };
    if let Some(pool) = t.pools.iter().find(|pool| ep_for_tp(pool).is_some()) {
        r.notes.push(format!(
            "MoE TP {} × EP {} timed as EP {}: AIC's TRT-LLM data holds the MXFP4 MoE split \
             by EP only, which gives each GPU the same share of the experts' weights and work",
            pool.moe_tp.unwrap_or(1),
            pool.moe_ep.unwrap_or(1),
            pool.gpus()
        ));
    }
    let concurrency = p.workload.concurrency.unwrap_or(1);
    let dispatch = opts.dispatch_overhead.for_row(
        &p.backend,
        catalog.layers.get(&model).copied(),
        catalog.moe_layers.get(&model).copied(),
    );
    r.dispatch = dispatch;
    let engine = |pool: &Parallel, worker_type: Option<&str>| -> Value {
        let mut o = Map::new();
        let mut set = |k: &str, v: Value| {
            o.insert(k.to_string(), v);
        };
        set("engine_type", json!(p.backend));
        if let Some(wt) = worker_type {
            set("worker_type", json!(wt));
        }
        set("enable_prefix_caching", json!(false));
        let budget = opts.launch.max_num_tokens(p, t);
        set(
            "max_num_batched_tokens",
            json!(budget.unwrap_or(opts.max_num_batched_tokens)),
        );
        set("max_num_seqs", json!(concurrency));
        set("aic_backend", json!(p.backend));
        set("aic_system", json!(p.system));
        set("aic_backend_version", json!(version));
        // The measured server's own release (the perf data's may differ): it picks a
        // calibration's entry for that release.
        if !p.backend_version.is_empty() {
            set("server_version", json!(p.backend_version));
        }
        set("aic_model_path", json!(model));
        set("aic_tp_size", json!(pool.tp));
        if pool.attention_dp > 1 {
            set("aic_attention_dp_size", json!(pool.attention_dp));
            set("dp_size", json!(pool.attention_dp));
            if opts.dp_rank_routing == DpRankRouting::Engine {
                set("dp_rank_routing", json!(DpRankRouting::Engine.name()));
            }
        }
        if let Some(ep) = ep_for_tp(pool) {
            set("aic_moe_tp_size", json!(1));
            set("aic_moe_ep_size", json!(ep));
        } else if let (Some(mtp), Some(mep)) = (pool.moe_tp, pool.moe_ep) {
            if mtp.saturating_mul(mep) == pool.gpus() {
                set("aic_moe_tp_size", json!(mtp));
                set("aic_moe_ep_size", json!(mep));
            }
        }
        // A weight-only INT4 row ran a checkpoint whose INT4 covers its routed experts only
        // (Kimi-K2.5's compressed-tensors config leaves attention, shared experts, the dense
        // MLP and lm_head in BF16): the GEMMs are AIC's default for the checkpoint.
        if let Some(q) = gemm_quant.as_ref().filter(|q| *q != "int4_wo") {
            set("aic_gemm_dtype", json!(q));
        }
        if let Some(q) = &moe_quant {
            set("aic_moe_dtype", json!(q));
        }
        if let Some(kv) = kv {
            set("aic_kv_cache_dtype", json!(kv));
        }
        if opts.memory_model == MemoryModel::Server {
            set("aic_memory_model", json!("server"));
        }
        if opts.monotone_decode {
            set("aic_decode_monotone", json!(true));
        }
        if let Some(ms) = dispatch.prefill_pass_ms {
            set("prefill_pass_overhead_ms", json!(ms));
        }
        if let Some(ms) = dispatch.request_ms {
            set("request_overhead_ms", json!(ms));
        }
        if let Some(trtllm) = opts.launch.trtllm(p, t, pool) {
            set("trtllm", trtllm);
        }
        if let Some(m) = opts.launch.mtp(p, t, pool) {
            set("aic_nextn", json!(m.nextn));
            set("max_num_seqs", json!(m.max_batch_size));
            set("max_num_batched_tokens", json!(m.max_num_tokens));
        }
        if let Some(server) = opts.launch.sglang(p, t, pool) {
            server.apply(&mut o);
        }
        if opts.fused_mixed_pass && pool_can_fuse(&o) {
            o.insert("mixed_pass".into(), json!("fused"));
        }
        Value::Object(o)
    };
    if let Some(m) = t.pools.first().and_then(|pool| opts.launch.mtp(p, t, pool)) {
        r.notes.push(format!(
            "run as InferenceX's MTP script ({}): {} draft token{}, max_batch_size {}, \
             max_num_tokens {}",
            opts.launch.mtp_reason(t),
            m.nextn,
            if m.nextn == 1 { "" } else { "s" },
            m.max_batch_size,
            m.max_num_tokens
        ));
    }
    if let Some(why) = opts.launch.plain_only_reason(p, t) {
        r.notes.push(why);
    }
    match t.pools.as_slice() {
        [agg] => {
            r.extra_engine_args = Some(engine(agg, None));
            r.num_workers = i64::from(agg.num_workers);
        }
        [prefill, decode] => {
            r.prefill_engine_args = Some(engine(prefill, Some("prefill")));
            r.decode_engine_args = Some(engine(decode, Some("decode")));
            r.num_prefill_workers = i64::from(prefill.num_workers);
            r.num_decode_workers = i64::from(decode.num_workers);
        }
        _ => return Err("the row describes no pool".into()),
    }
    Ok(version)
}
