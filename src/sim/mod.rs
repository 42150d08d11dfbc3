//! The discrete-event simulation of one deployment (spec §5, §7): a pure function from (shared
//! read-only workload, configuration) to a report. No global state, no I/O; safe to call from
//! many threads at once.
//!
//! One logical clock and one event heap ordered by (time, sequence number). At each timestamp the
//! loop applies, until nothing changes: pass completions, then hand-off activations, then
//! arrivals, then starts a pass on every idle worker that has work. Passes are computed eagerly
//! when they start; their tokens and completions become visible at the pass end.

mod adp_balance;
mod collector;
mod dp_routing;
pub(crate) mod driver;
pub(crate) mod early_stop;
mod handoff;
mod setup;

use crate::config::{KvTransferTimingMode, SimConfig, Topology};
use crate::engine::scheduler::Scheduler;
use crate::engine::stall::StallCause;
use crate::engine::vllm::PassOutput;
use crate::error::SimError;
use crate::report::{Report, RequestRecord};
use crate::router::{Decision, KvRouter, RoundRobin, RouteRequest};
use crate::timing::Timing;
use crate::workload::sharing::PromptBlocks;
use crate::workload::Workload;
use collector::{Collector, RecordNaming};
use driver::Driver;
use early_stop::{StopBound, Stopped};
use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What one simulation produces.
#[derive(Debug, Clone)]
pub struct SimOutput {
    pub report: Report,
    /// Per-request records, sorted by (arrival, uuid); empty unless `cfg.record_requests`.
    pub records: Vec<RequestRecord>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Aggregated,
    Prefill,
    Decode,
}

#[derive(Debug, Clone, Copy)]
enum EventKind {
    /// End of a pass (or of a stride of passes); `gen` tells stale events of a stride that was
    /// cut short apart.
    PassEnd {
        worker: u32,
        gen: u32,
    },
    HandoffActivate {
        req: u32,
    },
    /// A prefill finished on `worker` (vLLM): its hand-off reaches the decode side after the
    /// passes that start at that instant, as in DynoSim.
    Handoff {
        req: u32,
        worker: u32,
    },
}

#[derive(Debug, Clone, Copy)]
struct Event {
    time: f64,
    seq: u64,
    kind: EventKind,
}

impl PartialEq for Event {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Event {
    // Reversed: BinaryHeap is a max-heap and we want the earliest (time, seq) on top.
    fn cmp(&self, o: &Self) -> Ordering {
        o.time.total_cmp(&self.time).then(o.seq.cmp(&self.seq))
    }
}

struct Worker {
    role: Role,
    ranks: Vec<Scheduler<Timing>>,
    outputs: Vec<PassOutput>,
    busy: bool,
    /// Its last pass changed nothing: not restarted until something is delivered to it.
    stalled: bool,
    /// Generation of the worker's pending `PassEnd`.
    gen: u32,
    /// Passes of the running stride (0 = a single pass is running) and their end times.
    stride_passes: u32,
    stride_ends: Vec<f64>,
    /// End time of its pending `PassEnd` (meaningful while `busy`).
    pass_end_at: f64,
    /// When its last timed pass ended (set once that pass's end is processed). A pass that
    /// ends at that same instant is a zero-time pass following it, which DynoSim runs as a step
    /// of its own, after the timed pass's terminals are reported and the requests they release
    /// routed: a prompt it rejects is freed on the prefill router only when its own terminal is
    /// reported (a worker that was idle rejects, and frees, before the instant's terminals).
    timed_end_at: f64,
    /// Hand-offs waiting for KV capacity on this decode worker, in arrival order.
    pending_reservations: std::collections::VecDeque<u32>,
    /// Hand-off steps that reached this worker while it was busy, applied in order when its
    /// pass ends (DynoSim defers them the same way): destination activations on a decode
    /// worker, source releases on a prefill worker.
    deferred: Vec<u32>,
    /// On a prefill worker, the requests that failed at decode while it was busy (in a pass that
    /// started at the instant their prefill ended): their failure is reported when that pass
    /// ends, so the request it releases (closed loop) arrives then.
    failed_meanwhile: Vec<u32>,
    /// TRT-LLM's attention-DP balancing over the worker's ranks (off unless configured).
    balancer: adp_balance::Balancer,
}

/// Routing state of one pool.
enum PoolRouter {
    RoundRobin(RoundRobin),
    Kv(Box<KvRouter>),
}

struct Pool {
    /// Global worker indices of this pool.
    first_worker: u32,
    num_workers: u32,
    dp: u32,
    router: PoolRouter,
    /// The workers' own DP-rank assignment (`dp_rank_routing: "engine"` with round robin).
    dp_routing: Option<dp_routing::EngineDpRouting>,
    /// Requests waiting in the router queue: (key, order, request, its overlaps with every
    /// target's cache when it was queued).
    queue: Vec<(f64, u64, u32, Box<[u32]>)>,
}

/// Disaggregated hand-off state of one request.
#[derive(Debug, Clone, Copy, Default)]
struct Handoff {
    decode_worker: u32,
    seq: u32,
    /// Destination-first hand-offs: prompt tokens missing on the decode worker (page-rounded),
    /// known at reservation, used when the transfer starts.
    missing_tokens: u32,
}

struct Sim<'w> {
    opts: SimOptions,
    /// The time of the last event within the time cap, once the run has passed it.
    capped_at: Option<f64>,
    w: &'w Workload,
    cfg: &'w SimConfig,
    workers: Vec<Worker>,
    pools: Vec<Pool>,
    heap: BinaryHeap<Event>,
    event_seq: u64,
    queue_seq: u64,
    /// Content ids of the shareable prompt blocks of every request (see `workload::sharing`).
    prompts: Cow<'w, PromptBlocks>,
    target_of: Vec<u32>,
    handoffs: Vec<Handoff>,
    transfer: Option<(f64, KvTransferTimingMode)>,
    /// SGLang's "destination first" hand-off: a request reserves decode KV on arrival and is
    /// routed to a prefill worker only once reserved (vLLM: "source first").
    destination_first: bool,
    driver: Driver,
    col: Collector,
    now: f64,
    /// DynoSim's single-worker closed loop (see `setup::stamps_arrival_at_pass_end`).
    arrival_at_pass_end: bool,
    /// DynoSim's single-worker runtime (see `setup::single_runtime`).
    single_runtime: bool,
    /// What the per-request records name (see `setup::record_naming`).
    record_naming: RecordNaming,
    /// Requests a disaggregated prefill worker rejected at this instant, or that failed at
    /// decode (a prompt no decode pool can hold), whose terminals reach the driver (closed loop:
    /// releasing the next request) only once everything else of the instant is done: zero-time
    /// passes, hand-offs and reservations, and the passes that start then. So the request
    /// released does not join a pass that starts at that instant, as in DynoSim; one released by
    /// a decode worker's completion does, as on aggregated workers. Each is reported in turn,
    /// and the request it releases is routed before the next is reported. The flag: a rejected
    /// prompt the prefill router still counts until its terminal is reported
    /// ([`Worker::timed_end_at`]).
    late_terminals: Vec<(u32, bool)>,
    /// Requests that failed at decode at this instant, whose load the decode pool's KV router
    /// drops only with their late terminals (as DynoSim frees them): the router counts their
    /// prompts when it places the instant's other requests.
    late_decode_frees: Vec<u32>,
    /// Order in which idle workers start passes at one timestamp: decode workers first, so a
    /// hand-off that reaches an idle decode worker starts its pass before prefill workers run
    /// their zero-time passes (matches the reference's per-request hand-off times).
    start_order: Vec<u32>,
    /// Bounds the run stops on once certainly missed (none: never checked).
    early: EarlyCheck,
    /// The first worker found unable to make progress: (worker, since, cause).
    stall: Option<(u32, f64, StallCause)>,
}

