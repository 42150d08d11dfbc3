#!/usr/bin/env bash
# Early stop against running every point to the end, on benches/early_stop80.yaml (80 points on
# the bundled trace, most of them infeasible): wall time and CPU time (user + system) of each
# whole sweep (best of --runs N, default 1), the speed-ups, and a check that both give every
# point the same status. On a shared machine the CPU time is the steadier figure.
#
#   scripts/bench_early_stop.sh [--runs N] [-j N]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=1
jobs=()
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        -j) jobs=(-j "$2"); shift 2 ;;
        *) echo "usage: $0 [--runs N] [-j N]" >&2; exit 2 ;;
    esac
done
cargo build --release --quiet
bin=target/release/dynosim
spec=benches/early_stop80.yaml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "wall cpu" (seconds), the best wall time of $runs sweeps into $tmp/$1 with the flags after it.
best() {
    local name="$1"; shift
    local best_wall="" best_cpu=""
    for _ in $(seq "$runs"); do
        rm -rf "$tmp/$name"
        /usr/bin/time -f "%e %U %S" -o "$tmp/time" \
            "$bin" sweep "$spec" -o "$tmp/$name" --quiet "${jobs[@]}" "$@" >/dev/null 2>&1
        read -r wall user sys < "$tmp/time"
        if [ -z "$best_wall" ] || awk "BEGIN{exit !($wall < $best_wall)}"; then
            best_wall=$wall
            best_cpu=$(awk "BEGIN{print $user + $sys}")
        fi
    done
    echo "$best_wall $best_cpu"
}

read -r early_wall early_cpu < <(best early)
read -r full_wall full_cpu < <(best full --no-early-stop)
statuses() { cut -d, -f2,3 "$tmp/$1/leaderboard.csv" | sort -n; }
if ! diff <(statuses early) <(statuses full) >/dev/null; then
    echo "statuses differ between early stop and --no-early-stop" >&2
    exit 1
fi
n_inf=$(statuses full | grep -c ',infeasible$' || true)
n_stop=$(grep -c 'stopped early' "$tmp/early/leaderboard.csv" || true)
printf 'points: 80 (%s infeasible, %s stopped early), same status for every point\n' "$n_inf" "$n_stop"
printf '%-16s %8s %8s\n' '' 'wall s' 'CPU s'
printf '%-16s %8.2f %8.2f\n' 'early stop' "$early_wall" "$early_cpu"
printf '%-16s %8.2f %8.2f\n' '--no-early-stop' "$full_wall" "$full_cpu"
printf '%-16s %7.1fx %7.1fx  (target 5x)\n' 'speed-up' \
    "$(awk "BEGIN{print $full_wall / $early_wall}")" "$(awk "BEGIN{print $full_cpu / $early_cpu}")"
