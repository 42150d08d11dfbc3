//! `dynosim run`'s flag rules, unit by unit: every refusal names its flag(s).

use super::*;
use crate::cli::{Cli, Command};
use crate::config::{KvTransferTimingMode, QueuePolicy, WorkerType};
use clap::Parser;
use std::time::Duration;

/// `SYN` at the start of `line` stands for a complete synthetic workload (ISL 100, OSL 10,
/// 5 requests); arguments are whitespace-separated (JSON values contain no spaces).
fn argv(line: &str) -> Vec<String> {
    let line = line.replacen(
        "SYN",
        "--input-tokens 100 --output-tokens 10 --request-count 5",
        1,
    );
    let mut v = vec!["dynosim".to_string(), "run".to_string()];
    v.extend(line.split_whitespace().map(str::to_string));
    v
}

fn args(line: &str) -> RunArgs {
    match Cli::try_parse_from(argv(line))
        .expect("clap accepts")
        .command
    {
        Command::Run(a) => *a,
        other => panic!("{other:?}"),
    }
}

/// 2026-11-29 14:50:35 UTC.
fn fixed_now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_963_835)
}

fn ok(line: &str) -> RunPlan {
    plan_at(&args(line), fixed_now()).unwrap_or_else(|e| panic!("{line}: {e}"))
}

fn bad(line: &str) -> String {
    match plan_at(&args(line), fixed_now()) {
        Ok(p) => panic!("{line} accepted: {p:?}"),
        Err(e) => e.to_string(),
    }
}

fn aggregated_engine(p: &RunPlan) -> &EngineArgs {
    match &p.sim.topology {
        Topology::Aggregated { engine, .. } => engine,
        other => panic!("{other:?}"),
    }
}

#[test]
fn default_report_name_is_utc_timestamped() {
    assert_eq!(
        default_report_file_name(fixed_now()),
        "dynamo_replay_report_20261129_145035.json"
    );
    assert_eq!(
        default_report_file_name(SystemTime::UNIX_EPOCH),
        "dynamo_replay_report_19700101_000000.json"
    );
}

#[test]
fn synthetic_plan_maps_every_flag() {
    let p = ok(
        "SYN --request-rate 4.5 --arrival-seed 7 --turns-per-session 3 \
         --shared-prefix-ratio 0.5 --num-prefix-groups 4 --inter-turn-delay-ms 250 \
         --num-workers 3 --router-mode kv_router --arrival-speedup-ratio 2 \
         --sla-ttft-ms 500 --sla-itl-ms 20 --seed 9 \
         --extra-engine-args {\"block_size\":16,\"dp_size\":2} \
         --router-config {\"overlap_score_weight\":0}",
    );
    let WorkloadSource::Synthetic { spec: s, .. } = &p.workload else {
        panic!("{:?}", p.workload)
    };
    assert_eq!(
        (s.input_tokens, s.output_tokens, s.request_count),
        (100, 10, 5)
    );
    assert_eq!(s.arrival, SyntheticArrival::PoissonRate(4.5));
    assert_eq!(s.arrival_seed, 7);
    assert_eq!(s.turns_per_session, 3);
    assert_eq!(s.shared_prefix_ratio, 0.5);
    assert_eq!(s.num_prefix_groups, 4);
    assert_eq!(s.inter_turn_delay_ms, 250.0);
    let engine = aggregated_engine(&p);
    assert_eq!((engine.block_size, engine.dp_size), (16, 2));
    assert_eq!(p.sim.topology.gpus(), 6);
    assert_eq!(p.sim.router_mode, RouterMode::KvRouter);
    assert_eq!(p.sim.router.prefill_load_scale, 0.0);
    assert_eq!(p.sim.router.overlap_score_credit, 0.0);
    assert_eq!(p.sim.load.arrival_speedup_ratio, 2.0);
    assert_eq!(p.sim.load.replay_concurrency, None);
    let sla = Sla {
        ttft_ms: Some(500.0),
        itl_ms: Some(20.0),
        e2e_ms: None,
    };
    assert_eq!(p.sim.sla, sla);
    assert_eq!(p.sim.seed, 9);
    assert!(!p.sim.record_requests);
    assert_eq!(p.sim.max_sim_time_ms, None);
    assert_eq!(p.report_jsonl, None);
    assert!(p.report_json.is_absolute());
    assert!(p
        .report_json
        .ends_with("dynamo_replay_report_20261129_145035.json"));
}

