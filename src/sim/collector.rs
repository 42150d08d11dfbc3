//! What the simulation records per request (arrival, admissions, tokens, terminal state) and
//! the pooled token gaps, turned into a report at the end. Token gaps stream into
//! [`TokenGaps`] (through a [`GapTally`]); nothing is stored per token, except under a time cap,
//! where a request's gaps wait in a buffer until it completes (only completed requests count).

use crate::report::{
    build_report, CompletedRequest, GapTally, RequestRecord, RunTotals, TokenGaps,
};
use crate::workload::Workload;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Status {
    #[default]
    Pending,
    Arrived,
    Completed,
    Rejected,
    /// Disaggregated: routed to a decode worker whose whole KV pool cannot hold the prompt
    /// (DynoSim's `failed`; counted with the rejected requests).
    Failed,
}

#[derive(Debug, Clone, Copy, Default)]
struct Rec {
    status: Status,
    arrival: f64,
    first_admit: Option<f64>,
    /// Largest reuse reported by any admission (prefill or decode side): the report's ratio.
    reused_max: u32,
    /// Largest reuse reported by a prefill-side (or aggregated) admission: the record's.
    prefill_reused_max: u32,
    /// Largest reuse reported by a decode-side admission (a preempted sequence re-admitted).
    decode_reused_max: u32,
    first_reused: Option<u32>,
    first_token: f64,
    second_token: Option<f64>,
    last_token: f64,
    n_out: u32,
    terminal: f64,
    prefill_worker: Option<u32>,
    decode_worker: Option<u32>,
    prefill_overlap: Option<u32>,
    decode_overlap: Option<u32>,
    decode_admit: Option<f64>,
    source_held: Option<f64>,
    destination_reserved: Option<f64>,
    destination_activated: Option<f64>,
    source_released: Option<f64>,
}

impl Rec {
    /// Moves every time of the record `t0` earlier (times relative to the measured phase).
    fn shift_back(&mut self, t0: f64) {
        for t in [
            &mut self.arrival,
            &mut self.first_token,
            &mut self.last_token,
            &mut self.terminal,
        ] {
            *t -= t0;
        }
        for t in [
            &mut self.first_admit,
            &mut self.second_token,
            &mut self.decode_admit,
            &mut self.source_held,
            &mut self.destination_reserved,
            &mut self.destination_activated,
            &mut self.source_released,
        ]
        .into_iter()
        .flatten()
        {
            *t -= t0;
        }
    }
}

/// Which names the per-request records carry, as DynoSim's records do: its single-worker
/// runtime names no session, turn or worker; its open-loop replay of single-turn requests on
/// the multi-worker runtime names the worker but no session or turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordNaming {
    /// `session_id` and `turn_index`.
    pub sessions: bool,
    /// `decode_worker_idx`.
    pub decode_worker: bool,
}

pub struct Collector {
    recs: Vec<Rec>,
    gaps: TokenGaps,
    /// Gaps not yet added to `gaps`, counted by value.
    tally: GapTally,
    arrivals: u64,
    keep_records: bool,
    /// The time cap is passed: completions are no longer recorded.
    completions_stopped: bool,
    /// Under a time cap, each request's gaps are held here until it completes: as DynoSim's
    /// collector, only completed requests' gaps are pooled, and requests still in flight at the
    /// cap never complete. Empty (gaps pooled at once) without a cap, where every request
    /// completes.
    pending: Vec<Vec<f64>>,
    /// Requests `0..warmup` are warm-up requests (`Workload::warmup_sessions`): simulated, left
    /// out of every count and metric.
    warmup: u32,
}

impl Collector {
    /// `capped`: the run has a time cap (gaps are held per request until it completes).
    pub fn new(n: usize, keep_records: bool, capped: bool) -> Self {
        Collector {
            recs: vec![Rec::default(); n],
            gaps: TokenGaps::new(),
            tally: GapTally::new(),
            arrivals: 0,
            keep_records,
            completions_stopped: false,
            pending: if capped {
                vec![Vec::new(); n]
            } else {
                Vec::new()
            },
            warmup: 0,
        }
    }

