//! Trace files: one module per `--trace-format`, each turning its records into the same shared
//! [`Workload`] (requests, prompt blocks, sessions, dependencies). This module owns what they share:
//! which format and files to read ([`TraceSpec`]), and reading lines of plain or gzip files with
//! `file:line` errors. Formats only parse: what a simulation reads of a workload (interned block
//! ids, the engine blocks of session streams) lives in `workload/`, which never calls back here.
//!
//! * [`mooncake`]: Mooncake JSONL rows, single- and multi-turn (spec §2.1–2.3).
//! * [`mooncake_delta`]: Mooncake rows whose later turns carry only the new input (spec §2.4).
//! * [`agentic`]: `agentic_mooncake` rows with request-level `wait_for` dependencies (§2.5).
//! * [`applied_compute`]: `applied_compute_agentic` session records (§2.6).
//! * [`dynamo`]: `dynamo.request.trace.v1` request traces, several files (§2.7).

pub(crate) mod agentic;
pub(crate) mod applied_compute;
pub(crate) mod dynamo;
pub mod mooncake;
pub(crate) mod mooncake_delta;

use super::Workload;
use crate::error::InputError;
use serde_json::Value;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// How the trace's timestamps will be used by the simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timing {
    /// Trace replay: first-turn timestamps drive arrivals (required, normalised to start at 0).
    OpenLoop,
    /// Concurrency-capped replay: timestamps only serve to infer think times; sessions keep file
    /// order and have no first arrival.
    ClosedLoop,
}

/// The trace formats of `--trace-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TraceFormat {
    Mooncake,
    MooncakeDelta,
    AgenticMooncake,
    AppliedComputeAgentic,
    Dynamo,
}

impl TraceFormat {
    /// Every format, in the order of the CLI help.
    pub const ALL: [TraceFormat; 5] = [
        TraceFormat::Mooncake,
        TraceFormat::MooncakeDelta,
        TraceFormat::AgenticMooncake,
        TraceFormat::AppliedComputeAgentic,
        TraceFormat::Dynamo,
    ];

    /// DynoSim's spelling (`--trace-format`, sweep `workload.trace_format`).
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Mooncake => "mooncake",
            TraceFormat::MooncakeDelta => "mooncake-delta",
            TraceFormat::AgenticMooncake => "agentic_mooncake",
            TraceFormat::AppliedComputeAgentic => "applied_compute_agentic",
            TraceFormat::Dynamo => "dynamo",
        }
    }

    /// Parses DynoSim's spelling.
    pub fn from_name(name: &str) -> Option<TraceFormat> {
        TraceFormat::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// What to read: the files, their format and how the simulation will use their timestamps.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceSpec {
    pub format: TraceFormat,
    /// One file, or several shards for [`TraceFormat::Dynamo`].
    pub paths: Vec<PathBuf>,
    /// Tokens per hash id; `None` = the format's default (512, or the size embedded in a Dynamo
    /// trace).
    pub trace_block_size: Option<u32>,
    pub timing: Timing,
    /// `applied_compute_agentic` only: fraction of each session's first prompt shared within
    /// its prefix group, and the number of groups (`--trace-shared-prefix-ratio`,
    /// `--trace-num-prefix-groups`).
    pub shared_prefix_ratio: f64,
    pub num_prefix_groups: u32,
}

/// Tokens per hash id when neither the flag nor the trace says.
pub const DEFAULT_TRACE_BLOCK_SIZE: u32 = 512;

