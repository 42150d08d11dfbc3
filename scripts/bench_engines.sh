#!/usr/bin/env bash
# Wall time of `dynosim run` on the bundled conversation trace (4 workers, round robin) per
# engine type, best of N runs, and each engine's ratio to vLLM's time.
#   scripts/bench_engines.sh [--runs N] [ENGINE...]     (default engines: vllm trtllm)
# Build first: cargo build --release.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=3
if [ "${1:-}" = "--runs" ]; then runs=$2; shift 2; fi
engines=("$@")
[ ${#engines[@]} -gt 0 ] || engines=(vllm trtllm)
bin=target/release/dynosim
trace=data/mooncake_conversation_trace.jsonl.gz
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
best_of() {
  local best=""
  for _ in $(seq "$runs"); do
    local s e
    s=$(date +%s.%N)
    "$bin" run "$trace" --num-workers 4 --router-mode round_robin \
      --extra-engine-args "{\"engine_type\":\"$1\"}" --report-json "$tmp/r.json" >/dev/null
    e=$(date +%s.%N)
    best=$(python3 -c "t=$e-$s; b='$best'; print(min(t, float(b)) if b else t)")
  done
  echo "$best"
}
base=""
printf '%-8s %10s %8s\n' engine "wall (s)" "x vLLM"
for eng in "${engines[@]}"; do
  t=$(best_of "$eng")
  [ -n "$base" ] || base=$t
  python3 -c "print(f'{\"$eng\":<8} {$t:10.3f} {$t/$base:8.2f}')"
done
