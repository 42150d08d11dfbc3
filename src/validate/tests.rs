//! Unit tests of the parts that need no simulation: reading the table, mapping names and
//! versions, recipes, errors and summaries.

use super::catalog::AicCatalog;
use super::deployment::{recipe, DispatchOverhead, KvCacheDtype};
use super::points::{
    read_aiperf, read_table, Deployment, FlagDeployment, Parallel, TableDeployment,
};
use super::summary::{median, ErrorStats};
use super::*;
use std::collections::BTreeMap;
use std::path::Path;

fn catalog() -> AicCatalog {
    let versions = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut backends = BTreeMap::new();
    backends.insert("vllm".to_string(), versions(&["0.24.0", "0.27.0"]));
    backends.insert("trtllm".to_string(), versions(&["1.3.0rc20", "1.3.0rc23"]));
    backends.insert("sglang".to_string(), versions(&["0.5.14", "0.5.16"]));
    let mut databases = BTreeMap::new();
    databases.insert("h200_sxm".to_string(), backends);
    // AIC 0.12.0's `current` slots; the newer versions are its `next` development drops.
    let defaults: BTreeMap<String, String> = [
        ("vllm", "0.24.0"),
        ("trtllm", "1.3.0rc20"),
        ("sglang", "0.5.14"),
    ]
    .iter()
    .map(|(b, v)| (b.to_string(), v.to_string()))
    .collect();
    AicCatalog {
        databases,
        defaults: [("h200_sxm".to_string(), defaults)].into_iter().collect(),
        models: [
            "meta-llama/Meta-Llama-3.1-70B",
            "meta-llama/Meta-Llama-3.1-8B",
            "nvidia/Llama-3.1-70B-Instruct-FP8",
            "zai-org/GLM-5",
            "zai-org/GLM-5-FP8",
            "nvidia/GLM-5-NVFP4",
            "deepseek-ai/DeepSeek-R1",
            "deepseek-ai/DeepSeek-V3",
            "moonshotai/Kimi-K2.5",
            "Qwen/Qwen3-32B",
            "Qwen/Qwen3-32B-FP8",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        layers: [
            ("meta-llama/Meta-Llama-3.1-70B".to_string(), 80),
            ("deepseek-ai/DeepSeek-R1".to_string(), 61),
            ("deepseek-ai/DeepSeek-V3".to_string(), 61),
        ]
        .into_iter()
        .collect(),
        checkpoint_quant: BTreeMap::new(),
        moe_inter_size: BTreeMap::new(),
        // DeepSeek-R1's first three layers are dense.
        moe_layers: [
            ("deepseek-ai/DeepSeek-R1".to_string(), 58),
            ("deepseek-ai/DeepSeek-V3".to_string(), 58),
        ]
        .into_iter()
        .collect(),
    }
}

#[test]
fn model_names_map_onto_bundled_configs() {
    let c = catalog();
    let m = |hf: &str| c.model_for(hf);
    assert_eq!(
        m("meta-llama/Llama-3.1-70B").as_deref(),
        Some("meta-llama/Meta-Llama-3.1-70B")
    );
    assert_eq!(
        m("meta-llama/Meta-Llama-3.1-70B").as_deref(),
        Some("meta-llama/Meta-Llama-3.1-70B")
    );
    assert_eq!(
        m("nvidia/Llama-3.1-8B-Instruct-FP8").as_deref(),
        Some("meta-llama/Meta-Llama-3.1-8B")
    );
    assert_eq!(
        m("meta-llama/Llama-3.1-8B-Instruct").as_deref(),
        Some("meta-llama/Meta-Llama-3.1-8B")
    );
    assert_eq!(m("zhipuai/GLM-5").as_deref(), Some("zai-org/GLM-5"));
    assert_eq!(
        m("nvidia/DeepSeek-R1-NVFP4").as_deref(),
        Some("deepseek-ai/DeepSeek-R1")
    );
    assert_eq!(
        m("nvidia/Qwen3-32B-NVFP4").as_deref(),
        Some("Qwen/Qwen3-32B")
    );
    assert_eq!(m("openai/gpt-oss-120b"), None);
}

#[test]
fn versions_map_to_the_nearest_installed() {
    let c = catalog();
    let v = |b: &str, x: &str| c.version_for("h200_sxm", b, x);
    assert_eq!(v("vllm", "0.24.0").unwrap(), "0.24.0");
    assert_eq!(v("vllm", "0.19.0").unwrap(), "0.24.0");
    assert_eq!(v("vllm", "0.26.5").unwrap(), "0.27.0");
    assert_eq!(v("vllm", "0.27.0").unwrap(), "0.27.0");
    // No version, or two as near: AIC's default (its `current` collection), not the newer
    // development drop.
    assert_eq!(v("vllm", "").unwrap(), "0.24.0");
    assert_eq!(v("sglang", "nightly-dev").unwrap(), "0.5.14");
    assert_eq!(v("sglang", "0.5.8.post1").unwrap(), "0.5.14");
    assert_eq!(v("sglang", "0.5.17").unwrap(), "0.5.16");
    assert_eq!(v("trtllm", "1.1.0rc2.post2").unwrap(), "1.3.0rc20");
    assert_eq!(v("trtllm", "1.3.0rc23").unwrap(), "1.3.0rc23");
    // Without a default, the newest.
    let mut no_defaults = catalog();
    no_defaults.defaults.clear();
    assert_eq!(
        no_defaults.version_for("h200_sxm", "vllm", "").unwrap(),
        "0.27.0"
    );
    assert_eq!(
        no_defaults
            .version_for("h200_sxm", "trtllm", "1.1.0rc2.post2")
            .unwrap(),
        "1.3.0rc23"
    );
    assert!(c
        .version_for("mi300x", "vllm", "0.24.0")
        .unwrap_err()
        .contains("no perf data"));
}

const HEADER: &str = "id,silicon_data_source,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,prefill_batch_size,prefill_num_workers,prefill_tp_size,prefill_pp_size,prefill_attention_dp_size,prefill_moe_tp_size,prefill_moe_ep_size,decode_batch_size,decode_num_workers,decode_tp_size,decode_pp_size,decode_attention_dp_size,decode_moe_tp_size,decode_moe_ep_size,silicon_ttft_ms,silicon_tpot_ms";

fn table(rows: &[&str]) -> String {
    let mut s = HEADER.to_string();
    for r in rows {
        s.push('\n');
        s.push_str(r);
    }
    s
}

/// The deployment `validate` reads from one table row.
fn deployment_of(row: &str) -> Deployment {
    let mut pts = read_table(Path::new("t.csv"), &table(&[row])).unwrap();
    pts.remove(0).deployment
}

/// Why one table row cannot be simulated (panics if it can).
fn unsupported_reason(row: &str) -> String {
    match deployment_of(row) {
        Deployment::Unsupported(why) => why,
        d => panic!("{d:?}"),
    }
}

/// The table deployment of one row that can be simulated (panics otherwise).
fn table_deployment(row: &str) -> TableDeployment {
    match deployment_of(row) {
        Deployment::Table(t) => t,
        d => panic!("{d:?}"),
    }
}

const LLAMA: &str = "r1,source_file=2026-04-06.csv; silicon_concurrency=16,vllm,,meta-llama/Llama-3.1-70B,h200_sxm,fp8,agg,1024,1024,fp8,fp8,16,2,1,1,2,1,,,,,,,,,,,,,,,190.0,15.65";

#[test]
fn a_table_row_becomes_the_benchmark_run() {
    let pts = read_table(Path::new("t.csv"), &table(&[LLAMA])).unwrap();
    assert_eq!(pts.len(), 1);
    let p = &pts[0];
    assert_eq!(
        (p.workload.isl, p.workload.osl, p.workload.concurrency),
        (1024, 1024, Some(16))
    );
    assert_eq!(p.measured_ttft_ms, Some(190.0));
    assert_eq!(p.origin, "t.csv:2");
    let (r, used) = recipe(p, &Options::default(), Some(&catalog())).unwrap();
    assert_eq!(used, "0.24.0");
    assert_eq!(r.request_count, 160);
    assert_eq!(r.replay_concurrency, Some(16));
    assert_eq!(r.random_range_ratio, 0.8);
    let e = r.extra_engine_args.as_ref().unwrap();
    assert_eq!(e["aic_model_path"], "meta-llama/Meta-Llama-3.1-70B");
    assert_eq!(e["aic_tp_size"], 2);
    assert_eq!(e["aic_kv_cache_dtype"], "fp8");
    assert_eq!(e["enable_prefix_caching"], false);
    assert_eq!(e["max_num_batched_tokens"], 8192);
    assert_eq!(e["engine_type"], "vllm");
    // The run flags parse as `dynosim run`'s.
    let args = r.run_args().unwrap();
    assert_eq!(args.replay_concurrency, Some(16));
    assert!(r
        .command_line()
        .starts_with("dynosim run --extra-engine-args '{"));
    // The KV dtype is an option.
    let opts = Options {
        kv_cache_dtype: KvCacheDtype::Model,
        ..Options::default()
    };
    let (r, _) = recipe(p, &opts, Some(&catalog())).unwrap();
    assert!(r
        .extra_engine_args
        .unwrap()
        .get("aic_kv_cache_dtype")
        .is_none());
}

#[test]
fn int4_rows_quantise_only_the_moe_experts() {
    // Kimi-K2.5's INT4 checkpoint quantises its routed experts; its other GEMMs are BF16, AIC's
    // default for the checkpoint, so the row's `int4_wo` GEMM label is not passed on.
    let kimi = LLAMA
        .replacen("meta-llama/Llama-3.1-70B", "moonshotai/Kimi-K2.5", 1)
        .replacen(
            ",fp8,agg,1024,1024,fp8,fp8,16,2,1,1,2,1,",
            ",int4,agg,1024,1024,int4_wo,int4_wo,16,8,1,1,8,1,",
            1,
        );
    let pts = read_table(Path::new("t.csv"), &table(&[&kimi])).unwrap();
    let (r, _) = recipe(&pts[0], &Options::default(), Some(&catalog())).unwrap();
    let e = r.extra_engine_args.as_ref().unwrap();
    assert_eq!(e["aic_model_path"], "moonshotai/Kimi-K2.5");
    assert_eq!(e["aic_moe_dtype"], "int4_wo");
    assert!(e.get("aic_gemm_dtype").is_none(), "{e}");
    // An INT4 KV cache is no server's default: the model's (BF16).
    assert!(e.get("aic_kv_cache_dtype").is_none(), "{e}");
}

#[test]
fn rows_that_cannot_be_simulated_say_why() {
    let pp = LLAMA.replace(",16,2,1,1,2,1,", ",16,2,2,1,4,1,");
    let pts = read_table(Path::new("t.csv"), &table(&[&pp])).unwrap();
    let why = recipe(&pts[0], &Options::default(), Some(&catalog())).unwrap_err();
    assert!(why.contains("pipeline parallelism"), "{why}");
    let gpt = LLAMA.replace("meta-llama/Llama-3.1-70B", "openai/gpt-oss-120b");
    let pts = read_table(Path::new("t.csv"), &table(&[&gpt])).unwrap();
    let why = recipe(&pts[0], &Options::default(), Some(&catalog())).unwrap_err();
    assert!(why.contains("no bundled AIC model config"), "{why}");
    let no_tp = LLAMA.replace(",16,2,1,1,2,1,", ",16,,,,,,");
    let pts = read_table(Path::new("t.csv"), &table(&[&no_tp])).unwrap();
    assert!(matches!(pts[0].deployment, Deployment::Unsupported(_)));
}

#[test]
fn disaggregated_rows_get_two_pools() {
    let row = "d1,source_file=x; silicon_concurrency=8,sglang,0.5.8.post1,deepseek-ai/DeepSeek-R1,h200_sxm,fp8,disagg,1024,1024,fp8_block,fp8_block,,,,,,,1,2,8,1,1,8,1,8,1,8,1,1,8,1,300,20";
    let pts = read_table(Path::new("t.csv"), &table(&[row])).unwrap();
    let (r, used) = recipe(&pts[0], &Options::default(), Some(&catalog())).unwrap();
    assert_eq!(used, "0.5.14");
    assert!(r.extra_engine_args.is_none());
    assert_eq!(
        r.prefill_engine_args.as_ref().unwrap()["worker_type"],
        "prefill"
    );
    assert_eq!(
        r.decode_engine_args.as_ref().unwrap()["worker_type"],
        "decode"
    );
    assert_eq!((r.num_prefill_workers, r.num_decode_workers), (2, 1));
    assert_eq!(r.replay_concurrency, Some(8));
    // Disaggregated SGLang rows keep the model's KV dtype (the BF16 of the aggregated H200
    // DeepSeek-R1 script is that script's).
    assert!(r
        .prefill_engine_args
        .as_ref()
        .unwrap()
        .get("aic_kv_cache_dtype")
        .is_none());
    assert!(r.engine_args_json().starts_with("{\"decode\":"));
    // Without worker counts (the 2026 batches' disaggregated rows) the size is unknown.
    let unsized_row = row.replacen(",1,2,8,1,1,8,1,8,1,8,", ",1,,8,1,1,8,1,8,,8,", 1);
    assert_ne!(unsized_row, row);
    let why = unsupported_reason(&unsized_row);
    assert!(
        why.contains("no worker count (prefill_num_workers, decode_num_workers)"),
        "{why}"
    );
    // With them, a TRT-LLM one is DynoSim's refusal.
    let trt = row.replacen(",sglang,0.5.8.post1,", ",trtllm,1.3.0rc23,", 1);
    let pts = read_table(Path::new("t.csv"), &table(&[&trt])).unwrap();
    let why = recipe(&pts[0], &Options::default(), Some(&catalog())).unwrap_err();
    assert!(why.contains("TRT-LLM in disaggregated replay"), "{why}");
}

#[test]
fn aggregated_inferencex_rows_beyond_a_node_are_multi_node_deployments() {
    // GB200 "agg" rows of the 2026 batches at TP 12 to 72: GPU counts of multi-node runs.
    let gb200 = LLAMA.replacen(",h200_sxm,", ",gb200,", 1).replacen(
        ",16,2,1,1,2,1,",
        ",16,32,1,1,32,1,",
        1,
    );
    let why = unsupported_reason(&gb200);
    assert!(
        why.starts_with("an aggregated InferenceX row on 32 GPUs (TP 32, MoE TP 32 × EP 1)"),
        "{why}"
    );
    // The same shape from elsewhere is simulated as given, and an 8-GPU row as ever.
    let elsewhere = gb200.replacen("source_file=2026-04-06.csv", "source_file=x.csv", 1);
    table_deployment(&elsewhere);
    table_deployment(&LLAMA.replacen(",16,2,1,1,2,1,", ",16,8,1,1,8,1,", 1));
}

#[test]
fn bad_table_values_name_file_line_and_column() {
    let bad = LLAMA.replace(",1024,1024,", ",1024,ten,");
    let e = read_table(Path::new("t.csv"), &table(&[&bad]))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("t.csv:2: column osl:"), "{e}");
    let e = read_table(Path::new("x.csv"), "a,b\n1,2")
        .unwrap_err()
        .to_string();
    assert!(e.contains("neither an AIPerf export"), "{e}");
}

