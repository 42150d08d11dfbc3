//! `dynosim sweep` and `dynosim merge` driven through the binary, as users call them.
//!
//! Tests marked "needs simulator" run real simulations; "needs CLI" ones only need the
//! `sweep`/`merge` subcommands wired to `dynosim::sweep::{run_sweep, merge}`.

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn dynosim() -> Command {
    Command::cargo_bin("dynosim").expect("the dynosim binary")
}

fn write_spec(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("grid.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

fn read(p: impl AsRef<Path>) -> String {
    std::fs::read_to_string(p.as_ref()).unwrap_or_else(|e| panic!("{}: {e}", p.as_ref().display()))
}

/// ok (40 requests), infeasible (20 < min 30), invalid (kv_router on 1 worker), skipped (8 GPUs).
const STATUS_SPEC: &str = r#"
workload: {input_tokens: 256, output_tokens: 16, request_count: 40, request_rate: 50}
constraints: {max_gpus: 4}
require: {completed_requests: {min: 30}}
grid:
  num_workers: [1, 2, 8]
  router_mode: [round_robin, kv_router]
  workload.request_count: [40, 20]
"#;

fn csv_rows(text: &str) -> Vec<BTreeMap<String, String>> {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    r.records()
        .map(|rec| {
            header
                .iter()
                .cloned()
                .zip(rec.unwrap().iter().map(str::to_string))
                .collect()
        })
        .collect()
}

/// Runs `dynosim sweep SPEC -o OUT --quiet` (expecting success) and returns its leaderboard.json.
fn sweep_board(spec: &Path, out: &Path) -> Value {
    dynosim()
        .args([
            "sweep",
            spec.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--quiet",
        ])
        .assert()
        .code(0);
    serde_json::from_str(&read(out.join("leaderboard.json"))).unwrap()
}

/// A report without the fields that depend on the host's clock or on the point's GPU count.
fn comparable(m: &serde_json::Map<String, Value>) -> BTreeMap<String, Value> {
    const HOST: &[&str] = &[
        "wall_time_ms",
        "processed_tokens_per_s",
        "processed_output_tokens_per_s",
        "output_throughput_tok_s_per_gpu",
        "request_throughput_rps_per_gpu",
    ];
    m.iter()
        .filter(|(k, _)| !HOST.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[test]

fn every_status_and_ranking_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(dir.path(), STATUS_SPEC);
    let out = dir.path().join("out");
    dynosim()
        .args([
            "sweep",
            spec.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--quiet",
        ])
        .assert()
        .code(0);
    let rows = csv_rows(&read(out.join("leaderboard.csv")));
    assert_eq!(rows.len(), 12);
    let status =
        |p: u32| rows.iter().find(|r| r["point"] == p.to_string()).unwrap()["status"].clone();
    // id = workers_idx*4 + router_idx*2 + count_idx
    assert_eq!(status(0), "ok");
    assert_eq!(status(1), "infeasible");
    assert_eq!(status(2), "invalid");
    assert_eq!(status(3), "invalid");
    for p in 8..12 {
        assert_eq!(status(p), "skipped");
    }
    let ranked: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| !r["rank"].is_empty())
        .map(|r| (r["rank"].as_str(), r["status"].as_str()))
        .collect();
    assert_eq!(
        ranked,
        vec![
            ("1", "ok"),
            ("2", "ok"),
            ("3", "ok"),
            ("4", "infeasible"),
            ("5", "infeasible"),
            ("6", "infeasible")
        ]
    );
    // ok rows are ordered by output throughput (the default rank_by), best first.
    let thr: Vec<f64> = rows[..3]
        .iter()
        .map(|r| r["output_throughput_tok_s"].parse().unwrap())
        .collect();
    assert!(thr[0] >= thr[1] && thr[1] >= thr[2], "{thr:?}");
    assert!(rows[..3].iter().any(|r| r["pareto"] == "true"));
    assert!(rows[3..6].iter().all(|r| r["pareto"] == "false"));
    let header = read(out.join("leaderboard.csv"))
        .lines()
        .next()
        .unwrap()
        .to_string();
    assert!(header.starts_with(
        "rank,point,status,feasible,pareto,reason,num_workers,router_mode,workload.request_count,gpus,"
    ));
    assert!(!header.contains("wall_time_ms"));
    let json: Value = serde_json::from_str(&read(out.join("leaderboard.json"))).unwrap();
    assert_eq!(json["rows"].as_array().unwrap().len(), 12);
    assert!(json["rows"][0]["report"]["wall_time_ms"].is_number());
    assert!(json["rows"][0]["configuration"]["topology"].is_object());
    assert_eq!(read(out.join("points.jsonl")).lines().count(), 12);
}

#[test]

fn same_csv_for_any_jobs_and_across_runs() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(dir.path(), STATUS_SPEC);
    let mut csvs = Vec::new();
    for (name, jobs) in [("a", "1"), ("b", "2"), ("c", "2")] {
        let out = dir.path().join(name);
        dynosim()
            .args([
                "sweep",
                spec.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
                "-j",
                jobs,
                "--quiet",
            ])
            .assert()
            .code(0);
        // The files for people too: report.html and leaderboard.md.
        csvs.push(
            ["leaderboard.csv", "report.html", "leaderboard.md"]
                .map(|f| read(out.join(f)))
                .concat(),
        );
    }
    assert_eq!(csvs[0], csvs[1]);
    assert_eq!(csvs[0], csvs[2]);
}

#[test]

fn shards_merged_equal_a_whole_run() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(dir.path(), STATUS_SPEC);
    let whole = dir.path().join("whole");
    dynosim()
        .args([
            "sweep",
            spec.to_str().unwrap(),
            "-o",
            whole.to_str().unwrap(),
            "--quiet",
        ])
        .assert()
        .code(0);
    let mut shards = Vec::new();
    for k in 0..3 {
        let out = dir.path().join(format!("shard{k}"));
        dynosim()
            .args([
                "sweep",
                spec.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
                "--shard",
                &format!("{k}/3"),
                "--quiet",
            ])
            .assert()
            .code(0);
        shards.push(out.to_str().unwrap().to_string());
    }
    let merged = dir.path().join("merged");
    let mut args = vec!["merge".to_string()];
    args.extend(shards.iter().cloned());
    args.extend(["-o".to_string(), merged.to_str().unwrap().to_string()]);
    dynosim().args(&args).assert().code(0);
    for f in ["leaderboard.csv", "report.html", "leaderboard.md"] {
        assert_eq!(read(whole.join(f)), read(merged.join(f)), "{f}");
    }
}

