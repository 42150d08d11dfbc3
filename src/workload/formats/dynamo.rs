//! Dynamo request traces (`dynamo.request.trace.v1`, spec §2.7): the JSONL records a Dynamo
//! frontend writes, one file or several shards (plain, or gzip by `.gz` name, multi-member).
//!
//! Facts from DynoSim 1.4.2:
//! * A line is a record, or `{"event": record}`. Lines that are not JSON objects, wrappers whose
//!   `event` is not an object and `request_payload` records are skipped. Every other record
//!   needs `schema` = `"dynamo.request.trace.v1"`, `event_type` and `event_time_unix_ms`; event
//!   types other than `request_end`, `tool_start`, `tool_end` and `tool_error` are an error.
//!   Only `request_end` records become requests.
//! * A `request_end` record needs `request.request_id` (unique over all files),
//!   `request.request_received_ms`, `request.output_tokens` and `request.replay` with
//!   `trace_block_size` > 0, `input_length` and exactly `ceil(input_length / trace_block_size)`
//!   `input_sequence_hashes`. All records share one block size, which `--trace-block-size` must
//!   match when given.
//! * start = `request_received_ms`; end = start + round(`total_time_ms`) (else the event time).
//!   Requests are ordered by (start, end, request_id); arrival = start − earliest start; sequence
//!   hashes become dense block ids in that order.
//! * Without `agent_context` every request is independent (like a single-turn Mooncake trace).
//!   When every record has one, requests of a session run one after the other: each waits for
//!   the previous one of its session, plus the gap `max(0, start − previous end)` recorded in
//!   the trace (an agentic workload, see `agentic.rs`). Mixing both kinds is an error.

use super::agentic::{AgenticBuilder, AgenticRow, Fields};
use super::{content_of, describe, for_each_line, Timing};
use crate::error::InputError;
use crate::workload::blocks::BlockInterner;
use crate::workload::{RequestSpec, SessionSpec, Workload};
use rustc_hash::FxHashMap as HashMap;
use serde_json::{Map, Value};
use std::path::PathBuf;

const SCHEMA: &str = "dynamo.request.trace.v1";

/// One `request_end` record.
struct Record {
    at: String,
    request_id: String,
    session_id: Option<String>,
    start_ms: u64,
    end_ms: u64,
    input_length: u32,
    output_length: u32,
    block_size: u32,
    hashes: Vec<u64>,
}

/// Reads the shards of a Dynamo request trace. `trace_block_size` is `--trace-block-size`, if
/// given.
pub fn load(
    paths: &[PathBuf],
    trace_block_size: Option<u32>,
    timing: Timing,
) -> Result<Workload, InputError> {
    let mut records = Vec::new();
    let mut ids: HashMap<String, String> = HashMap::default();
    for path in paths {
        let name = path.display().to_string();
        for_each_line(path, |line_no, line| {
            let Some(line) = content_of(line) else {
                return Ok(());
            };
            let at = format!("{name}:{line_no}");
            if let Some(r) = parse_line(&at, line)? {
                if let Some(first) = ids.insert(r.request_id.clone(), at.clone()) {
                    return Err(InputError::new(format!(
                        "{at}: field \"request.request_id\": \"{}\" was already used at {first}",
                        r.request_id
                    )));
                }
                records.push(r);
            }
            Ok(())
        })?;
    }
    let names = paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    build(records, &names, trace_block_size, timing)
}

#[cfg(test)]
/// Parses the lines of one in-memory shard (tests).
pub fn parse(
    text: &str,
    name: &str,
    trace_block_size: Option<u32>,
    timing: Timing,
) -> Result<Workload, InputError> {
    let mut records = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        let Some(line) = content_of(line) else {
            continue;
        };
        if let Some(r) = parse_line(&format!("{name}:{}", i + 1), line)? {
            records.push(r);
        }
    }
    build(records, name, trace_block_size, timing)
}