#[test]
fn zero_turns_per_session_is_one_turn_on_the_simple_path_as_in_dynosim() {
    let p = ok("SYN --replay-concurrency 2 --turns-per-session 0");
    let WorkloadSource::Synthetic { spec: s, .. } = &p.workload else {
        panic!("{:?}", p.workload)
    };
    assert_eq!(s.turns_per_session, 1);
    assert_eq!(p.workload, ok("SYN --replay-concurrency 2").workload);
}

#[test]
fn synthetic_load_controllers() {
    let p = ok("SYN --replay-concurrency 4");
    assert_eq!(p.sim.load.replay_concurrency, Some(4));
    let WorkloadSource::Synthetic { spec: s, .. } = &p.workload else {
        panic!()
    };
    assert_eq!(s.arrival, SyntheticArrival::ClosedLoop);
    let WorkloadSource::Synthetic { spec: s, .. } = ok("SYN --arrival-interval-ms 0").workload
    else {
        panic!()
    };
    assert_eq!(s.arrival, SyntheticArrival::IntervalMs(0.0));
    // Like upstream, --trace-block-size and --trace-format are ignored without a trace.
    ok("SYN --replay-concurrency 1 --trace-block-size 0 --trace-format mooncake-delta");
}

#[test]
fn trace_plan_defaults() {
    let p = ok(
        "trace.jsonl --report-jsonl out/req.jsonl --max-sim-time-seconds 1.5 \
         --report-json out/r.json",
    );
    let expected = WorkloadSource::Trace {
        files: vec!["trace.jsonl".into()],
        paths: vec!["trace.jsonl".into()],
        trace_block_size: Some(512),
        closed_loop: false,
        format: crate::workload::formats::TraceFormat::Mooncake,
        shared_prefix_ratio: 0.0,
        num_prefix_groups: 0,
    };
    assert_eq!(p.workload, expected);
    assert_eq!(p.sim.max_sim_time_ms, Some(1500.0));
    assert!(p.sim.record_requests);
    assert_eq!(p.report_json, PathBuf::from("out/r.json"));
    assert_eq!(p.report_jsonl, Some(PathBuf::from("out/req.jsonl")));
    assert_eq!(*aggregated_engine(&p), EngineArgs::default());
    assert_eq!(p.sim.topology.gpus(), 1);
    assert_eq!(p.sim.router_mode, RouterMode::RoundRobin);
    assert_eq!(p.sim.router, RouterConfig::default());
    assert_eq!(p.sim.load, LoadSpec::default());
    assert_eq!(p.sim.seed, 42);
    let p = ok("t.jsonl --trace-block-size 64 --replay-concurrency 3");
    assert!(matches!(
        p.workload,
        WorkloadSource::Trace {
            trace_block_size: Some(64),
            closed_loop: true,
            ..
        }
    ));
    assert_eq!(p.sim.load.replay_concurrency, Some(3));
}

#[test]
fn report_json_directory_gets_timestamped_file() {
    let dir = std::env::temp_dir();
    let p = ok(&format!("t.jsonl --report-json {}", dir.display()));
    assert_eq!(
        p.report_json,
        dir.join("dynamo_replay_report_20261129_145035.json")
    );
}

