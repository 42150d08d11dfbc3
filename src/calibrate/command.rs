//! `dynosim calibrate MEASURED... -o calibration.json`: reads the measured points as `dynosim
//! validate` does, groups them by AIC family, and per family fits the time scales with
//! [`super::fit`] by simulating the points through validate's [`Validator`], cross-validates the
//! fit, and writes the calibration file (under a temporary name, renamed when complete).
//!
//! Rows of a family are ordered by (mode, ISL, OSL, concurrency, id) and assigned to folds
//! round-robin in that order, so folds are fixed by the data and every fold spans the family's
//! shapes. Families with fewer rows than `--loo-below` are cross-validated leave-one-out.

use super::fit::{
    cross_validate, fit, summarize, summarize_by_row, unmatched, Fit, Fitted, Memo, Prediction,
    Scheme, Target, UNMATCHED_PCT,
};
use super::{
    CalibrationFile, Corrections, CrossValidation, ErrorSummary, Family, FamilyCalibration,
    FitRecord, OptionCheck,
};
use crate::cli::{CalibrateArgs, FitOn};
use crate::error::InputError;
use crate::validate::calibration::{
    aic_family, correction_keys, decoding_of, parallelism_of, quantisation_of, server_version_of,
};
use crate::validate::deployment::Recipe;
use crate::validate::{
    Corrections as KeyCorrections, MeasuredPoint, PointResult, Status, Validator,
};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;

/// The fit's objective, as written into the file.
const OBJECTIVE: &str = "mean |TTFT error| + mean |TPOT error| (relative to the measured values)";

/// Runs `dynosim calibrate`.
pub fn run(args: &CalibrateArgs) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let va = args.as_validate_args();
    let opts = crate::validate::output::options(&va)?;
    if args.folds < 2 {
        return Err(InputError::new(format!("--folds must be >= 2, got {}", args.folds)).into());
    }
    check_output(&args.output)?;
    let mut points =
        crate::validate::read_inputs(&va.measured, &crate::validate::output::flags(&va))?;
    if let Some(id) = args
        .exclude
        .iter()
        .find(|&id| !points.iter().any(|p| &p.id == id))
    {
        return Err(
            InputError::new(format!("--exclude {id:?}: no measured point has this id")).into(),
        );
    }
    points.retain(|p| {
        let out = args.exclude.contains(&p.id);
        if out {
            eprintln!("calibrate: {}: left out (--exclude)", p.id);
        }
        !out
    });
    let validator = Validator::new(opts.clone())?;
    validator.check_catalog(&points)?;
    let baseline = validator.simulate(&points, &KeyCorrections::none());
    let ctx = Context {
        args,
        validator: &validator,
        points: &points,
        baseline: &baseline,
    };

    let all_targets: Vec<Target> = points.iter().map(target_of).collect();
    let (families, left_out) = group(&points, &baseline);
    for line in &left_out {
        eprintln!("calibrate: {line}");
    }
    let mut file = CalibrationFile::new(
        args.measured
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        options_json(args),
    );
    for (family, rows) in &families {
        let consequence = "not calibrated (corrections fitted on so few could not be checked \
                           on a point they did not see)";
        if too_few_points(family, rows, &ctx, MIN_FAMILY_POINTS, consequence) {
            continue;
        }
        let Some((entry, held_out)) = calibrate_family(&ctx, family, rows, &[]) else {
            eprintln!("calibrate: {family}: no row could be simulated; not calibrated");
            continue;
        };
        let family_index = file.families.len();
        file.families.push(entry);
        let leaves = narrow(&ctx, family, rows, held_out, &mut file.families);
        // With narrower entries kept, the family's record holds every row's held-out errors
        // by the entry that applies to it.
        if file.families.len() > family_index + 1 {
            let held: Vec<HeldOut> = leaves.into_iter().flat_map(|leaf| leaf.held).collect();
            if let Some(fit) = file.families[family_index].fit.as_mut() {
                fit.as_applied = Some(summarize_by_row(&all_targets, &held));
            }
        }
    }
    write_file(&args.output, &file.to_json())?;
    if !args.options.quiet {
        print!("{}", render(&file));
        println!(
            "{} families calibrated in {:.1} s; written to {}",
            file.families.len(),
            started.elapsed().as_secs_f64(),
            args.output.display()
        );
    }
    Ok(())
}