    /// Leaves requests `0..n` (the warm-up requests) out of every count and metric.
    pub fn with_warmup(mut self, n: u32) -> Self {
        self.warmup = n;
        self
    }

    pub fn arrival(&mut self, req: u32, now: f64) {
        let r = &mut self.recs[req as usize];
        r.status = Status::Arrived;
        r.arrival = now;
        if req >= self.warmup {
            self.arrivals += 1;
        }
    }

    pub fn arrival_ms(&self, req: u32) -> f64 {
        self.recs[req as usize].arrival
    }

    pub fn admit(&mut self, req: u32, now: f64, reused: u32, decode_side: bool) {
        // As DynoSim's collector: every admission counts towards the request's reuse (the
        // report's ratio); the record splits it by side.
        let r = &mut self.recs[req as usize];
        r.reused_max = r.reused_max.max(reused);
        if decode_side {
            r.decode_admit.get_or_insert(now);
            r.decode_reused_max = r.decode_reused_max.max(reused);
            return;
        }
        r.first_admit.get_or_insert(now);
        r.first_reused.get_or_insert(reused);
        r.prefill_reused_max = r.prefill_reused_max.max(reused);
    }

    pub fn routed_prefill(&mut self, req: u32, worker: u32, overlap: u32) {
        let r = &mut self.recs[req as usize];
        r.prefill_worker = Some(worker);
        r.prefill_overlap = Some(overlap);
    }

    pub fn routed_decode(&mut self, req: u32, worker: u32, overlap: u32) {
        let r = &mut self.recs[req as usize];
        r.decode_worker = Some(worker);
        r.decode_overlap = Some(overlap);
    }

    /// An aggregated request's target (worker × DP ranks + rank): DynoSim records it as the
    /// decode worker, with no decode route overlap.
    pub fn routed_aggregated(&mut self, req: u32, target: u32) {
        self.recs[req as usize].decode_worker = Some(target);
    }

    pub fn source_held(&mut self, req: u32, now: f64) {
        self.recs[req as usize].source_held = Some(now);
    }

    pub fn destination_reserved(&mut self, req: u32, now: f64) {
        self.recs[req as usize].destination_reserved = Some(now);
    }

    pub fn destination_activated(&mut self, req: u32, now: f64) {
        self.recs[req as usize].destination_activated = Some(now);
    }

    pub fn source_released(&mut self, req: u32, now: f64) {
        self.recs[req as usize].source_released = Some(now);
    }

    /// A visible output token at `now`; `n` is the count generated so far (1 = first).
    #[inline]
    pub fn token(&mut self, req: u32, now: f64, n: u32) {
        let r = &mut self.recs[req as usize];
        if n == 1 || r.n_out == 0 {
            r.first_token = now;
        } else {
            let gap = now - r.last_token;
            if r.second_token.is_none() {
                r.second_token = Some(now);
            }
            r.last_token = now;
            r.n_out += 1;
            self.request_gap(req, gap);
            return;
        }
        r.last_token = now;
        r.n_out += 1;
    }

    /// Tokens of a stride: every request of `emitted` (request, generated count after the
    /// stride) emitted one token at each of `ends`. Same effect as calling [`Collector::token`]
    /// for each of them, pass by pass, at O(requests + passes) cost: the gaps between
    /// consecutive pass ends are shared by all requests.
    pub fn stride_tokens(&mut self, emitted: &[(u32, u32)], ends: &[f64]) {
        let k = ends.len() as u32;
        if k == 0 || emitted.is_empty() {
            return;
        }
        for &(req, generated) in emitted {
            // First token of the stride: its own gap (or first/second token bookkeeping).
            self.token(req, ends[0], generated - k + 1);
            let r = &mut self.recs[req as usize];
            if k > 1 && r.second_token.is_none() {
                r.second_token = Some(ends[1]);
            }
            r.last_token = ends[k as usize - 1];
            r.n_out += k - 1;
        }
        if !self.pending.is_empty() {
            for &(req, _) in emitted {
                let held = &mut self.pending[req as usize];
                held.extend(ends.windows(2).map(|w| w[1] - w[0]));
            }
            return;
        }
        let n = if self.warmup == 0 {
            emitted.len() as u64
        } else {
            emitted.iter().filter(|e| e.0 >= self.warmup).count() as u64
        };
        if n == 0 {
            return;
        }
        for w in ends.windows(2) {
            self.gap(w[1] - w[0], n);
        }
    }

