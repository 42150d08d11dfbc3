//! `mooncake-delta` traces (spec §2.4): Mooncake rows whose later turns carry only the new input.
//!
//! This module owns what makes the format differ from [`super::mooncake`]: the rows are read by
//! the Mooncake reader (same fields, aliases, sessions, delays and errors), then each session
//! becomes one token *stream* as DynoSim 1.4.2 builds it: turn k's prompt is the previous
//! turn's prompt, the output tokens that turn emitted, then turn k's own new input
//! (`hash_ids`/`input_length` of its row). The engine blocks of those streams are cut at
//! simulation time by `workload::session_streams`, not here.
//!
//! Facts from DynoSim 1.4.2 (`dynamo-mocker` `loadgen`):
//! * A trace block `h` (interned in first-seen file order, as the Mooncake reader does) is
//!   `trace_block_size` tokens of value `h`; a turn's new input is its first `input_length`
//!   of those tokens.
//! * Output tokens are the row's `output_token_ids`, else `output_length` random `u32`s from one
//!   generator seeded with `0xD37A_0A7E_5EED`. Block identity is vLLM's chained hash of token
//!   values, so random outputs never match trace content or each other: dynosim gives each
//!   output token an identity of its own instead of drawing the values (the values of authored
//!   `output_token_ids` are not used: they would only matter where two sessions have the same
//!   history *and* the same authored outputs).
//! * Engines cache the blocks a request fills while decoding under the same chained hashes,
//!   so turn k+1 finds turn k's prompt *and output* blocks in a worker's cache, and the KV
//!   router sees them: on vLLM and TRT-LLM all full blocks of its computed `input + output − 1`
//!   tokens, on SGLang all full pages of its `input + output` tokens (its radix cache keeps the
//!   last output token's slot).
//! * A trace of single-turn sessions is replayed as a plain Mooncake trace.
//! * Rejected for disaggregated replay (checked where the topology is known).
//!
//! Not modelled here: DynoSim appends only the tokens a turn actually *emitted* (none for a
//! rejected turn, fewer for an output clamped to a TRT-LLM pool or to `max_model_len`); the
//! streams assume every turn emits its planned output. Prompts only grow, so such a session's
//! later turns are refused either way (same reports as DynoSim); their records' `input_length`
//! is corrected to the emitted tokens when the run ends (`sim::collector`).

use super::{mooncake, Timing};
use crate::error::InputError;
use crate::workload::{Content, Workload};
use std::path::Path;

/// Reads a `mooncake-delta` file.
pub fn load(path: &Path, trace_block_size: u32, timing: Timing) -> Result<Workload, InputError> {
    let w = mooncake::load_trace_with(path, trace_block_size, timing)?;
    into_delta(w, &path.display().to_string())
}

#[cfg(test)]
/// Parses `mooncake-delta` text; `name` is used in error messages.
pub fn parse(
    text: &str,
    name: &str,
    trace_block_size: u32,
    timing: Timing,
) -> Result<Workload, InputError> {
    let w = mooncake::parse_trace_with(text, name, trace_block_size, timing)?;
    into_delta(w, name)
}

