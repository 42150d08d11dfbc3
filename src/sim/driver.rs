//! The load driver: when each request arrives (spec §2.3, §2.8, §2.9). Open loop releases first
//! turns at their (sped-up) timestamps; closed loop keeps at most `replay_concurrency` sessions
//! active. Follow-up turns arrive at the previous turn's completion plus the think time.

use crate::config::LoadSpec;
use crate::workload::Workload;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

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
}

impl Driver {
    pub fn new(load: &LoadSpec) -> Self {
        Driver {
            due: BinaryHeap::new(),
            cap: load.replay_concurrency,
            next_session: 0,
            speedup: if load.replay_concurrency.is_some() {
                1.0
            } else {
                load.arrival_speedup_ratio
            },
        }
    }

    fn push(&mut self, time: f64, req: u32) {
        // Same-time arrivals are released in workload order (session, then turn), which is
        // what the reference does (checked on its multi-turn synthetic runs).
        self.due.push(Reverse(Due {
            time,
            seq: req as u64,
            req,
        }));
    }

    /// Schedules the first arrivals.
    pub fn start(&mut self, w: &Workload, t0: f64) {
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
                    let t = s.first_arrival_ms.unwrap_or(0.0) / self.speedup;
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
}
