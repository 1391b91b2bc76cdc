#!/usr/bin/env bash
# Data-parallel training throughput of gradsweep's strategies at N ranks, side by side in one run, against
# (a) PyTorch DDP (bench/ddp_gpt2.py: gloo, default 25 MiB buckets) on the same GPT-2, batch, data and threads,
# and (b) the no-communication ceiling: N independent `gradsweep train` processes (`single`, each on a 1/N
# share of the global batch) started at the same time, whose tokens/s add up to what N ranks could reach if
# communication cost nothing. Per N, R rounds; each round runs every variant, alternating the order. Prints
# a markdown table of medians and the ratios (each variant / ceiling, ring / DDP). A benchmark, not a test:
# it never fails on a ratio. See docs/measurements/strategies.md, "Against PyTorch DDP and the no-communication ceiling".
#
# Usage: scripts/bench_strategies.sh [--ranks "2 4"] [--rounds R] [--steps S] [--threads N] [--preset P]
#          [--batch-size B] [--micro-batch M] [--seq-len T] [--variants "V1 V2 ..."] [--out DIR]
# Variants: ring, ring-native, dps, ps (sync), ddp, ceiling, or STRATEGY:key=value,key=value for other
#   gradsweep options (e.g. ring:bucket_mb=1 or ring:overlap=false). A gradsweep variant ending in @DIR runs
#   the gradsweep binary (and plugins) in DIR instead, to compare two builds side by side: ring@/tmp/before.
# Environment (flags win): BENCH_RANKS ("2 4"), BENCH_ROUNDS (3), BENCH_STEPS (20), BENCH_THREADS (1 per rank),
#   BENCH_PRESET (gpt2-small-cpu), BENCH_BATCH (16), BENCH_MICRO (0 = batch / ranks), BENCH_SEQ_LEN (128),
#   BENCH_VOCAB (257), BENCH_VARIANTS ("ring ring-native dps ps ddp ceiling"), BENCH_OUT (runs/bench-strategies),
#   BENCH_DATA (data/fortunes-byte), BENCH_OPENBLAS_THREADS (= threads), BENCH_TIMEOUT (600 s per run),
#   GRADSWEEP (build/gradsweep), PYTHON (.venv/bin/python), MPIRUN (mpirun).
set -euo pipefail
cd "$(dirname "$0")/.."
command_line="scripts/bench_strategies.sh $*"

ranks_list=${BENCH_RANKS:-"2 4"}
rounds=${BENCH_ROUNDS:-3}
steps=${BENCH_STEPS:-20}
threads=${BENCH_THREADS:-1}
preset=${BENCH_PRESET:-gpt2-small-cpu}
batch=${BENCH_BATCH:-16}
micro=${BENCH_MICRO:-0}
seq_len=${BENCH_SEQ_LEN:-128}
vocab=${BENCH_VOCAB:-257}
variants=${BENCH_VARIANTS:-"ring ring-native dps ps ddp ceiling"}
out=${BENCH_OUT:-runs/bench-strategies}
data=${BENCH_DATA:-data/fortunes-byte}
run_timeout=${BENCH_TIMEOUT:-600}
gradsweep=${GRADSWEEP:-build/gradsweep}
python=${PYTHON:-.venv/bin/python}
mpirun=${MPIRUN:-mpirun}
# Hyperparameters, passed explicitly to every side (as scripts/bench_single.sh).
lr=2e-3 min_lr=2e-4 warmup=5 weight_decay=0.1 grad_clip=1.0 seed=1234

usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) ranks_list=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --preset) preset=$2; shift 2 ;;
    --batch-size) batch=$2; shift 2 ;;
    --micro-batch) micro=$2; shift 2 ;;
    --seq-len) seq_len=$2; shift 2 ;;
    --variants) variants=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "bench_strategies: unknown argument '$1'" >&2; usage 2 ;;
  esac
done
[ "$steps" -ge 2 ] || { echo "bench_strategies: --steps must be >= 2 (step 0 is a warm-up)" >&2; exit 2; }
for n in $ranks_list; do
  m=$((micro > 0 ? micro : batch / n))
  if [ "$n" -lt 1 ] || [ $((batch % (m * n))) -ne 0 ] || [ "$m" -lt 1 ]; then
    echo "bench_strategies: batch $batch is not a multiple of micro-batch x ranks = $m x $n" >&2; exit 2
  fi
done

openblas_threads=${BENCH_OPENBLAS_THREADS:-$threads}
if [ "$openblas_threads" = unset ]; then
  openblas_threads=""
  unset OPENBLAS_NUM_THREADS
else
  # set_num_threads does not reach Debian's openblas-pthread pool (see bench_single.sh); same for every side.
  export OPENBLAS_NUM_THREADS=$openblas_threads
