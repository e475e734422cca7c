#!/usr/bin/env bash
# Installs what sap needs to build and test on Debian/Ubuntu (skips what is there).
set -euo pipefail
# libspng-dev and libcjson-dev: PNG and JSON output of the sap command-line tool;
# libfast-float-dev: number parsing of the Matrix Market reader
# libmetis-dev: the partitions of the block ILU / RAS preconditioners (optional at build:
# without it a breadth-first partitioner is used)
# libopenmpi-dev + openmpi-bin: the distributed block-tridiagonal solvers (SAP_ENABLE_MPI;
# the library builds without them)
# libsuitesparse-dev: CHOLMOD / UMFPACK of the direct-host method (the library builds without
# it; the method then reports "not built with SuiteSparse")
# python3-dev, python3-venv: the Python package (scripts/python.sh builds it in build/venv)
pkgs="cmake make gcc g++ pkg-config zlib1g-dev libfast-float-dev libopenblas-dev liblapacke-dev python3 python3-dev python3-venv libspng-dev libcjson-dev libmetis-dev libsuitesparse-dev libopenmpi-dev openmpi-bin"
# Optional (SAP_DEPS_BENCH=1): the CPU anchors of bench/suite (SuperLU, MUMPS; UMFPACK
# comes with libsuitesparse-dev above).
# The library and the tests never need them; bench/suite reports them as n/a without.
if [ "${SAP_DEPS_BENCH:-0}" = "1" ]; then
    pkgs="$pkgs libsuperlu-dev libmumps-seq-dev"
fi
# Optional (SAP_DEPS_FUZZ=1): clang and its libFuzzer/sanitizer runtimes for fuzz/run.sh
# (the CI's fuzzing step asks for them).
if [ "${SAP_DEPS_FUZZ:-0}" = "1" ]; then
    pkgs="$pkgs clang-14 libclang-rt-14-dev"
fi
# Optional (SAP_DEPS_PETSC=1; scripts/setup.sh, scripts/test.sh and CI ask for it): PETSc
# with Open MPI for the PETSc plugin (petsc/) and its example test, and SLEPc for
# examples/slepc (shift-and-invert with sap's block-tridiagonal solver); about 110
# packages, so not for every build.  Where they cannot be installed the plugin and the
# example are not built and their tests are skipped with a message saying so.
optional=""
if [ "${SAP_DEPS_PETSC:-0}" = "1" ] || [ "${SAP_DEPS_SLEPC:-0}" = "1" ]; then
    optional="petsc-dev slepc-dev"
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
for p in $optional; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        echo "scripts/deps.sh: installing $p (optional)"
        SUDO=""
        [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        [ -n "$missing" ] || $SUDO apt-get update -qq || true
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$p" ||
            echo "scripts/deps.sh: $p could not be installed: what needs it is skipped (see the test output)"
    fi
done
