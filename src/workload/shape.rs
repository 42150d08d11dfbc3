//! Benchmark-shaped request lengths of a synthetic workload: the per-request input and output
//! lengths that load generators draw instead of one fixed length.
//!
//! * **Range, floor style** (`--random-range-ratio R`, the `random` dataset of SGLang's
//!   `bench_serving` and of the InferenceX runs): a uniform integer in `[max(1, ⌊R·L⌋), L]`.
//! * **Range, symmetric style** (`--random-range-style symmetric`, vLLM's `vllm bench serve`
//!   since its random dataset was reworked): a uniform integer in
//!   `[max(1, ⌊L·(1−R)⌋), ⌈L·(1+R)⌉]`, `R < 1`.
//! * **Normal** (`--input-tokens-stddev`, `--output-tokens-stddev`, AIPerf's synthetic lengths):
//!   a normal draw with mean `L` truncated to `[0, ∞)` by rejection (AIPerf gives up after 10,000
//!   rejections and uses the mean), rounded up, at least 1; a standard deviation of 0 is `L`.
//!
//! Every draw comes from its own `ChaCha12Rng` stream ([`LENGTH_STREAM`] of the workload's
//! arrival seed), never from the arrival stream, so arrival times do not change when lengths
//! are shaped. Per request, in workload order: the input length, then the output length.
//! Integers are drawn with `random_range` over `u32` (rand 0.9, Lemire's method), normals with
//! the Box–Muller transform (one standard normal per two uniforms, the cosine branch).

use rand::Rng;
use rand_chacha::ChaCha12Rng;
use serde::{Deserialize, Serialize};

/// Stream of the arrival seed that request lengths are drawn from (the arrivals use stream 0).
pub const LENGTH_STREAM: u64 = 1;
/// Stream of the arrival seed that warm-up arrivals are drawn from.
pub const WARMUP_ARRIVAL_STREAM: u64 = 2;
/// Stream of the content seed that warm-up prefix groups are drawn from.
pub const WARMUP_GROUP_STREAM: u64 = 1;

/// AIPerf's limit on rejected normal draws before it falls back to the mean.
const MAX_REJECTIONS: u32 = 10_000;

/// How `--random-range-ratio` turns a length `L` into a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum RangeStyle {
    /// `[⌊R·L⌋, L]` (SGLang `bench_serving`, InferenceX, vLLM's older `benchmark_serving`).
    #[default]
    Floor,
    /// `[⌊L·(1−R)⌋, ⌈L·(1+R)⌉]` (vLLM's `vllm bench serve`), `R < 1`.
    Symmetric,
}

impl RangeStyle {
    /// The flag value (`floor`, `symmetric`).
    pub fn name(self) -> &'static str {
        match self {
            RangeStyle::Floor => "floor",
            RangeStyle::Symmetric => "symmetric",
        }
    }

    /// Parses a flag or spec value.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "floor" => Some(RangeStyle::Floor),
            "symmetric" => Some(RangeStyle::Symmetric),
            _ => None,
        }
    }
}

/// How one length (input or output) is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LengthDraw {
    /// Always this length (no draw).
    Fixed(u32),
    /// A uniform integer in `[lo, hi]` (both at least 1).
    Uniform { lo: u32, hi: u32 },
    /// AIPerf's positive normal integer with this mean and standard deviation (> 0).
    Normal { mean: f64, stddev: f64 },
}

impl LengthDraw {
    /// The range draw of length `len` with ratio `ratio` (validated: in [0, 1], < 1 when
    /// symmetric).
    pub fn range(len: u32, ratio: f64, style: RangeStyle) -> Self {
        let l = f64::from(len);
        let (lo, hi) = match style {
            RangeStyle::Floor => ((ratio * l).floor(), l),
            RangeStyle::Symmetric => ((l * (1.0 - ratio)).floor(), (l * (1.0 + ratio)).ceil()),
        };
        // Both bounds are within [0, 2·u32::MAX]; the casts saturate.
        let hi = (hi as u32).max(1);
        let lo = (lo as u32).clamp(1, hi);
        if lo == hi {
            LengthDraw::Fixed(lo)
        } else {
            LengthDraw::Uniform { lo, hi }
        }
    }

