use super::*;

/// A stand-in for the simulation with the property the fit relies on (all times scale with
/// a common factor) and a shape that depends on the ratio of the two scales: a row's TTFT is
/// its prefill work plus a queue of decode steps, its TPOT decode steps with some prefill
/// passes interleaved; a pass overhead is paid by the prefill passes a request waits for and by
/// those interleaved with its decode steps; a decode pass overhead by every decoding pass, those
/// before the first token and one per output token. Every fifth row needs more KV blocks than
/// its pool holds below factor 1: the factor kv makes it wait 1/kv − 1 more of its prefill.
#[derive(Clone)]
struct Toy {
    /// Per row: (prefill ms, queued decode ms, decode ms, interleaved prefill ms).
    rows: Vec<(f64, f64, f64, f64)>,
    calls: usize,
}

impl Toy {
    /// Per row: (prefill passes before the first token, prefill passes per output token,
    /// decoding passes before the first token).
    fn passes(r: usize) -> (f64, f64, f64) {
        let x = r as f64;
        (
            1.0 + (x % 4.0),
            0.01 + 0.02 * (x % 3.0),
            1.0 + 3.0 * (x % 6.0),
        )
    }

    fn new(n: usize) -> Self {
        let rows = (0..n)
            .map(|i| {
                let x = i as f64;
                (
                    20.0 + 37.0 * (x % 5.0),
                    5.0 + 11.0 * (x % 3.0),
                    8.0 + 0.7 * (x % 7.0),
                    0.2 + 0.3 * (x % 4.0),
                )
            })
            .collect();
        Toy { rows, calls: 0 }
    }

    fn times(&self, r: usize, c: Corrections) -> (f64, f64) {
        let (p, q, d, e) = self.rows[r];
        let (n, f, g) = Toy::passes(r);
        let (pass, dec) = (c.prefill_pass_overhead_ms, c.decode_pass_overhead_ms);
        let wait = if r.is_multiple_of(5) {
            (1.0 / c.kv_pool_scale - 1.0).max(0.0)
        } else {
            0.0
        };
        (
            p * (1.0 + wait) * c.prefill_scale
                + q * c.decode_scale
                + c.request_overhead_ms
                + n * pass
                + g * dec,
            d * c.decode_scale + e * c.prefill_scale + f * pass + dec,
        )
    }

    fn targets(&self, truth: Corrections) -> Vec<Target> {
        (0..self.rows.len())
            .map(|r| {
                let (ttft_ms, tpot_ms) = self.times(r, truth);
                Target { ttft_ms, tpot_ms }
            })
            .collect()
    }
}

impl Simulator for Toy {
    fn predict(&mut self, rows: &[usize], c: Corrections) -> Vec<Prediction> {
        self.calls += 1;
        rows.iter().map(|&r| Ok(self.times(r, c))).collect()
    }
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a / b - 1.0).abs() <= rel
}

#[test]
fn recovers_known_scales_on_the_lattice_exactly() {
    // ratio 2^0.375 is a lattice point of the search; the common scale is found in closed form.
    let truth = Corrections {
        prefill_scale: 0.8 * 0.375f64.exp2(),
        decode_scale: 0.8,
        request_overhead_ms: 0.0,
        prefill_pass_overhead_ms: 0.0,
        decode_pass_overhead_ms: 0.0,
        kv_pool_scale: 1.0,
    };
    let mut toy = Toy::new(30);
    let targets = toy.targets(truth);
    let rows: Vec<usize> = (0..30).collect();
    let mut memo = Memo::new(&mut toy);
    let f = fit(&mut memo, &targets, &rows, Fit::SCALES).unwrap();
    assert!(
        close(f.corrections.prefill_scale, truth.prefill_scale, 1e-9),
        "{f:?}"
    );
    assert!(
        close(f.corrections.decode_scale, truth.decode_scale, 1e-9),
        "{f:?}"
    );
    assert!(f.objective < 1e-9, "{f:?}");
}

