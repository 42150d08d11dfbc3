//! Resource limits: the ranges that keep one simulation's state within memory, and a lower bound
//! of the memory a simulation will certainly need, checked before it starts. A configuration
//! whose state would outgrow the machine is refused with a message instead of being killed by
//! the OS.
//!
//! The bound is a floor, never a guess from above: it counts only what the simulator must hold at
//! once (every request's bookkeeping, every engine rank, and the content ids of every prompt block
//! that another request may share, computed once before simulating; see
//! [`crate::workload::sharing`]). A configuration under the floor may still need more; one over it
//! cannot run on this machine.

use super::{SimConfig, Topology};
use crate::workload::sharing::{shared_block_bound, shared_block_count};
use crate::workload::synthetic::SyntheticSpec;
use crate::workload::Workload;

/// Largest `num_gpu_blocks` of one engine rank (the simulator indexes blocks with 31 bits).
pub const MAX_NUM_GPU_BLOCKS: u64 = u32::MAX as u64 / 2;

/// Largest number of engine ranks of one deployment (workers × `dp_size`, all pools together).
/// Each rank keeps its own scheduler, KV pool and router state; real deployments have at most a
/// few thousand.
pub const MAX_ENGINE_RANKS: u64 = 100_000;

/// Bytes the simulator holds per request at the least (workload entry, session, event-loop and
/// collector state), measured on the simple synthetic path and rounded down.
const REQUEST_BYTES: u64 = 256;
/// Extra bytes per request when per-request records are kept (`--report-jsonl`).
const RECORD_BYTES: u64 = 256;
/// Bytes per engine rank (scheduler, KV pool and router bookkeeping), rounded down.
const RANK_BYTES: u64 = 512;
/// One stored trace-block id of the workload.
const STORED_BLOCK_BYTES: u64 = 4;
/// One content id of a shareable prompt block (`PromptBlocks::ids`).
const SHARED_BLOCK_BYTES: u64 = 4;
/// Per request (plus one) for where its shareable blocks start (`PromptBlocks::starts`).
const SHARED_START_BYTES: u64 = 8;

/// What of a workload decides its memory, known before simulating (for synthetic workloads,
/// before generating them), for one engine block size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WorkloadShape {
    pub requests: u64,
    /// Trace-block ids stored by the workload.
    pub stored_blocks: u64,
    /// Shareable prompt blocks of all requests together (the ids `PromptBlocks::new` stores) for
    /// the engine block size the shape was made for: exact for a loaded workload, a floor for a
    /// synthetic spec.
    pub shared_blocks: u64,
}

impl WorkloadShape {
    /// The shape of a loaded (or generated) workload, for engine block size `block_size`.
    pub fn of_workload(w: &Workload, block_size: u32) -> Self {
        WorkloadShape {
            requests: w.requests.len() as u64,
            stored_blocks: w.block_ids.len() as u64,
            shared_blocks: shared_block_count(w, block_size),
        }
    }

    /// The shape of the workload `spec` would generate for engine block size `block_size`,
    /// without generating it.
    pub fn of_synthetic(spec: &SyntheticSpec, block_size: u32) -> Self {
        // Warm-up requests included; drawn lengths at their shortest (a floor).
        let requests = spec.total_requests();
        let input = u64::from(spec.min_input_tokens());
        let block = u64::from(block_size.max(1));
        let workload_path = spec.uses_workload_path();
        let num_blocks = input.div_ceil(block);
        let stored_blocks = if workload_path {
            requests * num_blocks
        } else {
            0
        };
        // Each session draws one of `g` prefix groups, whose requests all start with the same
        // `round(num_blocks × ratio)` trace blocks (one engine block each: the generator uses
        // the engine block size), then go on with unique ones. A request shares its prefix's
        // full blocks as soon as another request is in its group: with several turns per
        // session every request does; with one, at most `g` sessions are alone in their group,
        // and only `g − 1` when there are more sessions than groups.
        let g = u64::from(spec.num_prefix_groups);
        let sessions = u64::from(spec.request_count);
        let sharing = if spec.turns_per_session > 1 {
            requests
        } else if sessions > g {
            sessions - g + 1
        } else {
            0
        };
        let shared_blocks = if spec.shares_prefixes() {
            let prefix =
                ((num_blocks as f64 * spec.shared_prefix_ratio).round() as u64).min(num_blocks);
            let per_request = prefix.min(input / block);
            // Past u32::MAX − 1 distinct ids sharing stops (see `PromptBlocks::new`), but every
            // id given out is held by at least two requests.
            sharing
                .saturating_mul(per_request)
                .min(2 * (u64::from(u32::MAX) - 1))
        } else {
            0
        };
        WorkloadShape {
            requests,
            stored_blocks,
            shared_blocks,
        }
    }
}

