//! The two AIConfigurator estimators dynosim can load: `aiconfigurator-core` 0.11.0 (the one
//! DynoSim 1.4.2 pins) and 0.12.0. A compiled spec only loads in the crate whose schema it
//! carries, so the version is chosen by the user's Python package (whose compile step wrote the
//! spec), never by dynosim: [`EstimatorVersion`] names it, [`Estimator`] answers the two queries
//! AIC timing asks (prefill and decode latency) with whichever was loaded.
//!
//! Owns: the version table and the dispatch. Does not own: compiling, caching or sharing engines
//! (the `engines` module beside it), or the latency model built on the answers (`latency`).

use aiconfigurator_core::engine::spec::{EngineSpec, OpSpec};

/// An estimator version dynosim carries, identified by the schema of the specs it loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EstimatorVersion {
    /// `aiconfigurator-core` 0.11.0: DynoSim 1.4.2's (`ai-dynamo[mocker]`).
    V0_11,
    /// `aiconfigurator-core` 0.12.0: the PyPI wheel `pip install aiconfigurator-core==0.12.0`.
    V0_12,
}

impl EstimatorVersion {
    /// Every version this build loads, oldest first.
    pub const ALL: [EstimatorVersion; 2] = [EstimatorVersion::V0_11, EstimatorVersion::V0_12];

    /// The crate (and Python package) version.
    pub fn package_version(self) -> &'static str {
        match self {
            EstimatorVersion::V0_11 => "0.11.0",
            EstimatorVersion::V0_12 => "0.12.0",
        }
    }

    /// The `EngineSpec` schema version this crate loads (its `ENGINE_SPEC_SCHEMA_VERSION`).
    pub fn schema(self) -> u32 {
        match self {
            EstimatorVersion::V0_11 => aic11::ENGINE_SPEC_SCHEMA_VERSION,
            EstimatorVersion::V0_12 => aiconfigurator_core::ENGINE_SPEC_SCHEMA_VERSION,
        }
    }

    /// The version whose crate loads specs of `schema`.
    pub fn from_schema(schema: u32) -> Option<EstimatorVersion> {
        Self::ALL.into_iter().find(|v| v.schema() == schema)
    }

    /// "0.11.0 or 0.12.0", for messages.
    pub fn supported() -> String {
        Self::ALL.map(|v| v.package_version()).join(" or ")
    }
}

impl std::fmt::Display for EstimatorVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.package_version())
    }
}

/// The schema a compiled spec carries: bincode's first field, a little-endian `u32`.
pub fn spec_schema(spec: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(spec.get(..4)?.try_into().ok()?))
}

/// A loaded estimator of either version.
pub enum Estimator {
    V0_11(aic11::engine::Engine),
    V0_12(aiconfigurator_core::engine::Engine),
}

impl Estimator {
    /// Loads a compiled spec with the crate of `version`, reading perf data under `systems_root`
    /// (the spec's own systems path wins when it has one).
    pub fn load(
        version: EstimatorVersion,
        spec: &[u8],
        systems_root: &std::path::Path,
    ) -> Result<Estimator, String> {
        Ok(match version {
            EstimatorVersion::V0_11 => Estimator::V0_11(
                aic11::engine::Engine::from_spec_bytes(spec, systems_root)
                    .map_err(|e| e.to_string())?,
            ),
            EstimatorVersion::V0_12 => Estimator::V0_12(
                aiconfigurator_core::engine::Engine::from_spec_bytes(spec, systems_root)
                    .map_err(|e| e.to_string())?,
            ),
        })
    }

    pub fn version(&self) -> EstimatorVersion {
        match self {
            Estimator::V0_11(_) => EstimatorVersion::V0_11,
            Estimator::V0_12(_) => EstimatorVersion::V0_12,
        }
    }

    /// One prefill pass of `bs` requests of `isl` tokens of which `prefix` are cached, in ms.
    pub fn predict_prefill_latency(&self, bs: u32, isl: u32, prefix: u32) -> Result<f64, String> {
        match self {
            Estimator::V0_11(e) => e
                .predict_prefill_latency(bs, isl, prefix)
                .map_err(|e| e.to_string()),
            Estimator::V0_12(e) => e
                .predict_prefill_latency(bs, isl, prefix)
                .map_err(|e| e.to_string()),
        }
    }

    /// One decode step of `bs` requests at context `isl` (`osl` = 2: one step at `isl + 1`), ms.
    pub fn predict_decode_latency(&self, bs: u32, isl: u32, osl: u32) -> Result<f64, String> {
        match self {
            Estimator::V0_11(e) => e
                .predict_decode_latency(bs, isl, osl)
                .map_err(|e| e.to_string()),
            Estimator::V0_12(e) => e
                .predict_decode_latency(bs, isl, osl)
                .map_err(|e| e.to_string()),
        }
    }

