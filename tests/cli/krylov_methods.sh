#!/usr/bin/env bash
# CLI tests for the Krylov methods of issue 16 (BiCG, CGS, QMR, TFQMR, mixed-precision IR,
# block-asynchronous Jacobi): each through `sap solve --krylov M --precond P` on an SPD
# and a nonsymmetric system, converged to 1e-8 in the true residual; IR's inner method
# in the summary; a bad inner method is a usage error; the help lists the methods.
# usage: krylov_methods.sh SAP_BINARY WORKDIR
set -u
SAP=$1
W=$2
rm -rf "$W" && mkdir -p "$W"
source "$(dirname "$0")/lib.bash"

P2=gen:poisson2d:n=20
NB=gen:banded:N=600,K=5,d=1.3

expect 0 "$SAP" solve --help
for m in bicg cgs qmr tfqmr "ir\[:method\]" "async-jacobi\[:p\]"; do contains "$W/out" "^ *$m: "; done

for sys in $P2 $NB; do
    for m in bicg cgs qmr tfqmr ir ir:bicgstab async-jacobi async-jacobi:4; do
        for pc in none jacobi "sap-d --partitions 3"; do
            expect 0 "$SAP" solve $sys --krylov $m --precond $pc --tol 1e-8 --maxit 5000
            contains "$W/out" "status        SAP_OK"
            # the true residual printed is <= 1e-8
            awk '/^residual/ { t = $5; sub(/ .*/, "", t); exit !(t + 0 <= 1e-8) }' "$W/out" && ok ||
                bad "$sys $m $pc: true residual above 1e-8: $(grep ^residual "$W/out")"
        done
    done
done
# the names in the summary
expect 0 "$SAP" solve $NB --krylov ir:bicgstab --tol 1e-8
contains "$W/out" "ir(bicgstab)"
expect 0 "$SAP" solve $NB --krylov async-jacobi:3 --tol 1e-8
contains "$W/out" "async-jacobi(3)"
# a left side for the transpose-free methods
expect 0 "$SAP" solve $NB --krylov tfqmr --precond jacobi --side left --tol 1e-8
contains "$W/out" "status        SAP_OK"
# bad inner methods / parameters: usage errors
expect 2 "$SAP" solve $NB --krylov ir:ir
expect 2 "$SAP" solve $NB --krylov ir:nosuch
expect 2 "$SAP" solve $NB --krylov bicg:3
expect 2 "$SAP" solve $NB --krylov async-jacobi:0

summary "cli krylov methods"
