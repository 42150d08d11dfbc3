//! DDSketch: a mergeable quantile sketch with bounded relative error (Masson, Rim & Lee, 2019),
//! as DynoSim uses for the pooled per-token gaps (spec §8.3): relative accuracy α = 0.1 %, at most
//! 32 768 bins (lowest bins collapse first), values at or below 1e-9 counted in a zero bucket.
//!
//! Index of a positive value v: `ceil(ln v / ln γ)` with `γ = 1 + 2α/(1 − α)`; the value reported
//! for index k is `exp(k · ln γ) · 2/(1 + γ)`, within α of every value in the bin. `quantile(q)`
//! returns the bin holding the sample of rank `floor(q · (count − 1))` (no exact min/max special
//! case: callers track those themselves). Insertion of `k` equal values is one O(1) step.

use super::key_memo::{key_of, KeyMemo};

/// Relative accuracy of the report's sketches.
pub const DEFAULT_RELATIVE_ACCURACY: f64 = 0.001;
/// Bin cap of the report's sketches.
pub const DEFAULT_MAX_BINS: usize = 32_768;
/// Values at or below this (including negatives) go to the zero bucket and read back as 0.
pub const MIN_INDEXABLE_VALUE: f64 = 1e-9;

/// Dense bin counts over a contiguous index range with slack for growth.
#[derive(Debug, Clone, PartialEq)]
struct Store {
    /// `bins[i]` counts index `offset + i`.
    bins: Vec<u64>,
    offset: i32,
    /// Live index range (meaningful only when `count > 0`).
    min_key: i32,
    max_key: i32,
    count: u64,
    max_bins: usize,
}

impl Store {
    fn new(max_bins: usize) -> Self {
        Store {
            bins: Vec::new(),
            offset: 0,
            min_key: 0,
            max_key: 0,
            count: 0,
            max_bins: max_bins.max(1),
        }
    }

    #[inline]
    fn add(&mut self, key: i32, n: u64) {
        // Inside the live range nothing grows or collapses: just count.
        if self.count > 0 && key >= self.min_key && key <= self.max_key {
            self.bins[(key - self.offset) as usize] += n;
            self.count += n;
            return;
        }
        self.add_outside(key, n);
    }

    fn add_outside(&mut self, key: i32, n: u64) {
        if n == 0 {
            return;
        }
        let (mut lo, hi) = if self.count == 0 {
            (key, key)
        } else {
            (self.min_key.min(key), self.max_key.max(key))
        };
        let span = i64::from(hi) - i64::from(lo) + 1;
        if span > self.max_bins as i64 {
            // Too wide: the lowest indices collapse into the lowest one kept.
            lo = (i64::from(hi) - self.max_bins as i64 + 1) as i32;
        }
        self.reserve(lo, hi);
        if self.count > 0 && self.min_key < lo {
            let mut folded = 0;
            for k in self.min_key..lo {
                let i = (k - self.offset) as usize;
                folded += self.bins[i];
                self.bins[i] = 0;
            }
            self.bins[(lo - self.offset) as usize] += folded;
        }
        let key = key.max(lo);
        self.bins[(key - self.offset) as usize] += n;
        self.min_key = lo;
        self.max_key = hi;
        self.count += n;
    }

    /// Makes `[lo, hi]` (and the current live range) addressable, keeping existing counts.
    fn reserve(&mut self, lo: i32, hi: i32) {
        let alloc_hi = self.offset + self.bins.len() as i32 - 1;
        if !self.bins.is_empty() && lo >= self.offset && hi <= alloc_hi {
            return;
        }
        let (live_lo, live_hi) = if self.count == 0 {
            (lo, hi)
        } else {
            (self.min_key.min(lo), self.max_key.max(hi))
        };
        let span = (live_hi - live_lo + 1) as usize;
        let slack = (span / 2).clamp(16, self.max_bins);
        // Put the slack on the side that grew (both sides for a fresh store).
        let grew_down = self.bins.is_empty() || lo < self.offset;
        let grew_up = self.bins.is_empty() || hi > alloc_hi;
        let new_offset = if grew_down {
            live_lo - slack as i32
        } else {
            live_lo
        };
        let new_len = (live_hi - new_offset + 1) as usize + if grew_up { slack } else { 0 };
        let mut bins = vec![0u64; new_len];
        if self.count > 0 {
            for k in self.min_key..=self.max_key {
                bins[(k - new_offset) as usize] = self.bins[(k - self.offset) as usize];
            }
        }
        self.bins = bins;
        self.offset = new_offset;
    }