fn build(
    mut records: Vec<Record>,
    names: &str,
    trace_block_size: Option<u32>,
    timing: Timing,
) -> Result<Workload, InputError> {
    let Some(first) = records.first() else {
        return Err(InputError::new(format!(
            "{names}: no request_end records with replay fields found"
        )));
    };
    let tbs = first.block_size;
    if let Some(r) = records.iter().find(|r| r.block_size != tbs) {
        return Err(InputError::new(format!(
            "{}: field \"request.replay.trace_block_size\": {} differs from {tbs} of {} (mixed \
             block sizes are not supported)",
            r.at, r.block_size, first.at
        )));
    }
    if let Some(flag) = trace_block_size.filter(|&f| f != tbs) {
        return Err(InputError::new(format!(
            "--trace-block-size {flag} does not match the block size {tbs} embedded in the Dynamo \
             request trace (omit the flag)"
        )));
    }
    let with_context = records.iter().filter(|r| r.session_id.is_some()).count();
    if with_context != 0 && with_context != records.len() {
        let r = records
            .iter()
            .find(|r| r.session_id.is_none())
            .unwrap_or(first);
        return Err(InputError::new(format!(
            "{}: record without \"agent_context\" in a trace whose other records have one (a \
             Dynamo request trace cannot mix both)",
            r.at
        )));
    }
    records.sort_by(|a, b| {
        (a.start_ms, a.end_ms, &a.request_id).cmp(&(b.start_ms, b.end_ms, &b.request_id))
    });
    let min_start = records[0].start_ms;
    if with_context == 0 {
        independent(records, tbs, min_start, timing)
    } else {
        chained(records, names, tbs, min_start)
    }
}

/// Requests without agent context: one single-turn session each, named `request_<k>` for the
/// k-th request in arrival order (1-based), as DynoSim names them.
fn independent(
    records: Vec<Record>,
    tbs: u32,
    min_start: u64,
    timing: Timing,
) -> Result<Workload, InputError> {
    let mut interner = BlockInterner::default();
    let mut sessions = Vec::with_capacity(records.len());
    let mut requests = Vec::with_capacity(records.len());
    for (i, r) in records.into_iter().enumerate() {
        let content = interner
            .push_prompt(r.hashes)
            .ok_or_else(|| InputError::new(format!("{}: too many hash ids (limit 2^32)", r.at)))?;
        sessions.push(SessionSpec {
            id: format!("request_{}", i + 1),
            first_arrival_ms: match timing {
                Timing::OpenLoop => Some((r.start_ms - min_start) as f64),
                Timing::ClosedLoop => None,
            },
            first_request: i as u32,
            num_turns: 1,
        });
        requests.push(RequestSpec {
            uuid: i as u64 + 1,
            input_length: r.input_length,
            output_length: r.output_length,
            content,
            session: i as u32,
            turn: 0,
            delay_after_previous_ms: 0.0,
            priority: 0,
            strict_priority: 0,
        });
    }
    let num_distinct_blocks = interner.num_distinct();
    Ok(Workload {
        sessions,
        requests,
        block_ids: interner.block_ids,
        trace_block_size: tbs,
        num_distinct_blocks,
        flat: true,
        warnings: Vec::new(),
        dependencies: Default::default(),
        warmup_sessions: 0,
    })
}

/// Requests with agent context: each waits for the previous request of its session.
fn chained(
    records: Vec<Record>,
    names: &str,
    tbs: u32,
    min_start: u64,
) -> Result<Workload, InputError> {
    let mut previous: HashMap<String, (String, u64)> = HashMap::default();
    let mut b = AgenticBuilder::new(names, tbs);
    for r in records {
        let session = r.session_id.unwrap_or_default();
        let (wait_for, delay_ms) = match previous.get(&session) {
            Some((id, end)) => (vec![id.clone()], r.start_ms.saturating_sub(*end) as f64),
            None => (Vec::new(), 0.0),
        };
        previous.insert(session.clone(), (r.request_id.clone(), r.end_ms));
        b.push(AgenticRow {
            at: r.at,
            request_id: r.request_id,
            session_id: session,
            input_length: r.input_length,
            output_length: r.output_length,
            hash_ids: r.hashes,
            timestamp_ms: Some((r.start_ms - min_start) as f64),
            wait_for,
            delay_ms,
            priority: 0,
            strict_priority: 0,
        })?;
    }
    b.finish()
}

