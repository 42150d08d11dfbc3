//! The sweep's dispatch: load and check the spec (`--shard`, `--max-points`), say when nothing
//! is required, and hand the run to its planner — the capacity planner (`capacity`) for a spec
//! with `search.capacity`, else the grid planner (`grid`). The stages themselves live in their
//! own files: `expand` (points), `execute` (the executor), `output` (the folder and leaderboards).

use super::execute::Backend;
use super::expand::{check_shard, checked_size};
use super::spec::load_spec;
use super::{capacity, grid};
use super::{Stop, SweepError, SweepOptions, SweepOutcome};

/// Printed for a spec with neither `require` nor `search`.
pub(crate) const NOTHING_REQUIRED: &str = "dynosim: note: the spec has no `require`, so every \
    simulated point that served its load is `ok` (nothing is required); add bounds such as require: {p99_ttft_ms: \
    {max: 2000}} to tell deployments that serve the load from those that do not";

/// The whole sweep; `stop` says when to stop starting points (Ctrl-C) and how the process ends
/// after the grace period.
pub(crate) fn run_with(
    opts: &SweepOptions,
    backend: &Backend,
    stop: &Stop,
) -> Result<SweepOutcome, SweepError> {
    let mut spec = load_spec(&opts.spec)?;
    if let Some(path) = &opts.calibration {
        // `--calibration` wins over the spec's `calibration`.
        let file = crate::calibrate::CalibrationFile::load(path, "--calibration")?;
        spec.calibration = Some(std::sync::Arc::new((path.display().to_string(), file)));
    }
    let shard = check_shard(opts.shard)?;
    let total = checked_size(&spec, opts.max_points)?;
    for w in super::inert_axes::warnings(&spec) {
        eprintln!("dynosim: warning: {w}");
    }
    if spec.require.is_empty() && spec.search.is_none() && !opts.quiet {
        eprintln!("{NOTHING_REQUIRED}");
    }
    match &spec.search {
        Some(search) => capacity::run_search(opts, &spec, search, total, shard, backend, stop),
        None => grid::run_grid(opts, &spec, total, shard, backend, stop),
    }
}
