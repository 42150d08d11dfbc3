//! One router target's active prefill load (spec §6.2): the effective prompt tokens
//! (`isl − cached`) of the requests routed there whose prefill has not completed.
//!
//! Without a load model the load is that sum. With DynoSim's AIC load model
//! (`router_prefill_load_model: "aic"` and the `--aic-*` flags) every routed request also carries
//! AIConfigurator's predicted prefill duration (batch 1, its uncached tokens after its cached
//! prefix), and the load decays linearly in simulated time, as DynoSim 1.4.2's tracker does:
//! * the clock is the oldest active prefill: its decay starts when it becomes the oldest;
//! * when every active prefill has a prediction, the tokens completed since then
//!   (`tokens × elapsed / predicted`, of the oldest) come off the whole backlog (work spills over
//!   into later requests), clipped at zero;
//! * when some request has no prediction (AIC failed for it), only the oldest request's own
//!   remaining fraction decays (rounded up);
//! * a request that completes out of order while it has a prediction pushes the oldest's start
//!   forward by its predicted duration (never past now); when the oldest completes, the next
//!   oldest starts its decay now.
//!
//! Owns: that bookkeeping. Does not own: routing costs (`router`), the predicted durations
//! (`crate::timing::aic::PrefillLoadEstimator`, over the AIC engine shared with AIC timing).

use std::collections::VecDeque;
use std::time::Duration;

/// Simulated time as DynoSim's router sees it: `now_ms` turned into a `Duration` since the start,
/// in nanoseconds (its decay arithmetic is on those).
pub fn sim_time_ns(now_ms: f64) -> u64 {
    Duration::try_from_secs_f64(now_ms.max(0.0) / 1000.0)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(u64::MAX)
}

fn secs(ns: u64) -> f64 {
    Duration::from_nanos(ns).as_secs_f64()
}

#[derive(Debug, Clone, Copy)]
struct Prefill {
    request: u32,
    tokens: u64,
    predicted_ns: Option<u64>,
}

/// The active prefill load of one target.
#[derive(Debug, Clone, Default)]
pub struct PrefillLoad {
    /// Σ effective prefill tokens of the active prefills.
    tokens: u64,
    /// With a load model: the active prefills, oldest first (without one, only `tokens` is kept).
    order: VecDeque<Prefill>,
    /// Entries of `order` without a predicted duration.
    unmodeled: usize,
    /// When the oldest entry's decay started, in simulated nanoseconds.
    anchor_ns: u64,
}

impl PrefillLoad {
    /// Starts tracking `tokens` (> 0) of `request`. `predicted_ns` is `Some` with a load model:
    /// the prediction, or `None` when it failed.
    pub fn add(
        &mut self,
        request: u32,
        tokens: u64,
        predicted_ns: Option<Option<u64>>,
        now_ns: u64,
    ) {
        self.tokens += tokens;
        let Some(predicted_ns) = predicted_ns else {
            return;
        };
        if predicted_ns.is_none() {
            self.unmodeled += 1;
        }
        if self.order.is_empty() {
            self.anchor_ns = now_ns;
        }
        self.order.push_back(Prefill {
            request,
            tokens,
            predicted_ns,
        });
    }

    /// The prefill of `request` (which added `tokens`) completed or the request ended.
    pub fn remove(&mut self, request: u32, tokens: u64, now_ns: u64) {
        self.tokens -= tokens;
        let Some(pos) = self.order.iter().position(|p| p.request == request) else {
            return;
        };
        let p = self.order.remove(pos).expect("position is in range");
        if p.predicted_ns.is_none() {
            self.unmodeled -= 1;
        }
        if pos == 0 {
            self.anchor_ns = now_ns;
        } else if let Some(d) = p.predicted_ns {
            self.anchor_ns = self.anchor_ns.saturating_add(d).min(now_ns);
        }
    }

