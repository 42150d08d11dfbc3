//! Request routing (spec §6): round robin and the KV-aware router with its cost function,
//! active-load tracking, seeded tie-breaking and optional queueing. Routers see workers only as
//! targets `0..n` (numbered worker-major, then DP rank; the round robin visits them rank-major)
//! and learn about KV contents through events.
//!
//! Time matters only to DynoSim's AIC prefill-load model (`prefill_load`): every call that
//! changes or reads the load takes the simulated time in ms.

pub(crate) mod prefill_load;

use crate::config::{PrefillLoadModel, QueuePolicy, RouterConfig};
use crate::engine::kv::{IdMap, KvEvent};
use crate::timing::aic::PrefillLoadEstimator;
use prefill_load::{sim_time_ns, PrefillLoad};
use rand::{Rng, SeedableRng};
// The tie-break generator by name: `StdRng` may change algorithm with a `rand` upgrade.
use rand_chacha::ChaCha12Rng;
use rustc_hash::FxHashMap;

const NO_ROW: u32 = u32::MAX;

/// Cyclic counter over targets (spec §6.1). With DP ranks it cycles rank-major, as DynoSim
/// 1.4.2 does (the spec's §4.8 says worker-major; the reference's own runs place the second
/// request of two workers with two ranks each on the other worker, not on the first one's
/// second rank): every worker's rank 0, then every worker's rank 1, and so on.
#[derive(Debug, Clone, Default)]
pub struct RoundRobin {
    next: usize,
}

impl RoundRobin {
    /// The next target (`worker × ranks + rank`) of `workers` workers with `ranks` DP ranks each.
    pub fn pick(&mut self, workers: usize, ranks: usize) -> usize {
        let num_targets = workers * ranks;
        let t = self.next % num_targets;
        self.next = (t + 1) % num_targets;
        (t % workers) * ranks + t / workers
    }
}

/// A request as the KV router sees it.
#[derive(Debug, Clone, Copy)]
pub struct RouteRequest<'a> {
    /// Content ids of the prompt's shareable full blocks (a prefix of its full blocks; the
    /// others are unique to the request and never match anything).
    pub blocks: &'a [u32],
    pub isl: u32,
}

/// Routing decision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    pub target: usize,
    /// Prompt tokens the chosen target already holds per the indexer.
    pub overlap_tokens: u32,
}

#[derive(Debug, Clone, Default)]
struct TargetLoad {
    prefill: PrefillLoad,
    /// Prompt-block content id -> number of active requests holding it (absent: none).
    blocks: IdMap,
    /// Content ids in `blocks`.
    distinct_blocks: u64,
    /// Blocks tracked as unique (never shared): partial tails, no-reuse mode.
    unique_blocks: u64,
    requests: u64,
}

/// Per-request bookkeeping of the tracker.
#[derive(Debug, Clone)]
struct Routed {
    target: usize,
    prefill_tokens: u64,
    prefill_done: bool,
    shared: u32,
    unique: u64,
}

/// The KV router of one pool (spec §6.2–6.5).
#[derive(Debug)]
pub struct KvRouter {
    cfg: RouterConfig,
    num_targets: usize,
    block_size: u32,
    /// Busy threshold in prefill tokens (`router_queue_threshold × max_num_batched_tokens`).
    busy_tokens: Option<f64>,
    words: usize,
    /// Content id -> its row of `masks` (`NO_ROW` when no target holds it).
    index: IdMap,
    masks: Vec<u64>,
    free_masks: Vec<u32>,
    loads: Vec<TargetLoad>,
    routed: FxHashMap<u32, Routed>,
    /// DynoSim's AIC prefill-load model, when configured (`router_prefill_load_model: "aic"`).
    estimator: Option<PrefillLoadEstimator>,
    rng: ChaCha12Rng,
    scratch_overlap: Vec<u32>,
    scratch_prefill: Vec<u64>,
    scratch_alive: Vec<u64>,
    scratch_logits: Vec<f64>,
}

