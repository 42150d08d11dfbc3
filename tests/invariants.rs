//! Property tests of the model's invariants over random small workloads and configurations,
//! checked through what a simulation exposes: the flat report and the per-request records.
//!
//! Workloads are Mooncake traces generated as JSONL text (sessions, shared prefixes, clamped
//! rows) and synthetic workloads; configurations are 1–4 aggregated workers or small
//! disaggregated pools, round robin or the KV router, tiny KV pools (to force preemption and
//! rejection), small batch budgets, chunked prefill on or off, speed-up ratios, concurrency caps.
//!
//! Invariants checked:
//! * every request that arrived either completed or was rejected (unless cut by the time cap);
//! * a completed request emitted exactly its requested output, capped by `max_model_len`;
//!   a rejected one could never fit (prompt above the KV pool or `max_model_len`);
//! * per request: arrival ≤ first admission ≤ first token ≤ last token ≤ terminal time,
//!   TTFT ≤ E2E, and the record's latencies agree with its timestamps;
//! * the report's counts and token totals equal the sums over the records;
//! * a simulation is a pure function: run twice (and with records off) the reports are
//!   identical except for the host's wall-time keys.
//!
//! Not observable from outside (to be asserted inside the simulator): the time of every
//! individual token being non-decreasing (only first/second/last are exposed), KV blocks in use
//! never exceeding `num_gpu_blocks` at any instant, and the batch token budget per pass.

use dynosim::config::{
    EngineArgs, LoadSpec, PreemptionMode, RouterConfig, RouterMode, SimConfig, Sla, Topology,
    WorkerType,
};
use dynosim::report::RequestRecord;
use dynosim::sim::simulate;
use dynosim::workload::formats::mooncake::{parse_trace_with, Timing};
use dynosim::workload::synthetic::{generate, SyntheticArrival, SyntheticSpec};
use dynosim::workload::Workload;
use proptest::prelude::*;

/// Report keys that depend on the host's clock.
const WALL_TIME_KEYS: &[&str] = &[
    "wall_time_ms",
    "processed_tokens_per_s",
    "processed_output_tokens_per_s",
];

/// One generated trace row.
#[derive(Debug, Clone)]
struct Row {
    session: Option<u8>,
    timestamp: u32,
    input: u32,
    output: u32,
    /// Prefix group and how many leading blocks it shares with its group.
    group: u8,
    shared: u8,
    /// Extra or missing hash ids compared with the prompt's need (missing ones clamp the row).
    id_slack: i8,
}

fn row() -> impl Strategy<Value = Row> {
    (
        prop::option::weighted(0.4, 0u8..3),
        0u32..3000,
        1u32..700,
        prop_oneof![9 => 1u32..40, 1 => Just(0u32)],
        0u8..3,
        0u8..6,
        -1i8..2,
    )
        .prop_map(
            |(session, timestamp, input, output, group, shared, id_slack)| Row {
                session,
                timestamp,
                input,
                output,
                group,
                shared,
                id_slack,
            },
        )
}

/// JSONL text of the rows (sorted by timestamp so every session's turns are in time order).
fn trace_text(mut rows: Vec<Row>, tbs: u32) -> String {
    rows.sort_by_key(|r| r.timestamp);
    let mut unique = 1_000_000u64;
    let mut out = String::new();
    for r in rows {
        let need = r.input.div_ceil(tbs) as i64;
        let len = (need + r.id_slack as i64).max(1) as usize;
        let ids: Vec<String> = (0..len)
            .map(|i| {
                if i < r.shared as usize {
                    (u64::from(r.group) * 1000 + i as u64).to_string()
                } else {
                    unique += 1;
                    unique.to_string()
                }
            })
            .collect();
        let session = match r.session {
            Some(s) => format!(", \"session_id\": \"s{s}\""),
            None => String::new(),
        };
        out.push_str(&format!(
            "{{\"timestamp\": {}, \"input_length\": {}, \"output_length\": {}, \"hash_ids\": [{}]{session}}}\n",
            r.timestamp,
            r.input,
            r.output,
            ids.join(", ")
        ));
    }
    out
}

