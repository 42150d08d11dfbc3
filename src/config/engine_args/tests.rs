use super::*;
use serde_json::json;

const F: &str = "--extra-engine-args";

/// Parses and loads `v`, as `dynosim run` does.
fn parse_and_load(v: &Value) -> Result<EngineArgs, InputError> {
    parse_engine_args(v, F).and_then(|p| p.load(&mut TimingLoader::default()))
}

fn ok(v: Value) -> EngineArgs {
    parse_and_load(&v).unwrap_or_else(|e| panic!("{v} rejected: {e}"))
}

fn err(v: Value) -> String {
    match parse_and_load(&v) {
        Ok(a) => panic!("{v} accepted: {a:?}"),
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
fn empty_object_gives_the_documented_defaults() {
    let a = ok(json!({}));
    assert_eq!(a, EngineArgs::default());
    assert_eq!(a.num_gpu_blocks, 16384);
    assert_eq!(a.block_size, 64);
    assert_eq!(a.max_num_seqs, Some(256));
    assert_eq!(a.max_num_batched_tokens, Some(8192));
    assert_eq!(a.tp_size, 1);
}

#[test]
fn simulated_keys_are_copied() {
    let a = ok(json!({
        "engine_type": "VLLM",
        "num_gpu_blocks": 1000,
        "block_size": 16,
        "max_model_len": 4096,
        "max_num_seqs": 8,
        "max_num_batched_tokens": 2048,
        "enable_prefix_caching": false,
        "enable_chunked_prefill": false,
        "speedup_ratio": 2,
        "decode_speedup_ratio": 1.5,
        "dp_size": 4,
        "preemption_mode": "FIFO",
        "kv_bytes_per_token": 1000000,
        "kv_transfer_bandwidth": 1.0,
        "kv_transfer_timing_mode": "destination_missing",
        "router_queue_policy": "wspt",
    }));
    assert_eq!(a.num_gpu_blocks, 1000);
    assert_eq!(a.block_size, 16);
    assert_eq!(a.max_model_len, Some(4096));
    assert_eq!(a.max_num_seqs, Some(8));
    assert_eq!(a.max_num_batched_tokens, Some(2048));
    assert!(!a.enable_prefix_caching);
    assert!(!a.enable_chunked_prefill);
    assert_eq!(a.speedup_ratio, 2.0);
    assert_eq!(a.decode_speedup_ratio, 1.5);
    assert_eq!(a.dp_size, 4);
    assert_eq!(a.gpus_per_worker(), 4);
    assert_eq!(a.preemption_mode, PreemptionMode::Fifo);
    assert_eq!(a.kv_bytes_per_token, Some(1_000_000));
    assert_eq!(a.kv_transfer_bandwidth, Some(1.0));
    assert_eq!(
        a.kv_transfer_timing_mode,
        KvTransferTimingMode::DestinationMissing
    );
    assert_eq!(a.router_queue_policy, Some(QueuePolicy::Wspt));
}

#[test]
fn null_semantics_follow_the_table() {
    let a = ok(json!({
        "num_gpu_blocks": null,
        "max_num_seqs": null,
        "max_num_batched_tokens": null,
        "max_model_len": null,
        "kv_transfer_bandwidth": null,
        "router_queue_policy": null,
        "worker_type": null,
        "startup_time": null,
        "sglang": null,
        "planner_profile_data": null,
        "aic_backend": null,
        "num_g2_blocks": null,
    }));
    assert_eq!(a.num_gpu_blocks, 16384, "null keeps the default");
    assert_eq!(a.max_num_seqs, None, "null means unlimited");
    assert_eq!(a.max_num_batched_tokens, None, "null means unlimited");
    assert_eq!(a.max_model_len, None);
    assert_eq!(a.worker_type, WorkerType::Aggregated);
    for key in [
        "block_size",
        "dp_size",
        "speedup_ratio",
        "enable_prefix_caching",
        "engine_type",
        "preemption_mode",
        "is_prefill",
        "kv_transfer_timing_mode",
    ] {
        let m = err(json!({ key: null }));
        assert!(m.contains(key) && m.contains("must not be null"), "{m}");
    }
}

#[test]
fn parsing_reads_no_file_and_compiles_nothing() {
    // A profile that does not exist and an AIC engine no Python could compile both parse:
    // they are plain data until loaded.
    let p = parse_engine_args(
        &json!({"planner_profile_data": "no/such/profile.npz", "aic_backend": "vllm",
                "aic_model_path": "m", "aic_backend_version": "0", "num_gpu_blocks": 10}),
        F,
    )
    .unwrap();
    assert_eq!(p.timing().profile.as_deref(), Some("no/such/profile.npz"));
    assert_eq!(p.timing().aic.as_ref().unwrap().engine.model_path, "m");
    let e = p
        .load(&mut TimingLoader::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("--extra-engine-args: key \"planner_profile_data\": ")
            && e.contains("no/such/profile.npz"),
        "{e}"
    );
}

#[test]
fn mixed_pass_fused_needs_aic_timing_a_one_forward_engine_and_no_mtp() {
    let aic = json!({"aic_backend": "vllm", "aic_model_path": "m",
                     "aic_backend_version": "0", "num_gpu_blocks": 10});
    let parsed = |v: &Value| parse_engine_args(v, F).map(|p| p.args.mixed_pass);
    assert_eq!(parsed(&aic).unwrap(), MixedPass::Separate);
    let mut v = aic.clone();
    v["mixed_pass"] = json!("fused");
    assert_eq!(parsed(&v).unwrap(), MixedPass::Fused);
    v["engine_type"] = json!("trtllm");
    assert_eq!(parsed(&v).unwrap(), MixedPass::Fused);
    let refused = |v: &Value, why: &str| {
        let e = parse_engine_args(v, F).unwrap_err().to_string();
        assert!(
            e.starts_with("--extra-engine-args: key \"mixed_pass\" set to \"fused\" ")
                && e.contains(why),
            "{e}"
        );
    };
    refused(&json!({"mixed_pass": "fused"}), "needs AIC timing");
    let mut sglang = v.clone();
    sglang["engine_type"] = json!("sglang");
    refused(&sglang, "vllm and trtllm engines");
    let mut mtp = v.clone();
    mtp["aic_nextn"] = json!(1);
    refused(&mtp, "multi-token prediction");
    let mut profile = v.clone();
    profile["planner_profile_data"] = json!("p.npz");
    refused(&profile, "which planner_profile_data replaces");
    let e = err(json!({"mixed_pass": "both"}));
    assert!(
        e.contains("\"mixed_pass\" must be one of \"separate\" or \"fused\""),
        "{e}"
    );
}

#[test]
fn an_unreadable_profile_is_reported_before_the_keys_after_it() {
    let bad_mode = json!({"kv_transfer_timing_mode": "x"});
    let later = err(bad_mode.clone());
    assert!(later.contains("\"kv_transfer_timing_mode\""), "{later}");
    let mut v = bad_mode;
    v["planner_profile_data"] = json!("gone.npz");
    // Parsing succeeds; loading reports the profile first, as when both were one step.
    let p = parse_engine_args(&v, F).unwrap();
    let e = p
        .load(&mut TimingLoader::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("planner_profile_data") && e.contains("gone.npz"),
        "{e}"
    );
    // A profile that loads lets the later key's error through.
    let mut loader = TimingLoader::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data"));
    v["planner_profile_data"] = json!("profiles/own_profile.npz");
    let p = parse_engine_args(&v, F).unwrap();
    assert_eq!(p.load(&mut loader).unwrap_err().to_string(), later);
    // Keys before the profile fail while parsing.
    v["preemption_mode"] = json!("random");
    let e = parse_engine_args(&v, F).unwrap_err().to_string();
    assert!(e.contains("\"preemption_mode\""), "{e}");
}

#[test]
fn block_size_zero_means_64() {
    assert_eq!(ok(json!({"block_size": 0})).block_size, 64);
}

#[test]
fn must_be_an_object() {
    let m = err(json!([1, 2]));
    assert!(
        m.contains("must be a JSON object") && m.contains("array"),
        "{m}"
    );
    let e = parse_engine_args_str("5", "--decode-engine-args").unwrap_err();
    assert!(e
        .to_string()
        .starts_with("--decode-engine-args: engine args must be a JSON object"));
}

#[test]
fn json_syntax_errors_name_flag_and_column() {
    let e = parse_engine_args_str("{\"block_size\": 16,}", "--prefill-engine-args")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("--prefill-engine-args: invalid JSON"), "{e}");
    assert!(e.contains("column 19"), "{e}");
}

#[test]
fn unknown_key_suggests_the_closest_and_lists_valid_keys() {
    let m = err(json!({"num_gpu_block": 5}));
    assert!(m.contains("unknown key \"num_gpu_block\""), "{m}");
    assert!(m.contains("did you mean \"num_gpu_blocks\""), "{m}");
    assert!(m.contains("Valid keys: engine_type, num_gpu_blocks"), "{m}");
    let m = err(json!({"qwertyuiopasdf": 5}));
    assert!(!m.contains("did you mean"), "{m}");
}

#[test]
fn wrong_types_name_the_key_and_expected_type() {
    let cases = [
        (
            json!({"num_gpu_blocks": "5"}),
            "num_gpu_blocks",
            "an integer in [1, 2147483647]",
        ),
        (
            json!({"num_gpu_blocks": 5.0}),
            "num_gpu_blocks",
            "an integer in [1, 2147483647]",
        ),
        (json!({"block_size": true}), "block_size", "an integer"),
        (
            json!({"enable_prefix_caching": 1}),
            "enable_prefix_caching",
            "true or false",
        ),
        (
            json!({"speedup_ratio": "fast"}),
            "speedup_ratio",
            "a finite number",
        ),
        (json!({"engine_type": 3}), "engine_type", "one of \"vllm\""),
        (
            json!({"preemption_mode": "random"}),
            "preemption_mode",
            "\"lifo\" or \"fifo\"",
        ),
        (
            json!({"router_queue_policy": "WSPT"}),
            "router_queue_policy",
            "\"wspt\"",
        ),
        (
            json!({"kv_transfer_timing_mode": "x"}),
            "kv_transfer_timing_mode",
            "full_prompt",
        ),
        (json!({"sglang": 5}), "sglang", "a JSON object"),
        (
            json!({"bootstrap_port": 70000}),
            "bootstrap_port",
            "[0, 65535]",
        ),
        (
            json!({"gpu_memory_utilization": 1.5}),
            "gpu_memory_utilization",
            "[0, 1]",
        ),
        (
            json!({"aic_backend": 1}),
            "aic_backend",
            "must be one of \"vllm\"",
        ),
        (
            json!({"aic_memory_model": "sglang"}),
            "aic_memory_model",
            "one of \"aic\" or \"server\"",
        ),
    ];
    for (v, key, expected) in cases {
        let m = err(v);
        assert!(m.contains(&format!("\"{key}\"")), "{m}");
        assert!(m.contains(expected), "{m} lacks {expected}");
    }
}

#[test]
fn ranges_are_enforced() {
    for v in [
        json!({"num_gpu_blocks": 0}),
        json!({"block_size": -1}),
        json!({"max_num_seqs": 0}),
        json!({"max_num_batched_tokens": 0}),
        json!({"max_model_len": 0}),
        json!({"speedup_ratio": -0.5}),
        json!({"decode_speedup_ratio": -1}),
        json!({"dp_size": 0}),
        json!({"kv_transfer_bandwidth": -1}),
        json!({"startup_time": -3}),
        json!({"block_size": 5_000_000_000u64}),
    ] {
        err(v);
    }
    assert_eq!(ok(json!({"speedup_ratio": 0})).speedup_ratio, 0.0);
    assert_eq!(
        ok(json!({"kv_transfer_bandwidth": 0})).kv_transfer_bandwidth,
        Some(0.0)
    );
}

#[test]
fn sizes_that_would_outgrow_memory_are_refused_with_the_range() {
    let m = err(json!({"num_gpu_blocks": 1_000_000_000_000u64}));
    assert!(
        m.contains("\"num_gpu_blocks\"") && m.contains("[1, 2147483647]"),
        "{m}"
    );
    let m = err(json!({"dp_size": 1_000_000_000u64}));
    assert!(
        m.contains("\"dp_size\"") && m.contains("[1, 100000]"),
        "{m}"
    );
    assert_eq!(
        ok(json!({"num_gpu_blocks": 2_147_483_647u64})).num_gpu_blocks,
        2_147_483_647
    );
    assert_eq!(ok(json!({"dp_size": 1024})).dp_size, 1024);
}

#[test]
fn worker_type_rules() {
    assert_eq!(
        ok(json!({"worker_type": "prefill"})).worker_type,
        WorkerType::Prefill
    );
    assert_eq!(
        ok(json!({"worker_type": "decode"})).worker_type,
        WorkerType::Decode
    );
    assert_eq!(
        ok(json!({"worker_type": "aggregated"})).worker_type,
        WorkerType::Aggregated
    );
    assert_eq!(
        ok(json!({"is_prefill": true})).worker_type,
        WorkerType::Prefill
    );
    assert_eq!(
        ok(json!({"is_decode": true})).worker_type,
        WorkerType::Decode
    );
    assert_eq!(
        ok(json!({"is_prefill": false, "is_decode": false})).worker_type,
        WorkerType::Aggregated
    );
    let m = err(json!({"worker_type": "prefill", "is_prefill": false}));
    assert!(
        m.contains("cannot be combined with is_prefill or is_decode"),
        "{m}"
    );
    let m = err(json!({"worker_type": "decode", "is_decode": true}));
    assert!(m.contains("cannot be combined"), "{m}");
    let m = err(json!({"is_prefill": true, "is_decode": true}));
    assert!(m.contains("cannot both be true"), "{m}");
    let m = err(json!({"worker_type": "encode"}));
    assert!(
        m.contains("\"aggregated\", \"prefill\" or \"decode\""),
        "{m}"
    );
}

#[test]
fn multi_token_prediction_keys_follow_dynosim() {
    // Absent: off. Default rates (AIC's 0.85, 0.3) padded or cut to aic_nextn; seed 42.
    assert_eq!(ok(json!({})).mtp, None);
    let m = ok(json!({"aic_nextn": 3})).mtp.unwrap();
    assert_eq!(
        (m.nextn, m.accept_rates, m.seed),
        (3, vec![0.85, 0.3, 0.0], 42)
    );
    let m = ok(json!({"aic_nextn": 1, "aic_nextn_accept_rates": " 0.5, 0.25 ", "aic_mtp_seed": 9}))
        .mtp
        .unwrap();
    assert_eq!((m.nextn, m.accept_rates, m.seed), (1, vec![0.5], 9));
    // Without AIC timing too (DynoSim samples bursts under any timing model).
    for engine in ["trtllm", "sglang"] {
        assert!(ok(json!({"engine_type": engine, "aic_nextn": 2}))
            .mtp
            .is_some());
    }
    for (v, needle) in [
        (json!({"aic_nextn": 0}), "\"aic_nextn\" must be 1..=5"),
        (json!({"aic_nextn": 6}), "\"aic_nextn\" must be 1..=5"),
        (
            json!({"aic_nextn_accept_rates": "0.8"}),
            "requires aic_nextn",
        ),
        (
            json!({"aic_nextn": 2, "aic_nextn_accept_rates": "0.8,x"}),
            "comma-separated numbers, got \"x\" at position 2",
        ),
        (
            json!({"aic_nextn": 2, "aic_nextn_accept_rates": "1.5"}),
            "finite and in [0, 1], got 1.5",
        ),
        (
            json!({"aic_nextn": 2, "decode_speedup_ratio": 2}),
            "requires decode_speedup_ratio = 1",
        ),
    ] {
        let m = err(v);
        assert!(m.contains(needle), "{m} lacks {needle}");
    }
}

#[test]
fn decode_time_scale_is_dynosims_and_allowed_with_mtp() {
    assert_eq!(ok(json!({})).decode_time_scale, 1.0);
    let a = ok(json!({"aic_nextn": 2, "decode_time_scale": 0.75}));
    assert_eq!((a.decode_time_scale, a.mtp.is_some()), (0.75, true));
    for v in [json!(0), json!(-1), json!("2"), Value::Null] {
        let m = err(json!({ "decode_time_scale": v }));
        assert!(m.contains("decode_time_scale"), "{m}");
    }
    assert!(err(json!({"decode_time_scale": 0})).contains("> 0"));
}

#[test]
fn kv_pool_scale_is_dynosims_and_multiplies_the_block_count() {
    let d = ok(json!({}));
    assert_eq!((d.kv_pool_scale, d.kv_pool_blocks()), (1.0, 16384));
    let a = ok(json!({"num_gpu_blocks": 1001, "kv_pool_scale": 0.5}));
    assert_eq!((a.num_gpu_blocks, a.kv_pool_blocks()), (1001, 500));
    assert_eq!(
        ok(json!({"num_gpu_blocks": 3, "kv_pool_scale": 0.1})).kv_pool_blocks(),
        1
    );
    assert_eq!(
        ok(json!({"num_gpu_blocks": 10, "kv_pool_scale": 2.5})).kv_pool_blocks(),
        25
    );
    for v in [json!(0), json!(-1), json!("2"), Value::Null, json!(1e4)] {
        let m = err(json!({ "kv_pool_scale": v }));
        assert!(m.contains("kv_pool_scale"), "{m}");
    }
    assert!(err(json!({"kv_pool_scale": 0})).contains("> 0"));
}

#[test]
fn unmodelled_features_are_refused() {
    let cases = [
        json!({"num_g2_blocks": 1000}),
        json!({"num_g3_blocks": 0}),
        json!({"enable_g4_storage": true}),
        json!({"offload_batch_size": 8}),
        json!({"bandwidth_g1_to_g2_gbps": 10}),
        json!({"g1_backend": "kvbm"}),
    ];
    for v in cases {
        let m = err(v);
        assert!(m.contains("not supported by dynosim yet"), "{m}");
    }
}

#[test]
fn sglang_args_resolve_like_dynosim() {
    let a = ok(json!({"engine_type": "SGLang"}));
    assert_eq!(a.engine_type, EngineType::Sglang);
    assert_eq!(a.block_size, 1, "SGLang's default page size");
    assert_eq!(a.sglang, super::super::SglangArgs::default());
    let a = ok(json!({"engine_type": "sglang", "sglang": {"page_size": 64, "bogus": 1}}));
    assert_eq!(a.block_size, 64);
    let a = ok(json!({"engine_type": "sglang", "block_size": 16}));
    assert_eq!(a.block_size, 16);
    let a = ok(json!({"engine_type": "sglang", "sglang": {
        "schedule_policy": "lpm", "max_prefill_tokens": 4096, "chunked_prefill_size": 1024,
        "clip_max_new_tokens": 256, "schedule_conservativeness": 1.5}}));
    assert_eq!(a.sglang.schedule_policy, SchedulePolicy::Lpm);
    assert_eq!(
        (a.sglang.max_prefill_tokens, a.sglang.chunked_prefill_size),
        (4096, 1024)
    );
    assert_eq!(a.sglang.clip_max_new_tokens, 256);
    assert_eq!(a.sglang.schedule_conservativeness, 1.5);
    // dynosim's --scheduler-recv-interval: 1 (every pass) unless set, and then recorded.
    assert_eq!(a.sglang.scheduler_recv_interval, 1);
    let record = serde_json::to_value(&a.sglang).unwrap();
    assert!(record.get("scheduler_recv_interval").is_none());
    let a = ok(json!({"engine_type": "sglang", "sglang": {"scheduler_recv_interval": 30}}));
    assert_eq!(a.sglang.scheduler_recv_interval, 30);
    let record = serde_json::to_value(&a.sglang).unwrap();
    assert_eq!(record["scheduler_recv_interval"], 30);
    let e = err(json!({"engine_type": "sglang", "sglang": {"scheduler_recv_interval": 0}}));
    assert!(e.contains("scheduler_recv_interval"), "{e}");
    let a = ok(json!({"engine_type": "sglang", "sglang": {"schedule_policy": "fcfs"}}));
    assert_eq!(a.sglang.schedule_policy, SchedulePolicy::Fifo);
    assert!(a.warnings().is_empty());
    let a = ok(json!({"engine_type": "sglang", "sglang": {"schedule_policy": "x"}}));
    assert_eq!(
        a.sglang.schedule_policy,
        SchedulePolicy::Unknown("x".into())
    );
    assert_eq!(
        a.warnings(),
        vec!["Unknown sglang schedule_policy 'x', falling back to FIFO".to_string()]
    );
    // Keys SGLang ignores are accepted; an `sglang` object on a vLLM engine is ignored.
    ok(
        json!({"engine_type": "sglang", "enable_prefix_caching": false,
              "max_num_batched_tokens": 256, "preemption_mode": "fifo"}),
    );
    assert_eq!(ok(json!({"sglang": {"page_size": 4}})).block_size, 64);
}

#[test]
fn sglang_validation_errors() {
    let m = err(json!({"engine_type": "sglang", "block_size": 16, "sglang": {"page_size": 32}}));
    assert!(m.contains("block_size=16 and sglang.page_size=32"), "{m}");
    let m = err(json!({"engine_type": "sglang", "sglang": {"page_size": 64,
                       "chunked_prefill_size": 1000}}));
    assert!(
        m.contains("chunked_prefill_size must be divisible by block_size"),
        "{m}"
    );
    let m = err(json!({"engine_type": "sglang", "max_model_len": 4096}));
    assert!(
        m.contains("only for engine_type=vllm, got engine_type=Sglang"),
        "{m}"
    );
    // DynoSim refuses it for TRT-LLM as well.
    let m = err(json!({"engine_type": "trtllm", "max_model_len": 4096}));
    assert!(
        m.contains("key \"max_model_len\"")
            && m.contains("only for engine_type=vllm, got engine_type=Trtllm"),
        "{m}"
    );
    let m = err(json!({"engine_type": "sglang", "sglang": {"page_size": 0}}));
    assert!(m.contains("sglang: key \"page_size\""), "{m}");
    let m = err(json!({"engine_type": null}));
    assert!(m.contains("must not be null"), "{m}");
}

#[test]
fn trtllm_batch_waiting() {
    let a = ok(json!({"engine_type": "trtllm",
        "trtllm": {"batch_wait_timeout_iters": 20, "batch_wait_max_tokens_ratio": 0.9}}));
    assert_eq!(
        a.batch_wait,
        BatchWait {
            timeout_iters: 20,
            max_tokens_ratio: 0.9
        }
    );
    assert!(ok(json!({"engine_type": "trtllm"})).batch_wait.is_off());
    // Zeros (TRT-LLM's defaults) are off on any engine; set, only TRT-LLM reads them.
    let a = ok(json!({"trtllm": {"batch_wait_timeout_iters": 0}}));
    assert!(a.batch_wait.is_off());
    let m = err(json!({"trtllm": {"batch_wait_timeout_iters": 20}}));
    assert!(
        m.contains("applies only to engine_type=trtllm, got engine_type=Vllm"),
        "{m}"
    );
    let m = err(json!({"engine_type": "trtllm",
        "trtllm": {"batch_wait_max_tokens_ratio": 1.5}}));
    assert!(
        m.contains("trtllm: key \"batch_wait_max_tokens_ratio\" must be a number in [0, 1], got number 1.5"),
        "{m}"
    );
    let m = err(json!({"engine_type": "trtllm",
        "trtllm": {"batch_wait_timeout_iters": 2.5}}));
    assert!(m.contains("batch_wait_timeout_iters"), "{m}");
}

#[test]
fn trtllm_attention_dp_balancing() {
    let a = ok(json!({"engine_type": "trtllm", "dp_size": 8,
        "trtllm": {"attention_dp_enable_balance": true, "attention_dp_timeout_iters": 60,
                   "attention_dp_batching_wait_iters": 0}}));
    assert_eq!(
        a.adp_balance,
        AdpBalance {
            enabled: true,
            timeout_iters: 60,
            batching_wait_iters: 0
        }
    );
    // TRT-LLM's defaults for the counts; off unless enabled (the counts alone do nothing).
    let a = ok(json!({"engine_type": "trtllm",
        "trtllm": {"attention_dp_enable_balance": true}}));
    assert_eq!(
        (
            a.adp_balance.timeout_iters,
            a.adp_balance.batching_wait_iters
        ),
        (50, 10)
    );
    let a = ok(json!({"engine_type": "trtllm",
        "trtllm": {"attention_dp_timeout_iters": 60}}));
    assert!(a.adp_balance.is_off());
    assert!(ok(json!({"engine_type": "trtllm"})).adp_balance.is_off());
    let m = err(json!({"trtllm": {"attention_dp_enable_balance": true}}));
    assert!(
        m.contains("attention-DP balancing applies only to engine_type=trtllm"),
        "{m}"
    );
    let m = err(json!({"engine_type": "trtllm",
        "trtllm": {"attention_dp_enable_balance": "yes"}}));
    assert!(m.contains("attention_dp_enable_balance"), "{m}");
    let m = err(json!({"engine_type": "trtllm",
        "trtllm": {"attention_dp_enable_balance": true, "attention_dp_timeout_iters": -1}}));
    assert!(m.contains("attention_dp_timeout_iters"), "{m}");
}

#[test]
fn trtllm_engine_type_policy_and_block_size() {
    let a = ok(json!({"engine_type": "TRTLLM"}));
    assert_eq!(a.engine_type, EngineType::Trtllm);
    assert_eq!(a.block_size, DEFAULT_TRTLLM_BLOCK_SIZE);
    let a = ok(json!({"engine_type": "trtllm", "block_size": 0}));
    assert_eq!(a.block_size, 32);
    let a = ok(json!({"engine_type": "trtllm", "block_size": 16,
        "trtllm": {"capacity_scheduler_policy": "guaranteed_no_evict", "other": 1}}));
    assert_eq!(a.block_size, 16);
    // The trtllm object alone does not change the engine (DynoSim only validates it).
    let a = ok(json!({"trtllm": {}}));
    assert_eq!((a.engine_type, a.block_size), (EngineType::Vllm, 64));
    let m = err(json!({"engine_type": "trtllm",
        "trtllm": {"capacity_scheduler_policy": "max_utilization"}}));
    assert!(
        m.contains(
            "supports only capacity_scheduler_policy='guaranteed_no_evict', got 'max_utilization'"
        ),
        "{m}"
    );
}

#[test]
fn harmless_keys_are_accepted_and_ignored() {
    let a = ok(json!({
        "startup_time": 12.5,
        "g1_backend": "native",
        "enable_g4_storage": false,
        "aic_mtp_seed": 7,
        "gpu_memory_utilization": 0.9,
        "mem_fraction_static": 0.88,
        "free_gpu_memory_fraction": null,
        "reasoning": null,
        "response_replay_trace_path": "/tmp/x.jsonl",
        "bootstrap_port": 8000,
        "handoff_session_timeout_ms": 300000,
        "zmq_kv_events_port": 5557,
        "zmq_replay_port": null,
        "enable_local_indexer": true,
        "has_perf_model": false,
    }));
    assert_eq!(a, EngineArgs::default());
}
