//! A calibration file (`crate::calibrate`) as validate's per-family engine-args corrections:
//! a measured point's family in the file is AIC's (system, backend, model as AIC names it), read
//! from the point's recipe, and its time scales become `speedup_ratio` and
//! `decode_speedup_ratio` keys composed with the ratios the recipe already sets. Used by
//! `dynosim validate --calibration` and by `dynosim calibrate`'s fitting loop.

use super::deployment::Recipe;
use super::points::MeasuredPoint;
use super::{Correction, Corrections, Validator};
use crate::calibrate::{self, Applied, CalibrationFile, Family};
use serde_json::Value;

/// The AIC family a recipe's pools are timed by (`None`: no AIC timing, a measured profile, or
/// pools of different families).
pub fn aic_family(r: &Recipe) -> Option<Family> {
    let pools: Vec<&Value> = [
        &r.extra_engine_args,
        &r.prefill_engine_args,
        &r.decode_engine_args,
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut family: Option<Family> = None;
    for p in pools {
        if p.get("planner_profile_data").is_some_and(|v| !v.is_null()) {
            return None;
        }
        let s = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
        let f = Family {
            system: s("aic_system")?,
            backend: s("aic_backend")?,
            model: s("aic_model_path")?,
            decoding: None,
            server_version: None,
            quantisation: None,
            parallelism: None,
        };
        match &family {
            Some(g) if *g != f => return None,
            _ => family = Some(f),
        }
    }
    family
}

/// The engine args that name a recipe's calibration entry: the aggregated or prefill pool's,
/// if it has AIC timing.
fn aic_pool(r: &Recipe) -> Option<&Value> {
    let pool = r
        .extra_engine_args
        .as_ref()
        .or(r.prefill_engine_args.as_ref())?;
    pool.get("aic_backend").map(|_| pool)
}

/// `family` narrowed to a recipe's decoding mode, serving release, weight quantisation and
/// deployment shape (each `None` without AIC; the release `None` when the pools name none), as
/// calibration entries are looked up for its pools.
pub fn narrowed(r: &Recipe, family: Family) -> Family {
    Family {
        decoding: decoding_of(r),
        server_version: server_version_of(r),
        quantisation: quantisation_of(r),
        parallelism: parallelism_of(r),
        ..family
    }
}

/// The decoding mode of a recipe's pools as calibration files name it
/// ([`calibrate::decoding_label`]: `plain`, or `mtp{N}` with `aic_nextn` N): the aggregated or
/// prefill pool's (`None` without AIC).
pub fn decoding_of(r: &Recipe) -> Option<String> {
    let pool = aic_pool(r)?;
    let nextn = pool
        .get("aic_nextn")
        .and_then(Value::as_u64)
        .map(|n| n as u32);
    Some(calibrate::decoding_label(nextn))
}

/// The serving engine's release a recipe's pools stand for (`server_version`): the aggregated
/// or prefill pool's (`None` without AIC or without one).
pub fn server_version_of(r: &Recipe) -> Option<String> {
    let pool = aic_pool(r)?;
    pool.get("server_version")
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

/// The deployment shape of a recipe's pools as calibration files name it
/// ([`calibrate::parallelism_label`]): the aggregated or prefill pool's (`None` without AIC).
pub fn parallelism_of(r: &Recipe) -> Option<String> {
    let pool = aic_pool(r)?;
    let n = |k: &str| pool.get(k).and_then(Value::as_u64).map(|x| x as u32);
    Some(calibrate::parallelism_label(
        n("aic_tp_size").unwrap_or(1),
        n("aic_attention_dp_size").unwrap_or(1),
        n("aic_moe_ep_size"),
    ))
}

/// The weight quantisation of a recipe's pools as calibration files name it
/// ([`calibrate::quantisation_label`]): the aggregated or prefill pool's (`None` without AIC).
pub fn quantisation_of(r: &Recipe) -> Option<String> {
    let pool = aic_pool(r)?;
    // Normalised as the engine reads them (`auto` is the model's default, `int4` is `int4_wo`).
    let s = |k: &str| {
        pool.get(k)
            .and_then(Value::as_str)
            .and_then(crate::config::aic::normalize_dtype)
    };
    Some(calibrate::quantisation_label(
        s("aic_gemm_dtype").as_deref(),
        s("aic_moe_dtype").as_deref(),
    ))
}

/// Whether every pool of a recipe may take `mixed_pass: fused`
/// ([`deployment::pool_can_fuse`](super::deployment::pool_can_fuse)).
pub(crate) fn can_fuse_mixed_passes(r: &Recipe) -> bool {
    [
        &r.extra_engine_args,
        &r.prefill_engine_args,
        &r.decode_engine_args,
    ]
    .into_iter()
    .flatten()
    .all(|p| p.as_object().is_none_or(super::deployment::pool_can_fuse))
}

/// The engine-args keys that give a recipe's pools the corrections `c`, composed with the
/// `speedup_ratio`, `decode_speedup_ratio` (`decode_time_scale` under multi-token prediction)
/// and overheads it sets (as [`calibrate::Corrections::apply_to`]).
pub fn correction_keys(r: &Recipe, c: calibrate::Corrections) -> Correction {
    let pool = r
        .extra_engine_args
        .as_ref()
        .or(r.prefill_engine_args.as_ref());
    let ratio = |k: &str| {
        pool.and_then(|p| p.get(k))
            .and_then(Value::as_f64)
            .filter(|x| *x > 0.0)
            .unwrap_or(1.0)
    };
    let (s, d) = (ratio("speedup_ratio"), ratio("decode_speedup_ratio"));
    let own = |k: &str| pool.and_then(|p| p.get(k)).and_then(Value::as_f64);
    let mut keys = Correction::new();
    keys.insert("speedup_ratio".into(), Value::from(s / c.prefill_scale));
    if pool
        .and_then(Value::as_object)
        .is_some_and(super::deployment::runs_mtp)
    {
        // Multi-token prediction holds decode_speedup_ratio at 1 (as apply_to does).
        let t = own("decode_time_scale").unwrap_or(1.0);
        keys.insert(
            "decode_time_scale".into(),
            Value::from(t * c.decode_scale / c.prefill_scale),
        );
    } else {
        keys.insert(
            "decode_speedup_ratio".into(),
            Value::from(d * c.prefill_scale / c.decode_scale),
        );
    }
    // An overhead the corrections add to the pool's own, set only when they have one.
    let mut add = |k: &str, ms: f64| {
        if ms != 0.0 {
            keys.insert(k.into(), Value::from(own(k).unwrap_or(0.0) + ms));
        }
    };
    add("decode_pass_overhead_ms", c.decode_pass_overhead_ms);
    // The fitted request overhead stands in for TRT-LLM's modelled one (calibrate fits it on
    // runs without).
    let modelled_request = r.dispatch.request_ms.unwrap_or(0.0);
    if modelled_request != 0.0 || c.request_overhead_ms != 0.0 {
        let base = own("request_overhead_ms").unwrap_or(0.0) - modelled_request;
        keys.insert(
            "request_overhead_ms".into(),
            Value::from(base + c.request_overhead_ms),
        );
    }
    if c.kv_pool_scale != 1.0 {
        let own_scale = own("kv_pool_scale").unwrap_or(1.0);
        keys.insert(
            "kv_pool_scale".into(),
            Value::from(own_scale * c.kv_pool_scale),
        );
    }
    // The fitted corrections stand in for the uncalibrated dispatch model (calibrate fits them
    // on passes without it).
    if r.modelled_dispatch() || c.prefill_pass_overhead_ms != 0.0 {
        let base = if r.modelled_dispatch() {
            0.0
        } else {
            own("prefill_pass_overhead_ms").unwrap_or(0.0)
        };
        keys.insert(
            "prefill_pass_overhead_ms".into(),
            Value::from(base + c.prefill_pass_overhead_ms),
        );
    }
    keys
}

/// The corrections a calibration file gives `points`, and one note per distinct outcome
/// (families calibrated, points left uncalibrated and why).
pub fn corrections(
    validator: &Validator,
    points: &[MeasuredPoint],
    file: &CalibrationFile,
) -> (Corrections, Vec<String>) {
    let mut out = Corrections::none();
    let mut outcomes = Vec::new();
    for (p, r) in points.iter().zip(validator.recipes(points)) {
        let Some(r) = r else { continue };
        let Some(family) = aic_family(&r) else {
            outcomes.push(Applied::NoAicTiming);
            continue;
        };
        let narrow = narrowed(&r, family.clone());
        match file.get(&narrow) {
            Some(f) => {
                let key = narrowed(&r, p.family());
                let mut keys = correction_keys(&r, f.corrections());
                if f.monotone_decode {
                    keys.insert("aic_decode_monotone".into(), Value::Bool(true));
                }
                if f.fused_mixed_pass && can_fuse_mixed_passes(&r) {
                    keys.insert("mixed_pass".into(), Value::from("fused"));
                }
                out.by_family.insert(key, keys);
                outcomes.push(Applied::Calibrated(f.family(), f.corrections()));
            }
            None => outcomes.push(Applied::Absent(family)),
        }
    }
    (out, calibrate::notes(&outcomes))
}
