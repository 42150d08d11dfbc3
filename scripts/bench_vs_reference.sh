#!/usr/bin/env bash
# Runs dynosim and the reference DynoSim (NVIDIA Dynamo 1.4.2, `python -m dynamo.replay`) side by
# side on the same commands and prints the speed-ups and peak memory against the targets of
# issue 4 (the README's "Performance" section gives the latest figures):
#   - V3, V4, V5 (conversation trace; 4 workers round robin / kv_router; 2 prefill + 2 decode):
#     dynosim's whole-process wall time (best of --runs) against the reference's own simulation
#     time (`wall_time_ms` of its report); dynosim's peak RSS on V3.
#   - SG3: V3's command with the SGLang engine (page 64), dynosim only, against V3's time (<= 2x).
#   - sweeps/bench30.yaml (30 points): `dynosim sweep -j 2` and `-j 1` against the same 30
#     configurations run as reference processes two at a time; peak RSS of a 6-point sweep
#     (benches/sweep6.yaml) against the 30-point one, and of one heavy point repeated with 6 and
#     30 seeds (benches/seeds6.yaml, benches/seeds30.yaml) at -j 1 and -j 2; the memory check
#     uses the seeds at -j 1, whose peak does not depend on which points overlap.
# It also checks that both programs simulated the same thing (a few report metrics side by side).
#
# Usage: scripts/bench_vs_reference.sh [--no-reference] [--no-sweep] [--runs N] [--no-build] [--keep]
#   --no-reference  do not run the reference; use the timings cached by the last run that did
#                   ($REF_CACHE), if they were taken with the same commands
#   --no-sweep      only V3, V4, V5
#   --runs N        dynosim runs per case, best wall time kept (default 3)
#   --no-build      use the existing target/release/dynosim instead of `cargo build --release`
#   --keep          keep the temporary folder with every report and log
# Environment:
#   DYNAMO_REPLAY   the reference program (default: <repo>/../shared/reference/dynamo-replay, or
#                   beside the main checkout when <repo> is a git worktree)
#   REF_CACHE       reference timings cache (default: <repo>/target/bench/reference-timings.json)
#   REF_RUNS        reference runs per V case, best kept (default 1)
#   SWEEP_RUNS      dynosim runs per sweep measurement, best kept (default 1)
# Needs: bash, python3, GNU time (/usr/bin/time), xargs, gzip, cargo (unless --no-build).
# Takes about 5 minutes with the reference on a 2-core machine, and should run alone: other
# processes on the machine distort every figure (the load average is printed at the start).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -z "${DYNAMO_REPLAY:-}" ]; then
  DYNAMO_REPLAY=$repo/../shared/reference/dynamo-replay
  # In a git worktree, shared/ sits beside the main checkout instead.
  if [ ! -x "$DYNAMO_REPLAY" ] && common=$(git -C "$repo" rev-parse --path-format=absolute --git-common-dir 2>/dev/null) &&
     [ -x "$common/../../shared/reference/dynamo-replay" ]; then
    DYNAMO_REPLAY=$(cd "$common/../../shared/reference" && pwd)/dynamo-replay
  fi
fi
REF_CACHE=${REF_CACHE:-$repo/target/bench/reference-timings.json}
REF_RUNS=${REF_RUNS:-1}
SWEEP_RUNS=${SWEEP_RUNS:-1}
runs=3
with_reference=1
with_sweep=1
build=1
keep=0

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --no-reference) with_reference=0 ;;
    --no-sweep) with_sweep=0 ;;
    --runs) runs=${2:?--runs needs a number}; shift ;;
    --runs=*) runs=${1#--runs=} ;;
    --no-build) build=0 ;;
    --keep) keep=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench_vs_reference.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for n in "$runs" "$REF_RUNS" "$SWEEP_RUNS"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "bench_vs_reference.sh: run counts must be integers >= 1, got '$n'" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "bench_vs_reference.sh: GNU time (/usr/bin/time) is required (apt-get install time)" >&2; exit 2; }

cd "$repo"
if [ "$build" = 1 ]; then
  cargo build --release --quiet
fi
dynosim=${CARGO_TARGET_DIR:-$repo/target}/release/dynosim
[ -x "$dynosim" ] || { echo "bench_vs_reference.sh: $dynosim not found (build it or drop --no-build)" >&2; exit 2; }
if [ "$with_reference" = 1 ] && [ ! -x "$DYNAMO_REPLAY" ]; then
  echo "bench_vs_reference.sh: reference $DYNAMO_REPLAY not found; set DYNAMO_REPLAY or use --no-reference" >&2
  exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dynosim-bench.XXXXXX")