#[test]
fn an_aiperf_export_gives_its_workload() {
    let text = r#"{"time_to_first_token": {"avg": 200.0}, "inter_token_latency": {"avg": 12.5},
        "request_count": {"avg": 100.0},
        "input_config": {"endpoint": {"model_names": ["Qwen/Qwen3-32B"]},
          "input": {"prompt": {"input_tokens": {"mean": 2048, "stddev": 10}, "output_tokens": {"mean": 256}}},
          "loadgen": {"concurrency": 4, "request_count": 100, "warmup_request_count": 5}}}"#;
    let flags = FlagDeployment {
        extra_engine_args: Some(r#"{"aic_backend": "trtllm", "aic_system": "h200_sxm"}"#.into()),
        ..FlagDeployment::default()
    };
    let p = read_aiperf(
        Path::new("r/medium/profile_export_aiperf.json"),
        text,
        &flags,
    )
    .unwrap();
    assert_eq!(p.id, "medium");
    assert_eq!(
        (p.system.as_str(), p.backend.as_str()),
        ("h200_sxm", "trtllm")
    );
    assert_eq!(p.model, "Qwen/Qwen3-32B");
    assert_eq!(p.workload.isl_stddev, 10.0);
    assert_eq!(p.workload.warmup_request_count, 5);
    let (r, _) = recipe(&p, &Options::default(), None).unwrap();
    assert_eq!(
        (r.input_tokens, r.output_tokens, r.request_count),
        (2048, 256, 100)
    );
    assert_eq!(r.replay_concurrency, Some(4));
    assert_eq!(r.random_range_ratio, 1.0);
    let e = read_aiperf(Path::new("a.json"), "{\"x\": 1}", &flags)
        .unwrap_err()
        .to_string();
    assert!(e.contains("without input_config"), "{e}");
}

#[test]
fn corrections_set_keys_on_every_pool() {
    let pts = read_table(Path::new("t.csv"), &table(&[LLAMA])).unwrap();
    let (mut r, _) = recipe(&pts[0], &Options::default(), Some(&catalog())).unwrap();
    let mut c = Correction::new();
    c.insert("speedup_ratio".into(), serde_json::json!(1.25));
    r.apply(&c);
    assert_eq!(r.extra_engine_args.unwrap()["speedup_ratio"], 1.25);
}

#[test]
fn corrections_keep_an_mtp_pools_decode_ratio_at_one() {
    let pts = read_table(Path::new("t.csv"), &table(&[LLAMA])).unwrap();
    let (mut r, _) = recipe(&pts[0], &Options::default(), Some(&catalog())).unwrap();
    let pool = r.extra_engine_args.as_mut().unwrap();
    pool["aic_nextn"] = serde_json::json!(2);
    pool["decode_time_scale"] = serde_json::json!(3.0);
    let mut c = Correction::new();
    c.insert("speedup_ratio".into(), serde_json::json!(0.8));
    c.insert("decode_speedup_ratio".into(), serde_json::json!(1.5));
    r.apply(&c);
    let pool = r.extra_engine_args.as_ref().unwrap();
    assert_eq!(pool["speedup_ratio"], 0.8);
    assert_eq!(pool["decode_speedup_ratio"], 1.0);
    assert_eq!(pool["decode_time_scale"], 2.0);
    // `dynosim run` takes the pool as written (DynoSim's rule holds).
    crate::config::engine_args::parse_engine_args(pool, "pool").unwrap();
    // Without MTP the ratio stays where the corrections put it.
    let (mut r, _) = recipe(&pts[0], &Options::default(), Some(&catalog())).unwrap();
    r.apply(&c);
    let pool = r.extra_engine_args.as_ref().unwrap();
    assert_eq!(pool["decode_speedup_ratio"], 1.5);
    assert!(pool.get("decode_time_scale").is_none());
}

