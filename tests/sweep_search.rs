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

/// A float as `leaderboard.csv` writes it.
fn csv10(x: f64) -> String {
    dynosim::sweep::values::float_sig(x, dynosim::sweep::values::CSV_SIGNIFICANT_DIGITS)
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
                // What is kept: the bound's metric, a proven lower bound above the bound and
                // at most the full run's value, and when it stopped.
                let metric = cell("stopped_metric");
                assert!(
                    ra["reason"].starts_with(&format!("{metric} > max ")),
                    "{ra:?}"
                );
                let bound: f64 = ra["reason"]
                    .split_whitespace()
                    .nth(3)
                    .and_then(|x| x.parse().ok())
                    .unwrap_or_else(|| panic!("{ra:?}"));
                let proven: f64 = cell("stopped_proven_min_ms").parse().unwrap();
                let full: f64 = rb[metric].parse().unwrap();
                assert!(
                    proven > bound && proven <= full * (1.0 + 1e-9),
                    "spec {i} point {id}: proven {proven}, bound {bound}, full run {full}"
                );
                let at: f64 = cell("stopped_at_ms").parse().unwrap();
                assert!(at > 0.0, "{ra:?}");
            } else if matches!(ra["status"].as_str(), "ok" | "infeasible") {
                assert_eq!(ra.get("mean_ttft_ms"), rb.get("mean_ttft_ms"));
                assert_eq!(
                    ra.get("stopped_metric").map(String::as_str).unwrap_or(""),
                    ""
                );
            } else if matches!(ra["status"].as_str(), "ok" | "infeasible") {
                assert_eq!(ra.get("mean_ttft_ms"), rb.get("mean_ttft_ms"));
            }
        }
    }
    assert!(stopped >= 4, "only {stopped} points stopped early");
}

