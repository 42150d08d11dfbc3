//! `dynosim deploy`: every file it writes checked by the tool that consumes it. The manifest
//! against the DynamoGraphDeployment CRD's schema (tests/data/dynamo, unknown fields refused as
//! `kubectl --validate=strict` does), the scripts with `bash -n` and ShellCheck, the benchmark by
//! running AIPerf against a local OpenAI-compatible stub server (scripts/openai_stub_server.py)
//! and comparing what it sent with the simulated workload, and deployment.json's `run_args` by
//! running `dynosim run` with them. ShellCheck and AIPerf are skipped with a message when missing
//! (and fail the test when `CI` is set).

mod common;

use assert_cmd::Command;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The tests of this file run one at a time, so AIPerf's run against the stub server does not share
/// the two cores with the other tests' sweeps. (The CI failures of AIPerf records without lengths
/// were the stub's listen backlog resetting connections, fixed in scripts/openai_stub_server.py.)
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn dynosim() -> Command {
    Command::cargo_bin("dynosim").expect("the dynosim binary")
}

fn sweep(spec_text: &str, dir: &Path, name: &str) -> PathBuf {
    let spec = dir.join(format!("{name}.yaml"));
    std::fs::write(&spec, spec_text).unwrap();
    let out = dir.join(format!("{name}-out"));
    let o = dynosim()
        .args([
            "sweep",
            spec.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--quiet",
            "-j",
            "2",
        ])
        .output()
        .unwrap();
    assert!(
        o.status.code() == Some(0),
        "sweep {name}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

fn deploy(args: &[&str]) -> std::process::Output {
    dynosim().arg("deploy").args(args).output().unwrap()
}

fn deploy_ok(args: &[&str]) {
    let o = deploy(args);
    assert!(
        o.status.success(),
        "deploy {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The v1alpha1 schema of the CRD fixture, with every object that lists its properties closed
/// to others (the API server's strict field validation).
fn crd_schema() -> Value {
    let text = std::fs::read_to_string(
        root().join("tests/data/dynamo/dynamographdeployments-v1alpha1-excerpt.yaml"),
    )
    .unwrap();
    let crd: Value = serde_yaml::from_str(&text).unwrap();
    let v = crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "v1alpha1")
        .unwrap();
    let mut schema = v["schema"]["openAPIV3Schema"].clone();
    fn close(s: &mut Value) {
        if let Value::Object(m) = s {
            if m.contains_key("properties") && !m.contains_key("additionalProperties") {
                m.insert("additionalProperties".into(), Value::Bool(false));
            }
            for (_, v) in m.iter_mut() {
                close(v);
            }
        }
    }
    close(&mut schema);
    schema
}

fn check_manifest(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.contains("Dynamo 1.4.2"),
        "{}: names the release",
        path.display()
    );
    let doc: Value = serde_yaml::from_str(&text).unwrap();
    assert_eq!(doc["apiVersion"], "nvidia.com/v1alpha1");
    assert_eq!(doc["kind"], "DynamoGraphDeployment");
    let schema = crd_schema();
    let validator = jsonschema::validator_for(&schema).expect("the CRD schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{}: {errors:?}", path.display());
    // The checker is not vacuous: a misspelt field and a wrong type are refused.
    let mut bad = doc.clone();
    bad["spec"]["services"]["Frontend"]["replica"] = Value::from(1);
    assert!(!validator.is_valid(&bad));
    let mut bad = doc.clone();
    bad["spec"]["backendFramework"] = Value::from("mocker");
    assert!(!validator.is_valid(&bad));
}

fn have_shellcheck() -> bool {
    let ok = std::process::Command::new("shellcheck")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must provide shellcheck"
        );
        eprintln!("skipped: ShellCheck checks need `shellcheck` (apt-get install shellcheck)");
    }
    ok
}

fn check_scripts(dir: &Path) {
    for s in ["launch.sh", "benchmark.sh"] {
        let p = dir.join(s);
        let o = std::process::Command::new("bash")
            .arg("-n")
            .arg(&p)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "bash -n {}: {}",
            p.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        if have_shellcheck() {
            let o = std::process::Command::new("shellcheck")
                .arg(&p)
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "shellcheck {}:\n{}",
                p.display(),
                String::from_utf8_lossy(&o.stdout)
            );
        }
    }
}

