//! Reading measured points. Each input file is detected by its content: a JSON object with
//! `input_config` is an AIPerf export (`profile_export_aiperf.json`), a CSV whose header has
//! `silicon_ttft_ms` and `silicon_tpot_ms` is AIConfigurator's table of measured deployments (as
//! shipped in `aiconfigurator_core/systems/silicon_sample.csv`, or any subset of its rows).
//! Anything else is refused naming the file. Nothing here simulates or maps names.

use crate::cli::RouterModeArg;
use crate::error::InputError;
use serde_json::Value;
use std::path::Path;

/// One measured deployment under one workload.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredPoint {
    /// The row's `id`, or the AIPerf export's folder name.
    pub id: String,
    /// Where it was read (`file:line`, or the file).
    pub origin: String,
    /// GPU system (`h200_sxm`), backend (`vllm`, `sglang`, `trtllm`), its version as measured
    /// (may be empty), the model as measured (a Hugging Face name), `agg` or `disagg`.
    pub system: String,
    pub backend: String,
    pub backend_version: String,
    pub model: String,
    pub mode: String,
    pub workload: WorkloadShape,
    pub measured_ttft_ms: Option<f64>,
    pub measured_tpot_ms: Option<f64>,
    pub deployment: Deployment,
}

impl MeasuredPoint {
    /// The family corrections are fitted per: (system, backend, model).
    pub fn family(&self) -> super::Family {
        super::Family {
            system: self.system.clone(),
            backend: self.backend.clone(),
            model: self.model.clone(),
            decoding: None,
            server_version: None,
            quantisation: None,
            parallelism: None,
        }
    }
}

/// The workload a point was measured under.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadShape {
    /// Mean (AIPerf) or maximum (table: the benchmark's `--random-input-len`) lengths in tokens.
    pub isl: u32,
    pub osl: u32,
    /// AIPerf's normal length spreads (0: none).
    pub isl_stddev: f64,
    pub osl_stddev: f64,
    /// Lengths uniform in `[⌊R·L⌋, L]`; `None`: the options' ratio (table rows).
    pub range_ratio: Option<f64>,
    /// Closed loop at this concurrency, or open loop at `request_rate` requests/s.
    pub concurrency: Option<u32>,
    pub request_rate: Option<f64>,
    /// `None`: `prompts_per_concurrency × concurrency` (table rows).
    pub request_count: Option<u32>,
    pub warmup_request_count: u32,
}

/// How a point's deployment is given.
#[derive(Debug, Clone, PartialEq)]
pub enum Deployment {
    /// A table row: built from its columns.
    Table(TableDeployment),
    /// The deployment flags of `dynosim run` from the command line (AIPerf exports).
    Flags(FlagDeployment),
    /// The row cannot describe a deployment (the reason).
    Unsupported(String),
}

/// The parallelism of one pool of a table row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parallel {
    pub num_workers: u32,
    pub tp: u32,
    pub pp: u32,
    pub attention_dp: u32,
    pub moe_tp: Option<u32>,
    pub moe_ep: Option<u32>,
}

impl Parallel {
    /// GPUs of the 8-GPU nodes the table's expert-parallel rows ran on.
    const NODE_GPUS: u32 = 8;

    /// The GPUs of one pipeline stage of one worker: TP × attention DP (saturating, so an
    /// absurd row cannot overflow).
    pub fn gpus(&self) -> u32 {
        self.tp.saturating_mul(self.attention_dp)
    }

