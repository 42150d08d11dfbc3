//! One SGLang engine (breadth §1): a waiting queue ordered by the schedule policy, batch
//! formation under token budgets with `new_token_ratio`, chunked prefill, page-granular KV in a
//! radix prefix cache ([`RadixCache`]), and one decode step over every running request per pass,
//! retracting the request with the fewest output tokens when the pool cannot hold the next
//! tokens. A pass is computed eagerly when it starts; its tokens, completions and KV events
//! become visible at its end.

use super::kv::{IdMap, KvEvent, NIL};
use super::mtp::BurstSampler;
use super::radix::{PageKey, PageKeys, RadixCache, NO_NODE};
use super::stall::StallCause;
use super::vllm::{PassOutput, Reservation};
use super::{decode_pass_ms, prefill_pass_ms};
use crate::config::{EngineArgs, SchedulePolicy, WorkerType};
use crate::timing::LatencyModel;
use crate::workload::sharing::PromptBlocks;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::VecDeque;

/// LPM scores the queue only up to this many waiting requests.
const LPM_MAX_WAITING: usize = 128;
/// LPM deprioritises requests with at most this many cached tokens whose first
/// `ceil(32 / page) × page` tokens repeat an earlier waiting request's.
const LPM_DUPLICATE_TOKENS: u32 = 32;
const INIT_NEW_TOKEN_RATIO: f64 = 0.7;
const MIN_NEW_TOKEN_RATIO_FACTOR: f64 = 0.14;
const NEW_TOKEN_RATIO_DECAY_STEPS: f64 = 600.0;

#[derive(Debug, Clone, Default)]
struct Req {
    req: u32,
    input: u32,
    max_output: u32,
    generated: u32,
    /// Tokens whose KV exists (prompt chunks computed, outputs).
    materialized: u32,
    /// Radix node ending its cached (tree-held, locked) prefix; `NO_NODE` when it holds no KV.
    node: u32,
    /// Leading pages held in the tree.
    cached_pages: u32,
    /// Its private pages `cached_pages..published_pages` were reported to the router.
    published_pages: u32,
}

impl Req {
    fn len(&self) -> u32 {
        self.input + self.generated
    }
    fn remaining_output(&self) -> u32 {
        self.max_output - self.generated
    }
    fn active(&self) -> bool {
        self.node != NO_NODE
    }
}

/// Settings derived from the engine args.
#[derive(Debug, Clone)]
struct Settings {
    lpm: bool,
    page: u32,
    max_prefill_tokens: f64,
    chunked_prefill_size: u32,
    clip_max_new_tokens: u32,
    max_running: usize,
    init_ratio: f64,
    min_ratio: f64,
    ratio_step: f64,
    total_kv_tokens: u64,
}

/// Hand-off bookkeeping (slots by request; boxed, as only disaggregated workers use it).
#[derive(Debug, Default)]
struct Handoffs {
    /// Decode side: reserved, not yet activated destinations.
    reserved: FxHashMap<u32, u32>,
    /// Decode side: the head destination's last reservation attempt (request, generation).
    last_attempt: Option<(u32, u64)>,
    /// Prefill side: finished sequences whose KV is held for the transfer.
    held: FxHashMap<u32, u32>,
}

/// SGLang's scheduler receive counter (`--scheduler-recv-interval`): a pass adds the weight of
/// the previous pass's forward mode (1 for decode, far more than any interval for prefill), and
/// the scheduler receives when the count reaches the interval, which resets it.
#[derive(Debug, Clone, Copy)]
struct RecvSkipper {
    interval: u32,
    count: u32,
    /// The weight of the previous pass (the first pass receives).
    last_weight: u32,
}

/// SGLang's weight of a pass that was not a decode (its default weight).
const RECV_WEIGHT_EXTEND: u32 = 1000;

impl RecvSkipper {
    fn new(interval: u32) -> Self {
        RecvSkipper {
            interval: interval.max(1),
            count: 0,
            last_weight: RECV_WEIGHT_EXTEND,
        }
    }

    /// Whether receives are skipped at all (an interval above 1).
    fn skips(self) -> bool {
        self.interval > 1
    }

    /// A pass starts: counts the previous one; true when the scheduler receives (always on an
    /// idle engine).
    fn tick(&mut self, idle: bool) -> bool {
        self.count = self.count.saturating_add(self.last_weight);
        if idle || self.count >= self.interval {
            self.count = 0;
            true
        } else {
            false
        }
    }

    /// Records the forward mode of the pass just formed: with a prefill or only decode.
    fn last_pass(&mut self, prefilled: bool) {
        self.last_weight = if prefilled { RECV_WEIGHT_EXTEND } else { 1 };
    }
}

/// One SGLang engine instance.
#[derive(Debug)]
pub struct SglangEngine<M: LatencyModel> {
    args: EngineArgs,
    s: Settings,
    model: M,
    cache: RadixCache,
    reqs: Vec<Req>,
    free_reqs: Vec<u32>,
    waiting: VecDeque<u32>,
    running: Vec<u32>,
    new_token_ratio: f64,
    /// `--scheduler-recv-interval`: requests that reached the engine but that the scheduler has
    /// not taken in yet, and its receive counter (see [`SglangEngine::receive`]).
    inbox: VecDeque<u32>,
    recv: RecvSkipper,
    /// Router view: how many pages hold each shareable content id, and the pending events.
    record_events: bool,
    page_refs: IdMap,
    events: Vec<KvEvent>,
    /// Disaggregated hand-offs (decode side): reserved destinations by request, activated ones
    /// waiting to join the running batch, whether the simulator has destinations it could not
    /// reserve yet (they block fresh admissions), and the capacity generation that gates
    /// reservation retries. Prefill side: finished sequences whose KV is held for the transfer.
    handoffs: Box<Handoffs>,
    prebuilt: VecDeque<u32>,
    pending_destinations: bool,
    capacity_generation: u64,
    /// Multi-token prediction's burst draws (`EngineArgs::mtp`), set by [`SglangEngine::seed_mtp`].
    mtp: Option<BurstSampler>,
    /// Scratch buffers reused across passes.
    evicted: Vec<PageKey>,
    can_run: Vec<u32>,
    finished_slots: Vec<u32>,
    /// Running requests by the stride pass (modulo the page size) that starts a page for them.
    page_residues: Vec<u32>,
    /// Running requests in the order a stride caches their deferred pages.
    stride_order: Vec<(u32, u32)>,
}

