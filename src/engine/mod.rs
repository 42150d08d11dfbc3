//! KV-cache engines: the block pool (`kv`), SGLang's radix page cache (`radix`), and the vLLM and
//! SGLang schedulers (`vllm`, `sglang`) behind one interface (`scheduler`); each pass's time
//! comes from the forward-pass timing models of `crate::timing`. An engine knows nothing about
//! routing or other workers.

pub(crate) mod kv;
pub(crate) mod mtp;
pub(crate) mod radix;
pub(crate) mod scheduler;
pub(crate) mod sglang;
pub(crate) mod stall;
pub(crate) mod vllm;

/// A decode pass's time `t_ms` with dynosim's `decode_pass_overhead_ms` added (it may be
/// negative; the pass never takes less than 0 ms). Without an overhead, `t_ms` exactly.
pub(crate) fn with_decode_overhead(t_ms: f64, overhead_ms: f64) -> f64 {
    if overhead_ms == 0.0 {
        t_ms
    } else {
        (t_ms + overhead_ms).max(0.0)
    }
}