/// The early-stop state of a run (see [`early_stop`]): idle, and free, without bounds.
#[derive(Default)]
struct EarlyCheck {
    bounds: Vec<StopBound>,
    /// Timestamps until the next check.
    countdown: u32,
    /// Simulated time of the next check (whichever of the two comes first).
    next_at: f64,
    /// Requests that can count towards a bound (see [`early_stop`]).
    countable: Vec<bool>,
    n_max: u64,
    gaps_max: u64,
    scratch: Vec<early_stop::Progress>,
    stopped: Option<Stopped>,
}

/// Timestamps between two early-stop checks (each check reads every request once)...
const EARLY_CHECK_EVERY: u32 = 512;
/// ... or simulated milliseconds, whichever comes first (an overloaded run has few, long passes).
const EARLY_CHECK_MS: f64 = 5000.0;

/// How the simulation is carried out; results never depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimOptions {
    /// Advance runs of identical decode passes in one stride (identical results, much faster).
    /// Off = every pass one by one, the debugging reference the stride path is tested against.
    pub strides: bool,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions { strides: true }
    }
}

/// Simulates one configuration over a workload.
pub fn simulate(workload: &Workload, cfg: &SimConfig) -> Result<SimOutput, SimError> {
    simulate_with(workload, cfg, SimOptions::default())
}

/// [`simulate`] with explicit [`SimOptions`].
pub fn simulate_with(
    workload: &Workload,
    cfg: &SimConfig,
    opts: SimOptions,
) -> Result<SimOutput, SimError> {
    simulate_prepared(workload, None, cfg, opts)
}

/// [`simulate_with`] reusing the workload's [`PromptBlocks`] for the configuration's block size
/// (a sweep computes them once per workload and block size). Blocks computed for another block
/// size are not used.
pub fn simulate_prepared(
    workload: &Workload,
    prompts: Option<&PromptBlocks>,
    cfg: &SimConfig,
    opts: SimOptions,
) -> Result<SimOutput, SimError> {
    match simulate_bounded(workload, prompts, cfg, opts, &[])? {
        Ok(out) => Ok(out),
        // Nothing can stop a run without bounds.
        Err(_) => unreachable!("a simulation without bounds stopped early"),
    }
}

/// [`simulate_prepared`] that stops as soon as one of `bounds` is certainly missed (see
/// [`early_stop`]): `Ok(Err(stopped))` then, with no report. Without bounds it is
/// `simulate_prepared`.
pub fn simulate_bounded(
    workload: &Workload,
    prompts: Option<&PromptBlocks>,
    cfg: &SimConfig,
    opts: SimOptions,
    bounds: &[StopBound],
) -> Result<Result<SimOutput, Stopped>, SimError> {
    let started = std::time::Instant::now();
    let uncapped;
    let cfg = if ignores_time_cap(workload, cfg) {
        uncapped = SimConfig {
            max_sim_time_ms: None,
            ..cfg.clone()
        };
        &uncapped
    } else {
        cfg
    };
    let bs = cfg.topology.block_size().max(1);
    let prompts = match prompts {
        Some(p) if p.block_size() == bs => Cow::Borrowed(p),
        _ => Cow::Owned(PromptBlocks::new(workload, bs)),
    };
    let mut sim = Sim::new(workload, prompts, cfg, opts)?;
    sim.arm_early_stop(bounds);
    sim.run()?;
    if let Some(stopped) = sim.early.stopped.take() {
        return Ok(Err(stopped));
    }
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    Ok(Ok(sim.finish(wall_ms)))
}

/// Whether `cfg` sets a time cap that DynoSim 1.4.2 ignores for this workload: agentic traces
/// (`agentic_mooncake`, agentic `dynamo` request traces) take a replay entry point without the
/// time cap and run to completion. dynosim does the same (and says so: [`TIME_CAP_IGNORED`]).
pub fn ignores_time_cap(w: &Workload, cfg: &SimConfig) -> bool {
    cfg.max_sim_time_ms.is_some() && w.dependencies.is_agentic()
}

/// The warning for a time cap on an agentic trace.
pub const TIME_CAP_IGNORED: &str = "--max-sim-time-seconds is ignored for agentic traces \
     (agentic_mooncake, agentic dynamo request traces), as DynoSim 1.4.2 ignores it: the \
     simulation runs to completion";

/// Whether DynoSim's requests carry planned output tokens: all workloads but the simple
/// synthetic path (spec §3.1), the only one without prompt blocks.
fn plans_outputs(w: &Workload) -> bool {
    !w.block_ids.is_empty()
}

impl<'w> Sim<'w> {
    fn push_event(&mut self, time: f64, kind: EventKind) {
        self.event_seq += 1;
        self.heap.push(Event {
            time,
            seq: self.event_seq,
            kind,
        });
    }

