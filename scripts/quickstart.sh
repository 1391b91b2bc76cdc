#!/usr/bin/env bash
# The README's main command: set up, prepare the default corpus, and run the quickstart sweep
# (experiments/quickstart.yaml: GPT-2 with single on one rank and ring and dps on two ranks, and an LSTM
# LM) through the local launcher (mpirun), then print the report.
#
# Corpus: the Debian package `fortunes` (English quotations, /usr/share/games/fortunes), byte-level tokens.
# Running it again resumes: finished cells are skipped (GRADSWEEP_FORCE=1 reruns them all).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh gradsweep gradsweep_plugins   # only what the sweep runs, not the test binaries
out=${GRADSWEEP_OUT:-runs/quickstart}
data=data/fortunes-byte
if [ ! -f "$data/train.bin" ]; then
  ./build/gradsweep prepare --tokenizer byte --input /usr/share/games/fortunes --out "$data"
fi
./build/gradsweep plugins
# Open MPI refuses to start as root unless told it is deliberate (containers, CI machines).
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
echo
./build/gradsweep plan experiments/quickstart.yaml --out "$out"
echo
force=()
[ "${GRADSWEEP_FORCE:-0}" = 1 ] && force=(--force)
./build/gradsweep run experiments/quickstart.yaml --out "$out" "${force[@]}"
echo
echo "report: $out/report.html (open it in a browser), $out/report.md (plots in $out/plots/), every number: $out/results.csv"
echo "one cell: $out/cells/<id>/ (cell.yaml, command.txt, metrics.jsonl, summary.json, rank logs)"
