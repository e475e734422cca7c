#!/usr/bin/env bash
# CLI tests of the reliability rules (issue 13): values outside an option's range are usage
# errors naming the option and the accepted range; absurd thread counts are clamped with a
# warning; a solve that does not converge names the same residual everywhere it prints one.
# usage: reliability.sh SAP_BINARY WORKDIR
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

# CG on a nonsymmetric singular system: the message named the last iterate's residual
# (5.8e7) while the summary printed the returned best iterate's (1.3): the message now
# names both, and the returned x's true residual equals the summary's
cat >"$W/sing.mtx" <<'MTX'
%%MatrixMarket matrix coordinate real general
4 4 7
1 1 1.0
1 2 3.0
2 1 -2.0
2 2 1.0
3 3 1.0
3 4 2.0
4 3 2.0
MTX
expect 3 "$SAP" solve "$W/sing.mtx" --krylov cg --precond none
msg=$(sed -n 's/.*x returned: the best iterate, true residual [^=]*= \([0-9.e+-]*\).*/\1/p' "$W/out" | head -n 1)
summ=$(sed -n 's/^residual .*true \([0-9.e+-]*\) .*/\1/p' "$W/out" | head -n 1)
if [ -n "$msg" ] && [ "$msg" = "$summ" ]; then ok; else bad "message residual '$msg' != summary true residual '$summ'"; fi

# generator specs far beyond the machine: a clean error before any O(N) work (they used
# to count entries serially or fill 23 GB for a minute, then fail or be killed)
for spec in gen:banded:N=100000000000,K=5 gen:banded:N=3e9,K=1 gen:blocktridiag:nb=100000,k=100000 \
    gen:poisson3d:n=3000; do
    expect 1 timeout 20 "$SAP" info "$spec"
    contains "$W/err" "GB of host memory, .* GB available"
done
# the limit that decides is named: here the address-space limit of the process (an
# AddressSanitizer build cannot start under one: skipped there)
if bash -c '(ulimit -v 3000000 && exec "$0" version) >/dev/null 2>&1' "$SAP" 2>/dev/null; then
    expect 1 bash -c "ulimit -v 3000000 && exec timeout 20 '$SAP' info gen:banded:N=10000000,K=10"
    contains "$W/err" "available (RLIMIT_AS)"
fi

summary reliability
