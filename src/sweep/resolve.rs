//! One point of the grid -> its deployment ([`SimConfig`]), the workload it replays and whether
//! it can run.
//!
//! A point's configuration is built the way `dynosim run` builds it from its flags: engine JSON
//! through `parse_engine_args` (defaults merged with the JSON), router JSON through
//! `parse_router_config`, the workload keys checked by the rules of `dynosim run` (spec §1.2),
//! `LoadSpec` from `arrival_speedup_ratio`/`replay_concurrency`, `Sla` from `slo`, one seed.
//!
//! DynoSim's deployment rules (worker types, what disaggregated pools share, kv_router's targets,
//! trace-format refusals) are `config::build`'s, shared with `dynosim run`: this module only turns
//! spec values into the builder's inputs and words its problems by spec key.
//!
//! Errors split in two: an engine/router JSON the parsers refuse or a workload `dynosim run`
//! would refuse is a spec error (the whole sweep stops before running); a topology DynoSim would
//! refuse (kv_router on one target, disaggregated pools that do not match, ...) only makes the
//! point `invalid`.

use super::spec::{Mode, Param, Pool, Spec};
use super::values::{canonical_json, value_text};
use crate::calibrate::Applied;
use crate::config::aic::{
    load_prefill_load_estimator, router_aic_engine, RouterAicValues, ROUTER_AIC_KEYS,
};
use crate::config::build::{
    self, worker_type_name, Count, PoolsInput, Problem, TopologyInput, TraceFormatProblem, Wording,
};
use crate::config::engine_args::parse_engine_args;
use crate::config::limits::MAX_ENGINE_RANKS;
use crate::config::router_config::parse_router_config;
use crate::config::{
    EngineArgs, LoadSpec, PrefillLoadModel, RouterConfig, RouterMode, SimConfig, Topology,
};
use crate::error::InputError;
use crate::timing::TimingLoader;
use crate::workload::formats::TraceFormat;
use crate::workload::synthetic::{RangeStyle, SyntheticArrival, SyntheticSpec};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Default `arrival_seed` of synthetic workloads.
pub const DEFAULT_ARRIVAL_SEED: u64 = 42;

/// Whether a point runs, and why not.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Run,
    /// A configuration DynoSim would refuse.
    Invalid(String),
    /// Outside `constraints`.
    Skipped(String),
}

/// The workload a point replays (one type with `dynosim run`'s).
pub use crate::config::build::WorkloadSource;

/// A point with everything needed to run it.
#[derive(Debug, Clone)]
pub struct ResolvedPoint {
    pub id: u64,
    /// The parameters the grid sets for this point: (path, value), in written order.
    pub params: Vec<(String, Value)>,
    pub config: SimConfig,
    pub workload: WorkloadSource,
    pub gpus: u64,
    pub verdict: Verdict,
    /// The lowest point id of the whole grid with the identical resolved configuration and
    /// workload, when that is another point: this one is simulated once, as that one.
    pub duplicate_of: Option<u64>,
    /// What the spec's calibration did to each pool (empty without a calibration).
    pub calibration: Vec<Applied>,
}

impl ResolvedPoint {
    /// What makes two points the same simulation: the resolved configuration and workload,
    /// without what the simulation never reads (the KV router's settings under round robin,
    /// engine keys the engine type ignores).
    pub fn identity_key(&self) -> String {
        let mut effective = self.config.clone();
        effective.topology = effective.topology.without_unread();
        if effective.router_mode == RouterMode::RoundRobin {
            effective.router = RouterConfig::default();
        }
        let config = serde_json::to_value(&effective).unwrap_or(Value::Null);
        super::spec::sha256_hex(
            format!("{}\n{}", canonical_json(&config), self.workload.cache_key()).as_bytes(),
        )
    }
}

