//! `agentic_mooncake` traces (spec §2.5): Mooncake rows that name each request (`request_id`) and
//! the requests it must wait for (`wait_for`). Also the target of the agentic Dynamo traces
//! (`dynamo.rs` lowers their sessions to chains of dependencies and feeds [`AgenticBuilder`]).
//!
//! Facts from DynoSim 1.4.2:
//! * Every row is its own request and unit of release; `session_id` is only metadata (no
//!   context accumulates across rows).
//! * A row without `wait_for` is ready at its `timestamp` (0 when absent); a row with
//!   dependencies is ready `delay + tool_wait_ms` after the last of them ends (its timestamp is
//!   ignored). Timestamps are shifted so the earliest is 0; the arrival speed-up divides both.
//! * `request_id` is required, non-empty and unique; every `wait_for` id must exist, differ from
//!   the row's own and the dependencies must be acyclic.
//! * `input_length` above `len(hash_ids) × trace_block_size` is an error (no clamping).
//! * `prefix_reset`, `branches`, `request_kind` and `tool_events` are read by DynoSim but do not
//!   influence replay; they are ignored here too.
//! * Rows keep file order: same-time releases go in file order.

use super::{content_of, describe, for_each_line, parse_json_line};
use crate::error::InputError;
use crate::workload::blocks::BlockInterner;
use crate::workload::{Dependencies, RequestSpec, SessionSpec, Workload};
use rustc_hash::FxHashMap as HashMap;
use serde_json::{Map, Value};
use std::path::Path;

/// One agentic request before dependencies are resolved.
pub(crate) struct AgenticRow {
    /// Where the row came from (`file:line`), for errors.
    pub at: String,
    pub request_id: String,
    pub session_id: String,
    pub input_length: u32,
    pub output_length: u32,
    /// Hash ids covering the prompt (`ceil(input_length / trace_block_size)` of them).
    pub hash_ids: Vec<u64>,
    pub timestamp_ms: Option<f64>,
    pub wait_for: Vec<String>,
    /// Wait after the last dependency ends.
    pub delay_ms: f64,
    pub priority: i32,
    pub strict_priority: u32,
}

/// Collects agentic rows in release-tie order and builds the workload.
pub(crate) struct AgenticBuilder {
    name: String,
    tbs: u32,
    rows: Vec<AgenticRow>,
    index: HashMap<String, u32>,
}

impl AgenticBuilder {
    pub(crate) fn new(name: &str, tbs: u32) -> Self {
        AgenticBuilder {
            name: name.to_string(),
            tbs,
            rows: Vec::new(),
            index: HashMap::default(),
        }
    }

    pub(crate) fn push(&mut self, row: AgenticRow) -> Result<(), InputError> {
        if row.request_id.trim().is_empty() {
            return Err(InputError::new(format!(
                "{}: field \"request_id\": expected a non-empty string",
                row.at
            )));
        }
        let idx = u32::try_from(self.rows.len())
            .map_err(|_| InputError::new(format!("{}: too many requests", row.at)))?;
        if self.index.insert(row.request_id.clone(), idx).is_some() {
            return Err(InputError::new(format!(
                "{}: field \"request_id\": \"{}\" is used by an earlier row (request ids must be \
                 unique)",
                row.at, row.request_id
            )));
        }
        self.rows.push(row);
        Ok(())
    }

    pub(crate) fn finish(self) -> Result<Workload, InputError> {
        if self.rows.is_empty() {
            return Err(InputError::new(format!(
                "{}: the trace contains no requests (the file is empty or has only blank lines)",
                self.name
            )));
        }
        let mut waits: Vec<Vec<u32>> = Vec::with_capacity(self.rows.len());
        for row in &self.rows {
            let mut list = Vec::with_capacity(row.wait_for.len());
            for dep in &row.wait_for {
                let Some(&d) = self.index.get(dep) else {
                    return Err(InputError::new(format!(
                        "{}: field \"wait_for\": request \"{}\" waits for unknown request_id \
                         \"{dep}\"",
                        row.at, row.request_id
                    )));
                };
                if *dep == row.request_id {
                    return Err(InputError::new(format!(
                        "{}: field \"wait_for\": request \"{dep}\" cannot wait for itself",
                        row.at
                    )));
                }
                if !list.contains(&d) {
                    list.push(d);
                }
            }
            waits.push(list);
        }
        if let Some(r) = first_on_cycle(&waits) {
            let row = &self.rows[r as usize];
            return Err(InputError::new(format!(
                "{}: field \"wait_for\": request \"{}\" is on a dependency cycle",
                row.at, row.request_id
            )));
        }

        let min_ts = self
            .rows
            .iter()
            .filter_map(|r| r.timestamp_ms)
            .min_by(f64::total_cmp)
            .unwrap_or(0.0);
        let mut interner = BlockInterner::default();
        let mut sessions = Vec::with_capacity(self.rows.len());
        let mut requests = Vec::with_capacity(self.rows.len());
        for (i, row) in self.rows.into_iter().enumerate() {
            let content = interner.push_prompt(row.hash_ids).ok_or_else(|| {
                InputError::new(format!(
                    "{}: too many hash ids in the trace (limit 2^32)",
                    row.at
                ))
            })?;
            let has_waits = !waits[i].is_empty();
            sessions.push(SessionSpec {
                id: row.session_id,
                first_arrival_ms: (!has_waits)
                    .then(|| row.timestamp_ms.map_or(0.0, |t| t - min_ts).max(0.0)),
                first_request: i as u32,
                num_turns: 1,
            });
            requests.push(RequestSpec {
                uuid: i as u64 + 1,
                input_length: row.input_length,
                output_length: row.output_length,
                content,
                session: i as u32,
                turn: 0,
                delay_after_previous_ms: if has_waits { row.delay_ms } else { 0.0 },
                priority: row.priority,
                strict_priority: row.strict_priority,
            });
        }
        let num_distinct_blocks = interner.num_distinct();
        Ok(Workload {
            sessions,
            requests,
            block_ids: interner.block_ids,
            trace_block_size: self.tbs,
            num_distinct_blocks,
            flat: true,
            warnings: Vec::new(),
            dependencies: Dependencies::from_waits(&waits),
            warmup_sessions: 0,
        })
    }
}

