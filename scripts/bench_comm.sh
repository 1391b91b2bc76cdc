#!/usr/bin/env bash
# Collective bandwidth, native (Open MPI's own algorithm) vs gradsweep's ring, at several rank counts:
# runs `gradsweep bench comm` under mpirun for each N and writes each run's table and JSON to the output
# directory. The command is the benchmark; this only loops over N. See docs/measurements/communicators.md.
#
# Usage: scripts/bench_comm.sh [--ranks "2 4"] [--out DIR] [-- extra bench comm options...]
# Environment (flags win): BENCH_RANKS ("2 4"), BENCH_OUT (runs/bench-comm), GRADSWEEP (build/gradsweep).
# As root, Open MPI needs OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 (set here when root).
set -euo pipefail
cd "$(dirname "$0")/.."

ranks=${BENCH_RANKS:-"2 4"}
out=${BENCH_OUT:-runs/bench-comm}
gradsweep=${GRADSWEEP:-build/gradsweep}
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --ranks) ranks=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "bench_comm.sh: unknown option $1 (options after -- go to gradsweep bench comm)" >&2; exit 2 ;;
  esac
done
if [[ $(id -u) -eq 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
mkdir -p "$out"
# A ring tuning set in the environment must reach every rank.
forward=()
for var in GRADSWEEP_RING_SEGMENT_BYTES GRADSWEEP_RING_LOOKAHEAD; do
  if [[ -n ${!var:-} ]]; then forward+=(-x "$var"); fi
done
for n in $ranks; do
  echo "== $n ranks"
  # --oversubscribe: more ranks than cores is allowed (and measured as such); --bind-to none: let them share.
  mpirun --oversubscribe --bind-to none -np "$n" "${forward[@]}" \
    "$gradsweep" bench comm --json "$out/np$n.json" "${extra[@]}" | tee "$out/np$n.txt"
done