    /// AIPerf's normal draw of mean `len` and standard deviation `stddev` (validated: finite,
    /// >= 0); `stddev == 0` is the fixed length.
    pub fn normal(len: u32, stddev: f64) -> Self {
        if stddev > 0.0 {
            LengthDraw::Normal {
                mean: f64::from(len),
                stddev,
            }
        } else {
            LengthDraw::Fixed(len.max(1))
        }
    }

    /// Draws one length (`Fixed` draws nothing).
    pub fn sample(&self, rng: &mut ChaCha12Rng) -> u32 {
        match *self {
            LengthDraw::Fixed(n) => n,
            LengthDraw::Uniform { lo, hi } => rng.random_range(lo..=hi),
            LengthDraw::Normal { mean, stddev } => {
                let x = positive_normal(rng, mean, stddev).ceil();
                // Saturating cast: a draw beyond u32::MAX tokens is u32::MAX.
                (x as u32).max(1)
            }
        }
    }

    /// Smallest and largest length it can return.
    pub fn bounds(&self) -> (u32, u32) {
        match *self {
            LengthDraw::Fixed(n) => (n, n),
            LengthDraw::Uniform { lo, hi } => (lo, hi),
            LengthDraw::Normal { .. } => (1, u32::MAX),
        }
    }
}

/// A normal draw truncated to `[0, ∞)` by rejection; the mean after [`MAX_REJECTIONS`] misses.
fn positive_normal(rng: &mut ChaCha12Rng, mean: f64, stddev: f64) -> f64 {
    for _ in 0..MAX_REJECTIONS {
        let x = mean + stddev * standard_normal(rng);
        if x >= 0.0 {
            return x;
        }
    }
    mean
}

