//! Workloads: what requests arrive, with what prompts. Parsed or generated once, then shared
//! read-only (`&Workload`) by every simulation of a sweep. Nothing here knows about engines.
//!
//! A prompt's content is described by trace blocks: each block id stands for `trace_block_size`
//! identical tokens (spec §2.2), so engine-block hashes can be derived for any engine block size.

pub(crate) mod blocks;
pub mod formats;
mod session_streams;
pub mod shape;
pub(crate) mod sharing;
pub mod synthetic;

use serde::{Deserialize, Serialize};

/// What the tokens of a request's prompt are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Content {
    /// `block_ids[start..start+len]` of the workload: interned trace-block ids, each covering
    /// `Workload::trace_block_size` tokens (the last one possibly partially).
    Blocks { start: u32, len: u32 },
    /// A `mooncake-delta` turn (spec §2.4): `block_ids[start..start+len]` are the interned ids of
    /// its *new* input of `new_input` tokens only. Its prompt is its session's stream so far:
    /// every earlier turn's new input followed by that turn's output tokens, then this new
    /// input (`RequestSpec::input_length` is that cumulative length). See
    /// `formats::mooncake_delta` for the tokens and `session_streams` for the engine blocks
    /// they make.
    Delta {
        start: u32,
        len: u32,
        new_input: u32,
    },
    /// Pseudo-random tokens unique to this request (simple synthetic path, spec §3.1): no block
    /// of it is ever shared with another request.
    Unique,
}

/// One request (one turn of a session).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestSpec {
    /// Deterministic request id (`request_idx + 1` for synthetic; file order for traces).
    pub uuid: u64,
    pub input_length: u32,
    pub output_length: u32,
    pub content: Content,
    /// Index into `Workload::sessions`.
    pub session: u32,
    /// Turn index within the session (0 = first).
    pub turn: u32,
    /// Think time after the previous turn of the session completes (0 for turn 0), before any
    /// arrival speed-up is applied.
    pub delay_after_previous_ms: f64,
    pub priority: i32,
    pub strict_priority: u32,
}

/// A session: consecutive turns `first_request .. first_request + num_turns` of `requests`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSpec {
    /// User-visible id (`session_id` of the trace, `request_<line>` for rows without one,
    /// `session_<i>` for synthetic sessions).
    pub id: String,
    /// First-turn arrival in ms, normalised so the earliest session starts at 0, before any
    /// arrival speed-up. `None` only where timestamps do not exist (closed-loop-only workloads).
    pub first_arrival_ms: Option<f64>,
    pub first_request: u32,
    pub num_turns: u32,
}

/// A parsed or generated workload, immutable once built.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Workload {
    /// Sessions ordered by (first arrival, file order), stable.
    pub sessions: Vec<SessionSpec>,
    /// All requests, grouped by session in the order of `sessions`, turns in order.
    pub requests: Vec<RequestSpec>,
    /// Interned trace-block ids (dense, first-seen order), referenced by `Content::Blocks`.
    pub block_ids: Vec<u32>,
    /// Tokens per trace block id.
    pub trace_block_size: u32,
    /// Number of distinct interned ids (all ids in `block_ids` are `< num_distinct_blocks`).
    pub num_distinct_blocks: u32,
    /// True when every session has exactly one turn (the flat fast path of spec §2.3).
    pub flat: bool,
    /// Inputs accepted with a fix-up (e.g. `input_length` clamped to the hash-id capacity).
    pub warnings: Vec<String>,
    /// Requests released by the end of other requests (agentic traces); empty otherwise.
    pub dependencies: Dependencies,
    /// The first `warmup_sessions` sessions are warm-up (synthetic `--warmup-request-count`):
    /// simulated first, under the same load, and left out of every metric; the measured
    /// sessions are released once all of them have ended, their arrivals counted from then.
    /// 0 for every trace.
    #[serde(default)]
    pub warmup_sessions: u32,
}

/// Request-level dependencies (spec §2.5, §2.7): a request with dependencies is released
/// `delay_after_previous_ms` (sped up like arrivals) after the last of them ends, whether it
/// completed or was rejected. Its session has a single turn and no arrival of its own.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Dependencies {
    /// `dependents[starts[r]..starts[r + 1]]` are the requests waiting for request `r`.
    starts: Vec<u32>,
    dependents: Vec<u32>,
    /// How many requests each request waits for.
    num_waits: Vec<u32>,
}

impl Dependencies {
    /// Builds the index from each request's list of requests it waits for (indices into
    /// `Workload::requests`, no duplicates).
    pub fn from_waits(waits_for: &[Vec<u32>]) -> Self {
        let n = waits_for.len();
        let mut counts = vec![0u32; n + 1];
        for waits in waits_for {
            for &d in waits {
                counts[d as usize + 1] += 1;
            }
        }
        for i in 0..n {
            counts[i + 1] += counts[i];
        }
        let starts = counts;
        let mut fill: Vec<u32> = starts[..n].to_vec();
        let mut dependents = vec![0u32; starts[n] as usize];
        for (r, waits) in waits_for.iter().enumerate() {
            for &d in waits {
                dependents[fill[d as usize] as usize] = r as u32;
                fill[d as usize] += 1;
            }
        }
        Dependencies {
            starts,
            dependents,
            num_waits: waits_for.iter().map(|w| w.len() as u32).collect(),
        }
    }

    /// True for agentic workloads (requests released by dependencies or their own arrival,
    /// never as turns of a session), even when no request waits for another.
    pub fn is_agentic(&self) -> bool {
        !self.num_waits.is_empty()
    }

    /// True when no request waits for another.
    pub fn is_empty(&self) -> bool {
        self.dependents.is_empty()
    }

    /// Number of requests request `r` waits for.
    pub fn num_waits(&self, r: u32) -> u32 {
        self.num_waits.get(r as usize).copied().unwrap_or(0)
    }

    /// The requests waiting for request `r`.
    pub fn dependents_of(&self, r: u32) -> &[u32] {
        let r = r as usize;
        match (self.starts.get(r), self.starts.get(r + 1)) {
            (Some(&a), Some(&b)) => &self.dependents[a as usize..b as usize],
            _ => &[],
        }
    }
}

impl Workload {
    /// Whether the prompts are `mooncake-delta` session streams (`Content::Delta`).
    pub fn is_delta(&self) -> bool {
        self.requests
            .first()
            .is_some_and(|r| matches!(r.content, Content::Delta { .. }))
    }

    /// The trace-block ids of a request's prompt (empty for `Content::Unique`; only the new
    /// input for `Content::Delta`).
    pub fn blocks_of(&self, r: &RequestSpec) -> &[u32] {
        match r.content {
            Content::Blocks { start, len } | Content::Delta { start, len, .. } => {
                &self.block_ids[start as usize..(start + len) as usize]
            }
            Content::Unique => &[],
        }
    }
}
