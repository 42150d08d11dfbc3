//! `dynosim run` as users call it: bad flags must exit with status 2, print one `error: ...` line
//! naming the flag, and leave no report behind. Validation happens before any workload is read,
//! so none of these cases needs the simulator.

use assert_cmd::cargo::cargo_bin_cmd;
use predicates::prelude::*;
use std::fs;
use std::path::Path;

/// A one-request Mooncake trace, so trace-mode cases point at a real file.
const TRACE: &str =
    "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 4, \"hash_ids\": [1, 2]}\n";

/// `SYN` at the start of a case stands for a complete synthetic workload minus its load
/// controller; `T` for the trace file. Arguments are whitespace-separated.
fn expand(line: &str) -> Vec<String> {
    line.replacen(
        "SYN",
        "--input-tokens 100 --output-tokens 10 --request-count 5",
        1,
    )
    .split_whitespace()
    .map(|w| {
        if w == "T" {
            "trace.jsonl".to_string()
        } else {
            w.to_string()
        }
    })
    .collect()
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Runs `dynosim run <line>` in a fresh directory holding only the trace; checks exit code 2,
/// a single `error:` line containing every word, and that no file was created.
fn assert_rejected(line: &str, words: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("trace.jsonl"), TRACE).unwrap();
    let out = cargo_bin_cmd!("dynosim")
        .current_dir(dir.path())
        .env_remove("DYN_ROUTER_POLICY_CONFIG")
        .arg("run")
        .args(expand(line))
        .args(["--report-json", "out/report.json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{line}: stderr {stderr}");
    assert!(out.stdout.is_empty(), "{line}: printed to stdout");
    assert!(stderr.starts_with("error: "), "{line}: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{line}: {stderr}");
    for w in words {
        assert!(stderr.contains(w), "{line}: {stderr:?} lacks {w:?}");
    }
    assert_eq!(
        files_in(dir.path()),
        ["trace.jsonl"],
        "{line}: files were created"
    );
}

#[test]
fn workload_selection_rules() {
    let cases: &[(&str, &[&str])] = &[
        ("T T", &["requires exactly one trace file"]),
        (
            "--trace-format dynamo",
            &["--trace-format dynamo", "at least one trace file"],
        ),
        ("", &["no workload", "--input-tokens"]),
        (
            "T --input-tokens 64",
            &["cannot be combined", "--input-tokens"],
        ),
        ("T --shared-prefix-ratio 0.5", &["--shared-prefix-ratio"]),
        ("T --num-prefix-groups 2", &["--num-prefix-groups"]),
        (
            "--input-tokens 64 --output-tokens 4 --replay-concurrency 1",
            &["--request-count"],
        ),
        (
            "SYN",
            &["exactly one of --replay-concurrency, --request-rate"],
        ),
        (
            "SYN --request-rate 2 --arrival-interval-ms 5",
            &["--request-rate and --arrival-interval-ms"],
        ),
        (
            "T --request-rate 2",
            &["--request-rate only applies to synthetic"],
        ),
        (
            "T --arrival-interval-ms 10",
            &["--arrival-interval-ms only applies to synthetic"],
        ),
        (
            "SYN --replay-concurrency 2 --report-jsonl r.jsonl",
            &["--report-jsonl", "trace-file"],
        ),
        (
            "SYN --request-rate 2 --max-sim-time-seconds 5",
            &["--max-sim-time-seconds", "trace-file"],
        ),
    ];
    for (line, words) in cases {
        assert_rejected(line, words);
    }
}

/// DynoSim's rule 8: the KV router's AIC estimator flags go together, and with the KV router's
/// "aic" load model.
#[test]
fn router_aic_flags_follow_dynosims_rules() {
    let cases: &[(&str, &[&str])] = &[
        (
            "T --aic-backend vllm --aic-system h200_sxm",
            &["requires --aic-model-path"],
        ),
        (
            "T --aic-kv-cache-dtype fp8",
            &["requires --aic-backend, --aic-system, --aic-model-path"],
        ),
        (
            "T --num-workers 2 --router-mode kv_router --router-config {\"router_prefill_load_model\":\"aic\"}",
            &["router_prefill_load_model", "--aic-backend-version"],
        ),
    ];
    for (line, words) in cases {
        assert_rejected(line, words);
    }
}

#[test]
fn unsupported_features_are_refused() {
    let cases: &[(&str, &[&str])] = &[
        (
            "T --planner-config planner.yaml",
            &["--planner-config", "not supported by dynosim"],
        ),
        (
            "T --benchmark-granularity 4",
            &["--benchmark-granularity", "not supported"],
        ),
        (
            "T --router-policy-config policy.yaml",
            &["--router-policy-config", "not supported"],
        ),
        (
            "T --model-name qwen",
            &["--model-name", "not supported by dynosim"],
        ),
        ("T --replay-mode online", &["offline only"]),
        (
            "T --extra-engine-args {\"num_g2_blocks\":4096}",
            &["num_g2_blocks", "not supported"],
        ),
        (
            "T --router-config {\"router_policy_config\":\"p.yaml\"}",
            &["router_policy_config", "not supported"],
        ),
    ];
    for (line, words) in cases {
        assert_rejected(line, words);
    }
}

#[test]
fn json_arguments_are_checked() {
    let cases: &[(&str, &[&str])] = &[
        ("T --extra-engine-args {\"block_size\":", &["--extra-engine-args: invalid JSON", "column"]),
        ("T --router-config [1,2]", &["--router-config", "must be a JSON object"]),
        ("T --extra-engine-args {\"num_gpu_block\":100}", &["unknown key \"num_gpu_block\"", "did you mean \"num_gpu_blocks\"", "Valid keys:"]),
        ("T --router-config {\"overlap_credit\":1}", &["--router-config", "did you mean \"overlap_score_credit\""]),
        ("T --extra-engine-args {\"num_gpu_blocks\":\"many\"}", &["\"num_gpu_blocks\"", "an integer in [1, 2147483647]", "string"]),
        ("T --extra-engine-args {\"num_gpu_blocks\":0}", &["\"num_gpu_blocks\"", "[1, 2147483647]", "got number 0"]),
        ("T --extra-engine-args {\"max_num_seqs\":0}", &["\"max_num_seqs\""]),
        ("T --extra-engine-args {\"block_size\":null}", &["\"block_size\"", "must not be null"]),
        ("T --extra-engine-args {\"speedup_ratio\":-1}", &["\"speedup_ratio\"", ">= 0"]),
        ("T --extra-engine-args {\"dp_size\":0}", &["\"dp_size\""]),
        ("T --extra-engine-args {\"is_prefill\":true,\"is_decode\":true}", &["cannot both be true"]),
        ("T --extra-engine-args {\"worker_type\":\"decode\",\"is_decode\":true}", &["cannot be combined with is_prefill or is_decode"]),
        ("T --router-config {\"router_temperature\":-0.1}", &["\"router_temperature\""]),
        ("T --router-config {\"router_track_output_blocks\":true,\"router_track_active_blocks\":false}", &["requires router_track_active_blocks"]),
    ];
    for (line, words) in cases {
        assert_rejected(line, words);
    }
}

#[test]
fn topology_rules() {
    let p = "--prefill-engine-args {\"worker_type\":\"prefill\"}";
    let d = "--decode-engine-args {\"worker_type\":\"decode\"}";
    let cases: Vec<(String, &[&str])> = vec![
        (
            format!("T --extra-engine-args {{}} {p} {d}"),
            &["--extra-engine-args cannot be combined"],
        ),
        (format!("T {p}"), &["must be provided together"]),
        (format!("T {d}"), &["must be provided together"]),
        (
            "T --num-decode-workers 2".into(),
            &["--num-decode-workers", "only used for disaggregated"],
        ),
        (
            format!("T --num-workers 4 {p} {d}"),
            &["--num-workers is only used for aggregated"],
        ),
        ("T --num-workers 0".into(), &["--num-workers must be >= 1"]),
        (
            "T --num-workers -2".into(),
            &["--num-workers must be >= 1, got -2"],
        ),
        (
            "T --extra-engine-args {\"worker_type\":\"prefill\"}".into(),
            &["worker_type \"aggregated\""],
        ),
        (
            "T --router-mode kv_router".into(),
            &["kv_router", "more than one worker/DP-rank target"],
        ),
        (
            format!("T --prefill-engine-args {{}} {d}"),
            &["--prefill-engine-args must set worker_type \"prefill\""],
        ),
        (
            format!("T {p} --decode-engine-args {{\"worker_type\":\"aggregated\"}}"),
            &["--decode-engine-args must set worker_type \"decode\""],
        ),
        (
            format!("T --num-prefill-workers 0 {p} {d}"),
            &["--num-prefill-workers must be >= 1"],
        ),
        (
            format!("T {p} --decode-engine-args {{\"worker_type\":\"decode\",\"dp_size\":2}}"),
            &["dp_size must be 1"],
        ),
        (
            format!(
                "T --prefill-engine-args {{\"worker_type\":\"prefill\",\"block_size\":128}} {d}"
            ),
            &["block_size", "got 128 and 64"],
        ),
    ];
    for (line, words) in &cases {
        assert_rejected(line, words);
    }
}

#[test]
fn numeric_ranges() {
    let cases: &[(&str, &[&str])] = &[
        (
            "T --replay-concurrency 0",
            &["--replay-concurrency must be >= 1"],
        ),
        (
            "T --arrival-speedup-ratio 0",
            &["--arrival-speedup-ratio", "> 0"],
        ),
        ("T --arrival-speedup-ratio -2", &["--arrival-speedup-ratio"]),
        (
            "T --arrival-speedup-ratio nan",
            &["--arrival-speedup-ratio"],
        ),
        (
            "T --max-sim-time-seconds -1",
            &["--max-sim-time-seconds", ">= 0"],
        ),
        ("T --max-sim-time-seconds inf", &["--max-sim-time-seconds"]),
        ("T --sla-ttft-ms -5", &["--sla-ttft-ms"]),
        ("T --sla-itl-ms inf", &["--sla-itl-ms"]),
        ("T --sla-e2e-ms NaN", &["--sla-e2e-ms"]),
        (
            "T --trace-block-size 0",
            &["--trace-block-size must be >= 1"],
        ),
        ("SYN --request-rate 0", &["--request-rate", "> 0"]),
        ("SYN --request-rate -3", &["--request-rate"]),
        (
            "SYN --arrival-interval-ms -1",
            &["--arrival-interval-ms", ">= 0"],
        ),
        (
            "SYN --replay-concurrency 1 --shared-prefix-ratio 2",
            &["--shared-prefix-ratio", "[0, 1]"],
        ),
        (
            "SYN --replay-concurrency 1 --turns-per-session 0 --num-prefix-groups 2",
            &["--turns-per-session must be at least 1"],
        ),
        (
            "SYN --replay-concurrency 1 --turns-per-session -2",
            &["--turns-per-session must be >= 0"],
        ),
        (
            "SYN --replay-concurrency 1 --inter-turn-delay-ms -10",
            &["--inter-turn-delay-ms"],
        ),
        (
            "--input-tokens 0 --output-tokens 4 --request-count 2 --replay-concurrency 1",
            &["--input-tokens must be >= 1"],
        ),
        (
            "--input-tokens 4 --output-tokens -1 --request-count 2 --replay-concurrency 1",
            &["--output-tokens must be >= 1"],
        ),
        (
            "--input-tokens 4 --output-tokens 4 --request-count 0 --replay-concurrency 1",
            &["--request-count must be >= 1"],
        ),
    ];
    for (line, words) in cases {
        assert_rejected(line, words);
    }
}

#[test]
fn policy_config_from_the_environment_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("trace.jsonl"), TRACE).unwrap();
    cargo_bin_cmd!("dynosim")
        .current_dir(dir.path())
        .env("DYN_ROUTER_POLICY_CONFIG", "policy.yaml")
        .args(["run", "trace.jsonl"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("DYN_ROUTER_POLICY_CONFIG"));
    assert_eq!(files_in(dir.path()), ["trace.jsonl"]);
}

