//! Benchmark-shaped synthetic workloads through the library: drawn lengths and AIPerf's warm-up
//! requests (simulated first, under the same load, left out of every metric, the measured phase
//! starting when the last of them has ended).

use dynosim::config::{EngineArgs, LoadSpec, RouterConfig, RouterMode, SimConfig, Sla, Topology};
use dynosim::sim::simulate;
use dynosim::workload::synthetic::{generate, RangeStyle, SyntheticArrival, SyntheticSpec};
use dynosim::Report;

fn cfg(concurrency: Option<u32>, records: bool) -> SimConfig {
    SimConfig {
        topology: Topology::Aggregated {
            num_workers: 2,
            engine: EngineArgs {
                block_size: 64,
                ..EngineArgs::default()
            },
        },
        router_mode: RouterMode::RoundRobin,
        router: RouterConfig::default(),
        load: LoadSpec {
            arrival_speedup_ratio: 1.0,
            replay_concurrency: concurrency,
        },
        max_sim_time_ms: None,
        sla: Sla::default(),
        seed: 42,
        record_requests: records,
    }
}

fn spec(arrival: SyntheticArrival) -> SyntheticSpec {
    SyntheticSpec {
        input_tokens: 1024,
        output_tokens: 64,
        request_count: 40,
        arrival,
        random_range_ratio: Some(0.8),
        ..SyntheticSpec::default()
    }
}

fn run(s: &SyntheticSpec, concurrency: Option<u32>) -> Report {
    let w = generate(s, 64).expect("valid spec");
    simulate(&w, &cfg(concurrency, false))
        .expect("simulates")
        .report
}

fn get(r: &Report, key: &str) -> f64 {
    r.get(key).unwrap_or_else(|| panic!("no {key}"))
}

/// Keys whose values must agree between a run and the same measured phase after a warm-up.
const COMPARED: &[&str] = &[
    "num_requests",
    "completed_requests",
    "total_input_tokens",
    "total_output_tokens",
    "duration_ms",
    "mean_ttft_ms",
    "p99_ttft_ms",
    "mean_itl_ms",
    "p99_itl_ms",
    "mean_e2e_latency_ms",
    "median_e2e_latency_ms",
    "p99_e2e_latency_ms",
    "request_throughput_rps",
    "output_throughput_tok_s",
    "decode_worker_seconds",
];

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn warmup_is_left_out_and_the_measured_phase_starts_after_it() {
    // Unique prompts: once every warm-up request has ended the deployment is idle with nothing
    // reusable, so the measured phase is the run without warm-up, shifted in time. Equal up to
    // the rounding of that shift.
    for (arrival, concurrency) in [
        (SyntheticArrival::ClosedLoop, Some(4)),
        (SyntheticArrival::ClosedLoop, Some(64)),
        (SyntheticArrival::PoissonRate(20.0), None),
        (SyntheticArrival::IntervalMs(0.0), None),
    ] {
        let s = spec(arrival);
        let plain = run(&s, concurrency);
        let warm = run(
            &SyntheticSpec {
                warmup_request_count: 10,
                ..s.clone()
            },
            concurrency,
        );
        assert_eq!(get(&plain, "num_requests"), 40.0);
        for key in COMPARED {
            let (a, b) = (get(&plain, key), get(&warm, key));
            assert!(
                close(a, b),
                "{arrival:?} {key}: {a} without warm-up, {b} with"
            );
        }
    }
}

#[test]
fn warmup_requests_leave_no_record_and_measured_times_start_at_zero() {
    let s = SyntheticSpec {
        warmup_request_count: 6,
        ..spec(SyntheticArrival::ClosedLoop)
    };
    let w = generate(&s, 64).unwrap();
    let out = simulate(&w, &cfg(Some(4), true)).unwrap();
    assert_eq!(out.records.len(), 40);
    assert!(out.records.iter().all(|r| r
        .session_id
        .as_ref()
        .is_some_and(|s| !s.starts_with("warmup"))));
    // The first four measured requests are released together when the warm-up ends.
    let mut arrivals: Vec<f64> = out.records.iter().map(|r| r.arrival_time_ms).collect();
    arrivals.sort_by(f64::total_cmp);
    assert_eq!(&arrivals[..4], &[0.0; 4]);
    assert!(arrivals[4] > 0.0);
}

