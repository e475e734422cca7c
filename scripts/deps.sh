#!/usr/bin/env bash
# Installs what sap needs to build and test on Debian/Ubuntu (skips what is there).
set -euo pipefail
# libspng-dev and libcjson-dev: PNG and JSON output of the sap command-line tool;
# libfast-float-dev: number parsing of the Matrix Market reader
# libopenmpi-dev + openmpi-bin: the distributed block-tridiagonal solvers (SAP_ENABLE_MPI;
# the library builds without them)
pkgs="cmake make gcc g++ pkg-config zlib1g-dev libfast-float-dev libopenblas-dev liblapacke-dev python3 libspng-dev libcjson-dev libopenmpi-dev openmpi-bin"
# Optional (SAP_DEPS_BENCH=1): the CPU anchors of bench/suite (SuperLU, UMFPACK, MUMPS).
# The library and the tests never need them; bench/suite reports them as n/a without.
if [ "${SAP_DEPS_BENCH:-0}" = "1" ]; then
    pkgs="$pkgs libsuperlu-dev libsuitesparse-dev libmumps-seq-dev"
fi
# Optional (SAP_DEPS_FUZZ=1): clang and its libFuzzer/sanitizer runtimes for fuzz/run.sh
# (the CI's fuzzing step asks for them).
if [ "${SAP_DEPS_FUZZ:-0}" = "1" ]; then
    pkgs="$pkgs clang-14 libclang-rt-14-dev"
fi
# Optional (SAP_DEPS_SLEPC=1): SLEPc (with PETSc) for examples/slepc (shift-and-invert with
# sap's block-tridiagonal solver).
if [ "${SAP_DEPS_SLEPC:-0}" = "1" ]; then
    pkgs="$pkgs slepc-dev"
fi
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "scripts/deps.sh: installing$missing"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends $missing
fi