    /// The load at `now_ns`.
    pub fn active_tokens(&self, now_ns: u64) -> u64 {
        let Some(oldest) = self.order.front() else {
            return self.tokens;
        };
        let elapsed = now_ns.saturating_sub(self.anchor_ns);
        if self.unmodeled > 0 {
            let remaining = match oldest.predicted_ns {
                None => oldest.tokens,
                Some(0) => 0,
                Some(d) => {
                    let left = (1.0 - secs(elapsed) / secs(d)).clamp(0.0, 1.0);
                    (oldest.tokens as f64 * left).ceil() as u64
                }
            };
            return self.tokens - oldest.tokens + remaining;
        }
        let d = oldest.predicted_ns.unwrap_or(0);
        let completed = if d == 0 {
            oldest.tokens
        } else {
            (oldest.tokens as u128 * elapsed as u128 / d as u128).min(u64::MAX as u128) as u64
        };
        self.tokens.saturating_sub(completed)
    }

    #[cfg(test)]
    /// Σ of the tracked tokens, without decay.
    pub fn full_tokens(&self) -> u64 {
        self.tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn without_a_model_the_load_is_the_sum() {
        let mut l = PrefillLoad::default();
        l.add(1, 100, None, 0);
        l.add(2, 50, None, 0);
        assert_eq!(l.active_tokens(10_000 * MS), 150);
        l.remove(1, 100, 5);
        assert_eq!(l.active_tokens(0), 50);
    }

    #[test]
    fn the_oldest_decays_and_spills_over_when_all_are_modelled() {
        let mut l = PrefillLoad::default();
        l.add(1, 100, Some(Some(10 * MS)), 0);
        l.add(2, 100, Some(Some(10 * MS)), 4 * MS);
        // 5 ms of the oldest's 10: half its tokens done.
        assert_eq!(l.active_tokens(5 * MS), 150);
        // 15 ms: 150 of its tokens "done", spilling into the second request.
        assert_eq!(l.active_tokens(15 * MS), 50);
        assert_eq!(l.active_tokens(40 * MS), 0);
        // The oldest completes at 12 ms: the next one decays from then.
        l.remove(1, 100, 12 * MS);
        assert_eq!(l.active_tokens(12 * MS), 100);
        assert_eq!(l.active_tokens(17 * MS), 50);
    }

    #[test]
    fn an_unmodelled_request_limits_decay_to_the_oldest() {
        let mut l = PrefillLoad::default();
        l.add(1, 100, Some(Some(10 * MS)), 0);
        l.add(2, 100, Some(None), 0);
        assert_eq!(l.active_tokens(3 * MS), 170);
        assert_eq!(l.active_tokens(30 * MS), 100);
        // Rounded up, as DynoSim does.
        assert_eq!(l.active_tokens(3 * MS + 1), 170);
    }

    #[test]
    fn an_out_of_order_completion_moves_the_anchor_forward() {
        let mut l = PrefillLoad::default();
        l.add(1, 100, Some(Some(10 * MS)), 0);
        l.add(2, 100, Some(Some(4 * MS)), 0);
        l.add(3, 100, Some(Some(4 * MS)), 0);
        // Request 2 completes at 6 ms: the anchor moves from 0 to min(0 + 4, 6) = 4 ms.
        l.remove(2, 100, 6 * MS);
        assert_eq!(l.active_tokens(9 * MS), 200 - 50);
        // Capped at now.
        l.remove(3, 100, 5 * MS);
        assert_eq!(l.active_tokens(5 * MS), 100);
        l.remove(1, 100, 20 * MS);
        assert_eq!(l.active_tokens(20 * MS), 0);
        assert!(l.order.is_empty() && l.unmodeled == 0);
    }

    #[test]
    fn time_is_turned_into_nanoseconds_like_a_duration() {
        assert_eq!(sim_time_ns(1.5), 1_500_000);
        assert_eq!(sim_time_ns(-3.0), 0);
        assert_eq!(sim_time_ns(f64::NAN), 0);
    }
}