if [ "$keep" = 1 ]; then
  echo "keeping $tmp"
else
  trap 'rm -rf "$tmp"' EXIT
fi
metrics=$tmp/metrics.tsv   # name<TAB>key<TAB>value, read by the final report
: > "$metrics"
put() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >> "$metrics"; }

# timed OUT ERR CMD...: runs CMD with stdout/stderr to files; sets WALL_US (wall clock, µs, from
# the shell's nanosecond clock: GNU time's %e has only 10 ms resolution) and RSS_KIB (GNU time %M,
# the peak resident set of the process).
timed() {
  local out=$1 err=$2 tf=$tmp/time.txt s e
  shift 2
  s=$(date +%s%N)
  if ! /usr/bin/time -f "%e %M" -o "$tf" "$@" >"$out" 2>"$err"; then
    echo "bench_vs_reference.sh: command failed: $*" >&2
    tail -5 "$err" >&2
    exit 1
  fi
  e=$(date +%s%N)
  WALL_US=$(( (e - s) / 1000 ))
  RSS_KIB=$(tail -1 "$tf" | awk '{print $2}')
}

# ---------------------------------------------------------------- machine
cpu=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
mem=$(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)
load=$(cut -d' ' -f1-3 /proc/loadavg)
rev=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$repo" diff --quiet HEAD 2>/dev/null || rev="$rev+uncommitted"
echo "dynosim vs reference DynoSim, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs ($cpu), $mem RAM; load average at start: $load"
echo "dynosim: $rev, $dynosim"
if [ "$with_reference" = 1 ]; then echo "reference: $DYNAMO_REPLAY (DYN_LOG=error)"; fi
if awk -v l="${load%% *}" -v n="$(nproc)" 'BEGIN { exit !(l > 0.5 * n) }'; then
  echo "WARNING: the machine is busy (load ${load%% *} on $(nproc) CPUs): timings are unreliable"
fi
put machine nproc "$(nproc)"
put machine cpu "$cpu"
put machine load "$load"
put machine rev "$rev"
put machine date "$(date -u '+%Y-%m-%d %H:%M UTC')"
put machine runs "$runs"
put machine ref_runs "$REF_RUNS"
put machine with_reference "$with_reference"
put machine with_sweep "$with_sweep"

# The reference cannot read gzip ("failed to read line 1 from ….gz"): both programs get the same
# decompressed copy of the bundled trace, so the commands are identical.
trace=$tmp/mooncake_conversation_trace.jsonl
gzip -dc "$repo/data/mooncake_conversation_trace.jsonl.gz" > "$trace"

if [ "$with_reference" = 1 ]; then
  # First use installs the reference into a virtual environment: not part of any timing.
  "$DYNAMO_REPLAY" --help > /dev/null
fi

# ---------------------------------------------------------------- V3, V4, V5
case_args() {
  case "$1" in
    V3) echo '--num-workers 4 --router-mode round_robin --trace-block-size 512 --extra-engine-args {"block_size":64}' ;;
    V4) echo '--num-workers 4 --router-mode kv_router --trace-block-size 512 --extra-engine-args {"block_size":64,"router_queue_policy":"fcfs"}' ;;
    V5) echo '--num-prefill-workers 2 --num-decode-workers 2 --router-mode kv_router --trace-block-size 512 --prefill-engine-args {"block_size":64,"worker_type":"prefill"} --decode-engine-args {"block_size":64,"worker_type":"decode"}' ;;
  esac
}
for c in V3 V4 V5; do
  read -r -a args <<< "$(case_args "$c")"   # no spaces inside the JSON values
  put "$c" args "${args[*]}"
  best=; rss=0
  for ((i = 1; i <= runs; i++)); do
    timed "$tmp/$c.out" "$tmp/$c.err" "$dynosim" run "$trace" "${args[@]}" --report-json "$tmp/$c.dynosim.json"
    if [ -z "$best" ] || [ "$WALL_US" -lt "$best" ]; then best=$WALL_US; fi
    if [ "$RSS_KIB" -gt "$rss" ]; then rss=$RSS_KIB; fi
  done
  put "$c" dyn_wall_us "$best"
  put "$c" dyn_rss_kib "$rss"
  put "$c" dyn_report "$tmp/$c.dynosim.json"
  if [ "$with_reference" = 1 ]; then
    for ((i = 1; i <= REF_RUNS; i++)); do
      DYN_LOG=error timed "$tmp/$c.ref.out" "$tmp/$c.ref.err" "$DYNAMO_REPLAY" "$trace" "${args[@]}" --report-json "$tmp/$c.ref.$i.json"
      put "$c" ref_report "$tmp/$c.ref.$i.json"
      put "$c" ref_proc_us "$WALL_US"
      put "$c" ref_rss_kib "$RSS_KIB"
    done
  fi
  echo "  measured $c" >&2