/// A random small workload and whether it is closed-loop only (no timestamps).
fn workload() -> impl Strategy<Value = (Workload, bool)> {
    let trace = (
        prop::collection::vec(row(), 1..12),
        prop_oneof![Just(16u32), Just(64), Just(100)],
        any::<bool>(),
    )
        .prop_map(|(rows, tbs, closed)| {
            let text = trace_text(rows, tbs);
            let timing = if closed {
                Timing::ClosedLoop
            } else {
                Timing::OpenLoop
            };
            let w = parse_trace_with(&text, "prop.jsonl", tbs, timing)
                .unwrap_or_else(|e| panic!("generated trace refused: {e}\n{text}"));
            (w, closed)
        });
    let synthetic = (
        1u32..600,
        1u32..30,
        1u32..10,
        prop_oneof![
            Just(SyntheticArrival::ClosedLoop),
            (1.0f64..200.0).prop_map(SyntheticArrival::PoissonRate),
            (0.0f64..50.0).prop_map(SyntheticArrival::IntervalMs),
        ],
        1u32..4,
        prop_oneof![Just(0.0), 0.0f64..=1.0],
        0u32..3,
        prop_oneof![Just(0.0), 0.0f64..100.0],
        prop_oneof![Just(16u32), Just(64)],
        any::<u64>(),
    )
        .prop_map(
            |(input, output, count, arrival, turns, ratio, groups, delay, bs, seed)| {
                let spec = SyntheticSpec {
                    input_tokens: input,
                    output_tokens: output,
                    request_count: count,
                    arrival,
                    arrival_seed: seed,
                    turns_per_session: turns,
                    shared_prefix_ratio: ratio,
                    num_prefix_groups: groups,
                    inter_turn_delay_ms: delay,
                    ..SyntheticSpec::default()
                };
                let w = generate(&spec, bs).expect("valid synthetic spec");
                (w, arrival == SyntheticArrival::ClosedLoop)
            },
        );
    prop_oneof![3 => trace, 1 => synthetic]
}

/// Engine args of one pool.
fn engine() -> impl Strategy<Value = EngineArgs> {
    (
        prop_oneof![2 => 2u64..40, 1 => 40u64..2000],
        prop_oneof![Just(16u32), Just(64)],
        prop::option::weighted(0.2, 100u64..900),
        prop::option::weighted(0.6, 1u64..6),
        prop::option::weighted(0.7, 16u64..1200),
        any::<bool>(),
        prop::bool::weighted(0.8),
        prop_oneof![Just(1.0), 0.25f64..8.0],
        prop_oneof![Just(1.0), 0.25f64..8.0],
        any::<bool>(),
    )
        .prop_map(
            |(blocks, bs, mml, seqs, batched, prefix, chunked, speed, dspeed, fifo)| EngineArgs {
                num_gpu_blocks: blocks,
                block_size: bs,
                max_model_len: mml,
                max_num_seqs: seqs,
                max_num_batched_tokens: batched,
                enable_prefix_caching: prefix,
                enable_chunked_prefill: chunked,
                speedup_ratio: speed,
                decode_speedup_ratio: dspeed,
                preemption_mode: if fifo {
                    PreemptionMode::Fifo
                } else {
                    PreemptionMode::Lifo
                },
                ..EngineArgs::default()
            },
        )
}

#[derive(Debug, Clone)]
struct Setup {
    workload: Workload,
    cfg: SimConfig,
}

fn setup() -> impl Strategy<Value = Setup> {
    (
        (workload(), engine(), any::<bool>()),
        (1u32..5, 1u32..3, 1u32..3, 2u64..60, 1u32..3),
        (
            any::<bool>(),
            prop::option::weighted(0.3, 1u32..5),
            prop_oneof![Just(1.0), 0.25f64..8.0],
            prop::option::weighted(0.1, 0.0f64..3000.0),
            any::<u64>(),
        ),
        (
            prop_oneof![Just(0.0), 0.0f64..2.0],
            prop::option::weighted(0.3, 0.0f64..2.0),
            prop_oneof![Just(1.0), 0.0f64..3.0],
        ),
    )
        .prop_map(
            |(
                ((w, closed), eng, disagg),
                (workers, prefill_workers, decode_workers, decode_blocks, dp),
                (kv, concurrency, arrival_speedup, cap, seed),
                (temperature, queue_threshold, overlap_credit),
            )| {
                let topology = if disagg {
                    let prefill = EngineArgs {
                        worker_type: WorkerType::Prefill,
                        ..eng.clone()
                    };
                    // The decode pool may be smaller than the longest prompt: such a request is
                    // rejected at hand-off (it could never be reserved), never left waiting.
                    let decode = EngineArgs {
                        worker_type: WorkerType::Decode,
                        num_gpu_blocks: decode_blocks,
                        ..eng
                    };
                    Topology::Disaggregated {
                        num_prefill_workers: prefill_workers,
                        prefill,
                        num_decode_workers: decode_workers,
                        decode,
                    }
                } else {
                    Topology::Aggregated {
                        num_workers: workers,
                        engine: EngineArgs { dp_size: dp, ..eng },
                    }
                };
                let targets = match &topology {
                    Topology::Aggregated {
                        num_workers,
                        engine,
                    } => num_workers * engine.dp_size,
                    Topology::Disaggregated { .. } => 2,
                };
                // A closed-loop-only workload needs a concurrency cap; `dynosim run` refuses
                // kv_router on a single target.
                let concurrency = if closed {
                    Some(concurrency.unwrap_or(2))
                } else {
                    concurrency
                };
                let cfg = SimConfig {
                    topology,
                    router_mode: if kv && targets > 1 {
                        RouterMode::KvRouter
                    } else {
                        RouterMode::RoundRobin
                    },
                    router: RouterConfig {
                        router_temperature: temperature,
                        router_queue_threshold: queue_threshold,
                        overlap_score_credit: overlap_credit,
                        ..RouterConfig::default()
                    },
                    load: LoadSpec {
                        arrival_speedup_ratio: arrival_speedup,
                        replay_concurrency: concurrency,
                    },
                    max_sim_time_ms: cap,
                    sla: Sla::default(),
                    seed,
                    record_requests: true,
                };
                Setup { workload: w, cfg }
            },
        )
}

