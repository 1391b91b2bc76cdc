#!/usr/bin/env bash
# Builds the fuzz targets (targets/, with clang++-14 and libFuzzer) and runs each for a bounded time over
# the configuration parsers; ctest's fuzz_config_parsers runs it (tests/fuzz/CMakeLists.txt).
#   run_fuzz.sh BUILD_DIR SECONDS_PER_TARGET TORCH_INCLUDE_DIRS(;-separated) TORCH_LIB_DIR
# Fails on any crash, leak, timeout (an input taking over 10 s), out-of-memory or exception other than a
# ConfigError, printing the reproducer. Without clang++-14 or libFuzzer it skips (exit 77), except under CI
# (CI=true), where it fails. The corpus grows in BUILD_DIR/corpus across runs, seeded each time from the
# shipped experiments and cells.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source_dir="$(cd "$here/../.." && pwd)"
build="$1" seconds="$2" torch_include="$3" torch_lib="$4"

missing=""
command -v clang++-14 >/dev/null || missing="clang++-14 (Debian package clang-14)"
[ -n "$missing" ] || ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 ||
  missing="libFuzzer (Debian package libclang-rt-14-dev)"
if [ -n "$missing" ]; then
  echo "fuzz: $missing is not installed (scripts/install-deps.sh installs it)"
  [ "${CI:-}" = "true" ] && exit 1
  exit 77
fi

cmake -S "$here/targets" -B "$build" -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGRADSWEEP_SOURCE_DIR="$source_dir" -DGRADSWEEP_TORCH_INCLUDE_DIRS="$torch_include" \
  -DGRADSWEEP_TORCH_LIB_DIR="$torch_lib" >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j2

seeds="$build/seeds"
rm -rf "$seeds" && mkdir -p "$seeds/cell_config_fuzz" "$seeds/experiment_fuzz"
cp "$source_dir"/experiments/*.yaml "$source_dir"/experiments/gpu/*.yaml "$seeds/experiment_fuzz/"
cp "$source_dir"/experiments/quickstart/*.yaml "$source_dir"/experiments/check-strategy.yaml \
  "$source_dir"/bench/*.yaml "$seeds/cell_config_fuzz/"

status=0
for target in cell_config_fuzz experiment_fuzz; do
  corpus="$build/corpus/$target" artifacts="$build/artifacts/$target"
  mkdir -p "$corpus" "$artifacts"
  log="$build/$target.log"
  echo "fuzz: $target for ${seconds}s"
  # -max_len: configurations are small; longer inputs only slow the search. -rss_limit_mb: the parsers'
  # bounds (config/yaml_guard.hpp) keep any input far below it.
  mkdir -p "$build/tmp"  # experiment_fuzz's input file
  if TMPDIR="$build/tmp" ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
    -dict="$here/config.dict" -artifact_prefix="$artifacts/" -print_final_stats=1 \
    "$corpus" "$seeds/$target" >"$log" 2>&1; then
    grep -E "^stat::number_of_executed_units|^stat::new_units_added|^#[0-9]+.*DONE" "$log" | sed "s/^/fuzz: $target: /"
  else
    status=1
    tail -n 60 "$log"
    for reproducer in "$artifacts"/*; do
      [ -f "$reproducer" ] || continue
      echo "fuzz: $target: reproducer $reproducer (run: $build/$target $reproducer), its first 2000 bytes:"
      head -c 2000 "$reproducer" | od -c | head -n 60
    done
  fi
done
exit $status
