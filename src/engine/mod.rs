//! KV-cache engines: the block pool (`kv`), SGLang's radix page cache (`radix`), and the vLLM and
//! SGLang schedulers (`vllm`, `sglang`) behind one interface (`scheduler`); each pass's time
//! comes from the forward-pass timing models of `crate::timing`. An engine knows nothing about
//! routing or other workers.

pub(crate) mod kv;
pub(crate) mod radix;
pub(crate) mod scheduler;
pub(crate) mod sglang;
pub(crate) mod stall;
pub(crate) mod vllm;
