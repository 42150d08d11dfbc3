//! Calibration (issue 23 §3): per family of deployments (GPU system, backend, model, as AIC
//! timing names them) the few corrections that make the simulation match measured points, the
//! file `dynosim calibrate` writes and `--calibration` reads, and how a deployment's engine args
//! take them.
//!
//! The corrections are time scales of the two kinds of forward pass, which DynoSim's engine args
//! already express (spec §4.9.5): `prefill_scale` multiplies every prefill pass's time (it
//! divides `speedup_ratio`), `decode_scale` every decode step's (it divides `speedup_ratio ×
//! decode_speedup_ratio`; under multi-token prediction, where DynoSim holds
//! `decode_speedup_ratio` at 1, dynosim's `decode_time_scale` takes the decode step's share
//! instead). Both compose with ratios the user set: a calibrated run of
//! `speedup_ratio: 2` is twice as fast as the calibrated run of 1. The other two are the
//! serving stack's fixed costs: a per-request overhead, added to the pool's
//! `request_overhead_ms`, a per-prefill-pass overhead, added to its `prefill_pass_overhead_ms`,
//! and a signed per-decode-pass overhead, added to its `decode_pass_overhead_ms`. An entry may
//! be narrowed to one decoding mode (`decoding`, e.g. `mtp3`), one release of the serving
//! engine (`server_version`, e.g. `0.17.0`), one weight quantisation (`quantisation`, e.g.
//! `nvfp4`) and/or one deployment shape (`parallelism`, e.g. `tp4-ep4`), which then wins over
//! the family's entry for pools of that mode, release, quantisation or shape.
//!
//! * here: the file format ([`CalibrationFile`], versioned JSON), loading it with errors that
//!   name the file and the key, and applying it ([`CalibrationFile::apply`]);
//! * `fit`: the fitting algorithm over any simulator of measured points (a search over the
//!   ratio of the two scales and the pass overhead, the common scale and the request overhead
//!   in closed form), and its cross-validation;
//! * `command`: `dynosim calibrate`, which feeds `fit` the measured points and simulation of
//!   `dynosim validate` (on the floor above `validate`).
//!
//! This module imports only `config`, `timing` and `error`, so `run` and `sweep` can apply a
//! calibration.

pub mod command;
pub mod fit;

use crate::config::{EngineArgs, Topology};
use crate::error::InputError;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

/// `format` of a calibration file.
pub const FORMAT: &str = "dynosim-calibration";
/// The `version` this dynosim writes and reads.
pub const VERSION: u32 = 1;

/// Which deployments a calibration applies to: AIC timing's GPU system, backend and model
/// (`aic_system`, `aic_backend`, `aic_model_path`, as the engine args name them).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Family {
    pub system: String,
    pub backend: String,
    pub model: String,
    /// A decoding mode within the family ([`decoding_label`]: `plain`, or `mtp3` for
    /// multi-token prediction with 3 draft tokens): an entry with one applies to pools that
    /// decode so and wins over the family's entry without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decoding: Option<String>,
    /// A release of the serving engine within the family (`"0.17.0"`, the measured rows'
    /// `backend_version`, a pool's `server_version`): an entry with one applies to pools that
    /// name that release and wins over the family's entry without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// A weight quantisation within the family ([`quantisation_label`], e.g. `fp8` or
    /// `nvfp4`): an entry with one applies to pools of that quantisation and wins over the
    /// family's entry without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantisation: Option<String>,
    /// A deployment shape within the family ([`parallelism_label`], e.g. `tp4` or
    /// `tp4-dp4-ep16`): an entry with one applies to pools of that shape and wins over the
    /// family's entry without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<String>,
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.system, self.backend, self.model)?;
        if let Some(d) = &self.decoding {
            write!(f, " {d}")?;
        }
        if let Some(v) = &self.server_version {
            write!(f, " {}", version_label(v))?;
        }
        for narrower in [&self.quantisation, &self.parallelism]
            .into_iter()
            .flatten()
        {
            write!(f, " {narrower}")?;
        }
        Ok(())
    }
}

