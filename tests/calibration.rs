//! `--calibration` on `dynosim run` and `dynosim sweep` (and the spec's `calibration` key),
//! driven through the binary: the notes saying what was calibrated and what was not, changed
//! numbers where a family is calibrated, unchanged ones where not, and bad files refused.
//! The tests with AIC timing need AIConfigurator's Python package (see tests/common).

mod common;

use assert_cmd::Command;
use common::checks_chain;
use dynosim::calibrate::{CalibrationFile, ErrorSummary, Family, FamilyCalibration};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The binary, with AIC's cache in `dir/cache`.
fn dynosim(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("dynosim").expect("the dynosim binary");
    c.env("DYNOSIM_CACHE_DIR", dir.join("cache"))
        .env_remove("AICONFIGURATOR_SYSTEMS_PATH");
    c
}

const QWEN: &str = r#"{"aic_backend":"vllm","aic_system":"h200_sxm","aic_model_path":"Qwen/Qwen3-8B","aic_backend_version":"0.24.0"}"#;

fn calibration(dir: &Path, name: &str, family: (&str, &str, &str), p: f64, d: f64) -> PathBuf {
    let text = format!(
        r#"{{"format": "dynosim-calibration", "version": 1, "families": [
  {{"system": "{}", "backend": "{}", "model": "{}", "prefill_scale": {p}, "decode_scale": {d}}}]}}"#,
        family.0, family.1, family.2
    );
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// `dynosim calibrate ROWS -o OUT` at 2 prompts per unit of concurrency on 2 threads, with
/// `extra` flags; it must succeed. The file it wrote, stdout and stderr.
fn calibrate(
    dir: &Path,
    rows: &Path,
    out: &Path,
    extra: &[&str],
) -> (CalibrationFile, String, String) {
    let o = dynosim(dir)
        .args(["calibrate", rows.to_str().unwrap(), "-o"])
        .arg(out)
        .args(["--prompts-per-concurrency", "2", "-j", "2"])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{stderr}");
    let file = CalibrationFile::parse(&std::fs::read_to_string(out).unwrap()).unwrap();
    (file, String::from_utf8_lossy(&o.stdout).to_string(), stderr)
}

/// The B200 vLLM Llama-3.1-70B family as `calibrate` and `validate` name it.
const B200_LLAMA: &str = "b200_sxm vllm meta-llama/Meta-Llama-3.1-70B";

/// `dynosim validate ROWS --calibration CAL` ([`validate_with`]) calibrates the rows of
/// `family` with each of its entries named by `labels`, as its stderr notes say.
fn validate_takes_entries(dir: &Path, rows: &Path, cal: &Path, family: &str, labels: &[&str]) {
    let stderr = validate_with(dir, rows, cal);
    for label in labels {
        let note = format!("calibrated {family} {label}: ");
        assert!(stderr.contains(&note), "{note} not in {stderr}");
    }
}

/// `dynosim validate ROWS --calibration CAL` at 2 prompts per unit of concurrency on 2
/// threads, into `dir/v`; it must succeed. Its stderr.
fn validate_with(dir: &Path, rows: &Path, cal: &Path) -> String {
    let out = dynosim(dir)
        .args(["validate", rows.to_str().unwrap(), "-o"])
        .arg(dir.join("v"))
        .args(["--prompts-per-concurrency", "2", "-j", "2", "--calibration"])
        .arg(cal)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stderr}");
    stderr
}

/// The shipped rows (validation/) that `keep` keeps, with the header, written to `dir/name`;
/// there must be `expect` of them.
fn shipped_rows(dir: &Path, name: &str, keep: impl Fn(&str) -> bool, expect: usize) -> PathBuf {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("validation/llama-3.1-70b-fp8-vllm-h100-h200.csv");
    let text = std::fs::read_to_string(&shipped).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let rows: Vec<&str> = lines.filter(|l| keep(l)).collect();
    assert_eq!(rows.len(), expect, "shipped rows kept");
    let path = dir.join(name);
    let body: Vec<&str> = std::iter::once(header).chain(rows).collect();
    std::fs::write(&path, body.join("\n") + "\n").unwrap();
    path
}

/// `dynosim calibrate ROWS -o dir/name` as a user runs it (default prompts per unit of
/// concurrency) on 2 threads, with `extra` flags; it must succeed. The file it wrote, its
/// text, stdout and its path.
fn calibrate_as_shipped(
    dir: &Path,
    rows: &Path,
    name: &str,
    extra: &[&str],
) -> (CalibrationFile, String, String, PathBuf) {
    let out = dir.join(name);
    let o = dynosim(dir)
        .args(["calibrate", rows.to_str().unwrap(), "-o"])
        .arg(&out)
        .args(["-j", "2"])
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&out).unwrap();
    (CalibrationFile::parse(&text).unwrap(), text, stdout, out)
}

/// An entry's cross-validated errors (it must have them).
fn cv_errors(entry: &FamilyCalibration) -> ErrorSummary {
    entry
        .fit
        .as_ref()
        .and_then(|f| f.cross_validated.as_ref())
        .unwrap_or_else(|| panic!("no cross-validation: {entry:?}"))
        .errors
}

/// `dynosim run` of 48 requests (ISL 1024, OSL 64, concurrency 8) with `engine`; the report
/// and stderr.
fn run(dir: &Path, engine: &str, extra: &[&str]) -> (Value, String) {
    let report = dir.join(format!("r{}.json", extra.len()));
    let _ = std::fs::remove_file(&report);
    let out = dynosim(dir)
        .args([
            "run",
            "--input-tokens",
            "1024",
            "--output-tokens",
            "64",
            "--request-count",
            "48",
            "--replay-concurrency",
            "8",
            "--extra-engine-args",
            engine,
            "--report-json",
            report.to_str().unwrap(),
        ])
        .args(extra)
        .output()
        .unwrap();
    common::report_of(&out, &report)
}

fn without_wall_time(mut v: Value) -> Value {
    if let Value::Object(m) = &mut v {
        m.remove("wall_time_ms");
        m.remove("processed_output_tokens_per_s");
        m.remove("processed_tokens_per_s");
    }
    v
}

fn metric(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing: {v}"))
}