/// The radix-cache keys of request `req`'s pages: the content ids of its whole sequence, the
/// last output token's page included (SGLang keeps that token's slot), then ids of its own.
fn page_keys(prompts: &PromptBlocks, req: u32) -> PageKeys<'_> {
    PageKeys {
        shared: prompts.whole_sequence_of(req),
        req,
    }
}

impl<M: LatencyModel> SglangEngine<M> {
    pub fn new(args: &EngineArgs, model: M, record_kv_events: bool) -> Self {
        let g = &args.sglang;
        let page = args.block_size.max(1);
        let total_pages = u32::try_from(args.kv_pool_blocks()).unwrap_or(u32::MAX);
        let init_ratio = INIT_NEW_TOKEN_RATIO * g.schedule_conservativeness;
        let min_ratio = init_ratio * MIN_NEW_TOKEN_RATIO_FACTOR;
        let s = Settings {
            lpm: g.schedule_policy == SchedulePolicy::Lpm,
            page,
            max_prefill_tokens: g.max_prefill_tokens as f64,
            chunked_prefill_size: g.chunked_prefill_size.min(u32::MAX as u64) as u32,
            clip_max_new_tokens: g.clip_max_new_tokens.min(u32::MAX as u64) as u32,
            max_running: args
                .max_num_seqs
                .map_or(usize::MAX, |n| n.min(usize::MAX as u64) as usize),
            init_ratio,
            min_ratio,
            ratio_step: (init_ratio - min_ratio) / NEW_TOKEN_RATIO_DECAY_STEPS,
            total_kv_tokens: total_pages as u64 * page as u64,
        };
        SglangEngine {
            args: args.clone(),
            new_token_ratio: s.init_ratio,
            s,
            model,
            cache: RadixCache::new(total_pages),
            reqs: Vec::new(),
            free_reqs: Vec::new(),
            waiting: VecDeque::new(),
            running: Vec::new(),
            inbox: VecDeque::new(),
            recv: RecvSkipper::new(g.scheduler_recv_interval),
            record_events: record_kv_events,
            page_refs: IdMap::new(),
            events: Vec::new(),
            handoffs: Box::default(),
            prebuilt: VecDeque::new(),
            pending_destinations: false,
            capacity_generation: 0,
            mtp: None,
            evicted: Vec::new(),
            can_run: Vec::new(),
            finished_slots: Vec::new(),
            page_residues: Vec::new(),
            stride_order: Vec::new(),
        }
    }

    /// Turns multi-token prediction on (when the args set it), drawing bursts from the stream
    /// of the pool's scheduler number `rank_index`.
    pub fn seed_mtp(&mut self, rank_index: u64) {
        self.mtp = BurstSampler::of(&self.args, rank_index);
    }

    pub fn block_size(&self) -> u32 {
        self.s.page
    }

    /// KV capacity in pages.
    pub fn capacity_pages(&self) -> u32 {
        self.cache.total_pages()
    }

    pub fn has_work(&self) -> bool {
        !self.waiting.is_empty()
            || !self.running.is_empty()
            || !self.prebuilt.is_empty()
            || !self.inbox.is_empty()
    }

