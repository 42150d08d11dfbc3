//! The text files of a deployment folder besides the manifest: `launch.sh` (Dynamo's CLI on one
//! machine, also a Slurm job body), `benchmark.sh` (the AIPerf command), `deployment.json` (what
//! `dynosim validate --deployment-from` reads) and `README.md`.

use super::bench::{Bench, AIPERF_VERSION, ARTIFACT_DIR};
use super::k8s::HTTP_PORT;
use super::launch::{Engine, LaunchPlan, Role, DYNAMO_VERSION};
use super::source::Target;
use serde_json::{json, Value};

/// A word quoted for bash: as is when it is plain, else in single quotes.
pub fn sh_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Quotes an argument, except the placeholders the scripts fill (`$MODEL`, `$HERE/...`), which
/// are double-quoted so the shell expands them.
fn sh_arg(s: &str) -> String {
    if s.starts_with('$')
        && s[1..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_uppercase())
    {
        format!("\"{s}\"")
    } else {
        sh_quote(s)
    }
}

fn args_text(args: &[String], indent: &str) -> String {
    // One flag (with its value) per line.
    let mut lines: Vec<String> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a.starts_with("--") && i + 1 < args.len() && !args[i + 1].starts_with("--") {
            lines.push(format!("{} {}", sh_arg(a), sh_arg(&args[i + 1])));
            i += 2;
        } else {
            lines.push(sh_arg(a));
            i += 1;
        }
    }
    lines
        .iter()
        .map(|l| format!(" \\\n{indent}{l}"))
        .collect::<String>()
}

/// The model argument replaced by `$MODEL` (so the script's MODEL variable rules).
fn with_model_var(args: &[String]) -> Vec<String> {
    let mut out = args.to_vec();
    for i in 0..out.len().saturating_sub(1) {
        if out[i] == "--model" || out[i] == "--model-path" {
            out[i + 1] = "$MODEL".into();
        }
    }
    out
}

