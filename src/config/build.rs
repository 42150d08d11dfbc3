//! DynoSim's rules for one deployment, in one place for `dynosim run` and a sweep point: the
//! engine pools and worker counts -> [`Topology`] (worker types, what disaggregated pools must
//! share, the KV router's targets, the rank limit), what a trace format cannot be combined with,
//! and the [`WorkloadSource`] a configuration replays.
//!
//! The inputs are neutral (counts, parsed engine args, router mode, trace format); the rules
//! report typed [`Problem`]s, and each front end words them through its [`Wording`]: `run` names
//! `--flags` and stops at the first problem, a sweep names `spec.key.paths` and lists every
//! problem of a point. Both call the steps here, so they cannot drift apart.
//!
//! This module must not read flags or spec values itself, print, or touch files.

use super::limits::{engine_ranks, MAX_ENGINE_RANKS};
use super::{EngineArgs, EngineType, RouterMode, Topology, WorkerType};
use crate::error::InputError;
use crate::workload::formats::{Timing, TraceFormat, TraceSpec};
use crate::workload::synthetic::SyntheticSpec;
use crate::workload::Workload;
use std::path::PathBuf;

/// Tokens per trace `hash_id` when no trace block size is given (DynoSim: none -> 512).
pub use crate::workload::formats::DEFAULT_TRACE_BLOCK_SIZE;

/// The workload a configuration replays: what to load (a sweep loads each distinct one once).
#[derive(Debug, Clone, PartialEq)]
pub enum WorkloadSource {
    Trace {
        /// As the user wrote them (a sweep: relative to the spec's folder).
        files: Vec<String>,
        /// The files to read.
        paths: Vec<PathBuf>,
        /// `None` only for a Dynamo trace without a trace block size (it embeds its own).
        trace_block_size: Option<u32>,
        /// Replay concurrency is set: sessions keep file order and timestamps are optional.
        closed_loop: bool,
        /// The trace format, with the shared-prefix settings of `applied_compute_agentic`.
        format: TraceFormat,
        shared_prefix_ratio: f64,
        num_prefix_groups: u32,
    },
    Synthetic {
        spec: SyntheticSpec,
        /// Hash-id block size of the workload path (the engine's; the prefill pool's when
        /// disaggregated; spec §3.2).
        block_size: u32,
    },
}

/// The trace block size a format reads with: Dynamo traces embed their own unless one is given,
/// every other format defaults to [`DEFAULT_TRACE_BLOCK_SIZE`].
pub fn trace_block_size(format: TraceFormat, given: Option<u32>) -> Option<u32> {
    match (format, given) {
        (TraceFormat::Dynamo, given) => given,
        (_, given) => Some(given.unwrap_or(DEFAULT_TRACE_BLOCK_SIZE)),
    }
}

impl WorkloadSource {
    /// What the trace reader needs (`None` for synthetic workloads).
    pub fn trace_spec(&self) -> Option<TraceSpec> {
        match self {
            WorkloadSource::Trace {
                paths,
                trace_block_size,
                closed_loop,
                format,
                shared_prefix_ratio,
                num_prefix_groups,
                ..
            } => Some(TraceSpec {
                format: *format,
                paths: paths.clone(),
                trace_block_size: *trace_block_size,
                timing: if *closed_loop {
                    Timing::ClosedLoop
                } else {
                    Timing::OpenLoop
                },
                shared_prefix_ratio: *shared_prefix_ratio,
                num_prefix_groups: *num_prefix_groups,
            }),
            WorkloadSource::Synthetic { .. } => None,
        }
    }

    /// Reads the trace or generates the synthetic workload.
    pub fn load(&self) -> Result<Workload, InputError> {
        match self {
            WorkloadSource::Trace { .. } => match self.trace_spec() {
                Some(spec) => spec.load(),
                None => unreachable!("a trace source has a trace spec"),
            },
            WorkloadSource::Synthetic { spec, block_size } => {
                crate::workload::synthetic::generate(spec, *block_size)
            }
        }
    }

    /// A key identifying the loaded workload (equal keys = same `Workload`).
    pub fn cache_key(&self) -> String {
        match self {
            WorkloadSource::Trace {
                paths,
                trace_block_size,
                closed_loop,
                format,
                shared_prefix_ratio,
                num_prefix_groups,
                ..
            } => format!(
                "trace {paths:?} {trace_block_size:?} {closed_loop} {} {shared_prefix_ratio} \
                 {num_prefix_groups}",
                format.name()
            ),
            WorkloadSource::Synthetic { spec, block_size } => format!(
                "synthetic {} {block_size}",
                serde_json::to_string(spec).unwrap_or_default()
            ),
        }
    }
}

/// Which worker count a problem is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    Workers,
    PrefillWorkers,
    DecodeWorkers,
}