#[test]

fn a_point_equals_dynosim_run() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(
        dir.path(),
        r#"
workload: {input_tokens: 512, output_tokens: 24, request_count: 60, request_rate: 40, arrival_speedup_ratio: 2}
engine: {block_size: 32, max_num_seqs: 64}
slo: {ttft_ms: 500, itl_ms: 30}
grid:
  topology:
    - {num_workers: 2, router_mode: kv_router, router.overlap_score_weight: 0.5}
"#,
    );
    let board = sweep_board(&spec, &dir.path().join("out"));
    let sweep_report = board["rows"][0]["report"].as_object().unwrap().clone();
    let report_path = dir.path().join("run.json");
    dynosim()
        .args([
            "run",
            "--input-tokens",
            "512",
            "--output-tokens",
            "24",
            "--request-count",
            "60",
            "--request-rate",
            "40",
            "--arrival-speedup-ratio",
            "2",
            "--num-workers",
            "2",
            "--router-mode",
            "kv_router",
            "--router-config",
            r#"{"overlap_score_weight": 0.5}"#,
            "--extra-engine-args",
            r#"{"block_size": 32, "max_num_seqs": 64}"#,
            "--sla-ttft-ms",
            "500",
            "--sla-itl-ms",
            "30",
            "--report-json",
            report_path.to_str().unwrap(),
        ])
        .assert()
        .code(0);
    let run_report: Value = serde_json::from_str(&read(&report_path)).unwrap();
    let a = comparable(&sweep_report);
    let b = comparable(run_report.as_object().unwrap());
    assert!(a.contains_key("goodput_request_throughput_rps"));
    assert_eq!(a, b);
}

/// Points over one trace with different engine block sizes share the workload's prompt-block
/// analysis per block size: each must still equal `dynosim run` of the same configuration.
#[test]
fn trace_points_with_different_block_sizes_equal_dynosim_run() {
    let dir = tempfile::tempdir().unwrap();
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/traces/conv_2k.jsonl.gz"
    );
    let spec = write_spec(
        dir.path(),
        &format!(
            "workload: {{trace: {trace}}}\nnum_workers: 3\nrouter_mode: kv_router\n\
             grid:\n  engine.block_size: [32, 64, 32]\n  seed: [7]\n"
        ),
    );
    let board = sweep_board(&spec, &dir.path().join("out"));
    let rows = board["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for row in rows {
        let bs = row["parameters"]["engine.block_size"].as_u64().unwrap();
        let report_path = dir.path().join(format!("run{}.json", row["point"]));
        dynosim()
            .args([
                "run",
                trace,
                "--num-workers",
                "3",
                "--router-mode",
                "kv_router",
                "--seed",
                "7",
                "--extra-engine-args",
                &format!(r#"{{"block_size": {bs}}}"#),
                "--report-json",
                report_path.to_str().unwrap(),
            ])
            .assert()
            .code(0);
        let run_report: Value = serde_json::from_str(&read(&report_path)).unwrap();
        assert_eq!(
            comparable(row["report"].as_object().unwrap()),
            comparable(run_report.as_object().unwrap()),
            "block size {bs}"
        );
    }
}

