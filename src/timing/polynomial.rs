//! DynoSim's default timing: one polynomial fit for prefill (in the pass's new tokens) and one for
//! decode (in KV utilisation), for an unnamed model on an unnamed GPU (spec §4.9.1, §4.9.2).

use super::LatencyModel;

/// DynoSim's default polynomial model (spec §4.9.1, §4.9.2).
#[derive(Debug, Clone, Copy, Default)]
pub struct Polynomial;

impl Polynomial {
    /// Prefill time of `total_new_tokens` new tokens in one pass. The square is taken first, as
    /// DynoSim evaluates it (see [`Polynomial::decode_of_utilisation`]; at 35,000 tokens the
    /// other order is 1 ns longer once rounded).
    #[inline]
    pub fn prefill_of_tokens(total_new_tokens: f64) -> f64 {
        let t = total_new_tokens;
        (4.209989e-07 * (t * t) + 1.518344e-02 * t + 1.650142e+01).max(0.0)
    }

    /// Decode step time at KV utilisation `p` in [0, 1], clamped to at least 1 ms. The square
    /// is taken first, as DynoSim evaluates it: `(−25.74 · p) · p` can differ in the last bit,
    /// which moves a pass time rounded to the nanosecond by 1 ns (at p = 0.875, for one).
    #[inline]
    pub fn decode_of_utilisation(p: f64) -> f64 {
        (-25.74 * (p * p) + 54.01 * p + 5.74).max(1.0)
    }
}

impl LatencyModel for Polynomial {
    fn decode_depends_on_context(&self) -> bool {
        false
    }

    fn prefill_ms(&self, batch_size: u64, isl: u64, prefix: u64) -> f64 {
        let new = isl.saturating_sub(prefix);
        if batch_size == 0 || new == 0 {
            return 0.0;
        }
        Self::prefill_of_tokens((batch_size * new) as f64)
    }

    fn decode_ms(
        &self,
        batch_size: u64,
        active_kv_tokens: u64,
        _context: u64,
        total_kv_tokens: u64,
    ) -> f64 {
        if batch_size == 0 {
            return 0.0;
        }
        let p = if total_kv_tokens == 0 {
            1.0
        } else {
            active_kv_tokens as f64 / total_kv_tokens as f64
        };
        Self::decode_of_utilisation(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn prefill_reference_values() {
        let m = Polynomial;
        for (t, want) in [
            (128, 18.452),
            (512, 24.386),
            (1024, 32.491),
            (2048, 49.363),
            (4096, 85.756),
            (8192, 169.137),
            (16384, 378.278),
        ] {
            let got = m.prefill_ms(1, t, 0);
            assert!(close(got, want, 1e-3), "T={t}: {got} vs {want}");
        }
        // Batch and prefix: total new tokens is what counts.
        assert!(close(m.prefill_ms(2, 1024 + 512, 512), 49.363, 1e-3));
        assert_eq!(m.prefill_ms(0, 100, 0), 0.0);
        assert_eq!(m.prefill_ms(3, 100, 100), 0.0);
    }

    #[test]
    fn decode_reference_values() {
        let m = Polynomial;
        let total = 1_000_000u64;
        for (p, want) in [
            (0.0, 5.74),
            (0.1, 10.8836),
            (0.25, 17.6337),
            (0.5, 26.31),
            (0.75, 31.7688),
            (1.0, 34.01),
        ] {
            let got = m.decode_ms(4, (p * total as f64) as u64, 100, total);
            assert!(close(got, want, 1e-3), "p={p}: {got} vs {want}");
        }
        assert_eq!(m.decode_ms(0, 10, 10, 100), 0.0);
        // Empty pool counts as full utilisation.
        assert!(close(m.decode_ms(1, 0, 0, 0), 34.01, 1e-9));
    }

    #[test]
    fn prefill_squares_the_tokens_first() {
        // A 35,000-token prefill: DynoSim's TTFT on one request (then one decode step) is
        // 1,071.159971 ms; with the coefficient multiplied in first the pass is 1 ns longer.
        let t = Polynomial::prefill_of_tokens(35_000.0);
        assert_eq!(crate::timing::pass_time(t, 1.0), 1063.645472);
    }

    #[test]
    fn decode_squares_the_utilisation_first() {
        // At p = 0.875 the two evaluation orders straddle a half nanosecond: DynoSim's pass
        // takes 33,291,562 ns (checked against the reference on 1,000-block pools, where the
        // orders differ at seven block counts); multiplying -25.74 by p first gives one more.
        let t = Polynomial::decode_of_utilisation(0.875);
        assert_eq!(t, 33.2915625);
        assert_eq!(crate::timing::pass_time(t, 1.0), 33.291562);
    }

    #[test]
    fn worked_vector_4_9_6() {
        // ISL 2048 on an empty default worker: prefill 49.363 ms, decode at 32 blocks of 64 in
        // 16384 blocks, first token at ~55.208 ms.
        let m = Polynomial;
        let prefill = m.prefill_ms(1, 2048, 0);
        let total_kv = 16384 * 64;
        let d1 = m.decode_ms(1, 32 * 64, 2048, total_kv);
        assert!(close(d1, 5.8454, 1e-4), "{d1}");
        assert!(close(prefill + d1, 55.208, 1e-3));
        let d2 = m.decode_ms(1, 33 * 64, 2049, total_kv);
        // The spec quotes "≈5.850"; the formula gives 5.84868 at p = 33·64 / 1,048,576.
        assert!(close(d2, 5.84868, 1e-5), "{d2}");
    }
}