/// The engine pools of a deployment with their counts.
// Built once per deployment and consumed at once: boxing the larger variant buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum PoolsInput {
    Aggregated {
        engine: EngineArgs,
    },
    Disaggregated {
        prefill: EngineArgs,
        decode: EngineArgs,
    },
}

/// Neutral inputs of the topology rules. Counts are signed as `run`'s flags are; the builder
/// checks their range (a sweep's spec parser has already).
#[derive(Debug, Clone, PartialEq)]
pub struct TopologyInput {
    pub pools: PoolsInput,
    pub num_workers: i64,
    pub num_prefill_workers: i64,
    pub num_decode_workers: i64,
    pub router_mode: RouterMode,
}

/// One thing DynoSim refuses about a deployment, worded by the front end.
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    /// Prefill/decode counts other than 1 with an aggregated deployment.
    PoolCountsInAggregated { prefill: i64, decode: i64 },
    /// A worker count other than 1 with a disaggregated deployment.
    NumWorkersInDisaggregated { num_workers: i64 },
    /// A count below 1.
    CountBelowOne { count: Count, value: i64 },
    /// A count above `u32::MAX`.
    CountTooLarge { count: Count, value: i64 },
    /// The two pools' counts together are above [`MAX_ENGINE_RANKS`] (`run` checks this before
    /// the pools' engine args; see [`Wording::pool_sum_first`]).
    PoolSumAboveLimit { ranks: u64 },
    /// An aggregated engine whose worker type is not `aggregated`.
    AggregatedWorkerType(WorkerType),
    /// A pool whose worker type is not its role (`Prefill` or `Decode`).
    PoolWorkerType { pool: WorkerType, got: WorkerType },
    /// Attention DP in a disaggregated deployment.
    DisaggregatedDpSize { prefill: u32, decode: u32 },
    DisaggregatedEngineType {
        prefill: EngineType,
        decode: EngineType,
    },
    /// The pools' block sizes differ (`sglang`: the engine is SGLang, whose block is a page).
    DisaggregatedBlockSize {
        prefill: u32,
        decode: u32,
        sglang: bool,
    },
    /// An aggregated deployment above [`MAX_ENGINE_RANKS`] engine ranks.
    AggregatedRanksAboveLimit {
        num_workers: u32,
        dp_size: u32,
        ranks: u64,
    },
    /// A disaggregated deployment above [`MAX_ENGINE_RANKS`] engine ranks (a sweep's check).
    RanksAboveLimit { ranks: u64 },
    /// kv_router on a single worker/DP-rank target.
    KvRouterOneTarget,
    /// TRT-LLM in a disaggregated deployment (DynoSim's reason).
    TrtllmDisaggregation(String),
    /// A trace format with what it cannot be combined with.
    TraceFormat(TraceFormatProblem),
}

/// DynoSim's refusals of a trace format with a load or topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormatProblem {
    AppliedComputeAgenticNeedsConcurrency,
    AgenticMooncakeWithConcurrency,
    AgenticMooncakeDisaggregated,
    MooncakeDeltaDisaggregated,
}

/// How a front end names what it reads: the message of each [`Problem`].
pub trait Wording {
    fn message(&self, problem: &Problem) -> String;
    /// Whether the two pools' counts are checked against the rank limit right after the counts
    /// (`run`, before it looks at the engine args) instead of every rank after the pools (sweep).
    fn pool_sum_first(&self) -> bool {
        false
    }
}

/// `aggregated`, `prefill` or `decode`.
pub fn worker_type_name(t: WorkerType) -> &'static str {
    match t {
        WorkerType::Aggregated => "aggregated",
        WorkerType::Prefill => "prefill",
        WorkerType::Decode => "decode",
    }
}

/// A count as `u32`, or the problem with it (the value then stands at 1).
fn count_of(count: Count, value: i64, problems: &mut Vec<Problem>) -> u32 {
    if value < 1 {
        problems.push(Problem::CountBelowOne { count, value });
        return 1;
    }
    u32::try_from(value).unwrap_or_else(|_| {
        problems.push(Problem::CountTooLarge { count, value });
        1
    })
}

/// The topology of `input` with every problem DynoSim (and dynosim's rank limit) finds in it, in
/// the order `dynosim run` checks them (it reports the first). With problems, the topology is
/// still built (a sweep records it with the point); a bad count then stands at 1.
pub fn build_topology(input: TopologyInput, wording: &dyn Wording) -> (Topology, Vec<Problem>) {
    let mut problems = Vec::new();
    let topology = match input.pools {
        PoolsInput::Aggregated { engine } => aggregated(
            engine,
            [input.num_prefill_workers, input.num_decode_workers],
            input.num_workers,
            input.router_mode,
            &mut problems,
        ),
        PoolsInput::Disaggregated { prefill, decode } => disaggregated(
            prefill,
            decode,
            [input.num_prefill_workers, input.num_decode_workers],
            input.num_workers,
            wording,
            &mut problems,
        ),
    };
    (topology, problems)
}

