//! One vLLM engine (one DP rank of a worker): waiting and running queues, the KV pool, and the
//! forward pass of spec §4.4 with preemption (§4.5). A pass is computed eagerly when it starts;
//! the caller applies its visible effects (tokens, completions) at the pass end.
//!
//! TRT-LLM (`engine_type` trtllm) runs this same scheduler under another [`Admission`] policy,
//! GUARANTEED_NO_EVICT (spec §4.6, breadth §2): a request is admitted only when the blocks it
//! needs to run to completion fit next to the completion reservations of the running ones, so
//! it never preempts; a prompt that fills the whole pool is rejected, and the output of the
//! others is clamped to what the pool can hold.

use super::kv::{KvPool, PrefixMatch};
use super::mtp::BurstSampler;
use super::stall::StallCause;
use super::{decode_pass_ms, prefill_pass_ms};
use crate::config::{EngineArgs, EngineType, MixedPass, PreemptionMode, WorkerType};
use crate::timing::LatencyModel;
use crate::workload::sharing::PromptBlocks;
use std::collections::VecDeque;

/// A sequence resident on this engine.
#[derive(Debug, Clone)]
struct Seq {
    req: u32,
    uuid: u64,
    input: u32,
    max_output: u32,
    generated: u32,
    num_computed: u32,
    /// Slots of its leading cached blocks with shareable content (at most `shared`).
    slots: Vec<u32>,
    /// Cached full blocks past those (content unique to the request): only counted.
    anon: u32,
    /// Private (partial, not yet full) blocks held.
    tail: u32,
    /// Leading blocks that are cached (registered or acquired as hits): `slots + anon`.
    registered: u32,
    /// Leading full blocks whose content another request may share (they have content ids).
    shared: u32,
    /// Its blocks past the shareable prefix are findable (it was preempted and may re-hit them).
    exposed: bool,
    /// Prompt already computed elsewhere (disaggregated decode).
    prebuilt: bool,
    /// Work scheduled in the current pass, to undo on preemption.
    sched_take: u32,
    sched_prompt_isl: u64,
    sched_prompt_prefix: u64,
    sched_pass: u64,
}

/// What one pass did, for the caller to apply at `end`.
#[derive(Debug, Default)]
pub struct PassOutput {
    /// (request, reused prompt tokens) admitted in this pass, in order.
    pub admitted: Vec<(u32, u32)>,
    /// Requests refused for good (prompt larger than the pool or `max_model_len`).
    pub rejected: Vec<u32>,
    /// (request, tokens generated so far including this one) that emitted a token at `end`.
    pub emitted: Vec<(u32, u32)>,
    /// Requests that reached completion in this pass.
    pub finished: Vec<u32>,
    pub prefill_ms: f64,
    pub decode_ms: f64,
    /// Requests preempted in this pass.
    pub preempted: u32,
    /// Whether the pass changed anything (used by the dead-end guard).
    pub progressed: bool,
}

impl PassOutput {
    pub fn clear(&mut self) {
        self.admitted.clear();
        self.rejected.clear();
        self.emitted.clear();
        self.finished.clear();
        self.prefill_ms = 0.0;
        self.decode_ms = 0.0;
        self.preempted = 0;
        self.progressed = false;
    }
}

/// A reservation of a prompt's KV on a decode engine (disaggregated hand-off).
#[derive(Debug, Clone, Copy)]
pub struct Reservation {
    pub seq: u32,
    /// Prompt tokens to transfer in `destination_missing` timing: the blocks not present on
    /// this engine, counted whole (a partial last block as `block_size` tokens), as DynoSim's
    /// `transferable_prompt_tokens` does.
    pub missing_tokens: u32,
}

/// How waiting sequences are admitted (the one place vLLM and TRT-LLM differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Admission {
    /// vLLM: reserve the known sequence; preempt running sequences when the pool runs out.
    Vllm,
    /// TRT-LLM GUARANTEED_NO_EVICT: reserve every sequence to completion; never preempt.
    GuaranteedNoEvict,
}

#[derive(Debug)]
enum Sched {
    Scheduled,
    /// Nothing to compute (e.g. a prebuilt prompt waiting to sample).
    Idle,
    Blocked,
    /// The sequence was itself chosen as the preemption victim (it left the running queue).
    CurrentPreempted,
}

/// One engine instance.
#[derive(Debug)]
pub struct Engine<M: LatencyModel> {
    args: EngineArgs,
    admission: Admission,
    block_size: u32,
    model: M,
    pool: KvPool,
    seqs: Vec<Seq>,
    free_seqs: Vec<u32>,
    waiting: VecDeque<u32>,
    running: Vec<u32>,
    pass_no: u64,
    /// Finished prefill-only sequences whose KV is held until handed over: (request, seq).
    held: Vec<(u32, u32)>,
    /// Blocks allocated per pass of a stride being planned.
    scratch_allocs: Vec<u32>,
    /// Hand-offs are waiting for KV capacity on this (decode) engine: admission then takes
    /// only prebuilt sequences, wherever they are in the waiting queue.
    pending_destinations: bool,
    /// Bumped whenever capacity may have come free (a sequence finished, was preempted or was
    /// refused holding blocks, a held source was released): DynoSim 1.4.2 attempts the head
    /// hand-off's reservation again only once this moved since its last attempt.
    capacity_generation: u64,
    /// The head hand-off's last reservation attempt: (request, generation).
    last_attempt: Option<(u32, u64)>,
    /// TRT-LLM's batch waiting: consecutive passes that have held the waiting prompts back.
    batch_wait_passes: u32,
    /// TRT-LLM's attention-DP balancing held the waiting prompts back for the next pass (set by
    /// the worker, which decides over all its ranks).
    adp_hold: bool,
    /// Multi-token prediction's burst draws (`EngineArgs::mtp`), set by [`Engine::seed_mtp`].
    mtp: Option<BurstSampler>,
}

/// What one DP rank would schedule in its next pass, as TRT-LLM's attention-DP balancing counts
/// it across ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdpDemand {
    /// Some prompt would be scheduled: one is being computed, or one waits and a slot is free.
    pub context: bool,
    /// Sequences that would decode.
    pub decoding: u32,
    /// Fewer sequences decode than `max_num_seqs` (TRT-LLM's `max_batch_size`).
    pub free_slot: bool,
}