#[test]
fn warmup_warms_shared_prefixes() {
    // With prefix groups, warm-up requests fill the cache with the groups' prefixes: the measured
    // requests reuse more than without warm-up.
    let s = SyntheticSpec {
        request_count: 8,
        num_prefix_groups: 4,
        shared_prefix_ratio: 0.5,
        random_range_ratio: None,
        ..spec(SyntheticArrival::IntervalMs(0.0))
    };
    let plain = run(&s, None);
    let warm = run(
        &SyntheticSpec {
            warmup_request_count: 16,
            ..s.clone()
        },
        None,
    );
    let key = "prefix_cache_reused_ratio";
    assert_eq!(get(&warm, "num_requests"), 8.0);
    assert!(
        get(&warm, key) > get(&plain, key),
        "{} with warm-up, {} without",
        get(&warm, key),
        get(&plain, key)
    );
}

#[test]
fn drawn_lengths_change_the_totals_not_the_count() {
    let fixed = SyntheticSpec {
        random_range_ratio: None,
        ..spec(SyntheticArrival::ClosedLoop)
    };
    let a = run(&fixed, Some(8));
    assert_eq!(get(&a, "total_input_tokens"), 40.0 * 1024.0);
    let b = run(&spec(SyntheticArrival::ClosedLoop), Some(8));
    let total = get(&b, "total_input_tokens");
    assert!((40.0 * 819.0..40.0 * 1024.0).contains(&total), "{total}");
    assert_eq!(get(&b, "completed_requests"), 40.0);
    // Uniform in [819, 1024]: mean 921.5; 40 draws stay within 5 % of it.
    assert!((total / 40.0 - 921.5).abs() < 46.0, "{total}");
    let out = get(&b, "total_output_tokens");
    assert!((40.0 * 51.0..=40.0 * 64.0).contains(&out), "{out}");
    // Symmetric style and normal lengths run too, with their own totals.
    let sym = SyntheticSpec {
        random_range_ratio: Some(0.2),
        random_range_style: RangeStyle::Symmetric,
        ..fixed.clone()
    };
    let c = run(&sym, Some(8));
    assert_ne!(get(&c, "total_input_tokens"), 40.0 * 1024.0);
    let normal = SyntheticSpec {
        input_tokens_stddev: 100.0,
        output_tokens_stddev: 10.0,
        ..fixed
    };
    let d = run(&normal, Some(8));
    assert_ne!(get(&d, "total_input_tokens"), 40.0 * 1024.0);
    assert_eq!(get(&d, "completed_requests"), 40.0);
}

// ---- `dynosim run` flags ----

mod cli {
    use assert_cmd::cargo::cargo_bin_cmd;
    use serde_json::{Map, Value};
    use std::fs;
    use std::path::Path;

    const SYN: &[&str] = &[
        "--input-tokens",
        "1000",
        "--output-tokens",
        "20",
        "--request-count",
        "30",
    ];
    const TRACE: &str =
        "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 4, \"hash_ids\": [1, 2]}\n";

