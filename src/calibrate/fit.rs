//! Fitting one family's corrections to measured points by simulating them in the loop, and
//! cross-validating the fit.
//!
//! The search rests on one property of the simulation: scaling every pass time by the same
//! factor `k` scales every simulated time by `k` when requests do not arrive on a clock (the
//! measured benchmarks send all prompts at once under a concurrency cap). So of the two
//! corrections only their ratio `r = prefill_scale / decode_scale` changes the shape of a run
//! (how prefill passes and decode steps interleave, so queueing and first-token times); the
//! common scale `k` just multiplies the predictions. The fit therefore searches `r` in one
//! dimension (a coarse-to-fine grid over log₂ r, every grid point one simulation of the training
//! rows at `decode_scale = 1`), and for each `r` takes the `k` that minimises the objective in
//! closed form (a weighted median). The corrections found are then simulated as they are, and
//! those predictions (not the scaled ones) give every reported error; where the runs are not
//! scale-invariant (points arriving at a request rate), up to three closed-form updates of `k`
//! on real predictions follow.
//!
//! The per-prefill-pass overhead, when asked ([`Fit::pass_overhead`]), scales with the passes
//! (a probe takes it at decode scale 1, and `k` multiplies it too), so runs stay
//! scale-invariant: it is searched on a lattice at the best ratio, then the ratio and it are
//! refined in turn ([`fit`]). Runs are linear in it as in the decode pass overhead (below), so
//! a ratio is simulated once more with [`SLOPE_PROBE_MS`] of it and every lattice point of that
//! ratio follows from the two runs.
//!
//! The per-request overhead (ms from a client's send to the engine, the same for every request)
//! is fitted with the common scale when asked ([`Fit::request_overhead`]): for each `r`,
//! predicted TTFTs are taken as `k·T + o`; the objective is jointly convex in (k, o), `o` has a
//! closed form for each `k` (a weighted median of the shortfalls, at least 0), and `k` is found
//! by a golden-section search. The overhead breaks scale invariance only slightly (it holds a
//! concurrency slot for a few ms), which the updates on real predictions absorb.
//!
//! The per-decode-pass overhead, when asked ([`Fit::decode_overhead`]), is signed (the measured
//! servers' decode steps may have a fixed part shorter or longer than AIC's), and it needs no
//! search of its own: with every prompt sent at once under a concurrency cap, which requests
//! share each pass does not depend on how long the passes take, so adding `D` ms to every pass
//! that decodes adds `D` times the number of such passes in a request's wait to its TTFT and
//! in its decoding to its TPOT. Each probe therefore simulates the rows twice, without the
//! overhead and with [`SLOPE_PROBE_MS`] of it; the difference gives every row's two counts, and
//! the objective, jointly convex in (k, o, D), is minimised over `D` by a golden-section search
//! around the closed-form (k, o).
//!
//! The KV pool's size, when asked ([`Fit::kv_pool`]), is a factor on its block count: it moves
//! the point where a server stops admitting and queues, which no time scale can, and leaves
//! runs scale-invariant. It is searched on a lattice at the best ratio, alternating with the
//! ratio, and kept only for a clear gain (`Search::search_kv`).
//!
//! Objective: mean |TTFT error| + mean |TPOT error| over the rows, errors relative to the
//! measured value. Grid points sit on a fixed dyadic lattice of log₂ r, so folds of a
//! cross-validation share most simulations through the memo ([`Memo`]); a fold's fit still
//! reads only its own training rows' predictions.

use super::{Corrections, CrossValidation, ErrorSummary};
use std::collections::HashMap;

/// The measured times of one point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Target {
    pub ttft_ms: f64,
    pub tpot_ms: f64,
}

/// Predicted (TTFT, TPOT) of one point, in ms; `Err` with the reason when it cannot be simulated.
pub type Prediction = Result<(f64, f64), String>;

/// Simulates measured points under corrections. `rows` index the family's points.
pub trait Simulator {
    fn predict(&mut self, rows: &[usize], c: Corrections) -> Vec<Prediction>;
}

impl<F: FnMut(&[usize], Corrections) -> Vec<Prediction>> Simulator for F {
    fn predict(&mut self, rows: &[usize], c: Corrections) -> Vec<Prediction> {
        self(rows, c)
    }
}

/// Predictions already simulated, by (row, corrections' bits): a fit and its cross-validation
/// run each distinct simulation once.
pub struct Memo<'s> {
    sim: &'s mut dyn Simulator,
    done: HashMap<(usize, [u64; 6]), Prediction>,
    /// Simulations run (not memo hits).
    pub simulations: usize,
}

impl<'s> Memo<'s> {
    pub fn new(sim: &'s mut dyn Simulator) -> Self {
        Memo {
            sim,
            done: HashMap::new(),
            simulations: 0,
        }
    }