/// What every fit of one `calibrate` run shares: its flags, the simulator, the measured points
/// and their simulation without corrections.
struct Context<'a> {
    args: &'a CalibrateArgs,
    validator: &'a Validator,
    points: &'a [MeasuredPoint],
    baseline: &'a [PointResult],
}

/// Fits the entries narrower than `family` (whose rows are `rows`, held out by its own fit as
/// `held_out`) into `entries`, level by level: the decoding mode (a pool with multi-token
/// prediction runs draft passes and accepts tokens in bursts, so AIC's timing of it is off by
/// other factors than a plain pool's), the release of the serving engine (servers of two
/// releases timed by the same perf data differ), the weight quantisation (AIC's kernels are off
/// by other factors for FP8 than for FP4), and the deployment shape. Each level splits an entry
/// of the one before where its rows have several labels, one entry per label with enough rows
/// (one label: no entry, it would be its parent's). An entry is kept only where its
/// cross-validation predicts its rows better than the wider entry's did, unless
/// `--keep-narrow-entries`; rows whose narrower entry was not kept stay with the wider entry,
/// which no later level splits, except at the release level, where they (and rows naming no
/// release) stay with it open to the later levels. The rows of each entry that applies in the
/// end, with their held-out predictions by it.
fn narrow(
    ctx: &Context,
    family: &Family,
    rows: &[usize],
    held_out: Vec<HeldOut>,
    entries: &mut Vec<FamilyCalibration>,
) -> Vec<Leaf> {
    let args = ctx.args;
    let levels = [
        (!args.no_per_decoding, Level::Decoding),
        (!args.no_per_version, Level::Version),
        (!args.no_per_quantisation, Level::Quantisation),
        (args.fits_per_parallelism(), Level::Parallelism),
    ];
    let mut leaves = vec![Leaf {
        family: family.clone(),
        rows: rows.to_vec(),
        held: held_out,
        open: true,
    }];
    for (_, level) in levels.into_iter().filter(|(on, _)| *on) {
        let mut next = Vec::new();
        for leaf in leaves {
            let parts = if leaf.open {
                by_key(&leaf.rows, ctx.baseline, level.label_of())
            } else {
                BTreeMap::new()
            };
            if parts.len() < 2 {
                next.push(leaf);
                continue;
            }
            // At the release level, rows that name no release and rows of a release whose
            // entry is not kept are fitted together under the wider entry, which the later
            // levels still narrow: a pool takes its release's entries before any without a
            // release (`Family::fallbacks`), so those entries apply to exactly these rows.
            // At the other levels every row has a label, and a part whose entry is not kept
            // stays with the wider entry, closed.
            let pooled = matches!(level, Level::Version);
            let mut rest: Vec<usize> = leaf
                .rows
                .iter()
                .copied()
                .filter(|i| !parts.values().any(|p| p.contains(i)))
                .collect();
            for (label, part_rows) in parts {
                let narrow = level.narrow(&leaf.family, label);
                let consequence = "the wider entry's corrections apply";
                let few = too_few_points(&narrow, &part_rows, ctx, MIN_NARROW_POINTS, consequence);
                let kept = (!few)
                    .then(|| calibrate_family(ctx, &narrow, &part_rows, &leaf.held))
                    .flatten()
                    .filter(|(entry, _)| match no_better_than_wider(entry) {
                        Some(why) if !args.keep_narrow_entries => {
                            eprintln!("calibrate: {narrow}: {why}; the wider entry applies");
                            false
                        }
                        _ => true,
                    });
                match kept {
                    Some((entry, held)) => {
                        entries.push(entry);
                        next.push(Leaf {
                            family: narrow,
                            rows: part_rows,
                            held,
                            open: true,
                        });
                    }
                    None if pooled => rest.extend(part_rows),
                    None => next.push(Leaf {
                        family: leaf.family.clone(),
                        held: held_on(&leaf.held, &part_rows),
                        rows: part_rows,
                        open: false,
                    }),
                }
            }
            if !rest.is_empty() {
                rest.sort_unstable();
                next.push(Leaf {
                    family: leaf.family.clone(),
                    held: held_on(&leaf.held, &rest),
                    rows: rest,
                    open: pooled,
                });
            }
        }
        leaves = next;
    }
    leaves
}

/// The rows of one entry (or of a wider entry, for rows whose narrower entry was not kept) once
/// a family has been narrowed, with their held-out predictions by that entry.
struct Leaf {
    family: Family,
    rows: Vec<usize>,
    held: Vec<HeldOut>,
    /// Whether a later level may narrow it (not where a narrower entry was not kept).
    open: bool,
}