    fn run(&mut self) -> Result<(), SimError> {
        self.driver.start(self.w, 0.0);
        let cap = self.cfg.max_sim_time_ms;
        let mut capped = false;
        loop {
            self.drop_stale_pass_ends();
            let Some(now) = self.next_time(!capped) else {
                if let Some(wi) = (0..self.workers.len()).find(|&i| {
                    self.worker_has_work(i) || !self.workers[i].pending_reservations.is_empty()
                }) {
                    if !capped {
                        return Err(self.dead_end(wi));
                    }
                } else {
                    // A recorded stall is a dead end: it never clears.
                    debug_assert!(self.stall.is_none(), "stall {:?} cleared", self.stall);
                }
                break;
            };
            if let Some(c) = cap {
                if now > c && !capped {
                    if self.single_runtime {
                        self.finish_single_at_cap(c, now);
                        break;
                    }
                    // Soft cap: running passes finish, nothing new starts.
                    capped = true;
                    self.col.stop_completions();
                    self.capped_at = Some(self.last_timestamp_within(c));
                    continue;
                }
            }
            self.now = now;
            loop {
                let mut changed = self.apply_events_through(now);
                if !capped {
                    changed |= self.take_arrivals(now);
                    for k in 0..self.start_order.len() {
                        let wi = self.start_order[k] as usize;
                        let w = &self.workers[wi];
                        if !w.busy && !w.stalled && self.worker_has_work(wi) {
                            self.start_pass(wi);
                            changed = true;
                        }
                    }
                }
                if !changed {
                    if self.late_terminals.is_empty() && self.late_decode_frees.is_empty() {
                        break;
                    }
                    // Everything else of this instant is done: the hand-offs of the prefills
                    // that finished, and the passes that start now.
                    for req in std::mem::take(&mut self.late_decode_frees) {
                        if let PoolRouter::Kv(router) = &mut self.pools[1].router {
                            router.free(req, self.prompts.of(req), now);
                        }
                    }
                    for (req, free) in std::mem::take(&mut self.late_terminals) {
                        if free {
                            self.release_request(0, req);
                            self.drain_queue(0);
                        }
                        self.driver.on_terminal(self.w, req, now);
                        if !capped {
                            self.take_arrivals(now);
                        }
                    }
                }
            }
            if !self.early.bounds.is_empty() && self.early_stop_due() {
                break;
            }
        }
        Ok(())
    }

    /// Delivers every arrival due at `now`; whether there was any.
    fn take_arrivals(&mut self, now: f64) -> bool {
        let mut any = false;
        while let Some(req) = self.driver.pop_due(now) {
            self.arrive(req);
            any = true;
        }
        any
    }

    /// The earliest pending timestamp: the next event, or the next arrival if `arrivals` and it
    /// is earlier; `None` when nothing is pending.
    fn next_time(&self, arrivals: bool) -> Option<f64> {
        let t_arr = if arrivals {
            self.driver.next_time()
        } else {
            None
        };
        let t_ev = self.heap.peek().map(|e| e.time);
        match (t_arr, t_ev) {
            (Some(a), Some(e)) => Some(a.min(e)),
            (a, e) => a.or(e),
        }
    }

    /// DynoSim's clock when its multi-worker runtime stops at the time cap `cap`: its last
    /// timestamp within the cap, the current one or a pass end inside a running stride (DynoSim
    /// steps through those passes one by one).
    fn last_timestamp_within(&self, cap: f64) -> f64 {
        self.workers
            .iter()
            .filter(|w| w.stride_passes > 0)
            .flat_map(|w| w.stride_ends[..w.stride_passes as usize].iter().copied())
            .filter(|&t| t <= cap)
            .fold(self.now, f64::max)
    }

    /// Drops the pass ends of strides cut short (their new ends are queued) from the top of the
    /// heap, so the clock never stops at one: DynoSim has no such event, and its worker-seconds
    /// run to its last real one.
    fn drop_stale_pass_ends(&mut self) {
        while let Some(ev) = self.heap.peek() {
            match ev.kind {
                EventKind::PassEnd { worker, gen } if self.workers[worker as usize].gen != gen => {
                    self.heap.pop();
                }
                _ => return,
            }
        }
    }

    /// Applies every event due at or before `now`, in order; whether there was any.
    fn apply_events_through(&mut self, now: f64) -> bool {
        let mut any = false;
        while self.heap.peek().is_some_and(|e| e.time <= now) {
            let ev = self.heap.pop().expect("peeked");
            self.apply_event(ev);
            any = true;
        }
        any
    }

    /// The time cap on DynoSim's single-worker runtime, which checks it only between its steps
    /// ("release what is due, run one pass" or "jump to the next arrival"): once the clock is
    /// past the cap at `next` (the next timestamp), the pass that started before the cap still
    /// ends in full (its completions count, and its end is the run's duration), and in open loop
    /// every arrival up to the end of that step is recorded (those after the cap stay incomplete; after an idle
    /// jump, the arrivals at the jump's time). In closed loop nothing is released after the cap.
    /// The multi-worker runtime instead stops at the first timestamp past the cap, without the
    /// completions of passes that end after it.
    fn finish_single_at_cap(&mut self, cap: f64, next: f64) {
        let open_loop = self.cfg.load.replay_concurrency.is_none();
        let last = if self.workers[0].busy {
            self.workers[0].pass_end_at
        } else {
            next
        };
        while let Some(now) = self.next_time(open_loop) {
            if now > last {
                break;
            }
            debug_assert!(now > cap);
            self.now = now;
            self.apply_events_through(now);
            if open_loop {
                while let Some(req) = self.driver.pop_due(now) {
                    self.arrive(req);
                }
            }
        }
    }

    /// Arms early stop for `bounds` (never under a time cap, where in-flight requests at the
    /// cap leave the distributions).
    fn arm_early_stop(&mut self, bounds: &[StopBound]) {
        if bounds.is_empty() || self.cfg.max_sim_time_ms.is_some() {
            return;
        }
        // A request counts unless some worker may refuse it (prompt larger than its KV pool, or
        // not shorter than max_model_len) or it asks for no output (no tokens, no latency).
        let mut limits: Vec<(u32, u64, Option<u64>)> = Vec::new();
        for w in &self.workers {
            for r in &w.ranks {
                limits.push((r.block_size().max(1), r.capacity_blocks() as u64, None));
            }
        }
        let max_len = match &self.cfg.topology {
            Topology::Aggregated { engine, .. } => engine.max_model_len,
            Topology::Disaggregated {
                prefill, decode, ..
            } => match (prefill.max_model_len, decode.max_model_len) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        };
        self.early.countable = self
            .w
            .requests
            .iter()
            .map(|r| {
                r.output_length > 0
                    && max_len.is_none_or(|m| (r.input_length as u64) < m)
                    && limits
                        .iter()
                        // TRT-LLM also refuses a request whose prompt and output cannot
                        // both fit: count only requests every engine type keeps.
                        .all(|&(bs, cap, _)| {
                            (r.input_length as u64 + r.output_length as u64).div_ceil(bs as u64)
                                < cap
                        })
            })
            .collect();
        // Warm-up requests are in no distribution.
        let warmup = self.w.warmup_sessions as usize;
        for c in self.early.countable.iter_mut().take(warmup) {
            *c = false;
        }
        self.early.n_max = (self.w.requests.len() - warmup) as u64;
        self.early.gaps_max = self.w.requests[warmup..]
            .iter()
            .map(|r| r.output_length.max(1) as u64)
            .sum();
        self.early.bounds = bounds.to_vec();
        self.early.countdown = EARLY_CHECK_EVERY;
        self.early.next_at = EARLY_CHECK_MS;
    }

