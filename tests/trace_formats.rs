//! The trace formats and TRT-LLM through the real binary: bad records of every format are
//! refused with exit status 2 and one `error:` line naming file:line and the field; the
//! combinations DynoSim refuses are refused with its reasons; a sweep reads
//! `workload.trace_format` and a list of Dynamo shards. (Their numbers are checked against
//! DynoSim in `tests/reference.rs`.)

use assert_cmd::cargo::cargo_bin_cmd;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/formats")
        .join(name)
}

fn run_in(dir: &Path, args: &[&str]) -> Output {
    cargo_bin_cmd!("dynosim")
        .current_dir(dir)
        .arg("run")
        .args(args)
        .args(["--report-json", "out/r.json"])
        .output()
        .unwrap()
}

/// Exit 2, one `error:` line with every word, nothing printed or written.
fn assert_refused(case: &str, dir: &Path, out: &Output, words: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{case}: {stderr}");
    assert!(out.stdout.is_empty(), "{case}: printed to stdout");
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(errors.len(), 1, "{case}: {stderr}");
    for w in words {
        assert!(stderr.contains(w), "{case}: {stderr:?} lacks {w:?}");
    }
    assert!(!dir.join("out").exists(), "{case}: wrote a report");
}

const AGENTIC: &str = r#"{"request_id":"a","timestamp":0,"output_length":2,"hash_ids":[1,2]}"#;
const APPLIED: &str = r#"{"num_turns":1,"input_prompt_length":100,"assistant_response_length":[5],"tool_call_output_length":[7],"tool_call_latency":[0.5],"final_assistant_response_length":3}"#;

fn dynamo_record(id: &str, hashes: &str) -> String {
    format!(
        r#"{{"schema":"dynamo.request.trace.v1","event_type":"request_end","event_time_unix_ms":2000,"request":{{"request_id":"{id}","request_received_ms":1000,"output_tokens":3,"replay":{{"trace_block_size":64,"input_length":100,"input_sequence_hashes":{hashes}}}}}}}"#
    )
}

/// (case, file name, content, flags, words the error must contain)
type BadRecord<'a> = (&'a str, &'a str, String, Vec<&'a str>, Vec<&'a str>);

#[test]
fn bad_records_name_the_file_line_and_field() {
    let cases: Vec<BadRecord> = vec![
        (
            "agentic missing request_id",
            "a.jsonl",
            format!("{AGENTIC}\n\n{{\"output_length\":1,\"hash_ids\":[1]}}\n"),
            vec!["--trace-format", "agentic_mooncake"],
            vec!["a.jsonl:3:", "\"request_id\""],
        ),
        (
            "agentic unknown dependency",
            "a.jsonl",
            format!(
                "{AGENTIC}\n{{\"request_id\":\"b\",\"output_length\":1,\"hash_ids\":[1],\"wait_for\":[\"zz\"]}}\n"
            ),
            vec!["--trace-format", "agentic_mooncake"],
            vec!["a.jsonl:2:", "\"wait_for\"", "\"zz\""],
        ),
        (
            "agentic input beyond hash ids",
            "a.jsonl",
            r#"{"request_id":"a","output_length":1,"hash_ids":[1],"input_length":600}"#.into(),
            vec!["--trace-format", "agentic_mooncake"],
            vec!["a.jsonl:1:", "\"input_length\"", "600"],
        ),
        (
            "applied list length",
            "ac.jsonl",
            format!(
                "{APPLIED}\n{}\n",
                APPLIED.replace("[0.5]", "[0.5, 1]")
            ),
            vec![
                "--trace-format",
                "applied_compute_agentic",
                "--replay-concurrency",
                "2",
            ],
            vec!["ac.jsonl:2:", "\"tool_call_latency\"", "num_turns is 1"],
        ),
        (
            "applied negative latency",
            "ac.jsonl",
            APPLIED.replace("[0.5]", "[-1]"),
            vec![
                "--trace-format",
                "applied_compute_agentic",
                "--replay-concurrency",
                "2",
            ],
            vec!["ac.jsonl:1:", "\"tool_call_latency\"", "element 0"],
        ),
        (
            "dynamo hash count",
            "d.jsonl",
            format!("{}\n{}\n", dynamo_record("a", "[1,2]"), dynamo_record("b", "[1]")),
            vec!["--trace-format", "dynamo"],
            vec!["d.jsonl:2:", "\"request.replay.input_sequence_hashes\""],
        ),
        (
            "dynamo schema",
            "d.jsonl",
            dynamo_record("a", "[1,2]").replace("trace.v1", "trace.v9"),
            vec!["--trace-format", "dynamo"],
            vec!["d.jsonl:1:", "\"schema\""],
        ),
        (
            "dynamo block size flag",
            "d.jsonl",
            dynamo_record("a", "[1,2]"),
            vec!["--trace-format", "dynamo", "--trace-block-size", "512"],
            vec!["--trace-block-size 512", "64"],
        ),
    ];
    for (case, name, text, flags, words) in cases {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(name), text).unwrap();
        let mut args = vec![name];
        args.extend(flags);
        let out = run_in(dir.path(), &args);
        assert_refused(case, dir.path(), &out, &words);
    }
}

