#!/usr/bin/env bash
# CLI tests for bounded options (issue 13): values outside an option's range are usage
# errors naming the option and the accepted range; absurd thread counts are clamped with a
# warning.  usage: limits.sh SAP_BINARY WORKDIR
set -u
SAP=$1
W=$2
rm -rf "$W" && mkdir -p "$W"
source "$(dirname "$0")/lib.bash"

# a fraction above 1 is refused, with the option, the value and the range
expect 2 "$SAP" solve gen:poisson2d:n=10 --opt drop=2
contains "$W/err" "option 'drop': bad value '2'"
contains "$W/err" "fraction in \[0, 1\]"
expect 0 "$SAP" solve gen:poisson2d:n=10 --opt drop=1 --quiet
expect 2 "$SAP" solve gen:poisson2d:n=10 --opt maxit=-3
contains "$W/err" "option 'maxit'"
expect 2 "$SAP" solve gen:poisson2d:n=10 --opt tol=nan
expect 2 "$SAP" solve gen:poisson2d:n=10 --opt no_such_option=1
contains "$W/err" "unknown option 'no_such_option'"

# --threads 100000 used to overflow the OpenMP runtime's stacks (SIGSEGV): now clamped
expect 0 "$SAP" solve gen:poisson3d:n=12 --threads 100000 --krylov cg --precond jacobi
contains "$W/err" "--threads 100000 clamped to"
expect 0 "$SAP" info gen:poisson2d:n=10 --threads 100000
contains "$W/err" "clamped"

summary limits
