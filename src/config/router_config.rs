//! Parsing of `--router-config` JSON (upstream's partial `KvRouterConfig`, spec §6.3–6.4) into
//! [`RouterConfig`].
//!
//! All upstream keys are known. The cost-model and queueing keys are validated and kept; keys that
//! only matter to a live router (event transport, TTLs, indexer deployment, tier credits without
//! KVBM) are type-checked and dropped; policy-class YAML and conditional disaggregation would
//! change results and are refused. `router_prefill_load_model: "aic"` is kept; its estimator comes
//! from the `--aic-*` flags (or a sweep's `router.aic_*` keys) and is attached by the caller. The deprecated
//! `overlap_score_weight = x` is applied last, as upstream does: `prefill_load_scale = x` and, when
//! `x == 0`, `overlap_score_credit = 0`.

use super::json_fields::{parse_json_text, JsonObject};
use super::{PrefillLoadModel, QueuePolicy, RouterConfig};
use crate::error::InputError;
use serde_json::Value;

/// Every key upstream's `KvRouterConfig` accepts, in the order of the spec's table.
pub const ROUTER_CONFIG_KEYS: &[&str] = &[
    "overlap_score_credit",
    "overlap_score_credit_decay",
    "prefill_load_scale",
    "decode_active_request_weight",
    "overlap_score_weight",
    "router_temperature",
    "router_track_active_blocks",
    "router_track_output_blocks",
    "router_assume_kv_reuse",
    "router_track_prefill_tokens",
    "router_prefill_load_model",
    "router_queue_threshold",
    "router_queue_policy",
    "router_policy_config",
    "host_cache_hit_weight",
    "disk_cache_hit_weight",
    "shared_cache_multiplier",
    "shared_cache_type",
    "use_kv_events",
    "durable_kv_events",
    "router_ttl_secs",
    "router_replica_sync",
    "router_event_threads",
    "router_snapshot_threshold",
    "router_reset_states",
    "skip_initial_worker_wait",
    "use_remote_indexer",
    "serve_indexer",
    "router_tracking_hash",
    "router_tracking_key_file",
    "router_tracking_key_id",
    "router_predicted_ttl_secs",
    "conditional_disagg_enabled",
    "conditional_disagg_policy",
    "conditional_disagg_eff_isl_threshold",
    "conditional_disagg_eff_isl_ratio_threshold",
    "conditional_disagg_prefill_busy_threshold",
    "conditional_disagg_decode_busy_threshold",
];

const INF: f64 = f64::INFINITY;

/// Parses JSON text given to `flag` (normally `--router-config`).
pub fn parse_router_config_str(json: &str, flag: &str) -> Result<RouterConfig, InputError> {
    parse_router_config(&parse_json_text(json, flag)?, flag)
}

