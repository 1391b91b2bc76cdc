#!/usr/bin/env bash
# Single-rank training throughput: gradsweep (build/gradsweep, `gpt2` + `single`) vs the same GPT-2 in
# PyTorch eager (bench/gpt2_eager.py), side by side: same shapes, batch, data, hyperparameters, threads.
# R rounds per preset; each round runs both, alternating which goes first. Prints a markdown table
# (per round and medians), the ratio median(gradsweep tok/s) / median(PyTorch tok/s) and the losses after
# the same steps. A benchmark, not a test: it never fails on the ratio. See docs/measurements/single-rank.md.
#
# Usage: scripts/bench_single.sh [--rounds R] [--steps S] [--threads N] [--presets "P1 P2"]
#                                [--batch-size B] [--seq-len T] [--out DIR]
# Environment (flags win): BENCH_ROUNDS (3), BENCH_STEPS (20), BENCH_THREADS (1),
#   BENCH_PRESETS ("gpt2-small-cpu gpt2-tiny"), BENCH_BATCH (16), BENCH_SEQ_LEN (128, capped at the
#   preset's block_size), BENCH_VOCAB (257: the byte corpus), BENCH_OUT (runs/bench-single),
#   BENCH_DATA (data/fortunes-byte), BENCH_OPENBLAS_THREADS (default: = threads; "unset" leaves
#   OpenBLAS's own default, which is one thread per core), GRADSWEEP (build/gradsweep), PYTHON (.venv/bin/python).
set -euo pipefail
cd "$(dirname "$0")/.."
command_line="scripts/bench_single.sh $*"

rounds=${BENCH_ROUNDS:-3}
steps=${BENCH_STEPS:-20}
threads=${BENCH_THREADS:-1}
presets=${BENCH_PRESETS:-"gpt2-small-cpu gpt2-tiny"}
batch=${BENCH_BATCH:-16}
seq_len=${BENCH_SEQ_LEN:-128}
vocab=${BENCH_VOCAB:-257}
out=${BENCH_OUT:-runs/bench-single}
data=${BENCH_DATA:-data/fortunes-byte}
gradsweep=${GRADSWEEP:-build/gradsweep}
python=${PYTHON:-.venv/bin/python}
# Hyperparameters, passed explicitly to both sides (bench/gpt2_single.yaml holds the same values).
lr=2e-3 min_lr=2e-4 warmup=5 weight_decay=0.1 grad_clip=1.0 seed=1234

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --presets) presets=$2; shift 2 ;;
    --batch-size) batch=$2; shift 2 ;;
    --seq-len) seq_len=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "bench_single: unknown argument '$1'" >&2; usage 2 ;;
  esac
done
[ "$steps" -ge 2 ] || { echo "bench_single: --steps must be >= 2 (step 0 is a warm-up)" >&2; exit 2; }

openblas_threads=${BENCH_OPENBLAS_THREADS:-$threads}
if [ "$openblas_threads" = unset ]; then
  openblas_threads=""
  unset OPENBLAS_NUM_THREADS
else
  # LibTorch's set_num_threads does not reach OpenBLAS's own thread pool (Debian's openblas-pthread):
  # without this a "1-thread" run still multiplies large matrices on every core. Same for both sides.
  export OPENBLAS_NUM_THREADS=$openblas_threads
fi

log() { echo "[bench_single] $*" >&2; }

# The binary is shared with other engineers and may be missing while it is being rebuilt: wait for it.
wait_for_binary() {
  local waited=0
  until [ -x "$gradsweep" ] && [ -f "$(dirname "$gradsweep")/plugins/gradsweep_model_gpt2.so" ]; do
    [ "$waited" -ge 600 ] && { log "$gradsweep (or its gpt2 plugin) still missing after ${waited}s"; exit 1; }
    log "waiting for $gradsweep to be (re)built..."
    sleep 15
    waited=$((waited + 15))
  done
}
data_hash() { sha256sum "$data/train.bin" | cut -c1-64; }
binary_hash() { sha256sum "$gradsweep" "$(dirname "$gradsweep")/plugins/gradsweep_model_gpt2.so" | sha256sum | cut -c1-64; }

wait_for_binary
if [ ! -f "$data/train.bin" ]; then
  log "preparing $data from /usr/share/games/fortunes"
  "$gradsweep" prepare --tokenizer byte --input /usr/share/games/fortunes --out "$data"
fi
data_abs=$(cd "$data" && pwd)

preset_sizes() {  # n_layer n_head n_embd block_size, as plugins/models/gpt2/gpt2_config.cpp
  case "$1" in
    gpt2-124m) echo "12 12 768 1024" ;;
    gpt2-bai-100m) echo "12 12 768 512" ;;
    gpt2-small-cpu) echo "4 4 128 128" ;;
    gpt2-mid-cpu) echo "6 8 256 128" ;;
    gpt2-big-cpu) echo "10 8 512 128" ;;
    gpt2-tiny) echo "2 2 64 64" ;;
    *) echo "bench_single: unknown preset '$1'" >&2; exit 2 ;;
  esac
}

