//! The load driver: when each request arrives (spec §2.3, §2.8, §2.9). Open loop releases first
//! turns at their (sped-up) timestamps; closed loop keeps at most `replay_concurrency` sessions
//! active. Follow-up turns arrive at the previous turn's completion plus the think time; a
//! request with dependencies (agentic traces) arrives when the last of them ends, plus its delay.

use crate::config::{LoadSpec, SimConfig, Topology};
use crate::workload::Workload;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Agentic workloads are released by their dependencies, in open loop and aggregated only:
/// DynoSim's reason for any other configuration. (Agentic Dynamo traces are only known to be
/// agentic once read.)
pub fn unsupported_release(w: &Workload, cfg: &SimConfig) -> Option<&'static str> {
    if !w.dependencies.is_agentic() {
        return None;
    }
    if cfg.load.replay_concurrency.is_some() {
        Some("agentic Dynamo request traces are not supported with replay_concurrency")
    } else if matches!(cfg.topology, Topology::Disaggregated { .. }) {
        Some("agentic Dynamo request traces are not supported for disaggregated replay")
    } else {
        None
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Due {
    time: f64,
    seq: u64,
    req: u32,
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Due {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.time.total_cmp(&o.time).then(self.seq.cmp(&o.seq))
    }
}

pub struct Driver {
    due: BinaryHeap<Reverse<Due>>,
    /// Closed-loop session cap.
    cap: Option<u32>,
    next_session: usize,
    /// Divisor of open-loop timestamps and think times.
    speedup: f64,
    /// Per request: dependencies that have not ended yet (empty without dependencies).
    waiting_on: Vec<u32>,
    /// Per request: when its last ended dependency ended so far.
    ready_after: Vec<f64>,
    /// Warm-up sessions (`Workload::warmup_sessions`, one request each) not ended yet; the
    /// measured sessions are released when it reaches 0.
    warmup_left: u32,
    /// When the measured sessions were released (0 without warm-up; `None` while warming up).
    measured_from: Option<f64>,
    /// The entry pool's `request_overhead_ms`: every release reaches the pool this much after
    /// the client sent it (the times this driver is given are send times).
    overhead: f64,
}

impl Driver {
    pub fn new(load: &LoadSpec, overhead_ms: f64) -> Self {
        Driver {
            due: BinaryHeap::new(),
            cap: load.replay_concurrency,
            next_session: 0,
            speedup: if load.replay_concurrency.is_some() {
                1.0
            } else {
                load.arrival_speedup_ratio
            },
            waiting_on: Vec::new(),
            ready_after: Vec::new(),
            warmup_left: 0,
            measured_from: Some(0.0),
            overhead: overhead_ms,
        }
    }

    /// When the measured phase started: 0 without warm-up, the end of the last warm-up request
    /// with it (`None` while warm-up requests are still running).
    pub fn measured_from(&self) -> Option<f64> {
        self.measured_from
    }

    /// How long after its send a request is released (the entry pool's `request_overhead_ms`).
    pub fn overhead(&self) -> f64 {
        self.overhead
    }

    /// The client sends `req` at `time`; the pool sees it `overhead` later.
    fn push(&mut self, time: f64, req: u32) {
        // Same-time arrivals are released in workload order (session, then turn), which is
        // what the reference does (checked on its multi-turn synthetic runs).
        self.due.push(Reverse(Due {
            time: time + self.overhead,
            seq: req as u64,
            req,
        }));
    }

    /// Schedules the first arrivals.
    pub fn start(&mut self, w: &Workload, t0: f64) {
        if !w.dependencies.is_empty() {
            let n = w.requests.len() as u32;
            self.waiting_on = (0..n).map(|r| w.dependencies.num_waits(r)).collect();
            self.ready_after = vec![0.0; n as usize];
        }
        if w.warmup_sessions > 0 {
            self.start_warmup(w, t0);
            return;
        }
        match self.cap {
            Some(cap) => {
                while self.next_session < w.sessions.len() && self.next_session < cap as usize {
                    let first = w.sessions[self.next_session].first_request;
                    self.next_session += 1;
                    self.push(t0, first);
                }
            }
            None => {
                for s in &w.sessions {
                    if self.waiting_on.get(s.first_request as usize) > Some(&0) {
                        continue; // released by its dependencies
                    }
                    let t = s.first_arrival_ms.unwrap_or(0.0) / self.speedup;
                    self.push(t, s.first_request);
                }
                self.next_session = w.sessions.len();
            }
        }
    }

    /// Schedules the warm-up sessions (the first `w.warmup_sessions`, one request each) as the
    /// measured ones would be: up to the cap in closed loop, at their own arrivals in open loop.
    fn start_warmup(&mut self, w: &Workload, t0: f64) {
        let n = w.warmup_sessions as usize;
        self.warmup_left = w.warmup_sessions;
        self.measured_from = None;
        let released = match self.cap {
            Some(cap) => n.min(cap as usize),
            None => n,
        };
        for s in &w.sessions[..released] {
            let t = t0 + s.first_arrival_ms.unwrap_or(0.0) / self.speedup;
            self.push(t, s.first_request);
        }
        self.next_session = released;
    }

    /// The last warm-up request ended at `now`: the measured sessions start, their arrivals
    /// counted from `now`.
    fn start_measured(&mut self, w: &Workload, now: f64) {
        self.measured_from = Some(now);
        let first = w.warmup_sessions as usize;
        match self.cap {
            Some(cap) => {
                let end = w.sessions.len().min(first + cap as usize);
                for s in first..end {
                    self.push(now, w.sessions[s].first_request);
                }
                self.next_session = end;
            }
            None => {
                for s in &w.sessions[first..] {
                    let t = now + s.first_arrival_ms.unwrap_or(0.0) / self.speedup;
                    self.push(t, s.first_request);
                }
                self.next_session = w.sessions.len();
            }
        }
    }

    pub fn next_time(&self) -> Option<f64> {
        self.due.peek().map(|d| d.0.time)
    }

    /// Pops the next request due at or before `now`.
    pub fn pop_due(&mut self, now: f64) -> Option<u32> {
        if self.due.peek().is_some_and(|d| d.0.time <= now) {
            self.due.pop().map(|d| d.0.req)
        } else {
            None
        }
    }

    /// A request reached a terminal state at `now`: release the session's next turn, or, in
    /// closed loop, the next session when this was its last turn.
    pub fn on_terminal(&mut self, w: &Workload, req: u32, now: f64) {
        if !self.waiting_on.is_empty() {
            self.release_dependents(w, req, now);
        }
        if self.measured_from.is_none() {
            self.warmup_ended(w, now);
            return;
        }
        let r = &w.requests[req as usize];
        let s = &w.sessions[r.session as usize];
        if r.turn + 1 < s.num_turns {
            let next = req + 1;
            let delay = w.requests[next as usize].delay_after_previous_ms / self.speedup;
            self.push(now + delay, next);
        } else if self.cap.is_some() && self.next_session < w.sessions.len() {
            let first = w.sessions[self.next_session].first_request;
            self.next_session += 1;
            self.push(now, first);
        }
    }

    /// A warm-up request ended at `now` (warm-up sessions have one request each): in closed
    /// loop the next warm-up session takes its place; after the last, the measured phase starts.
    fn warmup_ended(&mut self, w: &Workload, now: f64) {
        self.warmup_left -= 1;
        if self.cap.is_some() && self.next_session < w.warmup_sessions as usize {
            let first = w.sessions[self.next_session].first_request;
            self.next_session += 1;
            self.push(now, first);
        }
        if self.warmup_left == 0 {
            self.start_measured(w, now);
        }
    }

    /// Counts `req`'s end for the requests waiting on it; those with no dependency left are due
    /// their delay after the last one ended.
    fn release_dependents(&mut self, w: &Workload, req: u32, now: f64) {
        for &d in w.dependencies.dependents_of(req) {
            let i = d as usize;
            if self.waiting_on[i] == 0 {
                continue;
            }
            self.waiting_on[i] -= 1;
            self.ready_after[i] = self.ready_after[i].max(now);
            if self.waiting_on[i] == 0 {
                let delay = w.requests[i].delay_after_previous_ms / self.speedup;
                self.push(self.ready_after[i] + delay, d);
            }
        }
    }
}