/// The record of a line (unwrapping `{"event": ...}`), or `None` for skipped lines.
fn parse_line(at: &str, line: &str) -> Result<Option<Record>, InputError> {
    let value: Value = serde_json::from_str(line).map_err(|e| {
        InputError::new(format!(
            "{at}: invalid JSON: {e}; each line must be one JSON object"
        ))
    })?;
    let Value::Object(mut obj) = value else {
        return Ok(None);
    };
    let obj = match obj.remove("event") {
        Some(Value::Object(inner)) => inner,
        Some(Value::Null) | None => obj,
        Some(_) => return Ok(None),
    };
    if obj.get("event_type").and_then(Value::as_str) == Some("request_payload") {
        return Ok(None);
    }
    let f = Fields {
        at,
        path: "",
        obj: &obj,
    };
    match f.string("schema")? {
        None => return Err(f.missing("schema", &format!("\"{SCHEMA}\""))),
        Some(s) if s != SCHEMA => {
            return Err(InputError::new(format!(
                "{at}: field \"schema\": expected \"{SCHEMA}\", found \"{s}\""
            )))
        }
        Some(_) => {}
    }
    let event_type = f
        .string("event_type")?
        .ok_or_else(|| f.missing("event_type", "a string"))?;
    let event_time = f
        .u64("event_time_unix_ms")?
        .ok_or_else(|| f.missing("event_time_unix_ms", "a non-negative integer (ms)"))?;
    match event_type.as_str() {
        "request_end" => {}
        "tool_start" | "tool_end" | "tool_error" => return Ok(None),
        other => {
            return Err(InputError::new(format!(
                "{at}: field \"event_type\": expected request_end, tool_start, tool_end, \
                 tool_error or request_payload, found \"{other}\""
            )))
        }
    }
    let session_id = match obj.get("agent_context").filter(|v| !v.is_null()) {
        None => None,
        Some(Value::Object(ctx)) => Some(
            nested(at, "agent_context.", ctx)
                .string("session_id")?
                .ok_or_else(|| missing_nested(at, "agent_context.session_id", "a string"))?,
        ),
        Some(v) => return Err(f.err("agent_context", "an object", v)),
    };
    let request = object(&f, "request")?;
    let req = nested(at, "request.", request);
    let request_id = req
        .string("request_id")?
        .ok_or_else(|| missing_nested(at, "request.request_id", "a string"))?;
    let start_ms = req
        .u64("request_received_ms")?
        .ok_or_else(|| missing_nested(at, "request.request_received_ms", "an integer (ms)"))?;
    let output = req
        .u64("output_tokens")?
        .ok_or_else(|| missing_nested(at, "request.output_tokens", "a non-negative integer"))?;
    let total_ms = req.f64("total_time_ms")?;
    let replay = object(&req, "replay")?;
    let rep = nested(at, "request.replay.", replay);
    let block_size = rep
        .u32("trace_block_size")?
        .filter(|&b| b > 0)
        .ok_or_else(|| missing_nested(at, "request.replay.trace_block_size", "an integer > 0"))?;
    let input = rep
        .u32("input_length")?
        .ok_or_else(|| missing_nested(at, "request.replay.input_length", "an integer > 0"))?;
    if input == 0 {
        return Err(InputError::new(format!(
            "{at}: field \"request.replay.input_length\": expected a positive integer, found 0"
        )));
    }
    let hashes = rep.ids("input_sequence_hashes")?.ok_or_else(|| {
        missing_nested(
            at,
            "request.replay.input_sequence_hashes",
            "a list of integers",
        )
    })?;
    let expected = input.div_ceil(block_size) as usize;
    if hashes.len() != expected {
        return Err(InputError::new(format!(
            "{at}: field \"request.replay.input_sequence_hashes\": input_length {input} at block \
             size {block_size} needs exactly {expected} hashes, found {}",
            hashes.len()
        )));
    }
    let output_length = u32::try_from(output).map_err(|_| {
        InputError::new(format!(
            "{at}: field \"request.output_tokens\": {output} is too large (at most {})",
            u32::MAX
        ))
    })?;
    let end_ms = match total_ms {
        Some(t) => start_ms.saturating_add(t.max(0.0).round() as u64),
        None => event_time,
    };
    Ok(Some(Record {
        at: at.to_string(),
        request_id,
        session_id,
        start_ms,
        end_ms,
        input_length: input,
        output_length,
        block_size,
        hashes,
    }))
}

