#!/usr/bin/env bash
# Installs the dependencies (idempotent) and builds gradsweep into ./build (Release, Ninja), through
# ccache when it is installed (see CMakeLists.txt).
#   scripts/build.sh                                 everything: gradsweep, the plugins, the test binaries
#   scripts/build.sh gradsweep gradsweep_plugins     only the named targets (the quickstart runs no tests)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
# CI (CI=true, set by .ci/run) builds with warnings as errors; a user's build only shows them.
werror=OFF
[ "${CI:-}" = true ] && werror=ON
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRADSWEEP_WERROR=$werror
if [ $# -gt 0 ]; then
  cmake --build build -j "$(nproc)" --target "$@"
else
  cmake --build build -j "$(nproc)"
fi
