#!/usr/bin/env bash
# CLI tests of the ILU-family preconditioners: NAME:V1,V2 positional options, the setup
# profile lines ("pc ..."), the issue's command line, and the errors of bad values.
# usage: ilu.sh SAP_BINARY WORKDIR
set -u
SAP=$1
W=$2
rm -rf "$W" && mkdir -p "$W"
source "$(dirname "$0")/lib.bash"

P3=gen:poisson3d:n=16

# every type converges with GMRES(20) and prints its profile
for pc in ilu0 iluk:2 ilut:7,0.01 ic0 parilu:5 bilu:16 bilut:16,7,0.01 ras:64,1; do  # isai: below
    expect 0 "$SAP" solve --krylov gmres:20 --precond $pc --tol 1e-8 $P3
    contains "$W/out" "status        SAP_OK"
    contains "$W/out" "^pc            .*factorization .* s (.* nnz, 0 pivots shifted); L: .* levels"
done
expect 0 "$SAP" solve --krylov gmres:20 --precond isai --tol 1e-8 $P3
contains "$W/out" "^pc            factorization .* ISAI .* M_L .* nnz"
# positional values land in the type's options, in order
expect 0 "$SAP" solve --krylov gmres:20 --precond ilut:7,0.01 $P3
contains "$W/out" "^pc            p=7"
contains "$W/out" "^pc            tau=0.01"
expect 0 "$SAP" solve --krylov gmres:20 --precond ras:8,2 $P3
contains "$W/out" "^pc            blocks=8"
contains "$W/out" "^pc            overlap=2"
contains "$W/out" "8 subdomains (.*), overlap 2"
# the issue's command (smaller grid)
expect 0 "$SAP" solve --krylov gmres:20 --precond ras:256,1 gen:poisson3d:n=24
contains "$W/out" "256 subdomains"
# the other Krylov methods take them too
expect 0 "$SAP" solve --krylov bicgstab --precond ilu0 $P3
expect 0 "$SAP" solve --krylov cg --precond ic0 $P3
# bad values and too many values: usage errors with the option named
expect 1 "$SAP" solve --krylov gmres:20 --precond iluk:-1 $P3
contains "$W/err" "option 'k'"
expect 1 "$SAP" solve --krylov gmres:20 --precond ilu0:1e-6,3 $P3
contains "$W/err" "at most 1 values"
expect 2 "$SAP" solve --krylov gmres:20 --precond nosuch:1 $P3
contains "$W/err" "unknown preconditioner"
# the help lists the new types and the syntax
expect 0 "$SAP" solve --precond help
contains "$W/out" "NAME:V1,V2"
contains "$W/out" "^ras: "

summary "cli ilu"