/// Validates one router-config object. `origin` (a flag or YAML key path) prefixes every message.
pub fn parse_router_config(value: &Value, origin: &str) -> Result<RouterConfig, InputError> {
    let o = JsonObject::new(value, origin, "router config")?;
    o.reject_unknown_keys(ROUTER_CONFIG_KEYS)?;
    let mut c = RouterConfig::default();

    let float = |key: &str, min: f64, max: f64| -> Result<Option<f64>, InputError> {
        o.non_null(key, o.float(key, min, max)?)
    };
    let flag = |key: &str| -> Result<Option<bool>, InputError> { o.non_null(key, o.bool(key)?) };

    if let Some(x) = float("overlap_score_credit", 0.0, INF)? {
        c.overlap_score_credit = x;
    }
    if let Some(x) = float("overlap_score_credit_decay", 0.0, INF)? {
        c.overlap_score_credit_decay = x;
    }
    if let Some(x) = float("prefill_load_scale", 0.0, INF)? {
        c.prefill_load_scale = x;
    }
    if let Some(x) = float("decode_active_request_weight", 0.0, INF)? {
        c.decode_active_request_weight = x;
    }
    if let Some(x) = float("router_temperature", 0.0, INF)? {
        c.router_temperature = x;
    }
    if let Some(b) = flag("router_track_active_blocks")? {
        c.router_track_active_blocks = b;
    }
    if let Some(b) = flag("router_track_output_blocks")? {
        c.router_track_output_blocks = b;
    }
    if let Some(b) = flag("router_assume_kv_reuse")? {
        c.router_assume_kv_reuse = b;
    }
    if let Some(b) = flag("router_track_prefill_tokens")? {
        c.router_track_prefill_tokens = b;
    }
    if c.router_track_output_blocks && !c.router_track_active_blocks {
        return Err(o.error(
            "router_track_output_blocks",
            "= true requires router_track_active_blocks = true",
        ));
    }
    if let Some(m) = o.non_null(
        "router_prefill_load_model",
        o.choice("router_prefill_load_model", &["none", "aic"], false)?,
    )? {
        if m == "aic" {
            if !c.router_track_prefill_tokens {
                return Err(o.error(
                    "router_prefill_load_model",
                    "= \"aic\" requires router_track_prefill_tokens = true",
                ));
            }
            c.router_prefill_load_model = PrefillLoadModel::Aic;
        }
    }
    c.router_queue_threshold = o.float("router_queue_threshold", 0.0, INF)?.value();
    if let Some(p) = o.non_null(
        "router_queue_policy",
        o.choice("router_queue_policy", &["fcfs", "lcfs", "wspt"], false)?,
    )? {
        c.router_queue_policy = match p {
            "lcfs" => QueuePolicy::Lcfs,
            "wspt" => QueuePolicy::Wspt,
            _ => QueuePolicy::Fcfs,
        };
    }
    if o.string("router_policy_config")?.is_set() {
        return Err(o.unsupported(
            "router_policy_config",
            "policy-class router queues are not simulated",
        ));
    }
    if flag("conditional_disagg_enabled")? == Some(true) {
        return Err(o.unsupported(
            "conditional_disagg_enabled",
            "conditional disaggregation is not simulated",
        ));
    }
    parse_live_router_keys(&o)?;

    // Deprecated alias, applied after the keys it overrides (upstream precedence).
    if let Some(w) = o.float("overlap_score_weight", 0.0, INF)?.value() {
        c.prefill_load_scale = w;
        if w == 0.0 {
            c.overlap_score_credit = 0.0;
        }
    }
    Ok(c)
}

