//! The measured data shipped in `validation/` and AIConfigurator's static estimate of it
//! (see docs/accuracy.md):
//!
//! - `validation/llama-3.1-70b-fp8-vllm-h100-h200.csv` has AIConfigurator's header, the 105 rows
//!   of its filter (2026-04-06 batch, H200/H100, vLLM, Llama-3.1-70B, FP8) and nothing else; when
//!   aiconfigurator-core is installed (`DYNOSIM_PYTHON`), it is byte for byte what
//!   `scripts/extract_validation_rows.py` extracts from the installed table.
//! - The static-estimate results (`validation/aic_static_estimate*.csv`) keep one row per
//!   measured row, and the per-group tables in docs/accuracy.md are what
//!   `scripts/aic_static_estimate.py --summarize` prints for them.
//! - `scripts/aic_static_estimate.py` run for real on three shipped rows (two estimated, one that
//!   AIConfigurator refuses) with the `aiconfigurator` package: `DYNOSIM_AICONF_PYTHON`, default
//!   `/opt/dynosim-aiconf-venv/bin/python`. Without it the test is skipped with a message (it
//!   fails instead when `CI` is set: `.ci/run` installs it).
//! - `scripts/correction_floor.py` (the straight line through simulated TTFTs) on rows whose
//!   answer is known, with `DYNOSIM_PYTHON`'s numpy.

mod common;

use common::{have_aic, python};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const SHIPPED: &str = "validation/llama-3.1-70b-fp8-vllm-h100-h200.csv";
const STATIC_105: &str = "validation/aic_static_estimate.csv";
const STATIC_ALL: &str = "validation/aic_static_estimate_all.csv";
const HEADER: &str = "id,silicon_data_source,backend,backend_version,model_path,system,precision,\
mode,isl,osl,gemm_quant_mode,moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,\
moe_tp_size,moe_ep_size,prefill_batch_size,prefill_num_workers,prefill_tp_size,prefill_pp_size,\
prefill_attention_dp_size,prefill_moe_tp_size,prefill_moe_ep_size,decode_batch_size,\
decode_num_workers,decode_tp_size,decode_pp_size,decode_attention_dp_size,decode_moe_tp_size,\
decode_moe_ep_size,silicon_ttft_ms,silicon_tpot_ms";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `scripts/SCRIPT` with `py` and `args`; its stdout, after checking it succeeded.
fn run_script(py: &str, script: &str, args: &[&std::ffi::OsStr]) -> String {
    let run = Command::new(py)
        .arg(root().join("scripts").join(script))
        .args(args)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    String::from_utf8(run.stdout).unwrap()
}

/// A CSV as (header, rows of column -> value).
fn read_csv(path: &Path) -> (Vec<String>, Vec<HashMap<String, String>>) {
    let mut reader = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    let rows = reader
        .records()
        .map(|r| {
            let r = r.unwrap_or_else(|e| panic!("{path:?}: {e}"));
            assert_eq!(
                r.len(),
                header.len(),
                "{path:?}: row {r:?} has a wrong field count"
            );
            header
                .iter()
                .cloned()
                .zip(r.iter().map(String::from))
                .collect()
        })
        .collect();
    (header, rows)
}

fn positive(text: &str, what: &str) -> f64 {
    let v: f64 = text
        .parse()
        .unwrap_or_else(|_| panic!("{what}: {text:?} is not a number"));
    assert!(v.is_finite() && v > 0.0, "{what}: {v} is not positive");
    v
}

