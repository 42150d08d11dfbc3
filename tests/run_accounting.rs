//! `dynosim run` accounts for every arrived request, as users call it: the JSON report's
//! `arrived_requests` is `completed_requests + rejected_requests + unfinished_requests`, a
//! stalled simulation is named (worker, since when, cause) even when a time cap ends it first,
//! and stderr warns whenever requests did not complete. Stdout and DynoSim's fields stay as they
//! were.

use assert_cmd::cargo::cargo_bin_cmd;
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

struct Run {
    code: Option<i32>,
    stderr: String,
    report: Value,
}

/// Runs `dynosim run <args> --report-json <tmp>/r.json` in `dir`.
fn run(dir: &Path, args: &[&str]) -> Run {
    let out = cargo_bin_cmd!("dynosim")
        .current_dir(dir)
        .env_remove("DYN_ROUTER_POLICY_CONFIG")
        .arg("run")
        .args(args)
        .args(["--report-json", "r.json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = fs::read_to_string(dir.join("r.json"))
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or(Value::Null);
    Run {
        code: out.status.code(),
        stderr,
        report,
    }
}

fn int(r: &Value, key: &str) -> u64 {
    r[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing: {r}"))
}

/// The counts add up, and `arrived_requests` is DynoSim's `num_requests`.
fn assert_accounted(r: &Value) {
    let arrived = int(r, "arrived_requests");
    assert_eq!(arrived, int(r, "num_requests"));
    assert_eq!(
        arrived,
        int(r, "completed_requests") + int(r, "rejected_requests") + int(r, "unfinished_requests"),
        "{r}"
    );
    assert!(int(r, "unfinished_waiting_requests") <= int(r, "unfinished_requests"));
}

const STALLED: [&str; 12] = [
    "--arrival-speedup-ratio",
    "2",
    "--max-sim-time-seconds",
    "600",
    "--num-prefill-workers",
    "2",
    "--num-decode-workers",
    "2",
    "--prefill-engine-args",
    r#"{"block_size":64,"worker_type":"prefill","num_gpu_blocks":390}"#,
    "--decode-engine-args",
    r#"{"block_size":64,"worker_type":"decode"}"#,
];

#[test]
fn a_time_cap_does_not_hide_a_stall() {
    let dir = tempfile::tempdir().unwrap();
    let trace = root().join("data/mooncake_conversation_trace.jsonl.gz");
    let trace = trace.to_str().unwrap();
    let mut args = vec![trace];
    args.extend(STALLED);
    let r = run(dir.path(), &args);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_accounted(&r.report);
    // DynoSim's numbers stay: 182 of 3,658 arrivals completed.
    assert_eq!(int(&r.report, "num_requests"), 3658);
    assert_eq!(int(&r.report, "completed_requests"), 182);
    assert!(int(&r.report, "unfinished_requests") > 3000);
    let stall = &r.report["stall"];
    assert_eq!(stall["worker"], 0, "{stall}");
    assert_eq!(stall["role"], "prefill", "{stall}");
    assert_eq!(stall["cause"], "preempted_outgrew_pool", "{stall}");
    let since = stall["since_ms"].as_f64().unwrap();
    assert!(since > 0.0 && since < 600_000.0, "{stall}");
    assert!(stall["queued_requests"].as_u64().unwrap() > 0, "{stall}");
    let w = &r.stderr;
    assert!(
        w.contains("warning: 182 of 3658 arrived requests completed"),
        "{w}"
    );
    assert!(
        w.contains("prefill worker 0 cannot make progress since t="),
        "{w}"
    );
    assert!(w.contains("grown larger than the KV pool"), "{w}");
    assert!(w.contains("rejected"), "{w}");

    // Without the cap, DynoSim's dead end, as before.
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<&str> = std::iter::once(trace)
        .chain(STALLED.iter().copied())
        .enumerate()
        .filter(|&(i, _)| i != 3 && i != 4)
        .map(|(_, a)| a)
        .collect();
    let r = run(dir.path(), &args);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr.starts_with(
            "error: simulation cannot make progress at t=1768499.500 ms: worker 0 has 5944 \
             queued request(s) that can never be scheduled"
        ),
        "{}",
        r.stderr
    );
}

#[test]
fn rejected_prompts_are_counted_and_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("t.jsonl"),
        "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 4, \"hash_ids\": [1]}\n\
         {\"timestamp\": 5, \"input_length\": 60, \"output_length\": 4, \"hash_ids\": [2]}\n",
    )
    .unwrap();
    let r = run(
        dir.path(),
        &["t.jsonl", "--extra-engine-args", r#"{"max_model_len":100}"#],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_accounted(&r.report);
    assert_eq!(int(&r.report, "rejected_requests"), 1);
    assert_eq!(int(&r.report, "completed_requests"), 1);
    assert_eq!(int(&r.report, "unfinished_requests"), 0);
    assert!(r.report.get("stall").is_none());
    assert!(
        r.stderr
            .contains("warning: 1 of 2 arrived requests completed: 1 rejected by an engine"),
        "{}",
        r.stderr
    );
}

#[test]
fn trtllm_refuses_what_cannot_run_to_completion() {
    let dir = tempfile::tempdir().unwrap();
    let trace = root().join("tests/data/traces/conv400.jsonl");
    let r = run(
        dir.path(),
        &[
            trace.to_str().unwrap(),
            "--extra-engine-args",
            r#"{"engine_type":"trtllm","block_size":32,"num_gpu_blocks":300}"#,
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_accounted(&r.report);
    let rejected = int(&r.report, "rejected_requests");
    assert!(rejected > 0, "{}", r.report);
    assert_eq!(int(&r.report, "unfinished_requests"), 0);
    assert!(
        r.stderr.contains(&format!("{rejected} rejected")),
        "{}",
        r.stderr
    );
}

#[test]
fn a_clean_run_has_no_warning() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(
        dir.path(),
        &[
            "--input-tokens",
            "100",
            "--output-tokens",
            "10",
            "--request-count",
            "20",
            "--request-rate",
            "5",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_accounted(&r.report);
    assert_eq!(int(&r.report, "completed_requests"), 20);
    assert_eq!(int(&r.report, "unfinished_requests"), 0);
    assert_eq!(int(&r.report, "rejected_requests"), 0);
    assert!(r.report.get("stall").is_none());
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
}

#[test]
fn an_overloaded_capped_run_says_its_queue_still_grows() {
    let dir = tempfile::tempdir().unwrap();
    let trace = root().join("tests/data/traces/conv400.jsonl");
    let r = run(
        dir.path(),
        &[
            trace.to_str().unwrap(),
            "--arrival-speedup-ratio",
            "20",
            "--max-sim-time-seconds",
            "10",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_accounted(&r.report);
    assert!(int(&r.report, "unfinished_requests") > 0, "{}", r.report);
    assert!(r.report.get("stall").is_none());
    assert!(r.stderr.contains("queue is still growing"), "{}", r.stderr);
}

#[test]
fn a_request_without_output_is_accounted_for() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("t.jsonl"),
        "{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 0, \"hash_ids\": [1]}\n\
         {\"timestamp\": 10, \"input_length\": 100, \"output_length\": 5, \"hash_ids\": [2]}\n",
    )
    .unwrap();
    let r = run(dir.path(), &["t.jsonl"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_accounted(&r.report);
    assert_eq!(int(&r.report, "arrived_requests"), 2);
    // Completed, as DynoSim counts it; the key of dynosim's own says it emitted nothing.
    assert_eq!(int(&r.report, "completed_requests"), 2);
    assert_eq!(int(&r.report, "finished_without_output_requests"), 1);
    assert_eq!(int(&r.report, "unfinished_requests"), 0);
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
}
