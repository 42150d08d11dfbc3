//! Building a [`Sim`] from a configuration: checks the engines, creates the workers (one
//! scheduler per DP rank) and the pools with their routers, the disaggregated hand-off state and
//! the load driver, and decides which of DynoSim's two runtimes the run reproduces. Nothing here
//! advances the clock: the event loop and its steps live in the parent module.

use super::collector::{Collector, RecordNaming};
use super::driver::{self, Driver};
use super::{EarlyCheck, Handoff, Pool, PoolRouter, Role, Sim, SimOptions, Worker};
use crate::config::{
    DpRankRouting, EngineArgs, KvTransferTimingMode, RouterConfig, RouterMode, SimConfig, Topology,
};
use crate::engine::scheduler::Scheduler;
use crate::engine::vllm::PassOutput;
use crate::error::SimError;
use crate::router::{KvRouter, RoundRobin};
use crate::workload::sharing::PromptBlocks;
use crate::workload::Workload;
use std::borrow::Cow;
use std::collections::BinaryHeap;

impl<'w> Sim<'w> {
    pub(super) fn new(
        w: &'w Workload,
        prompts: Cow<'w, PromptBlocks>,
        cfg: &'w SimConfig,
        opts: SimOptions,
    ) -> Result<Self, SimError> {
        if let Some(why) = driver::unsupported_release(w, cfg) {
            return Err(SimError::BadConfig(why.into()));
        }
        let kv = cfg.router_mode == RouterMode::KvRouter;
        let mut workers = Vec::new();
        let mut pools = Vec::new();
        let transfer = add_pools(cfg, kv, &mut workers, &mut pools)?;
        let destination_first = cfg.topology_is_disaggregated()
            && workers
                .first()
                .is_some_and(|w| w.ranks[0].destination_first());
        let n = w.requests.len();
        let mut start_order: Vec<u32> = (0..workers.len() as u32)
            .filter(|&i| workers[i as usize].role == Role::Decode)
            .collect();
        start_order.extend(
            (0..workers.len() as u32).filter(|&i| workers[i as usize].role != Role::Decode),
        );
        Ok(Sim {
            opts,
            start_order,
            w,
            cfg,
            workers,
            pools,
            heap: BinaryHeap::new(),
            event_seq: 0,
            capped_at: None,
            queue_seq: 0,
            prompts,
            target_of: vec![u32::MAX; n],
            handoffs: vec![
                Handoff::default();
                if cfg.topology_is_disaggregated() {
                    n
                } else {
                    0
                }
            ],
            transfer,
            destination_first,
            late_terminals: Vec::new(),
            late_decode_frees: Vec::new(),
            driver: Driver::new(&cfg.load, cfg.topology.entry_pool().request_overhead_ms),
            arrival_at_pass_end: stamps_arrival_at_pass_end(cfg),
            single_runtime: single_runtime(cfg),
            record_naming: record_naming(cfg, w),
            col: Collector::new(n, cfg.record_requests, cfg.max_sim_time_ms.is_some())
                .with_warmup(w.warmup_sessions),
            now: 0.0,
            early: EarlyCheck::default(),
            stall: None,
        })
    }
}

/// Adds the worker pools of the topology (aggregated: one; disaggregated: prefill, then decode)
/// and returns the KV transfer of a disaggregated one (ms per token, timing mode), if modelled.
fn add_pools(
    cfg: &SimConfig,
    kv: bool,
    workers: &mut Vec<Worker>,
    pools: &mut Vec<Pool>,
) -> Result<Option<(f64, KvTransferTimingMode)>, SimError> {
    let mut router_cfg = cfg.router.clone();
    let transfer;
    match &cfg.topology {
        Topology::Aggregated {
            num_workers,
            engine,
        } => {
            if let Some(p) = engine.router_queue_policy {
                router_cfg.router_queue_policy = p;
            }
            let rc = kv.then_some(router_cfg);
            pools.push(add_pool(
                kv,
                workers,
                *num_workers,
                engine,
                Role::Aggregated,
                rc,
                cfg.seed,
            )?);
            transfer = None;
        }
        Topology::Disaggregated {
            num_prefill_workers,
            prefill,
            num_decode_workers,
            decode,
        } => {
            if let Some(p) = prefill.router_queue_policy {
                router_cfg.router_queue_policy = p;
            }
            let mut prefill_rc = router_cfg.clone();
            prefill_rc.router_track_active_blocks = false;
            let mut decode_rc = router_cfg;
            decode_rc.overlap_score_credit = 0.0;
            decode_rc.router_assume_kv_reuse = false;
            decode_rc.router_track_prefill_tokens = false;
            decode_rc.router_queue_threshold = None;
            // DynoSim gives only the prefill pool's router the AIC load model.
            decode_rc.prefill_load_estimator = None;
            pools.push(add_pool(
                kv,
                workers,
                *num_prefill_workers,
                prefill,
                Role::Prefill,
                kv.then_some(prefill_rc),
                cfg.seed,
            )?);
            pools.push(add_pool(
                kv,
                workers,
                *num_decode_workers,
                decode,
                Role::Decode,
                kv.then_some(decode_rc),
                cfg.seed ^ 0xDEC0_DE00_0000_0001,
            )?);
            transfer = match (prefill.kv_bytes_per_token, prefill.kv_transfer_bandwidth) {
                (Some(bytes), Some(bw)) if bw > 0.0 => Some((
                    bytes as f64 / (bw * 1e9) * 1000.0,
                    prefill.kv_transfer_timing_mode,
                )),
                _ => None,
            };
        }
    }
    Ok(transfer)
}

