//! A worker's own assignment of requests to its DP ranks (`dp_rank_routing: "engine"`): the
//! pool's round robin picks only the worker, and the worker places the request on one of its
//! ranks as its engine does when it serves alone (no Dynamo router naming the rank):
//!
//! * TRT-LLM's attention-DP router: the request goes to a rank below the expected number of
//!   active requests per rank, max(⌈(active + 1) / ranks⌉, the most any rank has), the one with
//!   the fewest active prompt tokens, then the fewest active requests, then the lowest index.
//!   While every rank holds `max_num_seqs` requests it waits unassigned, in arrival order, for
//!   the first rank to free one (TRT-LLM fetches no more than the ranks can take).
//! * vLLM's data-parallel load balancer: the rank with the lowest 4 × waiting + running
//!   requests, the lowest index on a tie (it reads the current counts; vLLM's lag by up to a
//!   stats interval).
//! * SGLang's data-parallel controller: round robin over the ranks (its default).
//!
//! Owns the per-rank counts; the simulation reports dispatches and releases.

use crate::config::EngineType;
use std::collections::VecDeque;

/// Which engine's rule places requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    Trtllm,
    Vllm,
    RoundRobin,
}

/// One pool's rank assignment state: targets are `worker × ranks + rank`, as the pool's.
#[derive(Debug)]
pub(super) struct EngineDpRouting {
    rule: Rule,
    ranks: u32,
    /// Requests a rank holds at most (TRT-LLM's hold), `None` = no limit.
    max_per_rank: Option<u32>,
    /// The pool's worker rotation (the frontend's round robin over workers).
    next_worker: u32,
    /// Per target: requests placed and not yet released, and their prompt tokens.
    active: Vec<u32>,
    tokens: Vec<u64>,
    /// Per worker: the next rank of its round robin (SGLang).
    next_rank: Vec<u32>,
    /// Per worker: requests waiting for a rank with room, in arrival order (TRT-LLM).
    held: Vec<VecDeque<u32>>,
}

impl EngineDpRouting {
    pub(super) fn new(
        engine: EngineType,
        workers: u32,
        ranks: u32,
        max_num_seqs: Option<u64>,
    ) -> Self {
        let rule = match engine {
            EngineType::Trtllm => Rule::Trtllm,
            EngineType::Vllm => Rule::Vllm,
            EngineType::Sglang => Rule::RoundRobin,
        };
        let targets = (workers * ranks) as usize;
        EngineDpRouting {
            rule,
            ranks,
            max_per_rank: match rule {
                Rule::Trtllm => max_num_seqs.map(|n| n.min(u64::from(u32::MAX)) as u32),
                _ => None,
            },
            next_worker: 0,
            active: vec![0; targets],
            tokens: vec![0; targets],
            next_rank: vec![0; workers as usize],
            held: vec![VecDeque::new(); workers as usize],
        }
    }

    /// The worker the next arrival goes to (round robin over `workers`).
    pub(super) fn next_worker(&mut self, workers: u32) -> u32 {
        let w = self.next_worker % workers;
        self.next_worker = (w + 1) % workers;
        w
    }

    fn targets(&self, worker: u32) -> std::ops::Range<usize> {
        let first = (worker * self.ranks) as usize;
        first..first + self.ranks as usize
    }

    /// The rank of `worker` a request goes to now, or `None` when it must wait (every rank
    /// full). `waiting(rank)`: the requests queued in that rank's scheduler (vLLM's rule).
    pub(super) fn pick(&mut self, worker: u32, waiting: impl Fn(u32) -> usize) -> Option<u32> {
        let range = self.targets(worker);
        let active = &self.active[range.clone()];
        match self.rule {
            Rule::Trtllm => {
                let cap = self.max_per_rank.unwrap_or(u32::MAX);
                let total: u64 = active.iter().map(|&a| u64::from(a)).sum();
                let most = active.iter().copied().max().unwrap_or(0);
                let expected = (total + 1)
                    .div_ceil(u64::from(self.ranks))
                    .max(u64::from(most))
                    .min(u64::from(cap));
                let tokens = &self.tokens[range];
                (0..self.ranks)
                    .filter(|&r| u64::from(active[r as usize]) < expected)
                    .min_by_key(|&r| (tokens[r as usize], active[r as usize], r))
            }
            Rule::Vllm => (0..self.ranks).min_by_key(|&r| {
                let a = active[r as usize] as usize;
                let w = waiting(r).min(a);
                (4 * w + (a - w), r)
            }),
            Rule::RoundRobin => {
                let next = &mut self.next_rank[worker as usize];
                let r = *next % self.ranks;
                *next = (r + 1) % self.ranks;
                Some(r)
            }
        }
    }