impl Family {
    /// The same family without a decoding mode, release, quantisation or deployment shape.
    pub fn generic(&self) -> Family {
        Family {
            decoding: None,
            server_version: None,
            quantisation: None,
            parallelism: None,
            ..self.clone()
        }
    }

    /// The entries that may apply to a pool of this family, most specific first and each
    /// once: those that keep its release first (an entry without one was fitted on rows of
    /// other releases, or of none: `calibrate` narrows the rows of releases without entries of
    /// their own apart), then those that keep more of its decoding mode, quantisation and shape,
    /// and among as many the earlier of these before the later (with all four: all four; all
    /// but the shape; …; the release alone; then mode, quantisation and shape; …; the shape
    /// alone; none). A pool that decodes with multi-token prediction runs other passes than a
    /// plain one, and AIC's kernels differ more between dtypes than between shapes of one
    /// dtype. Calibration files and validate's corrections look entries up so.
    pub fn fallbacks(&self) -> Vec<Family> {
        let parts = [
            &self.decoding,
            &self.server_version,
            &self.quantisation,
            &self.parallelism,
        ];
        // Subsets of the four as bit masks (bit 3 = the decoding mode, bit 2 the release …
        // bit 0 = the shape): the release kept first, then more kept, then the larger mask
        // (earlier parts kept) first.
        let mut masks: Vec<u32> = (0..16).collect();
        masks.sort_by_key(|&m| {
            use std::cmp::Reverse;
            (Reverse(m & 4), Reverse(m.count_ones()), Reverse(m))
        });
        let mut out: Vec<Family> = Vec::with_capacity(masks.len());
        for m in masks {
            let keep = |i: u32| {
                if m & (1 << (3 - i)) != 0 {
                    parts[i as usize].clone()
                } else {
                    None
                }
            };
            let f = Family {
                decoding: keep(0),
                server_version: keep(1),
                quantisation: keep(2),
                parallelism: keep(3),
                ..self.clone()
            };
            if !out.contains(&f) {
                out.push(f);
            }
        }
        out
    }
}

/// How a release shows in a family's name: `v0.17.0` (the release as given when it does not
/// start with a digit, as `nightly-dev`).
pub fn version_label(v: &str) -> String {
    if v.starts_with(|c: char| c.is_ascii_digit()) {
        format!("v{v}")
    } else {
        v.to_string()
    }
}

/// The decoding mode of an AIC pool as calibration files name it: `plain`, or `mtp{N}` with
/// multi-token prediction of N draft tokens (`aic_nextn`).
pub fn decoding_label(nextn: Option<u32>) -> String {
    match nextn {
        Some(n) => format!("mtp{n}"),
        None => "plain".to_string(),
    }
}

/// The weight quantisation of an AIC pool as calibration files name it, from its GEMM and MoE
/// dtypes (`aic_gemm_dtype`, `aic_moe_dtype`; absent = AIC's default for the model): the GEMM
/// dtype (`default` when absent), then `-moe-` and the MoE dtype when that is set and differs
/// (`fp8`, `nvfp4`, `fp8-moe-fp8_block`, `default`).
pub fn quantisation_label(gemm: Option<&str>, moe: Option<&str>) -> String {
    let g = gemm.unwrap_or("default");
    match moe {
        Some(m) if m != g => format!("{g}-moe-{m}"),
        _ => g.to_string(),
    }
}

/// The deployment shape of an AIC pool as calibration files name it: `tp{T}`, then `-dp{D}`
/// with attention data parallelism, then `-ep{E}` with expert parallelism (MoE TP is the rest:
/// T × D / E).
pub fn parallelism_label(tp: u32, attention_dp: u32, moe_ep: Option<u32>) -> String {
    let mut s = format!("tp{tp}");
    if attention_dp > 1 {
        s.push_str(&format!("-dp{attention_dp}"));
    }
    if let Some(ep) = moe_ep.filter(|&e| e > 1) {
        s.push_str(&format!("-ep{ep}"));
    }
    s
}

