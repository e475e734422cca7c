#!/usr/bin/env bash
# CLI tests for sap btd and the block-tridiagonal methods of sap solve.  usage: btd.sh SAP_BINARY WORKDIR
set -u
SAP=$1
W=$2
rm -rf "$W" && mkdir -p "$W"
source "$(dirname "$0")/lib.bash"

expect 0 "$SAP" btd --help
contains "$W/out" "usage: sap btd"
expect 2 "$SAP" btd
expect 2 "$SAP" btd gen:blocktridiag:nb=10,k=4 --algo nope
expect 2 "$SAP" btd gen:blocktridiag:nb=10,k=4 --nrhs 0

# every algorithm reaches the solution; the block width is detected
for algo in bcyclic spike reduced-spike; do
    expect 0 "$SAP" btd gen:blocktridiag:nb=37,k=6,d=2 --algo $algo --nrhs 2 --solves 3
    contains "$W/out" "k = 6 (detected), 37 block rows"
    contains "$W/out" "algorithm     $algo"
    contains "$W/out" "profile       calibrate"
    grep -E "^error" "$W/out" | awk '{ exit !($2 < 1e-10) }' && ok || bad "$algo error: $(grep -E '^error' "$W/out")"
done
expect 0 "$SAP" btd gen:blocktridiag:nb=20,k=5 --variant getri --json
contains "$W/out" '"variant": "getri"'
contains "$W/out" '"time_comm": 0'
# a block width that does not fit the pattern is refused with the entry named
expect 1 "$SAP" btd gen:blocktridiag:nb=20,k=5 --block 2
contains "$W/err" "outside the block-tridiagonal pattern"
# a singular diagonal block is named
printf '%%%%MatrixMarket matrix coordinate real general\n4 4 4\n1 1 1\n2 2 1\n3 4 1\n4 3 1\n' >"$W/s.mtx"
expect 1 "$SAP" btd "$W/s.mtx" --block 1
contains "$W/err" "block row"

# sap solve --method bcyclic|spike|reduced-spike
for m in bcyclic spike reduced-spike; do
    expect 0 "$SAP" solve gen:blocktridiag:nb=30,k=8,d=2 --method $m --opt block=8
    contains "$W/out" "method        $m (given)"
    contains "$W/out" "status        SAP_OK"
done
# under mpiexec (a build with MPI): the block rows spread over 2 processes
if command -v mpiexec >/dev/null && "$SAP" version | grep -q "mpi yes"; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    # OpenMPI leaks by design (and unloads the plugins that did): no leak detection here
    # (test_btd_mpi2/3 check the library's own allocations through the allocator hooks)
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
    for algo in spike reduced-spike; do
        expect 0 mpiexec --oversubscribe -n 2 "$SAP" btd gen:blocktridiag:nb=40,k=6,d=2 --algo $algo --nrhs 2
        contains "$W/out" "processes     2 (MPI"
        contains "$W/out" "k = 6 (detected), 40 block rows"
        grep -E "^residual" "$W/out" | awk '{ exit !($2 < 1e-10) }' && ok || bad "mpi $algo: $(grep -E '^residual' "$W/out")"
    done
    expect 1 mpiexec --oversubscribe -n 2 "$SAP" btd gen:blocktridiag:nb=40,k=6 --algo bcyclic
    contains "$W/err" "not implemented"
fi
summary btd