    #[inline]
    fn gap(&mut self, gap: f64, count: u64) {
        self.tally.add(gap, count, &mut self.gaps);
    }

    /// One gap of request `req`: pooled now, or held until it completes under a time cap.
    #[inline]
    fn request_gap(&mut self, req: u32, gap: f64) {
        if req < self.warmup {
            return;
        }
        match self.pending.get_mut(req as usize) {
            Some(held) => held.push(gap),
            None => self.gap(gap, 1),
        }
    }

    /// From now on (the time cap is passed), completions are not recorded: like DynoSim's,
    /// which records tokens when a pass is formed but a completion when the pass ends, a
    /// request finishing in a pass that ends past the cap stays in flight.
    pub fn stop_completions(&mut self) {
        self.completions_stopped = true;
    }

    pub fn completed(&mut self, req: u32, now: f64) {
        if self.completions_stopped {
            return;
        }
        let r = &mut self.recs[req as usize];
        r.status = Status::Completed;
        r.terminal = now;
        if let Some(held) = self.pending.get_mut(req as usize) {
            for gap in std::mem::take(held) {
                self.gap(gap, 1);
            }
        }
    }

    pub fn rejected(&mut self, req: u32, now: f64) {
        let r = &mut self.recs[req as usize];
        r.status = Status::Rejected;
        r.terminal = now;
    }

    /// A disaggregated request routed to a decode worker (the router's `overlap` tokens) whose
    /// pool can never hold its prompt: it fails there, as DynoSim's records say, without a
    /// decode worker of its own.
    pub fn failed_at_decode(&mut self, req: u32, now: f64, overlap: u32) {
        let r = &mut self.recs[req as usize];
        r.status = Status::Failed;
        r.terminal = now;
        r.decode_overlap = Some(overlap);
    }

    /// What early stop sees of the requests that have arrived and may count (`countable`).
    pub fn progress(&self, countable: &[bool], out: &mut Vec<super::early_stop::Progress>) {
        for (r, _) in self.recs.iter().zip(countable).filter(|(_, c)| **c) {
            if matches!(r.status, Status::Arrived | Status::Completed) {
                out.push(super::early_stop::Progress {
                    arrival: r.arrival,
                    tokens: (r.n_out > 0).then_some((r.first_token, r.last_token)),
                });
            }
        }
    }

