//! Bad traces and bad sweep specs through the real binary: each must exit with status 2, print
//! one `error:` line naming where (file:line and field, or the spec's key path) and what was
//! expected, and leave nothing behind. Also: configurations that would outgrow memory are
//! refused, a failed run leaves no report, and the fuzzers' crashing inputs stay fixed.
//!
//! Bad `run` flags and JSON arguments are covered by `tests/cli_run.rs`.

use assert_cmd::cargo::cargo_bin_cmd;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::Output;

/// A valid trace row.
const ROW: &str =
    r#"{"timestamp": 0, "input_length": 600, "output_length": 4, "hash_ids": [1, 2]}"#;

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Checks exit code 2, one `error:` line on stderr containing every word, nothing on stdout.
fn assert_refused(case: &str, out: &Output, words: &[&str]) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{case}: stderr {stderr}");
    assert!(out.stdout.is_empty(), "{case}: printed to stdout");
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(errors.len(), 1, "{case}: {stderr}");
    assert!(!stderr.contains("panicked"), "{case}: {stderr}");
    for w in words {
        assert!(stderr.contains(w), "{case}: {stderr:?} lacks {w:?}");
    }
    stderr
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// `dynosim run <name> --report-json out/r.json --report-jsonl out/r.jsonl` in a folder holding
/// only the trace (`None` content: no file at all).
fn run_trace(name: &str, content: Option<&[u8]>, extra: &[&str]) -> (tempfile::TempDir, Output) {
    let dir = tempfile::tempdir().unwrap();
    if let Some(bytes) = content {
        fs::write(dir.path().join(name), bytes).unwrap();
    }
    let out = cargo_bin_cmd!("dynosim")
        .current_dir(dir.path())
        .env_remove("DYN_ROUTER_POLICY_CONFIG")
        .args(["run", name])
        .args(extra)
        .args([
            "--report-json",
            "out/r.json",
            "--report-jsonl",
            "out/r.jsonl",
        ])
        .output()
        .unwrap();
    (dir, out)
}

/// Rows joined by newlines, `bad` on line 2 after a good row.
fn with_bad_row(bad: &str) -> Vec<u8> {
    format!("{ROW}\n{bad}\n{ROW}\n").into_bytes()
}

