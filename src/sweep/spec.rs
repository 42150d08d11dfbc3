//! The sweep spec file: YAML text -> validated [`Spec`].
//!
//! Everything structural is checked here, before any point is expanded: unknown keys (with a
//! did-you-mean suggestion), wrong types and out-of-range values (named by their key path, e.g.
//! `grid.topology[0].num_workers[0]`), empty axes, unknown parameter paths, parameters set by two
//! axes, missing trace files. What can only be judged per point (engine JSON through the engine
//! parser, workload combinations, topology rules) is left to `resolve`.
//!
//! Mappings are walked as `serde_yaml` values because they keep the file's key order: the grid's
//! axes and a bundle's keys expand in the order they are written.

use crate::calibrate::CalibrationFile;
use crate::config::limits::MAX_ENGINE_RANKS;
use crate::config::{RouterMode, Sla};
use crate::error::InputError;
use serde_json::{Map, Number, Value};
use serde_yaml::Value as Yaml;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod cost;
mod search;
use cost::parse_cost;
use search::{check_search, parse_search};

/// Keys allowed at the top level of a spec.
pub const TOP_LEVEL_KEYS: &[&str] = &[
    "name",
    "seed",
    "workload",
    "engine",
    "prefill_engine",
    "decode_engine",
    "router_mode",
    "router",
    "mode",
    "num_workers",
    "num_prefill_workers",
    "num_decode_workers",
    "grid",
    "constraints",
    "slo",
    "require",
    "rank_by",
    "pareto",
    "output",
    "search",
    "group_by",
    "early_stop",
    "cost",
    "calibration",
];

/// Workload keys: the `dynosim run` workload flags with underscores.
pub const WORKLOAD_KEYS: &[&str] = &[
    "trace",
    "trace_format",
    "trace_block_size",
    "trace_shared_prefix_ratio",
    "trace_num_prefix_groups",
    "arrival_speedup_ratio",
    "replay_concurrency",
    "max_sim_time_seconds",
    "input_tokens",
    "output_tokens",
    "request_count",
    "request_rate",
    "arrival_interval_ms",
    "arrival_seed",
    "turns_per_session",
    "shared_prefix_ratio",
    "num_prefix_groups",
    "inter_turn_delay_ms",
    "random_range_ratio",
    "random_range_style",
    "input_tokens_stddev",
    "output_tokens_stddev",
    "warmup_request_count",
];

/// Parameter paths that are a single name.
pub const PLAIN_PARAMS: &[&str] = &[
    "mode",
    "num_workers",
    "num_prefill_workers",
    "num_decode_workers",
    "router_mode",
    "seed",
];

/// Prefixes of parameter paths that reach into a JSON object of the spec.
pub const PARAM_PREFIXES: &[&str] = &[
    "engine",
    "prefill_engine",
    "decode_engine",
    "router",
    "workload",
];

/// Default seed of every point, the same as `dynosim run --seed`'s default.
pub const DEFAULT_SEED: u64 = 42;

/// Report keys whose value depends on the host (wall time): never in `leaderboard.csv`.
pub const HOST_DEPENDENT_METRICS: &[&str] = &[
    "wall_time_ms",
    "processed_tokens_per_s",
    "processed_output_tokens_per_s",
];

/// Report keys that exist only when GPU prices (`cost`) are given.
pub const COST_METRICS: [&str; 3] = crate::report::cost::COST_KEYS;

/// Report keys that exist only when an SLA (`slo`) is set.
pub const GOODPUT_METRICS: &[&str] = &[
    "goodput_completed_requests",
    "goodput_request_throughput_rps",
    "goodput_output_throughput_tok_s",
];

const SCALAR_METRICS: &[&str] = &[
    "num_requests",
    "completed_requests",
    "total_input_tokens",
    "total_output_tokens",
    "duration_ms",
    "wall_time_ms",
    "request_throughput_rps",
    "input_throughput_tok_s",
    "output_throughput_tok_s",
    "total_throughput_tok_s",
    "prefill_worker_seconds",
    "decode_worker_seconds",
    "prefill_gpus_per_worker",
    "decode_gpus_per_worker",
    "gpu_hours",
    "goodput_completed_requests",
    "goodput_request_throughput_rps",
    "goodput_output_throughput_tok_s",
    "processed_tokens",
    "processed_tokens_per_s",
    "processed_output_tokens_per_s",
    "prefix_cache_reused_ratio",
    "first_admission_prefix_cache_reused_ratio",
    // Added by the sweep.
    "output_throughput_tok_s_per_gpu",
    "request_throughput_rps_per_gpu",
    "gpus",
];
const DISTRIBUTIONS: &[&str] = &[
    "ttft_ms",
    "ttst_ms",
    "tpot_ms",
    "itl_ms",
    "e2e_latency_ms",
    "output_token_throughput_per_user",
];
const STATS: &[&str] = &[
    "mean", "min", "max", "median", "p75", "p90", "p95", "p99", "std",
];

/// Every metric name `require`, `rank_by` and `pareto` may use: DynoSim's report keys (spec
/// §8.2), `output_throughput_tok_s_per_gpu` and `gpus`.
pub fn known_metrics() -> Vec<String> {
    let mut v: Vec<String> = SCALAR_METRICS.iter().map(|s| s.to_string()).collect();
    for d in DISTRIBUTIONS {
        for s in STATS {
            v.push(format!("{s}_{d}"));
        }
    }
    v
}

/// Deployment mode of a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Aggregated,
    Disaggregated,
}

/// Which engine-args object an `engine`-like path reaches into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pool {
    Base,
    Prefill,
    Decode,
}

/// A parameter a grid axis (or the base spec) can set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Param {
    Mode,
    NumWorkers,
    NumPrefillWorkers,
    NumDecodeWorkers,
    RouterMode,
    Seed,
    /// A (possibly nested) key of an engine-args object.
    Engine(Pool, Vec<String>),
    /// A (possibly nested) key of the router config.
    Router(Vec<String>),
    /// A workload key (one of [`WORKLOAD_KEYS`]).
    Workload(&'static str),
}