#[test]
fn a_fused_calibration_reaches_only_pools_that_run_a_step_as_one_forward() {
    use super::calibration::can_fuse_mixed_passes;
    let pts = read_table(Path::new("t.csv"), &table(&[LLAMA])).unwrap();
    let (r, _) = recipe(&pts[0], &Options::default(), Some(&catalog())).unwrap();
    assert!(can_fuse_mixed_passes(&r));
    let with = |k: &str, v: serde_json::Value| {
        let mut r = r.clone();
        r.extra_engine_args.as_mut().unwrap()[k] = v;
        r
    };
    assert!(can_fuse_mixed_passes(&with("engine_type", "trtllm".into())));
    assert!(can_fuse_mixed_passes(&with(
        "aic_nextn",
        serde_json::Value::Null
    )));
    assert!(!can_fuse_mixed_passes(&with(
        "engine_type",
        "sglang".into()
    )));
    assert!(!can_fuse_mixed_passes(&with("aic_nextn", 2.into())));
}

#[test]
fn errors_and_summaries() {
    assert_eq!(error_pct(110.0, Some(100.0)), Some(10.0));
    assert_eq!(error_pct(110.0, Some(0.0)), None);
    assert_eq!(error_pct(110.0, None), None);
    assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
    assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
    let s = ErrorStats::of(&[-10.0, 20.0, -30.0]);
    assert_eq!(s.n, 3);
    assert_eq!(s.mean_abs_pct, Some(20.0));
    assert_eq!(s.median_abs_pct, Some(20.0));
    assert_eq!(s.median_signed_pct, Some(-10.0));
}

#[test]
fn a_relabelled_row_says_how_it_was_stored_and_read() {
    // vLLM's tp4-ep4, stored as TP 4 × DP 4 with EP 16.
    let row = LLAMA.replacen(",16,2,1,1,2,1,", ",16,4,1,4,1,16,", 1);
    assert_ne!(row, LLAMA);
    let pts = read_table(Path::new("t.csv"), &table(&[&row])).unwrap();
    let (r, _) = recipe(&pts[0], &Options::default(), Some(&catalog())).unwrap();
    assert_eq!(
        r.notes,
        [
            "stored as TP 4 × attention DP 4, MoE TP 1 × EP 16, read as TP 4, MoE TP 1 × EP 4 \
          on 4 GPUs (a tpN-epN run, as the same measurement is stored in other batches)"
        ]
    );
    let e = r.extra_engine_args.unwrap();
    assert_eq!(
        (e["aic_tp_size"].clone(), e["aic_moe_ep_size"].clone()),
        (4.into(), 4.into())
    );
    // A row read as stored has no note.
    let pts = read_table(Path::new("t.csv"), &table(&[LLAMA])).unwrap();
    let (r, _) = recipe(&pts[0], &Options::default(), Some(&catalog())).unwrap();
    assert!(r.notes.is_empty(), "{:?}", r.notes);
}

#[test]
fn rows_whose_concurrency_is_several_batches_ran_several_workers() {
    // Outside the InferenceX batches, 416 = 32 × 13 at TP 2: 32 workers, each at batch 13.
    let dense = LLAMA
        .replacen(
            "source_file=2026-04-06.csv; silicon_concurrency=16",
            "source_file=gap.csv; silicon_concurrency=416",
            1,
        )
        .replacen(",16,2,1,1,2,1,", ",13,2,1,1,1,1,", 1);
    let pts = read_table(Path::new("t.csv"), &table(&[&dense])).unwrap();
    let (r, _) = recipe(&pts[0], &Options::default(), Some(&catalog())).unwrap();
    assert_eq!((r.num_workers, r.replay_concurrency), (32, Some(416)));
    assert_eq!(
        r.notes,
        [
            "silicon_concurrency 416 is 32 × batch_size 13: simulated as 32 workers of TP 2 \
          behind a round-robin router"
        ]
    );
    assert!(r.command_line().contains("--num-workers 32"));
    // With attention DP the batch is per rank: 64 = 2 workers × DP 4 × 8.
    let dp = dense
        .replacen("silicon_concurrency=416", "silicon_concurrency=64", 1)
        .replacen(",13,2,1,1,1,1,", ",8,1,1,4,,,", 1);
    let t = table_deployment(&dp);
    assert_eq!((t.pools[0].num_workers, t.pools[0].attention_dp), (2, 4));
    // A concurrency that is the batch (or not a multiple of it) is one worker, and the
    // InferenceX batches (one server per script) are never read so.
    for (src, bs) in [
        ("source_file=gap.csv; silicon_concurrency=13", 13),
        ("source_file=gap.csv; silicon_concurrency=20", 13),
        ("source_file=2026-04-06.csv; silicon_concurrency=416", 13),
    ] {
        let row = dense
            .replacen("source_file=gap.csv; silicon_concurrency=416", src, 1)
            .replacen(",13,2,", &format!(",{bs},2,"), 1);
        let t = table_deployment(&row);
        assert_eq!(t.pools[0].num_workers, 1, "{src}");
        assert!(t.notes.is_empty(), "{:?}", t.notes);
    }
}

#[test]
fn absurd_parallelism_does_not_overflow() {
    // Sizes whose products overflow 32 bits: read and refused or built, never a panic.
    for shape in [
        ",16,4294967295,1,2,4294967295,4294967295,",
        ",16,65536,1,65536,65536,65536,",
    ] {
        for src in ["source_file=2026-04-06.csv", "source_file=x.csv"] {
            let row = LLAMA.replacen(",16,2,1,1,2,1,", shape, 1).replacen(
                "source_file=2026-04-06.csv",
                src,
                1,
            );
            let pts = read_table(Path::new("t.csv"), &table(&[&row])).unwrap();
            if let Deployment::Table(_) = pts[0].deployment {
                let _ = recipe(&pts[0], &Options::default(), Some(&catalog()));
            }
        }
    }
}

/// One worker of TP `tp` × attention DP `dp`, its MoE split MoE TP `mtp` × EP `mep`.
fn one_worker(tp: u32, dp: u32, mtp: u32, mep: u32) -> Parallel {
    Parallel {
        num_workers: 1,
        tp,
        pp: 1,
        attention_dp: dp,
        moe_tp: Some(mtp),
        moe_ep: Some(mep),
    }
}

#[test]
fn vllm_rows_with_experts_beyond_their_tp_are_attention_dp() {
    let p = one_worker;
    assert_eq!(p(1, 1, 2, 1).vllm_experts_over_dp(), Some(p(1, 2, 2, 1)));
    assert_eq!(p(2, 1, 4, 1).vllm_experts_over_dp(), Some(p(2, 2, 4, 1)));
    assert_eq!(p(1, 1, 1, 4).vllm_experts_over_dp(), Some(p(1, 4, 1, 4)));
    // Experts over the deployment's own GPUs, a DP already given, or a width TP does not
    // divide: not of that form.
    for q in [
        p(2, 1, 2, 1),
        p(2, 1, 1, 2),
        p(1, 2, 4, 1),
        p(4, 1, 6, 1),
        p(4, 1, 2, 1),
    ] {
        assert_eq!(q.vllm_experts_over_dp(), None, "{q:?}");
    }
    // Through the table: the vLLM row is read so and says so; the same columns on SGLang are
    // as given.
    let row = LLAMA.replacen(",16,2,1,1,2,1,", ",16,1,1,,2,1,", 1);
    assert_ne!(row, LLAMA);
    let pts = read_table(Path::new("t.csv"), &table(&[&row])).unwrap();
    let Deployment::Table(t) = &pts[0].deployment else {
        panic!("{:?}", pts[0].deployment)
    };
    assert_eq!(t.pools[0].tp, 1);
    assert_eq!(t.pools[0].attention_dp, 2);
    assert_eq!(
        t.notes,
        [
            "stored as TP 1, MoE TP 2 × EP 1, read as TP 1 × attention DP 2, MoE TP 2 × EP 1 on 2 \
          GPUs (vLLM spreads the experts over TP × DP ranks; the row gives no DP)"
        ]
    );
    let sglang = row.replacen(",vllm,", ",sglang,", 1);
    let pts = read_table(Path::new("t.csv"), &table(&[&sglang])).unwrap();
    let Deployment::Table(t) = &pts[0].deployment else {
        panic!("{:?}", pts[0].deployment)
    };
    assert_eq!(t.pools[0].attention_dp, 1);
}

#[test]
fn tp_ep_rows_stored_as_n_squared_are_n_gpus() {
    let p = one_worker;
    // tp8-ep8 stored as TP 64, MoE TP 8 × EP 8: 8 GPUs, experts over 8.
    for ix in [true, false] {
        assert_eq!(p(64, 1, 8, 8).normalised(ix), p(8, 1, 1, 8));
        assert_eq!(p(16, 1, 4, 4).normalised(ix), p(4, 1, 1, 4));
        // dp8-ep8 with attention data parallelism.
        assert_eq!(p(1, 64, 8, 8).normalised(ix), p(1, 8, 1, 8));
        assert_eq!(p(1, 16, 4, 4).normalised(ix), p(1, 4, 1, 4));
        // vLLM's form: tp4-ep4 stored as TP 4 × DP 4 with EP 16.
        assert_eq!(p(4, 4, 1, 16).normalised(ix), p(4, 1, 1, 4));
    }
    // Within a node: undone for the InferenceX batches (whose tp2-ep2 rows are stored so),
    // as given otherwise.
    assert_eq!(p(4, 1, 2, 2).normalised(true), p(2, 1, 1, 2));
    assert_eq!(p(1, 4, 2, 2).normalised(true), p(1, 2, 1, 2));
    assert_eq!(p(2, 2, 1, 4).normalised(true), p(2, 1, 1, 2));
    for q in [p(4, 1, 2, 2), p(2, 2, 1, 4)] {
        assert_eq!(q.clone().normalised(false), q);
    }
    // Not of that shape: as given.
    for q in [
        p(8, 1, 8, 1),
        p(8, 1, 1, 8),
        p(36, 1, 36, 1),
        p(4, 2, 1, 8),
        p(2, 4, 1, 8),
    ] {
        assert_eq!(q.clone().normalised(true), q, "{q:?}");
    }
}