#[test]
fn bad_traces_name_the_file_line_and_field() {
    let cases: Vec<(&str, Vec<u8>, Vec<&str>)> = vec![
        (
            "malformed.jsonl",
            with_bad_row(r#"{"timestamp": 1, output_length: 4, "hash_ids": [1]}"#),
            vec!["malformed.jsonl:2:", "invalid JSON", "column 18", "JSON object"],
        ),
        (
            "missing_hash_ids.jsonl",
            with_bad_row(r#"{"timestamp": 1, "output_length": 4}"#),
            vec![
                "missing_hash_ids.jsonl:2:",
                "missing required field \"hash_ids\"",
                "list of non-negative integers",
            ],
        ),
        (
            "missing_output.jsonl",
            with_bad_row(r#"{"timestamp": 1, "hash_ids": [1]}"#),
            vec![
                "missing_output.jsonl:2:",
                "missing required field \"output_length\"",
                "non-negative integer",
            ],
        ),
        (
            "hash_ids_string.jsonl",
            with_bad_row(r#"{"timestamp": 1, "output_length": 4, "hash_ids": "1,2"}"#),
            vec![
                "hash_ids_string.jsonl:2:",
                "field \"hash_ids\"",
                "expected a non-empty list",
                "found a string",
            ],
        ),
        (
            "hash_ids_number.jsonl",
            with_bad_row(r#"{"timestamp": 1, "output_length": 4, "hash_ids": 7}"#),
            vec![":2:", "field \"hash_ids\"", "found the integer 7"],
        ),
        (
            "hash_ids_empty.jsonl",
            with_bad_row(r#"{"timestamp": 1, "output_length": 4, "hash_ids": []}"#),
            vec![":2:", "field \"hash_ids\"", "empty list"],
        ),
        (
            "hash_id_negative.jsonl",
            with_bad_row(r#"{"timestamp": 1, "output_length": 4, "hash_ids": [3, -1]}"#),
            vec![":2:", "field \"hash_ids\"", "element 1", "negative integer -1"],
        ),
        (
            "hash_id_too_big.jsonl",
            with_bad_row(
                r#"{"timestamp": 1, "output_length": 4, "hash_ids": [99999999999999999999]}"#,
            ),
            vec![":2:", "field \"hash_ids\"", "element 0", "out of the 64-bit range"],
        ),
        (
            "hash_id_float.jsonl",
            with_bad_row(r#"{"timestamp": 1, "output_length": 4, "hash_ids": [1.5]}"#),
            vec![":2:", "field \"hash_ids\"", "non-integer number 1.5"],
        ),
        (
            "negative_output.jsonl",
            with_bad_row(r#"{"timestamp": 1, "output_length": -3, "hash_ids": [1]}"#),
            vec![
                "negative_output.jsonl:2:",
                "field \"output_length\"",
                "expected a non-negative integer",
                "negative integer -3",
            ],
        ),
        (
            "output_float.jsonl",
            with_bad_row(r#"{"timestamp": 1, "output_tokens": 2.5, "hash_ids": [1]}"#),
            vec![":2:", "field \"output_tokens\"", "non-integer"],
        ),
        (
            "output_too_big.jsonl",
            with_bad_row(r#"{"timestamp": 1, "output_length": 5000000000, "hash_ids": [1]}"#),
            vec![":2:", "field \"output_length\"", "too large"],
        ),
        (
            "string_timestamp.jsonl",
            with_bad_row(r#"{"timestamp": "12:00", "output_length": 4, "hash_ids": [1]}"#),
            vec![
                "string_timestamp.jsonl:2:",
                "field \"timestamp\"",
                "expected a number (milliseconds)",
                "found a string",
            ],
        ),
        (
            "input_zero.jsonl",
            with_bad_row(r#"{"timestamp": 1, "input_length": 0, "output_length": 4, "hash_ids": [1]}"#),
            vec![":2:", "field \"input_length\"", "positive integer"],
        ),
        (
            "not_an_object.jsonl",
            with_bad_row("[1, 2, 3]"),
            vec![":2:", "expected a JSON object"],
        ),
        (
            "duplicate_alias.jsonl",
            with_bad_row(
                r#"{"timestamp": 1, "output_length": 4, "output_tokens": 4, "hash_ids": [1]}"#,
            ),
            vec![":2:", "\"output_length\"", "\"output_tokens\"", "same field"],
        ),
        (
            "session_id_number.jsonl",
            with_bad_row(r#"{"timestamp": 1, "output_length": 4, "hash_ids": [1], "session_id": 9}"#),
            vec![":2:", "field \"session_id\"", "a string"],
        ),
        (
            "priority_too_big.jsonl",
            with_bad_row(
                r#"{"timestamp": 1, "output_length": 4, "hash_ids": [1], "priority": 9999999999}"#,
            ),
            vec![":2:", "field \"priority\"", "32-bit signed integer"],
        ),
        (
            "no_timestamp.jsonl",
            with_bad_row(r#"{"output_length": 4, "hash_ids": [1]}"#),
            vec![":2:", "missing field \"timestamp\"", "request_2"],
        ),
        (
            "backwards.jsonl",
            concat!(
                r#"{"session_id": "s", "timestamp": 50, "output_length": 1, "hash_ids": [1]}"#,
                "\n",
                r#"{"session_id": "s", "timestamp": 10, "output_length": 1, "hash_ids": [1]}"#,
                "\n"
            )
            .as_bytes()
            .to_vec(),
            vec!["backwards.jsonl:2:", "field \"timestamp\"", "earlier than", "session \"s\""],
        ),
        (
            "first_turn_delay.jsonl",
            concat!(
                r#"{"session_id": "s", "timestamp": 5, "delay": 30, "output_length": 1, "hash_ids": [1]}"#,
                "\n"
            )
            .as_bytes()
            .to_vec(),
            vec!["first_turn_delay.jsonl:1:", "field \"delay\"", "first row"],
        ),
        (
            "empty.jsonl",
            Vec::new(),
            vec!["empty.jsonl", "no requests", "empty"],
        ),
        (
            "blank.jsonl",
            b"\n   \n\r\n".to_vec(),
            vec!["blank.jsonl", "no requests"],
        ),
        (
            "truncated.jsonl",
            format!("{ROW}\n{ROW}\n{{\"timestamp\": 3, \"output_len").into_bytes(),
            vec!["truncated.jsonl:3:", "invalid JSON", "EOF"],
        ),
        (
            "garbage.jsonl",
            {
                let mut b = format!("{ROW}\n").into_bytes();
                b.extend([0xde, 0xad, 0xbe, 0xef, 0xff, 0x00, 0x9c, b'\n']);
                b
            },
            vec!["garbage.jsonl:2:", "not valid UTF-8"],
        ),
        (
            "control_bytes.jsonl",
            vec![0x01, 0x02, 0x03, b'{', 0x7f, b'\n'],
            vec!["control_bytes.jsonl:1:", "invalid JSON"],
        ),
        (
            "bom.jsonl",
            format!("\u{feff}{ROW}\n").into_bytes(),
            vec!["bom.jsonl:1:", "byte-order mark"],
        ),
        (
            "not_gzip.jsonl.gz",
            b"this was never compressed\n".to_vec(),
            vec!["not_gzip.jsonl.gz:1:", "gzip"],
        ),
        (
            "cut.jsonl.gz",
            {
                let g = gzip(format!("{ROW}\n{ROW}\n").as_bytes());
                g[..g.len() - 12].to_vec()
            },
            vec!["cut.jsonl.gz:", "gzip"],
        ),
        (
            "misnamed.jsonl",
            gzip(format!("{ROW}\n").as_bytes()),
            vec!["misnamed.jsonl:1:", "gzip-compressed", ".gz"],
        ),
        (
            "bad_row_in.jsonl.gz",
            gzip(&with_bad_row(r#"{"timestamp": 1, "output_length": -3, "hash_ids": [1]}"#)),
            vec!["bad_row_in.jsonl.gz:2:", "field \"output_length\""],
        ),
    ];
    assert!(cases.len() >= 30);
    for (name, content, words) in &cases {
        let (dir, out) = run_trace(name, Some(content), &[]);
        assert_refused(name, &out, words);
        assert_eq!(
            files_in(dir.path()),
            [name.to_string()],
            "{name}: files created"
        );
    }
}

#[test]
fn missing_and_unreadable_traces() {
    let (dir, out) = run_trace("nowhere.jsonl", None, &[]);
    assert_refused(
        "missing",
        &out,
        &["nowhere.jsonl", "cannot open trace file", "No such file"],
    );
    assert!(files_in(dir.path()).is_empty());

    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("traces")).unwrap();
    let out = cargo_bin_cmd!("dynosim")
        .current_dir(dir.path())
        .args(["run", "traces", "--report-json", "out/r.json"])
        .output()
        .unwrap();
    assert_refused("directory", &out, &["traces", "is a directory"]);
    assert_eq!(files_in(dir.path()), ["traces"]);
}

#[test]
fn clamped_rows_are_accepted_and_counted_in_one_warning() {
    let text = concat!(
        r#"{"timestamp": 0, "input_length": 5000, "output_length": 2, "hash_ids": [1]}"#,
        "\n",
        r#"{"timestamp": 10, "input_length": 100, "output_length": 2, "hash_ids": [2]}"#,
        "\n",
        r#"{"timestamp": 20, "input_length": 1025, "output_length": 2, "hash_ids": [1, 3]}"#,
        "\n",
    );
    let (dir, out) = run_trace("clamp.jsonl", Some(text.as_bytes()), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .collect();
    assert_eq!(
        warnings,
        [
            "warning: clamp.jsonl: 2 rows had input_length above len(hash_ids) x 512 and were \
          clamped (first at line 1)"
        ],
        "{stderr}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.path().join("out/r.json")).unwrap()).unwrap();
    // 512 + 100 + 1024 tokens after clamping.
    assert_eq!(report["total_input_tokens"], 1636);
    assert_eq!(report["completed_requests"], 3);
}

// ---------------------------------------------------------------------------------------------
// Specs.

const SYN: &str =
    "workload: {input_tokens: 100, output_tokens: 4, request_count: 3, request_rate: 5}\n";

/// `dynosim sweep grid.yaml [-o out] --quiet` in a folder holding the spec and `files`.
fn sweep(text: &str, files: &[(&str, &str)], args: &[&str]) -> (tempfile::TempDir, Output) {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("grid.yaml"), text).unwrap();
    for (name, content) in files {
        fs::write(dir.path().join(name), content).unwrap();
    }
    let out = cargo_bin_cmd!("dynosim")
        .current_dir(dir.path())
        .args(["sweep", "grid.yaml", "--quiet"])
        .args(args)
        .output()
        .unwrap();
    (dir, out)
}

/// Runs a bad spec with `-o out`; checks the refusal and that nothing was created.
fn assert_bad_spec(text: &str, words: &[&str]) -> String {
    let (dir, out) = sweep(text, &[("here.jsonl", ROW)], &["-o", "out"]);
    let stderr = assert_refused(text, &out, words);
    assert!(stderr.contains("grid.yaml"), "{text}: {stderr}");
    assert_eq!(
        files_in(dir.path()),
        ["grid.yaml", "here.jsonl"],
        "{text}: files created"
    );
    stderr
}

#[test]
fn yaml_syntax_errors_give_line_and_column() {
    for (text, line_col) in [
        ("workload:\n  trace: [a, b\nseed: 1\n", "grid.yaml:3:5:"),
        ("workload: {input_tokens: 100\n", "grid.yaml:2:1:"),
        ("seed: 1\n\tgrid: {}\n", "grid.yaml:2:1:"),
        // serde_yaml places a duplicate key at the start of its mapping.
        (
            "workload: {input_tokens: 1}\nworkload: {input_tokens: 2}\n",
            "grid.yaml:1:1: invalid YAML: duplicate entry with key \"workload\"",
        ),
        ("grid:\n  seed: [1, 2\n  mode: x\n", "grid.yaml:"),
    ] {
        let stderr = assert_bad_spec(text, &[line_col, "invalid YAML"]);
        // file:line:column: with numbers.
        let loc: Vec<&str> = stderr["error: ".len()..].splitn(4, ':').collect();
        assert!(
            loc[1].parse::<u32>().is_ok() && loc[2].parse::<u32>().is_ok(),
            "{stderr}"
        );
    }
}

#[test]
fn unknown_keys_at_every_depth_suggest_the_closest() {
    let cases: Vec<(String, Vec<&str>)> = vec![
        (
            format!("gird:\n  num_workers: [1, 2]\n{SYN}"),
            vec!["gird", "did you mean `grid`?"],
        ),
        (
            "workload: {input_tokens: 100, output_tokens: 4, request_count: 3, request_rat: 5}\n"
                .into(),
            vec!["workload.request_rat", "did you mean `request_rate`?"],
        ),
        (
            format!("{SYN}slo: {{ttft: 100}}\n"),
            vec!["slo.ttft", "did you mean `ttft_ms`?"],
        ),
        (
            format!("{SYN}constraints: {{max_gpu: 4}}\n"),
            vec!["constraints.max_gpu", "did you mean `max_gpus`?"],
        ),
        (
            format!("{SYN}require: {{p99_ttft_ms: {{maxx: 100}}}}\n"),
            vec!["require.p99_ttft_ms.maxx", "did you mean `max`?"],
        ),
        (
            format!("{SYN}rank_by: [max output_throughput]\n"),
            vec!["rank_by[0]", "did you mean `output_throughput_tok_s`?"],
        ),
        (
            format!("{SYN}engine: {{max_num_seq: 8}}\n"),
            vec!["engine", "unknown key \"max_num_seq\"", "did you mean \"max_num_seqs\"?"],
        ),
        (
            format!("{SYN}num_workers: 2\nrouter_mode: kv_router\nrouter: {{overlap_score_weigth: 1}}\n"),
            vec!["router", "overlap_score_weigth", "did you mean \"overlap_score_weight\"?"],
        ),
        (
            format!("{SYN}grid:\n  topology:\n    - {{mode: aggregated, num_wrkers: [1, 2]}}\n"),
            vec!["grid.topology[0].num_wrkers", "did you mean `num_workers`?"],
        ),
        (
            format!("{SYN}grid:\n  engnie.max_num_seqs: [8, 16]\n"),
            vec!["grid.engnie.max_num_seqs", "did you mean `engine.max_num_seqs`?"],
        ),
        (
            format!("{SYN}grid:\n  request_rate: [1, 2]\n"),
            vec!["grid.request_rate", "did you mean `workload.request_rate`?"],
        ),
        (
            format!("{SYN}grid:\n  workload.request_rat: [1, 2]\n"),
            vec!["grid.workload.request_rat", "did you mean `request_rate`?"],
        ),
    ];
    for (text, words) in &cases {
        assert_bad_spec(text, words);
    }
}

#[test]
fn unknown_engine_and_router_keys_inside_axes() {
    let cases: Vec<(String, Vec<&str>)> = vec![
        (
            format!("{SYN}grid:\n  engine.max_num_seq: [8, 16]\n"),
            vec!["point 0", "engine.max_num_seq=8", "did you mean \"max_num_seqs\"?"],
        ),
        (
            format!(
                "{SYN}grid:\n  topology:\n    - {{num_workers: [2]}}\n    - {{mode: disaggregated, prefill_engine.max_num_seqz: [4]}}\n"
            ),
            vec!["point 1", "prefill_engine", "did you mean \"max_num_seqs\"?"],
        ),
        (
            format!("{SYN}num_workers: 2\nrouter_mode: kv_router\ngrid:\n  router.overlap_weight: [0.5]\n"),
            vec!["point 0", "router", "overlap_weight"],
        ),
        (
            format!("{SYN}grid:\n  engine.max_num_seqs: [8, ten]\n"),
            vec!["point 1", "\"max_num_seqs\"", "an integer", "string \"ten\""],
        ),
        (
            format!("{SYN}grid:\n  engine.engine_type: [vllm, tgi]\n"),
            vec!["point 1", "engine_type", "one of \"vllm\""],
        ),
    ];
    for (text, words) in &cases {
        assert_bad_spec(text, words);
    }
}

#[test]
fn wrong_types_and_ranges_name_their_path() {
    let cases: Vec<(String, Vec<&str>)> = vec![
        (
            format!("{SYN}grid:\n  topology:\n    - {{mode: aggregated, num_workers: [two, 4]}}\n"),
            vec!["grid.topology[0].num_workers[0]", "expected an integer", "string \"two\""],
        ),
        (
            format!("{SYN}grid:\n  topology:\n    - {{mode: aggregated, num_workers: [2, 0]}}\n"),
            vec!["grid.topology[0].num_workers[1]", "1..=100000", "number 0"],
        ),
        (
            format!("{SYN}grid:\n  mode: [aggregated, disagg]\n"),
            vec!["grid.mode[1]", "did you mean `disaggregated`?"],
        ),
        (format!("{SYN}seed: -1\n"), vec!["seed", "expected an integer"]),
        (format!("{SYN}engine: [1, 2]\n"), vec!["engine", "expected a mapping"]),
        (
            "workload: {input_tokens: 100, output_tokens: 4, request_count: 3, request_rate: 5, shared_prefix_ratio: 1.5}\n".into(),
            vec!["workload.shared_prefix_ratio", "[0, 1]"],
        ),
        (
            "workload: {input_tokens: many, output_tokens: 4, request_count: 3, request_rate: 5}\n".into(),
            vec!["workload.input_tokens", "expected an integer", "string \"many\""],
        ),
        (
            format!("{SYN}grid:\n  workload.request_rate: [1, -2]\n"),
            vec!["grid.workload.request_rate[1]", "> 0"],
        ),
        (
            format!("{SYN}slo: {{ttft_ms: fast}}\n"),
            vec!["slo.ttft_ms", "a finite number"],
        ),
        (format!("{SYN}name: [a]\n"), vec!["name", "non-empty string"]),
        (format!("{SYN}grid: 5\n"), vec!["grid", "expected a mapping"]),
        ("- workload\n- grid\n".into(), vec!["top level"]),
        ("".into(), vec!["empty"]),
        (
            format!("{SYN}rank_by: [max goodput_request_throughput_rps]\n"),
            vec!["rank_by[0]", "only with an `slo`"],
        ),
        (
            format!("{SYN}grid:\n  topology:\n    - {{num_workers: [2, 4]}}\n  num_workers: [1]\n"),
            vec!["grid.num_workers", "already sets"],
        ),
    ];
    for (text, words) in &cases {
        assert_bad_spec(text, words);
    }
}

#[test]
fn empty_axes_are_refused() {
    for (text, words) in [
        (
            format!("{SYN}grid:\n  engine.max_num_seqs: []\n"),
            vec!["grid.engine.max_num_seqs", "empty"],
        ),
        (
            format!("{SYN}grid:\n  topology: []\n"),
            vec!["grid.topology", "empty axis"],
        ),
        (
            format!("{SYN}grid:\n  topology:\n    - {{num_workers: []}}\n"),
            vec!["grid.topology[0].num_workers", "empty"],
        ),
        (
            format!("{SYN}grid:\n  topology: [{{num_workers: 2}}, 3]\n"),
            vec!["grid.topology", "mixes mappings"],
        ),
    ] {
        assert_bad_spec(&text, &words);
    }
}

#[test]
fn missing_trace_files_are_found_before_running() {
    assert_bad_spec(
        "workload: {trace: gone.jsonl}\n",
        &["workload.trace", "gone.jsonl", "does not exist"],
    );
    assert_bad_spec(
        "workload: {trace: here.jsonl}\ngrid:\n  workload.trace: [here.jsonl, gone.jsonl]\n",
        &["grid.workload.trace", "gone.jsonl", "does not exist"],
    );
    // A trace that exists but is bad is found before any point runs, with its file and line.
    let (dir, out) = sweep(
        "workload: {trace: bad.jsonl}\n",
        &[(
            "bad.jsonl",
            "{\"timestamp\": 0, \"output_length\": -1, \"hash_ids\": [1]}\n",
        )],
        &["-o", "out"],
    );
    assert_refused(
        "bad trace",
        &out,
        &["bad.jsonl:1:", "field \"output_length\""],
    );
    assert_eq!(files_in(dir.path()), ["bad.jsonl", "grid.yaml"]);
    // The spec file itself.
    let dir = tempfile::tempdir().unwrap();
    let out = cargo_bin_cmd!("dynosim")
        .current_dir(dir.path())
        .args(["sweep", "nope.yaml", "-o", "out"])
        .output()
        .unwrap();
    assert_refused("no spec", &out, &["nope.yaml", "cannot read the spec"]);
    assert!(files_in(dir.path()).is_empty());
}

#[test]
fn unwritable_output_folders_are_found_before_anything_runs() {
    // `-o` under a regular file.
    let (dir, out) = sweep(SYN, &[("plain", "x")], &["-o", "plain/out"]);
    assert_refused("-o under a file", &out, &["plain/out", "plain is a file"]);
    assert_eq!(files_in(dir.path()), ["grid.yaml", "plain"]);
    // The spec's `output` under a regular file, deeper.
    let (dir, out) = sweep(&format!("{SYN}output: plain/a/b\n"), &[("plain", "x")], &[]);
    assert_refused("output under a file", &out, &["plain/a/b", "is a file"]);
    assert_eq!(files_in(dir.path()), ["grid.yaml", "plain"]);
    // A folder where nothing can be created.
    let (dir, out) = sweep(SYN, &[], &["-o", "/proc/dynosim-out"]);
    assert_refused(
        "-o in /proc",
        &out,
        &["/proc/dynosim-out", "cannot create files in /proc"],
    );
    assert_eq!(files_in(dir.path()), ["grid.yaml"]);
    // `-o` is a file.
    let (dir, out) = sweep(SYN, &[("plain", "x")], &["-o", "plain"]);
    assert_refused("-o is a file", &out, &["plain", "is a file"]);
    assert_eq!(fs::read_to_string(dir.path().join("plain")).unwrap(), "x");
}

#[test]
fn grids_above_max_points_are_refused_before_expanding() {
    // 10^30 points: sized by multiplication, never expanded.
    let mut text = SYN.to_string();
    text.push_str("grid:\n");
    for i in 0..10 {
        text.push_str(&format!(
            "  engine.{}: [{}]\n",
            [
                "max_num_seqs",
                "max_num_batched_tokens",
                "num_gpu_blocks",
                "block_size",
                "max_model_len",
                "kv_bytes_per_token",
                "speedup_ratio",
                "decode_speedup_ratio",
                "startup_time",
                "bootstrap_port"
            ][i],
            (1..=1000)
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let (dir, out) = sweep(&text, &[], &["-o", "out", "--max-points", "1000"]);
    assert_refused(
        "huge grid",
        &out,
        &[
            "the grid has",
            "above --max-points 1000",
            "engine.max_num_seqs 1000 x",
        ],
    );
    assert_eq!(files_in(dir.path()), ["grid.yaml"]);
    let (_, out) = sweep(
        &format!("{SYN}grid:\n  seed: [1, 2, 3]\n  engine.max_num_seqs: [1, 2]\n"),
        &[],
        &["--dry-run", "--max-points", "5"],
    );
    assert_refused("6 points", &out, &["6 points", "--max-points 5"]);
}

// ---------------------------------------------------------------------------------------------
// Configurations whose state would outgrow memory.

/// Runs the binary under an 8 GiB address-space limit, so a broken guard fails an allocation
/// instead of exhausting the machine.
fn dynosim_limited(dir: &Path, args: &[&str]) -> Output {
    dynosim_limited_to(8 << 20, dir, args)
}

/// Runs the binary under an address-space limit of `kib` KiB.
fn dynosim_limited_to(kib: u64, dir: &Path, args: &[&str]) -> Output {
    std::process::Command::new("bash")
        .current_dir(dir)
        .arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_dynosim"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn absurd_sizes_are_refused_with_the_flag_and_range() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("t.jsonl"), format!("{ROW}\n")).unwrap();
    let cases: &[(&[&str], &[&str])] = &[
        (
            &[
                "run",
                "t.jsonl",
                "--extra-engine-args",
                r#"{"num_gpu_blocks":1000000000000}"#,
            ],
            &[
                "--extra-engine-args",
                "\"num_gpu_blocks\"",
                "[1, 2147483647]",
            ],
        ),
        (
            &["run", "t.jsonl", "--num-workers", "1000000000"],
            &["--num-workers 1000000000", "limit of 100000"],
        ),
        (
            &[
                "run",
                "t.jsonl",
                "--num-workers",
                "1000",
                "--extra-engine-args",
                r#"{"dp_size":1000}"#,
            ],
            &[
                "--num-workers × dp_size",
                "1000000 engine ranks",
                "limit of 100000",
            ],
        ),
        (
            &[
                "run",
                "t.jsonl",
                "--extra-engine-args",
                r#"{"dp_size":1000000000}"#,
            ],
            &["\"dp_size\"", "[1, 100000]"],
        ),
        (
            &[
                "run",
                "t.jsonl",
                "--num-prefill-workers",
                "90000",
                "--num-decode-workers",
                "90000",
                "--prefill-engine-args",
                r#"{"is_prefill":true}"#,
                "--decode-engine-args",
                r#"{"is_decode":true}"#,
            ],
            &[
                "--num-prefill-workers + --num-decode-workers",
                "180000",
                "limit of 100000",
            ],
        ),
        (
            &[
                "run",
                "--input-tokens",
                "10",
                "--output-tokens",
                "1",
                "--request-count",
                "4000000000",
                "--arrival-interval-ms",
                "1",
            ],
            &["would need at least", "request state", "--request-count"],
        ),
        (
            &[
                "run",
                "--input-tokens",
                "10",
                "--output-tokens",
                "1",
                "--request-count",
                "1000000000000",
                "--arrival-interval-ms",
                "1",
            ],
            &["--request-count is too large", "4294967295"],
        ),
        (
            // 30 prompts of 4 billion tokens whose first half is one shared prefix: 7.0 GiB of
            // stored block ids, and 30 x 31.25 M shareable blocks (3.5 GiB) on top.
            &[
                "run",
                "--input-tokens",
                "4000000000",
                "--output-tokens",
                "1",
                "--request-count",
                "30",
                "--arrival-interval-ms",
                "1",
                "--shared-prefix-ratio",
                "0.5",
                "--num-prefix-groups",
                "1",
            ],
            &[
                "would need at least 10.5 GiB of memory",
                "3.5 GiB for shareable prompt blocks",
                "--input-tokens",
            ],
        ),
    ];
    for (args, words) in cases {
        let out = dynosim_limited(
            dir.path(),
            &[args, &["--report-json", "out/r.json"][..]].concat(),
        );
        assert_refused(&args.join(" "), &out, words);
        assert_eq!(files_in(dir.path()), ["t.jsonl"]);
    }

    // A tiny trace file whose prompts are huge (4 billion tokens per hash id) and all share
    // their one hash id: every request holds 62.5 M shareable blocks.
    let rows = "{\"timestamp\": 0, \"input_length\": 4000000000, \"output_length\": 1, \"hash_ids\": [0]}\n"
        .repeat(100);
    fs::write(dir.path().join("huge.jsonl"), rows).unwrap();
    let out = dynosim_limited(
        dir.path(),
        &[
            "run",
            "huge.jsonl",
            "--trace-block-size",
            "4000000000",
            "--report-json",
            "out/r.json",
        ],
    );
    assert_refused(
        "huge shared prompts",
        &out,
        &[
            "would need at least 23.3 GiB of memory (23.3 GiB for shareable prompt blocks",
            "--trace-block-size",
        ],
    );
    assert_eq!(files_in(dir.path()), ["huge.jsonl", "t.jsonl"]);
}

#[test]
fn huge_unique_prompts_run_in_little_memory() {
    // Unique prompts have no shareable block: 100 prompts of 4 billion tokens arriving at once
    // need no memory per block. Each is rejected as larger than the KV pool, at once.
    let dir = tempfile::tempdir().unwrap();
    let rows: String = (0..100)
        .map(|i| {
            format!(
                "{{\"timestamp\": 0, \"input_length\": 4000000000, \"output_length\": 1, \"hash_ids\": [{i}]}}\n"
            )
        })
        .collect();
    fs::write(dir.path().join("huge.jsonl"), rows).unwrap();
    let cases: &[&[&str]] = &[
        &[
            "run",
            "--input-tokens",
            "4000000000",
            "--output-tokens",
            "1",
            "--request-count",
            "100",
            "--arrival-interval-ms",
            "0",
        ],
        &["run", "huge.jsonl", "--trace-block-size", "4000000000"],
    ];
    for args in cases {
        let started = std::time::Instant::now();
        // 256 MiB of address space.
        let out = dynosim_limited_to(
            256 << 10,
            dir.path(),
            &[args, &["--report-json", "r.json"][..]].concat(),
        );
        let case = args.join(" ");
        assert!(
            out.status.success(),
            "{case}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(started.elapsed().as_secs() < 30, "{case}: too slow");
        let report: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
        assert_eq!(report["num_requests"], 100, "{case}");
        assert_eq!(report["completed_requests"], 0, "{case}");
        fs::remove_file(dir.path().join("r.json")).unwrap();
    }
}

/// A sweep's leaderboard.csv as rows of (column -> value), by point id.
fn leaderboard_rows(
    path: &Path,
) -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>> {
    let mut rows = csv::Reader::from_path(path).unwrap();
    let header = rows.headers().unwrap().clone();
    rows.records()
        .map(|r| {
            let row: std::collections::BTreeMap<String, String> = header
                .iter()
                .zip(r.unwrap().iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect();
            (row["point"].clone(), row)
        })
        .collect()
}

#[test]
fn sweep_limits_workers_and_fails_points_that_cannot_fit() {
    let (dir, out) = sweep(
        &format!("{SYN}grid:\n  num_workers: [2, 1000000000]\n"),
        &[],
        &["-o", "out"],
    );
    assert_refused("workers axis", &out, &["grid.num_workers[1]", "1..=100000"]);
    assert_eq!(files_in(dir.path()), ["grid.yaml"]);
    let (dir, out) = sweep(
        &format!("{SYN}grid:\n  engine.num_gpu_blocks: [1024, 1000000000000]\n"),
        &[],
        &["-o", "out"],
    );
    assert_refused(
        "blocks axis",
        &out,
        &["point 1", "\"num_gpu_blocks\"", "[1, 2147483647]"],
    );
    assert_eq!(files_in(dir.path()), ["grid.yaml"]);

    // A point whose workload cannot fit fails with the reason; the other point runs.
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("grid.yaml"),
        format!("{SYN}grid:\n  workload.request_count: [3, 4000000000]\n"),
    )
    .unwrap();
    let out = dynosim_limited(dir.path(), &["sweep", "grid.yaml", "-o", "out", "--quiet"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let by_point = leaderboard_rows(&dir.path().join("out/leaderboard.csv"));
    assert_eq!(by_point["0"]["status"], "ok");
    let failed = &by_point["1"];
    assert_eq!(failed["status"], "failed");
    assert!(
        failed["reason"].contains("would need at least")
            && failed["reason"].contains("request_count"),
        "{:?}",
        failed["reason"]
    );

    // A trace whose 100 prompts of 4 billion tokens share one hash id: 62.5 M shareable blocks
    // each with 64-token blocks, only 61,035 with 65,536-token ones (and then, larger than the
    // KV pool, they are rejected at once). Judged per block size once the trace is loaded.
    let dir = tempfile::tempdir().unwrap();
    let rows = "{\"timestamp\": 0, \"input_length\": 4000000000, \"output_length\": 1, \"hash_ids\": [0]}\n"
        .repeat(100);
    fs::write(dir.path().join("huge.jsonl"), rows).unwrap();
    fs::write(
        dir.path().join("grid.yaml"),
        "workload: {trace: huge.jsonl, trace_block_size: 4000000000}\n\
         grid:\n  engine.block_size: [64, 65536]\n",
    )
    .unwrap();
    let out = dynosim_limited(dir.path(), &["sweep", "grid.yaml", "-o", "out", "--quiet"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let by_point = leaderboard_rows(&dir.path().join("out/leaderboard.csv"));
    let failed = &by_point["0"];
    assert_eq!(failed["status"], "failed");
    assert!(
        failed["reason"].contains("23.3 GiB for shareable prompt blocks")
            && failed["reason"].contains("engine.block_size"),
        "{:?}",
        failed["reason"]
    );
    let small = &by_point["1"];
    assert_eq!(small["status"], "ok", "{:?}", small["reason"]);
    assert_eq!(small["completed_requests"], "0");
}

// ---------------------------------------------------------------------------------------------
// Nothing half-written.

#[test]
fn a_failed_run_leaves_no_report() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("t.jsonl"), format!("{ROW}\n{ROW}\n")).unwrap();
    // The dead-end guard: a 600-token prompt can never fit a 100-token batch without chunking.
    let out = cargo_bin_cmd!("dynosim")
        .current_dir(dir.path())
        .args([
            "run",
            "t.jsonl",
            "--extra-engine-args",
            r#"{"enable_chunked_prefill":false,"max_num_batched_tokens":100}"#,
            "--report-json",
            "out/r.json",
            "--report-jsonl",
            "out/r.jsonl",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot make progress"), "{stderr}");
    assert_eq!(files_in(dir.path()), ["t.jsonl"]);

    // An earlier report at the same path is left as it was.
    fs::write(dir.path().join("old.json"), "{\"old\": 1}\n").unwrap();
    let out = cargo_bin_cmd!("dynosim")
        .current_dir(dir.path())
        .args([
            "run",
            "t.jsonl",
            "--extra-engine-args",
            r#"{"enable_chunked_prefill":false,"max_num_batched_tokens":100}"#,
            "--report-json",
            "old.json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        fs::read_to_string(dir.path().join("old.json")).unwrap(),
        "{\"old\": 1}\n"
    );
    assert_eq!(files_in(dir.path()), ["old.json", "t.jsonl"]);

    // The main report cannot be written after the simulation (its temporary name is longer
    // than a file name may be): the JSONL written just before is removed again, with the
    // folders made for them.
    let long = format!("out2/{}.json", "a".repeat(245));
    let out = cargo_bin_cmd!("dynosim")
        .current_dir(dir.path())
        .args([
            "run",
            "t.jsonl",
            "--report-json",
            &long,
            "--report-jsonl",
            "out/deeper/r.jsonl",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("writing {long}")), "{stderr}");
    assert_eq!(files_in(dir.path()), ["old.json", "t.jsonl"]);

    // Folders where nothing can be created are refused before simulating.
    let out = cargo_bin_cmd!("dynosim")
        .current_dir(dir.path())
        .args(["run", "t.jsonl", "--report-json", "/proc/dynosim-r.json"])
        .output()
        .unwrap();
    assert_refused(
        "report in /proc",
        &out,
        &[
            "--report-json /proc/dynosim-r.json",
            "cannot create files in /proc",
        ],
    );

    // A report path under a regular file is refused before simulating.
    let out = cargo_bin_cmd!("dynosim")
        .current_dir(dir.path())
        .args(["run", "t.jsonl", "--report-json", "t.jsonl/r.json"])
        .output()
        .unwrap();
    assert_refused(
        "report under a file",
        &out,
        &["--report-json t.jsonl/r.json", "t.jsonl is not a folder"],
    );
    let out = cargo_bin_cmd!("dynosim")
        .current_dir(dir.path())
        .args([
            "run",
            "t.jsonl",
            "--report-json",
            "r.json",
            "--report-jsonl",
            "old.json/x",
        ])
        .output()
        .unwrap();
    assert_refused("jsonl under a file", &out, &["--report-jsonl old.json/x"]);
    assert_eq!(files_in(dir.path()), ["old.json", "t.jsonl"]);
}

#[test]
fn a_successful_run_leaves_exactly_its_reports() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("t.jsonl"), format!("{ROW}\n{ROW}\n")).unwrap();
    let out = cargo_bin_cmd!("dynosim")
        .current_dir(dir.path())
        .args([
            "run",
            "t.jsonl",
            "--report-json",
            "out/r.json",
            "--report-jsonl",
            "out/r.jsonl",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    // No temporary file is left next to the reports.
    assert_eq!(files_in(&dir.path().join("out")), ["r.json", "r.jsonl"]);
    let jsonl = fs::read_to_string(dir.path().join("out/r.jsonl")).unwrap();
    assert_eq!(jsonl.lines().count(), 2);
    let report: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.path().join("out/r.json")).unwrap()).unwrap();
    assert_eq!(report["completed_requests"], 2);
}

// ---------------------------------------------------------------------------------------------
// Inputs the fuzzers found (fuzz/README.md): each is replayed through the parser it crashed.

#[test]
fn fuzz_regressions_stay_fixed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz_regressions");
    let mut replayed = 0;
    for target in ["trace_line", "sweep_spec"] {
        let dir = root.join(target);
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
        paths.sort();
        for p in paths {
            let data = fs::read(&p).unwrap();
            let outcome = std::panic::catch_unwind(|| match target {
                "trace_line" => replay_trace(&data),
                _ => replay_spec(&data),
            });
            assert!(outcome.is_ok(), "{} panics again", p.display());
            replayed += 1;
        }
    }
    // The corpus of regressions only grows; see tests/data/fuzz_regressions/README.md.
    assert!(replayed >= 6, "only {replayed} regression inputs found");
}

/// What the `trace_line` fuzz target does with one input.
fn replay_trace(data: &[u8]) {
    use dynosim::workload::formats::mooncake::{parse_trace_with, Timing};
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let tbs = [1u32, 16, 64, 512, 0, 3, 1 << 20, u32::MAX][(head & 7) as usize];
    let timing = if head & 8 == 0 {
        Timing::OpenLoop
    } else {
        Timing::ClosedLoop
    };
    if let Ok(w) = parse_trace_with(text, "fuzz.jsonl", tbs, timing) {
        for r in &w.requests {
            assert!(r.input_length >= 1);
            assert!(w.blocks_of(r).iter().all(|&b| b < w.num_distinct_blocks));
        }
    }
}

/// What the `sweep_spec` fuzz target does with one input.
fn replay_spec(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(spec) = dynosim::sweep::spec::parse_spec(text, Path::new("fuzz/spec.yaml")) {
        let _ = spec.param_columns();
        if let Some(n) = spec.grid_size() {
            if n > 0 && n <= 64 {
                let mut r = dynosim::sweep::resolve::Resolver::new(&spec);
                for id in 0..n as u64 {
                    let _ = r.resolve(id);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A trace `dynosim run --replay-concurrency` accepts is accepted by a sweep point, with the same
// result (closed loop: timestamps optional, sessions in file order).

#[test]
fn closed_loop_traces_replay_in_a_sweep_like_in_run() {
    let dir = tempfile::tempdir().unwrap();
    let trace = concat!(
        r#"{"timestamp": 500, "input_length": 300, "output_length": 6, "hash_ids": [1]}"#,
        "\n",
        r#"{"input_length": 900, "output_length": 3, "hash_ids": [2, 3]}"#,
        "\n",
        r#"{"timestamp": 100, "input_length": 50, "output_length": 9, "hash_ids": [4]}"#,
        "\n",
    );
    fs::write(dir.path().join("t.jsonl"), trace).unwrap();
    let out = cargo_bin_cmd!("dynosim")
        .current_dir(dir.path())
        .args([
            "run",
            "t.jsonl",
            "--replay-concurrency",
            "1",
            "--report-json",
            "run.json",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    fs::write(
        dir.path().join("grid.yaml"),
        "workload: {trace: t.jsonl, replay_concurrency: 1}\n",
    )
    .unwrap();
    let out = cargo_bin_cmd!("dynosim")
        .current_dir(dir.path())
        .args(["sweep", "grid.yaml", "-o", "out", "--quiet"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |p: &str| -> serde_json::Value {
        serde_json::from_str(&fs::read_to_string(dir.path().join(p)).unwrap()).unwrap()
    };
    let run = read("run.json");
    let board = read("out/leaderboard.json");
    let point = &board["rows"][0]["report"];
    for (k, v) in run.as_object().unwrap() {
        if [
            "wall_time_ms",
            "processed_tokens_per_s",
            "processed_output_tokens_per_s",
        ]
        .contains(&k.as_str())
        {
            continue;
        }
        assert_eq!(&point[k], v, "{k}");
    }
    assert_eq!(point["completed_requests"], 3);
}
