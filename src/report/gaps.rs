//! Pooled per-token gaps across all completed requests (DynoSim 1.4.2 ITL semantics, spec §8.3;
//! requests still in flight at a time cap contribute none): every
//! consecutive pair of emitted tokens contributes one gap to the `*_itl_ms` distribution, and each
//! positive gap contributes `1000 / gap` tokens/s to `*_output_token_throughput_per_user`.
//! Both are streamed into a DDSketch (percentiles) plus exact fixed-point moments (mean/std) plus
//! exact min/max — all independent of the order gaps arrive in — so
//! memory stays bounded however many tokens a run emits, and `count` equal gaps cost one step.
//!
//! Zero gaps (tokens emitted at the same virtual instant) are counted in the ITL distribution
//! (as 0 ms) and skipped in the per-user throughput, which only takes positive gaps.

use super::sketch::DdSketch;
use super::stats::{ExactMoments, Summary, PERCENTILES};

/// One streamed distribution: sketch + exact moments + exact extremes.
#[derive(Debug, Clone, PartialEq)]
struct Streamed {
    sketch: DdSketch,
    moments: ExactMoments,
    min: f64,
    max: f64,
}

impl Default for Streamed {
    fn default() -> Self {
        Streamed {
            sketch: DdSketch::default(),
            moments: ExactMoments::new(),
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }
}

impl Streamed {
    #[inline]
    fn add(&mut self, v: f64, count: u64) {
        if count == 0 {
            return;
        }
        self.sketch.add_n(v, count);
        self.moments.add_n(v, count);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    fn merge(&mut self, other: &Streamed) {
        self.sketch.merge(&other.sketch);
        self.moments.merge(&other.moments);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    fn summary(&self) -> Summary {
        if self.moments.count() == 0 {
            return Summary::default();
        }
        // Equal samples: exactly that value and no spread, as a floating-point Welford (DynoSim's)
        // gives, where the fixed-point sums would leave their rounding.
        let (mean, std) = if self.min == self.max {
            (self.min, 0.0)
        } else {
            (self.moments.mean(), self.moments.std())
        };
        let mut s = Summary {
            mean,
            min: self.min,
            max: self.max,
            std,
            ..Summary::default()
        };
        for (name, p) in PERCENTILES {
            let v = self.sketch.percentile(p);
            match name {
                "median" => s.median = v,
                "p75" => s.p75 = v,
                "p90" => s.p90 = v,
                "p95" => s.p95 = v,
                _ => s.p99 = v,
            }
        }
        s
    }
}

/// Streaming accumulator of pooled per-token gaps (ms). Mergeable, so per-worker or per-thread
/// accumulators can be combined.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TokenGaps {
    itl: Streamed,
    per_user: Streamed,
}

impl TokenGaps {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `count` gaps of `gap_ms` each (O(1) whatever `count` is).
    pub fn add(&mut self, gap_ms: f64, count: u64) {
        debug_assert!(gap_ms >= 0.0, "negative token gap {gap_ms}");
        self.itl.add(gap_ms, count);
        if gap_ms > 0.0 {
            self.per_user.add(1000.0 / gap_ms, count);
        }
    }

    pub fn merge(&mut self, other: &TokenGaps) {
        self.itl.merge(&other.itl);
        self.per_user.merge(&other.per_user);
    }

    /// Number of gaps recorded (including zero gaps).
    pub fn count(&self) -> u64 {
        self.itl.moments.count()
    }

    /// Summary for `*_itl_ms` (min and max exact, percentiles from the sketch).
    pub fn itl_summary(&self) -> Summary {
        self.itl.summary()
    }

    /// Summary for `*_output_token_throughput_per_user` (tokens/s over positive gaps).
    pub fn per_user_throughput_summary(&self) -> Summary {
        self.per_user.summary()
    }
}

/// Tally of gaps by exact value, in front of a [`TokenGaps`], which does not depend on the order
/// or grouping of what it is given. A run of equal gaps (tokens of one pass share a gap) is
/// always counted once. Beyond that, two regimes:
/// - few distinct values (polynomial timing: strides repeat the same pass durations): equal
///   values are counted in a map and added once, in ascending order so that the sketches' key
///   memos hit. Bounded: past `MAX_DISTINCT` values the map is flushed.
/// - nearly all values distinct (AIC timing interpolates every pass): the map would only cost;
///   values go straight through, in arrival order, where consecutive gaps are close together.
///
/// The tally starts with the map and looks at each window of `WINDOW` values: when more than
/// three quarters of them were new to the map, it flushes the map and goes straight for the
/// rest of the run.
#[derive(Debug, Clone, Default)]
pub struct GapTally {
    counts: rustc_hash::FxHashMap<u64, u64>,
    /// The most recent value and its count, before the map (most gaps repeat the last one).
    last: u64,
    last_count: u64,
    /// Values go straight to the [`TokenGaps`].
    direct: bool,
    /// Values tallied in the current window, and the map's size when it began.
    window_values: u32,
    window_start_len: usize,
    /// Scratch for a flush in ascending order.
    drained: Vec<(u64, u64)>,
}

impl GapTally {
    const MAX_DISTINCT: usize = 1 << 16;
    const WINDOW: u32 = 4096;

