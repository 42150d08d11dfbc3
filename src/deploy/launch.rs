//! The deployment as Dynamo 1.4.2 launches it: the frontend's flags (`python -m dynamo.frontend`:
//! router mode and the KV router's settings) and, per worker pool, the engine's flags
//! (`python -m dynamo.vllm | dynamo.sglang | dynamo.trtllm`), replicas and GPUs per replica.
//! The Kubernetes manifest and the launch script both render this one plan.
//!
//! Flag names are those of Dynamo 1.4.2's argument parsers (the frontend's router groups, the
//! backends' own flags) and of the engines they pass through (vLLM's engine args, SGLang's
//! server args); settings the simulator has but no engine can be told (timing speed-ups, the
//! KV-transfer bandwidth model, a replay-only queue override) are listed as notes.

use crate::error::InputError;
use serde_json::{json, Map, Value};

/// The Dynamo release the files target (the one whose replay dynosim matches).
pub const DYNAMO_VERSION: &str = "1.4.2";

/// A serving engine as Dynamo launches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Vllm,
    Sglang,
    Trtllm,
}

impl Engine {
    /// The Python module Dynamo starts the worker with.
    pub fn module(self) -> &'static str {
        match self {
            Engine::Vllm => "dynamo.vllm",
            Engine::Sglang => "dynamo.sglang",
            Engine::Trtllm => "dynamo.trtllm",
        }
    }
    /// `spec.backendFramework` of the DynamoGraphDeployment.
    pub fn framework(self) -> &'static str {
        match self {
            Engine::Vllm => "vllm",
            Engine::Sglang => "sglang",
            Engine::Trtllm => "trtllm",
        }
    }
    /// The runtime container image of Dynamo's release.
    pub fn image(self) -> String {
        let name = match self {
            Engine::Vllm => "vllm-runtime",
            Engine::Sglang => "sglang-runtime",
            Engine::Trtllm => "tensorrtllm-runtime",
        };
        format!("nvcr.io/nvidia/ai-dynamo/{name}:{DYNAMO_VERSION}")
    }
    /// Service-name prefix in the manifest (`VllmWorker`, `SglangPrefillWorker`, ...).
    pub fn service_prefix(self) -> &'static str {
        match self {
            Engine::Vllm => "Vllm",
            Engine::Sglang => "Sglang",
            Engine::Trtllm => "Trtllm",
        }
    }
}

/// A pool's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Aggregated,
    Prefill,
    Decode,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Aggregated => "aggregated",
            Role::Prefill => "prefill",
            Role::Decode => "decode",
        }
    }
}

/// One worker pool.
#[derive(Debug, Clone)]
pub struct PoolPlan {
    pub role: Role,
    pub engine: Engine,
    pub replicas: u32,
    /// Tensor-parallel size.
    pub tp: u32,
    /// Data-parallel (attention-DP) ranks per worker.
    pub dp: u32,
    /// The engine's flags after `python -m dynamo.<engine>`, without per-worker ports.
    pub args: Vec<String>,
    /// Whether the worker publishes KV events to the KV router.
    pub kv_events: bool,
}

impl PoolPlan {
    pub fn gpus_per_replica(&self) -> u32 {
        self.tp * self.dp
    }

    /// The flags that differ per worker on one machine: event and bootstrap ports. `slot` is
    /// the worker's index among all workers of the deployment (0 in Kubernetes, where every
    /// worker is its own pod).
    pub fn worker_args(&self, slot: u32) -> Vec<String> {
        let mut a = Vec::new();
        if self.kv_events {
            let port = 5557 + slot;
            match self.engine {
                Engine::Vllm => {
                    a.push("--kv-events-config".into());
                    a.push(format!(
                        r#"{{"enable_kv_cache_events":true,"publisher":"zmq","topic":"kv-events","endpoint":"tcp://*:{port}"}}"#
                    ));
                }
                Engine::Sglang => {
                    a.push("--kv-events-config".into());
                    a.push(format!(
                        r#"{{"publisher":"zmq","topic":"kv-events","endpoint":"tcp://*:{port}"}}"#
                    ));
                }
                Engine::Trtllm => {}
            }
        }
        if self.engine == Engine::Sglang && self.role == Role::Prefill {
            a.push("--disaggregation-bootstrap-port".into());
            a.push((12345 + slot).to_string());
        }
        a
    }
}