#[test]
fn disaggregated_plan() {
    let p = ok("t.jsonl --num-prefill-workers 2 --num-decode-workers 3 \
         --prefill-engine-args {\"worker_type\":\"prefill\",\"block_size\":32,\"kv_bytes_per_token\":1000,\"kv_transfer_bandwidth\":2} \
         --decode-engine-args {\"is_decode\":true,\"block_size\":32,\"kv_transfer_timing_mode\":\"destination_missing\"}");
    let Topology::Disaggregated {
        num_prefill_workers,
        prefill,
        num_decode_workers,
        decode,
    } = &p.sim.topology
    else {
        panic!("{:?}", p.sim.topology)
    };
    assert_eq!((*num_prefill_workers, *num_decode_workers), (2, 3));
    assert_eq!(prefill.worker_type, WorkerType::Prefill);
    assert_eq!(prefill.kv_bytes_per_token, Some(1000));
    assert_eq!(prefill.kv_transfer_bandwidth, Some(2.0));
    assert_eq!(decode.worker_type, WorkerType::Decode);
    assert_eq!(
        decode.kv_transfer_timing_mode,
        KvTransferTimingMode::DestinationMissing
    );
    assert_eq!(p.sim.topology.block_size(), 32);
    assert_eq!(p.sim.topology.gpus(), 5);
    // 1.4.2 does not force kv_router for disaggregated replay.
    assert_eq!(p.sim.router_mode, RouterMode::RoundRobin);
}

#[test]
fn engine_router_queue_policy_is_kept_for_the_simulator() {
    let p = ok("t.jsonl --extra-engine-args {\"router_queue_policy\":\"lcfs\"}");
    assert_eq!(
        aggregated_engine(&p).router_queue_policy,
        Some(QueuePolicy::Lcfs)
    );
}

#[test]
fn an_aic_load_model_under_round_robin_is_ignored_like_dynosim() {
    let p = ok("t.jsonl --router-config {\"router_prefill_load_model\":\"aic\"}");
    assert_eq!(
        p.sim.router.router_prefill_load_model,
        PrefillLoadModel::Aic
    );
    assert!(p.sim.router.prefill_load_estimator.is_none());
    // `auto` dtypes set nothing, so they need no other flag.
    ok("t.jsonl --aic-gemm-dtype auto");
}

#[test]
fn kv_router_needs_more_than_one_target() {
    let m = bad("t.jsonl --router-mode kv_router");
    assert!(
        m.contains("kv_router") && m.contains("more than one"),
        "{m}"
    );
    // DP ranks count as targets.
    ok("t.jsonl --router-mode kv_router --extra-engine-args {\"dp_size\":2}");
    ok("t.jsonl --router-mode kv_router --num-workers 2");
}

