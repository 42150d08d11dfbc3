//! The `aic_*` engine args (DynoSim's AIConfigurator timing, breadth spec §5) and the KV
//! router's `--aic-*` flags / `router.aic_*` keys: read from JSON or flags and validated with
//! DynoSim's rules into the plain data `crate::timing::aic` defines ([`AicArgs`],
//! [`AicEngineId`], [`AicKvEstimate`]). Compiling and loading the engine is
//! `crate::timing::TimingLoader`'s, a separate step after parsing.

use super::json_fields::JsonObject;
use super::Mtp;
use crate::error::InputError;
use crate::timing::aic::{AicArgs, AicEngineId, AicKvEstimate, PrefillLoadEstimator};
use crate::timing::TimingLoader;

/// DynoSim's default `aic_system` (`dynamo.replay.main._DEFAULT_AIC_SYSTEM`).
pub const DEFAULT_AIC_SYSTEM: &str = "h200_sxm";

/// Memory fractions used by the KV estimate (`dynamo._internal.aic` defaults).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct MemoryFractions {
    pub gpu_memory_utilization: Option<f64>,
    pub mem_fraction_static: Option<f64>,
    pub free_gpu_memory_fraction: Option<f64>,
    /// `aic_memory_model: server`: size the pool by the server's own accounting where it differs
    /// from AIC's (SGLang's static fraction holds weights and KV only; the weights as the
    /// checkpoint holds them) instead of AIC's.
    pub server_accounting: bool,
}

/// DynoSim's dtype normalisation: blank/`auto`/`none`/`null` mean the model default, `int4` is
/// `int4_wo`.
pub(crate) fn normalize_dtype(value: &str) -> Option<String> {
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
    let monotone_decode = o.bool("aic_decode_monotone")?.value().unwrap_or(false);
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
        // SGLang's `mem_fraction_static` holds the weights and the KV pool; activations and
        // CUDA graphs live outside it, where AIC's `of_total` (vLLM's accounting) takes them out
        // of the fraction too. `of_static` is dynosim's own (helper.py).
        "sglang" => (
            if fractions.server_accounting {
                "of_static"
            } else {
                "of_total"
            },
            fractions.mem_fraction_static.unwrap_or(0.88),
        ),
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
            // Multi-token prediction's, set from `parse_mtp` by the caller.
            nextn: None,
        },
        kv_estimate: (!num_gpu_blocks_given).then(|| AicKvEstimate {
            block_size,
            max_num_batched_tokens: max_num_batched_tokens.unwrap_or(8192),
            memory_fraction_kind: kind.into(),
            memory_fraction_value: value,
            checkpoint_weights: fractions.server_accounting,
        }),
        monotone_decode,
    }))
}

/// DynoSim's multi-token prediction keys (`aic_nextn`, `aic_nextn_accept_rates`,
/// `aic_mtp_seed`), with or without AIC timing, checked with DynoSim 1.4.2's rules: `aic_nextn`
/// 1..=5; the rates comma-separated, each finite and in [0, 1], zero-padded or truncated to
/// `aic_nextn` (AIC's defaults 0.85, 0.3, 0, 0, 0 when absent); rates need `aic_nextn`; and
/// `decode_speedup_ratio` must stay 1 (the speed-up of MTP is its bursts).
pub(crate) fn parse_mtp(
    o: &JsonObject,
    decode_speedup_ratio: f64,
) -> Result<Option<Mtp>, InputError> {
    // null = absent, as DynoSim's optional keys.
    let nextn = o.int("aic_nextn", 0, u64::MAX)?.value();
    let rates = o.string("aic_nextn_accept_rates")?.value();
    let seed = o
        .non_null("aic_mtp_seed", o.int("aic_mtp_seed", 0, u64::MAX)?)?
        .unwrap_or(Mtp::DEFAULT_SEED);
    let Some(nextn) = nextn else {
        if rates.is_some() {
            return Err(o.error("aic_nextn_accept_rates", "requires aic_nextn"));
        }
        return Ok(None);
    };
    if !(1..=5).contains(&nextn) {
        return Err(o.error(
            "aic_nextn",
            format!("must be 1..=5 (omit it to disable multi-token prediction), got {nextn}"),
        ));
    }
    let mut accept_rates = match rates.map(str::trim).filter(|r| !r.is_empty()) {
        None => Mtp::DEFAULT_ACCEPT_RATES.to_vec(),
        Some(r) => {
            let mut v = Vec::new();
            for (i, x) in r.split(',').enumerate() {
                let rate: f64 = x.trim().parse().map_err(|_| {
                    o.error(
                        "aic_nextn_accept_rates",
                        format!(
                            "must be comma-separated numbers, got {:?} at position {}",
                            x.trim(),
                            i + 1
                        ),
                    )
                })?;
                if !rate.is_finite() || !(0.0..=1.0).contains(&rate) {
                    return Err(o.error(
                        "aic_nextn_accept_rates",
                        format!(
                            "values must be finite and in [0, 1], got {rate} at position {}",
                            i + 1
                        ),
                    ));
                }
                v.push(rate);
            }
            v
        }
    };
    accept_rates.resize(nextn as usize, 0.0);
    if decode_speedup_ratio != 1.0 {
        return Err(o.error(
            "aic_nextn",
            format!(
                "requires decode_speedup_ratio = 1 (multi-token prediction speeds decoding up by its \
                 bursts of accepted tokens), got decode_speedup_ratio = {decode_speedup_ratio}"
            ),
        ));
    }
    Ok(Some(Mtp {
        nextn: nextn as u32,
        accept_rates,
        seed,
    }))
}