fn pools(cfg: &SimConfig) -> Vec<&EngineArgs> {
    match &cfg.topology {
        Topology::Aggregated { engine, .. } => vec![engine],
        Topology::Disaggregated {
            prefill, decode, ..
        } => vec![prefill, decode],
    }
}

/// Output a completed request must have emitted: its request, capped by `max_model_len`.
fn expected_output(rec: &RequestRecord, cfg: &SimConfig) -> u32 {
    let mut out = rec.requested_output_length;
    for p in pools(cfg) {
        if let Some(m) = p.max_model_len {
            let room = m.saturating_sub(u64::from(rec.input_length));
            out = out.min(room.min(u64::from(u32::MAX)) as u32);
        }
    }
    out
}

/// Whether a request can never fit some pool: its prompt (or prompt plus output) above the KV
/// pool, or its prompt at or above `max_model_len`.
fn cannot_fit(rec: &RequestRecord, cfg: &SimConfig) -> bool {
    pools(cfg).iter().any(|p| {
        let bs = u64::from(p.block_size);
        let total = u64::from(rec.input_length) + u64::from(rec.requested_output_length);
        total.div_ceil(bs) > p.num_gpu_blocks
            || p.max_model_len
                .is_some_and(|m| u64::from(rec.input_length) >= m)
    })
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * (1.0 + a.abs().max(b.abs()))
}

fn stable(report: &dynosim::report::Report) -> Vec<(String, String)> {
    report
        .fields
        .iter()
        .filter(|(k, _)| !WALL_TIME_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), format!("{v:?}")))
        .collect()
}

