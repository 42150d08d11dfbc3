//! Whole sweeps through `runner::run_with` and `merge::merge_dirs`, with stand-ins for the
//! workload loaders and the simulator (a deterministic function of the configuration), so the
//! sweep machinery is tested on its own. `tests/sweep.rs` drives the real binary.

use super::execute::Backend;
use super::record::{read_points, PointRecord, Status, CSV_FILE, JSON_FILE, POINTS_FILE};
use super::runner::run_with;
use super::Stop;
use super::*;
use crate::config::{RouterMode, SimConfig, Topology};
use crate::error::{InputError, SimError};
use crate::report::Report;
use crate::sim::SimOutput;
use crate::workload::synthetic::SyntheticSpec;
use crate::workload::{Content, RequestSpec, Workload};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

fn workload_of(n: u32, input: u32, output: u32) -> Workload {
    let requests = (0..n)
        .map(|i| RequestSpec {
            uuid: i as u64 + 1,
            input_length: input,
            output_length: output,
            content: Content::Unique,
            session: i,
            turn: 0,
            delay_after_previous_ms: 0.0,
            priority: 0,
            strict_priority: 0,
        })
        .collect();
    Workload {
        requests,
        trace_block_size: 512,
        flat: true,
        ..Default::default()
    }
}

/// Counts generate() calls per input_tokens (tests use distinct values, and run in parallel).
static GENERATED: Mutex<Option<HashMap<u32, usize>>> = Mutex::new(None);

fn fake_generate(s: &SyntheticSpec, _block_size: u32) -> Result<Workload, InputError> {
    *GENERATED
        .lock()
        .unwrap()
        .get_or_insert_with(HashMap::new)
        .entry(s.input_tokens)
        .or_default() += 1;
    Ok(workload_of(
        s.request_count,
        s.input_tokens,
        s.output_tokens,
    ))
}

fn fake_load_trace(t: &crate::workload::formats::TraceSpec) -> Result<Workload, InputError> {
    let path = &t.paths[0];
    let text = std::fs::read_to_string(path).map_err(|e| InputError::new(e.to_string()))?;
    if text.contains("bad") {
        return Err(InputError::new(format!(
            "{}:1: missing output_length",
            path.display()
        )));
    }
    Ok(workload_of(text.lines().count() as u32, 1000, 100))
}

static WALL: AtomicUsize = AtomicUsize::new(0);

/// A deterministic "simulator": throughput grows with GPUs and kv_router; seed 666 panics,
/// seed 667 errors. Wall time differs on every call, like a real run's.
fn fake_simulate(
    w: &Workload,
    _prompts: &crate::workload::sharing::PromptBlocks,
    cfg: &SimConfig,
) -> Result<SimOutput, SimError> {
    if cfg.seed == 666 {
        panic!("boom at seed 666");
    }
    if cfg.seed == 667 {
        return Err(SimError::BadConfig(
            "dead end: nothing can be scheduled".into(),
        ));
    }
    let gpus = cfg.topology.gpus() as f64;
    let (workers, seqs) = match &cfg.topology {
        Topology::Aggregated {
            num_workers,
            engine,
        } => (
            *num_workers as f64,
            engine.max_num_seqs.unwrap_or(1000) as f64,
        ),
        Topology::Disaggregated {
            num_decode_workers,
            decode,
            ..
        } => (
            *num_decode_workers as f64 * 1.5,
            decode.max_num_seqs.unwrap_or(1000) as f64,
        ),
    };
    let kv = if cfg.router_mode == RouterMode::KvRouter {
        1.1
    } else {
        1.0
    };
    let thr = 100.0 * workers * kv * cfg.load.arrival_speedup_ratio + seqs / 1000.0 + 1.0 / 3.0;
    let mut r = Report::default();
    r.set_int("completed_requests", w.requests.len() as i64);
    r.set_int("num_requests", w.requests.len() as i64);
    r.set_float("output_throughput_tok_s", thr);
    r.set_float("mean_ttft_ms", 1000.0 / gpus / kv);
    r.set_float("p99_ttft_ms", 3000.0 / gpus / kv);
    r.set_float("mean_output_token_throughput_per_user", 50.0 * kv - gpus);
    r.set_float(
        "wall_time_ms",
        WALL.fetch_add(1, Ordering::SeqCst) as f64 + 0.5,
    );
    r.set_float(
        "processed_tokens_per_s",
        WALL.load(Ordering::SeqCst) as f64 * 7.0,
    );
    if cfg.sla.is_set() {
        r.set_int("goodput_completed_requests", w.requests.len() as i64 / 2);
        r.set_float("goodput_request_throughput_rps", thr / 1000.0);
    }
    Ok(SimOutput {
        report: r,
        records: Vec::new(),
    })
}