/// `launch.sh`: the frontend and every worker on one machine, each worker on its own GPUs.
pub fn launch_sh(plan: &LaunchPlan, what: &str) -> String {
    let gpus = plan.gpus();
    let mut s = String::new();
    s.push_str("#!/usr/bin/env bash\n");
    s.push_str(&format!(
        "# Starts {what} with NVIDIA Dynamo {DYNAMO_VERSION}'s CLI on one machine with {gpus} GPU(s): the\n\
         # frontend on port $HTTP_PORT and each worker on its own GPUs (CUDA_VISIBLE_DEVICES). Written by\n\
         # `dynosim deploy`. Run it directly, or as the body of a Slurm job (`sbatch launch.sh`).\n\
         # Needs Dynamo {DYNAMO_VERSION} with the {} backend installed (`pip install ai-dynamo[{}]=={DYNAMO_VERSION}`);\n\
         # workers find each other through the file discovery backend (no etcd or NATS needed).\n\
         # Ctrl-C (or the end of the Slurm job) stops every process; logs go to $LOG_DIR.\n",
        plan.engine.framework(),
        plan.engine.framework(),
    ));
    s.push_str(&format!(
        "#SBATCH --job-name=dynosim-deploy\n#SBATCH --nodes=1\n#SBATCH --gpus-per-node={gpus}\n#SBATCH --exclusive\n"
    ));
    s.push_str("set -euo pipefail\n\n");
    s.push_str(&format!(
        "MODEL=${{MODEL:-{}}}\nHTTP_PORT=${{HTTP_PORT:-{HTTP_PORT}}}\nPYTHON=${{PYTHON:-python3}}\nLOG_DIR=${{LOG_DIR:-logs}}\nexport DYN_DISCOVERY_BACKEND=${{DYN_DISCOVERY_BACKEND:-file}}\n",
        sh_quote(&plan.model)
    ));
    s.push_str("mkdir -p \"$LOG_DIR\"\n\npids=()\n");
    s.push_str("stop() {\n  if [ \"${#pids[@]}\" -gt 0 ]; then kill \"${pids[@]}\" 2>/dev/null || true; fi\n  wait || true\n}\ntrap stop EXIT\ntrap 'exit 130' INT\ntrap 'exit 143' TERM\n\n");
    s.push_str("# Frontend: HTTP API and router.\n\"$PYTHON\" -m dynamo.frontend");
    let mut fe = vec!["--http-port".to_string(), "$HTTP_PORT".to_string()];
    fe.extend(plan.frontend_args.iter().cloned());
    s.push_str(&args_text(&fe, "  "));
    s.push_str(" \\\n  >\"$LOG_DIR/frontend.log\" 2>&1 &\npids+=(\"$!\")\n");
    let mut slot = 0u32;
    let mut gpu = 0u32;
    for p in &plan.pools {
        for r in 0..p.replicas {
            let n = p.gpus_per_replica();
            let devices: Vec<String> = (gpu..gpu + n).map(|g| g.to_string()).collect();
            gpu += n;
            let label = match p.role {
                Role::Aggregated => format!("worker-{r}"),
                Role::Prefill => format!("prefill-{r}"),
                Role::Decode => format!("decode-{r}"),
            };
            s.push_str(&format!(
                "\n# {} worker {r} of {} on GPU(s) {}.\n",
                p.role.name(),
                p.replicas,
                devices.join(",")
            ));
            let mut env = format!(
                "CUDA_VISIBLE_DEVICES={} DYN_SYSTEM_PORT={}",
                devices.join(","),
                8081 + slot
            );
            if p.engine == Engine::Vllm && p.role != Role::Aggregated {
                env.push_str(&format!(" VLLM_NIXL_SIDE_CHANNEL_PORT={}", 5600 + slot));
            }
            s.push_str(&format!("{env} \"$PYTHON\" -m {}", p.engine.module()));
            let mut args = with_model_var(&p.args);
            args.extend(p.worker_args(slot));
            s.push_str(&args_text(&args, "  "));
            s.push_str(&format!(
                " \\\n  >\"$LOG_DIR/{label}.log\" 2>&1 &\npids+=(\"$!\")\n"
            ));
            slot += 1;
        }
    }
    s.push_str(
        "\necho \"dynosim deploy: frontend on http://localhost:$HTTP_PORT; logs in $LOG_DIR; Ctrl-C stops\" >&2\n\
         # The deployment is down as soon as any of its processes exits.\n\
         wait -n \"${pids[@]}\"\n",
    );
    s
}

/// `benchmark.sh`: the AIPerf command.
pub fn benchmark_sh(b: &Bench, model: &str, what: &str) -> String {
    let mut s = String::new();
    s.push_str("#!/usr/bin/env bash\n");
    s.push_str(&format!(
        "# Replays against the deployment the workload dynosim simulated for {what}, with AIPerf\n\
         # {AIPERF_VERSION} (`pip install aiperf=={AIPERF_VERSION}`): {} requests. Written by `dynosim deploy`.\n\
         # The export goes to $ARTIFACT_DIR (default: {ARTIFACT_DIR}/ next to this script), where\n\
         # `dynosim validate --deployment-from <this folder>` finds it with deployment.json.\n\
         # Environment: URL (the frontend), MODEL, TOKENIZER (default: MODEL), AIPERF (the aiperf\n\
         # command), ARTIFACT_DIR. Extra arguments are passed to `aiperf profile`.\n",
        b.requests
    ));
    s.push_str("set -euo pipefail\n\nHERE=$(cd \"$(dirname \"${BASH_SOURCE[0]}\")\" && pwd)\n");
    s.push_str(&format!(
        "URL=${{URL:-http://localhost:{HTTP_PORT}}}\nMODEL=${{MODEL:-{}}}\nTOKENIZER=${{TOKENIZER:-$MODEL}}\nAIPERF=${{AIPERF:-aiperf}}\nARTIFACT_DIR=${{ARTIFACT_DIR:-$HERE/{ARTIFACT_DIR}}}\n\n",
        sh_quote(model)
    ));
    s.push_str("exec \"$AIPERF\" profile");
    s.push_str(&args_text(&b.args, "  "));
    s.push_str(" \\\n  \"$@\"\n");
    s
}