/// The whole deployment.
#[derive(Debug, Clone)]
pub struct LaunchPlan {
    pub model: String,
    pub engine: Engine,
    pub pools: Vec<PoolPlan>,
    /// `python -m dynamo.frontend` flags (without `--http-port`).
    pub frontend_args: Vec<String>,
    pub router_mode: String,
    /// Simulated settings with no launch equivalent, for the README.
    pub notes: Vec<String>,
}

impl LaunchPlan {
    pub fn gpus(&self) -> u64 {
        self.pools
            .iter()
            .map(|p| p.replicas as u64 * p.gpus_per_replica() as u64)
            .sum()
    }
}

fn no_equivalent(what: String) -> InputError {
    InputError::new(format!(
        "{what}: no Dynamo {DYNAMO_VERSION} launch equivalent, so this point cannot be deployed"
    ))
}

fn u64_of(e: &Value, k: &str) -> Option<u64> {
    e.get(k).and_then(Value::as_u64)
}

fn push(a: &mut Vec<String>, flag: &str, v: impl ToString) {
    a.push(flag.into());
    a.push(v.to_string());
}

/// Builds the plan from a recorded configuration (`SimConfig` JSON) and the engine objects as
/// given (one per pool), for `model`.
pub fn plan(
    config: &Value,
    raw_engines: &[Map<String, Value>],
    run_args: &[String],
    model: &str,
) -> Result<LaunchPlan, InputError> {
    let t = &config["topology"];
    let mut pools_in: Vec<(Role, u32, &Value)> = Vec::new();
    if let Some(a) = t.get("Aggregated") {
        let n = a["num_workers"].as_u64().unwrap_or(1) as u32;
        pools_in.push((Role::Aggregated, n, &a["engine"]));
    } else if let Some(d) = t.get("Disaggregated") {
        let np = d["num_prefill_workers"].as_u64().unwrap_or(1) as u32;
        let nd = d["num_decode_workers"].as_u64().unwrap_or(1) as u32;
        pools_in.push((Role::Prefill, np, &d["prefill"]));
        pools_in.push((Role::Decode, nd, &d["decode"]));
    } else {
        return Err(InputError::new(
            "the recorded configuration has no topology",
        ));
    }
    let kv = config["router_mode"].as_str() == Some("kv_router");
    let mut notes = Vec::new();
    let mut pools = Vec::new();
    let empty = Map::new();
    for (i, (role, replicas, e)) in pools_in.iter().enumerate() {
        let raw = raw_engines.get(i).unwrap_or(&empty);
        pools.push(pool(*role, *replicas, e, raw, model, kv, &mut notes)?);
    }
    let engine = pools[0].engine;
    if pools.iter().any(|p| p.engine != engine) {
        return Err(no_equivalent(
            "prefill and decode pools on different engines".into(),
        ));
    }
    let frontend_args = frontend(config, run_args)?;
    notes.dedup();
    Ok(LaunchPlan {
        model: model.to_string(),
        engine,
        pools,
        frontend_args,
        router_mode: if kv { "kv" } else { "round-robin" }.into(),
        notes,
    })
}