impl TraceSpec {
    /// Reads the files into a workload.
    pub fn load(&self) -> Result<Workload, InputError> {
        let tbs = self.trace_block_size.unwrap_or(DEFAULT_TRACE_BLOCK_SIZE);
        let one = || {
            self.paths
                .first()
                .map(PathBuf::as_path)
                .unwrap_or(Path::new(""))
        };
        match self.format {
            TraceFormat::Mooncake => mooncake::load_trace_with(one(), tbs, self.timing),
            TraceFormat::MooncakeDelta => mooncake_delta::load(one(), tbs, self.timing),
            TraceFormat::AgenticMooncake => agentic::load(one(), tbs),
            TraceFormat::AppliedComputeAgentic => {
                applied_compute::load(one(), tbs, self.shared_prefix_ratio, self.num_prefix_groups)
            }
            TraceFormat::Dynamo => dynamo::load(&self.paths, self.trace_block_size, self.timing),
        }
    }
}

/// Calls `line` with each line (1-based number, text without the newline handling left to the
/// caller) of a plain or gzip (`.gz` name, multi-member) file, reusing one buffer.
pub(crate) fn for_each_line(
    path: &Path,
    mut line: impl FnMut(u64, &str) -> Result<(), InputError>,
) -> Result<(), InputError> {
    let name = path.display().to_string();
    let gz = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".gz"));
    if path.is_dir() {
        return Err(InputError::new(format!(
            "{name}: is a directory, expected a trace file"
        )));
    }
    let file = File::open(path)
        .map_err(|e| InputError::new(format!("{name}: cannot open trace file: {e}")))?;
    let mut reader: Box<dyn BufRead> = if gz {
        Box::new(BufReader::new(flate2::read::MultiGzDecoder::new(
            BufReader::new(file),
        )))
    } else {
        Box::new(BufReader::new(file))
    };
    let mut buf = Vec::with_capacity(4096);
    let mut line_no = 0u64;
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf).map_err(|e| {
            let what = if gz { "gzip data" } else { "file" };
            InputError::new(format!("{name}:{}: cannot read {what}: {e}", line_no + 1))
        })?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let text = std::str::from_utf8(&buf).map_err(|e| {
            let hint = if !gz && line_no == 1 && buf.starts_with(&[0x1f, 0x8b]) {
                " (the file looks gzip-compressed; give it a .gz name)"
            } else {
                ""
            };
            InputError::new(format!(
                "{name}:{line_no}: not valid UTF-8 text (bad byte at offset {}){hint}",
                e.valid_up_to()
            ))
        })?;
        line(line_no, text)?;
    }
    Ok(())
}

/// The content of a line without its line ending, or `None` for a blank line.
pub(crate) fn content_of(line: &str) -> Option<&str> {
    let line = line.strip_suffix('\n').unwrap_or(line);
    let line = line.strip_suffix('\r').unwrap_or(line);
    (!line.trim().is_empty()).then_some(line)
}

/// Parses one JSON line into `T`; errors name `name:line` and, for serde errors, the column.
pub(crate) fn parse_json_line<T: serde::de::DeserializeOwned>(
    name: &str,
    line_no: u64,
    line: &str,
) -> Result<T, InputError> {
    serde_json::from_str(line).map_err(|e| {
        let full = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let msg = full.strip_suffix(&suffix).unwrap_or(&full);
        let at = match e.column() {
            0 => String::new(),
            col => format!(" (column {col})"),
        };
        if e.is_data() {
            InputError::new(format!("{name}:{line_no}: {msg}{at}"))
        } else {
            InputError::new(format!(
                "{name}:{line_no}: invalid JSON: {msg}{at}; each line must be one JSON object"
            ))
        }
    })
}

/// Short description of a JSON value's type, for error messages.
pub(crate) fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("a boolean ({b})"),
        Value::Number(n) => {
            if n.is_u64() {
                format!("the integer {n}")
            } else if n.is_i64() {
                format!("the negative integer {n}")
            } else if n
                .as_f64()
                .is_some_and(|f| f.fract() == 0.0 && f.abs() >= 9.2e18)
            {
                // serde_json reads integers beyond 64 bits as floats.
                format!("an integer out of the 64-bit range ({n})")
            } else {
                format!("the non-integer number {n}")
            }
        }
        Value::String(_) => "a string".into(),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "an object".into(),
    }
}
