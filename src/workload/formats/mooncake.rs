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

pub use super::Timing;
use super::{describe, for_each_line, BlockInterner};
use crate::error::InputError;
use crate::workload::{Content, RequestSpec, SessionSpec, Workload};
use rustc_hash::FxHashMap as HashMap;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Number, Value};
use std::fmt;
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

/// One parsed turn, in file order.
struct Turn {
    session: u32,
    input_length: u32,
    output_length: u32,
    content: Content,
    delay_after_previous_ms: f64,
    priority: i32,
    strict_priority: u32,
}

/// A session under construction.
struct Session {
    id: String,
    first_ts: Option<f64>,
    last_ts: Option<f64>,
    num_turns: u32,
}

/// Accumulates rows; shared by the file and in-memory entry points.
struct TraceBuilder<'a> {
    name: &'a str,
    tbs: u32,
    timing: Timing,
    interner: BlockInterner,
    turns: Vec<Turn>,
    sessions: Vec<Session>,
    session_index: HashMap<String, u32>,
    clamped_rows: u64,
    first_clamped_line: u64,
    /// Hash ids of the current line (reused across lines).
    ids: Vec<u64>,
    /// Try [`fast_row`] before the slow path (turned off only by tests, for comparison).
    fast_path: bool,
}

impl<'a> TraceBuilder<'a> {
    fn new(name: &'a str, tbs: u32, timing: Timing) -> Result<Self, InputError> {
        if tbs == 0 {
            return Err(InputError::new(format!(
                "{name}: trace block size must be at least 1 (--trace-block-size), got 0"
            )));
        }
        Ok(TraceBuilder {
            name,
            tbs,
            timing,
            interner: BlockInterner::default(),
            turns: Vec::new(),
            sessions: Vec::new(),
            session_index: HashMap::default(),
            clamped_rows: 0,
            first_clamped_line: 0,
            ids: Vec::new(),
            fast_path: true,
        })
    }

    fn err(&self, line: u64, msg: impl fmt::Display) -> InputError {
        InputError::new(format!("{}:{line}: {msg}", self.name))
    }