    pub fn new() -> Self {
        Self::default()
    }

    /// Records `count` gaps of `gap_ms` each.
    #[inline]
    pub fn add(&mut self, gap_ms: f64, count: u64, into: &mut TokenGaps) {
        let bits = gap_ms.to_bits();
        if bits == self.last {
            self.last_count += count;
            return;
        }
        if self.last_count > 0 {
            self.push(self.last, self.last_count, into);
        }
        self.last = bits;
        self.last_count = count;
    }

    #[inline]
    fn push(&mut self, bits: u64, count: u64, into: &mut TokenGaps) {
        if self.direct {
            into.add(f64::from_bits(bits), count);
        } else {
            self.count_value(bits, count, into);
        }
    }

    /// Out of line: the map's code stays out of the simulation's per-token paths.
    #[inline(never)]
    fn count_value(&mut self, bits: u64, count: u64, into: &mut TokenGaps) {
        *self.counts.entry(bits).or_insert(0) += count;
        self.window_values += 1;
        if self.window_values == Self::WINDOW {
            let new = self.counts.len() - self.window_start_len;
            if new > Self::WINDOW as usize * 3 / 4 {
                self.direct = true;
                self.flush_map(into);
            }
            self.window_values = 0;
            self.window_start_len = self.counts.len();
        }
        if self.counts.len() >= Self::MAX_DISTINCT {
            self.flush_map(into);
            self.window_start_len = 0;
        }
    }

    fn flush_map(&mut self, into: &mut TokenGaps) {
        // Any order gives the same `TokenGaps` (see its docs); ascending bits (ascending values,
        // gaps being non-negative) keeps neighbouring values together for the key memos.
        self.drained.extend(self.counts.drain());
        self.drained.sort_unstable_by_key(|&(bits, _)| bits);
        for &(bits, n) in &self.drained {
            into.add(f64::from_bits(bits), n);
        }
        self.drained.clear();
    }

