//! `dynosim validate` as users call it: measured rows of AIConfigurator's table and a real AIPerf
//! export (from ai-dynamo/dynamo, see tests/data/validate/NOTICE) simulated, the output folder's
//! files, the reproduction of a row by `dynosim run`, the library API with corrections, bad
//! inputs (exit 2, nothing written), and validation.html in headless Chromium.
//!
//! Tests needing AIConfigurator's Python package are skipped without it (see tests/common).

mod common;

use assert_cmd::cargo::CommandCargoExt;
use std::path::{Path, PathBuf};
use std::process::Command;

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/validate")
        .join(rel)
}

const TABLE: &str = "silicon_rows.csv";
const AIPERF: &str = "aic_all/validation/medium/profile_export_aiperf.json";

fn dynosim() -> Command {
    let mut c = Command::cargo_bin("dynosim").expect("the dynosim binary");
    c.env("DYNOSIM_PYTHON", common::python());
    c
}

fn csv_rows(path: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap();
    let headers = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            headers
                .iter()
                .zip(rec.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// Runs a `validate` command writing to `out`, which must succeed with its first row `ok`;
/// the rows of its validation.csv.
fn validated(cmd: &mut Command, out: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = csv_rows(&out.join("validation.csv"));
    assert_eq!(rows[0]["status"], "ok", "{:?}", rows[0]);
    rows
}

const FIRST_COLUMNS: &[&str] = &[
    "id",
    "status",
    "reason",
    "notes",
    "system",
    "backend",
    "backend_version",
    "backend_version_used",
    "model",
    "mode",
    "isl",
    "osl",
    "concurrency",
    "request_count",
    "engine_args",
    "measured_ttft_ms",
    "predicted_ttft_ms",
    "ttft_error_pct",
    "measured_tpot_ms",
    "predicted_tpot_ms",
    "tpot_error_pct",
];

#[test]
fn table_rows_are_simulated_and_every_row_is_kept() {
    if !common::have_aic("table_rows_are_simulated_and_every_row_is_kept") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v");
    let o = dynosim()
        .args(["validate", data(TABLE).to_str().unwrap(), "-o"])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&o.stderr)
    );
    for f in ["validation.csv", "validation.json", "validation.html"] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    // The console summary: one line per group.
    assert!(
        stdout.contains("h200_sxm  vllm     meta-llama/Llama-3.1-70B"),
        "{stdout}"
    );
    let header = std::fs::read_to_string(out.join("validation.csv")).unwrap();
    let header: Vec<&str> = header.lines().next().unwrap().split(',').collect();
    assert_eq!(&header[..FIRST_COLUMNS.len()], FIRST_COLUMNS);
    let rows = csv_rows(&out.join("validation.csv"));
    assert_eq!(rows.len(), 5, "no row dropped");
    for r in &rows[..4] {
        assert_eq!(r["status"], "ok", "{r:?}");
        assert_eq!(r["backend_version"], "");
        assert!(!r["backend_version_used"].is_empty());
        let m: f64 = r["measured_ttft_ms"].parse().unwrap();
        let p: f64 = r["predicted_ttft_ms"].parse().unwrap();
        let e: f64 = r["ttft_error_pct"].parse().unwrap();
        assert!(((p - m) / m * 100.0 - e).abs() < 0.01, "{r:?}");
        let engine: serde_json::Value = serde_json::from_str(&r["engine_args"]).unwrap();
        assert_eq!(engine["aic_model_path"], "meta-llama/Meta-Llama-3.1-70B");
        assert_eq!(engine["enable_prefix_caching"], false);
        assert_eq!(engine["aic_kv_cache_dtype"], "fp8");
        let c: u32 = r["concurrency"].parse().unwrap();
        assert_eq!(r["request_count"], (10 * c).to_string());
    }
    for r in &rows {
        assert_eq!(r["notes"], "", "read and simulated as given: {r:?}");
    }
    let disagg = &rows[4];
    assert_eq!(disagg["status"], "unsupported");
    // A 2026 disaggregated row gives no worker counts: its deployment's size is unknown.
    assert!(
        disagg["reason"].contains("no worker count (prefill_num_workers, decode_num_workers)"),
        "{disagg:?}"
    );
    // The JSON has the groups' figures and every point.
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("validation.json")).unwrap())
            .unwrap();
    assert_eq!(j["points"].as_array().unwrap().len(), 5);
    let groups = j["groups"].as_array().unwrap();
    let h200 = groups
        .iter()
        .find(|g| g["system"] == "h200_sxm" && g["backend"] == "vllm")
        .unwrap();
    assert_eq!(h200["ttft"]["n"], 3);
    assert!(h200["ttft"]["mean_abs_pct"].as_f64().unwrap() >= 0.0);

    // Fixed lengths (--random-range-ratio 1) predict differently from the benchmark's draws.
    let fixed = dir.path().join("fixed");
    let o = dynosim()
        .args(["validate", data(TABLE).to_str().unwrap(), "--quiet"])
        .args(["--random-range-ratio", "1", "-o"])
        .arg(&fixed)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let fixed_rows = csv_rows(&fixed.join("validation.csv"));
    assert_ne!(
        fixed_rows[0]["predicted_ttft_ms"],
        rows[0]["predicted_ttft_ms"]
    );
    assert!(!fixed_rows[0]["run_command"].contains("--random-range-ratio"));

    // `dynosim run` with the row's run_command (lengths drawn in [0.8 L, L]) reproduces the
    // prediction.
    let row = &rows[0];
    assert!(
        row["run_command"].contains("--random-range-ratio 0.8"),
        "{row:?}"
    );
    let report = dir.path().join("r.json");
    let words = shell_words(&row["run_command"]);
    assert_eq!(&words[..2], ["dynosim", "run"]);
    let o = dynosim()
        .args(&words[1..])
        .arg("--report-json")
        .arg(&report)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rep: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let p: f64 = row["predicted_ttft_ms"].parse().unwrap();
    assert!(
        (rep["mean_ttft_ms"].as_f64().unwrap() - p).abs() < 1e-3,
        "{rep} vs {p}"
    );
    let p: f64 = row["predicted_tpot_ms"].parse().unwrap();
    assert!((rep["mean_tpot_ms"].as_f64().unwrap() - p).abs() < 1e-3);
}

