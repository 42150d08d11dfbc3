//! How `dynosim run` words the deployment rules of [`crate::config::build`]: each problem names
//! the flag(s) involved. Only wording lives here; the rules themselves must not.

use crate::config::build::{self, Count, Problem, TraceFormatProblem, Wording};
use crate::config::limits::MAX_ENGINE_RANKS;
use crate::config::WorkerType;

/// The flags `dynosim run` words deployment problems with.
pub(super) struct RunFlags;

impl RunFlags {
    fn count_flag(count: Count) -> &'static str {
        match count {
            Count::Workers => "--num-workers",
            Count::PrefillWorkers => "--num-prefill-workers",
            Count::DecodeWorkers => "--num-decode-workers",
        }
    }
}

/// A worker type as written in engine-args JSON.
fn quoted(t: WorkerType) -> String {
    format!("\"{}\"", build::worker_type_name(t))
}

impl Wording for RunFlags {
    fn pool_sum_first(&self) -> bool {
        true
    }

    fn message(&self, problem: &Problem) -> String {
        match problem {
            Problem::PoolCountsInAggregated { prefill, decode } => format!(
                "--num-prefill-workers/--num-decode-workers are only used for disaggregated \
                 replay (got {prefill}/{decode}); use --num-workers, or give --prefill-engine-args and \
                 --decode-engine-args"
            ),
            Problem::NumWorkersInDisaggregated { num_workers } => format!(
                "--num-workers is only used for aggregated replay (got {num_workers}); use \
                 --num-prefill-workers and --num-decode-workers with disaggregated engine args"
            ),
            Problem::CountBelowOne { count, value } => {
                format!("{} must be >= 1, got {value}", Self::count_flag(*count))
            }
            Problem::CountTooLarge { count, value } => format!(
                "{} is too large: {value} (accepted: 1 to {})",
                Self::count_flag(*count),
                u32::MAX
            ),
            Problem::PoolSumAboveLimit { ranks } => format!(
                "--num-prefill-workers + --num-decode-workers = {ranks} workers is above the \
                 limit of {MAX_ENGINE_RANKS} (each keeps its own scheduler and KV cache state)"
            ),
            // Not produced for `run`, which checks the pools' sum first.
            Problem::RanksAboveLimit { ranks } => format!(
                "{ranks} engine ranks are above the limit of {MAX_ENGINE_RANKS} (each keeps its \
                 own scheduler and KV cache state)"
            ),
            Problem::AggregatedWorkerType(got) => format!(
                "--extra-engine-args: aggregated replay needs worker_type \"aggregated\", got \
                 {}; use --prefill-engine-args/--decode-engine-args for disaggregated replay",
                quoted(*got)
            ),
            Problem::PoolWorkerType {
                pool: WorkerType::Prefill,
                got,
            } => format!(
                "--prefill-engine-args must set worker_type \"prefill\" (or is_prefill: true), \
                 got {}",
                quoted(*got)
            ),
            Problem::PoolWorkerType { got, .. } => format!(
                "--decode-engine-args must set worker_type \"decode\" (or is_decode: true), \
                 got {}",
                quoted(*got)
            ),
            Problem::DisaggregatedDpSize { prefill, decode } => format!(
                "disaggregated replay does not support attention DP: dp_size must be 1 in \
                 --prefill-engine-args and --decode-engine-args (got {prefill} and {decode})"
            ),
            Problem::DisaggregatedEngineType { prefill, decode } => format!(
                "disaggregated replay requires the same engine_type in \
                 --prefill-engine-args and --decode-engine-args (got {} and {})",
                prefill.display_name(),
                decode.display_name()
            ),
            Problem::DisaggregatedBlockSize {
                prefill,
                decode,
                sglang,
            } => {
                let what = if *sglang {
                    "page size (sglang.page_size or block_size)"
                } else {
                    "block_size"
                };
                format!(
                    "disaggregated replay requires the same {what} in \
                     --prefill-engine-args and --decode-engine-args (got {prefill} and {decode})"
                )
            }
            Problem::AggregatedRanksAboveLimit {
                num_workers,
                dp_size,
                ranks,
            } => {
                let what = if *dp_size == 1 {
                    format!("--num-workers {num_workers}")
                } else {
                    format!(
                        "--num-workers × dp_size = {num_workers} × {dp_size} = {ranks} engine ranks"
                    )
                };
                format!(
                    "{what} is above the limit of {MAX_ENGINE_RANKS} engine ranks (each keeps \
                     its own scheduler and KV cache state); accepted: 1 to {MAX_ENGINE_RANKS}"
                )
            }
            Problem::KvRouterOneTarget => "--router-mode kv_router needs more than one \
                worker/DP-rank target (--num-workers × dp_size = 1); add workers or use round_robin"
                .into(),
            Problem::TrtllmDisaggregation(why) => {
                format!("--prefill-engine-args/--decode-engine-args: {why}")
            }
            Problem::TraceFormat(why) => match why {
                TraceFormatProblem::AppliedComputeAgenticNeedsConcurrency => {
                    "--trace-format=applied_compute_agentic requires --replay-concurrency because \
                     the source traces do not include first-turn timestamps"
                }
                TraceFormatProblem::AgenticMooncakeWithConcurrency => {
                    "--trace-format agentic_mooncake: agentic_mooncake trace format is not \
                     supported with replay_concurrency (--replay-concurrency)"
                }
                TraceFormatProblem::AgenticMooncakeDisaggregated => {
                    "--trace-format agentic_mooncake: agentic_mooncake trace format is not \
                     supported for disaggregated replay"
                }
                TraceFormatProblem::MooncakeDeltaDisaggregated => {
                    "--trace-format mooncake-delta: mooncake-delta trace format is not supported \
                     for disaggregated replay"
                }
            }
            .into(),
        }
    }
}
