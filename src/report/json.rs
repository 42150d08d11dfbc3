//! Report files: the flat JSON report in the byte layout of Python's
//! `json.dumps(report, indent=2, sort_keys=True) + "\n"` (DynoSim's writer, floats in Python's
//! `repr`), per-request JSONL (spec §8.4, one compact object per line), and loading a report back.
//! Files are written to a temporary sibling and renamed into place, so no reader ever sees half a
//! file.

use super::{Report, RequestRecord, Stall, Value, STALL_KEY};
use crate::error::InputError;
use std::path::{Path, PathBuf};

/// A float as Python's `repr(float)`: shortest round-trip digits, positional notation for
/// decimal exponents in [-4, 16), otherwise `d.ddde±XX`; integral values keep a `.0`.
/// Non-finite values as Python's `json` writes them (`NaN`, `Infinity`, `-Infinity`).
pub fn python_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "-1.2345e-7".
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci
        .split_once('e')
        .expect("LowerExp output has an exponent");
    let exp: i32 = exp.parse().expect("LowerExp exponent is an integer");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if x.is_sign_negative() { "-" } else { "" };
    let body = if (-4..16).contains(&exp) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                format!("{digits}{}.0", "0".repeat(int_len - digits.len()))
            } else {
                format!("{}.{}", &digits[..int_len], &digits[int_len..])
            }
        } else {
            format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
        }
    } else {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{first}{frac}e{esign}{:02}", exp.abs())
    };
    format!("{sign}{body}")
}

fn json_string(s: &str) -> String {
    // Python's json.dumps escapes non-ASCII (ensure_ascii=True); report keys are ASCII anyway.
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The `stall` member, laid out as `json.dumps(indent=2, sort_keys=True)` nests an object.
fn push_stall(out: &mut String, st: &Stall) {
    let cause = serde_json::to_value(st.cause)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    out.push_str(&format!(
        "  {}: {{\n    \"cause\": {},\n    \"queued_requests\": {},\n    \"role\": {},\n    \
         \"since_ms\": {},\n    \"worker\": {}\n  }}",
        json_string(STALL_KEY),
        json_string(&cause),
        st.queued_requests,
        json_string(st.role),
        python_float_repr(st.since_ms),
        st.worker
    ));
}

impl Report {
    /// The report as DynoSim writes it: `json.dumps(indent=2, sort_keys=True)` plus a final
    /// newline.
    pub fn to_json_string(&self) -> String {
        if self.fields.is_empty() {
            return "{}\n".to_string();
        }
        let mut out = String::with_capacity(self.fields.len() * 48);
        out.push_str("{\n");
        let mut stall = self.stall.as_ref();
        for (i, (k, v)) in self.fields.iter().enumerate() {
            if i > 0 {
                out.push_str(",\n");
            }
            if let Some(st) = stall.filter(|_| k.as_str() > STALL_KEY) {
                push_stall(&mut out, st);
                out.push_str(",\n");
                stall = None;
            }
            out.push_str("  ");
            out.push_str(&json_string(k));
            out.push_str(": ");
            match *v {
                Value::Int(n) => out.push_str(&n.to_string()),
                Value::Float(f) => out.push_str(&python_float_repr(f)),
            }
        }
        if let Some(st) = stall {
            out.push_str(",\n");
            push_stall(&mut out, st);
        }
        out.push_str("\n}\n");
        out
    }

    /// Reads a flat report object (numbers only; integers stay integers). A `{"summary": {...}}`
    /// wrapper (newer DynoSim) is unwrapped. Non-numeric members are skipped.
    pub fn from_json_value(value: &serde_json::Value) -> Result<Report, InputError> {
        let obj = value
            .as_object()
            .ok_or_else(|| InputError::new("report JSON: expected an object at the top level"))?;
        let obj = match obj.get("summary").and_then(|s| s.as_object()) {
            Some(summary) => summary,
            None => obj,
        };
        let mut report = Report::default();
        for (k, v) in obj {
            if let Some(i) = v.as_i64() {
                report.set_int(k, i);
            } else if let Some(f) = v.as_f64() {
                report.set_float(k, f);
            }
        }
        Ok(report)
    }

    /// Parses report JSON text (see [`Report::from_json_value`]).
    pub fn from_json_str(text: &str) -> Result<Report, InputError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| InputError::new(format!("report JSON: {e}")))?;
        Report::from_json_value(&value)
    }
}

/// Checks that files can be created in the folder `path` will be written to: the nearest
/// existing folder on its way is probed by creating and removing an empty file. Returns the
/// probed folder and the error, if any.
pub fn probe_writable(path: &Path) -> Result<(), (PathBuf, std::io::Error)> {
    let mut dir = path;
    while !dir.as_os_str().is_empty() && !dir.is_dir() {
        match dir.parent() {
            Some(p) => dir = p,
            None => break,
        }
    }
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let probe = dir.join(format!(".dynosim-write-check.{}", std::process::id()));
    match std::fs::File::create(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err((dir.to_path_buf(), e)),
    }
}

/// Writes the report as DynoSim does (indent 2, sorted keys, Python float repr, final newline).
pub fn write_json(report: &Report, path: &Path) -> std::io::Result<()> {
    crate::output_file::write_atomic(path, report.to_json_string().as_bytes())
}

