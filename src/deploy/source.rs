//! What `dynosim deploy` deploys: a point of a sweep output folder (by id, or by rank), or a
//! `dynosim run` report together with the `run` flags that produced it. Either way the result is
//! a [`Target`]: the exact `dynosim run` flags of the deployment, its resolved configuration (the
//! JSON a sweep records), the engine-args objects as given, the workload and the simulated
//! report.
//!
//! A point's flags are rebuilt from the spec copy and the point's parameters the way the sweep
//! resolved them (engine objects merged per pool, workload keys as `run` flags, router keys as
//! `--router-config` and the AIC estimator's `--aic-*` flags); trace and profile paths, relative
//! to the spec's folder in a sweep, become absolute. A report does not record its configuration
//! (its keys are DynoSim's), so its flags must be given after `--`; they are validated by `run`'s
//! own planner and checked against the report's GPU counts.

use crate::cli::{Cli, Command, RunArgs};
use crate::config::aic::ROUTER_AIC_KEYS;
use crate::config::build::WorkloadSource;
use crate::config::Sla;
use crate::error::InputError;
use crate::sweep::folder::{is_output_folder, read_folder, Folder};
use crate::sweep::leaderboard::rank_grouped;
use crate::sweep::record::{PointRecord, Status};
use crate::sweep::resolve::{merge_over, set_path, workload_of};
use crate::sweep::spec::{parse_param_path, Mode, Param, Pool, Spec};
use crate::sweep::values::value_text;
use clap::Parser;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// One deployment to write out.
#[derive(Debug, Clone)]
pub struct Target {
    /// For messages and README: "point 5 (rank 1) of sweep quickstart".
    pub label: String,
    /// Where it came from, for deployment.json.
    pub source: Value,
    /// The `dynosim run` flags (without `dynosim run`) that simulate exactly this deployment.
    pub run_args: Vec<String>,
    /// The resolved configuration (`SimConfig` as a sweep records it).
    pub config: Value,
    /// Engine-args objects as given, one per pool (aggregated; or prefill, decode), after the
    /// sweep's merge: which keys were set explicitly.
    pub raw_engines: Vec<Map<String, Value>>,
    pub workload: WorkloadSource,
    /// The simulated report.
    pub report: Map<String, Value>,
    pub sla: Sla,
    pub gpus: u64,
    /// The sweep's verdict: status, rank, and why (sweep points only).
    pub status: Option<String>,
    pub rank: Option<u64>,
    pub reason: Option<String>,
    /// The sweep's `require` bounds and `rank_by`, as text (sweep points only).
    pub require: Vec<String>,
    pub rank_by: Vec<String>,
}

fn input(msg: impl Into<String>) -> InputError {
    InputError::new(msg)
}

/// Which points of a sweep to deploy.
#[derive(Debug, Clone, Copy)]
pub enum Pick {
    /// By point id.
    Point(u64),
    /// The first K of the ranking (1 = the winner).
    Top(usize),
}

/// Reads the targets: a sweep folder's picked points, or a report with its run flags.
pub fn targets(source: &Path, pick: Pick, run_flags: &[String]) -> Result<Vec<Target>, InputError> {
    if source.is_dir() {
        if !run_flags.is_empty() {
            return Err(input(format!(
                "{}: a sweep folder records its points' flags; `dynosim run` flags after `--` are only for a report",
                source.display()
            )));
        }
        if !is_output_folder(source) {
            return Err(input(format!(
                "{}: not a sweep output folder (no spec.yaml and sweep.json); give a folder written by `dynosim sweep`, or a `dynosim run --report-json` report",
                source.display()
            )));
        }
        let folder = read_folder(source).map_err(|e| match e {
            crate::sweep::SweepError::Input(e) => e,
            other => input(other.to_string()),
        })?;
        return sweep_targets(&folder, pick);
    }
    if !source.is_file() {
        return Err(input(format!(
            "{}: no such file or folder (expected a sweep output folder or a `dynosim run --report-json` report)",
            source.display()
        )));
    }
    if let Pick::Point(_) = pick {
        return Err(input(
            "--point: a report holds one deployment; --point and --top are for sweep folders",
        ));
    }
    Ok(vec![report_target(source, run_flags)?])
}

