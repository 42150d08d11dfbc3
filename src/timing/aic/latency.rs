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
//!
//! With `aic_decode_monotone` (dynosim's, not DynoSim's) a decode step takes the least of the
//! estimator's times for its batch and for up to [`MONOTONE_DECODE_SPAN`] times as many
//! sequences (at the same context): a step never gets faster with more sequences, and the
//! noise of measured kernel tables is mostly upward (a slow sample at one batch size), so the
//! least time of a larger batch bounds a smaller batch's. AIC's perf data for some systems
//! (B200 vLLM) has dips and bumps of more than a quarter of the step time between
//! neighbouring batch sizes.
//!
//! A failed estimate is memoised as a failure too, so every simulation that asks for that shape
//! sees it, whichever asked first: `dynosim run` reads it from [`AicLatency::error`] (the model's
//! first failure), a sweep point from the [`FailureScope`] it simulated in (the failures of that
//! point's own simulation only, though points share the model).

use super::{AicEngineId, LoadedEngine};
use crate::timing::LatencyModel;
use parking_lot::{Mutex, RwLock};
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One memoised estimate: milliseconds, or the estimator's error message.
type Estimate = Result<f64, Arc<str>>;

/// A decode-table segment: (2 × engine serial + 1 for the monotone view, batch, lower grid
/// point), and the times at both ends.
type Segment = ((u64, u64, u64), f64, f64);

/// Numbers the engines' memos, so a thread's cached decode segment names the model it belongs to.
static SERIAL: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The decode-table segment last read on this thread.
    static LAST_SEGMENT: Cell<Option<Segment>> = const { Cell::new(None) };
    /// The first estimator failure since the innermost [`FailureScope`] on this thread began.
    static SCOPE_FAILURE: RefCell<Option<Arc<str>>> = const { RefCell::new(None) };
}

/// Collects the AIC estimator failures of the simulation run on this thread while it lives (a
/// simulation runs on one thread). Scopes nest: a scope hides the failures of an enclosing one and
/// gives them back when it ends, so a thread that picks up another sweep point while waiting keeps
/// each point's failures apart.
pub struct FailureScope {
    enclosing: Option<Arc<str>>,
}

impl FailureScope {
    pub fn enter() -> Self {
        FailureScope {
            enclosing: SCOPE_FAILURE.with(|f| f.borrow_mut().take()),
        }
    }

    /// Ends the scope, returning the first failure recorded in it.
    pub fn finish(self) -> Option<String> {
        SCOPE_FAILURE.with(|f| f.borrow_mut().take().map(|m| m.to_string()))
    }
}

/// Records `what` as the current scope's failure unless it has one already.
fn note_scope_failure(what: &Arc<str>) {
    SCOPE_FAILURE.with(|f| {
        f.borrow_mut().get_or_insert_with(|| what.clone());
    });
}

impl Drop for FailureScope {
    fn drop(&mut self) {
        let enclosing = self.enclosing.take();
        SCOPE_FAILURE.with(|f| *f.borrow_mut() = enclosing);
    }
}

/// `map`'s estimate for `key`, made by `estimate` the first time it is asked for.
fn memoised<K: std::hash::Hash + Eq>(
    map: &RwLock<FxHashMap<K, Estimate>>,
    key: K,
    estimate: impl FnOnce() -> Estimate,
) -> Estimate {
    if let Some(t) = map.read().get(&key) {
        return t.clone();
    }
    let t = estimate();
    map.write().insert(key, t.clone());
    t
}

/// Context spacing of the decode table, in tokens.
pub const DECODE_CONTEXT_STEP: u64 = 64;

/// A time tabulated on the decode grid, at `context`: `at(context)` on a grid point, otherwise
/// linear between the times `segment(lo)` gives at the grid points `lo` and `lo + step` around it.
fn on_decode_grid(
    context: u64,
    at: impl FnOnce(u64) -> f64,
    segment: impl FnOnce(u64) -> (f64, f64),
) -> f64 {
    let lo = context - context % DECODE_CONTEXT_STEP;
    if lo == context {
        return at(lo);
    }
    let (t_lo, t_hi) = segment(lo);
    let f = (context - lo) as f64 / DECODE_CONTEXT_STEP as f64;
    t_lo + (t_hi - t_lo) * f
}