/// A parameter with the path it was written as.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamRef {
    pub path: String,
    pub param: Param,
}

/// One mapping of a bundle axis: its entries expand as a cartesian product in written order.
#[derive(Debug, Clone, PartialEq)]
pub struct Bundle {
    pub entries: Vec<(ParamRef, Vec<Value>)>,
}

impl Bundle {
    /// Number of choices this bundle contributes (`None` on overflow).
    pub fn size(&self) -> Option<u128> {
        self.entries
            .iter()
            .try_fold(1u128, |acc, (_, vals)| acc.checked_mul(vals.len() as u128))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum AxisKind {
    /// A list of values of one parameter.
    Values(ParamRef, Vec<Value>),
    /// A list of bundles, each setting several parameters.
    Bundles(Vec<Bundle>),
}

/// One grid axis (one entry of `grid`).
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub name: String,
    pub kind: AxisKind,
}

impl Axis {
    /// Number of choices on this axis (`None` on overflow).
    pub fn size(&self) -> Option<u128> {
        match &self.kind {
            AxisKind::Values(_, v) => Some(v.len() as u128),
            AxisKind::Bundles(bs) => bs
                .iter()
                .try_fold(0u128, |acc, b| b.size().and_then(|s| acc.checked_add(s))),
        }
    }

    /// The parameters of the `choice`-th value of this axis (`choice < size()`), in written
    /// order; the last entry of a bundle varies fastest.
    pub fn choice(&self, mut choice: u128) -> Vec<(&ParamRef, &Value)> {
        match &self.kind {
            AxisKind::Values(p, vals) => vec![(p, &vals[choice as usize])],
            AxisKind::Bundles(bs) => {
                for b in bs {
                    let size = b.size().unwrap_or(u128::MAX);
                    if choice < size {
                        let mut out = Vec::with_capacity(b.entries.len());
                        let mut rest = choice;
                        for (p, vals) in b.entries.iter().rev() {
                            let n = vals.len() as u128;
                            out.push((p, &vals[(rest % n) as usize]));
                            rest /= n;
                        }
                        out.reverse();
                        return out;
                    }
                    choice -= size;
                }
                Vec::new()
            }
        }
    }

    /// Every parameter this axis may set, in written order, without repeats.
    pub fn params(&self) -> Vec<&ParamRef> {
        let all: Vec<&ParamRef> = match &self.kind {
            AxisKind::Values(p, _) => vec![p],
            AxisKind::Bundles(bs) => bs
                .iter()
                .flat_map(|b| b.entries.iter().map(|(p, _)| p))
                .collect(),
        };
        let mut out: Vec<&ParamRef> = Vec::with_capacity(all.len());
        for p in all {
            if !out.iter().any(|q| q.path == p.path) {
                out.push(p);
            }
        }
        out
    }
}

/// `max key` / `min key` of `rank_by` and `pareto`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Objective {
    pub maximize: bool,
    pub metric: String,
}

impl std::fmt::Display for Objective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let dir = if self.maximize { "max" } else { "min" };
        write!(f, "{dir} {}", self.metric)
    }
}

/// One `require` entry: a point whose metric falls outside `[min, max]` is infeasible.
#[derive(Debug, Clone, PartialEq)]
pub struct Bound {
    pub metric: String,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

/// A validated spec.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The spec file as given (for messages).
    pub file: PathBuf,
    /// Folder that relative trace paths are resolved against.
    pub dir: PathBuf,
    pub text: String,
    /// SHA-256 (hex) of `text`.
    pub sha256: String,
    pub name: String,
    pub seed: u64,
    pub mode: Mode,
    pub num_workers: u32,
    pub num_prefill_workers: u32,
    pub num_decode_workers: u32,
    pub router_mode: RouterMode,
    pub workload: Map<String, Value>,
    pub engine: Map<String, Value>,
    pub prefill_engine: Map<String, Value>,
    pub decode_engine: Map<String, Value>,
    pub router: Map<String, Value>,
    pub axes: Vec<Axis>,
    pub max_gpus: Option<u64>,
    pub sla: Sla,
    pub require: Vec<Bound>,
    pub rank_by: Vec<Objective>,
    pub pareto: Vec<Objective>,
    pub output: Option<PathBuf>,
    /// `search.capacity`: each point's highest load within `require`, instead of one run.
    pub search: Option<CapacitySearch>,
    /// `group_by`: parameter paths whose values split the ranking into groups.
    pub group_by: Vec<String>,
    /// `early_stop` (default true): `false` runs every simulation to the end, as
    /// `--no-early-stop` does, so every point has full metrics.
    pub early_stop: bool,
    /// `cost.gpu_hour_usd`: GPU-hour prices; every simulated point then gets the cost columns
    /// (`crate::report::cost::COST_KEYS`).
    pub cost: Option<crate::report::cost::GpuPrices>,
    /// `calibration`: the calibration file as written (relative to the spec's folder).
    pub calibration_path: Option<PathBuf>,
    /// The calibration every point takes (the spec's `calibration`, or `--calibration`), with
    /// the name notes show it by; loaded by [`load_spec`] or the caller.
    pub calibration: Option<Arc<(String, CalibrationFile)>>,
}

/// The workload keys a capacity search may vary (more load = higher value).
pub const CAPACITY_KNOBS: &[&str] = &[
    "workload.arrival_speedup_ratio",
    "workload.request_rate",
    "workload.replay_concurrency",
];

/// `search.capacity`: for every grid point, the highest `knob` value in `[low, high]` at which
/// the point meets every `require` bound, to within `precision` (relative).
#[derive(Debug, Clone, PartialEq)]
pub struct CapacitySearch {
    /// The parameter path, e.g. `workload.arrival_speedup_ratio`.
    pub knob: String,
    pub low: f64,
    pub high: f64,
    pub precision: f64,
}

