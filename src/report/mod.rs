//! Reports: statistics over what the simulation recorded, the flat JSON report with DynoSim's key
//! names (spec §8.2), the AIPerf-style console table (§8.1) and per-request JSONL (§8.4).
//! Nothing here simulates; it only summarises.

use serde::Serialize;
use std::collections::BTreeMap;

/// One value of the flat report: integers stay integers in JSON, like DynoSim's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Value {
    Int(i64),
    Float(f64),
}

impl Value {
    pub fn as_f64(&self) -> f64 {
        match *self {
            Value::Int(i) => i as f64,
            Value::Float(f) => f,
        }
    }
}

/// The flat report, keys sorted (DynoSim writes `sort_keys=True`), and the stall of a simulation
/// that could not make progress (written as a `stall` object among the keys; dynosim's own).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Report {
    pub fields: BTreeMap<String, Value>,
    pub stall: Option<Stall>,
}

/// The report's key for [`Report::stall`].
pub const STALL_KEY: &str = "stall";

impl Serialize for Report {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let extra = usize::from(self.stall.is_some());
        let mut m = s.serialize_map(Some(self.fields.len() + extra))?;
        let mut stall = self.stall.as_ref();
        for (k, v) in &self.fields {
            if let Some(st) = stall.filter(|_| k.as_str() > STALL_KEY) {
                m.serialize_entry(STALL_KEY, st)?;
                stall = None;
            }
            m.serialize_entry(k, v)?;
        }
        if let Some(st) = stall {
            m.serialize_entry(STALL_KEY, st)?;
        }
        m.end()
    }
}

impl Report {
    pub fn get(&self, key: &str) -> Option<f64> {
        self.fields.get(key).map(Value::as_f64)
    }
    pub fn set_int(&mut self, key: &str, v: i64) {
        self.fields.insert(key.to_string(), Value::Int(v));
    }
    pub fn set_float(&mut self, key: &str, v: f64) {
        self.fields.insert(key.to_string(), Value::Float(v));
    }
}

/// What the collector keeps of one completed request (times in virtual ms from t=0).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
/// A completed request, as the report counts it. One with no output token (output length 0:
/// it finishes after its prefill) counts as DynoSim 1.4.2 counts it: in `completed_requests`,
/// the input tokens, the prefix-reuse ratios and the duration (its `first_token_ms` and
/// `last_token_ms` are its completion time), and in no latency distribution or goodput.
pub struct CompletedRequest {
    pub arrival_ms: f64,
    pub first_token_ms: f64,
    pub second_token_ms: Option<f64>,
    pub last_token_ms: f64,
    pub input_tokens: u32,
    pub output_tokens: u32,
    /// Max reused (prefix-cache hit) tokens over all admissions of the request.
    pub reused_tokens: u32,
    /// Reused tokens at the first admission.
    pub first_admission_reused_tokens: u32,
}

/// Run-level facts the report needs besides per-request data.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RunTotals {
    /// Every arrival, including rejected and incomplete requests.
    pub num_requests: u64,
    /// Arrivals an engine refused.
    pub rejected_requests: u64,
    /// Arrivals neither completed nor rejected when the run ended (a time cap).
    pub unfinished_requests: u64,
    /// Of those, the ones waiting for admission (router queue, an engine's waiting queue, a
    /// decode reservation) rather than in a running batch or a transfer.
    pub unfinished_waiting_requests: u64,
    /// Arrivals that finished without a token (output length 0), which DynoSim's
    /// `completed_requests` leaves out here.
    pub finished_without_output_requests: u64,
    /// Host time of the simulation in ms (only wall-time fields depend on it).
    pub wall_time_ms: f64,
    /// 0 for aggregated runs.
    pub num_prefill_workers: u32,
    pub num_decode_workers: u32,
    /// 0 for aggregated runs.
    pub prefill_gpus_per_worker: u32,
    pub decode_gpus_per_worker: u32,
    pub sla: crate::config::Sla,
    /// Simulated time the workers were up, when it is not the last token's time (with its
    /// 1e-9 s floor): DynoSim's multi-worker runtime integrates worker-seconds over its clock,
    /// up to its last event (within the cap for a capped run).
    pub worker_span_ms: Option<f64>,
}

/// Per-request record of `--report-jsonl` (spec §8.4); `None` serialises as JSON null.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct RequestRecord {
    /// `None` where DynoSim's records have none (its single-worker runtime).
    pub session_id: Option<String>,
    pub turn_index: Option<u32>,
    pub uuid: u64,
    pub arrival_time_ms: f64,
    pub first_admit_ms: Option<f64>,
    pub terminal_time_ms: Option<f64>,
    pub first_token_ms: Option<f64>,
    pub last_token_ms: Option<f64>,
    pub ttft_ms: Option<f64>,
    pub ttst_ms: Option<f64>,
    pub e2e_latency_ms: Option<f64>,
    pub itl_ms: Option<f64>,
    pub input_length: u32,
    pub requested_output_length: u32,
    pub output_length: u32,
    pub reused_input_tokens: u32,
    pub prefill_worker_idx: Option<u32>,
    pub decode_worker_idx: Option<u32>,
    pub prefill_admit_ms: Option<f64>,
    pub source_held_ms: Option<f64>,
    pub destination_reserved_ms: Option<f64>,
    pub destination_activated_ms: Option<f64>,
    pub decode_admit_ms: Option<f64>,
    pub source_released_ms: Option<f64>,
    pub decode_reused_input_tokens: Option<u32>,
    pub prefill_route_overlap_tokens: Option<u32>,
    pub decode_route_overlap_tokens: Option<u32>,
    pub terminal_status: String,
}

pub(crate) mod accounting;
pub(crate) mod build;
pub mod cost;
pub(crate) mod dates;
pub(crate) mod gaps;
pub(crate) mod json;
mod key_memo;
mod rounding;
pub(crate) mod sketch;
pub(crate) mod stats;
pub(crate) mod table;

pub use crate::engine::stall::StallCause;
pub use accounting::Stall;
pub use build::build_report;
pub use gaps::{GapTally, TokenGaps};
pub use json::{write_json, write_jsonl};

/// Reads a checked-in reference file (`tests/data/reference/NAME`) for the report tests.
#[cfg(test)]
pub(crate) fn test_data(name: &str) -> String {
    let p = format!("{}/tests/data/reference/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("reading {p}: {e}"))
}