/// The KV router's AIC prefill-load estimator as the user gave it: the `--aic-*` flags of
/// `dynosim run` (DynoSim's), or a sweep's `router.aic_*` keys. Keys are the flag names with
/// `_` (`aic_backend`, …).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RouterAicValues {
    pub backend: Option<String>,
    pub system: Option<String>,
    pub backend_version: Option<String>,
    pub model_path: Option<String>,
    pub tp_size: Option<i64>,
    pub moe_tp_size: Option<i64>,
    pub moe_ep_size: Option<i64>,
    pub attention_dp_size: Option<i64>,
    /// gemm, moe, fmha, kv_cache, comm.
    pub dtypes: [Option<String>; 5],
    pub nextn: Option<i64>,
    pub nextn_accept_rates: Option<String>,
}

/// The keys of [`RouterAicValues`], as in a sweep's `router` object.
pub const ROUTER_AIC_KEYS: &[&str] = &[
    "aic_backend",
    "aic_system",
    "aic_backend_version",
    "aic_model_path",
    "aic_tp_size",
    "aic_moe_tp_size",
    "aic_moe_ep_size",
    "aic_attention_dp_size",
    "aic_gemm_dtype",
    "aic_moe_dtype",
    "aic_fmha_dtype",
    "aic_kv_cache_dtype",
    "aic_comm_dtype",
    "aic_nextn",
    "aic_nextn_accept_rates",
];

impl RouterAicValues {
    /// The `aic_*` keys of a JSON object (a sweep's `router`, named `origin` in messages),
    /// type-checked; other keys are not looked at.
    pub fn from_json(v: &serde_json::Value, origin: &str) -> Result<Self, InputError> {
        let o = JsonObject::new(v, origin, "router config")?;
        let o = &o;
        let s = |key: &str| -> Result<Option<String>, InputError> {
            Ok(o.string(key)?.value().map(str::to_string))
        };
        let n = |key: &str| -> Result<Option<i64>, InputError> {
            Ok(o.int(key, 0, 4096)?.value().map(|x| x as i64))
        };
        Ok(RouterAicValues {
            backend: s("aic_backend")?,
            system: s("aic_system")?,
            backend_version: s("aic_backend_version")?,
            model_path: s("aic_model_path")?,
            tp_size: n("aic_tp_size")?,
            moe_tp_size: n("aic_moe_tp_size")?,
            moe_ep_size: n("aic_moe_ep_size")?,
            attention_dp_size: n("aic_attention_dp_size")?,
            dtypes: [
                s("aic_gemm_dtype")?,
                s("aic_moe_dtype")?,
                s("aic_fmha_dtype")?,
                s("aic_kv_cache_dtype")?,
                s("aic_comm_dtype")?,
            ],
            nextn: n("aic_nextn")?,
            nextn_accept_rates: s("aic_nextn_accept_rates")?,
        })
    }
}

