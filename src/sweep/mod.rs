//! Sweeps: a YAML spec of a workload and axes to vary, expanded into a grid of points, each
//! simulated independently on a rayon pool over the shared read-only workload, ranked into
//! leaderboards. Shards of one grid run on different machines and are merged afterwards.
//!
//! Stages, in data-flow order: `spec` (YAML -> validated spec and its grid); `runner` (the
//! dispatch: spec checks, then one of two planners); `expand` (the grid's points, resolved by
//! `resolve`: point -> `SimConfig` + workload + verdict; the dry-run listing); the planners, peers
//! that never import each other — `grid` (every point once) and `capacity` (a capacity search's
//! probes per point); `execute` (the one executor both use: `Backend`, `run_one`, reuse of
//! earlier results, early-stop bounds, the rayon pool); `output` (the output folder: prepared
//! before anything runs, leaderboards written at the end); `record` (points.jsonl and the
//! folder's files); `served` (whether a simulated point served its load: window-based rates,
//! `overloaded`/`stalled`, the few-requests note); `leaderboard` (feasibility, ranking, Pareto;
//! CSV/JSON); and `merge`.
//! `types` holds the leaves every stage shares (`SweepOptions`, `SweepOutcome`, `SweepError`);
//! `values` (how values are written as text) is shared too; `columns` orders the
//! leaderboard's columns and rounds its numbers for people. Outputs for people: `console` (the
//! table a sweep prints), `markdown` (leaderboard.md), `html` (report.html); `folder` reads a
//! finished output folder back (`dynosim report`, `compare`).
//! `cost` checks that every point's GPUs have a price and adds the cost columns (`spec.cost`).
//! `inert_axes` warns about axes that cannot change the simulation (AIC keys without
//! `aic_backend`). Around them: `archive` (what `--resume` keeps of earlier runs) and `progress` (the bar, or
//! plain lines when stderr is not a terminal).
//! This module owns no simulation logic: it calls `sim::simulate` like `dynosim run` does.

pub(crate) mod archive;
pub(crate) mod capacity;
pub(crate) mod columns;
pub(crate) mod console;
pub(crate) mod cost;
pub(crate) mod execute;
pub(crate) mod expand;
pub mod folder;
pub(crate) mod grid;
pub(crate) mod html;
pub(crate) mod inert_axes;
pub(crate) mod leaderboard;
pub(crate) mod markdown;
pub mod merge;
pub(crate) mod output;
pub(crate) mod progress;
pub(crate) mod record;
pub mod resolve;
pub(crate) mod runner;
pub(crate) mod served;
pub mod spec;
pub(crate) mod types;
pub mod values;

pub(crate) use types::Stop;
pub use types::{
    SweepError, SweepOptions, SweepOutcome, DEFAULT_MAX_POINTS, DEFAULT_PROGRESS_EVERY,
};

use std::path::{Path, PathBuf};

/// Parses `--shard K/N` (for the CLI's value parser).
pub fn parse_shard(s: &str) -> Result<(u32, u32), String> {
    let err = || format!("expected K/N with 0 <= K < N (e.g. 0/4), found \"{s}\"");
    let (k, n) = s.split_once('/').ok_or_else(err)?;
    let k: u32 = k.trim().parse().map_err(|_| err())?;
    let n: u32 = n.trim().parse().map_err(|_| err())?;
    if n == 0 || k >= n {
        return Err(err());
    }
    Ok((k, n))
}

/// `dynosim sweep`: validates the whole spec, then runs the grid (or lists it with `dry_run`).
/// Ctrl-C or SIGTERM stops starting new points; the running ones finish (within
/// `opts.stop_grace`) and the leaderboards are written.
pub fn run_sweep(opts: &SweepOptions) -> Result<SweepOutcome, SweepError> {
    if opts.print_output_dir {
        let spec = spec::load_spec(&opts.spec)?;
        println!("{}", output::output_dir(&spec, opts).display());
        return Ok(SweepOutcome::default());
    }
    if opts.dry_run {
        let stop = Stop {
            requested: &|| false,
            end_process: crate::signals::end_process,
        };
        return runner::run_with(opts, &execute::REAL_BACKEND, &stop);
    }
    let baseline = crate::signals::watch(crate::signals::OnSignal::Graceful);
    let requested = move || crate::signals::stop_requested(baseline);
    let stop = Stop {
        requested: &requested,
        end_process: crate::signals::end_process,
    };
    let mut outcome = runner::run_with(opts, &execute::REAL_BACKEND, &stop)?;
    if outcome.interrupted {
        outcome.signal = crate::signals::last_signal();
    }
    Ok(outcome)
}

/// `dynosim merge DIR... -o OUT`: the union of shard folders of one spec, with its leaderboards.
/// Returns the exit code: 0, or 3 when points are missing (the output is then marked partial)
/// unless `allow_partial`.
pub fn merge(dirs: &[PathBuf], out: &Path, allow_partial: bool) -> Result<i32, SweepError> {
    let (_, missing) = merge::merge_dirs(dirs, out, false)?;
    Ok(if missing.is_empty() || allow_partial {
        0
    } else {
        merge::PARTIAL_EXIT_CODE
    })
}

#[cfg(test)]
mod tests;