impl<M: LatencyModel> Engine<M> {
    pub fn new(args: &EngineArgs, model: M, record_kv_events: bool) -> Self {
        let cap = u32::try_from(args.kv_pool_blocks()).unwrap_or(u32::MAX);
        Engine {
            block_size: args.block_size.max(1),
            admission: match args.engine_type {
                EngineType::Trtllm => Admission::GuaranteedNoEvict,
                _ => Admission::Vllm,
            },
            args: args.clone(),
            model,
            // Without prefix caching DynoSim's engine publishes no KV events (its blocks carry
            // random hashes): the KV router never sees an overlap.
            pool: KvPool::new(cap, record_kv_events && args.enable_prefix_caching),
            seqs: Vec::new(),
            free_seqs: Vec::new(),
            waiting: VecDeque::new(),
            running: Vec::new(),
            pass_no: 0,
            held: Vec::new(),
            scratch_allocs: Vec::new(),
            pending_destinations: false,
            capacity_generation: 0,
            last_attempt: None,
            batch_wait_passes: 0,
            adp_hold: false,
            mtp: None,
        }
    }

    /// Turns multi-token prediction on (when the args set it), drawing bursts from the stream
    /// of the pool's scheduler number `rank_index`.
    pub fn seed_mtp(&mut self, rank_index: u64) {
        self.mtp = BurstSampler::of(&self.args, rank_index);
    }

    /// What the next pass would schedule, for TRT-LLM's attention-DP balancing.
    pub fn adp_demand(&self) -> AdpDemand {
        let max_seqs = self.args.max_num_seqs.unwrap_or(u64::MAX);
        let mut decoding = 0u32;
        let mut prefilling = false;
        for &s in &self.running {
            let seq = &self.seqs[s as usize];
            if seq.num_computed >= seq.input {
                decoding += 1;
            } else {
                prefilling = true;
            }
        }
        let joins = !self.waiting.is_empty() && (self.running.len() as u64) < max_seqs;
        AdpDemand {
            context: prefilling || joins,
            decoding,
            free_slot: u64::from(decoding) < max_seqs,
        }
    }

    /// Whether the next pass holds the waiting prompts back (TRT-LLM's attention-DP balancing,
    /// decided by the worker over all its ranks).
    pub fn set_adp_hold(&mut self, hold: bool) {
        self.adp_hold = hold;
    }

    pub fn pool(&self) -> &KvPool {
        &self.pool
    }

    pub fn pool_mut(&mut self) -> &mut KvPool {
        &mut self.pool
    }

    pub fn block_size(&self) -> u32 {
        self.block_size
    }

    /// Whether a pass started now would have anything to do.
    pub fn has_work(&self) -> bool {
        !self.waiting.is_empty() || !self.running.is_empty()
    }

    pub fn num_waiting(&self) -> usize {
        self.waiting.len()
    }

    fn new_seq(&mut self, req: u32, uuid: u64, input: u32, max_output: u32) -> u32 {
        let seq = Seq {
            req,
            uuid,
            input,
            max_output,
            generated: 0,
            num_computed: 0,
            slots: Vec::new(),
            anon: 0,
            tail: 0,
            registered: 0,
            shared: 0,
            exposed: false,
            prebuilt: false,
            sched_take: 0,
            sched_prompt_isl: 0,
            sched_prompt_prefix: 0,
            sched_pass: u64::MAX,
        };
        match self.free_seqs.pop() {
            Some(id) => {
                let old_slots = std::mem::take(&mut self.seqs[id as usize].slots);
                self.seqs[id as usize] = Seq {
                    slots: reuse(old_slots),
                    ..seq
                };
                id
            }
            None => {
                self.seqs.push(seq);
                (self.seqs.len() - 1) as u32
            }
        }
    }

    /// Queues a new request whose first `shared` full prompt blocks may be shared (their
    /// content ids are `prompts.of(req)`).
    pub fn enqueue(&mut self, req: u32, uuid: u64, input: u32, max_output: u32, shared: u32) {
        let mut max_output = max_output;
        if self.admission == Admission::GuaranteedNoEvict {
            // Prompt plus output can reserve at most the whole pool (a prompt that fills it is
            // rejected at admission).
            let capacity = u64::from(self.pool.capacity()) * u64::from(self.block_size);
            if u64::from(input) < capacity {
                max_output = max_output.min((capacity - u64::from(input)) as u32);
            }
        }
        let s = self.new_seq(req, uuid, input, max_output);
        self.seqs[s as usize].shared = shared;
        self.waiting.push_back(s);
    }

    /// Reserves the full prompt of a request handed over from a prefill engine: prompt blocks
    /// present here are taken as hits, capacity for the rest is set aside (private blocks until
    /// [`Engine::activate`] fills them). Returns `None` when the pool cannot hold it now.
    pub fn reserve_prebuilt(
        &mut self,
        req: u32,
        uuid: u64,
        input: u32,
        max_output: u32,
        prompt: &[u32],
    ) -> Option<Reservation> {
        let bs = self.block_size;
        if !self.would_attempt(req) {
            return None;
        }
        // An attempt made while the running batch is full counts as one (DynoSim marks the head
        // attempted without trying).
        self.last_attempt = Some((req, self.capacity_generation));
        if self.running_full() {
            return None;
        }
        let (hits, fresh) = self.reservation_fit(input, prompt)?;
        let s = self.new_seq(req, uuid, input, max_output);
        let mut slots = std::mem::take(&mut self.seqs[s as usize].slots);
        for h in &prompt[..hits as usize] {
            if let Some(slot) = self.pool.acquire(*h) {
                slots.push(slot);
            }
        }
        let ok = self.pool.allocate(fresh);
        debug_assert!(ok);
        let seq = &mut self.seqs[s as usize];
        seq.slots = slots;
        seq.registered = hits;
        seq.tail = fresh;
        seq.shared = prompt.len() as u32;
        // The transferred blocks are not registered yet: like DynoSim 1.4.2 (its vLLM backend's
        // `reserve_destination_at` pins the resident prefix and reserves fresh capacity only;
        // `activate_destination` caches the blocks), another reservation made before this one
        // is activated cannot hit them and gets its own copies.
        seq.num_computed = input;
        seq.prebuilt = true;
        Some(Reservation {
            seq: s,
            missing_tokens: fresh * bs,
        })
    }