    /// Undoes a labelling quirk of the table's InferenceX batches: a `tpN-epN` (or `dpN-epN`)
    /// run, N GPUs with attention over N ranks and the experts spread over the same N, is stored
    /// with MoE TP × EP equal to TP × DP = N², in one of two forms:
    /// * `moe_tp_size = moe_ep_size = N` and a `tp_size` (or `attention_dp_size`) of N² (SGLang
    ///   and TRT-LLM rows: TP 64 for N = 8), undone as MoE TP 1, EP N, and TP (or DP) ÷ N;
    /// * `tp_size = attention_dp_size = N`, `moe_tp_size` 1 and `moe_ep_size` N² (vLLM rows),
    ///   undone as TP N, DP 1, EP N.
    ///
    /// The same measurements appear in the `2026-03-25` batch stored as N GPUs (`tp4_0_ep4_0`:
    /// TP 4, EP 4) with the same TTFT and TPOT at the same total concurrency. `inferencex` says
    /// the row comes from those batches (`source_file=2026-…`), where every N ≥ 2 is undone;
    /// for other rows only shapes larger than a node (N² > 8 GPUs) are, and smaller ones are
    /// taken as given.
    pub fn normalised(self, inferencex: bool) -> Parallel {
        let (Some(mtp), Some(mep)) = (self.moe_tp, self.moe_ep) else {
            return self;
        };
        let gpus = self.gpus();
        if mtp.saturating_mul(mep) != gpus || (!inferencex && gpus <= Self::NODE_GPUS) {
            return self;
        }
        let ep = |tp, attention_dp, n| Parallel {
            tp,
            attention_dp,
            moe_tp: Some(1),
            moe_ep: Some(n),
            ..self.clone()
        };
        let n = mtp;
        if n >= 2 && mep == n {
            if self.tp >= n && self.tp.is_multiple_of(n) {
                return ep(self.tp / n, self.attention_dp, n);
            }
            if self.attention_dp.is_multiple_of(n) {
                return ep(self.tp, self.attention_dp / n, n);
            }
            return self;
        }
        let n = self.tp;
        if mtp == 1 && n >= 2 && self.attention_dp == n && n.checked_mul(n) == Some(mep) {
            return ep(n, 1, n);
        }
        self
    }

    /// Reads a vLLM row whose experts span more GPUs than its TP × attention DP, with no DP
    /// given, as attention DP over the rest: vLLM spreads the experts over all TP × DP ranks
    /// (TP-split unless expert parallelism is on), so `tp_size` 1 with `moe_tp_size` 2 is TP 1
    /// × DP 2 on 2 GPUs. The table's gap-analysis rows of Qwen3-235B-A22B-FP8 on H200 are
    /// stored so, with their DP left empty; read as given they describe experts on GPUs the
    /// deployment does not have (and TP 1 does not fit its weights on one H200). `None`: the row
    /// is not of that form.
    pub fn vllm_experts_over_dp(&self) -> Option<Parallel> {
        let width = self.moe_tp?.checked_mul(self.moe_ep?)?;
        let gpus = self.gpus();
        (self.attention_dp == 1 && width > gpus && width.is_multiple_of(self.tp)).then(|| {
            Parallel {
                attention_dp: width / self.tp,
                ..self.clone()
            }
        })
    }

    /// `TP 4 × attention DP 4, MoE TP 1 × EP 16` (the parts the row gives).
    pub fn describe(&self) -> String {
        let mut s = format!("TP {}", self.tp);
        if self.attention_dp > 1 {
            s.push_str(&format!(" × attention DP {}", self.attention_dp));
        }
        match (self.moe_tp, self.moe_ep) {
            // A dense model's columns (0 or 1 for both): no experts to place.
            (t, e) if t.unwrap_or(0) <= 1 && e.unwrap_or(0) <= 1 => {}
            (Some(t), Some(e)) => s.push_str(&format!(", MoE TP {t} × EP {e}")),
            (Some(t), None) => s.push_str(&format!(", MoE TP {t}")),
            (None, Some(e)) => s.push_str(&format!(", MoE EP {e}")),
            (None, None) => {}
        }
        s
    }
}

/// The deployment columns of a table row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDeployment {
    /// `fp8`, `fp4`, `bf16`, `int4` or empty.
    pub precision: String,
    /// AIC quant modes (`fp8`, `fp8_block`, `nvfp4`, `int4_wo`; empty: the model's default).
    pub gemm_quant: String,
    pub moe_quant: String,
    /// `agg`: one pool; `disagg`: prefill then decode.
    pub pools: Vec<Parallel>,
    /// What was read differently from the row's columns, for its `notes` (the pools' storage
    /// quirk undone, [`Parallel::normalised`]).
    pub notes: Vec<String>,
    /// The model as the launch scripts that measured the row name it, lower case: the row's,
    /// except that the InferenceX database names its DeepSeek-R1 runs (the `dsr1_*` scripts)
    /// `deepseek-ai/DeepSeek-V3`.
    pub script_model: String,
    /// The row's source marks it a work-in-progress run of its script (`wip=True` in
    /// `silicon_data_source`), whose client may differ from the released runs'.
    pub wip: bool,
    /// The day an InferenceX row (the 2026 batches, InferenceX's database) was measured
    /// (`measured=YYYY-MM-DD…` in `silicon_data_source`), when its source says; `None` for
    /// other sources, whose servers were not started by InferenceX's scripts.
    pub measured: Option<String>,
}

