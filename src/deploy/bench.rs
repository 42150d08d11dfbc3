//! The benchmark: an AIPerf 0.13 command that replays against the deployment the workload the
//! point simulated. A trace is rewritten into `benchmark_trace.jsonl` with the arrival speed-up
//! applied (timestamps from 0, divided by the ratio; a capped run keeps the arrivals inside its
//! window) and replayed on its schedule (`--fixed-schedule`) or, closed-loop, at the replay
//! concurrency; a synthetic workload becomes AIPerf's synthetic flags (exact lengths, the request
//! rate or concurrency, the request count). The SLO becomes AIPerf's `--goodput`. Outputs are
//! generated to their full length (`ignore_eos`), as the simulator assumes.

use crate::config::build::WorkloadSource;
use crate::config::Sla;
use crate::error::InputError;
use crate::workload::formats::TraceFormat;
use crate::workload::synthetic::SyntheticArrival;
use serde_json::{Map, Value};
use std::io::{BufRead, BufReader, Read};

/// The AIPerf release whose flags the command uses.
pub const AIPERF_VERSION: &str = "0.13.0";
/// The trace file the benchmark replays (trace workloads), in OUT.
pub const TRACE_FILE: &str = "benchmark_trace.jsonl";
/// Where the benchmark writes AIPerf's export, in OUT.
pub const ARTIFACT_DIR: &str = "aiperf";

/// The benchmark of one deployment.
pub struct Bench {
    /// AIPerf's flags after `aiperf profile`, with `$MODEL`, `$TOKENIZER`, `$URL`,
    /// `$ARTIFACT_DIR` and `$HERE` (the folder of the script) left for the script to fill.
    pub args: Vec<String>,
    /// The rewritten trace (trace workloads).
    pub trace: Option<Vec<u8>>,
    /// Requests the benchmark sends (after warm-up).
    pub requests: u64,
    /// Their total input and output tokens.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// What differs from the simulation, for the README.
    pub notes: Vec<String>,
}

fn push(a: &mut Vec<String>, flag: &str, v: impl ToString) {
    a.push(flag.into());
    a.push(v.to_string());
}

fn num(x: f64) -> String {
    format!("{x}")
}

/// AIPerf's `--goodput` pairs for the SLO.
pub fn goodput(sla: &Sla) -> Vec<String> {
    let mut g = Vec::new();
    for (tag, v) in [
        ("time_to_first_token", sla.ttft_ms),
        ("inter_token_latency", sla.itl_ms),
        ("request_latency", sla.e2e_ms),
    ] {
        if let Some(v) = v {
            g.push(format!("{tag}:{}", num(v)));
        }
    }
    g
}

/// Builds the benchmark. `load` is the configuration's `load` object, `max_sim_time_ms` its
/// window.
pub fn bench(
    workload: &WorkloadSource,
    load: &Value,
    max_sim_time_ms: Option<f64>,
    sla: &Sla,
    warmup: u64,
) -> Result<Bench, InputError> {
    let speedup = load["arrival_speedup_ratio"].as_f64().unwrap_or(1.0);
    let concurrency = load["replay_concurrency"].as_u64();
    let mut a: Vec<String> = Vec::new();
    for (f, v) in [
        ("--model", "$MODEL"),
        ("--tokenizer", "$TOKENIZER"),
        ("--url", "$URL"),
        ("--endpoint-type", "chat"),
    ] {
        push(&mut a, f, v);
    }
    a.push("--streaming".into());
    let mut notes = Vec::new();
    let (trace, requests, input_tokens, output_tokens) = match workload {
        WorkloadSource::Trace {
            paths,
            format,
            trace_block_size,
            ..
        } => {
            if *format != TraceFormat::Mooncake || paths.len() != 1 {
                return Err(InputError::new(format!(
                    "the benchmark replays Mooncake traces with AIPerf's mooncake_trace loader; a {} trace has no AIPerf replay in `dynosim deploy` yet",
                    format.name()
                )));
            }
            let window = if concurrency.is_none() {
                max_sim_time_ms
            } else {
                None
            };
            let t = rewrite_trace(&paths[0], speedup, window)?;
            push(&mut a, "--input-file", format!("$HERE/{TRACE_FILE}"));
            push(&mut a, "--custom-dataset-type", "mooncake_trace");
            if let Some(b) = trace_block_size {
                push(&mut a, "--isl-block-size", b);
            }
            match concurrency {
                Some(c) => {
                    a.push("--no-fixed-schedule".into());
                    push(&mut a, "--concurrency", c);
                    push(&mut a, "--request-count", t.requests);
                }
                None => {
                    a.push("--fixed-schedule".into());
                    a.push("--fixed-schedule-auto-offset".into());
                }
            }
            if t.dropped > 0 {
                notes.push(format!(
                    "the simulation stopped at {} s of simulated time: the benchmark sends the {} requests that arrive within it (of {} in the trace)",
                    num(max_sim_time_ms.unwrap_or(0.0) / 1000.0),
                    t.requests,
                    t.requests + t.dropped
                ));
            }
            (Some(t.bytes), t.requests, t.input_tokens, t.output_tokens)
        }
        WorkloadSource::Synthetic { spec, .. } => {
            let requests = spec.request_count as u64 * spec.turns_per_session.max(1) as u64;
            let mut isl = spec.input_tokens as u64;
            if spec.shares_prefixes() {
                let prefix = (spec.shared_prefix_ratio * spec.input_tokens as f64).floor() as u64;
                push(&mut a, "--num-prefix-prompts", spec.num_prefix_groups);
                push(&mut a, "--prefix-prompt-length", prefix);
                isl = isl.saturating_sub(prefix).max(1);
                notes.push(format!(
                    "shared prefixes: AIPerf prepends one of {} prefix prompts of {prefix} tokens, picked at random per request (the simulation assigns groups its own way)",
                    spec.num_prefix_groups
                ));
            }
            push(&mut a, "--isl", isl);
            push(&mut a, "--isl-stddev", 0);
            push(&mut a, "--osl", spec.output_tokens);
            push(&mut a, "--osl-stddev", 0);
            if spec.turns_per_session > 1 {
                push(&mut a, "--conversation-num", spec.request_count);
                push(&mut a, "--conversation-turn-mean", spec.turns_per_session);
                push(&mut a, "--conversation-turn-stddev", 0);
                push(
                    &mut a,
                    "--conversation-turn-delay-mean",
                    num(spec.inter_turn_delay_ms / speedup),
                );
            }
            match (concurrency, spec.arrival) {
                (Some(c), _) => push(&mut a, "--concurrency", c),
                (None, SyntheticArrival::PoissonRate(r)) => {
                    push(&mut a, "--request-rate", num(r * speedup));
                    push(&mut a, "--arrival-pattern", "poisson");
                }
                (None, SyntheticArrival::ClosedLoop) => push(&mut a, "--concurrency", requests),
                (None, SyntheticArrival::IntervalMs(ms)) if ms <= 0.0 => {
                    push(&mut a, "--concurrency", requests);
                }
                (None, SyntheticArrival::IntervalMs(ms)) => {
                    push(&mut a, "--request-rate", num(1000.0 * speedup / ms));
                    push(&mut a, "--arrival-pattern", "constant");
                }
            }
            push(&mut a, "--request-count", requests);
            push(&mut a, "--random-seed", spec.arrival_seed);
            (
                None,
                requests,
                requests * spec.input_tokens as u64,
                requests * spec.output_tokens as u64,
            )
        }
    };
    if warmup > 0 {
        push(&mut a, "--warmup-request-count", warmup);
    }
    push(&mut a, "--extra-inputs", "ignore_eos:true");
    let g = goodput(sla);
    if !g.is_empty() {
        push(&mut a, "--goodput", g.join(" "));
    }
    push(&mut a, "--artifact-dir", "$ARTIFACT_DIR");
    Ok(Bench {
        args: a,
        trace,
        requests,
        input_tokens,
        output_tokens,
        notes,
    })
}