#[test]
fn a_calibrated_aic_run_scales_its_times_and_says_so() {
    if !common::have_aic("a_calibrated_aic_run_scales_its_times_and_says_so") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (plain, plain_err) = run(d, QWEN, &[]);
    assert!(!plain_err.contains("calibration"), "{plain_err}");

    // Both scales x2: every pass takes twice as long, so (all prompts sent at once) every time
    // doubles exactly.
    let both = calibration(
        d,
        "both.json",
        ("h200_sxm", "vllm", "Qwen/Qwen3-8B"),
        2.0,
        2.0,
    );
    let (v, err) = run(d, QWEN, &["--calibration", both.to_str().unwrap()]);
    assert!(
        err.contains(&format!(
            "calibration {}: calibrated h200_sxm vllm Qwen/Qwen3-8B: prefill time x2, decode time x2",
            both.display()
        )),
        "{err}"
    );
    for key in [
        "mean_ttft_ms",
        "mean_tpot_ms",
        "p99_ttft_ms",
        "mean_e2e_latency_ms",
    ] {
        let ratio = metric(&v, key) / metric(&plain, key);
        assert!((ratio - 2.0).abs() < 1e-9, "{key}: x{ratio}");
    }

    // Prefill x3 alone: first tokens come later, decode steps without a prefill do not change.
    let prefill = calibration(
        d,
        "prefill.json",
        ("h200_sxm", "vllm", "Qwen/Qwen3-8B"),
        3.0,
        1.0,
    );
    let (v, _) = run(d, QWEN, &["--calibration", prefill.to_str().unwrap()]);
    assert!(metric(&v, "mean_ttft_ms") > 2.0 * metric(&plain, "mean_ttft_ms"));
    assert_eq!(metric(&v, "min_itl_ms"), metric(&plain, "min_itl_ms"));

    // A decode pass overhead (signed): every pass that decodes takes 1.5 ms more, so every
    // inter-token gap (one pass each, the schedule unchanged with all prompts sent at once).
    let dec = d.join("dec.json");
    std::fs::write(
        &dec,
        r#"{"format": "dynosim-calibration", "version": 1, "families": [
  {"system": "h200_sxm", "backend": "vllm", "model": "Qwen/Qwen3-8B", "prefill_scale": 1,
   "decode_scale": 1, "decode_pass_overhead_ms": 1.5}]}"#,
    )
    .unwrap();
    let (v, err) = run(d, QWEN, &["--calibration", dec.to_str().unwrap()]);
    assert!(
        err.contains("prefill time x1, decode time x1, decode pass overhead +1.5 ms"),
        "{err}"
    );
    for key in ["min_itl_ms", "max_itl_ms"] {
        let diff = metric(&v, key) - metric(&plain, key);
        assert!((diff - 1.5).abs() < 1e-6, "{key}: +{diff}");
    }

    // An entry fitted with fused mixed steps gives its pools `mixed_pass: fused`: the run is
    // the uncalibrated run with that key, not the plain one.
    let fused = d.join("fused.json");
    std::fs::write(
        &fused,
        r#"{"format": "dynosim-calibration", "version": 1, "families": [
  {"system": "h200_sxm", "backend": "vllm", "model": "Qwen/Qwen3-8B", "prefill_scale": 1,
   "decode_scale": 1, "fused_mixed_pass": true}]}"#,
    )
    .unwrap();
    let (v, _) = run(d, QWEN, &["--calibration", fused.to_str().unwrap()]);
    let (by_key, _) = run(d, &QWEN.replace('}', r#","mixed_pass":"fused"}"#), &[]);
    let v = without_wall_time(v);
    assert_eq!(metric(&v, "mean_ttft_ms"), metric(&by_key, "mean_ttft_ms"));
    assert_eq!(metric(&v, "mean_itl_ms"), metric(&by_key, "mean_itl_ms"));
    assert!(metric(&v, "mean_ttft_ms") < metric(&plain, "mean_ttft_ms"));

    // The user's own speedup_ratio still divides: calibrated x2 at speedup 2 is the plain run.
    let fast = QWEN.replace('}', r#","speedup_ratio":2}"#);
    let (v, _) = run(d, &fast, &["--calibration", both.to_str().unwrap()]);
    let ratio = metric(&v, "mean_ttft_ms") / metric(&plain, "mean_ttft_ms");
    assert!((ratio - 1.0).abs() < 1e-9, "x{ratio}");

    // Another family only: uncalibrated, said, and the numbers of the plain run.
    let other = calibration(
        d,
        "other.json",
        ("h100_sxm", "vllm", "Qwen/Qwen3-8B"),
        2.0,
        2.0,
    );
    let (v, err) = run(d, QWEN, &["--calibration", other.to_str().unwrap()]);
    assert!(
        err.contains("uncalibrated: no calibration for h200_sxm vllm Qwen/Qwen3-8B in the file"),
        "{err}"
    );
    assert_eq!(without_wall_time(v), without_wall_time(plain));
}

#[test]
fn a_run_without_aic_timing_is_left_uncalibrated() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (plain, _) = run(d, "{}", &[]);
    let cal = calibration(d, "c.json", ("h200_sxm", "vllm", "Qwen/Qwen3-8B"), 2.0, 2.0);
    let (v, err) = run(d, "{}", &["--calibration", cal.to_str().unwrap()]);
    assert!(
        err.contains("uncalibrated: no AIC timing (the family is AIC's system, backend and model)"),
        "{err}"
    );
    assert_eq!(without_wall_time(v), without_wall_time(plain));
}

#[test]
fn bad_calibration_files_exit_2_naming_the_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bad = d.join("bad.json");
    std::fs::write(
        &bad,
        r#"{"format": "dynosim-calibration", "version": 1, "families": [
  {"system": "s", "backend": "b", "model": "m", "prefill_scale": -1, "decode_scale": 1}]}"#,
    )
    .unwrap();
    let missing = d.join("missing.json");
    for (file, want) in [
        (
            &bad,
            format!(
                "error: --calibration: {}: families[0].prefill_scale = -1: expected a finite number > 0",
                bad.display()
            ),
        ),
        (
            &missing,
            format!(
                "error: --calibration: {}: cannot read the calibration file",
                missing.display()
            ),
        ),
    ] {
        let report = d.join("never.json");
        let out = dynosim(d)
            .args([
                "run",
                "--input-tokens",
                "100",
                "--output-tokens",
                "4",
                "--request-count",
                "2",
                "--replay-concurrency",
                "1",
                "--report-json",
                report.to_str().unwrap(),
                "--calibration",
                file.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.starts_with(&want), "{err}\nwanted: {want}");
        assert!(!report.exists());
    }
}

/// A two-point sweep (1 or 2 workers) with `engine`; leaderboard.json's rows by point id (their
/// reports without wall times) and stderr.
fn sweep(
    dir: &Path,
    out: &str,
    engine: &str,
    spec_extra: &str,
    flags: &[&str],
) -> (Vec<Value>, String) {
    let spec = dir.join("grid.yaml");
    std::fs::write(
        &spec,
        format!(
            "workload: {{input_tokens: 1024, output_tokens: 64, request_count: 48, replay_concurrency: 8}}\n\
             engine: {engine}\n\
             grid: {{num_workers: [1, 2]}}\n{spec_extra}"
        ),
    )
    .unwrap();
    let out_dir = dir.join(out);
    let out = dynosim(dir)
        .args(["sweep", spec.to_str().unwrap(), "-o"])
        .arg(&out_dir)
        .arg("--quiet")
        .args(flags)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stderr}");
    let board: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("leaderboard.json")).unwrap())
            .unwrap();
    let mut rows: Vec<Value> = board["rows"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("no rows in {board}"));
    rows.sort_by_key(|p| p["point"].as_u64());
    for r in &mut rows {
        r["report"] = without_wall_time(r["report"].take());
    }
    (rows, stderr)
}