/// A request on a dependency cycle, if any (iterative depth-first search).
fn first_on_cycle(waits: &[Vec<u32>]) -> Option<u32> {
    // 0 = unvisited, 1 = on the stack, 2 = done.
    let mut mark = vec![0u8; waits.len()];
    for root in 0..waits.len() {
        if mark[root] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        mark[root] = 1;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if let Some(&d) = waits[node].get(*next) {
                *next += 1;
                match mark[d as usize] {
                    0 => {
                        mark[d as usize] = 1;
                        stack.push((d as usize, 0));
                    }
                    1 => return Some(d),
                    _ => {}
                }
            } else {
                mark[node] = 2;
                stack.pop();
            }
        }
    }
    None
}

/// Typed access to the fields of one JSON object row, with `file:line: field "x": ...` errors.
pub(crate) struct Fields<'a> {
    pub at: &'a str,
    /// Key path of `obj` in the record (`"request."`), empty at the top level.
    pub path: &'a str,
    pub obj: &'a Map<String, Value>,
}

impl Fields<'_> {
    fn get(&self, key: &str) -> Option<&Value> {
        self.obj.get(key).filter(|v| !v.is_null())
    }

    pub(crate) fn err(&self, key: &str, expected: &str, v: &Value) -> InputError {
        InputError::new(format!(
            "{}: field \"{}{key}\": expected {expected}, found {}",
            self.at,
            self.path,
            describe(v)
        ))
    }

    pub(crate) fn missing(&self, key: &str, expected: &str) -> InputError {
        InputError::new(format!(
            "{}: missing required field \"{}{key}\" ({expected})",
            self.at, self.path
        ))
    }

    /// The first of `keys` that is present (aliases), with the key used.
    fn get_alias<'k>(&self, keys: &[&'k str]) -> Result<Option<(&'k str, &Value)>, InputError> {
        let mut found = None;
        for k in keys {
            if let Some(v) = self.get(k) {
                if let Some((first, _)) = found {
                    return Err(InputError::new(format!(
                        "{}: fields \"{first}\" and \"{k}\" are the same field; give only one",
                        self.at
                    )));
                }
                found = Some((*k, v));
            }
        }
        Ok(found)
    }

    pub(crate) fn u32_alias(&self, keys: &[&str]) -> Result<Option<(String, u32)>, InputError> {
        match self.get_alias(keys)? {
            None => Ok(None),
            Some((k, v)) => match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) => Ok(Some((k.to_string(), n))),
                None => Err(self.err(k, "a non-negative 32-bit integer", v)),
            },
        }
    }

    pub(crate) fn u32(&self, key: &str) -> Result<Option<u32>, InputError> {
        Ok(self.u32_alias(&[key])?.map(|(_, n)| n))
    }

    pub(crate) fn u64(&self, key: &str) -> Result<Option<u64>, InputError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.err(key, "a non-negative integer", v)),
        }
    }

    pub(crate) fn ms_alias(&self, keys: &[&str]) -> Result<Option<f64>, InputError> {
        match self.get_alias(keys)? {
            None => Ok(None),
            Some((k, v)) => match v.as_f64() {
                Some(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
                _ => Err(self.err(k, "a non-negative number (milliseconds)", v)),
            },
        }
    }

    pub(crate) fn f64(&self, key: &str) -> Result<Option<f64>, InputError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(x) if x.is_finite() => Ok(Some(x)),
                _ => Err(self.err(key, "a finite number", v)),
            },
        }
    }

    pub(crate) fn string(&self, key: &str) -> Result<Option<String>, InputError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(self.err(key, "a string", v)),
        }
    }

    pub(crate) fn i32(&self, key: &str) -> Result<Option<i32>, InputError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_i64()
                .and_then(|p| i32::try_from(p).ok())
                .map(Some)
                .ok_or_else(|| self.err(key, "a 32-bit signed integer", v)),
        }
    }

    pub(crate) fn ids(&self, key: &str) -> Result<Option<Vec<u64>>, InputError> {
        const WHAT: &str = "a list of non-negative integers";
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    item.as_u64().ok_or_else(|| {
                        InputError::new(format!(
                            "{}: field \"{}{key}\": expected {WHAT}, element {i} is {}",
                            self.at,
                            self.path,
                            describe(item)
                        ))
                    })
                })
                .collect::<Result<Vec<u64>, _>>()
                .map(Some),
            Some(v) => Err(self.err(key, WHAT, v)),
        }
    }

    pub(crate) fn strings(&self, key: &str) -> Result<Vec<String>, InputError> {
        const WHAT: &str = "a list of request ids (strings)";
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::String(s) => Ok(s.clone()),
                    _ => Err(InputError::new(format!(
                        "{}: field \"{}{key}\": expected {WHAT}, element {i} is {}",
                        self.at,
                        self.path,
                        describe(item)
                    ))),
                })
                .collect(),
            Some(v) => Err(self.err(key, WHAT, v)),
        }
    }
}

