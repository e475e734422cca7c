#!/usr/bin/env bash
# CLI tests of the command-line parser (tools/args.c, getopt_long): the shared options on
# every command that takes them, the usage errors (exit 2, "sap CMD: ..." on stderr) and the
# GNU forms (--name=value, unique prefixes, --).
# usage: args.sh SAP_BINARY WORKDIR
set -u
SAP=$1
W=$2
rm -rf "$W" && mkdir -p "$W"
source "$(dirname "$0")/lib.bash"

NB=gen:banded:N=200,K=3,d=1.5

# a missing value, an unknown option, a value given to a flag, an ambiguous prefix
for c in info reorder solve; do
    expect 2 "$SAP" $c $NB --threads
    contains "$W/err" "sap $c: option '--threads' needs a value"
    expect 2 "$SAP" $c $NB --threads=abc
    contains "$W/err" "sap $c: --threads needs a non-negative integer"
    expect 2 "$SAP" $c $NB --allow-nonfinite=yes
    contains "$W/err" "takes no value"
    expect 2 "$SAP" $c $NB --bogus
    contains "$W/err" "sap $c: unknown option '--bogus'"
    contains "$W/err" "sap $c --help"
    [ ! -s "$W/out" ] && ok || bad "stdout not empty on a usage error"
done
expect 2 "$SAP" gen $NB -o
contains "$W/err" "option '-o' needs a value"
expect 2 "$SAP" spy $NB -x
contains "$W/err" "unknown option '-x'"
expect 2 "$SAP" solve $NB --pre none
contains "$W/err" "ambiguous option '--pre'"
expect 2 "$SAP" info $NB --json --quiet
contains "$W/err" "unknown option '--quiet'"
expect 0 "$SAP" solve $NB --json   # --json is taken by every subcommand
expect 2 "$SAP" gen $NB $NB -o "$W/x.mtx"
contains "$W/err" "more than one generator spec"
expect 2 "$SAP" spy -o "$W/x.png"
contains "$W/err" "no matrix given"

# --name=value, a unique prefix, options after and before the matrix, -- ends the options
expect 0 "$SAP" info --threads=1 $NB --json
contains "$W/out" '"nrows": 200'
expect 0 "$SAP" solve --krylov=gmres:20 --precond jacobi --max=500 --tol=1e-8 -q $NB
[ ! -s "$W/out" ] && ok || bad "-q printed"
expect 0 "$SAP" solve --backend=cpu --threads 1 -- $NB
contains "$W/out" "^backend       cpu"
expect 2 "$SAP" solve $NB -- --quiet
contains "$W/err" "more than one matrix"

# --help wins wherever it stands; --opt help lists the pipeline options
for c in info gen spy reorder solve; do
    expect 0 "$SAP" $c $NB --help
    contains "$W/out" "usage: sap $c"
done
expect 0 "$SAP" solve --opt help
contains "$W/out" "memory_limit"

# the matrix-reading option is shared: NaN values are refused unless --allow-nonfinite
printf '%%%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1.0\n2 2 2.0\n2 1 nan\n' >"$W/nan.mtx"
for c in info spy reorder; do
    o=()
    [ $c = spy ] && o=(-o "$W/nan.png")
    [ $c = reorder ] && o=(--no-db) # diagonal boosting itself refuses NaN values
    expect 1 "$SAP" $c "$W/nan.mtx" "${o[@]}"
    expect 0 "$SAP" $c "$W/nan.mtx" --allow-nonfinite "${o[@]}"
done

# --xstar is shared by gen and solve and checked the same way
expect 2 "$SAP" gen $NB -o "$W/x.mtx" --xstar cubic
contains "$W/err" "unknown --xstar 'cubic'"
expect 2 "$SAP" solve $NB --xstar cubic
contains "$W/err" "unknown --xstar 'cubic'"

summary "cli args"