/// The held-out predictions of `rows` among `held`.
fn held_on(held: &[HeldOut], rows: &[usize]) -> Vec<HeldOut> {
    held.iter()
        .filter(|(i, _)| rows.contains(i))
        .cloned()
        .collect()
}

/// Why a narrower entry is not kept: its cross-validation predicts its rows no better, by the
/// fit's objective, than the wider entry's held-out predictions of them. `None` when it does
/// (or there is nothing to compare).
fn no_better_than_wider(entry: &FamilyCalibration) -> Option<String> {
    let fit = entry.fit.as_ref()?;
    let wider = fit.wider_held_out.as_ref()?;
    let own = match &fit.cross_validated {
        Some(cv) => &cv.errors,
        None => return Some("too few rows to cross-validate".to_string()),
    };
    (own.objective() >= wider.objective()).then(|| {
        format!(
            "held out on its rows {} by its own fit, {} by the wider entry's, no better",
            own.pair(),
            wider.pair()
        )
    })
}

/// The measured TTFT and TPOT of a point (NaN where missing).
fn target_of(p: &MeasuredPoint) -> Target {
    Target {
        ttft_ms: p.measured_ttft_ms.unwrap_or(f64::NAN),
        tpot_ms: p.measured_tpot_ms.unwrap_or(f64::NAN),
    }
}

/// A way `calibrate` narrows a family's entries by a label of its rows' recipes.
#[derive(Debug, Clone, Copy)]
enum Level {
    Decoding,
    Version,
    Quantisation,
    Parallelism,
}

impl Level {
    fn label_of(self) -> fn(&Recipe) -> Option<String> {
        match self {
            Level::Decoding => decoding_of,
            Level::Version => server_version_of,
            Level::Quantisation => quantisation_of,
            Level::Parallelism => parallelism_of,
        }
    }

    /// `parent` narrowed to `label` at this level.
    fn narrow(self, parent: &Family, label: String) -> Family {
        let mut f = parent.clone();
        match self {
            Level::Decoding => f.decoding = Some(label),
            Level::Version => f.server_version = Some(label),
            Level::Quantisation => f.quantisation = Some(label),
            Level::Parallelism => f.parallelism = Some(label),
        }
        f
    }
}

/// The points of each AIC family (indices into `points`), and notes on the points left out.
fn group(
    points: &[MeasuredPoint],
    baseline: &[PointResult],
) -> (BTreeMap<Family, Vec<usize>>, Vec<String>) {
    let mut families: BTreeMap<Family, Vec<usize>> = BTreeMap::new();
    let mut notes = Vec::new();
    for (i, (p, r)) in points.iter().zip(baseline).enumerate() {
        let measured = p.measured_ttft_ms.is_some_and(|x| x > 0.0)
            && p.measured_tpot_ms.is_some_and(|x| x > 0.0);
        if !measured {
            notes.push(format!("{}: no measured TTFT and TPOT; left out", p.id));
            continue;
        }
        match r.recipe.as_ref().and_then(aic_family) {
            Some(f) => families.entry(f).or_default().push(i),
            None if r.status != Status::Ok => notes.push(format!(
                "{}: {} ({}); left out",
                p.id,
                r.status.name(),
                r.reason
            )),
            None => notes.push(format!("{}: no AIC timing, so no family; left out", p.id)),
        }
    }
    (families, notes)
}

/// Unmatched rows a family's record keeps (the worst).
const MAX_UNMATCHED: usize = 5;

/// Distinct simulated points a family needs to be calibrated at all (three: each held out in
/// turn, the other two still fit). Repeats of a point count once: cross-validation holds them
/// out together.
const MIN_FAMILY_POINTS: usize = 3;

/// Distinct simulated points a decoding mode, release, weight quantisation or deployment shape
/// needs for an entry of its own.
const MIN_NARROW_POINTS: usize = 6;

