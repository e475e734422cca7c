#!/usr/bin/env bash
# Installs the dependencies, builds sap with its tests and runs the whole test suite
# (GPU tests are skipped where no GPU exists).  Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
BUILD=${SAP_BUILD_DIR:-build}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DSAP_BUILD_TESTS=ON -DSAP_BUILD_BENCH=ON >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure -j"$(nproc)" "$@"
