#!/usr/bin/env bash
# CLI tests for the direct methods and the time-boxed attempts of sap solve: direct-host
# forced (or its "not built with SuiteSparse" message), direct-cudss on a cpu context (the
# reason, then the host fallback), a slow attempt cut off by --opt time_budget (the text
# and JSON reports show the prediction, the budget and what happened).
# usage: direct.sh SAP_BINARY WORKDIR
set -u
SAP=$1
W=$2
rm -rf "$W" && mkdir -p "$W"
source "$(dirname "$0")/lib.bash"

P2=gen:poisson2d:n=60

# direct-host forced, no fallback
"$SAP" solve $P2 --backend cpu --opt method=direct-host --opt fallback=0 > "$W/out" 2> "$W/err"
rc=$?
if grep -q "not built with SuiteSparse" "$W/err" "$W/out"; then
    [ $rc -eq 1 ] && ok || bad "direct-host without SuiteSparse: exit $rc"
    host=0
else
    [ $rc -eq 0 ] && ok || bad "direct-host: exit $rc: $(cat "$W/err")"
    contains "$W/out" "^method        direct-host (given)"
    contains "$W/out" "CHOLMOD"
    contains "$W/out" "status        SAP_OK"
    host=1
fi

# direct-cudss on a cpu context: the reason, no solve without the fallback
expect 1 "$SAP" solve $P2 --backend cpu --opt method=direct-cudss --opt fallback=0
contains "$W/err" "cuDSS"
# with the fallback the next method solves it; tried lists direct-cudss first
expect 0 "$SAP" solve $P2 --backend cpu --opt method=cudss
contains "$W/out" "^tried         1\. direct-cudss SAP_ERR_UNSUPPORTED"

# a slow attempt cut off by its budget: SaP-D reduced to its diagonal on 2D Poisson
expect 0 "$SAP" solve gen:poisson2d:n=150 --backend cpu --opt method=sap-d --opt drop=0 --opt time_budget=0.002 \
    --opt maxit=1000000 --report "$W/b.json"
contains "$W/out" "^tried         1\. sap-d .*budget 0.002s"
contains "$W/out" "out of time"
python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))
t = r['tried'][0]
assert t['method'] == 'sap-d' and t['time_budget'] == 0.002 and t['status'] in ('SAP_WARN_NOT_CONVERGED', 'SAP_WARN_STAGNATED'), t
assert 'predicted_time' in t and len(r['tried']) >= 2 and r['true_residual'] <= 1e-10
" "$W/b.json" && ok || bad "b.json: budget not reported"
if [ $host -eq 1 ]; then
    contains "$W/out" "^method        direct-host"
fi
# bad budget values are refused (usage error)
expect 2 "$SAP" solve $P2 --opt time_budget=-3
expect 2 "$SAP" solve $P2 --opt time_budget=abc

summary "cli direct"