/// Whether an entry's rows simulate some but fewer than `min` distinct points, too few to fit
/// it; says so on stderr, with the `consequence`, if they do. (Where none simulates, the
/// caller's own note says so.)
fn too_few_points(
    entry: &Family,
    rows: &[usize],
    ctx: &Context,
    min: usize,
    consequence: &str,
) -> bool {
    let distinct = count_points(rows, ctx.points, ctx.baseline);
    let few = (1..min).contains(&distinct);
    if few {
        let simulated = count_simulated(rows, ctx.baseline);
        let counted = if simulated == distinct {
            format!("{simulated} simulated row(s)")
        } else {
            format!("{simulated} simulated rows measuring {distinct} distinct point(s)")
        };
        eprintln!("calibrate: {entry}: {counted}, fewer than {min} distinct points; {consequence}");
    }
    few
}

/// A family's rows by a label of their recipes (weight quantisation, deployment shape), for
/// the labels some simulated row has (a label whose rows all failed has nothing to fit).
fn by_key(
    rows: &[usize],
    baseline: &[PointResult],
    label: fn(&Recipe) -> Option<String>,
) -> BTreeMap<String, Vec<usize>> {
    let mut out: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for &i in rows {
        if let Some(key) = baseline[i].recipe.as_ref().and_then(label) {
            out.entry(key).or_default().push(i);
        }
    }
    out.retain(|_, rows| count_simulated(rows, baseline) > 0);
    out
}

/// How many of `rows` simulated without corrections.
fn count_simulated(rows: &[usize], baseline: &[PointResult]) -> usize {
    rows.iter()
        .filter(|&&i| baseline[i].status == Status::Ok)
        .count()
}

/// How many distinct points `rows` measure among those that simulated: rows that simulate the
/// same run (`run_of`) count once.
fn count_points(rows: &[usize], points: &[MeasuredPoint], baseline: &[PointResult]) -> usize {
    rows.iter()
        .filter(|&&i| baseline[i].status == Status::Ok)
        .map(|&i| run_of(points, baseline, i))
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}

/// What a measured point runs: its recipe's command line (rows measuring the same deployment
/// and workload share it), or its id where it has no recipe.
fn run_of(points: &[MeasuredPoint], baseline: &[PointResult], i: usize) -> String {
    baseline[i]
        .recipe
        .as_ref()
        .map_or_else(|| points[i].id.clone(), Recipe::command_line)
}

/// `order` grouped into the units cross-validation holds out together: rows that simulate the
/// same run (`run_of`: a deployment and workload measured more than once, often with the same
/// figures) form one unit, placed where its first row is. A fit checked on a repeat of a
/// point it was fitted on would report an error it will not have on a new point.
fn units_of(order: &[usize], run_of: impl Fn(usize) -> String) -> Vec<Vec<usize>> {
    let mut units: Vec<Vec<usize>> = Vec::new();
    let mut unit_of: BTreeMap<String, usize> = BTreeMap::new();
    for &l in order {
        let next = units.len();
        let u = *unit_of.entry(run_of(l)).or_insert(next);
        if u == next {
            units.push(Vec::new());
        }
        units[u].push(l);
    }
    units
}

/// A simulated point's TTFT and TPOT, or why it has none.
fn prediction(r: &PointResult) -> Prediction {
    match (&r.status, &r.predicted) {
        (Status::Ok, Some(p)) => Ok((p.ttft_ms, p.tpot_ms)),
        _ => Err(format!("{}: {}", r.status.name(), r.reason)),
    }
}

/// A held-out prediction of a measured point (its index into the points) by a fit that did not
/// see it.
type HeldOut = (usize, Prediction);