/// A stopped point stays visible in report.html (its proven bound on the chart of points
/// stopped early), and `early_stop: false` in the spec runs every point to the end, exactly as
/// `--no-early-stop` does; a value that is not a boolean is refused with its path.
#[test]
fn near_misses_stay_visible_and_early_stop_false_runs_to_the_end() {
    let trace = data("tests/data/traces/conv_2k.jsonl.gz");
    let text = format!(
        "workload: {{trace: {trace}, trace_block_size: 512}}\n\
         engine: {{block_size: 64}}\n\
         grid:\n  workload.arrival_speedup_ratio: [1, 16]\n  num_workers: [1, 2]\n\
         require: {{p99_ttft_ms: {{max: 2000}}}}\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(dir.path(), "s.yaml", &text);
    let early = dir.path().join("early");
    sweep_ok(&spec, &early, &[]);
    let board = rows(&early);
    let stopped: Vec<u64> = board
        .iter()
        .filter(|(_, r)| r["stopped_metric"] == "p99_ttft_ms")
        .map(|(id, _)| *id)
        .collect();
    assert!(!stopped.is_empty(), "{board:?}");
    let html = read(early.join("report.html"));
    assert!(
        html.contains("<h3>Stopped early</h3>"),
        "no stopped-early chart"
    );
    assert!(html.contains("id=\"stopped\""));
    assert!(html.contains("stopped early: the metric is at least this"));
    for id in &stopped {
        assert!(html.contains(&format!("#{id} p99_ttft_ms")), "point {id}");
    }

    let full = dir.path().join("full");
    sweep_ok(&spec, &full, &["--no-early-stop"]);
    let off = write_spec(
        dir.path(),
        "off.yaml",
        &format!("{text}early_stop: false\n"),
    );
    let by_key = dir.path().join("off");
    sweep_ok(&off, &by_key, &[]);
    assert_eq!(
        read(full.join("leaderboard.csv")),
        read(by_key.join("leaderboard.csv"))
    );
    assert!(!read(by_key.join("leaderboard.csv")).contains("stopped_metric"));

    let bad = write_spec(
        dir.path(),
        "bad.yaml",
        &format!("{text}early_stop: no_thanks\n"),
    );
    let o = sweep(&bad, &dir.path().join("bad"), &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("early_stop: expected true or false"), "{err}");
}

const SEARCH_SPEC: &str = "workload: {input_tokens: 1024, output_tokens: 32, request_count: 200}
grid:
  num_workers: [1, 2, 4]
require: {p99_ttft_ms: {max: 300}}
search:
  capacity: {knob: workload.request_rate, low: 0.5, high: 400, precision: 0.05}
";

/// Capacity search: each point's capacity meets the bounds and the bracket's top misses them,
/// within the precision; the result is the same on any thread count, from shards merged, and
/// after `--resume`, which simulates nothing again.
#[test]
fn capacity_search_brackets_each_point() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(dir.path(), "s.yaml", SEARCH_SPEC);
    let a = dir.path().join("a");
    sweep_ok(&spec, &a, &["-j", "2"]);
    let board = rows(&a);
    let probes = read(a.join("probes.jsonl"));
    let probes: Vec<serde_json::Value> = probes
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut total = 0;
    for (id, r) in &board {
        assert_eq!(r["status"], "ok", "{r:?}");
        let cap: f64 = r["capacity"].parse().unwrap();
        let high: f64 = r["capacity_bracket_high"].parse().unwrap();
        assert!(cap < high && (high - cap) / cap <= 0.05, "{cap} {high}");
        total += r["probes"].parse::<usize>().unwrap();
        // The row's metrics are those of the probe at capacity, which met the bound.
        // The CSV writes floats to 10 significant digits: a probe matches a cell when it reads
        // the same written that way.
        let at = |v: f64| {
            probes
                .iter()
                .find(|p| p["point"] == *id && p["value"].as_f64().map(csv10) == Some(csv10(v)))
                .unwrap_or_else(|| panic!("no probe of point {id} at {v}"))
        };
        assert_eq!(at(cap)["met"], true);
        assert_eq!(at(high)["met"], false);
        assert_eq!(
            r["p99_ttft_ms"],
            csv10(at(cap)["report"]["p99_ttft_ms"].as_f64().unwrap())
        );
        assert!(r["p99_ttft_ms"].parse::<f64>().unwrap() <= 300.0);
        assert!(r["reason"].starts_with("at workload.request_rate = "));
        assert!(r["request_throughput_rps_per_gpu"].parse::<f64>().unwrap() > 0.0);
    }
    assert_eq!(probes.len(), total);
    // More workers carry more load.
    let cap = |id: u64| board[&id]["capacity"].parse::<f64>().unwrap();
    assert!(cap(0) < cap(1) && cap(1) < cap(2));

    let csv = read(a.join("leaderboard.csv"));
    let b = dir.path().join("b");
    sweep_ok(&spec, &b, &["-j", "1"]);
    assert_eq!(read(b.join("leaderboard.csv")), csv);
    // Shards and merge.
    for k in 0..2 {
        sweep_ok(
            &spec,
            &dir.path().join(format!("sh{k}")),
            &["--shard", &format!("{k}/2")],
        );
    }
    let m = dir.path().join("m");
    let o = dynosim()
        .args(["merge", "-o", m.to_str().unwrap()])
        .args([dir.path().join("sh0"), dir.path().join("sh1")])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(read(m.join("leaderboard.csv")), csv);
    // The merged folder has every probe, so resuming there simulates nothing either.
    let merged_probes = read(m.join("probes.jsonl"));
    assert_eq!(merged_probes.lines().count(), total);
    sweep_ok(&spec, &m, &["--resume"]);
    assert_eq!(read(m.join("probes.jsonl")), merged_probes);
    assert_eq!(read(m.join("leaderboard.csv")), csv);
    // Resume: every probe is reused.
    let before = read(a.join("probes.jsonl"));
    sweep_ok(&spec, &a, &["--resume"]);
    assert_eq!(read(a.join("probes.jsonl")), before);
    assert_eq!(read(a.join("leaderboard.csv")), csv);
}