    /// (prefix hits, fresh blocks) of a reservation of a prompt of `input` tokens with content
    /// ids `prompt`, or `None` when the pool cannot hold it now.
    fn reservation_fit(&self, input: u32, prompt: &[u32]) -> Option<(u32, u32)> {
        let total_blocks = input.div_ceil(self.block_size);
        let m = if self.args.enable_prefix_caching {
            self.pool.match_prefix(prompt)
        } else {
            PrefixMatch::default()
        };
        let hits = m.blocks;
        let inactive_hits = hits - m.active_blocks;
        let fresh = total_blocks - hits;
        (fresh + inactive_hits <= self.pool.available()).then_some((hits, fresh))
    }

    /// Whether [`Engine::reserve_prebuilt`] would succeed now (an attempt is due, the running
    /// batch is not full and the pool has room).
    pub fn can_reserve(&self, req: u32, input: u32, prompt: &[u32]) -> bool {
        self.would_attempt(req)
            && !self.running_full()
            && self.reservation_fit(input, prompt).is_some()
    }

    /// Whether [`Engine::reserve_prebuilt`] would try `req` now: DynoSim 1.4.2 retries the head
    /// hand-off only once capacity may have come free since its last attempt (a prefix cached
    /// meanwhile, e.g. by another hand-off's activation, does not count).
    fn would_attempt(&self, req: u32) -> bool {
        self.last_attempt != Some((req, self.capacity_generation))
    }

    /// Whether the running batch is full (`max_num_seqs`): DynoSim then makes no destination
    /// reservation on this engine.
    fn running_full(&self) -> bool {
        self.running.len() as u64 >= self.args.max_num_seqs.unwrap_or(u64::MAX)
    }

    /// Whether hand-offs are waiting for KV capacity on this engine (see `pending_destinations`).
    pub fn set_pending_destinations(&mut self, pending: bool) {
        self.pending_destinations = pending;
    }

    /// Makes a reserved hand-off schedulable (queued for admission): its transferred full
    /// blocks become cached (duplicate copies where another sequence registered the same
    /// content meanwhile), as DynoSim's `activate_destination` commits them.
    pub fn activate(&mut self, seq: u32, prompt: &[u32]) {
        let full = self.seqs[seq as usize].input / self.block_size;
        self.register_full_blocks(seq, full, prompt);
        self.waiting.push_back(seq);
    }

    /// Releases the KV a finished prefill-only request held for its hand-off.
    pub fn release_held(&mut self, req: u32) {
        if let Some(i) = self.held.iter().position(|&(r, _)| r == req) {
            let (_, s) = self.held.swap_remove(i);
            self.free_seq(s);
            self.capacity_generation += 1;
        }
    }

    /// Releases the blocks of a sequence, suffix first: private tail, anonymous blocks (as
    /// one extent, findable by the sequence itself when `owned`), then the shareable prefix.
    fn release_blocks(&mut self, s: u32, owned: bool) {
        let seq = &mut self.seqs[s as usize];
        let (tail, anon, uuid) = (seq.tail, seq.anon, seq.uuid);
        seq.tail = 0;
        seq.anon = 0;
        seq.registered = 0;
        let slots = std::mem::take(&mut seq.slots);
        self.pool.free_private(tail);
        self.pool.release_anonymous(anon, owned.then_some(uuid));
        for &b in slots.iter().rev() {
            self.pool.release(b);
        }
        self.seqs[s as usize].slots = reuse(slots);
    }

    /// Blocks a sequence holds.
    fn held_blocks(&self, s: u32) -> u32 {
        let seq = &self.seqs[s as usize];
        seq.registered + seq.tail
    }

    /// Releases the blocks of a finished sequence and recycles it.
    fn free_seq(&mut self, s: u32) {
        self.release_blocks(s, false);
        self.free_seqs.push(s);
    }

    /// Takes the `n` leading cached blocks found by [`Engine::prefill_hits`]: the shareable
    /// prefix by content id, then (a preempted sequence) its own released blocks.
    fn acquire_hits(&mut self, s: u32, n: u32, prompt: &[u32]) {
        let by_id = n.min(prompt.len() as u32);
        for &h in &prompt[..by_id as usize] {
            if let Some(slot) = self.pool.acquire(h) {
                self.seqs[s as usize].slots.push(slot);
            }
        }
        let own = if n > by_id {
            self.pool.take_owned(self.seqs[s as usize].uuid, n - by_id)
        } else {
            0
        };
        let seq = &mut self.seqs[s as usize];
        seq.anon = own;
        seq.registered = seq.slots.len() as u32 + own;
    }

    fn seq_len(&self, s: u32) -> u32 {
        let seq = &self.seqs[s as usize];
        seq.input + seq.generated
    }

    /// Output tokens the sequence may still generate (`max_model_len` included).
    fn remaining_output(&self, s: u32) -> u32 {
        let seq = &self.seqs[s as usize];
        let mut rem = seq.max_output - seq.generated;
        if let Some(limit) = self.args.max_model_len {
            let len = (seq.input + seq.generated) as u64;
            rem = rem.min(limit.saturating_sub(len) as u32);
        }
        rem
    }

    /// Blocks a sequence occupies once complete: `ceil((input + max_output) / block_size)`.
    fn completion_blocks(&self, s: u32) -> u32 {
        let seq = &self.seqs[s as usize];
        ((u64::from(seq.input) + u64::from(seq.max_output)).div_ceil(u64::from(self.block_size)))
            .min(u64::from(u32::MAX)) as u32
    }

    /// Free blocks left once every running sequence has the blocks it still needs to complete
    /// set aside (GUARANTEED_NO_EVICT admission).
    fn unreserved_blocks(&self) -> u32 {
        let reserved: u64 = self
            .running
            .iter()
            .map(|&r| {
                u64::from(
                    self.completion_blocks(r)
                        .saturating_sub(self.held_blocks(r)),
                )
            })
            .sum();
        let free = self.pool.capacity() - self.pool.num_active();
        u64::from(free).saturating_sub(reserved) as u32
    }

    /// Whether the sequence's next pass needs logits: it has a token to generate (one with
    /// output length 0 does not).
    fn needs_logits(&self, s: u32) -> bool {
        self.remaining_output(s) > 0
    }