done

# ---------------------------------------------------------------- SGLang next to vLLM (dynosim only)
# The bundled trace like V3 with the SGLang engine (page 64, so the same KV per worker).
read -r -a args <<< '--num-workers 4 --router-mode round_robin --trace-block-size 512 --extra-engine-args {"engine_type":"sglang","sglang":{"page_size":64}}'
put SG3 args "${args[*]}"
best=
for ((i = 1; i <= runs; i++)); do
  timed "$tmp/SG3.out" "$tmp/SG3.err" "$dynosim" run "$trace" "${args[@]}" --report-json "$tmp/SG3.dynosim.json"
  if [ -z "$best" ] || [ "$WALL_US" -lt "$best" ]; then best=$WALL_US; fi
done
put SG3 dyn_wall_us "$best"
echo "  measured SG3" >&2

# ---------------------------------------------------------------- sweeps
if [ "$with_sweep" = 1 ]; then
  sweep_timed() {  # NAME SPEC JOBS: best of SWEEP_RUNS, peak RSS over them
    local name=$1 spec=$2 jobs=$3 best= rss=0 i
    for ((i = 1; i <= SWEEP_RUNS; i++)); do
      rm -rf "$tmp/$name"
      timed "$tmp/$name.out" "$tmp/$name.err" "$dynosim" sweep "$spec" -j "$jobs" -o "$tmp/$name" --quiet
      if [ -z "$best" ] || [ "$WALL_US" -lt "$best" ]; then best=$WALL_US; fi
      if [ "$RSS_KIB" -gt "$rss" ]; then rss=$RSS_KIB; fi
    done
    put "$name" wall_us "$best"
    put "$name" rss_kib "$rss"
    put "$name" dir "$tmp/$name"
    echo "  measured $name" >&2
  }
  sweep_timed s30_j2 sweeps/bench30.yaml 2
  sweep_timed s30_j1 sweeps/bench30.yaml 1
  sweep_timed s6_j2 benches/sweep6.yaml 2
  sweep_timed s6_j1 benches/sweep6.yaml 1
  sweep_timed seeds6_j1 benches/seeds6.yaml 1
  sweep_timed seeds30_j1 benches/seeds30.yaml 1
  sweep_timed seeds6_j2 benches/seeds6.yaml 2
  sweep_timed seeds30_j2 benches/seeds30.yaml 2

  # The same 30 configurations as reference processes, two at a time. The command of each point
  # is built from its grid parameters in the dynosim leaderboard, over the base settings of
  # sweeps/bench30.yaml (keep the two in step; the per-point comparison at the end would show a
  # mismatch).
  mkdir -p "$tmp/ref30"
  python3 - "$tmp/s30_j2/leaderboard.json" "$tmp/ref30" "$DYNAMO_REPLAY" "$trace" <<'PY'
import json, shlex, sys
board, out, ref, trace = sys.argv[1:]
BASE_ENGINE = {"block_size": 64}
compact = lambda d: json.dumps(d, separators=(",", ":"))
rows = json.load(open(board))["rows"]
assert len(rows) == 30, f"expected 30 points, found {len(rows)}"
for row in sorted(rows, key=lambda r: r["point"]):
    p, n = row["parameters"], row["point"]
    engine = dict(BASE_ENGINE, max_num_batched_tokens=p["engine.max_num_batched_tokens"])
    args = ["--router-mode", p["router_mode"], "--trace-block-size", "512"]
    if p["mode"] == "aggregated":
        args += ["--num-workers", str(p["num_workers"]), "--extra-engine-args", compact(engine)]
    else:
        args += ["--num-prefill-workers", str(p["num_prefill_workers"]),
                 "--num-decode-workers", str(p["num_decode_workers"]),
                 "--prefill-engine-args", compact(dict(engine, worker_type="prefill")),
                 "--decode-engine-args", compact(dict(engine, worker_type="decode"))]
    base = f"{out}/p{n:02d}"
    with open(f"{base}.sh", "w") as f:
        f.write(f"DYN_LOG=error /usr/bin/time -f '%e %M' -o {base}.time {shlex.quote(ref)} "
                + " ".join(shlex.quote(a) for a in [trace] + args)
                + f" --report-json {base}.json > {base}.out 2> {base}.err\n")
    with open(f"{out}/args.txt", "a") as f:
        f.write(f"p{n:02d}\t{' '.join(args)}\n")