/// The fitted corrections of one family: multipliers of simulated pass times (1 = unchanged)
/// and the serving stack's per-request overhead (0 = none).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Corrections {
    /// Multiplies the time of every prefill pass.
    pub prefill_scale: f64,
    /// Multiplies the time of every decode step.
    pub decode_scale: f64,
    /// ms added to every request's way in (`request_overhead_ms`), on top of the pool's own.
    #[serde(default)]
    pub request_overhead_ms: f64,
    /// ms added to every engine pass that computes prompt tokens (`prefill_pass_overhead_ms`),
    /// on top of the pool's own: the serving stack's fixed cost of a prefill pass.
    #[serde(default)]
    pub prefill_pass_overhead_ms: f64,
    /// ms added to every engine pass that decodes (`decode_pass_overhead_ms`; may be
    /// negative), on top of the pool's own: a fixed part of a decode step the timing model
    /// gets wrong. Written only when fitted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub decode_pass_overhead_ms: f64,
    /// Multiplies the KV pool's block count (`kv_pool_scale`), on top of the pool's own: the
    /// servers held more (> 1) or fewer (< 1) tokens than the memory model gives. Written only
    /// when fitted.
    #[serde(default = "one", skip_serializing_if = "crate::config::is_unit")]
    pub kv_pool_scale: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn one() -> f64 {
    1.0
}

impl Corrections {
    pub const NONE: Corrections = Corrections {
        prefill_scale: 1.0,
        decode_scale: 1.0,
        request_overhead_ms: 0.0,
        prefill_pass_overhead_ms: 0.0,
        decode_pass_overhead_ms: 0.0,
        kv_pool_scale: 1.0,
    };

    /// Applies the scales to one pool's engine args, composed with the ratios already set
    /// (a ratio ≤ 0 means "no scaling" to DynoSim, so it counts as 1 here).
    pub fn apply_to(&self, e: &mut EngineArgs) {
        let s = if e.speedup_ratio > 0.0 {
            e.speedup_ratio
        } else {
            1.0
        };
        let d = if e.decode_speedup_ratio > 0.0 {
            e.decode_speedup_ratio
        } else {
            1.0
        };
        // prefill divisor s' = s / a; decode divisor s'·d' = s·d / b.
        e.speedup_ratio = s / self.prefill_scale;
        if e.mtp.is_some() {
            // Multi-token prediction keeps decode_speedup_ratio at 1 (DynoSim's rule): the
            // decode time takes the factor b / a as a multiplier instead.
            e.decode_time_scale *= self.decode_scale / self.prefill_scale;
        } else {
            e.decode_speedup_ratio = d * self.prefill_scale / self.decode_scale;
        }
        e.request_overhead_ms += self.request_overhead_ms;
        e.prefill_pass_overhead_ms += self.prefill_pass_overhead_ms;
        e.decode_pass_overhead_ms += self.decode_pass_overhead_ms;
        e.kv_pool_scale *= self.kv_pool_scale;
    }
}

/// Error figures of a set of predictions against measurements, in percent of the measured value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ErrorSummary {
    /// Predictions compared (a row counts once per time it was predicted; in a record's
    /// `as_applied`, rows).
    pub n: usize,
    pub ttft_mean_abs_pct: f64,
    pub ttft_signed_median_pct: f64,
    pub tpot_mean_abs_pct: f64,
    pub tpot_signed_median_pct: f64,
}

impl ErrorSummary {
    /// What `calibrate`'s fits minimise and its checks compare: mean |TTFT error| + mean |TPOT
    /// error|.
    pub fn objective(&self) -> f64 {
        self.ttft_mean_abs_pct + self.tpot_mean_abs_pct
    }

    /// The two mean absolute errors as the console prints them, `TTFT%/TPOT%`.
    pub fn pair(&self) -> String {
        format!(
            "{:.1}%/{:.1}%",
            self.ttft_mean_abs_pct, self.tpot_mean_abs_pct
        )
    }
}

