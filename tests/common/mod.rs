//! Helpers shared by integration tests (each test crate includes this with `mod common;` and
//! calls the ones it needs): whether AIConfigurator's Python package is there, the report of a
//! `dynosim run`, and whether a calibrated entry's checks lead to its figures.
// Every test crate uses a subset of these helpers.
#![allow(dead_code)]

use dynosim::calibrate::{ErrorSummary, FitRecord, OptionCheck};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// The Python that holds aiconfigurator-core: `DYNOSIM_PYTHON`, else `python3`.
pub fn python() -> String {
    std::env::var("DYNOSIM_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Whether the AIC package is importable; without it, a test is skipped (outside CI).
pub fn have_aic(test: &str) -> bool {
    can_import(
        &python(),
        "aiconfigurator_core",
        test,
        &format!("aiconfigurator-core (DYNOSIM_PYTHON={})", python()),
        "`pip install aiconfigurator-core==0.12.0` (or DYNOSIM_PYTHON)",
    )
}

/// Whether `py` imports `module`. Without it a test is skipped with a line saying to
/// `install`, except in CI, which must provide `what`.
pub fn can_import(py: &str, module: &str, test: &str, what: &str, install: &str) -> bool {
    let ok = Command::new(py)
        .args(["-c", &format!("import {module}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: CI must provide {what}"
        );
        eprintln!("skipped: {test} needs {install}");
    }
    ok
}

/// A finished `dynosim run` that must have succeeded (else the test fails with its stderr):
/// the report it wrote to `report` (its `--report-json`), and its stderr.
pub fn report_of(out: &Output, report: &Path) -> (Value, String) {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "dynosim run failed: {stderr}");
    let text =
        std::fs::read_to_string(report).unwrap_or_else(|e| panic!("{}: {e}", report.display()));
    let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", report.display()));
    (v, stderr)
}

/// Drops a report's fields that measure the simulator's own speed (wall time and the rates
/// over it), leaving what was simulated.
pub fn simulated_only(mut report: Value) -> Value {
    if let Value::Object(m) = &mut report {
        for k in [
            "wall_time_ms",
            "processed_tokens_per_s",
            "processed_output_tokens_per_s",
        ] {
            m.remove(k);
        }
    }
    report
}

/// The report of a `dynosim run` (which must succeed) of 160 synthetic requests, lengths drawn
/// around 512 prompt and 64 output tokens (`--random-range-ratio 0.5`), at closed-loop
/// `concurrency` on one worker of `engine_args`, plus `extra` flags; simulated fields only
/// ([`simulated_only`]).
pub fn run_160_requests(engine_args: &str, concurrency: u32, extra: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let c = concurrency.to_string();
    let out = assert_cmd::cargo::cargo_bin_cmd!("dynosim")
        .current_dir(dir.path())
        .args(["run", "--input-tokens", "512", "--output-tokens", "64"])
        .args(["--random-range-ratio", "0.5", "--request-count", "160"])
        .args([
            "--replay-concurrency",
            &c,
            "--extra-engine-args",
            engine_args,
        ])
        .args(["--report-json", "r.json"])
        .args(extra)
        .output()
        .unwrap();
    simulated_only(report_of(&out, &dir.path().join("r.json")).0)
}

/// Whether an entry's checks of its optional corrections chain: in some order, each started
/// from what the one before it kept, and the last kept the entry's cross-validated figures (a
/// check that drops its correction has the others checked again in the fit without it, and the
/// file keeps each correction's last check).
pub fn checks_chain(fit: &FitRecord) -> bool {
    let checks: Vec<OptionCheck> = [
        fit.kv_pool_check,
        fit.pass_overhead_check,
        fit.decode_overhead_check,
    ]
    .into_iter()
    .flatten()
    .collect();
    let end = fit.cross_validated.as_ref().map(|c| c.errors);
    end.is_some_and(|end| chain_from(&checks, None, end))
}

/// Whether `checks` can follow one another from `last` (any start where `None`) to `end`.
fn chain_from(checks: &[OptionCheck], last: Option<ErrorSummary>, end: ErrorSummary) -> bool {
    if checks.is_empty() {
        return last.is_none_or(|l| l == end);
    }
    (0..checks.len()).any(|i| {
        let c = checks[i];
        let kept = if c.kept { c.with } else { c.without };
        let mut rest = checks.to_vec();
        rest.remove(i);
        last.is_none_or(|l| l == c.with) && chain_from(&rest, Some(kept), end)
    })
}
