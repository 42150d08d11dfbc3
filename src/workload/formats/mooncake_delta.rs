//! `mooncake-delta` traces (spec §2.4): Mooncake rows whose later turns carry only the new input.

use super::Timing;
use crate::error::InputError;
use crate::workload::Workload;
use std::path::Path;

/// Reads a `mooncake-delta` file.
pub fn load(path: &Path, _trace_block_size: u32, _timing: Timing) -> Result<Workload, InputError> {
    Err(InputError::new(format!(
        "{}: --trace-format mooncake-delta is not supported yet by dynosim",
        path.display()
    )))
}
