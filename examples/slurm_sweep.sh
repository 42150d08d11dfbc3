#!/usr/bin/env bash
# Runs a dynosim sweep on a Slurm cluster: a job array with one shard of the grid per task, then
# a dependent job that merges the shards into one folder with the leaderboards of every point.
#
#   examples/slurm_sweep.sh sweeps/routing.yaml 8     # 8 shards; results in results/routing
#
# Environment:
#   CPUS         cores per task (default 8); each task simulates that many points at a time
#   OUT          merged output folder (default results/<spec file stem>); shards go to $OUT-shards/K
#   SBATCH_ARGS  extra sbatch options, e.g. "--partition=cpu --time=02:00:00"
#
# dynosim must be on the PATH of the compute nodes, and the spec, its trace and the output folder
# on a filesystem they share. A requeued or resubmitted task continues its shard (--resume).
set -euo pipefail

spec=${1:?usage: $0 SPEC.yaml [SHARDS]}
shards=${2:-8}
name=$(basename "$spec" .yaml)
out=${OUT:-results/$name}
cpus=${CPUS:-8}

# Catch a bad spec now rather than in every task.
dynosim sweep "$spec" --dry-run --quiet > /dev/null

mkdir -p "$out-shards" "$out-logs"

# shellcheck disable=SC2086  # SBATCH_ARGS is a list of options
array_job=$(sbatch --parsable ${SBATCH_ARGS:-} \
    --job-name="dynosim-$name" \
    --array="0-$((shards - 1))" \
    --cpus-per-task="$cpus" \
    --output="$out-logs/shard-%a.log" \
    --wrap="dynosim sweep '$spec' --shard \$SLURM_ARRAY_TASK_ID/$shards -j $cpus --resume --quiet -o '$out-shards/'\$SLURM_ARRAY_TASK_ID")

# afterany: a shard in which some point failed exits 1 but its results are complete.
shard_dirs=()
for ((k = 0; k < shards; k++)); do
    shard_dirs+=("'$out-shards/$k'")
done
# shellcheck disable=SC2086
merge_job=$(sbatch --parsable ${SBATCH_ARGS:-} \
    --job-name="dynosim-$name-merge" \
    --dependency="afterany:$array_job" \
    --output="$out-logs/merge.log" \
    --wrap="dynosim merge ${shard_dirs[*]} -o '$out'")

echo "submitted shards as job array $array_job and the merge as job $merge_job"
echo "leaderboard when done: $out/leaderboard.csv"
