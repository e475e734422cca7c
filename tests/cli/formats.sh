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

summary "cli formats"