#[test]
fn vllm_and_sglang_rows_get_aics_dispatch_overhead_which_a_calibration_replaces() {
    let pts = read_table(Path::new("t.csv"), &table(&[LLAMA])).unwrap();
    let (r, _) = recipe(&pts[0], &Options::default(), Some(&catalog())).unwrap();
    // 80 layers x 0.8 ms.
    let e = r.extra_engine_args.as_ref().unwrap();
    assert_eq!(e["prefill_pass_overhead_ms"], 64.0);
    assert!(r.dispatch.prefill_pass_ms.is_some());
    // The run reproduces it.
    assert!(r
        .command_line()
        .contains("\"prefill_pass_overhead_ms\":64.0"));
    // A calibration's corrections drop it.
    let keys = calibration::correction_keys(&r, crate::calibrate::Corrections::NONE);
    assert_eq!(keys["prefill_pass_overhead_ms"], 0.0);
    // A pool left at its size gets no factor; a fitted one, its factor.
    assert!(keys.get("kv_pool_scale").is_none());
    let half = crate::calibrate::Corrections {
        kv_pool_scale: 0.5,
        ..crate::calibrate::Corrections::NONE
    };
    assert_eq!(calibration::correction_keys(&r, half)["kv_pool_scale"], 0.5);

    // `--dispatch-overhead none`: DynoSim's passes.
    let opts = Options {
        dispatch_overhead: DispatchOverhead::None,
        ..Options::default()
    };
    let (r, _) = recipe(&pts[0], &opts, Some(&catalog())).unwrap();
    assert!(r
        .extra_engine_args
        .unwrap()
        .get("prefill_pass_overhead_ms")
        .is_none());
    assert!(r.dispatch.prefill_pass_ms.is_none());

    // By default SGLang rows get it too, TRT-LLM rows of a dense model nothing (below for an
    // MoE model); `aic` (AIC's model as it is) charges vLLM rows only.
    let aic = Options {
        dispatch_overhead: DispatchOverhead::Aic,
        ..Options::default()
    };
    let all = Options {
        dispatch_overhead: DispatchOverhead::All,
        ..Options::default()
    };
    for (backend, by_default) in [("sglang", Some(64.0)), ("trtllm", None)] {
        let row = LLAMA.replacen(",vllm,", &format!(",{backend},"), 1);
        let pts = read_table(Path::new("t.csv"), &table(&[&row])).unwrap();
        let (r, _) = recipe(&pts[0], &Options::default(), Some(&catalog())).unwrap();
        let e = r.extra_engine_args.unwrap();
        assert_eq!(e["engine_type"], backend);
        let got = e.get("prefill_pass_overhead_ms").and_then(|v| v.as_f64());
        assert_eq!(got, by_default, "{backend}");
        assert_eq!(
            r.dispatch.prefill_pass_ms.is_some(),
            by_default.is_some(),
            "{backend}"
        );
        let (r, _) = recipe(&pts[0], &aic, Some(&catalog())).unwrap();
        let e = r.extra_engine_args.unwrap();
        assert!(e.get("prefill_pass_overhead_ms").is_none(), "{backend}");
        // `all` charges every backend, TRT-LLM's included.
        let (r, _) = recipe(&pts[0], &all, Some(&catalog())).unwrap();
        assert_eq!(
            r.extra_engine_args.unwrap()["prefill_pass_overhead_ms"],
            64.0
        );
        assert!(r.dispatch.prefill_pass_ms.is_some(), "{backend}");
    }
    let (r, _) = recipe(&pts[0], &aic, Some(&catalog())).unwrap();
    assert_eq!(
        r.extra_engine_args.unwrap()["prefill_pass_overhead_ms"],
        64.0
    );
    for d in [
        DispatchOverhead::Engines,
        DispatchOverhead::VllmSglang,
        DispatchOverhead::Aic,
        DispatchOverhead::All,
        DispatchOverhead::None,
    ] {
        assert_eq!(DispatchOverhead::parse(d.name()), Some(d));
    }
    assert_eq!(DispatchOverhead::default(), DispatchOverhead::Engines);
    assert_eq!(DispatchOverhead::parse("AIC"), None);
}

#[test]
fn sglang_rows_get_their_inferencex_scripts_server_settings() {
    let mut aic = catalog();
    let h200 = aic.databases["h200_sxm"].clone();
    for system in ["b200_sxm", "b300_sxm"] {
        aic.databases.insert(system.to_string(), h200.clone());
    }
    aic.models.push("Qwen/Qwen3.5-397B-A17B".to_string());
    aic.models.push("deepseek-ai/DeepSeek-R1".to_string());
    let engine = |row: &str, opts: &Options| {
        let pts = read_table(Path::new("t.csv"), &table(&[row])).unwrap();
        let (r, _) = recipe(&pts[0], opts, Some(&aic)).unwrap();
        r.extra_engine_args.unwrap()
    };
    let defaults = Options::default();
    let qwen = LLAMA
        .replacen(",vllm,", ",sglang,", 1)
        .replacen("meta-llama/Llama-3.1-70B", "Qwen/Qwen3.5-397B-A17B", 1)
        .replacen(",h200_sxm,", ",b200_sxm,", 1);
    // B200 (qwen3.5_fp8_b200.sh): a receive every 30 passes at concurrency 16 and above, 10
    // below; 32768-token chunks and prefill budget; 0.82 of the GPU; an FP8 KV cache. The
    // concurrency still bounds the running requests (the measured rows above 128 show no cap).
    let e = engine(&qwen, &defaults);
    assert_eq!(e["sglang"]["scheduler_recv_interval"], 30);
    assert_eq!(e["sglang"]["chunked_prefill_size"], 32768);
    assert_eq!(e["sglang"]["max_prefill_tokens"], 32768);
    assert_eq!(e["mem_fraction_static"], 0.82);
    assert_eq!(e["aic_kv_cache_dtype"], "fp8");
    assert_eq!(e["max_num_seqs"], 16);
    let c8 = qwen.replacen(",fp8,fp8,16,", ",fp8,fp8,8,", 1).replacen(
        "silicon_concurrency=16",
        "silicon_concurrency=8",
        1,
    );
    assert_ne!(c8, qwen);
    assert_eq!(
        engine(&c8, &defaults)["sglang"]["scheduler_recv_interval"],
        10
    );
    // B300 with FP8 weights: 10, 16384-token chunks; with BF16 weights as on B200, and the
    // model's KV dtype.
    let b300 = qwen.replacen(",b200_sxm,", ",b300_sxm,", 1);
    let e = engine(&b300, &defaults);
    assert_eq!(e["sglang"]["scheduler_recv_interval"], 10);
    assert_eq!(e["sglang"]["chunked_prefill_size"], 16384);
    assert_eq!(e["mem_fraction_static"], 0.8);
    let b300_bf16 = b300.replacen(",fp8,agg,1024,1024,fp8,fp8,", ",bf16,agg,1024,1024,,,", 1);
    assert_ne!(b300_bf16, b300);
    let e = engine(&b300_bf16, &defaults);
    assert_eq!(e["sglang"]["scheduler_recv_interval"], 30);
    assert!(e.get("aic_kv_cache_dtype").is_none());
    // The B300 scripts' client in the runs marked work in progress sends `--num-prompts
    // $CONC`: one wave of 16 requests; the released B300 runs (the database's, no `wip=True`)
    // and the B200 rows keep 10 × 16, and so do `wip` rows under `--launch-settings none`.
    let b300_wip = b300.replacen(
        "silicon_concurrency=16",
        "silicon_concurrency=16; measured=2026-04-03T16:54:18Z; wip=True",
        1,
    );
    assert_ne!(b300_wip, b300);
    let requests = |row: &str, opts: &Options| {
        let pts = read_table(Path::new("t.csv"), &table(&[row])).unwrap();
        recipe(&pts[0], opts, Some(&aic)).unwrap().0.request_count
    };
    assert_eq!(requests(&b300_wip, &defaults), 16);
    assert_eq!(requests(&b300, &defaults), 160);
    assert_eq!(requests(&qwen, &defaults), 160);
    let no_launch = Options {
        launch: LaunchSettings::None,
        ..Options::default()
    };
    assert_eq!(requests(&b300_wip, &no_launch), 160);
    // The one wave is noted for the row's `notes`; the ten waves asked for are not.
    let notes = |row: &str, opts: &Options| {
        let pts = read_table(Path::new("t.csv"), &table(&[row])).unwrap();
        recipe(&pts[0], opts, Some(&aic)).unwrap().0.notes
    };
    assert_eq!(
        notes(&b300_wip, &defaults),
        ["1 prompt per unit of concurrency, as its launch script's client sent"]
    );
    assert!(notes(&b300, &defaults).is_empty());
    assert!(notes(&qwen, &defaults).is_empty());
    assert!(notes(&b300_wip, &no_launch).is_empty());
    // H200: no receive interval, 16384-token chunks, and the model's KV dtype (AIC 0.12.0 has
    // no FP8-KV context attention for Qwen3.5 on H200 SGLang).
    let e = engine(&qwen.replacen(",b200_sxm,", ",h200_sxm,", 1), &defaults);
    assert!(e["sglang"].get("scheduler_recv_interval").is_none());
    assert_eq!(e["sglang"]["chunked_prefill_size"], 16384);
    assert_eq!(e["sglang"]["max_prefill_tokens"], 16384);
    assert!(e.get("aic_kv_cache_dtype").is_none());
    // DeepSeek-R1 on B200 (dsr1_fp8_b200.sh at TP 8, dsr1_fp4_b200.sh) and H200 (dsr1_fp8_h200.sh).
    let dsr1 = qwen.replacen("Qwen/Qwen3.5-397B-A17B", "deepseek-ai/DeepSeek-R1", 1);
    let tp8 = dsr1.replacen(",16,2,1,1,2,1,", ",16,8,1,1,8,1,", 1);
    assert_ne!(tp8, dsr1);
    let e = engine(&tp8, &defaults);
    assert_eq!(e["sglang"]["scheduler_recv_interval"], 30);
    assert_eq!(e["sglang"]["chunked_prefill_size"], 32768);
    assert_eq!(e["mem_fraction_static"], 0.82);
    let fp4 = tp8.replacen(
        ",fp8,agg,1024,1024,fp8,fp8,",
        ",fp4,agg,1024,1024,nvfp4,nvfp4,",
        1,
    );
    assert_ne!(fp4, tp8);
    let e = engine(&fp4, &defaults);
    assert_eq!(e["sglang"]["chunked_prefill_size"], 16384);
    assert!(e["sglang"].get("max_prefill_tokens").is_none());
    assert_eq!(e["mem_fraction_static"], 0.85);
    let e = engine(&tp8.replacen(",b200_sxm,", ",h200_sxm,", 1), &defaults);
    assert!(e["sglang"].get("scheduler_recv_interval").is_none());
    assert_eq!(e["sglang"]["max_prefill_tokens"], 32768);
    // Its script sets no KV dtype: SGLang keeps the model's BF16 (AIC's default would be FP8).
    assert_eq!(e["aic_kv_cache_dtype"], "bfloat16");
    // Not on other models; `--launch-settings none` leaves SGLang's defaults (the KV dtype
    // follows `--kv-cache-dtype`).
    let llama = LLAMA
        .replacen(",vllm,", ",sglang,", 1)
        .replacen(",h200_sxm,", ",b200_sxm,", 1);
    let e = engine(&llama, &defaults);
    assert!(e.get("sglang").is_none() && e.get("mem_fraction_static").is_none());
    let none = Options {
        launch: LaunchSettings::None,
        ..Options::default()
    };
    let e = engine(&qwen, &none);
    assert!(e.get("sglang").is_none() && e.get("mem_fraction_static").is_none());
    assert_eq!(e["aic_kv_cache_dtype"], "fp8");
    // Pools are sized as the servers account their memory (`--memory-model server`, whatever
    // the launch settings, on every backend: SGLang's fraction, the checkpoint's weights);
    // `aic` keeps AIC's rule and leaves the key out.
    assert_eq!(e["aic_memory_model"], "server");
    assert_eq!(engine(&qwen, &defaults)["aic_memory_model"], "server");
    let vllm = LLAMA.replacen(",h200_sxm,", ",b200_sxm,", 1);
    assert_eq!(engine(&vllm, &defaults)["aic_memory_model"], "server");
    let aic_memory = Options {
        memory_model: MemoryModel::Aic,
        ..Options::default()
    };
    assert!(engine(&qwen, &aic_memory).get("aic_memory_model").is_none());
    assert!(engine(&vllm, &aic_memory).get("aic_memory_model").is_none());
    // AIC's decode times are read as monotone in the batch (`--decode-timing monotone`) on
    // every backend; `aic` reads them as they are and leaves the key out.
    assert_eq!(engine(&qwen, &defaults)["aic_decode_monotone"], true);
    assert_eq!(engine(&vllm, &defaults)["aic_decode_monotone"], true);
    let raw_decode = Options {
        monotone_decode: false,
        ..Options::default()
    };
    assert!(engine(&vllm, &raw_decode)
        .get("aic_decode_monotone")
        .is_none());
    // A step that prefills and decodes is timed as DynoSim's two passes unless asked
    // (`--mixed-pass fused`), and then on vLLM and TRT-LLM rows only.
    assert!(engine(&vllm, &defaults).get("mixed_pass").is_none());
    let fused = Options {
        fused_mixed_pass: true,
        ..Options::default()
    };
    assert_eq!(engine(&vllm, &fused)["mixed_pass"], "fused");
    let trtllm = LLAMA.replacen(",vllm,", ",trtllm,", 1);
    assert_eq!(engine(&trtllm, &fused)["mixed_pass"], "fused");
    assert!(engine(&qwen, &fused).get("mixed_pass").is_none());
    // The measured server's release names the calibration entry its pools take, where the row
    // gives one (LLAMA's is blank).
    assert!(engine(&vllm, &defaults).get("server_version").is_none());
    let released = qwen.replacen(",sglang,,", ",sglang,0.5.9,", 1);
    let e = engine(&released, &defaults);
    assert_eq!(e["server_version"], "0.5.9");
    assert_ne!(e["aic_backend_version"], "0.5.9");
}