impl CapacitySearch {
    /// The workload key the knob sets.
    pub fn workload_key(&self) -> &str {
        self.knob.trim_start_matches("workload.")
    }

    /// Whether the knob takes whole values (bisected arithmetically, not geometrically).
    pub fn integral(&self) -> bool {
        self.knob == "workload.replay_concurrency"
    }
}

impl Spec {
    /// Number of points of the grid (`None` when it overflows `u128`), computed by
    /// multiplication: nothing is expanded.
    pub fn grid_size(&self) -> Option<u128> {
        self.axes
            .iter()
            .try_fold(1u128, |acc, a| a.size().and_then(|s| acc.checked_mul(s)))
    }

    /// The parameter paths any point sets, in order of first appearance in the grid: the
    /// parameter columns of the leaderboard.
    pub fn param_columns(&self) -> Vec<String> {
        let mut cols: Vec<String> = Vec::new();
        for a in &self.axes {
            for p in a.params() {
                if !cols.contains(&p.path) {
                    cols.push(p.path.clone());
                }
            }
        }
        cols
    }

    /// The parameters point `id` sets (`id < grid_size()`): axes in file order, the last axis
    /// varying fastest.
    pub fn point_params(&self, id: u128) -> Vec<(&ParamRef, &Value)> {
        let mut choices = vec![0u128; self.axes.len()];
        let mut rest = id;
        for (i, a) in self.axes.iter().enumerate().rev() {
            let n = a.size().unwrap_or(1).max(1);
            choices[i] = rest % n;
            rest /= n;
        }
        self.axes
            .iter()
            .zip(choices)
            .flat_map(|(a, c)| a.choice(c))
            .collect()
    }

    /// Whether any point has an SLA (goodput keys in its report).
    pub fn has_slo(&self) -> bool {
        self.sla.is_set()
    }
}

/// SHA-256 of bytes, lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in digest {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// Reads and validates a spec file, checking that its trace files exist.
pub fn load_spec(file: &Path) -> Result<Spec, InputError> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| InputError::new(format!("{}: cannot read the spec: {e}", file.display())))?;
    let mut spec = parse_spec(&text, file)?;
    check_trace_files(&spec)?;
    if let Some(path) = &spec.calibration_path {
        let full = spec.dir.join(path);
        let origin = format!("{}: key calibration", file.display());
        let loaded = CalibrationFile::load(&full, &origin)?;
        spec.calibration = Some(Arc::new((full.display().to_string(), loaded)));
    }
    Ok(spec)
}

/// The closest candidate to `word`, if any is close enough to be a plausible typo.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(word, c), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

fn suggestion(word: &str, candidates: &[&str]) -> String {
    match did_you_mean(word, candidates.iter().copied()) {
        Some(c) => format!("; did you mean `{c}`?"),
        None => format!(" (expected one of: {})", candidates.join(", ")),
    }
}

/// Builds errors that name the spec file and a key path.
struct Ctx<'a> {
    file: &'a Path,
}

impl Ctx<'_> {
    fn err(&self, path: &str, msg: impl std::fmt::Display) -> InputError {
        if path.is_empty() {
            InputError::new(format!("{}: {msg}", self.file.display()))
        } else {
            InputError::new(format!("{}: {path}: {msg}", self.file.display()))
        }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => format!("string \"{s}\""),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a mapping".into(),
    }
}

/// Converts a YAML value to JSON (for engine/router objects and parameter values).
fn yaml_to_json(ctx: &Ctx, v: &Yaml, path: &str) -> Result<Value, InputError> {
    Ok(match v {
        Yaml::Null => Value::Null,
        Yaml::Bool(b) => Value::Bool(*b),
        Yaml::Number(n) => {
            if let Some(u) = n.as_u64() {
                Value::from(u)
            } else if let Some(i) = n.as_i64() {
                Value::from(i)
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                match Number::from_f64(f) {
                    Some(num) => Value::Number(num),
                    None => {
                        return Err(ctx.err(path, format!("expected a finite number, found {f}")))
                    }
                }
            }
        }
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Sequence(seq) => Value::Array(
            seq.iter()
                .enumerate()
                .map(|(i, x)| yaml_to_json(ctx, x, &format!("{path}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        Yaml::Mapping(m) => {
            let mut out = Map::new();
            for (k, x) in m {
                let key = key_str(ctx, k, path)?;
                let value = yaml_to_json(ctx, x, &join(path, key))?;
                out.insert(key.to_string(), value);
            }
            Value::Object(out)
        }
        Yaml::Tagged(t) => {
            return Err(ctx.err(
                path,
                format!("YAML tags are not supported (found !{})", t.tag),
            ))
        }
    })
}

fn key_str<'y>(ctx: &Ctx, k: &'y Yaml, path: &str) -> Result<&'y str, InputError> {
    match k {
        Yaml::String(s) => Ok(s.as_str()),
        other => Err(ctx.err(
            path,
            format!(
                "keys must be strings, found {}",
                serde_yaml::to_string(other).unwrap_or_default().trim()
            ),
        )),
    }
}

fn mapping<'y>(
    ctx: &Ctx,
    v: &'y Yaml,
    path: &str,
) -> Result<Option<&'y serde_yaml::Mapping>, InputError> {
    match v {
        Yaml::Mapping(m) => Ok(Some(m)),
        Yaml::Null => Ok(None),
        other => Err(ctx.err(
            path,
            format!(
                "expected a mapping, found {}",
                describe(&yaml_to_json(ctx, other, path)?)
            ),
        )),
    }
}

fn json_object(ctx: &Ctx, v: &Yaml, path: &str) -> Result<Map<String, Value>, InputError> {
    match mapping(ctx, v, path)? {
        None => Ok(Map::new()),
        Some(_) => match yaml_to_json(ctx, v, path)? {
            Value::Object(m) => Ok(m),
            _ => unreachable!("a YAML mapping converts to a JSON object"),
        },
    }
}

