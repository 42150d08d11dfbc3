//! The sweep's leaf types: its options (`SweepOptions`), what it did (`SweepOutcome`, with the
//! exit code it leads to), why it could not be done (`SweepError`), and how it is stopped early
//! (`Stop`). Plain data every stage shares; this module imports no stage.

use super::record::{self, PointRecord};
use crate::error::InputError;
use std::path::PathBuf;

/// Default of `--max-points`.
pub const DEFAULT_MAX_POINTS: u64 = 1_000_000;
/// Default of `--progress-every`.
pub const DEFAULT_PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

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
    /// `--print-output-dir`: print the folder the sweep would write to; write nothing.
    pub print_output_dir: bool,
    /// `--max-points N`: refuse a larger grid before expanding it.
    pub max_points: u64,
    /// `--quiet`: no progress bar, no table.
    pub quiet: bool,
    /// Stop a simulation once it certainly misses a `require` bound (off: `--no-early-stop`).
    pub early_stop: bool,
    /// `--stop-grace S`: after Ctrl-C or SIGTERM, how long running points may take to finish
    /// before the leaderboards are written without them and the process exits (none: wait).
    pub stop_grace: Option<std::time::Duration>,
    /// `--progress-every S`: seconds between plain progress lines when stderr is not a terminal.
    pub progress_every: std::time::Duration,
    /// `--calibration FILE`: the calibration every point takes (over the spec's `calibration`).
    pub calibration: Option<PathBuf>,
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
            print_output_dir: false,
            max_points: DEFAULT_MAX_POINTS,
            quiet: false,
            early_stop: true,
            stop_grace: None,
            progress_every: DEFAULT_PROGRESS_EVERY,
            calibration: None,
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
    /// Points that did not serve their load: queue still growing at the window's end, or stalled.
    pub overloaded: u64,
    pub stalled: u64,
    /// Points taken from an earlier run (`--resume`).
    pub reused: u64,
    /// Points not simulated (interrupted, or a dry run).
    pub not_run: u64,
    /// Ctrl-C or SIGTERM stopped the sweep early.
    pub interrupted: bool,
    /// The signal that stopped it (none: Ctrl-C in tests, or not stopped).
    pub signal: Option<i32>,
    /// The output folder (none for a dry run).
    pub output: Option<PathBuf>,
}

impl SweepOutcome {
    /// Adds each record's status to its count.
    pub(crate) fn count_statuses(&mut self, records: &[PointRecord]) {
        use record::Status;
        for r in records {
            *match r.status {
                Status::Ok => &mut self.ok,
                Status::Infeasible => &mut self.infeasible,
                Status::Skipped => &mut self.skipped,
                Status::Invalid => &mut self.invalid,
                Status::Failed => &mut self.failed,
                Status::BelowRange => &mut self.below_range,
                Status::AboveRange => &mut self.above_range,
                Status::Overloaded => &mut self.overloaded,
                Status::Stalled => &mut self.stalled,
            } += 1;
        }
    }

    /// 128 + the signal when stopped by one (130 for Ctrl-C, 143 for SIGTERM), 1 when any point
    /// failed, else 0.
    pub fn exit_code(&self) -> i32 {
        if self.interrupted {
            crate::signals::exit_code_for(self.signal.unwrap_or(2))
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
        if self.overloaded + self.stalled > 0 {
            s.push_str(&format!(
                ", {} overloaded, {} stalled",
                self.overloaded, self.stalled
            ));
        }
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

/// How a sweep is stopped early (Ctrl-C, SIGTERM), and how the process ends when the points
/// still running outlast `--stop-grace`: the sweep only decides the exit code; `end_process`
/// (`signals::end_process` in `dynosim sweep`) ends the process with it.
pub(crate) struct Stop<'a> {
    /// Whether to stop starting points.
    pub requested: &'a (dyn Fn() -> bool + Sync),
    /// Called with the exit code once the leaderboards of the finished points are written after
    /// the grace period, while points still run.
    pub end_process: fn(i32) -> !,
}