    /// Index of the bin holding the sample of 0-based `rank` (ascending).
    fn key_at_rank(&self, rank: u64) -> i32 {
        let mut seen = 0u64;
        for k in self.min_key..=self.max_key {
            seen += self.bins[(k - self.offset) as usize];
            if seen > rank {
                return k;
            }
        }
        self.max_key
    }

    fn merge(&mut self, other: &Store) {
        if other.count == 0 {
            return;
        }
        for k in other.min_key..=other.max_key {
            let n = other.bins[(k - other.offset) as usize];
            if n > 0 {
                self.add(k, n);
            }
        }
    }

    #[cfg(test)]
    fn num_live_bins(&self) -> usize {
        if self.count == 0 {
            0
        } else {
            (self.max_key - self.min_key + 1) as usize
        }
    }
}

/// A DDSketch over non-negative values.
#[derive(Debug, Clone, PartialEq)]
pub struct DdSketch {
    gamma: f64,
    gamma_ln: f64,
    /// `2 / (1 + γ)`: maps a bin's upper bound to its representative value.
    multiplier: f64,
    store: Store,
    zero_count: u64,
    count: u64,
    /// Finds keys of values near the last one without an `ln`.
    memo: KeyMemo,
}

impl Default for DdSketch {
    fn default() -> Self {
        Self::new(DEFAULT_RELATIVE_ACCURACY, DEFAULT_MAX_BINS)
    }
}

impl DdSketch {
    /// `relative_accuracy` in (0, 1).
    pub fn new(relative_accuracy: f64, max_bins: usize) -> Self {
        assert!(
            relative_accuracy > 0.0 && relative_accuracy < 1.0,
            "DDSketch relative accuracy must be in (0, 1)"
        );
        let step = 2.0 * relative_accuracy / (1.0 - relative_accuracy);
        let gamma = 1.0 + step;
        DdSketch {
            gamma,
            gamma_ln: step.ln_1p(),
            multiplier: 2.0 / (1.0 + gamma),
            store: Store::new(max_bins),
            zero_count: 0,
            count: 0,
            memo: KeyMemo::new(),
        }
    }

    fn key(&self, v: f64) -> i32 {
        key_of(v, self.gamma_ln)
    }

    #[cfg(test)]
    pub(super) fn gamma_ln(&self) -> f64 {
        self.gamma_ln
    }

    fn value(&self, key: i32) -> f64 {
        (f64::from(key) * self.gamma_ln).exp() * self.multiplier
    }

    #[cfg(test)]
    pub fn add(&mut self, v: f64) {
        self.add_n(v, 1);
    }

    /// Adds `n` samples equal to `v`.
    #[inline]
    pub fn add_n(&mut self, v: f64, n: u64) {
        debug_assert!(!v.is_nan(), "DDSketch sample is NaN");
        if n == 0 {
            return;
        }
        if v > MIN_INDEXABLE_VALUE && v.is_finite() {
            let key = self.memo.key(v, self.gamma_ln);
            self.store.add(key, n);
        } else if v > MIN_INDEXABLE_VALUE {
            // +inf: counted in the bin of the largest finite value.
            let key = self.key(f64::MAX);
            self.store.add(key, n);
        } else {
            self.zero_count += n;
        }
        self.count += n;
    }