/// One standard normal draw (Box–Muller, cosine branch) from two uniforms.
fn standard_normal(rng: &mut ChaCha12Rng) -> f64 {
    // 1 - U is in (0, 1]: its logarithm is finite.
    let u1 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn rng() -> ChaCha12Rng {
        let mut r = ChaCha12Rng::seed_from_u64(42);
        r.set_stream(LENGTH_STREAM);
        r
    }

    #[test]
    fn floor_range_bounds() {
        assert_eq!(
            LengthDraw::range(1024, 0.8, RangeStyle::Floor),
            LengthDraw::Uniform { lo: 819, hi: 1024 }
        );
        assert_eq!(
            LengthDraw::range(1000, 0.8, RangeStyle::Floor),
            LengthDraw::Uniform { lo: 800, hi: 1000 }
        );
        // R = 1 is the fixed length, R = 0 starts at 1 (never an empty prompt).
        assert_eq!(
            LengthDraw::range(1024, 1.0, RangeStyle::Floor),
            LengthDraw::Fixed(1024)
        );
        assert_eq!(
            LengthDraw::range(10, 0.0, RangeStyle::Floor),
            LengthDraw::Uniform { lo: 1, hi: 10 }
        );
        assert_eq!(
            LengthDraw::range(1, 0.5, RangeStyle::Floor),
            LengthDraw::Fixed(1)
        );
    }

    #[test]
    fn symmetric_range_bounds() {
        assert_eq!(
            LengthDraw::range(1024, 0.1, RangeStyle::Symmetric),
            // floor(921.6) and ceil(1126.4)
            LengthDraw::Uniform { lo: 921, hi: 1127 }
        );
        assert_eq!(
            LengthDraw::range(1000, 0.0, RangeStyle::Symmetric),
            LengthDraw::Fixed(1000)
        );
        assert_eq!(
            LengthDraw::range(3, 0.9, RangeStyle::Symmetric),
            // floor(0.3) = 0 -> 1, ceil(5.7) = 6
            LengthDraw::Uniform { lo: 1, hi: 6 }
        );
        // Near u32::MAX the upper bound saturates.
        let LengthDraw::Uniform { hi, .. } =
            LengthDraw::range(u32::MAX, 0.5, RangeStyle::Symmetric)
        else {
            panic!("not uniform");
        };
        assert_eq!(hi, u32::MAX);
    }

    #[test]
    fn uniform_draws_cover_the_range_evenly() {
        let d = LengthDraw::range(100, 0.8, RangeStyle::Floor); // [80, 100]
        let mut r = rng();
        let mut counts = [0u32; 21];
        let n = 210_000;
        for _ in 0..n {
            let x = d.sample(&mut r);
            assert!((80..=100).contains(&x), "{x}");
            counts[(x - 80) as usize] += 1;
        }
        // Every value drawn, each close to n/21 = 10,000 (binomial sd ~ 98).
        for (i, c) in counts.iter().enumerate() {
            assert!((9_500..=10_500).contains(c), "value {}: {c}", 80 + i);
        }
        let mean: f64 = counts
            .iter()
            .enumerate()
            .map(|(i, c)| (80 + i) as f64 * f64::from(*c))
            .sum::<f64>()
            / f64::from(n);
        assert!((mean - 90.0).abs() < 0.05, "mean {mean}");
    }

    #[test]
    fn normal_draws_have_aiperfs_mean_and_spread() {
        // Far from 0 the truncation does nothing: the ceiling adds 0.5 on average.
        let d = LengthDraw::normal(1000, 100.0);
        let mut r = rng();
        let n = 100_000;
        let xs: Vec<f64> = (0..n).map(|_| f64::from(d.sample(&mut r))).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        assert!((mean - 1000.5).abs() < 1.0, "mean {mean}");
        assert!((var.sqrt() - 100.0).abs() < 1.0, "sd {}", var.sqrt());
        assert!(xs.iter().all(|x| *x >= 1.0 && x.fract() == 0.0));
    }

    #[test]
    fn normal_is_truncated_at_zero_and_at_least_one() {
        // Mean 2, sd 10: most raw draws are negative and rejected; what remains is >= 1.
        let d = LengthDraw::normal(2, 10.0);
        let mut r = rng();
        let xs: Vec<u32> = (0..20_000).map(|_| d.sample(&mut r)).collect();
        assert!(xs.iter().all(|x| *x >= 1));
        // A half-normal around 2 with sd 10 has mean ~ 2 + 10·φ(0.2)/Φ(0.2)·… > 8.
        let mean = xs.iter().map(|x| f64::from(*x)).sum::<f64>() / xs.len() as f64;
        assert!(mean > 8.0 && mean < 12.0, "mean {mean}");
        assert_eq!(LengthDraw::normal(7, 0.0), LengthDraw::Fixed(7));
    }

    #[test]
    fn draws_are_deterministic_and_pinned() {
        let d = LengthDraw::range(1024, 0.8, RangeStyle::Floor);
        let a: Vec<u32> = {
            let mut r = rng();
            (0..5).map(|_| d.sample(&mut r)).collect()
        };
        let b: Vec<u32> = {
            let mut r = rng();
            (0..5).map(|_| d.sample(&mut r)).collect()
        };
        assert_eq!(a, b);
        assert_eq!(a, PINNED_FLOOR_1024_08);
        let n = LengthDraw::normal(1000, 50.0);
        let mut r = rng();
        let c: Vec<u32> = (0..5).map(|_| n.sample(&mut r)).collect();
        assert_eq!(c, PINNED_NORMAL_1000_50);
    }

    /// `ChaCha12Rng::seed_from_u64(42)`, stream 1: the first five draws (rand 0.9.5).
    const PINNED_FLOOR_1024_08: [u32; 5] = [997, 877, 844, 914, 946];
    const PINNED_NORMAL_1000_50: [u32; 5] = [961, 1003, 1010, 950, 994];

    #[test]
    fn styles_parse_and_name() {
        for s in [RangeStyle::Floor, RangeStyle::Symmetric] {
            assert_eq!(RangeStyle::parse(s.name()), Some(s));
        }
        assert_eq!(RangeStyle::parse("ceil"), None);
    }
}
