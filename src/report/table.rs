//! TEMPORARY PLACEHOLDER on the `cli` branch only: the report owner's branch provides the real
//! AIPerf-style console table (spec §8.1). This file exists so `run::execute` compiles before that
//! branch is merged; on merge, take the report branch's version of this file.

use super::Report;

/// Renders the console table (placeholder: not implemented on this branch).
pub fn render(_report: &Report) -> String {
    unimplemented!("report::table::render is provided by the report branch")
}
