//! Builds a [`Workload`] from the rows of one Mooncake trace, in file order: interning hash ids,
//! clamping `input_length`, grouping rows into sessions, deriving think times and normalising
//! arrivals (the conventions listed in the [module docs](super)). Rows come from the fast
//! reader (`scan`) or, when it gives up, the reference reader (`rows`), which also words every
//! row error; this file parses no JSON itself and owns what spans rows.

use super::rows::{Row, RowReader};
use super::scan::fast_row;
use super::Timing;
use crate::error::InputError;
use crate::workload::blocks::BlockInterner;
use crate::workload::{Content, RequestSpec, SessionSpec, Workload};
use rustc_hash::FxHashMap as HashMap;
use std::fmt;

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
pub(super) struct TraceBuilder<'a> {
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
    pub(super) fast_path: bool,
}

impl<'a> TraceBuilder<'a> {
    pub(super) fn new(name: &'a str, tbs: u32, timing: Timing) -> Result<Self, InputError> {
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
        self.rows().err(line, msg)
    }

    /// The reference row reader, for this file's error messages.
    fn rows(&self) -> RowReader<'a> {
        RowReader { name: self.name }
    }

    pub(super) fn push_line(&mut self, line_no: u64, line: &str) -> Result<(), InputError> {
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
            None => self.rows().slow_row(line_no, line, &mut ids),
        };
        let result = row.and_then(|row| self.add_row(line_no, row, &ids));
        self.ids = ids;
        result
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

    pub(super) fn finish(mut self) -> Result<Workload, InputError> {
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
            warmup_sessions: 0,
        })
    }
}
