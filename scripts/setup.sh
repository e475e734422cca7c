#!/usr/bin/env bash
# Installs the dependencies, builds sap (CUDA backend too when nvcc is found) and runs the
# main job on a built-in example: a 3D Poisson system (60^3 unknowns) solved by CG with
# a Jacobi preconditioner on the GPU when there is one, else on the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSAP_BUILD_TESTS=OFF -DSAP_BUILD_BENCH=OFF >/dev/null
cmake --build build -j"$(nproc)" --target sap_cli
EXAMPLE=gen:poisson3d:n=60
echo
echo "== sap info $EXAMPLE"
build/sap info "$EXAMPLE"
echo
echo "== sap solve $EXAMPLE --krylov cg --precond jacobi"
build/sap solve "$EXAMPLE" --krylov cg --precond jacobi
