#!/usr/bin/env bash
# CLI tests for sap solve: every option, the summary, -o and --report contents, exit codes
# (0 converged, 1 error, 2 usage, 3 not converged).
# usage: solve.sh SAP_BINARY WORKDIR
set -u
SAP=$1
W=$2
rm -rf "$W" && mkdir -p "$W"
source "$(dirname "$0")/lib.bash"

P2=gen:poisson2d:n=24
NB=gen:banded:N=400,K=4,d=1.5

# help and the command list
expect 0 "$SAP" solve --help
contains "$W/out" "usage: sap solve"
contains "$W/out" "--krylov"
expect 0 "$SAP" --help
contains "$W/out" "solve"

# default solve: manufactured system, summary on stdout, nothing on stderr (not a terminal)
expect 0 "$SAP" solve $P2
contains "$W/out" "status        SAP_OK"
contains "$W/out" "bicgstabl(2)"
contains "$W/out" "576 x 576"
contains "$W/out" "^iterations"
contains "$W/out" "recursive .*, true "
contains "$W/out" "^error"
contains "$W/out" "spmv format   csr"
contains "$W/out" "^backend       \\(cpu\\|cuda\\)" # auto: cuda on a GPU machine
contains "$W/out" "host->device"
contains "$W/out" "solve phases"
[ ! -s "$W/err" ] && ok || bad "stderr not empty on success: $(cat "$W/err")"

# every method, both preconditioners, both sides, both preconditioner precisions
for k in cg bicgstab bicgstabl bicgstabl:2 bicgstabl:3 gmres gmres:20 fgmres:30 idr idr:4; do
    expect 0 "$SAP" solve $P2 --krylov $k --precond jacobi --tol 1e-8
    contains "$W/out" "status        SAP_OK"
done
for k in bicgstab bicgstabl:2 gmres:20 idr:4; do
    for side in left right; do
        for pp in float double; do
            expect 0 "$SAP" solve $NB --krylov $k --precond jacobi --side $side --precond-precision $pp --tol 1e-9
            contains "$W/out" "precond       jacobi ($pp, side $side)"
        done
    done
done
expect 0 "$SAP" solve $P2 --krylov cg --precond none
contains "$W/out" "precond       none"

# formats, backend, threads, x*, tolerance
for f in auto csr ell sellp hec; do
    expect 0 "$SAP" solve $NB --format $f --tol 1e-9
    if [ $f != auto ]; then contains "$W/out" "spmv format   $f"; fi
done
expect 0 "$SAP" solve $NB --backend cpu --threads 1
contains "$W/out" "requested"
contains "$W/out" "1 thread"
expect 0 "$SAP" solve $NB --backend auto
contains "$W/out" "auto: "
for xs in parabola random ones; do
    expect 0 "$SAP" solve $NB --xstar $xs
    contains "$W/out" "x\* $xs"
done
expect 0 "$SAP" solve $P2 --tol 1e-4 --report "$W/loose.json"
contains "$W/loose.json" '"tol": 0.0001'

# -o writes x as a Matrix Market array; --rhs reads b (x* from sap gen --solution)
expect 0 "$SAP" gen $NB -o "$W/nb.mtx" --rhs "$W/b.mtx" --solution "$W/xs.mtx" --xstar random
expect 0 "$SAP" solve "$W/nb.mtx" --rhs "$W/b.mtx" -o "$W/x.mtx" --krylov gmres:30 --tol 1e-12
contains "$W/out" "rhs           $W/b.mtx"
lacks "$W/out" "^error"
head -n 1 "$W/x.mtx" | grep -q "matrix array real general" && ok || bad "x.mtx is not an array file"
[ "$(grep -v '^%' "$W/x.mtx" | wc -l)" -eq 401 ] && ok || bad "x.mtx does not have 400 values"
# x agrees with x* (first values, to 6 digits)
if command -v awk >/dev/null; then
    paste <(grep -v '^%' "$W/x.mtx" | tail -n +2) <(grep -v '^%' "$W/xs.mtx" | tail -n +2) |
        awk '{d = $1 - $2; if (d < 0) d = -d; if (d > 1e-6) bad++} END {exit bad > 0}' && ok || bad "x differs from x*"
fi