    /// Parks a request on `worker` until one of its ranks has room.
    pub(super) fn hold(&mut self, worker: u32, req: u32) {
        self.held[worker as usize].push_back(req);
    }

    /// The oldest request parked on `worker`, if any.
    pub(super) fn next_held(&mut self, worker: u32) -> Option<u32> {
        self.held[worker as usize].pop_front()
    }

    /// The oldest request parked on `worker`, left parked.
    pub(super) fn first_held(&self, worker: u32) -> Option<u32> {
        self.held[worker as usize].front().copied()
    }

    /// Requests parked on any worker.
    pub(super) fn num_held(&self) -> usize {
        self.held.iter().map(VecDeque::len).sum()
    }

    /// A request of `isl` prompt tokens placed on `target`.
    pub(super) fn placed(&mut self, target: u32, isl: u32) {
        self.active[target as usize] += 1;
        self.tokens[target as usize] += u64::from(isl);
    }

    /// A request of `isl` prompt tokens left `target` (finished or rejected).
    pub(super) fn released(&mut self, target: u32, isl: u32) {
        let t = target as usize;
        self.active[t] = self.active[t].saturating_sub(1);
        self.tokens[t] = self.tokens[t].saturating_sub(u64::from(isl));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_waiting(_: u32) -> usize {
        0
    }

    #[test]
    fn trtllm_fills_the_rank_that_freed_a_slot() {
        // Four ranks of 2 requests each; rank 2 finishes one: the next goes back there, even
        // though another rank holds fewer prompt tokens.
        let mut d = EngineDpRouting::new(EngineType::Trtllm, 1, 4, Some(2));
        for (r, isl) in [
            (0, 100),
            (0, 100),
            (1, 10),
            (1, 10),
            (2, 500),
            (2, 500),
            (3, 50),
        ] {
            d.placed(r, isl);
        }
        d.placed(3, 50);
        d.released(2, 500);
        assert_eq!(d.pick(0, no_waiting), Some(2));
        d.placed(2, 800);
        // Every rank full: the next request waits.
        assert_eq!(d.pick(0, no_waiting), None);
    }

    #[test]
    fn trtllm_prefers_fewer_prompt_tokens_among_ranks_below_the_average() {
        let mut d = EngineDpRouting::new(EngineType::Trtllm, 1, 3, Some(8));
        d.placed(0, 300);
        d.placed(1, 100);
        // Expected per rank: max(ceil(3 / 3), 1) = 1; only rank 2 is below it.
        assert_eq!(d.pick(0, no_waiting), Some(2));
        d.placed(2, 900);
        // All at 1: expected 2, every rank eligible; rank 1 has the fewest tokens.
        assert_eq!(d.pick(0, no_waiting), Some(1));
        // From empty ranks, ties go to the lowest index.
        let mut e = EngineDpRouting::new(EngineType::Trtllm, 2, 2, None);
        assert_eq!(e.pick(1, no_waiting), Some(0));
    }

    #[test]
    fn vllm_weighs_waiting_requests_four_times() {
        let mut d = EngineDpRouting::new(EngineType::Vllm, 1, 2, Some(1));
        for _ in 0..3 {
            d.placed(0, 10);
        }
        d.placed(1, 10);
        // Rank 0: 3 running (score 3); rank 1: 1 waiting (score 4).
        assert_eq!(d.pick(0, |r| if r == 1 { 1 } else { 0 }), Some(0));
        // No limit on a rank: vLLM queues in the engine.
        assert_eq!(d.pick(0, no_waiting), Some(1));
    }

    #[test]
    fn sglang_rotates_within_each_worker_and_workers_rotate() {
        let mut d = EngineDpRouting::new(EngineType::Sglang, 2, 3, Some(1));
        assert_eq!(d.next_worker(2), 0);
        assert_eq!(d.next_worker(2), 1);
        assert_eq!(d.next_worker(2), 0);
        let picks: Vec<_> = (0..4).map(|_| d.pick(1, no_waiting)).collect();
        assert_eq!(picks, [Some(0), Some(1), Some(2), Some(0)]);
        assert_eq!(d.pick(0, no_waiting), Some(0));
    }

    #[test]
    fn held_requests_leave_in_arrival_order() {
        let mut d = EngineDpRouting::new(EngineType::Trtllm, 2, 1, Some(1));
        d.hold(1, 7);
        d.hold(1, 3);
        assert_eq!((d.first_held(1), d.first_held(0)), (Some(7), None));
        assert_eq!(d.num_held(), 2);
        assert_eq!(d.next_held(1), Some(7));
        assert_eq!(d.next_held(1), Some(3));
        assert_eq!(d.next_held(1), None);
    }
}
