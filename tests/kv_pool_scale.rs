//! dynosim's `kv_pool_scale` engine key (1 = DynoSim): a factor on the KV pool's block count, as
//! a calibration sets it. A pool of 400 blocks at factor ½ simulates exactly as a pool of 200,
//! on vLLM and SGLang, and differently from the pool at its full size.

mod common;

use assert_cmd::cargo::cargo_bin_cmd;
use serde_json::Value;
use std::path::Path;

fn report(dir: &Path, engine_args: &str) -> Value {
    let out = cargo_bin_cmd!("dynosim")
        .current_dir(dir)
        .args(["run", "--input-tokens", "2000", "--output-tokens", "200"])
        .args(["--request-count", "40", "--replay-concurrency", "16"])
        .args(["--extra-engine-args", engine_args])
        .args(["--report-json", "r.json"])
        .output()
        .unwrap();
    // The simulator's own speed, not the simulation.
    common::simulated_only(common::report_of(&out, &dir.join("r.json")).0)
}

#[test]
fn a_scaled_pool_simulates_as_that_many_blocks() {
    let dir = tempfile::tempdir().unwrap();
    // 16 prompts of 2,000 + 200 tokens: vLLM's 400 blocks of 64 tokens hold them all, and
    // SGLang's 48,000 pages of 1 token; half of either queues some.
    for (engine, blocks) in [("vllm", 400), ("sglang", 48_000)] {
        let args = |n: u32, scale: &str| {
            format!(r#"{{"engine_type": "{engine}", "num_gpu_blocks": {n}{scale}}}"#)
        };
        let scaled = report(dir.path(), &args(blocks, r#", "kv_pool_scale": 0.5"#));
        let small = report(dir.path(), &args(blocks / 2, ""));
        let full = report(dir.path(), &args(blocks, ""));
        assert_eq!(scaled, small, "{engine}");
        assert_eq!(scaled["completed_requests"], 40, "{engine}");
        let ttft = |r: &Value| r["mean_ttft_ms"].as_f64().unwrap();
        assert!(
            ttft(&scaled) > ttft(&full) * 1.2,
            "{engine}: {scaled} vs {full}"
        );
    }
}

#[test]
fn a_factor_that_is_not_positive_is_refused() {
    for v in ["0", "-0.5", "\"1\""] {
        let out = cargo_bin_cmd!("dynosim")
            .args(["run", "--input-tokens", "100", "--output-tokens", "10"])
            .args(["--request-count", "2", "--replay-concurrency", "1"])
            .args([
                "--extra-engine-args",
                &format!(r#"{{"kv_pool_scale": {v}}}"#),
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{v}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--extra-engine-args") && err.contains("kv_pool_scale"),
            "{err}"
        );
    }
}
