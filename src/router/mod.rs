//! Request routing: round robin and the KV-aware router.
