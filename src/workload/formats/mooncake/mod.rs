//! Mooncake JSONL traces (spec §2.1–2.3, §2.8): plain or gzip, sessions, field aliases.
//!
//! This module owns reading a Mooncake trace file into a [`Workload`]: line-by-line streaming
//! parse with precise `file:line` errors (with a fast scanner for well-formed rows), session
//! grouping, think-time derivation and timestamp normalisation.
//! The arrival speed-up ratio is *not* applied here (the simulator does it, spec §2.8).
//!
//! Conventions (facts from DynoSim 1.4.2 unless noted):
//! * One JSON object per non-blank line; line numbers are 1-based and count blank lines.
//! * Aliases: `timestamp`/`created_time`, `input_length`/`input_tokens`,
//!   `output_length`/`output_tokens`, `delay`/`delay_ms`. Giving both names of one field is an
//!   error (DynoSim rejects it as a duplicate field). `null` means "absent". Unknown fields are
//!   ignored. Integers must be JSON integers (`10.0` is rejected, as in DynoSim).
//! * `input_length` defaults to `len(hash_ids) × trace_block_size` and is clamped to it; the
//!   clamped rows are counted in one warning. A prompt of 0 tokens is an error.
//! * Rows with the same `session_id` form one session in file order; rows without one are the
//!   session `request_<line>`. Turn k>0 waits `delay` after turn k−1 completes, else the
//!   difference to the session's previous timestamp, else 0.
//! * [`Timing::OpenLoop`] (trace replay): every session's first row needs a timestamp; arrivals
//!   are shifted so the earliest is 0 and sessions are stably sorted by arrival.
//!   [`Timing::ClosedLoop`] (`--replay-concurrency`): timestamps are ignored for admission, so
//!   they are optional, sessions keep file order (DynoSim admits them in file order) and every
//!   `first_arrival_ms` is `None`.
//! * Request `uuid` = position in `Workload::requests` + 1 (DynoSim draws random UUIDs for
//!   trace rows; ours are deterministic).
//! * `output_token_ids`, when given, must be a list of `u32` token ids as long as
//!   `output_length` (DynoSim refuses the row otherwise); their values are not used.
//! * Only the first `ceil(input_length / trace_block_size)` hash ids of a row (those covering
//!   the prompt) are interned and stored; the rest can never influence a simulation.
//!
//! Layout: `builder` groups rows into sessions and builds the workload; `rows` type-checks a
//! row through `serde_json::Value`s (the reference path, and the only source of row errors);
//! `scan` reads well-formed rows fast (a hand-written scanner, then serde without `Value`s) and
//! gives up on anything else; `tests` holds the tests of all three.

mod builder;
mod rows;
mod scan;
#[cfg(test)]
mod tests;

use super::for_each_line;
pub use super::Timing;
use crate::error::InputError;
use crate::workload::Workload;
use builder::TraceBuilder;
use std::path::Path;

/// Loads a Mooncake JSONL trace (plain, or gzip when the name ends in `.gz`).
pub fn load_trace(path: &Path, trace_block_size: u32) -> Result<Workload, InputError> {
    load_trace_with(path, trace_block_size, Timing::OpenLoop)
}

/// Parses trace text; `name` is used in error messages (`name:line`).
pub fn parse_trace(text: &str, name: &str, trace_block_size: u32) -> Result<Workload, InputError> {
    parse_trace_with(text, name, trace_block_size, Timing::OpenLoop)
}

/// [`load_trace`] with an explicit [`Timing`] (use `ClosedLoop` for `--replay-concurrency`).
pub fn load_trace_with(
    path: &Path,
    trace_block_size: u32,
    timing: Timing,
) -> Result<Workload, InputError> {
    let name = path.display().to_string();
    let mut b = TraceBuilder::new(&name, trace_block_size, timing)?;
    for_each_line(path, |line_no, line| b.push_line(line_no, line))?;
    b.finish()
}

/// [`parse_trace`] with an explicit [`Timing`].
pub fn parse_trace_with(
    text: &str,
    name: &str,
    trace_block_size: u32,
    timing: Timing,
) -> Result<Workload, InputError> {
    let mut b = TraceBuilder::new(name, trace_block_size, timing)?;
    for (idx, line) in text.split('\n').enumerate() {
        b.push_line(idx as u64 + 1, line)?;
    }
    b.finish()
}