const BACKEND: Backend = Backend {
    simulate: fake_simulate,
    load_trace: fake_load_trace,
    generate: fake_generate,
    simulate_bounded: None,
};

/// A stop request as `stop` says; the process never ends (no test sets `--stop-grace`).
fn stopped_by<'a>(stop: &'a (dyn Fn() -> bool + Sync)) -> Stop<'a> {
    fn end_process(code: i32) -> ! {
        panic!("a test sweep tried to end the process with exit code {code}")
    }
    Stop {
        requested: stop,
        end_process,
    }
}

fn never() -> bool {
    false
}

struct Setup {
    dir: tempfile::TempDir,
    spec: PathBuf,
}

impl Setup {
    fn new(spec_text: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let spec = dir.path().join("grid.yaml");
        std::fs::write(&spec, spec_text).unwrap();
        Setup { dir, spec }
    }

    fn opts(&self, out: &str) -> SweepOptions {
        let mut o = SweepOptions::new(&self.spec);
        o.output = Some(self.dir.path().join(out));
        o.quiet = true;
        o
    }

    fn run(&self, o: &SweepOptions) -> Result<SweepOutcome, SweepError> {
        run_with(o, &BACKEND, &stopped_by(&never))
    }

    fn read(&self, out: &str, file: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(out).join(file)).unwrap()
    }
}

/// Every status: invalid (kv_router on one worker), skipped (max_gpus), infeasible (require),
/// failed (panic and error), ok.
const STATUS_SPEC: &str = r#"
name: statuses
workload: {input_tokens: 101, output_tokens: 10, request_count: 20, request_rate: 5}
constraints: {max_gpus: 6}
require: {p99_ttft_ms: {max: 1000}}
grid:
  topology:
    - {mode: aggregated, num_workers: [1, 4, 8]}
    - {mode: disaggregated, num_prefill_workers: [1], num_decode_workers: [2]}
  router_mode: [round_robin, kv_router]
  seed: [1, 666, 667]
"#;

fn csv_rows(text: &str) -> Vec<HashMap<String, String>> {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let headers: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    r.records()
        .map(|rec| {
            headers
                .iter()
                .cloned()
                .zip(rec.unwrap().iter().map(str::to_string))
                .collect()
        })
        .collect()
}

#[test]
fn every_status_end_to_end() {
    let s = Setup::new(STATUS_SPEC);
    let out = s.run(&s.opts("out")).unwrap();
    assert_eq!(out.points, 4 * 2 * 3);
    // Topology 0 (1 worker): kv_router invalid for all 3 seeds. Topology 2 (8 GPUs): skipped.
    assert_eq!(out.invalid, 3);
    assert_eq!(out.skipped, 6);
    // Of the 15 runnable points, seeds 666/667 fail: 10 failed, 5 ran.
    assert_eq!(out.failed, 10);
    assert_eq!(out.ok + out.infeasible, 5);
    assert_eq!(out.exit_code(), 1);
    let csv = s.read("out", CSV_FILE);
    let rows = csv_rows(&csv);
    assert_eq!(rows.len(), 24);
    let header = csv.lines().next().unwrap();
    assert!(
        header.starts_with("rank,point,status,feasible,pareto,reason,mode,num_workers,num_prefill_workers,num_decode_workers,router_mode,seed,gpus,"),
        "{header}"
    );
    assert!(header.contains("output_throughput_tok_s_per_gpu"));
    assert!(!header.contains("wall_time_ms") && !header.contains("processed_tokens_per_s"));
    let by_point: HashMap<u64, &HashMap<String, String>> = rows
        .iter()
        .map(|r| (r["point"].parse().unwrap(), r))
        .collect();
    // Point 3 = 1 worker, kv_router, seed 1.
    assert_eq!(by_point[&3]["status"], "invalid");
    assert!(by_point[&3]["reason"].contains("kv_router"));
    assert_eq!(by_point[&3]["rank"], "");
    // 8 workers -> skipped.
    assert_eq!(by_point[&12]["status"], "skipped");
    assert!(by_point[&12]["reason"].contains("needs 8 GPUs"));
    // 1 worker, round robin: p99_ttft = 3000 ms > 1000 -> infeasible.
    assert_eq!(by_point[&0]["status"], "infeasible");
    assert_eq!(by_point[&0]["feasible"], "false");
    assert!(by_point[&0]["reason"].contains("p99_ttft_ms 3000 > max 1000"));
    // Panic and error are failures with their message.
    assert_eq!(by_point[&1]["status"], "failed");
    assert!(by_point[&1]["reason"].contains("boom at seed 666"));
    assert_eq!(by_point[&2]["reason"], "dead end: nothing can be scheduled");
    // 4 workers, kv_router beats round robin; disaggregated comes after (1.5 x 2 decode workers).
    assert_eq!(by_point[&9]["rank"], "1");
    assert_eq!(by_point[&9]["status"], "ok");
    assert_eq!(by_point[&9]["gpus"], "4");
    // The CSV keeps 10 significant digits of each.
    let per_gpu: f64 = by_point[&9]["output_throughput_tok_s_per_gpu"]
        .parse()
        .unwrap();
    let total: f64 = by_point[&9]["output_throughput_tok_s"].parse().unwrap();
    assert!(
        (per_gpu * 4.0 / total - 1.0).abs() < 1e-9,
        "{per_gpu} {total}"
    );
    // Ranks: ok first, then infeasible; ranked rows come first in the file.
    let ranks: Vec<&str> = rows.iter().map(|r| r["rank"].as_str()).collect();
    assert_eq!(&ranks[..5], &["1", "2", "3", "4", "5"]);
    assert!(ranks[5..].iter().all(|r| r.is_empty()));
    let statuses: Vec<&str> = rows[..5].iter().map(|r| r["status"].as_str()).collect();
    assert_eq!(statuses, vec!["ok", "ok", "ok", "ok", "infeasible"]);
    // points.jsonl holds every point, leaderboard.json the same rows.
    let pts = read_points(&s.dir.path().join("out")).unwrap();
    assert_eq!(pts.records.len(), 24);
    let json: serde_json::Value = serde_json::from_str(&s.read("out", JSON_FILE)).unwrap();
    assert_eq!(json["rows"].as_array().unwrap().len(), 24);
    assert_eq!(json["rows"][0]["point"], 9);
    assert!(json["rows"][0]["report"]["wall_time_ms"].is_number());
    assert_eq!(json["name"], "statuses");
    assert_eq!(json["spec_sha256"].as_str().unwrap().len(), 64);
}

