//! Criterion benchmarks of the pooled token-gap accounting (`GapTally` in front of `TokenGaps`,
//! issue 9): one million gaps fed as a simulation feeds them, in two regimes.
//! - `distinct`: as under AIC (or profile) timing, where each pass's time is interpolated from its
//!   context, which grows by a token a pass: gaps are differences of absolute pass-end times of
//!   four workers' strides, nearly all distinct and drifting slowly.
//! - `repeating`: as under the polynomial, where a stride repeats one pass duration: a few
//!   thousand distinct values.
//!
//! About nine in ten `distinct` gaps fall in the sketch bin of the one before (97 % in the
//! bundled trace's AIC run). Run with `cargo bench --bench gaps`. The streams are generated (deterministically) outside the
//! timed loop.

use criterion::{criterion_group, criterion_main, Criterion};
use dynosim::report::{GapTally, TokenGaps};
use std::hint::black_box;

/// A small deterministic generator (no need for statistical quality here).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// `(gap_ms, count)` as `Collector::stride_tokens` passes them: one stride at a time, of a
/// worker picked in turn, each stride a run of passes sharing a batch.
fn stream(total: usize, distinct: bool) -> Vec<(f64, u64)> {
    let mut rng = Lcg(42);
    let mut out = Vec::with_capacity(total);
    let mut clock = [0.0f64; 4];
    let mut context = [2_000.0f64; 4];
    let mut batches = [24u64; 4];
    let mut worker = 0;
    while out.len() < total {
        worker = (worker + 1) % 4;
        // A worker's batch drifts by at most one request a stride.
        batches[worker] = (batches[worker] + rng.below(3)).clamp(2, 49) - 1;
        let batch = batches[worker];
        let passes = 2 + rng.below(100) as usize;
        let mut ends = Vec::with_capacity(passes);
        for _ in 0..passes {
            let pass_ms = if distinct {
                // Interpolated: a smooth function of the batch and the growing context.
                5.0 + 0.04 * batch as f64 + 0.000_02 * context[worker] * (1.0 + batch as f64).ln()
            } else {
                // Polynomial: one duration per batch size.
                5.75 + 0.061 * batch as f64
            };
            context[worker] += batch as f64;
            if context[worker] > 60_000.0 {
                context[worker] = 2_000.0;
            }
            clock[worker] += pass_ms;
            ends.push(clock[worker]);
        }
        for w in ends.windows(2) {
            out.push((w[1] - w[0], batch));
        }
    }
    out.truncate(total);
    out
}

fn tally(gaps: &[(f64, u64)]) -> TokenGaps {
    let mut into = TokenGaps::new();
    let mut tally = GapTally::new();
    for &(gap, count) in gaps {
        tally.add(gap, count, &mut into);
    }
    tally.flush(&mut into);
    into
}

fn bench_gaps(c: &mut Criterion) {
    let mut group = c.benchmark_group("token_gaps");
    for (name, distinct) in [("distinct", true), ("repeating", false)] {
        let gaps = stream(1_000_000, distinct);
        group.bench_function(name, |b| {
            b.iter(|| black_box(tally(black_box(&gaps))).itl_summary())
        });
    }
    group.finish();
}

criterion_group!(benches, bench_gaps);
criterion_main!(benches);
