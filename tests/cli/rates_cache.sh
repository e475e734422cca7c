#!/usr/bin/env bash
# CLI test of the cost model's per-machine rates file (solver_cost.c): the first automatic
# solve writes it under $SAP_CACHE_DIR (key line, then the rates and the time measured), a
# second one reads it and leaves it as it is; a malformed or foreign file is measured again
# and rewritten, never an error; SAP_CACHE_DIR=off writes nothing; an unwritable folder is
# no error.
# usage: rates_cache.sh SAP_BINARY WORKDIR
set -u
SAP=$1
W=$2
rm -rf "$W" && mkdir -p "$W"
source "$(dirname "$0")/lib.bash"

P=gen:poisson2d:n=30
C=$W/cache

SAP_CACHE_DIR=$C expect 0 "$SAP" solve $P --backend cpu
f=$(ls "$C"/rates-*.txt 2>/dev/null | head -1)
[ -n "$f" ] && ok || bad "no rates file in $C"
if [ -n "$f" ]; then
    contains "$f" "^sap-rates 1 .* backend cpu threads [0-9]* host .* device "
    [ "$(wc -l < "$f")" -eq 2 ] && ok || bad "rates file: $(wc -l < "$f") lines"
    n=$(sed -n 2p "$f" | wc -w)
    [ "$n" -eq 8 ] && ok || bad "rates line: $n values"
    cp "$f" "$W/first"
    SAP_CACHE_DIR=$C expect 0 "$SAP" solve $P --backend cpu
    cmp -s "$f" "$W/first" && ok || bad "a fresh rates file was rewritten"
    # malformed values, then another key: measured again and rewritten
    printf '%s\nnan x 1 2\n' "$(head -1 "$W/first")" > "$f"
    SAP_CACHE_DIR=$C expect 0 "$SAP" solve $P --backend cpu
    [ "$(sed -n 2p "$f" | wc -w)" -eq 8 ] && ok || bad "malformed rates file not rewritten: $(cat "$f")"
    printf 'sap-rates 1 some other machine\n1 1 1 1 1 1 1 1\n' > "$f"
    SAP_CACHE_DIR=$C expect 0 "$SAP" solve $P --backend cpu
    cmp -s <(head -1 "$f") <(head -1 "$W/first") && ok || bad "foreign rates file not rewritten"
    # older than a day: measured again
    printf '%s\n1e10 1e-6 0 0 1e9 0 1e-9 1000\n' "$(head -1 "$W/first")" > "$f"
    SAP_CACHE_DIR=$C expect 0 "$SAP" solve $P --backend cpu
    t=$(sed -n 2p "$f" | awk '{print $8}')
    awk -v t="$t" 'BEGIN { exit !(t > 1000000) }' && ok || bad "stale rates file not rewritten: $(cat "$f")"
fi

# off: no file
SAP_CACHE_DIR=off expect 0 "$SAP" solve $P --backend cpu
[ ! -e "$W/off" ] && ok || bad "SAP_CACHE_DIR=off wrote $W/off"
# a folder that cannot be made: no error
touch "$W/notadir"
SAP_CACHE_DIR=$W/notadir/sub expect 0 "$SAP" solve $P --backend cpu

summary "cli rates_cache"
