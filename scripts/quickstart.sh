#!/usr/bin/env bash
# The README's main command: set up, prepare the default corpus, and train GPT-2 and an LSTM language
# model on it through the plugins, printing each run's summary.
#
# Corpus: the Debian package `fortunes` (English quotations, /usr/share/games/fortunes), byte-level tokens.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
out=${GRADSWEEP_OUT:-runs/quickstart}
data=data/fortunes-byte
if [ ! -f "$data/train.bin" ]; then
  ./build/gradsweep prepare --tokenizer byte --input /usr/share/games/fortunes --out "$data"
fi
./build/gradsweep plugins
for cell in gpt2 lstm; do
  echo
  echo "== training $cell (experiments/quickstart/$cell.yaml) =="
  ./build/gradsweep train "experiments/quickstart/$cell.yaml" --out "$out/$cell" --fresh
done
echo
echo "results: $out/*/summary.json, per-step metrics in $out/*/metrics.jsonl"