    /// Counts down to the next check; at a check, whether a bound is certainly missed.
    fn early_stop_due(&mut self) -> bool {
        self.early.countdown -= 1;
        if self.early.countdown > 0 && self.now < self.early.next_at {
            return false;
        }
        self.early.countdown = EARLY_CHECK_EVERY;
        self.early.next_at = self.now + EARLY_CHECK_MS;
        // Tokens of a running stride are recorded when it ends: none of them precedes its
        // first pass end.
        let safe_now = self
            .workers
            .iter()
            .filter(|w| w.stride_passes > 0)
            .filter_map(|w| w.stride_ends.first().copied())
            .fold(self.now, f64::min);
        let mut scratch = std::mem::take(&mut self.early.scratch);
        scratch.clear();
        self.col.progress(&self.early.countable, &mut scratch);
        self.early.stopped = early_stop::first_missed(
            &self.early.bounds,
            &scratch,
            self.early.n_max,
            self.early.gaps_max,
            safe_now,
            self.now,
        );
        self.early.scratch = scratch;
        self.early.stopped.is_some()
    }

    /// After a pass of worker `wi` that changed nothing: records a stall when one of its
    /// engines can never move its queued work on (see [`Scheduler::never_schedulable`]), so
    /// that a time cap ending the run first does not hide it.
    fn check_stall(&mut self, wi: usize) {
        if let Some(cause) = self.workers[wi]
            .ranks
            .iter()
            .find_map(|e| e.never_schedulable())
        {
            self.stall = Some((wi as u32, self.now, cause));
        }
    }

    /// Requests waiting for admission when the run ends: in a router queue, parked on a worker
    /// until one of its DP ranks has room, in an engine's waiting queue, or for a decode
    /// reservation.
    fn waiting_requests(&self) -> u64 {
        let engines: usize = self
            .workers
            .iter()
            .flat_map(|w| w.ranks.iter())
            .map(|e| e.num_waiting())
            .sum();
        let reservations: usize = self
            .workers
            .iter()
            .map(|w| w.pending_reservations.len())
            .sum();
        let routers: usize = self
            .pools
            .iter()
            .map(|p| p.queue.len() + p.dp_routing.as_ref().map_or(0, |d| d.num_held()))
            .sum();
        (engines + reservations + routers) as u64
    }

    fn dead_end(&self, wi: usize) -> SimError {
        let w = &self.workers[wi];
        if let Some((req, need)) = w.ranks.iter().find_map(|e| e.oversized()) {
            let e = &w.ranks[0];
            return SimError::DeadEnd(format!(
                "simulation cannot make progress at t={:.3} ms: on worker {wi} (SGLang) request \
                 {} needs {need} tokens of KV (prompt + output) but the worker holds only {} \
                 (num_gpu_blocks × page_size); DynoSim 1.4.2 stops with a dead end or loops for \
                 ever here. Raise num_gpu_blocks, or cap the run with --max-sim-time-seconds",
                self.now,
                self.w.requests[req as usize].uuid,
                e.capacity_blocks() as u64 * e.block_size() as u64,
            ));
        }
        if w.ranks[0].events_at_pass_end() {
            let e = &w.ranks[0];
            let waiting: usize = w.ranks.iter().map(|e| e.num_waiting()).sum();
            return SimError::DeadEnd(format!(
                "simulation cannot make progress at t={:.3} ms: SGLang worker {wi} has {waiting} \
                 queued request(s) and its KV pool ({} tokens) cannot hold what the running ones \
                 need next (DynoSim 1.4.2 stops or loops for ever here); raise num_gpu_blocks, \
                 or cap the run with --max-sim-time-seconds",
                self.now,
                e.capacity_blocks() as u64 * e.block_size() as u64,
            ));
        }
        let waiting: usize = w.ranks.iter().map(|e| e.num_waiting()).sum();
        SimError::DeadEnd(format!(
            "simulation cannot make progress at t={:.3} ms: worker {wi} has {waiting} queued \
             request(s) that can never be scheduled (DynoSim stops the same way): a preempted \
             request that has grown larger than the KV pool, or a prompt larger than \
             max_num_batched_tokens with enable_chunked_prefill=false; raise num_gpu_blocks \
             or max_num_batched_tokens, or cap the run with --max-sim-time-seconds",
            self.now
        ))
    }

    /// The arrival time recorded for a request released at `now`: `now`, except in DynoSim's
    /// single-worker closed loop, which hands released requests to its busy worker only when the
    /// running pass ends and records them then. (Where the request is scheduled is the same
    /// either way: a busy worker admits nothing before its pass ends.)
    fn arrival_stamp(&self) -> f64 {
        if !self.arrival_at_pass_end {
            return self.now;
        }
        let w = &self.workers[0];
        if !w.busy {
            return self.now;
        }
        let k = w.stride_passes as usize;
        if k == 0 {
            return w.pass_end_at;
        }
        // A stride is cut at the first pass boundary at or after `now` (`interrupt_stride`).
        w.stride_ends[..k]
            .iter()
            .copied()
            .find(|&t| t >= self.now)
            .unwrap_or(w.pass_end_at)
    }

    fn worker_has_work(&self, wi: usize) -> bool {
        self.workers[wi].ranks.iter().any(|e| e.has_work())
    }

    fn pool_of_worker(&self, wi: usize) -> usize {
        match self.workers[wi].role {
            Role::Decode => 1,
            _ => 0,
        }
    }