    /// Records a prediction already simulated elsewhere (not counted as a simulation).
    pub fn seed(&mut self, row: usize, c: Corrections, p: Prediction) {
        self.done.insert((row, bits(c)), p);
    }

    /// Predictions of `rows` under `c`, in `rows`' order (only the missing ones are simulated,
    /// in one call).
    pub fn predict(&mut self, rows: &[usize], c: Corrections) -> Vec<Prediction> {
        let key = |r: usize| (r, bits(c));
        let mut missing: Vec<usize> = rows
            .iter()
            .copied()
            .filter(|&r| !self.done.contains_key(&key(r)))
            .collect();
        missing.sort_unstable();
        missing.dedup();
        if !missing.is_empty() {
            let got = self.sim.predict(&missing, c);
            self.simulations += missing.len();
            for (r, p) in missing.into_iter().zip(got) {
                self.done.insert(key(r), p);
            }
        }
        rows.iter().map(|&r| self.done[&key(r)].clone()).collect()
    }
}

fn bits(c: Corrections) -> [u64; 6] {
    [
        c.prefill_scale.to_bits(),
        c.decode_scale.to_bits(),
        c.request_overhead_ms.to_bits(),
        c.prefill_pass_overhead_ms.to_bits(),
        c.decode_pass_overhead_ms.to_bits(),
        c.kv_pool_scale.to_bits(),
    ]
}

/// What a fit adjusts besides the two time scales.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fit {
    /// The per-request overhead (ms added to every request's way in).
    pub request_overhead: bool,
    /// The per-prefill-pass overhead (ms added to every pass that computes prompt tokens).
    pub pass_overhead: bool,
    /// The per-decode-pass overhead (ms, signed, added to every pass that decodes).
    pub decode_overhead: bool,
    /// The KV pool's size (a factor on its block count).
    pub kv_pool: bool,
}

impl Fit {
    /// The two scales alone.
    pub const SCALES: Fit = Fit {
        request_overhead: false,
        pass_overhead: false,
        decode_overhead: false,
        kv_pool: false,
    };
    /// The scales and the per-request overhead.
    pub const SCALES_AND_OVERHEAD: Fit = Fit {
        request_overhead: true,
        pass_overhead: false,
        decode_overhead: false,
        kv_pool: false,
    };
    /// The scales, every overhead and the KV pool.
    pub const ALL: Fit = Fit {
        request_overhead: true,
        pass_overhead: true,
        decode_overhead: true,
        kv_pool: true,
    };
}

/// What a fit found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fitted {
    pub corrections: Corrections,
    /// The objective on the training rows, from the corrections simulated as they are.
    pub objective: f64,
}

/// One simulated row against its measurement: predicted and measured TTFT and TPOT (ms), and
/// how many ms the predicted TTFT and TPOT gain per ms of decode pass overhead (`dt`, `du`: the
/// passes that decode in the request's wait, and per output token; 0 where not measured).
#[derive(Debug, Clone, Copy)]
struct Obs {
    t: f64,
    m: f64,
    u: f64,
    q: f64,
    dt: f64,
    du: f64,
}

/// The rows that simulated, with their measurements.
fn observations(targets: &[Target], rows: &[usize], preds: &[Prediction]) -> Vec<Obs> {
    rows.iter()
        .zip(preds)
        .filter_map(|(&r, p)| {
            p.as_ref().ok().map(|&(t, u)| Obs {
                t,
                m: targets[r].ttft_ms,
                u,
                q: targets[r].tpot_ms,
                dt: 0.0,
                du: 0.0,
            })
        })
        .collect()
}

/// The overhead (ms at decode scale 1) of the extra simulation of a probe that fits a pass
/// overhead: the difference from the simulation without it gives each row's counts of the
/// passes it adds to (decoding passes for the decode pass overhead, passes that compute prompt
/// tokens for the prefill pass overhead).
pub const SLOPE_PROBE_MS: f64 = 1.0;

/// [`observations`] of `preds` with the per-ms gains of TTFT and TPOT from a decode pass
/// overhead: `base` simulated without it, `probe` with [`SLOPE_PROBE_MS`] of it (a row must
/// simulate in all three).
fn observations_with_slopes(
    targets: &[Target],
    rows: &[usize],
    preds: &[Prediction],
    base: &[Prediction],
    probe: &[Prediction],
) -> Vec<Obs> {
    rows.iter()
        .zip(preds.iter().zip(base.iter().zip(probe)))
        .filter_map(|(&r, (x, (b, p)))| {
            let (&(t, u), &(t0, u0), &(t1, u1)) =
                (x.as_ref().ok()?, b.as_ref().ok()?, p.as_ref().ok()?);
            Some(Obs {
                t,
                m: targets[r].ttft_ms,
                u,
                q: targets[r].tpot_ms,
                dt: (t1 - t0) / SLOPE_PROBE_MS,
                du: (u1 - u0) / SLOPE_PROBE_MS,
            })
        })
        .collect()
}