    fn push_line(&mut self, line_no: u64, line: &str) -> Result<(), InputError> {
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            return Ok(());
        }
        if line_no == 1 && line.starts_with('\u{feff}') {
            return Err(self.err(
                line_no,
                "the file starts with a UTF-8 byte-order mark (BOM); save it as UTF-8 without BOM",
            ));
        }
        let mut ids = std::mem::take(&mut self.ids);
        let fast = if self.fast_path {
            fast_row(line, &mut ids)
        } else {
            None
        };
        let row = match fast {
            Some(row) => Ok(row),
            None => self.slow_row(line_no, line, &mut ids),
        };
        let result = row.and_then(|row| self.add_row(line_no, row, &ids));
        self.ids = ids;
        result
    }

    /// Parses a line through `serde_json::Value`s and type-checks it: the reference behaviour,
    /// and the only source of row error messages (see [`fast_row`]). Fills `ids`.
    fn slow_row(&self, line_no: u64, line: &str, ids: &mut Vec<u64>) -> Result<Row, InputError> {
        let raw: RawRow = serde_json::from_str(line).map_err(|e| {
            // serde_json's position is within this one line: report only its column.
            let full = e.to_string();
            let suffix = format!(" at line {} column {}", e.line(), e.column());
            let msg = full.strip_suffix(&suffix).unwrap_or(&full);
            let at = match e.column() {
                0 => String::new(),
                col => format!(" (column {col})"),
            };
            if e.is_data() {
                self.err(line_no, format_args!("{msg}{at}"))
            } else {
                self.err(
                    line_no,
                    format_args!("invalid JSON: {msg}{at}; each line must be one JSON object"),
                )
            }
        })?;
        if let Some((first, second)) = raw.duplicate {
            return Err(self.err(
                line_no,
                format_args!(
                    "fields \"{first}\" and \"{second}\" are the same field; give only one"
                ),
            ));
        }
        self.check_row(line_no, raw, ids)
    }

    /// Type-checks the known fields of a row; the hash ids go to `ids`.
    fn check_row(&self, line: u64, raw: RawRow, ids: &mut Vec<u64>) -> Result<Row, InputError> {
        let field_err = |key: &str, expected: &str, v: &Value| {
            self.err(
                line,
                format_args!(
                    "field \"{key}\": expected {expected}, found {}",
                    describe(v)
                ),
            )
        };
        let missing = |key: &str, expected: &str| {
            self.err(
                line,
                format_args!("missing required field \"{key}\" ({expected})"),
            )
        };

        ids.clear();
        match raw.hash_ids {
            None => {
                return Err(missing(
                    "hash_ids",
                    "a non-empty list of non-negative integers",
                ))
            }
            Some(Value::Array(items)) => {
                if items.is_empty() {
                    return Err(self.err(
                        line,
                        "field \"hash_ids\": expected a non-empty list of non-negative integers, \
                         found an empty list",
                    ));
                }
                ids.reserve(items.len());
                for (i, item) in items.iter().enumerate() {
                    match item.as_u64() {
                        Some(id) => ids.push(id),
                        None => {
                            return Err(self.err(
                                line,
                                format_args!(
                                    "field \"hash_ids\": expected a non-empty list of \
                                     non-negative integers, element {i} is {}",
                                    describe(item)
                                ),
                            ))
                        }
                    }
                }
            }
            Some(v) => {
                return Err(field_err(
                    "hash_ids",
                    "a non-empty list of non-negative integers",
                    &v,
                ))
            }
        }

        let output_length = match raw.output_length {
            None => return Err(missing("output_length", "a non-negative integer")),
            Some((key, v)) => match v.as_u64() {
                Some(n) => u32::try_from(n).map_err(|_| {
                    self.err(
                        line,
                        format_args!("field \"{key}\": {n} is too large (at most {})", u32::MAX),
                    )
                })?,
                None => return Err(field_err(key, "a non-negative integer", &v)),
            },
        };

        let input_length = match raw.input_length {
            None => None,
            Some((key, v)) => match v.as_u64() {
                Some(n) => Some((key, n)),
                None => return Err(field_err(key, "a non-negative integer", &v)),
            },
        };

        let timestamp = match raw.timestamp {
            None => None,
            Some((key, v)) => match v.as_f64() {
                Some(t) if v.is_number() && t.is_finite() => Some(t),
                _ => return Err(field_err(key, "a number (milliseconds)", &v)),
            },
        };

        let delay = match raw.delay {
            None => None,
            Some((key, v)) => match v.as_f64() {
                Some(d) if v.is_number() && d.is_finite() && d >= 0.0 => Some((key, d)),
                _ => return Err(field_err(key, "a non-negative number (milliseconds)", &v)),
            },
        };

        let session_id = match raw.session_id {
            None => None,
            Some(Value::String(s)) => Some(s),
            Some(v) => return Err(field_err("session_id", "a string", &v)),
        };

        let priority = match raw.priority {
            None => 0,
            Some(v) => match v.as_i64().and_then(|p| i32::try_from(p).ok()) {
                Some(p) => p,
                None => return Err(field_err("priority", "a 32-bit signed integer", &v)),
            },
        };

        let strict_priority = match raw.strict_priority {
            None => 0,
            Some(v) => match v.as_u64().and_then(|p| u32::try_from(p).ok()) {
                Some(p) => p,
                None => {
                    return Err(field_err(
                        "strict_priority",
                        "a 32-bit non-negative integer",
                        &v,
                    ))
                }
            },
        };

        let output_ids = match raw.output_token_ids {
            None => None,
            Some(Value::Array(items)) => {
                if let Some((i, item)) = items
                    .iter()
                    .enumerate()
                    .find(|(_, t)| t.as_u64().is_none_or(|t| t > u64::from(u32::MAX)))
                {
                    return Err(self.err(
                        line,
                        format_args!(
                            "field \"output_token_ids\": expected a list of token ids (integers \
                             from 0 to {}), element {i} is {}",
                            u32::MAX,
                            describe(item)
                        ),
                    ));
                }
                Some(items.len() as u64)
            }
            Some(v) => {
                return Err(field_err(
                    "output_token_ids",
                    "a list of token ids (integers)",
                    &v,
                ))
            }
        };

        Ok(Row {
            output_length,
            input_length,
            timestamp,
            delay,
            session_id,
            priority,
            strict_priority,
            output_ids,
        })
    }

    /// Adds a checked row whose hash ids are `hash_ids`.
    fn add_row(&mut self, line: u64, row: Row, hash_ids: &[u64]) -> Result<(), InputError> {
        if let Some(n) = row
            .output_ids
            .filter(|&n| n != u64::from(row.output_length))
        {
            // DynoSim refuses the row: the planned output tokens fix the output length.
            return Err(self.err(
                line,
                format_args!(
                    "field \"output_token_ids\": {n} token ids, but output_length is {} (they \
                     must match)",
                    row.output_length
                ),
            ));
        }
        let tbs = u64::from(self.tbs);
        let capacity = hash_ids.len() as u64 * tbs;
        let input_length = match row.input_length {
            None => capacity,
            Some((_, n)) if n > capacity => {
                self.clamped_rows += 1;
                if self.first_clamped_line == 0 {
                    self.first_clamped_line = line;
                }
                capacity
            }
            Some((key, 0)) => {
                return Err(self.err(
                    line,
                    format_args!("field \"{key}\": expected a positive integer, found 0"),
                ))
            }
            Some((_, n)) => n,
        };
        let input_length = u32::try_from(input_length).map_err(|_| {
            self.err(
                line,
                format_args!(
                    "prompt of {input_length} tokens is too long (at most {} tokens)",
                    u32::MAX
                ),
            )
        })?;

        // Session lookup (rows without an id are the session `request_<line>`).
        let key = row.session_id.unwrap_or_else(|| format!("request_{line}"));
        let session = match self.session_index.get(&key) {
            Some(&s) => s,
            None => {
                let s = u32::try_from(self.sessions.len())
                    .map_err(|_| self.err(line, "too many sessions"))?;
                if self.timing == Timing::OpenLoop && row.timestamp.is_none() {
                    return Err(self.err(
                        line,
                        format_args!(
                            "missing field \"timestamp\" on the first row of session \"{key}\" \
                             (trace replay needs each session's arrival time in ms)"
                        ),
                    ));
                }
                self.sessions.push(Session {
                    id: key.clone(),
                    first_ts: row.timestamp,
                    last_ts: None,
                    num_turns: 0,
                });
                self.session_index.insert(key, s);
                s
            }
        };

        let sess = &self.sessions[session as usize];
        let delay_after_previous_ms = if sess.num_turns == 0 {
            if let Some((dkey, d)) = row.delay {
                if d != 0.0 {
                    return Err(self.err(
                        line,
                        format_args!(
                            "field \"{dkey}\": the first row of session \"{}\" cannot have a \
                             non-zero delay (found {d})",
                            sess.id
                        ),
                    ));
                }
            }
            0.0
        } else if let Some((_, d)) = row.delay {
            d
        } else if let Some(ts) = row.timestamp {
            let Some(prev) = sess.last_ts else {
                return Err(self.err(
                    line,
                    format_args!(
                        "cannot infer the delay of this turn of session \"{}\": it has a \
                         \"timestamp\" but no earlier row of the session has one (give \"delay\")",
                        sess.id
                    ),
                ));
            };
            let d = ts - prev;
            if !(d.is_finite() && d >= 0.0) {
                return Err(self.err(
                    line,
                    format_args!(
                        "field \"timestamp\": {ts} is earlier than the previous timestamp {prev} \
                         of session \"{}\" (turns must be in time order, or give \"delay\")",
                        sess.id
                    ),
                ));
            }
            d
        } else {
            0.0
        };

        // Only the ids covering the prompt matter.
        let needed = (u64::from(input_length)).div_ceil(tbs) as usize;
        let content = self
            .interner
            .push_prompt(hash_ids[..needed].iter().copied())
            .ok_or_else(|| self.err(line, "too many hash ids in the trace (limit 2^32)"))?;

        let sess = &mut self.sessions[session as usize];
        sess.num_turns += 1;
        if row.timestamp.is_some() {
            sess.last_ts = row.timestamp;
        }
        self.turns.push(Turn {
            session,
            input_length,
            output_length: row.output_length,
            content,
            delay_after_previous_ms,
            priority: row.priority,
            strict_priority: row.strict_priority,
        });
        if self.turns.len() > u32::MAX as usize {
            return Err(self.err(line, "too many requests"));
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Workload, InputError> {
        if self.turns.is_empty() {
            return Err(InputError::new(format!(
                "{}: the trace contains no requests (the file is empty or has only blank lines)",
                self.name
            )));
        }

        // Session order: by normalised first arrival (open loop), else file order; stable.
        let mut order: Vec<u32> = (0..self.sessions.len() as u32).collect();
        let min_ts = match self.timing {
            Timing::OpenLoop => {
                let min = self
                    .sessions
                    .iter()
                    .filter_map(|s| s.first_ts)
                    .min_by(f64::total_cmp)
                    .unwrap_or(0.0);
                order.sort_by(|&a, &b| {
                    let ta = self.sessions[a as usize].first_ts.unwrap_or(0.0);
                    let tb = self.sessions[b as usize].first_ts.unwrap_or(0.0);
                    ta.total_cmp(&tb)
                });
                Some(min)
            }
            Timing::ClosedLoop => None,
        };
        let mut rank = vec![0u32; self.sessions.len()];
        for (pos, &s) in order.iter().enumerate() {
            rank[s as usize] = pos as u32;
        }

        // Requests grouped by session rank; a stable sort keeps turn (file) order.
        let mut turn_order: Vec<u32> = (0..self.turns.len() as u32).collect();
        turn_order.sort_by_key(|&t| rank[self.turns[t as usize].session as usize]);

        let mut sessions = Vec::with_capacity(order.len());
        let mut first_request = 0u32;
        for &s in &order {
            let src = &mut self.sessions[s as usize];
            sessions.push(SessionSpec {
                id: std::mem::take(&mut src.id),
                first_arrival_ms: match min_ts {
                    Some(min) => src.first_ts.map(|t| t - min),
                    None => None,
                },
                first_request,
                num_turns: src.num_turns,
            });
            first_request += src.num_turns;
        }

        let mut requests = Vec::with_capacity(self.turns.len());
        let mut turn_in_session = 0u32;
        let mut prev_session = u32::MAX;
        for (pos, &t) in turn_order.iter().enumerate() {
            let src = &self.turns[t as usize];
            let session = rank[src.session as usize];
            if session != prev_session {
                turn_in_session = 0;
                prev_session = session;
            }
            requests.push(RequestSpec {
                uuid: pos as u64 + 1,
                input_length: src.input_length,
                output_length: src.output_length,
                content: src.content,
                session,
                turn: turn_in_session,
                delay_after_previous_ms: src.delay_after_previous_ms,
                priority: src.priority,
                strict_priority: src.strict_priority,
            });
            turn_in_session += 1;
        }

        let mut warnings = Vec::new();
        if self.clamped_rows > 0 {
            let (rows, were) = if self.clamped_rows == 1 {
                ("row", "was")
            } else {
                ("rows", "were")
            };
            warnings.push(format!(
                "{}: {} {rows} had input_length above len(hash_ids) x {} and {were} clamped \
                 (first at line {})",
                self.name, self.clamped_rows, self.tbs, self.first_clamped_line
            ));
        }

        let flat = sessions.iter().all(|s| s.num_turns == 1);
        let num_distinct_blocks = self.interner.num_distinct();
        Ok(Workload {
            sessions,
            requests,
            block_ids: self.interner.block_ids,
            trace_block_size: self.tbs,
            num_distinct_blocks,
            flat,
            warnings,
            dependencies: Default::default(),
        })
    }
}

/// A type-checked row (its hash ids are kept apart, in a buffer reused across lines).
#[derive(Debug, Clone, PartialEq)]
struct Row {
    output_length: u32,
    /// (field name used, value)
    input_length: Option<(&'static str, u64)>,
    timestamp: Option<f64>,
    delay: Option<(&'static str, f64)>,
    session_id: Option<String>,
    priority: i32,
    strict_priority: u32,
    /// Number of `output_token_ids`, when given.
    output_ids: Option<u64>,
}

/// The known fields of a row as raw JSON values (`null` = absent), with the alias that was used.
#[derive(Default)]
struct RawRow {
    timestamp: Option<(&'static str, Value)>,
    input_length: Option<(&'static str, Value)>,
    output_length: Option<(&'static str, Value)>,
    delay: Option<(&'static str, Value)>,
    hash_ids: Option<Value>,
    session_id: Option<Value>,
    priority: Option<Value>,
    strict_priority: Option<Value>,
    output_token_ids: Option<Value>,
    /// First pair of keys naming the same field, if any.
    duplicate: Option<(&'static str, &'static str)>,
}

/// Canonical field of each known key (aliases share a slot).
const KEYS: &[(&str, usize)] = &[
    ("timestamp", 0),
    ("created_time", 0),
    ("input_length", 1),
    ("input_tokens", 1),
    ("output_length", 2),
    ("output_tokens", 2),
    ("delay", 3),
    ("delay_ms", 3),
    ("hash_ids", 4),
    ("session_id", 5),
    ("priority", 6),
    ("strict_priority", 7),
    ("output_token_ids", 8),
];

impl<'de> de::Deserialize<'de> for RawRow {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(RowVisitor)
    }
}

struct RowVisitor;

impl<'de> Visitor<'de> for RowVisitor {
    type Value = RawRow;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object (one trace row)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawRow, A::Error> {
        let mut row = RawRow::default();
        let mut seen: [Option<&'static str>; 9] = [None; 9];
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let Some(&(name, slot)) = KEYS.iter().find(|(k, _)| *k == key) else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            let value: Value = map.next_value()?;
            if let Some(prev) = seen[slot] {
                row.duplicate.get_or_insert((prev, name));
                continue;
            }
            seen[slot] = Some(name);
            if value.is_null() {
                continue;
            }
            match slot {
                0 => row.timestamp = Some((name, value)),
                1 => row.input_length = Some((name, value)),
                2 => row.output_length = Some((name, value)),
                3 => row.delay = Some((name, value)),
                4 => row.hash_ids = Some(value),
                5 => row.session_id = Some(value),
                6 => row.priority = Some(value),
                7 => row.strict_priority = Some(value),
                _ => row.output_token_ids = Some(value),
            }
        }
        Ok(row)
    }
}

/// Fast path: parses a line into typed fields without building `serde_json::Value`s (nothing is
/// allocated per field or per hash id; the ids go to `ids`). It never reports an error: `None`
/// means "not plainly a valid row" (invalid JSON, not an object, two names of one field, `null`,
/// non-list or empty `hash_ids`, an id that is not a u64, a field of the wrong type or out of
/// range, ...), and the caller then re-parses the line with [`TraceBuilder::slow_row`], which
/// gives the exact error. A returned row is the one the slow path gives: scalars are read as
/// [`Number`] (what a `Value` holds) and converted exactly as in [`TraceBuilder::check_row`].
///
/// Lines in the usual shape (known fields only, plain integers, strings without escapes) are
/// read by the hand-written [`scan_row`]; any other line by serde (see [`serde_row`]).
fn fast_row(line: &str, ids: &mut Vec<u64>) -> Option<Row> {
    let raw = match scan_row(line, ids) {
        Some(raw) => raw,
        None => serde_row(line, ids)?,
    };
    raw.into_row(ids)
}

/// Reads a line with serde into typed fields (see [`FastRowSeed`]), else `None`. Appends the
/// hash ids to `ids` (cleared first).
fn serde_row(line: &str, ids: &mut Vec<u64>) -> Option<FastRaw> {
    ids.clear();
    let mut de = serde_json::Deserializer::from_str(line);
    let raw = FastRowSeed { ids: &mut *ids }.deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(raw)
}

/// The known fields of a row as read by [`fast_row`] (`null` = absent).
#[derive(Default)]
struct FastRaw {
    timestamp: Option<Number>,
    input_length: Option<(&'static str, Number)>,
    output_length: Option<Number>,
    delay: Option<(&'static str, Number)>,
    /// `hash_ids` was given (as a list; its ids are in the seed's buffer).
    has_ids: bool,
    session_id: Option<String>,
    priority: Option<Number>,
    strict_priority: Option<Number>,
    /// Number of `output_token_ids` (each a u32), when given.
    output_ids: Option<u64>,
}

impl FastRaw {
    /// The checks of [`TraceBuilder::check_row`], for rows that pass them.
    fn into_row(self, ids: &[u64]) -> Option<Row> {
        if !self.has_ids || ids.is_empty() {
            return None;
        }
        let output_length = u32::try_from(self.output_length?.as_u64()?).ok()?;
        let input_length = match self.input_length {
            None => None,
            Some((key, n)) => Some((key, n.as_u64()?)),
        };
        let timestamp = match self.timestamp {
            None => None,
            Some(n) => Some(n.as_f64().filter(|t| t.is_finite())?),
        };
        let delay = match self.delay {
            None => None,
            Some((key, n)) => Some((key, n.as_f64().filter(|d| d.is_finite() && *d >= 0.0)?)),
        };
        let priority = match self.priority {
            None => 0,
            Some(n) => i32::try_from(n.as_i64()?).ok()?,
        };
        let strict_priority = match self.strict_priority {
            None => 0,
            Some(n) => u32::try_from(n.as_u64()?).ok()?,
        };
        Some(Row {
            output_length,
            input_length,
            timestamp,
            delay,
            session_id: self.session_id,
            priority,
            strict_priority,
            output_ids: self.output_ids,
        })
    }
}

/// Reads a line in the usual shape, else `None` (then [`FastRowSeed`] takes over): one object
/// of known, unescaped keys, each at most once, whose values are `null`, a number (a plain
/// non-negative integer is read here, any other number token by serde as a lone [`Number`]),
/// an unescaped string (`session_id`) or a list of plain non-negative integers (`hash_ids`),
/// with JSON whitespace anywhere between tokens. Appends the hash ids to `ids` (cleared first).
fn scan_row(line: &str, ids: &mut Vec<u64>) -> Option<FastRaw> {
    ids.clear();
    let mut sc = Scan { s: line, pos: 0 };
    let mut row = FastRaw::default();
    let mut seen = [false; 9];
    sc.ws();
    sc.eat(b'{')?;
    sc.ws();
    if sc.eat(b'}').is_none() {
        loop {
            sc.eat(b'"')?;
            let key = sc.plain_str()?;
            let &(name, slot) = KEYS.iter().find(|(k, _)| *k == key)?;
            if std::mem::replace(&mut seen[slot], true) {
                return None;
            }
            sc.ws();
            sc.eat(b':')?;
            sc.ws();
            match slot {
                0 => row.timestamp = sc.nullable_number()?,
                1 => row.input_length = sc.nullable_number()?.map(|n| (name, n)),
                2 => row.output_length = sc.nullable_number()?,
                3 => row.delay = sc.nullable_number()?.map(|n| (name, n)),
                4 => {
                    sc.eat(b'[')?;
                    sc.ws();
                    if sc.eat(b']').is_none() {
                        loop {
                            ids.push(sc.plain_u64()?);
                            sc.ws();
                            if sc.eat(b']').is_some() {
                                break;
                            }
                            sc.eat(b',')?;
                            sc.ws();
                        }
                    }
                    row.has_ids = true;
                }
                5 => {
                    row.session_id = if sc.null() {
                        None
                    } else {
                        sc.eat(b'"')?;
                        Some(sc.plain_str()?.to_owned())
                    }
                }
                6 => row.priority = sc.nullable_number()?,
                7 => row.strict_priority = sc.nullable_number()?,
                // Rare: read by serde (`FastRowSeed`).
                _ => return None,
            }
            sc.ws();
            if sc.eat(b'}').is_some() {
                break;
            }
            sc.eat(b',')?;
            sc.ws();
        }
    }
    sc.ws();
    (sc.pos == line.len()).then_some(row)
}

/// A byte cursor over one line, for [`scan_row`].
struct Scan<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Scan<'a> {
    /// Skips JSON whitespace.
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.as_bytes().get(self.pos) {
            self.pos += 1;
        }
    }

    /// Consumes `c` if it is next.
    fn eat(&mut self, c: u8) -> Option<()> {
        (self.s.as_bytes().get(self.pos) == Some(&c)).then(|| self.pos += 1)
    }

    /// Consumes a `null` literal if it is next.
    fn null(&mut self) -> bool {
        let found = self.s.as_bytes()[self.pos..].starts_with(b"null");
        if found {
            self.pos += 4;
        }
        found
    }

    /// The rest of a string (its opening quote consumed) when it has no escape and no control
    /// character (serde rejects those), consuming the closing quote.
    fn plain_str(&mut self) -> Option<&'a str> {
        let start = self.pos;
        loop {
            match *self.s.as_bytes().get(self.pos)? {
                b'"' => break,
                b'\\' | 0..=0x1f => return None,
                _ => self.pos += 1,
            }
        }
        self.pos += 1;
        Some(&self.s[start..self.pos - 1])
    }

    /// The longest run of bytes that can occur in a JSON number.
    fn number_token(&mut self) -> &'a str {
        let start = self.pos;
        while let Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') =
            self.s.as_bytes().get(self.pos)
        {
            self.pos += 1;
        }
        &self.s[start..self.pos]
    }

    /// A run of digits without a leading zero that fits a u64: what serde hands to `visit_u64`
    /// (`-0`, fractions, exponents and overflows are floats or errors). Whatever follows the
    /// digits is left to the caller, which accepts only a delimiter or whitespace there.
    fn plain_u64(&mut self) -> Option<u64> {
        let bytes = &self.s.as_bytes()[self.pos..];
        let mut n = 0u64;
        let mut len = 0;
        while let Some(&b) = bytes.get(len) {
            let digit = b.wrapping_sub(b'0');
            if digit > 9 {
                break;
            }
            n = n.checked_mul(10)?.checked_add(u64::from(digit))?;
            len += 1;
        }
        if len == 0 || (len > 1 && bytes[0] == b'0') {
            return None;
        }
        self.pos += len;
        Some(n)
    }

    /// `null` (as `Some(None)`) or a number. Serde reads a number token on its own exactly as in
    /// context: its number grammar stops at the first byte that cannot continue the number, and
    /// the token ends at such a byte (or is rejected).
    fn nullable_number(&mut self) -> Option<Option<Number>> {
        if self.null() {
            return Some(None);
        }
        let start = self.pos;
        if let Some(n) = self.plain_u64() {
            if !matches!(
                self.s.as_bytes().get(self.pos),
                Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
            ) {
                return Some(Some(Number::from(n)));
            }
            self.pos = start;
        }
        let token = self.number_token();
        serde_json::from_str::<Number>(token).ok().map(Some)
    }
}

/// Reads one row for [`fast_row`]; any surprise is an error (the slow path takes over).
struct FastRowSeed<'a> {
    ids: &'a mut Vec<u64>,
}

impl<'de> DeserializeSeed<'de> for FastRowSeed<'_> {
    type Value = FastRaw;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<FastRaw, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for FastRowSeed<'_> {
    type Value = FastRaw;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object (one trace row)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FastRaw, A::Error> {
        let ids = self.ids;
        let mut row = FastRaw::default();
        let mut seen = [false; 9];
        while let Some(KnownKey(key)) = map.next_key()? {
            let Some((name, slot)) = key else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            if std::mem::replace(&mut seen[slot], true) {
                return Err(de::Error::custom("duplicate field"));
            }
            match slot {
                0 => row.timestamp = map.next_value()?,
                1 => row.input_length = map.next_value::<Option<Number>>()?.map(|n| (name, n)),
                2 => row.output_length = map.next_value()?,
                3 => row.delay = map.next_value::<Option<Number>>()?.map(|n| (name, n)),
                4 => {
                    map.next_value_seed(IdsSeed(&mut *ids))?;
                    row.has_ids = true;
                }
                5 => row.session_id = map.next_value()?,
                6 => row.priority = map.next_value()?,
                7 => row.strict_priority = map.next_value()?,
                _ => row.output_ids = map.next_value_seed(TokenCount)?,
            }
        }
        Ok(row)
    }
}

/// A map key: its entry in [`KEYS`], or `None` for an unknown field (read without allocating).
struct KnownKey(Option<(&'static str, usize)>);

impl<'de> de::Deserialize<'de> for KnownKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(KnownKeyVisitor)
    }
}

struct KnownKeyVisitor;

impl Visitor<'_> for KnownKeyVisitor {
    type Value = KnownKey;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<KnownKey, E> {
        Ok(KnownKey(KEYS.iter().find(|(k, _)| *k == key).copied()))
    }
}

/// Appends a JSON list of u64s to the buffer; anything else (including `null`) is an error.
struct IdsSeed<'a>(&'a mut Vec<u64>);

