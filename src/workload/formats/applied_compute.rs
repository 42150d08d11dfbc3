//! `applied_compute_agentic` traces (spec §2.6): one line per agent session, given as lengths
//! only. A line with `num_turns = n` is a session of n + 1 requests: request k's prompt is the
//! initial prompt plus, for every earlier turn j, the assistant response and the tool output of
//! turn j; it asks for `assistant_response_length[k]` tokens (the last one for
//! `final_assistant_response_length`) and is sent `tool_call_latency[k − 1]` seconds after request
//! k − 1 completes.
//!
//! Facts from DynoSim 1.4.2:
//! * The traces have no timestamps, so replay needs `--replay-concurrency` (sessions start in
//!   file order). The session of line i is `applied_compute_agentic_session_<i>`.
//! * Each new prompt block gets a fresh id, so a session's prompts extend each other and nothing
//!   is shared across sessions, except that with `--trace-shared-prefix-ratio r > 0` and
//!   `--trace-num-prefix-groups g > 0` the first `round(ceil(input_prompt_length / tbs) × r)`
//!   blocks of a session's prompt are the blocks of prefix group `line_index mod g` (0-based).
//! * `input_prompt_length` must be positive; the three per-turn lists must have `num_turns`
//!   entries; latencies must be finite and non-negative. Unknown fields are ignored.

use super::agentic::{check_block_size, Fields};
use super::{content_of, describe, for_each_line, parse_json_line};
use crate::error::InputError;
use crate::workload::blocks::BlockInterner;
use crate::workload::{RequestSpec, SessionSpec, Workload};
use serde_json::Value;
use std::path::Path;

/// Raw ids of shared group blocks: `GROUP_TAG | group << 32 | block index`, as DynoSim numbers
/// them (kept apart from the sequential ids of unshared blocks).
const GROUP_TAG: u64 = 0xA63E_0000_0000_0000;

struct Builder<'a> {
    name: &'a str,
    tbs: u32,
    shared_prefix_ratio: f64,
    num_prefix_groups: u32,
    interner: BlockInterner,
    next_unique: u64,
    sessions: Vec<SessionSpec>,
    requests: Vec<RequestSpec>,
    /// Raw ids of the session being built (reused).
    ids: Vec<u64>,
    /// Index of the next non-blank record (0-based), which picks the prefix group.
    record: u64,
}

/// Reads an `applied_compute_agentic` file.
pub fn load(
    path: &Path,
    trace_block_size: u32,
    shared_prefix_ratio: f64,
    num_prefix_groups: u32,
) -> Result<Workload, InputError> {
    let name = path.display().to_string();
    let mut b = Builder::new(
        &name,
        trace_block_size,
        shared_prefix_ratio,
        num_prefix_groups,
    )?;
    for_each_line(path, |line_no, line| b.push_line(line_no, line))?;
    b.finish()
}

#[cfg(test)]
/// Parses `applied_compute_agentic` text (tests); `name` is used in errors.
pub fn parse(
    text: &str,
    name: &str,
    trace_block_size: u32,
    shared_prefix_ratio: f64,
    num_prefix_groups: u32,
) -> Result<Workload, InputError> {
    let mut b = Builder::new(
        name,
        trace_block_size,
        shared_prefix_ratio,
        num_prefix_groups,
    )?;
    for (i, line) in text.split('\n').enumerate() {
        b.push_line(i as u64 + 1, line)?;
    }
    b.finish()
}

impl<'a> Builder<'a> {
    fn new(name: &'a str, tbs: u32, ratio: f64, groups: u32) -> Result<Self, InputError> {
        check_block_size(name, tbs)?;
        if !(0.0..=1.0).contains(&ratio) {
            return Err(InputError::new(format!(
                "--trace-shared-prefix-ratio must be between 0 and 1, got {ratio}"
            )));
        }
        Ok(Builder {
            name,
            tbs,
            shared_prefix_ratio: ratio,
            num_prefix_groups: groups,
            interner: BlockInterner::default(),
            next_unique: 1,
            sessions: Vec::new(),
            requests: Vec::new(),
            ids: Vec::new(),
            record: 0,
        })
    }