#[test]
fn same_leaderboard_for_any_jobs_and_across_runs() {
    let s = Setup::new(STATUS_SPEC);
    let mut o1 = s.opts("j1");
    o1.jobs = Some(1);
    let mut o2 = s.opts("j2");
    o2.jobs = Some(2);
    let mut o3 = s.opts("j2b");
    o3.jobs = Some(2);
    s.run(&o1).unwrap();
    s.run(&o2).unwrap();
    s.run(&o3).unwrap();
    let a = s.read("j1", CSV_FILE);
    assert_eq!(a, s.read("j2", CSV_FILE));
    assert_eq!(a, s.read("j2b", CSV_FILE));
}

#[test]
fn shards_merged_equal_one_whole_run() {
    let s = Setup::new(STATUS_SPEC);
    s.run(&s.opts("whole")).unwrap();
    let mut dirs = Vec::new();
    for k in 0..3 {
        let mut o = s.opts(&format!("shard{k}"));
        o.shard = Some((k, 3));
        let out = s.run(&o).unwrap();
        assert_eq!(out.points, 8);
        let ids: Vec<u64> = read_points(&s.dir.path().join(format!("shard{k}")))
            .unwrap()
            .records
            .iter()
            .map(|r| r.point)
            .collect();
        assert!(ids.iter().all(|id| id % 3 == k as u64), "{ids:?}");
        dirs.push(s.dir.path().join(format!("shard{k}")));
    }
    let merged = s.dir.path().join("merged");
    let (n, missing) = merge::merge_dirs(&dirs, &merged, true).unwrap();
    assert_eq!((n, missing.len()), (24, 0));
    assert_eq!(s.read("whole", CSV_FILE), s.read("merged", CSV_FILE));
    // Merging again into the same folder is allowed; a missing shard is reported.
    let (n, missing) = merge::merge_dirs(&dirs[..2], &merged, true).unwrap();
    assert_eq!(n, 16);
    assert_eq!(missing, vec![2, 5, 8, 11, 14, 17, 20, 23]);
    // Into an input folder: refused.
    assert!(merge::merge_dirs(&dirs, &dirs[0], true).is_err());
}

