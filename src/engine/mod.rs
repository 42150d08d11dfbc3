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

/// The divisor of a decode pass's time: DynoSim's `speedup_ratio × decode_speedup_ratio` (≤ 0:
/// none), divided by dynosim's `decode_time_scale` (1: DynoSim's divisor exactly).
pub(crate) fn decode_ratio(args: &crate::config::EngineArgs) -> f64 {
    let r = args.speedup_ratio * args.decode_speedup_ratio;
    let scale = args.decode_time_scale;
    if scale == 1.0 {
        r
    } else if r > 0.0 {
        r / scale
    } else {
        1.0 / scale
    }
}

/// A pass's prefill time from the timing model's `model_ms`: divided by `speedup_ratio`, plus
/// dynosim's `prefill_pass_overhead_ms` (host time, not scaled).
pub(crate) fn prefill_pass_ms(args: &crate::config::EngineArgs, model_ms: f64) -> f64 {
    crate::timing::pass_time(model_ms, args.speedup_ratio) + args.prefill_pass_overhead_ms
}

/// A pass's decode time from the timing model's `model_ms`: divided by [`decode_ratio`] (DynoSim
/// divides by the product of the two ratios, and not at all when it is ≤ 0; dynosim's
/// `decode_time_scale` multiplies on top), plus dynosim's `decode_pass_overhead_ms`.
pub(crate) fn decode_pass_ms(args: &crate::config::EngineArgs, model_ms: f64) -> f64 {
    with_decode_overhead(
        crate::timing::pass_time(model_ms, decode_ratio(args)),
        args.decode_pass_overhead_ms,
    )
}

/// A decode pass's time `t_ms` with dynosim's `decode_pass_overhead_ms` added (it may be
/// negative; the pass never takes less than 0 ms). Without an overhead, `t_ms` exactly.
fn with_decode_overhead(t_ms: f64, overhead_ms: f64) -> f64 {
    if overhead_ms == 0.0 {
        t_ms
    } else {
        (t_ms + overhead_ms).max(0.0)
    }
}