fn aggregated(
    engine: EngineArgs,
    [num_prefill, num_decode]: [i64; 2],
    num_workers: i64,
    router_mode: RouterMode,
    problems: &mut Vec<Problem>,
) -> Topology {
    if num_prefill != 1 || num_decode != 1 {
        problems.push(Problem::PoolCountsInAggregated {
            prefill: num_prefill,
            decode: num_decode,
        });
    }
    let num_workers = count_of(Count::Workers, num_workers, problems);
    if engine.worker_type != WorkerType::Aggregated {
        problems.push(Problem::AggregatedWorkerType(engine.worker_type));
    }
    let targets = u64::from(num_workers) * u64::from(engine.dp_size);
    if targets > MAX_ENGINE_RANKS {
        problems.push(Problem::AggregatedRanksAboveLimit {
            num_workers,
            dp_size: engine.dp_size,
            ranks: targets,
        });
    }
    if router_mode == RouterMode::KvRouter && targets <= 1 {
        problems.push(Problem::KvRouterOneTarget);
    }
    Topology::Aggregated {
        num_workers,
        engine,
    }
}

fn disaggregated(
    prefill: EngineArgs,
    decode: EngineArgs,
    [num_prefill, num_decode]: [i64; 2],
    num_workers: i64,
    wording: &dyn Wording,
    problems: &mut Vec<Problem>,
) -> Topology {
    if num_workers != 1 {
        problems.push(Problem::NumWorkersInDisaggregated { num_workers });
    }
    let num_prefill_workers = count_of(Count::PrefillWorkers, num_prefill, problems);
    let num_decode_workers = count_of(Count::DecodeWorkers, num_decode, problems);
    if wording.pool_sum_first() {
        let ranks = u64::from(num_prefill_workers) + u64::from(num_decode_workers);
        if ranks > MAX_ENGINE_RANKS {
            problems.push(Problem::PoolSumAboveLimit { ranks });
        }
    }
    for (pool, args) in [
        (WorkerType::Prefill, &prefill),
        (WorkerType::Decode, &decode),
    ] {
        if args.worker_type != pool {
            problems.push(Problem::PoolWorkerType {
                pool,
                got: args.worker_type,
            });
        }
    }
    if prefill.dp_size != 1 || decode.dp_size != 1 {
        problems.push(Problem::DisaggregatedDpSize {
            prefill: prefill.dp_size,
            decode: decode.dp_size,
        });
    }
    if prefill.engine_type != decode.engine_type {
        problems.push(Problem::DisaggregatedEngineType {
            prefill: prefill.engine_type,
            decode: decode.engine_type,
        });
    } else if prefill.block_size != decode.block_size {
        problems.push(Problem::DisaggregatedBlockSize {
            prefill: prefill.block_size,
            decode: decode.block_size,
            sglang: prefill.engine_type == EngineType::Sglang,
        });
    }
    let topology = Topology::Disaggregated {
        num_prefill_workers,
        prefill,
        num_decode_workers,
        decode,
    };
    if !wording.pool_sum_first() {
        let ranks = engine_ranks(&topology);
        if ranks > MAX_ENGINE_RANKS {
            problems.push(Problem::RanksAboveLimit { ranks });
        }
    }
    topology
}

/// What `format` cannot be combined with: a replay concurrency (`closed_loop`) or a
/// disaggregated topology.
pub fn trace_format_problem(
    format: TraceFormat,
    closed_loop: bool,
    disaggregated: bool,
) -> Option<Problem> {
    let why = match format {
        TraceFormat::AppliedComputeAgentic if !closed_loop => {
            TraceFormatProblem::AppliedComputeAgenticNeedsConcurrency
        }
        TraceFormat::AgenticMooncake if closed_loop => {
            TraceFormatProblem::AgenticMooncakeWithConcurrency
        }
        TraceFormat::AgenticMooncake if disaggregated => {
            TraceFormatProblem::AgenticMooncakeDisaggregated
        }
        TraceFormat::MooncakeDelta if disaggregated => {
            TraceFormatProblem::MooncakeDeltaDisaggregated
        }
        _ => return None,
    };
    Some(Problem::TraceFormat(why))
}

/// DynoSim's refusal of TRT-LLM in a disaggregated topology (`closed_loop`: a replay
/// concurrency is set).
pub fn trtllm_problem(topology: &Topology, closed_loop: bool) -> Option<Problem> {
    topology
        .trtllm_disaggregation_problem(closed_loop)
        .map(Problem::TrtllmDisaggregation)
}
