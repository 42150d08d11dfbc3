use super::*;
use crate::sweep::leaderboard::rank;
use crate::sweep::spec::parse_spec;
use serde_json::{json, Map};
use std::path::Path;

const SPEC: &str = r#"# Which worker count serves <this> load?
name: html_test
workload: {input_tokens: 100, output_tokens: 10, request_count: 20, request_rate: 5}
grid:
  num_workers: [1, 2, 4]
slo: {ttft_ms: 2000}
require: {p99_ttft_ms: {max: 1000}}
rank_by: [max output_throughput_tok_s_per_gpu]
"#;

fn record(point: u64, status: Status, workers: u64, ttft: f64) -> PointRecord {
    let mut parameters = Map::new();
    parameters.insert("num_workers".into(), json!(workers));
    let mut report = Map::new();
    for (p, f) in [
        ("min", 0.2),
        ("median", 1.0),
        ("p75", 1.5),
        ("p90", 2.0),
        ("p95", 3.0),
        ("p99", 4.0),
        ("max", 9.0),
    ] {
        report.insert(format!("{p}_ttft_ms"), json!(ttft * f));
        report.insert(format!("{p}_itl_ms"), json!(5.0 * f));
    }
    report.insert(
        "output_throughput_tok_s_per_gpu".into(),
        json!(100.0 / workers as f64),
    );
    report.insert(
        "mean_output_token_throughput_per_user".into(),
        json!(10.0 * workers as f64),
    );
    PointRecord {
        point,
        hash: format!("h{point}"),
        status,
        reason: (status == Status::Infeasible).then(|| "p99_ttft_ms 4000 > max 1000".to_string()),
        parameters,
        gpus: Some(workers),
        configuration: None,
        workload: None,
        report: Some(report),
    }
}

#[test]
fn page_has_question_charts_titles_and_table() {
    let spec = parse_spec(SPEC, Path::new("grid.yaml")).unwrap();
    let records = vec![
        record(0, Status::Infeasible, 1, 1000.0),
        record(1, Status::Ok, 2, 200.0),
        record(2, Status::Ok, 4, 100.0),
    ];
    let rows = rank(&records, &spec.rank_by, &spec.pareto);
    let params = spec.param_columns();
    let page = Page {
        spec: &spec,
        points_total: 3,
        shard: None,
        interrupted: false,
        missing: 0,
    };
    let h = html(&rows, &params, &page);
    // Self-contained: no script, no link to anything (the SVG namespace is a name, not a
    // download).
    let bare = h.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    assert!(!bare.contains("<script") && !bare.contains("http://") && !bare.contains("https://"));
    assert!(!bare.contains("<link") && !bare.contains("src=") && !bare.contains("url("));
    assert!(h.contains("<h1>html_test</h1>"));
    assert!(h.contains("Which worker count serves &lt;this&gt; load?"));
    assert!(h.contains("p99_ttft_ms ≤ 1000"));
    assert!(h.contains("ttft_ms ≤ 2000"));
    assert!(h.contains("num_workers ∈ {1, 2, 4}"));
    // Pareto chart + two CDFs, no capacity bars for a grid.
    assert_eq!(h.matches("<svg").count(), 3, "{h}");
    assert!(!h.contains("Capacity per GPU"));
    assert!(h.contains("title=\"point 2: num_workers=4 (ok), on the front\""));
    assert!(h.contains("title=\"point 0: num_workers=1 (infeasible)\""));
    // The CDF marks are titled with the quantile.
    assert!(h.contains("point 2: num_workers=4: p99 = 400"), "{h}");
    // Table rows with their reason, key metric right after gpus.
    assert!(h.contains("<tr class=\"infeasible\" id=\"point-0\">"));
    assert!(h.contains("p99_ttft_ms 4000 &gt; max 1000"));
    let header = &h[h.find("<thead>").unwrap()..h.find("</thead>").unwrap()];
    assert!(
        header.contains("<th>gpus</th><th>output_throughput_tok_s_per_gpu</th><th>p99_ttft_ms</th><th>mean_output_token_throughput_per_user</th>"),
        "{header}"
    );
    // Deterministic.
    assert_eq!(h, html(&rows, &params, &page));
}

#[test]
fn capacity_bars_when_the_rows_have_a_capacity() {
    let spec = parse_spec(SPEC, Path::new("grid.yaml")).unwrap();
    let mut records = vec![
        record(0, Status::Ok, 2, 100.0),
        record(1, Status::Ok, 4, 100.0),
    ];
    for (r, cap) in records.iter_mut().zip([6.0, 10.0]) {
        let rep = r.report.as_mut().unwrap();
        rep.insert(CAPACITY_METRIC.into(), json!(cap));
        rep.insert(CAPACITY_HIGH_METRIC.into(), json!(cap * 1.25));
    }
    let rows = rank(&records, &spec.rank_by, &spec.pareto);
    let page = Page {
        spec: &spec,
        points_total: 2,
        shard: Some((0, 2)),
        interrupted: true,
        missing: 0,
    };
    let h = html(&rows, &spec.param_columns(), &page);
    assert!(h.contains("Capacity per GPU"));
    assert_eq!(h.matches("<svg").count(), 4);
    assert!(h.contains("title=\"point 1: num_workers=4: capacity 10 on 4 GPUs\""));
    assert!(h.contains("(shard 0/2)") && h.contains("interrupted"));
}