/// `base` + `ms` / [`SLOPE_PROBE_MS`] × (`probe` − `base`), row by row: the predictions with
/// `ms` of the overhead that `probe` was simulated with [`SLOPE_PROBE_MS`] of (exact, as the
/// runs are linear in it).
fn extrapolate(base: &[Prediction], probe: &[Prediction], ms: f64) -> Vec<Prediction> {
    let x = ms / SLOPE_PROBE_MS;
    base.iter()
        .zip(probe)
        .map(|(b, p)| match (b, p) {
            (Ok((t, u)), Ok((t1, u1))) => Ok((t + x * (t1 - t), u + x * (u1 - u))),
            (Err(e), _) | (_, Err(e)) => Err(e.clone()),
        })
        .collect()
}

/// Ratios predicted / measured of the rows that simulated.
fn ratios(targets: &[Target], rows: &[usize], preds: &[Prediction]) -> (Vec<f64>, Vec<f64>) {
    ratios_of(&observations(targets, rows, preds))
}

/// Ratios predicted / measured of TTFT and of TPOT.
fn ratios_of(obs: &[Obs]) -> (Vec<f64>, Vec<f64>) {
    (
        obs.iter().map(|o| o.t / o.m).collect(),
        obs.iter().map(|o| o.u / o.q).collect(),
    )
}

/// mean |k·t − 1| + mean |k·u − 1|.
fn objective(k: f64, t: &[f64], u: &[f64]) -> f64 {
    let mean = |xs: &[f64]| xs.iter().map(|x| (k * x - 1.0).abs()).sum::<f64>() / xs.len() as f64;
    mean(t) + mean(u)
}

/// mean |(k·t + o + D·dt)/m − 1| + mean |(k·u + D·du)/q − 1|: the objective with TTFTs `t`
/// that do not yet include the request overhead `o`, and times that do not yet include the
/// decode pass overhead `D` (ms).
fn objective_with_overhead(k: f64, o: f64, d: f64, obs: &[Obs]) -> f64 {
    let n = obs.len() as f64;
    let ttft: f64 = obs
        .iter()
        .map(|x| ((k * x.t + o + d * x.dt) / x.m - 1.0).abs())
        .sum();
    let tpot: f64 = obs
        .iter()
        .map(|x| ((k * x.u + d * x.du) / x.q - 1.0).abs())
        .sum();
    (ttft + tpot) / n
}

