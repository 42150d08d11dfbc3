//! Issue 22 §2 through the binary, as users call it: a sweep ranks only what really served the
//! load. A stalled or overloaded point ranks after every point that served it, a capped run is
//! ranked per its window, a point whose timing model cannot be built is `invalid` while the
//! others run, an axis that cannot change the simulation is named, and percentiles resting on
//! few requests are flagged.

mod common;

use assert_cmd::Command;
use common::have_aic;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn dynosim() -> Command {
    Command::cargo_bin("dynosim").expect("the dynosim binary")
}

fn write_spec(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("grid.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

/// Runs `dynosim sweep SPEC -o OUT` (expecting exit 0); returns leaderboard.json and stderr.
fn sweep(spec: &Path, out: &Path) -> (Value, String) {
    let (board, _, stderr) = sweep_with_stdout(spec, out);
    (board, stderr)
}

/// As [`sweep`], with the console's stdout too: leaderboard.json, stdout, stderr.
fn sweep_with_stdout(spec: &Path, out: &Path) -> (Value, String, String) {
    let o = dynosim()
        .args(["sweep", spec.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .env("COLUMNS", "100")
        .assert()
        .code(0)
        .get_output()
        .clone();
    let board = std::fs::read_to_string(out.join("leaderboard.json")).unwrap();
    (
        serde_json::from_str(&board).unwrap(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn row(board: &Value, point: u64) -> &Value {
    board["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["point"] == point)
        .unwrap_or_else(|| panic!("no point {point}"))
}

fn trace() -> String {
    format!(
        "{}/data/mooncake_conversation_trace.jsonl.gz",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// The stalled configuration of issue 22 (prefill pools of 390 blocks, the bundled trace at 2x
/// for 10 simulated minutes) against the same deployment with room in its KV pools: DynoSim's
/// goodput of the stalled one is computed over 53 s and beats the healthy one's, but it ranks
/// after it, not `ok`, with the counts; its goodput per the window is what it really served.
#[test]
fn the_stalled_configuration_ranks_below_a_healthy_point() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(
        dir.path(),
        &format!(
            "workload:\n  trace: {}\n  arrival_speedup_ratio: 2\n  max_sim_time_seconds: 600\n\
             mode: disaggregated\nnum_prefill_workers: 2\nnum_decode_workers: 2\n\
             engine: {{block_size: 64}}\nslo: {{ttft_ms: 2000}}\n\
             rank_by: [max goodput_request_throughput_rps]\n\
             grid:\n  prefill_engine.num_gpu_blocks: [390, 16384]\n",
            trace()
        ),
    );
    let out = dir.path().join("out");
    let (board, stderr) = sweep(&spec, &out);
    let healthy = row(&board, 1);
    let stalled = row(&board, 0);
    assert_eq!(healthy["status"], "ok", "{healthy:#}");
    assert_eq!(healthy["rank"], 1);
    let status = stalled["status"].as_str().unwrap();
    assert!(
        status == "overloaded" || status == "stalled",
        "{status}: {}",
        stalled["reason"]
    );
    assert_eq!(stalled["rank"], 2);
    assert_eq!(stalled["feasible"], false);
    let reason = stalled["reason"].as_str().unwrap();
    assert!(
        reason.contains("of 3658 arrived requests completed"),
        "{reason}"
    );
    // DynoSim's field keeps its meaning (over the time of the last completion) ...
    let rep = &stalled["report"];
    let dynosim_goodput = rep["goodput_request_throughput_rps"].as_f64().unwrap();
    let window_goodput = rep["goodput_request_throughput_rps_window"]
        .as_f64()
        .unwrap();
    let healthy_window = healthy["report"]["goodput_request_throughput_rps_window"]
        .as_f64()
        .unwrap();
    assert!(dynosim_goodput > healthy_window, "the trap of the issue");
    // ... and the window's is what was served in the 600 s.
    let good = rep["goodput_completed_requests"].as_f64().unwrap();
    assert!(
        (window_goodput - good / 600.0).abs() < 1e-9,
        "{window_goodput}"
    );
    assert!(window_goodput < healthy_window);
    assert!(
        stderr.contains("point(s) 0 did not serve their load"),
        "{stderr}"
    );
    // The CSV puts the window column right after the ranked one.
    let csv = std::fs::read_to_string(out.join("leaderboard.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let at = header
        .iter()
        .position(|h| *h == "goodput_request_throughput_rps")
        .unwrap();
    assert_eq!(header[at + 1], "goodput_request_throughput_rps_window");
}

/// Without a time cap the dead end is `dynosim run`'s error: in a sweep the point is `stalled`
/// (with that message), ranked after the others, and the sweep exits 0.
#[test]
fn an_uncapped_dead_end_is_stalled_not_failed() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(
        dir.path(),
        "workload: {input_tokens: 512, output_tokens: 8, request_count: 120, request_rate: 20}\n\
         engine: {max_num_batched_tokens: 256}\n\
         grid:\n  engine.enable_chunked_prefill: [false, true]\n",
    );
    let (board, _) = sweep(&spec, &dir.path().join("out"));
    let dead = row(&board, 0);
    assert_eq!(dead["status"], "stalled");
    assert_eq!(dead["rank"], 2);
    assert!(dead["reason"]
        .as_str()
        .unwrap()
        .starts_with("stalled: simulation cannot make progress"));
    assert_eq!(row(&board, 1)["status"], "ok");
    assert_eq!(row(&board, 1)["rank"], 1);
}

/// A point whose window holds fewer than 100 completed requests says so in its reason (also
/// under an `ok` row of the console) and the sweep warns; 100 or more: no note.
#[test]
fn percentiles_on_few_requests_are_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(
        dir.path(),
        "workload: {input_tokens: 64, output_tokens: 4, request_count: 40, request_rate: 20}\n\
         grid:\n  workload.request_count: [40, 100]\n",
    );
    let (board, stdout, stderr) = sweep_with_stdout(&spec, &dir.path().join("out"));
    let few = row(&board, 0);
    assert_eq!(few["status"], "ok");
    assert_eq!(
        few["reason"],
        "few requests: percentiles rest on 40 completed requests (< 100)"
    );
    assert_eq!(row(&board, 1)["reason"], Value::Null);
    assert!(
        stdout.contains("few requests: percentiles rest on 40"),
        "{stdout}"
    );
    assert!(
        stderr.contains("point(s) 0 rest on fewer than 100 completed requests"),
        "{stderr}"
    );
}

/// `engine.aic_tp_size` without `aic_backend` changes only the GPU count: the sweep says so
/// once, and runs.
#[test]
fn an_axis_that_cannot_change_the_simulation_is_named_once() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(
        dir.path(),
        "workload: {input_tokens: 64, output_tokens: 4, request_count: 100, request_rate: 20}\n\
         grid:\n  engine.aic_tp_size: [1, 2]\n  num_workers: [1, 2]\n",
    );
    let (board, stderr) = sweep(&spec, &dir.path().join("out"));
    assert_eq!(
        stderr
            .matches("grid axis engine.aic_tp_size cannot change the simulation")
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("only the GPU count changes"), "{stderr}");
    assert_eq!(row(&board, 2)["gpus"], 2);
}

/// Multi-token prediction's keys (`aic_nextn`, named like AIC's) act under any timing: an axis
/// of them is not called inert, `null` turns prediction off, and drafts change the run.
#[test]
fn a_multi_token_prediction_axis_runs_without_aic() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(
        dir.path(),
        "workload: {input_tokens: 256, output_tokens: 32, request_count: 100, replay_concurrency: 8}\n\
         grid:\n  engine.aic_nextn: [null, 2]\n",
    );
    let (board, stderr) = sweep(&spec, &dir.path().join("out"));
    assert!(!stderr.contains("cannot change the simulation"), "{stderr}");
    let (off, on) = (row(&board, 0), row(&board, 1));
    assert_eq!(
        (off["status"].as_str(), on["status"].as_str()),
        (Some("ok"), Some("ok"))
    );
    // Tokens of a burst arrive together; and the requests, done in fewer passes, finish sooner.
    let get = |r: &Value, k: &str| r["report"][k].as_f64().unwrap();
    assert_eq!(get(on, "min_itl_ms"), 0.0);
    assert!(get(off, "min_itl_ms") > 0.0);
    assert!(get(on, "duration_ms") < get(off, "duration_ms"));
}

/// A TP list with a size Qwen3-32B's 64 heads do not divide runs to the end: that point is
/// `invalid` with AIC's message, the others run, the sweep exits 0.
#[test]
fn a_tp_size_the_model_cannot_use_is_invalid_and_the_rest_run() {
    if !have_aic("a_tp_size_the_model_cannot_use_is_invalid_and_the_rest_run") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(
        dir.path(),
        "workload: {input_tokens: 256, output_tokens: 8, request_count: 100, request_rate: 10}\n\
         engine: {aic_backend: vllm, aic_system: h200_sxm, aic_backend_version: \"0.24.0\", \
         aic_model_path: Qwen/Qwen3-32B, block_size: 64}\n\
         grid:\n  engine.aic_tp_size: [2, 3]\n",
    );
    let (board, _) = sweep(&spec, &dir.path().join("out"));
    assert_eq!(row(&board, 0)["status"], "ok");
    let bad = row(&board, 1);
    assert_eq!(bad["status"], "invalid");
    let why = bad["reason"].as_str().unwrap();
    assert!(
        why.contains("num_heads 64 should be divisible by tp_size 3"),
        "{why}"
    );
}
