//! What a deployment costs, driven through the binary: a sweep's `cost: {gpu_hour_usd: …}` and
//! `dynosim run --gpu-hour-usd`. The cost columns (`usd_per_hour`,
//! `usd_per_million_output_tokens`, `usd_per_million_requests`) rank, bound and span the Pareto
//! front like any metric, are absent without a price (every other byte unchanged), and a
//! deployment whose pools run on different AIC systems is priced per pool.

mod common;

use assert_cmd::Command;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn dynosim() -> Command {
    Command::cargo_bin("dynosim").expect("the dynosim binary")
}

fn read(p: impl AsRef<Path>) -> String {
    std::fs::read_to_string(p.as_ref()).unwrap_or_else(|e| panic!("{}: {e}", p.as_ref().display()))
}

/// Six points whose throughput depends on the worker count only (TP without AIC timing changes
/// only the GPU count), so the cheapest per token is the fewest GPUs that keep up.
const GRID: &str = r#"
workload: {input_tokens: 256, output_tokens: 32, request_count: 120, request_rate: 20}
grid:
  num_workers: [1, 2, 4]
  engine.aic_tp_size: [1, 2]
"#;

const COST: &str = r#"
cost: {gpu_hour_usd: 2.5}
require: {usd_per_million_output_tokens: {max: 4}}
rank_by: [min usd_per_million_output_tokens]
pareto: [min usd_per_million_output_tokens, min p99_ttft_ms]
"#;

/// Writes `text` as `<name>.yaml` in `dir` and runs `dynosim sweep` on it into `<name>/`.
fn sweep(dir: &Path, name: &str, text: &str, extra: &[&str]) -> PathBuf {
    let spec = dir.join(format!("{name}.yaml"));
    std::fs::write(&spec, text).unwrap();
    let out = dir.join(name);
    dynosim()
        .arg("sweep")
        .arg(&spec)
        .arg("-o")
        .arg(&out)
        .args(["--quiet", "-j", "2"])
        .args(extra)
        .assert()
        .code(0);
    out
}

fn board_rows(out: &Path) -> Vec<Value> {
    let board: Value = serde_json::from_str(&read(out.join("leaderboard.json"))).unwrap();
    board["rows"].as_array().unwrap().clone()
}