fi
# Open MPI refuses root without these; all ranks share this host, which has fewer cores than ranks.
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
mpi_flags=(--oversubscribe --bind-to none)

log() { echo "[bench_strategies] $*" >&2; }

plugin_files() {
  local d p
  d="$(dirname "$gradsweep")/plugins"
  for p in model_gpt2 strategy_single strategy_ring strategy_dps strategy_ps; do echo "$d/gradsweep_$p.so"; done
}
# The binary is shared with other engineers and may be missing while it is being rebuilt: wait for it.
wait_for_binary() {
  local waited=0 f missing
  while :; do
    missing=""
    for f in "$gradsweep" $(plugin_files); do [ -f "$f" ] || missing="$f"; done
    [ -z "$missing" ] && return 0
    [ "$waited" -ge 600 ] && { log "$missing still missing after ${waited}s"; exit 1; }
    log "waiting for $missing to be (re)built..."
    sleep 15
    waited=$((waited + 15))
  done
}
data_hash() { sha256sum "$data/train.bin" | cut -c1-64; }
binary_hash() { sha256sum "$gradsweep" $(plugin_files) | sha256sum | cut -c1-64; }

preset_block_size() {  # as plugins/models/gpt2/gpt2_config.cpp
  case "$1" in
    gpt2-124m) echo 1024 ;; gpt2-bai-100m) echo 512 ;; gpt2-small-cpu | gpt2-mid-cpu | gpt2-big-cpu) echo 128 ;; gpt2-tiny) echo 64 ;;
    *) echo "bench_strategies: unknown preset '$1'" >&2; exit 2 ;;
  esac
}
block_size=$(preset_block_size "$preset")
t=$((seq_len < block_size ? seq_len : block_size))

wait_for_binary
if [ ! -f "$data/train.bin" ]; then
  log "preparing $data from /usr/share/games/fortunes"
  "$gradsweep" prepare --tokenizer byte --input /usr/share/games/fortunes --out "$data"
fi
data_abs=$(cd "$data" && pwd)

# A variant's gradsweep --set arguments: aliases, or STRATEGY:key=value,... for any strategy option.
variant_sets() {
  local spec=${1%@*} name opts kv
  case "$spec" in
    ring-native) spec="ring:algorithm=native" ;;
    ps) spec="ps:mode=sync" ;;
  esac
  name=${spec%%:*}
  echo "--set strategy.name=$name"
  if [ "$name" != "$spec" ]; then
    opts=${spec#*:}
    for kv in ${opts//,/ }; do echo "--set strategy.$kv"; done
  fi
}
variant_dir() { echo "$1" | tr ':,=@/' '_-_+_'; }
variant_binary() { if [ "${1#*@}" != "$1" ]; then echo "${1#*@}/gradsweep"; else echo "$gradsweep"; fi; }

common_sets() {  # batch micro
  echo "--set model.preset=$preset --set model.vocab_size=$vocab --set model.block_size=$block_size"
  echo "--set data.train=$data_abs/train.bin --set data.val=$data_abs/val.bin"
  echo "--set train.steps=$steps --set train.batch_size=$1 --set train.micro_batch=$2 --set train.seq_len=$t"
  echo "--set train.lr=$lr --set train.min_lr=$min_lr --set train.warmup_steps=$warmup"
  echo "--set train.weight_decay=$weight_decay --set train.grad_clip=$grad_clip --set train.seed=$seed"
  echo "--set runtime.threads=$threads"
}

# Runs "$@" up to twice (the binary may have been replaced under us); on a second failure the variant is
# recorded as failed in this round and the benchmark goes on: the report shows what did run.
attempt() {  # dir what command...
  local dir=$1 what=$2 try
  shift 2
  for try in 1 2; do
    wait_for_binary
    if timeout "$run_timeout" "$@" >"$dir.log" 2>&1; then return 0; fi
    log "$what failed (attempt $try, see $dir.log)"; tail -3 "$dir.log" >&2
    [ "$try" = 1 ] && sleep 20
  done
  echo "failed" >"$dir.failed"
  return 1
}

run_gradsweep() {  # dir n variant
  local dir=$1 n=$2
  rm -rf "$dir" "$dir.failed"
  # shellcheck disable=SC2046  # word splitting of the --set lists is intended
  GRADSWEEP_COMM=mpi attempt "$dir" "$3 x$n" "$mpirun" -np "$n" "${mpi_flags[@]}" \
    "$(variant_binary "$3")" train bench/gpt2_single.yaml --out "$dir" --fresh $(common_sets "$batch" "$micro") \
    $(variant_sets "$3") \
    && rm -rf "$dir/checkpoint"  # written at the end of every cell; not needed here
}

run_ddp() {  # dir n
  local dir=$1 n=$2
  rm -rf "$dir" "$dir.failed"
  mkdir -p "$dir"
  # A fresh rendezvous file per job (torch's file:// store must not find an old one); absolute path.
  local rendezvous
  rendezvous="$(cd "$dir" && pwd)/rendezvous"
  attempt "$dir" "ddp x$n" "$mpirun" -np "$n" "${mpi_flags[@]}" \
    "$python" bench/ddp_gpt2.py --init-method "file://$rendezvous" \
    --preset "$preset" --vocab "$vocab" --block-size "$block_size" --batch-size "$batch" --micro-batch "$micro" \
    --seq-len "$t" --steps "$steps" --threads "$threads" --data "$data_abs/train.bin" --lr "$lr" --min-lr "$min_lr" \
    --warmup-steps "$warmup" --weight-decay "$weight_decay" --grad-clip "$grad_clip" --seed "$seed" \
    --out "$dir/ddp.json" && rm -f "$dir/rendezvous"
}

# The ceiling: N single-rank processes, no launcher (GRADSWEEP_COMM=local), each on batch/N sequences per
# step in micro-batches of the ranks' size, all started together; they share the cores as N ranks would.
run_ceiling() {  # dir n
  local dir=$1 n=$2 i pids=() rc=0
  local share=$((batch / n)) m=$((micro > 0 ? micro : batch / n))
  rm -rf "$dir" "$dir.failed"
  mkdir -p "$dir"
  wait_for_binary
  for i in $(seq 0 $((n - 1))); do
    # shellcheck disable=SC2046
    GRADSWEEP_COMM=local timeout "$run_timeout" "$gradsweep" train bench/gpt2_single.yaml --out "$dir/proc$i" --fresh \
      $(common_sets "$share" "$m") --set strategy.name=single >"$dir/proc$i.log" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do wait "${pids[$i]}" || { rc=$?; log "ceiling process $i failed (rc $rc, see $dir/proc$i.log)"; }; done
  rm -rf "$dir"/proc*/checkpoint
  if [ "$rc" -ne 0 ]; then echo "failed" >"$dir.failed"; return 1; fi
}

run_variant() {  # dir n variant
  case "$3" in
    ddp) run_ddp "$1" "$2" ;;
    ceiling) run_ceiling "$1" "$2" ;;
    *) run_gradsweep "$1" "$2" "$3" ;;
  esac
}