    /// Merges another sketch built with the same accuracy.
    pub fn merge(&mut self, other: &DdSketch) {
        debug_assert_eq!(
            self.gamma_ln, other.gamma_ln,
            "merging incompatible sketches"
        );
        self.store.merge(&other.store);
        self.zero_count += other.zero_count;
        self.count += other.count;
    }

    #[cfg(test)]
    pub fn count(&self) -> u64 {
        self.count
    }

    #[cfg(test)]
    /// Number of bins between the lowest and highest populated index.
    pub fn num_bins(&self) -> usize {
        self.store.num_live_bins()
    }

    /// Approximate value at quantile `q` (clamped to [0, 1]): the bin holding the sample of rank
    /// `floor(q · (count − 1))`. `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
        let rank = (q * (self.count - 1) as f64) as u64;
        if rank < self.zero_count {
            return Some(0.0);
        }
        Some(self.value(self.store.key_at_rank(rank - self.zero_count)))
    }

    /// Percentile `p` (0..=100) with the report's rank rule (spec §8.3): nearest rank
    /// `r = round((n−1)·p/100)`, read from the sketch at quantile `(r + 0.5)/(n − 1)`, or 1.0 for
    /// the top rank. 0 when empty.
    pub fn percentile(&self, p: f64) -> f64 {
        let n = self.count;
        if n == 0 {
            return 0.0;
        }
        let rank = super::stats::percentile_rank(n as usize, p) as u64;
        let q = if rank + 1 >= n {
            1.0
        } else {
            (rank as f64 + 0.5) / (n - 1) as f64
        };
        self.quantile(q).unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_accuracy_within_a_tenth_of_a_percent() {
        // A spread of values over 9 decades; each alone in a sketch, and all together.
        let mut all = DdSketch::default();
        let mut values = Vec::new();
        let mut v = 1e-3;
        while v < 1e6 {
            values.push(v);
            v *= 1.037;
        }
        for &x in &values {
            let mut s = DdSketch::default();
            s.add(x);
            let got = s.quantile(0.5).unwrap();
            assert!(
                ((got - x) / x).abs() <= DEFAULT_RELATIVE_ACCURACY * (1.0 + 1e-9),
                "{x} -> {got}"
            );
            all.add(x);
        }
        let n = values.len();
        for i in [0, 1, n / 3, n / 2, n - 2, n - 1] {
            // quantile (i + 0.5)/(n-1) lands exactly on rank i
            let q = if i == n - 1 {
                1.0
            } else {
                (i as f64 + 0.5) / (n - 1) as f64
            };
            let got = all.quantile(q).unwrap();
            let x = values[i];
            assert!(((got - x) / x).abs() <= DEFAULT_RELATIVE_ACCURACY * (1.0 + 1e-9));
        }
    }

    #[test]
    fn bin_value_formula_matches_reference_bits() {
        // Values DynoSim 1.4.2 reported for sketch percentiles (see tests/data/reference/README.md);
        // re-inserting a reported value reproduces it bit for bit.
        for v in [
            5.760360638893143,
            34.29503797770406,
            70.45688189134839,
            173.99059041324327,
            154.93430385909522,
        ] {
            let mut s = DdSketch::default();
            s.add(v);
            assert_eq!(s.quantile(1.0), Some(v));
        }
    }

    #[test]
    fn zeros_and_counts() {
        let mut s = DdSketch::default();
        assert_eq!(s.quantile(0.5), None);
        assert_eq!(s.percentile(50.0), 0.0);
        s.add_n(0.0, 3);
        s.add_n(10.0, 1_000_000_000);
        s.add_n(20.0, 0);
        assert_eq!(s.count(), 1_000_000_003);
        assert_eq!(s.quantile(0.0), Some(0.0));
        let med = s.percentile(50.0);
        assert!((med - 10.0).abs() / 10.0 <= DEFAULT_RELATIVE_ACCURACY);
        assert_eq!(s.num_bins(), 1);
    }

    #[test]
    fn percentile_uses_rank_rule() {
        // n = 6 distinct, well separated values: the median is rank round(2.5) = 3.
        let mut s = DdSketch::default();
        let xs = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0];
        for x in xs {
            s.add(x);
        }
        let close =
            |a: f64, b: f64| ((a - b) / b).abs() <= DEFAULT_RELATIVE_ACCURACY * (1.0 + 1e-9);
        assert!(close(s.percentile(50.0), 8.0));
        assert!(close(s.percentile(75.0), 16.0)); // 3.75 -> 4
        assert!(close(s.percentile(90.0), 32.0)); // 4.5 -> 5 (top: q = 1.0)
        assert!(close(s.percentile(0.0), 1.0));
    }

    #[test]
    fn merge_equals_single_stream() {
        let mut a = DdSketch::default();
        let mut b = DdSketch::default();
        let mut whole = DdSketch::default();
        for i in 0..500u32 {
            let x = 0.5 + f64::from(i * 7919 % 1000) * 0.37;
            whole.add(x);
            if i % 3 == 0 {
                a.add(x)
            } else {
                b.add(x)
            }
        }
        a.add_n(0.0, 2);
        whole.add_n(0.0, 2);
        a.merge(&b);
        for q in [0.0, 0.1, 0.5, 0.77, 0.99, 1.0] {
            assert_eq!(a.quantile(q), whole.quantile(q));
        }
        assert_eq!(a.count(), whole.count());
    }

    #[test]
    fn bins_are_capped_by_collapsing_the_lowest() {
        let mut s = DdSketch::new(0.01, 64);
        let mut x = 1.0;
        for _ in 0..1000 {
            s.add(x);
            x *= 1.05;
        }
        assert!(s.num_bins() <= 64);
        assert_eq!(s.count(), 1000);
        // The top stays accurate; the collapsed bottom reads high.
        let top = s.quantile(1.0).unwrap();
        let want = 1.05f64.powi(999);
        assert!(((top - want) / want).abs() <= 0.01 * (1.0 + 1e-9));
        assert!(s.quantile(0.0).unwrap() > 1.0);
        // Growing downwards past the cap collapses too.
        let mut d = DdSketch::new(0.01, 32);
        let mut y = 1e6;
        for _ in 0..500 {
            d.add(y);
            y /= 1.05;
        }
        assert!(d.num_bins() <= 32);
        assert_eq!(d.count(), 500);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Insertion order does not change any quantile, even when the bin cap collapses the
        /// lowest bins (the collapse point only ever rises, and every key ends up in
        /// `max(key, final lowest bin)` whatever the order).
        #[test]
        fn order_does_not_change_quantiles_even_when_bins_collapse(
            values in proptest::collection::vec((0u32..2000, 1u64..4), 1..400),
            seed in 0u64..1000,
        ) {
            let mut forward = DdSketch::new(0.01, 64);
            let mut scrambled = DdSketch::new(0.01, 64);
            let xs: Vec<(f64, u64)> = values
                .iter()
                .map(|&(q, n)| (if q < 20 { 0.0 } else { (f64::from(q) * 0.01).exp() }, n))
                .collect();
            for &(x, n) in &xs {
                forward.add_n(x, n);
            }
            let mut order: Vec<usize> = (0..xs.len()).collect();
            order.sort_by_key(|&i| (i as u64 * 2_654_435_761 + seed) % 1_000_003);
            for i in order {
                scrambled.add_n(xs[i].0, xs[i].1);
            }
            proptest::prop_assert!(forward.num_bins() <= 64);
            proptest::prop_assert_eq!(forward.count(), scrambled.count());
            for q in 0..=100 {
                let q = f64::from(q) / 100.0;
                proptest::prop_assert_eq!(forward.quantile(q), scrambled.quantile(q));
            }
        }
    }
}