/// An H200 TRT-LLM DeepSeek-R1 row of the 2026 batches with attention DP: TP 1 × attention DP
/// 8 with EP 8, concurrency 256 (32 per rank), ISL/OSL 1024/1024.
const H200_DSR1_DP: &str = "d1,source_file=2026-03-25.csv; silicon_concurrency=256,trtllm,1.1.0rc2.post2,deepseek-ai/DeepSeek-R1,h200_sxm,fp8,agg,1024,1024,fp8,fp8,32,1,1,8,1,8,,,,,,,,,,,,,,,3201.0,31.5";

/// The same model at TP 8 (MoE TP 8) without attention DP, concurrency 64, 1024/1024.
const H200_DSR1_TP: &str = "d2,source_file=2026-04-06.csv; silicon_concurrency=64,trtllm,,deepseek-ai/DeepSeek-R1,h200_sxm,fp8,agg,1024,1024,fp8,fp8,64,8,1,1,8,1,,,,,,,,,,,,,,,972.8,23.4";

#[test]
fn trtllm_moe_rows_get_the_dispatch_cost_once_per_request_which_a_calibration_replaces() {
    let pts = read_table(Path::new("t.csv"), &table(&[H200_DSR1_TP])).unwrap();
    let (r, _) = recipe(&pts[0], &Options::default(), Some(&catalog())).unwrap();
    // 58 MoE layers x 0.8 ms, before the engine sees each request; no per-pass cost.
    let e = r.extra_engine_args.as_ref().unwrap();
    assert_eq!(e["request_overhead_ms"], 46.4);
    assert!(e.get("prefill_pass_overhead_ms").is_none());
    assert!(r.dispatch.prefill_pass_ms.is_none());
    assert_eq!(r.dispatch.request_ms, Some(46.4));
    assert!(r.command_line().contains("\"request_overhead_ms\":46.4"));
    // A calibration's fitted request overhead stands in for it.
    let keys = calibration::correction_keys(&r, crate::calibrate::Corrections::NONE);
    assert_eq!(keys["request_overhead_ms"], 0.0);
    let fitted = crate::calibrate::Corrections {
        request_overhead_ms: 125.0,
        ..crate::calibrate::Corrections::NONE
    };
    assert_eq!(
        calibration::correction_keys(&r, fitted)["request_overhead_ms"],
        125.0
    );
    // The earlier default charged TRT-LLM rows nothing; `all` charges every prefill pass.
    for (d, pass, request) in [
        (DispatchOverhead::VllmSglang, None, None),
        (DispatchOverhead::All, Some(48.8), None),
        (DispatchOverhead::None, None, None),
    ] {
        let opts = Options {
            dispatch_overhead: d,
            ..Options::default()
        };
        let (r, _) = recipe(&pts[0], &opts, Some(&catalog())).unwrap();
        let e = r.extra_engine_args.unwrap();
        let ms = |k: &str| e.get(k).and_then(|v| v.as_f64());
        assert_eq!(ms("prefill_pass_overhead_ms"), pass, "{d:?}");
        assert_eq!(ms("request_overhead_ms"), request, "{d:?}");
        assert_eq!(r.dispatch.request_ms, None, "{d:?}");
    }
    // A vLLM row of the same model: the per-pass cost over all 61 layers.
    let vllm = H200_DSR1_TP.replacen(",trtllm,,", ",vllm,,", 1);
    let pts = read_table(Path::new("t.csv"), &table(&[&vllm])).unwrap();
    let (r, _) = recipe(&pts[0], &Options::default(), Some(&catalog())).unwrap();
    let e = r.extra_engine_args.unwrap();
    assert_eq!(e["prefill_pass_overhead_ms"], 48.8);
    assert!(e.get("request_overhead_ms").is_none());
}

#[test]
fn trtllm_deepseek_rows_with_attention_dp_get_inferencexs_balancing() {
    // H200 DeepSeek-R1 on TRT-LLM: TP 1 × attention DP 8 with EP 8, 32 per rank (concurrency
    // 256), and the same model at TP 8 without attention DP.
    let dp = H200_DSR1_DP;
    let tp = H200_DSR1_TP;
    let trtllm_object = |row: &str, opts: &Options| {
        let pts = read_table(Path::new("t.csv"), &table(&[row])).unwrap();
        let (r, _) = recipe(&pts[0], opts, Some(&catalog())).unwrap();
        r.extra_engine_args.unwrap().get("trtllm").cloned()
    };
    let t = trtllm_object(dp, &Options::default()).expect("balancing with attention DP");
    assert_eq!(t["attention_dp_enable_balance"], true);
    assert_eq!(t["attention_dp_timeout_iters"], 60);
    assert_eq!(t["attention_dp_batching_wait_iters"], 0);
    assert!(trtllm_object(tp, &Options::default()).is_none());
    let none = Options {
        launch: LaunchSettings::None,
        ..Options::default()
    };
    assert!(trtllm_object(dp, &none).is_none());
}