/// The floor of one simulation's memory, by part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoryFloor {
    pub requests: u64,
    pub ranks: u64,
    pub prompt_blocks: u64,
    pub total: u64,
}

impl MemoryFloor {
    /// A one-line breakdown, largest part first.
    pub fn describe(&self) -> String {
        let mut parts = [
            (self.requests, "request state"),
            (self.prompt_blocks, "shareable prompt blocks"),
            (self.ranks, "engine ranks"),
        ];
        parts.sort_by_key(|p| std::cmp::Reverse(p.0));
        parts
            .iter()
            .filter(|(b, _)| *b > 0)
            .map(|(b, what)| format!("{} for {what}", human_bytes(*b)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Which part dominates.
    pub fn largest(&self) -> MemoryPart {
        if self.requests >= self.prompt_blocks && self.requests >= self.ranks {
            MemoryPart::Requests
        } else if self.prompt_blocks >= self.ranks {
            MemoryPart::PromptBlocks
        } else {
            MemoryPart::Ranks
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryPart {
    /// Request bookkeeping and the workload's stored trace-block ids.
    Requests,
    /// Content ids of the prompt blocks some other request may share.
    PromptBlocks,
    Ranks,
}

/// Engine ranks of a topology (workers × `dp_size`, all pools).
pub fn engine_ranks(t: &Topology) -> u64 {
    match t {
        Topology::Aggregated {
            num_workers,
            engine,
        } => u64::from(*num_workers) * u64::from(engine.dp_size),
        Topology::Disaggregated {
            num_prefill_workers,
            prefill,
            num_decode_workers,
            decode,
        } => {
            u64::from(*num_prefill_workers) * u64::from(prefill.dp_size)
                + u64::from(*num_decode_workers) * u64::from(decode.dp_size)
        }
    }
}

/// The memory one simulation of `cfg` over a workload of this shape certainly needs. `shape` is
/// the one made for `cfg`'s engine block size.
pub fn memory_floor(shape: &WorkloadShape, cfg: &SimConfig) -> MemoryFloor {
    let per_request = REQUEST_BYTES + if cfg.record_requests { RECORD_BYTES } else { 0 };
    let requests = shape
        .requests
        .saturating_mul(per_request)
        .saturating_add(shape.stored_blocks.saturating_mul(STORED_BLOCK_BYTES));
    let ranks = engine_ranks(&cfg.topology).saturating_mul(RANK_BYTES);
    // The shareable blocks of every request are computed before the simulation starts.
    let prompt_blocks = shape
        .shared_blocks
        .saturating_mul(SHARED_BLOCK_BYTES)
        .saturating_add(
            shape
                .requests
                .saturating_add(1)
                .saturating_mul(SHARED_START_BYTES),
        );
    MemoryFloor {
        requests,
        ranks,
        prompt_blocks,
        total: requests.saturating_add(ranks).saturating_add(prompt_blocks),
    }
}

/// Refuses simulating `cfg` over the loaded workload `w` when its floor exceeds `budget`, like
/// [`check_memory`] with the floor of [`WorkloadShape::of_workload`]; `hint` gets that shape and
/// the largest part. Counting the shareable prompt blocks builds a trie of the whole workload,
/// so it is skipped when the floor fits even with a quick upper bound of them.
pub fn check_workload_memory(
    w: &Workload,
    cfg: &SimConfig,
    budget: u64,
    hint: impl FnOnce(&WorkloadShape, MemoryPart) -> &'static str,
) -> Result<(), String> {
    let block_size = cfg.topology.block_size();
    let quick = WorkloadShape {
        requests: w.requests.len() as u64,
        stored_blocks: w.block_ids.len() as u64,
        shared_blocks: shared_block_bound(w, block_size),
    };
    if memory_floor(&quick, cfg).total <= budget {
        return Ok(());
    }
    let shape = WorkloadShape::of_workload(w, block_size);
    let floor = memory_floor(&shape, cfg);
    check_memory(&floor, budget, hint(&shape, floor.largest()))
}

/// The memory the simulations of this process may use: the machine's physical memory (Linux's
/// `MemTotal`, 16 GiB where it cannot be read), lowered by a cgroup memory limit
/// (`memory.max`) or an address-space limit (`ulimit -v`) when one is set.
pub fn memory_budget() -> u64 {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let mut budget = read("/proc/meminfo")
        .and_then(|text| parse_mem_total(&text))
        .unwrap_or(16 << 30);
    if let Some(max) = read("/sys/fs/cgroup/memory.max").and_then(|t| t.trim().parse::<u64>().ok())
    {
        budget = budget.min(max);
    }
    if let Some(limit) = read("/proc/self/limits").and_then(|t| parse_address_space_limit(&t)) {
        budget = budget.min(limit);
    }
    budget
}

fn parse_mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// The soft `Max address space` of `/proc/self/limits` in bytes (`None` when unlimited).
fn parse_address_space_limit(limits: &str) -> Option<u64> {
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    line["Max address space".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `1.5 GiB`-style text.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut x = b as f64;
    let mut unit = 0;
    while x >= 1024.0 && unit + 1 < UNITS.len() {
        x /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{b} B")
    } else {
        format!("{x:.1} {}", UNITS[unit])
    }
}

/// Refuses a simulation whose floor exceeds `budget`. `hint` says which inputs to lower.
pub fn check_memory(floor: &MemoryFloor, budget: u64, hint: &str) -> Result<(), String> {
    if floor.total <= budget {
        return Ok(());
    }
    Err(format!(
        "this simulation would need at least {} of memory ({}), more than this machine's {}; {hint}",
        human_bytes(floor.total),
        floor.describe(),
        human_bytes(budget)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{EngineArgs, LoadSpec, RouterConfig, RouterMode, Sla};
    use crate::workload::formats::mooncake::parse_trace;
    use crate::workload::synthetic::SyntheticArrival;

    fn cfg(num_workers: u32, dp: u32) -> SimConfig {
        SimConfig {
            topology: Topology::Aggregated {
                num_workers,
                engine: EngineArgs {
                    dp_size: dp,
                    ..EngineArgs::default()
                },
            },
            router_mode: RouterMode::RoundRobin,
            router: RouterConfig::default(),
            load: LoadSpec::default(),
            max_sim_time_ms: None,
            sla: Sla::default(),
            seed: 1,
            record_requests: false,
        }
    }

    fn syn(count: u32, input: u32, arrival: SyntheticArrival) -> SyntheticSpec {
        SyntheticSpec {
            input_tokens: input,
            output_tokens: 1,
            request_count: count,
            arrival,
            arrival_seed: 1,
            turns_per_session: 1,
            shared_prefix_ratio: 0.0,
            num_prefix_groups: 0,
            inter_turn_delay_ms: 0.0,
            ..SyntheticSpec::default()
        }
    }

    #[test]
    fn ordinary_runs_are_far_below_a_laptop() {
        let shape = WorkloadShape::of_synthetic(
            &syn(100_000, 8192, SyntheticArrival::PoissonRate(10.0)),
            64,
        );
        let f = memory_floor(&shape, &cfg(1024, 8));
        assert!(f.total < 100 << 20, "{f:?}");
        assert!(check_memory(&f, 1 << 30, "").is_ok());
    }

    fn grouped(count: u32, input: u32, ratio: f64, groups: u32) -> SyntheticSpec {
        SyntheticSpec {
            shared_prefix_ratio: ratio,
            num_prefix_groups: groups,
            ..syn(count, input, SyntheticArrival::IntervalMs(1.0))
        }
    }

    #[test]
    fn absurd_sizes_are_over_any_machine() {
        // 4 billion requests: a terabyte of bookkeeping.
        let f = memory_floor(
            &WorkloadShape::of_synthetic(
                &syn(u32::MAX, 10, SyntheticArrival::PoissonRate(1.0)),
                64,
            ),
            &cfg(1, 1),
        );
        assert!(f.total > 1 << 40, "{f:?}");
        assert_eq!(f.largest(), MemoryPart::Requests);
        // 100 prompts of 4 billion tokens sharing half of them: 100 x 31.25 M shared blocks.
        let f = memory_floor(
            &WorkloadShape::of_synthetic(&grouped(100, 4_000_000_000, 0.5, 1), 64),
            &cfg(1, 1),
        );
        assert_eq!(f.prompt_blocks, 100 * 31_250_000 * 4 + 101 * 8);
        let e = check_memory(&f, 8 << 30, "lower --input-tokens").unwrap_err();
        assert!(
            e.contains("at least 34.9 GiB")
                && e.contains("23.3 GiB for request state")
                && e.contains("11.6 GiB for shareable prompt blocks")
                && e.contains("8.0 GiB")
                && e.ends_with("lower --input-tokens"),
            "{e}"
        );
        assert_eq!(
            memory_floor(&WorkloadShape::default(), &cfg(100_000, 1)).ranks,
            100_000 * RANK_BYTES
        );
    }

    #[test]
    fn huge_unique_prompts_need_no_memory_per_block() {
        // 100 unique prompts of 4 billion tokens, all at once: no block is shareable (they are
        // rejected as larger than the KV pool), so only their bookkeeping counts.
        let shape = WorkloadShape::of_synthetic(
            &syn(100, 4_000_000_000, SyntheticArrival::IntervalMs(0.0)),
            64,
        );
        assert_eq!(shape.shared_blocks, 0);
        let f = memory_floor(&shape, &cfg(1, 1));
        assert_eq!(f.prompt_blocks, 101 * 8);
        assert!(f.total < 1 << 20, "{f:?}");
    }

    #[test]
    fn synthetic_shape_is_a_floor_of_the_generated_one() {
        use crate::workload::synthetic::generate;
        // (sessions, turns, input, ratio, groups, exact): exact unless some groups may hold a
        // single request.
        let cases = [
            (10, 1, 1000, 0.5, 1, true),
            (10, 1, 1000, 1.0, 1, true),
            (10, 1, 1024, 1.0, 1, true),
            (2, 1, 1000, 0.5, 1, true),
            (1, 1, 1000, 0.5, 1, true),
            (1, 3, 1000, 0.5, 1, true),
            (10, 1, 1000, 0.01, 1, true),
            (10, 1, 30, 0.5, 1, true),
            (50, 1, 1000, 0.3, 7, false),
            (5, 1, 1000, 0.3, 20, false),
            (3, 1, 1000, 0.3, 2, false),
            (7, 3, 1000, 0.7, 4, true),
            (1, 2, 1000, 0.7, 4, true),
            (10, 2, 1000, 0.0, 3, true),
            (10, 2, 1000, 0.5, 0, true),
        ];
        for (count, turns, input, ratio, groups, exact) in cases {
            let spec = SyntheticSpec {
                turns_per_session: turns,
                ..grouped(count, input, ratio, groups)
            };
            for bs in [16, 64, 100] {
                let floor = WorkloadShape::of_synthetic(&spec, bs);
                let real = WorkloadShape::of_workload(&generate(&spec, bs).unwrap(), bs);
                assert_eq!(floor.requests, real.requests, "{spec:?} {bs}");
                assert_eq!(floor.stored_blocks, real.stored_blocks, "{spec:?} {bs}");
                if exact {
                    assert_eq!(floor.shared_blocks, real.shared_blocks, "{spec:?} {bs}");
                } else {
                    assert!(floor.shared_blocks <= real.shared_blocks, "{spec:?} {bs}");
                }
            }
        }
        // The generator's prefix of 10 sessions x 1000 tokens at ratio 0.5: round(16 x 0.5)
        // blocks of 64 tokens, all full, shared by all 10.
        let s = WorkloadShape::of_synthetic(&grouped(10, 1000, 0.5, 1), 64);
        assert_eq!(s.shared_blocks, 10 * 8);
        // A prefix of all 16 blocks: the last one is not full.
        let s = WorkloadShape::of_synthetic(&grouped(10, 1000, 1.0, 1), 64);
        assert_eq!(s.shared_blocks, 10 * 15);
        // Without groups (or with a zero ratio) nothing is shared; with as many groups as
        // single-turn sessions nothing is certainly shared, with one fewer two sessions share.
        for spec in [grouped(10, 1000, 0.5, 0), grouped(10, 1000, 0.0, 3)] {
            assert_eq!(WorkloadShape::of_synthetic(&spec, 64).shared_blocks, 0);
        }
        assert_eq!(
            WorkloadShape::of_synthetic(&grouped(10, 1000, 0.5, 10), 64).shared_blocks,
            0
        );
        assert_eq!(
            WorkloadShape::of_synthetic(&grouped(10, 1000, 0.5, 9), 64).shared_blocks,
            2 * 8
        );
        // No overflow, and sharing stops at u32::MAX − 1 distinct ids.
        let s = WorkloadShape::of_synthetic(&grouped(u32::MAX, u32::MAX, 1.0, 1), 1);
        assert_eq!(s.shared_blocks, 2 * (u64::from(u32::MAX) - 1));
        assert_eq!(memory_floor(&s, &cfg(1, 1)).total, u64::MAX);
    }

    #[test]
    fn workload_shape_counts_the_shared_blocks() {
        let text = concat!(
            "{\"timestamp\":0,\"input_length\":1024,\"output_length\":1,\"hash_ids\":[1,2]}\n",
            "{\"timestamp\":1,\"input_length\":700,\"output_length\":1,\"hash_ids\":[1,2]}\n",
            "{\"timestamp\":2,\"input_length\":1024,\"output_length\":1,\"hash_ids\":[1,3]}\n",
            "{\"timestamp\":3,\"input_length\":512,\"output_length\":1,\"hash_ids\":[9]}\n",
        );
        let w = parse_trace(text, "t.jsonl", 512).unwrap();
        let s = WorkloadShape::of_workload(&w, 64);
        assert_eq!(
            s,
            WorkloadShape {
                requests: 4,
                stored_blocks: 7,
                shared_blocks: 10 + 10 + 8,
            }
        );
        assert_eq!(WorkloadShape::of_workload(&w, 1024).shared_blocks, 0);
        let f = memory_floor(&s, &cfg(1, 1));
        assert_eq!(f.prompt_blocks, 28 * 4 + 5 * 8);
        // 100 prompts of 4 billion tokens that all share one trace block: 62.5 M blocks each.
        let rows: String = (0..100)
            .map(|i| {
                format!(
                    "{{\"timestamp\":{i},\"input_length\":4000000000,\"output_length\":1,\"hash_ids\":[0]}}\n"
                )
            })
            .collect();
        let w = parse_trace(&rows, "huge.jsonl", 4_000_000_000).unwrap();
        let f = memory_floor(&WorkloadShape::of_workload(&w, 64), &cfg(1, 1));
        assert_eq!(f.prompt_blocks, 100 * 62_500_000 * 4 + 101 * 8);
        assert_eq!(f.largest(), MemoryPart::PromptBlocks);
        let e = check_workload_memory(&w, &cfg(1, 1), 8 << 30, |s, part| {
            assert_eq!(s.shared_blocks, 100 * 62_500_000);
            assert_eq!(part, MemoryPart::PromptBlocks);
            "raise the block size"
        })
        .unwrap_err();
        assert!(
            e.contains("at least 23.3 GiB") && e.ends_with("raise the block size"),
            "{e}"
        );
        let mut big_blocks = cfg(1, 1);
        if let Topology::Aggregated { engine, .. } = &mut big_blocks.topology {
            engine.block_size = 65536;
        }
        assert!(check_workload_memory(&w, &big_blocks, 8 << 30, |_, _| "").is_ok());
        // The same prompts on distinct ids share nothing.
        let rows: String = (0..100)
            .map(|i| {
                format!(
                    "{{\"timestamp\":0,\"input_length\":4000000000,\"output_length\":1,\"hash_ids\":[{i}]}}\n"
                )
            })
            .collect();
        let w = parse_trace(&rows, "huge.jsonl", 4_000_000_000).unwrap();
        assert_eq!(WorkloadShape::of_workload(&w, 64).shared_blocks, 0);
        // Over budget by the quick bound only: counted, then accepted.
        assert!(check_workload_memory(&w, &cfg(1, 1), 8 << 30, |_, _| "").is_ok());
    }

    #[test]
    fn budget_and_bytes_text() {
        assert_eq!(
            parse_mem_total("MemTotal:       24576000 kB\nMemFree: 1 kB\n"),
            Some(24_576_000 * 1024)
        );
        assert_eq!(parse_mem_total("nothing"), None);
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max address space         4096000000           unlimited            bytes\n";
        assert_eq!(parse_address_space_limit(limits), Some(4_096_000_000));
        assert_eq!(
            parse_address_space_limit(
                "Max address space         unlimited            unlimited            bytes\n"
            ),
            None
        );
        assert!(memory_budget() > 1 << 20);
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
    }
}
