#!/usr/bin/env bash
# CLI tests of "long work is visible and interruptible" (issue 13 item 3):
#  - SIGINT stops a long `sap solve` within a few seconds with the best x so far: the
#    interrupted message, the summary's residual line, exit code 130, and -o wrote x (the
#    pipeline: a forced Jacobi with a tiny tol and a huge maxit; the explicit Krylov path);
#  - under --quiet the SIGINT outcome (the residual of the x returned) is still printed;
#  - a second SIGINT during a step that cannot stop (a band factorization) exits at once;
#  - a step predicted to take hours is announced and refused without --force (the issue's
#    `--krylov bicgstab --precond sap-c` on a hidden band of 20,000), in no time.
# usage: interrupt.sh SAP_BINARY WORKDIR
set -u
SAP=$1
W=$2
rm -rf "$W" && mkdir -p "$W"
source "$(dirname "$0")/lib.bash"

# run_int SECONDS CMD...: starts CMD in the background, sends SIGINT after SECONDS, waits;
# rc = its exit code, took = seconds from the signal to its exit; stdout/stderr in $W/out, $W/err
run_int() {
    local after=$1
    shift
    "$@" >"$W/out" 2>"$W/err" &
    local pid=$!
    sleep "$after"
    kill -INT "$pid"
    local t0=$SECONDS
    wait "$pid"
    rc=$?
    took=$((SECONDS - t0))
}

# the pipeline: a forced Jacobi with GMRES(2) on a 3D Poisson matrix that would run for hours
# (fallback=0: with a method after it in the chain, an attempt gets an iteration cap)
rm -f "$W/x.mtx"
run_int 2 "$SAP" solve gen:poisson3d:n=50 --method jacobi --opt fallback=0 --opt krylov=gmres:2 --tol 1e-30 --maxit 100000000 \
    -o "$W/x.mtx"
if [ "$rc" -eq 130 ]; then ok; else bad "pipeline: exit $rc (expected 130)"; cat "$W/err" >&2; fi
if [ "$took" -le 5 ]; then ok; else bad "pipeline: exited $took s after SIGINT"; fi
contains "$W/err" "sap solve: interrupted:"
contains "$W/err" "best x so far: true residual"
contains "$W/out" "^status  *SAP_WARN_INTERRUPTED"
contains "$W/out" "^residual  *[0-9]"
contains "$W/out" "SAP_WARN_INTERRUPTED after"
# one attempt: no fallback after an interrupt
lacks "$W/out" "  2\. "
if [ -s "$W/x.mtx" ] && head -1 "$W/x.mtx" | grep -q "MatrixMarket matrix array"; then ok; else bad "-o did not write x"; fi
if [ "$(sed -n '2p' "$W/x.mtx" | awk '{print $1}')" = "125000" ]; then ok; else bad "x.mtx: $(sed -n 2p "$W/x.mtx")"; fi

# the explicit Krylov path, under --quiet: only the outcome (GMRES(2): minutes of iterations,
# where CG would finish, even with tol 1e-30, before the SIGINT on a fast machine)
rm -f "$W/x2.mtx"
run_int 2 "$SAP" solve gen:poisson3d:n=50 --krylov gmres:2 --precond jacobi --tol 1e-30 --maxit 100000000 --quiet \
    -o "$W/x2.mtx"
if [ "$rc" -eq 130 ]; then ok; else bad "explicit: exit $rc (expected 130)"; cat "$W/err" >&2; fi
if [ "$took" -le 5 ]; then ok; else bad "explicit: exited $took s after SIGINT"; fi
contains "$W/err" "stopped by the monitor"
contains "$W/err" "best x so far: true residual [0-9]"
if [ -s "$W/x2.mtx" ]; then ok; else bad "explicit: -o did not write x"; fi
if [ ! -s "$W/out" ]; then ok; else bad "--quiet printed a summary"; fi

# a second SIGINT during a band factorization (announced as a long step: it cannot stop)
"$SAP" solve gen:poisson3d:n=40 --method sap-d --opt drop=1 --opt partitions=1 --quiet >"$W/out" 2>"$W/err" &
pid=$!
sleep 2
kill -INT "$pid"
sleep 1
if kill -0 "$pid" 2>/dev/null; then
    ok # still factoring
    kill -INT "$pid"
    t0=$SECONDS
    wait "$pid"
    rc=$?
    if [ $((SECONDS - t0)) -le 2 ]; then ok; else bad "second SIGINT: exited after $((SECONDS - t0)) s"; fi
    if [ "$rc" -ne 0 ]; then ok; else bad "second SIGINT: exit 0"; fi
else
    wait "$pid"
    bad "the factorization ended within 3 s (the test needs a longer one)"
fi
contains "$W/err" "sap_solver: long step: sap-d setup predicted to take"
contains "$W/err" "cannot be interrupted"

# hours: announced and refused at once, also under --quiet; the pipeline reorders instead
t0=$SECONDS
expect 1 "$SAP" solve --krylov bicgstab --precond sap-c gen:synthetic:N=20000,K=40 --quiet
if [ $((SECONDS - t0)) -le 5 ]; then ok; else bad "the refusal took $((SECONDS - t0)) s"; fi
contains "$W/err" "long step: sap-c preconditioner setup predicted to take ~[0-9.]* h"
contains "$W/err" "refused: .*--force runs it anyway"
# the pipeline: a forced SaP-D of the whole CM band in one partition (N = 262144, K ~ 3100)
expect 1 "$SAP" solve gen:poisson3d:n=64 --method sap-d --opt drop=1 --opt partitions=1 --opt memory_limit=1000G --quiet
contains "$W/err" "sap_solver: long step: sap-d setup predicted to take ~[0-9.]* \(min\|h\)"
contains "$W/err" "refused: sap-d setup predicted"
expect 0 "$SAP" solve gen:synthetic:N=20000,K=40 --quiet
lacks "$W/err" "long step"

summary cli_interrupt