#[test]
fn recovers_off_lattice_scales_within_the_finest_step() {
    // The finest grid step is 1/16 in log2 of the ratio: the ratio is found within half of it.
    let half_step = (FINEST_STEP / 2.0).exp2() - 1.0;
    for (a, b) in [(1.23, 0.91), (0.37, 1.6), (3.1, 1.05), (1.0, 1.0)] {
        let truth = Corrections {
            prefill_scale: a,
            decode_scale: b,
            request_overhead_ms: 0.0,
            prefill_pass_overhead_ms: 0.0,
            decode_pass_overhead_ms: 0.0,
            kv_pool_scale: 1.0,
        };
        let mut toy = Toy::new(24);
        let targets = toy.targets(truth);
        let rows: Vec<usize> = (0..24).collect();
        let mut memo = Memo::new(&mut toy);
        let f = fit(&mut memo, &targets, &rows, Fit::SCALES).unwrap();
        let ratio = f.corrections.prefill_scale / f.corrections.decode_scale;
        assert!(close(ratio, a / b, half_step), "truth {a}/{b}: {f:?}");
        assert!(close(f.corrections.decode_scale, b, half_step), "{f:?}");
        assert!(
            close(f.corrections.prefill_scale, a, 2.0 * half_step),
            "{f:?}"
        );
    }
}

#[test]
fn the_grid_widens_when_the_ratio_is_far_out() {
    // Ratio 8 (log2 = 3) lies outside the coarse grid [-2, 2].
    let truth = Corrections {
        prefill_scale: 8.0,
        decode_scale: 1.0,
        request_overhead_ms: 0.0,
        prefill_pass_overhead_ms: 0.0,
        decode_pass_overhead_ms: 0.0,
        kv_pool_scale: 1.0,
    };
    let mut toy = Toy::new(12);
    let targets = toy.targets(truth);
    let rows: Vec<usize> = (0..12).collect();
    let mut memo = Memo::new(&mut toy);
    let f = fit(&mut memo, &targets, &rows, Fit::SCALES).unwrap();
    assert!(close(f.corrections.prefill_scale, 8.0, 1e-9), "{f:?}");
}

#[test]
fn best_scale_minimises_the_objective() {
    let t = [0.8, 0.9, 1.3, 0.7];
    let u = [1.1, 1.05, 0.95];
    let k = best_scale(&t, &u);
    let at = objective(k, &t, &u);
    for i in 1..400 {
        let other = i as f64 / 200.0;
        assert!(objective(other, &t, &u) >= at - 1e-12, "k {k} vs {other}");
    }
}

/// The cross-validation of a fit of the scales alone, which must give a figure.
fn scales_cv(
    memo: &mut Memo,
    targets: &[Target],
    units: &[Vec<usize>],
    scheme: Scheme,
) -> CrossValidation {
    cross_validate(memo, targets, units, scheme, Fit::SCALES).unwrap()
}

#[test]
fn the_memo_simulates_each_point_once() {
    let mut toy = Toy::new(9);
    let targets = toy.targets(Corrections::NONE);
    let units: Vec<Vec<usize>> = (0..9).map(|r| vec![r]).collect();
    let mut memo = Memo::new(&mut toy);
    let cv = scales_cv(&mut memo, &targets, &units, Scheme::FitOnOne { folds: 3 });
    let sims = memo.simulations;
    drop(memo);
    // Every fold shares the coarse grid: far fewer simulations than folds × grid × rows.
    assert!(sims < 3 * 15 * 9, "{sims}");
    assert!(toy.calls > 0);
    // Perfect model: every held-out error is 0 and every fold finds the truth.
    assert_eq!(cv.folds, 3);
    assert_eq!(
        cv.errors.n, 18,
        "each row predicted by the two folds that left it out"
    );
    assert!(cv.errors.ttft_mean_abs_pct < 1e-6, "{cv:?}");
    assert!(cv.errors.tpot_mean_abs_pct < 1e-6, "{cv:?}");
    for c in &cv.fold_corrections {
        assert!(close(c.prefill_scale, 1.0, 1e-9) && close(c.decode_scale, 1.0, 1e-9));
    }
}

