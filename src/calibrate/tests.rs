use super::*;

fn family() -> Family {
    Family {
        system: "h200_sxm".into(),
        backend: "vllm".into(),
        model: "meta-llama/Meta-Llama-3.1-70B".into(),
        decoding: None,
        server_version: None,
        quantisation: None,
        parallelism: None,
    }
}

fn sample() -> CalibrationFile {
    let mut opts = serde_json::Map::new();
    opts.insert("folds".into(), serde_json::json!(3));
    let mut f = CalibrationFile::new(vec!["rows.csv".into()], opts);
    let summary = ErrorSummary {
        n: 4,
        ttft_mean_abs_pct: 7.5,
        ttft_signed_median_pct: -1.25,
        tpot_mean_abs_pct: 2.0,
        tpot_signed_median_pct: 0.5,
    };
    f.families.push(FamilyCalibration::new(
        family(),
        Corrections {
            prefill_scale: 1.18,
            decode_scale: 0.97,
            request_overhead_ms: 0.0,
            prefill_pass_overhead_ms: 0.0,
            decode_pass_overhead_ms: 0.0,
            kv_pool_scale: 1.0,
        },
        Some(FitRecord {
            rows: vec!["a".into(), "b".into()],
            rows_failed: vec!["c: unsupported".into()],
            objective: "mean |TTFT error| + mean |TPOT error|".into(),
            uncalibrated: summary,
            fitted: summary,
            cross_validated: Some(CrossValidation {
                scheme: "leave-one-out".into(),
                folds: 2,
                points: Some(2),
                errors: summary,
                fold_corrections: vec![Corrections::NONE, Corrections::NONE],
                held_out: Vec::new(),
            }),
            simulations: 40,
            unmatched_rows: vec![super::fit::UnmatchedRow {
                id: "b".into(),
                ttft_error_pct: -64.4,
                tpot_error_pct: 12.0,
            }],
            kv_pool_check: Some(super::OptionCheck {
                kept: false,
                with: summary,
                without: summary,
            }),
            pass_overhead_check: Some(super::OptionCheck {
                kept: false,
                with: ErrorSummary {
                    ttft_mean_abs_pct: 30.5,
                    ..summary
                },
                without: summary,
            }),
            decode_overhead_check: Some(super::OptionCheck {
                kept: true,
                with: summary,
                without: ErrorSummary {
                    tpot_mean_abs_pct: 9.5,
                    ..summary
                },
            }),
            wider_held_out: Some(ErrorSummary {
                ttft_mean_abs_pct: 21.5,
                ..summary
            }),
            as_applied: Some(ErrorSummary {
                tpot_mean_abs_pct: 4.5,
                ..summary
            }),
        }),
    ));
    f
}

#[test]
fn the_file_round_trips() {
    let f = sample();
    let text = f.to_json();
    assert!(text.ends_with("}\n"));
    let back = CalibrationFile::parse(&text).unwrap();
    assert_eq!(back, f);
    assert!(text.contains("\"wider_held_out\""), "{text}");
    assert!(text.contains("\"as_applied\""), "{text}");
    assert!(text.contains("\"pass_overhead_check\""), "{text}");
    // Files written before the prefill pass overhead was checked have no such record.
    let mut g = sample();
    if let Some(fit) = g.families[0].fit.as_mut() {
        fit.pass_overhead_check = None;
    }
    let text = g.to_json();
    assert!(!text.contains("pass_overhead_check"), "{text}");
    assert_eq!(CalibrationFile::parse(&text).unwrap(), g);
    // A hand-written entry needs no provenance.
    let hand = r#"{"format": "dynosim-calibration", "version": 1, "families": [
        {"system": "s", "backend": "vllm", "model": "m", "prefill_scale": 2, "decode_scale": 0.5}]}"#;
    let f = CalibrationFile::parse(hand).unwrap();
    assert_eq!(f.families[0].corrections().prefill_scale, 2.0);
    assert!(f.families[0].fit.is_none());
    // The decode pass overhead is written only when fitted (files stay as they were without
    // it), and read back signed.
    assert!(!sample().to_json().contains("decode_pass_overhead_ms"));
    let mut g = sample();
    g.families[0].decode_pass_overhead_ms = -1.25;
    let text = g.to_json();
    assert!(
        text.contains("\"decode_pass_overhead_ms\": -1.25"),
        "{text}"
    );
    let back = CalibrationFile::parse(&text).unwrap();
    assert_eq!(
        back.families[0].corrections().decode_pass_overhead_ms,
        -1.25
    );
}

