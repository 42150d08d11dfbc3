//! Summary statistics of the report (spec §8.3): the nine-number summary of a distribution, the
//! nearest-rank percentile rule, population standard deviation, and streaming exact moments
//! (count, mean, variance) whose result does not depend on the order samples arrive in.

/// Percentiles the report names, as (key prefix, percent).
pub const PERCENTILES: [(&str, f64); 5] = [
    ("median", 50.0),
    ("p75", 75.0),
    ("p90", 90.0),
    ("p95", 95.0),
    ("p99", 99.0),
];

/// The nine numbers reported for every distribution (`mean_`, `min_`, `max_`, `median_`, `p75_`,
/// `p90_`, `p95_`, `p99_`, `std_`). An empty distribution is all zeros.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Summary {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub median: f64,
    pub p75: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub std: f64,
}

impl Summary {
    /// (key prefix, value) pairs in a fixed order; the report key is `{prefix}_{metric}`.
    pub fn entries(&self) -> [(&'static str, f64); 9] {
        [
            ("mean", self.mean),
            ("min", self.min),
            ("max", self.max),
            ("median", self.median),
            ("p75", self.p75),
            ("p90", self.p90),
            ("p95", self.p95),
            ("p99", self.p99),
            ("std", self.std),
        ]
    }

    fn set_percentile(&mut self, name: &str, v: f64) {
        match name {
            "median" => self.median = v,
            "p75" => self.p75 = v,
            "p90" => self.p90 = v,
            "p95" => self.p95 = v,
            "p99" => self.p99 = v,
            _ => unreachable!("unknown percentile name {name}"),
        }
    }
}

/// Nearest-rank index of percentile `p` (0..=100) among `n > 0` sorted values:
/// `round((n − 1) · p / 100)` (half away from zero), clamped to `[0, n − 1]`.
pub fn percentile_rank(n: usize, p: f64) -> usize {
    debug_assert!(n > 0);
    let r = ((n - 1) as f64 * p / 100.0).round();
    if r <= 0.0 {
        0
    } else {
        (r as usize).min(n - 1)
    }
}

/// Summary of an exact distribution. Sorts `values` in place. Percentiles by nearest rank
/// ([`percentile_rank`]), population standard deviation (divide by n).
pub fn exact_summary(values: &mut [f64]) -> Summary {
    let n = values.len();
    if n == 0 {
        return Summary::default();
    }
    values.sort_unstable_by(f64::total_cmp);
    let mean = values.iter().sum::<f64>() / n as f64;
    let var = values.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
    let mut s = Summary {
        mean,
        min: values[0],
        max: values[n - 1],
        std: var.sqrt(),
        ..Summary::default()
    };
    for (name, p) in PERCENTILES {
        s.set_percentile(name, values[percentile_rank(n, p)]);
    }
    s
}

/// Streaming count / mean / population variance whose result does not depend on the order in
/// which samples arrive: sums are kept exactly in fixed point (sample × 2^44 and sample² × 2^44,
/// each rounded once), so a simulation may feed token gaps per pass, per stride or per worker and
/// still report bit-identical statistics. The resolution (6e-14) keeps the variance of nearly
/// equal gaps (a batch-1 decode's, std/mean ~ 4e-4) within 1e-7 of DynoSim's floating-point
/// Welford; 2^32 left 1e-4. Saturates (never wraps) on absurd magnitudes (sums past 2^127:
/// e.g. ten million samples of a nanosecond gap's 1e9 tokens/s).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ExactMoments {
    count: u64,
    sum: i128,
    sum_sq: i128,
}

const SUM_SCALE: f64 = 17_592_186_044_416.0; // 2^44

/// `v.round() as i128`, without a libm call (see [`super::rounding`]).
#[inline]
fn to_fixed(v: f64) -> i128 {
    super::rounding::round_i128(v)
}
const SQ_SCALE: f64 = 17_592_186_044_416.0; // 2^44