#[test]
fn cross_validation_sees_errors_a_fit_on_all_rows_hides() {
    // Rows 0..6 run 30 % slower in prefill than the others: a fit on all rows compromises, and
    // the held-out rows show errors. Leave-one-out on 6 rows: 6 folds of one test row each.
    let mut toy = Toy::new(12);
    let mut targets = toy.targets(Corrections::NONE);
    for t in targets.iter_mut().take(6) {
        t.ttft_ms *= 1.3;
    }
    let units: Vec<Vec<usize>> = (0..12).map(|r| vec![r]).collect();
    let mut memo = Memo::new(&mut toy);
    let loo = scales_cv(&mut memo, &targets, &units, Scheme::LeaveOneOut);
    assert_eq!(loo.folds, 12);
    assert_eq!(loo.errors.n, 12);
    assert!(loo.errors.ttft_mean_abs_pct > 5.0, "{loo:?}");
    let rest = scales_cv(&mut memo, &targets, &units, Scheme::FitOnRest { folds: 3 });
    assert_eq!(rest.errors.n, 12);
    assert_eq!(rest.scheme, "folds-fit-on-rest");
}

#[test]
fn repeats_of_a_point_are_held_out_together() {
    // Three points, each measured twice with the same figures; each point's servers ran at
    // their own prefill speed (ratios on the search's lattice). Each fold's fit sees one point's
    // two rows and finds its speed exactly; dealt row by row, a fold would have mixed two points
    // and checked each point's rows on a fit that saw their repeats.
    let ratios: [f64; 3] = [0.375, 0.125, -0.25];
    let mut sim = |rows: &[usize], c: Corrections| -> Vec<Prediction> {
        rows.iter()
            .map(|_| Ok((100.0 * c.prefill_scale, 10.0 * c.decode_scale)))
            .collect()
    };
    let targets: Vec<Target> = (0..6)
        .map(|r| Target {
            ttft_ms: 100.0 * 0.9 * ratios[r / 2].exp2(),
            tpot_ms: 9.0,
        })
        .collect();
    let units: Vec<Vec<usize>> = (0..3).map(|u| vec![2 * u, 2 * u + 1]).collect();
    let mut memo = Memo::new(&mut sim);
    let cv = scales_cv(&mut memo, &targets, &units, Scheme::FitOnOne { folds: 3 });
    assert_eq!(cv.fold_corrections.len(), 3);
    for (f, c) in cv.fold_corrections.iter().enumerate() {
        let want = 0.9 * ratios[f].exp2();
        assert!(close(c.prefill_scale, want, 1e-9), "fold {f}: {c:?}");
    }
    // Each row is checked by the two folds that did not see its point, and never by its own.
    assert_eq!(cv.errors.n, 12);
    for (row, p) in &cv.held_out {
        let (ttft, _) = p.as_ref().unwrap();
        assert!(
            (ttft / targets[*row].ttft_ms - 1.0).abs() > 0.1,
            "row {row} predicted {ttft} by a fit that saw its repeat"
        );
    }
    // Leave-one-out leaves a point out with its repeat: three fits, not six.
    let loo = scales_cv(&mut memo, &targets, &units, Scheme::LeaveOneOut);
    assert_eq!((loo.folds, loo.errors.n), (3, 6));
}

#[test]
fn failed_rows_are_left_out_and_too_few_rows_give_no_cross_validation() {
    let mut sim = |rows: &[usize], c: Corrections| -> Vec<Prediction> {
        rows.iter()
            .map(|&r| {
                if r == 1 {
                    Err("unsupported".to_string())
                } else {
                    Ok((100.0 * c.prefill_scale, 10.0 * c.decode_scale))
                }
            })
            .collect()
    };
    // Truth: decode x0.9, prefill x0.9·2^0.375 (a ratio on the search's lattice).
    let prefill = 0.9 * 0.375f64.exp2();
    let targets = vec![
        Target {
            ttft_ms: 100.0 * prefill,
            tpot_ms: 9.0,
        };
        3
    ];
    let mut memo = Memo::new(&mut sim);
    let f = fit(&mut memo, &targets, &[0, 1, 2], Fit::SCALES).unwrap();
    assert!(close(f.corrections.prefill_scale, prefill, 1e-9), "{f:?}");
    assert!(close(f.corrections.decode_scale, 0.9, 1e-9), "{f:?}");
    assert!(fit(&mut memo, &targets, &[1], Fit::SCALES).is_none());
    let mut no_figure = |units: &[Vec<usize>], scheme| {
        cross_validate(&mut memo, &targets, units, scheme, Fit::SCALES).is_none()
    };
    assert!(no_figure(&[vec![0]], Scheme::LeaveOneOut));
    assert!(no_figure(
        &[vec![0], vec![2]],
        Scheme::FitOnOne { folds: 3 }
    ));
    // Folds whose held-out rows all fail give no figure at all, never a 0 % error: rows 0 and
    // 1, fit on one fold each, hold out the failing row 1 or leave no row to fit.
    assert!(no_figure(
        &[vec![0], vec![1]],
        Scheme::FitOnOne { folds: 2 }
    ));
    let preds = memo.predict(&[0, 1, 2], Corrections::NONE);
    let s = summarize(&targets, &[0, 1, 2], &preds);
    assert_eq!(s.n, 2);
    assert!(
        close(
            s.ttft_mean_abs_pct,
            (1.0 / prefill - 1.0).abs() * 100.0,
            1e-9
        ),
        "{s:?}"
    );
}