impl<'de> DeserializeSeed<'de> for IdsSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for IdsSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of non-negative integers")
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(Id(id)) = seq.next_element()? {
            self.0.push(id);
        }
        Ok(())
    }
}

/// `null`, or a list of `u32` token ids read as their number (nothing allocated).
struct TokenCount;

impl<'de> DeserializeSeed<'de> for TokenCount {
    type Value = Option<u64>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<u64>, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for TokenCount {
    type Value = Option<u64>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of token ids")
    }

    fn visit_none<E: de::Error>(self) -> Result<Option<u64>, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Option<u64>, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<u64>, D::Error> {
        d.deserialize_seq(self)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Option<u64>, A::Error> {
        let mut n = 0u64;
        while let Some(Id(id)) = seq.next_element()? {
            if id > u64::from(u32::MAX) {
                return Err(de::Error::custom("token id out of range"));
            }
            n += 1;
        }
        Ok(Some(n))
    }
}

/// A JSON integer that `Value::as_u64` accepts: only `visit_u64` succeeds.
struct Id(u64);

impl<'de> de::Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(IdVisitor)
    }
}

struct IdVisitor;

impl Visitor<'_> for IdVisitor {
    type Value = Id;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a non-negative integer")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
        Ok(Id(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Write;

    fn parse(text: &str) -> Result<Workload, InputError> {
        parse_trace(text, "t.jsonl", 512)
    }

    fn parse_err(text: &str) -> String {
        parse(text).expect_err("expected an error").0
    }

    #[test]
    fn output_token_ids_must_match_output_length() {
        let ok = parse(concat!(
            r#"{"timestamp": 0, "output_length": 2, "hash_ids": [1], "output_token_ids": [7, 4294967295]}"#,
            "\n",
            r#"{"timestamp": 1, "output_length": 2, "hash_ids": [1], "output_token_ids": null}"#,
            "\n",
        ))
        .unwrap();
        assert_eq!(ok.requests[0].output_length, 2);
        let e = parse_err(
            r#"{"timestamp": 0, "output_length": 3, "hash_ids": [1], "output_token_ids": [7, 8]}"#,
        );
        assert_eq!(
            e,
            "t.jsonl:1: field \"output_token_ids\": 2 token ids, but output_length is 3 (they \
             must match)"
        );
        let e = parse_err(
            r#"{"timestamp": 0, "output_length": 2, "hash_ids": [1], "output_token_ids": [7, -1]}"#,
        );
        assert!(e.contains("element 1 is the negative integer -1"), "{e}");
        let e = parse_err(
            r#"{"timestamp": 0, "output_length": 1, "hash_ids": [1], "output_token_ids": [4294967296]}"#,
        );
        assert!(e.contains("element 0 is the integer 4294967296"), "{e}");
        let e = parse_err(
            r#"{"timestamp": 0, "output_length": 1, "hash_ids": [1], "output_token_ids": "x"}"#,
        );
        assert!(
            e.contains("field \"output_token_ids\": expected a list"),
            "{e}"
        );
    }

    #[test]
    fn aliases_and_defaults() {
        let w = parse(concat!(
            r#"{"created_time": 10, "input_tokens": 600, "output_tokens": 7, "hash_ids": [5, 6]}"#,
            "\n",
            r#"{"timestamp": 20, "output_length": 3, "hash_ids": [5, 9, 11]}"#,
            "\n",
        ))
        .unwrap();
        assert_eq!(w.requests.len(), 2);
        let r0 = &w.requests[0];
        assert_eq!((r0.input_length, r0.output_length), (600, 7));
        assert_eq!(w.blocks_of(r0), &[0, 1]);
        let r1 = &w.requests[1];
        // Default input_length = len(hash_ids) x trace_block_size.
        assert_eq!((r1.input_length, r1.output_length), (3 * 512, 3));
        // Interning in first-seen order: 5->0, 6->1, 9->2, 11->3.
        assert_eq!(w.blocks_of(r1), &[0, 2, 3]);
        assert_eq!(w.num_distinct_blocks, 4);
        assert_eq!(w.trace_block_size, 512);
        assert!(w.flat);
        assert!(w.warnings.is_empty());
        assert_eq!(
            w.sessions
                .iter()
                .map(|s| s.first_arrival_ms)
                .collect::<Vec<_>>(),
            vec![Some(0.0), Some(10.0)]
        );
    }

    #[test]
    fn delay_ms_alias_priorities_and_unknown_fields() {
        let w = parse(concat!(
            r#"{"session_id": "s", "timestamp": 1, "output_length": 1, "hash_ids": [1], "priority": -4, "strict_priority": 2, "extra": {"a": [1, 2]}, "request_id": "x"}"#,
            "\n",
            r#"{"session_id": "s", "delay_ms": 25.5, "output_length": 1, "hash_ids": [1], "policy_class": null}"#,
        ))
        .unwrap();
        assert_eq!(w.requests[0].priority, -4);
        assert_eq!(w.requests[0].strict_priority, 2);
        assert_eq!(w.requests[1].priority, 0);
        assert_eq!(w.requests[1].delay_after_previous_ms, 25.5);
    }

    #[test]
    fn only_prompt_covering_ids_are_stored() {
        // 600 tokens with block 512 need 2 ids; the third never matters.
        let w = parse(
            r#"{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [7, 8, 9]}"#,
        )
        .unwrap();
        assert_eq!(w.blocks_of(&w.requests[0]).len(), 2);
        assert_eq!(w.num_distinct_blocks, 2);
        assert_eq!(w.block_ids, vec![0, 1]);
    }

    #[test]
    fn sessions_turns_and_delays() {
        let text = [
            r#"{"session_id": "b", "timestamp": 3000, "output_length": 1, "hash_ids": [1]}"#,
            r#"{"session_id": "a", "timestamp": 1000, "output_length": 1, "hash_ids": [2]}"#,
            r#"{"session_id": "b", "timestamp": 3500, "output_length": 1, "hash_ids": [1]}"#,
            r#"{"session_id": "a", "delay": 50, "timestamp": 9999, "output_length": 1, "hash_ids": [2]}"#,
            r#"{"session_id": "a", "output_length": 1, "hash_ids": [2]}"#,
            "",
            r#"{"timestamp": 1000, "output_length": 1, "hash_ids": [9]}"#,
            r#"{"session_id": "a", "timestamp": 10009, "output_length": 2, "hash_ids": [2]}"#,
        ]
        .join("\n");
        let w = parse(&text).unwrap();
        assert!(!w.flat);
        let ids: Vec<_> = w.sessions.iter().map(|s| s.id.as_str()).collect();
        // (first arrival, file order): a (1000, line 2), request_7 (1000, line 7), b (3000).
        assert_eq!(ids, ["a", "request_7", "b"]);
        let arrivals: Vec<_> = w.sessions.iter().map(|s| s.first_arrival_ms).collect();
        assert_eq!(arrivals, [Some(0.0), Some(0.0), Some(2000.0)]);
        assert_eq!(
            w.sessions
                .iter()
                .map(|s| (s.first_request, s.num_turns))
                .collect::<Vec<_>>(),
            [(0, 4), (4, 1), (5, 2)]
        );
        let view: Vec<_> = w
            .requests
            .iter()
            .map(|r| (r.uuid, r.session, r.turn, r.delay_after_previous_ms))
            .collect();
        assert_eq!(
            view,
            [
                (1, 0, 0, 0.0),
                (2, 0, 1, 50.0), // explicit delay wins over the timestamp
                (3, 0, 2, 0.0),  // neither delay nor timestamp
                (4, 0, 3, 10.0), // 10009 - 9999 (last timestamp seen in the session)
                (5, 1, 0, 0.0),
                (6, 2, 0, 0.0),
                (7, 2, 1, 500.0), // 3500 - 3000
            ]
        );
        assert_eq!(w.requests[3].output_length, 2);
    }

    #[test]
    fn normalisation_and_stable_sort() {
        let w = parse(concat!(
            r#"{"timestamp": 200, "input_length": 10, "output_length": 1, "hash_ids": [1]}"#,
            "\n",
            r#"{"timestamp": 100, "input_length": 20, "output_length": 1, "hash_ids": [2]}"#,
            "\n",
            r#"{"timestamp": 100, "input_length": 30, "output_length": 1, "hash_ids": [3]}"#,
        ))
        .unwrap();
        let v: Vec<_> = w
            .sessions
            .iter()
            .map(|s| (s.id.as_str(), s.first_arrival_ms))
            .collect();
        assert_eq!(
            v,
            [
                ("request_2", Some(0.0)),
                ("request_3", Some(0.0)),
                ("request_1", Some(100.0))
            ]
        );
        let lens: Vec<_> = w.requests.iter().map(|r| r.input_length).collect();
        assert_eq!(lens, [20, 30, 10]);
        assert_eq!(
            w.requests.iter().map(|r| r.uuid).collect::<Vec<_>>(),
            [1, 2, 3]
        );
    }

    #[test]
    fn closed_loop_keeps_file_order_and_allows_missing_timestamps() {
        let text = concat!(
            r#"{"timestamp": 200, "input_length": 10, "output_length": 1, "hash_ids": [1]}"#,
            "\n",
            r#"{"input_length": 20, "output_length": 1, "hash_ids": [2]}"#,
            "\n",
            r#"{"timestamp": 100, "input_length": 30, "output_length": 1, "hash_ids": [3]}"#,
        );
        let w = parse_trace_with(text, "t.jsonl", 512, Timing::ClosedLoop).unwrap();
        let lens: Vec<_> = w.requests.iter().map(|r| r.input_length).collect();
        assert_eq!(lens, [10, 20, 30]);
        assert!(w.sessions.iter().all(|s| s.first_arrival_ms.is_none()));
        // Open loop needs the timestamp of line 2.
        let e = parse_err(text);
        assert!(e.starts_with("t.jsonl:2: "), "{e}");
        assert!(e.contains("\"timestamp\""), "{e}");
    }

    #[test]
    fn clamping_is_counted_in_one_warning() {
        let w = parse(concat!(
            r#"{"timestamp": 0, "input_length": 2000, "output_length": 1, "hash_ids": [1, 2]}"#,
            "\n",
            r#"{"timestamp": 0, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]}"#,
            "\n",
            r#"{"timestamp": 0, "input_length": 513, "output_length": 1, "hash_ids": [1]}"#,
        ))
        .unwrap();
        let lens: Vec<_> = w.requests.iter().map(|r| r.input_length).collect();
        assert_eq!(lens, [1024, 1024, 512]);
        assert_eq!(
            w.warnings,
            vec![
                "t.jsonl: 2 rows had input_length above len(hash_ids) x 512 and were clamped \
                 (first at line 1)"
                    .to_string()
            ]
        );
    }

    #[test]
    fn raw_ids_are_not_truncated() {
        // 1 and 2^32 + 1 share their low 32 bits but are different blocks.
        let w = parse(concat!(
            r#"{"timestamp": 0, "output_length": 1, "hash_ids": [1, 18446744073709551615]}"#,
            "\n",
            r#"{"timestamp": 0, "output_length": 1, "hash_ids": [4294967297]}"#,
        ))
        .unwrap();
        assert_eq!(w.block_ids, vec![0, 1, 2]);
    }

    fn assert_err(text: &str, line: u64, needles: &[&str]) {
        let e = parse_err(text);
        assert!(
            e.starts_with(&format!("t.jsonl:{line}: ")),
            "wrong location in {e:?}"
        );
        for n in needles {
            assert!(e.contains(n), "{e:?} lacks {n:?}");
        }
    }

    #[test]
    fn field_errors_name_line_field_and_expectation() {
        let ok = r#"{"timestamp": 0, "output_length": 1, "hash_ids": [1]}"#;
        let with = |bad: &str| format!("{ok}\n\n{bad}\n");
        assert_err(
            &with(r#"{"timestamp": 1, "output_length": 1, "hash_ids": "abc"}"#),
            3,
            &[
                "field \"hash_ids\"",
                "non-empty list of non-negative integers",
                "found a string",
            ],
        );
        assert_err(
            &with(r#"{"timestamp": 1, "output_length": 1, "hash_ids": []}"#),
            3,
            &["field \"hash_ids\"", "empty list"],
        );
        assert_err(
            &with(r#"{"timestamp": 1, "output_length": 1, "hash_ids": [1, -2]}"#),
            3,
            &["field \"hash_ids\"", "element 1", "negative integer -2"],
        );
        assert_err(
            &with(r#"{"timestamp": 1, "output_length": 1, "hash_ids": [1.5]}"#),
            3,
            &["field \"hash_ids\"", "non-integer"],
        );
        assert_err(
            &with(r#"{"timestamp": 1, "output_length": 1}"#),
            3,
            &["missing required field \"hash_ids\""],
        );
        assert_err(
            &with(r#"{"timestamp": 1, "hash_ids": [1]}"#),
            3,
            &["missing required field \"output_length\""],
        );
        assert_err(
            &with(r#"{"timestamp": 1, "output_tokens": -1, "hash_ids": [1]}"#),
            3,
            &["field \"output_tokens\"", "non-negative integer"],
        );
        assert_err(
            &with(r#"{"timestamp": 1, "output_length": 4294967296, "hash_ids": [1]}"#),
            3,
            &["field \"output_length\"", "too large"],
        );
        assert_err(
            &with(r#"{"timestamp": 1, "input_length": 10.0, "output_length": 1, "hash_ids": [1]}"#),
            3,
            &[
                "field \"input_length\"",
                "non-negative integer",
                "non-integer",
            ],
        );
        assert_err(
            &with(r#"{"timestamp": 1, "input_tokens": 0, "output_length": 1, "hash_ids": [1]}"#),
            3,
            &["field \"input_tokens\"", "positive integer"],
        );
        assert_err(
            &with(r#"{"timestamp": "5", "output_length": 1, "hash_ids": [1]}"#),
            3,
            &["field \"timestamp\"", "number", "string"],
        );
        assert_err(
            &with(r#"{"created_time": true, "output_length": 1, "hash_ids": [1]}"#),
            3,
            &["field \"created_time\"", "boolean"],
        );
        assert_err(
            &with(r#"{"timestamp": 1, "output_length": 1, "hash_ids": [1], "session_id": 5}"#),
            3,
            &["field \"session_id\"", "a string"],
        );
        assert_err(
            &with(r#"{"timestamp": 1, "output_length": 1, "hash_ids": [1], "priority": 1e3}"#),
            3,
            &["field \"priority\"", "32-bit signed integer"],
        );
        assert_err(
            &with(
                r#"{"timestamp": 1, "output_length": 1, "hash_ids": [1], "strict_priority": -1}"#,
            ),
            3,
            &["field \"strict_priority\""],
        );
        assert_err(
            &with(r#"{"timestamp": 1, "created_time": 1, "output_length": 1, "hash_ids": [1]}"#),
            3,
            &["\"timestamp\"", "\"created_time\"", "same field"],
        );
        assert_err(&with(r#"[1, 2]"#), 3, &["JSON object"]);
    }

    #[test]
    fn session_errors() {
        // Missing timestamp on a session's first row.
        assert_err(
            r#"{"session_id": "s", "output_length": 1, "hash_ids": [1]}"#,
            1,
            &["\"timestamp\"", "session \"s\""],
        );
        // Non-zero delay on a first row (delay 0 is fine).
        assert_err(
            concat!(
                r#"{"session_id": "s", "timestamp": 0, "delay": 0, "output_length": 1, "hash_ids": [1]}"#,
                "\n",
                r#"{"session_id": "t", "timestamp": 0, "delay_ms": 5, "output_length": 1, "hash_ids": [1]}"#,
            ),
            2,
            &["field \"delay_ms\"", "first row", "session \"t\""],
        );
        // Negative delay.
        assert_err(
            concat!(
                r#"{"session_id": "s", "timestamp": 0, "output_length": 1, "hash_ids": [1]}"#,
                "\n",
                r#"{"session_id": "s", "delay": -1, "output_length": 1, "hash_ids": [1]}"#,
            ),
            2,
            &["field \"delay\"", "non-negative number"],
        );
        // Timestamps going backwards within a session.
        assert_err(
            concat!(
                r#"{"session_id": "s", "timestamp": 10, "output_length": 1, "hash_ids": [1]}"#,
                "\n",
                r#"{"session_id": "s", "timestamp": 5, "output_length": 1, "hash_ids": [1]}"#,
            ),
            2,
            &["field \"timestamp\"", "earlier than", "session \"s\""],
        );
        // Closed loop: a later timestamp with no earlier one cannot give a delay.
        let e = parse_trace_with(
            concat!(
                r#"{"session_id": "s", "output_length": 1, "hash_ids": [1]}"#,
                "\n",
                r#"{"session_id": "s", "timestamp": 5, "output_length": 1, "hash_ids": [1]}"#,
            ),
            "t.jsonl",
            512,
            Timing::ClosedLoop,
        )
        .unwrap_err()
        .0;
        assert!(
            e.starts_with("t.jsonl:2: ") && e.contains("cannot infer"),
            "{e}"
        );
    }

    #[test]
    fn json_and_file_level_errors() {
        assert_err(
            "{\"timestamp\": 0, \"output_length\": 1, \"hash_ids\": [1]}\n{\"timestamp\": 0, \"outp",
            2,
            &["invalid JSON"],
        );
        assert_err("\n\nnot json\n", 3, &["invalid JSON", "(column 2)"]);
        let e = parse_err("\n\nnot json\n");
        assert!(
            !e.contains("line 1"),
            "serde's in-line position leaked: {e}"
        );
        let e = parse_err("\n  \n\n");
        assert!(
            e.starts_with("t.jsonl: ") && e.contains("no requests"),
            "{e}"
        );
        let e = parse_err("");
        assert!(e.contains("no requests"), "{e}");
        let e = parse_trace("{}", "t.jsonl", 0).unwrap_err().0;
        assert!(e.contains("--trace-block-size"), "{e}");
    }

    #[test]
    fn out_of_range_ids_bom_and_nesting() {
        assert_err(
            r#"{"timestamp": 1, "output_length": 1, "hash_ids": [18446744073709551616]}"#,
            1,
            &["field \"hash_ids\"", "element 0", "out of the 64-bit range"],
        );
        assert_err(
            "\u{feff}{\"timestamp\": 0, \"output_length\": 1, \"hash_ids\": [1]}",
            1,
            &["byte-order mark"],
        );
        let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
        let e = parse_err(&deep);
        assert!(
            e.starts_with("t.jsonl:1: ") && !e.contains("column 0"),
            "{e}"
        );
        let e = parse_err("{\"timestamp\": NaN}");
        assert!(e.contains("each line must be one JSON object"), "{e}");
    }

    #[test]
    fn crlf_lines_are_accepted() {
        let w =
            parse("{\"timestamp\": 0, \"output_length\": 1, \"hash_ids\": [1]}\r\n\r\n").unwrap();
        assert_eq!(w.requests.len(), 1);
    }

    #[test]
    fn gzip_round_trip_and_plain_file() {
        let dir = tempfile::tempdir().unwrap();
        let text = concat!(
            r#"{"timestamp": 100, "input_length": 700, "output_length": 3, "hash_ids": [4, 5]}"#,
            "\n",
            r#"{"timestamp": 200, "input_length": 900, "output_length": 3, "hash_ids": [4, 5]}"#,
            "\n",
        );
        let plain = dir.path().join("trace.jsonl");
        std::fs::write(&plain, text).unwrap();
        let gz = dir.path().join("trace.jsonl.gz");
        // Two gzip members, as produced by concatenating shards.
        let mut bytes = Vec::new();
        for half in text.split_inclusive('\n') {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(half.as_bytes()).unwrap();
            bytes.extend(enc.finish().unwrap());
        }
        std::fs::write(&gz, &bytes).unwrap();

        let a = load_trace(&plain, 512).unwrap();
        let b = load_trace(&gz, 512).unwrap();
        assert_eq!(a.requests, b.requests);
        assert_eq!(a.sessions, b.sessions);
        assert_eq!(b.requests.len(), 2);
        assert_eq!(b.sessions[1].first_arrival_ms, Some(100.0));
        assert_eq!(a, parse_trace(text, "x", 512).unwrap());

        // A gzip file without the .gz name: invalid UTF-8 with a hint.
        let misnamed = dir.path().join("trace2.jsonl");
        std::fs::write(&misnamed, &bytes).unwrap();
        let e = load_trace(&misnamed, 512).unwrap_err().0;
        assert!(e.contains("trace2.jsonl:1:") && e.contains("gzip"), "{e}");

        // Garbage with a .gz name.
        let bad = dir.path().join("bad.jsonl.gz");
        std::fs::write(&bad, b"this is not gzip at all\n").unwrap();
        let e = load_trace(&bad, 512).unwrap_err().0;
        assert!(e.contains("bad.jsonl.gz:1:") && e.contains("gzip"), "{e}");

        // Truncated gzip stream.
        let trunc = dir.path().join("trunc.jsonl.gz");
        std::fs::write(&trunc, &bytes[..bytes.len() - 10]).unwrap();
        let e = load_trace(&trunc, 512).unwrap_err().0;
        assert!(e.contains("trunc.jsonl.gz:"), "{e}");

        // Invalid UTF-8 on line 2 of a plain file.
        let bin = dir.path().join("bin.jsonl");
        let mut raw = text.lines().next().unwrap().as_bytes().to_vec();
        raw.extend_from_slice(b"\n{\"a\": \"\xff\xfe\"}\n");
        std::fs::write(&bin, raw).unwrap();
        let e = load_trace(&bin, 512).unwrap_err().0;
        assert!(
            e.starts_with(&format!("{}:2: ", bin.display())) && e.contains("UTF-8"),
            "{e}"
        );

        // Missing and empty files.
        let e = load_trace(&dir.path().join("nope.jsonl"), 512)
            .unwrap_err()
            .0;
        assert!(e.contains("nope.jsonl") && e.contains("cannot open"), "{e}");
        let empty = dir.path().join("empty.jsonl");
        std::fs::write(&empty, "").unwrap();
        let e = load_trace(&empty, 512).unwrap_err().0;
        assert!(e.contains("no requests"), "{e}");
    }

    #[test]
    fn truncated_last_line_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("cut.jsonl");
        std::fs::write(
            &p,
            "{\"timestamp\": 0, \"output_length\": 1, \"hash_ids\": [1]}\n{\"timestamp\": 5, \"output_le",
        )
        .unwrap();
        let e = load_trace(&p, 512).unwrap_err().0;
        assert!(e.contains("cut.jsonl:2: invalid JSON"), "{e}");
    }

    // ---- Fast path vs slow path -------------------------------------------------------------

    /// A row with its hash ids, in a form that tells `-0.0` from `0.0`.
    fn row_view(row: Row, ids: Vec<u64>) -> String {
        format!("{row:?} {ids:?}")
    }

    /// The slow (reference) path's row or error message for one line.
    fn slow_line(line: &str) -> Result<String, String> {
        let b = TraceBuilder::new("t.jsonl", 512, Timing::OpenLoop).unwrap();
        let mut ids = vec![99]; // stale ids must be cleared
        b.slow_row(7, line, &mut ids)
            .map(|row| row_view(row, ids))
            .map_err(|e| e.0)
    }

    /// What each fast reader makes of a line (`None` = gives up).
    fn fast_lines(line: &str) -> [(&'static str, Option<String>); 3] {
        let read = |f: fn(&str, &mut Vec<u64>) -> Option<FastRaw>| {
            let mut ids = vec![99];
            let raw = f(line, &mut ids)?;
            raw.into_row(&ids).map(|row| row_view(row, ids))
        };
        let mut ids = vec![99];
        let fast = fast_row(line, &mut ids).map(|row| row_view(row, ids));
        [
            ("scan_row", read(scan_row)),
            ("serde_row", read(serde_row)),
            ("fast_row", fast),
        ]
    }

    /// Every fast reader that accepts `line` gives the slow path's row; returns the slow result.
    fn check_line(line: &str) -> Result<String, String> {
        let slow = slow_line(line);
        for (name, fast) in fast_lines(line) {
            if let Some(fast) = fast {
                assert_eq!(Ok(&fast), slow.as_ref(), "{name} accepted {line:?}");
            }
        }
        slow
    }

    /// `parse_trace_with` without the fast path.
    fn parse_slow(text: &str, timing: Timing) -> Result<Workload, InputError> {
        let mut b = TraceBuilder::new("t.jsonl", 512, timing)?;
        b.fast_path = false;
        for (idx, line) in text.split('\n').enumerate() {
            b.push_line(idx as u64 + 1, line)?;
        }
        b.finish()
    }

    #[test]
    fn fast_path_reads_usual_rows() {
        let lines = [
            r#"{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2, 3]}"#,
            r#"{"created_time":27482,"input_tokens":1,"output_tokens":0,"hash_ids":[18446744073709551615]}"#,
            " \t{ \"hash_ids\" :[ 5 ,6 ] , \"output_length\":1,\"session_id\":\"s é\",\"delay\":2.5 } \r",
            r#"{"timestamp": 1.5e3, "output_length": 1, "hash_ids": [1], "priority": -3, "strict_priority": 4294967295}"#,
            r#"{"timestamp": -0, "output_length": 1, "hash_ids": [1], "delay_ms": null, "session_id": null}"#,
        ];
        for line in lines {
            let slow = check_line(line);
            assert!(slow.is_ok(), "{line:?}: {slow:?}");
            let [(_, scan), _, (_, fast)] = fast_lines(line);
            assert!(scan.is_some() && fast.is_some(), "{line:?}");
        }
        // Other valid shapes go through serde's typed reader.
        let line = r#"{"timestamp": 1, "output_length": 1, "hash_ids": [1], "extra": {"a": [1, "\u0041"]}}"#;
        check_line(line).unwrap();
        let [(_, scan), (_, serde), _] = fast_lines(line);
        assert!(scan.is_none() && serde.is_some());
        let line = r#"{"timestamp": 1, "output_length": 1, "hash_ids": [1], "session_id": "a\nb"}"#;
        check_line(line).unwrap();
        assert!(fast_lines(line)[2].1.is_some());
    }

    #[test]
    fn fast_path_gives_up_on_bad_rows_and_errors_are_unchanged() {
        let row =
            |ids: &str| format!(r#"{{"timestamp": 1, "output_length": 1, "hash_ids": {ids}}}"#);
        let cases = [
            (row("[1, -2]"), "t.jsonl:7: field \"hash_ids\": expected a non-empty list of non-negative integers, element 1 is the negative integer -2"),
            (row("[1.5]"), "t.jsonl:7: field \"hash_ids\": expected a non-empty list of non-negative integers, element 0 is the non-integer number 1.5"),
            (row("[1.0]"), "t.jsonl:7: field \"hash_ids\": expected a non-empty list of non-negative integers, element 0 is the non-integer number 1.0"),
            (row("[1e2]"), "t.jsonl:7: field \"hash_ids\": expected a non-empty list of non-negative integers, element 0 is the non-integer number 100.0"),
            (row("[-0]"), "t.jsonl:7: field \"hash_ids\": expected a non-empty list of non-negative integers, element 0 is the non-integer number -0.0"),
            (row(r#"[1, "2"]"#), "t.jsonl:7: field \"hash_ids\": expected a non-empty list of non-negative integers, element 1 is a string"),
            (row("[18446744073709551616]"), "t.jsonl:7: field \"hash_ids\": expected a non-empty list of non-negative integers, element 0 is an integer out of the 64-bit range (1.8446744073709552e+19)"),
            (row("[[1]]"), "t.jsonl:7: field \"hash_ids\": expected a non-empty list of non-negative integers, element 0 is a list"),
            (row("[null]"), "t.jsonl:7: field \"hash_ids\": expected a non-empty list of non-negative integers, element 0 is null"),
            (row("[]"), "t.jsonl:7: field \"hash_ids\": expected a non-empty list of non-negative integers, found an empty list"),
            (row("null"), "t.jsonl:7: missing required field \"hash_ids\" (a non-empty list of non-negative integers)"),
            (row("{}"), "t.jsonl:7: field \"hash_ids\": expected a non-empty list of non-negative integers, found an object"),
            (row("[01]"), "t.jsonl:7: invalid JSON: invalid number (column 52); each line must be one JSON object"),
            (row("[1,]"), "t.jsonl:7: invalid JSON: trailing comma (column 53); each line must be one JSON object"),
            (row("[1 2]"), "t.jsonl:7: invalid JSON: expected `,` or `]` (column 53); each line must be one JSON object"),
            (
                r#"{"timestamp": 1, "output_length": 1, "hash_ids": [1], "created_time": null}"#.into(),
                "t.jsonl:7: fields \"timestamp\" and \"created_time\" are the same field; give only one",
            ),
            (
                r#"{"hash_ids": [1], "timestamp": 1, "output_length": 1, "hash_ids": [2]}"#.into(),
                "t.jsonl:7: fields \"hash_ids\" and \"hash_ids\" are the same field; give only one",
            ),
            (
                r#"{"timestamp": 1, "output_tokens": 2, "hash_ids": [1], "output_length": 1, "x": [}"#.into(),
                "t.jsonl:7: invalid JSON: expected value (column 81); each line must be one JSON object",
            ),
            (
                r#"{"timestamp": 1, "output_length": 1, "hash_ids": [1]} x"#.into(),
                "t.jsonl:7: invalid JSON: trailing characters (column 55); each line must be one JSON object",
            ),
            (
                r#"{"timestamp": 1, "output_length": 4294967296, "hash_ids": [1]}"#.into(),
                "t.jsonl:7: field \"output_length\": 4294967296 is too large (at most 4294967295)",
            ),
            (
                r#"{"timestamp": 1, "output_length": 1, "hash_ids": [1], "priority": 2147483648}"#.into(),
                "t.jsonl:7: field \"priority\": expected a 32-bit signed integer, found the integer 2147483648",
            ),
            (
                r#"{"timestamp": 1, "output_length": 1, "hash_ids": [1], "delay": -0.5}"#.into(),
                "t.jsonl:7: field \"delay\": expected a non-negative number (milliseconds), found the non-integer number -0.5",
            ),
            (
                r#"{"timestamp": 1, "output_length": 1, "hash_ids": [1], "session_id": "a	b"}"#.into(),
                "t.jsonl:7: invalid JSON: control character (\\u0000-\\u001F) found while parsing a string (column 71); each line must be one JSON object",
            ),
            ("[1, 2]".into(), "t.jsonl:7: invalid type: sequence, expected a JSON object (one trace row)"),
        ];
        for (line, want) in cases {
            for (name, fast) in fast_lines(&line) {
                assert_eq!(fast, None, "{name} accepted {line:?}");
            }
            assert_eq!(check_line(&line), Err(want.to_string()), "{line:?}");
        }
    }

    /// JSON-ish text for one value: valid or not, of every type, with the edge cases of numbers.
    fn value_text() -> impl Strategy<Value = String> {
        let pool = prop::sample::select(vec![
            "0",
            "1",
            "7",
            "512",
            "4294967295",
            "4294967296",
            "2147483647",
            "2147483648",
            "-1",
            "-2147483648",
            "-2147483649",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "18446744073709551615",
            "18446744073709551616",
            "100000000000000000000",
            "-0",
            "00",
            "01",
            "-01",
            "1.5",
            "10.0",
            "0.0",
            "-0.0",
            "1e3",
            "1E+2",
            "1e-2",
            "-3.25",
            "1e400",
            "2.5e",
            "1.",
            "-",
            "+1",
            ".5",
            "1.5.2",
            "1-2",
            "NaN",
            "Infinity",
            "null",
            "true",
            "false",
            "nul",
            "nullx",
            r#""s""#,
            r#""""#,
            r#""a\"b""#,
            r#""\u0041""#,
            r#""é""#,
            r#""\n""#,
            "\"x\ty\"",
            r#""open"#,
            "[]",
            "[1]",
            "[1, 2, 3]",
            "[ 1 , 2 ]",
            "[1,]",
            "[[1]]",
            "[-1]",
            "[1.5]",
            r#"["1"]"#,
            "[18446744073709551616]",
            "[01]",
            "[1 2]",
            "[null]",
            "[1, 2",
            "{}",
            r#"{"a": 1}"#,
            r#"{"a": [1, {"b": null}]}"#,
            "[0]",
            "[0, 00]",
        ]);
        prop_oneof![
            3 => pool.prop_map(str::to_string),
            2 => ids_text(),
            2 => number_text(),
            1 => "[a-z0-9 ]{0,4}".prop_map(|s| format!("\"{s}\"")),
        ]
    }

    /// A number (mostly a small non-negative integer), or occasionally `null`.
    fn number_text() -> impl Strategy<Value = String> {
        prop_oneof![
            6 => (0u64..3000).prop_map(|n| n.to_string()),
            1 => any::<f64>().prop_map(|f| f.to_string()),
            1 => any::<i64>().prop_map(|n| n.to_string()),
            1 => any::<u64>().prop_map(|n| n.to_string()),
            1 => prop::sample::select(vec![
                "0.5", "1e3", "1E+2", "-0", "-0.0", "12.0", "4294967296", "null", "1e400",
                "18446744073709551616",
            ])
            .prop_map(str::to_string),
        ]
    }

    /// A list of non-negative integers (maybe empty) with varied spacing.
    fn ids_text() -> impl Strategy<Value = String> {
        let id = prop_oneof![0u64..50, Just(u64::MAX), any::<u64>()];
        prop_oneof![
            1 => Just(Vec::new()),
            6 => prop::collection::vec(id, 1..6),
        ]
        .prop_flat_map(|ids| {
            let n = ids.len();
            (Just(ids), prop::collection::vec(sep(), n + 1))
        })
        .prop_map(|(ids, seps)| {
            let mut t = format!("[{}", seps[0]);
            for (i, id) in ids.iter().enumerate() {
                if i > 0 {
                    t.push(',');
                }
                t += &format!("{id}{}", seps[i + 1]);
            }
            t + "]"
        })
    }

    /// JSON whitespace (and, rarely, a non-JSON space).
    fn sep() -> impl Strategy<Value = &'static str> {
        prop_oneof![
            300 => prop::sample::select(vec!["", "", " ", " ", "  ", "\t", "\r", "\n"]),
            1 => Just("\u{a0}"),
        ]
    }

    /// A line: an object with known, aliased, unknown or escaped keys (maybe repeated), or a
    /// mangled variant of one.
    fn line_text() -> impl Strategy<Value = String> {
        let key = prop_oneof![
            4 => prop::sample::select(KEYS.iter().map(|(k, _)| *k).collect::<Vec<_>>()),
            1 => prop::sample::select(vec![
                "extra", "Hash_ids", "hash_ids ", "", r"hash\u005fids", r"time\u0073tamp", "é",
            ]),
        ];
        let field = (key, sep(), sep(), value_text(), sep())
            .prop_map(|(k, a, b, v, c)| format!("\"{k}\"{a}:{b}{v}{c}"));
        let base = (sep(), prop::collection::vec(field, 0..7), sep())
            .prop_map(|(a, fields, b)| format!("{a}{{{}}}{b}", fields.join(",")));
        // Mostly well-typed rows: known keys with values of the right kind, sometimes not.
        let plausible = prop::sample::select(KEYS.to_vec()).prop_flat_map(|(key, slot)| {
            let good = match slot {
                4 => ids_text().boxed(),
                5 => prop_oneof![
                    Just("null".to_string()),
                    "[a-z_0-9 é]{0,6}".prop_map(|s| format!("\"{s}\"")),
                ]
                .boxed(),
                _ => number_text().boxed(),
            };
            (Just(key), prop_oneof![6 => good, 1 => value_text()], sep())
                .prop_map(|(k, v, s)| format!("\"{k}\":{s}{v}"))
        });
        let usual = (
            prop_oneof![Just("timestamp"), Just("created_time")],
            number_text(),
            prop_oneof![3 => (0u64..3000).prop_map(|n| n.to_string()), 1 => number_text()],
            ids_text(),
            prop::collection::vec(plausible, 0..4),
        )
            .prop_map(|(ts, t, o, h, more)| {
                let mut fields = vec![
                    format!("\"{ts}\": {t}"),
                    format!("\"output_length\": {o}"),
                    format!("\"hash_ids\": {h}"),
                ];
                fields.extend(more);
                format!("{{{}}}", fields.join(", "))
            });
        (
            prop_oneof![1 => base, 3 => usual],
            0usize..200,
            prop_oneof![
                6 => Just(None),
                1 => prop::sample::select(vec![Some(""), Some("x"), Some(","), Some("}"), Some("\"")]),
            ],
        )
            .prop_map(|(line, at, edit)| match edit {
                None => line,
                Some(insert) => {
                    let mut at = at.min(line.len());
                    while !line.is_char_boundary(at) {
                        at -= 1;
                    }
                    // An empty insert truncates the line.
                    if insert.is_empty() {
                        line[..at].to_string()
                    } else {
                        format!("{}{insert}{}", &line[..at], &line[at..])
                    }
                }
            })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]

        #[test]
        fn fast_and_slow_paths_agree_on_lines(line in line_text()) {
            let _ = check_line(&line);
        }

        #[test]
        fn fast_and_slow_paths_agree_on_traces(
            lines in prop::collection::vec(
                (
                    prop::sample::select(vec!["", r#""session_id": "a", "#, r#""session_id": "request_1", "#]),
                    prop::option::of(0u32..3000),
                    prop::option::of(0u32..3000),
                    0u32..5,
                    prop::collection::vec(0u64..20, 1..5),
                    prop::option::of(0u32..50),
                ).prop_map(|(session, ts, input, output, ids, delay)| {
                    let mut t = format!("{{{session}");
                    if let Some(ts) = ts {
                        t += &format!(r#""timestamp": {ts}, "#);
                    }
                    if let Some(n) = input {
                        t += &format!(r#""input_length": {n}, "#);
                    }
                    if let Some(d) = delay {
                        t += &format!(r#""delay": {d}, "#);
                    }
                    format!("{t}\"output_length\": {output}, \"hash_ids\": {ids:?}}}")
                }),
                1..6,
            ),
            closed in any::<bool>(),
        ) {
            let text = lines.join("\n");
            let timing = if closed { Timing::ClosedLoop } else { Timing::OpenLoop };
            let fast = parse_trace_with(&text, "t.jsonl", 512, timing);
            let slow = parse_slow(&text, timing);
            proptest::prop_assert_eq!(format!("{fast:?}"), format!("{slow:?}"));
        }
    }
}