# --report: JSON with the summary and the history
expect 0 "$SAP" solve $P2 --krylov bicgstabl:2 --precond jacobi --report "$W/r.json"
for key in '"status": "SAP_OK"' '"converged": true' '"method": "bicgstabl(2)"' '"precond": "jacobi"' \
    '"format": "csr"' '"backend": "\(cpu\|cuda\)"' '"iterations": ' '"true_residual": ' '"error": ' '"history": \[1' \
    '"h2d_bytes": ' '"spmv": ' '"nrows": 576' '"manufactured": true'; do
    contains "$W/r.json" "$key"
done
if command -v python3 >/dev/null; then
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['true_residual'] <= 1e-10; assert len(r['history']) >= 2" "$W/r.json" && ok || bad "r.json is not valid JSON or wrong values"
fi

# --quiet: nothing on stdout, report still written
expect 0 "$SAP" solve $P2 --quiet --report "$W/q.json"
[ ! -s "$W/out" ] && ok || bad "--quiet printed: $(head -c 200 "$W/out")"
contains "$W/q.json" '"converged": true'

# not converged: exit 3, the reason on stderr, report says so, x still written
expect 3 "$SAP" solve $P2 --maxit 2 -o "$W/x2.mtx" --report "$W/nc.json"
contains "$W/out" "SAP_WARN_NOT_CONVERGED"
contains "$W/err" "not converged"
contains "$W/nc.json" '"converged": false'
contains "$W/nc.json" '"status": "SAP_WARN_NOT_CONVERGED"'
contains "$W/nc.json" '"iterations": 2'
[ -s "$W/x2.mtx" ] && ok || bad "x not written when not converged"
expect 3 "$SAP" solve $P2 --krylov gmres:5 --maxit 1000 --stagnation 3 --tol 1e-30
contains "$W/out" "SAP_WARN_STAGNATED"

# usage errors: exit 2
expect 2 "$SAP" solve
contains "$W/err" "no matrix"
expect 2 "$SAP" solve $P2 --krylov cgs
contains "$W/err" "unknown Krylov method"
expect 2 "$SAP" solve $P2 --krylov gmres:0
expect 2 "$SAP" solve $P2 --precond ilu
expect 2 "$SAP" solve $P2 --precond-precision half
expect 2 "$SAP" solve $P2 --side middle
expect 2 "$SAP" solve $P2 --format coo
expect 2 "$SAP" solve $P2 --tol abc
expect 2 "$SAP" solve $P2 --maxit -5
expect 2 "$SAP" solve $P2 --threads x
expect 2 "$SAP" solve $P2 --backend tpu
expect 2 "$SAP" solve $P2 --xstar cubic
expect 2 "$SAP" solve $P2 --frobnicate
contains "$W/err" "unknown option"
expect 2 "$SAP" solve $P2 --tol
expect 2 "$SAP" solve $P2 $NB
contains "$W/err" "more than one matrix"

# failing inputs: exit 1 with the reason on stderr
expect 1 "$SAP" solve "$W/missing.mtx"
contains "$W/err" "I/O error"
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 4\n1 1 2.0\n2 1 1.0\n2 3 1.0\n3 3 2.0\n' >"$W/zd.mtx"
expect 1 "$SAP" solve "$W/zd.mtx" --precond jacobi
contains "$W/err" "row 1"
expect 0 "$SAP" solve "$W/zd.mtx" --krylov gmres --precond none
printf '%%%%MatrixMarket matrix coordinate real general\n2 3 2\n1 1 2.0\n2 3 1.0\n' >"$W/rect.mtx"
expect 1 "$SAP" solve "$W/rect.mtx"
contains "$W/err" "not square"
expect 1 "$SAP" solve $P2 --rhs "$W/b.mtx"
contains "$W/err" "right-hand side"
expect 1 "$SAP" solve gen:nosuch:n=3
if "$SAP" version | grep -q "cuda no"; then
    expect 1 "$SAP" solve $P2 --backend cuda
    contains "$W/err" "cuda"
fi

# a real matrix from the collection, when present
if [ -f "$MDIR/cage5.mtx.gz" ]; then
    expect 0 "$SAP" solve "$MDIR/cage5.mtx.gz" --krylov bicgstabl:2 --precond jacobi
    contains "$W/out" "37 x 37"
fi

summary "cli solve"