fn pool(
    role: Role,
    replicas: u32,
    e: &Value,
    raw: &Map<String, Value>,
    model: &str,
    kv: bool,
    notes: &mut Vec<String>,
) -> Result<PoolPlan, InputError> {
    let engine = match e["engine_type"].as_str() {
        Some("vllm") => Engine::Vllm,
        Some("sglang") => Engine::Sglang,
        Some("trtllm") => Engine::Trtllm,
        other => {
            return Err(no_equivalent(format!(
                "engine_type {}",
                other.unwrap_or("(missing)")
            )))
        }
    };
    let tp = u64_of(e, "tp_size").unwrap_or(1).max(1) as u32;
    let dp = u64_of(e, "dp_size").unwrap_or(1).max(1) as u32;
    let block = u64_of(e, "block_size").unwrap_or(64);
    let seqs = u64_of(e, "max_num_seqs");
    let batched = u64_of(e, "max_num_batched_tokens");
    let model_len = u64_of(e, "max_model_len");
    let prefix = e["enable_prefix_caching"].as_bool().unwrap_or(true);
    let chunked = e["enable_chunked_prefill"].as_bool().unwrap_or(true);
    // The KV pool is pinned only when the spec or flags set it: otherwise the engine sizes it
    // from GPU memory (AIC timing estimates the same way).
    let blocks = raw
        .contains_key("num_gpu_blocks")
        .then(|| u64_of(e, "num_gpu_blocks"))
        .flatten();
    for (k, what) in [
        (
            "speedup_ratio",
            "speedup_ratio (a timing scale of the simulation)",
        ),
        (
            "decode_speedup_ratio",
            "decode_speedup_ratio (a timing scale of the simulation)",
        ),
        (
            "decode_time_scale",
            "decode_time_scale (a timing scale of the simulation)",
        ),
        (
            "kv_pool_scale",
            "kv_pool_scale (a KV pool size correction of the simulation)",
        ),
    ] {
        if e[k].as_f64().is_some_and(|x| x != 1.0) {
            notes.push(format!("{what} = {}: not a launch setting", e[k]));
        }
    }
    for (k, what) in [
        (
            "request_overhead_ms",
            "the serving stack's per-request overhead",
        ),
        (
            "prefill_pass_overhead_ms",
            "the host's dispatch cost of each prefill pass",
        ),
        (
            "decode_pass_overhead_ms",
            "a fixed cost of each decode pass",
        ),
    ] {
        if e[k].as_f64().is_some_and(|x| x != 0.0) {
            notes.push(format!(
                "{k} = {} models {what}: not a launch setting",
                e[k]
            ));
        }
    }
    if e["mixed_pass"].as_str() == Some("fused") {
        notes.push(
            "mixed_pass = \"fused\" times the simulation's steps that prefill and decode as \
             one forward: not a launch setting"
                .to_string(),
        );
    }
    if dp > 1 && e["dp_rank_routing"].as_str() == Some("engine") {
        notes.push(
            "dp_rank_routing = engine simulated each worker placing requests on its DP ranks \
             itself, as its engine does when no router names the rank: not a launch setting \
             (Dynamo's KV router names the rank)"
                .into(),
        );
    }
    if let Some(n) = u64_of(&e["mtp"], "nextn") {
        notes.push(format!(
            "multi-token prediction was simulated (aic_nextn = {n}): the launch line does not \
             turn it on; enable the engine's MTP speculative decoding with {n} draft tokens if \
             the model has MTP heads (the acceptance rates are the model's, not a setting)"
        ));
    }
    if e["kv_transfer_bandwidth"].as_f64().is_some_and(|x| x > 0.0) {
        notes.push(format!(
            "kv_transfer_bandwidth = {} GB/s models the prefill-to-decode KV transfer; the real transfer runs over NIXL",
            e["kv_transfer_bandwidth"]
        ));
    }
    if !e["router_queue_policy"].is_null() {
        notes.push(format!(
            "the engine's router_queue_policy override ({}) is replay-only; the frontend's --router-queue-policy applies",
            e["router_queue_policy"]
        ));
    }
    let kv_events = kv && (prefix || engine == Engine::Sglang);
    // Serialised only when on, with both settings.
    let batch_wait = e.get("batch_wait").map(|w| {
        (
            u64_of(w, "timeout_iters").unwrap_or(0),
            w["max_tokens_ratio"].as_f64().unwrap_or(0.0),
        )
    });
    let st = Settings {
        role,
        tp,
        dp,
        block,
        seqs,
        batched,
        model_len,
        prefix,
        chunked,
        blocks,
        kv_events,
        batch_wait,
    };
    let a = match engine {
        Engine::Vllm => vllm_args(&st, model),
        Engine::Sglang => sglang_args(&st, &e["sglang"], model),
        Engine::Trtllm => trtllm_args(&st, model)?,
    };
    Ok(PoolPlan {
        role,
        engine,
        replicas,
        tp,
        dp,
        args: a,
        kv_events,
    })
}