/// A point that misses a bound at `low` is `below_range`, one that meets every bound at `high`
/// is `above_range`; the console table shows the capacity and bracket.
#[test]
fn capacity_outside_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let text = SEARCH_SPEC
        .replace("num_workers: [1, 2, 4]", "num_workers: [1, 4]")
        .replace("low: 0.5, high: 400", "low: 40, high: 100");
    let spec = write_spec(dir.path(), "s.yaml", &text);
    let out = dir.path().join("o");
    let o = dynosim()
        .args(["sweep", spec.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success());
    let stdout = String::from_utf8(o.stdout).unwrap();
    // Long headers wrap at underscores; the last header line (the one starting with `rank`)
    // ends each name: the capacity, its bracket and the per-GPU throughput come first.
    let header = stdout
        .lines()
        .find(|l| l.starts_with("rank"))
        .unwrap_or_else(|| panic!("{stdout}"));
    let words: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(
        words[5..8],
        ["capacity", "bracket_high", "rps_per_gpu"],
        "{stdout}"
    );
    assert!(
        stdout.contains("capacity_") && stdout.contains("request_"),
        "{stdout}"
    );
    let board = rows(&out);
    assert_eq!(board[&0]["status"], "below_range");
    assert_eq!(board[&0]["capacity"], "");
    assert_eq!(board[&0]["capacity_bracket_high"], "40");
    assert!(board[&0]["reason"].starts_with("misses a bound even at low 40: p99_ttft_ms"));
    assert_eq!(board[&1]["status"], "above_range");
    assert_eq!(board[&1]["capacity"], "100");
    assert_eq!(board[&1]["capacity_bracket_high"], "");
    assert_eq!(board[&1]["rank"], "1");
    let html = read(out.join("report.html"));
    assert!(html.contains("1 below_range, 1 above_range"), "counts");
    assert!(
        html.contains("The search varied <code>workload.request_rate</code> from 40 to 100"),
        "knob and range"
    );

    // Every point below the range: the report says why instead of an empty page.
    let text = SEARCH_SPEC
        .replace("num_workers: [1, 2, 4]", "num_workers: [1]")
        .replace("low: 0.5, high: 400", "low: 200, high: 400");
    let spec = write_spec(dir.path(), "low.yaml", &text);
    let out = dir.path().join("low");
    sweep_ok(&spec, &out, &[]);
    assert_eq!(rows(&out)[&0]["status"], "below_range");
    let html = read(out.join("report.html"));
    assert!(html.contains("1 below_range, 0 above_range"), "counts");
    assert!(
        html.contains("No deployment meets the bounds anywhere in the range"),
        "no explanation"
    );
    assert!(
        html.contains("<code>p99_ttft_ms</code> (1)"),
        "the missed bound"
    );
}

/// Bad searches stop before anything runs, with exit 2 and the path.
#[test]
fn bad_searches_name_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let trace = data("data/mooncake_conversation_trace.jsonl.gz");
    let synth = "workload: {input_tokens: 8, output_tokens: 8, request_count: 8}\n";
    let req = "require: {p99_ttft_ms: {max: 1}}\n";
    let cases = [
        (
            format!("workload: {{trace: {trace}}}\n{req}search: {{capacity: {{knob: workload.request_rate, low: 1, high: 2}}}}\n"),
            "search.capacity.knob",
        ),
        (
            format!("{synth}{req}search: {{capacity: {{knob: workload.arrival_speedup_ratio, low: 1, high: 2}}}}\n"),
            "search.capacity.knob",
        ),
        (
            format!("{synth}{req}search: {{capacity: {{knob: workload.request_rate, low: 2, high: 2}}}}\n"),
            "search.capacity.low",
        ),
        (
            format!("{synth}{req}search: {{capacity: {{knob: workload.request_rate, low: 0, high: 2}}}}\n"),
            "search.capacity.low",
        ),
        (
            format!("{synth}{req}grid: {{workload.request_rate: [1, 2]}}\nsearch: {{capacity: {{knob: workload.request_rate, low: 1, high: 2}}}}\n"),
            "grid.workload.request_rate",
        ),
        (
            format!("{synth}search: {{capacity: {{knob: workload.request_rate, low: 1, high: 2}}}}\n"),
            "search.capacity: a capacity search looks for the most load that meets every `require` bound",
        ),
    ];
    for (i, (text, path)) in cases.iter().enumerate() {
        let spec = write_spec(dir.path(), &format!("bad{i}.yaml"), text);
        let out = dir.path().join(format!("o{i}"));
        let o = sweep(&spec, &out, &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "case {i}: {err}");
        assert!(
            err.contains(&format!("bad{i}.yaml: {path}")),
            "case {i}: {err}"
        );
        assert!(!out.exists(), "case {i} wrote its folder");
    }
}

/// `group_by`: ranks restart in every group and a `group` column names it; `rank_by` may name
/// a parameter path.
#[test]
fn group_by_ranks_within_groups() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(
        dir.path(),
        "g.yaml",
        "workload: {input_tokens: 512, output_tokens: 16, request_count: 60}\n\
         grid:\n  workload.request_rate: [5, 50]\n  num_workers: [1, 2, 4]\n\
         group_by: [workload.request_rate]\n\
         rank_by: [min num_workers]\n",
    );
    let out = dir.path().join("o");
    sweep_ok(&spec, &out, &[]);
    let text = read(out.join("leaderboard.csv"));
    assert!(text.starts_with("rank,group,point,"), "{text}");
    let order: Vec<(String, String, String)> = csv::Reader::from_reader(text.as_bytes())
        .records()
        .map(|r| {
            let r = r.unwrap();
            (r[0].to_string(), r[1].to_string(), r[2].to_string())
        })
        .collect();
    let g = |v: &str| format!("workload.request_rate={v}");
    assert_eq!(
        order,
        vec![
            ("1".into(), g("5"), "0".into()),
            ("2".into(), g("5"), "1".into()),
            ("3".into(), g("5"), "2".into()),
            ("1".into(), g("50"), "3".into()),
            ("2".into(), g("50"), "4".into()),
            ("3".into(), g("50"), "5".into()),
        ]
    );
}