/// `dynosim run`'s deployment flags, as given to `dynosim validate`.
#[derive(Debug, Clone, PartialEq)]
pub struct FlagDeployment {
    pub extra_engine_args: Option<String>,
    pub prefill_engine_args: Option<String>,
    pub decode_engine_args: Option<String>,
    pub num_workers: i64,
    pub num_prefill_workers: i64,
    pub num_decode_workers: i64,
    pub router_mode: RouterModeArg,
    pub router_config: Option<String>,
}

impl Default for FlagDeployment {
    fn default() -> Self {
        FlagDeployment {
            extra_engine_args: None,
            prefill_engine_args: None,
            decode_engine_args: None,
            num_workers: 1,
            num_prefill_workers: 1,
            num_decode_workers: 1,
            router_mode: RouterModeArg::RoundRobin,
            router_config: None,
        }
    }
}

/// Reads every input; AIPerf exports take `flags` as their deployment.
pub fn read_inputs(
    paths: &[std::path::PathBuf],
    flags: &FlagDeployment,
) -> Result<Vec<MeasuredPoint>, InputError> {
    let mut out = Vec::new();
    for p in paths {
        let text = std::fs::read_to_string(p)
            .map_err(|e| InputError::new(format!("{}: cannot read it: {e}", p.display())))?;
        if text.trim_start().starts_with('{') {
            out.push(read_aiperf(p, &text, flags)?);
        } else {
            out.extend(read_table(p, &text)?);
        }
    }
    if out.is_empty() {
        return Err(InputError::new(
            "no measured points in the inputs (the table files have a header only)",
        ));
    }
    Ok(out)
}

/// The table's columns this reader needs.
const TABLE_COLUMNS: &[&str] = &[
    "id",
    "backend",
    "backend_version",
    "model_path",
    "system",
    "mode",
    "isl",
    "osl",
    "silicon_ttft_ms",
    "silicon_tpot_ms",
];

/// Reads AIConfigurator's table of measured deployments.
pub fn read_table(path: &Path, text: &str) -> Result<Vec<MeasuredPoint>, InputError> {
    let name = path.display().to_string();
    let mut reader = csv::ReaderBuilder::new()
        .flexible(false)
        .from_reader(text.as_bytes());
    let headers = reader
        .headers()
        .map_err(|e| InputError::new(format!("{name}: not a CSV table ({e})")))?
        .clone();
    let col = |c: &str| headers.iter().position(|h| h.trim() == c);
    if col("silicon_ttft_ms").is_none() || col("silicon_tpot_ms").is_none() {
        return Err(InputError::new(format!(
            "{name}: neither an AIPerf export (profile_export_aiperf.json) nor AIConfigurator's \
             table of measured deployments (a CSV with silicon_ttft_ms and silicon_tpot_ms \
             columns, as in aiconfigurator_core/systems/silicon_sample.csv)"
        )));
    }
    let missing: Vec<&str> = TABLE_COLUMNS
        .iter()
        .filter(|c| col(c).is_none())
        .copied()
        .collect();
    if !missing.is_empty() {
        return Err(InputError::new(format!(
            "{name}: the table lacks the column(s) {}",
            missing.join(", ")
        )));
    }
    let mut out = Vec::new();
    for (i, rec) in reader.records().enumerate() {
        let line = i + 2;
        let rec = rec.map_err(|e| InputError::new(format!("{name}:{line}: {e}")))?;
        let get = |c: &str| -> &str { col(c).and_then(|k| rec.get(k)).unwrap_or("").trim() };
        let row = Row {
            get: &get,
            origin: format!("{name}:{line}"),
        };
        out.push(row.point()?);
    }
    Ok(out)
}

/// One record of the table, read by column name.
struct Row<'a> {
    get: &'a dyn Fn(&str) -> &'a str,
    origin: String,
}