#[test]
fn clap_errors_keep_exit_code_2() {
    for args in [
        &["run", "--router-mode", "random"][..],
        &["run", "--trace-format", "csv"],
        &["run", "--num-workers", "two"],
        &["run", "--no-such-flag"],
        &["run", "--seed", "-1"],
        &["frobnicate"],
    ] {
        cargo_bin_cmd!("dynosim")
            .args(args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("error:"));
    }
}

#[test]
fn help_lists_the_dynosim_flags() {
    let assert = cargo_bin_cmd!("dynosim")
        .args(["run", "--help"])
        .assert()
        .success();
    let help = String::from_utf8_lossy(&assert.get_output().stdout).into_owned();
    for flag in [
        "--extra-engine-args",
        "--prefill-engine-args",
        "--decode-engine-args",
        "--router-config",
        "--num-workers",
        "--replay-concurrency",
        "--arrival-speedup-ratio",
        "--trace-block-size",
        "--report-json",
        "--report-jsonl",
        "--max-sim-time-seconds",
        "--sla-ttft-ms",
        "--seed",
        "[default: round_robin]",
        "[default: 42]",
    ] {
        assert!(help.contains(flag), "help lacks {flag}");
    }
}

/// DynoSim 1.4.2 runs agentic traces to completion whatever `--max-sim-time-seconds` says
/// (`tests/reference.rs` checks the numbers); dynosim does the same and says so, for a flat
/// trace it says nothing.
#[test]
fn a_time_cap_on_an_agentic_trace_is_ignored_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("trace.jsonl"), TRACE).unwrap();
    let agentic =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/formats/conv_agentic.jsonl.gz");
    let run = |args: &[&str]| {
        let assert = cargo_bin_cmd!("dynosim")
            .current_dir(dir.path())
            .args([
                "run",
                "--max-sim-time-seconds",
                "20",
                "--report-json",
                "r.json",
            ])
            .args(args)
            .assert()
            .success();
        String::from_utf8_lossy(&assert.get_output().stderr).into_owned()
    };
    let warned = run(&[
        "--trace-format",
        "agentic_mooncake",
        agentic.to_str().unwrap(),
    ]);
    assert!(
        warned.contains("--max-sim-time-seconds is ignored for agentic traces"),
        "{warned}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert!(report["duration_ms"].as_f64().unwrap() > 20_000.0);
    let flat = run(&["trace.jsonl"]);
    assert!(!flat.contains("ignored"), "{flat}");
}

/// A report path that is a pipe (`--report-json /dev/stdout`, a FIFO) is written in place: the
/// atomic rename of a temporary file would have replaced it with a regular file (as root, the
/// same happened to `/dev/null`).
#[cfg(unix)]
#[test]
fn a_report_to_a_pipe_is_written_into_the_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("report.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fs::read_to_string(fifo).unwrap())
    };
    cargo_bin_cmd!("dynosim")
        .current_dir(dir.path())
        .args(expand("run SYN --replay-concurrency 2 --report-json"))
        .arg(&fifo)
        .assert()
        .success();
    // Checked before waiting for the reader, which a replaced FIFO would leave blocked.
    use std::os::unix::fs::FileTypeExt;
    assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(
        files_in(dir.path()),
        ["report.fifo"],
        "no temporary file left"
    );
    let report: serde_json::Value = serde_json::from_str(&reader.join().unwrap()).unwrap();
    assert_eq!(report["completed_requests"], 5);
}