/// Reads an `agentic_mooncake` file.
pub fn load(path: &Path, trace_block_size: u32) -> Result<Workload, InputError> {
    let name = path.display().to_string();
    check_block_size(&name, trace_block_size)?;
    let mut b = AgenticBuilder::new(&name, trace_block_size);
    for_each_line(path, |line_no, line| {
        let Some(line) = content_of(line) else {
            return Ok(());
        };
        let at = format!("{name}:{line_no}");
        let row = parse_row(&at, line_no, &name, line, trace_block_size)?;
        b.push(row)
    })?;
    b.finish()
}

#[cfg(test)]
/// Parses `agentic_mooncake` text (tests); `name` is used in errors.
pub fn parse(text: &str, name: &str, trace_block_size: u32) -> Result<Workload, InputError> {
    check_block_size(name, trace_block_size)?;
    let mut b = AgenticBuilder::new(name, trace_block_size);
    for (i, line) in text.split('\n').enumerate() {
        let Some(line) = content_of(line) else {
            continue;
        };
        let at = format!("{name}:{}", i + 1);
        b.push(parse_row(&at, i as u64 + 1, name, line, trace_block_size)?)?;
    }
    b.finish()
}

pub(crate) fn check_block_size(name: &str, tbs: u32) -> Result<(), InputError> {
    if tbs == 0 {
        return Err(InputError::new(format!(
            "{name}: trace block size must be at least 1 (--trace-block-size), got 0"
        )));
    }
    Ok(())
}

