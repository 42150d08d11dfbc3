//! The execute stage: runs units of work (one simulation of a grid point, or every probe of
//! one point's capacity search) on a rayon pool, in the order the planner chose, handing each
//! finished record to `done` (which appends it to `points.jsonl` and moves the progress bar).
//!
//! The executor knows nothing about what a unit does; the order units finish in never reaches
//! a result except through `points.jsonl`, whose order does not matter.

use super::record::PointRecord;
use super::SweepError;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs `work(i)` for each `i` of `order` on `jobs` threads (all cores when `None`), stopping
/// to start new units once `stop()` says so or `done` fails. Returns the finished records in
/// finishing order.
pub(crate) fn execute(
    jobs: Option<usize>,
    order: &[usize],
    stop: &(dyn Fn() -> bool + Sync),
    work: &(dyn Fn(usize) -> PointRecord + Sync),
    done: &(dyn Fn(&PointRecord) -> Result<(), String> + Sync),
) -> Result<Vec<PointRecord>, SweepError> {
    // Worker threads get a main thread's stack, so a point that runs under `dynosim run` also
    // runs here.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.unwrap_or(0))
        .stack_size(8 << 20)
        .build()
        .map_err(|e| SweepError::Io(format!("cannot start worker threads: {e}")))?;
    let next = AtomicUsize::new(0);
    let finished: Mutex<Vec<PointRecord>> = Mutex::new(Vec::with_capacity(order.len()));
    let failure: Mutex<Option<String>> = Mutex::new(None);
    let threads = pool.current_num_threads().max(1);
    pool.scope(|s| {
        for _ in 0..threads {
            s.spawn(|_| loop {
                if stop() || failure.lock().is_some() {
                    break;
                }
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(&unit) = order.get(i) else {
                    break;
                };
                let rec = work(unit);
                if let Err(e) = done(&rec) {
                    failure.lock().get_or_insert(e);
                }
                finished.lock().push(rec);
            });
        }
    });
    if let Some(e) = failure.into_inner() {
        return Err(SweepError::Io(e));
    }
    Ok(finished.into_inner())
}