#[test]
fn a_sweep_takes_the_spec_key_and_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Polynomial timing: every point uncalibrated, said once with the count, numbers unchanged.
    let cal = calibration(d, "c.json", ("h200_sxm", "vllm", "Qwen/Qwen3-8B"), 2.0, 2.0);
    let (plain, _) = sweep(d, "plain", "{}", "", &[]);
    let (v, err) = sweep(d, "key", "{}", "calibration: c.json\n", &[]);
    assert!(
        err.contains(&format!(
            "dynosim: calibration {}: uncalibrated: no AIC timing (the family is AIC's system, backend and model) (2 of 2 points to simulate)",
            d.join("c.json").display()
        )),
        "{err}"
    );
    assert_eq!(v, plain);
    // A missing file named by the spec is a spec error naming the key.
    let out = dynosim(d)
        .args(["sweep", d.join("grid.yaml").to_str().unwrap(), "--dry-run"])
        .output()
        .unwrap();
    assert!(out.status.success());
    std::fs::remove_file(&cal).unwrap();
    let out = dynosim(d)
        .args(["sweep", d.join("grid.yaml").to_str().unwrap(), "--dry-run"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("grid.yaml: key calibration: "), "{err}");
    assert!(err.contains("cannot read the calibration file"), "{err}");

    if !common::have_aic("a_sweep_takes_the_spec_key_and_the_flag") {
        return;
    }
    let cal = calibration(d, "c.json", ("h200_sxm", "vllm", "Qwen/Qwen3-8B"), 2.0, 2.0);
    let (plain, _) = sweep(d, "aic", QWEN, "", &[]);
    let (v, err) = sweep(
        d,
        "aic-cal",
        QWEN,
        "",
        &["--calibration", cal.to_str().unwrap()],
    );
    assert!(
        err.contains("calibrated h200_sxm vllm Qwen/Qwen3-8B: prefill time x2, decode time x2 (2 of 2 points to simulate)"),
        "{err}"
    );
    for (a, b) in plain.iter().zip(&v) {
        let ratio = metric(&b["report"], "mean_ttft_ms") / metric(&a["report"], "mean_ttft_ms");
        assert!((ratio - 2.0).abs() < 1e-9, "x{ratio}: {a} {b}");
    }
}

/// The three H200 vLLM Llama-3.1-70B rows of the validate fixture (plus an H100 row and a
/// DeepSeek-R1 row) at 2 prompts per unit of concurrency: `dynosim calibrate` fits one family
/// (leave-one-out: 3 rows), and `dynosim validate --calibration` uses the file.
#[test]
fn calibrate_fits_a_family_and_validate_uses_the_file() {
    if !common::have_aic("calibrate_fits_a_family_and_validate_uses_the_file") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rows = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/validate/silicon_rows.csv");
    let h200: Vec<String> = std::fs::read_to_string(&rows)
        .unwrap()
        .lines()
        .enumerate()
        .filter(|(i, l)| *i == 0 || l.contains("h200_sxm_vllm"))
        .map(|(_, l)| l.to_string())
        .collect();
    assert_eq!(h200.len(), 4, "header and three H200 rows");
    let h200_csv = d.join("h200.csv");
    std::fs::write(&h200_csv, h200.join("\n") + "\n").unwrap();
    let cal = d.join("cal.json");
    let (file, _, _) = calibrate(d, &h200_csv, &cal, &[]);
    assert_eq!(file.families.len(), 1, "{file:?}");
    let f = &file.families[0];
    assert_eq!(
        (f.system.as_str(), f.backend.as_str(), f.model.as_str()),
        ("h200_sxm", "vllm", "meta-llama/Meta-Llama-3.1-70B")
    );
    let fit = f.fit.as_ref().unwrap();
    assert_eq!(fit.rows.len(), 3);
    let objective = |s: &ErrorSummary| s.ttft_mean_abs_pct + s.tpot_mean_abs_pct;
    // The uncalibrated point (scales 1) is on the search's grid: the fit is never worse.
    assert!(
        objective(&fit.fitted) <= objective(&fit.uncalibrated) + 1e-9,
        "{fit:?}"
    );
    let cv = fit.cross_validated.as_ref().unwrap();
    assert_eq!(
        (cv.scheme.as_str(), cv.folds, cv.errors.n),
        ("leave-one-out", 3, 3)
    );
    assert!(fit.simulations > 0);
    // The prefill pass overhead is fitted by default and kept only where it cross-validates
    // better; the entry's figures are then those of the side kept.
    assert!(file.options["fit"]
        .as_str()
        .unwrap()
        .contains("prefill pass overhead"));
    assert!(checks_chain(fit), "{fit:?}");
    match fit.pass_overhead_check {
        Some(check) => {
            assert_eq!(
                check.kept,
                objective(&check.with) < objective(&check.without),
                "{check:?}"
            );
            if !check.kept {
                assert_eq!(f.prefill_pass_overhead_ms, 0.0, "{f:?}");
            }
        }
        // Never fitted other than 0, on all the rows or in any fold.
        None => {
            assert_eq!(f.prefill_pass_overhead_ms, 0.0, "{f:?}");
            assert!(cv
                .fold_corrections
                .iter()
                .all(|c| c.prefill_pass_overhead_ms == 0.0));
        }
    }

    // validate with the file: the H200 rows calibrated, the H100 row said to be absent.
    let out_dir = d.join("v");
    let out = dynosim(d)
        .args(["validate", rows.to_str().unwrap(), "-o"])
        .arg(&out_dir)
        .args(["--prompts-per-concurrency", "2", "-j", "2", "--calibration"])
        .arg(&cal)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("calibrated h200_sxm vllm meta-llama/Meta-Llama-3.1-70B: prefill time x"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "uncalibrated: no calibration for h100_sxm vllm meta-llama/Meta-Llama-3.1-70B in the file"
        ),
        "{stderr}"
    );
    // The calibrated rows drop validate's dispatch model (the corrections were fitted without
    // it), so they reproduce calibrate's fitted errors; the uncalibrated row keeps it
    // (Llama-3.1-70B: 80 layers x 0.8 ms).
    let mut r = csv::Reader::from_path(out_dir.join("validation.csv")).unwrap();
    let header = r.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (sys, args, ttft) = (col("system"), col("engine_args"), col("ttft_error_pct"));
    let mut abs_ttft = Vec::new();
    let (backend, mode) = (col("backend"), col("mode"));
    for rec in r.records() {
        let rec = rec.unwrap();
        if (&rec[backend], &rec[mode]) != ("vllm", "agg") {
            continue; // the fixture's disaggregated TRT-LLM row: unsupported
        }
        let e: serde_json::Value = serde_json::from_str(&rec[args]).unwrap();
        if &rec[sys] == "h200_sxm" {
            // The fitted prefill pass overhead alone (0 where the fit kept none).
            assert_eq!(
                e["prefill_pass_overhead_ms"], f.prefill_pass_overhead_ms,
                "{e}"
            );
            abs_ttft.push(rec[ttft].parse::<f64>().unwrap().abs());
        } else {
            assert_eq!(e["prefill_pass_overhead_ms"], 64.0, "{e}");
        }
    }
    let mean = abs_ttft.iter().sum::<f64>() / abs_ttft.len() as f64;
    assert!(
        (mean - fit.fitted.ttft_mean_abs_pct).abs() < 0.01,
        "validate --calibration {mean} vs calibrate's fit {}",
        fit.fitted.ttft_mean_abs_pct
    );

    // --exclude leaves a row out of the fit, says so and records it; the two rows left are
    // too few to calibrate the family (nothing to check a fit on), which is said and no entry
    // written; an id that no point has is refused before anything runs.
    let first_id = h200[1].split(',').next().unwrap().to_string();
    let cal2 = d.join("cal2.json");
    let (file2, _, stderr) = calibrate(d, &h200_csv, &cal2, &["--exclude", &first_id]);
    assert!(
        stderr.contains(&format!("calibrate: {first_id}: left out (--exclude)")),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "calibrate: h200_sxm vllm meta-llama/Meta-Llama-3.1-70B: 2 simulated row(s), fewer \
             than 3 distinct points; not calibrated"
        ),
        "{stderr}"
    );
    assert!(file2.families.is_empty(), "{file2:?}");
    assert_eq!(file2.options["exclude"], serde_json::json!([first_id]));
    let cal3 = d.join("cal3.json");
    let out = dynosim(d)
        .args(["calibrate", h200_csv.to_str().unwrap(), "-o"])
        .arg(&cal3)
        .args(["--exclude", "no-such-row"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--exclude \"no-such-row\": no measured point has this id"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!cal3.exists());
}

