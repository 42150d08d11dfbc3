//! TRT-LLM's attention-DP balancing (`trtllm.attention_dp_enable_balance`): before each pass of
//! a worker with several attention-DP ranks, the ranks' would-be schedules are compared and new
//! prompts are held back on every rank unless all of them can take one at once. Owns the
//! per-worker counters and the decision; the engines only report what they would schedule
//! ([`AdpDemand`]) and obey the hold.

use crate::config::AdpBalance;
use crate::engine::vllm::AdpDemand;

/// One worker's balancing state: the setting and TRT-LLM's two counters.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Balancer {
    cfg: AdpBalance,
    /// Passes since prompts last joined without every rank having one.
    waiting: u32,
    /// Passes held, while every rank has a prompt and decodes, to let more accumulate.
    batching: u32,
}

impl Balancer {
    /// The balancer of a worker with `ranks` DP ranks: active only for more than one rank.
    pub(super) fn new(cfg: AdpBalance, ranks: u32) -> Self {
        let cfg = if ranks > 1 {
            cfg
        } else {
            AdpBalance::default()
        };
        Balancer {
            cfg,
            waiting: 0,
            batching: 0,
        }
    }

    pub(super) fn is_on(&self) -> bool {
        !self.cfg.is_off()
    }

    /// Whether the coming pass holds every rank's prompts back, given what each rank would
    /// schedule. As TRT-LLM: prompts join when every rank has one and room for it (after
    /// `batching_wait_iters` more passes while every rank also decodes); otherwise they wait,
    /// counting passes, and join once `timeout_iters` passes have counted or when some rank has
    /// nothing to decode. The count runs on passes where no rank has a prompt too.
    pub(super) fn holds(&mut self, demands: impl Iterator<Item = AdpDemand> + Clone) -> bool {
        if !self.is_on() {
            return false;
        }
        let all = |f: fn(&AdpDemand) -> bool| demands.clone().all(|d| f(&d));
        let every_rank_decodes = all(|d| d.decoding > 0);
        if all(|d| d.free_slot) && all(|d| d.context) {
            self.waiting = 0;
            if every_rank_decodes {
                if self.batching < self.cfg.batching_wait_iters {
                    self.batching += 1;
                    return true;
                }
                self.batching = 0;
            }
            return false;
        }
        self.waiting += 1;
        if self.waiting >= self.cfg.timeout_iters || !every_rank_decodes {
            self.waiting = 0;
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demand(context: bool, decoding: u32) -> AdpDemand {
        AdpDemand {
            context,
            decoding,
            free_slot: true,
        }
    }

    fn enabled(timeout: u32, batching: u32) -> AdpBalance {
        AdpBalance {
            enabled: true,
            timeout_iters: timeout,
            batching_wait_iters: batching,
        }
    }

    fn balancer(timeout: u32, batching: u32) -> Balancer {
        Balancer::new(enabled(timeout, batching), 2)
    }

    #[test]
    fn a_prompt_on_one_rank_waits_until_the_timeout() {
        let mut b = balancer(3, 0);
        let one = [demand(true, 4), demand(false, 4)];
        // Held twice, released on the third pass (count reaches 3), then the count restarts.
        assert!(b.holds(one.iter().copied()));
        assert!(b.holds(one.iter().copied()));
        assert!(!b.holds(one.iter().copied()));
        assert!(b.holds(one.iter().copied()));
    }

    #[test]
    fn prompts_on_every_rank_join_at_once_and_reset_the_count() {
        let mut b = balancer(3, 0);
        assert!(b.holds([demand(true, 4), demand(false, 4)].into_iter()));
        assert!(!b.holds([demand(true, 4), demand(true, 4)].into_iter()));
        // The count restarted: two more holds before the timeout.
        assert!(b.holds([demand(true, 4), demand(false, 4)].into_iter()));
        assert!(b.holds([demand(true, 4), demand(false, 4)].into_iter()));
        assert!(!b.holds([demand(true, 4), demand(false, 4)].into_iter()));
    }

    #[test]
    fn passes_without_prompts_count_toward_the_timeout() {
        let mut b = balancer(3, 0);
        let none = [demand(false, 4), demand(false, 4)];
        assert!(b.holds(none.iter().copied()));
        assert!(b.holds(none.iter().copied()));
        // The third pass reaches the count: a prompt arriving now joins at once.
        assert!(!b.holds([demand(true, 4), demand(false, 4)].into_iter()));
    }

    #[test]
    fn a_rank_with_nothing_to_decode_never_waits() {
        let mut b = balancer(60, 10);
        assert!(!b.holds([demand(true, 0), demand(false, 4)].into_iter()));
        // Every rank has a prompt but one decodes nothing: no batching wait either.
        assert!(!b.holds([demand(true, 0), demand(true, 4)].into_iter()));
    }

    #[test]
    fn batching_wait_holds_full_rounds_while_every_rank_decodes() {
        let mut b = balancer(60, 2);
        let all = [demand(true, 4), demand(true, 4)];
        assert!(b.holds(all.iter().copied()));
        assert!(b.holds(all.iter().copied()));
        assert!(!b.holds(all.iter().copied()));
        assert!(b.holds(all.iter().copied()));
    }

    #[test]
    fn a_full_rank_blocks_the_joint_admission() {
        let mut b = balancer(2, 0);
        let full = AdpDemand {
            context: true,
            decoding: 8,
            free_slot: false,
        };
        assert!(b.holds([full, demand(true, 4)].into_iter()));
        assert!(!b.holds([full, demand(true, 4)].into_iter()));
    }

    #[test]
    fn off_or_one_rank_never_holds() {
        let mut off = Balancer::new(AdpBalance::default(), 8);
        assert!(!off.holds([demand(true, 4), demand(false, 4)].into_iter()));
        let mut single = Balancer::new(enabled(60, 0), 1);
        assert!(!single.is_on());
        assert!(!single.holds([demand(true, 4)].into_iter()));
    }
}
