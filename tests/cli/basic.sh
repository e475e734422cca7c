#!/usr/bin/env bash
# CLI tests for sap info / gen / spy: exit codes, help, errors on stderr, outputs.
# usage: basic.sh SAP_BINARY WORKDIR
set -u
SAP=$1
W=$2
rm -rf "$W" && mkdir -p "$W"
source "$(dirname "$0")/lib.bash"

expect 0 "$SAP" --help
contains "$W/out" "info"
expect 0 "$SAP" version
contains "$W/out" "sap "
expect 2 "$SAP"
expect 2 "$SAP" frobnicate
contains "$W/err" "unknown command"
for c in info gen spy; do
    expect 0 "$SAP" $c --help
    contains "$W/out" "usage: sap $c"
    expect 2 "$SAP" $c --no-such-option
    contains "$W/err" "sap $c"
done

# gen -> info -> spy on a synthetic sparse matrix
expect 0 "$SAP" gen gen:synthetic:N=500,K=5,d=1.5,fill=0.5 -o "$W/syn.mtx.gz" --rhs "$W/b.mtx" --solution "$W/x.mtx"
[ -s "$W/syn.mtx.gz" ] && ok || bad "syn.mtx.gz not written"
head -n 1 "$W/b.mtx" | grep -q "array real general" && ok || bad "rhs is not an array file"
expect 0 "$SAP" info "$W/syn.mtx.gz"
contains "$W/out" "500 x 500"
expect 0 "$SAP" info gen:banded:N=300,K=4,d=1.5
contains "$W/out" "diagonal dominance d    1.5"
expect 0 "$SAP" info gen:banded:N=1000,K=10,d=1 --json
contains "$W/out" '"half_bandwidth": 10'
contains "$W/out" '"nrows": 1000'
expect 0 "$SAP" spy "$W/syn.mtx.gz" -o "$W/syn.png" --size 256
[ "$(head -c 4 "$W/syn.png" | od -An -c | tr -d ' ')" = "211PNG" ] && ok || bad "syn.png is not a PNG"
expect 0 "$SAP" spy gen:poisson2d:n=40 -o "$W/p2.png"

# symmetric output of a symmetric generator round-trips through info
expect 0 "$SAP" gen gen:poisson3d:n=6 -o "$W/p3.mtx" --symmetric
head -n 1 "$W/p3.mtx" | grep -q "coordinate real symmetric" && ok || bad "symmetric header missing"
expect 0 "$SAP" info "$W/p3.mtx"
contains "$W/out" "216 x 216"
contains "$W/out" "SPD (estimate)          yes"

# errors: non-zero exit, message on stderr, nothing on stdout
expect 1 "$SAP" info "$W/does-not-exist.mtx"
contains "$W/err" "I/O error"
[ ! -s "$W/out" ] && ok || bad "stdout not empty on error"
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n2 x 2.0\n' >"$W/bad.mtx"
expect 1 "$SAP" info "$W/bad.mtx"
contains "$W/err" "line 4"
expect 1 "$SAP" info gen:banded:N=10,Q=3
contains "$W/err" "Q"
expect 1 "$SAP" gen gen:nosuch:n=3 -o "$W/x.mtx"
expect 2 "$SAP" gen gen:banded:N=10,K=2
expect 1 "$SAP" spy "$W/bad.mtx" -o "$W/bad.png"

# a real matrix, when the collection is there
if [ -f "$MDIR/bcsstk01.mtx.gz" ]; then
    expect 0 "$SAP" info "$MDIR/bcsstk01.mtx.gz"
    contains "$W/out" "48 x 48"
    contains "$W/out" "coordinate real symmetric, 224 stored entries"
    expect 0 "$SAP" spy "$MDIR/bcsstk01.mtx.gz" -o "$W/bcsstk01.png"
fi

summary "cli basic"