fn sweep_targets(folder: &Folder, pick: Pick) -> Result<Vec<Target>, InputError> {
    let spec = &folder.spec;
    let rows = rank_grouped(&folder.records, &spec.rank_by, &spec.pareto, &[]);
    let chosen: Vec<(&PointRecord, Option<u64>)> = match pick {
        Pick::Point(id) => {
            let row = rows.iter().find(|r| r.rec.point == id).ok_or_else(|| {
                let max = folder.records.iter().map(|r| r.point).max();
                input(format!(
                    "--point {id}: {} has no point {id} (its points are {})",
                    folder.dir.display(),
                    match max {
                        Some(m) => format!("0..={m}, {} recorded", folder.records.len()),
                        None => "none".into(),
                    }
                ))
            })?;
            vec![(row.rec, row.rank)]
        }
        Pick::Top(k) => {
            let ranked: Vec<_> = rows
                .iter()
                .filter(|r| r.rank.is_some() && r.rec.report.is_some())
                .take(k)
                .map(|r| (r.rec, r.rank))
                .collect();
            if ranked.is_empty() {
                return Err(input(format!(
                    "{}: no point of this sweep has a simulated report to deploy (every point was skipped, invalid, failed or stopped early)",
                    folder.dir.display()
                )));
            }
            ranked
        }
    };
    chosen
        .into_iter()
        .map(|(rec, rank)| point_target(folder, rec, rank))
        .collect()
}

/// The raw inputs of a point, as the sweep's resolver assembles them.
struct PointInputs {
    mode: Mode,
    num_workers: u32,
    num_prefill: u32,
    num_decode: u32,
    router_mode: String,
    seed: u64,
    engine: Map<String, Value>,
    prefill: Map<String, Value>,
    decode: Map<String, Value>,
    router: Map<String, Value>,
    workload: Map<String, Value>,
}

fn point_inputs(spec: &Spec, rec: &PointRecord) -> Result<PointInputs, InputError> {
    let mut p = PointInputs {
        mode: spec.mode,
        num_workers: spec.num_workers,
        num_prefill: spec.num_prefill_workers,
        num_decode: spec.num_decode_workers,
        router_mode: match spec.router_mode {
            crate::config::RouterMode::KvRouter => "kv_router".into(),
            crate::config::RouterMode::RoundRobin => "round_robin".into(),
        },
        seed: spec.seed,
        engine: spec.engine.clone(),
        prefill: spec.prefill_engine.clone(),
        decode: spec.decode_engine.clone(),
        router: spec.router.clone(),
        workload: spec.workload.clone(),
    };
    for (path, v) in &rec.parameters {
        let param = parse_param_path(path)
            .map_err(|e| input(format!("point {}: parameter {path}: {e}", rec.point)))?;
        let n = v.as_u64().unwrap_or(1);
        match param {
            Param::Mode => {
                p.mode = if v.as_str() == Some("disaggregated") {
                    Mode::Disaggregated
                } else {
                    Mode::Aggregated
                }
            }
            Param::NumWorkers => p.num_workers = n as u32,
            Param::NumPrefillWorkers => p.num_prefill = n as u32,
            Param::NumDecodeWorkers => p.num_decode = n as u32,
            Param::RouterMode => p.router_mode = value_text(v),
            Param::Seed => p.seed = n,
            Param::Engine(pool, keys) => {
                let target = match pool {
                    Pool::Base => &mut p.engine,
                    Pool::Prefill => &mut p.prefill,
                    Pool::Decode => &mut p.decode,
                };
                set_path(target, &keys, v.clone());
            }
            Param::Router(keys) => set_path(&mut p.router, &keys, v.clone()),
            Param::Workload(k) => {
                if v.is_null() {
                    p.workload.remove(k);
                } else {
                    p.workload.insert(k.to_string(), v.clone());
                }
            }
        }
    }
    // A capacity search's report is the run at the capacity it found.
    if let (Some(search), Some(outcome)) = (&spec.search, &rec.search) {
        if let Some(c) = outcome.capacity {
            let v = if search.integral() {
                json!(c.round() as i64)
            } else {
                json!(c)
            };
            p.workload.insert(search.workload_key().to_string(), v);
        }
    }
    Ok(p)
}