#[test]
fn rows_with_attention_dp_place_requests_as_their_engine_does() {
    let dp = H200_DSR1_DP;
    let tp = H200_DSR1_TP;
    let routing = |row: &str, opts: &Options| {
        let pts = read_table(Path::new("t.csv"), &table(&[row])).unwrap();
        let (r, _) = recipe(&pts[0], opts, Some(&catalog())).unwrap();
        r.extra_engine_args.unwrap().get("dp_rank_routing").cloned()
    };
    // The measured servers ran without a Dynamo router: each engine placed its requests.
    assert_eq!(routing(dp, &Options::default()), Some("engine".into()));
    assert_eq!(routing(tp, &Options::default()), None);
    let router = Options {
        dp_rank_routing: crate::config::DpRankRouting::Router,
        ..Options::default()
    };
    assert_eq!(routing(dp, &router), None);
}

#[test]
fn inferencex_mtp_runs_trtllm_deepseek_rows_as_the_mtp_scripts() {
    // H200 FP8: TP 1 × attention DP 8 at concurrency 256 (32 per rank), and TP 8 at 64.
    let dp = H200_DSR1_DP;
    let tp = &H200_DSR1_TP.replacen("agg,1024,1024", "agg,8192,1024", 1);
    let mut cat = catalog();
    let h200 = cat.databases["h200_sxm"].clone();
    cat.databases.insert("b200_sxm".into(), h200);
    let mtp = Options {
        launch: LaunchSettings::InferenceXMtp,
        ..Options::default()
    };
    let run = |row: &str, opts: &Options| {
        let pts = read_table(Path::new("t.csv"), &table(&[row])).unwrap();
        let (r, _) = recipe(&pts[0], opts, Some(&cat)).unwrap();
        (r.extra_engine_args.unwrap(), r.notes)
    };
    let keys = |e: &serde_json::Value| {
        (
            e.get("aic_nextn").cloned(),
            e["max_num_seqs"].clone(),
            e["max_num_batched_tokens"].clone(),
        )
    };
    // Attention DP: 1 draft token, max_batch_size 256 / 8 GPUs, max_num_tokens
    // (2 × 32 + 1024 + 127) / 64 × 64 = 1152; the rest as inferencex (its balancing).
    let (e, notes) = run(dp, &mtp);
    assert_eq!(keys(&e), (Some(1.into()), 32.into(), 1152.into()));
    assert_eq!(e["trtllm"]["attention_dp_enable_balance"], true);
    assert!(
        notes.iter().any(|n| n.contains(
            "InferenceX's MTP script (--launch-settings inferencex-mtp): 1 draft token, \
             max_batch_size 32, max_num_tokens 1152"
        )),
        "{notes:?}"
    );
    // Without: 3 draft tokens, max_batch_size the concurrency, (4 × 64 + 8192 + 127) / 64 × 64.
    assert_eq!(
        keys(&run(tp, &mtp).0),
        (Some(3.into()), 64.into(), 8512.into())
    );
    // A fused mixed pass is not for MTP pools: such rows keep DynoSim's timing of the step.
    let fused_mtp = Options {
        fused_mixed_pass: true,
        ..mtp.clone()
    };
    assert!(run(tp, &fused_mtp).0.get("mixed_pass").is_none());
    // The plain script's budget: (64 + 8192 + 127) / 64 × 64 = 8320 tokens; at ISL 1024 its
    // floor, 8192.
    let plain_scripts = Options {
        launch: LaunchSettings::InferenceXPlain,
        ..Options::default()
    };
    assert_eq!(
        keys(&run(tp, &plain_scripts).0),
        (None, 64.into(), 8320.into())
    );
    assert_eq!(keys(&run(dp, &plain_scripts).0).2, 8192);
    // B200: with attention DP the FP4 script divides by 4, the FP8 one by 8 (below those, the
    // concurrency itself).
    let b200 = |row: &str, quant: &str| {
        row.replacen("h200_sxm,fp8,agg", &format!("b200_sxm,{quant},agg"), 1)
            .replacen(",fp8,fp8,", &format!(",{quant},{quant},"), 1)
    };
    assert_eq!(keys(&run(&b200(dp, "nvfp4"), &mtp).0).1, 64);
    assert_eq!(keys(&run(&b200(dp, "fp8"), &mtp).0).1, 32);
    let low = b200(dp, "fp8").replacen("silicon_concurrency=256", "silicon_concurrency=4", 1);
    assert_eq!(keys(&run(&low, &mtp).0).1, 4);
    // The default: no MTP for a row whose source gives no date or one before InferenceX's
    // MTP scripts landed (2026-01-07), the MTP script for one measured since.
    let (plain, notes) = run(dp, &Options::default());
    assert_eq!(keys(&plain).0, None);
    assert!(!notes.iter().any(|n| n.contains("MTP")), "{notes:?}");
    let dated = |day: &str| {
        dp.replacen(
            "silicon_concurrency=256",
            &format!("silicon_concurrency=256; measured={day}T22:26:21Z; wip=False"),
            1,
        )
    };
    let (e, _) = run(&dated("2026-01-06"), &Options::default());
    assert_eq!(keys(&e).0, None);
    let (e, notes) = run(&dated("2026-01-14"), &Options::default());
    assert_eq!(keys(&e), (Some(1.into()), 32.into(), 1152.into()));
    assert!(
        notes.iter().any(|n| n.contains(
            "InferenceX's MTP script (measured 2026-01-14, after InferenceX's MTP scripts \
             landed on 2026-01-07; --launch-settings inferencex-plain runs it plain): 1 draft \
             token"
        )),
        "{notes:?}"
    );
    let (e, _) = run(&dated("2026-01-14"), &plain_scripts);
    assert_eq!(keys(&e).0, None);
    assert_eq!(e["trtllm"]["attention_dp_enable_balance"], true);
    assert_eq!(
        LaunchSettings::parse("inferencex-plain"),
        Some(LaunchSettings::InferenceXPlain)
    );
    // A `measured=` that is not a day is no date, and a row of another source than
    // InferenceX's (an AIC gap analysis) ran no InferenceX script.
    let (e, _) = run(&dated("soon"), &Options::default());
    assert_eq!(keys(&e).0, None);
    let gap = dated("2026-03-17").replacen(
        "source_file=2026-03-25.csv",
        "source_file=/data/aic-auto-gap-analysis/b200_sxm/trtllm/1.3.0rc1/run.csv",
        1,
    );
    let (e, _) = run(&gap, &Options::default());
    assert_eq!(keys(&e).0, None);
    // B200 FP4 rows of TRT-LLM 1.2.0rc6.post2, a container only InferenceX's plain FP4 script
    // ran, are plain whatever their date; the same rows of 1.2.0rc6.post3, and FP8 rows of
    // either, are MTP runs.
    let version = |quant: &str, v: &str| {
        b200(&dated("2026-02-03"), quant).replacen(",1.1.0rc2.post2,", &format!(",{v},"), 1)
    };
    let (e, notes) = run(&version("nvfp4", "1.2.0rc6.post2"), &Options::default());
    assert_eq!(keys(&e).0, None);
    assert!(
        notes.iter().any(|n| n.contains(
            "run as InferenceX's plain script though measured after its MTP scripts landed: \
             TRT-LLM 1.2.0rc6.post2"
        )),
        "{notes:?}"
    );
    assert_eq!(
        keys(&run(&version("nvfp4", "1.2.0rc6.post2"), &mtp).0).0,
        Some(1.into())
    );
    for (quant, v) in [("nvfp4", "1.2.0rc6.post3"), ("fp8", "1.2.0rc6.post2")] {
        let (e, notes) = run(&version(quant, v), &Options::default());
        assert_eq!(keys(&e).0, Some(1.into()), "{quant} {v}");
        assert!(
            !notes.iter().any(|n| n.contains("plain script")),
            "{notes:?}"
        );
    }
    // Other backends: no MTP.
    let sglang = dp.replacen(",trtllm,", ",sglang,", 1);
    assert_eq!(keys(&run(&sglang, &mtp).0).0, None);
    assert_eq!(
        LaunchSettings::parse("inferencex-mtp"),
        Some(LaunchSettings::InferenceXMtp)
    );
}

#[test]
fn inferencex_database_rows_are_simulated_as_their_2026_twins() {
    // The same measurement in InferenceX's database: model named DeepSeek-V3, stored as the
    // tpN-epN quirk (attention DP 64 with MoE TP 8 × EP 8, 4 per rank), where the 2026 batch
    // has attention DP 8 with EP 8 and 32 per rank.
    let twin = H200_DSR1_DP;
    let db = twin
        .replacen(
            "source_file=2026-03-25.csv",
            "db-dump/2026-04-27; config_id=191",
            1,
        )
        .replacen("DeepSeek-R1", "DeepSeek-V3", 1)
        .replacen(",32,1,1,8,1,8,", ",4,1,1,64,8,8,", 1);
    let args = |row: &str| {
        let pts = read_table(Path::new("t.csv"), &table(&[row])).unwrap();
        let (r, _) = recipe(&pts[0], &Options::default(), Some(&catalog())).unwrap();
        (r.extra_engine_args.unwrap(), r.replay_concurrency)
    };
    let (a, b) = (args(twin), args(&db));
    assert_eq!(a.1, b.1);
    let without_model = |mut v: serde_json::Value| {
        v.as_object_mut().unwrap().remove("aic_model_path");
        v
    };
    assert_eq!(without_model(a.0), without_model(b.0.clone()));
    assert_eq!(b.0["trtllm"]["attention_dp_enable_balance"], true);
    // Elsewhere DeepSeek-V3 is its own model: no InferenceX DeepSeek-R1 script settings.
    let elsewhere = db.replacen("db-dump/2026-04-27; config_id=191", "source_file=x.csv", 1);
    assert!(args(&elsewhere).0.get("trtllm").is_none());
}

