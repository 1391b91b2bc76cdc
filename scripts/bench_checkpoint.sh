#!/usr/bin/env bash
# What a checkpoint costs, and what resuming it at another world size costs, per strategy: a job at FROM
# ranks writes checkpoints (every step), then copies of its directory are resumed at FROM ranks (the same
# size: each rank reads its own files) and at TO ranks (resharded: every rank reads the old ranks' files
# and its strategy puts them together). Times are what rank 0 logs ("written in", "read in"); sizes are
# the checkpoint's bytes on disk. R rounds, the strategies' order alternating. A benchmark, never a test.
# See docs/measurements/checkpoints.md.
#
# Usage: scripts/bench_checkpoint.sh [--rounds R] [--strategies "ring zero2"] [--from N] [--to M]
#                                    [--preset P] [--out DIR]
# Environment (flags win): BENCH_ROUNDS (3), BENCH_STRATEGIES ("ring zero2 fsdp"), BENCH_FROM (4),
#   BENCH_TO (2), BENCH_PRESET (gpt2-big-cpu: ~32M parameters over bytes), BENCH_OUT (runs/bench-checkpoint),
#   BENCH_DATA (data/fortunes-byte), GRADSWEEP (build/gradsweep).
set -euo pipefail
cd "$(dirname "$0")/.."
command_line="scripts/bench_checkpoint.sh $*"

rounds=${BENCH_ROUNDS:-3}
strategies=${BENCH_STRATEGIES:-"ring zero2 fsdp"}
from=${BENCH_FROM:-4}
to=${BENCH_TO:-2}
preset=${BENCH_PRESET:-gpt2-big-cpu}
out=${BENCH_OUT:-runs/bench-checkpoint}
data=${BENCH_DATA:-data/fortunes-byte}
gradsweep=${GRADSWEEP:-build/gradsweep}

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --strategies) strategies=$2; shift 2 ;;
    --from) from=$2; shift 2 ;;
    --to) to=$2; shift 2 ;;
    --preset) preset=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage 2 ;;
  esac
done

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ -f "$data/train.bin" ] || "$gradsweep" prepare --tokenizer byte --input /usr/share/games/fortunes --out "$data"
mkdir -p "$out"
cell="$out/cell.yaml"
# Two steps, a checkpoint after each: the second save is the one timed (the first pays for first touches).
cat > "$cell" <<EOF
model: {name: gpt2, preset: $preset, vocab_size: 257, block_size: 32}
data: {train: $PWD/$data/train.bin, val: $PWD/$data/val.bin}
train: {steps: 2, batch_size: 4, seq_len: 32, lr: 1e-3, seed: 1}
eval: {every: 0, batches: 1}
checkpoint: {every: 1}
metrics: {peak_flops: 1e10, log_every: 1000}
runtime: {threads: 1}
EOF

train() {  # RANKS STRATEGY DIR STEPS
  mpirun -n "$1" --oversubscribe --bind-to none "$gradsweep" train "$cell" --out "$3" \
    --set "strategy.name=$2" --set "train.steps=$4" > "$3.out" 2>&1
}
seconds() { grep -o "$1 [0-9.]* s" "$2/rank-0.log" | tail -1 | awk '{print $(NF-1)}'; }
megabytes() { du -scm --apparent-size "$@" | tail -1 | cut -f1; }

results="$out/results.tsv"
: > "$results"
list=($strategies)
for ((round = 1; round <= rounds; round++)); do
  # Alternate the order: the machine's load drifts, and no strategy should always go first.
  order=("${list[@]}")
  if ((round % 2 == 0)); then order=($(printf '%s\n' "${list[@]}" | tac)); fi
  for s in "${order[@]}"; do
    base="$out/r$round-$s"
    rm -rf "$base" "$base-same" "$base-resharded"
    train "$from" "$s" "$base" 2
    step="$base/checkpoint/rank-0/step-2"
    cp -r "$base" "$base-same"
    cp -r "$base" "$base-resharded"
    train "$from" "$s" "$base-same" 3
    train "$to" "$s" "$base-resharded" 3
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$s" "$(seconds 'written in' "$base")" \
      "$(megabytes "$step")" "$(megabytes "$base"/checkpoint/rank-*/step-2)" "$(seconds 'read in' "$base-same")" \
      "$(seconds 'read in' "$base-resharded")" >> "$results"
    # Gigabytes per strategy at 32M parameters: keep only the logs.
    for d in "$base" "$base-same" "$base-resharded"; do rm -rf "$d/checkpoint"; done
  done
done

params=$(grep -o '[0-9]* parameters' "$out/r1-${list[0]}/rank-0.log" | head -1)
echo "Command: $command_line ($preset, $params; $from ranks, resharded to $to; $rounds rounds)"
echo
echo "| strategy | save, rank 0 (s) | rank 0's files (MB) | all ranks' files (MB) | read at $from ranks (s) | read at $to ranks, resharded (s) |"
echo "|---|---|---|---|---|---|"
for s in "${list[@]}"; do
  awk -F'\t' -v s="$s" '$2 == s { n++; for (i = 3; i <= 7; i++) v[i, n] = $i }
    END {
      line = "| " s
      for (i = 3; i <= 7; i++) {
        # median (min-max) over the rounds
        m = 0; for (k = 1; k <= n; k++) a[k] = v[i, k] + 0
        for (x = 1; x <= n; x++) for (y = x + 1; y <= n; y++) if (a[y] < a[x]) { t = a[x]; a[x] = a[y]; a[y] = t }
        med = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        line = line sprintf(" | %.3g (%.3g-%.3g)", med, a[1], a[n])
      }
      print line " |"
    }' "$results"
done
