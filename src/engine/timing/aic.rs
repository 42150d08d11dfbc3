//! AIConfigurator timing (spec §4.9.4): each pass's time comes from AIC's Rust estimator for one
//! model, GPU system, backend, version and parallelism. Prefill is
//! `predict_prefill(batch, isl − prefix, prefix)` (the estimator takes the full span and the
//! prefix), decode `predict_decode(batch, mean context, 2)`; the ≥ 1 ms decode clamp and the
//! speed-up ratios are the caller's, as for the other models.
//!
//! Estimates are memoised per engine (shared by every simulation using the engine; each key has
//! one answer, so the contents never depend on which simulation asked first). Decode is called
//! once per pass with a context that grows by one token a pass, so exact memoisation would miss
//! almost every time (~250 000 distinct (batch, context) pairs on the bundled trace, ~7 µs
//! each); instead decode is tabulated: the estimator is evaluated at contexts that are multiples
//! of [`DECODE_CONTEXT_STEP`] and linearly interpolated in between (exact on the grid points;
//! between them the estimator's own curve is smooth at this scale: the measured effect on the
//! reference comparisons is in the README).

use super::LatencyModel;
use crate::aic::LoadedEngine;
use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// Context spacing of the decode table, in tokens.
pub const DECODE_CONTEXT_STEP: u64 = 64;

/// AIC timing over one shared loaded engine.
pub struct AicLatency {
    engine: Arc<LoadedEngine>,
    prefill: RwLock<FxHashMap<(u64, u64, u64), f64>>,
    decode: RwLock<FxHashMap<(u64, u64), f64>>,
    /// The first estimator error: DynoSim makes these fatal, so the run checks it afterwards.
    error: Mutex<Option<String>>,
}

impl AicLatency {
    pub fn new(engine: Arc<LoadedEngine>) -> Self {
        AicLatency {
            engine,
            prefill: RwLock::default(),
            decode: RwLock::default(),
            error: Mutex::new(None),
        }
    }

    /// The engine this model times.
    pub fn id(&self) -> &crate::config::aic::AicEngineId {
        &self.engine.id
    }

    /// The first estimator error, if any prediction failed.
    pub fn error(&self) -> Option<String> {
        self.error.lock().clone()
    }

    fn record(&self, what: String) {
        let mut e = self.error.lock();
        if e.is_none() {
            *e = Some(what);
        }
    }

    fn u32_of(x: u64) -> u32 {
        x.min(u32::MAX as u64) as u32
    }
}

impl AicLatency {
    /// The KV router's prefill-load estimate (`router_prefill_load_model: "aic"`): one request
    /// (batch 1) of `isl` prompt tokens with `prefix` cached, in ms, sharing the pass memo. A
    /// failure is returned, not recorded: the router goes on without a duration, as DynoSim's.
    pub fn load_estimate_ms(&self, isl: u64, prefix: u64) -> Result<f64, String> {
        let key = (1, isl, prefix);
        if let Some(&t) = self.prefill.read().get(&key) {
            return Ok(t);
        }
        let t = self
            .engine
            .engine
            .predict_prefill_latency(1, Self::u32_of(isl), Self::u32_of(prefix))
            .map_err(|e| e.to_string())?
            .max(0.0);
        self.prefill.write().insert(key, t);
        Ok(t)
    }

    /// The estimator's decode time at one table point, memoised.
    fn decode_at(&self, batch_size: u64, context: u64) -> f64 {
        let key = (batch_size, context);
        if let Some(&t) = self.decode.read().get(&key) {
            return t;
        }
        let t = match self.engine.engine.predict_decode_latency(
            Self::u32_of(batch_size),
            Self::u32_of(context),
            2,
        ) {
            Ok(t) => t,
            Err(e) => {
                self.record(format!(
                    "AIC decode prediction failed (batch {batch_size}, context {context}): {e}"
                ));
                1.0
            }
        };
        self.decode.write().insert(key, t);
        t
    }
}

impl LatencyModel for AicLatency {
    fn prefill_ms(&self, batch_size: u64, isl: u64, prefix: u64) -> f64 {
        let new = isl.saturating_sub(prefix);
        if batch_size == 0 || new == 0 {
            return 0.0;
        }
        let key = (batch_size, isl, prefix);
        if let Some(&t) = self.prefill.read().get(&key) {
            return t;
        }
        let t = match self.engine.engine.predict_prefill_latency(
            Self::u32_of(batch_size),
            Self::u32_of(isl),
            Self::u32_of(prefix),
        ) {
            Ok(t) => t.max(0.0),
            Err(e) => {
                self.record(format!(
                    "AIC prefill prediction failed (batch {batch_size}, isl {isl}, prefix {prefix}): {e}"
                ));
                0.0
            }
        };
        self.prefill.write().insert(key, t);
        t
    }

    fn decode_ms(
        &self,
        batch_size: u64,
        _active_kv_tokens: u64,
        context: u64,
        _total_kv_tokens: u64,
    ) -> f64 {
        if batch_size == 0 {
            return 0.0;
        }
        let lo = context - context % DECODE_CONTEXT_STEP;
        let t_lo = self.decode_at(batch_size, lo);
        let t = if lo == context {
            t_lo
        } else {
            let t_hi = self.decode_at(batch_size, lo + DECODE_CONTEXT_STEP);
            let f = (context - lo) as f64 / DECODE_CONTEXT_STEP as f64;
            t_lo + (t_hi - t_lo) * f
        };
        t.max(1.0)
    }
}