/// The minimiser of a unimodal `f` on [a, b] by golden-section search (`iters` steps).
fn golden_min(mut a: f64, mut b: f64, iters: usize, f: impl Fn(f64) -> f64) -> f64 {
    let phi = (5f64.sqrt() - 1.0) / 2.0;
    let mut c = b - phi * (b - a);
    let mut d = a + phi * (b - a);
    let (mut fc, mut fd) = (f(c), f(d));
    for _ in 0..iters {
        if fc <= fd {
            b = d;
            d = c;
            fd = fc;
            c = b - phi * (b - a);
            fc = f(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + phi * (b - a);
            fd = f(d);
        }
    }
    (a + b) / 2.0
}

/// The minimiser of Σ wᵢ·|x − vᵢ| over `pts` = (vᵢ, wᵢ): a weighted median (`None` for no point).
fn weighted_median(mut pts: Vec<(f64, f64)>) -> Option<f64> {
    pts.retain(|p| p.0.is_finite() && p.1 > 0.0 && p.1.is_finite());
    if pts.is_empty() {
        return None;
    }
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = pts.iter().map(|p| p.1).sum();
    let mut acc = 0.0;
    for &(v, w) in &pts {
        acc += w;
        if acc >= total / 2.0 {
            return Some(v);
        }
    }
    pts.last().map(|p| p.0)
}

/// The `k` minimising [`objective`]: it is piecewise linear and convex in `k`, with its minimum
/// at a weighted median of the points 1/x (weight x / the size of x's set).
pub fn best_scale(t: &[f64], u: &[f64]) -> f64 {
    let mut pts: Vec<(f64, f64)> = Vec::with_capacity(t.len() + u.len());
    for (xs, n) in [(t, t.len()), (u, u.len())] {
        for &x in xs {
            if x > 0.0 && x.is_finite() {
                pts.push((1.0 / x, x / n as f64));
            }
        }
    }
    weighted_median(pts).unwrap_or(1.0)
}

/// To the µs: no float noise in the file.
fn to_us(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

/// For a scale `k` and a decode pass overhead `d`, the request overhead ≥ 0 minimising
/// [`objective_with_overhead`]: the TTFT term is Σ |o − (m − k·t − d·dt)| / m, so a weighted
/// median of the shortfalls, clamped at 0 (the objective is convex in `o`).
fn best_overhead(k: f64, d: f64, obs: &[Obs]) -> f64 {
    let pts = obs
        .iter()
        .map(|x| (x.m - k * x.t - d * x.dt, 1.0 / x.m))
        .collect();
    to_us(weighted_median(pts).unwrap_or(0.0).max(0.0))
}

/// The (k, o) minimising [`objective_with_overhead`] at decode pass overhead `d` (o = 0 unless
/// `overhead`), and the objective there. The objective is jointly convex in (k, o), so its
/// minimum over `o` (in closed form) is convex in `k`, which a golden-section search over log k
/// finds.
fn best_scale_and_overhead(obs: &[Obs], d: f64, overhead: bool) -> (f64, f64, f64) {
    let g = |lk: f64| {
        let k = lk.exp();
        let o = if overhead {
            best_overhead(k, d, obs)
        } else {
            0.0
        };
        (objective_with_overhead(k, o, d, obs), k, o)
    };
    let lk = golden_min((1e-3f64).ln(), (1e3f64).ln(), 100, |lk| g(lk).0);
    let (obj, k, o) = g(lk);
    (k, o, obj)
}

/// The best common scale, request overhead and decode pass overhead (those `what` fits) for
/// predictions made without them: (k, o, D, objective). `D`, in ms of the corrected run, is
/// searched where every TPOT stays above a tenth of its measured value at k = 1 and none is
/// more than doubled: the objective's minimum over (k, o) is convex in `D`.
fn best_for(what: Fit, obs: &[Obs]) -> (f64, f64, f64, f64) {
    if what.decode_overhead && obs.iter().any(|x| x.du > 0.0) {
        let lo = obs
            .iter()
            .filter(|x| x.du > 0.0)
            .map(|x| -0.9 * x.q / x.du)
            .fold(f64::NEG_INFINITY, f64::max);
        let hi = obs
            .iter()
            .filter(|x| x.du > 0.0)
            .map(|x| x.q / x.du)
            .fold(f64::INFINITY, f64::min);
        let at = |d: f64| best_scale_and_overhead(obs, d, what.request_overhead);
        let d = to_us(golden_min(lo.min(0.0), hi.max(0.0), 60, |d| at(d).2));
        let (k, o, obj) = at(d);
        // No overhead unless it earns its place (ties to none).
        let (k0, o0, obj0) = at(0.0);
        if obj0 <= obj {
            (k0, o0, 0.0, obj0)
        } else {
            (k, o, d, obj)
        }
    } else if what.request_overhead {
        let (k, o, obj) = best_scale_and_overhead(obs, 0.0, true);
        (k, o, 0.0, obj)
    } else {
        let (t, u) = ratios_of(obs);
        let k = best_scale(&t, &u);
        (k, 0.0, 0.0, objective(k, &t, &u))
    }
}

/// The grid of log₂ r: coarse steps of 1/2 over [-2, 2] (widened by 1/2 up to [-4, 4] while the
/// best point is on an edge), then halving steps down to 1/16 around the best.
const COARSE: (i32, i32) = (-4, 4); // in units of 1/2
const WIDEST: i32 = 8; // ±4 in units of 1/2
const FINEST_STEP: f64 = 1.0 / 16.0;

/// The lattice of the pass overhead (ms at decode scale 1): 2^(m/4) for integers m, probed
/// coarsely at every 8th (1, 4, 16, 64, 256, 1024 ms), then at steps of 4, 2 and 1 around
/// the best.
const PASS_COARSE: [i32; 6] = [0, 8, 16, 24, 32, 40];
const PASS_STEPS: [i32; 3] = [4, 2, 1];

fn pass_ms(m: i32) -> f64 {
    (f64::from(m) / 4.0).exp2()
}

/// The lattice of the KV pool's factor: 2^(j/4) for integers j, probed coarsely at ¼, ½, 1/√2,
/// √2 and 2, then one step either side of the best; the factor stays within [1/8, 4].
const KV_COARSE: [i32; 5] = [-8, -4, -2, 2, 4];
const KV_RANGE: (i32, i32) = (-12, 8);
/// Rounds of the alternating search of the KV pool factor and the ratio.
const KV_ROUNDS: usize = 4;
/// The least gain in the objective (mean |TTFT error| + mean |TPOT error|, as fractions) for
/// which the fit moves the KV pool off its size: 0.02 = two points of mean error.
const KV_MIN_GAIN: f64 = 0.02;

fn kv_scale(j: i32) -> f64 {
    (f64::from(j) / 4.0).exp2()
}

/// One probe of the search: log₂ of the ratio of the scales, the pass overhead's lattice index
/// (`None` = no pass overhead), the KV pool factor's (0 = the pool as it is), the objective,
/// and the common scale, request overhead and decode pass overhead (ms of the corrected run)
/// that minimise it.
#[derive(Debug, Clone, Copy)]
struct Probe {
    l: f64,
    m: Option<i32>,
    j: i32,
    obj: f64,
    k: f64,
    o: f64,
    d: f64,
}

/// The probes of one fit over its training rows.
struct Search<'a, 'm, 's> {
    memo: &'m mut Memo<'s>,
    targets: &'a [Target],
    rows: &'a [usize],
    what: Fit,
    seen: Vec<Probe>,
    /// The KV pool factor's lattice index every probe simulates at (0 until
    /// [`Search::search_kv`] moves it); [`Search::best`] looks at probes at this index only.
    j: i32,
}

impl Search<'_, '_, '_> {
    /// The objective at (l, m) (`None` when no row simulates). Only the ratio is simulated:
    /// once as it is, once more with [`SLOPE_PROBE_MS`] on every pass that computes prompt
    /// tokens when `m` is a pass overhead (any `m` then follows from the two), and once more
    /// with it on every pass that decodes when the decode pass overhead is fitted.
    fn eval(&mut self, l: f64, m: Option<i32>) -> Option<f64> {
        let j = self.j;
        if let Some(s) = self.seen.iter().find(|s| s.l == l && s.m == m && s.j == j) {
            return Some(s.obj);
        }
        let c = Corrections {
            prefill_scale: l.exp2(),
            decode_scale: 1.0,
            request_overhead_ms: 0.0,
            prefill_pass_overhead_ms: 0.0,
            decode_pass_overhead_ms: 0.0,
            kv_pool_scale: kv_scale(j),
        };
        let base = self.memo.predict(self.rows, c);
        let with_pass = m.map(|m| {
            let probe = Corrections {
                prefill_pass_overhead_ms: SLOPE_PROBE_MS,
                ..c
            };
            extrapolate(&base, &self.memo.predict(self.rows, probe), pass_ms(m))
        });
        let preds = with_pass.as_deref().unwrap_or(&base);
        let obs = if self.what.decode_overhead {
            let probe = Corrections {
                decode_pass_overhead_ms: SLOPE_PROBE_MS,
                ..c
            };
            let slopes = self.memo.predict(self.rows, probe);
            observations_with_slopes(self.targets, self.rows, preds, &base, &slopes)
        } else {
            observations(self.targets, self.rows, preds)
        };
        if obs.is_empty() {
            return None;
        }
        let (k, o, d, obj) = best_for(self.what, &obs);
        self.seen.push(Probe {
            l,
            m,
            j,
            obj,
            k,
            o,
            d,
        });
        Some(obj)
    }

    /// The best probe at the current KV pool factor among those `keep` admits: the lowest
    /// objective, ties to no or the smaller pass overhead, then to the smaller decode pass
    /// overhead, then to the ratio nearer 1.
    fn best(&self, keep: impl Fn(&Probe) -> bool) -> Option<Probe> {
        self.seen
            .iter()
            .copied()
            .filter(|p| p.j == self.j && keep(p))
            .min_by(|a, b| {
                a.obj
                    .total_cmp(&b.obj)
                    .then(a.m.unwrap_or(i32::MIN).cmp(&b.m.unwrap_or(i32::MIN)))
                    .then(a.d.abs().total_cmp(&b.d.abs()))
                    .then(a.l.abs().total_cmp(&b.l.abs()))
            })
    }

    /// Refines log₂ r at pass overhead `m`, from `step` halving down to the finest step.
    fn refine_ratio(&mut self, m: Option<i32>, mut step: f64) -> Option<Probe> {
        let at = |p: &Probe| p.m == m;
        while step >= FINEST_STEP {
            let b = self.best(at)?.l;
            for l in [b - step, b + step] {
                self.eval(l, m)?;
            }
            step /= 2.0;
        }
        self.best(at)
    }

    /// The ratio's coarse grid (widened while the best is on an edge) and its refinement,
    /// without a pass overhead.
    fn search_ratio(&mut self) -> Option<Probe> {
        let at = |p: &Probe| p.m.is_none();
        let (mut lo, mut hi) = COARSE;
        for h in lo..=hi {
            self.eval(f64::from(h) / 2.0, None)?;
        }
        loop {
            let b = self.best(at)?.l;
            if b <= f64::from(lo) / 2.0 && lo > -WIDEST {
                lo -= 1;
                self.eval(f64::from(lo) / 2.0, None)?;
            } else if b >= f64::from(hi) / 2.0 && hi < WIDEST {
                hi += 1;
                self.eval(f64::from(hi) / 2.0, None)?;
            } else {
                break;
            }
        }
        self.refine_ratio(None, 0.25)
    }

    /// The pass overhead at ratio `l`: its coarse lattice, then steps around the best; `None`
    /// when no pass overhead beats none.
    fn search_pass(&mut self, l: f64, steps: &[i32], coarse: bool) -> Option<Probe> {
        if coarse {
            for m in PASS_COARSE {
                self.eval(l, Some(m))?;
            }
        }
        let at = |p: &Probe| p.l == l;
        for &step in steps {
            let m = self.best(at)?.m?;
            for j in [m - step, m + step] {
                self.eval(l, Some(j))?;
            }
        }
        self.best(at).filter(|p| p.m.is_some())
    }

    /// The KV pool factor, from ratio `l` (no pass overhead): its coarse lattice at that ratio,
    /// then one step either side of the best; ties go to the factor nearer 1, so a pool no row
    /// fills stays as it is. At a factor other than 1 the ratio is refined there and the factor
    /// searched again at the new ratio, until the factor holds (at most [`KV_ROUNDS`] rounds).
    /// The factor is kept only when its best probe beats the best probe at factor 1 by at least
    /// [`KV_MIN_GAIN`] (a factor that only follows a row's noise would be a threshold in the
    /// wrong place for every row the fit did not see). Leaves the search at the factor found.
    fn search_kv(&mut self, mut l: f64) -> Option<Probe> {
        for _ in 0..KV_ROUNDS {
            // (objective, index) of each factor tried at l; a factor at which no row simulates
            // (a pool too small for any prompt) is left out.
            let mut tried: Vec<(f64, i32)> = Vec::new();
            let score = |s: &mut Self, tried: &mut Vec<(f64, i32)>, j: i32| {
                s.j = j;
                if let Some(obj) = s.eval(l, None) {
                    tried.push((obj, j));
                }
            };
            for j in std::iter::once(0).chain(KV_COARSE) {
                score(self, &mut tried, j);
            }
            let pick = |t: &[(f64, i32)]| {
                t.iter()
                    .copied()
                    .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.abs().cmp(&b.1.abs())))
                    .map_or(0, |p| p.1)
            };
            let b = pick(&tried);
            for j in [b - 1, b + 1] {
                if (KV_RANGE.0..=KV_RANGE.1).contains(&j) {
                    score(self, &mut tried, j);
                }
            }
            let before = self.j;
            self.j = pick(&tried);
            if self.j == 0 {
                break;
            }
            let p = self.refine_ratio(None, 0.25)?;
            // A factor other than 1 must earn its place: at its best ratio, a gain of at least
            // KV_MIN_GAIN over the pool as it is at its own best ratio.
            let j = self.j;
            self.j = 0;
            let at_one = self.best(|q| q.m.is_none())?;
            self.j = j;
            if at_one.obj - p.obj < KV_MIN_GAIN {
                self.j = 0;
                break;
            }
            if p.l == l && self.j == before {
                break;
            }
            l = p.l;
        }
        self.best(|p| p.m.is_none())
    }
}