    /// The most blocks of its sequence a fresh (re-)admission may take from the cache, with
    /// prefix caching on. vLLM recomputes the last token for its logits: at most
    /// floor((len-1)/bs) blocks. TRT-LLM reuses every full cached block, and so does DynoSim's
    /// vLLM for a sequence that needs no logits.
    fn reusable_blocks_cap(&self, s: u32) -> u32 {
        let len = self.seq_len(s);
        match self.admission {
            Admission::Vllm if self.needs_logits(s) => len.saturating_sub(1) / self.block_size,
            Admission::Vllm | Admission::GuaranteedNoEvict => len / self.block_size,
        }
    }

    /// Prefix hits of a fresh (re-)admission: (cached blocks to acquire, active among them).
    fn prefill_hits(&self, s: u32, prompt: &[u32]) -> PrefixMatch {
        if !self.args.enable_prefix_caching {
            return PrefixMatch::default();
        }
        let cap = self.reusable_blocks_cap(s);
        let shared = (prompt.len() as u32).min(cap);
        let mut m = self.pool.match_prefix(&prompt[..shared as usize]);
        let mut own = 0;
        if m.blocks == prompt.len() as u32 && cap > m.blocks && self.seqs[s as usize].exposed {
            // Its own blocks past the shareable prefix, released when it was preempted.
            own = self
                .pool
                .owned_blocks(self.seqs[s as usize].uuid)
                .min(cap - m.blocks);
            m.blocks += own;
        }
        // With multi-token prediction DynoSim's vLLM reuses one matched block less (not for a
        // sequence that needs no logits).
        if self.mtp.is_some()
            && self.admission == Admission::Vllm
            && self.needs_logits(s)
            && m.blocks > 0
        {
            if own > 0 {
                m.blocks -= 1;
            } else {
                m = self.pool.match_prefix(&prompt[..m.blocks as usize - 1]);
            }
        }
        m
    }

    /// Schedules work of one sequence within `budget` (spec §4.4 step 2).
    #[allow(clippy::too_many_arguments)]
    fn schedule(
        &mut self,
        s: u32,
        cached_tokens: u32,
        budget: &mut u64,
        acc: &mut (u64, u64, u64),
        prompt: &[u32],
        preempted: &mut u32,
    ) -> Sched {
        let bs = self.block_size;
        let len = self.seq_len(s);
        let seq = &self.seqs[s as usize];
        let eff_before = seq.num_computed + cached_tokens;
        let input = seq.input;
        let prompt_before = eff_before.min(input);
        let remaining_known = len.saturating_sub(eff_before);
        let prompt_remaining = input - prompt_before;
        if remaining_known == 0 {
            if cached_tokens > 0 {
                // A fully cached prompt (TRT-LLM reuses its last block): nothing to compute.
                self.seqs[s as usize].num_computed = eff_before;
            }
            return Sched::Idle;
        }
        if !self.args.enable_chunked_prefill && prompt_remaining as u64 > *budget {
            return Sched::Blocked;
        }
        let take = (remaining_known as u64).min(*budget) as u32;
        if take == 0 {
            return Sched::Blocked;
        }
        let target_blocks = (eff_before + take).div_ceil(bs);
        loop {
            let need = target_blocks.saturating_sub(self.held_blocks(s));
            if self.pool.allocate(need) {
                self.seqs[s as usize].tail += need;
                break;
            }
            // Preempt a victim (spec §4.5) and retry. TRT-LLM never preempts: its reservations
            // leave room for every admitted sequence.
            if self.running.is_empty() || self.admission == Admission::GuaranteedNoEvict {
                return Sched::Blocked;
            }
            let vi = match self.args.preemption_mode {
                PreemptionMode::Lifo => self.running.len() - 1,
                PreemptionMode::Fifo => 0,
            };
            let victim = self.running.remove(vi);
            self.preempt(victim, budget, acc);
            *preempted += 1;
            if victim == s {
                return Sched::CurrentPreempted;
            }
        }
        let new_computed = eff_before + take;
        self.register_full_blocks(s, new_computed / bs, prompt);
        let pass = self.pass_no;
        let decode_worker = self.args.worker_type == WorkerType::Decode;
        let seq = &mut self.seqs[s as usize];
        seq.num_computed = new_computed;
        let prompt_now = take.min(prompt_remaining);
        let (isl, prefix) = if prompt_now > 0 && !decode_worker {
            acc.0 += 1;
            acc.1 += (prompt_before + prompt_now) as u64;
            acc.2 += prompt_before as u64;
            ((prompt_before + prompt_now) as u64, prompt_before as u64)
        } else {
            (0, 0)
        };
        seq.sched_take = take;
        seq.sched_prompt_isl = isl;
        seq.sched_prompt_prefix = prefix;
        seq.sched_pass = pass;
        *budget -= take as u64;
        Sched::Scheduled
    }

    /// Registers the sequence's blocks that are full once `full` blocks are computed: shareable
    /// prefix blocks under their content id (visible to the router), the rest sealed, or under
    /// a key unique to the request once it has been preempted.
    fn register_full_blocks(&mut self, s: u32, full: u32, prompt: &[u32]) {
        let mut j = self.seqs[s as usize].registered;
        if j >= full {
            return;
        }
        // Shareable prefix blocks become findable one by one...
        while j < full && (j as usize) < prompt.len() {
            let slot = self.pool.register_private(prompt[j as usize], true);
            let seq = &mut self.seqs[s as usize];
            seq.slots.push(slot);
            seq.tail -= 1;
            j += 1;
        }
        // ...the rest are only counted.
        let seq = &mut self.seqs[s as usize];
        let n = full - j;
        seq.anon += n;
        seq.tail -= n;
        seq.registered = full;
    }

    /// Prefill time of `prompts` prompts of mean span `isl` with `prefix` of it computed, with
    /// the speed-up and the prefill pass overhead.
    fn prefill_time(&self, prompts: u64, isl: u64, prefix: u64) -> f64 {
        prefill_pass_ms(&self.args, self.model.prefill_ms(prompts, isl, prefix))
    }

    /// Decode step time of `ready` sequences with mean context `context`, speed-ups applied.
    fn decode_time(&self, ready: u64, context: u64) -> f64 {
        self.decode_time_at(ready, context, self.pool.num_active())
    }

    /// [`Engine::decode_time`] with `active_blocks` blocks in use.
    fn decode_time_at(&self, ready: u64, context: u64, active_blocks: u32) -> f64 {
        let bs = self.block_size as u64;
        let active_kv = active_blocks as u64 * bs;
        let total_kv = self.pool.capacity() as u64 * bs;
        // (A zero `speedup_ratio` also turns off `decode_speedup_ratio`.)
        decode_pass_ms(
            &self.args,
            self.model.decode_ms(ready, active_kv, context, total_kv),
        )
    }