#[test]
fn merge_refuses_conflicts_and_other_specs() {
    let s = Setup::new(STATUS_SPEC);
    let mut o = s.opts("a");
    o.shard = Some((0, 2));
    s.run(&o).unwrap();
    // A copy of shard a whose point 0 has a different report: a conflicting duplicate.
    let a = s.dir.path().join("a");
    let b = s.dir.path().join("b");
    std::fs::create_dir_all(&b).unwrap();
    for f in ["spec.yaml", "sweep.json"] {
        std::fs::copy(a.join(f), b.join(f)).unwrap();
    }
    let text = std::fs::read_to_string(a.join(POINTS_FILE)).unwrap();
    let mut lines: Vec<PointRecord> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Identical duplicates (wall time aside) merge fine.
    for r in &mut lines {
        if let Some(rep) = r.report.as_mut() {
            rep.insert("wall_time_ms".into(), serde_json::json!(123456.0));
        }
    }
    let write = |recs: &[PointRecord]| {
        let body: String = recs
            .iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect();
        std::fs::write(b.join(POINTS_FILE), body).unwrap();
    };
    write(&lines);
    assert!(merge::merge_dirs(&[a.clone(), b.clone()], &s.dir.path().join("m1"), true).is_ok());
    let ran = lines.iter().position(|r| r.status.ran()).unwrap();
    lines[ran]
        .report
        .as_mut()
        .unwrap()
        .insert("output_throughput_tok_s".into(), serde_json::json!(1.0));
    write(&lines);
    let e = merge::merge_dirs(&[a.clone(), b.clone()], &s.dir.path().join("m2"), true).unwrap_err();
    assert!(
        e.to_string()
            .contains(&format!("point {} differs", lines[ran].point)),
        "{e}"
    );
    assert_eq!(e.exit_code(), 2);
    // A shard of another spec.
    let other = Setup::new(&STATUS_SPEC.replace("max_gpus: 6", "max_gpus: 7"));
    other.run(&other.opts("c")).unwrap();
    let e = merge::merge_dirs(
        &[a.clone(), other.dir.path().join("c")],
        &s.dir.path().join("m3"),
        true,
    )
    .unwrap_err();
    assert!(e.to_string().contains("different specs"), "{e}");
    // Not a sweep folder.
    let e = merge::merge_dirs(
        &[s.dir.path().to_path_buf()],
        &s.dir.path().join("m4"),
        true,
    )
    .unwrap_err();
    assert!(e.to_string().contains("not a sweep output folder"), "{e}");
}

#[test]
fn interrupted_then_resumed_equals_a_whole_run() {
    let s = Setup::new(STATUS_SPEC);
    s.run(&s.opts("whole")).unwrap();
    let mut o = s.opts("out");
    o.jobs = Some(1);
    // One check before running, then one before each point: stop after three points.
    let calls = AtomicUsize::new(0);
    let stop = || calls.fetch_add(1, Ordering::SeqCst) >= 4;
    let out = run_with(&o, &BACKEND, &stopped_by(&stop)).unwrap();
    assert!(out.interrupted);
    assert_eq!(out.exit_code(), 130);
    let simulated = out.ok + out.infeasible + out.failed;
    assert_eq!(simulated, 3);
    let ran_before = out.ok + out.infeasible;
    assert_eq!(out.not_run, 15 - 3);
    // The leaderboard lists what finished (plus skipped and invalid points).
    assert_eq!(csv_rows(&s.read("out", CSV_FILE)).len(), 3 + 9);
    // Without --resume the folder is refused.
    let e = s.run(&o).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("not empty"), "{e}");
    // A SIGKILL in the middle of a line.
    let points = s.dir.path().join("out").join(POINTS_FILE);
    let mut text = std::fs::read_to_string(&points).unwrap();
    text.push_str("{\"point\": 23, \"hash\": \"ab");
    std::fs::write(&points, text).unwrap();
    o.resume = true;
    let out = s.run(&o).unwrap();
    assert!(!out.interrupted);
    // Ok/infeasible points are reused, failed ones run again.
    assert_eq!(out.reused, ran_before);
    assert_eq!(out.points, 24);
    let pts = read_points(&s.dir.path().join("out")).unwrap();
    assert!(!pts.truncated_tail && pts.bad_lines.is_empty());
    assert_eq!(pts.records.len(), 24);
    assert_eq!(s.read("whole", CSV_FILE), s.read("out", CSV_FILE));
    // Resuming a complete run simulates nothing.
    let again = s.run(&o).unwrap();
    assert_eq!(again.reused, 5);
    assert_eq!(s.read("whole", CSV_FILE), s.read("out", CSV_FILE));
}