    pub fn num_waiting(&self) -> usize {
        self.waiting.len() + self.inbox.len()
    }

    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    pub fn drain_events(&mut self) -> std::vec::Drain<'_, KvEvent> {
        self.events.drain(..)
    }

    /// Queues a new request (in the inbox when the scheduler skips receives).
    pub fn enqueue(&mut self, req: u32, input: u32, max_output: u32) {
        let slot = self.new_slot(req, input, max_output);
        if self.recv.skips() {
            self.inbox.push_back(slot);
        } else {
            self.waiting.push_back(slot);
        }
    }

    /// The scheduler's receive at the start of a pass (SGLang's `SchedulerRecvSkipper`): the
    /// pass counts for its forward mode, and when the count reaches the interval the requests
    /// that reached the engine join the waiting queue. An idle engine receives at once (its
    /// idle loop spins through the interval in no time).
    fn receive(&mut self) {
        if !self.recv.skips() {
            return;
        }
        let idle = self.running.is_empty() && self.waiting.is_empty() && self.prebuilt.is_empty();
        if self.recv.tick(idle) {
            self.waiting.extend(self.inbox.drain(..));
        }
    }

    fn new_slot(&mut self, req: u32, input: u32, max_output: u32) -> u32 {
        let r = Req {
            req,
            input,
            max_output,
            node: NO_NODE,
            ..Req::default()
        };
        match self.free_reqs.pop() {
            Some(i) => {
                self.reqs[i as usize] = r;
                i
            }
            None => {
                self.reqs.push(r);
                (self.reqs.len() - 1) as u32
            }
        }
    }

    /// Disaggregated decode side: the simulator has hand-offs it could not reserve yet (they
    /// block fresh admissions of retracted sequences, as in DynoSim).
    pub fn set_pending_destinations(&mut self, pending: bool) {
        self.pending_destinations = pending;
    }

    /// Whether [`SglangEngine::reserve_destination`] would try `req` now: DynoSim retries the
    /// head destination only after the pool's capacity changed (a completion, a retraction, a
    /// released source) since its last attempt.
    pub fn would_attempt(&self, req: u32) -> bool {
        self.handoffs.last_attempt != Some((req, self.capacity_generation))
    }

    /// Reserves KV for a hand-off's prompt (breadth §1.11, "destination first"): the prompt's
    /// cached prefix is matched and locked, the other pages (page-rounded) are taken, evicting
    /// if needed. `missing_tokens` is the page-rounded part that must be transferred.
    pub fn reserve_destination(
        &mut self,
        req: u32,
        input: u32,
        max_output: u32,
        prompts: &PromptBlocks,
    ) -> Option<Reservation> {
        if !self.would_attempt(req) {
            return None;
        }
        self.handoffs.last_attempt = Some((req, self.capacity_generation));
        let slot = self.new_slot(req, input, max_output);
        let Some(prefix) = self.allocate(slot, input, prompts) else {
            self.free_reqs.push(slot);
            return None;
        };
        self.handoffs.reserved.insert(req, slot);
        Some(Reservation {
            seq: slot,
            missing_tokens: self.pages_of(input) * self.s.page - prefix,
        })
    }

    /// The KV of a reserved hand-off has arrived: its prompt pages enter the radix cache and
    /// the sequence waits to join the running batch at the next pass.
    pub fn activate(&mut self, slot: u32, prompts: &PromptBlocks) {
        let req = self.reqs[slot as usize].req;
        self.handoffs.reserved.remove(&req);
        let before = self.cache.available_pages();
        self.cache_materialized(slot, prompts);
        if self.cache.available_pages() > before {
            self.capacity_generation += 1;
        }
        self.prebuilt.push_back(slot);
    }

    /// Prefill side: frees the KV a finished sequence held for its transfer (its complete
    /// pages stay in the radix cache).
    pub fn release_held(&mut self, req: u32, prompts: &PromptBlocks) {
        if let Some(slot) = self.handoffs.held.remove(&req) {
            self.finish(slot, prompts);
            self.capacity_generation += 1;
        }
    }

    /// The largest request queued or running that can never fit this engine's KV pool, if
    /// any: (request, tokens it needs).
    pub fn oversized(&self) -> Option<(u32, u64)> {
        self.waiting
            .iter()
            .chain(self.running.iter())
            .map(|&i| &self.reqs[i as usize])
            .map(|r| {
                let need = (r.input + r.max_output).div_ceil(self.s.page) * self.s.page;
                (r.req, need as u64)
            })
            .find(|&(_, need)| need > self.s.total_kv_tokens)
    }

    /// Why this engine's work can never move on, whatever happens later (every other page
    /// freed): its only running request needs a page for its next token and holds the whole
    /// pool, or, with nothing running, the request at the head of the queue can never pass
    /// batch formation's budgets (step 1 of [`SglangEngine::step`] with an empty pool), so it
    /// never completes. `None` whenever a later pass could move forward.
    pub fn never_schedulable(&self) -> Option<StallCause> {
        if !self.prebuilt.is_empty() {
            return None;
        }
        let page = self.s.page;
        let total_pages = self.cache.total_pages();
        match self.running.as_slice() {
            [] => {}
            [only] => {
                let r = &self.reqs[*only as usize];
                let needs_page = r.remaining_output() > 0 && r.len().is_multiple_of(page);
                return (needs_page && self.pages_of(r.materialized) >= total_pages)
                    .then_some(StallCause::RequestOutgrewPool);
            }
            _ => return None,
        }
        let &slot = self.waiting.front()?;
        let r = &self.reqs[slot as usize];
        let extend = r.len() - r.materialized;
        if extend == 0 {
            return None;
        }
        let cps = self.s.chunked_prefill_size;
        let chunk = if extend <= cps {
            extend
        } else {
            let c = cps / page * page;
            if c == 0 {
                return Some(StallCause::PrefillOverBudget);
            }
            c.min(extend)
        };
        let charged = (chunk.div_ceil(page) * page) as f64;
        let reserve_out = if chunk < extend {
            0
        } else {
            r.remaining_output().min(self.s.clip_max_new_tokens)
        };
        // The most room any later pass could offer it: every page but its own.
        let own_pages = self.pages_of(r.materialized);
        let best_total = (u64::from(total_pages.saturating_sub(own_pages)) * page as u64) as f64;
        (charged + reserve_out as f64 >= best_total
            || charged > self.s.max_prefill_tokens
            || charged > cps as f64)
            .then_some(StallCause::PrefillOverBudget)
    }

    fn publish(&mut self, key: PageKey) {
        if self.record_events && PageKeys::is_shared(key) {
            let id = key as u32;
            match self.page_refs.get(id) {
                NIL => {
                    self.page_refs.set(id, 1);
                    self.events.push(KvEvent::Stored(id));
                }
                n => self.page_refs.set(id, n + 1),
            }
        }
    }

    fn unpublish(&mut self, key: PageKey) {
        if self.record_events && PageKeys::is_shared(key) {
            let id = key as u32;
            match self.page_refs.get(id) {
                NIL => {}
                1 => {
                    self.page_refs.set(id, NIL);
                    self.events.push(KvEvent::Removed(id));
                }
                n => self.page_refs.set(id, n - 1),
            }
        }
    }

    fn publish_range(&mut self, keys: &PageKeys, from: u32, to: u32) {
        if self.record_events {
            for i in from..to {
                self.publish(keys.get(i));
            }
        }
    }

    fn evict(&mut self, pages: u32) {
        if !self.record_events {
            self.cache.evict(pages, None);
            return;
        }
        let mut removed = std::mem::take(&mut self.evicted);
        self.cache.evict(pages, Some(&mut removed));
        for &k in &removed {
            self.unpublish(k);
        }
        removed.clear();
        self.evicted = removed;
    }

    fn pages_of(&self, tokens: u32) -> u32 {
        tokens.div_ceil(self.s.page)
    }

    /// First allocation of a request's KV for tokens `..chunk_end`: the cached prefix is
    /// matched and locked, fresh pages are taken (evicting if needed). Returns the prefix
    /// length in tokens, or `None` when the pool cannot hold it.
    fn allocate(&mut self, slot: u32, chunk_end: u32, prompts: &PromptBlocks) -> Option<u32> {
        let page = self.s.page;
        let r = &self.reqs[slot as usize];
        let keys = page_keys(prompts, r.req);
        let full = chunk_end / page;
        let (m, node) = self.cache.match_prefix(&keys, full);
        let required = self.pages_of(chunk_end - m * page);
        self.cache.inc_lock(node);
        let reservable = self.cache.available_pages() as u64 + self.cache.evictable_pages();
        if required as u64 > reservable {
            self.cache.dec_lock(node);
            return None;
        }
        let available = self.cache.available_pages();
        if required > available {
            self.evict(required - available);
        }
        if !self.cache.alloc(required) {
            self.cache.dec_lock(node);
            return None;
        }
        self.publish_range(&keys, m, full);
        let r = &mut self.reqs[slot as usize];
        r.node = node;
        r.cached_pages = m;
        r.published_pages = full;
        r.materialized = chunk_end;
        Some(m * page)
    }

    /// Next chunk of a request that already holds KV.
    fn extend(&mut self, slot: u32, chunk_end: u32, prompts: &PromptBlocks) -> bool {
        let r = &self.reqs[slot as usize];
        let (req, mat, published) = (r.req, r.materialized, r.published_pages);
        let required = self.pages_of(chunk_end) - self.pages_of(mat);
        let available = self.cache.available_pages();
        if available < required {
            self.evict(required - available);
        }
        if !self.cache.alloc(required) {
            return false;
        }
        let keys = page_keys(prompts, req);
        let full = chunk_end / self.s.page;
        self.publish_range(&keys, published, full);
        let r = &mut self.reqs[slot as usize];
        r.published_pages = r.published_pages.max(full);
        r.materialized = chunk_end;
        true
    }

    /// Moves a request's complete pages up to `end` into the tree; copies of pages the tree
    /// already had are freed. Returns the node ending the path.
    fn insert_pages(&mut self, slot: u32, end: u32, prompts: &PromptBlocks) -> u32 {
        let r = &self.reqs[slot as usize];
        let (req, node, cached, published) = (r.req, r.node, r.cached_pages, r.published_pages);
        let keys = page_keys(prompts, req);
        self.publish_range(&keys, published.max(cached), end);
        let (new_node, added) = self.cache.insert_from(node, cached, &keys, end, true);
        let dups = end - cached - added;
        if dups > 0 {
            self.cache.free(dups);
            for i in cached..cached + dups {
                self.unpublish(keys.get(i));
            }
        }
        let r = &mut self.reqs[slot as usize];
        r.published_pages = r.published_pages.max(end);
        new_node
    }

    /// Caches the page-aligned materialised prefix of a running (or chunked) request.
    fn cache_materialized(&mut self, slot: u32, prompts: &PromptBlocks) {
        let r = &self.reqs[slot as usize];
        let aligned = r.materialized / self.s.page;
        if aligned == 0 || aligned <= r.cached_pages {
            return;
        }
        let old = r.node;
        let new_node = self.insert_pages(slot, aligned, prompts);
        if new_node != old {
            self.cache.inc_lock(new_node);
            self.cache.dec_lock(old);
        }
        let r = &mut self.reqs[slot as usize];
        r.node = new_node;
        r.cached_pages = aligned;
    }

    /// A finished request leaves its complete pages in the tree (unlocked) and frees the rest.
    fn finish(&mut self, slot: u32, prompts: &PromptBlocks) {
        let r = &self.reqs[slot as usize];
        if r.active() {
            let complete = r.len().min(r.materialized) / self.s.page;
            let held = self.pages_of(r.materialized);
            let old = r.node;
            self.cache.free(held - complete);
            if complete > 0 {
                self.insert_pages(slot, complete, prompts);
            }
            self.cache.dec_lock(old);
        }
        self.free_reqs.push(slot);
    }

    /// Releases the KV of a retracted request: its private pages go back to the pool, its
    /// cached prefix is unlocked. Generated tokens are kept (it re-prefills them).
    fn retract(&mut self, slot: u32, prompts: &PromptBlocks) {
        let r = &self.reqs[slot as usize];
        let (req, node, cached, published) = (r.req, r.node, r.cached_pages, r.published_pages);
        let private = self.pages_of(r.materialized) - cached;
        self.cache.free(private);
        let keys = page_keys(prompts, req);
        for i in cached..published {
            self.unpublish(keys.get(i));
        }
        self.cache.dec_lock(node);
        let r = &mut self.reqs[slot as usize];
        r.node = NO_NODE;
        r.materialized = 0;
        r.cached_pages = 0;
        r.published_pages = 0;
    }

    /// LPM ordering of the waiting queue (breadth §1.8).
    fn order_waiting(&mut self, prompts: &PromptBlocks) {
        if !self.s.lpm || self.waiting.len() > LPM_MAX_WAITING {
            return;
        }
        let page = self.s.page;
        let dup_pages = LPM_DUPLICATE_TOKENS.div_ceil(page);
        let mut seen: FxHashSet<Vec<PageKey>> = FxHashSet::default();
        let mut scored: Vec<(bool, std::cmp::Reverse<u32>, u32)> =
            Vec::with_capacity(self.waiting.len());
        for &slot in &self.waiting {
            let r = &self.reqs[slot as usize];
            let keys = page_keys(prompts, r.req);
            let len = r.len();
            let prefix = self.cache.prefix_match_len(&keys, len / page) * page;
            let deprioritized = prefix <= LPM_DUPLICATE_TOKENS
                && len >= dup_pages * page
                && !seen.insert((0..dup_pages).map(|i| keys.get(i)).collect());
            scored.push((deprioritized, std::cmp::Reverse(prefix), slot));
        }
        // Stable: ties keep their queue order.
        scored.sort_by_key(|x| (x.0, x.1));
        self.waiting.clear();
        self.waiting.extend(scored.iter().map(|x| x.2));
    }

    /// Runs one pass starting now; returns its duration in ms.
    pub fn step(&mut self, prompts: &PromptBlocks, out: &mut PassOutput) -> f64 {
        out.clear();
        let page = self.s.page;
        // 0. Activated hand-offs join the running batch first (no prefill, 0 reused tokens);
        // while some still wait, or a destination waits for KV, nothing fresh is admitted.
        while self.running.len() < self.s.max_running {
            let Some(slot) = self.prebuilt.pop_front() else {
                break;
            };
            out.admitted.push((self.reqs[slot as usize].req, 0));
            out.progressed = true;
            self.running.push(slot);
        }
        let fresh_admission = self.prebuilt.is_empty() && !self.pending_destinations;
        self.receive();
        self.order_waiting(prompts);

        // 1. Batch formation (breadth §1.4).
        let clip = self.s.clip_max_new_tokens;
        let reserved: f64 = self
            .running
            .iter()
            .map(|&i| {
                self.reqs[i as usize].remaining_output().min(clip) as f64 * self.new_token_ratio
            })
            .sum();
        let mut rem_total = ((self.cache.available_pages() as u64 + self.cache.evictable_pages())
            * page as u64) as f64
            - reserved;
        let mut rem_input = self.s.max_prefill_tokens;
        let mut rem_chunk = self.s.chunked_prefill_size as f64;
        let slots = if fresh_admission {
            self.s.max_running.saturating_sub(self.running.len())
        } else {
            0
        };
        let mut can_run = std::mem::take(&mut self.can_run);
        can_run.clear();
        let mut oom = false;
        let (mut total_isl, mut total_prefix) = (0u64, 0u64);
        while can_run.len() < slots {
            let Some(&slot) = self.waiting.front() else {
                break;
            };
            let r = &self.reqs[slot as usize];
            let extend = r.len() - r.materialized;
            if extend == 0 {
                break;
            }
            let chunk = if extend <= self.s.chunked_prefill_size {
                extend
            } else {
                let c = (rem_chunk as u64 / page as u64 * page as u64) as u32;
                if c == 0 {
                    break;
                }
                c.min(extend)
            };
            let charged = (chunk.div_ceil(page) * page) as f64;
            let reserve_out = if chunk < extend {
                0
            } else {
                r.remaining_output().min(clip)
            };
            if charged + reserve_out as f64 >= rem_total
                || charged > rem_input
                || charged > rem_chunk
            {
                break;
            }
            let mat = r.materialized;
            let chunk_end = mat + chunk;
            let old_alloc = self.pages_of(mat) * page;
            let prefix = if mat > 0 {
                self.extend(slot, chunk_end, prompts).then_some(mat)
            } else {
                self.allocate(slot, chunk_end, prompts)
            };
            let Some(prefix) = prefix else {
                oom = true;
                break;
            };
            self.waiting.pop_front();
            out.admitted.push((self.reqs[slot as usize].req, prefix));
            total_isl += chunk_end as u64;
            total_prefix += prefix as u64;
            let new_alloc = self.pages_of(chunk_end) * page;
            rem_total -= (new_alloc - old_alloc + reserve_out) as f64;
            rem_input -= charged;
            rem_chunk -= charged;
            can_run.push(slot);
            if rem_chunk <= 0.0 {
                break;
            }
        }
        if oom {
            self.new_token_ratio = self.s.init_ratio;
        }

        let is_decode_worker = self.args.worker_type == WorkerType::Decode;
        let batch = can_run.len() as u64;
        let mut prefill_ms = 0.0;
        if batch > 0 && !is_decode_worker {
            prefill_ms = prefill_pass_ms(
                &self.args,
                self.model
                    .prefill_ms(batch, total_isl / batch, total_prefix / batch),
            );
        }
        if batch > 0 {
            out.progressed = true;
        }
        self.recv.last_pass(batch > 0);
        // A partly prefilled request caches what it has and goes back to the queue's front.
        for &slot in &can_run {
            let r = &self.reqs[slot as usize];
            if r.materialized < r.len() {
                self.cache_materialized(slot, prompts);
                self.waiting.push_front(slot);
            } else {
                self.running.push(slot);
            }
        }
        self.can_run = can_run;

        // 2. One decode step over all running requests.
        let (decode_ms, retracted) = self.decode(prompts, out);
        if retracted {
            self.new_token_ratio = self.s.init_ratio;
        }
        self.new_token_ratio = (self.new_token_ratio - self.s.ratio_step).max(self.s.min_ratio);
        out.prefill_ms = prefill_ms;
        out.decode_ms = decode_ms;
        prefill_ms + decode_ms
    }

    /// Page growth (in pages) the running requests need for their next token, or their longest
    /// burst under multi-token prediction.
    fn growth_pages(&self) -> u32 {
        let max_burst = BurstSampler::max_burst(&self.args);
        self.running
            .iter()
            .map(|&i| {
                let r = &self.reqs[i as usize];
                let len = r.len();
                self.pages_of(len + max_burst.min(r.remaining_output())) - self.pages_of(len)
            })
            .sum()
    }

    /// The decode step (breadth §1.6, §1.7). Returns (duration, whether it retracted).
    fn decode(&mut self, prompts: &PromptBlocks, out: &mut PassOutput) -> (f64, bool) {
        // Requests with nothing left to generate complete without a token.
        let mut k = 0;
        while k < self.running.len() {
            let slot = self.running[k];
            if self.reqs[slot as usize].remaining_output() == 0 {
                self.running.remove(k);
                self.complete(slot, prompts, out);
            } else {
                k += 1;
            }
        }
        if self.running.is_empty() {
            return (0.0, false);
        }
        // Retract until the pool can hold every running request's next token (its longest
        // burst under multi-token prediction).
        let mut retracted: Vec<u32> = Vec::new();
        loop {
            let room = self.cache.available_pages() as u64 + self.cache.evictable_pages();
            if room >= self.growth_pages() as u64 || self.running.len() <= 1 {
                break;
            }
            let (idx, _) = self
                .running
                .iter()
                .enumerate()
                .min_by_key(|(_, &i)| self.reqs[i as usize].generated)
                .expect("more than one running");
            let slot = self.running.remove(idx);
            self.retract(slot, prompts);
            retracted.push(slot);
        }
        let any_retracted = !retracted.is_empty();
        for &slot in retracted.iter().rev() {
            self.waiting.push_front(slot);
        }
        if any_retracted {
            self.capacity_generation += 1;
            out.preempted += retracted.len() as u32;
            out.progressed = true;
        }
        let growth = self.growth_pages();
        let available = self.cache.available_pages();
        if available < growth {
            self.evict(growth - available);
        }
        if !self.cache.alloc(growth) {
            // DynoSim's step ends here without tokens (the pass takes no decode time).
            return (0.0, any_retracted);
        }
        let n = self.running.len() as u64;
        let total_context: u64 = self
            .running
            .iter()
            .map(|&i| self.reqs[i as usize].len() as u64)
            .sum();
        let decode_ms = self.decode_time(n, total_context);
        out.progressed = true;
        let used = self.decode_tokens(prompts, out, true);
        // Pages set aside for longer bursts than were drawn go back to the pool.
        self.cache.free(growth - used);
        (decode_ms, any_retracted)
    }

    /// Every running request generates its tokens of the pass, its pages already set aside:
    /// one, or under multi-token prediction a burst drawn in queue order. Those that reach their
    /// output length complete; the others cache their new complete pages after each token.
    /// Returns the pages the tokens took.
    fn decode_tokens(&mut self, prompts: &PromptBlocks, out: &mut PassOutput, emit: bool) -> u32 {
        let prefill = self.args.worker_type == WorkerType::Prefill;
        let mut finished = std::mem::take(&mut self.finished_slots);
        finished.clear();
        let mut used = 0;
        for k in 0..self.running.len() {
            let slot = self.running[k];
            let r = &self.reqs[slot as usize];
            let (len, rem) = (r.len(), r.remaining_output());
            let burst = BurstSampler::tokens(&mut self.mtp, prefill, rem);
            used += self.pages_of(len + burst) - self.pages_of(len);
            for _ in 0..burst {
                let r = &mut self.reqs[slot as usize];
                r.generated += 1;
                r.materialized += 1;
                if emit {
                    out.emitted.push((r.req, r.generated));
                }
                if r.generated >= r.max_output {
                    finished.push(slot);
                    break;
                }
                self.cache_materialized(slot, prompts);
            }
        }
        if !finished.is_empty() {
            self.running.retain(|s| !finished.contains(s));
            for &slot in &finished {
                self.complete(slot, prompts, out);
            }
        }
        self.finished_slots = finished;
        used
    }

    fn decode_time(&self, n: u64, total_context: u64) -> f64 {
        let active = total_context.min(self.s.total_kv_tokens);
        decode_pass_ms(
            &self.args,
            self.model
                .decode_ms(n, active, total_context / n, self.s.total_kv_tokens),
        )
    }

    /// Plans a stride of pure decode passes (nothing waiting, no retraction, no eviction the
    /// router would see, no completion before the last pass): such passes differ only in duration, which
    /// `durations` receives, one per pass (at most `max_passes`). Returns the number of passes
    /// (at least 2), or `None` when the next pass differs.
    pub fn plan_stride(&mut self, max_passes: u32, durations: &mut Vec<f64>) -> Option<u32> {
        durations.clear();
        if !self.waiting.is_empty()
            || self.running.is_empty()
            || !self.prebuilt.is_empty()
            || !self.inbox.is_empty()
            || self.mtp.is_some()
        {
            return None;
        }
        let mut k = max_passes;
        let mut ctx = 0u64;
        for &i in &self.running {
            let r = &self.reqs[i as usize];
            if r.remaining_output() == 0 {
                return None;
            }
            k = k.min(r.remaining_output());
            ctx += r.len() as u64;
        }
        if k < 2 {
            return None;
        }
        let n = self.running.len() as u64;
        // Pages the passes may take: free ones, and evictable ones unless the router would see
        // the evictions (its events become visible at pass ends).
        let mut free = self.cache.available_pages() as u64;
        if !self.record_events {
            free += self.cache.evictable_pages();
        }
        self.count_page_residues();
        for pass in 0..k {
            let growth = self.stride_growth(pass);
            if growth > free {
                break;
            }
            free -= growth;
            durations.push(self.decode_time(n, ctx + pass as u64 * n));
        }
        if durations.len() < 2 {
            durations.clear();
            return None;
        }
        Some(durations.len() as u32)
    }

    /// Applies `passes` passes planned by [`SglangEngine::plan_stride`] (possibly fewer than
    /// planned); `out.emitted` gets each request's generated count after them.
    pub fn apply_stride(&mut self, passes: u32, prompts: &PromptBlocks, out: &mut PassOutput) {
        out.clear();
        let mut slots = std::mem::take(&mut self.can_run);
        slots.clear();
        slots.extend_from_slice(&self.running);
        // After the first pass has cached every prompt, the middle passes of a long stride only
        // count their tokens when each request's pages are its own: caching them once before
        // the last pass, in the order their last pages were completed, leaves the tree as a pass
        // at a time would (those pages stay locked, so no eviction meanwhile can see them), and
        // saves a tree insertion per page.
        let mut deferring = false;
        self.count_page_residues();
        for pass in 0..passes {
            let growth = self.stride_growth(pass) as u32;
            let available = self.cache.available_pages();
            if available < growth {
                self.evict(growth - available);
            }
            let ok = self.cache.alloc(growth);
            debug_assert!(ok, "stride allocation failed");
            self.new_token_ratio = (self.new_token_ratio - self.s.ratio_step).max(self.s.min_ratio);
            // Each pass starts with a receive, with nothing to take in.
            self.recv.tick(false);
            self.recv.last_pass(false);
            if deferring && pass + 1 < passes {
                self.generate_uncached();
                continue;
            }
            if deferring {
                self.cache_running(prompts, passes - 2);
            }
            self.decode_tokens(prompts, out, false);
            deferring = pass == 0 && passes > 2 && self.running_tails_private(prompts);
        }
        // Completions happen only in the last pass; a finished request's slot keeps its counts
        // until the slot is reused by a later `enqueue`.
        for &slot in &slots {
            let r = &self.reqs[slot as usize];
            out.emitted.push((r.req, r.generated));
        }
        self.can_run = slots;
        out.progressed = true;
    }

    /// Counts the running requests by the pass of a stride (modulo the page size) whose token
    /// starts a new page: pass `p` adds a page to each request whose length plus `p` is a
    /// multiple of the page size (one token a pass, no multi-token prediction in a stride).
    fn count_page_residues(&mut self) {
        let page = self.s.page;
        self.page_residues.clear();
        self.page_residues.resize(page as usize, 0);
        for &i in &self.running {
            let len = self.reqs[i as usize].len();
            self.page_residues[((page - len % page) % page) as usize] += 1;
        }
    }

    /// Pages pass `pass` of a stride takes (after [`SglangEngine::count_page_residues`]).
    fn stride_growth(&self, pass: u32) -> u64 {
        self.page_residues[(pass % self.s.page) as usize] as u64
    }

    /// Whether every running request's pages from its cached prefix on are private to it: no
    /// other request can share them, so caching them a token at a time or all at once leaves
    /// the same tree, with the same order of last accesses once the stride's last pass has
    /// cached or finished every request again.
    fn running_tails_private(&self, prompts: &PromptBlocks) -> bool {
        self.running.iter().all(|&i| {
            let r = &self.reqs[i as usize];
            prompts.whole_sequence_of(r.req).len() as u32 <= r.cached_pages
        })
    }

    /// One token for each running request of a stride's middle pass, its page already set
    /// aside; caching the pages waits for [`SglangEngine::cache_running`].
    fn generate_uncached(&mut self) {
        for &slot in &self.running {
            let r = &mut self.reqs[slot as usize];
            r.generated += 1;
            r.materialized += 1;
        }
    }

    /// Caches the running requests' pages completed by the last `deferred` passes' tokens, in
    /// the order in which the last of those pages was completed (queue order within a pass):
    /// the tree's order of last accesses is then the one caching each page as it was completed
    /// would have left.
    fn cache_running(&mut self, prompts: &PromptBlocks, deferred: u32) {
        let page = self.s.page;
        let mut order = std::mem::take(&mut self.stride_order);
        order.clear();
        // Tokens generated since its last complete page: the smaller, the later that page.
        order.extend(self.running.iter().filter_map(|&slot| {
            let since = self.reqs[slot as usize].materialized % page;
            (since < deferred).then_some((since, slot))
        }));
        order.sort_by_key(|&(since, _)| std::cmp::Reverse(since));
        for &(_, slot) in &order {
            self.cache_materialized(slot, prompts);
        }
        self.stride_order = order;
    }

    fn complete(&mut self, slot: u32, prompts: &PromptBlocks, out: &mut PassOutput) {
        let req = self.reqs[slot as usize].req;
        out.finished.push(req);
        if self.args.worker_type == WorkerType::Prefill {
            // A prefill worker holds the finished sequence's KV until the transfer is done.
            self.handoffs.held.insert(req, slot);
        } else {
            self.finish(slot, prompts);
            self.capacity_generation += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{EngineType, SglangArgs};
    use crate::timing::Polynomial;

    fn args(blocks: u64, page: u32) -> EngineArgs {
        EngineArgs {
            engine_type: EngineType::Sglang,
            sglang: SglangArgs::default(),
            num_gpu_blocks: blocks,
            block_size: page,
            ..EngineArgs::default()
        }
    }

    fn run(e: &mut SglangEngine<Polynomial>, prompts: &PromptBlocks) -> (Vec<u32>, u32) {
        let mut out = PassOutput::default();
        let mut finished = Vec::new();
        let mut retracted = 0;
        for _ in 0..10_000 {
            if !e.has_work() {
                break;
            }
            let doomed = e.never_schedulable();
            e.step(prompts, &mut out);
            assert!(
                doomed.is_none() || !out.progressed,
                "{doomed:?} but progressed"
            );
            assert!(
                out.progressed,
                "no progress: running {} waiting {} avail {} evictable {}",
                e.running.len(),
                e.waiting.len(),
                e.cache.available_pages(),
                e.cache.evictable_pages()
            );
            retracted += out.preempted;
            finished.extend_from_slice(&out.finished);
        }
        finished.sort();
        (finished, retracted)
    }

    #[test]
    fn multi_token_prediction_emits_bursts_and_returns_unused_pages() {
        let mtp = |rates: &[f64]| EngineArgs {
            mtp: Some(crate::config::Mtp {
                nextn: rates.len() as u32,
                accept_rates: rates.to_vec(),
                seed: 42,
            }),
            ..args(16384, 16)
        };
        let prompts = PromptBlocks::from_lists(16, &[&[]]);
        let mut out = PassOutput::default();
        // Drafts always accepted: 3 tokens a pass, the last cut to what is left.
        let mut e = SglangEngine::new(&mtp(&[1.0, 1.0]), Polynomial, false);
        e.seed_mtp(0);
        e.enqueue(0, 32, 5);
        e.step(&prompts, &mut out);
        assert_eq!(out.emitted, vec![(0, 1), (0, 2), (0, 3)]);
        e.step(&prompts, &mut out);
        assert_eq!(out.emitted, vec![(0, 4), (0, 5)]);
        assert_eq!(out.finished, vec![0]);
        assert!(e.plan_stride(8, &mut Vec::new()).is_none());
        // Never accepted: one token a pass; the page set aside for a longer burst comes back.
        let mut e = SglangEngine::new(&mtp(&[0.0, 0.0]), Polynomial, false);
        e.seed_mtp(0);
        e.enqueue(0, 15, 3);
        e.step(&prompts, &mut out);
        assert_eq!(out.emitted, vec![(0, 1)]);
        // 16 tokens in one page: the second page reserved for a burst of 3 was returned.
        assert_eq!(e.cache.available_pages(), 16384 - 1);
    }

    #[test]
    fn single_request_prefill_then_decode_in_the_same_pass() {
        let mut e = SglangEngine::new(&args(16384, 1), Polynomial, false);
        let prompts = PromptBlocks::from_lists(1, &[&[]]);
        e.enqueue(0, 2048, 3);
        let mut out = PassOutput::default();
        let t = e.step(&prompts, &mut out);
        assert_eq!(out.admitted, vec![(0, 0)]);
        // The first token comes at the end of the pass that prefilled it.
        assert_eq!(out.emitted, vec![(0, 1)]);
        assert!((out.prefill_ms - 49.363).abs() < 1e-3);
        assert!(out.decode_ms > 0.0 && t > out.prefill_ms);
        // dynosim's prefill_pass_overhead_ms adds to the pass that prefills.
        let mut a = args(16384, 1);
        a.prefill_pass_overhead_ms = 7.5;
        let mut e2 = SglangEngine::new(&a, Polynomial, false);
        e2.enqueue(0, 2048, 3);
        let mut out2 = PassOutput::default();
        e2.step(&prompts, &mut out2);
        assert!((out2.prefill_ms - (49.363 + 7.5)).abs() < 1e-3);
        assert_eq!(out2.decode_ms, out.decode_ms);
        // dynosim's decode_pass_overhead_ms adds to the pass that decodes (signed).
        for ms in [2.5, -0.5] {
            let mut a = args(16384, 1);
            a.decode_pass_overhead_ms = ms;
            let mut e3 = SglangEngine::new(&a, Polynomial, false);
            e3.enqueue(0, 2048, 3);
            let mut out3 = PassOutput::default();
            e3.step(&prompts, &mut out3);
            assert_eq!(out3.prefill_ms, out.prefill_ms);
            assert!((out3.decode_ms - (out.decode_ms + ms)).abs() < 1e-9);
        }
        // dynosim's decode_time_scale multiplies it.
        let mut a = args(16384, 1);
        a.decode_time_scale = 0.5;
        let mut e4 = SglangEngine::new(&a, Polynomial, false);
        e4.enqueue(0, 2048, 3);
        let mut out4 = PassOutput::default();
        e4.step(&prompts, &mut out4);
        assert_eq!(out4.prefill_ms, out.prefill_ms);
        // (pass times are kept to the nanosecond, as DynoSim's)
        assert!((out4.decode_ms - 0.5 * out.decode_ms).abs() <= 1e-6);
        let (finished, _) = run(&mut e, &prompts);
        assert_eq!(finished, vec![0]);
        assert_eq!(
            e.cache.available_pages() as u64 + e.cache.evictable_pages(),
            16384
        );
    }

    /// The pass (1-based, counted from the first request's) that admits a second request
    /// enqueued after `before` passes, with `--scheduler-recv-interval` `interval`; the first
    /// `stride` decode passes after the first pass go through `apply_stride`.
    fn admitting_pass(interval: u32, before: u32, stride: u32) -> u32 {
        let mut a = args(100_000, 1);
        a.sglang.scheduler_recv_interval = interval;
        let mut e = SglangEngine::new(&a, Polynomial, false);
        let prompts = PromptBlocks::from_lists(1, &[&[], &[]]);
        let mut out = PassOutput::default();
        e.enqueue(0, 16, 500);
        e.step(&prompts, &mut out);
        assert_eq!(out.admitted, vec![(0, 0)]);
        let mut pass = 1;
        if stride > 0 {
            let mut durations = Vec::new();
            assert!(e.plan_stride(stride, &mut durations).is_some());
            e.apply_stride(stride, &prompts, &mut out);
            pass += stride;
        }
        while pass < before {
            e.step(&prompts, &mut out);
            pass += 1;
        }
        e.enqueue(1, 16, 10);
        assert_eq!(e.num_waiting(), 1);
        let mut durations = Vec::new();
        assert!(e.plan_stride(10, &mut durations).is_none() || interval == 1);
        loop {
            e.step(&prompts, &mut out);
            pass += 1;
            if out.admitted.iter().any(|&(r, _)| r == 1) {
                return pass;
            }
            assert!(pass < 1000, "never admitted");
        }
    }

    #[test]
    fn scheduler_recv_interval_takes_new_requests_in_every_n_decode_passes() {
        // Every pass receives by default.
        assert_eq!(admitting_pass(1, 2, 0), 3);
        // Pass 1 prefills, so pass 2 receives; then passes 3, 4, ... count 1, 2, ... and the
        // count reaches 10 at pass 12.
        assert_eq!(admitting_pass(10, 2, 0), 12);
        assert_eq!(admitting_pass(10, 11, 0), 12);
        assert_eq!(admitting_pass(10, 12, 0), 22);
        // A stride of decode passes counts like the passes one by one.
        assert_eq!(admitting_pass(10, 12, 5), 22);
        assert_eq!(admitting_pass(10, 7, 5), 12);
        // An idle engine takes a request in at once.
        let mut a = args(100_000, 1);
        a.sglang.scheduler_recv_interval = 30;
        let mut e = SglangEngine::new(&a, Polynomial, false);
        let prompts = PromptBlocks::from_lists(1, &[&[]]);
        let mut out = PassOutput::default();
        e.enqueue(0, 16, 2);
        assert!(e.has_work());
        e.step(&prompts, &mut out);
        assert_eq!(out.admitted, vec![(0, 0)]);
    }

    #[test]
    fn long_prompt_is_chunked_and_reports_its_own_chunks_as_reuse() {
        let mut e = SglangEngine::new(&args(100_000, 1), Polynomial, false);
        let prompts = PromptBlocks::from_lists(1, &[&[]]);
        e.enqueue(0, 20_000, 2);
        let mut out = PassOutput::default();
        e.step(&prompts, &mut out);
        assert_eq!(out.admitted, vec![(0, 0)]);
        assert!(out.emitted.is_empty());
        e.step(&prompts, &mut out);
        assert_eq!(out.admitted, vec![(0, 8192)]);
        e.step(&prompts, &mut out);
        assert_eq!(out.admitted, vec![(0, 16384)]);
        assert_eq!(out.emitted, vec![(0, 1)]);
    }

    #[test]
    fn small_pool_retracts_the_request_with_fewest_outputs_and_finishes() {
        // A low conservativeness admits more than the pool can grow into.
        let mut a = args(64, 4);
        a.sglang.schedule_conservativeness = 0.05;
        let mut e = SglangEngine::new(&a, Polynomial, false);
        let prompts = PromptBlocks::from_lists(4, &[&[], &[], &[]]);
        e.enqueue(0, 40, 60);
        e.enqueue(1, 40, 60);
        e.enqueue(2, 40, 60);
        let (finished, retracted) = run(&mut e, &prompts);
        assert_eq!(finished, vec![0, 1, 2]);
        assert!(retracted > 0);
    }

    #[test]
    fn shared_prefix_is_reused_from_the_radix_cache() {
        let mut e = SglangEngine::new(&args(1000, 4), Polynomial, true);
        let prompts = PromptBlocks::from_lists(4, &[&[1, 2, 3], &[1, 2, 3]]);
        e.enqueue(0, 14, 2);
        run(&mut e, &prompts);
        let stored = e
            .drain_events()
            .filter(|ev| matches!(ev, KvEvent::Stored(_)))
            .count();
        assert_eq!(stored, 3);
        e.enqueue(1, 14, 2);
        let mut out = PassOutput::default();
        e.step(&prompts, &mut out);
        assert_eq!(out.admitted, vec![(1, 12)]);
    }

    #[test]
    fn stall_prompt_and_reserved_output_larger_than_the_pool() {
        // 4 pages of 16 tokens: a 60-token prompt (4 pages) plus its 10 reserved outputs.
        let mut e = SglangEngine::new(&args(4, 16), Polynomial, false);
        let prompts = PromptBlocks::from_lists(16, &[&[], &[]]);
        e.enqueue(0, 60, 10);
        e.enqueue(1, 10, 2);
        let mut out = PassOutput::default();
        e.step(&prompts, &mut out);
        assert!(!out.progressed);
        assert_eq!(e.never_schedulable(), Some(StallCause::PrefillOverBudget));
    }

    #[test]
    fn no_stall_for_a_request_that_fits_an_empty_pool() {
        let mut e = SglangEngine::new(&args(4, 16), Polynomial, false);
        let prompts = PromptBlocks::from_lists(16, &[&[]]);
        e.enqueue(0, 30, 10);
        assert_eq!(e.never_schedulable(), None);
        let (finished, _) = run(&mut e, &prompts);
        assert_eq!(finished, vec![0]);
    }

    #[test]
    fn stall_running_request_that_holds_the_whole_pool() {
        // Admitted with a clipped output reservation, it grows into all 4 pages and then needs
        // a fifth for its next token.
        let mut a = args(4, 16);
        a.sglang.clip_max_new_tokens = 1;
        let mut e = SglangEngine::new(&a, Polynomial, false);
        let prompts = PromptBlocks::from_lists(16, &[&[]]);
        e.enqueue(0, 40, 30);
        let mut out = PassOutput::default();
        let mut found = None;
        for _ in 0..100 {
            found = e.never_schedulable();
            e.step(&prompts, &mut out);
            if !out.progressed {
                break;
            }
            assert_eq!(found, None, "found before a pass that progressed");
        }
        assert!(!out.progressed);
        assert_eq!(found, Some(StallCause::RequestOutgrewPool));
        assert_eq!(e.never_schedulable(), Some(StallCause::RequestOutgrewPool));
    }

    #[test]
    fn stall_chunk_budget_smaller_than_a_page() {
        let mut a = args(100, 16);
        a.sglang.chunked_prefill_size = 8;
        let e = {
            let mut e = SglangEngine::new(&a, Polynomial, false);
            e.enqueue(0, 40, 3);
            e
        };
        assert_eq!(e.never_schedulable(), Some(StallCause::PrefillOverBudget));
    }
}