impl Row<'_> {
    fn err(&self, col: &str, what: impl std::fmt::Display) -> InputError {
        InputError::new(format!("{}: column {col}: {what}", self.origin))
    }

    /// A positive integer column, `None` when empty.
    fn int(&self, col: &str) -> Result<Option<u32>, InputError> {
        let v = (self.get)(col);
        if v.is_empty() {
            return Ok(None);
        }
        // The table writes some integers as floats ("8.0").
        let parsed = v.parse::<u32>().ok().or_else(|| {
            v.parse::<f64>()
                .ok()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= u32::MAX as f64)
                .map(|f| f as u32)
        });
        match parsed {
            Some(n) => Ok(Some(n)),
            None => Err(self.err(col, format!("expected a whole number, got {v:?}"))),
        }
    }

    fn float(&self, col: &str) -> Result<Option<f64>, InputError> {
        let v = (self.get)(col);
        if v.is_empty() {
            return Ok(None);
        }
        match v.parse::<f64>() {
            Ok(f) if f.is_finite() && f >= 0.0 => Ok(Some(f)),
            _ => Err(self.err(col, format!("expected a number >= 0, got {v:?}"))),
        }
    }

    fn text(&self, col: &str) -> String {
        (self.get)(col).to_string()
    }

    /// A pool's parallelism and batch size (`prefix`: "", "prefill_" or "decode_"), with the
    /// storage quirk of the InferenceX batches undone when `inferencex` ([`Parallel::normalised`]),
    /// which `notes` is told.
    fn parallel(
        &self,
        prefix: &str,
        inferencex: bool,
        notes: &mut Vec<String>,
    ) -> Result<Option<(Parallel, Option<u32>)>, InputError> {
        let c = |s: &str| format!("{prefix}{s}");
        let Some(tp) = self.int(&c("tp_size"))? else {
            return Ok(None);
        };
        let workers = if prefix.is_empty() {
            Some(1)
        } else {
            self.int(&c("num_workers"))?
        };
        let stored = Parallel {
            num_workers: workers.unwrap_or(1).max(1),
            tp: tp.max(1),
            pp: self.int(&c("pp_size"))?.unwrap_or(1).max(1),
            attention_dp: self.int(&c("attention_dp_size"))?.unwrap_or(1).max(1),
            moe_tp: self.int(&c("moe_tp_size"))?,
            moe_ep: self.int(&c("moe_ep_size"))?,
        };
        let normalised = stored.clone().normalised(inferencex);
        let (p, why) = match normalised
            .vllm_experts_over_dp()
            .filter(|_| self.text("backend") == "vllm")
        {
            Some(dp) => (
                dp,
                "vLLM spreads the experts over TP × DP ranks; the row gives no DP",
            ),
            None => (
                normalised,
                "a tpN-epN run, as the same measurement is stored in other batches",
            ),
        };
        if p != stored {
            let pool = prefix.trim_end_matches('_');
            notes.push(format!(
                "{}stored as {}, read as {} on {} GPUs ({why})",
                if pool.is_empty() {
                    String::new()
                } else {
                    format!("{pool} pool ")
                },
                stored.describe(),
                p.describe(),
                p.gpus()
            ));
        }
        Ok(Some((p, self.int(&c("batch_size"))?)))
    }

    fn point(&self) -> Result<MeasuredPoint, InputError> {
        let mode = self.text("mode");
        let isl = self.int("isl")?.filter(|n| *n > 0);
        let osl = self.int("osl")?.filter(|n| *n > 0);
        let source = self.text("silicon_data_source");
        let from_source = silicon_concurrency(&source);
        let inferencex = from_inferencex(&source);
        let mut unsupported = None;
        let mut notes = Vec::new();
        let (pools, concurrency) = match mode.as_str() {
            "agg" => {
                let agg = self.parallel("", inferencex, &mut notes)?;
                let c = from_source.or(agg.as_ref().and_then(|a| a.1));
                let pools = agg
                    .into_iter()
                    .map(|(mut pool, batch)| {
                        if !inferencex {
                            pool.num_workers = replicas(from_source, batch, &pool, &mut notes);
                        }
                        pool
                    })
                    .collect::<Vec<_>>();
                (pools, c)
            }
            "disagg" => {
                let p = self.parallel("prefill_", inferencex, &mut notes)?;
                let d = self.parallel("decode_", inferencex, &mut notes)?;
                let c = from_source.or_else(|| {
                    d.as_ref()
                        .and_then(|(pool, bs)| bs.map(|b| b * pool.num_workers))
                });
                (p.into_iter().chain(d).map(|a| a.0).collect(), c)
            }
            other => {
                unsupported = Some(format!("mode {other:?} is neither agg nor disagg"));
                (Vec::new(), from_source)
            }
        };
        let wanted = if mode == "disagg" { 2 } else { 1 };
        if unsupported.is_none() && pools.len() != wanted {
            unsupported = Some(format!(
                "the row gives no tensor-parallel size for its {} pool(s)",
                if mode == "disagg" {
                    "prefill/decode"
                } else {
                    ""
                }
            ));
        }
        if let (true, "agg", Some(pool)) = (inferencex, mode.as_str(), pools.first()) {
            let gpus = pool.gpus().saturating_mul(pool.pp);
            if unsupported.is_none() && gpus > Parallel::NODE_GPUS {
                unsupported = Some(format!(
                    "an aggregated InferenceX row on {gpus} GPUs ({}): InferenceX's aggregated \
                     runs are single-node servers of up to {} GPUs, so this is the GPU count \
                     of a multi-node deployment whose pools the row does not give",
                    pool.describe(),
                    Parallel::NODE_GPUS
                ));
            }
        }
        if unsupported.is_none() && mode == "disagg" {
            let missing: Vec<&str> = ["prefill_num_workers", "decode_num_workers"]
                .into_iter()
                .filter(|col| self.text(col).is_empty())
                .collect();
            if !missing.is_empty() {
                unsupported = Some(format!(
                    "the row gives no worker count ({}): the disaggregated deployment's size is \
                     unknown",
                    missing.join(", ")
                ));
            }
        }
        if unsupported.is_none() && (isl.is_none() || osl.is_none()) {
            unsupported = Some("the row gives no isl/osl".into());
        }
        if unsupported.is_none() && concurrency.filter(|c| *c > 0).is_none() {
            unsupported = Some("the row gives no concurrency (batch_size)".into());
        }
        let deployment = match unsupported {
            Some(why) => Deployment::Unsupported(why),
            None => Deployment::Table(TableDeployment {
                script_model: script_model(&self.text("model_path"), inferencex),
                wip: source_field(&source, "wip") == Some("True"),
                measured: inferencex.then(|| measured_day(&source)).flatten(),
                precision: self.text("precision"),
                gemm_quant: self.text("gemm_quant_mode"),
                moe_quant: self.text("moe_quant_mode"),
                pools,
                notes,
            }),
        };
        Ok(MeasuredPoint {
            id: self.text("id"),
            origin: self.origin.clone(),
            system: self.text("system"),
            backend: self.text("backend"),
            backend_version: self.text("backend_version"),
            model: self.text("model_path"),
            mode,
            workload: WorkloadShape {
                isl: isl.unwrap_or(0),
                osl: osl.unwrap_or(0),
                isl_stddev: 0.0,
                osl_stddev: 0.0,
                range_ratio: None,
                concurrency,
                request_rate: None,
                request_count: None,
                warmup_request_count: 0,
            },
            measured_ttft_ms: self.float("silicon_ttft_ms")?,
            measured_tpot_ms: self.float("silicon_tpot_ms")?,
            deployment,
        })
    }
}

