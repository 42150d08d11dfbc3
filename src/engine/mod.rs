//! KV-cache engines: block pool, vLLM scheduler, timing models.