/// Fits, cross-validates and describes one family (or a narrower entry of one, whose wider
/// entry's held-out predictions are `wider`); the entry and its own held-out predictions, or
/// `None` when none of its rows simulates.
fn calibrate_family(
    ctx: &Context,
    family: &Family,
    rows: &[usize],
    wider: &[HeldOut],
) -> Option<(FamilyCalibration, Vec<HeldOut>)> {
    let Context {
        args,
        validator,
        points,
        baseline,
    } = *ctx;
    // Local row i is points[rows[i]].
    let targets: Vec<Target> = rows.iter().map(|&i| target_of(&points[i])).collect();
    let mut simulate = |local: &[usize], c: Corrections| -> Vec<Prediction> {
        let subset: Vec<MeasuredPoint> = local.iter().map(|&l| points[rows[l]].clone()).collect();
        let mut keys = KeyCorrections::none();
        for &l in local {
            if let Some(recipe) = &baseline[rows[l]].recipe {
                keys.by_family
                    .insert(points[rows[l]].family(), correction_keys(recipe, c));
            }
        }
        validator
            .simulate(&subset, &keys)
            .iter()
            .map(prediction)
            .collect()
    };
    let mut memo = Memo::new(&mut simulate);
    let all: Vec<usize> = (0..rows.len()).collect();
    // The uncalibrated predictions (or failures) of the rows, by local index.
    let base: Vec<Prediction> = rows.iter().map(|&i| prediction(&baseline[i])).collect();
    for (l, p) in base.iter().enumerate() {
        memo.seed(l, Corrections::NONE, p.clone());
    }
    let uncalibrated = summarize(&targets, &all, &memo.predict(&all, Corrections::NONE));
    let what = Fit {
        request_overhead: !args.no_request_overhead,
        pass_overhead: args.fits_pass_overhead(),
        decode_overhead: args.fits_decode_overhead(),
        kv_pool: args.fit_kv_pool,
    };

    let (units, scheme) = cross_validation_plan(ctx, rows, &base);
    let fitted = fit(&mut memo, &targets, &all, what)?;
    let cross_validated = cross_validate(&mut memo, &targets, &units, scheme, what);
    let mut outcome = Outcome {
        what,
        fitted,
        cross_validated,
    };
    let held = Held {
        targets: &targets,
        all: &all,
        units: &units,
        scheme,
    };
    let [kv_pool_check, pass_overhead_check, decode_overhead_check] =
        check_optionals(&mut outcome, &mut memo, &held);
    let Outcome {
        fitted,
        cross_validated,
        ..
    } = outcome;
    let fitted_preds = memo.predict(&all, fitted.corrections);
    let in_sample = summarize(&targets, &all, &fitted_preds);
    let ids: Vec<String> = rows.iter().map(|&i| points[i].id.clone()).collect();
    let unmatched_rows = unmatched(&ids, &targets, &all, &fitted_preds, MAX_UNMATCHED);
    let failed: Vec<String> = base
        .iter()
        .zip(rows)
        .filter_map(|(p, &i)| {
            p.as_ref()
                .err()
                .map(|why| format!("{}: {why}", points[i].id))
        })
        .collect();
    let wider_held_out = wider_held_out(&targets, rows, wider);
    let held_out: Vec<HeldOut> = cross_validated
        .as_ref()
        .map(|cv| {
            cv.held_out
                .iter()
                .map(|(l, p)| (rows[*l], p.clone()))
                .collect()
        })
        .unwrap_or_default();
    let record = FitRecord {
        rows: ids,
        rows_failed: failed,
        objective: OBJECTIVE.to_string(),
        uncalibrated,
        fitted: in_sample,
        cross_validated,
        simulations: memo.simulations,
        unmatched_rows,
        kv_pool_check,
        pass_overhead_check,
        decode_overhead_check,
        wider_held_out,
        as_applied: None,
    };
    let mut entry = FamilyCalibration::new(family.clone(), fitted.corrections, Some(record));
    entry.monotone_decode = ctx.validator.options().monotone_decode;
    entry.fused_mixed_pass = ctx.validator.options().fused_mixed_pass;
    Some((entry, held_out))
}

/// How an entry over `rows` is cross-validated: its units (the rows that simulate, `base`
/// being their uncalibrated predictions, ordered by mode, lengths and concurrency, a run's
/// repeats together; a failed row has nothing to hold out) and the scheme (leave one out below
/// `--loo-below` rows, else folds as asked).
fn cross_validation_plan(
    ctx: &Context,
    rows: &[usize],
    base: &[Prediction],
) -> (Vec<Vec<usize>>, Scheme) {
    let Context {
        args,
        points,
        baseline,
        ..
    } = *ctx;
    let mut order: Vec<usize> = (0..rows.len()).filter(|&l| base[l].is_ok()).collect();
    order.sort_by(|&a, &b| {
        let (p, q) = (&points[rows[a]], &points[rows[b]]);
        let key = |p: &MeasuredPoint| {
            (
                p.mode.clone(),
                p.workload.isl,
                p.workload.osl,
                p.workload.concurrency.unwrap_or(0),
            )
        };
        key(p).cmp(&key(q)).then_with(|| p.id.cmp(&q.id))
    });
    let units = units_of(&order, |l| run_of(points, baseline, rows[l]));
    let scheme = if order.len() < args.loo_below {
        Scheme::LeaveOneOut
    } else {
        match args.fit_on {
            FitOn::One => Scheme::FitOnOne { folds: args.folds },
            FitOn::Rest => Scheme::FitOnRest { folds: args.folds },
        }
    };
    (units, scheme)
}