/// A grid long enough to interrupt: 24 points run one at a time.
const LONG_SPEC: &str = r#"
workload: {input_tokens: 1024, output_tokens: 64, request_count: 400, request_rate: 100}
grid:
  num_workers: [1, 2, 3, 4, 5, 6]
  engine.max_num_seqs: [16, 32, 64, 128]
"#;

fn wait_for_lines(path: &Path, n: usize, limit: Duration) {
    let start = Instant::now();
    while start.elapsed() < limit {
        if std::fs::read_to_string(path)
            .map(|t| t.matches('\n').count() >= n)
            .unwrap_or(false)
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("{} never got {n} lines", path.display());
}

fn signal(pid: u32, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

#[test]

fn ctrl_c_then_resume_equals_a_whole_run() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(dir.path(), LONG_SPEC);
    let whole = dir.path().join("whole");
    dynosim()
        .args([
            "sweep",
            spec.to_str().unwrap(),
            "-o",
            whole.to_str().unwrap(),
            "--quiet",
        ])
        .assert()
        .code(0);
    let out = dir.path().join("out");
    let bin = assert_cmd::cargo::cargo_bin("dynosim");
    let mut child = std::process::Command::new(&bin)
        .args([
            "sweep",
            spec.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "-j",
            "1",
            "--quiet",
        ])
        .spawn()
        .unwrap();
    wait_for_lines(&out.join("points.jsonl"), 2, Duration::from_secs(120));
    signal(child.id(), "-INT");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let partial = csv_rows(&read(out.join("leaderboard.csv")));
    assert!(partial.len() < 24, "{} rows", partial.len());
    // Without --resume the folder is refused.
    dynosim()
        .args([
            "sweep",
            spec.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--quiet",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--resume"));
    dynosim()
        .args([
            "sweep",
            spec.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--resume",
            "--quiet",
        ])
        .assert()
        .code(0);
    assert_eq!(
        read(whole.join("leaderboard.csv")),
        read(out.join("leaderboard.csv"))
    );
}

#[test]

fn sigkill_then_resume_equals_a_whole_run() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(dir.path(), LONG_SPEC);
    let whole = dir.path().join("whole");
    dynosim()
        .args([
            "sweep",
            spec.to_str().unwrap(),
            "-o",
            whole.to_str().unwrap(),
            "--quiet",
        ])
        .assert()
        .code(0);
    let out = dir.path().join("out");
    let bin = assert_cmd::cargo::cargo_bin("dynosim");
    let mut child = std::process::Command::new(&bin)
        .args([
            "sweep",
            spec.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "-j",
            "2",
            "--quiet",
        ])
        .spawn()
        .unwrap();
    wait_for_lines(&out.join("points.jsonl"), 2, Duration::from_secs(120));
    signal(child.id(), "-KILL");
    child.wait().unwrap();
    // As if the kill had landed in the middle of a line.
    let points = out.join("points.jsonl");
    let mut text = read(&points);
    text.push_str("{\"point\":3,\"hash\":\"0f");
    std::fs::write(&points, text).unwrap();
    dynosim()
        .args([
            "sweep",
            spec.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--resume",
            "--quiet",
        ])
        .assert()
        .code(0);
    assert_eq!(
        read(whole.join("leaderboard.csv")),
        read(out.join("leaderboard.csv"))
    );
    assert_eq!(read(&points).lines().count(), 24);
}

#[test]

fn quickstart_runs_on_the_bundled_trace() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("q");
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("sweeps/quickstart.yaml");
    dynosim()
        .args(["sweep", spec.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("rank"));
    let csv = std::fs::read_to_string(out.join("leaderboard.csv")).unwrap();
    // Header plus one row per point (3 worker counts x 2 routers).
    assert_eq!(csv.lines().count(), 7, "{csv}");
}

