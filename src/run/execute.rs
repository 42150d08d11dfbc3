//! Runs a validated [`RunPlan`]: refuses unwritable report paths and workloads that cannot fit
//! in memory, loads the workload, simulates, writes the JSON/JSONL reports and prints the table.
//!
//! Validation of the flags is done by the time a plan exists; this module adds no flag rules.

use super::{err, RunPlan, WorkloadSource};
use crate::config::limits::{
    check_memory, check_workload_memory, memory_budget, memory_floor, MemoryPart, WorkloadShape,
};
use crate::config::{SimConfig, Topology};
use crate::error::InputError;
use anyhow::Context;
use std::path::{Path, PathBuf};

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
        WorkloadSource::Synthetic { .. } => synthetic_memory_hint(part, shape.stored_blocks > 0),
        WorkloadSource::Trace { .. } => trace_memory_hint(part),
    };
    if let WorkloadSource::Synthetic { spec, .. } = &plan.workload {
        // Checked before generating: the workload itself may be what does not fit.
        let shape = WorkloadShape::of_synthetic(spec, block_size);
        let floor = memory_floor(&shape, &plan.sim);
        check_memory(&floor, budget, hint(&shape, floor.largest())).map_err(err)?;
    }
    let workload = plan.workload.load()?;
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
    let mut out = crate::sim::simulate(&workload, &plan.sim)?;
    if let Some(e) = timing_failure(&plan.sim) {
        anyhow::bail!(e);
    }
    if let Some(prices) = &plan.gpu_prices {
        super::price::price_report(&mut out.report, &plan.sim.topology, prices);
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