/// The command line as one string (for README and deployment.json), placeholders kept.
pub fn command_line(program: &str, args: &[String]) -> String {
    let mut s = program.to_string();
    for a in args {
        s.push(' ');
        s.push_str(&sh_arg(a));
    }
    s
}

/// `deployment.json`: what was deployed and how to check it.
pub fn deployment_json(t: &Target, plan: &LaunchPlan, b: &Bench) -> Value {
    let pools: Vec<Value> = plan
        .pools
        .iter()
        .map(|p| {
            json!({
                "role": p.role.name(),
                "replicas": p.replicas,
                "tensor_parallel_size": p.tp,
                "data_parallel_size": p.dp,
                "gpus_per_replica": p.gpus_per_replica(),
                "module": format!("python -m {}", p.engine.module()),
                "args": p.args,
            })
        })
        .collect();
    json!({
        "dynosim_deployment": 1,
        "dynosim_version": env!("CARGO_PKG_VERSION"),
        "dynamo_version": DYNAMO_VERSION,
        "aiperf_version": AIPERF_VERSION,
        "source": t.source,
        "run_args": t.run_args,
        "run_command": command_line("dynosim run", &t.run_args),
        "model": plan.model,
        "engine": plan.engine.framework(),
        "router_mode": plan.router_mode,
        "gpus": plan.gpus(),
        "pools": pools,
        "frontend_args": plan.frontend_args,
        "slo": {"ttft_ms": t.sla.ttft_ms, "itl_ms": t.sla.itl_ms, "e2e_ms": t.sla.e2e_ms},
        "workload": {
            "requests": b.requests,
            "input_tokens": b.input_tokens,
            "output_tokens": b.output_tokens,
        },
        "simulated": Value::Object(t.report.clone()),
        "files": {
            "kubernetes": "deployment.yaml",
            "launch": "launch.sh",
            "benchmark": "benchmark.sh",
            "aiperf_args": b.args,
        },
        "benchmark_export": {
            "artifact_dir": ARTIFACT_DIR,
            "summary": format!("{ARTIFACT_DIR}/profile_export_aiperf.json"),
            "records": format!("{ARTIFACT_DIR}/profile_export.jsonl"),
        },
    })
}

fn metric(t: &Target, k: &str) -> String {
    match t.report.get(k).and_then(Value::as_f64) {
        Some(x) if x.fract() == 0.0 && x.abs() < 1e15 => format!("{}", x as i64),
        Some(x) => format!("{x:.2}"),
        None => "-".into(),
    }
}