/// The settings of a pool that every engine's flags are built from.
struct Settings {
    role: Role,
    tp: u32,
    dp: u32,
    block: u64,
    seqs: Option<u64>,
    batched: Option<u64>,
    model_len: Option<u64>,
    prefix: bool,
    chunked: bool,
    blocks: Option<u64>,
    kv_events: bool,
    /// TRT-LLM's batch waiting: (batch_wait_timeout_iters, batch_wait_max_tokens_ratio).
    batch_wait: Option<(u64, f64)>,
}

/// `python -m dynamo.vllm` flags (vLLM's engine args and Dynamo's).
fn vllm_args(st: &Settings, model: &str) -> Vec<String> {
    let mut a = Vec::new();
    push(&mut a, "--model", model);
    push(&mut a, "--tensor-parallel-size", st.tp);
    if st.dp > 1 {
        push(&mut a, "--data-parallel-size", st.dp);
    }
    push(&mut a, "--block-size", st.block);
    if let Some(s) = st.seqs {
        push(&mut a, "--max-num-seqs", s);
    }
    if let Some(b) = st.batched {
        push(&mut a, "--max-num-batched-tokens", b);
    }
    if let Some(l) = st.model_len {
        push(&mut a, "--max-model-len", l);
    }
    if let Some(b) = st.blocks {
        push(&mut a, "--num-gpu-blocks-override", b);
    }
    a.push(
        if st.prefix {
            "--enable-prefix-caching"
        } else {
            "--no-enable-prefix-caching"
        }
        .into(),
    );
    a.push(
        if st.chunked {
            "--enable-chunked-prefill"
        } else {
            "--no-enable-chunked-prefill"
        }
        .into(),
    );
    if st.role != Role::Aggregated {
        push(&mut a, "--disaggregation-mode", st.role.name());
        push(
            &mut a,
            "--kv-transfer-config",
            r#"{"kv_connector":"NixlConnector","kv_role":"kv_both"}"#,
        );
    }
    a
}

/// `python -m dynamo.sglang` flags (SGLang's server args and Dynamo's).
fn sglang_args(st: &Settings, sg: &Value, model: &str) -> Vec<String> {
    let mut a = Vec::new();
    push(&mut a, "--model-path", model);
    push(&mut a, "--tp-size", st.tp);
    if st.dp > 1 {
        push(&mut a, "--dp-size", st.dp);
        a.push("--enable-dp-attention".into());
    }
    push(&mut a, "--page-size", st.block);
    if let Some(s) = st.seqs {
        push(&mut a, "--max-running-requests", s);
    }
    if let Some(c) = u64_of(sg, "chunked_prefill_size") {
        push(&mut a, "--chunked-prefill-size", c);
    }
    if let Some(m) = u64_of(sg, "max_prefill_tokens") {
        push(&mut a, "--max-prefill-tokens", m);
    }
    if let Some(l) = st.model_len {
        push(&mut a, "--context-length", l);
    }
    if let Some(b) = st.blocks {
        push(&mut a, "--max-total-tokens", b * st.block);
    }
    let policy = match sg["schedule_policy"].as_str() {
        Some("lpm") => "lpm",
        _ => "fcfs",
    };
    push(&mut a, "--schedule-policy", policy);
    if let Some(c) = sg["schedule_conservativeness"].as_f64() {
        push(&mut a, "--schedule-conservativeness", c);
    }
    if let Some(n) = sg["scheduler_recv_interval"].as_u64() {
        push(&mut a, "--scheduler-recv-interval", n);
    }
    if st.role != Role::Aggregated {
        push(&mut a, "--disaggregation-mode", st.role.name());
        push(&mut a, "--disaggregation-transfer-backend", "nixl");
    }
    a
}