#[test]
fn resume_reclassifies_with_the_current_require() {
    let s = Setup::new(STATUS_SPEC);
    let mut o = s.opts("out");
    s.run(&o).unwrap();
    std::fs::write(&s.spec, STATUS_SPEC.replace("max: 1000", "max: 100000")).unwrap();
    o.resume = true;
    let out = s.run(&o).unwrap();
    assert_eq!(out.reused, 5);
    assert_eq!(out.infeasible, 0);
    assert_eq!(out.ok, 5);
}

#[test]
fn each_distinct_workload_is_loaded_once() {
    // input_tokens 7777 is unique to this test. Block size matters for synthetic workloads.
    let s = Setup::new(
        "workload: {input_tokens: 7777, output_tokens: 10, request_count: 3, replay_concurrency: 2}\n\
         grid:\n  num_workers: [1, 2, 3]\n  engine.block_size: [16, 32]\n  workload.replay_concurrency: [1, 2]\n",
    );
    let out = s.run(&s.opts("out")).unwrap();
    assert_eq!(out.ok, 12);
    assert_eq!(GENERATED.lock().unwrap().as_ref().unwrap()[&7777], 2);
}

#[test]
fn trace_workloads_are_hashed_and_loaded() {
    let s = Setup::new("workload: {trace: t.jsonl}\ngrid:\n  num_workers: [1, 2]\n");
    std::fs::write(s.dir.path().join("t.jsonl"), "{}\n{}\n").unwrap();
    let out = s.run(&s.opts("out")).unwrap();
    assert_eq!(out.ok, 2);
    let json: serde_json::Value = serde_json::from_str(&s.read("out", JSON_FILE)).unwrap();
    let sha = super::record::file_sha256(&s.dir.path().join("t.jsonl")).unwrap();
    assert_eq!(json["trace_sha256"], sha.as_str());
    assert_eq!(json["rows"][0]["report"]["completed_requests"], 2);
    // A trace the loader refuses is a spec error, found before any point runs.
    std::fs::write(s.dir.path().join("t.jsonl"), "bad\n").unwrap();
    let e = s.run(&s.opts("out2")).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("missing output_length"), "{e}");
    assert!(!s.dir.path().join("out2").exists());
}

#[test]
fn dry_run_lists_points_and_writes_nothing() {
    let s = Setup::new(STATUS_SPEC);
    let mut o = s.opts("out");
    o.dry_run = true;
    let out = s.run(&o).unwrap();
    assert_eq!(
        (out.points, out.invalid, out.skipped, out.not_run),
        (24, 3, 6, 15)
    );
    assert_eq!(out.exit_code(), 0);
    assert!(!s.dir.path().join("out").exists());
    let spec = spec::load_spec(&s.spec).unwrap();
    let points = expand::resolve_points(&spec, 24, None).unwrap();
    let text = expand::dry_run_text(&points, 24, None);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 25);
    assert_eq!(
        lines[0],
        " 0           mode=aggregated num_workers=1 router_mode=round_robin seed=1"
    );
    assert!(
        lines[3].starts_with(
            " 3  invalid  mode=aggregated num_workers=1 router_mode=kv_router seed=1  ("
        ),
        "{}",
        lines[3]
    );
    assert_eq!(lines[24], "24 points: 15 to run, 6 skipped, 3 invalid");
    let shard = expand::resolve_points(&spec, 24, Some((1, 4))).unwrap();
    assert_eq!(
        shard.iter().map(|p| p.id).collect::<Vec<_>>(),
        vec![1, 5, 9, 13, 17, 21]
    );
    assert!(expand::dry_run_text(&shard, 24, Some((1, 4)))
        .ends_with("6 points in shard 1/4 of a 24-point grid: 3 to run, 2 skipped, 1 invalid\n"));
}

#[test]
fn max_points_is_checked_before_expanding() {
    let mut text = String::from("workload: {trace: t.jsonl}\ngrid:\n");
    for i in 0..9 {
        text.push_str(&format!("  engine.k{i}: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"));
    }
    let s = Setup::new(&text);
    std::fs::write(s.dir.path().join("t.jsonl"), "{}\n").unwrap();
    let mut o = s.opts("out");
    o.dry_run = true;
    let e = s.run(&o).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(
        e.to_string().contains("the grid has 1000000000 points"),
        "{e}"
    );
    assert!(e.to_string().contains("above --max-points 1000000"), "{e}");
    let s2 = Setup::new(STATUS_SPEC);
    let mut o = s2.opts("out");
    o.max_points = 23;
    let e = s2.run(&o).unwrap_err();
    assert!(
        e.to_string()
            .contains("24 points (topology 4 x router_mode 2 x seed 3)"),
        "{e}"
    );
    o.max_points = 24;
    o.dry_run = true;
    assert!(s2.run(&o).is_ok());
}