#[test]
fn files_of_the_kv_pool_check_alone_still_read() {
    // Before the decode overhead was checked too, the check's errors were written as
    // with_factor / without_factor.
    let text = sample().to_json();
    assert!(text.contains("\"decode_overhead_check\""), "{text}");
    let old = text
        .replace("\"with\":", "\"with_factor\":")
        .replace("\"without\":", "\"without_factor\":");
    assert_ne!(old, text);
    assert_eq!(CalibrationFile::parse(&old).unwrap(), sample());
}

#[test]
fn bad_files_name_what_is_wrong() {
    let cases = [
        ("{", "line 1: not valid JSON"),
        (r#"{"version": 1, "families": []}"#, "key \"format\" missing"),
        (
            r#"{"format": "x", "version": 1, "families": []}"#,
            "key \"format\" is \"x\", expected \"dynosim-calibration\"",
        ),
        (
            r#"{"format": "dynosim-calibration", "version": 2, "families": []}"#,
            "key \"version\" is 2; this dynosim reads version 1",
        ),
        (
            r#"{"format": "dynosim-calibration", "version": 1}"#,
            "missing field `families`",
        ),
        (
            "{\"format\": \"dynosim-calibration\", \"version\": 1, \"families\": [\n{\"system\": \"s\", \"backend\": \"b\", \"model\": \"m\", \"prefill_scale\": 1, \"decode_scale\": 1, \"ttft_offset\": 3}]}",
            "line 2: unknown field `ttft_offset`",
        ),
        (
            r#"{"format": "dynosim-calibration", "version": 1, "families": [
            {"system": "s", "backend": "b", "model": "m", "prefill_scale": 0, "decode_scale": 1}]}"#,
            "families[0].prefill_scale = 0: expected a finite number > 0",
        ),
        (
            r#"{"format": "dynosim-calibration", "version": 1, "families": [
            {"system": "s", "backend": "b", "model": "m", "prefill_scale": 1, "decode_scale": 1},
            {"system": "s", "backend": "b", "model": "m", "prefill_scale": 2, "decode_scale": 1}]}"#,
            "families[1] repeats the family of families[0] (s b m)",
        ),
        (
            r#"{"format": "dynosim-calibration", "version": 1, "families": [
            {"system": "s", "backend": "b", "model": "m", "prefill_scale": 1, "decode_scale": 1,
             "decode_pass_overhead_ms": -4e6}]}"#,
            "families[0].decode_pass_overhead_ms = -4000000: expected a number of ms in \
             [-3600000, 3600000]",
        ),
    ];
    for (text, want) in cases {
        let e = CalibrationFile::parse(text).unwrap_err().to_string();
        assert!(e.contains(want), "{text}\n -> {e}\n wanted {want}");
    }
    let e = CalibrationFile::load(Path::new("/no/such/cal.json"), "--calibration")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("--calibration: /no/such/cal.json: cannot read the calibration file"),
        "{e}"
    );
}

