//! dynosim's own overhead keys in the engine args (0 = DynoSim):
//!
//! * `request_overhead_ms`: ms from a client's send to the pool. Every request's TTFT and
//!   end-to-end latency grow by it, inter-token times do not, and in closed loop it holds the
//!   request's slot (the run gets longer by it per request in sequence);
//! * `decode_pass_overhead_ms`: ms added to every engine pass that decodes, possibly negative. A
//!   request alone on a worker gets it once per emitted token: on its first token (the pass that
//!   prefills it also emits it) and on every gap after.

mod common;

use assert_cmd::cargo::cargo_bin_cmd;
use serde_json::Value;
use std::fs;
use std::path::Path;

/// Two requests ten seconds apart: each is alone on the worker.
const TRACE: &str =
    "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 20, \"hash_ids\": [1, 2]}\n\
{\"timestamp\": 10000, \"input_length\": 300, \"output_length\": 10, \"hash_ids\": [3]}\n";

fn report(dir: &Path, args: &[&str]) -> Value {
    let out = cargo_bin_cmd!("dynosim")
        .current_dir(dir)
        .arg("run")
        .args(args)
        .args(["--report-json", "r.json"])
        .output()
        .unwrap();
    common::report_of(&out, &dir.join("r.json")).0
}

fn num(r: &Value, k: &str) -> f64 {
    r[k].as_f64().unwrap_or_else(|| panic!("{k} in {r}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[test]
fn open_loop_latencies_grow_by_the_overhead_and_token_gaps_do_not() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("t.jsonl"), TRACE).unwrap();
    let plain = report(dir.path(), &["t.jsonl"]);
    let zero = report(
        dir.path(),
        &[
            "t.jsonl",
            "--extra-engine-args",
            r#"{"request_overhead_ms": 0}"#,
        ],
    );
    let slow = report(
        dir.path(),
        &[
            "t.jsonl",
            "--extra-engine-args",
            r#"{"request_overhead_ms": 50}"#,
        ],
    );
    for k in ["mean_ttft_ms", "mean_e2e_latency_ms", "mean_tpot_ms"] {
        assert_eq!(num(&plain, k), num(&zero, k), "0 ms changes nothing: {k}");
    }
    for k in [
        "mean_ttft_ms",
        "min_ttft_ms",
        "max_ttft_ms",
        "mean_e2e_latency_ms",
        "duration_ms",
    ] {
        assert!(close(num(&slow, k), num(&plain, k) + 50.0), "{k}");
    }
    for k in ["mean_tpot_ms", "mean_itl_ms", "max_itl_ms"] {
        assert!(close(num(&slow, k), num(&plain, k)), "{k}");
    }
    assert_eq!(num(&slow, "completed_requests"), 2.0);
}

#[test]
fn in_closed_loop_the_overhead_holds_the_slot() {
    let dir = tempfile::tempdir().unwrap();
    let base = [
        "--input-tokens",
        "400",
        "--output-tokens",
        "8",
        "--request-count",
        "5",
        "--replay-concurrency",
        "1",
    ];
    let plain = report(dir.path(), &base);
    let mut args = base.to_vec();
    args.extend(["--extra-engine-args", r#"{"request_overhead_ms": 30}"#]);
    let slow = report(dir.path(), &args);
    assert!(close(
        num(&slow, "mean_ttft_ms"),
        num(&plain, "mean_ttft_ms") + 30.0
    ));
    // One request at a time: each of the five waits 30 ms before the engine sees it.
    assert!(close(
        num(&slow, "duration_ms"),
        num(&plain, "duration_ms") + 5.0 * 30.0
    ));
}

/// `dynosim run` of the trace with `engine_args` exits 2 naming the flag, `key` and `range`.
fn refused(engine_args: &str, key: &str, range: &str) {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("t.jsonl"), TRACE).unwrap();
    let out = cargo_bin_cmd!("dynosim")
        .current_dir(dir.path())
        .args(["run", "t.jsonl", "--extra-engine-args", engine_args])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{engine_args}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--extra-engine-args")
            && err.contains(&format!("\"{key}\""))
            && err.contains(range),
        "{engine_args}: {err}"
    );
}

#[test]
fn a_negative_request_overhead_is_refused_naming_the_key() {
    refused(
        r#"{"request_overhead_ms": -5}"#,
        "request_overhead_ms",
        "[0, 3600000]",
    );
}

#[test]
fn every_decoding_pass_of_a_lone_request_grows_by_the_decode_pass_overhead() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("t.jsonl"), TRACE).unwrap();
    for engine in ["vllm", "sglang"] {
        let args = |extra: &str| format!(r#"{{"engine_type": "{engine}"{extra}}}"#);
        let run = |extra: &str| {
            report(
                dir.path(),
                &["t.jsonl", "--extra-engine-args", &args(extra)],
            )
        };
        let plain = run("");
        let zero = run(r#", "decode_pass_overhead_ms": 0"#);
        for k in [
            "mean_ttft_ms",
            "mean_tpot_ms",
            "mean_e2e_latency_ms",
            "duration_ms",
        ] {
            assert_eq!(
                num(&plain, k),
                num(&zero, k),
                "{engine}: 0 ms changes nothing: {k}"
            );
        }
        for ms in [2.0, -0.5] {
            let got = run(&format!(r#", "decode_pass_overhead_ms": {ms}"#));
            for k in ["mean_ttft_ms", "min_ttft_ms", "max_ttft_ms", "mean_tpot_ms"] {
                assert!(
                    close(num(&got, k), num(&plain, k) + ms),
                    "{engine} {ms}: {k} {} against {}",
                    num(&got, k),
                    num(&plain, k)
                );
            }
            // Each request emits its output length in as many decoding passes: 20 and 10.
            assert!(
                close(
                    num(&got, "mean_e2e_latency_ms"),
                    num(&plain, "mean_e2e_latency_ms") + 15.0 * ms
                ),
                "{engine} {ms}"
            );
            assert_eq!(num(&got, "completed_requests"), 2.0);
        }
    }
}

#[test]
fn a_decode_pass_overhead_out_of_range_is_refused_naming_the_key() {
    for bad in ["-4000000", "\"1\""] {
        refused(
            &format!(r#"{{"decode_pass_overhead_ms": {bad}}}"#),
            "decode_pass_overhead_ms",
            "[-3600000, 3600000]",
        );
    }
}
