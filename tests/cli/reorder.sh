#!/usr/bin/env bash
# CLI tests for sap reorder.  usage: reorder.sh SAP_BINARY WORKDIR
set -u
SAP=$1
W=$2
rm -rf "$W" && mkdir -p "$W"
source "$(dirname "$0")/lib.bash"

expect 0 "$SAP" reorder --help
contains "$W/out" "usage: sap reorder"
expect 2 "$SAP" reorder
expect 2 "$SAP" reorder gen:poisson2d:n=10 --drop 1.5
expect 2 "$SAP" reorder gen:poisson2d:n=10 --spy only-one.png
expect 2 "$SAP" reorder gen:poisson2d:n=10 --partitions 0

# a synthetic sparse matrix: the band hidden by random permutations is recovered
expect 0 "$SAP" reorder gen:synthetic:N=2000,K=4,d=2 --drop 0.9999 --partitions 4 -o "$W/r.mtx" \
    --spy "$W/before.png,$W/after.png"
contains "$W/out" "T_DB"
contains "$W/out" "T_CM"
contains "$W/out" "T_Drop"
contains "$W/out" "third stage: P = 4"
contains "$W/out" "DB: 2000 of 2000 matched"
# after DB the diagonal dominance of the seed band (d = 2) is restored
grep -E "^DB +T_DB" "$W/out" | awk '{ exit !($7 >= 1.99) }' && ok || bad "d after DB below 2: $(grep -E '^DB' "$W/out")"
# the CM half-bandwidth is small (the seed band has K = 4)
grep -E "^CM +T_CM" "$W/out" | awk '{ exit !($3 <= 40) }' && ok || bad "K after CM too large: $(grep -E '^CM' "$W/out")"
[ -s "$W/r.mtx" ] && [ -s "$W/before.png" ] && [ -s "$W/after.png" ] && ok || bad "outputs missing"
expect 0 "$SAP" info "$W/r.mtx"
contains "$W/out" "2000 x 2000"

expect 0 "$SAP" reorder gen:banded:N=300,K=3 --no-db --no-cm
contains "$W/out" "original"

# a rectangular or structurally singular matrix is an error with a clear message
if [ -f "$MDIR/mbeacxc.mtx.gz" ]; then
    expect 1 "$SAP" reorder "$MDIR/mbeacxc.mtx.gz"
    contains "$W/err" "structural"
    contains "$W/err" "448"
fi
printf '%%%%MatrixMarket matrix coordinate real general\n2 3 1\n1 1 1.0\n' >"$W/rect.mtx"
expect 1 "$SAP" reorder "$W/rect.mtx"
contains "$W/err" "not square"

summary "cli reorder"
