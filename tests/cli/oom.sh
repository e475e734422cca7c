#!/usr/bin/env bash
# CLI test of running out of memory (issue 13 item 6): `sap solve` under a small
# address-space limit (ulimit -v) on problems that exceed it -- in the generator, in the
# Krylov vectors, in a preconditioner's band, in the pipeline's setup without fallback, and
# the pipeline with its fallback chain -- exits 1 (or 0 when a fallback absorbed it) with
# a message naming the bytes, never crashes (exit code < 128) and never hangs.
# Skipped (77) where the binary cannot start under the limit (AddressSanitizer reserves
# terabytes of address space).  --method band-pivot: OpenBLAS retries its work buffer's
# mmap for ever when RLIMIT_AS refuses it (a hang in dgbtrs -> dtbsv -> blas_memory_alloc),
# so sap refuses the LAPACK call without that headroom (solver_band_pivot.c).
# usage: oom.sh SAP_BINARY WORKDIR
set -u
SAP=$1
W=$2
rm -rf "$W" && mkdir -p "$W"
source "$(dirname "$0")/lib.bash"

LIMIT=300000 # KiB of address space
if ! bash -c "ulimit -v $LIMIT && '$SAP' --version; exit \$?" >/dev/null 2>&1; then
    echo "oom: $SAP does not start under ulimit -v $LIMIT (a sanitizer build?), skipped"
    exit 77
fi

# limited CODE CMD...: CMD under the limit (one thread, 120 s at most), then its exit code
limited() {
    local code=$1
    shift
    bash -c "ulimit -v $LIMIT && exec timeout 120 \"\$@\"" limited "$@" >"$W/out" 2>"$W/err"
    local rc=$?
    if [ "$rc" -ge 124 ]; then
        bad "exit $rc (a crash or a hang) under ulimit -v $LIMIT: $*"
        cat "$W/err" >&2
    elif [ "$rc" -eq "$code" ]; then ok; else
        bad "exit $rc (expected $code) under ulimit -v $LIMIT: $*"
        cat "$W/err" >&2
    fi
    return 0
}
# names_bytes: the message says how much memory was wanted
names_bytes() {
    if grep -Eq "[0-9.]+ ?(bytes|GB|MB)" "$W/err" && grep -qi "memory" "$W/err"; then ok; else
        bad "no out-of-memory message naming the bytes: $(head -c 600 "$W/err")"
    fi
}

# the generator: 1M rows of 3D Poisson
limited 1 "$SAP" solve gen:poisson3d:n=100 --threads 1 --quiet
names_bytes
# the Krylov vectors: GMRES(1000) on 90,000 unknowns
limited 1 "$SAP" solve gen:poisson2d:n=300 --krylov gmres:1000 --precond jacobi --threads 1 --quiet
names_bytes
# a preconditioner's band: SaP-D with one partition of half-bandwidth 300
limited 1 "$SAP" solve gen:poisson2d:n=300 --precond sap-d --pc-opt partitions=1 --krylov cg --threads 1 --quiet
names_bytes
# the pipeline's setup without fallback (the band of 3D Poisson after CM): its estimate
# counts every array (sap__band_fact_bytes), so the band is narrowed to fit the limit
limited 0 "$SAP" solve gen:poisson3d:n=40 --method sap-d --opt fallback=0 --opt partitions=1 --threads 1
if grep -q "narrowed" "$W/out"; then ok; else bad "sap-d under the limit: no narrowed band: $(grep -E 'reason' "$W/out")"; fi
# band-pivot, whose band leaves no room for OpenBLAS's work buffers: a clean error, no hang
limited 1 "$SAP" solve gen:poisson2d:n=200 --method band-pivot --opt fallback=0 --threads 1 --quiet
names_bytes
# the pipeline with its fallback chain: solved by a method that fits, or a clean error
bash -c "ulimit -v $LIMIT && exec timeout 120 '$SAP' solve gen:poisson3d:n=40 --threads 1 --quiet" >"$W/out" 2>"$W/err"
rc=$?
if [ "$rc" -eq 0 ]; then ok; elif [ "$rc" -eq 1 ]; then names_bytes; else bad "auto under the limit: exit $rc"; fi

summary oom
