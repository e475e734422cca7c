#!/usr/bin/env bash
# run_suite.sh -- bench/suite on the GPU machine in one command: configure + build
# (Release, sm_90, -j16, with the CPU anchors of .anchors/ when present), then the suite
# over the matrix folder and the generated set within a time budget.
#
# usage (repository root):
#   bench/run_suite.sh OUTDIR [--part I/M] [--budget S] [--timeout S] [--no-build] [-- SUITE ARGS...]
#     OUTDIR      results: suite.csv, suite.md, suite_speedup.png (when matplotlib is there),
#                 suite_build.log, suite_children.log (the solvers' own output, last 2 MB),
#                 suite_not_run.txt (systems the budget left out, if any)
#     --part I/M  every M-th system starting at the I-th (systems sorted by size, so parts
#                 take similar time); run I = 1..M in separate commands and merge:
#                   build-suite/bench/suite --report-only P1/suite.csv,P2/suite.csv --out bench/results --plot
#     --budget S  wall-clock seconds for the whole command, build included (default 560: the
#                 device command limit is 600 s); systems not started in time are listed
#     --timeout S per (system, solver) limit (default 60)
#     --no-build  use the existing build
#     after --     more arguments for bench/suite (e.g. --solvers sap,cudss --no-gen --match cage)
# environment:
#   SAP_MATRIX_DIR   the matrices (default: .mat in the root, else ../shared/matrices)
#   SAP_CUDSS_LIB    libcudss.so.1 of nvidia-cudss-cu13; when unset and .cudss/libcudss.so.1.xz
#                    is there, that one is unpacked to ${TMPDIR:-/tmp}/sap-cudss/ and used (else
#                    cuDSS is n/a unless the loader finds libcudss.so.1)
#   SAP_MKL_LIB      libmkl_rt.so.* of the PyPI mkl package (else PARDISO is n/a)
#   SAP_SUITE_BUILD  build folder (default build-suite)
#   experiments on sap's rows (bench/anchors/suite_sap.c): SAP_SUITE_SAP_TRACE=1 (each setup's
#   and probe's part times in suite_children.log), SAP_SUITE_SAP_BACKEND=cpu|cuda|auto,
#   SAP_SUITE_SAP_THREADS=N (the context's host threads), SAP_SUITE_WARM=m1,m2 (the warm-up's
#   methods; default all)
# .cudss/ (git-ignored: /.cudss/ in .git/info/exclude) holds cuDSS pruned to sm_90 by
#   bench/anchors/pack_cudss.py: ~17 MB instead of 167 MB, so that it travels to the GPU machine
#   with .anchors/ and the matrices (the device tool carries 64 MiB a call), e.g.
#   carry [".deps", ".anchors/lib.tar.xz", ".anchors/include", ".cudss", ".mat"]
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
t0=$(date +%s)
elapsed() { echo $(( $(date +%s) - t0 )); }

OUT=""
PART="1/1"
BUDGET=560
TIMEOUT=60
BUILD_IT=1
EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --part) PART=$2; shift 2 ;;
    --budget) BUDGET=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --no-build) BUILD_IT=0; shift ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
    *) if [ -z "$OUT" ]; then OUT=$1; shift; else echo "run_suite.sh: unknown argument $1" >&2; exit 2; fi ;;
  esac