/// Whether a row comes from InferenceX's benchmark runs (its launch scripts and
/// `benchmark_serving` client, one server per script): the `source_file=2026-…` batches and
/// `db-dump/…`, InferenceX's database, which holds many of the same measurements (the same
/// images, dates, concurrency and measured times) under other storage.
fn from_inferencex(source: &str) -> bool {
    source.starts_with("source_file=2026-") || source.starts_with("db-dump/")
}

/// [`TableDeployment::script_model`] of a row's `model_path`.
fn script_model(model: &str, inferencex: bool) -> String {
    let lower = model.to_ascii_lowercase();
    if inferencex && lower == "deepseek-ai/deepseek-v3" {
        "deepseek-ai/deepseek-r1".into()
    } else {
        lower
    }
}

/// How many workers an aggregated row outside the InferenceX batches ran (whose scripts start
/// one server): its `batch_size` is per worker (per attention-DP rank within one), so a
/// `silicon_concurrency` of k × `batch_size` × `attention_dp_size` with k ≥ 2 is k workers
/// behind one frontend, as the same batch's disaggregated rows count their GPUs (for example
/// 416 = 32 × 13 for TP 2: 64 GPUs, like the 40 + 6 × 4 of its disaggregated sibling). Says so
/// in `notes`; 1 otherwise.
fn replicas(
    concurrency: Option<u32>,
    batch: Option<u32>,
    pool: &Parallel,
    notes: &mut Vec<String>,
) -> u32 {
    let (Some(total), Some(batch)) = (concurrency, batch) else {
        return 1;
    };
    let per_worker = batch.saturating_mul(pool.attention_dp);
    if per_worker == 0 || !total.is_multiple_of(per_worker) || total / per_worker < 2 {
        return 1;
    }
    let k = total / per_worker;
    notes.push(format!(
        "silicon_concurrency {total} is {k} × batch_size {batch}{}: simulated as {k} workers of \
         {} behind a round-robin router",
        if pool.attention_dp > 1 {
            format!(" × attention DP {}", pool.attention_dp)
        } else {
            String::new()
        },
        pool.describe()
    ));
    k
}

