//! Measured timing profiles (`planner_profile_data`) through the real binary: where the path is
//! resolved (`run`: working directory; sweep: the spec's folder), sweeping over profiles and
//! pool variants, and every profile DynoSim would silently replace by its polynomial refused with
//! exit 2 naming the file and the array. Agreement with DynoSim is checked in `reference.rs`.

use assert_cmd::cargo::cargo_bin_cmd;
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

const SYN: &[&str] = &[
    "--input-tokens",
    "1500",
    "--output-tokens",
    "40",
    "--request-count",
    "30",
    "--replay-concurrency",
    "8",
    "--num-workers",
    "2",
];

fn profiles() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/profiles")
}

/// `dynosim run SYN --extra-engine-args ARGS --report-json out/r.json` in `dir`.
fn run_in(dir: &Path, engine_args: &str) -> Output {
    cargo_bin_cmd!("dynosim")
        .current_dir(dir)
        .arg("run")
        .args(SYN)
        .args(["--extra-engine-args", engine_args])
        .args(["--report-json", "out/r.json"])
        .output()
        .unwrap()
}

fn report(dir: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(dir.join("out/r.json")).unwrap()).unwrap()
}

/// A folder holding copies of the named profiles.
fn folder_with(files: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in files {
        fs::copy(profiles().join(f), dir.path().join(f)).unwrap();
    }
    dir
}