    /// A request becomes visible: record it, route it.
    fn arrive(&mut self, req: u32) {
        // Recorded at the client's send: the request overhead counts in its latencies.
        let stamp = self.arrival_stamp() - self.driver.overhead();
        if self.arrival_at_pass_end && self.cfg.max_sim_time_ms.is_some_and(|c| stamp > c) {
            // DynoSim's single-worker closed loop would release it at the end of the running
            // pass, past the time cap, where its run stops first: never seen.
            return;
        }
        self.col.arrival(req, stamp);
        if self.destination_first {
            self.route_destination(req, None);
        } else {
            self.submit(0, req);
        }
    }

    /// Routes a request into pool `p`, or queues it in the router.
    fn submit(&mut self, p: usize, req: u32) {
        let pool = &mut self.pools[p];
        if let PoolRouter::Kv(router) = &mut pool.router {
            if router.queues() && (!pool.queue.is_empty() || router.all_busy(self.now)) {
                let r = &self.w.requests[req as usize];
                let overlaps = router.overlaps(self.prompts.of(req));
                let arrival_s = self.col.arrival_ms(req) / 1000.0;
                let key = router.queue_key(r.priority, arrival_s, r.input_length, &overlaps);
                self.queue_seq += 1;
                pool.queue.push((key, self.queue_seq, req, overlaps));
                return;
            }
        }
        self.dispatch(p, req, None);
    }

    /// Picks a target of pool `p` for a request (and starts tracking it in a KV router), with
    /// the overlaps it was queued with if it waited in the router queue.
    fn route(&mut self, p: usize, req: u32, queued: Option<&[u32]>) -> Decision {
        let r = &self.w.requests[req as usize];
        let pool = &mut self.pools[p];
        let (workers, ranks) = (pool.num_workers as usize, pool.dp as usize);
        match &mut pool.router {
            PoolRouter::RoundRobin(rr) => Decision {
                target: rr.pick(workers, ranks),
                overlap_tokens: 0,
            },
            PoolRouter::Kv(router) => {
                let route_req = RouteRequest {
                    blocks: self.prompts.of(req),
                    isl: r.input_length,
                };
                match queued {
                    Some(overlaps) => router.route_queued(req, &route_req, self.now, overlaps),
                    None => router.route(req, &route_req, self.now),
                }
            }
        }
    }

    /// Routes a request into pool `p` now (`queued`: the overlaps it waited in the router
    /// queue with).
    fn dispatch(&mut self, p: usize, req: u32, queued: Option<&[u32]>) {
        let workers = self.pools[p].num_workers;
        let decision = match self.pools[p].dp_routing.as_mut() {
            Some(d) => {
                let worker = d.next_worker(workers);
                let Some(decision) = self.engine_rank(p, worker, req) else {
                    if let Some(d) = self.pools[p].dp_routing.as_mut() {
                        d.hold(worker, req);
                    }
                    return;
                };
                decision
            }
            None => self.route(p, req, queued),
        };
        self.place(p, req, decision);
    }

    /// The target (`worker × ranks + rank`) of `worker` that its engine puts `req` on, counted
    /// there; `None` while none of its ranks has room.
    fn engine_rank(&mut self, p: usize, worker: u32, req: u32) -> Option<Decision> {
        let pool = &mut self.pools[p];
        let d = pool.dp_routing.as_mut().expect("engine DP routing");
        let ranks = &self.workers[(pool.first_worker + worker) as usize].ranks;
        let rank = d.pick(worker, |r| ranks[r as usize].num_waiting())?;
        let target = worker * pool.dp + rank;
        d.placed(target, self.w.requests[req as usize].input_length);
        Some(Decision {
            target: target as usize,
            overlap_tokens: 0,
        })
    }

    /// Places the requests parked on pool `p`'s workers, oldest first, while ranks have room.
    fn place_held(&mut self, p: usize) {
        if self.pools[p].dp_routing.is_none() {
            return;
        }
        for worker in 0..self.pools[p].num_workers {
            while let Some(req) = self.pools[p]
                .dp_routing
                .as_ref()
                .and_then(|d| d.first_held(worker))
            {
                let Some(decision) = self.engine_rank(p, worker, req) else {
                    break;
                };
                if let Some(d) = self.pools[p].dp_routing.as_mut() {
                    d.next_held(worker);
                }
                self.place(p, req, decision);
            }
        }
    }

    /// Hands `req` to the target `decision` names.
    fn place(&mut self, p: usize, req: u32, decision: Decision) {
        let r = &self.w.requests[req as usize];
        let pool = &mut self.pools[p];
        let wi = pool.first_worker + decision.target as u32 / pool.dp;
        let rank = decision.target as u32 % pool.dp;
        let worker = &mut self.workers[wi as usize];
        self.target_of[req as usize] = decision.target as u32;
        // DynoSim 1.4.2 sizes the prefill copy `min(osl, 1)`, but its engines count the
        // request's planned output tokens instead, which every workload but the simple synthetic
        // path (spec §3.1) has. So a prefill worker runs the request to its full output length
        // (hidden tokens; vLLM with zero decode time, one per pass while the worker is busy with
        // other prefills; SGLang with its decode timing) and holds the source KV until the last;
        // on the simple path it emits one token. Observed in the reference's per-request records
        // (source_held_ms) and reports.
        let output = if worker.role == Role::Prefill && !plans_outputs(self.w) {
            r.output_length.min(1)
        } else {
            r.output_length
        };
        let shared = self.prompts.of(req).len() as u32;
        worker.ranks[rank as usize].enqueue(req, r.uuid, r.input_length, output, shared);
        worker.stalled = false;
        let local = wi - pool.first_worker;
        match worker.role {
            Role::Prefill => self.col.routed_prefill(req, local, decision.overlap_tokens),
            Role::Decode => self.col.routed_decode(req, local, decision.overlap_tokens),
            Role::Aggregated => self.col.routed_aggregated(req, decision.target as u32),
        }
        self.interrupt_stride(wi as usize);
    }

    /// Routes queued requests while the pool is not all busy (spec §6.5).
    fn drain_queue(&mut self, p: usize) {
        self.place_held(p);
        self.drain_router_queue(p);
    }

    /// `req`'s prefill on pool `p` is done: its prefill load leaves the KV router. Returns
    /// whether the pool has one (whose load thereby changed).
    fn prefill_completed(&mut self, p: usize, req: u32) -> bool {
        let PoolRouter::Kv(r) = &mut self.pools[p].router else {
            return false;
        };
        r.prefill_completed(req, self.now);
        true
    }

    /// A request of pool `p` finished on its worker: recorded, freed on the router, and its
    /// closed-loop successor released.
    fn complete(&mut self, p: usize, req: u32) {
        self.col.completed(req, self.now);
        self.release_request(p, req);
        self.driver.on_terminal(self.w, req, self.now);
    }

