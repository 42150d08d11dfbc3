//! A measured profile (`planner_profile_data`, spec §4.9.3 and breadth §3): prefill time by 1-D
//! and decode step time by 2-D linear interpolation, with linear extrapolation past the grid, over
//! the five float64 arrays of a mocker-format NPZ file:
//!
//! | array | shape | meaning |
//! | --- | --- | --- |
//! | `prefill_isl` | [n] | new tokens of a pass (`batch × (isl − prefix)`), strictly increasing |
//! | `prefill_ttft_ms` | [n] | prefill time of that many tokens, ms |
//! | `decode_active_kv_tokens` | [a] | active KV tokens of the worker, strictly increasing |
//! | `decode_context_length` | [c] | mean context length of the decode batch, strictly increasing |
//! | `decode_itl` | [a, c] | decode step time, ms (row: active KV tokens, column: context) |
//!
//! Where DynoSim logs an error and silently runs its polynomial instead (an array missing or not
//! float64, lengths that do not match, fewer than two points or a non-increasing axis), loading
//! here fails with an error naming the file and the array. Non-finite values are refused too.

use super::{LatencyModel, TimingSource};
use crate::error::InputError;
use ndarray::{Array, Dimension, Ix1, Ix2};
use ndarray_npy::{NpzReader, ReadNpyError, ReadNpzError};
use std::path::Path;

/// The names of the arrays a profile must have, in the order they are checked.
pub const PROFILE_ARRAYS: [&str; 5] = [
    "prefill_isl",
    "prefill_ttft_ms",
    "decode_active_kv_tokens",
    "decode_context_length",
    "decode_itl",
];

/// A loaded profile: interpolation tables, read-only.
#[derive(Debug, Clone, PartialEq)]
pub struct Interpolated {
    source: TimingSource,
    prefill_tokens: Vec<f64>,
    prefill_ms: Vec<f64>,
    decode_kv_tokens: Vec<f64>,
    decode_context: Vec<f64>,
    /// Row-major `[decode_kv_tokens.len()][decode_context.len()]`.
    decode_itl_ms: Vec<f64>,
}

/// Which array of a profile is wrong, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileError {
    pub array: &'static str,
    pub problem: String,
}

impl ProfileError {
    fn new(array: &'static str, problem: impl Into<String>) -> Self {
        ProfileError {
            array,
            problem: problem.into(),
        }
    }
}

impl Interpolated {
    /// Reads the profile at `path`; `file` is the path as the user wrote it (kept in the
    /// configuration with the file's SHA-256). Errors name the file and the array.
    pub fn from_npz(path: &Path, file: &str) -> Result<Self, InputError> {
        let shown = path.display();
        let bytes = std::fs::read(path)
            .map_err(|e| InputError::new(format!("{shown}: cannot read: {e}")))?;
        let sha256 = {
            use sha2::{Digest, Sha256};
            Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        };
        let mut npz = NpzReader::new(std::io::Cursor::new(bytes)).map_err(|e| {
            InputError::new(format!(
                "{shown}: not an NPZ archive ({e}); expected a file written by numpy.savez with \
                 the arrays {}",
                PROFILE_ARRAYS.join(", ")
            ))
        })?;
        let names = npz.names().unwrap_or_default();
        let refuse = |e: ProfileError| {
            InputError::new(format!(
                "{shown}: array \"{}\" {} (DynoSim 1.4.2 would ignore this profile and silently \
                 run its polynomial model)",
                e.array, e.problem
            ))
        };
        let mut read1 = |name: &'static str| read_array::<Ix1>(&mut npz, &names, name);
        let prefill_tokens = read1("prefill_isl").map_err(refuse)?;
        let prefill_ms = read1("prefill_ttft_ms").map_err(refuse)?;
        let decode_kv = read1("decode_active_kv_tokens").map_err(refuse)?;
        let decode_ctx = read1("decode_context_length").map_err(refuse)?;
        let itl = read_array::<Ix2>(&mut npz, &names, "decode_itl").map_err(refuse)?;
        let (rows, cols) = itl.dim();
        let source = TimingSource::PlannerProfileData {
            file: file.to_string(),
            sha256,
        };
        Interpolated::from_arrays(
            source,
            prefill_tokens.to_vec(),
            prefill_ms.to_vec(),
            decode_kv.to_vec(),
            decode_ctx.to_vec(),
            (rows, cols),
            // Logical (row-major) order whatever the file's memory order.
            itl.iter().copied().collect(),
        )
        .map_err(refuse)
    }

