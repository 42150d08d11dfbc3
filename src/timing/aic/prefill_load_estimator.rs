//! DynoSim's AIC prefill-load estimator (`router_prefill_load_model: "aic"`, spec §6.2): the KV
//! router's handle on AIC latency, predicting one routed request's prefill duration. It shares
//! the loaded engine and the memo of AIC timing of the same engine (built by
//! `TimingLoader::aic_latency`).
//!
//! Owns: the handle and its duration arithmetic. Does not own: how a target's load decays over
//! the predictions (`router::prefill_load`).

use super::{AicEngineId, AicLatency};
use serde::{Serialize, Serializer};
use std::sync::Arc;
use std::time::Duration;

/// DynoSim's AIC prefill-load estimator: a loaded AIC engine (the same one, with the same memo,
/// as AIC timing when the parameters are equal). Compared and serialised as its engine.
#[derive(Clone)]
pub struct PrefillLoadEstimator(Arc<AicLatency>);

impl PrefillLoadEstimator {
    pub fn new(latency: Arc<AicLatency>) -> Self {
        PrefillLoadEstimator(latency)
    }

    /// The engine the estimates come from.
    pub fn id(&self) -> &AicEngineId {
        self.0.id()
    }

    /// The predicted prefill time, in nanoseconds, of one request of `isl` prompt tokens whose
    /// first `prefix` are cached; `None` when AIC cannot predict it (DynoSim then tracks the
    /// request without a duration and warns).
    pub fn duration_ns(&self, isl: u64, prefix: u64) -> Option<u64> {
        let ms = self.0.load_estimate_ms(isl, prefix).ok()?;
        // DynoSim turns the estimate into a `Duration` the same way.
        let d = Duration::try_from_secs_f64(ms / 1000.0).ok()?;
        Some(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

impl PartialEq for PrefillLoadEstimator {
    fn eq(&self, other: &Self) -> bool {
        self.id() == other.id()
    }
}

impl std::fmt::Debug for PrefillLoadEstimator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("PrefillLoadEstimator")
            .field(self.id())
            .finish()
    }
}

impl Serialize for PrefillLoadEstimator {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.id().serialize(s)
    }
}
