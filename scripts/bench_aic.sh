#!/usr/bin/env bash
# AIC timing speed on the bundled conversation trace (4 workers, round robin, block 512,
# Qwen3-8B on h200_sxm, vLLM 0.24.0, TP 1) against the polynomial run of the same configuration,
# best of N runs each:
#   polynomial      whole `dynosim run` wall time with DynoSim's default timing;
#   first use       compile (Python subprocess) + load, with an empty cache folder;
#   load (cached)   load of the cached compiled engine (perf tables read from parquet);
#   AIC run         whole wall time of a cached run minus its load: what the target compares;
#   simulation      the report's wall_time_ms (the simulation loop alone), both timings.
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

# One run: prints "<wall s> <AIC load s or 0> <report wall_time_ms>".
one() {
  local s e
  s=$(date +%s.%N)
  "$bin" run "$trace" --trace-block-size 512 --num-workers 4 --router-mode round_robin \
    --extra-engine-args "$1" --report-json "$tmp/r.json" >"$tmp/out" 2>&1 || {
    cat "$tmp/out" >&2
    exit 1
  }
  e=$(date +%s.%N)
  python3 - "$s" "$e" "$tmp/out" "$tmp/r.json" <<'PY'
import json, re, sys
s, e, out, rep = sys.argv[1:]
m = re.search(r"AIC: .* in ([0-9.]+) s", open(out).read())
print(float(e) - float(s), m.group(1) if m else 0, json.load(open(rep))["wall_time_ms"])
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
    return [tuple(v[i:i + 3]) for i in range(0, len(v), 3)]
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
print(f"ratio AIC / polynomial: {run / p_wall:.1f}x (target <= 3x); "
      f"simulation alone {sim / p_sim:.1f}x")
PY
