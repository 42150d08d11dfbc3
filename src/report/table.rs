//! The console summary DynoSim prints after a run (spec §8.1): the AIPerf-style box table plus the
//! wall-time and prefix-cache footer lines. Column widths follow the content.

use super::{Report, Value};

pub const TITLE: &str = "NVIDIA AIPerf | LLM Metrics";
const STAT_COLUMNS: [&str; 7] = ["avg", "min", "max", "p99", "p90", "p75", "std"];
/// Report key prefix per stat column (avg is the mean).
const STAT_PREFIXES: [&str; 7] = ["mean", "min", "max", "p99", "p90", "p75", "std"];
const NA: &str = "N/A";

/// Distribution rows: (label, report key suffix); a row appears only if `mean_<suffix>` exists.
const STAT_ROWS: [(&str, &str); 5] = [
    ("Time to First Token (ms)", "ttft_ms"),
    ("Time to Second Token (ms)", "ttst_ms"),
    ("Request Latency (ms)", "e2e_latency_ms"),
    ("Inter Token Latency (ms)", "itl_ms"),
    (
        "Output Token Throughput Per User (tokens/sec/user)",
        "output_token_throughput_per_user",
    ),
];

/// A number as Python's `f"{x:,.2f}"`: two decimals, thousands separators.
pub fn format_number(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    let s = format!("{x:.2}");
    let (sign, digits) = match s.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", s.as_str()),
    };
    let (int_part, frac) = digits.split_once('.').unwrap_or((digits, "00"));
    let mut grouped = String::with_capacity(int_part.len() + int_part.len() / 3);
    for (i, ch) in int_part.chars().enumerate() {
        if i > 0 && (int_part.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    format!("{sign}{grouped}.{frac}")
}

fn cell(report: &Report, key: &str) -> String {
    report
        .fields
        .get(key)
        .map(|v| format_number(v.as_f64()))
        .unwrap_or_else(|| NA.to_string())
}

fn rows(report: &Report) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for (label, suffix) in STAT_ROWS {
        if !report.fields.contains_key(&format!("mean_{suffix}")) {
            continue;
        }
        let mut row = vec![label.to_string()];
        row.extend(
            STAT_PREFIXES
                .iter()
                .map(|p| cell(report, &format!("{p}_{suffix}"))),
        );
        rows.push(row);
    }
    let single = |label: &str, value: String| {
        let mut row = vec![label.to_string(), value];
        row.extend(std::iter::repeat_n(NA.to_string(), STAT_COLUMNS.len() - 1));
        row
    };
    rows.push(single(
        "Output Token Throughput (tokens/sec)",
        cell(report, "output_throughput_tok_s"),
    ));
    rows.push(single(
        "Request Throughput (requests/sec)",
        cell(report, "request_throughput_rps"),
    ));
    let count_key = if report.fields.contains_key("completed_requests") {
        "completed_requests"
    } else {
        "num_requests"
    };
    rows.push(single("Request Count (requests)", cell(report, count_key)));
    rows
}

fn render_table(rows: &[Vec<String>]) -> String {
    let headers: Vec<String> = std::iter::once("Metric")
        .chain(STAT_COLUMNS)
        .map(str::to_string)
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, v) in widths.iter_mut().zip(row) {
            *w = (*w).max(v.chars().count());
        }
    }
    let separator = |left: &str, mid: &str, right: &str| {
        let parts: Vec<String> = widths.iter().map(|w| "━".repeat(w + 2)).collect();
        format!("{left}{}{right}", parts.join(mid))
    };
    let render_row = |row: &[String]| {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (v, &w))| {
                if i == 0 {
                    format!(" {v:<w$} ")
                } else {
                    format!(" {v:>w$} ")
                }
            })
            .collect();
        format!("┃{}┃", cells.join("┃"))
    };
    let mut lines = vec![
        separator("┏", "┳", "┓"),
        render_row(&headers),
        separator("┡", "╇", "┩"),
    ];
    lines.extend(rows.iter().map(|r| render_row(r)));
    lines.push(separator("└", "┴", "┘"));
    lines.join("\n")
}

