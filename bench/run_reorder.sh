#!/usr/bin/env bash
# run_reorder.sh -- the reordering benchmark: sap (bench/reorder.c) and its scipy anchors
# (bench/reorder_scipy.py: min_weight_full_bipartite_matching on the same weights c_ij,
# reverse_cuthill_mckee on the same pattern) over every matrix of the matrix directory,
# merged into bench/results/reorder.csv and bench/results/reorder.md.
#
# Usage: bench/run_reorder.sh [BUILD_DIR]      (default BUILD_DIR: build-bench in the repo;
#        configured if missing, bench_reorder (re)built in any case)
# Environment:
#   SAP_MATRIX_DIR   matrix directory (default: ../shared/matrices beside the repository)
#   SCIPY_TIMEOUT    seconds allowed to one scipy matching (default 20; scipy's LAPJVsp
#                    takes minutes on a few matrices; those are reported as timeouts)
#   REORDER_ONLY     comma-separated matrix names to restrict the run
#   REORDER_MAX_NNZ  skip matrices with more stored entries
#   REORDER_THREADS  sap's CPU threads (default 1: scipy is single-threaded, and on a
#                    shared 2-core machine a parallel region waits for a descheduled
#                    thread; 0 = the OpenMP default)
# Takes about 10-15 minutes on the 2-core development machine, mostly in scipy.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${1:-$root/build-bench}
matrices=${SAP_MATRIX_DIR:-$(cd "$root/.." && pwd)/shared/matrices}

if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSAP_BUILD_BENCH=ON -DSAP_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" --target bench_reorder -j2 >/dev/null

if ! python3 -c "import scipy" 2>/dev/null; then
    echo "installing scipy (pip)" >&2
    python3 -m pip install --quiet scipy || python3 -m pip install --quiet --break-system-packages scipy
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sap_args=(--threads "${REORDER_THREADS:-1}")
py_args=()
if [ -n "${REORDER_ONLY:-}" ]; then
    sap_args+=(--only "$REORDER_ONLY")
    py_args+=(--only "$REORDER_ONLY")
fi
if [ -n "${REORDER_MAX_NNZ:-}" ]; then
    sap_args+=(--max-nnz "$REORDER_MAX_NNZ")
    py_args+=(--max-nnz "$REORDER_MAX_NNZ")
fi

echo "== sap (bench/reorder) =="
SAP_MATRIX_DIR="$matrices" "$build/bench/reorder" --csv "$tmp/sap.csv" ${sap_args[@]+"${sap_args[@]}"}
echo "== scipy anchors (bench/reorder_scipy.py) =="
python3 "$here/reorder_scipy.py" run --matrix-dir "$matrices" --csv "$tmp/scipy.csv" \
    --timeout "${SCIPY_TIMEOUT:-20}" ${py_args[@]+"${py_args[@]}"}
mkdir -p "$here/results"
echo "== merge =="
python3 "$here/reorder_scipy.py" merge --sap "$tmp/sap.csv" --scipy "$tmp/scipy.csv" \
    --csv "$here/results/reorder.csv" --md "$here/results/reorder.md"
echo "wrote $here/results/reorder.csv and $here/results/reorder.md"