fn num(row: &Value, key: &str) -> f64 {
    row["report"][key]
        .as_f64()
        .unwrap_or_else(|| panic!("point {}: no {key}", row["point"]))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn a_sweep_ranks_bounds_and_fronts_on_cost() {
    let dir = tempfile::tempdir().unwrap();
    let out = sweep(dir.path(), "priced", &format!("{GRID}{COST}"), &[]);
    let rows = board_rows(&out);
    assert_eq!(rows.len(), 6);
    for r in &rows {
        // GPUs × price, then per million at the simulated rates.
        let per_hour = num(r, "usd_per_hour");
        assert_eq!(per_hour, r["gpus"].as_f64().unwrap() * 2.5);
        let tok_s = num(r, "output_throughput_tok_s");
        let rps = num(r, "request_throughput_rps");
        assert!(close(
            num(r, "usd_per_million_output_tokens"),
            per_hour / 3600.0 / tok_s * 1e6
        ));
        assert!(close(
            num(r, "usd_per_million_requests"),
            per_hour / 3600.0 / rps * 1e6
        ));
    }
    // require: every point above $4 per million tokens is infeasible, with the bound as reason.
    for r in &rows {
        let usd = num(r, "usd_per_million_output_tokens");
        let status = r["status"].as_str().unwrap();
        if usd > 4.0 {
            assert_eq!(status, "infeasible", "{r}");
            assert!(r["reason"]
                .as_str()
                .unwrap()
                .starts_with("usd_per_million_output_tokens "));
        } else {
            assert_eq!(status, "ok", "{r}");
        }
    }
    let ok: Vec<&Value> = rows.iter().filter(|r| r["status"] == "ok").collect();
    assert!(ok.len() >= 2 && ok.len() < rows.len(), "{} ok", ok.len());
    // rank_by: the ok rows first, cheapest per token first.
    let ranked: Vec<f64> = ok
        .iter()
        .map(|r| num(r, "usd_per_million_output_tokens"))
        .collect();
    assert!(ranked.windows(2).all(|w| w[0] <= w[1]), "{ranked:?}");
    assert_eq!(rows[0]["status"], "ok");
    assert_eq!(rows[0]["gpus"], 1);
    // pareto: exactly the ok points no other ok point beats on both cost and p99 TTFT.
    for r in &ok {
        let (c, t) = (
            num(r, "usd_per_million_output_tokens"),
            num(r, "p99_ttft_ms"),
        );
        let beaten = ok.iter().any(|o| {
            let (oc, ot) = (
                num(o, "usd_per_million_output_tokens"),
                num(o, "p99_ttft_ms"),
            );
            oc <= c && ot <= t && (oc < c || ot < t)
        });
        assert_eq!(r["pareto"], !beaten, "point {}", r["point"]);
    }
    // The CSV puts the ranked cost right after gpus; the console names it in the table.
    let csv = read(out.join("leaderboard.csv"));
    let header = csv.lines().next().unwrap();
    assert!(
        header.contains(",gpus,usd_per_million_output_tokens,p99_ttft_ms,"),
        "{header}"
    );
    let columns: Vec<&str> = header.split(',').collect();
    for key in ["usd_per_hour", "usd_per_million_requests"] {
        assert_eq!(columns.iter().filter(|c| **c == key).count(), 1, "{header}");
    }
    let md = read(out.join("leaderboard.md"));
    assert!(md.contains("usd_per_million_output_tokens"), "{md}");
    let html = read(out.join("report.html"));
    assert!(
        html.contains("GPU-hour prices (USD)"),
        "the question names the prices"
    );
}

/// Every column but the cost ones, from the CSV's text.
fn without_cost_columns(csv: &str) -> String {
    let mut r = csv::Reader::from_reader(csv.as_bytes());
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    let keep: Vec<usize> = (0..header.len())
        .filter(|&i| !header[i].starts_with("usd_per_"))
        .collect();
    let mut lines = vec![keep
        .iter()
        .map(|&i| header[i].as_str())
        .collect::<Vec<_>>()
        .join(",")];
    for rec in r.records() {
        let rec = rec.unwrap();
        lines.push(keep.iter().map(|&i| &rec[i]).collect::<Vec<_>>().join(","));
    }
    lines.join("\n")
}

/// A report without the host's clock and the cost keys.
fn stable(report: &Map<String, Value>) -> BTreeMap<String, Value> {
    report
        .iter()
        .filter(|(k, _)| {
            !k.starts_with("usd_per_")
                && ![
                    "wall_time_ms",
                    "processed_tokens_per_s",
                    "processed_output_tokens_per_s",
                ]
                .contains(&k.as_str())
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[test]
fn cost_columns_exist_only_with_a_price() {
    let dir = tempfile::tempdir().unwrap();
    let rank =
        "require: {p99_ttft_ms: {max: 1000}}\nrank_by: [min gpus, max output_throughput_tok_s]\n";
    let plain = sweep(dir.path(), "plain", &format!("{GRID}{rank}"), &[]);
    let priced = sweep(
        dir.path(),
        "priced",
        &format!("{GRID}{rank}cost: {{gpu_hour_usd: {{default: 3}}}}\n"),
        &[],
    );
    let plain_csv = read(plain.join("leaderboard.csv"));
    let priced_csv = read(priced.join("leaderboard.csv"));
    assert!(!plain_csv.contains("usd_"), "{plain_csv}");
    for key in [
        "usd_per_hour",
        "usd_per_million_output_tokens",
        "usd_per_million_requests",
    ] {
        assert!(priced_csv.lines().next().unwrap().contains(key));
    }
    // Nothing else changes: the same rows, ranks and values.
    assert_eq!(
        without_cost_columns(&priced_csv),
        without_cost_columns(&plain_csv)
    );
    let (a, b) = (board_rows(&plain), board_rows(&priced));
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        let (rx, ry) = (
            x["report"].as_object().unwrap(),
            y["report"].as_object().unwrap(),
        );
        assert!(rx.keys().all(|k| !k.starts_with("usd_")));
        assert_eq!(ry["usd_per_hour"], y["gpus"].as_f64().unwrap() * 3.0);
        assert_eq!(stable(rx), stable(ry));
        assert_eq!(x["point"], y["point"]);
        assert_eq!(x["status"], y["status"]);
    }
    assert!(!read(plain.join("points.jsonl")).contains("usd_"));
    assert!(!read(plain.join("report.html")).contains("usd_"));
}

#[test]
fn a_resumed_sweep_prices_earlier_results_anew() {
    let dir = tempfile::tempdir().unwrap();
    let out = sweep(dir.path(), "s", &format!("{GRID}{COST}"), &[]);
    let before = board_rows(&out);
    // Twice the price: nothing is simulated again, every cost doubles and the bound now
    // excludes more points.
    let spec = dir.path().join("s.yaml");
    std::fs::write(&spec, format!("{GRID}{}", COST.replace("2.5", "5"))).unwrap();
    let o = dynosim()
        .arg("sweep")
        .arg(&spec)
        .arg("-o")
        .arg(&out)
        .args(["--resume", "-j", "2"])
        .assert()
        .code(0);
    let stdout = String::from_utf8_lossy(&o.get_output().stdout).into_owned();
    let stderr = String::from_utf8_lossy(&o.get_output().stderr).into_owned();
    assert!(
        format!("{stdout}{stderr}").contains("(6 from the earlier run)"),
        "{stdout}{stderr}"
    );
    let after = board_rows(&out);
    for b in &before {
        let a = after.iter().find(|a| a["point"] == b["point"]).unwrap();
        for key in [
            "usd_per_hour",
            "usd_per_million_output_tokens",
            "usd_per_million_requests",
        ] {
            assert!(close(num(a, key), 2.0 * num(b, key)), "{key}");
        }
        let expected = if num(a, "usd_per_million_output_tokens") > 4.0 {
            "infeasible"
        } else {
            "ok"
        };
        assert_eq!(a["status"], expected);
    }
}

#[test]
fn bad_prices_exit_2_naming_the_key_path() {
    let dir = tempfile::tempdir().unwrap();
    for (extra, msg) in [
        (
            "cost: {gpu_hour_usd: -2}",
            "cost.gpu_hour_usd: expected a finite number >= 0 (USD per GPU-hour), found number -2",
        ),
        (
            "cost: {gpu_hour_usd: {h200_sxm: 3.5}}",
            "cost.gpu_hour_usd: no price for the aggregated pool's GPU (polynomial or NPZ timing, \
             no aic_system) of point 0; add `default: <USD>`",
        ),
        (
            "cost: {gpu_hour: 2}",
            "cost.gpu_hour: unknown key; did you mean `gpu_hour_usd`?",
        ),
        (
            "rank_by: [min usd_per_million_requests]",
            "rank_by[0]: `usd_per_million_requests` exists only with GPU prices",
        ),
    ] {
        let spec = dir.path().join("bad.yaml");
        std::fs::write(&spec, format!("{GRID}{extra}\n")).unwrap();
        let out = dir.path().join("out");
        let o = dynosim()
            .arg("sweep")
            .arg(&spec)
            .arg("-o")
            .arg(&out)
            .assert()
            .code(2);
        let stderr = String::from_utf8_lossy(&o.get_output().stderr).into_owned();
        let err_line = stderr.lines().find(|l| l.starts_with("error:")).unwrap();
        assert!(err_line.contains(&format!("bad.yaml: {msg}")), "{stderr}");
        assert_eq!(stderr.matches("error:").count(), 1, "{stderr}");
        assert!(!out.exists(), "{extra}: the output folder was created");
    }
}

const RUN: &[&str] = &[
    "run",
    "--input-tokens",
    "256",
    "--output-tokens",
    "32",
    "--request-count",
    "100",
    "--request-rate",
    "20",
    "--num-workers",
    "2",
    "--extra-engine-args",
    r#"{"aic_tp_size": 2}"#,
];

fn run_report(dir: &Path, name: &str, extra: &[&str]) -> (Map<String, Value>, String) {
    let path = dir.join(name);
    let o = dynosim()
        .args(RUN)
        .arg("--report-json")
        .arg(&path)
        .args(extra)
        .assert()
        .code(0);
    let stdout = String::from_utf8_lossy(&o.get_output().stdout).into_owned();
    let report: Value = serde_json::from_str(&read(&path)).unwrap();
    (report.as_object().unwrap().clone(), stdout)
}

#[test]
fn run_adds_the_cost_keys_and_a_line_with_the_flag_only() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, plain_out) = run_report(dir.path(), "plain.json", &[]);
    let (priced, priced_out) = run_report(dir.path(), "priced.json", &["--gpu-hour-usd", "3.25"]);
    assert!(plain.keys().all(|k| !k.starts_with("usd_")));
    assert!(!plain_out.contains("Cost"));
    assert_eq!(stable(&plain), stable(&priced));
    // 2 workers × TP 2 = 4 GPUs at $3.25.
    let per_hour = priced["usd_per_hour"].as_f64().unwrap();
    assert_eq!(per_hour, 13.0);
    let tok_s = priced["output_throughput_tok_s"].as_f64().unwrap();
    let rps = priced["request_throughput_rps"].as_f64().unwrap();
    let per_tokens = priced["usd_per_million_output_tokens"].as_f64().unwrap();
    let per_requests = priced["usd_per_million_requests"].as_f64().unwrap();
    assert!(close(per_tokens, 13.0 / 3600.0 / tok_s * 1e6));
    assert!(close(per_requests, 13.0 / 3600.0 / rps * 1e6));
    let line = priced_out
        .lines()
        .find(|l| l.starts_with("Cost (USD): "))
        .unwrap_or_else(|| panic!("no cost line in {priced_out}"));
    assert_eq!(
        line,
        format!(
            "Cost (USD): 13.00 per hour, {per_tokens:.2} per million output tokens, {} per \
             million requests",
            thousands(per_requests)
        )
    );
    // The table is otherwise the same: only the cost line was added.
    let drop_host = |s: &str| {
        s.lines()
            .filter(|l| !l.starts_with("Wall Time") && !l.starts_with("Saved full report"))
            .filter(|l| !l.starts_with("Cost (USD)"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(drop_host(&plain_out).len(), drop_host(&priced_out).len());
    // `dynosim compare` shows the costs, lower being better.
    run_report(dir.path(), "cheaper.json", &["--gpu-hour-usd", "1.625"]);
    let o = dynosim()
        .arg("compare")
        .arg(dir.path().join("priced.json"))
        .arg(dir.path().join("cheaper.json"))
        .assert()
        .code(0);
    let text = String::from_utf8_lossy(&o.get_output().stdout).into_owned();
    for key in [
        "usd_per_hour",
        "usd_per_million_output_tokens",
        "usd_per_million_requests",
    ] {
        let line = text.lines().find(|l| l.starts_with(key)).unwrap();
        assert!(line.ends_with("0.500  -50.0% better"), "{line}");
    }
    let o = dynosim()
        .arg("compare")
        .arg(dir.path().join("plain.json"))
        .arg(dir.path().join("plain.json"))
        .assert()
        .code(0);
    assert!(!String::from_utf8_lossy(&o.get_output().stdout).contains("usd_"));
}

/// `x` as Python's `f"{x:,.2f}"` for the sizes this test meets.
fn thousands(x: f64) -> String {
    let s = format!("{x:.2}");
    let (int, frac) = s.split_once('.').unwrap();
    let mut out = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{out}.{frac}")
}

#[test]
fn run_refuses_bad_prices_with_exit_2_and_no_report() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    for (values, msg) in [
        (
            vec!["-1"],
            "error: --gpu-hour-usd -1: expected a price in USD per GPU-hour (a finite number >= 0), \
             or SYSTEM=USD for the GPUs of one aic_system",
        ),
        (
            vec!["NaN"],
            "error: --gpu-hour-usd NaN: expected a price in USD per GPU-hour",
        ),
        (
            vec!["h200_sxm=3"],
            "error: --gpu-hour-usd: no price for the aggregated pool's GPU (polynomial or NPZ \
             timing, no aic_system); add a bare --gpu-hour-usd <USD> for every GPU",
        ),
        (
            vec!["1", "2"],
            "error: --gpu-hour-usd 2: a price for every GPU is already given",
        ),
    ] {
        let mut cmd = dynosim();
        cmd.args(RUN).arg("--report-json").arg(&path);
        for v in &values {
            cmd.arg(format!("--gpu-hour-usd={v}"));
        }
        let o = cmd.assert().code(2);
        let stderr = String::from_utf8_lossy(&o.get_output().stderr).into_owned();
        assert!(stderr.starts_with(msg), "{values:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(!path.exists());
    }
}

const AIC_ENGINE: &str = r#"aic_backend: vllm, aic_backend_version: "0.24.0", aic_model_path: Qwen/Qwen3-8B, block_size: 64"#;

#[test]
fn pools_on_different_systems_are_priced_per_pool() {
    if !common::have_aic("pools_on_different_systems_are_priced_per_pool") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Prefill on H200 (TP 2), decode on H100 (TP 1), 1 or 2 decode workers; an unused price
    // for a third system only warns.
    let spec = format!(
        "workload: {{input_tokens: 512, output_tokens: 32, request_count: 40, request_rate: 5}}
mode: disaggregated
num_prefill_workers: 1
engine: {{{AIC_ENGINE}}}
prefill_engine: {{aic_system: h200_sxm, aic_tp_size: 2}}
decode_engine: {{aic_system: h100_sxm}}
grid:
  num_decode_workers: [1, 2]
"
    );
    let priced = format!("{spec}cost: {{gpu_hour_usd: {{h200_sxm: 3.5, h100_sxm: 2.25}}}}\n");
    let out = sweep(dir.path(), "mixed", &priced, &[]);
    let rows = board_rows(&out);
    assert_eq!(rows.len(), 2);
    for r in &rows {
        let decode = r["parameters"]["num_decode_workers"].as_f64().unwrap();
        assert_eq!(num(r, "usd_per_hour"), 2.0 * 3.5 + decode * 2.25, "{r}");
    }
    // One system without a price: refused before anything runs, naming the pool and system.
    let spec_path = dir.path().join("unpriced.yaml");
    std::fs::write(
        &spec_path,
        format!("{spec}cost: {{gpu_hour_usd: {{h200_sxm: 3.5}}}}\n"),
    )
    .unwrap();
    let o = dynosim()
        .arg("sweep")
        .arg(&spec_path)
        .arg("--dry-run")
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&o.get_output().stderr).into_owned();
    assert!(
        stderr.contains(
            "unpriced.yaml: cost.gpu_hour_usd: no price for the decode pool's GPU (aic_system \
             \"h100_sxm\") of point 0; add `h100_sxm: <USD>` or `default: <USD>`"
        ),
        "{stderr}"
    );
    // `dynosim run` takes SYSTEM=USD pairs for the same deployment.
    let engine = |role: &str, system: &str, tp: u32| {
        format!(
            r#"{{"worker_type":"{role}","aic_backend":"vllm","aic_backend_version":"0.24.0","aic_model_path":"Qwen/Qwen3-8B","block_size":64,"aic_system":"{system}","aic_tp_size":{tp}}}"#
        )
    };
    let report = dir.path().join("r.json");
    let args = |prices: &[&str]| {
        let mut c = dynosim();
        c.args([
            "run",
            "--input-tokens",
            "512",
            "--output-tokens",
            "32",
            "--request-count",
            "40",
            "--request-rate",
            "5",
            "--num-prefill-workers",
            "1",
            "--num-decode-workers",
            "2",
        ])
        .arg("--prefill-engine-args")
        .arg(engine("prefill", "h200_sxm", 2))
        .arg("--decode-engine-args")
        .arg(engine("decode", "h100_sxm", 1))
        .arg("--report-json")
        .arg(&report);
        for p in prices {
            c.arg("--gpu-hour-usd").arg(p);
        }
        c
    };
    let o = args(&["h200_sxm=3.5"]).assert().code(2);
    let stderr = String::from_utf8_lossy(&o.get_output().stderr).into_owned();
    assert!(
        stderr.contains(
            "error: --gpu-hour-usd: no price for the decode pool's GPU (aic_system \"h100_sxm\"); \
             add --gpu-hour-usd h100_sxm=<USD>, or a bare --gpu-hour-usd <USD> for every GPU"
        ),
        "{stderr}"
    );
    assert!(!report.exists());
    args(&["h200_sxm=3.5", "h100_sxm=2.25"]).assert().code(0);
    let r: Value = serde_json::from_str(&read(&report)).unwrap();
    assert_eq!(r["usd_per_hour"], 2.0 * 3.5 + 2.0 * 2.25);
    // The sweep point with the same deployment costs the same per token.
    let point = rows
        .iter()
        .find(|r| r["parameters"]["num_decode_workers"] == 2)
        .unwrap();
    assert_eq!(
        r["usd_per_million_output_tokens"],
        point["report"]["usd_per_million_output_tokens"]
    );
}

#[test]
fn the_bundled_cost_sweep_expands_with_every_pool_priced() {
    if !common::have_aic("the_bundled_cost_sweep_expands_with_every_pool_priced") {
        return;
    }
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("sweeps/cost_per_token.yaml");
    let o = dynosim()
        .arg("sweep")
        .arg(&spec)
        .arg("--dry-run")
        .assert()
        .code(0);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.get_output().stdout),
        String::from_utf8_lossy(&o.get_output().stderr)
    );
    assert!(
        text.contains("16 points: 16 to run, 0 skipped, 0 invalid"),
        "{text}"
    );
    // Every price is used: no warning about a system no point runs on.
    assert!(!text.contains("warning"), "{text}");
}