/// A DeepSeek-R1 row on H200 SGLang (a real row of AIConfigurator's table): AIC's perf data has
/// no fp8 context MLA there, so the row is timed with bfloat16 context attention, as
/// AIConfigurator's own estimate falls back, and its `notes` say so in both files.
#[test]
fn a_row_timed_with_the_attention_fallback_says_so() {
    if !common::have_aic("a_row_timed_with_the_attention_fallback_says_so") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let header = std::fs::read_to_string(data(TABLE)).unwrap();
    let header = header.lines().next().unwrap();
    let row = "2026_03_25_deepseek_r1_h200_sxm_sglang_fp8_agg_1024x1024_c4_tp8_0_ep1_0_289,\
        source_file=2026-03-25.csv; model=DeepSeek-R1; silicon_concurrency=4; \
        measured=2026-03-25T16:34:14Z; wip=False; image=lmsysorg/sglang:v0.5.9-cu130,sglang,\
        0.5.9,deepseek-ai/DeepSeek-R1,h200_sxm,fp8,agg,1024,1024,fp8,fp8_block,4,8,1,1,8,1,,,,,,,\
        ,,,,,,,,259.9114292766899,10.29225441516629";
    let table = dir.path().join("dsr1.csv");
    std::fs::write(&table, format!("{header}\n{row}\n")).unwrap();
    let out = dir.path().join("v");
    let o = dynosim()
        .arg("validate")
        .arg(&table)
        .args(["--prompts-per-concurrency", "1", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains(
            "1 points: 1 ok, 0 failed, 0 unsupported (1 simulated other than given: see the \
             notes column)"
        ),
        "{stdout}"
    );
    let rows = csv_rows(&out.join("validation.csv"));
    assert_eq!(rows[0]["status"], "ok", "{:?}", rows[0]);
    let r = &rows[0];
    // DeepSeek-R1's `fp8` GEMM label is read as its checkpoint's 128 x 128 blocks, then the
    // attention fallback.
    let notes: Vec<&str> = r["notes"].split("; ").collect();
    assert_eq!(notes.len(), 2, "{r:?}");
    assert_eq!(
        notes[0],
        "quantisation fp8/fp8_block read as the checkpoint ran it: GEMM fp8_block, MoE \
         fp8_block (checkpoint fp8_block)"
    );
    assert!(
        notes[1].starts_with("context attention timed with bfloat16 data"),
        "{r:?}"
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("validation.json")).unwrap())
            .unwrap();
    let json_notes: Vec<&str> = j["points"][0]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(json_notes, notes);
}

