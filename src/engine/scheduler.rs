//! The one engine interface the simulator talks to: a worker rank runs a vLLM or an SGLang
//! scheduler over the shared parts (KV pools, timing), aggregated or on either side of a
//! disaggregated hand-off.

use super::kv::KvEvent;
use super::sglang::SglangEngine;
use super::stall::StallCause;
use super::vllm::{AdpDemand, Engine, PassOutput, Reservation};
use crate::config::{EngineArgs, EngineType};
use crate::timing::LatencyModel;
use crate::workload::sharing::PromptBlocks;

/// One engine instance of either kind.
#[derive(Debug)]
pub enum Scheduler<M: LatencyModel> {
    Vllm(Engine<M>),
    Sglang(SglangEngine<M>),
}

impl<M: LatencyModel> Scheduler<M> {
    /// `rank_index`: the scheduler's index in its pool, which offsets the seed of its
    /// multi-token-prediction draws.
    pub fn new(args: &EngineArgs, model: M, record_kv_events: bool, rank_index: u64) -> Self {
        match args.engine_type {
            EngineType::Sglang => {
                let mut e = SglangEngine::new(args, model, record_kv_events);
                e.seed_mtp(rank_index);
                Scheduler::Sglang(e)
            }
            EngineType::Vllm | EngineType::Trtllm => {
                let mut e = Engine::new(args, model, record_kv_events);
                e.seed_mtp(rank_index);
                Scheduler::Vllm(e)
            }
        }
    }

    /// Whether the router sees this engine's KV events at pass end (SGLang) rather than at
    /// pass start (vLLM).
    pub fn events_at_pass_end(&self) -> bool {
        matches!(self, Scheduler::Sglang(_))
    }

    pub fn has_work(&self) -> bool {
        match self {
            Scheduler::Vllm(e) => e.has_work(),
            Scheduler::Sglang(e) => e.has_work(),
        }
    }

    pub fn num_waiting(&self) -> usize {
        match self {
            Scheduler::Vllm(e) => e.num_waiting(),
            Scheduler::Sglang(e) => e.num_waiting(),
        }
    }

    pub fn block_size(&self) -> u32 {
        match self {
            Scheduler::Vllm(e) => e.block_size(),
            Scheduler::Sglang(e) => e.block_size(),
        }
    }

    /// KV capacity in blocks (pages).
    pub fn capacity_blocks(&self) -> u32 {
        match self {
            Scheduler::Vllm(e) => e.pool().capacity(),
            Scheduler::Sglang(e) => e.capacity_pages(),
        }
    }

    pub fn enqueue(&mut self, req: u32, uuid: u64, input: u32, max_output: u32, shared: u32) {
        match self {
            Scheduler::Vllm(e) => e.enqueue(req, uuid, input, max_output, shared),
            Scheduler::Sglang(e) => e.enqueue(req, input, max_output),
        }
    }

    /// What the next pass would schedule, for TRT-LLM's attention-DP balancing (`None` for
    /// SGLang, which has no such setting).
    pub fn adp_demand(&self) -> Option<AdpDemand> {
        match self {
            Scheduler::Vllm(e) => Some(e.adp_demand()),
            Scheduler::Sglang(_) => None,
        }
    }

    pub fn set_adp_hold(&mut self, hold: bool) {
        if let Scheduler::Vllm(e) = self {
            e.set_adp_hold(hold);
        }
    }

    pub fn step(&mut self, prompts: &PromptBlocks, out: &mut PassOutput) -> f64 {
        match self {
            Scheduler::Vllm(e) => e.step(prompts, out),
            Scheduler::Sglang(e) => e.step(prompts, out),
        }
    }

    /// Hands every pending KV event to `f`, in order.
    #[inline]
    pub fn drain_kv_events(&mut self, mut f: impl FnMut(KvEvent)) {
        match self {
            Scheduler::Vllm(e) => {
                if e.pool().has_events() {
                    e.pool_mut().drain_events().for_each(f);
                }
            }
            Scheduler::Sglang(e) => {
                if e.has_events() {
                    for ev in e.drain_events() {
                        f(ev);
                    }
                }
            }
        }
    }

    /// Why the engine's queued work can never be scheduled, whatever happens later, when it is
    /// so: checked after a pass that changed nothing. Never `Some` for an engine that a later
    /// pass could move forward on its queued requests.
    pub fn never_schedulable(&self) -> Option<StallCause> {
        match self {
            Scheduler::Vllm(e) => e.never_schedulable(),
            Scheduler::Sglang(e) => e.never_schedulable(),
        }
    }

    /// A request this engine can never hold, if any (for the dead-end message).
    pub fn oversized(&self) -> Option<(u32, u64)> {
        match self {
            Scheduler::Vllm(_) => None,
            Scheduler::Sglang(e) => e.oversized(),
        }
    }

    pub fn plan_stride(&mut self, max: u32, durations: &mut Vec<f64>) -> Option<u32> {
        match self {
            Scheduler::Vllm(e) => e.plan_stride(max, durations),
            Scheduler::Sglang(e) => e.plan_stride(max, durations),
        }
    }

    pub fn apply_stride(&mut self, passes: u32, prompts: &PromptBlocks, out: &mut PassOutput) {
        match self {
            Scheduler::Vllm(e) => e.apply_stride(passes, prompts, out),
            Scheduler::Sglang(e) => e.apply_stride(passes, prompts, out),
        }
    }

    /// Whether a reservation attempt for `req` could succeed now (a decode worker's passes run
    /// one by one while it could).
    pub fn can_reserve(&self, req: u32, input: u32, prompts: &PromptBlocks) -> bool {
        match self {
            Scheduler::Vllm(e) => e.can_reserve(req, input, prompts.of(req)),
            Scheduler::Sglang(e) => e.would_attempt(req),
        }
    }

    pub fn reserve_prebuilt(
        &mut self,
        req: u32,
        uuid: u64,
        input: u32,
        max_output: u32,
        prompts: &PromptBlocks,
    ) -> Option<Reservation> {
        match self {
            Scheduler::Vllm(e) => e.reserve_prebuilt(req, uuid, input, max_output, prompts.of(req)),
            Scheduler::Sglang(e) => e.reserve_destination(req, input, max_output, prompts),
        }
    }

    pub fn set_pending_destinations(&mut self, pending: bool) {
        match self {
            Scheduler::Vllm(e) => e.set_pending_destinations(pending),
            Scheduler::Sglang(e) => e.set_pending_destinations(pending),
        }
    }

    pub fn activate(&mut self, seq: u32, req: u32, prompts: &PromptBlocks) {
        match self {
            Scheduler::Vllm(e) => e.activate(seq, prompts.of(req)),
            Scheduler::Sglang(e) => e.activate(seq, prompts),
        }
    }

    pub fn release_held(&mut self, req: u32, prompts: &PromptBlocks) {
        match self {
            Scheduler::Vllm(e) => e.release_held(req),
            Scheduler::Sglang(e) => e.release_held(req, prompts),
        }
    }

    /// Whether a prefill worker's passes after its prefills take no time (vLLM emits the
    /// hidden tokens of a prefill worker at once; SGLang decodes them with its decode timing).
    pub fn hidden_passes_take_no_time(&self) -> bool {
        matches!(self, Scheduler::Vllm(_))
    }

    /// Whether the engine runs DynoSim's "destination first" hand-off (SGLang: the decode
    /// worker reserves the prompt's KV before the prefill is routed) rather than "source
    /// first" (vLLM).
    pub fn destination_first(&self) -> bool {
        matches!(self, Scheduler::Sglang(_))
    }
}
