//! Multi-token prediction bursts (DynoSim's `aic_nextn`): how many tokens a sequence emits in
//! one decode pass. Each of the `nextn` drafted tokens is accepted, in order, with its
//! conditional rate; the first rejection ends the burst, which is the verified token plus the
//! accepted drafts, at most the tokens the sequence may still generate. One generator per
//! scheduler, drawn in the order the pass visits its sequences, as DynoSim's: a Bernoulli draw
//! per rate tried (`Rng::random_bool`, one 64-bit word each) from ChaCha12 seeded with
//! `seed_from_u64(aic_mtp_seed + i)`, i the scheduler's index in its pool (worker index × DP
//! ranks + rank).

use crate::config::{EngineArgs, Mtp, WorkerType};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha12Rng;

#[derive(Debug, Clone)]
pub(crate) struct BurstSampler {
    rates: Vec<f64>,
    rng: ChaCha12Rng,
}

impl BurstSampler {
    pub(crate) fn new(mtp: &Mtp, rank_index: u64) -> Self {
        BurstSampler {
            rates: mtp.accept_rates.clone(),
            rng: ChaCha12Rng::seed_from_u64(mtp.seed.wrapping_add(rank_index)),
        }
    }

    /// The sampler of the scheduler number `rank_index` of a pool of `args`, when they turn
    /// multi-token prediction on.
    pub(crate) fn of(args: &EngineArgs, rank_index: u64) -> Option<Self> {
        args.mtp.as_ref().map(|m| Self::new(m, rank_index))
    }

    /// The most tokens a sequence of a pool of `args` may emit in one pass: `aic_nextn + 1`
    /// under multi-token prediction, one without it and on a prefill worker.
    pub(crate) fn max_burst(args: &EngineArgs) -> u32 {
        match &args.mtp {
            Some(m) if args.worker_type != WorkerType::Prefill => m.nextn + 1,
            _ => 1,
        }
    }

    /// Tokens a sequence that may still generate `remaining` emits this pass: a burst drawn from
    /// `sampler`, or one without prediction and on a prefill worker (`prefill`), whose token is
    /// the prompt's.
    pub(crate) fn tokens(sampler: &mut Option<Self>, prefill: bool, remaining: u32) -> u32 {
        match sampler {
            Some(s) if !prefill => s.burst(remaining),
            _ => remaining.min(1),
        }
    }

    /// Tokens emitted by a sequence that may still generate `remaining` (0 when none).
    pub(crate) fn burst(&mut self, remaining: u32) -> u32 {
        if remaining == 0 {
            return 0;
        }
        let mut n = 1u32;
        for &rate in &self.rates {
            if !self.rng.random_bool(rate) {
                break;
            }
            n += 1;
        }
        n.min(remaining)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sampler(rates: &[f64], seed: u64) -> BurstSampler {
        BurstSampler::new(
            &Mtp {
                nextn: rates.len() as u32,
                accept_rates: rates.to_vec(),
                seed,
            },
            0,
        )
    }

    #[test]
    fn certain_rates_give_exact_bursts() {
        assert_eq!(sampler(&[0.0, 1.0], 1).burst(10), 1);
        assert_eq!(sampler(&[1.0, 1.0], 1).burst(10), 3);
        assert_eq!(sampler(&[1.0, 0.0, 1.0], 1).burst(10), 2);
        let mut s = sampler(&[1.0, 1.0], 1);
        assert_eq!(s.burst(2), 2);
        assert_eq!(s.burst(0), 0);
    }

    #[test]
    fn mean_burst_is_the_conditional_expectation() {
        let mut s = sampler(&[0.7, 0.5, 0.2], 42);
        let n = 200_000;
        let mean = (0..n).map(|_| s.burst(10) as f64).sum::<f64>() / n as f64;
        let expected = 1.0 + 0.7 + 0.7 * 0.5 + 0.7 * 0.5 * 0.2;
        assert!(
            (mean - expected).abs() < 0.01,
            "mean {mean}, expected {expected}"
        );
    }

    #[test]
    fn workers_draw_different_streams_from_one_seed() {
        let mtp = Mtp {
            nextn: 3,
            accept_rates: vec![0.8, 0.6, 0.4],
            seed: 42,
        };
        let draw = |w| {
            let mut s = BurstSampler::new(&mtp, w);
            (0..100).map(|_| s.burst(10)).collect::<Vec<_>>()
        };
        assert_eq!(draw(0), draw(0));
        assert_ne!(draw(0), draw(1));
    }
}
