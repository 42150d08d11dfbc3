//! The `aic_*` engine args (DynoSim's AIConfigurator timing, breadth spec §5) as plain data, and
//! their validation. What an AIC engine *is* (model, GPU system, backend, version, parallelism,
//! dtypes) is [`AicEngineId`]; how its KV pool is estimated is [`AicKvEstimate`]. Compiling and
//! loading the engine lives in `crate::aic`.

use super::json_fields::JsonObject;
use crate::error::InputError;
use serde::{Deserialize, Serialize};

/// DynoSim's default `aic_system` (`dynamo.replay.main._DEFAULT_AIC_SYSTEM`).
pub const DEFAULT_AIC_SYSTEM: &str = "h200_sxm";

/// One AIC engine: everything AIConfigurator's compile step takes. Two pools or sweep points with
/// equal ids share one compiled and loaded engine.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AicEngineId {
    pub model_path: String,
    pub system: String,
    pub backend: String,
    pub backend_version: String,
    pub tp_size: u32,
    pub attention_dp_size: u32,
    pub moe_tp_size: Option<u32>,
    pub moe_ep_size: Option<u32>,
    pub gemm_dtype: Option<String>,
    pub moe_dtype: Option<String>,
    pub fmha_dtype: Option<String>,
    pub kv_cache_dtype: Option<String>,
    pub comm_dtype: Option<String>,
}

/// Inputs of the KV-pool estimate used when `num_gpu_blocks` is not given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AicKvEstimate {
    pub block_size: u32,
    pub max_num_batched_tokens: u64,
    /// `of_total` (vLLM, SGLang) or `of_free` (TRT-LLM).
    pub memory_fraction_kind: String,
    pub memory_fraction_value: f64,
}

/// The `aic_*` keys of one engine-args object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AicArgs {
    pub engine: AicEngineId,
    /// `Some` when `num_gpu_blocks` was not given: the pool size comes from AIC's memory model.
    pub kv_estimate: Option<AicKvEstimate>,
}

/// Memory fractions used by the KV estimate (`dynamo._internal.aic` defaults).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct MemoryFractions {
    pub gpu_memory_utilization: Option<f64>,
    pub mem_fraction_static: Option<f64>,
    pub free_gpu_memory_fraction: Option<f64>,
}

/// DynoSim's dtype normalisation: blank/`auto`/`none`/`null` mean the model default, `int4` is
/// `int4_wo`.
fn normalize_dtype(value: &str) -> Option<String> {
    let v = value.trim();
    if v.is_empty() || ["auto", "none", "null"].contains(&v.to_ascii_lowercase().as_str()) {
        return None;
    }
    Some(if v == "int4" {
        "int4_wo".into()
    } else {
        v.into()
    })
}

fn small_int(o: &JsonObject, key: &str) -> Result<Option<u32>, InputError> {
    Ok(o.int(key, 1, 4096)?.value().map(|n| n as u32))
}