/// Fits corrections to `rows` (indices into `targets`). `None` when no row simulates.
///
/// The ratio of the scales is searched first without a pass overhead; when the pass overhead
/// is fitted, it is then searched at that ratio and, if some overhead beats none, the ratio is
/// refined again at the best overhead and the overhead once more at the best ratio (a
/// coordinate descent). The KV pool factor, when fitted, is searched at the best ratio right
/// after it, before any pass overhead, and the ratio refined again at the factor found; every
/// later probe keeps it. Every probe simulates at decode scale 1; the common scale `k`, the
/// request overhead and the decode pass overhead come in closed form (the last by a
/// golden-section search on each probe's two simulations), and `k` scales the pass overhead
/// with the passes.
pub fn fit(memo: &mut Memo, targets: &[Target], rows: &[usize], what: Fit) -> Option<Fitted> {
    let mut search = Search {
        memo,
        targets,
        rows,
        what,
        seen: Vec::new(),
        j: 0,
    };
    let first = search.search_ratio()?;
    if what.kv_pool {
        search.search_kv(first.l)?;
    }
    if what.pass_overhead {
        let first = search.best(|_| true)?;
        if let Some(p) = search.search_pass(first.l, &PASS_STEPS, true) {
            if let Some(q) = search.refine_ratio(p.m, 0.25) {
                search.search_pass(q.l, &[2, 1], false);
            }
        }
    }
    let Probe {
        l, m, j, k, o, d, ..
    } = search.best(|_| true)?;
    let memo = search.memo;
    let mut c = Corrections {
        prefill_scale: l.exp2() * k,
        decode_scale: k,
        request_overhead_ms: o,
        prefill_pass_overhead_ms: m.map_or(0.0, pass_ms) * k,
        decode_pass_overhead_ms: d,
        kv_pool_scale: kv_scale(j),
    };
    // The corrections as they are; where the runs were not scale-invariant (an overhead, or
    // arrivals on a clock), update k (and the request overhead) on their real predictions, the
    // decode pass overhead scaling with the passes.
    let fixed = Fit {
        decode_overhead: false,
        ..what
    };
    let mut result: Option<Fitted> = None;
    for _ in 0..4 {
        let preds = memo.predict(rows, c);
        let (t, u) = ratios(targets, rows, &preds);
        if t.is_empty() {
            break;
        }
        let obj = objective(1.0, &t, &u);
        if result.is_none_or(|r| obj < r.objective) {
            result = Some(Fitted {
                corrections: c,
                objective: obj,
            });
        }
        // The predictions without the overhead they include, scaled again.
        let mut obs = observations(targets, rows, &preds);
        for x in &mut obs {
            x.t -= c.request_overhead_ms;
        }
        let (k, o, _, _) = best_for(fixed, &obs);
        if (k - 1.0).abs() < 1e-9 && (o - c.request_overhead_ms).abs() < 1e-6 {
            break;
        }
        c = Corrections {
            prefill_scale: c.prefill_scale * k,
            decode_scale: c.decode_scale * k,
            request_overhead_ms: o,
            prefill_pass_overhead_ms: c.prefill_pass_overhead_ms * k,
            decode_pass_overhead_ms: to_us(c.decode_pass_overhead_ms * k),
            kv_pool_scale: c.kv_pool_scale,
        };
    }
    result
}