#[test]
fn median_of_odd_even_and_empty() {
    assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
    assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    assert_eq!(median(&[]), 0.0);
}

#[test]
fn recovers_a_request_overhead_with_the_scales() {
    // Ratio on the lattice, overhead 25 ms: the joint fit finds all three.
    let truth = Corrections {
        prefill_scale: 1.2 * 0.25f64.exp2(),
        decode_scale: 1.2,
        request_overhead_ms: 25.0,
        prefill_pass_overhead_ms: 0.0,
        decode_pass_overhead_ms: 0.0,
        kv_pool_scale: 1.0,
    };
    let mut toy = Toy::new(30);
    let targets = toy.targets(truth);
    let rows: Vec<usize> = (0..30).collect();
    let mut memo = Memo::new(&mut toy);
    let f = fit(&mut memo, &targets, &rows, Fit::SCALES_AND_OVERHEAD).unwrap();
    let c = f.corrections;
    assert!(close(c.prefill_scale, truth.prefill_scale, 1e-6), "{f:?}");
    assert!(close(c.decode_scale, truth.decode_scale, 1e-6), "{f:?}");
    assert!((c.request_overhead_ms - 25.0).abs() < 1e-3, "{f:?}");
    assert!(f.objective < 1e-6, "{f:?}");
    // Scales alone cannot express the overhead: a worse fit on the same rows.
    let g = fit(&mut memo, &targets, &rows, Fit::SCALES).unwrap();
    assert_eq!(g.corrections.request_overhead_ms, 0.0);
    assert!(g.objective > f.objective + 0.01, "{g:?} vs {f:?}");
}

#[test]
fn recovers_a_pass_overhead_with_the_scales() {
    // Ratio and pass overhead on their lattices (16 ms at decode scale 1 is 2^(16/4)): the
    // coordinate descent finds them, with the common scale applied to the overhead too.
    let k = 1.3;
    let truth = Corrections {
        prefill_scale: k * 0.5f64.exp2(),
        decode_scale: k,
        request_overhead_ms: 0.0,
        prefill_pass_overhead_ms: 16.0 * k,
        decode_pass_overhead_ms: 0.0,
        kv_pool_scale: 1.0,
    };
    let mut toy = Toy::new(30);
    let targets = toy.targets(truth);
    let rows: Vec<usize> = (0..30).collect();
    let mut memo = Memo::new(&mut toy);
    let f = fit(&mut memo, &targets, &rows, Fit::ALL).unwrap();
    let c = f.corrections;
    assert!(close(c.prefill_scale, truth.prefill_scale, 1e-6), "{f:?}");
    assert!(close(c.decode_scale, truth.decode_scale, 1e-6), "{f:?}");
    assert!(close(c.prefill_pass_overhead_ms, 16.0 * k, 1e-6), "{f:?}");
    assert!(c.request_overhead_ms.abs() < 1e-3, "{f:?}");
    assert!(f.objective < 1e-6, "{f:?}");
    // Without it, the request overhead and the scales cannot express it.
    let g = fit(&mut memo, &targets, &rows, Fit::SCALES_AND_OVERHEAD).unwrap();
    assert_eq!(g.corrections.prefill_pass_overhead_ms, 0.0);
    assert!(g.objective > f.objective + 0.01, "{g:?} vs {f:?}");
}

