//! The DDSketch key of a value without an `ln` most of the time: a sketch remembers a value
//! range `[lo, hi]` inside the last bin it computed, so a value inside it has that bin's key.
//! Consecutive token gaps are close together (one worker's passes, interpolated per pass under
//! AIC timing): they mostly fall in the last bin or a neighbouring one.
//!
//! A bin's range runs from 64 ulps above its estimated lower edge `exp((k − 1) · ln γ)` to 64
//! ulps below its estimated upper edge `exp(k · ln γ)`, and is used only once the key computed
//! ([`key_of`]) at both ends is the bin's: then every value between has it too,
//! since the key never decreases as the value grows, which `tests` checks around every bin
//! boundary in `[MEMO_MIN, MEMO_MAX]` (outside it, keys are computed directly). Ranges are kept
//! in a small direct-mapped table. Values within the 64-ulp slivers take the `ln`. The memo
//! changes how a key is found, never which key.
//!
//! This module owns the key of a value ([`key_of`], which the sketch uses directly too) and
//! imports nothing of the sketch: the sketch holds a memo, never the other way round.

/// Index of a positive value: `ceil(ln v / ln γ)`. Saturating: a finite positive f64 has
/// |ln v / ln γ| < 2^20 at α = 0.1 %.
pub(super) fn key_of(v: f64, gamma_ln: f64) -> i32 {
    super::rounding::ceil_i32(v.ln() / gamma_ln)
}

/// Values whose bins the memo may remember (far wider than token gaps in ms and their
/// inverses).
pub(super) const MEMO_MIN: f64 = 1e-9;
pub(super) const MEMO_MAX: f64 = 1_099_511_627_776.0; // 2^40

/// Slots of the direct-mapped table of bin ranges (a run's gaps span a few thousand bins, in
/// slowly moving neighbourhoods).
const SLOTS: usize = 1024;

/// Ulps between a bin's estimated edges and its range.
const MARGIN_ULPS: u64 = 64;

/// A verified value range inside bin `key`; empty (`lo > hi`) when not verified.
#[derive(Debug, Clone, Copy)]
struct BinRange {
    key: i32,
    lo: f64,
    hi: f64,
}

impl BinRange {
    const EMPTY: BinRange = BinRange {
        key: i32::MIN,
        lo: f64::INFINITY,
        hi: f64::NEG_INFINITY,
    };

    fn of(key: i32, gamma_ln: f64) -> BinRange {
        let lo = (f64::from(key - 1) * gamma_ln).exp();
        let hi = (f64::from(key) * gamma_ln).exp();
        let lo = f64::from_bits(lo.to_bits().saturating_add(MARGIN_ULPS));
        let hi = f64::from_bits(hi.to_bits().saturating_sub(MARGIN_ULPS));
        let usable = lo > MEMO_MIN
            && hi <= MEMO_MAX
            && lo <= hi
            && key_of(lo, gamma_ln) == key
            && key_of(hi, gamma_ln) == key;
        if usable {
            BinRange { key, lo, hi }
        } else {
            BinRange { key, ..Self::EMPTY }
        }
    }

    #[inline]
    fn contains(&self, v: f64) -> bool {
        v >= self.lo && v <= self.hi
    }
}

#[derive(Debug, Clone)]
pub(super) struct KeyMemo {
    last: BinRange,
    /// Bin ranges by `key mod SLOTS`; allocated on first use.
    table: Vec<BinRange>,
}

impl KeyMemo {
    pub(super) fn new() -> Self {
        KeyMemo {
            last: BinRange::EMPTY,
            table: Vec::new(),
        }
    }

    /// `key_of(v, gamma_ln)` for a finite `v > 0`.
    #[inline]
    pub(super) fn key(&mut self, v: f64, gamma_ln: f64) -> i32 {
        if self.last.contains(v) {
            return self.last.key;
        }
        self.miss(v, gamma_ln)
    }

    #[inline(never)]
    fn miss(&mut self, v: f64, gamma_ln: f64) -> i32 {
        if !(MEMO_MIN..=MEMO_MAX).contains(&v) {
            return key_of(v, gamma_ln);
        }
        // A neighbouring bin first: that is where the next gap usually goes.
        if self.last.lo <= self.last.hi {
            let next = if v > self.last.hi {
                self.last.key + 1
            } else {
                self.last.key - 1
            };
            let range = self.range(next, gamma_ln);
            if range.contains(v) {
                self.last = range;
                return next;
            }
        }
        let key = key_of(v, gamma_ln);
        let range = self.range(key, gamma_ln);
        if range.lo <= range.hi {
            self.last = range;
        }
        key
    }