/// Reads the `aic_*` keys. `None` when `aic_backend` is unset (polynomial or NPZ timing); the
/// other keys are then type-checked and have no effect, as in DynoSim. `num_gpu_blocks_given`
/// and the scheduler limits decide whether and how the KV pool is estimated.
pub(crate) fn parse_aic_args(
    o: &JsonObject,
    num_gpu_blocks_given: bool,
    block_size: u32,
    max_num_batched_tokens: Option<u64>,
    fractions: MemoryFractions,
) -> Result<Option<AicArgs>, InputError> {
    let s = |key: &str| -> Result<Option<String>, InputError> {
        Ok(o.string(key)?.value().map(str::to_string))
    };
    let backend = o
        .choice("aic_backend", &["vllm", "sglang", "trtllm"], false)?
        .value();
    let system = s("aic_system")?;
    let version = s("aic_backend_version")?;
    let model = s("aic_model_path")?;
    let tp = small_int(o, "aic_tp_size")?;
    let moe_tp = small_int(o, "aic_moe_tp_size")?;
    let moe_ep = small_int(o, "aic_moe_ep_size")?;
    let attention_dp = small_int(o, "aic_attention_dp_size")?;
    let mut dtypes = Vec::new();
    for key in [
        "aic_gemm_dtype",
        "aic_moe_dtype",
        "aic_fmha_dtype",
        "aic_kv_cache_dtype",
        "aic_comm_dtype",
    ] {
        dtypes.push(s(key)?.as_deref().and_then(normalize_dtype));
    }
    let nextn = o.int("aic_nextn", 0, 5)?.value();
    let rates = s("aic_nextn_accept_rates")?;
    o.non_null("aic_mtp_seed", o.int("aic_mtp_seed", 0, u64::MAX)?)?;
    if rates.is_some() && nextn.is_none() {
        return Err(o.error("aic_nextn_accept_rates", "requires aic_nextn"));
    }
    let configured_dp = o.int("dp_size", 1, u64::MAX)?.value().unwrap_or(1);
    let dp = attention_dp.unwrap_or(1);
    if (backend.is_some() || attention_dp.is_some())
        && configured_dp > 1
        && configured_dp != u64::from(dp)
    {
        return Err(o.error(
            "dp_size",
            format!("must match aic_attention_dp_size for AIC timing (got dp_size={configured_dp}, aic_attention_dp_size={dp})"),
        ));
    }
    let Some(backend) = backend else {
        return Ok(None);
    };
    if nextn.unwrap_or(0) > 0 {
        return Err(o.unsupported(
            "aic_nextn",
            "multi-token prediction (MTP) draft acceptance is not simulated",
        ));
    }
    let Some(model_path) = model.filter(|m| !m.is_empty()) else {
        return Err(o.error(
            "aic_backend",
            "requires aic_model_path (a model name such as \"Qwen/Qwen3-8B\" or a local model folder)",
        ));
    };
    let Some(backend_version) = version.filter(|v| !v.is_empty()) else {
        return Err(o.error(
            "aic_backend",
            "requires aic_backend_version (DynoSim 1.4.2 cannot build an AIC engine without it); \
             `dynosim aic list` prints the versions the installed perf database has",
        ));
    };
    let tp_size = tp.unwrap_or(1);
    if let (Some(mtp), Some(mep)) = (moe_tp, moe_ep) {
        if mtp * mep != tp_size * dp {
            return Err(o.error(
                "aic_moe_tp_size",
                format!("× aic_moe_ep_size must equal aic_tp_size × aic_attention_dp_size ({mtp} × {mep} ≠ {tp_size} × {dp})"),
            ));
        }
    }
    let (kind, value) = match backend {
        "trtllm" => ("of_free", fractions.free_gpu_memory_fraction.unwrap_or(0.9)),
        "sglang" => ("of_total", fractions.mem_fraction_static.unwrap_or(0.88)),
        _ => ("of_total", fractions.gpu_memory_utilization.unwrap_or(0.9)),
    };
    let mut d = dtypes.into_iter();
    Ok(Some(AicArgs {
        engine: AicEngineId {
            model_path,
            system: system
                .filter(|x| !x.is_empty())
                .unwrap_or_else(|| DEFAULT_AIC_SYSTEM.into()),
            backend: backend.to_string(),
            backend_version,
            tp_size,
            attention_dp_size: dp,
            moe_tp_size: moe_tp,
            moe_ep_size: moe_ep,
            gemm_dtype: d.next().flatten(),
            moe_dtype: d.next().flatten(),
            fmha_dtype: d.next().flatten(),
            kv_cache_dtype: d.next().flatten(),
            comm_dtype: d.next().flatten(),
        },
        kv_estimate: (!num_gpu_blocks_given).then(|| AicKvEstimate {
            block_size,
            max_num_batched_tokens: max_num_batched_tokens.unwrap_or(8192),
            memory_fraction_kind: kind.into(),
            memory_fraction_value: value,
        }),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: serde_json::Value, given: bool) -> Result<Option<AicArgs>, InputError> {
        let o = JsonObject::new(&v, "--extra-engine-args", "engine args").unwrap();
        parse_aic_args(&o, given, 64, Some(8192), MemoryFractions::default())
    }

    fn qwen() -> serde_json::Value {
        json!({"aic_backend": "vllm", "aic_model_path": "Qwen/Qwen3-8B", "aic_backend_version": "0.19.0"})
    }

    #[test]
    fn defaults_follow_dynosim() {
        let a = parse(qwen(), false).unwrap().unwrap();
        assert_eq!(a.engine.system, "h200_sxm");
        assert_eq!(a.engine.tp_size, 1);
        assert_eq!(a.engine.attention_dp_size, 1);
        let kv = a.kv_estimate.unwrap();
        assert_eq!((kv.block_size, kv.max_num_batched_tokens), (64, 8192));
        assert_eq!(
            (kv.memory_fraction_kind.as_str(), kv.memory_fraction_value),
            ("of_total", 0.9)
        );
        assert!(parse(qwen(), true).unwrap().unwrap().kv_estimate.is_none());
    }

    #[test]
    fn without_backend_nothing_is_timed_by_aic() {
        assert!(parse(json!({"aic_tp_size": 2}), false).unwrap().is_none());
    }

    #[test]
    fn dtypes_are_normalised() {
        let mut v = qwen();
        v["aic_gemm_dtype"] = json!("auto");
        v["aic_kv_cache_dtype"] = json!("fp8");
        v["aic_moe_dtype"] = json!("int4");
        let a = parse(v, true).unwrap().unwrap();
        assert_eq!(a.engine.gemm_dtype, None);
        assert_eq!(a.engine.kv_cache_dtype.as_deref(), Some("fp8"));
        assert_eq!(a.engine.moe_dtype.as_deref(), Some("int4_wo"));
    }

    #[test]
    fn refusals_name_the_key() {
        for (patch, needle) in [
            (json!({"aic_model_path": null}), "requires aic_model_path"),
            (
                json!({"aic_backend_version": null}),
                "requires aic_backend_version",
            ),
            (json!({"aic_nextn": 1}), "\"aic_nextn\" is not supported"),
            (json!({"aic_tp_size": 0}), "\"aic_tp_size\""),
            (json!({"aic_backend": "tensorrt"}), "\"aic_backend\""),
            (json!({"dp_size": 2}), "must match aic_attention_dp_size"),
            (
                json!({"aic_moe_tp_size": 2, "aic_moe_ep_size": 2}),
                "must equal aic_tp_size",
            ),
            (
                json!({"aic_nextn_accept_rates": "0.8"}),
                "requires aic_nextn",
            ),
        ] {
            let mut v = qwen();
            for (k, x) in patch.as_object().unwrap() {
                v[k] = x.clone();
            }
            let e = parse(v, false).unwrap_err().to_string();
            assert!(e.contains(needle), "{e} lacks {needle}");
            assert!(e.starts_with("--extra-engine-args"), "{e}");
        }
    }
}
