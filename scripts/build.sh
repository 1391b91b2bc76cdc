#!/usr/bin/env bash
# Installs the dependencies (idempotent) and builds gradsweep into ./build (Release, Ninja).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$(nproc)"