#[test]
fn each_deployment_shape_gets_an_entry_that_wins_for_its_pools() {
    if !common::have_aic("each_deployment_shape_gets_an_entry_that_wins_for_its_pools") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The shipped H200 rows at TP 1 and 2: 15 of each.
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("validation/llama-3.1-70b-fp8-vllm-h100-h200.csv");
    let mut r = csv::Reader::from_path(&shipped).unwrap();
    let header = r.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (sys, tp) = (col("system"), col("tp_size"));
    let rows_csv = d.join("rows.csv");
    let mut w = csv::Writer::from_path(&rows_csv).unwrap();
    w.write_record(&header).unwrap();
    let mut n = 0;
    for rec in r.records() {
        let rec = rec.unwrap();
        if &rec[sys] == "h200_sxm" && (&rec[tp] == "1" || &rec[tp] == "2") {
            w.write_record(&rec).unwrap();
            n += 1;
        }
    }
    w.flush().unwrap();
    assert_eq!(n, 30);
    let cal = d.join("cal.json");
    let (file, stdout, _) = calibrate(d, &rows_csv, &cal, &[]);
    assert_eq!(file.options["per_parallelism"], true);
    let shapes: Vec<Option<&str>> = file
        .families
        .iter()
        .map(|f| f.parallelism.as_deref())
        .collect();
    assert_eq!(shapes, [None, Some("tp1"), Some("tp2")], "{file:?}");
    for f in &file.families {
        let fit = f.fit.as_ref().unwrap();
        let want = if f.parallelism.is_some() { 15 } else { 30 };
        assert_eq!(fit.rows.len(), want, "{f:?}");
        assert!(fit.cross_validated.is_some(), "{f:?}");
    }
    assert!(stdout.contains("meta-llama/Meta-Llama-3.1-70B tp2"));
    // Each shape's record holds the family's held-out predictions of its rows: the two shapes
    // split the family's cross-validation between them, so their counts add up to its count
    // and their means, weighted by those counts, to its mean.
    let family_cv = cv_errors(&file.families[0]);
    assert!(file.families[0]
        .fit
        .as_ref()
        .unwrap()
        .wider_held_out
        .is_none());
    let wider: Vec<_> = file.families[1..]
        .iter()
        .map(|f| f.fit.as_ref().unwrap().wider_held_out.unwrap())
        .collect();
    assert_eq!(wider.iter().map(|e| e.n).sum::<usize>(), family_cv.n);
    for (get, of_family) in [
        (
            (|e: &ErrorSummary| e.ttft_mean_abs_pct) as fn(&ErrorSummary) -> f64,
            family_cv.ttft_mean_abs_pct,
        ),
        (
            |e: &ErrorSummary| e.tpot_mean_abs_pct,
            family_cv.tpot_mean_abs_pct,
        ),
    ] {
        let pooled = wider.iter().map(|e| e.n as f64 * get(e)).sum::<f64>() / family_cv.n as f64;
        assert!((pooled - of_family).abs() < 1e-9, "{pooled} vs {of_family}");
    }
    assert!(stdout.contains("held out on these rows: "), "{stdout}");
    // Both shapes' entries are kept because each predicts its rows better held out than the
    // family's entry did, and the family's record holds every row's held-out errors by the
    // entry that applies to it: here the two shapes' together.
    let objective = |e: &ErrorSummary| e.ttft_mean_abs_pct + e.tpot_mean_abs_pct;
    let shapes: Vec<ErrorSummary> = file.families[1..].iter().map(cv_errors).collect();
    for (own, wider) in shapes.iter().zip(&wider) {
        assert!(objective(own) < objective(wider), "{own:?} vs {wider:?}");
    }
    let applied = file.families[0]
        .fit
        .as_ref()
        .unwrap()
        .as_applied
        .expect("the family records its errors as applied");
    // Counted in rows; each shape's rows were each held out by two folds.
    assert_eq!(applied.n, 30);
    let n: usize = shapes.iter().map(|e| e.n).sum();
    assert_eq!(n, 60);
    let pooled = |get: fn(&ErrorSummary) -> f64| {
        shapes.iter().map(|e| e.n as f64 * get(e)).sum::<f64>() / n as f64
    };
    assert!((applied.ttft_mean_abs_pct - pooled(|e| e.ttft_mean_abs_pct)).abs() < 1e-9);
    assert!((applied.tpot_mean_abs_pct - pooled(|e| e.tpot_mean_abs_pct)).abs() < 1e-9);
    assert!(
        stdout.contains(&format!(
            "  as applied (the entry each of the 30 rows takes): cross-val {:.1}%/{:.1}%",
            applied.ttft_mean_abs_pct, applied.tpot_mean_abs_pct
        )),
        "{stdout}"
    );

    // validate with the file: each shape takes its own entry.
    validate_takes_entries(
        d,
        &rows_csv,
        &cal,
        "h200_sxm vllm meta-llama/Meta-Llama-3.1-70B",
        &["tp1", "tp2"],
    );

    // --no-per-parallelism fits the family as one, with the same figures as its entry above.
    let (one, stdout, _) = calibrate(d, &rows_csv, &d.join("one.json"), &["--no-per-parallelism"]);
    assert_eq!(one.families.len(), 1, "{one:?}");
    assert_eq!(one.options["per_parallelism"], false);
    assert_eq!(cv_errors(&one.families[0]), family_cv);
    assert!(one.families[0].fit.as_ref().unwrap().as_applied.is_none());
    assert!(!stdout.contains("as applied"), "{stdout}");
}

