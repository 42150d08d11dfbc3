#!/usr/bin/env bash
# Behaviour snapshot for refactors: every reference case (tests/data/reference/*/cases.tsv and
# the five tutorial commands) run with `dynosim run`, and every bundled sweep (sweeps/*.yaml),
# written to one folder. Run it with the binary before and after a change and diff the folders:
#
#   scripts/golden_outputs.sh target/release/dynosim /tmp/before   # on the old commit
#   scripts/golden_outputs.sh target/release/dynosim /tmp/after    # on the new one
#   diff -r /tmp/before /tmp/after
#
# Wall-clock fields (sweep.json's elapsed time and the like) are removed so that two runs of the
# same binary compare equal. Sweeps that need AIC timing run only when DYNOSIM_PYTHON (or a
# python3 with aiconfigurator-core) is there; otherwise their folder holds the error they gave.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:?usage: golden_outputs.sh DYNOSIM_BINARY OUT_DIR}")
out=${2:?usage: golden_outputs.sh DYNOSIM_BINARY OUT_DIR}
mkdir -p "$out/run" "$out/sweep"
out=$(realpath "$out")
data=$PWD/tests/data

run_case() { # name args...
  local name=$1
  shift
  (eval "\"$bin\" run $* --report-json \"$out/run/$name.json\"" \
    > "$out/run/$name.console" 2> "$out/run/$name.stderr")
  echo "exit $?" >> "$out/run/$name.console"
}

common="--replay-mode offline --extra-engine-args '{\"block_size\":64}'"
trace=$PWD/data/mooncake_conversation_trace.jsonl.gz
run_case V1 "--input-tokens 2048 --output-tokens 128 --request-count 100 --replay-concurrency 16 --num-workers 2 $common"
run_case V2 "--input-tokens 5000 --output-tokens 500 --request-count 200 --turns-per-session 3 --shared-prefix-ratio 0.5 --num-prefix-groups 8 --inter-turn-delay-ms 250 --replay-concurrency 32 --num-workers 2 $common"
run_case V3 "$trace --trace-block-size 512 --router-mode round_robin --num-workers 4 $common"
run_case V4 "$trace --trace-block-size 512 --router-mode kv_router --num-workers 4 $common --router-config '{\"router_queue_policy\":\"fcfs\"}'"
run_case V5 "$trace --trace-block-size 512 --replay-mode offline --router-mode kv_router --num-prefill-workers 2 --num-decode-workers 2 --prefill-engine-args '{\"block_size\":64,\"worker_type\":\"prefill\"}' --decode-engine-args '{\"block_size\":64,\"worker_type\":\"decode\"}'"
for table in tests/data/reference/*/cases.tsv; do
  t=$(basename "$(dirname "$table")")
  while IFS=$'\t' read -r name args; do
    [ -z "$name" ] && continue
    args=${args//FMT/$data/formats}
    args=${args//TRACES/$data/traces}
    args=${args//PROFILES/$data/profiles}
    run_case "$t.$name" "$args"
  done < "$table"
done

for spec in sweeps/*.yaml; do
  name=$(basename "$spec" .yaml)
  "$bin" sweep "$spec" -o "$out/sweep/$name" --quiet -j 2 > "$out/sweep/$name.stdout" 2> "$out/sweep/$name.stderr"
  echo "exit $?" >> "$out/sweep/$name.stdout"
done
# Wall-clock values (and the output folder's own path) are the only things that differ between
# two runs of one binary; points.jsonl lists points as they finish, so it is sorted.
find "$out" -type f | while read -r f; do
  sed -i -E -e 's/"(elapsed|wall|started|finished|created|processed_tokens_per_s|processed_output_tokens_per_s)([a-z_]*)": ?("[^"]*"|[0-9.e+-]+)/"\1\2": "-"/g' \
    -e 's/^(Wall Time \(ms\)): .*/\1: -/' -e "s|$out|OUT|g" -e "s/ in [0-9.]+ s by / in - s by /" "$f"
  case $f in *.jsonl) sort -o "$f" "$f" ;; esac
done