/// Per-request records as JSONL: one compact object per line, keys in §8.4 order, `None` as null.
pub fn jsonl_string(records: &[RequestRecord]) -> String {
    let mut out = String::with_capacity(records.len() * 700);
    for r in records {
        out.push_str(&serde_json::to_string(r).expect("a request record always serialises"));
        out.push('\n');
    }
    out
}

/// Writes per-request records (see [`jsonl_string`]) atomically.
pub fn write_jsonl(records: &[RequestRecord], path: &Path) -> std::io::Result<()> {
    crate::output_file::write_atomic(path, jsonl_string(records).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::report::test_data as data;

    #[test]
    fn float_repr_matches_python() {
        // Expected strings are Python 3.11's repr().
        let cases = [
            (0.1, "0.1"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1e-05, "1e-05"),
            (1.5e-05, "1.5e-05"),
            (0.0001, "0.0001"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (0.5, "0.5"),
            (100.0, "100.0"),
            (2160.185823, "2160.185823"),
            (-3.25e-7, "-3.25e-07"),
            (1234567890123456.7, "1234567890123456.8"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
        ];
        for (x, want) in cases {
            assert_eq!(python_float_repr(x), want);
        }
    }

    #[test]
    fn reference_reports_round_trip_byte_for_byte() {
        let mut names: Vec<String> = (1..=5).map(|v| format!("V{v}.json")).collect();
        names.extend(["t1", "t2", "t3", "t6"].map(|t| format!("runs/{t}.report.json")));
        for name in names {
            let text = data(&name);
            let report = Report::from_json_str(&text).unwrap();
            assert_eq!(report.to_json_string(), text, "{name}");
        }
    }

    #[test]
    fn writes_files_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Report::default();
        r.set_int("num_requests", 3);
        r.set_float("duration_ms", 2.0);
        r.set_float("a_ratio", 1e-7);
        let path = dir.path().join("sub").join("report.json");
        write_json(&r, &path).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\n  \"a_ratio\": 1e-07,\n  \"duration_ms\": 2.0,\n  \"num_requests\": 3\n}\n"
        );
        // Only the final file is left behind.
        let entries: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(entries, vec![std::ffi::OsString::from("report.json")]);
        assert_eq!(Report::default().to_json_string(), "{}\n");
        // Renaming onto an existing directory fails, and the temporary file is removed.
        let blocker = dir.path().join("taken");
        std::fs::create_dir(blocker.join("inner").parent().unwrap()).unwrap();
        std::fs::write(blocker.join("inner"), "x").unwrap();
        assert!(write_json(&r, &blocker).is_err());
        let mut left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, vec!["sub", "taken"]);
    }

    #[test]
    fn writability_is_probed_without_leaving_anything() {
        let dir = tempfile::tempdir().unwrap();
        assert!(probe_writable(&dir.path().join("a/b/report.json")).is_ok());
        assert!(probe_writable(dir.path()).is_ok());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let (probed, _) = probe_writable(Path::new("/proc/x/report.json")).unwrap_err();
        assert_eq!(probed, Path::new("/proc"));
    }

    #[test]
    fn jsonl_lines_in_spec_order_with_nulls() {
        let rec = RequestRecord {
            session_id: Some("s1".into()),
            turn_index: Some(2),
            uuid: 7,
            arrival_time_ms: 1.0,
            first_token_ms: Some(5.5),
            ttft_ms: Some(4.5),
            input_length: 10,
            requested_output_length: 3,
            output_length: 3,
            terminal_status: "completed".into(),
            ..RequestRecord::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("req.jsonl");
        write_jsonl(&[rec.clone(), rec], &path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(text.ends_with('\n'));
        let v: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        // serde_json's map is sorted here; the raw order on the line is checked below.
        assert_eq!(keys.len(), 28);
        let order = [
            "session_id",
            "turn_index",
            "uuid",
            "arrival_time_ms",
            "first_admit_ms",
            "terminal_time_ms",
            "first_token_ms",
            "last_token_ms",
            "ttft_ms",
            "ttst_ms",
            "e2e_latency_ms",
            "itl_ms",
            "input_length",
            "requested_output_length",
            "output_length",
            "reused_input_tokens",
            "prefill_worker_idx",
            "decode_worker_idx",
            "prefill_admit_ms",
            "source_held_ms",
            "destination_reserved_ms",
            "destination_activated_ms",
            "decode_admit_ms",
            "source_released_ms",
            "decode_reused_input_tokens",
            "prefill_route_overlap_tokens",
            "decode_route_overlap_tokens",
            "terminal_status",
        ];
        let positions: Vec<usize> = order
            .iter()
            .map(|k| lines[0].find(&format!("\"{k}\":")).unwrap())
            .collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]));
        assert!(lines[0].starts_with("{\"session_id\":\"s1\",\"turn_index\":2,\"uuid\":7,"));
        assert!(lines[0].contains("\"arrival_time_ms\":1.0,\"first_admit_ms\":null,"));
        assert!(lines[0].ends_with("\"terminal_status\":\"completed\"}"));
    }
}