fn check(s: &Setup) -> Result<(), TestCaseError> {
    let w = &s.workload;
    let cfg = &s.cfg;
    let out = match simulate(w, cfg) {
        Ok(out) => out,
        // The dead-end guard: a request that can never be scheduled (chunked prefill off with a
        // prompt above the batch budget, or a hand-off that never fits) is an error with a
        // message, never a hang.
        Err(e) => {
            prop_assert!(
                e.to_string().contains("cannot make progress"),
                "unexpected simulation error: {}",
                e.to_string()
            );
            return Ok(());
        }
    };
    let report = &out.report;
    let records = &out.records;
    let n = w.requests.len();
    let num_requests = report.get("num_requests").unwrap_or(-1.0) as usize;

    // Every arrival ends completed or rejected, unless the time cap cut the run short.
    prop_assert!(records.len() <= num_requests && num_requests <= n);
    if cfg.max_sim_time_ms.is_none() {
        prop_assert_eq!(num_requests, n, "not every request arrived");
        prop_assert_eq!(
            records.len(),
            n,
            "a request neither completed nor was rejected"
        );
    }
    let mut uuids: Vec<u64> = records.iter().map(|r| r.uuid).collect();
    uuids.sort_unstable();
    uuids.dedup();
    prop_assert_eq!(uuids.len(), records.len(), "a request has two records");

    let mut completed = 0u64;
    let mut output_tokens = 0u64;
    let mut input_tokens = 0u64;
    for r in records {
        let spec = &w.requests[(r.uuid - 1) as usize];
        prop_assert_eq!(r.input_length, spec.input_length);
        prop_assert_eq!(r.requested_output_length, spec.output_length);
        match r.terminal_status.as_str() {
            "completed" => {
                prop_assert_eq!(
                    r.output_length,
                    expected_output(r, cfg),
                    "completed request {} emitted a different output length",
                    r.uuid
                );
                // One with nothing to generate counts as completed, as in DynoSim, with no
                // token times.
                completed += 1;
                input_tokens += u64::from(r.input_length);
                if r.output_length == 0 {
                    prop_assert!(r.first_token_ms.is_none() && r.ttft_ms.is_none(), "{r:?}");
                    continue;
                }
                output_tokens += u64::from(r.output_length);
                let (Some(first), Some(last), Some(ttft), Some(e2e)) = (
                    r.first_token_ms,
                    r.last_token_ms,
                    r.ttft_ms,
                    r.e2e_latency_ms,
                ) else {
                    return Err(TestCaseError::fail(format!("incomplete record {r:?}")));
                };
                let admit = r.first_admit_ms.expect("a completed request was admitted");
                prop_assert!(r.arrival_time_ms <= admit, "admitted before arrival: {r:?}");
                prop_assert!(admit <= first, "first token before admission: {r:?}");
                prop_assert!(first <= last, "first token after the last: {r:?}");
                prop_assert!(
                    last <= r.terminal_time_ms.unwrap_or(f64::NAN),
                    "token after the terminal time: {r:?}"
                );
                prop_assert!(ttft <= e2e, "TTFT above E2E: {r:?}");
                prop_assert!(close(ttft, first - r.arrival_time_ms));
                prop_assert!(close(e2e, last - r.arrival_time_ms));
                if r.output_length > 1 {
                    let ttst = r.ttst_ms.expect("a second token");
                    prop_assert!(ttst >= 0.0 && first + ttst <= last + 1e-9, "{r:?}");
                    let itl = r.itl_ms.expect("an ITL");
                    prop_assert!(
                        close(itl, (last - first) / f64::from(r.output_length - 1)),
                        "{r:?}"
                    );
                } else {
                    prop_assert!(r.ttst_ms.is_none() && r.itl_ms.is_none(), "{r:?}");
                }
                // A preempted sequence's re-admission reports its cached tokens, generated ones
                // included (as DynoSim does), and the last token is always recomputed.
                prop_assert!(
                    r.reused_input_tokens < (r.input_length + r.output_length).max(1),
                    "{r:?}"
                );
            }
            // `failed`: disaggregated, routed to a decode worker that can never hold the prompt.
            "rejected" | "failed" => {
                prop_assert!(
                    cannot_fit(r, cfg),
                    "request {} was {} although it fits: {r:?}",
                    r.uuid,
                    r.terminal_status
                );
                prop_assert!(r.first_token_ms.is_none(), "{r:?}");
                if r.terminal_status == "failed" {
                    prop_assert!(r.decode_worker_idx.is_none(), "{r:?}");
                    prop_assert!(r.decode_route_overlap_tokens.is_some(), "{r:?}");
                }
            }
            other => prop_assert!(false, "unknown terminal status {other}"),
        }
    }
    prop_assert_eq!(report.get("completed_requests"), Some(completed as f64));
    prop_assert_eq!(
        report.get("total_output_tokens"),
        Some(output_tokens as f64)
    );
    prop_assert_eq!(report.get("total_input_tokens"), Some(input_tokens as f64));

    // A pure function of its inputs: again, and without records.
    let again = simulate(w, cfg).expect("succeeded once");
    prop_assert_eq!(stable(report), stable(&again.report));
    prop_assert_eq!(records, &again.records);
    let mut quiet = cfg.clone();
    quiet.record_requests = false;
    let quiet = simulate(w, &quiet).expect("succeeded with records");
    prop_assert_eq!(stable(report), stable(&quiet.report));
    prop_assert!(quiet.records.is_empty());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6000))]

    #[test]
    fn simulations_keep_their_invariants(s in setup()) {
        check(&s)?;
    }
}

/// Requests that can never fit are rejected, not left waiting, and the others still complete.
#[test]
fn oversized_prompts_are_rejected_and_the_rest_complete() {
    let text = concat!(
        r#"{"timestamp": 0, "input_length": 100, "output_length": 3, "hash_ids": [1, 2]}"#,
        "\n",
        r#"{"timestamp": 1, "input_length": 5000, "output_length": 3, "hash_ids": [3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}"#,
        "\n",
        r#"{"timestamp": 2, "input_length": 100, "output_length": 3, "hash_ids": [1, 2]}"#,
        "\n",
    );
    let w = parse_trace_with(text, "t.jsonl", 512, Timing::OpenLoop).unwrap();
    let s = Setup {
        workload: w,
        cfg: SimConfig {
            topology: Topology::Aggregated {
                num_workers: 1,
                engine: EngineArgs {
                    num_gpu_blocks: 20,
                    block_size: 64,
                    ..EngineArgs::default()
                },
            },
            router_mode: RouterMode::RoundRobin,
            router: RouterConfig::default(),
            load: LoadSpec::default(),
            max_sim_time_ms: None,
            sla: Sla::default(),
            seed: 7,
            record_requests: true,
        },
    };
    check(&s).unwrap();
    let out = simulate(&s.workload, &s.cfg).unwrap();
    let statuses: Vec<(u64, &str)> = out
        .records
        .iter()
        .map(|r| (r.uuid, r.terminal_status.as_str()))
        .collect();
    assert_eq!(
        statuses,
        [(1, "completed"), (2, "rejected"), (3, "completed")]
    );
}
