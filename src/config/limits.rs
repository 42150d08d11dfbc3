//! Resource limits: the ranges that keep one simulation's state within memory, and a lower bound
//! of the memory a simulation will certainly need, checked before it starts. A configuration
//! whose state would outgrow the machine is refused with a message instead of being killed by
//! the OS.
//!
//! The bound is a floor, never a guess from above: it counts only what the simulator must hold at
//! once (every request's bookkeeping, every engine rank, the prompt hashes of the requests that
//! arrive together at the start and of the largest prompt). A configuration under the floor may
//! still need more; one over it cannot run on this machine.

use super::{SimConfig, Topology};
use crate::workload::synthetic::{SyntheticArrival, SyntheticSpec};
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
/// One prompt hash of a request in flight (one per engine block of its prompt).
const HASH_BYTES: u64 = 8;

/// What of a workload decides its memory, known before simulating (for synthetic workloads,
/// before generating them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WorkloadShape {
    pub requests: u64,
    /// Trace-block ids stored by the workload.
    pub stored_blocks: u64,
    /// Prompt tokens of the requests that arrive at the first instant (all in flight at once).
    pub first_burst_tokens: Burst,
    /// Prompt tokens of the longest prompt.
    pub longest_prompt: u64,
}

/// A group of requests arriving together. The engine block size is not known yet, so the group
/// keeps its total prompt tokens: `ceil(tokens / b)` bounds its hash count from below.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Burst {
    pub tokens: u64,
    pub count: u64,
}

impl WorkloadShape {
    /// The shape of a loaded (or generated) workload.
    pub fn of_workload(w: &Workload) -> Self {
        let mut shape = WorkloadShape {
            requests: w.requests.len() as u64,
            stored_blocks: w.block_ids.len() as u64,
            ..Default::default()
        };
        shape.longest_prompt = w
            .requests
            .iter()
            .map(|r| u64::from(r.input_length))
            .max()
            .unwrap_or(0);
        // Sessions are ordered by first arrival; closed-loop workloads have none, and their
        // first admissions are bounded by the concurrency, which the caller applies.
        let first = w.sessions.first().and_then(|s| s.first_arrival_ms);
        let mut burst = Burst::default();
        if first.is_some() {
            for s in w
                .sessions
                .iter()
                .take_while(|s| s.first_arrival_ms == first)
            {
                if let Some(r) = w.requests.get(s.first_request as usize) {
                    burst.tokens += u64::from(r.input_length);
                    burst.count += 1;
                }
            }
        }
        shape.first_burst_tokens = burst;
        shape
    }

    /// The shape of the workload `spec` would generate, without generating it.
    pub fn of_synthetic(spec: &SyntheticSpec, block_size: u32) -> Self {
        let requests = u64::from(spec.request_count) * u64::from(spec.turns_per_session);
        let input = u64::from(spec.input_tokens);
        let workload_path = spec.turns_per_session > 1
            || spec.shared_prefix_ratio > 0.0
            || spec.num_prefix_groups > 0
            || spec.inter_turn_delay_ms > 0.0;
        let stored_blocks = if workload_path {
            requests * input.div_ceil(u64::from(block_size.max(1)))
        } else {
            0
        };
        let burst = match spec.arrival {
            SyntheticArrival::IntervalMs(0.0) => u64::from(spec.request_count),
            _ => 1,
        };
        WorkloadShape {
            requests,
            stored_blocks,
            first_burst_tokens: Burst {
                tokens: burst * input,
                count: burst,
            },
            longest_prompt: input,
        }
    }
}

/// The floor of one simulation's memory, by part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoryFloor {
    pub requests: u64,
    pub ranks: u64,
    pub prompts: u64,
    pub total: u64,
}