    /// Bin `key`'s range, from the table or computed.
    fn range(&mut self, key: i32, gamma_ln: f64) -> BinRange {
        if self.table.is_empty() {
            self.table = vec![BinRange::EMPTY; SLOTS];
        }
        let slot = &mut self.table[key.rem_euclid(SLOTS as i32) as usize];
        if slot.key != key {
            *slot = BinRange::of(key, gamma_ln);
        }
        *slot
    }
}

/// A memo, not state: it takes no part in a sketch's equality.
impl PartialEq for KeyMemo {
    fn eq(&self, _: &KeyMemo) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sketch::DdSketch;

    /// The smallest positive `f64` whose key is at least `key`, by bisection over the bit
    /// patterns (ordered like the values for positive floats).
    fn lower_bound(key: i32, gamma_ln: f64) -> f64 {
        let at = |bits: u64| key_of(f64::from_bits(bits), gamma_ln);
        let estimate = (f64::from(key - 1) * gamma_ln).exp().to_bits();
        let (mut lo, mut hi) = (estimate, estimate);
        let mut step = 64u64;
        while lo > 0 && at(lo) >= key {
            lo = lo.saturating_sub(step);
            step *= 2;
        }
        step = 64;
        while at(hi) < key {
            hi += step;
            step *= 2;
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if at(mid) >= key {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        f64::from_bits(hi)
    }

    fn gamma_ln() -> f64 {
        DdSketch::default().gamma_ln()
    }

    /// The memo's premise: over `[MEMO_MIN, MEMO_MAX]` the key never decreases as the value
    /// grows. libm's `ln` is within one ulp of its result, which for |ln v| < 32 is at most
    /// 2^-48, while one ulp of `v` moves `ln v` by at least 2^-53: the computed `ln` can only be
    /// out of order between values under 32 ulps apart, so a key could only step back within
    /// 32 ulps of a bin boundary. Every boundary in the range is checked 128 ulps either side.
    #[test]
    fn key_is_monotone_around_every_bin_boundary_in_the_memo_range() {
        let g = gamma_ln();
        let first = key_of(MEMO_MIN, g);
        let last = key_of(MEMO_MAX, g);
        assert!(last - first > 20_000);
        for k in first + 1..=last {
            let x = lower_bound(k, g);
            let (mut below, mut above) = (x.next_down(), x);
            for _ in 0..128 {
                assert_eq!(key_of(below, g), k - 1, "key of {below:e} (bound {x:e})");
                assert_eq!(key_of(above, g), k, "key of {above:e} (bound {x:e})");
                below = below.next_down();
                above = above.next_up();
            }
        }
    }

    #[test]
    fn lower_bound_is_where_the_key_steps() {
        let g = gamma_ln();
        for k in [-10_000, -1, 0, 1, 2, 873, 5_000, 13_000] {
            let x = lower_bound(k, g);
            assert_eq!(key_of(x, g), k);
            assert_eq!(key_of(x.next_down(), g), k - 1);
        }
    }

    #[test]
    fn memo_gives_the_computed_key() {
        // Values drifting up and down through neighbouring bins, jumping far, repeating, and
        // values outside the memo range (and table collisions: keys 4096 apart).
        let g = gamma_ln();
        let mut memo = KeyMemo::new();
        let mut values = Vec::new();
        let mut x = 5.0;
        for i in 0..50_000u32 {
            x *= if i % 7 < 4 { 1.000_37 } else { 0.999_61 };
            values.push(x);
            values.push(1000.0 / x);
            if i % 1000 == 0 {
                values.extend([2e-9, 1e-9, 3e12, x, x * (4096.0 * g).exp()]);
            }
        }
        values.extend([MEMO_MIN, MEMO_MAX, MEMO_MIN.next_up(), MEMO_MAX.next_down()]);
        for v in values {
            assert_eq!(memo.key(v, g), key_of(v, g), "{v:e}");
        }
        // A drift of gaps a few parts in ten thousand apart: nearly every key from the memo.
        let mut hits = 0;
        let mut x = 7.0;
        for i in 0..10_000u32 {
            x *= if i % 5 < 3 { 1.000_2 } else { 0.999_8 };
            hits += u32::from(memo.last.contains(x));
            assert_eq!(memo.key(x, g), key_of(x, g), "{x:e}");
        }
        assert!(hits > 9_000, "{hits} memo hits");
        // Every value within 1000 ulps of a bin's bounds, walking up and down.
        let lo = lower_bound(100, g);
        let hi = lower_bound(101, g);
        for start in [lo, hi] {
            let mut v = start;
            for _ in 0..1000 {
                v = v.next_down();
            }
            for _ in 0..2000 {
                assert_eq!(memo.key(v, g), key_of(v, g), "{v:e}");
                v = v.next_up();
            }
            for _ in 0..2000 {
                v = v.next_down();
                assert_eq!(memo.key(v, g), key_of(v, g), "{v:e}");
            }
        }
    }
}
