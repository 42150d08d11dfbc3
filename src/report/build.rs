//! Builds the flat JSON report (spec §8.2) from the completed requests, the pooled token gaps and
//! the run totals, with DynoSim's key names and int/float types.

use super::gaps::TokenGaps;
use super::stats::{exact_summary, Summary};
use super::{CompletedRequest, Report, RunTotals};

fn put_summary(report: &mut Report, metric: &str, s: &Summary) {
    for (prefix, v) in s.entries() {
        report.set_float(&format!("{prefix}_{metric}"), v);
    }
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Whether a completed request meets every SLA bound that is set (spec §8.3).
pub fn meets_sla(r: &CompletedRequest, sla: &crate::config::Sla) -> bool {
    let ttft = (r.first_token_ms - r.arrival_ms).max(0.0);
    let e2e = (r.last_token_ms - r.arrival_ms).max(0.0);
    if sla.ttft_ms.is_some_and(|b| ttft > b) {
        return false;
    }
    if sla.e2e_ms.is_some_and(|b| e2e > b) {
        return false;
    }
    if let Some(b) = sla.itl_ms {
        if r.output_tokens > 1 && (e2e - ttft) / f64::from(r.output_tokens - 1) > b {
            return false;
        }
    }
    true
}

/// Where every arrival ended up (dynosim's keys; DynoSim's keep their values): arrived =
/// completed + rejected + unfinished; `finished_without_output_requests`, present only when
/// there are any, counts the completed requests that had no token to emit.
fn set_accounting(r: &mut Report, totals: &RunTotals) {
    r.set_int("arrived_requests", to_i64(totals.num_requests));
    r.set_int("rejected_requests", to_i64(totals.rejected_requests));
    r.set_int("unfinished_requests", to_i64(totals.unfinished_requests));
    r.set_int(
        "unfinished_waiting_requests",
        to_i64(totals.unfinished_waiting_requests),
    );
    if totals.finished_without_output_requests > 0 {
        r.set_int(
            "finished_without_output_requests",
            to_i64(totals.finished_without_output_requests),
        );
    }
}

/// The report of one run. `completed` holds only requests that completed (rejected and unfinished
/// ones are counted in `totals.num_requests` alone); `gaps` the pooled per-token gaps of them.
pub fn build_report(
    completed: &[CompletedRequest],
    gaps: &TokenGaps,
    totals: &RunTotals,
) -> Report {
    let mut r = Report::default();
    let n = completed.len();

    let total_in: u64 = completed.iter().map(|c| u64::from(c.input_tokens)).sum();
    let total_out: u64 = completed.iter().map(|c| u64::from(c.output_tokens)).sum();
    let reused: u64 = completed.iter().map(|c| u64::from(c.reused_tokens)).sum();
    let first_reused: u64 = completed
        .iter()
        .map(|c| u64::from(c.first_admission_reused_tokens))
        .sum();
    let duration_ms = completed
        .iter()
        .map(|c| c.last_token_ms)
        .fold(0.0f64, f64::max);
    let duration_s = (duration_ms / 1000.0).max(1e-9);

    // The requests that emitted a token: the latency distributions and goodput are theirs.
    let with_tokens = || completed.iter().filter(|c| c.output_tokens > 0);

    r.set_int("num_requests", to_i64(totals.num_requests));
    r.set_int("completed_requests", n as i64);
    set_accounting(&mut r, totals);
    r.set_int("total_input_tokens", to_i64(total_in));
    r.set_int("total_output_tokens", to_i64(total_out));
    r.set_float("duration_ms", duration_ms);
    r.set_float("wall_time_ms", totals.wall_time_ms);

    r.set_float("request_throughput_rps", n as f64 / duration_s);
    r.set_float("input_throughput_tok_s", total_in as f64 / duration_s);
    r.set_float("output_throughput_tok_s", total_out as f64 / duration_s);
    r.set_float(
        "total_throughput_tok_s",
        (total_in + total_out) as f64 / duration_s,
    );

    // Static worker pools: every worker is up for the whole run.
    let span_s = totals.worker_span_ms.map_or(duration_s, |ms| ms / 1000.0);
    let prefill_ws = f64::from(totals.num_prefill_workers) * span_s;
    let decode_ws = f64::from(totals.num_decode_workers) * span_s;
    r.set_float("prefill_worker_seconds", prefill_ws);
    r.set_float("decode_worker_seconds", decode_ws);
    r.set_int(
        "prefill_gpus_per_worker",
        i64::from(totals.prefill_gpus_per_worker),
    );
    r.set_int(
        "decode_gpus_per_worker",
        i64::from(totals.decode_gpus_per_worker),
    );
    r.set_float(
        "gpu_hours",
        (prefill_ws * f64::from(totals.prefill_gpus_per_worker)
            + decode_ws * f64::from(totals.decode_gpus_per_worker))
            / 3600.0,
    );

    if totals.sla.is_set() {
        let (good, good_out) = with_tokens()
            .filter(|c| meets_sla(c, &totals.sla))
            .fold((0u64, 0u64), |(k, o), c| {
                (k + 1, o + u64::from(c.output_tokens))
            });
        r.set_int("goodput_completed_requests", to_i64(good));
        r.set_float("goodput_request_throughput_rps", good as f64 / duration_s);
        r.set_float(
            "goodput_output_throughput_tok_s",
            good_out as f64 / duration_s,
        );
    }

    let processed = total_in + total_out;
    r.set_int("processed_tokens", to_i64(processed));
    let wall_ms = totals.wall_time_ms;
    let per_wall = |x: u64| {
        if wall_ms > 0.0 {
            x as f64 * 1000.0 / wall_ms
        } else {
            0.0
        }
    };
    r.set_float("processed_tokens_per_s", per_wall(processed));
    r.set_float("processed_output_tokens_per_s", per_wall(total_out));

    let ratio = |x: u64| {
        if total_in > 0 {
            x as f64 / total_in as f64
        } else {
            0.0
        }
    };
    r.set_float("prefix_cache_reused_ratio", ratio(reused));
    r.set_float(
        "first_admission_prefix_cache_reused_ratio",
        ratio(first_reused),
    );

    // Exact per-request distributions; one scratch buffer reused for all four.
    let mut buf: Vec<f64> = Vec::with_capacity(n);
    buf.extend(with_tokens().map(|c| (c.first_token_ms - c.arrival_ms).max(0.0)));
    put_summary(&mut r, "ttft_ms", &exact_summary(&mut buf));

    buf.clear();
    buf.extend(
        completed
            .iter()
            .filter_map(|c| c.second_token_ms.map(|s| s - c.first_token_ms)),
    );
    put_summary(&mut r, "ttst_ms", &exact_summary(&mut buf));

    buf.clear();
    buf.extend(
        completed
            .iter()
            .filter(|c| c.output_tokens >= 2)
            .map(|c| (c.last_token_ms - c.first_token_ms) / f64::from(c.output_tokens - 1)),
    );
    put_summary(&mut r, "tpot_ms", &exact_summary(&mut buf));

    buf.clear();
    buf.extend(with_tokens().map(|c| (c.last_token_ms - c.arrival_ms).max(0.0)));
    put_summary(&mut r, "e2e_latency_ms", &exact_summary(&mut buf));

    put_summary(&mut r, "itl_ms", &gaps.itl_summary());
    put_summary(
        &mut r,
        "output_token_throughput_per_user",
        &gaps.per_user_throughput_summary(),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Sla;
    use crate::report::Value;

    fn data(rel: &str) -> String {
        let p = format!("{}/tests/data/reference/{rel}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("reading {p}: {e}"))
    }

    fn ref_report(rel: &str) -> Report {
        Report::from_json_str(&data(rel)).expect("reference report parses")
    }

    fn agg_totals(num_requests: u64, workers: u32) -> RunTotals {
        RunTotals {
            num_requests,
            wall_time_ms: 12.5,
            num_prefill_workers: 0,
            num_decode_workers: workers,
            prefill_gpus_per_worker: 0,
            decode_gpus_per_worker: 1,
            sla: Sla::default(),
            worker_span_ms: None,
            ..RunTotals::default()
        }
    }

    /// DynoSim's keys of a report and whether each is an integer (dynosim's own keys left out).
    fn key_types(r: &Report) -> Vec<(String, bool)> {
        r.fields
            .iter()
            .filter(|(k, _)| !crate::report::accounting::OWN_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), matches!(v, Value::Int(_))))
            .collect()
    }

    fn sample_request() -> CompletedRequest {
        CompletedRequest {
            arrival_ms: 0.0,
            first_token_ms: 10.0,
            second_token_ms: Some(11.0),
            last_token_ms: 110.0,
            input_tokens: 100,
            output_tokens: 4,
            reused_tokens: 25,
            first_admission_reused_tokens: 20,
        }
    }

    #[test]
    fn itl_golden_example() {
        // Upstream test: tokens at 10, 11, 12, 110 ms.
        let req = sample_request();
        let mut gaps = TokenGaps::new();
        gaps.add(1.0, 2);
        gaps.add(98.0, 1);
        let r = build_report(&[req], &gaps, &agg_totals(1, 1));
        assert!((r.get("mean_tpot_ms").unwrap() - 100.0 / 3.0).abs() < 1e-12);
        assert_eq!(format!("{:.2}", r.get("mean_tpot_ms").unwrap()), "33.33");
        assert_eq!(r.get("max_itl_ms"), Some(98.0));
        assert_eq!(r.get("min_itl_ms"), Some(1.0));
        assert!((r.get("mean_itl_ms").unwrap() - 100.0 / 3.0).abs() < 1e-12);
        assert_eq!(r.get("mean_ttst_ms"), Some(1.0));
        assert_eq!(
            r.get("min_output_token_throughput_per_user"),
            Some(1000.0 / 98.0)
        );
        assert_eq!(r.get("max_output_token_throughput_per_user"), Some(1000.0));
        assert_eq!(r.get("mean_ttft_ms"), Some(10.0));
        assert_eq!(r.get("mean_e2e_latency_ms"), Some(110.0));
        assert_eq!(r.get("duration_ms"), Some(110.0));
        assert_eq!(r.get("prefix_cache_reused_ratio"), Some(0.25));
        assert_eq!(
            r.get("first_admission_prefix_cache_reused_ratio"),
            Some(0.2)
        );
    }

    #[test]
    fn key_set_and_types_match_reference_agg_and_disagg() {
        let gaps = TokenGaps::new();
        let agg = build_report(&[sample_request()], &gaps, &agg_totals(3, 2));
        assert_eq!(key_types(&agg), key_types(&ref_report("V3.json")));
        let disagg = RunTotals {
            num_prefill_workers: 2,
            prefill_gpus_per_worker: 1,
            ..agg_totals(1, 2)
        };
        let d = build_report(&[sample_request()], &gaps, &disagg);
        assert_eq!(key_types(&d), key_types(&ref_report("V5.json")));
        assert_eq!(d.get("prefill_worker_seconds"), Some(0.22));
        assert_eq!(d.get("gpu_hours"), Some(0.44 / 3600.0));
        // Empty run: same keys, zeros, no division by zero.
        let e = build_report(&[], &gaps, &agg_totals(0, 1));
        assert_eq!(key_types(&e), key_types(&ref_report("V3.json")));
        assert_eq!(e.get("duration_ms"), Some(0.0));
        assert_eq!(e.get("request_throughput_rps"), Some(0.0));
        assert_eq!(e.get("p99_ttft_ms"), Some(0.0));
        let zero_wall = RunTotals {
            wall_time_ms: 0.0,
            ..agg_totals(1, 1)
        };
        let z = build_report(&[sample_request()], &gaps, &zero_wall);
        assert_eq!(z.get("processed_tokens_per_s"), Some(0.0));
        assert_eq!(z.get("processed_tokens"), Some(104.0));
    }

    #[test]
    fn goodput_keys_and_classification() {
        let mk = |arrival: f64, first: f64, last: f64, out: u32| CompletedRequest {
            arrival_ms: arrival,
            first_token_ms: first,
            second_token_ms: (out >= 2).then_some(first + 1.0),
            last_token_ms: last,
            input_tokens: 10,
            output_tokens: out,
            ..CompletedRequest::default()
        };
        let reqs = [
            mk(0.0, 50.0, 150.0, 11),    // ttft 50, itl 10, e2e 150
            mk(0.0, 80.0, 180.0, 11),    // ttft 80 (too slow for ttft 60)
            mk(0.0, 20.0, 520.0, 11),    // itl 50 (too slow for itl 20)
            mk(0.0, 30.0, 30.0, 1),      // single token: itl bound skipped
            mk(500.0, 560.0, 2000.0, 2), // ttft 60 (bound is inclusive), itl 1440
        ];
        let mut totals = agg_totals(6, 1);
        let plain = build_report(&reqs, &TokenGaps::new(), &totals);
        assert!(plain.fields.keys().all(|k| !k.starts_with("goodput")));

        totals.sla = Sla {
            ttft_ms: Some(60.0),
            itl_ms: Some(20.0),
            e2e_ms: None,
        };
        let r = build_report(&reqs, &TokenGaps::new(), &totals);
        assert_eq!(
            r.fields.get("goodput_completed_requests"),
            Some(&Value::Int(2))
        );
        assert_eq!(r.get("goodput_request_throughput_rps"), Some(1.0)); // 2 / 2 s
        assert_eq!(r.get("goodput_output_throughput_tok_s"), Some(6.0)); // (11 + 1) / 2 s

        totals.sla = Sla {
            ttft_ms: None,
            itl_ms: None,
            e2e_ms: Some(180.0),
        };
        let r = build_report(&reqs, &TokenGaps::new(), &totals);
        assert_eq!(r.get("goodput_completed_requests"), Some(3.0));
        assert!(meets_sla(&reqs[4], &Sla::default()));
    }

    /// One parsed line of a trimmed reference `--report-jsonl`.
    fn load_requests(rel: &str) -> (Vec<CompletedRequest>, TokenGaps, u64, bool) {
        let mut out = Vec::new();
        let mut gaps = TokenGaps::new();
        let mut total = 0u64;
        let mut gaps_known = true;
        for line in data(rel).lines().filter(|l| !l.trim().is_empty()) {
            total += 1;
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            if v["terminal_status"] != "completed" {
                continue;
            }
            let f = |k: &str| v[k].as_f64().unwrap();
            let u = |k: &str| v[k].as_u64().unwrap() as u32;
            let first = f("first_token_ms");
            let last = f("last_token_ms");
            let ttst = v["ttst_ms"].as_f64();
            let n_out = u("output_length");
            match (n_out, ttst) {
                (0 | 1, _) => {}
                (2, _) => gaps.add(last - first, 1),
                (3, Some(t)) => {
                    gaps.add(t, 1);
                    gaps.add(last - first - t, 1);
                }
                _ => gaps_known = false,
            }
            out.push(CompletedRequest {
                arrival_ms: f("arrival_time_ms"),
                first_token_ms: first,
                second_token_ms: ttst.map(|t| first + t),
                last_token_ms: last,
                input_tokens: u("input_length"),
                output_tokens: n_out,
                reused_tokens: u("reused_input_tokens"),
                first_admission_reused_tokens: u("reused_input_tokens"),
            });
        }
        (out, gaps, total, gaps_known)
    }

    /// Rebuilds a reference report from its per-request output and compares every key.
    fn check_run(name: &str, workers: u32, sla: Sla) {
        let reference = ref_report(&format!("runs/{name}.report.json"));
        let (reqs, gaps, total, gaps_known) = load_requests(&format!("runs/{name}.requests.jsonl"));
        let totals = RunTotals {
            num_requests: total,
            wall_time_ms: reference.get("wall_time_ms").unwrap(),
            sla,
            ..agg_totals(total, workers)
        };
        let ours = build_report(&reqs, &gaps, &totals);
        assert_eq!(key_types(&ours), key_types(&reference), "{name}: key set");
        for (k, want) in &reference.fields {
            if !gaps_known && (k.ends_with("_itl_ms") || k.ends_with("_per_user")) {
                continue;
            }
            let got = ours.fields[k];
            match (got, *want) {
                (Value::Int(a), Value::Int(b)) => assert_eq!(a, b, "{name}: {k}"),
                (a, b) => {
                    let (a, b) = (a.as_f64(), b.as_f64());
                    // Welford vs. summation order and second_token = first + ttst: ulps only.
                    assert!(
                        (a - b).abs() <= 1e-11 * b.abs().max(1.0),
                        "{name}: {k}: ours {a:?} reference {b:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn reproduces_reference_runs() {
        check_run(
            "t1",
            1,
            Sla {
                e2e_ms: Some(40.0),
                ..Sla::default()
            },
        );
        check_run("t2", 2, Sla::default());
        check_run(
            "t3",
            3,
            Sla {
                ttft_ms: Some(60.0),
                itl_ms: Some(20.0),
                e2e_ms: None,
            },
        );
        check_run("t6", 1, Sla::default());
    }
}