/// `README.md`: what was chosen and why, and what the benchmark should reproduce.
pub fn readme(t: &Target, plan: &LaunchPlan, b: &Bench, model_note: Option<&str>) -> String {
    let mut s = String::new();
    s.push_str(&format!("# Deployment of {}\n\n", t.label));
    s.push_str(&format!(
        "Written by `dynosim deploy` for NVIDIA Dynamo {DYNAMO_VERSION} (the release whose replay dynosim \
         matches) and AIPerf {AIPERF_VERSION}.\n\n"
    ));
    s.push_str("## What was chosen and why\n\n");
    if let Some(status) = &t.status {
        s.push_str(&format!(
            "- Sweep verdict: `{status}`{}{}.\n",
            t.rank.map(|r| format!(", rank {r}")).unwrap_or_default(),
            t.reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        ));
        if !t.rank_by.is_empty() {
            s.push_str(&format!("- Ranked by: {}.\n", t.rank_by.join(", ")));
        }
        if !t.require.is_empty() {
            s.push_str(&format!("- Required: {}.\n", t.require.join(", ")));
        }
    } else {
        s.push_str("- The deployment simulated by a `dynosim run` report (no sweep ranking).\n");
    }
    let slo = super::bench::goodput(&t.sla);
    s.push_str(&format!(
        "- SLO (goodput): {}.\n",
        if slo.is_empty() {
            "none given".to_string()
        } else {
            slo.join(", ")
        }
    ));
    s.push_str(&format!(
        "- Model: `{}`{}.\n- Engine: {}; router: {}; {} GPU(s) in all.\n",
        plan.model,
        model_note.map(|n| format!(" ({n})")).unwrap_or_default(),
        plan.engine.framework(),
        plan.router_mode,
        plan.gpus()
    ));
    for p in &plan.pools {
        s.push_str(&format!(
            "- {} x {} worker(s), {} GPU(s) each (TP {}, DP {}): `python -m {} {}`\n",
            p.replicas,
            p.role.name(),
            p.gpus_per_replica(),
            p.tp,
            p.dp,
            p.engine.module(),
            p.args.join(" ")
        ));
    }
    s.push_str(&format!(
        "- Frontend: `python -m dynamo.frontend {}`\n",
        plan.frontend_args.join(" ")
    ));
    s.push_str("\n## The simulated figures the benchmark should reproduce\n\n");
    s.push_str("| metric | simulated |\n|---|---|\n");
    for (k, label) in [
        ("num_requests", "requests"),
        ("completed_requests", "completed requests"),
        ("duration_ms", "duration (ms)"),
        ("request_throughput_rps", "request throughput (req/s)"),
        ("output_throughput_tok_s", "output throughput (tok/s)"),
        ("goodput_request_throughput_rps", "goodput (req/s)"),
        ("mean_ttft_ms", "mean TTFT (ms)"),
        ("p50_ttft_ms", "p50 TTFT (ms)"),
        ("median_ttft_ms", "median TTFT (ms)"),
        ("p90_ttft_ms", "p90 TTFT (ms)"),
        ("p99_ttft_ms", "p99 TTFT (ms)"),
        ("mean_itl_ms", "mean ITL (ms)"),
        ("p99_itl_ms", "p99 ITL (ms)"),
        ("mean_e2e_latency_ms", "mean request latency (ms)"),
        ("p99_e2e_latency_ms", "p99 request latency (ms)"),
        ("prefix_cache_reused_ratio", "prefix cache reused ratio"),
    ] {
        if t.report.contains_key(k) {
            s.push_str(&format!("| {label} | {} |\n", metric(t, k)));
        }
    }
    s.push_str(&format!(
        "\nThe benchmark sends {} requests ({} input and {} output tokens in all).\n\
         Calibration: none (the point's timing model as simulated: DynoSim's polynomial, a measured \
         profile or AIConfigurator's estimate, as its engine args say).\n",
        b.requests, b.input_tokens, b.output_tokens
    ));
    let notes: Vec<&String> = plan.notes.iter().chain(b.notes.iter()).collect();
    if !notes.is_empty() {
        s.push_str("\n## Differences from the simulation\n\n");
        for n in notes {
            s.push_str(&format!("- {n}\n"));
        }
    }
    s.push_str(&format!(
        "\n## Files and how to use them\n\n\
         - `deployment.yaml`: the `DynamoGraphDeployment`; `kubectl apply -n <namespace> -f deployment.yaml`.\n\
         - `launch.sh`: the same deployment on one machine (or `sbatch launch.sh`); needs {} GPUs.\n\
         - `benchmark.sh`: the AIPerf {AIPERF_VERSION} benchmark; `URL=http://<frontend>:{HTTP_PORT} bash benchmark.sh`.\n\
         - `deployment.json`: the exact `dynosim run` flags of this deployment and the benchmark's export \
         location, for `dynosim validate --deployment-from <this folder>`.\n\n\
         The simulation again: `{}`\n",
        plan.gpus(),
        command_line("dynosim run", &t.run_args)
    ));
    s
}
