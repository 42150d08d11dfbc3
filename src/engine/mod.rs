//! KV-cache engines: the block pool (`kv`), SGLang's radix page cache (`radix`), and the vLLM and
//! SGLang schedulers (`vllm`, `sglang`) behind one interface (`scheduler`); each pass's time
//! comes from the forward-pass timing models of `crate::timing`. An engine knows nothing about
//! routing or other workers.

pub mod kv;
pub mod radix;
pub mod scheduler;
pub mod sglang;
pub mod stall;
pub mod vllm;