    /// If the next passes would all be pure-decode passes (nothing waiting, every running
    /// sequence decoding one token, budget for all), plans a stride of them: up to the pass in
    /// which a sequence completes (included), and only as far as the blocks sequences allocate
    /// on the way can be had without preempting anyone and, when the pool reports KV events,
    /// without evicting a block the router knows of. Such passes differ only in their duration
    /// (the blocks in use grow as sequences cross block boundaries, the mean context by one token
    /// per pass), which `durations` receives, one per pass. Returns the number of passes (at least 2), or `None` when the next pass
    /// differs. On a prefill worker the passes take no time (their tokens are hidden) and are
    /// applied at once by the caller, so blocks the router knows of may be evicted on the way.
    pub fn plan_stride(&mut self, max_passes: u32, durations: &mut Vec<f64>) -> Option<u32> {
        durations.clear();
        let prefill = self.args.worker_type == WorkerType::Prefill;
        // Bursts of multi-token prediction are drawn pass by pass.
        if !self.waiting.is_empty() || self.running.is_empty() || self.mtp.is_some() {
            return None;
        }
        // Whether each pass's duration must be evaluated (the context grows every pass), or
        // only when the blocks in use change.
        let per_pass = !prefill && self.model.decode_depends_on_context();
        let n = self.running.len() as u64;
        if self.args.max_num_batched_tokens.unwrap_or(u64::MAX) < n {
            return None;
        }
        let bs = self.block_size;
        let mut k = max_passes;
        let mut ctx_sum = 0u64;
        for &s in &self.running {
            let seq = &self.seqs[s as usize];
            let len = seq.input + seq.generated;
            // One token to compute, past the prompt (the last prompt token is a prefill).
            if seq.num_computed + 1 != len || seq.num_computed < seq.input {
                return None;
            }
            let rem = self.remaining_output(s);
            if rem == 0 {
                return None;
            }
            k = k.min(rem);
            ctx_sum += len as u64;
        }
        if k < 2 {
            return None;
        }
        // allocs[i]: blocks allocated in pass i + 1. Pass i (1-based) computes position
        // num_computed + i − 1 and needs ceil((num_computed + i) / bs) blocks.
        let allocs = &mut self.scratch_allocs;
        allocs.clear();
        allocs.resize(k as usize, 0);
        let mut total = 0u32;
        for &s in &self.running {
            let seq = &self.seqs[s as usize];
            let held_tokens = (seq.registered + seq.tail) as u64 * bs as u64;
            let c0 = seq.num_computed as u64;
            // First pass that needs one more block: num_computed + i > held_tokens.
            let mut i = (held_tokens + 1).saturating_sub(c0).max(1);
            while i <= k as u64 {
                allocs[i as usize - 1] += 1;
                total += 1;
                i += bs as u64;
            }
        }
        let quiet = self.pool.quiet_allocations(total, !prefill);
        let mut active = self.pool.num_active();
        let mut used = 0u32;
        let mut d = f64::NAN;
        for i in 0..k as usize {
            let a = self.scratch_allocs[i];
            if a > 0 || i == 0 || per_pass {
                used += a;
                if used > quiet {
                    break;
                }
                active += a;
                // Pass i sees every sequence i tokens longer: the mean as a pass computes it.
                let ctx = (ctx_sum + i as u64 * n) / n;
                d = if prefill {
                    0.0
                } else {
                    self.decode_time_at(n, ctx, active)
                };
            }
            durations.push(d);
        }
        let k = durations.len() as u32;
        if k < 2 {
            durations.clear();
            return None;
        }
        Some(k)
    }

    /// Applies `passes` pure-decode passes planned by [`Engine::plan_stride`]: every running
    /// sequence takes the blocks it crosses into, computes and emits `passes` tokens; those that
    /// complete in the last pass finish. `out.emitted` gets each sequence's generated count after
    /// the stride.
    pub fn apply_stride(&mut self, passes: u32, prompts: &PromptBlocks, out: &mut PassOutput) {
        out.clear();
        self.pass_no += passes as u64;
        let bs = self.block_size;
        for k in 0..self.running.len() {
            let s = self.running[k];
            let seq = &self.seqs[s as usize];
            let need = (seq.num_computed + passes)
                .div_ceil(bs)
                .saturating_sub(seq.registered + seq.tail);
            if need > 0 {
                // Planned within the pool's quiet allocations: cannot fail.
                let ok = self.pool.allocate(need);
                debug_assert!(ok, "stride allocation failed");
            }
            let seq = &mut self.seqs[s as usize];
            seq.tail += need;
            seq.num_computed += passes;
            seq.generated += passes;
            let (req, generated, full) = (seq.req, seq.generated, seq.num_computed / bs);
            self.register_full_blocks(s, full, prompts.sequence_of(req));
            out.emitted.push((req, generated));
        }
        let prefill = self.args.worker_type == WorkerType::Prefill;
        let mut k = 0usize;
        while k < self.running.len() {
            let s = self.running[k];
            if self.remaining_output(s) == 0 {
                self.retire(k, out, prefill);
            } else {
                k += 1;
            }
        }
        out.progressed = true;
    }

