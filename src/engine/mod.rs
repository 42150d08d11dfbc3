//! KV-cache engines: the block pool (`kv`), SGLang's radix page cache (`radix`), the vLLM and
//! SGLang schedulers (`vllm`, `sglang`) behind one interface (`scheduler`), and the forward-pass
//! timing models (`timing`). An engine knows nothing about routing or other workers.

pub mod kv;
pub mod radix;
pub mod scheduler;
pub mod sglang;
pub mod timing;
pub mod vllm;
