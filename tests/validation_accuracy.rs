//! The accuracy CI holds: `dynosim validate` and `dynosim calibrate` on the shipped measured rows
//! (`validation/`), compared with the figures recorded in `validation/recorded.json`. A group's
//! mean absolute TTFT or TPOT error that grows by more than the recorded tolerance (2 points),
//! or a row that stops being simulated, fails the test (see docs/accuracy.md).

mod common;

use common::checks_chain;
use dynosim::calibrate::FitRecord;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn dynosim() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dynosim"));
    c.env("DYNOSIM_PYTHON", common::python());
    c
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn figure(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("no number {key} in {v}"))
}

/// `dynosim calibrate ROWS --quiet -o FILE` with `extra` flags; it must succeed. The file.
fn calibrate(rows: &Path, file: &Path, extra: &[&str]) -> Value {
    let o = dynosim()
        .arg("calibrate")
        .arg(rows)
        .arg("--quiet")
        .args(extra)
        .arg("-o")
        .arg(file)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    read_json(file)
}

/// The widest entry of a recorded group's family in a calibration file.
fn family_entry<'a>(file: &'a Value, group: &Value) -> &'a Value {
    file["families"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["system"] == group["system"]
                && f["backend"] == group["backend"]
                && f["parallelism"].is_null()
        })
        .unwrap_or_else(|| panic!("calibrate fitted no family {}", group["system"]))
}

/// Fails with every figure that grew past the recorded one plus the tolerance.
fn check(what: &str, measured: &[(String, f64, f64)]) {
    let bad: Vec<String> = measured
        .iter()
        .filter(|(_, now, recorded)| now > recorded)
        .map(|(name, now, recorded)| format!("{name}: {now:.2} % > {recorded:.2} % allowed"))
        .collect();
    assert!(bad.is_empty(), "{what}: errors grew:\n{}", bad.join("\n"));
}

#[test]
fn the_shipped_rows_stay_as_close_as_recorded() {
    if !common::have_aic("the_shipped_rows_stay_as_close_as_recorded") {
        return;
    }
    let recorded = read_json(&root().join("validation/recorded.json"));
    let tol = figure(&recorded, "tolerance_points");
    let rows = root().join(recorded["rows"].as_str().unwrap());
    let groups = recorded["groups"].as_array().unwrap();
    let dir = tempfile::tempdir().unwrap();

    // Uncalibrated: validate's groups, with the default dispatch model (AIC's, on these vLLM
    // rows) and without (the engine's passes alone).
    let mut figures = Vec::new();
    for (recorded_key, dispatch) in [
        ("uncalibrated", "engines"),
        ("uncalibrated_no_dispatch", "none"),
    ] {
        let out = dir.path().join(recorded_key);
        let o = dynosim()
            .arg("validate")
            .arg(&rows)
            .args(["--quiet", "--dispatch-overhead", dispatch, "-o"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v = read_json(&out.join("validation.json"));
        for g in groups {
            let name = format!("{} {} {}", g["system"], g["backend"], g["model"]);
            let now = v["groups"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| {
                    ["system", "backend", "model", "mode"]
                        .iter()
                        .all(|k| x[*k] == g[*k])
                })
                .unwrap_or_else(|| panic!("validate has no group {name}"));
            assert_eq!(now["ok"], g["ok"], "{name}: rows simulated");
            for (metric, key) in [("ttft", "ttft_mean_abs_pct"), ("tpot", "tpot_mean_abs_pct")] {
                figures.push((
                    format!("{name} {recorded_key} {metric}"),
                    figure(&now[metric], "mean_abs_pct"),
                    figure(&g[recorded_key], key) + tol,
                ));
            }
        }
    }
    check("dynosim validate", &figures);

    // Calibrated, default options: the family entry's cross-validated errors (fit on a
    // third, checked on the rest), and every row held out by the entry that applies to it (the
    // deployment shapes' entries, where they predict their rows better than the family's).
    let c = calibrate(&rows, &dir.path().join("calibration.json"), &[]);
    let mut figures = Vec::new();
    for g in groups {
        let name = format!("{} {}", g["system"], g["backend"]);
        let fam = family_entry(&c, g);
        let cv = &fam["fit"]["cross_validated"]["errors"];
        let applied = &fam["fit"]["as_applied"];
        for key in ["ttft_mean_abs_pct", "tpot_mean_abs_pct"] {
            figures.push((
                format!("{name} cross-validated {key}"),
                figure(cv, key),
                figure(&g["cross_validated"], key) + tol,
            ));
            figures.push((
                format!("{name} as applied {key}"),
                figure(applied, key),
                figure(&g["as_applied"], key) + tol,
            ));
        }
    }
    check("dynosim calibrate", &figures);

    // With the KV pool fitted too: every row held out by the entry that applies to it.
    let c = calibrate(
        &rows,
        &dir.path().join("per-shape.json"),
        &["--fit-kv-pool"],
    );
    let mut figures = Vec::new();
    for g in groups {
        let name = format!("{} {}", g["system"], g["backend"]);
        let applied = &family_entry(&c, g)["fit"]["as_applied"];
        let recorded = &g["as_applied_kv_pool"];
        for key in ["ttft_mean_abs_pct", "tpot_mean_abs_pct"] {
            figures.push((
                format!("{name} with the KV pool, as applied {key}"),
                figure(applied, key),
                figure(recorded, key) + tol,
            ));
        }
    }
    check("dynosim calibrate --fit-kv-pool", &figures);

    // A KV pool factor stays only where it cross-validates better than the fit without one:
    // H100's TP 2 shape keeps ½ (each of its folds holds a row that queued), while the H100
    // entry over all shapes, where one fold of three holds such rows, drops it and keeps the
    // fit without. The prefill and decode pass overheads (fitted by default) are checked too,
    // each against whatever the checks before it kept, and the entry reports the held-out
    // errors of the side the last check kept.
    let h100 = |parallelism: serde_json::Value| {
        c["families"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["system"] == "h100_sxm" && f["parallelism"] == parallelism)
            .unwrap_or_else(|| panic!("no H100 entry {parallelism}"))
            .clone()
    };
    // The checks ran in some order, each from what the one before kept; the entry's figures
    // are what the last one kept.
    let follows_the_checks = |f: &serde_json::Value| {
        let fit: FitRecord = serde_json::from_value(f["fit"].clone()).unwrap();
        assert!(checks_chain(&fit), "{f}");
    };
    let tp2 = h100(serde_json::json!("tp2"));
    assert_eq!(tp2["kv_pool_scale"], 0.5, "{tp2}");
    assert_eq!(tp2["fit"]["kv_pool_check"]["kept"], true, "{tp2}");
    follows_the_checks(&tp2);
    let all = h100(serde_json::Value::Null);
    assert!(all.get("kv_pool_scale").is_none(), "{all}");
    let check_all = &all["fit"]["kv_pool_check"];
    assert_eq!(check_all["kept"], false, "{all}");
    follows_the_checks(&all);
    let held_out =
        |e: &serde_json::Value| figure(e, "ttft_mean_abs_pct") + figure(e, "tpot_mean_abs_pct");
    assert!(
        held_out(&check_all["without"]) <= held_out(&check_all["with"]),
        "{all}"
    );
}