/// Splits a command line written by `Recipe::command_line` (words, single-quoted words).
fn shell_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in s.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            ' ' if !quoted => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            c => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[test]
fn an_aiperf_export_is_simulated_with_the_run_flags() {
    // The default polynomial timing: no AIC needed.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v");
    let o = dynosim()
        .args(["validate", data(AIPERF).to_str().unwrap(), "--quiet", "-o"])
        .arg(&out)
        .args(["--extra-engine-args", r#"{"block_size": 16}"#])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout.is_empty(), "--quiet prints nothing");
    let rows = csv_rows(&out.join("validation.csv"));
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(r["id"], "medium");
    assert_eq!(r["status"], "ok", "{r:?}");
    assert_eq!(r["model"], "Qwen/Qwen3-32B");
    assert_eq!((r["isl"].as_str(), r["osl"].as_str()), ("2048", "256"));
    assert_eq!(r["concurrency"], "4");
    assert_eq!(r["request_count"], "100");
    assert_eq!(r["engine_args"], r#"{"block_size":16}"#);
    // AIPerf's TTFT and inter-token latency are the measured values.
    assert_eq!(r["measured_ttft_ms"], "2200.4886");
    assert_eq!(r["measured_tpot_ms"], "12.8146");
    assert!(r["predicted_ttft_ms"].parse::<f64>().unwrap() > 0.0);
}

#[test]
fn an_aiperf_export_with_aic_timing() {
    if !common::have_aic("an_aiperf_export_with_aic_timing") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v");
    let engine = r#"{"engine_type": "vllm", "aic_backend": "trtllm", "aic_system": "h200_sxm",
        "aic_backend_version": "1.3.0rc23", "aic_model_path": "Qwen/Qwen3-32B", "aic_tp_size": 2}"#;
    let rows = validated(
        dynosim()
            .args(["validate", data(AIPERF).to_str().unwrap(), "-o"])
            .arg(&out)
            .args(["--extra-engine-args", engine]),
        &out,
    );
    let r = &rows[0];
    assert_eq!(
        (r["system"].as_str(), r["backend"].as_str()),
        ("h200_sxm", "trtllm")
    );
    let tpot: f64 = r["predicted_tpot_ms"].parse().unwrap();
    assert!(tpot > 1.0 && tpot < 100.0, "{tpot}");
}

#[test]
fn bad_inputs_exit_2_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v");
    let junk = dir.path().join("junk.csv");
    std::fs::write(&junk, "a,b\n1,2\n").unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec![junk.display().to_string()], "neither an AIPerf export"),
        (
            vec![
                data(AIPERF).display().to_string(),
                "--random-range-ratio".into(),
                "1.5".into(),
            ],
            "--random-range-ratio must be in (0, 1]",
        ),
        (
            vec![
                data(AIPERF).display().to_string(),
                "--kv-cache-dtype".into(),
                "fp4".into(),
            ],
            "--kv-cache-dtype must be auto, model, fp8 or bfloat16",
        ),
        (
            vec![
                data(AIPERF).display().to_string(),
                "--memory-model".into(),
                "sglang".into(),
            ],
            "--memory-model must be server or aic",
        ),
        (
            vec![
                data(AIPERF).display().to_string(),
                "--decode-timing".into(),
                "smooth".into(),
            ],
            "--decode-timing must be monotone or aic",
        ),
        (
            vec![
                data(AIPERF).display().to_string(),
                "--dp-rank-routing".into(),
                "worker".into(),
            ],
            "--dp-rank-routing must be engine or router",
        ),
        (
            vec![dir.path().join("missing.csv").display().to_string()],
            "cannot read it",
        ),
    ];
    for (args, needle) in cases {
        let o = dynosim()
            .arg("validate")
            .args(&args)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with("error: ") && err.contains(needle), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!out.exists(), "{args:?} left {}", out.display());
    }
}