#[test]
fn combinations_dynosim_refuses() {
    let agentic = data("conv_agentic.jsonl.gz");
    let applied = data("applied_compute.jsonl.gz");
    let dynamo_agentic = data("dynamo_agentic.jsonl.gz");
    let conv = data("conv400.jsonl.gz");
    let disagg = [
        "--prefill-engine-args",
        r#"{"worker_type":"prefill"}"#,
        "--decode-engine-args",
        r#"{"worker_type":"decode"}"#,
    ];
    let trt_disagg = [
        "--prefill-engine-args",
        r#"{"worker_type":"prefill","engine_type":"trtllm"}"#,
        "--decode-engine-args",
        r#"{"worker_type":"decode","engine_type":"trtllm"}"#,
    ];
    let s = |p: &PathBuf| p.display().to_string();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                s(&applied),
                "--trace-format".into(),
                "applied_compute_agentic".into(),
            ],
            "requires --replay-concurrency",
        ),
        (
            vec![
                s(&agentic),
                "--trace-format".into(),
                "agentic_mooncake".into(),
                "--replay-concurrency".into(),
                "4".into(),
            ],
            "agentic_mooncake trace format is not supported with replay_concurrency",
        ),
        (
            [
                s(&agentic),
                "--trace-format".into(),
                "agentic_mooncake".into(),
            ]
            .into_iter()
            .chain(disagg.iter().map(|a| a.to_string()))
            .collect(),
            "agentic_mooncake trace format is not supported for disaggregated replay",
        ),
        (
            vec![
                s(&dynamo_agentic),
                "--trace-format".into(),
                "dynamo".into(),
                "--replay-concurrency".into(),
                "4".into(),
            ],
            "agentic Dynamo request traces are not supported with replay_concurrency",
        ),
        (
            [s(&dynamo_agentic), "--trace-format".into(), "dynamo".into()]
                .into_iter()
                .chain(disagg.iter().map(|a| a.to_string()))
                .collect(),
            "agentic Dynamo request traces are not supported for disaggregated replay",
        ),
        (
            [s(&conv)]
                .into_iter()
                .chain(trt_disagg.iter().map(|a| a.to_string()))
                .collect(),
            "trace replay disaggregation does not support TRT-LLM",
        ),
        (vec![s(&conv), s(&conv)], "requires exactly one trace file"),
        (
            [
                s(&data("conv_delta.jsonl.gz")),
                "--trace-format".into(),
                "mooncake-delta".into(),
            ]
            .into_iter()
            .chain(disagg.iter().map(|a| a.to_string()))
            .collect(),
            "mooncake-delta trace format is not supported for disaggregated replay",
        ),
    ];
    for (args, words) in cases {
        let dir = tempfile::tempdir().unwrap();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run_in(dir.path(), &args);
        assert_refused(&args.join(" "), dir.path(), &out, &[words]);
    }
}

