//! Sweeps: a YAML spec of a workload and axes to vary, expanded into a grid of points, each
//! simulated independently on a rayon pool over the shared read-only workload, ranked into
//! leaderboards. Shards of one grid run on different machines and are merged afterwards.
//!
//! Stages, in data-flow order: expand (`spec`: YAML -> validated spec and its grid; `resolve`:
//! point -> `SimConfig` + workload + verdict), plan (`runner`: which simulations to run — every
//! grid point once, or a capacity search's probes), execute (`execute`: the units of work on a
//! rayon pool), record (`record`: points.jsonl and the output folder's files), rank
//! (`leaderboard`: feasibility, ranking, Pareto), write (`leaderboard`: CSV/JSON), and `merge`.
//! `values` (how values are written as text) is the leaf every stage shares.
//! This module owns no simulation logic: it calls `sim::simulate` like `dynosim run` does.

pub mod capacity;
pub mod execute;
pub mod leaderboard;
pub mod merge;
pub mod record;
pub mod resolve;
pub mod runner;
pub mod spec;
pub mod values;

use crate::error::InputError;
use std::path::{Path, PathBuf};

/// Default of `--max-points`.
pub const DEFAULT_MAX_POINTS: u64 = 1_000_000;

/// The options of `dynosim sweep`.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepOptions {
    /// The spec file.
    pub spec: PathBuf,
    /// `-o DIR`: overrides the spec's `output`.
    pub output: Option<PathBuf>,
    /// `-j N`: worker threads (default: all cores).
    pub jobs: Option<usize>,
    /// `--resume`: skip points already in `points.jsonl` with the same configuration hash.
    pub resume: bool,
    /// `--shard K/N`: run only the points with `id % N == K`.
    pub shard: Option<(u32, u32)>,
    /// `--dry-run`: print the expanded grid and the count; write nothing.
    pub dry_run: bool,
    /// `--max-points N`: refuse a larger grid before expanding it.
    pub max_points: u64,
    /// `--quiet`: no progress bar, no table.
    pub quiet: bool,
    /// Stop a simulation once it certainly misses a `require` bound (off: `--no-early-stop`).
    pub early_stop: bool,
}

impl SweepOptions {
    /// Options with every flag at its default.
    pub fn new(spec: impl Into<PathBuf>) -> Self {
        SweepOptions {
            spec: spec.into(),
            output: None,
            jobs: None,
            resume: false,
            shard: None,
            dry_run: false,
            max_points: DEFAULT_MAX_POINTS,
            quiet: false,
            early_stop: true,
        }
    }
}

/// What a sweep did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SweepOutcome {
    /// Points in this run (the shard's when sharded).
    pub points: u64,
    pub ok: u64,
    pub infeasible: u64,
    pub skipped: u64,
    pub invalid: u64,
    pub failed: u64,
    /// Capacity search: points that miss a bound at the knob's low / meet every bound at its high.
    pub below_range: u64,
    pub above_range: u64,
    /// Points taken from an earlier run (`--resume`).
    pub reused: u64,
    /// Points not simulated (interrupted, or a dry run).
    pub not_run: u64,
    /// Ctrl-C stopped the sweep early.
    pub interrupted: bool,
    /// The output folder (none for a dry run).
    pub output: Option<PathBuf>,
}

impl SweepOutcome {
    /// 130 when interrupted, 1 when any point failed, else 0.
    pub fn exit_code(&self) -> i32 {
        if self.interrupted {
            130
        } else if self.failed > 0 {
            1
        } else {
            0
        }
    }

    /// One line for the console.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} points: {} ok, {} infeasible, {} skipped, {} invalid, {} failed",
            self.points, self.ok, self.infeasible, self.skipped, self.invalid, self.failed
        );
        if self.below_range + self.above_range > 0 {
            s.push_str(&format!(
                ", {} below_range, {} above_range",
                self.below_range, self.above_range
            ));
        }
        if self.reused > 0 {
            s.push_str(&format!(" ({} from the earlier run)", self.reused));
        }
        if let Some(o) = &self.output {
            s.push_str(&format!(
                "; leaderboard: {}",
                o.join(record::CSV_FILE).display()
            ));
        }
        if self.interrupted {
            s.push_str(&format!(
                "\ninterrupted: {} points not run; finish with --resume",
                self.not_run
            ));
        }
        s
    }
}

/// Why a sweep or a merge could not be done.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// A bad spec, option or input folder (exit 2), found before anything ran.
    #[error("{0}")]
    Input(#[from] InputError),
    /// Results could not be written (exit 1).
    #[error("{0}")]
    Io(String),
}

impl SweepError {
    pub fn exit_code(&self) -> i32 {
        match self {
            SweepError::Input(_) => 2,
            SweepError::Io(_) => 1,
        }
    }
}

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
/// Ctrl-C stops starting new points; the running ones finish and the leaderboards are written.
pub fn run_sweep(opts: &SweepOptions) -> Result<SweepOutcome, SweepError> {
    if opts.dry_run {
        return runner::run_with(opts, &runner::REAL_BACKEND, &|| false);
    }
    let baseline = runner::watch_sigint();
    runner::run_with(opts, &runner::REAL_BACKEND, &move || {
        runner::sigint_since(baseline)
    })
}

/// `dynosim merge DIR... -o OUT`: the union of shard folders of one spec, with its leaderboards.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<(), SweepError> {
    merge::merge_dirs(dirs, out, false).map(|_| ())
}

#[cfg(test)]
mod tests;