struct Rewritten {
    bytes: Vec<u8>,
    requests: u64,
    dropped: u64,
    input_tokens: u64,
    output_tokens: u64,
}

/// The Mooncake trace with timestamps from 0 divided by `speedup` (and `delay`s too), keeping
/// the arrivals at or before `window_ms`.
fn rewrite_trace(
    path: &std::path::Path,
    speedup: f64,
    window_ms: Option<f64>,
) -> Result<Rewritten, InputError> {
    let open = || -> Result<Box<dyn BufRead>, InputError> {
        let f = std::fs::File::open(path)
            .map_err(|e| InputError::new(format!("{}: cannot read: {e}", path.display())))?;
        let r: Box<dyn Read> = if path.extension().is_some_and(|e| e == "gz") {
            Box::new(flate2::read::MultiGzDecoder::new(f))
        } else {
            Box::new(f)
        };
        Ok(Box::new(BufReader::new(r)))
    };
    let bad = |n: usize, e: &dyn std::fmt::Display| {
        InputError::new(format!("{}:{n}: {e}", path.display()))
    };
    let mut rows: Vec<Map<String, Value>> = Vec::new();
    for (i, line) in open()?.lines().enumerate() {
        let line = line.map_err(|e| bad(i + 1, &e))?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(&line) {
            Ok(Value::Object(m)) => rows.push(m),
            Ok(_) => return Err(bad(i + 1, &"expected a JSON object")),
            Err(e) => return Err(bad(i + 1, &e)),
        }
    }
    let t0 = rows
        .iter()
        .filter_map(|r| r.get("timestamp").and_then(Value::as_f64))
        .fold(f64::INFINITY, f64::min);
    let mut out = Vec::new();
    let (mut requests, mut dropped, mut inp, mut outp) = (0u64, 0u64, 0u64, 0u64);
    for mut r in rows {
        if let Some(t) = r.get("timestamp").and_then(Value::as_f64) {
            let scaled = (t - t0) / speedup;
            if window_ms.is_some_and(|w| scaled > w) {
                dropped += 1;
                continue;
            }
            r.insert("timestamp".into(), json_num(scaled));
        }
        if let Some(d) = r.get("delay").and_then(Value::as_f64) {
            r.insert("delay".into(), json_num(d / speedup));
        }
        inp += r.get("input_length").and_then(Value::as_u64).unwrap_or(0);
        outp += r.get("output_length").and_then(Value::as_u64).unwrap_or(0);
        requests += 1;
        out.extend_from_slice(
            serde_json::to_string(&Value::Object(r))
                .unwrap_or_default()
                .as_bytes(),
        );
        out.push(b'\n');
    }
    Ok(Rewritten {
        bytes: out,
        requests,
        dropped,
        input_tokens: inp,
        output_tokens: outp,
    })
}

/// A whole number as an integer, else the float.
fn json_num(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        Value::from(x as i64)
    } else {
        Value::from(x)
    }
}