/// `python -m dynamo.trtllm` flags.
fn trtllm_args(st: &Settings, model: &str) -> Result<Vec<String>, InputError> {
    let mut a = Vec::new();
    if st.dp > 1 {
        return Err(no_equivalent(format!(
            "TRT-LLM with dp_size {} (dynosim's data-parallel ranks; TRT-LLM's attention DP shards differently)",
            st.dp
        )));
    }
    push(&mut a, "--model", model);
    push(&mut a, "--tensor-parallel-size", st.tp);
    push(&mut a, "--kv-block-size", st.block);
    if let Some(s) = st.seqs {
        push(&mut a, "--max-batch-size", s);
    }
    if let Some(b) = st.batched {
        push(&mut a, "--max-num-tokens", b);
    }
    if let Some(l) = st.model_len {
        push(&mut a, "--max-seq-len", l);
    }
    let mut kv_cfg = json!({"enable_block_reuse": st.prefix});
    if let Some(b) = st.blocks {
        kv_cfg["max_tokens"] = json!(b * st.block);
    }
    let mut over = json!({"enable_chunked_prefill": st.chunked, "kv_cache_config": kv_cfg});
    if let Some((iters, ratio)) = st.batch_wait {
        over["batch_wait_timeout_iters"] = json!(iters);
        over["batch_wait_max_tokens_ratio"] = json!(ratio);
    }
    push(&mut a, "--override-engine-args", over);
    if st.kv_events {
        a.push("--publish-kv-events".into());
    }
    if st.role != Role::Aggregated {
        push(&mut a, "--disaggregation-mode", st.role.name());
    }
    Ok(a)
}

/// The frontend's flags: router mode and, for the KV router, every setting the point used.
fn frontend(config: &Value, run_args: &[String]) -> Result<Vec<String>, InputError> {
    let mut a = Vec::new();
    if config["router_mode"].as_str() != Some("kv_router") {
        push(&mut a, "--router-mode", "round-robin");
        return Ok(a);
    }
    push(&mut a, "--router-mode", "kv");
    let r = &config["router"];
    let num = |k: &str| r[k].as_f64();
    for (key, flag) in [
        ("overlap_score_credit", "--router-kv-overlap-score-credit"),
        (
            "overlap_score_credit_decay",
            "--router-kv-overlap-score-credit-decay",
        ),
        ("prefill_load_scale", "--router-prefill-load-scale"),
        (
            "decode_active_request_weight",
            "--router-decode-active-request-weight",
        ),
        ("router_temperature", "--router-temperature"),
    ] {
        if let Some(v) = num(key) {
            push(&mut a, flag, v);
        }
    }
    for (key, flag) in [
        ("router_track_active_blocks", "router-track-active-blocks"),
        ("router_track_output_blocks", "router-track-output-blocks"),
        ("router_assume_kv_reuse", "router-assume-kv-reuse"),
        ("router_track_prefill_tokens", "router-track-prefill-tokens"),
    ] {
        if let Some(b) = r[key].as_bool() {
            a.push(if b {
                format!("--{flag}")
            } else {
                format!("--no-{flag}")
            });
        }
    }
    if let Some(q) = num("router_queue_threshold") {
        push(&mut a, "--router-queue-threshold", q);
    }
    match r["router_queue_policy"].as_str() {
        Some(p @ ("fcfs" | "wspt")) => push(&mut a, "--router-queue-policy", p),
        Some(other) => {
            return Err(no_equivalent(format!(
                "router_queue_policy {other} (Dynamo's frontend takes fcfs or wspt)"
            )))
        }
        None => {}
    }
    if r["router_prefill_load_model"].as_str() == Some("aic") {
        push(&mut a, "--router-prefill-load-model", "aic");
        // Dynamo 1.4.2 requires Dynamo's own chat processor for the AIC load model.
        push(&mut a, "--dyn-chat-processor", "dynamo");
        // The estimator's flags are the run's `--aic-*` flags (DynoSim took them from the
        // frontend's own AIC argument group).
        let mut it = run_args.iter();
        while let Some(f) = it.next() {
            if f.starts_with("--aic-") {
                if let Some(v) = it.next() {
                    push(&mut a, f, v);
                }
            }
        }
    }
    Ok(a)
}
