//! Whether a simulated point really served its load, read from its report: the window-based
//! throughputs of a capped run (`*_window`), the verdict `overloaded` (queue still growing when
//! the window ends) or `stalled` (a worker that can never move its queue on), and the note on
//! percentiles resting on few requests.
//!
//! Pure functions of a point's report and configuration, so a resumed or merged sweep reaches
//! the same verdict as the run that simulated the point. DynoSim's report keys keep their
//! meaning: this module only adds keys (`*_window`) and never changes one.

use serde_json::{Map, Value};

/// A point whose report holds fewer completed requests than this gets a note: its percentiles
/// (p99 above all) rest on too few requests to compare deployments by.
pub const FEW_REQUESTS: u64 = 100;

pub use super::record::{RATE_KEYS, WINDOW_SUFFIX};

/// A key of the report (absent or not a number: `None`).
fn num(report: &Map<String, Value>, key: &str) -> Option<f64> {
    report.get(key).and_then(Value::as_f64)
}

/// A count of the report (absent: 0).
fn count(report: &Map<String, Value>, key: &str) -> u64 {
    num(report, key).map_or(0, |v| v.max(0.0) as u64)
}

/// Requests that arrived: dynosim's `arrived_requests`, else DynoSim's `num_requests` (every
/// arrival, rejected and unfinished ones included).
fn arrived(report: &Map<String, Value>) -> u64 {
    num(report, "arrived_requests")
        .or_else(|| num(report, "num_requests"))
        .map_or(0, |v| v.max(0.0) as u64)
}

/// Requests that arrived and neither completed nor were rejected when the run ended:
/// `unfinished_requests` when the report has it, else arrived − completed (an upper bound).
fn unfinished(report: &Map<String, Value>) -> u64 {
    match num(report, "unfinished_requests") {
        Some(u) => u.max(0.0) as u64,
        None => arrived(report).saturating_sub(count(report, "completed_requests")),
    }
}

/// Adds `<key>_window` for every rate of [`RATE_KEYS`] the report has, for a run capped at
/// `cap_ms`: the same numerator over the window. The window is the cap when the cap ended the
/// run (requests of the workload never arrived or were left unfinished); when the whole
/// workload was served before the cap, it is the run's duration and the window rates equal
/// DynoSim's. Uncapped runs get nothing (their rates already cover the whole run).
pub fn add_window_rates(
    report: &mut Map<String, Value>,
    cap_ms: Option<f64>,
    workload_requests: usize,
) {
    let Some(cap_ms) = cap_ms.filter(|c| *c > 0.0) else {
        return;
    };
    let Some(duration_ms) = num(report, "duration_ms") else {
        return;
    };
    let cut = arrived(report) < workload_requests as u64 || unfinished(report) > 0;
    let window_ms = if cut { cap_ms } else { duration_ms };
    // DynoSim's rates are numerator / max(duration, 1 ns): scale them to the window.
    let duration_s = (duration_ms / 1000.0).max(1e-9);
    let window_s = (window_ms / 1000.0).max(1e-9);
    for key in RATE_KEYS {
        if let Some(rate) = num(report, key) {
            report.insert(
                format!("{key}{WINDOW_SUFFIX}"),
                Value::from(rate * duration_s / window_s),
            );
        }
    }
}

/// The most requests the deployment can hold in flight: Σ workers × `dp_size` ×
/// `max_num_seqs` over its pools (`None` when a pool has no `max_num_seqs` limit, or the
/// configuration cannot be read).
pub fn in_flight_capacity(configuration: &Value) -> Option<u64> {
    let topology = configuration.get("topology")?;
    let pool = |workers: &Value, engine: &Value| -> Option<u64> {
        let n = workers.as_u64()?;
        let dp = engine.get("dp_size").and_then(Value::as_u64).unwrap_or(1);
        let seqs = engine.get("max_num_seqs")?.as_u64()?;
        Some(n * dp.max(1) * seqs)
    };
    if let Some(a) = topology.get("Aggregated") {
        return pool(a.get("num_workers")?, a.get("engine")?);
    }
    let d = topology.get("Disaggregated")?;
    Some(
        pool(d.get("num_prefill_workers")?, d.get("prefill")?)?
            + pool(d.get("num_decode_workers")?, d.get("decode")?)?,
    )
}