PY
  put ref30 args_sha "$(cut -f2 "$tmp/ref30/args.txt" | sha256sum | cut -c1-16)"
  if [ "$with_reference" = 1 ]; then
    s=$(date +%s%N)
    if ! ls "$tmp"/ref30/p*.sh | xargs -P 2 -n 1 bash; then
      echo "bench_vs_reference.sh: a reference sweep process failed; see $tmp/ref30/*.err (use --keep)" >&2
      exit 1
    fi
    e=$(date +%s%N)
    put ref30 wall_us $(( (e - s) / 1000 ))
    put ref30 dir "$tmp/ref30"
    echo "  measured the reference on the 30 points" >&2
  fi
fi

# ---------------------------------------------------------------- report
python3 - "$metrics" "$REF_CACHE" "$with_reference" <<'PY'
import json, os, sys
from collections import defaultdict

metrics_path, cache_path, with_reference = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
m = defaultdict(lambda: defaultdict(list))
for line in open(metrics_path):
    name, key, value = line.rstrip("\n").split("\t", 2)
    m[name][key].append(value)
def one(name, key, default=None):
    v = m.get(name, {}).get(key)
    return v[-1] if v else default

MIB = 1024.0
# Metrics printed side by side to show both programs simulated the same thing.
SAME = ["mean_ttft_ms", "mean_itl_ms", "mean_e2e_latency_ms", "duration_ms", "output_throughput_tok_s"]
def summary(path):
    d = json.load(open(path))
    return {k: d.get(k) for k in ["completed_requests", "wall_time_ms"] + SAME}
def rel_gap(ours, ref):
    """Largest relative difference over SAME, and whether completed_requests match."""
    worst = max(abs(ours[k] - ref[k]) / max(abs(ref[k]), 1e-9) for k in SAME)
    return worst, ours["completed_requests"] == ref["completed_requests"]

# Reference figures: measured now (and cached), or read from the cache.
ref = {}
source = None
if with_reference:
    for c in ("V3", "V4", "V5"):
        reps = [summary(p) for p in m[c]["ref_report"]]
        best = min(range(len(reps)), key=lambda i: reps[i]["wall_time_ms"])
        ref[c] = {"args": one(c, "args"), "wall_time_ms": reps[best]["wall_time_ms"],
                  "proc_s": int(m[c]["ref_proc_us"][best]) / 1e6,
                  "rss_kib": max(int(x) for x in m[c]["ref_rss_kib"]), "summary": reps[best],
                  "runs": len(reps)}
    if "ref30" in m:
        d = one("ref30", "dir")
        points, rss = {}, 0
        for f in sorted(os.listdir(d)):
            if f.endswith(".json"):
                points[int(f[1:3])] = summary(os.path.join(d, f))
            if f.endswith(".time"):
                rss = max(rss, int(open(os.path.join(d, f)).read().split()[-1]))
        ref["sweep30"] = {"batch_s": int(one("ref30", "wall_us")) / 1e6, "max_rss_kib": rss,
                          "args_sha": one("ref30", "args_sha"),
                          "sum_wall_time_ms": sum(p["wall_time_ms"] for p in points.values()),
                          "points": points}
    cached = {}
    if os.path.exists(cache_path):
        try:
            cached = json.load(open(cache_path))
        except ValueError:
            cached = {}
    cached.update({k: v for k, v in ref.items()})
    cached["machine"] = {k: one("machine", k) for k in ("nproc", "cpu", "date", "load")}
    os.makedirs(os.path.dirname(cache_path) or ".", exist_ok=True)
    json.dump(cached, open(cache_path, "w"), indent=1, sort_keys=True)
    source = "measured now"