/// Checks the optional corrections of `outcome`, dropping those that do not pay; the last
/// check of each (KV pool factor, prefill pass overhead, decode pass overhead).
///
/// An optional correction fitted anywhere (on all the rows or in a fold) must cross-validate
/// better than the fit without it, or the entry is that fit: the KV pool factor first, then
/// the prefill pass overhead and the decode pass overhead, each against whatever the checks
/// before it kept. One that drops its correction refits without it, and there the corrections
/// still fitted may come out otherwise (one that had nothing to check may find a value, one
/// kept beside the correction dropped may no longer pay): each of them is due to be checked
/// again, in the same order round by round, until none is due. Each correction an entry keeps
/// was checked in its final fit.
fn check_optionals(
    outcome: &mut Outcome,
    memo: &mut Memo,
    held: &Held,
) -> [Option<OptionCheck>; 3] {
    let options = [
        Optional::KvPool,
        Optional::PassOverhead,
        Optional::DecodeOverhead,
    ];
    let mut checks: [Option<OptionCheck>; 3] = [None; 3];
    let mut due = [true; 3];
    while (0..options.len()).any(|i| due[i] && options[i].fitted_in(outcome.what)) {
        for i in 0..options.len() {
            if !(due[i] && options[i].fitted_in(outcome.what)) {
                continue;
            }
            due[i] = false;
            checks[i] = check_option(options[i], outcome, memo, held);
            if checks[i].is_some_and(|c| !c.kept) {
                // The fit changed: every other correction is due again.
                due = std::array::from_fn(|j| j != i);
            }
        }
    }
    checks
}

/// The errors of the wider entry's held-out predictions (`wider`, by point index) of the rows
/// `rows` (whose measurements are `targets`, by local index); `None` where it predicted none.
fn wider_held_out(targets: &[Target], rows: &[usize], wider: &[HeldOut]) -> Option<ErrorSummary> {
    let local: BTreeMap<usize, usize> = rows.iter().enumerate().map(|(l, &i)| (i, l)).collect();
    let (wider_rows, wider_preds): (Vec<usize>, Vec<Prediction>) = wider
        .iter()
        .filter_map(|(i, p)| local.get(i).map(|&l| (l, p.clone())))
        .unzip();
    Some(summarize(targets, &wider_rows, &wider_preds)).filter(|e| e.n > 0)
}

/// A correction `calibrate` fits only when asked, and keeps only where it cross-validates
/// better than the fit without it.
#[derive(Debug, Clone, Copy)]
enum Optional {
    /// `--fit-kv-pool`: a factor on the KV pool's block count.
    KvPool,
    /// The prefill pass overhead (unless `--no-fit-pass-overhead`): ms added to every pass that
    /// computes prompt tokens.
    PassOverhead,
    /// The decode pass overhead (unless `--no-fit-decode-overhead`): ms added to every pass
    /// that decodes.
    DecodeOverhead,
}

impl Optional {
    fn fitted_in(self, what: Fit) -> bool {
        match self {
            Optional::KvPool => what.kv_pool,
            Optional::PassOverhead => what.pass_overhead,
            Optional::DecodeOverhead => what.decode_overhead,
        }
    }

    fn left_out_of(self, what: Fit) -> Fit {
        match self {
            Optional::KvPool => Fit {
                kv_pool: false,
                ..what
            },
            Optional::PassOverhead => Fit {
                pass_overhead: false,
                ..what
            },
            Optional::DecodeOverhead => Fit {
                decode_overhead: false,
                ..what
            },
        }
    }

    /// Whether a fit found a value of its own (a fit without the correction leaves it at 1 or 0).
    fn moved(self, c: &Corrections) -> bool {
        match self {
            Optional::KvPool => !crate::config::is_unit(&c.kv_pool_scale),
            Optional::PassOverhead => c.prefill_pass_overhead_ms != 0.0,
            Optional::DecodeOverhead => c.decode_pass_overhead_ms != 0.0,
        }
    }
}

/// A family's fit so far: what it adjusts, the fit on all its rows and its cross-validation.
struct Outcome {
    what: Fit,
    fitted: Fitted,
    cross_validated: Option<CrossValidation>,
}

/// How a family's fits are cross-validated.
struct Held<'a> {
    targets: &'a [Target],
    all: &'a [usize],
    units: &'a [Vec<usize>],
    scheme: Scheme,
}

