//! Forward-pass timing (spec §4.9): how long one prefill or decode pass takes on one engine,
//! before speed-up ratios. A leaf: it imports nothing of the crate but `error`; `config`,
//! `engine`, `router`, `sim` and `sweep` build on it.
//!
//! One file per model behind one seam, [`LatencyModel`]; a scheduler holds a [`Timing`] and
//! never knows which model runs:
//! * `polynomial`: DynoSim's default fit (no engine arg);
//! * `interpolated`: a measured NPZ profile (`planner_profile_data`);
//! * `aic`: AIConfigurator's estimator (`aic_backend` and the other `aic_*` keys), with the AIC
//!   engine identity, the compile step's subprocess and cache, and the set of loaded engines.
//!
//! Parsing engine args yields [`TimingArgs`] (plain data: a profile path as written, the `aic_*`
//! args); a [`TimingLoader`] turns them into models, once per distinct source: `dynosim run`
//! uses one loader, a sweep one for all its points. Loading is where files are read and AIC's
//! compile step runs. The built model is shared read-only (`Arc`) by every engine of every point
//! that names the same source, on every thread, so a model may be expensive to build and its
//! construction may fail (an [`InputError`] naming the source). Calls are made per forward pass,
//! so a model whose estimates are costly should tabulate or memoise inside its own file; the
//! polynomial and the profile are a few arithmetic operations.
//!
//! Adding a model: a file implementing [`LatencyModel`] and returning its [`TimingSource`], a
//! variant of `Model` (dispatch below), a variant of [`TimingSource`], a field of [`TimingArgs`]
//! and a [`TimingLoader`] method that builds it through [`TimingLoader::get_or_build`].
//!
//! This module owns no scheduling: the vLLM scheduler decides what a pass contains and passes
//! the pass's shape (batch size, mean prompt span, active KV tokens, mean context) here. It
//! reads no JSON and knows no flag or key names: callers prefix its errors with their origin.

pub mod aic;
pub(crate) mod interpolated;
pub(crate) mod polynomial;

pub use aic::AicLatency;
pub use interpolated::Interpolated;
pub use polynomial::Polynomial;

use crate::error::InputError;
use aic::{AicArgs, AicEngineId, AicEngines};
use serde::{Serialize, Serializer};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How long a forward pass takes, in milliseconds, before speed-up ratios are applied.
pub trait LatencyModel: Send + Sync {
    /// Prefill of `batch_size` sequences with mean prompt span `isl` of which `prefix` tokens were
    /// already computed (cached or earlier chunks).
    fn prefill_ms(&self, batch_size: u64, isl: u64, prefix: u64) -> f64;
    /// One decode step of `batch_size` sequences with `active_kv_tokens` of `total_kv_tokens` in
    /// use and mean context length `context`.
    fn decode_ms(
        &self,
        batch_size: u64,
        active_kv_tokens: u64,
        context: u64,
        total_kv_tokens: u64,
    ) -> f64;

    /// Whether `decode_ms` depends on the context length. When it does not, consecutive decode
    /// passes of an unchanged batch and KV use take the same time, which saves re-evaluating it.
    fn decode_depends_on_context(&self) -> bool {
        true
    }

    /// One engine step that prefills and decodes, timed as a single forward over the weights
    /// (`mixed_pass: fused`): `prompts` prompts of mean span `isl` with `prefix` of it already
    /// computed, beside `decodes` sequences of mean context `context`. Returns the step's time
    /// without its decode attention and the decode attention's, in ms, or `None` where the model
    /// has no such estimate (only AIC timing has one).
    fn fused_step_ms(
        &self,
        _prompts: u64,
        _isl: u64,
        _prefix: u64,
        _decodes: u64,
        _context: u64,
    ) -> Option<(f64, f64)> {
        None
    }
}

/// Where a pool's timing comes from: plain data, written into configurations, sweep records and
/// their hashes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "model", rename_all = "snake_case")]
pub enum TimingSource {
    /// DynoSim's default polynomial.
    Polynomial,
    /// A measured profile: the NPZ as the user wrote its path, and its SHA-256 (so a changed
    /// profile changes the configuration hash, a moved one does not).
    PlannerProfileData { file: String, sha256: String },
    /// AIConfigurator's estimator for one engine; `monotone_decode` is `aic_decode_monotone`
    /// (written only when set).
    Aic {
        #[serde(flatten)]
        engine: Box<AicEngineId>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        monotone_decode: bool,
    },
}

