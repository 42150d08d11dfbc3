//! Sweep features that decide which simulations run and how rows compare: early stop on
//! `require` bounds, capacity search, grouped ranking and duplicate points. Driven through the
//! binary, as users call them.

use assert_cmd::Command;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn dynosim() -> Command {
    Command::cargo_bin("dynosim").expect("the dynosim binary")
}

fn data(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(rel)
        .display()
        .to_string()
}

fn write_spec(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn read(p: impl AsRef<Path>) -> String {
    std::fs::read_to_string(p.as_ref()).unwrap_or_else(|e| panic!("{}: {e}", p.as_ref().display()))
}

/// The rows of a leaderboard CSV, by point id.
fn rows(dir: &Path) -> BTreeMap<u64, BTreeMap<String, String>> {
    let text = read(dir.join("leaderboard.csv"));
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    r.records()
        .map(|rec| {
            let row: BTreeMap<String, String> = header
                .iter()
                .cloned()
                .zip(rec.unwrap().iter().map(str::to_string))
                .collect();
            (row["point"].parse().unwrap(), row)
        })
        .collect()
}

fn sweep(spec: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "sweep",
        spec.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--quiet",
    ];
    args.extend_from_slice(extra);
    dynosim().args(&args).output().unwrap()
}

fn sweep_ok(spec: &Path, out: &Path, extra: &[&str]) {
    let o = sweep(spec, out, extra);
    assert!(
        o.status.success(),
        "sweep failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Early stop never changes a status: every point is `ok` or `infeasible` exactly as when run
/// to the end, on bounds of every kind it can stop on (percentiles, max and means of TTFT,
/// end-to-end latency and ITL), on a trace and on synthetic workloads.
#[test]
fn early_stop_keeps_every_status() {
    let trace = data("tests/data/traces/conv_2k.jsonl.gz");
    let specs = [
        format!(
            "workload: {{trace: {trace}, trace_block_size: 512}}\n\
             engine: {{block_size: 64}}\n\
             grid:\n  workload.arrival_speedup_ratio: [1, 4, 16]\n  num_workers: [1, 2]\n\
             require: {{p99_ttft_ms: {{max: 2000}}, mean_itl_ms: {{max: 40}}}}\n"
        ),
        format!(
            "workload: {{trace: {trace}, trace_block_size: 512}}\n\
             engine: {{block_size: 64}}\n\
             grid:\n  workload.arrival_speedup_ratio: [2, 8]\n  num_workers: [1, 2]\n  router_mode: [round_robin, kv_router]\n\
             require: {{mean_ttft_ms: {{max: 1500}}, max_e2e_latency_ms: {{max: 60000}}}}\n"
        ),
        "workload: {input_tokens: 2048, output_tokens: 64, request_count: 300}\n\
         grid:\n  workload.request_rate: [2, 8, 32]\n  num_workers: [1, 2]\n\
         require: {median_e2e_latency_ms: {max: 3000}, p90_ttft_ms: {max: 800}}\n"
            .to_string(),
        "workload: {input_tokens: 512, output_tokens: 128, request_count: 200}\n\
         grid:\n  workload.request_rate: [4, 64]\n  engine.max_num_seqs: [8, 256]\n\
         require: {mean_itl_ms: {max: 20}, mean_e2e_latency_ms: {max: 4000}}\n"
            .to_string(),
    ];
    let dir = tempfile::tempdir().unwrap();
    let mut stopped = 0;
    for (i, text) in specs.iter().enumerate() {
        let spec = write_spec(dir.path(), &format!("s{i}.yaml"), text);
        let early = dir.path().join(format!("early{i}"));
        let full = dir.path().join(format!("full{i}"));
        sweep_ok(&spec, &early, &[]);
        sweep_ok(&spec, &full, &["--no-early-stop"]);
        let (a, b) = (rows(&early), rows(&full));
        assert_eq!(a.len(), b.len());
        for (id, ra) in &a {
            let rb = &b[id];
            assert_eq!(
                ra["status"], rb["status"],
                "spec {i} point {id}: {ra:?} vs {rb:?}"
            );
            if ra["reason"].contains("stopped early") {
                stopped += 1;
                assert_eq!(ra["status"], "infeasible");
                // No partial values presented as results.
                let cell = |k: &str| ra.get(k).map(String::as_str).unwrap_or("");
                assert_eq!(cell("mean_ttft_ms"), "", "spec {i} point {id}");
                assert_eq!(cell("request_throughput_rps"), "");
            } else if matches!(ra["status"].as_str(), "ok" | "infeasible") {
                assert_eq!(ra.get("mean_ttft_ms"), rb.get("mean_ttft_ms"));
            }
        }
    }
    assert!(stopped >= 4, "only {stopped} points stopped early");
}