fn expect_uint(ctx: &Ctx, v: &Value, path: &str, min: u64, max: u64) -> Result<u64, InputError> {
    match v.as_u64() {
        Some(n) if n >= min && n <= max => Ok(n),
        _ => {
            let range = if max == u64::MAX {
                format!("an integer >= {min}")
            } else {
                format!("an integer in {min}..={max}")
            };
            Err(ctx.err(path, format!("expected {range}, found {}", describe(v))))
        }
    }
}

fn expect_float(
    ctx: &Ctx,
    v: &Value,
    path: &str,
    what: &str,
    ok: impl Fn(f64) -> bool,
) -> Result<f64, InputError> {
    match v.as_f64() {
        Some(x) if v.is_number() && ok(x) => Ok(x),
        _ => Err(ctx.err(path, format!("expected {what}, found {}", describe(v)))),
    }
}

fn expect_choice<'c>(
    ctx: &Ctx,
    v: &Value,
    path: &str,
    choices: &[&'c str],
) -> Result<&'c str, InputError> {
    if let Some(s) = v.as_str() {
        if let Some(c) = choices.iter().find(|c| **c == s) {
            return Ok(c);
        }
        return Err(ctx.err(
            path,
            format!("unknown value \"{s}\"{}", suggestion(s, choices)),
        ));
    }
    Err(ctx.err(
        path,
        format!(
            "expected one of {}, found {}",
            choices.join(" | "),
            describe(v)
        ),
    ))
}

/// Type- and range-checks the value of a workload key (`null` unsets the key).
fn check_workload_value(ctx: &Ctx, key: &str, v: &Value, path: &str) -> Result<(), InputError> {
    if v.is_null() {
        return Ok(());
    }
    let positive = |x: f64| x.is_finite() && x > 0.0;
    let non_negative = |x: f64| x.is_finite() && x >= 0.0;
    match key {
        "trace" => match v {
            Value::String(s) if !s.is_empty() => Ok(()),
            Value::Array(items) if !items.is_empty() => {
                for (i, item) in items.iter().enumerate() {
                    if !matches!(item, Value::String(s) if !s.is_empty()) {
                        return Err(ctx.err(
                            &format!("{path}[{i}]"),
                            format!("expected a trace file path, found {}", describe(item)),
                        ));
                    }
                }
                Ok(())
            }
            _ => Err(ctx.err(
                path,
                format!(
                    "expected a trace file path or a non-empty list of them, found {}",
                    describe(v)
                ),
            )),
        },
        "trace_format" => expect_choice(
            ctx,
            v,
            path,
            &crate::workload::formats::TraceFormat::ALL.map(|f| f.name()),
        )
        .map(|_| ()),
        "trace_block_size" | "input_tokens" | "output_tokens" | "request_count"
        | "replay_concurrency" | "turns_per_session" => {
            expect_uint(ctx, v, path, 1, u32::MAX as u64).map(|_| ())
        }
        "num_prefix_groups" | "trace_num_prefix_groups" | "warmup_request_count" => {
            expect_uint(ctx, v, path, 0, u32::MAX as u64).map(|_| ())
        }
        "arrival_seed" => expect_uint(ctx, v, path, 0, u64::MAX).map(|_| ()),
        "arrival_speedup_ratio" | "request_rate" => {
            expect_float(ctx, v, path, "a finite number > 0", positive).map(|_| ())
        }
        "max_sim_time_seconds"
        | "arrival_interval_ms"
        | "inter_turn_delay_ms"
        | "input_tokens_stddev"
        | "output_tokens_stddev" => {
            expect_float(ctx, v, path, "a finite number >= 0", non_negative).map(|_| ())
        }
        "random_range_style" => expect_choice(ctx, v, path, &["floor", "symmetric"]).map(|_| ()),
        "shared_prefix_ratio" | "trace_shared_prefix_ratio" | "random_range_ratio" => {
            expect_float(ctx, v, path, "a number in [0, 1]", |x| {
                (0.0..=1.0).contains(&x)
            })
            .map(|_| ())
        }
        _ => Err(ctx.err(path, "unknown workload key")),
    }
}

/// Type-checks one value of a parameter (engine and router values are checked later by their
/// parsers, on the merged objects).
fn check_param_value(ctx: &Ctx, p: &Param, v: &Value, path: &str) -> Result<(), InputError> {
    match p {
        Param::Mode => expect_choice(ctx, v, path, &["aggregated", "disaggregated"]).map(|_| ()),
        Param::RouterMode => expect_choice(ctx, v, path, &["round_robin", "kv_router"]).map(|_| ()),
        Param::NumWorkers | Param::NumPrefillWorkers | Param::NumDecodeWorkers => {
            expect_uint(ctx, v, path, 1, MAX_ENGINE_RANKS).map(|_| ())
        }
        Param::Seed => expect_uint(ctx, v, path, 0, u64::MAX).map(|_| ()),
        Param::Engine(..) | Param::Router(_) => Ok(()),
        Param::Workload(k) => check_workload_value(ctx, k, v, path),
    }
}

