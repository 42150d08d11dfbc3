//! The `dynosim validate` command: flags -> options, inputs read, points simulated, and the
//! output folder written: `validation.csv` (one row per point, never dropped), `validation.json`
//! (the options, the groups' figures and every point), `validation.html` (the charts); then the
//! console summary per group.
//!
//! Nothing half-written: every flag and input is checked before anything is simulated or
//! created, and the files are written under temporary names and renamed into place only when
//! all three are written (a failure removes them, and the folder when it was created here).

use super::deployment::{DispatchOverhead, KvCacheDtype, MemoryModel};
use super::launch::LaunchSettings;
use super::points::{read_inputs, FlagDeployment, MeasuredPoint};
use super::summary::{render, summarize, GroupSummary};
use super::{Corrections, Options, PointResult, Validator};
use crate::cli::ValidateArgs;
use crate::config::DpRankRouting;
use crate::error::InputError;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

pub const CSV_FILE: &str = "validation.csv";
pub const JSON_FILE: &str = "validation.json";
pub const HTML_FILE: &str = "validation.html";

/// What one `dynosim validate` found.
#[derive(Debug, Clone)]
pub struct ValidateOutcome {
    pub points: Vec<MeasuredPoint>,
    pub results: Vec<PointResult>,
    pub groups: Vec<GroupSummary>,
}

/// The options the flags give, checked.
pub fn options(args: &ValidateArgs) -> Result<Options, InputError> {
    let r = args.options.random_range_ratio;
    if !(r.is_finite() && r > 0.0 && r <= 1.0) {
        return Err(InputError::new(format!(
            "--random-range-ratio must be in (0, 1], got {r}"
        )));
    }
    if args.options.prompts_per_concurrency < 1 {
        return Err(InputError::new(
            "--prompts-per-concurrency must be >= 1, got 0",
        ));
    }
    let kv = KvCacheDtype::parse(&args.options.kv_cache_dtype).ok_or_else(|| {
        InputError::new(format!(
            "--kv-cache-dtype must be auto, model, fp8 or bfloat16, got {:?}",
            args.options.kv_cache_dtype
        ))
    })?;
    let memory_model = MemoryModel::parse(&args.options.memory_model).ok_or_else(|| {
        InputError::new(format!(
            "--memory-model must be server or aic, got {:?}",
            args.options.memory_model
        ))
    })?;
    let monotone_decode = match args.options.decode_timing.as_str() {
        "monotone" => true,
        "aic" => false,
        other => {
            return Err(InputError::new(format!(
                "--decode-timing must be monotone or aic, got {other:?}"
            )))
        }
    };
    let fused_mixed_pass = match args.options.mixed_pass.as_str() {
        "separate" => false,
        "fused" => true,
        other => {
            return Err(InputError::new(format!(
                "--mixed-pass must be separate or fused, got {other:?}"
            )))
        }
    };
    let dispatch = DispatchOverhead::parse(&args.dispatch_overhead).ok_or_else(|| {
        InputError::new(format!(
            "--dispatch-overhead must be engines, vllm-sglang, aic, all or none, got {:?}",
            args.dispatch_overhead
        ))
    })?;
    let launch = LaunchSettings::parse(&args.options.launch_settings).ok_or_else(|| {
        InputError::new(format!(
            "--launch-settings must be inferencex, inferencex-mtp, inferencex-plain or none, \
             got {:?}",
            args.options.launch_settings
        ))
    })?;
    let dp_rank_routing = DpRankRouting::parse(&args.options.dp_rank_routing).ok_or_else(|| {
        InputError::new(format!(
            "--dp-rank-routing must be engine or router, got {:?}",
            args.options.dp_rank_routing
        ))
    })?;
    if args.options.jobs == Some(0) {
        return Err(InputError::new("--jobs must be >= 1, got 0"));
    }
    Ok(Options {
        prompts_per_concurrency: args.options.prompts_per_concurrency,
        random_range_ratio: r,
        kv_cache_dtype: kv,
        memory_model,
        monotone_decode,
        fused_mixed_pass,
        dispatch_overhead: dispatch,
        launch,
        dp_rank_routing,
        max_num_batched_tokens: 8192,
        seed: args.options.seed,
        jobs: args.options.jobs,
    })
}

pub(crate) fn flags(args: &ValidateArgs) -> FlagDeployment {
    FlagDeployment {
        extra_engine_args: args.deployment.extra_engine_args.clone(),
        prefill_engine_args: args.deployment.prefill_engine_args.clone(),
        decode_engine_args: args.deployment.decode_engine_args.clone(),
        num_workers: args.deployment.num_workers,
        num_prefill_workers: args.deployment.num_prefill_workers,
        num_decode_workers: args.deployment.num_decode_workers,
        router_mode: args.deployment.router_mode,
        router_config: args.deployment.router_config.clone(),
    }
}

