#!/usr/bin/env bash
# Installs the dependencies (PETSc included: SAP_DEPS_PETSC=0 leaves it out), builds sap
# (CUDA backend too when nvcc is found; the PETSc plugin where PETSc is found) and the
# Python package (into build/venv), and runs the main job on a built-in example: a 3D
# Poisson system (60^3 unknowns) solved by the sap pipeline (`sap solve` with its automatic
# choices: DB, CM, drop-off, SaP-D/SaP-C or a direct banded LU, and the Krylov method) on
# the GPU when there is one, else on the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
SAP_DEPS_PETSC=${SAP_DEPS_PETSC:-1} scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSAP_BUILD_TESTS=OFF -DSAP_BUILD_BENCH=OFF >/dev/null
cmake --build build -j"$(nproc)"
scripts/python.sh
EXAMPLE=gen:poisson3d:n=60
echo
echo "== sap info $EXAMPLE"
build/sap info "$EXAMPLE"
echo
echo "== sap solve $EXAMPLE"
build/sap solve "$EXAMPLE"