#[test]
fn trtllm_llama_short_rows_below_tp8_get_inferencexs_batch_waiting() {
    let trt = LLAMA.replacen(",vllm,", ",trtllm,", 1);
    let trtllm_object = |row: &str, opts: &Options| {
        let pts = read_table(Path::new("t.csv"), &table(&[row])).unwrap();
        let (r, _) = recipe(&pts[0], opts, Some(&catalog())).unwrap();
        r.extra_engine_args.unwrap().get("trtllm").cloned()
    };
    let defaults = Options::default();
    let t = trtllm_object(&trt, &defaults).expect("batch waiting at TP 2, 1024/1024");
    assert_eq!(t["batch_wait_timeout_iters"], 20);
    assert_eq!(t["batch_wait_max_tokens_ratio"], 0.9);
    // Not at TP 8, not at other lengths, not on other backends (InferenceX's scripts).
    let tp8 = trt.replacen(",16,2,1,1,2,1,", ",16,8,1,1,8,1,", 1);
    assert_ne!(tp8, trt);
    assert!(trtllm_object(&tp8, &defaults).is_none());
    let long = trt.replacen(",agg,1024,1024,", ",agg,8192,1024,", 1);
    assert_ne!(long, trt);
    assert!(trtllm_object(&long, &defaults).is_none());
    assert!(trtllm_object(LLAMA, &defaults).is_none());
    // `--launch-settings none`.
    let none = Options {
        launch: LaunchSettings::None,
        ..Options::default()
    };
    assert!(trtllm_object(&trt, &none).is_none());
    assert_eq!(
        LaunchSettings::parse("inferencex"),
        Some(LaunchSettings::InferenceX)
    );
    assert_eq!(LaunchSettings::parse("on"), None);
}

#[test]
fn minimax_on_h100_keeps_the_checkpoints_bf16_kv_cache() {
    let mut aic = catalog();
    let h200 = aic.databases["h200_sxm"].clone();
    aic.databases.insert("h100_sxm".to_string(), h200);
    aic.models.push("MiniMaxAI/MiniMax-M2.5".to_string());
    let kv = |row: &str| {
        let pts = read_table(Path::new("t.csv"), &table(&[row])).unwrap();
        let (r, _) = recipe(&pts[0], &Options::default(), Some(&aic)).unwrap();
        r.extra_engine_args.unwrap()["aic_kv_cache_dtype"].clone()
    };
    // Its vLLM script for H100 sets no KV dtype (vLLM keeps the checkpoint's BF16); on the
    // other GPUs its servers ran FP8, as Llama's scripts set on every GPU.
    let minimax = LLAMA.replacen("meta-llama/Llama-3.1-70B", "MiniMaxAI/MiniMax-M2.5", 1);
    let h100 = |row: &str| row.replacen(",h200_sxm,", ",h100_sxm,", 1);
    assert_ne!(h100(&minimax), minimax);
    assert_eq!(kv(&h100(&minimax)), "bfloat16");
    assert_eq!(kv(&minimax), "fp8");
    assert_eq!(kv(&h100(LLAMA)), "fp8");
    // `--kv-cache-dtype fp8` still sets it.
    let fp8 = Options {
        kv_cache_dtype: KvCacheDtype::Fp8,
        ..Options::default()
    };
    let pts = read_table(Path::new("t.csv"), &table(&[&h100(&minimax)])).unwrap();
    let (r, _) = recipe(&pts[0], &fp8, Some(&aic)).unwrap();
    assert_eq!(r.extra_engine_args.unwrap()["aic_kv_cache_dtype"], "fp8");
}