mkdir -p "$out"
hash0=$(binary_hash)
data0=$(data_hash)
variants_json="" ranks_json=""
for v in $variants; do variants_json+="${variants_json:+,}{\"name\":\"$v\",\"dir\":\"$(variant_dir "$v")\"}"; done
for n in $ranks_list; do ranks_json+="${ranks_json:+,}$n"; done
cat >"$out/run.json" <<EOF
{"gradsweep": "$gradsweep", "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)", "command": "$command_line", "host": "$(hostname)",
 "cores": $(nproc), "ranks": [$ranks_json], "rounds": $rounds, "steps": $steps, "threads": $threads,
 "openblas_threads": "$openblas_threads", "preset": "$preset", "batch_size": $batch, "micro_batch": $micro,
 "seq_len": $t, "block_size": $block_size, "vocab": $vocab, "variants": [$variants_json],
 "torch_version": "$("$python" -c 'import torch; print(torch.__version__)')",
 "mpirun": "$("$mpirun" --version 2>/dev/null | head -1)",
 "gradsweep_sha256": "$hash0", "train_bin_sha256": "$data0"}
EOF

reversed() { local v r=""; for v in $1; do r="$v $r"; done; echo "$r"; }
for n in $ranks_list; do
  for r in $(seq 1 "$rounds"); do
    rdir="$out/np$n/round$r"
    rm -rf "$rdir"
    mkdir -p "$rdir"
    # Alternate the order so that no variant always runs right after the same neighbour.
    if [ $((r % 2)) -eq 1 ]; then order=$variants; else order=$(reversed "$variants"); fi
    load=$(cut -d' ' -f1 /proc/loadavg)
    log "$n ranks, round $r/$rounds: $(echo $order) (load $load)"
    for v in $order; do
      started=$(date +%s.%N)
      run_variant "$rdir/$(variant_dir "$v")" "$n" "$v" || true
      log "  $v: $(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s"
    done
    printf '{"round": %d, "order": "%s", "load_avg_1m": "%s"}\n' "$r" "$(echo $order)" "$load" >"$rdir/round.json"
    if [ "$(binary_hash)" != "$hash0" ]; then
      log "WARNING: $gradsweep or its plugins changed during the benchmark (rebuilt by someone?); rounds may mix builds"
    fi
    if [ "$(data_hash)" != "$data0" ]; then
      log "WARNING: $data/train.bin changed during the benchmark; rounds may mix data sets"
    fi
  done
done

echo
"$python" bench/strategies_report.py "$out"
echo
echo "results: $out/report.md, $out/results.json; per-run files under $out/np<N>/round<r>/<variant>/"