    /// The router-queue half of [`Sim::drain_queue`] (nothing to do unless the router queues).
    fn drain_router_queue(&mut self, p: usize) {
        loop {
            let pool = &self.pools[p];
            if pool.queue.is_empty() {
                return;
            }
            if let PoolRouter::Kv(router) = &pool.router {
                if router.all_busy(self.now) {
                    return;
                }
            }
            let best = pool
                .queue
                .iter()
                .enumerate()
                .max_by(|a, b| a.1 .0.total_cmp(&b.1 .0).then(b.1 .1.cmp(&a.1 .1)))
                .map(|(i, _)| i)
                .expect("non-empty");
            let (_, _, req, overlaps) = self.pools[p].queue.swap_remove(best);
            self.dispatch(p, req, Some(&overlaps));
        }
    }

    /// Starts a pass on an idle worker. Passes that take no time (a prefill worker emitting the
    /// hidden tokens of requests it has finished prefilling) are applied at once and repeated
    /// until the worker runs out of work or a pass takes time.
    fn start_pass(&mut self, wi: usize) {
        loop {
            if self.opts.strides
                && self.workers[wi].role == Role::Prefill
                && self.workers[wi].ranks[0].hidden_passes_take_no_time()
            {
                if self.hidden_stride(wi) {
                    if self.workers[wi].stalled || !self.worker_has_work(wi) {
                        return;
                    }
                    continue;
                }
            } else if self.opts.strides && self.start_stride(wi) {
                return;
            }
            if let Some(end) = self.run_pass(wi) {
                self.push_pass_end(wi, end);
                return;
            }
            if self.workers[wi].stalled {
                // A zero-time pass that changed nothing does not complete in DynoSim 1.4.2 (its
                // offline engine component schedules a completion only for a pass that made
                // progress): nothing happens at its end, in particular no reservation attempt.
                self.workers[wi].busy = false;
                return;
            }
            self.pass_end(wi);
            if self.workers[wi].stalled || !self.worker_has_work(wi) {
                return;
            }
        }
    }

    fn push_pass_end(&mut self, wi: usize, end: f64) {
        self.workers[wi].gen = self.workers[wi].gen.wrapping_add(1);
        self.workers[wi].pass_end_at = end;
        let gen = self.workers[wi].gen;
        self.push_event(
            end,
            EventKind::PassEnd {
                worker: wi as u32,
                gen,
            },
        );
    }

    /// Starts a stride of pure-decode passes on a single-rank worker when its engine plans one
    /// ([`Engine::plan_stride`]: passes that differ only in duration, as blocks are taken on the
    /// way). The stride's passes end at the same times the step-by-step passes would (each end is
    /// the previous end plus that pass's duration), and any work delivered to the worker cuts it
    /// at the next pass boundary, so results are identical to running them one by one.
    fn start_stride(&mut self, wi: usize) -> bool {
        let worker = &mut self.workers[wi];
        if worker.ranks.len() != 1 {
            return false;
        }
        // Each pass end makes one reservation attempt for a waiting hand-off: passes run one by
        // one while the oldest could be reserved. (One that does not fit now cannot fit before
        // the stride ends: its passes complete nothing and only take blocks.)
        if let Some(&req) = worker.pending_reservations.front() {
            let input = self.w.requests[req as usize].input_length;
            if worker.ranks[0].can_reserve(req, input, &self.prompts) {
                return false;
            }
        }
        let mut ends = std::mem::take(&mut worker.stride_ends);
        let Some(_) = worker.ranks[0].plan_stride(u32::MAX, &mut ends) else {
            worker.stride_ends = ends;
            return false;
        };
        // `ends` holds the pass durations: turn them into end times, the way the step loop adds
        // them.
        let cap = self.cfg.max_sim_time_ms;
        let mut t = self.now;
        let mut k = ends.len();
        for (i, end) in ends.iter_mut().enumerate() {
            // Like the step loop: no pass starts once the clock is past the time cap.
            if i > 0 && cap.is_some_and(|c| t > c) {
                k = i;
                break;
            }
            t += *end;
            *end = t;
        }
        ends.truncate(k);
        worker.stride_ends = ends;
        if worker.stride_ends.len() < 2 {
            return false;
        }
        worker.stride_passes = worker.stride_ends.len() as u32;
        worker.busy = true;
        worker.stalled = false;
        self.push_pass_end(wi, t);
        true
    }

    /// On a prefill worker whose sequences only emit hidden tokens (nothing to prefill), the
    /// next passes take no time: applies as many as the engine plans at once, at `now`, then
    /// ends them like one pass (the step loop would have run them one after the other before
    /// anything else happens at this instant). Returns false when the next pass differs.
    fn hidden_stride(&mut self, wi: usize) -> bool {
        let worker = &mut self.workers[wi];
        if worker.ranks.len() != 1 {
            return false;
        }
        let mut durations = std::mem::take(&mut worker.stride_ends);
        let planned = worker.ranks[0].plan_stride(u32::MAX, &mut durations);
        durations.clear();
        worker.stride_ends = durations;
        let Some(k) = planned else {
            return false;
        };
        let mut out = std::mem::take(&mut worker.outputs[0]);
        worker.ranks[0].apply_stride(k, &self.prompts, &mut out);
        worker.outputs[0] = out;
        worker.stalled = false;
        self.deliver_kv_events(wi);
        // Like a zero-time pass: its end is handled at once.
        self.pass_end(wi);
        true
    }

    /// Work was delivered to worker `wi` at `now`: a running stride stops at the first pass
    /// boundary at or after `now`, where the step-by-step passes would have admitted it.
    fn interrupt_stride(&mut self, wi: usize) {
        self.interrupt_stride_at(wi, false);
    }

    /// [`Sim::interrupt_stride`]; `restarted`: the delivery comes after the passes that start
    /// now (a hand-off of this instant), so a pass of the stride that ends now has ended and
    /// the next one has started: the stride stops at the end of that next one.
    fn interrupt_stride_at(&mut self, wi: usize, restarted: bool) {
        let now = self.now;
        let worker = &mut self.workers[wi];
        let k = worker.stride_passes as usize;
        if k == 0 || !worker.busy {
            return;
        }
        let Some(j) = worker.stride_ends[..k]
            .iter()
            .position(|&t| t > now || (t == now && !restarted))
        else {
            return;
        };
        if j + 1 == k {
            return; // ends at its planned end anyway
        }
        worker.stride_passes = (j + 1) as u32;
        let end = worker.stride_ends[j];
        if end == now {
            // That pass ends right now: its PassEnd would come before this delivery.
            worker.gen = worker.gen.wrapping_add(1);
            // Only tokens are applied (no completion happens inside a stride).
            self.pass_end(wi);
        } else {
            self.push_pass_end(wi, end);
        }
    }