/// Error figures of the rows that simulated (errors in percent of the measured value).
pub fn summarize(targets: &[Target], rows: &[usize], preds: &[Prediction]) -> ErrorSummary {
    let (t, u) = ratios(targets, rows, preds);
    let (t, u) = (errors_pct(&t), errors_pct(&u));
    ErrorSummary {
        n: t.len(),
        ttft_mean_abs_pct: mean_of(&t, f64::abs),
        ttft_signed_median_pct: median(&t),
        tpot_mean_abs_pct: mean_of(&u, f64::abs),
        tpot_signed_median_pct: median(&u),
    }
}

/// Like [`summarize`], for held-out predictions `(row, prediction)` that may hold a row several
/// times (once per fold that did not see it) and rows predicted by entries cross-validated
/// differently: each row's errors are averaged over its predictions first, so that every row
/// weighs the same; `n` counts rows.
pub fn summarize_by_row(targets: &[Target], held: &[(usize, Prediction)]) -> ErrorSummary {
    let mut by_row: std::collections::BTreeMap<usize, Vec<Prediction>> = Default::default();
    for (row, p) in held {
        by_row.entry(*row).or_default().push(p.clone());
    }
    let (mut abs_t, mut abs_u, mut signed_t, mut signed_u) = (vec![], vec![], vec![], vec![]);
    for (row, preds) in &by_row {
        let (t, u) = ratios(targets, &vec![*row; preds.len()], preds);
        if t.is_empty() {
            continue;
        }
        let (t, u) = (errors_pct(&t), errors_pct(&u));
        abs_t.push(mean_of(&t, f64::abs));
        abs_u.push(mean_of(&u, f64::abs));
        signed_t.push(mean_of(&t, |x| x));
        signed_u.push(mean_of(&u, |x| x));
    }
    ErrorSummary {
        n: abs_t.len(),
        ttft_mean_abs_pct: mean_of(&abs_t, |x| x),
        ttft_signed_median_pct: median(&signed_t),
        tpot_mean_abs_pct: mean_of(&abs_u, |x| x),
        tpot_signed_median_pct: median(&signed_u),
    }
}