/// With `aic_decode_monotone`, a decode step at batch `b` takes the least estimate over
/// batches `b..=MONOTONE_DECODE_SPAN·b`.
pub const MONOTONE_DECODE_SPAN: u64 = 4;

/// The fewest missing estimates of a monotone window worth spreading over threads.
const PARALLEL_ESTIMATES_FROM: usize = 16;

/// AIC timing over one shared loaded engine: the estimator's decode times as they are, or with
/// `aic_decode_monotone` their least over larger batches. Both views of an engine share one
/// memo ([`Self::monotone_twin`]).
pub struct AicLatency {
    memo: Arc<Memo>,
    /// `aic_decode_monotone`: decode times are the least over larger batches.
    monotone: bool,
}

/// The estimates of one engine, shared by its two views.
struct Memo {
    engine: Arc<LoadedEngine>,
    /// This engine's number (see [`SERIAL`]).
    serial: u64,
    prefill: RwLock<FxHashMap<(u64, u64, u64), Estimate>>,
    /// The estimator's decode times by (batch, context).
    decode: RwLock<FxHashMap<(u64, u64), Estimate>>,
    /// The least decode times over larger batches by (batch, context), for the monotone view.
    least: RwLock<FxHashMap<(u64, u64), Estimate>>,
    /// Fused steps' time without their decode attention, by (prompts, isl, prefix, decodes).
    fused: RwLock<FxHashMap<(u64, u64, u64, u64), Estimate>>,
    /// Decode attention alone by (decodes, context on the decode table's grid).
    decode_attention: RwLock<FxHashMap<(u64, u64), Estimate>>,
    /// The first estimator error: DynoSim makes these fatal, so the run checks it afterwards.
    error: Mutex<Option<String>>,
}

impl AicLatency {
    /// The model over `engine`; `monotone` is `aic_decode_monotone`.
    pub fn new(engine: Arc<LoadedEngine>, monotone: bool) -> Self {
        AicLatency {
            memo: Arc::new(Memo {
                engine,
                serial: SERIAL.fetch_add(1, Ordering::Relaxed),
                prefill: RwLock::default(),
                decode: RwLock::default(),
                least: RwLock::default(),
                fused: RwLock::default(),
                decode_attention: RwLock::default(),
                error: Mutex::new(None),
            }),
            monotone,
        }
    }

    /// The monotone view of this engine's timing (itself when it is one), sharing the memo.
    pub fn monotone_twin(self: &Arc<Self>) -> Arc<AicLatency> {
        if self.monotone {
            return self.clone();
        }
        Arc::new(AicLatency {
            memo: self.memo.clone(),
            monotone: true,
        })
    }

    /// Whether decode steps take the least time over larger batches (`aic_decode_monotone`).
    pub fn monotone(&self) -> bool {
        self.monotone
    }

    /// The engine this model times.
    pub fn id(&self) -> &AicEngineId {
        &self.memo.engine.id
    }

    /// The context-attention dtype timed in place of the checkpoint's, when its perf data has
    /// none of the checkpoint's (AIConfigurator's estimate-path fallback).
    pub fn fmha_fallback(&self) -> Option<&str> {
        self.memo.engine.fmha_fallback.as_deref()
    }

    /// The first estimator error, if any prediction failed.
    pub fn error(&self) -> Option<String> {
        self.memo.error.lock().clone()
    }