impl KvRouter {
    pub fn new(
        cfg: &RouterConfig,
        num_targets: usize,
        block_size: u32,
        max_num_batched_tokens: Option<u64>,
        seed: u64,
    ) -> Self {
        let busy_tokens = match (cfg.router_queue_threshold, max_num_batched_tokens) {
            (Some(th), Some(mnbt)) => Some(th * mnbt as f64),
            (Some(_), None) => None,
            (None, _) => None,
        };
        let words = num_targets.div_ceil(64).max(1);
        KvRouter {
            cfg: cfg.clone(),
            num_targets,
            block_size: block_size.max(1),
            busy_tokens,
            words,
            index: IdMap::new(),
            masks: Vec::new(),
            free_masks: Vec::new(),
            loads: vec![TargetLoad::default(); num_targets],
            routed: FxHashMap::default(),
            estimator: match cfg.router_prefill_load_model {
                PrefillLoadModel::Aic if cfg.router_track_prefill_tokens => {
                    cfg.prefill_load_estimator.clone()
                }
                _ => None,
            },
            rng: ChaCha12Rng::seed_from_u64(seed),
            scratch_overlap: vec![0; num_targets],
            scratch_prefill: vec![0; num_targets],
            scratch_alive: vec![0; words],
            scratch_logits: vec![0.0; num_targets],
        }
    }

    /// Whether queueing is configured.
    pub fn queues(&self) -> bool {
        self.busy_tokens.is_some()
    }

    /// Applies a worker's KV events to the indexer.
    pub fn apply_event(&mut self, target: usize, ev: KvEvent) {
        let (w, bit) = (target / 64, 1u64 << (target % 64));
        match ev {
            KvEvent::Stored(id) => {
                let words = self.words;
                let mut slot = self.index.get(id);
                if slot == NO_ROW {
                    slot = match self.free_masks.pop() {
                        Some(s) => s,
                        None => {
                            self.masks.extend(std::iter::repeat_n(0, words));
                            (self.masks.len() / words - 1) as u32
                        }
                    };
                    self.index.set(id, slot);
                }
                self.masks[slot as usize * words + w] |= bit;
            }
            KvEvent::Removed(id) => {
                let s = self.row(id);
                if s != NO_ROW {
                    let base = s as usize * self.words;
                    self.masks[base + w] &= !bit;
                    if self.masks[base..base + self.words].iter().all(|&m| m == 0) {
                        self.index.set(id, NO_ROW);
                        self.free_masks.push(s);
                    }
                }
            }
        }
    }

    #[inline]
    fn row(&self, id: u32) -> u32 {
        self.index.get(id)
    }