mkdir -p "$out"
hash0=$(binary_hash)
data0=$(data_hash)
presets_json=""
for p in $presets; do
  read -r n_layer n_head n_embd block_size <<<"$(preset_sizes "$p")"
  t=$((seq_len < block_size ? seq_len : block_size))
  presets_json+="${presets_json:+,}{\"name\":\"$p\",\"n_layer\":$n_layer,\"n_head\":$n_head,\"n_embd\":$n_embd,\"block_size\":$block_size,\"vocab\":$vocab,\"seq_len\":$t}"
done
cat >"$out/run.json" <<EOF
{"gradsweep": "$gradsweep", "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)", "command": "$command_line", "host": "$(hostname)", "cores": $(nproc),
 "rounds": $rounds, "steps": $steps, "threads": $threads, "openblas_threads": "$openblas_threads",
 "batch_size": $batch, "torch_version": "$("$python" -c 'import torch; print(torch.__version__)')",
 "gradsweep_sha256": "$hash0", "train_bin_sha256": "$data0", "presets": [$presets_json]}
EOF

run_gradsweep() {  # dir preset block_size seq_len
  local dir=$1 attempt
  for attempt in 1 2 3; do
    wait_for_binary
    if "$gradsweep" train bench/gpt2_single.yaml --out "$dir/gradsweep" --fresh \
        --set model.preset="$2" --set model.vocab_size="$vocab" --set model.block_size="$3" \
        --set data.train="$data_abs/train.bin" --set data.val="$data_abs/val.bin" \
        --set train.steps="$steps" --set train.batch_size="$batch" --set train.seq_len="$4" \
        --set train.lr="$lr" --set train.min_lr="$min_lr" --set train.warmup_steps="$warmup" \
        --set train.weight_decay="$weight_decay" --set train.grad_clip="$grad_clip" --set train.seed="$seed" \
        --set runtime.threads="$threads" >"$dir/gradsweep.log" 2>&1; then
      rm -rf "$dir/gradsweep/checkpoint"  # written at the end of every cell; not needed here
      return 0
    fi
    log "gradsweep failed (attempt $attempt, see $dir/gradsweep.log); retrying in 20s in case it was being rebuilt"
    sleep 20
  done
  log "gradsweep failed 3 times:"; tail -5 "$dir/gradsweep.log" >&2; exit 1
}

# The parameter check compares with round 1's gradsweep summary (round 1 always runs gradsweep first;
# the config is the same in every round); bench_report.py checks every round's pair again.
run_pytorch() {  # dir preset block_size seq_len
  local dir=$1 rc=0
  "$python" bench/gpt2_eager.py --preset "$2" --vocab "$vocab" --block-size "$3" \
    --batch-size "$batch" --seq-len "$4" --steps "$steps" --threads "$threads" --data "$data_abs/train.bin" \
    --lr "$lr" --min-lr "$min_lr" --warmup-steps "$warmup" --weight-decay "$weight_decay" \
    --grad-clip "$grad_clip" --seed "$seed" --gradsweep-summary "$out/$2/round1/gradsweep/summary.json" \
    --out "$dir/pytorch.json" >"$dir/pytorch.log" 2>&1 || rc=$?
  grep '^gpt2_eager: ' "$dir/pytorch.log" >&2 || true
  if [ "$rc" -ne 0 ]; then log "PyTorch side failed (rc $rc), see $dir/pytorch.log"; tail -5 "$dir/pytorch.log" >&2; exit 1; fi
}

for p in $presets; do
  read -r n_layer n_head n_embd block_size <<<"$(preset_sizes "$p")"
  t=$((seq_len < block_size ? seq_len : block_size))
  for r in $(seq 1 "$rounds"); do
    dir="$out/$p/round$r"
    rm -rf "$dir"
    mkdir -p "$dir"
    load=$(cut -d' ' -f1 /proc/loadavg)
    if [ $((r % 2)) -eq 1 ]; then
      order="gradsweep,pytorch"
      log "$p round $r/$rounds: gradsweep then PyTorch (load $load)"
      run_gradsweep "$dir" "$p" "$block_size" "$t"
      run_pytorch "$dir" "$p" "$block_size" "$t"
    else
      order="pytorch,gradsweep"
      log "$p round $r/$rounds: PyTorch then gradsweep (load $load)"
      run_pytorch "$dir" "$p" "$block_size" "$t"
      run_gradsweep "$dir" "$p" "$block_size" "$t"
    fi
    printf '{"round": %d, "order": "%s", "load_avg_1m": "%s"}\n' "$r" "$order" "$load" >"$dir/round.json"
    if [ "$(binary_hash)" != "$hash0" ]; then
      log "WARNING: $gradsweep or its gpt2 plugin changed during the benchmark (rebuilt by someone?); rounds may mix builds"
    fi
    if [ "$(data_hash)" != "$data0" ]; then
      log "WARNING: $data/train.bin changed during the benchmark (re-prepared by someone?); rounds may mix data sets"
    fi
  done
done

echo
"$python" bench/bench_report.py "$out"
echo
echo "results: $out/report.md, $out/results.json; per-run files under $out/<preset>/round<r>/"