    /// AIC's mixed step (one forward that prefills and decodes): `ctx_tokens` prompt tokens of
    /// prompts `isl` long with `prefix` of each cached, beside `gen_tokens` decodes at context
    /// `isl + osl / 2 + 1`. Returns [total, every token's non-attention work, the prompts'
    /// attention, the decodes' attention], ms. Estimator 0.12 only (0.11 has no breakdown).
    pub fn mixed_step_breakdown(
        &self,
        ctx_tokens: u32,
        gen_tokens: u32,
        isl: u32,
        osl: u32,
        prefix: u32,
    ) -> Result<[f64; 4], String> {
        match self {
            Estimator::V0_11(_) => Err(
                "fused mixed steps need the aiconfigurator-core 0.12 estimator (this engine \
                 was compiled for 0.11)"
                    .into(),
            ),
            Estimator::V0_12(e) => e
                .mixed_step_breakdown(ctx_tokens, gen_tokens, isl, osl, prefix, 1.0, 1.0)
                .map_err(|e| e.to_string()),
        }
    }

    /// Asks `prefill` and `decode` shapes once each so the perf tables they need are read now.
    /// The estimator reads each table once, by query shape, behind a `OnceLock`; two helper
    /// threads start on the attention tables while this one goes through every shape (so the
    /// answers and any error do not depend on who read what).
    pub fn warm(
        &self,
        spec: &[u8],
        prefill: &[(u32, u32, u32)],
        decode: &[(u32, u32)],
    ) -> Result<(), String> {
        std::thread::scope(|scope| {
            // Plain threads, not rayon: the caller holds the engine set's lock, and a rayon wait
            // could pick up another sweep point that asks for it.
            match self {
                Estimator::V0_12(engine) => {
                    // 0.12.0 can evaluate just the ops whose tables depend on the shape.
                    if let Ok(spec) = EngineSpec::from_bincode(spec) {
                        let context = shape_ops(&spec.context_ops);
                        let generation = shape_ops(&spec.generation_ops);
                        scope.spawn(move || {
                            for &(bs, isl, prefix) in prefill {
                                let _ = engine.evaluate_context_ops(
                                    &context,
                                    bs,
                                    isl - prefix,
                                    prefix,
                                    1.0,
                                    None,
                                );
                            }
                        });
                        scope.spawn(move || {
                            for &(bs, ctx) in decode {
                                let _ = engine.evaluate_generation_ops(
                                    &generation,
                                    bs,
                                    ctx + 1,
                                    1.0,
                                    0,
                                    None,
                                );
                            }
                        });
                    }
                }
                Estimator::V0_11(_) => {
                    scope.spawn(move || {
                        for &(bs, isl, prefix) in prefill {
                            let _ = self.predict_prefill_latency(bs, isl, prefix);
                        }
                    });
                    scope.spawn(move || {
                        for &(bs, ctx) in decode {
                            let _ = self.predict_decode_latency(bs, ctx, 2);
                        }
                    });
                }
            }
            for &(bs, isl, prefix) in prefill {
                self.predict_prefill_latency(bs, isl, prefix)?;
            }
            for &(bs, ctx) in decode {
                self.predict_decode_latency(bs, ctx, 2)?;
            }
            Ok(())
        })
    }
}

/// Indices of the ops whose cost depends on more than the pass's token count (attention and the
/// like: the tables other than the GEMM, element-wise and communication ones).
fn shape_ops(ops: &[OpSpec]) -> Vec<usize> {
    ops.iter()
        .enumerate()
        .filter(|(_, op)| {
            !matches!(
                op,
                OpSpec::Gemm(_)
                    | OpSpec::Embedding(_)
                    | OpSpec::Elementwise(_)
                    | OpSpec::CustomAllReduce(_)
                    | OpSpec::Nccl(_)
                    | OpSpec::P2P(_)
            )
        })
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_told_apart_by_schema() {
        assert_eq!(EstimatorVersion::V0_11.schema(), 4);
        assert_eq!(EstimatorVersion::V0_12.schema(), 15);
        for v in EstimatorVersion::ALL {
            assert_eq!(EstimatorVersion::from_schema(v.schema()), Some(v));
        }
        assert_eq!(EstimatorVersion::from_schema(27), None);
        assert_eq!(spec_schema(&[4, 0, 0, 0, 9]), Some(4));
        assert_eq!(spec_schema(&[15, 0]), None);
    }
}