/// `v.saturating_mul(k)`: a plain multiplication when `v` fits in an `i64` (then |v · k| <
/// 2^127 cannot overflow), as it does for the squares of token gaps and throughputs short of 700.
#[inline]
fn times(v: i128, k: u64) -> i128 {
    match i64::try_from(v) {
        Ok(v) => i128::from(v) * i128::from(k),
        Err(_) => v.saturating_mul(i128::from(k)),
    }
}

impl ExactMoments {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `k` samples equal to `x`.
    #[inline]
    pub fn add_n(&mut self, x: f64, k: u64) {
        if k == 0 {
            return;
        }
        let v = to_fixed(x * SUM_SCALE);
        let v2 = to_fixed(x * x * SQ_SCALE);
        self.count += k;
        self.sum = self.sum.saturating_add(times(v, k));
        self.sum_sq = self.sum_sq.saturating_add(times(v2, k));
    }

    pub fn merge(&mut self, other: &ExactMoments) {
        self.count += other.count;
        self.sum = self.sum.saturating_add(other.sum);
        self.sum_sq = self.sum_sq.saturating_add(other.sum_sq);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// 0 when empty.
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / SUM_SCALE / self.count as f64
        }
    }

    /// Population standard deviation; 0 when empty.
    pub fn std(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let mean = self.mean();
        let mean_sq = self.sum_sq as f64 / SQ_SCALE / self.count as f64;
        (mean_sq - mean * mean).max(0.0).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_rule_rounds_half_away_from_zero_and_clamps() {
        assert_eq!(percentile_rank(1, 99.0), 0);
        // n = 6: (n-1)·p/100 = 2.5 for the median, 4.5 for p90.
        assert_eq!(percentile_rank(6, 50.0), 3);
        assert_eq!(percentile_rank(6, 90.0), 5);
        assert_eq!(percentile_rank(6, 75.0), 4); // 3.75
        assert_eq!(percentile_rank(6, 0.0), 0);
        assert_eq!(percentile_rank(6, 100.0), 5);
        assert_eq!(percentile_rank(101, 99.0), 99);
        assert_eq!(percentile_rank(4, 50.0), 2); // 1.5 -> 2
    }

    #[test]
    fn exact_summary_small_vectors() {
        let mut v = vec![6.0, 1.0, 5.0, 2.0, 4.0, 3.0];
        let s = exact_summary(&mut v);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 6.0);
        assert_eq!(s.mean, 3.5);
        assert_eq!(s.median, 4.0);
        assert_eq!(s.p75, 5.0);
        assert_eq!(s.p90, 6.0);
        assert_eq!(s.p95, 6.0);
        assert_eq!(s.p99, 6.0);
        // population std of 1..=6: sqrt(35/12)
        assert!((s.std - (35.0f64 / 12.0).sqrt()).abs() < 1e-12);

        let mut one = vec![7.5];
        let s = exact_summary(&mut one);
        assert_eq!(
            s,
            Summary {
                mean: 7.5,
                min: 7.5,
                max: 7.5,
                median: 7.5,
                p75: 7.5,
                p90: 7.5,
                p95: 7.5,
                p99: 7.5,
                std: 0.0
            }
        );
        assert_eq!(exact_summary(&mut []), Summary::default());
    }

    #[test]
    fn population_std_divides_by_n() {
        let mut v = vec![2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let s = exact_summary(&mut v);
        assert_eq!(s.mean, 5.0);
        assert_eq!(s.std, 2.0);
    }

    #[test]
    fn exact_moments_ignore_order_and_grouping() {
        let xs = [
            5.845390090942383,
            0.1,
            98.0,
            1e-3,
            12345.678,
            5.845390090942383,
        ];
        let mut a = ExactMoments::new();
        for x in xs {
            a.add_n(x, 1);
        }
        let mut b = ExactMoments::new();
        b.add_n(xs[5], 2);
        for x in xs[1..5].iter().rev() {
            b.add_n(*x, 1);
        }
        assert_eq!(a, b);
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
        assert!((a.mean() - mean).abs() < 1e-9 * mean);
        assert!((a.std() - var.sqrt()).abs() < 1e-6 * var.sqrt());
        assert_eq!(ExactMoments::new().std(), 0.0);
    }
}