    /// Computes one pass of every rank of a worker at `now`; returns its end, or `None` for a
    /// pass that takes no time. A rank's pass ends at `(now + prefill) + decode`, added in
    /// DynoSim's order (its tokens are stamped at the decode start plus the decode time), so
    /// that times agree to the last bit.
    fn run_pass(&mut self, wi: usize) -> Option<f64> {
        let now = self.now;
        let worker = &mut self.workers[wi];
        let mut end: Option<f64> = None;
        let mut progressed = false;
        if worker.role == Role::Decode {
            let pending = !worker.pending_reservations.is_empty();
            worker.ranks[0].set_pending_destinations(pending);
        }
        if worker.balancer.is_on() {
            let demands = worker.ranks.iter().filter_map(|e| e.adp_demand());
            let hold = worker.balancer.holds(demands);
            for engine in worker.ranks.iter_mut() {
                engine.set_adp_hold(hold);
            }
        }
        for (rank, engine) in worker.ranks.iter_mut().enumerate() {
            let out = &mut worker.outputs[rank];
            if engine.has_work() {
                let d = engine.step(&self.prompts, out);
                if d > 0.0 {
                    let rank_end = (now + out.prefill_ms) + out.decode_ms;
                    end = Some(end.map_or(rank_end, |e: f64| e.max(rank_end)));
                }
                progressed |= out.progressed;
            } else {
                out.clear();
            }
        }
        worker.stalled = !progressed;
        worker.busy = true;
        if !progressed && self.stall.is_none() {
            self.check_stall(wi);
        }
        // Admissions are visible now; KV stores reach the router at pass start (vLLM) or at
        // pass end (SGLang).
        let role = self.workers[wi].role;
        for rank in 0..self.workers[wi].ranks.len() {
            for &(req, reused) in &self.workers[wi].outputs[rank].admitted {
                self.col.admit(req, now, reused, role == Role::Decode);
            }
        }
        if !self.workers[wi].ranks[0].events_at_pass_end() {
            self.deliver_kv_events(wi);
        }
        end
    }

    /// Hands the KV events of a worker's engines to its pool's KV router.
    fn deliver_kv_events(&mut self, wi: usize) {
        let p = self.pool_of_worker(wi);
        let pool = &mut self.pools[p];
        let PoolRouter::Kv(router) = &mut pool.router else {
            return;
        };
        let local = wi as u32 - pool.first_worker;
        for (rank, engine) in self.workers[wi].ranks.iter_mut().enumerate() {
            let target = (local * pool.dp) as usize + rank;
            engine.drain_kv_events(|ev| router.apply_event(target, ev));
        }
    }

    fn apply_event(&mut self, ev: Event) {
        match ev.kind {
            EventKind::PassEnd { worker, gen } => {
                // A stale end belongs to a stride that was cut short; its new end is queued.
                if self.workers[worker as usize].gen == gen {
                    self.pass_end(worker as usize);
                    self.workers[worker as usize].timed_end_at = self.now;
                }
            }
            EventKind::HandoffActivate { req } => self.activate_handoff(req),
            EventKind::Handoff { req, worker } => self.handoff(req, worker as usize),
        }
    }

    fn pass_end(&mut self, wi: usize) {
        let now = self.now;
        self.workers[wi].busy = false;
        if self.workers[wi].ranks[0].events_at_pass_end() {
            self.deliver_kv_events(wi);
        }
        if self.workers[wi].stride_passes > 0 {
            let k = self.workers[wi].stride_passes;
            self.workers[wi].stride_passes = 0;
            let mut out = std::mem::take(&mut self.workers[wi].outputs[0]);
            self.workers[wi].ranks[0].apply_stride(k, &self.prompts, &mut out);
            if self.workers[wi].role != Role::Prefill {
                self.col
                    .stride_tokens(&out.emitted, &self.workers[wi].stride_ends[..k as usize]);
            }
            out.emitted.clear();
            self.workers[wi].outputs[0] = out;
        }
        let role = self.workers[wi].role;
        let p = self.pool_of_worker(wi);
        let mut load_changed = false;
        if role == Role::Prefill {
            let failed = std::mem::take(&mut self.workers[wi].failed_meanwhile);
            self.late_terminals
                .extend(failed.into_iter().map(|req| (req, false)));
        }
        if role == Role::Prefill && !self.workers[wi].deferred.is_empty() {
            // Source releases that waited for this pass to end (before its own hand-offs).
            let deferred = std::mem::take(&mut self.workers[wi].deferred);
            for req in deferred {
                self.release_source(req, wi);
            }
        }
        // DynoSim hands a pass's output signals to the router one at a time (each request's
        // first token or its completion, in the batch's order, then the pass's rejections; on a
        // prefill worker each finished prefill) and releases the router's queue after each: a
        // queued request is routed with the loads of that moment, not with those of the whole
        // pass.
        for rank in 0..self.workers[wi].ranks.len() {
            let out = std::mem::take(&mut self.workers[wi].outputs[rank]);
            if role == Role::Prefill {
                for &req in &out.finished {
                    // Its prefill load is gone; the request itself stays on the prefill
                    // router until its source KV is released ([`Sim::free_source`]).
                    if self.prefill_completed(p, req) {
                        load_changed = true;
                        self.drain_router_queue(p);
                    }
                    self.col.source_held(req, now);
                    if self.destination_first {
                        self.start_transfer(req);
                    } else {
                        // Delivered after the passes that start now: a decode worker whose
                        // pass ends at this instant has started its next one by then.
                        self.push_event(
                            now,
                            EventKind::Handoff {
                                req,
                                worker: wi as u32,
                            },
                        );
                    }
                }
            } else {
                // `finished` follows the batch order of `emitted`; a request that finished
                // without a token here (after a stride) is taken after them.
                let mut next_finished = 0;
                for &(req, n) in &out.emitted {
                    self.col.token(req, now, n);
                    let changed = if out.finished.get(next_finished) == Some(&req) {
                        next_finished += 1;
                        self.complete(p, req);
                        true
                    } else {
                        n == 1 && self.prefill_completed(p, req)
                    };
                    if changed {
                        load_changed = true;
                        self.drain_router_queue(p);
                    }
                }
                for &req in &out.finished[next_finished..] {
                    self.complete(p, req);
                    load_changed = true;
                    self.drain_router_queue(p);
                }
            }
            for &req in &out.rejected {
                self.col.rejected(req, now);
                let free_when_reported =
                    role == Role::Prefill && self.workers[wi].timed_end_at == now;
                if !free_when_reported {
                    self.release_request(p, req);
                    load_changed = true;
                    self.drain_router_queue(p);
                }
                if role == Role::Prefill {
                    self.late_terminals.push((req, free_when_reported));
                } else {
                    self.driver.on_terminal(self.w, req, now);
                }
            }
            self.workers[wi].outputs[rank] = out;
            if load_changed
                && role == Role::Aggregated
                && rank + 1 < self.workers[wi].ranks.len()
                && matches!(self.pools[p].router, PoolRouter::Kv(_))
            {
                // DynoSim hands a worker's DP ranks' outputs to the router one rank at a time
                // and releases its queue after each: a request queued there sees rank 0's
                // completions before rank 1's.
                self.drain_queue(p);
                load_changed = false;
            }
        }
        if role == Role::Decode {
            // DynoSim's order at a pass end: one reservation attempt, then the activations that
            // waited for the pass (each of which retries a reservation).
            self.retry_reservations(wi);
            if !self.workers[wi].deferred.is_empty() {
                let deferred = std::mem::take(&mut self.workers[wi].deferred);
                for req in deferred {
                    self.activate_now(req);
                }
            }
        }
        if load_changed {
            self.drain_queue(p);
        }
    }

