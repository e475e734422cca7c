#!/usr/bin/env bash
# CLI tests of the block-Jacobi preconditioners: --precond bjacobi[:MAXBLOCK] and
# bjacobi-adaptive[:MAXBLOCK] with several Krylov methods, their options through --pc-opt,
# the report lines (blocks, sizes, storage shares), gen:elasticity3d, and bad values.
# usage: bjacobi.sh SAP_BINARY WORKDIR
set -u
SAP=$1
W=$2
rm -rf "$W" && mkdir -p "$W"
source "$(dirname "$0")/lib.bash"

E=gen:elasticity3d:n=8

expect 0 "$SAP" solve $E --krylov cg --precond bjacobi
contains "$W/out" "status        SAP_OK"
contains "$W/out" "1536 x 1536"
contains "$W/out" "^pc report     blocks: 52 blocks (512 supervariables), sizes 6:1 30:51"
contains "$W/out" "^pc report     variant: gj, storage: fp16 0.0%, fp32 0.0%, fp64 100.0%"
contains "$W/out" "^pc report     fallback to scalar Jacobi: 0 blocks"

expect 0 "$SAP" solve $E --krylov cg --precond bjacobi-adaptive:3
contains "$W/out" "precond       bjacobi-adaptive"
contains "$W/out" "sizes 3:512"
contains "$W/out" "storage: fp16 100.0%"

for k in bicgstab bicgstabl:2 gmres:30 idr:4 fgmres; do
    expect 0 "$SAP" solve $E --krylov $k --precond bjacobi-adaptive
    contains "$W/out" "status        SAP_OK"
done

expect 0 "$SAP" solve $E --krylov cg --precond bjacobi --pc-opt variant=lu --pc-opt uniform=on --pc-opt maxblock=6
contains "$W/out" "variant: lu"
contains "$W/out" "sizes 6:256"

expect 0 "$SAP" solve $E --krylov cg --precond bjacobi-adaptive --pc-opt cond_fp16=0 --pc-opt cond_fp32=1e300
contains "$W/out" "storage: fp16 0.0%, fp32 100.0%"

expect 0 "$SAP" solve --precond help
contains "$W/out" "^bjacobi: "
contains "$W/out" "^bjacobi-adaptive: "
contains "$W/out" "cond_fp16="

expect 1 "$SAP" solve $E --krylov cg --precond bjacobi:33
contains "$W/err" "maxblock"
expect 2 "$SAP" solve $E --krylov cg --precond bjacobix:3
expect 1 "$SAP" solve $E --krylov cg --precond bjacobi --pc-opt variant=qr
contains "$W/err" "variant"
expect 1 "$SAP" solve gen:elasticity3d:n=4,dof=33 --krylov cg --precond bjacobi

summary "cli bjacobi"