/// Where `option` was fitted and found a value of its own on all the rows or in a fold,
/// cross-validates the fit without it and keeps the one with the lower held-out objective (mean
/// |TTFT error| + mean |TPOT error|). A fit left without the correction no longer adjusts it in
/// later checks. `None` where there was nothing to check.
fn check_option(
    option: Optional,
    outcome: &mut Outcome,
    memo: &mut Memo,
    held: &Held,
) -> Option<OptionCheck> {
    let with = outcome
        .cross_validated
        .as_ref()
        .filter(|cv| {
            option.fitted_in(outcome.what)
                && (option.moved(&outcome.fitted.corrections)
                    || cv.fold_corrections.iter().any(|c| option.moved(c)))
        })?
        .errors;
    let plain = option.left_out_of(outcome.what);
    let cv0 = cross_validate(memo, held.targets, held.units, held.scheme, plain)?;
    let without = cv0.errors;
    let mut kept = with.objective() < without.objective();
    if !kept {
        match fit(memo, held.targets, held.all, plain) {
            Some(fitted0) => {
                *outcome = Outcome {
                    what: plain,
                    fitted: fitted0,
                    cross_validated: Some(cv0),
                };
            }
            // No fit without the correction to fall back on: the entry keeps it.
            None => kept = true,
        }
    }
    Some(OptionCheck {
        kept,
        with,
        without,
    })
}

