//! The causes of a stall: why a request queued on an engine can never be scheduled, whatever
//! happens later. Plain data shared by the engines (which detect them), the simulation (which
//! records when one begins) and the report (which names it); it decides nothing itself.

/// Why a queued request can never be scheduled on an engine (a stall: the simulation cannot
/// complete; the engines find it in `never_schedulable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StallCause {
    /// vLLM: a preempted request has grown (prompt plus generated tokens) larger than the KV
    /// pool; only fresh requests are refused for that, a preempted one waits for good.
    PreemptedOutgrewPool,
    /// vLLM with `enable_chunked_prefill=false`: the prompt left to compute is larger than
    /// `max_num_batched_tokens`.
    PromptOverBatchBudget,
    /// SGLang: the request's next prefill chunk plus the output it reserves does not fit in
    /// the KV pool, or the chunk is larger than `max_prefill_tokens` or `chunked_prefill_size`.
    PrefillOverBudget,
    /// SGLang: the only running request needs a KV page for its next token and already holds
    /// the whole pool.
    RequestOutgrewPool,
}

impl StallCause {
    /// The cause in words, for a warning.
    pub fn describe(self) -> &'static str {
        match self {
            StallCause::PreemptedOutgrewPool => {
                "a preempted request has grown larger than the KV pool and can never be \
                 scheduled again"
            }
            StallCause::PromptOverBatchBudget => {
                "a prompt is larger than max_num_batched_tokens with enable_chunked_prefill=false"
            }
            StallCause::PrefillOverBudget => {
                "a request's prefill chunk plus its reserved output cannot fit the KV pool or the \
                 prefill token budgets (max_prefill_tokens, chunked_prefill_size)"
            }
            StallCause::RequestOutgrewPool => {
                "a running request needs more KV than the whole pool (prompt + output larger \
                 than num_gpu_blocks x page_size)"
            }
        }
    }
}