#[test]
fn recovers_a_negative_decode_pass_overhead_with_the_scales() {
    // Ratio and request overhead on their lattices, a decode pass overhead of −1.713 ms (on no
    // lattice: it comes in closed form from each probe's two simulations).
    let k = 0.9;
    let truth = Corrections {
        prefill_scale: k * 0.25f64.exp2(),
        decode_scale: k,
        request_overhead_ms: 12.0,
        decode_pass_overhead_ms: -1.713,
        ..Corrections::NONE
    };
    let mut toy = Toy::new(30);
    let targets = toy.targets(truth);
    let rows: Vec<usize> = (0..30).collect();
    let mut memo = Memo::new(&mut toy);
    let what = Fit {
        decode_overhead: true,
        ..Fit::SCALES_AND_OVERHEAD
    };
    let f = fit(&mut memo, &targets, &rows, what).unwrap();
    let c = f.corrections;
    assert!(close(c.prefill_scale, truth.prefill_scale, 1e-6), "{f:?}");
    assert!(close(c.decode_scale, truth.decode_scale, 1e-6), "{f:?}");
    assert!((c.decode_pass_overhead_ms + 1.713).abs() < 2e-3, "{f:?}");
    assert!((c.request_overhead_ms - 12.0).abs() < 1e-3, "{f:?}");
    assert_eq!(c.prefill_pass_overhead_ms, 0.0);
    assert!(f.objective < 1e-6, "{f:?}");
    // Without it, the scales and the request overhead cannot express it.
    let g = fit(&mut memo, &targets, &rows, Fit::SCALES_AND_OVERHEAD).unwrap();
    assert_eq!(g.corrections.decode_pass_overhead_ms, 0.0);
    assert!(g.objective > f.objective + 0.01, "{g:?} vs {f:?}");
}

#[test]
fn no_pass_overhead_when_the_data_has_none() {
    // Rows a scale alone explains: the pass overhead's probes lose to none, and the fit is the
    // one without them.
    let truth = Corrections {
        prefill_scale: 0.9,
        decode_scale: 0.9,
        ..Corrections::NONE
    };
    let mut toy = Toy::new(24);
    let targets = toy.targets(truth);
    let rows: Vec<usize> = (0..24).collect();
    let mut memo = Memo::new(&mut toy);
    let f = fit(&mut memo, &targets, &rows, Fit::ALL).unwrap();
    assert_eq!(f.corrections.prefill_pass_overhead_ms, 0.0, "{f:?}");
    assert_eq!(f.corrections.decode_pass_overhead_ms, 0.0, "{f:?}");
    assert!(f.objective < 1e-6, "{f:?}");
}

#[test]
fn the_overhead_is_never_negative() {
    // Measured TTFTs 10 ms below a perfect model's: an overhead would have to be negative, so
    // it stays 0 and the fit is no worse than the scales' alone.
    let mut toy = Toy::new(20);
    let mut targets = toy.targets(Corrections::NONE);
    for t in &mut targets {
        t.ttft_ms -= 10.0;
    }
    let rows: Vec<usize> = (0..20).collect();
    let mut memo = Memo::new(&mut toy);
    let f = fit(&mut memo, &targets, &rows, Fit::SCALES_AND_OVERHEAD).unwrap();
    assert!(f.corrections.request_overhead_ms.abs() < 1e-9, "{f:?}");
    let g = fit(&mut memo, &targets, &rows, Fit::SCALES).unwrap();
    assert!(f.objective <= g.objective + 1e-6, "{f:?} vs {g:?}");
}