    /// `t`'s time, or `fallback` after noting its failure (for the run and the current scope).
    fn settle(&self, t: &Estimate, fallback: f64) -> f64 {
        match t {
            Ok(t) => *t,
            Err(what) => {
                note_scope_failure(what);
                let mut e = self.memo.error.lock();
                if e.is_none() {
                    *e = Some(what.to_string());
                }
                fallback
            }
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
        self.prefill_estimate(1, isl, prefix)
            .map_err(|e| e.to_string())
    }

    /// The estimator's prefill time of `batch_size` prompts `isl` long with `prefix` cached,
    /// memoised (the passes and the router's load estimate share it).
    fn prefill_estimate(&self, batch_size: u64, isl: u64, prefix: u64) -> Estimate {
        memoised(&self.memo.prefill, (batch_size, isl, prefix), || {
            self.memo
                .engine
                .engine
                .predict_prefill_latency(
                    Self::u32_of(batch_size),
                    Self::u32_of(isl),
                    Self::u32_of(prefix),
                )
                .map(|t| t.max(0.0))
                .map_err(|e| {
                    format!(
                        "AIC prefill prediction failed (batch {batch_size}, isl {isl}, prefix {prefix}): {e}"
                    )
                    .into()
                })
        })
    }

    /// The table's times at `lo` and the next grid point. The passes of a decode stride ask for
    /// the same segment up to 63 times in a row, so each thread keeps the last one it read.
    fn segment(&self, batch_size: u64, lo: u64) -> (f64, f64) {
        let key = (
            self.memo.serial * 2 + u64::from(self.monotone),
            batch_size,
            lo,
        );
        if let Some((k, t_lo, t_hi)) = LAST_SEGMENT.get() {
            if k == key {
                return (t_lo, t_hi);
            }
        }
        let t_lo = self.decode_estimate(batch_size, lo);
        let t_hi = self.decode_estimate(batch_size, lo + DECODE_CONTEXT_STEP);
        if let (Ok(a), Ok(b)) = (&t_lo, &t_hi) {
            LAST_SEGMENT.set(Some((key, *a, *b)));
        }
        (self.settle(&t_lo, 1.0), self.settle(&t_hi, 1.0))
    }

    /// The estimator's decode time at one table point, memoised.
    fn decode_at(&self, batch_size: u64, context: u64) -> f64 {
        let t = self.decode_estimate(batch_size, context);
        self.settle(&t, 1.0)
    }

    /// [`Self::decode_at`] before its failure is noted: the estimator's time, or with
    /// `aic_decode_monotone` the least of its times over batches `batch_size..=SPAN·batch_size`
    /// (a failure at `batch_size` itself stays a failure; failures above it are passed over).
    fn decode_estimate(&self, batch_size: u64, context: u64) -> Estimate {
        if !self.monotone {
            return self.estimated_decode(batch_size, context);
        }
        let key = (batch_size, context);
        if let Some(t) = self.memo.least.read().get(&key) {
            return t.clone();
        }
        let t = self.estimated_decode(batch_size, context).map(|own| {
            let window = batch_size + 1..=batch_size.saturating_mul(MONOTONE_DECODE_SPAN);
            self.estimate_decodes(window.clone(), context);
            window
                .filter_map(|b| self.estimated_decode(b, context).ok())
                .fold(own, f64::min)
        });
        self.memo.least.write().insert(key, t.clone());
        t
    }

    /// Memoises the estimator's decode times of `batches` at `context`, those not yet asked
    /// for estimated in parallel: a window of large batches costs hundreds of estimates, which
    /// would otherwise run one after another on the thread of the simulation that asked. Each
    /// estimate is a function of its key alone, so neither the values nor any result depend on
    /// which thread computes one, or on the order.
    fn estimate_decodes(&self, batches: std::ops::RangeInclusive<u64>, context: u64) {
        let missing: Vec<u64> = {
            let memo = self.memo.decode.read();
            batches
                .filter(|&b| !memo.contains_key(&(b, context)))
                .collect()
        };
        if missing.len() < PARALLEL_ESTIMATES_FROM {
            return;
        }
        let estimates: Vec<(u64, Estimate)> = missing
            .par_iter()
            .map(|&b| (b, self.decode_from_estimator(b, context)))
            .collect();
        let mut memo = self.memo.decode.write();
        for (b, t) in estimates {
            memo.entry((b, context)).or_insert(t);
        }
    }

    /// A fused step's time without its decode attention: AIC's mixed step (every token's
    /// non-attention work as one pass, plus the prompts' attention), memoised.
    fn fused_without_decode_attention(
        &self,
        prompts: u64,
        isl: u64,
        prefix: u64,
        decodes: u64,
    ) -> Estimate {
        memoised(&self.memo.fused, (prompts, isl, prefix, decodes), || {
            // The step's prompt tokens, cached spans included (AIC takes each prompt's `prefix`
            // out).
            let ctx_tokens = prompts.saturating_mul(isl);
            self.memo
                .engine
                .engine
                .mixed_step_breakdown(
                    Self::u32_of(ctx_tokens),
                    Self::u32_of(decodes),
                    Self::u32_of(isl),
                    2,
                    Self::u32_of(prefix),
                )
                .map(|[_, shared, context_attention, _]| (shared + context_attention).max(0.0))
                .map_err(|e| {
                    format!(
                        "AIC mixed-step prediction failed ({prompts} prompts, isl {isl}, prefix \
                         {prefix}, {decodes} decodes): {e}"
                    )
                    .into()
                })
        })
    }

    /// The decode attention of `decodes` sequences at a table point's context, memoised: the
    /// attention part of AIC's mixed step with no prompt tokens (one step at `context + 1`, as
    /// [`Self::estimated_decode`]'s).
    fn decode_attention_at(&self, decodes: u64, context: u64) -> f64 {
        let t = memoised(&self.memo.decode_attention, (decodes, context), || {
            self.memo
                .engine
                .engine
                .mixed_step_breakdown(0, Self::u32_of(decodes), Self::u32_of(context), 0, 0)
                .map(|[.., decode_attention]| decode_attention.max(0.0))
                .map_err(|e| {
                    format!(
                        "AIC decode-attention prediction failed ({decodes} decodes, context \
                         {context}): {e}"
                    )
                    .into()
                })
        });
        self.settle(&t, 0.0)
    }

    /// The estimator's decode time at one table point, memoised.
    fn estimated_decode(&self, batch_size: u64, context: u64) -> Estimate {
        memoised(&self.memo.decode, (batch_size, context), || {
            self.decode_from_estimator(batch_size, context)
        })
    }

    /// The estimator's decode time at one table point (not memoised).
    fn decode_from_estimator(&self, batch_size: u64, context: u64) -> Estimate {
        self.memo
            .engine
            .engine
            .predict_decode_latency(Self::u32_of(batch_size), Self::u32_of(context), 2)
            .map_err(|e| {
                format!("AIC decode prediction failed (batch {batch_size}, context {context}): {e}")
                    .into()
            })
    }
}

impl LatencyModel for AicLatency {
    fn prefill_ms(&self, batch_size: u64, isl: u64, prefix: u64) -> f64 {
        let new = isl.saturating_sub(prefix);
        if batch_size == 0 || new == 0 {
            return 0.0;
        }
        let t = self.prefill_estimate(batch_size, isl, prefix);
        self.settle(&t, 0.0)
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
        let t = on_decode_grid(
            context,
            |lo| self.decode_at(batch_size, lo),
            |lo| self.segment(batch_size, lo),
        );
        t.max(1.0)
    }