/// The console table keeps the `rank_by` and `require` metrics on a narrow terminal
/// (`COLUMNS`) and cuts parameter columns instead, naming them under the table.
#[test]
fn console_keeps_the_ranked_and_required_metrics_when_narrow() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(
        dir.path(),
        "workload: {input_tokens: 256, output_tokens: 16, request_count: 40, request_rate: 20}\n\
         grid:\n  num_workers: [1, 2]\n  engine.max_num_seqs: [64, 128]\n  engine.max_num_batched_tokens: [4096, 8192]\n\
         require: {p99_ttft_ms: {max: 100000}}\n\
         rank_by: [max output_throughput_tok_s]\n",
    );
    let table = |columns: &str, name: &str| {
        let out = dir.path().join(name);
        let o = dynosim()
            .env("COLUMNS", columns)
            .args(["sweep", spec.to_str().unwrap(), "-o", out.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let narrow = table("60", "narrow");
    // The table's lines (the summary line after it names a path of any length).
    for l in narrow.lines().take_while(|l| !l.starts_with("(*")) {
        assert!(l.chars().count() <= 60, "{l:?} is too wide\n{narrow}");
    }
    assert!(narrow.contains("output_"), "{narrow}");
    assert!(narrow.contains("p99_ttft_ms"), "{narrow}");
    assert!(
        narrow.contains("not shown (too wide): ") && narrow.contains("engine.max_num_"),
        "{narrow}"
    );
    let wide = table("200", "wide");
    assert!(!wide.contains("not shown"), "{wide}");
    assert!(wide.contains("num_batched_"), "{wide}");
}

#[test]

fn dry_run_prints_the_grid_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(dir.path(), STATUS_SPEC);
    let out = dir.path().join("out");
    let assert = dynosim()
        .args([
            "sweep",
            spec.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--dry-run",
        ])
        .assert()
        .code(0);
    let stdout = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 13, "{stdout}");
    assert_eq!(
        lines[0],
        " 0           num_workers=1 router_mode=round_robin workload.request_count=40"
    );
    assert!(
        lines[2].starts_with(" 2  invalid  num_workers=1 router_mode=kv_router"),
        "{}",
        lines[2]
    );
    assert!(
        lines[8].starts_with(" 8  skipped  num_workers=8"),
        "{}",
        lines[8]
    );
    assert_eq!(lines[12], "12 points: 6 to run, 4 skipped, 2 invalid");
    assert!(!out.exists());
}

#[test]

fn bad_specs_exit_2_with_the_key_path() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("wrkload: {}\n", "did you mean `workload`?"),
        (
            "workload: {input_tokens: 1, output_tokens: 1, request_count: 1, request_rate: 1}\ngrid:\n  topology:\n    - {num_workers: [two]}\n",
            "grid.topology[0].num_workers[0]",
        ),
        ("workload: {trace: nowhere.jsonl}\n", "does not exist"),
        ("workload: {input_tokens: 1\n", "grid.yaml:2:1"),
    ];
    for (text, want) in cases {
        let spec = write_spec(dir.path(), text);
        dynosim()
            .args([
                "sweep",
                spec.to_str().unwrap(),
                "-o",
                dir.path().join("o").to_str().unwrap(),
            ])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(want));
        assert!(!dir.path().join("o").exists());
    }
}

#[test]

fn max_points_refuses_before_expanding() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(dir.path(), STATUS_SPEC);
    dynosim()
        .args([
            "sweep",
            spec.to_str().unwrap(),
            "--dry-run",
            "--max-points",
            "11",
        ])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("12 points").and(predicate::str::contains("--max-points 11")),
        );
}

#[test]

fn non_empty_output_folder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(dir.path(), STATUS_SPEC);
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    dynosim()
        .args([
            "sweep",
            spec.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--quiet",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not empty"));
    assert_eq!(read(out.join("notes.txt")), "mine");
}

#[test]

fn merge_refuses_shards_of_different_specs() {
    // Every point is skipped, so no simulation is needed.
    let dir = tempfile::tempdir().unwrap();
    let text = "workload: {input_tokens: 8, output_tokens: 2, request_count: 2, request_rate: 1}\n\
                constraints: {max_gpus: 1}\ngrid:\n  num_workers: [2, 3]\n";
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    let spec = write_spec(dir.path(), text);
    dynosim()
        .args([
            "sweep",
            spec.to_str().unwrap(),
            "-o",
            a.to_str().unwrap(),
            "--quiet",
        ])
        .assert()
        .code(0);
    let spec = write_spec(dir.path(), &text.replace("[2, 3]", "[2, 4]"));
    dynosim()
        .args([
            "sweep",
            spec.to_str().unwrap(),
            "-o",
            b.to_str().unwrap(),
            "--quiet",
        ])
        .assert()
        .code(0);
    dynosim()
        .args([
            "merge",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "-o",
            dir.path().join("m").to_str().unwrap(),
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("different specs"));
    // The same spec merges.
    dynosim()
        .args([
            "merge",
            a.to_str().unwrap(),
            "-o",
            dir.path().join("m").to_str().unwrap(),
        ])
        .assert()
        .code(0);
    assert_eq!(
        read(a.join("leaderboard.csv")),
        read(dir.path().join("m").join("leaderboard.csv"))
    );
}

#[test]

fn shipped_specs_validate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for name in ["quickstart", "routing", "prefix_reuse", "agg_vs_disagg"] {
        let spec = root.join("sweeps").join(format!("{name}.yaml"));
        dynosim()
            .args(["sweep", spec.to_str().unwrap(), "--dry-run"])
            .assert()
            .code(0)
            .stdout(predicate::str::contains("points"));
    }
}