/// Identical resolved configurations are simulated once: the dry run lists them, the second
/// row says `same as point N` and carries the same metrics; a spec without `require` says why
/// everything is `ok`.
#[test]
fn duplicate_points_run_once() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(
        dir.path(),
        "d.yaml",
        "workload: {input_tokens: 256, output_tokens: 16, request_count: 40, request_rate: 50}\n\
         num_workers: 2\n\
         grid:\n  router_mode: [round_robin, kv_router]\n  router.overlap_score_weight: [1, 2]\n",
    );
    let o = dynosim()
        .args(["sweep", spec.to_str().unwrap(), "--dry-run"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(o.stdout).unwrap();
    assert!(
        stdout
            .lines()
            .nth(1)
            .unwrap()
            .ends_with("(same as point 0)"),
        "{stdout}"
    );
    assert!(stdout.contains("4 to run (1 the same as an earlier point, simulated once)"));
    let out = dir.path().join("o");
    let o = dynosim()
        .args(["sweep", spec.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8(o.stderr).unwrap();
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.contains("nothing is required"))
            .count(),
        1,
        "{stderr}"
    );
    let board = rows(&out);
    assert_eq!(board[&1]["reason"], "same as point 0");
    // Not a duplicate: only the note on its 40 requests.
    assert_eq!(
        board[&3]["reason"], "few requests: percentiles rest on 40 completed requests (< 100)",
        "kv_router settings matter under kv_router"
    );
    let metrics = |r: &BTreeMap<String, String>| {
        r.iter()
            .filter(|(k, _)| k.ends_with("_ms") || k.ends_with("_rps"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(metrics(&board[&0]), metrics(&board[&1]));
    // Simulated once: one line per point in points.jsonl, the copy included.
    assert_eq!(read(out.join("points.jsonl")).lines().count(), 4);
}

/// Engine keys an engine type never reads make no new simulation: SGLang ignores
/// `max_num_batched_tokens` and `enable_prefix_caching`, vLLM the `sglang` object; a key the
/// engine does read (`max_num_seqs`) still does.
#[test]
fn engine_keys_without_effect_make_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(
        dir.path(),
        "e.yaml",
        "workload: {input_tokens: 256, output_tokens: 16, request_count: 40, request_rate: 50}\n\
         num_workers: 2\n\
         grid:\n  topology:\n\
         \x20   - {engine.engine_type: sglang, engine.block_size: 16, engine.max_num_batched_tokens: [512, 8192]}\n\
         \x20   - {engine.engine_type: sglang, engine.block_size: 16, engine.enable_prefix_caching: false}\n\
         \x20   - {engine.engine_type: sglang, engine.block_size: 16, engine.max_num_seqs: 4}\n\
         \x20   - {engine.sglang.page_size: [16, 32]}\n",
    );
    let o = dynosim()
        .args(["sweep", spec.to_str().unwrap(), "--dry-run"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[1].ends_with("(same as point 0)"), "{stdout}");
    assert!(lines[2].ends_with("(same as point 0)"), "{stdout}");
    assert!(!lines[3].contains("same as"), "{stdout}");
    assert!(!lines[4].contains("same as"), "{stdout}");
    assert!(lines[5].ends_with("(same as point 4)"), "{stdout}");
}

/// A capacity search resumed into a folder that holds a grid run's finished points keeps them
/// (in points-archive.jsonl), as a grid resume does: nothing finished is dropped.
#[test]
fn capacity_search_keeps_earlier_finished_points() {
    let dir = tempfile::tempdir().unwrap();
    let grid = write_spec(
        dir.path(),
        "g.yaml",
        "workload: {input_tokens: 256, output_tokens: 16, request_count: 40, request_rate: 50}\n\
         grid:\n  num_workers: [1, 2]\n",
    );
    let out = dir.path().join("o");
    sweep_ok(&grid, &out, &[]);
    let finished: Vec<String> = read(out.join("points.jsonl"))
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(finished.len(), 2);
    let search = write_spec(dir.path(), "s.yaml", SEARCH_SPEC);
    sweep_ok(&search, &out, &["--resume"]);
    let archive = read(out.join("points-archive.jsonl"));
    for line in &finished {
        assert!(archive.lines().any(|l| l == line), "lost: {line}");
    }
}