/// Ratios predicted / measured as errors in percent.
fn errors_pct(ratios: &[f64]) -> Vec<f64> {
    ratios.iter().map(|x| (x - 1.0) * 100.0).collect()
}

/// The mean of `f` over `xs`; 0 when there are none.
fn mean_of(xs: &[f64], f: fn(f64) -> f64) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().map(|&x| f(x)).sum::<f64>() / xs.len() as f64
    }
}

/// A row whose prediction stays far off after fitting (errors in %).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnmatchedRow {
    pub id: String,
    pub ttft_error_pct: f64,
    pub tpot_error_pct: f64,
}

/// The largest error, TTFT or TPOT, that a fitted row may keep before it is reported as
/// unmatched (%).
pub const UNMATCHED_PCT: f64 = 50.0;

/// The rows (`ids[rows[i]]`) that `preds` leave more than [`UNMATCHED_PCT`] off in TTFT or TPOT,
/// the worst (largest |TTFT error| + |TPOT error|) first, at most `limit`; ties by id.
pub fn unmatched(
    ids: &[String],
    targets: &[Target],
    rows: &[usize],
    preds: &[Prediction],
    limit: usize,
) -> Vec<UnmatchedRow> {
    let mut out: Vec<UnmatchedRow> = rows
        .iter()
        .zip(preds)
        .filter_map(|(&r, p)| {
            let &(t, u) = p.as_ref().ok()?;
            let pct = |x: f64, m: f64| (x / m - 1.0) * 100.0;
            Some(UnmatchedRow {
                id: ids[r].clone(),
                ttft_error_pct: pct(t, targets[r].ttft_ms),
                tpot_error_pct: pct(u, targets[r].tpot_ms),
            })
        })
        .filter(|x| {
            let off = |e: f64| e.is_finite() && e.abs() > UNMATCHED_PCT;
            off(x.ttft_error_pct) || off(x.tpot_error_pct)
        })
        .collect();
    let size = |x: &UnmatchedRow| x.ttft_error_pct.abs() + x.tpot_error_pct.abs();
    out.sort_by(|a, b| size(b).total_cmp(&size(a)).then_with(|| a.id.cmp(&b.id)));
    out.truncate(limit);
    out
}