    /// TRT-LLM's batch waiting (`EngineArgs::batch_wait`), checked after the running sequences
    /// are scheduled: whether this pass holds the waiting prompts back. As TRT-LLM, only while
    /// the pass decodes some sequence and some prompt could join (within the token budget and
    /// `max_num_seqs`, the pool not consulted); the tokens counted are the full prompts of those
    /// and of the running sequences computing prompt tokens in this pass, plus one per decoding
    /// sequence. A prompt already chunked in is not held back (TRT-LLM, without chunking, has
    /// none).
    fn holds_prompts(&mut self, budget: u64, max_seqs: u64) -> bool {
        let wait = self.args.batch_wait;
        if wait.is_off() || self.args.engine_type != EngineType::Trtllm {
            return false;
        }
        let pass = self.pass_no;
        let (mut decoding, mut tokens) = (0u64, 0u64);
        for &s in &self.running {
            let seq = &self.seqs[s as usize];
            if seq.sched_pass != pass {
                continue;
            }
            if seq.sched_prompt_isl > 0 {
                tokens += u64::from(seq.input);
            } else {
                decoding += 1;
            }
        }
        let mut joining = 0u64;
        let mut left = budget;
        let mut slots = max_seqs.saturating_sub(self.running.len() as u64);
        for &s in &self.waiting {
            if left == 0 || slots == 0 {
                break;
            }
            let seq = &self.seqs[s as usize];
            let need = u64::from(self.seq_len(s).saturating_sub(seq.num_computed));
            if !self.args.enable_chunked_prefill && need > left {
                break;
            }
            left -= need.min(left);
            slots -= 1;
            joining += 1;
            tokens += u64::from(seq.input);
        }
        if decoding == 0 || joining == 0 {
            return false;
        }
        let threshold =
            wait.max_tokens_ratio * self.args.max_num_batched_tokens.unwrap_or(u64::MAX) as f64;
        let stop =
            self.batch_wait_passes >= wait.timeout_iters || (tokens + decoding) as f64 >= threshold;
        if stop {
            self.batch_wait_passes = 0;
        } else {
            self.batch_wait_passes += 1;
        }
        !stop
    }

    /// Takes the finished sequence at `running[k]` out of the batch. On a prefill worker its
    /// source KV stays until the decode side has it (spec §7.2); elsewhere it is freed.
    fn retire(&mut self, k: usize, out: &mut PassOutput, prefill: bool) {
        let s = self.running.remove(k);
        let req = self.seqs[s as usize].req;
        out.finished.push(req);
        if prefill {
            self.held.push((req, s));
        } else {
            self.free_seq(s);
        }
        // A completion frees a running slot even when its KV stays held.
        self.capacity_generation += 1;
    }

    fn preempt(&mut self, victim: u32, budget: &mut u64, acc: &mut (u64, u64, u64)) {
        let pass = self.pass_no;
        let seq = &mut self.seqs[victim as usize];
        if seq.sched_pass == pass {
            *budget += seq.sched_take as u64;
            if seq.sched_prompt_isl > 0 {
                acc.0 -= 1;
                acc.1 -= seq.sched_prompt_isl;
                acc.2 -= seq.sched_prompt_prefix;
            }
            seq.sched_pass = u64::MAX;
        }
        seq.num_computed = 0;
        seq.registered = 0;
        seq.prebuilt = false;
        // Its re-admission may hit its own blocks: its anonymous ones stay findable by it.
        seq.exposed = true;
        self.release_blocks(victim, true);
        self.waiting.push_front(victim);
        self.capacity_generation += 1;
    }

    /// Why the sequence at the head of the waiting queue can never be admitted, when nothing
    /// runs: whatever the future holds (every other block freed, every cache hit it could get),
    /// admission would stop at it again, so the request never completes and, the queue being
    /// served in order, nothing behind it is admitted either (unless it is a hand-off, which a
    /// decode worker admits past it). `None` whenever a later pass could admit it, reject it, or
    /// has running work to do.
    pub fn never_schedulable(&self) -> Option<StallCause> {
        if !self.running.is_empty() {
            return None;
        }
        let &s = self.waiting.front()?;
        let seq = &self.seqs[s as usize];
        if seq.prebuilt {
            return None;
        }
        let bs = self.block_size;
        let len = self.seq_len(s);
        let fresh = !seq.exposed;
        let too_long = self
            .args
            .max_model_len
            .is_some_and(|m| seq.input as u64 >= m);
        match self.admission {
            Admission::Vllm => {
                if too_long || (fresh && len.div_ceil(bs) > self.pool.capacity()) {
                    return None; // rejected at its admission
                }
                if len.div_ceil(bs) > self.pool.capacity() {
                    return Some(StallCause::PreemptedOutgrewPool);
                }
            }
            Admission::GuaranteedNoEvict => {
                if fresh && self.completion_blocks(s) > self.pool.capacity() {
                    return None; // rejected at its admission
                }
            }
        }
        if !self.args.enable_chunked_prefill {
            // The most prompt any later admission could find cached (see `prefill_hits`).
            let cacheable_blocks = if self.args.enable_prefix_caching {
                self.reusable_blocks_cap(s)
            } else {
                0
            };
            let cached = (cacheable_blocks * bs).min(len);
            let prompt_remaining = seq.input - (seq.num_computed + cached).min(seq.input);
            let budget = self.args.max_num_batched_tokens.unwrap_or(u64::MAX);
            if prompt_remaining as u64 > budget {
                return Some(StallCause::PromptOverBatchBudget);
            }
        }
        None
    }