/// How a family's corrections were fitted, and the errors to expect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FitRecord {
    /// Measured points the fit used (their ids), in the order they were given.
    pub rows: Vec<String>,
    /// Measured points of the family that could not be simulated (id: reason).
    #[serde(default)]
    pub rows_failed: Vec<String>,
    /// What the fit minimises.
    pub objective: String,
    /// All rows, simulated without corrections.
    pub uncalibrated: ErrorSummary,
    /// All rows, simulated with the fitted corrections (in-sample: optimistic).
    pub fitted: ErrorSummary,
    /// Rows predicted by corrections fitted without them: the error to expect on unseen points.
    pub cross_validated: Option<CrossValidation>,
    /// Simulations of a measured point the fit and its cross-validation ran.
    pub simulations: usize,
    /// The rows the fitted corrections still leave more than 50 % off in TTFT or TPOT, worst
    /// first (at most five): measurements no correction of this kind matches, which pull the
    /// fit and its errors.
    #[serde(default)]
    pub unmatched_rows: Vec<fit::UnmatchedRow>,
    /// With `--fit-kv-pool`, where a KV pool factor other than 1 was fitted (on all the rows or
    /// in a fold): the cross-validated errors with and without the factor, and which one the
    /// entry keeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_pool_check: Option<OptionCheck>,
    /// Unless `--no-fit-pass-overhead`, where a prefill pass overhead other than 0 was fitted
    /// (on all the rows or in a fold): the cross-validated errors with and without it, and
    /// which one the entry keeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_overhead_check: Option<OptionCheck>,
    /// Unless `--no-fit-decode-overhead`, where a decode pass overhead other than 0 was fitted
    /// (on all the rows or in a fold): the cross-validated errors with and without it, and
    /// which one the entry keeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_overhead_check: Option<OptionCheck>,
    /// For an entry narrower than its family (a decoding mode, weight quantisation or
    /// deployment shape): the wider entry's held-out predictions of the same rows (its
    /// cross-validation's, where they were not among the rows it was fitted on), to set
    /// against `cross_validated`: whether fitting these rows alone predicts them better.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wider_held_out: Option<ErrorSummary>,
    /// For a family with narrower entries (on its widest entry): the held-out errors of all
    /// its rows, each predicted by the entry that applies to it (the most specific one kept),
    /// by that entry's cross-validation: the error to expect on the family's pools. Each row
    /// weighs the same (its errors averaged over the folds that held it out); `n` counts rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_applied: Option<ErrorSummary>,
}

/// An optional correction (a KV pool factor, a prefill or decode pass overhead) against the fit
/// without it, both cross-validated the same way. The correction is kept only when its held-out
/// objective (mean |TTFT error| + mean |TPOT error|) is lower: one more free value fitted on a
/// third of a family can follow that third's noise (a KV pool factor places a queueing
/// threshold from a few points; a decode overhead traded against the decode scale on rows of
/// similar steps) and misplace every row it did not see.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptionCheck {
    /// Whether the entry keeps the correction (its corrections and figures are then the fit
    /// with it; otherwise the fit without it).
    pub kept: bool,
    /// The cross-validated errors with the correction fitted (`with_factor` in files written
    /// before 2026-12-05, when only the KV pool factor was checked).
    #[serde(alias = "with_factor")]
    pub with: ErrorSummary,
    /// The cross-validated errors of the fit without it.
    #[serde(alias = "without_factor")]
    pub without: ErrorSummary,
}

/// The cross-validation of one family's fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrossValidation {
    /// `folds-fit-on-one`, `folds-fit-on-rest` or `leave-one-out`.
    pub scheme: String,
    pub folds: usize,
    /// The distinct points the rows measure (rows that simulate the same run, a point
    /// benchmarked more than once, are one point, always held out together); absent in files
    /// written before repeats were grouped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub points: Option<usize>,
    /// Errors over every held-out prediction.
    pub errors: ErrorSummary,
    /// The corrections each fold's fit found, in fold order (how stable the fit is).
    pub fold_corrections: Vec<Corrections>,
    /// Every held-out prediction with its row (the fit's own index of it), in the order they
    /// were made; not written to the file. A narrower entry's rows are looked up here to say
    /// how the wider fit predicted them.
    #[serde(skip)]
    pub held_out: Vec<(usize, fit::Prediction)>,
}