/// Keys with no effect on the offline router: validated like upstream, then dropped.
fn parse_live_router_keys(o: &JsonObject) -> Result<(), InputError> {
    for key in [
        "host_cache_hit_weight",
        "disk_cache_hit_weight",
        "shared_cache_multiplier",
    ] {
        o.non_null(key, o.float(key, 0.0, 1.0)?)?;
    }
    o.non_null(
        "shared_cache_type",
        o.choice("shared_cache_type", &["none", "hicache"], false)?,
    )?;
    for key in [
        "use_kv_events",
        "durable_kv_events",
        "router_replica_sync",
        "router_reset_states",
        "skip_initial_worker_wait",
        "use_remote_indexer",
        "serve_indexer",
    ] {
        o.non_null(key, o.bool(key)?)?;
    }
    o.non_null("router_ttl_secs", o.float("router_ttl_secs", 0.0, INF)?)?;
    o.non_null(
        "router_event_threads",
        o.int("router_event_threads", 1, u32::MAX as u64)?,
    )?;
    o.int("router_snapshot_threshold", 0, u32::MAX as u64)?;
    let hash = o.non_null(
        "router_tracking_hash",
        o.choice(
            "router_tracking_hash",
            &["public-xxh3-v1", "keyed-xxh3-v1"],
            false,
        )?,
    )?;
    for key in ["router_tracking_key_file", "router_tracking_key_id"] {
        if o.string(key)?.is_set() && hash != Some("keyed-xxh3-v1") {
            return Err(o.error(key, "requires router_tracking_hash = \"keyed-xxh3-v1\""));
        }
    }
    o.float("router_predicted_ttl_secs", 0.0, INF)?;
    o.non_null(
        "conditional_disagg_policy",
        o.choice(
            "conditional_disagg_policy",
            &["isl_bounding", "prefill_load", "isl_or_load"],
            false,
        )?,
    )?;
    o.non_null(
        "conditional_disagg_eff_isl_threshold",
        o.int("conditional_disagg_eff_isl_threshold", 0, u64::MAX)?,
    )?;
    o.non_null(
        "conditional_disagg_eff_isl_ratio_threshold",
        o.float("conditional_disagg_eff_isl_ratio_threshold", 0.0, 1.0)?,
    )?;
    for key in [
        "conditional_disagg_prefill_busy_threshold",
        "conditional_disagg_decode_busy_threshold",
    ] {
        o.float(key, 0.0, INF)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const F: &str = "--router-config";

    fn ok(v: Value) -> RouterConfig {
        parse_router_config(&v, F).unwrap_or_else(|e| panic!("{v} rejected: {e}"))
    }

    fn err(v: Value) -> String {
        match parse_router_config(&v, F) {
            Ok(c) => panic!("{v} accepted: {c:?}"),
            Err(e) => {
                assert!(
                    e.to_string().starts_with(F),
                    "message does not name the flag: {e}"
                );
                e.to_string()
            }
        }
    }

    #[test]
    fn empty_object_gives_defaults() {
        assert_eq!(ok(json!({})), RouterConfig::default());
    }

    #[test]
    fn offline_keys_are_copied() {
        let c = ok(json!({
            "overlap_score_credit": 0.5,
            "overlap_score_credit_decay": 2,
            "prefill_load_scale": 3.0,
            "decode_active_request_weight": 0.25,
            "router_temperature": 0.7,
            "router_track_active_blocks": true,
            "router_track_output_blocks": true,
            "router_assume_kv_reuse": false,
            "router_track_prefill_tokens": false,
            "router_queue_threshold": 1.5,
            "router_queue_policy": "lcfs",
            "router_prefill_load_model": "none",
        }));
        assert_eq!(c.overlap_score_credit, 0.5);
        assert_eq!(c.overlap_score_credit_decay, 2.0);
        assert_eq!(c.prefill_load_scale, 3.0);
        assert_eq!(c.decode_active_request_weight, 0.25);
        assert_eq!(c.router_temperature, 0.7);
        assert!(c.router_track_output_blocks);
        assert!(!c.router_assume_kv_reuse);
        assert!(!c.router_track_prefill_tokens);
        assert_eq!(c.router_queue_threshold, Some(1.5));
        assert_eq!(c.router_queue_policy, QueuePolicy::Lcfs);
        assert_eq!(
            ok(json!({"router_queue_threshold": null})).router_queue_threshold,
            None
        );
    }

    #[test]
    fn deprecated_overlap_score_weight_maps_to_scale_and_credit() {
        let c = ok(json!({"overlap_score_weight": 2.5}));
        assert_eq!((c.prefill_load_scale, c.overlap_score_credit), (2.5, 1.0));
        // Overrides the explicit keys, whatever their order in the object.
        let c = ok(json!({"prefill_load_scale": 3, "overlap_score_weight": 2}));
        assert_eq!(c.prefill_load_scale, 2.0);
        let c = ok(json!({"overlap_score_weight": 0, "overlap_score_credit": 0.5}));
        assert_eq!((c.prefill_load_scale, c.overlap_score_credit), (0.0, 0.0));
        assert_eq!(
            ok(json!({"overlap_score_weight": null})),
            RouterConfig::default()
        );
        err(json!({"overlap_score_weight": -1}));
    }

    #[test]
    fn unknown_keys_get_a_suggestion() {
        let m = err(json!({"router_temprature": 0.5}));
        assert!(m.contains("unknown key \"router_temprature\""), "{m}");
        assert!(m.contains("did you mean \"router_temperature\""), "{m}");
        assert!(m.contains("Valid keys: overlap_score_credit,"), "{m}");
    }

    #[test]
    fn must_be_an_object_and_valid_json() {
        let m = parse_router_config_str("[1]", F).unwrap_err().to_string();
        assert!(m.contains("router config must be a JSON object"), "{m}");
        let m = parse_router_config_str("{\"a\" 1}", F)
            .unwrap_err()
            .to_string();
        assert!(
            m.starts_with("--router-config: invalid JSON at line 1 column"),
            "{m}"
        );
    }

    #[test]
    fn ranges_and_types() {
        for (v, key) in [
            (json!({"overlap_score_credit": -1}), "overlap_score_credit"),
            (
                json!({"overlap_score_credit_decay": -0.1}),
                "overlap_score_credit_decay",
            ),
            (json!({"prefill_load_scale": -1}), "prefill_load_scale"),
            (
                json!({"decode_active_request_weight": -1}),
                "decode_active_request_weight",
            ),
            (json!({"router_temperature": -1}), "router_temperature"),
            (
                json!({"router_queue_threshold": -0.5}),
                "router_queue_threshold",
            ),
            (
                json!({"overlap_score_credit": null}),
                "overlap_score_credit",
            ),
            (json!({"overlap_score_credit": "1"}), "overlap_score_credit"),
            (
                json!({"router_track_active_blocks": 1}),
                "router_track_active_blocks",
            ),
            (
                json!({"router_queue_policy": "WSPT"}),
                "router_queue_policy",
            ),
            (json!({"router_queue_policy": null}), "router_queue_policy"),
            (
                json!({"router_prefill_load_model": "linear"}),
                "router_prefill_load_model",
            ),
            (
                json!({"host_cache_hit_weight": 1.5}),
                "host_cache_hit_weight",
            ),
            (json!({"router_event_threads": 0}), "router_event_threads"),
            (json!({"router_ttl_secs": -1}), "router_ttl_secs"),
            (json!({"shared_cache_type": "redis"}), "shared_cache_type"),
            (
                json!({"router_tracking_key_id": "k"}),
                "router_tracking_key_id",
            ),
        ] {
            let m = err(v);
            assert!(m.contains(&format!("\"{key}\"")), "{m}");
        }
    }

    #[test]
    fn output_block_tracking_needs_active_block_tracking() {
        let m = err(json!({
            "router_track_output_blocks": true,
            "router_track_active_blocks": false
        }));
        assert!(m.contains("requires router_track_active_blocks"), "{m}");
    }

    #[test]
    fn the_aic_load_model_needs_prefill_tracking() {
        assert_eq!(
            ok(json!({"router_prefill_load_model": "aic"})).router_prefill_load_model,
            PrefillLoadModel::Aic
        );
        let m = err(json!({
            "router_prefill_load_model": "aic",
            "router_track_prefill_tokens": false
        }));
        assert!(m.contains("requires router_track_prefill_tokens"), "{m}");
    }

    #[test]
    fn unmodelled_features_are_refused() {
        for v in [
            json!({"router_policy_config": "/etc/policy.yaml"}),
            json!({"conditional_disagg_enabled": true}),
        ] {
            let m = err(v);
            assert!(m.contains("not supported by dynosim yet"), "{m}");
        }
    }

    #[test]
    fn live_router_keys_are_accepted_and_ignored() {
        let c = ok(json!({
            "use_kv_events": false,
            "durable_kv_events": false,
            "router_ttl_secs": 120,
            "router_replica_sync": true,
            "router_event_threads": 4,
            "router_snapshot_threshold": null,
            "router_reset_states": false,
            "skip_initial_worker_wait": true,
            "use_remote_indexer": false,
            "serve_indexer": false,
            "router_tracking_hash": "keyed-xxh3-v1",
            "router_tracking_key_id": "k1",
            "router_predicted_ttl_secs": null,
            "host_cache_hit_weight": 0.75,
            "disk_cache_hit_weight": 0.25,
            "shared_cache_multiplier": 0.0,
            "shared_cache_type": "none",
            "router_policy_config": null,
            "conditional_disagg_enabled": false,
            "conditional_disagg_policy": "isl_bounding",
            "conditional_disagg_eff_isl_threshold": 1000,
            "conditional_disagg_eff_isl_ratio_threshold": 0.5,
            "conditional_disagg_prefill_busy_threshold": null,
            "conditional_disagg_decode_busy_threshold": 2.0,
        }));
        assert_eq!(c, RouterConfig::default());
    }
}