    /// Runs one forward pass starting at `now`; returns its duration in ms. `prompts.of(req)`
    /// holds the content ids of the shareable prompt blocks of every request resident here.
    pub fn step(&mut self, prompts: &PromptBlocks, out: &mut PassOutput) -> f64 {
        out.clear();
        self.pass_no += 1;
        let bs = self.block_size;
        let mut budget = self.args.max_num_batched_tokens.unwrap_or(u64::MAX);
        let mut acc = (0u64, 0u64, 0u64);
        let mut preempted = 0u32;

        // 1. Running sequences first, by index as DynoSim 1.4.2 walks them: a victim leaves the
        // running queue where it stands and the index is not adjusted, so after a `fifo` victim
        // ahead of the current sequence the next one in line waits for the next pass, and after
        // the current sequence itself is the victim its successor is scheduled next.
        let mut i = 0usize;
        while i < self.running.len() && budget > 0 {
            let s = self.running[i];
            let req = self.seqs[s as usize].req;
            match self.schedule(
                s,
                0,
                &mut budget,
                &mut acc,
                prompts.sequence_of(req),
                &mut preempted,
            ) {
                Sched::Scheduled => {
                    // Computed tokens are progress even when the pass takes no time (a decode
                    // worker recomputing a preempted prompt, chunk by chunk).
                    out.progressed = true;
                    i += 1;
                }
                Sched::Idle => i += 1,
                Sched::CurrentPreempted => {}
                Sched::Blocked => break,
            }
        }

        // 2. Admit waiting sequences, head of line, unless this pass preempted. As in DynoSim
        // 1.4.2 (`execute_pass_internal`), an exhausted token budget does not end admission by
        // itself: a prebuilt sequence (nothing to compute) is still admitted, then admission
        // stops; a sequence with work to compute is blocked by it.
        let max_seqs = self.args.max_num_seqs.unwrap_or(u64::MAX);
        if preempted == 0 && !self.adp_hold && !self.holds_prompts(budget, max_seqs) {
            while (self.running.len() as u64) < max_seqs {
                // While hand-offs wait for capacity here, only prebuilt sequences (their KV
                // already reserved) are admitted, in queue order; a sequence needing fresh KV
                // (e.g. a preempted one at the head) does not hold them back.
                let pos = if self.pending_destinations {
                    self.waiting
                        .iter()
                        .position(|&s| self.seqs[s as usize].prebuilt)
                } else if self.waiting.is_empty() {
                    None
                } else {
                    Some(0)
                };
                let Some(pos) = pos else {
                    break;
                };
                let s = self.waiting[pos];
                let req = self.seqs[s as usize].req;
                let len = self.seq_len(s);
                let known_blocks = len.div_ceil(bs);
                let prebuilt = self.seqs[s as usize].prebuilt;
                let too_long = self
                    .args
                    .max_model_len
                    .is_some_and(|m| self.seqs[s as usize].input as u64 >= m);
                // Only a fresh request is refused for a pool it cannot fit (the reference's
                // `is_fresh` test); a preempted one (`exposed`) that has outgrown the pool waits
                // at the head for good, as in the reference.
                let fresh = !self.seqs[s as usize].exposed;
                let oversized = match self.admission {
                    Admission::Vllm => (fresh && known_blocks > self.pool.capacity()) || too_long,
                    Admission::GuaranteedNoEvict => {
                        fresh && self.completion_blocks(s) > self.pool.capacity()
                    }
                };
                // A prompt transferred from a prefill worker is refused only for its length
                // (`max_model_len`; its blocks are already reserved here).
                if oversized && (!prebuilt || too_long) {
                    self.waiting.remove(pos);
                    out.rejected.push(req);
                    out.progressed = true;
                    // Refusing a sequence that held blocks (a transferred prompt) frees them.
                    if self.held_blocks(s) > 0 {
                        self.capacity_generation += 1;
                    }
                    self.free_seq(s);
                    continue;
                }
                // Output blocks too: a preempted sequence re-hits its own computed output.
                let prompt = prompts.sequence_of(req);
                let (m, held) = if prebuilt {
                    (PrefixMatch::default(), self.held_blocks(s))
                } else if budget == 0 && self.admission == Admission::Vllm {
                    break;
                } else {
                    (self.prefill_hits(s, prompt), 0)
                };
                // With the budget spent, only a sequence with nothing to compute is admitted: a
                // TRT-LLM prompt cached in full (DynoSim schedules it with 0 tokens, then stops).
                if budget == 0 && !prebuilt && m.blocks * bs < len {
                    break;
                }
                let (needed, free) = match self.admission {
                    Admission::Vllm => (
                        known_blocks.saturating_sub(m.active_blocks + held),
                        self.pool.capacity() - self.pool.num_active(),
                    ),
                    Admission::GuaranteedNoEvict => (
                        self.completion_blocks(s)
                            .saturating_sub(m.active_blocks + held),
                        self.unreserved_blocks(),
                    ),
                };
                if needed > free {
                    break;
                }
                // Take the hits, then schedule with the precomputed prefill cost.
                if !prebuilt {
                    self.acquire_hits(s, m.blocks, prompt);
                }
                let cached_tokens = if prebuilt {
                    0
                } else {
                    (m.blocks * bs).min(len)
                };
                let res = self.schedule(
                    s,
                    cached_tokens,
                    &mut budget,
                    &mut acc,
                    prompt,
                    &mut preempted,
                );
                // (A waiting sequence is not in the running queue: it is never the victim.)
                if matches!(res, Sched::Blocked | Sched::CurrentPreempted) {
                    // Give the hits back and stop admitting.
                    if !prebuilt {
                        let exposed = self.seqs[s as usize].exposed;
                        self.release_blocks(s, exposed);
                    }
                    break;
                }
                self.waiting.remove(pos);
                let seq = &mut self.seqs[s as usize];
                // A hand-off's prompt was computed elsewhere: it reports no reuse here. Otherwise
                // the cached tokens, generated ones included (a preempted sequence), as DynoSim.
                let reused = if seq.prebuilt { 0 } else { cached_tokens };
                self.running.push(s);
                out.admitted.push((req, reused));
                out.progressed = true;
                if budget == 0 && matches!(res, Sched::Idle) {
                    break;
                }
            }
        }

        // 3. Prefill time.
        let is_decode = self.args.worker_type == WorkerType::Decode;
        let is_prefill = self.args.worker_type == WorkerType::Prefill;
        let mut prefill_ms = 0.0;
        let prompts_now = acc.0 > 0 && !is_decode;
        let mean_isl = acc.1.checked_div(acc.0).unwrap_or(0);
        let mean_prefix = acc.2.checked_div(acc.0).unwrap_or(0);
        // A fused step (`mixed_pass: fused`, never with MTP) is timed below, once its decodes
        // are counted; a step that turns out to prefill only is timed as one then.
        let fused = self.args.mixed_pass == MixedPass::Fused && !is_prefill;
        if prompts_now {
            if !fused {
                prefill_ms = self.prefill_time(acc.0, mean_isl, mean_prefix);
            }
            out.progressed = true;
        }

        // 4. Token emission for every sequence whose known tokens are all computed.
        if self.mtp.is_some() {
            let decode_ms = self.emit_bursts(prompts, out, &mut preempted);
            out.prefill_ms = prefill_ms;
            out.decode_ms = decode_ms;
            out.preempted = preempted;
            return prefill_ms + decode_ms;
        }
        self.retire_done_without_token(out, is_prefill);
        let mut ready = 0u64;
        let mut ctx_sum = 0u64;
        for &s in &self.running {
            let seq = &self.seqs[s as usize];
            let len = seq.input + seq.generated;
            if seq.num_computed >= len {
                ready += 1;
                ctx_sum += len as u64;
            }
        }
        let mut decode_ms = 0.0;
        let parts = if fused && prompts_now && ready > 0 {
            self.model
                .fused_step_ms(acc.0, mean_isl, mean_prefix, ready, ctx_sum / ready)
        } else {
            None
        };
        if let Some((rest, attention)) = parts {
            // Scaled as the step's prefill and its decode: the decode ratio and the decode pass
            // overhead act on the decodes' attention.
            prefill_ms = prefill_pass_ms(&self.args, rest);
            decode_ms = decode_pass_ms(&self.args, attention);
        } else {
            if fused && prompts_now {
                prefill_ms = self.prefill_time(acc.0, mean_isl, mean_prefix);
            }
            if ready > 0 && !is_prefill {
                decode_ms = self.decode_time(ready, ctx_sum / ready);
            }
        }
        if ready > 0 {
            let mut k = 0usize;
            while k < self.running.len() {
                let s = self.running[k];
                let seq = &self.seqs[s as usize];
                if seq.num_computed < seq.input + seq.generated {
                    k += 1;
                    continue;
                }
                let req = seq.req;
                let mut done = self.remaining_output(s) == 0;
                if !done {
                    let seq = &mut self.seqs[s as usize];
                    seq.generated += 1;
                    out.emitted.push((req, seq.generated));
                    done = self.remaining_output(s) == 0;
                }
                out.progressed = true;
                if done {
                    self.retire(k, out, is_prefill);
                } else {
                    k += 1;
                }
            }
        }
        out.prefill_ms = prefill_ms;
        out.decode_ms = decode_ms;
        // A preemption alone is no progress: as in DynoSim, a pass that only preempted (no
        // token computed or emitted, nothing admitted or finished) does not complete, and the
        // worker waits for the next event (a decode worker makes no reservation attempt then).
        out.preempted = preempted;
        prefill_ms + decode_ms
    }

