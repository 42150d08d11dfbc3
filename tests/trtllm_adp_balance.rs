//! TRT-LLM's attention-DP balancing (`trtllm.attention_dp_enable_balance`), through `dynosim
//! run`: with several DP ranks, new prompts wait until every rank can take one or the timeout
//! passes, so TTFT grows and every request is still served; a timeout of one pass (and no
//! batching wait) never holds, which is the engine without balancing to the last digit.

mod common;

use serde_json::Value;

fn run(trtllm: &str) -> Value {
    let engine = format!(
        r#"{{"engine_type":"trtllm","dp_size":4,"block_size":32,"num_gpu_blocks":4096,"trtllm":{trtllm}}}"#
    );
    common::run_160_requests(&engine, 16, &[])
}

fn num(r: &Value, k: &str) -> f64 {
    r[k].as_f64().unwrap_or_else(|| panic!("{k} in {r}"))
}

#[test]
fn balancing_holds_prompts_until_every_rank_can_take_one() {
    let off = run("{}");
    let balanced = run(
        r#"{"attention_dp_enable_balance":true,"attention_dp_timeout_iters":40,"attention_dp_batching_wait_iters":0}"#,
    );
    for r in [&off, &balanced] {
        assert_eq!(num(r, "completed_requests"), 160.0);
        assert_eq!(
            num(r, "total_output_tokens"),
            num(&off, "total_output_tokens")
        );
    }
    assert!(
        num(&balanced, "mean_ttft_ms") > num(&off, "mean_ttft_ms"),
        "balanced {} off {}",
        balanced["mean_ttft_ms"],
        off["mean_ttft_ms"]
    );

    let never = run(
        r#"{"attention_dp_enable_balance":true,"attention_dp_timeout_iters":1,"attention_dp_batching_wait_iters":0}"#,
    );
    for k in [
        "mean_ttft_ms",
        "mean_itl_ms",
        "duration_ms",
        "p99_e2e_latency_ms",
    ] {
        assert_eq!(never[k], off[k], "{k}");
    }
}