/// A pool's engine object of a disaggregated point: the base engine without its role keys,
/// the pool's object merged over it, the role set unless the pool names one (the resolver's
/// rule).
fn pool_object(
    base: &Map<String, Value>,
    pool: &Map<String, Value>,
    role: &str,
) -> Map<String, Value> {
    let role_keys = ["worker_type", "is_prefill", "is_decode"];
    let mut obj = base.clone();
    obj.retain(|k, _| !role_keys.contains(&k.as_str()));
    merge_over(&mut obj, pool);
    if !role_keys.iter().any(|k| pool.contains_key(*k)) {
        obj.insert("worker_type".into(), Value::String(role.into()));
    }
    obj
}

/// File paths in engine objects (`planner_profile_data`) made absolute against `dir`.
fn absolute_paths(obj: &mut Map<String, Value>, dir: &Path) {
    if let Some(Value::String(p)) = obj.get("planner_profile_data") {
        let abs = absolute(&dir.join(p));
        obj.insert(
            "planner_profile_data".into(),
            Value::String(abs.display().to_string()),
        );
    }
}

fn absolute(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    })
}

fn flag_of(key: &str) -> String {
    format!("--{}", key.replace('_', "-"))
}

fn compact(v: &Map<String, Value>) -> String {
    serde_json::to_string(&Value::Object(v.clone())).unwrap_or_else(|_| "{}".into())
}

fn point_target(
    folder: &Folder,
    rec: &PointRecord,
    rank: Option<u64>,
) -> Result<Target, InputError> {
    let spec = &folder.spec;
    let Some(report) = rec.report.clone() else {
        let why = match rec.status {
            Status::Skipped | Status::Invalid | Status::Failed => format!(
                "it was not simulated ({}{})",
                rec.status.as_str(),
                rec.reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ),
            _ => "it was stopped early, so it has no full report (rerun the sweep with --no-early-stop)".into(),
        };
        return Err(input(format!(
            "--point {}: point {} of {} cannot be deployed: {why}",
            rec.point,
            rec.point,
            folder.dir.display()
        )));
    };
    let config = rec
        .configuration
        .clone()
        .ok_or_else(|| input(format!("point {}: no recorded configuration", rec.point)))?;
    let p = point_inputs(spec, rec)?;
    let mut args: Vec<String> = Vec::new();

    // The workload: resolved the way the sweep did (trace paths against the spec's folder).
    let block_size = config_block_size(&config);
    let (workload, _, _) = workload_of(spec, &p.workload, block_size)
        .map_err(|m| input(format!("point {}: {m}", rec.point)))?;
    let mut workload = workload;
    if let WorkloadSource::Trace { files, paths, .. } = &mut workload {
        for (f, path) in files.iter_mut().zip(paths.iter_mut()) {
            if !path.is_file() {
                return Err(input(format!(
                    "{}: the trace {} of point {} is not found at {} (the spec's folder as recorded in sweep.json, {}); run deploy from the folder the sweep ran in",
                    folder.dir.display(),
                    f,
                    rec.point,
                    path.display(),
                    spec.dir.display()
                )));
            }
            *path = absolute(path);
            *f = path.display().to_string();
            args.push(f.clone());
        }
    }
    for (k, v) in &p.workload {
        if k == "trace" || v.is_null() {
            continue;
        }
        args.push(flag_of(k));
        args.push(value_text(v));
    }

    let raw_engines = push_engines(&mut args, &p, &spec.dir);
    args.push("--router-mode".into());
    args.push(p.router_mode.clone());
    let (aic, rest): (Map<String, Value>, Map<String, Value>) = p
        .router
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .partition(|(k, _)| ROUTER_AIC_KEYS.contains(&k.as_str()));
    if !rest.is_empty() {
        args.push("--router-config".into());
        args.push(compact(&rest));
    }
    for (k, v) in &aic {
        args.push(flag_of(k));
        args.push(value_text(v));
    }
    push_sla(&mut args, &spec.sla);
    if p.seed != crate::sweep::spec::DEFAULT_SEED {
        args.push("--seed".into());
        args.push(p.seed.to_string());
    }
    Ok(Target {
        label: format!(
            "point {}{} of sweep {}",
            rec.point,
            rank.map(|r| format!(" (rank {r})")).unwrap_or_default(),
            spec.name
        ),
        source: json!({
            "kind": "sweep",
            "folder": absolute(&folder.dir).display().to_string(),
            "sweep": spec.name,
            "point": rec.point,
            "rank": rank,
            "hash": rec.hash,
        }),
        run_args: args,
        config,
        raw_engines,
        workload,
        report,
        sla: spec.sla,
        gpus: rec.gpus.unwrap_or(0),
        status: Some(rec.status.as_str().to_string()),
        rank,
        reason: rec.reason.clone(),
        require: bounds_text(spec),
        rank_by: spec.rank_by.iter().map(|o| o.to_string()).collect(),
    })
}

