//! Criterion benchmarks of the simulation core (issue 4): `sim::simulate` on the tutorial cases
//! V3 (4 workers, round robin), V4 (4 workers, kv_router) and V5 (disaggregated 2 prefill +
//! 2 decode, kv_router) over the bundled Mooncake conversation trace, plus a small sweep through
//! the real `sweep::run_sweep` path.
//!
//! The configurations are built exactly as `dynosim run` builds them: the command lines below are
//! parsed by the CLI's clap definitions and validated by `run::plan`. The trace is parsed once,
//! outside the timed loops (its parsing has a benchmark of its own). Whole-process timings against
//! the reference DynoSim are the job of `scripts/bench_vs_reference.sh`, not of this file.
//!
//! Run with `cargo bench --bench sim` (a few minutes on 2 cores); `cargo bench --bench sim -- V3`
//! runs one case.

use clap::Parser;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, SamplingMode};
use dynosim::cli::{Cli, Command};
use dynosim::config::SimConfig;
use dynosim::run::plan;
use dynosim::sweep::{run_sweep, SweepOptions};
use dynosim::workload::formats::mooncake::load_trace;
use dynosim::workload::formats::{Timing, TraceFormat, TraceSpec};
use dynosim::workload::Workload;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The bundled trace, relative to the crate root.
const TRACE: &str = "data/mooncake_conversation_trace.jsonl.gz";
/// Tokens per trace hash id (the conversation trace was hashed in 512-token blocks).
const TRACE_BLOCK_SIZE: u32 = 512;

/// `dynosim run` arguments of each case, after the trace path.
const CASES: &[(&str, &[&str])] = &[
    (
        "V3_agg4_round_robin",
        &[
            "--num-workers",
            "4",
            "--router-mode",
            "round_robin",
            "--trace-block-size",
            "512",
            "--extra-engine-args",
            r#"{"block_size":64}"#,
        ],
    ),
    (
        "V4_agg4_kv_router",
        &[
            "--num-workers",
            "4",
            "--router-mode",
            "kv_router",
            "--trace-block-size",
            "512",
            "--extra-engine-args",
            r#"{"block_size":64,"router_queue_policy":"fcfs"}"#,
        ],
    ),
    (
        "V5_disagg_2p2d_kv_router",
        &[
            "--num-prefill-workers",
            "2",
            "--num-decode-workers",
            "2",
            "--router-mode",
            "kv_router",
            "--trace-block-size",
            "512",
            "--prefill-engine-args",
            r#"{"block_size":64,"worker_type":"prefill"}"#,
            "--decode-engine-args",
            r#"{"block_size":64,"worker_type":"decode"}"#,
        ],
    ),
];

fn crate_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `SimConfig` that `dynosim run <trace> <args>` would simulate. Panics (this is a benchmark
/// with fixed inputs) if the flags are refused or the plan reads another workload.
fn sim_config(trace: &Path, args: &[&str]) -> SimConfig {
    let mut argv: Vec<String> = vec!["dynosim".into(), "run".into(), trace.display().to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let run_args = match Cli::try_parse_from(&argv) {
        Ok(Cli {
            command: Command::Run(a),
        }) => a,
        Ok(_) => panic!("not a run command: {argv:?}"),
        Err(e) => panic!("{argv:?}: {e}"),
    };
    let plan = plan(&run_args).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    assert_eq!(
        plan.workload.trace_spec(),
        Some(TraceSpec {
            format: TraceFormat::Mooncake,
            paths: vec![trace.to_path_buf()],
            trace_block_size: Some(TRACE_BLOCK_SIZE),
            timing: Timing::OpenLoop,
            shared_prefix_ratio: 0.0,
            num_prefix_groups: 0,
        }),
        "the benchmark loads the trace itself and must load what `dynosim run` would"
    );
    plan.sim
}

fn load_workload(trace: &Path) -> Workload {
    load_trace(trace, TRACE_BLOCK_SIZE).unwrap_or_else(|e| panic!("{}: {e}", trace.display()))
}

fn bench_trace_load(c: &mut Criterion) {
    let trace = crate_root().join(TRACE);
    let mut g = c.benchmark_group("workload");
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    g.bench_function("load_conversation_trace_gz", |b| {
        b.iter(|| black_box(load_workload(black_box(&trace))))
    });
    g.finish();
}

fn bench_cases(c: &mut Criterion) {
    let trace = crate_root().join(TRACE);
    let workload = load_workload(&trace);
    let mut g = c.benchmark_group("simulate");
    // One simulation takes from tens of milliseconds to seconds: few, flat samples.
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10));
    for (name, args) in CASES {
        let cfg = sim_config(&trace, args);
        // Fail before timing anything if the case does not simulate the whole trace.
        let out = dynosim::sim::simulate(&workload, &cfg).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            out.report.get("completed_requests"),
            Some(workload.requests.len() as f64),
            "{name}: every request of the trace completes"
        );
        g.bench_function(*name, |b| {
            b.iter(|| {
                black_box(
                    dynosim::sim::simulate(black_box(&workload), black_box(&cfg))
                        .expect("simulates"),
                )
            })
        });
    }
    g.finish();
}

/// `dynosim sweep benches/sweep6.yaml -j 2 --quiet` without the process: loads the trace,
/// simulates 6 points on 2 threads, writes the leaderboards to a fresh temporary folder.
fn bench_sweep(c: &mut Criterion) {
    let spec = crate_root().join("benches/sweep6.yaml");
    let mut g = c.benchmark_group("sweep");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(20));
    g.bench_function("sweep6_j2", |b| {
        b.iter_batched(
            || {
                let dir = tempfile::tempdir().expect("temporary folder");
                let mut opts = SweepOptions::new(&spec);
                opts.output = Some(dir.path().join("out"));
                opts.jobs = Some(2);
                opts.quiet = true;
                (dir, opts)
            },
            |(dir, opts)| {
                let outcome = run_sweep(&opts).expect("sweep runs");
                assert_eq!((outcome.points, outcome.ok), (6, 6), "{outcome:?}");
                // The folder is removed after the timed part.
                (dir, outcome)
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

criterion_group!(benches, bench_trace_load, bench_cases, bench_sweep);
criterion_main!(benches);
