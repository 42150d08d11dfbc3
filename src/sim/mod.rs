//! The discrete-event simulation of one deployment: a pure function from (shared read-only
//! workload, configuration) to a report. No global state, no I/O; safe to call from many threads.

use crate::config::SimConfig;
use crate::error::SimError;
use crate::report::{Report, RequestRecord};
use crate::workload::Workload;

/// What one simulation produces.
#[derive(Debug, Clone)]
pub struct SimOutput {
    pub report: Report,
    /// Per-request records, sorted by (arrival, uuid); empty unless `cfg.record_requests`.
    pub records: Vec<RequestRecord>,
}

/// Simulates one configuration over a workload.
pub fn simulate(workload: &Workload, cfg: &SimConfig) -> Result<SimOutput, SimError> {
    let _ = (workload, cfg);
    todo!("simulation")
}