    /// Prefill worker `pw` no longer holds `req`'s source KV (released after its transfer, or
    /// dropped when the request failed at decode): its blocks are freed, the worker may admit
    /// again, and the prefill router stops counting the request. As in DynoSim, a finished
    /// prefill stays among its worker's active requests (the `decode_active_request_weight`
    /// term) while its source is held, though its prefill load is gone at the prefill's end
    /// (and the prefill router tracks no blocks).
    fn free_source(&mut self, req: u32, pw: usize) {
        self.workers[pw].ranks[0].release_held(req, &self.prompts);
        self.workers[pw].stalled = false;
        self.release_request(0, req);
    }

    fn release_request(&mut self, p: usize, req: u32) {
        if let PoolRouter::Kv(r) = &mut self.pools[p].router {
            r.free(req, self.prompts.of(req), self.now);
        }
        if let Some(d) = self.pools[p].dp_routing.as_mut() {
            let target = self.target_of[req as usize];
            d.released(target, self.w.requests[req as usize].input_length);
        }
    }

    fn finish(self, wall_ms: f64) -> SimOutput {
        let (np, nd, pg, dg) = match &self.cfg.topology {
            Topology::Aggregated {
                num_workers,
                engine,
            } => (0, *num_workers, 0, engine.gpus_per_worker()),
            Topology::Disaggregated {
                num_prefill_workers,
                prefill,
                num_decode_workers,
                decode,
            } => (
                *num_prefill_workers,
                *num_decode_workers,
                prefill.gpus_per_worker(),
                decode.gpus_per_worker(),
            ),
        };
        // Warm-up requests are left out; the measured phase's times count from its start (a
        // warm-up that never ended leaves nothing measured: its times count from the end).
        let measured_from = self.driver.measured_from().unwrap_or(self.now);
        let totals = crate::report::RunTotals {
            num_requests: 0,
            wall_time_ms: wall_ms,
            num_prefill_workers: np,
            num_decode_workers: nd,
            prefill_gpus_per_worker: pg,
            decode_gpus_per_worker: dg,
            sla: self.cfg.sla,
            // The multi-worker runtime integrates worker-seconds over its clock, which ends at
            // its last event (a rejected arrival may come after the last completion; a run
            // that completes nothing ends at its last arrival, or at 0); the single-worker
            // runtime counts the duration.
            worker_span_ms: if self.single_runtime {
                None
            } else {
                Some(self.capped_at.unwrap_or(self.now) - measured_from)
            },
            unfinished_waiting_requests: self.waiting_requests(),
            ..Default::default()
        };
        let stall = self
            .stall
            .map(|(wi, since_ms, cause)| crate::report::Stall {
                worker: wi,
                role: match self.workers[wi as usize].role {
                    Role::Aggregated => "aggregated",
                    Role::Prefill => "prefill",
                    Role::Decode => "decode",
                },
                since_ms,
                queued_requests: self.workers[wi as usize]
                    .ranks
                    .iter()
                    .map(|e| e.num_waiting() as u64)
                    .sum(),
                cause,
            });
        let mut out = self
            .col
            .finish(self.w, totals, measured_from, self.record_naming);
        out.report.stall = stall;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{EngineArgs, LoadSpec, RouterConfig, RouterMode, Sla, WorkerType};

    #[test]
    fn prompt_larger_than_the_decode_pool_fails_not_stuck() {
        let text = "{\"timestamp\": 0, \"input_length\": 201, \"output_length\": 1, \
                    \"hash_ids\": [0,1,2,3,4,5,6,7,8,9,10,11,12]}\n";
        let w = crate::workload::formats::mooncake::parse_trace(text, "t.jsonl", 16).unwrap();
        let engine = |worker_type, blocks| EngineArgs {
            worker_type,
            num_gpu_blocks: blocks,
            block_size: 16,
            ..EngineArgs::default()
        };
        let cfg = SimConfig {
            topology: Topology::Disaggregated {
                num_prefill_workers: 1,
                prefill: engine(WorkerType::Prefill, 13),
                num_decode_workers: 1,
                decode: engine(WorkerType::Decode, 6),
            },
            router_mode: RouterMode::RoundRobin,
            router: RouterConfig::default(),
            load: LoadSpec::default(),
            max_sim_time_ms: None,
            sla: Sla::default(),
            seed: 42,
            record_requests: true,
        };
        let out = simulate(&w, &cfg).unwrap();
        assert_eq!(out.report.get("num_requests"), Some(1.0));
        assert_eq!(out.report.get("completed_requests"), Some(0.0));
        assert_eq!(out.report.get("rejected_requests"), Some(1.0));
        assert_eq!(out.records.len(), 1);
        // DynoSim's status for a request routed to a decode worker that can never hold it.
        assert_eq!(out.records[0].terminal_status, "failed");
        assert_eq!(out.records[0].decode_route_overlap_tokens, Some(0));
        assert_eq!(out.records[0].decode_worker_idx, None);
    }
}
