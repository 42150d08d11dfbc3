#!/usr/bin/env bash
# Runs a dynosim sweep on a Slurm cluster: a job array with one shard of the grid per task, then
# a dependent job that merges the shards into one folder with the leaderboards of every point.
#
#   examples/slurm_sweep.sh sweeps/routing.yaml 8          # submit 8 shards and the merge
#   examples/slurm_sweep.sh --wait sweeps/routing.yaml 8   # ... and wait: exit code of the merge
#
# The merged folder is the spec's own (`output:`, else results/<name>, relative to the current
# folder), or $OUT; shards go to <folder>-shards/K and logs to <folder>-logs/.
#
# Environment:
#   DYNOSIM      the dynosim binary (default: `dynosim` on this shell's PATH)
#   CPUS         cores per task (default: the CPUs of the smallest node Slurm lists); each task
#                simulates that many points at a time. More than any node has fails here.
#   OUT          merged output folder (default: the spec's, see above)
#   STOP_GRACE   seconds a cancelled task gives its running points before it writes its
#                leaderboards (default 20; keep it below the cluster's KillWait, 30 by default)
#   SBATCH_ARGS  extra sbatch options for every job, e.g. "--partition=cpu --time=02:00:00"
#   WAIT_POLL    seconds between checks of the merge job with --wait (default 10)
#
# The spec, its trace, dynosim and the output folder must be on a filesystem the compute nodes
# share, at the same paths. Cancelled or failed tasks: run this script again with the same
# arguments; every shard continues where it stopped (--resume) and only missing points run.
#
# Exit codes with --wait: the merge's (0 complete, 3 points missing: see <folder>/MISSING,
# 2 bad input); without --wait, 0 once submitted.
set -euo pipefail

die() {
    echo "slurm_sweep.sh: $*" >&2
    exit 2
}

wait_for_merge=0
if [[ ${1:-} == --wait ]]; then
    wait_for_merge=1
    shift
fi
[[ $# -ge 1 && $# -le 2 ]] || die "usage: $0 [--wait] SPEC.yaml [SHARDS]"
spec=$1
shards=${2:-8}
[[ $shards =~ ^[1-9][0-9]*$ ]] || die "SHARDS must be a positive integer, got '$shards'"
[[ -f $spec ]] || die "no spec file '$spec'"
spec=$(realpath "$spec")

dynosim=${DYNOSIM:-$(command -v dynosim || true)}
[[ -n $dynosim ]] || die "dynosim is not on the PATH; set DYNOSIM=/path/to/dynosim"
[[ -x $dynosim ]] || die "DYNOSIM=$dynosim is not an executable file"
dynosim=$(realpath "$dynosim")

# Catch a bad spec now rather than in every task.
"$dynosim" sweep "$spec" --dry-run --quiet > /dev/null

out=${OUT:-$("$dynosim" sweep "$spec" --print-output-dir)}
out=$(realpath -m "$out")
name=$(basename "$out")
stop_grace=${STOP_GRACE:-20}

# The CPUs per node Slurm knows, smallest first (e.g. "2\n8\n").
node_cpus=$(sinfo --noheader --format=%c | tr -d '+' | sort -n | uniq)
[[ -n $node_cpus ]] || die "sinfo lists no nodes"
smallest=$(head -n 1 <<< "$node_cpus")
largest=$(tail -n 1 <<< "$node_cpus")
cpus=${CPUS:-$smallest}
[[ $cpus =~ ^[1-9][0-9]*$ ]] || die "CPUS must be a positive integer, got '$cpus'"
((cpus <= largest)) || die "CPUS=$cpus but the largest node has $largest CPUs; the tasks would wait for ever"

shard_root=$out-shards
logs=$out-logs
mkdir -p "$shard_root" "$logs"

# Job scripts with every path quoted by printf %q (a space or a ' in a path is fine).
q() {
    printf '%q ' "$@"
}
{
    echo '#!/usr/bin/env bash'
    echo "# dynosim shard job (written by slurm_sweep.sh)"
    echo "k=\$SLURM_ARRAY_TASK_ID"
    echo "exec $(q "$dynosim" sweep "$spec") --shard \"\$k/$shards\" $(q -j "$cpus" --resume --stop-grace "$stop_grace" -o) $(printf %q "$shard_root")/\"\$k\""
} > "$logs/shard.sh"
{
    echo '#!/usr/bin/env bash'
    echo "# dynosim merge job (written by slurm_sweep.sh): merges the shards that exist; a"
    echo "# cancelled shard's points are listed in MISSING and the merge exits 3."
    echo "dirs=()"
    echo "for ((k = 0; k < $shards; k++)); do"
    echo "    d=$(printf %q "$shard_root")/\$k"
    echo "    [[ -f \$d/sweep.json ]] && dirs+=(\"\$d\")"
    echo "done"
    echo "[[ \${#dirs[@]} -gt 0 ]] || { echo 'no shard has started: nothing to merge' >&2; exit 3; }"
    echo "exec $(q "$dynosim" merge) \"\${dirs[@]}\" -o $(printf %q "$out")"
} > "$logs/merge.sh"
chmod +x "$logs/shard.sh" "$logs/merge.sh"

# shellcheck disable=SC2086  # SBATCH_ARGS is a list of options
array_job=$(sbatch --parsable ${SBATCH_ARGS:-} \
    --job-name="dynosim-$name" \
    --array="0-$((shards - 1))" \
    --cpus-per-task="$cpus" \
    --output="$logs/shard-%a.log" \
    "$logs/shard.sh")
array_job=${array_job%%;*}
echo "submitted the shards as job array $array_job"

# afterany: a shard in which some point failed exits 1 but its results are complete, and a
# cancelled one leaves points the merge reports as missing.
merge_opts=(--parsable --job-name="dynosim-$name-merge" --dependency="afterany:$array_job"
    --output="$logs/merge.log")
# shellcheck disable=SC2086
merge_job=$(sbatch ${SBATCH_ARGS:-} "${merge_opts[@]}" "$logs/merge.sh")
merge_job=${merge_job%%;*}
echo "submitted the merge as job $merge_job"
if ((!wait_for_merge)); then
    echo "leaderboard when done: $out/leaderboard.csv (exit code 3 in $logs/merge.log: points missing)"
    exit 0
fi

# --wait: poll the merge job (sbatch --wait polls at growing intervals of up to half a minute)
# and return its exit code.
echo "waiting for the merge; leaderboard: $out/leaderboard.csv"
while :; do
    line=$(scontrol --oneliner show job "$merge_job" 2>/dev/null) ||
        die "job $merge_job is no longer known to Slurm; see $logs/merge.log"
    state=$(grep -o 'JobState=[A-Z_]*' <<< "$line" | cut -d= -f2)
    case $state in
        PENDING | CONFIGURING | RUNNING | COMPLETING | SUSPENDED | REQUEUED | RESIZING) ;;
        *) break ;;
    esac
    sleep "${WAIT_POLL:-10}"
done
exit_field=$(grep -o ' ExitCode=[0-9]*:[0-9]*' <<< "$line" | cut -d= -f2)
code=${exit_field%%:*}
signal=${exit_field##*:}
if [[ $state != COMPLETED && $state != FAILED ]]; then
    echo "the merge job ended $state; see $logs/merge.log" >&2
    exit 1
fi
((signal == 0)) || code=$((128 + signal))
((code == 0)) || echo "the merge exited $code; see $logs/merge.log" >&2
exit "$code"