/// The timing keys of one pool's engine args as parsed: plain data, nothing read or compiled
/// yet. A [`TimingLoader`] loads what they name; without either, the pool keeps DynoSim's
/// polynomial.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TimingArgs {
    /// `planner_profile_data`: the NPZ path as the user wrote it (relative to the loader's folder).
    pub profile: Option<String>,
    /// The `aic_*` keys: AIC timing, and the KV-pool estimate when it asks for one. A profile
    /// wins over AIC for timing (DynoSim's order); the AIC engine is still loaded.
    pub aic: Option<AicArgs>,
}

/// A built model; cloning shares it.
#[derive(Clone, Default)]
enum Model {
    #[default]
    Polynomial,
    Interpolated(Arc<Interpolated>),
    Aic(Arc<AicLatency>),
}

/// The timing model of one worker pool: cheap to clone (clones share the built model), compared
/// and serialised as its [`TimingSource`]. The default is DynoSim's polynomial.
#[derive(Clone, Default)]
pub struct Timing(Model);

impl Timing {
    /// DynoSim's default polynomial.
    pub fn polynomial() -> Self {
        Timing(Model::Polynomial)
    }

    /// A loaded profile.
    pub fn interpolated(profile: Interpolated) -> Self {
        Timing(Model::Interpolated(Arc::new(profile)))
    }

    /// AIConfigurator timing over a loaded engine.
    pub fn aic(model: Arc<AicLatency>) -> Self {
        Timing(Model::Aic(model))
    }

    /// The first estimator error of a model whose predictions can fail (AIC); DynoSim makes
    /// these fatal, so a run checks this after simulating.
    pub fn failure(&self) -> Option<String> {
        match &self.0 {
            Model::Polynomial => None,
            Model::Interpolated(_) => None,
            Model::Aic(m) => m.error(),
        }
    }

    /// The AIC model, when this is AIC timing (the KV router's AIC load estimator shares it).
    pub fn aic_latency(&self) -> Option<&Arc<AicLatency>> {
        match &self.0 {
            Model::Aic(m) => Some(m),
            _ => None,
        }
    }

    /// This timing with `aic_decode_monotone` on: AIC timing's monotone view of the same
    /// engine (sharing its memo); other models as they are.
    pub fn with_monotone_decode(&self) -> Timing {
        match &self.0 {
            Model::Aic(m) => Timing::aic(m.monotone_twin()),
            _ => self.clone(),
        }
    }

    pub fn is_polynomial(&self) -> bool {
        matches!(self.0, Model::Polynomial)
    }

    /// What this model was built from.
    pub fn source(&self) -> TimingSource {
        match &self.0 {
            Model::Polynomial => TimingSource::Polynomial,
            Model::Interpolated(p) => p.source().clone(),
            Model::Aic(m) => TimingSource::Aic {
                engine: Box::new(m.id().clone()),
                monotone_decode: m.monotone(),
            },
        }
    }
}

impl LatencyModel for Timing {
    #[inline]
    fn prefill_ms(&self, batch_size: u64, isl: u64, prefix: u64) -> f64 {
        match &self.0 {
            Model::Polynomial => Polynomial.prefill_ms(batch_size, isl, prefix),
            Model::Interpolated(p) => p.prefill_ms(batch_size, isl, prefix),
            Model::Aic(m) => m.prefill_ms(batch_size, isl, prefix),
        }
    }

    #[inline]
    fn decode_ms(
        &self,
        batch_size: u64,
        active_kv_tokens: u64,
        context: u64,
        total_kv_tokens: u64,
    ) -> f64 {
        match &self.0 {
            Model::Polynomial => {
                Polynomial.decode_ms(batch_size, active_kv_tokens, context, total_kv_tokens)
            }
            Model::Interpolated(p) => {
                p.decode_ms(batch_size, active_kv_tokens, context, total_kv_tokens)
            }
            Model::Aic(m) => m.decode_ms(batch_size, active_kv_tokens, context, total_kv_tokens),
        }
    }

