#!/usr/bin/env bash
# The Xiao et al. (2017) comparison of docs/measurements/xiao2017.md: prepares the word-level fortunes corpus
# (vocabulary 10,000), runs experiments/xiao2017.yaml through the local launcher (12 cells, 1 to 4 ranks)
# and prints the results table and the paper's claims against what was measured
# (scripts/xiao2017_claims.py). Extra arguments go to `gradsweep run` (e.g. --set train.steps=20).
# Running it again skips finished cells; GRADSWEEP_FORCE=1 reruns them all.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
out=${GRADSWEEP_OUT:-runs/xiao2017}
data=data/fortunes-word
if [ ! -f "$data/train.bin" ]; then
  ./build/gradsweep prepare --tokenizer word --vocab 10000 --input /usr/share/games/fortunes --out "$data"
fi
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
force=()
[ "${GRADSWEEP_FORCE:-0}" = 1 ] && force=(--force)
./build/gradsweep run experiments/xiao2017.yaml --out "$out" "${force[@]}" "$@"
echo
python3 scripts/xiao2017_claims.py "$out"