#[test]
fn corrections_compose_with_the_ratios_already_set() {
    let c = Corrections {
        prefill_scale: 1.25,
        decode_scale: 0.8,
        request_overhead_ms: 0.0,
        prefill_pass_overhead_ms: 0.0,
        decode_pass_overhead_ms: 0.0,
        kv_pool_scale: 1.0,
    };
    // Unset ratios: prefill divisor 1/1.25, decode divisor 1/0.8.
    let mut e = EngineArgs::default();
    c.apply_to(&mut e);
    assert!((1.0 / e.speedup_ratio - 1.25).abs() < 1e-12);
    assert!((1.0 / (e.speedup_ratio * e.decode_speedup_ratio) - 0.8).abs() < 1e-12);
    // Set ratios: the user's 2 and 1.5 still divide.
    let mut e = EngineArgs {
        speedup_ratio: 2.0,
        decode_speedup_ratio: 1.5,
        ..EngineArgs::default()
    };
    c.apply_to(&mut e);
    assert!((1.0 / e.speedup_ratio - 1.25 / 2.0).abs() < 1e-12);
    assert!((1.0 / (e.speedup_ratio * e.decode_speedup_ratio) - 0.8 / 3.0).abs() < 1e-12);
    // A ratio <= 0 ("no scaling") counts as 1.
    let mut e = EngineArgs {
        speedup_ratio: 0.0,
        ..EngineArgs::default()
    };
    c.apply_to(&mut e);
    assert!((1.0 / e.speedup_ratio - 1.25).abs() < 1e-12);
    // The overheads add to the pool's own.
    let mut e = EngineArgs {
        decode_pass_overhead_ms: 0.5,
        ..EngineArgs::default()
    };
    Corrections {
        decode_pass_overhead_ms: -2.0,
        ..c
    }
    .apply_to(&mut e);
    assert_eq!(e.decode_pass_overhead_ms, -1.5);
    // The KV pool factor multiplies the pool's own; the block count stays as given.
    let mut e = EngineArgs {
        num_gpu_blocks: 1001,
        kv_pool_scale: 0.8,
        ..EngineArgs::default()
    };
    Corrections {
        kv_pool_scale: 0.5,
        ..c
    }
    .apply_to(&mut e);
    assert_eq!((e.kv_pool_scale, e.num_gpu_blocks), (0.4, 1001));
    assert_eq!(e.kv_pool_blocks(), 400);
    // Multi-token prediction holds decode_speedup_ratio at 1: the decode step's share of the
    // correction (0.8 / 1.25) multiplies decode_time_scale instead, times the same.
    let mut e = EngineArgs {
        mtp: Some(crate::config::Mtp {
            nextn: 2,
            accept_rates: vec![0.85, 0.3],
            seed: 42,
        }),
        decode_time_scale: 2.0,
        ..EngineArgs::default()
    };
    c.apply_to(&mut e);
    assert!((1.0 / e.speedup_ratio - 1.25).abs() < 1e-12);
    assert_eq!(e.decode_speedup_ratio, 1.0);
    assert!((e.decode_time_scale / e.speedup_ratio - 2.0 * 0.8).abs() < 1e-12);
}

#[test]
fn pools_without_aic_timing_stay_uncalibrated() {
    let f = sample();
    let mut e = EngineArgs::default();
    let before = e.clone();
    assert_eq!(f.apply(&mut e), Applied::NoAicTiming);
    assert_eq!(e, before);
    assert_eq!(
        notes(&[Applied::NoAicTiming, Applied::NoAicTiming]),
        ["uncalibrated: no AIC timing (the family is AIC's system, backend and model)"]
    );
    assert_eq!(
        Applied::Calibrated(family(), f.families[0].corrections()).describe(),
        "h200_sxm vllm meta-llama/Meta-Llama-3.1-70B: prefill time x1.18, decode time x0.97"
    );
    assert_eq!(
        Applied::Absent(family()).describe(),
        "uncalibrated: no calibration for h200_sxm vllm meta-llama/Meta-Llama-3.1-70B in the file"
    );
}