    /// Overlap in blocks of the prompt with every target's cache, into `scratch_overlap`.
    fn compute_overlaps(&mut self, blocks: &[u32]) {
        self.scratch_overlap.iter_mut().for_each(|o| *o = 0);
        let words = self.words;
        for (wi, a) in self.scratch_alive.iter_mut().enumerate() {
            let bits = (self.num_targets - wi * 64).min(64);
            *a = if bits == 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            };
        }
        for &id in blocks {
            let s = self.row(id);
            if s == NO_ROW {
                break;
            }
            let base = s as usize * words;
            let mut any = false;
            for wi in 0..words {
                self.scratch_alive[wi] &= self.masks[base + wi];
                let mut m = self.scratch_alive[wi];
                any |= m != 0;
                while m != 0 {
                    let b = m.trailing_zeros() as usize;
                    self.scratch_overlap[wi * 64 + b] += 1;
                    m &= m - 1;
                }
            }
            if !any {
                break;
            }
        }
    }

    /// Whether every target is busy at `now_ms` (queueing configured).
    pub fn all_busy(&self, now_ms: f64) -> bool {
        let now_ns = sim_time_ns(now_ms);
        match self.busy_tokens {
            Some(th) => self
                .loads
                .iter()
                .all(|l| l.prefill.active_tokens(now_ns) as f64 > th),
            None => false,
        }
    }

    /// Blocks of the request the tracker counts: its full prompt blocks (a partial tail block
    /// is not tracked; the reference's logs show floor(isl / block_size)). `r.blocks` holds only
    /// the shareable prefix of them; the rest are unique to the request.
    fn request_blocks(&self, r: &RouteRequest) -> u64 {
        r.isl as u64 / self.block_size as u64
    }

    /// Chooses a target for `req` (index `id` in the simulation) at `now_ms` and starts tracking
    /// it.
    pub fn route(&mut self, id: u32, r: &RouteRequest, now_ms: f64) -> Decision {
        self.compute_overlaps(r.blocks);
        self.route_scored(id, r, now_ms)
    }

    /// The prompt's overlap in blocks with every target's cache now (what a request queued now
    /// keeps for its queue key and for when it is routed, [`KvRouter::route_queued`]).
    pub fn overlaps(&mut self, blocks: &[u32]) -> Box<[u32]> {
        self.compute_overlaps(blocks);
        self.scratch_overlap.as_slice().into()
    }

    /// Routes a request that waited in the queue with the overlaps it was queued with, as
    /// DynoSim's queue keeps each request's scores from its arrival: the cost's cache credit,
    /// the prefill load tracked and the overlap reported are those, with the loads of now.
    pub fn route_queued(
        &mut self,
        id: u32,
        r: &RouteRequest,
        now_ms: f64,
        overlaps: &[u32],
    ) -> Decision {
        self.scratch_overlap.copy_from_slice(overlaps);
        self.route_scored(id, r, now_ms)
    }

    /// [`KvRouter::route`] once `scratch_overlap` holds the request's overlaps.
    fn route_scored(&mut self, id: u32, r: &RouteRequest, now_ms: f64) -> Decision {
        let bs = self.block_size as f64;
        let now_ns = sim_time_ns(now_ms);
        let request_blocks = self.request_blocks(r).max(1);
        let track_prefill = self.cfg.router_track_prefill_tokens;
        for (p, l) in self.scratch_prefill.iter_mut().zip(&self.loads) {
            *p = l.prefill.active_tokens(now_ns);
        }
        let min_prefill = self.scratch_prefill.iter().copied().min().unwrap_or(0);
        for t in 0..self.num_targets {
            let overlap = self.scratch_overlap[t] as f64;
            let load = &self.loads[t];
            let prefill_tokens = self.scratch_prefill[t];
            let cached = overlap * bs;
            let isl = r.isl as f64;
            let raw_prefill = if track_prefill {
                prefill_tokens as f64 + (isl - cached.min(isl)) + cached
            } else {
                0.0
            };
            let decay = if self.cfg.overlap_score_credit_decay > 0.0 && track_prefill {
                let excess = (prefill_tokens - min_prefill) as f64 / bs;
                1.0 / (1.0 + self.cfg.overlap_score_credit_decay * excess / request_blocks as f64)
            } else {
                1.0
            };
            let credit = self.cfg.overlap_score_credit * decay * overlap;
            let prefill_cost = self.cfg.prefill_load_scale * (raw_prefill / bs - credit).max(0.0);
            let decode_blocks = if self.cfg.router_track_active_blocks {
                let depth = if self.cfg.router_assume_kv_reuse {
                    r.blocks
                        .iter()
                        .take_while(|&&b| load.blocks.get(b) != NO_ROW)
                        .count() as u64
                } else {
                    0
                };
                let active = load.distinct_blocks + load.unique_blocks;
                (active + request_blocks.saturating_sub(depth)) as f64
            } else {
                0.0
            };
            self.scratch_logits[t] = prefill_cost
                + decode_blocks
                + self.cfg.decode_active_request_weight * load.requests as f64;
        }
        let target = self.select();
        let overlap_blocks = self.scratch_overlap[target];
        let overlap_tokens = ((overlap_blocks as u64 * self.block_size as u64) as u32).min(r.isl);
        self.track(id, target, r, overlap_tokens, now_ns);
        Decision {
            target,
            overlap_tokens,
        }
    }

    fn select(&mut self) -> usize {
        let logits = &self.scratch_logits;
        let temp = self.cfg.router_temperature;
        if temp > 0.0 {
            let lmin = logits.iter().cloned().fold(f64::INFINITY, f64::min);
            let lmax = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            if lmax > lmin {
                let range = (lmax - lmin) * temp;
                let total: f64 = logits.iter().map(|l| (-(l - lmin) / range).exp()).sum();
                let mut u = self.rng.random::<f64>() * total;
                for (i, l) in logits.iter().enumerate() {
                    u -= (-(l - lmin) / range).exp();
                    if u <= 0.0 {
                        return i;
                    }
                }
                return logits.len() - 1;
            }
            return self.rng.random_range(0..logits.len());
        }
        // Argmin; ties broken uniformly at random by reservoir sampling.
        let mut best = 0usize;
        let mut best_val = f64::INFINITY;
        let mut ties = 0u32;
        for (i, &l) in logits.iter().enumerate() {
            if l < best_val {
                best_val = l;
                best = i;
                ties = 1;
            } else if l == best_val {
                ties += 1;
                if self.rng.random_range(0..ties) == 0 {
                    best = i;
                }
            }
        }
        best
    }

    fn track(
        &mut self,
        id: u32,
        target: usize,
        r: &RouteRequest,
        overlap_tokens: u32,
        now_ns: u64,
    ) {
        let request_blocks = self.request_blocks(r);
        let prefill_tokens = if self.cfg.router_track_prefill_tokens {
            (r.isl - overlap_tokens.min(r.isl)) as u64
        } else {
            0
        };
        // A fully cached prompt adds no prefill load (and no entry that could hold the decay
        // clock).
        if prefill_tokens > 0 {
            let predicted = self
                .estimator
                .as_ref()
                .map(|e| e.duration_ns(r.isl as u64, overlap_tokens as u64));
            self.loads[target]
                .prefill
                .add(id, prefill_tokens, predicted, now_ns);
        }
        let load = &mut self.loads[target];
        load.requests += 1;
        let (shared, unique) = if !self.cfg.router_track_active_blocks {
            (0, 0)
        } else if self.cfg.router_assume_kv_reuse {
            for &b in r.blocks {
                match load.blocks.get(b) {
                    NO_ROW => {
                        load.blocks.set(b, 1);
                        load.distinct_blocks += 1;
                    }
                    c => load.blocks.set(b, c + 1),
                }
            }
            (
                r.blocks.len() as u32,
                request_blocks - r.blocks.len() as u64,
            )
        } else {
            (0, request_blocks)
        };
        load.unique_blocks += unique;
        self.routed.insert(
            id,
            Routed {
                target,
                prefill_tokens,
                prefill_done: false,
                shared,
                unique,
            },
        );
    }

    /// The request emitted its first token (or terminated) at `now_ms`: its prefill load is
    /// gone.
    pub fn prefill_completed(&mut self, id: u32, now_ms: f64) {
        if let Some(r) = self.routed.get_mut(&id) {
            if !r.prefill_done {
                r.prefill_done = true;
                if r.prefill_tokens > 0 {
                    self.loads[r.target]
                        .prefill
                        .remove(id, r.prefill_tokens, sim_time_ns(now_ms));
                }
            }
        }
    }

    /// The request finished on its target at `now_ms`: stop tracking it. `blocks` are the
    /// content ids it was routed with.
    pub fn free(&mut self, id: u32, blocks: &[u32], now_ms: f64) {
        self.prefill_completed(id, now_ms);
        let Some(r) = self.routed.remove(&id) else {
            return;
        };
        let load = &mut self.loads[r.target];
        load.requests -= 1;
        load.unique_blocks -= r.unique;
        for b in &blocks[..(r.shared as usize).min(blocks.len())] {
            match load.blocks.get(*b) {
                NO_ROW => {}
                1 => {
                    load.blocks.set(*b, NO_ROW);
                    load.distinct_blocks -= 1;
                }
                c => load.blocks.set(*b, c - 1),
            }
        }
    }

    /// Priority key of a queued request (higher pops first), spec §6.5; `overlaps` are its
    /// [`KvRouter::overlaps`] at queueing.
    pub fn queue_key(&self, priority: i32, arrival_s: f64, isl: u32, overlaps: &[u32]) -> f64 {
        let jump = priority.max(0) as f64;
        match self.cfg.router_queue_policy {
            QueuePolicy::Fcfs => jump - arrival_s,
            QueuePolicy::Lcfs => jump + arrival_s,
            QueuePolicy::Wspt => {
                let best =
                    overlaps.iter().copied().max().unwrap_or(0) as u64 * self.block_size as u64;
                let eff = (isl as u64).saturating_sub(best).max(1);
                (1.0 + jump) / eff as f64
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(blocks: &[u32], isl: u32) -> RouteRequest<'_> {
        RouteRequest { blocks, isl }
    }

    #[test]
    fn round_robin_cycles() {
        let mut rr = RoundRobin::default();
        let picks: Vec<_> = (0..5).map(|_| rr.pick(3, 1)).collect();
        assert_eq!(picks, vec![0, 1, 2, 0, 1]);
    }

    #[test]
    fn round_robin_cycles_rank_major_over_dp_ranks() {
        // Two workers of two ranks: targets w0r0 = 0, w0r1 = 1, w1r0 = 2, w1r1 = 3.
        let mut rr = RoundRobin::default();
        let picks: Vec<_> = (0..6).map(|_| rr.pick(2, 2)).collect();
        assert_eq!(picks, vec![0, 2, 1, 3, 0, 2]);
        // Three workers of two ranks: every worker's rank 0 comes before any rank 1.
        let mut rr = RoundRobin::default();
        let picks: Vec<_> = (0..6).map(|_| rr.pick(3, 2)).collect();
        assert_eq!(picks, vec![0, 2, 4, 1, 3, 5]);
        // One worker: its ranks in order.
        let mut rr = RoundRobin::default();
        let picks: Vec<_> = (0..3).map(|_| rr.pick(1, 2)).collect();
        assert_eq!(picks, vec![0, 1, 0]);
    }

    #[test]
    fn kv_router_prefers_cached_target() {
        let cfg = RouterConfig::default();
        let mut r = KvRouter::new(&cfg, 3, 64, Some(8192), 7);
        for h in [1u32, 2, 3] {
            r.apply_event(2, KvEvent::Stored(h));
        }
        let d = r.route(0, &req(&[1, 2, 3, 4], 300), 0.0);
        assert_eq!(d.target, 2);
        assert_eq!(d.overlap_tokens, 192);
        // Load now sits on target 2; a request with no overlap avoids it.
        let d2 = r.route(1, &req(&[9, 8, 7, 6], 300), 0.0);
        assert_ne!(d2.target, 2);
        r.free(0, &[1, 2, 3, 4], 1.0);
        r.free(1, &[9, 8, 7, 6], 1.0);
        assert!(r
            .loads
            .iter()
            .all(|l| l.requests == 0 && l.prefill.full_tokens() == 0));
        assert!(r
            .loads
            .iter()
            .all(|l| l.blocks.is_empty() && l.distinct_blocks == 0 && l.unique_blocks == 0));
    }

    #[test]
    fn ties_are_seeded() {
        let cfg = RouterConfig::default();
        let picks = |seed| {
            let mut r = KvRouter::new(&cfg, 4, 64, Some(8192), seed);
            (0..8)
                .map(|i| {
                    let d = r.route(i, &req(&[], 10), 0.0);
                    r.free(i, &[], 0.0);
                    d.target
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(picks(1), picks(1));
        assert!((0..20).any(|s| picks(s) != picks(1)));
    }

    #[test]
    fn removed_events_clear_the_index() {
        let cfg = RouterConfig::default();
        let mut r = KvRouter::new(&cfg, 70, 64, None, 1);
        r.apply_event(65, KvEvent::Stored(5));
        r.compute_overlaps(&[5]);
        assert_eq!(r.scratch_overlap[65], 1);
        r.apply_event(65, KvEvent::Removed(5));
        assert!(r.index.is_empty());
    }
}