impl MemoryFloor {
    /// A one-line breakdown, largest part first.
    pub fn describe(&self) -> String {
        let mut parts = [
            (self.requests, "request state"),
            (self.prompts, "prompt hashes in flight"),
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
        if self.requests >= self.prompts && self.requests >= self.ranks {
            MemoryPart::Requests
        } else if self.prompts >= self.ranks {
            MemoryPart::Prompts
        } else {
            MemoryPart::Ranks
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryPart {
    Requests,
    Prompts,
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

/// The memory one simulation of `cfg` over a workload of this shape certainly needs.
pub fn memory_floor(shape: &WorkloadShape, cfg: &SimConfig) -> MemoryFloor {
    let block = u64::from(cfg.topology.block_size().max(1));
    let per_request = REQUEST_BYTES + if cfg.record_requests { RECORD_BYTES } else { 0 };
    let requests = shape
        .requests
        .saturating_mul(per_request)
        .saturating_add(shape.stored_blocks.saturating_mul(STORED_BLOCK_BYTES));
    let ranks = engine_ranks(&cfg.topology).saturating_mul(RANK_BYTES);
    // Requests arriving at the first instant are all hashed before any can finish; with a
    // concurrency cap only that many are admitted at first.
    let mut burst = shape.first_burst_tokens;
    if let Some(c) = cfg.load.replay_concurrency {
        let c = u64::from(c).min(shape.requests);
        // Closed loop: the first `c` requests start together; count the shortest case we can
        // be sure of (c prompts of at least one block each, or the average of the burst).
        if burst.count == 0 {
            burst = Burst {
                tokens: c,
                count: c,
            };
        } else if burst.count > c {
            burst.tokens = burst.tokens / burst.count * c;
            burst.count = c;
        }
    }
    let mut prompt_blocks = burst.tokens.div_ceil(block);
    if cfg.max_sim_time_ms.is_none() {
        // Every request arrives, the longest one too.
        prompt_blocks = prompt_blocks.max(shape.longest_prompt.div_ceil(block));
    }
    let prompts = prompt_blocks.saturating_mul(HASH_BYTES);
    MemoryFloor {
        requests,
        ranks,
        prompts,
        total: requests.saturating_add(ranks).saturating_add(prompts),
    }
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
    use crate::workload::{Content, RequestSpec, SessionSpec};

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
        // A burst of 20 prompts of 4 billion tokens: 20 x 62.5 M hashes.
        let f = memory_floor(
            &WorkloadShape::of_synthetic(
                &syn(20, 4_000_000_000, SyntheticArrival::IntervalMs(0.0)),
                64,
            ),
            &cfg(1, 1),
        );
        assert_eq!(f.prompts, 20 * 62_500_000 * 8);
        assert_eq!(f.largest(), MemoryPart::Prompts);
        let e = check_memory(&f, 8 << 30, "lower --input-tokens").unwrap_err();
        assert!(
            e.contains("at least 9.3 GiB")
                && e.contains("prompt hashes in flight")
                && e.contains("8.0 GiB")
                && e.ends_with("lower --input-tokens"),
            "{e}"
        );
        // Spread-out arrivals hold one prompt at a time.
        let f = memory_floor(
            &WorkloadShape::of_synthetic(
                &syn(20, 4_000_000_000, SyntheticArrival::IntervalMs(5.0)),
                64,
            ),
            &cfg(1, 1),
        );
        assert_eq!(f.prompts, 62_500_000 * 8);
        // A concurrency cap bounds the burst.
        let mut c = cfg(1, 1);
        c.load.replay_concurrency = Some(2);
        let f = memory_floor(
            &WorkloadShape::of_synthetic(
                &syn(20, 4_000_000_000, SyntheticArrival::IntervalMs(0.0)),
                64,
            ),
            &c,
        );
        assert_eq!(f.prompts, 2 * 62_500_000 * 8);
        assert_eq!(
            memory_floor(&WorkloadShape::default(), &cfg(100_000, 1)).ranks,
            100_000 * RANK_BYTES
        );
    }

    #[test]
    fn workload_shape_counts_the_first_burst() {
        let req = |input_length| RequestSpec {
            uuid: 1,
            input_length,
            output_length: 1,
            content: Content::Unique,
            session: 0,
            turn: 0,
            delay_after_previous_ms: 0.0,
            priority: 0,
            strict_priority: 0,
        };
        let sess = |i: u32, t: f64| SessionSpec {
            id: format!("s{i}"),
            first_arrival_ms: Some(t),
            first_request: i,
            num_turns: 1,
        };
        let w = Workload {
            sessions: vec![sess(0, 0.0), sess(1, 0.0), sess(2, 5.0)],
            requests: vec![req(100), req(300), req(1000)],
            trace_block_size: 16,
            ..Workload::default()
        };
        let s = WorkloadShape::of_workload(&w);
        assert_eq!(s.requests, 3);
        assert_eq!(
            s.first_burst_tokens,
            Burst {
                tokens: 400,
                count: 2
            }
        );
        assert_eq!(s.longest_prompt, 1000);
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