#[test]
fn an_entry_of_the_pools_shape_wins_over_the_familys() {
    let mut f = sample();
    let narrow = Family {
        parallelism: Some("tp4".into()),
        ..family()
    };
    let c = Corrections {
        prefill_scale: 2.0,
        decode_scale: 3.0,
        request_overhead_ms: 40.0,
        prefill_pass_overhead_ms: 0.0,
        decode_pass_overhead_ms: 0.0,
        kv_pool_scale: 1.0,
    };
    f.families
        .push(FamilyCalibration::new(narrow.clone(), c, None));
    let text = f.to_json();
    assert!(text.contains("\"parallelism\": \"tp4\""), "{text}");
    let back = CalibrationFile::parse(&text).unwrap();
    assert_eq!(back, f);
    // TP 4 takes its own entry; TP 2 and a query without a shape take the family's.
    assert_eq!(back.get(&narrow).unwrap().corrections(), c);
    let tp2 = Family {
        parallelism: Some("tp2".into()),
        ..family()
    };
    assert_eq!(back.get(&tp2).unwrap().prefill_scale, 1.18);
    assert_eq!(back.get(&family()).unwrap().prefill_scale, 1.18);
    // The same shape twice is refused.
    let mut twice = back.clone();
    twice
        .families
        .push(FamilyCalibration::new(narrow.clone(), c, None));
    let e = CalibrationFile::parse(&twice.to_json())
        .unwrap_err()
        .to_string();
    assert!(e.contains("repeats the family"), "{e}");
}

/// An entry for one release of the serving engine applies to pools naming that release
/// (`server_version`), with their quantisation's and shape's entries of that release first;
/// pools of another release or none take the family's.
#[test]
fn an_entry_of_the_pools_release_wins_over_the_familys() {
    let mut f = sample();
    let release = |v: &str| Family {
        server_version: Some(v.into()),
        ..family()
    };
    let c = Corrections {
        prefill_scale: 2.0,
        ..Corrections::NONE
    };
    f.families
        .push(FamilyCalibration::new(release("0.17.0"), c, None));
    let text = f.to_json();
    assert!(text.contains("\"server_version\": \"0.17.0\""), "{text}");
    let back = CalibrationFile::parse(&text).unwrap();
    assert_eq!(back, f);
    let pool = |v: Option<&str>| Family {
        server_version: v.map(str::to_string),
        decoding: Some("plain".into()),
        quantisation: Some("fp8".into()),
        parallelism: Some("tp2".into()),
        ..family()
    };
    assert_eq!(back.get(&pool(Some("0.17.0"))).unwrap().prefill_scale, 2.0);
    assert_eq!(back.get(&pool(Some("0.19.0"))).unwrap().prefill_scale, 1.18);
    assert_eq!(back.get(&pool(None)).unwrap().prefill_scale, 1.18);
    assert_eq!(
        release("0.17.0").to_string(),
        "h200_sxm vllm meta-llama/Meta-Llama-3.1-70B v0.17.0"
    );
    assert_eq!(
        release("nightly-dev").to_string(),
        "h200_sxm vllm meta-llama/Meta-Llama-3.1-70B nightly-dev"
    );
}

/// An entry of [`family`] narrowed by the labels given, with prefill scale `scale`.
fn narrowed_entry(
    d: Option<&str>,
    q: Option<&str>,
    p: Option<&str>,
    scale: f64,
) -> FamilyCalibration {
    let fam = Family {
        decoding: d.map(str::to_string),
        quantisation: q.map(str::to_string),
        parallelism: p.map(str::to_string),
        ..family()
    };
    let c = Corrections {
        prefill_scale: scale,
        ..Corrections::NONE
    };
    FamilyCalibration::new(fam, c, None)
}