    #[inline]
    fn decode_depends_on_context(&self) -> bool {
        match &self.0 {
            Model::Polynomial => Polynomial.decode_depends_on_context(),
            Model::Interpolated(p) => p.decode_depends_on_context(),
            Model::Aic(m) => m.decode_depends_on_context(),
        }
    }

    fn fused_step_ms(
        &self,
        prompts: u64,
        isl: u64,
        prefix: u64,
        decodes: u64,
        context: u64,
    ) -> Option<(f64, f64)> {
        match &self.0 {
            Model::Aic(m) => m.fused_step_ms(prompts, isl, prefix, decodes, context),
            _ => None,
        }
    }
}

impl PartialEq for Timing {
    fn eq(&self, other: &Self) -> bool {
        self.source() == other.source()
    }
}

impl std::fmt::Debug for Timing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.source().fmt(f)
    }
}

impl Serialize for Timing {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.source().serialize(s)
    }
}

/// Builds timing models, each distinct source once, and resolves the files they name against
/// one folder (the working directory for `dynosim run`, the spec's folder for a sweep).
#[derive(Debug, Default)]
pub struct TimingLoader {
    base_dir: PathBuf,
    built: HashMap<String, Timing>,
    /// AIC engines, each compiled and loaded once, with their KV-pool estimates.
    aic: AicEngines,
}

impl TimingLoader {
    /// A loader resolving relative paths against `base_dir` (empty: the working directory).
    pub fn new(base_dir: impl Into<PathBuf>) -> Self {
        TimingLoader {
            base_dir: base_dir.into(),
            built: HashMap::new(),
            aic: Default::default(),
        }
    }

    /// `path` as written by the user, resolved against the loader's folder.
    pub fn resolve(&self, path: &str) -> PathBuf {
        self.base_dir.join(path)
    }

    /// The folder relative paths are resolved against.
    pub fn base_dir(&self) -> &Path {
        &self.base_dir
    }

    /// The model built earlier under `key`, or the one `build` makes now (kept when it succeeds).
    /// `key` identifies the source completely (e.g. a canonical file path, or every parameter
    /// of an estimator).
    pub fn get_or_build(
        &mut self,
        key: String,
        build: impl FnOnce() -> Result<Timing, InputError>,
    ) -> Result<Timing, InputError> {
        if let Some(t) = self.built.get(&key) {
            return Ok(t.clone());
        }
        let t = build()?;
        self.built.insert(key, t.clone());
        Ok(t)
    }

    /// The measured profile at `file` (an NPZ path as written, resolved against the loader's
    /// folder), read once per file. Errors name the file, not the key that gave it.
    pub fn load_profile(&mut self, file: &str) -> Result<Timing, InputError> {
        let path = self.resolve(file);
        let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        self.get_or_build(format!("planner_profile_data:{}", key.display()), || {
            Interpolated::from_npz(&path, file).map(Timing::interpolated)
        })
    }

    /// The AIC timing of one pool's `aic_*` args and, when they ask for it, AIC's per-rank
    /// KV-block estimate: the engine is compiled and loaded once per distinct [`AicEngineId`].
    pub fn load_aic(&mut self, args: &AicArgs) -> Result<(Timing, Option<u64>), InputError> {
        let (engine, blocks) = self.aic.get(&args.engine, args.kv_estimate.as_ref())?;
        Ok((self.aic_timing(engine, args.monotone_decode), blocks))
    }

    /// The AIC latency model of engine `id` (the KV router's prefill-load estimator uses it): the
    /// same model, with the same memo, as AIC timing of that engine.
    pub fn aic_latency(&mut self, id: &AicEngineId) -> Result<Arc<AicLatency>, InputError> {
        let (engine, _) = self.aic.get(id, None)?;
        let timing = self.aic_timing(engine, false);
        Ok(timing
            .aic_latency()
            .expect("an AIC engine's timing is AIC timing")
            .clone())
    }