/// Validates the router's AIC settings with DynoSim 1.4.2's rules and returns the engine they
/// name, or `None` when none is set (an `auto` dtype alone sets nothing). `name` turns a key
/// (`aic_backend`) into what the user wrote (`--aic-backend`, `router.aic_backend`).
///
/// As DynoSim: `--aic-backend`, `--aic-system` and `--aic-model-path` are required together;
/// an `--aic-tp-size` of 0 means 1; `--aic-nextn` (1..=5) and its acceptance rates are checked
/// and then have no effect (the router predicts prefill only, which MTP does not change, and
/// DynoSim 1.4.2 does not pass them on to engine timing either). Unlike DynoSim, which fails
/// while building the engine, a missing `--aic-backend-version` is refused here.
pub fn router_aic_engine(
    v: &RouterAicValues,
    name: impl Fn(&str) -> String,
) -> Result<Option<AicEngineId>, InputError> {
    let dtypes: Vec<Option<String>> = v
        .dtypes
        .iter()
        .map(|d| d.as_deref().and_then(normalize_dtype))
        .collect();
    let any = v.backend.is_some()
        || v.system.is_some()
        || v.backend_version.is_some()
        || v.model_path.is_some()
        || v.tp_size.is_some()
        || v.moe_tp_size.is_some()
        || v.moe_ep_size.is_some()
        || v.attention_dp_size.is_some()
        || dtypes.iter().any(Option::is_some)
        || v.nextn.is_some()
        || v.nextn_accept_rates.is_some();
    if !any {
        return Ok(None);
    }
    let err = |key: &str, what: String| InputError::new(format!("{} {what}", name(key)));
    let size = |key: &str, x: Option<i64>| -> Result<Option<u32>, InputError> {
        match x {
            None => Ok(None),
            Some(n) if (1..=4096).contains(&n) => Ok(Some(n as u32)),
            Some(n) => Err(err(
                key,
                format!("must be an integer from 1 to 4096, got {n}"),
            )),
        }
    };
    let missing: Vec<String> = [
        ("aic_backend", &v.backend),
        ("aic_system", &v.system),
        ("aic_model_path", &v.model_path),
    ]
    .iter()
    .filter(|(_, x)| x.is_none())
    .map(|(k, _)| name(k))
    .collect();
    if !missing.is_empty() {
        return Err(InputError::new(format!(
            "the KV router's AIC prefill-load estimator (any {} setting) requires {}",
            name("aic_*"),
            missing.join(", ")
        )));
    }
    if let Some(n) = v.nextn {
        if !(1..=5).contains(&n) {
            return Err(err(
                "aic_nextn",
                format!(
                    "must be 1..=5 when set (omit it to disable speculative decoding), got {n}"
                ),
            ));
        }
        if let Some(rates) = &v.nextn_accept_rates {
            let parsed: Result<Vec<f64>, _> = rates
                .split(',')
                .filter(|x| !x.trim().is_empty())
                .map(|x| x.trim().parse::<f64>())
                .collect();
            match parsed {
                Err(_) => {
                    return Err(err(
                        "aic_nextn_accept_rates",
                        format!("must be comma-separated floats, got {rates:?}"),
                    ))
                }
                Ok(r) if r.iter().any(|x| !x.is_finite() || !(0.0..=1.0).contains(x)) => {
                    return Err(err(
                        "aic_nextn_accept_rates",
                        format!("must be finite floats in [0, 1], got {rates:?}"),
                    ))
                }
                Ok(_) => {}
            }
        }
    }
    let text = |key: &str, x: &Option<String>| -> Result<String, InputError> {
        match x.as_deref().map(str::trim) {
            Some(t) if !t.is_empty() => Ok(t.to_string()),
            _ => Err(err(key, "must be non-empty".into())),
        }
    };
    let backend = text("aic_backend", &v.backend)?;
    if !["vllm", "sglang", "trtllm"].contains(&backend.as_str()) {
        return Err(err(
            "aic_backend",
            format!("{backend:?} is not an AIC backend; expected trtllm, sglang, or vllm"),
        ));
    }
    let system = text("aic_system", &v.system)?;
    let model_path = text("aic_model_path", &v.model_path)?;
    let Some(backend_version) = v
        .backend_version
        .as_deref()
        .filter(|x| !x.trim().is_empty())
    else {
        return Err(err(
            "aic_backend_version",
            "is required: DynoSim 1.4.2 cannot build the router's AIC engine without it              (`dynosim aic list` prints the versions of the installed perf data)"
                .into(),
        ));
    };
    // DynoSim passes `aic_tp_size or 1`.
    let tp_size = match v.tp_size {
        Some(0) | None => 1,
        x => size("aic_tp_size", x)?.unwrap_or(1),
    };
    let moe_tp = size("aic_moe_tp_size", v.moe_tp_size)?;
    let moe_ep = size("aic_moe_ep_size", v.moe_ep_size)?;
    let dp = size("aic_attention_dp_size", v.attention_dp_size)?.unwrap_or(1);
    if let (Some(mtp), Some(mep)) = (moe_tp, moe_ep) {
        if mtp * mep != tp_size * dp {
            return Err(InputError::new(format!(
                "{} × {} must equal {} × {} ({mtp} × {mep} ≠ {tp_size} × {dp})",
                name("aic_moe_tp_size"),
                name("aic_moe_ep_size"),
                name("aic_tp_size"),
                name("aic_attention_dp_size"),
            )));
        }
    }
    let mut d = dtypes.into_iter();
    Ok(Some(AicEngineId {
        model_path,
        system,
        backend,
        backend_version: backend_version.trim().to_string(),
        tp_size,
        attention_dp_size: dp,
        moe_tp_size: moe_tp,
        moe_ep_size: moe_ep,
        gemm_dtype: d.next().flatten(),
        moe_dtype: d.next().flatten(),
        fmha_dtype: d.next().flatten(),
        kv_cache_dtype: d.next().flatten(),
        comm_dtype: d.next().flatten(),
        // The router predicts prefill passes, which MTP does not change.
        nextn: None,
    }))
}