    /// Adds everything tallied to `into`.
    pub fn flush(&mut self, into: &mut TokenGaps) {
        if self.last_count > 0 {
            let (bits, count) = (self.last, self.last_count);
            self.last_count = 0;
            self.push(bits, count, into);
        }
        self.flush_map(into);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn itl_example_gaps() {
        // Tokens at 10, 11, 12, 110 ms: gaps 1, 1, 98.
        let mut g = TokenGaps::new();
        g.add(1.0, 2);
        g.add(98.0, 1);
        assert_eq!(g.count(), 3);
        let itl = g.itl_summary();
        assert_eq!(itl.max, 98.0);
        assert_eq!(itl.min, 1.0);
        assert!(close(itl.mean, 100.0 / 3.0, 1e-12));
        // population std of {1, 1, 98}
        let m = 100.0 / 3.0;
        let sd = ((2.0 * (1.0 - m) * (1.0 - m) + (98.0 - m) * (98.0 - m)) / 3.0f64).sqrt();
        assert!(close(itl.std, sd, 1e-12));
        assert!(close(itl.median, 1.0, 1.000_001e-3));
        assert!(close(itl.p99, 98.0, 1.000_001e-3));
        let thr = g.per_user_throughput_summary();
        assert_eq!(thr.min, 1000.0 / 98.0);
        assert_eq!(thr.max, 1000.0);
        assert!(close(thr.median, 1000.0, 1.000_001e-3));
        assert!(close(thr.mean, (2000.0 + 1000.0 / 98.0) / 3.0, 1e-12));
    }

    #[test]
    fn zero_gaps_count_in_itl_not_in_throughput() {
        let mut g = TokenGaps::new();
        g.add(0.0, 4);
        g.add(10.0, 1);
        g.add(7.0, 0);
        let itl = g.itl_summary();
        assert_eq!(g.count(), 5);
        assert_eq!(itl.min, 0.0);
        assert_eq!(itl.median, 0.0);
        assert_eq!(itl.mean, 2.0);
        let thr = g.per_user_throughput_summary();
        assert_eq!(thr.min, 100.0);
        assert_eq!(thr.max, 100.0);
        assert_eq!(thr.std, 0.0);
    }

    #[test]
    fn empty_is_all_zeros_and_merge_combines() {
        let g = TokenGaps::new();
        assert_eq!(g.itl_summary(), Summary::default());
        assert_eq!(g.per_user_throughput_summary(), Summary::default());

        let mut a = TokenGaps::new();
        let mut b = TokenGaps::new();
        let mut whole = TokenGaps::new();
        for i in 1..=40u32 {
            let gap = f64::from(i % 7) * 1.5 + 3.0;
            whole.add(gap, u64::from(i));
            if i % 2 == 0 {
                a.add(gap, u64::from(i))
            } else {
                b.add(gap, u64::from(i))
            }
        }
        a.merge(&b);
        a.merge(&TokenGaps::new());
        let (x, y) = (a.itl_summary(), whole.itl_summary());
        assert_eq!(
            (x.min, x.max, x.median, x.p99),
            (y.min, y.max, y.median, y.p99)
        );
        assert!(close(x.mean, y.mean, 1e-12) && close(x.std, y.std, 1e-9));
        assert_eq!(a.count(), whole.count());
    }

    /// Every summary field, bit for bit.
    fn bits(g: &TokenGaps) -> Vec<u64> {
        let (a, b) = (g.itl_summary(), g.per_user_throughput_summary());
        a.entries()
            .iter()
            .chain(b.entries().iter())
            .map(|(_, v)| v.to_bits())
            .chain([g.count()])
            .collect()
    }

    /// Gaps fed through a tally, and the same gaps fed straight in reverse order.
    fn tallied_and_reversed(gaps: &[(f64, u64)]) -> (TokenGaps, TokenGaps, GapTally) {
        let mut via_tally = TokenGaps::new();
        let mut tally = GapTally::new();
        for &(gap, n) in gaps {
            tally.add(gap, n, &mut via_tally);
        }
        tally.flush(&mut via_tally);
        let mut reversed = TokenGaps::new();
        for &(gap, n) in gaps.iter().rev() {
            reversed.add(gap, n);
        }
        (via_tally, reversed, tally)
    }

    #[test]
    fn tally_regimes_give_what_any_order_gives() {
        // Few distinct values, repeated in runs and across them: the map regime.
        let few: Vec<(f64, u64)> = (0..30_000u32)
            .map(|i| (5.75 + f64::from(i * 7 % 13) * 0.125, u64::from(i % 4)))
            .collect();
        let (a, b, tally) = tallied_and_reversed(&few);
        assert!(!tally.direct);
        assert_eq!(bits(&a), bits(&b));
        // Nearly every value distinct (and zero gaps among them): straight through.
        let mut x = 5.0;
        let many: Vec<(f64, u64)> = (0..30_000u32)
            .map(|i| {
                x *= if i % 5 < 3 { 1.000_31 } else { 0.999_7 };
                (if i % 1000 == 0 { 0.0 } else { x }, 1 + u64::from(i % 3))
            })
            .collect();
        let (a, b, tally) = tallied_and_reversed(&many);
        assert!(tally.direct);
        assert_eq!(bits(&a), bits(&b));
        assert_eq!(a.count(), many.iter().map(|g| g.1).sum::<u64>());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// `TokenGaps` is independent of order and grouping (every field, exactly), so the
        /// tally may regroup and reorder as it likes.
        #[test]
        fn order_and_grouping_do_not_change_the_summaries(
            gaps in proptest::collection::vec((0u32..4000, 0u64..5), 1..3000),
            seed in 0u64..1000,
        ) {
            // Gaps on a coarse grid (so values repeat) spread over five decades, and zeros.
            let gaps: Vec<(f64, u64)> = gaps
                .into_iter()
                .map(|(q, n)| (if q < 40 { 0.0 } else { (f64::from(q) * 0.003).exp() * 1e-2 }, n))
                .collect();
            let (a, b, _) = tallied_and_reversed(&gaps);
            proptest::prop_assert_eq!(bits(&a), bits(&b));
            // One by one, in a scrambled order.
            let mut split = TokenGaps::new();
            let mut order: Vec<usize> = (0..gaps.len()).collect();
            order.sort_by_key(|&i| (i as u64 * 2_654_435_761 + seed) % 1_000_003);
            for i in order {
                for _ in 0..gaps[i].1 {
                    split.add(gaps[i].0, 1);
                }
            }
            proptest::prop_assert_eq!(bits(&a), bits(&split));
        }
    }
}