/// `silicon_concurrency=N` of the table's `silicon_data_source`, when it says.
fn silicon_concurrency(source: &str) -> Option<u32> {
    source_field(source, "silicon_concurrency").and_then(|v| v.parse().ok())
}

/// The day of `measured=YYYY-MM-DDThh:mm…` in the table's `silicon_data_source`, when it is
/// one.
fn measured_day(source: &str) -> Option<String> {
    let day = source_field(source, "measured")?.get(..10)?;
    let b = day.as_bytes();
    let shape = b.iter().enumerate().all(|(i, c)| match i {
        4 | 7 => *c == b'-',
        _ => c.is_ascii_digit(),
    });
    shape.then(|| day.to_string())
}

/// The value of `key=value` in the table's `silicon_data_source` (`; `-separated), trimmed.
fn source_field<'a>(source: &'a str, key: &str) -> Option<&'a str> {
    source.split(';').find_map(|part| {
        part.trim()
            .strip_prefix(key)
            .and_then(|rest| rest.strip_prefix('='))
            .map(str::trim)
    })
}

/// AIPerf 0.13 writes `input_config` as datasets and phases (`datasets[0].prompts.isl`,
/// `phases[kind=profiling].concurrency | rate | requests`, `models.items[0].name`); the reader
/// follows the flat layout (`input.prompt`, `loadgen`, `endpoint.model_names`). Maps the first
/// onto the second; a flat `input_config` is returned as it is.
fn flat_input_config(cfg: &Value) -> Value {
    let Some(phases) = cfg.get("phases").and_then(Value::as_array) else {
        return cfg.clone();
    };
    let phase = |kind: &str| {
        phases
            .iter()
            .find(|p| p["kind"] == kind)
            .cloned()
            .unwrap_or(Value::Null)
    };
    let (prof, warm) = (phase("profiling"), phase("warmup"));
    let prompts = &cfg["datasets"][0]["prompts"];
    serde_json::json!({
        "input": {"prompt": {
            "input_tokens": prompts["isl"],
            "output_tokens": prompts["osl"],
        }},
        "loadgen": {
            "concurrency": prof["concurrency"],
            "request_rate": prof["rate"],
            "request_count": prof["requests"],
            "warmup_request_count": warm["requests"],
        },
        "endpoint": {"model_names": [cfg["models"]["items"][0]["name"]]},
    })
}