/// Parses a parameter path (`num_workers`, `engine.max_num_seqs`, `workload.request_rate`...).
pub fn parse_param_path(path: &str) -> Result<Param, String> {
    let plain = match path {
        "mode" => Some(Param::Mode),
        "num_workers" => Some(Param::NumWorkers),
        "num_prefill_workers" => Some(Param::NumPrefillWorkers),
        "num_decode_workers" => Some(Param::NumDecodeWorkers),
        "router_mode" => Some(Param::RouterMode),
        "seed" => Some(Param::Seed),
        _ => None,
    };
    if let Some(p) = plain {
        return Ok(p);
    }
    let mut candidates: Vec<String> = PLAIN_PARAMS.iter().map(|s| s.to_string()).collect();
    candidates.extend(WORKLOAD_KEYS.iter().map(|k| format!("workload.{k}")));
    let unknown = |hint: Option<String>| {
        let hint = hint.or_else(|| {
            did_you_mean(path, candidates.iter().map(|s| s.as_str()))
                .map(|c| format!("; did you mean `{c}`?"))
        });
        Err(format!(
            "unknown parameter path `{path}`{}",
            hint.unwrap_or_else(|| {
                " (expected mode, num_workers, num_prefill_workers, num_decode_workers, router_mode, \
                 seed, engine.<key>, prefill_engine.<key>, decode_engine.<key>, router.<key> or \
                 workload.<key>)"
                    .to_string()
            })
        ))
    };
    let Some((head, rest)) = path.split_once('.') else {
        if WORKLOAD_KEYS.contains(&path) {
            return unknown(Some(format!("; did you mean `workload.{path}`?")));
        }
        return unknown(None);
    };
    let keys: Vec<String> = rest.split('.').map(str::to_string).collect();
    if keys.iter().any(|k| k.is_empty()) {
        return Err(format!("parameter path `{path}` has an empty key"));
    }
    match head {
        "engine" => Ok(Param::Engine(Pool::Base, keys)),
        "prefill_engine" => Ok(Param::Engine(Pool::Prefill, keys)),
        "decode_engine" => Ok(Param::Engine(Pool::Decode, keys)),
        "router" => Ok(Param::Router(keys)),
        "workload" => match WORKLOAD_KEYS.iter().find(|k| **k == rest) {
            Some(k) => Ok(Param::Workload(k)),
            None => Err(format!(
                "unknown workload key `{rest}` in parameter path `{path}`{}",
                suggestion(rest, WORKLOAD_KEYS)
            )),
        },
        _ => match did_you_mean(head, PARAM_PREFIXES.iter().copied()) {
            Some(c) => unknown(Some(format!("; did you mean `{c}.{rest}`?"))),
            None => unknown(None),
        },
    }
}

fn param_ref(ctx: &Ctx, path_in_spec: &str, written: &str) -> Result<ParamRef, InputError> {
    let param = parse_param_path(written).map_err(|m| ctx.err(path_in_spec, m))?;
    Ok(ParamRef {
        path: written.to_string(),
        param,
    })
}

/// Two paths overlap when one is the other or a dotted prefix of it.
fn overlaps(a: &str, b: &str) -> bool {
    a == b
        || (a.len() > b.len() && a.starts_with(b) && a.as_bytes()[b.len()] == b'.')
        || (b.len() > a.len() && b.starts_with(a) && b.as_bytes()[a.len()] == b'.')
}

fn parse_values(
    ctx: &Ctx,
    p: &ParamRef,
    v: &Yaml,
    path: &str,
    expand: bool,
) -> Result<Vec<Value>, InputError> {
    let values = match (expand, v) {
        (true, Yaml::Sequence(seq)) => {
            if seq.is_empty() {
                return Err(ctx.err(path, "empty list: an axis needs at least one value"));
            }
            seq.iter()
                .enumerate()
                .map(|(i, x)| {
                    Ok((
                        format!("{path}[{i}]"),
                        yaml_to_json(ctx, x, &format!("{path}[{i}]"))?,
                    ))
                })
                .collect::<Result<Vec<_>, InputError>>()?
        }
        _ => vec![(path.to_string(), yaml_to_json(ctx, v, path)?)],
    };
    let mut out = Vec::with_capacity(values.len());
    for (vp, val) in values {
        check_param_value(ctx, &p.param, &val, &vp)?;
        out.push(val);
    }
    Ok(out)
}

fn parse_axis(ctx: &Ctx, name: &str, v: &Yaml) -> Result<Axis, InputError> {
    let path = format!("grid.{name}");
    // An axis named by a parameter path sets that parameter.
    if let Ok(param) = parse_param_path(name) {
        let p = ParamRef {
            path: name.to_string(),
            param,
        };
        let values = parse_values(ctx, &p, v, &path, true)?;
        return Ok(Axis {
            name: name.to_string(),
            kind: AxisKind::Values(p, values),
        });
    }
    // Otherwise it must be a list of bundles (or a single bundle).
    let items: Vec<&Yaml> = match v {
        Yaml::Sequence(seq) => seq.iter().collect(),
        Yaml::Mapping(_) => vec![v],
        _ => vec![],
    };
    let all_mappings = !items.is_empty() && items.iter().all(|x| matches!(x, Yaml::Mapping(_)));
    if !all_mappings {
        if let Yaml::Sequence(seq) = v {
            if seq.is_empty() {
                return Err(ctx.err(&path, "empty axis: list at least one value"));
            }
            if seq.iter().any(|x| matches!(x, Yaml::Mapping(_))) {
                return Err(ctx.err(
                    &path,
                    "mixes mappings and plain values: an axis is either a list of values of one \
                     parameter or a list of mappings (bundles)",
                ));
            }
        }
        // A list of plain values under a name that is not a parameter path.
        let msg = parse_param_path(name).err().unwrap_or_default();
        return Err(ctx.err(&path, msg));
    }
    let single = matches!(v, Yaml::Mapping(_));
    let mut bundles = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let bpath = if single {
            path.clone()
        } else {
            format!("{path}[{i}]")
        };
        let m = mapping(ctx, item, &bpath)?.expect("checked to be a mapping");
        let mut entries: Vec<(ParamRef, Vec<Value>)> = Vec::with_capacity(m.len());
        for (k, x) in m {
            let key = key_str(ctx, k, &bpath)?;
            let epath = join(&bpath, key);
            let p = param_ref(ctx, &epath, key)?;
            if let Some((q, _)) = entries.iter().find(|(q, _)| overlaps(&q.path, key)) {
                return Err(ctx.err(&epath, format!("overlaps `{}` of the same bundle", q.path)));
            }
            let values = parse_values(ctx, &p, x, &epath, true)?;
            entries.push((p, values));
        }
        bundles.push(Bundle { entries });
    }
    Ok(Axis {
        name: name.to_string(),
        kind: AxisKind::Bundles(bundles),
    })
}