    /// The first part of token emission, as DynoSim's: a sequence whose known tokens are all
    /// computed and that may generate none (an output length of 0, once its prompt is done)
    /// finishes without a token, its blocks freed before the step is timed, so it is neither
    /// one of the step's sequences nor part of its KV load.
    fn retire_done_without_token(&mut self, out: &mut PassOutput, is_prefill: bool) {
        let mut k = 0usize;
        while k < self.running.len() {
            let s = self.running[k];
            let seq = &self.seqs[s as usize];
            if seq.num_computed >= seq.input + seq.generated && self.remaining_output(s) == 0 {
                self.retire(k, out, is_prefill);
                out.progressed = true;
            } else {
                k += 1;
            }
        }
    }

    /// Token emission under multi-token prediction (step 4 of a pass), as DynoSim's: every
    /// running sequence whose known tokens are all computed and that may still generate is
    /// ready. First the blocks for the longest burst of each (`nextn + 1` tokens, at most what it
    /// may still generate) are set aside, preempting by the preemption mode's victim while they
    /// do not fit (a pass that cannot find them emits nothing). The pass is timed with the
    /// blocks in use before that reservation; then each ready sequence, in queue order, draws
    /// its burst, takes the blocks it crosses into (caching those the burst fills) and emits the
    /// burst's tokens at the pass end; the unused part of the reservation comes back empty. All
    /// but its last token count as computed, so the next pass computes one token, as without
    /// prediction. A prefill worker's sequences emit their one token. Returns the decode time in
    /// ms.
    fn emit_bursts(
        &mut self,
        prompts: &PromptBlocks,
        out: &mut PassOutput,
        preempted: &mut u32,
    ) -> f64 {
        let is_prefill = self.args.worker_type == WorkerType::Prefill;
        let max_burst = BurstSampler::max_burst(&self.args);
        let bs = self.block_size;
        self.retire_done_without_token(out, is_prefill);
        let is_ready = |e: &Self, s: u32| {
            let seq = &e.seqs[s as usize];
            seq.num_computed >= seq.input + seq.generated
        };
        let mut reserved;
        loop {
            let mut required = 0u64;
            let mut any = false;
            for &s in &self.running {
                if !is_ready(self, s) {
                    continue;
                }
                any = true;
                let len = self.seq_len(s);
                let burst = max_burst.min(self.remaining_output(s));
                required += u64::from((len + burst).div_ceil(bs) - len.div_ceil(bs));
            }
            if !any {
                return 0.0;
            }
            // Set aside at once, as DynoSim does: cached blocks are evicted for the whole
            // reservation, and what the bursts leave unused comes back empty.
            if u32::try_from(required).is_ok_and(|n| self.pool.allocate(n)) {
                reserved = required as u32;
                break;
            }
            if self.running.is_empty() || self.admission == Admission::GuaranteedNoEvict {
                return 0.0;
            }
            let vi = match self.args.preemption_mode {
                PreemptionMode::Lifo => self.running.len() - 1,
                PreemptionMode::Fifo => 0,
            };
            let victim = self.running.remove(vi);
            self.preempt(victim, &mut 0, &mut (0, 0, 0));
            *preempted += 1;
        }
        let (mut ready, mut ctx_sum) = (0u64, 0u64);
        for &s in &self.running {
            if is_ready(self, s) {
                ready += 1;
                ctx_sum += u64::from(self.seq_len(s));
            }
        }
        // Timed with the blocks in use before the reservation.
        let decode_ms = if is_prefill {
            0.0
        } else {
            self.decode_time_at(ready, ctx_sum / ready, self.pool.num_active() - reserved)
        };
        let mut k = 0usize;
        while k < self.running.len() {
            let s = self.running[k];
            if !is_ready(self, s) {
                k += 1;
                continue;
            }
            let rem = self.remaining_output(s);
            let burst = BurstSampler::tokens(&mut self.mtp, is_prefill, rem);
            let len = self.seq_len(s);
            let need = (len + burst)
                .div_ceil(bs)
                .saturating_sub(self.held_blocks(s))
                .min(reserved);
            reserved -= need;
            let seq = &mut self.seqs[s as usize];
            seq.tail += need;
            let req = seq.req;
            for _ in 0..burst {
                seq.generated += 1;
                out.emitted.push((req, seq.generated));
            }
            out.progressed = true;
            // DynoSim caches a block as soon as a burst fills it.
            let full = (seq.input + seq.generated) / bs;
            self.register_full_blocks(s, full, prompts.sequence_of(req));
            if self.remaining_output(s) == 0 {
                self.retire(k, out, is_prefill);
                continue;
            }
            let seq = &mut self.seqs[s as usize];
            seq.num_computed = seq.input + seq.generated - 1;
            k += 1;
        }
        self.pool.free_private(reserved);
        decode_ms
    }
}

fn reuse<T>(mut v: Vec<T>) -> Vec<T> {
    v.clear();
    v
}

#[cfg(test)]
mod tests;