/// Reads an AIPerf export: the measured TTFT and TPOT (AIPerf's inter-token latency, the mean of
/// `(latency − TTFT)/(output tokens − 1)` per request), the workload from `input_config`.
pub fn read_aiperf(
    path: &Path,
    text: &str,
    flags: &FlagDeployment,
) -> Result<MeasuredPoint, InputError> {
    let name = path.display().to_string();
    let v: Value = serde_json::from_str(text)
        .map_err(|e| InputError::new(format!("{name}:{}: not valid JSON ({e})", e.line())))?;
    let Some(cfg) = v.get("input_config").filter(|c| c.is_object()) else {
        return Err(InputError::new(format!(
            "{name}: a JSON file without input_config is not an AIPerf export \
             (profile_export_aiperf.json)"
        )));
    };
    let cfg = &flat_input_config(cfg);
    let num = |ptr: &str| v.pointer(ptr).and_then(Value::as_f64);
    let cnum = |ptr: &str| cfg.pointer(ptr).and_then(Value::as_f64);
    let key_err = |key: &str, what: &str| InputError::new(format!("{name}: {key}: {what}"));
    let whole = |key: &str, x: Option<f64>| -> Result<Option<u32>, InputError> {
        match x {
            None => Ok(None),
            Some(f) if f >= 0.0 && f.fract() == 0.0 && f <= u32::MAX as f64 => Ok(Some(f as u32)),
            Some(f) => Err(key_err(key, &format!("expected a whole number, got {f}"))),
        }
    };
    let isl = whole(
        "input_config.input.prompt.input_tokens.mean",
        cnum("/input/prompt/input_tokens/mean"),
    )?
    .or(whole(
        "input_sequence_length.avg",
        num("/input_sequence_length/avg").map(f64::round),
    )?)
    .filter(|n| *n > 0)
    .ok_or_else(|| {
        key_err(
            "input_config.input.prompt.input_tokens.mean",
            "missing (the mean input length)",
        )
    })?;
    let osl = whole(
        "input_config.input.prompt.output_tokens.mean",
        cnum("/input/prompt/output_tokens/mean"),
    )?
    .or(whole(
        "output_sequence_length.avg",
        num("/output_sequence_length/avg").map(f64::round),
    )?)
    .filter(|n| *n > 0)
    .ok_or_else(|| {
        key_err(
            "input_config.input.prompt.output_tokens.mean",
            "missing (the mean output length)",
        )
    })?;
    let concurrency = whole(
        "input_config.loadgen.concurrency",
        cnum("/loadgen/concurrency"),
    )?;
    let request_rate = cnum("/loadgen/request_rate");
    if concurrency.is_none() && request_rate.is_none() {
        return Err(key_err(
            "input_config.loadgen",
            "gives neither concurrency nor request_rate",
        ));
    }
    let request_count = whole(
        "input_config.loadgen.request_count",
        cnum("/loadgen/request_count"),
    )?
    .or(whole("request_count.avg", num("/request_count/avg"))?)
    .filter(|n| *n > 0)
    .ok_or_else(|| key_err("input_config.loadgen.request_count", "missing"))?;
    let warmup = whole(
        "input_config.loadgen.warmup_request_count",
        cnum("/loadgen/warmup_request_count"),
    )?
    .unwrap_or(0);
    let model = cfg
        .pointer("/endpoint/model_names/0")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let id = path
        .parent()
        .and_then(|d| d.file_name())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| name.clone());
    let aic = |key: &str| -> String {
        [&flags.extra_engine_args, &flags.prefill_engine_args]
            .iter()
            .filter_map(|j| j.as_deref())
            .filter_map(|j| serde_json::from_str::<Value>(j).ok())
            .find_map(|j| j.get(key).and_then(Value::as_str).map(str::to_string))
            .unwrap_or_default()
    };
    Ok(MeasuredPoint {
        id,
        origin: name,
        system: aic("aic_system"),
        backend: aic("aic_backend"),
        backend_version: aic("aic_backend_version"),
        model,
        mode: if flags.prefill_engine_args.is_some() {
            "disagg".into()
        } else {
            "agg".into()
        },
        workload: WorkloadShape {
            isl,
            osl,
            isl_stddev: cnum("/input/prompt/input_tokens/stddev").unwrap_or(0.0),
            osl_stddev: cnum("/input/prompt/output_tokens/stddev").unwrap_or(0.0),
            range_ratio: Some(1.0),
            concurrency,
            request_rate,
            request_count: Some(request_count),
            warmup_request_count: warmup,
        },
        measured_ttft_ms: num("/time_to_first_token/avg"),
        measured_tpot_ms: num("/inter_token_latency/avg"),
        deployment: Deployment::Flags(flags.clone()),
    })
}