#[test]
fn a_decoding_mode_narrows_before_a_quantisation_or_shape() {
    let mut f = sample();
    f.families
        .push(narrowed_entry(Some("mtp3"), None, None, 2.0));
    f.families
        .push(narrowed_entry(Some("mtp3"), Some("nvfp4"), None, 3.0));
    f.families
        .push(narrowed_entry(None, Some("nvfp4"), Some("tp4"), 4.0));
    f.families
        .push(narrowed_entry(Some("plain"), None, Some("tp4"), 5.0));
    let text = f.to_json();
    assert!(text.contains("\"decoding\": \"mtp3\""), "{text}");
    let back = CalibrationFile::parse(&text).unwrap();
    assert_eq!(back, f);
    let scale = |d: &str, q: &str, p: &str| {
        let pool = Family {
            decoding: Some(d.to_string()),
            quantisation: Some(q.to_string()),
            parallelism: Some(p.to_string()),
            ..family()
        };
        back.get(&pool).unwrap().prefill_scale
    };
    assert_eq!(scale("mtp3", "nvfp4", "tp4"), 3.0); // decoding and quantisation first
    assert_eq!(scale("mtp3", "fp8", "tp4"), 2.0); // its decoding before quantisation and shape
    assert_eq!(scale("plain", "nvfp4", "tp4"), 5.0); // decoding and shape
    assert_eq!(scale("mtp1", "nvfp4", "tp4"), 4.0); // quantisation and shape
    assert_eq!(scale("mtp1", "fp8", "tp8"), 1.18); // the family
    assert_eq!(
        back.families[1].family().to_string(),
        "h200_sxm vllm meta-llama/Meta-Llama-3.1-70B mtp3"
    );
    assert_eq!(
        back.families[2].family().to_string(),
        "h200_sxm vllm meta-llama/Meta-Llama-3.1-70B mtp3 nvfp4"
    );
    // Every narrowing once, most specific first; labels a pool lacks drop out.
    let some = |x: &str| Some(x.to_string());
    let pool =
        |d: Option<String>, v: Option<String>, q: Option<String>, p: Option<String>| Family {
            decoding: d,
            server_version: v,
            quantisation: q,
            parallelism: p,
            ..family()
        };
    let all = pool(some("mtp3"), some("0.17.0"), some("fp8"), some("tp4"));
    assert_eq!(all.fallbacks().len(), 16);
    assert_eq!(all.fallbacks()[0], all);
    assert_eq!(all.fallbacks()[15], family());
    let fp8_tp4 = pool(None, None, some("fp8"), some("tp4"));
    assert_eq!(
        fp8_tp4.fallbacks(),
        vec![
            fp8_tp4.clone(),
            pool(None, None, some("fp8"), None),
            pool(None, None, None, some("tp4")),
            family(),
        ]
    );
    // Entries of the pool's release come before any without one, the release alone before the
    // mode, quantisation and shape of entries fitted on other releases' rows.
    let v = pool(some("plain"), some("0.17.0"), some("fp8"), some("tp4"));
    let order: Vec<String> = v.fallbacks().iter().map(|f| f.to_string()).collect();
    let at = |s: &str| order.iter().position(|x| x.ends_with(s)).unwrap();
    assert!(at("plain v0.17.0 fp8") < at("plain v0.17.0 tp4"));
    assert!(at("plain v0.17.0 tp4") < at("Llama-3.1-70B v0.17.0 fp8 tp4"));
    assert!(at("Llama-3.1-70B v0.17.0") < at("plain fp8 tp4"));
    assert!(at("plain fp8 tp4") < at("plain fp8"));
    assert_eq!(order.len(), 16);
    assert_eq!(decoding_label(None), "plain");
    assert_eq!(decoding_label(Some(3)), "mtp3");
}

#[test]
fn the_most_specific_entry_wins_quantisation_first() {
    let mut f = sample();
    let entry = |q: Option<&str>, p: Option<&str>, scale: f64| narrowed_entry(None, q, p, scale);
    f.families.push(entry(Some("nvfp4"), None, 2.0));
    f.families.push(entry(None, Some("tp4"), 3.0));
    f.families.push(entry(Some("nvfp4"), Some("tp4"), 4.0));
    let text = f.to_json();
    assert!(text.contains("\"quantisation\": \"nvfp4\""), "{text}");
    let back = CalibrationFile::parse(&text).unwrap();
    assert_eq!(back, f);
    let scale = |q: &str, p: &str| {
        let pool = Family {
            quantisation: Some(q.to_string()),
            parallelism: Some(p.to_string()),
            ..family()
        };
        back.get(&pool).unwrap().prefill_scale
    };
    assert_eq!(scale("nvfp4", "tp4"), 4.0); // its quantisation and shape
    assert_eq!(scale("nvfp4", "tp8"), 2.0); // its quantisation before a shape
    assert_eq!(scale("fp8", "tp4"), 3.0); // its shape
    assert_eq!(scale("fp8", "tp8"), 1.18); // the family
                                           // Named with both in notes; the same quantisation and shape twice is refused.
    let both = back.families.last().unwrap().family();
    assert_eq!(
        both.to_string(),
        "h200_sxm vllm meta-llama/Meta-Llama-3.1-70B nvfp4 tp4"
    );
    let mut twice = back.clone();
    twice.families.push(entry(Some("nvfp4"), Some("tp4"), 5.0));
    let e = CalibrationFile::parse(&twice.to_json())
        .unwrap_err()
        .to_string();
    assert!(e.contains("repeats the family"), "{e}");
}

