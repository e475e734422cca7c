#!/usr/bin/env bash
# Builds sap (Release, CPU only) and runs the Matrix Market I/O benchmark (bench/io.c).
# Results: bench/results/io.csv and bench/results/io.md.  When the Python module
# fast_matrix_market is installed, its timings on the same texts (bench/io_fmm.py) are
# added as reference columns.
#
#   bench/run_io.sh [MATRIX_DIR] [--min-time S] [--threads N] [--only NAME] [--out DIR]
#
# MATRIX_DIR defaults to $SAP_MATRIX_DIR, else ../shared/matrices next to the source tree.
# BUILD_DIR (environment) picks the build directory (default build-bench-io).
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$src/build-bench-io}"
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSAP_ENABLE_CUDA=OFF -DSAP_BUILD_BENCH=ON \
      -DSAP_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" --target bench_io -j"$(nproc)"

mdir="${SAP_MATRIX_DIR:-$src/../shared/matrices}"
if [[ $# -gt 0 && "$1" != -* ]]; then mdir="$1"; shift; fi
compare=()
if python3 -c "import fast_matrix_market" 2>/dev/null; then
    python3 "$src/bench/io_fmm.py" "$mdir" "$build/io_fmm.csv" >/dev/null
    compare=(--compare "$build/io_fmm.csv")
else
    echo "note: python3 module fast_matrix_market not found; no reference columns" >&2
fi
exec "$build/bench/io" "$mdir" "${compare[@]}" "$@"