/// The engine objects (and worker counts) of a point as `run` flags; returns the objects.
fn push_engines(args: &mut Vec<String>, p: &PointInputs, dir: &Path) -> Vec<Map<String, Value>> {
    let mut raw_engines = Vec::new();
    match p.mode {
        Mode::Aggregated => {
            let mut e = p.engine.clone();
            absolute_paths(&mut e, dir);
            if !e.is_empty() {
                args.push("--extra-engine-args".into());
                args.push(compact(&e));
            }
            args.push("--num-workers".into());
            args.push(p.num_workers.to_string());
            raw_engines.push(e);
        }
        Mode::Disaggregated => {
            for (obj, role, flag, count_flag, n) in [
                (
                    &p.prefill,
                    "prefill",
                    "--prefill-engine-args",
                    "--num-prefill-workers",
                    p.num_prefill,
                ),
                (
                    &p.decode,
                    "decode",
                    "--decode-engine-args",
                    "--num-decode-workers",
                    p.num_decode,
                ),
            ] {
                let mut e = pool_object(&p.engine, obj, role);
                absolute_paths(&mut e, dir);
                args.push(flag.into());
                args.push(compact(&e));
                args.push(count_flag.into());
                args.push(n.to_string());
                raw_engines.push(e);
            }
        }
    }
    raw_engines
}

/// The spec's `require` bounds as text ("p99_ttft_ms <= 2000").
fn bounds_text(spec: &Spec) -> Vec<String> {
    spec.require
        .iter()
        .map(|b| {
            let mut s = b.metric.clone();
            if let Some(m) = b.min {
                s.push_str(&format!(" >= {m}"));
            }
            if let Some(m) = b.max {
                s.push_str(&format!(" <= {m}"));
            }
            s
        })
        .collect()
}

fn push_sla(args: &mut Vec<String>, sla: &Sla) {
    for (flag, v) in [
        ("--sla-ttft-ms", sla.ttft_ms),
        ("--sla-itl-ms", sla.itl_ms),
        ("--sla-e2e-ms", sla.e2e_ms),
    ] {
        if let Some(v) = v {
            args.push(flag.into());
            args.push(format!("{v}"));
        }
    }
}

/// The engine block size of a recorded configuration (the prefill pool's when disaggregated).
fn config_block_size(config: &Value) -> u32 {
    let t = &config["topology"];
    let e = if t.get("Aggregated").is_some() {
        &t["Aggregated"]["engine"]
    } else {
        &t["Disaggregated"]["prefill"]
    };
    e["block_size"].as_u64().unwrap_or(64) as u32
}