/// (command line, words the message must contain).
const BAD_INPUTS: &[(&str, &[&str])] = &[
    // Rule 1.
    ("a b", &["requires exactly one trace file", "got 2"]),
    ("--trace-format dynamo", &["dynamo", "at least one trace file"]),
    // Refused flags.
    ("t --trace-format applied_compute_agentic", &["applied_compute_agentic requires --replay-concurrency"]),
    ("t --trace-format agentic_mooncake --replay-concurrency 2", &["not supported with replay_concurrency"]),
    ("t --trace-format agentic_mooncake --prefill-engine-args {\"worker_type\":\"prefill\"} --decode-engine-args {\"worker_type\":\"decode\"}", &["agentic_mooncake trace format is not supported for disaggregated replay"]),
    ("t --trace-format applied_compute_agentic --replay-concurrency 2 --trace-shared-prefix-ratio 1.5", &["--trace-shared-prefix-ratio must be between 0.0 and 1.0"]),
    ("t --trace-format applied_compute_agentic --replay-concurrency 2 --trace-num-prefix-groups -1", &["--trace-num-prefix-groups"]),
    ("t --planner-config p.yaml", &["--planner-config is not supported by dynosim"]),
    ("t --benchmark-granularity 8", &["--benchmark-granularity is not supported"]),
    // Rule 8 (details are unit-tested in config::aic).
    ("t --aic-backend vllm", &["requires --aic-system, --aic-model-path"]),
    ("t --aic-tp-size 2", &["requires --aic-backend, --aic-system, --aic-model-path"]),
    ("t --aic-backend vllm --aic-system h200_sxm --aic-model-path Q --aic-backend-version 1", &["require --router-mode kv_router"]),
    ("t --num-workers 2 --router-mode kv_router --aic-backend vllm --aic-system h200_sxm --aic-model-path Q --aic-backend-version 1", &["require --router-config with \"router_prefill_load_model\": \"aic\""]),
    ("t --num-workers 2 --router-mode kv_router --router-config {\"router_prefill_load_model\":\"aic\"}", &["--router-config", "requires the AIConfigurator flags", "--aic-backend-version"]),
    ("t --aic-backend vllm --aic-system h200_sxm --aic-model-path Q --aic-nextn 6", &["--aic-nextn must be 1..=5"]),
    ("t --router-config {\"router_prefill_load_model\":\"aic\",\"router_track_prefill_tokens\":false}", &["requires router_track_prefill_tokens"]),
    ("t --router-policy-config p.yaml", &["--router-policy-config", "not supported"]),
    ("t --model-name m", &["--model-name is not supported by dynosim"]),
    ("t --replay-mode online", &["dynosim simulates offline only"]),
    // Rules 2-5.
    ("", &["no workload"]),
    ("t --input-tokens 5", &["cannot be combined", "--input-tokens"]),
    ("t --turns-per-session 2", &["cannot be combined", "--turns-per-session"]),
    ("t --inter-turn-delay-ms 5", &["--inter-turn-delay-ms"]),
    ("--input-tokens 5 --request-rate 1", &["missing --output-tokens, --request-count"]),
    ("SYN", &["exactly one of", "none given"]),
    ("SYN --request-rate 1 --replay-concurrency 2", &["got --replay-concurrency and --request-rate"]),
    ("t --request-rate 3", &["--request-rate only applies to synthetic"]),
    ("t --arrival-interval-ms 3", &["--arrival-interval-ms only applies"]),
    // Rule 6.
    ("SYN --replay-concurrency 1 --report-jsonl x", &["--report-jsonl", "trace-file"]),
    ("SYN --replay-concurrency 1 --max-sim-time-seconds 3", &["--max-sim-time-seconds", "trace-file"]),
    // Rule 7 (details are unit-tested in config::engine_args / router_config).
    ("t --extra-engine-args {", &["--extra-engine-args: invalid JSON", "column"]),
    ("t --extra-engine-args [1]", &["--extra-engine-args", "must be a JSON object"]),
    ("t --extra-engine-args {\"num_gpu_block\":5}", &["did you mean \"num_gpu_blocks\""]),
    ("t --extra-engine-args {\"engine_type\":\"tgi\"}", &["engine_type", "one of \"vllm\""]),
    ("t --router-config {\"x\":1}", &["--router-config: unknown key \"x\""]),
    // Rule 9.
    ("t --extra-engine-args {} --prefill-engine-args {}", &["cannot be combined"]),
    ("t --prefill-engine-args {\"worker_type\":\"prefill\"}", &["must be provided together"]),
    ("t --decode-engine-args {\"worker_type\":\"decode\"}", &["must be provided together"]),
    ("t --num-prefill-workers 2", &["--num-prefill-workers", "only used for disaggregated"]),
    ("t --num-workers 2 --prefill-engine-args {\"is_prefill\":true} --decode-engine-args {\"is_decode\":true}", &["--num-workers is only used for aggregated"]),
    // Rule 10.
    ("t --num-workers 0", &["--num-workers must be >= 1, got 0"]),
    ("t --num-workers -3", &["--num-workers must be >= 1, got -3"]),
    ("t --extra-engine-args {\"worker_type\":\"decode\"}", &["aggregated replay needs worker_type"]),
    ("t --router-mode kv_router --num-workers 1", &["more than one worker/DP-rank target"]),
    // Rule 12.
    ("t --prefill-engine-args {} --decode-engine-args {\"worker_type\":\"decode\"}", &["--prefill-engine-args must set worker_type \"prefill\""]),
    ("t --prefill-engine-args {\"is_prefill\":true} --decode-engine-args {}", &["--decode-engine-args must set worker_type \"decode\""]),
    ("t --num-decode-workers 0 --prefill-engine-args {\"is_prefill\":true} --decode-engine-args {\"is_decode\":true}", &["--num-decode-workers must be >= 1"]),
    ("t --num-prefill-workers 0 --prefill-engine-args {\"is_prefill\":true} --decode-engine-args {\"is_decode\":true}", &["--num-prefill-workers must be >= 1"]),
    ("t --prefill-engine-args {\"is_prefill\":true,\"dp_size\":2} --decode-engine-args {\"is_decode\":true}", &["dp_size must be 1", "got 2 and 1"]),
    ("t --prefill-engine-args {\"is_prefill\":true,\"block_size\":16} --decode-engine-args {\"is_decode\":true}", &["same block_size", "got 16 and 64"]),
    // Rules 13, 14, SLA, trace block size.
    ("t --replay-concurrency 0", &["--replay-concurrency must be >= 1"]),
    ("t --arrival-speedup-ratio 0", &["--arrival-speedup-ratio", "> 0"]),
    ("t --arrival-speedup-ratio inf", &["--arrival-speedup-ratio"]),
    ("t --max-sim-time-seconds -1", &["--max-sim-time-seconds must be a finite number >= 0"]),
    ("t --sla-ttft-ms -1", &["--sla-ttft-ms"]),
    ("t --sla-itl-ms NaN", &["--sla-itl-ms"]),
    ("t --sla-e2e-ms inf", &["--sla-e2e-ms"]),
    ("t --trace-block-size 0", &["--trace-block-size must be >= 1"]),
    // Synthetic ranges (spec §3).
    ("SYN --request-rate 0", &["--request-rate must be a finite number > 0"]),
    ("SYN --request-rate nan", &["--request-rate"]),
    ("SYN --arrival-interval-ms -5", &["--arrival-interval-ms must be a finite number >= 0"]),
    ("SYN --replay-concurrency 1 --shared-prefix-ratio 1.5", &["--shared-prefix-ratio must be in [0, 1]"]),
    ("SYN --replay-concurrency 1 --num-prefix-groups -1", &["--num-prefix-groups must be >= 0"]),
    // DynoSim 1.4.2 takes 0 turns on its simple path (one turn per request) and refuses it on
    // its session path.
    ("SYN --replay-concurrency 1 --turns-per-session 0 --inter-turn-delay-ms 5", &["--turns-per-session must be at least 1"]),
    ("SYN --replay-concurrency 1 --turns-per-session -1", &["--turns-per-session must be >= 0"]),
    ("SYN --replay-concurrency 1 --inter-turn-delay-ms -1", &["--inter-turn-delay-ms"]),
    ("--input-tokens 0 --output-tokens 1 --request-count 1 --replay-concurrency 1", &["--input-tokens must be >= 1"]),
    ("--input-tokens 1 --output-tokens 0 --request-count 1 --replay-concurrency 1", &["--output-tokens must be >= 1"]),
    ("--input-tokens 1 --output-tokens 1 --request-count 0 --replay-concurrency 1", &["--request-count must be >= 1"]),
    ("--input-tokens 5000000000 --output-tokens 1 --request-count 1 --replay-concurrency 1", &["--input-tokens is too large"]),
];

#[test]
fn bad_inputs_are_rejected_with_the_flag_named() {
    for (line, words) in BAD_INPUTS {
        let m = bad(line);
        for w in *words {
            assert!(m.contains(w), "{line}: {m:?} lacks {w:?}");
        }
        assert!(!m.contains('\n'), "{line}: message is not one line: {m:?}");
    }
}