#[test]
fn each_quantisation_of_a_family_gets_its_own_entry() {
    if !common::have_aic("each_quantisation_of_a_family_gets_its_own_entry") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 20 measured B200 vLLM Llama-3.1-70B rows at TP 8: 10 with FP8 weights, 10 with NVFP4.
    let rows = b200_llama_csv();
    // Every entry kept, even one that predicts its rows no better than the family's.
    let keep = "--keep-narrow-entries";
    let cal = d.join("cal.json");
    let (file, stdout, _) = calibrate(d, &rows, &cal, &[keep]);
    assert_eq!(file.options["keep_narrow_entries"], true);
    let entries = labels_and_rows(&file, |f| f.quantisation.as_deref());
    assert_eq!(
        entries,
        [(None, 20), (Some("fp8"), 10), (Some("nvfp4"), 10)],
        "{file:?}"
    );
    assert!(file.families.iter().all(|f| f.parallelism.is_none()));
    assert_eq!(file.options["per_quantisation"], true);
    // Each quantisation's fit is its own: its in-sample objective is no worse than the
    // family's corrections give its rows (the family's corrections are a point it could pick
    // only if it had them on its grid, so compare with the uncalibrated point, which it has).
    for f in &file.families[1..] {
        let fit = f.fit.as_ref().unwrap();
        let obj = |s: &ErrorSummary| s.ttft_mean_abs_pct + s.tpot_mean_abs_pct;
        assert!(obj(&fit.fitted) <= obj(&fit.uncalibrated) + 1e-9, "{f:?}");
        assert!(fit.cross_validated.is_some(), "{f:?}");
    }
    assert_ne!(
        file.families[1].corrections(),
        file.families[2].corrections()
    );
    // Every entry's checks of its optional corrections (the pass overheads, fitted by default)
    // lead to its figures.
    for f in &file.families {
        assert!(checks_chain(f.fit.as_ref().unwrap()), "{f:?}");
    }
    assert!(
        stdout.contains("meta-llama/Meta-Llama-3.1-70B nvfp4 "),
        "{stdout}"
    );
    assert!(
        stdout.contains("  as applied (the entry each of the 20 rows takes): cross-val "),
        "{stdout}"
    );

    // validate with the file: each quantisation takes its own entry.
    validate_takes_entries(d, &rows, &cal, B200_LLAMA, &["fp8", "nvfp4"]);

    // By default an entry is kept only where it predicts its rows better held out than the
    // family's entry did. The two fits are the same as above; on these rows one of them is no
    // better (the NVFP4 one, with 2 prompts per unit of concurrency), so its rows take the
    // family's entry, and stderr says so with both figures.
    let pruned = d.join("pruned.json");
    let (chosen, _, stderr) = calibrate(d, &rows, &pruned, &[]);
    assert_eq!(chosen.options["keep_narrow_entries"], false);
    let objective = |e: &ErrorSummary| e.ttft_mean_abs_pct + e.tpot_mean_abs_pct;
    let mut dropped = Vec::new();
    for f in &file.families[1..] {
        let fit = f.fit.as_ref().unwrap();
        let wider = fit.wider_held_out.unwrap();
        let q = f.quantisation.as_deref().unwrap();
        let better = objective(&cv_errors(f)) < objective(&wider);
        let in_file = chosen.families.iter().find(|g| g.family() == f.family());
        assert_eq!(in_file, better.then_some(f), "{q}");
        let note = format!(
            "calibrate: b200_sxm vllm meta-llama/Meta-Llama-3.1-70B {q}: held out on its rows \
             {:.1}%/{:.1}% by its own fit, {:.1}%/{:.1}% by the wider entry's, no better; the \
             wider entry applies",
            cv_errors(f).ttft_mean_abs_pct,
            cv_errors(f).tpot_mean_abs_pct,
            wider.ttft_mean_abs_pct,
            wider.tpot_mean_abs_pct
        );
        assert_eq!(stderr.contains(&note), !better, "{note} / {stderr}");
        if !better {
            dropped.push(q);
        }
    }
    assert_eq!(dropped, ["nvfp4"]);
    assert_eq!(
        chosen.families[0].corrections(),
        file.families[0].corrections()
    );
    assert_eq!(cv_errors(&chosen.families[0]), cv_errors(&file.families[0]));
    let applied = chosen.families[0].fit.as_ref().unwrap().as_applied.unwrap();
    assert_eq!(applied.n, 20);
    // validate with that file: the NVFP4 rows take the family's entry.
    let stderr = validate_with(d, &rows, &pruned);
    for note in [
        "calibrated b200_sxm vllm meta-llama/Meta-Llama-3.1-70B fp8: ",
        "calibrated b200_sxm vllm meta-llama/Meta-Llama-3.1-70B: ",
    ] {
        assert!(stderr.contains(note), "{note} not in {stderr}");
    }
    assert!(!stderr.contains("nvfp4"), "{stderr}");

    // --no-per-quantisation fits the family as one.
    let pooled = d.join("pooled.json");
    let (file, _, _) = calibrate(d, &rows, &pooled, &["--no-per-quantisation"]);
    assert_eq!(file.families.len(), 1, "{file:?}");
    assert_eq!(file.options["per_quantisation"], false);
}