#[test]
fn spec_errors_stop_before_anything_runs() {
    let cases = [
        ("workload: {trace: missing.jsonl}\n", "does not exist"),
        ("wrkload: {}\n", "did you mean `workload`?"),
        (
            "workload: {input_tokens: 1, output_tokens: 1, request_count: 1, request_rate: 1}\ngrid:\n  engine.max_num_seq: [1]\n",
            "max_num_seq",
        ),
        ("workload: {input_tokens: 1, output_tokens: 1, request_count: 1}\n", "exactly one of"),
        ("workload: {input_tokens: 1\n", "invalid YAML"),
    ];
    for (text, want) in cases {
        let s = Setup::new(text);
        let e = s.run(&s.opts("out")).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{text}");
        assert!(e.to_string().contains(want), "{text}: {e}");
        assert!(!s.dir.path().join("out").exists());
    }
}

#[test]
fn output_folder_checks() {
    let s = Setup::new(STATUS_SPEC);
    // A folder under a regular file cannot be created.
    std::fs::write(s.dir.path().join("file"), "x").unwrap();
    let e = s.run(&s.opts("file/out")).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(
        e.to_string().contains("cannot write to output folder"),
        "{e}"
    );
    let e = s.run(&s.opts("file")).unwrap_err();
    assert!(e.to_string().contains("is a file"), "{e}");
    // Bad shard.
    let mut o = s.opts("out");
    o.shard = Some((3, 3));
    assert_eq!(s.run(&o).unwrap_err().exit_code(), 2);
    // Default folder names.
    let spec = spec::load_spec(&s.spec).unwrap();
    assert_eq!(spec.name, "statuses");
}

#[test]
fn shard_option_parsing() {
    assert_eq!(parse_shard("0/4"), Ok((0, 4)));
    assert_eq!(parse_shard("3/4"), Ok((3, 4)));
    assert!(parse_shard("4/4").is_err());
    assert!(parse_shard("1/0").is_err());
    assert!(parse_shard("1").is_err());
    assert!(parse_shard("a/b").is_err());
}

#[test]
fn outcome_exit_codes() {
    let mut o = SweepOutcome::default();
    assert_eq!(o.exit_code(), 0);
    o.invalid = 3;
    o.skipped = 1;
    o.infeasible = 2;
    assert_eq!(o.exit_code(), 0);
    o.failed = 1;
    assert_eq!(o.exit_code(), 1);
    o.interrupted = true;
    assert_eq!(o.exit_code(), 130);
    assert!(o.summary().contains("interrupted"));
}

#[test]
fn failed_records_have_no_report_and_ok_ones_do() {
    let s = Setup::new(STATUS_SPEC);
    s.run(&s.opts("out")).unwrap();
    for r in read_points(&s.dir.path().join("out")).unwrap().records {
        assert_eq!(r.report.is_some(), r.status.ran(), "point {}", r.point);
        assert_eq!(r.hash.len(), 64);
        assert!(r.configuration.is_some());
        if r.status == Status::Ok {
            assert!(r.reason.as_deref().is_none_or(crate::sweep::served::warns));
        }
    }
}

#[test]
fn a_shard_refuses_a_spec_error_in_another_shards_point() {
    let s = Setup::new(
        "workload: {input_tokens: 5, output_tokens: 1, request_count: 1, request_rate: 1}\n\
         grid:\n  engine.dp_size: [1, 0]\n",
    );
    let mut o = s.opts("out");
    o.shard = Some((0, 2));
    let e = s.run(&o).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("point 1 (engine.dp_size=0)"), "{e}");
}

#[test]
fn interrupted_before_any_point_leaves_no_folder() {
    let s = Setup::new(STATUS_SPEC);
    let out = run_with(&s.opts("out"), &BACKEND, &stopped_by(&|| true)).unwrap();
    assert!(out.interrupted);
    assert_eq!(out.exit_code(), 130);
    assert!(!s.dir.path().join("out").exists());
}

#[test]
fn results_that_cannot_be_held_in_memory_are_refused_before_running() {
    let spec = spec::parse_spec(STATUS_SPEC, Path::new("grid.yaml")).unwrap();
    let total = expand::checked_size(&spec, DEFAULT_MAX_POINTS).unwrap();
    let points = expand::resolve_points(&spec, total, None).unwrap();
    assert_eq!(points.len(), 24);
    // 24 points fit in a megabyte...
    assert!(grid::check_results_fit(&spec, &points, 1 << 20).is_ok());
    // ...not in 100 KiB: refused with the numbers and the way out.
    let e = grid::check_results_fit(&spec, &points, 100 << 10).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    let m = e.to_string();
    assert!(
        m.contains("the 24 points of this run")
            && m.contains("40.0 KiB per simulated point")
            && m.contains("100.0 KiB")
            && m.contains("--shard K/")
            && m.contains("dynosim merge"),
        "{m}"
    );
    // A shard holds only its own points.
    let shard = expand::resolve_points(&spec, total, Some((0, 8))).unwrap();
    assert_eq!(shard.len(), 3);
    assert!(grid::check_results_fit(&spec, &shard, 200 << 10).is_ok());
}

