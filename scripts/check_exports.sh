#!/usr/bin/env bash
# Checks the dynamic symbol table of a built libsap.so against include/sap.h (builds nothing):
#  - every defined dynamic symbol must be a public name: sap_..., not sap__... (internal),
#    and declared in sap.h;
#  - every function sap.h declares must carry SAP_API and be defined.
# Exit 0 when clean, 1 listing the offenders, 2 on a usage error.
# usage: scripts/check_exports.sh path/to/libsap.so [path/to/sap.h]   (NM=... picks nm)
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 LIBSAP_SO [SAP_H]" >&2
    exit 2
fi
LIB=$1
HEADER=${2:-$(cd "$(dirname "$0")/.." && pwd)/include/sap.h}
NM=${NM:-nm}
for f in "$LIB" "$HEADER"; do
    if [ ! -f "$f" ]; then
        echo "check_exports: no such file: $f" >&2
        exit 2
    fi
done

# Defined dynamic symbols, without symbol versions (name@VER / name@@VER).
exported=$("$NM" -D --defined-only "$LIB" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' | sort -u)
# Functions sap.h declares: lines at column 0 (not typedef/enum/...) calling a sap_ name,
# which is the name before the first '('.  Each must carry SAP_API.
decl_lines=$(grep -E '^[A-Za-z_]' "$HEADER" | grep -vE '^(typedef|extern|enum|struct|union)\b' |
                 grep -E '\bsap_[A-Za-z0-9_]*\(' || true)
declared=$(printf '%s\n' "$decl_lines" | sed -E 's/\(.*//' | grep -oE '[A-Za-z_][A-Za-z0-9_]*$' | sort -u)
no_api=$(printf '%s\n' "$decl_lines" | grep -vE '^SAP_API ' | sed -E 's/\(.*//' | grep -oE '[A-Za-z_][A-Za-z0-9_]*$' || true)
if [ -z "$declared" ]; then
    echo "check_exports: no SAP_API declarations found in $HEADER" >&2
    exit 2
fi

status=0
# Not a public name: anything but sap_x..., or an internal sap__ name.
bad=$(printf '%s\n' "$exported" | grep -vE '^sap_[A-Za-z0-9]' || true)
# A sap_ name exported although sap.h does not declare it.
undeclared=$(comm -23 <(printf '%s\n' "$exported" | grep -E '^sap_[A-Za-z0-9]' || true) <(printf '%s\n' "$declared"))
# Declared in sap.h but not exported.
missing=$(comm -13 <(printf '%s\n' "$exported") <(printf '%s\n' "$declared"))

report() { # TITLE LIST
    [ -z "$2" ] && return 0
    echo "check_exports: $1 ($(printf '%s\n' "$2" | wc -l)):"
    printf '%s\n' "$2" | sed 's/^/  /'
    status=1
}
report "functions declared in $(basename "$HEADER") without SAP_API" "$no_api"
report "exported symbols that are not public sap_ names" "$bad"
report "exported sap_ symbols not declared in $(basename "$HEADER")" "$undeclared"
report "functions declared in $(basename "$HEADER") but not exported" "$missing"
if [ "$status" -eq 0 ]; then
    echo "check_exports: $LIB exports exactly the $(printf '%s\n' "$declared" | wc -l) functions of $(basename "$HEADER")"
fi
exit "$status"