#[test]
fn an_mtp_pool_is_calibrated_with_its_decode_ratio_kept_at_one() {
    if !common::have_aic("an_mtp_pool_is_calibrated_with_its_decode_ratio_kept_at_one") {
        return;
    }
    // Three AIPerf exports (the real one of tests/data/validate, at ISL 1024, OSL 64 and
    // concurrency 2, 4, 8 with measured TTFTs of their own), simulated on Qwen3-8B with
    // multi-token prediction.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let export = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/validate/aic_all/validation/medium/profile_export_aiperf.json");
    let base: Value = serde_json::from_str(&std::fs::read_to_string(export).unwrap()).unwrap();
    let mut exports = Vec::new();
    for (i, c) in [2, 4, 8].into_iter().enumerate() {
        let mut e = base.clone();
        let cfg = &mut e["input_config"];
        cfg["loadgen"]["concurrency"] = c.into();
        cfg["loadgen"]["request_count"] = 48.into();
        cfg["input"]["prompt"]["input_tokens"]["mean"] = 1024.into();
        cfg["input"]["prompt"]["output_tokens"]["mean"] = 64.into();
        e["time_to_first_token"]["avg"] = (60.0 + 40.0 * i as f64).into();
        e["inter_token_latency"]["avg"] = (6.0 + i as f64).into();
        let path = d.join(format!("c{c}.json"));
        std::fs::write(&path, e.to_string()).unwrap();
        exports.push(path);
    }
    let engine = QWEN.replace('}', r#","engine_type":"vllm","aic_nextn":2}"#);
    let cal = d.join("cal.json");
    let o = dynosim(d)
        .arg("calibrate")
        .args(&exports)
        .args(["-o", cal.to_str().unwrap(), "--extra-engine-args", &engine])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{stderr}");
    let file = CalibrationFile::parse(&std::fs::read_to_string(&cal).unwrap()).unwrap();
    assert_eq!(file.families.len(), 1, "{stderr}");
    let f = &file.families[0];
    assert!(f.prefill_scale != f.decode_scale, "{f:?}");

    // validate with the file: every point simulates, and the engine args it records leave
    // decode_speedup_ratio at 1 (DynoSim's rule), the decode step's share in decode_time_scale.
    let out_dir = d.join("v");
    let o = dynosim(d)
        .arg("validate")
        .args(&exports)
        .args([
            "-o",
            out_dir.to_str().unwrap(),
            "--extra-engine-args",
            &engine,
        ])
        .args(["--calibration", cal.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{stderr}");
    let mut r = csv::Reader::from_path(out_dir.join("validation.csv")).unwrap();
    let header = r.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (status, args, ttft) = (col("status"), col("engine_args"), col("predicted_ttft_ms"));
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 3);
    for rec in &rows {
        assert_eq!(&rec[status], "ok", "{rec:?}");
    }
    let recorded = &rows[2][args];
    let e: Value = serde_json::from_str(recorded).unwrap();
    assert_eq!(e["aic_nextn"], 2, "{e}");
    assert!(e.get("decode_speedup_ratio").is_none(), "{e}");
    let ratio = f.decode_scale / f.prefill_scale;
    assert!(
        (metric(&e, "decode_time_scale") - ratio).abs() < 1e-9,
        "{e}"
    );

    // `dynosim run` takes the recorded args as they are and predicts what validate did; so
    // does a run calibrated by the file.
    let (recorded_run, _) = run(d, recorded, &[]);
    let (calibrated_run, stderr) = run(d, &engine, &["--calibration", cal.to_str().unwrap()]);
    assert!(
        stderr.contains("calibrated h200_sxm vllm Qwen/Qwen3-8B"),
        "{stderr}"
    );
    assert_eq!(
        without_wall_time(recorded_run.clone()),
        without_wall_time(calibrated_run)
    );
    let predicted: f64 = rows[2][ttft].parse().unwrap();
    let mean_ttft = metric(&recorded_run, "mean_ttft_ms");
    assert!(
        (mean_ttft - predicted).abs() < 1e-3,
        "{mean_ttft} {predicted}"
    );
}

#[test]
fn calibrate_fits_a_kv_pool_where_the_servers_queued_for_a_smaller_one() {
    if !common::have_aic("calibrate_fits_a_kv_pool_where_the_servers_queued_for_a_smaller_one") {
        return;
    }
    // The shipped H100 TP-2 rows: at concurrency 32 and 64 with 8,192-token inputs or outputs
    // the servers queued as if their KV pool held half of what AIC's memory model gives.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rows = shipped_rows(
        d,
        "tp2.csv",
        |l| l.contains("h100_sxm") && l.contains("_tp2_"),
        15,
    );
    // The decode pass overhead is left out of both, so that the check below compares the
    // pool factor alone (with both, the overhead is checked against what this check kept).
    let no_dec = "--no-fit-decode-overhead";
    let (plain, plain_text, _, _) = calibrate_as_shipped(d, &rows, "plain.json", &[no_dec]);
    let (kv, _, stdout, kv_path) =
        calibrate_as_shipped(d, &rows, "kv.json", &["--fit-kv-pool", no_dec]);
    // Without the flag the pool keeps its size and the file has no factor.
    assert_eq!(plain.families[0].kv_pool_scale, 1.0);
    assert!(!plain_text.contains("kv_pool_scale"), "{plain_text}");
    // With it: a factor below 1 on the lattice 2^(j/4), named in the options and the table,
    // and a fit closer than the one without.
    let f = &kv.families[0];
    assert!(f.kv_pool_scale < 1.0, "{f:?}");
    let j = 4.0 * f.kv_pool_scale.log2();
    assert!((j - j.round()).abs() < 1e-9, "{}", f.kv_pool_scale);
    assert!(
        kv.options["fit"].as_str().unwrap().contains("KV pool"),
        "{:?}",
        kv.options
    );
    assert!(stdout.contains("kv pool"), "{stdout}");
    // It cross-validates better than the fit without one, which is the plain run's fit.
    let check = f.fit.as_ref().unwrap().kv_pool_check.unwrap();
    assert!(check.kept, "{check:?}");
    let plain_cv = cv_errors(&plain.families[0]);
    assert_eq!(check.without, plain_cv);
    assert!(
        check.with.ttft_mean_abs_pct + check.with.tpot_mean_abs_pct
            < plain_cv.ttft_mean_abs_pct + plain_cv.tpot_mean_abs_pct,
        "{check:?}"
    );
    assert!(stdout.contains("KV pool factor kept"), "{stdout}");
    assert!(plain.families[0]
        .fit
        .as_ref()
        .unwrap()
        .kv_pool_check
        .is_none());
    let (a, b) = (
        f.fit.as_ref().unwrap().fitted,
        plain.families[0].fit.as_ref().unwrap().fitted,
    );
    assert!(
        a.ttft_mean_abs_pct + a.tpot_mean_abs_pct + 2.0 < b.ttft_mean_abs_pct + b.tpot_mean_abs_pct,
        "{a:?} vs {b:?}"
    );

    // validate with the file: every row simulated with the factor in its engine args, the
    // note says so, and the errors are calibrate's fitted ones.
    let out_dir = d.join("v");
    let out = dynosim(d)
        .args(["validate", rows.to_str().unwrap(), "-o"])
        .arg(&out_dir)
        .args(["-j", "2", "--calibration"])
        .arg(&kv_path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains(", KV pool x0."), "{stderr}");
    let mut r = csv::Reader::from_path(out_dir.join("validation.csv")).unwrap();
    let header = r.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (args, ttft) = (col("engine_args"), col("ttft_error_pct"));
    let mut abs_ttft = Vec::new();
    for rec in r.records() {
        let rec = rec.unwrap();
        let e: Value = serde_json::from_str(&rec[args]).unwrap();
        assert_eq!(e["kv_pool_scale"], f.kv_pool_scale, "{e}");
        abs_ttft.push(rec[ttft].parse::<f64>().unwrap().abs());
    }
    assert_eq!(abs_ttft.len(), 15);
    let mean = abs_ttft.iter().sum::<f64>() / 15.0;
    assert!(
        (mean - a.ttft_mean_abs_pct).abs() < 0.01,
        "validate --calibration {mean} vs calibrate's fit {}",
        a.ttft_mean_abs_pct
    );
}

#[test]
fn a_decode_overhead_that_does_not_cross_validate_better_is_dropped() {
    if !common::have_aic("a_decode_overhead_that_does_not_cross_validate_better_is_dropped") {
        return;
    }
    // The shipped H100 rows: fitted on a third, each fold trades the decode scale against a
    // decode pass overhead of its own and predicts the other rows' TPOT far worse than the fit
    // without one, so the entry keeps the fit without.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rows = shipped_rows(d, "h100.csv", |l| l.contains("h100_sxm"), 45);
    // The family's entry alone: its three shapes would each get one of their own. The prefill
    // pass overhead is left out of both, so that the check compares the decode overhead alone.
    let one = ["--no-per-parallelism", "--no-fit-pass-overhead"];
    let (plain, _, _, _) = calibrate_as_shipped(
        d,
        &rows,
        "plain.json",
        &["--no-fit-decode-overhead", one[0], one[1]],
    );
    let (checked, _, stdout, _) = calibrate_as_shipped(d, &rows, "decode.json", &one);
    let (p, c) = (&plain.families[0], &checked.families[0]);
    let (pf, cf) = (p.fit.as_ref().unwrap(), c.fit.as_ref().unwrap());
    assert!(pf.decode_overhead_check.is_none());
    let check = cf.decode_overhead_check.unwrap();
    assert!(!check.kept, "{check:?}");
    let held_out = |e: &ErrorSummary| e.ttft_mean_abs_pct + e.tpot_mean_abs_pct;
    assert!(
        held_out(&check.without) < held_out(&check.with),
        "{check:?}"
    );
    // The entry is the fit without the overhead: the plain run's corrections and figures.
    let plain_cv = pf.cross_validated.as_ref().unwrap().errors;
    assert_eq!(check.without, plain_cv);
    assert_eq!(cf.cross_validated.as_ref().unwrap().errors, plain_cv);
    assert_eq!(c.corrections(), p.corrections());
    assert_eq!(c.decode_pass_overhead_ms, 0.0);
    assert!(
        stdout.contains("decode pass overhead dropped: cross-validated"),
        "{stdout}"
    );
    // What the fit adjusts is named: the overhead is fitted by default.
    let fit_of = |f: &CalibrationFile| f.options["fit"].as_str().unwrap().to_string();
    assert!(!fit_of(&plain).contains("decode"), "{:?}", plain.options);
    assert!(
        fit_of(&checked).contains("decode pass overhead"),
        "{:?}",
        checked.options
    );
}

#[test]
fn each_decoding_mode_of_a_family_gets_its_own_entry() {
    if !common::have_aic("each_decoding_mode_of_a_family_gets_its_own_entry") {
        return;
    }
    // Six H200 TRT-LLM DeepSeek-R1 rows of plain servers and six of servers with multi-token
    // prediction (validate simulates the latter with aic_nextn 3, as InferenceX's MTP script
    // ran them): one entry per decoding mode besides the family's, each fitted on its rows.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rows = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/validate/h200_trtllm_dsr1_plain_mtp.csv");
    // Every entry kept, even one that predicts its rows no better than the family's.
    let (file, stdout, _) = calibrate(d, &rows, &d.join("cal.json"), &["--keep-narrow-entries"]);
    let labels: Vec<Option<&str>> = file
        .families
        .iter()
        .map(|f| f.decoding.as_deref())
        .collect();
    assert_eq!(labels, [None, Some("mtp3"), Some("plain")], "{stdout}");
    for f in &file.families {
        let fit = f.fit.as_ref().unwrap();
        let want = if f.decoding.is_none() { 12 } else { 6 };
        assert_eq!(fit.rows.len(), want, "{f:?}");
        assert!(f.quantisation.is_none() && f.parallelism.is_none(), "{f:?}");
    }
    assert!(
        fit_rows_all(&file, "mtp3", "_ep8_"),
        "the MTP entry holds the EP 8 rows"
    );
    assert!(
        fit_rows_all(&file, "plain", "_ep1_"),
        "the plain entry holds the EP 1 rows"
    );
    assert_eq!(file.options["per_decoding"], true);
    assert!(
        stdout.contains("h200_sxm trtllm deepseek-ai/DeepSeek-R1 mtp3"),
        "{stdout}"
    );
    assert!(stdout.contains("as applied"), "{stdout}");
    // Fitted as one (here each mode is also a deployment shape, EP 8 or EP 1, which would
    // otherwise get entries of its own).
    let one = ["--no-per-decoding", "--no-per-parallelism"];
    let (pooled, _, _) = calibrate(d, &rows, &d.join("pooled.json"), &one);
    assert_eq!(pooled.families.len(), 1);
    assert_eq!(pooled.options["per_decoding"], false);

    // validate with the file: each row takes its mode's entry, and an MTP row's engine args
    // carry that entry's decode share in decode_time_scale.
    let stderr = validate_with(d, &rows, &d.join("cal.json"));
    for mode in ["mtp3", "plain"] {
        assert!(
            stderr.contains(&format!(
                "calibrated h200_sxm trtllm deepseek-ai/DeepSeek-R1 {mode}:"
            )),
            "{stderr}"
        );
    }
    let (mtp, plain) = (entry_of(&file, "mtp3"), entry_of(&file, "plain"));
    let mut r = csv::Reader::from_path(d.join("v/validation.csv")).unwrap();
    let header = r.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (status, args) = (col("status"), col("engine_args"));
    let mut seen = (0, 0);
    let mut uncalibrated = Vec::new();
    for rec in r.records().map(Result::unwrap) {
        assert_eq!(&rec[status], "ok", "{rec:?}");
        let e: Value = serde_json::from_str(&rec[args]).unwrap();
        let mut plain_args = e.clone();
        for k in ["speedup_ratio", "decode_time_scale", "request_overhead_ms"] {
            plain_args.as_object_mut().unwrap().remove(k);
        }
        uncalibrated.push(plain_args);
        let prefill = 1.0 / metric(&e, "speedup_ratio");
        if e.get("aic_nextn").is_some() {
            assert!((prefill - mtp.prefill_scale).abs() < 1e-9, "{e}");
            let ratio = mtp.decode_scale / mtp.prefill_scale;
            assert!(
                (metric(&e, "decode_time_scale") - ratio).abs() < 1e-9,
                "{e}"
            );
            seen.0 += 1;
        } else {
            assert!((prefill - plain.prefill_scale).abs() < 1e-9, "{e}");
            seen.1 += 1;
        }
    }
    assert_eq!(seen, (6, 6));

    // `dynosim run` picks the entry of its pool's decoding mode too.
    let cal = d.join("cal.json");
    for (mode, e) in [("plain", &uncalibrated[0]), ("mtp3", &uncalibrated[11])] {
        let (_, stderr) = run(d, &e.to_string(), &["--calibration", cal.to_str().unwrap()]);
        assert!(
            stderr.contains(&format!(
                "calibrated h200_sxm trtllm deepseek-ai/DeepSeek-R1 {mode}:"
            )),
            "{stderr}"
        );
    }
}

/// The file's entry of decoding mode `mode` (there must be one).
/// Each entry of `file` in order: its label at one level (`None` for a wider entry) and how
/// many rows it was fitted on.
fn labels_and_rows(
    file: &CalibrationFile,
    label: impl Fn(&FamilyCalibration) -> Option<&str>,
) -> Vec<(Option<&str>, usize)> {
    file.families
        .iter()
        .map(|f| (label(f), f.fit.as_ref().unwrap().rows.len()))
        .collect()
}

fn entry_of<'a>(file: &'a CalibrationFile, mode: &str) -> &'a FamilyCalibration {
    file.families
        .iter()
        .find(|f| f.decoding.as_deref() == Some(mode))
        .unwrap_or_else(|| panic!("no entry of decoding mode {mode}"))
}