    fn push_line(&mut self, line_no: u64, line: &str) -> Result<(), InputError> {
        let Some(line) = content_of(line) else {
            return Ok(());
        };
        let at = format!("{}:{line_no}", self.name);
        let value: Value = parse_json_line(self.name, line_no, line)?;
        let Value::Object(obj) = value else {
            return Err(InputError::new(format!(
                "{at}: expected a JSON object, found {}",
                describe(&value)
            )));
        };
        let f = Fields {
            at: &at,
            path: "",
            obj: &obj,
        };
        let num_turns = f
            .u32("num_turns")?
            .ok_or_else(|| f.missing("num_turns", "a non-negative integer"))?;
        let prompt = f
            .u64("input_prompt_length")?
            .ok_or_else(|| f.missing("input_prompt_length", "a positive integer"))?;
        if prompt == 0 {
            return Err(InputError::new(format!(
                "{at}: field \"input_prompt_length\": expected a positive integer, found 0"
            )));
        }
        let responses = self.lengths(&f, "assistant_response_length", num_turns)?;
        let tool_outputs = self.lengths(&f, "tool_call_output_length", num_turns)?;
        let latencies = latencies(&f, num_turns)?;
        let last_response = f.u64("final_assistant_response_length")?.ok_or_else(|| {
            f.missing("final_assistant_response_length", "a non-negative integer")
        })?;

        let tbs = u64::from(self.tbs);
        let group = (self.shared_prefix_ratio > 0.0 && self.num_prefix_groups > 0)
            .then(|| self.record % u64::from(self.num_prefix_groups));
        let shared_blocks = (prompt.div_ceil(tbs) as f64 * self.shared_prefix_ratio).round() as u64;
        self.record += 1;

        let session = u32::try_from(self.sessions.len())
            .map_err(|_| InputError::new(format!("{at}: too many sessions")))?;
        let first_request = self.requests.len() as u32;
        self.ids.clear();
        let mut input = prompt;
        for turn in 0..=num_turns as usize {
            self.extend_ids(input, shared_blocks, group);
            let output = responses.get(turn).copied().unwrap_or(last_response);
            let delay_ms = if turn == 0 { 0.0 } else { latencies[turn - 1] };
            let too_long = |what: &str, n: u64| {
                InputError::new(format!(
                    "{at}: {what} of {n} tokens in turn {turn} is too long (at most {} tokens)",
                    u32::MAX
                ))
            };
            let input_length = u32::try_from(input).map_err(|_| too_long("prompt", input))?;
            let output_length = u32::try_from(output).map_err(|_| too_long("response", output))?;
            let content = self
                .interner
                .push_prompt(self.ids.iter().copied())
                .ok_or_else(|| InputError::new(format!("{at}: too many blocks in the trace")))?;
            let uuid = self.requests.len() as u64 + 1;
            self.requests.push(RequestSpec {
                uuid,
                input_length,
                output_length,
                content,
                session,
                turn: turn as u32,
                delay_after_previous_ms: delay_ms,
                priority: 0,
                strict_priority: 0,
            });
            if turn < num_turns as usize {
                input = input
                    .checked_add(responses[turn])
                    .and_then(|n| n.checked_add(tool_outputs[turn]))
                    .ok_or_else(|| too_long("prompt", u64::MAX))?;
            }
        }
        if self.requests.len() > u32::MAX as usize {
            return Err(InputError::new(format!("{at}: too many requests")));
        }
        self.sessions.push(SessionSpec {
            id: format!("applied_compute_agentic_session_{line_no}"),
            first_arrival_ms: None,
            first_request,
            num_turns: num_turns + 1,
        });
        Ok(())
    }

    /// Grows the session's raw ids to cover `input` tokens: shared group ids for the first
    /// `shared_blocks` blocks (when grouped), fresh sequential ids after.
    fn extend_ids(&mut self, input: u64, shared_blocks: u64, group: Option<u64>) {
        let target = input.div_ceil(u64::from(self.tbs));
        while (self.ids.len() as u64) < target {
            let block = self.ids.len() as u64;
            match group {
                Some(g) if block < shared_blocks => self.ids.push(GROUP_TAG | g << 32 | block),
                _ => {
                    self.ids.push(self.next_unique);
                    self.next_unique += 1;
                }
            }
        }
    }

    fn lengths(&self, f: &Fields, key: &str, num_turns: u32) -> Result<Vec<u64>, InputError> {
        let v = f.obj.get(key).filter(|v| !v.is_null());
        let Some(v) = v else {
            return Err(f.missing(key, "a list of non-negative integers"));
        };
        let Value::Array(items) = v else {
            return Err(f.err(key, "a list of non-negative integers", v));
        };
        check_len(f, key, items.len(), num_turns)?;
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                item.as_u64().ok_or_else(|| {
                    InputError::new(format!(
                        "{}: field \"{key}\": expected a list of non-negative integers, element \
                         {i} is {}",
                        f.at,
                        describe(item)
                    ))
                })
            })
            .collect()
    }

    fn finish(self) -> Result<Workload, InputError> {
        if self.requests.is_empty() {
            return Err(InputError::new(format!(
                "{}: the trace contains no requests (the file is empty or has only blank lines)",
                self.name
            )));
        }
        let flat = self.sessions.iter().all(|s| s.num_turns == 1);
        let num_distinct_blocks = self.interner.num_distinct();
        Ok(Workload {
            sessions: self.sessions,
            requests: self.requests,
            block_ids: self.interner.block_ids,
            trace_block_size: self.tbs,
            num_distinct_blocks,
            flat,
            warnings: Vec::new(),
            dependencies: Default::default(),
            warmup_sessions: 0,
        })
    }
}

