//! Synthetic workloads (spec §3): the simple path (unique random prompts) and the workload path
//! (sessions, shared-prefix groups, think time), seeded with rand 0.9 `StdRng::seed_from_u64`.

use serde::{Deserialize, Serialize};

/// How first-turn arrivals of a synthetic workload are timed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum SyntheticArrival {
    /// Closed loop (`--replay-concurrency`): no timestamps.
    ClosedLoop,
    /// Poisson with this rate in requests/s (`--request-rate`).
    PoissonRate(f64),
    /// Constant gap in ms (`--arrival-interval-ms`); 0 = burst at t=0.
    IntervalMs(f64),
}

/// The synthetic-workload flags of `dynosim run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyntheticSpec {
    pub input_tokens: u32,
    pub output_tokens: u32,
    /// Sessions (= requests when `turns_per_session == 1`).
    pub request_count: u32,
    pub arrival: SyntheticArrival,
    pub arrival_seed: u64,
    pub turns_per_session: u32,
    pub shared_prefix_ratio: f64,
    pub num_prefix_groups: u32,
    pub inter_turn_delay_ms: f64,
}

/// Generates the workload. `engine_block_size` is the hash-id block size of the workload path
/// (spec §3.2: the engine's, the prefill pool's when disaggregated).
pub fn generate(
    spec: &SyntheticSpec,
    engine_block_size: u32,
) -> Result<super::Workload, crate::error::InputError> {
    let _ = (spec, engine_block_size);
    todo!("synthetic workload generation")
}
