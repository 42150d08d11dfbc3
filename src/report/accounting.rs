//! Where every arrived request ended up (spec §8.2 counts, plus dynosim's own): completed,
//! rejected by an engine, or unfinished when the run ended; and the stall that left requests
//! unfinished for good, when there was one. Owns the report's accounting fields and the warning
//! `run` prints about them; it only reads the report, it never changes DynoSim's fields.

use super::Report;
use crate::engine::stall::StallCause;
use serde::Serialize;

/// A simulation that cannot make progress: a request queued on `worker` can never be
/// scheduled (see [`StallCause`]), so it never completes and the run, without a time cap, ends
/// in the dead-end error. Recorded when it begins; a time cap that ends the run first does not
/// make it go away.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stall {
    /// The worker, numbered as the dead-end error numbers it (prefill workers first, then
    /// decode workers, in a disaggregated run).
    pub worker: u32,
    /// `aggregated`, `prefill` or `decode`.
    pub role: &'static str,
    /// Simulated time of the first pass that found it stuck.
    pub since_ms: f64,
    /// Requests waiting on that worker when the run ended.
    pub queued_requests: u64,
    pub cause: StallCause,
}

/// The keys dynosim adds to DynoSim's flat report (DynoSim's keep their values): arrived =
/// completed + rejected + unfinished, and of the completed, those finished without output (a
/// key present only when there are such requests).
#[cfg(test)]
pub const OWN_KEYS: [&str; 5] = [
    "arrived_requests",
    "rejected_requests",
    "unfinished_requests",
    "unfinished_waiting_requests",
    "finished_without_output_requests",
];

fn count(report: &Report, key: &str) -> u64 {
    report.get(key).map_or(0, |v| v.max(0.0) as u64)
}

/// The warning `run` prints on stderr when requests did not complete (unfinished when the run
/// ended, or rejected), with the cause when it is known; `None` when every arrived request
/// completed.
pub fn warning(report: &Report) -> Option<String> {
    let arrived = count(report, "arrived_requests");
    let completed = count(report, "completed_requests");
    let rejected = count(report, "rejected_requests");
    let unfinished = count(report, "unfinished_requests");
    let waiting = count(report, "unfinished_waiting_requests");
    if rejected == 0 && unfinished == 0 {
        return None;
    }
    let mut parts: Vec<String> = Vec::new();
    if unfinished > 0 {
        let mut s = format!(
            "{unfinished} unfinished when the time cap ended the run ({waiting} waiting for \
             admission, {} in flight)",
            unfinished - waiting.min(unfinished)
        );
        match &report.stall {
            Some(st) => s.push_str(&format!(
                "; the simulation is stalled: {} worker {} cannot make progress since t={:.3} ms \
                 ({} request(s) queued on it): {}. Without --max-sim-time-seconds the run ends \
                 in the dead-end error",
                st.role,
                st.worker,
                st.since_ms,
                st.queued_requests,
                st.cause.describe()
            )),
            None if waiting > unfinished - waiting => s.push_str(
                "; the queue is still growing at the cap (more requests waiting than in flight): \
                 the deployment does not keep up with the load",
            ),
            None => {}
        }
        parts.push(s);
    }
    if rejected > 0 {
        parts.push(format!(
            "{rejected} rejected by an engine (prompt larger than the KV pool or not shorter \
             than max_model_len; TRT-LLM: prompt plus output larger than the pool)"
        ));
    }
    Some(format!(
        "{completed} of {arrived} arrived requests completed: {}",
        parts.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(
        arrived: i64,
        completed: i64,
        rejected: i64,
        unfinished: i64,
        waiting: i64,
    ) -> Report {
        let mut r = Report::default();
        r.set_int("num_requests", arrived);
        r.set_int("arrived_requests", arrived);
        r.set_int("completed_requests", completed);
        r.set_int("rejected_requests", rejected);
        r.set_int("unfinished_requests", unfinished);
        r.set_int("unfinished_waiting_requests", waiting);
        r
    }

    #[test]
    fn stall_is_written_among_the_sorted_keys() {
        let mut r = report(3, 1, 0, 2, 2);
        r.set_float("wall_time_ms", 1.5);
        r.stall = Some(Stall {
            worker: 0,
            role: "aggregated",
            since_ms: 12.0,
            queued_requests: 2,
            cause: StallCause::PromptOverBatchBudget,
        });
        let text = r.to_json_string();
        assert!(
            text.contains(
                "  \"rejected_requests\": 0,\n  \"stall\": {\n    \"cause\": \
                 \"prompt_over_batch_budget\",\n    \"queued_requests\": 2,\n    \"role\": \
                 \"aggregated\",\n    \"since_ms\": 12.0,\n    \"worker\": 0\n  },\n  \
                 \"unfinished_requests\": 2,"
            ),
            "{text}"
        );
        // The file and the serde form (a sweep's point record) say the same.
        let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed, serde_json::to_value(&r).unwrap());
        let keys: Vec<String> = serde_json::to_value(&r)
            .unwrap()
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
    }

    #[test]
    fn no_warning_when_everything_completed() {
        assert_eq!(warning(&report(10, 10, 0, 0, 0)), None);
    }

    #[test]
    fn rejected_and_growing_queue_are_named() {
        let w = warning(&report(10, 2, 1, 7, 6)).unwrap();
        assert!(
            w.starts_with("2 of 10 arrived requests completed: 7 unfinished"),
            "{w}"
        );
        assert!(w.contains("6 waiting for admission, 1 in flight"), "{w}");
        assert!(w.contains("queue is still growing"), "{w}");
        assert!(w.contains("1 rejected"), "{w}");
    }

    #[test]
    fn stall_is_named_with_worker_time_and_cause() {
        let mut r = report(10, 2, 0, 8, 8);
        r.stall = Some(Stall {
            worker: 1,
            role: "prefill",
            since_ms: 1234.5,
            queued_requests: 8,
            cause: StallCause::PreemptedOutgrewPool,
        });
        let w = warning(&r).unwrap();
        assert!(
            w.contains("prefill worker 1 cannot make progress since t=1234.500 ms"),
            "{w}"
        );
        assert!(w.contains("grown larger than the KV pool"), "{w}");
        assert!(!w.contains("still growing"), "{w}");
    }
}