    /// The AIC timing model of a loaded engine, one per engine id and decode model
    /// (`aic_decode_monotone`), so AIC timing and the KV router's load estimator of the same
    /// engine share its memo.
    fn aic_timing(&mut self, engine: Arc<aic::LoadedEngine>, monotone: bool) -> Timing {
        let key = format!(
            "aic\n{}",
            serde_json::to_string(&engine.id).expect("an engine id serialises")
        );
        let raw = match self.built.get(&key) {
            Some(t) => t.clone(),
            None => {
                let t = Timing::aic(Arc::new(AicLatency::new(engine, false)));
                self.built.insert(key.clone(), t.clone());
                t
            }
        };
        if !monotone {
            return raw;
        }
        let key = format!("{key}\nmonotone decode");
        if let Some(t) = self.built.get(&key) {
            return t.clone();
        }
        let t = raw.with_monotone_decode();
        self.built.insert(key, t.clone());
        t
    }

    /// The AIC engines this loader compiled and loaded.
    pub fn aic_engines(&self) -> &AicEngines {
        &self.aic
    }

    /// How many distinct models this loader has built.
    pub fn num_built(&self) -> usize {
        self.built.len()
    }
}

/// A predicted prefill or decode time as DynoSim's schedulers (vLLM, TRT-LLM and SGLang) keep
/// it: a `Duration` (whole nanoseconds, rounded), divided by a positive speed-up ratio and
/// rounded again (ratios ≤ 0: no scaling). The nanoseconds add up over a run's passes (tens of
/// ns over a hundred passes, enough to move a pooled gap across a sketch bin) and decide
/// whether events nanoseconds apart come before or after each other. A time too large for a
/// `Duration` is kept unrounded.
pub fn pass_time(t_ms: f64, ratio: f64) -> f64 {
    use std::time::Duration;
    if t_ms.is_nan() || t_ms <= 0.0 {
        return 0.0;
    }
    let Ok(mut d) = Duration::try_from_secs_f64(t_ms / 1000.0) else {
        return scaled(t_ms, ratio);
    };
    if ratio > 0.0 && !d.is_zero() {
        match Duration::try_from_secs_f64(d.as_secs_f64() / ratio) {
            Ok(r) => d = r,
            Err(_) => return d.as_secs_f64() * 1000.0 / ratio,
        }
    }
    d.as_secs_f64() * 1000.0
}

/// Applies a speed-up divisor; ratios ≤ 0 mean "no scaling" (spec §4.9.5).
#[inline]
pub fn scaled(t_ms: f64, ratio: f64) -> f64 {
    if ratio > 0.0 {
        t_ms / ratio
    } else {
        t_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speedup_scaling() {
        assert_eq!(scaled(10.0, 2.0), 5.0);
        assert_eq!(scaled(10.0, 0.0), 10.0);
        assert_eq!(scaled(10.0, -1.0), 10.0);
    }

    #[test]
    fn the_default_timing_is_the_polynomial() {
        let t = Timing::default();
        assert!(t.is_polynomial());
        assert_eq!(t.prefill_ms(2, 1024, 0), Polynomial.prefill_ms(2, 1024, 0));
        assert_eq!(
            t.decode_ms(3, 5000, 700, 100_000),
            Polynomial.decode_ms(3, 5000, 700, 100_000)
        );
        assert!(!t.decode_depends_on_context());
        assert_eq!(
            serde_json::to_value(&t).unwrap(),
            serde_json::json!({"model": "polynomial"})
        );
    }

    #[test]
    fn a_loader_builds_each_source_once_and_keeps_no_failure() {
        let mut loader = TimingLoader::new("specs");
        assert_eq!(loader.resolve("a.npz"), Path::new("specs/a.npz"));
        assert_eq!(loader.resolve("/abs/a.npz"), Path::new("/abs/a.npz"));
        let mut builds = 0;
        for _ in 0..3 {
            loader
                .get_or_build("k".into(), || {
                    builds += 1;
                    Ok(Timing::polynomial())
                })
                .unwrap();
        }
        assert_eq!(builds, 1);
        let e = loader.get_or_build("bad".into(), || Err(InputError::new("no such model")));
        assert_eq!(e.unwrap_err().to_string(), "no such model");
        assert_eq!(loader.num_built(), 1);
    }
}