/// Refuses an output folder that can never be written (a file, or under a file).
fn check_output_dir(dir: &Path) -> Result<(), InputError> {
    if dir.exists() && !dir.is_dir() {
        return Err(InputError::new(format!(
            "-o {}: is a file, expected a folder",
            dir.display()
        )));
    }
    let mut ancestor = dir.parent();
    while let Some(a) = ancestor.filter(|a| !a.as_os_str().is_empty()) {
        match std::fs::metadata(a) {
            Ok(m) if m.is_dir() => return Ok(()),
            Ok(_) => {
                return Err(InputError::new(format!(
                    "-o {}: cannot create it because {} is not a folder",
                    dir.display(),
                    a.display()
                )))
            }
            Err(_) => ancestor = a.parent(),
        }
    }
    Ok(())
}

/// Runs `dynosim validate`.
pub fn run(args: &ValidateArgs) -> anyhow::Result<ValidateOutcome> {
    let started = std::time::Instant::now();
    let args = &super::deployment_from::apply(args)?;
    let opts = options(args)?;
    check_output_dir(&args.output_dir)?;
    let points = read_inputs(&args.measured, &flags(args))?;
    let validator = Validator::new(opts.clone())?;
    validator.check_catalog(&points)?;
    let corrections = match &args.calibration {
        None => Corrections::none(),
        Some(path) => {
            let file = crate::calibrate::CalibrationFile::load(path, "--calibration")?;
            let (c, notes) = super::calibration::corrections(&validator, &points, &file);
            for line in notes {
                eprintln!("calibration {}: {line}", path.display());
            }
            c
        }
    };
    let results = validator.simulate(&points, &corrections);
    let groups = summarize(&points, &results);
    let files = [
        (CSV_FILE, csv_text(&points, &results)?),
        (JSON_FILE, json_text(&opts, &points, &results, &groups)),
        (HTML_FILE, super::html::page(&points, &results, &groups)),
    ];
    write_all(&args.output_dir, &files)?;
    if !args.options.quiet {
        print!("{}", render(&groups));
        let stats = validator.aic_stats();
        if stats.loaded > 0 {
            println!("{}", stats.summary());
        }
        let count = |s: super::Status| results.iter().filter(|r| r.status == s).count();
        let noted = results.iter().filter(|r| !r.notes().is_empty()).count();
        println!(
            "{} points: {} ok, {} failed, {} unsupported{} in {:.1} s; results: {}",
            results.len(),
            count(super::Status::Ok),
            count(super::Status::Failed),
            count(super::Status::Unsupported),
            if noted > 0 {
                format!(" ({noted} simulated other than given: see the notes column)")
            } else {
                String::new()
            },
            started.elapsed().as_secs_f64(),
            args.output_dir.join(CSV_FILE).display()
        );
    }
    Ok(ValidateOutcome {
        points,
        results,
        groups,
    })
}

/// Writes the files under temporary names, then renames them; on failure nothing is left.
fn write_all(dir: &Path, files: &[(&str, String)]) -> anyhow::Result<()> {
    let created = missing_folders(dir);
    let undo = |tmps: &[PathBuf]| {
        for t in tmps {
            let _ = std::fs::remove_file(t);
        }
        for d in &created {
            let _ = std::fs::remove_dir(d);
        }
    };
    if let Err(e) = std::fs::create_dir_all(dir) {
        undo(&[]);
        anyhow::bail!("cannot create {}: {e}", dir.display());
    }
    let mut tmps = Vec::new();
    for (name, text) in files {
        let tmp = crate::output_file::temp_sibling(&dir.join(name));
        if let Err(e) = std::fs::write(&tmp, text) {
            tmps.push(tmp);
            undo(&tmps);
            anyhow::bail!("cannot write {}: {e}", dir.join(name).display());
        }
        tmps.push(tmp);
    }
    for ((name, _), tmp) in files.iter().zip(&tmps) {
        if let Err(e) = std::fs::rename(tmp, dir.join(name)) {
            undo(&tmps);
            anyhow::bail!("cannot write {}: {e}", dir.join(name).display());
        }
    }
    Ok(())
}

/// The folders on `dir`'s way (itself included) that do not exist yet, deepest first.
fn missing_folders(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut d = Some(dir);
    while let Some(x) = d.filter(|x| !x.as_os_str().is_empty() && !x.exists()) {
        out.push(x.to_path_buf());
        d = x.parent();
    }
    out
}

