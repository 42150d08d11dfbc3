//! `dp_rank_routing` through `dynosim run`: with `"engine"` the round robin picks only the
//! worker and the worker places each request on a DP rank as its engine does serving alone
//! (TRT-LLM: the rank below the average count with the fewest prompt tokens, holding requests
//! while every rank is full; vLLM: the fewest 4 × waiting + running). Every request is still
//! served, a one-rank worker and a KV router are unaffected, and a bad value is refused.

mod common;

use assert_cmd::cargo::cargo_bin_cmd;
use serde_json::Value;

fn run(engine: &str, concurrency: u32, extra: &[&str]) -> Value {
    common::run_160_requests(engine, concurrency, extra)
}

fn engine(kind: &str, dp: u32, seqs: u32, routing: &str) -> String {
    format!(
        r#"{{"engine_type":"{kind}","dp_size":{dp},"max_num_seqs":{seqs},"num_gpu_blocks":4096,"dp_rank_routing":"{routing}"}}"#
    )
}

fn num(r: &Value, k: &str) -> f64 {
    r[k].as_f64().unwrap_or_else(|| panic!("{k} in {r}"))
}

#[test]
fn trtllm_fills_the_rank_that_freed_a_slot_and_serves_every_request() {
    // 4 ranks of 4 slots at concurrency 16: the frontend's round robin over (worker, rank)
    // sends a replacement to the next rank in turn, where it may queue behind a full batch;
    // TRT-LLM's own router puts it on the rank that just freed a slot, so nothing queues.
    let router = run(&engine("trtllm", 4, 4, "router"), 16, &[]);
    let own = run(&engine("trtllm", 4, 4, "engine"), 16, &[]);
    for r in [&router, &own] {
        assert_eq!(num(r, "completed_requests"), 160.0);
        assert_eq!(
            num(r, "total_output_tokens"),
            num(&router, "total_output_tokens")
        );
    }
    assert!(
        num(&own, "mean_ttft_ms") < num(&router, "mean_ttft_ms"),
        "engine {} router {}",
        own["mean_ttft_ms"],
        router["mean_ttft_ms"]
    );
    // Above the ranks' 16 slots, TRT-LLM holds the extra requests until a slot frees: all are
    // still served.
    let held = run(&engine("trtllm", 4, 4, "engine"), 24, &[]);
    assert_eq!(num(&held, "completed_requests"), 160.0);
    assert_eq!(
        num(&held, "total_output_tokens"),
        num(&router, "total_output_tokens")
    );
    assert!(num(&held, "mean_ttft_ms") > num(&own, "mean_ttft_ms"));
}

#[test]
fn vllm_balances_by_queued_and_running_requests() {
    let router = run(&engine("vllm", 2, 4, "router"), 12, &[]);
    let own = run(&engine("vllm", 2, 4, "engine"), 12, &[]);
    assert_eq!(num(&own, "completed_requests"), 160.0);
    assert_eq!(
        num(&own, "total_output_tokens"),
        num(&router, "total_output_tokens")
    );
    assert_ne!(own["mean_ttft_ms"], router["mean_ttft_ms"]);
}

#[test]
fn one_rank_or_a_kv_router_is_unaffected() {
    for kind in ["trtllm", "vllm", "sglang"] {
        let a = run(&engine(kind, 1, 4, "router"), 8, &[]);
        let b = run(&engine(kind, 1, 4, "engine"), 8, &[]);
        assert_eq!(a, b, "{kind}");
    }
    // A KV router names the rank itself, as Dynamo's does.
    let kv = ["--router-mode", "kv_router"];
    let a = run(&engine("trtllm", 2, 4, "router"), 8, &kv);
    let b = run(&engine("trtllm", 2, 4, "engine"), 8, &kv);
    assert_eq!(a, b);
}

#[test]
fn an_unknown_value_is_refused_with_the_key() {
    let out = cargo_bin_cmd!("dynosim")
        .args([
            "run",
            "--input-tokens",
            "64",
            "--output-tokens",
            "8",
            "--request-count",
            "4",
            "--replay-concurrency",
            "2",
            "--extra-engine-args",
            r#"{"dp_size":2,"dp_rank_routing":"worker"}"#,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("dp_rank_routing") && err.contains("\"engine\""),
        "{err}"
    );
}

#[test]
fn requests_waiting_for_a_free_rank_count_as_waiting_for_admission() {
    // 100 arrivals 2 ms apart on 4 TRT-LLM ranks of 4 slots, cut at 1 s: 16 run, and every
    // other unfinished request waits for a slot (unassigned, as in TRT-LLM's request queue).
    let dir = tempfile::tempdir().unwrap();
    let trace: String = (0..100)
        .map(|i| {
            format!(
                "{{\"timestamp\":{},\"input_length\":512,\"output_length\":64,\"hash_ids\":[{}]}}\n",
                2 * i,
                i
            )
        })
        .collect();
    std::fs::write(dir.path().join("t.jsonl"), trace).unwrap();
    let out = cargo_bin_cmd!("dynosim")
        .current_dir(dir.path())
        .args(["run", "t.jsonl", "--max-sim-time-seconds", "1"])
        .args(["--extra-engine-args", &engine("trtllm", 4, 4, "engine")])
        .args(["--report-json", "r.json"])
        .output()
        .unwrap();
    let (r, stderr) = common::report_of(&out, &dir.path().join("r.json"));
    let unfinished = num(&r, "unfinished_requests");
    assert!(unfinished > 16.0, "{r}");
    assert_eq!(num(&r, "arrived_requests"), 100.0);
    assert_eq!(num(&r, "completed_requests") + unfinished, 100.0);
    assert_eq!(num(&r, "unfinished_waiting_requests"), unfinished - 16.0);
    assert!(stderr.contains("16 in flight"), "{stderr}");
}