    /// Builds a profile from its arrays (`decode_itl` row-major with shape `itl_shape`),
    /// checking what the interpolation needs.
    pub fn from_arrays(
        source: TimingSource,
        prefill_tokens: Vec<f64>,
        prefill_ms: Vec<f64>,
        decode_kv_tokens: Vec<f64>,
        decode_context: Vec<f64>,
        itl_shape: (usize, usize),
        decode_itl_ms: Vec<f64>,
    ) -> Result<Self, ProfileError> {
        if prefill_ms.len() != prefill_tokens.len() {
            return Err(ProfileError::new(
                "prefill_ttft_ms",
                format!(
                    "has {} values but prefill_isl has {}; they must have the same length",
                    prefill_ms.len(),
                    prefill_tokens.len()
                ),
            ));
        }
        let (rows, cols) = itl_shape;
        if rows != decode_kv_tokens.len() || cols != decode_context.len() {
            return Err(ProfileError::new(
                "decode_itl",
                format!(
                    "has shape ({rows}, {cols}) but must be (len(decode_active_kv_tokens), \
                     len(decode_context_length)) = ({}, {})",
                    decode_kv_tokens.len(),
                    decode_context.len()
                ),
            ));
        }
        debug_assert_eq!(decode_itl_ms.len(), rows * cols);
        check_axis("prefill_isl", &prefill_tokens)?;
        check_axis("decode_active_kv_tokens", &decode_kv_tokens)?;
        check_axis("decode_context_length", &decode_context)?;
        check_finite("prefill_ttft_ms", &prefill_ms)?;
        check_finite("decode_itl", &decode_itl_ms)?;
        Ok(Interpolated {
            source,
            prefill_tokens,
            prefill_ms,
            decode_kv_tokens,
            decode_context,
            decode_itl_ms,
        })
    }

    pub fn source(&self) -> &TimingSource {
        &self.source
    }

    /// Prefill time of `tokens` new tokens in one pass, unclamped.
    pub fn prefill_of_tokens(&self, tokens: f64) -> f64 {
        let i = lower_index(&self.prefill_tokens, tokens);
        lerp(
            (self.prefill_tokens[i], self.prefill_ms[i]),
            (self.prefill_tokens[i + 1], self.prefill_ms[i + 1]),
            tokens,
        )
    }

    /// Decode step time at (`kv_tokens`, `context`), unclamped: linear along the KV axis on the
    /// two neighbouring context columns, then linear between them.
    pub fn decode_at(&self, kv_tokens: f64, context: f64) -> f64 {
        let (xs, ys) = (&self.decode_kv_tokens, &self.decode_context);
        let (i, j) = (lower_index(xs, kv_tokens), lower_index(ys, context));
        let cols = ys.len();
        let z = |r: usize, c: usize| self.decode_itl_ms[r * cols + c];
        let (x1, x2) = (xs[i], xs[i + 1]);
        let left = lerp((x1, z(i, j)), (x2, z(i + 1, j)), kv_tokens);
        let right = lerp((x1, z(i, j + 1)), (x2, z(i + 1, j + 1)), kv_tokens);
        lerp((ys[j], left), (ys[j + 1], right), context)
    }

    /// Grid sizes: (prefill points, decode rows, decode columns).
    pub fn grid(&self) -> (usize, usize, usize) {
        (
            self.prefill_tokens.len(),
            self.decode_kv_tokens.len(),
            self.decode_context.len(),
        )
    }
}

impl LatencyModel for Interpolated {
    fn prefill_ms(&self, batch_size: u64, isl: u64, prefix: u64) -> f64 {
        let new = isl.saturating_sub(prefix);
        if batch_size == 0 || new == 0 {
            return 0.0;
        }
        self.prefill_of_tokens((batch_size * new) as f64).max(0.0)
    }

    fn decode_ms(
        &self,
        batch_size: u64,
        active_kv_tokens: u64,
        context: u64,
        _total_kv_tokens: u64,
    ) -> f64 {
        if batch_size == 0 {
            return 0.0;
        }
        // Decode steps that emit tokens never take less than 1 ms (as DynoSim).
        self.decode_at(active_kv_tokens as f64, context as f64)
            .max(1.0)
    }
}

/// The segment `[axis[i], axis[i + 1]]` used for `x`: the one containing it, or the first or
/// last one when `x` is outside the grid (extrapolation). `axis` has at least two points.
#[inline]
fn lower_index(axis: &[f64], x: f64) -> usize {
    let n = axis.len();
    if x <= axis[0] {
        0
    } else if x >= axis[n - 1] {
        n - 2
    } else {
        axis.partition_point(|&a| a <= x) - 1
    }
}

