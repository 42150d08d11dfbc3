//! Mooncake JSONL traces (spec §2.1–2.3, §2.8): plain or gzip, sessions, field aliases.
