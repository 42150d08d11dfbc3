//! The stride path (runs of identical decode passes advanced at once) must give exactly the
//! results of the step-by-step path, bit for bit, on every kind of configuration.

use clap::Parser;
use dynosim::cli::{Cli, Command};
use dynosim::sim::{simulate_with, SimOptions};

/// Report keys that depend on the host's clock.
const HOST_KEYS: &[&str] = &[
    "wall_time_ms",
    "processed_tokens_per_s",
    "processed_output_tokens_per_s",
];

fn check(args: &str) {
    let mut argv = vec!["dynosim".to_string(), "run".to_string()];
    argv.extend(shell_split(args));
    let cli = Cli::try_parse_from(&argv).unwrap();
    let Command::Run(run) = cli.command else {
        unreachable!()
    };
    let mut plan = dynosim::run::plan(&run).unwrap();
    plan.sim.record_requests = true;
    let workload = plan.workload.load().unwrap();
    let a = simulate_with(&workload, &plan.sim, SimOptions { strides: true });
    let b = simulate_with(&workload, &plan.sim, SimOptions { strides: false });
    // A configuration that dead-ends (as the reference does, e.g. a preempted request that
    // outgrew its pool) must dead-end identically on both paths.
    let (a, b) = match (a, b) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(ea), Err(eb)) => {
            assert_eq!(ea, eb, "dead ends differ: {args}");
            return;
        }
        (a, b) => panic!("one path failed: {args}: {:?} / {:?}", a.err(), b.err()),
    };
    let strip = |r: &dynosim::report::Report| {
        let mut f = r.fields.clone();
        for k in HOST_KEYS {
            f.remove(*k);
        }
        serde_json::to_string(&f).unwrap()
    };
    assert_eq!(strip(&a.report), strip(&b.report), "report differs: {args}");
    assert_eq!(a.records, b.records, "per-request records differ: {args}");
}

/// Splits on spaces, keeping single-quoted JSON together.
fn shell_split(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in s.chars() {
        match c {
            '\'' => quoted = !quoted,
            ' ' if !quoted => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

const C2K: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/traces/conv_2k.jsonl.gz"
);
const CONV400: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/traces/conv400.jsonl"
);
const SESSIONS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/traces/sessions.jsonl.gz"
);

#[test]
fn round_robin_trace() {
    check(&format!(
        "{C2K} --num-workers 3 --extra-engine-args '{{\"block_size\":64}}'"
    ));
}

#[test]
fn kv_router_trace_with_queueing() {
    check(&format!(
        "{C2K} --num-workers 4 --router-mode kv_router --extra-engine-args '{{\"block_size\":64}}' \
         --router-config '{{\"router_queue_threshold\":0.5}}'"
    ));
}

#[test]
fn disaggregated_with_transfer_delay() {
    check(&format!(
        "{C2K} --router-mode kv_router --num-prefill-workers 2 --num-decode-workers 3 \
         --prefill-engine-args '{{\"block_size\":64,\"worker_type\":\"prefill\",\"kv_bytes_per_token\":131072,\"kv_transfer_bandwidth\":25}}' \
         --decode-engine-args '{{\"block_size\":64,\"worker_type\":\"decode\"}}'"
    ));
}

#[test]
fn eviction_preemption_and_time_cap() {
    check(&format!(
        "{C2K} --num-workers 2 --max-sim-time-seconds 300 \
         --extra-engine-args '{{\"block_size\":16,\"num_gpu_blocks\":3000,\"max_num_seqs\":32}}'"
    ));
    check(
        "--input-tokens 4096 --output-tokens 256 --request-count 100 --replay-concurrency 32 \
         --extra-engine-args '{\"num_gpu_blocks\":512}'",
    );
}

#[test]
fn sessions_closed_loop_and_small_budget() {
    check(&format!(
        "{SESSIONS} --num-workers 2 --replay-concurrency 4 \
         --extra-engine-args '{{\"block_size\":32,\"max_num_batched_tokens\":2048}}'"
    ));
    check(&format!(
        "{SESSIONS} --num-workers 3 --arrival-speedup-ratio 3 --router-mode kv_router"
    ));
    // One worker: follow-ups due inside a stride are stamped with the end of the pass it is cut
    // at, as step by step.
    check(&format!(
        "{SESSIONS} --replay-concurrency 4 --extra-engine-args '{{\"block_size\":64}}'"
    ));
}