/// One family's entry of a calibration file: the family's three names, its corrections and
/// how they were fitted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FamilyCalibration {
    pub system: String,
    pub backend: String,
    pub model: String,
    /// The decoding mode this entry is for (absent: every decoding mode of the family without
    /// an entry of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decoding: Option<String>,
    /// The serving engine's release this entry is for (absent: every release of the family
    /// without an entry of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// The weight quantisation this entry is for (absent: every quantisation of the family
    /// without an entry of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantisation: Option<String>,
    /// The deployment shape this entry is for (absent: every shape of the family without an
    /// entry of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<String>,
    pub prefill_scale: f64,
    pub decode_scale: f64,
    /// ms added to every request's way in (absent in files written before it was fitted: 0).
    #[serde(default)]
    pub request_overhead_ms: f64,
    /// ms added to every prefill pass (absent in files written before it was fitted: 0).
    #[serde(default)]
    pub prefill_pass_overhead_ms: f64,
    /// ms added to every decode pass, signed (absent when not fitted: 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub decode_pass_overhead_ms: f64,
    /// Multiplies the KV pool's block count (absent when not fitted: 1).
    #[serde(default = "one", skip_serializing_if = "crate::config::is_unit")]
    pub kv_pool_scale: f64,
    /// Fitted on AIC decode times read as monotone in the batch (`aic_decode_monotone`, which
    /// a calibrated pool then gets too); absent: fitted on AIC's times as they are, and a
    /// calibrated pool keeps its own reading.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub monotone_decode: bool,
    /// Fitted with steps that prefill and decode timed as one forward (`mixed_pass: fused`,
    /// which a calibrated pool then gets where its engine allows it); absent: as DynoSim times
    /// them, and a calibrated pool keeps its own timing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fused_mixed_pass: bool,
    /// Provenance (absent in a hand-written file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit: Option<FitRecord>,
}

impl FamilyCalibration {
    pub fn new(family: Family, c: Corrections, fit: Option<FitRecord>) -> Self {
        FamilyCalibration {
            system: family.system,
            backend: family.backend,
            model: family.model,
            decoding: family.decoding,
            server_version: family.server_version,
            quantisation: family.quantisation,
            parallelism: family.parallelism,
            prefill_scale: c.prefill_scale,
            decode_scale: c.decode_scale,
            request_overhead_ms: c.request_overhead_ms,
            prefill_pass_overhead_ms: c.prefill_pass_overhead_ms,
            decode_pass_overhead_ms: c.decode_pass_overhead_ms,
            kv_pool_scale: c.kv_pool_scale,
            monotone_decode: false,
            fused_mixed_pass: false,
            fit,
        }
    }

    pub fn family(&self) -> Family {
        Family {
            system: self.system.clone(),
            backend: self.backend.clone(),
            model: self.model.clone(),
            decoding: self.decoding.clone(),
            server_version: self.server_version.clone(),
            quantisation: self.quantisation.clone(),
            parallelism: self.parallelism.clone(),
        }
    }

    pub fn corrections(&self) -> Corrections {
        Corrections {
            prefill_scale: self.prefill_scale,
            decode_scale: self.decode_scale,
            request_overhead_ms: self.request_overhead_ms,
            prefill_pass_overhead_ms: self.prefill_pass_overhead_ms,
            decode_pass_overhead_ms: self.decode_pass_overhead_ms,
            kv_pool_scale: self.kv_pool_scale,
        }
    }
}

/// A calibration file: `{"format": "dynosim-calibration", "version": 1, "families": [...]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalibrationFile {
    pub format: String,
    pub version: u32,
    /// The program that wrote it (`dynosim 0.1.0`).
    #[serde(default)]
    pub created_by: String,
    /// The measured-point files it was fitted on, as given.
    #[serde(default)]
    pub inputs: Vec<String>,
    /// The settings of the fit (cross-validation, workload shape), as `dynosim calibrate` got them.
    #[serde(default)]
    pub options: serde_json::Map<String, serde_json::Value>,
    pub families: Vec<FamilyCalibration>,
}

/// What applying a calibration did to one pool.
#[derive(Debug, Clone, PartialEq)]
pub enum Applied {
    Calibrated(Family, Corrections),
    /// The pool's timing is not AIC's (DynoSim's polynomial, or a measured profile).
    NoAicTiming,
    /// The file has no entry for the pool's family.
    Absent(Family),
}

