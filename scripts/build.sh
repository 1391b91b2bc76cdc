#!/usr/bin/env bash
# Installs the dependencies (idempotent) and builds gradsweep into ./build (Release, Ninja), through
# ccache when it is installed (see CMakeLists.txt).
#   scripts/build.sh                                 everything: gradsweep, the plugins, the test binaries
#   scripts/build.sh gradsweep gradsweep_plugins     only the named targets (the quickstart runs no tests)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
# CI (CI=true, set by .ci/run) builds with warnings as errors, and must build the NCCL backend (the torch
# wheel in .venv brings NCCL and the CUDA runtime, so it always can); a user's build only shows warnings,
# and builds the backend when NCCL is found.
werror=OFF nccl=AUTO
[ "${CI:-}" = true ] && werror=ON nccl=ON
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRADSWEEP_WERROR=$werror -DGRADSWEEP_WITH_NCCL=$nccl
if [ $# -gt 0 ]; then
  cmake --build build -j "$(nproc)" --target "$@"
else
  cmake --build build -j "$(nproc)"
fi