/// The line through two points, at `x`.
#[inline]
fn lerp((x1, y1): (f64, f64), (x2, y2): (f64, f64), x: f64) -> f64 {
    (y2 - y1) / (x2 - x1) * (x - x1) + y1
}

fn check_axis(array: &'static str, axis: &[f64]) -> Result<(), ProfileError> {
    if axis.len() < 2 {
        return Err(ProfileError::new(
            array,
            format!(
                "has {} value(s); interpolation needs at least 2",
                axis.len()
            ),
        ));
    }
    check_finite(array, axis)?;
    if let Some(i) = axis.windows(2).position(|w| w[0] >= w[1]) {
        return Err(ProfileError::new(
            array,
            format!(
                "must be strictly increasing, but element {} ({}) is not above element {} ({})",
                i + 1,
                axis[i + 1],
                i,
                axis[i]
            ),
        ));
    }
    Ok(())
}

fn check_finite(array: &'static str, values: &[f64]) -> Result<(), ProfileError> {
    match values.iter().position(|v| !v.is_finite()) {
        Some(i) => Err(ProfileError::new(
            array,
            format!("has a non-finite value ({}) at index {i}", values[i]),
        )),
        None => Ok(()),
    }
}

/// Reads one float64 array of `D` dimensions, with a message for each way it can be wrong.
fn read_array<D: Dimension>(
    npz: &mut NpzReader<std::io::Cursor<Vec<u8>>>,
    names: &[String],
    name: &'static str,
) -> Result<Array<f64, D>, ProfileError> {
    let want = D::NDIM.unwrap_or(0);
    if !names.iter().any(|n| n == name) {
        return Err(ProfileError::new(
            name,
            format!(
                "is missing (the file has: {}); a profile needs {}",
                if names.is_empty() {
                    "no arrays".to_string()
                } else {
                    names.join(", ")
                },
                PROFILE_ARRAYS.join(", ")
            ),
        ));
    }
    npz.by_name::<ndarray::OwnedRepr<f64>, D>(name)
        .map_err(|e| match e {
            ReadNpzError::Npy(ReadNpyError::WrongDescriptor(d)) => ProfileError::new(
                name,
                format!(
                    "has dtype {d}; it must be float64 ('<f8'), as DynoSim reads it (convert it \
                     with numpy's .astype(numpy.float64))"
                ),
            ),
            ReadNpzError::Npy(ReadNpyError::WrongNdim(_, got)) => {
                ProfileError::new(name, format!("has {got} dimension(s); it must have {want}"))
            }
            other => ProfileError::new(name, format!("cannot be read: {other}")),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src() -> TimingSource {
        TimingSource::PlannerProfileData {
            file: "t.npz".into(),
            sha256: String::new(),
        }
    }

    /// prefill: 10 ms at 100 tokens, 30 ms at 300, 70 ms at 700; decode: z = 2 + kv/1000 +
    /// ctx/100 on kv ∈ {0, 1000, 3000} × ctx ∈ {100, 200} (bilinear reproduces a plane exactly).
    fn profile() -> Interpolated {
        let kv = vec![0.0, 1000.0, 3000.0];
        let ctx = vec![100.0, 200.0];
        let itl = kv
            .iter()
            .flat_map(|k| ctx.iter().map(move |c| 2.0 + k / 1000.0 + c / 100.0))
            .collect();
        Interpolated::from_arrays(
            src(),
            vec![100.0, 300.0, 700.0],
            vec![10.0, 30.0, 70.0],
            kv,
            ctx,
            (3, 2),
            itl,
        )
        .unwrap()
    }

    #[test]
    fn prefill_interpolates_and_extrapolates_linearly_in_total_new_tokens() {
        let p = profile();
        assert_eq!(p.prefill_ms(1, 100, 0), 10.0);
        assert_eq!(p.prefill_ms(1, 200, 0), 20.0);
        assert_eq!(p.prefill_ms(2, 250, 50), 40.0); // 400 tokens
        assert_eq!(p.prefill_ms(1, 1000, 0), 100.0); // beyond the grid: last segment
        assert_eq!(p.prefill_ms(1, 50, 0), 5.0); // below: first segment
        assert_eq!(p.prefill_ms(0, 100, 0), 0.0);
        assert_eq!(p.prefill_ms(3, 100, 100), 0.0);
    }

    #[test]
    fn prefill_is_clamped_at_zero_and_decode_at_one_ms() {
        let p = Interpolated::from_arrays(
            src(),
            vec![100.0, 200.0],
            vec![5.0, 20.0],
            vec![0.0, 1.0],
            vec![100.0, 200.0],
            (2, 2),
            vec![3.0, 2.0, 3.0, 2.0],
        )
        .unwrap();
        // Extrapolated to -9.85 ms at 1 token: clamped.
        assert_eq!(p.prefill_ms(1, 1, 0), 0.0);
        // Decode falls by 1 ms per 100 tokens of context: 0 ms at 400, clamped to 1 ms.
        assert!((p.decode_ms(1, 0, 250, 1) - 1.5).abs() < 1e-12);
        assert_eq!(p.decode_ms(1, 0, 400, 1), 1.0);
    }

    #[test]
    fn decode_is_bilinear_with_extrapolation() {
        let p = profile();
        let plane = |k: f64, c: f64| 2.0 + k / 1000.0 + c / 100.0;
        for (k, c) in [
            (0u64, 100u64),
            (500, 150),
            (2000, 175),
            (3000, 200),
            (6000, 400),
            (4000, 50),
        ] {
            let got = p.decode_ms(8, k, c, 1);
            let want = plane(k as f64, c as f64);
            assert!((got - want).abs() < 1e-9, "({k}, {c}): {got} vs {want}");
        }
        assert_eq!(p.decode_ms(0, 1000, 100, 1), 0.0);
        // The batch size enters only through the coordinates.
        assert_eq!(p.decode_ms(1, 700, 130, 1), p.decode_ms(64, 700, 130, 9));
    }

    #[test]
    fn decode_of_a_non_planar_grid_interpolates_cell_by_cell() {
        // One cell with corners 1, 3 (kv = 0) and 5, 11 (kv = 10) over ctx 0..2.
        let p = Interpolated::from_arrays(
            src(),
            vec![0.0, 1.0],
            vec![0.0, 1.0],
            vec![0.0, 10.0],
            vec![0.0, 2.0],
            (2, 2),
            vec![1.0, 3.0, 5.0, 11.0],
        )
        .unwrap();
        // kv 5: 3 at ctx 0, 7 at ctx 2 -> 5 at ctx 1.
        assert!((p.decode_at(5.0, 1.0) - 5.0).abs() < 1e-12);
        assert!((p.decode_at(10.0, 2.0) - 11.0).abs() < 1e-12);
    }

    #[test]
    fn bad_arrays_are_named() {
        let build = |isl: Vec<f64>, ttft: Vec<f64>, kv: Vec<f64>, shape| {
            let n = kv.len() * 2;
            Interpolated::from_arrays(src(), isl, ttft, kv, vec![1.0, 2.0], shape, vec![1.0; n])
                .unwrap_err()
        };
        let e = build(vec![1.0, 2.0], vec![1.0], vec![0.0, 1.0], (2, 2));
        assert_eq!(e.array, "prefill_ttft_ms");
        let e = build(vec![1.0, 1.0], vec![1.0, 2.0], vec![0.0, 1.0], (2, 2));
        assert_eq!(e.array, "prefill_isl");
        assert!(e.problem.contains("strictly increasing"), "{}", e.problem);
        let e = build(vec![1.0, 2.0], vec![1.0, 2.0], vec![1.0, 0.0], (2, 2));
        assert_eq!(e.array, "decode_active_kv_tokens");
        let e = build(vec![1.0, 2.0], vec![1.0, 2.0], vec![0.0, 1.0, 2.0], (2, 2));
        assert_eq!(e.array, "decode_itl");
        let e = build(vec![1.0], vec![1.0], vec![0.0, 1.0], (2, 2));
        assert!(e.problem.contains("at least 2"), "{}", e.problem);
        let e = build(vec![1.0, f64::NAN], vec![1.0, 2.0], vec![0.0, 1.0], (2, 2));
        assert!(e.problem.contains("non-finite"), "{}", e.problem);
    }

    #[test]
    fn lower_index_picks_the_segment_or_an_end_one() {
        let a = [0.0, 1.0, 2.0, 4.0];
        assert_eq!(lower_index(&a, -1.0), 0);
        assert_eq!(lower_index(&a, 0.0), 0);
        assert_eq!(lower_index(&a, 1.0), 1);
        assert_eq!(lower_index(&a, 3.9), 2);
        assert_eq!(lower_index(&a, 4.0), 2);
        assert_eq!(lower_index(&a, 9.0), 2);
    }
}
