#!/usr/bin/env bash
# What the timeline costs (docs/results.md, "Trace"; figures in docs/measurements/tracing.md): the same 2-rank cell with metrics.trace off, sampled
# and all, interleaved over R rounds (the order rotates each round), so that machine load drifts hit every
# variant alike. Prints each run's tokens/s (summary.json: mean step time, warm-up excluded) and wall
# seconds, then per variant the median ratio to `off` with its range over the rounds. A benchmark, not a test.
#
# Usage: scripts/bench_trace.sh [--rounds R] [--ranks N] [--steps S] [--preset P] [--seq-len T (64)] [--strategy NAME] [--out DIR]
# Environment: GRADSWEEP (build/gradsweep), BENCH_DATA (a directory with train.bin and val.bin, byte level),
#   MPIRUN (mpirun).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3 ranks=2 steps=20 preset=gpt2-tiny seq_len=64 strategy=ring out=runs/bench-trace
gradsweep=${GRADSWEEP:-build/gradsweep}
data=${BENCH_DATA:-data/fortunes-byte}
mpirun=${MPIRUN:-mpirun}
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --preset) preset=$2; shift 2 ;;
    --seq-len) seq_len=$2; shift 2 ;;
    --strategy) strategy=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "bench_trace: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -f "$data/train.bin" ] || { echo "bench_trace: no $data/train.bin (set BENCH_DATA)" >&2; exit 2; }
mkdir -p "$out"
data=$(cd "$data" && pwd)
cat > "$out/cell.yaml" <<YAML
model: {name: gpt2, preset: $preset, vocab_size: 257}
strategy: {name: $strategy}
data: {train: $data/train.bin, val: $data/val.bin}
train: {steps: $steps, batch_size: 16, seq_len: $seq_len, seed: 1}
eval: {batches: 1}
metrics: {peak_flops: 1e10, log_every: 1000}
runtime: {threads: 1}
YAML
variants=(off sampled all)
results="$out/results.txt"
: > "$results"
for ((r = 0; r < rounds; r++)); do
  for ((k = 0; k < ${#variants[@]}; k++)); do
    v=${variants[$(((k + r) % ${#variants[@]}))]}
    dir="$out/r$r-$v"
    rm -rf "$dir"
    start=$(date +%s.%N)
    $mpirun --oversubscribe --bind-to none -np "$ranks" "$gradsweep" train "$out/cell.yaml" --out "$dir" \
      --set metrics.trace="$v" > "$dir.log" 2>&1 || { echo "bench_trace: $v failed, see $dir.log" >&2; exit 1; }
    wall=$(echo "$(date +%s.%N) - $start" | bc)
    # tokens/s, and the timeline's own cost measured in the run (summary.json "trace": records' share of
    # the steps' time, merge seconds), which a drifting machine moves no more than the steps themselves.
    read -r tps share merge < <(python3 -c "import json,sys; s=json.load(open(sys.argv[1])); t=s['trace']
print(s['tokens_per_sec'], t['share_of_step_time'], t['merge_s'])" "$dir/summary.json")
    echo "$r $v $tps $wall $share $merge" | tee -a "$results"
  done
done
python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
by = {}
for r, v, tps, wall, share, merge in rows:
    by.setdefault(int(r), {})[v] = (float(tps), float(wall), float(share), float(merge))
print("| variant | median tokens/s | tokens/s vs off: median (min-max) | wall s vs off: median (min-max) "
      "| records' share of step time, in the run: median (max) | merge s: median (max) |")
print("|---|---|---|---|---|---|")
for v in ("off", "sampled", "all"):
    tps = [by[r][v][0] for r in by]
    ratio = [by[r][v][0] / by[r]["off"][0] for r in by]
    wall = [by[r][v][1] / by[r]["off"][1] for r in by]
    share = [by[r][v][2] for r in by]
    merge = [by[r][v][3] for r in by]
    print(f"| {v} | {statistics.median(tps):.0f} | {statistics.median(ratio):.3f} ({min(ratio):.3f}-{max(ratio):.3f}) "
          f"| {statistics.median(wall):.3f} ({min(wall):.3f}-{max(wall):.3f}) "
          f"| {100 * statistics.median(share):.3f}% ({100 * max(share):.3f}%) "
          f"| {statistics.median(merge):.3f} ({max(merge):.3f}) |")
PY
