//! Tests of the Mooncake reader: fields, aliases, sessions, timing and errors through the public
//! entry points, and the fast reader against the reference reader row by row.

use super::rows::{Row, RowReader, KEYS};
use super::scan::{fast_row, scan_row, serde_row, FastRaw};
use super::*;
use proptest::prelude::*;
use std::io::Write;

fn parse(text: &str) -> Result<Workload, InputError> {
    parse_trace(text, "t.jsonl", 512)
}

fn parse_err(text: &str) -> String {
    parse(text).expect_err("expected an error").to_string()
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
        &with(r#"{"timestamp": 1, "output_length": 1, "hash_ids": [1], "strict_priority": -1}"#),
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
    .to_string();
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
    let e = parse_trace("{}", "t.jsonl", 0).unwrap_err().to_string();
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
    let w = parse("{\"timestamp\": 0, \"output_length\": 1, \"hash_ids\": [1]}\r\n\r\n").unwrap();
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
    let e = load_trace(&misnamed, 512).unwrap_err().to_string();
    assert!(e.contains("trace2.jsonl:1:") && e.contains("gzip"), "{e}");

    // Garbage with a .gz name.
    let bad = dir.path().join("bad.jsonl.gz");
    std::fs::write(&bad, b"this is not gzip at all\n").unwrap();
    let e = load_trace(&bad, 512).unwrap_err().to_string();
    assert!(e.contains("bad.jsonl.gz:1:") && e.contains("gzip"), "{e}");

    // Truncated gzip stream.
    let trunc = dir.path().join("trunc.jsonl.gz");
    std::fs::write(&trunc, &bytes[..bytes.len() - 10]).unwrap();
    let e = load_trace(&trunc, 512).unwrap_err().to_string();
    assert!(e.contains("trunc.jsonl.gz:"), "{e}");

    // Invalid UTF-8 on line 2 of a plain file.
    let bin = dir.path().join("bin.jsonl");
    let mut raw = text.lines().next().unwrap().as_bytes().to_vec();
    raw.extend_from_slice(b"\n{\"a\": \"\xff\xfe\"}\n");
    std::fs::write(&bin, raw).unwrap();
    let e = load_trace(&bin, 512).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("{}:2: ", bin.display())) && e.contains("UTF-8"),
        "{e}"
    );

    // Missing and empty files.
    let e = load_trace(&dir.path().join("nope.jsonl"), 512)
        .unwrap_err()
        .to_string();
    assert!(e.contains("nope.jsonl") && e.contains("cannot open"), "{e}");
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let e = load_trace(&empty, 512).unwrap_err().to_string();
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
    let e = load_trace(&p, 512).unwrap_err().to_string();
    assert!(e.contains("cut.jsonl:2: invalid JSON"), "{e}");
}

// ---- Fast path vs slow path -------------------------------------------------------------

/// A row with its hash ids, in a form that tells `-0.0` from `0.0`.
fn row_view(row: Row, ids: Vec<u64>) -> String {
    format!("{row:?} {ids:?}")
}

/// The slow (reference) path's row or error message for one line.
fn slow_line(line: &str) -> Result<String, String> {
    let mut ids = vec![99]; // stale ids must be cleared
    RowReader { name: "t.jsonl" }
        .slow_row(7, line, &mut ids)
        .map(|row| row_view(row, ids))
        .map_err(|e| e.to_string())
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
    let line =
        r#"{"timestamp": 1, "output_length": 1, "hash_ids": [1], "extra": {"a": [1, "\u0041"]}}"#;
    check_line(line).unwrap();
    let [(_, scan), (_, serde), _] = fast_lines(line);
    assert!(scan.is_none() && serde.is_some());
    let line = r#"{"timestamp": 1, "output_length": 1, "hash_ids": [1], "session_id": "a\nb"}"#;
    check_line(line).unwrap();
    assert!(fast_lines(line)[2].1.is_some());
}

#[test]
fn fast_path_gives_up_on_bad_rows_and_errors_are_unchanged() {
    let row = |ids: &str| format!(r#"{{"timestamp": 1, "output_length": 1, "hash_ids": {ids}}}"#);
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
