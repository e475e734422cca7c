#!/usr/bin/env bash
# Installs the dependencies (PETSc included: SAP_DEPS_PETSC=0 leaves it out), builds sap with
# its tests and runs the whole test suite (GPU tests are skipped where no GPU exists; the
# PETSc example test where PETSc could not be installed), then builds the Python package
# into build/venv and runs its pytest suite.  Extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
SAP_DEPS_PETSC=${SAP_DEPS_PETSC:-1} scripts/deps.sh
BUILD=${SAP_BUILD_DIR:-build}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DSAP_BUILD_TESTS=ON -DSAP_BUILD_BENCH=ON >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure -j"$(nproc)" "$@"
SAP_BUILD_DIR=$BUILD scripts/python.sh --test