#[test]
fn the_shipped_rows_are_the_filter_of_aiconfigurators_table() {
    let text = std::fs::read_to_string(root().join(SHIPPED)).unwrap();
    assert_eq!(
        text.lines().next(),
        Some(HEADER),
        "the header of AIConfigurator's table"
    );
    assert!(
        !text.contains('"') && !text.contains('\r'),
        "plain lines, as in the package"
    );
    let (_, rows) = read_csv(&root().join(SHIPPED));
    assert_eq!(rows.len(), 105);
    let mut per_system = HashMap::new();
    let mut ids = std::collections::HashSet::new();
    for row in &rows {
        let id = &row["id"];
        assert!(ids.insert(id.clone()), "{id}: duplicate id");
        assert!(
            row["silicon_data_source"].starts_with("source_file=2026-04-06.csv"),
            "{id}: source {}",
            row["silicon_data_source"]
        );
        assert!(
            matches!(row["system"].as_str(), "h200_sxm" | "h100_sxm"),
            "{id}"
        );
        assert_eq!(row["backend"], "vllm", "{id}");
        assert_eq!(row["model_path"], "meta-llama/Llama-3.1-70B", "{id}");
        assert_eq!(row["precision"], "fp8", "{id}");
        assert_eq!(row["mode"], "agg", "{id}");
        for col in [
            "isl",
            "osl",
            "batch_size",
            "tp_size",
            "silicon_ttft_ms",
            "silicon_tpot_ms",
        ] {
            positive(&row[col], &format!("{id} {col}"));
        }
        *per_system.entry(row["system"].clone()).or_insert(0) += 1;
    }
    assert_eq!(per_system["h200_sxm"], 60);
    assert_eq!(per_system["h100_sxm"], 45);
}

#[test]
fn the_shipped_rows_are_what_the_script_extracts_from_the_installed_table() {
    if !have_aic("the_shipped_rows_are_what_the_script_extracts_from_the_installed_table") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rows.csv");
    // The script reads the table of $DYNOSIM_PYTHON's package (inherited), else python3's, as
    // python() does.
    let stdout = run_script(
        &python(),
        "extract_validation_rows.py",
        &["-o".as_ref(), out.as_ref()],
    );
    assert!(stdout.contains(": 105 rows from "), "{stdout}");
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(root().join(SHIPPED)).unwrap(),
        "validation/ differs from the installed aiconfigurator-core's table: regenerate it"
    );
}

/// The static-estimate results keep every measured row, in order, with a known status.
#[test]
fn the_static_estimate_results_keep_every_row() {
    let (_, shipped) = read_csv(&root().join(SHIPPED));
    let (_, results) = read_csv(&root().join(STATIC_105));
    let ids = |rows: &[HashMap<String, String>]| -> Vec<String> {
        rows.iter().map(|r| r["id"].clone()).collect()
    };
    assert_eq!(ids(&results), ids(&shipped));
    let (_, all) = read_csv(&root().join(STATIC_ALL));
    assert_eq!(all.len(), 3368, "every source_file=2026- row of the table");
    for row in results.iter().chain(&all) {
        let id = &row["id"];
        match row["status"].as_str() {
            "ok" => {
                let measured = positive(&row["measured_ttft_ms"], id);
                let fixed = positive(&row["static_ttft_ms"], id);
                let err: f64 = row["ttft_error_pct"].parse().unwrap();
                assert!(
                    (err - 100.0 * (fixed - measured) / measured).abs() < 0.01,
                    "{id}"
                );
            }
            "failed" | "unsupported" => assert!(!row["reason"].is_empty(), "{id}: no reason"),
            other => panic!("{id}: status {other:?}"),
        }
    }
}

/// docs/accuracy.md's AIConfigurator tables are the script's summaries of the shipped results.
#[test]
fn the_docs_tables_are_the_summaries_of_the_results() {
    let docs = std::fs::read_to_string(root().join("docs/accuracy.md")).unwrap();
    for results in [STATIC_105, STATIC_ALL] {
        let results_path = root().join(results);
        let table = run_script(
            &python(),
            "aic_static_estimate.py",
            &[
                "--summarize".as_ref(),
                results_path.as_ref(),
                "--markdown".as_ref(),
            ],
        );
        assert!(table.lines().count() >= 3, "{results}: {table}");
        for line in table.lines() {
            assert!(
                docs.lines().any(|l| l == line),
                "docs/accuracy.md lacks the summary line of {results}:\n{line}"
            );
        }
    }
}