/// Whether every row the entry of decoding mode `mode` was fitted on has `needle` in its id.
fn fit_rows_all(file: &CalibrationFile, mode: &str, needle: &str) -> bool {
    entry_of(file, mode)
        .fit
        .as_ref()
        .is_some_and(|fit| fit.rows.iter().all(|id| id.contains(needle)))
}

/// The 20 B200 vLLM Llama-3.1-70B rows of the test data (10 FP8, 10 NVFP4 at TP 8), as a file.
fn b200_llama_csv() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/validate/b200_llama_fp8_nvfp4.csv")
}

/// The same rows' text, header first.
fn b200_llama_rows() -> String {
    std::fs::read_to_string(b200_llama_csv()).unwrap()
}

/// The header of `rows` and, for each of its FP8 rows, the lines `each` makes of it.
fn fp8_rows_as(rows: &str, each: impl Fn(&str) -> String) -> String {
    let mut lines = rows.lines();
    let mut csv = format!("{}\n", lines.next().unwrap());
    for line in lines.filter(|l| l.contains(",fp8,agg,")) {
        csv.push_str(&each(line));
    }
    csv
}

/// Rows of one family measured on two releases of the serving engine get an entry per release:
/// the 10 B200 vLLM Llama-3.1-70B FP8 rows at TP 8 as measured (vLLM "0.19.0"), and the same
/// rows as a release whose servers took 30 % longer for everything ("0.17.0"). Each release's
/// entry is kept (it predicts its rows better than the family's fit of both), the slow
/// release's fit is the other's scaled by 1.3, and `validate` gives each row its release's
/// entry through the `server_version` of its pools.
#[test]
fn each_release_of_the_serving_engine_gets_its_own_entry() {
    if !common::have_aic("each_release_of_the_serving_engine_gets_its_own_entry") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let shipped = b200_llama_rows();
    let csv = fp8_rows_as(&shipped, |line| {
        let cells: Vec<&str> = line.split(',').collect();
        let k = cells.len();
        let mut out = String::new();
        for (release, slower) in [("0.19.0", 1.0), ("0.17.0", 1.3)] {
            let mut row: Vec<String> = cells.iter().map(|c| c.to_string()).collect();
            row[0] = format!("{}_{release}", cells[0]);
            // backend_version follows the source column, which holds `;`-separated fields.
            row[3] = release.to_string();
            for c in [k - 2, k - 1] {
                let x: f64 = cells[c].parse().unwrap();
                row[c] = format!("{}", x * slower);
            }
            out.push_str(&row.join(","));
            out.push('\n');
        }
        out
    });
    assert_eq!(csv.lines().count(), 21);
    let rows = d.join("two_releases.csv");
    std::fs::write(&rows, csv).unwrap();
    let cal = d.join("cal.json");
    let (file, stdout, stderr) = calibrate(d, &rows, &cal, &[]);
    assert_eq!(file.options["per_version"], true);
    let entries = labels_and_rows(&file, |f| f.server_version.as_deref());
    assert_eq!(
        entries,
        [(None, 20), (Some("0.17.0"), 10), (Some("0.19.0"), 10)],
        "{stderr}"
    );
    let (slow, fast) = (&file.families[1], &file.families[2]);
    let close = |a: f64, b: f64| (a - b).abs() <= 0.01 * b.abs().max(1e-9);
    assert!(
        close(slow.decode_scale, 1.3 * fast.decode_scale),
        "{slow:?} {fast:?}"
    );
    assert!(
        close(slow.prefill_scale, 1.3 * fast.prefill_scale),
        "{slow:?} {fast:?}"
    );
    // Each release's held-out errors beat what the family's entry predicts of its rows.
    for f in [slow, fast] {
        let fit = f.fit.as_ref().unwrap();
        let own = cv_errors(f);
        let wider = fit.wider_held_out.unwrap();
        assert!(own.objective() < wider.objective(), "{f:?}");
    }
    assert!(
        stdout.contains("meta-llama/Meta-Llama-3.1-70B v0.17.0 "),
        "{stdout}"
    );

    // validate with the file: each row takes its release's entry.
    validate_takes_entries(d, &rows, &cal, B200_LLAMA, &["v0.17.0", "v0.19.0"]);
    // Fitted as one (--no-per-version), the family alone.
    let (one, _, _) = calibrate(d, &rows, &d.join("one.json"), &["--no-per-version"]);
    assert!(one.families.iter().all(|f| f.server_version.is_none()));
    assert_eq!(one.options["per_version"], false);

    // Rows that name no release (all 20 shipped rows, FP8 and NVFP4, as shipped) are fitted
    // together under the family's entry and narrowed by quantisation (every entry kept here);
    // a pool of a release with an entry takes its release's entry before theirs, a pool
    // naming no release theirs.
    let mut with_blank = std::fs::read_to_string(&rows).unwrap();
    with_blank.extend(shipped.lines().skip(1).map(|l| format!("{l}\n")));
    let blank = d.join("with_blank.csv");
    std::fs::write(&blank, with_blank).unwrap();
    let (file, _, _) = calibrate(
        d,
        &blank,
        &d.join("blank.json"),
        &["--keep-narrow-entries", "--no-per-parallelism"],
    );
    let entries = labels_and_rows(&file, |f| {
        f.server_version.as_deref().or(f.quantisation.as_deref())
    });
    assert_eq!(
        entries,
        [
            (None, 40),
            (Some("0.17.0"), 10),
            (Some("0.19.0"), 10),
            (Some("fp8"), 10),
            (Some("nvfp4"), 10)
        ],
        "{file:?}"
    );
    assert!(file.families[3..]
        .iter()
        .all(|f| f.server_version.is_none()));
    let pool = |release: Option<&str>| Family {
        decoding: Some("plain".into()),
        server_version: release.map(str::to_string),
        quantisation: Some("fp8".into()),
        parallelism: Some("tp8".into()),
        ..file.families[0].family()
    };
    let taken = |f: Family| file.get(&f).unwrap().family().to_string();
    assert_eq!(taken(pool(Some("0.19.0"))), format!("{B200_LLAMA} v0.19.0"));
    assert_eq!(taken(pool(None)), format!("{B200_LLAMA} fp8"));
    assert_eq!(taken(pool(Some("0.18.0"))), format!("{B200_LLAMA} fp8"));
}