#[test]
fn synthetic_open_loop_dp_ranks_and_speedups() {
    check(
        "--input-tokens 2048 --output-tokens 300 --request-count 200 --request-rate 30 \
         --num-workers 2 --extra-engine-args '{\"dp_size\":2,\"speedup_ratio\":2,\"decode_speedup_ratio\":1.5}'",
    );
    check(
        "--input-tokens 5000 --output-tokens 500 --request-count 100 --turns-per-session 3 \
         --shared-prefix-ratio 0.5 --num-prefix-groups 8 --inter-turn-delay-ms 250 \
         --replay-concurrency 32 --num-workers 2 --extra-engine-args '{\"max_model_len\":5300}'",
    );
}

/// Strides that cross block boundaries on full pools: blocks are taken from the LRU head on the
/// way, and with a KV router the stride stops before evicting a block the router knows of.
#[test]
fn strides_across_block_boundaries_on_full_pools() {
    // Dead-ends at ~3560 s (as DynoSim does: a preempted request outgrows its pool): capped
    // before, so whole reports are compared; the dead end itself is compared below.
    let tight = format!(
        "{C2K} --num-workers 2 --router-mode kv_router \
         --extra-engine-args '{{\"block_size\":16,\"num_gpu_blocks\":2500}}'"
    );
    check(&format!("{tight} --max-sim-time-seconds 3000"));
    check(&tight);
    check(
        "--input-tokens 3000 --output-tokens 400 --request-count 150 --request-rate 20 \
         --shared-prefix-ratio 0.6 --num-prefix-groups 4 --num-workers 2 --router-mode kv_router \
         --extra-engine-args '{\"block_size\":32,\"num_gpu_blocks\":700,\"preemption_mode\":\"fifo\"}'",
    );
    check(&format!(
        "{C2K} --num-workers 3 --extra-engine-args '{{\"block_size\":8,\"num_gpu_blocks\":6000}}'"
    ));
    // Prefill workers' hidden tokens (zero-time passes applied at once) on a small pool, capped
    // before the dead end these reach at ~670 s (as DynoSim's runs do).
    for router in ["kv_router", "round_robin"] {
        check(&format!(
            "{C2K} --router-mode {router} --num-prefill-workers 2 --num-decode-workers 2 \
             --max-sim-time-seconds 600 \
             --prefill-engine-args '{{\"block_size\":16,\"worker_type\":\"prefill\",\"num_gpu_blocks\":3000}}' \
             --decode-engine-args '{{\"block_size\":16,\"worker_type\":\"decode\",\"num_gpu_blocks\":20000}}'"
        ));
    }
}

/// A grid of budgets, block sizes, routers and worker counts: chunked prefills whose last chunk
/// is a single prompt token (a prefill pass, not a decode pass), block boundaries at every
/// budget.
#[test]
fn budget_and_block_size_grid() {
    for workers in [2, 3] {
        for router in ["round_robin", "kv_router"] {
            for bs in [16, 64] {
                for mnbt in [2048, 4096, 8192] {
                    check(&format!(
                        "{C2K} --num-workers {workers} --router-mode {router} \
                         --extra-engine-args '{{\"block_size\":{bs},\"max_num_batched_tokens\":{mnbt}}}'"
                    ));
                }
            }
        }
    }
    for router in ["round_robin", "kv_router"] {
        for mnbt in [2048, 8192] {
            check(&format!(
                "{C2K} --router-mode {router} --num-prefill-workers 2 --num-decode-workers 2 \
                 --prefill-engine-args '{{\"block_size\":32,\"worker_type\":\"prefill\",\"max_num_batched_tokens\":{mnbt}}}' \
                 --decode-engine-args '{{\"block_size\":32,\"worker_type\":\"decode\",\"max_num_batched_tokens\":{mnbt}}}'"
            ));
        }
    }
    check(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/mooncake_conversation_trace.jsonl.gz --num-workers 6 --trace-block-size 512 \
         --extra-engine-args '{\"block_size\":64,\"max_num_batched_tokens\":4096}'"
    ));
}