/// Adds one pool of `n` workers of `args` (with a KV router of `router_cfg`, else round robin).
/// `kv`: the deployment routes by KV overlap, so the pool's schedulers record KV events.
fn add_pool(
    kv: bool,
    workers: &mut Vec<Worker>,
    n: u32,
    args: &EngineArgs,
    role: Role,
    router_cfg: Option<RouterConfig>,
    seed: u64,
) -> Result<Pool, SimError> {
    if n == 0 {
        return Err(SimError::BadConfig(
            "every worker pool needs at least one worker".into(),
        ));
    }
    check_engine(args, "engine args")?;
    let first = workers.len() as u32;
    let record = kv && role != Role::Decode;
    for _ in 0..n {
        // Multi-token prediction offsets each scheduler's seed by its rank's index in the pool
        // (worker index × DP ranks + rank), as DynoSim does.
        let first_rank = u64::from(workers.len() as u32 - first) * u64::from(args.dp_size);
        let ranks: Vec<_> = (0..args.dp_size)
            .map(|r| {
                let index = first_rank + u64::from(r);
                Scheduler::new(args, args.timing.clone(), record, index)
            })
            .collect();
        let outputs = (0..args.dp_size).map(|_| PassOutput::default()).collect();
        workers.push(Worker {
            role,
            ranks,
            outputs,
            busy: false,
            stalled: false,
            gen: 0,
            stride_passes: 0,
            stride_ends: Vec::new(),
            pass_end_at: 0.0,
            timed_end_at: f64::NEG_INFINITY,
            pending_reservations: Default::default(),
            deferred: Vec::new(),
            failed_meanwhile: Vec::new(),
            balancer: super::adp_balance::Balancer::new(args.adp_balance, args.dp_size),
        });
    }
    let dp_routing =
        (router_cfg.is_none() && args.dp_size > 1 && args.dp_rank_routing == DpRankRouting::Engine)
            .then(|| {
                super::dp_routing::EngineDpRouting::new(
                    args.engine_type,
                    n,
                    args.dp_size,
                    args.max_num_seqs,
                )
            });
    let router = match router_cfg {
        Some(rc) => PoolRouter::Kv(Box::new(KvRouter::new(
            &rc,
            (n * args.dp_size) as usize,
            args.block_size,
            args.max_num_batched_tokens,
            seed,
        ))),
        None => PoolRouter::RoundRobin(RoundRobin::default()),
    };
    Ok(Pool {
        first_worker: first,
        num_workers: n,
        dp: args.dp_size,
        router,
        dp_routing,
        queue: Vec::new(),
    })
}

fn check_engine(args: &EngineArgs, what: &str) -> Result<(), SimError> {
    if args.num_gpu_blocks == 0 || args.num_gpu_blocks > u32::MAX as u64 / 2 {
        return Err(SimError::BadConfig(format!(
            "{what}: num_gpu_blocks must be between 1 and {}",
            u32::MAX / 2
        )));
    }
    if args.kv_pool_blocks() > u32::MAX as u64 / 2 {
        return Err(SimError::BadConfig(format!(
            "{what}: num_gpu_blocks × kv_pool_scale ({} blocks) must be at most {}",
            args.kv_pool_blocks(),
            u32::MAX / 2
        )));
    }
    if args.block_size == 0 || args.dp_size == 0 {
        return Err(SimError::BadConfig(format!(
            "{what}: block_size and dp_size must be ≥ 1"
        )));
    }
    Ok(())
}

/// Whether DynoSim 1.4.2 runs this configuration on its single-worker runtime in closed loop
/// (one aggregated worker, one DP rank, no KV router, `--replay-concurrency`). That runtime
/// alternates "release what is due, run one pass": a request released while a pass runs (a
/// follow-up turn whose think time ended, a session started when a slot freed) is injected, and
/// its arrival recorded, at that pass's end, so its TTFT does not include the wait. (Its open-loop
/// mode records the scheduled time instead, and so does the multi-worker runtime in both modes.)
fn stamps_arrival_at_pass_end(cfg: &SimConfig) -> bool {
    cfg.load.replay_concurrency.is_some() && single_runtime(cfg)
}

/// What DynoSim 1.4.2's per-request records name. Its single-worker runtime names no session,
/// turn or decode worker. Its multi-worker runtime names them all, except in open loop when
/// every session has one turn and none waits for another (a flat trace): it then replays plain
/// requests, which have a worker but no session or turn. (Agentic traces, whose requests wait for
/// others, keep their names here; DynoSim 1.4.2 writes no records for them at all.)
fn record_naming(cfg: &SimConfig, w: &Workload) -> RecordNaming {
    let single = single_runtime(cfg);
    let open_loop_flat =
        cfg.load.replay_concurrency.is_none() && w.flat && w.dependencies.is_empty();
    RecordNaming {
        sessions: !single && !open_loop_flat,
        decode_worker: !single,
    }
}

/// Whether DynoSim 1.4.2 runs this configuration on its single-worker runtime (one aggregated
/// worker, one DP rank, no KV router) rather than its event-driven multi-worker runtime. Where
/// the two differ in what they report: the closed-loop arrival stamp
/// ([`stamps_arrival_at_pass_end`]) and the time cap ([`Sim::finish_single_at_cap`]).
fn single_runtime(cfg: &SimConfig) -> bool {
    cfg.router_mode != RouterMode::KvRouter
        && matches!(
            &cfg.topology,
            Topology::Aggregated { num_workers: 1, engine } if engine.dp_size <= 1
        )
}
