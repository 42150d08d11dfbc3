//! Grid axes that cannot change the simulation: AIC keys (`aic_*`, but for multi-token
//! prediction's) of an engine pool that never has `aic_backend`, whose timing is DynoSim's
//! polynomial or a profile, neither of which reads them. `aic_tp_size` there changes only the GPU count of a point (its `gpus` and per-GPU
//! columns), not one simulated number. Found from the spec alone, before anything runs; the
//! sweep warns once per axis on stderr and runs as asked.

use super::spec::{AxisKind, Param, ParamRef, Pool, Spec};
use serde_json::{Map, Value};

/// The key that turns AIC timing on for a pool.
const AIC_BACKEND: &str = "aic_backend";

/// Multi-token prediction's keys: named `aic_*` by DynoSim but read under any timing.
const MTP_KEYS: [&str; 3] = ["aic_nextn", "aic_nextn_accept_rates", "aic_mtp_seed"];

/// Whether an engine key is one of AIC's (`aic_*`, `aic_backend` and multi-token prediction's
/// aside).
fn is_aic_key(key: &str) -> bool {
    key.starts_with("aic_") && key != AIC_BACKEND && !MTP_KEYS.contains(&key)
}

fn sets_backend(obj: &Map<String, Value>) -> bool {
    obj.get(AIC_BACKEND).is_some_and(|v| !v.is_null())
}

/// Every parameter the grid's axes set, with the values they take.
fn axis_params(spec: &Spec) -> Vec<(&ParamRef, &[Value])> {
    let mut out = Vec::new();
    for axis in &spec.axes {
        match &axis.kind {
            AxisKind::Values(p, vals) => out.push((p, vals.as_slice())),
            AxisKind::Bundles(bs) => {
                for b in bs {
                    out.extend(b.entries.iter().map(|(p, v)| (p, v.as_slice())));
                }
            }
        }
    }
    out
}

/// One warning per axis that sets an AIC key of a pool that never gets `aic_backend` (from the
/// base `engine`, the pool's own object, or an axis setting it).
pub fn warnings(spec: &Spec) -> Vec<String> {
    let params = axis_params(spec);
    // Which pools can have AIC timing: the base engine reaches both pools.
    let axis_sets_backend = |pool: &Pool| {
        params.iter().any(|(p, vals)| {
            matches!(&p.param, Param::Engine(q, keys)
                if (q == pool || *q == Pool::Base)
                    && keys.len() == 1
                    && keys[0] == AIC_BACKEND
                    && vals.iter().any(|v| !v.is_null()))
        })
    };
    let has_backend = |pool: &Pool| {
        sets_backend(&spec.engine)
            || axis_sets_backend(pool)
            || match pool {
                Pool::Base => {
                    sets_backend(&spec.prefill_engine)
                        || sets_backend(&spec.decode_engine)
                        || axis_sets_backend(&Pool::Prefill)
                        || axis_sets_backend(&Pool::Decode)
                }
                Pool::Prefill => sets_backend(&spec.prefill_engine),
                Pool::Decode => sets_backend(&spec.decode_engine),
            }
    };
    let mut out: Vec<String> = Vec::new();
    for (p, _) in &params {
        let Param::Engine(pool, keys) = &p.param else {
            continue;
        };
        if keys.len() != 1 || !is_aic_key(&keys[0]) || has_backend(pool) {
            continue;
        }
        let why = if keys[0] == "aic_tp_size" {
            "only the GPU count changes (gpus and the per-GPU columns)"
        } else {
            "no simulated number changes"
        };
        let w = format!(
            "grid axis {} cannot change the simulation: its pool has no aic_backend, so its \
             timing is DynoSim's polynomial (or a profile), which does not read AIC keys; {why}. \
             Set aic_backend (with aic_system, aic_model_path, aic_backend_version) for AIC timing",
            p.path
        );
        if !out.contains(&w) {
            out.push(w);
        }
    }
    out
}