/// SGLang: strides of decode passes (with evictions from the radix cache when no router sees
/// them) against the step-by-step passes, with retraction, chunking, LPM and kv_router.
#[test]
fn sglang_round_robin_kv_router_and_small_pools() {
    check(&format!(
        "{C2K} --num-workers 3 --extra-engine-args \
         '{{\"engine_type\":\"sglang\",\"sglang\":{{\"page_size\":64}},\"num_gpu_blocks\":2000}}'"
    ));
    check(&format!(
        "{CONV400} --num-workers 3 --router-mode kv_router --extra-engine-args \
         '{{\"engine_type\":\"sglang\",\"sglang\":{{\"page_size\":16,\"schedule_policy\":\"lpm\"}},\"num_gpu_blocks\":6000}}'"
    ));
    check(
        "--input-tokens 2000 --output-tokens 400 --request-count 120 --request-rate 30 \
         --extra-engine-args '{\"engine_type\":\"sglang\",\"sglang\":{\"page_size\":16,\
         \"schedule_conservativeness\":0.3,\"chunked_prefill_size\":1024},\"num_gpu_blocks\":2000}'",
    );
    check(&format!(
        "{SESSIONS} --num-workers 2 --replay-concurrency 4 \
         --extra-engine-args '{{\"engine_type\":\"sglang\",\"num_gpu_blocks\":60000}}'"
    ));
}

/// SGLang at its default page size of one token, where a stride's middle passes cache their
/// tokens' pages only before its last pass: full pools that evict cached prompts mid-stride,
/// retraction, prompts sharing prefixes (the shared pages are cached before any deferral),
/// page sizes that leave partial pages, and a KV router that sees the cached pages.
#[test]
fn sglang_strides_that_cache_their_pages_late() {
    for (pages, router) in [(1, "round_robin"), (1, "kv_router"), (3, "round_robin")] {
        check(&format!(
            "--input-tokens 900 --output-tokens 300 --request-count 160 --replay-concurrency 24 \
             --num-workers 2 --router-mode {router} --random-range-ratio 0.8 \
             --shared-prefix-ratio 0.5 --num-prefix-groups 4 \
             --extra-engine-args '{{\"engine_type\":\"sglang\",\"sglang\":{{\"page_size\":{pages}}},\"num_gpu_blocks\":{}}}'",
            12_000 / pages
        ));
    }
    // Pages of 64 tokens: a request's cached path is last touched when its latest page
    // completed, at different passes for different requests.
    check(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/mooncake_conversation_trace.jsonl.gz --num-workers 4 --extra-engine-args \
         '{\"engine_type\":\"sglang\",\"sglang\":{\"page_size\":64},\"num_gpu_blocks\":16384}'"
    ));
    for router in ["round_robin", "kv_router"] {
        check(&format!(
            "{SESSIONS} --num-workers 2 --replay-concurrency 6 --router-mode {router} \
             --extra-engine-args '{{\"engine_type\":\"sglang\",\"num_gpu_blocks\":40000}}'"
        ));
    }
}

/// A measured profile (`planner_profile_data`): decode time depends on the context, which grows
/// by one token every pass, so a stride evaluates every pass's duration.
#[test]
fn measured_profile_with_context_dependent_decode() {
    let profile = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/profiles/own_profile.npz"
    );
    for router in ["round_robin", "kv_router"] {
        check(&format!(
            "{C2K} --num-workers 3 --router-mode {router} \
             --extra-engine-args '{{\"block_size\":32,\"planner_profile_data\":\"{profile}\"}}'"
        ));
    }
    check(&format!(
        "{C2K} --router-mode kv_router --num-prefill-workers 2 --num-decode-workers 2 \
         --prefill-engine-args '{{\"block_size\":64,\"worker_type\":\"prefill\",\"planner_profile_data\":\"{profile}\"}}' \
         --decode-engine-args '{{\"block_size\":64,\"worker_type\":\"decode\",\"planner_profile_data\":\"{profile}\",\"num_gpu_blocks\":3000}}'"
    ));
}