/// `dynosim sweep SPEC -o out` in `dir`; returns the leaderboard rows as (column -> value) maps.
fn sweep(dir: &Path, spec: &str) -> Vec<std::collections::HashMap<String, String>> {
    fs::write(dir.join("grid.yaml"), spec).unwrap();
    let out = cargo_bin_cmd!("dynosim")
        .current_dir(dir)
        .args(["sweep", "grid.yaml", "--quiet", "-o", "out"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut rd = csv::Reader::from_path(dir.join("out/leaderboard.csv")).unwrap();
    let header: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    rd.records()
        .map(|r| {
            header
                .iter()
                .cloned()
                .zip(r.unwrap().iter().map(String::from))
                .collect()
        })
        .collect()
}

#[test]
fn sweep_reads_trace_formats_and_dynamo_shards() {
    let dir = tempfile::tempdir().unwrap();
    for f in [
        "dynamo_trace.jsonl",
        "dynamo_trace.part2.jsonl.gz",
        "applied_compute.jsonl.gz",
    ] {
        fs::copy(data(f), dir.path().join(f)).unwrap();
    }
    // Two Dynamo shards make one workload (200 + 200 requests).
    let rows = sweep(
        dir.path(),
        "workload:\n  trace: [dynamo_trace.jsonl, dynamo_trace.part2.jsonl.gz]\n  trace_format: dynamo\n\
         engine: {block_size: 64}\ngrid:\n  num_workers: [2]\n",
    );
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["completed_requests"], "400");

    // applied_compute_agentic: 363 sessions of 400 requests in closed loop; without
    // replay_concurrency the point is invalid, as DynoSim refuses it.
    fs::remove_dir_all(dir.path().join("out")).unwrap();
    let rows = sweep(
        dir.path(),
        "workload: {trace: applied_compute.jsonl.gz, trace_format: applied_compute_agentic}\n\
         engine: {block_size: 64}\ngrid:\n  workload.replay_concurrency: [null, 8]\n  \
         workload.trace_num_prefix_groups: [4]\n  workload.trace_shared_prefix_ratio: [0.5]\n",
    );
    assert_eq!(rows.len(), 2);
    let ok: Vec<_> = rows.iter().filter(|r| r["status"] == "ok").collect();
    assert_eq!(ok.len(), 1);
    assert_eq!(ok[0]["completed_requests"], "400");
    let invalid = rows.iter().find(|r| r["status"] == "invalid").unwrap();
    assert!(
        invalid["reason"].contains("requires replay_concurrency"),
        "{invalid:?}"
    );
}

/// `workload.trace_format: mooncake-delta` in a sweep gives `dynosim run`'s numbers (here
/// DynoSim's: tests/data/reference/formats/delta_rr4.json), and a disaggregated point is invalid
/// with DynoSim's reason.
#[test]
fn sweep_reads_mooncake_delta() {
    let dir = tempfile::tempdir().unwrap();
    fs::copy(data("conv_delta.jsonl.gz"), dir.path().join("d.jsonl.gz")).unwrap();
    let rows = sweep(
        dir.path(),
        "workload: {trace: d.jsonl.gz, trace_format: mooncake-delta}\n\
         engine: {block_size: 64}\n\
         grid:\n  mode: [aggregated, disaggregated]\n  num_workers: [4]\n",
    );
    assert_eq!(rows.len(), 2);
    let ok = rows.iter().find(|r| r["status"] == "ok").unwrap();
    assert_eq!(ok["completed_requests"], "400");
    let ttft: f64 = ok["mean_ttft_ms"].parse().unwrap();
    assert!((ttft - 520.5007).abs() < 0.01, "mean TTFT {ttft}");
    let invalid = rows.iter().find(|r| r["status"] == "invalid").unwrap();
    assert!(
        invalid["reason"]
            .contains("mooncake-delta trace format is not supported for disaggregated"),
        "{invalid:?}"
    );
}

/// A sweep prints DynoSim's warning for an unknown SGLang `schedule_policy` on stderr once per
/// distinct value, however many points use it, and not into the results.
#[test]
fn sweep_warns_once_per_unknown_schedule_policy() {
    let dir = tempfile::tempdir().unwrap();
    fs::copy(data("conv400.jsonl.gz"), dir.path().join("c.jsonl.gz")).unwrap();
    fs::write(
        dir.path().join("grid.yaml"),
        "workload: {trace: c.jsonl.gz}\n\
         engine: {engine_type: sglang, sglang: {page_size: 64}, num_gpu_blocks: 4096}\n\
         grid:\n  num_workers: [1, 2]\n  engine.sglang.schedule_policy: [fifo, bogus, other]\n",
    )
    .unwrap();
    let out = cargo_bin_cmd!("dynosim")
        .current_dir(dir.path())
        .args(["sweep", "grid.yaml", "--quiet", "-o", "out"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for p in ["bogus", "other"] {
        let line = format!("Unknown sglang schedule_policy '{p}', falling back to FIFO");
        assert_eq!(stderr.matches(&line).count(), 1, "{stderr}");
    }
    assert!(!stderr.contains("'fifo'"), "{stderr}");
    let csv = fs::read_to_string(dir.path().join("out/leaderboard.csv")).unwrap();
    assert!(!csv.contains("Unknown sglang"));
}

/// A request with dependencies arrives `delay + tool_wait_ms` after the last of them ends (the
/// same duration as DynoSim's report for this trace: 226.310 ms).
#[test]
fn dependent_request_arrives_after_its_last_dependency() {
    let dir = tempfile::tempdir().unwrap();
    let rows = [
        r#"{"request_id":"a","timestamp":0,"output_length":5,"hash_ids":[1,2]}"#,
        r#"{"request_id":"b","timestamp":10,"output_length":20,"hash_ids":[3]}"#,
        r#"{"request_id":"c","timestamp":0,"output_length":2,"hash_ids":[1,2,4],"wait_for":["a","b"],"delay":7,"tool_wait_ms":5}"#,
    ];
    fs::write(dir.path().join("ag.jsonl"), rows.join("\n")).unwrap();
    let out = run_in(
        dir.path(),
        &[
            "ag.jsonl",
            "--trace-format",
            "agentic_mooncake",
            "--report-jsonl",
            "out/r.jsonl",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let records: Vec<serde_json::Value> = fs::read_to_string(dir.path().join("out/r.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let f = |i: usize, k: &str| records[i][k].as_f64().unwrap();
    assert_eq!(f(0, "arrival_time_ms"), 0.0);
    assert_eq!(f(1, "arrival_time_ms"), 10.0);
    let last_dependency = f(0, "last_token_ms").max(f(1, "last_token_ms"));
    assert!((f(2, "arrival_time_ms") - (last_dependency + 12.0)).abs() < 1e-9);
    let report: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.path().join("out/r.json")).unwrap()).unwrap();
    assert!((report["duration_ms"].as_f64().unwrap() - 226.3101).abs() < 1e-3);
}