/// Loads the KV router's AIC prefill-load estimator for `id` (`router_prefill_load_model:
/// "aic"`) through `loader`: the engine is compiled and loaded once, and shared with AIC timing
/// of the same engine. `origin` prefixes errors.
pub fn load_prefill_load_estimator(
    loader: &mut TimingLoader,
    id: &AicEngineId,
    origin: &str,
) -> Result<PrefillLoadEstimator, InputError> {
    loader
        .aic_latency(id)
        .map(PrefillLoadEstimator::new)
        .map_err(|e| e.with_origin(origin))
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

    fn flag(k: &str) -> String {
        format!("--{}", k.replace('_', "-"))
    }

    fn router_qwen() -> RouterAicValues {
        RouterAicValues {
            backend: Some("vllm".into()),
            system: Some("h200_sxm".into()),
            backend_version: Some("0.19.0".into()),
            model_path: Some("Qwen/Qwen3-8B".into()),
            ..Default::default()
        }
    }

    #[test]
    fn router_flags_name_the_same_engine_as_engine_args() {
        let a = parse(qwen(), true).unwrap().unwrap();
        let r = router_aic_engine(&router_qwen(), flag).unwrap().unwrap();
        assert_eq!(r, a.engine);
        // tp 0 is DynoSim's `or 1`; `auto` dtypes alone set nothing.
        let mut v = router_qwen();
        v.tp_size = Some(0);
        assert_eq!(router_aic_engine(&v, flag).unwrap().unwrap().tp_size, 1);
        let auto = RouterAicValues {
            dtypes: [Some("auto".into()), None, None, None, None],
            ..Default::default()
        };
        assert_eq!(router_aic_engine(&auto, flag).unwrap(), None);
        // MTP settings are checked, then have no effect on the engine.
        let mut v = router_qwen();
        v.nextn = Some(2);
        v.nextn_accept_rates = Some("0.8,0.4".into());
        assert_eq!(router_aic_engine(&v, flag).unwrap().unwrap(), a.engine);
    }

    #[test]
    fn router_flag_refusals_follow_dynosim() {
        let only_backend = RouterAicValues {
            backend: Some("vllm".into()),
            ..Default::default()
        };
        let e = router_aic_engine(&only_backend, flag)
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("requires --aic-system, --aic-model-path"),
            "{e}"
        );
        for (patch, needle) in [
            (
                RouterAicValues {
                    backend: Some("foo".into()),
                    ..router_qwen()
                },
                "--aic-backend \"foo\" is not an AIC backend",
            ),
            (
                RouterAicValues {
                    backend_version: None,
                    ..router_qwen()
                },
                "--aic-backend-version is required",
            ),
            (
                RouterAicValues {
                    nextn: Some(6),
                    ..router_qwen()
                },
                "--aic-nextn must be 1..=5",
            ),
            (
                RouterAicValues {
                    nextn: Some(1),
                    nextn_accept_rates: Some("garbage".into()),
                    ..router_qwen()
                },
                "--aic-nextn-accept-rates must be comma-separated floats",
            ),
            (
                RouterAicValues {
                    moe_tp_size: Some(0),
                    ..router_qwen()
                },
                "--aic-moe-tp-size must be an integer from 1",
            ),
            (
                RouterAicValues {
                    tp_size: Some(-1),
                    ..router_qwen()
                },
                "--aic-tp-size must be an integer from 1",
            ),
            (
                RouterAicValues {
                    system: Some(" ".into()),
                    ..router_qwen()
                },
                "--aic-system must be non-empty",
            ),
        ] {
            let e = router_aic_engine(&patch, flag).unwrap_err().to_string();
            assert!(e.contains(needle), "{e} lacks {needle}");
        }
    }

    #[test]
    fn refusals_name_the_key() {
        for (patch, needle) in [
            (json!({"aic_model_path": null}), "requires aic_model_path"),
            (
                json!({"aic_backend_version": null}),
                "requires aic_backend_version",
            ),
            (json!({"aic_tp_size": 0}), "\"aic_tp_size\""),
            (json!({"aic_backend": "tensorrt"}), "\"aic_backend\""),
            (json!({"dp_size": 2}), "must match aic_attention_dp_size"),
            (
                json!({"aic_moe_tp_size": 2, "aic_moe_ep_size": 2}),
                "must equal aic_tp_size",
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