/// The CSV's columns, in order (units in docs/validation.md).
pub const CSV_COLUMNS: &[&str] = &[
    "id",
    "status",
    "reason",
    "notes",
    "system",
    "backend",
    "backend_version",
    "backend_version_used",
    "model",
    "mode",
    "isl",
    "osl",
    "concurrency",
    "request_count",
    "engine_args",
    "measured_ttft_ms",
    "predicted_ttft_ms",
    "ttft_error_pct",
    "measured_tpot_ms",
    "predicted_tpot_ms",
    "tpot_error_pct",
    "predicted_median_ttft_ms",
    "predicted_p99_ttft_ms",
    "predicted_median_tpot_ms",
    "predicted_mean_itl_ms",
    "predicted_mean_e2e_latency_ms",
    "predicted_request_throughput_rps",
    "predicted_output_throughput_tok_s",
    "predicted_completed_requests",
    "predicted_duration_ms",
    "run_command",
    "origin",
];

fn num(v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => {
            let r = (x * 10_000.0).round() / 10_000.0;
            format!("{r}")
        }
        _ => String::new(),
    }
}

/// One point's values, in [`CSV_COLUMNS`] order.
fn row(p: &MeasuredPoint, r: &PointResult) -> Vec<String> {
    let pr = r.predicted.as_ref();
    let f = |g: fn(&super::Predicted) -> f64| num(pr.map(g));
    let recipe = r.recipe.as_ref();
    vec![
        p.id.clone(),
        r.status.name().into(),
        r.reason.clone(),
        r.notes().join("; "),
        p.system.clone(),
        p.backend.clone(),
        p.backend_version.clone(),
        r.backend_version_used.clone(),
        p.model.clone(),
        p.mode.clone(),
        p.workload.isl.to_string(),
        p.workload.osl.to_string(),
        p.workload
            .concurrency
            .map_or(String::new(), |c| c.to_string()),
        recipe.map_or(String::new(), |x| x.request_count.to_string()),
        recipe.map_or(String::new(), |x| x.engine_args_json()),
        num(p.measured_ttft_ms),
        f(|x| x.ttft_ms),
        num(r.ttft_error_pct),
        num(p.measured_tpot_ms),
        f(|x| x.tpot_ms),
        num(r.tpot_error_pct),
        f(|x| x.median_ttft_ms),
        f(|x| x.p99_ttft_ms),
        f(|x| x.median_tpot_ms),
        f(|x| x.mean_itl_ms),
        f(|x| x.mean_e2e_latency_ms),
        f(|x| x.request_throughput_rps),
        f(|x| x.output_throughput_tok_s),
        pr.map_or(String::new(), |x| x.completed_requests.to_string()),
        f(|x| x.duration_ms),
        recipe.map_or(String::new(), |x| x.command_line()),
        p.origin.clone(),
    ]
}

pub fn csv_text(points: &[MeasuredPoint], results: &[PointResult]) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(CSV_COLUMNS)?;
    for r in results {
        w.write_record(row(&points[r.index], r))?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

pub fn json_text(
    opts: &Options,
    points: &[MeasuredPoint],
    results: &[PointResult],
    groups: &[GroupSummary],
) -> String {
    let pts: Vec<Value> = results
        .iter()
        .map(|r| {
            let p = &points[r.index];
            let mut o = serde_json::Map::new();
            for (k, v) in CSV_COLUMNS.iter().zip(row(p, r)) {
                o.insert(k.to_string(), Value::String(v));
            }
            // Numbers as numbers, the engine args as an object, the full recipe.
            for (k, v) in [
                ("measured_ttft_ms", json!(p.measured_ttft_ms)),
                ("measured_tpot_ms", json!(p.measured_tpot_ms)),
                ("ttft_error_pct", json!(r.ttft_error_pct)),
                ("tpot_error_pct", json!(r.tpot_error_pct)),
                ("isl", json!(p.workload.isl)),
                ("osl", json!(p.workload.osl)),
                ("concurrency", json!(p.workload.concurrency)),
                ("notes", json!(r.notes())),
                ("predicted", json!(r.predicted)),
                ("recipe", json!(r.recipe)),
            ] {
                o.insert(k.to_string(), v);
            }
            for k in CSV_COLUMNS.iter().filter(|k| k.starts_with("predicted_")) {
                o.remove(*k);
            }
            o.remove("request_count");
            o.remove("engine_args");
            Value::Object(o)
        })
        .collect();
    let v = json!({
        "dynosim_version": env!("CARGO_PKG_VERSION"),
        "options": {
            "prompts_per_concurrency": opts.prompts_per_concurrency,
            "random_range_ratio": opts.random_range_ratio,
            "kv_cache_dtype": format!("{:?}", opts.kv_cache_dtype).to_ascii_lowercase(),
            "memory_model": opts.memory_model.name(),
            "decode_timing": if opts.monotone_decode { "monotone" } else { "aic" },
            "mixed_pass": if opts.fused_mixed_pass { "fused" } else { "separate" },
            "dispatch_overhead": opts.dispatch_overhead.name(),
            "launch_settings": opts.launch.name(),
            "dp_rank_routing": opts.dp_rank_routing.name(),
            "max_num_batched_tokens": opts.max_num_batched_tokens,
            "seed": opts.seed,
        },
        "groups": groups,
        "points": pts,
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}