#[test]
fn merges_that_cannot_be_held_in_memory_are_refused() {
    assert!(merge::check_merge_fits(100 << 20, 8 << 30).is_ok());
    let e = merge::check_merge_fits(2 << 30, 8 << 30).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    let m = e.to_string();
    assert!(
        m.contains("2.0 GiB of points.jsonl")
            && m.contains("about 20.0 GiB")
            && m.contains("8.0 GiB"),
        "{m}"
    );
}

/// The specs a folder sees in `no_finished_point_is_ever_lost`: overlapping grids, one that skips
/// points the others ran, one with other seeds (other configurations altogether).
fn resume_spec(i: usize) -> String {
    let (workers, extra) = match i {
        0 => ("[1, 2, 4]", ""),
        1 => ("[2, 4, 8]", ""),
        2 => ("[1, 2, 4, 8]", "constraints: {max_gpus: 2}\n"),
        _ => ("[1, 2]", "seed: 7\n"),
    };
    format!(
        "name: resume{i}\n{extra}workload: {{input_tokens: 131, output_tokens: 10, request_count: 20, request_rate: 5}}\n\
         grid:\n  num_workers: {workers}\n  router_mode: [round_robin, kv_router]\n"
    )
}

/// Finished points of a folder by configuration hash, from `points.jsonl` and the archive.
fn finished_points(dir: &std::path::Path) -> HashMap<String, serde_json::Value> {
    let mut out = HashMap::new();
    for r in super::archive::read_previous(dir).unwrap().records {
        out.insert(
            r.hash.clone(),
            serde_json::to_value(r.stable_report()).unwrap(),
        );
    }
    out
}

#[derive(Debug, Clone)]
struct ResumeStep {
    spec: usize,
    /// Stop (like Ctrl-C) after this many checks of the stop flag.
    stop_after: Option<usize>,
    shard: Option<(u32, u32)>,
    /// Then a kill in the middle of a line of points.jsonl.
    cut_line: bool,
}

fn resume_step() -> impl proptest::strategy::Strategy<Value = ResumeStep> {
    use proptest::prelude::*;
    (
        0..4usize,
        proptest::option::of(0..8usize),
        proptest::option::of((0..2u32).prop_map(|k| (k, 2))),
        any::<bool>(),
    )
        .prop_map(|(spec, stop_after, shard, cut_line)| ResumeStep {
            spec,
            stop_after,
            shard,
            cut_line,
        })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, ..Default::default() })]

    /// Any sequence of resumed runs (other specs, shards, interrupts, kills mid-line) into one
    /// folder keeps every finished point it ever held, with the same report; the leaderboards
    /// always cover the current spec's points; a full uninterrupted run equals a fresh one.
    #[test]
    fn no_finished_point_is_ever_lost(steps in proptest::collection::vec(resume_step(), 1..7)) {
        let s = Setup::new(&resume_spec(0));
        let specs: Vec<PathBuf> = (0..4)
            .map(|i| {
                let p = s.dir.path().join(format!("spec{i}.yaml"));
                std::fs::write(&p, resume_spec(i)).unwrap();
                p
            })
            .collect();
        let dir = s.dir.path().join("out");
        let mut ever: HashMap<String, serde_json::Value> = HashMap::new();
        for step in &steps {
            let mut o = SweepOptions::new(&specs[step.spec]);
            o.output = Some(dir.clone());
            o.quiet = true;
            o.resume = true;
            o.jobs = Some(1);
            o.shard = step.shard;
            let calls = AtomicUsize::new(0);
            let stop = || step.stop_after.is_some_and(|n| calls.fetch_add(1, Ordering::SeqCst) >= n);
            let out = run_with(&o, &BACKEND, &stopped_by(&stop)).unwrap();
            if out.output.is_some() {
                let rows = csv_rows(&std::fs::read_to_string(dir.join(CSV_FILE)).unwrap());
                let pts = read_points(&dir).unwrap().records;
                proptest::prop_assert_eq!(rows.len(), pts.len());
                proptest::prop_assert!(pts.iter().all(|r| step.shard.is_none_or(|(k, n)| r.point % n as u64 == k as u64)));
                if !out.interrupted && step.shard.is_none() {
                    let mut fresh = SweepOptions::new(&specs[step.spec]);
                    fresh.output = Some(s.dir.path().join("fresh"));
                    fresh.quiet = true;
                    let _ = std::fs::remove_dir_all(s.dir.path().join("fresh"));
                    run_with(&fresh, &BACKEND, &stopped_by(&never)).unwrap();
                    proptest::prop_assert_eq!(
                        std::fs::read_to_string(dir.join(CSV_FILE)).unwrap(),
                        s.read("fresh", CSV_FILE)
                    );
                }
            }
            if step.cut_line && dir.join(POINTS_FILE).exists() {
                let mut f = std::fs::OpenOptions::new().append(true).open(dir.join(POINTS_FILE)).unwrap();
                std::io::Write::write_all(&mut f, b"{\"point\": 3, \"hash\": \"ab").unwrap();
            }
            let now = finished_points(&dir);
            for (hash, report) in &ever {
                proptest::prop_assert_eq!(now.get(hash), Some(report), "lost {} after {:?}", hash, step);
            }
            ever = now;
        }
    }
}