/// The median (mean of the two middle values for an even count; 0 for none).
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// How held-out rows are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `folds` folds; each fold's fit uses that fold alone and predicts all other rows
    /// (calibrate on a third, check on two thirds, for 3 folds).
    FitOnOne { folds: usize },
    /// Classic k-fold: each fold's fit uses the other folds and predicts the fold.
    FitOnRest { folds: usize },
    /// Each row predicted by a fit on all the others (but its repeats, held out with it).
    LeaveOneOut,
}

impl Scheme {
    pub fn name(self) -> &'static str {
        match self {
            Scheme::FitOnOne { .. } => "folds-fit-on-one",
            Scheme::FitOnRest { .. } => "folds-fit-on-rest",
            Scheme::LeaveOneOut => "leave-one-out",
        }
    }
}

/// Cross-validates the fit over `units`: the family's rows in a deterministic order chosen by
/// the caller, grouped into units of rows that measured the same point (a deployment and
/// workload benchmarked more than once), which are always held out together, so that no fit
/// is checked on a measurement of a point it was fitted on. Fold of the unit at position i =
/// i mod folds, so every fold spans the order; leave-one-out leaves one unit out at a time.
/// `None` when there are too few units for the scheme (fewer than 2, or than the folds), or
/// when no held-out row got a prediction.
pub fn cross_validate(
    memo: &mut Memo,
    targets: &[Target],
    units: &[Vec<usize>],
    scheme: Scheme,
    what: Fit,
) -> Option<CrossValidation> {
    let n = units.len();
    let (folds, fit_on_fold) = match scheme {
        Scheme::FitOnOne { folds } => (folds, true),
        Scheme::FitOnRest { folds } => (folds, false),
        Scheme::LeaveOneOut => (n, false),
    };
    if n < 2 || folds < 2 || folds > n {
        return None;
    }
    let mut test_rows: Vec<usize> = Vec::new();
    let mut test_preds: Vec<Prediction> = Vec::new();
    let mut fold_corrections = Vec::with_capacity(folds);
    for f in 0..folds {
        let (inside, outside): (Vec<usize>, Vec<usize>) = units
            .iter()
            .enumerate()
            .partition::<Vec<(usize, &Vec<usize>)>, _>(|(i, _)| i % folds == f)
            .map2(|v| {
                v.into_iter()
                    .flat_map(|(_, unit)| unit.iter().copied())
                    .collect()
            });
        let (train, test) = if fit_on_fold {
            (inside, outside)
        } else {
            (outside, inside)
        };
        let Some(fitted) = fit(memo, targets, &train, what) else {
            continue;
        };
        fold_corrections.push(fitted.corrections);
        let preds = memo.predict(&test, fitted.corrections);
        test_rows.extend(test);
        test_preds.extend(preds);
    }
    let errors = summarize(targets, &test_rows, &test_preds);
    // No held-out prediction (every fold's fit failed): no figure rather than a zero.
    if errors.n == 0 {
        return None;
    }
    Some(CrossValidation {
        scheme: scheme.name().to_string(),
        folds,
        points: Some(n),
        errors,
        fold_corrections,
        held_out: test_rows.into_iter().zip(test_preds).collect(),
    })
}

/// `(a, b).map2(f)` = `(f(a), f(b))`.
trait Map2<T> {
    fn map2<U>(self, f: impl Fn(T) -> U) -> (U, U);
}

impl<T> Map2<T> for (T, T) {
    fn map2<U>(self, f: impl Fn(T) -> U) -> (U, U) {
        (f(self.0), f(self.1))
    }
}

#[cfg(test)]
mod tests;