    /// The report and records of the measured requests, their times counted from
    /// `measured_from` (0 without warm-up: unchanged). `naming` says which of a record's
    /// session, turn and decode worker the run's records carry.
    pub fn finish(
        mut self,
        w: &Workload,
        mut totals: RunTotals,
        measured_from: f64,
        naming: RecordNaming,
    ) -> super::SimOutput {
        totals.num_requests = self.arrivals;
        let skip = self.warmup as usize;
        if skip > 0 {
            for r in &mut self.recs[skip..] {
                r.shift_back(measured_from);
            }
        }
        for r in &self.recs[skip..] {
            match r.status {
                Status::Rejected | Status::Failed => totals.rejected_requests += 1,
                Status::Arrived => totals.unfinished_requests += 1,
                Status::Completed if r.n_out == 0 => totals.finished_without_output_requests += 1,
                Status::Completed | Status::Pending => {}
            }
        }
        debug_assert!(totals.unfinished_waiting_requests <= totals.unfinished_requests);
        self.tally.flush(&mut self.gaps);
        let mut completed = Vec::new();
        for (i, r) in self.recs.iter().enumerate().skip(skip) {
            if r.status != Status::Completed {
                continue;
            }
            let spec = &w.requests[i];
            // A request with nothing to generate completes at its terminal time without a
            // token; DynoSim counts it as completed (see `CompletedRequest`).
            let (first, last) = if r.n_out == 0 {
                (r.terminal, r.terminal)
            } else {
                (r.first_token, r.last_token)
            };
            completed.push(CompletedRequest {
                arrival_ms: r.arrival,
                first_token_ms: first,
                second_token_ms: r.second_token,
                last_token_ms: last,
                input_tokens: spec.input_length,
                output_tokens: r.n_out,
                reused_tokens: r.reused_max,
                first_admission_reused_tokens: r.first_reused.unwrap_or(0),
            });
        }
        let report = build_report(&completed, &self.gaps, &totals);
        let mut records = Vec::new();
        if self.keep_records {
            let unemitted = w.is_delta().then(|| unemitted_before(w, &self.recs));
            for (i, r) in self.recs.iter().enumerate().skip(skip) {
                let status = match r.status {
                    Status::Completed => "completed",
                    Status::Rejected => "rejected",
                    Status::Failed => "failed",
                    _ => continue,
                };
                let spec = &w.requests[i];
                let done = r.status == Status::Completed && r.n_out > 0;
                let disagg = r.prefill_worker.is_some();
                // As DynoSim's records (see `RecordNaming`); an aggregated run has no decode
                // admission or decode route apart from the request's one admission and route.
                let named = naming.sessions;
                records.push(RequestRecord {
                    session_id: named.then(|| w.sessions[spec.session as usize].id.clone()),
                    turn_index: named.then_some(spec.turn),
                    uuid: spec.uuid,
                    arrival_time_ms: r.arrival,
                    first_admit_ms: r.first_admit,
                    terminal_time_ms: Some(r.terminal),
                    first_token_ms: done.then_some(r.first_token),
                    last_token_ms: done.then_some(r.last_token),
                    ttft_ms: done.then_some(r.first_token - r.arrival),
                    ttst_ms: r.second_token.filter(|_| done).map(|t| t - r.first_token),
                    e2e_latency_ms: done.then_some(r.last_token - r.arrival),
                    itl_ms: (done && r.n_out > 1)
                        .then(|| (r.last_token - r.first_token) / (r.n_out - 1) as f64),
                    input_length: spec.input_length - unemitted.as_ref().map_or(0, |u| u[i]),
                    requested_output_length: spec.output_length,
                    output_length: r.n_out,
                    reused_input_tokens: if disagg {
                        r.prefill_reused_max
                    } else {
                        r.reused_max
                    },
                    prefill_worker_idx: r.prefill_worker,
                    decode_worker_idx: r.decode_worker.filter(|_| naming.decode_worker),
                    prefill_admit_ms: if disagg { r.first_admit } else { None },
                    source_held_ms: r.source_held,
                    destination_reserved_ms: r.destination_reserved,
                    destination_activated_ms: r.destination_activated,
                    decode_admit_ms: if disagg { r.decode_admit } else { None },
                    source_released_ms: r.source_released,
                    decode_reused_input_tokens: r.decode_admit.map(|_| r.decode_reused_max),
                    prefill_route_overlap_tokens: r.prefill_overlap,
                    decode_route_overlap_tokens: r.decode_overlap,
                    terminal_status: status.to_string(),
                });
            }
            records.sort_by(|a, b| {
                a.arrival_time_ms
                    .total_cmp(&b.arrival_time_ms)
                    .then(a.uuid.cmp(&b.uuid))
            });
        }
        super::SimOutput { report, records }
    }
}

/// Per request of a `mooncake-delta` workload, the output tokens its session's earlier turns
/// planned but did not emit (a refused turn emits none; a TRT-LLM pool or `max_model_len` can
/// cut one short). DynoSim builds a turn's prompt from the tokens emitted before it, where the
/// workload's `input_length` counts the planned ones. The simulation is the same either way: a
/// turn after such a shortfall has a prompt at least as long as the pool or length limit that
/// refused or cut its predecessor, so both refuse it. Its record names DynoSim's prompt.
fn unemitted_before(w: &Workload, recs: &[Rec]) -> Vec<u32> {
    let mut out = Vec::with_capacity(recs.len());
    let (mut session, mut short) = (u32::MAX, 0u32);
    for (spec, r) in w.requests.iter().zip(recs) {
        if spec.session != session {
            (session, short) = (spec.session, 0);
        }
        out.push(short);
        short = short.saturating_add(spec.output_length.saturating_sub(r.n_out));
    }
    out
}