elif os.path.exists(cache_path):
    cached = json.load(open(cache_path))
    for c in ("V3", "V4", "V5"):
        if c in cached and cached[c].get("args") == one(c, "args"):
            ref[c] = cached[c]
    if "sweep30" in cached and cached["sweep30"].get("args_sha") == one("ref30", "args_sha"):
        ref["sweep30"] = cached["sweep30"]
    mc = cached.get("machine", {})
    source = (f"cached in {cache_path}, measured {mc.get('date')} on {mc.get('nproc')} CPUs "
              f"({mc.get('cpu')}), load {mc.get('load')}")

print()
print(f"dynosim: best of {one('machine', 'runs')} runs per case; reference: "
      + (source or "not run (--no-reference, no cache)"))
print("ratio = reference simulation time (its wall_time_ms) / dynosim whole-process wall time")
print()
hdr = ("case", "ref sim", "ref process", "ref RSS", "dynosim wall", "dynosim RSS", "ratio",
       "target", "result", "same run?")
rows = []
checks = []
for c, target in (("V3", 20.0), ("V4", 10.0), ("V5", 10.0)):
    wall = int(one(c, "dyn_wall_us")) / 1e6
    rss = int(one(c, "dyn_rss_kib")) / MIB
    mine = summary(one(c, "dyn_report"))
    r = ref.get(c)
    if r:
        ratio = r["wall_time_ms"] / 1000.0 / wall
        ok = ratio >= target
        gap, same_n = rel_gap(mine, r["summary"])
        same = f"{'n ok' if same_n else 'n DIFFERS'}, max gap {gap * 100:.2f}%"
        rows.append((c, f"{r['wall_time_ms'] / 1000:.2f} s", f"{r['proc_s']:.2f} s",
                     f"{r['rss_kib'] / MIB:.0f} MiB", f"{wall:.3f} s", f"{rss:.1f} MiB",
                     f"{ratio:.1f}x", f">= {target:.0f}x", "PASS" if ok else "FAIL", same))
        checks.append((f"{c} speed-up >= {target:.0f}x", f"{ratio:.2f}x", ok))
    else:
        rows.append((c, "-", "-", "-", f"{wall:.3f} s", f"{rss:.1f} MiB", "-", f">= {target:.0f}x",
                     "n/a", "-"))
    if c == "V3":
        checks.append(("V3 dynosim peak RSS <= 64 MiB", f"{rss:.1f} MiB", rss <= 64.0))

sg, v3 = int(one("SG3", "dyn_wall_us")) / 1e6, int(one("V3", "dyn_wall_us")) / 1e6
checks.append(("SGLang run of the trace (V3 with engine_type sglang, page 64) <= 2x the vLLM run",
               f"{sg:.3f} s vs {v3:.3f} s = {sg / v3:.2f}x", sg <= 2 * v3))

def table(hdr, rows):
    w = [max(len(str(x[i])) for x in [hdr] + rows) for i in range(len(hdr))]
    line = lambda x: "  ".join(str(v).ljust(w[i]) if i == 0 else str(v).rjust(w[i])
                               for i, v in enumerate(x)).rstrip()
    print(line(hdr))
    print("  ".join("-" * n for n in w))
    for x in rows:
        print(line(x))
table(hdr, rows)

