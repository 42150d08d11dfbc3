//! KV-cache engines: the block pool (`kv`), the vLLM scheduler (`vllm`) and the forward-pass
//! timing models (`timing`). An engine knows nothing about routing or other workers.

pub mod kv;
pub mod timing;
pub mod vllm;