#[test]
fn repeats_of_a_point_are_held_out_together() {
    if !common::have_aic("repeats_of_a_point_are_held_out_together") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The 10 FP8 rows, each benchmarked twice (the table holds such repeats, often with the
    // very same figures): 20 rows, 10 points.
    let csv = fp8_rows_as(&b200_llama_rows(), |line| {
        let (id, rest) = line.split_once(',').unwrap();
        format!("{line}\n{id}_again,{rest}\n")
    });
    let rows = d.join("repeats.csv");
    std::fs::write(&rows, csv).unwrap();
    // Leave-one-out leaves a point out with its repeat: 10 fits, each checked on 2 rows.
    let (file, stdout, stderr) = calibrate(d, &rows, &d.join("cal.json"), &["--loo-below", "100"]);
    assert_eq!(file.families.len(), 1, "{stderr}");
    let fit = file.families[0].fit.as_ref().unwrap();
    assert_eq!(fit.rows.len(), 20);
    let cv = fit.cross_validated.as_ref().unwrap();
    assert_eq!(
        (cv.scheme.as_str(), cv.folds, cv.points, cv.errors.n),
        ("leave-one-out", 10, Some(10), 20)
    );
    assert!(
        stdout.contains(
            "cross-validated over 10 distinct points: 10 of the 20 rows repeat another row's \
             point and are held out with it"
        ),
        "{stdout}"
    );
}

/// A narrower entry needs 6 distinct points, not 6 rows: 3 FP8 points measured twice each are
/// 6 rows, but a fit on them could be checked on 3 points only, so the FP8 rows take the
/// family's entry (even with `--keep-narrow-entries`), while the 10 NVFP4 points get theirs.
#[test]
fn a_narrower_entry_counts_points_not_rows() {
    if !common::have_aic("a_narrower_entry_counts_points_not_rows") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let all = b200_llama_rows();
    let mut csv = String::new();
    let mut fp8 = 0;
    for (i, line) in all.lines().enumerate() {
        if i > 0 && line.contains(",fp8,agg,") {
            fp8 += 1;
            if fp8 > 3 {
                continue;
            }
            let (id, rest) = line.split_once(',').unwrap();
            csv.push_str(&format!("{line}\n{id}_again,{rest}\n"));
        } else {
            csv.push_str(&format!("{line}\n"));
        }
    }
    let rows = d.join("repeats.csv");
    std::fs::write(&rows, csv).unwrap();
    let (file, _, stderr) = calibrate(d, &rows, &d.join("cal.json"), &["--keep-narrow-entries"]);
    let entries = labels_and_rows(&file, |f| f.quantisation.as_deref());
    assert_eq!(entries, [(None, 16), (Some("nvfp4"), 10)], "{stderr}");
    assert!(
        stderr.contains(
            "calibrate: b200_sxm vllm meta-llama/Meta-Llama-3.1-70B fp8: 6 simulated rows \
             measuring 3 distinct point(s), fewer than 6 distinct points; the wider entry's \
             corrections apply"
        ),
        "{stderr}"
    );
}