#[test]
fn the_library_applies_corrections_per_family() {
    use dynosim::validate::{read_inputs, Corrections, Options, Validator};
    let flags = dynosim::validate::FlagDeployment {
        extra_engine_args: Some(r#"{"block_size": 16}"#.into()),
        ..Default::default()
    };
    let points = read_inputs(&[data(AIPERF)], &flags).unwrap();
    let v = Validator::new(Options::default()).unwrap();
    let plain = v.simulate(&points, &Corrections::none());
    let mut c = Corrections::none();
    let mut keys = serde_json::Map::new();
    keys.insert("speedup_ratio".into(), serde_json::json!(2.0));
    keys.insert("decode_speedup_ratio".into(), serde_json::json!(2.0));
    c.by_family.insert(points[0].family(), keys);
    let fast = v.simulate(&points, &c);
    let (a, b) = (
        plain[0].predicted.as_ref().unwrap(),
        fast[0].predicted.as_ref().unwrap(),
    );
    assert!(
        b.tpot_ms < a.tpot_ms * 0.6,
        "{} vs {}",
        b.tpot_ms,
        a.tpot_ms
    );
    assert!(b.ttft_ms < a.ttft_ms, "{} vs {}", b.ttft_ms, a.ttft_ms);
    let engine = &fast[0].recipe.as_ref().unwrap().extra_engine_args;
    assert_eq!(engine.as_ref().unwrap()["speedup_ratio"], 2.0);
    // Same inputs, same numbers.
    assert_eq!(v.simulate(&points, &Corrections::none()), plain);
}

fn find_chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

#[test]
fn validation_html_renders_in_chromium() {
    let Some(bin) = find_chromium() else {
        assert!(std::env::var_os("CI").is_none(), "CI must provide chromium");
        eprintln!("skipped: validation_html_renders_in_chromium needs chromium");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v");
    let o = dynosim()
        .args(["validate", data(AIPERF).to_str().unwrap(), "--quiet", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let page = out.join("validation.html");
    let dom = chromium(&bin, &dir.path().join("p"))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(dom.contains("id=\"ttft\""), "no TTFT chart in the DOM");
    assert!(dom.contains("id=\"tpot\""), "no TPOT chart in the DOM");
    assert!(dom.contains("id=\"groups\""), "no groups table");
    assert!(
        dom.contains("medium: TTFT measured 2200.49 ms"),
        "no hover title"
    );
    let shot = dir.path().join("shot.png");
    let s = chromium(&bin, &dir.path().join("p2"))
        .arg("--window-size=1200,1400")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        shot.is_file(),
        "no screenshot: {}",
        String::from_utf8_lossy(&s.stderr)
    );
    // The ±10 % band's fill and the first group's colour are drawn.
    let img = decode_png(&shot);
    assert!(img.count([225, 236, 246]) > 1000, "no ±10 % band");
    assert!(
        img.count([31, 119, 180]) > 20,
        "no point of the first group"
    );
}

/// Headless Chromium with a fresh profile and nothing that reaches the network.
fn chromium(bin: &Path, profile: &Path) -> Command {
    let mut c = Command::new(bin);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

struct Image {
    pixels: Vec<[u8; 3]>,
}

impl Image {
    fn count(&self, c: [u8; 3]) -> usize {
        self.pixels
            .iter()
            .filter(|p| p.iter().zip(c).all(|(a, b)| a.abs_diff(b) <= 6))
            .count()
    }
}

fn decode_png(path: &Path) -> Image {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let step = info.color_type.samples();
    let pixels = buf[..info.buffer_size()]
        .chunks(step)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    Image { pixels }
}
