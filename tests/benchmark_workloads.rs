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
    assert!(out
        .records
        .iter()
        .all(|r| !r.session_id.starts_with("warmup")));
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
    assert!(total >= 40.0 * 819.0 && total < 40.0 * 1024.0, "{total}");
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
