//! Tests of the spec parser: accepted specs, and the message of every refused one.

use super::*;

fn parse(text: &str) -> Result<Spec, String> {
    parse_spec(text, Path::new("sweeps/t.yaml")).map_err(|e| e.to_string())
}

fn err(text: &str) -> String {
    parse(text).expect_err("expected a spec error")
}

const ISSUE_GRID: &str = r#"
workload: {input_tokens: 100, output_tokens: 10, request_count: 5, request_rate: 1}
grid:
  topology:
    - {mode: aggregated, num_workers: [2, 4, 8]}
    - {mode: disaggregated, num_prefill_workers: [1, 2], num_decode_workers: [2, 4]}
  routing:
    - {router_mode: round_robin}
    - {router_mode: kv_router, router.overlap_score_weight: [0.5, 1.0, 2.0]}
  engine.max_num_seqs: [128, 256]
  workload.arrival_speedup_ratio: [1, 2]
"#;

fn params_text(spec: &Spec, id: u128) -> String {
    spec.point_params(id)
        .iter()
        .map(|(p, v)| format!("{}={}", p.path, v))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn defaults_and_name_from_stem() {
    let s = parse("workload: {trace: t.jsonl}\n").unwrap();
    assert_eq!(s.name, "t");
    assert_eq!(s.seed, DEFAULT_SEED);
    assert_eq!(s.mode, Mode::Aggregated);
    assert_eq!(s.num_workers, 1);
    assert_eq!(
        s.rank_by,
        vec![Objective {
            maximize: true,
            metric: "output_throughput_tok_s".into()
        }]
    );
    assert_eq!(s.pareto.len(), 2);
    assert_eq!(s.grid_size(), Some(1));
    assert!(s.point_params(0).is_empty());
    assert_eq!(s.dir, Path::new("sweeps"));
    assert_eq!(s.sha256.len(), 64);
}

#[test]
fn issue_grid_sizes_and_order() {
    let s = parse(ISSUE_GRID).unwrap();
    let sizes: Vec<u128> = s.axes.iter().map(|a| a.size().unwrap()).collect();
    assert_eq!(sizes, vec![3 + 4, 1 + 3, 2, 2]);
    assert_eq!(s.grid_size(), Some(7 * 4 * 2 * 2));
    // Last axis fastest.
    assert_eq!(
            params_text(&s, 0),
            "mode=\"aggregated\" num_workers=2 router_mode=\"round_robin\" engine.max_num_seqs=128 workload.arrival_speedup_ratio=1"
        );
    assert_eq!(
            params_text(&s, 1),
            "mode=\"aggregated\" num_workers=2 router_mode=\"round_robin\" engine.max_num_seqs=128 workload.arrival_speedup_ratio=2"
        );
    assert_eq!(
            params_text(&s, 2),
            "mode=\"aggregated\" num_workers=2 router_mode=\"round_robin\" engine.max_num_seqs=256 workload.arrival_speedup_ratio=1"
        );
    // Point 4 = routing choice 1 (kv_router, weight 0.5).
    assert_eq!(
            params_text(&s, 4),
            "mode=\"aggregated\" num_workers=2 router_mode=\"kv_router\" router.overlap_score_weight=0.5 engine.max_num_seqs=128 workload.arrival_speedup_ratio=1"
        );
    // Topology choice 3 = first disaggregated bundle point; inside it the last key is fastest.
    let per_topology = 4 * 2 * 2;
    assert!(params_text(&s, 3 * per_topology)
        .starts_with("mode=\"disaggregated\" num_prefill_workers=1 num_decode_workers=2 "));
    assert!(params_text(&s, 4 * per_topology)
        .starts_with("mode=\"disaggregated\" num_prefill_workers=1 num_decode_workers=4 "));
    assert!(params_text(&s, 5 * per_topology)
        .starts_with("mode=\"disaggregated\" num_prefill_workers=2 num_decode_workers=2 "));
    assert_eq!(
            params_text(&s, 7 * per_topology - 1),
            "mode=\"disaggregated\" num_prefill_workers=2 num_decode_workers=4 router_mode=\"kv_router\" router.overlap_score_weight=2.0 engine.max_num_seqs=256 workload.arrival_speedup_ratio=2"
        );
    assert_eq!(
        s.param_columns(),
        vec![
            "mode",
            "num_workers",
            "num_prefill_workers",
            "num_decode_workers",
            "router_mode",
            "router.overlap_score_weight",
            "engine.max_num_seqs",
            "workload.arrival_speedup_ratio"
        ]
    );
}

#[test]
fn single_values_and_single_bundle_are_one_choice_axes() {
    let s =
        parse("workload: {trace: t}\ngrid:\n  seed: 7\n  pools: {mode: disaggregated}\n").unwrap();
    assert_eq!(s.grid_size(), Some(1));
    assert_eq!(params_text(&s, 0), "seed=7 mode=\"disaggregated\"");
}

#[test]
fn trace_shards_as_axis_values() {
    let s = parse("grid:\n  workload.trace: [[a.jsonl, b.jsonl], c.jsonl]\n").unwrap();
    assert_eq!(s.grid_size(), Some(2));
    assert_eq!(
        params_text(&s, 0),
        "workload.trace=[\"a.jsonl\",\"b.jsonl\"]"
    );
    let paths: Vec<String> = trace_paths(&s)
        .iter()
        .map(|(p, _)| p.display().to_string())
        .collect();
    assert_eq!(
        paths,
        vec!["sweeps/a.jsonl", "sweeps/b.jsonl", "sweeps/c.jsonl"]
    );
}

#[test]
fn grid_size_by_multiplication_without_expanding() {
    let mut text = String::from("grid:\n");
    for i in 0..12 {
        text.push_str(&format!("  engine.k{i}: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"));
    }
    let s = parse(&text).unwrap();
    assert_eq!(s.grid_size(), Some(10u128.pow(12)));
    // Decoding a far point works without materialising anything.
    assert!(params_text(&s, 10u128.pow(12) - 1).ends_with("engine.k11=10"));
}

#[test]
fn unknown_keys_suggest() {
    assert!(
        err("wrokload: {}\n").contains("`wrokload`") || err("wrokload: {}\n").contains("wrokload")
    );
    assert!(err("wrokload: {}\n").contains("did you mean `workload`?"));
    assert!(err("workload: {request_rat: 1}\n").contains("did you mean `request_rate`?"));
    assert!(err("slo: {ttft: 1}\n").contains("did you mean `ttft_ms`?"));
    assert!(err("constraints: {max_gpu: 1}\n").contains("did you mean `max_gpus`?"));
    let e = err("require: {p99_ttft_ms: {maxx: 1}}\n");
    assert!(
        e.contains("require.p99_ttft_ms.maxx") && e.contains("did you mean `max`?"),
        "{e}"
    );
}

#[test]
fn unknown_parameter_paths() {
    let e = err("grid:\n  num_worker: [1, 2]\n");
    assert!(
        e.contains("grid.num_worker") && e.contains("did you mean `num_workers`?"),
        "{e}"
    );
    let e = err("grid:\n  engnie.max_num_seqs: [1, 2]\n");
    assert!(e.contains("did you mean `engine.max_num_seqs`?"), "{e}");
    let e = err("grid:\n  workload.request_rat: [1, 2]\n");
    assert!(e.contains("did you mean `request_rate`?"), "{e}");
    let e = err("grid:\n  request_rate: [1, 2]\n");
    assert!(e.contains("did you mean `workload.request_rate`?"), "{e}");
    let e = err("grid:\n  topology:\n    - {mode: aggregated, num_wrkers: [1]}\n");
    assert!(
        e.contains("grid.topology[0].num_wrkers") && e.contains("num_workers"),
        "{e}"
    );
}

#[test]
fn wrong_types_name_their_path() {
    let e = err("grid:\n  topology:\n    - {mode: aggregated, num_workers: [two, 4]}\n");
    assert!(
        e.contains("grid.topology[0].num_workers[0]") && e.contains("string \"two\""),
        "{e}"
    );
    let e = err("grid:\n  topology:\n    - {mode: aggregated, num_workers: [0]}\n");
    assert!(
        e.contains("grid.topology[0].num_workers[0]: expected an integer"),
        "{e}"
    );
    let e = err("grid:\n  mode: [aggregated, disagg]\n");
    assert!(
        e.contains("grid.mode[1]") && e.contains("did you mean `disaggregated`?"),
        "{e}"
    );
    let e = err("workload: {shared_prefix_ratio: 1.5}\n");
    assert!(
        e.contains("workload.shared_prefix_ratio") && e.contains("[0, 1]"),
        "{e}"
    );
    let e = err("workload: {trace: [a, 3]}\n");
    assert!(e.contains("workload.trace[1]"), "{e}");
    let e = err("engine: [1]\n");
    assert!(e.contains("engine: expected a mapping"), "{e}");
    let e = err("seed: -1\n");
    assert!(e.contains("seed: expected an integer"), "{e}");
    let e = err("grid:\n  workload.arrival_speedup_ratio: [0]\n");
    assert!(
        e.contains("grid.workload.arrival_speedup_ratio[0]") && e.contains("> 0"),
        "{e}"
    );
}

#[test]
fn empty_and_mixed_axes() {
    assert!(err("grid:\n  num_workers: []\n").contains("grid.num_workers: empty"));
    assert!(err("grid:\n  topology: []\n").contains("grid.topology: empty axis"));
    let e = err("grid:\n  topology:\n    - {num_workers: []}\n");
    assert!(e.contains("grid.topology[0].num_workers: empty"), "{e}");
    let e = err("grid:\n  topology: [{num_workers: 2}, 3]\n");
    assert!(e.contains("mixes mappings"), "{e}");
}

#[test]
fn axes_setting_the_same_parameter_are_refused() {
    let e = err("grid:\n  topology:\n    - {num_workers: [2, 4]}\n  num_workers: [1]\n");
    assert!(
        e.contains("grid.num_workers") && e.contains("already sets"),
        "{e}"
    );
    let e =
        err("grid:\n  a:\n    - {engine.sglang: {page_size: 1}}\n  engine.sglang.page_size: [2]\n");
    assert!(e.contains("already sets"), "{e}");
}

#[test]
fn objectives_and_bounds() {
    let s = parse(
            "slo: {ttft_ms: 2000, itl_ms: 40}\nrequire: {p99_ttft_ms: {max: 10000}, completed_requests: {min: 1}}\n\
             rank_by: [max goodput_request_throughput_rps, min mean_ttft_ms]\npareto: [max output_throughput_tok_s_per_gpu, min gpus]\n",
        )
        .unwrap();
    assert_eq!(s.require.len(), 2);
    assert_eq!(s.require[0].max, Some(10000.0));
    assert_eq!(
        s.rank_by[1],
        Objective {
            maximize: false,
            metric: "mean_ttft_ms".into()
        }
    );
    assert_eq!(s.pareto[1].metric, "gpus");
    assert_eq!(s.sla.itl_ms, Some(40.0));
    let e = err("rank_by: [max output_throughput]\n");
    assert!(
        e.contains("rank_by[0]") && e.contains("did you mean `output_throughput_tok_s`?"),
        "{e}"
    );
    let e = err("rank_by: [biggest output_throughput_tok_s]\n");
    assert!(e.contains("expected \"max <metric>\""), "{e}");
    let e = err("rank_by: [max goodput_request_throughput_rps]\n");
    assert!(e.contains("only with an `slo`"), "{e}");
    assert!(err("rank_by: []\n").contains("at least one"));
    assert!(err("require: {mean_ttft_ms: {}}\n").contains("min"));
}

#[test]
fn yaml_syntax_errors_have_line_and_column() {
    let e = err("workload:\n  trace: [a, b\nseed: 1\n");
    assert!(e.starts_with("sweeps/t.yaml:"), "{e}");
    let loc: Vec<&str> = e.splitn(4, ':').collect();
    assert!(
        loc[1].parse::<usize>().is_ok() && loc[2].parse::<usize>().is_ok(),
        "{e}"
    );
    assert!(e.contains("invalid YAML"), "{e}");
    assert!(err("").contains("empty"));
    assert!(err("- a\n").contains("top level"));
}

#[test]
fn missing_trace_files_are_found_before_running() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("here.jsonl"), "{}\n").unwrap();
    let file = dir.path().join("s.yaml");
    std::fs::write(
        &file,
        "workload: {trace: here.jsonl}\ngrid:\n  workload.trace: [here.jsonl, gone.jsonl]\n",
    )
    .unwrap();
    let e = load_spec(&file).unwrap_err().to_string();
    assert!(
        e.contains("grid.workload.trace")
            && e.contains("gone.jsonl")
            && e.contains("does not exist"),
        "{e}"
    );
    std::fs::write(&file, "workload: {trace: here.jsonl}\n").unwrap();
    assert!(load_spec(&file).is_ok());
    let e = load_spec(&dir.path().join("nope.yaml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot read the spec"), "{e}");
}

#[test]
fn did_you_mean_needs_closeness() {
    assert_eq!(
        did_you_mean("num_wrokers", PLAIN_PARAMS.iter().copied()),
        Some("num_workers")
    );
    assert_eq!(did_you_mean("zzz", PLAIN_PARAMS.iter().copied()), None);
}