/// The console summary: title, table and footer lines, joined by newlines, without a trailing
/// newline (the CLI adds it, then prints `Saved full report to: …`).
pub fn render(report: &Report) -> String {
    let mut lines = vec![TITLE.to_string(), render_table(&rows(report))];
    let footer = [
        ("Wall Time (ms)", "wall_time_ms"),
        ("Prefix Cache Reused Ratio", "prefix_cache_reused_ratio"),
        (
            "First Admission Prefix Cache Reused Ratio",
            "first_admission_prefix_cache_reused_ratio",
        ),
    ];
    for (label, key) in footer {
        if let Some(v) = report.fields.get(key) {
            let x = match *v {
                Value::Int(i) => i as f64,
                Value::Float(f) => f,
            };
            lines.push(format!("{label}: {}", format_number(x)));
        }
    }
    if let Some(line) = cost_line(report) {
        lines.push(line);
    }
    lines.join("\n")
}

/// `Cost (USD): 28.00 per hour, 1.23 per million output tokens, 456.78 per million requests`,
/// for a report priced with `--gpu-hour-usd` (figures without a rate are left out).
fn cost_line(report: &Report) -> Option<String> {
    use super::cost::{USD_PER_HOUR, USD_PER_MILLION_OUTPUT_TOKENS, USD_PER_MILLION_REQUESTS};
    let per_hour = report.get(USD_PER_HOUR)?;
    let mut parts = vec![format!("{} per hour", format_number(per_hour))];
    for (key, what) in [
        (USD_PER_MILLION_OUTPUT_TOKENS, "per million output tokens"),
        (USD_PER_MILLION_REQUESTS, "per million requests"),
    ] {
        if let Some(x) = report.get(key) {
            parts.push(format!("{} {what}", format_number(x)));
        }
    }
    Some(format!("Cost (USD): {}", parts.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::report::test_data as data;

    #[test]
    fn number_format_matches_python() {
        // Expected strings are Python 3.11's f"{x:,.2f}".
        let cases = [
            (0.0, "0.00"),
            (-0.0, "-0.00"),
            (0.125, "0.12"),
            (0.375, "0.38"),
            (2.675, "2.67"),
            (1.005, "1.00"),
            (999.995, "1,000.00"),
            (999.996, "1,000.00"),
            (1234567.891, "1,234,567.89"),
            (-1234.5, "-1,234.50"),
            (100.0, "100.00"),
            (123456.0, "123,456.00"),
            (1e21, "1,000,000,000,000,000,000,000.00"),
            (f64::NAN, "nan"),
            (f64::INFINITY, "inf"),
        ];
        for (x, want) in cases {
            assert_eq!(format_number(x), want, "{x}");
        }
    }

    #[test]
    fn renders_reference_console_output() {
        for v in 1..=5 {
            let report = Report::from_json_str(&data(&format!("V{v}.json"))).unwrap();
            let console = data(&format!("V{v}.console.txt"));
            let expected: Vec<&str> = console
                .lines()
                .filter(|l| !l.starts_with("Saved full report to:"))
                .collect();
            let got = render(&report);
            assert_eq!(got.lines().collect::<Vec<_>>(), expected, "V{v}");
            assert!(!got.ends_with('\n'));
        }
    }

    #[test]
    fn missing_rows_and_cells() {
        let mut r = Report::default();
        r.set_float("mean_ttft_ms", 1.0);
        r.set_int("num_requests", 3);
        let out = render(&r);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], TITLE);
        // title, 3 separators, header, 1 stat row, 3 single rows
        assert_eq!(lines.len(), 1 + 3 + 1 + 1 + 3);
        assert!(lines[4].starts_with("┃ Time to First Token (ms) "));
        assert!(lines[4].contains(" 1.00 ┃"));
        assert!(lines[4].ends_with(" N/A ┃"));
        assert!(lines[7].contains(" 3.00 ┃")); // count falls back to num_requests
        assert!(!out.contains("Wall Time"));
    }

    #[test]
    fn cost_line_only_for_a_priced_report() {
        let mut r = Report::default();
        r.set_float("wall_time_ms", 12.0);
        assert!(!render(&r).contains("Cost"));
        r.set_float("usd_per_hour", 28.0);
        assert!(render(&r).ends_with("\nCost (USD): 28.00 per hour"));
        r.set_float("usd_per_million_output_tokens", 1.234);
        r.set_float("usd_per_million_requests", 4567.891);
        assert!(render(&r).ends_with(
            "\nWall Time (ms): 12.00\nCost (USD): 28.00 per hour, 1.23 per million output tokens, \
             4,567.89 per million requests"
        ));
    }
}