impl Applied {
    /// A short description for notes (`calibrated h200_sxm vllm M: prefill ×1.18, decode ×0.99`).
    pub fn describe(&self) -> String {
        match self {
            Applied::Calibrated(f, c) => {
                let mut s = format!(
                    "{f}: prefill time x{}, decode time x{}",
                    short(c.prefill_scale),
                    short(c.decode_scale)
                );
                if c.request_overhead_ms != 0.0 {
                    s.push_str(&format!(
                        ", request overhead +{} ms",
                        short(c.request_overhead_ms)
                    ));
                }
                if c.prefill_pass_overhead_ms != 0.0 {
                    s.push_str(&format!(
                        ", prefill pass overhead +{} ms",
                        short(c.prefill_pass_overhead_ms)
                    ));
                }
                if c.decode_pass_overhead_ms != 0.0 {
                    s.push_str(&format!(
                        ", decode pass overhead {}{} ms",
                        if c.decode_pass_overhead_ms > 0.0 {
                            "+"
                        } else {
                            ""
                        },
                        short(c.decode_pass_overhead_ms)
                    ));
                }
                if c.kv_pool_scale != 1.0 {
                    s.push_str(&format!(", KV pool x{}", short(c.kv_pool_scale)));
                }
                s
            }
            Applied::NoAicTiming => {
                "uncalibrated: no AIC timing (the family is AIC's system, backend and model)"
                    .to_string()
            }
            Applied::Absent(f) => format!("uncalibrated: no calibration for {f} in the file"),
        }
    }
}

fn short(x: f64) -> String {
    format!("{x:.4}")
        .trim_end_matches('0')
        .trim_end_matches('.')
        .to_string()
}

impl CalibrationFile {
    /// An empty file of the current format.
    pub fn new(inputs: Vec<String>, options: serde_json::Map<String, serde_json::Value>) -> Self {
        CalibrationFile {
            format: FORMAT.to_string(),
            version: VERSION,
            created_by: format!("dynosim {}", env!("CARGO_PKG_VERSION")),
            inputs,
            options,
            families: Vec::new(),
        }
    }

    /// Reads and checks a calibration file; `origin` (a flag or spec key) prefixes every message.
    pub fn load(path: &Path, origin: &str) -> Result<Self, InputError> {
        let at = format!("{origin}: {}", path.display());
        let text = std::fs::read_to_string(path)
            .map_err(|e| InputError::new(format!("{at}: cannot read the calibration file: {e}")))?;
        Self::parse(&text).map_err(|e| e.with_origin(at))
    }