fn parse_objectives(
    ctx: &Ctx,
    v: &Yaml,
    path: &str,
    metrics: &[String],
    has_slo: bool,
) -> Result<Vec<Objective>, InputError> {
    let items: Vec<(String, &Yaml)> = match v {
        Yaml::Sequence(seq) => seq
            .iter()
            .enumerate()
            .map(|(i, x)| (format!("{path}[{i}]"), x))
            .collect(),
        Yaml::String(_) => vec![(path.to_string(), v)],
        Yaml::Null => vec![],
        _ => {
            return Err(ctx.err(
                path,
                "expected a list of \"max <metric>\" / \"min <metric>\"",
            ))
        }
    };
    let mut out = Vec::with_capacity(items.len());
    for (ipath, item) in items {
        let Yaml::String(s) = item else {
            return Err(ctx.err(
                &ipath,
                "expected a string \"max <metric>\" or \"min <metric>\"",
            ));
        };
        let words: Vec<&str> = s.split_whitespace().collect();
        let (maximize, metric) = match words.as_slice() {
            ["max", m] => (true, *m),
            ["min", m] => (false, *m),
            _ => {
                return Err(ctx.err(
                    &ipath,
                    format!("expected \"max <metric>\" or \"min <metric>\", found \"{s}\""),
                ))
            }
        };
        if parse_param_path(metric).is_err() || metrics.iter().any(|m| m == metric) {
            check_metric(ctx, metric, &ipath, metrics, has_slo)?;
        }
        out.push(Objective {
            maximize,
            metric: metric.to_string(),
        });
    }
    Ok(out)
}

fn check_metric(
    ctx: &Ctx,
    metric: &str,
    path: &str,
    metrics: &[String],
    has_slo: bool,
) -> Result<(), InputError> {
    if !metrics.iter().any(|m| m == metric) && COST_METRICS.contains(&metric) {
        return Err(ctx.err(
            path,
            format!(
                "`{metric}` exists only with GPU prices (set cost: {{gpu_hour_usd: <USD per \
                 GPU-hour>}})"
            ),
        ));
    }
    if !metrics.iter().any(|m| m == metric) {
        let hint = match did_you_mean(metric, metrics.iter().map(|s| s.as_str())) {
            Some(c) => format!("; did you mean `{c}`?"),
            None => " (use a key of DynoSim's report, e.g. output_throughput_tok_s, mean_ttft_ms, \
                      p99_itl_ms, or output_throughput_tok_s_per_gpu, gpus)"
                .to_string(),
        };
        return Err(ctx.err(path, format!("unknown metric `{metric}`{hint}")));
    }
    if !has_slo && GOODPUT_METRICS.contains(&metric) {
        return Err(ctx.err(
            path,
            format!("`{metric}` exists only with an `slo` (set slo: {{ttft_ms: .., itl_ms: ..}})"),
        ));
    }
    Ok(())
}

fn yaml_error(file: &Path, e: &serde_yaml::Error) -> InputError {
    let msg = e.to_string();
    // serde_yaml appends " at line L column C" itself; lead with file:line:column instead.
    let core = msg.split(" at line ").next().unwrap_or(&msg).to_string();
    match e.location() {
        Some(loc) => InputError::new(format!(
            "{}:{}:{}: invalid YAML: {core}",
            file.display(),
            loc.line(),
            loc.column()
        )),
        None => InputError::new(format!("{}: invalid YAML: {msg}", file.display())),
    }
}