fn parse_row(
    at: &str,
    line_no: u64,
    name: &str,
    line: &str,
    tbs: u32,
) -> Result<AgenticRow, InputError> {
    let value: Value = parse_json_line(name, line_no, line)?;
    let Value::Object(obj) = value else {
        return Err(InputError::new(format!(
            "{at}: expected a JSON object, found {}",
            describe(&value)
        )));
    };
    let f = Fields {
        at,
        path: "",
        obj: &obj,
    };
    let request_id = f
        .string("request_id")?
        .ok_or_else(|| f.missing("request_id", "a non-empty string"))?;
    let hash_ids = f
        .ids("hash_ids")?
        .ok_or_else(|| f.missing("hash_ids", "a list of non-negative integers"))?;
    let output_length = f
        .u32_alias(&["output_length", "output_tokens"])?
        .ok_or_else(|| f.missing("output_length", "a non-negative integer"))?
        .1;
    let capacity = hash_ids.len() as u64 * u64::from(tbs);
    let input_length = match f.u32_alias(&["input_length", "input_tokens"])? {
        None => u32::try_from(capacity).map_err(|_| {
            InputError::new(format!(
                "{at}: prompt of {capacity} tokens is too long (at most {} tokens)",
                u32::MAX
            ))
        })?,
        Some((k, 0)) => {
            return Err(InputError::new(format!(
                "{at}: field \"{k}\": expected a positive integer, found 0"
            )))
        }
        Some((k, n)) if u64::from(n) > capacity => {
            return Err(InputError::new(format!(
                "{at}: field \"{k}\": {n} tokens cannot be synthesized from {} hash_ids at trace \
                 block size {tbs} (at most {capacity})",
                hash_ids.len()
            )))
        }
        Some((_, n)) => n,
    };
    if let Some(v) = f.obj.get("output_token_ids").filter(|v| !v.is_null()) {
        match v {
            Value::Array(items) if items.iter().all(|t| t.as_u64().is_some()) => {
                if items.len() != output_length as usize {
                    return Err(InputError::new(format!(
                        "{at}: field \"output_token_ids\": has {} tokens but output_length is \
                         {output_length}",
                        items.len()
                    )));
                }
            }
            _ => return Err(f.err("output_token_ids", "a list of token ids", v)),
        }
    }
    let timestamp_ms = f.ms_alias(&["timestamp", "created_time"])?;
    let delay = f.ms_alias(&["delay", "delay_ms"])?.unwrap_or(0.0);
    let tool_wait = f.ms_alias(&["tool_wait_ms"])?.unwrap_or(0.0);
    let session_id = f
        .string("session_id")?
        .unwrap_or_else(|| format!("request_{line_no}"));
    let priority = f.i32("priority")?.unwrap_or(0);
    let strict_priority = f.u32("strict_priority")?.unwrap_or(0);
    let needed = (u64::from(input_length)).div_ceil(u64::from(tbs)) as usize;
    let mut hash_ids = hash_ids;
    hash_ids.truncate(needed);
    Ok(AgenticRow {
        at: at.to_string(),
        request_id,
        session_id,
        input_length,
        output_length,
        hash_ids,
        timestamp_ms,
        wait_for: f.strings("wait_for")?,
        delay_ms: delay + tool_wait,
        priority,
        strict_priority,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse(text, "a.jsonl", 4).unwrap_err().to_string()
    }

    #[test]
    fn dependencies_delays_and_arrivals() {
        let w = parse(
            concat!(
                r#"{"request_id":"a","timestamp":100,"output_length":2,"hash_ids":[1,2]}"#,
                "\n\n",
                r#"{"request_id":"b","timestamp":150,"output_length":2,"hash_ids":[1,3],"input_length":5}"#,
                "\n",
                r#"{"request_id":"c","timestamp":1,"output_length":1,"hash_ids":[1],"wait_for":["a","b"],"delay":5,"tool_wait_ms":7}"#,
            ),
            "a.jsonl",
            4,
        )
        .unwrap();
        assert_eq!(w.requests.len(), 3);
        // The minimum timestamp (also of a row with dependencies) is the origin.
        let arrivals: Vec<_> = w.sessions.iter().map(|s| s.first_arrival_ms).collect();
        assert_eq!(arrivals, [Some(99.0), Some(149.0), None]);
        assert_eq!(w.requests[2].delay_after_previous_ms, 12.0);
        assert_eq!(w.requests[1].input_length, 5);
        assert_eq!(w.sessions[0].id, "request_1");
        assert_eq!(w.dependencies.num_waits(2), 2);
        assert_eq!(w.dependencies.dependents_of(0), [2]);
        assert_eq!(w.dependencies.dependents_of(1), [2]);
        assert!(w.dependencies.dependents_of(2).is_empty());
    }

    #[test]
    fn bad_rows_name_line_and_field() {
        let e = err(r#"{"output_length":1,"hash_ids":[1]}"#);
        assert_eq!(
            e,
            "a.jsonl:1: missing required field \"request_id\" (a non-empty string)"
        );
        let e = err(concat!(
            r#"{"request_id":"a","output_length":1,"hash_ids":[1]}"#,
            "\n",
            r#"{"request_id":"a","output_length":1,"hash_ids":[1]}"#
        ));
        assert!(e.starts_with("a.jsonl:2: field \"request_id\""), "{e}");
        let e = err(r#"{"request_id":"a","output_length":1,"hash_ids":[1],"wait_for":["x"]}"#);
        assert!(e.contains("unknown request_id \"x\""), "{e}");
        let e = err(r#"{"request_id":"a","output_length":1,"hash_ids":[1],"wait_for":["a"]}"#);
        assert!(e.contains("cannot wait for itself"), "{e}");
        let e = err(concat!(
            r#"{"request_id":"a","output_length":1,"hash_ids":[1],"wait_for":["b"]}"#,
            "\n",
            r#"{"request_id":"b","output_length":1,"hash_ids":[1],"wait_for":["a"]}"#
        ));
        assert!(e.contains("dependency cycle"), "{e}");
        let e = err(r#"{"request_id":"a","output_length":1,"hash_ids":[1],"input_length":5}"#);
        assert!(
            e.starts_with("a.jsonl:1: field \"input_length\": 5 tokens"),
            "{e}"
        );
        let e = err(r#"{"request_id":"a","output_length":1,"hash_ids":[1],"tool_wait_ms":-1}"#);
        assert!(e.contains("field \"tool_wait_ms\""), "{e}");
    }
}