fn nested<'a>(at: &'a str, path: &'a str, obj: &'a Map<String, Value>) -> Fields<'a> {
    Fields { at, path, obj }
}

fn missing_nested(at: &str, key: &str, expected: &str) -> InputError {
    InputError::new(format!(
        "{at}: missing required field \"{key}\" ({expected})"
    ))
}

fn object<'a>(f: &Fields<'a>, key: &str) -> Result<&'a Map<String, Value>, InputError> {
    match f.obj.get(key) {
        Some(Value::Object(o)) => Ok(o),
        None | Some(Value::Null) => Err(f.missing(key, "an object")),
        Some(v) => Err(InputError::new(format!(
            "{}: field \"{key}\": expected an object, found {}",
            f.at,
            describe(v)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: &str, start: u64, total: f64, hashes: &str, ctx: &str) -> String {
        format!(
            r#"{{"schema":"dynamo.request.trace.v1","event_type":"request_end","event_time_unix_ms":{},"request":{{"request_id":"{id}","request_received_ms":{start},"total_time_ms":{total},"output_tokens":3,"replay":{{"trace_block_size":4,"input_length":8,"input_sequence_hashes":{hashes}}}}}{ctx}}}"#,
            start + 1
        )
    }

    #[test]
    fn records_are_sorted_and_interned_in_time_order() {
        let text = [
            rec("b", 1100, 10.0, "[7,8]", ""),
            r#"{"event":{"event_type":"request_payload"}}"#.to_string(),
            "[1,2]".to_string(),
            format!(
                r#"{{"ts":1,"event":{}}}"#,
                rec("a", 1000, 10.0, "[7,9]", "")
            ),
        ]
        .join("\n");
        let w = parse(&text, "d.jsonl", None, Timing::OpenLoop).unwrap();
        assert_eq!(w.trace_block_size, 4);
        let arrivals: Vec<_> = w.sessions.iter().map(|s| s.first_arrival_ms).collect();
        assert_eq!(arrivals, [Some(0.0), Some(100.0)]);
        assert_eq!(w.sessions[0].id, "request_1");
        assert_eq!(w.blocks_of(&w.requests[0]), [0, 1]);
        assert_eq!(w.blocks_of(&w.requests[1]), [0, 2]);
        let e = parse(&text, "d.jsonl", Some(8), Timing::OpenLoop)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--trace-block-size 8"), "{e}");
    }

    #[test]
    fn sessions_chain_with_recorded_gaps() {
        let ctx = r#","agent_context":{"session_id":"s"}"#;
        let text = [
            rec("r1", 1000, 50.0, "[1,2]", ctx),
            rec("r2", 1080, 10.0, "[1,3]", ctx),
            rec(
                "r3",
                1020,
                10.0,
                "[4,5]",
                r#","agent_context":{"session_id":"t"}"#,
            ),
        ]
        .join("\n");
        let w = parse(&text, "d.jsonl", None, Timing::OpenLoop).unwrap();
        // Order r1, r3, r2; r2 waits for r1 plus 1080 - 1050 = 30 ms.
        assert_eq!(w.sessions[1].first_arrival_ms, Some(20.0));
        assert_eq!(w.sessions[2].first_arrival_ms, None);
        assert_eq!(w.requests[2].delay_after_previous_ms, 30.0);
        assert_eq!(w.dependencies.dependents_of(0), [2]);
    }

    #[test]
    fn bad_records_name_line_and_field() {
        let bad = rec("a", 1000, 1.0, "[1]", "");
        let e = parse(&bad, "d.jsonl", None, Timing::OpenLoop)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("d.jsonl:1: field \"request.replay.input_sequence_hashes\""),
            "{e}"
        );
        let e = parse(
            r#"{"schema":"dynamo.request.trace.v1","event_type":"request_start","event_time_unix_ms":1}"#,
            "d.jsonl",
            None,
            Timing::OpenLoop,
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("d.jsonl:1: field \"event_type\""), "{e}");
        let e = parse(
            r#"{"event_type":"request_end","event_time_unix_ms":1}"#,
            "d.jsonl",
            None,
            Timing::OpenLoop,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("missing required field \"schema\""), "{e}");
    }
}