/// The settings of the fit, as written into the file.
fn options_json(args: &CalibrateArgs) -> serde_json::Map<String, serde_json::Value> {
    let v = json!({
        "folds": args.folds,
        "fit_on": match args.fit_on { FitOn::One => "one", FitOn::Rest => "rest" },
        "loo_below": args.loo_below,
        "exclude": args.exclude,
        "per_decoding": !args.no_per_decoding,
        "per_version": !args.no_per_version,
        "per_quantisation": !args.no_per_quantisation,
        "per_parallelism": args.fits_per_parallelism(),
        "keep_narrow_entries": args.keep_narrow_entries,
        "fit": fit_name(args),
        "prompts_per_concurrency": args.options.prompts_per_concurrency,
        "random_range_ratio": args.options.random_range_ratio,
        "kv_cache_dtype": args.options.kv_cache_dtype,
        "memory_model": args.options.memory_model,
        "decode_timing": args.options.decode_timing,
        "mixed_pass": args.options.mixed_pass,
        "launch_settings": args.options.launch_settings,
        "dp_rank_routing": args.options.dp_rank_routing,
        // Corrections are fitted on the engine's passes alone (validate's --dispatch-overhead
        // none); a calibrated family drops validate's dispatch model.
        "dispatch_overhead": "none",
        "seed": args.options.seed,
    });
    match v {
        serde_json::Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

/// What the fit adjusts, as written into the file's options ("scales", "scales and request
/// overhead", "scales, request overhead and prefill pass overhead", …).
fn fit_name(args: &CalibrateArgs) -> String {
    let mut parts = vec!["scales"];
    if !args.no_request_overhead {
        parts.push("request overhead");
    }
    if args.fits_pass_overhead() {
        parts.push("prefill pass overhead");
    }
    if args.fits_decode_overhead() {
        parts.push("decode pass overhead");
    }
    if args.fit_kv_pool {
        parts.push("KV pool");
    }
    match parts.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => parts.join(""),
    }
}

/// One line per family: scales, then uncalibrated, in-sample and cross-validated errors.
pub fn render(file: &CalibrationFile) -> String {
    let w = file
        .families
        .iter()
        .map(|f| f.family().to_string().len())
        .max()
        .unwrap_or(0)
        .max(44);
    let mut out = format!(
        "{:<w$} {:>5} {:>8} {:>8} {:>9} {:>9} {:>9} {:>7}  {:>15}  {:>15}  {:>22}\n",
        "family",
        "rows",
        "prefill",
        "decode",
        "request",
        "pass",
        "dec pass",
        "kv pool",
        "uncal TTFT/TPOT",
        "fit TTFT/TPOT",
        "cross-val TTFT/TPOT"
    );
    for f in &file.families {
        let name = f.family().to_string();
        let Some(fit) = &f.fit else { continue };
        let cv = match &fit.cross_validated {
            Some(c) => format!("{} ({})", c.errors.pair(), short_scheme(&c.scheme, c.folds)),
            None => "n/a (too few rows)".to_string(),
        };
        out.push_str(&format!(
            "{:<w$} {:>5} {:>8.3} {:>8.3} {:>9} {:>9} {:>9} {:>7.3}  {:>15}  {:>15}  {:>22}\n",
            name,
            fit.rows.len(),
            f.prefill_scale,
            f.decode_scale,
            format!("{:.1}ms", f.request_overhead_ms),
            format!("{:.1}ms", f.prefill_pass_overhead_ms),
            format!("{:+.1}ms", f.decode_pass_overhead_ms),
            f.kv_pool_scale,
            fit.uncalibrated.pair(),
            fit.fitted.pair(),
            cv
        ));
        if !fit.unmatched_rows.is_empty() {
            let rows: Vec<String> = fit
                .unmatched_rows
                .iter()
                .map(|r| {
                    format!(
                        "{} (TTFT {:+.0}%, TPOT {:+.0}%)",
                        r.id, r.ttft_error_pct, r.tpot_error_pct
                    )
                })
                .collect();
            out.push_str(&format!(
                "  fitted, still over {UNMATCHED_PCT:.0}% off (worst first): {}\n",
                rows.join(", ")
            ));
        }
        if let Some(cv) = &fit.cross_validated {
            let simulated = fit.rows.len().saturating_sub(fit.rows_failed.len());
            if let Some(points) = cv.points.filter(|&p| p < simulated) {
                out.push_str(&format!(
                    "  cross-validated over {points} distinct points: {} of the {simulated} \
                     rows repeat another row's point and are held out with it\n",
                    simulated - points
                ));
            }
        }
        for (what, check) in [
            ("KV pool factor", &fit.kv_pool_check),
            ("prefill pass overhead", &fit.pass_overhead_check),
            ("decode pass overhead", &fit.decode_overhead_check),
        ] {
            if let Some(k) = check {
                out.push_str(&format!(
                    "  {what} {}: cross-validated {} with it, {} without\n",
                    if k.kept { "kept" } else { "dropped" },
                    k.with.pair(),
                    k.without.pair()
                ));
            }
        }
        if let (Some(wider), Some(cv)) = (&fit.wider_held_out, &fit.cross_validated) {
            out.push_str(&format!(
                "  held out on these rows: {} by this entry, {} by the wider one\n",
                cv.errors.pair(),
                wider.pair()
            ));
        }
        let last_of_family = file
            .families
            .iter()
            .rev()
            .find(|g| g.family().generic() == f.family().generic())
            .is_some_and(|g| std::ptr::eq(g, f));
        if last_of_family {
            let generic = f.family().generic();
            let applied = file
                .families
                .iter()
                .filter(|g| g.family() == generic)
                .find_map(|g| g.fit.as_ref())
                .and_then(|r| r.as_applied.as_ref().map(|e| (r.rows.len(), e)));
            if let Some((rows, e)) = applied {
                out.push_str(&format!(
                    "  as applied (the entry each of the {rows} rows takes): cross-val {}\n",
                    e.pair()
                ));
            }
        }
    }
    out
}

fn short_scheme(scheme: &str, folds: usize) -> String {
    match scheme {
        "leave-one-out" => "LOO".to_string(),
        "folds-fit-on-one" => format!("fit on 1/{folds}"),
        _ => format!("{folds}-fold"),
    }
}

fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Refuses, before anything is simulated, a file that could never be written.
fn check_output(path: &Path) -> Result<(), InputError> {
    if path.is_dir() {
        return Err(InputError::new(format!(
            "-o {}: is a folder, expected the calibration file to write",
            path.display()
        )));
    }
    let dir = folder_of(path);
    if !dir.is_dir() {
        return Err(InputError::new(format!(
            "-o {}: the folder {} does not exist",
            path.display(),
            dir.display()
        )));
    }
    Ok(())
}

/// Writes `text` to `path` through a temporary file in the same folder (a device, pipe or link is
/// written in place).
fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    crate::output_file::write_atomic(path, text.as_bytes())
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::units_of;

    #[test]
    fn rows_that_simulate_the_same_run_form_one_unit_where_the_first_is() {
        let runs = ["a", "b", "a", "c", "b", "a"];
        let units = units_of(&[5, 0, 1, 2, 3, 4], |l| runs[l].to_string());
        assert_eq!(units, vec![vec![5, 0, 2], vec![1, 4], vec![3]]);
    }
}
