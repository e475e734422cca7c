#!/usr/bin/env bash
# fuzz/campaign.sh OUTDIR "HARNESS:SECONDS ..." [WORKERS] -- a longer fuzzing campaign
# (bench/results/fuzz.md): copies the harnesses built by fuzz/run.sh (build-fuzz) to
# OUTDIR/bin (so rebuilding does not disturb it) and runs each in libFuzzer's fork mode
# with WORKERS (default 2) jobs, going on past crashes, timeouts and OOMs (their inputs
# land in OUTDIR/HARNESS/), from a copy of the seeds; logs in OUTDIR/HARNESS.log.
set -euo pipefail
cd "$(dirname "$0")/.."
outdir=$1
plan=$2
workers=${3:-2}
build=${SAP_FUZZ_BUILD:-build-fuzz}
mkdir -p "$outdir/bin"
outdir=$(cd "$outdir" && pwd)
cp "$build"/fuzz/fuzz_* "$outdir/bin/"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
export TMPDIR="$outdir/tmp"
mkdir -p "$TMPDIR"
for item in $plan; do
    h=${item%%:*}
    secs=${item##*:}
    corpus="$outdir/corpus_$h"
    mkdir -p "$corpus" "$outdir/$h"
    for f in fuzz/corpus/"$h"/* fuzz/regress/"$h"/*; do
        [ -f "$f" ] || continue
        case "$f" in
        *.hex) python3 -c 'import sys; open(sys.argv[2], "wb").write(bytes.fromhex(open(sys.argv[1]).read()))' \
                   "$f" "$corpus/$(basename "$f" .hex)" ;;
        *) cp "$f" "$corpus/" ;;
        esac
    done
    case "$h" in fuzz_mm | fuzz_mm_gz | fuzz_solve) len=4096 ;; *) len=512 ;; esac
    echo "== $h ${secs}s fork=$workers $(date -u +%FT%TZ)"
    (cd "$outdir/$h" && "$outdir/bin/$h" -fork="$workers" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
        -max_total_time="$secs" -max_len="$len" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$outdir/$h/" \
        -print_final_stats=1 "$corpus" >"$outdir/$h.log" 2>&1) || true
    tail -n 3 "$outdir/$h.log"
done