#[test]
fn best_scale_and_overhead_minimises_the_objective() {
    let obs: Vec<Obs> = [
        (50.0, 90.0, 10.0, 11.0),
        (120.0, 170.0, 12.0, 12.5),
        (400.0, 520.0, 20.0, 21.0),
        (30.0, 75.0, 8.0, 8.1),
        (900.0, 1000.0, 30.0, 33.0),
    ]
    .iter()
    .map(|&(t, m, u, q)| Obs {
        t,
        m,
        u,
        q,
        dt: 0.0,
        du: 0.0,
    })
    .collect();
    let (k, o, at) = best_scale_and_overhead(&obs, 0.0, true);
    assert!((objective_with_overhead(k, o, 0.0, &obs) - at).abs() < 1e-12);
    assert!(o >= 0.0);
    for i in 1..200 {
        for j in 0..100 {
            let (kk, oo) = (0.5 + i as f64 / 200.0, j as f64);
            assert!(
                objective_with_overhead(kk, oo, 0.0, &obs) >= at - 1e-9,
                "({k}, {o}) = {at} vs ({kk}, {oo})"
            );
        }
    }
}

#[test]
fn best_for_finds_the_decode_pass_overhead_of_a_grid() {
    // Rows whose decode passes each take 1.5 ms more than the simulation's, with a request
    // overhead of 20 ms and a common scale of 1.1: (k, o, D) minimises the objective jointly,
    // no grid point beats it, and without slopes no overhead is fitted.
    let obs: Vec<Obs> = [
        (50.0, 10.0, 3.0, 1.0),
        (120.0, 12.0, 7.0, 1.02),
        (400.0, 20.0, 11.0, 1.05),
        (30.0, 8.0, 2.0, 1.0),
        (900.0, 30.0, 25.0, 1.1),
        (260.0, 16.0, 5.0, 1.01),
    ]
    .iter()
    .map(|&(t, u, dt, du): &(f64, f64, f64, f64)| Obs {
        t,
        m: 1.1 * t + 20.0 + 1.5 * dt,
        u,
        q: 1.1 * u + 1.5 * du,
        dt,
        du,
    })
    .collect();
    let what = Fit {
        decode_overhead: true,
        ..Fit::SCALES_AND_OVERHEAD
    };
    let (k, o, d, at) = best_for(what, &obs);
    assert!(
        (k - 1.1).abs() < 1e-6 && (o - 20.0).abs() < 1e-3,
        "{k} {o} {d}"
    );
    assert!((d - 1.5).abs() < 1e-3 && at < 1e-5, "{k} {o} {d} {at}");
    for i in 0..60 {
        let dd = -3.0 + i as f64 / 10.0;
        let (kk, oo, obj) = best_scale_and_overhead(&obs, dd, true);
        assert!(obj >= at - 1e-9, "D {dd}: ({kk}, {oo}) {obj} < {at}");
    }
    let flat: Vec<Obs> = obs
        .iter()
        .map(|&x| Obs {
            dt: 0.0,
            du: 0.0,
            ..x
        })
        .collect();
    assert_eq!(best_for(what, &flat).2, 0.0);
}

#[test]
fn recovers_a_smaller_kv_pool_with_the_scales() {
    // Every fifth row queues for a pool half the simulated one: the fit finds the factor ½ on
    // its lattice (index −4) with the scales and the request overhead.
    let k = 0.9;
    let truth = Corrections {
        prefill_scale: k * 0.25f64.exp2(),
        decode_scale: k,
        request_overhead_ms: 12.0,
        kv_pool_scale: 0.5,
        ..Corrections::NONE
    };
    assert_eq!(kv_scale(-4), 0.5);
    let mut toy = Toy::new(30);
    let targets = toy.targets(truth);
    let rows: Vec<usize> = (0..30).collect();
    let mut memo = Memo::new(&mut toy);
    let what = Fit {
        kv_pool: true,
        ..Fit::SCALES_AND_OVERHEAD
    };
    let f = fit(&mut memo, &targets, &rows, what).unwrap();
    let c = f.corrections;
    assert_eq!(c.kv_pool_scale, 0.5, "{f:?}");
    assert!(close(c.prefill_scale, truth.prefill_scale, 1e-6), "{f:?}");
    assert!(close(c.decode_scale, truth.decode_scale, 1e-6), "{f:?}");
    assert!((c.request_overhead_ms - 12.0).abs() < 1e-3, "{f:?}");
    assert!(f.objective < 1e-6, "{f:?}");
    // Without it, the other corrections cannot express the queueing.
    let g = fit(&mut memo, &targets, &rows, Fit::SCALES_AND_OVERHEAD).unwrap();
    assert_eq!(g.corrections.kv_pool_scale, 1.0);
    assert!(g.objective > f.objective + 0.01, "{g:?} vs {f:?}");
}