/// Parses and validates spec text. `file` names the spec in messages, gives the default name
/// (its stem) and the folder relative trace paths start from. Does not touch the file system.
pub fn parse_spec(text: &str, file: &Path) -> Result<Spec, InputError> {
    let ctx = Ctx { file };
    let doc: Yaml = serde_yaml::from_str(text).map_err(|e| yaml_error(file, &e))?;
    let top = match &doc {
        Yaml::Mapping(m) => m.clone(),
        Yaml::Null => {
            return Err(ctx.err(
                "",
                "the spec is empty (expected a mapping with at least a workload)",
            ))
        }
        _ => return Err(ctx.err("", "expected a mapping of spec keys at the top level")),
    };
    let mut spec = default_spec(text, file);
    // Keys that need the slo (goodput metrics) are read after it.
    let mut deferred: Vec<(&str, &Yaml)> = Vec::new();
    for (k, v) in &top {
        let key = key_str(&ctx, k, "")?;
        match key {
            "name" => match v {
                Yaml::String(s) if !s.trim().is_empty() => spec.name = s.clone(),
                _ => return Err(ctx.err("name", "expected a non-empty string")),
            },
            "seed" => {
                let j = yaml_to_json(&ctx, v, "seed")?;
                spec.seed = expect_uint(&ctx, &j, "seed", 0, u64::MAX)?;
            }
            "mode" => {
                let j = yaml_to_json(&ctx, v, "mode")?;
                spec.mode = match expect_choice(&ctx, &j, "mode", &["aggregated", "disaggregated"])?
                {
                    "disaggregated" => Mode::Disaggregated,
                    _ => Mode::Aggregated,
                };
            }
            "num_workers" | "num_prefill_workers" | "num_decode_workers" => {
                let j = yaml_to_json(&ctx, v, key)?;
                let n = expect_uint(&ctx, &j, key, 1, MAX_ENGINE_RANKS)? as u32;
                match key {
                    "num_workers" => spec.num_workers = n,
                    "num_prefill_workers" => spec.num_prefill_workers = n,
                    _ => spec.num_decode_workers = n,
                }
            }
            "router_mode" => {
                let j = yaml_to_json(&ctx, v, key)?;
                spec.router_mode =
                    match expect_choice(&ctx, &j, key, &["round_robin", "kv_router"])? {
                        "kv_router" => RouterMode::KvRouter,
                        _ => RouterMode::RoundRobin,
                    };
            }
            "workload" => spec.workload = parse_workload(&ctx, v)?,
            "engine" => spec.engine = json_object(&ctx, v, key)?,
            "prefill_engine" => spec.prefill_engine = json_object(&ctx, v, key)?,
            "decode_engine" => spec.decode_engine = json_object(&ctx, v, key)?,
            "router" => spec.router = json_object(&ctx, v, key)?,
            "grid" => {
                if let Some(m) = mapping(&ctx, v, "grid")? {
                    for (ak, av) in m {
                        let name = key_str(&ctx, ak, "grid")?;
                        spec.axes.push(parse_axis(&ctx, name, av)?);
                    }
                }
            }
            "constraints" => spec.max_gpus = parse_constraints(&ctx, v)?.or(spec.max_gpus),
            "slo" => parse_slo(&ctx, v, &mut spec.sla)?,
            "cost" => spec.cost = Some(parse_cost(&ctx, v)?),
            "require" | "rank_by" | "pareto" | "search" | "group_by" => deferred.push((key, v)),
            "early_stop" => match v {
                Yaml::Bool(b) => spec.early_stop = *b,
                _ => return Err(ctx.err(key, "expected true or false")),
            },
            "output" => match v {
                Yaml::String(s) if !s.is_empty() => spec.output = Some(PathBuf::from(s)),
                _ => return Err(ctx.err("output", "expected a folder path")),
            },
            "calibration" => match v {
                Yaml::String(s) if !s.is_empty() => spec.calibration_path = Some(PathBuf::from(s)),
                _ => {
                    return Err(ctx.err(
                        "calibration",
                        "expected the path of a calibration file (written by dynosim calibrate)",
                    ))
                }
            },
            _ => {
                return Err(ctx.err(
                    key,
                    format!("unknown key{}", suggestion(key, TOP_LEVEL_KEYS)),
                ))
            }
        }
    }
    let mut metrics = known_metrics();
    if spec.cost.is_some() {
        metrics.extend(COST_METRICS.map(String::from));
    }
    let has_slo = spec.sla.is_set();
    // The search first: it changes the default ranking and adds its own columns as metrics.
    deferred.sort_by_key(|(k, _)| *k != "search");
    let mut rank_by_given = false;
    for (key, v) in deferred {
        match key {
            "require" => spec
                .require
                .extend(parse_require(&ctx, v, &metrics, has_slo)?),
            "rank_by" => {
                let objs = parse_objectives(&ctx, v, key, &metrics, has_slo)?;
                if objs.is_empty() {
                    return Err(ctx.err(
                        key,
                        "needs at least one \"max <metric>\" or \"min <metric>\"",
                    ));
                }
                spec.rank_by = objs;
                rank_by_given = true;
            }
            "search" => {
                spec.search = Some(parse_search(&ctx, v)?);
                metrics.extend(["capacity", "capacity_bracket_high", "probes"].map(String::from));
            }
            "group_by" => spec.group_by = parse_group_by(&ctx, v)?,
            _ => spec.pareto = parse_objectives(&ctx, v, key, &metrics, has_slo)?,
        }
    }
    if let Some(s) = &spec.search {
        check_search(&ctx, &spec, s)?;
        if !rank_by_given {
            spec.rank_by = vec![Objective {
                maximize: true,
                metric: "request_throughput_rps_per_gpu".into(),
            }];
        }
    }
    check_axes_disjoint(&ctx, &spec.axes)?;
    Ok(spec)
}

/// The spec before its keys are read: every default.
fn default_spec(text: &str, file: &Path) -> Spec {
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "sweep".to_string());
    Spec {
        file: file.to_path_buf(),
        dir: file.parent().map(Path::to_path_buf).unwrap_or_default(),
        text: text.to_string(),
        sha256: sha256_hex(text.as_bytes()),
        name: stem,
        seed: DEFAULT_SEED,
        mode: Mode::Aggregated,
        num_workers: 1,
        num_prefill_workers: 1,
        num_decode_workers: 1,
        router_mode: RouterMode::RoundRobin,
        workload: Map::new(),
        engine: Map::new(),
        prefill_engine: Map::new(),
        decode_engine: Map::new(),
        router: Map::new(),
        axes: Vec::new(),
        max_gpus: None,
        sla: Sla::default(),
        require: Vec::new(),
        rank_by: vec![Objective {
            maximize: true,
            metric: "output_throughput_tok_s".into(),
        }],
        pareto: vec![
            Objective {
                maximize: true,
                metric: "output_throughput_tok_s_per_gpu".into(),
            },
            Objective {
                maximize: true,
                metric: "mean_output_token_throughput_per_user".into(),
            },
        ],
        output: None,
        search: None,
        group_by: Vec::new(),
        early_stop: true,
        cost: None,
        calibration_path: None,
        calibration: None,
    }
}

/// `workload:`: known keys with valid values.
fn parse_workload(ctx: &Ctx, v: &Yaml) -> Result<Map<String, Value>, InputError> {
    let m = json_object(ctx, v, "workload")?;
    for (wk, wv) in &m {
        let wpath = join("workload", wk);
        if !WORKLOAD_KEYS.contains(&wk.as_str()) {
            return Err(ctx.err(
                &wpath,
                format!("unknown workload key{}", suggestion(wk, WORKLOAD_KEYS)),
            ));
        }
        check_workload_value(ctx, wk, wv, &wpath)?;
    }
    Ok(m)
}

/// `constraints: {max_gpus: N}`: the `max_gpus` it sets, if any.
fn parse_constraints(ctx: &Ctx, v: &Yaml) -> Result<Option<u64>, InputError> {
    let key = "constraints";
    let mut max_gpus = None;
    if let Some(m) = mapping(ctx, v, key)? {
        for (ck, cv) in m {
            let ck = key_str(ctx, ck, key)?;
            let cpath = join(key, ck);
            match ck {
                "max_gpus" => {
                    let j = yaml_to_json(ctx, cv, &cpath)?;
                    max_gpus = Some(expect_uint(ctx, &j, &cpath, 1, u64::MAX)?);
                }
                _ => {
                    return Err(ctx.err(
                        &cpath,
                        format!("unknown constraint{}", suggestion(ck, &["max_gpus"])),
                    ))
                }
            }
        }
    }
    Ok(max_gpus)
}

