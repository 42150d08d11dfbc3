//! Mooncake JSONL traces (spec §2.1–2.3, §2.8): plain or gzip, sessions, field aliases.

use crate::error::InputError;
use std::path::Path;

/// Loads a Mooncake JSONL trace (plain, or gzip when the name ends in `.gz`).
pub fn load_trace(path: &Path, trace_block_size: u32) -> Result<super::Workload, InputError> {
    let _ = (path, trace_block_size);
    todo!("trace loading")
}

/// Parses trace text; `name` is used in error messages (`name:line`).
pub fn parse_trace(text: &str, name: &str, trace_block_size: u32) -> Result<super::Workload, InputError> {
    let _ = (text, name, trace_block_size);
    todo!("trace parsing")
}