#[test]
fn fp4_rows_of_an_mxfp4_checkpoint_run_its_own_format() {
    let mut aic = catalog();
    let h200 = aic.databases["h200_sxm"].clone();
    aic.databases.insert("b200_sxm".to_string(), h200.clone());
    aic.databases.insert("h100_sxm".to_string(), h200);
    aic.models.push("openai/gpt-oss-120b".to_string());
    aic.models.push("deepseek-ai/DeepSeek-R1".to_string());
    aic.checkpoint_quant
        .insert("openai/gpt-oss-120b".to_string(), "mxfp4".to_string());
    aic.checkpoint_quant.insert(
        "deepseek-ai/DeepSeek-R1".to_string(),
        "fp8_block".to_string(),
    );
    aic.checkpoint_quant
        .insert("zai-org/GLM-5-FP8".to_string(), "fp8_block".to_string());
    let run = |row: &str| {
        let pts = read_table(Path::new("t.csv"), &table(&[row])).unwrap();
        let (r, _) = recipe(&pts[0], &Options::default(), Some(&aic)).unwrap();
        (r.extra_engine_args.unwrap(), r.notes)
    };
    // The table labels gpt-oss-120b's rows `nvfp4` on every GPU; its checkpoint is MXFP4, so
    // on B200 as on H200 the row runs AIC's default for the model, and says so.
    let oss = LLAMA
        .replacen("meta-llama/Llama-3.1-70B", "openai/gpt-oss-120b", 1)
        .replacen(
            ",h200_sxm,fp8,agg,1024,1024,fp8,fp8,",
            ",b200_sxm,fp4,agg,1024,1024,nvfp4,nvfp4,",
            1,
        );
    assert!(oss.contains("b200_sxm,fp4"));
    for row in [oss.clone(), oss.replacen(",b200_sxm,", ",h200_sxm,", 1)] {
        let (e, notes) = run(&row);
        assert!(e.get("aic_gemm_dtype").is_none(), "{e}");
        assert!(e.get("aic_moe_dtype").is_none(), "{e}");
        assert_eq!(
            notes,
            ["quantisation nvfp4/nvfp4 read as the checkpoint ran it: GEMM the model's default, \
              MoE the model's default (checkpoint mxfp4)"]
        );
    }
    // Its scripts set an FP8 KV cache on Blackwell only, BF16 (`auto`) on Hopper.
    assert_eq!(run(&oss).0["aic_kv_cache_dtype"], "fp8");
    let h200 = oss.replacen(",b200_sxm,", ",h200_sxm,", 1);
    assert_eq!(run(&h200).0["aic_kv_cache_dtype"], "bfloat16");
    let trt_h200 = h200.replacen(",vllm,", ",trtllm,", 1);
    assert_eq!(run(&trt_h200).0["aic_kv_cache_dtype"], "bfloat16");
    // So does any other label on that checkpoint (the H100 gap-analysis rows' `fp8`).
    let oss_fp8 = oss.replacen(
        ",b200_sxm,fp4,agg,1024,1024,nvfp4,nvfp4,",
        ",h200_sxm,fp8,agg,1024,1024,fp8,fp8,",
        1,
    );
    assert_ne!(oss_fp8, oss);
    let (e, notes) = run(&oss_fp8.replacen(",vllm,", ",trtllm,", 1));
    assert!(e.get("aic_gemm_dtype").is_none(), "{e}");
    assert!(e.get("aic_moe_dtype").is_none(), "{e}");
    assert!(
        notes[0].starts_with("quantisation fp8/fp8 read as"),
        "{notes:?}"
    );
    // TRT-LLM runs the MXFP4 MoE with MXFP8 activations on Blackwell, BF16 ones on Hopper.
    let trt_oss = oss.replacen(",vllm,", ",trtllm,", 1);
    let (e, notes) = run(&trt_oss);
    assert!(e.get("aic_gemm_dtype").is_none(), "{e}");
    assert_eq!(e["aic_moe_dtype"], "w4a8_mxfp4_mxfp8");
    // Its scripts' `--max_num_tokens 20000`; no balancing without attention DP.
    assert_eq!(e["max_num_batched_tokens"], 20000);
    assert!(e.get("trtllm").is_none(), "{e}");
    // With attention DP on B200, the script's `enable_balance` with TRT-LLM's defaults.
    let trt_oss_dp = trt_oss.replacen(",16,2,1,1,2,1,", ",16,1,1,2,1,2,", 1);
    assert_ne!(trt_oss_dp, trt_oss);
    let (e, _) = run(&trt_oss_dp);
    assert_eq!(
        e["trtllm"],
        serde_json::json!({"attention_dp_enable_balance": true,
            "attention_dp_timeout_iters": 50, "attention_dp_batching_wait_iters": 10})
    );
    let (e, _) = run(&trt_oss_dp.replacen(",b200_sxm,", ",h200_sxm,", 1));
    assert!(e.get("trtllm").is_none(), "{e}");
    assert_eq!(e["max_num_batched_tokens"], 20000);
    // H100 (no InferenceX TRT-LLM script), vLLM's rows, and every row under
    // `--launch-settings none`, keep the 8192 tokens.
    let (e, _) = run(&trt_oss.replacen(",b200_sxm,", ",h100_sxm,", 1));
    assert_eq!(e["max_num_batched_tokens"], 8192);
    assert_eq!(run(&oss).0["max_num_batched_tokens"], 8192);
    let none = Options {
        launch: LaunchSettings::None,
        ..Options::default()
    };
    let pts = read_table(Path::new("t.csv"), &table(&[&trt_oss_dp])).unwrap();
    let e = recipe(&pts[0], &none, Some(&aic))
        .unwrap()
        .0
        .extra_engine_args
        .unwrap();
    assert_eq!(e["max_num_batched_tokens"], 8192);
    assert!(e.get("trtllm").is_none(), "{e}");
    // Its MoE split by TP (the row's MoE TP 2) is timed as EP 2, as AIC's TRT-LLM data holds
    // that MoE split by EP only; vLLM's rows keep the split they give.
    assert_eq!(
        (&e["aic_moe_tp_size"], &e["aic_moe_ep_size"]),
        (&serde_json::json!(1), &serde_json::json!(2))
    );
    assert_eq!(
        notes,
        [
            "quantisation nvfp4/nvfp4 read as the checkpoint ran it: GEMM the model's default, \
          MoE w4a8_mxfp4_mxfp8 (checkpoint mxfp4)",
            "MoE TP 2 × EP 1 timed as EP 2: AIC's TRT-LLM data holds the MXFP4 MoE split by EP \
             only, which gives each GPU the same share of the experts' weights and work"
        ]
    );
    let (e, _) = run(&oss);
    assert_eq!(
        (&e["aic_moe_tp_size"], &e["aic_moe_ep_size"]),
        (&serde_json::json!(2), &serde_json::json!(1))
    );
    let ep = trt_oss.replacen(",16,2,1,1,2,1,", ",16,2,1,1,1,2,", 1);
    assert_ne!(ep, trt_oss);
    let (e, notes) = run(&ep);
    assert_eq!(
        (&e["aic_moe_tp_size"], &e["aic_moe_ep_size"]),
        (&serde_json::json!(1), &serde_json::json!(2))
    );
    assert_eq!(notes.len(), 1, "{notes:?}");
    let (e, _) = run(&trt_oss.replacen(",b200_sxm,", ",h200_sxm,", 1));
    assert!(e.get("aic_moe_dtype").is_none(), "{e}");
    // The checkpoint, not the label, decides: an `fp8` label on Blackwell runs the same
    // MXFP4 MoE with MXFP8 activations.
    let trt_oss_fp8 = trt_oss.replacen(",nvfp4,nvfp4,", ",fp8,fp8,", 1);
    assert_ne!(trt_oss_fp8, trt_oss);
    let (e, _) = run(&trt_oss_fp8);
    assert!(e.get("aic_gemm_dtype").is_none(), "{e}");
    assert_eq!(e["aic_moe_dtype"], "w4a8_mxfp4_mxfp8");
    // An NVFP4 row of a checkpoint that is not MXFP4 keeps its label on Blackwell.
    let dsr1 = oss.replacen("openai/gpt-oss-120b", "deepseek-ai/DeepSeek-R1", 1);
    let (e, notes) = run(&dsr1);
    assert_eq!(e["aic_gemm_dtype"], "nvfp4");
    assert_eq!(e["aic_moe_dtype"], "nvfp4");
    assert!(notes.is_empty(), "{notes:?}");
    // On SGLang and TRT-LLM an `fp8` label on DeepSeek-R1's checkpoint, FP8 in 128 x 128
    // blocks, ran those blocks; an `fp8_block` label is as given.
    let fp8 = dsr1.replacen(
        ",fp4,agg,1024,1024,nvfp4,nvfp4,",
        ",fp8,agg,1024,1024,fp8,fp8_block,",
        1,
    );
    assert_ne!(fp8, dsr1);
    let (e, notes) = run(&fp8.replacen(",vllm,", ",sglang,", 1));
    assert_eq!(e["aic_gemm_dtype"], "fp8_block");
    assert_eq!(e["aic_moe_dtype"], "fp8_block");
    assert_eq!(
        notes,
        [
            "quantisation fp8/fp8_block read as the checkpoint ran it: GEMM fp8_block, MoE \
          fp8_block (checkpoint fp8_block)"
        ]
    );
    let trt = fp8
        .replacen(",vllm,", ",trtllm,", 1)
        .replacen(",fp8,fp8_block,", ",fp8,fp8,", 1);
    let (e, _) = run(&trt);
    assert_eq!(e["aic_gemm_dtype"], "fp8_block");
    assert_eq!(e["aic_moe_dtype"], "fp8_block");
    let (e, notes) = run(&fp8);
    assert_eq!(e["aic_gemm_dtype"], "fp8");
    assert_eq!(e["aic_moe_dtype"], "fp8_block");
    assert!(notes.is_empty(), "{notes:?}");
    // On vLLM an `fp8` MoE label on those blocks ran them where the blocks divide each rank's
    // slice of the experts (DeepSeek-R1's 2,048 rows over MoE TP 2: 1,024), its GEMMs keep
    // the label; with no experts' size known, or a slice the blocks do not divide (1,536 rows
    // over 8 ranks: 192), the label stands, as vLLM could not have loaded the blocks.
    let vllm = fp8.replacen(",fp8,fp8_block,", ",fp8,fp8,", 1);
    let (e, _) = run(&vllm);
    assert_eq!(e["aic_moe_dtype"], "fp8", "no experts' size: {e}");
    let with_inter = |inter: u32| {
        let mut c = aic.clone();
        c.moe_inter_size
            .insert("deepseek-ai/DeepSeek-R1".to_string(), inter);
        c
    };
    let run_with = |aic: &AicCatalog, row: &str| {
        let pts = read_table(Path::new("t.csv"), &table(&[row])).unwrap();
        let (r, _) = recipe(&pts[0], &Options::default(), Some(aic)).unwrap();
        (r.extra_engine_args.unwrap(), r.notes)
    };
    let (e, notes) = run_with(&with_inter(2048), &vllm);
    assert_eq!(e["aic_gemm_dtype"], "fp8");
    assert_eq!(e["aic_moe_dtype"], "fp8_block");
    assert_eq!(
        notes,
        [
            "quantisation fp8/fp8 read as the checkpoint ran it: GEMM fp8, MoE fp8_block \
          (checkpoint fp8_block)"
        ]
    );
    let tp8 = vllm.replacen(",16,2,1,1,2,1,", ",16,8,1,1,8,1,", 1);
    assert_ne!(tp8, vllm);
    let (e, _) = run_with(&with_inter(2048), &tp8);
    assert_eq!(e["aic_moe_dtype"], "fp8_block", "2,048 / 8 = 256 rows: {e}");
    let (e, _) = run_with(&with_inter(1536), &tp8);
    assert_eq!(e["aic_moe_dtype"], "fp8", "1,536 / 8 = 192 rows: {e}");
    let (e, _) = run_with(&with_inter(1536), &vllm);
    assert_eq!(e["aic_moe_dtype"], "fp8_block", "1,536 / 2 = 768 rows: {e}");
    // GLM-5's bundled config is unquantised; its FP8 rows ran the bundled FP8 checkpoint,
    // `zai-org/GLM-5-FP8`, in 128 x 128 blocks. Its NVFP4 rows keep their label.
    let glm = fp8
        .replacen("deepseek-ai/DeepSeek-R1", "zhipuai/GLM-5", 1)
        .replacen(",vllm,", ",sglang,", 1);
    let (e, notes) = run(&glm);
    assert_eq!(e["aic_model_path"], "zai-org/GLM-5");
    assert_eq!(e["aic_gemm_dtype"], "fp8_block");
    assert_eq!(e["aic_moe_dtype"], "fp8_block");
    assert_eq!(notes.len(), 1, "{notes:?}");
    let glm_fp4 = glm.replacen(
        ",fp8,agg,1024,1024,fp8,fp8_block,",
        ",fp4,agg,1024,1024,nvfp4,nvfp4,",
        1,
    );
    assert_ne!(glm_fp4, glm);
    let (e, notes) = run(&glm_fp4);
    assert_eq!(e["aic_gemm_dtype"], "nvfp4");
    assert!(notes.is_empty(), "{notes:?}");
    // Llama's bundled config declares no quantisation: its `fp8` rows are as given.
    let (e, notes) = run(LLAMA);
    assert_eq!(e["aic_gemm_dtype"], "fp8");
    assert!(notes.is_empty(), "{notes:?}");
}

#[test]
fn glm5_rows_get_their_inferencex_scripts_settings() {
    let mut aic = catalog();
    let h200 = aic.databases["h200_sxm"].clone();
    for system in ["b200_sxm", "b300_sxm"] {
        aic.databases.insert(system.to_string(), h200.clone());
    }
    let recipe_of = |row: &str| {
        let pts = read_table(Path::new("t.csv"), &table(&[row])).unwrap();
        recipe(&pts[0], &Options::default(), Some(&aic)).unwrap().0
    };
    let glm = LLAMA.replacen(",vllm,", ",sglang,", 1).replacen(
        "meta-llama/Llama-3.1-70B",
        "zhipuai/GLM-5",
        1,
    );
    // H200 (glm5_fp8_h200.sh): 0.85 of the GPU, and 5 x C prompts.
    let r = recipe_of(&glm);
    let e = r.extra_engine_args.as_ref().unwrap();
    assert_eq!(e["mem_fraction_static"], 0.85);
    assert_eq!(e["sglang"]["chunked_prefill_size"], 8192);
    assert!(e["sglang"].get("scheduler_recv_interval").is_none());
    assert_eq!(r.request_count, 80);
    // B200 (glm5_fp8_b200.sh) and B300 (glm5_fp8_b300.sh, the same server): 32768-token
    // chunks and prefill budget, 10 x C prompts, also for the B300 rows marked work in progress.
    for system in ["b200_sxm", "b300_sxm"] {
        let row = glm
            .replacen(",h200_sxm,", &format!(",{system},"), 1)
            .replacen(
                "silicon_concurrency=16",
                "silicon_concurrency=16; wip=True",
                1,
            );
        let r = recipe_of(&row);
        let e = r.extra_engine_args.as_ref().unwrap();
        assert_eq!(e["mem_fraction_static"], 0.85);
        assert_eq!(e["sglang"]["chunked_prefill_size"], 32768);
        assert_eq!(e["sglang"]["max_prefill_tokens"], 32768);
        assert_eq!(r.request_count, 160, "{system}");
    }
    // Without the scripts, SGLang's defaults and 10 x C.
    let pts = read_table(Path::new("t.csv"), &table(&[&glm])).unwrap();
    let none = Options {
        launch: LaunchSettings::None,
        ..Options::default()
    };
    let (r, _) = recipe(&pts[0], &none, Some(&aic)).unwrap();
    assert_eq!(r.request_count, 160);
    assert!(r.extra_engine_args.unwrap().get("sglang").is_none());
}