#[test]
fn a_pool_no_row_fills_keeps_its_size() {
    // Rows that no factor changes above 1 and every factor below 1 makes worse: the fit keeps
    // the pool (a tie between 1 and the larger factors goes to 1) and finds what the fit
    // without the factor finds.
    let truth = Corrections {
        prefill_scale: 1.1,
        decode_scale: 0.95,
        ..Corrections::NONE
    };
    let mut toy = Toy::new(24);
    let targets = toy.targets(truth);
    let rows: Vec<usize> = (0..24).collect();
    let mut memo = Memo::new(&mut toy);
    let what = Fit {
        kv_pool: true,
        ..Fit::SCALES_AND_OVERHEAD
    };
    let f = fit(&mut memo, &targets, &rows, what).unwrap();
    let g = fit(&mut memo, &targets, &rows, Fit::SCALES_AND_OVERHEAD).unwrap();
    assert_eq!(f.corrections.kv_pool_scale, 1.0, "{f:?}");
    assert_eq!(f.corrections, g.corrections);
    assert_eq!(f.objective, g.objective);
}

#[test]
fn the_kv_lattice_is_a_power_of_two_per_four_steps() {
    assert_eq!(kv_scale(0), 1.0);
    assert_eq!(kv_scale(-8), 0.25);
    assert_eq!(kv_scale(4), 2.0);
    assert_eq!(kv_scale(KV_RANGE.0), 0.125);
    assert_eq!(kv_scale(KV_RANGE.1), 4.0);
}

#[test]
fn extrapolation_follows_the_probe_and_keeps_failures() {
    let base: Vec<Prediction> = vec![Ok((100.0, 10.0)), Err("pool".into()), Ok((50.0, 5.0))];
    let probe: Vec<Prediction> = vec![Ok((103.0, 11.0)), Ok((1.0, 1.0)), Err("x".into())];
    let got = extrapolate(&base, &probe, 4.0 * SLOPE_PROBE_MS);
    assert_eq!(got[0], Ok((112.0, 14.0)));
    assert_eq!(got[1], Err("pool".to_string()));
    assert_eq!(got[2], Err("x".to_string()));
    // At 0 ms, the base itself.
    assert_eq!(extrapolate(&base, &probe, 0.0)[0], Ok((100.0, 10.0)));
}

#[test]
fn errors_by_row_weigh_every_row_the_same() {
    let t = |ttft_ms, tpot_ms| Target { ttft_ms, tpot_ms };
    let targets = [t(100.0, 10.0), t(100.0, 10.0), t(100.0, 10.0)];
    // Row 0 held out twice (+10 % and +30 % TTFT), row 1 once (−40 %), row 2 only by a
    // prediction that failed.
    let held: Vec<(usize, Prediction)> = vec![
        (0, Ok((110.0, 10.0))),
        (1, Ok((60.0, 12.0))),
        (0, Ok((130.0, 10.0))),
        (2, Err("failed".to_string())),
    ];
    let s = summarize_by_row(&targets, &held);
    assert_eq!(s.n, 2);
    // Row 0 averages 20 %, row 1 is 40 %: 30 %, where the three predictions would give 26.7.
    assert!(close(s.ttft_mean_abs_pct, 30.0, 1e-9), "{s:?}");
    assert!(close(s.tpot_mean_abs_pct, 10.0, 1e-9), "{s:?}");
    // The median of the rows' mean signed errors, +20 % and −40 %.
    assert!(close(s.ttft_signed_median_pct, -10.0, 1e-9), "{s:?}");
    let by_prediction = summarize(
        &targets,
        &[0, 1, 0],
        &[Ok((110.0, 10.0)), Ok((60.0, 12.0)), Ok((130.0, 10.0))],
    );
    assert_eq!(by_prediction.n, 3);
    assert!(close(by_prediction.ttft_mean_abs_pct, 80.0 / 3.0, 1e-9));
}