/// `completed of arrived arrived requests completed, unfinished unfinished`.
fn counts_text(report: &Map<String, Value>) -> String {
    let arrived = arrived(report);
    let completed = count(report, "completed_requests");
    let mut s = format!("{completed} of {arrived} arrived requests completed");
    let unfinished = unfinished(report);
    if unfinished > 0 {
        s.push_str(&format!(", {unfinished} unfinished"));
    }
    let rejected = count(report, "rejected_requests");
    if rejected > 0 {
        s.push_str(&format!(", {rejected} rejected"));
    }
    s
}

/// Whether the point did not serve its load, and why (with the counts):
///
/// - `Stalled`: the report has a `stall` record (a worker whose queued requests can never be
///   scheduled, found before the time cap ended the run);
/// - `Overloaded`: the window ended with its queue still growing, that is more requests waiting
///   for admission than in flight (at least 10 of them). The waiting and in-flight counts are the
///   report's (`unfinished_waiting_requests`); a report without them has at least
///   unfinished − capacity requests waiting and at most the deployment's in-flight capacity
///   ([`in_flight_capacity`]) in flight, and is judged on those bounds.
///
/// `None`: it served its load (every uncapped run that ends without an error does).
pub fn verdict(
    report: &Map<String, Value>,
    configuration: Option<&Value>,
) -> Option<(super::record::Status, String)> {
    use super::record::Status;
    // HOOK (issue 22 §1, the accounting branch): the report's `stall` record.
    if let Some(stall) = report.get("stall").filter(|s| s.is_object()) {
        let field = |k: &str| stall.get(k).map(value_text).unwrap_or_else(|| "?".into());
        let since_s = stall
            .get("since_ms")
            .and_then(Value::as_f64)
            .map_or("?".into(), |ms| format!("{:.1}", ms / 1000.0));
        return Some((
            Status::Stalled,
            format!(
                "stalled: {} worker {} cannot make progress since t={since_s} s ({} request(s) \
                 queued on it; cause: {}); {}",
                field("role"),
                field("worker"),
                field("queued_requests"),
                field("cause"),
                counts_text(report)
            ),
        ));
    }
    let unfinished = unfinished(report);
    if unfinished == 0 {
        return None;
    }
    let (waiting, in_flight, how) = match num(report, "unfinished_waiting_requests") {
        Some(w) => {
            let w = (w.max(0.0) as u64).min(unfinished);
            (w, unfinished - w, "in flight")
        }
        None => {
            let cap = configuration.and_then(in_flight_capacity)?;
            (unfinished.saturating_sub(cap), cap, "at most in flight")
        }
    };
    const MIN_WAITING: u64 = 10;
    if waiting <= in_flight || waiting < MIN_WAITING {
        return None;
    }
    Some((
        Status::Overloaded,
        format!(
            "overloaded: queue still growing when the window ended ({waiting} requests waiting, \
             {in_flight} {how}); {}",
            counts_text(report)
        ),
    ))
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The note of a point whose percentiles rest on fewer than [`FEW_REQUESTS`] completed
/// requests; `None` otherwise (or without a report).
pub fn few_requests_note(report: Option<&Map<String, Value>>) -> Option<String> {
    let completed = count(report?, "completed_requests");
    (completed < FEW_REQUESTS).then(|| {
        format!(
            "{FEW_REQUESTS_PREFIX} percentiles rest on {completed} completed requests (< \
             {FEW_REQUESTS})"
        )
    })
}

/// Whether a reason carries a warning about an `ok` point (the few-requests note), which the
/// console and leaderboard.md show under `ok` rows too.
pub fn warns(reason: &str) -> bool {
    reason.contains(FEW_REQUESTS_PREFIX)
}

const FEW_REQUESTS_PREFIX: &str = "few requests:";

/// The sweep's warnings on stderr about what it ranked: points that did not serve their load
/// (ranked after every point that did), and points whose percentiles rest on few requests.
pub fn console_warnings(records: &[super::record::PointRecord]) -> Vec<String> {
    use super::record::Status;
    let ids = |f: &dyn Fn(&super::record::PointRecord) -> bool| -> Vec<String> {
        let mut ids: Vec<u64> = records.iter().filter(|r| f(r)).map(|r| r.point).collect();
        ids.sort_unstable();
        let n = ids.len();
        let mut shown: Vec<String> = ids.iter().take(10).map(u64::to_string).collect();
        if n > 10 {
            shown.push(format!("… ({n} in all)"));
        }
        shown
    };
    let mut out = Vec::new();
    let unserved = ids(&|r| matches!(r.status, Status::Overloaded | Status::Stalled));
    if !unserved.is_empty() {
        out.push(format!(
            "point(s) {} did not serve their load (overloaded or stalled; see their reason): \
             ranked after every point that did",
            unserved.join(", ")
        ));
    }
    let few = ids(&|r| r.status.ran() && r.reason.as_deref().is_some_and(warns));
    if !few.is_empty() {
        out.push(format!(
            "point(s) {} rest on fewer than {FEW_REQUESTS} completed requests: their \
             percentiles are not reliable (a longer window or more load gives more)",
            few.join(", ")
        ));
    }
    out
}

/// Joins the parts of a reason that are present with `; `.
pub fn join_reasons(parts: impl IntoIterator<Item = Option<String>>) -> Option<String> {
    let parts: Vec<String> = parts.into_iter().flatten().collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The status and reason of a simulated point (its report is in `rec`): the `require` bounds'
/// verdict (see `leaderboard::classify`), overridden by `overloaded`/`stalled` when it did not
/// serve its load, with the few-requests note appended.
pub fn assess(
    rec: &super::record::PointRecord,
    require: &[super::spec::Bound],
) -> (super::record::Status, Option<String>) {
    let (status, bounds) = super::leaderboard::classify(rec, require);
    let few = few_requests_note(rec.report.as_ref());
    match rec
        .report
        .as_ref()
        .and_then(|r| verdict(r, rec.configuration.as_ref()))
    {
        Some((worse, why)) => (worse, join_reasons([Some(why), bounds, few])),
        None => (status, join_reasons([bounds, few])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::record::Status;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn window_rates_of_a_cut_run_use_the_cap() {
        let mut r = obj(json!({
            "num_requests": 3658, "completed_requests": 182, "duration_ms": 53000.0,
            "request_throughput_rps": 182.0 / 53.0, "output_throughput_tok_s": 1000.0,
        }));
        add_window_rates(&mut r, Some(600_000.0), 5000);
        let w = num(&r, "request_throughput_rps_window").unwrap();
        assert!((w - 182.0 / 600.0).abs() < 1e-12, "{w}");
        let o = num(&r, "output_throughput_tok_s_window").unwrap();
        assert!((o - 1000.0 * 53.0 / 600.0).abs() < 1e-9, "{o}");
        assert!(!r.contains_key("goodput_request_throughput_rps_window"));
        // DynoSim's keep their values.
        assert_eq!(num(&r, "output_throughput_tok_s"), Some(1000.0));
    }

    #[test]
    fn ranking_reads_a_rate_per_the_window() {
        let mut rec = crate::sweep::leaderboard::tests::rec(
            0,
            Status::Ok,
            json!({"num_requests": 100, "completed_requests": 10, "duration_ms": 10000.0,
                   "goodput_request_throughput_rps": 1.0, "mean_ttft_ms": 5.0}),
        );
        assert_eq!(rec.metric("goodput_request_throughput_rps"), Some(1.0));
        add_window_rates(rec.report.as_mut().unwrap(), Some(100_000.0), 100);
        assert_eq!(rec.metric("goodput_request_throughput_rps"), Some(0.1));
        assert_eq!(
            rec.metric("goodput_request_throughput_rps_window"),
            Some(0.1)
        );
        // Not a rate: read as it is.
        assert_eq!(rec.metric("mean_ttft_ms"), Some(5.0));
    }

    #[test]
    fn window_rates_of_a_run_served_before_the_cap_equal_dynosims() {
        let mut r = obj(json!({
            "num_requests": 10, "completed_requests": 10, "duration_ms": 5000.0,
            "request_throughput_rps": 2.0,
        }));
        add_window_rates(&mut r, Some(600_000.0), 10);
        assert_eq!(num(&r, "request_throughput_rps_window"), Some(2.0));
        let mut uncapped = r.clone();
        uncapped.remove("request_throughput_rps_window");
        add_window_rates(&mut uncapped, None, 10);
        assert!(!uncapped.contains_key("request_throughput_rps_window"));
    }

    #[test]
    fn capacity_of_the_configuration() {
        let agg = json!({"topology": {"Aggregated": {"num_workers": 4,
            "engine": {"dp_size": 2, "max_num_seqs": 256}}}});
        assert_eq!(in_flight_capacity(&agg), Some(2048));
        let dis = json!({"topology": {"Disaggregated": {
            "num_prefill_workers": 2, "prefill": {"dp_size": 1, "max_num_seqs": 256},
            "num_decode_workers": 1, "decode": {"dp_size": 1, "max_num_seqs": 8}}}});
        assert_eq!(in_flight_capacity(&dis), Some(520));
        let unlimited = json!({"topology": {"Aggregated": {"num_workers": 4,
            "engine": {"dp_size": 1, "max_num_seqs": null}}}});
        assert_eq!(in_flight_capacity(&unlimited), None);
    }

    #[test]
    fn growing_queue_is_overloaded_with_counts() {
        let cfg = json!({"topology": {"Aggregated": {"num_workers": 1,
            "engine": {"dp_size": 1, "max_num_seqs": 100}}}});
        // Without the accounting keys: 3476 unfinished, at most 100 in flight.
        let r = obj(json!({"num_requests": 3658, "completed_requests": 182}));
        let (s, why) = verdict(&r, Some(&cfg)).unwrap();
        assert_eq!(s, Status::Overloaded);
        assert!(
            why.contains("3376 requests waiting, 100 at most in flight"),
            "{why}"
        );
        assert!(
            why.contains("182 of 3658 arrived requests completed"),
            "{why}"
        );
        // With them: waiting against in flight.
        let r = obj(json!({"arrived_requests": 100, "completed_requests": 50,
            "unfinished_requests": 50, "unfinished_waiting_requests": 20}));
        assert_eq!(verdict(&r, Some(&cfg)), None);
        let r = obj(json!({"arrived_requests": 100, "completed_requests": 50,
            "unfinished_requests": 50, "unfinished_waiting_requests": 40}));
        assert_eq!(verdict(&r, None).unwrap().0, Status::Overloaded);
        // A short queue is not a growing one.
        let r = obj(json!({"arrived_requests": 100, "completed_requests": 95,
            "unfinished_requests": 5, "unfinished_waiting_requests": 4}));
        assert_eq!(verdict(&r, None), None);
        // Everything served.
        let r = obj(json!({"num_requests": 10, "completed_requests": 10}));
        assert_eq!(verdict(&r, Some(&cfg)), None);
    }

    #[test]
    fn stall_record_is_stalled() {
        let r = obj(json!({"arrived_requests": 3658, "completed_requests": 316,
            "unfinished_requests": 3342, "unfinished_waiting_requests": 3000,
            "stall": {"worker": 0, "role": "prefill", "since_ms": 141000.0,
                      "queued_requests": 2972, "cause": "preempted_outgrew_pool"}}));
        let (s, why) = verdict(&r, None).unwrap();
        assert_eq!(s, Status::Stalled);
        assert!(
            why.starts_with("stalled: prefill worker 0 cannot make progress since t=141.0 s (2972"),
            "{why}"
        );
        assert!(why.contains("316 of 3658 arrived requests completed, 3342 unfinished"));
    }

    #[test]
    fn few_requests_are_noted() {
        let r = obj(json!({"completed_requests": 29}));
        assert_eq!(
            few_requests_note(Some(&r)).unwrap(),
            "few requests: percentiles rest on 29 completed requests (< 100)"
        );
        let r = obj(json!({"completed_requests": 100}));
        assert_eq!(few_requests_note(Some(&r)), None);
    }
}