#[test]
fn quantisation_labels() {
    assert_eq!(quantisation_label(Some("fp8"), Some("fp8")), "fp8");
    assert_eq!(quantisation_label(Some("nvfp4"), None), "nvfp4");
    assert_eq!(
        quantisation_label(Some("fp8"), Some("fp8_block")),
        "fp8-moe-fp8_block"
    );
    assert_eq!(
        quantisation_label(None, Some("int4_wo")),
        "default-moe-int4_wo"
    );
    assert_eq!(quantisation_label(None, None), "default");
}

#[test]
fn shape_labels() {
    assert_eq!(parallelism_label(4, 1, None), "tp4");
    assert_eq!(parallelism_label(4, 1, Some(1)), "tp4");
    assert_eq!(parallelism_label(8, 1, Some(8)), "tp8-ep8");
    assert_eq!(parallelism_label(4, 4, Some(16)), "tp4-dp4-ep16");
}

#[test]
fn rows_left_far_off_after_fitting_are_named_worst_first() {
    use super::fit::{unmatched, Target};
    let ids: Vec<String> = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let t = |ttft_ms, tpot_ms| Target { ttft_ms, tpot_ms };
    let targets = [
        t(100.0, 10.0),
        t(100.0, 10.0),
        t(100.0, 10.0),
        t(100.0, 10.0),
        t(100.0, 10.0),
    ];
    let preds = vec![
        Ok((140.0, 10.0)),         // a: 40 % off, within the bound
        Ok((20.0, 10.0)),          // b: TTFT -80 %
        Ok((100.0, 35.0)),         // c: TPOT +250 %
        Err("failed".to_string()), // d: not simulated, not judged
        Ok((160.0, 16.0)),         // e: +60 % both
    ];
    let rows: Vec<usize> = (0..5).collect();
    let got = unmatched(&ids, &targets, &rows, &preds, 5);
    let names: Vec<&str> = got.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(names, ["c", "e", "b"]);
    assert!((got[0].tpot_error_pct - 250.0).abs() < 1e-9);
    assert!((got[2].ttft_error_pct + 80.0).abs() < 1e-9);
    assert_eq!(unmatched(&ids, &targets, &rows, &preds, 1).len(), 1);
    // The console names them under the family's line.
    let text = super::command::render(&sample());
    assert!(
        text.contains("fitted, still over 50% off (worst first): b (TTFT -64%, TPOT +12%)"),
        "{text}"
    );
}

#[test]
fn the_console_says_when_rows_repeat_a_point() {
    let mut file = sample();
    assert!(!super::command::render(&file).contains("distinct points"));
    let fit = file.families[0].fit.as_mut().unwrap();
    // Three simulated rows measure two points: one row repeats another's.
    fit.rows = vec!["a".into(), "b".into(), "b2".into(), "c".into()];
    fit.cross_validated.as_mut().unwrap().points = Some(2);
    let text = super::command::render(&file);
    assert!(
        text.contains(
            "cross-validated over 2 distinct points: 1 of the 3 rows repeat another row's \
             point and are held out with it"
        ),
        "{text}"
    );
    // Files written before repeats were grouped have no count, and read as before.
    let mut json: serde_json::Value = serde_json::from_str(&file.to_json()).unwrap();
    let cv = &mut json["families"][0]["fit"]["cross_validated"];
    assert_eq!(cv["points"], 2);
    cv.as_object_mut().unwrap().remove("points");
    let old = CalibrationFile::parse(&json.to_string()).unwrap();
    let cv = old.families[0]
        .fit
        .as_ref()
        .unwrap()
        .cross_validated
        .as_ref();
    assert_eq!(cv.unwrap().points, None);
}
