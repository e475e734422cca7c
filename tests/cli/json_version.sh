#!/usr/bin/env bash
# --json of every subcommand (info, gen, spy, reorder, solve) parses as JSON with the
# expected members and prints nothing else on stdout; sap --version lists the build's
# features (--version --json too); the progress line (iteration, residual, elapsed) shows
# on a terminal (a pseudo-terminal through script(1)) and never in a pipe.
# usage: json_version.sh SAP_BINARY WORKDIR
set -u
SAP=$1
W=$2
rm -rf "$W" && mkdir -p "$W"
. "$(dirname "$0")/lib.bash"
# json_has FILE KEY...: stdout of the last command is one JSON object with these keys
json_has() {
    local f=$1
    shift
    if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); missing=[k for k in sys.argv[2:] if k not in d]; sys.exit(1 if missing else 0)' "$f" "$@"; then
        ok
    else
        bad "$f: not JSON with keys $*: $(head -c 400 "$f")"
    fi
}

expect 0 "$SAP" --version
contains "$W/out" "^sap [0-9]"
for f in cuda openmp lapack zlib mpi metis petsc-plugin; do contains "$W/out" " $f="; done
expect 0 "$SAP" --version --json
json_has "$W/out" version cuda openmp lapack zlib mpi metis petsc_plugin

expect 0 "$SAP" info gen:poisson2d:n=20 --json
json_has "$W/out" nrows nnz half_bandwidth
expect 0 "$SAP" gen gen:banded:N=200,K=4 -o "$W/a.mtx" --rhs "$W/b.mtx" --json
json_has "$W/out" command output nrows ncols nnz spec rhs
expect 0 "$SAP" spy "$W/a.mtx" -o "$W/a.png" --json
json_has "$W/out" command output nnz size
test -s "$W/a.png" && ok || bad "spy --json wrote no PNG"
expect 0 "$SAP" reorder gen:banded:N=500,K=3 --drop 0.999 --partitions 2 -o "$W/r.mtx" --json
json_has "$W/out" command stages K_drop partitions K_i output
expect 0 "$SAP" solve gen:poisson2d:n=20 --json
json_has "$W/out" method reason tried nrows
lacks "$W/out" "^matrix  "
expect 0 "$SAP" solve gen:poisson2d:n=20 --krylov cg --precond jacobi --json
json_has "$W/out" nrows
expect 0 "$SAP" solve gen:poisson2d:n=20 --json --report "$W/rep.json"
json_has "$W/rep.json" method reason

# progress: on a terminal only
if command -v script >/dev/null; then
    script -qec "$SAP solve gen:poisson3d:n=24 --krylov cg --precond jacobi --tol 1e-12" /dev/null >"$W/tty" 2>&1
    if tr '\r' '\n' <"$W/tty" | grep -q "cg: iteration .* relative residual .* elapsed [0-9.]* s"; then ok; else bad "no progress line on a terminal: $(head -c 300 "$W/tty")"; fi
else
    echo "json_version: script(1) not found: the terminal progress check is skipped"
fi
expect 0 "$SAP" solve gen:poisson3d:n=24 --krylov cg --precond jacobi --tol 1e-12
lacks "$W/err" "elapsed"
lacks "$W/out" "elapsed"
summary json_version