fn check_len(f: &Fields, key: &str, len: usize, num_turns: u32) -> Result<(), InputError> {
    if len != num_turns as usize {
        return Err(InputError::new(format!(
            "{}: field \"{key}\": has {len} entries but num_turns is {num_turns}",
            f.at
        )));
    }
    Ok(())
}

/// `tool_call_latency` in seconds, returned in ms.
fn latencies(f: &Fields, num_turns: u32) -> Result<Vec<f64>, InputError> {
    const KEY: &str = "tool_call_latency";
    const WHAT: &str = "a list of non-negative numbers (seconds)";
    let Some(v) = f.obj.get(KEY).filter(|v| !v.is_null()) else {
        return Err(f.missing(KEY, WHAT));
    };
    let Value::Array(items) = v else {
        return Err(f.err(KEY, WHAT, v));
    };
    check_len(f, KEY, items.len(), num_turns)?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item.as_f64() {
            Some(s) if s.is_finite() && s >= 0.0 => Ok(s * 1000.0),
            _ => Err(InputError::new(format!(
                "{}: field \"{KEY}\": expected {WHAT}, element {i} is {}",
                f.at,
                describe(item)
            ))),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_accumulate_context_and_groups_share_prefixes() {
        let text = concat!(
            r#"{"num_turns":1,"input_prompt_length":10,"assistant_response_length":[3],"tool_call_output_length":[4],"tool_call_latency":[1.5],"final_assistant_response_length":2}"#,
            "\n",
            r#"{"num_turns":0,"input_prompt_length":9,"assistant_response_length":[],"tool_call_output_length":[],"tool_call_latency":[],"final_assistant_response_length":5}"#,
            "\n",
            r#"{"num_turns":0,"input_prompt_length":8,"assistant_response_length":[],"tool_call_output_length":[],"tool_call_latency":[],"final_assistant_response_length":5}"#,
        );
        let w = parse(text, "ac.jsonl", 4, 0.5, 2).unwrap();
        assert_eq!(w.sessions.len(), 3);
        assert_eq!(w.sessions[0].num_turns, 2);
        assert_eq!(w.sessions[0].id, "applied_compute_agentic_session_1");
        let r = &w.requests;
        assert_eq!((r[0].input_length, r[0].output_length), (10, 3));
        assert_eq!((r[1].input_length, r[1].output_length), (17, 2));
        assert_eq!(r[1].delay_after_previous_ms, 1500.0);
        // Turn 1 extends turn 0's blocks.
        assert_eq!(w.blocks_of(&r[0]), &w.blocks_of(&r[1])[..3]);
        // Sessions 1 and 3 are group 0: session 3 shares round(2 x 0.5) = 1 leading block with
        // session 1 (which has round(3 x 0.5) = 2 group blocks); session 2 (group 1) shares none.
        assert_eq!(w.blocks_of(&r[0])[..1], w.blocks_of(&r[3])[..1]);
        assert_ne!(w.blocks_of(&r[0])[1], w.blocks_of(&r[3])[1]);
        assert_ne!(w.blocks_of(&r[0])[0], w.blocks_of(&r[2])[0]);
        assert!(w.sessions.iter().all(|s| s.first_arrival_ms.is_none()));
    }

    #[test]
    fn bad_records_name_line_and_field() {
        let e = parse(
            r#"{"num_turns":1,"input_prompt_length":10,"assistant_response_length":[],"tool_call_output_length":[1],"tool_call_latency":[1],"final_assistant_response_length":2}"#,
            "ac.jsonl",
            4,
            0.0,
            0,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "ac.jsonl:1: field \"assistant_response_length\": has 0 entries but num_turns is 1"
        );
        let e = parse(
            "\n{\"num_turns\":0,\"input_prompt_length\":0,\"assistant_response_length\":[],\"tool_call_output_length\":[],\"tool_call_latency\":[],\"final_assistant_response_length\":2}",
            "ac.jsonl",
            4,
            0.0,
            0,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("ac.jsonl:2: field \"input_prompt_length\""),
            "{e}"
        );
    }
}