    /// `dynosim run` in `dir` with `args`; (exit code, stdout, stderr).
    fn run_in(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
        let out = cargo_bin_cmd!("dynosim")
            .current_dir(dir)
            .arg("run")
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn rejected(args: &[&str], words: &[&str]) {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("trace.jsonl"), TRACE).unwrap();
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--report-json", "out/report.json"]);
        let (code, stdout, stderr) = run_in(dir.path(), &all);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        for w in words {
            assert!(stderr.contains(w), "{args:?}: {stderr:?} lacks {w:?}");
        }
        let left: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "{args:?} left files behind");
    }

    fn syn(extra: &[&'static str]) -> Vec<&'static str> {
        let mut v = SYN.to_vec();
        v.extend(["--replay-concurrency", "4"]);
        v.extend(extra);
        v
    }

    #[test]
    fn bad_values_are_refused_naming_the_flag() {
        let cases: &[(&[&str], &[&str])] = &[
            (
                &["--random-range-ratio", "1.5"],
                &["--random-range-ratio must be between 0 and 1, got 1.5"],
            ),
            (
                &["--random-range-ratio", "-0.1"],
                &["--random-range-ratio must be between 0 and 1"],
            ),
            (
                &["--random-range-ratio", "NaN"],
                &["--random-range-ratio", "NaN"],
            ),
            (
                &[
                    "--random-range-ratio",
                    "1",
                    "--random-range-style",
                    "symmetric",
                ],
                &["--random-range-ratio must be in [0, 1) with --random-range-style symmetric"],
            ),
            (
                &["--random-range-style", "symmetric"],
                &["--random-range-style only applies with --random-range-ratio"],
            ),
            (
                &["--input-tokens-stddev", "-1"],
                &["--input-tokens-stddev must be a finite number >= 0, got -1"],
            ),
            (
                &["--output-tokens-stddev", "inf"],
                &["--output-tokens-stddev must be a finite number >= 0"],
            ),
            (
                &["--random-range-ratio", "0.8", "--input-tokens-stddev", "5"],
                &["--random-range-ratio cannot be combined with --input-tokens-stddev"],
            ),
            (
                &["--warmup-request-count", "-1"],
                &["--warmup-request-count must be >= 0, got -1"],
            ),
            (
                &["--warmup-request-count", "4", "--turns-per-session", "2"],
                &["--warmup-request-count cannot be combined with --turns-per-session 2"],
            ),
            (
                &["--warmup-request-count", "4294967295"],
                &["--request-count + --warmup-request-count must be at most 4294967295"],
            ),
        ];
        for (extra, words) in cases {
            rejected(&syn(extra), words);
        }
        // Not a style: clap's own error (with the possible values), still exit 2.
        let dir = tempfile::tempdir().unwrap();
        let (code, _, stderr) = run_in(dir.path(), &syn(&["--random-range-style", "ceil"]));
        assert_eq!(code, Some(2), "{stderr}");
        assert!(
            stderr.contains("[possible values: floor, symmetric]"),
            "{stderr}"
        );
    }

    #[test]
    fn they_are_refused_with_a_trace() {
        for flag in [
            "--random-range-ratio",
            "--input-tokens-stddev",
            "--output-tokens-stddev",
            "--warmup-request-count",
        ] {
            rejected(
                &["trace.jsonl", flag, "1"],
                &[
                    flag,
                    "only shape synthetic workloads",
                    "remove the trace file or these flags",
                ],
            );
        }
        // Alone, they ask for a synthetic workload.
        rejected(
            &["--random-range-ratio", "0.8", "--replay-concurrency", "2"],
            &["synthetic replay requires", "missing --input-tokens"],
        );
    }

    /// Runs and returns the report without its wall-time keys.
    fn report(args: &[&str]) -> Map<String, Value> {
        let dir = tempfile::tempdir().unwrap();
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--report-json", "r.json"]);
        let (code, _, stderr) = run_in(dir.path(), &all);
        assert_eq!(code, Some(0), "{stderr}");
        let text = fs::read_to_string(dir.path().join("r.json")).unwrap();
        let mut v: Map<String, Value> = serde_json::from_str(&text).unwrap();
        v.retain(|k, _| !k.contains("wall_time") && !k.contains("per_s"));
        v
    }

    fn num(r: &Map<String, Value>, k: &str) -> f64 {
        r[k].as_f64().unwrap_or_else(|| panic!("{k}"))
    }

    #[test]
    fn a_shaped_run_is_deterministic_and_leaves_the_warmup_out() {
        let args = syn(&["--random-range-ratio", "0.8", "--warmup-request-count", "8"]);
        let a = report(&args);
        assert_eq!(a, report(&args), "deterministic");
        assert_eq!(num(&a, "num_requests"), 30.0);
        assert_eq!(num(&a, "completed_requests"), 30.0);
        let input = num(&a, "total_input_tokens");
        assert!((30.0 * 800.0..30.0 * 1000.0).contains(&input), "{input}");
        let output = num(&a, "total_output_tokens");
        assert!((30.0 * 16.0..=30.0 * 20.0).contains(&output), "{output}");
        // Another arrival seed draws other lengths.
        let mut other = args.clone();
        other.extend(["--arrival-seed", "7"]);
        assert_ne!(num(&report(&other), "total_input_tokens"), input);
        // AIPerf's normal lengths.
        let n = report(&syn(&[
            "--input-tokens-stddev",
            "100",
            "--output-tokens-stddev",
            "5",
        ]));
        assert_eq!(num(&n, "completed_requests"), 30.0);
        assert_ne!(num(&n, "total_input_tokens"), 30_000.0);
    }

    #[test]
    fn neutral_values_change_nothing() {
        // Ratio 1 (floor), ratio 0 (symmetric), zero stddevs and no warm-up are today's run.
        let plain = report(&syn(&[]));
        for extra in [
            &["--random-range-ratio", "1"][..],
            &[
                "--random-range-ratio",
                "0",
                "--random-range-style",
                "symmetric",
            ],
            &["--input-tokens-stddev", "0", "--output-tokens-stddev", "0"],
            &["--warmup-request-count", "0"],
        ] {
            assert_eq!(report(&syn(extra)), plain, "{extra:?}");
        }
    }
}

// ---- sweep `workload` keys ----

mod sweep {
    use assert_cmd::cargo::cargo_bin_cmd;
    use serde_json::{Map, Value};
    use std::fs;
    use std::path::Path;

    fn sweep(dir: &Path, spec: &str) -> (Option<i32>, String) {
        fs::write(dir.join("grid.yaml"), spec).unwrap();
        let out = cargo_bin_cmd!("dynosim")
            .current_dir(dir)
            .args(["sweep", "grid.yaml", "-o", "out", "--quiet"])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn comparable(m: &Map<String, Value>) -> Map<String, Value> {
        let mut m = m.clone();
        m.retain(|k, _| {
            !k.contains("wall_time") && !k.contains("per_s") && !k.ends_with("per_gpu")
        });
        m
    }

    #[test]
    fn shape_keys_are_sweepable_and_a_point_equals_dynosim_run() {
        let dir = tempfile::tempdir().unwrap();
        let (code, stderr) = sweep(
            dir.path(),
            "workload: {input_tokens: 1000, output_tokens: 20, request_count: 30, \
             replay_concurrency: 4, warmup_request_count: 8}\n\
             grid:\n  num_workers: [2]\n  workload.random_range_ratio: [0.8, 1.0]\n",
        );
        assert_eq!(code, Some(0), "{stderr}");
        let board: Value = serde_json::from_str(
            &fs::read_to_string(dir.path().join("out/leaderboard.json")).unwrap(),
        )
        .unwrap();
        let rows = board["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 2);
        let by_ratio = |r: f64| {
            rows.iter()
                .find(|row| row["parameters"]["workload.random_range_ratio"].as_f64() == Some(r))
                .unwrap_or_else(|| panic!("no point with ratio {r}: {board}"))["report"]
                .as_object()
                .unwrap()
                .clone()
        };
        let shaped = by_ratio(0.8);
        assert_eq!(shaped["num_requests"].as_f64(), Some(30.0));
        assert_ne!(shaped["total_input_tokens"].as_f64(), Some(30_000.0));
        assert_eq!(by_ratio(1.0)["total_input_tokens"].as_f64(), Some(30_000.0));

        let out = cargo_bin_cmd!("dynosim")
            .current_dir(dir.path())
            .args([
                "run",
                "--input-tokens",
                "1000",
                "--output-tokens",
                "20",
                "--request-count",
                "30",
                "--replay-concurrency",
                "4",
                "--warmup-request-count",
                "8",
                "--random-range-ratio",
                "0.8",
                "--num-workers",
                "2",
                "--report-json",
                "run.json",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        let run: Map<String, Value> =
            serde_json::from_str(&fs::read_to_string(dir.path().join("run.json")).unwrap())
                .unwrap();
        assert_eq!(comparable(&shaped), comparable(&run));
    }

    #[test]
    fn bad_shape_keys_exit_2_with_the_key() {
        const SYN: &str = "input_tokens: 100, output_tokens: 10, request_count: 5, \
                           replay_concurrency: 2";
        let cases = [
            (
                format!("workload: {{{SYN}, random_range_ratio: 1.5}}\n"),
                "workload.random_range_ratio",
            ),
            (
                format!("workload: {{{SYN}, random_range_ratio: 0.5, random_range_style: ceil}}\n"),
                "workload.random_range_style",
            ),
            (
                format!("workload: {{{SYN}, input_tokens_stddev: -2}}\n"),
                "workload.input_tokens_stddev",
            ),
            (
                format!("workload: {{{SYN}, random_range_style: symmetric}}\n"),
                "random_range_style only applies with random_range_ratio",
            ),
            (
                format!("workload: {{{SYN}, random_range_ratio: 0.5, output_tokens_stddev: 3}}\n"),
                "random_range_ratio cannot be combined with output_tokens_stddev",
            ),
            (
                format!("workload: {{{SYN}, warmup_request_count: 2, turns_per_session: 3}}\n"),
                "warmup_request_count cannot be combined with turns_per_session 3",
            ),
            (
                "workload: {trace: t.jsonl, warmup_request_count: 2}\n".to_string(),
                "workload.warmup_request_count only shapes synthetic workloads",
            ),
        ];
        for (spec, want) in cases {
            let dir = tempfile::tempdir().unwrap();
            fs::write(
                dir.path().join("t.jsonl"),
                "{\"timestamp\": 0, \"input_length\": 60, \"output_length\": 4, \"hash_ids\": [1]}\n",
            )
            .unwrap();
            let (code, stderr) = sweep(dir.path(), &spec);
            assert_eq!(code, Some(2), "{spec}: {stderr}");
            assert!(stderr.contains(want), "{spec}: {stderr:?} lacks {want:?}");
            assert!(!dir.path().join("out").exists(), "{spec}");
        }
    }
}
