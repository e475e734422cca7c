#!/usr/bin/env bash
# cmake --install into a temporary prefix, then build examples/matrix_stats.c against it
# through find_package(sap) (shared and static) and through pkg-config.
# usage: install.sh SAP_BINARY WORKDIR
set -u
SAP=$1
W=$2
BUILD=$(dirname "$SAP")
SRC=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$W" && mkdir -p "$W"
pass=0
fail=0
step() { # NAME CMD...
    local name=$1
    shift
    if "$@" >"$W/$name.log" 2>&1; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $name" >&2; tail -n 30 "$W/$name.log" >&2; fi
}
step install cmake --install "$BUILD" --prefix "$W/prefix"
step headers test -f "$W/prefix/include/sap.h"
step configure cmake -S "$SRC/examples/consumer" -B "$W/consumer" -DCMAKE_PREFIX_PATH="$W/prefix"
step build cmake --build "$W/consumer"
step run_shared env LD_LIBRARY_PATH="$W/prefix/lib:$W/prefix/lib64" "$W/consumer/consumer_shared" gen:poisson2d:n=20
step run_static "$W/consumer/consumer_static" gen:banded:N=100,K=3
PCDIR=$(dirname "$(find "$W/prefix" -name sap.pc | head -n 1)")
if command -v pkg-config >/dev/null && [ -n "$PCDIR" ]; then
    step pkgconfig sh -c "cc -o '$W/pc_example' '$SRC/examples/matrix_stats.c' \$(PKG_CONFIG_PATH='$PCDIR' pkg-config --cflags --libs sap) -lm && LD_LIBRARY_PATH='$W/prefix/lib:$W/prefix/lib64' '$W/pc_example' gen:poisson3d:n=5"
fi
# the PETSc plugin, where this build made it: installed beside the library, and loadable
# from the installed prefix with -dll_append
if [ -f "$BUILD/petsc/libsap_petsc.so" ]; then
    step petsc_installed test -f "$W/prefix/lib/libsap_petsc.so" -a -f "$W/prefix/include/sap_petsc.h"
    # (leak checking off under AddressSanitizer: Open MPI's memory, see petsc.sh)
    step petsc_dll env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 \
        "$BUILD/petsc/petsc_laplacian_dll" -dll_append "$W/prefix/lib/libsap_petsc.so" -pc_type sap
else
    echo "install: the PETSc plugin is not part of this build: its install check is skipped"
fi
echo "install: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