/// `slo: {ttft_ms, itl_ms, e2e_ms}`, set in `sla`.
fn parse_slo(ctx: &Ctx, v: &Yaml, sla: &mut Sla) -> Result<(), InputError> {
    let key = "slo";
    if let Some(m) = mapping(ctx, v, key)? {
        for (sk, sv) in m {
            let sk = key_str(ctx, sk, key)?;
            let spath = join(key, sk);
            let j = yaml_to_json(ctx, sv, &spath)?;
            let x = expect_float(ctx, &j, &spath, "a finite number >= 0 (ms)", |x| {
                x.is_finite() && x >= 0.0
            })?;
            match sk {
                "ttft_ms" => sla.ttft_ms = Some(x),
                "itl_ms" => sla.itl_ms = Some(x),
                "e2e_ms" => sla.e2e_ms = Some(x),
                _ => {
                    return Err(ctx.err(
                        &spath,
                        format!(
                            "unknown SLO key{}",
                            suggestion(sk, &["ttft_ms", "itl_ms", "e2e_ms"])
                        ),
                    ))
                }
            }
        }
    }
    Ok(())
}

/// `require: {metric: {min, max}}`: the bounds, in file order.
fn parse_require(
    ctx: &Ctx,
    v: &Yaml,
    metrics: &[String],
    has_slo: bool,
) -> Result<Vec<Bound>, InputError> {
    let key = "require";
    let mut require = Vec::new();
    if let Some(m) = mapping(ctx, v, key)? {
        for (rk, rv) in m {
            let metric = key_str(ctx, rk, key)?;
            let rpath = join(key, metric);
            check_metric(ctx, metric, &rpath, metrics, has_slo)?;
            let bounds = mapping(ctx, rv, &rpath)?
                .ok_or_else(|| ctx.err(&rpath, "expected {min: ..} and/or {max: ..}"))?;
            let mut b = Bound {
                metric: metric.to_string(),
                min: None,
                max: None,
            };
            for (bk, bv) in bounds {
                let bk = key_str(ctx, bk, &rpath)?;
                let bpath = join(&rpath, bk);
                let j = yaml_to_json(ctx, bv, &bpath)?;
                let x = expect_float(ctx, &j, &bpath, "a finite number", f64::is_finite)?;
                match bk {
                    "min" => b.min = Some(x),
                    "max" => b.max = Some(x),
                    _ => {
                        return Err(ctx.err(
                            &bpath,
                            format!("unknown bound{}", suggestion(bk, &["min", "max"])),
                        ))
                    }
                }
            }
            if b.min.is_none() && b.max.is_none() {
                return Err(ctx.err(&rpath, "expected {min: ..} and/or {max: ..}"));
            }
            require.push(b);
        }
    }
    Ok(require)
}

/// Refuses two axes setting the same parameter (they would silently override each other).
fn check_axes_disjoint(ctx: &Ctx, axes: &[Axis]) -> Result<(), InputError> {
    // Two axes setting the same parameter would silently override each other.
    for (i, a) in axes.iter().enumerate() {
        for b in &axes[i + 1..] {
            for p in a.params() {
                if let Some(q) = b.params().into_iter().find(|q| overlaps(&p.path, &q.path)) {
                    return Err(ctx.err(
                        &format!("grid.{}", b.name),
                        format!(
                            "sets `{}`, which grid axis `{}` already sets (`{}`)",
                            q.path, a.name, p.path
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// `group_by: [parameter paths]`.
fn parse_group_by(ctx: &Ctx, v: &Yaml) -> Result<Vec<String>, InputError> {
    let items: Vec<&Yaml> = match v {
        Yaml::Sequence(seq) => seq.iter().collect(),
        Yaml::String(_) => vec![v],
        Yaml::Null => vec![],
        _ => return Err(ctx.err("group_by", "expected a list of parameter paths")),
    };
    let mut out = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        let ipath = format!("group_by[{i}]");
        let Yaml::String(s) = item else {
            return Err(ctx.err(
                &ipath,
                "expected a parameter path, e.g. workload.arrival_speedup_ratio",
            ));
        };
        parse_param_path(s).map_err(|e| ctx.err(&ipath, e))?;
        out.push(s.clone());
    }
    Ok(out)
}

/// Paths of every trace file the spec names (base workload and grid values), resolved against
/// the spec's folder, with the key path naming each.
pub fn trace_paths(spec: &Spec) -> Vec<(PathBuf, String)> {
    let mut out: Vec<(PathBuf, String)> = Vec::new();
    let mut add = |v: &Value, at: String| {
        let items: Vec<&Value> = match v {
            Value::Array(a) => a.iter().collect(),
            other => vec![other],
        };
        for item in items {
            if let Some(s) = item.as_str() {
                let p = spec.dir.join(s);
                if !out.iter().any(|(q, _)| *q == p) {
                    out.push((p, at.clone()));
                }
            }
        }
    };
    if let Some(v) = spec.workload.get("trace") {
        add(v, "workload.trace".into());
    }
    for a in &spec.axes {
        let entries: Vec<(&ParamRef, &Vec<Value>)> = match &a.kind {
            AxisKind::Values(p, vals) => vec![(p, vals)],
            AxisKind::Bundles(bs) => bs
                .iter()
                .flat_map(|b| b.entries.iter().map(|(p, v)| (p, v)))
                .collect(),
        };
        for (p, vals) in entries {
            if p.param == Param::Workload("trace") {
                for v in vals {
                    add(v, format!("grid.{}", a.name));
                }
            }
        }
    }
    out
}

/// Checks that every trace file the spec names exists.
pub fn check_trace_files(spec: &Spec) -> Result<(), InputError> {
    for (p, at) in trace_paths(spec) {
        if !p.is_file() {
            return Err(InputError::new(format!(
                "{}: {at}: trace file {} does not exist (paths are relative to the spec's folder)",
                spec.file.display(),
                p.display()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
