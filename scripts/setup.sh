#!/usr/bin/env bash
# Installs the dependencies, builds sap (CUDA backend too when nvcc is found) and runs the
# main job on a built-in example.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSAP_BUILD_TESTS=OFF -DSAP_BUILD_BENCH=OFF >/dev/null
cmake --build build -j"$(nproc)" --target sap_cli
echo
echo "== sap gen gen:synthetic:N=100000,K=50,d=1 -o build/example.mtx.gz"
build/sap gen gen:synthetic:N=100000,K=50,d=1 -o build/example.mtx.gz
echo "== sap info build/example.mtx.gz"
build/sap info build/example.mtx.gz