/// Sets `keys` (a dotted path) in a JSON object, creating nested objects on the way.
pub fn set_path(obj: &mut Map<String, Value>, keys: &[String], v: Value) {
    let Some((last, parents)) = keys.split_last() else {
        return;
    };
    let mut cur = obj;
    for k in parents {
        let slot = cur
            .entry(k.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        cur = match slot {
            Value::Object(m) => m,
            _ => unreachable!("just made an object"),
        };
    }
    cur.insert(last.clone(), v);
}

/// Deep-merges `over` into `base` (objects merge key by key; anything else replaces).
pub fn merge_over(base: &mut Map<String, Value>, over: &Map<String, Value>) {
    for (k, v) in over {
        match (base.get_mut(k), v) {
            (Some(Value::Object(b)), Value::Object(o)) => merge_over(b, o),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

/// Resolves points of one spec, caching parsed engine and router JSON (grids repeat them).
pub struct Resolver<'s> {
    spec: &'s Spec,
    engines: HashMap<String, Result<Engine, InputError>>,
    /// Timing models of the sweep, one per distinct source, files relative to the spec.
    timing: TimingLoader,
    routers: HashMap<String, Result<RouterConfig, InputError>>,
}

fn u32_of(w: &Map<String, Value>, key: &str) -> Option<u32> {
    w.get(key).and_then(Value::as_u64).map(|n| n as u32)
}

fn f64_of(w: &Map<String, Value>, key: &str) -> Option<f64> {
    w.get(key).and_then(Value::as_f64)
}

fn has(w: &Map<String, Value>, key: &str) -> bool {
    w.get(key).is_some_and(|v| !v.is_null())
}

/// The benchmark-shape keys of a synthetic workload (drawn lengths, warm-up).
const SHAPE_KEYS: [&str; 5] = [
    "random_range_ratio",
    "random_range_style",
    "input_tokens_stddev",
    "output_tokens_stddev",
    "warmup_request_count",
];

/// The benchmark-shape keys of a synthetic workload as a [`SyntheticSpec`] with its turns and
/// request count (its other fields default), checked by `dynosim run`'s rules worded by key.
/// Values are type-checked by the spec.
fn shape_of(w: &Map<String, Value>, turns: u32) -> Result<SyntheticSpec, String> {
    let style = match w.get("random_range_style").and_then(Value::as_str) {
        Some("symmetric") => RangeStyle::Symmetric,
        _ => RangeStyle::Floor,
    };
    let ratio = f64_of(w, "random_range_ratio");
    if ratio.is_none() && has(w, "random_range_style") {
        return Err("workload.random_range_style only applies with random_range_ratio".into());
    }
    let spec = SyntheticSpec {
        random_range_ratio: ratio,
        random_range_style: style,
        input_tokens_stddev: f64_of(w, "input_tokens_stddev").unwrap_or(0.0),
        output_tokens_stddev: f64_of(w, "output_tokens_stddev").unwrap_or(0.0),
        warmup_request_count: u32_of(w, "warmup_request_count").unwrap_or(0),
        turns_per_session: turns,
        request_count: u32_of(w, "request_count").unwrap_or(1),
        ..SyntheticSpec::default()
    };
    spec.check_shape_named(&|key| key.to_string())
        .map_err(|e| format!("workload: {e}"))?;
    Ok(spec)
}

/// What `dynosim run` does with the workload flags (spec §1.2 rules 1-4, 6, 13, 14): the source
/// to load and the per-point load shaping. `block_size` is the engine block size of the point.
pub fn workload_of(
    spec: &Spec,
    w: &Map<String, Value>,
    block_size: u32,
) -> Result<(WorkloadSource, LoadSpec, Option<f64>), String> {
    let turns = u32_of(w, "turns_per_session").unwrap_or(1);
    let ratio = f64_of(w, "shared_prefix_ratio").unwrap_or(0.0);
    let groups = u32_of(w, "num_prefix_groups").unwrap_or(0);
    let delay = f64_of(w, "inter_turn_delay_ms").unwrap_or(0.0);
    let synthetic = ["input_tokens", "output_tokens", "request_count"]
        .iter()
        .any(|k| has(w, k))
        || turns != 1
        || ratio != 0.0
        || groups != 0
        || delay != 0.0;
    let load = LoadSpec {
        arrival_speedup_ratio: f64_of(w, "arrival_speedup_ratio").unwrap_or(1.0),
        replay_concurrency: u32_of(w, "replay_concurrency"),
    };
    let max_sim_time_ms = f64_of(w, "max_sim_time_seconds").map(|s| s * 1000.0);
    let loads: Vec<&str> = ["replay_concurrency", "request_rate", "arrival_interval_ms"]
        .into_iter()
        .filter(|k| has(w, k))
        .collect();
    match (w.get("trace").filter(|v| !v.is_null()), synthetic) {
        (Some(_), true) => Err("workload: use either `trace` or a synthetic workload \
                                (input_tokens, output_tokens, request_count, ...), not both"
            .into()),
        (None, false) => Err(
            "workload: needs `trace`, or a synthetic workload (input_tokens, \
                              output_tokens, request_count and one of replay_concurrency | \
                              request_rate | arrival_interval_ms)"
                .into(),
        ),
        (Some(t), false) => {
            if let Some(k) = SHAPE_KEYS.iter().find(|k| has(w, k)) {
                return Err(format!(
                    "workload.{k} only shapes synthetic workloads (input_tokens, output_tokens, \
                     request_count): a trace gives every request's lengths and arrival"
                ));
            }
            if let Some(k) = ["request_rate", "arrival_interval_ms"]
                .iter()
                .find(|k| has(w, k))
            {
                return Err(format!(
                    "workload.{k} is only for synthetic workloads: a trace's arrivals come from \
                     its timestamps (use arrival_speedup_ratio or replay_concurrency)"
                ));
            }
            let files: Vec<String> = match t {
                Value::Array(a) => a
                    .iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect(),
                other => other.as_str().map(str::to_string).into_iter().collect(),
            };
            let format = w
                .get("trace_format")
                .and_then(Value::as_str)
                .and_then(TraceFormat::from_name)
                .unwrap_or(TraceFormat::Mooncake);
            if format != TraceFormat::Dynamo && files.len() != 1 {
                return Err(format!(
                    "workload.trace: {} trace files given, but the {} trace format reads exactly \
                     one file (only dynamo takes several)",
                    files.len(),
                    format.name()
                ));
            }
            let paths = files.iter().map(|f| spec.dir.join(f)).collect();
            let trace_block_size = build::trace_block_size(format, u32_of(w, "trace_block_size"));
            Ok((
                WorkloadSource::Trace {
                    files,
                    paths,
                    trace_block_size,
                    closed_loop: load.replay_concurrency.is_some(),
                    format,
                    shared_prefix_ratio: f64_of(w, "trace_shared_prefix_ratio").unwrap_or(0.0),
                    num_prefix_groups: u32_of(w, "trace_num_prefix_groups").unwrap_or(0),
                },
                load,
                max_sim_time_ms,
            ))
        }
        (None, true) => {
            let missing: Vec<&str> = ["input_tokens", "output_tokens", "request_count"]
                .into_iter()
                .filter(|k| !has(w, k))
                .collect();
            if !missing.is_empty() {
                return Err(format!(
                    "workload: a synthetic workload needs input_tokens, output_tokens and \
                     request_count (missing: {})",
                    missing.join(", ")
                ));
            }
            if loads.len() != 1 {
                let found = if loads.is_empty() {
                    "none".to_string()
                } else {
                    loads.join(", ")
                };
                return Err(format!(
                    "workload: a synthetic workload needs exactly one of replay_concurrency, \
                     request_rate, arrival_interval_ms (found: {found})"
                ));
            }
            if has(w, "max_sim_time_seconds") {
                return Err("workload.max_sim_time_seconds is only for trace workloads".into());
            }
            let arrival = match loads[0] {
                "replay_concurrency" => SyntheticArrival::ClosedLoop,
                "request_rate" => {
                    SyntheticArrival::PoissonRate(f64_of(w, "request_rate").unwrap_or(1.0))
                }
                _ => SyntheticArrival::IntervalMs(f64_of(w, "arrival_interval_ms").unwrap_or(0.0)),
            };
            let shaped = shape_of(w, turns)?;
            let s = SyntheticSpec {
                input_tokens: u32_of(w, "input_tokens").unwrap_or(1),
                output_tokens: u32_of(w, "output_tokens").unwrap_or(1),
                arrival,
                arrival_seed: w
                    .get("arrival_seed")
                    .and_then(Value::as_u64)
                    .unwrap_or(DEFAULT_ARRIVAL_SEED),
                turns_per_session: turns,
                shared_prefix_ratio: ratio,
                num_prefix_groups: groups,
                inter_turn_delay_ms: delay,
                ..shaped
            };
            Ok((
                WorkloadSource::Synthetic {
                    spec: s,
                    block_size,
                },
                load,
                None,
            ))
        }
    }
}

/// A pool's engine args, and why its timing cannot be built when it cannot (the args are then
/// unloaded, for the point's record only).
type Engine = (EngineArgs, Option<String>);

impl<'s> Resolver<'s> {
    pub fn new(spec: &'s Spec) -> Self {
        Resolver {
            spec,
            engines: HashMap::new(),
            timing: TimingLoader::new(&spec.dir),
            routers: HashMap::new(),
        }
    }

    /// A pool's engine args, parsed and loaded. A timing model that cannot be built for these
    /// settings (see [`InputError::is_unbuildable`]) is not a spec error: the args come back
    /// unloaded with the reason, and the point is `invalid`.
    fn engine(&mut self, obj: &Map<String, Value>, origin: &str) -> Result<Engine, InputError> {
        let v = Value::Object(obj.clone());
        let key = format!("{origin}\n{}", canonical_json(&v));
        self.engines
            .entry(key)
            .or_insert_with(|| {
                let parsed = parse_engine_args(&v, origin)?;
                match parsed.clone().load(&mut self.timing) {
                    Ok(args) => Ok((args, None)),
                    Err(e) if e.is_unbuildable() => Ok((parsed.unloaded(), Some(e.to_string()))),
                    Err(e) => Err(e),
                }
            })
            .clone()
    }

    fn router(&mut self, obj: &Map<String, Value>) -> Result<RouterConfig, InputError> {
        let key = canonical_json(&Value::Object(obj.clone()));
        if let Some(r) = self.routers.get(&key) {
            return r.clone();
        }
        let r = self.parse_router(obj);
        self.routers.insert(key, r.clone());
        r
    }

    /// A `router` object: DynoSim's `KvRouterConfig` keys, plus the `aic_*` keys of the KV
    /// router's AIC prefill-load estimator (what `dynosim run` takes as `--aic-*` flags), which
    /// go with `router_prefill_load_model: aic`. The estimator's engine is loaded through the
    /// sweep's timing loader, shared with AIC timing of the same engine.
    fn parse_router(&mut self, obj: &Map<String, Value>) -> Result<RouterConfig, InputError> {
        let (aic, rest): (Map<String, Value>, Map<String, Value>) = obj
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .partition(|(k, _)| ROUTER_AIC_KEYS.contains(&k.as_str()));
        let mut cfg = parse_router_config(&Value::Object(rest), "router")?;
        let aic = Value::Object(aic);
        let values = RouterAicValues::from_json(&aic, "router")?;
        let engine = router_aic_engine(&values, |k| format!("router.{k}"))?;
        match (engine, cfg.router_prefill_load_model) {
            (Some(id), PrefillLoadModel::Aic) => {
                cfg.prefill_load_estimator = Some(load_prefill_load_estimator(
                    &mut self.timing,
                    &id,
                    "router.aic_*",
                )?);
            }
            (Some(_), PrefillLoadModel::None) => {
                return Err(InputError::new(
                    "router.aic_* keys configure the KV router's AIC prefill-load estimator and \
                     require router.router_prefill_load_model: aic",
                ))
            }
            (None, PrefillLoadModel::Aic) => {
                return Err(InputError::new(
                    "router.router_prefill_load_model: aic requires the keys of its AIC \
                     estimator: router.aic_backend, router.aic_system, router.aic_model_path and \
                     router.aic_backend_version",
                ))
            }
            (None, PrefillLoadModel::None) => {}
        }
        Ok(cfg)
    }

    /// The engine pools of a point: the base engine, or the prefill and decode pools merged
    /// over it.
    fn pools(
        &mut self,
        mode: Mode,
        engine: &Map<String, Value>,
        prefill: &Map<String, Value>,
        decode: &Map<String, Value>,
    ) -> Result<(PoolsInput, Vec<String>), InputError> {
        let mut unbuildable = Vec::new();
        let mut take = |(args, why): Engine| {
            unbuildable.extend(why);
            args
        };
        let pools = match mode {
            Mode::Aggregated => PoolsInput::Aggregated {
                engine: take(self.engine(engine, "engine")?),
            },
            Mode::Disaggregated => {
                let pool_args = |pool: &Map<String, Value>, role: &str| {
                    // The base engine's role keys describe aggregated workers: a pool takes
                    // its role from its own object, else gets it set automatically.
                    let role_keys = ["worker_type", "is_prefill", "is_decode"];
                    let mut obj = engine.clone();
                    obj.retain(|k, _| !role_keys.contains(&k.as_str()));
                    merge_over(&mut obj, pool);
                    if !role_keys.iter().any(|k| pool.contains_key(*k)) {
                        obj.insert("worker_type".into(), Value::String(role.into()));
                    }
                    obj
                };
                let p_obj = pool_args(prefill, "prefill");
                let d_obj = pool_args(decode, "decode");
                let prefill = take(self.engine(&p_obj, "prefill_engine (merged over engine)")?);
                let decode = take(self.engine(&d_obj, "decode_engine (merged over engine)")?);
                PoolsInput::Disaggregated { prefill, decode }
            }
        };
        unbuildable.dedup();
        Ok((pools, unbuildable))
    }

    /// What the AIC engines of the points resolved so far cost (each distinct engine is compiled
    /// and loaded once).
    pub fn aic_stats(&self) -> crate::timing::aic::AicStats {
        self.timing.aic_engines().stats()
    }

    /// Resolves point `id` (`id < grid_size`). A spec error names the point and its parameters.
    pub fn resolve(&mut self, id: u64) -> Result<ResolvedPoint, InputError> {
        let spec = self.spec;
        let assigned = spec.point_params(id as u128);
        let params: Vec<(String, Value)> = assigned
            .iter()
            .map(|(p, v)| (p.path.clone(), (*v).clone()))
            .collect();
        let point_err = |msg: &str| {
            let shown: Vec<String> = params
                .iter()
                .map(|(k, v)| format!("{k}={}", value_text(v)))
                .collect();
            let at = if shown.is_empty() {
                format!("point {id}")
            } else {
                format!("point {id} ({})", shown.join(" "))
            };
            InputError::new(format!("{}: {at}: {msg}", spec.file.display()))
        };

        let mut mode = spec.mode;
        let mut num_workers = spec.num_workers;
        let mut num_prefill = spec.num_prefill_workers;
        let mut num_decode = spec.num_decode_workers;
        let mut router_mode = spec.router_mode;
        let mut seed = spec.seed;
        let mut engine = spec.engine.clone();
        let mut prefill = spec.prefill_engine.clone();
        let mut decode = spec.decode_engine.clone();
        let mut router = spec.router.clone();
        let mut workload = spec.workload.clone();
        for (p, v) in &assigned {
            let n = v.as_u64().unwrap_or(1);
            match &p.param {
                Param::Mode => {
                    mode = if v.as_str() == Some("disaggregated") {
                        Mode::Disaggregated
                    } else {
                        Mode::Aggregated
                    }
                }
                Param::NumWorkers => num_workers = n as u32,
                Param::NumPrefillWorkers => num_prefill = n as u32,
                Param::NumDecodeWorkers => num_decode = n as u32,
                Param::RouterMode => {
                    router_mode = if v.as_str() == Some("kv_router") {
                        RouterMode::KvRouter
                    } else {
                        RouterMode::RoundRobin
                    }
                }
                Param::Seed => seed = n,
                Param::Engine(pool, keys) => {
                    let target = match pool {
                        Pool::Base => &mut engine,
                        Pool::Prefill => &mut prefill,
                        Pool::Decode => &mut decode,
                    };
                    set_path(target, keys, (*v).clone());
                }
                Param::Router(keys) => set_path(&mut router, keys, (*v).clone()),
                Param::Workload(k) => {
                    if v.is_null() {
                        workload.remove(*k);
                    } else {
                        workload.insert(k.to_string(), (*v).clone());
                    }
                }
            }
        }

        let (pools, unbuildable) = self
            .pools(mode, &engine, &prefill, &decode)
            .map_err(|e| point_err(&e.to_string()))?;
        let input = TopologyInput {
            pools,
            num_workers: i64::from(num_workers),
            num_prefill_workers: i64::from(num_prefill),
            num_decode_workers: i64::from(num_decode),
            router_mode,
        };
        let (mut topology, mut problems) = build::build_topology(input, &SpecKeys);
        let calibration = match &spec.calibration {
            Some(c) => c.1.apply_topology(&mut topology),
            None => Vec::new(),
        };
        let router_cfg = self
            .router(&router)
            .map_err(|e| point_err(&e.to_string()))?;
        let (source, load, max_sim_time_ms) =
            workload_of(spec, &workload, topology.block_size()).map_err(|m| point_err(&m))?;
        let closed_loop = load.replay_concurrency.is_some();
        problems.extend(build::trtllm_problem(&topology, closed_loop));
        if let WorkloadSource::Trace { format, .. } = &source {
            let disaggregated = matches!(topology, Topology::Disaggregated { .. });
            problems.extend(build::trace_format_problem(
                *format,
                closed_loop,
                disaggregated,
            ));
        }
        let gpus = topology.gpus();
        let verdict = if !problems.is_empty() || !unbuildable.is_empty() {
            let mut reasons: Vec<String> = problems.iter().map(|p| SpecKeys.message(p)).collect();
            reasons.extend(unbuildable);
            Verdict::Invalid(reasons.join("; "))
        } else {
            match spec.max_gpus {
                Some(max) if gpus > max => Verdict::Skipped(format!(
                    "needs {gpus} GPUs, above constraints.max_gpus {max}"
                )),
                _ => Verdict::Run,
            }
        };
        Ok(ResolvedPoint {
            id,
            params,
            config: SimConfig {
                topology,
                router_mode,
                router: router_cfg,
                load,
                max_sim_time_ms,
                sla: spec.sla,
                seed,
                record_requests: false,
            },
            workload: source,
            gpus,
            verdict,
            duplicate_of: None,
            calibration,
        })
    }
}

/// The spec keys a sweep words a point's deployment problems with.
struct SpecKeys;

impl Wording for SpecKeys {
    fn message(&self, problem: &Problem) -> String {
        match problem {
            Problem::PoolCountsInAggregated { .. } => {
                "num_prefill_workers and num_decode_workers are only used in disaggregated mode \
                 (use num_workers)"
                    .into()
            }
            Problem::NumWorkersInDisaggregated { .. } => {
                "num_workers is only used in aggregated mode (use num_prefill_workers and \
                 num_decode_workers)"
                    .into()
            }
            // The spec parser accepts only counts of 1 to the rank limit.
            Problem::CountBelowOne { count, value } => {
                format!("{} must be >= 1, got {value}", count_key(*count))
            }
            Problem::CountTooLarge { count, value } => {
                format!("{} is too large: {value}", count_key(*count))
            }
            Problem::PoolSumAboveLimit { ranks }
            | Problem::RanksAboveLimit { ranks }
            | Problem::AggregatedRanksAboveLimit { ranks, .. } => format!(
                "{ranks} engine ranks (workers x dp_size) is above the limit of \
                 {MAX_ENGINE_RANKS}"
            ),
            Problem::AggregatedWorkerType(got) => format!(
                "aggregated mode needs engine worker_type aggregated (got {})",
                worker_type_name(*got)
            ),
            Problem::PoolWorkerType { pool, got } => format!(
                "the {} pool needs worker_type {} (got {})",
                worker_type_name(*pool),
                worker_type_name(*pool),
                worker_type_name(*got)
            ),
            Problem::DisaggregatedDpSize { prefill, decode } => format!(
                "disaggregated mode needs dp_size 1 on both pools (prefill {prefill}, decode \
                 {decode})"
            ),
            Problem::DisaggregatedEngineType { prefill, decode } => format!(
                "disaggregated mode needs the same engine_type on both pools (prefill {}, decode \
                 {})",
                prefill.display_name(),
                decode.display_name()
            ),
            Problem::DisaggregatedBlockSize {
                prefill,
                decode,
                sglang,
            } => {
                let what = if *sglang {
                    "page size (sglang.page_size or block_size)"
                } else {
                    "block_size"
                };
                format!(
                    "disaggregated mode needs the same {what} on both pools (prefill {prefill}, \
                     decode {decode})"
                )
            }
            Problem::KvRouterOneTarget => "router_mode kv_router needs more than one \
                worker/DP-rank target (num_workers x dp_size = 1)"
                .into(),
            Problem::TrtllmDisaggregation(why) => why.clone(),
            Problem::TraceFormat(why) => match why {
                TraceFormatProblem::AppliedComputeAgenticNeedsConcurrency => {
                    "trace_format applied_compute_agentic requires replay_concurrency because \
                     the source traces do not include first-turn timestamps"
                }
                TraceFormatProblem::AgenticMooncakeWithConcurrency => {
                    "agentic_mooncake trace format is not supported with replay_concurrency"
                }
                TraceFormatProblem::AgenticMooncakeDisaggregated => {
                    "agentic_mooncake trace format is not supported for disaggregated replay"
                }
                TraceFormatProblem::MooncakeDeltaDisaggregated => {
                    "mooncake-delta trace format is not supported for disaggregated replay"
                }
            }
            .into(),
        }
    }
}

fn count_key(count: Count) -> &'static str {
    match count {
        Count::Workers => "num_workers",
        Count::PrefillWorkers => "num_prefill_workers",
        Count::DecodeWorkers => "num_decode_workers",
    }
}

#[cfg(test)]
mod tests {
    use super::super::spec::parse_spec;
    use super::*;
    use crate::config::WorkerType;
    use std::path::{Path, PathBuf};

    const SYN: &str =
        "workload: {input_tokens: 100, output_tokens: 10, request_count: 5, request_rate: 2}\n";

    fn spec(text: &str) -> Spec {
        parse_spec(text, Path::new("dir/s.yaml")).unwrap()
    }

    fn resolve_all(text: &str) -> Result<Vec<ResolvedPoint>, String> {
        let s = spec(text);
        let n = s.grid_size().unwrap() as u64;
        let mut r = Resolver::new(&s);
        (0..n)
            .map(|i| r.resolve(i).map_err(|e| e.to_string()))
            .collect()
    }

    #[test]
    fn profiles_resolve_against_the_spec_folder_and_load_once_per_file() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/profiles");
        let text = format!(
            "{SYN}grid:\n  engine.planner_profile_data: [perf_h200_example.npz, own_profile.npz]\n  \
             engine.max_num_seqs: [8, 16]\n"
        );
        let s = parse_spec(&text, &dir.join("s.yaml")).unwrap();
        let mut r = Resolver::new(&s);
        let pts: Vec<_> = (0..4).map(|i| r.resolve(i).unwrap()).collect();
        assert_eq!(r.timing.num_built(), 2);
        let file_of = |p: &ResolvedPoint| {
            let Topology::Aggregated { engine, .. } = &p.config.topology else {
                unreachable!()
            };
            serde_json::to_value(&engine.timing).unwrap()["file"].clone()
        };
        let files: Vec<_> = pts.iter().map(file_of).collect();
        assert_eq!(files.iter().filter(|f| *f == "own_profile.npz").count(), 2);
        assert_eq!(
            files
                .iter()
                .filter(|f| *f == "perf_h200_example.npz")
                .count(),
            2
        );
        // Pool variants: the decode pool's axis, merged over the base engine's profile.
        let text = format!(
            "{SYN}engine: {{planner_profile_data: own_profile.npz}}\ngrid:\n  topology:\n    - \
             {{mode: disaggregated, decode_engine.planner_profile_data: [perf_h200_example.npz, null]}}\n"
        );
        let s = parse_spec(&text, &dir.join("s.yaml")).unwrap();
        let mut r = Resolver::new(&s);
        let pools: Vec<_> = (0..2)
            .map(|i| {
                let p = r.resolve(i).unwrap();
                let Topology::Disaggregated {
                    prefill, decode, ..
                } = &p.config.topology
                else {
                    unreachable!()
                };
                let file =
                    |e: &EngineArgs| serde_json::to_value(&e.timing).unwrap()["file"].clone();
                (file(prefill), file(decode))
            })
            .collect();
        assert_eq!(
            pools[0],
            ("own_profile.npz".into(), "perf_h200_example.npz".into())
        );
        assert_eq!(pools[1], ("own_profile.npz".into(), Value::Null));
        assert_eq!(r.timing.num_built(), 2);
        // A missing file is a spec error naming the key path and the file.
        let text = format!("{SYN}engine: {{planner_profile_data: nope.npz}}\n");
        let s = parse_spec(&text, &dir.join("s.yaml")).unwrap();
        let e = Resolver::new(&s).resolve(0).unwrap_err().to_string();
        assert!(
            e.contains("planner_profile_data") && e.contains("nope.npz"),
            "{e}"
        );
    }

    #[test]
    fn base_point_matches_run_defaults() {
        let pts = resolve_all(SYN).unwrap();
        assert_eq!(pts.len(), 1);
        let c = &pts[0].config;
        assert_eq!(
            c.topology,
            Topology::Aggregated {
                num_workers: 1,
                engine: EngineArgs::default()
            }
        );
        assert_eq!(c.router, RouterConfig::default());
        assert_eq!(c.router_mode, RouterMode::RoundRobin);
        assert_eq!(c.load, LoadSpec::default());
        assert_eq!(c.seed, super::super::spec::DEFAULT_SEED);
        assert!(!c.sla.is_set());
        assert_eq!(c.max_sim_time_ms, None);
        assert_eq!(pts[0].gpus, 1);
        assert_eq!(pts[0].verdict, Verdict::Run);
        assert_eq!(
            pts[0].workload,
            WorkloadSource::Synthetic {
                spec: SyntheticSpec {
                    input_tokens: 100,
                    output_tokens: 10,
                    request_count: 5,
                    arrival: SyntheticArrival::PoissonRate(2.0),
                    arrival_seed: 42,
                    turns_per_session: 1,
                    shared_prefix_ratio: 0.0,
                    num_prefix_groups: 0,
                    inter_turn_delay_ms: 0.0,
                    ..SyntheticSpec::default()
                },
                block_size: 64,
            }
        );
    }

    #[test]
    fn engine_router_and_load_parameters_reach_the_config() {
        let text = format!(
            "{SYN}seed: 7\nengine: {{block_size: 32}}\nrouter: {{router_temperature: 0.5}}\nslo: {{ttft_ms: 100}}\n\
             grid:\n  engine.max_num_seqs: [8, null]\n  router.overlap_score_weight: [0]\n  workload.arrival_speedup_ratio: [3]\n"
        );
        let pts = resolve_all(&text).unwrap();
        let Topology::Aggregated { engine, .. } = &pts[0].config.topology else {
            panic!()
        };
        assert_eq!(engine.block_size, 32);
        assert_eq!(engine.max_num_seqs, Some(8));
        let Topology::Aggregated { engine, .. } = &pts[1].config.topology else {
            panic!()
        };
        assert_eq!(engine.max_num_seqs, None);
        assert_eq!(pts[0].config.router.router_temperature, 0.5);
        assert_eq!(pts[0].config.router.overlap_score_credit, 0.0);
        assert_eq!(pts[0].config.load.arrival_speedup_ratio, 3.0);
        assert_eq!(pts[0].config.seed, 7);
        assert_eq!(pts[0].config.sla.ttft_ms, Some(100.0));
        // The synthetic workload path hashes with the engine block size.
        assert!(matches!(
            pts[0].workload,
            WorkloadSource::Synthetic { block_size: 32, .. }
        ));
    }

    #[test]
    fn disaggregated_pools_get_worker_types_and_merge_over_engine() {
        let text = format!(
            "{SYN}engine: {{block_size: 16, max_num_seqs: 4}}\nprefill_engine: {{max_num_seqs: 2}}\n\
             grid:\n  topology:\n    - {{mode: disaggregated, num_prefill_workers: [2], num_decode_workers: [3]}}\n"
        );
        let pts = resolve_all(&text).unwrap();
        let Topology::Disaggregated {
            num_prefill_workers,
            prefill,
            num_decode_workers,
            decode,
        } = &pts[0].config.topology
        else {
            panic!()
        };
        assert_eq!((*num_prefill_workers, *num_decode_workers), (2, 3));
        assert_eq!(prefill.worker_type, WorkerType::Prefill);
        assert_eq!(decode.worker_type, WorkerType::Decode);
        assert_eq!(prefill.max_num_seqs, Some(2));
        assert_eq!(decode.max_num_seqs, Some(4));
        assert_eq!(prefill.block_size, 16);
        assert_eq!(pts[0].gpus, 5);
        assert_eq!(pts[0].verdict, Verdict::Run);
    }

    #[test]
    fn disaggregated_sglang_points_run_and_need_one_page_size() {
        let text = format!(
            "{SYN}engine: {{engine_type: sglang, sglang: {{page_size: 16}}}}\n\
             grid:\n  topology:\n    - {{mode: disaggregated, num_prefill_workers: [1], num_decode_workers: [2], \
             decode_engine.sglang.page_size: [16, 32]}}\n    - {{mode: disaggregated, \
             decode_engine.engine_type: [vllm]}}\n"
        );
        let pts = resolve_all(&text).unwrap();
        let verdict = |i: usize| match &pts[i].verdict {
            Verdict::Run => "run".to_string(),
            Verdict::Invalid(r) | Verdict::Skipped(r) => r.clone(),
        };
        assert_eq!(verdict(0), "run");
        let Topology::Disaggregated {
            prefill, decode, ..
        } = &pts[0].config.topology
        else {
            panic!()
        };
        assert_eq!((prefill.block_size, decode.block_size), (16, 16));
        assert_eq!(decode.engine_type, crate::config::EngineType::Sglang);
        assert!(verdict(1).contains("same page size"), "{}", verdict(1));
        assert!(
            verdict(1).contains("prefill 16, decode 32"),
            "{}",
            verdict(1)
        );
        assert!(verdict(2).contains("same engine_type"), "{}", verdict(2));
    }

    #[test]
    fn invalid_points_carry_the_reason() {
        let text = format!(
            "{SYN}grid:\n  topology:\n    - {{num_workers: [1, 2]}}\n    - {{mode: disaggregated, decode_engine.block_size: [64, 32]}}\n    - {{engine.worker_type: prefill}}\n  router_mode: [round_robin, kv_router]\n"
        );
        let pts = resolve_all(&text).unwrap();
        let verdicts: Vec<String> = pts
            .iter()
            .map(|p| match &p.verdict {
                Verdict::Run => "run".to_string(),
                Verdict::Invalid(r) => format!("invalid: {r}"),
                Verdict::Skipped(r) => format!("skipped: {r}"),
            })
            .collect();
        assert_eq!(verdicts[0], "run");
        assert!(
            verdicts[1].contains("kv_router needs more than one worker"),
            "{}",
            verdicts[1]
        );
        assert_eq!(verdicts[2], "run");
        assert_eq!(verdicts[3], "run");
        assert_eq!(verdicts[4], "run"); // disagg, equal block sizes, round robin
        assert_eq!(verdicts[5], "run"); // disagg with kv_router: not enforced by 1.4.2
        assert!(verdicts[6].contains("same block_size"), "{}", verdicts[6]);
        assert!(
            verdicts[8].contains("worker_type aggregated"),
            "{}",
            verdicts[8]
        );
    }

    #[test]
    fn dp_size_counts_gpus_and_kv_targets() {
        let text = format!(
            "{SYN}router_mode: kv_router\nconstraints: {{max_gpus: 4}}\ngrid:\n  engine.dp_size: [2, 8]\n"
        );
        let pts = resolve_all(&text).unwrap();
        assert_eq!(pts[0].gpus, 2);
        assert_eq!(pts[0].verdict, Verdict::Run); // 1 worker x 2 DP ranks: kv_router is fine
        assert_eq!(pts[1].gpus, 8);
        assert!(matches!(&pts[1].verdict, Verdict::Skipped(r) if r.contains("needs 8 GPUs")));
    }

    #[test]
    fn unknown_engine_key_inside_an_axis_is_a_spec_error() {
        let e = resolve_all(&format!("{SYN}grid:\n  engine.max_num_seq: [1, 2]\n")).unwrap_err();
        assert!(e.contains("point 0") && e.contains("max_num_seq"), "{e}");
        let e = resolve_all(&format!("{SYN}grid:\n  router.overlap_weight: [1]\n")).unwrap_err();
        assert!(e.contains("overlap_weight"), "{e}");
    }

    #[test]
    fn workload_rules_of_dynosim_run() {
        let cases = [
            ("workload: {input_tokens: 1, output_tokens: 1, request_count: 1}\n", "exactly one of"),
            (
                "workload: {input_tokens: 1, output_tokens: 1, request_count: 1, request_rate: 1, replay_concurrency: 2}\n",
                "found: replay_concurrency, request_rate",
            ),
            ("workload: {input_tokens: 1, request_rate: 1}\n", "missing: output_tokens, request_count"),
            ("workload: {trace: t.jsonl, request_count: 3}\n", "not both"),
            ("workload: {trace: t.jsonl, request_rate: 3}\n", "only for synthetic"),
            ("workload: {trace: [a.jsonl, b.jsonl]}\n", "exactly one file"),
            ("workload: {}\n", "needs `trace`"),
            (
                "workload: {input_tokens: 1, output_tokens: 1, request_count: 1, request_rate: 1, max_sim_time_seconds: 3}\n",
                "only for trace",
            ),
        ];
        for (text, want) in cases {
            let e = resolve_all(text).unwrap_err();
            assert!(e.contains(want), "{text} -> {e}");
        }
        // shared_prefix_ratio alone makes the workload synthetic.
        let e = resolve_all("workload: {trace: t.jsonl, shared_prefix_ratio: 0.5}\n").unwrap_err();
        assert!(e.contains("not both"), "{e}");
    }

    #[test]
    fn trace_workloads_and_bundled_load_modes() {
        let text = "workload: {trace: t.jsonl, max_sim_time_seconds: 2, replay_concurrency: 4}\n\
                    grid:\n  load:\n    - {workload.replay_concurrency: null, workload.arrival_speedup_ratio: [1, 2]}\n    - {workload.trace_block_size: 64}\n";
        let pts = resolve_all(text).unwrap();
        assert_eq!(pts.len(), 3);
        assert_eq!(pts[0].config.load.replay_concurrency, None);
        assert_eq!(pts[1].config.load.arrival_speedup_ratio, 2.0);
        assert_eq!(pts[2].config.load.replay_concurrency, Some(4));
        assert_eq!(pts[0].config.max_sim_time_ms, Some(2000.0));
        match &pts[2].workload {
            WorkloadSource::Trace {
                files,
                paths,
                trace_block_size,
                closed_loop,
                format,
                ..
            } => {
                assert_eq!(files, &vec!["t.jsonl".to_string()]);
                assert_eq!(paths, &vec![PathBuf::from("dir/t.jsonl")]);
                assert_eq!(*trace_block_size, Some(64));
                assert_eq!(*format, TraceFormat::Mooncake);
                // replay_concurrency 4: file order, as `dynosim run` does.
                assert!(*closed_loop);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            pts[0].workload,
            WorkloadSource::Trace {
                closed_loop: false,
                ..
            }
        ));
        assert_eq!(pts[0].workload.cache_key(), pts[1].workload.cache_key());
        assert_ne!(pts[0].workload.cache_key(), pts[2].workload.cache_key());
    }

    #[test]
    fn json_helpers() {
        let mut m = Map::new();
        set_path(
            &mut m,
            &["sglang".into(), "page_size".into()],
            Value::from(4),
        );
        set_path(&mut m, &["a".into()], Value::from(1));
        let mut base: Map<String, Value> =
            serde_json::from_str(r#"{"sglang": {"x": 1}, "a": 0, "b": 2}"#).unwrap();
        merge_over(&mut base, &m);
        assert_eq!(
            canonical_json(&Value::Object(base)),
            r#"{"a":1,"b":2,"sglang":{"page_size":4,"x":1}}"#
        );
        assert_eq!(value_text(&Value::from(2.5)), "2.5");
        assert_eq!(value_text(&Value::from("kv_router")), "kv_router");
        assert_eq!(value_text(&Value::Null), "null");
    }
}
