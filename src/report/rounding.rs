//! Exact `f64` → integer rounding (`ceil`, `round`) by hardware truncation instead of libm
//! calls: on the baseline x86-64 target `f64::ceil` and `f64::round` are function calls (no
//! SSE4.1 `roundsd`), and the report's sketches and moments round once or twice per token gap.
//! Every function here returns exactly what the `f64` method followed by a saturating cast
//! would, for every input (NaN, infinities, negative zero, halves, huge values); the tests check
//! that against the std methods.

/// Magnitude below which `v as i64` does not saturate (2^63 is the first that does).
const I64_SAFE: f64 = 9.0e18;

/// `v.ceil() as i32` (saturating; NaN → 0).
#[inline]
pub fn ceil_i32(v: f64) -> i32 {
    if v.abs() < I64_SAFE {
        // `as` truncates towards zero: that is the ceiling for negatives and integers, one
        // below it for positive non-integers. `t as f64` is exact: |t| < 2^63 and, past 2^53,
        // `v` is already an integer equal to `t`.
        let t = v as i64;
        let c = t + i64::from((t as f64) < v);
        c.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
    } else {
        v.ceil() as i32
    }
}

/// `v.round() as i128` (half away from zero; saturating; NaN → 0).
#[inline]
pub fn round_i128(v: f64) -> i128 {
    if v.abs() < I64_SAFE {
        let t = v as i64;
        // The fractional part `v − t` is exactly representable (it is `v`'s low bits), so the
        // subtraction is exact and the half comparisons are too.
        let frac = v - t as f64;
        // Flags rather than branches: the fraction of a token gap is anybody's guess.
        i128::from(t + i64::from(frac >= 0.5) - i64::from(frac <= -0.5))
    } else {
        v.round() as i128
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn edge_cases() -> Vec<f64> {
        let mut v = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            -1.5,
            2.5,
            -2.5,
            0.49999999999999994,
            -0.49999999999999994,
            0.5000000000000001,
            1.0 - f64::EPSILON / 2.0,
            1.0,
            -1.0,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
            5e-324,
            -5e-324,
            4503599627370495.5, // 2^52 − 0.5
            -4503599627370495.5,
            4503599627370496.0, // 2^52
            9007199254740993.0, // rounds to 2^53
            8.999999999999999e18,
            9.0e18,
            -9.0e18,
            9.223372036854775e18,
            9.223372036854776e18, // 2^63
            -9.223372036854776e18,
            1e19,
            -1e19,
            1.7e38,
            3.4e38, // past i128::MAX
            -3.4e38,
            f64::MAX,
            f64::MIN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            2147483647.0,
            2147483647.5,
            2147483648.0,
            -2147483648.0,
            -2147483648.5,
            -2147483649.0,
            1e10,
            -1e10,
        ];
        // Around every half and integer near zero, one ulp either side.
        for i in -40..=40 {
            let x = f64::from(i) * 0.5;
            v.extend([x, x.next_up(), x.next_down()]);
        }
        v
    }

    #[test]
    fn ceil_matches_std_on_edge_cases() {
        for x in edge_cases() {
            assert_eq!(ceil_i32(x), x.ceil() as i32, "ceil({x:e})");
        }
    }

    #[test]
    fn round_matches_std_on_edge_cases() {
        for x in edge_cases() {
            assert_eq!(round_i128(x), x.round() as i128, "round({x:e})");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        #[test]
        fn ceil_matches_std_on_any_bits(bits in any::<u64>()) {
            let x = f64::from_bits(bits);
            prop_assert_eq!(ceil_i32(x), x.ceil() as i32);
        }

        #[test]
        fn round_matches_std_on_any_bits(bits in any::<u64>()) {
            let x = f64::from_bits(bits);
            prop_assert_eq!(round_i128(x), x.round() as i128);
        }

        #[test]
        fn both_match_std_on_moderate_values(x in -1e7f64..1e7, scale in 0u32..40) {
            let y = x * f64::from(1u32 << (scale % 31)) / 1024.0;
            prop_assert_eq!(ceil_i32(y), y.ceil() as i32);
            prop_assert_eq!(round_i128(y), y.round() as i128);
        }
    }
}