fn check_folder(dir: &Path) -> Value {
    for f in [
        "deployment.yaml",
        "launch.sh",
        "benchmark.sh",
        "deployment.json",
        "README.md",
    ] {
        assert!(dir.join(f).is_file(), "{} has {f}", dir.display());
    }
    check_manifest(&dir.join("deployment.yaml"));
    check_scripts(dir);
    json(&dir.join("deployment.json"))
}

/// `dynosim run` with deployment.json's flags gives the point's report again.
fn check_run_args(dep: &Value, tmp: &Path) {
    let args: Vec<String> = dep["run_args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let report = tmp.join("again.json");
    let o = dynosim()
        .arg("run")
        .args(&args)
        .args(["--report-json", report.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "run {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let again = json(&report);
    let sim = dep["simulated"].as_object().unwrap();
    for (k, v) in again.as_object().unwrap() {
        if [
            "wall_time_ms",
            "processed_tokens_per_s",
            "processed_output_tokens_per_s",
        ]
        .contains(&k.as_str())
        {
            continue;
        }
        assert_eq!(Some(v), sim.get(k), "{k} from run_args {args:?}");
    }
}

const SYNTH_SPEC: &str = r#"
name: small
workload: {input_tokens: 300, output_tokens: 12, request_count: 40, replay_concurrency: 6}
engine: {block_size: 16, num_gpu_blocks: 2048}
grid:
  topology:
    - {mode: aggregated, num_workers: [2], engine.dp_size: [1]}
    - {mode: disaggregated, num_prefill_workers: [1], num_decode_workers: [1, 2]}
  router_mode: [round_robin, kv_router]
router: {overlap_score_credit: 0.5}
slo: {ttft_ms: 2000, itl_ms: 40}
rank_by: [max goodput_request_throughput_rps, min mean_ttft_ms]
"#;

#[test]
fn a_sweep_winner_and_its_top_points_pass_the_validators() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let spec = SYNTH_SPEC.replace("engine.dp_size: [1]}", "engine.dp_size: [1, 2]}");
    let out = sweep(&spec, tmp.path(), "small");
    let d = tmp.path().join("d");
    deploy_ok(&[out.to_str().unwrap(), "-o", d.to_str().unwrap()]);
    let dep = check_folder(&d);
    assert_eq!(dep["source"]["rank"], 1);
    assert_eq!(dep["dynamo_version"], "1.4.2");
    check_run_args(&dep, tmp.path());
    let readme = std::fs::read_to_string(d.join("README.md")).unwrap();
    assert!(readme.contains("time_to_first_token:2000"), "{readme}");

    // Every point, aggregated and disaggregated, both routers.
    let top = tmp.path().join("top");
    deploy_ok(&[
        out.to_str().unwrap(),
        "-o",
        top.to_str().unwrap(),
        "--top",
        "8",
        "--model",
        "Qwen/Qwen3-8B",
    ]);
    let mut seen_disagg = false;
    for entry in std::fs::read_dir(&top).unwrap() {
        let dir = entry.unwrap().path();
        let dep = check_folder(&dir);
        check_run_args(&dep, tmp.path());
        let yaml = std::fs::read_to_string(dir.join("deployment.yaml")).unwrap();
        assert!(yaml.contains("Qwen/Qwen3-8B"));
        if dep["pools"].as_array().unwrap().len() == 2 {
            seen_disagg = true;
            assert!(yaml.contains("subComponentType: prefill"), "{yaml}");
            assert!(yaml.contains("--disaggregation-mode"), "{yaml}");
        }
        if dep["router_mode"] == "kv" {
            assert!(yaml.contains("--router-kv-overlap-score-credit"), "{yaml}");
        }
    }
    assert!(seen_disagg);
}

#[test]
fn sglang_and_trtllm_points_get_their_backends() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let spec = r#"
name: engines
workload: {input_tokens: 200, output_tokens: 10, request_count: 30, request_rate: 20}
engine: {block_size: 32, num_gpu_blocks: 2048}
grid:
  engine.engine_type: [sglang, trtllm]
  num_workers: [2]
router_mode: kv_router
"#;
    let out = sweep(spec, tmp.path(), "engines");
    for (point, module, flag) in [
        (0, "dynamo.sglang", "--page-size"),
        (1, "dynamo.trtllm", "--kv-block-size"),
    ] {
        let d = tmp.path().join(format!("p{point}"));
        deploy_ok(&[
            out.to_str().unwrap(),
            "--point",
            &point.to_string(),
            "-o",
            d.to_str().unwrap(),
        ]);
        let dep = check_folder(&d);
        check_run_args(&dep, tmp.path());
        let yaml = std::fs::read_to_string(d.join("deployment.yaml")).unwrap();
        assert!(yaml.contains(module) && yaml.contains(flag), "{yaml}");
        let bench = std::fs::read_to_string(d.join("benchmark.sh")).unwrap();
        assert!(
            bench.contains("--request-rate 20") && bench.contains("--arrival-pattern poisson"),
            "{bench}"
        );
    }
}

#[test]
fn trtllm_batch_waiting_is_a_launch_setting() {
    let (yaml, _) = deployed_engine(
        "engine_type: trtllm
  block_size: 32
  num_gpu_blocks: 2048
  trtllm: {batch_wait_timeout_iters: 20, batch_wait_max_tokens_ratio: 0.9}",
    );
    assert!(
        yaml.contains("\"batch_wait_timeout_iters\":20")
            && yaml.contains("\"batch_wait_max_tokens_ratio\":0.9"),
        "{yaml}"
    );
}

#[test]
fn sglang_receive_interval_is_a_launch_setting() {
    let (yaml, _) = deployed_engine(
        "engine_type: sglang
  num_gpu_blocks: 65536
  sglang: {scheduler_recv_interval: 30}",
    );
    assert!(yaml.contains("--scheduler-recv-interval"), "{yaml}");
}

#[test]
fn simulation_only_overheads_are_noted_not_launched() {
    let (yaml, readme) = deployed_engine(
        "request_overhead_ms: 20
  decode_pass_overhead_ms: -1.5
  decode_time_scale: 1.25
  kv_pool_scale: 0.5",
    );
    assert!(!yaml.contains("overhead"), "{yaml}");
    assert!(!yaml.contains("decode_time_scale"), "{yaml}");
    assert!(!yaml.contains("kv_pool_scale"), "{yaml}");
    for want in [
        "request_overhead_ms = 20.0 models the serving stack's per-request overhead: not a launch setting",
        "decode_pass_overhead_ms = -1.5 models a fixed cost of each decode pass: not a launch setting",
        "decode_time_scale (a timing scale of the simulation) = 1.25: not a launch setting",
        "kv_pool_scale (a KV pool size correction of the simulation) = 0.5: not a launch setting",
    ] {
        assert!(readme.contains(want), "{want}\n{readme}");
    }
}

#[test]
fn an_engines_own_dp_rank_routing_is_noted_not_launched() {
    let (yaml, readme) = deployed_engine(
        "dp_size: 2
  dp_rank_routing: engine",
    );
    assert!(!yaml.contains("dp_rank_routing"), "{yaml}");
    assert!(
        readme.contains("dp_rank_routing = engine simulated each worker placing requests"),
        "{readme}"
    );
}

#[test]
fn simulated_multi_token_prediction_is_noted_not_launched() {
    let (yaml, readme) = deployed_engine("aic_nextn: 2");
    assert!(!yaml.contains("speculative"), "{yaml}");
    assert!(
        readme.contains("multi-token prediction was simulated (aic_nextn = 2)"),
        "{readme}"
    );
}

/// Sweeps a one-point spec with this `engine:` block, deploys the point (checked like every
/// deployment) and returns the deployment's CRD and README.
fn deployed_engine(engine: &str) -> (String, String) {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let spec = format!(
        "name: launch
workload: {{input_tokens: 200, output_tokens: 10, request_count: 30, replay_concurrency: 4}}
engine:
  {engine}
grid:
  num_workers: [1]
"
    );
    let out = sweep(&spec, tmp.path(), "launch");
    let d = tmp.path().join("p0");
    deploy_ok(&[out.to_str().unwrap(), "-o", d.to_str().unwrap()]);
    let dep = check_folder(&d);
    check_run_args(&dep, tmp.path());
    (
        std::fs::read_to_string(d.join("deployment.yaml")).unwrap(),
        std::fs::read_to_string(d.join("README.md")).unwrap(),
    )
}

#[test]
fn a_report_deploys_with_the_flags_that_wrote_it() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let report = tmp.path().join("r.json");
    let flags = [
        "--input-tokens",
        "100",
        "--output-tokens",
        "8",
        "--request-count",
        "20",
        "--replay-concurrency",
        "4",
        "--num-workers",
        "2",
        "--router-mode",
        "kv_router",
    ];
    let o = dynosim()
        .arg("run")
        .args(flags)
        .args(["--report-json", report.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success());
    let d = tmp.path().join("d");
    let mut args = vec![report.to_str().unwrap(), "-o", d.to_str().unwrap(), "--"];
    args.extend(flags);
    deploy_ok(&args);
    let dep = check_folder(&d);
    assert_eq!(dep["source"]["kind"], "report");
    check_run_args(&dep, tmp.path());
}

/// Exit 2, one `error:` line naming the problem, nothing written.
fn refused(args: &[&str], out: &Path, expect: &str) {
    let o = deploy(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: ") && err.contains(expect), "{err}");
    assert!(!out.exists(), "{} left behind", out.display());
    let parent = out.parent().unwrap();
    for e in std::fs::read_dir(parent).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.contains(".tmp-"), "temporary {name} left behind");
    }
}

