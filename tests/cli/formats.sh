#!/usr/bin/env bash
# CLI tests of the file formats the tool writes: PNG (sap spy, sap reorder --spy) decoded and
# checked by png_check.py; JSON (sap info --json, sap solve --report) parsed by python3.
# usage: formats.sh SAP_BINARY WORKDIR
set -u
SAP=$1
W=$2
rm -rf "$W" && mkdir -p "$W"
source "$(dirname "$0")/lib.bash"
HERE=$(dirname "$0")
if ! command -v python3 >/dev/null; then
    echo "formats.sh: python3 not found, skipped"
    exit 77
fi

# png_check.py prints "WIDTHxHEIGHT DIGEST" of a valid 8-bit RGB PNG and fails otherwise
png_size() { # FILE EXPECTED_SIZE
    local got
    if got=$(python3 "$HERE/png_check.py" "$1"); then
        [ "${got%% *}" = "$2" ] && ok || bad "$1 is $got, expected $2"
    else
        bad "$1 is not a valid PNG"
    fi
}
# sizes: a 1600 x 1600 matrix into 600 pixels plus the one-pixel frame; 20 x 20 at 32 pixels
# gets one pixel per entry (32 / 20 = 1); 500 x 500 at 600 pixels likewise
expect 0 "$SAP" spy gen:poisson2d:n=40 -o "$W/p2.png"
png_size "$W/p2.png" 602x602
expect 0 "$SAP" spy gen:banded:N=20,K=2 -o "$W/small.png" --size 32
png_size "$W/small.png" 22x22
expect 0 "$SAP" spy gen:synthetic:N=5000,K=5,d=1.5,fill=0.5 -o "$W/syn.png" --size 300
png_size "$W/syn.png" 302x302
expect 0 "$SAP" reorder gen:synthetic:N=500,K=3,d=2 --spy "$W/before.png,$W/after.png"
png_size "$W/before.png" 502x502
png_size "$W/after.png" 502x502
# the same pattern drawn twice gives the same pixels
expect 0 "$SAP" spy gen:poisson2d:n=40 -o "$W/p2b.png"
[ "$(python3 "$HERE/png_check.py" "$W/p2.png")" = "$(python3 "$HERE/png_check.py" "$W/p2b.png")" ] && ok || bad "p2 pixels differ"
# an unwritable output is an error
expect 1 "$SAP" spy gen:poisson2d:n=10 -o "$W/no-such-dir/x.png"
contains "$W/err" "cannot write"

# JSON: a file name with a quote, a backslash and a tab is escaped (python3 parses it back)
ODD="$W/we\"ird\\na'me	x.mtx"
expect 0 "$SAP" gen gen:banded:N=50,K=2,d=2 -o "$ODD" --rhs "$W/b50.mtx"
expect 0 "$SAP" info "$ODD" --json
python3 -m json.tool "$W/out" >/dev/null && ok || bad "sap info --json is not valid JSON: $(cat "$W/out")"
[ "$(wc -l <"$W/out")" -eq 1 ] && ok || bad "sap info --json is not one line"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["matrix"] == sys.argv[2], r["matrix"]; assert r["nrows"] == 50 and r["half_bandwidth"] == 2 and r["symmetry"] == "general"' "$W/out" "$ODD" && ok || bad "info JSON values"
# generator specs and infinite diagonal dominance (a diagonal matrix) stay valid JSON
expect 0 "$SAP" info gen:banded:N=10,K=0 --json
python3 -m json.tool "$W/out" >/dev/null && ok || bad "info JSON of a diagonal matrix: $(cat "$W/out")"
contains "$W/out" '"diag_dominance": "inf"'
for path in krylov pipeline; do
    if [ $path = krylov ]; then extra="--krylov gmres:20 --precond jacobi"; else extra=""; fi
    expect 0 "$SAP" solve "$ODD" --rhs "$W/b50.mtx" $extra --report "$W/$path.json" --quiet
    python3 -m json.tool "$W/$path.json" >/dev/null && ok || bad "$path report is not valid JSON"
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["matrix"] == sys.argv[2]; assert r["converged"] is True' "$W/$path.json" "$ODD" && ok || bad "$path report values"
done
# not converged: NaN-free numbers, null where a value does not exist (no x* with --rhs)
expect 3 "$SAP" solve "$ODD" --rhs "$W/b50.mtx" --krylov bicgstab --maxit 1 --report "$W/nc.json"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["error"] is None and r["converged"] is False' "$W/nc.json" && ok || bad "nc.json values"
expect 1 "$SAP" solve gen:poisson2d:n=5 --report "$W/no-such-dir/r.json"
contains "$W/err" "cannot write the report"

summary "cli formats"