#[test]
fn run_reads_the_profile_relative_to_the_working_directory() {
    let dir = folder_with(&["own_profile.npz"]);
    let out = run_in(
        dir.path(),
        r#"{"block_size": 64, "planner_profile_data": "own_profile.npz"}"#,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let measured = report(dir.path());
    let out = run_in(dir.path(), r#"{"block_size": 64}"#);
    assert!(out.status.success());
    let polynomial = report(dir.path());
    assert_eq!(measured["completed_requests"], 30);
    // The profile's prefill and decode curves are not the polynomial's.
    assert_ne!(measured["mean_itl_ms"], polynomial["mean_itl_ms"]);
    assert_ne!(measured["mean_ttft_ms"], polynomial["mean_ttft_ms"]);
}

/// Exit 2, one `error:` line containing every word, no report written.
fn assert_refused(case: &str, dir: &Path, out: &Output, words: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{case}: {stderr}");
    let errors: Vec<_> = stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(errors.len(), 1, "{case}: {stderr}");
    assert!(!stderr.contains("panicked"), "{case}: {stderr}");
    for w in words {
        assert!(stderr.contains(w), "{case}: {stderr:?} lacks {w:?}");
    }
    assert!(!dir.join("out").exists(), "{case}: left output behind");
}

/// Files DynoSim 1.4.2 loads with an error log and then ignores (it runs its polynomial model).
#[test]
fn profiles_dynosim_would_ignore_are_refused_naming_the_file_and_the_array() {
    let cases: &[(&str, &[&str])] = &[
        ("perf_bad_int.npz", &["\"prefill_isl\"", "'<i8'", "float64"]),
        ("bad_f32_itl.npz", &["\"decode_itl\"", "'<f4'", "float64"]),
        (
            "bad_lengths.npz",
            &["\"prefill_ttft_ms\"", "12 values", "prefill_isl has 13"],
        ),
        (
            "bad_not_increasing.npz",
            &["\"prefill_isl\"", "strictly increasing", "element 3"],
        ),
        ("bad_itl_shape.npz", &["\"decode_itl\"", "(7, 3)", "(7, 4)"]),
        (
            "bad_missing.npz",
            &["\"decode_context_length\"", "is missing"],
        ),
        ("bad_not_a_zip.npz", &["not an NPZ archive"]),
    ];
    for (file, words) in cases {
        let dir = folder_with(&[file]);
        let args = format!(r#"{{"planner_profile_data": "{file}"}}"#);
        let out = run_in(dir.path(), &args);
        let mut all = vec!["--extra-engine-args", "planner_profile_data", file];
        all.extend_from_slice(words);
        assert_refused(file, dir.path(), &out, &all);
    }
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(dir.path(), r#"{"planner_profile_data": "gone.npz"}"#);
    assert_refused(
        "missing file",
        dir.path(),
        &out,
        &["gone.npz", "cannot read"],
    );
}

#[test]
fn a_profiler_results_folder_is_refused_with_a_pointer_to_the_npz() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("results")).unwrap();
    for path in ["results", "results/", "profile.NPZ", "profile.npy"] {
        let args = format!(r#"{{"planner_profile_data": "{path}"}}"#);
        let out = run_in(dir.path(), &args);
        assert_refused(path, dir.path(), &out, &[path, ".npz", "profiler results"]);
    }
}

/// Both pools of a disaggregated deployment may name profiles; the decode pool's applies to
/// decode steps, the prefill pool's to prefills.
#[test]
fn disaggregated_pools_take_their_own_profiles() {
    let dir = folder_with(&["own_profile.npz", "perf_h200_example.npz"]);
    let run = |prefill: &str, decode: &str| {
        let out = cargo_bin_cmd!("dynosim")
            .current_dir(dir.path())
            .arg("run")
            .args(&SYN[..8])
            .args(["--num-prefill-workers", "1", "--num-decode-workers", "1"])
            .args([
                "--prefill-engine-args",
                &format!(r#"{{"worker_type": "prefill"{prefill}}}"#),
                "--decode-engine-args",
                &format!(r#"{{"worker_type": "decode"{decode}}}"#),
                "--report-json",
                "r.json",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r: Value =
            serde_json::from_str(&fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
        (
            r["mean_ttft_ms"].as_f64().unwrap(),
            r["mean_itl_ms"].as_f64().unwrap(),
        )
    };
    let own = r#", "planner_profile_data": "own_profile.npz""#;
    let h200 = r#", "planner_profile_data": "perf_h200_example.npz""#;
    let (ttft_a, itl_a) = run(own, h200);
    let (ttft_b, itl_b) = run(h200, h200);
    let (ttft_c, itl_c) = run(own, own);
    assert_ne!(
        ttft_a, ttft_b,
        "the prefill pool's profile sets prefill times"
    );
    assert_ne!(itl_a, itl_c, "the decode pool's profile sets decode times");
    assert_ne!((ttft_b, itl_b), (ttft_c, itl_c));
}

/// `engine.planner_profile_data` and `decode_engine.planner_profile_data` are axes; paths are
/// relative to the spec; every point equals `dynosim run` of the same configuration.
#[test]
fn a_sweep_over_profiles_equals_dynosim_run() {
    let dir = folder_with(&[]);
    fs::create_dir(dir.path().join("profiles")).unwrap();
    for f in ["own_profile.npz", "perf_h200_example.npz"] {
        fs::copy(profiles().join(f), dir.path().join("profiles").join(f)).unwrap();
    }
    let spec = dir.path().join("grid.yaml");
    fs::write(
        &spec,
        "workload: {input_tokens: 1500, output_tokens: 40, request_count: 30, replay_concurrency: 8}\n\
         num_workers: 2\n\
         grid:\n  engine.planner_profile_data: [profiles/own_profile.npz, profiles/perf_h200_example.npz, null]\n",
    )
    .unwrap();
    // Run from elsewhere: the paths are the spec's, not the working directory's.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = cargo_bin_cmd!("dynosim")
        .current_dir(elsewhere.path())
        .args(["sweep", spec.to_str().unwrap(), "-o"])
        .arg(dir.path().join("out"))
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let board: Value =
        serde_json::from_str(&fs::read_to_string(dir.path().join("out/leaderboard.json")).unwrap())
            .unwrap();
    let rows = board["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for row in rows {
        let profile = &row["parameters"]["engine.planner_profile_data"];
        // `run` in the spec's folder: the same relative paths.
        let args = match profile.as_str() {
            Some(p) => format!(r#"{{"planner_profile_data": "{p}"}}"#),
            None => "{}".to_string(),
        };
        let out = run_in(dir.path(), &args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ours = report(dir.path());
        for k in [
            "mean_ttft_ms",
            "mean_itl_ms",
            "p99_e2e_latency_ms",
            "duration_ms",
        ] {
            assert_eq!(row["report"][k], ours[k], "{profile}: {k}");
        }
    }
}
