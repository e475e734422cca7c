# lib.bash -- the helpers of the CLI test scripts (sourced, not a test itself).
# The sourcing script sets SAP (the binary) and W (its work directory) first.
MDIR=${SAP_MATRIX_DIR:-${SAP_MATRIX_DIR_DEFAULT:-../shared/matrices}}
# the cost model's rates measured in each process, not read from a per-machine file
# (tests/cli/rates_cache.sh names its own folder)
export SAP_CACHE_DIR=${SAP_CACHE_DIR:-off}
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# expect CODE CMD...: runs CMD, checks its exit code, keeps stdout/stderr in $W/out, $W/err
expect() {
    local code=$1
    shift
    "$@" >"$W/out" 2>"$W/err"
    local rc=$?
    if [ "$rc" -eq "$code" ]; then ok; else bad "exit $rc (expected $code): $*"; cat "$W/err" >&2; fi
}
contains() { # FILE PATTERN
    if grep -q -- "$2" "$1"; then ok; else bad "'$2' not in $1: $(head -c 600 "$1")"; fi
}
lacks() { # FILE PATTERN
    if grep -q -- "$2" "$1"; then bad "'$2' unexpectedly in $1"; else ok; fi
}
# summary NAME: prints the closing line and returns the exit status
summary() {
    echo "$1: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}