#[test]
fn bad_input_exits_2_and_writes_nothing() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let spec = r#"
name: bad
workload: {input_tokens: 100, output_tokens: 8, request_count: 20, replay_concurrency: 4}
grid:
  router.router_queue_policy: [fcfs, lcfs]
num_workers: 2
router_mode: kv_router
router: {router_queue_threshold: 0.5}
"#;
    let out = sweep(spec, tmp.path(), "bad");
    let o = tmp.path().join("o");
    let s = out.to_str().unwrap();
    let os = o.to_str().unwrap();
    refused(&[s, "--point", "99", "-o", os], &o, "--point 99");
    refused(
        &[s, "--point", "1", "-o", os],
        &o,
        "no Dynamo 1.4.2 launch equivalent",
    );
    refused(
        &[tmp.path().to_str().unwrap(), "-o", os],
        &o,
        "not a sweep output folder",
    );
    refused(
        &[tmp.path().join("nope").to_str().unwrap(), "-o", os],
        &o,
        "no such file or folder",
    );
    let spec_file = tmp.path().join("bad.yaml");
    refused(
        &[spec_file.to_str().unwrap(), "-o", os],
        &o,
        "neither a sweep output folder nor",
    );
    // A report without the flags that wrote it.
    let report = tmp.path().join("r.json");
    let run = dynosim()
        .args([
            "run",
            "--input-tokens",
            "100",
            "--output-tokens",
            "8",
            "--request-count",
            "5",
            "--replay-concurrency",
            "2",
            "--report-json",
            report.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(run.status.success());
    refused(
        &[report.to_str().unwrap(), "-o", os],
        &o,
        "give the `dynosim run` flags",
    );
    refused(
        &[
            report.to_str().unwrap(),
            "-o",
            os,
            "--",
            "--input-tokens",
            "100",
            "--output-tokens",
            "8",
            "--request-count",
            "5",
            "--replay-concurrency",
            "2",
            "--num-workers",
            "0",
        ],
        &o,
        "--num-workers",
    );
    refused(
        &[
            report.to_str().unwrap(),
            "-o",
            os,
            "--",
            "--input-tokens",
            "100",
            "--output-tokens",
            "8",
            "--request-count",
            "5",
            "--replay-concurrency",
            "2",
            "--extra-engine-args",
            "{\"aic_tp_size\":2}",
        ],
        &o,
        "GPUs per worker",
    );
    // An existing, non-empty OUT is left alone.
    std::fs::create_dir(&o).unwrap();
    std::fs::write(o.join("keep"), "x").unwrap();
    let r = deploy(&[s, "-o", os]);
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("already exists"));
    assert_eq!(std::fs::read_dir(&o).unwrap().count(), 1);
    // The first point (fcfs) deploys.
    let good = tmp.path().join("good");
    deploy_ok(&[s, "--point", "0", "-o", good.to_str().unwrap()]);
}