    fn fused_step_ms(
        &self,
        prompts: u64,
        isl: u64,
        prefix: u64,
        decodes: u64,
        context: u64,
    ) -> Option<(f64, f64)> {
        if prompts == 0 || isl <= prefix {
            return None;
        }
        let t = self.fused_without_decode_attention(prompts, isl, prefix, decodes);
        let rest = self.settle(&t, 0.0);
        if decodes == 0 {
            return Some((rest, 0.0));
        }
        // On the decode table's grid, linearly in between, as decode steps are.
        let attention = on_decode_grid(
            context,
            |lo| self.decode_attention_at(decodes, lo),
            |lo| {
                (
                    self.decode_attention_at(decodes, lo),
                    self.decode_attention_at(decodes, lo + DECODE_CONTEXT_STEP),
                )
            },
        );
        Some((rest, attention))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_scopes_keep_nested_points_apart() {
        let outer = FailureScope::enter();
        note_scope_failure(&Arc::from("outer first"));
        note_scope_failure(&Arc::from("outer second"));
        {
            // A point picked up by the same thread while the outer one waits.
            let inner = FailureScope::enter();
            let clean = FailureScope::enter();
            assert_eq!(clean.finish(), None);
            note_scope_failure(&Arc::from("inner"));
            assert_eq!(inner.finish().as_deref(), Some("inner"));
        }
        assert_eq!(outer.finish().as_deref(), Some("outer first"));
        // Nothing leaks into the next scope.
        assert_eq!(FailureScope::enter().finish(), None);
    }
}