/// A report and the `dynosim run` flags that wrote it.
fn report_target(path: &Path, run_flags: &[String]) -> Result<Target, InputError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| input(format!("{}: cannot read: {e}", path.display())))?;
    let report: Map<String, Value> = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(m)) if m.contains_key("completed_requests") => m,
        _ => {
            return Err(input(format!(
                "{}: neither a sweep output folder nor a `dynosim run --report-json` report (a JSON object with completed_requests)",
                path.display()
            )))
        }
    };
    if run_flags.is_empty() {
        return Err(input(format!(
            "{}: a report does not record the deployment it simulated; give the `dynosim run` flags that wrote it after `--`, e.g. `dynosim deploy {} -o OUT -- TRACE --num-workers 4 ...`",
            path.display(),
            path.display()
        )));
    }
    let mut argv = vec!["dynosim".to_string(), "run".to_string()];
    argv.extend(run_flags.iter().cloned());
    let args: RunArgs = match Cli::try_parse_from(&argv) {
        Ok(Cli {
            command: Command::Run(a),
        }) => *a,
        Ok(_) => return Err(input("the flags after `--` are not `dynosim run` flags")),
        Err(e) => {
            let first = e.to_string();
            let line = first
                .lines()
                .next()
                .unwrap_or("")
                .trim_start_matches("error: ");
            return Err(input(format!("the `dynosim run` flags after `--`: {line}")));
        }
    };
    for (flag, set) in [
        ("--report-json", args.report_json.is_some()),
        ("--report-jsonl", args.report_jsonl.is_some()),
    ] {
        if set {
            return Err(input(format!(
                "the `dynosim run` flags after `--`: leave out {flag} (deploy writes no report)"
            )));
        }
    }
    let plan = crate::run::plan(&args.clone().with_env_defaults())
        .map_err(|e| input(format!("the `dynosim run` flags after `--`: {e}")))?;
    let config = serde_json::to_value(&plan.sim).unwrap_or(Value::Null);
    // The report's GPU accounting must be this deployment's.
    let gpus = plan.sim.topology.gpus();
    let engines = plan.sim.topology.engines();
    let (want_p, want_d) = if plan.sim.topology_is_disaggregated() {
        (
            engines[0].gpus_per_worker() as u64,
            engines[1].gpus_per_worker() as u64,
        )
    } else {
        (0, engines[0].gpus_per_worker() as u64)
    };
    let got = |k: &str| report.get(k).and_then(Value::as_u64);
    if got("prefill_gpus_per_worker").is_some_and(|g| g != want_p)
        || got("decode_gpus_per_worker").is_some_and(|g| g != want_d)
    {
        return Err(input(format!(
            "{}: the report's GPUs per worker (prefill {}, decode {}) are not those of the flags after `--` (prefill {want_p}, decode {want_d}): give the flags that wrote this report",
            path.display(),
            got("prefill_gpus_per_worker").unwrap_or(0),
            got("decode_gpus_per_worker").unwrap_or(0),
        )));
    }
    let parse_obj = |s: &Option<String>| -> Map<String, Value> {
        s.as_deref()
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default()
    };
    let raw_engines = if plan.sim.topology_is_disaggregated() {
        vec![
            parse_obj(&args.prefill_engine_args),
            parse_obj(&args.decode_engine_args),
        ]
    } else {
        vec![parse_obj(&args.extra_engine_args)]
    };
    // Trace paths as given are relative to the working directory: make them absolute.
    let mut run_args = run_flags.to_vec();
    let mut workload = plan.workload.clone();
    if let WorkloadSource::Trace { files, paths, .. } = &mut workload {
        for (f, p) in files.iter_mut().zip(paths.iter_mut()) {
            let abs = absolute(p);
            if let Some(slot) = run_args.iter_mut().find(|a| **a == *f) {
                *slot = abs.display().to_string();
            }
            *p = abs.clone();
            *f = abs.display().to_string();
        }
    }
    Ok(Target {
        label: format!("the `dynosim run` report {}", path.display()),
        source: json!({"kind": "report", "report": absolute(path).display().to_string()}),
        run_args,
        config,
        raw_engines,
        workload,
        report,
        sla: plan.sim.sla,
        gpus,
        status: None,
        rank: None,
        reason: None,
        require: Vec::new(),
        rank_by: Vec::new(),
    })
}