/// Each bundled sweep, run on the first 2,000 requests of the conversation trace, deploys its
/// winner into files that pass the validators.
#[test]
fn every_bundled_sweeps_winner_deploys() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let trace = root().join("tests/data/traces/conv_2k.jsonl.gz");
    let mut names: Vec<PathBuf> = std::fs::read_dir(root().join("sweeps"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    names.sort();
    for spec in names {
        let text = std::fs::read_to_string(&spec).unwrap();
        let name = spec.file_stem().unwrap().to_string_lossy().into_owned();
        if text.contains("aic_backend") && !common::have_aic(&format!("deploy {name}")) {
            continue;
        }
        let text = text
            .replace(
                "../data/mooncake_conversation_trace.jsonl.gz",
                trace.to_str().unwrap(),
            )
            .replace("output: results/bench30\n", "");
        let out = sweep(&text, tmp.path(), &name);
        let d = tmp.path().join(format!("{name}-deploy"));
        deploy_ok(&[out.to_str().unwrap(), "-o", d.to_str().unwrap()]);
        let dep = check_folder(&d);
        assert!(dep["gpus"].as_u64().unwrap() >= 1, "{name}");
    }
}

// ---- AIPerf against the stub server ----

fn aiperf() -> Option<PathBuf> {
    let p = std::env::var_os("DYNOSIM_AIPERF")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/dynosim-aiperf-venv/bin/aiperf"));
    if p.is_file() {
        return Some(p);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must provide AIPerf ({}; DYNOSIM_AIPERF)",
        p.display()
    );
    eprintln!(
        "skipped: the AIPerf benchmark test needs aiperf 0.13.0 in /opt/dynosim-aiperf-venv (or DYNOSIM_AIPERF)"
    );
    None
}

/// The stub server on a free port, stopped on drop.
struct Stub {
    child: std::process::Child,
    url: String,
}

impl Drop for Stub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_stub(python: &Path, dir: &Path) -> Stub {
    let port_file = dir.join("port");
    let child = std::process::Command::new(python)
        .arg(root().join("scripts/openai_stub_server.py"))
        .args(["--port", "0", "--port-file", port_file.to_str().unwrap()])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !port_file.exists() {
        assert!(start.elapsed().as_secs() < 20, "stub server did not start");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let port = std::fs::read_to_string(&port_file)
        .unwrap()
        .trim()
        .to_string();
    Stub {
        child,
        url: format!("http://127.0.0.1:{port}"),
    }
}

/// Runs benchmark.sh against the stub; returns AIPerf's records: (input, output) tokens.
fn run_benchmark(dir: &Path, aiperf: &Path, tokenizer: &Path, url: &str) -> Vec<(u64, u64)> {
    let o = std::process::Command::new("bash")
        .arg(dir.join("benchmark.sh"))
        .args(["--ui-type", "none", "--no-server-metrics", "--no-auto-plot"])
        .env("AIPERF", aiperf)
        .env("URL", url)
        .env("HF_HOME", tokenizer)
        .env("HF_HUB_OFFLINE", "1")
        .env("TOKENIZER", "dynosim/stub-tokenizer")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "benchmark.sh: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let records = std::fs::read_to_string(dir.join("aiperf/profile_export.jsonl")).unwrap();
    let mut got = Vec::new();
    for line in records.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        if r["metadata"]["benchmark_phase"] != "profiling" {
            continue;
        }
        let m = &r["metrics"];
        let length = |key: &str| {
            m[key]["value"]
                .as_u64()
                .unwrap_or_else(|| panic!("AIPerf record without {key}: {line}"))
        };
        got.push((
            length("input_sequence_length"),
            length("output_sequence_length"),
        ));
    }
    got.sort();
    got
}

#[test]
fn aiperf_sends_the_simulated_workload() {
    let _serial = serial();
    let Some(aiperf) = aiperf() else { return };
    let python = aiperf.parent().unwrap().join("python");
    let tmp = tempfile::tempdir().unwrap();
    let tok = tmp.path().join("hf");
    let o = std::process::Command::new(&python)
        .arg(root().join("scripts/stub_tokenizer.py"))
        .arg("--hf-home")
        .arg(&tok)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stub = start_stub(&python, tmp.path());

    // A trace: its first 60 requests, 40 times faster than recorded.
    let trace = tmp.path().join("t.jsonl");
    let full = flate2::read::MultiGzDecoder::new(
        std::fs::File::open(root().join("tests/data/traces/conv_2k.jsonl.gz")).unwrap(),
    );
    let lines: Vec<String> = std::io::BufRead::lines(std::io::BufReader::new(full))
        .take(60)
        .map(Result::unwrap)
        .collect();
    std::fs::write(&trace, lines.join("\n") + "\n").unwrap();
    let spec = format!(
        "name: tr\nworkload: {{trace: {}, trace_block_size: 512, arrival_speedup_ratio: 40}}\nengine: {{block_size: 64}}\ngrid: {{num_workers: [2, 4]}}\nslo: {{ttft_ms: 2000}}\nrank_by: [min mean_ttft_ms]\n",
        trace.display()
    );
    let out = sweep(&spec, tmp.path(), "tr");
    let d = tmp.path().join("trd");
    deploy_ok(&[out.to_str().unwrap(), "-o", d.to_str().unwrap()]);
    let dep = check_folder(&d);
    let got = run_benchmark(&d, &aiperf, &tok, &stub.url);
    let mut want: Vec<(u64, u64)> = lines
        .iter()
        .map(|l| {
            let v: Map<String, Value> = serde_json::from_str(l).unwrap();
            (
                v["input_length"].as_u64().unwrap(),
                v["output_length"].as_u64().unwrap(),
            )
        })
        .collect();
    want.sort();
    assert_eq!(
        got.len() as u64,
        dep["simulated"]["num_requests"].as_u64().unwrap()
    );
    assert_eq!(got, want, "AIPerf sent the trace's lengths");

    // A synthetic workload, closed loop, the whole round trip: sweep -> deploy -> AIPerf ->
    // dynosim validate --deployment-from.
    let started = std::time::Instant::now();
    let out = sweep(SYNTH_SPEC, tmp.path(), "syn");
    let d = tmp.path().join("synd");
    deploy_ok(&[out.to_str().unwrap(), "-o", d.to_str().unwrap()]);
    let dep = check_folder(&d);
    let got = run_benchmark(&d, &aiperf, &tok, &stub.url);
    assert_eq!(
        got.len() as u64,
        dep["simulated"]["num_requests"].as_u64().unwrap()
    );
    assert!(got.iter().all(|&r| r == (300, 12)), "{got:?}");
    let v = tmp.path().join("validation");
    let o = dynosim()
        .args([
            "validate",
            "--deployment-from",
            d.to_str().unwrap(),
            "-o",
            v.to_str().unwrap(),
            "--quiet",
        ])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "validate: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let round_trip = started.elapsed();
    let val = json(&v.join("validation.json"));
    let points = val["points"].as_array().unwrap();
    assert_eq!(points.len(), 1);
    let p = &points[0];
    assert_eq!(p["status"], "ok", "{p}");
    // validate simulated the deployment and workload deploy wrote, read back from AIPerf's
    // export and deployment.json: the same simulation as the sweep's point.
    let sim = &dep["simulated"];
    assert_eq!(
        p["predicted"]["completed_requests"],
        sim["completed_requests"]
    );
    assert_eq!(p["predicted"]["ttft_ms"], sim["mean_ttft_ms"], "{p}");
    assert_eq!(p["predicted"]["tpot_ms"], sim["mean_tpot_ms"], "{p}");
    assert!(p["measured_ttft_ms"].as_f64().is_some_and(|t| t > 0.0));
    eprintln!("round trip sweep -> deploy -> AIPerf -> validate: {round_trip:?}");

    // --deployment-from without a benchmark run yet, or on a folder deploy did not write.
    let fresh = tmp.path().join("fresh");
    deploy_ok(&[out.to_str().unwrap(), "-o", fresh.to_str().unwrap()]);
    for (dir, expect) in [
        (&fresh, "no AIPerf export"),
        (&tmp.path().to_path_buf(), "deployment.json"),
    ] {
        let o = dynosim()
            .args([
                "validate",
                "--deployment-from",
                dir.to_str().unwrap(),
                "-o",
                tmp.path().join("v2").to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&o.stderr).contains(expect));
    }
}