#[test]
fn resume_into_another_specs_folder_archives_and_says_so() {
    let s = Setup::new(&resume_spec(0));
    let other = s.dir.path().join("other.yaml");
    std::fs::write(&other, resume_spec(3)).unwrap();
    s.run(&s.opts("out")).unwrap();
    let first = finished_points(&s.dir.path().join("out"));
    assert_eq!(first.len(), 5); // kv_router on one worker is invalid
    let mut o = s.opts("out");
    o.spec = other.clone();
    o.resume = true;
    let out = s.run(&o).unwrap();
    assert_eq!(out.reused, 0);
    let dir = s.dir.path().join("out");
    // The old points are in the archive, the old spec beside it, the leaderboards are the new
    // grid's only.
    let archive = read_points_file(&dir.join(super::archive::ARCHIVE_FILE));
    assert_eq!(archive.len(), 5);
    let old_sha = spec::load_spec(&s.spec).unwrap().sha256;
    assert_eq!(
        std::fs::read_to_string(dir.join(format!("spec-archive-{}.yaml", &old_sha[..12]))).unwrap(),
        resume_spec(0)
    );
    assert_eq!(csv_rows(&s.read("out", CSV_FILE)).len(), 4);
    // Back to the first spec: its points come back from the archive, nothing runs.
    let mut o = s.opts("out");
    o.resume = true;
    let out = s.run(&o).unwrap();
    assert_eq!(out.reused, 5);
    let mut fresh = s.opts("fresh");
    fresh.resume = false;
    s.run(&fresh).unwrap();
    assert_eq!(s.read("out", CSV_FILE), s.read("fresh", CSV_FILE));
    assert_eq!(finished_points(&dir).len(), 5 + 3);
}

fn read_points_file(path: &std::path::Path) -> Vec<PointRecord> {
    super::record::parse_points(&std::fs::read_to_string(path).unwrap()).records
}

#[test]
fn a_merge_with_missing_points_is_marked_partial() {
    let s = Setup::new(STATUS_SPEC);
    let mut dirs = Vec::new();
    for k in 0..3 {
        let mut o = s.opts(&format!("shard{k}"));
        o.shard = Some((k, 3));
        s.run(&o).unwrap();
        dirs.push(s.dir.path().join(format!("shard{k}")));
    }
    let merged = s.dir.path().join("merged");
    assert_eq!(merge(&dirs[..2], &merged, false).unwrap(), 3);
    let missing = s.read("merged", merge::MISSING_FILE);
    assert_eq!(missing, "2\n5\n8\n11\n14\n17\n20\n23\n");
    let json: serde_json::Value = serde_json::from_str(&s.read("merged", JSON_FILE)).unwrap();
    assert_eq!(json["partial"], true);
    assert_eq!(json["missing_points"][0], 2);
    assert_eq!(merge(&dirs[..2], &merged, true).unwrap(), 0);
    assert!(merged.join(merge::MISSING_FILE).exists());
    // Complete: the mark goes.
    assert_eq!(merge(&dirs, &merged, false).unwrap(), 0);
    assert!(!merged.join(merge::MISSING_FILE).exists());
    let json: serde_json::Value = serde_json::from_str(&s.read("merged", JSON_FILE)).unwrap();
    assert!(json.get("partial").is_none() && json.get("missing_points").is_none());
}