done
[ -n "$OUT" ] || { echo "usage: bench/run_suite.sh OUTDIR [--part I/M] [--budget S] [--timeout S] [-- ...]" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BUILD=${SAP_SUITE_BUILD:-$ROOT/build-suite}

# ---- CPU anchors: .anchors/ (bench/anchors/pack.sh) ---------------------------------------
LDCONFIG=$(command -v ldconfig || echo /sbin/ldconfig)
lib_path() {
  local p
  p=$("$LDCONFIG" -p 2>/dev/null | awk -v s="$1" '$1 == s && /x86-64/ && !f {print $NF; f = 1}')
  [ -n "$p" ] || p=$(ls /usr/lib/x86_64-linux-gnu/$1 /lib/x86_64-linux-gnu/$1 /usr/lib64/$1 /usr/local/lib/$1 2>/dev/null | head -1)
  echo "$p"
}
has_lib() { [ -n "$(lib_path "$1")" ]; }
ANCHOR_ARGS=()
if [ -f "$ROOT/.anchors/lib.tar.xz" ] && [ ! -e "$ROOT/.anchors/lib/libsuperlu.so" ]; then
  mkdir -p "$ROOT/.anchors/lib" && tar -C "$ROOT/.anchors/lib" -xJf "$ROOT/.anchors/lib.tar.xz"
fi
if [ -d "$ROOT/.anchors/lib" ]; then
  A=$ROOT/.anchors
  ANCHOR_ARGS=(-DSAP_SUITE_ANCHOR_PREFIX=$A)
  FB=$A/lib/fallback
  need_fb=0
  for so in libgfortran.so.5 libquadmath.so.0; do
    if ! has_lib $so && [ -f "$FB/$so.xz" ]; then xz -dc "$FB/$so.xz" > "$FB/$so"; need_fb=1; echo "anchors: using packed $so"; fi
  done
  # BLAS/LAPACK: the system's (OpenBLAS) under the sonames the Debian libraries ask for
  ob=$(lib_path libopenblas.so.0)
  [ -n "$ob" ] || ob=$(ls /opt/OpenBLAS/lib/libopenblas.so.0 2>/dev/null | head -1)
  for so in libblas.so.3 liblapack.so.3; do
    has_lib $so && continue
    if [ -n "$ob" ]; then ln -sf "$ob" "$FB/$so"; echo "anchors: $so -> $ob"
    elif [ -f "$FB/$so.xz" ]; then xz -dc "$FB/$so.xz" > "$FB/$so"; echo "anchors: using packed reference $so"
    fi
    need_fb=1
  done
  if [ $need_fb = 1 ]; then export LD_LIBRARY_PATH="$FB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
  # the binary carries .anchors/lib as DT_RPATH; on the loader path as well, in case
  export LD_LIBRARY_PATH="$A/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  echo "anchors: no .anchors/ (run bench/anchors/pack.sh where the Debian packages are); CPU anchors as found on this system"
fi

# build dependencies the GPU machine lacks (fast_float, cJSON, libspng) travel in .deps/ (as
# for bench/gpu_run.sh): without it there the configure stops at fast_float
if [ -d "$ROOT/.deps" ]; then
  ANCHOR_ARGS+=(-DCMAKE_PREFIX_PATH=$ROOT/.deps)
  export LD_LIBRARY_PATH="$ROOT/.deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

# ---- build ----------------------------------------------------------------------------------
if [ $BUILD_IT = 1 ]; then
  {
    echo "== configure $(date -u)"; nvcc --version 2>/dev/null | tail -2
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSAP_ENABLE_CUDA=ON \
          -DSAP_BUILD_TESTS=OFF "${ANCHOR_ARGS[@]}"
    echo "== build"
    cmake --build "$BUILD" -j16 --target bench_suite
  } > "$OUT/suite_build.log" 2>&1
  rc=$?
  echo "build: rc=$rc ($(elapsed) s); $(grep -h 'bench/suite:' "$OUT/suite_build.log" | head -1)"
  if [ $rc -ne 0 ]; then grep -E "error|Error" "$OUT/suite_build.log" | head -30; tail -20 "$OUT/suite_build.log"; exit 1; fi
fi
[ -x "$BUILD/bench/suite" ] || { echo "run_suite.sh: $BUILD/bench/suite missing" >&2; exit 1; }

# ---- run time environment ---------------------------------------------------------------------
MATDIR=${SAP_MATRIX_DIR:-}
if [ -z "$MATDIR" ]; then
  if [ -d "$ROOT/.mat" ]; then MATDIR=$ROOT/.mat; else MATDIR=$ROOT/../shared/matrices; fi
fi
export SAP_MATRIX_DIR=$MATDIR
# cuDSS needs libcublas/libnvrtc of the toolkit: the CUDA library folder on the loader path
CUDALIB=$(grep -h '^CUDAToolkit_LIBRARY_DIR' "$BUILD/CMakeCache.txt" 2>/dev/null | cut -d= -f2)
[ -n "$CUDALIB" ] && export LD_LIBRARY_PATH="$CUDALIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ -z "${SAP_CUDSS_LIB:-}" ] && [ -f "$ROOT/.cudss/libcudss.so.1.xz" ]; then
  CD=${TMPDIR:-/tmp}/sap-cudss
  mkdir -p "$CD" && { [ -s "$CD/libcudss.so.1" ] || xz -dc "$ROOT/.cudss/libcudss.so.1.xz" > "$CD/libcudss.so.1"; } &&
    export SAP_CUDSS_LIB=$CD/libcudss.so.1
fi
if [ -n "${SAP_CUDSS_LIB:-}" ]; then
  export LD_LIBRARY_PATH="$(dirname "$SAP_CUDSS_LIB")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "cuDSS: $SAP_CUDSS_LIB"
else
  echo "cuDSS: SAP_CUDSS_LIB not set (n/a unless libcudss.so.1 is on the loader path)"
fi
GPU=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
echo "GPU: ${GPU:-none}; matrices: $MATDIR; part $PART; budget $BUDGET s, used $(elapsed) s"

# ---- the suite --------------------------------------------------------------------------------
left=$(( BUDGET - $(elapsed) - 10 ))
[ $left -lt 30 ] && left=30
"$BUILD/bench/suite" --dir "$MATDIR" --out "$OUT" --part "$PART" --timeout "$TIMEOUT" --deadline "$left" "${EXTRA[@]}"
rc=$?
echo "suite: rc=$rc ($(elapsed) s)"
if [ -f "$OUT/suite_children.log" ] && [ "$(stat -c %s "$OUT/suite_children.log")" -gt 2000000 ]; then
  tail -c 2000000 "$OUT/suite_children.log" > "$OUT/suite_children.tmp" && mv "$OUT/suite_children.tmp" "$OUT/suite_children.log"
fi
if python3 -c "import matplotlib" 2>/dev/null; then
  python3 "$ROOT/bench/suite_plot.py" "$OUT/suite.csv" "$OUT/suite_speedup.png" || echo "plot failed"
fi
{ echo "GPU: ${GPU:-none}"; echo "part: $PART"; } >> "$OUT/suite_build.log"
ls -la "$OUT"
exit $rc