if one("machine", "with_sweep") == "1":
    j2 = int(one("s30_j2", "wall_us")) / 1e6
    j1 = int(one("s30_j1", "wall_us")) / 1e6
    rss30 = int(one("s30_j2", "rss_kib")) / MIB
    rss30_j1 = int(one("s30_j1", "rss_kib")) / MIB
    rss6 = int(one("s6_j2", "rss_kib")) / MIB
    def reports_size(d):
        return sum(os.path.getsize(os.path.join(d, f)) for f in ("leaderboard.json", "points.jsonl"))
    rep30, rep6 = reports_size(one("s30_j2", "dir")), reports_size(one("s6_j2", "dir"))
    csv_same = (open(os.path.join(one("s30_j2", "dir"), "leaderboard.csv"), "rb").read()
                == open(os.path.join(one("s30_j1", "dir"), "leaderboard.csv"), "rb").read())
    print()
    print("sweeps/bench30.yaml: 30 points (aggregated 4/6/8 workers, disaggregated 2 or 3 prefill + 4"
          " decode; kv_router and round_robin; max_num_batched_tokens 4096/8192/16384)")
    srows = [("dynosim sweep -j 2", f"{j2:.2f} s", f"{rss30:.1f} MiB"),
             ("dynosim sweep -j 1", f"{j1:.2f} s", f"{rss30_j1:.1f} MiB")]
    r = ref.get("sweep30")
    if r:
        srows.append(("reference, 30 processes 2 at a time", f"{r['batch_s']:.2f} s",
                      f"{r['max_rss_kib'] / MIB:.0f} MiB per process (max)"))
    table(("run", "wall", "peak RSS"), srows)
    speedup = j1 / j2
    checks.append(("sweep -j 2 vs -j 1 >= 1.7x", f"{speedup:.2f}x", speedup >= 1.7))
    if r:
        ratio = r["batch_s"] / j2
        checks.append(("sweep -j 2 vs reference batch >= 25x", f"{ratio:.1f}x", ratio >= 25.0))
        if r.get("points"):
            board = json.load(open(os.path.join(one("s30_j2", "dir"), "leaderboard.json")))
            gaps, diff_n = [], []
            for row in board["rows"]:
                p = r["points"].get(row["point"]) or r["points"].get(str(row["point"]))
                if p is None:
                    continue
                ours = {k: row["report"].get(k) for k in ["completed_requests"] + SAME}
                g, same_n = rel_gap(ours, p)
                gaps.append((g, row["point"]))
                if not same_n:
                    diff_n.append(row["point"])
            if gaps:
                g, worst = max(gaps)
                print(f"same runs? {len(gaps)} points compared: completed requests "
                      + (f"differ at points {diff_n}" if diff_n else "equal everywhere")
                      + f"; largest metric gap {g * 100:.2f}% (point {worst}), median "
                      f"{sorted(x for x, _ in gaps)[len(gaps) // 2] * 100:.2f}%")
        print(f"reference: sum of its own wall_time_ms over the 30 points {r['sum_wall_time_ms'] / 1000:.1f} s")
    print(f"leaderboard.csv identical for -j 2 and -j 1: {'yes' if csv_same else 'NO'}")
    # Memory against the number of points: the points' reports are kept until the leaderboards
    # are written; anything beyond them (plus 4 MiB of allocator noise) is growth. The check uses
    # one heavy point repeated with 6 and 30 seeds (benches/seeds*.yaml) at -j 1, where the peak
    # is that of one point at a time plus what the sweep keeps; at -j 2 the peak is the largest
    # of many overlaps of two points (it can only rise with more points, and varies by a few MiB
    # from run to run), so -j 2 and bench30 are shown for information.
    print(f"memory: reports on disk (leaderboard.json + points.jsonl) {rep6 / 1024:.0f} KiB for 6 points,"
          f" {rep30 / 1024:.0f} KiB for 30")
    for jobs, r6, r30 in (("2", rss6, rss30), ("1", int(one("s6_j1", "rss_kib")) / MIB, rss30_j1)):
        print(f"  bench30 -j {jobs}: peak RSS 6 points (benches/sweep6.yaml) {r6:.1f} MiB, 30 points"
              f" {r30:.1f} MiB ({r30 - r6:+.1f} MiB)")
    srep6, srep30 = reports_size(one("seeds6_j1", "dir")), reports_size(one("seeds30_j1", "dir"))
    allowed = 4.0 + (srep30 - srep6) / (1024 * 1024)
    for jobs in ("1", "2"):
        sd6 = int(one(f"seeds6_j{jobs}", "rss_kib")) / MIB
        sd30 = int(one(f"seeds30_j{jobs}", "rss_kib")) / MIB
        growth = sd30 - sd6
        print(f"  one heavy point x 6 seeds {sd6:.1f} MiB, x 30 seeds {sd30:.1f} MiB at -j {jobs}"
              f" ({growth:+.1f} MiB; reports {srep6 / 1024:.0f} -> {srep30 / 1024:.0f} KiB)")
        if jobs == "1":
            checks.append(("memory growth 6 -> 30 points (-j 1) <= reports + 4 MiB",
                           f"{growth:+.1f} MiB (allowed {allowed:.1f})", growth <= allowed))

print()
print("targets:")
w = max(len(c[0]) for c in checks)
for name, value, ok in checks:
    print(f"  {name.ljust(w)}  {value:>24}  {'PASS' if ok else 'FAIL'}")
missing = [] if ref else ["reference figures"]
if missing:
    print("  (speed-up targets not checked: no reference figures; run without --no-reference once)")
PY
