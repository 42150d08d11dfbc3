//! Disaggregated hand-offs (spec §7.2): once a request's prefill is done (vLLM, "source first")
//! or on arrival (SGLang, "destination first"), a decode worker is picked, the prompt's KV is
//! reserved there, transferred, activated, and the prefill worker's copy released. This file owns
//! those steps of the [`Sim`]; when they run is decided by the event loop in the parent module.

use super::{EventKind, Sim};
use crate::config::KvTransferTimingMode;

impl Sim<'_> {
    /// Prefill finished: pick a decode worker and reserve the prompt's KV there (spec §7.2).
    pub(super) fn handoff(&mut self, req: u32, prefill_worker: usize) {
        self.route_destination(req, Some(prefill_worker));
    }

    /// A prompt larger than a decode worker's whole KV pool can never be reserved there: the
    /// request fails (DynoSim's `failed`; counted with the rejected requests) instead of
    /// waiting forever. It is refused only once routed, as DynoSim routes it first: it takes
    /// its turn of the round robin, and a KV router tracks it until the instant is done.
    /// Returns whether it was.
    fn refuse_oversized_prompt(
        &mut self,
        req: u32,
        prefill_worker: Option<usize>,
        overlap_tokens: u32,
    ) -> bool {
        let r = &self.w.requests[req as usize];
        let decode = &self.workers[self.pools[1].first_worker as usize].ranks[0];
        if r.input_length.div_ceil(decode.block_size()) <= decode.capacity_blocks() {
            return false;
        }
        self.col.failed_at_decode(req, self.now, overlap_tokens);
        // Until the instant is done its prompt still weighs on the decode worker it was routed
        // to: the decode router sees it when it places the instant's other hand-offs and
        // arrivals.
        self.late_decode_frees.push(req);
        if let Some(pw) = prefill_worker {
            self.free_source(req, pw);
            if self.workers[pw].busy {
                // Its prefill worker went on with a pass that started at this instant: DynoSim
                // reports the failure when that pass ends (the source KV is freed at once).
                self.workers[pw].failed_meanwhile.push(req);
                self.interrupt_stride_at(pw, true);
                return true;
            }
        }
        // Reported once everything else of the instant is done, as a prefill worker's rejections
        // are: the request it releases (closed loop) finds the passes of the instant started.
        self.late_terminals.push((req, false));
        true
    }

    /// Picks a decode worker for a hand-off (whose prefill ran on `prefill_worker`, or is still
    /// to come: SGLang's destination first) and queues the reservation of its prompt's KV, or
    /// fails the request there when no decode worker can ever hold its prompt.
    pub(super) fn route_destination(&mut self, req: u32, prefill_worker: Option<usize>) {
        let decision = self.route(1, req, None);
        if self.refuse_oversized_prompt(req, prefill_worker, decision.overlap_tokens) {
            return;
        }
        let pool = &self.pools[1];
        let wi = pool.first_worker + decision.target as u32;
        self.col
            .routed_decode(req, wi - pool.first_worker, decision.overlap_tokens);
        self.handoffs[req as usize].decode_worker = wi;
        self.workers[wi as usize]
            .pending_reservations
            .push_back(req);
        // A waiting hand-off changes what the worker admits (prebuilt sequences only).
        self.workers[wi as usize].stalled = false;
        // A busy decode worker takes hand-offs when its pass ends.
        if !self.workers[wi as usize].busy {
            self.retry_reservations(wi as usize);
        } else {
            // A vLLM hand-off is delivered after the passes that start at its instant.
            self.interrupt_stride_at(wi as usize, prefill_worker.is_some());
        }
    }

    /// The KV transfer delay of a hand-off (none unless the prefill args set both
    /// `kv_bytes_per_token` and a positive `kv_transfer_bandwidth`).
    pub(super) fn transfer_delay(&self, req: u32, missing_tokens: u32) -> f64 {
        match self.transfer {
            Some((ms_per_token, mode)) => {
                let tokens = match mode {
                    KvTransferTimingMode::FullPrompt => self.w.requests[req as usize].input_length,
                    KvTransferTimingMode::DestinationMissing => missing_tokens,
                };
                tokens as f64 * ms_per_token
            }
            None => 0.0,
        }
    }

    /// Destination first: the prefill of a request whose decode KV is reserved has finished
    /// (its source KV is held); the transfer starts now.
    pub(super) fn start_transfer(&mut self, req: u32) {
        let delay = self.transfer_delay(req, self.handoffs[req as usize].missing_tokens);
        self.push_event(self.now + delay, EventKind::HandoffActivate { req });
    }

    /// Tries to reserve the KV of the oldest hand-off waiting on decode worker `wi` (an idle
    /// one). Like DynoSim 1.4.2 (`retry_pending_destinations_at`), one reservation per attempt:
    /// attempts are made when a hand-off arrives at an idle worker, when a pass ends, and when a
    /// destination is activated, so with no transfer delay the next reservation sees the blocks
    /// of the one just activated. The engine tries the oldest hand-off again only once capacity
    /// may have come free since its last attempt, and (vLLM) not while its running batch is full.
    pub(super) fn retry_reservations(&mut self, wi: usize) {
        if let Some(&req) = self.workers[wi].pending_reservations.front() {
            let r = &self.w.requests[req as usize];
            let engine = &mut self.workers[wi].ranks[0];
            let Some(res) = engine.reserve_prebuilt(
                req,
                r.uuid,
                r.input_length,
                r.output_length,
                &self.prompts,
            ) else {
                return;
            };
            self.workers[wi].pending_reservations.pop_front();
            self.handoffs[req as usize].seq = res.seq;
            self.handoffs[req as usize].missing_tokens = res.missing_tokens;
            self.col.destination_reserved(req, self.now);
            if self.destination_first {
                // Only now is the prefill routed (it may wait in the prefill router's queue).
                self.submit(0, req);
            } else {
                let delay = self.transfer_delay(req, res.missing_tokens);
                self.push_event(self.now + delay, EventKind::HandoffActivate { req });
            }
        }
    }

    /// The KV transfer of a hand-off is complete. DynoSim activates the destination only on an
    /// idle decode worker: a busy one takes it when its pass ends.
    pub(super) fn activate_handoff(&mut self, req: u32) {
        let dw = self.handoffs[req as usize].decode_worker as usize;
        if self.workers[dw].busy {
            self.workers[dw].deferred.push(req);
            // A running stride stops at the next pass boundary, where the activation applies.
            self.interrupt_stride(dw);
            return;
        }
        self.activate_now(req);
    }

    /// Activates a hand-off on its (idle) decode worker, then releases the source KV (deferred
    /// to the end of the prefill worker's pass if it is busy) and retries a reservation.
    pub(super) fn activate_now(&mut self, req: u32) {
        let h = self.handoffs[req as usize];
        let dw = h.decode_worker as usize;
        self.workers[dw].ranks[0].activate(h.seq, req, &self.prompts);
        self.workers[dw].stalled = false;
        self.col.destination_activated(req, self.now);
        let target = self.target_of[req as usize];
        let prefill_pool = &self.pools[0];
        let pw = (prefill_pool.first_worker + target / prefill_pool.dp) as usize;
        if self.workers[pw].busy {
            self.workers[pw].deferred.push(req);
            // A running stride (SGLang prefill workers decode their hidden tokens) stops at the
            // next pass boundary, where the release applies.
            self.interrupt_stride(pw);
        } else {
            self.release_source(req, pw);
        }
        self.retry_reservations(dw);
    }

    /// Frees the KV a prefill worker held for a hand-off.
    pub(super) fn release_source(&mut self, req: u32, pw: usize) {
        self.free_source(req, pw);
        self.col.source_released(req, self.now);
        if self.workers[pw].ranks[0].events_at_pass_end() && !self.workers[pw].busy {
            // An idle worker's release reaches the router at once.
            self.deliver_kv_events(pw);
        }
    }
}