    /// Parses and checks the text of a calibration file.
    pub fn parse(text: &str) -> Result<Self, InputError> {
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| InputError::new(format!("line {}: not valid JSON: {e}", e.line())))?;
        // The format and version first, so a file of another kind or version gets that message
        // rather than one about its fields.
        match value.get("format").and_then(|f| f.as_str()) {
            Some(FORMAT) => {}
            Some(other) => {
                return Err(InputError::new(format!(
                    "key \"format\" is \"{other}\", expected \"{FORMAT}\" (a file written by \
                     dynosim calibrate)"
                )))
            }
            None => {
                return Err(InputError::new(format!(
                    "key \"format\" missing or not a string: expected \"{FORMAT}\" (a file \
                     written by dynosim calibrate)"
                )))
            }
        }
        match value.get("version").and_then(|v| v.as_u64()) {
            Some(v) if v == u64::from(VERSION) => {}
            Some(v) => {
                return Err(InputError::new(format!(
                    "key \"version\" is {v}; this dynosim reads version {VERSION}"
                )))
            }
            None => {
                return Err(InputError::new(format!(
                    "key \"version\" missing or not an integer: expected {VERSION}"
                )))
            }
        }
        // Typed from the text, so a wrong or unknown key is reported with its line.
        let file: CalibrationFile = serde_json::from_str(text)
            .map_err(|e| InputError::new(format!("line {}: {e}", e.line())))?;
        file.check()?;
        Ok(file)
    }

    fn check(&self) -> Result<(), InputError> {
        let mut seen = std::collections::BTreeMap::new();
        for (i, f) in self.families.iter().enumerate() {
            for (key, x) in [
                ("prefill_scale", f.prefill_scale),
                ("decode_scale", f.decode_scale),
            ] {
                if !(x.is_finite() && x > 0.0) {
                    return Err(InputError::new(format!(
                        "families[{i}].{key} = {x}: expected a finite number > 0 (a multiplier \
                         of simulated pass times)"
                    )));
                }
            }
            for (key, o) in [
                ("request_overhead_ms", f.request_overhead_ms),
                ("prefill_pass_overhead_ms", f.prefill_pass_overhead_ms),
            ] {
                if !(o.is_finite() && (0.0..=3.6e6).contains(&o)) {
                    return Err(InputError::new(format!(
                        "families[{i}].{key} = {o}: expected a number of ms in [0, 3600000]"
                    )));
                }
            }
            let d = f.decode_pass_overhead_ms;
            if !(d.is_finite() && (-3.6e6..=3.6e6).contains(&d)) {
                return Err(InputError::new(format!(
                    "families[{i}].decode_pass_overhead_ms = {d}: expected a number of ms in \
                     [-3600000, 3600000]"
                )));
            }
            if let Some(j) = seen.insert(f.family(), i) {
                return Err(InputError::new(format!(
                    "families[{i}] repeats the family of families[{j}] ({})",
                    f.family()
                )));
            }
        }
        Ok(())
    }

    /// The entry for `family`: the most specific the file has, in the order of
    /// [`Family::fallbacks`] (from all of decoding mode, quantisation and shape to the family).
    pub fn get(&self, family: &Family) -> Option<&FamilyCalibration> {
        family.fallbacks().into_iter().find_map(|want| {
            self.families.iter().find(|f| {
                f.system == want.system
                    && f.backend == want.backend
                    && f.model == want.model
                    && f.decoding == want.decoding
                    && f.server_version == want.server_version
                    && f.quantisation == want.quantisation
                    && f.parallelism == want.parallelism
            })
        })
    }

    /// Calibrates one pool: its AIC family's corrections, if the file has them.
    pub fn apply(&self, e: &mut EngineArgs) -> Applied {
        let Some(family) = family_of(e) else {
            return Applied::NoAicTiming;
        };
        match self.get(&family) {
            Some(f) => {
                let c = f.corrections();
                c.apply_to(e);
                if f.monotone_decode {
                    e.timing = e.timing.with_monotone_decode();
                }
                if f.fused_mixed_pass && e.can_fuse_mixed_passes() {
                    e.mixed_pass = crate::config::MixedPass::Fused;
                }
                Applied::Calibrated(f.family(), c)
            }
            None => Applied::Absent(family.generic()),
        }
    }

    /// Calibrates every pool of a deployment; one outcome per pool (aggregated: one; prefill,
    /// then decode).
    pub fn apply_topology(&self, t: &mut Topology) -> Vec<Applied> {
        match t {
            Topology::Aggregated { engine, .. } => vec![self.apply(engine)],
            Topology::Disaggregated {
                prefill, decode, ..
            } => vec![self.apply(prefill), self.apply(decode)],
        }
    }

    /// The file as written (pretty JSON, a final newline).
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }
}

/// The family a pool's timing belongs to: `None` unless its passes are timed by AIC (a measured
/// profile wins over AIC, as in DynoSim, and is not calibrated).
pub fn family_of(e: &EngineArgs) -> Option<Family> {
    let aic = e.timing.aic_latency()?;
    let id = aic.id();
    Some(Family {
        system: id.system.clone(),
        backend: id.backend.clone(),
        model: id.model_path.clone(),
        decoding: Some(decoding_label(e.mtp.as_ref().map(|m| m.nextn))),
        server_version: e.server_version.clone(),
        quantisation: Some(quantisation_label(
            id.gemm_dtype.as_deref(),
            id.moe_dtype.as_deref(),
        )),
        parallelism: Some(parallelism_label(
            id.tp_size,
            id.attention_dp_size,
            id.moe_ep_size,
        )),
    })
}

/// One line for stderr per distinct outcome of calibrating a set of pools
/// (`calibration: calibrated h200_sxm vllm M: …`).
pub fn notes(outcomes: &[Applied]) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for o in outcomes {
        let line = match o {
            Applied::Calibrated(..) => format!("calibrated {}", o.describe()),
            _ => o.describe(),
        };
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    lines
}

#[cfg(test)]
mod tests;
