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

# default solve: the SaP pipeline with its profile, nothing on stderr (not a terminal);
# host_direct=0 keeps this small system on the SaP path (the default solves it directly),
# time_budget=off keeps it there whatever the host's speed (an ASan build on a loaded CI
# host once had SaP-D's first steps cut for a predicted rest > 2x the direct solve)
expect 0 "$SAP" solve $P2 --opt host_direct=0 --opt time_budget=off
for key in "status        SAP_OK" "576 x 576" "^method        \(sap-d\|sap-c\) (auto)" "^reason        " \
    "^tried         1\. " "K_original .*, K_cm .*, K_drop .*, K_max " "^partitions    P = " "T_create .*T_stats .*T_DB .*T_CM .*T_Drop" \
    "T_Dtransf .*T_Asmbl .*T_LU .*T_SPK .*T_LUrdcd" "T_Kry .*T_refine .*% of setup + solve named" "^residual" "^error" "setup .*solve .*total"; do
    contains "$W/out" "$key"
done
[ ! -s "$W/err" ] && ok || bad "stderr not empty on success: $(cat "$W/err")"

# the automatic plan's parts of T_stats: the probe ran (its line, the report's T_probe)
expect 0 "$SAP" solve gen:poisson3d:n=24 --report "$W/plan.json"
contains "$W/out" "plan: probe [0-9.]* s, structure [0-9.]* s (in T_stats); direct analysis [0-9.]* s"
contains "$W/plan.json" '"T_probe": [0-9]'
contains "$W/plan.json" '"T_structure": '

# explicit Krylov method: manufactured system, summary on stdout
expect 0 "$SAP" solve $P2 --krylov bicgstabl:2
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
expect 3 "$SAP" solve $P2 --precond none --maxit 2 -o "$W/x2.mtx" --report "$W/nc.json"
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
expect 2 "$SAP" solve $P2 --krylov nosuch
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

# the SaP pipeline: methods, options, several right-hand sides, report, exit codes
expect 0 "$SAP" solve $NB --method jacobi
contains "$W/out" "^method        jacobi (given)"
expect 0 "$SAP" solve $NB --nrhs 3 --report "$W/p3.json" -o "$W/x3.mtx"
contains "$W/out" "^nrhs          3"
contains "$W/out" "worst column"
for key in '"pipeline": true' '"nrhs": 3' '"tried": \[' '"K_cm": ' '"T_DB": ' '"T_Kry": ' '"reason": ' '"converged": true'; do
    contains "$W/p3.json" "$key"
done
if command -v python3 >/dev/null; then
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['true_residual'] <= 1e-10 and r['error'] < 1e-6; assert len(r['tried']) >= 1 and r['nrhs'] == 3" "$W/p3.json" && ok || bad "p3.json is not valid JSON or wrong values"
fi
head -n 3 "$W/x3.mtx" | grep -q "^400 3" && ok || bad "x3.mtx is not 400 x 3"
expect 0 "$SAP" solve $NB --method sap-c --opt partitions=4 --opt precision=double --opt fallback=0
contains "$W/out" "^method        sap-c (given)"
contains "$W/out" "P = 4, double factors"
expect 3 "$SAP" solve $P2 --method jacobi --opt fallback=0 --maxit 2
contains "$W/err" "not converged"
# zd.mtx has an empty column: structurally singular, reported at once (no fallback chain)
expect 1 "$SAP" solve "$W/zd.mtx"
contains "$W/err" "structurally singular: structural rank 2 of 3"
lacks "$W/err" "tried"
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 5\n1 2 2.0\n2 1 1.0\n2 3 1.0\n3 3 2.0\n3 1 0.5\n' >"$W/zd2.mtx"
expect 0 "$SAP" solve "$W/zd2.mtx"
contains "$W/out" "DB on"
expect 0 "$SAP" solve $P2 --opt help
contains "$W/out" "memory_limit"
expect 2 "$SAP" solve $P2 --opt bogus=1
contains "$W/err" "bad option 'bogus=1'"
expect 2 "$SAP" solve $P2 --opt drop=abc
expect 2 "$SAP" solve $P2 --opt drop
contains "$W/err" "NAME=VALUE"
expect 2 "$SAP" solve $P2 --method lu
contains "$W/err" "unknown method"
expect 2 "$SAP" solve $P2 --nrhs 0
expect 2 "$SAP" solve $P2 --krylov cg --method sap-d
contains "$W/err" "pipeline"

# a 3D mesh: the band that the work limit allows holds little of A, the chain skips SaP and says why
# (time_budget=off: the fallback order, no cost model; IC(0) is not cut for the direct fallback,
# whatever the machine's load)
expect 0 "$SAP" solve gen:poisson3d:n=45 --opt time_budget=off
contains "$W/out" "^method        ilu (auto)"
contains "$W/out" "sap-d .*SAP_ERR_TOO_LARGE .*skipped"
contains "$W/out" "IC(0), CG"
contains "$W/out" "SAP_OK .*converged"
# the same with the cost model (the default): an iterative method of all entries or a direct one
# first (which one depends on the host's load), by its predicted time; no SaP attempt
expect 0 "$SAP" solve gen:poisson3d:n=30
lacks "$W/out" "^method        \(sap-d\|sap-c\|band-lu\) "
lacks "$W/out" "[0-9]\. \(sap-d\|sap-c\|band-lu\) "
contains "$W/out" "^tried         1\. .*(predicted "

# a real matrix from the collection, when present
if [ -f "$MDIR/west0479.mtx.gz" ]; then
    expect 0 "$SAP" solve "$MDIR/west0479.mtx.gz"
    contains "$W/out" "479 x 479"
    contains "$W/out" "^method        band-pivot (auto)"
    contains "$W/out" "small system on the host"
    contains "$W/out" "DB on + scaling"
    contains "$W/out" "^tried         1\."
    expect 0 "$SAP" solve "$MDIR/west0479.mtx.gz" --method band-pivot --opt fallback=0 --nrhs 2
    contains "$W/out" "^method        band-pivot (given)"
    # DB off: the zero diagonal defeats SaP, the chain moves on and says so
    expect 0 "$SAP" solve "$MDIR/west0479.mtx.gz" --opt db=none --opt host_direct=0
    contains "$W/out" "^tried         1\. sap-"
    contains "$W/out" "^              2\. "
fi
if [ -f "$MDIR/bcsstk14.mtx.gz" ]; then
    expect 0 "$SAP" solve "$MDIR/bcsstk14.mtx.gz" --report "$W/spd.json"
    contains "$W/spd.json" '"spd": true'
    contains "$W/spd.json" '"db": false'
fi
if [ -f "$MDIR/mbeacxc.mtx.gz" ]; then
    expect 1 "$SAP" solve "$MDIR/mbeacxc.mtx.gz"
    contains "$W/err" "SAP_ERR_STRUCTURALLY_SINGULAR"
    contains "$W/err" "structural rank"
fi
if [ -f "$MDIR/cage5.mtx.gz" ]; then
    expect 0 "$SAP" solve "$MDIR/cage5.mtx.gz" --krylov bicgstabl:2 --precond jacobi
    contains "$W/out" "37 x 37"
fi

summary "cli solve"