/// The Python holding the `aiconfigurator` package (its own venv), or `None` (skip).
fn aiconf_python(test: &str) -> Option<String> {
    let py = std::env::var("DYNOSIM_AICONF_PYTHON")
        .unwrap_or_else(|_| "/opt/dynosim-aiconf-venv/bin/python".into());
    common::can_import(
        &py,
        "aiconfigurator.cli.api",
        test,
        &format!("the aiconfigurator package (DYNOSIM_AICONF_PYTHON={py})"),
        "`pip install aiconfigurator==0.12.0` in /opt/dynosim-aiconf-venv (or DYNOSIM_AICONF_PYTHON)",
    )
    .then_some(py)
}

#[test]
fn the_static_estimate_script_runs_on_three_rows() {
    let Some(py) = aiconf_python("the_static_estimate_script_runs_on_three_rows") else {
        return;
    };
    let text = std::fs::read_to_string(root().join(SHIPPED)).unwrap();
    let picked = [
        "2026_04_06_llama_3_1_70b_h100_sxm_vllm_fp8_agg_1024x1024_c16_tp4_ep1_260",
        "2026_04_06_llama_3_1_70b_h200_sxm_vllm_fp8_agg_1024x8192_c8_tp1_ep1_268",
        // 32 requests of 9k tokens in BF16 KV do not fit one H200 by AIConfigurator's memory model
        "2026_04_06_llama_3_1_70b_h200_sxm_vllm_fp8_agg_1024x8192_c32_tp1_ep1_523",
    ];
    let mut three = format!("{HEADER}\n");
    for id in picked {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{id},")))
            .unwrap();
        three.push_str(line);
        three.push('\n');
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("three.csv");
    let output = dir.path().join("out.csv");
    std::fs::write(&input, three).unwrap();
    let stdout = run_script(
        &py,
        "aic_static_estimate.py",
        &[input.as_ref(), "-o".as_ref(), output.as_ref()],
    );
    assert!(
        stdout.contains("3 rows: 2 ok, 1 failed, 0 unsupported"),
        "{stdout}"
    );
    let (_, out) = read_csv(&output);
    let (_, recorded) = read_csv(&root().join(STATIC_105));
    assert_eq!(out.len(), 3);
    for (row, id) in out.iter().zip(picked) {
        assert_eq!(row["id"], id);
        assert_eq!(row["aic_model"], "meta-llama/Meta-Llama-3.1-70B", "{id}");
        assert_eq!(row["backend_version_used"], "0.24.0", "{id}");
        let before = recorded.iter().find(|r| r["id"] == id).unwrap();
        assert_eq!(row["status"], before["status"], "{id}");
        if row["status"] == "failed" {
            assert!(row["reason"].contains("OOM"), "{id}: {}", row["reason"]);
            assert_eq!(row["static_ttft_ms"], "", "{id}");
            continue;
        }
        for col in ["static_ttft_ms", "static_tpot_ms"] {
            let (now, then) = (positive(&row[col], id), positive(&before[col], id));
            // Both printed to 3 decimals: the same estimate, as recorded in validation/.
            assert!(
                (now - then).abs() < 0.0015,
                "{id} {col}: {now} vs recorded {then}"
            );
        }
        let measured = positive(&row["measured_tpot_ms"], id);
        let fixed = positive(&row["static_tpot_ms"], id);
        let err: f64 = row["tpot_error_pct"].parse().unwrap();
        assert!(
            (err - 100.0 * (fixed - measured) / measured).abs() < 0.01,
            "{id}"
        );
    }
}

/// `scripts/correction_floor.py` (docs/accuracy.md, "How far a straight line gets") on rows
/// whose answer is known: one shape whose measured TTFTs are exactly 2 · predicted + 100 ms
/// (the line holds every point out at 0 %), and one with too few points to be covered. Their
/// TPOTs are 2 + predicted · (1 + 0.1 · log2(concurrency)): a decode step growing with the
/// batch, which only `--with-batch-growth` follows exactly.
#[test]
fn the_correction_floor_script_fits_a_line_per_shape() {
    if !common::can_import(
        &python(),
        "numpy",
        "the_correction_floor_script_fits_a_line_per_shape",
        &format!("numpy (DYNOSIM_PYTHON={})", python()),
        "`pip install aiconfigurator-core==0.12.0`, which brings numpy (or DYNOSIM_PYTHON)",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut measured = String::from(
        "id,backend_version,gemm_quant_mode,moe_quant_mode,tp_size,attention_dp_size,moe_tp_size,moe_ep_size\n",
    );
    let mut validation = String::from(
        "id,status,system,backend,model,isl,osl,concurrency,measured_ttft_ms,predicted_ttft_ms,\
measured_tpot_ms,predicted_tpot_ms\n",
    );
    // Shape TP 2: 7 points, measured = 2 · predicted + 100; the first point listed twice.
    for (i, c) in [4, 8, 16, 32, 64, 128, 256, 4].iter().enumerate() {
        let predicted = 50.0 + 10.0 * f64::from(*c);
        let tpot = 10.0 + 0.05 * f64::from(*c);
        measured.push_str(&format!("a{i},0.1,fp8,,2,1,2,1\n"));
        validation.push_str(&format!(
            "a{i},ok,h200_sxm,vllm,m,1024,1024,{c},{},{predicted},{},{tpot}\n",
            2.0 * predicted + 100.0,
            2.0 + tpot * (1.0 + 0.1 * f64::from(*c).log2())
        ));
    }
    // Shape TP 4: 3 points, not covered; one failed row, not counted.
    for (i, c) in [4, 8, 16].iter().enumerate() {
        measured.push_str(&format!("b{i},0.1,fp8,,4,1,4,1\n"));
        validation.push_str(&format!(
            "b{i},ok,h200_sxm,vllm,m,1024,1024,{c},300,100,30,10\n"
        ));
    }
    measured.push_str("c0,0.1,fp8,,4,1,4,1\n");
    validation.push_str("c0,failed,h200_sxm,vllm,m,1024,1024,32,300,,30,\n");
    let (m, v) = (dir.path().join("m.csv"), dir.path().join("v.csv"));
    std::fs::write(&m, measured).unwrap();
    std::fs::write(&v, validation).unwrap();
    let out = run_script(
        &python(),
        "correction_floor.py",
        &[m.as_ref(), v.as_ref(), "--with-concurrency".as_ref()],
    );
    let row = out
        .lines()
        .find(|l| l.starts_with("| h200_sxm | vllm | m |"))
        .unwrap_or_else(|| panic!("no group row in:\n{out}"));
    let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
    // rows simulated 11, covered 8; engine only: mean of |p / (2p + 100) − 1| over the 8 rows.
    let engine_only: f64 = [4, 8, 16, 32, 64, 128, 256, 4]
        .iter()
        .map(|c| {
            let p = 50.0 + 10.0 * f64::from(*c);
            100.0 * (p / (2.0 * p + 100.0) - 1.0).abs()
        })
        .sum::<f64>()
        / 8.0;
    assert_eq!(
        cells[3..6],
        ["11", "8", &format!("{engine_only:.1}")],
        "{row}"
    );
    assert_eq!(cells[6..], ["0.0", "0.0"], "{row}");

    let out = run_script(
        &python(),
        "correction_floor.py",
        &[
            m.as_ref(),
            v.as_ref(),
            "--metric".as_ref(),
            "tpot".as_ref(),
            "--with-batch-growth".as_ref(),
        ],
    );
    let row = out
        .lines()
        .find(|l| l.starts_with("| h200_sxm | vllm | m |"))
        .unwrap_or_else(|| panic!("no group row in:\n{out}"));
    let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
    assert_eq!(cells[3..5], ["11", "8"], "{row}");
    let line: f64 = cells[6].parse().unwrap();
    assert!(
        line > 0.1,
        "a straight line cannot follow the growth: {row}"
    );
    assert_eq!(cells[7..], ["0.0"], "{row}");
}