/// Turns a Mooncake workload read from a delta file into session streams: each turn's
/// `input_length` becomes the cumulative prompt. A workload of single-turn sessions stays as
/// it is (DynoSim replays it as a plain Mooncake trace).
fn into_delta(mut w: Workload, name: &str) -> Result<Workload, InputError> {
    if w.flat {
        return Ok(w);
    }
    let mut cumulative = 0u64;
    let mut session = u32::MAX;
    for r in &mut w.requests {
        if r.session != session {
            session = r.session;
            cumulative = 0;
        }
        let Content::Blocks { start, len } = r.content else {
            unreachable!("the Mooncake reader stores every prompt as trace blocks");
        };
        let new_input = r.input_length;
        let prompt = cumulative + u64::from(new_input);
        let sess = &w.sessions[r.session as usize];
        r.input_length = u32::try_from(prompt).map_err(|_| {
            InputError::new(format!(
                "{name}: turn {} of session \"{}\" has a cumulative prompt of {prompt} tokens \
                 (at most {} tokens)",
                r.turn + 1,
                sess.id,
                u32::MAX
            ))
        })?;
        r.content = Content::Delta {
            start,
            len,
            new_input,
        };
        cumulative = prompt + u64::from(r.output_length);
    }
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::sharing::{shared_block_count, PromptBlocks};

    /// Session "a": turn 0 = 8 tokens of id 1, 5 outputs; turn 1 = 4 new tokens of id 2,
    /// 4 outputs. Session "b": a first turn like a's (but its own outputs), then 3 tokens of 2.
    /// Session "c": one turn of id 1 only.
    const TRACE: &str = concat!(
        r#"{"session_id":"a","timestamp":0,"input_length":8,"output_length":5,"hash_ids":[1,1]}"#,
        "\n",
        r#"{"session_id":"b","timestamp":1,"input_length":8,"output_length":5,"hash_ids":[1,1]}"#,
        "\n",
        r#"{"session_id":"a","delay":5,"input_length":4,"output_length":4,"hash_ids":[2]}"#,
        "\n",
        r#"{"session_id":"b","delay":5,"input_length":3,"output_length":1,"hash_ids":[2]}"#,
        "\n",
        r#"{"session_id":"c","timestamp":2,"input_length":4,"output_length":2,"hash_ids":[1]}"#,
        "\n",
    );

    #[test]
    fn prompts_accumulate_inputs_and_outputs() {
        let w = parse(TRACE, "d.jsonl", 4, Timing::OpenLoop).unwrap();
        let lens: Vec<(u32, u32)> = w
            .requests
            .iter()
            .map(|r| (r.input_length, r.output_length))
            .collect();
        // a: 8, then 8 + 5 + 4; b: 8, then 8 + 5 + 3; c: 4.
        assert_eq!(lens, [(8, 5), (17, 4), (8, 5), (16, 1), (4, 2)]);
        assert!(w.is_delta());
        assert_eq!(w.blocks_of(&w.requests[1]), w.blocks_of(&w.requests[3]));
        assert!(matches!(
            w.requests[3].content,
            Content::Delta { new_input: 3, .. }
        ));
    }

    #[test]
    fn later_turns_find_earlier_prompt_and_output_blocks() {
        let w = parse(TRACE, "d.jsonl", 4, Timing::OpenLoop).unwrap();
        let p = PromptBlocks::new(&w, 4);
        // a0 computes 8 + 4 tokens: [1111][1111][oooo], all in a1's prompt; the first two are
        // b's too, and c holds the first.
        assert_eq!(p.sequence_of(0).len(), 3);
        assert_eq!(p.of(0).len(), 2);
        // a1's prompt: [1111][1111][oooo][o222][2]: the first three are a0's sequence, the
        // fourth is its own.
        assert_eq!(p.of(1), p.sequence_of(0));
        assert_eq!(p.sequence_of(1), p.of(1));
        // b's outputs differ from a's: b1 shares only the trace blocks with a1.
        assert_eq!(p.of(3), p.sequence_of(2));
        assert_eq!(p.of(3)[..2], p.of(1)[..2]);
        assert_ne!(p.of(3)[2], p.of(1)[2]);
        // c: one block of id 1, shared with the first block of everybody.
        assert_eq!(p.of(4), &p.of(0)[..1]);
        // Stored once per session: a's and b's three blocks, c's one.
        assert_eq!(shared_block_count(&w, 4), 7);
        // The block cut does not depend on how the runs were split into trace blocks.
        let p2 = PromptBlocks::new(&w, 2);
        assert_eq!(p2.of(4).len(), 2);
        assert_eq!(p2.of(4), &p2.of(0)[..2]);
    }

    #[test]
    fn sglang_finds_the_block_of_the_last_output_token() {
        // Turn 0: 8 tokens of id 1 and 4 outputs, [1111][1111][oooo]; vLLM computes 11 of
        // those tokens (two full blocks), SGLang's radix cache keeps all 12 (three). Turn 1
        // adds 4 tokens of id 2: its prompt holds all three.
        let text = concat!(
            r#"{"session_id":"d","timestamp":0,"input_length":8,"output_length":4,"hash_ids":[1,1]}"#,
            "\n",
            r#"{"session_id":"d","delay":1,"input_length":4,"output_length":1,"hash_ids":[2]}"#,
        );
        let w = parse(text, "d.jsonl", 4, Timing::OpenLoop).unwrap();
        let p = PromptBlocks::new(&w, 4);
        assert_eq!(p.sequence_of(0).len(), 2);
        assert_eq!(p.whole_sequence_of(0).len(), 3);
        assert_eq!(p.of(1), p.whole_sequence_of(0));
        // The last turn keeps ids only for blocks an earlier turn holds too.
        assert_eq!(p.whole_sequence_of(1), p.sequence_of(1));
    }

    #[test]
    fn single_turn_sessions_are_a_plain_mooncake_trace() {
        let text = r#"{"timestamp":0,"input_length":8,"output_length":4,"hash_ids":[1,1]}"#;
        let w = parse(text, "d.jsonl", 4, Timing::OpenLoop).unwrap();
        assert!(!w.is_delta());
        assert_eq!(w.requests[0].input_length, 8);
    }
}
