#!/usr/bin/env bash
# AIC timing speed on the bundled conversation trace (4 workers, round robin, block 512,
# Qwen3-8B on h200_sxm, vLLM 0.24.0, TP 1) against the polynomial run of the same configuration,
# best of N runs each:
#   polynomial      whole `dynosim run` wall time with DynoSim's default timing;
#   first use       compile (Python subprocess) + load, with an empty cache folder;
#   load (cached)   load of the cached compiled engine (perf tables read from parquet);
#   AIC run         whole wall time of a cached run minus its load: what the target compares;
#   simulation      the report's wall_time_ms (the simulation loop alone), both timings;
#   CPU time        user + system time of whole runs (less sensitive to a busy machine).
# Target (issue 9): AIC run <= 3x the polynomial run.
#   scripts/bench_aic.sh [--runs N]
# Needs aiconfigurator-core 0.12.0 in `python3` or $DYNOSIM_PYTHON; build first: cargo build --release.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=3
if [ "${1:-}" = "--runs" ]; then runs=$2; shift 2; fi
bin=target/release/dynosim
trace=data/mooncake_conversation_trace.jsonl.gz
aic='{"block_size":512,"aic_backend":"vllm","aic_system":"h200_sxm","aic_model_path":"Qwen/Qwen3-8B","aic_backend_version":"0.24.0","aic_tp_size":1}'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export DYNOSIM_CACHE_DIR=$tmp/cache

# One run: prints "<wall s> <AIC load s or 0> <report wall_time_ms> <CPU s (user+sys)>".
one() {
  python3 - "$bin" "$trace" "$1" "$tmp" <<'PY'
import json, re, resource, subprocess, sys, time
bin, trace, args, tmp = sys.argv[1:]
cmd = [bin, "run", trace, "--trace-block-size", "512", "--num-workers", "4",
       "--router-mode", "round_robin", "--extra-engine-args", args,
       "--report-json", f"{tmp}/r.json"]
before = resource.getrusage(resource.RUSAGE_CHILDREN)
s = time.perf_counter()
p = subprocess.run(cmd, capture_output=True, text=True)
wall = time.perf_counter() - s
after = resource.getrusage(resource.RUSAGE_CHILDREN)
if p.returncode != 0:
    sys.exit(p.stdout + p.stderr)
cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
m = re.search(r"AIC: .* in ([0-9.]+) s", p.stdout + p.stderr)
print(wall, m.group(1) if m else 0, json.load(open(f"{tmp}/r.json"))["wall_time_ms"], cpu)
PY
}

poly=() cold=() warm=()
for _ in $(seq "$runs"); do poly+=("$(one '{"block_size":512}')"); done
for _ in $(seq "$runs"); do
  rm -rf "$DYNOSIM_CACHE_DIR"
  cold+=("$(one "$aic")")
done
for _ in $(seq "$runs"); do warm+=("$(one "$aic")"); done

python3 - "${poly[*]}" "${cold[*]}" "${warm[*]}" <<'PY'
import sys
def rows(arg):
    v = [float(x) for x in arg.split()]
    return [tuple(v[i:i + 4]) for i in range(0, len(v), 4)]
poly, cold, warm = (rows(a) for a in sys.argv[1:])
p_wall = min(r[0] for r in poly)
p_sim = min(r[2] for r in poly) / 1000
first = min(r[1] for r in cold)
load = min(r[1] for r in warm)
run = min(r[0] - r[1] for r in warm)
sim = min(r[2] for r in warm) / 1000
print(f"{'polynomial run':<28} {p_wall:8.3f} s   (simulation {p_sim:.3f} s)")
print(f"{'AIC first use (compile+load)':<28} {first:8.3f} s")
print(f"{'AIC load from cache':<28} {load:8.3f} s")
print(f"{'AIC run without load':<28} {run:8.3f} s   (simulation {sim:.3f} s)")
print(f"{'CPU time, whole run':<28} polynomial {min(r[3] for r in poly):.3f} s, "
      f"AIC from the cache {min(r[3] for r in warm):.3f} s (load included)")
print(f"ratio AIC / polynomial: {run / p_wall:.1f}x (target <= 3x); "
      f"simulation alone {sim / p_sim:.1f}x")
PY
